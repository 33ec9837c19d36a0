package ScriptTest;
# Shared by the t/lua/*.t files: loads the scripts into a private
# redis-server, in production form and with the clock line swapped for a
# fake clock (the last two ARGV: seconds, microseconds). The scripts are the
# joined files the build embeds (build/lua/<s>.lua = of lua/prelude.lua,
# its head and the helpers the rest calls, + lua/<s>.lua + a line calling
# it; build/lua/multi.lua = that part of the prelude, the six bodies and
# lua/multi.lua: tools/lua-join.pl), made fresh with `make lua` first.
#
# Every call run() and run_multi() make of a script is made of the local engine too (the
# C strategies and table, build/unit/rlaas_local_cli, through
# ScriptTest::Local) at the same fake time, and the two must agree: the
# same reply, the same record key, the same TTL. A disagreement fails the
# test it happens in. Keys a test changes behind the scripts' back
# (through redis()) are left out of the comparison from then on; FLUSHALL
# empties the local table too. RLAAS_LUA_SHADOW=0 turns this off.
use strict;
use warnings;
use Exporter 'import';
use File::Basename qw(dirname);
use File::Spec;
use RLaaS::Redis;
use RLaaS::Seeds ();
use Time::HiRes ();
use Scalar::Util ();

our @EXPORT = qw(STRATEGIES STRATEGY_ID lua_path lua_text source_text fake_text key_of key_arg T0);
our @STRATEGIES = qw(fixed sliding_log sliding token leaky gcra);
# 'ban' (6): a ban among the multi script's entries, [ban, K, D, M, F, 0];
# 'conc' (7): a concurrency limit, [conc, K, N, T, TOKEN, MODE]
our %STRATEGY_ID = ((map { $STRATEGIES[$_] => $_ } 0 .. $#STRATEGIES), ban => 6, conc => 7);
sub STRATEGIES { @STRATEGIES }
sub STRATEGY_ID { $STRATEGY_ID{ $_[0] } }

# 2023-11-14T00:00:00Z in ms: a multiple of every round window (1 d too)
use constant T0 => 1_699_920_000_000;

my $ROOT = File::Spec->rel2abs(dirname(__FILE__) . '/../..');
# RLAAS_LUA_DIR: run the tests against other copies of the joined scripts
# (mutation checks); otherwise the build's own, brought up to date here.
unless ($ENV{RLAAS_LUA_DIR}) {
    my $out = `make -s -C '$ROOT' lua 2>&1`;
    die "make lua failed:\n$out" if $?;
}
sub lua_path { ($ENV{RLAAS_LUA_DIR} || "$ROOT/build/lua") . "/$_[0].lua" }

sub _slurp {
    my ($path) = @_;
    open my $fh, '<:raw', $path or die "$path: $!";
    local $/;
    return scalar <$fh>;
}

# The joined script, as Redis runs it ('multi' too).
sub lua_text { _slurp(lua_path($_[0])) }

# A source file in lua/: a strategy's body, or 'prelude'.
sub source_text { _slurp("$ROOT/lua/$_[0].lua") }

# The harness' substitution: redis.call('TIME') -> the last two ARGV, on
# the line carrying -- rlaas:clock, and only there.
sub fake_text {
    my ($text) = @_;
    my @l = split /(?<=\n)/, $text;
    my $n = 0;
    for (@l) {
        next unless /-- rlaas:clock/;
        $n++ if s/redis\.call\('TIME'\)/{ARGV[#ARGV - 1], ARGV[#ARGV]}/;
    }
    # a script that reads no clock (release) has none to substitute
    die "clock line not found" unless $n == 1 || $text !~ /TIME/;
    return join '', @l;
}

# The suffix the module appends to the identity's key K for each strategy
# (src/core/rlaas_key.c): KEYS[1] is the whole key; fixed's ends in ':'
# and the script appends only the window number.
my %SUFFIX = (fixed => ':', sliding_log => '', sliding => ':sw',
    token => ':tb', leaky => ':lb', gcra => ':gcra', ban => ':ban',
    conc => ':conc');
sub key_arg { "$_[1]$SUFFIX{$_[0]}" }

# The key each strategy writes for base key K at time now_ms.
sub key_of {
    my ($name, $K, $W, $now) = @_;
    return "$K:" . int($now / $W) if $name eq 'fixed';
    return $K if $name eq 'sliding_log';
    return "$K:" . { sliding => 'sw', token => 'tb', leaky => 'lb', gcra => 'gcra',
        conc => 'conc' }->{$name};
}

my @ALL;    # every helper made, for the note at the end

sub new {
    my ($class, %opt) = @_;
    my $r = $opt{redis} || RLaaS::Redis->start;
    my $self = bless { r => $r, sha => {}, fake => {}, taint => {} }, $class;
    for my $s (@STRATEGIES, 'multi', 'credit', 'release') {
        my $t = lua_text($s);
        $self->{sha}{$s} = $self->_load($t);
        $self->{fake}{$s} = $self->_load(fake_text($t));
    }
    my $shadow = $opt{shadow} // $ENV{RLAAS_LUA_SHADOW} // 1;
    $self->{local} = ScriptTest::Local->new if $shadow;
    push @ALL, $self;
    Scalar::Util::weaken($ALL[-1]);
    return $self;
}

sub _load {
    my ($self, $text) = @_;
    my $sha = $self->{r}->cmd('SCRIPT', 'LOAD', $text);
    die "SCRIPT LOAD: $sha" if RLaaS::Redis::is_error($sha);
    return $sha;
}

# The Redis server, through a proxy that notes which keys a test changes
# itself (see the top).
sub redis { $_[0]{proxy} ||= ScriptTest::Proxy->new($_[0]) }

# The local engine of the comparison (undef when it is off).
sub local_engine { $_[0]{local} }

sub _tainted {
    my ($self, $K) = @_;
    return grep { $_ eq $K || index($_, "$K:") == 0 } keys %{ $self->{taint} };
}

# The local engine makes the same call; any difference fails the test.
# $pols: the call's policies, each [$s, $K, $L, $W, $cost, $mode]; $multi:
# made of the multi script.
sub _shadow {
    my ($self, $multi, $pols, $ms, $rep, $ttl, $late) = @_;
    my $lc = $self->{local} or return;
    if ($late || grep { $self->_tainted($_->[1]) } @$pols) {
        $self->{taint}{ $_->[1] } = 1 for @$pols;
        $self->{shadow_skipped}++;
        return;
    }
    my @args = map { my @p = @$_; $p[1] = key_arg($p[0], $p[1]); \@p } @$pols;
    my ($got, @recs) = ref $multi && $multi->[0] eq 'release' ? $lc->run_release($ms, @args)
        : ref $multi ? $lc->run_credit($ms, $multi->[1], @args)
        : $multi ? $lc->run_multi($ms, @args)
        : $lc->run(@{ $args[0] }[0 .. 3], $ms, @{ $args[0] }[4, 5]);
    $self->{shadow_n}++;
    my $want = ref $rep eq 'ARRAY' ? "@$rep" : 'error';
    my $have = ref $got eq 'ARRAY' ? "@$got" : 'error';
    my @why;
    push @why, "reply: Lua $want, C $have" if $want ne $have;
    if (ref $got eq 'ARRAY' && ref $rep eq 'ARRAY') {
        for my $rec (@recs) {
            my ($rkey, $rttl) = @$rec;
            # the key's fake expiry, set by this call or an earlier one
            my $exp = $self->{exp}{$rkey};
            if ($rttl == -2) {
                push @why, "C has no $rkey, Lua left it" if exists $ttl->{$rkey};
            } elsif (!exists $ttl->{$rkey}) {
                push @why, "C wrote $rkey, Lua left " . join(', ', sort keys %$ttl);
            } elsif (!defined $exp || $exp - $ms != $rttl) {
                push @why, "TTL of $rkey: Lua " . (defined $exp ? $exp - $ms : 'none') . ", C $rttl";
            }
        }
    }
    return unless @why;
    $self->{shadow_bad}++;
    local $Test::Builder::Level = $Test::Builder::Level + 3;
    Test::More::fail("local engine agrees with the script: "
        . join('; ', map { my ($s, $K, $L, $W, $c, $m) = @$_;
            "$s $K L=$L W=$W cost=" . ($c // 1) . ' mode=' . ($m // 0) } @$pols)
        . ' t=' . ($ms - T0));
    Test::More::diag($_) for @why;
}

# Fake time needs fake expiry: Redis expires keys by the real clock,
# while a test may make a thousand calls in one fake millisecond against
# 1 ms TTLs, or jump a day ahead in no real time. So run() notes the TTL
# each script set on each key of K, exactly, then PERSISTs the key, and
# deletes it itself once the fake clock passes that time (Redis' rule:
# gone when now > expiry). pttl() answers in fake time.
#
# Exact TTLs: TIME, the script and a PTTL/PERSIST script go in one write,
# started early in a millisecond; TIME before the script and after the
# last PTTL proves that no millisecond boundary passed. If one did (a
# scheduling hiccup), K is restored from a snapshot taken in the same
# write and the call replayed ({ambiguous} counts these; after 20 tries
# the later bound is used).
my $KEYS_LUA = <<'LUA';
local out = {}
local function each(ks)
  for _, k in ipairs(ks) do
    out[#out + 1] = k
    out[#out + 1] = redis.call('PTTL', k)
    redis.call('PERSIST', k)
  end
end
for _, K in ipairs(ARGV) do
  if redis.call('EXISTS', K) == 1 then each({K}) end
  each(redis.call('KEYS', K .. ':*'))
end
local t = redis.call('TIME')
out[#out + 1] = t[1]
out[#out + 1] = t[2]
return out
LUA

# The state of K before a call (DUMP, PTTL), to replay a call whose TTL
# read straddled a millisecond.
my $SNAP_LUA = <<'LUA';
local out = {}
for _, K in ipairs(ARGV) do
local ks = redis.call('KEYS', K .. ':*')
if redis.call('EXISTS', K) == 1 then ks[#ks + 1] = K end
for _, k in ipairs(ks) do
  out[#out + 1] = k
  out[#out + 1] = redis.call('DUMP', k)
  out[#out + 1] = redis.call('PTTL', k)
end
end
return out
LUA

# Runs strategy $s for the identity's key $K (KEYS[1] = key_arg) at fake
# time $ms (+ $us microseconds inside that ms), with cost $o{cost} (1) and
# mode $o{mode} (0).
sub run {
    my ($self, $s, $K, $L, $W, $ms, $us, %o) = @_;
    my @p = ($s, $K, $L, $W, $o{cost} // 1, $o{mode} // 0);
    return $self->_run([ [@p] ], 0, $ms, $us, 'EVALSHA', $self->{fake}{$s}, 1,
        key_arg($s, $K), @p[2 .. 5]);
}

# Several policies in one call of the multi script, at fake time $ms:
# each [$s, $K, $L, $W, $cost, $mode]. Replies 4 integers per policy.
sub run_multi {
    my ($self, $ms, @p) = @_;
    my (@k, @a);
    @p = map { my ($s, $K, $L, $W, $c, $m) = @$_; [$s, $K, $L, $W, $c // 1, $m // 0] } @p;
    for my $p (@p) {
        my ($s, $K, $L, $W, $c, $m) = @$p;
        push @k, key_arg($s, $K);
        push @a, $STRATEGY_ID{$s} // $s, $L, $W, $c, $m;
    }
    return $self->_run(\@p, 1, $ms, undef, 'EVALSHA', $self->{fake}{multi},
        scalar(@k), @k, @a);
}

# Credits of the credit script (lua/credit.lua) at fake time $ms, the
# units charged at least $age ms before: each [$s, $K, $L, $W, $units,
# $mode]. Replies 4 integers per credit, {1, units given back, 0, 0}.
sub run_credit {
    my ($self, $ms, $age, @p) = @_;
    my (@k, @a);
    @p = map { my ($s, $K, $L, $W, $n, $m) = @$_; [$s, $K, $L, $W, $n // 1, $m // 0] } @p;
    for my $p (@p) {
        push @k, key_arg($p->[0], $p->[1]);
        push @a, $STRATEGY_ID{ $p->[0] } // $p->[0], @{$p}[2 .. 5], $age;
    }
    return $self->_run(\@p, ['credit', $age], $ms, undef, 'EVALSHA',
        $self->{fake}{credit}, scalar(@k), @k, @a);
}

# Concurrency slots given back (lua/release.lua) at fake time $ms: each
# [conc, $K, $N, $T, $token, $mode] (N, T and mode are not sent). Replies
# 4 integers per slot, {1, 1 if it was held, 0, 0}.
sub run_release {
    my ($self, $ms, @p) = @_;
    @p = map { [@$_] } @p;
    return $self->_run(\@p, ['release'], $ms, undef, 'EVALSHA',
        $self->{fake}{release}, scalar(@p), (map { key_arg('conc', $_->[1]) } @p),
        map { $_->[4] } @p);
}

# Keys whose fake expiry has passed at $ms go.
sub _expire {
    my ($self, $ms) = @_;
    my $exp = $self->{exp} ||= {};
    for my $k (sort keys %$exp) {
        next unless defined $exp->{$k} && $exp->{$k} < $ms;
        $self->{r}->cmd('DEL', $k);
        delete $exp->{$k};
    }
    return $exp;
}

sub _run {
    my ($self, $pols, $multi, $ms, $us, @call) = @_;
    my $Ks = [ map { $_->[1] } @$pols ];
    my $exp = $self->_expire($ms);
    my $sec = int($ms / 1000);
    my $usec = ($ms - $sec * 1000) * 1000 + ($us || 0);
    my ($snap, $t1, $rep, $kt, $late);
    for my $try (1 .. 20) {
        1 while int(Time::HiRes::time() * 1e6) % 1000 > 600;
        ($snap, $t1, $rep, $kt) = $self->{r}->pipeline(
            ['EVAL', $SNAP_LUA, 0, @$Ks],
            ['TIME'],
            [@call, $sec, $usec],
            ['EVAL', $KEYS_LUA, 0, @$Ks]);
        die "keys: $kt" if RLaaS::Redis::is_error($kt);
        my @t2 = splice @$kt, -2;
        $late = (int($t1->[1] / 1000) + 1000 * $t1->[0] != int($t2[1] / 1000) + 1000 * $t2[0]) ? 1 : 0;
        # the last try stands (its later bound is used)
        last if !$late || $try == 20;
        # put K back as it was and replay the call
        $self->{ambiguous}++;
        $self->{r}->cmd('DEL', $_, @{ $self->{r}->cmd('KEYS', "$_:*") }) for @$Ks;
        my @sn = @$snap;
        while (my ($k, $dump, $pttl) = splice @sn, 0, 3) {
            $self->{r}->cmd('RESTORE', $k, $pttl > 0 ? $pttl : 0, $dump);
        }
    }
    my %ttl = @$kt;
    for my $k (keys %ttl) {
        if ($ttl{$k} >= 0) {
            $exp->{$k} = $ms + $ttl{$k} + $late;
        } elsif (!exists $exp->{$k}) {
            # written without a TTL: remembered for no_ttl()
            $exp->{$k} = undef;
            push @{ $self->{no_ttl} }, $k;
        }
    }
    $self->{now} = $ms;
    $self->_shadow($multi, $pols, $ms, $rep, \%ttl, $late);
    return $rep;
}

# The seeds' own sliding-window script (RLaaS::Seeds, seeds/003 as
# written) on the sliding log's key K at fake time $ms, its clock in
# ARGV[1] as a service built from the seeds passes it; window $W in ms (a
# whole number of seconds), limit $L. Its reply {allowed, count, window
# s}. The TTL it sets (PEXPIRE 2*W) is kept in fake time like the scripts'
# (see run()); K is left out of the comparison with the local engine,
# which has no such neighbour.
sub run_seeds {
    my ($self, $K, $L, $W, $ms) = @_;
    die "run_seeds: window $W is not whole seconds" if $W % 1000;
    $self->_expire($ms);
    $self->{taint}{$K} = 1;
    my ($rep, $pttl) = $self->{r}->pipeline(
        ['EVAL', RLaaS::Seeds::SEEDS_SLIDING_WINDOW(), 1, $K, $ms, $W / 1000, $L],
        ['PTTL', $K], ['PERSIST', $K]);
    die "seeds' script: $rep" if RLaaS::Redis::is_error($rep);
    die "seeds' script: PTTL $pttl, not about 2*W" unless $pttl > 2 * $W - 1000 && $pttl <= 2 * $W;
    $self->{exp}{$K} = $ms + 2 * $W;
    $self->{now} = $ms;
    return $rep;
}

# Fake PTTL of $key as of the last run(): -2 missing, -1 no TTL.
sub pttl {
    my ($self, $k) = @_;
    return -2 unless $self->{r}->cmd('EXISTS', $k);
    return $self->{r}->cmd('PTTL', $k) unless exists $self->{exp}{$k};
    return -1 unless defined $self->{exp}{$k};
    return $self->{exp}{$k} - $self->{now};
}

# Keys some script left without a TTL (should be none).
sub no_ttl { @{ $_[0]{no_ttl} || [] } }

# Production script, real Redis TIME (cost and mode as the module sends
# them: left out when 1 and 0; not compared: the local engine runs at fake
# times only).
sub run_real {
    my ($self, $s, $K, $L, $W, @cm) = @_;
    $self->{taint}{$K} = 1;
    return $self->{r}->cmd('EVALSHA', $self->{sha}{$s}, 1, key_arg($s, $K), $L, $W, @cm);
}

# How many calls each helper compared, as a note at the end of the test.
END {
    for my $self (grep { defined && $_->{local} } @ALL) {
        Test::More::note(sprintf 'local engine: %d calls compared with the '
            . 'scripts, %d left out (keys changed by the test), %d differed',
            $self->{shadow_n} // 0, $self->{shadow_skipped} // 0,
            $self->{shadow_bad} // 0);
    }
}

# ---------------------------------------------------------------- the proxy
# redis() for the tests: every command goes to the server; those that may
# change data taint the keys they name (FLUSHALL/FLUSHDB empty the local
# table instead).
package ScriptTest::Proxy;

our $AUTOLOAD;
my %READ = map { $_ => 1 } qw(GET MGET TYPE KEYS EXISTS PTTL TTL OBJECT MEMORY
    HGET HGETALL HMGET ZCARD ZRANGE ZSCORE ZRANGEBYSCORE STRLEN DUMP SCAN
    PING TIME INFO SCRIPT DBSIZE);

sub new { bless { h => $_[1] }, $_[0] }

sub cmd {
    my ($self, @c) = @_;
    $self->_note(@c);
    return $self->{h}{r}->cmd(@c);
}

sub pipeline {
    my ($self, @cmds) = @_;
    $self->_note(@$_) for @cmds;
    return $self->{h}{r}->pipeline(@cmds);
}

sub _note {
    my ($self, $name, @args) = @_;
    my $h = $self->{h};
    $name = uc($name // '');
    return if $READ{$name};
    if ($name eq 'FLUSHALL' || $name eq 'FLUSHDB') {
        $h->{local}->flush if $h->{local};
        $h->{taint} = {};
        return;
    }
    $h->{taint}{$_} = 1 for grep { defined && !ref } @args;
}

sub AUTOLOAD {
    my $self = shift;
    (my $m = $AUTOLOAD) =~ s/.*:://;
    return if $m eq 'DESTROY';
    return $self->{h}{r}->$m(@_);
}

# ---------------------------------------------------------------- local engine
# The local engine (build/unit/rlaas_local_cli, built here if missing) at
# a fake clock: run() as ScriptTest::run, run_multi() as run_multi; in list
# context also each record's [key, TTL] (TTL -2: none).
package ScriptTest::Local;

use IPC::Open2 ();

sub cli { "$ROOT/build/unit/rlaas_local_cli" }

sub new {
    my ($class) = @_;
    my $cli = cli();
    unless (-x $cli) {
        system('make', '-s', '-C', $ROOT, 'build/unit/rlaas_local_cli') == 0 && -x $cli
            or die "cannot build $cli (make unit)\n";
    }
    my $pid = IPC::Open2::open2(my $out, my $in, $cli) or die "$cli: $!";
    $in->autoflush(1);
    return bless { pid => $pid, in => $in, out => $out }, $class;
}

sub _ask {
    my ($self, $line) = @_;
    print { $self->{in} } "$line\n";
    my $a = readline $self->{out};
    die "rlaas_local_cli: no answer to '$line'\n" unless defined $a;
    chomp $a;
    return $a;
}

sub run {
    my ($self, $s, $K, $L, $W, $ms, $c, $m) = @_;
    return $self->_answer(1, "hit $s $K $L $W $ms " . ($c // 1) . ' ' . ($m // 0));
}

sub run_multi {
    my ($self, $ms, @p) = @_;
    return $self->_answer(scalar(@p), "multi $ms "
        . join(' ', map { my ($s, $K, $L, $W, $c, $m) = @$_; "$s $K $L $W " . ($c // 1) . ' ' . ($m // 0) } @p));
}

sub run_credit {
    my ($self, $ms, $age, @p) = @_;
    return $self->_answer(scalar(@p), "credit $ms $age "
        . join(' ', map { my ($s, $K, $L, $W, $n, $m) = @$_; "$s $K $L $W " . ($n // 1) . ' ' . ($m // 0) } @p));
}

sub run_release {
    my ($self, $ms, @p) = @_;
    return $self->_answer(scalar(@p), "release $ms "
        . join(' ', map { my ($s, $K, $L, $W, $t, $m) = @$_; "conc $K $L $W $t " . ($m // 0) } @p));
}

sub _answer {
    my ($self, $n, $line) = @_;
    my $a = $self->_ask($line);
    return ("ERR $1") if $a =~ /^ERR (.*)/;
    my @f = split / /, $a;
    my $rep = [ splice @f, 0, 4 * $n ];
    my @recs;
    push @recs, [ splice @f, 0, 2 ] while @f;
    return wantarray ? ($rep, @recs) : $rep;
}

sub flush {
    my ($self) = @_;
    $self->_ask('flush') eq 'ok' or die "rlaas_local_cli: flush failed\n";
}

sub DESTROY {
    my ($self) = @_;
    close $self->{in};
    waitpid $self->{pid}, 0 if $self->{pid};
}

1;
