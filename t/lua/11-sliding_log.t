# sliding_log (the default, seeds 000/003): ZSET K, exact rolling window.
# Members "<ms>-<units charged so far, 16 digits>:<units>:<members so far>";
# a service running the seeds' own script may share K (see the end).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use Model;

my $h = ScriptTest->new;
my $r = $h->redis;
sub hit { $h->run('sliding_log', @_) }
# one of our members: scored $ms, the running total $T, its units, our count $C
sub mem { my ($ms, $T, $u, $C) = @_; sprintf '%d-%016d:%d:%d', $ms, $T, $u, $C }

subtest 'burst, exact retry and boundary' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 5000);
    for my $n (1 .. 5) {
        is_deeply hit($K, $L, $W, T0 + 100 * ($n - 1)),
            [1, 5 - $n, 5000, $n == 5 ? 4600 : 0], "hit $n at +" . 100 * ($n - 1);
    }
    is_deeply hit($K, $L, $W, T0 + 500), [0, 0, 4900, 4500], 'denied: retry when the oldest leaves';
    is $r->cmd('ZCARD', $K), 5, 'denied hit not recorded';
    is_deeply hit($K, $L, $W, T0 + 4999), [0, 0, 401, 1], 'one ms early: denied, retry 1';
    is_deeply hit($K, $L, $W, T0 + 5000), [1, 0, 5000, 100], 'at oldest + W: allowed';
    is $r->cmd('ZCARD', $K), 5, 'pruned one, added one';
    is $r->cmd('TYPE', $K), 'zset', "$K is a ZSET";
    is $h->pttl($K), 10000, 'PEXPIRE 2*W';
    my $m = $r->cmd('ZRANGE', $K, 0, -1, 'WITHSCORES');
    is_deeply $m, [(map { (mem(T0 + 100 * $_, $_ + 1, 1, $_ + 1), T0 + 100 * $_) } 1 .. 4),
        mem(T0 + 5000, 6, 1, 6), T0 + 5000],
        'members: their ms, the running total (16 digits), the units and the count, scored by ms';
    like $m->[0], qr/^(\d+)-/, "the seeds' layout: <ms>-<unique>";
    is(($m->[0] =~ /^(\d+)-/)[0], $m->[1], 'the ms prefix is the score');
};

subtest 'never more than L in any rolling window' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:roll', 5, 5000);
    my (@ok_log, @ok_fixed);
    for (my $t = T0 + 3000; $t < T0 + 23000; $t += 37) {
        push @ok_log, $t if hit($K, $L, $W, $t)->[0];
        push @ok_fixed, $t if $h->run('fixed', $K, $L, $W, $t)->[0];
    }
    my $max = sub {
        my @a = @_;
        my $m = 0;
        for my $i (0 .. $#a) {
            my $n = grep { $_ > $a[$i] - $W && $_ <= $a[$i] } @a;
            $m = $n if $n > $m;
        }
        $m;
    };
    is $max->(@ok_log), 5, 'sliding log: at most 5 in any 5 s';
    is $max->(@ok_fixed), 10, 'fixed on the same timeline: 10 across a boundary (seed 000)';
    is scalar(@ok_log), 20, '20 s of traffic: exactly 4 windows worth';
};

subtest 'many hits in one ms, frozen clock: members unique' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:burst', 1000, 60000);
    my $ok = grep { hit($K, $L, $W, T0)->[0] } 1 .. 1000;
    is $ok, 1000, '1000 hits in the same ms all allowed';
    is $r->cmd('ZCARD', $K), 1000, '1000 distinct members';
    is_deeply hit($K, $L, $W, T0), [0, 0, 60000, 60000], '1001st denied';
};

