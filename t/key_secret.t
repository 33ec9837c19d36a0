# RLaaSKeySecret: credentials are hashed in keys (and so in logs and the
# console) with HMAC-SHA-256 under a secret read from a file at start-up,
# cut to the 32 hex digits of the unkeyed SHA-1 it replaces. Four servers
# of their own on the suite's Redis: two reading one secret file count one
# API key under one key; one without a secret keeps the unkeyed key (and
# says so once at start-up); one with another secret gets another key. The
# console finds the keyed key from the raw API key; a graceful restart
# keeps the secret; the secret never reaches a log or `apachectl -t`'s
# output; a bad file, or the directive anywhere but the main server's
# configuration, fails `apachectl -t` naming the directive and the path.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(hmac_sha256_hex);
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $dir = tempdir('rlaas-secret-XXXXXX', TMPDIR => 1, CLEANUP => 1);
sub secret_file {
    my ($name, $bytes, $mode) = @_;
    my $f = catfile($dir, $name);
    open my $fh, '>', $f or die "$f: $!";
    binmode $fh;
    print $fh $bytes;
    close $fh;
    chmod $mode // 0600, $f;
    return $f;
}
sub printable { join '', map { ('a' .. 'z', 'A' .. 'Z', '0' .. '9')[int rand 62] } 1 .. $_[0] }
my %SECRET = (A => 'secretA-' . printable(32), B => 'secretB-' . printable(32));
my $fa = secret_file('a.secret', $SECRET{A});
my $fb = secret_file('b.secret', $SECRET{B}, 0644);    # others may read it

sub conf {
    my ($line) = @_;
    return <<"EOC";
LogLevel warn rlaas:trace8
RLaaSRedis 127.0.0.1:$ENV{RLAAS_TEST_REDIS_PORT}
$line
<Location /k>
    RLaaSLimit 1000
    RLaaSWindow 1h
    RLaaSZone ks
    RLaaSKeyBy api_key
</Location>
<Location /console>
    SetHandler rlaas-admin
    RLaaSConsole on
    Require all granted
</Location>
EOC
}
my %h = (
    A1 => private_httpd(conf("RLaaSKeySecret $fa")),
    A2 => private_httpd(conf("RLaaSKeySecret \"$fa\"")),
    none => private_httpd(conf('')),
    B => private_httpd(conf("RLaaSKeySecret $fb")),
);

my $K = 'k-' . printable(12);
# the key of API key $K: unkeyed SHA-1, or HMAC-SHA-256 under a secret
my %key = (
    none => rkey('ks', tseg('key', $K, 1)),
    A => rkey('ks', 'key=~' . substr(hmac_sha256_hex($K, $SECRET{A}), 0, 32)),
    B => rkey('ks', 'key=~' . substr(hmac_sha256_hex($K, $SECRET{B}), 0, 32)),
);
redis_cmd('DEL', values %key);
is(scalar(keys %{ { map { $_ => 1 } values %key } }), 3, 'three different keys for one API key');

sub get_k { $h{ $_[0] }->get('/k', { 'X-API-Key' => $K }) }
is(get_k('A1'), 200, 'server A1 (secret A): allowed');
is(redis_cmd('ZCARD', $key{A}), 1, 'counted under ~ and the first 32 hex digits of HMAC-SHA-256(A, key)');
ok(!redis_cmd('EXISTS', $key{none}), 'not under the unkeyed hash');
is(get_k('A2'), 200, 'server A2, reading the same file: allowed');
is(redis_cmd('ZCARD', $key{A}), 2, 'counted under the same key: two servers, one counter');
is(get_k('none'), 200, 'a server without a secret: allowed');
is(redis_cmd('ZCARD', $key{none}), 1, 'counted under the unkeyed SHA-1 key, as before');
is(get_k('B'), 200, 'a server with another secret: allowed');
is(redis_cmd('ZCARD', $key{B}), 1, 'counted under a key of its own');

# ---- start-up lines
sub count_in { my ($re, $text) = @_; scalar(() = $text =~ /$re/g) }
is(count_in(qr/RLAAS0160:/, $h{none}->log), 1,
    'without a secret, an API key source: the unkeyed notice, once at start-up');
is(count_in(qr/RLAAS0160:/, $h{A1}->log), 0, 'with one: no such notice');
is(count_in(qr/RLAAS0161: RLaaSKeySecret: hashed identities are keyed with the secret read from \Q$fa\E/,
    $h{A1}->log), 1, 'with one: the file named once (info)');
like($h{B}->log, qr/RLAAS0162: RLaaSKeySecret: \Q$fb\E can be read by other users/,
    'a file others can read: a warning');
unlike($h{A1}->log, qr/RLAAS0162/, 'a file of mode 0600: none');
{
    my $p = private_httpd("LogLevel warn rlaas:trace8\n"
        . "RLaaSRedis 127.0.0.1:$ENV{RLAAS_TEST_REDIS_PORT}\n"
        . "<Location /ip>\nRLaaSLimit 5\nRLaaSKeyBy ip header:X-User\n</Location>\n");
    is(count_in(qr/RLAAS0160:/, $p->log), 0, 'no credential source configured: no notice');
}

