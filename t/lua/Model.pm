package Model;
# Reference models of the six strategies for t/lua/30-model.t and
# t/lua/31-multi.t: plain exact integer arithmetic (no ticks, no packing,
# no TTLs), written from SPEC's definitions. Times are integer ms; `use
# integer` keeps everything exact (products stay far below 2^63 for the
# configurations tested).
#
# A request has a limit L (it may differ from one request to the next: the
# limit read per request) and a cost c (units; 0 checks without charging:
# allowed iff one unit fits; need = max(c, 1) units must fit). A denied
# request never charges, unless the charge is forced (mode bit 4,
# RLaaSCountIf after the response): then the counters count it whole and
# the buckets fill to their capacity at most (token: no fewer than 0
# tokens; leaky, gcra: no more than L hits of water). What each strategy
# keeps:
#   fixed, sliding, sliding_log: the units charged (per window, per hit);
#     the limit at hand is compared with them;
#   token: the tokens left (in 1/W token), refilled since the last charge
#     at the limit at hand and never past it (the bucket follows the
#     limit);
#   leaky, gcra: the water (in 1/W hit), drained since the last charge at
#     the limit of that charge, then never past the limit at hand.
use strict;
use warnings;
use integer;

sub new {
    my ($class, $s, $L, $W) = @_;
    return bless { s => $s, L => $L, W => $W, st => {} }, $class;
}

sub clone {
    my ($self) = @_;
    my %st;
    for my $k (keys %{ $self->{st} }) {
        my $v = $self->{st}{$k};
        $st{$k} = ref $v eq 'HASH' ? {%$v} : ref $v eq 'ARRAY' ? [map { [@$_] } @$v] : $v;
    }
    return bless { %$self, st => \%st }, ref $self;
}

# One request at time $now with limit $L (default the model's) and cost $c
# (default 1): 1 allowed, 0 denied; charged when allowed and $commit (1 by
# default). A request that is not committed only checks; with $force a
# committed one charges whatever it decides.
sub hit {
    my ($self, $now, $L, $c, $commit, $force) = @_;
    $L //= $self->{L};
    $c //= 1;
    $commit //= 1;
    my $need = $c > 0 ? $c : 1;
    my ($W, $st, $s) = ($self->{W}, $self->{st}, $self->{s});
    my $charge = sub { $commit && $c > 0 };
    my $ok;
    if ($s eq 'fixed') {
        my $i = $now / $W;
        my $n = $st->{c}{$i} || 0;
        $ok = $n + $need <= $L ? 1 : 0;
        $st->{c}{$i} = $n + $c if $charge->() && ($ok || $force);
        return $ok;
    }
    if ($s eq 'sliding_log') {
        my @in = grep { $_->[0] > $now - $W } @{ $st->{log} || [] };
        $st->{log} = \@in;
        my $used = 0;
        $used += $_->[1] for @in;
        $ok = $used + $need <= $L ? 1 : 0;
        push @{ $st->{log} }, [$now, $c] if $charge->() && ($ok || $force);
        return $ok;
    }
    if ($s eq 'sliding') {
        my $i = $now / $W;
        my $e = $now - $i * $W;
        my $p = $st->{c}{ $i - 1 } || 0;
        my $n = $st->{c}{$i} || 0;
        $ok = $p * ($W - $e) + ($n + $need) * $W <= $L * $W ? 1 : 0;
        $st->{c}{$i} = $n + $c if $charge->() && ($ok || $force);
        return $ok;
    }
    # Buckets in units of 1/W token: a token is W units, L units per ms.
    if ($s eq 'token') {
        my $lvl = $L * $W;
        if (defined $st->{ts}) {
            $lvl = $st->{lvl} + ($now - $st->{ts}) * $L;
            $lvl = $L * $W if $lvl > $L * $W;
        }
        $ok = $lvl >= $need * $W ? 1 : 0;
        if ($charge->() && ($ok || $force)) {
            my $to = $lvl - $c * $W;
            @{$st}{qw(lvl ts L)} = ($to < 0 ? 0 : $to, $now, $L);
        }
        return $ok;
    }
    if ($s eq 'leaky' || $s eq 'gcra') {
        my $lvl = 0;
        if (defined $st->{ts}) {
            my $lw = $st->{L};
            $lvl = $st->{lvl} - ($now - $st->{ts}) * $lw;
            $lvl = 0 if $lvl < 0;
            $lvl = $L * $W if $lvl > $L * $W;
        }
        $ok = $lvl + $need * $W <= $L * $W ? 1 : 0;
        if ($charge->() && ($ok || $force)) {
            my $to = $lvl + $c * $W;
            @{$st}{qw(lvl ts L)} = ($to > $L * $W ? $L * $W : $to, $now, $L);
        }
        return $ok;
    }
    die "unknown strategy $s";
}

