#!/usr/bin/perl
# tools/soak/soak.pl - `make soak`: mod_rlaas under mixed traffic and random
# faults for a long time, every backend, invariants checked from a log of
# every request and every fault.
#
#   make soak [DURATION=10m] [SEED=N] [BACKENDS=local,redis,...] [SOAK_DIR=dir]
#   perl tools/soak/soak.pl --analyze SOAK_DIR     (the report again)
#
# For each backend (local, redis, lease, sentinel, cluster, tls) it starts
# the backend's Redis topology and two httpd servers sharing it (event and
# prefork; the event one with the clock shim of t/tools/shim.c), each with
# the configuration of tools/soak/Soak/Model.pm; drives the traffic of
# Soak::Load; runs a fault schedule drawn from SEED (printed at the start
# and kept in SOAK_DIR/schedule.txt: the same SEED, DURATION and BACKENDS
# give the same faults at the same times); samples memory and descriptors;
# then checks the invariants (Soak::Check) and writes SOAK_DIR/report.md,
# report.json and the SVG curves (Soak::Report). Exit status 0 when every
# invariant holds, 1 when one does not, 2 when the run could not be made.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin";
use lib "$FindBin::Bin/../../perl/lib";
use lib "$FindBin::Bin/../../t/lib";

use Cwd qw(abs_path);
use Fcntl qw(:flock O_WRONLY O_APPEND O_CREAT);
use File::Path qw(make_path remove_tree);
use Getopt::Long qw(GetOptions);
use IO::Socket::INET ();
use JSON::PP ();
use POSIX qw(WNOHANG);
use Time::HiRes qw(time sleep);

use Apache::TestRLaaS::Redis ();
use RLaaS::Relay ();
use Soak::Model ();
use Soak::Load ();
use Soak::Schedule ();
use Soak::Check ();
use Soak::Report ();

my $TOP = abs_path("$FindBin::Bin/../..");
$| = 1;

# ------------------------------------------------------------ options

my %opt = (
    duration => $ENV{DURATION} || '10m',
    seed     => $ENV{SEED},
    backends => $ENV{BACKENDS} || join(',', @Soak::Model::BACKENDS),
    dir      => $ENV{SOAK_DIR} || "$TOP/build/soak",
    rate     => $ENV{SOAK_RATE},
    module   => $ENV{RLAAS_MODULE} || "$TOP/.libs/mod_rlaas.so",
);
GetOptions(\%opt, 'duration=s', 'seed=i', 'backends=s', 'dir=s', 'rate=f',
           'module=s', 'analyze=s') or die "usage: see the head of $0\n";

if ($opt{analyze}) {
    my $res = Soak::Check::analyze($opt{analyze});
    Soak::Report::write($opt{analyze}, $res);
    print Soak::Report::summary($res);
    exit($res->{ok} ? 0 : 1);
}

