# RLaaSRedisSentinel: the master is found through Redis Sentinel, and a
# failover is followed without a restart. A master and a replica of the
# test's own, three redis-sentinel processes on the ports httpd was told;
# under load, SENTINEL FAILOVER: with fail-open off, errors stop within a
# few seconds of the promotion and requests are counted on the new master;
# with fail-open on, no 500 at all.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use File::Temp qw(tempdir);
use IO::Socket::INET ();
use POSIX ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
# A topology of several Redis processes takes seconds to set up: tested
# under one MPM (the threaded one, with the pipeline) unless asked for more.
my @TOPO_MPMS = split ' ', ($ENV{RLAAS_TEST_TOPOLOGY_MPMS} || 'event');
plan skip_all => 'Redis topologies run under ' . join(' ', @TOPO_MPMS)
    . ' (RLAAS_TEST_TOPOLOGY_MPMS)' unless grep { $_ eq mpm() } @TOPO_MPMS;
my @SP = map { $ENV{"RLAAS_TEST_SENTINEL${_}_PORT"} } 1 .. 3;
plan skip_all => 'RLAAS_TEST_SENTINEL*_PORT are not set (t/TEST.PL)' if grep { !$_ } @SP;
my $bin = (grep { -x } map { "$_/redis-sentinel" } split /:/, "$ENV{PATH}:/usr/bin:/usr/sbin")[0];
plan skip_all => 'redis-sentinel is not installed (Debian: redis-sentinel)' unless $bin;

require RLaaS::Redis;
my $M = RLaaS::Redis->start;
my $R = RLaaS::Redis->start;
$R->cmd('REPLICAOF', '127.0.0.1', $M->port);

my $dir = tempdir('rlaas-sentinel-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my @pids;
END { kill 'TERM', @pids if @pids; waitpid($_, 0) for @pids }
for my $i (0 .. 2) {
    my $conf = "$dir/s$i.conf";
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"EOC";
port $SP[$i]
bind 127.0.0.1
daemonize no
dir $dir
logfile $dir/s$i.log
sentinel monitor rlaasmaster 127.0.0.1 @{[ $M->port ]} 2
sentinel down-after-milliseconds rlaasmaster 1000
sentinel failover-timeout rlaasmaster 4000
sentinel parallel-syncs rlaasmaster 1
EOC
    close $fh;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec $bin, $conf;
        POSIX::_exit(127);
    }
    push @pids, $pid;
}
my @S = map { RLaaS::Redis->attach(port => $_) } @SP;
sub sentinels_ready {
    for my $s (@S) {
        my $ok = eval {
            my $sen = $s->cmd('SENTINEL', 'sentinels', 'rlaasmaster');
            my $rep = $s->cmd('SENTINEL', 'replicas', 'rlaasmaster');
            ref $sen eq 'ARRAY' && @$sen == 2 && ref $rep eq 'ARRAY' && @$rep == 1;
        };
        return 0 unless $ok;
    }
    return 1;
}
my $t0 = time;
sleep 0.2 until sentinels_ready() || time - $t0 > 20;
ok(sentinels_ready(), sprintf('three sentinels know the master, its replica and each other (%.1fs)', time - $t0));

sub st { my $res = shift; $res->code . ' ' . (status_of($res) // '-') }
my $u = uid('sen');
my $first;
$t0 = time;
for (1 .. 100) {
    $first = st(req('/sen/x', vhost => 'rlaas_sentinel', h => { 'X-User' => $u }));
    last if $first eq '200 allowed';
    sleep 0.1;
}
is($first, '200 allowed', sprintf('the module asked the sentinels and found the master (%.1fs)', time - $t0));
sub zone_keys { my ($r, $z) = @_; my ($c, @k) = (0);
    do { my $x = $r->cmd('SCAN', $c, 'MATCH', prefix() . "$z:*", 'COUNT', 1000);
         ($c, my $l) = @$x; push @k, @$l } while $c; @k }
ok(scalar(zone_keys($M, 'sen')) >= 1, 'counted on the master');

# ---- failover under load
my $tag = uid('sen-tid');
my $start = time + 0.3;
my $h = start_clients(tag => $tag, keepalive => 1, clients => [
    (map { [{ path => '/sen/x', vhost => 'rlaas_sentinel', h => { 'X-User' => $u },
              at => $start, until => $start + 9, gap => 0.02 }] } 1 .. 2),
    (map { [{ path => '/sen/open/x', vhost => 'rlaas_sentinel', h => { 'X-User' => $u },
              at => $start, until => $start + 9, gap => 0.02 }] } 1 .. 2),
]);
sleep 1.3;
my $tf = time;
my $r = $S[0]->cmd('SENTINEL', 'FAILOVER', 'rlaasmaster');
is(ref $r ? $r->message : $r, 'OK', 'SENTINEL FAILOVER');
my $promoted;
for (1 .. 100) {
    my $role = eval { $R->cmd('ROLE') };
    if (ref $role eq 'ARRAY' && $role->[0] eq 'master') { $promoted = time; last }
    sleep 0.05;
}
ok($promoted, sprintf('the replica is the master %.1fs later', ($promoted // $tf) - $tf));
my @res = wait_clients($h);
# clients 0 and 1 fail closed, 2 and 3 fail open
my @closed = grep { $_->{client} < 2 } @res;
my @open = grep { $_->{client} >= 2 } @res;
my @err = grep { $_->{code} != 200 } @closed;
my $last_err = (sort { $b <=> $a } map { $_->{t1} } @err)[0];
ok(!@err || $last_err - $promoted < 5,
    sprintf('fail closed: %d errors, the last %.1fs after the promotion', scalar(@err), ($last_err // $promoted) - $promoted));
my @late = grep { $_->{t0} > ($last_err // $promoted) } @closed;
cmp_ok(scalar(@late), '>', 20, 'and after that, requests ...');
is(scalar(grep { ($_->{status} // '') ne 'allowed' } @late), 0, '... are decided (allowed) on the new master');
is(scalar(grep { $_->{code} != 200 } @open), 0, 'fail open: no 500 at all during the failover (' . scalar(@open) . ' requests)');
# a replica is sent the effects of scripts, never EVALSHA: the calls the
# new master ran came from the module
sub evalsha_calls { my $i = $_[0]->cmd('INFO', 'commandstats'); $i =~ /cmdstat_evalsha:calls=(\d+)/ ? $1 : 0 }
my ($rm, $mm) = (evalsha_calls($R), evalsha_calls($M));
cmp_ok($rm, '>', 20, "the new master ran the module's script calls ($rm)");
is(st(req('/sen/x', vhost => 'rlaas_sentinel', h => { 'X-User' => $u })), '200 allowed', 'one more request');
is(evalsha_calls($R), $rm + 1, 'went to the new master');
is(evalsha_calls($M), $mm, 'not to the old one');

done_testing();
