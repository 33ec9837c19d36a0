# Policies with the local engine (RLaaSBackend local): a request's policies
# are decided together in the server's shared memory, all or nothing (a
# denial charges no policy), exactly under 300 concurrent requests under
# every MPM; and RLaaSFailOpen local decides them in Redis' place, each
# limit divided by RLaaSLocalDivisor, as local / local_denied.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub hdr { my ($res, $h) = @_; $res->header($h) // '' }
sub rl_r { hdr($_[0], 'RateLimit') =~ /r=(\d+)/ ? $1 : '-' }
sub pdec { qq{rlaas_policy_decisions_total{policy="$_[0]",outcome="$_[1]"}} }

# ---------------------------------------------------------------- all or nothing
{
    my $u = uid('pol-lo-two');
    my @r = map { req('/pol/lo/two', vhost => 'rlaas_pol_local', h => { 'X-User' => $u }) } 1 .. 5;
    is(join(' ', map { $_->code } @r), '200 200 200 429 429',
        'pol-lo-a (3 an hour) and pol-lo-b (5): the smaller quota holds');
    is(status_of($r[3]), 'denied', 'RLAAS_STATUS denied (the local backend decides as Redis would)');
    is(hdr($r[0], 'RateLimit-Policy'), '"pol-lo-a";q=3;w=3600, "pol-lo-b";q=5;w=3600', 'RateLimit-Policy lists both');
    my $c = req('/pol/lo/b', vhost => 'rlaas_pol_local', h => { 'X-User' => $u });
    is($c->code, 200, 'a check (cost 0) of pol-lo-b alone');
    is(rl_r($c), 2, 'pol-lo-b was charged for the 3 admitted requests only: 2 of 5 left');
}

# ---------------------------------------------------------------- exactness
{
    my $u = uid('pol-lo-exact');
    my $m0 = metrics();
    my $h = start_clients(clients => [map {
        [{ path => '/pol/lo/exact', vhost => 'rlaas_pol_local', h => { 'X-User' => $u }, n => 10, go => 1 }]
    } 1 .. 30]);
    release_clients($h);
    my @res = wait_clients($h);
    my $m1 = metrics();
    is(count_by(map { "$_->{code}/" . ($_->{status} // '-') } @res), '200/allowed x100 429/denied x200',
        '300 requests from 30 concurrent clients against pol-lo-small (100) and pol-lo-big (1000): exactly 100 allowed');
    my $c = req('/pol/lo/check', vhost => 'rlaas_pol_local', h => { 'X-User' => $u });
    is(rl_r($c), 900, 'pol-lo-big counts the 100 admitted requests only (900 of 1000 left)');
    is(mdelta($m0, $m1, pdec('pol-lo-small', 'denied')), 200, 'pol-lo-small denied 200');
    is(mdelta($m0, $m1, pdec('pol-lo-big', 'allowed')), 100, 'pol-lo-big: 100 allowed');
}

# ---------------------------------------------------------------- RLaaSFailOpen local
{
    my $u = uid('pol-lf');
    my $m0 = metrics();
    my @r = map { req('/pol/lf', vhost => 'rlaas_pol_local_fo', h => { 'X-User' => $u }) } 1 .. 5;
    my $m1 = metrics();
    is(join(' ', map { $_->code . '/' . (status_of($_) // '-') } @r),
        '200/local 200/local 200/local 429/local_denied 429/local_denied',
        'Redis down: pol-lf-a (6, 3 per server of 2) and pol-lf-b (10, 5) decided locally; the smaller share holds');
    like(hdr($r[3], 'Retry-After'), qr/^\d+$/, 'a local denial has Retry-After');
    is(mdelta($m0, $m1, pdec('pol-lf-a', 'local_denied')), 2, 'pol-lf-a: 2 local_denied');
    is(mdelta($m0, $m1, pdec('pol-lf-b', 'local')), 3, 'pol-lf-b: charged for the 3 admitted requests (local)');
}

done_testing();
