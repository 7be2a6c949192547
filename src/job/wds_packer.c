/*
 * Rank 0's packer (wds.h): a thread that packs each shard of the task once
 * its samples are staged, beside the pipeline, and keeps the task's
 * listing (shards.json) current; at the start it packs what a killed run
 * left staged, at the end what is left.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
#include "job/wds_int.h"
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
    /* a shard's last sample: its shard is likely whole now; any other is
     * seen by the next look (a wake-up per sample would cost the pipeline
     * two context switches a sample for nothing) */
    if ((i + 1) % w->per != 0 && i + 1 != w->list->count) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    if (w->running) {
        w->kick = 1;
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

/*
 * The staging folder's spares removed (a run's start: a killed run's; its
 * end: this run's), and the folder with them when no sample waits in it.
 */
static void svp_job_wds_packer_tidy(svp_job_wds_h w)
{
    char staging[4200];

    snprintf(staging, sizeof(staging), "%s/%s", w->spec->output.dir,
             SVP_JOB_WDS_STAGING);
    svp_job_wds_spares_remove(staging);
    (void)rmdir(staging);
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
    svp_job_wds_packer_tidy(w);
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

void svp_job_wds_packer_end(svp_job_wds_h w)
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
    svp_job_wds_packer_tidy(w);
    status = svp_job_wds_listing_write(w, pending_p);
    return (w->failed != SVP_OK) ? w->failed : status;
}
