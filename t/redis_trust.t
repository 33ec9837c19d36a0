# Trust on the Redis side: no client can hold the circuit open for
# everyone, a failover behind one address heals by itself, the time budget
# is a hard bound, a call that was written is never sent again, the log
# names what Redis said, and the gauges forget a killed child.
#
# httpd reaches two Redis servers of this test's own (A, then B after the
# failover) through RLaaS::Relay on RLAAS_TEST_RELAY_PORT (vhosts
# rlaas_relay and rlaas_relay1 in t/conf/x-redis-trust.conf.in: budget
# 150ms, circuit 5 failures / 300ms).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);
use JSON::PP ();

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $RPORT = $ENV{RLAAS_TEST_RELAY_PORT};
plan skip_all => 'RLAAS_TEST_RELAY_PORT is not set (t/TEST.PL)' unless $RPORT;
END { $? = 0 if defined $? && $? == -1 }

require RLaaS::Redis;
require RLaaS::Relay;
# Redis 7 waits 5 s (repl-diskless-sync-delay) before it feeds a new
# replica: longer than synced() waits below
my $A = RLaaS::Redis->start(extra => ['--repl-diskless-sync-delay', 0]);
my $B = RLaaS::Redis->start;
$B->cmd('REPLICAOF', '127.0.0.1', $A->port);
my $relay = RLaaS::Relay->start(port => $RPORT, target => $A->port);

