# Counting by outcome, and bans (issue 18): RLaaSCountIf charges every
# request at the check and gives the unit back after the response unless
# the expression holds (401s, 404s), so a burst gets at most the limit of
# requests through and every failure stays counted (issue 24; the burst
# tests proper are in t/countif.t); RLaaSBan refuses an
# identity once denied, for its duration whatever the counters say,
# escalating, one client's ban never another's, shared by every server
# that shares the zone; on Redis and on the local engine.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes ();
use RLaaS::Test qw(:all);
use Apache::TestRLaaS ();

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $LV = 'rlaas_oc_local';
my $r = redis();

sub get {
    my ($path, $user, %o) = @_;
    return req($path, h => { 'X-User' => $user }, %o);
}
sub codes_of { join ' ', map { $_->code } @_ }
sub remaining { (Apache::TestRLaaS::ratelimit_fields($_[0]) || {})->{remaining} }
sub retry_after { Apache::TestRLaaS::retry_after($_[0]) }
# sleep_until(T): sleep until time T, at once if it is past (Time::HiRes
# dies of a negative sleep, and a loaded machine can be late)
sub sleep_until { my $d = $_[0] - Time::HiRes::time(); Time::HiRes::sleep($d) if $d > 0 }

# A request whose unit is given back after its response: the client can
# read that response before the give-back lands, so the next request
# waits for it (a give-back that never comes fails the test that follows).
sub get_given_back {
    my $m0 = metrics();
    my $res = get(@_);
    Apache::TestRLaaS::wait_for(sub { mdelta($m0, metrics(), 'rlaas_countif_refunds_total') >= 1 }, 5);
    return $res;
}

# a sliding log's units (ZSET members), as charged after the responses
sub zcard { $r->cmd('ZCARD', $_[0]) }
sub settles { my ($f, $want) = @_; Apache::TestRLaaS::wait_for(sub { $f->() == $want }, 5) ? $want : $f->() }

# ---------------------------------------------------------------- 401s
subtest 'Basic auth: only 401s count; the check refuses without consuming' => sub {
    my ($alice, $mallory) = (uid('oc-alice'), uid('oc-mal'));
    my $K = ukey('oc-auth', $mallory);
    my @ok = map { get('/oc/auth/x', $alice, auth => ['bob', 'bob-pw']) } 1 .. 5;
    is codes_of(@ok), '200 200 200 200 200', 'five good logins: all served';
    is settles(sub { $r->cmd('EXISTS', ukey('oc-auth', $alice)) }, 0), 0, 'and none counted (each given back)';
    my @bad = map { get('/oc/auth/x', $mallory, auth => ['bob', "wrong$_"]) } 1 .. 3;
    is codes_of(@bad), '401 401 401', 'three failed logins answered 401';
    is settles(sub { zcard($K) }, 3), 3, 'each counted once';
    my $res = get('/oc/auth/x', $mallory, auth => ['bob', 'bob-pw']);
    is $res->code, 429, 'after 3 failures even the right password gets 429';
    is status_of($res), 'denied', 'RLAAS_STATUS denied';
    ok defined $res->header('Retry-After'), 'with Retry-After';
    get('/oc/auth/x', $mallory, auth => ['bob', 'wrong']) for 1 .. 3;
    is zcard($K), 3, 'refused requests consume nothing';
};

# changed by design (issue 24): the check charges, so a burst gets the
# limit through, no more, and the counter never passes it
subtest 'N concurrent failures against a limit of 3: 3 served, all counted' => sub {
    my $u = uid('oc-par');
    my $K = ukey('oc-auth', $u);
    my $m0 = metrics();
    my @c = Apache::TestRLaaS::parallel_codes(6, '/oc/auth/x',
        h => { 'X-User' => $u }, auth => ['bob', 'nope']);
    my $n401 = grep { $_ == 401 } @c;
    is $n401, 3, "the limit served, no more ($n401 of 6: @c)";
    is scalar(grep { $_ != 401 && $_ != 429 } @c), 0, 'nothing but 401 and 429';
    is settles(sub { zcard($K) }, $n401), $n401, "the counter holds every failure served ($n401)";
    is get('/oc/auth/x', $u, auth => ['bob', 'bob-pw'])->code, 429, 'the next check refuses';
    # counted when each response is done (log_transaction): waited for
    ok Apache::TestRLaaS::wait_for(sub { mdelta($m0, metrics(), 'rlaas_countif_charges_total') >= $n401 }, 5),
        'rlaas_countif_charges_total counts the charges';
};

