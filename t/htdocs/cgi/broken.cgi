#!/bin/sh
# t/headers.t: a CGI script whose output is not a CGI response: httpd
# answers 500 ("malformed header from script")
echo 'this is not a header line'
