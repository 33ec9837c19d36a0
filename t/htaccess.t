# .htaccess: RLaaS per-directory directives where AllowOverride Limit (or
# AllowOverrideList) permits them, ignored under AllowOverride None, an error
# (500) where the override class is not allowed, for a bad value, and always
# for the server-only directives. A zone or limit set in a .htaccess counts
# in the namespace of its tenant (here the main server's, ServerName
# localhost): <zone>@localhost~t.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

{
    my $u = uid('hta');
    my @c = codes(3, '/htaccess/limit/ok.txt', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'AllowOverride Limit: RLaaSLimit 2 from .htaccess applies');
    my $p = redis_cmd('PTTL', ukey('hta@localhost~t', $u));
    ok($p > 0 && $p <= 60_000, ".htaccess RLaaSWindow 30s and RLaaSZone apply, namespaced by the tenant (PTTL $p)");
    ok(!redis_cmd('EXISTS', ukey('hta', $u)), 'nothing under the bare zone');
}
{
    my $u = uid('hta-sub');
    my @c = codes(5, '/htaccess/limit/sub/ok.txt', h => { 'X-User' => $u });
    is("@c", '200 200 200 200 429', 'nested .htaccess overrides the limit (4)');
    my $p = redis_cmd('PTTL', ukey('hta@localhost~t', $u));
    ok($p > 0 && $p <= 60_000, "nested .htaccess inherits window, zone and sources from the parent .htaccess (PTTL $p)");
}
{
    my $u = uid('hta-none');
    my @r = map { req('/htaccess/none/ok.txt', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 200', 'AllowOverride None: the .htaccess is ignored');
    is(scalar(grep { defined status_of($_) } @r), 0, 'AllowOverride None: not limited at all');
}
{
    my $u = uid('hta-list');
    my @c = codes(3, '/htaccess/list/ok.txt', h => { 'X-User' => $u });
    is("@c", '200 200 429', 'AllowOverrideList RLaaSLimit RLaaSZone RLaaSKeyBy: the .htaccess applies');
    ok(redis_cmd('EXISTS', ukey('hta-list@localhost~t', $u)), 'AllowOverrideList: zone from the .htaccess');
}

for my $c (
    ['fileinfo', qr/RLaaSLimit not allowed here/, 'RLaaSLimit under AllowOverride FileInfo (no Limit class)'],
    ['redis',    qr/RLaaSRedis not allowed here/, 'RLaaSRedis (server only) even under AllowOverride All'],
    ['prefix',   qr/RLaaSKeyPrefix not allowed here/, 'RLaaSKeyPrefix (server only) even under AllowOverride All'],
    ['consoleon', qr/RLaaSConsole not allowed here/, 'RLaaSConsole (the server\'s own configuration only) even under AllowOverride All'],
    ['badvalue', qr/RLaaSLimit.*'?0'?/, 'a bad value (RLaaSLimit 0)'],
) {
    my ($dir, $re, $name) = @$c;
    my $m = error_log_mark();
    is(hit("/htaccess/$dir/ok.txt"), 500, ".htaccess with $name: 500 for that directory");
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ $re }, 3);
    like($log, $re, ".htaccess with $name: the error log says why");
}
is(hit('/ok.txt'), 200, 'other directories are not affected by a broken .htaccess');

done_testing();
