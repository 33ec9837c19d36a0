#!/bin/sh
# t/headers.t: a CGI script that answers 500 itself
printf 'Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\ncgi failed\n'
