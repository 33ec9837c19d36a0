package Apache::TestRLaaS::Redis;

=head1 NAME

Apache::TestRLaaS::Redis - a private redis-server and a tiny RESP client for
tests of mod_rlaas configurations

=head1 SYNOPSIS

    use Apache::TestRLaaS::Redis;

    my $r = Apache::TestRLaaS::Redis->start;      # free port on 127.0.0.1
    my $r = Apache::TestRLaaS::Redis->start(requirepass => 'pw', unixsocket => 1);
    my $r = Apache::TestRLaaS::Redis->start(acl_user => ['app', 'secret']);

    $r->cmd('SET', 'k', 'v');                    # 'OK'
    my $v = $r->cmd('GET', 'k');                 # 'v' (undef for nil)
    my $a = $r->cmd('ZRANGE', 'z', 0, -1, 'WITHSCORES');   # arrayref
    my $e = $r->cmd('INCR', 'k');                # an error object
    print $e->message if Apache::TestRLaaS::Redis::is_error($e);

    $r->stop;            # server down (tests of Redis outages)
    $r->start_again;     # same port, same options, waits until ready
    $r->pause_ms(500);   # CLIENT PAUSE 500 ALL: a stalled server

    # A server started by someone else (the suite's runner):
    my $r = Apache::TestRLaaS::Redis->from_env;  # RLAAS_KIT_REDIS, RLAAS_KIT_REDIS_DIR
    my $r = Apache::TestRLaaS::Redis->attach(port => 6390, password => 'pw',
                                             pidfile => '/tmp/x/redis.pid');

This is the Redis half of L<Apache::TestRLaaS>, the test kit shipped with
mod_rlaas; mod_rlaas' own suite uses it too (as C<RLaaS::Redis>, a subclass).

=head1 CONSTRUCTORS

=over

=item start(%opt)

Starts C<redis-server> in the foreground of a forked child (C<--daemonize
no>, C<--save ''>, C<--appendonly no>, bound to 127.0.0.1), with its pidfile
(C<redis.pid>) and logfile (C<redis.log>) in its directory, and waits (at
most about 5 s) until it answers PING. Options:

  port        => N         TCP port (default: a free one on 127.0.0.1)
  requirepass => 'pw'      the default user's password
  acl_user    => [name,pw] an extra ACL user with all rights (Redis >= 6);
                           the client then authenticates as that user
  unixsocket  => 1         also listen on DIR/redis.sock (socket_path)
  dir         => path      working directory (default: a new temporary one,
                           removed at exit, or by the watchdog when the
                           process that started the server dies)
  redis_server => path     the binary (default: redis-server from PATH,
                           or $ENV{RLAAS_REDIS_SERVER})
  timeout     => seconds   read/connect timeout of the client (default 30)

The command line is stored as JSON in DIR/rlaas-redis.args, so that an
attached object can restart the same server. Works as an unprivileged user.
Dies if the server does not come up (with the tail of its log).

=item attach(port => N, host => ..., password => ..., username => ...,
pidfile => ..., dir => ..., socket_path => ...)

An object for a server somebody else started. Options missing here are taken
from DIR/rlaas-redis.args when C<dir> is given and that file exists. The
object never stops the server in DESTROY.

=item from_env

C<attach> to the Redis of the suite that L<Apache::TestRLaaS> set up:
C<RLAAS_KIT_REDIS> (C<host:port>) and, when set, C<RLAAS_KIT_REDIS_DIR> (the
server's directory, for C<stop> and C<start_again>). Returns undef when the
suite has no Redis (C<RLAAS_KIT_REDIS> unset, or C<RLAAS_KIT_BACKEND=local>).

=back

=head1 METHODS

=over

=item host, port, socket_path, pid, dir, pidfile, logfile, password, username

Accessors. C<pid> is the server's current pid (from the pidfile for an
attached server), undef when it is down.

=item cmd(@args)

Sends one command on a persistent connection and returns the reply: a scalar
for status, integer and bulk replies (undef for nil), an arrayref for arrays
(nested), and an C<Apache::TestRLaaS::Redis::Error> object for an error reply (never
dies on one; the object stringifies to its message and has C<message>).
Dies when the server cannot be reached. Authenticates automatically. If the
server was restarted since the last command, reconnects transparently.

