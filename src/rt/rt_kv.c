/*
 * Keys (rt.h, rt_int.h): a rank's put, and gets that never block: PMIx's
 * non-blocking get waited against the runtime's bound (a get PMIx never
 * answers stays with the runtime until finalize), or the plain start's own
 * table.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"

#include "common/clock.h"
#include "common/str.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void svp_rt_get_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    svp_rt_get_t *get = cbdata;
    uint64_t      one = 1;

    /* kv belongs to PMIx and is gone after we return: keep a copy */
    if ((status == PMIX_SUCCESS) && (kv != NULL)) {
        PMIX_VALUE_CREATE(get->val, 1);
        if (get->val == NULL) {
            status = PMIX_ERR_NOMEM;
        } else if ((status = PMIx_Value_xfer(get->val, kv)) != PMIX_SUCCESS) {
            PMIX_VALUE_RELEASE(get->val);
        }
    } else if (status == PMIX_SUCCESS) {
        status = PMIX_ERR_NOT_FOUND;
    }
    get->status = status;
    atomic_store(&get->done, 1);
    if (write(get->fd, &one, sizeof(one)) != sizeof(one)) {
        svp_warn("write to the runtime get fd failed: %m");
    }
}

svp_status_t svp_rt_get_start(struct svp_rt *rt, pmix_rank_t rank, const char *key,
                              svp_rt_get_t **get_p)
{
    svp_rt_get_t *get;
    pmix_proc_t   proc;
    pmix_status_t rc;

    get = calloc(1, sizeof(*get));
    if (get == NULL) {
        svp_error("out of memory asking for key '%s'", key);
        return SVP_ERR_NO_MEMORY;
    }
    get->fd = rt->get_fd;
    atomic_init(&get->done, 0);
    PMIX_LOAD_PROCID(&proc, rt->proc.nspace, rank);
    rc = PMIx_Get_nb(&proc, key, NULL, 0, svp_rt_get_cb, get);
    if (rc != PMIX_SUCCESS) {
        free(get);
        return svp_rt_status_from_pmix(rc);
    }
    *get_p = get;
    return SVP_OK;
}

/*
 * Waits until every one of the n gets has its answer, or until `until`;
 * the gets still unanswered then go to the orphans (gets[i] set to NULL).
 * Returns how many were answered.
 */
int svp_rt_get_wait(struct svp_rt *rt, svp_rt_get_t **gets, int n, double until)
{
    struct pollfd pfd = {.fd = rt->get_fd, .events = POLLIN};
    uint64_t      count;
    double        left;
    int           i, answered;

    for (;;) {
        for (i = 0, answered = 0; i < n; ++i) {
            /* gets[] is set: svp_rt_get_start() fails with an error, never
             * SVP_OK (rt.c maps no PMIx failure to it), which the analyser,
             * one file at a time, cannot see */
            /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult) */
            answered += (gets[i] == NULL) || atomic_load(&gets[i]->done);
        }
        left = until - svp_clock_now();
        if ((answered == n) || (left <= 0)) {
            break;
        }
        if ((poll(&pfd, 1, (int)(left * 1e3) + 1) < 0) && (errno != EINTR)) {
            svp_error("poll while waiting for PMIx failed: %m");
            break;
        }
        /* answers may race with this read: the flags are read again after */
        if (read(rt->get_fd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
            svp_warn("read of the runtime get fd failed: %m");
        }
    }
    for (i = 0, answered = 0; i < n; ++i) {
        if (gets[i] == NULL) {
            continue;
        }
        if (atomic_load(&gets[i]->done)) {
            ++answered;
        } else {
            gets[i]->next = rt->orphans;
            rt->orphans   = gets[i];
            gets[i]       = NULL;
        }
    }
    return answered;
}

/* Frees an answered get and whatever it holds. */
void svp_rt_get_free(svp_rt_get_t *get)
{
    if (get != NULL) {
        if (get->val != NULL) {
            PMIX_VALUE_RELEASE(get->val);
        }
        free(get);
    }
}

/* Only once PMIx can call back no more (after PMIx_Finalize). */
void svp_rt_get_free_orphans(struct svp_rt *rt)
{
    svp_rt_get_t *get;

    while ((get = rt->orphans) != NULL) {
        rt->orphans = get->next;
        svp_rt_get_free(get);
    }
}

/* PMIx_Get, bounded by timeout seconds (see svp_rt_get_t). */
svp_status_t svp_rt_get_value(struct svp_rt *rt, pmix_rank_t rank, const char *key,
                              svp_log_level_t level, double timeout,
                              pmix_value_t **val_p)
{
    svp_rt_get_t *get;
    svp_status_t  status;

    status = svp_rt_get_start(rt, rank, key, &get);
    if (status != SVP_OK) {
        svp_log(level, "PMIx_Get_nb of '%s' failed: %s", key,
                svp_status_string(status));
        return status;
    }
    if (svp_rt_get_wait(rt, &get, 1, svp_clock_now() + timeout) == 0) {
        svp_log(level, "PMIx_Get of '%s' of rank %d: no answer within %.0f s", key,
                (int)rank, timeout);
        return SVP_ERR_TIMED_OUT;
    }
    if (get->status != PMIX_SUCCESS) {
        svp_log(level, "PMIx_Get of '%s' of rank %d failed: %s", key, (int)rank,
                PMIx_Error_string(get->status));
        status = svp_rt_status_from_pmix(get->status);
        svp_rt_get_free(get);
        return status;
    }
    *val_p   = get->val;
    get->val = NULL;
    svp_rt_get_free(get);
    return SVP_OK;
}

