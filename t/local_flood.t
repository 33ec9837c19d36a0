# Issue 24, point 11: a flood of fresh identities against the local
# engine's table (RLaaSLocalSize 64K: about 500 identities) neither resets
# an exhausted identity nor lifts a live ban, in its own zone or in
# another; and when the table cannot keep what it must and place a new
# identity, the section's failure policy decides it, RLAAS0170 says so at
# most once a second per child, and rlaas_local_full_total counts it. Each
# attack sequential, then as a burst (concurrent flooders, 50 concurrent
# attempts by the limited identities). On an httpd of the test's own.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use HTTP::Tiny;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $conf = <<'EOC';
RLaaSBackend local
RLaaSLocalSize 64K
RLaaSRedis 127.0.0.1:1
# zone lfa, keyed by X-Key: the flood's zone; /lf/aban shares its counters
# and bans
<Location /lf/a>
    RLaaSZone lfa
    RLaaSLimit 3
    RLaaSWindow 1h
    RLaaSKeyBy header:X-Key
</Location>
<Location /lf/aban>
    RLaaSZone lfa
    RLaaSLimit 3
    RLaaSWindow 1h
    RLaaSKeyBy header:X-Key
    RLaaSBan 2h
</Location>
# zones keyed by the address: one bans, one only counts
<Location /lf/b>
    RLaaSZone lfb
    RLaaSLimit 2
    RLaaSWindow 1h
    RLaaSKeyBy ip
    RLaaSBan 2h
</Location>
<Location /lf/e>
    RLaaSZone lfe
    RLaaSLimit 2
    RLaaSWindow 1h
    RLaaSKeyBy ip
</Location>
# zones with nothing of their own in the table, each failure policy
<Location /lf/open>
    RLaaSZone lfo
    RLaaSLimit 5
    RLaaSWindow 1h
    RLaaSKeyBy header:X-Key
    RLaaSFailOpen on
</Location>
<Location /lf/closed>
    RLaaSZone lfc
    RLaaSLimit 5
    RLaaSWindow 1h
    RLaaSKeyBy header:X-Key
    RLaaSFailOpen off
</Location>
<Location /metrics>
    RLaaSEngine off
    RLaaSMetrics on
    SetHandler rlaas-metrics
</Location>
EOC
my $h = private_httpd($conf);
my $base = 'http://127.0.0.1:' . $h->port;
my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);

sub get {
    my ($path, $key) = @_;
    my $res = $ua->get("$base$path", { headers => $key ? { 'X-Key' => $key } : {} });
    # a ban (2h) says so by its Retry-After, beyond any counter's (1h)
    my $ra = $res->{headers}{'retry-after'} // 0;
    return $res->{status} . ($ra > 4000 ? ' ban' : '');
}

sub metric { $h->metric($_[0]) }

