package RLaaS::FakeSentinel;
# A sentinel that says what the test tells it to: it answers
# SENTINEL get-master-addr-by-name with any address (a replica's, a
# stranger's, nothing at all), to show that one sentinel that lies or is
# stale cannot move mod_rlaas.
#
#   my $f = RLaaS::FakeSentinel->start(port => $p);    # plain TCP
#   $f->names('127.0.0.1', 6390);  # the master is there, says this one
#   $f->names(undef);              # "I do not know that master" (nil)
#   $f->asked;                     # how many times it was asked
#   $f->stop;
#
# It accepts AUTH, CLIENT and PING, and answers -ERR to anything else. One
# process with one select() loop, started with fork and steered through
# RLaaS::Orders.
use strict;
use warnings;
use File::Spec::Functions qw(catfile);
use IO::Select ();
use IO::Socket::INET ();
use POSIX ();
use parent 'RLaaS::Orders';

sub start {
    my ($class, %o) = @_;
    return $class->spawn('fakesen', port => $o{port}, answer => '-');
}

sub port { $_[0]{port} }

# names(HOST, PORT): the address it gives for any master; names(undef): nil
sub names {
    my ($self, $host, $port) = @_;
    $self->{answer} = defined $host ? "$host:$port" : '-';
    $self->orders;
}

sub _orders { $_[0]{answer} }

sub _count { catfile($_[0]{dir}, 'asked') }

sub asked {
    my $self = shift;
    open my $fh, '<', $self->_count or return 0;
    my $n = <$fh> // 0;
    chomp $n;
    return $n + 0;
}

# ------------------------------------------------------------ the server

sub _bulk { my $s = shift; '$' . length($s) . "\r\n$s\r\n" }

# Whole commands (arrays of bulk strings) at the front of $$buf.
sub _commands {
    my ($buf) = @_;
    my @cmds;
    while ($$buf =~ /\A\*(\d+)\r\n/) {
        my ($n, $at, @args) = ($1, length($&));
        for (1 .. $n) {
            last unless substr($$buf, $at) =~ /\A\$(\d+)\r\n/;
            my ($len, $h) = ($1, length($&));
            last if length($$buf) < $at + $h + $len + 2;
            push @args, substr($$buf, $at + $h, $len);
            $at += $h + $len + 2;
        }
        last unless @args == $n;
        substr($$buf, 0, $at, '');
        push @cmds, \@args;
    }
    return @cmds;
}

sub _run {
    my ($self, $parent) = @_;
    $SIG{TERM} = sub { POSIX::_exit(0) };
    $SIG{PIPE} = 'IGNORE';
    $0 = "rlaas fake sentinel :$self->{port}";
    my $listen = IO::Socket::INET->new(
        LocalAddr => '127.0.0.1', LocalPort => $self->{port}, Listen => 128,
        ReuseAddr => 1, Proto => 'tcp') or die "listen on $self->{port}: $!\n";
    my $sel = IO::Select->new($listen);
    my (%sock, %in);
    my ($answer, $asked) = ('-', 0);
    my $count = $self->_count;
    my $read_ctl = sub {
        my @o = $self->take_orders;
        $answer = $o[0] if @o == 1;
    };
    my $reply = sub {
        my ($args) = @_;
        my $c = lc($args->[0] // '');
        return "+OK\r\n" if $c eq 'auth' || $c eq 'client';
        return "+PONG\r\n" if $c eq 'ping';
        if ($c eq 'sentinel' && lc($args->[1] // '') eq 'get-master-addr-by-name') {
            $asked++;
            if (open my $fh, '>', "$count.tmp") {
                print $fh "$asked\n";
                close $fh;
                rename "$count.tmp", $count;
            }
            return "*-1\r\n" if $answer eq '-';
            my ($h, $p) = $answer =~ /\A(.*):(\d+)\z/;
            return "*2\r\n" . _bulk($h) . _bulk($p);
        }
        return "-ERR unknown command '$c'\r\n";
    };
    $read_ctl->();
    while (1) {
        POSIX::_exit(0) if getppid() != $parent;
        $read_ctl->();
        for my $s ($sel->can_read(0.02)) {
            if ($s == $listen) {
                my $c = $listen->accept or next;
                $sock{ fileno $c } = $c;
                $in{ fileno $c } = '';
                $sel->add($c);
                next;
            }
            my $fd = fileno $s;
            my $n = sysread $s, my $buf, 65536;
            if (!$n) {
                $sel->remove($s);
                delete $sock{$fd};
                delete $in{$fd};
                close $s;
                next;
            }
            $in{$fd} .= $buf;
            syswrite $s, $reply->($_) for _commands(\$in{$fd});
        }
    }
}

1;