=item stop

SHUTDOWN NOSAVE (then SIGTERM, then SIGKILL if it lingers) and waits until
the process is gone. Idempotent.

=item start_again

Runs the same redis-server command line again (same port, same options),
waits until ready. Works on attached objects when the args file exists.
A server started this way by an attached object is still not stopped by
DESTROY.

=item pipeline([@cmd1], [@cmd2], ...)

Sends several commands in one write and returns their replies as a list
(same conventions as C<cmd>). The server runs them back to back, so a test
can look at keys a script just wrote before a 1 ms TTL runs out. No
transparent retry.

=item pause_ms($ms)

C<CLIENT PAUSE $ms ALL>: every client, this one included, stalls.

=item log_tail($n)

Last $n lines of the server's log (for diagnostics).

=back

=head1 FUNCTIONS

C<is_error($reply)>: true for an error reply.

C<free_port()>: a TCP port on 127.0.0.1 where nothing listens now.

C<make_tls_certs($dir)>: a test CA and certificates for a Redis C<tls-port>
(see the source for the files).

=head1 LIFETIME

A server that C<start> launched is stopped when its object is destroyed,
or at the latest in an END block of this module (before File::Temp removes
its directory), and only by the process that started it: a forked child
that exits leaves it running. If that process dies without cleaning up
(a signal, POSIX::_exit), a small watchdog process it left behind stops
the server. Attached servers, and servers an attached object restarted,
are never stopped except by an explicit C<stop>. The server runs in its
own session, so a ^C to the test's process group does not kill it before
the test can.

=cut

use strict;
use warnings;

use Carp qw(croak);
use Errno qw(EINTR EAGAIN);
use File::Spec;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use JSON::PP ();
use POSIX qw(:sys_wait_h setsid);
use Scalar::Util ();
use Socket qw(SOCK_STREAM);
use Time::HiRes qw(sleep time);

our $VERSION = '0.01';

my $ARGS_FILE = 'rlaas-redis.args';
my %LIVE;    # owned servers (weak refs), for END

sub is_error { return ref($_[0]) && eval { $_[0]->isa('Apache::TestRLaaS::Redis::Error') } }

# The class of error replies: a subclass may name its own (one that isa
# this one), so that its users' isa checks keep working.
sub error_class { 'Apache::TestRLaaS::Redis::Error' }

# ---------------------------------------------------------------- start

*_free_port = \&free_port;    # its name before it was public

sub start {
    my ($class, %opt) = @_;
    my $dir = $opt{dir};
    my $own_dir = 0;
    if (defined $dir) {
        -d $dir or mkdir $dir, 0700 or croak "mkdir $dir: $!";
    } else {
        $dir = tempdir('rlaas-redis-XXXXXX', TMPDIR => 1, CLEANUP => 1);
        $own_dir = 1;
    }
    $dir = File::Spec->rel2abs($dir);
    my $self = bless {
        host        => '127.0.0.1',
        dir         => $dir,
        pidfile     => "$dir/redis.pid",
        logfile     => "$dir/redis.log",
        timeout     => $opt{timeout} || 30,
        owner       => $$,      # only this process stops it in DESTROY
        owned       => 1,
        own_dir     => $own_dir,
    }, $class;
    $self->{socket_path} = "$dir/redis.sock" if $opt{unixsocket};
    if ($opt{acl_user}) {
        @{$self}{qw(username password)} = @{ $opt{acl_user} };
    } elsif (defined $opt{requirepass}) {
        $self->{password} = $opt{requirepass};
    }

    # A port picked at random can be taken between the probe and the
    # server's bind: retry a few times with a fresh one.
    my $tries = $opt{port} ? 1 : 5;
    for my $try (1 .. $tries) {
        $self->{port} = $opt{port} || free_port();
        $self->{argv} = _argv($self, \%opt);
        $self->_save_args;
        unlink $self->{logfile};
        my $ok = eval { $self->_spawn; $self->_wait_ready; 1 };
        if ($ok) {
            Scalar::Util::weaken($LIVE{ Scalar::Util::refaddr($self) } = $self);
            return $self;
        }
        my $err = $@;
        $self->_kill_hard;
        croak "redis-server did not start: $err\n" . $self->log_tail(20)
            if $try == $tries;
    }
}

