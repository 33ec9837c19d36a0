# RLaaSRedisTLS: the module talks TLS to Redis' tls-port (hiredis 0.14 has
# none: OpenSSL carries the bytes), checks the server's certificate against
# the CA and the name, and presents its own; every failure to agree is
# "Redis unreachable" for the section's policy, with a log line saying why.
# The operator's console reaches the same Redis over TLS: its round trip
# (RLaaS::Console: reset, credit, the bans listed, unban) passes there as
# on plain Redis, and a virtual host sharing that Redis (rlaas_tls_name)
# does not list rlaas_tls's bans.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);
use RLaaS::Console qw(console_roundtrip);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
plan skip_all => 'no Redis with TLS (t/TEST.PL could not start one)'
    unless $ENV{RLAAS_TEST_TLS_PORT};

require RLaaS::Redis;
my $r = RLaaS::Redis->attach(port => $ENV{RLAAS_TEST_TLS_PLAIN_PORT});
sub get { my ($vh, $path, $u) = @_; req($path, vhost => $vh, h => { 'X-User' => $u }) }
sub st { my $res = shift; $res->code . ' ' . (status_of($res) // '-') }

for my $vh (qw(rlaas_tls rlaas_tls_name)) {
    my $u = uid('tls');
    my @c = map { st(get($vh, '/tls/x', $u)) } 1 .. 4;
    is("@c", '200 allowed 200 allowed 200 allowed 429 denied', "$vh: limit 3 over TLS, then 429");
    my $zone = $vh eq 'rlaas_tls' ? 'tls' : 'tls-name';
    my $n = 0;
    my $c = 0;
    do { my $x = $r->cmd('SCAN', $c, 'MATCH', prefix() . "$zone:*", 'COUNT', 1000);
         ($c, my $l) = @$x; $n += @$l } while $c;
    cmp_ok($n, '>=', 1, "$vh: the counters are in the Redis behind the TLS port");
}
# the console, behind TLS
console_roundtrip(vhost => 'rlaas_tls', backend => 'redis', label => 'TLS',
                  limit => '/tls/adm/lim', zone => 'tls-adm',
                  ban => '/tls/adm/ban', banzone => 'tls-admban',
                  others => ['rlaas_tls_name']);

my $clients = $r->cmd('CLIENT', 'LIST');
like($clients, qr/name=mod_rlaas-\d+/, 'the module is connected (CLIENT LIST)');

next_mono_second();    # a fresh second of the log gate
my $m = log_mark('rlaas_tls_error_log');
is(st(get('rlaas_tls_wrongca', '/tls/x', uid('bad'))), '500 error', 'a CA that did not sign the server: 500 (fail closed)');
is(st(get('rlaas_tls_wrongca', '/tls/open/x', uid('bad'))), '200 fail_open', 'fail open: allowed, as with Redis down');
my $log = log_since('rlaas_tls_error_log', $m);
like($log, qr/RLAAS0021: Redis connect error: TLS: certificate verify failed/, 'the log says the certificate did not verify');

next_mono_second();
$m = log_mark('rlaas_tls_error_log');
is(st(get('rlaas_tls_wrongname', '/tls/x', uid('bad'))), '500 error', 'a name the certificate does not carry: 500');
like(log_since('rlaas_tls_error_log', $m), qr/RLAAS0021: Redis connect error: TLS: certificate verify failed: .*hostname/i,
    'the log says the host name did not match');

next_mono_second();
$m = log_mark('rlaas_tls_error_log');
is(st(get('rlaas_tls_nocert', '/tls/x', uid('bad'))), '500 error', 'no client certificate where Redis asks for one: 500');
like(log_since('rlaas_tls_error_log', $m), qr/RLAAS0021: Redis (connect|io) error: /, 'logged');

next_mono_second();
$m = log_mark('rlaas_tls_error_log');
is(st(get('rlaas_tls_plain', '/tls/x', uid('bad'))), '500 error', 'plain TCP to a TLS port: 500 within the budget');

# start-up: files are checked, Redis is not
my ($rc, $out) = httpd_config_test("RLaaSRedisTLSCA /nonexistent/ca.crt\n");
isnt($rc, 0, 'a CA file that does not exist stops apachectl -t');
like($out, qr/RLaaSRedisTLSCA: invalid value '\/nonexistent\/ca.crt': expected a readable file/, 'naming the directive and the value');
($rc, $out) = httpd_config_test("RLaaSRedisTLS maybe\n");
isnt($rc, 0, 'RLaaSRedisTLS takes on or off');

done_testing();
