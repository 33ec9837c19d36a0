#!/bin/sh
# t/countif.t: a login form whose password check is slow (0.5 s, as a
# bcrypt hash or a remote directory can be): the right password gets 200,
# a wrong one 401 (the password in a POST body, or in the query string).
# Each check is noted in t/logs/countif-checks.log with
# the client's X-User, so the test counts how many reached it.
body=
if [ "$REQUEST_METHOD" = POST ] && [ -n "$CONTENT_LENGTH" ]; then
    body=$(head -c "$CONTENT_LENGTH")
fi
echo "${HTTP_X_USER:--}" >>"${DOCUMENT_ROOT%/}/../logs/countif-checks.log" 2>/dev/null
# slow=1 in the query string: every answer takes a second
case "${QUERY_STRING:-}" in *slow=1*) sleep 1 ;; esac
case "$body&${QUERY_STRING:-}" in
*pwd=right*)
    printf 'Content-Type: text/plain\r\n\r\nwelcome\n' ;;
*)
    sleep 0.5
    printf 'Status: 401 Unauthorized\r\nContent-Type: text/plain\r\n\r\nwrong password\n' ;;
esac
