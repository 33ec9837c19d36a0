# RLaaSKeyBy user with Basic authentication (mod_auth_basic + mod_authn_file):
# decided before authentication under the user name the client sent, so
# failed attempts count; where nothing authenticates, a name the client
# merely claims never selects the key.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my ($bob, $carol) = (rkey('k-user', 'bob'), rkey('k-user', 'carol'));
redis_cmd('DEL', $bob, $carol, rkey('k-user', fallback('127.0.0.1')));

my @c = codes(3, '/rl/user/x', auth => ['bob', 'bob-pw']);
is("@c", '200 200 429', 'RLaaSKeyBy user, limit 2: bob gets 2 requests, then 429');
is(redis_cmd('TYPE', $bob), 'zset', 'RLaaSKeyBy user: K = prefix:zone:bob');
is(hit('/rl/user/x', auth => ['carol', 'carol-pw']), 200, 'another user (carol) has her own counter');
ok(redis_cmd('EXISTS', $carol), 'carol is counted under prefix:zone:carol');

my $anon = req('/rl/user/x');
is($anon->code, 401, 'no credentials: 401 from authentication, not 429 or 500');
is(hit('/rl/user/x', auth => ['carol', 'wrong']), 401, 'wrong password: 401');
is(redis_cmd('ZCARD', $carol), 2, 'a failed authentication counts against the name it tried');
is(hit('/rl/user/x', auth => ['bob', 'wrong']), 429,
    'bob is over his limit: a wrong password for him gets 429, not 401');
is(redis_cmd('ZCARD', $bob), 2, 'refused attempts are not recorded (sliding log)');
my @k = grep { !/:(bob|carol)$/ } keys_like(rkey('k-user', '*'));
is_deeply(\@k, [rkey('k-user', fallback('127.0.0.1'))],
    'the attempt without credentials counted under the client address');

# no authentication configured: the user source has no value
my $fb = rkey('k-user-noauth', fallback('127.0.0.1'));
redis_cmd('DEL', $fb, rkey('k-user-noauth', 'bob'));
is(hit('/rl/user-noauth/x', auth => ['bob', 'whatever']), 200, 'user source where nothing authenticates: allowed');
ok(redis_cmd('EXISTS', $fb), 'user source without authentication falls back to ip~<ip>');
ok(!redis_cmd('EXISTS', rkey('k-user-noauth', 'bob')),
    'an unverified Authorization header does not select the user key');

redis_cmd('DEL', $bob, $carol, $fb, rkey('k-user', fallback('127.0.0.1')));
done_testing();
