# Every page is limited to 20 a minute per address, but /static/ never is.
use strict;
use warnings;
use Test::More;
use Apache::TestRLaaS;

reset_counters();
is_exempt('/static/app.css', 30, 'static files: 30 requests, past the site limit, none limited');
allows_then_429('/', 20, 'any other page: 20 a minute, then 429');
is_exempt('/static/app.css', 5, 'static files are still served while the rest is refused');

done_testing;
