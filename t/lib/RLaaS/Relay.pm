package RLaaS::Relay;
# A TCP relay standing in for a Redis address that moves or misbehaves:
# a virtual IP, a DNS name, a proxy. httpd is configured with the relay's
# port; the test decides where the relay leads and how it behaves.
#
#   my $relay = RLaaS::Relay->start(port => $p, target => $redis_port);
#   $relay->target($other_port);  # new connections go there; connections
#                                 # already made stay where they are, as
#                                 # behind a proxy or a moved virtual IP
#   $relay->mode('trickle', 40);  # replies one byte every 40 ms
#   $relay->mode('cut');          # requests pass, then the connection is
#                                 # closed instead of passing the reply:
#                                 # the command ran, its answer is lost
#   $relay->mode('delay', 300);   # every chunk held 300 ms, both ways
#                                 # (a far or congested network)
#   $relay->mode('slowstart', 600); # each new connection's first reply
#                                 # held 600 ms, the rest as it comes (a
#                                 # slow connect or TLS handshake)
#   $relay->mode('pass');         # back to normal
#   $relay->stop;
#
# One process with one select() loop, started with fork and steered
# through RLaaS::Orders.
use strict;
use warnings;
use IO::Select ();
use IO::Socket::INET ();
use POSIX ();
use Time::HiRes qw(time);
use parent 'RLaaS::Orders';

sub start {
    my ($class, %o) = @_;
    return $class->spawn('relay', port => $o{port}, target => $o{target},
                         mode => 'pass', arg => 0);
}

sub port { $_[0]{port} }

sub target {
    my ($self, $t) = @_;
    $self->{target} = $t;
    $self->orders;
}

sub mode {
    my ($self, $m, $arg) = @_;
    $self->{mode} = $m;
    $self->{arg} = $arg // 0;
    $self->orders;
}

sub _orders { @{ $_[0] }{qw(target mode arg)} }

# ------------------------------------------------------------ the relay

sub _run {
    my ($self, $parent) = @_;
    $SIG{TERM} = sub { POSIX::_exit(0) };
    $SIG{PIPE} = 'IGNORE';    # a peer gone: the write fails, the pair closes
    $0 = "rlaas relay :$self->{port}";
    my $listen = IO::Socket::INET->new(
        LocalAddr => '127.0.0.1', LocalPort => $self->{port}, Listen => 128,
        ReuseAddr => 1, Proto => 'tcp') or die "listen on $self->{port}: $!\n";
    my $sel = IO::Select->new($listen);
    my (%peer, %side, %out, %sock, %fresh);    # by fileno
    # delay, slowstart: [due time, destination fd, bytes], oldest first
    my @held;
    my ($target, $mode, $arg) = ($self->{target}, 'pass', 0);
    my $next_drip = 0;

    my $read_ctl = sub {
        my @o = $self->take_orders;
        ($target, $mode, $arg) = @o if @o == 3;
    };
    my $close_pair = sub {
        my ($fd) = @_;
        my $other = $peer{$fd};    # copies: the hash entries go away below
        for my $x (grep { defined } $fd + 0, defined $other ? $other + 0 : undef) {
            my $s = delete $sock{$x} or next;
            $sel->remove($s);
            delete @{$_}{$x} for \%peer, \%side, \%out, \%fresh;
            @held = grep { $_->[1] != $x } @held;
            close $s;
        }
    };
    $read_ctl->();

    while (1) {
        POSIX::_exit(0) if getppid() != $parent;
        $read_ctl->();
        # what is due goes out, each connection's in the order it came;
        # a mode that no longer holds lets the rest go at once
        my $release = sub {
            my $holding = $mode eq 'delay' || $mode eq 'slowstart';
            my (@keep, %behind);
            for my $h (@held) {
                if (!$behind{ $h->[1] } && (!$holding || $h->[0] <= time)) {
                    syswrite $sock{ $h->[1] }, $h->[2] if $sock{ $h->[1] };
                } else {
                    $behind{ $h->[1] } = 1;
                    push @keep, $h;
                }
            }
            @held = @keep;
        };
        $release->() if @held;
        my $timeout = @held ? 0.002 : 0.02;
        # by number: closing a pair frees sockets still in the ready list
        my @ready = map { fileno $_ } $sel->can_read($timeout);
        for my $fd (@ready) {
            if ($fd == fileno $listen) {
                my $c = $listen->accept or next;
                my $u = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                    PeerPort => $target, Proto => 'tcp');
                unless ($u) { close $c; next }
                setsockopt($_, 6, 1, 1) for $c, $u;    # TCP_NODELAY
                my ($cf, $uf) = (fileno $c, fileno $u);
                @sock{$cf, $uf} = ($c, $u);
                @peer{$cf, $uf} = ($uf, $cf);
                @side{$cf, $uf} = ('client', 'server');
                $fresh{$uf} = 1;
                $sel->add($c, $u);
                next;
            }
            my $s = $sock{$fd} or next;
            my $n = sysread $s, my $buf, 65536;
            if (!$n) { $close_pair->($fd); next }
            if ($side{$fd} eq 'server' && $mode eq 'cut') {
                $close_pair->($fd);    # the reply is lost
                next;
            }
            my $to = $peer{$fd};
            if ($mode eq 'delay') {
                push @held, [time + $arg / 1000, $to, $buf];
            } elsif ($mode eq 'slowstart' && $side{$fd} eq 'server' && delete $fresh{$fd}) {
                push @held, [time + $arg / 1000, $to, $buf];
            } elsif (grep { $_->[1] == $to } @held) {
                push @held, [time, $to, $buf];    # behind what is held
            } elsif ($side{$fd} eq 'server' && $mode eq 'trickle') {
                $out{$to} .= $buf;
            } else {
                syswrite $sock{$to}, $buf if $sock{$to};
            }
        }
        # trickle: one byte per connection every $arg ms
        if (%out && time >= $next_drip) {
            for my $to (keys %out) {
                next unless $sock{$to} && length $out{$to};
                syswrite $sock{$to}, substr($out{$to}, 0, 1, '');
                delete $out{$to} unless length $out{$to};
            }
            $next_drip = time + $arg / 1000;
        }
        $release->() if @held;
        # a mode that no longer trickles lets the rest go at once
        if ($mode ne 'trickle') {
            for my $to (keys %out) {
                syswrite $sock{$to}, delete $out{$to} if $sock{$to};
            }
        }
    }
}

1;
