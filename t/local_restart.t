# The local engine's table across a graceful restart (the state is kept:
# the shared memory belongs to the parent, and the new children inherit
# it), and under load while children are killed (a child killed holding a
# stripe's lock leaves nothing stuck: the next one recovers the lock).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $LV = 'rlaas_local';
my $em = error_log_mark();
sub st_line { join ' ', map { $_->code . '/' . (status_of($_) // '-') } @_ }
sub keep { my ($u, $n) = @_; map { req('/lo/keep', vhost => $LV, h => { 'X-User' => $u }) } 1 .. $n }

# ---------------------------------------------------------------- graceful
{
    my $u = uid('lo-keep');
    is(st_line(keep($u, 2)), '200/allowed 200/allowed', 'before the restart: 2 of 3 used');
    my $held = metrics()->{rlaas_local_identities};
    forget_connections();
    my $gen = graceful_restart();
    ok($gen, "graceful restart: generation $gen serves");
    is(st_line(keep($u, 2)), '200/allowed 429/denied', 'after it: the count goes on (1 more, then 429)');
    cmp_ok(metrics()->{rlaas_local_identities}, '>=', $held, 'the table kept its identities');
    like(error_log_since($em), qr/RLAAS0060: local engine table kept across the restart/,
        'logged: the table was kept');
}

# ---------------------------------------------------------------- children killed
{
    my $m0 = metrics();
    my $tag = uid('lo-kill');
    my $t0 = time + 0.3;
    my $h = start_clients(tag => $tag, keepalive => 0, clients => [
        map { [{ path => '/lo/load', vhost => $LV, h => { 'X-User' => "lo-kill-$_" }, at => $t0,
                 until => $t0 + 2.5, gap => 0.005 }] } 1 .. 6 ]);
    my $parent = httpd_pid();
    my $killed = 0;
    for my $at (0.5, 1.0, 1.5) {
        my $d = $t0 + $at - time;
        sleep $d if $d > 0;
        chomp(my @kids = `pgrep -P $parent`);
        # not mod_cgid's daemon: the children serving requests
        my @servers = grep { (`cat /proc/$_/cmdline 2>/dev/null` // '') =~ /apache2|httpd/ } @kids;
        if (@servers) { $killed += kill 'KILL', $servers[int rand @servers] }
    }
    my @r = wait_clients($h);
    ok($killed >= 1, "$killed children killed with SIGKILL under load");
    # a request whose child was killed under it gets no answer; every
    # answer is a decision
    my @bad = grep { $_->{code} != 599 && !($_->{code} == 200 && ($_->{status} // '') eq 'allowed') } @r;
    is(scalar(@bad), 0, 'every answer under load: 200, decided (' . count_by(map { $_->{code} } @r) . ')');
    my $after = wait_for(sub {
        !grep { (status_of($_) // '') ne 'allowed' }
            map { req_close('/lo/load', vhost => $LV, h => { 'X-User' => "lo-kill-$_" }) } 1 .. 6;
    }, 10, 0.2);
    ok($after, 'afterwards every client is decided again: no stripe lock left stuck');
    my $m1 = metrics();
    is(mdelta($m0, $m1, qq{rlaas_local_errors_total{kind="busy"}}), 0, 'no request timed out on a stripe lock');
    is(mdelta($m0, $m1, qq{rlaas_local_errors_total{kind="broken"}}), 0, 'no stripe lock left unusable');
    note('stripes emptied after a child died changing one: ' . mdelta($m0, $m1, 'rlaas_local_resets_total'));
}

done_testing();