subtest 'no randomness: members are unique by their running total' => sub {
    unlike lua_text('sliding_log'), qr/math\.random/, 'math.random is not used';
    my $K = 'rlaas:rate_limit:same-ms';
    my $ok = grep { hit($K, 100, 1000, T0)->[0] } 1 .. 50;
    is $ok, 50, '50 hits in one ms: all allowed';
    is $r->cmd('ZCARD', $K), 50, 'all 50 recorded';
    my $m = $r->cmd('ZRANGE', $K, 0, -1);
    is_deeply $m, [sort @$m], 'rank order is the order of the running total (same score)';
};

subtest 'cost: one member per request, of its units' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:cost', 10, 10000);
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 1000, 0, cost => 4), [1, 6, 10000, 0], '4 units at +1 s';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 2000, 0, cost => 3), [1, 3, 10000, 0], '3 units at +2 s';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 3000, 0, cost => 0), [1, 3, 9000, 0], 'cost 0: a check';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 3000, 0, cost => 4), [0, 3, 9000, 8000],
        '4 do not fit in 3: denied; they fit once the 4 units of +1 s leave';
    is_deeply $r->cmd('ZRANGE', $K, 0, -1), [mem(T0 + 1000, 4, 4, 1), mem(T0 + 2000, 7, 3, 2)], 'two members';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 11000, 0, cost => 4), [1, 3, 10000, 1000],
        'at +11 s they fit (3 left: 4 more fit in 1 s)';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 11000, 0, cost => 4), [0, 3, 10000, 1000],
        '4 more: after the 3 of +2 s leave';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 11000, 0, cost => 1), [1, 2, 10000, 0], '1 does fit';
    # many members of mixed units: the retry is found by bisection
    my $K2 = 'rlaas:rate_limit:cost2';
    my @u = (1, 5, 2, 1, 1, 7, 3, 1, 2, 2);
    $h->run('sliding_log', $K2, 30, 60000, T0 + 1000 * $_, 0, cost => $u[$_]) for 0 .. 9;
    # 25 used; 9 units need 4 more room: the 1 + 5 of +0 s and +1 s leave at 60 and 61 s
    is_deeply $h->run('sliding_log', $K2, 30, 60000, T0 + 20000, 0, cost => 9), [0, 5, 49000, 41000],
        'retry when enough units have left';
    is_deeply $h->run('sliding_log', $K2, 30, 60000, T0 + 20000, 0, cost => 1), [1, 4, 60000, 0], 'one unit fits';
    is_deeply $h->run('sliding_log', $K2, 30, 60000, T0 + 20000, 0, cost => 5), [0, 4, 60000, 40000],
        'then 5: once the first unit has left';
};

subtest 'running totals near 2^52 start again at 0' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:rebase', 1_000_000_000, 10000);
    my $big = 2**52 - 10;
    $r->cmd('ZADD', $K, T0 - 20000, mem(T0 - 20000, $big - 500, 5, 900),
        T0 - 1000, mem(T0 - 1000, $big - 3, 7, 1000), T0, mem(T0, $big, 3, 1001));
    $r->cmd('PEXPIRE', $K, 10**9);
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 1, 0, cost => 20), [1, $L - 30, 10000, 0],
        '10 live units + 20: allowed';
    is_deeply $r->cmd('ZRANGE', $K, 0, -1), [mem(T0 - 1000, 7, 7, 1), mem(T0, 10, 3, 2), mem(T0 + 1, 30, 20, 3)],
        'the live members rewritten from 0, the dead one gone';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 9001, 0, cost => 0), [1, $L - 23, 1000, 0],
        'and read as before: the 7 of T0 - 1000 left';

    # shared with the seeds' script: their member stays as it is
    my $K2 = 'rlaas:rate_limit:rebase-mixed';
    $r->cmd('ZADD', $K2, T0 - 1000, mem(T0 - 1000, $big - 3, 7, 1000), T0 - 500, (T0 - 500) . '-0.25',
        T0, mem(T0, $big, 3, 1001));
    $r->cmd('PEXPIRE', $K2, 10**9);
    is_deeply $h->run('sliding_log', $K2, $L, $W, T0 + 1, 0, cost => 20), [1, $L - 31, 10000, 0],
        "mixed: 10 of ours + the seeds' 1 + 20: allowed";
    is_deeply $r->cmd('ZRANGE', $K2, 0, -1),
        [mem(T0 - 1000, 7, 7, 1), (T0 - 500) . '-0.25', mem(T0, 10, 3, 2), mem(T0 + 1, 30, 20, 3)],
        "ours rewritten from 0, the seeds' member untouched";
    is_deeply $h->run('sliding_log', $K2, $L, $W, T0 + 9001, 0, cost => 0), [1, $L - 24, 1000, 0],
        "and read as before: the 7 of T0 - 1000 left, the seeds' one of T0 - 500 not yet";
};