# ---------------------------------------------------------------- 404s
# A refund made early in a fixed window, behind a Redis budget (5s) longer
# than the time into the window (under 2.5s): the credit's age counts the
# budget and reaches back into the window before, where nothing can be
# given back; the window the charge was made in, which outlasts that age,
# gets it.
subtest 'redis: a refund early in a fixed window meets that window, whatever the budget' => sub {
    my $u = uid('oc-budget');
    wait_fixed_window(10_000, 7_500);
    is codes_of(map { get_given_back('/oc/files/ok.txt', $u, vhost => 'rlaas_oc_budget') } 1 .. 6),
        '200 200 200 200 200 200', 'six requests for a file that exists, limit 3: never counted';
    is codes_of(map { get("/oc/files/missing-$_.php", $u, vhost => 'rlaas_oc_budget') } 1 .. 3),
        '404 404 404', 'three misses';
    is get('/oc/files/ok.txt', $u, vhost => 'rlaas_oc_budget')->code, 429, 'then the existing file: 429';

    # a burst: 50 at once, early in a window; every charge of those served
    # is given back, and the limit is whole again for the misses after them
    my $b = uid('oc-budget-burst');
    wait_fixed_window(10_000, 7_500);
    my $m0 = metrics();
    my @c = Apache::TestRLaaS::parallel_codes(50, '/oc/files/ok.txt', vhost => 'rlaas_oc_budget',
        h => { 'X-User' => $b });
    my $served = grep { $_ == 200 } @c;
    is scalar(grep { $_ != 200 && $_ != 429 } @c), 0, "50 at once: 200 or 429 ($served served)";
    cmp_ok $served, '>=', 3, '  at least the limit served';
    ok Apache::TestRLaaS::wait_for(sub { mdelta($m0, metrics(), 'rlaas_countif_refunds_total') >= $served }, 5),
        "  each of the $served given back";
    is codes_of(map { get("/oc/files/missing-$_.php", $b, vhost => 'rlaas_oc_budget') } 1 .. 3),
        '404 404 404', '  then three misses, all served: nothing of the burst was kept';
    is get('/oc/files/ok.txt', $b, vhost => 'rlaas_oc_budget')->code, 429, '  and they are counted';
};

for my $be (['redis', undef], ['local', $LV]) {
    my ($name, $vh) = @$be;
    subtest "$name: only 404s count; after 3 misses even a file that exists is refused" => sub {
        my $u = uid("oc-404-$name");
        my @o = $vh ? (vhost => $vh) : ();
        is codes_of(map { get_given_back('/oc/files/ok.txt', $u, @o) } 1 .. 6), '200 200 200 200 200 200',
            'six requests for a file that exists: never counted';
        is codes_of(map { get("/oc/files/missing-$_.php", $u, @o) } 1 .. 3), '404 404 404', 'three misses';
        my $res;
        Apache::TestRLaaS::wait_for(sub { ($res = get('/oc/files/ok.txt', $u, @o))->code == 429 }, 5);
        is $res->code, 429, 'then the existing file: 429';
        is get('/oc/files/ok.txt', uid('oc-other'), @o)->code, 200, 'another client is served';
    };

    subtest "$name: concurrent failures leave the counter at N" => sub {
        my $u = uid("oc-many-$name");
        my @o = $vh ? (vhost => $vh) : ();
        my @c = Apache::TestRLaaS::parallel_codes(6, '/oc/many/nothing-here', h => { 'X-User' => $u }, @o);
        is "@c", '404 404 404 404 404 404', 'six concurrent misses, under a limit of 10';
        # a request that is served (200) counts while in flight and gives
        # its unit back after: it shows 10 - 6 - 1 (changed by design,
        # issue 24: it showed 10 - 6)
        my $rem = remaining(get_given_back('/oc/many/ok.txt', $u, @o)) // -1;
        is $rem, 3, 'remaining 3: six charged, and this one while it is served';
        $rem = remaining(get('/oc/many/ok.txt', $u, @o)) // -1;
        is $rem, 3, 'again 3: the last one\'s unit was given back';
        my @more = map { get("/oc/many/miss$_", $u, @o)->code } 1 .. 5;
        is "@more", '404 404 404 404 429', 'four more misses served, then refused';
    };
}

