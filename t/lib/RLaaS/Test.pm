package RLaaS::Test;
# Shared helpers for the Apache::Test suite of mod_rlaas (t/*.t).
#
#   use RLaaS::Test qw(:all);
#   my $res = req('/rl/basic/x', h => {'X-User' => 'alice'}, vhost => 'rlaas_auth');
#   my $r = redis();                 # the suite's main Redis (RLaaS::Redis)
#   my $k = rkey('zone', 'alice');   # rlaas:rate_limit:zone:alice
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

our @EXPORT_OK = qw(
    req codes hit hits_until_denied uid hseg seg fallback rkey prefix
    redis redis_cmd redis_time_ms wait_fixed_window keys_like status_of
    httpd_config_test t_logs error_log_mark error_log_since wait_for
    log_lines_with basic_auth repo_top module_path mpm parallel_codes
    parallel_requests
    have_module
);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

our $PREFIX = 'rlaas:rate_limit:';

my $TOP = rel2abs(dirname(dirname(dirname(dirname(__FILE__)))));

sub repo_top { $TOP }
sub mpm { $ENV{RLAAS_TEST_MPM} || 'event' }
sub module_path { rel2abs($ENV{RLAAS_TEST_MODULE} || "$TOP/.libs/mod_rlaas.so") }
sub have_module { $ENV{RLAAS_TEST_NO_MODULE} ? 0 : -e module_path() }

# ---------------------------------------------------------------- requests

# A unique, key-safe identity for one test: tag-pid-n.
my $uid_n = 0;
sub uid {
    my $tag = shift || 'id';
    $uid_n++;
    return "$tag-$$-$uid_n-" . int(rand 1e6);
}

sub _hostport {
    my $vhost = shift;
    require Apache::Test;
    my $cfg = Apache::Test::config();
    if ($vhost && $vhost ne 'default') {
        my $hp = $cfg->{vhosts}{$vhost}{hostport}
            or die "no vhost '$vhost' in the Apache::Test config\n";
        return $hp;
    }
    return join ':', $cfg->{vars}{servername}, $cfg->{vars}{port};
}

sub basic_auth {
    my ($user, $pw) = @_;
    return 'Basic ' . encode_base64("$user:$pw", '');
}

# req(PATH, h => {headers} | [headers], vhost => NAME, method => 'GET')
# Returns the HTTP::Response. Redirects are not followed.
my $UA;
sub req {
    my ($path, %o) = @_;
    require LWP::UserAgent;
    require HTTP::Request;
    $UA ||= LWP::UserAgent->new(keep_alive => 4, timeout => 30,
                                max_redirect => 0, agent => 'rlaas-test');
    my $url = $path =~ m{^https?://} ? $path
            : 'http://' . _hostport($o{vhost}) . $path;
    my @h = ref $o{h} eq 'HASH' ? %{ $o{h} } : @{ $o{h} || [] };
    push @h, Authorization => basic_auth(@{ $o{auth} }) if $o{auth};
    my $rq = HTTP::Request->new($o{method} || 'GET', $url, \@h);
    return $UA->request($rq);
}

# The RLAAS_STATUS the server saw, echoed by mod_headers as X-RLaaS-Status
# (absent when the variable was not set, i.e. the request was not limited).
sub status_of {
    my $res = shift;
    return $res->header('X-RLaaS-Status');
}

# codes(N, PATH, %opts): the status codes of N sequential requests.
sub codes {
    my ($n, $path, %o) = @_;
    return map { req($path, %o)->code } 1 .. $n;
}

sub hit { req(@_)->code }

# Number of requests allowed (2xx) before the first 429, at most $max.
sub hits_until_denied {
    my ($max, $path, %o) = @_;
    for my $i (0 .. $max) {
        my $c = req($path, %o)->code;
        return $i if $c == 429;
        return "unexpected status $c after $i" if $c != 200;
    }
    return "no 429 within " . ($max + 1) . " requests";
}

# parallel_codes(N, PATH, %opts): N requests in N forked clients at once;
# returns the sorted status codes.
sub parallel_codes {
    my ($n, $path, %o) = @_;
    return sort { $a cmp $b } parallel_requests(map { [$path, %o] } 1 .. $n);
}

# parallel_requests([PATH, %opts], ...): one forked client per request, all
# released at the same moment; returns the status codes in request order.
sub parallel_requests {
    my @specs = @_;
    my $go = time + 0.2 + 0.02 * @specs;
    my @pipes;
    for my $spec (@specs) {
        my ($path, %o) = @$spec;
        my $url = 'http://' . _hostport($o{vhost}) . $path;
        my @h = ref $o{h} eq 'HASH' ? %{ $o{h} } : @{ $o{h} || [] };
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            require HTTP::Tiny;
            my $ua = HTTP::Tiny->new(timeout => 30, max_redirect => 0);
            my $d = $go - time; sleep $d if $d > 0;
            my $res = $ua->get($url, { headers => { @h } });
            print $w $res->{status};
            close $w;
            require POSIX; POSIX::_exit(0);
        }
        close $w;
        push @pipes, [$pid, $r];
    }
    my @codes;
    for my $p (@pipes) {
        my $fh = $p->[1];
        my $c = <$fh>;
        waitpid $p->[0], 0;
        push @codes, defined $c ? $c : 'none';
    }
    $? = 0;
    return @codes;
}

