# Requests in flight (RLaaSConcurrency, issue 28 part 2), on Redis (the
# main server) and on the local engine (rlaas_if_local): at most N of one
# identity at a time, every slot given back once httpd is done with the
# request (served, refused by the CGI, a client gone), a slot whose child
# is killed freed within the stated bound, another identity and a tenant
# unable to cross. t/conf/x-concurrency.conf.in, t/htdocs/inflight.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::IP;
use Time::HiRes ();
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my %HP;
sub hp { $HP{ $_[0] } //= Apache::TestRLaaS::hostport($_[0]) }

# wave(VHOST, PATH, N, USER): N clients forked and connected first, then
# released at one moment to send their request; each [code, Retry-After,
# body].
sub wave {
    my ($vhost, $path, $n, $user) = @_;
    my ($host, $port) = split /:/, hp($vhost);
    my $go = Time::HiRes::time() + 0.5 + 0.05 * $n;
    my @kids;
    for (1 .. $n) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Proto => 'tcp');
            my $d = $go - Time::HiRes::time();
            Time::HiRes::sleep($d) if $d > 0;
            my $all = '';
            if ($s) {
                print $s "GET $path HTTP/1.0\r\nHost: $host:$port\r\nX-User: $user\r\n"
                    . "Connection: close\r\n\r\n";
                local $/;
                $all = <$s> // '';
            }
            my ($code) = $all =~ m{^HTTP/1\.\d (\d+)};
            my ($ra) = $all =~ m{\r\nRetry-After: *(\S+)}i;
            my ($body) = $all =~ m{\r\n\r\n(.*)}s;
            $body //= '';
            $body =~ s/\s+/ /g;
            print $w join("\t", $code // 599, $ra // '-', $body);
            close $w;
            require POSIX;
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    my @out;
    for my $k (@kids) {
        my $fh = $k->[1];
        local $/;
        my $l = <$fh> // "599\t-\t";
        waitpid $k->[0], 0;
        push @out, [split /\t/, $l, 3];
    }
    return @out;
}

# The most requests the CGI saw running at one moment, from their [start,
# end] times.
sub max_overlap {
    my @ev;
    for (@_) {
        my ($t0, $t1) = $_->[2] =~ /^([\d.]+) ([\d.]+)/ or next;
        push @ev, [$t0, 1], [$t1, -1];
    }
    my ($cur, $max) = (0, 0);
    for (sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @ev) {
        $cur += $_->[1];
        $max = $cur if $cur > $max;
    }
    return $max;
}

sub one {
    my ($vhost, $path, $user) = @_;
    my $res = req($path, ($vhost eq 'default' ? () : (vhost => $vhost)),
        h => { 'X-User' => $user, Connection => 'close' });
    return $res;
}

# hold(VHOST, PATH, USER): a request sent on a connection of our own and
# left running once it is served (its status line read: the CGI sends its
# header at once); tried again while it is refused (a probe of ours may
# hold the slot a moment). Returns {sock, port, sport, t0}, or undef.
sub hold {
    my ($vhost, $path, $user) = @_;
    my ($host, $port) = split /:/, hp($vhost);
    for (1 .. 50) {
        my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Proto => 'tcp')
            or die "connect $host:$port: $!";
        my $t0 = Time::HiRes::time();
        print $s "GET $path HTTP/1.1\r\nHost: " . hp($vhost) . "\r\nX-User: $user\r\nConnection: close\r\n\r\n";
        my $line = <$s> // '';
        return { sock => $s, port => $s->sockport, sport => $port, t0 => $t0 }
            if $line =~ m{^HTTP/1\.\d 200};
        close $s;
        Time::HiRes::sleep(0.1);
    }
    return;
}

# The rest of a held request's response: 1 if it ran to its end.
sub finish_hold {
    my ($h) = @_;
    my $s = $h->{sock};
    local $/;
    my $all = <$s> // '';
    close $s;
    return $all =~ /\d{10}\.\d{6}.*\d{10}\.\d{6}/s ? 1 : 0;
}

