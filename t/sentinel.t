# RLaaSRedisSentinel: the master is found through Redis Sentinel, and a
# failover is followed without a restart. A master and a replica of the
# test's own, three redis-sentinel processes on the ports httpd was told;
# under load, SENTINEL FAILOVER: with fail-open off, errors stop within a
# few seconds of the promotion and requests are counted on the new master;
# with fail-open on, no 500 at all. Before it, with the master up, the
# operator's console works through Sentinel: its round trip
# (RLaaS::Console: reset, credit, the bans listed, unban) on the master
# the sentinels name.
#
# Then the trust put in sentinels (private httpds of this test's own):
# sentinels that lie or are stale (fakes the test controls) cannot move
# the module: an address is used only when a majority of the configured
# sentinels name it and the server there says it is a master; otherwise
# the master verified last stays, and the log says why (rate-limited).
# Sentinels with TLS only (tls-port, no plain port) are spoken to in TLS,
# their certificates and the master's checked. apachectl -t refuses
# Sentinel with TLS and no name to check the master's certificate
# against.
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
use RLaaS::Console qw(console_roundtrip);
use RLaaS::FakeSentinel;

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
# start_sentinel(NAME, CONF): a redis-sentinel of this test's own
sub start_sentinel {
    my ($name, $text) = @_;
    my $conf = "$dir/$name.conf";
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh "bind 127.0.0.1\ndaemonize no\ndir $dir\nlogfile $dir/$name.log\n$text";
    close $fh;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec({ $bin } $bin, $conf) or POSIX::_exit(127);
    }
    push @pids, $pid;
}
for my $i (0 .. 2) {
    start_sentinel("s$i", <<"EOC");
port $SP[$i]
sentinel monitor rlaasmaster 127.0.0.1 @{[ $M->port ]} 2
sentinel down-after-milliseconds rlaasmaster 1000
sentinel failover-timeout rlaasmaster 4000
sentinel parallel-syncs rlaasmaster 1
EOC
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

# ---- the console, through Sentinel (the master up, before the failover)
console_roundtrip(vhost => 'rlaas_sentinel', backend => 'redis', label => 'Sentinel',
                  limit => '/sen/adm/lim', zone => 'sen-adm',
                  ban => '/sen/adm/ban', banzone => 'sen-admban');

# ---- failover under load
# (a loaded machine's margins: the promotion awaited up to 15 s, errors
# stopped within 8 s of it, the clients on until 16 s after their start,
# so requests after the last error are still seen)
my $tag = uid('sen-tid');
my $start = time + 0.3;
my $h = start_clients(tag => $tag, keepalive => 1, clients => [
    (map { [{ path => '/sen/x', vhost => 'rlaas_sentinel', h => { 'X-User' => $u },
              at => $start, until => $start + 16, gap => 0.02 }] } 1 .. 2),
    (map { [{ path => '/sen/open/x', vhost => 'rlaas_sentinel', h => { 'X-User' => $u },
              at => $start, until => $start + 16, gap => 0.02 }] } 1 .. 2),
]);
sleep 1.3;
my $tf = time;
my $r = $S[0]->cmd('SENTINEL', 'FAILOVER', 'rlaasmaster');
is(ref $r ? $r->message : $r, 'OK', 'SENTINEL FAILOVER');
my $promoted;
for (1 .. 300) {
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
ok(!@err || $last_err - $promoted < 8,
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

# ---- apachectl -t: Sentinel with TLS needs a name for the master's
# certificate (the default, 127.0.0.1, is carried by no master)
my $td = tempdir('rlaas-sentinel-tls-XXXXXX', TMPDIR => 1, CLEANUP => 1);
RLaaS::Redis::make_tls_certs($td);
{
    my $tls = "RLaaSRedisTLS on\nRLaaSRedisTLSCA $td/ca.crt\n";
    my $sen = "RLaaSRedisSentinel mymaster 127.0.0.1:26379 127.0.0.2:26379 127.0.0.3:26379\n";
    my $need = qr/RLAAS0183: RLaaSRedisTLSServerName is required with RLaaSRedisSentinel mymaster and RLaaSRedisTLS on/;
    config_refused($sen . $tls, $need, 'Sentinel and TLS, no name to check the master against');
    config_refused($tls . "<VirtualHost 127.0.0.1:1>\n$sen</VirtualHost>\n",
        qr/$need.*the virtual host at /, 'the same in a virtual host inheriting TLS from the main server');
    config_accepted($sen . $tls . "RLaaSRedisTLSServerName redis.example.net\n", 'with RLaaSRedisTLSServerName');
    config_accepted($sen . $tls . "RLaaSRedisTLSAnnouncedName on\n", 'with RLaaSRedisTLSAnnouncedName on');
    config_refused($sen . $tls . "RLaaSRedisTLSAnnouncedName on\nRLaaSRedisTLSServerName redis.example.net\n",
        qr/RLaaSRedisTLSAnnouncedName on and RLaaSRedisTLSServerName 'redis.example.net' \(master mymaster\): choose one/,
        'both ways of naming the master');
    config_accepted($sen, 'Sentinel in plain TCP needs no name');
    config_refused("RLaaSRedisSentinelTLSServerName 'a b'\n",
        qr/RLaaSRedisSentinelTLSServerName: invalid value 'a b': expected a host name or address/, 'a sentinel name with a space');
}

# ---- sentinels that lie or are stale: three fakes the test controls
sub script_calls {
    my $i = $_[0]->cmd('INFO', 'commandstats');
    my $n = 0;
    $n += $1 + ($2 // 0) + ($3 // 0)
        while $i =~ /^cmdstat_eval(?:sha)?:calls=(\d+)[^\n]*?(?:rejected_calls=(\d+))?[^\n]*?(?:failed_calls=(\d+))?/mg;
    return $n;
}
{
    my $M2 = RLaaS::Redis->start;    # the master
    my $R2 = RLaaS::Redis->start;    # its replica
    $R2->cmd('REPLICAOF', '127.0.0.1', $M2->port);
    my $X = RLaaS::Redis->start;     # a stranger: a master, but not ours
    my @F = map { RLaaS::FakeSentinel->start(port => free_port()) } 1 .. 3;
    my ($mp, $rp, $xp) = map { $_->port } $M2, $R2, $X;
    $_->names('127.0.0.1', $rp) for @F;    # at first, all name the replica
    my $h = private_httpd(<<"EOC");
RLaaSRedisSentinel fakemaster @{[ join ' ', map { '127.0.0.1:' . $_->port } @F ]}
RLaaSRedisTimeout 300ms
RLaaSCircuitBreaker off
RLaaSLease off
<Location />
    RLaaSLimit 1000000
    RLaaSWindow 1h
    RLaaSStrategy fixed
    RLaaSKeyBy header:X-User
    RLaaSZone fake
</Location>
EOC
    # every fake asked $n more times: a whole look-up ran since the change
    my $asked_again = sub {
        my $n = shift;
        my @b = map { $_->asked } @F;
        return wait_for(sub { !grep { $F[$_]->asked < $b[$_] + $n } 0 .. $#F }, 15, 0.05);
    };
    my $u = uid('fake');
    my $get = sub { join ' ', map { scalar $h->get('/x', { 'X-User' => $u }) } 1 .. ($_[0] || 1) };
    my %calls;
    my $snap = sub { %calls = map { ($_->port => script_calls($_)) } $M2, $R2, $X };
    my $sent = sub { script_calls($_[0]) - $calls{ $_[0]->port } };

    ok($asked_again->(2), 'the module asks every sentinel');
    $snap->();
    is($get->(3), '500 500 500', 'all three sentinels name the replica: it is not used (fail closed)');
    is($sent->($R2), 0, 'nothing was sent to the replica');
    like($h->log, qr/RLAAS0181: Sentinel: 3 of the 3 sentinels name 127\.0\.0\.1:$rp the master fakemaster, but it is not used: it says it is replica; no master is known yet/,
        'the log says why (RLAAS0181)');

    $_->names('127.0.0.1', $mp) for @F;
    ok(wait_for(sub { $get->() eq '200' }, 10, 0.1), 'they name the master: requests are decided');
    like($h->log, qr/RLAAS0182: Sentinel: the master fakemaster is 127\.0\.0\.1:$mp \(3 of the 3 sentinels agree, and it says it is the master\)/,
        'the new master is logged (RLAAS0182)');

    # the liar is the first one listed, the one asked first
    $F[0]->names('127.0.0.1', $xp);
    ok($asked_again->(2), 'one sentinel names a stranger');
    $snap->();
    is($get->(5), '200 200 200 200 200', 'requests are decided ...');
    is($sent->($M2), 5, '... on the master the other two name');
    is($sent->($X), 0, 'the stranger the liar named is sent nothing');

    $F[1]->names('127.0.0.1', $rp);
    my $t4 = time;
    ok($asked_again->(4), 'three sentinels, three answers (stranger, replica, master), for a few seconds');
    $snap->();
    is($get->(5), '200 200 200 200 200', 'no majority: the master verified last stays ...');
    is($sent->($M2), 5, '... and gets the requests');
    is($sent->($R2) + $sent->($X), 0, 'the replica and the stranger get none');
    my @dis = $h->log =~ /(RLAAS0180: [^\n]*)/g;
    my $span = time - $t4;
    ok(@dis >= 1 && @dis <= 1 + int($span / 10),
        sprintf('%d RLAAS0180 line(s) for %.1fs of look-ups every second (one per 10 s)', scalar(@dis), $span))
        or diag("@dis");
    like($dis[0] // '', qr/no address for master fakemaster has the agreement of 2 of the 3 sentinels \(at most 1 agree\): 127\.0\.0\.1:\d+ names 127\.0\.0\.1:$xp; 127\.0\.0\.1:\d+ names 127\.0\.0\.1:$rp; 127\.0\.0\.1:\d+ names 127\.0\.0\.1:$mp; 127\.0\.0\.1:$mp, verified before, stays the master/,
        'it says what each sentinel named, and which master stays');

    $_->names('127.0.0.1', $rp) for @F;
    ok($asked_again->(2), 'all three name the replica again (stale sentinels)');
    $snap->();
    is($get->(5), '200 200 200 200 200', 'the replica is not used: the master verified last stays');
    is($sent->($M2), 5, 'the requests go to it');
    is($sent->($R2), 0, 'none to the replica');

    # The trust model's limit (docs): a majority may name any server that
    # answers as a master to the module's credentials (and, with TLS,
    # shows a certificate for the name checked), as Sentinel would after
    # a failover.
    $F[0]->names('127.0.0.1', $xp);
    $F[1]->names('127.0.0.1', $xp);
    $F[2]->names('127.0.0.1', $mp);
    ok(wait_for(sub { $h->log =~ /RLAAS0182: Sentinel: the master fakemaster is 127\.0\.0\.1:$xp \(2 of the 3/ }, 10, 0.1),
        'two of three name another master that says it is one: it is followed (a majority decides)');
}

# ---- sentinels with TLS only: spoken to in TLS, their certificates and
# the master's checked, their password never in clear
{
    my @targs = ('--tls-cert-file', "$td/server.crt", '--tls-key-file', "$td/server.key",
                 '--tls-ca-cert-file', "$td/ca.crt");
    my $tport = free_port();
    my $MT = RLaaS::Redis->start(extra => ['--tls-port', $tport, @targs]);
    my @TS = map { free_port() } 1 .. 3;
    my $spw = 'senpw-' . int(rand 1e9);
    for my $i (0 .. 2) {
        start_sentinel("tls$i", <<"EOC");
port 0
tls-port $TS[$i]
tls-cert-file $td/server.crt
tls-key-file $td/server.key
tls-ca-cert-file $td/ca.crt
tls-replication yes
requirepass $spw
sentinel monitor tlsmaster 127.0.0.1 $tport 2
EOC
    }
    # the third is named "localhost": each sentinel is checked against its
    # own host as configured
    my $sentinels = "RLaaSRedisSentinel tlsmaster 127.0.0.1:$TS[0] 127.0.0.1:$TS[1] localhost:$TS[2]";
    my $conf = sub { <<"EOC" };
$sentinels
RLaaSRedisSentinelPassword $spw
RLaaSRedisTLS on
RLaaSRedisTLSCA $td/ca.crt
RLaaSRedisTLSCert $td/client.crt
RLaaSRedisTLSKey $td/client.key
RLaaSRedisTimeout 300ms
RLaaSCircuitBreaker off
RLaaSLease off
$_[0]
<Location />
    RLaaSLimit 1000000
    RLaaSWindow 1h
    RLaaSStrategy fixed
    RLaaSKeyBy header:X-User
    RLaaSZone sentls
</Location>
EOC
    my $u = uid('sentls');
    my $zone_keys = sub { scalar grep { /sentls/ } @{ $MT->cmd('KEYS', '*sentls*') } };
    my $ok = private_httpd($conf->('RLaaSRedisTLSServerName localhost'));
    ok(wait_for(sub { $ok->get('/x', { 'X-User' => $u }) == 200 }, 15, 0.2),
        'sentinels listening on a tls-port only: the master is found, requests decided');
    cmp_ok($zone_keys->(), '>=', 1, 'counted on the master, over TLS');
    like($ok->log, qr/RLAAS0182: Sentinel: the master tlsmaster is 127\.0\.0\.1:$tport \(3 of the 3 sentinels agree/,
        'all three sentinels answered (two checked as 127.0.0.1, one as localhost)');

    my $ann = private_httpd($conf->('RLaaSRedisTLSAnnouncedName on'));
    ok(wait_for(sub { $ann->get('/x', { 'X-User' => $u }) == 200 }, 15, 0.2),
        'RLaaSRedisTLSAnnouncedName on: the master is checked against the address announced (127.0.0.1)');

    my $badsen = private_httpd($conf->("RLaaSRedisTLSServerName localhost\nRLaaSRedisSentinelTLSServerName wrong.example"));
    my $badm = private_httpd($conf->('RLaaSRedisTLSServerName wrong.example'));
    wait_for(sub { $badsen->log =~ /RLAAS0180/ && $badm->log =~ /RLAAS0181/ }, 15, 0.2);
    is($badsen->get('/x', { 'X-User' => $u }), 500, 'sentinels whose certificates do not carry the name checked: no master (fail closed)');
    like($badsen->log, qr/RLAAS0180: Sentinel: .*127\.0\.0\.1:$TS[0]: TLS: certificate verify failed/,
        'the log says the sentinels did not verify');
    is($badm->get('/x', { 'X-User' => $u }), 500, 'a master whose certificate does not carry RLaaSRedisTLSServerName: not used');
    like($badm->log, qr/RLAAS0181: Sentinel: 3 of the 3 sentinels name 127\.0\.0\.1:$tport .*not used: TLS: certificate verify failed/,
        'the log says the master did not verify');
    unlike($ok->log . $badsen->log . $badm->log . $ann->log, qr/\Q$spw\E/, 'the sentinels\' password is never logged');
}

done_testing();
