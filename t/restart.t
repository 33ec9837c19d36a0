# Graceful restarts under load: `ab -c 8` (no keep-alive) on a limited
# Location with RLaaSFailOpen off while httpd is restarted gracefully
# (SIGUSR1) twice: no failed request, no 500, no crash, the limit exact
# across the restarts; afterwards the Redis connections Redis sees are the
# module's rlaas_redis_connections gauge, each of a live child (the old
# children's connections were closed). Then a graceful stop
# (SIGWINCH) under load and a fresh start with the same command line.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use POSIX ();
use File::Temp qw(tempfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
chomp(my $ab = `command -v ab 2>/dev/null` || '');
plan skip_all => 'ab (apache2-utils) is not installed' unless $ab;
require RLaaS::Redis;

my $port = do { require Apache::Test; Apache::Test::config()->{vars}{port} };

my $main = RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_REDIS_PORT});
my $auth = RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_REDIS_AUTH_PORT},
                                password => $ENV{RLAAS_TEST_REDIS_AUTH_PASSWORD});
# the Redis behind the TLS port, by its plain port: every child opens a
# connection to each Redis its hosts use as it starts
my $tls = $ENV{RLAAS_TEST_TLS_PLAIN_PORT}
    ? RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_TLS_PLAIN_PORT}) : undef;
my @REDIS = grep { defined } $main, $auth, $tls;
$_->cmd('CLIENT', 'SETNAME', 'rlaas-test-restart') for @REDIS;
sub all_conns { my $n = 0; $n += httpd_conns($_) for @REDIS; $n }

# httpd's connections to a Redis: CLIENT LIST without this test's own
sub httpd_conns {
    my $l = $_[0]->cmd('CLIENT', 'LIST');
    # (the suite's Redis keeper holds a connection whose last command was
    # its PING; the module never sends PING)
    return scalar grep { !/\bname=rlaas-test/ && !/\bcmd=ping\b/ } grep { /\S/ } split /\n/, $l;
}

sub child_pids {
    my $pid = httpd_pid();
    return grep { /\d/ } split ' ', `ps --ppid $pid -o pid= 2>/dev/null`;
}
sub children { scalar(my @c = child_pids()) }

# the children named by httpd's connections (name=mod_rlaas-PID)
sub conn_pids {
    my %p;
    for my $r (@REDIS) {
        $p{$1} = 1 for $r->cmd('CLIENT', 'LIST') =~ /\bname=mod_rlaas-(\d+)\b/g;
    }
    return sort keys %p;
}

# ab in the background for at most SECS; returns a sub that interrupts it
# (SIGINT: ab stops and prints its results) and returns its output
sub ab_bg {
    my ($secs, $path, @h) = @_;
    my ($fh, $out) = tempfile('rlaas-ab-XXXXXX', TMPDIR => 1, UNLINK => 1);
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open STDOUT, '>', $out;
        open STDERR, '>&', \*STDOUT;
        { exec $ab, '-q', '-t', $secs, '-n', 100000, '-c', 8, (map { ('-H', $_) } @h),
              "http://127.0.0.1:$port$path" }
        POSIX::_exit(127);
    }
    return sub {
        local $?;
        kill 'INT', $pid;
        waitpid $pid, 0;
        my $rc = $? >> 8;
        open my $in, '<', $out or return ($rc, '');
        local $/;
        return ($rc, scalar <$in>);
    };
}

my $em = error_log_mark();