# The httpd process that holds the server side of our connection from
# local port PORT (/proc/net/tcp*, then the processes' descriptors).
sub server_pid_of {
    my ($cport, $sport) = @_;
    my %inode;
    for my $f ('/proc/net/tcp', '/proc/net/tcp6') {
        open my $fh, '<', $f or next;
        while (<$fh>) {
            my @c = split ' ';
            next unless @c > 9 && $c[1] =~ /:([0-9A-F]{4})$/;
            my $lp = hex $1;
            next unless $c[2] =~ /:([0-9A-F]{4})$/;
            my $rp = hex $1;
            $inode{ $c[9] } = 1 if $lp == $sport && $rp == $cport && $c[9];
        }
    }
    return unless %inode;
    my $parent = httpd_pid();
    for my $dir (glob '/proc/[0-9]*') {
        my ($pid) = $dir =~ /(\d+)$/;
        next if $pid == $parent;
        opendir my $dh, "$dir/fd" or next;
        for my $fd (readdir $dh) {
            my $l = readlink "$dir/fd/$fd" or next;
            return $pid if $l =~ /^socket:\[(\d+)\]$/ && $inode{$1};
        }
    }
    return;
}

# released(M0): once no more slots are in flight than at M0 (metrics()),
# at most 5 s (a slot never given back: the checks after it say so)
sub released {
    my ($m0) = @_;
    wait_for(sub { mdelta($m0, metrics(), 'rlaas_concurrency_in_flight') <= 0 }, 5, 0.05);
}

# metrics() once the slots of requests already answered are given back
# (log_transaction runs after the response: the last requests of the
# blocks before may not have given theirs back yet, which would count as
# given back within the span measured). A slot a killed child held stays
# counted: the gauge is waited for to hold still, not to reach 0.
sub settled_metrics {
    my $m;
    wait_for(sub {
        my $before = metrics()->{rlaas_concurrency_in_flight};
        Time::HiRes::sleep(0.5);
        $m = metrics();
        $m->{rlaas_concurrency_in_flight} == $before;
    }, 10, 0);
    return $m;
}

my %ENGINES = (redis => 'default', local => 'rlaas_if_local');

