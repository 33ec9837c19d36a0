#!/usr/bin/perl
# fuzz/http/drive.pl - the request mix for the memory checks.
#
#   drive.pl [--requests N] [--procs P] [--seed S] [--phase NAME]
#            [--mix all|main|faults|junk] [--stats FILE]
#
# Sends N requests (over P processes) to the httpd of fuzz/http/httpd.conf,
# whose ports come from the RLAAS_CK_PORT* environment variables. Requests
# are written byte for byte on raw sockets, so they can carry what a real
# client could send but a polite HTTP library would refuse: header values of
# binary bytes or right at httpd's 8190-byte field limit, "%00" and broken
# escapes in query strings, ':' '{' '}' '*' in identities, obs-folded and
# duplicated headers, pipelined requests, bodies on denied requests.
#
# The mix is random but reproducible from --seed. Prints one line of
# counts (by status; "noresp" is a connection that closed without any
# response: a child that died) and, with --stats, appends it to FILE.
use strict;
use warnings;
use Getopt::Long;
use IO::Socket::INET;
use IO::Select;
use MIME::Base64 qw(encode_base64);

my %o = (requests => 1000, procs => 4, seed => 1, phase => 'mix',
         mix => 'all', stats => '');
GetOptions(\%o, 'requests=i', 'procs=i', 'seed=i', 'phase=s', 'mix=s',
           'stats=s') or die "usage: see the header of $0\n";

sub port { $ENV{"RLAAS_CK_PORT$_[0]"} or die "RLAAS_CK_PORT$_[0] not set\n" }
my %P = (main => port(''), bigkey => port('_BIGKEY'),
         badpass => port('_BADPASS'), acl => port('_ACL'),
         db99 => port('_DB99'), refused => port('_REFUSED'),
         unix => port('_UNIX'), junk => port('_JUNK'));

# ---------------------------------------------------------------- values
my @SAFE = ('a'..'z', 'A'..'Z', '0'..'9', '.', '-', '_', '@');
sub pick { $_[int rand @_] }
sub safe_str { join '', map { pick(@SAFE) } 1 .. $_[0] }

# Bytes a header value can carry on the wire: mostly what httpd lets
# through to modules (printable ASCII and obs-text 0x80-0xff), now and then
# control bytes too, which httpd answers with 400 itself (never CR, LF or
# NUL: those would end the field).
sub binary_str {
    my $n = shift;
    my $ctl = rand() < 0.1;
    join '', map {
        my $c;
        do { $c = int rand 256 }
            while $c == 10 || $c == 13 || $c == 0
            || (!$ctl && ($c < 32 || $c == 127));
        chr $c } 1 .. $n;
}

# A value for an identity source: what an attacker would try first.
sub hostile {
    my ($room) = @_;    # bytes left before the field-size limit
    $room //= 8000;
    my $r = rand;
    return pick(qw(alice bob u1 u2 u3 carol@example.org 203.0.113.9))
        if $r < 0.25;
    return safe_str(64) if $r < 0.30;    # longest raw segment
    return safe_str(65) if $r < 0.35;    # shortest hashed one
    return pick('victim:tb', '{slot}', '*', 'a:b:c:d', 'rlaas:rate_limit:alice',
                '~deadbeefdeadbeefdeadbeefdeadbeef', 'ip~127.0.0.1', '::1',
                '{a}:{b}*', "caf\xc3\xa9", '%00', 'a b', "a\tb", '"q"', '\\',
                'x' x 200, ':' x 100, '{' x 64, '')
        if $r < 0.60;
    return binary_str(1 + int rand 300) if $r < 0.80;
    # near the limit: some just fit, some are one byte over (400)
    my $n = $room + int(rand 7) - 4;
    $n = 1 if $n < 1;
    return rand() < 0.5 ? safe_str($n) : binary_str($n);
}

# %-encodes for a query string, with deliberate damage now and then.
sub qenc {
    my $v = shift;
    $v =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    my $r = rand;
    return $v . '%00x' if $r < 0.05;
    return '%00' . $v if $r < 0.10;
    return $v . '%zz' if $r < 0.15;
    return $v . '%' if $r < 0.20;
    return $v . '%4' if $r < 0.25;
    return "$v+plus" if $r < 0.30;
    return $v;
}

