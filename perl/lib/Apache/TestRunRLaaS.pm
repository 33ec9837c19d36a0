package Apache::TestRunRLaaS;

use strict;
use warnings;

our $VERSION = '1.00';

=head1 NAME

Apache::TestRunRLaaS - an Apache::Test runner with mod_rlaas and a private Redis

=head1 SYNOPSIS

t/TEST.PL:

    use Apache::TestRunRLaaS ();
    Apache::TestRunRLaaS->new->run(@ARGV);

    # no Redis: the local backend
    Apache::TestRunRLaaS->new(rlaas => { backend => 'local' })->run(@ARGV);

=head1 DESCRIPTION

L<Apache::TestRun> that, before httpd starts, calls
C<< Apache::TestRLaaS->setup >> (a private C<redis-server>, or none with the
local backend) and writes the kit's lines into the httpd.conf it
generates: C<LoadModule> of mod_rlaas, and C<RLaaSRedis> and
C<RLaaSKeyPrefix> for the suite (see L<Apache::TestRLaaS>).

C<< rlaas => { ... } >> takes the options of C<setup> (see
L<Apache::TestRLaaS/"IN A RUNNER OF YOUR OWN">); the environment's
C<RLAAS_KIT_BACKEND=local> chooses the local backend too. Unless a port is
given (C<-port>, C<APACHE_TEST_PORT>), httpd and its virtual hosts listen
on 20 free ports in a row picked at random from 20000-29999, so that
suites running side by side don't meet.

C<t/TEST -start-httpd> keeps the Redis until C<t/TEST -stop-httpd>;
C<t/TEST -run-tests> in between uses it. C<-clean>, C<-help> and the like
start nothing.

=cut

use Apache::TestRun ();
use Apache::TestRLaaS ();
use Apache::TestRLaaS::Keeper ();
use File::Spec::Functions qw(catfile);

our @ISA = ('Apache::TestRun');

sub pre_configure {
    my ($self) = @_;
    $self->SUPER::pre_configure();
    my $o = $self->{opts} || {};
    my %rl = %{ $self->{rlaas} || {} };

    my ($start, $run, $stop) = map { $o->{$_} } qw(start-httpd run-tests stop-httpd);
    my $mode;
    if (grep { $o->{$_} } qw(clean help configure ping no-httpd)) {
        $mode = 'none';
    } elsif ($stop && !$start && !$run) {
        # Apache::TestRun stops httpd and exits; the Redis kept since
        # -start-httpd can go first, httpd won't need it to stop
        $mode = 'stop';
    } elsif ($start) {
        $mode = $stop ? 'run' : 'start';
    } elsif (($run || @{ $self->{argv} || [] })
             && Apache::TestRLaaS::Keeper->attach(_state())) {
        # tests against the httpd and Redis of an earlier -start-httpd
        $mode = 'attach';
    } else {
        $mode = 'run';
    }
    $self->{rlaas_env} = Apache::TestRLaaS->setup(%rl, mode => $mode);
    # -clean with nothing configured stops "the server on port 8529", which
    # on a shared machine is another suite's: a port where nobody listens
    if ($o->{clean} && !-e catfile('t', 'conf', 'apache_test_config.pm')
        && !$ENV{APACHE_TEST_PORT} && !$self->{conf_opts}{port}) {
        $self->{conf_opts}{port} = _free_ports(1) || 'select';
    }
    return if $mode eq 'none' || $mode eq 'stop';

    # The suite cannot run here (a local backend the module does not have):
    # no httpd; each test file skips, saying why, when it loads the kit.
    if ($self->{rlaas_env}{RLAAS_KIT_SKIP}) {
        $o->{'no-httpd'} = 1;
        return;
    }
    # Configuration options make Apache::Test configure afresh, stopping a
    # running httpd: only for runs that start one.
    return if $mode eq 'attach';

    # Unless a port is given: 20 free ports from a random place below the
    # kernel's ephemeral range (httpd's, then its virtual hosts'). `-port
    # select` would start at 8529 like every other suite on the machine,
    # and two runs probing the same port at once both take it.
    my $picked;
    unless ($ENV{APACHE_TEST_PORT} || $self->{conf_opts}{port}
            || $Apache::TestConfig::Argv{port}) {
        $picked = $self->{conf_opts}{port} = _free_ports(20) || 'select';
    }
    # A configuration Apache::Test kept from an earlier run without these
    # lines (or with the other backend's, or another port) is made afresh.
    if ($self->{conf_opts}{thaw} && $picked && $picked ne 'select') {
        delete $self->{conf_opts}{thaw};
        $self->{conf_opts}{save} = 1;
    }
    if ($self->{conf_opts}{thaw}) {
        my $conf = catfile('t', 'conf', 'httpd.conf');
        my (undef, $post) = Apache::TestRLaaS->config_lines(%rl);
        my $text = '';
        if (open my $fh, '<', $conf) { local $/; $text = <$fh> // '' }
        if (index($text, $post) < 0) {
            delete $self->{conf_opts}{thaw};
            $self->{conf_opts}{save} = 1;
        }
    }
    return;
}

sub _state { catfile('t', 'logs', 'rlaas-kit') }

# _free_ports(N): the first of N ports in a row where nothing listens, from
# 20000-29999; undef when 50 tries found none.
sub _free_ports {
    my ($n) = @_;
    require IO::Socket::INET;
    TRY: for (1 .. 50) {
        my $base = 20000 + int rand(10000 - $n);
        my @held;
        for my $p ($base .. $base + $n - 1) {
            my $s = IO::Socket::INET->new(LocalAddr => '0.0.0.0', LocalPort => $p,
                                          Proto => 'tcp', Listen => 1, ReuseAddr => 1)
                or next TRY;
            push @held, $s;
        }
        return $base;
    }
    return undef;
}

# The command that starts this httpd, for reset_counters with the local
# backend (a stop and a start); the test files would otherwise read
# httpd's configuration again to make it.
sub start {
    my ($self, @a) = @_;
    $ENV{RLAAS_KIT_HTTPD_START} = eval { $self->{server}->start_cmd } // '';
    return $self->SUPER::start(@a);
}

sub new_test_config {
    my ($self) = @_;
    my $cfg = $self->SUPER::new_test_config();
    Apache::TestRLaaS->add_config($cfg, %{ $self->{rlaas} || {} });
    return $cfg;
}

1;
