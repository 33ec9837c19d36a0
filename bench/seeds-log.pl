#!/usr/bin/env perl
# What one call of the sliding log script costs Redis, alone on its key and
# sharing it with a service that runs the seeds' own script (seeds/003, as
# t/lib/RLaaS/Seeds.pm holds it), on a private redis-server, the script's
# production text (Redis TIME): per call of ours, the microseconds INFO
# commandstats gives (EVALSHA: ours; EVAL: the seeds'), the ZRANGE and
# ZSCORE commands it ran (the seeds' script runs neither), and the CPU time
# redis-server spent (/proc, both scripts' together in the mixed cases; on
# a loaded machine the CPU time is the steadier figure). Each case runs
# BENCH_ROUNDS (3) times; the lowest figures are printed.
#
#   perl bench/seeds-log.pl [JOINED_SCRIPT]   (default build/lua/sliding_log.lua)
#
# Cases (BENCH_N (20000) calls of ours, a 60 s window):
#   pure-grow     ours alone, limit 10^9: every call allowed, the log grows
#   pure-full     ours alone, limit 100: full, nearly every call denied
#   pure-costs    ours alone, limit 1000, costs 1..5: retry by bisection
#   mix-1:1       the seeds' script and ours alternating, limit 1000 each
#   mix-1:1-costs the same, ours of costs 1..5: the retry walks
#   mix-30:1      bursts of 30 of the seeds' calls, one of ours between
#   mix-bursts    bursts of 250 of the seeds' calls and 250 of ours, costs
#                 1..5 (the worst layout: long runs at both ends)
#   before        1000 live members of the layout before (upgrade), then ours
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use RLaaS::Redis;
use RLaaS::Seeds qw(SEEDS_SLIDING_WINDOW);
use Time::HiRes qw(time);

my $path = shift // "$FindBin::Bin/../build/lua/sliding_log.lua";
my $N = $ENV{BENCH_N} || 20000;
open my $fh, '<', $path or die "$path: $!";
my $text = do { local $/; <$fh> };
my $r = RLaaS::Redis->start;
my $sha = $r->cmd('SCRIPT', 'LOAD', $text);
my $W = 60000;

my $ROUNDS = $ENV{BENCH_ROUNDS} || 3;

sub stats {
    my %s;
    for (split /\r?\n/, $r->cmd('INFO', 'commandstats')) {
        $s{$1} = [$2, $3] if /^cmdstat_(\w+):calls=(\d+),usec=(\d+)/;
    }
    return \%s;
}

# redis-server's CPU time so far, in microseconds
sub cpu {
    open my $fh, '<', '/proc/' . $r->pid . '/stat' or return 0;
    my @f = split ' ', (split /\) /, scalar <$fh>)[1];
    return ($f[11] + $f[12]) * 1e6 / 100;
}

# @plan: rounds of calls, each [ours, cost] or [seeds]; a round is one
# pipeline, the seeds' clock read as it is sent (its calls of one round
# share a ms, as a burst would)
sub run_case {
    my ($name, $K, $L, @plan) = @_;
    my %best;
    for (1 .. $ROUNDS) {
        $r->cmd('DEL', $K);
        $r->cmd('CONFIG', 'RESETSTAT');
        my $c0 = cpu();
        for my $round (@plan) {
            my $now = int(time * 1000);
            my @cmds = map {
                $_->[0] eq 'ours'
                    ? ['EVALSHA', $sha, 1, $K, $L, $W, $_->[1], 0]
                    : ['EVAL', SEEDS_SLIDING_WINDOW, 1, $K, $now, $W / 1000, $L]
            } @$round;
            for ($r->pipeline(@cmds)) { die "$name: $_" if RLaaS::Redis::is_error($_) }
        }
        my $s = stats();
        my $oc = $s->{evalsha}[0];
        my %x = (ours => $s->{evalsha}[1] / $oc, seeds => $s->{eval} ? $s->{eval}[1] / $s->{eval}[0] : 0,
            cmds => (($s->{zrange} || [0])->[0] + ($s->{zscore} || [0])->[0]) / $oc, cpu => (cpu() - $c0) / $oc);
        for (keys %x) { $best{$_} = $x{$_} if !defined $best{$_} || $x{$_} < $best{$_} }
        $best{n} = $oc;
    }
    printf "%-13s %6d calls: ours %7.1f us, seeds' %5.1f us (commandstats); ZRANGE+ZSCORE %5.1f; redis CPU %7.1f us; log %d\n",
        $name, $best{n}, $best{ours}, $best{seeds}, $best{cmds}, $best{cpu}, $r->cmd('ZCARD', $K);
}

sub rounds { my ($size, @calls) = @_; my @r; push @r, [splice @calls, 0, $size] while @calls; @r }

srand(1);
print "script: $path\n";
run_case('pure-grow', 'rlaas:rate_limit:b1', 1e9, rounds(500, map { ['ours', 1] } 1 .. $N));
run_case('pure-full', 'rlaas:rate_limit:b2', 100, rounds(500, map { ['ours', 1] } 1 .. $N));
run_case('pure-costs', 'rlaas:rate_limit:b3', 1000, rounds(500, map { ['ours', 1 + int(rand(5))] } 1 .. $N));
run_case('mix-1:1', 'rlaas:rate_limit:b4', 1000, map { [['seeds'], ['ours', 1]] } 1 .. $N);
run_case('mix-1:1-costs', 'rlaas:rate_limit:b5', 1000, map { [['seeds'], ['ours', 1 + int(rand(5))]] } 1 .. $N);
run_case('mix-30:1', 'rlaas:rate_limit:b6', 1000, map { [(['seeds']) x 30, ['ours', 1]] } 1 .. $N / 10);
run_case('mix-bursts', 'rlaas:rate_limit:b7', 1000,
    map { [(['seeds']) x 250], [map { ['ours', 1 + int(rand(5))] } 1 .. 250] } 1 .. $N / 250);
{
    # the layout before: "<16-digit total>-<units>", 1000 live ones
    my $K = 'rlaas:rate_limit:b8';
    my %best;
    for (1 .. $ROUNDS) {
        $r->cmd('DEL', $K);
        my $now = int(time * 1000);
        $r->cmd('ZADD', $K, map { ($now - 1000 + $_, sprintf('%016d-1', $_)) } 1 .. 1000);
        $r->cmd('CONFIG', 'RESETSTAT');
        my $c0 = cpu();
        $r->pipeline(map { ['EVALSHA', $sha, 1, $K, 1100, $W, 1, 0] } 1 .. 2000);
        my $s = stats();
        my $oc = $s->{evalsha}[0];
        my %x = (ours => $s->{evalsha}[1] / $oc, cmds => (($s->{zrange} || [0])->[0] + ($s->{zscore} || [0])->[0]) / $oc,
            cpu => (cpu() - $c0) / $oc);
        for (keys %x) { $best{$_} = $x{$_} if !defined $best{$_} || $x{$_} < $best{$_} }
    }
    printf "%-13s %6d calls: ours %7.1f us (commandstats); ZRANGE+ZSCORE %5.1f; redis CPU %7.1f us; "
        . "1000 live members of the layout before, then ours\n", 'before', 2000, $best{ours}, $best{cmds}, $best{cpu};
}
$r->stop;
