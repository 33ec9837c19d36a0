# The circuit breaker (RLaaSCircuitBreaker <failures> <cool-down>, one per
# child and Redis): with Redis stalled (CLIENT PAUSE) and RLaaSRedisTimeout
# 200ms, after 3 timed-out requests a child answers at once by the
# fail-open policy without trying Redis; RLAAS0040 once per child; after the
# cool-down one probe per child goes to Redis (RLAAS0041 when it fails);
# once Redis answers, RLAAS0042 and the circuit closes (rlaas_circuit_open
# back to where it was). `RLaaSCircuitBreaker off`: every request tries
# Redis. `RLaaSCircuitFailOpen on` with `RLaaSFailOpen off`: 500 while
# failing, allowed (with an alert) while the circuit is open. Circuits open
# in children that go away (graceful restart) leave the gauge.
#
# Clients keep their connection alive, so each stays with one child (one
# process under worker/event); per-child statements are checked per
# process id, from the per-request log. The test moves from step to step
# when the clients are done (not at fixed times), and stalls Redis only
# while it needs to.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $PORT = $ENV{RLAAS_TEST_REDIS_SPARE2_PORT};
plan skip_all => 'RLAAS_TEST_REDIS_SPARE2_PORT is not set (t/TEST.PL)' unless $PORT;
END { $? = 0 if defined $? && $? == -1 }

