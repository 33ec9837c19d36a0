package Model;
# Reference models of the six strategies for t/lua/30-model.t: plain exact
# integer arithmetic (no ticks, no packing, no TTLs), written from SPEC's
# definitions. Times are integer ms; `use integer` keeps everything exact
# (products stay far below 2^63 for the configurations tested).
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
        $st{$k} = ref $v eq 'HASH' ? {%$v} : ref $v eq 'ARRAY' ? [@$v] : $v;
    }
    return bless { %$self, st => \%st }, ref $self;
}

# One request at time $now: 1 allowed, 0 denied (state updated as SPEC says).
sub hit {
    my ($self, $now) = @_;
    my ($L, $W, $st) = @{$self}{qw(L W st)};
    my $s = $self->{s};
    if ($s eq 'fixed') {
        my $n = ++$st->{c}{ $now / $W };      # denied hits count too
        return $n <= $L ? 1 : 0;
    }
    if ($s eq 'sliding_log') {
        my @in = grep { $_ > $now - $W } @{ $st->{log} || [] };
        $st->{log} = \@in;
        return 0 if @in >= $L;
        push @{ $st->{log} }, $now;
        return 1;
    }
    if ($s eq 'sliding') {
        my $i = $now / $W;
        my $e = $now - $i * $W;
        my $p = $st->{c}{ $i - 1 } || 0;
        my $c = $st->{c}{$i} || 0;
        return 0 if $p * ($W - $e) + ($c + 1) * $W > $L * $W;
        $st->{c}{$i}++;
        return 1;
    }
    # Buckets in units of 1/W token: a token is W units, L units per ms.
    if ($s eq 'token') {
        my $lvl = defined $st->{lvl} ? $st->{lvl} + ($now - $st->{ts}) * $L : $L * $W;
        $lvl = $L * $W if $lvl > $L * $W;
        @{$st}{qw(lvl ts)} = ($lvl, $now);
        return 0 if $lvl < $W;
        $st->{lvl} -= $W;
        return 1;
    }
    if ($s eq 'leaky') {
        my $lvl = defined $st->{lvl} ? $st->{lvl} - ($now - $st->{ts}) * $L : 0;
        $lvl = 0 if $lvl < 0;
        @{$st}{qw(lvl ts)} = ($lvl, $now);
        return 0 if $lvl + $W > $L * $W;
        $st->{lvl} += $W;
        return 1;
    }
    if ($s eq 'gcra') {
        # Times in units of 1/L ms, relative to the first request.
        $st->{base} //= $now;
        my $t = ($now - $st->{base}) * $L;
        my $tat = defined $st->{tat} && $st->{tat} > $t ? $st->{tat} : $t;
        return 0 if $tat - $t > ($L - 1) * $W;
        $st->{tat} = $tat + $W;
        return 1;
    }
    die "unknown strategy $s";
}

# What the reply should be after a hit at $now that decided $allowed:
# [allowed, remaining, reset_ms, retry_ms], found by trying, not by formula.
sub expect {
    my ($self, $now, $allowed) = @_;
    my $L = $self->{L};
    my $c = $self->clone;
    my $rem = 0;
    $rem++ while $rem <= $L && $c->hit($now);
    my $retry = $rem > 0 ? 0 : $self->_first(1, sub { $_[0]->hit($now + $_[1]) });
    my $reset = $self->_first(0, sub {
        my ($m, $d) = @_;
        for (1 .. $L) { return 0 unless $m->hit($now + $d) }
        return 1;
    });
    return [$allowed, $rem, $reset, $retry];
}

# Smallest d >= $lo with $pred true on a fresh clone (monotone in d).
sub _first {
    my ($self, $lo, $pred) = @_;
    my $hi = 3 * $self->{W} + 1;
    $hi *= 2 until $pred->($self->clone, $hi);
    while ($lo < $hi) {
        my $mid = $lo + ($hi - $lo) / 2;
        if ($pred->($self->clone, $mid)) { $hi = $mid } else { $lo = $mid + 1 }
    }
    return $lo;
}

1;
