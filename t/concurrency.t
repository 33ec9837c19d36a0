# Concurrent clients: the check-and-count is atomic in Redis, so N parallel
# requests against limit L give exactly L allowed, whatever the MPM spreads
# them over (processes for prefork, threads for worker/event).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub tally { my %n; $n{$_}++ for @_; join ' ', map { "$_ x$n{$_}" } sort keys %n }

{
    my $u = uid('conc');
    my @c = parallel_codes(20, '/rl/conc/log/x', h => { 'X-User' => $u });
    is(tally(@c), '200 x10 429 x10', 'sliding log, limit 10, 20 parallel requests: exactly 10 allowed');
    is(redis_cmd('ZCARD', ukey('conc-log', $u)), 10, 'sliding log holds exactly 10 entries');
}
{
    wait_fixed_window(3_600_000, 15_000);
    my $u = uid('concf');
    my @c = parallel_codes(20, '/rl/conc/fixed/x', h => { 'X-User' => $u });
    is(tally(@c), '200 x10 429 x10', 'fixed window, limit 10, 20 parallel requests: exactly 10 allowed');
}
{
    my $u = uid('pool');
    my @c = parallel_codes(12, '/rl/pool/x', vhost => 'rlaas_pool', h => { 'X-User' => $u });
    is(tally(@c), '200 x6 429 x6',
        'RLaaSRedisPoolMax 1: 12 parallel requests queue for the one connection; exactly 6 allowed, no 500');
}
{
    # many identities at once: no cross-talk between pooled connections
    my @u = map { uid('many') } 1 .. 8;
    my @specs = map { my $id = $_; map { ['/rl/basic/x', h => { 'X-User' => $id }] } 1 .. 4 } @u;
    my @codes = parallel_requests(@specs);
    my %per;
    for my $i (0 .. $#specs) {
        $per{ $specs[$i][2]{'X-User'} }{ $codes[$i] }++;
    }
    my @bad = grep { ($per{$_}{200} // 0) != 3 || ($per{$_}{429} // 0) != 1 } @u;
    is_deeply(\@bad, [], '8 identities x 4 parallel requests, limit 3: each gets exactly 3 allowed')
        or diag(explain(\%per));
}

done_testing();
