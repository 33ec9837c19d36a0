# The console shows requests in flight (RLaaSConcurrency, issue 28): a
# concurrency limit is a row of its own beside its zone's rate (kind
# "concurrency", its N, the requests holding a slot now), on Redis (the
# main server's console) and on the local engine (rlaas_if_local's); its
# refusals are counted and listed among the most denied; every slot shows
# given back once the requests end; a policy's concurrency= is listed
# idle; with Redis down nothing undecided is counted; another virtual
# host's console sees none of it.
# t/conf/x-concurrency.conf.in (/if/con: 100 an hour and 3 at a time).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use POSIX ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my %CONSOLE = (
    redis => ['/adm/console', auth => ['carol', 'carol-pw']],
    local => ['/if/console', vhost => 'rlaas_if_local'],
);
my %VHOST = (redis => 'default', local => 'rlaas_if_local');

sub console {
    my ($engine, %o) = @_;
    my ($path, @o) = @{ $CONSOLE{$engine} };
    my $res = req($path, @o, %o);
    die "console: " . $res->status_line . "\n" unless $res->code == 200;
    return $res->content;
}
sub rows { @{ JSON::PP::decode_json(console($_[0], h => { Accept => 'application/json' }))->{zones} } }
sub row {
    my ($engine, $name, $kind) = @_;
    my ($r) = grep { $_->{name} eq $name && $_->{kind} eq $kind } rows($engine);
    return $r;
}

# rlaas_scope_b's console (t/conf/x-scope.conf.in). That host enforces a
# policy keyed by X-User (or the address), which t/scope.t fills up: each
# read here is an identity of its own.
sub other_console {
    req('/scope/console', vhost => 'rlaas_scope_b',
        h => { Accept => 'application/json', 'X-User' => uid('ifc-scope') });
}

for my $engine (qw(redis local)) {
    my $vh = $VHOST{$engine};
    my $u = uid("ifc-$engine");
    my $idle = row($engine, 'if-con', 'concurrency');
    ok($idle, "$engine: the zone's concurrency limit is listed before any request")
        or diag(JSON::PP->new->canonical->encode([rows($engine)]));
    is_deeply([@{ $idle || {} }{qw(in_flight limit)}], [0, 3], "$engine:   none in flight, of 3");
    ok(row($engine, 'if-con', 'zone'), "$engine:   beside the zone's rate, a row of its own");

    # 5 at once, each running 6 s (time for the console to be read while
    # they run, on a loaded machine too): 3 hold a slot, 2 are refused
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        Apache::TestRLaaS::parallel_hold(5, { path => '/if/con?s=6', vhost => $vh,
                                              h => { 'X-User' => $u } });
        POSIX::_exit(0);
    }
    my $held;
    ok(wait_for(sub { $held = row($engine, 'if-con', 'concurrency'); $held->{in_flight} == 3 }, 5, 0.05),
        "$engine: 3 in flight while the requests run")
        or diag(JSON::PP->new->canonical->encode($held));
    like(console($engine), qr{<tr data-zone="if-con" data-kind="concurrency">.*?<td class="n">3 of 3</td></tr>},
        "$engine:   the page says 3 of 3");
    # while they run: another host's console (the main server's sections
    # apply to its requests, so it lists them) holds none of their slots
    my ($other) = grep { $_->{name} eq 'if-con' && $_->{kind} eq 'concurrency' }
        @{ JSON::PP::decode_json(other_console()->content)->{zones} };
    is($other ? $other->{in_flight} : 0, 0, "$engine:   another host's console: none in flight");
    waitpid $pid, 0;
    ok(wait_for(sub { row($engine, 'if-con', 'concurrency')->{in_flight} == 0 }, 3, 0.1),
        "$engine: none in flight once they end");
    my $r = row($engine, 'if-con', 'concurrency');
    is_deeply([@$r{qw(allowed denied)}], [3, 2], "$engine:   last minute: 3 admitted, 2 refused for want of a slot");
    my $rate = row($engine, 'if-con', 'zone');
    is($rate->{allowed}, 3, "$engine:   the zone's rate counted the 3 it admitted, apart");
    my $j = JSON::PP::decode_json(console($engine, h => { Accept => 'application/json' }));
    my ($top) = grep { $_->{zone} eq 'if-con:concurrency' && $_->{identity} =~ /\Q$u\E/ } @{ $j->{top_denied} };
    # the list's slots are few: a newcomer may take the least counted
    # live one and inherit its count as its error; what is its own is
    # denied - error (and the two refusals come at once: both counted)
    is($top && $top->{denied} - $top->{error}, 2, "$engine:   the identity refused is among the most denied, under if-con:concurrency")
        or diag explain $j->{top_denied};

    # a policy's concurrency= (if-pol, 2 at a time): listed, of 2
    my $pol = row($engine, 'if-pol', 'concurrency');
    is($pol && $pol->{limit}, 2, "$engine: a policy's concurrency=2 is a concurrency row of 2");
}

# Redis down: a request admitted (RLaaSFailOpen on) or refused with 500
# (off) was never decided: the console counts no refusal and no slot
{
    my $u = uid('ifc-down');
    my %o = (vhost => 'rlaas_if_down', h => { 'X-User' => $u });
    is(req('/if/down/open?s=0', %o)->code, 200, 'Redis down, RLaaSFailOpen on: admitted');
    is(req('/if/down?s=0', %o)->code, 500, 'Redis down, RLaaSFailOpen off: 500');
    my $res = req('/if/console', vhost => 'rlaas_if_down', h => { Accept => 'application/json' });
    my $j = JSON::PP::decode_json($res->content);
    my ($r) = grep { $_->{name} eq 'if-down' && $_->{kind} eq 'concurrency' } @{ $j->{zones} };
    is_deeply([@{ $r || {} }{qw(allowed denied in_flight)}], [0, 0, 0],
        '  the console: no decision, no refusal, no slot held');
    is(scalar(grep { $_->{identity} =~ /\Q$u\E/ } @{ $j->{top_denied} }), 0, '  nor the client among the most denied');
}

# another virtual host's console: the main server's sections apply to its
# requests too, so it may list them, but it counts only its own traffic:
# none of the requests above, no slot held, nobody denied
{
    my $res = other_console();
    is($res->code, 200, "another host's console answers");
    my $j = JSON::PP::decode_json($res->content);
    my @seen = grep { $_->{name} =~ /^if-/ && ($_->{allowed} || $_->{denied} || $_->{in_flight}) } @{ $j->{zones} };
    is(scalar(@seen), 0, '  and counts none of the requests above (no decision, no slot)')
        or diag(JSON::PP->new->canonical->encode(\@seen));
    is(scalar(grep { $_->{identity} =~ /ifc-/ } @{ $j->{top_denied} }), 0, '  nor lists their identities');
}

done_testing();
