# The operator's console (SetHandler rlaas-admin): per-zone counts of the
# last minute, the most-denied identities (a credential only ever hashed),
# the same as JSON; and its actions, each behind Require, a same-origin
# check and a form body: reset lets one limited client in again and no
# other, credit gives units back, unban lifts a ban RLaaSBan made (on
# Redis and on the local engine) for that client alone; a GET never
# acts. The local backend's reset clears its record.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use Time::HiRes ();
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $CONSOLE = '/adm/console';
my $LV = 'rlaas_adm_local';
my @CAROL = (auth => ['carol', 'carol-pw']);

sub origin { 'http://' . Apache::TestRLaaS::hostport($_[0]) }

sub console_json {
    my (%o) = @_;
    my $res = req($CONSOLE, @CAROL, h => { Accept => 'application/json' }, %o);
    die "console: " . $res->status_line . "\n" . $res->content unless $res->code == 200;
    return (JSON::PP::decode_json($res->content), $res->content);
}

# post(FIELDS, OPTIONS): a console action, as its page's form sends it.
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

sub result { my $c = $_[0]->content; my $j = eval { JSON::PP::decode_json($c) }; $j || { raw => $c } }

sub user_codes { my ($path, $u, $n, %o) = @_; join ' ', codes($n, $path, h => { 'X-User' => $u }, %o) }

