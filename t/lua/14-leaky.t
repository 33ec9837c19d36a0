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

# A bucket filled under one limit and read under a smaller one in the same
# ms: L whole hits and a fraction of water, more than the bucket holds now.
subtest 'limit or window changed while time stands still: remaining never negative' => sub {
    my $K = 'rlaas:rate_limit:shrunk';
    $h->run('leaky', $K, 2, 1000, T0) for 1 .. 2;     # level 2 of 2 (c = 500)
    my $x = hit($K, 1, 999, T0);                      # c = 999: 1 hit + 1 tick
    is $x->[0], 0, 'over the new limit: denied';
    is $x->[1], 0, 'remaining 0, not -1';
    ok $x->[3] >= 1, "retry >= 1 ($x->[3])";
    # the same through many limit/window pairs, in one ms
    my @neg;
    my $n = 0;
    for my $a ([5, 5000], [3, 7], [7, 3001], [2, 1000], [1, 999], [4, 7], [1, 1]) {
        for my $b ([1, 999], [1, 1000], [2, 1001], [3, 6], [1, 3]) {
            my $k = "$K-" . $n++;
            hit($k, @$a, T0 + 5) for 1 .. $a->[0];
            my $y = hit($k, @$b, T0 + 5);
            push @neg, "@$a -> @$b: @$y" if grep { $_ < 0 } @$y;
        }
    }
    is_deeply \@neg, [], 'no reply field below zero';
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
