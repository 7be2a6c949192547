/*
 * A run's WebDataset shards (wds.h): where a stage stages its samples,
 * what resume counts as finished, and rank 0's packer, a thread that packs
 * each shard of the task once its samples are staged and keeps the task's
 * listing current.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "common/str.h"
#include "common/file.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * How long the packer sleeps between looks at the staging folder when no
 * sample of this process woke it: a stat or two per look.  Samples of
 * other ranks are seen within this, so a shard is packed at most this
 * late; a 1000-sample shard of the simulator fills in about 2 s.
 */
#define SVP_JOB_WDS_POLL_S 0.05

/* The shards after the first pending one that a look checks: samples
 * finish about in order, so a shard further on is not full yet. */
#define SVP_JOB_WDS_LOOK_AHEAD 4

/* What the packer knows of one shard of the task. */
typedef struct {
    signed char need;   /* 1: to pack this run (its samples run, or wait staged) */
    signed char packed; /* 1: its tar is there (packed, by this run or before) */
    json_int_t  bytes, samples_count;
    char        sha256[65];
    double      seconds; /* its packing, by this run; < 0: not this run's */
} svp_job_wds_shard_t;

struct svp_job_wds {
    const svp_spec_t        *spec;
    const svp_job_samples_t *list;
    svp_job_wds_check_cb_t   check;
    void                    *arg;
    svp_job_shard_t          task;
    int                      per, nshards; /* shards of the job */
    /* per shard what resume found: 0 not looked at, 1 whole, -1 absent,
     * damaged or not this job's (its index is read, checked and let go:
     * a job's indexes hold every sample's record) */
    signed char *state;
    /* per sample of the job: its packed record passed check (looked at
     * with its shard, so each is checked once) */
    unsigned char *passed;
    /* the packer (rank 0): its shards, and the thread's hand-over */
    svp_job_wds_shard_t *shards;
    svp_job_lease_t     *lease;
    pthread_t            thread;
    pthread_mutex_t      lock;
    pthread_cond_t       cond;
    int                  running, stop, kick;
    int                  quit;   /* stop at once, mid-shard (atomic) */
    svp_status_t         failed; /* the packer's first error */
};