# answered without trying Redis (timeouts are 200ms; one that waited for
# it took 190ms or more, slow() below): the margin is a loaded machine's
my $FAST_MS = 150;
sub err { qq{rlaas_redis_errors_total{kind="$_[0]"}} }
sub ms { ($_[0]{srv} ? $_[0]{srv}{us} : 1e9) / 1000 }
sub fast { ms($_[0]) < $FAST_MS }
# waited for the time-out: 200ms on rlaas_cb and rlaas_cbf, 100ms on rlaas_cboff
sub slow { ms($_[0]) >= ($_[0]{srv} && $_[0]{srv}{uri} =~ m{^/hd/cboff/} ? 95 : 190) }
sub mark { join '', map { slow($_) ? 'S' : fast($_) ? 'f' : '?' } @_ }
sub pid { $_[0]{srv} ? $_[0]{srv}{pid} : 'none' }
sub pids { my %p = map { pid($_) => 1 } @_; \%p }
sub log_pids {
    my ($log, $re) = @_;
    my %n;
    for (split /\n/, $log) { $n{$1}++ if /$re/ && /\[pid (\d+)/ }
    return \%n;
}
sub ones { +{ map { $_ => 1 } keys %{ $_[0] } } }

my $em = error_log_mark();
my $redis = spare_redis($PORT);
# CLIENT PAUSE MS ALL; Redis runs no command of anybody's (CLIENT UNPAUSE
# included) until the time is up, so stalls have a length, and the test
# waits for their end.
my $stall_end = 0;
sub stall { $redis->pause_ms($_[0]); $stall_end = time + $_[0] / 1000 }
sub unstalled { my $d = $stall_end + 0.05 - time; sleep $d if $d > 0 }
# sleep until MS after the latest end (server clock) of the logged requests
sub after_last {
    my ($tag, $n, $ms) = @_;
    my ($end) = sort { $b <=> $a } map { $_->{end} } wait_sig_log($tag, $n, 10);
    my $d = ($end // 0) / 1000 + $ms / 1000 - time;
    sleep $d if $d > 0;
}

my $u = uid('cb');
my %H = (h => { 'X-User' => $u });
for my $c (['rlaas_cb', '/hd/cb/open/x'], ['rlaas_cb', '/hd/cb/x'], ['rlaas_cbf', '/hd/cbf/x'],
           ['rlaas_cboff', '/hd/cboff/x']) {
    is(req_close($c->[1], vhost => $c->[0], %H)->code, 200, "$c->[0] $c->[1]: allowed while Redis answers");
}

# results of start_clients with their server-side log entries
sub collect {
    my ($h) = @_;
    my @r = wait_clients($h);
    my %srv = map { $_->{id} => $_ } wait_sig_log($h->{tag}, scalar(@r), 5);
    $_->{srv} = $srv{ $_->{id} } for @r;
    return @r;
}

# ================================================================ cycle 1
# Three clients on rlaas_cb (3 failures, 2s cool-down), one on rlaas_cboff
# (no breaker):
#   step 0  Redis stalled: 7 requests; at most 3 slow, then fast
#   step 1  cool-down over, Redis stalled: 1 request; in each child one
#           probe (slow, fails, RLAAS0041), the others fast
#   step 2  Redis back, the probe's cool-down over: until allowed
my $g0 = metrics();
my $base_open = $g0->{rlaas_circuit_open};
my ($mcb, $mcboff) = (log_mark('rlaas_cb_error_log'), log_mark('rlaas_cboff_error_log'));
my $T = time + 0.5;
my $h = start_clients(tag => uid('cb1'), keepalive => 1, clients => [
    (map { [
        { vhost => 'rlaas_cb', path => '/hd/cb/open/x', %H, at => $T + 0.1, n => 7 },
        { vhost => 'rlaas_cb', path => '/hd/cb/open/x', %H, go => 1, n => 1 },
        { vhost => 'rlaas_cb', path => '/hd/cb/open/x', %H, go => 1, n => 30, gap => 0.1,
          stop_on => 'allowed' },
    ] } 1 .. 3),
    [
        { vhost => 'rlaas_cboff', path => '/hd/cboff/x', %H, at => $T + 0.1, n => 5 },
        { vhost => 'rlaas_cboff', path => '/hd/cboff/x', %H, go => 1, n => 0 },
        { vhost => 'rlaas_cboff', path => '/hd/cboff/x', %H, go => 1, n => 1 },
    ],
]);
sleep $T - time if $T > time; # never negative (dies)
stall(2500);
is(wait_step($h), 4, 'step 0 done');
my $g1 = metrics();    # every circuit of step 0 open, none probed yet
my $mcb2 = log_mark('rlaas_cb_error_log');
unstalled();
after_last($h->{tag}, 3 * 7 + 5, 2000 + 300);    # the cool-down
# (long enough for a client that starts its request late; the probes'
# cool-down below is waited for anyway)
stall(1500);
release_clients($h);
is(wait_step($h), 4, 'step 1 done');
my $mcb3 = log_mark('rlaas_cb_error_log');
unstalled();
after_last($h->{tag}, 3 * 8 + 5, 2000 + 200);    # the probes' cool-down
release_clients($h);
is(wait_step($h), 4, 'step 2 done');
my @r = collect($h);
my $g2 = metrics();
my $cblog = log_since('rlaas_cb_error_log', $mcb);

my @cb = grep { $_->{client} < 3 } @r;
my @s0 = grep { $_->{step} == 0 } @cb;
my @s1 = grep { $_->{step} == 1 } @cb;
my @s2 = grep { $_->{step} == 2 } @cb;
my @off = grep { $_->{client} == 3 } @r;
my $pids0 = keys %{ pids(@s0) };
note('cycle 1: served by processes ' . join(' ', sort keys %{ pids(@cb) }));

is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } @s0), '200/fail_open x21',
    'Redis stalled, RLaaSFailOpen on: all 21 requests allowed (fail_open)');
