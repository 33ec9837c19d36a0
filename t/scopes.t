# Configuration scopes and merging: a section that sets nothing inherits, a
# section that sets a directive overrides just that one. Locations, <If>,
# <Directory>/<Files>, virtual-host level settings and RLaaSEngine.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub pttl { redis_cmd('PTTL', $_[0]) }

# ---------------------------------------------------------------- parent
{
    my $u = uid('merge');
    my @c = codes(4, '/rl/merge/x', h => { 'X-User' => $u });
    is("@c", '200 200 200 429', 'parent Location: limit 3');
    my $p = pttl(ukey('merge', $u));
    ok($p > 100_000, "parent Location: window 60s (PTTL $p)");
}

# ---------------------------------------------------------------- window only
{
    my $u = uid('merge-w');
    my @c = codes(4, '/rl/merge/window/x', h => { 'X-User' => $u });
    is("@c", '200 200 200 429', 'child sets only RLaaSWindow: limit 3 inherited');
    my $p = pttl(ukey('merge', $u));
    ok($p > 0 && $p <= 4_000, "child sets only RLaaSWindow: its 2s window applies (PTTL $p)");
    ok(!redis_cmd('EXISTS', ukey(undef, $u)), 'child sets only RLaaSWindow: zone inherited');
}

# ---------------------------------------------------------------- limit only
{
    my $u = uid('merge-l');
    my @c = codes(6, '/rl/merge/limit/x', h => { 'X-User' => $u });
    is("@c", '200 200 200 200 200 429', 'child sets only RLaaSLimit 5: 5 allowed');
    my $p = pttl(ukey('merge', $u));
    ok($p > 100_000, "child sets only RLaaSLimit: window 60s and zone inherited (PTTL $p)");
}

# ---------------------------------------------------------------- zone only
{
    my $u = uid('merge-z');
    my @c = codes(4, '/rl/merge/zone/x', h => { 'X-User' => $u });
    is("@c", '200 200 200 429', 'child sets only RLaaSZone: limit 3 inherited');
    ok(redis_cmd('EXISTS', ukey('merge2', $u)), 'child sets only RLaaSZone: its zone is in the key');
    ok(!redis_cmd('EXISTS', ukey('merge', $u)), 'child sets only RLaaSZone: the parent zone is not used');
}

# ---------------------------------------------------------------- sources only
{
    my $u = uid('merge-k');
    my $q = uid('q');
    my @c = codes(4, "/rl/merge/keyby/x?t=$q", h => { 'X-User' => $u });
    is("@c", '200 200 200 429', 'child sets only RLaaSKeyBy: limit 3 inherited');
    ok(redis_cmd('EXISTS', rkey('merge', tseg('q.t', $q))), 'child RLaaSKeyBy query:t replaces the parent sources');
    ok(!redis_cmd('EXISTS', ukey('merge', $u)), 'child RLaaSKeyBy: the parent header source is not used');
    ok(!redis_cmd('EXISTS', rkey('merge', tseg('h.x-user', $u), tseg('q.t', $q))),
        'child RLaaSKeyBy does not append to the parent sources');
}

# ---------------------------------------------------------------- strategy only
{
    my $idx = wait_fixed_window(60_000, 5_000);
    my $u = uid('merge-s');
    my @c = codes(4, '/rl/merge/fixed/x', h => { 'X-User' => $u });
    is("@c", '200 200 200 429', 'child sets only RLaaSStrategy fixed: limit 3 inherited');
    my $k = ukey('merge', $u) . ":$idx";
    is(redis_cmd('TYPE', $k), 'string', 'child sets only RLaaSStrategy: fixed window key with zone and window inherited');
    my $p = pttl($k);
    ok($p > 0 && $p <= 60_000, "fixed window inherits the 60s window (PTTL $p)");
}

# ---------------------------------------------------------------- engine
{
    my $u = uid('merge-off');
    my @r = map { req('/rl/merge/off/x', h => { 'X-User' => $u }) } 1 .. 6;
    is(join(' ', map { $_->code } @r), join(' ', ('200') x 6), 'RLaaSEngine off in a child Location: never limited');
    is(scalar(grep { defined status_of($_) } @r), 0, 'RLaaSEngine off: RLAAS_STATUS unset');
    ok(!redis_cmd('EXISTS', ukey('merge', $u)), 'RLaaSEngine off: nothing is written to Redis');

    my $v = uid('merge-on');
    my @c = codes(4, '/rl/merge/off/on/x', h => { 'X-User' => $v });
    is("@c", '200 200 200 429', 'RLaaSEngine on below an off section: limit 3 from the grandparent applies again');
}

