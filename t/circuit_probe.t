# The circuit breaker's probe in a child that was idle since a fault (found
# by make soak): Redis failed, the child's circuit opened, Redis came back,
# and no request came for a while. The next burst's first request probes
# Redis; the burst's other requests, arriving while the probe runs, must
# wait briefly for its outcome and be decided by Redis, not refused (500
# with RLaaSFailOpen off) by a circuit that is only waiting for its probe.
#
# One child (a private httpd: ThreadsPerChild 25 under threaded MPMs), so
# every connection meets the same circuit. The burst is 15 requests written
# on 15 kept-alive connections in one loop, so they arrive together.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
# A prefork child serves one request at a time: nothing arrives while its
# probe runs.
plan skip_all => 'threaded MPMs only (a prefork child has one request at a time)' if mpm() eq 'prefork';
my $PORT = $ENV{RLAAS_TEST_REDIS_SPARE2_PORT};
plan skip_all => 'RLAAS_TEST_REDIS_SPARE2_PORT is not set (t/TEST.PL)' unless $PORT;
END { $? = 0 if defined $? && $? == -1 }

my $redis = spare_redis($PORT);
my $h = private_httpd(<<"EOC");
KeepAlive on
KeepAliveTimeout 60
MaxKeepAliveRequests 0
RLaaSRedis 127.0.0.1:$PORT
RLaaSRedisTimeout 1s
RLaaSCircuitBreaker 2 1s
<Location /p>
    RLaaSLimit 1000000
    RLaaSWindow 1h
    RLaaSZone probe
    RLaaSKeyBy header:X-User
    RLaaSFailOpen off
</Location>
EOC

my $N = 15;
my $req = "GET /p/x HTTP/1.1\r\nHost: localhost\r\nX-User: u1\r\n\r\n";

# one response on a kept-alive connection: its status (undef if closed)
sub response {
    my ($s) = @_;
    my $buf = '';
    my $sel = IO::Select->new($s);
    while ($buf !~ /\r\n\r\n/) {
        return undef unless $sel->can_read(10);
        my $n = sysread($s, $buf, 4096, length $buf);
        return undef unless $n;
    }
    my ($code) = $buf =~ m{^HTTP/1\.\d (\d+)};
    my ($len) = $buf =~ /\r\nContent-Length: (\d+)/i;
    my $body = length($buf) - (index($buf, "\r\n\r\n") + 4);
    while (defined $len && $body < $len) {
        return undef unless $sel->can_read(10);
        my $n = sysread($s, $buf, 4096, length $buf) or return undef;
        $body += $n;
    }
    return $code;
}

my @s = map {
    IO::Socket::INET->new(PeerAddr => "127.0.0.1:" . $h->port, Timeout => 5)
        or die "connect: $!"
} 1 .. $N;
for (@s) { syswrite($_, $req) }
is(join(' ', map { response($_) // 'closed' } @s), join(' ', ('200') x $N),
    "$N kept-alive connections: allowed while Redis answers");

# Redis stalled (CLIENT PAUSE) longer than two time-outs: two requests on
# connections of their own fail (500, which closes them) and open the
# circuit (2 failures).
my $pause_ms = 3000;
my $stall_end = time + $pause_ms / 1000;
$redis->pause_ms($pause_ms);
is($h->get('/p/x', { 'X-User' => 'u1' }), 500, 'Redis stalled, RLaaSFailOpen off: 500') for 1 .. 2;
wait_for(sub { $h->log =~ /RLAAS0040: circuit opened/ }, 5, 0.05);
like($h->log, qr/RLAAS0040: circuit opened/, 'the circuit opened (RLAAS0040)');

# Redis answers again; the child stays idle past the cool-down.
my $d = $stall_end + 1.5 - time;
sleep $d if $d > 0;
unlike($h->log, qr/RLAAS0042/, 'the circuit is still open: no request has probed yet');

for (@s) { syswrite($_, $req) }
my @codes = map { response($_) // 'closed' } @s;
is(join(' ', @codes), join(' ', ('200') x $N),
    "the first request after the idle probes, the $N - 1 arriving with it wait for the probe and are allowed")
    or diag($h->log);
like($h->log, qr/RLAAS0042: circuit closed/, 'the circuit closed (RLAAS0042)');

done_testing();
