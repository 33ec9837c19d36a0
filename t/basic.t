# Limiting itself: exactly N allowed then 429, the 429 response, the Redis
# state each current strategy leaves (the seeds' keys), RLAAS_STATUS, and
# ErrorDocument 429.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

# ---------------------------------------------------------------- counting
{
    my $u = uid('basic');
    my @c = codes(6, '/rl/basic/count', h => { 'X-User' => $u });
    is("@c", '200 200 200 429 429 429',
        'RLaaSLimit 3: exactly 3 requests allowed, then 429 for every further one');

    my $k = ukey('basic', $u);
    is(redis_cmd('TYPE', $k), 'zset',
        'default strategy (sliding log) keeps a ZSET at K = prefix:zone:identity');
    is(redis_cmd('ZCARD', $k), 3,
        'sliding log: the 3 allowed hits are recorded, the denied ones are not');
    my $pttl = redis_cmd('PTTL', $k);
    ok($pttl > 100_000 && $pttl <= 120_000,
        "sliding log: TTL is 2 x window (60s default) (PTTL $pttl)");
    my $m = redis_cmd('ZRANGE', $k, 0, -1, 'WITHSCORES');
    my $now = redis_time_ms();
    my $good = 0;
    for (my $i = 0; $i < @$m; $i += 2) {
        my ($member, $score) = @$m[$i, $i + 1];
        $good++ if $member eq sprintf('%d-%016d:1:%d', $score, $i / 2 + 1, $i / 2 + 1)
            && $score <= $now && $score > $now - 60_000;
    }
    is($good, 3, 'sliding log members are "<ms>-<running total, 16 digits>:<units>:<count>" scored by Redis time in ms');
}