# ---------------------------------------------------------------- access
is(hit($CONSOLE), 401, 'the console asks for credentials (Require)');
is(hit($CONSOLE, auth => ['bob', 'bob-pw']), 401, 'a user the section does not Require is refused');
my $page = req($CONSOLE, @CAROL);
is($page->code, 200, 'the operator gets the page');
like($page->header('Content-Type') // '', qr{^text/html}, 'as HTML by default');

# ---------------------------------------------------------------- counts and top list
my ($A, $B) = (uid('adm-a'), uid('adm-b'));
is(user_codes('/rl/adm/user', $A, 3), '200 200 429', 'client A: 2 allowed, then denied');
is(user_codes('/rl/adm/user', $B, 3), '200 200 429', 'client B: 2 allowed, then denied');
my $RAW = 'sk_live_' . uid('secret');
is(join(' ', codes(4, '/rl/adm/key', h => { 'X-API-Key' => $RAW })), '200 200 429 429',
    'an API key: 2 allowed, then denied');

my ($j, $text) = console_json();
is($j->{backend}, 'redis', 'JSON: the backend in use');
my ($zu) = grep { $_->{name} eq 'adm-user' } @{ $j->{zones} };
ok($zu, 'JSON: zone adm-user is listed');
ok($zu && $zu->{allowed} >= 4 && $zu->{denied} >= 2,
    "JSON: its last minute counts A's and B's requests ($zu->{allowed} allowed, $zu->{denied} denied)");
is(ref $zu->{denied_per_minute}, 'ARRAY', 'JSON: denied per minute for the chart');
is(scalar @{ $zu->{denied_per_minute} }, 16, '... 16 minutes of them');
ok($zu->{denied_per_minute}[-1] >= 2, '... this minute holds the denials');
ok(@{ $j->{children} } >= 1 && $j->{children}[0]{pid} > 0, 'JSON: Redis health per child');
ok(exists $j->{children}[0]{circuits_open} && exists $j->{children}[0]{latency_avg_ms},
    '... with circuit state and latency');
my %top = map { ("$_->{zone} $_->{identity}" => $_) } @{ $j->{top_denied} };
ok($top{"adm-user h.x-user=$A"}, 'the top list shows client A in its zone')
    or diag explain $j->{top_denied};
my $hashed = tseg('key', $RAW, 1);
$hashed =~ s/^key=//;
ok($top{"adm-key key=$hashed"}, 'the API key is listed, hashed as in its Redis key');
is($top{"adm-key key=$hashed"}{denied}, 2, '... with its 2 denials');
unlike($text, qr/\Q$RAW\E/, 'the JSON never shows the raw API key');

$page = req($CONSOLE, @CAROL);
my $html = $page->content;
like($html, qr{<tr data-zone="adm-user" data-kind="zone">}, 'HTML: the zone row');
like($html, qr{<svg id="chart".*<polyline class="zone" data-zone="adm-user"}s, 'HTML: the chart has a line for the zone');
like($html, qr{h\.x-user=\Q$A\E}, 'HTML: the top list shows client A');
unlike($html, qr/\Q$RAW\E/, 'HTML: never the raw API key');
unlike($html, qr{(?:src|href)="https?://}, 'HTML: no external asset');

# ---------------------------------------------------------------- refusals (the attacker's tests)
my $mark = error_log_mark();
my %resetA = (action => 'reset', zone => 'adm-user', id => $A);
is(post(\%resetA, h => { Origin => undef })->code, 403, 'a POST without Origin or Referer: 403');
is(post(\%resetA, h => { Origin => 'http://evil.example' })->code, 403, 'a POST from another origin: 403');
is(post(\%resetA, h => { Origin => undef, Referer => 'http://evil.example/' . origin() })->code, 403,
    'a Referer of another origin: 403');
is(post(\%resetA, h => { Origin => 'null' })->code, 403, 'Origin null: 403');
is(post(\%resetA, h => { 'Content-Type' => 'application/json' })->code, 415, 'a body that is not a form: 415');
is(post(\%resetA, h => { 'Content-Type' => 'text/plain' })->code, 415, 'text/plain (a cross-site "simple" POST): 415');
is(post(\%resetA, auth => ['bob', 'bob-pw'])->code, 401, 'another user, same origin: refused by Require');
is(post(\%resetA, auth => undef)->code, 401, 'no credentials: 401');
is(req($CONSOLE . '?action=reset&zone=adm-user&id=' . $A, @CAROL)->code, 200, 'a GET with the fields ...');
is(user_codes('/rl/adm/user', $A, 1), '429', '... acts not: A is still limited');

# ---------------------------------------------------------------- reset
my $res = post(\%resetA);
is($res->code, 200, 'reset of A: 200');
my $r = result($res);
is($r->{changed}, 1, 'reset of A: one key deleted') or diag $res->content;
is_deeply($r->{keys}, [ ukey('adm-user', $A) ], '... the key of A in zone adm-user');
is(user_codes('/rl/adm/user', $A, 3), '200 200 429', 'A is let in again (its full quota)');
is(user_codes('/rl/adm/user', $B, 1), '429', 'B is still limited');
my $log = error_log_since($mark);
like($log, qr/RLAAS0120: console: reset in zone adm-user by user carol: 200 1 key deleted/,
    'the action is logged at notice with the operator\'s name');
like($log, qr/RLAAS0121: .*refused \(403\)/, 'refusals are logged');

$mark = error_log_mark();
$res = post({ action => 'reset', zone => 'adm-key', id => $RAW });
$r = result($res);
is($r->{changed}, 1, 'reset by the raw API key: its hashed key deleted') or diag $res->content;
is_deeply($r->{keys}, [ rkey('adm-key', tseg('key', $RAW, 1)) ], '... the key the requests wrote');
unlike($res->content, qr/\Q$RAW\E/, 'the answer does not repeat the raw key');
unlike(error_log_since($mark), qr/\Q$RAW\E/, 'nor does the log');
is(hit('/rl/adm/key', h => { 'X-API-Key' => $RAW }), 200, 'the API key is let in again');
($j, $text) = console_json();
ok(!grep({ $_->{identity} eq "key=$hashed" } @{ $j->{top_denied} }), 'a reset identity leaves the top list');

is(result(post({ action => 'reset', zone => 'adm-user', id => uid('nobody') }))->{changed}, 0,
    'reset of an identity without state: 0 keys');
is(post({ action => 'reset', zone => 'no-such-zone', id => $A })->code, 404, 'an unknown zone: 404');
is(post({ action => 'explode', zone => 'adm-user', id => $A })->code, 400, 'an unknown action: 400');
is(post({ action => 'reset', zone => 'adm-user' })->code, 400, 'no id: 400');

# a zone keyed by the client address takes one as the id
redis_cmd('DEL', rkey('adm-ip', '127.0.0.1'));
is(join(' ', codes(3, '/rl/adm/ip')), '200 200 429', 'by address: this client limited');
is(post({ action => 'reset', zone => 'adm-ip', id => 'not-an-address' })->code, 400,
    'by address: an id that is no address: 400');
$res = post({ action => 'reset', zone => 'adm-ip', id => '127.0.0.1' });
is_deeply(result($res)->{keys}, [ rkey('adm-ip', '127.0.0.1') ], 'by address: reset deletes its key')
    or diag $res->content;
is(hit('/rl/adm/ip'), 200, 'by address: let in again');

# ---------------------------------------------------------------- credit
wait_fixed_window(3_600_000, 5000);
my $C = uid('adm-c');
is(user_codes('/rl/adm/fixed', $C, 3), '200 200 429', 'fixed: C allowed 2, then denied');
$res = post({ action => 'credit', zone => 'adm-fixed', id => $C, n => 1 });
is($res->code, 200, 'credit 1 to C: 200') or diag $res->content;
is(result($res)->{changed}, 1, '... 1 unit given back');
is(user_codes('/rl/adm/fixed', $C, 2), '200 429', 'C gets exactly one more request');
# every strategy takes a credit (lua/credit.lua), the sliding log too:
# its newest units go
$res = post({ action => 'credit', zone => 'adm-user', id => $B, n => 5 });
is($res->code, 200, 'credit 5 to B (sliding log): 200') or diag $res->content;
is(result($res)->{changed}, 2, '... the 2 units B held given back, never below none');
is(user_codes('/rl/adm/user', $B, 3), '200 200 429', 'B is let in twice more');
is(post({ action => 'credit', zone => 'adm-fixed', id => $C, n => 'x' })->code, 400, 'credit without a number: 400');

# ---------------------------------------------------------------- unban
my $D = uid('adm-d');
my $BAN = ukey('adm-user', $D) . ':ban';
my $until = redis_time_ms() + 600_000;
redis_cmd('SET', $BAN, "$until:600000", 'PX', 600_000);
($j) = console_json();
my ($ban) = grep { $_->{key} eq $BAN } @{ $j->{bans} };
ok($ban, 'a ban key is listed among the active bans') or diag explain $j->{bans};
is($ban && $ban->{until_ms}, $until, '... with its end');
$res = post({ action => 'unban', zone => 'adm-user', id => $D });
is($res->code, 200, 'unban: 200');
is(result($res)->{changed}, 1, '... one ban key deleted') or diag $res->content;
is(redis_cmd('EXISTS', $BAN), 0, 'the ban key is gone from Redis');
is(result(post({ action => 'unban', zone => 'adm-user', id => $D }))->{changed}, 0, 'unban again: nothing to delete');

# A ban made by RLaaSBan itself, on Redis and on the local engine: the
# console lists it (Redis) and unban lifts it for that client alone, whose
# next request is decided by its counters again.
sub banned_pair {
    my ($path, %o) = @_;
    my ($g, $h) = (uid('adm-g'), uid('adm-h'));
    is(user_codes($path, $_, 2, %o), '200 429', "$path: $_ denied, so banned") for $g, $h;
    Time::HiRes::sleep(1.2);    # past the 1 s window: only the ban refuses now
    my $res = req($path, h => { 'X-User' => $g }, %o);
    is($res->code, 429, "$path: still refused after the window");
    is(status_of($res), 'banned', '... by the ban');
    return ($g, $h);
}
{
    my ($g, $h) = banned_pair('/rl/adm/ban');
    my $key = ukey('adm-ban', $g) . ':ban';
    ($j) = console_json();
    ok((grep { $_->{key} eq $key } @{ $j->{bans} }), 'a ban made by RLaaSBan is listed')
        or diag explain $j->{bans};
    $res = post({ action => 'unban', zone => 'adm-ban', id => $g });
    is(result($res)->{changed}, 1, 'unban of a real ban: its record deleted') or diag $res->content;
    $res = req('/rl/adm/ban', h => { 'X-User' => $g });
    is($res->code, 200, 'the unbanned client is served again');
    is(status_of($res), 'allowed', '... decided by its counters');
    is(status_of(req('/rl/adm/ban', h => { 'X-User' => $h })), 'banned', 'the other banned client stays banned');

    ($g, $h) = banned_pair('/rl/adm/loban', vhost => $LV);
    ($j) = console_json(vhost => $LV);
    like($j->{bans_error} // '', qr/local engine .* not listed/, 'local: the page says its bans are not listed');
    $res = post({ action => 'unban', zone => 'adm-loban', id => $g }, vhost => $LV);
    is(result($res)->{changed}, 1, 'local: unban deletes the ban record') or diag $res->content;
    is(hit('/rl/adm/loban', h => { 'X-User' => $g }, vhost => $LV), 200, 'local: the unbanned client is served again');
    is(status_of(req('/rl/adm/loban', h => { 'X-User' => $h }, vhost => $LV)), 'banned',
        'local: the other stays banned');
}

# ---------------------------------------------------------------- a tenant's .htaccess
# AllowOverride FileInfo lets a tenant write `SetHandler rlaas-admin`;
# without the operator's RLaaSConsole on it is no console: no page, no
# action, whatever Origin the tenant sends from curl.
{
    my $T = '/htaccess/admin/';
    next_mono_second();    # RLAAS0124 passes its gate once a second per child
    my $m = error_log_mark();
    my $res = req($T, h => { Accept => 'application/json' });
    is($res->code, 404, 'a tenant setting the handler in .htaccess gets no console page');
    unlike($res->content, qr/adm-user|"zones"/, '... and none of its data');
    my $L = uid('adm-t');
    is(user_codes('/rl/adm/user', $L, 3), '200 200 429', 'a client limited in the operator\'s zone');
    $res = req({ path => $T, method => 'POST', content => "action=reset&zone=adm-user&id=$L",
                 headers => { 'Content-Type' => 'application/x-www-form-urlencoded', Origin => origin() } });
    is($res->code, 404, 'the tenant\'s reset with a matching Origin: 404');
    is(user_codes('/rl/adm/user', $L, 1), '429', '... and the client stays limited');
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /RLAAS0124/ }, 3);
    like($log, qr/RLAAS0124: SetHandler rlaas-admin without RLaaSConsole on/, 'the error log says why');
}

# ---------------------------------------------------------------- local backend
my ($E, $F) = (uid('adm-e'), uid('adm-f'));
is(user_codes('/rl/adm/lo', $E, 3, vhost => $LV), '200 200 429', 'local: E limited');
is(user_codes('/rl/adm/lo', $F, 3, vhost => $LV), '200 200 429', 'local: F limited');
($j) = console_json(vhost => $LV);
is($j->{backend}, 'local', 'local: the console says which backend');
$res = post({ action => 'reset', zone => 'adm-lo', id => $E }, vhost => $LV);
is($res->code, 200, 'local: reset of E');
is(result($res)->{changed}, 1, '... its record cleared') or diag $res->content;
is(user_codes('/rl/adm/lo', $E, 3, vhost => $LV), '200 200 429', 'local: E is let in again');
is(user_codes('/rl/adm/lo', $F, 1, vhost => $LV), '429', 'local: F is still limited');
$res = post({ action => 'credit', zone => 'adm-lo', id => $F, n => 1 }, vhost => $LV);
is($res->code, 200, 'local: credit 1 to F') or diag $res->content;
is(result($res)->{changed}, 1, '... 1 unit given back');
is(user_codes('/rl/adm/lo', $F, 2, vhost => $LV), '200 429', 'local: F gets exactly one more request');

# ---------------------------------------------------------------- in a browser
# The page as a browser renders it (Debian's chromium, headless): its
# structure, its script run, a screenshot of the expected size. Skipped
# where no browser is installed.
SKIP: {
    my ($chrome) = grep { -x } map { my $d = $_; map { "$d/$_" } qw(chromium chromium-browser google-chrome) }
        split /:/, $ENV{PATH} // '';
    skip 'no browser (chromium) installed: the page is not checked in one', 5 unless $chrome;
    require File::Temp;
    my $dir = File::Temp::tempdir('rlaas-chrome-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $url = 'http://' . Apache::TestRLaaS::hostport() . '/adm/console-local';
    my @args = ('--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                "--user-data-dir=$dir", '--window-size=1100,1500');
    my $dom = qx{timeout 120 $chrome @args --dump-dom '$url' 2>/dev/null} // '';
    like($dom, qr{<table id="zones">.*data-zone="adm-user"}s, 'browser: the zone table with its rows');
    like($dom, qr{<svg id="chart".*<polyline}s, 'browser: the chart with a line');
    like($dom, qr{<table id="top">.*h\.x-user=}s, 'browser: the most-denied list');
    like($dom, qr{<label id="nl" style="display: none;">}, 'browser: the script ran (n shown for credit only)');
    my $png = catfile(t_logs(), 'console.png');
    unlink $png;
    system("timeout 120 $chrome @args --screenshot='$png' '$url' >/dev/null 2>&1");
    my $head = '';
    if (open my $fh, '<:raw', $png) { read $fh, $head, 24 }
    my ($w, $h) = length $head == 24 ? unpack('N2', substr($head, 16, 8)) : (0, 0);
    ok(substr($head, 0, 8) eq "\x89PNG\r\n\x1a\n" && $w == 1100 && $h == 1500,
        "browser: a screenshot of the console, 1100x1500 ($png: ${w}x$h)");
    # RLAAS_CONSOLE_PNG=FILE: keep it there (docs/console.png is made so)
    if ($ENV{RLAAS_CONSOLE_PNG} && -s $png) {
        require File::Copy;
        File::Copy::copy($png, $ENV{RLAAS_CONSOLE_PNG}) or diag "copy to $ENV{RLAAS_CONSOLE_PNG}: $!";
    }
}

done_testing();
