package RLaaS::Test;
# Shared helpers for the Apache::Test suite of mod_rlaas (t/*.t).
#
#   use RLaaS::Test qw(:all);
#   my $res = req('/rl/basic/x', h => {'X-User' => 'alice'}, vhost => 'rlaas_auth');
#   my $r = redis();                 # the suite's main Redis (RLaaS::Redis)
#   my $k = rkey('zone', 'alice');   # rlaas:rate_limit:zone:alice
#   my $k = ukey('zone', 'alice');   # rlaas:rate_limit:zone:h.x-user=alice
#   hseg('secret')                   # '~' . first 16 bytes of SHA-1, in hex
use strict;
use warnings;

use Exporter 'import';
use File::Spec::Functions qw(catfile rel2abs);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use Digest::SHA qw(sha1_hex);
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time sleep);
use IO::Select ();
# the test kit of this checkout (perl/lib), not one installed on the machine
use lib catfile(dirname(dirname(dirname(dirname(rel2abs(__FILE__))))), 'perl', 'lib');
use Apache::TestRLaaS ();

# The generic helpers are the test kit's (Apache::TestRLaaS, which users'
# suites get with make install), under the names this suite has used.
BEGIN {
    no strict 'refs';
    *{$_} = \&{"Apache::TestRLaaS::$_"} for qw(
        uid basic_auth codes hit hits_until_denied parallel_codes
        parallel_requests forget_connections wait_for free_port);
    *req = \&Apache::TestRLaaS::send_request;
    *_hostport = \&Apache::TestRLaaS::hostport;
}

our @EXPORT_OK = qw(
    req codes hit hits_until_denied uid hseg seg ipseg fallback tseg xtag
    rkey ukey prefix suffix_like address_like
    redis redis_cmd redis_time_ms wait_fixed_window keys_like status_of
    httpd_config_test config_accepted config_refused t_logs error_log_mark error_log_since wait_for
    log_lines_with basic_auth repo_top module_path mpm parallel_codes
    parallel_requests
    have_module
    req_close metrics mdelta status_auto sig_log wait_sig_log
    start_clients wait_clients run_clients release_clients wait_step
    httpd_pid server_generation
    graceful_restart log_mark log_since crashes_since spare_redis
    count_by forget_connections mono next_mono_second private_httpd
    free_port set_clock
);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

our $PREFIX = 'rlaas:rate_limit:';

my $TOP = rel2abs(dirname(dirname(dirname(dirname(__FILE__)))));

sub repo_top { $TOP }
sub mpm { $ENV{RLAAS_TEST_MPM} || 'event' }
sub module_path { rel2abs($ENV{RLAAS_TEST_MODULE} || "$TOP/.libs/mod_rlaas.so") }
sub have_module { $ENV{RLAAS_TEST_NO_MODULE} ? 0 : -e module_path() }

# ---------------------------------------------------------------- requests

# The RLAAS_STATUS the server saw, echoed by mod_headers as X-RLaaS-Status
# (absent when the variable was not set, i.e. the request was not limited).
sub status_of {
    my $res = shift;
    return $res->header('X-RLaaS-Status');
}

# ---------------------------------------------------------------- keys

sub prefix { $PREFIX }

# The segment a value becomes (src/core/rlaas_key.h): raw when it is 1..64
# safe bytes and neither suffix-like (all digits, tb, sw, lb, gcra, ban,
# conc) nor address-like (digits and dots, or a grouped IPv6 network);
# else '~' + 32 hex digits of its SHA-1. Credentials always hashed.
sub hseg { '~' . substr(sha1_hex($_[0]), 0, 32) }

sub suffix_like { $_[0] =~ /\A(?:\d+|tb|sw|lb|gcra|ban|conc)\z/ }
sub address_like {
    $_[0] =~ /\A[\d.]+\z/ || $_[0] =~ /\A[0-9a-f]{1,4}(?:-[0-9a-f]{1,4}){0,7}_[0-9]{1,3}\z/;
}
sub _safe { length($_[0]) >= 1 && length($_[0]) <= 64 && $_[0] =~ /\A[A-Za-z0-9._\@-]+\z/ }

