# Calendar windows (RLaaSWindow 1d calendar, RLaaSPolicy ... 1M calendar,
# RLaaSTimeZone): quotas that reset at midnight in the zone the operator
# names, the same on every server.
#
# Everything here runs on a clock the test sets to the millisecond:
# t/tools/shim.c, preloaded into two httpds sharing one redis-server (and
# into that redis-server, whose TIME the scripts read), into an httpd on
# the local engine and into a tenant's httpd, reads the time the test
# writes ('@' and ms since the epoch), stopped. A quota of 3 a day in
# Europe/Paris: 3 admitted across both servers, refused until midnight,
# 3 again after it; a request at 23:59:59.999 and one at 00:00:00.000
# count in two periods; Retry-After and RateLimit's t= are the seconds to
# the period's end (a day of 23 hours, a month across the change to
# summer time). A client value can't spell a period's key; a tenant's
# calendar window counts in its namespace; configuration errors name the
# directive and the value.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use File::Spec::Functions qw(catfile);
use Time::Local qw(timegm);
use IO::Socket::INET;
use RLaaS::Test qw(:all);
use RLaaS::Redis;

plan skip_all => 'mod_rlaas is not loaded' unless have_module();
plan skip_all => 'no C compiler for t/tools/shim.c'
    unless system(($ENV{CC} || 'cc') . ' --version >/dev/null 2>&1') == 0;
plan skip_all => 'no tzdata in /usr/share/zoneinfo'
    unless -f '/usr/share/zoneinfo/Europe/Paris' && -f '/usr/share/zoneinfo/America/New_York';

my $S = 1000;
my $DAY = 86_400 * $S;
sub utc { timegm(@_[5, 4, 3], $_[2], $_[1] - 1, $_[0]) * $S }    # (y, m, d, h, mi, s)

# ---------------------------------------------------------------- the clock
my $tmp = tempdir('rlaas-calendar-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $clock = catfile($tmp, 'clock');
sub at { set_clock($clock, "\@$_[0]") }
at(utc(2026, 3, 10, 13, 0, 0));
my $so = catfile($tmp, 'shim.so');
system($ENV{CC} || 'cc', '-shared', '-fPIC', '-o', $so,
       catfile($FindBin::Bin, 'tools', 'shim.c'), '-ldl') == 0
    or die "cannot build t/tools/shim.c\n";

# redis-server on the same clock: its TIME is the scripts' time
my $wrap = catfile($tmp, 'redis-server');
{
    my $bin = $ENV{RLAAS_REDIS_SERVER} || 'redis-server';
    open my $fh, '>', $wrap or die;
    print $fh "#!/bin/sh\nLD_PRELOAD='$so' RLAAS_CLOCK_SHIFT_FILE='$clock' exec '$bin' \"\$\@\"\n";
    close $fh;
    chmod 0755, $wrap;
}
my $redis = RLaaS::Redis->start(redis_server => $wrap, dir => catfile($tmp, 'redis'));
END { $redis->stop if $redis }
is_deeply($redis->cmd('TIME'), [utc(2026, 3, 10, 13, 0, 0) / $S, 0], 'redis-server reads the test\'s clock');

my $sections = <<'EOC';
RLaaSTimeZone Europe/Paris
RLaaSPolicy monthly 5 1M calendar key=header:X-User
<VirtualHost *>
    ServerName localhost
</VirtualHost>
<VirtualHost *>
    ServerName ny.test
    RLaaSTimeZone America/New_York
</VirtualHost>
<Location /day>
    RLaaSLimit 3
    RLaaSWindow 1d calendar
    RLaaSStrategy fixed
    RLaaSKeyBy header:X-User
    RLaaSZone cal-day
</Location>
<Location /month>
    RLaaSApply monthly
</Location>
<Location /inh>
    RLaaSLimit 3
    RLaaSWindow 1d calendar
    RLaaSKeyBy header:X-User
    RLaaSZone cal-inh
</Location>
<Location /inh/gcra>
    RLaaSStrategy gcra
</Location>
<Location /console>
    SetHandler rlaas-admin
    RLaaSConsole on
    Require all granted
</Location>
EOC
my $rport = $redis->port;
my %env = (RLAAS_CLOCK_SHIFT_FILE => $clock);
my $A = private_httpd("RLaaSRedis 127.0.0.1:$rport\n$sections", shim => 1, env => \%env);
my $B = private_httpd("RLaaSRedis 127.0.0.1:$rport\n$sections", shim => 1, env => \%env);
my $L = private_httpd("RLaaSBackend local\n$sections", shim => 1, env => \%env);

# get(SERVER, PATH, USER[, HOST]): {code, retry (Retry-After), t (RateLimit's
# t=), w (RateLimit-Policy's w=)}, over a connection of its own (HTTP::Tiny
# sets no Host of ours)
sub get {
    my ($h, $path, $user, $host) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $h->port, Timeout => 10)
        or return { code => 599 };
    print $s "GET $path HTTP/1.1\r\nHost: " . ($host || 'localhost')
        . "\r\nX-User: $user\r\nConnection: close\r\n\r\n";
    local $/;
    my $res = <$s> // '';
    my ($head) = split /\r\n\r\n/, $res, 2;
    my %r = (code => $head =~ m{^HTTP/1\.\d (\d+)} ? $1 : 599);
    $r{retry} = $1 if $head =~ /^Retry-After: (\d+)/mi;
    $r{t} = $1 if $head =~ /^RateLimit: .*;t=(\d+)/mi;
    $r{w} = $1 if $head =~ /^RateLimit-Policy: .*;w=(\d+)/mi;
    return \%r;
}
sub seq { join ' ', map { get(@$_)->{code} } @_ }

