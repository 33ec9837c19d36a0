# RLaaSRedisCluster: a three-master Redis Cluster made by this test. The
# identity is the key's hash tag, so one identity's keys are on one node;
# calls go to the node of their slot, follow MOVED and ASK; every strategy
# stays exact across identities on different nodes; a slot moved by hand
# (CLUSTER SETSLOT, MIGRATE) under load gives no wrong decision. Nodes
# that join, take a slot and leave, 70 times (more than the 64 nodes a
# child knows at once): the child follows every one and forgets those
# that left, closing its connections to them. The operator's console
# works on the cluster: its round trip (RLaaS::Console: reset, credit,
# the bans of every node listed, unban), keys carrying their hash tag.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);
use RLaaS::Console qw(console_roundtrip);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
# A topology of several Redis processes takes seconds to set up: tested
# under one MPM (the threaded one, with the pipeline) unless asked for more.
my @TOPO_MPMS = split ' ', ($ENV{RLAAS_TEST_TOPOLOGY_MPMS} || 'event');
plan skip_all => 'Redis topologies run under ' . join(' ', @TOPO_MPMS)
    . ' (RLAAS_TEST_TOPOLOGY_MPMS)' unless grep { $_ eq mpm() } @TOPO_MPMS;
my @CP = map { $ENV{"RLAAS_TEST_CLUSTER${_}_PORT"} } 1 .. 3;
plan skip_all => 'RLAAS_TEST_CLUSTER*_PORT are not set (t/TEST.PL)' if grep { !$_ } @CP;
my $cli = (grep { -x } map { "$_/redis-cli" } split /:/, "$ENV{PATH}:/usr/bin")[0];
plan skip_all => 'redis-cli is not installed' unless $cli;