# ---------------------------------------------------------------- no limit in parent
{
    my $u = uid('nolimit');
    my @r = map { req('/rl/nolimit/x', h => { 'X-User' => $u }) } 1 .. 5;
    is(join(' ', map { $_->code } @r), '200 200 200 200 200',
        'a section with window/zone/sources but no RLaaSLimit does not limit');
    is(scalar(grep { defined status_of($_) } @r), 0, 'no RLaaSLimit: RLAAS_STATUS unset');
    my @c = codes(3, '/rl/nolimit/child/x', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'child adds RLaaSLimit 2: limiting starts there');
    my $p = pttl(ukey('nolimit', $u));
    ok($p > 0 && $p <= 4_000, "child with only RLaaSLimit inherits the parent's 2s window and zone (PTTL $p)");
}

# ---------------------------------------------------------------- <If>
{
    my $u = uid('if');
    my @c = codes(3, '/rl/if/x', h => { 'X-User' => $u });
    is("@c", '200 200 429', '<If> not matching: the Location limit 2 applies');
    my $g = uid('if-gold');
    my @g = codes(6, '/rl/if/x', h => { 'X-User' => $g, 'X-Tier' => 'gold' });
    is("@g", '200 200 200 200 200 429', '<If> matching: RLaaSLimit 5 inside <If> overrides');
    ok(redis_cmd('EXISTS', ukey('if-gold', $g)), '<If> matching: RLaaSZone inside <If> overrides');
    ok(!redis_cmd('EXISTS', ukey('if', $g)), '<If> matching: the Location zone is not used');
}
{
    my $u = uid('engine-if');
    my @r = map { req('/rl/engine-if/x', h => { 'X-User' => $u }) } 1 .. 5;
    is(join(' ', map { $_->code } @r), '200 200 200 200 200',
        q{RLaaSEngine off inside <If "-R '127.0.0.0/8'">: client exempt});
    is(scalar(grep { defined status_of($_) } @r), 0, 'exempt client: RLAAS_STATUS unset');
    my @c = codes(2, '/rl/engine-if-miss/x', h => { 'X-User' => $u });
    is("@c", '200 429', q{<If "-R '10.0.0.0/8'"> does not match 127.0.0.1: still limited});
}

# ---------------------------------------------------------------- <Directory>/<Files>
{
    my $u = uid('dir');
    my @c = codes(3, '/dir/two.txt', h => { 'X-User' => $u });
    is("@c", '200 200 429', '<Directory>: limit 2');
    my $v = uid('dir');
    my @d = codes(2, '/dir/one.txt', h => { 'X-User' => $v });
    is("@d", '200 429', '<Files> inside <Directory> overrides only the limit (1)');
    ok(redis_cmd('EXISTS', ukey('dir', $v)), '<Files> inherits zone and sources from <Directory>');
}

# ---------------------------------------------------------------- vhost level
{
    my $u = uid('vh');
    my @c = codes(3, '/ok.txt', vhost => 'rlaas_vhost', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'RLaaSLimit at <VirtualHost> level limits every URL of the vhost');
    ok(redis_cmd('EXISTS', 'custom:rl:vh:' . tseg('h.x-user', $u)), 'RLaaSKeyPrefix of the vhost: custom:rl:vh:<id>');
    ok(!redis_cmd('EXISTS', ukey('vh', $u)), 'RLaaSKeyPrefix replaces the default prefix');
    is(hit('/ok.txt', h => { 'X-User' => $u }), 200, 'the vhost settings do not reach the main server');

    my @f = map { req('/rl/vh/free/x', vhost => 'rlaas_vhost', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @f), '200 200 200 200', 'RLaaSEngine off in a Location of the limited vhost');

    my $w = uid('vh3');
    my @t = codes(4, '/rl/vh/three/x', vhost => 'rlaas_vhost', h => { 'X-User' => $w });
    is("@t", '200 200 200 429', 'Location in the vhost overrides the vhost limit (3)');
    ok(redis_cmd('EXISTS', "custom:rl:vh:" . tseg('h.x-user', $w)), 'and keeps the vhost zone, sources and prefix');

    my $x = uid('vhb');
    my @b = codes(4, '/rl/basic/x', vhost => 'rlaas_vhost', h => { 'X-User' => $x });
    is("@b", '200 200 200 429', 'a main-server Location applies inside the vhost (limit 3)');
    ok(redis_cmd('EXISTS', "custom:rl:basic:" . tseg('h.x-user', $x)), 'main-server Location zone + vhost key prefix');
}

done_testing();
