# The test kit users get with make install (Apache::TestRLaaS), against
# this suite's httpd: its assertions pass on real limits and fail, saying
# why, where the configuration differs from what they expect; and
# reset_counters starts afresh the counters under the suite's prefix only.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Test2::API qw(intercept);
use RLaaS::Test qw(:all);
use Apache::TestRLaaS qw(allows_then_429 remaining_is is_exempt reset_counters retry_after);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

# the assertion's outcome and what it printed, without failing this test
sub outcome {
    my ($code) = @_;
    my $ev = intercept { $code->() };
    my @ok = grep { $_->can('pass') } @$ev;
    my $diag = join "\n", map { $_->message } grep { $_->isa('Test2::Event::Diag') } @$ev;
    return (@ok == 1 && $ok[0]->pass ? 1 : 0, $diag);
}

my $u = uid('kit');
my $req = { path => '/rl/kit/a', headers => { 'X-User' => $u } };

{
    my $fresh = { path => '/rl/kit/a', headers => { 'X-User' => uid('kit') } };
    remaining_is($fresh, 2, 'remaining_is: RLaaSLimit 3, one request: 2 remaining');
    my $res = allows_then_429($req, 3, 'allows_then_429: RLaaSLimit 3');
    ok($res && retry_after($res) >= 1, 'it returns the 429, with Retry-After');
    is_exempt('/rl/kit/free/x', 10, 'is_exempt: RLaaSEngine off under a limit of 3');
}

{
    my $v = { path => '/rl/kit/b', headers => { 'X-User' => uid('kit') } };
    my ($ok, $diag) = outcome(sub { allows_then_429($v, 5, 'five') });
    ok(!$ok, 'allows_then_429 with a wrong limit (5, the server says 3): fails');
    like($diag, qr/^GET \/rl\/kit\/b: expected 5 allowed, then 429 with Retry-After$/m,
        '... saying what it expected');
    like($diag, qr/^request 4 was refused \(429, Retry-After: \d+\) after 3 allowed$/m,
        '... which request was refused, after how many');
    like($diag, qr/^its fields: RateLimit: "kit";r=0;t=\d+; RateLimit-Policy: "kit";q=3;w=60$/m,
        '... and the fields the server sent, which tell the real limit');
    like($diag, qr/^statuses: 200 200 200 429$/m, '... and every status');

    ($ok, $diag) = outcome(sub { is_exempt('/rl/kit/c', 5, 'exempt?') });
    ok(!$ok, 'is_exempt on a limited path: fails');
    like($diag, qr/^request 1 \(200 OK\) carries rate-limit fields, so a limit applies: RateLimit: "kit";r=2;t=\d+; RateLimit-Policy: "kit";q=3;w=60$/m,
        '... naming the fields that show the limit');

    ($ok, $diag) = outcome(sub { remaining_is('/rl/kit/free/y', 1, 'counted?') });
    ok(!$ok && $diag =~ /has no RateLimit field nor X-RateLimit-Remaining: the path is not limited here/,
        'remaining_is on an exempt path: fails, saying no limit applies');
}

# reset_counters: the virtual host's prefix is the suite's here
{
    local $ENV{RLAAS_KIT_PREFIX} = 'rlaas-kit-test:';
    my $w = uid('kit');
    my $vh = { path => '/rl/kit/r', headers => { 'X-User' => $w }, vhost => 'rlaas_kit' };
    my $main = { path => '/rl/kit/r', headers => { 'X-User' => $w } };
    allows_then_429($vh, 2, 'the virtual host: 2, then 429');
    allows_then_429($main, 3, 'the main server, the same client: 3, then 429');
    cmp_ok(reset_counters(), '>=', 1, 'reset_counters deletes what is under the prefix');
    allows_then_429($vh, 2, 'the virtual host counts afresh');
    is(hit($main->{path}, h => $main->{headers}), 429,
        'the main server, under another prefix, still refuses: nothing else was reset');
}

done_testing;
