package Soak::Report;
# The soak's report: SOAK_DIR/report.md (for people), report.json (the
# same figures for machines), and the curves as SVG written by hand
# (rss.svg, fds.svg, parent.svg, redis.svg): no plotting dependency.
use strict;
use warnings;

use JSON::PP ();
use List::Util qw(max min);

use Soak::Check ();

my @ORDER = qw(over_limit fallback_over_limit wrongful_refusal ban_without_denial admitted_in_ban
               unexpected_5xx undecided_while_healthy transport_error hang no_decision crash
               memory_flat recovery);

sub _t { sprintf '%.1f', $_[0] }

sub summary {
    my ($X) = @_;
    my $s = sprintf "\nsoak: seed %s, %ss, backends %s, %d requests, %d faults\n", $X->{meta}{seed},
        $X->{meta}{duration}, join(',', @{ $X->{meta}{backends} }), $X->{nreq}, scalar @{ $X->{faults_list} };
    for my $k (@ORDER) {
        my $i = $X->{inv}{$k} or next;
        $s .= sprintf "  %-26s %6d violations  (%d checked)\n", $k, $i->{violations}, $i->{checked};
    }
    $s .= $X->{ok} ? "soak: every invariant held\n" : "soak: INVARIANTS BROKEN (see the report)\n";
    return $s;
}

sub write {
    my ($dir, $X) = @_;
    open my $j, '>', "$dir/report.json" or die "$dir/report.json: $!";
    print $j JSON::PP->new->canonical->pretty->allow_nonref->encode({ %$X, series => undef });
    close $j;
    my @svg = svgs($dir, $X);
    open my $fh, '>', "$dir/report.md" or die "$dir/report.md: $!";
    print $fh markdown($X, @svg);
    close $fh;
}