subtest 'clock going back' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:back', 3, 10000);
    hit($K, $L, $W, T0 + 20000) for 1 .. 3;
    # 3 s back: the hits "in the future" still count, and the retry
    # includes the 3 s until they were made.
    is_deeply hit($K, $L, $W, T0 + 17000), [0, 0, 13000, 13000], 'denied, retry covers the skew';
    is $h->pttl($K), 23000, 'TTL as the last charge set it (2*W then; a denial writes nothing)';
    # 10 s back, exactly a window: still held, and the TTL must outlive the
    # entries (newest + W - now = 20 s)
    is hit($K, $L, $W, T0 + 10000)->[0], 0, 'a window back: held, denied';
    cmp_ok $h->pttl($K), '>=', 20000, 'TTL covers entries ahead of the clock';
    # 15 s back: more than a window: no state, a fresh log
    is_deeply hit($K, $L, $W, T0 + 5000), [1, 2, 10000, 0], '15 s back: fresh, allowed';
    is $r->cmd('ZCARD', $K), 1, 'the entries ahead are gone; the new hit alone';
    is $h->pttl($K), 20000, 'TTL 2*W again';
};

subtest 'limit lowered under existing entries' => sub {
    my ($K, $W) = ('rlaas:rate_limit:lower', 10000);
    hit($K, 5, $W, T0 + $_ * 1000) for 0 .. 4;
    # L=3 now: 5 entries, the 3rd (index 5-3=2, at +2000) must leave first
    is_deeply hit($K, 3, $W, T0 + 5000), [0, 0, 9000, 7000], 'retry after entry n-L';
    is_deeply hit($K, 3, $W, T0 + 12000), [1, 0, 10000, 1000], 'allowed exactly then';
};

# (c) of issue 24: the seeds' members are read, never erased (before, a
# log whose newest member was not in our layout was deleted whole).
subtest "a log of the seeds' members alone: read, not erased" => sub {
    my $K = 'rlaas:rate_limit:seeds-only';
    my @seeds = (T0, T0 . '-0.39646477363839', T0 + 1, (T0 + 1) . '-0.84048536971234',
        T0 + 2, (T0 + 2) . '-0');
    $r->cmd('ZADD', $K, @seeds);
    $r->cmd('PEXPIRE', $K, 10**9);
    is_deeply hit($K, 5, 10000, T0 + 3), [1, 1, 10000, 0], "the seeds' 3 count: 4 used, 1 left";
    my $m = $r->cmd('ZRANGE', $K, 0, -1, 'WITHSCORES');
    is_deeply [@$m[0 .. 5]], [map { $seeds[$_ ^ 1] } 0 .. 5], "the seeds' 3 members are all there, as written";
    is_deeply [@$m[6, 7]], [mem(T0 + 3, 1, 1, 1), T0 + 3], 'and ours after them';
    is_deeply hit($K, 5, 10000, T0 + 4), [1, 0, 10000, 9996], 'the fifth: the last room; one fits again when the first leaves';
    is_deeply hit($K, 5, 10000, T0 + 5), [0, 0, 9999, 9995], "denied: the seeds' first member leaves at +10 s";
    is $r->cmd('ZCARD', $K), 5, 'nothing erased, the denial not recorded';
    is_deeply hit($K, 5, 10000, T0 + 10000), [1, 0, 10000, 1], "at +10 s the seeds' first is out: allowed";
    is $r->cmd('ZSCORE', $K, T0 . '-0.39646477363839'), undef, 'that one pruned (older than the window)';
    is $r->cmd('ZCARD', $K), 5, 'the rest kept';
};

