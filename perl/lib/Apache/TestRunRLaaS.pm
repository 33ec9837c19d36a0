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
L<Apache::TestRLaaS/setup> (a private C<redis-server>, or none with the
local backend) and writes the kit's lines into the httpd.conf it
generates: C<LoadModule> of mod_rlaas, and C<RLaaSRedis> and
C<RLaaSKeyPrefix> for the suite (see L<Apache::TestRLaaS>).

C<< rlaas => { ... } >> takes the options of L<Apache::TestRLaaS/setup>;
the environment's C<RLAAS_KIT_BACKEND=local> chooses the local backend
too. Unless a port is given (C<-port>, C<APACHE_TEST_PORT>), httpd
listens on a free port (C<-port select>), so that suites running side by
side don't meet.

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

    # a free port for httpd unless one is given, so that suites running
    # side by side don't meet
    unless ($ENV{APACHE_TEST_PORT} || $self->{conf_opts}{port}
            || $Apache::TestConfig::Argv{port}) {
        $self->{conf_opts}{port} = 'select';
    }
    # A configuration Apache::Test kept from an earlier run without these
    # lines (or with the other backend's) is made afresh.
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

sub new_test_config {
    my ($self) = @_;
    my $cfg = $self->SUPER::new_test_config();
    Apache::TestRLaaS->add_config($cfg, %{ $self->{rlaas} || {} });
    return $cfg;
}

1;
