# Every reply field of every strategy against a reference model, on
# seeded pseudo-random timelines (the same every run), for both engines:
# the Lua scripts in Redis and the local engine's C strategies and table
# (build/unit/rlaas_local_cli), through the same cases. The model finds
# remaining/reset/retry by trying requests, so the formulas are checked,
# not restated. Keys expire in fake time exactly when the TTLs the scripts
# set say (ScriptTest::run), and records when the local table says, so a
# TTL that is too short fails here too, and so does state that outlives
# its TTL and gets misread.
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
    lua => sub { $h->run(@_) },
    c   => sub { my ($s, $K, @rest) = @_; scalar $lc->run($s, key_arg($s, $K), @rest) },
);

my @configs = ([1, 1000], [2, 1], [5, 5000], [3, 1000], [10, 1000],
    [7, 3001], [4, 7], [12, 250], [50, 60000], [3, 86400000], [200, 3],
    [6, 1001], [9, 10]);
my $STEPS = $ENV{RLAAS_MODEL_STEPS} || 150;

my $kn = 0;
for my $e (qw(lua c)) {
    for my $s (STRATEGIES) {
        for my $cf (@configs) {
            my ($L, $W) = @$cf;
            srand(1000 * $L + $W + length $s);   # same timeline every run
            my $K = 'rlaas:rate_limit:m' . $kn++;
            my $m = Model->new($s, $L, $W);
            my $now = T0 + int(rand($W));
            my ($bad, $last) = (0, [0, 0, 0, 0]);
            for my $step (1 .. $STEPS) {
                my $got = $engine{$e}->($s, $K, $L, $W, $now);
                my $allowed = $m->hit($now);
                my $want = $m->expect($now, $allowed);
                if (!ref $got || "@$got" ne "@$want") {
                    $bad++;
                    diag "$e $s L=$L W=$W step $step t=" . ($now - T0)
                        . ": got @{[ref $got ? qq(@$got) : $got]}, want @$want";
                    last if $bad > 5;
                }
                $last = $want;
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
            is $bad, 0, "$e: $s L=$L W=$W: $STEPS steps match the model";
        }
    }
}
is_deeply [$h->no_ttl], [], 'every key written had a TTL';
diag "calls replayed (TTL read straddled a ms): $h->{ambiguous}" if $h->{ambiguous};
done_testing;
