#!/usr/bin/perl
# Soak::Check against a made-up run: each rule the checker models from the
# documentation, once where it explains an outcome and once, changed by
# one thing, where the outcome stays a violation.
#   prove -I tools/soak tools/soak/t/check.t
use strict;
use warnings;

use File::Temp qw(tempdir);
use JSON::PP ();
use POSIX qw(strftime);
use Test::More;

use Soak::Check ();

my $T0 = 1795671338;
my $dir = tempdir(CLEANUP => 1);
mkdir "$dir/requests";
mkdir "$dir/redis";
mkdir "$dir/redis/$_" for qw(httpd-event httpd-prefork);

my (@req, @faults, @errlog);
my $seq = 0;
sub req {
    my ($srv, $sec, $id, $s, $a, $code, $st, %o) = @_;
    my $path = $o{path} // ($code == 404 ? "/s/$sec/nope.txt" : "/s/$sec/ok.txt");
    push @req, join("\t", $T0 + $s, $T0 + $a, 'redis', "redis-$srv", $sec, $id, $code, $st, '-',
                    $o{reused} // 1, 'h1', $path, $o{note} // '', 'x-' . ++$seq) . "\n";
}
sub fault {
    my ($n, $kind, $target, $s, $e, $note) = @_;
    push @faults, join("\t", 'B', $T0 + $s, 'redis', $n, $kind, $target, $e - $s) . "\n",
                  join("\t", 'E', $T0 + $e, 'redis', $n, $kind, $target, $note) . "\n";
}

# 1. two policies (pol-sec 10/2s gcra, pol-min 60/30s sliding log): two
# calls timed out in a SIGSTOP of Redis at 100..103 ran when it went on;
# with the 59 admissions after them, pol-min is full at 132.5
fault(1, 'redis_stop', 'redis', 100, 103, 'SIGSTOP/SIGCONT 1');
for my $id (qw(pol-a pol-b)) {
    if ($id eq 'pol-a') { req('event', 'pol', $id, 100.5 + $_ / 10, 101.5 + $_ / 10, 500, 'error') for 0 .. 1 }
    req('event', 'pol', $id, 113 + $_ * 0.33, 113.002 + $_ * 0.33, 200, 'allowed') for 0 .. 58;
    req('prefork', 'pol', $id, 132.5, 132.502, 429, 'denied');
}

# 2. RLaaSCountIf on a sliding log (5 in 10 s): the refund of the 200 at
# 200.9 takes the 404 of 200.0 (made within the budget + 1 ms before),
# keeping its own entry: 5 entries in the window of the denial at 210.3.
# cif-b's 200 comes 1.5 s after that 404: out of reach, 4 entries.
for my $id (qw(cif-a cif-b)) {
    my $ok = $id eq 'cif-a' ? 200.9 : 201.5;
    req('event', 'countif', $id, 200.0, 200.002, 404, 'allowed');
    req('event', 'countif', $id, $ok, $ok + 0.002, 200, 'allowed');
    req('event', 'countif', $id, $_, $_ + 0.002, 404, 'allowed') for 201.7, 206.5, 209.9, 210.1;
    req('event', 'countif', $id, 210.3, 210.302, 429, 'denied');
}
# a refund lost (RLAAS0150 just after the 200 of cif-c at 221.0): that
# charge stands, 5 in the window of 229.5
req('prefork', 'countif', 'cif-c', $_->[0], $_->[0] + 0.002, $_->[1], 'allowed')
    for [220.0, 404], [221.0, 200], [222.0, 404], [225.0, 404], [228.0, 404];
req('prefork', 'countif', 'cif-c', 229.5, 229.502, 429, 'denied');
push @errlog, [221.01, 4242, 'RLAAS0150: RLaaSCountIf: a charge made at the check could not be given back (Redis io: Server closed the connection); it stands until it expires'];

# 3. a ban with no denial seen: the call of the 500 at 305.5, held by a
# stalled Redis (305..307), ran after it and was the denial
fault(2, 'redis_stop', 'redis', 305, 307, 'SIGSTOP/SIGCONT 1');
for my $id (qw(ban-a ban-b)) {
    req('event', 'countif', $id, 300 + $_, 300.002 + $_, 404, 'allowed') for 0 .. 4;
    req('event', 'countif', $id, 305.5, 306.5, 500, 'error') if $id eq 'ban-a';
    req('event', 'countif', $id, 308.5, 308.502, 429, 'banned');
}

# 4. recovery: a keep-alive race 13 s after a graceful restart is no
# outcome of it; a connection reset is
fault(3, 'httpd_graceful', 'event', 400, 402, 'USR1 to 1');
req('event', 'log', 'log-a', 403 + $_, 403.002 + $_, 200, 'allowed') for 0 .. 20;
req('event', 'log', 'log-a', 415, 415.003, 599, '-', note => 'keep-alive connection closed');
fault(4, 'httpd_graceful', 'prefork', 430, 432, 'USR1 to 2');
req('prefork', 'log', 'log-b', 433 + $_, 433.002 + $_, 200, 'allowed') for 0 .. 20;
req('prefork', 'log', 'log-b', 445, 445.003, 599, '-', note => 'read: Connection reset by peer');
# every server decides at the end; a keep-alive race then is no fault
req('event', 'log', 'log-c', 460, 460.003, 599, '-', note => 'keep-alive connection closed');
req($_, 'log', 'log-c', 470, 470.002, 200, 'allowed') for qw(event prefork);

open my $fh, '>', "$dir/requests/redis-0.tsv" or die;
print $fh sort { (split /\t/, $a)[0] <=> (split /\t/, $b)[0] } @req;
close $fh;
open $fh, '>', "$dir/faults.tsv" or die;
print $fh @faults;
close $fh;
open $fh, '>', "$dir/redis/httpd-prefork/error_log" or die;
for my $l (@errlog) {
    my $t = $T0 + $l->[0];
    printf $fh "[%s.%06d %s] [rlaas:warn] [pid %d:tid %d] [client 127.0.0.1:1] %s\n",
        strftime('%a %b %d %H:%M:%S', localtime $t), ($t - int $t) * 1e6, strftime('%Y', localtime $t),
        $l->[1], $l->[1], $l->[2];
}
close $fh;
# the servers' directories as another machine named them: found under DIR
my $meta = { t0 => $T0, duration => 480, seed => 1, backends => ['redis'], divisor => 2,
             redis_timeout_ms => 1000, end => $T0 + 480,
             servers => [ map { { backend => 'redis', name => "redis-$_", mpm => $_,
                                  dir => "/nonexistent/soak/redis/httpd-$_" } } qw(event prefork) ] };
open $fh, '>', "$dir/meta.json" or die;
print $fh JSON::PP->new->encode($meta);
close $fh;

my $X = Soak::Check::analyze($dir);
my %ex = map { ($_ => join("\n", @{ $X->{inv}{$_}{examples} })) } keys %{ $X->{inv} };

like($ex{wrongful_refusal}, qr/id=pol-b 429/, 'pol: a denial with room in both policies is wrongful');
unlike($ex{wrongful_refusal}, qr/id=pol-a /, 'pol: calls a stalled Redis ran after they timed out count');
like($ex{wrongful_refusal}, qr/id=cif-b 429/, 'countif: a refund out of reach of an older entry takes its own');
unlike($ex{wrongful_refusal}, qr/id=cif-a /, 'countif: a refund may take an entry made within the budget before');
unlike($ex{wrongful_refusal}, qr/id=cif-c /, 'countif: a refund lost (RLAAS0150) leaves the charge standing');
is($X->{inv}{wrongful_refusal}{violations}, 2, 'wrongful refusals: pol-b and cif-b alone')
    or diag $ex{wrongful_refusal};
is($X->{bounds}{refusals_late_or_refund}, 3, 'pol-a, cif-a and cif-c counted apart');

like($ex{ban_without_denial}, qr/id=ban-b 429 banned/, 'a ban with nothing before it is a violation');
unlike($ex{ban_without_denial}, qr/id=ban-a /, 'a ban may follow a call a stalled Redis ran late');
is($X->{inv}{ban_without_denial}{violations}, 1, 'bans without denial: ban-b alone');

like($ex{recovery}, qr/httpd_graceful prefork .*until 13\.0s/, 'a connection reset 13 s after a restart is slow recovery');
unlike($ex{recovery}, qr/httpd_graceful event /, 'a keep-alive race is no outcome of a restart');
unlike($ex{recovery}, qr/^redis-event:/m, 'a keep-alive race after the last fault is no abnormal outcome');
like($ex{recovery}, qr/^redis-prefork: 1 abnormal/m, 'a connection reset after the last fault is one');
is($X->{inv}{recovery}{violations}, 2, 'recovery: the prefork server alone') or diag $ex{recovery};

done_testing();
