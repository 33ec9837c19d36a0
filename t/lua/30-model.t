# Every reply field of every strategy against a reference model, on
# seeded pseudo-random timelines (the same every run), for both engines:
# the Lua scripts in Redis and the local engine's C strategies and table
# (build/unit/rlaas_local_cli), through the same cases: one unit per
# request; then costs from 0 to the limit; then a limit that changes from
# one request to the next (mode 1: the limit is read per request), with
# costs. The model finds remaining/reset/retry by trying requests, so the
# formulas are checked, not restated. Keys expire in fake time exactly
# when the TTLs the scripts set say (ScriptTest::run), and records when the
# local table says, so a TTL that is too short fails here too, and so does
# state that outlives its TTL and gets misread.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use Model;

my $h = ScriptTest->new;
my $r = $h->redis;
# A table of its own: the one ScriptTest compares the scripts with sees
# every Lua call already.
my $lc = ScriptTest::Local->new;
my %engine = (
    lua => sub { my ($s, $K, $L, $W, $ms, $c, $m) = @_;
        $h->run($s, $K, $L, $W, $ms, 0, cost => $c, mode => $m) },
    c   => sub { my ($s, $K, $L, $W, $ms, $c, $m) = @_;
        scalar $lc->run($s, key_arg($s, $K), $L, $W, $ms, $c, $m) },
);

# Credits (lua/credit.lua): units given back, charged $age ms before.
my %credit = (
    lua => sub { my ($s, $K, $L, $W, $ms, $n, $m, $age) = @_;
        $h->run_credit($ms, $age, [$s, $K, $L, $W, $n, $m]) },
    c   => sub { my ($s, $K, $L, $W, $ms, $n, $m, $age) = @_;
        scalar $lc->run_credit($ms, $age, [$s, key_arg($s, $K), $L, $W, $n, $m]) },
);

my @configs = ([1, 1000], [2, 1], [5, 5000], [3, 1000], [10, 1000],
    [7, 3001], [4, 7], [12, 250], [50, 60000], [3, 86400000], [200, 3],
    [6, 1001], [9, 10]);
my $STEPS = $ENV{RLAAS_MODEL_STEPS} || 150;

my $kn = 0;

# One timeline of $STEPS requests of strategy $s on engine $e; $pick->()
# gives each request's (limit, cost). Returns the number of replies that
# differ.
sub timeline {
    my ($e, $s, $L0, $W, $mode, $pick, $credits) = @_;
    my $K = 'rlaas:rate_limit:m' . $kn++;
    my $m = Model->new($s, $L0, $W);
    my $now = T0 + int(rand($W));
    my ($bad, $last) = (0, $now);
    for my $step (1 .. $STEPS) {
        my ($L, $c, $force) = $pick->();
        my $mo = $force ? $mode | 4 : $mode;
        if ($credits && rand() < $credits) {
            # the last request's units back (its refund), or any units
            # charged a while ago, or now's
            my $x = rand;
            my $age = $x < 0.5 ? $now - $last : $x < 0.8 ? int(rand(2 * $W)) : 0;
            my $n = rand() < 0.6 ? ($c || 1) : 1 + int(rand(2 * $L));
            my $got = $credit{$e}->($s, $K, $L, $W, $now, $n, $mode, $age);
            my $want = [1, $m->credit($now, $now - $age, $L, $n), 0, 0];
            if (!ref $got || "@$got" ne "@$want") {
                $bad++;
                diag "$e $s L=$L W=$W credit $n age $age mode=$mode step $step t=" . ($now - T0)
                    . ": got @{[ref $got ? qq(@$got) : $got]}, want @$want";
                last if $bad > 5;
            }
            $now += int(rand(3));
            next;
        }
        $last = $now;
        my $got = $engine{$e}->($s, $K, $L, $W, $now, $c, $mo);
        my $allowed = $m->hit($now, $L, $c, 1, $force);
        my $want = $m->expect($now, $allowed, $L, $c);
        if (!ref $got || "@$got" ne "@$want") {
            $bad++;
            diag "$e $s L=$L W=$W cost=$c mode=$mo step $step t=" . ($now - T0)
                . ": got @{[ref $got ? qq(@$got) : $got]}, want @$want";
            last if $bad > 5;
        }
        # Next time: often exactly at, or 1 ms before, a boundary the
        # reply announced; otherwise a mix of short and long gaps.
        my $x = rand;
        my $gap =
              $x < 0.15 ? 0
            : $x < 0.25 ? ($want->[3] ? $want->[3] - 1 : 0)
            : $x < 0.35 ? $want->[3]
            : $x < 0.40 ? $want->[2]
            : $x < 0.45 ? ($want->[2] ? $want->[2] - 1 : 0)
            : $x < 0.80 ? int(rand(2 * $W / $L + 2))
            : $x < 0.95 ? int(rand($W + 1))
            :             int(rand(3 * $W + 1));
        $now += $gap;
    }
    return $bad;
}

