# The later strategies: sliding (sliding_window), token (token_bucket),
# leaky (leaky_bucket) and gcra. A module that stops accepting
# `RLaaSStrategy token` fails here (never a skip).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

# late(TOOK, WITHIN, WHAT): whether a sequence that must land within WITHIN
# seconds of its first request took longer (measured from before it: the
# machine was slow, whatever the module answered); if so a diag says so, and
# the check that needs it is skipped
sub late {
    my ($took, $within, $what) = @_;
    return 0 if $took <= $within;
    diag(sprintf '%s took %.2fs, more than %.1fs: not judged (a unit comes back each second)',
        $what, $took, $within);
    return 1;
}
{
    my ($rc, $out) = httpd_config_test("<Location /x>\n RLaaSLimit 1\n RLaaSStrategy token\n</Location>\n");
    is($rc, 0, "the module accepts 'RLaaSStrategy token'") or diag($out);
}

# bucket-like strategies: limit 3 per 3s (one unit per second), bursts of 3
for my $c (
    ['token',        'st-token',        'tb',   'hash'],
    ['token_bucket', 'st-token-bucket', 'tb',   'hash'],
    ['leaky',        'st-leaky',        'lb',   'hash'],
    ['leaky_bucket', 'st-leaky-bucket', 'lb',   'hash'],
    ['gcra',         'st-gcra',         'gcra', 'string'],
) {
    my ($name, $zone, $suffix, $type) = @$c;
    my $u = uid($name);
    my %h = (h => { 'X-User' => $u });
    my $t0 = time;
    my @c = codes(1, "/rl/st/$name", %h);
    my $t1 = time;    # the first request, which the refill counts from, is in by now
    push @c, codes(3, "/rl/st/$name", %h);
    my $burst = time - $t0;
    SKIP: {
        skip "the burst took too long (${burst}s) to be denied its 4th", 1
            if late($burst, 0.9, "RLaaSStrategy $name: the burst of 4");
        is("@c", '200 200 200 429', "RLaaSStrategy $name, limit 3 per 3s: a burst of 3, then 429");
    }
    my $k = ukey($zone, $u) . ":$suffix";
    is(redis_cmd('TYPE', $k), $type, "RLaaSStrategy $name keeps a \U$type\E at K:$suffix");
    my $p = redis_cmd('PTTL', $k);
    ok($p > 0 && $p <= 6_000, "RLaaSStrategy $name: its key has a TTL (PTTL $p)");
    ok(!redis_cmd('EXISTS', ukey($zone, $u)), "RLaaSStrategy $name writes nothing at K itself");
    my $res = req("/rl/st/$name", %h);
    my $five = time - $t0;
    # the 4th and this 5th within 1s of the first: both denied, the bucket
    # left empty for the refill below
    SKIP: {
        skip "the 5 requests took too long (${five}s) to be denied the 5th", 2
            if late($five, 0.9, "RLaaSStrategy $name: the 5 requests");
        is($res->code, 429, "RLaaSStrategy $name: still denied right after the burst");
        my $ra = $res->header('Retry-After') // 0;
        ok($ra >= 1 && $ra <= 2, "RLaaSStrategy $name: Retry-After is about one unit (1s) ($ra)");
    }
    SKIP: {
        skip "the 5 requests took too long (${five}s) to time the refill", 2 if $five > 0.9;
        my $wait = $t1 + 1.25 - time;
        sleep $wait if $wait > 0;
        is(hit("/rl/st/$name", %h), 200, "RLaaSStrategy $name: one unit comes back after 1s");
        my $code = hit("/rl/st/$name", %h);
        my $took = time - $t0;    # the second unit is back 2s after the first request
        skip "the refill took too long (${took}s) to be denied its 2nd", 1
            if late($took, 1.9, "RLaaSStrategy $name: the 5 requests and the 2 after 1s");
        is($code, 429, "RLaaSStrategy $name: but only one");
    }
}

# sliding window estimate: limit 3 per 60s
for my $name (qw(sliding sliding_window)) {
    my $zone = $name eq 'sliding' ? 'st-sliding' : 'st-sliding-window';
    my $u = uid($name);
    my @c = codes(5, "/rl/st/$name", h => { 'X-User' => $u });
    is("@c", '200 200 200 429 429', "RLaaSStrategy $name, limit 3: 3 allowed, then 429");
    my $k = ukey($zone, $u) . ':sw';
    ok(redis_cmd('EXISTS', $k), "RLaaSStrategy $name keeps its state at K:sw");
    my $p = redis_cmd('PTTL', $k);
    ok($p > 0 && $p <= 120_000, "RLaaSStrategy $name: its key has a TTL (PTTL $p)");
}

# one zone and identity under every strategy: switching never errors
{
    my $u = uid('mix');
    my $K = ukey('st-mix', $u);
    my @names = qw(fixed sliding_log sliding token leaky gcra);
    my @c = map { hit("/rl/st/mix/$_", h => { 'X-User' => $u }) } @names, @names;
    is("@c", join(' ', ('200') x 12),
        'the same K under all six strategies, twice over: no WRONGTYPE, no 500');
    my @k = keys_like("$K*");
    my %want = map { $_ => 1 } ($K, "$K:sw", "$K:tb", "$K:lb", "$K:gcra");
    my @fixed = grep { /^\Q$K\E:\d+$/ } @k;
    is(scalar(@fixed), 1, 'fixed window: K:<window>');
    is_deeply([grep { $want{$_} } @k], [sort keys %want], 'the others: K, K:sw, K:tb, K:lb, K:gcra');
    my @nottl = grep { redis_cmd('PTTL', $_) <= 0 } @k;
    is_deeply(\@nottl, [], 'every key every strategy writes has a TTL');
}

done_testing();
