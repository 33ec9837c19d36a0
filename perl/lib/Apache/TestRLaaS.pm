package Apache::TestRLaaS;

use strict;
use warnings;

our $VERSION = '1.00';

=head1 NAME

Apache::TestRLaaS - test the rate limits of an Apache configuration with
Apache::Test and mod_rlaas

=head1 SYNOPSIS

t/TEST.PL:

    use Apache::TestRunRLaaS ();
    Apache::TestRunRLaaS->new->run(@ARGV);

t/conf/extra.conf.in:

    Include "/etc/apache2/sites-available/shop.conf"

t/login.t:

    use Test::More;
    use Apache::TestRLaaS;

    reset_counters();
    allows_then_429({ path => '/login', auth => ['alice', 'wrong'] }, 5,
                    'five attempts at /login, then 429');
    remaining_is({ path => '/api/items', headers => { 'X-API-Key' => 'k1' } },
                 99, 'one call of 100 used');
    is_exempt('/static/app.css', 50, 'static files are never limited');
    done_testing;

=head1 DESCRIPTION

A kit for Apache::Test suites that check rate limits set with mod_rlaas
(F<examples/apache-test/> in mod_rlaas' sources is a whole suite). The
runner (L<Apache::TestRunRLaaS>, or C<setup> from a t/TEST.PL of your own,
see L</"IN A RUNNER OF YOUR OWN">) starts a private C<redis-server> for the
run (a free port, a temporary directory, stopped and removed when the run
ends, whatever way it ends; nothing needs root), and writes into the
httpd.conf Apache::Test generates, before everything and after
everything:

    <IfModule !rlaas_module>
        LoadModule rlaas_module "${RLAAS_MODULE}"
    </IfModule>
    ...
    <IfModule rlaas_module>
        RLaaSRedis ${RLAAS_KIT_REDIS}
        RLaaSKeyPrefix ${RLAAS_KIT_PREFIX}
    </IfModule>

(the C<LoadModule> before the modules Apache::Test inherits, the rest after
the Includes of t/conf/*.conf.in, so after your site's own C<RLaaSRedis>).
httpd reads the C<${...}> variables from its environment when it starts, so a
configuration Apache::Test keeps from an earlier run still points at this
run's Redis. These lines set the main server: a virtual host that sets its
own C<RLaaSRedis> or C<RLaaSKeyPrefix> keeps them.

The test files then use the functions below: C<reset_counters()> between
tests, and assertions whose failures say what was expected and what the
server answered.

=head2 The module

C<RLAAS_MODULE> (the path of F<mod_rlaas.so>) if set; else the module built
in the checkout this kit comes from, when it is used in place
(C<PERL5LIB=checkout/perl/lib>); else F<mod_rlaas.so> in the directory
C<apxs -q LIBEXECDIR> names (where C<make install> puts it), with the apxs
given to Apache::Test (C<-apxs>, C<APACHE_TEST_APXS>) or the first in PATH.
A module the system configuration loads already (C<a2enmod rlaas>) is
loaded once, from C<RLAAS_MODULE>'s path when that is set.

=head2 The local backend

With C<< backend => 'local' >> (or C<RLAAS_KIT_BACKEND=local> in the
environment), no Redis is started; the kit writes C<RLaaSBackend local> for
the main server, and C<RLaaSRedis> points at a port where nothing listens,
so that a section still reaching for Redis shows as an error. The counters
live in httpd's shared memory: C<reset_counters()> stops and starts httpd
(a graceful restart would keep them). A module without the local engine
makes every test file that uses the kit skip, saying so.

=head2 A Redis of your own

C<RLAAS_KIT_REDIS=host:port> in the environment: no Redis is started, that
one is used. C<reset_counters()> deletes only keys under the suite's
prefix (C<RLAAS_KIT_PREFIX>; by default C<rlaas-test:> and eight hex
digits naming the machine, the user and the suite's directory), with
C<SCAN> and C<UNLINK>; it never flushes a database.

=head2 Environment of the test files

C<RLAAS_KIT_BACKEND> (C<redis> or C<local>), C<RLAAS_KIT_REDIS>,
C<RLAAS_KIT_REDIS_DIR> (the private server's directory),
C<RLAAS_KIT_PREFIX>, C<RLAAS_MODULE>; C<RLAAS_KIT_SKIP> when the suite
cannot run (then C<use Apache::TestRLaaS> plans C<skip_all> with it).

=cut

use Carp qw(croak);
use Cwd ();
use File::Basename qw(dirname);
use File::Spec::Functions qw(catdir catfile rel2abs);
use IO::Select ();
use Time::HiRes ();

use Exporter ();

our @EXPORT = qw(
    allows_then_429 remaining_is is_exempt reset_counters
    send_request ratelimit_fields retry_after
);
our @EXPORT_OK = (@EXPORT, qw(
    codes hit hits_until_denied parallel_codes parallel_requests
    forget_connections basic_auth hostport describe_request
    uid wait_for free_port keys_like now_ms redis_time_ms wait_fixed_window
    kit_redis backend key_prefix restart_httpd
    parallel_hold in_flight_limit_is bytes_quota_serves period_end_in
    next_midnight
));
our %EXPORT_TAGS = (all => \@EXPORT_OK);

# A suite the runner found it cannot run (a local backend the module does
# not have): every test file that uses the kit skips with the reason.
sub import {
    if (my $why = $ENV{RLAAS_KIT_SKIP}) {
        require Test::More;
        Test::More::plan(skip_all => $why);
    }
    goto &Exporter::import;
}

# ================================================================ the run

# the checkout this file is in, when it is used in place (perl/lib/Apache/)
my $KIT_TOP = dirname(dirname(dirname(dirname(Cwd::abs_path(__FILE__) // rel2abs(__FILE__)))));

# setup(%opt): starts what the suite's httpd needs and exports where it
# is; returns the exported variables (a hashref). See the POD.
sub setup {
    my ($class, %o) = @_;
    my $mode = $o{mode} || 'run';
    croak "setup: mode is run, start, attach, stop or none (not '$mode')"
        unless $mode =~ /\A(?:run|start|attach|stop|none)\z/;
    my $tdir = rel2abs($o{t_dir} || dirname(rel2abs($0)));
    my $state = catfile($tdir, 'logs', 'rlaas-kit');
    delete $ENV{RLAAS_KIT_SKIP};

    require Apache::TestRLaaS::Keeper;
    if ($mode eq 'stop') {
        Apache::TestRLaaS::Keeper->stop_detached($state);
        return {};
    }
    return {} if $mode eq 'none';

    my $backend = $o{backend} || $ENV{RLAAS_KIT_BACKEND} || 'redis';
    croak "backend is redis or local (not '$backend')"
        unless $backend =~ /\A(?:redis|local)\z/;
    my $module = module_path(%o);
    my %env = (RLAAS_MODULE => $module, RLAAS_KIT_BACKEND => $backend);

    if ($mode eq 'attach' and my $kept = Apache::TestRLaaS::Keeper->attach($state)) {
        @ENV{ keys %$kept } = values %$kept;
        return $kept;
    }
    # a full run replaces what an earlier -start-httpd kept
    Apache::TestRLaaS::Keeper->stop_detached($state) if $mode eq 'run' && -e "$state.env";

    # The same for every run of one suite on one machine (so that
    # -start-httpd and a later -run-tests agree), apart from other suites
    # and machines sharing a Redis.
    $env{RLAAS_KIT_PREFIX} = $o{prefix} || $ENV{RLAAS_KIT_PREFIX}
        || default_prefix($tdir);
    my $keeper;
    if ($backend eq 'local') {
        my $why = local_backend_missing($module, %o);
        if ($why) {
            $ENV{RLAAS_KIT_SKIP} = $why;
            print "# $why\n";
            return { %env, RLAAS_KIT_SKIP => $why };
        }
        # nothing listens there: a section reaching for Redis fails loudly
        $env{RLAAS_KIT_REDIS} = '127.0.0.1:' . free_port();
        $env{RLAAS_KIT_REDIS_DIR} = '';
    }
    elsif (my $given = $o{redis} || $ENV{RLAAS_KIT_REDIS}) {
        $env{RLAAS_KIT_REDIS} = $given;
        $env{RLAAS_KIT_REDIS_DIR} = '';
    }
    else {
        require Apache::TestRLaaS::Redis;
        my $ropt = $o{redis_options} || {};
        $keeper = Apache::TestRLaaS::Keeper->start(sub {
            my $r = Apache::TestRLaaS::Redis->start(%$ropt);
            return ([$r], { RLAAS_KIT_REDIS => $r->host . ':' . $r->port,
                            RLAAS_KIT_REDIS_DIR => $r->dir });
        }, name => 'Apache::TestRLaaS redis');
        %env = (%env, %{ $keeper->env });
    }
    # t/TEST -start-httpd: what later -run-tests need, until -stop-httpd
    if ($mode eq 'start') {
        mkdir catdir($tdir, 'logs');
        $keeper ? $keeper->detach($state, \%env)
                : Apache::TestRLaaS::Keeper->save_state($state, \%env);
    }
    @ENV{ keys %env } = values %env;
    print "# mod_rlaas $module; backend $backend"
        . ($backend eq 'redis' ? ", Redis $env{RLAAS_KIT_REDIS}" : '')
        . ", key prefix $env{RLAAS_KIT_PREFIX}\n" unless $o{quiet};
    return \%env;
}

# The lines the runner writes into httpd.conf: (preamble, postamble).
sub config_lines {
    my ($class, %o) = @_;
    my $backend = $o{backend} || $ENV{RLAAS_KIT_BACKEND} || 'redis';
    my $pre = "<IfModule !rlaas_module>\n"
            . "    LoadModule rlaas_module \"\${RLAAS_MODULE}\"\n"
            . "</IfModule>\n";
    my $post = "# Apache::TestRLaaS: the suite's own Redis and key prefix\n"
             . "<IfModule rlaas_module>\n"
             . "    RLaaSRedis \${RLAAS_KIT_REDIS}\n"
             . "    RLaaSKeyPrefix \${RLAAS_KIT_PREFIX}\n"
             . ($backend eq 'local' ? "    RLaaSBackend local\n" : '')
             . "</IfModule>\n";
    return ($pre, $post);
}

# add_config(TEST_CONFIG): puts those lines into an Apache::TestConfig
# (for a runner of your own: call it from its new_test_config).
sub add_config {
    my ($class, $cfg, %o) = @_;
    my ($pre, $post) = $class->config_lines(%o);
    $cfg->preamble_first($pre);
    # a hook runs as httpd.conf is written, after the Includes of
    # t/conf/*.conf.in have been listed: the kit's lines come after the
    # site's own RLaaSRedis
    $cfg->postamble_register(sub { $_[0]->postamble($post) });
    return $cfg;
}

# module_path(%opt): the mod_rlaas.so the suite loads (see the POD).
sub module_path {
    shift if @_ % 2;    # called as a class method
    my (%o) = @_;
    my @tried;
    for my $m ($o{module}, $ENV{RLAAS_MODULE}) {
        next unless defined $m && length $m;
        return rel2abs($m) if -f $m;
        croak "mod_rlaas: $m does not exist (RLAAS_MODULE, or the module "
            . "option): give the path of mod_rlaas.so\n";
    }
    my $built = catfile($KIT_TOP, '.libs', 'mod_rlaas.so');
    return $built if -f $built && -f catfile($KIT_TOP, 'mod_rlaas.c');
    push @tried, $built if -f catfile($KIT_TOP, 'mod_rlaas.c');
    if (my $libexec = _apxs_q('LIBEXECDIR')) {
        my $so = catfile($libexec, 'mod_rlaas.so');
        return $so if -f $so;
        push @tried, $so;
    }
    croak "mod_rlaas.so not found (tried: " . (join(', ', @tried) || 'no apxs')
        . "): `make install` it, or set RLAAS_MODULE=/path/to/mod_rlaas.so\n";
}

sub _apxs {
    my $a = $ENV{APACHE_TEST_APXS};
    $a ||= $Apache::TestConfig::Argv{apxs} if %Apache::TestConfig::Argv;
    return $a if $a;
    for my $d ((split /:/, $ENV{PATH} // ''), '/usr/bin', '/usr/sbin') {
        return "$d/apxs" if -x "$d/apxs";
        return "$d/apxs2" if -x "$d/apxs2";
    }
    return undef;
}

sub _apxs_q {
    my ($var) = @_;
    my $apxs = _apxs() or return undef;
    open my $fh, '-|', $apxs, '-q', $var or return undef;
    chomp(my $v = <$fh> // '');
    close $fh;
    return length $v ? $v : undef;
}

sub httpd_path {
    my $h = $ENV{APACHE_TEST_HTTPD};
    $h ||= $Apache::TestConfig::Argv{httpd} if %Apache::TestConfig::Argv;
    return $h if $h;
    my ($sbin, $target) = (_apxs_q('SBINDIR'), _apxs_q('TARGET'));
    return "$sbin/$target" if $sbin && $target && -x "$sbin/$target";
    for (qw(/usr/sbin/apache2 /usr/sbin/httpd /usr/local/apache2/bin/httpd)) {
        return $_ if -x $_;
    }
    return 'httpd';
}

# local_backend_missing($module): why the module can't run the local
# backend (its text for the skip), or '' when it can. httpd -t on a
# configuration of a few lines says whether RLaaSBackend local is known.
sub local_backend_missing {
    my ($module, %o) = @_;
    my ($rc, $out) = httpd_config_test("RLaaSBackend local\n", module => $module);
    return '' if $rc == 0;
    # httpd's own words, without its line numbers in a file nobody keeps
    my ($why) = $out =~ /(Invalid command '[^']*')/;
    ($why = $out) =~ s/\s+/ /g unless $why;
    return "the local backend is not in this mod_rlaas ($module): "
         . "httpd -t refuses RLaaSBackend local: $why";
}

# httpd_config_test(SNIPPET, module => PATH): `httpd -t` of a configuration
# that loads an MPM (when it is a module), mod_authz_core and mod_rlaas,
# then holds SNIPPET. Returns (exit status, output).
sub httpd_config_test {
    my ($snippet, %o) = @_;
    require File::Temp;
    my $dir = File::Temp::tempdir('rlaas-kit-conf-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $libexec = _apxs_q('LIBEXECDIR') || '/usr/lib/apache2/modules';
    my $mpm = $o{mpm} || 'event';
    my $load = '';
    for my $m ("mpm_$mpm", 'authz_core') {
        my $so = catfile($libexec, "mod_$m.so");
        $load .= "<IfModule !${m}_module>\nLoadModule ${m}_module \"$so\"\n</IfModule>\n"
            if -f $so;
    }
    my $module = $o{module} || module_path();
    my $conf = catfile($dir, 'httpd.conf');
    open my $fh, '>', $conf or croak "$conf: $!";
    print $fh <<"EOC";
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:1
PidFile "$dir/httpd.pid"
ErrorLog "$dir/error_log"
DefaultRunTimeDir "$dir"
$load
LoadModule rlaas_module "$module"
DocumentRoot "$dir"
$snippet
EOC
    close $fh or croak "$conf: $!";
    my $httpd = httpd_path();
    my $out = `'$httpd' -t -f '$conf' 2>&1`;
    return ($? >> 8, $out // '');
}

# ================================================================ state

sub backend    { $ENV{RLAAS_KIT_BACKEND} || 'redis' }
sub key_prefix { $ENV{RLAAS_KIT_PREFIX} }

my %REDIS;
# kit_redis(): a client of the suite's Redis (an Apache::TestRLaaS::Redis,
# which can also stop and start it again); undef with the local backend.
sub kit_redis {
    return undef if backend() eq 'local';
    my $at = $ENV{RLAAS_KIT_REDIS} // return undef;
    require Apache::TestRLaaS::Redis;
    return $REDIS{$at} ||= Apache::TestRLaaS::Redis->from_env;
}

sub _client {
    my ($client, $what) = @_;
    return $client if $client;
    my $r = kit_redis();
    croak "$what: no Redis (RLAAS_KIT_REDIS is not set: is t/TEST the "
        . "kit's runner?)" unless $r;
    return $r;
}

sub _ok_reply {
    my ($r, $what) = @_;
    require Apache::TestRLaaS::Redis;
    croak "$what: " . $r->message if Apache::TestRLaaS::Redis::is_error($r);
    return $r;
}

# reset_counters(): every counter of the suite starts afresh. With Redis,
# the keys under the suite's prefix go (SCAN and UNLINK, nothing else is
# touched); returns how many. With the local backend, httpd is stopped and
# started (the counters live in its memory); returns 1.
sub reset_counters {
    if (backend() eq 'local') {
        restart_httpd();
        return 1;
    }
    my $prefix = key_prefix();
    croak "reset_counters: RLAAS_KIT_PREFIX is not set, and only keys under "
        . "the suite's own prefix may be deleted (is t/TEST the kit's runner?)"
        unless defined $prefix && length $prefix;
    return delete_keys($prefix);
}

# delete_keys(PREFIX, CLIENT): UNLINKs every key that starts with PREFIX.
sub delete_keys {
    my ($prefix, $client) = @_;
    croak "delete_keys: an empty prefix would be every key" unless length($prefix // '');
    $client = _client($client, 'reset_counters');
    (my $glob = $prefix) =~ s/([\\*?\[\]])/\\$1/g;
    my ($cursor, $n) = (0, 0);
    do {
        my $r = _ok_reply($client->cmd('SCAN', $cursor, 'MATCH', "$glob*",
                                       'COUNT', 1000), 'SCAN');
        $cursor = $r->[0];
        # MATCH is a glob: keep to keys that truly start with the prefix
        my @k = grep { index($_, $prefix) == 0 } @{ $r->[1] || [] };
        $n += _ok_reply($client->cmd('UNLINK', @k), 'UNLINK') if @k;
    } while ($cursor ne '0');
    return $n;
}

# restart_httpd(): stops the suite's httpd and starts it again (not a
# graceful restart: that keeps what lives in shared memory). Returns once
# the new one has written its pid and accepts connections.
sub restart_httpd {
    require Apache::Test;
    require IO::Socket::INET;
    my $cfg = Apache::Test::basic_config();
    my ($pidfile, $port) = @{ $cfg->{vars} }{qw(t_pid_file port)};
    forget_connections();
    if (defined(my $p = _pid_in($pidfile))) {
        kill 'TERM', $p;
        # the parent exits once its children have (a second or two)
        wait_for(sub { !kill 0, $p }, 20, 0.02)
            or croak "restart_httpd: httpd $p does not stop";
    }
    unlink $pidfile;
    # the runner's (Apache::TestRunRLaaS), or Apache::Test's own
    my $cmd = $ENV{RLAAS_KIT_HTTPD_START} || Apache::Test::config()->server->start_cmd;
    # (output read here: not into the test's TAP)
    my $out = `$cmd 2>&1`;
    croak "restart_httpd: '$cmd' failed: $out" if $?;
    wait_for(sub {
        my $p = _pid_in($pidfile);
        $p && kill(0, $p) && IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 1);
    }, 20, 0.02) or croak "restart_httpd: httpd does not answer on port $port after 20 s";
    return 1;
}

sub _pid_in {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    my $l = <$fh> // '';
    return $l =~ /(\d+)/ ? $1 : undef;
}

# now_ms(CLIENT): the time the limiter decides by, in ms: Redis' TIME, or
# this host's clock with the local backend.
sub now_ms {
    my ($client) = @_;
    return int(Time::HiRes::time() * 1000) if !$client && backend() eq 'local';
    my $t = _ok_reply(_client($client, 'now_ms')->cmd('TIME'), 'TIME');
    return int($t->[0] * 1000 + $t->[1] / 1000);
}
sub redis_time_ms { now_ms(@_) }

# wait_fixed_window(WINDOW_MS, NEED_MS, CLIENT): for fixed-window tests,
# makes sure at least NEED_MS remain in the current window (by the
# limiter's clock), sleeping into the next one otherwise. Returns the
# window's number.
sub wait_fixed_window {
    my ($window_ms, $need_ms, $client) = @_;
    my $now = now_ms($client);
    my $left = $window_ms - $now % $window_ms;
    if ($left < $need_ms) {
        Time::HiRes::sleep(($left + 50) / 1000);
        $now = now_ms($client);
    }
    return int($now / $window_ms);
}

# keys_like(GLOB, CLIENT): the keys matching a glob, sorted (SCAN, so it
# works whatever KEYS is renamed to).
sub keys_like {
    my ($pattern, $client) = @_;
    $client = _client($client, 'keys_like');
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

# ================================================================ requests

# A request, as the functions below take it:
#   '/path'                         GET on the suite's main server
#   { path => '/p', method => 'POST', headers => {...} or [...],
#     content => '...', auth => [user, password], vhost => 'name' }
#                                   (h is short for headers; vhost is an
#                                   Apache::Test virtual host's name)
#   sub { ... }                     anything else: returns an HTTP::Response
# send_request also takes the list form: send_request('/p', headers => ...)

sub _spec {
    my @a = @_;
    croak "a request: a path, a hashref or a code ref" unless @a && defined $a[0];
    return $a[0] if ref $a[0] eq 'CODE';
    return { %{ $a[0] } } if ref $a[0] eq 'HASH';
    my ($path, %o) = @a;
    return { %o, path => $path };
}

# hostport(VHOST): host:port of the suite's server, or of one of its
# Apache::Test virtual hosts. The configuration as t/TEST saved it is
# enough: Apache::Test::config() would read httpd's again, for each test
# file.
sub hostport {
    my ($vhost) = @_;
    require Apache::Test;
    my $cfg = Apache::Test::basic_config();
    if ($vhost && $vhost ne 'default') {
        my $hp = $cfg->{vhosts}{$vhost}{hostport}
            or croak "no virtual host '$vhost' in the Apache::Test configuration";
        return $hp;
    }
    return join ':', $cfg->{vars}{servername}, $cfg->{vars}{port};
}

sub basic_auth {
    my ($user, $pw) = @_;
    require MIME::Base64;
    return 'Basic ' . MIME::Base64::encode_base64("$user:$pw", '');
}

sub _headers {
    my ($s) = @_;
    my $h = $s->{headers} || $s->{h} || [];
    my @h = ref $h eq 'HASH' ? %$h : @$h;
    push @h, Authorization => basic_auth(@{ $s->{auth} }) if $s->{auth};
    return @h;
}

sub _url {
    my ($s) = @_;
    my $p = $s->{path} // croak "a request without a path";
    return $p if $p =~ m{^https?://};
    return 'http://' . hostport($s->{vhost}) . $p;
}

# describe_request(REQUEST): "GET /login" (on vhost NAME), for messages.
sub describe_request {
    my $s = _spec(@_);
    return 'the request (code)' if ref $s eq 'CODE';
    return ($s->{method} || 'GET') . " $s->{path}"
         . ($s->{vhost} && $s->{vhost} ne 'default' ? " on virtual host $s->{vhost}" : '');
}

my $UA;
# send_request(REQUEST): the HTTP::Response. Redirects are not followed;
# connections are kept alive between calls (forget_connections closes
# them).
sub send_request {
    my $s = _spec(@_);
    if (ref $s eq 'CODE') {
        my $res = $s->();
        croak "the request's code returned no HTTP::Response"
            unless ref $res && eval { $res->can('code') };
        return $res;
    }
    require LWP::UserAgent;
    require HTTP::Request;
    $UA ||= LWP::UserAgent->new(keep_alive => 4, timeout => 30,
                                max_redirect => 0, agent => 'Apache::TestRLaaS');
    my $rq = HTTP::Request->new($s->{method} || 'GET', _url($s), [_headers($s)],
                                $s->{content});
    return $UA->request($rq);
}

sub forget_connections {
    $UA->conn_cache->drop if $UA && $UA->conn_cache;
}

# codes(N, REQUEST...): the status codes of N requests in a row.
sub codes {
    my ($n, @req) = @_;
    my $s = _spec(@req);
    return map { send_request($s)->code } 1 .. $n;
}

sub hit { send_request(@_)->code }

# hits_until_denied(MAX, REQUEST...): the number of requests answered 200
# before the first 429, at most MAX; a text saying what happened instead.
sub hits_until_denied {
    my ($max, @req) = @_;
    my $s = _spec(@req);
    for my $i (0 .. $max) {
        my $c = send_request($s)->code;
        return $i if $c == 429;
        return "unexpected status $c after $i" if $c != 200;
    }
    return "no 429 within " . ($max + 1) . " requests";
}

# parallel_codes(N, REQUEST...): N requests in N forked clients at once;
# the sorted status codes.
sub parallel_codes {
    my ($n, @req) = @_;
    my $s = _spec(@req);
    return sort { $a cmp $b } parallel_requests(map { $s } 1 .. $n);
}

# parallel_requests(REQUEST, ...): one forked client per request (each a
# path with options in an arrayref, or a hashref), all released at the
# same moment; the status codes in request order.
sub parallel_requests {
    my @specs = map { ref $_ eq 'ARRAY' ? _spec(@$_) : _spec($_) } @_;
    my $go = Time::HiRes::time() + 0.2 + 0.02 * @specs;
    my @pipes;
    require HTTP::Tiny;
    for my $s (@specs) {
        my $url = _url($s);
        my @h = _headers($s);
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            my $ua = HTTP::Tiny->new(timeout => 30, max_redirect => 0);
            my $d = $go - Time::HiRes::time();
            Time::HiRes::sleep($d) if $d > 0;
            my $res = $ua->request($s->{method} || 'GET', $url,
                { headers => { @h }, defined $s->{content} ? (content => $s->{content}) : () });
            print $w $res->{status};
            close $w;
            require POSIX;
            POSIX::_exit(0);
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

# ================================================================ issue 28's limits

# parallel_hold(N, REQUEST): N forked clients that connect first, then send
# the same request at one moment (so all N are in flight together, however
# slowly the machine forks); each answer as { code, retry_after, headers
# (lower-case names), body }, in client order. A client that got no answer
# has code 599. Only a path or a hashref request (not code).
sub parallel_hold {
    my ($n, @req) = @_;
    croak "parallel_hold(N, REQUEST): N is a number" unless defined $n && $n =~ /^\d+$/;
    my $s = _spec(@req);
    croak "parallel_hold: a path or a hashref, not code" if ref $s eq 'CODE';
    my ($host, $port, $path) = _url($s) =~ m{^https?://\[?([^\]/]+?)\]?:(\d+)(/.*)?$}
        or croak "parallel_hold: " . _url($s) . " is not http://host:port/path";
    $path //= '/';
    my @h = _headers($s);
    my $head = ($s->{method} || 'GET') . " $path HTTP/1.0\r\nHost: $host:$port\r\n";
    while (my ($k, $v) = splice @h, 0, 2) { $head .= "$k: $v\r\n" }
    my $content = $s->{content} // '';
    $head .= "Content-Length: " . length($content) . "\r\n" if length $content;
    $head .= "Connection: close\r\n\r\n$content";
    require IO::Socket::IP;
    require POSIX;
    my $go = Time::HiRes::time() + 0.3 + 0.02 * $n;
    my @kids;
    for (1 .. $n) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            my $c = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Proto => 'tcp');
            my $d = $go - Time::HiRes::time();
            Time::HiRes::sleep($d) if $d > 0;
            my $all = '';
            if ($c) {
                print $c $head;
                local $/;
                $all = <$c> // '';
            }
            binmode $w;
            print $w $all;
            close $w;
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    my @out;
    for my $k (@kids) {
        my $fh = $k->[1];
        binmode $fh;
        local $/;
        my $all = <$fh> // '';
        waitpid $k->[0], 0;
        push @out, _parse_raw($all);
    }
    $? = 0;
    return @out;
}

sub _parse_raw {
    my ($all) = @_;
    my ($head, $body) = split /\r\n\r\n/, $all, 2;
    my ($code) = ($head // '') =~ m{^HTTP/\d\.\d (\d+)};
    my %h;
    for (split /\r\n/, $head // '') {
        $h{ lc $1 } = $2 if /^([^:\s]+):\s*(.*?)\s*$/;
    }
    my $ra = $h{'retry-after'};
    return { code => $code // 599, headers => \%h, body => $body // '',
             retry_after => defined $ra && $ra =~ /^\d+$/ ? $ra + 0 : undef };
}

# in_flight_limit_is(REQUEST, N, NAME, clients => M, status => 429):
# M clients (default 2N+5) send REQUEST, which must be slow (a CGI that
# sleeps: it must still run when the last client arrives), at one moment:
# exactly N are served (200) and every other one refused with STATUS and a
# Retry-After of at least 1. Returns the list of answers (parallel_hold's),
# or an empty list on failure.
sub in_flight_limit_is {
    my ($req, $n, $name, %o) = @_;
    croak "in_flight_limit_is(REQUEST, N, NAME): N is a number" unless defined $n && $n =~ /^\d+$/;
    my $m = $o{clients} // 2 * $n + 5;
    my $want = $o{status} // 429;
    croak "in_flight_limit_is: clients ($m) must be more than N ($n)" unless $m > $n;
    my $s = _spec($req);
    my $tb = _tb();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $name //= describe_request($s) . ": $n in flight at most";
    my @a = parallel_hold($m, $s);
    my @served = grep { $_->{code} == 200 } @a;
    my @refused = grep { $_->{code} == $want } @a;
    my @other = grep { $_->{code} != 200 && $_->{code} != $want } @a;
    my @no_ra = grep { !defined $_->{retry_after} || $_->{retry_after} < 1 } @refused;
    my @why;
    push @why, scalar(@served) . " served, not $n" if @served != $n;
    push @why, scalar(@other) . " answered neither 200 nor $want" if @other;
    push @why, scalar(@no_ra) . " refused without a Retry-After of at least 1 second" if @no_ra;
    push @why, "(fewer served: the request is too fast to stay in flight, or a counter "
        . "left by an earlier test; more: the limit does not apply here)" if @served != $n;
    my %count;
    $count{ $_->{code} }++ for @a;
    my $ok = !@why;
    $tb->ok($ok, $name) or $tb->diag(join "\n",
        describe_request($s) . ": expected $n of $m concurrent requests served, "
        . ($m - $n) . " refused with $want and Retry-After", @why,
        "statuses: " . join(', ', map { "$_ x$count{$_}" } sort keys %count));
    return $ok ? @a : ();
}

# bytes_quota_serves(REQUEST, TIMES, NAME): a byte quota lets REQUEST's
# file be downloaded TIMES times in full, then refuses it with 429 and a
# Retry-After; the first answer's RateLimit-Policy says the quota counts
# bytes (qu="content-bytes") and gives q=. Returns the 429 response, or
# false.
sub bytes_quota_serves {
    my ($req, $times, $name) = @_;
    croak "bytes_quota_serves(REQUEST, TIMES, NAME): TIMES is a number"
        unless defined $times && $times =~ /^\d+$/;
    my $s = _spec($req);
    my $tb = _tb();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $name //= describe_request($s) . ": $times downloads, then 429";
    my (@why, @codes, $last);
    for my $i (1 .. $times + 1) {
        my $res = send_request($s);
        $last = $res;
        push @codes, $res->code;
        if ($i == 1) {
            my $f = ratelimit_fields($res);
            if (!$f || !defined $f->{limit}) {
                push @why, "the first answer has no RateLimit-Policy with q= ("
                    . _fields_text($res) . ")";
            } elsif (($f->{unit} // '') ne 'content-bytes') {
                push @why, "its RateLimit-Policy does not count bytes (no "
                    . "qu=\"content-bytes\"): $f->{fields}";
            }
        }
        if ($i <= $times) {
            if ($res->code != 200) {
                push @why, "download $i was answered " . _status($res) . " after "
                    . ($i - 1) . " served", "its fields: " . _fields_text($res);
                last;
            }
            my $len = $res->header('Content-Length');
            my $got = length ${ $res->content_ref };
            if (defined $len && $len != $got) {
                push @why, "download $i is not whole: $got bytes of $len";
                last;
            }
            next;
        }
        if ($res->code != 429) {
            push @why, "download $i was answered " . _status($res) . ", not 429: more than "
                . "$times served", "its fields: " . _fields_text($res);
        } elsif (!defined retry_after($res) || retry_after($res) < 1) {
            push @why, "download $i was refused with 429 without a Retry-After of at least 1";
        }
    }
    my $ok = !@why;
    $tb->ok($ok, $name) or $tb->diag(join "\n",
        describe_request($s) . ": expected $times whole downloads, then 429 with Retry-After",
        @why, "statuses: @codes");
    return $ok ? $last : 0;
}

# period_end_in(RESPONSE): the seconds to the end of the limit's period as
# the response gives them: t= of RateLimit, else Retry-After, else
# X-RateLimit-Reset; undef without any.
sub period_end_in {
    my ($res) = @_;
    my $f = ratelimit_fields($res);
    return $f->{reset} + 0 if $f && defined $f->{reset} && defined $res->header('RateLimit');
    my $ra = retry_after($res);
    return $ra if defined $ra;
    return $f && defined $f->{reset} ? $f->{reset} + 0 : undef;
}

# next_midnight(ZONE, EPOCH): the epoch of the first midnight after EPOCH
# (default now) in the time zone ZONE (a tzdata name; default UTC): where a
# "1d calendar" period ends. Daylight-saving days are 23 or 25 hours long.
sub next_midnight {
    my ($zone, $epoch) = @_;
    $zone //= 'UTC';
    $epoch //= time;
    require POSIX;
    my $old = $ENV{TZ};
    local $ENV{TZ} = $zone;
    POSIX::tzset();
    my @t = localtime $epoch;
    # mday + 1 at 00:00:00, daylight saving left to mktime (isdst -1)
    my $m = POSIX::mktime(0, 0, 0, $t[3] + 1, $t[4], $t[5], 0, 0, -1);
    # (where 00:00 does not exist, mktime moves on to the day's first instant)
    if (defined $old) { $ENV{TZ} = $old } else { delete $ENV{TZ} }
    POSIX::tzset();
    return $m;
}

# ================================================================ fields

# ratelimit_fields(RESPONSE): what the response says of the limit, or
# undef when it carries no such field:
#   { remaining, reset, limit, window, policy, unit, fields }
# (unit: the policy's qu=, "content-bytes" for a byte quota)
# from the IETF draft fields (RateLimit: "name";r=..;t=.. and
# RateLimit-Policy: "name";q=..;w=..), else from X-RateLimit-Remaining,
# -Limit and -Reset; fields is the text of the fields found, for messages.
sub ratelimit_fields {
    my ($res) = @_;
    my $rl = $res->header('RateLimit');
    my $pol = $res->header('RateLimit-Policy');
    my %f;
    if (defined $rl) {
        $f{policy} = $1 if $rl =~ /^\s*"([^"]*)"/ || $rl =~ /^\s*([^;,\s]+)/;
        $f{remaining} = $1 if $rl =~ /;\s*r=(\d+)/;
        $f{reset} = $1 if $rl =~ /;\s*t=(\d+)/;
    }
    if (defined $pol) {
        $f{limit} = $1 if $pol =~ /;\s*q=(\d+)/;
        $f{window} = $1 if $pol =~ /;\s*w=(\d+)/;
        $f{policy} //= $1 if $pol =~ /^\s*"([^"]*)"/;
        $f{unit} = $1 if $pol =~ /;\s*qu="([^"]*)"/;
    }
    my ($xl, $xr, $xt) = map { scalar $res->header("X-RateLimit-$_") } qw(Limit Remaining Reset);
    $f{remaining} //= $xr if defined $xr && $xr =~ /^\d+$/;
    $f{limit} //= $xl if defined $xl && $xl =~ /^\d+$/;
    $f{reset} //= $xt if defined $xt && $xt =~ /^\d+$/;
    my @text = map { my $v = $res->header($_); defined $v ? "$_: $v" : () }
        qw(RateLimit RateLimit-Policy X-RateLimit-Limit X-RateLimit-Remaining X-RateLimit-Reset);
    return undef unless @text;
    $f{fields} = join '; ', @text;
    return \%f;
}

# retry_after(RESPONSE): its Retry-After in seconds, or undef when absent
# or not whole seconds.
sub retry_after {
    my $v = $_[0]->header('Retry-After');
    return defined $v && $v =~ /^\s*(\d+)\s*$/ ? $1 + 0 : undef;
}

# ================================================================ assertions

sub _tb { require Test::Builder; Test::Builder->new }

sub _status { my $r = shift; join ' ', $r->code, $r->message // '' }

sub _fields_text {
    my ($res) = @_;
    my $f = ratelimit_fields($res);
    return $f ? $f->{fields} : 'no RateLimit fields';
}

# allows_then_429(REQUEST, N, NAME): N requests allowed in a row (any
# answer but 429 and 5xx: a wrong password's 401 is allowed by the limit),
# then the next one refused with 429 and a Retry-After of whole seconds
# (at least 1). Returns the 429 response on success, false on failure.
sub allows_then_429 {
    my ($req, $n, $name) = @_;
    croak "allows_then_429(REQUEST, N, NAME): N is a number" unless defined $n && $n =~ /^\d+$/;
    my $s = _spec($req);
    my $tb = _tb();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $name //= describe_request($s) . ": $n allowed, then 429";
    my (@codes, @why, $last);
    for my $i (1 .. $n + 1) {
        my $res = send_request($s);
        $last = $res;
        push @codes, $res->code;
        if ($res->code >= 500) {
            push @why, "request $i was answered " . _status($res) . ": the limiter could "
                . "not decide, or the site failed (see the error_log)";
            last;
        }
        next if $i <= $n && $res->code != 429;
        if ($i <= $n) {
            my $ra = $res->header('Retry-After');
            push @why, "request $i was refused (429" . (defined $ra ? ", Retry-After: $ra" : '')
                . ") after " . ($i - 1) . " allowed",
                "its fields: " . _fields_text($res),
                "(a counter left by an earlier test? reset_counters() starts afresh)";
            last;
        }
        if ($res->code != 429) {
            push @why, "request $i was answered " . _status($res) . ", not 429: more than $n allowed",
                "its fields: " . _fields_text($res)
                . ($res->header('RateLimit') || $res->header('X-RateLimit-Remaining') ? ''
                   : ' (the path is not limited here, or RLaaSHeaders is off)');
            last;
        }
        my $ra = $res->header('Retry-After');
        if (!defined $ra) {
            push @why, "request $i was refused with 429 but carries no Retry-After field";
        } elsif ($ra !~ /^\s*\d+\s*$/ || $ra < 1) {
            push @why, "request $i was refused with 429, but its Retry-After '$ra' is not "
                . "a whole number of seconds of at least 1";
        }
    }
    my $ok = !@why;
    $tb->ok($ok, $name) or $tb->diag(join "\n",
        describe_request($s) . ": expected $n allowed, then 429 with Retry-After",
        @why, "statuses: @codes");
    return $ok ? $last : 0;
}

# remaining_is(REQUEST or RESPONSE, K, NAME): the response's RateLimit
# fields (or X-RateLimit-Remaining) say K remain. A request is sent first;
# a response is looked at as it is. Returns the response, or false.
sub remaining_is {
    my ($what, $k, $name) = @_;
    croak "remaining_is(REQUEST, K, NAME): K is a number" unless defined $k && $k =~ /^\d+$/;
    my $tb = _tb();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($res, $desc);
    if (ref $what && eval { $what->isa('HTTP::Response') }) {
        $res = $what;
        $desc = $res->request ? $res->request->method . ' ' . $res->request->uri->path_query
                              : 'the response';
    } else {
        $res = send_request($what);
        $desc = describe_request($what);
    }
    $name //= "$desc: $k remaining";
    my $f = ratelimit_fields($res);
    my @why;
    if (!$f || !defined $f->{remaining}) {
        push @why, "the response (" . _status($res) . ") has no RateLimit field nor "
            . "X-RateLimit-Remaining: the path is not limited here, or RLaaSHeaders is off";
    } elsif ($f->{remaining} != $k) {
        push @why, "it says $f->{remaining} remaining ($f->{fields})";
    }
    my $ok = !@why;
    $tb->ok($ok, $name) or $tb->diag(join "\n", "$desc: expected $k remaining", @why);
    return $ok ? $res : 0;
}

# is_exempt(REQUEST, N, NAME): N requests (default 20: give more than the
# limit that would apply), none refused, none with a server error, none
# carrying RateLimit or X-RateLimit fields (a limited path has them unless
# RLaaSHeaders is off there). Returns true or false.
sub is_exempt {
    my ($req, $n, $name) = @_;
    if (defined $n && $n !~ /^\d+$/) { ($n, $name) = (undef, $n) }
    $n //= 20;
    my $s = _spec($req);
    my $tb = _tb();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $name //= describe_request($s) . ": exempt";
    my (@why, @codes);
    for my $i (1 .. $n) {
        my $res = send_request($s);
        push @codes, $res->code;
        if ($res->code == 429) {
            my $ra = $res->header('Retry-After');
            push @why, "request $i was refused (429" . (defined $ra ? ", Retry-After: $ra" : '')
                . ")", "its fields: " . _fields_text($res);
            last;
        }
        if ($res->code >= 500) {
            push @why, "request $i was answered " . _status($res)
                . ": an exempt path is served whatever the limiter's state";
            last;
        }
        if (my $f = ratelimit_fields($res)) {
            push @why, "request $i (" . _status($res) . ") carries rate-limit fields, so "
                . "a limit applies: $f->{fields}";
            last;
        }
    }
    my $ok = !@why;
    $tb->ok($ok, $name) or $tb->diag(join "\n",
        describe_request($s) . ": expected exempt ($n requests, no 429, no RateLimit fields)",
        @why, "statuses: @codes");
    return $ok;
}

# ================================================================ small things

my $uid_n = 0;
# uid(TAG): a unique, key-safe identity for one test: TAG-pid-n-random.
sub uid {
    my $tag = shift || 'id';
    $uid_n++;
    return "$tag-$$-$uid_n-" . int(rand 1e6);
}

# wait_for(CODE, TIMEOUT, STEP): CODE's true value once it has one, 0
# after TIMEOUT seconds (default 5), trying every STEP (0.1).
sub wait_for {
    my ($cond, $timeout, $step) = @_;
    $timeout ||= 5; $step ||= 0.1;
    my $end = Time::HiRes::time() + $timeout;
    while (1) {
        my $ok = $cond->();
        return $ok if $ok;
        return 0 if Time::HiRes::time() > $end;
        Time::HiRes::sleep($step);
    }
}

sub free_port {
    require Apache::TestRLaaS::Redis;
    return Apache::TestRLaaS::Redis::free_port();
}

# default_prefix(T_DIR): rlaas-test:<8 hex digits naming the host, the user
# and the suite's directory>:
sub default_prefix {
    my ($tdir) = @_;
    require Digest::SHA;
    require Sys::Hostname;
    my $who = join "\0", Sys::Hostname::hostname(), $<, rel2abs($tdir);
    return 'rlaas-test:' . substr(Digest::SHA::sha1_hex($who), 0, 8) . ':';
}

1;

__END__

=head1 FUNCTIONS

Exported by default: C<allows_then_429>, C<remaining_is>, C<is_exempt>,
C<reset_counters>, C<send_request>, C<ratelimit_fields>, C<retry_after>.
The others on request, or all with C<:all>.

A I<request> is a path (C<'/login'>: GET on the suite's server), a hashref
C<< { path, method, headers => {...} or [...], content, auth => [user,
password], vhost } >> (C<vhost>: an Apache::Test virtual host's name), or
a code ref that returns an L<HTTP::Response> (a POST through
L<Apache::TestRequest>, say). Redirects are not followed.

=over

=item allows_then_429(REQUEST, N, NAME)

N requests are allowed in a row (any answer but 429 or a server error), then
the next is refused with 429 and a C<Retry-After> of whole seconds, at least
1. A failure says which request broke the pattern, what it was answered, the
fields it carried and every status seen:

    #   Failed test 'five attempts at /login, then 429'
    # GET /login: expected 5 allowed, then 429 with Retry-After
    # request 4 was refused (429, Retry-After: 300) after 3 allowed
    # its fields: RateLimit: "login";r=0;t=300; RateLimit-Policy: "login";q=5;w=300
    # (a counter left by an earlier test? reset_counters() starts afresh)
    # statuses: 401 401 401 429

Returns the 429 response when it passes (for more checks), false otherwise.

=item remaining_is(REQUEST or RESPONSE, K, NAME)

The RateLimit fields (or C<X-RateLimit-Remaining>) say K remain. Given a
request, sends it; given an L<HTTP::Response>, reads it. Returns the
response, or false.

=item is_exempt(REQUEST, N, NAME)

N requests (default 20; give more than the limit that would otherwise
apply): none answered 429 or a server error, none carrying a RateLimit or
X-RateLimit field.

=item reset_counters()

Every counter starts afresh: the keys under the suite's prefix are
deleted (Redis), or httpd is stopped and started (local backend). Call it
at the start of each test file, or between tests that share a counter.

=item send_request(REQUEST), codes(N, REQUEST), hits_until_denied(MAX, REQUEST), parallel_codes(N, REQUEST), parallel_requests(REQUEST, ...)

One response; N status codes in a row; the number answered 200 before the
first 429; N requests at the same moment from N processes (sorted codes);
several different ones at once (codes in order).

=item ratelimit_fields(RESPONSE), retry_after(RESPONSE)

C<< { remaining, reset, limit, window, policy, unit, fields } >> from the fields
of a response (undef without any), and C<Retry-After> in seconds.

=item in_flight_limit_is(REQUEST, N, NAME, clients => M, status => 429)

For C<RLaaSConcurrency N> (or C<concurrency=> of a policy): M clients
(default 2N+5) connect first, then send REQUEST at one moment; exactly N
are served (200) and the other M-N refused with C<status> (429, or 503 where
C<RLaaSConcurrencyStatus 503> is set) and a C<Retry-After> of at
least 1 second. REQUEST must stay in flight until the last client has
arrived: point it at something slow, e.g. a CGI that sleeps a second:

    in_flight_limit_is({ path => '/php/slow.php', vhost => 'shop' }, 10,
                       'ten PHP requests at a time per site', clients => 30);

A failure gives the counts and every status:

    # GET /slow: expected 3 of 10 concurrent requests served, 7 refused with 429 and Retry-After
    # 4 served, not 3
    # statuses: 200 x4, 429 x6

Returns every answer (as C<parallel_hold> gives them), or an empty list.
On a slow machine give the slow URL a generous sleep: a request that ends
before the last client sends its own frees its slot, and then more than N
are served, rightly.

=item parallel_hold(N, REQUEST)

N forked clients connect first, then send REQUEST at one moment (HTTP/1.0,
the connection closed after it); each answer as
C<< { code, retry_after, headers => { lower-case name => value }, body } >>,
in client order (code 599 when no answer came). A path or a hashref
request, not code.

=item bytes_quota_serves(REQUEST, TIMES, NAME)

For C<RLaaSCost bytes>: REQUEST (a file) is downloaded TIMES times in full
(each 200 with its whole C<Content-Length>), then refused with 429 and a
C<Retry-After>; the first answer's C<RateLimit-Policy> must count bytes
(C<qu="content-bytes">) and give C<q=>. A 1 MB file against a quota of
3 MB:

    reset_counters();
    bytes_quota_serves('/downloads/1mb.bin', 3, 'three downloads a minute');

Returns the 429 response, or false. C<ratelimit_fields> gives the policy's
C<qu=> as C<unit>.

=item period_end_in(RESPONSE), next_midnight(ZONE, EPOCH)

For calendar windows (C<RLaaSWindow 1d calendar>, C<RLaaSTimeZone>): the
seconds to the end of the period a response gives (C<t=> of C<RateLimit>,
else C<Retry-After>, else C<X-RateLimit-Reset>); and the epoch of the next
midnight after EPOCH (default now) in a tzdata zone (default UTC), 23 or
25 hours after the last on daylight-saving days. So a test can say that a
daily quota ends at midnight:

    my $res = send_request('/api/report');
    my $left = next_midnight('Europe/Paris') - time;
    cmp_ok(abs(period_end_in($res) - $left), '<=', 2, 'the quota ends at midnight in Paris');

To see a period end (the quota admitting again after midnight), a test
needs a clock it controls, not a wait for midnight: mod_rlaas' own suite
does it with a clock shim preloaded into httpd (t/calendar.t and t/tools
in mod_rlaas' sources); the kit does not provide one.

=item kit_redis(), now_ms(), wait_fixed_window(WINDOW_MS, NEED_MS), keys_like(GLOB)

The suite's Redis (L<Apache::TestRLaaS::Redis>: C<cmd>, C<stop>,
C<start_again> for tests of Redis outages); the limiter's clock in
milliseconds; for C<fixed> windows, wait until at least NEED_MS remain in
the current window; keys matching a glob.

=item uid(TAG), wait_for(CODE, TIMEOUT), free_port(), basic_auth(USER, PW), hostport(VHOST), forget_connections(), restart_httpd()

=back

=head1 IN A RUNNER OF YOUR OWN

    # t/TEST.PL
    use Apache::TestRunPerl ();
    use Apache::TestRLaaS ();
    Apache::TestRLaaS->setup(backend => 'redis');   # before the run
    Apache::TestRunPerl->new->run(@ARGV);

and the lines of L</DESCRIPTION> in t/conf/extra.conf.in (or
C<< Apache::TestRLaaS->add_config($test_config) >> from your runner's
C<new_test_config>). C<setup> options: C<backend>, C<prefix>, C<module>,
C<redis> (C<host:port> of a Redis to use), C<redis_options> (for
L<Apache::TestRLaaS::Redis/start>), C<mode> (C<run>, or C<start>,
C<attach>, C<stop> for C<t/TEST -start-httpd>, C<-run-tests>,
C<-stop-httpd>: L<Apache::TestRunRLaaS> picks it from the arguments).

=cut
