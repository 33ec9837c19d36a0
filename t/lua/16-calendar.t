# Calendar windows of fixed (RLaaSWindow 1d calendar): the module passes
# the periods around its own time (src/core/rlaas_cal.h, "<tag>/<b0>/<b1>/
# <b2>/<b3>"), the script counts in the one holding Redis' time, under
# K<tag>+<start>, kept until the period ends. Redis' time a little behind
# or ahead of the module's picks the previous or the next period; outside
# the table nothing is written and the module is told Redis' time
# (RLAASWINDOW). Days of 23 hours, the last millisecond of a day and the
# first of the next, Redis Cluster's declared keys, credits, several
# policies, forced charges and limits above 1e9 (byte quotas); and a
# model of random timelines. Every call is made of the local engine too
# and compared (ScriptTest).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use RLaaS::Redis;
use POSIX ();

my $h = ScriptTest->new;
my $r = $h->redis;
my $n = 0;
sub K { 'rlaas:rate_limit:cal-' . $n++ }
sub err { RLaaS::Redis::is_error($_[0]) ? "$_[0]" : '' }

my $D = 86_400_000;
# UTC days around T0 (2023-11-14)
my @UTC = (T0 - $D, T0, T0 + $D, T0 + 2 * $D);
sub table { join '/', $_[0], @{ $_[1] } }
my $W = table('1d', \@UTC);
# Paris, 2024-03-31: the day of 23 hours (src/core/rlaas_cal.c's test)
my @PARIS = (1711753200000, 1711839600000, 1711922400000, 1712008800000);

sub hit {
    my ($K, $L, $Wa, $t, %o) = @_;
    return $h->run('fixed', $K, $L, $Wa, $t, 0, %o);
}

subtest 'a quota per day: counted under K:1d+<start>, kept until the day ends' => sub {
    my $K = K();
    my $t = T0 + 10 * 3_600_000;
    my $left = T0 + $D - $t;
    is_deeply hit($K, 3, $W, $t), [1, 2, $left, 0], 'first: allowed, reset at midnight';
    is_deeply hit($K, 3, $W, $t), [1, 1, $left, 0], 'second';
    is_deeply hit($K, 3, $W, $t), [1, 0, $left, $left], 'third: the quota is used up';
    is_deeply hit($K, 3, $W, $t + 1000), [0, 0, $left - 1000, $left - 1000],
        'fourth: denied until midnight';
    my $key = "$K:1d+" . T0;
    is $r->cmd('GET', $key), 3, "the count under $key";
    is $h->pttl($key), $left - 1000, 'its TTL: the end of the day';
    is_deeply [sort @{ $r->cmd('KEYS', "$K*") }], [$key], 'one key';
    is_deeply hit($K, 3, $W, T0 + $D), [1, 2, $D, 0], 'midnight: a new quota';
    ok $r->cmd('EXISTS', "$K:1d+" . (T0 + $D)), 'under the next day\'s key';
};

subtest 'the last ms of a day and the first of the next: two periods (a day of 23 h)' => sub {
    my $K = K();
    my $Wp = table('1d', \@PARIS);
    my ($s, $e) = @PARIS[1, 2];
    is $e - $s, 23 * 3_600_000, 'the day is 23 hours long';
    is_deeply hit($K, 1, $Wp, $e - 1), [1, 0, 1, 1], '23:59:59.999: allowed, 1 ms to go';
    is_deeply hit($K, 1, $Wp, $e - 1), [0, 0, 1, 1], 'again: denied';
    is_deeply hit($K, 1, $Wp, $e), [1, 0, $PARIS[3] - $e, $PARIS[3] - $e],
        '00:00:00.000: another period, allowed';
    is $r->cmd('GET', "$K:1d+$s"), 1, 'one in the first';
    is $r->cmd('GET', "$K:1d+$e"), 1, 'one in the second';
};

