# sliding (seed 002): two counters in one small key K:sw, exact integers.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use Math::BigInt;

my $h = ScriptTest->new;
my $r = $h->redis;
sub hit { $h->run('sliding', @_) }
my $B = 2**24;
sub packed { my ($p, $c, $i) = @_; ($p * $B + $c) * 4 + $i % 4 }

subtest 'seed 002 estimate, L=5 W=5000' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 5000);
    for my $n (1 .. 5) {
        my $e = 100 * ($n - 1);
        is_deeply hit($K, $L, $W, T0 + $e),
            [1, 5 - $n, 10000 - $e, $n == 5 ? 5600 : 0], "hit $n";
    }
    is_deeply hit($K, $L, $W, T0 + 500), [0, 0, 9500, 5500], '6th denied';
    is $r->cmd('GET', "$K:sw"), packed(0, 5, T0 / $W), 'denied hit not counted';
    # next window, e=999: ceil(5 * 4001/5000) = 5 -> 5 + 1 > 5
    is_deeply hit($K, $L, $W, T0 + 5999), [0, 0, 4001, 1], 'e=999: denied, retry 1';
    # e=1000: 5 * 4000/5000 = 4 -> 4 + 1 <= 5
    is_deeply hit($K, $L, $W, T0 + 6000), [1, 0, 9000, 1000], 'e=1000: allowed';
    is_deeply hit($K, $L, $W, T0 + 6999), [0, 0, 8001, 1], 'e=1999: ceil(3.001) + 1 + 1 > 5';
    is_deeply hit($K, $L, $W, T0 + 7000), [1, 0, 8000, 1000], 'e=2000: 3 + 1 + 1 <= 5';
    is $r->cmd('GET', "$K:sw"), packed(5, 2, T0 / $W + 1), 'packed (prev, curr, i mod 4)';
    is $r->cmd('OBJECT', 'ENCODING', "$K:sw"), 'int', 'integer-encoded';
    is $h->pttl("$K:sw"), 8000, 'dies at the end of window i+1';
};

subtest 'exact comparison at and around equality' => sub {
    my ($K, $W) = ('rlaas:rate_limit:eq', 1000);
    hit($K, 4, $W, T0 + 10) for 1 .. 4;
    # 4 * (1000 - e) + 1000 <= 4000  <=>  e >= 250 (equality at 250)
    is_deeply hit($K, 4, $W, T0 + 1249), [0, 0, 751, 1], 'e=249 denied';
    is_deeply hit($K, 4, $W, T0 + 1250), [1, 0, 1750, 250], 'e=250 allowed (estimate exactly 4)';
    my $K2 = 'rlaas:rate_limit:eq3';
    hit($K2, 3, $W, T0 + 10) for 1 .. 3;
    # 3 * (1000 - e) + 1000 <= 3000  <=>  e >= 333.3
    is_deeply hit($K2, 3, $W, T0 + 1333), [0, 0, 667, 1], 'e=333 denied (estimate 3.001)';
    is hit($K2, 3, $W, T0 + 1334)->[0], 1, 'e=334 allowed';
    # remaining is L - ceil(estimate): prev 3, e=500 -> 1.5 + 0 -> ceil 2 -> 1
    my $K3 = 'rlaas:rate_limit:eq4';
    hit($K3, 10, $W, T0 + 10) for 1 .. 3;
    is_deeply hit($K3, 10, $W, T0 + 1500), [1, 10 - 2 - 1, 1500, 0], 'remaining rounds the estimate up';
};

subtest 'sub-second retry not truncated' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:sub', 10, 1000);
    hit($K, $L, $W, T0) for 1 .. 10;
    # next window: ceil(10 * (1000 - e) / 1000) + 1 <= 10 from e = 100
    is_deeply hit($K, $L, $W, T0 + 999), [0, 0, 1001, 101], 'retry 101 ms';
    is hit($K, $L, $W, T0 + 1099)->[0], 0, 'e=99 denied';
    is hit($K, $L, $W, T0 + 1100)->[0], 1, 'e=100 allowed';
};

subtest 'L=1: a full window waits two windows' => sub {
    my ($K, $W) = ('rlaas:rate_limit:one', 1000);
    is_deeply hit($K, 1, $W, T0 + 300), [1, 0, 1700, 1700], 'allowed; next only at window i+2';
    is hit($K, 1, $W, T0 + 1999)->[0], 0, 'window i+1, last ms: denied';
    is_deeply hit($K, 1, $W, T0 + 2000), [1, 0, 2000, 2000], 'window i+2 start: allowed';
};

subtest 'clock back one window: held at the start of the stored window' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:back1', 2, 1000);
    hit($K, $L, $W, T0 + 5000) for 1 .. 2;
    my $v = $r->cmd('GET', "$K:sw");
    # now in window 4, state of window 5: nothing resets, retry counts the
    # 500 ms until window 5 starts plus window 6's e=500
    is_deeply hit($K, $L, $W, T0 + 4500), [0, 0, 2500, 2000], 'denied, not reset';
    is $r->cmd('GET', "$K:sw"), $v, 'state unchanged';
    is $h->pttl("$K:sw"), 2500, 'TTL to the end of window 6';
    is hit($K, $L, $W, T0 + 6499)->[0], 0, 'real time catches up: 6499 denied';
    is hit($K, $L, $W, T0 + 6500)->[0], 1, '6500 allowed';
};

