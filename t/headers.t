# Rate-limit header fields: RLaaSHeaders draft (RateLimit-Policy and
# RateLimit, the default), legacy (X-RateLimit-*), both and off; their values
# under each of the six strategies; on responses made by other handlers
# (static file, 404, CGI, a CGI's 500, ErrorDocument); while Redis is
# unreachable; and Retry-After on every 429, never earlier than the real wait.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use POSIX qw(ceil);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my @FIVE = qw(RateLimit-Policy RateLimit X-RateLimit-Limit X-RateLimit-Remaining X-RateLimit-Reset);

# '"name";a=1;b=2' -> (name, {a => 1, b => 2}); () if it does not parse
sub sf {
    my $v = shift;
    return () unless defined $v && $v =~ /^"([^"\\]*)"((?:;[a-z]+=-?\d+)*)$/;
    my ($name, %p) = ($1);
    for (split /;/, $2) { next unless length; my ($k, $x) = split /=/; $p{$k} = $x }
    return ($name, \%p);
}

sub rl_r { my (undef, $p) = sf($_[0]->header('RateLimit')); $p ? $p->{r} : undef }
sub rl_t { my (undef, $p) = sf($_[0]->header('RateLimit')); $p ? $p->{t} : undef }

sub check_retry_after {
    my ($res, $name) = @_;
    my $ra = $res->header('Retry-After');
    ok(defined $ra && $ra =~ /^[1-9]\d*$/, "$name: the 429 has Retry-After, an integer >= 1 ("
        . ($ra // 'undef') . ')');
    return $ra // 0;
}

# (the first request loads the client and Apache::Test's configuration:
# not inside a timed sequence)
req('/ok.txt');

# ---------------------------------------------------------------- strategies
# limit 5 per 5s: r = 4 3 2 1 0, then 429 with r = 0; t as the strategy
# implies. Sequences are sent on one keep-alive connection (~ms apart).
for my $st (qw(fixed sliding_log sliding token leaky gcra)) {
    my $zone = { fixed => 'sig-h-fixed', sliding_log => 'sig-h-log', sliding => 'sig-h-sliding',
                 token => 'sig-h-token', leaky => 'sig-h-leaky', gcra => 'sig-h-gcra' }->{$st};
    # fixed and sliding count in wall-clock windows: start early in one
    wait_fixed_window(5000, 1000) if $st eq 'fixed' || $st eq 'sliding';
    my $u = uid("h-$st");
    my $before = redis_time_ms();
    my $t0 = time;
    my @res = map { req("/sig/h/st/$st", h => { 'X-User' => $u }) } 1 .. 6;
    my $took = time - $t0;
    my $after = redis_time_ms();

    my @pol = map { $_->header('RateLimit-Policy') // 'none' } @res;
    is_deeply(\@pol, [("\"$zone\";q=5;w=5") x 6],
        "$st: RateLimit-Policy \"$zone\";q=5;w=5 on allowed and denied responses");
    my @names = map { (sf($_->header('RateLimit')))[0] // 'none' } @res;
    is_deeply(\@names, [($zone) x 6], "$st: RateLimit names the same policy on every response");
    my @t = map { rl_t($_) // -1 } @res;
    my $ra = 0;
    SKIP: {
        # token, leaky and gcra give a unit back each second: the 6th is
        # denied, and r counts down by one, when all six came within 1s of
        # the first (the others count over the 5s window)
        if ($st =~ /^(?:token|leaky|gcra)$/ && $took > 0.9) {
            diag("$st: the sequence took ${took}s, more than 0.9s (a unit comes back each second): "
                . 'its codes, r, RLAAS_STATUS and Retry-After not judged');
            skip "the sequence took ${took}s (a unit comes back each second)", 4;
        }
        is(join(' ', map { $_->code } @res), '200 200 200 200 200 429',
            "$st, limit 5: five allowed, then 429");
        is(join(' ', map { rl_r($_) // 'none' } @res), '4 3 2 1 0 0',
            "$st: RateLimit r = 4 3 2 1 0, and 0 on the 429");
        is(join(' ', map { status_of($_) // 'unset' } @res), join(' ', ('allowed') x 5, 'denied'),
            "$st: RLAAS_STATUS allowed x5, denied");
        $ra = check_retry_after($res[5], $st);
    }

    if (($st eq 'fixed' || $st eq 'sliding') && int($before / 5000) != int($after / 5000)) {
        SKIP: { skip "$st: the sequence crossed a window boundary (took ${took}s)", $st eq "fixed" ? 3 : 2 }
    }
    elsif ($st eq 'fixed') {
        # t: until the end of the 5s bucket, by Redis time
        my ($lo, $hi) = (ceil((5000 - $after % 5000) / 1000), ceil((5000 - $before % 5000) / 1000));
        my @bad = grep { $_ < $lo || $_ > $hi || $_ < 1 || $_ > 5 } @t;
        ok(!@bad, "fixed: t = seconds to the end of the bucket, in [$lo, $hi] and <= 5 (t = @t)");
        ok(!grep({ $t[$_] > $t[$_ - 1] } 1 .. $#t), "fixed: t never grows within a bucket (@t)");
        is($ra, $t[5], "fixed: Retry-After = t on the 429 (the bucket's end) ($ra)");
    }
    elsif ($st eq 'sliding_log') {
        # the newest hit leaves the window after 5s; the oldest too (for the retry)
        SKIP: {
            skip "the sequence took ${took}s", 2 if $took > 0.9;
            is("@t", '5 5 5 5 5 5', 'sliding_log: t = 5 (the window) on every response');
            is($ra, 5, 'sliding_log: Retry-After 5 (the oldest hit leaves after 5s)');
        }
    }
    elsif ($st eq 'sliding') {
        # the current window's count is gone at the end of the next window:
        # t = ceil((2W - e) / 1000), e = time into the current window
        my ($eb, $ea) = ($before % 5000, $after % 5000);
        my ($lo, $hi) = (ceil((10000 - $ea) / 1000), ceil((10000 - $eb) / 1000));
        my @bad = grep { $_ < $lo || $_ > $hi } @t;
        ok(!@bad, "sliding: t = ceil((2 x window - elapsed) s), in [$lo, $hi] (t = @t)");
        # the next window weighs the 5 hits of this one: one fits once
        # ceil(5 x (W - e2) / W) <= 4, i.e. 1s into the next window
        my ($rlo, $rhi) = (ceil((6000 - $ea) / 1000), ceil((6000 - $eb) / 1000));
        ok($ra >= $rlo && $ra <= $rhi, "sliding: Retry-After = 1s into the next window, in [$rlo, $rhi] ($ra)");
    }
    else {
        # one unit per second: t counts the units used; one unit back in 1s
        SKIP: {
            skip "the sequence took ${took}s (a unit comes back each second)", 2 if $took > 0.9;
            is("@t", '1 2 3 4 5 5', "$st: t = 1 2 3 4 5 (one second per unit used), 5 on the 429");
            is($ra, 1, "$st: Retry-After 1 (one unit comes back after 1s)");
        }
    }
}

# ---------------------------------------------------------------- modes
{
    my $u = uid('h-draft');
    my @r = map { req('/sig/h/mode/draft', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', 'RLaaSHeaders draft: limit 3');
    is_deeply([map { $_->header('RateLimit') } @r],
        ['"sig-h-draft";r=2;t=10', '"sig-h-draft";r=1;t=10', '"sig-h-draft";r=0;t=10', '"sig-h-draft";r=0;t=10'],
        'draft: RateLimit "zone";r=2,1,0,0;t=10 (sliding log, 10s window)');
    my @legacy = grep { my $res = $_; grep { defined $res->header($_) } @FIVE[2 .. 4] } @r;
    is(scalar(@legacy), 0, 'draft: no X-RateLimit-* fields');
}
{
    my $u = uid('h-legacy');
    my @r = map { req('/sig/h/mode/legacy', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', 'RLaaSHeaders legacy: limit 3');
    is(join(' ', map { $_->header('X-RateLimit-Limit') // 'none' } @r), '3 3 3 3',
        'legacy: X-RateLimit-Limit 3 on every response');
    is(join(' ', map { $_->header('X-RateLimit-Remaining') // 'none' } @r), '2 1 0 0',
        'legacy: X-RateLimit-Remaining 2 1 0 0');
    is(join(' ', map { $_->header('X-RateLimit-Reset') // 'none' } @r), '10 10 10 10',
        'legacy: X-RateLimit-Reset 10 (seconds until the quota is back, as t)');
    is(scalar(grep { defined $_->header('RateLimit') || defined $_->header('RateLimit-Policy') } @r), 0,
        'legacy: no RateLimit / RateLimit-Policy fields');
}
{
    my $u = uid('h-both');
    my @r = map { req('/sig/h/mode/both', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', 'RLaaSHeaders both: limit 3');
    my @all = grep { my $res = $_; 5 == grep { defined $res->header($_) } @FIVE } @r;
    is(scalar(@all), 4, 'both: all five fields on every response, the 429 included');
    my @same = grep {
        my (undef, $p) = sf($_->header('RateLimit'));
        my (undef, $q) = sf($_->header('RateLimit-Policy'));
        $p && $q && $p->{r} == $_->header('X-RateLimit-Remaining')
            && $p->{t} == $_->header('X-RateLimit-Reset')
            && $q->{q} == $_->header('X-RateLimit-Limit')
    } @r;
    is(scalar(@same), 4, 'both: the legacy fields carry the same numbers (q, r, t) as the draft ones');
}
{
    my $u = uid('h-off');
    my @r = map { req('/sig/h/mode/off', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', 'RLaaSHeaders off: still limited');
    my @any = map { my $res = $_; grep { defined $res->header($_) } @FIVE } @r;
    is_deeply(\@any, [], 'off: none of the five fields, on allowed or denied responses');
    check_retry_after($r[3], 'RLaaSHeaders off');
}
{
    my $u = uid('h-nozone');
    my $r = req('/sig/h/mode/nozone', h => { 'X-User' => $u });
    is($r->header('RateLimit-Policy'), '"default";q=3;w=10', 'no RLaaSZone: the policy is called "default"');
    is($r->header('RateLimit'), '"default";r=2;t=10', 'no RLaaSZone: RateLimit "default";r=2;t=10');
}
{
    my $u = uid('h-w');
    is(req('/sig/h/w1500', h => { 'X-User' => $u })->header('RateLimit-Policy'), '"sig-h-w1500";q=3;w=2',
        'RLaaSWindow 1500ms: w=2 (whole seconds, rounded up)');
    is(req('/sig/h/w300', h => { 'X-User' => $u })->header('RateLimit-Policy'), '"sig-h-w300";q=3;w=1',
        'RLaaSWindow 300ms: w=1 (at least 1)');
    my $r = req('/sig/h/w300', h => { 'X-User' => $u });
    like($r->header('RateLimit') // '', qr/^"sig-h-w300";r=1;t=1$/, 'RLaaSWindow 300ms: t=1 (rounded up)');
    is(req('/sig/h/w2m', h => { 'X-User' => $u })->header('RateLimit-Policy'), '"sig-h-w2m";q=3;w=120',
        'RLaaSWindow 2m: w=120');
}

# ---------------------------------------------------------------- other handlers
{
    my $u = uid('h-other');
    my %h = (h => { 'X-User' => $u });
    my @cases = (
        ['/sigo/static.txt',       200, qr/^ok\n\z/,            'a static file'],
        ['/sigo/missing.html',     404, qr/Not Found/,          'a 404 (no such file)'],
        ['/sigcgi/ok.cgi',         200, qr/^cgi ok\n\z/,        'a CGI script'],
        ['/sigcgi/status500.cgi',  500, qr/^cgi failed\n\z/,    'a CGI script answering 500 itself'],
        ['/sigcgi/broken.cgi',     500, qr/Internal Server Error/, 'a broken CGI script (httpd answers 500)'],
        ['/sigo/errdoc/missing',   404, qr/^custom 404 page\n\z/, 'an ErrorDocument 404 page'],
    );
    my $r = 99;
    for my $c (@cases) {
        my ($path, $code, $body, $name) = @$c;
        my $res = req($path, %h);
        is($res->code, $code, "$name: $code");
        like($res->content, $body, "$name: the body is the handler's");
        is($res->header('RateLimit-Policy'), '"sig-other";q=100;w=3600', "$name: RateLimit-Policy");
        is($res->header('RateLimit'), "\"sig-other\";r=$r;t=3600", "$name: RateLimit r=$r (counted once)");
        is(status_of($res), 'allowed', "$name: RLAAS_STATUS=allowed");
        $r--;
    }
    my $u2 = uid('h-other429');
    my $a = req('/sigo/errdoc429/x', h => { 'X-User' => $u2 });
    is($a->code, 404, 'ErrorDocument 429 section: first request allowed (404)');
    my $d = req('/sigo/errdoc429/x', h => { 'X-User' => $u2 });
    is($d->code, 429, 'ErrorDocument 429 section: second request denied');
    is($d->content, "custom 429 page\n", 'the 429 is the ErrorDocument page');
    is($d->header('RateLimit'), '"sig-other-429";r=0;t=3600', 'the ErrorDocument 429 carries RateLimit r=0');
    is($d->header('RateLimit-Policy'), '"sig-other-429";q=1;w=3600', 'and RateLimit-Policy');
    check_retry_after($d, 'ErrorDocument 429');
}

# ---------------------------------------------------------------- Redis down
{
    my $u = uid('h-dead');
    my %o = (vhost => 'rlaas_sig_dead', h => { 'X-User' => $u });
    for my $c (['/sig/dead/open/x', 200, 'fail_open', 'fail open'],
               ['/sig/dead/x', 500, 'error', 'fail closed']) {
        my ($path, $code, $st, $name) = @$c;
        my $res = req($path, %o);
        is($res->code, $code, "Redis unreachable, $name: $code");
        is(status_of($res), $st, "Redis unreachable, $name: RLAAS_STATUS=$st");
        is($res->header('RateLimit-Policy'), '"sig-dead";q=5;w=10',
            "Redis unreachable, $name: RateLimit-Policy is sent (the policy is known)");
        ok(!defined $res->header('RateLimit'), "Redis unreachable, $name: no RateLimit (nothing is known)");
    }
    my $res = req('/sig/dead/both/x', %o);
    is($res->code, 200, 'Redis unreachable, RLaaSHeaders both, fail open: 200');
    is($res->header('X-RateLimit-Limit'), 5, 'Redis unreachable: X-RateLimit-Limit is sent');
    ok(!defined $res->header('X-RateLimit-Remaining') && !defined $res->header('X-RateLimit-Reset'),
        'Redis unreachable: no X-RateLimit-Remaining / X-RateLimit-Reset');
    ok(defined $res->header('RateLimit-Policy') && !defined $res->header('RateLimit'),
        'Redis unreachable, both: RateLimit-Policy, no RateLimit');
}

# ---------------------------------------------------------------- Retry-After
# limit 2 per 2s: after Retry-After N seconds (+ 150 ms) a request succeeds
{
    my @wait;
    for my $st (qw(fixed sliding_log sliding token leaky gcra)) {
        wait_fixed_window(2000, 400) if $st eq 'fixed';
        my $u = uid("ra-$st");
        my @r = map { req("/sig/ra/$st", h => { 'X-User' => $u }) } 1 .. 3;
        my $got = time;
        is(join(' ', map { $_->code } @r), '200 200 429', "Retry-After, $st: limit 2, third request denied");
        my $ra = check_retry_after($r[2], "Retry-After, $st");
        ok($ra <= 4, "Retry-After, $st: at most 2 windows ($ra)");
        is($ra, 1, "Retry-After, $st: 1 (one unit back after 1s)") if $st =~ /^(?:token|leaky|gcra)$/;
        push @wait, [$st, $u, $got + $ra + 0.15, $ra];
    }
    for my $w (sort { $a->[2] <=> $b->[2] } @wait) {
        my ($st, $u, $when, $ra) = @$w;
        my $d = $when - time;
        sleep $d if $d > 0;
        my $res = req("/sig/ra/$st", h => { 'X-User' => $u });
        is($res->code, 200, "Retry-After, $st: a request sent $ra s (+150 ms) after the 429 is allowed");
    }
}

done_testing();