# Room left for a header value under LimitRequestFieldSize 8190.
sub room { 8190 - length($_[0]) - 2 }

# ---------------------------------------------------------------- requests
# Each generator returns [port name, request bytes without the final
# CRLF, optional body].
sub req {
    my ($method, $path, @h) = @_;
    my $s = "$method $path HTTP/1.1\r\nHost: localhost\r\n";
    $s .= "$_\r\n" for @h;
    return $s;
}

my @strategies = qw(fixed sliding-window-algo sliding token leaky gcra);
my @wide = qw(fixed_window token_bucket leaky_bucket sliding_log gcra-wide);

my @gen_main = (
    [30, sub { ['main', req('GET', '/rl/s/' . pick(@strategies),
                            'X-User: u' . int rand 10)] }],
    [4, sub { ['main', req('GET', '/rl/s/' . pick(@wide))] }],
    [4, sub { ['main', req('GET', '/rl/k/ip')] }],
    [5, sub {
        my $cred = pick('alice:secret', 'alice:wrong', 'nobody:x', ':', '',
                        binary_str(40));
        my @h = rand() < 0.2 ? ('Authorization: Basic ' . binary_str(30))
              : ('Authorization: Basic ' . encode_base64($cred, ''));
        @h = () if rand() < 0.1;
        ['main', req('GET', pick('/rl/k/user', '/rl/k/user-noauth'), @h)] }],
    [5, sub { ['main', req('GET', '/rl/k/api_key',
                           'X-API-Key: ' . hostile(room('X-API-Key: ')))] }],
    [8, sub { ['main', req('GET', '/rl/k/header',
                           'X-User: ' . hostile(room('X-User: ')))] }],
    [3, sub { ['main', req('GET', '/rl/k/authz',
                           'Authorization: ' . hostile(room('Authorization: ')))] }],
    [6, sub {
        my $v = hostile(room('Cookie: session='));
        $v =~ tr/;//d;
        my @h = pick("Cookie: session=$v", "Cookie: a=1; session=$v; b=2",
                     "Cookie: session=$v; session=other", 'Cookie: session',
                     'Cookie: =;;;session=;', "Cookie: $v",
                     'Cookie: ' . join('; ', map { "c$_=" . safe_str(20) } 1 .. 200));
        push @h, 'Cookie: session=second' if rand() < 0.2;
        ['main', req('GET', '/rl/k/cookie', @h)] }],
    [6, sub {
        my $v = qenc(hostile(3000));
        my $q = pick("tenant=$v", "x=1&tenant=$v", "tenant=$v&tenant=b",
                     'tenant', 'tenant=', '&&&tenant=%00', "tenantx=$v",
                     '=' . $v, "tenant=$v#frag");
        # the request line, too, up to and just past its limit
        if (rand() < 0.1) {
            my $fix = length("GET /rl/k/query?tenant= HTTP/1.1");
            $q = 'tenant=' . safe_str(8190 - $fix + int(rand 5) - 3);
        }
        ['main', req('GET', "/rl/k/query?$q")] }],
    [3, sub { ['main', req('GET', '/rl/k/env',
                           'X-Plan: ' . hostile(room('X-Plan: ')))] }],
    [4, sub { ['main', req(pick('GET', 'POST', 'PUT', 'X-' . safe_str(8)),
                           '/rl/k/expr?' . qenc(hostile(200)),
                           'Content-Length: 0',
                           'X-Tenant: ' . hostile(room('X-Tenant: ')))] }],
    [4, sub { ['main', req('GET', '/rl/k/multi?tenant=' . qenc(hostile(100)),
                           'X-User: ' . hostile(1000),
                           'Cookie: session=' . safe_str(10),
                           'X-API-Key: ' . hostile(1000))] }],
    [2, sub { ['main', req('GET', '/rl/k/exempt', 'X-User: ex',
                           'X-Exempt: ' . pick('yes', 'no'))] }],
    [1, sub { ['main', req('GET', '/rl/free')] }],
    [8, sub {
        my $path = pick('/rl/deny', '/rl/deny-errdoc', '/rl/deny-errtext');
        my $u = 'X-User: d' . int rand 4;
        my $r = rand;
        return ['main', req('HEAD', $path, $u)] if $r < 0.2;
        return ['main', req('OPTIONS', $path, $u)] if $r < 0.25;
        if ($r < 0.5) {    # a body the 429 must read off the connection
            my $body = binary_str(int rand 5000);
            return ['main', req('POST', $path, $u,
                                'Content-Length: ' . length $body), $body];
        }
        if ($r < 0.6) {
            my $body = "5\r\nhello\r\n0\r\n\r\n";
            return ['main', req('POST', $path, $u,
                                'Transfer-Encoding: chunked'), $body];
        }
        ['main', req('GET', $path, $u)] }],
    [3, sub { ['main', req('GET', pick('/rl/h/off', '/rl/dry', '/rl/open'),
                           'X-User: h' . int rand 3)] }],
    [2, sub { ['main', req(pick('GET', 'GET', 'HEAD', 'POST'),
                           pick('/metrics', '/server-status',
                                '/server-status?auto'), 'Content-Length: 0')] }],
    [4, sub {
        my @h = map { "X-$_: " . (rand() < 0.5 ? safe_str(64) : hostile(500)) }
            qw(A B C D E F);
        ['bigkey', req('GET', '/rl/big?q=' . safe_str(64), @h,
                       'X-H: ' . safe_str(64))] }],
    [2, sub {    # malformed and odd requests: httpd refuses most of them
        my $r = rand;
        return ['main', "GET /rl/k/header HTTP/1.1\nHost: x\nX-User: lf\n"]
            if $r < 0.2;
        return ['main', "GET /rl/k/header HTTP/1.0\r\nX-User: old\r\n"]
            if $r < 0.4;
        return ['main', req('GET', '/rl/k/header', "X-User: fold\r\n\tcontinued")]
            if $r < 0.6;
        return ['main', req('GET', '/rl/k/header', "X-User: nul\0byte")]
            if $r < 0.7;
        return ['main', req('GET', 'http://localhost/rl/k/ip')] if $r < 0.8;
        ['main', req('GET', '/rl/k/header',
                     map { "X-Many-$_: " . safe_str(10) } 1 .. 120)] }],
    [1, sub { ['main', req('GET', '/nothing/here')] }],
    # TRACE, decided in map_to_storage (rlaas_trace.c): limited, denied,
    # banned, keyed by a user it claims, hostile identities
    [3, sub {
        my @h = ('X-User: ' . pick('d' . int rand 4, hostile(300)));
        push @h, 'Authorization: Basic ' . encode_base64(pick('alice:x', binary_str(20)), '')
            if rand() < 0.3;
        ['main', req('TRACE', pick('/rl/deny', '/rl/deny-errdoc', '/rl/k/user',
                                   '/rl/o/ban', '/rl/s/' . pick(@strategies),
                                   '/rl/k/header', '/rl/free'), @h)] }],
    # counting by outcome, bans, leases: hostile identities too
    [6, sub { ['main', req('GET', '/rl/o/' . pick('countif', 'ban', 'lease'),
                           'X-User: ' . (rand() < 0.8 ? 'o' . int rand 4 : hostile(200)),
                           rand() < 0.3 ? ('X-Free: 1') : ())] }],
    # the console: the page, its JSON, and actions with hostile ids
    [2, sub {
        return ['main', req('GET', '/ck-console', pick('Accept: application/json', 'Accept: text/html'))]
            if rand() < 0.5;
        my $body = 'action=' . pick('reset', 'unban', 'credit', qenc(hostile(20)))
            . '&zone=' . pick('', 'x', qenc(hostile(30))) . '&id=' . qenc(rand() < 0.5 ? 'o1' : hostile(100))
            . '&n=' . pick('1', '-1', '99999999999', qenc(hostile(10)));
        ['main', req('POST', '/ck-console', 'Origin: http://localhost',
                     'Content-Type: application/x-www-form-urlencoded',
                     'Content-Length: ' . length $body), $body] }],
);

