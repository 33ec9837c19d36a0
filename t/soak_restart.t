# Found by the soak (make soak, issue 29): a prefork child that holds a
# Redis connection (a request waiting for Redis) when httpd is restarted
# (SIGHUP) or stopped (SIGTERM) died of SIGABRT:
#
#   apache2: ./misc/apr_reslist.c:163: reslist_cleanup: Assertion `rl->ntotal == 0' failed.
#   AH00052: child pid N exit signal Abort (6)
#
# prefork's SIGHUP/SIGTERM handler destroys the child's pool at once, in
# the middle of the request; the pool's apr_reslist of connections then
# finds a connection still taken, and APR asserts. Here: a private prefork
# httpd, Redis paused (CLIENT PAUSE) so that a request waits for it with
# its connection taken, then SIGHUP to the parent, then the same with
# SIGTERM; no child may die of a signal, and the server serves again
# after the restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use POSIX ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
require RLaaS::Redis;

my $redis = RLaaS::Redis->start;
# prefork whatever the suite's MPM: the handler that destroys the pool in
# the middle of a request is prefork's
local $ENV{RLAAS_TEST_MPM} = 'prefork';

sub server {
    return private_httpd(<<"EOC");
RLaaSRedis 127.0.0.1:@{[ $redis->port ]}
RLaaSRedisTimeout 5s
RLaaSKeyPrefix soak-restart:
<Location "/">
    RLaaSLimit 1000
    RLaaSZone soak-restart
</Location>
EOC
}

sub pid_of { my ($h) = @_; open my $fh, '<', "$h->{dir}/httpd.pid" or return; my $p = <$fh>; $p =~ /(\d+)/ ? $1 : undef }

# a request in the background, waiting for the paused Redis
sub stuck_request {
    my ($h) = @_;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        $h->get('/x');
        POSIX::_exit(0);
    }
    return $pid;
}

for my $sig (qw(HUP TERM)) {
    my $h = server();
    is($h->get('/x'), 200, "SIG$sig: a first request is decided (the child has its connection)");
    my $ppid = pid_of($h);
    $redis->pause_ms(3000);
    my $req = stuck_request($h);
    sleep 0.8;    # the request waits for Redis, its connection taken
    kill $sig, $ppid;
    waitpid $req, 0;
    sleep 3.5;    # the pause is over; the restart (or the stop) done
    my $log = $h->log;
    my @crash = grep { /exit signal|Assertion|Segmentation|double free|corrupted/ } split /\n/, $log;
    is(scalar @crash, 0, "SIG$sig with a request waiting for Redis: no child died of a signal")
        or diag(join "\n", @crash);
    if ($sig eq 'HUP') {
        my $st;
        wait_for(sub { $st = $h->get('/x'); $st == 200 }, 10, 0.2);
        is($st, 200, 'the server decides again after the restart');
        system($h->{httpd}, '-f', $h->{conf}, '-k', 'stop');
    }
    for (1 .. 100) { last unless kill 0, $ppid; sleep 0.05 }
}

done_testing();
