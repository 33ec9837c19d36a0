# The kit's helpers for issue 28's limits (requests in flight, byte quotas,
# calendar periods) against a small HTTP server of this file's own that
# holds N requests at a time and refuses the rest, serves a file a number
# of times, and so can be told to get it wrong: each helper passes when the
# server keeps its limit and fails, saying why, when it does not.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::Builder::Tester tests => 17;
use Test::More;
use IO::Socket::IP;
use IO::Select;
use POSIX ();
use Time::HiRes ();
use HTTP::Response;
use HTTP::Request;
use Apache::TestRLaaS qw(:all);

# serve(%how): a server in a child process; its base URL. GET /slow holds
# `limit` requests 0.8 s each and refuses the others with `status` at once
# (Retry-After: `retry`); GET /file serves 1000 bytes `times` times (each
# with a byte quota's fields), then 429.
my @servers;
sub serve {
    my (%how) = (limit => 3, status => 429, retry => 1, times => 3, qu => 'content-bytes', @_);
    my $l = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0, Listen => 512,
                                ReuseAddr => 1) or die "listen: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my $sel = IO::Select->new($l);
        my (%buf, @held, $served_files);
        my $in_flight = 0;
        my $reply = sub {
            my ($c, $code, $h, $body) = @_;
            $body //= '';
            print $c "HTTP/1.0 $code X\r\nContent-Length: " . length($body) . "\r\n"
                . join('', map { "$_\r\n" } @$h) . "Connection: close\r\n\r\n$body";
            $sel->remove($c);
            close $c;
        };
        while (1) {
            my $now = Time::HiRes::time();
            for my $h (grep { $_->[1] <= $now } @held) {
                $reply->($h->[0], 200, [], 'slow');
                $in_flight--;
            }
            @held = grep { $_->[1] > $now } @held;
            for my $fh ($sel->can_read(0.02)) {
                if ($fh == $l) { $sel->add(scalar $l->accept); next }
                my $got = sysread $fh, $buf{$fh}, 4096, length($buf{$fh} // '');
                if (!$got) { $sel->remove($fh); close $fh; next }
                next unless $buf{$fh} =~ /\r\n\r\n/;
                my ($path) = delete($buf{$fh}) =~ m{^GET (\S+)};
                if ($path eq '/slow') {
                    if ($in_flight < $how{limit}) {
                        $in_flight++;
                        push @held, [$fh, $now + 0.8];
                        $sel->remove($fh);
                    } else {
                        $reply->($fh, $how{status},
                                 [defined $how{retry} ? "Retry-After: $how{retry}" : ()]);
                    }
                } elsif ($path eq '/file') {
                    my $pol = "RateLimit-Policy: \"dl\";q=3000;w=60"
                        . ($how{qu} ? ";qu=\"$how{qu}\"" : '');
                    if (++$served_files <= $how{times}) {
                        $reply->($fh, 200, [$pol, 'RateLimit: "dl";r=0;t=42'], 'x' x 1000);
                    } else {
                        $reply->($fh, 429, [$pol, 'RateLimit: "dl";r=0;t=42', 'Retry-After: 42']);
                    }
                }
            }
        }
    }
    my $port = $l->sockport;
    close $l;
    push @servers, $pid;
    return "http://127.0.0.1:$port";
}
END { my $rc = $?; kill "KILL", @servers if @servers; waitpid $_, 0 for @servers; $? = $rc }

