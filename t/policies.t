# Several limits on one request: named policies (RLaaSPolicy) applied by
# sections (RLaaSApply, accumulated down the tree, -NAME and none), the
# section's own limit as one more; all decided in one Redis call, all or
# nothing (a denial charges no policy); Retry-After the longest wait;
# RateLimit-Policy every policy, RateLimit the one closest to its limit;
# RLAAS_POLICY; costs (RLaaSCost) and limits read per request (RLaaSLimit
# expr=, bounded by RLaaSLimitMax); per-policy metrics; one EVALSHA per
# request (INFO commandstats); exactness under 300 concurrent requests.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub hdr { my ($res, $h) = @_; $res->header($h) // '' }
sub policies_of { join ' ', hdr($_[0], 'RateLimit-Policy') =~ /"([^"]+)"/g }
sub rl { hdr($_[0], 'RateLimit') }
sub policy_of { $_[0]->header('X-RLaaS-Policy') }
sub pkey { my ($zone, $u, $suffix) = @_; rkey($zone, tseg('h.x-user', $u)) . ($suffix // '') }

# ---------------------------------------------------------------- two policies
{
    my $u = uid('pol-two');
    my @r = map { req('/pol/two', h => { 'X-User' => $u }) } 1 .. 5;
    is(join(' ', map { $_->code } @r), '200 200 200 429 429',
        'pol-small (3 per hour) and pol-big (5 per hour): the smaller quota holds');
    is(hdr($r[0], 'RateLimit-Policy'), '"pol-small";q=3;w=3600, "pol-big";q=5;w=3600',
        'RateLimit-Policy lists both');
    is(rl($r[0]), '"pol-small";r=2;t=3600', 'RateLimit: the policy closest to its limit (2 left of 3, not 4 of 5)');
    is(rl($r[2]), '"pol-small";r=0;t=3600', 'then 0 left');
    is(policy_of($r[1]), 'pol-small', 'RLAAS_POLICY names it when allowed');
    is(policy_of($r[3]), 'pol-small', 'and names the policy that denied');
    is(status_of($r[3]), 'denied', 'RLAAS_STATUS denied');
    is(hdr($r[3], 'X-RateLimit-Limit'), '', 'legacy fields only with RLaaSHeaders legacy or both');
    is(redis_cmd('ZCARD', pkey('pol-small', $u)), 3, "pol-small's log holds the 3 admitted requests");
    my $tb = redis_cmd('HGET', pkey('pol-big', $u, ':tb'), 'tokens');
    # 5 per hour: a token is 720000 ticks (one refilled each ms); 3 used
    is(int($tb / 720_000), 2, "pol-big's bucket was charged for the 3 admitted requests only, not for the 2 denied");
}

# ---------------------------------------------------------------- waits
{
    my $u = uid('pol-waits');
    my @r = map { req('/pol/waits', h => { 'X-User' => $u }) } 1 .. 2;
    is(join(' ', map { $_->code } @r), '200 429', 'pol-10s and pol-1h, one each: the second denied by both');
    my $ra = hdr($r[1], 'Retry-After');
    ok($ra > 3500 && $ra <= 3600, "Retry-After is the longer wait, pol-1h's ($ra s), not pol-10s'");
    is(policy_of($r[1]), 'pol-1h', 'RLAAS_POLICY: the denial with the longest wait');
    like(rl($r[1]), qr/^"pol-1h";r=0;t=/, 'RateLimit shows it too');
    my $tid = uid('pol-log');
    req('/pol/waits', h => { 'X-User' => $u, 'X-Test-Id' => $tid });
    my @l = log_lines_with('rlaas_policy_log', $tid, 1);
    like($l[0] // '', qr/^\Q$tid\E 429 denied pol-1h 0 \/pol\/waits$/, 'CustomLog %{RLAAS_POLICY}e logs it');
}

# ---------------------------------------------------------------- the tree
for my $c (
    ['/pol/tree',            'pol-t1 pol-t2',        'RLaaSApply pol-t1 pol-t2'],
    ['/pol/tree/more',       'pol-t1 pol-t2 pol-t3', 'a child section adds pol-t3 to the inherited ones'],
    ['/pol/tree/minus',      'pol-t2',               'RLaaSApply -pol-t1 removes an inherited one'],
    ['/pol/tree/none',       '',                     'RLaaSApply none removes all inherited ones'],
    ['/pol/tree/none/again', 'pol-t3',               'and below, a section applies again'],
    ['/pol/tree/off',        '',                     'RLaaSEngine off: no applied policy'],
) {
    my ($path, $want, $name) = @$c;
    my $res = req($path, h => { 'X-User' => uid('pol-tree') });
    is($res->code, 200, "$path: 200");
    is(policies_of($res), $want, "$name ($path: " . ($want || 'none') . ')');
    is(status_of($res), ($want ? 'allowed' : undef), "$path: " . ($want ? 'limited' : 'not limited'));
}

# ---------------------------------------------------------------- own limit
{
    my $u = uid('pol-own');
    my @r = map { req('/pol/own', h => { 'X-User' => $u }) } 1 .. 3;
    is(join(' ', map { $_->code } @r), '200 200 429', "the section's own limit (2) with pol-t1 (100): 2 allowed");
    is(policies_of($r[0]), 'pol-t1 pol-own', 'its own limit is one more policy, named by its zone');
    is(policy_of($r[2]), 'pol-own', 'denied by it');
    is(redis_cmd('ZCARD', pkey('pol-t1', $u)), 2, 'pol-t1 charged for the 2 admitted requests only');

    my $d = uid('pol-own-dry');
    my @s = map { status_of(req('/pol/own/dry', h => { 'X-User' => $d })) } 1 .. 4;
    is("@s", 'allowed allowed dry_run_denied dry_run_denied', 'RLaaSDryRun on: its own limit would deny, nothing is refused');
    is(redis_cmd('ZCARD', pkey('pol-t1', $d)), 4,
        "a dry run's denial blocks no other policy: pol-t1 charged for the 4 served requests");
}

# ---------------------------------------------------------------- per IP and per user
{
    my $u = uid('pol-both');
    my $r = req('/pol/both', h => { 'X-User' => $u });
    is($r->code, 200, 'per IP and per user together');
    ok(redis_cmd('EXISTS', rkey('pol-ip', '127.0.0.1')), 'pol-ip counts the client address');
    ok(redis_cmd('EXISTS', rkey('pol-user-ip', tseg('h.x-user', $u), 'ip=127.0.0.1')),
        'pol-user-ip counts the user at that address');
}

# ---------------------------------------------------------------- login
{
    redis_cmd('DEL', rkey('pol-login-ip', '127.0.0.1'), rkey('pol-login-user', 'bob'), rkey('pol-login-user', 'carol'));
    my @g = map { req('/pol/login', auth => ['bob', 'guess']) } 1 .. 4;
    is(join(' ', map { $_->code } @g), '401 401 401 429',
        'a login page, per user (3) and per address (5): 3 wrong passwords for bob, then 429 (before the password is checked)');
    is($g[3]->header('X-RLaaS-Policy'), 'pol-login-user', 'denied by the per-user policy');
    is(redis_cmd('ZCARD', rkey('pol-login-user', 'bob')), 3, 'bob: 3 attempts');
    my @c = map { req('/pol/login', auth => ['carol', 'carol-pw'])->code } 1 .. 3;
    is("@c", '200 200 429', 'carol, same address: the per-address policy allows 2 more (5 in all), then 429');
    is(redis_cmd('ZCARD', rkey('pol-login-ip', '127.0.0.1')), 5,
        "the address counted bob's 3 attempts and carol's 2, not the denied ones");
}

# ---------------------------------------------------------------- costs
{
    my $u = uid('pol-cost');
    my @r = map { req('/pol/cost', h => { 'X-User' => $u }) } 1 .. 3;
    is(join(' ', map { $_->code } @r), '200 200 429', 'RLaaSCost 4 against RLaaSLimit 10: 2 requests, the third does not fit');
    is(rl($r[1]), '"pol-cost-own";r=2;t=' . (rl($r[1]) =~ /t=(\d+)/)[0], 'RateLimit: 2 units left');
    my @z = map { req('/pol/cost/zero', h => { 'X-User' => $u })->code } 1 .. 3;
    is("@z", '200 200 200', 'RLaaSCost 0 checks without consuming: 2 units left, allowed');
    my @k = keys_like(pkey('pol-cost-own', $u) . ':*');
    is(redis_cmd('GET', $k[0]), 8, 'and charged nothing');

    my $v = uid('pol-cost-x');
    my @e = map { req('/pol/cost/expr', h => { 'X-User' => $v, 'X-Cost' => $_ })->code } 3, 3, 3;
    is("@e", '200 200 200', 'RLaaSCost expr=%{HTTP:X-Cost}: 3 + 3 + 3');
    is(req('/pol/cost/expr', h => { 'X-User' => $v, 'X-Cost' => 2 })->code, 429, '2 more do not fit in 1');
    my $m = error_log_mark();
    is(req('/pol/cost/expr', h => { 'X-User' => $v, 'X-Cost' => 'lots' })->code, 200,
        'an expression that gives no integer costs 1');
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /RLAAS0070/ }, 3);
    like($log, qr/RLAAS0070: RLaaSCost expr= gave 'lots'/, 'and is logged (RLAAS0070)');
    my $w = uid('pol-cost-big');
    is(req('/pol/cost/expr', h => { 'X-User' => $w, 'X-Cost' => 99 })->code, 200, 'a cost above the limit costs 1');
    is(rl(req('/pol/cost/expr', h => { 'X-User' => $w, 'X-Cost' => 0 })) =~ /r=(\d+)/ ? $1 : '', 9, '9 left');

    my $a = uid('pol-cost-a');
    my @p = map { req('/pol/cost/applied', h => { 'X-User' => $a }) } 1 .. 3;
    is(join(' ', map { $_->code } @p), '200 200 429', 'RLaaSCost 5 applies to pol-cost (10) that the section applies');
    is(policy_of($p[2]), 'pol-cost', 'pol-cost denied');
}

# ---------------------------------------------------------------- limits per request
{
    my %o = (vhost => 'rlaas_pol_plans');
    my $u = uid('pol-plan');
    my @c = map { req('/pol/plan', %o, h => { 'X-User' => $u, 'X-Plan' => 5 })->code } 1 .. 6;
    is("@c", '200 200 200 200 200 429', 'RLaaSLimit expr=%{HTTP:X-Plan}: a plan of 5');
    my $v = uid('pol-plan-big');
    my @b = map { req('/pol/plan', %o, h => { 'X-User' => $v, 'X-Plan' => 1_000_000 }) } 1 .. 21;
    is(count_by(map { $_->code } @b), '200 x20 429 x1', 'a plan of 1000000: bounded by RLaaSLimitMax 20');
    like(hdr($b[0], 'RateLimit-Policy'), qr/^"pol-plan";q=20;/, 'q is the limit in force');
    my $w = uid('pol-plan-fb');
    my @f = map { req('/pol/plan', %o, h => { 'X-User' => $w })->code } 1 .. 3;
    is("@f", '200 200 429', 'no plan: the fallback (2)');
    my $x = uid('pol-plan-x');
    my @g = map { req('/pol/plan', %o, h => { 'X-User' => $x, 'X-Plan' => 'gold' })->code } 1 .. 3;
    is("@g", '200 200 429', 'a plan that is no integer: the fallback');
    my $t = uid('pol-plan-tb');
    my @t = map { req('/pol/plan/token', %o, h => { 'X-User' => $t, 'X-Plan' => $_ }) } 5, 2, 2, 2, 5;
    is(join(' ', map { $_->code } @t), '200 200 200 429 429',
        'a token bucket follows the limit: plan 5, one used; plan 2: it holds 2, both used; plan 5: what was spent stays spent');
    is(join(' ', map { rl($_) =~ /r=(\d+)/ ? $1 : '-' } @t), '4 1 0 0 0', 'RateLimit r along the way');
    is(join(' ', map { hdr($_, 'RateLimit-Policy') =~ /q=(\d+)/ ? $1 : '-' } @t), '5 2 2 2 5', 'q follows the plan');
    my $k = rkey('pol-plan-token', tseg('h.x-user', $t)) . ':tb';
    is(redis_cmd('HGET', $k, 'l'), 2, 'the bucket keeps the limit it was last charged under');
    my $m = error_log_mark();
    my $r = req('/pol/plan/nofallback', %o, h => { 'X-User' => uid('pol-plan-nofb') });
    is($r->code, 500, 'no value and no fallback: undecided, 500 (RLaaSFailOpen off)');
    is(status_of($r), 'error', 'RLAAS_STATUS error');
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ /RLAAS0021/ }, 3);
    like($log, qr/RLAAS0021: limit error: RLaaSLimit expr= gave no limit/, 'logged (RLAAS0021)');
}