for my $engine (qw(local redis)) {
    my $vh = $ENGINES{$engine};
    my $m0 = settled_metrics();
    my $served = 0;

    # 50 at once against 5: exactly 5 run at a time, the rest 429
    {
        my $u = uid("if-$engine");
        my @w = wave($vh, '/if/r5?s=8', 50, $u);
        my @ok = grep { $_->[0] == 200 } @w;
        my @no = grep { $_->[0] == 429 } @w;
        is(scalar(@ok) + scalar(@no), 50, "$engine: 50 slow requests, each 200 or 429")
            or diag(count_by(map { $_->[0] } @w));
        # the 50 are sent within moments (each client connected before),
        # each served one runs 8 s: the margin for a loaded machine to
        # decide all 50 while the first 5 run
        is(scalar(@ok), 5, "$engine: exactly 5 of 50 served (RLaaSConcurrency 5, 8 s each)")
            or diag(count_by(map { $_->[0] } @w));
        is(scalar(grep { $_->[2] =~ /^[\d.]+ [\d.]+ ?$/ } @ok), scalar(@ok), "$engine: each served one ran to its end");
        cmp_ok(max_overlap(@ok), '<=', 5, "$engine: the CGI never saw more than 5 running at one moment");
        is($no[0][1], '1', "$engine: a refusal says Retry-After: 1") if @no;
        $served += @ok;
        # log_transaction gives the slots back just after the response:
        # until the server holds none
        released($m0);
        my @w2 = wave($vh, '/if/r5?s=1', 5, $u);
        is(count_by(map { $_->[0] } @w2), '200 x5', "$engine: after the wave, every slot is free: 5 more served at once");
        $served += 5;
        released($m0);
    }

    # the metrics: every slot taken was given back
    {
        my $m1 = metrics();
        my $taken = mdelta($m0, $m1, 'rlaas_concurrency_taken_total');
        is($taken, $served, "$engine: metrics: a slot taken per request served ($served)");
        is(mdelta($m0, $m1, 'rlaas_concurrency_released_total'), $taken, "$engine: metrics: as many given back");
        is(mdelta($m0, $m1, 'rlaas_concurrency_refused_total'), 55 - $served, "$engine: metrics: the others refused for want of a slot");
        is(mdelta($m0, $m1, 'rlaas_concurrency_in_flight'), 0, "$engine: metrics: none left in flight");
    }

    # a second identity is not held back by the first's full slots
    {
        my ($u, $v) = (uid("if-$engine-u"), uid("if-$engine-v"));
        my $h = hold($vh, '/if/r1?s=5', $u);
        ok(wait_for(sub { one($vh, '/if/r1?s=0', $u)->code == 429 }, 5, 0.1),
            "$engine: the slot of $u is held");
        my $m = metrics();
        cmp_ok($m->{rlaas_concurrency_in_flight}, '>=', 1, "$engine: metrics: in flight while it runs");
        is(one($vh, '/if/r1?s=0', $v)->code, 200, "$engine: another identity is served meanwhile");
        # a tenant's limit named like the operator's counts apart: served,
        # and the slot it gives back is its own
        is(one($vh, '/iften/slow.cgi?s=0', $u)->code, 200,
            "$engine: a tenant's limit of the same zone and identity is its own");
        is(one($vh, '/if/r1?s=0', $u)->code, 429,
            "$engine: after the tenant's request, the operator's slot is still held");
        if ($engine eq 'redis') {
            is(redis_cmd('ZCARD', ukey('if-r1', $u) . ':conc'), 1, 'redis: the operator\'s record holds the one slot');
        }
        ok(finish_hold($h), "$engine: the holder ran to its end");
        ok(wait_for(sub { one($vh, '/if/r1?s=0', $u)->code == 200 }, 2, 0.1),
            "$engine: its slot is given back");
    }

    # a request that ends in an error, or whose client goes away, gives
    # its slot back too (RLaaSConcurrencyTimeout is 5m there)
    {
        my $u = uid("if-$engine-err");
        is(one($vh, '/if/r503?s=0&bad=1', $u)->code, 500, "$engine: the CGI fails: 500");
        # given back at log_transaction, after the 500 was written (on a
        # new connection the next request may come first): waited for; a
        # slot kept holds for 5 minutes
        ok(wait_for(sub { one($vh, '/if/r503?s=0', $u)->code == 200 }, 2, 0.05),
            "$engine: the failed request gave its slot back");
        my $h = hold($vh, '/if/r503?s=2', $u);
        ok(wait_for(sub { one($vh, '/if/r503?s=0', $u)->code == 503 }, 5, 0.1),
            "$engine: the slot is held: RLaaSConcurrencyStatus 503");
        my $res = one($vh, '/if/r503?s=0', $u);
        is($res->header('Retry-After'), '1', "$engine: the 503 says Retry-After: 1");
        close $h->{sock};    # the client goes away
        my $t = Time::HiRes::time();
        ok(wait_for(sub { one($vh, '/if/r503?s=0', $u)->code == 200 }, 6, 0.2),
            "$engine: a client gone: its slot is given back once httpd is done");
        cmp_ok(Time::HiRes::time() - $t, '<', 5, "$engine: ... when the request ends, not after the timeout");
    }

    # RLaaSPolicy NAME concurrency=N, applied by a section; per site
    {
        my ($u, $v) = (uid("if-$engine-pu"), uid("if-$engine-pv"));
        my @h = map { hold($vh, '/if/pol?s=4', $u) } 1 .. 2;
        ok($h[0] && $h[1], "$engine: policy concurrency=2: two held");
        is(one($vh, '/if/pol?s=0', $u)->code, 429, "$engine: policy concurrency=2: the third refused");
        is(one($vh, '/if/pol?s=0', $v)->code, 200, "$engine: policy concurrency=2: another identity served");
        my $s = hold($vh, '/if/site?s=4', $u);
        ok($s, "$engine: per site: one request of the site held");
        is(one($vh, '/if/site?s=0', $v)->code, 429, "$engine: per site: any client of the same site refused");
        finish_hold($_) for grep { defined } @h, $s;
    }

    # a child killed mid-request: the local engine frees the slot once its
    # holder is gone; Redis after RLaaSConcurrencyTimeout (3 s here)
    {
        my $u = uid("if-$engine-kill");
        my $h = hold($vh, '/if/r1?s=8', $u);
        ok(wait_for(sub { one($vh, '/if/r1?s=0', $u)->code == 429 }, 5, 0.1),
            "$engine: the slot of the request to be killed is held");
        my $pid = server_pid_of($h->{port}, $h->{sport});
        ok($pid, "$engine: the child serving it found") or diag('no process holds the connection');
        ok(kill('KILL', $pid), "$engine: child $pid killed") if $pid;
        my $tk = Time::HiRes::time();
        if ($engine eq 'redis') {
            is(one($vh, '/if/r1?s=0', $u)->code, 429, 'redis: right after the kill the slot is still held (no release ran)');
        }
        my $freed = wait_for(sub { one($vh, '/if/r1?s=0', $u)->code == 200 }, 8, 0.1);
        my $t = Time::HiRes::time();
        ok($freed, "$engine: the dead child's slot is freed");
        if ($engine eq 'local') {
            cmp_ok($t - $tk, '<', 2, 'local: at once (its holder is gone), not after the timeout');
        }
        else {
            cmp_ok($t - $h->{t0}, '>=', 2.9, 'redis: not before RLaaSConcurrencyTimeout (3 s)');
            cmp_ok($t - $h->{t0}, '<', 5, 'redis: within RLaaSConcurrencyTimeout (3 s) and a margin');
        }
        close $h->{sock};
    }
}

