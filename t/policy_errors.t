# Policies, costs and limits read per request at configuration time
# (`apache2 -t` on small self-contained configurations that load the built
# module): every documented form is accepted; a bad one is refused with a
# message naming the directive, the value and what is accepted: unknown
# and duplicate names, a policy used before it is declared, a cost above
# the limit, more than 8 policies for a request, bad options, bounds.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not built' unless have_module();

my $policies = <<'EOC';
RLaaSPolicy burst 10 1s
RLaaSPolicy hourly 1000 1h strategy=gcra key="api_key"
RLaaSPolicy per-ip 100 1m strategy=token key=ip cost=2
RLaaSPolicy both 50 10s key="ip 'header:X-Tenant'"
RLaaSPolicy report 100 1d strategy=fixed key="expr=%{HTTP:X-A}" cost=0
EOC

# ---------------------------------------------------------------- accepted
config_accepted($policies . <<'EOC', 'policies, applied, removed and enforced');
RLaaSEnforce per-ip
RLaaSLimitMax 500
<Location /api>
    RLaaSApply burst hourly
</Location>
<Location /api/free>
    RLaaSApply -burst
</Location>
<Location /api/none>
    RLaaSApply none both
</Location>
<VirtualHost 127.0.0.1:1>
    RLaaSPolicy vhost-own 5 1m
    RLaaSEnforce vhost-own burst
    <Location /v>
        RLaaSApply vhost-own hourly
        RLaaSCost expr=%{HTTP:X-Cost}
        RLaaSLimit expr=%{ENV:PLAN} 10
    </Location>
</VirtualHost>
EOC
config_accepted(<<'EOC', 'RLaaSCost N, RLaaSCost 0, RLaaSLimit expr= without a fallback');
<Location /a>
    RLaaSLimit 5
    RLaaSCost 5
</Location>
<Location /b>
    RLaaSCost 0
    RLaaSLimit expr=%{HTTP:X-Plan}
</Location>
EOC

# ---------------------------------------------------------------- refused
config_refused($policies . "<Location /x>\n    RLaaSApply burst nope\n</Location>\n",
    qr/RLaaSApply: unknown policy 'nope': expected the name of a policy declared before with RLaaSPolicy \(declared: both,burst,hourly,per-ip,report\)/,
    'RLaaSApply of an unknown name');
config_refused("RLaaSEnforce nope\n", qr/RLaaSEnforce: unknown policy 'nope': expected .* \(none is declared\)/,
    'RLaaSEnforce of an unknown name');
config_refused("<Location /x>\n    RLaaSApply later\n</Location>\nRLaaSPolicy later 5 1m\n",
    qr/RLaaSApply: unknown policy 'later'/, 'a policy used before it is declared (like a Define)');
config_refused("RLaaSPolicy twice 5 1m\nRLaaSPolicy twice 6 1m\n",
    qr/RLaaSPolicy: duplicate name 'twice': a policy of that name is declared already/, 'a duplicate name');
config_refused("RLaaSPolicy main 5 1m\n<VirtualHost 127.0.0.1:1>\n    RLaaSPolicy main 6 1m\n</VirtualHost>\n",
    qr/RLaaSPolicy: duplicate name 'main'/, "a virtual host re-declaring a main server's name");
config_refused("RLaaSPolicy p 5 1m cost=6\n",
    qr/RLaaSPolicy p: invalid value 'cost=6': expected a cost from 0 to the limit \(5\)/, 'a cost above the limit');
config_refused("<Location /x>\n    RLaaSLimit 5\n    RLaaSCost 6\n</Location>\n",
    qr/RLaaSCost: invalid value: cost 6 above the limit 5 of the same section/, 'RLaaSCost above RLaaSLimit');
config_refused("<Location /x>\n    RLaaSCost 6\n    RLaaSLimit 5\n</Location>\n",
    qr/RLaaSLimit: invalid value: cost 6 above the limit 5/, 'and in the other order');
config_refused("<Location /x>\n    RLaaSCost many\n</Location>\n",
    qr/RLaaSCost: invalid value 'many': expected an integer from 0 \(check without consuming\) to the limit, expr=EXPRESSION, or bytes/,
    'RLaaSCost that is no number');
config_refused("<Location /x>\n    RLaaSCost expr=%{\n</Location>\n",
    qr/RLaaSCost: invalid expression in 'expr=%\{'/, 'RLaaSCost expr= that does not parse');
config_refused("<Location /x>\n    RLaaSLimit expr=%{HTTP:X} lots\n</Location>\n",
    qr/RLaaSLimit: invalid fallback 'lots': expected an integer from 1 to 1000000000/, 'a fallback that is no limit');
config_refused("<Location /x>\n    RLaaSLimit 5 7\n</Location>\n",
    qr/RLaaSLimit: invalid value '5 7': expected an integer from 1 to 1000000000, or expr=EXPRESSION and an optional fallback/,
    'a fallback without expr=');
