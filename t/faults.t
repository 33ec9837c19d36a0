# Redis faults under load: 8 concurrent clients (4 on a fail-closed, 4 on a
# fail-open Location) while Redis is (a) down since start-up, (d) refusing
# AUTH, (c) stalled beyond RLaaSRedisTimeout (DEBUG SLEEP, CLIENT PAUSE),
# (b) killed and restarted (NOSCRIPT), (e) missing the configured database.
# Every time: no crash, the policy holds (fail closed: 200 allowed or 500
# error; fail open: 200 allowed or fail_open), no request takes longer than
# RLaaSRedisTimeout (100ms) + 700ms on the server (a loaded machine's
# margin; the stalls are 1s, so a request that waited one out exceeds it),
# and service is back to normal by itself within about a second of Redis
# coming back.
#
# The Redis here is the test's own, on RLAAS_TEST_REDIS_SPARE_PORT, where
# nothing listens when httpd starts.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use IO::Socket::INET ();
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $PORT = $ENV{RLAAS_TEST_REDIS_SPARE_PORT};
my $PW = $ENV{RLAAS_TEST_REDIS_SPARE_PASSWORD};
plan skip_all => 'RLAAS_TEST_REDIS_SPARE_PORT is not set (t/TEST.PL)' unless $PORT && $PW;

my $TIMEOUT_MS = 100;    # RLaaSRedisTimeout of the vhosts below
my $MARGIN_MS = 700;    # under the 1s stalls: a request that ignored its budget exceeds it
my $em = error_log_mark();
my $redis;
END { $? = 0 if defined $? && $? == -1 }

sub err { qq{rlaas_redis_errors_total{kind="$_[0]"}} }

# load(NAME, vhost => V, closed => PATH, open => PATH, duration => S,
#      faults => [[OFFSET, CODE], ...]): 4 + 4 clients on new connections,
# the faults run by this process at their offsets from the start.
sub load {
    my ($name, %o) = @_;
    my $u = uid('f-load');
    my $tag = uid('f-tid');
    my $t0 = time + 0.3;
    my $end = $t0 + $o{duration};
    my %step = (vhost => $o{vhost}, h => { 'X-User' => $u }, at => $t0, until => $end, gap => 0.01,
                # a client started late on a loaded machine still asks once
                min => 1);
    my $h = start_clients(tag => $tag, keepalive => 0, clients => [
        (map { [{ %step, path => $o{closed} }] } 1 .. 4),
        (map { [{ %step, path => $o{open} }] } 1 .. 4),
    ]);
    for my $f (@{ $o{faults} || [] }) {
        my $d = $t0 + $f->[0] - time;
        sleep $d if $d > 0;
        $f->[1]->();
    }
    my @r = wait_clients($h);
    my @l = wait_sig_log($tag, scalar(@r), 5);
    my %srv = map { $_->{id} => $_ } @l;
    $_->{srv} = $srv{ $_->{id} } for @r;
    return @r;
}

