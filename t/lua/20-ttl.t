# Every key written carries a TTL after every call, and an idle client
# leaves nothing behind (real clock, short windows, generous waits).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use Time::HiRes qw(sleep time);

my $h = ScriptTest->new;
my $r = $h->redis;

# Fake clock: a timeline with bursts, denials, idle gaps, a clock going
# back and limit changes; after each call the key written has a TTL > 0.
for my $s (STRATEGIES) {
    my $K = "rlaas:rate_limit:ttl-$s";
    my @steps = ((map { [5, 5000, 0] } 1 .. 8), [5, 5000, 999], [5, 5000, 1],
        [5, 5000, 12000], [5, 5000, -3000], [5, 5000, -7000], [5, 5000, 20000],
        [3, 1000, 0], [3, 1000, 0], [3, 1000, 0], [3, 1000, 0], [50, 60000, 1],
        [1, 1, 0], [1, 1, 1], [1, 1, 0], [16777216, 1000, 0], [5, 5000, 1]);
    my $now = T0 + 123;
    my $bad = 0;
    for my $st (@steps) {
        my ($L, $W, $dt) = @$st;
        $now += $dt;
        my $x = $h->run($s, $K, $L, $W, $now);
        $bad++, diag "$s: error $x" unless ref $x;
        my @keys = grep { $r->cmd('EXISTS', $_) } ($K, @{ $r->cmd('KEYS', "$K:*") });
        $bad++, diag "$s: no key after a call" unless @keys;
        # the key this call wrote: > 0; older ones (fixed's previous
        # buckets), and the key of a call that was denied (it writes
        # nothing), may be in their last ms (PTTL 0, as Redis reports it)
        my $mine = key_of($s, $K, $W, $now);
        for my $k (@keys) {
            my $t = $h->pttl($k);
            $bad++, diag "$s at +" . ($now - T0) . ": $k PTTL $t"
                unless $t > 0 || ($t == 0 && ($k ne $mine || !$x->[0]));
        }
        $bad++, diag "$s: $mine missing" unless grep { $_ eq $mine } @keys;
    }
    is $bad, 0, "$s: every key has a TTL > 0 after every call";
}
is_deeply [$h->no_ttl], [], 'no key was ever written without a TTL';

# Real clock, production scripts: W = 200 ms; after 2 s nothing is left.
# (The longest TTL any script sets here is 2 W = 400 ms.)
my $t0 = time;
for my $s (STRATEGIES) {
    my $K = "rlaas:rate_limit:idle-$s";
    my $ok = 0;
    for (1 .. 7) {
        my $x = $h->run_real($s, $K, 5, 200);
        $ok++ if ref $x;
    }
    is $ok, 7, "$s: 7 real calls answered";
    my @k = grep { $r->cmd('PTTL', $_) > 0 } ($K, @{ $r->cmd('KEYS', "$K:*") });
    ok @k >= 1, "$s: keys present with a TTL (@k)";
}
sleep 2 - (time - $t0) if time - $t0 < 2;
for my $s (STRATEGIES) {
    my $K = "rlaas:rate_limit:idle-$s";
    my @left = grep { $r->cmd('EXISTS', $_) } ($K, @{ $r->cmd('KEYS', "$K:*") });
    is_deeply \@left, [], "$s: nothing left after the TTLs ran out";
}
done_testing;
