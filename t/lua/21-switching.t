# Switching strategies (seed 000: old keys just expire) and changing the
# limit or window on the same K: never a Redis error, never a lockout.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
my @S = STRATEGIES;

subtest 'every ordered pair, there and back, same K' => sub {
    my $n = 0;
    for my $a (@S) {
        for my $b (@S) {
            my $K = "rlaas:rate_limit:sw-$a-$b";
            my $t = T0 + 1000 * $n++;
            my @err;
            for my $s ($a, $a, $b, $b, $a, $b) {
                my $x = $h->run($s, $K, 2, 1000, $t++);
                push @err, "$s: $x" unless ref $x && @$x == 4;
            }
            is_deeply \@err, [], "$a -> $b -> $a -> $b";
        }
    }
};

subtest 'all six in a row on one K, production scripts too' => sub {
    my $K = 'rlaas:rate_limit:all';
    my @err;
    for my $round (1 .. 3) {
        for my $s (@S, reverse @S) {
            my $x = $h->run($s, $K, 3, 2000, T0 + $round);
            push @err, "$s: $x" unless ref $x;
            $x = $h->run_real($s, "$K-real", 3, 2000);
            push @err, "real $s: $x" unless ref $x;
        }
    }
    is_deeply \@err, [], 'no errors';
    my %type = map { $_ => $r->cmd('TYPE', $_) } @{ $r->cmd('KEYS', "$K*") };
    my %want = ($K => 'zset', "$K:sw" => 'string', "$K:tb" => 'hash',
        "$K:lb" => 'hash', "$K:gcra" => 'string', "$K:" . int((T0 + 1) / 2000) => 'string');
    is $type{$_}, $want{$_}, "$_ is a $want{$_}" for sort keys %want;
};

subtest 'limit and window changes on the same K' => sub {
    my @cfg = ([5, 5000], [7, 1000], [1, 1], [1_000_000_000, 86_400_000],
        [16777216, 1000], [6007, 1000], [3, 60000], [5, 5000]);
    for my $s (@S) {
        my $K = "rlaas:rate_limit:cfg-$s";
        my @err;
        my $t = T0;
        for my $c (@cfg, reverse @cfg) {
            for (1 .. 3) {
                my $x = $h->run($s, $K, @$c, $t);
                push @err, "@$c: $x" unless ref $x && @$x == 4 && !grep { !/^\d+$/ } @$x;
            }
            $t += 10;
        }
        is_deeply \@err, [], "$s: no errors across limit/window changes";
    }
};

subtest 'gcra: a state written under another tick size does not lock out' => sub {
    # r = 1 (L=5, W=5000) written, then read with r = 7 (L=7, W=1000), and
    # the reverse: the integer means different things; never a lockout
    # longer than the window it was written for.
    my $K = 'rlaas:rate_limit:gcra-r';
    $h->run('gcra', $K, 7, 1000, T0) for 1 .. 7;
    is $h->run('gcra', $K, 7, 1000, T0)->[0], 0, 'L=7 W=1 s: full';
    my $x = $h->run('gcra', $K, 5, 5000, T0 + 1);
    is $x->[0], 1, 'read with r=1: not a far-future TAT';
    ok $x->[2] <= 5000, "reset within the new window ($x->[2])";
    $h->run('gcra', $K, 5, 5000, T0 + 1) for 1 .. 4;
    $x = $h->run('gcra', $K, 7, 1000, T0 + 2);
    ok $x->[2] <= 5000 && $x->[3] <= 5000, "r=7 reading r=1 state: bounded (@$x)";
};

done_testing;
