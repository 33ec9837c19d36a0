# RLaaSLease on and auto: two Apache servers sharing one Redis spend a
# busy identity's quota in portions taken from Redis.
#  - 1,000 requests of one identity, 40 clients at once, half to each
#    server, against a limit of 300 (gcra and fixed, a day's window: no
#    refill meanwhile): never more than 300 admitted, and at least 250;
#  - under a limit never reached, most requests take no round trip: Redis'
#    own count of EVALSHA calls (INFO commandstats) stays far below the
#    requests; without the lease every request is one;
#  - one identity's lease never admits another: alice's units held by a
#    server are not bob's, and each gets exactly the limit;
#  - a refusal says when to come back (Retry-After, RateLimit);
#  - explicit RLaaSLease on with the sliding log, or a value that is not
#    auto, on or off, fails `apache2 -t` naming the directive and the
#    value; where a lease can't apply (a dry run) the request is decided
#    as without it, and the server says so once (RLAAS0081);
#  - RLaaSLease auto: the same ceiling and the same savings for a busy
#    identity; many quiet identities take one EVALSHA per request and get
#    the decisions they get without leases; where a lease can't apply (a
#    sliding log, a dry run) nothing is said; with no RLaaSLease at all
#    (auto, the default) a busy identity's requests take few round trips,
#    and with RLaaSLease off every request is one;
#  - a limit read per request (RLaaSLimit expr=) is leased per limit:
#    the same ceiling, most requests spent here, nothing held under one
#    limit is spent under another, and two clients on different plans,
#    interleaved, each get their own limit;
#  - a client that pauses longer than a lease between bursts loses
#    nothing: what its server held goes back with the next portion;
#  - several policies (the section's limit and RLaaSApply's), each from
#    its own lease, all or nothing: the smaller one's ceiling on two
#    servers, few round trips for a busy identity, nothing taken of the
#    other policy by a refused request, the longest wait of those that
#    refuse in Retry-After, and units held here spent while another
#    policy takes a portion.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use File::Path qw(make_path);
use IO::Socket::INET;
use Time::HiRes ();

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
require HTTP::Tiny;

my @cases = (
    [gcra  => 'gcra',  300,     '1d'],
    [fixed => 'fixed', 300,     '1d'],
    [big   => 'gcra',  1000000, '1h'],
    [off   => 'gcra',  1000000, '1h', 'off'],
    [small => 'gcra',  20,      '1d'],
    [tok   => 'token', 20,      '1d'],
    [dry   => 'gcra',  1000,    '1d', 'on', 'RLaaSDryRun on'],
    [bytes => 'fixed', '3M',    '1h', 'on', 'RLaaSCost bytes'],
    [auto     => 'gcra',        300,     '1d', 'auto'],
    [autobig  => 'gcra',        1000000, '1h', 'auto'],
    [autolog  => 'sliding_log', 1000000, '1h', 'auto'],
    [autodry  => 'gcra',        1000,    '1d', 'auto', 'RLaaSDryRun on'],
    [quiet    => 'gcra',        50,      '1h', 'auto'],
    [quietoff => 'gcra',        50,      '1h', 'off'],
    [paused   => 'fixed',       200,     '1d', 'auto'],
    # no RLaaSLease line: the default, auto
    [dflt     => 'gcra',        1000000, '1h', 'default'],
    # a limit read per request (RLaaSLimit expr=): leased per limit
    [vary     => 'gcra',        'expr=%{HTTP:X-Plan} 1', '1d', 'on'],
    # several policies (the section's own limit and RLaaSApply's)
    [pols     => 'gcra',        300,     '1d', 'on',      'RLaaSApply lease-pol-big'],
    [polsbig  => 'gcra',        1000000, '1h', 'default', 'RLaaSApply lease-pol-big'],
    [undo     => 'gcra',        10,      '1d', 'on',      'RLaaSApply lease-pol-slide'],
    [undo9    => 'gcra',        9,       '1d', 'on',      'RLaaSApply lease-pol-slide'],
    [polwait  => 'gcra',        1,       '1h', 'on',      'RLaaSApply lease-pol-10s'],
    [held     => 'fixed',       20,      '1d', 'on',      'RLaaSApply lease-pol-fast'],
    # a calendar window (a day from midnight UTC): its periods leased as
    # fixed's windows
    [cal      => 'fixed',       300,     '1d calendar', 'on'],
    [three    => 'gcra',        100,     '1d', 'on',      'RLaaSApply lease-pol-big lease-pol-slide'],
    # one policy applied by two sections (one on, one auto), each section's
    # own limit far above it
    [share1   => 'gcra',        1000000, '1h', 'on',      'RLaaSApply lease-pol-share'],
    [share2   => 'token',       1000000, '1h', 'auto',    'RLaaSApply lease-pol-share'],
);