# A credit (lua/credit.lua) at $now of $n units charged at $at (<= $now)
# under limit $L: the units given back. fixed: the window of $at if it is
# now's; sliding: that window, then (it being now's) the previous one; the
# sliding log: our first live hits at or after $at, if ours there hold
# enough units and at most 256 members follow $at (the script renumbers
# those), else our newest (a seeds' member is never given back);
# token: tokens back up to full; leaky, gcra: water
# out down to empty. Never below the fresh state.
sub credit {
    my ($self, $now, $at, $L, $n) = @_;
    $L //= $self->{L};
    my ($W, $st, $s) = ($self->{W}, $self->{st}, $self->{s});
    my $take = sub { my ($have) = @_; my $t = $have < $n ? $have : $n; $n -= $t; $t };
    if ($s eq 'fixed') {
        my $i = $now / $W;
        return 0 unless $at / $W == $i;
        my $g = $take->($st->{c}{$i} || 0);
        $st->{c}{$i} -= $g if $g;
        return $g;
    }
    if ($s eq 'sliding') {
        my ($i, $j, $g) = ($now / $W, $at / $W, 0);
        if ($j == $i) {
            my $t = $take->($st->{c}{$i} || 0);
            $st->{c}{$i} -= $t;
            $g += $t;
        }
        if ($j == $i || $j == $i - 1) {
            my $t = $take->($st->{c}{ $i - 1 } || 0);
            $st->{c}{ $i - 1 } -= $t;
            $g += $t;
        }
        return $g;
    }
    if ($s eq 'sliding_log') {
        # ours only (a seeds' member, [ms, 1, 1], is never given back);
        # at most 256 members from at on, foreign ones counted
        my @in = grep { $_->[0] > $now - $W } @{ $st->{log} || [] };
        my ($live, $after, $hits) = (0, 0, 0);
        for (@in) {
            $hits++ if $_->[0] >= $at;
            next if $_->[2];
            $live += $_->[1];
            $after += $_->[1] if $_->[0] >= $at;
        }
        my $t = $live < $n ? $live : $n;
        my $left = $t;
        my @ours = grep { !$_->[2] } @in;
        my @order = $after >= $t && $hits <= 256
            ? grep { $_->[0] >= $at } @ours : reverse @ours;
        for my $e (@order) {
            my $x = $e->[1] < $left ? $e->[1] : $left;
            $e->[1] -= $x;
            $left -= $x;
        }
        $st->{log} = [grep { $_->[1] > 0 } @in];
        return $t;
    }
    return 0 unless defined $st->{ts};
    if ($s eq 'token') {
        my $lvl = $st->{lvl} + ($now - $st->{ts}) * $L;
        $lvl = $L * $W if $lvl > $L * $W;
        my $g = $L - $lvl / $W;
        $g = $n if $n < $g;
        $lvl += $n * $W;
        if ($lvl >= $L * $W) { %$st = () } else { @{$st}{qw(lvl ts L)} = ($lvl, $now, $L) }
        return $g;
    }
    # leaky, gcra
    my $lvl = $st->{lvl} - ($now - $st->{ts}) * $st->{L};
    $lvl = 0 if $lvl < 0;
    $lvl = $L * $W if $lvl > $L * $W;
    my $g = ($lvl + $W - 1) / $W;
    $g = $n if $n < $g;
    $lvl -= $n * $W;
    if ($lvl <= 0) { %$st = () } else { @{$st}{qw(lvl ts L)} = ($lvl, $now, $L) }
    return $g;
}

# sliding_log only: a request of a service running the seeds' own script
# (seeds/003) on the same key at $now with limit $L: it counts the
# entries in the window, whatever their units (ZCARD), and adds one of one
# unit when fewer than $L. Returns 1 allowed, 0 denied.
sub seeds_hit {
    my ($self, $now, $L) = @_;
    die "seeds_hit: sliding_log only\n" unless $self->{s} eq 'sliding_log';
    my $W = $self->{W};
    my @in = grep { $_->[0] > $now - $W } @{ $self->{st}{log} || [] };
    $self->{st}{log} = \@in;
    return 0 unless @in < $L;
    push @{ $self->{st}{log} }, [$now, 1, 1];
    return 1;
}

# What the reply should be after a request at $now (limit $L, cost $c)
# that decided $allowed: [allowed, remaining, reset_ms, retry_ms], found by
# trying, not by formula: remaining is the units that still fit now, reset
# the time until all L fit, retry the time until a request of this one's
# units fits (0 if it does now).
sub expect {
    my ($self, $now, $allowed, $L, $c) = @_;
    $L //= $self->{L};
    $c //= 1;
    my $need = $c > 0 ? $c : 1;
    my $m = $self->clone;
    my $rem = 0;
    $rem++ while $rem <= $L && $m->hit($now, $L, 1);
    my $retry = $rem >= $need ? 0
        : $self->_first(1, sub { $_[0]->hit($now + $_[1], $L, $need) });
    my $reset = $self->_first(0, sub {
        my ($m, $d) = @_;
        for (1 .. $L) { return 0 unless $m->hit($now + $d, $L, 1) }
        return 1;
    });
    return [$allowed, $rem, $reset, $retry];
}

# Smallest d >= $lo with $pred true on a fresh clone (monotone in d).
sub _first {
    my ($self, $lo, $pred) = @_;
    my $hi = 3 * $self->{W} + 1;
    until ($pred->($self->clone, $hi)) {
        $hi *= 2;
        die "model: never true within $hi ms\n" if $hi > 1_000_000 * $self->{W};
    }
    while ($lo < $hi) {
        my $mid = $lo + ($hi - $lo) / 2;
        if ($pred->($self->clone, $mid)) { $hi = $mid } else { $lo = $mid + 1 }
    }
    return $lo;
}

1;