# Under prefork every call waits for the time-out or is not made; a
# threaded child groups concurrent calls, and a call sent in the group of an
# older one shares that one's deadline (so it may fail sooner).
if (mpm() eq 'prefork') {
    my @weird = grep { !fast($_) && !slow($_) } @s0;
    is(scalar(@weird), 0, "every answer either waited for the time-out or came at once (< ${FAST_MS}ms on the server)")
        or diag(join ' ', map { sprintf '%.0fms', ms($_) } @weird);
}
for my $c (0 .. 2) {
    my @x = grep { $_->{client} == $c } @s0;
    my $pattern = mark(@x);
    my $slow = () = $pattern =~ /S/g;
    ok($slow >= (mpm() eq 'prefork' ? 1 : 0) && $slow <= 3 && $pattern =~ /f{4}$/,
        "client $c: at most 3 requests wait for the time-out, then the circuit answers at once ($pattern)");
    note(sprintf 'client %d: slowest fast answer at the client %.0fms', $c,
        1000 * ((sort { $b <=> $a } map { $_->{dt} } grep { fast($_) } @x)[0] // 0));
}
is($g1->{rlaas_circuit_open} - $base_open, $pids0, "rlaas_circuit_open: one open circuit per child that served ($pids0)");
is(mdelta($g0, $g1, 'rlaas_circuit_opened_total'), $pids0, 'rlaas_circuit_opened_total: as many');
{
    my $l0 = substr($cblog, 0, $mcb2 - $mcb);
    is_deeply(log_pids($l0, qr/RLAAS0040: circuit opened after 3 consecutive Redis failures/), ones(pids(@s0)),
        "RLAAS0040 logged once per child, not per request ($pids0 children)") or diag($l0);
    like($l0, qr/\[rlaas:error\][^\n]*RLAAS0040[^\n]*last: timeout[^\n]*2000ms/,
        'RLAAS0040 at error, with the last failure and the cool-down');
}

# step 1: one probe per child, which fails and keeps the circuit open
{
    my %slow;
    $slow{ pid($_) }++ for grep { slow($_) } @s1;
    is_deeply(\%slow, ones(pids(@s1)),
        'after the cool-down, Redis still stalled: exactly one request per child probes Redis (waits)');
    is(count_by(map { $_->{status} // '-' } @s1), 'fail_open x3', 'the probe and the others: fail_open');
    my $l1 = substr($cblog, $mcb2 - $mcb, $mcb3 - $mcb2);
    is_deeply(log_pids($l1, qr/RLAAS0041: circuit probe failed/), ones(pids(@s1)),
        'RLAAS0041 (probe failed) once per child');
}

# step 2: Redis back: the probe goes through, the circuit closes
{
    my @last = map { my $c = $_; (grep { $_->{client} == $c } @s2)[-1] } 0 .. 2;
    is(join(' ', map { ($_ && $_->{status}) // 'none' } @last), 'allowed allowed allowed',
        'Redis back: every client is allowed again');
    # one probe per child; a request arriving while it runs is answered at
    # once (threaded MPMs: several clients share a child)
    my @other = grep { ($_->{status} // '') ne 'allowed' } @s2;
    is(scalar(grep { !(($_->{status} // '') eq 'fail_open' && fast($_)) } @other), 0,
        'after the cool-down, while the probe runs, other requests are answered at once (fail_open)')
        or diag(join ' ', map { ($_->{status} // '-') . '/' . pid($_) } @s2);
    my %tries;
    $tries{ $_->{client} }++ for @s2;
    # (the probe reconnects to Redis: a loaded machine's margin; a probe
    # that failed would keep the circuit open for its 2s cool-down)
    ok(!grep({ $_ > 5 } values %tries), 'every client is allowed within 5 tries, 100ms apart ('
        . join(' ', map { $tries{$_} } sort keys %tries) . ')');
    my $l2 = substr($cblog, $mcb3 - $mcb);
    is_deeply(log_pids($l2, qr/RLAAS0042: circuit closed/), ones(pids(@s2)), 'RLAAS0042 (circuit closed) once per child');
    like($l2, qr/\[rlaas:notice\][^\n]*RLAAS0042/, 'RLAAS0042 at notice');
    is($g2->{rlaas_circuit_open}, $base_open, "rlaas_circuit_open is back to $base_open");
}

# accounting: every fail_open is one Redis error: not tried (circuit_open),
# or tried and timed out (a call that waited its whole time in a threaded
# child's queue for its turn to be sent is a "pool" error)
{
    my @fo = grep { ($_->{status} // '') eq 'fail_open' } @cb, @off;
    my %d = map { $_ => mdelta($g0, $g2, err($_)) } qw(circuit_open timeout pool connect io reply);
    is($d{circuit_open} + $d{timeout} + $d{pool} + $d{connect} + $d{io} + $d{reply}, scalar(@fo),
        'every fail_open is counted once in rlaas_redis_errors_total (' . join(' ', map { "$_=$d{$_}" } sort keys %d) . ')');
    my $fast = grep { fast($_) && $_->{client} < 3 } @fo;
    ok($d{circuit_open} >= 1 && $d{circuit_open} <= $fast,
        "rlaas_redis_errors_total{kind=\"circuit_open\"} grew ($d{circuit_open}), by at most the $fast requests answered at once");
    my $waited = grep { slow($_) } @fo;
    cmp_ok($d{timeout} + $d{pool}, '>=', $waited, "{kind=\"timeout\"} + {kind=\"pool\"}: at least the $waited that waited");
}

# RLaaSCircuitBreaker off: every request tries Redis
{
    my @o0 = grep { $_->{step} == 0 } @off;
    my $pattern = mark(@o0);
    is($pattern, 'SSSSS', "RLaaSCircuitBreaker off: all 5 requests wait for the time-out ($pattern)");
    # a margin for a loaded machine; Redis is stalled 2.5s, so a request
    # that ignored its budget still exceeds it
    ok(!grep({ ms($_) > 100 + 900 } @o0), 'and no longer than RLaaSRedisTimeout 100ms + 900ms');
    is(count_by(map { $_->{status} // '-' } @o0), 'fail_open x5', 'RLaaSCircuitBreaker off: fail_open');
    is((grep { $_->{step} == 2 } @off)[0]{status}, 'allowed', 'RLaaSCircuitBreaker off: allowed once Redis is back');
    unlike(log_since('rlaas_cboff_error_log', $mcboff), qr/RLAAS004/, 'RLaaSCircuitBreaker off: no circuit lines');
}

# ================================================================ cycle 2
# rlaas_cbf: RLaaSCircuitBreaker 2 1s, RLaaSFailOpen off, RLaaSCircuitFailOpen
# on. A 500 closes the connection, so clients can't stay with a child here:
# the statements are made per child from the server's log (pid, begin and
# end of each request).
{
    my $m = log_mark('rlaas_cbf_error_log');
    my $m0 = metrics();
    my $T2 = time + 0.5;
    my $h2 = start_clients(tag => uid('cb2'), keepalive => 0, clients => [ map { [
        { vhost => 'rlaas_cbf', path => '/hd/cbf/x', %H, at => $T2 + 0.1, n => 7 },
        { vhost => 'rlaas_cbf', path => '/hd/cbf/x', %H, go => 1, n => 20, gap => 0.1,
          stop_on => 'allowed' },
    ] } 1 .. 3 ]);
    sleep $T2 - time if $T2 > time;
    stall(1800);
    is(wait_step($h2), 3, 'step 0 done');
    unstalled();
    after_last($h2->{tag}, 3 * 7, 1000 + 300);
    release_clients($h2);
    my @r2 = collect($h2);
    my @x = grep { $_->{step} == 0 && $_->{srv} } @r2;
    my %by;
    push @{ $by{ pid($_) } }, $_ for @x;
    my ($opened, @wrong) = (0);
    for my $p (sort keys %by) {
        my @q = sort { $a->{srv}{begin} <=> $b->{srv}{begin} } @{ $by{$p} };
        my @fail = sort { $a <=> $b } map { $_->{srv}{end} } grep { $_->{code} == 500 } @q;
        next unless @fail >= 2;
        $opened++;
        # The circuit counts failed calls, not requests: requests sent
        # together in one group (event, worker) fail at one time-out, once,
        # so the second 500 need not be the second failure. After the last
        # 500 the circuit is open (a request that tried Redis would have
        # failed too), and it stays so for the cool-down (1s), which began
        # at most one time-out (200ms) before that 500 ended.
        my $t_open = $fail[-1];
        my @open = grep { $_->{srv}{begin} > $t_open + 2 && $_->{srv}{begin} < $t_open + 500 } @q;
        push @wrong, grep { !($_->{code} == 200 && ($_->{status} // '') eq 'fail_open' && fast($_)) } @open;
    }
    my @f500 = grep { $_->{code} == 500 } @x;
    cmp_ok(scalar(@f500), '>=', 2, 'RLaaSCircuitFailOpen on, RLaaSFailOpen off: while Redis fails and the circuit '
        . 'is closed, 500 (' . scalar(@f500) . ')');
    is(scalar(grep { ($_->{status} // '') ne 'error' } @f500), 0, 'with RLAAS_STATUS=error');
    if (mpm() eq 'prefork') {
        is(scalar(grep { !slow($_) } @f500), 0, 'each after the time-out');
    } else {
        note('500s before the time-out (sent in an older call\'s group): ' . scalar(grep { !slow($_) } @f500));
    }
    cmp_ok($opened, '>=', 1, "the circuit opened in $opened child(ren) after 2 failures");
    my @fo = grep { ($_->{status} // '') eq 'fail_open' } @x;
    cmp_ok(scalar(@fo), '>=', 1, scalar(@fo) . ' requests allowed (fail_open) while the circuit was open');
    is(scalar(grep { !fast($_) || $_->{code} != 200 } @fo), 0, 'those were answered at once (200)');
    is(scalar(@wrong), 0, 'in each child, every request begun while its circuit was open was allowed at once')
        or diag(join "\n", map { "$_->{srv}{pid} $_->{code} " . ($_->{status} // '-') . ' ' . ms($_) . 'ms' } @wrong);
    is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } grep { $_->{code} != 500 && ($_->{status} // '') ne 'fail_open' } @x),
        '', 'nothing else (no 200 without fail_open, no 429) while Redis was stalled');
    for my $c (0 .. 2) {
        my @y = grep { $_->{client} == $c && $_->{step} == 1 } @r2;
        is(@y ? $y[-1]{status} : 'none', 'allowed', "RLaaSCircuitFailOpen on, client $c: allowed again when Redis is back");
    }
    my $m1 = metrics();
    my $all_fo = grep { ($_->{status} // '') eq 'fail_open' } @r2;
    is(mdelta($m0, $m1, qq{rlaas_decisions_total{strategy="sliding_log",outcome="fail_open"}}), $all_fo,
        "the $all_fo fail_open decisions are counted");
    is(mdelta($m0, $m1, qq{rlaas_decisions_total{strategy="sliding_log",outcome="error"}}),
        scalar(grep { $_->{code} == 500 } @r2), 'and the 500s as errors');
    my $log = log_since('rlaas_cbf_error_log', $m);
    like($log, qr/\[rlaas:alert\][^\n]*RLAAS0021[^\n]*RLaaSCircuitFailOpen/,
        'allowing through an open circuit is logged at alert (RLAAS0021, RLaaSCircuitFailOpen)');
    like($log, qr/\[rlaas:error\][^\n]*RLAAS0021[^\n]*refused with 500/, 'the 500s before are logged at error');
}

# ================================================================ restart
# Circuits left open in children that then go away (graceful restart) are
# taken off rlaas_circuit_open: the gauge does not stay up for ever.
{
    my $m0 = metrics();
    my $T3 = time + 0.5;
    my $h3 = start_clients(tag => uid('cb3'), keepalive => 1, clients => [ map { [
        { vhost => 'rlaas_cb', path => '/hd/cb/open/x', %H, at => $T3 + 0.1, n => 4 },
    ] } 1 .. 3 ]);
    sleep $T3 - time if $T3 > time;
    # (3 time-outs of 200ms each must fit in it, for a client that starts
    # late too)
    stall(2500);
    my @r3 = collect($h3);
    unstalled();
    my $pids = keys %{ pids(@r3) };
    my $m1 = metrics();
    my $open = $m1->{rlaas_circuit_open};
    # (the gauge can't be compared with before: prefork also stops spare
    # children, some with circuits of cycle 2 still open)
    is(mdelta($m0, $m1, 'rlaas_circuit_opened_total'), $pids, "circuits opened again in $pids child(ren)");
    cmp_ok($open, '>=', $pids, "rlaas_circuit_open counts them ($open)");
    my $gen = graceful_restart();
    ok($gen, 'graceful restart');
    my $g;
    ok(wait_for(sub { $g = metrics()->{rlaas_circuit_open}; $g == 0 }, 10, 0.2),
        "after the restart the old children's open circuits are gone: rlaas_circuit_open $g (was $open)");
}

my @c = crashes_since($em);
is_deeply(\@c, [], 'no child crashed');
$redis->stop;
done_testing();