my @srv = map { start_server() } 1, 2;

sub evalsha_calls {
    my $info = redis()->cmd('INFO', 'commandstats');
    return $info =~ /cmdstat_evalsha:calls=(\d+)/ ? $1 : 0;
}

# The lease counters of both servers, summed: name (with its labels) =>
# value.
sub lease_metrics {
    my %m;
    for my $s (@srv) {
        my $res = HTTP::Tiny->new(timeout => 10)->get("http://$s->{hp}/metrics");
        for (split /\n/, $res->{content} // '') {
            $m{$1} += $2 if /^(rlaas_lease_\S+)\s+(\d+)$/;
        }
    }
    return \%m;
}
sub delta { my ($a, $b, $k) = @_; ($b->{$k} // 0) - ($a->{$k} // 0) }

# The records of one server's local table (rlaas_local_identities).
sub local_identities {
    my ($s) = @_;
    my $res = HTTP::Tiny->new(timeout => 10)->get("http://$s->{hp}/metrics");
    return $res->{content} =~ /^rlaas_local_identities\s+(\d+)/m ? $1 : die "no rlaas_local_identities\n";
}

# load(PATH, USER, TOTAL, CLIENTS, HEADERS...): TOTAL requests of one
# identity from CLIENTS processes at once, each on keep-alive connections
# to both servers in turn; returns (status => count).
sub load {
    my ($path, $user, $total, $clients, %more) = @_;
    my $per = int($total / $clients);
    my $go = Time::HiRes::time() + 0.3 + 0.01 * $clients;
    my @kids;
    for my $c (1 .. $clients) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            my @ua = map { HTTP::Tiny->new(timeout => 30, keep_alive => 1) } @srv;
            my $d = $go - Time::HiRes::time();
            Time::HiRes::sleep($d) if $d > 0;
            my %n;
            for my $k (1 .. $per) {
                my $j = ($c + $k) % 2;
                my $res = $ua[$j]->get("http://$srv[$j]{hp}$path", { headers => { 'X-User' => $user, %more } });
                $n{$res->{status}}++;
            }
            print $w join(' ', %n);
            close $w;
            require POSIX;
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    my %n;
    for my $k (@kids) {
        my $fh = $k->[1];
        my %m = split ' ', (<$fh> // '');
        $n{$_} += $m{$_} for keys %m;
        waitpid $k->[0], 0;
    }
    $? = 0;
    return %n;
}

# A warm-up: every server has the processes and threads for 40 clients
# before the measured loads (prefork spawns children a few a second: a
# request stalled behind that for over a second lets its lease lapse).
load('/lease/big', uid('lease-warm'), 400, 40);

# ---------------------------------------- never more than the limit
# (auto: RLaaSLease auto, the same guarantees)
for my $c (qw(gcra fixed auto cal)) {
    # fixed counts in days of Redis' clock, a calendar in days from
    # midnight UTC: not across midnight
    wait_fixed_window(86_400_000, 60_000) if $c eq 'fixed' || $c eq 'cal';
    my $u = uid("lease-$c");
    my $m0 = lease_metrics();
    my %n = load("/lease/$c", $u, 1000, 40);
    cmp_ok(delta($m0, lease_metrics(), 'rlaas_lease_grants_total'), '>', 0, "$c: portions taken")
        if $c eq 'cal';
    my $ok = $n{200} // 0;
    note("$c: " . join(' ', map { "$_ x$n{$_}" } sort keys %n));
    cmp_ok($ok, '<=', 300, "$c: 1000 requests of one identity on two servers, limit 300: at most 300 admitted ($ok)");
    cmp_ok($ok, '>=', 250, "$c: and at least 250 of them (what lapsed in leases is the rest)");
    is(($n{200} // 0) + ($n{429} // 0), 1000, "$c: every other request refused with 429, none failed");
}

# ---------------------------------------- a limit read per request
# (RLaaSLimit expr=): leased per limit, the ceiling exact; a client whose
# plan changes spends nothing held under the old one
{
    my $m0 = lease_metrics();
    my $u = uid('lease-vary');
    my %n = load('/lease/vary', $u, 1000, 40, 'X-Plan' => 300);
    my $m1 = lease_metrics();
    my $ok = $n{200} // 0;
    cmp_ok($ok, '<=', 300, "RLaaSLimit expr= (300 for this client): at most 300 of 1000 admitted ($ok)");
    cmp_ok($ok, '>=', 250, '  and at least 250');
    # how many a burst spends from portions depends on how long a
    # portion's round trip keeps the others waiting (those go to Redis
    # alone): under load only that some are; one request at a time, most
    cmp_ok(delta($m0, $m1, 'rlaas_lease_spends_total'), '>', 0, '  leased under a burst: some spent from portions held here');
    {
        my $v = uid('lease-vary-seq');
        my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
        my ($ok, $m2) = (0, lease_metrics());
        for my $k (1 .. 200) {
            my $res = $ua->get("http://$srv[$k % 2]{hp}/lease/vary",
                { headers => { 'X-User' => $v, 'X-Plan' => 300 } });
            $ok++ if $res->{status} == 200;
        }
        my $spent = delta($m2, lease_metrics(), 'rlaas_lease_spends_total');
        is($ok, 200, '  200 requests one at a time on both servers, plan 300: all admitted');
        cmp_ok($spent, '>=', 150, "  and most of them ($spent) spent from portions held here");
    }
    # the units this server still holds under 300 are not spent under 200
    %n = load('/lease/vary', $u, 100, 10, 'X-Plan' => 200);
    is($n{200} // 0, 0, '  its plan lowered to 200 with 300 spent: nothing more admitted');
    is($n{429} // 0, 100, '  every request refused');
    # two clients of one zone on different plans, their requests
    # interleaved on one server: neither spends the other's portions, nor
    # is held to the other's limit
    my %p = (uid('lease-vary-a') => 30, uid('lease-vary-b') => 60);
    my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
    my %got;
    for (1 .. 80) {
        for my $who (sort keys %p) {
            my $res = $ua->get("http://$srv[0]{hp}/lease/vary",
                { headers => { 'X-User' => $who, 'X-Plan' => $p{$who} } });
            $got{$who}++ if $res->{status} == 200;
        }
    }
    for my $who (sort keys %p) {
        my $ok = $got{$who} // 0;
        cmp_ok($ok, '<=', $p{$who}, "  interleaved, plan $p{$who}: at most its own limit ($ok)");
        cmp_ok($ok, '>=', $p{$who} - 5, "  and nearly all of it: not held to the other's");
    }
}

# ---------------------------------------- several policies
# each from its own lease, all or nothing: the ceiling of the smaller one
# holds on two servers; a busy identity's requests take few round trips;
# what a refused request took of the other policy goes back to its
# portion; a refusal waits for the longest of those that refuse
{
    my $m0 = lease_metrics();
    my %n = load('/lease/pols', uid('lease-pols'), 1000, 40);
    my $m1 = lease_metrics();
    my $ok = $n{200} // 0;
    cmp_ok($ok, '<=', 300, "two policies (300 a day, 10^6 an hour), 1000 requests on two servers: at most 300 admitted ($ok)");
    cmp_ok($ok, '>=', 250, '  and at least 250');
    is($ok + ($n{429} // 0), 1000, '  every other request refused with 429, none failed');
    cmp_ok(delta($m0, $m1, 'rlaas_lease_spends_total'), '>', 0, '  decided from portions held here');

    my $e0 = evalsha_calls();
    %n = load('/lease/polsbig', uid('lease-polsbig'), 1000, 20);
    my $calls = evalsha_calls() - $e0;
    is($n{200} // 0, 1000, 'two policies never reached, no RLaaSLease (auto): all 1000 admitted');
    cmp_ok($calls, '<', 400, "  a busy identity's 1000 requests made $calls EVALSHA calls (one each without leases)");

    # lease-pol-slide (1000 an hour, a sliding window: what lapses in a
    # portion is never given back) beside the section's 10 a day: the
    # requests the section refuses, for seconds past a lease's end, take
    # nothing of it; Redis counts the 10 admitted and what portions this
    # server took for them, no more
    wait_fixed_window(3_600_000, 10_000);    # the sliding window's hour
    my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
    # on one server, then on both in turn; a limit of 10 and one of 9 (the
    # portions the admitted requests leave differ)
    for my $c (['undo', 10, 1], ['undo9', 9, 1], ['undo', 10, 2]) {
        my ($name, $lim, $servers) = @$c;
        my $u = uid("lease-$name");
        my $at = 0;
        my $get = sub {
            my $s = $srv[ $at++ % $servers ];
            $ua->get("http://$s->{hp}/lease/$name", { headers => { 'X-User' => $u } })->{status};
        };
        my $slide = sub {
            my $sw = redis()->cmd('GET', rkey('lease-pol-slide', tseg('h.x-user', $u)) . ':sw');
            defined $sw ? int($sw / 4) % 2**24 : 0;
        };
        my $what = "limit $lim, $servers server" . ($servers > 1 ? 's' : '');
        my %c;
        $c{ $get->() }++ for 1 .. $lim;
        is($c{200} // 0, $lim, "$what: the section and lease-pol-slide (1000 an hour): $lim admitted");
        my $n0 = $slide->();
        cmp_ok($n0, '>=', $lim, "  lease-pol-slide counts $n0: the admitted and the portions taken for them");
        cmp_ok($n0, '<=', 5 * $lim, '  which are small');
        my $t0 = Time::HiRes::time();
        while (Time::HiRes::time() - $t0 < 3) {
            $c{ $get->() }++;
            Time::HiRes::sleep(0.05);
        }
        is($c{200} // 0, $lim, "  then 3 s of requests, all refused (" . join(' ', map { "$_ x$c{$_}" } sort keys %c) . ')');
        is($slide->(), $n0, '  and lease-pol-slide counts no more: the refused took nothing of it, past its lease too');
    }

    # the 10 s policy asked first, the hour's second: a refusal waits
    # for the longest of those that refuse
    my $u = uid('lease-polwait');
    my @r = map { $ua->get("http://$srv[0]{hp}/lease/polwait", { headers => { 'X-User' => $u } }) } 1 .. 3;
    is(join(' ', map { $_->{status} } @r), '200 429 429', 'one policy of 10 s (lease-pol-10s) and one of an hour: one admitted');
    for my $k (1, 2) {
        my $ra = $r[$k]{headers}{'retry-after'} // 0;
        ok($ra > 3500 && $ra <= 3600, "  refusal $k: Retry-After is the longer wait, the hour's ($ra s): every policy was asked");
    }

    # the section's last units held here when Redis has none left, and
    # the other policy's portion over (it lasts 200 ms): the section's
    # units are spent here while the other policy takes a new portion, so
    # the 20 are admitted one after another, then no more
    wait_fixed_window(86_400_000, 30_000);
    my $uh = uid('lease-held');
    my @codes = map {
        my $c = $ua->get("http://$srv[0]{hp}/lease/held", { headers => { 'X-User' => $uh } })->{status};
        Time::HiRes::sleep(0.3);
        $c;
    } 1 .. 21;
    is("@codes", join(' ', (200) x 20, 429),
        'fixed 20 a day and a policy of 2 s, 21 requests 0.3 s apart on one server: 20 admitted, then refused');

    # crossing: a second identity on the server holding the first one's
    # portions gets its own 20, no more, and the first none of them
    my ($ua1, $ub1) = (uid('lease-held-a'), uid('lease-held-b'));
    my %got;
    for my $k (1 .. 25) {
        for my $u ($ua1, $ub1) {
            $got{$u}{ $ua->get("http://$srv[0]{hp}/lease/held", { headers => { 'X-User' => $u } })->{status} }++;
        }
    }
    is(join(' ', map { $got{$_}{200} // 0 } $ua1, $ub1), '20 20',
        'two identities interleaved on one server, 25 requests each: 20 admitted each');
    # a policy applied by two sections (RLaaSLease on in one, auto in the
    # other), one identity alternating between them and the servers: the
    # policy's 20, whatever section or server holds a portion of it
    my $us = uid('lease-share');
    my %sh;
    for my $k (0 .. 59) {
        my $s = $srv[ $k % 2 ];
        my $path = $k % 4 < 2 ? '/lease/share1' : '/lease/share2';
        $sh{ $ua->get("http://$s->{hp}$path", { headers => { 'X-User' => $us } })->{status} }++;
    }
    is(join(' ', map { "$_ x$sh{$_}" } sort keys %sh), '200 x20 429 x40',
        'one policy (fixed 20 a day) applied by two sections, one identity across both and both servers: 20 admitted');

    # three policies: a lease's reply of 12 verdicts
    my $u3 = uid('lease-three');
    my $get3 = sub { $ua->get("http://$srv[0]{hp}/lease/three", { headers => { 'X-User' => $u3 } })->{status} };
    my $e3 = evalsha_calls();
    my @c3 = map { $get3->() } 1 .. 100;
    my $calls3 = evalsha_calls() - $e3;
    is("@c3", join(' ', (200) x 100), 'three policies (gcra 100 a day and two of RLaaSApply), 100 requests one after another: all admitted');
    cmp_ok($calls3, '<', 75, "  in $calls3 EVALSHA calls (one each without leases): portions of all three");
    @c3 = map { $get3->() } 1 .. 5;
    is("@c3", join(' ', (429) x 5), '  then 5 more: refused');
}

# ---------------------------------------- most requests take no round trip
for my $c (['big', 'RLaaSLease on'], ['autobig', 'RLaaSLease auto'], ['dflt', 'no RLaaSLease (auto, the default)']) {
    my ($name, $what) = @$c;
    my $m0 = lease_metrics();
    my $e0 = evalsha_calls();
    my $u = uid("lease-$name");
    my %n = load("/lease/$name", $u, 1000, 20);
    my $calls = evalsha_calls() - $e0;
    my $m1 = lease_metrics();
    is($n{200} // 0, 1000, "$what, a limit never reached: all 1000 admitted");
    # (a request that comes while a portion is fetched goes to Redis alone:
    # more of them on a slow machine; without leases 1000 calls)
    cmp_ok($calls, '<', 500, "$what: 1000 requests of a busy identity made $calls EVALSHA calls (fewer than 500)");
    # the metrics say where each request was decided
    my ($spends, $grants) = (delta($m0, $m1, 'rlaas_lease_spends_total'), delta($m0, $m1, 'rlaas_lease_grants_total'));
    my $alone = 0;
    $alone += delta($m0, $m1, qq{rlaas_lease_fallbacks_total{reason="$_"}}) for qw(in_flight table quiet);
    is($spends + $grants + $alone, 1000,
        "$what: metrics: $spends spent here, $grants took a portion, $alone went alone (a portion in flight, the table busy, still quiet): 1000");
    cmp_ok($spends, '>', 500, "$what: rlaas_lease_spends_total counts the requests decided with no round trip");
    cmp_ok(delta($m0, $m1, 'rlaas_lease_units_granted_total'), '>=', $spends + $grants,
        "$what: rlaas_lease_units_granted_total holds every unit spent");
    # what each server still held when the identity went quiet lapses
    # with its lease (1 s at most), and goes back to Redis with its next
    # portion, less what the bucket refilled meanwhile (gcra)
    Time::HiRes::sleep(1.2);
    HTTP::Tiny->new->get("http://$_->{hp}/lease/$name", { headers => { 'X-User' => $u } }) for @srv;
    my $m2 = lease_metrics();
    my $back = delta($m1, $m2, 'rlaas_lease_units_returned_total');
    my $lapsed = delta($m1, $m2, 'rlaas_lease_units_lapsed_total');
    cmp_ok($back + $lapsed, '>', 0,
        "$what: the units held at the pause are counted, given back ($back) or lapsed with the refill ($lapsed)");
}

# ---------------------------------------- a client that pauses loses nothing
# Bursts of 60 requests on both servers with pauses longer than a lease
# (RLaaSLease auto, fixed, 200 a day): what a server held at each pause
# lapses and goes back to Redis with its next portion, so the bursts are
# admitted until the quota is spent to the last unit, then refused.
{
    # fixed counts in days of Redis' clock: not across midnight
    wait_fixed_window(86_400_000, 60_000);
    my $u = uid('lease-paused');
    my ($ok, @per) = (0);
    for my $burst (1 .. 12) {
        my %n = load('/lease/paused', $u, 60, 6);
        push @per, $n{200} // 0;
        $ok += $n{200} // 0;
        last if !$n{200};
        Time::HiRes::sleep(1.2);
    }
    note('admitted per burst: @per');
    is($per[-1], 0, 'bursts with pauses: the last burst refused whole') or diag("@per");
    is($ok, 200, 'and those before it admitted the whole quota of 200, to the last unit (nothing lapsed at a pause)')
        or diag("@per");
}
for my $c (['off', 'RLaaSLease off']) {
    my ($name, $what) = @$c;
    my $e0 = evalsha_calls();
    my %n = load("/lease/$name", uid("lease-$name"), 400, 20);
    my $calls = evalsha_calls() - $e0;
    is($n{200} // 0, 400, "$what: all 400 admitted");
    is($calls, 400, "$what: one EVALSHA per request");
}

# ---------------------------------------- one identity's lease is its own
# (Units a lease does not spend within its second lapse, so the counts
# below are bounds: a slow machine admits fewer, never more.)
for my $c (qw(small tok)) {
    my ($alice, $bob) = (uid("lease-alice-$c"), uid("lease-bob-$c"));
    my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
    my $get = sub {
        my ($s, $user) = @_;
        return $ua->get("http://$s->{hp}/lease/$c", { headers => { 'X-User' => $user } });
    };
    # alice's lease on server 1 is under way: it holds units of hers
    my @a = map { $get->($srv[0], $alice)->{status} } 1 .. 6;
    is("@a", '200 200 200 200 200 200', "$c: alice's first 6 requests admitted");
    # bob, on the server holding alice's units, gets his own 20 at most
    my @b = map { $get->($srv[0], $bob)->{status} } 1 .. 30;
    my $bob_ok = grep { $_ == 200 } @b;
    cmp_ok($bob_ok, '<=', 20, "$c: bob, on the server holding alice's lease: at most his limit of 20 ($bob_ok)");
    cmp_ok($bob_ok, '>=', 15, "$c: and not much less");
    is($b[-1], 429, "$c: bob's last request refused");
    # alice has 14 left at most, across both servers
    my @a2 = map { $get->($srv[$_ % 2], $alice)->{status} } 1 .. 30;
    my $alice_ok = grep { $_ == 200 } @a2;
    cmp_ok($alice_ok, '<=', 14, "$c: alice's remaining 14 at most, across both servers ($alice_ok); none went to bob");
    is($a2[-1], 429, "$c: alice's last request refused");
    my $res = $get->($srv[1], $alice);
    is($res->{status}, 429, "$c: refused on the other server too");
    like($res->{headers}{'retry-after'} // '', qr/\A[1-9]\d*\z/, "$c: Retry-After in whole seconds");
    like($res->{headers}{ratelimit} // '', qr/r=0\b/, "$c: RateLimit says none remain");
}

# ---------------------------------------- where a lease can't apply
# N requests of user U to /lease/NAME on the first server, over one
# connection: their statuses
sub one_connection {
    my ($name, $u, $n) = @_;
    my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
    return map { $ua->get("http://$srv[0]{hp}/lease/$name", { headers => { 'X-User' => $u } })->{status} } 1 .. $n;
}
sub error_log_size { -s catfile($srv[0]{dir}, 'error_log') || 0 }
sub error_log_from {
    open my $fh, '<', catfile($srv[0]{dir}, 'error_log') or return '';
    seek $fh, $_[0], 0;
    local $/;
    return <$fh> // '';
}

{
    my $log0 = error_log_size();
    my $u = uid('lease-dry');
    my $e0 = evalsha_calls();
    my @s = one_connection('dry', $u, 10);
    is(count_by(@s), '200 x10', 'a dry run with RLaaSLease on: allowed');
    is(evalsha_calls() - $e0, 10, 'and decided one round trip each, as without a lease');
    my $log = error_log_from($log0);
    my @n = ($log =~ /RLAAS0081: RLaaSLease on is not used for policy lease-dry: a dry run/g);
    cmp_ok(scalar(@n), '>=', 1, 'the server says why (RLAAS0081)');
    is(scalar(@n), 1, 'once (one connection, one process), not per request');
}

# a byte quota: its charge comes after the response, so no lease either
{
    my $log0 = error_log_size();
    my $u = uid('lease-bytes');
    my $e0 = evalsha_calls();
    my @s = one_connection('bytes', $u, 5);
    is(count_by(@s), '200 x5', 'a byte quota with RLaaSLease on: allowed');
    # each request one call to decide and one to charge its bytes after
    # the response (a lease would have spared the first four deciding)
    ok(wait_for(sub { evalsha_calls() - $e0 >= 10 }, 5), '  decided and charged by Redis each time, no lease')
        or diag(evalsha_calls() - $e0 . ' calls');
    like(error_log_from($log0), qr/RLAAS0081: RLaaSLease on is not used for policy lease-bytes: it counts bytes \(RLaaSCost bytes, cost=bytes\)/,
        '  the server says why (RLAAS0081)');
}

# ---------------------------------------- auto
# Quiet identities: each request its own identity's first, on one
# connection: one round trip each, and what the client is told is what
# it is told without leases (the same remaining, the same reset).
{
    my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 1);
    my (%seen, $calls, %records);
    for my $case (qw(quiet quietoff)) {
        my $e0 = evalsha_calls();
        my $r0 = local_identities($srv[0]);
        my @st;
        for my $k (1 .. 100) {
            my $u = uid("lease-q$k");
            my $res = $ua->get("http://$srv[0]{hp}/lease/$case", { headers => { 'X-User' => $u } });
            push @st, $res->{status};
            (my $rl = $res->{headers}{ratelimit} // '') =~ s/^"[^"]*"//;
            $seen{$case}{$rl}++;
        }
        $calls->{$case} = evalsha_calls() - $e0;
        $records{$case} = local_identities($srv[0]) - $r0;
        is(count_by(@st), '200 x100', "$case: 100 quiet identities, one request each: all admitted");
    }
    is($calls->{quiet}, 100, 'RLaaSLease auto: 100 quiet identities, one EVALSHA per request');
    is($calls->{quietoff}, 100, 'RLaaSLease off: the same, one EVALSHA per request');
    # a quiet identity is told apart in the child's own memory: no record
    # of it in the shared table (one second each before, the first
    # request of every identity)
    cmp_ok($records{quiet}, '<', 10, "RLaaSLease auto: the quiet identities left no record in the local table ($records{quiet} new)");
    is_deeply($seen{quiet}, $seen{quietoff}, 'and every client is told what it is told without leases (RateLimit)')
        or diag(explain(\%seen));
    is_deeply([keys %{$seen{quiet}}], [';r=49;t=72'], '  49 of 50 left, the gcra emission interval (72 s) to wait')
        or diag(explain(\%seen));
}
# where a lease can't apply under auto, it is not used, silently (the
# sliding log first: no case before it has been told about a log)
{
    my $log0 = error_log_size();
    # the sliding log's script loaded first (a NOSCRIPT counts as a call)
    one_connection('autolog', uid('lease-autolog-warm'), 1);
    my $e0 = evalsha_calls();
    my $m0 = lease_metrics();
    my @s = one_connection('autolog', uid('lease-autolog'), 10);
    is(count_by(@s), '200 x10', 'RLaaSLease auto, the sliding log: allowed');
    is(evalsha_calls() - $e0, 10, '  one round trip each, as without leases');
    is(delta($m0, lease_metrics(), 'rlaas_lease_fallbacks_total{reason="sliding_log"}'), 10,
        '  counted: rlaas_lease_fallbacks_total{reason="sliding_log"}');
    $e0 = evalsha_calls();
    @s = one_connection('autodry', uid('lease-autodry'), 10);
    is(count_by(@s), '200 x10', 'RLaaSLease auto, a dry run: allowed');
    is(evalsha_calls() - $e0, 10, '  one round trip each, as without leases');
    unlike(error_log_from($log0), qr/RLAAS0081/, '  and nothing said: a lease only where one applies (RLAAS0081 is for RLaaSLease on)');
}

# ---------------------------------------- configuration errors
{
    my ($rc, $out) = httpd_config_test("<Location /x>\nRLaaSStrategy sliding-window-algo\nRLaaSLease on\n</Location>\n");
    isnt($rc, 0, 'RLaaSLease on after a sliding log: apache2 -t fails');
    like($out, qr/RLaaSLease: invalid value 'on'.*sliding/, 'naming the directive, the value and why');
    ($rc, $out) = httpd_config_test("<Location /x>\nRLaaSLease on\nRLaaSStrategy sliding_log\n</Location>\n");
    isnt($rc, 0, 'a sliding log after RLaaSLease on: apache2 -t fails');
    like($out, qr/RLaaSStrategy: invalid value 'sliding_log'.*RLaaSLease on/, 'naming both directives and the value');
    ($rc, $out) = httpd_config_test("<Location /x>\nRLaaSLease sometimes\n</Location>\n");
    isnt($rc, 0, 'RLaaSLease sometimes: apache2 -t fails');
    like($out, qr/RLaaSLease: invalid value 'sometimes': expected auto, on or off/, 'naming the directive and the value');
    ($rc, $out) = httpd_config_test("<Location /x>\nRLaaSStrategy sliding_log\nRLaaSLease auto\n</Location>\n<Location /y>\nRLaaSLease auto\nRLaaSStrategy sliding_log\n</Location>\n");
    is($rc, 0, 'RLaaSLease auto with the sliding log, either order: accepted (a lease is used where it applies)') or diag($out);
    ($rc, $out) = httpd_config_test("<Location /x>\nRLaaSStrategy gcra\nRLaaSLease on\n</Location>\n<Location /y>\nRLaaSStrategy sliding-window-algo\nRLaaSLease off\n</Location>\n");
    is($rc, 0, 'RLaaSLease on with gcra, off with the sliding log: accepted') or diag($out);
}

$_->stop for @srv;

# A server of the two: a location per case, the same Redis; httpd's own
# process counts (40 clients at once).
sub start_server {
    my $docs = tempdir('rlaas-lease-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    make_path(catfile($docs, 'lease'));
    my $locs = '';
    for my $c (@cases) {
        my ($name, $st, $limit, $win, $lease, $extra) = @$c;
        open my $d, '>', catfile($docs, 'lease', $name) or die "$docs: $!";
        print $d "ok\n";
        close $d;
        $locs .= "<Location /lease/$name>\n    RLaaSLimit $limit\n    RLaaSWindow $win\n"
              . "    RLaaSStrategy $st\n    RLaaSKeyBy header:X-User\n    RLaaSZone lease-$name\n"
              . (($lease // 'on') eq 'default' ? '' : "    RLaaSLease " . ($lease // 'on') . "\n")
              . ($extra ? "    $extra\n" : '') . "</Location>\n";
    }
    return private_httpd(<<"EOC", docroot => $docs, one_child => 0, loglevel => 'notice');
RLaaSRedis 127.0.0.1:$ENV{RLAAS_TEST_REDIS_PORT}
RLaaSPolicy lease-pol-big 1000000 1h strategy=token key="header:X-User"
RLaaSPolicy lease-pol-slide 1000 1h strategy=sliding key="header:X-User"
RLaaSPolicy lease-pol-10s 1 10s strategy=fixed key="header:X-User"
RLaaSPolicy lease-pol-fast 1000000 2s strategy=token key="header:X-User"
RLaaSPolicy lease-pol-share 20 1d strategy=fixed key="header:X-User"
RLaaSRedisTimeout 2s
RLaaSLocalSize 1M
KeepAliveTimeout 30
MaxKeepAliveRequests 0
<Location /metrics>
    SetHandler rlaas-metrics
    RLaaSMetrics on
</Location>
$locs
EOC
}

done_testing();
