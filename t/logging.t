# Logging: RLAAS_REMAINING for CustomLog; denials at info (RLAAS0020) with
# `LogLevel rlaas:info`, at most about one line a second per child, the
# next line telling how many were held back; none with `LogLevel
# rlaas:warn`; Redis errors at error (fail closed) or warn (fail open).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub next_second { next_mono_second() }
# seconds of the log gates' clock (CLOCK_MONOTONIC) that a span of wall
# times touched
sub gate_seconds {
    my ($t0, $t1) = @_;
    my $off = time - mono();
    return int($t1 - $off) - int($t0 - $off) + 1;
}
sub lines_with { my ($log, $re) = @_; grep { /$re/ } split /\n/, $log }
sub pid_of { $_[0] =~ /\[pid (\d+)/ ? $1 : 'none' }

# ---------------------------------------------------------------- RLAAS_REMAINING
{
    my $u = uid('log-rem');
    my $tid = uid('log-rem-tid');
    for my $i (1 .. 4) {
        req('/sig/log/remaining', h => { 'X-User' => $u, 'X-Test-Id' => "$tid-$i" });
    }
    my @l = wait_sig_log($tid, 4);
    is(join(' ', map { $_->{remaining} // '-' } @l), '2 1 0 0',
        'CustomLog %{RLAAS_REMAINING}e: 2 1 0 0 (limit 3)');
    is(join(' ', map { $_->{status} // '-' } @l), 'allowed allowed allowed denied',
        'CustomLog %{RLAAS_STATUS}e alongside: allowed x3, denied');
    my $dtid = uid('log-rem-dead');
    req('/sig/dead/open/x', vhost => 'rlaas_sig_dead', h => { 'X-Test-Id' => $dtid });
    my @d = wait_sig_log($dtid, 1);
    is($d[0] && ($d[0]{remaining} // '-'), '-', 'no decision (Redis unreachable): RLAAS_REMAINING is not set');
    is($d[0] && $d[0]{status}, 'fail_open', 'but RLAAS_STATUS is (fail_open)');
}

# ---------------------------------------------------------------- one child
# 50 denials on one keep-alive connection (one child), then, a second
# later, one more: it says how many lines were held back. Redis errors go
# through a gate of their own: one fail-closed error in the first second,
# one fail-open error in the next.
{
    my $u = uid('log-one');
    my $tid = uid('log-one-tid');
    my %dead = (vhost => 'rlaas_sig_dead', h => { 'X-User' => uid('log-e') });
    is(hit('/sig/log/info', h => { 'X-User' => $u }), 200, 'LogLevel rlaas:info, limit 1: first allowed');
    next_second();
    my $m = error_log_mark();
    my $t0 = time;
    my @c = map { hit('/sig/log/info', h => { 'X-User' => $u, 'X-Test-Id' => "$tid-$_" }) } 1 .. 50;
    my $t1 = time;
    is(hit('/sig/dead/x', %dead), 500, 'Redis unreachable, fail closed: 500');
    is(count_by(@c), '429 x50', '50 denials in a burst');
    # one line per second at most: as many as the seconds the burst touched
    # (1 when it takes under a second, as it normally does)
    my $secs = gate_seconds($t0, $t1);
    my $log1 = error_log_since($m);
    my @burst = lines_with($log1, qr/RLAAS0020: rate limit exceeded for \S*:h\.x-user=\Q$u\E /);
    cmp_ok(scalar(@burst), '>=', 1, 'the denials are logged at info (RLAAS0020)');
    like($burst[0] // '', qr/\[rlaas:info\]/, 'at level info');
    cmp_ok(scalar(@burst), '<=', $secs, sprintf(
        'a burst of 50 denials in %.2fs (%d second(s)), one child: at most one line a second (%d)',
        $t1 - $t0, $secs, scalar(@burst)));
    my @e;
    wait_for(sub { @e = lines_with(error_log_since($m), qr/RLAAS0021/); @e }, 3);
    like($e[0] // '', qr/\[rlaas:error\].*RLAAS0021: Redis connect error: .*refused with 500/,
        'fail closed: the Redis error is logged at error, with its kind');

    next_second();
    my $m2 = error_log_mark();
    is(hit('/sig/log/info', h => { 'X-User' => $u, 'X-Test-Id' => "$tid-last" }), 429, 'one more denial a second later');
    is(hit('/sig/dead/open/x', %dead), 200, 'Redis unreachable, fail open: 200');
    my @pids = map { $_->{pid} } wait_sig_log($tid, 51);
    my %p = map { $_ => 1 } @pids;
    is(scalar(keys %p), 1, 'all 51 denials were served by one child (one keep-alive connection)');
    my @last;
    wait_for(sub { @last = lines_with(error_log_since($m2), qr/RLAAS0020[^\n]*:h\.x-user=\Q$u\E /); @last }, 3);
    is(scalar(@last), 1, 'the denial a second later is logged');
    # each line after the first tells of the ones held back since the
    # line before: a burst that touched two seconds told of some already
    my $told = 0;
    for (@burst[1 .. $#burst]) { $told += /\((\d+) similar lines suppressed\)/ ? $1 : 0 }
    my ($n) = ($last[0] // '') =~ /\((\d+) similar lines suppressed\)/;
    is(($n // 0) + $told, 50 - @burst, 'and says "(N similar lines suppressed)": with the burst\'s own lines, every denial held back, once')
        or diag(join "\n", @burst, $last[0] // '');
    wait_for(sub { @e = lines_with(error_log_since($m2), qr/RLAAS0021/); @e }, 3);
    like($e[0] // '', qr/\[rlaas:warn\].*RLAAS0021: Redis connect error: .*allowed \(RLaaSFailOpen on\)/,
        'fail open: the Redis error is logged at warn');
}

# ---------------------------------------------------------------- rlaas:warn, several children
# In a fresh second: denials under `LogLevel rlaas:warn` (no line, and no
# effect on the gate), then a burst of 50 denials from 5 clients on new
# connections (several children): at most 2 lines per child.
{
    my $w = uid('log-warn');
    my $u = uid('log-many');
    my $tag = uid('log-many-tid');
    is(hit('/sig/log/warn', h => { 'X-User' => $w }), 200, 'LogLevel rlaas:warn, limit 1: first allowed');
    is(hit('/sig/log/info', h => { 'X-User' => $u }), 200, 'another identity: first allowed');
    next_second();
    my $m = error_log_mark();
    my @c = codes(20, '/sig/log/warn', h => { 'X-User' => $w });
    is(count_by(@c), '429 x20', 'LogLevel rlaas:warn: 20 denials');
    my $t0 = time + 0.15;
    my @r = run_clients(tag => $tag, keepalive => 0, clients => [
        map { [{ path => '/sig/log/info', h => { 'X-User' => $u }, n => 10, at => $t0 }] } 1 .. 5 ]);
    my $t1 = (sort { $b <=> $a } map { $_->{t1} } @r)[0];
    my $took = $t1 - $t0;
    is(count_by(map { $_->{code} } @r), '429 x50', '50 denials from 5 clients on new connections');
    my %pids = map { $_->{pid} => 1 } wait_sig_log($tag, 50);
    my $children = keys %pids;
    sleep 0.2;
    my $log = error_log_since($m);
    my @wl = lines_with($log, qr/RLAAS0020[^\n]*:h\.x-user=\Q$w\E /);
    is_deeply(\@wl, [], 'LogLevel rlaas:warn: no denial line at all');
    my @l = lines_with($log, qr/RLAAS0020[^\n]*:h\.x-user=\Q$u\E /);
    my %per;
    $per{ pid_of($_) }++ for @l;
    # at most one line a second per child: the seconds the burst touched
    # (a burst within one second may straddle two)
    my $max = gate_seconds($t0, $t1);
    $max = 2 if $max < 2;
    cmp_ok(scalar(@l), '>=', 1, 'denials from several children are logged');
    cmp_ok(scalar(@l), '<=', $max * $children, sprintf(
        'a burst of 50 denials (%.2fs) over %d %s: at most %d lines each (%d lines: %s)',
        $took, $children, mpm() eq 'prefork' ? 'children' : 'processes', $max, scalar(@l),
        join(' ', map { "$_=$per{$_}" } sort keys %per)));
    my @over = grep { $per{$_} > $max } keys %per;
    is_deeply(\@over, [], 'no child logged more than that');
}

done_testing();
