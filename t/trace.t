# TRACE (issue 24, point 16). httpd answers TRACE in map_to_storage, before
# any access checker: an identity another method exhausted got 200. Now it
# is decided there, with the configuration a GET of the same URL gets (the
# host's, <Directory> and a tenant's .htaccess, <Location>): 429 once the
# key is exhausted, whatever Satisfy says, on Redis and on the local
# engine; a TRACE under the limit gets httpd's normal answer and counts; a
# host with TraceEnable off still answers 405.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub trace {
    my ($path, $u, %o) = @_;
    return req({ path => $path, method => 'TRACE', vhost => $o{vhost},
                 headers => { ($u ? ('X-User' => $u) : ()), 'X-Probe' => 'trace-echo' } });
}

sub gets { my ($path, $u, $n, %o) = @_; join ' ', codes($n, $path, h => { 'X-User' => $u }, %o) }

# under the limit: httpd's own answer, and it counts
{
    my $u = uid('tr-under');
    my $res = trace('/scope/trace/loc/x', $u);
    is($res->code, 200, 'TRACE under the limit: 200');
    like($res->header('Content-Type') // '', qr{^message/http}, '... httpd\'s TRACE answer (message/http)');
    like($res->content, qr{^TRACE /scope/trace/loc/x HTTP/1\.1}m, '... echoing the request');
    like($res->content, qr{X-Probe: trace-echo}, '... with its header fields');
    like($res->header('RateLimit') // '', qr/"scope-trace";r=1;/, '... decided: one of 2 left');
    is(gets('/scope/trace/loc/x', $u, 2), '200 429', 'the TRACE counted: one GET left, then 429');
}

# exhausted by GET: TRACE is refused (on today's main: 200 and the echo)
{
    my $u = uid('tr-loc');
    is(gets('/scope/trace/loc/x', $u, 3), '200 200 429', '<Location> limit 2: exhausted by GET');
    my $res = trace('/scope/trace/loc/x', $u);
    is($res->code, 429, 'TRACE of the exhausted identity: 429');
    ok(($res->header('Retry-After') // 0) >= 1, '... with Retry-After');
    unlike($res->content, qr/trace-echo|^TRACE /m, '... and no echo of the request');
    is(trace('/scope/trace/loc/x', uid('tr-other'))->code, 200, 'another identity\'s TRACE: 200');
}

# a tenant's .htaccess limit: the directory walk is done for TRACE too
{
    my $u = uid('tr-hta');
    is(gets('/scope/trace-hta/ok.txt', $u, 3), '200 200 429', '.htaccess limit 2: exhausted by GET');
    is(trace('/scope/trace-hta/ok.txt', $u)->code, 429, 'TRACE under the .htaccess limit: 429');
    is(trace('/scope/trace-hta/ok.txt', uid('tr-hta2'))->code, 200, '... another identity: 200');
}

# Satisfy Any: the address lets GET in without authentication; a refusal
# is still a refusal for TRACE (no handler follows to deliver it)
{
    my $u = uid('tr-any');
    is(gets('/scope/trace/any/x', $u, 3), '200 200 429', 'Satisfy Any: exhausted by GET');
    is(trace('/scope/trace/any/x', $u)->code, 429, 'Satisfy Any: TRACE 429');
}

# by user name (the README's login recipe): failed attempts spend the
# name's quota, and a TRACE claiming that name is refused (no password is
# ever checked for TRACE: it counts under the name it claims)
{
    my $name = uid('tr-user');
    is(join(' ', codes(3, '/scope/trace/user/x', auth => [$name, 'wrong'])), '401 401 429',
        'by user: two failed attempts, then 429');
    my $res = req({ path => '/scope/trace/user/x', method => 'TRACE', auth => [$name, 'wrong-again'] });
    is($res->code, 429, 'by user: a TRACE claiming the exhausted name: 429');
    $res = req({ path => '/scope/trace/user/x', method => 'TRACE', auth => [uid('tr-user2'), 'x'] });
    is($res->code, 200, 'by user: a TRACE claiming another name: 200');
}

# a burst: 50 TRACE at once against a limit of 2, on Redis and on the
# local engine
for my $vhost (undef, 'rlaas_scope_lo') {
    my $u = uid('tr-burst');
    my $path = $vhost ? '/scope/trace/lo/x' : '/scope/trace/loc/x';
    my @c = parallel_requests(map { { path => $path, method => 'TRACE', vhost => $vhost,
                                      headers => { 'X-User' => $u } } } 1 .. 50);
    is(count_by(@c), '200 x2 429 x48', ($vhost ? 'local engine' : 'Redis') . ': 50 TRACE at once, limit 2: exactly 2 answered');
}

# the local engine
{
    my $u = uid('tr-lo');
    is(gets('/scope/trace/lo/x', $u, 3, vhost => 'rlaas_scope_lo'), '200 200 429', 'local engine: exhausted by GET');
    is(trace('/scope/trace/lo/x', $u, vhost => 'rlaas_scope_lo')->code, 429, 'local engine: TRACE 429');
}

# unlimited, and TraceEnable off: as httpd answers them
{
    my $res = trace('/ok.txt');
    is($res->code, 200, 'TRACE where no limit applies: 200');
    is($res->header('RateLimit'), undef, '... undecided');
    is(trace('/scope/trace/loc/x', uid('tr-off'), vhost => 'rlaas_scope_notrace')->code, 405,
        'TraceEnable off: 405, as before');
}

done_testing();