# Upgrading from the layout before ("<16-digit total>-<units>", no ms):
# such members are ours, read with their units until they leave the
# window, never taken for the seeds' one-unit members, never rewritten.
subtest 'members of the layout before the ms prefix: read with their units' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:layout-before', 10, 10000);
    $r->cmd('ZADD', $K, T0 - 20000, sprintf('%016d-%d', 2, 2), T0 - 2000, sprintf('%016d-%d', 6, 4),
        T0 - 1000, sprintf('%016d-%d', 9, 3));
    $r->cmd('PEXPIRE', $K, 10**9);
    is_deeply $h->run('sliding_log', $K, $L, $W, T0, 0, cost => 2), [1, 1, 10000, 8000],
        '4 + 3 live units of the layout before + 2: 9 used (not 2 + 2); 2 more fit when the 4 leave';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0, 0, cost => 2), [0, 1, 10000, 8000],
        '2 more do not fit: they do once the 4 of T0 - 2000 leave';
    is_deeply $r->cmd('ZRANGE', $K, 0, -1),
        [sprintf('%016d-%d', 6, 4), sprintf('%016d-%d', 9, 3), mem(T0, 11, 2, 1)],
        'the dead one pruned, the live ones kept as they were, ours in the new layout, the total going on';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 8000, 0, cost => 2), [1, 3, 10000, 0], 'at +8 s the 4 left: 3 + 2 + 2';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 9000, 0, cost => 3), [1, 3, 10000, 0],
        'at +9 s the last of them left: 2 + 2 + 3 of ours';
    is_deeply $r->cmd('ZRANGE', $K, 0, -1), [mem(T0, 11, 2, 1), mem(T0 + 8000, 13, 2, 2), mem(T0 + 9000, 16, 3, 3)],
        'only the new layout now';

    # both layouts and the seeds' members: where the layout before ends is
    # found by bisection
    my $K2 = 'rlaas:rate_limit:layout-before-mixed';
    my @z;
    push @z, T0 - 5000 + $_, sprintf('%016d-%d', 2 * $_, 2) for 1 .. 40;
    push @z, T0 - 4000 + $_, (T0 - 4000 + $_) . "-0.$_" for 1 .. 30;
    $r->cmd('ZADD', $K2, @z);
    $r->cmd('PEXPIRE', $K2, 10**9);
    my $m = Model->new('sliding_log', 200, $W);
    $m->hit(T0 - 5000 + $_, 200, 2) for 1 .. 40;
    $m->seeds_hit(T0 - 4000 + $_, 200) for 1 .. 30;
    my @bad;
    for my $i (0 .. 59) {
        my ($t, $c) = (T0 - 3000 + 100 * $i, 1 + $i % 3);
        if ($i % 4 == 3) {
            $m->seeds_hit($t, 200) == $h->run_seeds($K2, 200, $W, $t)->[0] or push @bad, "seeds at $i";
            next;
        }
        my $x = $h->run('sliding_log', $K2, 200, $W, $t, 0, cost => $c);
        my $want = $m->expect($t, $m->hit($t, 200, $c), 200, $c);
        push @bad, "$i: @$x, model @$want" if "@$x" ne "@$want";
    }
    is_deeply \@bad, [], "40 of the layout before (2 units each), the seeds' and ours: every reply as the model";
};

# A large log of the layout before: read by bisection, not member by
# member (Redis counts the commands a script runs).
subtest 'a large log of the layout before: bounded work' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:layout-before-big', 1_000_000, 600_000);
    my $fill = <<'LUA';
