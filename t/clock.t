# A step of the wall clock changes nothing: the circuit breaker's
# cool-down and the log gates count on the monotonic clock. An httpd of
# this test's own runs with t/tools/clockshift.c preloaded, which moves its
# wall clock by the seconds the test writes into a file; the circuit is
# opened, the wall clock stepped back an hour, and the circuit must still
# close after its cool-down (1s), and the log must still speak.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use IO::Socket::INET ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
my $cc = $ENV{CC} || 'cc';
plan skip_all => "no C compiler ($cc) for the clock shim"
    unless system("$cc --version >/dev/null 2>&1") == 0;

my $dir = tempdir('rlaas-clock-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $shim = catfile($dir, 'clockshift.so');
system($cc, '-shared', '-fPIC', '-o', $shim, "$FindBin::Bin/tools/clockshift.c", '-ldl') == 0
    or BAIL_OUT("cannot build the clock shim");
my $shift = catfile($dir, 'shift');
sub step { open my $fh, '>', $shift or die; print $fh "$_[0]\n"; close $fh }
step(0);

sub free_port {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1) or die;
    my $p = $s->sockport;
    close $s;
    return $p;
}
my ($hport, $rport) = (free_port(), free_port());
chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
$libexec ||= '/usr/lib/apache2/modules';
my $module = module_path();
my $m = mpm();
my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
my $conf = catfile($dir, 'httpd.conf');
{ open my $ok, '>', catfile($dir, 'ok.txt') or die; print $ok "ok\n"; close $ok }
my $elog = catfile($dir, 'error_log');
open my $fh, '>', $conf or die;
print $fh <<"EOC";
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:$hport
PidFile "$dir/httpd.pid"
ErrorLog "$elog"
LogLevel warn rlaas:info
DefaultRunTimeDir "$dir"
LoadModule mpm_${m}_module $libexec/mod_mpm_$m.so
LoadModule authz_core_module $libexec/mod_authz_core.so
LoadModule alias_module $libexec/mod_alias.so
LoadModule rlaas_module $module
StartServers 1
ServerLimit 1
MaxRequestWorkers @{[ $m eq 'prefork' ? 1 : 25 ]}
@{[ $m eq 'prefork' ? '' : "ThreadsPerChild 25\n" ]}
DocumentRoot "$dir"
AliasMatch "^/" "$dir/ok.txt"
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
close $fh;

local $ENV{LD_PRELOAD} = $shim;
local $ENV{RLAAS_CLOCK_SHIFT_FILE} = $shift;
is(system($httpd, '-f', $conf, '-k', 'start'), 0, 'a private httpd with the clock shim');
delete $ENV{LD_PRELOAD};
my $up = 0;
for (1 .. 100) { last if ($up = IO::Socket::INET->new("127.0.0.1:$hport")); sleep 0.05 }
ok($up, "it listens on $hport");
my $redis;
END {
    system($httpd, '-f', $conf, '-k', 'stop') if $conf && -e "$dir/httpd.pid";
    $redis->stop if $redis;
}

require HTTP::Tiny;
my $ua = HTTP::Tiny->new(timeout => 10);
sub get { my ($p, $u) = @_; $ua->get("http://127.0.0.1:$hport$p", { headers => { 'X-User' => $u } })->{status} }
sub elog { open my $f, '<', $elog or return ''; local $/; <$f> }

# ---- the circuit
is(get('/c', 'a'), 500, 'Redis down: 500');
is(get('/c', 'a'), 500, 'again: 500, and the circuit opens (2 failures)');
like(elog(), qr/RLAAS0040: circuit opened/, 'RLAAS0040');
step(-3600);    # the wall clock goes back an hour
require RLaaS::Redis;
$redis = RLaaS::Redis->start(port => $rport);
sleep 1.2;      # the cool-down, on the monotonic clock
my $code;
for (1 .. 20) { $code = get('/c', 'a'); last if $code == 200; sleep 0.1 }
is($code, 200, 'the wall clock an hour back: the circuit closes after its cool-down all the same');
like(elog(), qr/RLAAS0042: circuit closed/, 'RLAAS0042');

# ---- the log gate
step(0);
is(get('/one', 'b'), 200, 'limit 1: allowed');
is(get('/one', 'b'), 429, 'then denied, and logged');
my $n0 = () = elog() =~ /RLAAS0020/g;
cmp_ok($n0, '>=', 1, 'RLAAS0020 logged');
step(-3600);
sleep 1.1;
is(get('/one', 'b'), 429, 'the wall clock an hour back: denied');
my $n1 = () = elog() =~ /RLAAS0020/g;
is($n1, $n0 + 1, 'and logged: the log gate is not silent for the size of the step');
step(0);

done_testing();
