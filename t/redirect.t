# A stricter limit at the target of an internal redirect applies there:
# mod_rewrite in a .htaccess (the README's shared-hosting pattern),
# DirectoryIndex and MultiViews (fast redirects), ErrorDocument 404. Each
# limit is counted once per client request, at the first request record
# that reaches it; the ErrorDocument of our own 429 is not decided again;
# subrequests (a listing, server-side includes) never count.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

# Requests counted in a zone: the entries of its sliding logs, whatever the
# key layout around the zone's name. Every test here keys by the client
# address and owns its zones, which it empties first.
sub zone_count {
    my ($zone) = @_;
    my $n = 0;
    for my $k (keys_like("*$zone*")) {
        $n += redis_cmd('ZCARD', $k) if redis_cmd('TYPE', $k) eq 'zset';
    }
    return $n;
}

sub forget { my @k = map { keys_like("*$_*") } @_; redis_cmd('DEL', @k) if @k }

sub codes_of { join ' ', map { $_->code } @_ }

# ------------------------------------------------ mod_rewrite in .htaccess
{
    forget(qw(trust-rw-site trust-rw-contact));
    my $id = uid('rw');
    my @r = map { req('/http-trust/rewrite/kontakt', h => { 'X-Test-Id' => "$id-$_" }) } 1 .. 6;
    is(codes_of(@r), '200 200 429 429 429 429',
        'RewriteRule ^kontakt$ contact.php: <Files contact.php> limit 2 holds');
    is($r[1]->content, "contact-page\n", 'an allowed request gets the rewritten target');
    is($r[2]->content, 'Rate limit exceeded', 'the 429 carries nothing of the target');
    is(status_of($r[2]), 'denied', 'RLAAS_STATUS=denied reaches the final request (Header always)');
    is(zone_count('trust-rw-contact'), 2, 'the contact limit counted each allowed request once');
    is(zone_count('trust-rw-site'), 6, 'the site limit counted each client request once');
    my @l = log_lines_with('rlaas_status_log', "$id-3 ", 1);
    like($l[0] // '', qr/ 429 denied /, 'CustomLog: the redirected request logs 429 denied');
}

# ------------------------------------------------ DirectoryIndex
{
    forget(qw(trust-di-site trust-di-index));
    my @r = map { req('/http-trust/dirindex/') } 1 .. 4;
    is(codes_of(@r), '200 200 429 429', 'DirectoryIndex: <Files index.html> limit 2 holds');
    is($r[0]->content, "index-page\n", 'an allowed request gets the index file');
    is($r[2]->content, 'Rate limit exceeded', 'the 429 carries nothing of the index file');
    is(zone_count('trust-di-index'), 2, 'the index limit counted each allowed request once');
    is(zone_count('trust-di-site'), 4, 'the directory limit counted each client request once');
}

# ------------------------------------------------ MultiViews
{
    forget(qw(trust-mv-site trust-mv-page));
    my @r = map { req('/http-trust/multiviews/page') } 1 .. 4;
    is(codes_of(@r), '200 200 429 429', 'MultiViews: <Files page.html> limit 2 holds for /page');
    is($r[0]->content, "negotiated-page\n", 'an allowed request gets the negotiated file');
    is($r[2]->content, 'Rate limit exceeded', 'the 429 carries nothing of it');
    is(zone_count('trust-mv-page'), 2, 'the page limit counted each allowed request once');
    is(zone_count('trust-mv-site'), 4, 'the directory limit counted each client request once');
}

# ------------------------------------------------ ErrorDocument 404
{
    forget(qw(trust-ed-site trust-ed-page));
    my @r = map { req("/http-trust/errdoc/missing-$_") } 1 .. 4;
    is(codes_of(@r[0, 1]), '404 404', 'ErrorDocument 404: the first two get the error page');
    is($r[0]->content, "notfound-page\n", 'which is the limited page');
    is(scalar(grep { $_->content =~ /notfound-page/ } @r[2, 3]), 0,
        'over its limit (2), the error page is not served any more');
    is($r[3]->code, 404, 'the client gets httpd\'s own 404 instead');
    like($r[3]->content, qr/<title>404 Not Found.*Additionally/s,
        'its plain 404 page, which says an error met the ErrorDocument');
    like($r[3]->header('Retry-After') // '', qr/^[1-9]\d*$/, 'and the response says when to retry');
    is(zone_count('trust-ed-page'), 2, 'the error page limit counted each allowed request once');
    is(zone_count('trust-ed-site'), 4, 'the directory limit counted each client request once');
}

# ------------------------------------------------ ErrorDocument 429
{
    forget(qw(trust-e429-site trust-e429-busy));
    my @r = map { req('/http-trust/errdoc429/page.txt') } 1 .. 3;
    is(codes_of(@r), '200 429 429', 'a limit of 1 with an ErrorDocument 429 of its own');
    is($r[2]->content, "busy-page\n", 'the 429 is the ErrorDocument, served each time');
    is(zone_count('trust-e429-busy'), 0,
        'the ErrorDocument of our own 429 is not decided again (its own limit 1 untouched)');
    is(zone_count('trust-e429-site'), 1, 'the page limit counted its one allowed request');
}

# ------------------------------------------------ subrequests
{
    forget(qw(trust-ai-dir trust-ai-file));
    my @r = map { req('/http-trust/autoindex/') } 1 .. 4;
    is(codes_of(@r), '200 200 200 429', 'a listing is one request: limit 3, the 4th is refused');
    is(scalar(() = $r[2]->content =~ /href="[a-e]\.txt"/g), 5,
        'each listing shows all five files (their look-ups are never refused)');
    is(zone_count('trust-ai-dir'), 3, 'the listing counted once per client request');
    is(zone_count('trust-ai-file'), 0, 'the files\' own limit is not reached by the listing\'s look-ups');
}
{
    forget(qw(trust-ssi-page trust-ssi-part));
    my @r = map { req('/http-trust/ssi/page.shtml') } 1 .. 4;
    is(codes_of(@r), '200 200 200 429', 'a page with three includes is one request: limit 3');
    is($r[2]->content, "ssi:part\n|part\n|part\n\n", 'every include is served each time');
    is(zone_count('trust-ssi-page'), 3, 'the page counted once per client request');
    is(zone_count('trust-ssi-part'), 0, 'the included file\'s own limit is not reached by includes');
}

# ------------------------------------------------ HTTP/2 streams
SKIP: {
    skip 'mod_http2 does not serve HTTP/2 under prefork', 3 if mpm() eq 'prefork';
    my $curl = `sh -c 'command -v curl' 2>/dev/null`;
    chomp $curl;
    skip 'no curl', 3 unless $curl && `'$curl' --version` =~ /\bHTTP2\b/;
    forget('trust-h2');
    my $cfg = Apache::Test::config();
    my $hp = $cfg->{vhosts}{rlaas_trust_h2}{hostport};
    my @urls = map { "http://$hp/rl/trust-h2/$_" } 1 .. 4;
    my @out = map { scalar `'$curl' -s -o /dev/null --http2-prior-knowledge -w '%{http_version} %{http_code}' $_` } @urls;
    is(join(' ', map { (split ' ')[0] } @out), '2 2 2 2', 'four requests over HTTP/2');
    is(join(' ', map { (split ' ')[1] } @out), '200 200 200 429', 'each stream is one client request: limit 3');
    is(zone_count('trust-h2'), 3, 'each stream counted once');
}

done_testing();
