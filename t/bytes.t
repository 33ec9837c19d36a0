# RLaaSCost bytes (issue 28, part 3), on Redis and on the local engine:
# - a 1 MiB file against 3M an hour: served 3 times, the fourth refused
#   with 429, for fixed, sliding and sliding_log; RateLimit-Policy shows
#   the quota in bytes (qu="content-bytes"), RateLimit what is left;
# - a second identity is not charged for the first one's downloads;
# - rlaas_bytes_charged_total counts each response's bytes once;
# - a HEAD, a 304 and a range request are charged the body bytes they
#   sent (none, none, the range), a client that goes away mid-download
#   what httpd handed to the connection for it (a static file: all);
# - with RLaaSCountIf, only responses it counts are charged; a policy
#   the section applies counts requests, not bytes;
# - a size above 10^9 bytes (10G) is counted in KiB and shown in bytes;
# - RLaaSPolicy ... cost=bytes: a policy counting bytes, which a section's
#   RLaaSCost never changes; a section counting requests in a zone named
#   after it is undecided (one key never counts in two units);
# - a tenant's .htaccess counting bytes in a zone named like the
#   operator's spends its own counter, never the operator's; a tenant's
#   RLaaSCost never changes what the operator's bytes policy is charged;
# - apachectl -t refuses what can't work, naming directive and value.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Path qw(make_path);
use File::Spec::Functions qw(catfile);
use IO::Socket::INET ();
use JSON::PP ();
use Socket qw(SOL_SOCKET SO_RCVBUF);
use RLaaS::Test qw(:all);
use Apache::TestRLaaS ();

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $MIB = 1 << 20;
my $DIR = catfile(repo_top(), 't', 'htdocs', 'bytes');
make_path($DIR);
for my $f (['1m.bin', $MIB], ['small.txt', 1000]) {
    my $p = catfile($DIR, $f->[0]);
    next if -s $p && -s $p == $f->[1];
    open my $fh, '>', $p or die "$p: $!";
    print $fh 'x' x $f->[1];
    close $fh or die "$p: $!";
}

# put(DIR, NAME => CONTENT, ...): files of a tenant's tree under $DIR
sub put {
    my ($dir, %files) = @_;
    make_path(catfile($DIR, $dir));
    for my $name (sort keys %files) {
        my $p = catfile($DIR, $dir, $name);
        open my $fh, '>', $p or die "$p: $!";
        print $fh $files{$name};
        close $fh or die "$p: $!";
    }
}

# a tenant's .htaccess: its own byte quota, named like the operator's zone
put('tenant', '1m.bin' => 'x' x $MIB,
    '.htaccess' => "RLaaSLimit 3M\nRLaaSStrategy fixed\nRLaaSCost bytes\nRLaaSZone by-fixed\nRLaaSKeyBy header:X-User\n");
# ... one setting a cost of 1 under the operator's policy counting bytes
put('tenant-cost', '1m.bin' => 'x' x $MIB,
    '.htaccess' => "RLaaSLimit 1000000\nRLaaSWindow 1h\nRLaaSStrategy fixed\nRLaaSCost 1\nRLaaSZone t-cost\nRLaaSKeyBy header:X-User\n");
# ... and one over RLaaSLimitMax (10^9 by default) in bytes
put('tenant-big', '.htaccess' => "RLaaSLimit 1G\nRLaaSCost bytes\n");

# the main server's console: credit N (bytes) to identity U in zone by-big
sub credit_by_big {
    my ($u, $n) = @_;
    return req({ path => '/adm/console', method => 'POST',
                 content => "action=credit&zone=by-big&id=$u&n=$n",
                 auth => ['carol', 'carol-pw'],
                 headers => { 'Content-Type' => 'application/x-www-form-urlencoded',
                              Accept => 'application/json',
                              Origin => 'http://' . Apache::TestRLaaS::hostport() } });
}

