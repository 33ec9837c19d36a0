# The operator's console (SetHandler rlaas-admin): per-zone counts of the
# last minute, the most-denied identities (a credential only ever hashed),
# the same as JSON; and its actions, each behind Require, a same-origin
# check and a form body; a GET never acts. The console's round trip
# (RLaaS::Console::console_roundtrip, which t/redis_tls.t, t/sentinel.t
# and t/cluster.t run on their backends too) on plain Redis (the main
# server) and on the local engine (rlaas_adm_local): reset lets one
# limited client in again and no other, credit gives units back, the
# bans RLaaSBan made are listed (by the local engine too) and unban lifts
# one for that client alone. On Redis: reset by a raw API key or an
# address, credit on every strategy, a ban key written by hand.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use File::Spec::Functions qw(catfile);
use Time::HiRes ();
use RLaaS::Test qw(:all);
use RLaaS::Console qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $LV = 'rlaas_adm_local';

# ---------------------------------------------------------------- access
is(hit($CONSOLE), 401, 'the console asks for credentials (Require)');
is(hit($CONSOLE, auth => ['bob', 'bob-pw']), 401, 'a user the section does not Require is refused');
my $page = req($CONSOLE, @CAROL);
is($page->code, 200, 'the operator gets the page');
like($page->header('Content-Type') // '', qr{^text/html}, 'as HTML by default');

# ---------------------------------------------------------------- counts and top list
my ($A, $B) = (uid('adm-a'), uid('adm-b'));
# denied per minute counts in wall-clock minutes (the server's clock, which
# is this machine's): the denials and the read of them in one minute, so
# they do not begin in its last seconds
my $minute = do {
    my $t = Time::HiRes::time();
    my $left = 60 * (int($t / 60) + 1) - $t;
    Time::HiRes::sleep($left + 0.05) if $left < 5;
    int(Time::HiRes::time() / 60);
};
is(user_codes('/rl/adm/user', $A, 3), '200 200 429', 'client A: 2 allowed, then denied');
is(user_codes('/rl/adm/user', $B, 3), '200 200 429', 'client B: 2 allowed, then denied');
my $RAW = 'sk_live_' . uid('secret');
is(join(' ', codes(4, '/rl/adm/key', h => { 'X-API-Key' => $RAW })), '200 200 429 429',
    'an API key: 2 allowed, then denied');

my ($j, $text) = console_json();
my $crossed = int(Time::HiRes::time() / 60) != $minute;
is($j->{backend}, 'redis', 'JSON: the backend in use');
my ($zu) = grep { $_->{name} eq 'adm-user' } @{ $j->{zones} };
ok($zu, 'JSON: zone adm-user is listed');
ok($zu && $zu->{allowed} >= 4 && $zu->{denied} >= 2,
    "JSON: its last minute counts A's and B's requests ($zu->{allowed} allowed, $zu->{denied} denied)");
is(ref $zu->{denied_per_minute}, 'ARRAY', 'JSON: denied per minute for the chart');
is(scalar @{ $zu->{denied_per_minute} }, 16, '... 16 minutes of them');
if (!$crossed) {
    ok($zu->{denied_per_minute}[-1] >= 2, '... this minute holds the denials');
} else {
    # a machine so slow that the 10 requests and the read took the 5 s
    # left in the minute: the denials are in this minute or the one before
    diag('the denials and the console read were in two wall-clock minutes: the last two minutes judged');
    ok($zu->{denied_per_minute}[-1] + $zu->{denied_per_minute}[-2] >= 2,
        '... this minute and the one before hold the denials');
}
ok(@{ $j->{children} } >= 1 && $j->{children}[0]{pid} > 0, 'JSON: Redis health per child');
ok(exists $j->{children}[0]{circuits_open} && exists $j->{children}[0]{latency_avg_ms},
    '... with circuit state and latency');
my %top = map { ("$_->{zone} $_->{identity}" => $_) } @{ $j->{top_denied} };
ok($top{"adm-user h.x-user=$A"}, 'the top list shows client A in its zone')
    or diag explain $j->{top_denied};
my $hashed = tseg('key', $RAW, 1);
$hashed =~ s/^key=//;
ok($top{"adm-key key=$hashed"}, 'the API key is listed, hashed as in its Redis key');
# its own count: a newcomer may inherit the least counted slot's as error
is(($top{"adm-key key=$hashed"}{denied} // 0) - ($top{"adm-key key=$hashed"}{error} // 0), 2,
    '... with its 2 denials');
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
# a mark of the reset, which the lease script reads so that units a server
# held before it are not given back into the fresh state
like(redis()->cmd('GET', ukey('adm-user', $A) . ':forgot') // '', qr/^\d{13}$/,
    '... leaving a mark of the reset (KEY:forgot, for leases)');
# a client cannot forge the mark, nor take it for its own state: an
# identity ending in ':forgot' has a key of its own
my $forger = "$A:forgot";
isnt(ukey('adm-user', $forger), ukey('adm-user', $A) . ':forgot', 'an identity "A:forgot" is not keyed as the mark of A');
is(user_codes('/rl/adm/user', $forger, 1), '200', '... it is a client of its own quota');
like(redis()->cmd('GET', ukey('adm-user', $A) . ':forgot') // '', qr/^\d{13}$/, '... and the mark of A is untouched');
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

# ---------------------------------------------------------------- the round trip
# reset, credit, a ban RLaaSBan made listed and lifted (RLaaS::Console)
console_roundtrip(backend => 'redis', label => 'Redis',
                  limit => '/rl/adm/user', zone => 'adm-user',
                  ban => '/rl/adm/ban', banzone => 'adm-ban');

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
# the same round trip on the local engine: its records cleared, its bans
# listed from its table
console_roundtrip(vhost => $LV, backend => 'local', label => 'local',
                  limit => '/rl/adm/lo', zone => 'adm-lo',
                  ban => '/rl/adm/loban', banzone => 'adm-loban',
                  others => ['rlaas_local']);

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
