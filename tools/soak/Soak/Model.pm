package Soak::Model;
# What the soak runs and what it checks, in one place: the sections of the
# configuration (each with the counters a request of it spends, as the
# checker models them), and the traffic streams that drive them.
#
# To add a feature to the soak: add a section here (its configuration, its
# counters, its streams); the driver writes it into every server's
# configuration and the checker applies the invariants to its counters.
#
# A counter: { id, limit, window (s), type, cost }, type one of
#   log     the sliding log: at most LIMIT units in any rolling window
#   fixed   wall-clock windows of the limiter's clock (Redis TIME, or the
#           host's for the local engine): at most LIMIT units per window
#   bucket  token, leaky and gcra: at most LIMIT + LIMIT*T/WINDOW units in
#           any interval of T seconds
# `lease` marks a counter whose section runs RLaaSLease on with the lease
# backend; `countif` a counter charged only for responses with that status.
# A request's identity is its X-Soak-User value (sent as X-API-Key too):
# every counter of a section keys by it.
use strict;
use warnings;

use Exporter 'import';
our @EXPORT_OK = qw(sections section_by_path streams hostile_values vhosts);

# The backends the soak knows, in the order the schedule is drawn.
our @BACKENDS = qw(local redis lease sentinel cluster tls);

sub vhosts { qw(main alice bob) }

# ------------------------------------------------------------ sections

# alice's and bob's own limit, the same .htaccess (zone "site" both)
my $SITE = <<'C';
RLaaSLimit 8
RLaaSWindow 10s
RLaaSZone site
RLaaSKeyBy header:X-Soak-User
RLaaSFailOpen on
C

