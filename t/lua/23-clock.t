# Time going backwards in Redis (a failover to a host whose clock is
# behind): one rule in all six scripts. State stamped up to one window
# ahead of Redis TIME is held (nothing refills, drains or leaves); state
# stamped more than one window ahead is no state at all (fresh).
#
# The stamp is what each strategy stores: token and leaky their ts, the
# sliding log its members' scores, sliding the start of its stored window,
# gcra the earliest time its TAT can have been written (TAT - W), fixed the
# window its key is named after (a key of a later window is never read).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
my ($L, $W) = (3, 10_000);

# Where in its window the state is written: sliding's stamp is the start
# of its window, so for it the hits are a quarter into one.
sub t1 { my ($s) = @_; T0 + 100 * $W + ($s eq 'fixed' ? 0.75 : 0.25) * $W }

my $n = 0;
for my $s (STRATEGIES) {
    subtest "$s: half a window back: held" => sub {
        my $K = "rlaas:rate_limit:clock-held-$s-" . $n++;
        my $t1 = t1($s);
        is_deeply [map { $h->run($s, $K, $L, $W, $t1)->[0] } 1 .. 3], [1, 1, 1], 'a burst of 3';
        my $x = $h->run($s, $K, $L, $W, $t1 - $W / 2);
        is $x->[0], 0, 'half a window back: still denied';
        is $x->[1], 0, 'remaining 0';
        ok $x->[3] >= 1, "retry counts the skew ($x->[3])";
        is $h->run($s, $K, $L, $W, $t1 - $W / 2 + 1)->[0], 0, 'a ms later: still denied';
    };
    subtest "$s: a window and a half back: fresh" => sub {
        my $K = "rlaas:rate_limit:clock-fresh-$s-" . $n++;
        my $t1 = t1($s);
        $h->run($s, $K, $L, $W, $t1) for 1 .. 3;
        my $back = $t1 - 3 * $W / 2;
        is_deeply [@{ $h->run($s, $K, $L, $W, $back) }[0, 1]], [1, $L - 1],
            'a window and a half back: allowed, as a new client';
        my @more = map { $h->run($s, $K, $L, $W, $back)->[0] } 1 .. 3;
        is_deeply \@more, [1, 1, 0], 'and then limited from there: L in all';
    };
}

# The line between the two: exactly one window ahead is held, a ms more is
# fresh (token: its stamp is exactly the time of the hits).
subtest 'token: one window ahead held, a ms more fresh' => sub {
    my $K = 'rlaas:rate_limit:clock-edge';
    my $t1 = T0 + 50 * $W;
    $h->run('token', $K, $L, $W, $t1) for 1 .. 3;
    is $h->run('token', $K, $L, $W, $t1 - $W)->[0], 0, 'exactly W back: held, denied';
    is $h->run('token', $K, $L, $W, $t1 - $W - 1)->[0], 1, 'W + 1 ms back: fresh, allowed';
};

# sliding keeps counts past 2^24 as "i:prev:curr": the same rule there.
subtest 'sliding, string state: held within a window, fresh beyond' => sub {
    my $big = 16_777_216;
    my $K = 'rlaas:rate_limit:clock-sw-str';
    my $i = int(t1('sliding') / $W);
    $r->cmd('SET', "$K:sw", "$i:0:$big", 'PX', 10**9);
    is $h->run('sliding', $K, $big, $W, t1('sliding') - $W / 2)->[0], 0,
        'stored window one ahead: held, full';
    $r->cmd('SET', "$K:sw", "$i:0:$big", 'PX', 10**9);
    is_deeply [@{ $h->run('sliding', $K, $big, $W, t1('sliding') - 3 * $W / 2) }[0, 1]], [1, $big - 1],
        'stored window two ahead: fresh';
};

done_testing;
