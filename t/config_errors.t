# Configuration checking (`apache2 -t` on small self-contained configs that
# load the built module): bad values are refused with a message naming the
# directive and the value; server-only directives are refused in
# per-directory sections; every documented good form is accepted, and
# nothing about Redis is checked at start-up.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not built' unless have_module();

sub in_location { "<Location /x>\n    RLaaSLimit 5\n    $_[0]\n</Location>\n" }

# [directive, argument as written, context]
my @bad = (
    (map { ['RLaaSLimit', $_, 'dir'] } qw(0 -1 abc 1000000001 1.5 10x 99999999999999999999)),
    (map { ['RLaaSWindow', $_, 'dir'] } qw(abc 0 12x -5s 0s 1.5s 5w ms)),
    (map { ['RLaaSStrategy', $_, 'dir'] } qw(bogus fixed-window sliding-log FIXED_WINDOW_X)),
    (map { ['RLaaSKeyBy', $_, 'dir'] } qw(bogus header: cookie: query: env:), 'ip,user', 'expr='),
    ['RLaaSKeyBy', '"expr=%{"', 'dir', 'expr=%{'],
    ['RLaaSKeyBy', '"header:X Y"', 'dir', 'header:X Y'],
    (map { ['RLaaSZone', $_, 'dir'] } '"a:b"', '"a b"', '"{tag}"', 'z' x 65),
    (map { ['RLaaSRedis', $_, 'server'] }
        qw(127.0.0.1:notaport 127.0.0.1:70000 127.0.0.1:0 127.0.0.1: unix: [::1 [::1]:x), '""'),
    (map { ['RLaaSRedisDatabase', $_, 'server'] } qw(-1 abc 1.5)),
    (map { ['RLaaSRedisTimeout', $_, 'server'] } qw(abc 0 -5s 12x)),
    (map { ['RLaaSRedisPoolMax', $_, 'server'] } qw(0 -1 abc)),
    (map { ['RLaaSKeyPrefix', $_, 'server'] } '"a b"', '"{x}"'),
    (map { ['RLaaSIPv6Prefix', $_, 'server'] } qw(31 129 0 -64 abc 64x 6.4 99999999999)),
);

for my $b (@bad) {
    my ($dir, $arg, $ctx, $shown) = @$b;
    ($shown //= $arg) =~ s/^"(.*)"$/$1/;
    my $line = "$dir $arg";
    my $conf = $ctx eq 'dir' ? in_location($line) : "$line\n";
    my ($rc, $out) = httpd_config_test($conf);
    my $ok = isnt($rc, 0, "apache2 -t refuses '$line'");
    $ok &&= like($out, qr/\Q$dir\E/, "  the message names $dir");
    if (length $shown) {
        $ok &&= like($out, qr/\Q$shown\E/, "  the message shows the value '$shown'");
    }
    diag($out) unless $ok;
}

# what is accepted, said once in the message
{
    my ($rc, $out) = httpd_config_test("<VirtualHost 127.0.0.1:1>\n    RLaaSIPv6Prefix 16\n</VirtualHost>\n");
    isnt($rc, 0, "apache2 -t refuses 'RLaaSIPv6Prefix 16' in a virtual host");
    like($out, qr/RLaaSIPv6Prefix: invalid value '16': expected an IPv6 prefix length from 32 to 128/,
        '  the message names the directive, the value and the range accepted');
}

# booleans: httpd's own FLAG handling
for my $d (qw(RLaaSFailOpen RLaaSEngine)) {
    my ($rc, $out) = httpd_config_test(in_location("$d maybe"));
    isnt($rc, 0, "apache2 -t refuses '$d maybe'");
    like($out, qr/\Q$d\E/, "  the message names $d");
}

# server-only directives in per-directory sections
for my $d (['RLaaSRedis', '127.0.0.1:6379'], ['RLaaSRedisUsername', 'u'],
           ['RLaaSRedisPassword', 'secret-in-location'], ['RLaaSRedisDatabase', '1'],
           ['RLaaSRedisTimeout', '1s'], ['RLaaSRedisPoolMax', '2'],
           ['RLaaSKeyPrefix', 'p:'], ['RLaaSIPv6Prefix', '64']) {
    my ($name, $v) = @$d;
    for my $sec (['Location', '/x'], ['Directory', '/tmp'], ['Files', 'x.txt']) {
        my ($s, $a) = @$sec;
        my ($rc, $out) = httpd_config_test("<$s $a>\n    $name $v\n</$s>\n");
        isnt($rc, 0, "$name inside <$s> is refused");
        like($out, qr/\Q$name\E[^\n]*(?:not allowed|cannot occur within)/,
            "  with httpd's context error ('not allowed in <$s> context')");
    }
}

# everything documented is accepted (Redis need not be reachable)
{
    my $good = <<'EOC';
RLaaSRedis 127.0.0.1:1
RLaaSRedisUsername app
RLaaSRedisPassword s3cret
RLaaSRedisDatabase 15
RLaaSRedisTimeout 250ms
RLaaSRedisPoolMax 4
RLaaSKeyPrefix "rl:"
RLaaSIPv6Prefix 64
RLaaSLimit 10
<VirtualHost 127.0.0.1:1>
    RLaaSIPv6Prefix 32
    RLaaSRedis localhost
    RLaaSRedisDatabase 0
    RLaaSRedisTimeout 2s
</VirtualHost>
<VirtualHost 127.0.0.1:2>
    RLaaSIPv6Prefix 128
    RLaaSRedis [::1]:6379
</VirtualHost>
<VirtualHost 127.0.0.1:3>
    RLaaSRedis unix:/tmp/no-such-redis.sock
</VirtualHost>
<VirtualHost 127.0.0.1:4>
    RLaaSRedis redis.example.invalid:6380
</VirtualHost>
<Location /a>
    RLaaSLimit 1
    RLaaSWindow 500ms
    RLaaSStrategy fixed
    RLaaSKeyBy ip user api_key header:X-User cookie:sid query:tenant env:PLAN "expr=%{REQUEST_METHOD}"
    RLaaSFailOpen on
    RLaaSZone api-v1.read_only
    RLaaSEngine on
</Location>
<Location /b>
    RLaaSLimit 1000000000
    RLaaSWindow 1d
</Location>
<Location /c>
    RLaaSWindow 45
    RLaaSStrategy fixed-window-algo
</Location>
<Location /d>
    RLaaSWindow 30s
    RLaaSStrategy fixed_window
</Location>
<Location /e>
    RLaaSWindow 1m
    RLaaSStrategy sliding-window-algo
</Location>
<Location /f>
    RLaaSWindow 5m
    RLaaSStrategy sliding_log
    RLaaSEngine off
</Location>
<Location /g>
    RLaaSWindow 1h
    RLaaSFailOpen off
</Location>
<Directory /tmp>
    RLaaSLimit 3
    <Files "x.txt">
        RLaaSLimit 2
    </Files>
    <If "-R '10.0.0.0/8'">
        RLaaSEngine off
    </If>
</Directory>
EOC
    my ($rc, $out) = httpd_config_test($good);
    is($rc, 0, 'every documented form of every directive is accepted (and Redis is not contacted)')
        or diag($out);
}

done_testing();