# ---------------------------------------------------------------- 429
{
    my $u = uid('resp');
    my @ok = map { req('/rl/basic/resp', h => { 'X-User' => $u }) } 1 .. 3;
    is(join(' ', map { status_of($_) // 'unset' } @ok), 'allowed allowed allowed',
        'RLAAS_STATUS=allowed on allowed requests');
    is(join('', map { $_->content } @ok), "ok\n" x 3,
        'allowed requests get the normal content');
    my $res = req('/rl/basic/resp', h => { 'X-User' => $u });
    is($res->code, 429, 'over the limit: 429');
    is($res->content, 'Rate limit exceeded', '429 body is exactly "Rate limit exceeded"');
    like($res->header('Content-Type') // '', qr{^text/plain\b}i, '429 Content-Type is text/plain');
    my $ra = $res->header('Retry-After');
    ok(defined $ra && $ra =~ /^\d+$/ && $ra >= 1 && $ra <= 60,
        'Retry-After is whole seconds, >= 1 and <= the window (' . ($ra // 'undef') . ')');
    is(status_of($res), 'denied', 'RLAAS_STATUS=denied on the 429');
}

# ---------------------------------------------------------------- status log
{
    my $u = uid('slog');
    my $id = uid('tid');
    codes(3, '/rl/errdoc-text/slog', h => { 'X-User' => $u, 'X-Test-Id' => $id });
    my @l = log_lines_with('rlaas_status_log', $id, 3);
    is(join(' ', map { (split ' ', $_)[2] } @l), 'allowed denied denied',
        'CustomLog %{RLAAS_STATUS}e logs allowed, then denied');
    is(join(' ', map { (split ' ', $_)[1] } @l), '200 429 429',
        'and the status codes that went with them');
    my $id2 = uid('tid');
    req('/ok.txt', h => { 'X-Test-Id' => $id2 });
    my @l2 = log_lines_with('rlaas_status_log', $id2, 1);
    is((split ' ', $l2[0] // '')[2], '-',
        'RLAAS_STATUS is not set outside limited sections');
}

# ---------------------------------------------------------------- unlimited
{
    my @c = codes(12, '/rl/not-limited/x');
    is("@c", join(' ', ('200') x 12), 'no RLaaSLimit in scope: never limited');
    is(status_of(req('/rl/not-limited/x')), undef, 'no RLaaSLimit in scope: RLAAS_STATUS unset');
}

# ---------------------------------------------------------------- fixed
{
    my $idx = wait_fixed_window(60_000, 5_000);
    my $u = uid('fixed');
    my @c = codes(4, '/rl/fixed/x', h => { 'X-User' => $u });
    is("@c", '200 200 429 429', 'fixed window, RLaaSLimit 2: 2 allowed, then 429');
    my $base = ukey('fixed', $u);
    my @k = keys_like("$base*");
    is_deeply(\@k, ["$base:$idx"],
        'fixed window keeps one key K:<floor(now_ms/window_ms)> (Redis time)');
    is(redis_cmd('TYPE', "$base:$idx"), 'string', 'fixed window key is a STRING counter');
    ok(redis_cmd('GET', "$base:$idx") >= 2, 'fixed window counter counts the hits');
    my $pttl = redis_cmd('PTTL', "$base:$idx");
    ok($pttl > 0 && $pttl <= 60_000, "fixed window key expires within the window (PTTL $pttl)");
    my $res = req('/rl/fixed/x', h => { 'X-User' => $u });
    my $ra = $res->header('Retry-After') // 0;
    ok($ra >= 1 && $ra <= 60, "fixed window Retry-After within the window ($ra)");
}

# ---------------------------------------------------------------- aliases
for my $alias (qw(fixed-window-algo fixed_window)) {
    wait_fixed_window(60_000, 2_000);
    my $u = uid('alias');
    my $zone = $alias eq 'fixed_window' ? 'alias-fw' : 'alias-fwa';
    is(hit("/rl/alias/$alias", h => { 'X-User' => $u }), 200, "RLaaSStrategy $alias: allowed");
    my @k = keys_like(ukey($zone, $u) . ':*');
    ok(@k == 1 && $k[0] =~ /:\d+$/ && redis_cmd('TYPE', $k[0]) eq 'string',
        "RLaaSStrategy $alias is the fixed window (STRING K:<window>)");
}
for my $alias (qw(sliding-window-algo sliding_log)) {
    my $u = uid('alias');
    my $zone = $alias eq 'sliding_log' ? 'alias-sl' : 'alias-swa';
    is(hit("/rl/alias/$alias", h => { 'X-User' => $u }), 200, "RLaaSStrategy $alias: allowed");
    is(redis_cmd('TYPE', ukey($zone, $u)), 'zset',
        "RLaaSStrategy $alias is the sliding log (ZSET K)");
}

# ---------------------------------------------------------------- seeds' keys
# One user or ip source, no zone, the default prefix: the seeds' layout.
{
    my $bob = 'rlaas:rate_limit:bob';
    redis_cmd('DEL', $bob, keys_like("$bob:*"));
    is(hit('/rl/seed/log', auth => ['bob', 'bob-pw']), 200, 'seed key test: allowed');
    is(redis_cmd('TYPE', $bob), 'zset',
        'defaults: user bob gets exactly the ZSET rlaas:rate_limit:bob (sliding log)');
    my $idx = wait_fixed_window(60_000, 2_000);
    is(hit('/rl/seed/fixed', auth => ['bob', 'bob-pw']), 200,
        'same identity under the fixed window: no WRONGTYPE, allowed');
    is(redis_cmd('TYPE', "$bob:$idx"), 'string',
        'defaults: user bob gets exactly rlaas:rate_limit:bob:<window> (fixed window)');
    redis_cmd('DEL', $bob, keys_like("$bob:*"));
}

# ---------------------------------------------------------------- default ip
{
    my $k = rkey('defip', '127.0.0.1');
    redis_cmd('DEL', $k);
    my @c = codes(3, '/rl/default-ip/x');
    is("@c", '200 200 429', 'RLaaSKeyBy unset: keyed by client IP');
    is(redis_cmd('TYPE', $k), 'zset', 'default source: K = prefix:zone:127.0.0.1');
    redis_cmd('DEL', $k);
}

# ---------------------------------------------------------------- windows
{
    my $u = uid('short');
    my @c = codes(1, '/rl/short/x', h => { 'X-User' => $u });
    my $t1 = time;    # the first hit, whose leaving lets the client in, is in by now
    push @c, codes(2, '/rl/short/x', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'RLaaSWindow 2s, limit 2: 2 allowed, then 429');
    my $res = req('/rl/short/x', h => { 'X-User' => $u });
    my $ra = $res->header('Retry-After') // 0;
    ok($ra >= 1 && $ra <= 2, "Retry-After within a 2s window ($ra)");
    my $pttl = redis_cmd('PTTL', ukey('short', $u));
    ok($pttl > 0 && $pttl <= 4_000, "2s window: TTL at most 2 x window (PTTL $pttl)");
    my $wait = $t1 + 2.3 - time;
    sleep $wait if $wait > 0;
    is(hit('/rl/short/x', h => { 'X-User' => $u }), 200,
        'after the 2s window has passed the client is allowed again');
}
{
    # the second and third requests are denied when they come within the
    # 500ms of the first: a run that a loaded machine made slower (0.4s) is
    # made again with a new identity, at most 3 runs, and the first on time
    # is judged (the last if none was)
    my ($u, @c, $res, $pttl);
    for my $run (1 .. 3) {
        $u = uid('ms');
        my $t0 = time;
        @c = codes(2, '/rl/ms/x', h => { 'X-User' => $u });
        $res = req('/rl/ms/x', h => { 'X-User' => $u });
        $pttl = redis_cmd('PTTL', ukey('ms', $u));
        my $took = time - $t0;
        last if $took <= 0.4;
        diag(sprintf '500ms window: run %d took %.2fs, more than 0.4s: %s', $run, $took,
            $run < 3 ? 'made again' : 'judged as it is');
    }
    is("@c", '200 429', 'RLaaSWindow 500ms, limit 1: second request denied');
    is($res->header('Retry-After'), 1, 'sub-second wait is rounded up to Retry-After: 1');
    ok($pttl > 0 && $pttl <= 1_000, "500ms window: TTL at most 1s (PTTL $pttl)");
    sleep 0.7;
    is(hit('/rl/ms/x', h => { 'X-User' => $u }), 200, 'allowed again after 500ms');
}

# ---------------------------------------------------------------- ErrorDocument
{
    my $u = uid('errdoc');
    is(hit('/rl/errdoc-file/x', h => { 'X-User' => $u }), 200, 'ErrorDocument file: first allowed');
    my $res = req('/rl/errdoc-file/x', h => { 'X-User' => $u });
    is($res->code, 429, 'ErrorDocument 429 /errdocs/429.html: status stays 429');
    is($res->content, "custom 429 page\n", 'ErrorDocument 429 (local URL) wins over the built-in body');
    ok($res->header('Retry-After'), 'Retry-After is kept with an ErrorDocument');
}
{
    my $u = uid('errdoc');
    is(hit('/rl/errdoc-text/x', h => { 'X-User' => $u }), 200, 'ErrorDocument text: first allowed');
    my $res = req('/rl/errdoc-text/x', h => { 'X-User' => $u });
    is($res->code, 429, 'ErrorDocument 429 "text": status stays 429');
    like($res->content, qr/^Custom: slow down\s*$/, 'ErrorDocument 429 (text) wins over the built-in body');
}

done_testing();
