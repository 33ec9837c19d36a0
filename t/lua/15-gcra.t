# gcra: shared bucket behaviour (BucketCommon) plus what only gcra has.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use BucketCommon;
use Math::BigInt;

my $h = ScriptTest->new;
my $r = $h->redis;
sub hit { $h->run('gcra', @_) }

bucket_common($h, 'gcra');

subtest 'STRING K:gcra = TAT in ticks, integer-encoded' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 5000);
    is_deeply hit($K, $L, $W, T0 + 7), [1, 4, 1000, 0], 'fresh';
    is $r->cmd('TYPE', "$K:gcra"), 'string', 'a STRING';
    is $r->cmd('GET', "$K:gcra"), T0 + 1007, 'TAT = now + T (r = 1 tick per ms)';
    is $r->cmd('OBJECT', 'ENCODING', "$K:gcra"), 'int', 'int encoding';
    is $h->pttl("$K:gcra"), 1000, 'PX = time until TAT';
    hit($K, $L, $W, T0 + 7) for 1 .. 4;
    is_deeply hit($K, $L, $W, T0 + 7), [0, 0, 5000, 1000], 'denied';
    is $r->cmd('GET', "$K:gcra"), T0 + 5007, 'a denial does not move TAT';
    # L=1e9, W=1 d: r = 625 ticks per ms, still an integer
    my $K2 = 'rlaas:rate_limit:big';
    hit($K2, 1_000_000_000, 86_400_000, T0);
    is $r->cmd('GET', "$K2:gcra"), T0 * 625 + 54, 'TAT = T0 * 625 + 54 ticks';
    is $r->cmd('OBJECT', 'ENCODING', "$K2:gcra"), 'int', 'int encoding';
};

subtest 'now * r past 2^53: "tat_ms:frac" and still exact' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:fast', 6007, 1000);   # r = 6007, c = 1000
    ok T0 * 6007 > 2**53, 'now_ms * r > 2^53';
    is_deeply hit($K, $L, $W, T0), [1, $L - 1, 1, 0], 'first hit';
    is $r->cmd('GET', "$K:gcra"), T0 . ':1000', 'TAT = T0 ms + 1000/6007';
    my $ok = grep { hit($K, $L, $W, T0)->[0] } 2 .. 6100;
    is $ok, $L - 1, 'a burst of exactly L';
    is $r->cmd('GET', "$K:gcra"), (T0 + 1000) . ':0', 'TAT = T0 + 1 s exactly';
    is_deeply hit($K, $L, $W, T0), [0, 0, 1000, 1], 'denied, retry 1';
    # 1 ms later 6.007 emission intervals have passed: 6 allowed, then not
    my @r = map { hit($K, $L, $W, T0 + 1)->[0] } 1 .. 7;
    is_deeply \@r, [1, 1, 1, 1, 1, 1, 0], '6 after 1 ms';
    is $r->cmd('GET', "$K:gcra"), (T0 + 1000) . ':' . (6 * 1000 - 6007 + 6007), 'TAT carries the fraction';
};

done_testing;