# ---------------------------------------------------------------- keys

sub prefix { $PREFIX }

# The segment a value becomes: raw when safe, else '~' + 32 hex digits.
sub hseg { '~' . substr(sha1_hex($_[0]), 0, 32) }

sub seg {
    my ($v, $credential) = @_;
    return hseg($v) if $credential;
    return $v if length($v) >= 1 && length($v) <= 64 && $v =~ /\A[A-Za-z0-9._\@-]+\z/;
    return hseg($v);
}

sub fallback { 'ip~' . seg($_[0] // '127.0.0.1') }

# rkey(ZONE|undef, SEGMENTS...) with the default prefix.
sub rkey {
    my ($zone, @segs) = @_;
    return $PREFIX . (defined $zone && length $zone ? "$zone:" : '')
         . join(':', @segs);
}

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

sub redis_time_ms {
    my $t = redis_cmd('TIME');
    return int($t->[0] * 1000 + $t->[1] / 1000);
}

# For fixed-window tests: make sure at least $need_ms remain in the
# current window of $window_ms (by Redis time), sleeping into the next one
# otherwise. Returns the window index now current.
sub wait_fixed_window {
    my ($window_ms, $need_ms) = @_;
    my $now = redis_time_ms();
    my $left = $window_ms - $now % $window_ms;
    if ($left < $need_ms) {
        sleep(($left + 50) / 1000);
        $now = redis_time_ms();
    }
    return int($now / $window_ms);
}

# Keys matching a glob (SCAN, so it works whatever KEYS is renamed to).
sub keys_like {
    my ($pattern, $client) = @_;
    $client ||= redis();
    my ($cursor, %k) = (0);
    do {
        my $r = $client->cmd('SCAN', $cursor, 'MATCH', $pattern, 'COUNT', 1000);
        die "SCAN: " . $r->message . "\n" if ref $r ne 'ARRAY';
        $cursor = $r->[0];
        $k{$_} = 1 for @{ $r->[1] || [] };
    } while ($cursor ne '0');
    my @k = sort keys %k;
    return wantarray ? @k : scalar @k;
}

# ---------------------------------------------------------------- logs

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

sub wait_for {
    my ($cond, $timeout, $step) = @_;
    $timeout ||= 5; $step ||= 0.1;
    my $end = time + $timeout;
    while (1) {
        my $ok = $cond->();
        return $ok if $ok;
        return 0 if time > $end;
        sleep $step;
    }
}

# ---------------------------------------------------------------- httpd -t

# httpd_config_test(SNIPPET, module => PATH, mpm => NAME)
# Runs `apache2 -t` on a minimal self-contained configuration that loads the
# module and then holds SNIPPET. Returns (exit status, output).
sub httpd_config_test {
    my ($snippet, %o) = @_;
    my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
    my $module = $o{module} || module_path();
    my $m = $o{mpm} || mpm();
    chomp(my $libexec = `apxs -q LIBEXECDIR 2>/dev/null` || '');
    $libexec ||= '/usr/lib/apache2/modules';
    my $dir = tempdir('rlaas-conf-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $conf = catfile($dir, 'httpd.conf');
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"EOC";
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:1
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error_log"
DefaultRunTimeDir "$dir"
LoadModule mpm_${m}_module $libexec/mod_mpm_$m.so
LoadModule authz_core_module $libexec/mod_authz_core.so
LoadModule rlaas_module $module
DocumentRoot "$dir"
EOC
    print $fh $snippet;
    close $fh;
    my $out = `'$httpd' -t -f '$conf' 2>&1`;
    my $rc = $? >> 8;
    return ($rc, $out);
}

1;