local base, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local args = {}
for i = 1, n do
  args[#args + 1] = base + i
  args[#args + 1] = string.format('%016d-%d', i + math.floor(i / 2), 2 - i % 2)
  if #args >= 2000 or i == n then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {}
  end
end
return redis.call('ZCARD', KEYS[1])
LUA
    is $r->cmd('EVAL', $fill, 1, $K, T0 - 300_000, 100_000), 100_000, '100,000 live members of the layout before';
    $r->cmd('PEXPIRE', $K, 10**9);
    my $zrange = sub { ($r->cmd('INFO', 'commandstats') =~ /cmdstat_zrange:calls=(\d+)/)[0] // 0 };
    my $z0 = $zrange->();
    my $x = $h->run('sliding_log', $K, $L, $W, T0, 0, cost => 3);
    is_deeply $x, [1, $L - 150_003, 600_000, 0], '150,000 units of theirs and 3: allowed, every unit counted';
    my $calls = $zrange->() - $z0;
    cmp_ok $calls, '<', 100, "ZRANGE run $calls times (member by member: 400 at least)";
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 1, 0, cost => 0), [1, $L - 150_003, 599_999, 0],
        'and again: the same';
};

# One client with a large limit can hold a huge log; when its hits age out
# together, pruning them all in one call blocked Redis for 409 ms. One call
# prunes at most 256 of the oldest dead members; counting and retry work by
# score and rank, so the verdict is right with the dead ones still there.
subtest 'bounded work per call: 100,000 dead members' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:huge-log', 3, 10000);
    my $now = T0 + 500_000;
    my $fill = <<'LUA';
local base, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local args = {}
for i = 1, n do
  args[#args + 1] = base - n + i
  args[#args + 1] = string.format('%d-%016d:1:%d', base - n + i, i, i)
  if #args >= 2000 or i == n then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {}
  end
end
return redis.call('ZCARD', KEYS[1])
LUA
    is $r->cmd('EVAL', $fill, 1, $K, $now - $W, 100_000), 100_000, '100,000 members older than the window';
    $r->cmd('ZADD', $K, $now - 5000, mem($now - 5000, 100_001, 1, 100_001), $now - 4000, mem($now - 4000, 100_002, 1, 100_002));
    $r->cmd('PEXPIRE', $K, 10**9);
    my $call = sub {
        $r->cmd('EVALSHA', $h->{fake}{sliding_log}, 1, $K, $L, $W, 1, 0, int($_[0] / 1000), ($_[0] % 1000) * 1000);
    };
    # 2 live hits, limit 3: allowed; then full, and the oldest live hit
    # (rank 100,000 before pruning) leaves 5 s from now
    is_deeply $call->($now), [1, 0, $W, 5000], 'one call: right verdict, retry by the oldest live hit';
    my $card = $r->cmd('ZCARD', $K);
    cmp_ok 100_003 - $card, '<=', 256, 'at most 256 dead members pruned in the call (' . (100_003 - $card) . ')';
    cmp_ok 100_003 - $card, '>', 0, 'but some are';
    is $r->cmd('ZCOUNT', $K, '(' . ($now - $W), '+inf'), 3, 'the 3 live hits are all there';
    my ($calls, @bad) = (0);
    while ($r->cmd('ZCARD', $K) > 3 && $calls < 1000) {
        my $x = $call->($now + 1);
        push @bad, "@$x" unless "@$x" eq '0 0 9999 4999';
        $calls++;
    }
    is_deeply \@bad, [], 'every further call: denied, same reset and retry';
    is $r->cmd('ZCARD', $K), 3, "repeated calls drain the dead members ($calls calls)";
    cmp_ok $calls, '>=', int(100_000 / 256), 'at most 256 per call';
    # once the live hits age out, it is allowed again
    is_deeply $call->($now + 5000), [1, 0, $W, 1000], 'the oldest live hit left: allowed, full again';
};

subtest 'members more than a window ahead: the log is no state' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:log-ahead', 2, 10000);
    $r->cmd('ZADD', $K, T0 + 30000, mem(T0 + 30000, 1, 1, 1), T0 + 31000, mem(T0 + 31000, 2, 1, 2));
    is_deeply hit($K, $L, $W, T0 + 15000), [1, 1, 10000, 0], '15 s ahead of a 10 s window: fresh';
    is $r->cmd('ZCARD', $K), 1, 'the old members are gone (UNLINK)';
};

# The same rule with the seeds' members in the log: ours stamped over a
# window ahead are no state and go, all of ours; the seeds' are their own
# state, each: counted while no more than a window ahead, never removed.
subtest "members more than a window ahead, the seeds' among them" => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:log-ahead-mixed', 4, 10000);
    $r->cmd('ZADD', $K, T0 + 14000, mem(T0 + 14000, 1, 1, 1), T0 + 20000, (T0 + 20000) . '-0.5',
        T0 + 30000, mem(T0 + 30000, 3, 2, 2), T0 + 31000, (T0 + 31000) . '-0.7');
    $r->cmd('PEXPIRE', $K, 10**9);
    is_deeply hit($K, $L, $W, T0 + 15000), [1, 2, 15000, 0],
        "ours are no state (the newest 15 s ahead); the seeds' at +20 s counts, +31 s does not";
    is_deeply $r->cmd('ZRANGE', $K, 0, -1), [mem(T0 + 15000, 1, 1, 1), (T0 + 20000) . '-0.5', (T0 + 31000) . '-0.7'],
        "all of ours gone, the seeds' kept, ours from 1 again";
    is_deeply hit($K, $L, $W, T0 + 15000), [1, 1, 15000, 0], 'the next one: 2 of ours and 1 of theirs';
    is_deeply hit($K, $L, $W, T0 + 15000), [1, 0, 15000, 10000], 'the fourth unit';
    is_deeply hit($K, $L, $W, T0 + 15000), [0, 0, 15000, 10000], 'then denied';
    is_deeply hit($K, $L, $W, T0 + 21001), [0, 0, 19999, 3999],
        "at +21.001 s the seeds' +31 s member is within a window: it counts too (5 used)";
    is_deeply hit($K, $L, $W, T0 + 25000), [1, 1, 16000, 0], "ours of +15 s left; the seeds' two count";
    is $r->cmd('ZCARD', $K), 3, "the seeds' two and the new one of ours";
};

