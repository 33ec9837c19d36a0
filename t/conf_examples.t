# Every example configuration in conf/ that is meant to be complete passes
# `apache2 -t` with the module built here: conf/demo.conf as it is (with
# the variables `make demo` sets), and the files meant to be included in
# an httpd.conf (httpd-example.conf, policies.conf, two-tenants.conf,
# fail2ban.conf) in a minimal server, with the module's path, document
# roots and port made local. conf/htaccess-example is a .htaccess, not a configuration.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not built' unless have_module();

my $confdir = catfile(repo_top(), 'conf');
my @files = sort glob("$confdir/*.conf");
ok(scalar(@files) >= 5, 'conf/ holds the examples: ' . join(' ', map { (split m{/})[-1] } @files));

chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
$libexec ||= '/usr/lib/apache2/modules';
my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';

sub slurp { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; <$fh> }

for my $file (@files) {
    my $name = (split m{/}, $file)[-1];
    my $text = slurp($file);
    my $dir = tempdir('rlaas-example-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my ($rc, $out);
    if ($text =~ /^ServerRoot/m) {
        # a whole configuration, with its own variables
        mkdir catfile($dir, 'htdocs');
        local %ENV = (%ENV, RLAAS_DEMO_DIR => $dir, RLAAS_DEMO_PORT => 1, RLAAS_DEMO_REDIS_PORT => 6379, RLAAS_DEMO_LOCAL_PORT => 2,
                      RLAAS_MODDIR => $libexec, RLAAS_MODULE => module_path());
        $out = `'$httpd' -t -f '$file' 2>&1`;
        $rc = $? >> 8;
    }
    else {
        my $module = module_path();
        (my $conf = $text) =~ s{^(\s*LoadModule\s+rlaas_module\s+)\S+}{$1$module}m;
        $conf =~ s{/srv/www/(\w+)}{mkdir catfile($dir, $1); "$dir/$1"}ge;
        $conf =~ s{<VirtualHost \*:80>}{<VirtualHost *:18081>}g;
        # what the example uses besides the module (authentication, logs)
        my $mods = join '', map { "LoadModule ${_}_module $libexec/mod_$_.so\n" }
            grep { -e "$libexec/mod_$_.so" } qw(auth_basic authn_core authn_file authz_user);
        ($rc, $out) = httpd_config_test($mods . $conf, dir => $dir, listen => 18081, load_module => 0);
    }
    is($rc, 0, "apache2 -t accepts conf/$name") or diag($out);
    like($out, qr/Syntax OK/, "conf/$name: Syntax OK");
    unlike($out, qr/already loaded|\bwarn/i, "conf/$name: without warnings") or diag($out);
}

# What a2enmod enables (the package's and make install's rlaas.load and
# rlaas.conf): the module loaded by rlaas.load, then rlaas.conf as it is and
# with every commented default switched on, so that each is a valid line.
{
    my ($load, $conf) = map { slurp(catfile($confdir, $_)) } qw(rlaas.load rlaas.conf);
    like($load, qr{^LoadModule rlaas_module /usr/lib/apache2/modules/mod_rlaas\.so$}m,
         'rlaas.load loads the module from where the package puts it');
    my $module = module_path();
    $load =~ s{^(LoadModule\s+rlaas_module\s+)\S+}{$1$module}m;
    (my $on = $conf) =~ s/^(\s*)#(RLaaS\w+ )/$1$2/mg;
    my @defaults = $conf =~ /^\s*#(RLaaS\w+) /mg;
    ok(@defaults >= 5, 'rlaas.conf shows the server-wide defaults: ' . join(' ', @defaults));
    for my $c ([as_shipped => $conf], [defaults_on => $on]) {
        my ($rc, $out) = httpd_config_test($load . $c->[1], load_module => 0);
        is($rc, 0, "apache2 -t accepts rlaas.load + rlaas.conf ($c->[0])") or diag($out);
    }
}

# docker/rlaas.conf, with the address compose gives it.
{
    local $ENV{RLAAS_REDIS} = 'redis:6379';
    local $ENV{APACHE_LOG_DIR} = tempdir('rlaas-docker-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $mods = join '', map { "LoadModule ${_}_module $libexec/mod_$_.so\n" }
        grep { -e "$libexec/mod_$_.so" } qw(log_config);
    my ($rc, $out) = httpd_config_test($mods . slurp(catfile(repo_top(), 'docker', 'rlaas.conf')));
    is($rc, 0, 'apache2 -t accepts docker/rlaas.conf') or diag($out);
}

done_testing();
