package Soak::Check;
# The invariants of the soak, checked from SOAK_DIR: requests/*.tsv (every
# request, client side), faults.tsv (every fault's start and end),
# samples.tsv (memory, descriptors, Redis), the servers' error logs and
# meta.json. analyze(DIR) returns the figures and each invariant with its
# violations; Soak::Report writes them out.
#
# Time: a request's decision happened somewhere between the time it was
# sent (s) and the time its answer was read (a), on the same clock as
# Redis' TIME and the local engine's (one machine). Every check below is
# sound with that uncertainty: it reports a violation only when every
# possible placement of the decisions breaks the rule.
use strict;
use warnings;

use JSON::PP ();
use List::Util qw(max min sum0 first);
use POSIX qw(floor ceil);

use Soak::Model ();
use Soak::Load ();

# Tolerances, stated in the report (docs/_incoming/soak.md says why).
our $GRACE = 10;           # s after a fault's end during which it may
                           # still show (errors, fail-open, 5xx); also the
                           # bound on recovery
our $HANG = 5;             # s: no request may take longer
our $BEFORE = 0.5;         # s: a fault may show this long before its
                           # logged start (the log line is written first,
                           # but the clock is read just before)
our $BAN_SLACK = 1;
our $LONGEST_WINDOW = 30;
our $PROBE_MARGIN = 1.5;   # s around a slow probe: a probe every 0.25 s,
                           # the module's budget 1 s  # s: the longest window of Soak::Model        # s added to a ban's longest length
our %MEM_TOL = (           # growth allowed after warm-up: relative, absolute
    parent_rss => [0.10, 8192], parent_fds => [0, 8],
    child_rss_max => [0.10, 8192], child_fds_max => [0, 24],
    redis_mem => [0.25, 2 << 20], redis_clients => [0.5, 40],
);

# request fields
use constant { S => 0, A => 1, BE => 2, SRV => 3, SEC => 4, ID => 5, CODE => 6,
               ST => 7, RA => 8, REUSED => 9, PROTO => 10, PATH => 11, NOTE => 12, SEQ => 13 };

# Faults that make a backend unable to decide (errors, fail-open and local
# decisions are then expected), and those that may lose state (a counter
# starting afresh: one fresh quota, documented).
my %BACKEND_FAULT = map { ($_ => 1) } qw(redis_stop redis_kill debug_sleep client_kill
    script_flush net_delay sentinel_failover cluster_master_kill cluster_migrate);
my %STATE_LOSS_SHARED = (
    redis_kill => 'all', cluster_master_kill => 'all', sentinel_failover => 'all',
    # a master stopped or asleep past down-after / node-timeout is failed
    # over: the writes not yet replicated are lost
    redis_stop => 'replicated', debug_sleep => 'replicated',
);
# faults of one server that may lose that server's own state (the local
# engine's table, the local fallback's): a full stop, a restart, a child
# killed inside a change (the stripe is emptied), a clock step
my %STATE_LOSS_SERVER = map { ($_ => 1) } qw(httpd_restart httpd_stopstart child_kill clock_step);

sub _slurp_json { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; JSON::PP->new->decode(<$fh>) }

sub analyze {
    my ($dir) = @_;
    my $meta = _slurp_json("$dir/meta.json");
    my $X = { dir => $dir, meta => $meta, inv => {}, bounds => {} };
    _load_requests($X);
    _load_faults($X);
    _windows($X);
    _load_probes($X);
    _load_access($X);
    _counters($X);
    check_over_limit($X);
    check_fallback($X);
    check_refusals($X);
    check_bans($X);
    check_responses($X);
    check_crashes($X);
    check_memory($X);
    check_recovery($X);
    figures($X);
    my $bad = 0;
    $bad += $_->{violations} for values %{ $X->{inv} };
    $X->{ok} = $bad == 0 && $X->{nreq} > 0 ? 1 : 0;
    delete $X->{$_} for qw(req inst server_us stall_windows);    # not for the report
    return $X;
}

# ------------------------------------------------------------ loading

sub _load_requests {
    my ($X) = @_;
    my @r;
    for my $f (sort glob("$X->{dir}/requests/*.tsv")) {
        open my $fh, '<', $f or next;
        while (<$fh>) {
            chomp;
            my @f = split /\t/, $_, -1;
            next unless @f >= 12;
            push @r, \@f;
        }
    }
    @r = sort { $a->[S] <=> $b->[S] } @r;
    $X->{req} = \@r;
    $X->{nreq} = scalar @r;
}

