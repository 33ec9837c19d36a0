# The lease script (RLaaSLease, lua/lease.lua): a request decided as its
# strategy decides it and, if allowed, a portion of min(want, max(cost,
# remaining / 8)) units charged at once; the lease lasts min(W / 10, 1 s),
# for fixed and sliding no longer than the window. The units are the
# strategy's own: its script sees them spent. Several policies in one
# call: all or nothing, a portion for each that asks one. At a fake clock.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new(shadow => 0);
my $r = $h->redis;
my $lease = $r->cmd('SCRIPT', 'LOAD', fake_text(lua_text('lease')));
my $n = 0;
sub K { 'rlaas:rate_limit:lease-' . $n++ }

# lease(strategy, K, L, W, cost, want, ms, mode, back, at): the 16
# integers, or the error
sub lease {
    my ($s, $K, $L, $W, $c, $want, $ms, $mode, $back, $at) = @_;
    my $sec = int($ms / 1000);
    return $r->cmd('EVALSHA', $lease, 1, key_arg($s, $K), STRATEGY_ID($s), $L, $W, $c,
        $mode // 0, $want, $back // 0, $at // 0, $sec, ($ms - $sec * 1000) * 1000);
}

subtest 'portions of an eighth of what remains, never more than the limit' => sub {
    for my $s (qw(fixed sliding token leaky gcra)) {
        my $K = K();
        my ($sum, @g) = (0);
        for my $i (1 .. 200) {
            my $x = lease($s, $K, 300, 86_400_000, 1, 1_000_000, T0 + 1000 + $i);
            last unless $x->[0];
            push @g, $x->[5];
            $sum += $x->[5];
        }
        is $sum, 300, "$s: the grants add up to the limit exactly";
        is_deeply [@g[0 .. 3]], [37, 32, 28, 25], "$s: 300/8, 263/8, 231/8, 203/8";
        is $g[-1], 1, "$s: the last ones of one unit (the request's cost)";
        my $x = lease($s, $K, 300, 86_400_000, 1, 1_000_000, T0 + 2000);
        is $x->[0], 0, "$s: then refused";
        is_deeply [@$x[4 .. 7]], [0, 0, 0, 0], "$s: nothing granted";
        cmp_ok $x->[3], '>', 0, "$s: and told when to come back";
    }
};

subtest 'what a lapsed portion left is given back first' => sub {
    for my $s (qw(fixed sliding token leaky gcra)) {
        my $K = K();
        my $x = lease($s, $K, 300, 86_400_000, 1, 1_000_000, T0 + 1000);
        is_deeply [@$x[1, 5, 9]], [263, 37, 0], "$s: a portion of 37 (nothing to give back)";
        is $x->[13], T0 + 1000, "$s: charged at Redis' time, which the reply says";
        # the server spent 7 of them; 30 lapsed: given back with the next;
        # a bucket less what refill made good in 2 s (1 unit of 300 a day);
        # never to the sliding window (a state ahead of Redis' clock would
        # take it in its current count)
        my $b = $s eq 'sliding' ? 0 : $s =~ /^(?:token|leaky|gcra)$/ ? 29 : 30;
        $x = lease($s, $K, 300, 86_400_000, 1, 1_000_000, T0 + 3000, 0, 30, T0 + 1000);
        is $x->[9], $b, "$s: the lapsed units given back ($b of 30)";
        is $x->[5], int((263 + $b) / 8), "$s: and the next portion is an eighth of what remains then";
        is $x->[1], 263 + $b - int((263 + $b) / 8), "$s: remaining counts them";
        # never above the fresh state: more than was charged is not given
        $x = lease($s, K(), 300, 86_400_000, 1, 1, T0 + 1000, 0, 250, T0 + 990);
        is $x->[9], 0, "$s: nothing given back where nothing was charged";
        is $x->[1], 299, "$s: the request decided as usual";
    }
    # fixed: a window gone is not given back to the next one
    my $K = K();
    lease('fixed', $K, 300, 60_000, 1, 1_000_000, T0 + 59_000);
    my $x = lease('fixed', $K, 300, 60_000, 1, 1_000_000, T0 + 61_000, 0, 30, T0 + 59_000);
    is $x->[9], 0, 'fixed: units of a window gone stay with it';
    is $x->[1], 300 - 37, 'and the new window counts only its own';
    # the identity reset since (the console's forget leaves a mark): what
    # was held then is not given back into the fresh state
    my $forget = $r->cmd('SCRIPT', 'LOAD', fake_text(lua_text('forget')));
    for my $s (qw(fixed gcra)) {
        my $K2 = K();
        lease($s, $K2, 300, 86_400_000, 1, 1_000_000, T0 + 1000);
        my $rec = $s eq 'fixed' ? key_of('fixed', $K2, 86_400_000, T0 + 1000) : key_arg($s, $K2);
        my $sec = int((T0 + 1500) / 1000);
        $r->cmd('EVALSHA', $forget, 1, $rec, '1', $sec, (T0 + 1500 - $sec * 1000) * 1000);
        lease($s, $K2, 300, 86_400_000, 1, 1, T0 + 2000);
        $x = lease($s, $K2, 300, 86_400_000, 1, 1, T0 + 3000, 0, 30, T0 + 1000);
        is $x->[9], 0, "$s: reset since the charge: none of 30 given back";
        # a charge after the reset is given back as usual
        # (no more than the fresh state holds: the 2 requests since)
        my $y = lease($s, $K2, 300, 86_400_000, 1, 1, T0 + 4000, 0, 5, T0 + 2000);
        is $y->[9], 2, "$s: a charge after the reset: given back, up to what was charged since";
    }
    # a bucket full again since the charge forgave it: nothing given back
    # (else a second server's full use of the refill would be exceeded)
    for my $s (qw(token leaky gcra)) {
        my $K2 = K();
        lease($s, $K2, 100, 1000, 1, 1_000_000, T0 + 10);
        $x = lease($s, $K2, 100, 1000, 1, 1, T0 + 510, 0, 11, T0 + 10);
        is $x->[9], 0, "$s: refilled for 500 ms of a 1 s window since: none of 11 given back";
    }
    like '' . $r->cmd('EVALSHA', $lease, 1, key_arg('gcra', K()), STRATEGY_ID('gcra'), 300, 60_000, 1, 0, 1,
        -1, 0, int(T0 / 1000), 0), qr/bad lease/, 'a negative give-back: refused';
};

subtest 'want and cost' => sub {
    my $K = K();
    my $x = lease('gcra', $K, 300, 86_400_000, 1, 5, T0 + 10);
    is_deeply [@$x[0, 1, 4, 5]], [1, 295, 1, 5], 'at most what is asked for';
    $x = lease('gcra', $K, 300, 86_400_000, 40, 1, T0 + 20);
    is_deeply [@$x[0, 1, 4, 5]], [1, 255, 1, 40], 'at least the cost';
    $x = lease('gcra', $K, 300, 86_400_000, 256, 1000, T0 + 30);
    is_deeply [@$x[0, 1, 4, 5]], [0, 255, 0, 0], 'a cost above what remains: refused, nothing charged';
};

subtest 'the units are the strategy state itself' => sub {
    my $K = K();
    lease('fixed', $K, 300, 86_400_000, 1, 1000, T0 + 10);
    is $r->cmd('GET', key_of('fixed', $K, 86_400_000, T0 + 10)), 37, 'fixed: the window counts the 37 granted';
    my $y = $h->run('fixed', $K, 300, 86_400_000, T0 + 11, 0);
    is $y->[1], 262, "the strategy's own script sees them spent";
};

subtest 'how long a lease lasts' => sub {
    is lease('gcra', K(), 300, 86_400_000, 1, 10, T0 + 10)->[6], 1000, 'a day: 1 s';
    is lease('gcra', K(), 300, 2000, 1, 10, T0 + 10)->[6], 200, '2 s: 200 ms';
    is lease('gcra', K(), 300, 5, 1, 10, T0 + 1)->[6], 1, '5 ms: 1 ms';
    is lease('gcra', K(), 300, 86_400_000, 1, 10, T0 + 10)->[7], 0, 'gcra: no window';
    my $x = lease('fixed', K(), 300, 60_000, 1, 10, T0 + 59_700);
    is $x->[6], 300, 'fixed: no longer than its window (300 ms left)';
    is $x->[7], 300, 'and it says when the window ends';
    $x = lease('sliding', K(), 300, 60_000, 1, 10, T0 + 59_950);
    is_deeply [@$x[6, 7]], [50, 50], 'sliding: the same';
};

subtest 'a limit read per request (RLaaSLimit expr=, mode 1)' => sub {
    for my $s (qw(fixed sliding token leaky gcra)) {
        my $K = K();
        my $sum = 0;
        for my $i (1 .. 200) {
            my $x = lease($s, $K, 300, 86_400_000, 1, 1_000_000, T0 + 1000 + $i, 1);
            last unless $x->[0];
            $sum += $x->[5];
        }
        is $sum, 300, "$s, mode 1: the grants add up to the limit exactly";
        my $y = $h->run($s, $K, 300, 86_400_000, T0 + 1500, 0, mode => 1);
        is $y->[0], 0, "$s, mode 1: the strategy's own script sees the quota spent";
    }
    # a lapsed portion of a limit read per request goes back as a credit
    # of that mode gives it
    my $K = K();
    my $x = lease('gcra', $K, 300, 86_400_000, 1, 1_000_000, T0 + 1000, 1);
    is $x->[5], 37, 'gcra, mode 1: a portion of 37';
    $x = lease('gcra', $K, 300, 86_400_000, 1, 1_000_000, T0 + 3000, 1, 30, T0 + 1000);
    is $x->[9], 29, 'gcra, mode 1: 29 of 30 lapsed units given back (a unit refilled in 2 s)';
    is $x->[1], 263 + 29 - $x->[5], '  and the quota holds them again (less the new portion)';
};

# leases(ms, [strategy, K, L, W, cost, want, back, at], ...): 16 integers
# for each, or the error
sub leases {
    my ($ms, @p) = @_;
    my $sec = int($ms / 1000);
    return $r->cmd('EVALSHA', $lease, scalar(@p), (map { key_arg($_->[0], $_->[1]) } @p),
        (map { my ($s, undef, $L, $W, $c, $want, $back, $at) = @$_;
               (STRATEGY_ID($s), $L, $W, $c, 0, $want, $back // 0, $at // 0) } @p),
        $sec, ($ms - $sec * 1000) * 1000);
}

subtest 'several policies: all or nothing, a portion for each that asks' => sub {
    my ($A, $B) = (K(), K());
    my $x = leases(T0 + 1000, ['gcra', $A, 300, 86_400_000, 1, 1_000_000],
        ['fixed', $B, 10, 86_400_000, 1, 1_000_000]);
    is scalar(@$x), 32, '16 integers a policy';
    is_deeply [@$x[0, 1, 4, 5]], [1, 263, 1, 37], 'gcra 300: a portion of 37';
    is_deeply [@$x[16, 17, 20, 21]], [1, 9, 1, 1], 'fixed 10: a portion of 1 (max(cost, 10 / 8))';
    is $x->[29], T0 + 1000, "each says Redis' time";
    # want 0: the request's cost alone (this server holds units of it)
    $x = leases(T0 + 1001, ['gcra', $A, 300, 86_400_000, 1, 0],
        ['fixed', $B, 10, 86_400_000, 1, 8]);
    is_deeply [@$x[0, 1, 4, 5]], [1, 262, 0, 0], 'want 0: its cost charged, no portion';
    is_deeply [@$x[16, 17, 20, 21]], [1, 8, 1, 1], '  the other its portion';
    # the fixed window spent: a refusal charges none of the others
    leases(T0 + 1002 + $_, ['fixed', $B, 10, 86_400_000, 1, 1]) for 1 .. 8;
    my $before = $h->run('gcra', $A, 300, 86_400_000, T0 + 1100, 0, cost => 0)->[1];
    $x = leases(T0 + 1100, ['gcra', $A, 300, 86_400_000, 1, 1_000_000],
        ['fixed', $B, 10, 86_400_000, 1, 1_000_000, 0, 0]);
    is_deeply [@$x[0, 4, 5]], [1, 0, 0], 'the other refuses: gcra allowed alone, nothing granted';
    is_deeply [@$x[16, 20, 21]], [0, 0, 0], '  fixed refused';
    cmp_ok $x->[19], '>', 0, '  and told when to come back';
    is $h->run('gcra', $A, 300, 86_400_000, T0 + 1100, 0, cost => 0)->[1], $before, '  gcra charged nothing';
    # a refused call still gives back what lapsed
    $x = leases(T0 + 3000, ['gcra', $A, 300, 86_400_000, 1, 1_000_000, 30, T0 + 1000],
        ['fixed', $B, 10, 86_400_000, 1, 1]);
    is $x->[9], 29, '  a refused call gives back what lapsed (29 of 30: a unit refilled)';
    is $x->[16], 0, '  (refused)';
    is $h->run('gcra', $A, 300, 86_400_000, T0 + 3000, 0, cost => 0)->[1], $before + 29,
        '  and charges nothing: the quota holds the 29 again';
    # Redis Cluster: a fixed window declared in its key (the module's
    # clock) that is not Redis' one: RLAASWINDOW, and nothing written
    # before it, the other policy's give-back included (the module calls
    # again with the same give-back)
    my $C = 'rlaas:rate_limit:{dave}';
    leases(T0 + 4000, ['gcra', "$C:g", 300, 86_400_000, 1, 1_000_000]);
    my $g0 = $h->run('gcra', "$C:g", 300, 86_400_000, T0 + 5000, 0, cost => 0)->[1];
    my $stale = int((T0 + 5000) / 60_000) - 1;
    my $e = $r->cmd('EVALSHA', $lease, 2, key_arg('gcra', "$C:g"), "$C:f:$stale",
        STRATEGY_ID('gcra'), 300, 86_400_000, 1, 0, 10, 30, T0 + 4000,
        STRATEGY_ID('fixed'), 10, 60_000, 1, 0, 10, 0, 0,
        int((T0 + 5000) / 1000), 0);
    like "$e", qr/^RLAASWINDOW \d+ @{[ T0 + 5000 ]}$/, 'a stale declared fixed window: RLAASWINDOW';
    is $h->run('gcra', "$C:g", 300, 86_400_000, T0 + 5000, 0, cost => 0)->[1], $g0,
        '  and the gcra policy was given nothing back before it';
    ok !$r->cmd('EXISTS', "$C:f:$stale"), '  nor the stale window written';
    my $sec = int(T0 / 1000);
    like '' . leases(T0, ['gcra', K(), 300, 60_000, 1, 0], ['gcra', K(), 300, 60_000, 1, 0]),
        qr/bad lease/, 'no portion asked: an error';
    like '' . leases(T0, ['gcra', K(), 300, 60_000, 1, 0, 5, T0 - 10], ['gcra', K(), 300, 60_000, 1, 1]),
        qr/bad lease/, 'units given back without a portion: an error';
    my $K = K();
    like '' . leases(T0, ['gcra', $K, 300, 60_000, 1, 1], ['gcra', $K, 300, 60_000, 1, 1]),
        qr/bad lease/, 'one key twice: an error';
    like '' . leases(T0, ['gcra', K(), 300, 60_000, 1, 0]), qr/bad lease/, 'one policy asks a portion';
};

subtest 'a calendar window (fixed): portions of the period, a lease ending with it' => sub {
    my $D = 86_400_000;
    # UTC days around T0 (src/core/rlaas_cal.h's "<tag>/<b0>/<b1>/<b2>/<b3>")
    my $W = join '/', '1d', T0 - $D, T0, T0 + $D, T0 + 2 * $D;
    my $K = K();
    my ($sum, $x) = (0);
    for my $i (1 .. 200) {
        $x = lease('fixed', $K, 300, $W, 1, 1_000_000, T0 + 1000 + $i);
        last unless $x->[0];
        $sum += $x->[5];
    }
    is $sum, 300, 'the grants add up to the limit exactly';
    is $r->cmd('GET', key_arg('fixed', $K) . '1d+' . T0), 300, "counted in the period's own key";
    $x = lease('fixed', K(), 300, $W, 1, 10, T0 + 1000);
    is_deeply [@$x[6, 7]], [1000, $D - 1000], 'a lease of 1 s, and the period ends in a day less 1 s';
    $x = lease('fixed', K(), 300, $W, 1, 10, T0 + $D - 300);
    is_deeply [@$x[6, 7]], [300, 300], 'no longer than the period (300 ms left)';
    # what lapsed goes back to the period that charged it, never the next
    my $K2 = K();
    lease('fixed', $K2, 300, $W, 1, 1_000_000, T0 + 1000);
    $x = lease('fixed', $K2, 300, $W, 1, 1_000_000, T0 + 3000, 0, 30, T0 + 1000);
    is $x->[9], 30, 'lapsed units given back to their period';
    $x = lease('fixed', $K2, 300, $W, 1, 1, T0 + $D + 10, 0, 5, T0 + 3000);
    is $x->[9], 0, '  not to the next one';
    is $x->[1], 299, '  which starts afresh';
};

subtest 'refused: the sliding log, a mode, bad arguments' => sub {
    for my $bad ([1, 0], [1, 1], [5, 2], [5, 3], [5, 4], [9, 0]) {
        my ($id, $mode) = @$bad;
        my $sec = int(T0 / 1000);
        my $x = $r->cmd('EVALSHA', $lease, 1, K(), $id, 300, 60000, 1, $mode, 10, 0, 0, $sec, 0);
        like "$x", qr/bad lease/, "strategy $id, mode $mode: an error";
    }
    my $sec = int(T0 / 1000);
    like '' . $r->cmd('EVALSHA', $lease, 1, K(), 5, 300, 60000, 0, 0, 10, 0, 0, $sec, 0), qr/bad lease/, 'cost 0: an error';
};

done_testing();
