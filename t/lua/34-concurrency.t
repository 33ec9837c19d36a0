# Concurrency limits (lua/concurrency.lua in the multi script, lua/release.lua;
# the local engine's src/core/rlaas_conc.c: every call here is made of both
# and compared, ScriptTest, reply, record and TTL): slots taken while fewer
# than N are held, given back by token, gone after T, the clock rule, dry
# runs, all or nothing with the other policies of a request; and random
# timelines of takes and releases against a model, for both engines.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
my $n = 0;
sub K { 'rlaas:rate_limit:conc-' . $n++ }
sub tok { sprintf '%016x', $_[0] }
sub take { my ($t, $K, $N, $T, $k, $m) = @_; $h->run_multi($t, ['conc', $K, $N, $T, tok($k), $m // 0]) }
sub back { my ($t, $K, $k) = @_; $h->run_release($t, ['conc', $K, 1, 1, tok($k), 0]) }

subtest 'N slots, then refused; a release lets the next in' => sub {
    my $K = K();
    is_deeply take(T0 + 1, $K, 2, 60000, 1), [1, 1, 0, 0], 'first: allowed, 1 left';
    is_deeply take(T0 + 2, $K, 2, 60000, 2), [1, 0, 1000, 0], 'second: allowed, none left';
    is_deeply take(T0 + 3, $K, 2, 60000, 3), [0, 0, 1000, 1000], 'third: refused, retry in a second';
    is $r->cmd('ZCARD', "$K:conc"), 2, 'two slots held: the refused one took none';
    is_deeply back(T0 + 4, $K, 3), [1, 0, 0, 0], 'the refused one had nothing to give back';
    is_deeply back(T0 + 5, $K, 1), [1, 1, 0, 0], 'the first gives its slot back';
    is_deeply back(T0 + 6, $K, 1), [1, 0, 0, 0], '... once';
    is $h->pttl("$K:conc"), 60000 - 4, 'a release leaves the TTL as it was';
    is_deeply take(T0 + 7, $K, 2, 60000, 4), [1, 0, 1000, 0], 'the next gets in';
    is $h->pttl("$K:conc"), 60000, 'the newest slot sets the TTL';
    back(T0 + 8, $K, $_) for 2, 4;
    is $h->pttl("$K:conc"), -2, 'the last release: the key is gone';
};

subtest 'a slot lasts T at most' => sub {
    my $K = K();
    take(T0, $K, 1, 1000, 1);
    is_deeply take(T0 + 999, $K, 1, 1000, 2), [0, 0, 1000, 1000], 'held at T - 1';
    is_deeply take(T0 + 1000, $K, 1, 1000, 2), [1, 0, 1000, 0], 'gone at T: the next one in';
    is_deeply back(T0 + 1001, $K, 1), [1, 0, 0, 0], 'the late release finds nothing';
    is $r->cmd('ZCARD', "$K:conc"), 1, 'the slot taken since stays';
    is_deeply take(T0 + 1200, $K, 1, 100, 3), [1, 0, 1000, 0], 'a shorter T ends older slots sooner';
};

subtest 'the clock gone back: slots up to T ahead held, further ahead none' => sub {
    my $K = K();
    take(T0 + 5000, $K, 1, 1000, 1);
    is_deeply take(T0 + 4000, $K, 1, 1000, 2), [0, 0, 1000, 1000], '1000 back: held';
    is_deeply take(T0 + 3999, $K, 1, 1000, 2), [1, 0, 1000, 0], '1001 back: none';
    is $h->pttl("$K:conc"), 1000, 'TTL from the slot taken now';
};

subtest 'dry run: refusals refuse nothing, and what is in flight is known' => sub {
    my $K = K();
    is_deeply take(T0, $K, 1, 60000, 1, 2), [1, 0, 1000, 0], 'first: allowed';
    is_deeply take(T0, $K, 1, 60000, 2, 2), [0, 0, 1000, 1000], 'second: would be refused';
    is $r->cmd('ZCARD', "$K:conc"), 2, '... and holds a slot all the same';
    is_deeply back(T0 + 1, $K, 2), [1, 1, 0, 0], 'given back';
};

subtest 'all or nothing with the other policies of the request' => sub {
    my ($C, $L) = (K(), K());
    my @p = (['conc', $C, 5, 60000, tok(1), 0], ['sliding_log', $L, 1, 60000]);
    is_deeply $h->run_multi(T0 + 1, @p), [1, 4, 0, 0, 1, 0, 60000, 60000], 'both allow: slot taken, hit charged';
    $p[0][4] = tok(2);
    is_deeply $h->run_multi(T0 + 2, @p), [1, 4, 0, 0, 0, 0, 59999, 59999],
        'the log denies; the slots would allow, shown as they are ...';
    is $r->cmd('ZCARD', "$C:conc"), 1, '... and no slot is taken';
    my ($D, $M) = (K(), K());
    take(T0 + 1, $D, 1, 60000, 9);
    my @q = (['conc', $D, 1, 60000, tok(10), 0], ['sliding_log', $M, 5, 60000]);
    is_deeply $h->run_multi(T0 + 2, @q), [0, 0, 1000, 1000, 1, 5, 0, 0], 'the slots are full ...';
    is $r->cmd('ZCARD', $M), 0, '... and the other policy is not charged';
    $q[0][5] = 2;
    is_deeply $h->run_multi(T0 + 3, @q), [0, 0, 1000, 1000, 1, 4, 60000, 0], 'a dry run denies nothing ...';
    is $r->cmd('ZCARD', $M), 1, '... the other policy is charged';
    is $r->cmd('ZCARD', "$D:conc"), 2, '... and the dry run holds a slot';
    my ($E, $F) = (K(), K());
    my @two = (['conc', $E, 1, 60000, tok(20), 0], ['conc', $F, 3, 30000, tok(20), 0]);
    is_deeply $h->run_multi(T0 + 4, @two), [1, 0, 1000, 0, 1, 2, 0, 0], 'two concurrency limits: both taken';
    is_deeply $h->run_release(T0 + 5, map { [@$_] } @two), [1, 1, 0, 0, 1, 1, 0, 0], 'both given back in one call';
};

subtest 'bad arguments: an error, nothing written' => sub {
    my $K = K();
    for my $bad ([0, tok(1), ':conc', 'N 0'], [501, tok(1), ':conc', 'N 501'],
                 [1, 'abc', ':conc', 'a short token'], [1, uc(tok(255)), ':conc', 'upper case'],
                 [1, tok(1), '', 'a key without :conc'], [1, tok(1), ':tb', 'another suffix']) {
        my ($N, $t, $sfx, $what) = @$bad;
        my $e = $r->cmd('EVALSHA', $h->{fake}{multi}, 1, "$K$sfx", 7, $N, 60000, $t, 0, 0, 0);
        ok RLaaS::Redis::is_error($e), "$what: an error reply";
    }
    my $e = $r->cmd('EVALSHA', $h->{fake}{release}, 1, "$K:tb", tok(1), 0, 0);
    ok RLaaS::Redis::is_error($e), 'release of a key without :conc: an error';
    $e = $r->cmd('EVALSHA', $h->{fake}{release}, 1, "$K:conc", 'x' x 16, 0, 0);
    ok RLaaS::Redis::is_error($e), 'release with a bad token: an error';
    is_deeply $r->cmd('KEYS', "$K*"), [], 'nothing written';
};

# ---- random timelines against a model, both engines ----

my $lc = ScriptTest::Local->new;
my %engine = (
    lua => { take => sub { take(@_) }, back => sub { back(@_) } },
    c => {
        take => sub { my ($t, $K, $N, $T, $k, $m) = @_;
            scalar $lc->run_multi($t, ['conc', "$K:conc", $N, $T, tok($k), $m // 0]) },
        back => sub { my ($t, $K, $k) = @_;
            scalar $lc->run_release($t, ['conc', "$K:conc", 1, 1, tok($k), 0]) },
    },
);

# The model: the slots still in the record (token => ms taken), the
# record gone once its TTL (the newest slot's ms + T, as of the last take)
# passed; a take drops the slots older than T or over T ahead, then admits
# while fewer than N are held; a release gives back a slot still there.
sub timeline {
    my ($e, $N, $T, $dry, $steps) = @_;
    my $K = K();
    my (%slot, $bad, $exp);
    my $now = T0 + int(rand(1000));
    my $next = 1;
    for my $step (1 .. $steps) {
        $now += rand() < 0.3 ? int(rand($T + 1)) : int(rand(4));
        $now -= int(rand($T / 2)) if rand() < 0.02;    # the clock goes back
        %slot = () if defined $exp && $now > $exp;
        my ($got, $want);
        if (%slot && rand() < 0.4) {
            my @k = keys %slot;
            my $k = rand() < 0.9 ? $k[int(rand(@k))] : $next + 1000;
            $got = $engine{$e}{back}->($now, $K, $k);
            $want = [1, exists $slot{$k} ? 1 : 0, 0, 0];
            delete $slot{$k};
        } else {
            delete $slot{$_} for grep { $slot{$_} <= $now - $T || $slot{$_} > $now + $T } keys %slot;
            my $held = keys %slot;
            my $ok = $held < $N;
            my $k = $next++;
            $got = $engine{$e}{take}->($now, $K, $N, $T, $k, $dry);
            if ($ok || ($dry && $held < 500)) {
                $slot{$k} = $now;
                my ($top) = sort { $b <=> $a } values %slot;
                $exp = ($top > $now ? $top : $now) + $T;
            }
            my $rem = $ok ? $N - $held - 1 : 0;
            $want = !$ok ? [0, 0, 1000, 1000] : $rem > 0 ? [1, $rem, 0, 0] : [1, 0, 1000, 0];
        }
        next if ref $got && "@$got" eq "@$want";
        $bad++;
        diag "$e N=$N T=$T dry=$dry step $step t=" . ($now - T0)
            . ': got ' . (ref $got ? "@$got" : $got) . ", want @$want";
        last if $bad > 5;
    }
    return $bad // 0;
}

my $STEPS = $ENV{RLAAS_MODEL_STEPS} || 150;
for my $e (qw(lua c)) {
    for my $cf ([1, 1000], [2, 50], [3, 5000], [5, 300], [10, 60000], [4, 7]) {
        for my $dry (0, 2) {
            srand(500 * $cf->[0] + $cf->[1] + $dry);
            is timeline($e, @$cf, $dry, $STEPS), 0, "$e: N=$cf->[0] T=$cf->[1]"
                . ($dry ? ', dry run' : '') . ": $STEPS takes and releases match the model";
        }
    }
}

is_deeply [$h->no_ttl], [], 'every key written had a TTL';
done_testing;