# ---- the console: reset by the raw API key finds the keyed key
{
    require HTTP::Tiny;
    require JSON::PP;
    my $port = $h{A1}->port;
    my $res = HTTP::Tiny->new(timeout => 10)->post("http://127.0.0.1:$port/console", {
        headers => { 'Content-Type' => 'application/x-www-form-urlencoded',
                     Accept => 'application/json', Origin => "http://127.0.0.1:$port" },
        content => "action=reset&zone=ks&id=$K" });
    my $r = eval { JSON::PP::decode_json($res->{content}) } || {};
    is($r->{changed}, 1, 'console reset by the raw API key, under secret A: one key deleted')
        or diag $res->{status} . ' ' . $res->{content};
    is_deeply($r->{keys}, [$key{A}], '  the keyed one');
    unlike($res->{content}, qr/\Q$K\E/, '  the answer does not repeat the API key');
}

# ---- a graceful restart reads the file again and keeps the key
{
    my $p = $h{A1};
    my $gen = sub { count_in(qr/RLAAS0161:/, $p->log) };
    my $before = $gen->();
    system($p->{httpd}, '-f', $p->{conf}, '-k', 'graceful') == 0 or die "graceful failed\n";
    wait_for(sub { $gen->() > $before }, 10);
    sleep 1;
    is(get_k('A1'), 200, 'after a graceful restart: allowed');
    is(redis_cmd('ZCARD', $key{A}), 1, 'under the same keyed key');
}

# ---- configuration errors
my $short = "\0\1\2" . printable(12);    # 15 bytes
my %f = (
    empty => secret_file('empty', ''),
    short => secret_file('short', $short),
    sixteen => secret_file('sixteen', printable(16)),
    long => secret_file('long', printable(4097)),
    binary => secret_file('binary', join('', map { chr int rand 256 } 1 .. 32)),
);
my @out;
for my $c (
    ["$dir/missing", qr/RLaaSKeySecret: the secret file '\Q$dir\E\/missing' cannot be read/, 'a missing file'],
    [$f{empty}, qr/RLaaSKeySecret: the secret file '\Q$f{empty}\E' is empty/, 'an empty file'],
    [$f{short}, qr/RLaaSKeySecret: the secret file '\Q$f{short}\E' holds 15 bytes: at least 16/, 'a file of 15 bytes'],
    [$f{long}, qr/RLaaSKeySecret: the secret file '\Q$f{long}\E' is longer than 4096 bytes/, 'a file of 4097 bytes'],
    [$dir, qr/RLaaSKeySecret: the secret file '\Q$dir\E' is not a regular file/, 'a directory'],
    ['/dev/urandom', qr/RLaaSKeySecret: the secret file '\/dev\/urandom' is not a regular file/, '/dev/urandom itself'],
) {
    my ($path, $re, $name) = @$c;
    my ($rc, $out) = httpd_config_test("RLaaSKeySecret \"$path\"\n");
    isnt($rc, 0, "refused: $name");
    like($out, $re, "  the message names the directive and the path") or diag $out;
    push @out, $out;
}
config_refused("<VirtualHost 127.0.0.1:1>\nRLaaSKeySecret $fa\n</VirtualHost>\n",
    qr/RLaaSKeySecret cannot occur within <VirtualHost> section/, 'RLaaSKeySecret in a virtual host');
config_refused("<Location /x>\nRLaaSKeySecret $fa\n</Location>\n",
    qr/RLaaSKeySecret not allowed in <Location> context/, 'RLaaSKeySecret in a section');
config_accepted("RLaaSKeySecret $f{sixteen}\n", 'a file of 16 bytes');
config_accepted("RLaaSKeySecret $f{binary}\n", '32 bytes of anything (head -c 32 /dev/urandom)');
{
    my $m = error_log_mark();
    is(hit('/authuser/keysecret/ok.txt'), 500, 'RLaaSKeySecret in a .htaccess (AllowOverride All): 500');
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /RLaaSKeySecret not allowed here/ }, 3);
    like($log, qr/RLaaSKeySecret not allowed here/, '  the log says why');
}

# ---- the secret is never written anywhere
{
    my @texts = ((map { $h{$_}->log } sort keys %h), @out);
    for my $s (sort keys %SECRET) {
        my $hex = unpack 'H*', $SECRET{$s};
        is(scalar(grep { index($_, $SECRET{$s}) >= 0 || index(lc $_, $hex) >= 0 } @texts), 0,
            "secret $s: in no error log (LogLevel rlaas:trace8) and no apachectl -t output");
    }
    my $short_tail = substr($short, 3);
    is(scalar(grep { index($_, $short_tail) >= 0 } @out), 0, 'nor the bytes of a file refused as too short');
}

redis_cmd('DEL', values %key);
done_testing();
