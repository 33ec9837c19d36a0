# Hostile identities (beyond t/keys.t): huge values (an 8000-byte header),
# binary bytes, key syntax (: { } *), spaces, %00 in a query argument,
# values spelling other keys, eight huge sources at once, absent values.
# Each gets a normal decision with a counter of its own (limit 2: 200 200
# 429), never a 500 or a crash. Afterwards every key in Redis is bounded and
# has the documented shape; a client can't reach another strategy's key of
# another client; credentials never reach a key or the error log (at
# LogLevel rlaas:trace8).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $em = error_log_mark();
my $r6 = sub { int rand 1e6 };
my $SEG = qr/(?:[A-Za-z0-9.\@_-]{1,64}|~[0-9a-f]{32})/;
my $TAG = qr/(?:ip|user|key|[hcqe]\.[A-Za-z0-9._-]{1,64}|x\.[0-9a-f]{8})/;
my $TSEG = qr/$TAG=(?:$SEG|ip~$SEG)/;
my $ID = qr/(?:$SEG|ip~$SEG|$TSEG(?::$TSEG)*)/;
my $SUFFIX = qr/(?::(?:tb|lb|gcra|sw|\d+))?/;

# three requests of one identity: its own counter, limit 2
sub three {
    my ($path, $name, %o) = @_;
    my @r = map { req($path, %o) } 1 .. 3;
    my $got = join ' ', map { $_->code } @r;
    is($got, '200 200 429', "$name: a normal decision with a counter of its own (200 200 429)")
        or diag(join "\n", map { $_->status_line } @r);
    return @r;
}

# ---------------------------------------------------------------- X-User
my %cases = (
    '8000-byte value'          => 'A' x 7990 . $r6->(),
    '8000 bytes of key syntax' => ':{}*' x 1998 . $r6->(),
    'binary (obs-text) bytes'  => "\xff\xfe\x80\xc0\xc1-" . $r6->(),
    'tab inside'               => "a\tb-" . $r6->(),
    'colon'                    => 'a:b:' . $r6->(),
    'hash tag braces'          => '{target}' . $r6->(),
    'glob star'                => '*' . $r6->(),
    'spaces'                   => 'a b  c ' . $r6->(),
    'another key'              => 'rlaas:rate_limit:x' . $r6->(),
    'another strategy\'s key'  => 'target' . $r6->() . ':tb',
    'a fallback identity'      => 'ip~127.0.0.' . $r6->(),
    'percent escapes'          => '%00%0d%0a' . $r6->(),
    'unicode'                  => "\xe2\x80\xae\xef\xbb\xbf" . $r6->(),
);
for my $name (sort keys %cases) {
    my $v = $cases{$name};
    my @r = three('/hd/h/hdr', "X-User: $name", h => { 'X-User' => $v });
    ok(redis_cmd('EXISTS', rkey('hd-h', 'h.x-user=' . hseg($v))), "X-User: $name: hashed (~ + 32 hex digits)");
}
{
    # control bytes: httpd itself refuses the request line or header (400)
    my $r = req('/hd/h/hdr', h => { 'X-User' => "ctl\x01\x7f" . $r6->() });
    ok($r->code == 400 || $r->code == 200, 'X-User with control bytes: refused by httpd (400) or decided, never 500 ('
        . $r->code . ')');
}
{
    my $k = ukey('hd-h', undef);
    redis_cmd('DEL', $k);
    is(hit('/hd/h/hdr'), 200, 'X-User absent: allowed');
    is(hit('/hd/h/hdr', h => { 'X-User' => '' }), 200, 'X-User empty: allowed, the same client');
    is(hit('/hd/h/hdr', h => { 'X-User' => '   ' }), 429, 'X-User blank: the same client, denied (limit 2)');
    is(redis_cmd('ZCARD', $k), 2, 'absent, empty and blank values fall back to ip~127.0.0.1');
    redis_cmd('DEL', $k);
}