subtest 'stored windows i-1, i-2 (stale), and garbage' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:stale', 5, 1000);
    my $i = (T0 + 20500) / 1000 - 0.5;
    $r->cmd('SET', "$K:sw", packed(3, 4, $i - 1), 'PX', 100000);
    is_deeply hit($K, $L, $W, T0 + 20500), [1, 5 - 2 - 1, 1500, 0], 'i-1: its curr is prev (4 * 0.5 = 2)';
    $r->cmd('SET', "$K:sw", packed(3, 4, $i - 2), 'PX', 100000);
    is_deeply hit($K, $L, $W, T0 + 20500), [1, 4, 1500, 0], 'i-2: stale, empty';
    $r->cmd('SET', "$K:sw", 'garbage', 'PX', 100000);
    is_deeply hit($K, $L, $W, T0 + 20500), [1, 4, 1500, 0], 'garbage: empty, no error';
};

subtest 'string fallback once a count reaches 2^24' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:str', 16777216, 1000);
    my $i = (T0 + 3000) / 1000;
    is_deeply hit($K, $L, $W, T0 + 3250), [1, $L - 1, 1750, 0], 'allowed';
    is $r->cmd('GET', "$K:sw"), packed(0, 1, $i), 'L = 2^24, small counts: still packed';
    # curr at 2^24 - 1; one more makes it 2^24, which no longer fits
    $r->cmd('SET', "$K:sw", packed(0, $B - 1, $i), 'PX', 100000);
    # retry: next window at e2 = 1000 - floor((L-1) * 1000 / L) = 1
    is_deeply hit($K, $L, $W, T0 + 3250), [1, 0, 1750, 751], 'the L-th hit';
    is $r->cmd('GET', "$K:sw"), "$i:0:$L", 'value "i:prev:curr"';
    is_deeply hit($K, $L, $W, T0 + 3600), [0, 0, 1400, 401], 'denied';
    # next window, e=500: prev 2^24 weighs 2^23
    is_deeply hit($K, $L, $W, T0 + 4500), [1, $L / 2 - 1, 1500, 0], 'next window: half weight';
    is $r->cmd('GET', "$K:sw"), ($i + 1) . ":$L:1", 'rolled over, still a string';
    # clock back into the window before: held at the stored window (exact
    # index); R = L - 2, e1 = 1000 - floor(R * 1000 / L) = 1; plus 500 ms
    is_deeply hit($K, $L, $W, T0 + 3500), [0, 0, 500 + 2000, 500 + 1],
        'clock 1 s back: held, not reset';
    # several windows back: the stored window is more than one ahead, no state
    $r->cmd('SET', "$K-back:sw", ($i + 1) . ":$L:1", 'PX', 100000);
    is_deeply hit("$K-back", $L, $W, T0 + 1500), [1, $L - 1, 1500, 0], 'clock 3 s back: fresh';
    # a packed value read under a big limit and a string under a small one
    $r->cmd('SET', "$K:sw", packed(0, 7, $i + 1), 'PX', 100000);
    is hit($K, $L, $W, T0 + 4500)->[1], $L - 8, 'packed state, L >= 2^24';
    is $r->cmd('GET', "$K:sw"), packed(0, 8, $i + 1), 'stays packed';
    $r->cmd('SET', "$K:sw", ($i + 1) . ":0:8", 'PX', 100000);
    is hit($K, 10, $W, T0 + 4500)->[1], 10 - 9, 'string state, small L';
    is $r->cmd('GET', "$K:sw"), packed(0, 9, $i + 1), 'packed again';
    # a string written under W = 1 s read under W = 1 d: its index lies
    # far ahead, which is no clock skew: start afresh, no lockout
    $r->cmd('SET', "$K:sw", ($i + 1) . ":0:$L", 'PX', 100000);
    is_deeply hit($K, $L, 86_400_000, T0 + 4500), [1, $L - 1, 2 * 86_400_000 - 4500, 0],
        'window grown: fresh, not held for ages';
};

subtest 'L=1e9, W=1 d: products past 2^53 stay exact' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:huge', 1_000_000_000, 86_400_000);
    my $i = T0 / $W;
    is_deeply hit($K, $L, $W, T0 + 5), [1, $L - 1, 2 * $W - 5, 0], 'first hit';
    # previous window full (L hits), half way through: ceil(L * 0.5) = L/2
    $r->cmd('SET', "$K:sw", ($i - 1) . ":0:$L", 'PX', 10**9);
    is_deeply hit($K, $L, $W, T0 + $W / 2), [1, $L / 2 - 1, 2 * $W - $W / 2, 0], 'half-weight prev';
    # current window full: next hit at e2 = W - floor((L-1) * W / L) in i+1
    $r->cmd('SET', "$K:sw", "$i:0:$L", 'PX', 10**9);
    my $e2 = $W - Math::BigInt->new($L - 1)->bmul($W)->bdiv($L)->numify;
    is $e2, 1, 'e2 = 1 (floor(86399999.9136))';
    my $now = T0 + 1000;
    is_deeply hit($K, $L, $W, $now), [0, 0, 2 * $W - 1000, $W - 1000 + $e2], 'denied, exact retry';
    is hit($K, $L, $W, T0 + $W + $e2 - 1)->[0], 0, 'a ms before: denied';
    is hit($K, $L, $W, T0 + $W + $e2)->[0], 1, 'at retry: allowed';
    # prev window at L, e = W - 1: weight ceil(L / W) = 12
    $r->cmd('SET', "$K:sw", ($i - 1) . ":0:$L", 'PX', 10**9);
    is_deeply hit($K, $L, $W, T0 + $W - 1), [1, $L - 12 - 1, $W + 1, 0], 'ceil(1e9 * 1 / 86400000) = 12';
};

subtest 'TTL bound: never into window i+2' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:ttl', 5, 3000);
    for my $t (0, 1, 1499, 2999, 3000, 7777) {
        hit($K, $L, $W, T0 + $t);
        my $i = int((T0 + $t) / $W);
        is $h->pttl("$K:sw"), ($i + 2) * $W - (T0 + $t), "at +$t: until window i+2";
    }
};

done_testing;
