# Requests in flight, exact under load (issue 28: "exact under 300
# concurrent requests against N=10 on the local engine"): 300 clients
# connect first, then send at one moment a request to a CGI that sleeps
# 10 s, against RLaaSConcurrency 10 (t/conf/x-concurrency.conf.in, virtual
# host rlaas_if_local): exactly 10 served, 290 refused with 429 and
# Retry-After, and the CGI never saw more than 10 running at once.
#
# httpd's side: the test configuration's event MPM has 64 workers
# (t/conf/httpd.conf.in); 10 are held by the CGIs, the others decide the
# refusals (each a moment's work on shared memory) and take the next
# connections from the listen queue (ListenBacklog 511, somaxconn 4096), so
# the 290 refusals never wait for the 10 held ones; prefork's 24 processes
# leave 14 for them. The wave is sent within moments, the CGIs run 10 s:
# the margin for a loaded machine to decide all 300 while the first 10 run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);
use Apache::TestRLaaS qw(in_flight_limit_is);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

# The most requests the CGI saw running at one moment, from the [start
# end] times its bodies give.
sub max_overlap {
    my @ev;
    for (@_) {
        my ($t0, $t1) = $_->{body} =~ /^([\d.]+) ([\d.]+)/ or next;
        push @ev, [$t0, 1], [$t1, -1];
    }
    my ($cur, $max) = (0, 0);
    for (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @ev) {
        $cur += $_->[1];
        $max = $cur if $cur > $max;
    }
    return $max;
}

my $u = uid('if300');
my @a = in_flight_limit_is(
    { path => '/if/r10?s=10', vhost => 'rlaas_if_local', h => { 'X-User' => $u } },
    10, 'local: exactly 10 of 300 concurrent slow requests served, 290 refused (RLaaSConcurrency 10)',
    clients => 300);
my @ok = grep { $_->{code} == 200 } @a;
is(scalar(grep { $_->{body} =~ /^[\d.]+ [\d.]+\s*$/ } @ok), scalar(@ok), 'local: each served one ran to its end');
cmp_ok(max_overlap(@ok), '<=', 10, 'local: the CGI never saw more than 10 running at one moment');

done_testing();
