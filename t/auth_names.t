# Login throttling counts each attempt under exactly the name the
# authenticator checks, however the Authorization header is written:
# mod_auth_digest takes the LAST "username" parameter (names compared
# without case; a parameter without '=' has the empty value),
# mod_auth_basic the name before the first ':' of what its base64 decoder
# makes of the first field (httpd joins repeated fields with ", "). The
# attacker's requests with duplicated parameters or headers are limited
# like plain wrong attempts, sequentially and in a burst of 50, from one
# address or many (X-Forwarded-For through a trusted proxy). Probes then
# compare, header by header, the key the module counted with the name the
# authenticator logged. The empty name is a name: keyed apart from the
# client address.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::MD5 qw(md5_hex);
use Digest::SHA qw(sha1);
use MIME::Base64 qw(encode_base64);
use IO::Socket::INET ();
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $VH = 'rlaas_authn';
my $REALM = 'rlaas an';
my %PW = (dave => 'dave-pw', erin => 'erin-pw', frank => 'frank-pw',
          gina => 'gina-pw', '' => 'empty-pw');

# the users, in both stores (an empty name is one htpasswd accepts)
sub spew { my ($f, $t) = @_; open my $fh, '>', $f or die "$f: $!"; print $fh $t; close $fh }
spew(catfile(t_logs(), 'rlaas-an.htdigest'),
    join '', map { "$_:$REALM:" . md5_hex("$_:$REALM:$PW{$_}") . "\n" } grep { length } sort keys %PW);
spew(catfile(t_logs(), 'rlaas-an.htpasswd'),
    join '', map { "$_:{SHA}" . encode_base64(sha1($PW{$_}), '') . "\n" } sort keys %PW);

sub forget { my @k = map { keys_like(rkey($_, '*')) } @_; redis_cmd('DEL', @k) if @k }
my @ZONES = qw(an-digest an-basic an-probe-digest an-probe-basic);
forget(@ZONES);

my $addr = 0;
sub xff { $addr++; sprintf '198.51.%d.%d', 100 + int($addr / 250), 1 + $addr % 250 }

# ------------------------------------------------------------ raw requests
# A request with exactly these header lines (repeated fields stay
# repeated, which LWP and HTTP::Tiny don't promise); its status.
sub raw_get {
    my ($path, @h) = @_;
    my $hp = Apache::TestRLaaS::hostport($VH);
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 30) or die "connect $hp: $!";
    my $req = "GET $path HTTP/1.1\r\nHost: $hp\r\nConnection: close\r\n";
    while (my ($k, $v) = splice @h, 0, 2) { $req .= "$k: $v\r\n" }
    print $s "$req\r\n";
    my $line = <$s> // '';
    close $s;
    return $line =~ m{^HTTP/1\.\d (\d{3})} ? $1 : "none($line)";
}

# burst(HEADERS, ...): one request of $PATH per set of header lines, in
# forked clients released at once (the kit's parallel_requests; a field
# given as an arrayref is sent once per value); the statuses.
sub burst {
    my ($path, @sets) = @_;
    return parallel_requests(map { [$path, vhost => $VH, h => $_] } @sets);
}

sub summary { my %n; $n{$_}++ for @_; join ' ', map { "$n{$_}x$_" } sort keys %n }