sub _argv {
    my ($self, $opt) = @_;
    my $bin = $opt->{redis_server} || $ENV{RLAAS_REDIS_SERVER} || 'redis-server';
    my @a = ($bin,
        '--port', $self->{port}, '--bind', '127.0.0.1',
        '--save', '', '--appendonly', 'no', '--daemonize', 'no',
        '--dir', $self->{dir}, '--pidfile', $self->{pidfile},
        '--logfile', $self->{logfile}, '--databases', 16);
    push @a, '--unixsocket', $self->{socket_path}, '--unixsocketperm', '700'
        if $self->{socket_path};
    push @a, '--requirepass', $opt->{requirepass} if defined $opt->{requirepass};
    push @a, @{ $opt->{extra} } if $opt->{extra};
    if ($opt->{acl_user}) {
        my ($u, $p) = @{ $opt->{acl_user} };
        push @a, '--user', $u, 'on', ">$p", '~*', '&*', '+@all';
    }
    return \@a;
}

sub _save_args {
    my ($self) = @_;
    my %keep = map { $_ => $self->{$_} }
        grep { defined $self->{$_} }
        qw(argv host port password username socket_path pidfile logfile dir);
    my $f = "$self->{dir}/$ARGS_FILE";
    open my $fh, '>', "$f.tmp" or croak "write $f: $!";
    print $fh JSON::PP->new->canonical->pretty->encode(\%keep);
    close $fh or croak "write $f: $!";
    rename "$f.tmp", $f or croak "rename $f: $!";
}

