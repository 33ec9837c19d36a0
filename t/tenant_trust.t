# The shared-hosting contract, tried as a hostile tenant would (issue 24,
# points 1, 2, 3, 4 and 6). A tenant is whoever writes a .htaccess; each
# block below is a tenant trying to cross its host's limits, on Redis and
# on the local engine (t/conf/x-tenants.conf.in declares every host on
# both ports):
#   1. naming its zone after its host's enforced policy and loosening it
#      (dry run, cost 0, a condition that never holds, a 1ms window), under
#      AllowOverride Limit, with a key prefix of the host's own, and with
#      conf/two-tenants.conf's AllowOverrideList;
#   2. meeting more than 8 policies (two RLaaSApply lines; nested
#      .htaccess files) with RLaaSFailOpen or RLaaSDryRun on: the host's
#      enforced policies still decide, then 500;
#   3. spending others' quotas: its RLaaSCost on the operator's counter,
#      or on a policy another host applies;
#   4. two tenants of one virtual host (mod_vhost_alias, mod_userdir)
#      with the same zone: RLaaSTenantRoot keeps them apart;
#   6. making Redis hold what it likes: RLaaSWindowMax and RLaaSLogMax.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha1_hex);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

require Apache::Test;
my $cfg = Apache::Test::config();
my %PORT = map { $_ => $cfg->{vhosts}{$_}{port} } qw(rlaas_ten rlaas_ten_local);
my $DOCS = $cfg->{vars}{documentroot};
my @ENGINES = (['Redis', 'rlaas_ten'], ['local', 'rlaas_ten_local']);

sub at {
    my ($vh, $host, $path, %o) = @_;
    return req($path, vhost => $vh, %o, h => { Host => "$host:$PORT{$vh}", %{ $o{h} || {} } });
}
sub codes_at { my ($n, @a) = @_; join ' ', map { at(@a)->code } 1 .. $n }
sub visitor { (h => { 'X-Visitor' => $_[0] }) }
sub rep { my ($code, $n) = @_; join ' ', ($code) x $n }

# A tenant's namespace (src/core/rlaas_key.h): its host's, then "~t", or
# "~" and 16 hex digits of SHA-1 of its root under RLaaSTenantRoot.
sub tns { my ($host, $root) = @_; $host . '~' . (defined $root ? substr(sha1_hex($root), 0, 16) : 't') }

# A line of the error log since MARK that names FILE and matches RE.
sub logged {
    my ($mark, $file, $re) = @_;
    my $log = '';
    wait_for(sub { $log = error_log_since($mark); grep { /\Q$file\E/ && $_ =~ $re } split /\n/, $log }, 3);
    return scalar grep { /\Q$file\E/ && $_ =~ $re } split /\n/, $log;
}

