/*
 * A run's WebDataset shards (wds.h): the handle, where a stage stages its
 * samples and what resume counts as finished; wds_packer.c is rank 0's
 * packer.
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
int svp_job_wds_mine(svp_job_wds_h w, int j)
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
svp_job_wds_sample_t *svp_job_wds_list(svp_job_wds_h w, int j, int *m_p)
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

void svp_job_wds_list_free(svp_job_wds_sample_t *v, int m)
{
    int k;

    for (k = 0; v != NULL && k < m; ++k) {
        free((char *)v[k].key);
        free((char *)v[k].path);
    }
    free(v);
}

/* Whether sample k of v is staged (its file is renamed into place whole). */
int svp_job_wds_is_staged(const svp_job_wds_sample_t *v, int k)
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
int svp_job_wds_whole(svp_job_wds_h w, int j)
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
