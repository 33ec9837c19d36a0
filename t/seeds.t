# A service built from the seeds and Apache sharing one Redis: the service
# runs the seeds' own sliding-window script (RLaaS::Seeds, seeds/003 as
# written) on rlaas:rate_limit:<userId>, the very key the module writes for
# `RLaaSKeyBy user` with no zone and the default prefix (/rl/seed/log:
# limit 5, the default window of 60 s). Each counts the other's requests
# and neither erases the other's state: together they admit the limit.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);
use RLaaS::Seeds qw(SEEDS_SLIDING_WINDOW);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $K = 'rlaas:rate_limit:alice';
my @ALICE = (auth => ['alice', 'alice-pw']);

# the service's call, its clock Redis' TIME: {allowed, count, window s}
sub service { redis_cmd('EVAL', SEEDS_SLIDING_WINDOW, 1, $K, redis_time_ms(), 60, 5) }

sub members { my %m = @{ redis_cmd('ZRANGE', $K, 0, -1, 'WITHSCORES') }; \%m }

# (b) of issue 24: alternating, Apache first
{
    redis_cmd('DEL', $K);
    my (@seq, @lost);
    for my $i (1 .. 12) {
        my $before = members();
        if ($i % 2) {
            my $c = hit('/rl/seed/log/x', @ALICE);
            push @seq, $c == 200 ? 'A' : $c == 429 ? 'a' : "A$c";
        } else {
            my $x = service();
            push @seq, ref $x eq 'ARRAY' ? ($x->[0] ? 'S' : 's') : "S:$x";
        }
        my $after = members();
        push @lost, grep { !exists $after->{$_} } sort keys %$before;
    }
    is "@seq", 'A S A S A s a s a s a s',
        "Apache (A) and the seeds' script (S) alternating on $K: 5 admitted together, then both deny";
    is_deeply \@lost, [], "no call removed a member of the other's";
    my $m = members();
    my @ours = grep { /^(\d+)-\d{16}:1:\d+$/ && $1 == $m->{$_} } keys %$m;
    my @theirs = grep { /^(\d+)-0\.\d+$/ && $1 == $m->{$_} } keys %$m;
    is scalar(@ours), 3, "Apache's 3 members, <ms>-<unique> scored by their ms";
    is scalar(@theirs), 2, "the service's 2, as it wrote them";
    is redis_cmd('ZCARD', $K), 5, 'nothing else: the denials left nothing';
    my $pttl = redis_cmd('PTTL', $K);
    ok $pttl > 100_000 && $pttl <= 120_000, "TTL 2 x the window ($pttl ms)";
}

# The service first, and more of it: Apache reads its members as they are
# (before, Apache deleted a log whose newest member was not its own).
{
    redis_cmd('DEL', $K);
    my @s = map { service()->[0] } 1 .. 4;
    is "@s", '1 1 1 1', "the service admits 4 of alice's requests";
    my $theirs = members();
    my @c = codes(3, '/rl/seed/log/x', @ALICE);
    is "@c", '200 429 429', 'Apache: the fifth request is the last that fits';
    my $now = members();
    is_deeply [grep { !exists $now->{$_} } sort keys %$theirs], [], "the service's 4 members are all still there";
    is service()->[0], 0, "and the service counts Apache's: it denies the sixth";
    my $res = req('/rl/seed/log/x', @ALICE);
    my $ra = $res->header('Retry-After') // 0;
    ok $ra >= 1 && $ra <= 60, "Retry-After counts down to the oldest of the service's members ($ra s)";
    redis_cmd('DEL', $K);
}

done_testing;
