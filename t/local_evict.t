# The local engine's table is bounded: with a tiny RLaaSLocalSize, the
# least recently used identities are evicted first (an identity in use
# stays, idle ones start afresh), evictions are counted and logged once
# per interval, not once each. A changed RLaaSLocalSize makes a new table
# at the next graceful restart (identities start afresh, logged); the same
# size keeps it. On an httpd of the test's own.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use HTTP::Tiny;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $conf = <<'EOC';
RLaaSBackend local
RLaaSLocalSize 64K
RLaaSRedis 127.0.0.1:1
<Location />
    RLaaSLimit 2
    RLaaSWindow 1h
    RLaaSStrategy token
    RLaaSKeyBy header:X-User
</Location>
<Location /metrics>
    RLaaSEngine off
    RLaaSMetrics on
    SetHandler rlaas-metrics
    RLaaSMetrics on
</Location>
EOC
my $h = private_httpd($conf);
my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
my $base = 'http://127.0.0.1:' . $h->port;

sub get {
    my ($user, $ka) = @_;
    my $res = ($ka // 1 ? $ua : HTTP::Tiny->new(timeout => 10))->get("$base/x", { headers => { 'X-User' => $user } });
    my ($r) = ($res->{headers}{ratelimit} // '') =~ /r=(\d+)/;
    return "$res->{status} r=" . ($r // '-');
}

sub metric { $h->metric($_[0]) }

is(get('hot') . ', ' . get('hot') . ', ' . get('hot'), '200 r=1, 200 r=0, 429 r=0', 'hot: 2 of 3 allowed (limit 2)');
is(get('cold-1'), '200 r=1', 'cold-1: one of 2 used');
my ($n, @bad) = (1500);
for my $i (2 .. $n) {
    my $g = get("cold-$i");
    push @bad, "cold-$i: $g" unless $g eq '200 r=1';
    # hot is used all along: never the least recently used
    if ($i % 100 == 0) { my $x = get('hot'); push @bad, "hot: $x" unless $x =~ /^429 / }
}
is_deeply(\@bad, [], "$n identities, one request each, hot now and then: as expected");
is(get('hot'), '429 r=0', 'hot is still limited: kept, being in use');
is(get('cold-1'), '200 r=1', 'cold-1 was evicted: it starts afresh (r=1, not r=0)');
my $held = metric('rlaas_local_identities');
cmp_ok($held, '<', 1000, "the table holds $held identities, not $n");
cmp_ok(metric('rlaas_local_evictions_total'), '>', $n - 1000, 'rlaas_local_evictions_total counts them');
my @l = grep { /RLAAS0061/ } split /\n/, $h->log;
is(scalar(@l), 1, 'evictions are logged once per interval (a minute), not once each');
like($l[0] // '', qr/\[rlaas:warn\].*RLAAS0061: the local engine's table is full: \d+ identities evicted.*RLaaSLocalSize/,
    '  saying the table is full and what to change');

# ---------------------------------------------------------------- restarts
sub graceful {
    my ($size) = @_;
    my $text = do { local (@ARGV, $/) = ($h->{conf}); <> };
    $text =~ s/^RLaaSLocalSize \S+$/RLaaSLocalSize $size/m;
    open my $fh, '>', $h->{conf} or die "$h->{conf}: $!";
    print $fh $text;
    close $fh;
    my $before = () = $h->log =~ /RLAAS0060/g;
    my $pid = do { local (@ARGV, $/) = ("$h->{dir}/httpd.pid"); <> };
    kill 'USR1', $pid =~ /(\d+)/;
    $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);    # a new child
    return wait_for(sub { (() = $h->log =~ /RLAAS0060/g) > $before }, 20, 0.1) && wait_for(sub { get('probe', 0) =~ /^200/ }, 10, 0.1);
}

ok(graceful('64K'), 'graceful restart, the same RLaaSLocalSize');
is(get('hot'), '429 r=0', 'the table was kept: hot is still limited');
ok(graceful('128K'), 'graceful restart with RLaaSLocalSize 128K');
like($h->log, qr/RLAAS0064: RLaaSLocalSize changed \(131072 bytes, was 65536\): a new local engine table; its identities start afresh/,
    'logged: a new table');
is(get('hot'), '200 r=1', 'hot starts afresh in the new table');
cmp_ok(metric('rlaas_local_capacity_bytes'), '>', 100_000, 'the new table is the new size');

done_testing();