# ------------------------------------------------------------ Digest
# A nonce of this server (AuthDigestNcCheck is off: it can be reused).
my $NONCE;
{
    my $res = req('/rl/an/probe-digest', vhost => $VH, h => { 'X-Forwarded-For' => xff() });
    ($NONCE) = ($res->header('WWW-Authenticate') // '') =~ /nonce="([^"]+)"/;
    ok($NONCE, 'mod_auth_digest gives a nonce') or BAIL_OUT('no Digest challenge');
}

# Every parameter but username, with the response for USER's PASSWORD.
sub params {
    my ($path, $user, $pw) = @_;
    my $ha1 = md5_hex("$user:$REALM:$pw");
    my $ha2 = md5_hex("GET:$path");
    my $resp = md5_hex("$ha1:$NONCE:00000001:cafe:auth:$ha2");
    return qq{realm="$REALM", nonce="$NONCE", uri="$path", response="$resp", }
         . qq{qop=auth, nc=00000001, cnonce="cafe"};
}
sub digest_ok { my ($path, $u) = @_; 'Digest ' . qq{username="$u", } . params($path, $u, $PW{$u}) }
# the attack: a fresh name first, the victim's last, a guessed password
sub digest_dup {
    my ($path, $victim) = @_;
    return 'Digest ' . qq{username="} . uid('mallory') . qq{", }
         . params($path, $victim, 'guess-' . int(rand 1e9)) . qq{, username="$victim"};
}

{
    my $p = '/rl/an/digest';
    is(raw_get($p, Authorization => digest_ok($p, 'gina'), 'X-Forwarded-For' => xff()), 200,
        'Digest: the right password is accepted (the test computes responses right)');

    my @c = map { raw_get($p, Authorization => digest_dup($p, 'dave')) } 1 .. 30;
    is(summary(@c), '5x401 25x429',
        'Digest, username given twice (a new name first, dave last), 30 wrong passwords in a row: '
      . 'five checked, then 429 (as plain wrong attempts)');
    is(raw_get($p, Authorization => digest_ok($p, 'dave')), 429,
        'then dave\'s right password gets 429 too');
    is(redis_cmd('ZCARD', rkey('an-digest', 'dave')), 5, 'the five counted under dave');

    @c = burst($p, map { { Authorization => digest_dup($p, 'erin'), 'X-Forwarded-For' => xff() } } 1 .. 50);
    is(summary(@c), '5x401 45x429',
        'a burst of 50 from 50 addresses, username twice (erin last): five checked, 45 refused');
    is(raw_get($p, Authorization => digest_ok($p, 'erin'), 'X-Forwarded-For' => xff()), 429,
        'then erin\'s right password gets 429');
}

# ------------------------------------------------------------ Basic
{
    my $p = '/rl/an/basic';
    is(raw_get($p, Authorization => basic_auth('gina', $PW{gina}), 'X-Forwarded-For' => xff()), 200,
        'Basic: the right password is accepted');

    # the empty name is a name (htpasswd accepts it): attempts from 30
    # addresses count under it, not under each address
    my @c = map { raw_get($p, Authorization => basic_auth('', 'guess' . $_), 'X-Forwarded-For' => xff()) } 1 .. 30;
    is(summary(@c), '5x401 25x429',
        'Basic, the empty name, 30 wrong passwords from 30 addresses: five checked, then 429');
    is(raw_get($p, Authorization => basic_auth('', $PW{''}), 'X-Forwarded-For' => xff()), 429,
        'then the empty name\'s right password gets 429');
    is(raw_get($p, 'X-Forwarded-For' => '203.0.113.77'), 401,
        'a client sending no name at all is not counted with it (its own address)');

    # two Authorization fields: httpd joins them, both of us read the first
    @c = map {
        raw_get($p, Authorization => basic_auth('dave', "guess$_"),
                    Authorization => basic_auth(uid('mallory'), 'x'))
    } 1 .. 30;
    is(summary(@c), '5x401 25x429',
        'Basic, two Authorization fields (dave first), 30 in a row: five checked, then 429');
    is(raw_get($p, Authorization => basic_auth('dave', $PW{dave})), 429, 'then dave\'s right password gets 429');
    @c = burst($p, map {
        { Authorization => [basic_auth('frank', "guess$_"), basic_auth(uid('mallory'), 'x')],
          'X-Forwarded-For' => xff() }
    } 1 .. 50);
    is(summary(@c), '5x401 45x429', 'the same as a burst of 50 from 50 addresses (frank first): five checked');
    is(raw_get($p, Authorization => basic_auth('frank', $PW{frank})), 429, 'then frank\'s right password gets 429');
}

# ------------------------------------------------------------ probes
# One request; the keys of ZONE whose count changed (key => delta) and the
# error log it caused.
sub zone_counts {
    my ($zone) = @_;
    return { map { $_ => redis_cmd('ZCARD', $_) } keys_like(rkey($zone, '*')) };
}
sub probe {
    my ($zone, $path, @h) = @_;
    my $before = zone_counts($zone);
    my $m = error_log_mark();
    my $code = raw_get($path, 'X-Forwarded-For' => '192.0.2.200', @h);
    my $after = zone_counts($zone);
    my %d = map { $_ => $after->{$_} - ($before->{$_} // 0) } grep { $after->{$_} != ($before->{$_} // 0) } keys %$after;
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /\Q$path\E/ }, 3);
    return ($code, \%d, $log);
}

# the key the module writes for a name the authenticator checked
sub user_key { my ($zone, $name) = @_; rkey($zone, length $name ? seg($name) : hseg("\0")) }

# Digest: [header after "Digest ", the name mod_auth_digest checks, what]
my $pd = '/rl/an/probe-digest';
my $P = params($pd, 'nobody', 'x');
my @digest = (
    sub { my ($a, $b) = @_; [qq{username="$a", $P, username="$b"}, $b, 'username twice: the last'] },
    sub { my ($a, $b) = @_; [qq{UserName="$a", $P, USERNAME="$b"}, $b, 'the parameter\'s name in any case'] },
    sub { my ($a) = @_; [qq{username=$a, $P}, $a, 'a token, not a quoted string'] },
    sub { my ($a) = @_; [qq{username = "$a" , $P}, $a, 'white space around "="'] },
    sub { my ($a, $b) = @_; [qq{username="$a" $b, $P}, $a, 'what follows a value up to "," is skipped'] },
    sub { my ($a, $b) = @_; [qq{x="$a" username="$b", username="$a", $P}, $a,
                             'a parameter after another on one comma-separated item is skipped'] },
    sub { my ($a) = @_; [qq{username="A\\z$a", $P}, "Az$a", 'a backslash escapes the next byte'] },
    sub { my ($a) = @_; [qq{username="$a, username=x", $P}, "$a, username=x", 'a comma inside quotes'] },
    sub { my ($a) = @_; [qq{$P, x="$a", username}, '', 'username without "=": the empty name'] },
    sub { my ($a) = @_; [qq{username="$a", $P, username=""}, '', 'an empty name, last'] },
);
for my $mk (@digest) {
    my ($a, $b) = (uid('pa'), uid('pb'));
    my ($hdr, $want, $what) = @{ $mk->($a, $b) };
    my ($code, $d, $log) = probe('an-probe-digest', $pd, Authorization => "Digest $hdr");
    is($code, 401, "Digest probe, $what: 401");
    my ($checked) = $log =~ /AH01790: user `(.*?)' in realm `\Q$REALM\E' not found/;
    is($checked, $want, "  mod_auth_digest checked '$want'");
    is_deeply($d, { user_key('an-probe-digest', $checked // "\x01") => 1 },
        '  the module counted that name, once, and nothing else')
        or diag explain $d;
}
# two fields joined: "Digest a..., Digest b...": the second's first
# parameter is skipped with the item "Digest username=..."
{
    my ($a, $b) = (uid('pa'), uid('pb'));
    my ($code, $d, $log) = probe('an-probe-digest', $pd,
        Authorization => qq{Digest username="$a", $P}, Authorization => qq{Digest username="$b", $P});
    my ($checked) = $log =~ /AH01790: user `(.*?)' in realm/;
    is($checked, $a, 'Digest probe, two Authorization fields: mod_auth_digest checked the first name');
    is_deeply($d, { user_key('an-probe-digest', $a) => 1 }, '  and so did the module') or diag explain $d;
}
# username without "=", first or last: the empty name (httpd 2.4.27 and
# later; older ones read memory they never wrote, CVE-2017-9788); every
# such request counts under the one empty name
{
    my $empty = user_key('an-probe-digest', '');
    for my $h (qq{Digest username, $P, x="} . uid('pz') . '"', qq{Digest username="} . uid('pz') . qq{", $P, username}) {
        my ($code, $d, $log) = probe('an-probe-digest', $pd, Authorization => $h);
        my ($checked) = $log =~ /AH01790: user `(.*?)' in realm/;
        is($checked, '', 'Digest probe, username without a value: mod_auth_digest checked the empty name');
        is_deeply($d, { $empty => 1 }, '  the module counted the empty name') or diag explain $d;
    }
}

# Basic: [field values, the name mod_auth_basic checks, what]
my $pb = '/rl/an/probe-basic';
sub b64 { encode_base64($_[0], '') }
my @basic = (
    sub { my ($a, $b) = @_; [[basic_auth($a, 'x'), basic_auth($b, 'y')], $a, 'two Authorization fields: the first'] },
    sub { my ($a) = @_; [['Basic   ' . b64("$a:x")], $a, 'spaces after the scheme'] },
    sub { my ($a) = @_; [['bAsIc ' . b64("$a:x")], $a, 'the scheme in any case'] },
    sub { my ($a) = @_; [['Basic ' . b64("$a:x") . '!!junk'], $a, 'bytes after the base64 are ignored'] },
    sub { my ($a) = @_; [['Basic ' . substr(b64("$a:xy"), 0, -1)], $a, 'base64 cut short'] },
    sub { my ($a, $b) = @_; [['Basic ' . b64("$a:$b:pw")], $a, 'a name holding ":": what precedes the first'] },
    sub { my ($a, $b) = @_; [['Basic ' . b64("$a\0$b:pw")], $a, 'a NUL after decoding ends the name'] },
    sub { my ($a) = @_; [['Basic ' . b64($a)], $a, 'no colon: all of it'] },
    sub { [['Basic ' . b64(':pw')], '', 'the empty name'] },
    sub { [['Basic'], '', 'the scheme alone: the empty name'] },
);
for my $mk (@basic) {
    my ($a, $b) = (uid('pa'), uid('pb'));
    my ($fields, $want, $what) = @{ $mk->($a, $b) };
    my ($code, $d, $log) = probe('an-probe-basic', $pb, map { (Authorization => $_) } @$fields);
    is($code, 401, "Basic probe, $what: 401");
    # AH01618 "user X not found", or AH01617 "user X: authentication
    # failure" for the empty name, which the file holds
    my ($checked) = $log =~ /AH0161[78]: user (.*?)(?: not found: |: authentication failure for ")\Q$pb\E/;
    is($checked, $want, "  mod_auth_basic checked '$want'");
    is_deeply($d, { user_key('an-probe-basic', $checked // "\x01") => 1 },
        '  the module counted that name, once, and nothing else')
        or diag explain $d;
}
# a tab after the scheme: mod_auth_basic sees another scheme and checks
# no name; the module counts the client address
{
    my ($code, $d, $log) = probe('an-probe-basic', $pb, Authorization => "Basic\t" . b64(uid('pt') . ':x'));
    is($code, 401, 'Basic probe, a tab after the scheme: 401');
    like($log, qr/wrong authentication scheme/, '  mod_auth_basic checked no name');
    is_deeply($d, { rkey('an-probe-basic', fallback('192.0.2.200')) => 1 },
        '  the module counted the client address') or diag explain $d;
}

forget(@ZONES);
done_testing();
