# token: shared bucket behaviour (BucketCommon) plus what only token has.
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
sub hit { $h->run('token', @_) }

bucket_common($h, 'token');

subtest 'HASH K:tb {tokens in ticks, ts}' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 5000);
    is_deeply hit($K, $L, $W, T0 + 7), [1, 4, 1000, 0], 'missing key is a full bucket';
    is $r->cmd('TYPE', "$K:tb"), 'hash', 'a HASH';
    is_deeply { @{ $r->cmd('HGETALL', "$K:tb") } }, { tokens => 4000, ts => T0 + 7 },
        '4 tokens of c=1000 ticks, ts in ms';
    is $h->pttl("$K:tb"), 1000, 'TTL = time until full';
    hit($K, $L, $W, T0 + 7) for 1 .. 4;
    is hit($K, $L, $W, T0 + 7)->[0], 0, 'empty';
    is_deeply { @{ $r->cmd('HGETALL', "$K:tb") } }, { tokens => 0, ts => T0 + 7 }, 'denial leaves it empty';
    is $h->pttl("$K:tb"), 5000, 'TTL 5000 when empty';
};

subtest 'L*c past 2^53: "n:f" and still exact' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:prime', 999_999_937, 86_400_001);  # gcd 1
    $r->cmd('HSET', "$K:tb", 'tokens', '0:0', 'ts', T0);
    $r->cmd('PEXPIRE', "$K:tb", 10**9);
    # 1 ms refills L/W = 11.57 tokens: 11 whole, f = L - 11 W ticks of W
    my $f = $L - 11 * $W;
    my $reset = Math::BigInt->new($L - 10)->bmul($W)->bsub($f)->badd($L - 1)->bdiv($L)->numify;
    is_deeply hit($K, $L, $W, T0 + 1), [1, 10, $reset, 0], '11 tokens back, one used';
    is $r->cmd('HGET', "$K:tb", 'tokens'), "10:$f", 'stored as whole:ticks';
    hit($K, $L, $W, T0 + 1) for 1 .. 10;
    my $retry = int(($W - $f + $L - 1) / $L);
    # empty: (L * W - f) ticks to go, ceil(W - f / L) = W
    is_deeply hit($K, $L, $W, T0 + 1), [0, 0, $W, $retry], 'empty: exact reset and retry';
    is $retry, 1, '(W - f) / L < 1 ms';
};

subtest 'a limit read per request (mode 1): parts of 1/W and l' => sub {
    my ($K, $W) = ('rlaas:rate_limit:plan', 10000);
    my $run = sub { $h->run('token', $K, $_[0], $W, $_[1], 0, mode => 1, cost => $_[2] // 1) };
    is_deeply $run->(4, T0, 3), [1, 1, 7500, 5000], 'limit 4: 3 tokens used (3 more in 5 s)';
    is_deeply { @{ $r->cmd('HGETALL', "$K:tb") } }, { tokens => 10000, ts => T0, l => 4 },
        '1 token in parts of 1/W, and the limit';
    is $h->pttl("$K:tb"), $W, 'TTL W: under a larger limit it fills later';
    is_deeply $run->(10, T0 + 1000, 2), [1, 0, 10000, 2000], 'limit 10: 1 + 1 s at 10 per 10 s = 2; both used';
    is_deeply $run->(2, T0 + 6000), [1, 0, 10000, 5000], 'limit 2: 5 s refill 1 token at 2 per 10 s; used';
};

done_testing;