subtest 'behind an ErrorDocument, the error status counts' => sub {
    my $u = uid('oc-errdoc');
    is codes_of(map { get("/oc/errdoc/miss$_", $u) } 1 .. 3), '404 404 404', 'three misses, answered by the error document';
    my $res;
    Apache::TestRLaaS::wait_for(sub { ($res = get('/oc/errdoc/ok.txt', $u))->code == 429 }, 5);
    is $res->code, 429, 'then 429';
};

subtest 'a policy with countif=: only its 404s count' => sub {
    my $u = uid('oc-pol');
    is codes_of(map { get('/oc/pol/ok.txt', $u) } 1 .. 5), '200 200 200 200 200', 'files that exist: not counted';
    is codes_of(map { get("/oc/pol/miss$_", $u) } 1 .. 3), '404 404 404', 'three misses';
    my $res;
    Apache::TestRLaaS::wait_for(sub { ($res = get('/oc/pol/ok.txt', $u))->code == 429 }, 5);
    is $res->code, 429, 'then 429 (a token bucket emptied by the misses\' charges)';
    is get('/oc/pol/ok.txt', uid('oc-pol-b'))->code, 200, 'another client is served';
};

# ---------------------------------------------------------------- bans
subtest 'a tenant\'s RLaaSCountIf never exempts the host\'s enforced policy' => sub {
    my $u = uid('oc-tenant');
    my @o = (h => { 'X-User' => $u });
    # the .htaccess counts nothing (its condition is never true): alone,
    # its own limit of 100 never bites...
    is join(' ', map { hit('/htaccess/countif/ok.txt', @o) } 1 .. 4), '200 200 200 200',
        'main server: the tenant\'s own limit counts nothing';
    is status_of(req('/htaccess/countif/ok.txt', @o)), 'allowed', '... yet the .htaccess limit decides (it is read)';
    # ... but the host's enforced floor still counts every request
    my $v = uid('oc-tenant-floor');
    is join(' ', map { hit('/htaccess/countif/ok.txt', h => { 'X-User' => $v }, vhost => 'rlaas_oc_floor') } 1 .. 3),
        '200 200 429', 'a host enforcing 2 a minute: the third is refused whatever the .htaccess counts';
};

subtest 'only the section\'s own limit bans: another policy denying does not' => sub {
    my ($u, $k1, $k2) = (uid('oc-bp'), uid('oc-bp-k1'), uid('oc-bp-k2'));
    my @r = map { req('/oc/banpol/x', h => { 'X-User' => $u, 'X-Key' => $k1 }) } 1 .. 2;
    is codes_of(@r), '200 429', 'the policy keyed by X-Key (1 a minute) denies the second';
    isnt status_of($r[1]), 'banned', '... as a limit, not a ban';
    my $res = req('/oc/banpol/x', h => { 'X-User' => $u, 'X-Key' => $k2 });
    is $res->code, 200, 'the same X-User with another key: served, not banned';
    is $r->cmd('EXISTS', ukey('oc-banpol', $u) . ':ban'), 0, 'no ban record for the X-User identity';
};

