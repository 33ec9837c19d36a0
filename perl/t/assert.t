# The kit's assertions against canned responses: what passes, and what a
# failure says (the messages are the point of the kit, so they are tested
# word for word).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::Builder::Tester tests => 21;
use Test::More;
use HTTP::Response;
use HTTP::Request;
use Apache::TestRLaaS qw(:all);

# a request as code: answers the next of a list of canned responses
sub canned {
    my @r = map {
        my ($code, %h) = @$_;
        my $res = HTTP::Response->new($code, HTTP::Status::status_message($code), [%h], "x");
        $res->request(HTTP::Request->new(GET => 'http://localhost/p'));
        $res;
    } @_;
    my $i = 0;
    return sub { $r[$i < @r ? $i++ : $#r] };
}
require HTTP::Status;

my @rl = (RateLimit => '"login";r=0;t=300', 'RateLimit-Policy' => '"login";q=5;w=300');

# ---------------------------------------------------------------- allows_then_429
test_out('ok 1 - two, then 429');
my $res = allows_then_429(canned([200], [401], [429, 'Retry-After' => 30, @rl]), 2, 'two, then 429');
test_test('allows_then_429 passes: 401 is an allowed answer, the third is 429 with Retry-After');
is($res && $res->code, 429, 'it returns the 429 response');

test_out('not ok 1 - five, then 429');
test_fail(+6);
test_diag('the request (code): expected 5 allowed, then 429 with Retry-After',
          'request 4 was refused (429, Retry-After: 300) after 3 allowed',
          'its fields: RateLimit: "login";r=0;t=300; RateLimit-Policy: "login";q=5;w=300',
          "(a counter left by an earlier test? reset_counters() starts afresh)",
          'statuses: 200 200 200 429');
allows_then_429(canned([200], [200], [200], [429, 'Retry-After' => 300, @rl]), 5, 'five, then 429');
test_test('refused too early: which request, its fields, every status');

test_out('not ok 1 - three, then 429');
test_fail(+5);
test_diag('the request (code): expected 3 allowed, then 429 with Retry-After',
          'request 4 was answered 200 OK, not 429: more than 3 allowed',
          'its fields: no RateLimit fields (the path is not limited here, or RLaaSHeaders is off)',
          'statuses: 200 200 200 200');
allows_then_429(canned([200]), 3, 'three, then 429');
test_test('never refused: says so, and that no limit seems to apply');

test_out('not ok 1 - one, then 429');
test_fail(+4);
test_diag('the request (code): expected 1 allowed, then 429 with Retry-After',
          'request 2 was refused with 429 but carries no Retry-After field',
          'statuses: 200 429');
allows_then_429(canned([200], [429, @rl]), 1, 'one, then 429');
test_test('a 429 without Retry-After fails');

test_out('not ok 1 - zero');
test_fail(+5);
test_diag('the request (code): expected 0 allowed, then 429 with Retry-After',
          "request 1 was refused with 429, but its Retry-After '0' is not a whole "
          . 'number of seconds of at least 1',
          'statuses: 429');
allows_then_429(canned([429, 'Retry-After' => 0]), 0, 'zero');
test_test('Retry-After must be at least 1 second');

test_out('not ok 1 - errors');
test_fail(+5);
test_diag('the request (code): expected 4 allowed, then 429 with Retry-After',
          'request 2 was answered 500 Internal Server Error: the limiter could not decide, '
          . 'or the site failed (see the error_log)',
          'statuses: 200 500');
allows_then_429(canned([200], [500]), 4, 'errors');
test_test('a server error is not "allowed"');

# ---------------------------------------------------------------- remaining_is
test_out('ok 1 - 4 left');
remaining_is(canned([200, RateLimit => '"api";r=4;t=10']), 4, '4 left');
test_test('remaining_is reads r= of the draft field');

test_out('ok 1 - legacy');
remaining_is(canned([200, 'X-RateLimit-Remaining' => 7, 'X-RateLimit-Limit' => 9]), 7, 'legacy');
test_test('remaining_is reads X-RateLimit-Remaining');

test_out('not ok 1 - 9 left');
test_fail(+3);
test_diag('the request (code): expected 9 remaining',
          'it says 8 remaining (RateLimit: "api";r=8;t=6; RateLimit-Policy: "api";q=10;w=60)');
remaining_is(canned([200, RateLimit => '"api";r=8;t=6', 'RateLimit-Policy' => '"api";q=10;w=60']), 9, '9 left');
test_test('a different count: both numbers and the fields');

test_out('not ok 1 - counted');
test_fail(+4);
test_diag('the request (code): expected 2 remaining',
          'the response (200 OK) has no RateLimit field nor X-RateLimit-Remaining: the path '
          . 'is not limited here, or RLaaSHeaders is off');
remaining_is(canned([200]), 2, 'counted');
test_test('no fields at all: says what that means');

{
    my $r = canned([429, RateLimit => '"x";r=0;t=5'])->();
    test_out('ok 1 - a response as it is');
    remaining_is($r, 0, 'a response as it is');
    test_test('remaining_is takes a response too');
    test_out('not ok 1 - named');
    test_fail(+2);
    test_diag('GET /p: expected 1 remaining', 'it says 0 remaining (RateLimit: "x";r=0;t=5)');
    remaining_is($r, 1, 'named');
    test_test('a response is named by its request');
}

# ---------------------------------------------------------------- is_exempt
test_out('ok 1 - free');
is_exempt(canned([200]), 30, 'free');
test_test('is_exempt passes: no 429, no fields');

test_out('not ok 1 - free');
test_fail(+4);
test_diag('the request (code): expected exempt (20 requests, no 429, no RateLimit fields)',
          'request 3 was refused (429, Retry-After: 9)', 'its fields: no RateLimit fields',
          'statuses: 200 200 429');
is_exempt(canned([200], [200], [429, 'Retry-After' => 9]), 'free');
test_test('a 429 fails, even without fields; N defaults to 20');

test_out('not ok 1 - static');
test_fail(+5);
test_diag('the request (code): expected exempt (5 requests, no 429, no RateLimit fields)',
          'request 1 (200 OK) carries rate-limit fields, so a limit applies: '
          . 'RateLimit: "site";r=19;t=60',
          'statuses: 200');
is_exempt(canned([200, RateLimit => '"site";r=19;t=60']), 5, 'static');
test_test('fields on an allowed response fail: a limit applies');

# ---------------------------------------------------------------- fields
{
    my $f = ratelimit_fields(canned([200, RateLimit => '"login";r=3;t=120',
        'RateLimit-Policy' => '"login";q=5;w=300'])->());
    is_deeply([@$f{qw(policy remaining reset limit window)}], ['login', 3, 120, 5, 300],
        'ratelimit_fields: policy, remaining, reset, limit, window');
    is(ratelimit_fields(canned([200])->()), undef, 'no fields: undef');
    is(retry_after(canned([429, 'Retry-After' => '17'])->()), 17, 'retry_after');
    is(retry_after(canned([429, 'Retry-After' => 'Wed, 21 Oct 2015 07:28:00 GMT'])->()), undef,
        'retry_after: a date is not what mod_rlaas sends');
}
is(describe_request({ path => '/a', method => 'POST', vhost => 'v' }),
    'POST /a on virtual host v', 'describe_request');