# configuration errors name the directive and the value
config_refused("<Location /x>\nRLaaSConcurrency $_\n</Location>\n",
    qr/RLaaSConcurrency: invalid value '\Q$_\E': expected an integer from 1 to 500/,
    "RLaaSConcurrency $_") for qw(0 501 -1 abc 5x);
config_refused("<Location /x>\nRLaaSConcurrencyTimeout $_\n</Location>\n",
    qr/RLaaSConcurrencyTimeout: invalid value '\Q$_\E'/, "RLaaSConcurrencyTimeout $_")
    for qw(0 forever 31d);
config_refused("<Location /x>\nRLaaSConcurrencyStatus $_\n</Location>\n",
    qr/RLaaSConcurrencyStatus: invalid value '\Q$_\E': expected 429 or 503/,
    "RLaaSConcurrencyStatus $_") for qw(500 404 busy);
config_refused("RLaaSPolicy p concurrency=$_\n",
    qr/RLaaSPolicy p: invalid value 'concurrency=\Q$_\E': expected an integer from 1 to 500/,
    "RLaaSPolicy p concurrency=$_") for qw(0 501 x);
config_refused("RLaaSPolicy p concurrency=3 $_\n",
    qr/RLaaSPolicy p: invalid (?:option|value) '\Q$_\E'/, "RLaaSPolicy p concurrency=3 $_")
    for qw(cost=2 strategy=gcra timeout=0 timeout=31d);
config_accepted("RLaaSPolicy php concurrency=10 timeout=10m key=\"expr=%{SERVER_NAME}\"\nRLaaSEnforce php\n",
    'RLaaSPolicy php concurrency=10 timeout=10m key="expr=%{SERVER_NAME}", enforced');
config_accepted("<Location /x>\nRLaaSConcurrency 500\nRLaaSConcurrencyTimeout 30d\n"
    . "RLaaSConcurrencyStatus 503\n</Location>\n<Location /x/y>\nRLaaSConcurrency off\n</Location>\n",
    'RLaaSConcurrency 500, off, a timeout of 30d, status 503');

done_testing();