sub _load_faults {
    my ($X) = @_;
    my (%f, @f);
    if (open my $fh, '<', "$X->{dir}/faults.tsv") {
        while (<$fh>) {
            chomp;
            my ($what, $t, $b, $n, $kind, $target, $x) = split /\t/;
            my $k = "$b#$n";
            if ($what eq 'B') {
                $f{$k} = { backend => $b, n => $n, kind => $kind, target => $target,
                           start => $t, end => undef, dur => $x };
                push @f, $f{$k};
            } elsif ($what eq 'E' && $f{$k}) {
                $f{$k}{end} = $t;
                $f{$k}{note} = $x;
            }
        }
    }
    for (@f) { $_->{end} //= $_->{start} + ($_->{dur} || 0); $_->{server} = "$_->{backend}-$_->{target}" }
    $X->{faults} = \@f;
}

sub _overlaps {
    my ($list, $s, $a) = @_;
    for my $w (@$list) { return $w if $s <= $w->[1] && $a >= $w->[0] }
    return undef;
}

# Windows in which a request may see a fault: per backend (its Redis
# faults), per server (its own httpd faults), any fault of the backend,
# and the state-loss events by scope.
sub _windows {
    my ($X) = @_;
    my (%down, %srv, %any, %loss);
    for my $f (@{ $X->{faults} }) {
        my $w = [$f->{start} - $BEFORE, $f->{end} + $GRACE, $f];
        # a clock step shows until what it stamped has aged out: state
        # stamped ahead is held until the clock catches up (docs/strategies.md), so the step plus the longest window
        if ($f->{kind} eq 'clock_step' && ($f->{note} // '') =~ /clock moved (-?\d+)s/) {
            $f->{step} = abs $1;
            $w->[1] += $f->{step} + $LONGEST_WINDOW;
            push @{ $X->{clockf}{ $f->{server} } }, $w;
        }
        push @{ $any{ $f->{backend} } }, $w;
        if ($BACKEND_FAULT{ $f->{kind} }) {
            push @{ $down{ $f->{backend} } }, $w;
            my $sl = $STATE_LOSS_SHARED{ $f->{kind} };
            if ($sl && ($sl eq 'all' || $f->{backend} =~ /^(sentinel|cluster)$/)) {
                push @{ $loss{"$f->{backend}|*"} }, [$f->{start} - $BEFORE, $f->{end} + 2, $f];
            }
        } else {
            push @{ $srv{ $f->{server} } }, $w;
            push @{ $loss{"$f->{backend}|$f->{server}"} }, [$f->{start} - $BEFORE, $f->{end} + 2, $f]
                if $STATE_LOSS_SERVER{ $f->{kind} };
        }
    }
    @$X{qw(down srvf anyf loss)} = (\%down, \%srv, \%any, \%loss);
}

# Unhealthy stretches measured by the probes (soak.pl): a backend's Redis
# that took longer than half the module's budget to answer a PING, or did
# not answer, from before the probe to after its answer; and the
# machine itself, when the probe loop woke up more than 1 s late (every
# backend then). PROBE_MARGIN on either side. They count as fault windows of the backend for the
# checks of health (5xx, undecided, refusals), and are reported.
sub _load_probes {
    my ($X) = @_;
    my $budget = ($X->{meta}{redis_timeout_ms} || 1000);
    my (%slow, @stall);
    open my $fh, '<', "$X->{dir}/probes.tsv" or return;
    while (<$fh>) {
        chomp;
        my ($t, $b, $lat, $late) = split /\t/;
        if ($lat < 0 || $lat > $budget / 2) {
            my $e = $t + ($lat < 0 ? $budget : $lat) / 1000 + $PROBE_MARGIN;
            my $l = $slow{$b} ||= [];
            if (@$l && $t - $PROBE_MARGIN <= $l->[-1][1]) { $l->[-1][1] = $e } else { push @$l, [$t - $PROBE_MARGIN, $e] }
        }
        if ($late > 1000) {
            my ($s, $e) = ($t - $late / 1000 - 1, $t + 1);
            if (@stall && $s <= $stall[-1][1]) { $stall[-1][1] = $e } else { push @stall, [$s, $e] }
        }
    }
    my %fault_down = map { ($_ => [ @{ $X->{down}{$_} } ]) } keys %{ $X->{down} };
    for my $b (@{ $X->{meta}{backends} }) {
        for my $w (@{ $slow{$b} || [] }, @stall) {
            my $pseudo = { kind => 'redis_slow', backend => $b, start => $w->[0], end => $w->[1] };
            push @{ $X->{down}{$b} }, [$w->[0], $w->[1], $pseudo];
            push @{ $X->{anyf}{$b} }, [$w->[0], $w->[1], $pseudo];
        }
        my ($n, $sec, $outside) = (0, 0, 0);
        for my $w (@{ $slow{$b} || [] }) {
            $n++;
            $sec += $w->[1] - $w->[0];
            $outside++ unless _overlaps($fault_down{$b} || [], $w->[0], $w->[1]);
        }
        $X->{unhealthy}{$b} = { windows => $n, seconds => sprintf('%.1f', $sec), outside_faults => $outside };
    }
    # a stalled machine: every server's connections may be dropped or late
    for my $srv (@{ $X->{meta}{servers} }) {
        push @{ $X->{srvf}{ $srv->{name} } }, map { [$_->[0], $_->[1], { kind => 'host_stall' }] } @stall;
    }
    $X->{stalls} = { windows => scalar @stall, seconds => sprintf('%.1f', sum0(map { $_->[1] - $_->[0] } @stall)) };
    $X->{stall_windows} = \@stall;
}

# The time httpd itself took for each request (%D of the access logs),
# by X-Soak-Seq.
sub _load_access {
    my ($X) = @_;
    my %d;
    for my $s (@{ $X->{meta}{servers} }) {
        open my $fh, '<', "$s->{dir}/access_log" or next;
        while (<$fh>) {
            my ($seq, $us) = split / /;
            next if $seq eq '-';
            $seq = "$s->{name}|$seq";
            # an HTTP/2 burst's requests share one: the longest counts
            $d{$seq} = $us if !defined $d{$seq} || $us > $d{$seq};
        }
    }
    $X->{server_us} = \%d;
}

sub _down { my ($X, $r) = @_; _overlaps($X->{down}{ $r->[BE] } || [], $r->[S], $r->[A]) }
sub _srv_fault { my ($X, $r) = @_; _overlaps($X->{srvf}{ $r->[SRV] } || [], $r->[S], $r->[A]) }
sub _any_fault { my ($X, $r) = @_; _overlaps($X->{anyf}{ $r->[BE] } || [], $r->[S], $r->[A]) }

sub _inv {
    my ($X, $name, %o) = @_;
    return $X->{inv}{$name} ||= { violations => 0, checked => 0, examples => [], %o };
}

sub _violation {
    my ($X, $name, $text) = @_;
    my $i = _inv($X, $name);
    $i->{violations}++;
    (my $who = (split / /, $text)[0]) =~ s/:$//;
    $i->{by}{$who}++;
    push @{ $i->{examples} }, $text if @{ $i->{examples} } < 20;
}

sub _fmt_req {
    my ($X, $r) = @_;
    return sprintf '%s %s %s id=%s %s %s [%.3f, %.3f] (t+%.1fs) %s', $r->[SRV], $r->[SEC], $r->[PATH],
        $r->[ID], $r->[CODE], $r->[ST], $r->[S], $r->[A], $r->[S] - $X->{meta}{t0}, $r->[NOTE] // '';
}

# ------------------------------------------------------------ counters

# A counter instance: backend | scope | counter | identity, scope '*' for
# state shared through Redis, the server's name for the local engine.
sub _counters {
    my ($X) = @_;
    my %inst;
    for my $r (@{ $X->{req} }) {
        my $sec = Soak::Model::section($r->[SEC]) or next;
        my $scope = $r->[BE] eq 'local' ? $r->[SRV] : '*';
        for my $c (@{ $sec->{counters} }) {
            push @{ $inst{"$r->[BE]|$scope|$c->{id}|$r->[ID]"}{req} }, $r;
            $inst{"$r->[BE]|$scope|$c->{id}|$r->[ID]"}{c} = $c;
        }
    }
    $X->{inst} = \%inst;
}

sub _limit_of { my ($X, $be, $c) = @_; $c->{limit} }

# units a request charged for sure (an admission by the counter's state)
sub _charged {
    my ($c, $r) = @_;
    return 0 unless $r->[ST] eq 'allowed';
    return 0 if $c->{countif} && $r->[CODE] != $c->{countif};
    return $c->{cost};
}

# units a request may have charged: admitted, or its outcome unknown (an
# error or a lost answer: the call may have run)
sub _maybe_charged {
    my ($c, $r) = @_;
    my $st = $r->[ST];
    return 0 if $r->[CODE] == 429;
    return 0 if $c->{countif} && $st eq 'allowed' && $r->[CODE] != $c->{countif};
    return $c->{cost};
}

# what leases may hold on top of the count (docs/backends.md, "Leases": "a server
# holds less than twice a portion at any time", a portion "at most
# max(cost, 1/8 of what remains in Redis when it is granted)")
sub _lease_slack {
    my ($X, $be, $c, $for_refusal) = @_;
    return 0 unless $be eq 'lease' && $c->{lease};
    # fixed: "units are spent within the window that granted them", so
    # never more than the limit in a window; what is held only delays
    return 0 if $c->{type} eq 'fixed' && !$for_refusal;
    my $servers = grep { $_->{backend} eq $be } @{ $X->{meta}{servers} };
    return $servers * 2 * max($c->{cost}, ceil($c->{limit} / 8));
}

# excess events of one list of admissions [s, a, units] under a counter
sub _excess {
    my ($c, $adm, $limit, $slack_fn) = @_;
    my @ev;
    my $W = $c->{window};
    my @a = sort { $a->[0] <=> $b->[0] } @$adm;
    if ($c->{type} eq 'fixed') {
        my %k;
        for my $x (@a) {
            my ($ks, $ka) = (floor($x->[0] / $W), floor($x->[1] / $W));
            $k{$ks} += $x->[2] if $ks == $ka;
        }
        for my $k (sort { $a <=> $b } keys %k) {
            my $bound = $limit + $slack_fn->(0);
            push @ev, { from => $k * $W, to => ($k + 1) * $W, units => $k{$k}, bound => $bound }
                if $k{$k} > $bound;
        }
        return @ev;
    }
    my $rate = $limit / $W;
    for my $i (0 .. $#a) {
        my ($sum, $maxa) = (0, $a[$i][1]);
        my $worst;
        for (my $j = $i; $j <= $#a && $a[$j][0] < $a[$i][0] + $W; $j++) {
            $maxa = $a[$j][1] if $a[$j][1] > $maxa;
            last if $c->{type} eq 'log' && $maxa - $a[$i][0] >= $W;
            $sum += $a[$j][2];
            my $span = $maxa - $a[$i][0];
            my $bound = $c->{type} eq 'log' ? $limit : $limit + $rate * $span;
            $bound += $slack_fn->($span);
            if ($sum > $bound + 1e-9 && (!$worst || $sum - $bound > $worst->{units} - $worst->{bound})) {
                $worst = { from => $a[$i][0], to => $maxa, units => $sum, bound => $bound };
            }
        }
        push @ev, $worst if $worst;
    }
    # one event per stretch: overlapping windows of one excess are one
    my @m;
    for my $e (@ev) {
        if (@m && $e->{from} <= $m[-1]{to}) {
            $m[-1] = $e if $e->{units} - $e->{bound} > $m[-1]{units} - $m[-1]{bound};
            $m[-1]{to} = max($m[-1]{to}, $e->{to});
        } else { push @m, $e }
    }
    return @m;
}

# state-loss events that may have given an instance a fresh quota within
# [from - window, to]
sub _losses {
    my ($X, $key, $from, $to, $W) = @_;
    return grep { $_->[0] <= $to && $_->[1] >= $from - $W } @{ $X->{loss}{$key} || [] };
}

sub check_over_limit {
    my ($X) = @_;
    my $inv = _inv($X, 'over_limit',
        title => 'no identity admitted more than its limit',
        rule => 'admissions decided by the backend (RLAAS_STATUS allowed; for RLaaSCountIf, those whose response matched) per rolling window (sliding log), per window of the limiter clock (fixed), or at most limit + limit*T/window in any T seconds (token, gcra); with RLaaSLease, token and gcra plus what leases may hold (2 servers x 2 portions of max(cost, limit/8), docs/backends.md "Leases"), fixed windows the limit alone ("units are spent within the window that granted them"); one fresh quota per state-loss event (Redis killed, a failover, the local table reset: docs/failure.md "Recovery", docs/backends.md "The local engine"), counted apart');
    my ($within_loss, $within_lease) = (0, 0);
    my @bound_ex;
    for my $key (sort keys %{ $X->{inst} }) {
        my $in = $X->{inst}{$key};
        my $c = $in->{c};
        my ($be, $scope) = split /\|/, $key;
        my @adm = map { [$_->[S], $_->[A], _charged($c, $_)] } grep { _charged($c, $_) } @{ $in->{req} };
        next unless @adm;
        $inv->{checked} += @adm;
        my $slack = _lease_slack($X, $be, $c);
        for my $e (_excess($c, \@adm, $c->{limit}, sub { 0 })) {
            my $over = $e->{units} - $e->{bound};
            my @loss = _losses($X, "$be|$scope", $e->{from}, $e->{to}, $c->{window});
            my $allow = $slack + @loss * $c->{limit};
            my $txt = sprintf '%s: %d units in [t+%.1f, t+%.1f], bound %.1f (over by %.1f)', $key,
                $e->{units}, $e->{from} - $X->{meta}{t0}, $e->{to} - $X->{meta}{t0}, $e->{bound}, $over;
            if ($over <= $allow + 1e-9) {
                if (@loss) { $within_loss++ } else { $within_lease++ }
                push @bound_ex, $txt . ($slack ? " lease slack $slack" : '')
                    . (@loss ? ' after ' . join(', ', map { "$_->[2]{kind} $_->[2]{server} at t+" . sprintf('%.1f', $_->[2]{start} - $X->{meta}{t0}) } @loss) : '');
                next;
            }
            _violation($X, 'over_limit', $txt . ($slack ? " (lease slack $slack allowed)" : '')
                . (@loss ? sprintf(' (%d state-loss events allowed)', scalar @loss) : ''));
        }
    }
    $X->{bounds}{over_limit_state_loss} = $within_loss;
    $X->{bounds}{over_limit_lease} = $within_lease;
    $X->{bounds}{examples} = [ @bound_ex[0 .. min($#bound_ex, 19)] ];
}

# RLaaSFailOpen local: decisions of the local engine (RLAAS_STATUS local)
# per server, each limit divided by RLaaSLocalDivisor (docs/backends.md "Redis as
# the source, the local engine as the fallback")
sub check_fallback {
    my ($X) = @_;
    my $inv = _inv($X, 'fallback_over_limit',
        title => 'local fallback within limit/divisor per server',
        rule => 'RLAAS_STATUS local admissions per server and identity, against max(1, floor(limit/RLaaSLocalDivisor)) with a cost above that share costing the share (docs/backends.md "Redis as the source, the local engine as the fallback"); one fresh quota per restart of that server');
    my %by;
    for my $r (@{ $X->{req} }) {
        next unless $r->[ST] eq 'local';
        my $sec = Soak::Model::section($r->[SEC]) or next;
        for my $c (@{ $sec->{counters} }) {
            push @{ $by{"$r->[BE]|$r->[SRV]|$c->{id}|$r->[ID]"} }, [$r, $c];
        }
    }
    my $div = $X->{meta}{divisor} || 1;
    for my $key (sort keys %by) {
        my $c = $by{$key}[0][1];
        my ($be, $srv) = split /\|/, $key;
        my $share = max(1, floor($c->{limit} / $div));
        my %c2 = (%$c, cost => min($c->{cost}, $share));
        my @adm = map { [$_->[0][S], $_->[0][A], $c2{cost}] } @{ $by{$key} };
        $inv->{checked} += @adm;
        for my $e (_excess(\%c2, \@adm, $share, sub { 0 })) {
            my @loss = _losses($X, "$be|$srv", $e->{from}, $e->{to}, $c->{window});
            next if $e->{units} - $e->{bound} <= @loss * $share;
            _violation($X, 'fallback_over_limit', sprintf '%s: %d units in [t+%.1f, t+%.1f], share %d',
                $key, $e->{units}, $e->{from} - $X->{meta}{t0}, $e->{to} - $X->{meta}{t0}, $share);
        }
    }
}

# The requests of a list sorted by sending time that were sent before R
# was answered and may have been answered within W before R was sent.
sub _near {
    my ($list, $r, $W) = @_;
    my ($lo, $hi) = (0, scalar @$list);
    while ($lo < $hi) {
        my $mid = int(($lo + $hi) / 2);
        if ($list->[$mid][S] < $r->[A]) { $lo = $mid + 1 } else { $hi = $mid }
    }
    my @n;
    for (my $i = $lo - 1; $i >= 0; $i--) {
        my $x = $list->[$i];
        last if $x->[S] < $r->[S] - $W - $Soak::Load::HANG - 1;
        push @n, $x;
    }
    return @n;
}

# A 429 (RLAAS_STATUS denied) while no fault of the backend was under way
# is wrong if every counter of the request was under its limit, counting
# every request that may have been charged.
sub check_refusals {
    my ($X) = @_;
    my $inv = _inv($X, 'wrongful_refusal',
        title => 'no admission refused while the backend was healthy and the identity under its limit',
        rule => "a 429 (denied) outside every fault window of its backend (from ${BEFORE}s before a fault's start to ${GRACE}s after its end) where, for every counter of the request, the units that may have been charged within the window before it (admitted, or with an unknown outcome) plus its cost fit in the limit; with RLaaSLease, less what leases may hold (docs/backends.md \"Leases\": refused while about N/8 of what remained sits unspent)");
    my $skipped = 0;
    for my $key (sort keys %{ $X->{inst} }) {
        my $in = $X->{inst}{$key};
        my $c = $in->{c};
        my ($be) = split /\|/, $key;
        my @maybe = grep { _maybe_charged($c, $_) } @{ $in->{req} };
        my $W = $c->{window};
        my $slack = _lease_slack($X, $be, $c, 1);
        for my $r (@{ $in->{req} }) {
            next unless $r->[CODE] == 429 && $r->[ST] eq 'denied';
            if (_any_fault($X, $r)) { $skipped++; next }
            $inv->{checked}++;
            my $used;
            if ($c->{type} eq 'fixed') {
                $used = 0;
                for my $k (floor($r->[S] / $W) .. floor($r->[A] / $W)) {
                    my ($ws, $we) = ($k * $W, ($k + 1) * $W);
                    my $u = sum0(map { $c->{cost} } grep { $_ != $r && $_->[S] < $we && $_->[A] >= $ws } _near(\@maybe, $r, $W));
                    $used = $u if $u > $used;
                }
            } else {
                $used = sum0(map { $c->{cost} } grep { $_ != $r && $_->[A] > $r->[S] - $W } _near(\@maybe, $r, $W));
            }
            $r->[20]{$c->{id}} = $used + $c->{cost} + $slack <= $c->{limit} ? 'under' : 'over';
            $r->[21] = $key;
        }
    }
    # a request is wrongly refused when all its counters were under
    my %seen;
    for my $key (sort keys %{ $X->{inst} }) {
        for my $r (@{ $X->{inst}{$key}{req} }) {
            next unless ref $r->[20] eq 'HASH' && !$seen{$r}++;
            my $sec = Soak::Model::section($r->[SEC]);
            next if grep { ($r->[20]{ $_->{id} } // 'over') ne 'under' } @{ $sec->{counters} };
            _violation($X, 'wrongful_refusal', _fmt_req($X, $r));
        }
    }
    $inv->{checked} = scalar keys %seen;
    $inv->{skipped_in_faults} = $skipped;
}

# RLaaSBan: a "banned" 429 follows a denial of the identity within the
# longest ban; nothing is admitted in the first ban's length after one
sub check_bans {
    my ($X) = @_;
    my $i1 = _inv($X, 'ban_without_denial', title => 'a ban refusal follows a denial',
        rule => 'every 429 with RLAAS_STATUS banned has a denial of the same identity and zone (same server with the local engine) within the longest ban (escalate MAX) + ' . $BAN_SLACK . 's before it');
    my $i2 = _inv($X, 'admitted_in_ban', title => 'nothing admitted during a ban',
        rule => 'no admission decided certainly after a denial and before the first ban length has passed since it, unless a state-loss event or a fault of the backend falls in between');
    for my $key (sort keys %{ $X->{inst} }) {
        my $in = $X->{inst}{$key};
        my $sec = Soak::Model::section($in->{req}[0][SEC]);
        my $ban = $sec->{ban} or next;
        my ($be, $scope) = split /\|/, $key;
        my @den = grep { $_->[CODE] == 429 && $_->[ST] eq 'denied' } @{ $in->{req} };
        for my $r (@{ $in->{req} }) {
            if ($r->[ST] eq 'banned') {
                next if _overlaps($X->{clockf}{ $r->[SRV] } || [], $r->[S], $r->[A]);
                $i1->{checked}++;
                my $ok = first { $_->[S] < $r->[A] && $_->[A] > $r->[S] - $ban->{max} - $BAN_SLACK } @den;
                _violation($X, 'ban_without_denial', _fmt_req($X, $r)) unless $ok;
            }
        }
        for my $d (@den) {
            my @in = grep { $_->[ST] eq 'allowed' && $_->[S] > $d->[A] && $_->[A] < $d->[S] + $ban->{first} } @{ $in->{req} };
            $i2->{checked}++;
            for my $r (@in) {
                next if _losses($X, "$be|$scope", $d->[S], $r->[A], 0);
                next if _overlaps($X->{down}{$be} || [], $d->[S], $r->[A]);
                next if _overlaps($X->{clockf}{ $r->[SRV] } || [], $d->[S], $r->[A]);
                _violation($X, 'admitted_in_ban', _fmt_req($X, $r) . sprintf(' after a denial at t+%.3f', $d->[A] - $X->{meta}{t0}));
            }
        }
    }
}

# statuses, 5xx, transport errors, hangs, decisions missing
sub check_responses {
    my ($X) = @_;
    my $i5 = _inv($X, 'unexpected_5xx', title => '5xx only while fail-closed and the backend was down',
        rule => "a 5xx is expected only from a section with RLaaSFailOpen off (or the host's, for an enforced policy) and only within a fault window of its backend (${BEFORE}s before its start to ${GRACE}s after its end); the console and metrics handlers count as fail-closed");
    my $iu = _inv($X, 'undecided_while_healthy', title => 'decided while the backend was healthy',
        rule => "RLAAS_STATUS error, fail_open, local or local_denied only within a fault window of the backend");
    my $it = _inv($X, 'transport_error', title => 'no connection lost outside httpd faults',
        rule => "a request without an answer (reset, closed) only within a window of a fault of its own server (graceful or hard restart, stop and start, child killed, clock step: ${BEFORE}s before to ${GRACE}s after) or of a stall of the machine; a kept-alive connection the server closed as the request went out (nothing read) is the keep-alive race, counted apart");
    my $ih = _inv($X, 'hang', title => "no hang beyond ${HANG}s",
        rule => "every request answered within ${HANG}s (RLaaSRedisTimeout 1s plus 4s for httpd on a 2-CPU machine shared with other work), faults included, by the time httpd itself took (%D of its access log, joined by X-Soak-Seq; without a log line, the client's time, except for a connection lost in a fault of its own server or in a stall of the machine); requests of a server whose clock the shim has moved are not judged (httpd's own %D and MPM timers read that clock)");
    my $im = _inv($X, 'no_decision', title => 'every limited request decided',
        rule => 'every answered request of a limited section carries RLAAS_STATUS (the enforced policy too, where a .htaccess switches its own limit off)');
    for my $r (@{ $X->{req} }) {
        my $sec = Soak::Model::section($r->[SEC]);
        my $code = $r->[CODE];
        # the clock shim moves httpd's own wall clock, which its %D and its
        # MPM's timers read: a stepped server's requests are not judged
        if (_overlaps($X->{clockf}{ $r->[SRV] } || [], $r->[S], $r->[A])) { $X->{hang_in_clock_step}++ }
        else { $ih->{checked}++ }
        my $took = $r->[A] - $r->[S];
        my $us = defined $r->[SEQ] ? $X->{server_us}{"$r->[SRV]|$r->[SEQ]"} : undef;
        if (_overlaps($X->{clockf}{ $r->[SRV] } || [], $r->[S], $r->[A])) {
            # (above)
        } elsif (defined $us) {
            # httpd's own time decides; the rest is the clients' and the
            # listen queue's, on a loaded machine
            if ($us / 1e6 > $HANG) {
                _violation($X, 'hang', _fmt_req($X, $r) . sprintf(' took %.2fs in httpd', $us / 1e6));
            } elsif ($took > $HANG) {
                $X->{slow_outside_httpd}++;
            }
        } elsif ($code == 0 || $took > $HANG) {
            # no line in httpd's log: a connection lost in a fault of its
            # own server (a restart, a stop, a killed child) is that
            # fault's, and counted as such (transport_error)
            if (_overlaps($X->{stall_windows} || [], $r->[S], $r->[A])
                || ($code == 599 && _srv_fault($X, $r))) { $X->{slow_outside_httpd}++ }
            else { _violation($X, 'hang', _fmt_req($X, $r) . sprintf(' took %.2fs', $took)) }
        }
        if ($code == 599 || $code == 0) {
            $it->{checked}++;
            # the server closed a kept-alive connection as the request
            # went out: nothing was read (no child died: see 'crash')
            if (($r->[NOTE] // '') eq 'keep-alive connection closed') { $X->{keepalive_races}++; next }
            _violation($X, 'transport_error', _fmt_req($X, $r)) unless _srv_fault($X, $r);
            next;
        }
        $i5->{checked}++;
        if ($code >= 500) {
            my $closed = !$sec || $sec->{failopen} eq 'off';
            _violation($X, 'unexpected_5xx', _fmt_req($X, $r)) unless $closed && _down($X, $r);
        }
        next unless $sec;
        $iu->{checked}++;
        if ($r->[ST] =~ /^(error|fail_open|local|local_denied)$/) {
            _violation($X, 'undecided_while_healthy', _fmt_req($X, $r)) unless _down($X, $r);
        }
        $im->{checked}++;
        _violation($X, 'no_decision', _fmt_req($X, $r)) if $r->[ST] eq '-' && $code < 500;
    }
}

# error logs: a child that died of a signal we did not send
sub check_crashes {
    my ($X) = @_;
    my $inv = _inv($X, 'crash', title => 'no child crash',
        rule => "no 'exit signal', segmentation fault, abort or heap corruption in any error log, except the SIGKILLs the soak sent (child_kill, named by pid)");
    my %killed;
    for my $f (@{ $X->{faults} }) { $killed{$1} = 1 if ($f->{note} // '') =~ /killed child (\d+)/ }
    for my $s (@{ $X->{meta}{servers} }) {
        open my $fh, '<', "$s->{dir}/error_log" or next;
        while (my $l = <$fh>) {
            $inv->{checked}++;
            next unless $l =~ /exit signal|Segmentation|AH00060|double free|corrupted|stack smashing|Aborted/i;
            next if $l =~ /pid (\d+) exit signal Killed \(9\)/ && $killed{$1};
            chomp $l;
            _violation($X, 'crash', "$s->{name}: $l");
        }
    }
}

sub _median { my @v = sort { $a <=> $b } @_; return @v ? $v[ int($#v / 2) ] : 0 }
sub _pct { my ($p, @v) = @_; @v = sort { $a <=> $b } @v; return @v ? $v[ min($#v, int($p * @v)) ] : 0 }

# RSS, descriptors, Redis memory and clients: after warm-up, the level at
# the end (median of the last quarter) may exceed the highest level of the
# first quarter by the stated tolerance at most
sub check_memory {
    my ($X) = @_;
    my $m = $X->{meta};
    my $warm = $m->{t0} + max(60, 0.2 * $m->{duration});
    my $inv = _inv($X, 'memory_flat', title => 'RSS, descriptors and Redis memory flat after warm-up',
        rule => sprintf('after warm-up (%ds), the median of the last quarter of the samples against the highest of the first quarter: %s', $warm - $m->{t0},
            join(', ', map { "$_ +" . ($MEM_TOL{$_}[0] * 100) . "% + $MEM_TOL{$_}[1]" } sort keys %MEM_TOL)));
    my %series;
    open my $fh, '<', "$X->{dir}/samples.tsv" or return;
    while (<$fh>) {
        chomp;
        my @f = split /\t/;
        if ($f[1] eq 'httpd') {
            my ($t, undef, $n, $prss, $pfd, $nc, $crss, $cmax, $cfd, $cfdmax) = @f;
            push @{ $series{"$n parent_rss"} }, [$t, $prss];
            push @{ $series{"$n parent_fds"} }, [$t, $pfd];
            push @{ $series{"$n child_rss_max"} }, [$t, $cmax] if $nc;
            push @{ $series{"$n child_fds_max"} }, [$t, $cfdmax] if $nc;
            push @{ $series{"$n children"} }, [$t, $nc];
        } elsif ($f[1] eq 'load') {
            push @{ $series{'host load1'} }, [$f[0], $f[3]];
        } elsif ($f[1] eq 'redis') {
            my ($t, undef, $b, $mem, $cl, $keys, $up, $all) = @f;
            next unless $up == $all;    # a node down: its share is missing
            push @{ $series{"$b redis_mem"} }, [$t, $mem];
            push @{ $series{"$b redis_clients"} }, [$t, $cl];
            push @{ $series{"$b redis_keys"} }, [$t, $keys];
        }
    }
    $X->{series} = \%series;
    my @load = map { $_->[1] } @{ $series{'host load1'} || [] };
    $X->{load} = { mean => @load ? sprintf('%.1f', sum0(@load) / @load) : 0, max => max(@load, 0) };
    for my $k (sort keys %series) {
        my ($what) = $k =~ /(\S+)$/;
        my $tol = $MEM_TOL{$what} or next;
        my @p = grep { $_->[0] >= $warm } @{ $series{$k} };
        next if @p < 8;
        my $q = int(@p / 4);
        my $base = max(map { $_->[1] } @p[0 .. $q - 1]);
        my $end = _median(map { $_->[1] } @p[$#p - $q + 1 .. $#p]);
        my $limit = $base * (1 + $tol->[0]) + $tol->[1];
        $inv->{checked}++;
        push @{ $X->{memory} }, { series => $k, base => $base, end => $end, limit => $limit };
        _violation($X, 'memory_flat', sprintf '%s: %s at the end against %s after warm-up (limit %s)', $k, $end, $base, int $limit)
            if $end > $limit;
    }
}

sub _slow_after {
    my ($X, $f, $r) = @_;
    for my $w (@{ $X->{down}{ $f->{backend} } || [] }) {
        next unless $w->[2]{kind} eq 'redis_slow' && $w->[0] > $f->{end};
        return 1 if $r->[S] <= $w->[1] && $r->[A] >= $w->[0];
    }
    return 0;
}

# recovery: after each fault, how long until every server of the backend
# decides normally again; after the last, every server must
sub check_recovery {
    my ($X) = @_;
    my $inv = _inv($X, 'recovery', title => "back to deciding within ${GRACE}s of each fault's end",
        rule => "after each fault, the last abnormal outcome on the backend's servers (a 5xx, RLAAS_STATUS error, fail_open, local or local_denied, a lost connection; for an httpd fault, on that server) within ${GRACE}s of its end; and after the last fault of each backend, every server answering decisions");
    my %byb;
    push @{ $byb{ $_->[BE] } }, $_ for @{ $X->{req} };
    my %rec;
    my %next;    # the next fault of the same backend: the horizon
    my @fs = sort { $a->{start} <=> $b->{start} } @{ $X->{faults} };
    for my $i (0 .. $#fs) {
        my ($n) = grep { $_->{backend} eq $fs[$i]{backend} } @fs[$i + 1 .. $#fs];
        $next{ $fs[$i] } = $n->{start} if $n;
    }
    for my $f (@{ $X->{faults} }) {
        my $reqs = $byb{ $f->{backend} } || [];
        my $own = !$BACKEND_FAULT{ $f->{kind} };
        my $horizon = min($f->{end} + 3 * $GRACE, ($next{$f} // 9e9) - $BEFORE);
        my ($last, $normal) = (undef, 0);
        for my $r (@$reqs) {
            next if $r->[S] < $f->{start} - $BEFORE || $r->[S] > $horizon;
            next if $own && $r->[SRV] ne $f->{server};
            next unless Soak::Model::section($r->[SEC]);
            # what this fault can cause: undecided requests and 5xx; a lost
            # connection only from a fault of the server itself
            my $abn = ($r->[CODE] >= 500 && $r->[CODE] != 599) || $r->[ST] =~ /^(error|fail_open|local|local_denied)$/;
            # a server's fault: its lost connections, and undecided
            # requests Redis' own state does not explain
            $abn = 0 if $abn && $own && _down($X, $r);
            $abn ||= $own && ($r->[CODE] == 599 || $r->[CODE] == 0);
            # not this fault's doing: Redis slow (or the machine stalled)
            # in a stretch the probes saw begin after the fault ended
            $abn = 0 if $abn && _slow_after($X, $f, $r);
            # answered once the next fault had begun: maybe that one's
            $abn = 0 if $abn && defined $next{$f} && $r->[A] > $next{$f} - $BEFORE;
            if ($abn) { $last = $r->[A] if !defined $last || $r->[A] > $last }
            elsif ($r->[S] > $f->{end}) { $normal++ }
        }
        my $t = defined $last ? max(0, $last - $f->{end}) : 0;
        $f->{recovery} = $t;
        push @{ $rec{ $f->{kind} } }, $t;
        $inv->{checked}++;
        _violation($X, 'recovery', sprintf '%s %s on %s at t+%.1f: abnormal outcomes until %.1fs after its end',
            $f->{kind}, $f->{target}, $f->{backend}, $f->{start} - $X->{meta}{t0}, $t) if $t > $GRACE;
        # (when the next fault came at once, there was nothing to see)
        _violation($X, 'recovery', sprintf '%s on %s at t+%.1f: no normal decision after it',
            $f->{kind}, $f->{backend}, $f->{start} - $X->{meta}{t0}) unless $normal || $horizon - $f->{end} < 2;
    }
    $X->{recovery} = { map { my @v = @{ $rec{$_} }; ($_ => { n => scalar @v, median => _median(@v), max => max(@v) }) } keys %rec };
    # the end: each server decides after its backend's last fault
    my %lastf;
    for my $f (@{ $X->{faults} }) { $lastf{ $f->{backend} } = max($lastf{ $f->{backend} } // 0, $f->{end}) }
    for my $s (@{ $X->{meta}{servers} }) {
        my $after = ($lastf{ $s->{backend} } // $X->{meta}{t0}) + $GRACE;
        my @r = grep { $_->[SRV] eq $s->{name} && $_->[S] > $after && Soak::Model::section($_->[SEC]) } @{ $byb{ $s->{backend} } || [] };
        my @bad = grep { ($_->[CODE] >= 500 || $_->[CODE] == 0 || $_->[ST] =~ /^(error|fail_open|local|local_denied)$/)
                         && !_slow_after($X, { backend => $s->{backend}, end => $after - $GRACE }, $_) } @r;
        my $good = grep { $_->[ST] =~ /^(allowed|denied|banned)$/ } @r;
        $X->{final}{ $s->{name} } = { requests => scalar @r, decided => $good, abnormal => scalar @bad,
                                       from => $after - $X->{meta}{t0} };
        $inv->{checked}++;
        _violation($X, 'recovery', sprintf '%s: %d abnormal outcomes and %d decisions after its backend\'s last fault + %ds',
            $s->{name}, scalar @bad, $good, $GRACE) if @bad || !$good;
    }
}

# ------------------------------------------------------------ figures

sub _phase {
    my ($X, $r) = @_;
    for my $w (@{ $X->{anyf}{ $r->[BE] } || [] }) {
        my $f = $w->[2];
        return 'fault' if $r->[S] <= $f->{end} && $r->[A] >= $f->{start};
    }
    for my $w (@{ $X->{anyf}{ $r->[BE] } || [] }) {
        return 'recovery' if $r->[S] <= $w->[1] && $r->[A] >= $w->[0];
    }
    return 'steady';
}

sub figures {
    my ($X) = @_;
    my (%out, %lat, %total, %proto);
    for my $r (@{ $X->{req} }) {
        my $o = $r->[CODE] == 599 || $r->[CODE] == 0 ? 'no answer' : $r->[CODE] . ($r->[ST] ne '-' ? " $r->[ST]" : '');
        $out{ $r->[BE] }{$o}++;
        $total{ $r->[BE] }++;
        $proto{ $r->[PROTO] }++;
        push @{ $lat{ $r->[BE] }{ _phase($X, $r) } }, ($r->[A] - $r->[S]) * 1000;
    }
    $X->{outcomes} = \%out;
    $X->{requests} = \%total;
    $X->{protocols} = \%proto;
    for my $b (keys %lat) {
        for my $p (keys %{ $lat{$b} }) {
            my @v = @{ $lat{$b}{$p} };
            $X->{latency}{$b}{$p} = { n => scalar @v, p50 => _pct(0.5, @v), p99 => _pct(0.99, @v), max => max(@v) };
        }
    }
    my %fk;
    $fk{ $_->{kind} }++ for @{ $X->{faults} };
    $X->{faults_by_kind} = \%fk;
    my $fo = grep { $_->[ST] eq 'fail_open' } @{ $X->{req} };
    my $lo = grep { $_->[ST] eq 'local' } @{ $X->{req} };
    $X->{bounds}{fail_open_admissions} = $fo;
    $X->{bounds}{local_fallback_admissions} = $lo;
    $X->{faults_list} = [ map { { %$_, at => $_->{start} - $X->{meta}{t0}, took => $_->{end} - $_->{start} } } @{ $X->{faults} } ];
    delete $X->{$_} for qw(faults down srvf anyf loss clockf);
}

1;