# ---------------------------------------------------------------- metrics
{
    sub pdec { qq{rlaas_policy_decisions_total{policy="$_[0]",outcome="$_[1]"}} }
    my $m0 = metrics();
    my $u = uid('pol-m');
    req('/pol/two', h => { 'X-User' => $u }) for 1 .. 5;
    my $m1 = metrics();
    is(mdelta($m0, $m1, pdec('pol-small', 'allowed')), 3, 'pol-small: 3 allowed');
    is(mdelta($m0, $m1, pdec('pol-small', 'denied')), 2, 'pol-small: 2 denied');
    is(mdelta($m0, $m1, pdec('pol-big', 'allowed')), 3, 'pol-big: 3 allowed (charged)');
    is(mdelta($m0, $m1, pdec('pol-big', 'denied')), 0, 'pol-big: denied nothing');
    ok(exists $m1->{ pdec('other', 'allowed') }, 'an "other" row');
    is(mdelta($m0, $m1, qq{rlaas_decisions_total{strategy="sliding_log",outcome="denied"}}), 2,
        'rlaas_decisions_total counts requests, under the strategy of the policy shown');
}

# ---------------------------------------------------------------- one EVALSHA
{
    my $r = redis();
    req('/pol/cmd', h => { 'X-User' => uid('pol-cmd-warm') });    # the multi script loaded
    redis_cmd('CONFIG', 'RESETSTAT');
    my $u = uid('pol-cmd');
    my @c = map { req('/pol/cmd', h => { 'X-User' => "$u-$_" })->code } 1 .. 20;
    my $info = redis_cmd('INFO', 'commandstats');
    my ($calls) = $info =~ /^cmdstat_evalsha:calls=(\d+)/m;
    my ($evals) = $info =~ /^cmdstat_eval:calls=(\d+)/m;
    is(count_by(@c), '200 x20', '20 requests, two policies each');
    is($calls, 20, 'INFO commandstats: one EVALSHA per request, not one per policy');
    ok(!$evals, 'no EVAL');
    my ($tm) = $info =~ /^cmdstat_time:calls=(\d+)/m;
    is($tm, 20, "one TIME per request: the policies' scripts run in one call");
}

