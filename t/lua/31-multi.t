# The multi script: every policy of one request decided in one call, all
# or nothing. Each policy is decided without charging; only if every one
# that is not a dry run (mode bit 2) allows are they all charged, so a
# denial anywhere charges nothing anywhere. Checked against the models
# (t/lua/Model.pm) on random timelines, and by hand.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use Model;

my $h = ScriptTest->new;
my $r = $h->redis;
my $n = 0;
sub K { 'rlaas:rate_limit:multi-' . $n++ }

subtest 'all or nothing: the policy that allows is not charged when another denies' => sub {
    my ($A, $B) = (K(), K());
    my @p = (['fixed', $A, 5, 60000], ['sliding_log', $B, 2, 60000]);
    is_deeply $h->run_multi(T0 + 10, @p), [1, 4, 59990, 0, 1, 1, 60000, 0], 'first: both charged';
    is_deeply $h->run_multi(T0 + 20, @p), [1, 3, 59980, 0, 1, 0, 60000, 59990], 'second: both charged';
    is_deeply $h->run_multi(T0 + 30, @p), [1, 3, 59970, 0, 0, 0, 59990, 59980],
        'third: B denies; A would allow and shows its quota as it is';
    $h->run_multi(T0 + 40, @p) for 1 .. 20;
    is $r->cmd('GET', "$A:" . int(T0 / 60000)), 2, 'A counted the 2 admitted requests only, not the 21 denied';
    is $r->cmd('ZCARD', $B), 2, 'B holds 2';
};

subtest 'every strategy, side by side with its single script' => sub {
    my @S = STRATEGIES;
    my @p = map { [$S[$_], K(), 3 + $_, 1000 * ($_ + 1), 1] } 0 .. $#S;
    my @q = map { [$_->[0], $_->[1] . '-single', @{$_}[2 .. 4]] } @p;
    for my $step (0 .. 2) {
        my $t = T0 + 100 * $step;
        my $multi = $h->run_multi($t, @p);
        my @single = map { @{ $h->run(@{$_}[0 .. 3], $t, 0, cost => $_->[4]) } } @q;
        is_deeply $multi, \@single, "request $step: the multi reply is the six single replies";
    }
    # then the fixed one (limit 3) is full: nothing else is charged
    my %before = map { $_ => $r->cmd('DUMP', $_) } grep { $r->cmd('EXISTS', $_) }
        map { ($_->[1], @{ $r->cmd('KEYS', "$_->[1]:*") }) } @p;
    my $x = $h->run_multi(T0 + 400, @p);
    is $x->[0], 0, 'fixed denies';
    is_deeply [map { $x->[4 * $_] } 1 .. 5], [1, 1, 1, 1, 1], 'the five others would allow';
    my %after = map { $_ => $r->cmd('DUMP', $_) } keys %before;
    is_deeply \%after, \%before, 'no key of any policy changed';
};

subtest 'dry run (mode 2): its denial blocks nothing; a real denial blocks it too' => sub {
    my ($A, $D) = (K(), K());
    my @p = (['fixed', $A, 10, 60000, 1, 0], ['fixed', $D, 1, 60000, 1, 2]);
    is_deeply $h->run_multi(T0 + 5, @p), [1, 9, 59995, 0, 1, 0, 59995, 59995], 'both allow';
    is_deeply $h->run_multi(T0 + 6, @p), [1, 8, 59994, 0, 0, 0, 59994, 59994],
        'the dry run denies: the real one is charged all the same';
    my $i = int(T0 / 60000);
    is $r->cmd('GET', "$A:$i"), 2, 'A: 2';
    is $r->cmd('GET', "$D:$i"), 1, 'the dry run: 1, its denial not charged';
    my ($B, $E) = (K(), K());
    my @q = (['fixed', $B, 1, 60000, 1, 0], ['fixed', $E, 10, 60000, 1, 2]);
    $h->run_multi(T0 + 7, @q);
    is_deeply $h->run_multi(T0 + 8, @q), [0, 0, 59992, 59992, 1, 9, 59992, 0],
        'a real denial: the dry run is not charged either';
    is $r->cmd('GET', "$E:$i"), 1, 'E: 1';
};

