# RLaaSDryRun on: every request is evaluated and counted in Redis as usual,
# the headers report what would have happened (r=0), RLAAS_STATUS says
# dry_run_denied exactly where the same limit without dry run denies, and
# nothing is ever refused. Compared with twin Locations without dry run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub rl_r {
    my $v = $_[0]->header('RateLimit') // '';
    return $v =~ /;r=(\d+)/ ? $1 : 'none';
}

# Start at the beginning of a second of the log gates' clock: the denial
# log line of this test is then not held back by a line logged just before
# in the same second.
next_mono_second();
my $em = error_log_mark();

my %redis_state = (
    log   => sub { redis_cmd('ZCARD', $_[0]) },
    fixed => sub { my @k = keys_like("$_[0]:*"); @k == 1 ? redis_cmd('GET', $k[0]) : 'keys: ' . scalar(@k) },
    # whole tokens left (the hash holds ticks: tokens x 1200000 for 3 per hour)
    token => sub { my $v = redis_cmd('HGET', "$_[0]:tb", 'tokens'); defined $v ? int($v / 1_200_000) : 'none' },
);

for my $st (qw(log fixed token)) {
    wait_fixed_window(3_600_000, 10_000) if $st eq 'fixed';
    my ($uon, $uoff) = (uid("dry-on-$st"), uid("dry-off-$st"));
    my $tid = uid("dry-tid-$st");
    my @on  = map { req("/sig/dry/on/$st", h => { 'X-User' => $uon, 'X-Test-Id' => "$tid-on" }) } 1 .. 8;
    my @off = map { req("/sig/dry/off/$st", h => { 'X-User' => $uoff }) } 1 .. 8;
    my $st_label = $st eq 'log' ? 'sliding log' : $st;

    is(join(' ', map { $_->code } @off), '200 200 200 429 429 429 429 429',
        "$st_label, limit 3, no dry run: 3 allowed, then 429");
    is(join(' ', map { $_->code } @on), join(' ', ('200') x 8),
        "$st_label, limit 3, RLaaSDryRun on: all 8 allowed");
    my @son  = map { status_of($_) // 'unset' } @on;
    my @soff = map { status_of($_) // 'unset' } @off;
    is_deeply(\@son, [map { $_ eq 'denied' ? 'dry_run_denied' : $_ } @soff],
        "$st_label: RLAAS_STATUS is dry_run_denied exactly where the twin without dry run denied (@son)");
    is(join(' ', map { rl_r($_) } @on), join(' ', map { rl_r($_) } @off),
        "$st_label: RateLimit r is the same as the twin's (" . join(' ', map { rl_r($_) } @on) . ')');
    is(rl_r($on[-1]), 0, "$st_label: the headers report r=0 once the limit is reached");
    ok(!grep({ defined $_->header('Retry-After') } @on), "$st_label: dry run sends no Retry-After");
    is($on[-1]->content, "ok\n", "$st_label: dry run serves the normal content");
    my $kon  = ukey($st eq 'log' ? 'sig-dry-on-log' : "sig-dry-on-$st", $uon);
    my $koff = ukey($st eq 'log' ? 'sig-dry-off-log' : "sig-dry-off-$st", $uoff);
    my ($son, $soff) = ($redis_state{$st}->($kon), $redis_state{$st}->($koff));
    is($son, $soff, "$st_label: the counts in Redis are the same as the twin's ($son)");

    if ($st eq 'log') {
        my @l = log_lines_with('rlaas_status_log', "$tid-on", 8);
        is(join(' ', map { (split ' ', $_)[2] } @l), join(' ', @son),
            'CustomLog %{RLAAS_STATUS}e logs dry_run_denied as well');
    }
}

# Many more requests: never a 429
{
    my $u = uid('dry-many');
    my @c = codes(30, '/sig/dry/on/log', h => { 'X-User' => $u });
    is(count_by(@c), '200 x30', '30 requests at limit 3 under dry run: never a 429');
    is(redis_cmd('ZCARD', ukey('sig-dry-on-log', $u)), 3,
        'the sliding log records the 3 allowed hits, as without dry run');
    my @p = parallel_codes(8, '/sig/dry/on/token', h => { 'X-User' => uid('dry-par') });
    is(count_by(@p), '200 x8', '8 parallel requests at limit 3 under dry run: all allowed');
}

# A child section turns dry run off again: it limits (same zone, limit 3)
{
    my $u = uid('dry-real');
    my @c = codes(4, '/sig/dry/on/log/real', h => { 'X-User' => $u });
    is("@c", '200 200 200 429', 'RLaaSDryRun off in a child section: limiting is real again');
}

# Dry run never refuses, not even when Redis is unreachable (fail closed)
{
    my $r = req('/sig/dead/dry/x', vhost => 'rlaas_sig_dead', h => { 'X-User' => uid('dry-dead') });
    is($r->code, 200, 'dry run, Redis unreachable, RLaaSFailOpen off: allowed (dry run never refuses)');
    is(status_of($r), 'fail_open', 'dry run, Redis unreachable: RLAAS_STATUS=fail_open');
}

# The would-be denial is logged (info), saying that it was allowed
{
    my $log = '';
    wait_for(sub { $log = error_log_since($em); $log =~ /RLAAS0020[^\n]*sig-dry-on-log[^\n]*RLaaSDryRun on/ }, 3);
    like($log, qr/RLAAS0020: rate limit exceeded for \S*sig-dry-on-log:h\.x-user=dry-on-log[^\n]*allowed: RLaaSDryRun on/,
        'the error log has the denial the dry run let through (RLAAS0020 ... allowed: RLaaSDryRun on)');
}

done_testing();