# A cost: mostly 1, often 0 or a few, sometimes the whole limit.
sub cost_of {
    my ($L) = @_;
    my $x = rand;
    return $x < 0.4 ? 1 : $x < 0.55 ? 0 : $x < 0.9 ? 1 + int(rand($L < 4 ? $L : 4)) : $L;
}

for my $e (qw(lua c)) {
    for my $s (STRATEGIES) {
        for my $cf (@configs) {
            my ($L, $W) = @$cf;
            srand(1000 * $L + $W + length $s);   # same timeline every run
            is timeline($e, $s, $L, $W, 0, sub { ($L, 1) }), 0, "$e: $s L=$L W=$W: $STEPS steps match the model";
        }
    }

    for my $s (STRATEGIES) {
        for my $cf (@configs) {
            my ($L, $W) = @$cf;
            srand(2000 * $L + $W + length $s);
            is timeline($e, $s, $L, $W, 0, sub { ($L, cost_of($L)) }), 0,
                "$e: $s L=$L W=$W, costs 0..$L: $STEPS steps match the model";
        }
    }

    # The limit read per request: a few plans around a base, and a client
    # whose plan changes now and then or every request.
    my @plans = ([[1, 2, 5], 1000], [[3, 5, 8], 5000], [[10, 4, 7, 12], 1000], [[7, 3], 3001],
        [[50, 20, 80], 60000], [[2, 3], 7], [[200, 150, 240], 3], [[6, 5, 9], 1001]);
    for my $s (STRATEGIES) {
        for my $pl (@plans) {
            my ($Ls, $W) = @$pl;
            for my $every (1, 5) {
                srand(3000 * $Ls->[0] + $W + length($s) + $every);
                my ($L, $n) = ($Ls->[0], 0);
                my $pick = sub {
                    $L = $Ls->[ int(rand(@$Ls)) ] if ++$n % $every == 0;
                    return ($L, cost_of($L));
                };
                is timeline($e, $s, $Ls->[0], $W, 1, $pick), 0,
                    "$e: $s limits @$Ls (changing every $every), W=$W, costs: $STEPS steps match the model";
            }
        }
    }

    # Forced charges (mode 4, RLaaSCountIf: the response is sent, the
    # request counts whatever the check said): half the requests forced,
    # costs, a fixed and a changing limit. Counters overshoot the limit,
    # buckets stay within their capacity.
    for my $s (STRATEGIES) {
        for my $cf ([1, 1000], [3, 1000], [5, 5000], [7, 3001], [4, 7], [12, 250]) {
            my ($L, $W) = @$cf;
            srand(4000 * $L + $W + length $s);
            is timeline($e, $s, $L, $W, 0, sub { ($L, cost_of($L), rand() < 0.5) }), 0,
                "$e: $s L=$L W=$W, forced charges: $STEPS steps match the model";
        }
        srand(4100 + length $s);
        my $L = 5;
        is timeline($e, $s, 5, 1001, 1, sub {
            $L = (3, 5, 9)[ int(rand(3)) ] if rand() < 0.3;
            return ($L, cost_of($L), rand() < 0.5) }), 0,
            "$e: $s limits 3/5/9 changing, forced charges: $STEPS steps match the model";
    }

    # Credits between the requests (lua/credit.lua; RLaaSCountIf's refunds,
    # the console's credit): units back to the last request's charge, to
    # older ones, or now's; the state never below fresh, the next replies
    # as the model says. A fixed and a changing limit, with costs.
    for my $s (STRATEGIES) {
        for my $cf ([1, 1000], [3, 1000], [5, 5000], [7, 3001], [4, 7], [12, 250], [50, 60000], [200, 3]) {
            my ($L, $W) = @$cf;
            srand(5000 * $L + $W + length $s);
            is timeline($e, $s, $L, $W, 0, sub { ($L, cost_of($L)) }, 0.3), 0,
                "$e: $s L=$L W=$W, costs and credits: $STEPS steps match the model";
        }
        srand(5100 + length $s);
        my $L = 5;
        is timeline($e, $s, 5, 1001, 1, sub {
            $L = (3, 5, 9)[ int(rand(3)) ] if rand() < 0.3;
            return ($L, cost_of($L)) }, 0.3), 0,
            "$e: $s limits 3/5/9 changing, credits: $STEPS steps match the model";
    }

    # The limit fixed, read per request all the same (mode 1): as with mode 0.
    for my $s (STRATEGIES) {
        srand(77 + length $s);
        is timeline($e, $s, 7, 3001, 1, sub { (7, cost_of(7)) }), 0, "$e: $s L=7 mode 1: as mode 0";
    }
}