my @BACKENDS = (['redis', undef], ['local', 'rlaas_by_local']);

sub get {
    my ($path, $u, $vh, %o) = @_;
    return req($path, h => { 'X-User' => $u, %{ $o{h} || {} } },
        ($vh ? (vhost => $vh) : ()), ($o{method} ? (method => $o{method}) : ()));
}
# what RateLimit says is left
sub left { ($_[0]->header('RateLimit') // '') =~ /;r=(\d+)/ ? $1 : 'none' }
# what is left once the response before was charged: the charge follows
# the response (log_transaction), so ask until it shows
sub left_after {
    my ($path, $u, $vh, $want) = @_;
    my $got;
    wait_for(sub { $got = left(get($path, $u, $vh, method => 'HEAD')); $got eq $want }, 5);
    return $got;
}

# what refuses a request with 500 and says why in the error log (at most
# one such line a second per child: ask until one is told)
sub refused_and_logged {
    my ($path, $u, $vh, $why, $what, $says) = @_;
    my $mark = error_log_mark();
    is get($path, $u, $vh)->code, 500, $what;
    ok wait_for(sub {
            get($path, $u, $vh);
            error_log_since($mark) =~ $why
        }, 10, 0.3),
        $says;
}

for my $be (@BACKENDS) {
    my ($name, $vh) = @$be;
    for my $s (qw(fixed sliding log)) {
        subtest "$name, $s: 1 MiB against 3M an hour: served 3 times, the fourth refused" => sub {
            wait_fixed_window(3_600_000, 10_000) if $s eq 'fixed' || $s eq 'sliding';
            my ($u, $v) = (uid("by-$name-$s"), uid("by-$name-$s-other"));
            my $url = "/by/$s/1m.bin";
            my @left;
            for my $i (1 .. 3) {
                my $res = get($url, $u, $vh);
                is $res->code, 200, "download $i: 200";
                is length($res->content), $MIB, "  all of it";
                push @left, left($res);
                # the next check must see this charge
                wait_for(sub { left(get($url, $u, $vh, method => 'HEAD')) == 3 * $MIB - $i * $MIB }, 5)
                    if $i < 3;
            }
            is "@left", join(' ', map { 3 * $MIB - $_ * $MIB } 0 .. 2),
                'RateLimit r= before each download: 3M, 2M, 1M';
            my $res;
            ok wait_for(sub { ($res = get($url, $u, $vh))->code == 429 }, 5), 'the fourth: 429';
            like $res->header('Retry-After') // '', qr/^\d+$/, '  with Retry-After';
            like $res->header('RateLimit-Policy') // '',
                qr/^"by-\Q$s\E";q=3145728;w=3600;qu="content-bytes"$/, '  RateLimit-Policy: in bytes';
            is left($res), 0, '  nothing left';
            my $other = get($url, $v, $vh);
            is $other->code, 200, 'another identity: served';
            is left($other), 3 * $MIB, '  its quota untouched';
        };
    }

    subtest "$name: HEAD, 304 and a range are charged what they sent" => sub {
        my $u = uid("by-$name-small");
        my $url = '/by/log/1m.bin';
        my $full = 3 * $MIB;
        my $res = get($url, $u, $vh, method => 'HEAD');
        is $res->code, 200, 'HEAD: 200';
        is left($res), $full, '  checked';
        is left_after($url, $u, $vh, $full), $full, '  no body: nothing charged';
        my $etag = $res->header('ETag');
        ok $etag, 'an ETag';
        $res = get($url, $u, $vh, h => { 'If-None-Match' => $etag });
        is $res->code, 304, 'If-None-Match: 304';
        is left_after($url, $u, $vh, $full), $full, '  no body: nothing charged';
        $res = get($url, $u, $vh, h => { Range => 'bytes=0-99' });
        is $res->code, 206, 'a range: 206';
        is length($res->content), 100, '  100 bytes';
        is left_after($url, $u, $vh, $full - 100), $full - 100, '  100 bytes charged';
        $res = get('/by/log/small.txt', $u, $vh);
        is $res->code, 200, 'a small file';
        is left_after($url, $u, $vh, $full - 1100), $full - 1100, '  its 1000 bytes charged';
    };

    subtest "$name: rlaas_bytes_charged_total counts the bytes charged" => sub {
        wait_fixed_window(3_600_000, 10_000);
        my $u = uid("by-$name-metric");
        my $m0 = metrics();
        is get('/by/both/small.txt', $u, $vh)->code, 200, '1000 bytes, to two byte quotas';
        is get('/by/log/1m.bin', $u, $vh, h => { Range => 'bytes=0-99' })->code, 206, '100 bytes';
        is get('/by/log/1m.bin', $u, $vh, method => 'HEAD')->code, 200, 'a HEAD: none';
        my $d;
        ok wait_for(sub { $d = mdelta($m0, metrics(), 'rlaas_bytes_charged_total'); $d >= 1100 }, 5),
            'rlaas_bytes_charged_total rose';
        is $d, 1100, '  by the bytes sent, each response once';
        like get('/by/both/small.txt', $u, $vh, method => 'HEAD')->header('RateLimit') // '',
            qr/"by-pol";r=2096152;/, '  the policy was charged the 1000 bytes too';
        is mdelta($m0, metrics(), 'rlaas_bytes_lost_total'), 0, 'rlaas_bytes_lost_total: none lost';
    };

    subtest "$name: RLaaSCountIf: only the responses it counts are charged" => sub {
        my $u = uid("by-$name-ci");
        my $url = '/by/countif/1m.bin';
        is get($url, $u, $vh, h => { Range => 'bytes=0-99' })->code, 206, 'a range: 206';
        is left_after($url, $u, $vh, 3 * $MIB), 3 * $MIB, '  not counted: nothing charged';
        is get($url, $u, $vh)->code, 200, 'a download: 200';
        is left_after($url, $u, $vh, 2 * $MIB), 2 * $MIB, '  counted: its bytes charged';
    };

    subtest "$name: a policy the section applies counts requests, not bytes" => sub {
        my $u = uid("by-$name-applied");
        my $url = '/by/applied/small.txt';
        is join(' ', map { get($url, $u, $vh)->code } 1 .. 5), '200 200 200 200 200',
            'five requests of 1000 bytes under a policy of 5 requests';
        my $res = get($url, $u, $vh);
        is $res->code, 429, 'the sixth: 429 (the policy)';
        like $res->header('RateLimit-Policy') // '', qr/"by-requests";q=5;w=3600(?:,|$)/,
            '  the policy in requests';
        like $res->header('RateLimit-Policy') // '', qr/"by-applied";q=3145728;w=3600;qu="content-bytes"/,
            '  the section in bytes';
        like $res->header('RateLimit') // '', qr/^"by-requests";r=0;/, '  the policy refused';
    };

    subtest "$name: RLaaSPolicy cost=bytes: a policy counting bytes" => sub {
        wait_fixed_window(3_600_000, 10_000);
        my ($u, $v) = (uid("by-$name-pol"), uid("by-$name-pol-other"));
        my $url = '/by/policy/1m.bin';
        my $res = get($url, $u, $vh);
        is $res->code, 200, 'download 1: 200';
        like $res->header('RateLimit-Policy') // '', qr/"by-pol";q=2097152;w=3600;qu="content-bytes"/,
            '  RateLimit-Policy: the policy in bytes';
        like $res->header('RateLimit-Policy') // '', qr/"by-pol-req";q=1000000000;w=3600(?:,|$)/,
            "  and the section's own limit in requests";
        ok wait_for(sub { ($res = get($url, $u, $vh, method => 'HEAD'))->header('RateLimit') =~ /"by-pol";r=1048576;/ }, 5),
            '  1 MiB charged to the policy'
            or diag $res->header('RateLimit');
        is get($url, $u, $vh)->code, 200, 'download 2: 200';
        ok wait_for(sub { ($res = get($url, $u, $vh))->code == 429 }, 5), 'the third: 429';
        like $res->header('RateLimit') // '', qr/^"by-pol";r=0;/, '  the policy refused';
        # the section's own limit: cost 2 per request, the policy's bytes
        # never took that cost (its check is a check)
        $res = get('/by/policy/small.txt', $v, $vh);
        is $res->code, 200, 'another identity: served';
        like $res->header('RateLimit') // '', qr/"by-pol";r=2097152;/, '  its byte quota untouched';
        ok wait_for(sub { (get($url, $v, $vh, method => 'HEAD')->header('RateLimit') // '') =~ /"by-pol";r=2096152;/ }, 5),
            '  its 1000 bytes charged, not a cost of 2';
    };

    subtest "$name: a zone named after a policy counting bytes, in requests: undecided" => sub {
        my $u = uid("by-$name-clash");
        refused_and_logged('/by/clash/small.txt', $u, $vh, qr/a zone named after a policy counts in another unit/,
            'refused with 500 (RLaaSFailOpen off)', 'the error log says why');
        like get('/by/policy/small.txt', $u, $vh)->header('RateLimit') // '', qr/"by-pol";r=2097152;/,
            "the policy's byte counter untouched";
    };

    subtest "$name: 10G a day: counted in KiB, shown in bytes" => sub {
        my $u = uid("by-$name-big");
        my $url = '/by/big/1m.bin';
        my $res = get($url, $u, $vh);
        is $res->code, 200, 'a download';
        like $res->header('RateLimit-Policy') // '', qr/^"by-big";q=10737418240;w=86400;qu="content-bytes"$/,
            'RateLimit-Policy: q in bytes';
        is left($res), 10 * 1024 * $MIB, '  all left before';
        is left_after($url, $u, $vh, 10 * 1024 * $MIB - $MIB), 10 * 1024 * $MIB - $MIB, '  1 MiB charged';
        get('/by/big/small.txt', $u, $vh);
        is left_after($url, $u, $vh, 10 * 1024 * $MIB - $MIB - 1024), 10 * 1024 * $MIB - $MIB - 1024,
            '  1000 bytes: one KiB charged (rounded up)';
        return unless $name eq 'redis';    # the main server's console
        # the console's credit, in bytes: whole KiB given back
        my $res = credit_by_big($u, 525000);
        is $res->code, 200, "the console's credit on a zone counting bytes";
        like $res->content, qr/"524288 of 525000 bytes given back"/, '  n in bytes, given back in whole KiB (512)';
        is left_after($url, $u, $vh, 10 * 1024 * $MIB - $MIB / 2 - 1024), 10 * 1024 * $MIB - $MIB / 2 - 1024,
            '  RateLimit shows them back';
        $res = credit_by_big($u, 1000);
        is $res->code, 400, '  less than one KiB: refused (400)';
        like $res->content, qr/a whole number of bytes from 1024 \(one unit of zone by-big\)/, '  saying why';
        # the console says what each row's limit counts
        $res = req('/adm/console', auth => ['carol', 'carol-pw'], h => { Accept => 'application/json' });
        my %counts = map { ("$_->{name} $_->{kind}" => $_->{counts}) }
            @{ JSON::PP::decode_json($res->content)->{zones} };
        is_deeply([@counts{'by-big zone', 'by-pol policy', 'by-requests policy'}], [qw(bytes bytes requests)],
            'the console: a zone and a policy counting bytes say so, one counting requests too');
        like req('/adm/console', auth => ['carol', 'carol-pw'])->content,
            qr{<tr data-zone="by-big" data-kind="zone"><td>by-big</td><td>[^<]*</td><td>zone \(bytes\)</td>},
            '  and its page';
    };

    subtest "$name: a client that goes away mid-download" => sub {
        my $u = uid("by-$name-abort");
        my $url = '/by/log/1m.bin';
        my $hp = Apache::TestRLaaS::hostport($vh);
        my $sock = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 10) or die "connect $hp: $!";
        setsockopt($sock, SOL_SOCKET, SO_RCVBUF, 4096);
        my ($host) = $hp =~ /^([^:]+)/;
        print $sock "GET $url HTTP/1.1\r\nHost: $host\r\nX-User: $u\r\nConnection: close\r\n\r\n";
        my $got = '';
        while (length($got) < 65536) {
            my $n = sysread($sock, $got, 65536, length $got);
            last unless $n;
        }
        like $got, qr/^HTTP\/1\.1 200/, 'the download started';
        close $sock;
        my $left;
        ok wait_for(sub { $left = left(get($url, $u, $vh, method => 'HEAD')); $left ne 'none' && $left < 3 * $MIB }, 10),
            'charged once httpd is done with it';
        # r->bytes_sent: the body httpd handed to the connection, which
        # for a static file is all of it, however little the client read
        is $left, 2 * $MIB, '  the whole file (the body httpd handed over)';
    };

    subtest "$name: a tenant's byte quota never lands on the operator's counter" => sub {
        wait_fixed_window(3_600_000, 10_000);
        my $u = uid("by-$name-tenant");
        is get('/bytes/tenant/1m.bin', $u, $vh)->code, 200, "the tenant's download";
        is left_after('/bytes/tenant/1m.bin', $u, $vh, 2 * $MIB), 2 * $MIB, '  charged to the tenant';
        is left(get('/by/fixed/1m.bin', $u, $vh, method => 'HEAD')), 3 * $MIB,
            "the operator's zone of the same name: untouched";
        # a tenant's RLaaSCost under the operator's policy counting bytes:
        # the policy is charged the bytes sent, never the tenant's cost
        my $c = uid("by-$name-tcost");
        my $res = get('/bytes/tenant-cost/1m.bin', $c, $vh);
        is $res->code, 200, "a download under the tenant's RLaaSCost 1";
        like $res->header('RateLimit-Policy') // '', qr/"by-pol";q=2097152;w=3600;qu="content-bytes"/,
            "  the operator's policy still counts bytes";
        # read where the policy is the one shown (the section's own limit
        # there is large)
        ok wait_for(sub { ($res = get('/by/policy/small.txt', $c, $vh, method => 'HEAD'))->header('RateLimit') =~ /"by-pol";r=1048576;/ }, 5),
            '  1 MiB charged to it, not a cost of 1'
            or diag $res->header('RateLimit');
        refused_and_logged('/bytes/tenant-big/x', $u, $vh, qr/RLaaSLimit: invalid value '1G' in \.htaccess/,
            'RLaaSLimit 1G in a .htaccess: 500', '  the error log names directive and value');
    };

    subtest "$name: a bucket inherited by a section counting bytes: 500, logged" => sub {
        my $u = uid("by-$name-bucket");
        refused_and_logged('/by/bucket/bytes/1m.bin', $u, $vh,
            qr/RLaaSCost bytes counts with the fixed, sliding or sliding_log strategy, not gcra/,
            'refused with 500', 'the error log says why');
    };
}

subtest 'apachectl -t' => sub {
    my $loc = sub { "<Location /x>\n" . join('', map { "    $_\n" } @_) . "</Location>\n" };
    config_accepted($loc->('RLaaSLimit 10G', 'RLaaSWindow 1d', 'RLaaSCost bytes'), '10G a day');
    config_accepted($loc->('RLaaSLimit 3M', 'RLaaSStrategy fixed', 'RLaaSCost bytes'), '3M, fixed');
    config_accepted($loc->('RLaaSCost BYTES', 'RLaaSLimit 500'), 'a plain number of bytes, keyword in capitals');
    config_accepted($loc->('RLaaSLimit 5', 'RLaaSCost 2'), 'requests as before');
    for my $st (qw(token leaky gcra)) {
        config_refused($loc->('RLaaSLimit 3M', 'RLaaSCost bytes', "RLaaSStrategy $st"),
            qr/RLaaSStrategy: invalid value '\Q$st\E': RLaaSCost bytes counts with the fixed, sliding or sliding_log strategy/,
            "bytes, then $st");
        config_refused($loc->("RLaaSStrategy $st", 'RLaaSLimit 3M', 'RLaaSCost bytes'),
            qr/RLaaSCost: invalid value 'bytes': RLaaSCost bytes counts with .* not \Q$st\E/, "$st, then bytes");
    }
    config_refused($loc->('RLaaSCost 2', 'RLaaSLimit 3M'),
        qr/RLaaSLimit: invalid value '3M': RLaaSLimit is a size .* needs RLaaSCost bytes/, 'a size counting requests');
    config_refused($loc->('RLaaSLimit 3M', 'RLaaSCost 2'),
        qr/RLaaSCost: invalid value '2': RLaaSLimit is a size/, 'the same, the other way round');
    config_refused($loc->('RLaaSLimit 2000G', 'RLaaSCost bytes'),
        qr/RLaaSLimit: invalid value '2000G': expected a size from 1K to 953G/, 'too big');
    config_refused($loc->('RLaaSLimit 3X', 'RLaaSCost bytes'),
        qr/RLaaSLimit: invalid value '3X'/, 'no such suffix');
    config_refused($loc->('RLaaSLimit 3M', 'RLaaSCost byte'),
        qr/RLaaSCost: invalid value 'byte': expected .*bytes/, 'RLaaSCost byte');
    # RLaaSPolicy cost=bytes
    config_accepted("RLaaSPolicy dl 10G 1d calendar cost=bytes key=\"header:X-Site\"\n", 'a policy: 10G a calendar day');
    config_accepted("RLaaSPolicy dl 500 1h cost=BYTES strategy=sliding\n", 'a policy: a plain number of bytes');
    config_refused("RLaaSPolicy dl 3M 1h\n",
        qr/RLaaSPolicy dl: invalid limit '3M': a size \(K, M or G\) counts bytes: it needs cost=bytes/,
        'a policy: a size counting requests');
    config_refused("RLaaSPolicy dl 3M 1h cost=bytes strategy=gcra\n",
        qr/RLaaSPolicy dl: invalid value 'strategy=gcra': cost=bytes counts with the fixed, sliding or sliding_log strategy/,
        'a policy: bytes in a bucket');
    config_refused("RLaaSPolicy dl 2000G 1d cost=bytes\n",
        qr/RLaaSPolicy dl: invalid limit '2000G': expected a size from 1K to 953G/, 'a policy: too big');
    config_refused("RLaaSPolicy dl 3M 1h cost=bytes cost=2\n",
        qr/RLaaSPolicy dl: invalid value 'cost=2': the policy counts bytes \(cost=bytes\); expected one cost/,
        'a policy: cost=bytes, then cost=2');
    config_refused("RLaaSPolicy dl 300 1h cost=2 cost=bytes\n",
        qr/RLaaSPolicy dl: invalid value 'cost=bytes': cost=2 is set already; expected one cost/,
        'a policy: cost=2, then cost=bytes');
    config_refused("RLaaSPolicy dl 3M 1h cost=5\n",
        qr/RLaaSPolicy dl: invalid limit '3M': a size \(K, M or G\) counts bytes: it needs cost=bytes/,
        'a policy: a size with cost=5');
    config_refused("RLaaSPolicy dl 3M 1h cost=byte\n",
        qr/RLaaSPolicy dl: invalid value 'cost=byte': expected a cost from 0 to the limit .* or cost=bytes/,
        'a policy: cost=byte');
};

done_testing();
