# Counting by outcome under a burst, and bans (issue 24, points 7, 8 and
# 17), on Redis and on the local engine:
# - RLaaSCountIf charges at the check and gives the unit back when the
#   condition turns out false: 50 concurrent failed logins against a limit
#   of 5 reach the (slow) password check 5 times at most, over HTTP/1.1 and
#   over 40 streams of one HTTP/2 connection; sequential attempts get 429
#   at the sixth; a successful login does not count;
# - RLaaSBan in a section keyed by the user bans the user, not the
#   address: bob at alice's address is served, alice at a new address is
#   refused, that address is not banned, and the console lifts alice's ban;
# - a ban is honoured by every section sharing the zone and identity,
#   RLaaSBan or not, and by no section of another zone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Spec::Functions qw(catfile);
use Time::HiRes ();
use RLaaS::Test qw(:all);
use Apache::TestRLaaS ();

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $r = redis();
my $LV = 'rlaas_ci_local';
my @BACKENDS = (['redis', undef], ['local', $LV]);
my $CHECKS = catfile(t_logs(), 'countif-checks.log');

sub codes_of { join ' ', map { $_->code } @_ }
sub login {
    my ($strategy, $user, $pwd, @o) = @_;
    return req("/ci/login/$strategy", method => 'POST', content => "log=x&pwd=$pwd",
        h => { 'X-User' => $user, 'Content-Type' => 'application/x-www-form-urlencoded' }, @o);
}
# the password checks the login form made for this client
sub checks {
    my ($user) = @_;
    open my $fh, '<', $CHECKS or return 0;
    return scalar grep { chomp; $_ eq $user } <$fh>;
}
sub tally { my %n; $n{$_}++ for @_; join ' ', map { "$_ x$n{$_}" } sort keys %n }

# ---------------------------------------------------------------- point 7
for my $be (@BACKENDS) {
    my ($name, $vh) = @$be;
    my @o = $vh ? (vhost => $vh) : ();
    for my $s (qw(sliding_log fixed gcra)) {
        subtest "$name, $s: 50 concurrent failed logins, limit 5: at most 5 password checks" => sub {
            wait_fixed_window(3_600_000, 5000) if $s eq 'fixed';
            my $u = uid("ci-burst-$name-$s");
            my @c = parallel_codes(50, "/ci/login/$s", method => 'POST', content => 'log=x&pwd=wrong',
                h => { 'X-User' => $u, 'Content-Type' => 'application/x-www-form-urlencoded' }, @o);
            my $n401 = grep { $_ == 401 } @c;
            ok $n401 >= 1 && $n401 <= 5, "at most the limit reached the check: $n401 (" . tally(@c) . ')';
            is scalar(grep { $_ != 401 && $_ != 429 } @c), 0, 'the others refused with 429';
            ok checks($u) <= 5, 'the login form says so too: ' . checks($u) . ' checks';
            is login($s, $u, 'right', @o)->code, 429, 'then even the right password: 429 (the failures stand)';
        };
    }

    subtest "$name: sequential failures: the sixth attempt gets 429" => sub {
        my $u = uid("ci-seq-$name");
        is codes_of(map { login('sliding_log', $u, "wrong$_", @o) } 1 .. 6), '401 401 401 401 401 429',
            'five 401s, then 429';
        is checks($u), 5, 'five password checks';
    };

    for my $s (qw(sliding_log fixed gcra)) {
        subtest "$name, $s: a successful login gives its unit back" => sub {
            wait_fixed_window(3_600_000, 5000) if $s eq 'fixed';
            my $u = uid("ci-ok-$name-$s");
            my $m0 = metrics();
            is codes_of(map { login($s, $u, "wrong$_", @o) } 1 .. 4), '401 401 401 401', 'four failures';
            is codes_of(map { login($s, $u, 'right', @o) } 1 .. 3), '200 200 200', 'three successes: never refused';
            is codes_of(map { login($s, $u, 'wrong', @o) } 1 .. 2), '401 429',
                'the fifth failure is checked, the sixth attempt refused';
            my $m1 = metrics();
            ok mdelta($m0, $m1, 'rlaas_countif_refunds_total') >= 3, 'rlaas_countif_refunds_total counts the refunds';
            is mdelta($m0, $m1, 'rlaas_countif_refunds_lost_total'), 0, 'none lost';
        };
    }
}

