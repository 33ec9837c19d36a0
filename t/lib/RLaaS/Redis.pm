package RLaaS::Redis;

=head1 NAME

RLaaS::Redis - the test kit's private redis-server, as mod_rlaas' own suite
calls it

=head1 SYNOPSIS

    use RLaaS::Redis;
    my $r = RLaaS::Redis->start(unixsocket => 1);
    my $r = RLaaS::Redis->from_env;   # RLAAS_TEST_REDIS_PORT/_PIDFILE/_DIR

Everything is L<Apache::TestRLaaS::Redis> (perl/lib, the kit users get
with C<make install>); this subclass keeps the names the suite was written
with: error replies are C<RLaaS::Redis::Error> objects (which are kit error
objects too), C<RLaaS::Redis::is_error>, C<_free_port>, C<_alive> and
C<make_tls_certs> as functions, and C<from_env> reading t/TEST.PL's
C<RLAAS_TEST_REDIS_*> variables: C<RLAAS_TEST_REDIS_PORT>,
C<RLAAS_TEST_REDIS_PIDFILE>, C<RLAAS_TEST_REDIS_DIR> and, when set,
C<RLAAS_TEST_REDIS_PASSWORD> and C<RLAAS_TEST_REDIS_USERNAME> (undef when
C<RLAAS_TEST_REDIS_PORT> is not set).

=cut

use strict;
use warnings;

use File::Basename qw(dirname);
use File::Spec::Functions qw(catdir rel2abs);
# the kit of this checkout, not one installed on the machine
use lib catdir(dirname(dirname(dirname(dirname(rel2abs(__FILE__))))), 'perl', 'lib');

use parent 'Apache::TestRLaaS::Redis';

*is_error       = \&Apache::TestRLaaS::Redis::is_error;
*_free_port     = \&Apache::TestRLaaS::Redis::free_port;
*_alive         = \&Apache::TestRLaaS::Redis::_alive;
*make_tls_certs = \&Apache::TestRLaaS::Redis::make_tls_certs;

sub error_class { 'RLaaS::Redis::Error' }

sub from_env {
    my ($class) = @_;
    return undef unless $ENV{RLAAS_TEST_REDIS_PORT};
    return $class->attach(
        port     => $ENV{RLAAS_TEST_REDIS_PORT},
        pidfile  => $ENV{RLAAS_TEST_REDIS_PIDFILE},
        dir      => $ENV{RLAAS_TEST_REDIS_DIR},
        password => $ENV{RLAAS_TEST_REDIS_PASSWORD},
        username => $ENV{RLAAS_TEST_REDIS_USERNAME},
    );
}

package RLaaS::Redis::Error;

use parent -norequire, 'Apache::TestRLaaS::Redis::Error';

1;
