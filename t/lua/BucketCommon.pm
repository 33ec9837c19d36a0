package BucketCommon;
# Behaviour token, leaky and gcra share (same rate, same burst): the
# exact replies are the same for the three, so one set of expectations.
use strict;
use warnings;
use Exporter 'import';
use Test::More;
use ScriptTest;

our @EXPORT = qw(bucket_common);

sub bucket_common {
    my ($h, $s) = @_;
    my $hit = sub { $h->run($s, @_) };
    my $K0 = "rlaas:rate_limit:$s";

    subtest "$s: burst of 5, then one per second (L=5, W=5 s)" => sub {
        my ($K, $L, $W) = ("$K0-a", 5, 5000);
        for my $n (1 .. 5) {
            is_deeply $hit->($K, $L, $W, T0), [1, 5 - $n, 1000 * $n, $n == 5 ? 1000 : 0], "hit $n";
        }
        is_deeply $hit->($K, $L, $W, T0), [0, 0, 5000, 1000], '6th denied, retry 1000';
        is_deeply $hit->($K, $L, $W, T0 + 999), [0, 0, 4001, 1], '999 ms: denied, retry 1';
        is_deeply $hit->($K, $L, $W, T0 + 1000), [1, 0, 5000, 1000], '1000 ms: allowed';
        is_deeply $hit->($K, $L, $W, T0 + 1500), [0, 0, 4500, 500], 'half a token: denied';
        is_deeply $hit->($K, $L, $W, T0 + 3000), [1, 1, 4000, 0], '2 s: two tokens back, one used';
        # denied hits leave nothing behind: 100 denials, then on time
        $hit->($K, $L, $W, T0 + 3000) for 1 .. 2;
        $hit->($K, $L, $W, T0 + 3000 + $_) for 1 .. 100;
        is $hit->($K, $L, $W, T0 + 3999)->[0], 0, 'still denied at 3999';
        is $hit->($K, $L, $W, T0 + 4000)->[0], 1, 'denials did not push the next slot back';
    };

    subtest "$s: sub-second retries are not truncated" => sub {
        my ($K, $L, $W) = ("$K0-b", 10, 1000);
        $hit->($K, $L, $W, T0) for 1 .. 10;
        is_deeply $hit->($K, $L, $W, T0), [0, 0, 1000, 100], 'L=10 W=1 s: retry 100 ms';
        # 1000 per ms: a token every microsecond, retry still >= 1 ms
        my $K2 = "$K0-b2";
        my @x = ((map { $hit->($K2, 1000, 1, T0) } 1 .. 1001), $hit->($K2, 1000, 1, T0 + 1));
        is scalar(grep { $_->[0] } @x[0 .. 999]), 1000, 'L=1000 W=1 ms: 1000 allowed';
        is_deeply $x[1000], [0, 0, 1, 1], 'then denied: retry 1, reset 1';
        is_deeply $x[1001], [1, 999, 1, 0], 'one ms later: full again';
    };

    subtest "$s: rates that are not whole ms (L=3, W=1 s)" => sub {
        my ($K, $L, $W) = ("$K0-c", 3, 1000);
        $hit->($K, $L, $W, T0) for 1 .. 3;
        is_deeply $hit->($K, $L, $W, T0), [0, 0, 1000, 334], 'retry ceil(333.3) = 334';
        is_deeply $hit->($K, $L, $W, T0 + 333), [0, 0, 667, 1], '333: 0.999 token, denied';
        # 334 ms = 1.002 tokens: allowed, 0.002 left; next needs 0.998 = 332.67 ms
        is_deeply $hit->($K, $L, $W, T0 + 334), [1, 0, 1000, 333], '334: allowed';
        is $hit->($K, $L, $W, T0 + 666)->[0], 0, '666: 0.998, denied';
        is_deeply $hit->($K, $L, $W, T0 + 667), [1, 0, 1000, 333], '667: 1.001, allowed (full in 999.7)';
    };

    subtest "$s: L=1" => sub {
        my ($K, $L, $W) = ("$K0-d", 1, 60000);
        is_deeply $hit->($K, $L, $W, T0), [1, 0, 60000, 60000], 'allowed, empty';
        is_deeply $hit->($K, $L, $W, T0 + 59999), [0, 0, 1, 1], 'a ms early';
        is_deeply $hit->($K, $L, $W, T0 + 60000), [1, 0, 60000, 60000], 'on time';
    };

    subtest "$s: never more than L after a long idle" => sub {
        my ($K, $L, $W) = ("$K0-e", 5, 5000);
        $hit->($K, $L, $W, T0);
        is_deeply $hit->($K, $L, $W, T0 + 86_400_000 * 400), [1, 4, 1000, 0], '400 days idle: full, not more';
        my $ok = grep { $hit->($K, $L, $W, T0 + 86_400_000 * 400)->[0] } 1 .. 10;
        is $ok, 4, 'only 4 more in the same ms';
        is_deeply $hit->($K, $L, $W, T0 + 86_400_000 * 400 + 5000), [1, 4, 1000, 0],
            'exactly full one window later';
    };

    subtest "$s: clock going back up to a window mints nothing" => sub {
        my ($K, $L, $W) = ("$K0-f", 5, 5000);
        $hit->($K, $L, $W, T0 + 10000) for 1 .. 5;
        # 4 s back: stored time stays, the retry counts the skew
        is_deeply $hit->($K, $L, $W, T0 + 6000), [0, 0, 9000, 5000], '4 s back: denied';
        is_deeply $hit->($K, $L, $W, T0 + 8000), [0, 0, 7000, 3000], 'still before the stored time';
        is $hit->($K, $L, $W, T0 + 10999)->[0], 0, 'no refill before stored time + 1 s';
        is_deeply $hit->($K, $L, $W, T0 + 11000), [1, 0, 5000, 1000], 'then one token';
        # a small step back after that: still nothing extra
        is $hit->($K, $L, $W, T0 + 10500)->[0], 0, 'back again 500 ms: denied';
    };

    subtest "$s: clock going back more than a window: a new bucket" => sub {
        my ($K, $L, $W) = ("$K0-f2", 5, 5000);
        $hit->($K, $L, $W, T0 + 10000) for 1 .. 5;
        is_deeply $hit->($K, $L, $W, T0 + 4999), [1, 4, 1000, 0], '5001 ms back: as a new client';
        my $ok = grep { $hit->($K, $L, $W, T0 + 4999)->[0] } 1 .. 10;
        is $ok, 4, 'a full bucket of 5, not more';
    };

    subtest "$s: L=1e9, W=1 d" => sub {
        my ($K, $L, $W) = ("$K0-g", 1_000_000_000, 86_400_000);
        # 1e9 per day = 11.57 per ms; ticks: c=54, r=625
        my @x = ((map { $hit->($K, $L, $W, T0) } 1 .. 31), $hit->($K, $L, $W, T0 + 2));
        is_deeply $x[0], [1, $L - 1, 1, 0], 'first hit; full again in 1 ms';
        is_deeply $x[30], [1, $L - 31, 3, 0], '31 used: 31 * 54 / 625 -> 3 ms';
        is_deeply $x[31], [1, $L - 9, 1, 0], '2 ms later: 23 back (23.15), one used';
    };
}

1;
