# Shared hosting: two virtual hosts with their own RLaaSKeyPrefix never share
# counters, though they use the same zone and identities; a tenant's
# .htaccess (AllowOverride Limit) sets its own limits, under its vhost's
# prefix, but none of the operator's directives (Redis server, credentials,
# database, prefix, time-out, pool, circuit breaker): that directory answers
# 500 and the error log names the directive. conf/two-tenants.conf passes
# `apache2 -t`.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

# ---------------------------------------------------------------- prefixes
{
    my $u = uid('tenant');
    my %a = (vhost => 'rlaas_tenant_a', h => { 'X-User' => $u });
    my %b = (vhost => 'rlaas_tenant_b', h => { 'X-User' => $u });
    is(join(' ', codes(3, '/hd/t/x', %a)), '200 200 429', 'tenant A (prefix rlaas:t:alice:), limit 2: exhausted');
    is(join(' ', codes(3, '/hd/t/x', %b)), '200 200 429',
        'tenant B, same zone and identity: its own counter (2 allowed), not A\'s');
    is(redis_cmd('ZCARD', "rlaas:t:alice:site:" . tseg('h.x-user', $u)), 2, "tenant A's key: rlaas:t:alice:site:<id>");
    is(redis_cmd('ZCARD', "rlaas:t:bob:site:" . tseg('h.x-user', $u)), 2, "tenant B's key: rlaas:t:bob:site:<id>");
    ok(!redis_cmd('EXISTS', ukey('site', $u)), 'nothing under the default prefix');
    is(hit('/hd/t/x', %a), 429, 'tenant A is still limited');
}

# ---------------------------------------------------------------- .htaccess
{
    my $u = uid('tenant-hta');
    my @c = codes(3, '/tenants/limit/ok.txt', vhost => 'rlaas_tenant_b', h => { 'X-User' => $u });
    is("@c", '200 200 429', "a tenant's .htaccess (AllowOverride Limit) sets its own limit");
    is(redis_cmd('ZCARD', "rlaas:t:bob:tenant-limit\@localhost~t:" . tseg('h.x-user', $u)), 2,
        "the tenant's zone is under its vhost's prefix, in the tenant's namespace "
        . "(rlaas:t:bob:tenant-limit\@localhost~t:<id>)");
}
for my $c (
    ['redis',    'RLaaSRedis'],
    ['password', 'RLaaSRedisPassword'],
    ['username', 'RLaaSRedisUsername'],
    ['database', 'RLaaSRedisDatabase'],
    ['prefix',   'RLaaSKeyPrefix'],
    ['timeout',  'RLaaSRedisTimeout'],
    ['poolmax',  'RLaaSRedisPoolMax'],
    ['circuit',  'RLaaSCircuitBreaker'],
) {
    my ($dir, $directive) = @$c;
    my $m = error_log_mark();
    is(hit("/tenants/$dir/ok.txt", vhost => 'rlaas_tenant_b', h => { 'X-User' => uid('t') }), 500,
        "$directive in a tenant's .htaccess: 500 for that directory");
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /\Q$directive\E not allowed here/ }, 3);
    like($log, qr/\Q$directive\E not allowed here/, "$directive in .htaccess: the error log names the directive");
    if ($dir eq 'password') {
        unlike(error_log_since(0), qr/tenant-secret-pw-3f9a1c/, 'the refused password is not logged');
    }
}
is(hit('/tenants/limit/ok.txt', vhost => 'rlaas_tenant_b', h => { 'X-User' => uid('t') }), 200,
    'the tenant\'s other directory still works');

# ---------------------------------------------------------------- two-tenants.conf
{
    my $file = catfile(repo_top(), 'conf', 'two-tenants.conf');
    open my $fh, '<', $file or die "$file: $!";
    my $text = do { local $/; <$fh> };
    my $dir = tempdir('rlaas-tenants-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    mkdir catfile($dir, $_) for qw(alice bob);
    my $module = module_path();
    (my $conf = $text) =~ s{^(\s*LoadModule\s+rlaas_module\s+)\S+}{$1$module}m;
    $conf =~ s{/srv/www/(alice|bob)}{$dir/$1}g;
    $conf =~ s{<VirtualHost \*:80>}{<VirtualHost *:18080>}g;
    my ($rc, $res) = httpd_config_test($conf, dir => $dir, listen => 18080, load_module => 0);
    is($rc, 0, 'apache2 -t accepts conf/two-tenants.conf (module, paths and port made local)') or diag($res);
    like($res, qr/Syntax OK/, 'Syntax OK');
    unlike($res, qr/already loaded|warn/i, 'without warnings');
}

done_testing();
