#!/bin/sh
# t/outcome.t: wp-login.php as WordPress answers it, for the README's
# recipe: a POST with the right password is redirected (302) to the
# dashboard; a wrong one gets the login page again (200); so does a GET.
body=
if [ "$REQUEST_METHOD" = POST ] && [ -n "$CONTENT_LENGTH" ]; then
    body=$(head -c "$CONTENT_LENGTH")
fi
case "$body" in
*pwd=right*)
    printf 'Status: 302 Found\r\nLocation: /wp-admin/\r\n\r\n' ;;
*)
    printf 'Content-Type: text/html\r\n\r\n<form>login</form>\n' ;;
esac