subtest 'large values' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:big', 1_000_000_000, 86_400_000);
    is_deeply hit($K, $L, $W, T0 + 1), [1, 999_999_999, 86_400_000, 0], 'L=1e9, W=1 d';
    is_deeply hit($K, $L, $W, T0 + 2), [1, 999_999_998, 86_400_000, 0], 'second';
    is $h->pttl($K), 172_800_000, 'PEXPIRE 2 d';
};

# ------------------------------------------------ sharing with the seeds
# A service built from the seeds runs their script (RLaaS::Seeds, seeds/003
# as written) on rlaas:rate_limit:<userId> with its own clock; the module
# writes the same key for `RLaaSKeyBy user`. Each counts the other's
# members: ours are one member per request (one unit for the seeds'
# ZCARD), theirs one unit each for us. Neither removes a member of the
# other's that is still in the window.
sub seeds { $h->run_seeds(@_) }

# the members of K, member => score
sub members { my %m = @{ $r->cmd('ZRANGE', $_[0], 0, -1, 'WITHSCORES') }; \%m }

# every member of $before still in the window at $now is in $after
sub kept {
    my ($before, $after, $now, $W) = @_;
    return grep { $before->{$_} > $now - $W && !exists $after->{$_} } sort keys %$before;
}

# (a) of issue 24
subtest "the seeds' script and ours alternating on one key: the limit together" => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 10000);
    my $m = Model->new('sliding_log', $L, $W);
    my (@ok, @lost, @bad);
    for my $i (0 .. 39) {
        my $t = T0 + 700 * $i;
        my $before = members($K);
        if ($i % 2 == 0) {
            my $x = seeds($K, $L, $W, $t);
            my $want = $m->seeds_hit($t, $L);
            push @bad, "seeds at +" . ($t - T0) . ": $x->[0], model $want" if $x->[0] != $want;
            push @ok, ['seeds', $t] if $x->[0];
        } else {
            my $x = hit($K, $L, $W, $t);
            my $allowed = $m->hit($t, $L, 1);
            my $want = $m->expect($t, $allowed, $L, 1);
            push @bad, "ours at +" . ($t - T0) . ": @$x, model @$want" if "@$x" ne "@$want";
            push @ok, ['ours', $t] if $x->[0];
        }
        push @lost, map { "+" . ($t - T0) . ": $_" } kept($before, members($K), $t, $W);
    }
    is_deeply \@bad, [], 'every decision of both is the model of one log holding both';
    is_deeply \@lost, [], "no call removed a member of the other's still in the window";
    my @first = grep { $_->[1] < T0 + $W } @ok;
    is scalar(@first), $L, "exactly $L admitted in the first window, together";
    is_deeply [map { $_->[0] } @first], [qw(seeds ours seeds ours seeds)], 'alternating, until the limit';
    my $max = 0;
    for my $a (@ok) {
        my $n = grep { $_->[1] > $a->[1] - $W && $_->[1] <= $a->[1] } @ok;
        $max = $n if $n > $max;
    }
    is $max, $L, "never more than $L in any rolling window";
    cmp_ok scalar(grep { $_->[0] eq 'seeds' } @ok), '>', 2, "the seeds' side admitted in later windows too";
    cmp_ok scalar(grep { $_->[0] eq 'ours' } @ok), '>', 2, 'and ours';
};

