# The console's reset and unban (lua/forget.lua): each key's record
# deleted, whatever type it holds; the reply says which were there; a key
# of another call is untouched; the call's shape is checked. The bytes
# tested are the bytes embedded.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib $FindBin::Bin;
use Digest::SHA qw(sha1_hex);
use ScriptTest;

my $h = ScriptTest->new(shadow => 0);
my $r = $h->redis;
my $text = lua_text('forget');
is $text, source_text('forget'), 'forget: lua/forget.lua alone, no prelude'
    unless $ENV{RLAAS_LUA_DIR};
like $text, qr/redis\.call\('TIME'\) -- rlaas:clock/, 'forget reads the clock on its own line (the marks of a reset)';
my $sha = $r->cmd('SCRIPT', 'LOAD', $text);
like $sha, qr/^[0-9a-f]{40}$/, 'forget loads';
unless ($ENV{RLAAS_LUA_DIR}) {
    my $c = File::Spec->catfile($FindBin::Bin, '..', '..', 'src', 'redis', 'rlaas_scripts.c');
    open my $fh, '<', $c or die "$c: $!";
    local $/;
    my %embedded = (<$fh> =~ /\{"(\w+)", "([0-9a-f]{40})",/g);
    is sha1_hex($text), $embedded{forget}, 'forget: the bytes tested are the bytes embedded (SHA1)';
}

my $K = 'rlaas:rate_limit:forget-' . $$;
$r->cmd('SET', "$K:a", '5', 'PX', 60000);
$r->cmd('ZADD', "$K:b", 1, 'x');
$r->cmd('SET', "$K:ban", '9999999999999:600000');
$r->cmd('SET', "$K:other", '1');
is_deeply $r->cmd('EVALSHA', $sha, 3, "$K:a", "$K:b", "$K:ban"), [1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0],
    'three records deleted, each said to have been there';
is $r->cmd('EXISTS', "$K:a", "$K:b", "$K:ban"), 0, '... and gone';
is $r->cmd('GET', "$K:other"), '1', 'a key not named is untouched';
is_deeply $r->cmd('EVALSHA', $sha, 1, "$K:a"), [1, 0, 0, 0], 'a record not there: 0';
my $err = $r->cmd('EVALSHA', $sha, 0);
ok RLaaS::Redis::is_error($err), 'no key: an error';
$r->cmd('SET', "$K:$_", '1') for 1 .. 9;
$err = $r->cmd('EVALSHA', $sha, 9, map { "$K:$_" } 1 .. 9);
ok RLaaS::Redis::is_error($err), 'more than 8 keys: an error';
is $r->cmd('EXISTS', map { "$K:$_" } 1 .. 9), 9, '... which deleted nothing';
# with ARGV[1] '1' (not Redis Cluster): each record leaves a mark of its
# reset, read by lua/lease.lua, for a day
$r->cmd('SET', "$K:m", '5');
is_deeply $r->cmd('EVALSHA', $sha, 1, "$K:m", '1'), [1, 1, 0, 0], 'a record forgotten with a mark';
like $r->cmd('GET', "$K:m:forgot") // '', qr/^\d{13}$/, '... its time in ms';
cmp_ok $r->cmd('PTTL', "$K:m:forgot"), '>', 86_000_000, '... kept a day';
is $r->cmd('EXISTS', "$K:a:forgot"), 0, 'none without the argument';
done_testing;
