# The production text of each script: the prelude's head and the helpers
# the rest calls, the strategy's body and a line calling it (the multi
# script: the six bodies and lua/multi.lua after the prelude's part), byte
# for byte what the build embeds, and what the fake-clock variant may
# differ in. Plus one real-TIME run of each.
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
# What each script is joined from, after the prelude's part.
my %joined = (
    multi   => join('', map { source_text($_) } STRATEGIES, 'concurrency', 'multi'),
    release => source_text('release'),
    map { $_ => source_text($_) . "return one(rlaas_$_)\n" } STRATEGIES,
);
# The prelude's head (up to its first helper) and its helpers, each with
# the comment lines above it.
my ($head, @helpers) = ('');
{
    my $pending = '';
    for my $l (split /(?<=\n)/, $prelude) {
        if ($l =~ /^--/) { $pending .= $l; next }
        if ($l =~ /^local (?:function )?([\w, ]+?)\s*(?:=|\()/) {
            push @helpers, { names => [map { s/\s+//gr } split /,/, $1], text => $pending . $l };
        }
        elsif (@helpers) { $helpers[-1]{text} .= $pending . $l }
        else { $head .= $pending . $l }
        $pending = '';
    }
}
sub code { $_[0] =~ s/--[^\n]*//gr }
# A script: the prelude's head, then some of its helpers in the prelude's
# order, byte for byte, then what it is joined from; every helper it
# calls is there, and only those (Redis runs the whole text each call).
for my $s (sort keys %joined) {
    next if $ENV{RLAAS_LUA_DIR};
    my $t = lua_text($s);
    ok substr($t, 0, length $head) eq $head, "$s: starts with the prelude's head";
    ok substr($t, -length $joined{$s}) eq $joined{$s}, "$s: ends with what it is joined from";
    my $mid = substr($t, length $head, length($t) - length($head) - length($joined{$s}));
    my @in = grep { index($mid, $_->{text}) >= 0 } @helpers;
    is join('', map { $_->{text} } @in), $mid, "$s: between them, whole helpers of the prelude, in its order";
    for my $hp (@helpers) {
        my $has = grep { $_ == $hp } @in;
        my $rest = $t =~ s/\Q$hp->{text}\E//r;
        # named as a value or a call (after "..", but not as x.name or
        # x:name), in code or, for one left out, anywhere but a comment line
        my $in = $has ? code($rest) : $rest =~ s/^[ \t]*--[^\n]*//gmr;
        my $named = grep { $in =~ /(?<![\w:])(?<![^.]\.)\Q$_\E\b/ } @{ $hp->{names} };
        ok $named ? $has : !$has, "$s: helper @{$hp->{names}} " . ($named ? 'named, defined' : 'not named, not defined');
    }
}
is scalar(grep { index(lua_text('fixed'), $_->{text}) >= 0 } @helpers) < scalar(@helpers), 1,
    'fixed: some helper of the prelude left out'
    unless $ENV{RLAAS_LUA_DIR};
like source_text('concurrency'), qr/^local function rlaas_concurrency\(K, N, T, tok, m, commit\)$/m,
    'lua/concurrency.lua defines rlaas_concurrency(K, N, T, tok, m, commit)';
is sha1_hex(lua_text('multi')), $embedded{multi}, 'multi: the bytes tested are the bytes embedded'
    unless $ENV{RLAAS_LUA_DIR};

for my $s (STRATEGIES, 'multi', 'release') {
    my $t = lua_text($s);
    ok -f lua_path($s), "$s.lua exists";
    is sha1_hex($t), $embedded{$s}, "$s: the bytes tested are the bytes embedded (SHA1)"
        unless $ENV{RLAAS_LUA_DIR};
    unlike $t, qr/[^\x09\x0a\x20-\x7e]/, "$s: ASCII only, no CR or control bytes";
    unlike $t, qr/\A#/, "$s: no shebang or flags line";
    like $t, qr/\n\z/, "$s: ends with a newline";
    my @clock = grep { /-- rlaas:clock/ } split /\n/, $t;
    my @time = ($t =~ /TIME/g);
    # a slot given back needs no time: the clock's lines are left out
    my $clocked = $s ne 'release';
    is scalar(@clock), $clocked ? 1 : 0, "$s: " . ($clocked ? 'exactly one' : 'no') . ' rlaas:clock line';
    is $clock[0], "local t = redis.call('TIME') -- rlaas:clock", "$s: clock line text" if $clocked;
    is scalar(@time), $clocked ? 1 : 0, "$s: TIME read " . ($clocked ? 'only there' : 'nowhere');
    unlike $t, qr/ARGV\[#/, "$s: production reads ARGV by position only";
    like $t, qr/\Aif redis\.replicate_commands then redis\.replicate_commands\(\) end\n|\A(?:--[^\n]*\n)+if redis\.replicate_commands then redis\.replicate_commands\(\) end\n/,
        "$s: replicate_commands first";
    my @lines_p = split /\n/, $t, -1;
    my @lines_f = split /\n/, fake_text($t), -1;
    is scalar(@lines_f), scalar(@lines_p), "$s: same line count in the fake-clock variant";
    my @diff = grep { $lines_p[$_] ne $lines_f[$_] } 0 .. $#lines_p;
    is_deeply [map { $lines_p[$_] } @diff], [@clock], "$s: variant differs only on the clock line";
    is $lines_f[$diff[0]], "local t = {ARGV[#ARGV - 1], ARGV[#ARGV]} -- rlaas:clock", "$s: substituted line"
        if $clocked;
    # The comment budget: they travel to Redis on every SCRIPT LOAD.
    my $comment = 0;
    $comment += length($1) for $t =~ /(--[^\n]*)/g;
    # A third at most (a script that leaves the prelude's unused helpers
    # out keeps the comments of its own body); one of 1 kB or so may carry
    # the prelude's head, whose comment says what every script takes.
    cmp_ok $comment, '<', length($t) < 1500 ? 600 : length($t) / 3,
        "$s: comments stay short ($comment of " . length($t) . " bytes)";
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
