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
# process with one select() loop, started with fork; it reads its orders
# from a small file whenever it changes (as RLaaS::Relay), and exits when
# the test process goes away.
use strict;
use warnings;
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use IO::Select ();
use IO::Socket::INET ();
use POSIX ();
use Time::HiRes qw(sleep);

sub start {
    my ($class, %o) = @_;
    my $dir = tempdir('rlaas-fakesen-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $self = bless { port => $o{port}, dir => $dir,
                       ctl => catfile($dir, 'ctl'), ready => catfile($dir, 'ready'),
                       count => catfile($dir, 'asked'), answer => '-' }, $class;
    $self->_write;
    my $parent = $$;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        eval { $self->_run($parent) };
        if ($@ && open my $e, '>', "$dir/error") { print $e $@; close $e }
        POSIX::_exit(0);
    }
    $self->{pid} = $pid;
    $self->_wait_seen;
    return $self;
}

sub port { $_[0]{port} }

# names(HOST, PORT): the address it gives for any master; names(undef): nil
sub names {
    my ($self, $host, $port) = @_;
    $self->{answer} = defined $host ? "$host:$port" : '-';
    $self->_write;
    $self->_wait_seen;
}

sub asked {
    my $self = shift;
    open my $fh, '<', $self->{count} or return 0;
    my $n = <$fh> // 0;
    chomp $n;
    return $n + 0;
}

sub stop {
    my $self = shift;
    return unless $self->{pid};
    kill 'TERM', $self->{pid};
    waitpid $self->{pid}, 0;
    delete $self->{pid};
}

sub DESTROY { local ($?, $@); $_[0]->stop if $_[0]{pid} }

my $seq = 0;
sub _write {
    my $self = shift;
    $self->{seq} = ++$seq;
    my $tmp = "$self->{ctl}.tmp";
    open my $fh, '>', $tmp or die "$tmp: $!";
    print $fh "$self->{seq} $self->{answer}\n";
    close $fh;
    rename $tmp, $self->{ctl} or die "rename: $!";
}

sub _wait_seen {
    my $self = shift;
    for (1 .. 400) {
        if (open my $fh, '<', $self->{ready}) {
            my $l = <$fh> // '';
            return if $l =~ /^(\d+)/ && $1 >= $self->{seq};
        }
        sleep 0.005;
    }
    my $err = -e "$self->{dir}/error" ? do { local (@ARGV, $/) = "$self->{dir}/error"; <> } : '';
    die "fake sentinel on port $self->{port} did not take its orders $err\n";
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
    my ($answer, $seen, $asked) = ('-', 0, 0);
    my $read_ctl = sub {
        open my $fh, '<', $self->{ctl} or return;
        my $l = <$fh> // '';
        close $fh;
        my ($s, $a) = split ' ', $l;
        return unless defined $a && $s != $seen;
        ($seen, $answer) = ($s, $a);
        open my $r, '>', "$self->{ready}.tmp" or return;
        print $r "$seen\n";
        close $r;
        rename "$self->{ready}.tmp", $self->{ready};
    };
    my $reply = sub {
        my ($args) = @_;
        my $c = lc($args->[0] // '');
        return "+OK\r\n" if $c eq 'auth' || $c eq 'client';
        return "+PONG\r\n" if $c eq 'ping';
        if ($c eq 'sentinel' && lc($args->[1] // '') eq 'get-master-addr-by-name') {
            $asked++;
            if (open my $fh, '>', "$self->{count}.tmp") {
                print $fh "$asked\n";
                close $fh;
                rename "$self->{count}.tmp", $self->{count};
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
