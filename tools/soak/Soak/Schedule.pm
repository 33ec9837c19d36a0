package Soak::Schedule;
# The fault schedule: drawn from the seed alone (Perl's own drand48, the
# same on every machine since perl 5.20), backend by backend in the fixed
# order of @Soak::Model::BACKENDS, so that the same SEED and DURATION give
# the same faults on a backend whatever other backends run beside it.
#
# A fault: { n, at (s from the start), kind, target, dur (s), p => {...} }.
# Faults of one backend never overlap: each is followed by a pause of at
# least SETTLE seconds, so that the recovery from each one is measured.
#
# To add a kind: give it a weight in %KINDS for the backends it applies
# to, its parameters in params(), its action in soak.pl's fault(), and its
# class in Soak::Check (%BACKEND_FAULT, %STATE_LOSS).
use strict;
use warnings;

use Soak::Model ();

our $SETTLE = 8;      # seconds at least between two faults of a backend
our $GAP = 12;        # mean of the further random pause (exponential)

my %HTTPD = (httpd_graceful => 2, httpd_restart => 1, httpd_stopstart => 1,
             child_kill => 3, clock_step => 1);
my %REDIS = (redis_stop => 2, redis_kill => 2, debug_sleep => 2, client_kill => 2,
             script_flush => 2, net_delay => 2);
my %KINDS = (
    local    => { %HTTPD, child_kill => 4, httpd_restart => 2, httpd_stopstart => 2, clock_step => 2 },
    redis    => { %HTTPD, %REDIS },
    lease    => { %HTTPD, %REDIS },
    tls      => { %HTTPD, %REDIS },
    sentinel => { %HTTPD, redis_stop => 2, redis_kill => 2, debug_sleep => 1, client_kill => 1,
                  script_flush => 1, sentinel_failover => 3 },
    cluster  => { %HTTPD, cluster_master_kill => 2, cluster_migrate => 3, redis_stop => 1,
                  debug_sleep => 1, client_kill => 1, script_flush => 1 },
);

sub kinds { my ($b) = @_; return %{ $KINDS{$b} } }

sub _pick {
    my (@a) = @_;
    return $a[ int rand @a ];
}

sub _between { my ($lo, $hi) = @_; return sprintf('%.1f', $lo + rand($hi - $lo)) + 0 }

# (duration, target, params) of one fault of KIND
sub params {
    my ($kind) = @_;
    my $srv = _pick(qw(event prefork));
    my $pick = int rand 1000;
    return (2, $srv, {}) if $kind eq 'httpd_graceful' || $kind eq 'httpd_restart';
    return (_between(1, 3), $srv, {}) if $kind eq 'httpd_stopstart';
    return (1, $srv, { pick => $pick }) if $kind eq 'child_kill';
    # the event server is the one started with the clock shim
    return (_between(5, 15), 'event', { step => _pick(-120, -20, -3, 3, 20, 120) }) if $kind eq 'clock_step';
    return (_between(1, 4), 'redis', { pick => $pick }) if $kind eq 'redis_stop';
    return (_between(0.5, 3), 'redis', { pick => $pick }) if $kind eq 'redis_kill' || $kind eq 'cluster_master_kill';
    return (_between(0.5, 2.5), 'redis', { pick => $pick }) if $kind eq 'debug_sleep';
    return (1, 'redis', {}) if $kind eq 'client_kill' || $kind eq 'script_flush';
    return (_between(3, 10), 'relay', { ms => _pick(20, 100, 300, 800) }) if $kind eq 'net_delay';
    return (10, 'sentinels', {}) if $kind eq 'sentinel_failover';
    return (_between(3, 6), 'redis', { pick => $pick,
        who => _pick(qw(log-heavy-1 log-heavy-2 fixed-heavy-1 gcra-heavy pol-heavy cif-bad-1)) })
        if $kind eq 'cluster_migrate';
    die "no parameters for fault kind $kind\n";
}

sub schedule {
    my (%o) = @_;
    my %s;
    my @all = @Soak::Model::BACKENDS;
    for my $bi (0 .. $#all) {
        my $b = $all[$bi];
        next unless grep { $_ eq $b } @{ $o{backends} };
        srand($o{seed} * 7 + $bi * 7919 + 1);
        my %w = kinds($b);
        my @bag = map { ($_) x $w{$_} } sort keys %w;
        my $t = $o{warm} + rand(10);
        my $n = 0;
        my @f;
        while (1) {
            my $kind = _pick(@bag);
            my ($dur, $target, $p) = params($kind);
            last if $t + $dur > $o{duration} - $o{quiet};
            push @f, { n => ++$n, at => sprintf('%.1f', $t) + 0, kind => $kind,
                       target => $target, dur => $dur, p => $p };
            $t += $dur + $SETTLE + -log(1 - rand()) * ($o{duration} < 600 ? $GAP / 2 : $GAP);
        }
        $s{$b} = \@f;
    }
    return %s;
}

1;
