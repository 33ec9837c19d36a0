# leaky: shared bucket behaviour (BucketCommon) plus what only leaky has.
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
sub hit { $h->run('leaky', @_) }

bucket_common($h, 'leaky');

subtest 'HASH K:lb {level in ticks, ts}; an overflowing hit is not added' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 5000);
    is_deeply hit($K, $L, $W, T0 + 7), [1, 4, 1000, 0], 'missing key is an empty bucket';
    is $r->cmd('TYPE', "$K:lb"), 'hash', 'a HASH';
    is_deeply { @{ $r->cmd('HGETALL', "$K:lb") } }, { level => 1000, ts => T0 + 7 },
        'one hit = c = 1000 ticks, ts in ms';
    hit($K, $L, $W, T0 + 7) for 1 .. 4;
    is hit($K, $L, $W, T0 + 7)->[0], 0, 'full: denied';
    is $r->cmd('HGET', "$K:lb", 'level'), 5000, 'the denied hit was not added';
    is $h->pttl("$K:lb"), 5000, 'TTL = time until empty';
    is_deeply hit($K, $L, $W, T0 + 2507), [1, 1, 3500, 0], '2.5 s: 2.5 drained, one added';
    is $r->cmd('HGET', "$K:lb", 'level'), 3500, 'level 3.5 hits';
};

subtest 'L*c past 2^53: "n:f" and still exact' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:prime', 999_999_937, 86_400_001);  # gcd 1
    $r->cmd('HSET', "$K:lb", 'level', "$L:0", 'ts', T0);
    $r->cmd('PEXPIRE', "$K:lb", 10**9);
    # 1 ms drains 11.57 hits: level L - 12 whole + (W - f) ticks, f = L - 11 W
    my $f = $L - 11 * $W;
    my $n = $L - 12;
    my $fr = $W - $f;
    my $reset = Math::BigInt->new($n + 1)->bmul($W)->badd($fr)->badd($L - 1)->bdiv($L)->numify;
    is_deeply hit($K, $L, $W, T0 + 1), [1, 10, $reset, 0], 'drained 11.57, one added';
    is $r->cmd('HGET', "$K:lb", 'level'), ($n + 1) . ":$fr", 'stored as whole:ticks';
    hit($K, $L, $W, T0 + 1) for 1 .. 10;
    # full: (L - 1) W + (W - f) ticks of water: ceil(W - f / L) = W to empty
    is_deeply hit($K, $L, $W, T0 + 1), [0, 0, $W, 1], 'full: denied, retry 1';
};

done_testing;