# Sections of the main host. `conf` is the body of its <Location>; LEASE
# stands for "RLaaSLease on" under the lease backend (nothing elsewhere).
my @SECTIONS = (
    {   name => 'log', vhost => 'main', path => '/s/log/', failopen => 'off',
        conf => <<'C',
    RLaaSLimit 20
    RLaaSWindow 10s
    RLaaSZone log
    RLaaSKeyBy header:X-Soak-User
    RLaaSFailOpen off
C
        counters => [{ id => 'log', limit => 20, window => 10, type => 'log' }],
    },
    {   name => 'fixed', vhost => 'main', path => '/s/fixed/', failopen => 'on',
        conf => <<'C',
    RLaaSLimit 30
    RLaaSWindow 10s
    RLaaSStrategy fixed
    RLaaSZone fixed
    RLaaSKeyBy header:X-Soak-User
    RLaaSFailOpen on
    LEASE
C
        counters => [{ id => 'fixed', limit => 30, window => 10, type => 'fixed', lease => 1 }],
    },
    {   name => 'gcra', vhost => 'main', path => '/s/gcra/', failopen => 'local',
        conf => <<'C',
    RLaaSLimit 40
    RLaaSWindow 10s
    RLaaSStrategy gcra
    RLaaSCost 2
    RLaaSZone gcra
    RLaaSKeyBy header:X-Soak-User
    RLaaSFailOpen local
    LEASE
C
        counters => [{ id => 'gcra', limit => 40, window => 10, type => 'bucket', cost => 2, lease => 1 }],
    },
    {   name => 'token', vhost => 'main', path => '/s/token/', failopen => 'off',
        conf => <<'C',
    RLaaSLimit 50
    RLaaSWindow 20s
    RLaaSStrategy token
    RLaaSZone token
    RLaaSKeyBy api_key
    RLaaSFailOpen off
    LEASE
C
        counters => [{ id => 'token', limit => 50, window => 20, type => 'bucket', lease => 1 }],
    },
    {   name => 'pol', vhost => 'main', path => '/s/pol/', failopen => 'off',
        conf => <<'C',
    RLaaSApply pol-sec pol-min
    RLaaSFailOpen off
C
        counters => [{ id => 'pol-sec', limit => 10, window => 2, type => 'bucket' },
                     { id => 'pol-min', limit => 60, window => 30, type => 'log' }],
    },
    # counting by outcome and bans: only 404s count; a denial bans for 3 s,
    # twice as long each time up to 12 s. Its streams are sequential and
    # keep to one connection (see streams), so that a charge made after a
    # response is in before the next check of the identity.
    {   name => 'countif', vhost => 'main', path => '/s/countif/', failopen => 'off',
        conf => <<'C',
    RLaaSLimit 5
    RLaaSWindow 10s
    RLaaSZone countif
    RLaaSKeyBy header:X-Soak-User
    RLaaSCountIf "%{REQUEST_STATUS} == 404"
    RLaaSBan 3s escalate 2 12s
    RLaaSFailOpen off
C
        counters => [{ id => 'countif', limit => 5, window => 10, type => 'log', countif => 404 }],
        ban => { first => 3, max => 12 },
    },
    {   name => 'hostile', vhost => 'main', path => '/s/hostile/', failopen => 'off',
        conf => <<'C',
    RLaaSLimit 10
    RLaaSWindow 10s
    RLaaSZone hostile
    RLaaSKeyBy header:X-Soak-User
    RLaaSFailOpen off
C
        counters => [{ id => 'hostile', limit => 10, window => 10, type => 'log' }],
    },
    # a new identity every request: the state's memory must level off
    {   name => 'churn', vhost => 'main', path => '/s/churn/', failopen => 'on',
        conf => <<'C',
    RLaaSLimit 5
    RLaaSWindow 10s
    RLaaSStrategy gcra
    RLaaSZone churn
    RLaaSKeyBy header:X-Soak-User
    RLaaSFailOpen on
C
        counters => [{ id => 'churn', limit => 5, window => 10, type => 'bucket' }],
    },
    # tenants: each host enforces a floor (RLaaSPolicy in the host, so it
    # counts in the host's namespace); alice's and bob's .htaccess both
    # name their zone "site"; alice's free/ tries to switch limiting off.
    {   name => 'alice-t', vhost => 'alice', path => '/t/', failopen => 'off',
        htaccess => $SITE,
        counters => [{ id => 'site@alice', limit => 8, window => 10, type => 'log' },
                     { id => 'floor@alice', limit => 40, window => 10, type => 'bucket' }],
    },
    {   name => 'alice-free', vhost => 'alice', path => '/free/', failopen => 'off',
        htaccess => <<'C',
RLaaSEngine off
RLaaSDryRun on
RLaaSCost 0
RLaaSFailOpen on
C
        counters => [{ id => 'floor@alice', limit => 40, window => 10, type => 'bucket' }],
    },
    {   name => 'bob-t', vhost => 'bob', path => '/t/', failopen => 'off',
        htaccess => $SITE,
        counters => [{ id => 'site@bob', limit => 8, window => 10, type => 'log' },
                     { id => 'floor@bob', limit => 40, window => 10, type => 'bucket' }],
    },
);
for my $s (@SECTIONS) { $_->{cost} //= 1 for @{ $s->{counters} } }

sub sections { @SECTIONS }

my %BY_NAME = map { ($_->{name} => $_) } @SECTIONS;
sub section { $BY_NAME{ $_[0] } }

# The host's own directives: policies and their enforcement.
sub vhost_conf {
    my ($vh) = @_;
    return <<'C' if $vh eq 'main';
RLaaSPolicy pol-sec 10 2s strategy=gcra key="header:X-Soak-User"
RLaaSPolicy pol-min 60 30s strategy=sliding_log key="header:X-Soak-User"
C
    return <<'C';
RLaaSPolicy floor 40 10s strategy=gcra key="header:X-Soak-User"
RLaaSEnforce floor
RLaaSFailOpen off
RLaaSLimitMax 100
C
}

# ------------------------------------------------------------ identities

# Key values a client may send: long, binary-ish, address-like,
# suffix-like, the module's own markers. Each is one identity and must
# count alone.
sub hostile_values {
    return ('A' x 300, "\xff\xfe\x80bin\x81", "quo\"te;,= ~x", '127.0.0.1',
            '10.1.2.3', '2001-db8-1-2_64', '123456', 'tb', 'gcra', 'sw',
            'ip~127.0.0.1', '~0123456789abcdef0123456789abcdef', 'a:b', 'a=b',
            '');
}

# ------------------------------------------------------------ streams

# A stream: one identity sending to one section. rate: requests per
# second (mean, exponential gaps); burst: N requests at once every
# `every` seconds; sticky: one connection to one server, one request at
# a time; ok/bad: the share of 200 and 404 paths (countif).
sub streams {
    my ($backend) = @_;
    my @s;
    my $add = sub { push @s, { @_ } };
    for my $i (1 .. 3) { $add->(section => 'log', id => "log-good-$i", rate => 0.8) }
    for my $i (1 .. 2) { $add->(section => 'log', id => "log-heavy-$i", rate => 4) }
    $add->(section => 'log', id => 'log-burst', burst => 30, every => 15);
    for my $i (1 .. 2) { $add->(section => 'fixed', id => "fixed-good-$i", rate => 1.2) }
    for my $i (1 .. 2) { $add->(section => 'fixed', id => "fixed-heavy-$i", rate => 5) }
    $add->(section => 'fixed', id => 'fixed-burst', burst => 40, every => 20);
    for my $i (1 .. 2) { $add->(section => 'gcra', id => "gcra-good-$i", rate => 0.8) }
    $add->(section => 'gcra', id => 'gcra-heavy', rate => 5);
    $add->(section => 'token', id => 'token-good', rate => 1);
    for my $i (1 .. 2) { $add->(section => 'token', id => "token-heavy-$i", rate => 4) }
    $add->(section => 'token', id => 'token-burst', burst => 60, every => 25);
    $add->(section => 'pol', id => 'pol-good', rate => 1);
    $add->(section => 'pol', id => 'pol-heavy', rate => 6);
    $add->(section => 'countif', id => 'cif-good', rate => 1.5, sticky => 1, bad => 0.05);
    for my $i (1 .. 2) { $add->(section => 'countif', id => "cif-bad-$i", rate => 1.5, sticky => 1, bad => 0.7) }
    my @h = hostile_values();
    for my $i (0 .. $#h) {
        $add->(section => 'hostile', id => $h[$i], rate => $i % 2 ? 1.6 : 0.5, hostile => 1);
    }
    $add->(section => 'churn', id => 'churn', rate => 2, churn => 1);
    $add->(section => 'alice-t', id => 'ten-good', rate => 0.4);
    $add->(section => 'alice-t', id => 'ten-heavy', rate => 2);
    $add->(section => 'alice-free', id => 'ten-heavy', rate => 5);
    # the name alice's heavy client uses, on bob's site, quietly: a
    # refusal would mean the tenants share a counter
    $add->(section => 'bob-t', id => 'ten-heavy', rate => 0.4);
    $add->(section => 'bob-t', id => 'ten-good', rate => 0.4);
    return @s;
}

1;
