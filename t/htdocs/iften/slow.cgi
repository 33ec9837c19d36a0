#!/usr/bin/perl
# t/inflight.t: a slow request (RLaaSConcurrency): sends its header and
# when it started at once, sleeps s= seconds (at most 10), then tells when
# it ended (epoch seconds); bad=1: no CGI response at all (httpd answers
# 500)
use strict;
use warnings;
use Time::HiRes ();
my $q = $ENV{QUERY_STRING} // '';
my ($s) = $q =~ /(?:^|&)s=([0-9.]+)/;
$s = 2 unless defined $s;
$s = 10 if $s > 10;
if ($q =~ /(?:^|&)bad=1/) {
    print "this is not a header line\n";
    exit 0;
}
$| = 1;
print "Content-Type: text/plain\r\n\r\n";
printf "%.6f", Time::HiRes::time();
Time::HiRes::sleep($s) if $s > 0;
printf " %.6f\n", Time::HiRes::time();
