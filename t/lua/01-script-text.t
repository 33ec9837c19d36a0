# The production text of each script: the prelude, the strategy's body and
# a line calling it (the multi script: the prelude, the six bodies and
# lua/multi.lua), byte for byte what the build embeds, and what the
# fake-clock variant may differ in. Plus one real-TIME run of each.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use ScriptTest;
use Digest::SHA qw(sha1_hex);

my $h = ScriptTest->new;
my $r = $h->redis;

# The SHA1s the module was built with (src/redis/rlaas_scripts.c).
my %embedded;
{
    my $c = "$FindBin::Bin/../../src/redis/rlaas_scripts.c";
    open my $fh, '<', $c or die "$c: $!";
    local $/;
    %embedded = (<$fh> =~ /\{"(\w+)", "([0-9a-f]{40})",/g);
}
my $prelude = source_text('prelude');
like $prelude, qr/-- rlaas:clock/, 'the clock line is in the prelude';
for my $name (qw(muldiv gcd s args clock level put one bucket_get bucket_put)) {
    my @in = grep { source_text($_) =~ /local function \Q$name\E\(/ } STRATEGIES, 'multi';
    is_deeply \@in, [], "$name is defined once, in the prelude, not in a body";
}
for my $s (STRATEGIES) {
    like source_text($s), qr/^local function rlaas_\Q$s\E\(K, L, W, cost, m, commit\)$/m,
        "lua/$s.lua defines rlaas_$s(K, L, W, cost, m, commit)";
}
is lua_text('multi'), join('', map { source_text($_) } 'prelude', STRATEGIES, 'concurrency', 'multi'),
    'multi: the prelude, the six bodies in strategy order, lua/concurrency.lua, lua/multi.lua'
    unless $ENV{RLAAS_LUA_DIR};
is lua_text('release'), $prelude . source_text('release'),
    'release: the prelude and lua/release.lua'
    unless $ENV{RLAAS_LUA_DIR};
like source_text('concurrency'), qr/^local function rlaas_concurrency\(K, N, T, tok, m, commit\)$/m,
    'lua/concurrency.lua defines rlaas_concurrency(K, N, T, tok, m, commit)';
is sha1_hex(lua_text('multi')), $embedded{multi}, 'multi: the bytes tested are the bytes embedded'
    unless $ENV{RLAAS_LUA_DIR};

for my $s (STRATEGIES, 'multi', 'release') {
    my $t = lua_text($s);
    ok -f lua_path($s), "$s.lua exists";
    is $t, $prelude . source_text($s) . "return one(rlaas_$s)\n",
        "$s: the prelude, lua/$s.lua and a line calling rlaas_$s"
        unless $ENV{RLAAS_LUA_DIR} || $s eq 'multi' || $s eq 'release';
    is sha1_hex($t), $embedded{$s}, "$s: the bytes tested are the bytes embedded (SHA1)"
        unless $ENV{RLAAS_LUA_DIR};
    unlike $t, qr/[^\x09\x0a\x20-\x7e]/, "$s: ASCII only, no CR or control bytes";
    unlike $t, qr/\A#/, "$s: no shebang or flags line";
    like $t, qr/\n\z/, "$s: ends with a newline";
    my @clock = grep { /-- rlaas:clock/ } split /\n/, $t;
    is scalar(@clock), 1, "$s: exactly one rlaas:clock line";
    is $clock[0], "local t = redis.call('TIME') -- rlaas:clock", "$s: clock line text";
    my @time = ($t =~ /TIME/g);
    is scalar(@time), 1, "$s: TIME read only there";
    unlike $t, qr/ARGV\[#/, "$s: production reads ARGV by position only";
    like $t, qr/\Aif redis\.replicate_commands then redis\.replicate_commands\(\) end\n|\A(?:--[^\n]*\n)+if redis\.replicate_commands then redis\.replicate_commands\(\) end\n/,
        "$s: replicate_commands first";
    my @lines_p = split /\n/, $t, -1;
    my @lines_f = split /\n/, fake_text($t), -1;
    is scalar(@lines_f), scalar(@lines_p), "$s: same line count in the fake-clock variant";
    my @diff = grep { $lines_p[$_] ne $lines_f[$_] } 0 .. $#lines_p;
    is_deeply [map { $lines_p[$_] } @diff], [$clock[0]], "$s: variant differs only on the clock line";
    is $lines_f[$diff[0]], "local t = {ARGV[#ARGV - 1], ARGV[#ARGV]} -- rlaas:clock", "$s: substituted line";
    # The comment budget: they travel to Redis on every SCRIPT LOAD.
    my $comment = 0;
    $comment += length($1) for $t =~ /(--[^\n]*)/g;
    cmp_ok $comment, '<', 0.3 * length($t), "$s: comments stay short ($comment of " . length($t) . " bytes)";
    is $r->cmd('SCRIPT', 'LOAD', $t), sha1_hex($t), "$s: SCRIPT LOAD gives the SHA1 of the file bytes";
    next if $s eq 'multi' || $s eq 'release';

    # Production text, real clock.
    my $K = "rlaas:rate_limit:real-$s";
    my $x = $h->run_real($s, $K, 3, 60000);
    is ref($x), 'ARRAY', "$s: real TIME run replies an array" or diag explain $x;
    is scalar(@$x), 4, "$s: four fields";
    ok !(grep { !defined || !/^\d+$/ } @$x), "$s: non-negative integers (@$x)";
    is $x->[0], 1, "$s: first hit allowed";
    is $x->[1], 2, "$s: remaining 2";
    is $x->[3], 0, "$s: retry 0";
    ok $x->[2] >= 1 && $x->[2] <= 120000, "$s: reset within bounds ($x->[2])";
    $h->run_real($s, $K, 3, 60000) for 1 .. 2;
    $x = $h->run_real($s, $K, 3, 60000);
    is $x->[0], 0, "$s: 4th of 3 denied (real clock)";
    ok $x->[3] >= 1, "$s: retry >= 1 when denied";

    # KEYS[1] is the whole key: nothing appended, but fixed's window.
    my $whole = "rlaas:whole-$s:" . ($s eq 'fixed' ? '' : 'x');
    $x = $r->cmd('EVALSHA', $h->{sha}{$s}, 1, $whole, 3, 60000);
    my @written = @{ $r->cmd('KEYS', "rlaas:whole-$s:*") };
    if ($s eq 'fixed') {
        like "@written", qr/\A\Q$whole\E\d+\z/, "$s: writes KEYS[1] and the window number only (@written)";
    } else {
        is_deeply \@written, [$whole], "$s: writes exactly KEYS[1]";
    }

    # Argument checks: a misconfigured caller gets an error, never a verdict.
    for my $bad ([0, 1000], [1, 0], [1e9 + 1, 1000], ['x', 1000], [1.5, 1000], [5],
        [3, 1000, 4], [3, 1000, -1], [3, 1000, 1.5], [3, 1000, 1, 8], [3, 1000, 1, 'x']) {
        my $e = $r->cmd('EVALSHA', $h->{sha}{$s}, 1, $K, @$bad);
        ok RLaaS::Redis::is_error($e), "$s: bad args (@$bad) -> error reply";
    }
}
done_testing;