sub seg {
    my ($v, $credential) = @_;
    return hseg($v) if $credential || !_safe($v) || suffix_like($v) || address_like($v);
    return $v;
}

# The client address as a segment: raw when it is an address as the module
# renders it, else "no address" (the hash of "-").
sub ipseg {
    my ($ip) = @_;
    return $ip if _safe($ip) && address_like($ip) && !suffix_like($ip);
    return hseg('-');
}

sub fallback { 'ip~' . ipseg($_[0] // '127.0.0.1') }

# tseg(TAG, VALUE, CREDENTIAL, IP): one source's segment when a section
# has several sources or one that is not ip or user: TAG=V(value), or
# TAG=ip~<address> when the value is missing or empty. Tags: ip, user, key
# (api_key), h.<header in lower case>, c.<cookie>, q.<query>, e.<env>,
# x.<8 hex of SHA-1 of the expression>.
sub tseg {
    my ($tag, $v, $credential, $ip) = @_;
    return "$tag=" . (defined $v && length $v ? seg($v, $credential) : fallback($ip));
}

# xtag(EXPR): the tag of an expr= source.
sub xtag { 'x.' . substr(sha1_hex($_[0]), 0, 8) }

# rkey(ZONE|undef, SEGMENTS...) with the default prefix.
sub rkey {
    my ($zone, @segs) = @_;
    return $PREFIX . (defined $zone && length $zone ? "$zone:" : '')
         . join(':', @segs);
}

# ukey(ZONE|undef, VALUE): K of a section keyed by header:X-User, the
# suite's usual identity (VALUE undef or empty: the fallback).
sub ukey { rkey($_[0], tseg('h.x-user', $_[1])) }

# ---------------------------------------------------------------- Redis

my $REDIS;
sub redis {
    require RLaaS::Redis;
    return $REDIS ||= RLaaS::Redis->from_env;
}

# redis_cmd(@args): result, dying on an error reply.
sub redis_cmd {
    my $r = redis()->cmd(@_);
    die "redis @_: " . $r->message . "\n"
        if ref $r && eval { $r->isa('RLaaS::Redis::Error') };
    return $r;
}

# The limiter's clock, a fixed window's boundary and SCAN by glob: the
# kit's, on the suite's main Redis.
sub redis_time_ms { Apache::TestRLaaS::now_ms(redis()) }
sub wait_fixed_window { Apache::TestRLaaS::wait_fixed_window($_[0], $_[1], redis()) }
sub keys_like { Apache::TestRLaaS::keys_like($_[0], $_[1] || redis()) }

# ---------------------------------------------------------------- logs

# The module's log gates count seconds of CLOCK_MONOTONIC (a wall clock
# stepped back must not silence them), the same clock for every process
# of the machine: mono() reads it; next_mono_second() sleeps until just
# after its next whole second, where every gate lets a line through again.
sub mono { Time::HiRes::clock_gettime(Time::HiRes::CLOCK_MONOTONIC()) }
sub next_mono_second { my $m = mono(); sleep 1.03 - ($m - int($m)) }

sub t_logs { catfile($TOP, 't', 'logs') }

# error_log_mark(): the current size of t/logs/error_log;
# error_log_since($mark): what was written after it.
sub error_log_mark { -s catfile(t_logs(), 'error_log') || 0 }

sub error_log_since {
    my $mark = shift || 0;
    my $f = catfile(t_logs(), 'error_log');
    open my $fh, '<', $f or return '';
    seek $fh, $mark, 0;
    local $/;
    return scalar <$fh> // '';
}

# Lines of a file in t/logs containing $needle, waiting up to $timeout s
# for at least $want of them (logging happens after the response is sent).
sub log_lines_with {
    my ($file, $needle, $want, $timeout) = @_;
    $want ||= 1; $timeout ||= 5;
    my @l;
    wait_for(sub {
        @l = ();
        open my $fh, '<', catfile(t_logs(), $file) or return 0;
        while (<$fh>) { push @l, $_ if index($_, $needle) >= 0 }
        return @l >= $want;
    }, $timeout);
    return @l;
}

# ---------------------------------------------------------------- httpd -t

# httpd_config_test(SNIPPET, module => PATH, mpm => NAME)
# Runs `apache2 -t` on a minimal self-contained configuration that loads the
# module and then holds SNIPPET. Returns (exit status, output). Options:
# module (path), mpm, dir (an existing directory to hold the files),
# listen (port, default 1: nothing is started), load_module => 0 (the
# snippet has its own LoadModule line).
sub httpd_config_test {
    my ($snippet, %o) = @_;
    my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
    my $module = $o{module} || module_path();
    my $m = $o{mpm} || mpm();
    my $listen = $o{listen} || 1;
    my $load = ($o{load_module} // 1) ? "LoadModule rlaas_module $module\n" : '';
    chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
    $libexec ||= '/usr/lib/apache2/modules';
    my $dir = $o{dir} || tempdir('rlaas-conf-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $conf = catfile($dir, 'httpd.conf');
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"EOC";
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:$listen
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error_log"
DefaultRunTimeDir "$dir"
LoadModule mpm_${m}_module $libexec/mod_mpm_$m.so
LoadModule authz_core_module $libexec/mod_authz_core.so
${load}DocumentRoot "$dir"
EOC
    print $fh $snippet;
    close $fh or die "$conf: $!";
    my $out = `'$httpd' -t -f '$conf' 2>&1`;
    my $rc = $? >> 8;
    return ($rc, $out);
}

# config_accepted(SNIPPET, NAME): one test that `apache2 -t` accepts it.
# config_refused(SNIPPET, RE, NAME): one that it refuses, and one that the
# message matches RE (the output shown when either fails).
sub config_accepted {
    my ($conf, $name) = @_;
    my ($rc, $out) = httpd_config_test($conf);
    Test::More::is($rc, 0, "accepted: $name") or Test::More::diag($out);
}

sub config_refused {
    my ($conf, $re, $name) = @_;
    my ($rc, $out) = httpd_config_test($conf);
    my $ok = Test::More::isnt($rc, 0, "refused: $name");
    $ok &&= Test::More::like($out, $re, "  the message: $re");
    Test::More::diag($out) unless $ok;
}

# ================================================================ signals,
# load and faults (t/headers.t, t/metrics.t, t/faults.t, t/circuit.t, ...)

# req_close(PATH, %opts): req() on a connection of its own, closed after
# the response, so that the test holds no keep-alive connection (and, under
# prefork, no child) between requests.
sub req_close {
    my ($path, %o) = @_;
    my @h = ref $o{h} eq 'HASH' ? %{ $o{h} } : @{ $o{h} || [] };
    return req($path, %o, h => [@h, Connection => 'close']);
}

# count_by(LIST): "a x2 b x1", sorted
sub count_by {
    my %n;
    $n{ $_ // 'undef' }++ for @_;
    return join ' ', map { "$_ x$n{$_}" } sort keys %n;
}

# metrics(): the series of `SetHandler rlaas-metrics` (/sig/metrics) as a
# hashref, 'name{labels}' => value.
sub metrics {
    my $res = req_close('/sig/metrics');
    die "GET /sig/metrics: " . $res->status_line . "\n" unless $res->code == 200;
    my %m;
    for (split /\n/, $res->content) {
        next if /^#/ || !/\S/;
        next unless /^(\S+)\s+(\S+)\s*$/;
        # a series twice is a malformed exposition (a scraper keeps one)
        die "GET /sig/metrics: series $1 twice\n" if exists $m{$1};
        $m{$1} = $2;
    }
    return \%m;
}

# mdelta(BEFORE, AFTER, SERIES): AFTER - BEFORE for one series (0 if absent)
sub mdelta {
    my ($b, $a, $k) = @_;
    return ($a->{$k} // 0) - ($b->{$k} // 0);
}

# status_auto(): server-status?auto as a hashref.
sub status_auto {
    my $res = req_close('/server-status?auto');
    my %s;
    for (split /\n/, $res->content) {
        $s{$1} = $2 if /^([^:]+):\s*(.*?)\s*$/;
    }
    return \%s;
}

# The per-request log t/logs/rlaas_sig_log (LogFormat rlaas_sig in
# extra.conf.in): one line per request with an X-Test-Id header.
# sig_log(PREFIX): hashrefs {id pid code status remaining us begin end uri}
# for the lines whose id starts with PREFIX, in log order.
sub sig_log {
    my ($prefix) = @_;
    my @l;
    open my $fh, '<', catfile(t_logs(), 'rlaas_sig_log') or return ();
    while (my $line = <$fh>) {
        next unless index($line, $prefix) == 0;
        chomp $line;
        my %e;
        @e{qw(id pid code status remaining us begin end uri)} = split / /, $line, 9;
        next unless defined $e{uri};
        $_ = undef for grep { defined && $_ eq '-' } @e{qw(status remaining)};
        push @l, \%e;
    }
    return @l;
}

# wait_sig_log(PREFIX, N, TIMEOUT): sig_log once at least N lines are there
# (a line is written after the response has been sent).
sub wait_sig_log {
    my ($prefix, $n, $timeout) = @_;
    my @l;
    wait_for(sub { @l = sig_log($prefix); @l >= $n }, $timeout || 5, 0.05);
    return @l;
}

# ---------------------------------------------------------------- clients

# start_clients(clients => [[STEP, ...], ...], tag => TAG, keepalive => 0|1)
# Forks one HTTP client per element of `clients`, each running its steps in
# order, and returns at once (wait_clients collects the results). A step is
# a hashref:
#   path, vhost, h      the request (h: extra headers)
#   at                  epoch time (Time::HiRes) to begin the step
#   n                   number of requests, or
#   until               epoch time: send requests until then
#   min                 with until: at least this many requests, however
#                       late the client starts (default 0)
#   gap                 seconds between requests (default 0)
#   stop_on             end the step after a response with this
#                       RLAAS_STATUS (X-RLaaS-Status), e.g. 'allowed'
#   go                  wait for release_clients() before the step
#   keepalive           this client's connection reuse (default: the
#                       option of start_clients, itself default 1): with
#                       keep-alive a client stays with one child/process
# Every request carries X-Test-Id "TAG-c<client>-s<step>-<i>", so it can be
# found in rlaas_sig_log. wait_step(HANDLE) returns once every client has
# finished its current step (each reports every step it ends).
sub start_clients {
    my (%o) = @_;
    my $tag = $o{tag} || uid('cl');
    my $dir = tempdir('rlaas-clients-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    # compiled once here, not in every client (that takes a while, and the
    # clients are to start on time)
    require HTTP::Tiny;
    require IO::Socket::IP;
    my @kids;
    my $ci = 0;
    for my $steps (@{ $o{clients} }) {
        my $c = $ci++;
        my @st;
        for my $step (@$steps) {
            # (not in a map: the first Apache::Test::config() clobbers $_)
            my $hp = _hostport($step->{vhost});
            push @st, { %$step, url => "http://$hp$step->{path}" };
        }
        my $ka = $o{keepalive} // 1;
        my $file = catfile($dir, "client-$c");
        pipe(my $go_r, my $go_w) or die "pipe: $!";
        pipe(my $done_r, my $done_w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $go_w;
            close $done_r;
            $done_w->autoflush(1);
            my $ok = eval { _client_run($c, \@st, $file, $tag, $ka, $go_r, $done_w); 1 };
            require POSIX;
            POSIX::_exit($ok ? 0 : 1);
        }
        close $go_r;
        close $done_w;
        $go_w->autoflush(1);
        push @kids, [$pid, $file, $c, $go_w, $done_r];
    }
    return { kids => \@kids, tag => $tag, dir => $dir };
}

# release_clients(HANDLE): lets every client begin its next `go` step.
sub release_clients {
    my ($h) = @_;
    local $SIG{PIPE} = 'IGNORE';
    print { $_->[3] } "go\n" for @{ $h->{kids} };
}

# wait_step(HANDLE, TIMEOUT): waits until every client has ended one more
# step (at most TIMEOUT s, default 30); returns the number that did.
sub wait_step {
    my ($h, $timeout) = @_;
    my $end = time + ($timeout || 30);
    my $n = 0;
    for my $k (@{ $h->{kids} }) {
        my $fh = $k->[4];
        my $sel = IO::Select->new($fh);
        $k->[5] //= '';
        while (index($k->[5], "\n") < 0) {
            my $left = $end - time;
            last unless $left > 0 && $sel->can_read($left);
            last unless sysread $fh, $k->[5], 256, length $k->[5];
        }
        $n++ if $k->[5] =~ s/^[^\n]*\n//;
    }
    return $n;
}

sub _client_run {
    my ($c, $steps, $file, $tag, $ka, $go, $done) = @_;
    require HTTP::Tiny;
    my $ua = HTTP::Tiny->new(timeout => 30, max_redirect => 0, keep_alive => $ka,
                             agent => 'rlaas-test-client');
    open my $out, '>', $file or die "$file: $!";
    my $si = 0;
    for my $st (@$steps) {
        my $s = $si++;
        if ($st->{go}) { my $l = <$go>; last unless defined $l }
        if ($st->{at}) { my $d = $st->{at} - time; sleep $d if $d > 0 }
        for (my $i = 0; ; $i++) {
            last if defined $st->{n} && $i >= $st->{n};
            last if defined $st->{until} && time >= $st->{until} && $i >= ($st->{min} // 0);
            last if !defined $st->{n} && !defined $st->{until} && $i >= 1;
            my $id = "$tag-c$c-s$s-$i";
            my %h = (%{ $st->{h} || {} }, 'X-Test-Id' => $id);
            my $t0 = time;
            my $res = $ua->get($st->{url}, { headers => \%h });
            my $t1 = time;
            my $status = $res->{headers}{'x-rlaas-status'} // '-';
            my $rl = $res->{headers}{'ratelimit'} // '-';
            # HTTP::Tiny's own errors (599): the reason instead
            ($rl = substr($res->{content} // '', 0, 200)) =~ s/\s+/ /g if $res->{status} == 599;
            printf $out "%d\t%d\t%s\t%s\t%.6f\t%.6f\t%s\t%s\n",
                $s, $i, $res->{status}, $status, $t0, $t1, $id, $rl;
            last if defined $st->{stop_on} && $status eq $st->{stop_on};
            sleep $st->{gap} if $st->{gap};
        }
        $out->flush;
        print $done "s$s\n";
    }
    close $out or die "$file: $!";
}

# wait_clients(HANDLE): waits for every client; returns hashrefs
# {client step i code status t0 t1 dt id ratelimit}, client by client.
sub wait_clients {
    my ($h) = @_;
    my @r;
    local $?;
    for my $k (@{ $h->{kids} }) {
        my ($pid, $file, $c, $go_w, $done_r) = @$k;
        close $go_w;    # a client still waiting for a release ends
        waitpid $pid, 0;
        close $done_r;
        open my $fh, '<', $file or next;
        while (<$fh>) {
            chomp;
            my %e;
            @e{qw(step i code status t0 t1 id ratelimit)} = split /\t/;
            $e{client} = $c;
            $e{dt} = $e{t1} - $e{t0};
            $e{status} = undef if $e{status} eq '-';
            push @r, \%e;
        }
    }
    return @r;
}

sub run_clients { wait_clients(start_clients(@_)) }

# ---------------------------------------------------------------- httpd

sub httpd_pid {
    open my $fh, '<', catfile(t_logs(), 'httpd.pid') or die "httpd.pid: $!";
    my $pid = <$fh>;
    die "httpd.pid: no pid\n" unless defined $pid && $pid =~ /(\d+)/;
    return $1;
}

sub server_generation {
    my $s = status_auto();
    return $s->{ParentServerConfigGeneration} // -1;
}

# graceful_restart(): SIGUSR1 to the parent; waits (up to 20 s) until the
# next generation serves. Returns the new generation, or 0.
sub graceful_restart {
    my $gen = server_generation();
    kill 'USR1', httpd_pid() or return 0;
    my $new;
    wait_for(sub { $new = server_generation(); $new > $gen }, 20, 0.1) or return 0;
    return $new;
}

# log_mark(FILE) / log_since(FILE, MARK): as error_log_mark/error_log_since
# for any file in t/logs (a vhost's own error log, say).
sub log_mark { -s catfile(t_logs(), $_[0]) || 0 }

sub log_since {
    my ($file, $mark) = @_;
    open my $fh, '<', catfile(t_logs(), $file) or return '';
    seek $fh, $mark || 0, 0;
    local $/;
    return scalar <$fh> // '';
}

# crashes_since(MARK): error_log lines since MARK that tell of a crashed
# child (exit signal, segmentation fault, abort, glibc heap errors).
sub crashes_since {
    my $log = error_log_since($_[0]);
    return grep { /exit signal|Segmentation|AH00052|AH00060|double free|corrupted|stack smashing|Aborted/i }
        split /\n/, $log;
}

# spare_redis(PORT, extra => [args]): a redis-server of the test's own on a
# port the configuration points at (RLAAS_TEST_REDIS_SPARE*_PORT). The
# DEBUG command is enabled (Redis >= 7 refuses it by default), and
# $ENV{RLAAS_SPARE_REDIS_EXTRA} (read when the server is started or
# restarted with start_again) adds arguments, e.g. "--databases 128".
sub spare_redis {
    my ($port, %o) = @_;
    require RLaaS::Redis;
    my $bin = $ENV{RLAAS_REDIS_SERVER} || 'redis-server';
    my $ver = `$bin --version 2>/dev/null` // '';
    my $debug = $ver =~ /\bv=(\d+)\./ && $1 >= 7 ? '--enable-debug-command yes' : '';
    my $dir = tempdir('rlaas-spare-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $wrap = catfile($dir, 'redis-server');
    open my $fh, '>', $wrap or die "$wrap: $!";
    print $fh "#!/bin/sh\nexec '$bin' \"\$@\" $debug \${RLAAS_SPARE_REDIS_EXTRA:-}\n";
    close $fh or die "$wrap: $!";
    chmod 0755, $wrap;
    return RLaaS::Redis->start(port => $port, redis_server => $wrap,
                               dir => catfile($dir, 'data'), %o);
}

# ---------------------------------------------------------------- a private httpd

# set_clock(FILE, WORD): the word t/tools/shim.c reads (a shift in seconds,
# or '@' and ms since the epoch), written whole: a new file renamed over
# the old, so no reader (redis-server's expiry cycle reads the clock ten
# times a second) ever finds it empty and falls back to the real time.
sub set_clock {
    my ($file, $word) = @_;
    open my $fh, '>', "$file.new" or die "$file.new: $!";
    print $fh "$word\n";
    close $fh or die "$file.new: $!";
    rename "$file.new", $file or die "$file: $!";
}

# private_httpd(SNIPPET, OPTIONS): an httpd of the test's own (the suite's
# MPM, the module loaded) with SNIPPET in its configuration; every test
# that needs a second server starts it here. OPTIONS:
#   env => {VAR => value}  its environment
#   shim => 1              t/tools/shim.c preloaded
#   modules => [names]     more of httpd's modules (mod_NAME.so), loaded
#                          (as mod_authz_core and mod_alias are) before
#                          mod_rlaas
#   rlaas_first => 1       mod_rlaas loaded before every other module
#   docroot => DIR         DocumentRoot DIR, as it is; without it every
#                          path answers ok.txt
#   one_child => 0         httpd's own process counts (default: one child
#                          of 25 threads, or one prefork child)
#   loglevel => LEVEL      default "warn rlaas:info"
# Returns a hashref {port hp dir elog get(PATH, HEADERS) log() stop()};
# dies if it does not start (a test never skips because of that); stopped
# when the test ends if it was not before.
my @PRIVATE;
sub private_httpd {
    my ($snippet, %o) = @_;
    my $dir = tempdir('rlaas-private-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my %env = %{ $o{env} || {} };
    if ($o{shim}) {
        my $so = catfile($dir, 'shim.so');
        system($ENV{CC} || 'cc', '-shared', '-fPIC', '-o', $so,
               catfile($TOP, 't', 'tools', 'shim.c'), '-ldl') == 0
            or die "cannot build t/tools/shim.c\n";
        $env{LD_PRELOAD} = $so;
    }
    my $port = free_port();
    chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
    $libexec ||= '/usr/lib/apache2/modules';
    my $m = mpm();
    my $procs = '';
    if ($o{one_child} // 1) {
        my $workers = $m eq 'prefork' ? 1 : 25;
        $procs = "StartServers 1\nServerLimit 1\nMaxRequestWorkers $workers\n"
            . ($m eq 'prefork' ? '' : "ThreadsPerChild 25\n");
    }
    my $module = module_path();
    my $rlaas = "LoadModule rlaas_module $module\n";
    my $load = join '', map { "LoadModule ${_}_module $libexec/mod_$_.so\n" }
        qw(authz_core alias), @{ $o{modules} || [] };
    $load = $o{rlaas_first} ? $rlaas . $load : $load . $rlaas;
    my $root = defined $o{docroot} ? "DocumentRoot \"$o{docroot}\"\n"
        : "DocumentRoot \"$dir\"\nAliasMatch \"^/\" \"$dir/ok.txt\"\n";
    my $level = $o{loglevel} // 'warn rlaas:info';
    my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
    my $conf = catfile($dir, 'httpd.conf');
    open my $ok, '>', catfile($dir, 'ok.txt') or die;
    print $ok "ok\n";
    close $ok;
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"EOC";
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:$port
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error_log"
LogLevel $level
DefaultRunTimeDir "$dir"
LoadModule mpm_${m}_module $libexec/mod_mpm_$m.so
$load$procs$root
EOC
    print $fh $snippet;
    close $fh or die "$conf: $!";
    my $out;
    {
        local %ENV = (%ENV, %env);
        $out = `'$httpd' -f '$conf' -k start 2>&1`;
    }
    die "private httpd did not start: $out\n" if $?;
    my $h = {
        port => $port, hp => "127.0.0.1:$port", dir => $dir, conf => $conf,
        httpd => $httpd, elog => catfile($dir, 'error_log'),
    };
    push @PRIVATE, $h;
    my $up;
    for (1 .. 200) {
        last if $up = IO::Socket::INET->new("127.0.0.1:$port");
        sleep 0.05;
    }
    die "private httpd is not listening on $port\n" unless $up;
    return bless $h, 'RLaaS::Test::Private';
}

END {
    for my $h (@PRIVATE) {
        local $?;
        system($h->{httpd}, '-f', $h->{conf}, '-k', 'stop')
            if -e "$h->{dir}/httpd.pid";
    }
}

package RLaaS::Test::Private;

sub port { $_[0]{port} }
sub hp { $_[0]{hp} }

# stop(): stopped, its parent gone, before this returns
sub stop {
    my ($self) = @_;
    my $pidfile = "$self->{dir}/httpd.pid";
    open my $fh, '<', $pidfile or return;
    my ($pid) = (<$fh> // '') =~ /(\d+)/;
    close $fh;
    system("'$self->{httpd}' -f '$self->{conf}' -k stop >/dev/null 2>&1");
    my $end = Time::HiRes::time() + 10;
    Time::HiRes::sleep(0.05) while $pid && kill(0, $pid) && Time::HiRes::time() < $end;
}

# get(PATH, {headers}): [status, seconds taken]
sub get {
    my ($self, $path, $h) = @_;
    require HTTP::Tiny;
    my $t0 = Time::HiRes::time();
    my $res = HTTP::Tiny->new(timeout => 10)
        ->get("http://127.0.0.1:$self->{port}$path", { headers => $h || {} });
    return wantarray ? ($res->{status}, Time::HiRes::time() - $t0) : $res->{status};
}

sub log {
    my $self = shift;
    open my $f, '<', $self->{elog} or return '';
    local $/;
    return scalar <$f>;
}

# metric(NAME, PATH): the value of one series of the rlaas-metrics page at
# PATH (default /metrics), or undef
sub metric {
    my ($self, $name, $path) = @_;
    require HTTP::Tiny;
    my $c = HTTP::Tiny->new(timeout => 10)
        ->get("http://127.0.0.1:$self->{port}" . ($path // '/metrics'))->{content} // '';
    return $c =~ /^\Q$name\E (\d+)$/m ? $1 : undef;
}

1;
