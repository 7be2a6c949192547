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
#include "common/util.h"
#include "tensor/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STATUS_MAX_TASKS 4096

/* Seconds of silence after which a running task is lost: 3 beats missed
 * and one more (at most 10 s) for a shared file system's clock skew. */
#define STATUS_SILENT(_beat) (3.0 * (_beat) + SVP_MIN((_beat), 10.0))

typedef struct {
    int    index, count;            /* the shard */
    int    samples_shard, skipped, to_run;
    double started, ended;          /* Unix seconds; ended 0: running */
    double updated, beat;           /* last written; seconds between (0: unknown) */
    char   state[16];               /* running, done, failed, stopped, lost */
    char   slurm_job[32];
    int    done;                    /* outputs of the shard found */
    int    made;                    /* of those, made since started */
} status_task_t;

typedef struct {
    char           job[256];
    int            total;           /* samples of the job, -1: unknown */
    int            count;           /* shards */
    status_task_t *tasks;           /* by shard index (count of them) */
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
    const char  *state = NULL, *jobname = NULL, *sj = NULL;
    int          i = -1, n = -1, total = -1;

    doc = json_load_file(path, 0, &jerr);
    if (doc == NULL) {
        svp_errf(errbuf, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    if (json_unpack(doc, "{s:s, s:[i, i], s:i, s:i, s:i, s:i, s:F, s:F, s:s, s?s, s?F, s?F}",
                    "job", &jobname, "shard", &i, &n, "samples_total", &total,
                    "samples_shard", &t->samples_shard, "skipped", &t->skipped,
                    "to_run", &t->to_run, "started", &t->started, "ended",
                    &t->ended, "state", &state, "slurm_job", &sj, "updated",
                    &t->updated, "beat_s", &t->beat) != 0) {
        svp_errf(errbuf, errlen, "%s: expected a task record (job, shard, "
                        "samples_total, ..., state)", path);
        json_decref(doc);
        return SVP_ERR_BAD_FILE;
    }
    t->index = i;
    t->count = n;
    snprintf(t->state, sizeof(t->state), "%s", state);
    if (!strcmp(state, "running") && t->beat > 0 && t->updated > 0 &&
        svp_clock_wall() - t->updated > STATUS_SILENT(t->beat)) {
        /* a running task rewrites its file every beat: this one was killed
         * outright (SIGKILL, out of memory, its node lost) */
        snprintf(t->state, sizeof(t->state), "lost");
    }
    snprintf(t->slurm_job, sizeof(t->slurm_job), "%s", sj ? sj : "");
    snprintf(job, joblen, "%s", jobname);
    *total_p = total;
    json_decref(doc);
    return SVP_OK;
}

/* The sample index of an output: from its name, else from its metadata. */
static int status_output_index(const char *dir, const char *name, int is_dir)
{
    char         path[4096];
    json_error_t jerr;
    json_t      *doc;
    svp_safetensors_h st;
    const char  *v;
    int          idx = -1, len = 0;

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
            idx = json_is_integer(s) ? (int)json_integer_value(s) : -1;
            json_decref(doc);
        }
        return idx;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (svp_safetensors_open(path, &st) == SVP_OK) {
        v = svp_safetensors_metadata(st, "sample");
        idx = (v != NULL) ? atoi(v) : -1;
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
        return 0;   /* hidden, or a write in progress */
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
    return i % t->count == t->index;
}

static svp_status_t status_scan(const char *dir, status_t *s, char *errbuf, int errlen)
{
    DIR           *d;
    struct dirent *de;
    status_task_t  t;
    char           path[4096], job[256];
    int            i, n, total, is_dir;
    double         mtime;
    svp_status_t   status;
    struct {
        int    idx;
        double mtime;
    }             *outs = NULL, *grown;
    int            nouts = 0, room = 0, k;

    d = opendir(dir);
    if (d == NULL) {
        svp_errf(errbuf, errlen, "status: cannot open %s: %s", dir,
                        strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    status = SVP_OK;
    while (status == SVP_OK && (de = readdir(d)) != NULL) {
        if (status_is_task_file(de->d_name, &i, &n)) {
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            memset(&t, 0, sizeof(t));
            status = status_read_task(path, &t, job, sizeof(job), &total, errbuf,
                                      errlen);
            if (status != SVP_OK) {
                break;
            }
            if (s->count == 0 || t.count > s->count) {
                /* the finest split wins: a coarser one is an earlier way of
                 * running the job, its tasks' counts do not add up with it */
                if (t.count > STATUS_MAX_TASKS) {
                    svp_errf(errbuf, errlen, "%s: %d tasks, expected at most "
                                    "%d", path, t.count, STATUS_MAX_TASKS);
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
        if (!status_is_output(dir, de->d_name, &is_dir, &mtime)) {
            continue;
        }
        if (nouts == room) {
            room  = SVP_MAX(64, 2 * room);
            grown = realloc(outs, (size_t)room * sizeof(*outs));
            if (grown == NULL) {
                status = SVP_ERR_NO_MEMORY;
                break;
            }
            outs = (void *)grown;
        }
        outs[nouts].idx   = status_output_index(dir, de->d_name, is_dir);
        outs[nouts].mtime = mtime;
        nouts++;
    }
    closedir(d);
    if (status != SVP_OK) {
        free(outs);
        return status;
    }
    if (s->total < 0) {
        for (k = 0; k < nouts; ++k) {
            s->total = SVP_MAX(s->total, outs[k].idx + 1);
        }
    }
    s->done = calloc((size_t)SVP_MAX(s->total, 0) + 1, 1);
    if (s->done == NULL) {
        free(outs);
        return SVP_ERR_NO_MEMORY;
    }
    for (k = 0; k < nouts; ++k) {
        int idx = outs[k].idx;
        if (idx < 0 || idx >= s->total) {
            s->nunknown++;
            continue;
        }
        if (s->done[idx]) {
            continue;
        }
        s->done[idx] = 1;
        s->ndone++;
        s->mtime_min = (s->ndone == 1) ? outs[k].mtime : SVP_MIN(s->mtime_min, outs[k].mtime);
        s->mtime_max = SVP_MAX(s->mtime_max, outs[k].mtime);
        for (i = 0; i < s->count; ++i) {
            status_task_t *tk = &s->tasks[i];
            if (tk->count == 0 || !status_owns(tk, idx)) {
                continue;
            }
            tk->done++;
            tk->made += (outs[k].mtime >= tk->started);
        }
    }
    free(outs);
    return SVP_OK;
}

/* "4, 7-9, 12": the failed samples (at most max ranges); *n_p counts them. */
static void status_ranges(const status_t *s, char *buf, size_t len, int max, int *n_p)
{
    size_t used = 0;
    int    i = 0, j, ranges = 0, n = 0;

#define STATUS_FAILED(_i) \
    (!s->done[_i] && s->count > 0 && s->tasks[(_i) % s->count].count > 0 && \
     (!strcmp(s->tasks[(_i) % s->count].state, "failed") || \
      !strcmp(s->tasks[(_i) % s->count].state, "stopped") || \
      !strcmp(s->tasks[(_i) % s->count].state, "lost")))
    buf[0] = '\0';
    while (i < s->total) {
        if (!STATUS_FAILED(i)) {
            ++i;
            continue;
        }
        for (j = i; j + 1 < s->total && STATUS_FAILED(j + 1); ++j) {
        }
        n += j - i + 1;
        if (ranges++ < max && used < len) {
            used += (size_t)snprintf(buf + used, len - used, (i == j) ? "%s%d" : "%s%d-%d",
                                     used ? ", " : "", i, j);
        } else if (ranges == max + 1 && used < len) {
            used += (size_t)snprintf(buf + used, len - used, ", ...");
        }
        i = j + 1;
    }
#undef STATUS_FAILED
    *n_p = n;
}

/* A task's own rate: its shard's outputs made since it started. */
static double status_task_rate(const status_task_t *t, double now)
{
    double end = (t->ended > 0) ? t->ended : !strcmp(t->state, "lost") ? t->updated : now;

    return (t->made > 0 && end > t->started) ? t->made / (end - t->started) : 0;
}

svp_status_t svp_launch_status(FILE *out, const char *dir, int as_json, char *errbuf,
                               int errlen)
{
    status_t     s;
    double       now = svp_clock_wall(), rate = 0, eta = -1, t0 = 0, t1 = 0;
    int          i, running = 0, made = 0, nfailed = 0, remaining;
    char         failed[1024], b1[32], b2[32];
    svp_status_t status;
    json_t      *doc, *tasks;

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
        }
        made += t->made;
        t0 = (t0 == 0 || t->started < t0) ? t->started : t0;
        t1 = SVP_MAX(t1, (t->ended > 0) ? t->ended :
                         !strcmp(t->state, "lost") ? t->updated : now);
    }
    if (running == 0 && made > 0 && t1 > t0) {
        rate = made / (t1 - t0);   /* the last runs, over their span */
    }
    remaining = SVP_MAX(s.total, 0) - s.ndone;
    if (running > 0 && rate > 0) {
        eta = remaining / rate;
    }
    status_ranges(&s, failed, sizeof(failed), 16, &nfailed);

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
            json_array_append_new(tasks, json_pack(
                "{s:i, s:i, s:s, s:i, s:i, s:f, s:f, s:f, s:f, s:s}", "index", t->index,
                "count", t->count, "state", t->state, "done", t->done, "samples",
                t->samples_shard, "started", t->started, "ended", t->ended, "updated",
                t->updated, "rate", status_task_rate(t, now), "slurm_job", t->slurm_job));
        }
        doc = json_pack("{s:s, s:s, s:i, s:i, s:f, s:o, s:i, s:s, s:o}", "job", s.job,
                        "dir", dir, "done", s.ndone, "total", s.total, "rate", rate,
                        "eta_s", (eta >= 0) ? json_real(eta) : json_null(),
                        "failed_count", nfailed, "failed", failed, "tasks", tasks);
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
        fprintf(out, "%s: %d sample%s done; no task record (task.json): the job "
                "has not started here, or predates them\n", dir, s.ndone,
                s.ndone == 1 ? "" : "s");
        goto out;
    }
    fprintf(out, "job '%s' in %s: %d of %d samples done (%.0f%%)", s.job, dir, s.ndone,
            s.total, s.total > 0 ? 100.0 * s.ndone / s.total : 0.0);
    if (s.count > 1) {
        fprintf(out, ", %d tasks", s.count);
    }
    fputc('\n', out);
    for (i = 0; i < s.count && s.count > 1; ++i) {
        const status_task_t *t = &s.tasks[i];
        if (t->count == 0) {
            fprintf(out, "  task %d of %d: not started\n", i, s.count);
            continue;
        }
        fprintf(out, "  task %d of %d: %d of %d done, %s%s%s", i, s.count, t->done,
                t->samples_shard, t->state, t->slurm_job[0] ? " (job " : "",
                t->slurm_job[0] ? t->slurm_job : "");
        fprintf(out, "%s, %.3f samples/s\n", t->slurm_job[0] ? ")" : "",
                status_task_rate(t, now));
    }
    for (i = 0; i < s.count; ++i) {
        const status_task_t *t = &s.tasks[i];
        if (t->count > 0 && !strcmp(t->state, "lost")) {
            char who[64] = "the task";

            if (s.count > 1) {
                snprintf(who, sizeof(who), "task %d of %d", i, s.count);
            }
            fprintf(out, "%s: lost: its record says running, but it has been silent for "
                    "%s (a running task rewrites it every %s): killed outright (SIGKILL, "
                    "out of memory) or its node lost%s%s%s\n", who,
                    svp_clock_format_duration(now - t->updated, b1, sizeof(b1)),
                    svp_clock_format_duration(t->beat, b2, sizeof(b2)),
                    t->slurm_job[0] ? "; sacct -j " : "", t->slurm_job,
                    t->slurm_job[0] ? " says which" : "");
        }
    }
    if (eta >= 0) {
        fprintf(out, "rate %.3f samples/s, eta %s (%d running)\n", rate,
                svp_clock_format_duration(eta, b1, sizeof(b1)), running);
    } else if (rate > 0) {
        fprintf(out, "rate %.3f samples/s over %s; nothing running\n", rate,
                svp_clock_format_duration(t1 - t0, b2, sizeof(b2)));
    }
    if (nfailed > 0) {
        fprintf(out, "failed: %d sample%s not made by a failed, stopped or lost task: %s "
                "(run the task again: it resumes)\n", nfailed, nfailed == 1 ? "" : "s",
                failed);
    }
    if (s.nunknown > 0) {
        fprintf(out, "%d output%s of no sample of this job\n", s.nunknown,
                s.nunknown == 1 ? "" : "s");
    }
out:
    free(s.tasks);
    free(s.done);
    return status;
}

/* The value of " KEY=" in scontrol's one-line record, up to the next space. */
static int status_scontrol_field(const char *rec, const char *key, char *out,
                                 size_t len)
{
    const char *p = rec;
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

svp_status_t svp_launch_job_output(const char *jobid, char *dir, size_t len,
                                   char *errbuf, int errlen)
{
    char    cmd[128], rec[16384], script[4096], workdir[4096], *line = NULL;
    size_t  got = 0, cap = 0, mlen = strlen(SVP_LAUNCH_OUTPUT_MARK);
    FILE   *p, *f;
    int     rc, found = 0;

    if (jobid[strspn(jobid, "0123456789_")] != '\0' || strlen(jobid) > 40) {
        svp_errf(errbuf, errlen, "'%s' is neither an output directory nor a "
                 "Slurm job id", jobid);
        return SVP_ERR_USAGE;
    }
    snprintf(cmd, sizeof(cmd), "scontrol show job -o '%s' 2>&1", jobid);
    p = popen(cmd, "r");
    if (p != NULL) {
        got = fread(rec, 1, sizeof(rec) - 1, p);
        rc  = pclose(p);
    } else {
        rc = -1;
    }
    rec[got] = '\0';
    if (rc != 0) {
        rec[strcspn(rec, "\n")] = '\0';   /* scontrol's one-line reason */
        svp_errf(errbuf, errlen, "job %s: scontrol show job: %s (Slurm forgets a "
                 "finished job after MinJobAge; give its output directory)",
                 jobid, got > 0 ? rec : "cannot run scontrol");
        return SVP_ERR_NOT_FOUND;
    }
    if (!status_scontrol_field(rec, "Command", script, sizeof(script)) ||
        !status_scontrol_field(rec, "WorkDir", workdir, sizeof(workdir))) {
        svp_errf(errbuf, errlen, "job %s: scontrol names no batch script "
                 "(Command=) or WorkDir=: not a job svdlaunch submitted; give "
                 "its output directory", jobid);
        return SVP_ERR_NOT_FOUND;
    }
    f = fopen(script, "r");
    while (f != NULL && getline(&line, &cap, f) > 0) {
        if (strncmp(line, SVP_LAUNCH_OUTPUT_MARK, mlen) == 0) {
            line[strcspn(line, "\n")] = '\0';
            if (line[mlen] == '/') {
                snprintf(dir, len, "%s", line + mlen);
            } else {
                snprintf(dir, len, "%s/%s", workdir, line + mlen);
            }
            found = 1;
            break;
        }
        if (line[0] != '#') {
            break;   /* the header is over */
        }
    }
    free(line);
    if (f == NULL) {
        svp_errf(errbuf, errlen, "job %s: cannot read its script %s: %s; give its "
                 "output directory", jobid, script, strerror(errno));
        return SVP_ERR_NOT_FOUND;
    }
    fclose(f);
    if (!found) {
        svp_errf(errbuf, errlen, "job %s: its script %s does not say where the "
                 "outputs go (not rendered by this svdlaunch); give its output "
                 "directory", jobid, script);
        return SVP_ERR_NOT_FOUND;
    }
    return SVP_OK;
}
