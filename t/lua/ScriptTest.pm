package ScriptTest;
# Shared by the t/lua/*.t files: loads the scripts into a private
# redis-server, in production form and with the clock line swapped for a
# fake clock (the last two ARGV: seconds, microseconds). The scripts are the
# joined files the build embeds (build/lua/<s>.lua = lua/prelude.lua +
# lua/<s>.lua + a line calling it; build/lua/multi.lua = the prelude, the
# six bodies and lua/multi.lua), made fresh with `make lua` first.
use strict;
use warnings;
use Exporter 'import';
use File::Basename qw(dirname);
use File::Spec;
use RLaaS::Redis;
use Time::HiRes ();

our @EXPORT = qw(STRATEGIES STRATEGY_ID lua_path lua_text source_text fake_text key_of key_arg T0);
our @STRATEGIES = qw(fixed sliding_log sliding token leaky gcra);
our %STRATEGY_ID = map { $STRATEGIES[$_] => $_ } 0 .. $#STRATEGIES;
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
    die "clock line not found" unless $n == 1;
    return join '', @l;
}

# The suffix the module appends to the identity's key K for each strategy
# (src/core/rlaas_key.c): KEYS[1] is the whole key; fixed's ends in ':'
# and the script appends only the window number.
my %SUFFIX = (fixed => ':', sliding_log => '', sliding => ':sw',
    token => ':tb', leaky => ':lb', gcra => ':gcra');
sub key_arg { "$_[1]$SUFFIX{$_[0]}" }

# The key each strategy writes for base key K at time now_ms.
sub key_of {
    my ($name, $K, $W, $now) = @_;
    return "$K:" . int($now / $W) if $name eq 'fixed';
    return $K if $name eq 'sliding_log';
    return "$K:" . { sliding => 'sw', token => 'tb', leaky => 'lb', gcra => 'gcra' }->{$name};
}

sub new {
    my ($class, %opt) = @_;
    my $r = $opt{redis} || RLaaS::Redis->start;
    my $self = bless { r => $r, sha => {}, fake => {} }, $class;
    for my $s (@STRATEGIES, 'multi') {
        my $t = lua_text($s);
        $self->{sha}{$s} = $self->_load($t);
        $self->{fake}{$s} = $self->_load(fake_text($t));
    }
    return $self;
}

sub _load {
    my ($self, $text) = @_;
    my $sha = $self->{r}->cmd('SCRIPT', 'LOAD', $text);
    die "SCRIPT LOAD: $sha" if RLaaS::Redis::is_error($sha);
    return $sha;
}

sub redis { $_[0]{r} }

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
    return $self->_run([$K], $ms, $us, 'EVALSHA', $self->{fake}{$s}, 1, key_arg($s, $K),
        $L, $W, $o{cost} // 1, $o{mode} // 0);
}

# Several policies in one call of the multi script, at fake time $ms:
# each [$s, $K, $L, $W, $cost, $mode]. Replies 4 integers per policy.
sub run_multi {
    my ($self, $ms, @p) = @_;
    my (@k, @a);
    for my $p (@p) {
        my ($s, $K, $L, $W, $c, $m) = @$p;
        push @k, key_arg($s, $K);
        push @a, $STRATEGY_ID{$s}, $L, $W, $c // 1, $m // 0;
    }
    return $self->_run([map { $_->[1] } @p], $ms, undef, 'EVALSHA', $self->{fake}{multi},
        scalar(@k), @k, @a);
}

sub _run {
    my ($self, $Ks, $ms, $us, @call) = @_;
    my $exp = $self->{exp} ||= {};
    for my $k (sort keys %$exp) {
        next unless defined $exp->{$k} && $exp->{$k} < $ms;
        $self->{r}->cmd('DEL', $k);
        delete $exp->{$k};
    }
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
        last unless $late;
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
# them: left out when 1 and 0).
sub run_real {
    my ($self, $s, $K, $L, $W, @cm) = @_;
    return $self->{r}->cmd('EVALSHA', $self->{sha}{$s}, 1, key_arg($s, $K), $L, $W, @cm);
}

1;
