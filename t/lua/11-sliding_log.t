# sliding_log (the default, seeds 000/003): ZSET K, exact rolling window.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
sub hit { $h->run('sliding_log', @_) }

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
    like $m->[0], qr/^\d{13}-\S+$/, "member <ms>-<random> ($m->[0])";
    my ($ms) = $m->[0] =~ /^(\d+)-/;
    is $m->[1], $ms, 'score is the ms of the member';
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

subtest 'members stay unique when math.random repeats (old Redis)' => sub {
    # Redis < 7 reseeds math.random identically for every call; emulate
    # that with a constant in a variant of the fake-clock script.
    my $t = fake_text(lua_text('sliding_log'));
    my $n = ($t =~ s/math\.random\(\)/0.17082803611217/g);
    is $n, 1, 'one math.random() call in the script';
    my $sha = $r->cmd('SCRIPT', 'LOAD', $t);
    my $K = 'rlaas:rate_limit:oldredis';
    my $ok = 0;
    for (1 .. 50) {
        my $x = $r->cmd('EVALSHA', $sha, 1, $K, 100, 1000, T0 / 1000, 0);
        $ok += $x->[0];
    }
    is $ok, 50, 'all 50 allowed';
    is $r->cmd('ZCARD', $K), 50, 'all 50 recorded despite equal random suffixes';
};

subtest 'clock going back' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:back', 3, 10000);
    hit($K, $L, $W, T0 + 20000) for 1 .. 3;
    # 3 s back: the hits "in the future" still count, and the retry
    # includes the 3 s until they were made.
    is_deeply hit($K, $L, $W, T0 + 17000), [0, 0, 13000, 13000], 'denied, retry covers the skew';
    is $h->pttl($K), 20000, 'TTL 2*W';
    # 10 s back, exactly a window: still held, and the TTL must outlive the
    # entries (newest + W - now = 20 s)
    is hit($K, $L, $W, T0 + 10000)->[0], 0, 'a window back: held, denied';
    is $h->pttl($K), 20000, 'TTL covers entries ahead of the clock';
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
  args[#args + 1] = base - i
  args[#args + 1] = 'dead-' .. i
  if #args >= 2000 or i == n then
    redis.call('ZADD', KEYS[1], unpack(args))
    args = {}
  end
end
return redis.call('ZCARD', KEYS[1])
LUA
    is $r->cmd('EVAL', $fill, 1, $K, $now - $W, 100_000), 100_000, '100,000 members older than the window';
    $r->cmd('ZADD', $K, $now - 5000, 'live-1', $now - 4000, 'live-2');
    $r->cmd('PEXPIRE', $K, 10**9);
    my $call = sub {
        $r->cmd('EVALSHA', $h->{fake}{sliding_log}, 1, $K, $L, $W, int($_[0] / 1000), ($_[0] % 1000) * 1000);
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
    $r->cmd('ZADD', $K, T0 + 30000, 'a', T0 + 31000, 'b');
    is_deeply hit($K, $L, $W, T0 + 15000), [1, 1, 10000, 0], '15 s ahead of a 10 s window: fresh';
    is $r->cmd('ZCARD', $K), 1, 'the old members are gone (UNLINK)';
};

subtest 'large values' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:big', 1_000_000_000, 86_400_000);
    is_deeply hit($K, $L, $W, T0 + 1), [1, 999_999_999, 86_400_000, 0], 'L=1e9, W=1 d';
    is_deeply hit($K, $L, $W, T0 + 2), [1, 999_999_998, 86_400_000, 0], 'second';
    is $h->pttl($K), 172_800_000, 'PEXPIRE 2 d';
};

done_testing;