# n requests at once, each from a process of its own; their statuses
sub burst {
    my ($n, $path, $key) = @_;
    pipe(my $r, my $w) or die "pipe: $!";
    my @pids;
    for (1 .. $n) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            close $r;
            my $res = HTTP::Tiny->new(timeout => 20)->get("$base$path", { headers => { 'X-Key' => $key // '-' } });
            syswrite $w, "$res->{status}\n";
            require POSIX;
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    close $w;
    my @st = map { chomp; $_ } <$r>;
    waitpid $_, 0 for @pids;
    return count_by(@st);
}

# fresh X-Key values in zone lfa: sequentially, or from several processes
sub flood {
    my ($tag, $n, $procs) = @_;
    my @pids;
    for my $p (0 .. $procs - 1) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            my $c = HTTP::Tiny->new(timeout => 20, keep_alive => 1);
            my $bad = 0;
            for (my $i = $p; $i < $n; $i += $procs) {
                $bad++ if $c->get("$base/lf/a", { headers => { 'X-Key' => "$tag-$i" } })->{status} != 200;
            }
            require POSIX;
            POSIX::_exit($bad > 0 ? 1 : 0);
        }
        push @pids, $pid;
    }
    my $bad = 0;
    for (@pids) { waitpid $_, 0; $bad++ if $? }
    return $bad == 0;
}

# ------------------------------------------------- the limited identities
is(join(' ', map { get('/lf/a', 'victim') } 1 .. 4), '200 200 200 429', 'lfa: "victim" exhausted (3 of 4)');
is(join(' ', map { get('/lf/aban', 'banned') } 1 .. 4), '200 200 200 429 ban', 'lfa: "banned" banned for two hours at its 4th request');
is(join(' ', map { get('/lf/b') } 1 .. 3), '200 200 429 ban', 'lfb: the address banned for two hours');
is(join(' ', map { get('/lf/e') } 1 .. 3), '200 200 429', 'lfe: the address exhausted');

# ------------------------------------------------- attack 1: the same zone
my $t0 = time;
ok(flood('seq', 2000, 1), '2,000 fresh X-Key values in zone lfa, one request each: all allowed');
note(sprintf('  in %.1f s', time - $t0));
cmp_ok(metric('rlaas_local_evictions_total'), '>', 1000, 'the table evicted (it holds about 500)');
is(get('/lf/a', 'victim'), '429', 'the exhausted identity is still refused');
is(get('/lf/aban', 'banned'), '429 ban', 'the ban holds');
# ------------------------------------------------- attack 2: another zone
is(get('/lf/b'), '429 ban', 'lfb: the address ban holds (zone lfa flooded)');
is(get('/lf/e'), '429', 'lfe: the exhausted address is still refused');

# ------------------------------------------------- the same, as bursts
ok(flood('par', 2000, 8), '2,000 more fresh values from 8 processes at once: all allowed');
is(burst(50, '/lf/a', 'victim'), '429 x50', 'the exhausted identity, 50 attempts at once: all refused');
is(burst(50, '/lf/aban', 'banned'), '429 x50', 'the banned identity, 50 attempts at once: all refused');
is(burst(50, '/lf/b'), '429 x50', 'the banned address (another zone), 50 attempts at once: all refused');
is(burst(50, '/lf/e'), '429 x50', 'the exhausted address (another zone), 50 attempts at once: all refused');
is(metric('rlaas_local_evicted_limiting_total'), 0, 'no record that refused its identity was evicted');
is(metric('rlaas_local_full_total'), 0, 'zone lfa always had room: its own partly used records');

# ------------------------------------------------- no room: zones of nothing
# lfo and lfc hold nothing the table may take: what is there limits (the
# flood's partly used records, the exhausted identities, the bans)
my $m0 = time;
is(get('/lf/open', 'newcomer-1'), '200', 'RLaaSFailOpen on: a newcomer without room is let through');
is(get('/lf/closed', 'newcomer-2'), '500', 'RLaaSFailOpen off: refused with 500');
is(burst(50, '/lf/closed', 'newcomer-burst'), '500 x50', '50 at once: all 500');
my $elapsed = time - $m0;
cmp_ok(metric('rlaas_local_full_total'), '>=', 52, 'rlaas_local_full_total counts them');
cmp_ok(metric('rlaas_local_errors_total{kind="full"}'), '>=', 52, 'rlaas_local_errors_total{kind="full"} as well');
my @l = grep { /RLAAS0170/ } split /\n/, $h->log;
ok(@l >= 1, 'RLAAS0170 logged');
cmp_ok(scalar(@l), '<=', int($elapsed) + 2, sprintf('  at most once a second (%d lines in %.1f s)', scalar(@l), $elapsed));
like($l[0] // '', qr/\[rlaas:error\].*RLAAS0170: the local engine's table had no room for \d+ new identities.*RLaaSFailOpen.*RLaaSLocalSize/,
    '  saying why, what decides, and what to change');
# and still nothing of value was given up for them
is(get('/lf/a', 'victim') . ', ' . get('/lf/aban', 'banned') . ', ' . get('/lf/b'), '429, 429 ban, 429 ban',
    'the exhausted identity and the bans hold');
# the flood's own zone still has room: its newcomers take its own records
is(get('/lf/a', 'late-newcomer'), '200', 'a newcomer of zone lfa is decided (200)');

done_testing();
