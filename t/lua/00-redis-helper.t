# The test helper itself: start/stop/start_again/attach/pause, RESP replies.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time);
use POSIX ();
use RLaaS::Redis;

my $r = RLaaS::Redis->start(unixsocket => 1, requirepass => 'pw');
ok $r->port > 0, 'port chosen';
is $r->host, '127.0.0.1', 'host';
ok -S $r->socket_path, 'unix socket exists';
ok $r->pid && kill(0, $r->pid), 'pid alive';
ok -d $r->dir && -s $r->dir . '/rlaas-redis.args', 'args file in dir';

is $r->cmd('PING'), 'PONG', 'status reply';
is $r->cmd('SET', 'a', "x\r\ny"), 'OK', 'SET binary-ish value';
is $r->cmd('GET', 'a'), "x\r\ny", 'bulk reply';
is $r->cmd('GET', 'nope'), undef, 'nil bulk';
is $r->cmd('INCRBY', 'n', 41), 41, 'integer reply';
is $r->cmd('SET', 'e', ''), 'OK', 'empty value';
is $r->cmd('GET', 'e'), '', 'empty bulk';
my $err = $r->cmd('INCR', 'a');
ok RLaaS::Redis::is_error($err), 'error reply is an object';
like $err->message, qr/not an integer/, 'error message';
like "$err", qr/^ERR/, 'stringifies to the message';
is_deeply $r->cmd('EVAL', "return {1, {2, 'x', {}}, redis.status_reply('OK')}", 0),
    [1, [2, 'x', []], 'OK'], 'nested arrays';
like $r->cmd('EVAL', 'return redis.error_reply("boom")', 0)->message, qr/boom/,
    'script error reply';

my $bad = RLaaS::Redis->attach(port => $r->port, password => 'wrong');
ok !eval { $bad->cmd('PING'); 1 }, 'wrong password dies';
my $noauth = RLaaS::Redis->attach(port => $r->port);
like $noauth->cmd('GET', 'a')->message, qr/NOAUTH/, 'no password: error reply';

my $sock = RLaaS::Redis->attach(socket_path => $r->socket_path, password => 'pw');
is $sock->cmd('GET', 'n'), 41, 'unix socket client';

# attach by dir: everything else comes from the args file
my $att = RLaaS::Redis->attach(dir => $r->dir);
is $att->port, $r->port, 'attach reads port';
is $att->cmd('GET', 'n'), 41, 'attach reads password';

{
    local @ENV{qw(RLAAS_TEST_REDIS_PORT RLAAS_TEST_REDIS_PIDFILE RLAAS_TEST_REDIS_DIR)}
        = ($r->port, $r->pidfile, $r->dir);
    my $env = RLaaS::Redis->from_env;
    is $env->pid, $r->pid, 'from_env: pid from pidfile';
    is $env->cmd('GET', 'n'), 41, 'from_env works';
    undef $env;
    is $r->cmd('PING'), 'PONG', 'an attached object does not stop the server';
}
{
    local $ENV{RLAAS_TEST_REDIS_PORT};
    is(RLaaS::Redis->from_env, undef, 'from_env without env: undef');
}

# stop / start_again on the same port, transparent reconnect
my $port = $r->port;
my $old = $r->pid;
$r->stop;
ok !kill(0, $old), 'stopped: process gone';
ok !eval { $r->cmd('PING'); 1 }, 'cmd dies while down';
ok $r->stop, 'stop is idempotent';
$r->start_again;
is $r->port, $port, 'same port after start_again';
is $r->cmd('GET', 'n'), undef, 'fresh data (no persistence)';
is $att->cmd('PING'), 'PONG', 'other clients reconnect transparently';
is $sock->cmd('PING'), 'PONG', 'unix socket reconnects';

# an attached object restarts it too
my $pid2 = $r->pid;
$att->start_again;
isnt $att->pid, $pid2, 'attached start_again: new process';
is $r->cmd('PING'), 'PONG', 'owner reconnects';
$att->stop;
ok !defined $r->pid, 'owner sees it down';
$r->start_again;

# kill -9 and restart: the old connection is dead, cmd must not notice
kill 'KILL', $r->pid;
select undef, undef, undef, 0.2;
$att->start_again;
is $r->cmd('PING'), 'PONG', 'reconnect after kill -9 and restart';

# Stopped by another process while we (its parent) do not reap it: the
# zombie must count as stopped, fast.
{
    my $t = time;
    my $kid = fork;
    if (!$kid) {
        my $ok = eval { RLaaS::Redis->attach(dir => $r->dir)->stop; 1 };
        POSIX::_exit($ok ? 0 : 1);
    }
    waitpid $kid, 0;
    is $?, 0, 'another process stopped our child server';
    ok time - $t < 4, 'without waiting for it to be reaped';
    ok !defined $r->pid, 'gone';
    $r->start_again;
}

# A test that dies by a signal leaves no server behind (watchdog).
{
    my $kid = fork;
    if (!$kid) {
        my $x = RLaaS::Redis->start;
        open my $fh, '>', $r->dir . '/kid.pid';
        print $fh $x->pid;
        close $fh;
        kill 'KILL', $$;
    }
    waitpid $kid, 0;
    open my $fh, '<', $r->dir . '/kid.pid';
    my $spid = <$fh>;
    my $gone = 0;
    for (1 .. 500) {
        $gone = !RLaaS::Redis::_alive($spid) and last;
        select undef, undef, undef, 0.01;
    }
    ok $gone, "server of a SIGKILLed test is stopped by its watchdog ($spid)";
}

# pause
my $other = RLaaS::Redis->attach(dir => $r->dir);
$other->cmd('PING');
$r->pause_ms(400);
my $t0 = time;
$other->cmd('SET', 'p', 1);
my $dt = time - $t0;
ok $dt >= 0.3, "CLIENT PAUSE stalls other clients ($dt s)";

# ACL user
my $acl = RLaaS::Redis->start(acl_user => ['app', 's3cret']);
is $acl->cmd('ACL', 'WHOAMI'), 'app', 'authenticated as the ACL user';
my $acl_pid = $acl->pid;

# DESTROY in a forked child must not stop the parent's server
my $kid = fork;
if (!$kid) { undef $acl; POSIX::_exit(0) }
waitpid $kid, 0;
is $acl->cmd('PING'), 'PONG', 'child exit leaves the server up';
undef $acl;
ok !kill(0, $acl_pid), 'DESTROY stops an owned server';

# an explicit dir and port
my $dir = $r->dir . '/sub';
my $fixed = RLaaS::Redis->start(dir => $dir, port => RLaaS::Redis::_free_port());
is $fixed->dir, $dir, 'explicit dir';
ok -e "$dir/redis.pid", 'pidfile in dir';
$fixed->stop;

$r->stop;
done_testing;