config_refused("RLaaSPolicy p 0 1m\n", qr/RLaaSPolicy p: invalid limit '0': expected an integer from 1 to 1000000000/, 'limit 0');
config_refused("RLaaSPolicy p 5 1w\n", qr/RLaaSPolicy p: invalid window '1w': expected a positive duration/, 'a bad window');
# one reader of windows for both directives: the same words for the same value
config_refused("<Location /x>\n    RLaaSLimit 5\n    RLaaSWindow 1w\n</Location>\n",
    qr/RLaaSWindow: invalid window '1w': expected a positive duration[^\n]*, from 1ms to 30d \(or Nd, Nw, NM followed by 'calendar'\)/,
    'RLaaSWindow: a bad window, told as a policy\'s is');
config_refused("RLaaSPolicy p 5 1w\n",
    qr/RLaaSPolicy p: invalid window '1w': expected a positive duration[^\n]*, from 1ms to 30d \(or Nd, Nw, NM followed by 'calendar'\)/,
    'RLaaSPolicy: the same words');
config_refused("RLaaSPolicy p 5 2x calendar\n", qr/RLaaSPolicy p: invalid value '2x calendar'/, 'a bad calendar window in a policy');
config_refused("<Location /x>\n    RLaaSLimit 5\n    RLaaSWindow 2x calendar\n</Location>\n",
    qr/RLaaSWindow: invalid value '2x calendar'/, 'the same in RLaaSWindow');
config_refused("RLaaSPolicy p 5\n", qr/RLaaSPolicy: expected NAME LIMIT WINDOW \[calendar\] \[strategy=STRATEGY\] \[key="SOURCES"\] \[cost=N\|bytes\], got 'p 5'/,
    'too few words');
config_refused("RLaaSPolicy a:b 5 1m\n", qr/RLaaSPolicy: invalid name 'a:b': expected a name of 1 to 64/, 'a name that is no zone name');
config_refused("RLaaSPolicy a\@b 5 1m\n", qr/RLaaSPolicy: invalid name 'a\@b'/, "a name with '\@' (a tenant's namespace)");
config_refused("RLaaSPolicy p 5 1m strategy=bogus\n", qr/RLaaSPolicy p: invalid value 'strategy=bogus': expected one of fixed/,
    'a bad strategy');
config_refused("RLaaSPolicy p 5 1m key=bogus\n", qr/RLaaSPolicy: invalid value 'bogus': expected ip, user, api_key/, 'a bad source');
config_refused("RLaaSPolicy p 5 1m key=\"ip\n", qr/RLaaSPolicy: a quote is left open/, 'a quote left open');
config_refused("RLaaSPolicy p 5 1m colour=red\n",
    qr/RLaaSPolicy p: invalid option 'colour=red': expected strategy=STRATEGY, key="SOURCES", cost=N, cost=bytes or countif=EXPR/, 'an unknown option');
config_refused("RLaaSLimitMax 0\n", qr/RLaaSLimitMax: invalid value '0': expected an integer from 1 to 1000000000/, 'RLaaSLimitMax 0');
config_refused("<Location /x>\n    RLaaSPolicy p 5 1m\n</Location>\n", qr/RLaaSPolicy not allowed (?:here|in <Location> context)/, 'RLaaSPolicy in a section');
config_refused("<Location /x>\n    RLaaSEnforce p\n</Location>\n", qr/RLaaSEnforce not allowed (?:here|in <Location> context)/, 'RLaaSEnforce in a section');
config_refused("<Location /x>\n    RLaaSLimitMax 5\n</Location>\n", qr/RLaaSLimitMax not allowed (?:here|in <Location> context)/, 'RLaaSLimitMax in a section');

# ---------------------------------------------------------------- bounds
{
    my $decl = join '', map { "RLaaSPolicy p$_ 5 1m\n" } 1 .. 9;
    config_accepted($decl . "<Location /x>\n    RLaaSApply " . join(' ', map { "p$_" } 1 .. 7) . "\n</Location>\n",
        '7 applied and the own limit: 8');
    config_refused($decl . "<Location /x>\n    RLaaSApply " . join(' ', map { "p$_" } 1 .. 8) . "\n</Location>\n",
        qr/RLaaSApply: too many policies: with those enforced and the section's own limit, a request here would meet more than 8/,
        '8 applied and the own limit: 9');
    config_refused($decl . "RLaaSEnforce p1 p2 p3 p4\n<Location /x>\n    RLaaSApply p5 p6 p7 p8\n</Location>\n",
        qr/RLaaSApply: too many policies/, '4 enforced, 4 applied and the own limit');
    config_refused($decl . "RLaaSEnforce " . join(' ', map { "p$_" } 1 .. 8) . "\n",
        qr/RLaaSEnforce: too many policies enforced with 'p8': expected at most 7 for a host/, '8 enforced');
    config_refused($decl . "RLaaSEnforce p1 p2 p3 p4\n<VirtualHost 127.0.0.1:1>\n    RLaaSEnforce p5 p6 p7 p8\n</VirtualHost>\n",
        qr/RLaaSEnforce: too many policies enforced with 'p8'/, "a host's enforced ones add to the main server's");
}

done_testing();