# ---------------------------------------------------------------- query
{
    my $t = 'q' . $r6->();
    my @q = (
        ['%00 in the value',        "$t%00x",          "$t%00x"],
        ['%-encoded colon',         "$t%3Atb",         "$t:tb"],
        ['malformed escape',        "$t%zz",           "$t%zz"],
        ['plus as space',           "a+$t",            "a $t"],
        ['4000-byte value',         ('Q' x 4000) . $t, ('Q' x 4000) . $t],
    );
    for my $c (@q) {
        my ($name, $raw, $value) = @$c;
        three("/hd/h/query?tenant=$raw", "query: $name");
        ok(redis_cmd('EXISTS', rkey('hd-h-query', 'q.tenant=' . hseg($value))), "query: $name: hashed as a whole");
    }
    ok(!redis_cmd('EXISTS', rkey('hd-h-query', "q.tenant=$t")), 'query: %00 does not cut the value short (no key for the part before it)');
}

# ---------------------------------------------------------------- eight huge sources
{
    my @h = map { ("X-$_" => ($_ x 7990) . $r6->()) } qw(A B C D E F G H);
    three('/hd/h/multi', 'eight sources of 8000 bytes each', h => \@h);
    my %h = @h;
    my $k = rkey('hd-h-multi', map { 'h.x-' . lc($_) . '=' . hseg($h{"X-$_"}) } qw(A B C D E F G H));
    ok(redis_cmd('EXISTS', $k), 'eight huge sources: eight hashed segments joined with ":"');
    three('/hd/h/multi', 'eight sources, all absent');
    my $fb = rkey('hd-h-multi', map { tseg('h.x-' . lc $_, undef) } qw(A B C D E F G H));
    ok(redis_cmd('EXISTS', $fb), 'eight absent sources: eight fallbacks');
    redis_cmd('DEL', $fb);
}

# ---------------------------------------------------------------- other sources
{
    my $t = "{tenant}:*" . $r6->();
    three('/hd/h/expr', 'expr= with key syntax', h => { 'X-Tenant' => $t });
    ok(redis_cmd('EXISTS', rkey('hd-h-expr', xtag('%{HTTP:X-Tenant}') . '=' . hseg($t))), 'expr=: hashed');
    my $v = 'nz' . $r6->();
    three('/hd/h/nozone', 'no zone, own prefix', vhost => 'rlaas_hostile', h => { 'X-User' => "hd:h:$v" });
    ok(!redis_cmd('EXISTS', "hd:h:hd:h:$v") && redis_cmd('EXISTS', 'hd:h:h.x-user=' . hseg("hd:h:$v")),
        'no zone: a value spelling the prefix is hashed');
}

