# MEMORY USAGE of an idle client's state (3 hits), K =
# rlaas:rate_limit:203.0.113.9.
# fixed, sliding and gcra must stay under 100 bytes (integer-encoded),
# sliding also with L >= 2^24 as long as the counts fit in 24 bits.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;

my $h = ScriptTest->new;
my $r = $h->redis;
my $K = 'rlaas:rate_limit:203.0.113.9';

my %usage;
for my $cfg ([5, 5000], [100, 60000], [1_000_000_000, 86_400_000]) {
    my ($L, $W) = @$cfg;
    $r->cmd('FLUSHALL');
    for my $s (STRATEGIES) {
        # fake clock: with L=1e9 a token key's real TTL is 1 ms
        $h->run($s, $K, $L, $W, T0 + 1234) for 1 .. 3;
    }
    for my $k (sort @{ $r->cmd('KEYS', "$K*") }) {
        my $s = $k eq $K ? 'sliding_log' : $k =~ /:(\d+)$/ ? 'fixed'
            : { sw => 'sliding', tb => 'token', lb => 'leaky', gcra => 'gcra' }->{ ($k =~ /:(\w+)$/)[0] };
        my $m = $r->cmd('MEMORY', 'USAGE', $k);
        my $enc = $r->cmd('OBJECT', 'ENCODING', $k);
        $usage{$s}{"L=$L W=$W"} = "$m ($enc)";
        if ($s =~ /^(fixed|sliding|gcra)$/) {
            cmp_ok $m, '<', 100, "$s L=$L W=$W: $k uses $m bytes";
            is $enc, 'int', "$s: integer-encoded";
        }
    }
}
for my $s (STRATEGIES) {
    diag sprintf '%-12s %s', $s, join '  ', map { "$_: $usage{$s}{$_}" } sort keys %{ $usage{$s} };
}
done_testing;