# ---------------------------------------------------------------- two graceful restarts
{
    my $u = uid('rs');
    my $tag = uid('rs-tid');
    my $gen0 = server_generation();
    my $t0 = time;
    my $stop = ab_bg(60, '/hd/restart', "X-User: $u", "X-Test-Id: $tag");
    sleep 0.8;
    my $g1 = graceful_restart();
    sleep 0.7;
    my $g2 = graceful_restart();
    sleep 0.5;
    my $t_restarts = time - $t0;
    my ($rc, $out) = $stop->();
    ok($g1 > $gen0 && $g2 > $g1, sprintf('two graceful restarts during the load (generations %d, %d, %d; '
        . 'the load ran %.1fs)', $gen0, $g1, $g2, $t_restarts));
    my ($done) = $out =~ /^Complete requests:\s+(\d+)/m;
    ok(defined $done, 'ab reported its results') or diag($out);
    my ($conn, $recv, $exc) = $out =~ /\(Connect: (\d+), Receive: (\d+), Length: \d+, Exceptions: (\d+)\)/;
    cmp_ok($done // 0, '>', 400, 'ab completed ' . ($done // 0) . ' requests');
    is(($conn // 0) + ($recv // 0) + ($exc // 0), 0, 'no request failed (connect, receive, exceptions)');
    my @l = wait_sig_log($tag, $done // 1, 10);
    # ab stops at its time limit with up to 8 requests in flight, which
    # the server still answers and logs
    ok(@l >= $done && @l <= $done + 8, "every request is in the server's log (" . scalar(@l) . ')');
    is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } @l),
        "200/allowed x400 429/denied x" . (@l - 400),
        'only 200 and 429, no 500: exactly 400 allowed (the limit) across the restarts');
    my %pids = map { $_->{pid} => 1 } @l;
    cmp_ok(scalar(keys %pids), '>=', 2, 'old and new children served (' . scalar(keys %pids) . ' processes)');
    my @crash = crashes_since($em);
    is_deeply(\@crash, [], 'no child crashed (no "exit signal" in the error log)');

    # settle: the old generations' children are gone, their connections
    # closed; read until Redis, the gauge and server-status agree (prefork
    # also stops spare children after a load, closing their connections)
    my ($gauge, $conns, $st, $kids);
    my $ok = wait_for(sub {
        $gauge = metrics()->{rlaas_redis_connections};
        $conns = all_conns();
        $st = status_auto()->{RLaaSRedisConnections};
        $kids = children();
        $gauge == $conns && $st == $gauge && metrics()->{rlaas_redis_connections} == $gauge;
    }, 10, 0.2);
    ok($ok, "Redis sees as many httpd connections ($conns) as rlaas_redis_connections "
        . "($gauge) and server-status ($st) say") or diag($main->cmd('CLIENT', 'LIST'));
    # (read again while prefork reaps a spare child between the two lists)
    my @stale;
    wait_for(sub {
        my @c = conn_pids();
        my %live = map { $_ => 1 } child_pids();
        @stale = grep { !$live{$_} } @c;
        !@stale;
    }, 5, 0.2);
    is("@stale", '', "every connection to Redis is a live child's ($kids children): the old children's were closed");
    my $v = uid('rs-after');
    is(join(' ', map { req_close('/rl/basic/x', h => { 'X-User' => $v })->code } 1 .. 3), '200 200 200',
        'after the restarts limiting goes on');
}

# ---------------------------------------------------------------- graceful stop, start
SKIP: {
    my $ppid = httpd_pid();
    open my $cf, '<', "/proc/$ppid/cmdline" or skip "no /proc/$ppid/cmdline", 10;
    my @cmd = split /\0/, do { local $/; <$cf> };
    open my $ef, '<', "/proc/$ppid/environ" or skip "no /proc/$ppid/environ", 10;
    my %env = map { split /=/, $_, 2 } grep { /=/ } split /\0/, do { local $/; <$ef> };
    forget_connections();    # a kept-alive connection would hold a child
    my $m = error_log_mark();
    my $u = uid('rs-stop');
    my $tag = uid('rs-stop-tid');
    # (the load goes on 1.5 s past the stop: a listener left open still
    # answers requests well after the margin below)
    my $t0 = time + 0.3;
    my $h = start_clients(tag => $tag, keepalive => 0, clients => [ map { [
        { path => '/hd/restart/x', h => { 'X-User' => $u }, at => $t0, until => $t0 + 2.0, gap => 0.01 },
    ] } 1 .. 6 ]);
    sleep $t0 + 0.5 - time if $t0 + 0.5 > time;    # never negative (dies)
    my $t_stop = time;
    ok(kill('WINCH', $ppid), "graceful stop (SIGWINCH to $ppid) under load");
    my $gone = wait_for(sub { !kill 0, $ppid }, 20, 0.05);
    ok($gone, sprintf('the old server finished its requests and exited (%.1fs)', time - $t_stop));
    my @r = wait_clients($h);
    my %codes;
    $codes{ $_->{code} == 599 ? "599 ($_->{ratelimit})" : $_->{code} }++ for @r;
    my @bad = grep { $_->{code} != 200 && $_->{code} != 429 && $_->{code} != 599 } @r;
    is(scalar(@bad), 0, 'under load across the graceful stop: only 200 or 429 answers, no 500 ('
        . join(', ', map { "$_ x$codes{$_}" } sort keys %codes) . ')');
    my @before = grep { $_->{t1} < $t_stop && $_->{code} != 599 } @r;
    ok(@before > 10, scalar(@before) . ' requests answered before the stop');
    # a child still holding the listener accepts until it has noticed the
    # stop: a loaded machine's margin
    my @after = grep { $_->{t0} > $t_stop + 0.3 && $_->{code} != 599 } @r;
    is(scalar(@after), 0, 'none after it (the listener is closed)');

    # the same command line and environment: a fresh server (new counters)
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        %ENV = %env;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', '/dev/null';
        { exec @cmd }
        POSIX::_exit(127);
    }
    waitpid $pid, 0;
    is($? >> 8, 0, 'started again with the same command line');
    my $up = wait_for(sub { my $r = eval { req_close('/server-status?auto') }; $r && $r->code == 200 }, 15, 0.1);
    ok($up, 'the new server answers');
    my @r2 = run_clients(tag => uid('rs-new-tid'), keepalive => 0, clients => [ map { [
        { path => '/hd/restart/x', h => { 'X-User' => uid('rs-new') }, n => 10, gap => 0.01 },
    ] } 1 .. 6 ]);
    is(count_by(map { $_->{code} } @r2), '200 x60', 'under load on the new server: all allowed');
    my ($gauge, $conns);
    my $ok = wait_for(sub {
        $gauge = metrics()->{rlaas_redis_connections};
        $conns = all_conns();
        $gauge == $conns;
    }, 10, 0.2);
    ok($ok && $gauge > 0, "Redis sees exactly the new server's connections ($conns, gauge $gauge): "
        . 'none is left from the old one');
    my @crash = crashes_since($m);
    is_deeply(\@crash, [], 'no crash during the graceful stop');
    my $v = uid('rs-new');
    is(join(' ', map { req_close('/rl/basic/x', h => { 'X-User' => $v })->code } 1 .. 4), '200 200 200 429',
        'the new server limits (limit 3)');
}

done_testing();
