# A new child's first Redis connection is opened before the child takes
# requests (found by make soak: new prefork children behind TLS on a loaded
# machine spent their first request's time budget on the TLS handshake and
# answered 500). Here the handshake's slowness is a relay that holds each
# new connection's first reply 600 ms, against RLaaSRedisTimeout 300ms:
# the child's first request is decided; a connection opened inside a
# request (after CLIENT KILL) meets the same slowness and is not.
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
$relay->mode('slowstart', 600);
my $zone = 'warm' . $$;
my $h = private_httpd(<<"EOC");
RLaaSRedis 127.0.0.1:$rp
RLaaSRedisTimeout 300ms
RLaaSCircuitBreaker off
<Location /w>
    RLaaSLimit 1000
    RLaaSWindow 1h
    RLaaSZone $zone
    RLaaSKeyBy header:X-User
    RLaaSFailOpen off
</Location>
EOC

is($h->get('/w/x', { 'X-User' => 'u1' }), 200,
    "the child's first request: its connection was opened before it (600 ms) and is ready");
is($h->get('/w/x', { 'X-User' => 'u2' }), 200, '... and the next');

# this httpd's connections killed: the next request opens one itself,
# inside its 300 ms, and the relay's 600 ms are too long for it
my $parent = do { open my $f, '<', "$h->{dir}/httpd.pid" or die; local $/; <$f> + 0 };
my %child = map { $_ => 1 } split ' ', `pgrep -P $parent`;
ok(%child, "the private httpd's child: " . join(' ', sort keys %child));
my $killed = 0;
for (split /\n/, redis_cmd('CLIENT', 'LIST')) {
    next unless /\bid=(\d+)\b.*\bname=mod_rlaas-(\d+)\b/ && $child{$2};
    redis_cmd('CLIENT', 'KILL', 'ID', $1);
    $killed++;
}
ok($killed >= 1, "its connections killed ($killed)");
sleep 0.2;
is($h->get('/w/x', { 'X-User' => 'u3' }), 500,
    'a connection opened inside a request meets the slow start: undecided (500, RLaaSFailOpen off)');
like($h->log, qr/RLAAS0021: Redis \w+ error/, '... and says so (RLAAS0021)');

$relay->mode('pass');
is($h->get('/w/x', { 'X-User' => 'u4' }), 200, 'the relay fast again: decided');

done_testing();