static svp_status_t svp_rt_check_key(const char *key)
{
    if ((key == NULL) || (key[0] == '\0') || (strlen(key) > SVP_RT_MAX_KEY)) {
        svp_error("invalid runtime key '%s' (1 to %d characters)",
                  key != NULL ? key : "(null)", SVP_RT_MAX_KEY);
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_OK;
}

static svp_rt_kv_t *svp_rt_kv_find(struct svp_rt *rt, const char *key)
{
    svp_rt_kv_t *kv;

    for (kv = rt->kv; kv != NULL; kv = kv->next) {
        if (strcmp(kv->key, key) == 0) {
            return kv;
        }
    }
    return NULL;
}

static svp_status_t svp_rt_kv_put(struct svp_rt *rt, const char *key,
                                  const void *data, size_t len)
{
    svp_rt_kv_t *kv   = svp_rt_kv_find(rt, key);
    void        *copy = malloc(len > 0 ? len : 1);

    if (copy == NULL) {
        goto err_nomem;
    }
    memcpy(copy, data, len);
    if (kv == NULL) {
        kv = calloc(1, sizeof(*kv));
        if (kv == NULL) {
            goto err_free_copy;
        }
        kv->key = svp_strdup(key);
        if (kv->key == NULL) {
            free(kv);
            goto err_free_copy;
        }
        kv->next = rt->kv;
        rt->kv   = kv;
    } else {
        free(kv->data);
    }
    kv->data = copy;
    kv->len  = len;
    return SVP_OK;

err_free_copy:
    free(copy);
err_nomem:
    svp_error("out of memory storing key '%s' (%zu bytes)", key, len);
    return SVP_ERR_NO_MEMORY;
}

svp_status_t svp_rt_put(svp_rt_h rt, const char *key, const void *data, size_t len)
{
    pmix_value_t val;
    svp_status_t status;

    status = svp_rt_check_key(key);
    if (status != SVP_OK) {
        return status;
    }
    if (rt->plain) {
        return svp_rt_kv_put(rt, key, data, len);
    }

    /* PMIx_Put copies the value: the byte object may point at caller data. */
    PMIX_VALUE_CONSTRUCT(&val);
    val.type          = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)data;
    val.data.bo.size  = len;
    status            = SVP_RT_PMIX_FUNC_ERR(PMIx_Put(PMIX_GLOBAL, key, &val));
    return status;
}

svp_status_t svp_rt_get(svp_rt_h rt, int rank, const char *key, void **data_p,
                        size_t *len_p)
{
    pmix_value_t *val;
    svp_rt_kv_t  *kv;
    svp_status_t  status;
    void         *copy;
    const void   *src;
    size_t        len;

    status = svp_rt_check_key(key);
    if (status != SVP_OK) {
        return status;
    }
    if ((rank < 0) || (rank >= rt->size)) {
        svp_error("key '%s' asked of rank %d, but ranks are 0..%d", key, rank,
                  rt->size - 1);
        return SVP_ERR_INVALID_PARAM;
    }

    if (rt->plain) {
        kv = svp_rt_kv_find(rt, key);
        if (kv == NULL) {
            svp_debug("key '%s' not published", key);
            return SVP_ERR_NOT_FOUND;
        }
        src = kv->data;
        len = kv->len;
        val = NULL;
    } else {
        status = svp_rt_get_value(rt, (pmix_rank_t)rank, key, SVP_LOG_LEVEL_DEBUG,
                                  rt->timeout, &val);
        if (status != SVP_OK) {
            svp_error("key '%s' of rank %d: %s", key, rank,
                      svp_status_string(status));
            return status;
        }
        /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): set on SVP_OK, as gets[] above */
        if (val->type != PMIX_BYTE_OBJECT) {
            svp_error("key '%s' of rank %d holds PMIx type %d, not bytes", key, rank,
                      (int)val->type);
            PMIX_VALUE_RELEASE(val);
            return SVP_ERR_RUNTIME;
        }
        src = val->data.bo.bytes;
        len = val->data.bo.size;
    }

    copy = malloc(len > 0 ? len : 1);
    if (copy == NULL) {
        svp_error("out of memory copying key '%s' (%zu bytes)", key, len);
        status = SVP_ERR_NO_MEMORY;
    } else {
        memcpy(copy, src, len);
        *data_p = copy;
        *len_p  = len;
        status  = SVP_OK;
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
    return status;
}