subtest 'costs and limits per policy' => sub {
    my ($A, $B) = (K(), K());
    my @p = (['token', $A, 10, 1000, 4], ['gcra', $B, 6, 1000, 0]);
    is_deeply $h->run_multi(T0, @p), [1, 6, 400, 0, 1, 6, 0, 0], '4 tokens; gcra with cost 0: a check';
    is_deeply $h->run_multi(T0, @p), [1, 2, 800, 200, 1, 6, 0, 0], '4 more (2 left: 4 fit in 200 ms)';
    is_deeply $h->run_multi(T0, @p), [0, 2, 800, 200, 1, 6, 0, 0], 'no 4 left';
};

subtest 'limits: eight policies, refused beyond; bad arguments are errors' => sub {
    my @p = map { ['fixed', K(), 2, 1000] } 1 .. 8;
    my $x = $h->run_multi(T0, @p);
    is ref $x, 'ARRAY', 'eight policies' or diag "$x";
    is scalar(@$x), 32, '32 integers';
    my @err = (
        [[map { ['fixed', K(), 2, 1000] } 1 .. 9], 'nine policies'],
        [[['fixed', 'rlaas:rate_limit:same', 2, 1000], ['fixed', 'rlaas:rate_limit:same', 5, 1000]], 'one key twice'],
        [[['fixed', K(), 2, 1000, 3]], 'a cost above the limit'],
        [[['fixed', K(), 0, 1000]], 'limit 0'],
        [[['fixed', K(), 2, 0]], 'window 0'],
        [[['fixed', K(), 2, 1000, 1, 8]], 'mode 8'],
    );
    for my $e (@err) {
        my $y = $h->run_multi(T0, @{ $e->[0] });
        ok RLaaS::Redis::is_error($y), "$e->[1]: an error reply" or diag explain $y;
    }
    my $bad = $r->cmd('EVALSHA', $h->{fake}{multi}, 1, K(), 9, 2, 1000, 1, 0, T0 / 1000, 0);
    ok RLaaS::Redis::is_error($bad), 'strategy 9: an error reply';
    $bad = $r->cmd('EVALSHA', $h->{fake}{multi}, 2, K(), K(), 0, 2, 1000, 1, 0, T0 / 1000, 0);
    ok RLaaS::Redis::is_error($bad), 'arguments for one of two keys: an error reply';
    $bad = $r->cmd('EVALSHA', $h->{sha}{multi}, 0);
    ok RLaaS::Redis::is_error($bad), 'no keys: an error reply';
};

# Random timelines: two or three policies of random strategies, limits,
# windows and costs, some dry runs, against one model per policy and the
# all-or-nothing rule.
my $STEPS = $ENV{RLAAS_MODEL_STEPS} || 150;
my @S = STRATEGIES;
for my $round (1 .. 12) {
    srand(4242 + $round);
    my @pol = map {
        my ($L, $W) = ((1, 2, 3, 5, 7, 10)[rand 6], (7, 250, 1000, 3001, 60000)[rand 5]);
        { s => $S[rand @S], K => K(), L => $L, W => $W, dry => rand() < 0.2 ? 2 : 0 }
    } 1 .. 2 + int(rand 2);
    $_->{m} = Model->new($_->{s}, $_->{L}, $_->{W}) for @pol;
    my $now = T0 + int(rand 1000);
    my $bad = 0;
    for my $step (1 .. $STEPS) {
        $_->{c} = rand() < 0.6 ? 1 : int(rand($_->{L} + 1)) for @pol;
        my $got = $h->run_multi($now, map { [@{$_}{qw(s K L W c dry)}] } @pol);
        my @ok = map { $_->{m}->hit($now, $_->{L}, $_->{c}, 0) } @pol;
        my $go = !grep { !$ok[$_] && !$pol[$_]{dry} } 0 .. $#pol;
        my @want;
        for my $i (0 .. $#pol) {
            my $p = $pol[$i];
            $p->{m}->hit($now, $p->{L}, $p->{c}) if $go && $ok[$i];
            push @want, @{ $p->{m}->expect($now, $ok[$i], $p->{L}, $p->{c}) };
        }
        if (!ref $got || "@$got" ne "@want") {
            $bad++;
            diag "round $round step $step t=" . ($now - T0) . ' '
                . join(' | ', map { "$_->{s} L=$_->{L} W=$_->{W} c=$_->{c}" . ($_->{dry} ? ' dry' : '') } @pol)
                . ": got @{[ref $got ? qq(@$got) : $got]}, want @want";
            last if $bad > 5;
        }
        my $x = rand;
        $now += $x < 0.3 ? 0 : $x < 0.8 ? int(rand(300)) : int(rand(5000));
    }
    is $bad, 0, "round $round: " . join(', ', map { "$_->{s}/$_->{L}/$_->{W}" . ($_->{dry} ? '/dry' : '') } @pol)
        . ": $STEPS requests match the models, all or nothing";
}

