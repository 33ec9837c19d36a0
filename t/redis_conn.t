# Reaching Redis: AUTH with a password, AUTH with an ACL user name, wrong or
# missing credentials (fail closed / fail open), SELECT of
# RLaaSRedisDatabase, and a unix socket.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
require RLaaS::Redis;

my $authsrv = RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_REDIS_AUTH_PORT},
                                   password => $ENV{RLAAS_TEST_REDIS_AUTH_PASSWORD});
sub in_auth { $authsrv->cmd('EXISTS', $_[0]) }

# ---------------------------------------------------------------- requirepass
{
    my $u = uid('auth');
    my @c = codes(3, '/rl/auth/x', vhost => 'rlaas_auth', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'RLaaSRedisPassword: AUTH succeeds, limit 2 enforced');
    ok(in_auth(ukey('auth', $u)), 'the key is in the password-protected Redis');
    ok(!redis_cmd('EXISTS', ukey('auth', $u)), 'and not in the main Redis');
}

# ---------------------------------------------------------------- ACL user
{
    my $u = uid('acl');
    my @c = codes(3, '/rl/acl/x', vhost => 'rlaas_acl', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'RLaaSRedisUsername + RLaaSRedisPassword: AUTH <user> <pw> succeeds');
    ok(in_auth(ukey('acl', $u)), 'the key is in the Redis with the ACL user');
    my $clients = $authsrv->cmd('CLIENT', 'LIST');
    like(ref $clients ? '' : $clients, qr/\buser=\Q$ENV{RLAAS_TEST_REDIS_ACL_USER}\E\b/,
        'httpd is connected as the ACL user');
}

# ---------------------------------------------------------------- bad credentials
{
    my $u = uid('bad');
    my @r = map { req('/rl/bad/x', vhost => 'rlaas_badauth', h => { 'X-User' => $u }) } 1 .. 2;
    is(join(' ', map { $_->code } @r), '500 500', 'wrong RLaaSRedisPassword, RLaaSFailOpen off: 500');
    is(status_of($r[0]), 'error', 'wrong password: RLAAS_STATUS=error');
    my @o = map { req('/rl/bad-open/x', vhost => 'rlaas_badauth', h => { 'X-User' => $u }) } 1 .. 3;
    is(join(' ', map { $_->code } @o), '200 200 200', 'wrong password, RLaaSFailOpen on: allowed (limit 2 not enforced)');
    is(status_of($o[0]), 'fail_open', 'wrong password, fail open: RLAAS_STATUS=fail_open');
    ok(!in_auth(ukey('badauth', $u)), 'nothing was written with a wrong password');

    my $n = req('/rl/noauth/x', vhost => 'rlaas_noauth', h => { 'X-User' => $u });
    is($n->code, 500, 'no password for a password-protected Redis (NOAUTH): 500');
    is(status_of($n), 'error', 'NOAUTH: RLAAS_STATUS=error');
}

# ---------------------------------------------------------------- SELECT
{
    my $u = uid('db');
    my @c = codes(3, '/rl/db/x', vhost => 'rlaas_db', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'RLaaSRedisDatabase 3: limiting works');
    my $db3 = RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_REDIS_PORT});
    is($db3->cmd('SELECT', 3), 'OK', 'SELECT 3 in the test client');
    is($db3->cmd('ZCARD', ukey('db3', $u)), 2, 'RLaaSRedisDatabase 3: the key is in database 3');
    ok(!redis_cmd('EXISTS', ukey('db3', $u)), 'RLaaSRedisDatabase 3: not in database 0');
    my $u2 = uid('db0');
    is(hit('/rl/basic/x', h => { 'X-User' => $u2 }), 200, 'the main server (database 0) still works');
    ok(redis_cmd('EXISTS', ukey('basic', $u2)) && !$db3->cmd('EXISTS', ukey('basic', $u2)),
        'the main server keys land in database 0 (pooled connections do not mix databases)');
}

# ---------------------------------------------------------------- unix socket
{
    my $u = uid('unix');
    my @c = codes(3, '/rl/unix/x', vhost => 'rlaas_unix', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'RLaaSRedis unix:/path: limiting works over the socket');
    is(redis_cmd('ZCARD', ukey('unix', $u)), 2, 'unix socket: the key is in the main Redis');
    my $clients = redis_cmd('CLIENT', 'LIST');
    like($clients, qr/\baddr=\S*redis\.sock\S*|\baddr=\/\S+|laddr=\S*redis\.sock/,
        'a client is connected through the unix socket');
}

done_testing();