# ---------------------------------------------------------------- in flight
{
    my $u = serve(limit => 3);
    test_out('ok 1 - three in flight');
    my @a = in_flight_limit_is("$u/slow", 3, 'three in flight', clients => 12);
    test_test('in_flight_limit_is passes: 3 of 12 served, 9 refused with Retry-After');
    is(scalar(grep { $_->{code} == 429 && $_->{retry_after} == 1 } @a), 9,
       'it returns every answer, with its Retry-After');
}
{
    my $u = serve(limit => 4);
    test_out('not ok 1 - three in flight');
    test_fail(+6);
    test_diag("GET $u/slow: expected 3 of 10 concurrent requests served, 7 refused with 429 and Retry-After",
              '4 served, not 3',
              '(fewer served: the request is too fast to stay in flight, or a counter left '
              . 'by an earlier test; more: the limit does not apply here)',
              'statuses: 200 x4, 429 x6');
    in_flight_limit_is("$u/slow", 3, 'three in flight', clients => 10);
    test_test('one more in flight than N fails, with the counts');
}
{
    my $u = serve(limit => 2, status => 503, retry => undef);
    test_out('not ok 1 - two, 503');
    test_fail(+4);
    test_diag("GET $u/slow: expected 2 of 6 concurrent requests served, 4 refused with 503 and Retry-After",
              '4 refused without a Retry-After of at least 1 second',
              'statuses: 200 x2, 503 x4');
    in_flight_limit_is("$u/slow", 2, 'two, 503', clients => 6, status => 503);
    test_test('status => 503 is what is expected; a refusal without Retry-After fails');

    test_out('not ok 1 - 429 expected');
    test_fail(+4);
    test_diag("GET $u/slow: expected 2 of 6 concurrent requests served, 4 refused with 429 and Retry-After",
              '4 answered neither 200 nor 429',
              'statuses: 200 x2, 503 x4');
    in_flight_limit_is("$u/slow", 2, '429 expected', clients => 6);
    test_test('a 503 where 429 is expected fails');
}
{
    my $u = serve(limit => 5);
    my @a = parallel_hold(5, "$u/slow");
    is_deeply([map { $_->{code} } @a], [(200) x 5], 'parallel_hold: 5 at once, all held and served');
    is($a[0]{body}, 'slow', 'parallel_hold gives the body');
}

# ---------------------------------------------------------------- bytes
{
    my $u = serve(times => 3);
    test_out('ok 1 - three downloads');
    my $r = bytes_quota_serves("$u/file", 3, 'three downloads');
    test_test('bytes_quota_serves passes: 3 whole downloads, then 429 with Retry-After');
    is($r && $r->code, 429, 'it returns the 429');
    my $f = ratelimit_fields($r);
    is_deeply([@$f{qw(unit limit)}], ['content-bytes', 3000], 'ratelimit_fields: unit (qu=) and q=');
}
{
    my $u = serve(times => 4);
    test_out('not ok 1 - three downloads');
    test_fail(+5);
    test_diag("GET $u/file: expected 3 whole downloads, then 429 with Retry-After",
              'download 4 was answered 200 X, not 429: more than 3 served',
              'its fields: RateLimit: "dl";r=0;t=42; RateLimit-Policy: "dl";q=3000;w=60;qu="content-bytes"',
              'statuses: 200 200 200 200');
    bytes_quota_serves("$u/file", 3, 'three downloads');
    test_test('a fourth download fails');
}
{
    my $u = serve(times => 2, qu => undef);
    test_out('not ok 1 - three downloads');
    test_fail(+7);
    test_diag("GET $u/file: expected 3 whole downloads, then 429 with Retry-After",
              'its RateLimit-Policy does not count bytes (no qu="content-bytes"): '
              . 'RateLimit: "dl";r=0;t=42; RateLimit-Policy: "dl";q=3000;w=60',
              'download 3 was answered 429 X after 2 served',
              'its fields: RateLimit: "dl";r=0;t=42; RateLimit-Policy: "dl";q=3000;w=60',
              'statuses: 200 200 429');
    bytes_quota_serves("$u/file", 3, 'three downloads');
    test_test('a quota of requests, not bytes, and one download short: both said');
}

# ---------------------------------------------------------------- calendar
{
    my $res = HTTP::Response->new(429, 'Too Many Requests',
        [RateLimit => '"q";r=0;t=3600', 'Retry-After' => 3601]);
    is(period_end_in($res), 3600, 'period_end_in: t= of RateLimit first');
    $res->remove_header('RateLimit');
    is(period_end_in($res), 3601, 'period_end_in: else Retry-After');
}
# 2026-03-08 in New York is 23 hours long (02:00 -> 03:00); 2026-11-01 25.
is(next_midnight('UTC', 1772935200), 1773014400, 'next_midnight: UTC');
is(next_midnight('America/New_York', 1772946000 + 60) - 1772946000, 23 * 3600,
   'next_midnight: a 23-hour day in New York');
is(next_midnight('America/New_York', 1793505600 + 60) - 1793505600, 25 * 3600,
   'next_midnight: a 25-hour day in New York');