# ---------------------------------------------------------------- a day in Paris
# 2026-03-10, CET (UTC+1): midnight in Paris is 23:00 UTC
my $T = utc(2026, 3, 10, 13, 0, 0);    # 14:00 in Paris
my $M = utc(2026, 3, 10, 23, 0, 0);    # 2026-03-11 00:00 in Paris
for my $case (['two servers sharing Redis', $A, $B], ['the local engine', $L, $L]) {
    my ($name, $x, $y) = @$case;
    my $u = uid('cal');
    at($T);
    my $r = get($x, '/day', $u);
    is($r->{code}, 200, "$name: 14:00 in Paris, first request admitted");
    is($r->{t}, ($M - $T) / $S, "  RateLimit t=: the seconds to midnight in Paris (36000)");
    is($r->{w}, 86_400, '  RateLimit-Policy w=: a day');
    is(seq([$y, '/day', $u], [$x, '/day', $u]), '200 200', "  second and third admitted (the servers count together)");
    $r = get($y, '/day', $u);
    is($r->{code}, 429, '  the fourth refused');
    is($r->{retry}, ($M - $T) / $S, '  Retry-After: the seconds to midnight in Paris');
    at($M - 1);
    $r = get($x, '/day', $u);
    is($r->{code}, 429, '  23:59:59.999 in Paris: still refused');
    is($r->{retry}, 1, '  Retry-After 1 (a millisecond, rounded up)');
    my $v = uid('cal-edge');
    $r = get($y, '/day', $v);
    is_deeply([@$r{qw(code t)}], [200, 1], '  another client at 23:59:59.999: admitted, t=1');
    at($M);
    $r = get($y, '/day', $u);
    is($r->{code}, 200, '  00:00:00.000 in Paris: admitted again');
    is($r->{t}, 86_400, '  t=: a whole day to go');
    is(seq([$x, '/day', $u], [$y, '/day', $u], [$x, '/day', $u]), '200 200 429', '  3 a day again, then refused');
    is(seq(map { [$x, '/day', $v] } 1 .. 4), '200 200 200 429',
        '  the client of 23:59:59.999: 3 more at midnight, a new period');
    next if $x == $L;
    my @keys = sort @{ $redis->cmd('KEYS', "*cal-day*$u*") };
    is_deeply([map { /:(1d\+\d+)$/ ? $1 : $_ } @keys], ['1d+' . ($M - $DAY), "1d+$M"],
        '  Redis: one key per period, named by the tag and the period\'s start in ms');
    cmp_ok($redis->cmd('PTTL', $keys[1]), '>', $DAY - 1000, '  kept until the period ends');
}