subtest 'RLaaSLease with RLaaSBan: every decision reads the ban' => sub {
    my $v = uid('oc-lb-other');
    # gcra, 2 per 1 s: the third is denied when it comes within 500 ms of
    # the first; a run that a loaded machine made slower (0.4 s) is made
    # again with a new identity, at most 3 runs, and the first on time is
    # judged (the last if none was)
    my ($u, $t1, @r);
    for my $run (1 .. 3) {
        $u = uid('oc-lb');
        my $t0 = Time::HiRes::time();
        @r = (get('/oc/leaseban/x', $u));
        $t1 = Time::HiRes::time();    # the window began by now
        push @r, map { get('/oc/leaseban/x', $u) } 1 .. 2;
        my $took = Time::HiRes::time() - $t0;
        last if $took <= 0.4;
        diag(sprintf 'lease and ban: run %d took %.2fs, more than 0.4s: %s', $run, $took,
            $run < 3 ? 'made again' : 'judged as it is');
    }
    is codes_of(@r), '200 200 429', 'limit 2 per 1 s: the third is denied';
    sleep_until($t1 + 1.3);
    my $res = get('/oc/leaseban/x', $u);
    is $res->code, 429, 'after the window: still refused';
    is status_of($res), 'banned', '... by the ban a lease would have skipped';
    is get('/oc/leaseban/x', $v)->code, 200, 'another client: served';
};

