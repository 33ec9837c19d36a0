# /api/: 10 calls a minute per API key, in bursts, one more every 6 s.
use strict;
use warnings;
use Test::More;
use Apache::TestRLaaS;

my %key = map { $_ => { path => '/api/items.json', headers => { 'X-API-Key' => "key-$_" } } }
    qw(one two);

reset_counters();
remaining_is($key{one}, 9, 'the first call of key-one: 9 of 10 left');
my $denied = allows_then_429($key{one}, 9, 'nine more calls with key-one, then 429');
cmp_ok(retry_after($denied), '<=', 6, 'the bucket gives a call back within 6 s')
    if $denied;
remaining_is($key{two}, 9, 'key-two has a budget of its own');

done_testing;
