# SetHandler rlaas-metrics: counters summed over every child, exact after a
# known sequence of requests spread over several children; the Redis
# latency histogram; server-status?auto's RLaaS* lines; counters survive a
# graceful restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my @STRATEGIES = qw(fixed sliding_log sliding token leaky gcra);
my @OUTCOMES = qw(allowed denied error fail_open dry_run_denied);
my @KINDS = qw(pool connect auth select timeout io reply circuit_open);
sub dec { qq{rlaas_decisions_total{strategy="$_[0]",outcome="$_[1]"}} }
sub err { qq{rlaas_redis_errors_total{kind="$_[0]"}} }

# ---------------------------------------------------------------- format
my $m0 = metrics();
{
    my $res = req_close('/sig/metrics');
    like($res->header('Content-Type') // '', qr{^text/plain; version=0\.0\.4}, 'Prometheus text format');
    my @missing = grep { !exists $m0->{$_} }
        (map { my $s = $_; map { dec($s, $_) } @OUTCOMES } @STRATEGIES),
        (map { err($_) } @KINDS),
        qw(rate_limiter_fail_open_total rlaas_redis_latency_seconds_count
           rlaas_redis_latency_seconds_sum rlaas_redis_connections rlaas_redis_connects_total
           rlaas_redis_script_loads_total rlaas_circuit_open rlaas_circuit_opened_total);
    is_deeply(\@missing, [], 'every series is exposed: decisions by strategy x outcome, errors by kind, ...');
    like($res->content, qr/^# TYPE rlaas_decisions_total counter$/m, '# TYPE lines');
    like($res->content, qr/^# TYPE rlaas_redis_latency_seconds histogram$/m, 'the latency is a histogram');
    my $sum = 0;
    $sum += $m0->{ dec($_, 'fail_open') } for @STRATEGIES;
    is($m0->{rate_limiter_fail_open_total}, $sum, 'rate_limiter_fail_open_total is the sum of the fail_open outcomes');
}

# ---------------------------------------------------------------- a known sequence
# Warm up first: the leaky script is loaded (one NOSCRIPT, two calls) now,
# not during the counted sequence.
req_close('/sig/m/x', h => { 'X-User' => uid('m-warm') });
req_close('/sig/m/dry/x', h => { 'X-User' => uid('m-warm') });

my $before = metrics();
my ($ua, $ub) = (uid("m-a"), uid("m-b"));
# 40 requests of one client at limit 20, from 8 clients on new connections
# (under prefork: several children); 10 of another under dry run (limit 5)
my $tag = uid('m-seq');
my @res = run_clients(tag => $tag, keepalive => 0, clients => [
    (map { [{ path => '/sig/m/x', h => { 'X-User' => $ua }, n => 5 }] } 1 .. 8),
    (map { [{ path => '/sig/m/dry/x', h => { 'X-User' => $ub }, n => 5 }] } 1 .. 2),
]);
# Redis unreachable (no circuit breaker there): 3 fail closed, 4 fail open
my @dead = ((map { req_close('/sig/dead/m/x', vhost => 'rlaas_sig_dead')->code } 1 .. 3),
            (map { req_close('/sig/dead/m/open/x', vhost => 'rlaas_sig_dead')->code } 1 .. 4));
my @log = wait_sig_log($tag, 50);
my $after = metrics();

is(count_by(map { $_->{code} } grep { $_->{client} < 8 } @res), '200 x20 429 x20',
    'leaky, limit 20: 40 requests of one client from 8 connections: 20 allowed, 20 denied');
is(count_by(map { $_->{status} } grep { $_->{client} >= 8 } @res), 'allowed x5 dry_run_denied x5',
    'dry run, limit 5: 10 requests, 5 allowed, 5 dry_run_denied');
is("@dead", '500 500 500 200 200 200 200', 'Redis unreachable: 3 x 500 (fail closed), 4 x 200 (fail open)');
my %pids = map { $_->{pid} => 1 } @log;
is(scalar(@log), 50, 'every request of the sequence is in the per-request log');
if (mpm() eq 'prefork') {
    cmp_ok(scalar(keys %pids), '>=', 2, 'prefork: the sequence was served by several children ('
        . join(' ', sort keys %pids) . ')');
} else {
    cmp_ok(scalar(keys %pids), '>=', 1, mpm() . ': served by ' . scalar(keys %pids) . ' process(es)');
}

my %want = (
    dec('leaky', 'allowed') => 25, dec('leaky', 'denied') => 20, dec('leaky', 'dry_run_denied') => 5,
    dec('gcra', 'error') => 3, dec('gcra', 'fail_open') => 4,
    rate_limiter_fail_open_total => 4,
    err('connect') => 7,
    rlaas_redis_latency_seconds_count => 50,
);
for my $s (@STRATEGIES) { for my $o (@OUTCOMES) { $want{ dec($s, $o) } //= 0 } }
$want{ err($_) } //= 0 for @KINDS;
$want{rlaas_redis_script_loads_total} = 0;
$want{rlaas_circuit_opened_total} = 0;
my %got = map { $_ => mdelta($before, $after, $_) } keys %want;
is_deeply(\%got, \%want, 'exact deltas: decisions by strategy and outcome, fail-open total, '
    . 'Redis errors by kind (7 connect), 50 latency observations, nothing else')
    or diag(explain({ map { $_ => "$got{$_} (want $want{$_})" } grep { $got{$_} != $want{$_} } keys %want }));

# ---------------------------------------------------------------- histogram
{
    my @b = map { /^rlaas_redis_latency_seconds_bucket\{le="([^"]+)"\}$/ ? [$1, $after->{$_}] : () }
        keys %$after;
    my @sorted = sort { ($a->[0] eq '+Inf' ? 9e9 : $a->[0]) <=> ($b->[0] eq '+Inf' ? 9e9 : $b->[0]) } @b;
    cmp_ok(scalar(@sorted), '>=', 5, 'the histogram has buckets (' . scalar(@sorted) . ')');
    is($sorted[-1][0], '+Inf', 'the last bucket is +Inf');
    my @down = grep { $sorted[$_][1] < $sorted[$_ - 1][1] } 1 .. $#sorted;
    is_deeply(\@down, [], 'buckets are cumulative: never decreasing with le');
    is($sorted[-1][1], $after->{rlaas_redis_latency_seconds_count}, '+Inf bucket == _count');
    my $ds = mdelta($before, $after, 'rlaas_redis_latency_seconds_sum');
    ok($ds > 0 && $ds < 50 * 2, "_sum grew by the time of the 50 calls (${ds}s)");
    my $inf = qq{rlaas_redis_latency_seconds_bucket{le="+Inf"}};
    is(mdelta($before, $after, $inf), 50, '+Inf bucket grew by 50');
}

# ---------------------------------------------------------------- server-status
{
    my $m = metrics();
    my $s = status_auto();
    my %sum;
    for my $o (@OUTCOMES) { $sum{$o} += $m->{ dec($_, $o) } for @STRATEGIES }
    my %key = (allowed => 'RLaaSAllowed', denied => 'RLaaSDenied', error => 'RLaaSError',
               fail_open => 'RLaaSFailOpen', dry_run_denied => 'RLaaSDryRunDenied');
    for my $o (@OUTCOMES) {
        is($s->{ $key{$o} }, $sum{$o}, "server-status?auto $key{$o}: $sum{$o}, the metrics' total");
    }
    # gauges summed over the children alive: prefork stops spare ones
    # after a burst (each with its connections and circuits), so the two
    # pages are read until a child's end falls outside the span read
    for my $g (['RLaaSRedisConnections', 'rlaas_redis_connections'],
               ['RLaaSCircuitsOpen', 'rlaas_circuit_open']) {
        my ($sk, $mk) = @$g;
        my ($m1, $st, $m2);
        ok(Apache::TestRLaaS::wait_for(sub {
                $m1 = metrics()->{$mk};
                $st = status_auto()->{$sk};
                $m2 = metrics()->{$mk};
                defined $m1 && defined $st && defined $m2 && $m1 == $st && $st == $m2;
            }, 5, 0.2),
            "server-status?auto $sk == $mk")
            or diag('metrics ' . ($m1 // '-') . ', status ' . ($st // '-') . ', metrics ' . ($m2 // '-'));
    }
    my $html = req_close('/server-status')->content;
    like($html, qr/mod_rlaas/, 'the server-status page has a mod_rlaas section');
}

# ---------------------------------------------------------------- graceful restart
{
    my $m1 = metrics();
    my $gen = graceful_restart();
    ok($gen, "graceful restart: generation $gen serves");
    my $m2 = metrics();
    my @counters = grep { !/^rlaas_redis_connections$|^rlaas_circuit_open$/ } sort keys %$m1;
    my @lost = grep { ($m2->{$_} // -1) < $m1->{$_} } @counters;
    is_deeply(\@lost, [], 'after a graceful restart no counter is lower than before (not reset)');
    is($m2->{ dec('leaky', 'allowed') }, $m1->{ dec('leaky', 'allowed') },
        'after a graceful restart the decision counters hold the same totals');
    my $u = uid('m-after');
    is(req_close('/sig/m/x', h => { 'X-User' => $u })->code, 200, 'a request after the restart: allowed');
    my $m3 = metrics();
    is(mdelta($m2, $m3, dec('leaky', 'allowed')), 1, 'and counted once more in the same totals');
    cmp_ok($m3->{rlaas_redis_latency_seconds_count}, '>', $m1->{rlaas_redis_latency_seconds_count},
        'the histogram goes on counting after the restart');
    my $s = status_auto();
    my $sum = 0;
    $sum += $m3->{ dec($_, 'allowed') } for @STRATEGIES;
    is($s->{RLaaSAllowed}, $sum, 'server-status after the restart: the same totals as the metrics');
}

done_testing();