subtest 'forced charges (mode 4): all charged whatever they decide' => sub {
    my ($A, $B) = (K(), K());
    my @p = (['fixed', $A, 2, 60000, 1, 4], ['sliding_log', $B, 1, 60000, 1, 4]);
    $h->run_multi(T0 + 10 * $_, @p) for 1 .. 5;
    my $i = int(T0 / 60000);
    is $r->cmd('GET', "$A:$i"), 5, 'A counted 5 of 5, beyond its limit of 2';
    is $r->cmd('ZCARD', $B), 5, 'B holds 5 beyond its limit of 1';
    my $x = $h->run_multi(T0 + 100, map { [@$_[0 .. 4], 0] } @p);
    is_deeply [$x->[0], $x->[4]], [0, 0], 'the next plain check refuses both';
};

subtest 'a ban (strategy 6): refuses while it holds, nothing decided; escalates' => sub {
    my ($A, $X) = (K(), K());
    # fixed 2 per 60 s; ban 5 s, escalating x3 up to 40 s
    my @p = (['fixed', $A, 2, 60000], ['ban', "$A-b", 5000, 40000, 3, 0]);
    is_deeply $h->run_multi(T0 + 1, @p), [1, 1, 59999, 0, 1, 0, 0, 0], 'first allowed, no ban';
    is_deeply $h->run_multi(T0 + 2, @p), [1, 0, 59998, 59998, 1, 0, 0, 0], 'second allowed';
    is_deeply $h->run_multi(T0 + 3, @p), [0, 0, 59997, 59997, 0, 2, 5000, 5000], 'third denied: banned now, 5 s';
    is $h->pttl("$A-b:ban"), 45000, 'the ban record lives 5 s + 40 s (escalation remembers)';
    is_deeply $h->run_multi(T0 + 1003, @p), [0, 0, 4000, 4000, 0, 1, 4000, 4000], 'refused by the ban: 4 s left';
    is $r->cmd('GET', "$A:" . int(T0 / 60000)), 2, 'refusals charged nothing';
    # the window rolls over (T0 is a multiple of 60 s): counters allow, the ban still holds
    is_deeply $h->run_multi(T0 + 4999, @p), [0, 0, 4, 4, 0, 1, 4, 4], '1 ms before it ends: still refused';
    is_deeply $h->run_multi(T0 + 5003, @p), [0, 0, 54997, 54997, 0, 2, 15000, 15000],
        'ended; denied again by the counter: banned 3 x 5 s = 15 s';
    is_deeply $h->run_multi(T0 + 20003, @p), [0, 0, 39997, 39997, 0, 2, 40000, 40000],
        'then 45 s, capped at 40 s';
    my @q = (['fixed', $X, 2, 60000], ['ban', "$X-b", 5000, 40000, 3, 0]);
    is_deeply $h->run_multi(T0 + 20004, @q), [1, 1, 39996, 0, 1, 0, 0, 0], 'another identity: not banned';
    # no escalation (factor 1): each ban is D long, record lives D
    my $Y = K();
    my @y = (['fixed', $Y, 1, 1000], ['ban', "$Y-b", 3000, 3000, 1, 0]);
    $h->run_multi(T0 + 60000, @y);
    is_deeply $h->run_multi(T0 + 60001, @y), [0, 0, 999, 999, 0, 2, 3000, 3000], 'banned 3 s';
    is $h->pttl("$Y-b:ban"), 3000, 'without escalation the record lives as long as the ban';
    is_deeply $h->run_multi(T0 + 63001, @y), [1, 0, 999, 999, 1, 0, 0, 0], 'over: allowed again';
    is_deeply $h->run_multi(T0 + 63002, @y), [0, 0, 998, 998, 0, 2, 3000, 3000], 'a denial bans again, 3 s again';
    my $e = $r->cmd('EVALSHA', $h->{fake}{multi}, 2, "$Y:ban", "$Y:", 6, 0, 3000, 1, 0, 0, 1, 1000, 1, 0, 1, 0);
    ok RLaaS::Redis::is_error($e), 'a ban of length 0: an error reply';
    $e = $r->cmd('EVALSHA', $h->{fake}{multi}, 1, "$Y:ban", 6, 3000, 3000, 1, 0, 1, 0);
    ok RLaaS::Redis::is_error($e), 'a ban alone: an error reply';
};