for my $e (@ENGINES) {
    my ($eng, $vh) = @$e;
    my $redis = $eng eq 'Redis';

    # -------------------------------------------------- 1. the zone of an enforced policy
    for my $host ('ten-floor.test', 'ten-pfx.test') {
        for my $c (['dry', 'RLaaSDryRun on'], ['cost0', 'RLaaSCost 0'],
                   ['countif', 'RLaaSCountIf "false"'], ['window', 'RLaaSWindow 1ms']) {
            my ($dir, $trick) = @$c;
            my $v = uid("ten1-$dir");
            my @r = map { at($vh, $host, "/$dir/ok.txt", visitor($v)) } 1 .. 12;
            is(join(' ', map { $_->code } @r), rep(200, 5) . ' ' . rep(429, 7),
                "$eng, $host: RLaaSZone ten-floor, RLaaSLimit 4 and $trick: the enforced ten-floor (5) holds");
            is($r[5]->header('X-RLaaS-Policy'), 'ten-floor', "$eng, $host, $dir: the 6th is denied by ten-floor");
            next unless $redis;
            my ($pol, $own) = $host eq 'ten-pfx.test'
                ? ("ten:pfx:ten-floor:h.x-visitor=$v", 'ten:pfx:ten-floor@' . tns($host) . ":h.x-visitor=$v")
                : (rkey("ten-floor\@$host", "h.x-visitor=$v"), rkey('ten-floor@' . tns($host), "h.x-visitor=$v"));
            is(redis_cmd('ZCARD', $pol), 5, "$host, $dir: the policy's counter holds 5");
            # (a check of cost 0 writes nothing; a 1ms window is gone)
            is(redis_cmd('ZCARD', $own), 4, "$host, $dir: the tenant's own limit counts apart ($own)")
                if $dir eq 'dry';
        }
    }
    for my $dir (qw(dry cost0 countif window)) {
        my $v = uid("ten1-op-$dir");
        my @r = map { at($vh, 'ten-pfx.test', "/opmerge/$dir", visitor($v)) } 1 .. 8;
        is(join(' ', map { $_->code } @r), rep(200, 4) . ' ' . rep(429, 4),
            "$eng: an operator's section sharing ten-floor's counter, limit 4 and $dir: one counter, the lower limit, enforced");
        is($r[4]->header('X-RLaaS-Policy'), 'ten-floor', "$eng, opmerge $dir: shown as ten-floor");
        is(redis_cmd('ZCARD', "ten:pfx:ten-floor:h.x-visitor=$v"), 4, "opmerge $dir: charged once per request") if $redis;
    }
    {
        my $v = uid('ten1-list');
        is(codes_at(12, $vh, 'ten-list.test', '/window/ok.txt', visitor($v)), rep(200, 5) . ' ' . rep(429, 7),
            "$eng: conf/two-tenants.conf's AllowOverrideList (zone, limit, window, key): ten-floor holds");
    }

    # -------------------------------------------------- 2. more than 8 policies
    {
        my $m = error_log_mark();
        is(at($vh, 'ten-ovf.test', '/lines/ok.txt', visitor(uid('ten2')))->code, 500,
            "$eng: two RLaaSApply lines of 3, 2 enforced, the own limit: refused as the .htaccess is read");
        ok(logged($m, 'lines/.htaccess', qr/RLaaSApply: too many policies/),
            "$eng: the log names the file and the directive");
    }
    is(codes_at(2, $vh, 'ten-ovf.test', '/nest/ok.txt', visitor(uid('ten2'))), '200 200',
        "$eng: 2 enforced and 4 applied: decided as usual");
    for my $c (['deeper', 'RLaaSFailOpen on'], ['dry', 'RLaaSDryRun on']) {
        my ($dir, $what) = @$c;
        my $v = uid("ten2-$dir");
        next_mono_second(); # RLAAS0130 is told once a second per child
        my $m = error_log_mark();
        my @r = map { at($vh, 'ten-ovf.test', "/nest/$dir/ok.txt", visitor($v)) } 1 .. 5;
        is(join(' ', map { $_->code } @r), '500 500 500 429 429',
            "$eng: 10 policies down nested .htaccess files, $what: the enforced ten-ovf-a (3) decides, the rest is a 500");
        is($r[3]->header('X-RLaaS-Policy'), 'ten-ovf-a', "$eng, $dir: the 429 is ten-ovf-a's");
        ok(logged($m, "nest/$dir/ok.txt", qr/RLAAS0130: configuration error for .*more than 8 policies/),
            "$eng, $dir: RLAAS0130 names the file and the problem");
    }

    # -------------------------------------------------- 3. others' quotas
    for my $c (['cost', '/ok.txt', 'ten-shared'], ['loc', '/loc/ok.txt', 'ten-shared2']) {
        my ($dir, $bob, $zone) = @$c;
        my $v = uid("ten3-$dir");
        is(at($vh, 'ten-alice.test', "/$dir/ok.txt", visitor($v))->code, 200,
            "$eng: one visit to alice's /$dir (RLaaSCost 20 under the operator's RLaaSLimit 20)");
        is(codes_at(3, $vh, 'ten-bob.test', $bob, visitor($v)), '200 200 200',
            "$eng: the visitor's quota at bob's site ($zone) is untouched");
        next unless $redis;
        is(redis_cmd('ZCARD', rkey($zone, "h.x-visitor=$v")), 3, "$dir: the operator's counter holds bob's 3 alone");
        ok(redis_cmd('EXISTS', rkey("$zone\@" . tns('ten-alice.test'), "h.x-visitor=$v")),
            "$dir: alice's cost went to her own namespace");
    }
    {
        my $v = uid('ten3-apply');
        is(at($vh, 'ten-alice.test', '/apply/ok.txt', visitor($v))->code, 200,
            "$eng: alice applies the shared ten-login (5) with RLaaSCost 5");
        is(codes_at(5, $vh, 'ten-bob.test', '/login', visitor($v)), '200 200 200 200 429',
            "$eng: at bob's login the visitor has 4 left: alice's request cost ten-login 1, its own cost");
        $v = uid('ten3-applydry');
        is(codes_at(7, $vh, 'ten-alice.test', '/applydry/ok.txt', visitor($v)), rep(200, 5) . ' 429 429',
            "$eng: alice's RLaaSDryRun and RLaaSCountIf \"false\" leave the applied ten-login deciding and counting");
    }

    # -------------------------------------------------- 4. tenants under one virtual host
    for my $c (['t1.ten-mass.test', 't2.ten-mass.test', '/login/ok.txt', 'mass (mod_vhost_alias)',
                "$DOCS/tenmass/t1", "$DOCS/tenmass/t2"],
               ['ten-mass.test', 'ten-mass.test', '/~u1/login/ok.txt', 'userdir',
                "$DOCS/tenusers/u1/public_html", "$DOCS/tenusers/u2/public_html"]) {
        my ($h1, $h2, $p1, $what, $root1, $root2) = @$c;
        (my $p2 = $p1) =~ s/~u1/~u2/;
        my $v = uid('ten4');
        is(codes_at(3, $vh, $h1, $p1, visitor($v)), '200 200 429', "$eng, $what: tenant 1, RLaaSZone login, limit 2");
        is(codes_at(3, $vh, $h2, $p2, visitor($v)), '200 200 429',
            "$eng, $what: tenant 2, the same zone and visitor: a counter of its own");
        next unless $redis;
        is(redis_cmd('ZCARD', rkey('login@' . tns('ten-mass.test', $root1), "h.x-visitor=$v")), 2,
            "$what: tenant 1 counts in the namespace of its root");
        is(redis_cmd('ZCARD', rkey('login@' . tns('ten-mass.test', $root2), "h.x-visitor=$v")), 2,
            "$what: tenant 2 in its own");
    }

    # inside a <Files> or an <If> of the tenant's .htaccess: its root still
    for my $c (['login-files', '/files/ok.txt'], ['login-if', '/files/ok.txt?if']) {
        my ($zone, $path) = @$c;
        my $v = uid('ten4-sec');
        is(codes_at(3, $vh, 't1.ten-mass.test', $path, visitor($v)), '200 200 429', "$eng, $zone: tenant 1");
        is(codes_at(3, $vh, 't2.ten-mass.test', $path, visitor($v)), '200 200 429', "$eng, $zone: tenant 2 apart");
        next unless $redis;
        is(redis_cmd('ZCARD', rkey("$zone\@" . tns('ten-mass.test', "$DOCS/tenmass/t2"), "h.x-visitor=$v")), 2,
            "$zone: in the namespace of the tenant's root");
    }

    # -------------------------------------------------- 6. what Redis holds
    for my $c (['ten-mem.test', 'attack', qr/RLaaSWindow: invalid value '30d' in \.htaccess: expected a duration up to 1d \(RLaaSWindowMax of this server\)/,
                'RLaaSLimit 1000000000 and RLaaSWindow 30d on the sliding log'],
               ['ten-mem.test', 'samefile', qr/RLaaSLimit: invalid value in \.htaccess: RLaaSLimit 20000 with the sliding log .*expected a limit up to 10000 \(RLaaSLogMax of this server\)/,
                'RLaaSStrategy sliding_log and RLaaSLimit 20000 in one file'],
               ['ten-mem.test', 'ban', qr/RLaaSBan: invalid value '30d' in \.htaccess: expected a duration up to 1d/,
                'RLaaSBan 30d'],
               ['ten-mem.test', 'biglog', qr/RLAAS0130: configuration error for .*RLaaSLimit or RLaaSStrategy\), is over RLaaSLogMax 10000/,
                'RLaaSLimit 1000000000 on the sliding log it inherits'],
               ['ten-mem.test', 'oplimit', qr/RLAAS0130: configuration error for .*limit 50000 on the sliding log/,
                "RLaaSStrategy sliding_log under the operator's RLaaSLimit 50000"],
               ['ten-mem2.test', 'day', qr/RLaaSWindow: invalid value '1d' in \.htaccess: expected a duration up to 1h \(RLaaSWindowMax/,
                'RLaaSWindow 1d under RLaaSWindowMax 1h'],
               ['ten-mem2.test', 'log100', qr/RLAAS0130: .*over RLaaSLogMax 50/,
                'RLaaSLimit 100 under RLaaSLogMax 50'],
               ['ten-mem.test', 'selfbound', qr/RLaaSLogMax not allowed here/, 'a tenant raising RLaaSLogMax'],
               ['ten-mem.test', 'selfroot', qr/RLaaSTenantRoot not allowed here/, 'a tenant writing RLaaSTenantRoot']) {
        my ($host, $dir, $re, $what) = @$c;
        my $v = uid('ten6');
        next_mono_second() if $re =~ /RLAAS0130/;
        my $m = error_log_mark();
        is(at($vh, $host, "/$dir/ok.txt", visitor($v))->code, 500, "$eng, $host: $what: refused with 500");
        ok(logged($m, "$dir/", $re), "$eng, $host, $dir: the log line names the file and the bound") or diag(error_log_since($m));
        next unless $redis;
        my $pattern = $dir eq 'attack' ? prefix() . "*\@$host*:127.0.0.1" : prefix() . "*$v*";
        is(scalar(keys_like($pattern)), 0, "$dir: nothing of it was written to Redis");
    }
    for my $c (['ten-mem.test', 'fixed', 'RLaaSStrategy fixed, RLaaSLimit 1000000000, RLaaSWindow 1d'],
               ['ten-mem.test', 'day', 'RLaaSWindow 1d within the default RLaaSWindowMax'],
               ['ten-mem.test', 'log100', 'RLaaSLimit 100 within the default RLaaSLogMax']) {
        my ($host, $dir, $what) = @$c;
        is(at($vh, $host, "/$dir/ok.txt", visitor(uid('ten6')))->code, 200, "$eng, $host: $what: served");
    }
}

