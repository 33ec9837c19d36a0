# The merges a child remembers (src/http/rlaas_directives.c): httpd merges
# the sections of a request's path for every request, and each child keeps
# the merge of two configurations that live as long as the configuration,
# keyed by both. One <LocationMatch> merged onto two directories' limits,
# under two hosts whose own levels differ, gives each base its own result,
# request after request and whichever child serves it. (A tenant's
# .htaccess, merged per request, is t/calendar.t's and t/htaccess.t's:
# rewritten between requests, each version applies.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

my $V = 'rlaas_merges';

# n requests, alternating between the paths of @ways ([path, user, vhost]),
# each way's codes and its last response
sub alternate {
    my ($n, @ways) = @_;
    my (@codes, @last);
    for my $i (1 .. $n) {
        for my $w (0 .. $#ways) {
            my ($path, $u, $vhost) = @{ $ways[$w] };
            my $res = req($path, h => { 'X-User' => $u }, $vhost ? (vhost => $vhost) : ());
            push @{ $codes[$w] }, $res->code;
            $last[$w] = $res;
        }
    }
    return (\@codes, \@last);
}

my @u = map { uid("merges-$_") } qw(a b va vb);
my ($codes, $last) = alternate(5,
    ['/merges/a/ok.txt', $u[0]],
    ['/merges/b/ok.txt', $u[1]],
    ['/merges/a/ok.txt', $u[2], $V],
    ['/merges/b/ok.txt', $u[3], $V]);

is("@{ $codes->[0] }", '200 200 429 429 429', 'main server, /merges/a: its limit of 2');
is("@{ $codes->[1] }", '200 200 200 429 429', 'main server, /merges/b: its limit of 3');
is("@{ $codes->[2] }", '200 200 429 429 429', 'virtual host, /merges/a: 2');
is("@{ $codes->[3] }", '200 200 200 429 429', 'virtual host, /merges/b: 3');
like($last->[0]->header('RateLimit-Policy') // '', qr/^"merges-a";q=2;w=3600$/,
    'main server: the draft fields, zone merges-a');
like($last->[1]->header('RateLimit-Policy') // '', qr/^"merges-b";q=3;w=3600$/,
    'main server: the draft fields, zone merges-b');
is($last->[2]->header('X-RateLimit-Limit'), 2, "virtual host: its own level's legacy fields, limit 2");
is($last->[3]->header('X-RateLimit-Limit'), 3, 'virtual host: limit 3');
ok(!defined $last->[2]->header('RateLimit-Policy'), 'virtual host: no draft fields');
# the strategy the <LocationMatch> adds is each merge's: gcra's key
is(redis_cmd('EXISTS', ukey('merges-a', $u[0]) . ':gcra'), 1, 'the strategy of the <LocationMatch> applies on /merges/a (a gcra key)');
is(redis_cmd('EXISTS', ukey('merges-b', $u[1]) . ':gcra'), 1, '... and on /merges/b');

done_testing();
