# The harness itself: httpd serves static files under the requested MPM,
# the private Redis answers, and the module is loaded.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

my $res = req('/ok.txt');
is($res->code, 200, 'static file /ok.txt is served');
is($res->content, "ok\n", 'static file has the expected body');
is(status_of($res), undef, 'no RLAAS_STATUS outside limited sections');

my $st = req('/server-status?auto');
is($st->code, 200, 'server-status answers');
my ($srv_mpm) = $st->content =~ /^ServerMPM:\s*(\S+)/m;
is($srv_mpm, mpm(), 'httpd runs the MPM asked for in RLAAS_TEST_MPM');

SKIP: {
    skip 'module not loaded (RLAAS_TEST_NO_MODULE)', 4 unless have_module();
    ok($ENV{RLAAS_TEST_REDIS_PORT}, 'RLAAS_TEST_REDIS_PORT is exported to tests');
    is(redis_cmd('PING'), 'PONG', 'the suite\'s Redis answers PING');
    ok(-S $ENV{RLAAS_TEST_REDIS_SOCKET}, 'the suite\'s Redis listens on a unix socket');
    my $r = req('/rl/basic/harness', h => { 'X-User' => uid('harness') });
    is($r->code, 200, 'a limited location answers 200 on its first request');
}

done_testing();
