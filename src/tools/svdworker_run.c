/*
 * What a run leaves in output.dir besides its samples (svdworker_run.h):
 * run.json with its attempts, the task record that svdlaunch status reads
 * and its heartbeat (which also renews the output directory's lease), and
 * the per-rank profile.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdworker_run.h"
#include "job/lease.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/file.h"
#include "common/threads.h"
#include "jobspec/layout.h"
#include "jobspec/spec_json.h"
#include "trace/range.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SVP_CONFIGURE_ARGS
#define SVP_CONFIGURE_ARGS ""
#endif

#define SVP_WORKER_RUN_HOST_KEY "svp.run.host"

svp_status_t svp_worker_run_publish(svp_rt_h rt)
{
    const char *host = svp_rt_hostname(rt);

    return svp_rt_put(rt, SVP_WORKER_RUN_HOST_KEY, host, strlen(host) + 1);
}

static json_t *svp_worker_run_hosts(svp_rt_h rt, int world)
{
    json_t *hosts = json_array();
    void   *data;
    size_t  len;
    int     r;

    for (r = 0; r < world; ++r) {
        if (r == svp_rt_rank(rt) || svp_rt_is_plain(rt)) {
            json_array_append_new(hosts, json_string(svp_rt_hostname(rt)));
        } else if (svp_rt_get(rt, r, SVP_WORKER_RUN_HOST_KEY, &data, &len) ==
                   SVP_OK) {
            json_array_append_new(hosts, json_stringn(data, strnlen(data, len)));
            free(data);
        } else {
            json_array_append_new(hosts, json_null());
        }
    }
    return hosts;
}

static json_t *svp_worker_run_hardware(void)
{
    const char *file = getenv("SVP_HARDWARE");
    json_t     *hw;
    char       *text = NULL;
    size_t      len  = 0;
    FILE       *f;

    if (file == NULL || file[0] == '\0') {
        return NULL;
    }
    f = fopen(file, "r");
    if (f == NULL) {
        svp_warn(
            "SVP_HARDWARE=%s: cannot read it: %m; run.json has no hardware table",
            file);
        return NULL;
    }
    if (getdelim(&text, &len, '\0', f) < 0) {
        free(text);
        fclose(f);
        return NULL;
    }
    fclose(f);
    hw = json_pack("{s:s, s:s}", "file", file, "text", text);
    free(text);
    return hw;
}

svp_status_t svp_worker_run_write(const svp_spec_t *spec, svp_rt_h rt,
                                  const svp_worker_run_info_t *info, double started,
                                  double finished, int samples_run)
{
    int          world = svp_rt_size(rt), r, kept = 0;
    json_t      *doc, *ranges, *hw, *old, *attempts, *spec_json = NULL;
    const char  *jobid  = getenv("SLURM_JOB_ID");
    svp_layout_t layout = {0};
    char         path[4096], cwd[4096], err[256], name[64], *text;
    char         threads[160];
    const char  *from;
    int          nthreads;
    svp_status_t status;

    if (svp_rt_rank(rt) != 0) {
        return SVP_OK;
    }
    /* output.dir may be another job's after a gap (job/lease.h) */
    status = svp_job_lease_guard(info->lease);
    if (status != SVP_OK) {
        return status;
    }
    /* rank 0's: each rank has its own (its CPU mask, its environment) */
    nthreads = svp_threads_default(&from);
    snprintf(threads, sizeof(threads), "%d on rank 0 (from %s)", nthreads, from);
    status = svp_spec_to_json(spec, &spec_json);
    if (status != SVP_OK) {
        return status;
    }
    ranges = json_array();
    if (svp_layout_of_spec(spec, world, err, sizeof(err), &layout) == SVP_OK) {
        for (r = 0; r < world; ++r) {
            svp_step_range_t range =
                svp_layout_range(&layout, svp_layout_where(&layout, r).position);

            json_array_append_new(ranges,
                                  json_pack("[i, i]", range.begin, range.end));
        }
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        cwd[0] = '\0';
    }
    doc = json_pack(
        "{s:{s:s, s:s}, s:s, s:s, s:o, s:i, s:i, s:o, "
        "s:{s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:o}, s:{s:i, s:i, s:i, s:i, s:i}, "
        "s:s, s:s, s:s, s:s, s:s, s:f, s:f}",
        "svdpipe", "version", PACKAGE_VERSION, "configure", SVP_CONFIGURE_ARGS,
        "job", spec->name, "spec_file", spec->file, "spec", spec_json, "world",
        world, "ranks_per_node", svp_rt_local_size(rt), "hosts",
        svp_worker_run_hosts(rt, world), "layout", "steps", spec->steps, "samples",
        info->samples_total, "samples_run", samples_run, "stages", layout.stages,
        "groups", layout.groups, "guidance_parallel", layout.pairs, "placement",
        svp_spec_placement_name(spec->pipeline.placement), "ranges", ranges, "shard",
        "index", info->shard.index, "count", info->shard.count, "samples",
        info->samples_shard, "skipped", info->skipped, "run", samples_run, "backend",
        svp_ops_backend_name(spec->device), "dtype",
        svp_dtype_short_name(spec->dtype), "threads", threads, "trace", info->trace,
        "cwd", cwd, "started", started, "finished", finished);
    if (doc == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    hw = svp_worker_run_hardware();
    if (hw != NULL) {
        json_object_set_new(doc, "hardware", hw);
    }
    svp_job_shard_file(&info->shard, "run", ".json", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", spec->output.dir, name);
    /* the attempts so far, and this one; a run that computed nothing adds
     * its attempt to the record of the run that did the work, and no more */
    old      = json_load_file(path, 0, NULL);
    attempts = json_is_array(json_object_get(old, "attempts"))
                   ? json_incref(json_object_get(old, "attempts"))
                   : json_array();
    json_array_append_new(attempts,
                          json_pack("{s:f, s:f, s:i, s:s}", "started", started,
                                    "finished", finished, "samples_run", samples_run,
                                    "slurm_job", jobid ? jobid : ""));
    if (samples_run == 0 && json_is_object(old)) {
        json_decref(doc);
        doc  = old;
        old  = NULL;
        kept = 1;
    }
    json_object_set_new(doc, "attempts", attempts);
    json_decref(old);
    text = json_dumps(doc, JSON_INDENT(1));
    json_decref(doc);
    if (text == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_mkdir_p(spec->output.dir, 0755);
    if (status == SVP_OK) {
        status = svp_file_write_atomic(path, text, strlen(text));
    }
    if (status == SVP_OK && kept) {
        svp_info("nothing was run: %s still describes the run that made the "
                 "samples (this attempt added to its attempts)",
                 path);
    } else if (status == SVP_OK) {
        svp_info("run record written to %s", path);
    } else {
        svp_error("cannot write %s: %s", path, svp_status_string(status));
    }
    free(text);
    return status;
}

double svp_worker_beat_seconds(void)
{
    static double seconds = 0;
    const char   *env;
    char         *end;
    double        v;

    if (seconds > 0) {
        return seconds;
    }
    seconds = SVP_WORKER_TASK_BEAT_S;
    env     = getenv("SVP_TASK_BEAT");
    if (env != NULL && env[0] != '\0') {
        v = strtod(env, &end);
        if (*end == '\0' && v >= 0.1 && v <= 3600) {
            seconds = v;
        } else {
            svp_warn("SVP_TASK_BEAT='%s': expected seconds from 0.1 to 3600; "
                     "the task file is rewritten every %.0f s",
                     env, seconds);
        }
    }
    return seconds;
}

void svp_worker_task_write(const svp_spec_t *spec, svp_rt_h rt,
                           const svp_worker_run_info_t *info, double started,
                           double ended, const char *state)
{
    const char  *jobid = getenv("SLURM_JOB_ID");
    const char  *ajob  = getenv("SLURM_ARRAY_JOB_ID");
    const char  *atask = getenv("SLURM_ARRAY_TASK_ID");
    char         path[4096], name[64], *text;
    json_t      *doc;
    svp_status_t status;

    if (svp_rt_rank(rt) != 0 || info->keep_records ||
        svp_job_lease_guard(info->lease) != SVP_OK) {
        /* (a lost lease: the task file is the new holder's) */
        return;
    }
    doc = json_pack(
        "{s:s, s:[i, i], s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:s, s:s, s:s, s:s, "
        "s:f, s:f}",
        "job", spec->name, "shard", info->shard.index, info->shard.count,
        "shard_block", svp_job_shard_block(&info->shard), "samples_total",
        info->samples_total, "samples_shard", info->samples_shard, "skipped",
        info->skipped, "to_run", info->to_run, "started", started, "ended", ended,
        "state", state, "slurm_job", jobid ? jobid : "", "array_job",
        ajob ? ajob : "", "array_task", atask ? atask : "", "updated",
        svp_clock_wall(), "beat_s", svp_worker_beat_seconds());
    text = (doc != NULL) ? json_dumps(doc, JSON_INDENT(1)) : NULL;
    json_decref(doc);
    if (text == NULL) {
        svp_warn("cannot record the task's state: out of memory");
        return;
    }
    svp_job_shard_file(&info->shard, "task", ".json", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", spec->output.dir, name);
    status = svp_mkdir_p(spec->output.dir, 0755);
    if (status == SVP_OK) {
        status = svp_file_write_atomic(path, text, strlen(text));
    }
    if (status != SVP_OK) {
        svp_warn("cannot write %s: %s; svdlaunch status will not see this task",
                 path, svp_status_string(status));
    }
    free(text);
}

int svp_worker_task_done(const svp_spec_t *spec, const svp_job_shard_t *shard)
{
    char    path[4096], name[64];
    json_t *doc;
    int     done;

    svp_job_shard_file(shard, "task", ".json", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", spec->output.dir, name);
    doc  = json_load_file(path, 0, NULL);
    done = json_is_string(json_object_get(doc, "state")) &&
           strcmp(json_string_value(json_object_get(doc, "state")), "done") == 0;
    json_decref(doc);
    return done;
}

struct svp_worker_beat {
    pthread_t                    thread;
    pthread_mutex_t              lock;
    pthread_cond_t               cond; /* signalled by stop */
    int                          stop;
    const svp_spec_t            *spec;
    svp_rt_h                     rt;
    const svp_worker_run_info_t *info;
    double                       started;
};

static void *svp_worker_beat_main(void *arg)
{
    svp_worker_beat_t *b = arg;
    struct timespec    due;
    double             t;

    pthread_mutex_lock(&b->lock);
    while (!b->stop) {
        t           = svp_clock_wall() + svp_worker_beat_seconds();
        due.tv_sec  = (time_t)t;
        due.tv_nsec = (long)((t - (double)due.tv_sec) * 1e9);
        while (!b->stop && pthread_cond_timedwait(&b->cond, &b->lock, &due) == 0) {
        }
        if (!b->stop && svp_job_lease_renew(b->info->lease) != SVP_ERR_SPEC) {
            /* stop waits for this write: the last word is never a beat.
             * The lease first: a job that was suspended past the takeover
             * finds it another's, and stops without writing (lease.h) */
            svp_worker_task_write(b->spec, b->rt, b->info, b->started, 0, "running");
        }
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

svp_worker_beat_t *svp_worker_beat_start(const svp_spec_t *spec, svp_rt_h rt,
                                         const svp_worker_run_info_t *info,
                                         double                       started)
{
    svp_worker_beat_t *b = calloc(1, sizeof(*b));

    if (b == NULL) {
        svp_warn("out of memory for the task file's heartbeat; svdlaunch status "
                 "cannot tell this task killed from running");
        return NULL;
    }
    b->spec    = spec;
    b->rt      = rt;
    b->info    = info;
    b->started = started;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL); /* CLOCK_REALTIME, as the deadline */
    if (pthread_create(&b->thread, NULL, svp_worker_beat_main, b) != 0) {
        svp_warn("cannot start the task file's heartbeat; svdlaunch status "
                 "cannot tell this task killed from running");
        pthread_cond_destroy(&b->cond);
        pthread_mutex_destroy(&b->lock);
        free(b);
        return NULL;
    }
    return b;
}

void svp_worker_beat_stop(svp_worker_beat_t *b)
{
    if (b == NULL) {
        return;
    }
    pthread_mutex_lock(&b->lock);
    b->stop = 1;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    pthread_join(b->thread, NULL);
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

svp_status_t svp_worker_run_profile(const svp_spec_t      *spec,
                                    const svp_job_shard_t *shard, int rank)
{
    char path[4096], name[64], base[32];

    if (!spec->log.profile) {
        return SVP_OK;
    }
    if (!svp_range_profile_enabled()) {
        svp_warn(
            "log.profile: the %s model has no blocks to profile; no profile written",
            svp_spec_model_kind_name(spec->model.kind));
        return SVP_OK;
    }
    snprintf(base, sizeof(base), "profile.rank%d", rank);
    svp_job_shard_file(shard, base, ".json", name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", spec->output.dir, name);
    return svp_range_profile_save(path, json_pack("{s:s, s:i}", "kind", "run",
                                                  "rank", rank));
}
