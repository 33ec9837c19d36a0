package Soak::Load;
# The soak's traffic: one process runs many streams (an identity sending
# to a section) in one select() loop over raw HTTP/1.1 keep-alive
# connections, open loop (a stream's next request does not wait for the
# previous answer) except for sticky streams; HTTP/2 (h2c) bursts go out
# through curl. Every request is one line of the worker's log:
#
#   t_sent t_answered backend server section identity code rlaas_status
#   retry_after reused proto path note seq
#
# seq (X-Soak-Seq, in the servers' access logs too) joins a request with
# the time httpd itself took (%D).
#
# (tab-separated; identity printable: bytes outside 0x21-0x7e as \xHH).
use strict;
use warnings;

use Errno qw(EAGAIN EINTR EINPROGRESS);
use IO::Select ();
use IO::Socket::INET ();
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(time sleep);
use POSIX ();

use Soak::Model ();

our $HANG = 15;          # seconds: a request not answered by then is a hang
our $IDLE_CLOSE = 1.0;   # close a keep-alive connection idle this long
                         # (httpd's KeepAliveTimeout is 5 s: never a race)

sub printable {
    my ($v) = @_;
    (my $p = $v) =~ s/([^\x21-\x7e])/sprintf '\\x%02x', ord $1/ge;
    $p =~ s/\\(?!x)/\\x5c/g;
    return length $p ? $p : '(empty)';
}

sub _exp_gap { my ($rate) = @_; -log(1 - rand()) / $rate }

# run(streams => [...], servers => [{name, port, h2}], hosts => {vhost =>
# Host}, backend, end, out, seed, h2 => 0|1)
sub run {
    my (%o) = @_;
    srand($o{seed});
    $SIG{PIPE} = 'IGNORE';
    open my $log, '>>', $o{out} or die "$o{out}: $!";
    my $self = bless { %o, log => $log, conns => [], sel => IO::Select->new,
                       by_fd => {}, lines => [], nreq => 0 }, __PACKAGE__;
    my $now = time;
    for my $st (@{ $o{streams} }) {
        $st->{next} = $now + rand($st->{every} // 1 / ($st->{rate} || 1));
        $st->{n} = 0;
        $st->{server} = $o{servers}[ int rand @{ $o{servers} } ] if $st->{sticky};
    }
    my $last_flush = $now;
    while (1) {
        $now = time;
        last if $now >= $o{end} && !$self->_inflight;
        if ($now < $o{end}) {
            for my $st (@{ $o{streams} }) {
                next if $st->{next} > $now;
                next if $st->{sticky} && $st->{busy};
                $self->_fire($st);
            }
        }
        $self->_poll(0.01);
        $self->_timeouts;
        if ($now - $last_flush > 1) { $self->_flush; $last_flush = $now }
    }
    $self->_flush;
    close $log;
}

sub _inflight { my $s = shift; scalar(grep { $_->{req} } @{ $s->{conns} }) + scalar(keys %{ $s->{curl} || {} }) }

sub _fire {
    my ($self, $st) = @_;
    my $now = time;
    if ($st->{h2}) {
        $self->_curl_burst($st);
        $st->{next} = $now + $st->{every};
        return;
    }
    my $n = $st->{burst} || 1;
    for (1 .. $n) {
        my $id = $st->{churn} ? sprintf('churn-%d-%d', $self->{seed}, $st->{n}++) : $st->{id};
        my $sec = Soak::Model::section($st->{section});
        my $bad = defined $st->{bad} && rand() < $st->{bad};
        my $path = $st->{path} // ($sec->{path} . ($bad ? 'nope.txt' : 'ok.txt'));
        my $srv = $st->{server} || $self->{servers}[ int rand @{ $self->{servers} } ];
        $self->_send($st, $srv, $sec ? $sec->{vhost} : 'main', $path, $id);
    }
    if ($st->{sticky}) { $st->{busy} = 1 }
    else { $st->{next} = $now + ($st->{burst} ? $st->{every} : _exp_gap($st->{rate})) }
}

sub _conn_for {
    my ($self, $srv, $st) = @_;
    my $now = time;
    if ($st->{sticky} && $st->{conn} && !$st->{conn}{dead}) {
        return ($st->{conn}, 1) if $now - $st->{conn}{last} <= $IDLE_CLOSE;
        $self->_close($st->{conn});
    }
    for my $c (@{ $self->{conns} }) {
        next if $c->{req} || $c->{dead} || $c->{sticky} || $c->{srv} != $srv;
        if ($now - $c->{last} > $IDLE_CLOSE) { $self->_close($c); next }
        return ($c, 1);
    }
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $srv->{port},
                                     Proto => 'tcp', Timeout => 3);
    return (undef, 0, "connect: $!") unless $sock;
    setsockopt($sock, IPPROTO_TCP, TCP_NODELAY, 1);
    binmode $sock;
    $sock->blocking(0);
    my $c = { sock => $sock, srv => $srv, buf => '', last => $now, sticky => $st->{sticky} };
    push @{ $self->{conns} }, $c;
    $self->{by_fd}{ fileno $sock } = $c;
    $self->{sel}->add($sock);
    $st->{conn} = $c if $st->{sticky};
    return ($c, 0);
}

