# Tenants on one server, name-based virtual hosts on one port:
#   - two tenants whose .htaccess both write "RLaaSZone login" (or set a
#     limit with no zone) never share a counter: their zones count in the
#     tenant's namespace (<zone>@<ServerName>~t), under the host's key
#     prefix if it has one of its own; a host's own policies count in the
#     host's namespace (<zone>@<ServerName>) or under its prefix, never a
#     tenant's; a server's are shared deliberately;
#   - a policy the host enforces (pol-guard: 3 per hour per client
#     address) holds whatever its tenant writes: RLaaSEngine off, a limit
#     of 1e9 (refused: RLaaSLimitMax), RLaaSDryRun on, a key from a header
#     it randomises, RLaaSApply none, RLaaSCost 0, RLaaSFailOpen on.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $port = do { require Apache::Test; Apache::Test::config()->{vhosts}{rlaas_pol_names}{port} };
sub at { my ($host, $path, %o) = @_; req($path, vhost => 'rlaas_pol_names', %o, h => { Host => "$host:$port", %{ $o{h} || {} } }) }
sub codes_at { my ($n, @a) = @_; join ' ', map { at(@a)->code } 1 .. $n }

# ---------------------------------------------------------------- namespaces
{
    my $u = uid('ten');
    is(codes_at(3, 'pol-a.example', '/login/ok.txt', h => { 'X-User' => $u }), '200 200 429',
        'tenant A: RLaaSZone login, limit 2');
    is(codes_at(3, 'pol-b.example', '/login/ok.txt', h => { 'X-User' => $u }), '200 200 429',
        'tenant B, the same zone and visitor: a counter of its own, not A\'s');
    is(redis_cmd('ZCARD', rkey('login@pol-a.example~t', tseg('h.x-user', $u))), 2, "A's key: login\@pol-a.example~t");
    is(redis_cmd('ZCARD', rkey('login@pol-b.example~t', tseg('h.x-user', $u))), 2, "B's key: login\@pol-b.example~t");
    ok(!redis_cmd('EXISTS', rkey('login', tseg('h.x-user', $u))), 'nothing under the bare zone "login"');
    is(codes_at(3, 'pol-c.example', '/login/ok.txt', h => { 'X-User' => $u }), '200 200 429',
        'a host with a key prefix of its own: the same .htaccess');
    is(redis_cmd('ZCARD', 'pol:c:login@pol-c.example~t:' . tseg('h.x-user', $u)), 2,
        "counts under its prefix, in the tenant's namespace");
}
{
    my $u = uid('ten-bare');
    is(codes_at(3, 'pol-a.example', '/bare/ok.txt', h => { 'X-User' => $u }), '200 200 429', 'tenant A: a limit, no zone');
    is(codes_at(3, 'pol-b.example', '/bare/ok.txt', h => { 'X-User' => $u }), '200 200 429', 'tenant B: its own counter');
    is(redis_cmd('ZCARD', rkey('@pol-a.example~t', tseg('h.x-user', $u))), 2, "A's key: \@pol-a.example~t");
}
{
    my $u = uid('ten-vhost');
    my @r = map { at('pol-f.example', '/pol/f/vhost', h => { 'X-User' => $u }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 429 429', "a host's own policy pol-vhost (2) and the server's pol-small (3)");
    is(redis_cmd('ZCARD', rkey('pol-vhost@pol-f.example', tseg('h.x-user', $u))), 2,
        "the host's policy counts in its namespace");
    is(redis_cmd('ZCARD', rkey('pol-small', tseg('h.x-user', $u))), 2,
        "the server's policy is shared deliberately: no namespace");
}

# ---------------------------------------------------------------- enforced
# pol-guard counts per client address; each attempt starts afresh.
my $guard = rkey('pol-guard', '127.0.0.1:');
sub fresh { redis_cmd('DEL', keys_like("$guard*")) if keys_like("$guard*") }
# pol-guard counts in wall-clock hours: not across the top of one
wait_fixed_window(3_600_000, 60_000);

{
    fresh();
    my @r = map { at('pol-e.example', '/plain/ok.txt') } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', 'RLaaSEnforce pol-guard: 3 per hour');
    is($r[3]->header('X-RLaaS-Policy'), 'pol-guard', 'denied by pol-guard');
    fresh();
    is(codes_at(4, 'pol-e.example', '/pol/e/server-off'), '200 200 200 429',
        'RLaaSEngine off in a section of the host: the enforced policy holds');
}
for my $c (
    ['off',      {},                             'RLaaSEngine off'],
    ['max',      {},                             'RLaaSLimit 100 (the most it may) in a zone of its own'],
    ['dry',      {},                             'RLaaSDryRun on'],
    ['rand',     { 'X-Rand' => sub { uid('r') } }, 'RLaaSKeyBy header:X-Rand, a new value each time'],
    ['none',     {},                             'RLaaSApply none'],
    ['cost',     {},                             'RLaaSCost 0'],
    ['failopen', {},                             'RLaaSFailOpen on (Redis is up)'],
    ['apply',    { 'X-User' => sub { uid('a') } }, 'RLaaSApply of a server policy'],
) {
    my ($dir, $h, $name) = @$c;
    fresh();
    my @r = map { at('pol-e.example', "/$dir/ok.txt", h => { map { $_ => $h->{$_}->() } keys %$h }) } 1 .. 4;
    is(join(' ', map { $_->code } @r), '200 200 200 429', "the tenant's .htaccess with $name: pol-guard still allows 3");
    is($r[3]->header('X-RLaaS-Policy'), 'pol-guard', "$name: the 4th is denied by pol-guard");
    is(($r[3]->header('Retry-After') // 0) > 60 ? 'long' : 'short', 'long', "$name: Retry-After is pol-guard's");
}
{
    fresh();
    redis_cmd('DEL', rkey('dry@pol-e.example~t', '127.0.0.1'));
    my @r = map { at('pol-e.example', '/dry/ok.txt') } 1 .. 2;
    is(join(' ', map { status_of($_) } @r), 'allowed dry_run_denied',
        "dry run: the tenant's own limit (1) would deny the 2nd, pol-guard charged for it all the same");
    is(redis_cmd('GET', (keys_like("$guard*"))[0]), 2, 'pol-guard counts 2');
}

# ---------------------------------------------------------------- refused in .htaccess
for my $c (
    ['big',     qr/RLaaSLimit: invalid value '1000000000' in \.htaccess: expected an integer from 1 to 100 \(RLaaSLimitMax of this server\)/,
                'RLaaSLimit 1000000000 over RLaaSLimitMax 100'],
    ['unknown', qr/RLaaSApply: unknown policy 'pol-nope': expected the name of a policy declared before with RLaaSPolicy \(declared: [^)]*pol-guard/,
                'RLaaSApply of a policy nobody declared'],
) {
    my ($dir, $re, $name) = @$c;
    my $m = error_log_mark();
    fresh();
    is(at('pol-e.example', "/$dir/ok.txt")->code, 500, "$name: 500 for that directory");
    my $log = '';
    wait_for(sub { $log = error_log_since($m); $log =~ $re }, 3);
    my @l = grep { /\Q$dir\E\/\.htaccess/ } split /\n/, $log;
    is(scalar(@l), 1, "$name: one log line naming the file") or diag($log);
    like($l[0] // '', $re, "$name: it names the directive, the value and what is accepted");
}

done_testing();