# ---------------------------------------------------------------- a day of 23 hours
{
    at(utc(2026, 3, 29, 12, 0, 0));    # 14:00 summer time; the clocks moved at 02:00
    my $end = utc(2026, 3, 29, 22, 0, 0);
    for my $h ([$A, 'Redis'], [$L, 'the local engine']) {
        my $r = get($h->[0], '/day', uid('cal-dst'));
        is($r->{w}, 23 * 3600, "2026-03-29 in Paris lasts 23 hours ($h->[1]): w=82800");
        is($r->{t}, ($end - utc(2026, 3, 29, 12, 0, 0)) / $S, '  t=: to midnight summer time');
    }
}

# ---------------------------------------------------------------- a month
{
    my $now = utc(2026, 3, 10, 13, 0, 0);
    at($now);
    my $april = utc(2026, 3, 31, 22, 0, 0);    # 2026-04-01 00:00 CEST
    my $march = utc(2026, 2, 28, 23, 0, 0);    # 2026-03-01 00:00 CET
    for my $case (['two servers', $A, $B], ['the local engine', $L, $L]) {
        my ($name, $x, $y) = @$case;
        my $u = uid('cal-month');
        my $r = get($x, '/month', $u);
        is($r->{w}, ($april - $march) / $S, "RLaaSPolicy monthly 5 1M calendar ($name): w= March in Paris (31 days less an hour)");
        is($r->{t}, ($april - $now) / $S, '  t=: to the first of April, midnight summer time');
        is(seq([$y, '/month', $u], [$x, '/month', $u], [$y, '/month', $u], [$x, '/month', $u]),
            '200 200 200 200', '  5 a month');
        $r = get($y, '/month', $u);
        is_deeply([@$r{qw(code retry)}], [429, ($april - $now) / $S], '  the sixth refused until April');
        at($april);
        is(get($x, '/month', $u)->{code}, 200, '  April: a new quota');
        at($now);
    }
}

# ---------------------------------------------------------------- a host in New York
{
    my $mny = utc(2026, 3, 11, 4, 0, 0);    # 2026-03-11 00:00 EDT
    at($mny - 1);
    my $u = uid('cal-ny');
    my $r = get($A, '/day', $u, 'ny.test');
    is_deeply([@$r{qw(code t)}], [200, 1], 'RLaaSTimeZone America/New_York in a virtual host: 23:59:59.999 there, t=1');
    $r = get($A, '/day', uid('cal-ny'), 'localhost');
    is($r->{t}, int(($M + $DAY - ($mny - 1) + $S - 1) / $S),
        '  the host beside it counts in Paris (19 hours and a millisecond to go, rounded up)');
    at($mny);
    $r = get($A, '/day', $u, 'ny.test');
    is_deeply([@$r{qw(code t)}], [200, 86_400], '  midnight in New York: a new day');
}

# ---------------------------------------------------------------- inherited
{
    at($T);
    my $m = length $A->log;
    is(get($A, '/inh/gcra', uid('cal-inh'))->{code}, 500,
        'a calendar window inherited under RLaaSStrategy gcra: undecided (500)');
    like(substr($A->log, $m), qr/RLAAS0190: cal-inh: a calendar window .* gcra/, '  RLAAS0190 says why');
    is(get($A, '/inh', uid('cal-inh'))->{code}, 200, '  the section above, fixed: decided');
}

