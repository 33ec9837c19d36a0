# RLaaSConcurrency through Redis Cluster (t/conf/x-concurrency.conf.in,
# rlaas_if_cluster): an identity's slots and its rate limit share its hash
# tag, so they are decided together on its node, and given back there.
# A byte quota (3000 bytes an hour) through the cluster: a file of 1000
# bytes served 3 times, the fourth refused, each charge after its
# response on the identity's node. A calendar quota (3 a day in Paris)
# through the cluster: 3 admitted,
# the fourth refused until midnight in Paris, counted under the period's
# key on the identity's node. (Crossing midnight on a clock the test
# controls is t/calendar.t's; the cluster's retry in another period is
# t/lua's.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::IP;
use Time::HiRes qw(time sleep);
use File::Spec ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my @TOPO_MPMS = split ' ', ($ENV{RLAAS_TEST_TOPOLOGY_MPMS} || 'event');
plan skip_all => 'Redis topologies run under ' . join(' ', @TOPO_MPMS)
    . ' (RLAAS_TEST_TOPOLOGY_MPMS)' unless grep { $_ eq mpm() } @TOPO_MPMS;
my @CP = map { $ENV{"RLAAS_TEST_CLUSTER${_}_PORT"} } 1 .. 3;
plan skip_all => 'RLAAS_TEST_CLUSTER*_PORT are not set (t/TEST.PL)' if grep { !$_ } @CP;
my $cli = (grep { -x } map { "$_/redis-cli" } split /:/, "$ENV{PATH}:/usr/bin")[0];
plan skip_all => 'redis-cli is not installed' unless $cli;

