# Client identity and key text: every RLaaSKeyBy source and its tag, the
# seeds' bare layout for a single ip or user source, fallback to the client
# IP, zones, hashing of credentials and of unsafe values, IPv6 grouping, and
# that no client can reach another client's key (more in t/collisions.t).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $FB = fallback('127.0.0.1');    # ip~127.0.0.1

# keyed_as(ZONE, IDENTITY, PATH, NAME, %req): one request, then K must exist
sub keyed_as {
    my ($zone, $seg, $path, $name, %o) = @_;
    my $k = rkey($zone, $seg);
    redis_cmd('DEL', $k);
    my $code = hit($path, %o);
    ok($code == 200 && redis_cmd('EXISTS', $k), "$name: key $k")
        or diag("status $code; keys in zone: "
                . join(' ', keys_like(rkey($zone, '*'))));
}

my $em = error_log_mark();
my @secrets;

# ---------------------------------------------------------------- ip
{
    my $k = rkey('k-ip', '127.0.0.1');
    redis_cmd('DEL', $k);
    is(hit('/rl/keys/ip'), 200, 'RLaaSKeyBy ip: allowed');
    is(redis_cmd('ZCARD', $k), 1, 'RLaaSKeyBy ip: K = prefix:zone:127.0.0.1');
    hit('/rl/keys/ip', h => { 'X-Forwarded-For' => '198.51.100.23', 'X-Real-IP' => '198.51.100.24' });
    is(redis_cmd('ZCARD', $k), 2, 'X-Forwarded-For / X-Real-IP are not read by the ip source');
    is(scalar(keys_like('*198.51.100.23*')) + scalar(keys_like('*198.51.100.24*')), 0,
        'no key from a client-supplied forwarding header');
}

# ---------------------------------------------------------------- api_key
{
    my $key = uid('apikey');
    push @secrets, $key;
    keyed_as('k-api', 'key=' . hseg($key), '/rl/keys/api_key', 'api_key (X-API-Key) is always hashed: key=~<hash>',
        h => { 'X-API-Key' => $key });
    ok(!redis_cmd('EXISTS', rkey('k-api', "key=$key")), 'api_key: the raw key never appears in Redis');
    keyed_as('k-api', "key=$FB", '/rl/keys/api_key', 'api_key missing: falls back to key=ip~<ip>');
}

# ---------------------------------------------------------------- header
{
    my $u = uid('hdr');
    keyed_as('k-hdr', "h.x-user=$u", '/rl/keys/header', 'header:X-User with a safe value: raw, tagged h.x-user=',
        h => { 'X-User' => $u });
    keyed_as('k-hdr', "h.x-user=$FB", '/rl/keys/header', 'header:X-User missing: falls back to h.x-user=ip~<ip>');
    keyed_as('k-hdr', "h.x-user=$FB", '/rl/keys/header', 'header:X-User empty: falls back to h.x-user=ip~<ip>',
        h => { 'X-User' => '' });
    keyed_as('k-hdr', 'h.x-user=' . hseg('127.0.0.1'), '/rl/keys/header',
        'header:X-User holding an address: hashed, never the text of a client address',
        h => { 'X-User' => '127.0.0.1' });
    for my $v (qw(tb sw lb gcra 12345)) {
        keyed_as('k-hdr', 'h.x-user=' . hseg($v), '/rl/keys/header',
            "header:X-User \"$v\": hashed, never a strategy's suffix or a window number",
            h => { 'X-User' => $v });
    }
}