svp_status_t svp_job_wds_create(const svp_spec_t        *spec,
                                const svp_job_samples_t *list,
                                svp_job_wds_check_cb_t check, void *arg,
                                svp_job_wds_h *wds_p)
{
    svp_job_wds_h      w;
    char               name[256];
    pthread_condattr_t attr;
    int                i;

    /* a reader's key ends at the first dot of a member's name: a sample
     * name with one would be read back as another key and extension */
    for (i = 0; i < list->count; ++i) {
        svp_job_samples_name(list, i, name, sizeof(name));
        if (strchr(name, '.') != NULL) {
            svp_error("%s:%d: key 'name': expected a name without '.' with "
                      "output.format webdataset (a shard's keys end at the first "
                      "dot), found '%s'",
                      list->manifest ? list->manifest : spec->file,
                      list->items[i].line, name);
            return SVP_ERR_SPEC;
        }
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    w->spec       = spec;
    w->list       = list;
    w->check      = check;
    w->arg        = arg;
    w->per        = spec->output.samples_per_shard;
    w->nshards    = svp_job_wds_shards(list->count, w->per);
    w->task.index = 0;
    w->task.count = 1;
    w->task.block = w->per;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    *wds_p = w;
    return SVP_OK;
}

static void svp_job_wds_forget(svp_job_wds_h w)
{
    free(w->state);
    free(w->passed);
    w->state  = NULL;
    w->passed = NULL;
}

static void svp_job_wds_packer_end(svp_job_wds_h w);

void svp_job_wds_destroy(svp_job_wds_h w)
{
    if (w != NULL) {
        svp_job_wds_packer_end(w);
        svp_job_wds_forget(w);
        free(w->shards);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
    }
}

void svp_job_wds_set_task(svp_job_wds_h w, const svp_job_shard_t *task)
{
    svp_job_wds_forget(w);
    w->task       = *task;
    w->task.block = w->per; /* whole shards, whatever the caller dealt */
}

/* Whether shard j is this task's. */
static int svp_job_wds_mine(svp_job_wds_h w, int j)
{
    return j % w->task.count == w->task.index;
}

void svp_job_wds_staged_path(svp_job_wds_h w, int i, char *buf, size_t len)
{
    char name[256];

    svp_job_samples_name(w->list, i, name, sizeof(name));
    snprintf(buf, len, "%s/%s/%s.tar", w->spec->output.dir, SVP_JOB_WDS_STAGING,
             name);
}

/* The samples of shard j: their keys and staged files (malloc'd:
 * svp_job_wds_list_free), their count in *m_p. */
static svp_job_wds_sample_t *svp_job_wds_list(svp_job_wds_h w, int j, int *m_p)
{
    int                   first, m = 0, k;
    char                  name[256], dir[4200];
    svp_job_wds_sample_t *v;

    m = svp_job_wds_shard_range(w->list->count, w->per, j, &first);
    v = calloc((size_t)m + 1, sizeof(*v));
    if (v == NULL) {
        return NULL;
    }
    for (k = 0; k < m; ++k) {
        svp_job_samples_name(w->list, first + k, name, sizeof(name));
        svp_job_wds_staged_path(w, first + k, dir, sizeof(dir));
        v[k].key   = svp_strdup(name);
        v[k].index = first + k;
        v[k].path  = svp_strdup(dir);
    }
    *m_p = m;
    return v;
}

static void svp_job_wds_list_free(svp_job_wds_sample_t *v, int m)
{
    int k;

    for (k = 0; v != NULL && k < m; ++k) {
        free((char *)v[k].key);
        free((char *)v[k].path);
    }
    free(v);
}

/* Whether sample k of v is staged (its file is renamed into place whole). */
static int svp_job_wds_is_staged(const svp_job_wds_sample_t *v, int k)
{
    struct stat sb;

    return v[k].path != NULL && stat(v[k].path, &sb) == 0;
}

/*
 * Whether a whole shard's index is this job's shard j: the same samples
 * (a job grown or shrunk since regroups its last shard), each one's entry
 * whole (the members this job writes: output.frames, output.mp4 turned on
 * since) and, with output.overwrite, made with this job's parameters.  A
 * shard is packed whole, so when one sample of it is to be made again all
 * are: they are then staged and the shard packed anew.  A sample made with
 * other parameters without output.overwrite keeps the shard: resume fails
 * on it (svp_job_wds_check_sample says why).
 */
static int svp_job_wds_current(svp_job_wds_h w, int j, json_t *index)
{
    const svp_spec_t *spec = w->spec;
    int               first, m, k;
    json_t           *list = json_object_get(index, "samples"), *e;
    char              name[256], why[1024], where[600];
    int               current = 1;
    svp_status_t      status;

    svp_job_wds_shard_name(j, ".tar", name, sizeof(name));
    m = svp_job_wds_shard_range(w->list->count, w->per, j, &first);
    if (json_array_size(list) != (size_t)m) {
        current = 0;
    }
    for (k = 0; current && k < m; ++k) {
        e       = json_array_get(list, (size_t)k);
        current = (json_integer_value(json_object_get(e, "sample")) == first + k);
    }
    if (!current) {
        svp_info(
            "%s/%s holds %zu samples, this job's shard %d holds %d (samples %d-%d): "
            "its samples are made again",
            spec->output.dir, name, json_array_size(list), j, m, first,
            first + m - 1);
    }
    for (k = 0; current && k < m; ++k) {
        e      = json_array_get(list, (size_t)k);
        why[0] = '\0';
        snprintf(where, sizeof(where), "%s: %s.json", name,
                 json_string_value(json_object_get(e, "key")));
        status = w->check(w->arg, first + k, where, e, why, sizeof(why));
        if (status == SVP_OK) {
            w->passed[first + k] = 1;
        } else if (status == SVP_ERR_SPEC && spec->output.overwrite) {
            svp_info("%s/%s: sample %d: %s: output.overwrite is set, the shard's %d "
                     "samples are made again",
                     spec->output.dir, name, first + k, why, m);
            current = 0;
        } else if (status != SVP_ERR_SPEC) {
            svp_warn("%s/%s: sample %d: %s: the shard's %d samples are made again",
                     spec->output.dir, name, first + k, why, m);
            current = 0;
        }
    }
    return current;
}

/*
 * Whether this task's shard j is whole and this job's (looked at once per
 * run; a damaged one is named in a warning).
 */
static int svp_job_wds_whole(svp_job_wds_h w, int j)
{
    const svp_spec_t *spec = w->spec;
    char              name[256], why[1024];
    json_t           *index = NULL;
    svp_status_t      status;

    if (w->state == NULL) {
        w->state  = calloc((size_t)w->nshards + 1, 1);
        w->passed = calloc((size_t)w->list->count + 1, 1);
        if (w->state == NULL || w->passed == NULL) {
            svp_job_wds_forget(w);
            return 0;
        }
    }
    if (j < 0 || j >= w->nshards) {
        return 0;
    }
    if (w->state[j] == 0) {
        svp_job_wds_shard_name(j, "", name, sizeof(name));
        why[0]      = '\0';
        status      = svp_job_wds_shard_check(spec->output.dir, name, &index, why,
                                              sizeof(why));
        w->state[j] = (status == SVP_OK) ? 1 : -1;
        if (status == SVP_ERR_BAD_FILE) {
            svp_warn("%s: its samples not staged are made again", why);
        }
        if (status == SVP_OK && !svp_job_wds_current(w, j, index)) {
            w->state[j] = -1;
        }
        json_decref(index);
    }
    return w->state[j] == 1;
}

svp_status_t svp_job_wds_check_sample(svp_job_wds_h w, int i, char *why, size_t len)
{
    const svp_spec_t *spec = w->spec;
    char              name[256], path[4200], where[4400];
    json_t           *index, *entry;
    svp_status_t      status;
    int               j;

    /* the shard first: a run killed while it removed a packed shard's
     * staged samples leaves some of them staged */
    j = i / w->per;
    if (!svp_job_wds_whole(w, j)) {
        svp_job_wds_staged_path(w, i, path, sizeof(path));
        svp_job_samples_name(w->list, i, name, sizeof(name));
        status = svp_job_wds_staged_entry(path, name, i, &entry, why, len);
        if (status == SVP_OK) {
            status = w->check(w->arg, i, path, entry, why, len);
            json_decref(entry);
        }
        if (status == SVP_ERR_BAD_FILE ||
            (status == SVP_ERR_SPEC && spec->output.overwrite)) {
            /* made again: the staged file goes now, before the ranks agree
             * and the packer starts, so that no shard is packed with it */
            (void)unlink(path);
        }
        return status;
    }
    if (w->passed[i]) {
        return SVP_OK; /* its record passed with its shard */
    }
    /* made with other parameters (the shard was kept for it): read its
     * record again for the message */
    svp_job_wds_shard_name(j, ".tar", name, sizeof(name));
    snprintf(where, sizeof(where), "%s/%s", spec->output.dir, name);
    (void)svp_job_wds_shard_index(where, &index, why, len);
    entry = svp_job_wds_index_sample(index, i);
    if (entry == NULL || !json_is_object(json_object_get(entry, "record"))) {
        snprintf(why, len, "%s has no record of sample %d", where, i);
        json_decref(index);
        return SVP_ERR_BAD_FILE;
    }
    snprintf(where, sizeof(where), "%s/%s: %s.json", spec->output.dir, name,
             json_string_value(json_object_get(entry, "key")));
    status = w->check(w->arg, i, where, entry, why, len);
    json_decref(index);
    return status;
}

/* Shard j's figures from its index (and the seconds its packing took). */
static void svp_job_wds_note(svp_job_wds_h w, int j, json_t *index, double seconds)
{
    svp_job_wds_shard_t *sh  = &w->shards[j];
    const char          *sum = json_string_value(json_object_get(index, "sha256"));

    sh->packed        = 1;
    sh->bytes         = json_integer_value(json_object_get(index, "bytes"));
    sh->samples_count = json_integer_value(json_object_get(index, "samples_count"));
    snprintf(sh->sha256, sizeof(sh->sha256), "%s", sum ? sum : "");
    sh->seconds = seconds;
}

/*
 * Packs shard j once all its samples are staged (else nothing to do yet),
 * then removes them from the staging folder.
 */
static svp_status_t svp_job_wds_pack_shard(svp_job_wds_h w, int j)
{
    const svp_spec_t     *spec = w->spec;
    int                   m = 0, k, bad = -1, first;
    char                  name[256], why[1024], staging[4200];
    svp_job_wds_sample_t *v;
    json_t               *index  = NULL;
    double                t0     = svp_clock_now();
    svp_status_t          status = SVP_OK;
    struct stat           sb;

    /* the shard's last sample first, without listing the shard: while the
     * shard fills (samples finish about in order) it is missing */
    m = svp_job_wds_shard_range(w->list->count, w->per, j, &first);
    svp_job_wds_staged_path(w, first + m - 1, staging, sizeof(staging));
    if (m == 0 || stat(staging, &sb) != 0) {
        return SVP_OK;
    }
    v = svp_job_wds_list(w, j, &m);
    if (v == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    /* from the last: samples finish about in order, so while a shard
     * fills, its last sample is missing and one look says so */
    for (k = m - 1; k >= 0; --k) {
        if (!svp_job_wds_is_staged(v, k)) {
            goto out;
        }
    }
    if (m == 0) {
        goto out;
    }
    svp_job_wds_shard_name(j, "", name, sizeof(name));
    why[0] = '\0';
    status = svp_job_wds_pack(spec->output.dir, name, v, m, spec->output.frames,
                              w->lease, &w->quit, &index, &bad, why, sizeof(why));
    if (status == SVP_ERR_BAD_FILE && bad >= 0 && svp_job_wds_is_staged(v, bad)) {
        /* a staged sample cut short or damaged is not packed: it goes, and
         * is made again (by resume, the shard then packed with it) */
        svp_warn("%s: not packed into %s/%s.tar; sample %d is made again", why,
                 spec->output.dir, name, v[bad].index);
        (void)unlink(v[bad].path);
        status = SVP_OK;
        goto out;
    }
    if (status == SVP_ERR_CANCELED) {
        goto out; /* the run ends: its staged samples stay for the next */
    }
    if (status != SVP_OK) {
        svp_error("shard %s/%s.tar: %s", spec->output.dir, name, why);
        goto out;
    }
    svp_job_wds_unstage(v, m);
    /* the staging folder goes with its last sample (it stays while
     * another shard's samples wait in it) */
    snprintf(staging, sizeof(staging), "%s/%s", spec->output.dir,
             SVP_JOB_WDS_STAGING);
    (void)rmdir(staging);
    svp_job_wds_note(w, j, index, svp_clock_now() - t0);
    json_decref(index);
    svp_info("packed %s/%s.tar: %d samples (%.2fs)", spec->output.dir, name, m,
             w->shards[j].seconds);
out:
    svp_job_wds_list_free(v, m);
    return status;
}

/*
 * Writes the task's listing: each of its shards with its samples and
 * status, and where packed its bytes, sha256 and the seconds its packing
 * took (by this run).  Atomic; nothing once the lease is lost.  *pending_p
 * (may be NULL) counts the shards not packed.
 */
static svp_status_t svp_job_wds_listing_write(svp_job_wds_h w, int *pending_p)
{
    const svp_spec_t *spec = w->spec;
    char              name[256], path[4200], file[256], *text;
    json_t           *o, *shards = json_array(), *s;
    int               j, m, first, count = 0, pending = 0;
    svp_status_t      status;

    for (j = 0; j < w->nshards; ++j) {
        const svp_job_wds_shard_t *sh = &w->shards[j];

        if (!svp_job_wds_mine(w, j)) {
            continue;
        }
        count++;
        m = svp_job_wds_shard_range(w->list->count, w->per, j, &first);
        svp_job_wds_shard_name(j, ".tar", name, sizeof(name));
        s = json_pack("{s:s, s:i, s:i, s:i, s:s}", "shard", name, "samples_count", m,
                      "first_sample", first, "last_sample", first + m - 1, "status",
                      sh->packed ? "packed" : "pending");
        pending += !sh->packed;
        if (sh->packed) {
            json_object_set_new(s, "bytes", json_integer(sh->bytes));
            json_object_set_new(s, "sha256", json_string(sh->sha256));
            json_object_set_new(s, "successes", json_integer(sh->samples_count));
            json_object_set_new(s, "failures", json_integer(0));
        }
        if (sh->packed && sh->seconds >= 0) {
            json_object_set_new(s, "seconds",
                                json_real(round(sh->seconds * 1e3) / 1e3));
        }
        json_array_append_new(shards, s);
    }
    if (pending_p != NULL) {
        *pending_p = pending;
    }
    o    = json_pack("{s:i, s:i, s:i, s:o}", "samples", w->list->count,
                     "samples_per_shard", w->per, "shards_count", count, "shards",
                     shards);
    text = (o != NULL) ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(9))
                       : NULL;
    json_decref(o);
    if (text == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_job_shard_file(&w->task, "shards", ".json", file, (int)sizeof(file));
    snprintf(path, sizeof(path), "%s/%s", spec->output.dir, file);
    status = svp_job_lease_guard(w->lease);
    if (status == SVP_OK) {
        status = svp_file_write_atomic(path, text, strlen(text));
    }
    free(text);
    return status;
}

/*
 * One look: packs the task's shards still to pack whose samples are all
 * staged, from the first one still to pack and SVP_JOB_WDS_LOOK_AHEAD
 * after it, or all of them (all).  *changed_p: a shard was packed.
 */
static svp_status_t svp_job_wds_pack_pass(svp_job_wds_h w, int all, int *changed_p)
{
    svp_status_t status = SVP_OK;
    int          j, looked = 0;

    *changed_p = 0;
    for (j = w->task.index; j < w->nshards && status == SVP_OK; j += w->task.count) {
        if (!w->shards[j].need || w->shards[j].packed) {
            continue;
        }
        if (!all && looked++ > SVP_JOB_WDS_LOOK_AHEAD) {
            break;
        }
        status = svp_job_wds_pack_shard(w, j);
        *changed_p |= w->shards[j].packed;
    }
    return status;
}

static void *svp_job_wds_packer_thread(void *arg)
{
    svp_job_wds_h   w = arg;
    struct timespec until;
    svp_status_t    status;
    int             last, changed;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        /* asked to stop before this look: every sample is staged, so this
         * look is the last */
        last = w->stop;
        if (w->stop > 1) {
            break;
        }
        pthread_mutex_unlock(&w->lock);
        status = svp_job_wds_pack_pass(w, last, &changed);
        if (status == SVP_OK && changed) {
            status = svp_job_wds_listing_write(w, NULL);
        }
        pthread_mutex_lock(&w->lock);
        if (status != SVP_OK && w->failed == SVP_OK) {
            w->failed = status;
        }
        if (last || status != SVP_OK) {
            break;
        }
        if (!w->kick && !w->stop) {
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += (long)(SVP_JOB_WDS_POLL_S * 1e9);
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            (void)pthread_cond_timedwait(&w->cond, &w->lock, &until);
        }
        w->kick = 0;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

void svp_job_wds_staged(svp_job_wds_h w, int i)
{
    (void)i;
    pthread_mutex_lock(&w->lock);
    if (w->running) {
        w->kick = 1;
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

/* Whether any sample of shard j waits staged. */
static int svp_job_wds_any_staged(svp_job_wds_h w, int j)
{
    int                   m = 0, k, any = 0;
    svp_job_wds_sample_t *v = svp_job_wds_list(w, j, &m);

    for (k = 0; v != NULL && k < m && !any; ++k) {
        any = svp_job_wds_is_staged(v, k);
    }
    svp_job_wds_list_free(v, m);
    return any;
}

/*
 * What the packer starts from for shard j, none of whose samples this run
 * makes: staged samples of a shard packed whole go (a run killed while it
 * removed them); staged samples of a shard not packed are packed; else the
 * shard is there (resume found its samples in it).
 */
static void svp_job_wds_found(svp_job_wds_h w, int j, int staging)
{
    char    name[256], path[4200], why[1024];
    json_t *index = NULL;
    int     m     = 0;

    svp_job_wds_shard_name(j, ".tar", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", w->spec->output.dir, name);
    if (staging && svp_job_wds_any_staged(w, j)) {
        if (svp_job_wds_whole(w, j)) {
            svp_job_wds_sample_t *v = svp_job_wds_list(w, j, &m);

            svp_job_wds_unstage(v, m);
            svp_job_wds_list_free(v, m);
        } else {
            w->shards[j].need = 1;
            return;
        }
    }
    if (svp_job_wds_shard_index(path, &index, why, sizeof(why)) == SVP_OK) {
        svp_job_wds_note(w, j, index, -1);
    }
    json_decref(index);
}

svp_status_t svp_job_wds_packer_start(svp_job_wds_h w, const int *todo, int ntodo,
                                      svp_job_lease_t *lease)
{
    const svp_spec_t *spec = w->spec;
    char              staging[4200];
    struct stat       sb;
    sigset_t          all, old;
    svp_status_t      status;
    int               j, k, removed = 0, changed, staged;

    w->shards = calloc((size_t)w->nshards + 1, sizeof(*w->shards));
    if (w->shards == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    w->lease = lease;
    svp_job_wds_clean(spec->output.dir, &w->task, &removed);
    if (removed > 0) {
        svp_info("removed %d shard temporaries left in %s by an interrupted run",
                 removed, spec->output.dir);
    }
    for (k = 0; k < ntodo; ++k) {
        w->shards[todo[k] / w->per].need = 1;
    }
    snprintf(staging, sizeof(staging), "%s/%s", spec->output.dir,
             SVP_JOB_WDS_STAGING);
    staged = (stat(staging, &sb) == 0);
    for (j = w->task.index; j < w->nshards; j += w->task.count) {
        w->shards[j].seconds = -1;
        if (!w->shards[j].need) {
            svp_job_wds_found(w, j, staged);
        }
    }
    /* shards whose samples were all staged by a run killed before it
     * packed them */
    status = svp_job_wds_pack_pass(w, 1, &changed);
    if (status == SVP_OK) {
        status = svp_job_wds_listing_write(w, NULL);
    }
    if (status != SVP_OK) {
        return status;
    }
    /* the thread takes no signal: the worker's threads see to them */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&w->thread, NULL, svp_job_wds_packer_thread, w) != 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        svp_error("cannot start the shard packer: %s", strerror(errno));
        return SVP_ERR_IO;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_lock(&w->lock);
    w->running = 1;
    pthread_mutex_unlock(&w->lock);
    return SVP_OK;
}

/* Ends the packer: after one last look (how 1), or at once (how 2). */
static void svp_job_wds_packer_stop(svp_job_wds_h w, int how)
{
    int running;

    if (how > 1) {
        __atomic_store_n(&w->quit, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&w->lock);
    running = w->running;
    w->stop = how;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (running) {
        pthread_join(w->thread, NULL);
        pthread_mutex_lock(&w->lock);
        w->running = 0;
        pthread_mutex_unlock(&w->lock);
    }
}

static void svp_job_wds_packer_end(svp_job_wds_h w)
{
    svp_job_wds_packer_stop(w, 2);
}

svp_status_t svp_job_wds_packer_finish(svp_job_wds_h w, int *pending_p)
{
    svp_status_t status;

    *pending_p = 0;
    if (w->shards == NULL) {
        return SVP_OK; /* no packer ran here */
    }
    svp_job_wds_packer_stop(w, 1);
    status = svp_job_wds_listing_write(w, pending_p);
    return (w->failed != SVP_OK) ? w->failed : status;
}