require RLaaS::Redis;
my @N = map {
    RLaaS::Redis->start(port => $_, extra => [
        '--cluster-enabled', 'yes', '--cluster-port', free_port(),
        '--cluster-node-timeout', 1500, '--cluster-config-file', "nodes-if-$_.conf"])
} @CP;
my $out = `$cli --cluster create @{[ map { "127.0.0.1:" . $_->port } @N ]} --cluster-yes 2>&1`;
is($?, 0, 'redis-cli --cluster create: three masters') or diag($out);
sub all_ok { !grep { ($_->cmd('CLUSTER', 'INFO') // '') !~ /cluster_state:ok/ } @N }
my $t0 = time;
sleep 0.1 until all_ok() || time - $t0 > 20;
ok(all_ok(), 'cluster_state:ok on every node');

my $HP = Apache::TestRLaaS::hostport('rlaas_if_cluster');
sub one { req($_[0], vhost => 'rlaas_if_cluster', h => { 'X-User' => $_[1], Connection => 'close' }, ($_[2] ? (method => $_[2]) : ())) }
# a request left running once served (its status line read)
sub hold {
    my ($path, $user) = @_;
    my ($host, $port) = split /:/, $HP;
    for (1 .. 50) {
        my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port) or die "connect: $!";
        print $s "GET $path HTTP/1.0\r\nHost: $HP\r\nX-User: $user\r\n\r\n";
        my $line = <$s> // '';
        return $s if $line =~ m{^HTTP/1\.\d 200};
        close $s;
        sleep 0.1;
    }
    return;
}
sub finish { my $s = shift; local $/; my $all = <$s> // ''; close $s; $all =~ /\d{10}\.\d{6}.*\d{10}\.\d{6}/s }

# the module serves once it knows where the slots are
ok(wait_for(sub { one('/if/cl?s=0', uid('if-cl-warm'))->code == 200 }, 15, 0.2), 'served through the cluster');

for my $round (1 .. 3) {
    my ($u, $v) = (uid("if-cl-$round-u"), uid("if-cl-$round-v"));
    my @h = map { hold('/if/cl?s=4', $u) } 1 .. 2;
    ok($h[0] && $h[1], "round $round: two requests of one identity held");
    is(one('/if/cl?s=0', $u)->code, 429, "round $round: the third refused (RLaaSConcurrency 2)");
    is(one('/if/cl?s=0', $v)->code, 200, "round $round: another identity served");
    my $slot = $N[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-user=$u");
    my ($node) = grep { ($_->cmd('CLUSTER', 'COUNTKEYSINSLOT', $slot) // 0) > 0 } @N;
    ok($node, "round $round: the identity's keys are on one node (slot $slot)");
    is($node->cmd('ZCARD', "rlaas:rate_limit:if-cl:{h.x-user=$u}:conc"), 2, "round $round: its record holds the two slots")
        if $node;
    ok(finish($_), "round $round: a held request ran to its end") for grep { defined } @h;
    ok(wait_for(sub { one('/if/cl?s=0', $u)->code == 200 }, 2, 0.1), "round $round: its slots given back");
    ok(wait_for(sub { !$node || $node->cmd('EXISTS', "rlaas:rate_limit:if-cl:{h.x-user=$u}:conc") == 0 }, 2, 0.1),
        "round $round: the record is gone once every slot is back");
}

# a byte quota: each response's bytes charged after it, through the
# cluster, on the identity's node
{
    require File::Path;
    my $dir = File::Spec->catfile(repo_top(), 't', 'htdocs', 'bytes');
    File::Path::make_path($dir);
    open my $fh, '>', File::Spec->catfile($dir, 'cluster-1000.txt') or die "$dir: $!";
    print $fh 'x' x 1000;
    close $fh or die "$dir: $!";
    my $u = uid('if-bytes');
    my @codes;
    for my $i (1 .. 4) {
        push @codes, one('/if/bytes', $u)->code;
        # the charge follows the response: wait for it before the next
        my $left = 3000 - 1000 * $i;
        wait_for(sub { (one('/if/bytes', $u, 'HEAD')->header('RateLimit') // '') =~ /;r=\Q$left\E;/ }, 5, 0.05)
            if $i < 4;
    }
    is("@codes", '200 200 200 429', 'bytes, 3000 an hour: a file of 1000 served 3 times, the fourth refused');
    my $slot = $N[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-user=$u");
    my ($node) = grep { ($_->cmd('CLUSTER', 'COUNTKEYSINSLOT', $slot) // 0) > 0 } @N;
    my @keys = $node ? @{ $node->cmd('KEYS', "*if-bytes*$u*") } : ();
    is(scalar(@keys), 1, "  one key, on the identity's node");
    is($node && @keys ? $node->cmd('GET', $keys[0]) : undef, 3000, '  holding the 3000 bytes charged');
}

# a calendar quota: the period's key declared by the module, on the node
# of the identity's hash tag
{
    my $u = uid('if-cal');
    my @r = map { one('/if/cal?s=0', $u) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', 'calendar, 3 a day: 3 admitted, the fourth refused');
    my ($w) = ($r[0]->header('RateLimit-Policy') // '') =~ /;w=(\d+)/;
    like($w // '', qr/^(?:82800|86400|90000)$/, '  RateLimit-Policy w=: the length of the day in Paris');
    my $ra = $r[3]->header('Retry-After') // '';
    my $slot = $N[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-user=$u");
    my ($node) = grep { ($_->cmd('CLUSTER', 'COUNTKEYSINSLOT', $slot) // 0) > 0 } @N;
    my @keys = $node ? @{ $node->cmd('KEYS', "*if-cal*$u*") } : ();
    my ($start) = map { /:1d\+(\d+)$/ ? $1 : () } @keys;
    ok($start, "  one key on the identity's node, named by the period's start") or diag("@keys");
    my ($sec, $usec) = @{ $node ? $node->cmd('TIME') : [0, 0] };
    my $end = ($start // 0) + ($w // 0) * 1000;
    my $now = $sec * 1000 + int($usec / 1000);
    ok($start && $start <= $now && $now < $end, "  Redis' time within that period");
    cmp_ok(abs($ra - int(($end - $now + 999) / 1000)), '<=', 2, '  Retry-After: the seconds to midnight in Paris')
        or diag("Retry-After $ra, period end $end, now $now");
    is($node && $node->cmd('GET', $keys[0]), 3, '  the period holds 3');
}

$_->stop for @N;
done_testing();
