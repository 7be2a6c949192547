/*
 * A run's WebDataset shards (wds.h): where a stage stages its samples,
 * when a shard is packed, and what resume counts as finished.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "job/wds.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/str.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct svp_job_wds {
    const svp_spec_t        *spec;
    const svp_job_samples_t *list;
    svp_job_wds_check_cb_t   check;
    void                    *arg;
    svp_job_shard_t          task;
    /* per shard what resume found: 0 not looked at, 1 whole, -1 absent,
     * damaged or not this job's (its index is read, checked and let go:
     * a job's indexes hold every sample's record) */
    signed char *state;
    int          shards;
    /* per sample of the job: its packed record passed check (looked at
     * with its shard, so each is checked once) */
    unsigned char *passed;
};

svp_status_t svp_job_wds_create(const svp_spec_t        *spec,
                                const svp_job_samples_t *list,
                                svp_job_wds_check_cb_t check, void *arg,
                                svp_job_wds_h *wds_p)
{
    svp_job_wds_h w;
    char          name[256];
    int           i;

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
    w->task.index = 0;
    w->task.count = 1;
    *wds_p        = w;
    return SVP_OK;
}

static void svp_job_wds_forget(svp_job_wds_h w)
{
    free(w->state);
    free(w->passed);
    w->state  = NULL;
    w->passed = NULL;
    w->shards = 0;
}

void svp_job_wds_destroy(svp_job_wds_h w)
{
    if (w != NULL) {
        svp_job_wds_forget(w);
        free(w);
    }
}

void svp_job_wds_set_task(svp_job_wds_h w, int index, int count)
{
    svp_job_wds_forget(w);
    w->task.index = index;
    w->task.count = count;
}

void svp_job_wds_staged_path(svp_job_wds_h w, int i, char *buf, size_t len)
{
    char name[256];

    svp_job_samples_name(w->list, i, name, sizeof(name));
    snprintf(buf, len, "%s/%s/%s.tar", w->spec->output.dir, SVP_JOB_WDS_STAGING,
             name);
}

/* The samples of this task's shard j: their keys and staged files
 * (malloc'd: svp_job_wds_list_free), their count in *m_p. */