require RLaaS::Redis;
# three masters on the ports httpd knows, then a replica for each
my %BUS;    # a node's cluster bus port, by its port
# node(PORT): a cluster node on PORT (undef: a free one). Its ports are
# picked at random and can be taken before it binds them: tried again
# with fresh ones (the bus port always, the port too when not given).
sub node {
    my ($want) = @_;
    for my $try (1 .. 5) {
        my ($port, $bus) = ($want // free_port(), free_port());
        my $r = eval {
            RLaaS::Redis->start(port => $port, extra => [
                '--cluster-enabled', 'yes', '--cluster-port', $bus,
                '--cluster-node-timeout', 1500, '--repl-diskless-sync-delay', 0,
                '--cluster-config-file', "nodes-$port.conf"]);
        };
        if ($r) {
            $BUS{ $r->port } = $bus;
            return $r;
        }
        die $@ if $try == 5;
    }
}
my @N = map { node($_) } @CP;
my $out = `$cli --cluster create @{[ map { "127.0.0.1:" . $_->port } @N ]} --cluster-yes 2>&1`;
is($?, 0, 'redis-cli --cluster create: three masters') or diag($out);
my @ALL = @N;
for my $m (@N) {
    my $r = node();
    push @ALL, $r;
    $out = `$cli --cluster add-node 127.0.0.1:@{[ $r->port ]} 127.0.0.1:@{[ $N[0]->port ]} --cluster-slave --cluster-master-id @{[ $m->cmd('CLUSTER', 'MYID') ]} 2>&1`;
    is($?, 0, 'a replica for :' . $m->port) or diag($out);
}
# the nodes that own slots
sub masters {
    my %m = map { ($_->[2][1] => 1) } @{ $ALL[0]->cmd('CLUSTER', 'SLOTS') };
    return grep { $m{ $_->port } } @ALL;
}
sub synced { !grep { ($_->cmd('INFO', 'replication') // '') !~ /master_link_status:up/ } @ALL[3 .. 5] }
sub all_ok { !grep { ($_->cmd('CLUSTER', 'INFO') // '') !~ /cluster_state:ok/ } @ALL }
my $t0 = time;
sleep 0.1 until all_ok() || time - $t0 > 20;
ok(all_ok(), sprintf('cluster_state:ok on every node (%.1fs)', time - $t0));
sleep 0.1 until synced() || time - $t0 > 20;
ok(synced(), 'the replicas are in sync');

@N = masters();
is(scalar(@N), 3, 'three masters');
my %ID = map { ($_->port => $_->cmd('CLUSTER', 'MYID')) } @ALL;
sub owner {
    my ($slot) = @_;
    my $slots = $N[0]->cmd('CLUSTER', 'SLOTS');
    die "CLUSTER SLOTS: " . (ref $slots eq 'ARRAY' ? '?' : $slots->message) . "\n"
        unless ref $slots eq 'ARRAY';
    for my $r (@$slots) {
        return $r->[2][1] if $slot >= $r->[0] && $slot <= $r->[1];
    }
    return 0;
}
sub slot_of_user { $N[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-user=$_[0]") }
sub st { my $res = shift; $res->code . ' ' . (status_of($res) // '-') }
sub get { my ($p, $u) = @_; req($p, vhost => 'rlaas_cluster', h => { 'X-User' => $u }) }

# the module serves once it knows where the slots are
my $u0 = uid('cl0');
my $first;
for (1 .. 50) { $first = st(get('/cl/token/x', $u0)); last if $first eq '200 allowed'; sleep 0.1 }
is($first, '200 allowed', 'decided through the cluster');
my $slot = slot_of_user($u0);
my ($on) = grep { $_->port == owner($slot) } @N;
BAIL_OUT("no master owns slot $slot") unless $on;
my @keys = grep { /\Q$u0\E/ } @{ $on->cmd('KEYS', '*cl-token*') };
is_deeply(\@keys, [prefix() . "cl-token:{h.x-user=$u0}:tb"],
    'the key carries the identity as a hash tag, on the node that owns its slot');

# ---- exact across identities on different nodes, every strategy
my @ids;
{
    my %per;
    my $i = 0;
    while (@ids < 12) {
        my $u = uid('cl-id');
        my $o = owner(slot_of_user($u));
        next if ($per{$o} // 0) >= 4;
        $per{$o}++;
        push @ids, $u;
    }
    is(scalar(keys %per), 3, 'twelve identities, four on each node');
}
for my $s (qw(fixed sliding-window-algo sliding token leaky gcra)) {
    # one client per identity, all at once, 25 requests each
    my @r = run_clients(tag => uid("cl-$s"), keepalive => 1, clients => [
        map { [{ path => "/cl/$s/x", vhost => 'rlaas_cluster', h => { 'X-User' => $_ }, n => 25 }] } @ids ]);
    my %by;
    $by{ $ids[ $_->{client} ] }{ $_->{code} }++ for @r;
    my @wrong = grep { ($by{$_}{200} // 0) != 20 || ($by{$_}{429} // 0) != 5 } @ids;
    is(scalar(@wrong), 0, "$s: 12 identities on 3 nodes, 25 requests each at once, limit 20: exactly 20 each")
        or diag(join '; ', map { my $id = $_; "$id: " . join(',', map { "$_ x$by{$id}{$_}" } sort keys %{ $by{$id} }) } @wrong);
}

# ---- metrics per node
{
    my $m = metrics();
    for my $p (map { $_->port } @N) {
        cmp_ok($m->{qq{rlaas_redis_node_calls_total{node="127.0.0.1:$p"}}} // 0, '>', 100,
            "rlaas_redis_node_calls_total for node 127.0.0.1:$p");
    }
}

# ---- leases (RLaaSLease on, and auto by default): a portion of one
# identity's quota comes from the node of its slot; the ceiling holds on
# every node, and a busy identity's requests take few round trips
sub evalsha_calls {
    my $n = 0;
    for (@N) {
        my $i = $_->cmd('INFO', 'commandstats');
        $n += $1 if $i =~ /cmdstat_evalsha:calls=(\d+)/;
    }
    return $n;
}
{
    my %on;
    my @lu;
    while (@lu < 3) {
        my $u = uid('cl-lease');
        push @lu, $u unless $on{ owner(slot_of_user($u)) }++;
    }
    my $m0 = metrics();
    my @r = run_clients(tag => uid('cl-lease-run'), keepalive => 1, clients => [
        map { my $u = $_; map { [{ path => '/cl/lease/x', vhost => 'rlaas_cluster',
                                  h => { 'X-User' => $u }, n => 50 }] } 1 .. 10 } @lu ]);
    my $m1 = metrics();
    my %by;
    $by{ $lu[ int($_->{client} / 10) ] }{ $_->{code} }++ for @r;
    for my $u (@lu) {
        my $ok = $by{$u}{200} // 0;
        cmp_ok($ok, '<=', 300, "RLaaSLease on, an identity on each master: 500 requests, limit 300: at most 300 admitted ($ok)");
        cmp_ok($ok, '>=', 250, '  and at least 250');
        is($ok + ($by{$u}{429} // 0), 500, '  every other request refused with 429, none failed');
    }
    cmp_ok(mdelta($m0, $m1, 'rlaas_lease_grants_total'), '>', 0, '  portions were taken from the cluster');
    cmp_ok(mdelta($m0, $m1, 'rlaas_lease_spends_total'), '>', 0, '  and spent here');

    my $u = uid('cl-lease-auto');
    my $e0 = evalsha_calls();
    @r = run_clients(tag => uid('cl-lease-auto-run'), keepalive => 1, clients => [
        map { [{ path => '/cl/lease-auto/x', vhost => 'rlaas_cluster', h => { 'X-User' => $u }, n => 50 }] } 1 .. 20 ]);
    my $calls = evalsha_calls() - $e0;
    is(scalar(grep { $_->{code} == 200 } @r), 1000, 'no RLaaSLease (auto), a limit never reached: all 1000 admitted');
    # (a request that comes while a portion is fetched goes to Redis alone:
    # more of them on a slow machine; without leases 1000 calls)
    cmp_ok($calls, '<', 500, "  a busy identity's 1000 requests made $calls EVALSHA calls on the cluster (fewer than 500)");
}

# ---- the console, on the cluster (every slot served, none moving)
console_roundtrip(vhost => 'rlaas_cluster', backend => 'redis', label => 'Cluster', cluster => 1,
                  limit => '/cl/adm/lim', zone => 'cl-adm',
                  ban => '/cl/adm/ban', banzone => 'cl-admban');
# the reset leaves its mark beside the record, in its slot: units servers
# held before it are not given back into the fresh state (lua/forget.lua)
{
    my @marks = map { my $n = $_; map { [$n, $_] } @{ $n->cmd('KEYS', '*cl-adm*:forgot') } } @N;
    ok(@marks && !grep({ (my $k = $_->[1]) =~ s/:forgot$//; owner($N[0]->cmd('CLUSTER', 'KEYSLOT', $k)) != $_->[0]->port } @marks),
        'the console\'s reset left its mark (KEY:forgot) on the node of the record\'s slot')
        or diag(join ', ', map { $_->[1] } @marks);
}

# ---- a slot moved under load
sub migrate_under_load {
    my ($path) = @_;
    my $u = uid('cl-move');
    my $s = slot_of_user($u);
    my $from_port = owner($s);
    my ($from) = grep { $_->port == $from_port } @N;
    my ($to) = grep { $_->port != $from_port } @N;
    my $tag = uid('cl-move-tid');
    sub stat_of { my ($r, $sect, $name) = @_; my $i = $r->cmd('INFO', $sect);
        $i =~ /^\Q$name\E:(?:calls|count)=(\d+)/m ? $1 : 0 }
    my ($ask0, $moved0, $asking0) = (stat_of($from, 'errorstats', 'errorstat_ASK'),
        stat_of($from, 'errorstats', 'errorstat_MOVED'), stat_of($to, 'commandstats', 'cmdstat_asking'));
    my $start = time + 0.3;
    my $h = start_clients(tag => $tag, keepalive => 1, clients => [
        map { [{ path => $path, vhost => 'rlaas_cluster', h => { 'X-User' => $u },
                 at => $start, n => 70, gap => 0.02 }] } 1 .. 3 ]);
    sleep 0.8;
    $to->cmd('CLUSTER', 'SETSLOT', $s, 'IMPORTING', $ID{ $from->port });
    $from->cmd('CLUSTER', 'SETSLOT', $s, 'MIGRATING', $ID{ $to->port });
    sleep 0.3;    # requests meet the MIGRATING slot
    for (1 .. 3) {
        my $k = $from->cmd('CLUSTER', 'GETKEYSINSLOT', $s, 100);
        $from->cmd('MIGRATE', '127.0.0.1', $to->port, '', 0, 5000, 'KEYS', @$k) if @$k;
        sleep 0.2;    # ... and ASK, once the keys have gone
    }
    $_->cmd('CLUSTER', 'SETSLOT', $s, 'NODE', $ID{ $to->port }) for $to, $from, grep { $_ != $to && $_ != $from } @N;
    my @r = wait_clients($h);
    my %c;
    $c{"$_->{code} " . ($_->{status} // '-')}++ for @r;
    is(scalar(@r), 210, "$path: 210 requests while slot $s moved from :$from_port to :" . $to->port);
    is($c{'200 allowed'} // 0, 100, "$path: exactly 100 allowed (limit 100)")
        or diag(join ', ', map { "$_ x$c{$_}" } sort keys %c);
    is($c{'429 denied'} // 0, 110, "$path: the other 110 denied: no error, no wrong decision");
    ok($to->cmd('CLUSTER', 'COUNTKEYSINSLOT', $s) >= 1, "$path: the state is on the new owner");
    is($from->cmd('CLUSTER', 'COUNTKEYSINSLOT', $s), 0, "$path: and no longer on the old one");
    cmp_ok(stat_of($from, 'errorstats', 'errorstat_ASK') - $ask0, '>', 0, "$path: the old owner answered ASK ...");
    cmp_ok(stat_of($to, 'commandstats', 'cmdstat_asking') - $asking0, '>', 0, "$path: ... and the module sent ASKING to the new one");
    cmp_ok(stat_of($from, 'errorstats', 'errorstat_MOVED') - $moved0, '>', 0, "$path: then MOVED, which it followed");
    # a MOVED teaches a child the slot's new owner (and has it ask for the
    # whole map again): once every child has met one, a round of requests
    # meets no MOVED
    # (each request decided by Redis: allowed or denied, never let
    # through undecided)
    my $quiet = wait_for(sub {
        my $m = stat_of($from, 'errorstats', 'errorstat_MOVED');
        my @st = map { st(req($path, vhost => 'rlaas_cluster', h => { 'X-User' => $u })) } 1 .. 10;
        !grep({ !/^(?:200 allowed|429 denied)$/ } @st) && stat_of($from, 'errorstats', 'errorstat_MOVED') == $m;
    }, 10);
    ok($quiet, "$path: the new owner learnt: requests go to it directly");
}
migrate_under_load('/cl/move/x');
migrate_under_load('/cl/move-fixed/x');

# ---- policies: one identity's in one call, all or nothing; two identities
# on two slots, one call each
{
    my $u = uid('pcl');
    my ($on) = grep { $_->port == owner(slot_of_user($u)) } @N;
    my $pget = sub { req($_[0], vhost => 'rlaas_pol_cluster', h => { 'X-User' => $u, %{ $_[1] || {} } }) };
    my $r0;
    for (1 .. 50) { $r0 = $pget->('/pcl/one'); last if $r0->code == 200; sleep 0.1 }
    is($r0->code, 200, 'policies through the cluster');
    $on->cmd('CONFIG', 'RESETSTAT');
    my @c = map { $pget->('/pcl/one')->code } 1 .. 4;
    is("@c", '200 200 429 429', 'pcl-small (3) and pcl-big (10) of one user: 3 in all');
    is($on->cmd('ZCARD', prefix() . "pcl-big:{h.x-user=$u}"), 3,
        'pcl-big, on the same node, counts the 3 admitted requests only: all or nothing');
    my ($calls) = ($on->cmd('INFO', 'commandstats') =~ /^cmdstat_evalsha:calls=(\d+)/m);
    is($calls, 4, 'one EVALSHA per request for the two policies');
    my $k = uid('pcl-key');
    my @t = map { $pget->('/pcl/two', { 'X-Key' => $k })->code } 1 .. 3;
    is("@t", '200 200 429', 'per user and per API key (two slots): pcl-key (2) denies the third');
    my ($kon) = grep { $_->port == owner($N[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-key=$k")) } @N;
    ok($kon && $kon->cmd('EXISTS', prefix() . "pcl-key:{h.x-key=$k}:gcra"),
        "the API key's counter, on its own slot's node");
}

# ---- a slot half moved: one identity's two keys on two nodes. Redis
# answers TRYAGAIN (nothing ran); the module tries again within its
# budget (500ms here) instead of refusing the request (found by make soak)
{
    my $u = uid('pcl-half');
    my $s = slot_of_user($u);
    my ($from) = grep { $_->port == owner($s) } @N;
    my ($to) = grep { $_->port != $from->port } @N;
    my $r0;
    for (1 .. 50) {
        $r0 = req('/pcl/one', vhost => 'rlaas_pol_cluster', h => { 'X-User' => $u });
        last if $r0->code == 200;
        sleep 0.1;
    }
    is($r0->code, 200, 'half moved: the identity has its two keys');
    my @k = sort grep { /\Q$u\E/ } @{ $from->cmd('CLUSTER', 'GETKEYSINSLOT', $s, 100) };
    is(scalar(@k), 2, 'half moved: two keys in the slot, pcl-big and pcl-small');
    my $again0 = stat_of($from, 'errorstats', 'errorstat_TRYAGAIN');
    $to->cmd('CLUSTER', 'SETSLOT', $s, 'IMPORTING', $ID{ $from->port });
    $from->cmd('CLUSTER', 'SETSLOT', $s, 'MIGRATING', $ID{ $to->port });
    $from->cmd('MIGRATE', '127.0.0.1', $to->port, '', 0, 5000, 'KEYS', $k[0]);
    my $h = start_clients(tag => uid('pcl-half-t'), clients => [
        [{ path => '/pcl/one', vhost => 'rlaas_pol_cluster', h => { 'X-User' => $u }, at => time, n => 1 }] ]);
    # the request meets the half-moved slot, and waits: the rest of the
    # move follows the old owner's first TRYAGAIN at once (a fixed sleep
    # could outlast the budget on a loaded machine, or come too soon)
    my $ta = time;
    sleep 0.005 until stat_of($from, 'errorstats', 'errorstat_TRYAGAIN') > $again0 || time - $ta > 3;
    $from->cmd('MIGRATE', '127.0.0.1', $to->port, '', 0, 5000, 'KEYS', $k[1]);
    $_->cmd('CLUSTER', 'SETSLOT', $s, 'NODE', $ID{ $to->port }) for $to, $from, grep { $_ != $to && $_ != $from } @N;
    my @r = wait_clients($h);
    cmp_ok(stat_of($from, 'errorstats', 'errorstat_TRYAGAIN') - $again0, '>', 0,
        'half moved: the old owner answered TRYAGAIN');
    is(join(' ', map { "$_->{code} " . ($_->{status} // '-') } @r), '200 allowed',
        'half moved: the request is decided once the move went on, within its budget (not 500)');
    is($to->cmd('ZCARD', prefix() . "pcl-big:{h.x-user=$u}"), 2, 'half moved: counted once, on the new owner');
}

# ---- a master dies: its replica takes over
{
    @N = masters();
    my $u = uid('cl-fo');
    my $victim_port = owner(slot_of_user($u));
    my ($victim) = grep { $_->port == $victim_port } @N;
    my $tag = uid('cl-fo-tid');
    # (a loaded machine's margins: errors stopped within 10 s of the kill,
    # the clients on until 16 s after their start, so requests after the
    # last error are still seen)
    my $start = time + 0.3;
    my $h = start_clients(tag => $tag, keepalive => 1, clients => [
        (map { [{ path => '/cl/big/x', vhost => 'rlaas_cluster', h => { "X-User" => $u },
                  at => $start, until => $start + 16, gap => 0.02 }] } 1 .. 2),
        (map { [{ path => '/cl/open/x', vhost => 'rlaas_cluster', h => { "X-User" => $u },
                  at => $start, until => $start + 16, gap => 0.02 }] } 1 .. 2),
    ]);
    sleep 1.3;
    my $tk = time;
    kill 'KILL', $victim->pid;
    my @r = wait_clients($h);
    my @closed = grep { $_->{client} < 2 } @r;
    my @open = grep { $_->{client} >= 2 } @r;
    my @err = grep { $_->{code} == 500 } @closed;
    my $last = (sort { $b <=> $a } map { $_->{t1} } @err)[0] // $tk;
    ok(@err, sprintf('fail closed: 500 while the master was gone (%d)', scalar(@err)));
    is(scalar(grep { $_->{code} != 200 && $_->{code} != 500 } @closed), 0, 'nothing else');
    cmp_ok($last - $tk, '<', 10, sprintf('and no more %.1fs after it was killed (node timeout 1.5s)', $last - $tk));
    my @after = grep { $_->{t0} > $last } @closed;
    cmp_ok(scalar(@after), '>', 20, 'then requests ...');
    is(scalar(grep { ($_->{status} // '') ne 'allowed' } @after), 0, '... are decided by the promoted replica');
    is(scalar(grep { $_->{code} != 200 } @open), 0, 'fail open: no 500 at all (' . scalar(@open) . ' requests)');
    diag(sprintf 'cluster failover: errors for %.1fs after the master was killed', $last - $tk) if @err;
}

# ---- nodes come and go, more of them than a child knows at once (64):
# in each round a new node joins, takes a slot (MOVED leads the module
# there), then leaves the cluster; a private httpd of one child sees all
# of them, and keeps deciding
{
    my @live = grep { my $n = $_; eval { $n->cmd('PING') } } @ALL;
    my @M = do { my %m = map { ($_->[2][1] => 1) } @{ $live[0]->cmd('CLUSTER', 'SLOTS') };
                 grep { $m{ $_->port } } @live };
    is(scalar(@M), 3, 'three masters before nodes come and go');
    my $h = private_httpd(<<"EOC");
RLaaSRedisCluster @{[ join ' ', map { '127.0.0.1:' . $_->port } @M[0, 1] ]}
RLaaSRedisTimeout 500ms
RLaaSCircuitBreaker off
<Location /churn>
    RLaaSLimit 1000
    RLaaSWindow 1h
    RLaaSStrategy fixed
    RLaaSKeyBy header:X-User
    RLaaSZone churn
</Location>
EOC
    my $owner_of = sub {
        my ($slot) = @_;
        for my $r (@{ $M[0]->cmd('CLUSTER', 'SLOTS') }) {
            return $r->[2][1] if $slot >= $r->[0] && $slot <= $r->[1];
        }
        return 0;
    };
    my $mod_conns = sub { my $l = eval { $_[0]->cmd('CLIENT', 'LIST') } // '';
                          scalar(() = $l =~ /name=mod_rlaas-\d+/g) };
    my ($rounds, $decided, $first_try, $forgot, $prev) = (70, 0, 0, 0);
    my @fail;
    # A node joins a few rounds ahead, as a master without slots (which no
    # CLUSTER SLOTS names): one just started serves after 2 s at the
    # earliest.
    my @spare;
    my $join = sub {
        my $n = node();
        $_->cmd('CLUSTER', 'MEET', '127.0.0.1', $n->port, $BUS{ $n->port }) for @M;
        return $n;
    };
    for my $k (1 .. $rounds) {
        push @spare, $join->() while @spare < 3;
        my $z = shift @spare;
        my $zid = $z->cmd('CLUSTER', 'MYID');
        wait_for(sub { !grep { ($_->cmd('CLUSTER', 'NODES') // '') !~ /^\Q$zid\E (?![^\n]*handshake)/m } @M }, 10, 0.05)
            or do { push @fail, "round $k: the masters did not meet the new node"; last };
        wait_for(sub { ($z->cmd('CLUSTER', 'INFO') // '') =~ /cluster_state:ok/ }, 10, 0.05)
            or do { push @fail, "round $k: the new node's cluster_state is not ok"; last };
        # an identity whose slot holds no key yet moves to it
        my ($u, $slot, $from);
        do { $u = uid('churn'); $slot = $M[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-user=$u");
             $from = $owner_of->($slot) }
            while !$from || (grep { $_->port == $from } @M)[0]->cmd('CLUSTER', 'COUNTKEYSINSLOT', $slot);
        $_->cmd('CLUSTER', 'SETSLOT', $slot, 'NODE', $zid) for $z, @M;
        # a few tries, 0.3 s apart: a node that joined a moment ago may
        # still be settling its view of the slots on a busy machine; what
        # is checked is that the module follows MOVED to it, and how often
        # at once is reported below
        my @codes;
        my $seen = length $h->log;
        for (1 .. 10) {
            push @codes, scalar $h->get('/churn', { 'X-User' => $u });
            last if $codes[-1] == 200;
            sleep 0.3;
        }
        if ($codes[-1] == 200 && $z->cmd('CLUSTER', 'COUNTKEYSINSLOT', $slot) >= 1) {
            $decided++;
            $first_try++ if @codes == 1;
        }
        else {
            my @said = (substr($h->log, $seen) =~ /^(.*RLAAS.*)$/mg)[-3 .. -1];
            push @fail, "round $k: @codes; keys in the slot on the new node: "
                . $z->cmd('CLUSTER', 'COUNTKEYSINSLOT', $slot) . '; '
                . join(' | ', grep { defined } @said);
        }
        # the node that left last round: forgotten, its connections closed
        if ($prev) {
            $forgot++ if wait_for(sub { $mod_conns->($prev) == 0 }, 5, 0.05);
            $prev->stop;
        }
        # this one leaves: its slot goes back, every node forgets it
        $z->cmd('FLUSHALL');
        my ($back) = grep { $_->port == $from } @M;
        $_->cmd('CLUSTER', 'SETSLOT', $slot, 'NODE', $back->cmd('CLUSTER', 'MYID')) for $z, @M;
        for my $n (grep { $_ != $z } @live) {
            my $r = $n->cmd('CLUSTER', 'FORGET', $zid);
            push @fail, "round $k: CLUSTER FORGET on :" . $n->port . ": $r" if ref $r;
        }
        $prev = $z;
    }
    is($decided, $rounds, "$rounds nodes joined, took a slot and left: every round decided on the new node")
        or diag(join '; ', @fail[0 .. ($#fail < 9 ? $#fail : 9)]);
    diag("decided at the first request in $first_try of $rounds rounds");
    is($forgot, $rounds - 1, 'each node that left was forgotten: the module closed its connections to it');
    unlike($h->log, qr/not followed: no room for another node/, 'never a MOVED left unfollowed for want of room');
    $_->stop for grep { defined } $prev, @spare;
}

done_testing();