# ---------------------------------------------------------------- exactness
for my $case (['/pol/exact', 'pol-ex-small', 'pol-ex-big', sub { redis_cmd('ZCARD', pkey('pol-ex-big', $_[0])) }],
              # sliding: (prev * 2^24 + current) * 4 + window mod 4
              ['/pol/exact2', 'pol-ex2-small', 'pol-ex2-big',
               sub { my $v = redis_cmd('GET', pkey('pol-ex2-big', $_[0], ':sw')); defined $v ? int($v / 4) % 2**24 : 'none' }]) {
    my ($path, $small, $big, $count) = @$case;
    wait_fixed_window(3_600_000, 30_000) if $small =~ /ex2/;
    my $u = uid('pol-exact');
    my $m0 = metrics();
    my $h = start_clients(clients => [map { [{ path => $path, h => { 'X-User' => $u }, n => 10, go => 1 }] } 1 .. 30]);
    release_clients($h);
    my @res = wait_clients($h);
    my $m1 = metrics();
    is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } @res), '200/allowed x100 429/denied x200',
        "$path: 300 requests from 30 concurrent clients against $small (100) and $big (1000): exactly 100 allowed");
    is($count->($u), 100, "$big counts the 100 admitted requests only");
    is(mdelta($m0, $m1, qq{rlaas_policy_decisions_total{policy="$small",outcome="denied"}}), 200, "$small denied 200");
    is(mdelta($m0, $m1, qq{rlaas_policy_decisions_total{policy="$big",outcome="allowed"}}), 100, "$big: 100 allowed");
}

done_testing();
