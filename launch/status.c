/*
 * svdlaunch status OUTPUT_DIR: the job-level view, from what the job writes
 * into its output directory and nothing else (no squeue: the directory may
 * be looked at from a login node of another cluster, or after the jobs are
 * gone from Slurm's memory).
 *
 *   task.json, task.shard-I-of-N.json   each task's shard, its sample
 *                                       counts, state and times (written by
 *                                       svdworker's rank 0 at start and end)
 *   <name>/sample.json                  an svd sample, made
 *   <name>.safetensors                  a simulator sample, made
 *   shard-NNNNNN.tar, shards*.json      a WebDataset shard's samples, made
 *                                       (job/wds.h: shard N holds samples
 *                                       [N*P, (N+1)*P), P from a listing)
 *   staging/<name>.tar                  a sample made, not yet packed
 *                                       (job/wds.h: renamed there whole)
 *
 * A sample is done when its output is there (outputs are renamed into place
 * whole).  Its index comes from the name sample_NNNNNN, else from its
 * metadata (a manifest's own names).  The rate of a task counts the outputs
 * of its shard made since it started; the job's is the sum over running
 * tasks (tasks run side by side), or, when none runs, all outputs made by
 * the last runs over their span.  The failed samples are those of a task
 * that ended failed or stopped, or was lost (a "running" record not
 * rewritten for STATUS_SILENT of its beats: killed outright), and are not
 * done: running that task again
 * makes them (it resumes).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch.h"
#include "launch/launch_int.h"
#include "common/clock.h"
#include "common/errf.h"
#include "common/util.h"
#include "tensor/safetensors.h"
#include "job/wds.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STATUS_MAX_TASKS 4096

/* Seconds of silence after which a running task is lost: 3 beats missed
 * and one more (at most 10 s) for a shared file system's clock skew. */
#define STATUS_SILENT(_beat) (3.0 * (_beat) + SVP_MIN((_beat), 10.0))

typedef struct {
    int    index, count; /* the shard */
    int    block;        /* its dealing's blocks (0 or 1: samples) */
    int    samples_shard, skipped, to_run;
    double started, ended; /* Unix seconds; ended 0: running */
    double updated, beat;  /* last written; seconds between (0: unknown) */
    char   state[16];      /* running, done, failed, stopped, lost */
    char   slurm_job[32];
    char   name[48]; /* how Slurm names it: JOB_TASK for an
                                       array task, else its job id; "" */
    int    done;     /* outputs of the shard found */
    int    made;     /* of those, made since started */
} status_task_t;

typedef struct {
    char           job[256];
    int            total; /* samples of the job, -1: unknown */
    int            count; /* shards */
    status_task_t *tasks; /* by shard index (count of them) */
    int            ntasks_seen;
    unsigned char *done;            /* per sample index (total of them) */
    int            ndone, nunknown; /* outputs, and those without an index */
    double         mtime_min, mtime_max;
} status_t;

static int status_is_task_file(const char *name, int *index_p, int *count_p)
{
    int  i, n, len = 0;
    char tail[8];

    if (strcmp(name, "task.json") == 0) {
        *index_p = 0;
        *count_p = 1;
        return 1;
    }
    /* NOLINTNEXTLINE(cert-err34-c): a name this tool wrote; i, n range-checked */
    if (sscanf(name, "task.shard-%d-of-%d%n%7s", &i, &n, &len, tail) == 3 &&
        strcmp(tail, ".json") == 0 && n >= 1 && i >= 0 && i < n) {
        *index_p = i;
        *count_p = n;
        return 1;
    }
    return 0;
}

