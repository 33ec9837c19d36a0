package RLaaS::Console;
# The operator's console (SetHandler rlaas-admin) as the tests speak to
# it: the main server's <Location /adm/console> in t/conf/x-admin.conf.in
# (Basic auth, user carol), which every virtual host inherits.
#
#   use RLaaS::Console qw(:all);
#   my ($j, $text) = console_json(vhost => 'rlaas_adm_local');
#   my $res = post({ action => 'reset', zone => 'adm-user', id => $u });
#   is(result($res)->{changed}, 1);
#   console_roundtrip(vhost => 'rlaas_tls', backend => 'redis', label => 'TLS',
#                     limit => '/tls/adm/lim', zone => 'tls-adm',
#                     ban => '/tls/adm/ban', banzone => 'tls-admban');
#
# console_roundtrip is the one test of the console's actions and its list
# of bans that t/admin.t (plain Redis, the local engine), t/redis_tls.t,
# t/sentinel.t and t/cluster.t each run against their backend.
use strict;
use warnings;

use Exporter 'import';
use JSON::PP ();
use Time::HiRes ();
use Test::More ();
use RLaaS::Test qw(req codes uid ukey rkey tseg status_of parallel_codes);

our @EXPORT_OK = qw(
    $CONSOLE @CAROL origin console_json post result user_codes banned_pair
    console_roundtrip
);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

our $CONSOLE = '/adm/console';
our @CAROL = (auth => ['carol', 'carol-pw']);

# origin(VHOST): the console's own origin (the main server's: VHOST undef)
sub origin { 'http://' . Apache::TestRLaaS::hostport($_[0]) }

# console_json(OPTIONS): the JSON page, decoded, and its text; dies unless
# it answers 200. OPTIONS as req()'s (vhost => ...).
sub console_json {
    my (%o) = @_;
    my $res = req($CONSOLE, @CAROL, h => { Accept => 'application/json' }, %o);
    die "console: " . $res->status_line . "\n" . $res->content unless $res->code == 200;
    return (JSON::PP::decode_json($res->content), $res->content);
}

# post(FIELDS, OPTIONS): a console action, as its page's form sends it.
# OPTIONS: vhost, h (headers added to the form's own, or removed when
# undef), and req()'s (auth => undef: no credentials).
sub post {
    my ($fields, %o) = @_;
    my $vhost = delete $o{vhost};
    my %h = ('Content-Type' => 'application/x-www-form-urlencoded',
             Accept => 'application/json', Origin => origin($vhost));
    %h = (%h, %{ delete $o{h} || {} });
    delete $h{$_} for grep { !defined $h{$_} } keys %h;
    my $body = join '&', map {
        my $v = $fields->{$_};
        $v =~ s/([^A-Za-z0-9_.~-])/sprintf '%%%02X', ord $1/ge;
        "$_=$v"
    } sort keys %$fields;
    return req({ path => $CONSOLE, method => 'POST', content => $body,
                 headers => \%h, vhost => $vhost, @CAROL, %o });
}

# result(RESPONSE): an action's JSON answer, or {raw => its text}
sub result { my $c = $_[0]->content; my $j = eval { JSON::PP::decode_json($c) }; $j || { raw => $c } }

# user_codes(PATH, USER, N, OPTIONS): N requests as X-User USER, their codes
sub user_codes { my ($path, $u, $n, %o) = @_; join ' ', codes($n, $path, h => { 'X-User' => $u }, %o) }