subtest 'a ban read only (factor 0): a section of the zone that does not ban honours it, never starts one' => sub {
    my ($A, $B) = (K(), K());
    my $M = 2**35;
    my @ban = (['fixed', $A, 1, 60000], ['ban', "$B-b", 5000, 5000, 1, 1]);
    my @read = (['fixed', $B, 1, 60000], ['ban', "$B-b", $M, $M, 0, 1]);
    is_deeply $h->run_multi(T0 + 1, @read), [1, 0, 59999, 59999, 1, 0, 0, 0], 'the reader: allowed, no ban';
    is_deeply $h->run_multi(T0 + 2, @read), [0, 0, 59998, 59998, 1, 0, 0, 0], 'denied by its limit: no ban started';
    is $h->pttl("$B-b:ban"), -2, '... no ban record';
    $h->run_multi(T0 + 3, @ban) for 1 .. 2;
    is $h->pttl("$B-b:ban"), 5000, 'the section that bans starts one';
    is_deeply $h->run_multi(T0 + 4, @read), [0, 0, 4999, 4999, 0, 1, 4999, 4999], 'the reader is refused by it';
};

subtest 'a ban follows the policy at its place: another one denying bans nobody' => sub {
    my ($P, $Q) = (K(), K());
    # policy 1 (the section's own, 5 a minute), policy 2 (1 a minute)
    my @p = (['fixed', $P, 5, 60000], ['fixed', $Q, 1, 60000]);
    my $v = $h->run_multi(T0 + 1, @p, ['ban', "$P-b", 5000, 5000, 1, 1]);
    is_deeply [@$v[8 .. 11]], [1, 0, 0, 0], 'both allow: no ban';
    $v = $h->run_multi(T0 + 2, @p, ['ban', "$P-b", 5000, 5000, 1, 1]);
    is $v->[4], 0, 'policy 2 denies';
    is $v->[0], 1, 'policy 1 would allow';
    is_deeply [@$v[8 .. 11]], [1, 0, 0, 0], 'the ban follows policy 1: not started';
    is $h->pttl("$P-b:ban"), -2, '... no ban record';
    $v = $h->run_multi(T0 + 3, @p, ['ban', "$P-b", 5000, 5000, 1, 2]);
    is_deeply [@$v[8 .. 11]], [0, 2, 5000, 5000], 'following policy 2: its denial bans';
    for my $bad ([3, 'its own place'], [4, 'a place past the calls'], [-1, 'a negative place']) {
        my $e = $r->cmd('EVALSHA', $h->{fake}{multi}, 2, "$Q:", "$Q-b:ban",
            0, 1, 60000, 1, 0, 6, 3000, 3000, 1, $bad->[0]);
        ok RLaaS::Redis::is_error($e), "a ban following $bad->[1]: an error reply";
    }
};

is_deeply [$h->no_ttl], [], 'every key written had a TTL';
done_testing;