# The sliding log sharing its key with a service that runs the seeds' own
# script (RLaaS::Seeds, seeds/003 as written, its clock the same fake
# time): the model's one log holds both, the seeds' entries of one unit
# each, and the seeds' decisions (fewer entries than L, whatever their
# units) are checked as well as every field of ours. Mostly the seeds' or
# mostly ours; costs; forced charges; refunds (ours alone given back). Lua only: the local engine never
# meets another writer's members.
sub mixed_timeline {
    my ($L, $W, $p, $pick) = @_;
    my $K = 'rlaas:rate_limit:mix' . $kn++;
    my $m = Model->new('sliding_log', $L, $W);
    my ($now, $bad, $want) = (T0 + int(rand($W)), 0, [1, $L, 0, 0]);
    for my $step (1 .. $STEPS) {
        if (rand() < $p) {
            my $x = $h->run_seeds($K, $L, $W, $now);
            my $ok = $m->seeds_hit($now, $L);
            if ($x->[0] != $ok) {
                $bad++;
                diag "seeds L=$L W=$W step $step t=" . ($now - T0) . ": got $x->[0], want $ok";
            }
        } else {
            my ($c, $force) = $pick->();
            my $got = $h->run('sliding_log', $K, $L, $W, $now, 0, cost => $c, mode => $force ? 4 : 0);
            my $allowed = $m->hit($now, $L, $c, 1, $force);
            $want = $m->expect($now, $allowed, $L, $c);
            if (!ref $got || "@$got" ne "@$want") {
                $bad++;
                diag "lua sliding_log mixed L=$L W=$W cost=$c force=" . ($force ? 1 : 0) . " step $step t="
                    . ($now - T0) . ": got @{[ref $got ? qq(@$got) : $got]}, want @$want";
            }
        }
        if (rand() < 0.1) {
            # a refund (RLaaSCountIf): ours given back, never the seeds'
            my ($n, $age) = (1 + int(rand(3)), int(rand($W / 2)));
            my $got = $h->run_credit($now, $age, ['sliding_log', $K, $L, $W, $n, 0]);
            my $give = [1, $m->credit($now, $now - $age, $L, $n), 0, 0];
            if (!ref $got || "@$got" ne "@$give") {
                $bad++;
                diag "lua sliding_log mixed credit $n age $age step $step t=" . ($now - T0)
                    . ": got @{[ref $got ? qq(@$got) : $got]}, want @$give";
            }
        }
        last if $bad > 5;
        my $x = rand;
        $now += $x < 0.2 ? 0
            : $x < 0.3 ? ($want->[3] ? $want->[3] - 1 : 0)
            : $x < 0.4 ? $want->[3]
            : $x < 0.8 ? int(rand(2 * $W / $L + 2))
            : $x < 0.95 ? int(rand($W + 1))
            : int(rand(3 * $W + 1));
    }
    return $bad;
}
for my $cf ([1, 1000], [3, 1000], [5, 5000], [10, 1000], [12, 2000], [50, 60000], [3, 86400000], [120, 60000]) {
    my ($L, $W) = @$cf;
    # 0.95: runs of the seeds' members longer than the scans reach
    for my $p (0.3, 0.7, 0.95) {
        srand(5000 * $L + $W + 10 * $p);
        is mixed_timeline($L, $W, $p, sub { (1, 0) }), 0,
            "lua: sliding_log L=$L W=$W with the seeds' script ($p of the calls), cost 1: $STEPS steps match the model";
        srand(6000 * $L + $W + 10 * $p);
        is mixed_timeline($L, $W, $p, sub { (cost_of($L), rand() < 0.2) }), 0,
            "lua: sliding_log L=$L W=$W with the seeds' script ($p of the calls), costs, forced charges: $STEPS steps match the model";
    }
}

is_deeply [$h->no_ttl], [], 'every key written had a TTL';
diag "calls replayed (TTL read straddled a ms): $h->{ambiguous}" if $h->{ambiguous};
done_testing;