static svp_job_wds_sample_t *svp_job_wds_list(svp_job_wds_h w, int j, int *m_p)
{
    int                   per = w->spec->output.samples_per_shard, *idx, m, k;
    char                  name[256], dir[4200];
    svp_job_wds_sample_t *v;

    idx = malloc((size_t)per * sizeof(*idx));
    v   = calloc((size_t)per, sizeof(*v));
    if (idx == NULL || v == NULL) {
        free(idx);
        free(v);
        return NULL;
    }
    m = svp_job_wds_shard_samples(&w->task, w->list->count, per, j, idx);
    for (k = 0; k < m; ++k) {
        svp_job_samples_name(w->list, idx[k], name, sizeof(name));
        svp_job_wds_staged_path(w, idx[k], dir, sizeof(dir));
        v[k].key   = svp_strdup(name);
        v[k].index = idx[k];
        v[k].path  = svp_strdup(dir);
    }
    free(idx);
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
    int               per  = spec->output.samples_per_shard, *idx, m, k;
    json_t           *list = json_object_get(index, "samples"), *e;
    char              name[256], why[1024], where[600];
    int               current = 1;
    svp_status_t      status;

    idx = malloc((size_t)per * sizeof(*idx));
    if (idx == NULL) {
        return 0;
    }
    svp_job_wds_shard_name(&w->task, j, ".tar", name, sizeof(name));
    m = svp_job_wds_shard_samples(&w->task, w->list->count, per, j, idx);
    if (json_array_size(list) != (size_t)m) {
        current = 0;
    }
    for (k = 0; current && k < m; ++k) {
        e       = json_array_get(list, (size_t)k);
        current = (json_integer_value(json_object_get(e, "sample")) == idx[k]);
    }
    if (!current) {
        svp_info(
            "%s/%s holds %zu samples, this job's shard %d holds %d (samples %d-%d): "
            "its samples are made again",
            spec->output.dir, name, json_array_size(list), j, m, m > 0 ? idx[0] : 0,
            m > 0 ? idx[m - 1] : 0);
    }
    for (k = 0; current && k < m; ++k) {
        e      = json_array_get(list, (size_t)k);
        why[0] = '\0';
        snprintf(where, sizeof(where), "%s: %s.json", name,
                 json_string_value(json_object_get(e, "key")));
        status = w->check(w->arg, idx[k], where, e, why, sizeof(why));
        if (status == SVP_OK) {
            w->passed[idx[k]] = 1;
        } else if (status == SVP_ERR_SPEC && spec->output.overwrite) {
            svp_info("%s/%s: sample %d: %s: output.overwrite is set, the shard's %d "
                     "samples are made again",
                     spec->output.dir, name, idx[k], why, m);
            current = 0;
        } else if (status != SVP_ERR_SPEC) {
            svp_warn("%s/%s: sample %d: %s: the shard's %d samples are made again",
                     spec->output.dir, name, idx[k], why, m);
            current = 0;
        }
    }
    free(idx);
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
    int               count;

    if (w->state == NULL) {
        count     = svp_job_wds_shard_count(&w->task, w->list->count,
                                            spec->output.samples_per_shard);
        w->state  = calloc((size_t)count + 1, 1);
        w->passed = calloc((size_t)w->list->count + 1, 1);
        if (w->state == NULL || w->passed == NULL) {
            svp_job_wds_forget(w);
            return 0;
        }
        w->shards = count;
    }
    if (j >= w->shards) {
        return 0;
    }
    if (w->state[j] == 0) {
        svp_job_wds_shard_name(&w->task, j, "", name, sizeof(name));
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
    json_error_t      jerr;
    json_t           *index, *entry;
    svp_status_t      status;
    int               j;

    /* the shard first: a run killed while it removed a packed shard's
     * staged samples leaves some of them staged */
    j = svp_job_wds_shard_of(&w->task, spec->output.samples_per_shard, i);
    if (!svp_job_wds_whole(w, j)) {
        svp_job_wds_staged_path(w, i, path, sizeof(path));
        svp_job_samples_name(w->list, i, name, sizeof(name));
        status = svp_job_wds_staged_entry(path, name, i, &entry, why, len);
        if (status != SVP_OK) {
            return status;
        }
        status = w->check(w->arg, i, path, entry, why, len);
        json_decref(entry);
        return status;
    }
    if (w->passed[i]) {
        return SVP_OK; /* its record passed with its shard */
    }
    /* made with other parameters (the shard was kept for it): read its
     * record again for the message */
    svp_job_wds_shard_name(&w->task, j, ".index.json", name, sizeof(name));
    snprintf(where, sizeof(where), "%s/%s", spec->output.dir, name);
    index = json_load_file(where, 0, &jerr);
    entry = svp_job_wds_index_sample(index, i);
    if (entry == NULL || !json_is_object(json_object_get(entry, "record"))) {
        snprintf(why, len, "%s has no record of sample %d", where, i);
        json_decref(index);
        return SVP_ERR_BAD_FILE;
    }
    svp_job_wds_shard_name(&w->task, j, ".tar", name, sizeof(name));
    snprintf(where, sizeof(where), "%s/%s: %s.json", spec->output.dir, name,
             json_string_value(json_object_get(entry, "key")));
    status = w->check(w->arg, i, where, entry, why, len);
    json_decref(index);
    return status;
}

/*
 * Packs this task's shard j when all its samples are staged (else nothing
 * to do yet), then removes them from the staging folder.  Another rank
 * that finished a sample of the shard at the same moment may pack it too:
 * both write the same bytes, each through its own temporary.  at_start:
 * the run's start, where a shard packed by a run killed before it removed
 * all its staged samples has them removed.
 */
static svp_status_t svp_job_wds_pack_shard(svp_job_wds_h w, int j, int at_start)
{
    const svp_spec_t     *spec = w->spec;
    int                   m = 0, k, any = 0, bad = -1;
    char                  name[256], why[1024], staging[4200];
    svp_job_wds_sample_t *v      = svp_job_wds_list(w, j, &m);
    json_t               *index  = NULL;
    double                t0     = svp_clock_now();
    svp_status_t          status = SVP_OK;

    if (v == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    if (at_start) {
        for (k = 0; k < m && !any; ++k) {
            any = svp_job_wds_is_staged(v, k);
        }
        if (any && svp_job_wds_whole(w, j)) {
            svp_job_wds_unstage(v, m);
            goto out;
        }
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
    svp_job_wds_shard_name(&w->task, j, "", name, sizeof(name));
    why[0] = '\0';
    status = svp_job_wds_pack(spec->output.dir, name, v, m, spec->output.frames,
                              &bad, why, sizeof(why));
    if (status != SVP_OK && svp_job_wds_shard_check(spec->output.dir, name, &index,
                                                    why, sizeof(why)) == SVP_OK) {
        status = SVP_OK; /* another rank packed it and took the staged samples */
        json_decref(index);
    } else if (status == SVP_ERR_BAD_FILE && bad >= 0 &&
               svp_job_wds_is_staged(v, bad)) {
        /* a staged sample cut short or damaged is not packed: it goes, and
         * is made again (by resume, the shard then packed with it) */
        svp_warn("%s: not packed into %s/%s.tar; sample %d is made again", why,
                 spec->output.dir, name, v[bad].index);
        (void)unlink(v[bad].path);
        status = SVP_OK;
        goto out;
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
    svp_info("packed %s/%s.tar: %d samples (%.2fs)", spec->output.dir, name, m,
             svp_clock_now() - t0);
out:
    svp_job_wds_list_free(v, m);
    return status;
}

svp_status_t svp_job_wds_staged(svp_job_wds_h w, int i)
{
    int         per  = w->spec->output.samples_per_shard;
    int         j    = svp_job_wds_shard_of(&w->task, per, i);
    int         size = svp_job_shard_size(&w->task, w->list->count);
    int         last = SVP_MIN((j + 1) * per, size) - 1;
    char        path[4300];
    struct stat sb;

    /* the shard's last sample first, without listing the shard: while the
     * shard fills (samples finish about in order) it is missing */
    svp_job_wds_staged_path(w, last * w->task.count + w->task.index, path,
                            sizeof(path));
    if (stat(path, &sb) != 0) {
        return SVP_OK;
    }
    return svp_job_wds_pack_shard(w, j, 0);
}

svp_status_t svp_job_wds_pack_ready(svp_job_wds_h w,
                                    int (*mine)(int sample, void *arg), void *arg)
{
    const svp_spec_t *spec = w->spec;
    int               per  = spec->output.samples_per_shard, j, count, m, *idx;
    char              staging[4200];
    struct stat       sb;
    svp_status_t      status = SVP_OK;

    snprintf(staging, sizeof(staging), "%s/%s", spec->output.dir,
             SVP_JOB_WDS_STAGING);
    if (stat(staging, &sb) != 0) {
        return SVP_OK; /* nothing staged: nothing to pack or remove */
    }
    count = svp_job_wds_shard_count(&w->task, w->list->count, per);
    idx   = malloc((size_t)per * sizeof(*idx));
    if (idx == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (j = 0; j < count && status == SVP_OK; ++j) {
        m = svp_job_wds_shard_samples(&w->task, w->list->count, per, j, idx);
        if (m > 0 && mine(idx[m - 1], arg)) {
            status = svp_job_wds_pack_shard(w, j, 1);
        }
    }
    free(idx);
    return status;
}