sub _send {
    my ($self, $st, $srv, $vhost, $path, $id) = @_;
    my $t0 = time;
    my $host = $self->{hosts}{$vhost};
    my ($c, $reused, $err) = $self->_conn_for($srv, $st);
    my $req = { st => $st, srv => $srv, t0 => $t0, id => $id, path => $path,
                section => $st->{section}, reused => $reused,
                seq => sprintf('%d-%d', $self->{seed}, ++$self->{nreq}) };
    if (!$c) {
        $self->_record($req, time, 599, undef, undef, $err);
        $st->{busy} = 0, $st->{next} = time + 0.2 if $st->{sticky};
        return;
    }
    my $h = "GET $path HTTP/1.1\r\nHost: $host\r\nUser-Agent: rlaas-soak\r\nX-Soak-Seq: $req->{seq}\r\n";
    if (defined $id) {
        $h .= "X-Soak-User: $id\r\nX-API-Key: $id\r\n";
    }
    $h .= "Accept: application/json\r\n" if $st->{json};
    $h .= "\r\n";
    $c->{req} = $req;
    $c->{buf} = '';
    my $off = 0;
    while ($off < length $h) {
        my $n = syswrite $c->{sock}, $h, length($h) - $off, $off;
        if (!defined $n) {
            next if $! == EINTR;
            if ($! == EAGAIN) { sleep 0.001; next }
            return $self->_fail($c, "write: $!");
        }
        $off += $n;
    }
}

sub _poll {
    my ($self, $timeout) = @_;
    my @fh = $self->{sel}->can_read($timeout);
    for my $fh (@fh) {
        if (my $cu = $self->{curl}{ fileno $fh }) { $self->_curl_read($cu); next }
        my $c = $self->{by_fd}{ fileno $fh } or next;
        my $n = sysread $c->{sock}, $c->{buf}, 65536, length $c->{buf};
        if (!defined $n) {
            next if $! == EAGAIN || $! == EINTR;
            $self->_fail($c, "read: $!");
            next;
        }
        if ($n == 0) {
            # on a connection used before, with nothing of the answer
            # read: the keep-alive race (the server closed it as the
            # request went out; a client would send it again)
            if ($c->{req}) {
                $self->_parse($c, 1) or $self->_fail($c, length $c->{buf} || !$c->{req}{reused}
                    ? 'closed before the response' : 'keep-alive connection closed');
            }
            else { $self->_close($c) }
            next;
        }
        if ($c->{req}) { $self->_parse($c, 0) }
        else { $self->_close($c) }    # a 408 or the like on an idle one
    }
}