sub seconds {
    my ($d) = @_;
    $d =~ /^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$/ or die "DURATION: '$d': expected a number with s, m or h (90s, 10m, 1h)\n";
    return $1 * { s => 1, m => 60, h => 3600 }->{ $2 // 's' };
}
my $DURATION = seconds($opt{duration});
die "DURATION: at least 60s\n" if $DURATION < 60;
my $SEED = defined $opt{seed} && length $opt{seed} ? $opt{seed} : int(time) % 1000000;
my @BACKENDS = grep { length } split /[\s,]+/, $opt{backends};
for my $b (@BACKENDS) {
    die "BACKENDS: unknown '$b' (known: @Soak::Model::BACKENDS)\n"
        unless grep { $_ eq $b } @Soak::Model::BACKENDS;
}
die "mod_rlaas is not built: $opt{module} (make)\n" unless -e $opt{module};
# The traffic of Soak::Model is sized for two backends on a 2-CPU machine:
# with more, each gets a share (SOAK_RATE overrides)
$opt{rate} ||= @BACKENDS > 2 ? sprintf('%.2f', 2 / @BACKENDS) : 1;

# one soak at a time on this machine
open my $LOCK, '>', '/tmp/rlaas-soak.lock' or die "/tmp/rlaas-soak.lock: $!\n";
flock($LOCK, LOCK_EX | LOCK_NB) or die "another soak is running (/tmp/rlaas-soak.lock)\n";

my $DIR = $opt{dir};
if (-e $DIR) {
    die "SOAK_DIR $DIR exists and is not a soak's directory (no .soak in it)\n"
        unless -e "$DIR/.soak" || !glob("$DIR/*");
    remove_tree($DIR);
}
make_path($DIR);
$DIR = abs_path($DIR);
chmod 0755, $DIR;
open my $mark, '>', "$DIR/.soak" or die;
close $mark;

# ------------------------------------------------------------ the schedule

# Timings of the run, relative to its start (after set-up).
my $WARM = $DURATION >= 600 ? 60 : 15;            # no fault before
my $QUIET = $DURATION >= 600 ? 90 : 30;           # no fault in the last
my %SCHED = Soak::Schedule::schedule(seed => $SEED, duration => $DURATION,
                                  backends => \@BACKENDS, warm => $WARM, quiet => $QUIET);

sub print_schedule {
    my ($fh) = @_;
    printf $fh "# mod_rlaas soak: seed %s, duration %ss, backends %s\n", $SEED, $DURATION, join(',', @BACKENDS);
    printf $fh "# replay: make soak DURATION=%s SEED=%s BACKENDS=%s\n", $opt{duration}, $SEED, join(',', @BACKENDS);
    for my $b (@BACKENDS) {
        for my $f (@{ $SCHED{$b} }) {
            printf $fh "%8.1f  %-8s %-20s %-8s %5.1fs  %s\n", $f->{at}, $b, $f->{kind},
                $f->{target}, $f->{dur}, join(' ', map { "$_=$f->{p}{$_}" } sort keys %{ $f->{p} });
        }
    }
}
print_schedule(\*STDOUT);
open my $sf, '>', "$DIR/schedule.txt" or die;
print_schedule($sf);
close $sf;

# ------------------------------------------------------------ clean-up

my (@CLEAN, $MAIN_PID);
$MAIN_PID = $$;
sub cleanup {
    return unless defined $MAIN_PID && $$ == $MAIN_PID;
    while (my $c = pop @CLEAN) { eval { $c->() } }
}
$SIG{INT} = $SIG{TERM} = sub { print "\nsoak: interrupted, cleaning up\n"; cleanup(); exit 2 };
END { local $?; cleanup() }

# ------------------------------------------------------------ set-up

my $ROOT = $> == 0;
my $RUNUSER = $ROOT ? ((getpwnam('rlaas-test'))[0] ? 'rlaas-test' : 'www-data') : undef;
my $HTTPD = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
chomp(my $LIBEXEC = `apxs -q LIBEXECDIR 2>/dev/null` || '');
$LIBEXEC ||= '/usr/lib/apache2/modules';
my $H2 = -e "$LIBEXEC/mod_http2.so";

my $SHIM = "$DIR/shim.so";
system($ENV{CC} || 'cc', '-shared', '-fPIC', '-o', $SHIM, "$TOP/t/tools/shim.c", '-ldl') == 0
    or die "cannot build t/tools/shim.c\n";

sub spew { my ($f, $c, $mode) = @_; open my $fh, '>', $f or die "$f: $!"; print $fh $c; close $fh; chmod($mode // 0644, $f) }
# the shim's clock file, replaced whole (a reader never finds it empty)
sub clock { my ($f, $c) = @_; spew("$f.new", $c); rename "$f.new", $f or die "$f: $!" }

# the documents: www/<vhost>/<section path>/ok.txt, and the tenants' .htaccess
for my $s (Soak::Model::sections()) {
    my $d = "$DIR/www/$s->{vhost}$s->{path}";
    make_path($d, { mode => 0755 });
    spew("$d/ok.txt", "ok\n");
    spew("$d/.htaccess", $s->{htaccess}) if $s->{htaccess};
}
system('chmod', '-R', 'a+rX', "$DIR/www");

my $TLS_DIR;
if (grep { $_ eq 'tls' } @BACKENDS) {
    $TLS_DIR = "$DIR/tls";
    make_path($TLS_DIR);
    Apache::TestRLaaS::Redis::make_tls_certs($TLS_DIR);
}

my $free = \&Apache::TestRLaaS::Redis::free_port;
my $DEBUG_ARGS = (`redis-server --version` =~ /\bv=(\d+)\./ && $1 >= 7) ? ['--enable-debug-command', 'yes'] : [];

sub redis_node {
    my ($dir, %o) = @_;
    make_path($dir);
    my $r = Apache::TestRLaaS::Redis->start(dir => $dir, timeout => 2, %o,
        extra => [@$DEBUG_ARGS, @{ $o{extra} || [] }]);
    push @CLEAN, sub { kill_pidfile("$dir/redis.pid") };
    return $r;
}

sub kill_pidfile {
    my ($f) = @_;
    open my $fh, '<', $f or return;
    my $p = <$fh>;
    return unless $p && $p =~ /(\d+)/;
    kill 'CONT', $1;
    kill 'KILL', $1;
}

# ---- the backends' Redis topologies
my %B;    # backend => { name, directives, nodes => [...], relay, ... }
for my $b (@BACKENDS) {
    my $bd = "$DIR/$b";
    make_path($bd);
    my %be = (name => $b, dir => $bd, nodes => []);
    if ($b eq 'local') {
        $be{conf} = "RLaaSBackend local\nRLaaSLocalSize 16M\n";
    } elsif ($b eq 'redis' || $b eq 'lease' || $b eq 'tls') {
        my @tls;
        if ($b eq 'tls') {
            @tls = (extra => ['--tls-port', my $tp = $free->(), '--tls-cert-file', "$TLS_DIR/server.crt",
                              '--tls-key-file', "$TLS_DIR/server.key", '--tls-ca-cert-file', "$TLS_DIR/ca.crt"]);
            $be{tls_port} = $tp;
        }
        my $r = redis_node("$bd/redis", @tls);
        push @{ $be{nodes} }, $r;
        my $rp = $free->();
        $be{relay} = RLaaS::Relay->start(port => $rp, target => $be{tls_port} || $r->port);
        push @CLEAN, do { my $rl = $be{relay}; sub { $rl->stop } };
        $be{conf} = "RLaaSRedis 127.0.0.1:$rp\n";
        $be{conf} .= "RLaaSRedisTLS on\nRLaaSRedisTLSCA $TLS_DIR/ca.crt\nRLaaSRedisTLSCert $TLS_DIR/client.crt\n"
                   . "RLaaSRedisTLSKey $TLS_DIR/client.key\nRLaaSRedisTLSServerName localhost\n" if $b eq 'tls';
    } elsif ($b eq 'sentinel') {
        my $m = redis_node("$bd/m");
        my $r = redis_node("$bd/r");
        $r->cmd('REPLICAOF', '127.0.0.1', $m->port);
        push @{ $be{nodes} }, $m, $r;
        my @sp = map { $free->() } 1 .. 3;
        $be{sentinels} = \@sp;
        my $bin = -x '/usr/bin/redis-sentinel' ? '/usr/bin/redis-sentinel' : 'redis-sentinel';
        for my $i (0 .. 2) {
            my $sd = "$bd/s$i";
            make_path($sd);
            spew("$sd/sentinel.conf", <<"EOC");
port $sp[$i]
bind 127.0.0.1
daemonize no
dir $sd
pidfile $sd/sentinel.pid
logfile $sd/sentinel.log
sentinel monitor soakmaster 127.0.0.1 @{[ $m->port ]} 2
sentinel down-after-milliseconds soakmaster 1000
sentinel failover-timeout soakmaster 4000
sentinel parallel-syncs soakmaster 1
EOC
            my $pid = fork // die "fork: $!";
            if (!$pid) {
                POSIX::setsid();
                open STDOUT, '>', '/dev/null';
                open STDERR, '>', '/dev/null';
                { exec $bin, "$sd/sentinel.conf" }
                POSIX::_exit(127);
            }
            push @CLEAN, sub { kill 'KILL', $pid; waitpid $pid, 0 };
            push @{ $be{sentinel_pids} }, $pid;
        }
        $be{conf} = "RLaaSRedisSentinel soakmaster " . join(' ', map { "127.0.0.1:$_" } @sp) . "\n";
        my $t0 = time;
        until (sentinels_ready(\%be)) {
            die "the sentinels did not find each other in 30s\n" if time - $t0 > 30;
            sleep 0.3;
        }
        printf "sentinel: three sentinels ready (%.1fs)\n", time - $t0;
    } elsif ($b eq 'cluster') {
        my @cp = map { $free->() } 1 .. 6;
        my @n = map {
            my $p = $_;
            redis_node("$bd/n$p", port => $p, extra => ['--cluster-enabled', 'yes',
                '--cluster-port', $free->(), '--cluster-node-timeout', 1500,
                '--repl-diskless-sync-delay', 0, '--cluster-config-file', "nodes-$p.conf"]);
        } @cp;
        my $out = `redis-cli --cluster create @{[ map { "127.0.0.1:$_" } @cp ]} --cluster-replicas 1 --cluster-yes 2>&1`;
        die "redis-cli --cluster create failed:\n$out" if $?;
        push @{ $be{nodes} }, @n;
        my $t0 = time;
        until (!grep { (eval { $_->cmd('CLUSTER', 'INFO') } // '') !~ /cluster_state:ok/ } @n) {
            die "the cluster is not ok after 30s\n" if time - $t0 > 30;
            sleep 0.2;
        }
        printf "cluster: three masters with a replica each (%.1fs)\n", time - $t0;
        $be{conf} = "RLaaSRedisCluster " . join(' ', map { "127.0.0.1:$_" } @cp[0 .. 2]) . "\n";
    }
    $be{conf} .= "RLaaSRedisTimeout 1s\nRLaaSLocalDivisor 2\n" unless $b eq 'local';
    $B{$b} = \%be;
}

sub sentinels_ready {
    my ($be) = @_;
    for my $p (@{ $be->{sentinels} }) {
        my $s = Apache::TestRLaaS::Redis->attach(port => $p, timeout => 2);
        my $ok = eval {
            my $sen = $s->cmd('SENTINEL', 'sentinels', 'soakmaster');
            my $rep = $s->cmd('SENTINEL', 'replicas', 'soakmaster');
            ref $sen eq 'ARRAY' && @$sen == 2 && ref $rep eq 'ARRAY' && @$rep >= 1;
        };
        return 0 unless $ok;
    }
    return 1;
}

# Redis stands for a server of its own: as root, its processes (and the
# relays that stand for the network) get a higher priority than the
# machine's other work (nice -5), so that a loaded machine starves httpd
# before the backend. The probes below measure what is left.
sub prioritize {
    return unless $ROOT;
    for my $be (values %B) {
        my @p = map { node_pid($_) } @{ $be->{nodes} };
        push @p, $be->{relay}{pid} if $be->{relay};
        push @p, @{ $be->{sentinel_pids} || [] };
        setpriority(0, $_, -5) for grep { $_ } @p;
    }
}
prioritize();

# ---- the httpd servers: event (with the clock shim) and prefork
my @SERVERS;
for my $b (@BACKENDS) {
    for my $mpm (qw(event prefork)) {
        my $name = "$b-$mpm";
        my $sd = "$DIR/$b/httpd-$mpm";
        make_path($sd, { mode => 0755 });
        my $srv = { name => $name, backend => $b, mpm => $mpm, dir => $sd, port => $free->(),
                    conf => "$sd/httpd.conf", pidfile => "$sd/httpd.pid", elog => "$sd/error_log",
                    h2 => $H2 && $mpm eq 'event', shim => $mpm eq 'event' };
        if ($srv->{shim}) {
            $srv->{shift_file} = "$sd/clock_shift";
            spew($srv->{shift_file}, "0\n");
            $srv->{env} = { LD_PRELOAD => $SHIM, RLAAS_CLOCK_SHIFT_FILE => $srv->{shift_file} };
        }
        spew($srv->{conf}, httpd_conf($srv, $B{$b}));
        my $out = `'$HTTPD' -t -f '$srv->{conf}' 2>&1`;
        die "apachectl -t refuses $srv->{conf}:\n$out" if $?;
        httpd_start($srv) or die "httpd $name did not start:\n" . tail($srv->{elog}, 20);
        push @CLEAN, do { my $s = $srv; sub { httpd_stop($s) } };
        push @SERVERS, $srv;
        $B{$b}{servers}{$mpm} = $srv;
    }
}

sub tail { my ($f, $n) = @_; open my $fh, '<', $f or return ''; my @l = <$fh>; join '', @l[ ($#l - $n + 1 < 0 ? 0 : $#l - $n + 1) .. $#l ] }

sub httpd_conf {
    my ($srv, $be) = @_;
    my $www = "$DIR/www";
    my $m = $srv->{mpm};
    # prefork: a child per open connection, and the clients keep theirs
    # open for up to a second after use (bursts of up to 60): enough
    # children that a graceful restart does not queue them for seconds
    my $mpm = $m eq 'event'
        ? "StartServers 2\nServerLimit 4\nThreadsPerChild 16\nMaxRequestWorkers 64\nMinSpareThreads 8\nMaxSpareThreads 48\n"
        : "StartServers 32\nMinSpareServers 16\nMaxSpareServers 48\nServerLimit 128\nMaxRequestWorkers 128\n";
    my $user = $RUNUSER ? "User $RUNUSER\nGroup #" . (getpwnam($RUNUSER))[3] . "\n" : '';
    my $h2 = $srv->{h2} ? "LoadModule http2_module $LIBEXEC/mod_http2.so\nProtocols h2c http/1.1\n" : '';
    my $lease = $be->{name} eq 'lease' ? 'RLaaSLease on' : '';
    my $c = <<"EOC";
# mod_rlaas soak: $srv->{name} (written by tools/soak/soak.pl)
ServerRoot "$srv->{dir}"
ServerName main.soak
Listen 127.0.0.1:$srv->{port}
PidFile "$srv->{pidfile}"
ErrorLog "$srv->{elog}"
LogLevel warn rlaas:notice
DefaultRunTimeDir "$srv->{dir}"
# (also makes the children dumpable, so that their /proc/PID/fd can be
# counted)
CoreDumpDirectory "$srv->{dir}"
$user
LoadModule mpm_${m}_module $LIBEXEC/mod_mpm_$m.so
LoadModule authz_core_module $LIBEXEC/mod_authz_core.so
LoadModule authz_host_module $LIBEXEC/mod_authz_host.so
LoadModule mime_module $LIBEXEC/mod_mime.so
LoadModule headers_module $LIBEXEC/mod_headers.so
LoadModule status_module $LIBEXEC/mod_status.so
LoadModule rlaas_module $opt{module}
$h2
$mpm
Timeout 20
KeepAlive On
KeepAliveTimeout 5
MaxKeepAliveRequests 0
TypesConfig /etc/mime.types
Header always set X-RLaaS-Status "%{RLAAS_STATUS}e" env=RLAAS_STATUS
LogFormat "%{X-Soak-Seq}i %D %P %>s %{RLAAS_STATUS}e %v %U" soak
CustomLog "$srv->{dir}/access_log" soak
RLaaSKeyPrefix soak:
$be->{conf}
<Directory />
    AllowOverride None
    Require all denied
</Directory>

<VirtualHost 127.0.0.1:$srv->{port}>
    ServerName main.soak
    DocumentRoot "$www/main"
    <Directory "$www/main">
        Require all granted
    </Directory>
@{[ Soak::Model::vhost_conf('main') ]}
EOC
    for my $s (grep { $_->{vhost} eq 'main' } Soak::Model::sections()) {
        (my $body = $s->{conf}) =~ s/^[ \t]*LEASE[ \t]*$/    $lease/m;
        $c .= "    <Location $s->{path}>\n$body    </Location>\n";
    }
    $c .= <<"EOC";
    <Location /soak-metrics>
        SetHandler rlaas-metrics
        <IfDirective RLaaSMetrics>
            RLaaSMetrics on
        </IfDirective>
        Require ip 127.0.0.1
    </Location>
    <Location /soak-admin>
        SetHandler rlaas-admin
        <IfDirective RLaaSConsole>
            RLaaSConsole on
        </IfDirective>
        Require ip 127.0.0.1
    </Location>
    <Location /server-status>
        SetHandler server-status
        Require ip 127.0.0.1
    </Location>
</VirtualHost>
EOC
    for my $vh (grep { $_ ne 'main' } Soak::Model::vhosts()) {
        $c .= <<"EOC";
<VirtualHost 127.0.0.1:$srv->{port}>
    ServerName $vh.soak
    DocumentRoot "$www/$vh"
@{[ Soak::Model::vhost_conf($vh) ]}
    <Directory "$www/$vh">
        AllowOverride Limit
        Require all granted
    </Directory>
</VirtualHost>
EOC
    }
    return $c;
}

sub httpd_pid {
    my ($srv) = @_;
    open my $fh, '<', $srv->{pidfile} or return;
    my $p = <$fh>;
    return $p && $p =~ /(\d+)/ && kill(0, $1) ? $1 : undef;
}

sub port_open { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $_[0], Timeout => 1) ? 1 : 0 }

sub httpd_start {
    my ($srv) = @_;
    {
        local %ENV = (%ENV, %{ $srv->{env} || {} });
        system($HTTPD, '-f', $srv->{conf}, '-k', 'start') == 0 or return 0;
    }
    for (1 .. 200) {
        return 1 if httpd_pid($srv) && port_open($srv->{port});
        sleep 0.05;
    }
    return 0;
}

sub httpd_stop {
    my ($srv) = @_;
    my $pid = httpd_pid($srv) or return;
    kill 'TERM', $pid;
    for (1 .. 200) { return 1 unless kill 0, $pid; sleep 0.05 }
    kill 'KILL', $pid;
    kill 'KILL', children($pid);
}

sub children {
    my ($ppid) = @_;
    my @c;
    opendir my $d, '/proc' or return;
    for my $p (grep { /^\d+$/ } readdir $d) {
        open my $fh, '<', "/proc/$p/stat" or next;
        my $st = <$fh> // next;
        push @c, $p if $st =~ /^\d+ \(.*\) \S (\d+)/s && $1 == $ppid;
    }
    return @c;
}

# every server decides before the clock starts
for my $srv (@SERVERS) {
    my $t0 = time;
    my $ok;
    while (time - $t0 < 30) {
        my $res = `curl -s -o /dev/null -w '%{http_code} %header{x-rlaas-status}' -H 'Host: main.soak' -H 'X-Soak-User: soak-probe' http://127.0.0.1:$srv->{port}/s/log/ok.txt`;
        if ($res =~ /^200 allowed/) { $ok = 1; last }
        sleep 0.3;
    }
    die "$srv->{name} does not decide after 30s\n" . tail($srv->{elog}, 20) unless $ok;
}
printf "%d servers deciding: %s\n", scalar @SERVERS, join(' ', map { "$_->{name}:$_->{port}" } @SERVERS);

# what the checker needs to know of the run
my $T0 = time + 1;
my $END = $T0 + $DURATION;
my $meta = {
    seed => $SEED, duration => $DURATION, duration_arg => $opt{duration},
    backends => \@BACKENDS, t0 => $T0, end => $END, warm => $WARM, quiet => $QUIET,
    rate => $opt{rate}, h2 => $H2 ? 1 : 0,
    servers => [ map { { name => $_->{name}, backend => $_->{backend}, mpm => $_->{mpm},
                         port => $_->{port}, shim => $_->{shim} ? 1 : 0, dir => $_->{dir} } } @SERVERS ],
    schedule => \%SCHED, redis_timeout_ms => 1000, divisor => 2,
    host => { load => (split ' ', `cat /proc/loadavg`)[0], nproc => `nproc` + 0,
              redis => (`redis-server --version` =~ /v=(\S+)/)[0], httpd => (`$HTTPD -v` =~ m{Apache/(\S+)})[0] },
    command => "make soak DURATION=$opt{duration} SEED=$SEED BACKENDS=" . join(',', @BACKENDS),
};
spew("$DIR/meta.json", JSON::PP->new->canonical->pretty->encode($meta));

# ------------------------------------------------------------ traffic

make_path("$DIR/requests");
my @KIDS;
my %HOSTS = (main => 'main.soak', alice => 'alice.soak', bob => 'bob.soak');
for my $bi (0 .. $#BACKENDS) {
    my $b = $BACKENDS[$bi];
    my @st = map { scale($_) } Soak::Model::streams($b);
    push @st, { section => 'log', h2 => 1, burst => 8, every => 15, ids => ['h2-a', 'h2-b'] },
              { section => 'log', h2 => 1, burst => 25, every => 30, id => 'h2-big' } if $H2;
    push @st, { section => 'ops-metrics', path => '/soak-metrics', rate => 0.2 },
              { section => 'ops-console', path => '/soak-admin', rate => 0.2, json => 1 };
    my @srv = map { $B{$b}{servers}{$_} } qw(event prefork);
    my $nw = 2;
    for my $w (0 .. $nw - 1) {
        my @mine = @st[ grep { $_ % $nw == $w } 0 .. $#st ];
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            $SIG{INT} = $SIG{TERM} = 'DEFAULT';
            sleep($T0 - time) if $T0 > time;
            Soak::Load::run(streams => \@mine, servers => \@srv, hosts => \%HOSTS, backend => $b,
                            end => $END, out => "$DIR/requests/$b-$w.tsv", seed => $SEED * 1000 + $bi * 10 + $w);
            POSIX::_exit(0);
        }
        push @KIDS, $pid;
    }
}
sub scale {
    my ($s) = @_;
    my %s = %$s;
    $s{rate} *= $opt{rate} if $s{rate};
    $s{every} /= $opt{rate} if $s{every};
    return \%s;
}
push @CLEAN, sub { kill 'KILL', @KIDS };

# ------------------------------------------------------------ faults

open my $FLOG, '>>', "$DIR/faults.tsv" or die;
$FLOG->autoflush(1);
sub flog { my $l = join("\t", @_) . "\n"; syswrite $FLOG, $l }

for my $b (@BACKENDS) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        $SIG{INT} = $SIG{TERM} = 'DEFAULT';
        srand($SEED + 17);
        for my $f (@{ $SCHED{$b} }) {
            my $at = $T0 + $f->{at};
            sleep($at - time) if $at > time;
            last if time > $END - $QUIET / 2;
            my $t = time;
            flog('B', sprintf('%.6f', $t), $b, $f->{n}, $f->{kind}, $f->{target}, $f->{dur});
            my $note = eval { fault($B{$b}, $f) } // "failed: $@";
            $note =~ s/\s+/ /g;
            flog('E', sprintf('%.6f', time), $b, $f->{n}, $f->{kind}, $f->{target}, $note);
        }
        POSIX::_exit(0);
    }
    push @KIDS, $pid;
}

sub node_by_port { my ($be, $p) = @_; (grep { $_->port == $p } @{ $be->{nodes} })[0] }

sub sentinel_master {
    my ($be) = @_;
    for my $p (@{ $be->{sentinels} }) {
        my $a = eval { Apache::TestRLaaS::Redis->attach(port => $p, timeout => 2)
                           ->cmd('SENTINEL', 'get-master-addr-by-name', 'soakmaster') };
        return node_by_port($be, $a->[1]) if ref $a eq 'ARRAY';
    }
    return undef;
}

sub cluster_masters {
    my ($be) = @_;
    for my $n (@{ $be->{nodes} }) {
        my $slots = eval { $n->cmd('CLUSTER', 'SLOTS') };
        next unless ref $slots eq 'ARRAY' && @$slots;
        my %m = map { ($_->[2][1] => 1) } @$slots;
        return sort { $a->port <=> $b->port } grep { $m{ $_->port } } @{ $be->{nodes} };
    }
    return ();
}

# the node a fault of this kind hits: the master, or one of the masters
sub target_node {
    my ($be, $f) = @_;
    return sentinel_master($be) if $be->{name} eq 'sentinel';
    if ($be->{name} eq 'cluster') {
        my @m = cluster_masters($be);
        return $m[ $f->{p}{pick} % @m ] if @m;
        return undef;
    }
    return $be->{nodes}[0];
}

sub node_pid {
    my ($n) = @_;
    open my $fh, '<', $n->pidfile or return;
    my $p = <$fh>;
    return $p && $p =~ /(\d+)/ ? $1 : undef;
}

sub restart_node {
    my ($n) = @_;
    local $n->{owned} = 0;    # no watchdog tied to this process
    $n->start_again;
    setpriority(0, node_pid($n), -5) if $ROOT && node_pid($n);
}

# one fault, start to end; returns a note for the log
sub fault {
    my ($be, $f) = @_;
    my $k = $f->{kind};
    my $d = $f->{dur};
    if ($k =~ /^httpd_|^child_kill$|^clock_step$/) {
        my $srv = $be->{servers}{ $f->{target} };
        my $pid = httpd_pid($srv) or return 'no httpd';
        if ($k eq 'httpd_graceful') { kill 'USR1', $pid; sleep $d; return "USR1 to $pid" }
        if ($k eq 'httpd_restart')  { kill 'HUP', $pid;  sleep $d; return "HUP to $pid" }
        if ($k eq 'httpd_stopstart') {
            httpd_stop($srv);
            sleep $d;
            httpd_start($srv) or return 'did not start again';
            return 'stopped and started';
        }
        if ($k eq 'child_kill') {
            my @c = sort { $a <=> $b } children($pid);
            return 'no child' unless @c;
            my $c = $c[ $f->{p}{pick} % @c ];
            kill 'KILL', $c;
            sleep $d;
            return "killed child $c";
        }
        if ($k eq 'clock_step') {
            clock($srv->{shift_file}, "$f->{p}{step}\n");
            sleep $d;
            clock($srv->{shift_file}, "0\n");
            return "clock moved $f->{p}{step}s for ${d}s";
        }
    }
    if ($k eq 'net_delay') {
        $be->{relay}->mode('delay', $f->{p}{ms});
        sleep $d;
        $be->{relay}->mode('pass');
        return "relay delay $f->{p}{ms}ms";
    }
    if ($k eq 'sentinel_failover') {
        my $old = sentinel_master($be);
        my $s = Apache::TestRLaaS::Redis->attach(port => $be->{sentinels}[0], timeout => 2);
        my $r = $s->cmd('SENTINEL', 'FAILOVER', 'soakmaster');
        my $t0 = time;
        while (time - $t0 < 20) {
            my $new = sentinel_master($be);
            return sprintf('master %d -> %d in %.1fs', $old->port, $new->port, time - $t0)
                if $new && $old && $new->port != $old->port;
            sleep 0.1;
        }
        return "no new master after 20s ($r)";
    }
    if ($k eq 'cluster_migrate') { return cluster_migrate($be, $f) }
    if ($k eq 'client_kill' || $k eq 'script_flush') {
        my @n = $be->{name} eq 'cluster' ? cluster_masters($be) : @{ $be->{nodes} };
        my @r;
        for my $n (@n) {
            my $r = eval { $k eq 'client_kill'
                ? $n->cmd('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
                : $n->cmd('SCRIPT', 'FLUSH') } // "error: $@";
            push @r, $n->port . ":$r";
        }
        sleep $d;
        return join ' ', @r;
    }
    my $n = target_node($be, $f) or return 'no target node';
    my $pid = node_pid($n) or return 'no pid';
    if ($k eq 'redis_stop') {
        kill 'STOP', $pid;
        sleep $d;
        kill 'CONT', $pid;
        return "SIGSTOP/SIGCONT " . $n->port;
    }
    if ($k eq 'debug_sleep') {
        system("redis-cli -p @{[ $n->port ]} DEBUG SLEEP $d >/dev/null 2>&1 &");
        sleep $d + 0.2;
        return "DEBUG SLEEP $d on " . $n->port;
    }
    if ($k eq 'redis_kill' || $k eq 'cluster_master_kill') {
        kill 'KILL', $pid;
        sleep $d;
        restart_node($n);
        return "kill -9 " . $n->port . " and restart";
    }
    return "unknown fault $k";
}

# a slot with a busy identity moved from its master to another, under load
sub cluster_migrate {
    my ($be, $f) = @_;
    my @m = cluster_masters($be);
    return 'fewer than two masters' if @m < 2;
    my $slot = $m[0]->cmd('CLUSTER', 'KEYSLOT', "h.x-soak-user=$f->{p}{who}");
    my %id = map { ($_->port => $_->cmd('CLUSTER', 'MYID')) } @m;
    my $slots = $m[0]->cmd('CLUSTER', 'SLOTS');
    my ($from_port) = map { $_->[2][1] } grep { $slot >= $_->[0] && $slot <= $_->[1] } @$slots;
    my ($from) = grep { $_->port == ($from_port // 0) } @m or return "slot $slot: no owner";
    my @to = grep { $_->port != $from->port } @m;
    my $to = $to[ $f->{p}{pick} % @to ];
    $to->cmd('CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $id{ $from->port });
    $from->cmd('CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $id{ $to->port });
    my $moved = 0;
    for (1 .. 5) {
        sleep $f->{dur} / 5;
        my $k = $from->cmd('CLUSTER', 'GETKEYSINSLOT', $slot, 1000);
        next unless ref $k eq 'ARRAY' && @$k;
        my $r = $from->cmd('MIGRATE', '127.0.0.1', $to->port, '', 0, 5000, 'REPLACE', 'KEYS', @$k);
        $moved += @$k;
    }
    $_->cmd('CLUSTER', 'SETSLOT', $slot, 'NODE', $id{ $to->port }) for $to, $from, grep { $_ != $to && $_ != $from } @m;
    return sprintf 'slot %d (%s) %d -> %d, %d keys', $slot, $f->{p}{who}, $from->port, $to->port, $moved;
}

# ------------------------------------------------------------ probes

# Whether each backend's Redis answers, independently of the module: a
# PING every 250 ms by the way the module goes (the relay; the master the
# sentinels name; each cluster master), with the module's budget as the
# time-out. A slow or failed probe marks the backend unhealthy then, as a
# fault does (Soak::Check). The probe loop's own lateness measures the
# machine: a process kept off the CPU for long.
open my $PROBE, '>>', "$DIR/probes.tsv" or die;
$PROBE->autoflush(1);
for my $b (grep { $_ ne 'local' } @BACKENDS) {
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        $SIG{INT} = $SIG{TERM} = 'DEFAULT';
        my $be = $B{$b};
        my %conn;
        require IO::Socket::SSL if $b eq 'tls';
        my $ping = sub {
            my ($port) = @_;
            my $t0 = time;
            my $s = $conn{$port} ||= $b eq 'tls'
                ? IO::Socket::SSL->new(PeerHost => '127.0.0.1', PeerPort => $port, Timeout => 1,
                                       SSL_ca_file => "$TLS_DIR/ca.crt", SSL_hostname => 'localhost',
                                       SSL_cert_file => "$TLS_DIR/client.crt", SSL_key_file => "$TLS_DIR/client.key")
                : IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 1);
            return -1 unless $s;
            my $ok = eval {
                local $SIG{ALRM} = sub { die "timeout\n" };
                alarm 1;
                syswrite $s, "*1\r\n\$4\r\nPING\r\n" or die "write\n";
                my $buf = '';
                while (index($buf, "\r\n") < 0) { sysread($s, $buf, 64, length $buf) or die "eof\n" }
                alarm 0;
                $buf =~ /^\+PONG/ or die "reply\n";
                1;
            };
            alarm 0;
            if (!$ok) { delete $conn{$port}; return -1 }
            return (time - $t0) * 1000;
        };
        my $next = time;
        while (time < $END) {
            my $late = (time - $next) * 1000;
            my @ports;
            if ($b eq 'sentinel') { my $m = eval { sentinel_master($be) }; @ports = $m ? ($m->port) : () }
            elsif ($b eq 'cluster') { @ports = map { $_->port } eval { cluster_masters($be) } }
            else { @ports = ($be->{relay}->port) }    # TLS for tls, as the module
            my $t = time;
            my $worst = @ports ? 0 : -1;
            for my $p (@ports) {
                my $l = $ping->($p);
                $worst = $l < 0 || $worst < 0 ? -1 : ($l > $worst ? $l : $worst);
            }
            syswrite $PROBE, sprintf("%.3f\t%s\t%.1f\t%.1f\n", $t, $b, $worst, $late);
            $next += 0.25;
            $next = time + 0.25 if $next < time;
            sleep($next - time) if $next > time;
        }
        POSIX::_exit(0);
    }
    push @KIDS, $pid;
}

# ------------------------------------------------------------ sampling

open my $SAMP, '>>', "$DIR/samples.tsv" or die;
$SAMP->autoflush(1);
sub rss_kb { open my $fh, '<', "/proc/$_[0]/status" or return 0; while (my $l = <$fh>) { return $1 if $l =~ /^VmRSS:\s+(\d+)/ } 0 }
sub nfds { opendir my $d, "/proc/$_[0]/fd" or return 0; scalar grep { /^\d+$/ } readdir $d }

sub sample {
    my $t = sprintf '%.3f', time;
    if (open my $la, '<', '/proc/loadavg') { my @l = split ' ', scalar <$la>; print $SAMP join("\t", $t, 'load', 'host', @l[0 .. 2]), "\n" }
    my %kids;    # parent pid => children, from one pass over /proc
    if (opendir my $d, '/proc') {
        for my $p (grep { /^\d+$/ } readdir $d) {
            open my $fh, '<', "/proc/$p/stat" or next;
            my $st = <$fh> // next;
            push @{ $kids{$1} }, $p if $st =~ /^\d+ \(.*\) \S (\d+)/s;
        }
    }
    for my $srv (@SERVERS) {
        my $pid = httpd_pid($srv) or next;
        my @c = @{ $kids{$pid} || [] };
        my @rss = map { rss_kb($_) } @c;
        my @fd = map { nfds($_) } @c;
        my $sum = sub { my $s = 0; $s += $_ for @_; $s };
        my $max = sub { my $m = 0; $_ > $m and $m = $_ for @_; $m };
        print $SAMP join("\t", $t, 'httpd', $srv->{name}, rss_kb($pid), nfds($pid), scalar(@c),
            @c ? int($sum->(@rss) / @c) : 0, $max->(@rss), @c ? sprintf('%.1f', $sum->(@fd) / @c) : 0,
            $max->(@fd)), "\n";
    }
    for my $b (@BACKENDS) {
        my ($mem, $clients, $keys) = (0, 0, 0);
        my $up = 0;
        for my $n (@{ $B{$b}{nodes} }) {
            my $i = eval {
                local $SIG{ALRM} = sub { die "timeout\n" };
                alarm 2;
                my $x = Apache::TestRLaaS::Redis->attach(port => $n->port, timeout => 1)->cmd('INFO');
                alarm 0;
                $x;
            };
            alarm 0;
            next unless defined $i && !ref $i;
            $up++;
            $mem += $1 if $i =~ /^used_memory:(\d+)/m;
            $clients += $1 if $i =~ /^connected_clients:(\d+)/m;
            $keys += $1 while $i =~ /^db\d+:keys=(\d+)/mg;
        }
        print $SAMP join("\t", $t, 'redis', $b, $mem, $clients, $keys, $up, scalar @{ $B{$b}{nodes} }), "\n"
            if @{ $B{$b}{nodes} };
    }
}

my $next_sample = time;
my $last_progress = time;
while (time < $END + 2) {
    if (time >= $next_sample) { sample(); $next_sample += 5 }
    if (time - $last_progress >= 60) {
        printf "soak: %ds of %ds\n", time - $T0, $DURATION;
        $last_progress = time;
    }
    sleep 0.2;
}
# let the workers answer what is in flight, then the last samples
for my $pid (@KIDS) {
    my $t0 = time;
    while (waitpid($pid, WNOHANG) == 0) {
        if (time - $t0 > 60) { kill 'KILL', $pid; waitpid $pid, 0; last }
        sleep 0.1;
    }
}
sample();
# stop the servers (their logs are complete), then analyze
cleanup();

# the error logs, the access logs' last lines kept for reading
my $res = Soak::Check::analyze($DIR);
Soak::Report::write($DIR, $res);
print Soak::Report::summary($res);
print "report: $DIR/report.md\n";
exit($res->{ok} ? 0 : 1);
