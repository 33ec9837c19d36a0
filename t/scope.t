# Who sees what (issue 24, point 5). SetHandler rlaas-metrics serves only
# where the operator set RLaaSMetrics on inside a section of the server's
# configuration: a tenant's .htaccess gets a 404 and none of the
# server-wide series. RLaaSConsole and RLaaSMetrics are refused at server
# and virtual-host level (and in an <If> that covers a whole host), so a
# tenant's SetHandler under such a host never becomes a console or the
# metrics. A console in a virtual host shows that host's zones, policies,
# most-denied identities and bans only (HTML and JSON), and what a policy
# of the main server counted for that host; the main server's console
# shows every host. Two virtual hosts, each with its own console, try to
# read each other.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use File::Spec::Functions qw(catfile);
use File::Temp qw(tempdir);
use HTTP::Tiny ();
use Time::HiRes ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my ($VA, $VB) = ('rlaas_scope_a', 'rlaas_scope_b');

sub log_has {
    my ($mark, $re) = @_;
    my $log = '';
    wait_for(sub { $log = error_log_since($mark); $log =~ $re }, 3);
    return $log;
}

# ---------------------------------------------------------------- the metrics
{
    my $res = req_close('/scope/metrics');
    is($res->code, 200, 'the operator\'s metrics (RLaaSMetrics on in a <Location>): 200');
    like($res->content, qr/^rlaas_decisions_total\{/m, '... with the series');

    for my $vhost (undef, $VA) {
        my $where = $vhost ? "a tenant of virtual host $vhost" : 'a tenant of the main server';
        next_mono_second();    # the line's gate lets one through per second
        my $m = error_log_mark();
        $res = req_close('/scope/tenant/metrics/', $vhost ? (vhost => $vhost) : ());
        is($res->code, 404, "$where: SetHandler rlaas-metrics in its .htaccess gets 404");
        unlike($res->content, qr/rlaas_|scope-|policy=/, '... and none of the series (zone names, Redis nodes)');
        like(log_has($m, qr/RLAAS0140/), qr/RLAAS0140: SetHandler rlaas-metrics without RLaaSMetrics on/,
            '... the error log says why');
    }
    # a client cannot make it log once per request: one line a second per
    # child (these requests share one keep-alive connection, one child)
    for my $c (['metrics', 'RLAAS0140'], ['admin', 'RLAAS0124']) {
        next_mono_second();
        my $m = error_log_mark();
        my $t0 = Time::HiRes::time();
        my @c = codes(30, "/scope/tenant/$c->[0]/");
        my $secs = Time::HiRes::time() - $t0;
        is(count_by(@c), '404 x30', "30 requests to a tenant's SetHandler rlaas-$c->[0]: 404");
        my $n = 0;
        wait_for(sub { $n = () = error_log_since($m) =~ /$c->[1]/g; $n >= 1 }, 3);
        ok($n >= 1 && $n <= int($secs) + 2, "... $n lines of $c->[1] in the error log (${secs}s), not one per request");
    }
    my $m = error_log_mark();
    is(hit('/scope/tenant/metricson/ok.txt'), 500, 'RLaaSMetrics on in a .htaccess (AllowOverride FileInfo Limit): 500');
    like(log_has($m, qr/RLaaSMetrics not allowed here/), qr/RLaaSMetrics not allowed here/, '... not allowed here');
}

# ---------------------------------------------------------------- where the directives are accepted
for my $d (qw(RLaaSConsole RLaaSMetrics)) {
    my $h = $d eq 'RLaaSConsole' ? 'rlaas-admin' : 'rlaas-metrics';
    config_refused("$d on\n", qr/$d not allowed here/, "$d on at server level");
    config_refused("<VirtualHost *:80>\n    $d on\n</VirtualHost>\n", qr/$d not allowed in <VirtualHost> context/,
        "$d on at virtual-host level");
    config_refused("<VirtualHost *:80>\n    <If \"true\">\n        $d on\n    </If>\n</VirtualHost>\n",
        qr/$d on: only inside a <Location>, <Directory> or <Files> section/,
        "$d on in an <If> covering a whole virtual host");
    config_refused("<If \"-R '127.0.0.0/8'\">\n    $d on\n</If>\n",
        qr/$d on: only inside a <Location>/, "$d on in an <If> at server level");
    config_accepted("<Location /x>\n    SetHandler $h\n    $d on\n</Location>\n",
        "$d on in a <Location>");
    config_accepted("<VirtualHost *:80>\n    <Location /x>\n        SetHandler $h\n        $d on\n    </Location>\n</VirtualHost>\n",
        "$d on in a <Location> of a virtual host");
    config_accepted("<Directory /tmp>\n    <Files x>\n        SetHandler $h\n        $d on\n    </Files>\n</Directory>\n",
        "$d on in <Files> inside <Directory>");
    config_accepted("<Location /x>\n    <If \"-R '127.0.0.0/8'\">\n        $d on\n    </If>\n</Location>\n",
        "$d on in an <If> inside a <Location>");
    config_accepted("<VirtualHost *:80>\n    <If \"true\">\n        $d off\n    </If>\n</VirtualHost>\n",
        "$d off in an <If> of a virtual host (it publishes nothing)");
}

# A host whose configuration had RLaaSConsole (or RLaaSMetrics) at its
# level, and a tenant tree under it with SetHandler in its .htaccess: the
# server refuses that configuration, so the tenant never gets a console.
{
    my $tree = tempdir('rlaas-scope-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0755, $tree;
    for (['admin', 'rlaas-admin'], ['metrics', 'rlaas-metrics']) {
        mkdir catfile($tree, $_->[0]);
        open my $fh, '>', catfile($tree, $_->[0], '.htaccess') or die;
        print $fh "SetHandler $_->[1]\n";
        close $fh;
        chmod 0755, catfile($tree, $_->[0]);
        chmod 0644, catfile($tree, $_->[0], '.htaccess');
    }
    for my $d (qw(RLaaSConsole RLaaSMetrics)) {
        my $sub = $d eq 'RLaaSConsole' ? 'admin' : 'metrics';
        my $conf = <<"EOC";
<VirtualHost *:*>
    ServerName tenant.example
    $d on
    RLaaSPolicy scope-secret-zone 5 1h
    Alias /tenant "$tree"
    <Directory "$tree">
        AllowOverride FileInfo
        Require all granted
    </Directory>
</VirtualHost>
EOC
        my $h = eval { private_httpd($conf) };
        ok(!$h, "$d on at virtual-host level: httpd refuses to start");
        if ($h) {
            my $res = HTTP::Tiny->new(timeout => 10)->get('http://127.0.0.1:' . $h->port . "/tenant/$sub/");
            isnt($res->{status}, 200, "... else a tenant's SetHandler under it is served: $res->{status}");
            unlike($res->{content} // '', qr/scope-secret-zone|"zones"/, '... with the server\'s data');
        }
    }
}

# ---------------------------------------------------------------- two hosts, two consoles
sub console {
    my ($vhost, $json) = @_;
    # the main server's: /adm/console-local (t/admin.t's, Require local)
    # (a client of its own: the shared policy these hosts enforce counts
    # the console's requests too)
    my $res = req($vhost ? '/scope/console' : '/adm/console-local', ($vhost ? (vhost => $vhost) : ()),
                  h => { 'X-User' => uid('scope-console'), ($json ? (Accept => 'application/json') : ()) });
    die "console of " . ($vhost // 'main') . ': ' . $res->status_line . "\n" . $res->content
        unless $res->code == 200;
    return $json ? JSON::PP::decode_json($res->content) : $res->content;
}

sub user_codes { my ($path, $u, $n, %o) = @_; join ' ', codes($n, $path, h => { 'X-User' => $u }, %o) }

my %id = map { $_ => uid("scope-$_") } qw(a a2 b b2 bs ta tb);
is(user_codes('/scope/a/zone/x', $id{a}, 3, vhost => $VA), '200 200 429', 'host A: its zone denies A (and bans it)');
is(user_codes('/scope/a/pol/x', $id{a2}, 3, vhost => $VA), '200 200 429', 'host A: its policy denies A2');
is(user_codes('/scope/b/zone/x', $id{b}, 3, vhost => $VB), '200 200 429', 'host B: its zone denies B (and bans it)');
is(user_codes('/scope/b/pol/x', $id{b2}, 3, vhost => $VB), '200 200 429', 'host B: its policy denies B2');
is(user_codes('/scope/b/x', $id{bs}, 4, vhost => $VB), '200 200 200 429',
    'host B: the main server\'s policy both hosts enforce denies BS');
# a tenant tree (the same directory under both hosts) bans in its own zone,
# counted in each host's namespace
is(user_codes('/scope/tenant/banned/ok.txt', $id{ta}, 2, vhost => $VA), '200 429', 'a tenant of A bans TA');
is(user_codes('/scope/tenant/banned/ok.txt', $id{tb}, 2, vhost => $VB), '200 429', 'a tenant of B bans TB');

my $ja = console($VA, 1);
my $jb = console($VB, 1);
my $jm = console(undef, 1);
my $ha = console($VA);
my $hb = console($VB);

my %zones_a = map { $_->{name} => $_ } @{ $ja->{zones} };
my %zones_b = map { $_->{name} => $_ } @{ $jb->{zones} };
is($ja->{scope}, 'host', 'A\'s console: scoped to its virtual host');
ok($ja->{host} && $jb->{host} && $ja->{host} ne $jb->{host}, "... each host named ($ja->{host}, $jb->{host})");
ok($zones_a{'scope-a-zone'} && $zones_a{'scope-a-pol'}, 'A\'s console lists A\'s zone and policy');
ok($zones_a{'scope-shared'}, '... and the main server\'s policy A enforces');
ok(!$zones_a{'scope-b-zone'} && !$zones_a{'scope-b-pol'}, '... never B\'s zone or policy (JSON)')
    or diag explain [grep { /scope-b/ } keys %zones_a];
ok($zones_b{'scope-b-zone'} && !$zones_b{'scope-a-zone'} && !$zones_b{'scope-a-pol'}, 'B\'s console: B\'s zone, never A\'s');
is(scalar(grep { $_->{host} ne $ja->{host} } @{ $ja->{zones} }), 0, 'every row of A\'s console is A\'s');
my $sa = $zones_a{'scope-shared'};
my $sb = $zones_b{'scope-shared'};
ok($sb && $sb->{denied} >= 1, "B's console counts B's denial in the shared policy ($sb->{denied})");
is($sa->{denied}, 0, 'A\'s console does not count B\'s denial in the policy both enforce');

my %top_a = map { ("$_->{zone} $_->{identity}" => 1) } @{ $ja->{top_denied} };
my %top_b = map { ("$_->{zone} $_->{identity}" => 1) } @{ $jb->{top_denied} };
ok($top_a{"scope-a-zone h.x-user=$id{a}"}, 'A\'s console: A among the most denied') or diag explain $ja->{top_denied};
ok($top_a{"scope-a-pol h.x-user=$id{a2}"}, '... and A2');
ok($top_b{"scope-shared h.x-user=$id{bs}"}, 'B\'s console: BS denied in the shared policy') or diag explain $jb->{top_denied};
my $ja_text = JSON::PP->new->canonical->encode($ja);
for my $k (qw(b b2 bs tb)) {
    unlike($ja_text, qr/\Q$id{$k}\E/, "A's console (JSON) never shows B's identity $k");
    unlike($ha, qr/\Q$id{$k}\E/, "A's console (HTML) never shows B's identity $k");
}
unlike($ha, qr/scope-b-/, 'A\'s console (HTML) never names B\'s zone or policy');
unlike(JSON::PP->new->encode($jb), qr/\Q$id{a}\E|\Q$id{a2}\E|scope-a-/, 'B\'s console never shows A\'s identities, zones or policies');

my $ban_a = ukey('scope-a-zone', $id{a}) . ':ban';
my $ban_b = ukey('scope-b-zone', $id{b}) . ':ban';
my %bans_a = map { $_->{key} => 1 } @{ $ja->{bans} };
my %bans_b = map { $_->{key} => 1 } @{ $jb->{bans} };
my %bans_m = map { $_->{key} => 1 } @{ $jm->{bans} };
ok($bans_a{$ban_a}, 'A\'s console lists A\'s ban') or diag explain $ja->{bans};
# (the tenant's namespace: "@<host>", with what else names its tree)
my ($tban_a) = keys_like(prefix() . "scope-tban\@scope-a.test*:h.x-user=$id{ta}:ban");
my ($tban_b) = keys_like(prefix() . "scope-tban\@scope-b.test*:h.x-user=$id{tb}:ban");
ok($tban_a && $tban_b, "the tenants' bans are in Redis ($tban_a, $tban_b)");
$_ //= '-' for $tban_a, $tban_b;
ok($bans_a{$tban_a} && !$bans_a{$tban_b}, 'A\'s console lists its tenant\'s ban, never B\'s tenant\'s')
    or diag explain $ja->{bans};
ok($bans_b{$tban_b} && !$bans_b{$tban_a}, 'B\'s console lists its tenant\'s ban, never A\'s tenant\'s');
ok(!$bans_a{$ban_b}, '... never B\'s');
ok($bans_b{$ban_b} && !$bans_b{$ban_a}, 'B\'s console lists B\'s ban, never A\'s');
like($ha, qr/\Q$ban_a\E/, 'A\'s console (HTML): A\'s ban');
unlike($ha, qr/\Q$ban_b\E/, '... never B\'s');

is($ja->{redis}, undef, 'A\'s console does not give the server\'s Redis address');
ok(!grep({ defined $_->{calls} } @{ $ja->{children} }), '... nor the server\'s Redis traffic');
my $redis = $jm->{redis} // '';
ok($redis =~ /:\d+$/, "the main server's console gives it ($redis)");
unlike($ha, qr/\Q$redis\E/, 'A\'s console (HTML) does not show it');

# the main server's console: every host, each row and identity with its host
is($jm->{scope}, 'server', 'the main server\'s console: the whole server');
my %top_m = map { ("$_->{host} $_->{zone} $_->{identity}" => 1) } @{ $jm->{top_denied} };
ok($top_m{"$ja->{host} scope-a-zone h.x-user=$id{a}"} && $top_m{"$jb->{host} scope-b-zone h.x-user=$id{b}"},
    '... shows both hosts\' identities, each with its host') or diag explain $jm->{top_denied};
my ($ma) = grep { $_->{name} eq 'scope-shared' && $_->{host} eq $ja->{host} } @{ $jm->{zones} };
my ($mb) = grep { $_->{name} eq 'scope-shared' && $_->{host} eq $jb->{host} } @{ $jm->{zones} };
ok($ma && $mb && $mb->{denied} >= 1 && $ma->{denied} == 0, '... and the shared policy per host');
ok($ma && $sa->{allowed} >= 4 && $ma->{allowed} == $sa->{allowed} && $mb->{allowed} == $sb->{allowed},
    "A's console counts what the shared policy decided for A only ($sa->{allowed} allowed; B: $sb->{allowed})");
ok($bans_m{$ban_a} && $bans_m{$ban_b}, '... and both hosts\' bans');

# a graceful restart keeps each host's rows and identities (the hosts are
# the same), and still none of the other's
{
    ok(graceful_restart(), 'graceful restart');
    my $j = console($VA, 1);
    my ($z) = grep { $_->{name} eq 'scope-a-zone' } @{ $j->{zones} };
    ok($z && $z->{denied} >= 1, 'after it, A\'s console still counts A\'s denials')
        or diag explain $z;
    ok((grep { $_->{identity} eq "h.x-user=$id{a}" } @{ $j->{top_denied} }), '... and lists A');
    unlike(JSON::PP->new->encode($j), qr/\Q$id{b}\E|\Q$id{bs}\E|scope-b-/, '... and nothing of B');
}

# B's console acts on B's zones only (as before), and a tenant under A
# gets no console from its .htaccess
{
    my $res = req({ path => '/scope/console', method => 'POST', vhost => $VB,
                    content => "action=unban&zone=scope-a-zone&id=$id{a}",
                    headers => { 'Content-Type' => 'application/x-www-form-urlencoded',
                                 Accept => 'application/json', 'X-User' => uid('scope-console'),
                                 Origin => 'http://' . Apache::TestRLaaS::hostport($VB) } });
    is($res->code, 404, 'B\'s console cannot unban A in A\'s zone: no such zone on B');
    is(redis_cmd('EXISTS', $ban_a), 1, '... A stays banned');
    $res = req('/scope/tenant/admin/', vhost => $VA, h => { Accept => 'application/json', 'X-User' => uid('scope-t') });
    is($res->code, 404, 'a tenant of A with SetHandler rlaas-admin in its .htaccess: 404');
    unlike($res->content, qr/scope-|"zones"/, '... none of the console\'s data');
}

done_testing();
