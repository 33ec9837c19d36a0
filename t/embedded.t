# The embedded default and a newcomer's first configuration:
# - with no Redis target anywhere in the configuration, limits are decided
#   by the local engine (no Redis running, none named), the start-up log
#   says so once, with the version;
# - with a Redis target, Redis decides, as before: a dead one is a 500
#   (fail closed), never the local engine in its place;
# - keywords are case-insensitive, as httpd's own;
# - the version is in the metrics and in the server's version string.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my ($version) = do {
    open my $fh, '<', repo_top() . '/src/core/rlaas_version.h' or die $!;
    map { /^#define RLAAS_VERSION "([^"]+)"/ ? $1 : () } <$fh>;
};
ok($version, "the version: $version");

# ---- no Redis named: the local engine, with nothing listening anywhere
{
    my $h = private_httpd(<<'EOC');
<Location "/first">
    RLaaSLimit 3
    RLaaSWindow 1m
</Location>
<Location "/metrics">
    SetHandler rlaas-metrics
    RLaaSMetrics on
</Location>
EOC
    my @codes = map { scalar $h->get('/first') } 1 .. 5;
    is("@codes", '200 200 200 429 429', 'no Redis configured: 3 allowed, then 429 (local engine)');
    my $log = $h->log;
    my @lines = $log =~ /^.*RLAAS0003.*$/mg;
    is(scalar(@lines), 1, 'the start-up log says it once') or diag($log);
    like($lines[0] // '', qr/mod_rlaas \Q$version\E: limits are decided by the local engine/,
         '  which engine decides, and the version');
    unlike($log, qr/RLAAS00(?:21|40)/, 'no Redis error was logged');
    require HTTP::Tiny;
    my $m = HTTP::Tiny->new->get('http://127.0.0.1:' . $h->port . '/metrics');
    like($m->{content} // '', qr/^rlaas_build_info\{version="\Q$version\E"\} 1$/m,
         'rlaas_build_info carries the version');
    like($m->{content} // '', qr/^rlaas_decisions_total\{strategy="sliding_log",outcome="denied"\} 2$/m,
         'the sliding log is counted as sliding_log (the default strategy)');
}

# ---- a Redis named: Redis decides; a dead one fails closed (500)
{
    my $dead = free_port();
    my $h = private_httpd(<<"EOC");
RLaaSRedis 127.0.0.1:$dead
RLaaSRedisTimeout 200ms
<Location "/first">
    RLaaSLimit 3
</Location>
EOC
    my @codes = map { scalar $h->get('/first') } 1 .. 2;
    is("@codes", '500 500', 'a Redis named but down: 500 (RLaaSFailOpen off), not the local engine');
    unlike($h->log, qr/RLAAS0003.*local engine, in this/, 'no local-engine notice with a Redis named');
}

# ---- keywords are case-insensitive
config_accepted(<<'EOC', 'mixed-case keywords');
RLaaSBackend Local
<Location "/x">
    RLaaSLimit 5
    RLaaSStrategy Fixed
    RLaaSKeyBy IP User Header:X-Client API_KEY
    RLaaSHeaders Draft
    RLaaSFailOpen ON
    RLaaSDryRun Off
    RLaaSLease OFF
    RLaaSCost EXPR=1
</Location>
<Location "/y">
    RLaaSLimit 5
    RLaaSStrategy SLIDING-WINDOW-ALGO
</Location>
RLaaSPolicy p1 10 1m Strategy=GCRA Key="IP"
<Location "/z">
    RLaaSApply p1
    RLaaSApply NONE
</Location>
EOC
config_refused("<Location /x>\nRLaaSStrategy fixedd\n</Location>\n",
               qr/RLaaSStrategy: invalid value 'fixedd'.*sliding_log \(sliding-window-algo\)/,
               'a misspelt strategy, with the accepted names');

done_testing();
