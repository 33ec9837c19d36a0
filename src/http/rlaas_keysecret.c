#include "rlaas_keysecret.h"

#include "http_core.h"
#include "http_log.h"
#include "apr_file_io.h"
#include "apr_strings.h"

#include <openssl/crypto.h>

APLOG_USE_MODULE(rlaas);

/* One secret per reading of the configuration, like the main server's
 * policies: made anew in pre_config, freed with the pool of the
 * configuration that read it, inherited by the children. */
static rlaas_key_secret_t *secret;
static const char *secret_path;
static int secret_loose;    /* group or others may read the file */
static int credential_seen; /* a credential source is configured */

const rlaas_key_secret_t *rlaas_keysecret(void)
{
    return secret;
}

void rlaas_keysecret_pre_config(void)
{
    secret = NULL;
    secret_path = NULL;
    secret_loose = 0;
    credential_seen = 0;
}

void rlaas_keysecret_note_source(const rlaas_source_t *src)
{
    credential_seen |= src->credential;
}

static apr_status_t free_secret(void *s)
{
    if (secret == s)
        secret = NULL;
    rlaas_key_secret_free(s);
    return APR_SUCCESS;
}

static const char *file_error(cmd_parms *cmd, const char *path,
                              const char *what)
{
    return apr_psprintf(cmd->pool, "%s: the secret file '%s' %s",
                        cmd->cmd->name, path, what);
}

/* Reads at most RLAAS_KEY_SECRET_MAX + 1 bytes of the file into buf (so
 * that /dev/urandom, say, is refused instead of read for ever). */
static const char *read_secret(cmd_parms *cmd, const char *path,
                               unsigned char *buf, apr_size_t *n)
{
    apr_file_t *f;
    apr_finfo_t fi;
    apr_status_t rv;
    char err[120];

    rv = apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, 0,
                       cmd->temp_pool);
    if (rv == APR_SUCCESS)
        rv = apr_file_info_get(&fi, APR_FINFO_TYPE | APR_FINFO_PROT, f);
    if (rv != APR_SUCCESS)
        return file_error(cmd, path,
                          apr_psprintf(cmd->pool, "cannot be read: %s",
                                       apr_strerror(rv, err, sizeof(err))));
    if (fi.filetype != APR_REG) {
        apr_file_close(f);
        return file_error(cmd, path, "is not a regular file");
    }
    secret_loose = (fi.protection & (APR_GREAD | APR_WREAD)) != 0;
    rv = apr_file_read_full(f, buf, RLAAS_KEY_SECRET_MAX + 1, n);
    apr_file_close(f);
    if (rv != APR_SUCCESS && rv != APR_EOF)
        return file_error(cmd, path,
                          apr_psprintf(cmd->pool, "cannot be read: %s",
                                       apr_strerror(rv, err, sizeof(err))));
    if (*n == 0)
        return file_error(cmd, path, "is empty");
    if (*n < RLAAS_KEY_SECRET_MIN)
        return file_error(
            cmd, path,
            apr_psprintf(cmd->pool,
                         "holds %" APR_SIZE_T_FMT " bytes: at least %d are "
                         "needed (e.g. head -c 32 /dev/urandom > FILE)",
                         *n, RLAAS_KEY_SECRET_MIN));
    if (*n > RLAAS_KEY_SECRET_MAX)
        return file_error(cmd, path,
                          apr_psprintf(cmd->pool, "is longer than %d bytes",
                                       RLAAS_KEY_SECRET_MAX));
    return NULL;
}

const char *rlaas_keysecret_set(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    const char *path;
    unsigned char *buf;
    apr_size_t n = 0;
    rlaas_key_secret_t *s;

    (void)dummy;
    if (err != NULL)
        return err;
    path = ap_server_root_relative(cmd->pool, arg);
    if (path == NULL || *arg == '\0')
        return apr_psprintf(cmd->pool, "%s: invalid path '%s'", cmd->cmd->name,
                            arg);
    buf = apr_palloc(cmd->temp_pool, RLAAS_KEY_SECRET_MAX + 1);
    err = read_secret(cmd, path, buf, &n);
    s = err == NULL ? rlaas_key_secret_make(buf, n) : NULL;
    /* the bytes live on only as the hash's started state */
    OPENSSL_cleanse(buf, RLAAS_KEY_SECRET_MAX + 1);
    if (err != NULL)
        return err;
    if (s == NULL)
        return file_error(cmd, path, "could not be made a key (OpenSSL)");
    apr_pool_cleanup_register(cmd->pool, s, free_secret, apr_pool_cleanup_null);
    secret = s;
    secret_path = path;
    return NULL;
}

void rlaas_keysecret_post_config(server_rec *s)
{
    /* httpd reads its configuration twice at start-up: say it once */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG)
        return;
    if (secret != NULL) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                     "RLAAS0161: RLaaSKeySecret"
                     ": hashed identities are keyed with the secret read "
                     "from %s",
                     secret_path);
        if (secret_loose)
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                         "RLAAS0162: RLaaSKeySecret"
                         ": %s can be read by other users than its owner: "
                         "make it mode 0600",
                         secret_path);
    }
    else if (credential_seen)
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                     "RLAAS0160: credentials (api_key, cookies, "
                     "Authorization) are hashed without a secret in keys, "
                     "logs and the console: a weak one can be found from its "
                     "hash offline; set RLaaSKeySecret");
}
