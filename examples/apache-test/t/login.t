# /login: five attempts in five minutes per address, right or wrong
# password, then 429; the right password is no way around it.
use strict;
use warnings;
use Test::More;
use Apache::TestRLaaS;

my $right = { path => '/login/', auth => ['alice', 'wonderland'] };
my $wrong = { path => '/login/', auth => ['alice', 'guess'] };

reset_counters();
is(send_request($right)->code, 200, 'the right password lets alice in');
remaining_is($wrong, 3, 'a wrong password (401) is an attempt too: 3 left');
allows_then_429($wrong, 3, 'three more attempts, then 429');
is(send_request($right)->code, 429, 'then even the right password has to wait');

reset_counters();
my $denied = allows_then_429($wrong, 5, 'counters reset: five attempts, then 429');
cmp_ok(retry_after($denied), '>', 60, 'and the wait is minutes, not seconds')
    if $denied;

done_testing;
