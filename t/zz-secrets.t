# The Redis passwords (right and wrong, plain and ACL) never appear in any
# log, at LogLevel rlaas:trace8, after connections that succeeded and
# connections that failed authentication. Runs last, so it also covers what
# the other test files logged.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my %pw = (
    'RLaaSRedisPassword (requirepass)' => $ENV{RLAAS_TEST_REDIS_AUTH_PASSWORD},
    'RLaaSRedisPassword (ACL user)'    => $ENV{RLAAS_TEST_REDIS_ACL_PASSWORD},
    'RLaaSRedisPassword (wrong)'       => $ENV{RLAAS_TEST_REDIS_BAD_PASSWORD},
);
ok(length($_) >= 8, 'the suite has a test password') for values %pw;

# traffic that authenticates, fails to, and fails open
my $u = uid('sec');
is(hit('/rl/auth/x', vhost => 'rlaas_auth', h => { 'X-User' => $u }), 200, 'AUTH with a password: allowed');
is(hit('/rl/acl/x', vhost => 'rlaas_acl', h => { 'X-User' => $u }), 200, 'AUTH with an ACL user: allowed');
is(hit('/rl/bad/x', vhost => 'rlaas_badauth', h => { 'X-User' => $u }), 500, 'wrong password: 500');
is(hit('/rl/bad-open/x', vhost => 'rlaas_badauth', h => { 'X-User' => $u }), 200, 'wrong password, fail open: 200');
sleep 1;

my $err = error_log_since(0);
like($err, qr/\[rlaas:trace\d\]/, 'the error log holds rlaas trace messages (LogLevel rlaas:trace8)');
like($err, qr/\[rlaas:(?:error|warn)\][^\n]*(?:auth|AUTH|WRONGPASS|password)/i,
    'the failed authentication is logged');

opendir my $dh, t_logs() or die "t/logs: $!";
my @files = grep { -f } map { catfile(t_logs(), $_) } readdir $dh;
ok(scalar(@files) >= 3, 'logs to scan: ' . join(' ', map { (split m{/})[-1] } sort @files));
for my $f (sort @files) {
    open my $fh, '<', $f or next;
    binmode $fh;
    my $text = do { local $/; <$fh> };
    my @leaks = grep { index($text, $pw{$_}) >= 0 } sort keys %pw;
    is_deeply(\@leaks, [], 'no Redis password in ' . (split m{/}, $f)[-1]);
}

done_testing();
