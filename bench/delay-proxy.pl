#!/usr/bin/perl
# bench/delay-proxy.pl - a TCP relay that holds every chunk of bytes for a
# fixed time in each direction: Redis made "further away" for the -slow
# benchmark cases on machines without tc netem.
#
#   delay-proxy.pl LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT DELAY_MS
#
# One process, one select() loop; each connection keeps its order. The
# delay is added to whatever the relay itself costs (tens of microseconds
# on loopback), so the round trip grows by a little more than 2 x DELAY_MS.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw(time);

my ($lport, $uhost, $uport, $delay_ms) = @ARGV;
die "usage: $0 LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT DELAY_MS\n"
    unless defined $delay_ms && $delay_ms =~ /^\d+(\.\d+)?$/;
my $delay = $delay_ms / 1000;

my $listen = IO::Socket::INET->new(
    LocalAddr => '127.0.0.1', LocalPort => $lport, Listen => 128,
    ReuseAddr => 1, Proto => 'tcp') or die "listen on $lport: $!\n";
my $sel = IO::Select->new($listen);
my %peer;    # fileno => the socket on the other side
my %queue;   # fileno of the receiving side => [[due, bytes], ...]
my %sock;    # fileno => socket

sub close_pair {
    my ($s) = @_;
    my $o = $peer{ fileno $s };
    for my $x (grep { defined } $s, $o) {
        my $fd = fileno $x;
        next unless defined $fd;
        $sel->remove($x);
        delete $peer{$fd};
        delete $queue{$fd};
        delete $sock{$fd};
        close $x;
    }
}

sub accept_one {
    my $c = $listen->accept or return;
    my $u = IO::Socket::INET->new(
        PeerAddr => $uhost, PeerPort => $uport, Proto => 'tcp');
    unless ($u) { close $c; return; }
    for my $x ($c, $u) { $x->autoflush(1); setsockopt($x, 6, 1, 1); }  # TCP_NODELAY
    $peer{ fileno $c } = $u;
    $peer{ fileno $u } = $c;
    @sock{ fileno $c, fileno $u } = ($c, $u);
    $sel->add($c, $u);
}

# Writes what is due; returns the time until the next chunk is due.
sub flush_due {
    my $now = time;
    my $next;
    for my $fd (keys %queue) {
        my $q = $queue{$fd};
        while (@$q && $q->[0][0] <= $now) {
            my $bytes = (shift @$q)->[1];
            my $s = $sock{$fd} or last;
            my $off = 0;
            while ($off < length $bytes) {
                my $n = syswrite($s, $bytes, length($bytes) - $off, $off);
                unless ($n) { close_pair($s); last; }
                $off += $n;
            }
        }
        if ($queue{$fd} && @{ $queue{$fd} }) {
            my $wait = $queue{$fd}[0][0] - $now;
            $next = $wait if !defined $next || $wait < $next;
        }
        else {
            delete $queue{$fd};
        }
    }
    return $next;
}

$SIG{TERM} = $SIG{INT} = sub { exit 0 };
for (;;) {
    my $wait = flush_due();
    for my $s ($sel->can_read(defined $wait ? ($wait > 0 ? $wait : 0) : undef)) {
        if ($s == $listen) { accept_one(); next; }
        my $buf;
        my $n = sysread($s, $buf, 65536);
        unless ($n) { close_pair($s); next; }
        my $o = $peer{ fileno $s } or next;
        push @{ $queue{ fileno $o } }, [time + $delay, $buf];
    }
}
