# A step of the wall clock changes nothing: the circuit breaker's
# cool-down and the log gates count on the monotonic clock. A private
# httpd runs with t/tools/shim.c preloaded, which moves its wall clock by
# the seconds the test writes into a file; the circuit is opened, the wall
# clock stepped back an hour, and the circuit must still close after its
# cool-down (1s), and the log must still speak.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
plan skip_all => 'no C compiler for t/tools/shim.c'
    unless system(($ENV{CC} || 'cc') . ' --version >/dev/null 2>&1') == 0;

my $shift = catfile(tempdir('rlaas-clock-XXXXXX', TMPDIR => 1, CLEANUP => 1), 'shift');
sub step { set_clock($shift, $_[0]) }
step(0);

my $rport = free_port();
my $h = private_httpd(<<"EOC", shim => 1, env => { RLAAS_CLOCK_SHIFT_FILE => $shift });
RLaaSRedis 127.0.0.1:$rport
RLaaSRedisTimeout 200ms
RLaaSCircuitBreaker 2 1s
<Location /c>
    RLaaSLimit 1000000
    RLaaSWindow 1h
    RLaaSStrategy fixed
    RLaaSKeyBy header:X-User
    RLaaSZone clock
</Location>
<Location /one>
    RLaaSLimit 1
    RLaaSWindow 1h
    RLaaSKeyBy header:X-User
    RLaaSZone clock-one
</Location>
EOC
my $redis;
END { $redis->stop if $redis }
sub get { scalar $h->get($_[0], { 'X-User' => $_[1] }) }

# ---- the circuit
is(get('/c', 'a'), 500, 'Redis down: 500');
is(get('/c', 'a'), 500, 'again: 500, and the circuit opens (2 failures)');
like($h->log, qr/RLAAS0040: circuit opened/, 'RLAAS0040');
step(-3600);    # the wall clock goes back an hour
require RLaaS::Redis;
$redis = RLaaS::Redis->start(port => $rport);
sleep 1.2;      # the cool-down, on the monotonic clock
my $code;
for (1 .. 20) { $code = get('/c', 'a'); last if $code == 200; sleep 0.1 }
is($code, 200, 'the wall clock an hour back: the circuit closes after its cool-down all the same');
like($h->log, qr/RLAAS0042: circuit closed/, 'RLAAS0042');

# ---- the log gate
step(0);
is(get('/one', 'b'), 200, 'limit 1: allowed');
is(get('/one', 'b'), 429, 'then denied, and logged');
my $n0 = () = $h->log =~ /RLAAS0020/g;
cmp_ok($n0, '>=', 1, 'RLAAS0020 logged');
step(-3600);
sleep 1.1;
is(get('/one', 'b'), 429, 'the wall clock an hour back: denied');
my $n1 = () = $h->log =~ /RLAAS0020/g;
is($n1, $n0 + 1, 'and logged: the log gate is not silent for the size of the step');
step(0);

done_testing();
