# A graceful restart (SIGUSR1) re-creates the children and their Redis
# connection pools; limiting goes on with the state kept in Redis.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Spec::Functions qw(catfile);
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not loaded' unless have_module();

sub generation {
    my $c = req('/server-status?auto')->content;
    return $c =~ /^ParentServerConfigGeneration:\s*(\d+)/m ? $1 : -1;
}

my $u = uid('graceful');
my %h = (h => { 'X-User' => $u });
my @before = codes(2, '/rl/basic/graceful', %h);
is("@before", '200 200', 'before the graceful restart: 2 of 3 allowed');

my $gen = generation();
open my $fh, '<', catfile(t_logs(), 'httpd.pid') or die "httpd.pid: $!";
chomp(my $pid = <$fh>);
ok(kill('USR1', $pid), "graceful restart signalled (pid $pid)");
ok(wait_for(sub { generation() > $gen }, 20, 0.2), 'httpd is serving its next generation');

my @after = codes(2, '/rl/basic/graceful', %h);
is("@after", '200 429', 'after the restart the count goes on from Redis: 1 more allowed, then 429');
my $v = uid('graceful2');
my @p = parallel_codes(6, '/rl/merge/limit/g', h => { 'X-User' => $v });
is("@p", '200 200 200 200 200 429', 'the new children reach Redis: 5 of 6 parallel requests allowed');

done_testing();
