# A new child's first Redis connection is opened before the child takes
# requests (found by make soak: new prefork children behind TLS on a loaded
# machine spent their first request's time budget on the TLS handshake and
# answered 500). Here the handshake's slowness is a relay that holds each
# new connection's first reply 400 ms, against RLaaSRedisTimeout 200ms:
# the child's first request is decided; a connection opened inside a
# request (after CLIENT KILL) meets the same slowness and is not. The same
# through a host name looked up slowly (150 ms, the suite's shim): the
# connection opened at start is kept by the first request, not dropped as
# one to an address of the past once the look-up is seen.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $rport = $ENV{RLAAS_TEST_REDIS_PORT};
plan skip_all => 'RLAAS_TEST_REDIS_PORT is not set (t/TEST.PL)' unless $rport;
END { $? = 0 if defined $? && $? == -1 }

require RLaaS::Relay;
my $rp = free_port();
my $relay = RLaaS::Relay->start(port => $rp, target => $rport);
$relay->mode('slowstart', 400);

sub conf {
    my ($host, $zone) = @_;
    return <<"EOC";
RLaaSRedis $host:$rp
RLaaSRedisTimeout 200ms
RLaaSCircuitBreaker off
<Location /w>
    RLaaSLimit 1000
    RLaaSWindow 1h
    RLaaSZone $zone
    RLaaSKeyBy header:X-User
    RLaaSFailOpen off
</Location>
EOC
}

# the private httpd's children's connections, killed
sub kill_conns {
    my ($h) = @_;
    my $parent = do { open my $f, '<', "$h->{dir}/httpd.pid" or die; local $/; <$f> + 0 };
    my %child = map { $_ => 1 } split ' ', `pgrep -P $parent`;
    my $killed = 0;
    for (split /\n/, redis_cmd('CLIENT', 'LIST')) {
        next unless /\bid=(\d+)\b.*\bname=mod_rlaas-(\d+)\b/ && $child{$2};
        redis_cmd('CLIENT', 'KILL', 'ID', $1);
        $killed++;
    }
    return $killed;
}

{
    my $h = private_httpd(conf('127.0.0.1', "warm$$"));
    is($h->get('/w/x', { 'X-User' => 'u1' }), 200,
        "the child's first request: its connection was opened before it (400 ms) and is ready");
    is($h->get('/w/x', { 'X-User' => 'u2' }), 200, '... and the next');

    # the connections killed: the next request opens one itself, inside
    # its 200 ms, and the relay's 400 ms are too long for it
    ok(kill_conns($h) >= 1, "the child's connections killed");
    sleep 0.2;
    is($h->get('/w/x', { 'X-User' => 'u3' }), 500,
        'a connection opened inside a request meets the slow start: undecided (500, RLaaSFailOpen off)');
    like($h->log, qr/RLAAS0021: Redis timeout error/, '... a time-out (RLAAS0021)');
}

{
    my $h = private_httpd(conf('localhost', "warmname$$"), shim => 1,
                          env => { RLAAS_SLOW_DNS_MS => 150 });
    is($h->get('/w/x', { 'X-User' => 'u1' }), 200,
        'a host name looked up slowly: the first request finds the connection opened at start, and keeps it');
    unlike($h->log, qr/RLAAS0021/, '... no undecided request');
}

$relay->mode('pass');
done_testing();