# The policy holds for every response of a load; the fault was felt.
sub policy_holds {
    my ($name, @r) = @_;
    my @closed = grep { $_->{client} < 4 } @r;
    my @open = grep { $_->{client} >= 4 } @r;
    my @bad_c = grep { !(($_->{code} == 200 && ($_->{status} // '') eq 'allowed')
                      || ($_->{code} == 500 && ($_->{status} // '') eq 'error')) } @closed;
    my @bad_o = grep { !($_->{code} == 200 && ($_->{status} // '') =~ /^(?:allowed|fail_open)$/) } @open;
    ok(@closed >= 4 && @open >= 4, "$name: load of " . scalar(@r) . ' requests');
    is(scalar(@bad_c), 0, "$name, RLaaSFailOpen off: only 200 (allowed) or 500 (error) - "
        . count_by(map { "$_->{code}/" . ($_->{status} // '-') } @closed));
    is(scalar(@bad_o), 0, "$name, RLaaSFailOpen on: only 200 (allowed or fail_open) - "
        . count_by(map { "$_->{code}/" . ($_->{status} // '-') } @open));
    my $felt = (grep { $_->{code} == 500 } @closed) + (grep { ($_->{status} // '') eq 'fail_open' } @open);
    ok($felt, "$name: the fault was felt ($felt 500s and fail_opens)");
    my @srv = grep { defined } map { $_->{srv} } @r;
    is(scalar(@srv), scalar(@r), "$name: every request is in the server's log");
    my $max = (sort { $b <=> $a } map { $_->{us} } @srv)[0] // 0;
    cmp_ok($max / 1000, '<=', $TIMEOUT_MS + $MARGIN_MS,
        sprintf('%s: no request took longer than the timeout + %dms on the server (max %.0fms)',
                $name, $MARGIN_MS, $max / 1000));
    # at the client this includes the clients' own scheduling on a shared
    # machine: reported, not asserted
    my $cmax = (sort { $b <=> $a } map { $_->{dt} } @r)[0] // 0;
    note(sprintf '%s: slowest answer at the client %.0fms', $name, $cmax * 1000);
}

# Back to normal: rounds of 4 requests on new connections to the fail-closed
# Location, 100ms apart, until all are allowed; at most 2s.
sub recovers {
    my ($name, $vhost, $path, $since) = @_;
    my $u = uid('f-rec');
    my $ok = wait_for(sub {
        my @r = map { req_close($path, vhost => $vhost, h => { 'X-User' => $u }) } 1 .. 4;
        !grep { $_->code != 200 || (status_of($_) // '') ne 'allowed' } @r;
    }, 2, 0.1);
    ok($ok, sprintf('%s: back to normal within %.2fs (polled every 100ms, at most 2s)', $name, time - $since));
}

# Back to normal during the load: every request that began more than
# LIMIT s after Redis came back was allowed, and the load went on for a
# while after the last one that was not.
sub recovered_under_load {
    my ($name, $since, @r) = @_;
    my $limit = 1.2;
    my @after = grep { $_->{t0} >= $since } @r;
    my @bad = grep { ($_->{status} // '') ne 'allowed' } @after;
    my ($last) = sort { $b <=> $a } map { $_->{t0} } @bad;
    $last //= $since;
    my $good = grep { $_->{t0} > $last } @after;
    SKIP: {
        # too little load after the last failure to tell (a busy machine, or
        # recovery near the end of the load): the poll after the load decides
        skip "$name: too few requests after Redis came back (" . scalar(@after) . ", $good after the last failure)", 1
            if @after < 10 || $good < 5;
        ok($last - $since <= $limit,
            sprintf('%s: under load, back to normal %.2fs after Redis came back (%d requests after that, all allowed)',
                    $name, $last - $since, $good));
    }
}

sub no_crash {
    my $name = shift;
    my @c = crashes_since($em);
    is_deeply(\@c, [], "$name: no child crashed");
}

# A command sent on a connection of its own, its reply not awaited
# (DEBUG SLEEP blocks the whole server, this process's client included).
sub send_raw {
    my @cmd = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $PORT, Proto => 'tcp')
        or die "connect to the spare Redis: $!";
    $s->autoflush(1);
    print $s '*' . @cmd . "\r\n" . join('', map { '$' . length($_) . "\r\n$_\r\n" } @cmd);
    return $s;
}

my %F = (vhost => 'rlaas_f_main', closed => '/hd/f/x', open => '/hd/f/open/x');

# ---------------------------------------------------------------- (a) down at start-up
{
    my $m0 = metrics();
    my @r = load('(a) Redis down since start-up', %F, duration => 0.8);
    policy_holds('(a) Redis down since start-up', @r);
    is(scalar(grep { ($_->{status} // '') eq 'allowed' } @r), 0, '(a): nothing could be decided');
    cmp_ok(mdelta($m0, metrics(), err('connect')), '>', 0, '(a): counted as connect errors');
    $redis = spare_redis($PORT);
    ok($redis->pid, "(a): Redis started on port $PORT");
    recovers('(a) Redis up for the first time', $F{vhost}, $F{closed}, time);
    no_crash('(a)');
}

# ---------------------------------------------------------------- (d) AUTH refused
{
    my $acl = sub { $redis->cmd('ACL', 'SETUSER', 'rlaas-fault', 'on', ">$PW", '~*', '&*', '+@all') };
    is($acl->(), 'OK', '(d): ACL user rlaas-fault created');
    my %A = (vhost => 'rlaas_f_auth', closed => '/hd/fa/x', open => '/hd/fa/open/x');
    is(hit($A{closed}, vhost => $A{vhost}, h => { 'X-User' => uid('fa') }), 200,
        '(d): RLaaSRedisUsername/RLaaSRedisPassword: allowed');
    my $m0 = metrics();
    my $back;
    my @r = load('(d) AUTH refused', %A, duration => 1.6, faults => [
        # deleting the user closes its connections; new ones fail AUTH
        [0.25, sub { $redis->cmd('ACL', 'DELUSER', 'rlaas-fault') }],
        [0.7, sub { $acl->(); $back = time }],
    ]);
    policy_holds('(d) AUTH refused', @r);
    recovered_under_load('(d) AUTH accepted again', $back, @r);
    cmp_ok(mdelta($m0, metrics(), err('auth')), '>', 0, '(d): counted as auth errors');
    recovers('(d) after the load', $A{vhost}, $A{closed}, time);
    no_crash('(d)');
}

# ---------------------------------------------------------------- (c) stalled
# DEBUG SLEEP on the vhost with the default circuit breaker; CLIENT PAUSE on
# one with RLaaSRedisPoolMax 1 and no breaker, where requests also wait for
# the one pooled connection
# the same, with RLaaSRedisPipeline off: there requests wait for the pool's
# connection itself
my %P = (vhost => 'rlaas_f_pool', closed => '/hd/fp/x', open => '/hd/fp/open/x', exact => '/hd/fp/exact/x');
my %P2 = (vhost => 'rlaas_f_pool2', closed => '/hd/fp2/x', open => '/hd/fp2/open/x', exact => '/hd/fp2/exact/x');
for my $c (['DEBUG SLEEP 1', \%F, sub { send_raw('DEBUG', 'SLEEP', '1') }],
           ['CLIENT PAUSE 1000 ALL (RLaaSRedisPoolMax 1, no circuit breaker)', \%P,
            sub { $redis->pause_ms(1000); undef }],
           ['CLIENT PAUSE 1000 ALL (RLaaSRedisPoolMax 1, RLaaSRedisPipeline off, no circuit breaker)', \%P2,
            sub { $redis->pause_ms(1000); undef }]) {
    my ($how, $v, $do) = @$c;
    my $name = "(c) Redis stalled by $how";
    my $m0 = metrics();
    my ($sock, $back);
    my @r = load($name, %$v, duration => 2.0, faults => [
        [0.3, sub { $sock = $do->(); $back = time + 1.0 }],
    ]);
    policy_holds($name, @r);
    recovered_under_load($name, $back, @r);
    my $m1 = metrics();
    cmp_ok(mdelta($m0, $m1, err('timeout')), '>', 0, "$name: counted as timeouts");
    recovers("$name, after the load", $v->{vhost}, $v->{closed}, time);
    close $sock if $sock;
    my $u = uid('f-stall-exact');
    is(join(' ', codes(4, $v->{exact} // '/hd/f/exact/x', vhost => $v->{vhost}, h => { 'X-User' => $u })),
        '200 200 200 429', "$name: afterwards counting is exact (limit 3): no stale reply is read");
    no_crash($name);
}

# ---------------------------------------------------------------- (b) killed, restarted
{
    my $name = '(b) Redis killed mid-load and restarted';
    my $m0 = metrics();
    my $back;
    my @r = load($name, %F, duration => 1.7, faults => [
        [0.3, sub { kill 'KILL', $redis->pid }],
        [0.6, sub { $redis->start_again; $back = time }],
    ]);
    policy_holds($name, @r);
    recovered_under_load($name, $back, @r);
    recovers("$name, after the load", $F{vhost}, $F{closed}, time);
    my $m1 = metrics();
    cmp_ok(mdelta($m0, $m1, err('io')) + mdelta($m0, $m1, err('connect')), '>', 0,
        "$name: counted as io/connect errors");
    cmp_ok(mdelta($m0, $m1, 'rlaas_redis_script_loads_total'), '>', 0,
        "$name: NOSCRIPT after the fresh start: the script was loaded again");
    my $u = uid('f-exact');
    is(join(' ', codes(4, '/hd/f/exact/x', vhost => $F{vhost}, h => { 'X-User' => $u })), '200 200 200 429',
        "$name: decisions are exact again (sliding log, limit 3)");
    is(join(' ', codes(4, '/hd/f/exact/token/x', vhost => $F{vhost}, h => { 'X-User' => $u })), '200 200 200 429',
        "$name: and for a strategy first used after the restart (token, limit 3)");
    no_crash($name);
}

# ---------------------------------------------------------------- SCRIPT FLUSH
{
    my $m0 = metrics();
    is($redis->cmd('SCRIPT', 'FLUSH'), 'OK', 'SCRIPT FLUSH');
    my $u = uid('f-flush');
    my @r = map { req($F{closed}, vhost => $F{vhost}, h => { 'X-User' => $u }) } 1 .. 3;
    is(join(' ', map { $_->code . '/' . (status_of($_) // '-') } @r), '200/allowed 200/allowed 200/allowed',
        'after SCRIPT FLUSH: NOSCRIPT is handled, requests are decided (not 500)');
    my $m1 = metrics();
    is(mdelta($m0, $m1, 'rlaas_redis_script_loads_total'), 1, 'after SCRIPT FLUSH: one SCRIPT LOAD');
    is(mdelta($m0, $m1, err('reply')), 0, 'after SCRIPT FLUSH: no reply error counted');
}

# ---------------------------------------------------------------- (e) no such database
{
    my %D = (vhost => 'rlaas_f_db', closed => '/hd/fd/x', open => '/hd/fd/open/x');
    my $name = '(e) RLaaSRedisDatabase 99 on a Redis with 16 databases';
    my $m0 = metrics();
    my @r = load($name, %D, duration => 0.8);
    policy_holds($name, @r);
    is(scalar(grep { ($_->{status} // '') eq 'allowed' } @r), 0, '(e): nothing could be decided');
    cmp_ok(mdelta($m0, metrics(), err('select')), '>', 0, '(e): counted as select errors');
    local $ENV{RLAAS_SPARE_REDIS_EXTRA} = '--databases 128';
    $redis->start_again;
    my $back = time;
    recovers('(e) Redis restarted with 128 databases', $D{vhost}, $D{closed}, $back);
    my $u = uid('f-db');
    # under prefork the request may meet a child whose circuit is still in
    # its cool-down: until one decides it
    for (1 .. 40) {
        last if (status_of(req($D{closed}, vhost => $D{vhost}, h => { 'X-User' => $u })) // '') eq 'allowed';
        sleep 0.05;
    }
    is($redis->cmd('SELECT', 99), 'OK', '(e): database 99 exists now');
    is($redis->cmd('ZCARD', ukey('hd-fd', $u)), 1, '(e): the key is in database 99');
    $redis->cmd('SELECT', 0);
    no_crash($name);
}

# ---------------------------------------------------------------- secrets
{
    opendir my $dh, t_logs() or die "t/logs: $!";
    my @leaks;
    for my $f (grep { -f catfile(t_logs(), $_) } readdir $dh) {
        open my $fh, '<', catfile(t_logs(), $f) or next;
        local $/;
        my $text = <$fh> // '';
        push @leaks, $f if index($text, $PW) >= 0;
    }
    is_deeply(\@leaks, [], 'the ACL password never appears in a log');
}

$redis->stop if $redis;
done_testing();
