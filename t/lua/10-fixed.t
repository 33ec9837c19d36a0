# fixed: seed 001 behaviour, key layout, exact replies.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
sub hit { $h->run('fixed', @_) }

subtest 'seed 001: 5 at second 59, 5 at second 61, all allowed' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:alice', 5, 60000);
    my $idx = T0 / $W;
    for my $n (1 .. 5) {
        is_deeply hit($K, $L, $W, T0 + 59000),
            [1, 5 - $n, 1000, $n == 5 ? 1000 : 0], "second 59, hit $n";
    }
    is_deeply hit($K, $L, $W, T0 + 59500), [0, 0, 500, 500], '6th in window N denied';
    for my $n (1 .. 5) {
        is_deeply hit($K, $L, $W, T0 + 61000),
            [1, 5 - $n, 59000, $n == 5 ? 59000 : 0], "second 61, hit $n";
    }
    is_deeply hit($K, $L, $W, T0 + 61000), [0, 0, 59000, 59000], '6th in window N+1 denied';
    is $r->cmd('TYPE', "$K:$idx"), 'string', "key $K:$idx is a STRING";
    is $r->cmd('GET', "$K:$idx"), 6, 'INCR counts denied hits too (seed)';
    is $r->cmd('GET', "$K:" . ($idx + 1)), 6, 'next bucket key';
    is $h->pttl("$K:" . ($idx + 1)), 60000, 'TTL = window, set on the first hit';
    is $h->pttl("$K:$idx"), 60000 - 2000, 'not extended by later hits (seed)';
    is_deeply [sort @{ $r->cmd('KEYS', "$K*") }], [sort "$K:$idx", "$K:" . ($idx + 1)],
        'exactly the seed key names';
};

subtest 'bucket boundary to the ms' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:b', 3, 1000);
    hit($K, $L, $W, T0 + 2000) for 1 .. 3;
    is_deeply hit($K, $L, $W, T0 + 2999), [0, 0, 1, 1], 'last ms of the bucket: denied, retry 1';
    is_deeply hit($K, $L, $W, T0 + 3000), [1, 2, 1000, 0], 'first ms of the next: allowed';
};

subtest 'sub-second retry is not truncated' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:c', 10, 1000);
    hit($K, $L, $W, T0) for 1 .. 10;
    is_deeply hit($K, $L, $W, T0 + 900), [0, 0, 100, 100], 'retry 100 ms';
    is_deeply hit($K, $L, $W, T0 + 999, 999), [0, 0, 1, 1], 'retry 1 ms at 999.999';
};

subtest 'clock going back' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:d', 2, 10000);
    hit($K, $L, $W, T0 + 5000) for 1 .. 2;
    is hit($K, $L, $W, T0 + 4000)->[0], 0, 'back within the bucket: still counted';
    hit($K, $L, $W, T0 + 10000) for 1 .. 2;
    is hit($K, $L, $W, T0 + 9000)->[0], 0, 'back into the previous bucket: its count is kept';
};

subtest 'large values stay integers' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:e', 1_000_000_000, 86_400_000);
    my $now = T0 + 12_345_678;
    is_deeply hit($K, $L, $W, $now), [1, 999_999_999, $W - 12_345_678, 0], 'L=1e9, W=1 d';
    my $idx = int($now / $W);
    is $r->cmd('GET', "$K:$idx"), 1, "key index in plain digits ($idx)";
    # W = 1 ms: bucket index is the ms itself (13 digits, not 1.7e+12)
    is_deeply hit($K, 1, 1, $now), [1, 0, 1, 1], 'W=1';
    ok defined $r->cmd('GET', "$K:$now"), "key $K:$now";
    is_deeply hit($K, 1, 1, $now), [0, 0, 1, 1], 'W=1 second hit denied';
};

# Redis Cluster: the module declares the window's key itself (it ends in
# the window number); Redis' clock decides whether that is the window.
subtest 'cluster: the declared window, or RLAASWINDOW and nothing written' => sub {
    my ($K, $L, $W) = ('rlaas:rate_limit:{carol}', 2, 1000);
    my $ms = T0 + 5250;
    my $idx = int($ms / $W);
    my ($sec, $usec) = (int($ms / 1000), ($ms % 1000) * 1000);
    my $call = sub { $r->cmd('EVALSHA', $h->{fake}{fixed}, 1, "$K:$_[0]", $L, $W, $sec, $usec) };
    is_deeply $call->($idx), [1, 1, 750, 0], 'the window Redis reckons: counted';
    is $r->cmd('GET', "$K:$idx"), 1, 'in the declared key';
    for my $other ($idx - 1, $idx + 1) {
        my $e = $call->($other);
        ok(RLaaS::Redis::is_error($e) && $e->message eq "RLAASWINDOW $idx",
            "window $other declared: RLAASWINDOW $idx") or diag(explain $e);
        ok(!$r->cmd('EXISTS', "$K:$other"), "and nothing written under window $other");
    }
    is $r->cmd('GET', "$K:$idx"), 1, 'the real window untouched';
    is_deeply $call->($idx), [1, 0, 750, 750], 'the second: allowed, none left';
    is_deeply $call->($idx), [0, 0, 750, 750], 'the third: denied';
};

done_testing;
