#!/bin/sh
# t/headers.t: a CGI response (200)
printf 'Content-Type: text/plain\r\n\r\ncgi ok\n'
