# The kit's run-side: setup starts a private Redis for as long as the
# process that asked lives (however it ends), reset_counters deletes the
# suite's keys and nothing else, the local backend starts no Redis, and a
# suite that cannot run makes its test files skip.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use File::Temp qw(tempdir);
use POSIX ();
use Time::HiRes qw(sleep time);
use Apache::TestRLaaS qw(:all);
use Apache::TestRLaaS::Redis;
use Apache::TestRLaaS::Keeper;

my $lib = "$FindBin::Bin/../lib";
my $module = eval { Apache::TestRLaaS::module_path() };
plan skip_all => "no mod_rlaas.so to load: $@" unless $module;

sub alive { my $p = shift; $p && kill(0, $p) && !(`ps -o stat= -p $p` =~ /Z/) }

# A process of its own calls setup and reports what it exported, then
# waits for a line on stdin (or is killed).
sub setup_child {
    my (%env) = @_;
    my $tdir = tempdir('kit-suite-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    mkdir "$tdir/logs";
    pipe(my $from, my $to) or die;
    pipe(my $cin, my $cout) or die;
    my $pid = fork // die;
    if (!$pid) {
        close $from; close $cout;
        open STDIN, '<&', $cin or die;
        open STDOUT, '>&', $to or die;
        local @ENV{ keys %env } = values %env;
        { exec $^X, "-I$lib", '-MApache::TestRLaaS', '-e', q{
            $| = 1;
            my $e = Apache::TestRLaaS->setup(t_dir => $ARGV[0], quiet => 1);
            print map { "$_=$e->{$_}\n" } sort keys %$e;
            print "READY\n";
            <STDIN>;
        }, $tdir }
        POSIX::_exit(127);
    }
    close $to; close $cin;
    my %got;
    while (my $l = <$from>) {
        chomp $l;
        last if $l eq 'READY';
        my ($k, $v) = split /=/, $l, 2;
        $got{$k} = $v;
    }
    return ($pid, $cout, \%got, $tdir);
}

my @clean = map { $_ => undef } qw(RLAAS_KIT_REDIS RLAAS_KIT_BACKEND RLAAS_KIT_PREFIX
                                    RLAAS_KIT_SKIP RLAAS_MODULE);

# ---------------------------------------------------------------- a private Redis
for my $end (qw(exit kill)) {
    my ($pid, $in, $env, $tdir) = setup_child(@clean);
    like($env->{RLAAS_KIT_REDIS}, qr/^127\.0\.0\.1:\d+$/, "$end: RLAAS_KIT_REDIS is where it listens");
    like($env->{RLAAS_KIT_PREFIX}, qr/^rlaas-test:[0-9a-f]{8}:$/, "$end: a suite prefix");
    is($env->{RLAAS_KIT_BACKEND}, 'redis', "$end: backend redis");
    is($env->{RLAAS_MODULE}, $module, "$end: RLAAS_MODULE: the module found");
    my ($port) = $env->{RLAAS_KIT_REDIS} =~ /:(\d+)$/;
    my $r = Apache::TestRLaaS::Redis->attach(port => $port, dir => $env->{RLAAS_KIT_REDIS_DIR});
    is($r->cmd('PING'), 'PONG', "$end: the Redis answers");
    my $rpid = $r->pid;
    ok(-d $env->{RLAAS_KIT_REDIS_DIR}, "$end: in a directory of its own");
    if ($end eq 'exit') { print $in "\n"; close $in }
    else { kill 'KILL', $pid; close $in }
    waitpid $pid, 0;
    my $gone = Apache::TestRLaaS::wait_for(sub { !alive($rpid) && !-d $env->{RLAAS_KIT_REDIS_DIR} }, 10, 0.05);
    ok($gone, $end eq 'exit' ? 'the run ends: its Redis is stopped and its directory removed'
                             : 'the run is killed (SIGKILL): its Redis goes all the same, directory too');
}

# ---------------------------------------------------------------- given Redis, local
{
    my ($pid, $in, $env) = setup_child(@clean, RLAAS_KIT_REDIS => '127.0.0.1:6399');
    is($env->{RLAAS_KIT_REDIS}, '127.0.0.1:6399', 'RLAAS_KIT_REDIS given: used as it is');
    is($env->{RLAAS_KIT_REDIS_DIR}, '', 'and no Redis of its own');
    print $in "\n"; close $in; waitpid $pid, 0;
}
{
    my ($rc) = Apache::TestRLaaS::httpd_config_test("RLaaSBackend local\n", module => $module);
    my ($pid, $in, $env) = setup_child(@clean, RLAAS_KIT_BACKEND => 'local');
    is($env->{RLAAS_KIT_BACKEND}, 'local', 'local backend');
    is($env->{RLAAS_KIT_REDIS_DIR} // '', '', 'local backend: no Redis started');
    if ($rc == 0) {
        ok(!$env->{RLAAS_KIT_SKIP}, 'a module with the local engine: the suite runs');
        my ($p) = ($env->{RLAAS_KIT_REDIS} // '') =~ /:(\d+)$/;
        ok($p && !IO::Socket::INET->new("127.0.0.1:$p"), 'RLaaSRedis points where nothing listens');
    } else {
        like($env->{RLAAS_KIT_SKIP}, qr/^the local backend is not in this mod_rlaas \(\Q$module\E\): httpd -t refuses RLaaSBackend local: Invalid command 'RLaaSBackend'$/,
            'a module without the local engine: the suite is to skip, saying why');
        pass('(the local engine is not in this module: nothing listens nowhere)');
    }
    print $in "\n"; close $in; waitpid $pid, 0;
}
{
    my $out = `RLAAS_KIT_SKIP='no local engine here' $^X -I$lib -MTest::More -e 'use Apache::TestRLaaS; plan tests => 1; ok(0)' 2>&1`;
    is($out, "1..0 # SKIP no local engine here\n",
        'RLAAS_KIT_SKIP: a test file that loads the kit skips, saying why');
}
{
    local $ENV{RLAAS_MODULE} = '/nonexistent/mod_rlaas.so';
    ok(!eval { Apache::TestRLaaS::module_path(); 1 }, 'RLAAS_MODULE that does not exist: an error');
    like($@, qr{^mod_rlaas: /nonexistent/mod_rlaas\.so does not exist \(RLAAS_MODULE}, '... naming it');
}
{
    my ($pre, $post) = Apache::TestRLaaS->config_lines;
    like($pre, qr/<IfModule !rlaas_module>\s+LoadModule rlaas_module "\$\{RLAAS_MODULE\}"/,
        'config: LoadModule from RLAAS_MODULE unless loaded already');
    like($post, qr/RLaaSRedis \$\{RLAAS_KIT_REDIS\}\n\s+RLaaSKeyPrefix \$\{RLAAS_KIT_PREFIX\}\n/,
        'config: RLaaSRedis and RLaaSKeyPrefix from the environment, read when httpd starts');
    unlike($post, qr/RLaaSBackend/, 'config: the backend is left to the site with Redis');
    (undef, $post) = Apache::TestRLaaS->config_lines(backend => 'local');
    like($post, qr/RLaaSBackend local/, 'config: RLaaSBackend local with the local backend');
}

# ---------------------------------------------------------------- reset_counters
{
    my $r = Apache::TestRLaaS::Redis->start;
    local $ENV{RLAAS_KIT_REDIS} = '127.0.0.1:' . $r->port;
    local $ENV{RLAAS_KIT_BACKEND} = 'redis';
    # a prefix with glob characters: MATCH must not take them as such
    local $ENV{RLAAS_KIT_PREFIX} = 'suite[1]*:';
    my @mine = map { "suite[1]*:z:$_" } 1 .. 2500;
    my @other = ('suite1x:z:a', 'suite[1]x:z:a', 'suite[1:z', 'other:suite[1]*:z', 'suite[1]', 'k');
    while (my @b = splice @mine, 0, 500) { $r->cmd('MSET', map { $_ => 1 } @b) }
    $r->cmd('SET', $_, 1) for @other;
    is(reset_counters(), 2500, 'reset_counters: the 2,500 keys under the prefix, reported');
    is_deeply([keys_like('*', $r)], [sort @other], 'every other key is still there');
    is(reset_counters(), 0, 'again: nothing left to delete');
    local $ENV{RLAAS_KIT_PREFIX} = '';
    ok(!eval { reset_counters(); 1 } && $@ =~ /only keys under the suite's own prefix/,
        'no prefix: refused, never every key');
    ok(!eval { Apache::TestRLaaS::delete_keys('', $r); 1 }, 'delete_keys of an empty prefix: refused');
    local $ENV{RLAAS_KIT_REDIS};
    local $ENV{RLAAS_KIT_PREFIX} = 'p:';
    ok(!eval { reset_counters(); 1 } && $@ =~ /no Redis \(RLAAS_KIT_REDIS is not set/,
        'no Redis known: an error that says so');
}

# ---------------------------------------------------------------- the keeper
{
    my $tdir = tempdir('kit-keeper-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $state = "$tdir/state";
    my $k = Apache::TestRLaaS::Keeper->start(sub {
        my $r = Apache::TestRLaaS::Redis->start;
        return ([$r], { PORT => $r->port, TEXT => "a\nb\\c" });
    });
    is($k->env->{TEXT}, "a\nb\\c", 'keeper: the environment comes through intact');
    $k->detach($state, $k->env);
    my $port = $k->env->{PORT};
    # what ending this process would do: tell the keeper to stay
    $k->Apache::TestRLaaS::Keeper::_finish;
    sleep 0.3;
    my $att = Apache::TestRLaaS::Keeper->attach($state);
    is($att && $att->{PORT}, $port, 'detached: a later run finds the servers');
    is(Apache::TestRLaaS::Redis->attach(port => $port)->cmd('PING'), 'PONG', 'and they still answer');
    Apache::TestRLaaS::Keeper->stop_detached($state);
    ok(!Apache::TestRLaaS::Keeper->attach($state), 'stop_detached: the keeper is gone');
    ok(!IO::Socket::INET->new("127.0.0.1:$port"), 'and so is its server');
    Apache::TestRLaaS::Keeper->save_state($state, { RLAAS_KIT_BACKEND => 'local' });
    is(Apache::TestRLaaS::Keeper->attach($state)->{RLAAS_KIT_BACKEND}, 'local',
        'a state without a keeper (local backend): found until stopped');
    Apache::TestRLaaS::Keeper->stop_detached($state);
    ok(!Apache::TestRLaaS::Keeper->attach($state), '... and gone after stop_detached');
    ok(!eval { Apache::TestRLaaS::Keeper->start(sub { die "no redis here\n" }); 1 }
        && $@ =~ /^no redis here/, 'the servers fail to start: start dies with their message');
}

done_testing;
