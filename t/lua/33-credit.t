# Credits (lua/credit.lua, and the local engine's rlaas_local_credit_n: every
# call here is made of both and compared, ScriptTest): units given back to
# a key, as RLaaSCountIf's refunds and the console's credit give them.
# Never below the fresh state, never making state; the sliding log takes
# the very hits a charge added (its moment's), renumbering the ones after,
# and falls back to the newest when too many follow; fixed gives back to
# the charge's window only. The timelines against the model are in
# t/lua/30-model.t.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
my $n = 0;
sub K { 'rlaas:rate_limit:credit-' . $n++ }
sub hit { my ($s, $K, $L, $W, $t, $c) = @_; $h->run($s, $K, $L, $W, $t, 0, cost => $c // 1) }
sub credit { my ($t, $age, @p) = @_; $h->run_credit($t, $age, @p) }
sub members { [map { s/^\d+-//r } @{ $r->cmd('ZRANGE', $_[0], 0, -1) }] }
# [T:u:C, score] of each member (ours: <ms>-<T, 16 digits>:<u>:<C>)
sub scores { my $z = $r->cmd('ZRANGE', $_[0], 0, -1, 'WITHSCORES'); [map { $_ % 2 ? $z->[$_] : $z->[$_] =~ s/^\d+-//r } 0 .. $#$z] }

subtest 'no state: nothing given, nothing made' => sub {
    for my $s (STRATEGIES) {
        my $K = K();
        is_deeply credit(T0 + 5, 0, [$s, $K, 5, 1000, 3]), [1, 0, 0, 0], "$s: 0 given";
        is_deeply $r->cmd('KEYS', "$K*"), [], "$s: no key written";
    }
};

subtest 'never below the fresh state: a credit of 100 after 3 units' => sub {
    for my $s (STRATEGIES) {
        my $K = K();
        hit($s, $K, 5, 60000, T0 + $_) for 1 .. 3;
        is_deeply credit(T0 + 10, 0, [$s, $K, 5, 60000, 100]), [1, 3, 0, 0], "$s: 3 given back";
        is_deeply $r->cmd('KEYS', "$K*"), [], "$s: the key is gone: fresh";
        is hit($s, $K, 5, 60000, T0 + 11)->[1], 4, "$s: a request then sees a fresh quota";
    }
};

subtest 'a refund undoes its charge: the quota as if it had not been made' => sub {
    for my $s (STRATEGIES) {
        my ($K, $R) = (K(), K());
        hit($s, $K, 5, 60000, T0 + 1);
        hit($s, $R, 5, 60000, T0 + 1);
        my $x = hit($s, $K, 5, 60000, T0 + 2);
        is_deeply credit(T0 + 500, 498, [$s, $K, 5, 60000, 1]), [1, 1, 0, 0], "$s: 1 given back";
        is_deeply hit($s, $K, 5, 60000, T0 + 600), hit($s, $R, 5, 60000, T0 + 600),
            "$s: the next request sees what one that never had the charge sees";
    }
};

subtest 'sliding log: the charge\'s own hit goes, the ones after are renumbered' => sub {
    my $K = K();
    hit('sliding_log', $K, 10, 10000, T0 + 0);
    hit('sliding_log', $K, 10, 10000, T0 + 100, 2);    # the charge refunded
    hit('sliding_log', $K, 10, 10000, T0 + 200);
    hit('sliding_log', $K, 10, 10000, T0 + 300);
    is_deeply credit(T0 + 400, 300, ['sliding_log', $K, 10, 10000, 2]), [1, 2, 0, 0], 'its 2 units given back';
    is_deeply scores($K), ['0000000000000001:1:1', T0, '0000000000000002:1:2', T0 + 200,
        '0000000000000003:1:3', T0 + 300], 'the hit of t=100 gone, those after it renumbered';
    is hit('sliding_log', $K, 10, 10000, T0 + 10_000, 0)->[1], 8, 't=10000: the first hit left, 2 remain counted';
    is hit('sliding_log', $K, 10, 10000, T0 + 10_200, 0)->[1], 9, 't=10200: as if t=100 never was';
    my $B = K();
    hit('sliding_log', $B, 10, 10000, T0 + 0, 3);
    is_deeply credit(T0 + 50, 50, ['sliding_log', $B, 10, 10000, 1]), [1, 1, 0, 0], 'one unit of a hit of 3';
    is_deeply members($B), ['0000000000000002:2:1'], 'the hit keeps 2 units';
};

subtest 'sliding log: a charge made just before another of its moment: either goes (the same time)' => sub {
    my $K = K();
    hit('sliding_log', $K, 10, 10000, T0 + 100) for 1 .. 3;
    is_deeply credit(T0 + 300, 200, ['sliding_log', $K, 10, 10000, 1]), [1, 1, 0, 0], 'one given back';
    is_deeply scores($K), ['0000000000000001:1:1', T0 + 100, '0000000000000002:1:2', T0 + 100], 'two hits of t=100 left';
};

subtest 'sliding log: more than 256 hits after the charge: the newest units go instead' => sub {
    my $K = K();
    hit('sliding_log', $K, 1000, 60000, T0 + 1);
    hit('sliding_log', $K, 1000, 60000, T0 + 2) for 1 .. 300;
    is_deeply credit(T0 + 10, 9, ['sliding_log', $K, 1000, 60000, 1]), [1, 1, 0, 0], 'one given back';
    my $s = scores($K);
    is scalar(@$s), 600, '300 hits left';
    is_deeply [@{$s}[0, 1]], ['0000000000000001:1:1', T0 + 1], 'the first hit kept';
    is_deeply [@{$s}[-2, -1]], ['0000000000000300:1:300', T0 + 2], 'the newest gone: no renumbering';
    # at most 256 after: exact
    my $B = K();
    hit('sliding_log', $B, 1000, 60000, T0 + 1);
    hit('sliding_log', $B, 1000, 60000, T0 + 2) for 1 .. 255;
    credit(T0 + 10, 9, ['sliding_log', $B, 1000, 60000, 1]);
    is_deeply [@{ scores($B) }[0, 1]], ['0000000000000001:1:1', T0 + 2], '255 after: the charge\'s own hit went';
};

subtest 'sliding log: not enough at or after the charge: the newest' => sub {
    my $K = K();
    hit('sliding_log', $K, 10, 10000, T0 + $_ * 10) for 1 .. 4;
    is_deeply credit(T0 + 50, 15, ['sliding_log', $K, 10, 10000, 3]), [1, 3, 0, 0], '3 given back (only 1 hit after t=35)';
    is_deeply members($K), ['0000000000000001:1:1'], 'the three newest went';
    # the console's credit (age 0): the newest
    my $B = K();
    hit('sliding_log', $B, 10, 10000, T0 + $_ * 10) for 1 .. 4;
    credit(T0 + 50, 0, ['sliding_log', $B, 10, 10000, 1]);
    is_deeply scores($B), ['0000000000000001:1:1', T0 + 10, '0000000000000002:1:2', T0 + 20,
        '0000000000000003:1:3', T0 + 30], 'now: the newest hit goes';
};

subtest 'sliding log: a seeds service\'s members are never given back, ours around them are' => sub {
    my $K = K();
    hit('sliding_log', $K, 10, 10000, T0 + 10);
    $h->run_seeds($K, 10, 10000, T0 + 20);
    hit('sliding_log', $K, 10, 10000, T0 + 30, 2);
    $h->run_seeds($K, 10, 10000, T0 + 40);
    hit('sliding_log', $K, 10, 10000, T0 + 50);
    is_deeply credit(T0 + 60, 30, ['sliding_log', $K, 10, 10000, 2]), [1, 2, 0, 0], 'the charge of t=30 given back';
    my @ours = grep { /:/ } @{ members($K) };
    is_deeply \@ours, ['0000000000000001:1:1', '0000000000000002:1:2'], 'ours after it renumbered';
    is scalar(grep { !/:/ } @{ members($K) }), 2, 'the two seeds\' members kept';
    is_deeply credit(T0 + 70, 0, ['sliding_log', $K, 10, 10000, 100]), [1, 2, 0, 0], 'a credit of 100: our 2 units, no more';
    is_deeply [grep { /:/ } @{ members($K) }], [], 'none of ours left';
    is scalar(@{ members($K) }), 2, 'the seeds\' members still there';
    is hit('sliding_log', $K, 10, 10000, T0 + 80)->[1], 7, 'the next request counts the seeds\' 2 and its own';
};

subtest 'fixed: the charge\'s window only' => sub {
    my $K = K();
    hit('fixed', $K, 5, 1000, T0 + 990);
    hit('fixed', $K, 5, 1000, T0 + 1010);
    is_deeply credit(T0 + 1020, 30, ['fixed', $K, 5, 1000, 1]), [1, 0, 0, 0],
        'a charge of the window before: nothing (that window no longer limits)';
    is $r->cmd('GET', "$K:" . (int(T0 / 1000) + 1)), 1, 'the current window keeps its 1';
    is_deeply credit(T0 + 1020, 10, ['fixed', $K, 5, 1000, 1]), [1, 1, 0, 0], 'a charge of this window: 1';
    is $r->cmd('EXISTS', "$K:" . (int(T0 / 1000) + 1)), 0, 'back to 0: no key';
    # Redis Cluster: the key declares the window
    my $C = K();
    my $w = int((T0 + 500) / 1000);
    $h->run('fixed', "$C:$w", 5, 1000, T0 + 500, 0) for 1 .. 2;
    is_deeply $h->run_credit(T0 + 600, 100, ['fixed', "$C:$w", 5, 1000, 1]), [1, 1, 0, 0],
        'a declared window that is the charge\'s: 1';
    is_deeply $h->run_credit(T0 + 600, 700, ['fixed', "$C:$w", 5, 1000, 1]), [1, 0, 0, 0],
        'one that is not: nothing';
};

subtest 'sliding: this window, then the one before' => sub {
    my $K = K();
    hit('sliding', $K, 10, 1000, T0 + 500, 3);
    hit('sliding', $K, 10, 1000, T0 + 1500, 2);
    is_deeply credit(T0 + 1600, 0, ['sliding', $K, 10, 1000, 4]), [1, 4, 0, 0], 'now: 2 from this window, 2 from the last';
    is_deeply credit(T0 + 1600, 1200, ['sliding', $K, 10, 1000, 4]), [1, 1, 0, 0], 'a charge of the window before: from it';
    is_deeply $r->cmd('KEYS', "$K*"), [], 'all gone: no key';
    hit('sliding', $K, 10, 1000, T0 + 1700, 2);
    is_deeply credit(T0 + 3700, 2000, ['sliding', $K, 10, 1000, 2]), [1, 0, 0, 0], 'two windows back: nothing';
};

subtest 'several credits in one call; the limit may vary (mode 1)' => sub {
    my @k = map { K() } 1 .. 3;
    hit('token', $k[0], 10, 1000, T0, 6);
    hit('leaky', $k[1], 10, 1000, T0, 6);
    hit('gcra', $k[2], 10, 1000, T0, 6);
    is_deeply credit(T0 + 1, 1, ['token', $k[0], 10, 1000, 2], ['leaky', $k[1], 10, 1000, 2, 1], ['gcra', $k[2], 10, 1000, 2]),
        [1, 2, 0, 0, 1, 2, 0, 0, 1, 2, 0, 0], 'three credits, 2 units each';
    is hit('token', $k[0], 10, 1000, T0 + 1, 0)->[1], 6, 'token: 4 + 2 back (and the refill)';
};

subtest 'bad calls are errors' => sub {
    my $sha = $h->{fake}{credit};
    my @t = (int(T0 / 1000), 0);
    for my $bad ([['fixed', 'k:', 5, 1000, 0, 0, 0], 'no units'], [['fixed', 'k:', 5, 1000, 1, 2, 0], 'a dry-run mode'],
        [['x', 'k:', 5, 1000, 1, 0, 0], 'no such strategy'], [['fixed', 'k:', 5, 1000, 1, 0, -1], 'a negative age']) {
        my ($p, $why) = @$bad;
        my ($s, $k, @a) = @$p;
        my $rep = $r->cmd('EVALSHA', $sha, 1, $k, STRATEGY_ID($s) // $s, @a, @t);
        like $rep, qr/bad credit 1/, $why;
    }
    like $r->cmd('EVALSHA', $sha, 2, 'a', 'a', (0, 5, 1000, 1, 0, 0) x 2, @t), qr/bad credit 2/, 'one key twice';
};

is_deeply [$h->no_ttl], [], 'every key written had a TTL';
done_testing;