# ---------------------------------------------------------------- credential headers
for my $c (
    ['h-authorization',       'k-h-authz',    'Authorization'],
    ['h-authorization-lc',    'k-h-authz-lc', 'Authorization', ' (directive names it in lower case)'],
    ['h-proxy-authorization', 'k-h-pauthz',   'Proxy-Authorization'],
    ['h-cookie',              'k-h-cookie',   'Cookie'],
    ['h-x-api-key',           'k-h-xapikey',  'X-API-Key'],
) {
    my ($loc, $zone, $hdr, $note) = @$c;
    my $v = uid('cred');    # a value that would be safe as raw key text
    push @secrets, $v;
    my $tag = 'h.' . lc $hdr;
    keyed_as($zone, "$tag=" . hseg($v), "/rl/keys/$loc", "header:$hdr is a credential: hashed" . ($note // ''),
        h => { $hdr => $v });
    ok(!redis_cmd('EXISTS', rkey($zone, "$tag=$v")), "header:$hdr: the raw value never appears in Redis");
}

# ---------------------------------------------------------------- cookie
{
    my $s = uid('sess');
    push @secrets, $s;
    keyed_as('k-cookie', 'c.session=' . hseg($s), '/rl/keys/cookie', 'cookie:session is always hashed: c.session=~<hash>',
        h => { Cookie => "a=1; session=$s; b=2" });
    keyed_as('k-cookie', 'c.session=' . hseg($s), '/rl/keys/cookie', 'cookie:session found first in the header',
        h => { Cookie => "session=$s" });
    keyed_as('k-cookie', "c.session=$FB", '/rl/keys/cookie', 'cookie:session absent: falls back',
        h => { Cookie => "xsession=zzz; sessionx=yyy" });
    keyed_as('k-cookie', "c.session=$FB", '/rl/keys/cookie', 'no Cookie header: falls back');
}

# ---------------------------------------------------------------- cookie sent twice
# "Cookie: sid=a; sid=b": the first one counts, as browsers send the most
# specific first, and no request adds a line to the error log (httpd's own
# cookie reader logs one per request for a name seen twice). Several
# Cookie header fields are read in order.
{
    my ($a, $b) = (uid('sa'), uid('sb'));
    my $k = rkey('zk-cookie', 'c.sid=' . hseg($a));
    redis_cmd('DEL', $k);
    my $m = error_log_mark();
    my @c = map { hit('/rl/zk/cookie', h => { Cookie => "sid=$a; sid=$b" }) } 1 .. 50;
    is(count_by(@c), '200 x50', '50 requests with "Cookie: sid=a; sid=b": allowed');
    is(redis_cmd('ZCARD', $k), 50, 'keyed by the first sid, as "sid=a" alone would be');
    ok(!redis_cmd('EXISTS', rkey('zk-cookie', 'c.sid=' . hseg($b))), 'the second sid is not used');
    sleep 1;
    my @lines = grep { length } split /\n/, error_log_since($m);
    is_deeply(\@lines, [], 'they add no line to the error log');
    hit('/rl/zk/cookie', h => [Cookie => 'other=1', Cookie => "sid=$a"]);
    is(redis_cmd('ZCARD', $k), 51, 'the first sid in the second Cookie header field counts too');
    hit('/rl/zk/cookie', h => { Cookie => " a=1 ;sid=$a ; b=2" });
    is(redis_cmd('ZCARD', $k), 52, 'white space around the pairs does not matter');
    redis_cmd('DEL', $k);
}

# ---------------------------------------------------------------- query
{
    my $t = uid('tenant');
    keyed_as('k-query', "q.tenant=$t", "/rl/keys/query?x=1&tenant=$t&y=2", 'query:tenant: raw, tagged q.tenant=');
    my $g = uid('good');
    keyed_as('k-query', "q.tenant=$g", "/rl/keys/query?xtenant=evil&tenant=$g", 'query:tenant does not match xtenant');
    ok(!redis_cmd('EXISTS', rkey('k-query', 'q.tenant=evil')), 'query:tenant: the value of xtenant is not used');
    keyed_as('k-query', "q.tenant=$FB", '/rl/keys/query?other=1', 'query:tenant absent: falls back');
    keyed_as('k-query', "q.tenant=$FB", '/rl/keys/query?tenant=', 'query:tenant empty: falls back');
}

# ---------------------------------------------------------------- env
{
    keyed_as('k-env', 'e.PLAN=gold', '/rl/keys/env', 'env:PLAN (set by SetEnvIf before the check): raw, tagged e.PLAN=',
        h => { 'X-Plan' => 'gold' });
    keyed_as('k-env', "e.PLAN=$FB", '/rl/keys/env', 'env:PLAN unset: falls back', h => { 'X-Plan' => 'bronze' });
}

# ---------------------------------------------------------------- expr
{
    my $t = uid('acme');
    my $x1 = xtag('%{REQUEST_METHOD}-%{HTTP:X-Tenant}');
    my $x2 = xtag('%{HTTP:X-Tenant}');
    keyed_as('k-expr', "$x1=GET-$t", '/rl/keys/expr',
        "expr=%{REQUEST_METHOD}-%{HTTP:X-Tenant}: tagged $x1 (8 hex digits of the expression's SHA-1)",
        h => { 'X-Tenant' => $t });
    keyed_as('k-expr-empty', "$x2=$t", '/rl/keys/expr-empty', 'expr=%{HTTP:X-Tenant}: raw value',
        h => { 'X-Tenant' => $t });
    keyed_as('k-expr-empty', "$x2=$FB", '/rl/keys/expr-empty', 'expr= evaluating to an empty string: falls back');
    my $bad = "a:b $t";
    keyed_as('k-expr-empty', "$x2=" . hseg($bad), '/rl/keys/expr-empty', 'expr= value with unsafe bytes: hashed',
        h => { 'X-Tenant' => $bad });
}

# ---------------------------------------------------------------- several sources
{
    my $u = uid('mu');
    my $t = uid('mt');
    keyed_as('k-multi', "h.x-user=$u:q.tenant=$t", "/rl/keys/multi?tenant=$t",
        'two sources: tagged segments joined with ":"', h => { 'X-User' => $u });
    keyed_as('k-multi', "h.x-user=$u:q.tenant=$FB", '/rl/keys/multi', 'two sources, one missing: that one falls back',
        h => { 'X-User' => $u });
    my $bad = 'x:y';
    keyed_as('k-multi', 'h.x-user=' . hseg($bad) . ":q.tenant=$t", "/rl/keys/multi?tenant=$t",
        'two sources: an unsafe segment is hashed on its own', h => { 'X-User' => $bad });
}

# ---------------------------------------------------------------- zones
{
    my $u = uid('zone');
    my @c = map { hit($_, h => { 'X-User' => $u }) }
        qw(/rl/keys/zone-a /rl/keys/zone-b /rl/keys/zone-a /rl/keys/zone-b);
    is("@c", '200 200 429 429', 'different zones count separately (limit 1 each)');
    ok(redis_cmd('EXISTS', ukey('za', $u)) && redis_cmd('EXISTS', ukey('zb', $u)),
        'zone is part of the key: prefix:za:<id> and prefix:zb:<id>');

    my $v = uid('nozone');
    my @d = map { hit($_, h => { 'X-User' => $v }) } qw(/rl/keys/nozone-a /rl/keys/nozone-b);
    is("@d", '200 429', 'no zone: two sections share the counter of one identity');
    ok(redis_cmd('EXISTS', ukey(undef, $v)), 'no zone: K = prefix:<id>');

    # Without a zone, an identity spelling a zone's name is no zone's key:
    # zone keys go on with ':' after the zone name, this one with '='.
    redis_cmd('DEL', ukey(undef, 'za'));
    my @before = keys_like(rkey('za', '*'));
    is(hit('/rl/keys/nozone-a', h => { 'X-User' => 'za' }), 200,
        'no zone, identity equal to a zone name: allowed');
    ok(redis_cmd('EXISTS', ukey(undef, 'za')), 'no zone, identity equal to a zone name: prefix:h.x-user=za');
    is_deeply([keys_like(rkey('za', '*'))], \@before, 'no key of zone za was written');
}

# ---------------------------------------------------------------- hostile values
{
    my $pl = length(rkey('k-hdr', 'h.x-user='));
    my %cases = (
        'colon'              => 'a:b',
        'another key'        => 'rlaas:rate_limit:victim',
        'other strategy key' => 'victim:tb',
        'glob'               => 'star*',
        'space'              => 'has space',
        'braces (hash tag)'  => '{slot}x',
        'slash'              => 'a/b',
        'tilde'              => 'a~b',
        'utf-8'              => "caf\xc3\xa9",
        '65 bytes'           => 'x' x 65,
        '4000 bytes'         => 'y' x 4000,
        'quote'              => q{a"b'c},
        'percent'            => 'a%0d%0ab',
    );
    my @victims;
    for my $name (sort keys %cases) {
        my $v = $cases{$name} . "-" . int(rand 1e6);
        $v = $cases{$name} if $name =~ /bytes/;
        push @victims, $v if $v =~ /victim/;
        keyed_as('k-hdr', 'h.x-user=' . hseg($v), '/rl/keys/header', "hostile value ($name): hashed",
            h => { 'X-User' => $v });
    }
    my $v64 = 'z' x 63 . int(rand 10);
    keyed_as('k-hdr', "h.x-user=$v64", '/rl/keys/header', '64 safe bytes: still raw', h => { 'X-User' => $v64 });
    my @long = grep { length($_) > $pl + 64 } keys_like(rkey('k-hdr', '*'));
    is_deeply(\@long, [], 'no key longer than prefix + zone + 64 bytes, whatever the client sends');
    ok(!redis_cmd('EXISTS', 'rlaas:rate_limit:victim'), 'a client cannot write another client\'s key');
    # this run's texts: another test's clients may be called victims too
    is(scalar(map { keys_like("*$_*") } @victims), 0, 'no key holds the hostile text');
}

# ---------------------------------------------------------------- forged fallback
{
    my $fbk = rkey('k-forge', "h.x-user=$FB");
    my $forged = rkey('k-forge', 'h.x-user=' . hseg($FB));
    redis_cmd('DEL', $fbk, $forged);
    is(hit('/rl/keys/forge'), 200, 'no X-User: allowed under the fallback key');
    is(hit('/rl/keys/forge', h => { 'X-User' => $FB }), 200,
        'X-User "ip~127.0.0.1" does not reach the fallback key (its own counter)');
    ok(redis_cmd('EXISTS', $forged), 'a value that looks like a fallback is hashed');
    is(hit('/rl/keys/forge'), 429, 'the fallback client is still limited (limit 1)');
    redis_cmd('DEL', $fbk, $forged);
}

# ---------------------------------------------------------------- mod_remoteip
{
    my $k = rkey('rip', '203.0.113.9');
    redis_cmd('DEL', $k);
    is(hit('/rl/rip/ip', vhost => 'rlaas_remoteip', h => { 'X-Forwarded-For' => '203.0.113.9' }), 200,
        'behind mod_remoteip: allowed');
    ok(redis_cmd('EXISTS', $k), 'ip source uses the address mod_remoteip sets (useragent_ip)');
    my $v6 = '2001:db8::7';
    keyed_as('rip', '2001-db8-0-0_64', '/rl/rip/ip', 'an IPv6 client is named by its /64: 2001-db8-0-0_64',
        vhost => 'rlaas_remoteip', h => { 'X-Forwarded-For' => $v6 });
    keyed_as('rip', '203.0.113.10', '/rl/rip/ip', 'an IPv4-mapped IPv6 client is its IPv4 address',
        vhost => 'rlaas_remoteip', h => { 'X-Forwarded-For' => '::ffff:203.0.113.10' });
    keyed_as('rip-fb', 'h.x-user=ip~2001-db8-0-0_64', '/rl/rip/fallback',
        'fallback for an IPv6 client: ip~ + its /64',
        vhost => 'rlaas_remoteip', h => { 'X-Forwarded-For' => '2001:db8::8' });
}

# ---------------------------------------------------------------- IPv6 grouping
# RLaaSIPv6Prefix (default 64): every address of one /64 is one client;
# with 128, every address is a client of its own. Limit 2 per hour.
{
    my $net = sprintf '2001:db8:%x:%x', 1 + int(rand 0xfffe), 1 + int(rand 0xfffe);
    my $other = sprintf '2001:db8:%x:%x', 1 + int(rand 0xfffe), 1 + int(rand 0xfffe);
    (my $grp = $net) =~ s/:/-/g;
    my @in = ("${net}::1", "${net}:aaaa::1", "${net}:ffff:ffff:ffff:fffe");
    my $v6 = sub { my ($vh, $ip) = @_; hit('/rl/zk/v6', vhost => $vh, h => { 'X-Forwarded-For' => $ip }) };
    redis_cmd('DEL', rkey('zk-v6', "${grp}_64"));
    my @c = map { $v6->('rlaas_zk_v6', $_) } @in;
    is("@c", '200 200 429', 'three addresses of one /64 share one counter (limit 2): 200 200 429');
    is(redis_cmd('ZCARD', rkey('zk-v6', "${grp}_64")), 2, "their key: zone:${grp}_64");
    is($v6->('rlaas_zk_v6', "${other}::1"), 200, 'an address in another /64 is another client');
    my @d = map { $v6->('rlaas_zk_v6_128', $_) } @in, $in[0], $in[0];
    is("@d", '200 200 200 200 429', 'RLaaSIPv6Prefix 128: each address its own counter');
    ok(redis_cmd('EXISTS', rkey('zk-v6-128', "$grp-aaaa-0-0-1_128")),
        "with 128 the key names the whole address ($grp-aaaa-0-0-1_128)");
}

# ---------------------------------------------------------------- secrets in logs
{
    my $log = error_log_since($em);
    ok(length $log, 'the error log has entries for these requests (LogLevel rlaas:trace8)');
    my @leaked = grep { index($log, $_) >= 0 } @secrets;
    is_deeply(\@leaked, [], 'credential values (api_key, cookies, Authorization...) never appear in the error log');
    my @in_redis = grep { my $s = $_; grep { index($_, $s) >= 0 } keys_like('*') } @secrets;
    is_deeply(\@in_redis, [], 'credential values never appear in any Redis key');
}

done_testing();