# ---------------------------------------------------------------- the console
# post(SERVER, FIELDS): a console action, as its form sends it: the code and
# the body
sub post {
    my ($h, $f) = @_;
    my $body = join '&', map { "$_=$f->{$_}" } sort keys %$f;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $h->port, Timeout => 10) or return 599;
    print $s "POST /console HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost\r\n"
        . "Accept: application/json\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        . "Content-Length: " . length($body) . "\r\nConnection: close\r\n\r\n$body";
    local $/;
    my $res = <$s> // '';
    return ($res =~ m{^HTTP/1\.\d (\d+)} ? $1 : 599, $res);
}
for my $case (['Redis', $A, $B], ['the local engine', $L, $L]) {
    my ($name, $x, $y) = @$case;
    at($T);
    my $u = uid('cal-console');
    is(seq(map { [$x, '/day', $u] } 1 .. 4), '200 200 200 429', "console ($name): a client uses up its day");
    my ($code, $body) = post($x, { action => 'credit', zone => 'cal-day', id => $u, n => 1 });
    is($code, 200, '  credit 1: 200') or diag $body;
    is(seq([$y, '/day', $u], [$y, '/day', $u]), '200 429', '  one more request, in this period');
    ($code, $body) = post($x, { action => 'reset', zone => 'cal-day', id => $u });
    is($code, 200, '  reset: 200') or diag $body;
    like($body, qr/"changed":\s*1/, '  one key: the period\'s') or diag $body;
    is(seq(map { [$y, '/day', $u] } 1 .. 4), '200 200 200 429', '  the client has its day again');
}

# ---------------------------------------------------------------- hostile values
{
    at($T);
    my $victim = uid('cal-victim');
    is(seq(map { [$A, '/day', $victim] } 1 .. 4), '200 200 200 429', 'the victim uses up its day');
    my $start = $M - $DAY;
    my @spell = ("$victim:1d+$start", "1d+$start", "$victim:1d", "$victim+$start", "{$victim}:1d+$start");
    for my $s (@spell) {
        is(get($B, '/day', $s)->{code}, 200, "a client sends X-User '$s': its own quota");
    }
    is(get($B, '/day', $victim)->{code}, 429, 'the victim is still refused (no one spent or reset its key)');
    # (the console's resets above leave marks, KEY:forgot, for leases)
    my @keys = grep { !/:forgot$/ } @{ $redis->cmd('KEYS', '*cal-day*') };
    my @odd = grep { !/^[^+]*:1d\+\d{13}$/ } @keys;
    is_deeply(\@odd, [], 'every period key has one \'+\', the period\'s: no client value holds one');
}