# ---------------------------------------------------------------- another strategy's key
# One zone, two strategies: the token bucket of client "victim" is
# K:victim:tb; the sliding log of a client calling itself "victim:tb" would
# be K:victim:tb too, if the value were used raw.
{
    # literally "victim" and "victim:tb" (their keys are removed afterwards:
    # t/keys.t checks that no key holds the text "victim")
    my $v = 'victim';
    my $tb = ukey('hd-h-xs', $v) . ':tb';
    redis_cmd('DEL', $tb, ukey('hd-h-xs', $v), ukey('hd-h-xs', "$v:tb"));
    is(hit('/hd/h/xs/token', h => { 'X-User' => $v }), 200, 'client victim (token): allowed');
    my $state = redis_cmd('HGETALL', $tb);
    my $pttl = redis_cmd('PTTL', $tb);
    three('/hd/h/xs/log', 'client "victim:tb" (sliding log, same zone)', h => { 'X-User' => "$v:tb" });
    is(redis_cmd('TYPE', $tb), 'hash', "victim's token bucket is still a hash");
    is_deeply(redis_cmd('HGETALL', $tb), $state, 'client "victim:tb" did not touch the token bucket of client victim');
    my $r = req('/hd/h/xs/token', h => { 'X-User' => $v });
    is($r->code, 200, 'client victim: its second token is still there');
    like($r->header('RateLimit') // '', qr/;r=0;/, 'client victim: RateLimit r=0 after its own two requests only');
    ok(!redis_cmd('EXISTS', ukey('hd-h-xs', $v)), 'client "victim:tb" wrote nothing at K:victim either');
    ok(redis_cmd('EXISTS', rkey('hd-h-xs', 'h.x-user=' . hseg("$v:tb"))), 'client "victim:tb" has its own, hashed key');
    redis_cmd('DEL', $tb, ukey('hd-h-xs', "$v:tb"));
}

# ---------------------------------------------------------------- credentials
my @secrets;
{
    my $k = 'sk_live_' . $r6->() . 'Zq9';
    push @secrets, $k;
    three('/hd/h/api', 'api_key (X-API-Key)', h => { 'X-API-Key' => $k });
    my $k2 = "sk:live {x} * " . $r6->() . "\xff" . ('K' x 7900);
    push @secrets, substr($k2, 0, 40);
    three('/hd/h/api', 'api_key, 8000 hostile bytes', h => { 'X-API-Key' => $k2 });
    ok(redis_cmd('EXISTS', rkey('hd-h-api', 'key=' . hseg($k2))), 'api_key: hashed');
    my $pw = 'pw' . $r6->() . 'Secret';
    push @secrets, $pw, basic_auth('mallory', $pw) =~ s/^Basic //r;
    three('/hd/h/authz', 'Authorization (Basic)', h => { Authorization => basic_auth('mallory', $pw) });
    my $bearer = 'tok' . $r6->() . 'Bearer9';
    push @secrets, $bearer;
    three('/hd/h/authz', 'Authorization (Bearer)', h => { Authorization => "Bearer $bearer" });
    my $sid = 'sid' . $r6->() . 'Cookie7';
    push @secrets, $sid;
    three('/hd/h/cookie', 'cookie:sid', h => { Cookie => "a=1; sid=$sid; b={x}" });
    ok(redis_cmd('EXISTS', rkey('hd-h-cookie', 'c.sid=' . hseg($sid))), 'cookie:sid: hashed');
}

# ---------------------------------------------------------------- afterwards
{
    my @mine = (keys_like(prefix() . 'hd-h*'), keys_like('hd:h:*'));
    cmp_ok(scalar(@mine), '>=', 25, scalar(@mine) . ' keys written by this test');
    my @bad;
    for my $k (@mine) {
        my ($p, $z) = $k =~ /^hd:h:/ ? ('hd:h:', '') : (prefix(), '(?:hd-h[a-z-]*:)');
        push @bad, $k unless $k =~ /^\Q$p\E$z$ID$SUFFIX\z/;
    }
    is_deeply(\@bad, [], 'every key is prefix[zone:]identity[:suffix], the identity one segment or '
        . 'tag=segment[:tag=segment...], each segment raw [A-Za-z0-9.@_-]{1,64}, ~<32 hex> or ip~<segment>');
    my @all = keys_like('*');
    # RLAAS_KEY_MAX (src/core/rlaas_keybuild.h), suffix included, plus the
    # digits of a fixed window's number
    my @long = grep { length($_) > 1277 + 13 } @all;
    is_deeply(\@long, [], 'no key in Redis is longer than RLAAS_KEY_MAX (1277) and a window number ('
        . scalar(@all) . ' keys)');
    my ($max) = sort { $b <=> $a } map { length } @mine;
    cmp_ok($max, '<=', length(prefix()) + length('hd-h-multi:') + 8 * length('h.x-a=') + 8 * 33 + 7 + length(':gcra'),
        "the longest key of this test ($max bytes) is 8 hashed segments long");
    my @unprintable = grep { /[^\x21-\x7e]/ } @all;
    is_deeply(\@unprintable, [], 'no key in Redis holds a space, control or non-ASCII byte');
    my @leak_keys = grep { my $s = $_; grep { index($_, $s) >= 0 } @all } @secrets;
    is_deeply(\@leak_keys, [], 'no credential appears in any Redis key');
    my $log = error_log_since($em);
    like($log, qr/\[rlaas:trace1\]/, 'the error log has rlaas trace lines for these requests');
    my @leak_log = grep { index($log, $_) >= 0 } @secrets;
    is_deeply(\@leak_log, [], 'no credential appears in the error log at LogLevel rlaas:trace8');
    my @c = crashes_since($em);
    is_deeply(\@c, [], 'no child crashed');
}

done_testing();