# banned_pair(PATH, OPTIONS): two new clients, each denied once in a
# section of limit 1 per 1 s window with RLaaSBan, so banned; after the
# window only the ban refuses them (checked: 429, status banned). Returns
# both. OPTIONS: label (the tests' prefix), and req()'s (vhost).
sub banned_pair {
    my ($path, %o) = @_;
    my $label = delete $o{label} // $path;
    my ($g, $h) = (uid('con-g'), uid('con-h'));
    Test::More::is(user_codes($path, $_, 2, %o), '200 429', "$label: $path: $_ denied, so banned")
        for $g, $h;
    Time::HiRes::sleep(1.2);    # past the 1 s window: only the ban refuses now
    for my $u ($g, $h) {
        my $res = req($path, h => { 'X-User' => $u }, %o);
        Test::More::is($res->code . ' ' . (status_of($res) // '-'), '429 banned',
            "$label: $u still refused after the window, by the ban");
    }
    return ($g, $h);
}

# console_roundtrip(ARGS): the console's actions and its list of bans
# against one server's backend, with new clients told apart by X-User.
# ARGS:
#   vhost    the virtual host (undef: the main server)
#   backend  what the JSON page names: 'redis' or 'local'
#   limit    a path of limit 2 per hour, keyed by header:X-User
#   zone     its RLaaSZone
#   ban      a path of limit 1 per 1 s window with RLaaSBan 1h, keyed
#            by header:X-User
#   banzone  its RLaaSZone
#   label    the prefix of the tests' names (default: the vhost's name)
#   cluster  1: keys carry the identity as a hash tag (RLaaSRedisCluster)
#   others   virtual hosts whose consoles must neither list nor lift this
#            one's bans
# Every check runs and can fail; an action that does not answer (501 on
# a backend the console cannot reach) fails its checks, it skips none.
sub console_roundtrip {
    my (%a) = @_;
    my $vh = $a{vhost};
    my @vh = defined $vh ? (vhost => $vh) : ();
    my $label = $a{label} // $vh // 'main server';
    my ($lim, $zone, $banp, $banzone) = @a{qw(limit zone ban banzone)};
    # the key of an identity's state in a zone, as the module writes it
    my $key = sub {
        my ($z, $u) = @_;
        return $a{cluster} ? rkey($z, '{' . tseg('h.x-user', $u) . '}') : ukey($z, $u);
    };
    # $page->(WHAT, VHOST): the JSON page of VHOST (default: this one's)
    my $page = sub {
        my ($what, $v) = @_;
        $v = $vh if @_ < 2;
        my $res = req($CONSOLE, @CAROL, h => { Accept => 'application/json' },
                      defined $v ? (vhost => $v) : ());
        my $j = $res->code == 200 ? eval { JSON::PP::decode_json($res->content) } : undef;
        Test::More::ok(ref $j eq 'HASH', "$label: $what: the console's JSON page")
            or Test::More::diag($res->status_line . "\n" . $res->content);
        return ref $j eq 'HASH' ? $j : {};
    };
    my $listed = sub {
        my ($j, $k) = @_;
        return (grep { ref $_ eq 'HASH' && ($_->{key} // '') eq $k } @{ $j->{bans} || [] })[0];
    };
    my $act = sub {
        my ($fields, $what) = @_;
        my $res = post($fields, @vh);
        my $r = result($res);
        Test::More::is($res->code, 200, "$label: $what: 200") or Test::More::diag($res->content);
        return $r;
    };

    # ---- the page
    my $j = $page->('the page');
    Test::More::is($j->{backend}, $a{backend}, "$label: the console names the backend ($a{backend})");

    # ---- reset lets one limited client in again, and no other
    my ($E, $F) = (uid('con-e'), uid('con-f'));
    Test::More::is(user_codes($lim, $E, 3, @vh), '200 200 429', "$label: E allowed 2, then denied");
    Test::More::is(user_codes($lim, $F, 3, @vh), '200 200 429', "$label: F allowed 2, then denied");
    my $r = $act->({ action => 'reset', zone => $zone, id => $E }, 'reset of E');
    Test::More::is($r->{changed}, 1, "$label: reset of E: one key deleted") or Test::More::diag(Test::More::explain($r));
    Test::More::is_deeply($r->{keys}, [ $key->($zone, $E) ], "$label: ... E's key in zone $zone");
    Test::More::is(user_codes($lim, $E, 3, @vh), '200 200 429', "$label: E is let in again (its full quota)");
    Test::More::is(user_codes($lim, $F, 1, @vh), '429', "$label: F is still limited");

    # ---- credit gives units back
    $r = $act->({ action => 'credit', zone => $zone, id => $F, n => 1 }, 'credit 1 to F');
    Test::More::is($r->{changed}, 1, "$label: credit: 1 unit given back to F") or Test::More::diag(Test::More::explain($r));
    Test::More::is(user_codes($lim, $F, 2, @vh), '200 429', "$label: F gets exactly one more request");

    # ---- a ban RLaaSBan made: listed, lifted for that client alone
    my ($G, $H) = banned_pair($banp, label => $label, @vh);
    my ($kg, $kh) = map { $key->($banzone, $_) . ':ban' } $G, $H;
    my $now = int(Time::HiRes::time() * 1000);
    $j = $page->('the bans');
    Test::More::ok(!defined $j->{bans_error}, "$label: the page lists its bans (no bans_error)")
        or Test::More::diag("bans_error: $j->{bans_error}");
    my $ban = $listed->($j, $kg);
    Test::More::ok($ban, "$label: G's ban is listed ($kg)")
        or Test::More::diag(Test::More::explain($j->{bans}));
    Test::More::ok($listed->($j, $kh), "$label: H's ban is listed");
    my $until = $ban ? $ban->{until_ms} // 0 : 0;
    Test::More::ok($until > $now && $until <= $now + 3_600_000 + 5000,
        "$label: ... ending within the hour ahead (until_ms $until, now $now)");
    Test::More::is($ban && $ban->{length_ms}, 3_600_000, "$label: ... a ban of 1 h (length_ms)");
    for my $o (@{ $a{others} || [] }) {
        my $oj = $page->("the console of $o", $o);
        Test::More::ok(!$listed->($oj, $kg) && !$listed->($oj, $kh),
            "$label: the console of $o does not list these bans (not its zones)")
            or Test::More::diag(Test::More::explain($oj->{bans}));
        # nor lift one: the zone is not among that host's
        my $res = post({ action => 'unban', zone => $banzone, id => $H }, vhost => $o);
        Test::More::is($res->code, 404, "$label: the console of $o cannot unban H (404)")
            or Test::More::diag($res->content);
    }
    $r = $act->({ action => 'unban', zone => $banzone, id => $G }, 'unban of G');
    Test::More::is($r->{changed}, 1, "$label: unban of G: its ban record deleted") or Test::More::diag(Test::More::explain($r));
    Test::More::is_deeply($r->{keys}, [ $kg ], "$label: ... the key $kg");
    my $res = req($banp, h => { 'X-User' => $G }, @vh);
    Test::More::is($res->code . ' ' . (status_of($res) // '-'), '200 allowed',
        "$label: G is served again, decided by its counters");
    $res = req($banp, h => { 'X-User' => $H }, @vh);
    Test::More::is($res->code . ' ' . (status_of($res) // '-'), '429 banned', "$label: H stays banned");
    $j = $page->('the bans after unban');
    Test::More::ok(!$listed->($j, $kg), "$label: G's ban is no longer listed");
    Test::More::ok($listed->($j, $kh), "$label: H's still is");
    $r = $act->({ action => 'unban', zone => $banzone, id => $G }, 'unban of G again');
    Test::More::is($r->{changed}, 0, "$label: unban of G again: nothing to delete") or Test::More::diag(Test::More::explain($r));

    # ---- a burst of the client still banned: 50 at once, none let in by
    # the unban of the other
    # (its 1 s window would let one in if the ban did not hold)
    my @c = parallel_codes(50, $banp, h => { 'X-User' => $H }, @vh);
    Test::More::is(join(' ', @c), join(' ', ('429') x 50),
        "$label: 50 concurrent requests of H: all refused by its ban");

    # ---- an identity without state
    $r = $act->({ action => 'reset', zone => $zone, id => uid('con-nobody') }, 'reset of an unknown identity');
    Test::More::is($r->{changed}, 0, "$label: reset of an identity without state: 0 keys")
        or Test::More::diag(Test::More::explain($r));
    return;
}

1;
