package Apache::TestRLaaS::Keeper;

=head1 NAME

Apache::TestRLaaS::Keeper - servers that live exactly as long as a test run

=head1 SYNOPSIS

    use Apache::TestRLaaS::Keeper;

    # in t/TEST.PL, before httpd starts
    my $k = Apache::TestRLaaS::Keeper->start(sub {
        my $r = Apache::TestRLaaS::Redis->start;
        return ([$r], { MY_REDIS_PORT => $r->port });
    });
    %ENV = (%ENV, %{ $k->env });
    # ... the servers are stopped when this process ends, however it ends

    # t/TEST -start-httpd: keep them for later runs
    $k->detach("t/logs/my-servers", \%env_to_record);
    # t/TEST -run-tests: find them again
    my $env = Apache::TestRLaaS::Keeper->attach("t/logs/my-servers");
    # t/TEST -stop-httpd
    Apache::TestRLaaS::Keeper->stop_detached("t/logs/my-servers");

=head1 DESCRIPTION

C<start(CODE)> forks a small keeper process that runs CODE, which starts
servers (L<Apache::TestRLaaS::Redis> objects, or anything with a C<stop>
method and optionally C<pidfile>) and returns them with the environment
variables that say where they are. The keeper holds them until the process
that called C<start> ends, then stops them; it finds out by the end of a
pipe only that process holds, so the servers go whether the run ends
normally, dies, or is killed with SIGKILL. A server that a test restarted
(a new pid under the same pidfile) is stopped too.

Why a process of its own: the servers must not be children of the test
runner, whose reaping them would need a SIGCHLD handler, and that breaks
Test::Harness' reads; and they must outlive nothing.

CODE dies: C<start> dies with its message. C<env> is a hashref.

C<detach(STATE, ENV)> records ENV in STATE.env and the keeper's pid in
STATE.pid and keeps the servers after this process ends, until
C<stop_detached(STATE)> (SIGTERM to the keeper). C<attach(STATE)> returns
the recorded environment while the keeper lives, undef otherwise.
C<< save_state(STATE, ENV) >> records an environment without a keeper,
for C<attach> until C<stop_detached>.

=cut

use strict;
use warnings;

use Carp qw(croak);
use IO::Select ();
use POSIX ();
use Time::HiRes qw(sleep);

my @LIVE;    # keepers started by this process, stopped in END

