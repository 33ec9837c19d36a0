# RLaaSKeyBy user: the authenticated user (mod_auth_basic + mod_authn_file),
# decided after authentication; never a user name the client merely claims.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my ($bob, $carol) = (rkey('k-user', 'bob'), rkey('k-user', 'carol'));
redis_cmd('DEL', $bob, $carol);

my @c = codes(3, '/rl/user/x', auth => ['bob', 'bob-pw']);
is("@c", '200 200 429', 'RLaaSKeyBy user, limit 2: bob gets 2 requests, then 429');
is(redis_cmd('TYPE', $bob), 'zset', 'RLaaSKeyBy user: K = prefix:zone:bob');
is(hit('/rl/user/x', auth => ['carol', 'carol-pw']), 200, 'another user (carol) has her own counter');
ok(redis_cmd('EXISTS', $carol), 'carol is counted under prefix:zone:carol');

my $anon = req('/rl/user/x');
is($anon->code, 401, 'no credentials: 401 from authentication, not 429 or 500');
is(hit('/rl/user/x', auth => ['bob', 'wrong']), 401, 'wrong password: 401');
is(redis_cmd('ZCARD', $bob), 2, 'failed authentications are not counted against bob');
my @k = grep { !/:(bob|carol)$/ } keys_like(rkey('k-user', '*'));
is_deeply(\@k, [], 'no key was made for unauthenticated requests');

# no authentication configured: the user source has no value
my $fb = rkey('k-user-noauth', fallback('127.0.0.1'));
redis_cmd('DEL', $fb, rkey('k-user-noauth', 'bob'));
is(hit('/rl/user-noauth/x', auth => ['bob', 'whatever']), 200, 'user source where nothing authenticates: allowed');
ok(redis_cmd('EXISTS', $fb), 'user source without authentication falls back to ip~<ip>');
ok(!redis_cmd('EXISTS', rkey('k-user-noauth', 'bob')),
    'an unverified Authorization header does not select the user key');

redis_cmd('DEL', $bob, $carol, $fb);
done_testing();