# One member per request, whatever its cost: the seeds' ZCARD counts a
# request of ours of cost 3 once. Our side stays exact (3 units).
subtest "cost > 1: exact for us, one request for the seeds' ZCARD" => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:seeds-cost', 5, 10000);
    is_deeply $h->run('sliding_log', $K, $L, $W, T0, 0, cost => 3), [1, 2, 10000, 10000], 'ours: 3 units (3 more fit when they leave)';
    is $r->cmd('ZCARD', $K), 1, 'one member';
    is_deeply [map { seeds($K, $L, $W, T0 + $_)->[0] } 1 .. 5], [1, 1, 1, 1, 0],
        "the seeds' script counts members: it admits 4 more (7 units in the window)";
    is_deeply hit($K, $L, $W, T0 + 10), [0, 0, 9994, 9990], 'ours counts 3 + 4 = 7: denied until our 3 leave';
    is_deeply $h->run('sliding_log', $K, $L, $W, T0 + 10000, 0, cost => 0), [1, 1, 4, 0],
        'at +10 s our 3 left: 4 of theirs, 1 left';
};

# Mixed past the scans' reach (more than 16 of the seeds' members at
# either end of the window): counted member by member, the same answers.
subtest "mixed logs past the scans' reach: member by member, as the model" => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:seeds-walk', 60, 60000);
    my $m = Model->new('sliding_log', $L, $W);
    my @bad;
    my $t = T0;
    my $ours = sub {
        my ($c) = @_;
        my $x = $h->run('sliding_log', $K, $L, $W, $t, 0, cost => $c);
        my $allowed = $m->hit($t, $L, $c);
        my $want = $m->expect($t, $allowed, $L, $c);
        push @bad, "ours cost $c at +" . ($t - T0) . ": @$x, model @$want" if "@$x" ne "@$want";
    };
    my $theirs = sub {
        my $x = seeds($K, $L, $W, $t);
        my $want = $m->seeds_hit($t, $L);
        push @bad, "seeds at +" . ($t - T0) . ": $x->[0], model $want" if $x->[0] != $want;
    };
    for (1 .. 20) { $theirs->(); $t += 10 }
    $ours->(3); $t += 10;
    $ours->(2); $t += 10;
    for (1 .. 20) { $theirs->(); $t += 10 }
    $ours->(4);
    $ours->(9);
    $ours->(0);
    $t = T0 + 60000 + 100; $ours->(5);
    $t = T0 + 60000 + 200; $ours->(5);
    $t = T0 + 60000 + 210; $ours->(30);
    $t = T0 + 60000 + 400; $ours->(30);
    is_deeply \@bad, [], 'every reply matches the model';
};

