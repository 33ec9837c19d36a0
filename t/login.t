# Login throttling throttles guessing: in a section keyed by the user with
# Basic (or Digest) authentication, every attempt counts under the user
# name it tried, failed ones included, or under the client address when no
# name was sent; after `limit` attempts even the right password gets 429
# until the window allows it. A name that no authentication checks never
# stands for a request that is served.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::MD5 qw(md5_hex);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub forget { my @k = map { keys_like("*$_*") } @_; redis_cmd('DEL', @k) if @k }

forget(qw(trust-login trust-digest trust-login-open));

# ------------------------------------------------ Basic: guessing bob's password
{
    my @c = codes(15, '/rl/trust-login/x', auth => ['bob', 'guess']);
    is("@c", join(' ', ('401') x 3, ('429') x 12),
        '15 wrong passwords for bob, limit 3: three 401s, then 429');
    my $res = req('/rl/trust-login/x', auth => ['bob', 'bob-pw']);
    is($res->code, 429, 'after them, even the right password gets 429');
    is($res->content, 'Rate limit exceeded', 'the 429 is ours, before authentication');
    like($res->header('Retry-After') // '', qr/^[1-9]\d*$/, 'it says when to retry');
    my @bob = grep { /bob/ } keys_like('*trust-login*');
    is(scalar(@bob), 1, 'the failed attempts left a trace: a counter for bob');
    is(@bob ? redis_cmd('ZCARD', $bob[0]) : 0, 3, 'holding the three attempts it allowed');
}

# ------------------------------------------------ other names: their own counters
{
    is(hit('/rl/trust-login/x', auth => ['carol', 'carol-pw']), 200,
        'carol is not locked out by the guesses at bob');
    my $who = uid('mallory');
    my @c = codes(4, '/rl/trust-login/x', auth => [$who, 'x']);
    is("@c", '401 401 401 429', 'an unknown user name is counted under its own name');
    my @k = grep { index($_, $who) >= 0 } keys_like('*trust-login*');
    is(scalar(@k), 1, 'with a counter of its own');
    is(hit('/rl/trust-login/x', auth => ['carol', 'carol-pw']), 200,
        'carol still has her own counter (two users never share one)');
}

# ------------------------------------------------ no name: the client address
{
    my @c = codes(4, '/rl/trust-login/x');
    is("@c", '401 401 401 429', 'attempts without credentials count under the client address');
    is(hit('/rl/trust-login/x', auth => ['carol', 'carol-pw']), 200,
        'which is not carol\'s counter');
}

# ------------------------------------------------ Digest: the username parameter
{
    my $realm = 'rlaas trust';
    my $file = catfile(t_logs(), 'rlaas-trust.htdigest');
    open my $fh, '>', $file or die "$file: $!";
    print $fh "dave:$realm:" . md5_hex("dave:$realm:dave-pw") . "\n";
    close $fh;
    my $digest = sub {
        my ($user) = @_;
        return { Authorization => qq{Digest username="$user", realm="$realm", }
               . qq{nonce="bogus", uri="/rl/trust-digest/x", response="0123456789abcdef0123456789abcdef"} };
    };
    my @c = map { hit('/rl/trust-digest/x', h => $digest->('dave')) } 1 .. 4;
    is("@c", '401 401 401 429', 'Digest: failed attempts count under the username sent');
    is(hit('/rl/trust-digest/x', h => $digest->('erin')), 401,
        'Digest: another username has its own counter');
}

# ------------------------------------------------ a name nobody checks
{
    my @c = map { hit('/rl/trust-login-open/x', auth => [uid('anyone'), 'x']) } 1 .. 4;
    is("@c", '200 200 200 429',
        'Basic, client granted by its address: a new name per request does not escape the limit');
    my @open = keys_like('*trust-login-open*');
    is(scalar(grep { index($_, 'anyone') < 0 } @open), 1,
        'the requests served were counted under the client address');
}

forget(qw(trust-login trust-digest trust-login-open));
done_testing();