# one policy, then two (the section's and a policy's, each counting 404s):
# each refund goes back into its own policy's portion
for my $c (['/ci/lease', 'one policy'], ['/ci/lease2', 'two policies']) {
    my ($path, $what) = @$c;
    subtest "redis, RLaaSLease on, $what: a refund of a unit spent from a portion goes back into it" => sub {
        my $u = uid("ci-lease-" . length $path);
        my %h = (h => { 'X-User' => $u });
        my $evalsha = sub { ($r->cmd('INFO', 'commandstats') =~ /cmdstat_evalsha:calls=(\d+)/)[0] // 0 };
        my $m0 = metrics();
        my $e0 = $evalsha->();
        my @ok = map { req("$path/ok", %h)->code } 1 .. 200;
        # the last refund is made once its response is done
        # (log_transaction): waited for, then counted exactly
        Apache::TestRLaaS::wait_for(sub { mdelta($m0, metrics(), 'rlaas_countif_refunds_total') >= 200 }, 5);
        my $calls = $evalsha->() - $e0;
        my $m1 = metrics();
        is scalar(grep { $_ == 200 } @ok), 200, '200 successes, limit 40: none refused (' . tally(@ok) . ')';
        is mdelta($m0, $m1, 'rlaas_countif_refunds_total'), 200, 'each given back';
        is mdelta($m0, $m1, 'rlaas_countif_refunds_lost_total'), 0, 'none lost';
        cmp_ok mdelta($m0, $m1, 'rlaas_lease_spends_total'), '>=', 150, 'most decided from portions held here';
        # a refund sent to Redis is an EVALSHA of its own (lua/credit.lua)
        cmp_ok $calls, '<', 100, "given back into the portions held here: $calls EVALSHA calls for 200 requests";
        my @c = map { req("$path/missing", %h)->code } 1 .. 45;
        my $n404 = grep { $_ == 404 } @c;
        cmp_ok $n404, '<=', 40, "then 45 failures: at most the limit counted and served ($n404)";
        cmp_ok $n404, '>=', 36, '  and nearly all of it: the successes left nothing charged';
        is scalar(grep { $_ != 404 && $_ != 429 } @c), 0, '  the others refused with 429 (' . tally(@c) . ')';

        my $b = uid("ci-lease-burst-" . length $path);
        my @burst = parallel_codes(50, "$path/missing", h => { 'X-User' => $b });
        my $nb = grep { $_ == 404 } @burst;
        ok $nb >= 1 && $nb <= 40, "50 concurrent failures, limit 40: at most 40 counted and served ($nb; " . tally(@burst) . ')';
        is scalar(grep { $_ != 404 && $_ != 429 } @burst), 0, '  the others refused with 429';
    };
}

subtest 'redis: the counter holds the failures only, a success leaves nothing' => sub {
    my $u = uid('ci-count');
    my $K = ukey('ci-login-sl', $u);
    login('sliding_log', $u, 'right');
    # the refund follows the response: wait for it
    ok wait_for(sub { !$r->cmd('EXISTS', $K) }, 5), 'a success: its charge given back, the key gone';
    login('sliding_log', $u, 'wrong') for 1 .. 2;
    is $r->cmd('ZCARD', $K), 2, 'two failures: two units';
};

SKIP: {
    skip 'mod_http2 does not serve HTTP/2 under prefork', 1 if mpm() eq 'prefork';
    my $curl = `sh -c 'command -v curl' 2>/dev/null`;
    chomp $curl;
    skip 'no curl with HTTP/2', 1 unless $curl && `'$curl' --version` =~ /\bHTTP2\b/;
    subtest 'HTTP/2: 40 streams of one connection, limit 5: at most 5 password checks' => sub {
        my $u = uid('ci-h2');
        my $hp = Apache::Test::config()->{vhosts}{rlaas_ci_h2}{hostport};
        # the first request upgrades the connection (h2c), the others are
        # its streams (curl's prior knowledge fails to reuse a connection)
        my @urls = map { "-o /dev/null 'http://$hp/ci/login/sliding_log?pwd=wrong&n=$_'" } 1 .. 40;
        my $out = `'$curl' -s --http2 --parallel --parallel-max 40 -H 'X-User: $u' -w '%{http_version} %{num_connects} %{http_code}\\n' @urls`;
        my @l = map { [split ' '] } split /\n/, $out;
        is scalar(@l), 40, '40 answers';
        is join(' ', sort { $a <=> $b } keys %{ { map { $_->[0] => 1 } @l } }), '2', 'all over HTTP/2';
        my $conns = 0;
        $conns += $_->[1] for @l;
        is $conns, 1, 'on one connection';
        my @c = map { $_->[2] } @l;
        my $n401 = grep { $_ == 401 } @c;
        ok $n401 >= 1 && $n401 <= 5, "at most the limit reached the check: $n401 (" . tally(@c) . ')';
        is scalar(grep { $_ != 401 && $_ != 429 } @c), 0, 'the others refused with 429';
        ok checks($u) <= 5, 'the login form says so too: ' . checks($u) . ' checks';
    };
}

subtest 'a refund that gets no answer is never sent again: counted lost, logged' => sub {
    my $rport = $ENV{RLAAS_TEST_REDIS_PORT} or plan skip_all => 'the suite\'s Redis port is not known';
    require RLaaS::Relay;
    my $rp = free_port();
    my $relay = RLaaS::Relay->start(port => $rp, target => $rport);
    my $cgi = catfile(repo_top(), 't', 'htdocs', 'countif', 'login.cgi');
    chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
    $libexec ||= '/usr/lib/apache2/modules';
    my $h = private_httpd(<<"EOC");
LoadModule cgid_module $libexec/mod_cgid.so
ScriptSock cgid.sock
RLaaSRedis 127.0.0.1:$rp
RLaaSRedisTimeout 300ms
<VirtualHost *:*>
    Alias /slow "$cgi"
    <Location /slow>
        Options +ExecCGI
        SetHandler cgi-script
        RLaaSLimit 5
        RLaaSWindow 60s
        RLaaSZone ci-lost
        RLaaSKeyBy header:X-User
        RLaaSCountIf "%{REQUEST_STATUS} == 401"
    </Location>
    <Location /metrics>
        SetHandler rlaas-metrics
        RLaaSMetrics on
    </Location>
</VirtualHost>
EOC
    my $u = uid('ci-lost');
    my $lost = sub {
        require HTTP::Tiny;
        my $res = HTTP::Tiny->new(timeout => 10)->get('http://127.0.0.1:' . $h->port . '/metrics');
        return $res->{content} =~ /^rlaas_countif_refunds_lost_total (\d+)/m ? $1 : -1;
    };
    is $lost->(), 0, 'nothing lost yet';
    # a success that takes a second: while it is served, Redis' answers
    # stop coming (the relay passes the commands, drops the replies)
    my $pid = fork // die "fork: $!";
    if (!$pid) { $h->get('/slow?pwd=right&slow=1', { 'X-User' => $u }); require POSIX; POSIX::_exit(0) }
    Time::HiRes::sleep(0.5);
    is $r->cmd('ZCARD', ukey('ci-lost', $u)), 1, 'the check charged the request';
    $relay->mode('cut');
    waitpid $pid, 0;
    ok wait_for(sub { $h->log =~ /RLAAS0150/ }, 5), 'RLAAS0150 says the charge could not be given back';
    $relay->mode('pass');
    ok wait_for(sub { $lost->() == 1 }, 5), 'rlaas_countif_refunds_lost_total: 1';
    like $h->log, qr/RLAAS0150: RLaaSCountIf: a charge made at the check could not be given back \(Redis (timeout|io)/,
        '... after one try: a refund that was sent is never sent again';
};

# ---------------------------------------------------------------- point 8
sub console {
    my ($vh, %f) = @_;
    my $origin = 'http://' . Apache::TestRLaaS::hostport($vh);
    my $res = req('/ci/console', method => 'POST', vhost => $vh,
        content => join('&', map { "$_=$f{$_}" } sort keys %f),
        h => { 'Content-Type' => 'application/x-www-form-urlencoded', Accept => 'application/json', Origin => $origin });
    return $res;
}

for my $be (['redis', 'rlaas_ci_ban'], ['local', $LV]) {
    my ($name, $vh) = @$be;
    subtest "$name: a ban in a section keyed by the user bans the user, not the address" => sub {
        my ($A1, $A2) = ('198.51.100.7', '198.51.100.' . (10 + int(rand(200))));
        my $get = sub { my ($user, $pwd, $ip) = @_;
            req('/ci/admin', vhost => $vh, auth => [$user, $pwd], h => { 'X-Forwarded-For' => $ip }) };
        # a clean start: alice and bob are fixed names
        for my $id ('alice', 'bob') {
            console($vh, action => $_, zone => 'ci-admin', id => $id) for qw(reset unban);
        }
        is codes_of(map { $get->('alice', "wrong$_", $A1) } 1 .. 4), '401 401 401 429',
            'alice at A1: three wrong passwords, then 429 (banned)';
        is $get->('alice', 'alice-pw', $A1)->code, 429, 'alice with her right password: still refused';
        is status_of($get->('alice', 'alice-pw', $A1)), 'banned', '... by the ban';
        if ($name eq 'redis') {
            is $r->cmd('EXISTS', rkey('ci-admin', 'alice') . ':ban'), 1, "the ban is alice's";
            is $r->cmd('EXISTS', rkey('ci-admin', fallback($A1)) . ':ban'), 0, 'not the address\'s';
        }
        is $get->('bob', 'bob-pw', $A1)->code, 200, 'bob at the same address, right password: served';
        my $res = $get->('alice', 'alice-pw', $A2);
        is $res->code, 429, 'alice at a new address: refused';
        is status_of($res), 'banned', '... by her ban';
        is $get->('bob', 'bob-pw', $A2)->code, 200, 'the new address is not banned: bob is served there';
        is $r->cmd('EXISTS', rkey('ci-admin', fallback($A2)) . ':ban'), 0, 'no ban record for it'
            if $name eq 'redis';
        $res = console($vh, action => 'unban', zone => 'ci-admin', id => 'alice');
        is $res->code, 200, 'the console: unban alice' or diag $res->content;
        like $res->content, qr/"changed":\s*1/, '... finds her ban and lifts it';
        console($vh, action => 'reset', zone => 'ci-admin', id => 'alice');
        is $get->('alice', 'alice-pw', $A2)->code, 200, 'alice is served again';
    };
}

# ---------------------------------------------------------------- point 17
for my $be (@BACKENDS) {
    my ($name, $vh) = @$be;
    my @o = $vh ? (vhost => $vh) : ();
    subtest "$name: a ban is honoured by every section of its zone, RLaaSBan or not" => sub {
        my ($u, $v) = (uid("ci-zone-$name"), uid("ci-zone-by-$name"));
        my $get = sub { req("/ci/zone/$_[0]", h => { 'X-User' => $_[1] }, @o) };
        is $get->('b', $u)->code, 200, 'section b (same zone, no RLaaSBan) serves u';
        # the zone's counter is shared: b's request counted
        is codes_of(map { $get->('a', $u) } 1 .. 2), '200 429', 'section a (limit 2, RLaaSBan) bans u';
        my $res = $get->('b', $u);
        is $res->code, 429, 'section b refuses u now';
        is status_of($res), 'banned', '... by the ban';
        is $get->('c', $u)->code, 200, 'section c (another zone) serves u';
        is $get->('b', $v)->code, 200, 'section b serves another client';
    };
}

done_testing;