subtest 'Redis\' time behind or ahead of the module\'s: its own period' => sub {
    my $K = K();
    # the module reckoned T0 + 10 h; Redis is already past midnight
    is_deeply hit($K, 2, $W, T0 + $D + 5), [1, 1, $D - 5, 0], 'Redis ahead: the next day';
    ok $r->cmd('EXISTS', "$K:1d+" . (T0 + $D)), 'its key';
    is_deeply hit($K, 2, $W, T0 - 5), [1, 1, 5, 0], 'Redis behind: the day before';
    ok $r->cmd('EXISTS', "$K:1d+" . (T0 - $D)), 'its key';
    my @before = sort @{ $r->cmd('KEYS', "$K*") };
    is scalar(@before), 2, 'two keys';
    for my $t (T0 - $D - 1, T0 + 2 * $D, T0 + 5 * $D) {
        my $x = hit($K, 2, $W, $t);
        is err($x), "RLAASWINDOW - $t", 'outside the table: RLAASWINDOW and Redis\' time';
        my @now = sort @{ $r->cmd('KEYS', "$K*") };
        ok !(grep { my $k = $_; !grep { $_ eq $k } @before } @now), 'nothing written';
    }
};

subtest 'Redis Cluster: the declared key names the period' => sub {
    my $K = '{cal-' . $n++ . '}:';
    my $decl = "${K}1d+" . T0;
    # KEYS[1] is the declared key itself (no trailing ':')
    my $sha = $h->{fake}{fixed};
    my $call = sub {
        my ($key, $t) = @_;
        my $sec = int($t / 1000);
        return $r->cmd('EVALSHA', $sha, 1, $key, 2, $W, 1, 0, $sec, ($t - $sec * 1000) * 1000);
    };
    is_deeply $call->($decl, T0 + 100), [1, 1, $D - 100, 0], 'the declared period: counted';
    is $r->cmd('GET', $decl), 1, 'in the declared key';
    is err($call->($decl, T0 + $D + 1)), 'RLAASWINDOW 1d+' . (T0 + $D) . ' ' . (T0 + $D + 1),
        'Redis in the next period: RLAASWINDOW with its name and time';
    is $r->cmd('GET', $decl), 1, 'nothing written';
    my $digits = "${K}" . int(T0 / $D);
    is err($call->($digits, T0 + 100)), 'RLAASWINDOW 1d+' . T0 . ' ' . (T0 + 100),
        'a fixed window\'s number is no calendar period';
};

subtest 'credits: back to the charge\'s period while it lasts' => sub {
    my $K = K();
    hit($K, 5, $W, T0 + 1000) for 1 .. 3;
    is_deeply $h->run_credit(T0 + 5000, 3000, ['fixed', $K, 5, $W, 2]), [1, 2, 0, 0], '2 given back';
    is $r->cmd('GET', "$K:1d+" . T0), 1, 'one left';
    hit($K, 5, $W, T0 + $D - 10);
    is_deeply $h->run_credit(T0 + $D + 10, 30, ['fixed', $K, 5, $W, 1]), [1, 0, 0, 0],
        'a charge of the day before, credited after midnight: nothing (that day no longer limits)';
    is_deeply $h->run_credit(T0 + 6 * $D, 10, ['fixed', $K, 5, $W, 1]), [1, 0, 0, 0],
        'outside the table: nothing';
};

subtest 'with other policies in one call, all or nothing' => sub {
    my ($K, $J) = (K(), K());
    my @p = (['fixed', $K, 2, $W, 1, 0], ['sliding_log', $J, 10, 60000, 1, 0]);
    is_deeply $h->run_multi(T0 + 10, @p), [1, 1, $D - 10, 0, 1, 9, 60000, 0], 'both allowed';
    is_deeply $h->run_multi(T0 + 20, @p), [1, 0, $D - 20, $D - 20, 1, 8, 60000, 0], 'both allowed';
    my $x = $h->run_multi(T0 + 30, @p);
    is_deeply [@$x[0, 4]], [0, 1], 'the quota denies: the other would allow';
    is $r->cmd('ZCARD', $J), 2, 'and is not charged';
    my $y = $h->run_multi(T0 - $D - 1, @p);
    like err($y), qr/^RLAASWINDOW - /, 'outside the table: the call\'s error, nothing written';
    is $r->cmd('ZCARD', $J), 2, 'the other policy untouched';
};