static svp_status_t status_read_task(const char *path, status_task_t *t, char *job,
                                     size_t joblen, int *total_p, char *errbuf,
                                     int errlen)
{
    json_error_t jerr;
    json_t      *doc;
    const char  *state = NULL, *jobname = NULL, *sj = NULL, *aj = NULL, *at = NULL;
    int          i = -1, n = -1, total = -1;

    doc = json_load_file(path, 0, &jerr);
    if (doc == NULL) {
        svp_errf(errbuf, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    if (json_unpack(
            doc, "{s:s, s:[i, i], s:i, s:i, s:i, s:i, s:F, s:F, s:s, s?s, s?F, s?F}",
            "job", &jobname, "shard", &i, &n, "samples_total", &total,
            "samples_shard", &t->samples_shard, "skipped", &t->skipped, "to_run",
            &t->to_run, "started", &t->started, "ended", &t->ended, "state", &state,
            "slurm_job", &sj, "updated", &t->updated, "beat_s", &t->beat) != 0) {
        svp_errf(errbuf, errlen,
                 "%s: expected a task record (job, shard, "
                 "samples_total, ..., state)",
                 path);
        json_decref(doc);
        return SVP_ERR_BAD_FILE;
    }
    t->index = i;
    t->count = n;
    /* the dealing's blocks (job/samples.h); 1 in older records */
    t->block = (int)json_integer_value(json_object_get(doc, "shard_block"));
    snprintf(t->state, sizeof(t->state), "%s", state);
    if (!strcmp(state, "running") && t->beat > 0 && t->updated > 0 &&
        svp_clock_wall() - t->updated > STATUS_SILENT(t->beat)) {
        /* a running task rewrites its file every beat: this one was killed
         * outright (SIGKILL, out of memory, its node lost) */
        snprintf(t->state, sizeof(t->state), "lost");
    }
    snprintf(t->slurm_job, sizeof(t->slurm_job), "%s", sj ? sj : "");
    /* an array task as scancel and sbatch --array take it: JOB_TASK */
    aj = json_string_value(json_object_get(doc, "array_job"));
    at = json_string_value(json_object_get(doc, "array_task"));
    if (aj != NULL && at != NULL && aj[0] != '\0' && at[0] != '\0') {
        snprintf(t->name, sizeof(t->name), "%.20s_%.20s", aj, at);
    } else {
        snprintf(t->name, sizeof(t->name), "%s", t->slurm_job);
    }
    snprintf(job, joblen, "%s", jobname);
    *total_p = total;
    json_decref(doc);
    return SVP_OK;
}

/* The sample index of an output: from its name, else from its metadata. */
static int status_output_index(const char *dir, const char *name, int is_dir)
{
    char              path[4096];
    json_error_t      jerr;
    json_t           *doc;
    svp_safetensors_h st;
    const char       *v;
    long              lv;
    int               idx = -1, len = 0;

    /* NOLINTNEXTLINE(cert-err34-c): a name the worker wrote; < 0 is no sample */
    if (sscanf(name, "sample_%d%n", &idx, &len) == 1 &&
        (is_dir ? name[len] == '\0' : strcmp(name + len, ".safetensors") == 0)) {
        return idx;
    }
    idx = -1;
    if (is_dir) {
        snprintf(path, sizeof(path), "%s/%s/sample.json", dir, name);
        doc = json_load_file(path, 0, &jerr);
        if (doc != NULL) {
            json_t *s = json_object_get(doc, "sample");
            idx       = json_is_integer(s) ? (int)json_integer_value(s) : -1;
            json_decref(doc);
        }
        return idx;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (svp_safetensors_open(path, &st) == SVP_OK) {
        v   = svp_safetensors_metadata(st, "sample");
        lv  = (v != NULL) ? strtol(v, NULL, 10) : -1;
        idx = (lv >= INT_MIN && lv <= INT_MAX) ? (int)lv : -1;
        svp_safetensors_close(st);
    }
    return idx;
}

/* Is name (in dir) a finished sample's output? */
static int status_is_output(const char *dir, const char *name, int *is_dir_p,
                            double *mtime_p)
{
    char        path[4096];
    struct stat sb;
    size_t      n = strlen(name);

    if (name[0] == '.' || strstr(name, ".tmp.") != NULL) {
        return 0; /* hidden, or a write in progress */
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (stat(path, &sb) != 0) {
        return 0;
    }
    *mtime_p = (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9;
    if (S_ISDIR(sb.st_mode)) {
        snprintf(path, sizeof(path), "%s/%s/sample.json", dir, name);
        *is_dir_p = 1;
        return stat(path, &sb) == 0;
    }
    *is_dir_p = 0;
    return n > 12 && strcmp(name + n - 12, ".safetensors") == 0;
}

/* A task's shard owns sample i. */
static int status_owns(const status_task_t *t, int i)
{
    svp_job_shard_t s = {.index = t->index, .count = t->count, .block = t->block};

    return svp_job_shard_owns(&s, i);
}

/* The outputs found: each one's sample index and time. */
typedef struct {
    struct {
        int    idx;
        double mtime;
    } * v;
    int n, room;
} status_outs_t;

static svp_status_t status_push(status_outs_t *o, int idx, double mtime)
{
    void *grown;

    if (o->n == o->room) {
        o->room = SVP_MAX(64, 2 * o->room);
        grown   = realloc(o->v, (size_t)o->room * sizeof(*o->v));
        if (grown == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        o->v = grown;
    }
    o->v[o->n].idx   = idx;
    o->v[o->n].mtime = mtime;
    o->n++;
    return SVP_OK;
}

/* The shards found (job/wds.h), by number, and a listing's name. */
typedef struct {
    int *v;
    int  n, room;
    char listing[256];
} status_shards_t;

/* A WebDataset shard (job/wds.h: shard-NNNNNN.tar, renamed into place
 * whole) or a task's listing of them (shards.json, shards.shard-...json). */
static svp_status_t status_note_shard(status_shards_t *sh, const char *name)
{
    size_t n = strlen(name);
    int    j;
    void  *grown;

    if (strstr(name, ".tmp.") != NULL) {
        return SVP_OK;
    }
    if (strncmp(name, "shards.", 7) == 0 && n > 5 &&
        strcmp(name + n - 5, ".json") == 0) {
        snprintf(sh->listing, sizeof(sh->listing), "%s", name);
        return SVP_OK;
    }
    j = svp_job_wds_shard_number(name);
    if (j < 0 || strcmp(strchr(name, '.'), ".tar") != 0) {
        return SVP_OK;
    }
    if (sh->n == sh->room) {
        sh->room = SVP_MAX(64, 2 * sh->room);
        grown    = realloc(sh->v, (size_t)sh->room * sizeof(*sh->v));
        if (grown == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        sh->v = grown;
    }
    sh->v[sh->n++] = j;
    return SVP_OK;
}

/*
 * The packed shards' samples: shard J holds the samples [J*P, (J+1)*P) of
 * the job (P samples per shard, from a task's listing), so a name says
 * them, without a read of the shard.  Without a listing (a run killed
 * before it wrote one) a shard's index tells.  Its time: the shard's.
 */
static svp_status_t status_scan_shards(const char *dir, const status_shards_t *sh,
                                       int total, status_outs_t *o)
{
    char         path[4400], why[1024];
    json_error_t jerr;
    json_t      *doc = NULL, *list, *v;
    struct stat  sb;
    int          per = 0, k, i, first, m;
    size_t       e;
    double       mtime;
    svp_status_t status = SVP_OK;

    if (sh->listing[0] != '\0') {
        snprintf(path, sizeof(path), "%s/%s", dir, sh->listing);
        doc = json_load_file(path, 0, &jerr);
        per = (int)json_integer_value(json_object_get(doc, "samples_per_shard"));
        if (total < 0) {
            total = (int)json_integer_value(json_object_get(doc, "samples"));
        }
        json_decref(doc);
        doc = NULL;
    }
    for (k = 0; k < sh->n && status == SVP_OK; ++k) {
        char name[64];

        svp_job_wds_shard_name(sh->v[k], ".tar", name, sizeof(name));
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (stat(path, &sb) != 0) {
            continue;
        }
        mtime = (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9;
        if (per > 0 && total > 0) {
            m = svp_job_wds_shard_range(total, per, sh->v[k], &first);
            for (i = 0; i < m && status == SVP_OK; ++i) {
                status = status_push(o, first + i, mtime);
            }
            continue;
        }
        if (svp_job_wds_shard_index(path, &doc, why, sizeof(why)) != SVP_OK) {
            continue; /* one that does not read counts nothing: made again */
        }
        list = json_object_get(doc, "samples");
        json_array_foreach(list, e, v)
        {
            v = json_object_get(v, "sample");
            if (status == SVP_OK && json_is_integer(v)) {
                status = status_push(o, (int)json_integer_value(v), mtime);
            }
        }
        json_decref(doc);
        doc = NULL;
    }
    return status;
}

/* A staged sample's index: from its name, else from its sample.json. */
static int status_staged_index(const char *staging, const char *name)
{
    svp_job_wds_member_t *v;
    json_t               *doc;
    char                  path[8400], why[1024], *end;
    int                   idx = -1, n, k;
    long                  num;

    /* "sample_N.tar": N in digits, no sign, no overflow */
    if (strncmp(name, "sample_", 7) == 0 && name[7] >= '0' && name[7] <= '9') {
        errno = 0;
        num   = strtol(name + 7, &end, 10);
        if (errno == 0 && num <= INT_MAX && strcmp(end, ".tar") == 0) {
            return (int)num;
        }
    }
    snprintf(path, sizeof(path), "%s/%s", staging, name);
    if (svp_job_wds_staged_read(path, &v, &n, why, sizeof(why)) != SVP_OK) {
        return -1;
    }
    for (k = 0; k < n; ++k) {
        if (strcmp(v[k].name, "sample.json") == 0) {
            doc = json_loadb(v[k].data, v[k].size, 0, NULL);
            if (json_is_integer(json_object_get(doc, "sample"))) {
                idx = (int)json_integer_value(json_object_get(doc, "sample"));
            }
            json_decref(doc);
        }
    }
    svp_job_wds_members_free(v, n);
    return idx;
}

/* The samples finished and waiting for their shard in output.dir/staging:
 * each one file NAME.tar (a temporary's name has .tmp. in it). */
static svp_status_t status_scan_staging(const char *staging, status_outs_t *o)
{
    DIR           *d = opendir(staging);
    struct dirent *de;
    struct stat    sb;
    char           path[8400];
    size_t         n;
    svp_status_t   status = SVP_OK;

    if (d == NULL) {
        return SVP_OK;
    }
    while (status == SVP_OK && (de = readdir(d)) != NULL) {
        n = strlen(de->d_name);
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp.") != NULL || n <= 4 ||
            strcmp(de->d_name + n - 4, ".tar") != 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", staging, de->d_name);
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            continue;
        }
        status = status_push(o, status_staged_index(staging, de->d_name),
                             (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9);
    }
    closedir(d);
    return status;
}

static svp_status_t status_scan(const char *dir, status_t *s, char *errbuf,
                                int errlen)
{
    DIR            *d;
    struct dirent  *de;
    status_task_t   t;
    char            path[4096], job[256];
    int             i, n, total, is_dir;
    double          mtime;
    svp_status_t    status;
    status_outs_t   o  = {NULL, 0, 0};
    status_shards_t sh = {NULL, 0, 0, ""};
    int             k;

    d = opendir(dir);
    if (d == NULL) {
        svp_errf(errbuf, errlen, "status: cannot open %s: %s", dir, strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    status = SVP_OK;
    while (status == SVP_OK && (de = readdir(d)) != NULL) {
        if (status_is_task_file(de->d_name, &i, &n)) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            memset(&t, 0, sizeof(t));
            status =
                status_read_task(path, &t, job, sizeof(job), &total, errbuf, errlen);
            if (status != SVP_OK) {
                break;
            }
            if (s->count == 0 || t.count > s->count) {
                /* the finest split wins: a coarser one is an earlier way of
                 * running the job, its tasks' counts do not add up with it */
                if (t.count > STATUS_MAX_TASKS) {
                    svp_errf(errbuf, errlen,
                             "%s: %d tasks, expected at most "
                             "%d",
                             path, t.count, STATUS_MAX_TASKS);
                    status = SVP_ERR_BAD_FILE;
                    break;
                }
                free(s->tasks);
                s->tasks = calloc((size_t)t.count, sizeof(*s->tasks));
                if (s->tasks == NULL) {
                    status = SVP_ERR_NO_MEMORY;
                    break;
                }
                s->count       = t.count;
                s->ntasks_seen = 0;
            }
            if (t.count == s->count) {
                if (s->tasks[t.index].count == 0) {
                    s->ntasks_seen++;
                }
                s->tasks[t.index] = t;
                s->total          = SVP_MAX(s->total, total);
                snprintf(s->job, sizeof(s->job), "%s", job);
            }
            continue;
        }
        if (strncmp(de->d_name, "shard", 5) == 0) {
            status = status_note_shard(&sh, de->d_name);
            continue;
        }
        if (strcmp(de->d_name, SVP_JOB_WDS_STAGING) == 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            status = status_scan_staging(path, &o);
            continue;
        }
        if (!status_is_output(dir, de->d_name, &is_dir, &mtime)) {
            continue;
        }
        status =
            status_push(&o, status_output_index(dir, de->d_name, is_dir), mtime);
    }
    closedir(d);
    if (status == SVP_OK) {
        status = status_scan_shards(dir, &sh, s->total, &o);
    }
    free(sh.v);
    if (status != SVP_OK) {
        free(o.v);
        return status;
    }
    if (s->total < 0) {
        for (k = 0; k < o.n; ++k) {
            s->total = SVP_MAX(s->total, o.v[k].idx + 1);
        }
    }
    s->done = calloc((size_t)SVP_MAX(s->total, 0) + 1, 1);
    if (s->done == NULL) {
        free(o.v);
        return SVP_ERR_NO_MEMORY;
    }
    for (k = 0; k < o.n; ++k) {
        int idx = o.v[k].idx;
        if (idx < 0 || idx >= s->total) {
            s->nunknown++;
            continue;
        }
        if (s->done[idx]) {
            continue;
        }
        s->done[idx] = 1;
        s->ndone++;
        s->mtime_min =
            (s->ndone == 1) ? o.v[k].mtime : SVP_MIN(s->mtime_min, o.v[k].mtime);
        s->mtime_max = SVP_MAX(s->mtime_max, o.v[k].mtime);
        for (i = 0; i < s->count; ++i) {
            status_task_t *tk = &s->tasks[i];
            if (tk->count == 0 || !status_owns(tk, idx)) {
                continue;
            }
            tk->done++;
            tk->made += (o.v[k].mtime >= tk->started);
        }
    }
    free(o.v);
    return SVP_OK;
}

/* Whether task t made nothing more: it failed, was stopped or lost. */
static int status_task_ended_short(const status_task_t *t)
{
    return t->count > 0 &&
           (!strcmp(t->state, "failed") || !strcmp(t->state, "stopped") ||
            !strcmp(t->state, "lost"));
}

/*
 * The failed samples (not done, their task failed, stopped or lost), every
 * one of them, as strided runs: a shard's samples are i, i + n, ..., so its
 * missing ones read "23-199:3" rather than a list.  Text into *text_p
 * (malloc'ed: "1-148:3, 2, 5-11"), JSON into *json_p (integers, and
 * [first, last, step] for a run of three or more); *n_p counts them.
 */
static svp_status_t status_failed(const status_t *s, char **text_p, json_t **json_p,
                                  int *n_p)
{
    int    *v, n = 0, i, j, step, k;
    size_t  used = 0, cap = 256;
    char   *text = malloc(cap), *grown, item[64];
    json_t *arr  = json_array();

    v = malloc((size_t)SVP_MAX(s->total, 1) * sizeof(*v));
    if (v == NULL || text == NULL || arr == NULL) {
        free(v);
        free(text);
        json_decref(arr);
        return SVP_ERR_NO_MEMORY;
    }
    text[0] = '\0';
    /* task by task (their strides), in the order of the tasks */
    for (k = 0; k < s->count; ++k) {
        if (!status_task_ended_short(&s->tasks[k])) {
            continue;
        }
        for (i = k; i < s->total; i += s->count) {
            if (!s->done[i]) {
                v[n++] = i;
            }
        }
    }
    for (i = 0; i < n; i = j + 1) {
        step = (i + 1 < n) ? v[i + 1] - v[i] : 0;
        for (j = i; j + 1 < n && v[j + 1] - v[j] == step; ++j) {
        }
        if (j - i + 1 < 3) {
            j = i; /* too short for a run: one number */
        }
        if (j == i) {
            snprintf(item, sizeof(item), "%d", v[i]);
            json_array_append_new(arr, json_integer(v[i]));
        } else {
            snprintf(item, sizeof(item), (step == 1) ? "%d-%d" : "%d-%d:%d", v[i],
                     v[j], step);
            json_array_append_new(arr, json_pack("[i, i, i]", v[i], v[j], step));
        }
        while (used + strlen(item) + 3 > cap) {
            grown = realloc(text, cap *= 2);
            if (grown == NULL) {
                free(v);
                free(text);
                json_decref(arr);
                return SVP_ERR_NO_MEMORY;
            }
            text = grown;
        }
        used += (size_t)snprintf(text + used, cap - used, "%s%s", used ? ", " : "",
                                 item);
    }
    free(v);
    *text_p = text;
    *json_p = arr;
    *n_p    = n;
    return SVP_OK;
}

/* A task's own rate: its shard's outputs made since it started. */
static double status_task_rate(const status_task_t *t, double now)
{
    double end = (t->ended > 0)              ? t->ended
                 : !strcmp(t->state, "lost") ? t->updated
                                             : now;

    return (t->made > 0 && end > t->started) ? t->made / (end - t->started) : 0;
}

/* Each task's line (an array's), then a line for each task lost. */
static void status_print_tasks(FILE *out, const status_t *sp, double now)
{
    const status_t s = *sp;
    char           b1[32], b2[32];
    int            i;

    for (i = 0; i < s.count && s.count > 1; ++i) {
        const status_task_t *t = &s.tasks[i];
        if (t->count == 0) {
            fprintf(out, "  task %d of %d: not started\n", i, s.count);
            continue;
        }
        fprintf(out, "  task %d of %d: %d of %d done, %s%s%s", i, s.count, t->done,
                t->samples_shard, t->state, t->name[0] ? " (job " : "", t->name);
        fprintf(out, "%s, %.3f samples/s\n", t->name[0] ? ")" : "",
                status_task_rate(t, now));
    }
    for (i = 0; i < s.count; ++i) {
        const status_task_t *t = &s.tasks[i];
        if (t->count > 0 && !strcmp(t->state, "lost")) {
            char who[96] = "the task";

            if (s.count > 1) {
                snprintf(who, sizeof(who), "task %d of %d", i, s.count);
            }
            fprintf(
                out,
                "%s: lost: its record says running, but it has been silent for "
                "%s (a running task rewrites it every %s): killed outright (SIGKILL, "
                "out of memory) or its node lost%s%s%s\n",
                who, svp_clock_format_duration(now - t->updated, b1, sizeof(b1)),
                svp_clock_format_duration(t->beat, b2, sizeof(b2)),
                t->name[0] ? "; sacct -j " : "", t->name,
                t->name[0] ? " says which" : "");
        }
    }
}

svp_status_t svp_launch_status(FILE *out, const char *dir, int as_json, char *errbuf,
                               int errlen)
{
    status_t     s;
    double       now = svp_clock_wall(), rate = 0, eta = -1, t0 = 0, t1 = 0;
    int          i, running = 0, made = 0, nfailed = 0, remaining = 0, orphaned;
    char         b1[32], b2[32], *failed = NULL;
    svp_status_t status;
    json_t      *doc, *tasks, *jfailed = NULL;

    memset(&s, 0, sizeof(s));
    s.total = -1;
    status  = status_scan(dir, &s, errbuf, errlen);
    if (status != SVP_OK) {
        goto out;
    }
    for (i = 0; i < s.count; ++i) {
        const status_task_t *t = &s.tasks[i];
        if (t->count == 0) {
            continue;
        }
        if (!strcmp(t->state, "running")) {
            running++;
            rate += status_task_rate(t, now);
            /* what running tasks will still make: the ETA's work */
            remaining += SVP_MAX(t->samples_shard - t->done, 0);
        }
        made += t->made;
        t0 = (t0 == 0 || t->started < t0) ? t->started : t0;
        t1 = SVP_MAX(t1, (t->ended > 0)              ? t->ended
                         : !strcmp(t->state, "lost") ? t->updated
                                                     : now);
    }
    if (running == 0 && made > 0 && t1 > t0) {
        rate = made / (t1 - t0); /* the last runs, over their span */
    }
    /* samples no running task will make: those of tasks that ended short
     * or never started */
    orphaned = SVP_MAX(s.total, 0) - s.ndone - remaining;
    if (running > 0 && rate > 0) {
        eta = remaining / rate;
    }
    status = status_failed(&s, &failed, &jfailed, &nfailed);
    if (status != SVP_OK) {
        goto out;
    }

    if (as_json) {
        tasks = json_array();
        for (i = 0; i < s.count; ++i) {
            const status_task_t *t = &s.tasks[i];
            if (t->count == 0) {
                json_array_append_new(tasks, json_pack("{s:i, s:i, s:s}", "index", i,
                                                       "count", s.count, "state",
                                                       "not started"));
                continue;
            }
            json_array_append_new(
                tasks,
                json_pack("{s:i, s:i, s:s, s:i, s:i, s:f, s:f, s:f, s:f, s:s, s:s}",
                          "index", t->index, "count", t->count, "state", t->state,
                          "done", t->done, "samples", t->samples_shard, "started",
                          t->started, "ended", t->ended, "updated", t->updated,
                          "rate", status_task_rate(t, now), "slurm_job",
                          t->slurm_job, "name", t->name));
        }
        doc =
            json_pack("{s:s, s:s, s:i, s:i, s:f, s:o, s:i, s:i, s:i, s:O, s:s, s:o}",
                      "job", s.job, "dir", dir, "done", s.ndone, "total", s.total,
                      "rate", rate, "eta_s",
                      (eta >= 0) ? json_real(eta) : json_null(), "remaining",
                      remaining, "orphaned", orphaned, "failed_count", nfailed,
                      "failed", jfailed, "failed_ranges", failed, "tasks", tasks);
        if (doc == NULL) {
            status = SVP_ERR_NO_MEMORY;
            goto out;
        }
        json_dumpf(doc, out, JSON_INDENT(1));
        fputc('\n', out);
        json_decref(doc);
        goto out;
    }

    if (s.count == 0) {
        fprintf(out,
                "%s: %d sample%s done; no task record (task.json): the job "
                "has not started here, or predates them\n",
                dir, s.ndone, s.ndone == 1 ? "" : "s");
        goto out;
    }
    fprintf(out, "job '%s' in %s: %d of %d samples done (%.0f%%)", s.job, dir,
            s.ndone, s.total, s.total > 0 ? 100.0 * s.ndone / s.total : 0.0);
    if (s.count > 1) {
        fprintf(out, ", %d tasks", s.count);
    }
    fputc('\n', out);
    status_print_tasks(out, &s, now);
    if (eta >= 0) {
        fprintf(out,
                "rate %.3f samples/s, eta %s for the %d sample%s the %d running "
                "task%s will make\n",
                rate, svp_clock_format_duration(eta, b1, sizeof(b1)), remaining,
                remaining == 1 ? "" : "s", running, running == 1 ? "" : "s");
    } else if (rate > 0) {
        fprintf(out, "rate %.3f samples/s over %s; nothing running\n", rate,
                svp_clock_format_duration(t1 - t0, b2, sizeof(b2)));
    }
    if (running > 0 && orphaned > 0) {
        fprintf(out,
                "%d sample%s no running task will make (their tasks ended or did "
                "not start)\n",
                orphaned, orphaned == 1 ? "" : "s");
    }
    if (nfailed > 0) {
        fprintf(out,
                "failed: %d sample%s not made by a failed, stopped or lost task: %s "
                "(run the task again: it resumes)\n",
                nfailed, nfailed == 1 ? "" : "s", failed);
    }
    if (s.nunknown > 0) {
        fprintf(out, "%d output%s of no sample of this job\n", s.nunknown,
                s.nunknown == 1 ? "" : "s");
    }
out:
    free(failed);
    json_decref(jfailed);
    free(s.tasks);
    free(s.done);
    return status;
}

/* The value of " KEY=" in scontrol's one-line record, up to the next space. */
static int status_scontrol_field(const char *rec, const char *key, char *out,
                                 size_t len)
{
    const char *p    = rec;
    size_t      klen = strlen(key), n;

    while ((p = strstr(p, key)) != NULL) {
        if ((p == rec || p[-1] == ' ') && p[klen] == '=') {
            p += klen + 1;
            n = strcspn(p, " \n");
            if (n == 0 || n >= len) {
                return 0;
            }
            memcpy(out, p, n);
            out[n] = '\0';
            return 1;
        }
        p += klen;
    }
    return 0;
}

/* Whether s is a job id Slurm could know: N or N_T, N > 0, no leading 0. */
static int status_is_jobid(const char *s)
{
    size_t n = strspn(s, "0123456789");

    if (n == 0 || n > 20 || s[0] == '0') {
        return 0;
    }
    if (s[n] == '\0') {
        return 1;
    }
    return s[n] == '_' && s[n + 1] != '\0' && strlen(s + n + 1) <= 10 &&
           s[n + 1 + strspn(s + n + 1, "0123456789")] == '\0';
}

/* Runs cmd and reads at most len - 1 bytes of its output into buf; the
 * command's exit status (-1 when it cannot run). */
static int status_run(const char *cmd, char *buf, size_t len, size_t *got_p)
{
    FILE *p =
        popen(cmd, "r"); /* NOLINT(cert-env33-c): scontrol on a job id of digits */
    size_t got = 0;
    int    rc;

    if (p == NULL) {
        buf[0] = '\0';
        *got_p = 0;
        return -1;
    }
    got      = fread(buf, 1, len - 1, p);
    rc       = pclose(p);
    buf[got] = '\0';
    *got_p   = got;
    return rc;
}

/* The '# svdpipe output.dir:' line of a rendered script's header in text;
 * relative to workdir.  1 when found. */
static int status_script_output(const char *text, const char *workdir, char *dir,
                                size_t len)
{
    size_t      mlen = strlen(SVP_LAUNCH_OUTPUT_MARK), n;
    const char *line = text;

    while (line != NULL && *line != '\0') {
        n = strcspn(line, "\n");
        if (strncmp(line, SVP_LAUNCH_OUTPUT_MARK, mlen) == 0) {
            if (line[mlen] == '/') {
                snprintf(dir, len, "%.*s", (int)(n - mlen), line + mlen);
            } else {
                snprintf(dir, len, "%s/%.*s", workdir, (int)(n - mlen), line + mlen);
            }
            return 1;
        }
        if (line[0] != '#') {
            return 0; /* the header is over */
        }
        line = (line[n] == '\n') ? line + n + 1 : NULL;
    }
    return 0;
}

svp_status_t svp_launch_job_output(const char *jobid, char *dir, size_t len,
                                   char *errbuf, int errlen)
{
    char   cmd[160], rec[16384], script[4096], workdir[4096], id[64], *text = NULL;
    size_t got = 0;
    FILE  *f;
    int    rc, found;

    if (!status_is_jobid(jobid)) {
        svp_errf(errbuf, errlen,
                 "'%s' is neither an output directory nor a Slurm "
                 "job id (N or N_T for an array task, N > 0)",
                 jobid);
        return SVP_ERR_USAGE;
    }
    snprintf(cmd, sizeof(cmd), "scontrol show job -o '%s' 2>&1", jobid);
    rc = status_run(cmd, rec, sizeof(rec), &got);
    if (rc != 0) {
        rec[strcspn(rec, "\n")] = '\0'; /* scontrol's one-line reason */
        svp_errf(errbuf, errlen,
                 "job %s: scontrol show job: %s (Slurm forgets a "
                 "finished job after MinJobAge; give its output directory)",
                 jobid, got > 0 ? rec : "cannot run scontrol");
        return SVP_ERR_NOT_FOUND;
    }
    /* the record must be the job asked for: JobId=N, or ArrayJobId=N with
     * ArrayTaskId=T for N_T */
    if (strchr(jobid, '_') != NULL) {
        char aj[32], at[32];

        if (!status_scontrol_field(rec, "ArrayJobId", aj, sizeof(aj)) ||
            !status_scontrol_field(rec, "ArrayTaskId", at, sizeof(at))) {
            aj[0] = at[0] = '\0';
        }
        snprintf(id, sizeof(id), "%s_%s", aj, at);
    } else if (!status_scontrol_field(rec, "JobId", id, sizeof(id))) {
        id[0] = '\0';
    }
    if (strcmp(id, jobid) != 0) {
        svp_errf(errbuf, errlen,
                 "job %s: Slurm does not know it (give its output "
                 "directory)",
                 jobid);
        return SVP_ERR_NOT_FOUND;
    }
    if (!status_scontrol_field(rec, "WorkDir", workdir, sizeof(workdir))) {
        svp_errf(errbuf, errlen,
                 "job %s: scontrol names no WorkDir=: give its "
                 "output directory",
                 jobid);
        return SVP_ERR_NOT_FOUND;
    }
    if (status_scontrol_field(rec, "Command", script, sizeof(script)) &&
        strcmp(script, "(null)") != 0 && (f = fopen(script, "r")) != NULL) {
        text = malloc(65536);
        got  = (text != NULL) ? fread(text, 1, 65535, f) : 0;
        fclose(f);
        if (text != NULL) {
            text[got] = '\0';
        }
    } else {
        /* a script piped into sbatch has no file: Slurm keeps a copy */
        text = malloc(65536);
        snprintf(cmd, sizeof(cmd), "scontrol write batch_script '%s' - 2>/dev/null",
                 jobid);
        if (text != NULL && status_run(cmd, text, 65536, &got) != 0) {
            free(text);
            text = NULL;
        }
    }
    if (text == NULL) {
        svp_errf(errbuf, errlen,
                 "job %s: cannot read its batch script (neither "
                 "its file nor scontrol write batch_script): give its output "
                 "directory",
                 jobid);
        return SVP_ERR_NOT_FOUND;
    }
    found = status_script_output(text, workdir, dir, len);
    free(text);
    if (!found) {
        svp_errf(errbuf, errlen,
                 "job %s: its batch script does not say where the "
                 "outputs go (not rendered by this svdlaunch); give its output "
                 "directory",
                 jobid);
        return SVP_ERR_NOT_FOUND;
    }
    return SVP_OK;
}
