# RLaaSUserCase fold: where the user store compares names without case
# (LDAP, Active Directory, MySQL's default collations, SQLite NOCASE), the
# case variants of one name ("Alice", "aLIce") are one identity: they share
# one quota, sequentially and in a burst of 50, for a section's limit, an
# applied policy and an enforced one. Without it (exact, the default, right
# for htpasswd files, which are case-sensitive) each variant is a name of
# its own. Only the server and virtual hosts choose: a tenant's .htaccess
# cannot. Then a real case-insensitive store (SQLite, COLLATE NOCASE,
# through mod_authn_dbd) in a server of its own.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha1);
use MIME::Base64 qw(encode_base64);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my %PW = (dave => 'dave-pw', erin => 'erin-pw', frank => 'frank-pw', gina => 'gina-pw');
sub htpw { my ($n, $p) = @_; "$n:{SHA}" . encode_base64(sha1($p), '') . "\n" }
{
    my $f = catfile(t_logs(), 'rlaas-uf.htpasswd');
    open my $fh, '>', $f or die "$f: $!";
    print $fh map { htpw($_, $PW{$_}) } sort keys %PW;
    close $fh;
}
sub forget { my @k = map { keys_like(rkey($_, '*')) } @_; redis_cmd('DEL', @k) if @k }
my @ZONES = qw(uf-login uf-exact uf-burst uf-floor ufe-floor uf-nocase uf-nocase-exact);
forget(@ZONES);

sub summary { my %n; $n{$_}++ for @_; join ' ', map { "$n{$_}x$_" } sort keys %n }

# 20 spellings of NAME other than itself: every other ASCII case of its
# first four letters, then spaces around it
sub variants {
    my ($name) = @_;
    my @v;
    for my $m (1 .. 15) {
        my $s = $name;
        substr($s, $_, 1) = uc substr($s, $_, 1) for grep { $m & (1 << $_) } 0 .. 3;
        push @v, $s;
    }
    push @v, " $name", "$name ", '  ' . ucfirst($name), uc($name) . '  ', ' ' . uc($name) . ' ';
    return @v;
}
is(scalar(my @dv = variants('dave')), 20, 'twenty spellings');

# ------------------------------------------------------------ fold
{
    my @c = map { hit('/rl/uf/login', vhost => 'rlaas_fold', auth => [$_, 'guess']) } variants('dave');
    is(summary(@c), '5x401 15x429',
        'RLaaSUserCase fold: 20 spellings of dave, wrong passwords: five checked, then 429');
    is(hit('/rl/uf/login', vhost => 'rlaas_fold', auth => ['dave', $PW{dave}]), 429,
        'then dave\'s right password gets 429');
    is_deeply([keys_like(rkey('uf-login', '*'))], [rkey('uf-login', 'dave')],
        'one key, under the folded name');
    is(redis_cmd('ZCARD', rkey('uf-login', 'dave')), 5, 'holding the five attempts');
}
{
    my @specs = map {
        my $n = join '', map { rand() < 0.5 ? uc : $_ } split //, 'erin';
        [ '/rl/uf/burst', vhost => 'rlaas_fold', auth => [$n, "guess$_"] ]
    } 1 .. 50;
    my @c = parallel_requests(@specs);
    is(summary(@c), '5x401 45x429', 'a burst of 50 spellings of erin: five checked, 45 refused');
    is(hit('/rl/uf/burst', vhost => 'rlaas_fold', auth => ['erin', $PW{erin}]), 429,
        'then erin\'s right password gets 429');
}
{
    my @c = map { hit('/rl/uf/policy', vhost => 'rlaas_fold', auth => [$_, 'guess']) } variants('frank');
    is(summary(@c), '5x401 15x429', 'a policy keyed by the user (RLaaSApply): the same, five checked');
    # a virtual host's policy counts in the host's namespace
    is(scalar(my @k = keys_like(rkey('uf-floor@*', '*'))), 1, 'one key');
    like($k[0] // '', qr/:frank\z/, 'under the folded name');
}
{
    my @c = map { hit('/rl/ufe/login', vhost => 'rlaas_foldenf', auth => [$_, 'guess']) } variants('gina');
    is(summary(@c), '5x401 15x429', 'an enforced policy keyed by the user (RLaaSEnforce): five checked');
    is(hit('/rl/ufe/login', vhost => 'rlaas_foldenf', auth => ['gina', $PW{gina}]), 429,
        'then gina\'s right password gets 429');
}
{
    # bytes outside ASCII are kept as they are (documented)
    hit('/rl/uf/login', vhost => 'rlaas_fold', auth => ["\xc3\x84RIN", 'x']);
    hit('/rl/uf/login', vhost => 'rlaas_fold', auth => ["\xc3\xa4RIN", 'x']);
    ok(redis_cmd('EXISTS', rkey('uf-login', hseg("\xc3\x84rin"))) && redis_cmd('EXISTS', rkey('uf-login', hseg("\xc3\xa4rin"))),
        'fold: ASCII letters only; an upper and a lower A-umlaut stay two names');
}

# ------------------------------------------------------------ exact
{
    my @c = map { hit('/rl/uf/exact', auth => [$_, 'guess']) } variants('dave');
    is(summary(@c), '20x401', 'exact (the default): the 20 spellings are 20 names, 20 passwords checked');
    is(scalar(my @k = keys_like(rkey('uf-exact', '*'))), 20, 'twenty keys');
    is(hit('/rl/uf/exact', auth => ['dave', $PW{dave}]), 200, 'and dave himself has his own quota');
}

# ------------------------------------------------------------ who chooses
{
    my $m = error_log_mark();
    is(hit('/authuser/usercase/ok.txt', vhost => 'rlaas_foldenf'), 500,
        'a tenant\'s .htaccess setting RLaaSUserCase (AllowOverride All): 500');
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /RLaaSUserCase not allowed here/ }, 3);
    like($log, qr/RLaaSUserCase not allowed here/, '  the log says why');
}
config_refused("<Location /x>\nRLaaSUserCase exact\n</Location>\n", qr/RLaaSUserCase not allowed in <Location> context/,
    'RLaaSUserCase in a section');
