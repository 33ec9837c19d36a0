/*
 * RLaaSKeySecret: the secret that keys the hash of hashed key segments
 * (credentials, and any value too long or too strange to stand in a key
 * as itself; rlaas_keyhash.h). One per server, read from a file at
 * start-up (as root, before httpd drops privileges), never from a
 * .htaccess, never logged. Servers that share a Redis share the file, so
 * that one client has one key on all of them.
 *
 * Without it the hash stays the unkeyed SHA-1 of earlier versions, so
 * existing keys stay valid; a notice at start-up says so when a credential
 * source (api_key, cookie:, header:Authorization ...) is configured.
 */
#ifndef RLAAS_KEYSECRET_H
#define RLAAS_KEYSECRET_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_keyhash.h"
#include "rlaas_parse.h"

/* The directive (server config only). */
const char *rlaas_keysecret_set(cmd_parms *cmd, void *dummy, const char *arg);

/* Notes a source parsed from the configuration: a credential one without
 * a secret is worth the start-up notice. */
void rlaas_keysecret_note_source(const rlaas_source_t *src);

/* A new reading of the configuration starts (pre_config). */
void rlaas_keysecret_pre_config(void);

/* Start-up lines: the secret in use (not its bytes), a file others can
 * read, or the notice that credential hashes are unkeyed. */
void rlaas_keysecret_post_config(server_rec *s);

/* The secret, or NULL when none is configured. */
const rlaas_key_secret_t *rlaas_keysecret(void);

#endif
