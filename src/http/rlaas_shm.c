#include "rlaas_shm.h"

apr_shm_t *rlaas_shm_kept(apr_pool_t *keep, const char *name)
{
    void *shm = NULL;

    apr_pool_userdata_get(&shm, name, keep);
    return shm;
}

void rlaas_shm_drop(apr_pool_t *keep, const char *name)
{
    apr_shm_t *old = rlaas_shm_kept(keep, name);

    if (old != NULL) {
        apr_pool_userdata_set(NULL, name, apr_pool_cleanup_null, keep);
        apr_shm_destroy(old);
    }
}

apr_shm_t *rlaas_shm_make(apr_pool_t *keep, const char *name, apr_size_t size,
                          apr_status_t *rv)
{
    apr_shm_t *shm = NULL;

    rlaas_shm_drop(keep, name);
    *rv = apr_shm_create(&shm, size, NULL, keep);
    if (*rv != APR_SUCCESS)
        return NULL;
    /* new anonymous memory is all zero (mmap, shmget): not written here,
     * so that a large table's pages are not all made resident at once */
    apr_pool_userdata_set(shm, name, apr_pool_cleanup_null, keep);
    return shm;
}

apr_shm_t *rlaas_shm_sized(apr_pool_t *keep, const char *name, apr_size_t size,
                           apr_status_t *rv)
{
    apr_shm_t *shm = rlaas_shm_kept(keep, name);

    *rv = APR_SUCCESS;
    if (shm != NULL && apr_shm_size_get(shm) == size)
        return shm;
    return rlaas_shm_make(keep, name, size, rv);
}