subtest 'a calendar is fixed\'s alone; malformed tables are refused' => sub {
    for my $s (grep { $_ ne 'fixed' } STRATEGIES) {
        my $x = $h->run($s, K(), 5, $W, T0 + 1, 0);
        like err($x), qr/bad limit, window/, "$s: refused";
    }
    for my $bad ('1d/1/2/3', '1h/1/2/3/4', '1d/2/1/3/4', '1d/1/1/3/4', '123d/1/2/3/4',
                 '1d/1/2/3/34359738372', '1d/1/2/3/4503599627370496') {
        like err(hit(K(), 5, $bad, T0)), qr/bad limit, window/, "'$bad' refused";
    }
    # (the lease script's calendar periods: t/lua/32-lease.t)
};

subtest 'forced charges and limits above 1e9: quotas of bytes' => sub {
    my $K = K();
    my $L = 3 * 1048576;
    # a check (cost 0), then the bytes sent, forced
    for my $i (1 .. 3) {
        is hit($K, $L, $W, T0 + $i, cost => 0)->[0], 1, "check $i: at least a byte left";
        hit($K, $L, $W, T0 + $i, cost => 1048576, mode => 4);
    }
    is_deeply hit($K, $L, $W, T0 + 10, cost => 0), [0, 0, $D - 10, $D - 10], 'three MB sent: refused';
    hit($K, $L, $W, T0 + 11, cost => 2000000, mode => 4);
    is $r->cmd('GET', "$K:1d+" . T0), 3 * 1048576 + 2000000, 'a forced charge counts whole past the limit';
    my $G = 10737418240;    # 10 GiB
    my $B = K();
    is_deeply hit($B, $G, $W, T0, cost => 0), [1, $G, 0, 0], 'fixed takes a limit of 10 GiB';
    hit($B, $G, $W, T0, cost => 5368709120, mode => 4);
    is hit($B, $G, $W, T0, cost => 0)->[1], 5368709120, '5 GiB left';
    for my $s (grep { $_ ne 'fixed' } STRATEGIES) {
        like err($h->run($s, K(), $G, 60000, T0, 0)), qr/bad limit/, "$s: limits stay up to 1e9";
    }
    like err(hit(K(), '1125899906842625', 60000, T0)), qr/bad limit/, 'fixed: up to 2^50';
    my $C = K();
    hit($C, '1125899906842624', 60000, T0, cost => '1125899906842624', mode => 4) for 1 .. 6;
    is $r->cmd('GET', "$C:" . int(T0 / 60000)), '4503599627370496', 'forced charges stop at 2^52';
};

# A model: random requests over three days, Redis' time a random step
# from the module's within the table; the count of each day, a request
# allowed while it fits. The local engine is compared call by call.
subtest 'model: random timelines' => sub {
    srand(20240331);
    my ($bad, $calls) = (0, 0);
    for my $round (1 .. 30) {
        my $K = K();
        my $L = 1 + int(rand(6));
        my %count;
        my $t = T0 - $D + int(rand(3 * $D - 100_000));
        for (1 .. 40) {
            $t += int(rand(3_600_000));
            last if $t >= T0 + 2 * $D;
            my $cost = int(rand(3));
            $cost = $L if $cost > $L;
            my $force = rand() < 0.2 ? 4 : 0;
            my $day = T0 + $D * POSIX::floor(($t - T0) / $D);
            my $c = $count{$day} // 0;
            my $need = $cost > 1 ? $cost : 1;
            my $ok = $c + $need <= $L ? 1 : 0;
            $count{$day} = $c + $cost if $ok || $force;
            my $n = $count{$day} // 0;
            my $rem = $L - $n < 0 ? 0 : $L - $n;
            my $left = $day + $D - $t;
            my $want = [$ok, $rem, $n > 0 ? $left : 0, $rem < $need ? $left : 0];
            my $got = hit($K, $L, $W, $t, cost => $cost, mode => $force);
            $calls++;
            next if "@$got" eq "@$want";
            diag "round $round at " . ($t - T0) . ": got @$got, model @$want" if $bad++ < 5;
        }
    }
    is $bad, 0, "$calls calls agree with the model";
};

is_deeply [$h->no_ttl], [], 'every key written has a TTL';
done_testing();