my @gen_faults = (
    [3, sub { [pick('badpass', 'db99', 'refused'),
               req('GET', pick('/rl/x', '/rl/open'), 'X-User: f' . int rand 5)] }],
    [2, sub { [pick('acl', 'unix'),
               req('GET', '/rl/x', 'X-User: ' . hostile(500))] }],
    # RLaaSFailOpen local: the local engine's table, full and evicting
    [3, sub { ['refused', req('GET', '/rl/local/' . pick(@strategies),
               'X-User: ' . (rand() < 0.5 ? 'l' . int rand 5 : hostile(200)))] }],
    [1, sub {
        my @h = map { "X-$_: " . (rand() < 0.5 ? safe_str(64) : hostile(500)) }
            qw(A B C D E F H);
        ['refused', req('GET', '/rl/local-big?q=' . safe_str(rand() < 0.5 ? 5 : 64), @h)] }],
);
my @gen_junk = (
    [1, sub { ['junk', req('GET', pick('/rl/x', '/rl/open'),
                           'X-User: j' . int rand 5)] }],
);

my @gens = $o{mix} eq 'main'   ? @gen_main
         : $o{mix} eq 'faults' ? (@gen_faults)
         : $o{mix} eq 'junk'   ? (@gen_junk)
         : (@gen_main, @gen_faults, @gen_junk);