sub start {
    my ($class, $code, %opt) = @_;
    pipe(my $info_r, my $info_w) or croak "pipe: $!";
    pipe(my $ctl_r, my $ctl_w) or croak "pipe: $!";
    my $pid = fork;
    croak "fork: $!" unless defined $pid;
    if (!$pid) {
        close $info_r;
        close $ctl_w;
        _keeper($code, $info_w, $ctl_r, $opt{name} || 'test servers');   # never returns
    }
    close $info_w;
    close $ctl_r;
    my (%env, $err);
    # up to the END line, not EOF: a process the keeper forked (a server's
    # watchdog) may still hold the pipe open
    while (my $l = <$info_r>) {
        chomp $l;
        last if $l eq 'END';
        if ($l =~ /^ERROR (.*)/s) { $err = $1; next }
        my ($k, $v) = split /=/, $l, 2;
        $env{$k} = _unescape($v) if defined $v;
    }
    close $info_r;
    my $self = bless { pid => $pid, ctl => $ctl_w, env => \%env, owner => $$ }, $class;
    if (defined $err || !%env) {
        $self->_finish;
        croak(($err // 'the keeper ended before starting anything') . "\n");
    }
    push @LIVE, $self;
    return $self;
}

sub env { $_[0]{env} }
sub pid { $_[0]{pid} }

sub detach {
    my ($self, $state, $env) = @_;
    $self->save_state($state, $env, $self->{pid});
    $self->{keep} = 1;
    return $self;
}

# save_state(STATE, ENV, PID): what attach will return, while the keeper
# PID lives (without PID: until stop_detached, for runs that keep nothing
# but their environment, such as a suite on the local backend).
sub save_state {
    my ($class, $state, $env, $pid) = @_;
    _spew("$state.env", join '', map { "$_=" . _escape($env->{$_}) . "\n" } sort keys %$env);
    _spew("$state.pid", defined $pid ? "$pid\n" : "none\n");
    return 1;
}

sub attach {
    my ($class, $state) = @_;
    _alive_keeper($state) or return undef;
    open my $fh, '<', "$state.env" or return undef;
    my %env;
    while (my $l = <$fh>) {
        chomp $l;
        my ($k, $v) = split /=/, $l, 2;
        $env{$k} = _unescape($v) if defined $v;
    }
    return \%env;
}

sub stop_detached {
    my ($class, $state) = @_;
    my $pid = _alive_keeper($state);
    if ($pid && $pid ne 'none') {
        kill 'TERM', $pid;
        for (1 .. 200) { last unless kill 0, $pid; sleep 0.05 }
    }
    unlink "$state.env", "$state.pid";
    return 1;
}

# the keeper's pid while it lives; 'none' for a state kept without one
sub _alive_keeper {
    my ($state) = @_;
    return undef unless -e "$state.env" && open my $fh, '<', "$state.pid";
    my $pid = <$fh> // '';
    return 'none' if $pid =~ /^none/;
    return $pid =~ /^(\d+)/ && kill(0, $1) ? $1 : undef;
}

# Ends the keeper's watch: with keep, it stays (until SIGTERM); without,
# it stops the servers, and this waits until they are gone, so that the
# run never ends before its servers do.
sub _finish {
    my ($self) = @_;
    return unless $self->{ctl} && $self->{owner} == $$;
    local ($?, $!);
    local $SIG{PIPE} = 'IGNORE';
    syswrite $self->{ctl}, 'K' if $self->{keep};
    close delete $self->{ctl};
    waitpid $self->{pid}, 0 unless $self->{keep};
}

END { $_->_finish for @LIVE }

sub _keeper {
    my ($code, $info, $ctl, $name) = @_;
    $SIG{INT} = $SIG{TERM} = $SIG{HUP} = 'IGNORE';    # wait for the EOF
    $0 = "$name keeper";
    # don't hold the caller's output open (t/TEST -start-httpd | tee ...)
    open STDIN, '<', '/dev/null';
    open STDOUT, '>', '/dev/null';
    open STDERR, '>', '/dev/null';
    my @servers;
    my $ok = eval {
        my ($servers, $env) = $code->();
        @servers = @{ $servers || [] };
        print $info map { "$_=" . _escape($env->{$_}) . "\n" } sort keys %$env;
        1;
    };
    unless ($ok) {
        (my $e = $@ || 'failed') =~ s/\s*\z//;
        $e =~ s/\n/ | /g;
        print $info "ERROR $e\n";
    }
    print $info "END\n";
    close $info;
    if ($ok) {
        # until EOF on the control pipe; after a 'K', until SIGTERM
        my ($keep, $term, $eof) = (0, 0, 0);
        my $sel = IO::Select->new($ctl);
        while (1) {
            1 while waitpid(-1, POSIX::WNOHANG()) > 0;
            last if $term || ($eof && !$keep);
            if ($eof) { sleep 0.2; next }
            if ($sel->can_read(0.2)) {
                my $n = sysread $ctl, my $buf, 1;
                if (!$n) { $eof = 1 }
                elsif ($buf eq 'K') { $keep = 1; $SIG{TERM} = sub { $term = 1 } }
            }
        }
    }
    # stop them, and any server a test restarted under the same pidfile
    my @pidfiles = grep { defined } map { eval { $_->pidfile } } @servers;
    for my $s (@servers) { eval { $s->stop } }
    for my $pf (@pidfiles) {
        open my $fh, '<', $pf or next;
        my $pid = <$fh>;
        next unless defined $pid && $pid =~ /^(\d+)/ && kill 'TERM', $1;
        for (1 .. 100) {
            1 while waitpid(-1, POSIX::WNOHANG()) > 0;
            last unless kill 0, $1;
            sleep 0.05;
        }
    }
    @servers = ();
    # the servers' temporary directories; then no END block of the parent's
    # modules (a Test::Builder's summary, a runner's) runs here
    require File::Temp;
    File::Temp::cleanup();
    POSIX::_exit($ok ? 0 : 1);
}

# one variable a line: newlines and backslashes escaped
sub _escape   { my $v = $_[0] // ''; $v =~ s/\\/\\\\/g; $v =~ s/\n/\\n/g; $v }
sub _unescape { my $v = $_[0]; $v =~ s/\\(.)/$1 eq 'n' ? "\n" : $1/ge; $v }

sub _spew {
    my ($f, $s) = @_;
    open my $fh, '>', $f or croak "$f: $!";
    print $fh $s;
    close $fh or croak "$f: $!";
}

1;