sub free_port {
    # never a port the suite set aside for later (RLAAS_TEST_*_PORT: the
    # dead port, the relay's, the sentinels' and the cluster's), which
    # nothing may listen on yet
    my %kept = map { $ENV{$_} => 1 } grep { /^RLAAS_TEST_\w*PORT$/ && ($ENV{$_} // '') =~ /^\d+$/ } keys %ENV;
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(
            LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp',
            Listen => 1, ReuseAddr => 1) or croak "no free port: $!";
        my $p = $s->sockport;
        close $s;
        return $p unless $kept{$p};
    }
    croak "no free port outside those set aside";
}

sub _spawn {
    my ($self) = @_;
    unlink $self->{pidfile};
    my $pid = fork;
    croak "fork: $!" unless defined $pid;
    if (!$pid) {
        # Own session: a ^C or a test harness' process-group signal must
        # not take the server down before the test stops it.
        setsid();
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', $self->{logfile};
        open STDERR, '>&', \*STDOUT;
        { exec { $self->{argv}[0] } @{ $self->{argv} } }
        print STDERR "exec $self->{argv}[0]: $!\n";
        POSIX::_exit(127);
    }
    $self->{child} = $pid;
    $self->{pid}   = $pid;
    $self->_watchdog($pid) if $self->{owned};
}

# A test killed by a signal runs no END block and no DESTROY: a watchdog
# process holds the read end of a pipe whose write end only this process
# has, and kills the server when it reads EOF (we died). stop() sends it
# a byte first, which means: exit, leave the server alone.
sub _watchdog {
    my ($self, $server) = @_;
    pipe(my $rd, my $wr) or croak "pipe: $!";
    my $pid = fork;
    croak "fork: $!" unless defined $pid;
    if (!$pid) {
        # Hold nothing but the pipe: an inherited pipe end (a harness
        # waiting for EOF on our stdout or on a pipe of its own) would
        # otherwise stay open for as long as the watchdog lives.
        my $keep = fileno $rd;
        my @fds = (3 .. 1023);
        if (opendir my $dh, '/proc/self/fd') {
            @fds = grep { /^\d+$/ } readdir $dh;
            closedir $dh;
        }
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        POSIX::close($_) for grep { $_ > 2 && $_ != $keep } @fds;
        setsid();
        $SIG{$_} = 'IGNORE' for qw(INT TERM HUP QUIT PIPE);
        $0 = "rlaas-redis-watchdog $server";
        my $n = sysread $rd, my $buf, 1;
        if (!$n) {
            kill 'TERM', $server;
            for (1 .. 500) { last unless _alive($server); sleep 0.01 }
            kill 'KILL', $server;
            # nobody is left to run File::Temp's cleanup of a directory
            # start() made
            if ($self->{own_dir}) {
                for (1 .. 100) { last unless _alive($server); sleep 0.01 }
                require File::Path;
                File::Path::remove_tree($self->{dir});
            }
        }
        POSIX::_exit(0);
    }
    close $rd;
    $self->{watchdog} = [$pid, $wr];
}

sub _dismiss_watchdog {
    my ($self) = @_;
    local $?;
    my $w = delete $self->{watchdog} or return;
    my ($pid, $wr) = @$w;
    local $SIG{PIPE} = 'IGNORE';
    syswrite $wr, 'q';
    close $wr;
    waitpid $pid, 0;
}

sub _wait_ready {
    my ($self, $limit) = @_;
    local $?;
    my $deadline = time + ($limit || 5);
    my $err;
    while (time < $deadline) {
        if ($self->{child} && waitpid($self->{child}, WNOHANG) == $self->{child}) {
            delete $self->{child};
            croak "redis-server exited with status " . ($? >> 8);
        }
        $self->_disconnect;
        my $r = eval { $self->_command_once(['PING']) };
        return 1 if defined $r && !is_error($r) && $r eq 'PONG';
        # LOADING and the like: the server is up but not ready yet.
        $err = is_error($r) ? $r->message : ($@ || 'no reply');
        sleep 0.02;
    }
    $self->_disconnect;
    croak "redis-server not ready after ${\($limit || 5)}s: $err";
}

# ---------------------------------------------------------------- TLS

# make_tls_certs(DIR): a test CA (ca.crt), a server certificate for
# localhost and 127.0.0.1 signed by it (server.crt, server.key), a client
# certificate (client.crt, client.key), and an unrelated CA (other-ca.crt)
# that signs nothing here. EC keys: quick to make.
sub make_tls_certs {
    my ($dir) = @_;
    my $q = sub { system(@_, '-quiet') == 0 || system(@_) == 0 or croak "openssl @_ failed" };
    my @key = ('-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes');
    for my $ca (qw(ca other-ca)) {
        system('openssl', 'req', '-x509', @key, '-keyout', "$dir/$ca.key",
               '-out', "$dir/$ca.crt", '-days', 3650, '-subj', "/CN=mod_rlaas test $ca")
            == 0 or croak "openssl: cannot make $ca";
    }
    for my $who (['server', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
                 ['client', 'extendedKeyUsage=clientAuth']) {
        my ($n, $ext) = @$who;
        system('openssl', 'req', @key, '-keyout', "$dir/$n.key", '-out', "$dir/$n.csr",
               '-subj', "/CN=mod_rlaas test $n") == 0 or croak "openssl: cannot make $n";
        open my $fh, '>', "$dir/$n.ext" or croak "$dir/$n.ext: $!";
        print $fh "$ext\n";
        close $fh;
        system('openssl', 'x509', '-req', '-in', "$dir/$n.csr", '-CA', "$dir/ca.crt",
               '-CAkey', "$dir/ca.key", '-CAcreateserial', '-out', "$dir/$n.crt",
               '-days', 3650, '-extfile', "$dir/$n.ext") == 0
            or croak "openssl: cannot sign $n";
    }
    chmod 0644, glob("$dir/*");
    return $dir;
}

# ---------------------------------------------------------------- attach

sub from_env {
    my ($class) = @_;
    my $addr = $ENV{RLAAS_KIT_REDIS};
    return undef if !$addr || ($ENV{RLAAS_KIT_BACKEND} // '') eq 'local';
    my %at;
    if ($addr =~ m{^unix:(.+)}) { $at{socket_path} = $1 }
    elsif ($addr =~ /^\[([^\]]+)\]:(\d+)$/ || $addr =~ /^([^:]+):(\d+)$/) {
        @at{qw(host port)} = ($1, $2);
    }
    elsif ($addr =~ /^([^:]+)$/) { @at{qw(host port)} = ($1, 6379) }
    else { croak "RLAAS_KIT_REDIS: cannot read '$addr' (host:port or unix:/path)" }
    my $dir = $ENV{RLAAS_KIT_REDIS_DIR};
    return $class->attach(%at, (defined $dir && length $dir
        ? (dir => $dir, pidfile => "$dir/redis.pid") : ()));
}

sub attach {
    my ($class, %opt) = @_;
    my %saved;
    if (defined $opt{dir} && -r "$opt{dir}/$ARGS_FILE") {
        open my $fh, '<', "$opt{dir}/$ARGS_FILE" or croak "$opt{dir}/$ARGS_FILE: $!";
        local $/;
        %saved = %{ JSON::PP->new->decode(<$fh>) };
    }
    my $self = bless { host => '127.0.0.1', timeout => 30, %saved, owned => 0 }, $class;
    for (qw(host port password username socket_path pidfile dir timeout)) {
        $self->{$_} = $opt{$_} if defined $opt{$_};
    }
    croak "attach: no port" unless $self->{port} || $self->{socket_path};
    return $self;
}

# ---------------------------------------------------------------- accessors

sub host        { $_[0]{host} }
sub port        { $_[0]{port} }
sub socket_path { $_[0]{socket_path} }
sub dir         { $_[0]{dir} }
sub pidfile     { $_[0]{pidfile} }
sub logfile     { $_[0]{logfile} }
sub password    { $_[0]{password} }
sub username    { $_[0]{username} }

sub pid {
    my ($self) = @_;
    $self->_reap;    # a zombie would still answer kill 0
    if ($self->{child}) {
        return $self->{child} if kill 0, $self->{child};
        return undef;
    }
    my $pid = _read_pidfile($self->{pidfile});
    return $pid if _alive($pid);
    return undef;
}

# Running, not a zombie: an exited server whose parent (not us, e.g. the
# suite's runner) has not reaped it yet still answers kill 0.
sub _alive {
    my ($pid) = @_;
    return 0 unless $pid && kill 0, $pid;
    if (open my $fh, '<', "/proc/$pid/stat") {
        my $st = <$fh> // '';
        return 0 if $st =~ /^\d+ \(.*\) Z/s;
    }
    return 1;
}

sub _read_pidfile {
    my ($f) = @_;
    return undef unless defined $f && open my $fh, '<', $f;
    my $p = <$fh>;
    return undef unless defined $p && $p =~ /^\s*(\d+)/;
    return $1;
}

sub log_tail {
    my ($self, $n) = @_;
    $n ||= 20;
    return '' unless $self->{logfile} && open my $fh, '<', $self->{logfile};
    my @l = <$fh>;
    splice @l, 0, @l - $n if @l > $n;
    return join '', @l;
}

# ---------------------------------------------------------------- commands

sub cmd {
    my ($self, @args) = @_;
    croak "cmd: no command" unless @args;
    # A connection the server closed (restart, SHUTDOWN) shows up as
    # readable with EOF before we send: reconnect then, so that a command
    # is never sent twice.
    $self->_disconnect if $self->{sock} && _peer_closed($self->{sock});
    my $fresh = !$self->{sock};
    my $r = eval { $self->_command_once(\@args) };
    return $r unless $@;
    my $err = $@;
    die $err if $fresh || !$self->{unsent_safe};
    # Sent nothing that reached a live server: one more try.
    $self->_disconnect;
    return $self->_command_once(\@args);
}

sub pipeline {
    my ($self, @cmds) = @_;
    $self->_disconnect if $self->{sock} && _peer_closed($self->{sock});
    $self->_connect unless $self->{sock};
    # One write: the server runs them back to back.
    my $out = '';
    $out .= _encode($_) for @cmds;
    $self->_write($out);
    return map { $self->_read_reply } @cmds;
}

sub _peer_closed {
    my ($sock) = @_;
    return 0 unless IO::Select->new($sock)->can_read(0);
    my $buf;
    my $n = recv($sock, $buf, 1, Socket::MSG_PEEK() | Socket::MSG_DONTWAIT());
    return 1 if !defined $n;            # error: treat as closed
    return length($buf) == 0;           # EOF
}

sub _connect {
    my ($self) = @_;
    my $sock;
    if ($self->{port}) {
        $sock = IO::Socket::INET->new(
            PeerAddr => $self->{host}, PeerPort => $self->{port},
            Proto => 'tcp', Timeout => $self->{timeout});
    } else {
        $sock = IO::Socket::UNIX->new(
            Peer => $self->{socket_path}, Type => SOCK_STREAM);
    }
    die "cannot connect to redis at "
        . ($self->{port} ? "$self->{host}:$self->{port}" : $self->{socket_path})
        . ": $!\n" unless $sock;
    $sock->autoflush(1);
    binmode $sock;
    $self->{sock} = $sock;
    $self->{rbuf} = '';
    if (defined $self->{password}) {
        my @auth = defined $self->{username}
            ? ('AUTH', $self->{username}, $self->{password})
            : ('AUTH', $self->{password});
        $self->_send(\@auth);
        my $r = $self->_read_reply;
        if (is_error($r)) {
            $self->_disconnect;
            die "redis AUTH failed: " . $r->message . "\n";
        }
    }
}

sub _disconnect {
    my ($self) = @_;
    close $self->{sock} if $self->{sock};
    delete $self->{sock};
    $self->{rbuf} = '';
}

sub _command_once {
    my ($self, $args) = @_;
    $self->{unsent_safe} = 0;
    $self->_connect unless $self->{sock};
    $self->_send($args);
    return $self->_read_reply;
}

sub _encode {
    my ($args) = @_;
    my $out = '*' . scalar(@$args) . "\r\n";
    for my $a (@$args) {
        my $s = defined $a ? "$a" : '';
        utf8::encode($s) if utf8::is_utf8($s);
        $out .= '$' . length($s) . "\r\n" . $s . "\r\n";
    }
    return $out;
}

sub _send {
    my ($self, $args) = @_;
    $self->_write(_encode($args));
}

sub _write {
    my ($self, $out) = @_;
    local $SIG{PIPE} = 'IGNORE';
    my $off = 0;
    while ($off < length $out) {
        my $n = syswrite $self->{sock}, $out, length($out) - $off, $off;
        if (!defined $n) {
            next if $! == EINTR;
            # Nothing written at all: safe to retry on a new connection.
            $self->{unsent_safe} = 1 if $off == 0;
            $self->_disconnect;
            die "redis write failed: $!\n";
        }
        $off += $n;
    }
}

sub _fill {
    my ($self) = @_;
    my $sel = IO::Select->new($self->{sock});
    while (1) {
        if (!$sel->can_read($self->{timeout})) {
            $self->_disconnect;
            die "redis read timed out after $self->{timeout}s\n";
        }
        my $n = sysread $self->{sock}, $self->{rbuf}, 65536, length $self->{rbuf};
        return if $n;
        next if !defined $n && ($! == EINTR || $! == EAGAIN);
        my $why = defined $n ? 'connection closed by server' : "read failed: $!";
        $self->_disconnect;
        die "redis $why\n";
    }
}

sub _line {
    my ($self) = @_;
    my $i;
    $self->_fill while ($i = index($self->{rbuf}, "\r\n")) < 0;
    my $l = substr $self->{rbuf}, 0, $i;
    substr($self->{rbuf}, 0, $i + 2, '');
    return $l;
}

sub _read_reply {
    my ($self) = @_;
    my $l = $self->_line;
    my ($t, $v) = (substr($l, 0, 1), substr($l, 1));
    return $v if $t eq '+';
    return $v + 0 if $t eq ':';
    return $self->error_class->new($v) if $t eq '-';
    if ($t eq '$') {
        return undef if $v < 0;
        $self->_fill while length($self->{rbuf}) < $v + 2;
        my $s = substr $self->{rbuf}, 0, $v;
        substr($self->{rbuf}, 0, $v + 2, '');
        return $s;
    }
    if ($t eq '*') {
        return undef if $v < 0;
        return [ map { $self->_read_reply } 1 .. $v ];
    }
    $self->_disconnect;
    die "redis protocol error: unexpected line '$l'\n";
}

# ---------------------------------------------------------------- lifecycle

sub pause_ms {
    my ($self, $ms) = @_;
    my $r = $self->cmd('CLIENT', 'PAUSE', int($ms), 'ALL');
    # Redis < 6.2 knows no mode argument.
    $r = $self->cmd('CLIENT', 'PAUSE', int($ms)) if is_error($r);
    return $r;
}

sub stop {
    my ($self) = @_;
    $self->_dismiss_watchdog;
    my $pid = $self->pid;
    # Attached without a pidfile: all we can do is ask and watch the port.
    my $blind = !$pid && !$self->{pidfile};
    if (!$pid && !$blind) {
        $self->_disconnect;
        return 1;
    }
    # SHUTDOWN answers only on failure; the server just closes the socket.
    # SHUTDOWN normally ends with the server closing the connection; any
    # other outcome (no socket layer in global destruction, an ACL that
    # refuses it) goes straight to SIGTERM below.
    my $asked = ${^GLOBAL_PHASE} ne 'DESTRUCT' && !eval {
        $self->_disconnect if $self->{sock} && _peer_closed($self->{sock});
        local $self->{timeout} = 2;
        $self->_command_once([qw(SHUTDOWN NOSAVE)]);
        1;
    } && $@ =~ /closed by server/;
    $self->_disconnect;
    if ($blind) {
        my $deadline = time + 5;
        while (time < $deadline) {
            last unless eval { $self->_connect; 1 };
            $self->_disconnect;
            sleep 0.01;
        }
        $self->_disconnect;
        return 1;
    }
    return 1 if $asked && $self->_wait_gone($pid, 5);
    kill 'TERM', $pid;
    return 1 if $self->_wait_gone($pid, 5);
    kill 'KILL', $pid;
    $self->_wait_gone($pid, 5) or croak "redis-server $pid does not exit";
    return 1;
}

sub _kill_hard {
    my ($self) = @_;
    $self->_dismiss_watchdog;
    my $pid = $self->{child} or return;
    kill 'KILL', $pid;
    $self->_wait_gone($pid, 5);
    $self->_disconnect;
}

sub _reap {
    my ($self) = @_;
    local $?;    # waitpid here must not leak into the caller's exit status
    return unless $self->{child};
    delete $self->{child} if waitpid($self->{child}, WNOHANG) != 0;
}

sub _wait_gone {
    my ($self, $pid, $secs) = @_;
    local $?;
    my $deadline = time + $secs;
    while (time < $deadline) {
        if ($self->{child} && $self->{child} == $pid) {
            if (waitpid($pid, WNOHANG) != 0) {
                delete $self->{child};
                return 1;
            }
        } elsif (waitpid($pid, WNOHANG) == $pid || !_alive($pid)) {
            # waitpid: it may be a child of ours that another object
            # (an attached one) started; a zombie still answers kill 0.
            return 1;
        }
        sleep 0.01;
    }
    return 0;
}

sub start_again {
    my ($self) = @_;
    croak "start_again: no stored command line (start() writes "
        . "DIR/$ARGS_FILE)" unless $self->{argv};
    $self->stop;
    unlink $self->{logfile} if $self->{logfile} && $self->{owned};
    # The old port can linger in TIME_WAIT only on the client side; redis
    # sets SO_REUSEADDR, so the same port binds at once.
    $self->_spawn;
    $self->_wait_ready;
    return $self;
}

# Servers started here are stopped in END: before File::Temp removes their
# directories and before global destruction takes the sockets apart.
END {
    local ($@, $!, $?);
    for my $self (grep { defined } values %LIVE) {
        eval { $self->stop } if $self->{owner} == $$;
    }
}

sub DESTROY {
    my ($self) = @_;
    return unless $self->{owned} && $self->{owner} && $self->{owner} == $$;
    local ($@, $!, $?);
    eval { $self->stop };
    delete $LIVE{ Scalar::Util::refaddr($self) };
}

package Apache::TestRLaaS::Redis::Error;

use overload '""' => sub { $_[0]{message} }, 'bool' => sub { 1 }, fallback => 1;

sub new     { bless { message => $_[1] }, $_[0] }
sub message { $_[0]{message} }

1;
