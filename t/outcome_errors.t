# RLaaSCountIf and RLaaSBan at configuration time (`apache2 -t` on small
# configurations that load the built module): every documented form is
# accepted, in the server, a <Location> and with off; a bad expression,
# duration, factor or maximum is refused naming the directive and the
# value.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use RLaaS::Test qw(:all);

plan skip_all => 'mod_rlaas is not built' unless have_module();

config_accepted(<<'EOC', 'every form');
RLaaSCountIf "%{REQUEST_STATUS} -ge 500"
RLaaSBan 10m
<Location /wp-login.php>
    RLaaSLimit 5
    RLaaSWindow 10m
    RLaaSCountIf "%{REQUEST_STATUS} in { '401', '403' } || -n %{resp:X-Login-Failed}"
    RLaaSBan 15m escalate 4 1d
</Location>
<Location /other>
    RLaaSCountIf off
    RLaaSBan off
</Location>
<Location /ms>
    RLaaSBan 500ms escalate 2 500ms
</Location>
EOC

my @bad = (
    ['RLaaSCountIf "%{REQUEST_STATUS} =="', qr/RLaaSCountIf: invalid expression '%\{REQUEST_STATUS\} =='/, 'a broken expression'],
    ['RLaaSCountIf "%{NO_SUCH_VAR} == 1"', qr/RLaaSCountIf: invalid expression '%\{NO_SUCH_VAR\} == 1'/, 'an unknown variable'],
    ['RLaaSCountIf ""', qr/RLaaSCountIf takes one argument, EXPR or off/, 'an empty expression (httpd refuses it)'],
    ['RLaaSBan soon', qr/RLaaSBan: invalid DURATION 'soon'/, 'a duration that is no duration'],
    ['RLaaSBan 0s', qr/RLaaSBan: invalid DURATION '0s'/, 'a duration of 0'],
    ['RLaaSBan 400d', qr/RLaaSBan: invalid DURATION '400d'/, 'a duration over the bound'],
    ['RLaaSBan 10m escalate 1 1h', qr/RLaaSBan: invalid FACTOR '1'/, 'a factor of 1'],
    ['RLaaSBan 10m escalate x 1h', qr/RLaaSBan: invalid FACTOR 'x'/, 'a factor that is no number'],
    ['RLaaSBan 10m escalate 1001 1h', qr/RLaaSBan: invalid FACTOR '1001'/, 'a factor over 1000'],
    ['RLaaSBan 10m escalate 2 5m', qr/RLaaSBan: invalid MAX '5m'.*at least DURATION/, 'a maximum below the duration'],
    ['RLaaSBan 10m escalate 2 never', qr/RLaaSBan: invalid MAX 'never'/, 'a maximum that is no duration'],
    ['RLaaSBan 10m double 2 1h', qr/RLaaSBan: invalid word 'double'/, 'not "escalate"'],
    ['RLaaSBan 10m escalate 2', qr/RLaaSBan: takes DURATION \[escalate FACTOR MAX\], or off, not 3 arguments/, 'escalate without MAX'],
);
config_refused(qq{RLaaSPolicy p 5 1m countif="%{REQUEST_STATUS} =="\n},
    qr/RLaaSPolicy p: invalid expression in 'countif=%\{REQUEST_STATUS\} =='/, 'a policy with a broken countif=');
config_accepted(qq{RLaaSPolicy p 5 1m strategy=gcra countif="%{REQUEST_STATUS} -ge 500"\n<Location /a>\n    RLaaSApply p\n</Location>\n},
    'a policy with countif=');
for my $b (@bad) {
    my ($line, $re, $name) = @$b;
    config_refused("<Location /x>\n    RLaaSLimit 5\n    $line\n</Location>\n", $re, $name);
}

done_testing;
