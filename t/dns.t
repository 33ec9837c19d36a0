# Host names are resolved outside the request path: a private httpd whose
# DNS lookups take 800 ms (t/tools/shim.c) and whose Redis is a host name
# that leads nowhere answers every request within its budget (200 ms)
# plus a margin; a lookup per connection attempt would cost 800 ms each.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
plan skip_all => 'no C compiler for t/tools/shim.c'
    unless system(($ENV{CC} || 'cc') . ' --version >/dev/null 2>&1') == 0;

my $dead = free_port();
my $h = private_httpd(<<"EOC", shim => 1, env => { RLAAS_SLOW_DNS_MS => 800 });
RLaaSRedis localhost:$dead
RLaaSRedisTimeout 200ms
RLaaSCircuitBreaker off
<Location /d>
    RLaaSLimit 10
    RLaaSKeyBy header:X-User
    RLaaSZone dns
    RLaaSFailOpen on
</Location>
EOC
# the child looks the name up once when it starts: let it
sleep 2;
my (@t, $ok);
for my $i (1 .. 5) {
    my ($code, $secs) = $h->get('/d', { 'X-User' => "u$i" });
    push @t, sprintf('%d in %.2fs', $code, $secs);
    # at the client, a loaded machine's time included: a request that
    # waited for a lookup (800 ms) is still over
    $ok++ if $code == 200 && $secs < 0.75;
}
is($ok // 0, 5,
    'Redis down behind a slow host name: every request answered (fail open) in less than 0.75 s')
    or diag("@t");
like($h->log, qr/RLAAS0021: Redis connect error/, 'the connect error is logged');

done_testing();
