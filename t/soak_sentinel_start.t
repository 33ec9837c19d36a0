# Found by the soak (make soak, issue 29): with RLaaSRedisSentinel, a
# prefork child that has just started (after a graceful restart, a
# restart, a start, or one more child spawned under load) answers its
# first requests with 500 while Redis and the sentinels are healthy:
#
#   RLAAS0021: Redis connect error: no sentinel has named the master
#   soakmaster (yet); request refused with 500 (RLaaSFailOpen off)
#
# A child asks the sentinels in the background; until the first answer,
# a request did not wait for it (within its budget) but failed. Now it
# waits for that first look-up, never past its budget
# (rlaas_resolver_wait_first). The soak
# saw 133 such lines in 35 minutes, every time after a restart of the
# prefork server. Here: a master, one sentinel reached through a relay
# that holds each chunk 300 ms (a sentinel a little far away), a private
# prefork httpd with RLaaSRedisTimeout 3s; after a graceful restart, the
# new child's first requests must be decided (200), not refused (500).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use File::Temp qw(tempdir);
use POSIX ();
use RLaaS::Test qw(:all);
use RLaaS::Relay;

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $bin = (grep { -x } map { "$_/redis-sentinel" } split /:/, "$ENV{PATH}:/usr/bin:/usr/sbin")[0];
plan skip_all => 'redis-sentinel is not installed (Debian: redis-sentinel)' unless $bin;
require RLaaS::Redis;

my $M = RLaaS::Redis->start;
my $sp = free_port();
my $dir = tempdir('rlaas-soak-sentinel-XXXXXX', TMPDIR => 1, CLEANUP => 1);
open my $fh, '>', "$dir/s.conf" or die;
print $fh <<"EOC";
port $sp
bind 127.0.0.1
daemonize no
dir $dir
logfile $dir/s.log
sentinel monitor soakmaster 127.0.0.1 @{[ $M->port ]} 1
sentinel down-after-milliseconds soakmaster 5000
EOC
close $fh;
my $spid = fork // die "fork: $!";
if (!$spid) {
    open STDOUT, '>', '/dev/null';
    open STDERR, '>', '/dev/null';
    { exec $bin, "$dir/s.conf" }
    POSIX::_exit(127);
}
END { if ($spid) { kill 'TERM', $spid; waitpid $spid, 0 } }
my $S = RLaaS::Redis->attach(port => $sp);
ok(wait_for(sub { my $a = eval { $S->cmd('SENTINEL', 'get-master-addr-by-name', 'soakmaster') };
                  ref $a eq 'ARRAY' && $a->[1] == $M->port }, 20, 0.1),
   'the sentinel names the master');
my $relay = RLaaS::Relay->start(port => free_port(), target => $sp);
$relay->mode('delay', 300);

local $ENV{RLAAS_TEST_MPM} = 'prefork';
my $h = private_httpd(<<"EOC");
RLaaSRedisSentinel soakmaster 127.0.0.1:@{[ $relay->port ]}
RLaaSRedisTimeout 3s
RLaaSKeyPrefix soak-sentinel:
<Location "/">
    RLaaSLimit 1000
    RLaaSZone soak-sentinel
</Location>
EOC
my $st;
wait_for(sub { $st = $h->get('/x'); $st == 200 }, 20, 0.2);
is($st, 200, 'the first child found the master through the sentinel');

open my $pf, '<', "$h->{dir}/httpd.pid" or die;
my ($ppid) = <$pf> =~ /(\d+)/;
kill 'USR1', $ppid;
sleep 0.3;
my @codes = map { scalar $h->get('/x') } 1 .. 5;
is(join(' ', @codes), '200 200 200 200 200',
   "a new child's first requests after a graceful restart are decided, not refused while it asks the sentinels");
my @lines = grep { /no sentinel has named the master/ } split /\n/, $h->log;
is(scalar @lines, 0, 'no "no sentinel has named the master (yet)" with a healthy sentinel')
    or diag($lines[0]);

done_testing();
