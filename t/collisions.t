# One client reaching another client's key (issue 11): with identities
# joined by ':' and the scripts appending ':tb' or a window number, a
# client could choose values that spell another client's key in another
# section: it then spent that client's quota, or turned its state into
# another type so that every request of that client got WRONGTYPE and 500.
# Each case here did that; with the whole key built in C (tags for every
# source but a single ip or user, suffix-like and address-like values
# hashed) each client keeps a counter of its own.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha1);
use MIME::Base64 qw(encode_base64);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $em = error_log_mark();

sub rl_r { ($_[0]->header('RateLimit') // '') =~ /;r=(\d+)/ ? $1 : 'none' }

sub codes_of { join ' ', map { $_->code } @_ }

# ---------------------------------------------------------------- "tb"
# header:X-A header:X-B with X-B: tb spelled the token bucket of X-A.
{
    my $a = uid('alice');
    my $t1 = req('/rl/zk/xs/token', h => { 'X-A' => $a });
    is($t1->code, 200, 'alice (token, limit 3): allowed');
    is(rl_r($t1), 2, 'alice: 2 tokens left');
    my @p = map { req('/rl/zk/xs', h => { 'X-A' => $a, 'X-B' => 'tb' }) } 1 .. 3;
    is(codes_of(@p), '200 200 200', 'X-A: alice, X-B: tb (sliding log, same zone): allowed, no 500');
    my $t2 = req('/rl/zk/xs/token', h => { 'X-A' => $a });
    is($t2->code, 200, "alice's token bucket still works: no WRONGTYPE, no 500");
    is(rl_r($t2), 1, 'alice: 1 token left, her own two requests only');
    my $tb = rkey('zk-xs', tseg('h.x-a', $a)) . ':tb';
    is(redis_cmd('TYPE', $tb), 'hash', "alice's token bucket is a HASH ($tb)");

    # the other order: the sliding log first, then the token bucket
    my $b = uid('bob');
    my @q = map { req('/rl/zk/xs', h => { 'X-A' => $b, 'X-B' => 'tb' }) } 1 .. 2;
    is(codes_of(@q), '200 200', 'X-A: bob, X-B: tb first: allowed');
    my @r = map { req('/rl/zk/xs/token', h => { 'X-A' => $b }) } 1 .. 4;
    is(codes_of(@r), '200 200 200 429', "then bob's token bucket: his 3 tokens, no 500");
}

# ---------------------------------------------------------------- 127.0.0.1
# Without a zone, a header holding 127.0.0.1 was the client 127.0.0.1.
{
    redis_cmd('DEL', 'zk:noz:127.0.0.1');
    my @h = map { hit('/rl/zk/noz/client', vhost => 'rlaas_zk_noz', h => { 'X-Client' => '127.0.0.1' }) } 1 .. 3;
    is("@h", '200 200 200', 'X-Client: 127.0.0.1 (no zone): allowed');
    my @i = map { hit('/rl/zk/noz/ip', vhost => 'rlaas_zk_noz') } 1 .. 3;
    is("@i", '200 200 429', 'client 127.0.0.1 (keyed by ip, limit 2, no zone): its whole quota is still there');
    is(redis_cmd('ZCARD', 'zk:noz:127.0.0.1'), 2, 'the key of client 127.0.0.1 holds its own 2 hits only');
    ok(redis_cmd('EXISTS', 'zk:noz:' . tseg('h.x-client', '127.0.0.1')),
        'the header has a key of its own: h.x-client=<hashed value>');
    redis_cmd('DEL', 'zk:noz:127.0.0.1');
}

# ---------------------------------------------------------------- window
# X-B: <floor(now / W)> spelled the fixed window key of X-A.
{
    my $idx = wait_fixed_window(3_600_000, 10_000);
    my $v = uid('victim');
    is(hit('/rl/zk/xs/fixed', h => { 'X-A' => $v }), 200, 'victim (fixed, limit 3): allowed');
    is(hit('/rl/zk/xs', h => { 'X-A' => $v, 'X-B' => $idx }), 200,
        "X-A: victim, X-B: the window number ($idx): allowed, no 500");
    my @c = map { hit('/rl/zk/xs/fixed', h => { 'X-A' => $v }) } 1 .. 3;
    is("@c", '200 200 429', "the victim's fixed window counts its own 3 requests only");
    my $k = rkey('zk-xs', tseg('h.x-a', $v)) . ":$idx";
    is(redis_cmd('GET', $k), 3, "the victim's counter ($k) holds its 3 admitted requests (a 429 charges nothing)");

    my $w = uid('victim');
    my @a = map { hit('/rl/zk/xs', h => { 'X-A' => $w, 'X-B' => $idx }) } 1 .. 2;
    is("@a", '200 200', 'the other order: the guessed window number first');
    my @d = map { hit('/rl/zk/xs/fixed', h => { 'X-A' => $w }) } 1 .. 4;
    is("@d", '200 200 200 429', 'then the victim: its 3 requests, no 500');
}

# ---------------------------------------------------------------- zone names
# A user named like a zone, in a section without a zone and with fixed
# windows, wrote <zone>:<window number>: the key of that zone's user whose
# name is the window number. (Zones named in .htaccess were never hashed.)
{
    my $W = 30 * 86_400_000;
    my $now = redis_time_ms();
    if ($W - $now % $W < 60_000) { sleep 61; $now = redis_time_ms() }
    my $num = int($now / $W);
    my $pw = uid('pw');
    my $file = catfile(repo_top(), 't', 'conf', 'rlaas-zk.htpasswd');
    open my $fh, '>', $file or die "$file: $!";
    print $fh "$_:{SHA}" . encode_base64(sha1($pw), '') . "\n" for 'zkhta', $num, 'zkother';
    close $fh or die "$file: $!";
    my %o = (vhost => 'rlaas_zk_users');

    is(hit('/rl/zk/users/fixed', %o, auth => ['zkhta', $pw]), 200,
        'user "zkhta" (no zone, fixed window of 30 days): allowed');
    my @c = map { hit('/zk/hta/ok.txt', %o, auth => [$num, $pw]) } 1 .. 3;
    is("@c", '200 200 429', "user \"$num\" of zone zkhta (limit 2): a counter of its own, no 500");
    # (the .htaccess' zone counts in its tenant's namespace: zkhta@localhost~t)
    is(redis_cmd('ZCARD', 'zk:u:zkhta@localhost~t:' . hseg($num)), 2,
        'a numeric user name is hashed: it is never a window number');
    is(redis_cmd('GET', "zk:u:zkhta:$num"), 1,
        "zk:u:zkhta:$num is user zkhta's fixed window, with its one request");

    # the other order: the zone's user first
    redis_cmd('DEL', 'zk:u:zkhta@localhost~t:' . hseg($num), keys_like('zk:u:zkhta:*'));
    my @d = map { hit('/zk/hta/ok.txt', %o, auth => [$num, $pw]) } 1 .. 2;
    is("@d", '200 200', "user \"$num\" of zone zkhta first");
    is(hit('/rl/zk/users/fixed', %o, auth => ['zkhta', $pw]), 200,
        'then user "zkhta" (no zone, fixed): allowed, no 500');
    is(hit('/zk/hta/ok.txt', %o, auth => ['zkother', $pw]), 200, 'another user of the zone: allowed');
    unlink $file;
}

# ---------------------------------------------------------------- afterwards
{
    my $log = error_log_since($em);
    unlike($log, qr/WRONGTYPE/, 'no WRONGTYPE reply from Redis for any of these requests');
    my @c = crashes_since($em);
    is_deeply(\@c, [], 'no child crashed');
}

done_testing();
