# The limit holds whatever the authorization set-up: "Satisfy Any" with
# Order/Deny plus Basic authentication, "Require any", and mod_rlaas loaded
# after mod_access_compat (the suite's own server, as Debian orders them)
# or before it (a second server this test starts). A 429 goes through
# httpd's error path: exactly "Rate limit exceeded" as text/plain, nothing
# of the resource, Retry-After and the RateLimit fields kept, no
# "100 Continue".
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET ();
use Time::HiRes qw(sleep time);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $BOB = ['bob', 'bob-pw'];

# The attacker's sequence: limit 2, then three more tries. Returns the
# responses.
sub attack {
    my ($path, %o) = @_;
    return map { req($path, %o) } 1 .. 5;
}

sub clean_429 {
    my ($res, $content, $name) = @_;
    is($res->code, 429, "$name: 429");
    is($res->content, 'Rate limit exceeded', "$name: the body is exactly 'Rate limit exceeded'");
    unlike($res->content, qr/\Q$content\E/, "$name: nothing of the resource");
    like($res->header('Content-Type') // '', qr{^text/plain\b}, "$name: text/plain");
    like($res->header('Retry-After') // '', qr/^[1-9]\d*$/, "$name: Retry-After");
    like($res->header('RateLimit') // '', qr/;r=0;/, "$name: RateLimit r=0");
    is(status_of($res), 'denied', "$name: RLAAS_STATUS=denied (Header always)");
}

# Satisfy Any, Deny from all, Basic auth: the authenticated user over the
# limit gets a clean 429. $base: URL prefix; %o: request options.
sub satisfy_any_cases {
    my ($label, $hp) = @_;
    my $url = sub { $hp ? "http://$hp$_[0]" : $_[0] };
    my $u = uid('sat');
    my @r = attack($url->('/http-trust/satisfy/page.txt'), auth => $BOB, h => { 'X-User' => $u });
    is(join(' ', map { $_->code } @r), '200 200 429 429 429',
        "$label: Satisfy Any + Deny from all, authenticated: 2 served, then 429");
    is($r[0]->content, "trust-satisfy-content\n", "$label: an allowed request gets the file");
    clean_429($r[2], 'trust-satisfy-content', "$label, Satisfy Any, authenticated");

    my $anon = req($url->('/http-trust/satisfy/page.txt'), h => { 'X-User' => $u });
    ok($anon->code == 401 || $anon->code == 429,
        "$label: over the limit without credentials: refused (" . $anon->code . ')');
    unlike($anon->content, qr/trust-satisfy-content/, "$label: and nothing of the resource");

    my $u2 = uid('satip');
    my @ip = attack($url->('/http-trust/satisfy-ip/page.txt'), h => { 'X-User' => $u2 });
    is(join(' ', map { $_->code } @ip), '200 200 429 429 429',
        "$label: Satisfy Any, allowed by address without credentials: 2 served, then 429");
    clean_429($ip[2], 'trust-satisfy-ip-content', "$label, Satisfy Any, by address");
}

# ------------------------------------------------ the suite's server:
# mod_access_compat is loaded before mod_rlaas (Debian's order)
satisfy_any_cases('access_compat first');

# ------------------------------------------------ Require any
{
    my $u = uid('rany');
    my @r = attack('/http-trust/requireany/page.txt', auth => $BOB, h => { 'X-User' => $u });
    is(join(' ', map { $_->code } @r), '200 200 429 429 429',
        'RequireAny (ip | valid-user), authenticated: 2 served, then 429');
    clean_429($r[2], 'trust-requireany-content', 'RequireAny, authenticated');

    my $u2 = uid('ranyip');
    my @ip = attack('/http-trust/requireany-ip/page.txt', h => { 'X-User' => $u2 });
    is(join(' ', map { $_->code } @ip), '200 200 429 429 429',
        'RequireAny, granted by address: 2 served, then 429');
    clean_429($ip[2], 'trust-requireany-ip-content', 'RequireAny, by address');
    my $auth = req('/http-trust/requireany-ip/page.txt', auth => $BOB, h => { 'X-User' => $u2 });
    clean_429($auth, 'trust-requireany-ip-content', 'RequireAny, by address and authenticated');
}

# ------------------------------------------------ HEAD and 100-continue
{
    my $u = uid('head');
    my @r = map { req('/http-trust/satisfy/page.txt', method => 'HEAD', auth => $BOB,
                      h => { 'X-User' => $u }) } 1 .. 3;
    is(join(' ', map { $_->code } @r), '200 200 429', 'HEAD: 2 allowed, then 429');
    is($r[2]->content, '', 'HEAD: the 429 has no body');
    like($r[2]->header('Content-Type') // '', qr{^text/plain\b}, 'HEAD: the 429 is text/plain');
}
{
    my $u = uid('expect');
    req('/rl/basic/expect', h => { 'X-User' => $u }) for 1 .. 3;
    my $cfg = Apache::Test::config();
    my $s = IO::Socket::INET->new(PeerAddr => $cfg->{vars}{servername},
                                  PeerPort => $cfg->{vars}{port}, Timeout => 10)
        or die "connect: $!";
    print $s "POST /rl/basic/expect HTTP/1.1\r\nHost: localhost\r\nX-User: $u\r\n"
        . "Expect: 100-continue\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\n";
    my $got = '';
    my $end = time + 5;
    while (time < $end && $got !~ /\r\n\r\n/) {
        my $n = sysread $s, $got, 4096, length $got;
        last unless $n;
    }
    like($got, qr{^HTTP/1\.1 429 }, 'Expect: 100-continue over the limit: the answer is the 429');
    unlike($got, qr{^HTTP/1\.1 100}m, 'and no "100 Continue" was sent');
    close $s;
}

# ------------------------------------------------ mod_rlaas loaded first
# A second httpd, its own minimal configuration: the modules this test
# needs, mod_rlaas loaded before mod_access_compat, the same Redis.
{
    my $top = repo_top();
    my $srv = private_httpd(<<"EOC",
RLaaSRedis 127.0.0.1:$ENV{RLAAS_TEST_REDIS_PORT}
RLaaSRedisTimeout 2s
Header always set X-RLaaS-Status "%{RLAAS_STATUS}e" env=RLAAS_STATUS
<Directory "$top/t/htdocs/http-trust/satisfy">
    AuthType Basic
    AuthName "rlaas trust"
    AuthBasicProvider file
    AuthUserFile "$top/t/conf/rlaas.htpasswd"
    Require valid-user
    Order deny,allow
    Deny from all
    Satisfy Any
    RLaaSLimit 2
    RLaaSWindow 1h
    RLaaSZone trust-sat
    RLaaSKeyBy header:X-User
</Directory>
<Directory "$top/t/htdocs/http-trust/satisfy-ip">
    AuthType Basic
    AuthName "rlaas trust"
    AuthBasicProvider file
    AuthUserFile "$top/t/conf/rlaas.htpasswd"
    Require valid-user
    Order deny,allow
    Deny from all
    Allow from 127.0.0.1
    Satisfy Any
    RLaaSLimit 2
    RLaaSWindow 1h
    RLaaSZone trust-sat-ip
    RLaaSKeyBy header:X-User
</Directory>
EOC
        rlaas_first => 1, docroot => "$top/t/htdocs", loglevel => 'info',
        modules => [qw(authn_core authn_file auth_basic authz_user access_compat headers)]);
    satisfy_any_cases('mod_rlaas first', $srv->hp);
    forget_connections();
    $srv->stop;
}

done_testing();
