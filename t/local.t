# RLaaSBackend local: every strategy allows its limit and then answers 429,
# and a client sees what the Redis backend would show it: the same
# statuses, the same header fields with the same values, the same
# Retry-After, the same body. Redis is never asked (the virtual host's
# RLaaSRedis points where nothing listens). Dry runs, metrics, and the new
# directives' bad values refused by apachectl -t.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my @ST = qw(fixed sliding_log sliding token leaky gcra);
my $LV = 'rlaas_local';
# the server's count of local decisions while Redis failed, before this
# file's requests (another test may have made some)
my $LOCAL0 = status_auto()->{RLaaSLocal};

sub dec { qq{rlaas_decisions_total{strategy="$_[0]",outcome="$_[1]"}} }
sub st_line { join ' ', map { $_->code . '/' . (status_of($_) // '-') } @_ }

# The header fields a client reads, numbers aside.
sub shape {
    my ($res) = @_;
    return join ' ', map {
        my $v = $res->header($_);
        defined $v ? "$_: " . ($v =~ s/\d+/N/gr) : ()
    } qw(RateLimit-Policy RateLimit X-RateLimit-Limit X-RateLimit-Remaining
         X-RateLimit-Reset Retry-After Content-Type);
}

sub num { my ($res, $h, $re) = @_; my $v = $res->header($h) // ''; $v =~ $re ? $1 : undef }

my $m0 = metrics();
for my $s (@ST) {
    # both engines in the same 10 s wall-clock window
    wait_fixed_window(10_000, 4000) if $s eq 'fixed' || $s eq 'sliding';
    my $u = uid("lo-$s");
    my @lo = map { req("/lo/st/$s", vhost => $LV, h => { 'X-User' => $u }) } 1 .. 4;
    my @re = map { req("/lo/redis/$s", h => { 'X-User' => $u }) } 1 .. 4;
    is(st_line(@lo), '200/allowed 200/allowed 200/allowed 429/denied',
        "$s: the local engine allows 3 of 4 (limit 3)");
    is(st_line(@lo), st_line(@re), "$s: as the Redis backend does");
    for my $i (0 .. 3) {
        my $n = $i + 1;
        is(shape($lo[$i]), shape($re[$i]), "$s, request $n: the same header fields as with Redis");
        is($lo[$i]->header('RateLimit-Policy'), $re[$i]->header('RateLimit-Policy'),
            "$s, request $n: the same RateLimit-Policy");
        is(num($lo[$i], 'RateLimit', qr/r=(\d+)/), num($re[$i], 'RateLimit', qr/r=(\d+)/),
            "$s, request $n: the same remaining quota");
        is($lo[$i]->header('X-RateLimit-Remaining'), $re[$i]->header('X-RateLimit-Remaining'),
            "$s, request $n: the same X-RateLimit-Remaining");
        # times: a few ms apart, so at most a second apart once rounded up
        my ($tl, $tr) = (num($lo[$i], 'RateLimit', qr/t=(\d+)/), num($re[$i], 'RateLimit', qr/t=(\d+)/));
        ok(defined $tl && defined $tr && abs($tl - $tr) <= 1,
            "$s, request $n: the same t= within a second (" . ($tl // '-') . ' and ' . ($tr // '-') . ')');
    }
    my ($ral, $rar) = (num($lo[3], 'Retry-After', qr/^(\d+)$/), num($re[3], 'Retry-After', qr/^(\d+)$/));
    ok(defined $ral && $ral >= 1 && defined $rar && abs($ral - $rar) <= 1,
        "$s: Retry-After in whole seconds, as with Redis (" . ($ral // '-') . ' and ' . ($rar // '-') . ')');
    is($lo[3]->content, $re[3]->content, "$s: the same 429 body");
}
my $m1 = metrics();

is(mdelta($m0, $m1, qq{rlaas_redis_errors_total{kind="connect"}}), 0,
    'the local engine never reached for Redis (no connect error counted)');
for my $s (@ST) {
    my $name = $s;
    is(join(' ', map { mdelta($m0, $m1, dec($name, $_)) } qw(allowed denied error fail_open)),
        '6 2 0 0', "$s: metrics count both engines' decisions (allowed denied error fail_open)");
}
cmp_ok($m1->{rlaas_local_identities} // 0, '>=', 6, 'rlaas_local_identities counts the identities held');
cmp_ok($m1->{rlaas_local_capacity_bytes} // 0, '>', 9_000_000, 'rlaas_local_capacity_bytes: RLaaSLocalSize 10M by default');
# over these requests (earlier files' bursts may have met a lock wait)
is(mdelta($m0, $m1, 'rlaas_local_resets_total'), 0, 'no stripe was emptied');
is(mdelta($m0, $m1, 'rlaas_local_errors_total{kind="busy"}'), 0, 'no lock wait ran out');

{
    my $u = uid('lo-dry');
    my @r = map { req('/lo/dry', vhost => $LV, h => { 'X-User' => $u }) } 1 .. 2;
    is(st_line(@r), '200/allowed 200/dry_run_denied', 'RLaaSDryRun on: evaluated by the local engine, never denied');
}

{
    my $s = status_auto();
    like($s->{RLaaSLocalIdentities} // '', qr/^\d+$/, 'server-status?auto: RLaaSLocalIdentities');
    is($s->{RLaaSLocal}, $LOCAL0,
        'server-status?auto: RLaaSLocal (decided locally while Redis failed): none here');
}

# ---------------------------------------------------------------- apachectl -t
{
    my @bad = (
        ["RLaaSBackend memcached\n", 'RLaaSBackend', 'memcached'],
        ["RLaaSLocalSize 10X\n", 'RLaaSLocalSize', '10X'],
        ["RLaaSLocalSize 32K\n", 'RLaaSLocalSize', '32K'],
        ["RLaaSLocalSize 5G\n", 'RLaaSLocalSize', '5G'],
        ["RLaaSLocalDivisor 0\n", 'RLaaSLocalDivisor', '0'],
        ["RLaaSLocalDivisor two\n", 'RLaaSLocalDivisor', 'two'],
        ["<Location /x>\n RLaaSLimit 1\n RLaaSFailOpen sometimes\n</Location>\n", 'RLaaSFailOpen', 'sometimes'],
    );
    for my $b (@bad) {
        my ($snippet, $dir, $value) = @$b;
        my ($rc, $out) = httpd_config_test($snippet);
        isnt($rc, 0, "apache2 -t refuses '$dir $value'");
        like($out, qr/\Q$dir\E: invalid value '\Q$value\E': expected /, "  naming $dir, the value and what is accepted")
            or diag($out);
    }
    my ($rc, $out) = httpd_config_test("<VirtualHost 127.0.0.1:1>\n RLaaSLocalSize 1M\n</VirtualHost>\n");
    isnt($rc, 0, 'RLaaSLocalSize in a <VirtualHost> is refused: one table per server');
    like($out, qr/RLaaSLocalSize cannot occur within <VirtualHost>/, '  with httpd\'s context error') or diag($out);
    for my $d (['RLaaSBackend', 'local'], ['RLaaSLocalDivisor', '2']) {
        my ($rc2, $out2) = httpd_config_test("<Location /x>\n $d->[0] $d->[1]\n</Location>\n");
        isnt($rc2, 0, "$d->[0] inside <Location> is refused");
        like($out2, qr/\Q$d->[0]\E[^\n]*not allowed/, "  with httpd's context error") or diag($out2);
    }
    ($rc, $out) = httpd_config_test("RLaaSBackend local\nRLaaSLocalSize 64K\nRLaaSLocalDivisor 3\n"
        . "<VirtualHost 127.0.0.1:1>\n RLaaSBackend redis\n RLaaSLocalDivisor 1\n</VirtualHost>\n"
        . "<Location /x>\n RLaaSLimit 1\n RLaaSFailOpen local\n</Location>\n"
        . "<Location /y>\n RLaaSLimit 1\n RLaaSFailOpen LOCAL\n</Location>\n");
    is($rc, 0, 'every documented value is accepted') or diag($out);
}

done_testing();