# ---------------------------------------------------------------- a tenant
{
    at($T);
    my $H = private_httpd(<<"EOC", shim => 1, env => \%env);
RLaaSRedis 127.0.0.1:$rport
RLaaSTimeZone Europe/Paris
<Directory "/">
    AllowOverride Limit
</Directory>
<Location /op>
    RLaaSLimit 100
    RLaaSWindow 1d calendar
    RLaaSKeyBy header:X-User
    RLaaSZone tcal
</Location>
EOC
    my $hta = catfile($H->{dir}, '.htaccess');
    my $write = sub { open my $fh, '>', $hta or die; print $fh $_[0]; close $fh };
    $write->("RLaaSLimit 2\nRLaaSWindow 1d calendar\nRLaaSKeyBy header:X-User\nRLaaSZone tcal\n");
    my $u = uid('cal-tenant');
    is(seq(map { [$H, '/t', $u] } 1 .. 3), '200 200 429', "a tenant's .htaccess: 2 a calendar day");
    is(get($H, '/t', $u)->{retry}, ($M - $T) / $S, "  Retry-After: to midnight in the host's zone");
    my @keys = @{ $redis->cmd('KEYS', "*tcal*$u*") };
    is(scalar(@keys), 1, '  one key');
    like($keys[0] // '', qr/tcal\@localhost~t:.*:1d\+\Q@{[$M - $DAY]}\E$/, "  in the tenant's namespace (tcal\@localhost~t), named by the period");
    is(get($H, '/op', $u)->{code}, 200, "  the operator's zone of the same name counts apart");
    $write->("RLaaSLimit 2\nRLaaSWindow 1M calendar\nRLaaSKeyBy header:X-User\n");
    my $m = length $H->log;
    is(get($H, '/t', $u)->{code}, 500, "  a tenant's 1M calendar: over RLaaSWindowMax (1d), 500");
    like(substr($H->log, $m), qr/RLaaSWindow: invalid value '1M'/, '  the log names the directive and the value');
    $write->("RLaaSLimit 2\nRLaaSWindow 1d calendar\nRLaaSStrategy gcra\n");
    $m = length $H->log;
    is(get($H, '/t', $u)->{code}, 500, "  a tenant's calendar window with gcra: 500");
    like(substr($H->log, $m), qr/RLaaSStrategy: invalid value 'gcra': a calendar window/, '  the log says why');
}

# ---------------------------------------------------------------- configuration errors
config_refused("RLaaSTimeZone Mars/Olympus_Mons\n",
    qr/RLaaSTimeZone: invalid value 'Mars\/Olympus_Mons': no such zone/, 'an unknown zone');
config_refused("RLaaSTimeZone ../../etc/passwd\n",
    qr/RLaaSTimeZone: invalid value '\.\.\/\.\.\/etc\/passwd': expected a time zone name/, 'a path is no zone name');
config_refused("RLaaSTimeZone Europe\n",
    qr/RLaaSTimeZone: invalid value 'Europe': no such zone/, 'a directory of tzdata is no zone');
config_refused("<Location /x>\nRLaaSTimeZone UTC\n</Location>\n",
    qr/RLaaSTimeZone not allowed in <Location> context/, 'RLaaSTimeZone: server config and virtual host only');
config_refused("<Location /x>\nRLaaSWindow 1h calendar\n</Location>\n",
    qr/RLaaSWindow: invalid value '1h calendar': expected a calendar period.*hours and minutes need no calendar/,
    'hours need no calendar');
config_refused("<Location /x>\nRLaaSWindow 5M calendar\n</Location>\n",
    qr/RLaaSWindow: invalid value '5M calendar'/, 'months: 1, 2, 3, 4, 6 or 12');
config_refused("<Location /x>\nRLaaSWindow 1d monthly\n</Location>\n",
    qr/RLaaSWindow: invalid word 'monthly' after '1d'/, 'the word is calendar');
config_refused("<Location /x>\nRLaaSWindow 1d calendar\nRLaaSStrategy gcra\n</Location>\n",
    qr/RLaaSStrategy: invalid value 'gcra': a calendar window .* counts with the fixed strategy only/,
    'calendar, then another strategy');
config_refused("<Location /x>\nRLaaSStrategy sliding\nRLaaSWindow 1w calendar\n</Location>\n",
    qr/RLaaSWindow: invalid value '1w calendar': a calendar window/, 'another strategy, then calendar');
config_refused("RLaaSPolicy monthly 10000 1M calendar strategy=token key=api_key\n",
    qr/RLaaSPolicy monthly: invalid value '1M calendar strategy=token'/, 'a policy: calendar with token');
config_refused("RLaaSPolicy monthly 10000 1h calendar\n",
    qr/RLaaSPolicy monthly: invalid value '1h calendar'/, 'a policy: hours need no calendar');
config_accepted(<<'EOC', 'RLaaSTimeZone, RLaaSWindow 1d/1w/3M calendar, RLaaSPolicy ... 1M calendar');
RLaaSTimeZone America/New_York
RLaaSPolicy monthly 10000 1M calendar key=api_key
RLaaSPolicy weekly 500 1w CALENDAR strategy=fixed
<VirtualHost *:80>
    RLaaSTimeZone UTC
</VirtualHost>
<Location /d>
    RLaaSLimit 3
    RLaaSWindow 1d calendar
</Location>
<Location /q>
    RLaaSLimit 3
    RLaaSWindow 3M calendar
    RLaaSStrategy fixed
</Location>
<Location /w>
    RLaaSLimit 3
    RLaaSWindow 2w calendar
</Location>
EOC

done_testing();