sub markdown {
    my ($X, @svg) = @_;
    my $m = $X->{meta};
    my $md = "# mod_rlaas soak report\n\n";
    $md .= sprintf "Seed **%s**, %s (%ss), backends %s; %d httpd servers; rate x%s; started with load average %s on %s CPUs (httpd %s, Redis %s).\n\n",
        $m->{seed}, $m->{duration_arg}, $m->{duration}, join(', ', @{ $m->{backends} }),
        scalar @{ $m->{servers} }, $m->{rate}, $m->{host}{load}, $m->{host}{nproc}, $m->{host}{httpd} // '?', $m->{host}{redis} // '?';
    $md .= sprintf "Load average of the machine during the run (1 min, sampled every 5 s): mean %s, max %s.\n\n", $X->{load}{mean} // '?', $X->{load}{max} // '?';
    $md .= "Replay: `$m->{command}`\n\n";
    $md .= ($X->{ok} ? "**Every invariant held.**\n\n" : "**Invariants broken: see below.**\n\n");

    $md .= "## Invariants\n\n| invariant | violations | checked | rule |\n|---|---:|---:|---|\n";
    for my $k (@ORDER) {
        my $i = $X->{inv}{$k} or next;
        $md .= sprintf "| %s | %d | %d | %s |\n", $i->{title} // $k, $i->{violations}, $i->{checked}, $i->{rule} // '';
    }
    my $bd = $X->{bounds};
    $md .= "\nWithin the bounds the documentation states, counted apart (not violations):\n\n"
        . "| | count |\n|---|---:|\n"
        . "| windows over the limit after a state-loss event (one fresh quota each) | " . ($bd->{over_limit_state_loss} // 0) . " |\n"
        . "| windows over the limit by no more than what leases may hold | " . ($bd->{over_limit_lease} // 0) . " |\n"
        . "| admissions while failing open (RLAAS_STATUS fail_open) | " . ($bd->{fail_open_admissions} // 0) . " |\n"
        . "| admissions by the local fallback (RLAAS_STATUS local) | " . ($bd->{local_fallback_admissions} // 0) . " |\n"
        . "| refusals not judged: in a fault window | " . ($X->{inv}{wrongful_refusal}{skipped_in_faults} // 0) . " |\n"
 . "| requests answered after more than ${Soak::Check::HANG}s, of which httpd took less (the clients, the listen queue), or lost in a fault of their server | " . ($X->{slow_outside_httpd} // 0) . " |\n"
        . "| requests not judged for hangs: their server's clock moved by the shim | " . ($X->{hang_in_clock_step} // 0) . " |\n"
        . "| keep-alive races (a kept-alive connection closed by the server as the request went out) | " . ($X->{keepalive_races} // 0) . " |\n\n";
    $md .= "The backends' health as probed (a PING every 250 ms by the module's way, slower than half the budget or unanswered; such stretches count as fault windows), and the machine's stalls (the probe loop woken more than 1 s late):\n\n"
        . "| backend | unhealthy stretches | seconds | of which outside injected faults |\n|---|---:|---:|---:|\n";
    for my $be (@{ $m->{backends} }) {
        my $u = $X->{unhealthy}{$be} or next;
        $md .= "| $be | $u->{windows} | $u->{seconds} | $u->{outside_faults} |\n";
    }
    $md .= sprintf "| (machine stalls) | %d | %s | |\n\n", $X->{stalls}{windows} // 0, $X->{stalls}{seconds} // 0;
    if (@{ $bd->{examples} || [] }) {
        $md .= "<details><summary>windows within a stated bound</summary>\n\n" . join('', map { "- $_\n" } @{ $bd->{examples} }) . "\n</details>\n\n";
    }
    for my $k (@ORDER) {
        my $i = $X->{inv}{$k} or next;
        next unless $i->{violations};
        $md .= "### $k: $i->{violations} violations\n\nBy server (or kind): "
            . join(', ', map { "$_ $i->{by}{$_}" } sort keys %{ $i->{by} || {} }) . ". The first 20:\n\n"
            . join('', map { "- `$_`\n" } @{ $i->{examples} }) . "\n";
    }

    $md .= "## Requests\n\n| backend | requests | outcomes |\n|---|---:|---|\n";
    for my $be (@{ $m->{backends} }) {
        my $o = $X->{outcomes}{$be} || {};
        $md .= sprintf "| %s | %d | %s |\n", $be, $X->{requests}{$be} // 0,
            join(', ', map { "$_: $o->{$_}" } sort { $o->{$b} <=> $o->{$a} } keys %$o);
    }
    $md .= "\nProtocols: " . join(', ', map { "$_ $X->{protocols}{$_}" } sort keys %{ $X->{protocols} }) . "\n\n";

    $md .= "## Latency (ms) by phase\n\n`fault`: a fault of the backend under way; `recovery`: up to ${Soak::Check::GRACE}s after one; `steady`: the rest.\n\n"
        . "| backend | phase | requests | p50 | p99 | max |\n|---|---|---:|---:|---:|---:|\n";
    for my $be (@{ $m->{backends} }) {
        for my $p (qw(steady fault recovery)) {
            my $l = $X->{latency}{$be}{$p} or next;
            $md .= sprintf "| %s | %s | %d | %.1f | %.1f | %.1f |\n", $be, $p, $l->{n}, $l->{p50}, $l->{p99}, $l->{max};
        }
    }

    $md .= "\n## Faults\n\n| kind | count | recovery median (s) | recovery max (s) |\n|---|---:|---:|---:|\n";
    for my $k (sort keys %{ $X->{faults_by_kind} }) {
        my $r = $X->{recovery}{$k} || {};
        $md .= sprintf "| %s | %d | %.2f | %.2f |\n", $k, $X->{faults_by_kind}{$k}, $r->{median} // 0, $r->{max} // 0;
    }
    $md .= "\nRecovery: from a fault's end to the last abnormal outcome it caused (0 when none outlived it).\n\n"
        . "After each backend's last fault (+${Soak::Check::GRACE}s):\n\n| server | requests | decided | abnormal |\n|---|---:|---:|---:|\n";
    for my $s (sort keys %{ $X->{final} || {} }) {
        my $f = $X->{final}{$s};
        $md .= sprintf "| %s | %d | %d | %d |\n", $s, $f->{requests}, $f->{decided}, $f->{abnormal};
    }
    $md .= "\n<details><summary>every fault, as run</summary>\n\n| t (s) | backend | kind | target | took (s) | recovery (s) | note |\n|---:|---|---|---|---:|---:|---|\n";
    for my $f (sort { $a->{at} <=> $b->{at} } @{ $X->{faults_list} }) {
        $md .= sprintf "| %.1f | %s | %s | %s | %.1f | %.2f | %s |\n", $f->{at}, $f->{backend}, $f->{kind},
            $f->{target}, $f->{took}, $f->{recovery} // 0, $f->{note} // '';
    }
    $md .= "\n</details>\n\n## Memory and descriptors\n\n";
    $md .= "| series | after warm-up | at the end | limit |\n|---|---:|---:|---:|\n";
    for my $s (@{ $X->{memory} || [] }) {
        $md .= sprintf "| %s | %d | %d | %d |\n", $s->{series}, $s->{base}, $s->{end}, $s->{limit};
    }
    $md .= "\n" . join('', map { "![$_]($_)\n\n" } @svg);
    return $md;
}

# ------------------------------------------------------------ SVG

my @COLORS = ('#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#ad494a');

sub _esc { my $s = shift; $s =~ s/&/&amp;/g; $s =~ s/</&lt;/g; $s =~ s/>/&gt;/g; $s }

# one chart: lines [name, [[t, v]...]], faults as ticks along the bottom
sub chart {
    my (%o) = @_;
    my ($W, $H, $L, $R, $T, $B) = (900, 360, 70, 200, 30, 40);
    my @lines = grep { @{ $_->[1] } } @{ $o{lines} };
    return '' unless @lines;
    my $t0 = $o{t0};
    my $tmax = max(map { $_->[0] - $t0 } map { @{ $_->[1] } } @lines) || 1;
    my $vmax = max(map { $_->[1] } map { @{ $_->[1] } } @lines) || 1;
    $vmax *= 1.1;
    my $x = sub { $L + ($_[0] - $t0) / $tmax * ($W - $L - $R) };
    my $y = sub { $H - $B - $_[0] / $vmax * ($H - $T - $B) };
    my $s = qq{<svg xmlns="http://www.w3.org/2000/svg" width="$W" height="$H" font-family="sans-serif" font-size="11">\n}
          . qq{<rect width="$W" height="$H" fill="white"/>\n<text x="$L" y="18" font-size="14">} . _esc($o{title}) . "</text>\n";
    for my $i (0 .. 4) {
        my $v = $vmax * $i / 4;
        my $yy = $y->($v);
        $s .= sprintf qq{<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>\n},
            $L, $yy, $W - $R, $yy, $L - 4, $yy + 4, $v >= 100 ? int($v) : sprintf('%.1f', $v);
    }
    for my $i (0 .. 5) {
        my $t = $tmax * $i / 5;
        $s .= sprintf qq{<text x="%.1f" y="%d" text-anchor="middle">%ds</text>\n}, $x->($t0 + $t), $H - $B + 15, $t;
    }
    $s .= sprintf qq{<text x="%d" y="%d" text-anchor="middle">%s</text>\n}, ($W - $R + $L) / 2, $H - 5, _esc($o{xlabel} // 'time since the start; ticks: faults');
    for my $f (@{ $o{faults} || [] }) {
        my $xx = $x->($f);
        $s .= sprintf qq{<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#c00" stroke-width="1"/>\n}, $xx, $H - $B, $xx, $H - $B - 8;
    }
    my $i = 0;
    for my $l (@lines) {
        my $c = $COLORS[ $i % @COLORS ];
        my $pts = join ' ', map { sprintf '%.1f,%.1f', $x->($_->[0]), $y->($_->[1]) } @{ $l->[1] };
        $s .= qq{<polyline fill="none" stroke="$c" stroke-width="1.5" points="$pts"/>\n};
        $s .= sprintf qq{<rect x="%d" y="%d" width="12" height="3" fill="$c"/><text x="%d" y="%d">%s</text>\n},
            $W - $R + 10, $T + 14 * $i, $W - $R + 26, $T + 14 * $i + 5, _esc($l->[0]);
        $i++;
    }
    return $s . "</svg>\n";
}

sub svgs {
    my ($dir, $X) = @_;
    my $S = $X->{series} || {};
    my $t0 = $X->{meta}{t0};
    my @ft = map { $_->{at} + $t0 } @{ $X->{faults_list} || [] };
    my @out;
    my $put = sub {
        my ($file, %o) = @_;
        my $svg = chart(t0 => $t0, faults => \@ft, %o) or return;
        open my $fh, '>', "$dir/$file" or die "$dir/$file: $!";
        print $fh $svg;
        close $fh;
        push @out, $file;
    };
    my $sel = sub {
        my ($suffix, $div) = @_;
        return [ map { (my $n = $_) =~ s/ \S+$//; [$n, [ map { [$_->[0], $_->[1] / $div] } @{ $S->{$_} } ]] }
                 sort grep { / \Q$suffix\E$/ } keys %$S ];
    };
    $put->('rss.svg', title => 'largest httpd child RSS (MB), per server', lines => $sel->('child_rss_max', 1024));
    $put->('parent.svg', title => 'httpd parent RSS (MB), per server', lines => $sel->('parent_rss', 1024));
    $put->('fds.svg', title => 'open descriptors of the httpd child with the most, per server', lines => $sel->('child_fds_max', 1));
    $put->('redis.svg', title => 'Redis used_memory (MB, all nodes of the backend)', lines => $sel->('redis_mem', 1 << 20));
    $put->('load.svg', title => 'load average of the machine (1 min)', lines => $sel->('load1', 1));
    $put->('redis_clients.svg', title => 'Redis connected clients (all nodes of the backend)', lines => $sel->('redis_clients', 1));
    return @out;
}

1;
