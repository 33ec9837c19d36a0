/*
 * The one command of the request path, written straight into a buffer in
 * the Redis protocol (RESP): EVALSHA <sha1> 1 <key> <limit> <window>.
 * hiredis' generic formatter builds it piece by piece in growing strings;
 * here it is a handful of copies. No httpd headers.
 */
#ifndef RLAAS_RESP_H
#define RLAAS_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Room for the command with a key of key_len bytes and decimal limit and
 * window arguments (each at most 20 digits). */
#define RLAAS_RESP_EVALSHA_MAX(key_len) ((key_len) + 160)

/* Writes the command into buf (at least RLAAS_RESP_EVALSHA_MAX(key_len)
 * bytes) and returns its length. */
size_t rlaas_resp_evalsha(char *buf, const char *sha1, const char *key,
                          size_t key_len, const char *limit,
                          const char *window);

#endif
