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

subtest 'a limit read per request (mode 1): "l:ms:ticks", the debt carried over' => sub {
    my ($K, $W) = ('rlaas:rate_limit:plan', 10000);
    my $run = sub { $h->run('gcra', $K, $_[0], $W, $_[1], 0, mode => 1, cost => $_[2] // 1) };
    is_deeply $run->(4, T0), [1, 3, 2500, 0], 'limit 4: one hit, 2.5 s of debt';
    is $r->cmd('GET', "$K:gcra"), '4:' . (T0 + 2500) . ':0', 'the limit is kept with the TAT';
    is_deeply $run->(10, T0), [1, 8, 2000, 0], 'limit 10 now: the debt of 1 token carried, one more';
    is $r->cmd('GET', "$K:gcra"), '10:' . (T0 + 2000) . ':0', 'TAT in the new limit\'s terms';
    is_deeply $run->(3, T0 + 1000), [1, 1, 6667, 0], 'limit 3: 1 s drained 1 token at 10 per 10 s; 1 + 1 of 3';
    is $r->cmd('GET', "$K:gcra"), '3:' . (T0 + 1000 + 6666) . ':2', '2 tokens at 3 per 10 s: 6666 2/3 ms';
    is_deeply $run->(1, T0 + 1000, 0), [0, 0, 6667, 6667],
        'limit 1: more debt than its bucket; a check: denied until the debt drains (at 3 per 10 s)';
    ok !$r->cmd('EXISTS', "$K:tb"), 'one key only';
};

done_testing;