config_refused("RLaaSUserCase lower\n", qr/RLaaSUserCase: invalid value 'lower': expected exact .* or fold/,
    'RLaaSUserCase with a bad value');
config_accepted("RLaaSUserCase FOLD\n<VirtualHost 127.0.0.1:1>\nRLaaSUserCase exact\n</VirtualHost>\n",
    'RLaaSUserCase in the server and a virtual host, keywords in any case');

# ------------------------------------------------------------ a NOCASE store
# SQLite through mod_authn_dbd: "ALICE" and "Alice" are alice there.
SKIP: {
    chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
    $libexec ||= '/usr/lib/apache2/modules';
    my $sqlite = `command -v sqlite3 2>/dev/null`;
    chomp $sqlite;
    skip 'sqlite3 or mod_authn_dbd is not installed', 9
        unless $sqlite && -e "$libexec/mod_authn_dbd.so" && -e "$libexec/mod_dbd.so";
    my $db = catfile(t_logs(), 'rlaas-uf-nocase.db');
    unlink $db;
    my $pw = '{SHA}' . encode_base64(sha1('alice-pw'), '');
    system($sqlite, $db, "CREATE TABLE users (name TEXT COLLATE NOCASE PRIMARY KEY, pw TEXT);"
        . " INSERT INTO users VALUES ('alice', '$pw');") == 0 or die "sqlite3 failed\n";
    my $port2 = free_port();
    my $login = sub {
        my ($zone) = @_;
        return <<"EOC";
    <Location /login>
        AuthType Basic
        AuthName "rlaas nocase"
        AuthBasicProvider dbd
        AuthDBDUserPWQuery "SELECT pw FROM users WHERE name = %s"
        Require valid-user
        RLaaSLimit 5
        RLaaSWindow 1h
        RLaaSZone $zone
        RLaaSKeyBy user
    </Location>
EOC
    };
    my $h = private_httpd(<<"EOC" . $login->('uf-nocase') . <<"EOC2" . $login->('uf-nocase-exact') . "</VirtualHost>\n");
LoadModule authn_core_module $libexec/mod_authn_core.so
LoadModule authz_user_module $libexec/mod_authz_user.so
LoadModule auth_basic_module $libexec/mod_auth_basic.so
LoadModule dbd_module $libexec/mod_dbd.so
LoadModule authn_dbd_module $libexec/mod_authn_dbd.so
RLaaSRedis 127.0.0.1:$ENV{RLAAS_TEST_REDIS_PORT}
RLaaSUserCase fold
DBDriver sqlite3
DBDParams "$db"
EOC
Listen 127.0.0.1:$port2
<VirtualHost 127.0.0.1:$port2>
    RLaaSUserCase exact
EOC2
    my $get = sub {
        my ($port, $u, $p) = @_;
        require HTTP::Tiny;
        return HTTP::Tiny->new(timeout => 10)->get("http://127.0.0.1:$port/login",
            { headers => { Authorization => basic_auth($u, $p) } })->{status};
    };
    is($get->($h->port, 'ALICE', 'alice-pw'), 200, 'NOCASE store, fold: ALICE logs in as alice');
    is($get->($h->port, 'Alice', 'alice-pw'), 200, '... and so does Alice');
    is_deeply([keys_like(rkey('uf-nocase', '*'))], [rkey('uf-nocase', 'alice')], 'both counted under alice');
    is(redis_cmd('ZCARD', rkey('uf-nocase', 'alice')), 2,
        'once each: the name authentication confirmed is the one decided before it');
    my @c = map { $get->($h->port, $_, 'guess') } qw(aLiCe ALIce alICE);
    is("@c", '401 401 401', 'three wrong passwords under other spellings: checked');
    is($get->($h->port, 'alIce', 'alice-pw'), 429, 'the sixth attempt, whatever its spelling, gets 429');

    is($get->($port2, 'ALICE', 'alice-pw'), 200, 'NOCASE store, exact: ALICE logs in');
    is($get->($port2, 'Alice', 'alice-pw'), 200, '... and Alice');
    is(scalar(my @k = keys_like(rkey('uf-nocase-exact', '*'))), 2,
        'counted under two names: each spelling would have a quota of its own');
}

forget(@ZONES);
done_testing();