# A whole response in the buffer: record it. Returns 1 when one was done.
sub _parse {
    my ($self, $c, $eof) = @_;
    my $i = index $c->{buf}, "\r\n\r\n";
    return 0 if $i < 0;
    my $head = substr $c->{buf}, 0, $i;
    my ($code) = $head =~ m{^HTTP/\d\.\d (\d{3})};
    my %h;
    for (split /\r\n/, $head) { $h{ lc $1 } = $2 if /^([^:]+):\s*(.*)$/ }
    my $body = substr $c->{buf}, $i + 4;
    my $done;
    if (($h{'transfer-encoding'} // '') =~ /chunked/i) {
        $done = $body =~ /(?:^|\r\n)0\r\n\r\n\z/;
    } elsif (defined $h{'content-length'}) {
        $done = length($body) >= $h{'content-length'};
    } else {
        $done = $eof;
    }
    return 0 unless $done;
    my $req = $c->{req};
    $self->_record($req, time, $code // 0, $h{'x-rlaas-status'}, $h{'retry-after'}, '');
    $c->{req} = undef;
    $c->{last} = time;
    $self->_close($c) if $eof || ($h{connection} // '') =~ /close/i;
    $self->_stream_done($req->{st});
    return 1;
}

sub _stream_done {
    my ($self, $st) = @_;
    return unless $st->{sticky};
    $st->{busy} = 0;
    $st->{next} = time + _exp_gap($st->{rate});
}

sub _fail {
    my ($self, $c, $why) = @_;
    my $req = $c->{req};
    $self->_close($c);
    return unless $req;
    $self->_record($req, time, 599, undef, undef, $why);
    $self->_stream_done($req->{st});
}

sub _close {
    my ($self, $c) = @_;
    $c->{dead} = 1;
    if ($c->{sock}) {
        $self->{sel}->remove($c->{sock});
        delete $self->{by_fd}{ fileno $c->{sock} };
        close $c->{sock};
        delete $c->{sock};
    }
    @{ $self->{conns} } = grep { $_ != $c } @{ $self->{conns} };
}

sub _timeouts {
    my ($self) = @_;
    my $now = time;
    for my $c (@{ $self->{conns} }) {
        next unless $c->{req} && $now - $c->{req}{t0} > $HANG;
        my $req = $c->{req};
        $c->{req} = undef;
        $self->_close($c);
        $self->_record($req, $now, 0, undef, undef, "no answer in ${HANG}s");
        $self->_stream_done($req->{st});
    }
    for my $fd (keys %{ $self->{curl} || {} }) {
        my $cu = $self->{curl}{$fd};
        next unless $now - $cu->{t0} > $HANG + 5;
        kill 'KILL', $cu->{pid};
    }
}

sub _record {
    my ($self, $req, $t1, $code, $status, $ra, $note) = @_;
    $note //= '';
    $note =~ s/[\t\n]/ /g;
    push @{ $self->{lines} }, join("\t",
        sprintf('%.6f', $req->{t0}), sprintf('%.6f', $t1), $self->{backend},
        $req->{srv}{name}, $req->{section}, printable($req->{id} // '-'),
        $code, $status // '-', $ra // '-', $req->{reused} ? 1 : 0,
        $req->{proto} // 'h1', $req->{path}, $note, $req->{seq} // '-') . "\n";
}

sub _flush {
    my ($self) = @_;
    return unless @{ $self->{lines} };
    print { $self->{log} } @{ $self->{lines} };
    $self->{log}->flush;
    @{ $self->{lines} } = ();
}

# ------------------------------------------------------------ HTTP/2

# N requests of one identity multiplexed on one h2c connection (curl
# --parallel with prior knowledge), to the servers that speak h2c. Sent
# at the spawn time, answered by the time curl's output is read: the
# bounds the checker needs.
sub _curl_burst {
    my ($self, $st) = @_;
    my @srv = grep { $_->{h2} } @{ $self->{servers} } or return;
    my $srv = $srv[ int rand @srv ];
    my $id = $st->{ids} ? $st->{ids}[ $st->{n}++ % @{ $st->{ids} } ] : $st->{id};
    my $sec = Soak::Model::section($st->{section});
    my $url = "http://127.0.0.1:$srv->{port}$sec->{path}ok.txt";
    my $n = $st->{burst};
    my $seq = sprintf '%d-%d', $self->{seed}, ++$self->{nreq};
    # --parallel-immediate: a connection of its own per request (curl 7.88
    # multiplexing several requests on one prior-knowledge connection
    # fails with "Error in the HTTP2 framing layer" against any httpd,
    # with or without mod_rlaas)
    my @cmd = ('curl', '-s', '--http2-prior-knowledge', '--parallel', '--parallel-immediate',
               '--parallel-max', $n,
               '--max-time', $HANG, '-H', "Host: $self->{hosts}{main}", '-H', "X-Soak-User: $id",
               '-H', "X-Soak-Seq: $seq",
               '-w', '%{http_code} %header{x-rlaas-status} %header{retry-after} %{http_version}\n',
               (map { ('-o', '/dev/null', $url) } 1 .. $n));
    my $t0 = time;
    my $pid = open(my $fh, '-|');
    return unless defined $pid;
    if (!$pid) {
        open STDERR, '>', '/dev/null';
        { exec @cmd }
        POSIX::_exit(127);
    }
    $self->{curl}{ fileno $fh } = { fh => $fh, pid => $pid, t0 => $t0, st => $st, srv => $srv, seq => $seq,
                                    id => $id, n => $n, buf => '', path => "$sec->{path}ok.txt" };
    $self->{sel}->add($fh);
}

sub _curl_read {
    my ($self, $cu) = @_;
    my $n = sysread $cu->{fh}, $cu->{buf}, 65536, length $cu->{buf};
    return if !defined $n && ($! == EAGAIN || $! == EINTR);
    return if $n;
    # EOF: curl is done
    $self->{sel}->remove($cu->{fh});
    delete $self->{curl}{ fileno $cu->{fh} };
    close $cu->{fh};
    my $t1 = time;
    my @l = grep { /^\d{3} / } split /\n/, $cu->{buf};
    for my $l (@l) {
        my ($code, $status, $ra, $ver) = split / /, $l;
        my $req = { st => $cu->{st}, srv => $cu->{srv}, t0 => $cu->{t0}, id => $cu->{id}, seq => $cu->{seq},
                    path => $cu->{path}, section => $cu->{st}{section}, reused => 1,
                    proto => ($ver // '') eq '2' ? 'h2' : "h$ver" };
        $code = 599 if !$code || $code eq '000';
        $self->_record($req, $t1, $code, (defined $status && length $status ? $status : undef),
                       (defined $ra && length $ra ? $ra : undef), $code == 599 ? 'curl: no answer' : '');
    }
    # requests curl never reported (killed): transport errors
    for (scalar(@l) + 1 .. $cu->{n}) {
        $self->_record({ st => $cu->{st}, srv => $cu->{srv}, t0 => $cu->{t0}, id => $cu->{id},
                         path => $cu->{path}, section => $cu->{st}{section}, proto => 'h2' },
                       $t1, 599, undef, undef, 'curl: no report');
    }
}

1;