# -------------------------------------------------- configuration errors
config_accepted("RLaaSTenantRoot /home/*/public_html /srv/mass/*\nRLaaSWindowMax 1h\nRLaaSLogMax 50\n"
    . "<VirtualHost 127.0.0.1:1>\n    RLaaSTenantRoot /srv/www/special/\n    RLaaSWindowMax 30d\n</VirtualHost>\n",
    'RLaaSTenantRoot, RLaaSWindowMax and RLaaSLogMax at server and virtual-host level');
for my $c (['srv/mass/*', qr/RLaaSTenantRoot: invalid pattern 'srv\/mass\/\*': expected an absolute directory path/],
           ['/home/user*/www', qr/RLaaSTenantRoot: invalid pattern '\/home\/user\*\/www': expected \* alone as a segment/],
           ['/srv/../etc', qr/RLaaSTenantRoot: invalid pattern '\/srv\/\.\.\/etc': expected a path without \. or \.\. segments/],
           ['/srv//mass', qr/RLaaSTenantRoot: invalid pattern '\/srv\/\/mass': expected a path without empty segments/],
           ['/', qr/RLaaSTenantRoot: invalid pattern '\/': expected a directory below \//]) {
    config_refused("RLaaSTenantRoot $c->[0]\n", $c->[1], "RLaaSTenantRoot $c->[0]");
}
config_refused("RLaaSTenantRoot " . join(' ', map { "/t$_/*" } 1 .. 17) . "\n",
    qr/RLaaSTenantRoot: too many patterns with '\/t17\/\*': expected at most 16/, '17 patterns');
config_refused("<Directory /srv>\n    RLaaSTenantRoot /srv/*\n</Directory>\n",
    qr/RLaaSTenantRoot not allowed (?:here|in <Directory> context)/, 'RLaaSTenantRoot in a section');
config_refused("RLaaSWindowMax 31d\n", qr/RLaaSWindowMax: invalid value '31d': expected .*from 1ms to 30d/, 'RLaaSWindowMax 31d');
config_refused("RLaaSWindowMax soon\n", qr/RLaaSWindowMax: invalid value 'soon'/, 'RLaaSWindowMax soon');
config_refused("RLaaSLogMax 0\n", qr/RLaaSLogMax: invalid value '0': expected an integer from 1 to 1000000000/, 'RLaaSLogMax 0');
config_refused("<Location /x>\n    RLaaSLogMax 5\n</Location>\n", qr/RLaaSLogMax not allowed (?:here|in <Location> context)/, 'RLaaSLogMax in a section');
config_refused("RLaaSPolicy p1 5 1m\nRLaaSPolicy p2 5 1m\nRLaaSPolicy p3 5 1m\nRLaaSPolicy p4 5 1m\n"
    . "RLaaSPolicy p5 5 1m\nRLaaSPolicy p6 5 1m\nRLaaSPolicy p7 5 1m\nRLaaSPolicy p8 5 1m\n"
    . "<Location /x>\n    RLaaSApply p1 p2 p3 p4\n    RLaaSApply p5 p6 p7 p8\n</Location>\n",
    qr/RLaaSApply: too many policies: .*counting what every RLaaSApply line of the section applies/,
    'two RLaaSApply lines of 4 and the own limit: 9');
config_accepted("RLaaSPolicy p1 5 1m\nRLaaSPolicy p2 5 1m\n"
    . "<Location /x>\n    RLaaSApply p1 p2\n    RLaaSApply -p1 p1 p2\n</Location>\n",
    'two RLaaSApply lines naming the same two policies: 2');

# A tenant's RLaaSLease is its own limit's alone: under ten-lease.test,
# whose enforced policy (1000 an hour, roomy enough for a lease to take
# portions of) applies alone in these directories, a .htaccess saying
# RLaaSLease on, or auto, does not take the host's policy into a lease:
# each request one round trip.
for my $m (qw(on auto)) {
    my $v = uid("ten-lease-$m");
    my $calls = sub { redis()->cmd('INFO', 'commandstats') =~ /cmdstat_evalsha:calls=(\d+)/ ? $1 : 0 };
    # the script loaded first: a NOSCRIPT counts as a call
    at('rlaas_ten', 'ten-lease.test', "/lease$m/ok.txt", visitor(uid('ten-lease-warm')));
    my $e0 = $calls->();
    is(codes_at(40, 'rlaas_ten', 'ten-lease.test', "/lease$m/ok.txt", visitor($v)), rep(200, 40),
        "a tenant's RLaaSLease $m: 40 requests under the host's policy admitted");
    is($calls->() - $e0, 40, "  one EVALSHA each: no lease taken of the host's policy");
}

done_testing();