for my $be (['redis', undef], ['local', $LV]) {
    my ($name, $vh) = @$be;
    subtest "$name: a ban outlasts the window, spares others, then lifts" => sub {
        my ($u, $v) = (uid("oc-ban-$name"), uid("oc-bystander-$name"));
        my @o = $vh ? (vhost => $vh) : ();
        my $m0 = metrics();
        my @r = map { get('/oc/ban/x', $u, @o) } 1 .. 3;
        my $tb = Time::HiRes::time();    # the ban began by now, with the third
        is codes_of(@r), '200 200 429', 'limit 2 per 1 s: the third is denied';
        is retry_after($r[2]), 3, 'Retry-After: the 3 s ban';
        if (!$vh) {
            my $pttl = $r->cmd('PTTL', ukey('oc-ban', $u) . ':ban');
            ok $pttl > 1500 && $pttl <= 3000, "the ban record in Redis, ending in 3 s ($pttl ms)";
        }
        is get('/oc/ban/x', $v, @o)->code, 200, 'another client: served';
        # the window (of the first two) over, the ban (3 s from the third)
        # 1.7 s from its end at most
        sleep_until($tb + 1.3);
        my $res = get('/oc/ban/x', $u, @o);
        is $res->code, 429, 'after the window (counters would allow): still refused';
        is status_of($res), 'banned', 'RLAAS_STATUS banned';
        my $ra = retry_after($res);
        ok defined $ra && $ra >= 1 && $ra <= 2, 'Retry-After: when the ban ends (' . ($ra // 'none') . ')';
        my $f = Apache::TestRLaaS::ratelimit_fields($res) || {};
        ok defined $f->{reset} && $f->{reset} >= 1 && $f->{reset} <= 2, "RateLimit t= says so too ($f->{fields})";
        is get('/oc/ban/x', $v, @o)->code, 200, 'the bystander is never banned';
        sleep_until($tb + 3.2);
        is get('/oc/ban/x', $u, @o)->code, 200, 'after 3 s the ban lifts';
        my $m1 = metrics();
        ok mdelta($m0, $m1, 'rlaas_bans_total') >= 1, 'rlaas_bans_total counted it';
        ok mdelta($m0, $m1, 'rlaas_ban_refusals_total') >= 1, 'rlaas_ban_refusals_total counted the refusal';
    };

    subtest "$name: escalation, 1 s then 3 s" => sub {
        my $u = uid("oc-esc-$name");
        my @o = $vh ? (vhost => $vh) : ();
        my @r = map { get('/oc/esc/x', $u, @o) } 1 .. 2;
        is codes_of(@r), '200 429', 'limit 1: the second is denied';
        is retry_after($r[1]), 1, 'first ban: 1 s';
        Time::HiRes::sleep(1.2);
        @r = map { get('/oc/esc/x', $u, @o) } 1 .. 2;
        is codes_of(@r), '200 429', 'the ban and the window over: served, then denied again';
        is retry_after($r[1]), 3, 'second ban: 3 x 1 s';
        Time::HiRes::sleep(1.2);
        my $res = get('/oc/esc/x', $u, @o);
        is $res->code, 429, 'still banned after 1.2 s';
        is status_of($res), 'banned', 'by the ban';
    };
}

subtest "the README's WordPress recipe, as written" => sub {
    my $K = rkey('wp-login', '127.0.0.1');
    my $clean = sub { $r->cmd('DEL', $K, "$K:ban") };
    $clean->();
    my $login = sub { req('/oc/wp/wp-login.php', method => 'POST', content => "log=bob&pwd=$_[0]",
        h => { 'Content-Type' => 'application/x-www-form-urlencoded' }) };
    is codes_of(map { req('/oc/wp/wp-login.php') } 1 .. 3), '200 200 200', 'the login page: never counted';
    is codes_of(map { $login->('right') } 1 .. 2), '302 302', 'logins that succeed: never counted';
    is settles(sub { $r->cmd('EXISTS', $K) }, 0), 0, 'nothing counted yet (each given back)';
    is codes_of(map { $login->("wrong$_") } 1 .. 5), '200 200 200 200 200', 'five failed logins (200, the form again)';
    my $res;
    Apache::TestRLaaS::wait_for(sub { ($res = $login->('right'))->code == 429 }, 5);
    is $res->code, 429, 'the sixth attempt, right password or not: 429';
    is retry_after($res), 900, 'Retry-After: 900 (the 15 minute ban)';
    my $pttl = $r->cmd('PTTL', "$K:ban");
    ok $pttl > 86_400_000 && $pttl <= 86_400_000 + 900_000, "its record remembered a day past the ban ($pttl ms)";
    is status_of(req('/oc/wp/wp-login.php')), 'banned', 'even the login page: banned';
    $clean->();
};

subtest 'two servers sharing a zone: a ban made on one is enforced by the other at once' => sub {
    my $u = uid('oc-shared');
    is codes_of(map { get('/oc/shared/x', $u) } 1 .. 2), '200 429', 'banned on this server (limit 1)';
    my $res = get('/oc/shared/x', $u, vhost => 'rlaas_oc2');
    is $res->code, 429, 'its virtual host rlaas_oc2 (limit 100) refuses too';
    is status_of($res), 'banned', 'by the shared ban';
    is get('/oc/shared/x', uid('oc-shared-b'), vhost => 'rlaas_oc2')->code, 200, 'another client is served there';
};

subtest 'two httpd servers on one Redis: a ban made by one is enforced by the other' => sub {
    my $port = $ENV{RLAAS_TEST_REDIS_PORT} or plan skip_all => 'the suite\'s Redis port is not known';
    my $h = private_httpd(<<"EOC");
RLaaSRedis 127.0.0.1:$port
RLaaSRedisTimeout 2s
<Location /oc/shared>
    RLaaSLimit 100
    RLaaSWindow 1s
    RLaaSZone oc-shared
    RLaaSKeyBy header:X-User
    RLaaSBan 5s
</Location>
EOC
    my ($u, $v) = (uid('oc-2httpd'), uid('oc-2httpd-b'));
    is $h->get('/oc/shared/x', { 'X-User' => $v }), 200, 'the second httpd serves';
    is codes_of(map { get('/oc/shared/x', $u) } 1 .. 2), '200 429', 'the first httpd bans it (limit 1)';
    is $h->get('/oc/shared/x', { 'X-User' => $u }), 429, 'the second httpd (limit 100) refuses it at once';
    is $h->get('/oc/shared/x', { 'X-User' => $v }), 200, 'and still serves another client';
};

done_testing;
