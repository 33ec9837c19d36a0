# conf/rlaas-grafana.json and conf/rlaas-alerts.yml load as they are: the
# dashboard is JSON Grafana reads (panels with Prometheus queries), the
# rules are YAML Prometheus reads (groups of rules, each with an alert
# name, an expression and a severity), the alerts people need are there
# (circuit open, fail-open rate, Redis latency), and every metric either
# file names is one the module exports: in rlaas_metrics.c's exposition,
# and, with the module loaded, on /sig/metrics itself.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use CPAN::Meta::YAML ();
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

my $top = repo_top();
sub slurp { open my $fh, '<', $_[0] or die "$_[0]: $!"; local $/; <$fh> }

# ---------------------------------------------------------------- the dashboard
my $dash = eval { JSON::PP->new->decode(slurp(catfile($top, 'conf', 'rlaas-grafana.json'))) };
ok($dash, 'conf/rlaas-grafana.json is JSON') or diag $@;
$dash ||= {};
ok(length($dash->{title} // '') && length($dash->{uid} // ''), 'the dashboard has a title and a uid');
my @panels = @{ $dash->{panels} || [] };
ok(@panels >= 8, scalar(@panels) . ' panels');
my @dexpr;
for my $p (@panels) {
    my @t = @{ $p->{targets} || [] };
    ok(@t && $p->{title}, "panel $p->{id} ($p->{title}) has a title and queries");
    push @dexpr, map { $_->{expr} } @t;
}
my %ds = map { $_->{name} => 1 } @{ $dash->{templating}{list} || [] };
ok($ds{datasource}, 'the Prometheus data source is a variable (imports anywhere)');

# ---------------------------------------------------------------- the rules
my $yaml = CPAN::Meta::YAML->read(catfile($top, 'conf', 'rlaas-alerts.yml'));
ok($yaml, 'conf/rlaas-alerts.yml is YAML') or diag(CPAN::Meta::YAML->errstr);
my $doc = $yaml ? $yaml->[0] : {};
my @groups = @{ ref $doc eq 'HASH' && ref $doc->{groups} eq 'ARRAY' ? $doc->{groups} : [] };
ok(@groups >= 1, 'rules come in groups');
my (@rexpr, %alerts);
for my $g (@groups) {
    ok(length($g->{name} // ''), 'a group has a name');
    for my $r (@{ $g->{rules} || [] }) {
        my $name = $r->{alert} // '';
        ok(length($name) && length($r->{expr} // '') && ($r->{labels}{severity} // '') =~ /^(critical|warning|info)$/
            && length($r->{annotations}{summary} // ''),
            "rule $name: alert, expr, severity, summary");
        ok(!defined $r->{for} || $r->{for} =~ /^\d+[smh]$/, "rule $name: 'for' is a duration");
        $alerts{$name} = $r->{expr};
        push @rexpr, $r->{expr};
    }
}
like($alerts{RLaaSCircuitOpen} // '', qr/\brlaas_circuit_open\b/, 'an alert on an open circuit');
like($alerts{RLaaSFailOpenRate} // '', qr/\brate_limiter_fail_open_total\b/, 'an alert on the fail-open rate');
like($alerts{RLaaSRedisLatencyHigh} // '', qr/\brlaas_redis_latency_seconds_bucket\b/, 'an alert on Redis latency');

# ---------------------------------------------------------------- the metrics named
my %used;
for my $e (@dexpr, @rexpr) {
    $used{$1} = 1 while $e =~ /\b((?:rlaas|rate_limiter)_[a-z0-9_]+)\b/g;
}
ok(keys(%used) >= 10, 'the files use ' . keys(%used) . ' metrics');

# What rlaas_metrics.c writes: each help() (or local_counter()) names a
# series; a histogram is exposed as _bucket, _sum and _count.
sub with_histograms {
    my (%t) = @_;
    return map { $t{$_} eq 'histogram' ? ("${_}_bucket", "${_}_sum", "${_}_count") : $_ } keys %t;
}
my $src = slurp(catfile($top, 'src', 'http', 'rlaas_metrics.c'));
my %static;
$static{$1} = $2 while $src =~ /help\(r,\s*"([a-z_]+)",\s*"([a-z]+)"/g;
# the local table's counters go through local_counter(r, "name", ...)
$static{$1} = 'counter' while $src =~ /local_counter\(r,\s*"([a-z_]+)"/g;
my %exported = map { $_ => 1 } with_histograms(%static);
ok(keys(%exported) >= 15, 'rlaas_metrics.c exposes ' . keys(%exported) . ' series');
for my $m (sort keys %used) {
    ok($exported{$m}, "$m is a series rlaas_metrics.c exposes");
}

SKIP: {
    skip 'mod_rlaas is not loaded', 1 unless have_module();
    my $res = req_close('/sig/metrics');
    my ($text, %live) = ($res->content);
    $live{$1} = $2 while $text =~ /^# TYPE (\S+) (\S+)$/mg;
    my %have = map { $_ => 1 } with_histograms(%live);
    my @missing = grep { !$have{$_} } sort keys %used;
    is("@missing", '', 'every metric named is on /sig/metrics');
}

done_testing();
