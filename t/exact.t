# Exactness under concurrency: 300 requests of ONE client from 32 concurrent
# connections (ab -n 300 -c 32), spread over several children or threads,
# against limit 100 with a window of an hour (no refill meanwhile): exactly
# 100 allowed and 200 denied, no error, for every strategy.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
chomp(my $ab = `command -v ab 2>/dev/null` || '');
plan skip_all => 'ab (apache2-utils) is not installed' unless $ab;

my $hostport = do { require Apache::Test; my $c = Apache::Test::config(); "127.0.0.1:$c->{vars}{port}" };

sub dec { qq{rlaas_decisions_total{strategy="$_[0]",outcome="$_[1]"}} }

for my $st (qw(fixed sliding_log sliding token leaky gcra)) {
    # fixed counts in wall-clock hours: not across the top of an hour
    wait_fixed_window(3_600_000, 15_000) if $st eq 'fixed';
    my $u = uid("ex-$st");
    my $tag = uid("ex-tid-$st");
    my $before = metrics();
    my $out = `'$ab' -q -n 300 -c 32 -H 'X-User: $u' -H 'X-Test-Id: $tag' 'http://$hostport/hd/exact/$st' 2>&1`;
    my $rc = $? >> 8;
    my $after = metrics();
    is($rc, 0, "$st: ab ran") or diag($out);
    my ($done) = $out =~ /^Complete requests:\s+(\d+)/m;
    my ($non2xx) = $out =~ /^Non-2xx responses:\s+(\d+)/m;
    my ($conn, $recv, $exc) = $out =~ /\(Connect: (\d+), Receive: (\d+), Length: \d+, Exceptions: (\d+)\)/;
    is($done, 300, "$st: 300 requests completed");
    is(($conn // 0) + ($recv // 0) + ($exc // 0), 0, "$st: no connection failed");
    is($non2xx, 200, "$st: ab saw 200 non-2xx responses");

    my @l = wait_sig_log($tag, 300);
    is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } @l), '200/allowed x100 429/denied x200',
        "$st, limit 100, 300 requests from 32 connections: exactly 100 allowed, 200 denied, no error");
    my %pids = map { $_->{pid} => 1 } @l;
    if (mpm() eq 'prefork') {
        cmp_ok(scalar(keys %pids), '>=', 2, "$st: served by " . scalar(keys %pids) . ' children');
    } else {
        note("$st: served by " . scalar(keys %pids) . ' process(es)');
    }
    my $name = $st;
    is(join(' ', map { mdelta($before, $after, dec($name, $_)) } qw(allowed denied error fail_open dry_run_denied)),
        '100 200 0 0 0', "$st: the metrics agree (allowed denied error fail_open dry_run_denied)");
}

done_testing();