my $VH = 'rlaas_relay';
my $ELOG = 'rlaas_relay_error_log';
sub get { my ($path, $u, %o) = @_; req($path, vhost => $o{vhost} || $VH, h => { 'X-User' => $u, %{ $o{h} || {} } }) }
sub status { my $res = shift; $res->code . ' ' . (status_of($res) // '-') }
sub series { my ($name) = @_; metrics()->{$name} // 0 }
sub circuits_opened { series('rlaas_circuit_opened_total') }
# failures of one Redis node, all kinds (rlaas_redis_node_failures_total)
sub node_failures {
    my ($port) = @_;
    my $m = metrics();
    my $n = 0;
    $n += $m->{$_} for grep { /^rlaas_redis_node_failures_total\{node="127\.0\.0\.1:$port",/ } keys %$m;
    return $n;
}
sub mkeys { my ($r, $zone) = @_; my @k; my $c = 0;
    do { my $x = $r->cmd('SCAN', $c, 'MATCH', prefix() . "$zone:*", 'COUNT', 1000);
         ($c, my $l) = @$x; push @k, @$l } while $c; @k }
# the module's connections a Redis sees (of one child: mod_rlaas-<pid>)
sub mod_conns {
    my ($r, $pid) = @_;
    my $name = 'mod_rlaas-' . ($pid // '\d+');
    my $l = $r->cmd('CLIENT', 'LIST');
    return scalar grep { /\bname=$name\b/ } split /\n/, (ref $l ? '' : $l);
}
sub kill_mod_conns {
    my ($r) = @_;
    for (split /\n/, $r->cmd('CLIENT', 'LIST')) {
        $r->cmd('CLIENT', 'KILL', 'ID', $1) if /\bid=(\d+)\b.*\bname=mod_rlaas-\d+\b/;
    }
}
# wait until $B has caught up with $A (replication)
sub synced {
    for (1 .. 100) {
        my $i = $B->cmd('INFO', 'replication');
        return 1 if $i =~ /master_link_status:up/;
        sleep 0.05;
    }
    return 0;
}
ok(synced(), 'B replicates A');

# ================================================================ warm
{
    my $u = uid('warm');
    is(status(get('/relay/x', $u)), '200 allowed', 'through the relay to A: allowed');
    is(status(get('/relay/open/x', $u)), '200 allowed', 'fail-open section: allowed');
    is(scalar(mkeys($A, 'relay')), 1, 'the counter is on A');
    # names its connections, so operators (and this test) can find them
    cmp_ok(mod_conns($A), '>=', 1, 'CLIENT LIST shows name=mod_rlaas');
}

# ================================================================ per-key errors
# One client whose key holds the wrong type gets its own 500 every time;
# Redis itself is fine, so the circuit stays closed and everybody else is
# decided as usual.
{
    my ($bad, $good) = (uid('wt-bad'), uid('wt-good'));
    is(status(get('/relay/wrongtype/x', $bad)), '200 allowed', 'wrongtype: first request allowed');
    my @k = mkeys($A, 'relay-wt');
    is(scalar(@k), 1, 'its sliding-log key') or diag("@k");
    $A->cmd('DEL', @k);
    $A->cmd('SET', $k[0], 'not a zset');    # WRONGTYPE from now on
    my $opened = circuits_opened();
    my $srv0 = node_failures($RPORT);
    my @c = map { status(get('/relay/wrongtype/x', $bad)) } 1 .. 20;
    is(count_by(@c), '500 error x20', 'a key of the wrong type: that client gets 500, 20 times');
    is(circuits_opened() - $opened, 0, 'no circuit opened: an error about one key is not a Redis failure');
    # (other tests' circuits may be open in some child: this node's own
    # failures are the measure)
    is(node_failures($RPORT) - $srv0, 0,
        'and none of them counted as a failure of Redis');
    is(status(get('/relay/wrongtype/x', $good)), '200 allowed', 'another client right after: allowed');
    is(status(get('/relay/open/x', $good)), '200 allowed', 'and decided in a fail-open section (not fail_open)');
    $A->cmd('DEL', $k[0]);
}

# ================================================================ once per group
# A stall fails every call waiting on it; the circuit counts one failure
# per group of calls, not one per request (5 needed to open).
{
    my $opened = circuits_opened();
    # the clients start 0.6s after the call (parallel_requests)
    $A->pause_ms(3000);
    my $t0 = time;
    my @c = parallel_requests(map { ['/relay1/x', vhost => 'rlaas_relay1', h => { 'X-User' => uid('grp') }] } 1 .. 20);
    cmp_ok(scalar(grep { $_ == 500 } @c), '>=', 10, 'requests during a stall: 500 (fail closed)')
        or diag("@c");
    SKIP: {
        # a prefork child runs one request at a time: each is a group of its
        # own, and 5 in a row rightly open its circuit
        skip 'prefork: one call per group', 1 if mpm() eq 'prefork';
        is(circuits_opened() - $opened, 0,
            'no circuit opened: each child counted its groups (a few), not its 10 requests');
    }
    my $d = $t0 + 3.1 - time;
    sleep $d if $d > 0;
}

# ================================================================ time budget
# A Redis that trickles its reply a byte every 40 ms can't hold a request
# past its budget (150 ms), however long each single read takes.
{
    my $u = uid('trickle');
    is(status(get('/relay/x', $u)), '200 allowed', 'before: allowed');
    $relay->mode('trickle', 40);
    my $tag = uid('trickle-tid');
    my @r = run_clients(tag => $tag, keepalive => 0, clients => [
        map { [{ path => ($_ % 2 ? '/relay/x' : '/relay/open/x'), vhost => $VH,
                 h => { 'X-User' => $u }, n => 2 }] } 1 .. 6 ]);
    $relay->mode('pass');
    is(scalar(@r), 12, '12 requests while replies trickle');
    # the server's own time (%D in rlaas_sig_log): a loaded machine's
    # client also waits for its connection to be accepted, which no budget
    # bounds (a whole reply trickles in over a second); the client's is
    # reported
    my %srv = map { $_->{id} => $_ } wait_sig_log("$tag-", scalar(@r), 5);
    my @slow = grep { !$srv{ $_->{id} } || $srv{ $_->{id} }{us} > 650_000 } @r;
    my ($dt) = sort { $b <=> $a } map { $_->{dt} } @r;
    is_deeply([map { $srv{ $_->{id} } ? sprintf('%.2fs', $srv{ $_->{id} }{us} / 1e6) : "$_->{id} not logged" } @slow], [],
        sprintf('each answered within the budget (150ms) and a margin: none over 0.65s on the server (%.2fs at most at the client)', $dt // 0));
    is(count_by(map { "$_->{code} " . ($_->{status} // '-') } @r), '200 fail_open x6 500 error x6',
        'answered by the policy: 500 fail closed, fail_open when open');
    sleep 0.35;    # a circuit those time-outs opened has cooled down
}

# ================================================================ never sent twice
# The call reached Redis and ran; its reply is lost. The request fails (it
# can't know the verdict), and the call is not sent again on another
# connection: the counter went up once.
{
    my $u = uid('once');
    is(status(get('/relay/once/x', $u)), '200 allowed', 'a pooled connection in this child');
    my @k = mkeys($A, 'relay-once');
    is(scalar(@k), 1, 'its counter');
    is($A->cmd('GET', $k[0]), 1, 'counted once');
    $relay->mode('cut');
    my $res = get('/relay/once/x', $u);
    $relay->mode('pass');
    is(status($res), '500 error', 'reply lost after the call ran: 500');
    is($A->cmd('GET', $k[0]), 2, 'the call ran once, and was not sent again');
}

# ================================================================ stale connections
# Connections Redis closed while they sat in the pool are found out before
# anything is written: the next request is decided, not failed.
{
    my $u = uid('stale');
    is(status(get('/relay/x', $u)), '200 allowed', 'a pooled connection');
    kill_mod_conns($A);
    sleep 0.1;
    is(status(get('/relay/x', $u)), '200 allowed', 'after Redis closed it: allowed on a new connection');
}

# ================================================================ failover
# A is demoted, B promoted, the relay now leads to B. Connections already
# made stay on A and get READONLY: the module makes them all again and
# requests are decided on B within a few seconds, with fail-open on and off.
{
    my $u = uid('fo');
    # several pooled connections on A, in every child
    parallel_requests(map { ['/relay/x', vhost => $VH, h => { 'X-User' => $u }] } 1 .. 8);
    my $m = log_mark($ELOG);
    $B->cmd('REPLICAOF', 'NO', 'ONE');
    $A->cmd('REPLICAOF', '127.0.0.1', $B->port);
    $relay->target($B->port);
    my $t0 = time;
    my (%first, @seen);
    while (time - $t0 < 5) {
        for my $p ('/relay/x', '/relay/open/x') {
            my $s = status(get($p, $u, h => { Connection => 'close' }));
            push @seen, $s;
            $first{$p} //= time - $t0 if $s eq '200 allowed';
        }
        last if keys %first == 2 && time - $t0 > 1;
        sleep 0.02;
    }
    ok(defined $first{'/relay/x'} && $first{'/relay/x'} < 3,
        sprintf('fail closed: decided again %.2fs after the failover', $first{'/relay/x'} // -1))
        or diag(count_by(@seen));
    ok(defined $first{'/relay/open/x'} && $first{'/relay/open/x'} < 3,
        sprintf('fail open: decided again (not fail_open) %.2fs after the failover', $first{'/relay/open/x'} // -1));
    my @after = map { status(get('/relay/x', $u)) } 1 .. 10;
    is(count_by(@after), '200 allowed x10', 'and it stays so');
    ok(scalar(mkeys($B, 'relay')) >= 1, 'the counters are now written on B');
    like(log_since($ELOG, $m), qr/RLAAS0043: Redis is not the master here \(READONLY/,
        'the log says why the connections were made again (RLAAS0043, READONLY)');
}

# ================================================================ the cause in the log
# While the circuit is open, the log keeps naming what Redis said.
# (rlaas_relay1: 3s cool-down, its lines in the main error_log)
{
    my $m = error_log_mark();
    my $opened = circuits_opened();
    my %v1 = (vhost => 'rlaas_relay1');
    $B->cmd('CONFIG', 'SET', 'requirepass', 'now-required');
    kill_mod_conns($B);
    sleep 0.1;
    # every 500 closes its connection: under prefork the requests go to
    # many children, each with its own circuit
    my @c;
    for (1 .. 100) {
        push @c, status(get('/relay1/x', uid('noauth'), %v1));
        last if @c >= 12 && circuits_opened() > $opened;
    }
    is(count_by(@c), '500 error x' . scalar(@c), 'NOAUTH from Redis: 500 (fail closed)');
    cmp_ok(circuits_opened() - $opened, '>=', 1, 'a Redis that refuses us opens the circuit');
    # in a fresh second of the log gates (one per child), a request meets
    # an open circuit; under prefork a request goes to any child, and most
    # have a circuit still closed (each such request logs NOAUTH, and
    # counts towards opening that child's circuit too): a few requests in
    # each fresh second until one has met an open circuit
    my $log = '';
  SECOND: for (1 .. 6) {
        next_mono_second();
        for (1 .. 8) {
            get('/relay1/x', uid('noauth'), %v1);
            $log = error_log_since($m);
            last SECOND if $log =~ /circuit_open error/;
        }
    }
    like($log, qr/RLAAS0040: circuit opened .*last: server: NOAUTH/, 'RLAAS0040 names the cause: NOAUTH');
    like($log, qr/RLAAS0021: Redis circuit_open error: .*the last: NOAUTH/,
        'requests refused while it is open: the log line names NOAUTH too');
    $B->cmd('CONFIG', 'SET', 'requirepass', '');
    my $ok;
    # (10 s: a probe that failed late re-arms a child's 3 s cool-down)
    for (1 .. 100) { $ok = status(get('/relay1/x', uid('noauth-after'), %v1)); last if $ok eq '200 allowed'; sleep 0.1 }
    is($ok, '200 allowed', 'password removed: allowed again once the cool-down is over');
}

# ================================================================ out of memory
{
    my $m = log_mark($ELOG);
    my $before = series('rlaas_redis_errors_total{kind="server"}');
    $B->cmd('CONFIG', 'SET', 'maxmemory', '1');
    my $u = uid('oom');
    next_mono_second();    # a fresh second of the log gate
    is(status(get('/relay/x', $u)), '500 error', 'Redis out of memory, fail closed: 500');
    is(status(get('/relay/open/x', $u)), '200 fail_open', 'fail open: allowed, fail_open');
    $B->cmd('CONFIG', 'SET', 'maxmemory', '0');
    cmp_ok(series('rlaas_redis_errors_total{kind="server"}') - $before, '>=', 2,
        'counted as rlaas_redis_errors_total{kind="server"}');
    like(log_since($ELOG, $m), qr/RLAAS0021: Redis server error: OOM command not allowed/, 'the log says OOM');
    sleep 0.35;    # any circuit this opened has cooled down
    my $ok;
    for (1 .. 20) { $ok = status(get('/relay/x', $u)); last if $ok eq '200 allowed'; sleep 0.1 }
    is($ok, '200 allowed', 'memory back: allowed again');
}

# ================================================================ gauges
# Connections are counted per child; a child killed with connections open
# takes its share with it (other tests leave connections to servers they
# stopped, which only the module still counts: compare what changes).
{
    my $tid = uid('gauge');
    my $u = uid('gauge-u');
    req('/relay/x', vhost => $VH, h => { 'X-User' => $u, 'X-Test-Id' => $tid });
    my ($l) = wait_sig_log($tid, 1);
    my $pid = $l && $l->{pid};
    ok($pid && kill(0, $pid), 'the child that served it (' . ($pid // '?') . ')');
    forget_connections();
    my @servers = grep { defined } ($A, $B, redis(),
        ($ENV{RLAAS_TEST_REDIS_AUTH_PORT} ? RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_REDIS_AUTH_PORT},
            password => $ENV{RLAAS_TEST_REDIS_AUTH_PASSWORD}) : ()));
    my $held = 0;
    $held += mod_conns($_, $pid) for @servers;
    cmp_ok($held, '>=', 1, "child $pid holds $held connection(s)");
    kill 'KILL', $pid if $pid;
    # httpd starts a child in its place, which opens its own connections
    # at once (one to each Redis): the gauge is read against the children
    # the console lists, the killed one no longer among them
    my ($g, $sum, @kids);
    my $ok = wait_for(sub {
        $g = series('rlaas_redis_connections');
        my $res = req('/adm/console', auth => ['carol', 'carol-pw'], h => { Accept => 'application/json' });
        return 0 unless $res->code == 200;
        my $c = JSON::PP::decode_json($res->content)->{children} || [];
        @kids = map { $_->{pid} } @$c;
        $sum = 0;
        $sum += $_->{redis_connections} for @$c;
        !grep({ $_ == $pid } @kids) && $sum == $g && series('rlaas_redis_connections') == $g;
    }, 5, 0.1);
    ok($ok, "rlaas_redis_connections ($g) is the live children's (@kids: $sum), "
        . "without the killed child's $held");
}

$relay->stop;
done_testing();
