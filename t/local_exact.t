# The local engine is exact under concurrency: 300 requests of one client,
# released at the same moment from 300 forked clients, against a limit of
# 100 an hour (no refill meanwhile), admit exactly 100 for every strategy:
# threads of one child meet on one stripe lock (event, worker), children
# of one server meet on it across processes (prefork).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

require HTTP::Tiny;    # once here, not in each of the 300 clients

sub dec { qq{rlaas_decisions_total{strategy="$_[0]",outcome="$_[1]"}} }

for my $s (qw(fixed sliding_log sliding token leaky gcra)) {
    # fixed counts in wall-clock hours: not across the top of an hour
    wait_fixed_window(3_600_000, 15_000) if $s eq 'fixed';
    my $u = uid("lo-ex-$s");
    my $tag = uid("lo-ex-tid-$s");
    my $m0 = metrics();
    my @codes = parallel_requests(map {
        ["/lo/exact/$s", vhost => 'rlaas_local', h => { 'X-User' => $u, 'X-Test-Id' => "$tag-$_" }]
    } 1 .. 300);
    my $m1 = metrics();
    is(count_by(@codes), '200 x100 429 x200',
        "$s: 300 concurrent requests, limit 100: exactly 100 allowed");
    my @l = wait_sig_log($tag, 300);
    is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } @l), '200/allowed x100 429/denied x200',
        "$s: the server logged 100 allowed, 200 denied, nothing else");
    my %pids = map { $_->{pid} => 1 } @l;
    if (mpm() eq 'prefork') {
        cmp_ok(scalar(keys %pids), '>=', 2, "$s: across " . scalar(keys %pids) . ' children');
    } else {
        note("$s: served by " . scalar(keys %pids) . ' process(es)');
    }
    my $name = $s;
    is(join(' ', map { mdelta($m0, $m1, dec($name, $_)) } qw(allowed denied error fail_open)),
        '100 200 0 0', "$s: the metrics agree (allowed denied error fail_open)");
}

done_testing();