# The retry in a mixed log: when enough units will have left, for every
# number of units a request may need (a denied request writes nothing, so
# each asks the same log), against the model. Runs of the seeds' members
# between ours of several units: found by bisection beyond 16 units.
subtest "retry with runs of the seeds' members between ours: every cost" => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:seeds-retry', 400, 60000);
    my $m = Model->new('sliding_log', $L, $W);
    my $t = T0;
    for my $run ([30, 5], [1, 9], [45, 1], [0, 12], [20, 2], [60, 7], [3, 3], [25, 40], [10, 1], [40, 6]) {
        my ($seeds, $c) = @$run;
        for (1 .. $seeds) { $h->run_seeds($K, $L, $W, $t) ; $m->seeds_hit($t, $L); $t += 7 }
        $h->run('sliding_log', $K, $L, $W, $t, 0, cost => $c);
        $m->hit($t, $L, $c);
        $t += 11;
    }
    my $rem = $m->expect($t, 1, $L, 0)->[1];
    is $rem, 80, '320 units used';
    my @bad;
    for my $c ($rem + 1 .. $L) {
        my $x = $h->run('sliding_log', $K, $L, $W, $t, 0, cost => $c);
        my $want = $m->expect($t, 0, $L, $c);
        push @bad, "cost $c: @$x, model @$want" if "@$x" ne "@$want";
        last if @bad > 5;
    }
    is_deeply \@bad, [], 'every cost that does not fit (81 to 400): denied, the retry of the model';
};

# Bounded work holds in a mixed log: 100,000 of the seeds' members out of
# the window, a few live of both kinds.
subtest 'bounded work per call, mixed: 100,000 dead members of the seeds' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:huge-mixed', 4, 10000);
    my $now = T0 + 500_000;
    my $fill = <<'LUA';
local base, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local args = {}
for i = 1, n do
  args[#args + 1] = base - n + i
  args[#args + 1] = string.format('%d-0.%d', base - n + i, i)
  if #args >= 2000 or i == n then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {}
  end
end
return redis.call('ZCARD', KEYS[1])
LUA
    is $r->cmd('EVAL', $fill, 1, $K, $now - $W, 100_000), 100_000, "100,000 of the seeds' members, older than the window";
    $r->cmd('ZADD', $K, $now - 5000, mem($now - 5000, 1, 1, 1), $now - 4500, ($now - 4500) . '-0.5',
        $now - 4000, mem($now - 4000, 3, 2, 2));
    $r->cmd('PEXPIRE', $K, 10**9);
    my $call = sub {
        $r->cmd('EVALSHA', $h->{fake}{sliding_log}, 1, $K, $L, $W, 1, 0, int($_[0] / 1000), ($_[0] % 1000) * 1000);
    };
    is_deeply $call->($now), [0, 0, 6000, 5000], "1 + 1 + 2 units live: the fifth denied until the oldest leaves";
    my $card = $r->cmd('ZCARD', $K);
    cmp_ok 100_003 - $card, '<=', 256, 'at most 256 dead members pruned in the call (' . (100_003 - $card) . ')';
    is $r->cmd('ZCOUNT', $K, '(' . ($now - $W), '+inf'), 3, 'the 3 live members are all there';
};

done_testing;