my $total_w = 0;
$total_w += $_->[0] for @gens;

sub one_request {
    my $x = rand $total_w;
    for my $g (@gens) {
        return $g->[1]->() if ($x -= $g->[0]) < 0;
    }
    return $gens[-1][1]->();
}

# Sends one connection's worth of requests (usually one, sometimes three
# pipelined with keep-alive) and reads to EOF. Returns the status codes,
# or 'noresp' for each request when nothing came back.
sub session {
    my $n = rand() < 0.15 ? 3 : 1;
    my @reqs = map { one_request() } 1 .. $n;
    # every request of a pipelined session goes to the first one's port
    my $port = $P{ $reqs[0][0] };
    my $out = '';
    for my $i (0 .. $#reqs) {
        my ($name, $head, $body) = @{ $reqs[$i] };
        my $nl = $head =~ /\r\n/ ? "\r\n" : "\n";
        $head .= "Connection: close$nl" if $i == $#reqs;
        $out .= $head . $nl . ($body // '');
    }
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Proto => 'tcp', Timeout => 5);
    return ('connect_failed') x $n unless $s;
    binmode $s;
    local $SIG{PIPE} = 'IGNORE';
    syswrite $s, $out;
    my ($in, $buf) = ('', '');
    my $sel = IO::Select->new($s);
    while ($sel->can_read(20)) {
        my $got = sysread $s, $buf, 65536;
        last unless $got;
        $in .= $buf;
    }
    close $s;
    my @st = $in =~ /^HTTP\/1\.[01] (\d{3})/mg;
    # httpd may answer a broken first request and close: the rest of the
    # pipeline is not a lost response
    return @st ? @st : ('noresp') x 1;
}

# ---------------------------------------------------------------- run
my $per = int(($o{requests} + $o{procs} - 1) / $o{procs});
my @kids;
pipe(my $rd, my $wr) or die "pipe: $!";
for my $w (1 .. $o{procs}) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        srand($o{seed} * 1000 + $w);
        my %c;
        my $sent = 0;
        while ($sent < $per) {
            my @st = session();
            $c{$_}++ for @st;
            $sent += @st;
        }
        print $wr join(' ', map { "$_=$c{$_}" } sort keys %c), "\n";
        close $wr;
        exit 0;
    }
    push @kids, $pid;
}
close $wr;
my %c;
while (my $line = <$rd>) {
    for (split ' ', $line) {
        my ($k, $v) = split /=/;
        $c{$k} += $v;
    }
}
waitpid $_, 0 for @kids;
my $total = 0;
$total += $c{$_} for keys %c;
$c{noresp} //= 0;
my $line = "phase=$o{phase} requests=$total "
    . join(' ', map { "$_=$c{$_}" } sort keys %c);
print "$line\n";
if ($o{stats}) {
    open my $f, '>>', $o{stats} or die "$o{stats}: $!";
    print $f "$line\n";
}
exit 0;
