# RLaaSFailOpen local: while Redis cannot decide (down, killed, circuit
# open) the local engine decides with the section's policy, its limit
# shared out by RLaaSLocalDivisor: the limit holds, exactly, even under 300
# concurrent requests; RLAAS_STATUS and the metrics say "local"; and when
# Redis is back the module hands back to it by itself.
#
# The Redis here is the test's own, on RLAAS_TEST_REDIS_SPARE_PORT, where
# nothing listens when httpd starts.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $PORT = $ENV{RLAAS_TEST_REDIS_SPARE_PORT};
plan skip_all => 'RLAAS_TEST_REDIS_SPARE_PORT is not set (t/TEST.PL)' unless $PORT;

require HTTP::Tiny;
my $V = 'rlaas_local_fo';
my $em = error_log_mark();
my $redis;
END { $redis->stop if $redis }

sub dec { qq{rlaas_decisions_total{strategy="$_[0]",outcome="$_[1]"}} }
sub st_line { join ' ', map { $_->code . '/' . (status_of($_) // '-') } @_ }
# Each request on a connection of its own: a kept-alive one idle while the
# test kills or starts Redis may be closed by httpd as the next request
# goes out (the keep-alive race), which is no answer of the module's.
sub fo { my ($path, $u, $n) = @_; map { req_close($path, vhost => $V, h => { 'X-User' => $u }) } 1 .. $n }
my $five_three = join ' ', ('200/local') x 5, ('429/local_denied') x 3;

# Every child decides with Redis again: each has its own circuit breaker
# (RLaaSCircuitBreaker 3 300ms), closed by its next request after the
# cool-down. Rounds of 6 requests on new connections, each a client of
# its own, until all are decided by Redis; at most 5 s.
sub redis_decides {
    sleep 0.35;
    return wait_for(sub {
        !grep { (status_of($_) // '') ne 'allowed' }
            map { req_close('/lo/fo', vhost => $V, h => { 'X-User' => uid('lo-fo-p') }) } 1 .. 6;
    }, 5, 0.05);
}

# ------------------------------------------- a dry run's denial, in Redis' place
# The section's own limit (1, a dry run) denies from the second request on,
# the policy beside it allows and is charged, by the local engine standing
# in for Redis; a 200 does not count for it (countif 404), so each charge is
# given back after the response, by the engine that made it. Given to Redis
# (down), each would be lost (RLAAS0150).
{
    my $m0 = metrics();
    my $mark = error_log_mark();
    my $u = uid('lo-fo-dry');
    my @r = fo('/lo/fo/dry', $u, 4);
    is(st_line(@r), join(' ', '200/local', ('200/dry_run_denied') x 3),
        'Redis down: a dry run denies from the 2nd request on, decided by the local engine');
    my $m1;
    wait_for(sub { $m1 = metrics(); mdelta($m0, $m1, 'rlaas_countif_refunds_total') >= 4 }, 5);
    is(mdelta($m0, $m1, 'rlaas_countif_refunds_total'), 4, 'the 4 charges of the policy given back');
    is(mdelta($m0, $m1, 'rlaas_countif_refunds_lost_total'), 0, 'none lost (sent to the engine that made them)');
    unlike(error_log_since($mark), qr/RLAAS0150/, 'no refund lost in the error log');
}

# ---------------------------------------------------------------- Redis down
{
    my $m0 = metrics();
    my $u = uid('lo-fo');
    my @r = fo('/lo/fo', $u, 8);
    is(st_line(@r), $five_three, 'Redis down: the local engine allows 5 of 8 (limit 5), RLAAS_STATUS local');
    like($r[7]->header('Retry-After') // '', qr/^[1-9]\d*$/, 'a local denial carries Retry-After');
    like($r[7]->header('RateLimit') // '', qr/^"lo-fo";r=0;t=\d+$/, 'and the RateLimit fields');
    my $m1 = metrics();
    is(mdelta($m0, $m1, dec('sliding_log', 'local')), 5, 'metrics: outcome="local" 5');
    is(mdelta($m0, $m1, dec('sliding_log', 'local_denied')), 3, 'metrics: outcome="local_denied" 3');
    is(mdelta($m0, $m1, 'rate_limiter_fail_open_total'), 0, 'nothing allowed unlimited (fail_open 0)');
    cmp_ok(mdelta($m0, $m1, qq{rlaas_redis_errors_total{kind="connect"}})
         + mdelta($m0, $m1, qq{rlaas_redis_errors_total{kind="circuit_open"}}), '>=', 8,
        'each request tried Redis first (connect or circuit_open errors counted)');
    my @l = grep { /RLAAS0021/ } split /\n/, error_log_since($em);
    like($l[0] // '', qr/\[rlaas:warn\].*RLAAS0021: Redis (?:connect|circuit_open) error: .*decided by the local engine \(RLaaSFailOpen local\)/,
        'logged once a second at most, naming the policy');
    is(st_line(fo('/lo/fo/off', $u, 1)), '500/error', 'a section with RLaaSFailOpen off still answers 500');
    my $w = uid('lo-fo2');
    my @d = map { req('/lo/fo2', vhost => 'rlaas_local_fo2', h => { 'X-User' => $w }) } 1 .. 4;
    is(st_line(@d), '200/local 200/local 200/local 429/local_denied',
        'RLaaSLocalDivisor 2: a limit of 6 becomes 3 on this server');
}

# ---------------------------------------------------------------- exact, concurrent
{
    my $u = uid('lo-fo-ex');
    my @codes = parallel_requests(map { ['/lo/fo/exact', vhost => $V, h => { 'X-User' => $u }] } 1 .. 300);
    is(count_by(@codes), '200 x100 429 x200',
        'Redis down, 300 concurrent requests, limit 100 (token): exactly 100 allowed by the local engine');
}

# ---------------------------------------------------------------- Redis comes up
my $u2 = uid('lo-fo-up');
{
    $redis = spare_redis($PORT);
    ok($redis->pid, "Redis started on port $PORT");
    my $t0 = time;
    ok(redis_decides(), sprintf('back to Redis by itself, %.2fs after it started', time - $t0));
    my @r = fo('/lo/fo', $u2, 2);
    is(st_line(@r), '200/allowed 200/allowed', 'decided by Redis again (RLAAS_STATUS allowed)');
    is($redis->cmd('ZCARD', ukey('lo-fo', $u2)), 2, 'the state is in Redis');
}

# ---------------------------------------------------------------- Redis killed
{
    my $pid = $redis->pid;
    kill 'KILL', $pid;
    wait_for(sub { !kill 0, $pid }, 5, 0.05);
    my @r = fo('/lo/fo', $u2, 8);
    is(st_line(@r), $five_three, 'Redis killed: the local engine holds the limit on its own (5 of 8)');
    $redis->start_again;
    my $t0 = time;
    ok(redis_decides(), sprintf('Redis restarted: back to Redis by itself within %.2fs', time - $t0));
    @r = fo('/lo/fo', $u2, 6);
    is(st_line(@r), join(' ', ('200/allowed') x 5, '429/denied'),
        'Redis decides again, from its own state (restarted empty: 5 of 6)');
    my @c = crashes_since($em);
    is_deeply(\@c, [], 'no child crashed');
}

# Leave no circuit open for the tests that follow (t/redis_trust.t reads
# rlaas_circuit_open): a child whose circuit opened while Redis was down
# closes it on its next request, a probe, now that Redis answers.
{
    my $closed = wait_for(sub {
        for (1 .. 4) {
            req_close('/lo/fo', vhost => $V, h => { 'X-User' => uid('lo-fo-c') });
            req_close('/lo/fo2', vhost => 'rlaas_local_fo2', h => { 'X-User' => uid('lo-fo-c') });
        }
        (metrics()->{rlaas_circuit_open} // 0) == 0;
    }, 10, 0.35);
    note($closed ? 'no circuit left open' : 'circuits still open: ' . metrics()->{rlaas_circuit_open});
}

done_testing();
