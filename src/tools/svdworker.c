/*
 * svdworker: one rank of an svdpipe job.
 *
 *   srun --mpi=pmix svdworker job.yaml [--set key=value ...]
 *   svdworker job.yaml                  (one plain process: rank 0 of 1)
 *   svdworker                           (the built-in default job)
 *
 * Exit status: 0 done, 1 this rank failed, 2 bad input (nothing started),
 * 3 the job failed (a peer, a message or the launcher), 128+N stopped by
 * signal N (143: SIGTERM, 130: SIGINT).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "pipe/pipe.h"
#include "stages/stages.h"
#include "ops/ops_gpu.h"
#include "ops/ops.h"

#include "job/lease.h"
#include "job/outdir.h"
#include "pipe/deadline.h"
#include "pipe/resume.h"
#include "job/wds.h"
#include "job/samples.h"
#include "pipe/schedule.h"
#include "common/stop.h"
#include "rt/rt.h"
#include "comm/comm.h"
#include "trace/trace.h"
#include "svdworker_run.h"
#include "common/str.h"
#include "common/threads.h"
#include "common/hash.h"
#include "common/util.h"
#include "jobspec/spec.h"
#include "jobspec/spec_agree.h"
#include "jobspec/layout.h"

#include <getopt.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVP_WORKER_MAX_SETS 256

static void svp_worker_usage(FILE *out)
{
    fprintf(
        out,
        "usage: svdworker [JOB.yaml] [--set KEY=VALUE]... [--shard I/N] [--check]\n"
        "                 [--print-spec]\n"
        "\n"
        "Runs one rank of an svdpipe job.  Under srun --mpi=pmix (or mpirun) PMIx\n"
        "gives the rank and size; started plainly it is rank 0 of 1.  Without\n"
        "JOB.yaml it runs the built-in default job (the dummy simulator).\n"
        "\n"
        "  -s, --set KEY=VALUE  override a key of the job spec (e.g. steps=28)\n"
        "      --shard I/N      make only the samples whose index is I mod N (task I\n"
        "                       of N sharing output.dir; with output.format\n"
        "                       webdataset the shards whose number is); with\n"
        "                       cluster.array set, a Slurm array task takes its\n"
        "                       own by default\n"
        "  -c, --check          validate the spec and the step assignment, run nothing\n"
        "  -p, --print-spec     print the effective spec and exit\n"
        "  -h, --help           this text\n"
        "  -V, --version        print the version\n"
        "\n"
        "The job spec format is described in svdpipe-job(5).\n");
}

static svp_status_t svp_worker_make_stage(const svp_spec_t *spec,
                                          svp_stage_t      *stage_p)
{
    switch (spec->model.kind) {
    case SVP_MODEL_DUMMY:
        return svp_stage_dummy_create(spec, stage_p);
    case SVP_MODEL_SVD:
        return svp_stage_svd_create(spec, stage_p);
    default:
        svp_error("%s: model.kind %s is not available in this build", spec->file,
                  svp_spec_model_kind_name(spec->model.kind));
        return SVP_ERR_UNSUPPORTED;
    }
}

/* Seconds a rank ending for a lost rank waits before it has the launcher
 * tear the job down: the notices cross the ring in milliseconds, and a
 * rank killed by the launcher before it logged why it ends leaves a hole in
 * the story (seen with no wait).  Short, since a rank that learns of the
 * loss late may meanwhile touch the dead rank's memory (cma, UCX 1.13). */
#define SVP_WORKER_LOSS_ABORT_DELAY 0.1

/*
 * A failed rank tells the launcher at once (PMIx_Abort), so the other ranks
 * are torn down now rather than finding out at their deadlines.  Once only.
 */
static void svp_worker_fail(svp_rt_h rt, int world, int rank, svp_status_t status)
{
    static int aborted;
    char       msg[256];

    /* a rank that ends because another was stopped aborts nothing: every
     * rank has heard of that stop (rt.h, svp_rt_stop_cause) and ends.  A
     * lost rank may still live (stopped, hung: silent, not closed), and only
     * the launcher ends it: the job is torn down as for any failure, the
     * ring having heard the cause first */
    if (aborted || world == 1 ||
        (status == SVP_ERR_PEER_STOPPED && !svp_rt_cause_is_loss(rt))) {
        return;
    }
    aborted = 1;
    if (status == SVP_ERR_PEER_STOPPED) {
        /* every rank heard of the loss within milliseconds and says once
         * why it ends; the launcher's kill comes after that, not before */
        svp_clock_sleep(SVP_WORKER_LOSS_ABORT_DELAY);
    }
    snprintf(msg, sizeof(msg), "svdworker rank %d failed: %s", rank,
             svp_status_string(status));
    svp_rt_abort(rt, svp_status_exit_code(status), msg);
}

/*
 * Seconds a rank has after SIGTERM/SIGINT before the watchdog ends it.  Most
 * of it is teardown's drain (comm_req.c, svp_comm_drain), which waits for
 * the neighbours' goodbyes.  A longer grace lets a drain wait for a node
 * whose signal comes late (1.5 s: no UCX warning where 0.7 s left one in 1
 * of 18 cancels on a loaded 2-core machine), but a rank stopped alone then
 * says its runtime goodbye that much later, and a neighbour that first
 * connects to it meanwhile fails with "cannot connect" (seen once in 5 runs
 * of the lone-SIGTERM case): 0.7 s is the better of the two.
 */
#define SVP_WORKER_STOP_GRACE 0.7

/* Reports a stop and removes this rank's own partial outputs. */
static void svp_worker_stop(int signo, void *arg)
{
    const svp_spec_t *spec = arg;
    int               n    = 0;

    (void)signo;
    svp_stop_report();
    svp_job_outdir_clean(spec->output.dir, (long)getpid(), NULL, NULL, &n);
    if (n > 0) {
        svp_info("removed %d partial output(s) of this rank from %s", n,
                 spec->output.dir);
    }
}

typedef struct {
    const svp_job_shard_t *shard;
    const svp_layout_t    *layout;
    int                    rank;
} svp_worker_own_t;

/* Sample i's outputs are this rank's to clean up (another array task's
 * temporaries may be a write in progress). */
static int svp_worker_owns(int sample, void *arg)
{
    const svp_worker_own_t *o = arg;

    return svp_pipe_resume_finisher(o->layout, o->shard, sample) == o->rank;
}

/*
 * Before any work: a rank that writes outputs checks that the output
 * directory takes files and has room for a sample (else the job fails now,
 * naming it) and removes the temporaries an interrupted run left of its
 * samples; then all ranks agree on the samples still to run.  Nothing is
 * written before that agreement's fence, so no temporary removed here can
 * belong to a rank of this job.
 */
static svp_status_t svp_worker_prepare_output(svp_rt_h rt, const svp_spec_t *spec,
                                              const svp_layout_t *layout,
                                              const svp_stage_t *stage, int nsamples,
                                              const svp_job_shard_t *shard, int rank,
                                              svp_pipe_resume_t *resume_p)
{
    svp_worker_own_t own = {.shard = shard, .layout = layout, .rank = rank};
    svp_status_t     status;
    int              i, writes = 0, n = 0;

    for (i = 0; i < nsamples && !writes; ++i) {
        writes = svp_worker_owns(i, &own);
    }
    if (writes) {
        status = svp_job_outdir_check(spec->output.dir,
                                      stage->ops->output_bytes
                                          ? stage->ops->output_bytes(stage->self)
                                          : 0);
        if (status != SVP_OK) {
            return status;
        }
        svp_job_outdir_clean(spec->output.dir, 0, svp_worker_owns, &own, &n);
        if (spec->output.format == SVP_OUTPUT_WEBDATASET) {
            char staging[4200];
            int  m = 0;

            snprintf(staging, sizeof(staging), "%s/%s", spec->output.dir,
                     SVP_JOB_WDS_STAGING);
            svp_job_outdir_clean(staging, 0, svp_worker_owns, &own, &m);
            n += m;
        }
        if (n > 0) {
            svp_info("removed %d temporaries left in %s by an interrupted run", n,
                     spec->output.dir);
        }
    }
    return svp_pipe_resume_agree(rt, spec, stage, nsamples, shard, resume_p);
}

/* One rank's state, from the command line to the exit code. */
typedef struct {
    const char           *sets[SVP_WORKER_MAX_SETS];
    int                   nsets, check, print;
    const char           *shard_arg;
    svp_spec_t           *spec;
    svp_rt_h              rt;
    int                   rank, world;
    svp_layout_t          layout; /* the job's (G, S, C, k) */
    uint64_t              job_id;
    svp_job_shard_t       shard;
    svp_job_samples_t    *list;
    char                  what[512];
    svp_pipe_params_t     pp;
    int                   have_stage; /* pp.stage is to be destroyed */
    int                   verdict;    /* every rank fails on the same verdict */
    svp_worker_beat_t    *beat;       /* task.json's heartbeat (rank 0) */
    svp_job_lease_t      *lease;      /* output.dir's, held by rank 0 */
    svp_job_wds_h         wds;        /* the stage's shards, or NULL */
    svp_pipe_resume_t     resume;
    svp_worker_run_info_t info;
    char                  trace_prefix[4096];
    double                agreed, wall0;
} svp_worker_t;

/*
 * The options into w.  Returns -1 to go on, or the exit code of a run
 * that ends here (--help, --version, bad usage).
 */
static int svp_worker_parse_args(svp_worker_t *w, int argc, char **argv)
{
    static const struct option opts[] = {
        {"set", required_argument, NULL, 's'},
        {"shard", required_argument, NULL, 'S'},
        {"check", no_argument, NULL, 'c'},
        {"print-spec", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;

    while ((c = getopt_long(argc, argv, "s:cphVS:", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (w->nsets == SVP_WORKER_MAX_SETS) {
                fprintf(stderr,
                        "svdworker: more than %d --set options: over "
                        "the limit of %d\n",
                        SVP_WORKER_MAX_SETS, SVP_WORKER_MAX_SETS);
                return SVP_EXIT_BAD_INPUT;
            }
            w->sets[w->nsets++] = optarg;
            break;
        case 'S':
            w->shard_arg = optarg;
            break;
        case 'c':
            w->check = 1;
            break;
        case 'p':
            w->print = 1;
            break;
        case 'h':
            svp_worker_usage(stdout);
            return 0;
        case 'V':
            printf("svdworker (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
            return 0;
        default:
            svp_worker_usage(stderr);
            return SVP_EXIT_BAD_INPUT;
        }
    }
    if (argc - optind > 1) {
        svp_worker_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    return -1;
}

/*
 * The spec (JOB.yaml, or the built-in default job) and this task's shard.
 * Returns -1 to go on, or the exit code of a run that ends here (bad input,
 * --print-spec).
 */
static int svp_worker_load_spec(svp_worker_t *w, const char *file)
{
    char         err[1024], *dump;
    svp_status_t status = SVP_OK;

    if (file != NULL) {
        status = svp_spec_load(file, w->sets, w->nsets, err, sizeof(err), &w->spec);
    } else {
        /* the built-in default job: every key at its default, named "default" */
        if (w->nsets == SVP_WORKER_MAX_SETS) {
            fprintf(stderr,
                    "svdworker: more than %d --set options: over the "
                    "limit of %d (one is the default job's name)\n",
                    SVP_WORKER_MAX_SETS - 1, SVP_WORKER_MAX_SETS - 1);
            return SVP_EXIT_BAD_INPUT;
        }
        memmove(w->sets + 1, w->sets, w->nsets * sizeof(w->sets[0]));
        w->sets[0] = "name=default";
        status     = svp_spec_load_string("", "<built-in default job>", w->sets,
                                          w->nsets + 1, err, sizeof(err), &w->spec);
    }
    if (status != SVP_OK) {
        /* file:line:column: message, as a compiler says it */
        fprintf(stderr, "%s\n", err);
        return SVP_EXIT_BAD_INPUT;
    }
    svp_log_set_level(w->spec->log.level);

    /* which share of the samples this task makes (job/samples.h) */
    if (w->shard_arg != NULL) {
        status = svp_job_shard_parse(w->shard_arg, &w->shard, err, sizeof(err));
    } else if (w->spec->cluster.array[0] != '\0') {
        status = svp_job_shard_from_env(w->spec->cluster.array, &w->shard, err,
                                        sizeof(err));
        if (status == SVP_ERR_NOT_FOUND) {
            /* run by hand, outside the array: the whole job */
            status = SVP_OK;
        }
    }
    if (status != SVP_OK) {
        fprintf(stderr, "svdworker: %s\n", err);
        return SVP_EXIT_BAD_INPUT;
    }
    svp_job_shard_set_block(&w->shard, w->spec);

    if (w->print) {
        if (svp_spec_dump(w->spec, &dump) == SVP_OK) {
            fputs(dump, stdout);
            free(dump);
        }
        return 0;
    }
    return -1;
}

/*
 * The stop handler, the runtime, and what every rank must agree on before
 * any work: the same spec, a valid step layout and the sample list.
 */
static svp_status_t svp_worker_init_job(svp_worker_t *w)
{
    const svp_spec_t *spec = w->spec;
    svp_step_range_t  range;
    svp_rt_params_t   rtp;
    svp_stop_params_t sp;
    char              err[1024];
    svp_status_t      status;

    /* SIGTERM (scancel, preemption, time limit) and SIGINT: see stop.h */
    sp.grace = SVP_WORKER_STOP_GRACE;
    sp.force = svp_worker_stop;
    sp.arg   = w->spec;
    status   = svp_stop_init(&sp);
    if (status != SVP_OK) {
        return status;
    }

    /* PMIx (under srun/mpirun) or a plain rank 0 of 1 */
    rtp.field_mask = SVP_RT_PARAM_FIELD_TIMEOUT | SVP_RT_PARAM_FIELD_GROUP;
    rtp.timeout    = spec->comm.deadline;
    rtp.group_size = SVP_MAX(spec->pipeline.stages, 0) *
                     SVP_MAX(1, spec->pipeline.guidance_parallel);
    status = svp_rt_init(&rtp, &w->rt);
    if (status != SVP_OK) {
        return status;
    }
    w->rank  = svp_rt_rank(w->rt);
    w->world = svp_rt_size(w->rt);

    /*
     * Every rank runs the same spec (but for per-rank keys such as
     * log.level): a rank started with another file or --set (a stale file
     * on one node) names the differing keys here, before any work.  The job
     * id carried by every message is a hash of the shared keys.  This comes
     * before the step layout is checked: a layout only one rank's spec
     * fails (steps=6 on that rank alone) is a differing key, named here,
     * where otherwise that rank would leave without a word (only rank 0
     * reports a layout error).
     */
    if (w->world > 1) {
        status = svp_spec_agree(spec, w->rt, &w->job_id);
        if (status != SVP_OK) {
            svp_worker_fail(w->rt, w->world, w->rank, status);
            return status;
        }
    }

    /* every rank checks, on the same spec now; rank 0 alone reports, so the
     * log says it once */
    status = SVP_OK;
    if (spec->pipeline.stages == 0 && spec->pipeline.guidance_parallel <= 1) {
        /* one pipeline of W stages: the message speaks of ranks */
        status = svp_layout_assign(spec->steps, w->world, w->rank, err, sizeof(err),
                                   &range);
    }
    if (status == SVP_OK) {
        status = svp_layout_of_spec(spec, w->world, err, sizeof(err), &w->layout);
    }
    if (status != SVP_OK) {
        if (w->rank == 0) {
            svp_error("%s: %s", spec->file, err);
        }
        /* the same spec and world give every rank this verdict: a rank that
         * leaves first must not be taken for a loss by one still checking */
        w->verdict = 1;
        return status;
    }
    /* the samples: every rank makes the same list from the same files */
    status = svp_job_samples_create(spec, err, sizeof(err), &w->list);
    if (status != SVP_OK) {
        if (w->rank == 0) {
            svp_error("%s", err);
        }
        return status;
    }
    svp_job_samples_describe(w->list, w->what, sizeof(w->what));
    if (w->check && w->rank == 0) {
        /* a shard's own count first; the file and the list's description
         * (a manifest's name) are the user's text: escaped */
        char file[4096], what[1024], shard[128] = "";

        if (w->shard.count > 1) {
            snprintf(shard, sizeof(shard), "shard %d of %d: %d of ", w->shard.index,
                     w->shard.count, svp_job_shard_size(&w->shard, w->list->count));
        }
        svp_str_escape(spec->file, strlen(spec->file), file, sizeof(file),
                       SVP_STR_ESCAPE_TERMINAL);
        svp_str_escape(w->what, strlen(w->what), what, sizeof(what),
                       SVP_STR_ESCAPE_TERMINAL);
        printf("%s: ok (%d steps, %s%s, %d ranks, %d steps per rank)\n", file,
               spec->steps, shard, what, w->world, w->layout.k);
    }
    return SVP_OK;
}

#define SVP_WORKER_LEASE_KEY "svp.worker.lease"

/*
 * Rank 0 takes output.dir's lease for this task (job/lease.h) before any
 * rank touches the directory, and the others learn the verdict: a job
 * refused there leaves on every rank with exit 2, having removed nothing
 * (the holder's temporaries are a write in progress).
 */
static svp_status_t svp_worker_take_lease(svp_worker_t *w)
{
    const svp_spec_t *spec = w->spec;
    char              why[2048], key[24], *shared = NULL, *who = NULL;
    unsigned char     verdict = 0, *got = NULL, *msg;
    size_t            len, n;
    svp_status_t      status = SVP_OK;

    if (w->rank == 0) {
        if (svp_spec_dump_shared(spec, &shared) != SVP_OK) {
            return SVP_ERR_NO_MEMORY;
        }
        snprintf(key, sizeof(key), "%016llx",
                 (unsigned long long)svp_hash_fnv1a(shared, strlen(shared), 0));
        free(shared);
        status = svp_job_lease_take(spec->output.dir, &w->shard, spec->name,
                                    spec->file, key, svp_worker_beat_seconds(), why,
                                    sizeof(why), &w->lease);
        if (status != SVP_OK) {
            svp_error("%s", why);
            verdict = 1;
        }
        w->info.lease = w->lease;
    }
    if (w->world > 1) {
        if (w->rank == 0) {
            /* the verdict, then who holds the lease: every rank that
             * publishes checks it is still this job's (lease.h, Fencing) */
            who = svp_job_lease_identity(w->lease);
            n   = (who != NULL) ? strlen(who) + 1 : 0;
            msg = malloc(1 + n);
            if (msg == NULL) {
                free(who);
                return SVP_ERR_NO_MEMORY;
            }
            msg[0] = verdict;
            if (n > 0) {
                memcpy(msg + 1, who, n);
            }
            status = svp_rt_put(w->rt, SVP_WORKER_LEASE_KEY, msg, 1 + n);
            free(msg);
            free(who);
        }
        if (status == SVP_OK || w->rank == 0) {
            svp_status_t st = svp_rt_fence(w->rt);
            status          = (status != SVP_OK) ? status : st;
        }
        if (w->rank != 0 && status == SVP_OK) {
            status = svp_rt_get(w->rt, 0, SVP_WORKER_LEASE_KEY, (void **)&got, &len);
            if (status == SVP_OK) {
                verdict = (len >= 1) ? got[0] : 1;
                status  = verdict ? SVP_ERR_SPEC : SVP_OK;
                if (!verdict && (len < 2 || got[len - 1] != '\0' ||
                                 svp_job_lease_view(spec->output.dir, &w->shard,
                                                    (const char *)got + 1,
                                                    &w->lease) != SVP_OK)) {
                    svp_error("rank %d on %s: rank 0's record of output.dir's lease "
                              "(key %s) is malformed",
                              w->rank, svp_log_hostname(), SVP_WORKER_LEASE_KEY);
                    status = SVP_ERR_MESSAGE;
                }
                free(got);
            }
        }
    }
    w->pp.lease = w->lease;
    if (verdict) {
        /* the same verdict on every rank: none takes another's exit for a
         * loss */
        w->verdict = 1;
        return SVP_ERR_SPEC;
    }
    return status;
}

/*
 * The model and the inputs, then the output folder and the samples still
 * to run: a bad model folder or image fails here, on every rank alike,
 * before any rank starts work or waits for a peer.
 */
static svp_status_t svp_worker_init_stage(svp_worker_t *w)
{
    const svp_spec_t *spec = w->spec;
    svp_status_t      status;

    memset(&w->pp, 0, sizeof(w->pp));
    w->pp.spec  = spec;
    w->pp.rank  = w->rank;
    w->pp.world = w->world;
    svp_info("svdworker %s: job '%s' from %s, rank %d of %d%s%s", PACKAGE_VERSION,
             spec->name, spec->file, w->rank, w->world,
             svp_rt_is_plain(w->rt) ? "" : " in ", svp_rt_nspace(w->rt));
    if (w->rank == 0) {
        if (w->shard.count > 1 && svp_job_shard_block(&w->shard) > 1) {
            svp_info("job '%s': %s; task %d of %d makes %d of them (the shards "
                     "of %d samples whose number is %d mod %d)",
                     spec->name, w->what, w->shard.index, w->shard.count,
                     svp_job_shard_size(&w->shard, w->list->count),
                     svp_job_shard_block(&w->shard), w->shard.index, w->shard.count);
        } else if (w->shard.count > 1) {
            svp_info(
                "job '%s': %s; task %d of %d makes %d of them (index %d mod %d)",
                spec->name, w->what, w->shard.index, w->shard.count,
                svp_job_shard_size(&w->shard, w->list->count), w->shard.index,
                w->shard.count);
        } else {
            svp_info("job '%s': %s", spec->name, w->what);
        }
    }
    {
        /* the CPU's kernels and threads: they decide its speed and bits */
        const char    *from;
        int            threads = svp_threads_default(&from);
        svp_ops_blas_t blas;
        char           line[256], why[512];

        svp_ops_blas_query(&blas);
        svp_ops_blas_describe(&blas, line, sizeof(line));
        svp_info("cpu: %s; %d thread%s (from %s)", line, threads,
                 threads == 1 ? "" : "s", from);
        /* a forced family this CPU cannot execute: named here, on the rank
         * whose node it is, before any product dies of SIGILL */
        if (spec->model.kind == SVP_MODEL_SVD &&
            spec->device == SVP_OPS_BACKEND_CPU &&
            svp_ops_blas_check(&blas, why, sizeof(why)) != SVP_OK) {
            svp_error("rank %d on %s: %s", w->rank, svp_log_hostname(), why);
            svp_worker_fail(w->rt, w->world, w->rank, SVP_ERR_UNSUPPORTED);
            return SVP_ERR_UNSUPPORTED;
        }
        /* the site's family is narrower than the CPU executes: it wins, and
         * one rank per node says what it costs */
        if (spec->model.kind == SVP_MODEL_SVD &&
            spec->device == SVP_OPS_BACKEND_CPU && blas.forced[0] != '\0' &&
            blas.better[0] != '\0' && svp_rt_local_rank(w->rt) == 0) {
            svp_ops_blas_describe_cpu(&blas, why, sizeof(why));
            svp_warn(
                "cpu: OPENBLAS_CORETYPE=%s on %s runs narrower kernels than this "
                "CPU executes (%s): svdpipe would run %s's; unset it to let it",
                blas.forced, svp_log_hostname(), why, blas.better);
        }
    }

    /* one GPU per rank: where this rank sits on its node (ops_gpu.h) */
    svp_ops_gpu_bind_set(
        &(svp_ops_gpu_bind_t){.local_rank = svp_rt_local_rank(w->rt),
                              .local_size = svp_rt_local_size(w->rt),
                              .share_gpu  = spec->cluster.share_gpu});

    status = svp_worker_make_stage(spec, &w->pp.stage);
    if (status != SVP_OK) {
        /* bad input fails on every rank alike; anything else is this rank's
         * own trouble, and the others must not wait for it */
        if (!SVP_IS_INPUT_ERROR(status)) {
            svp_worker_fail(w->rt, w->world, w->rank, status);
        }
        return status;
    }
    w->have_stage = 1;
    w->wds        = (w->pp.stage.ops->shards != NULL)
                        ? w->pp.stage.ops->shards(w->pp.stage.self)
                        : NULL;
    if (w->wds != NULL) {
        svp_job_wds_set_task(w->wds, &w->shard);
    }

    status = svp_worker_take_lease(w);
    if (status != SVP_OK) {
        return status;
    }
    status =
        svp_worker_prepare_output(w->rt, spec, &w->layout, &w->pp.stage,
                                  w->list->count, &w->shard, w->rank, &w->resume);
    if (status != SVP_OK) {
        if (status != SVP_ERR_SPEC && svp_stop_signal() == 0) {
            svp_worker_fail(w->rt, w->world, w->rank, status);
        }
        return status;
    }
    w->pp.samples  = w->resume.todo;
    w->pp.nsamples = w->resume.ntodo;
    if (w->wds != NULL && w->rank == 0) {
        /* rank 0 packs the task's shards (job/wds.h), beside its work */
        status = svp_job_wds_packer_start(w->wds, w->resume.todo, w->resume.ntodo,
                                          w->lease);
        if (status != SVP_OK) {
            svp_worker_fail(w->rt, w->world, w->rank, status);
            return status;
        }
    }
    /* every rank has left the agreement's fence: the job's window starts */
    w->agreed = svp_clock_now();
    w->wall0  = svp_clock_wall();
    memset(&w->info, 0, sizeof(w->info));
    w->info.shard         = w->shard;
    w->info.samples_total = w->list->count;
    w->info.samples_shard = svp_job_shard_size(&w->shard, w->list->count);
    w->info.skipped       = w->resume.skipped;
    w->info.to_run        = w->resume.ntodo;
    /* a rerun of a finished job: the records stay the run's that did it */
    w->info.keep_records =
        (w->resume.ntodo == 0) && svp_worker_task_done(spec, &w->shard);
    w->info.trace = "";
    svp_worker_task_write(spec, w->rt, &w->info, w->wall0, 0, "running");
    if (w->rank == 0) {
        w->beat = svp_worker_beat_start(spec, w->rt, &w->info, w->wall0);
    }
    return SVP_OK;
}

/* The hand-off to the neighbours (more than one rank) and the trace. */
static svp_status_t svp_worker_init_comm(svp_worker_t *w)
{
    const svp_spec_t *spec = w->spec;
    svp_comm_params_t cp;
    svp_status_t      status;

    if (w->world > 1) {
        memset(&cp, 0, sizeof(cp));
        cp.field_mask = SVP_COMM_PARAM_FIELD_JOB_ID | SVP_COMM_PARAM_FIELD_DEADLINE |
                        SVP_COMM_PARAM_FIELD_TRANSPORT |
                        SVP_COMM_PARAM_FIELD_CHECKSUM;
        cp.job_id    = w->job_id;
        cp.deadline  = spec->comm.deadline;
        cp.transport = spec->comm.transport;
        /* headers are always checked; the payload's checksum costs 0.6 ms
         * per 2 MB latent on each side, 4x the hand-off itself on shared
         * memory (make bench-comm), so it is opt-in */
        cp.checksum = spec->comm.checksum;
        if (w->pp.stage.devmem != NULL) {
            /* the stage keeps samples on the device, so do the frames;
             * comm.gpu_direct says how they cross (comm_path.h) */
            cp.field_mask |= SVP_COMM_PARAM_FIELD_DEVICE;
            cp.device     = w->pp.stage.devmem;
            cp.gpu_direct = (spec->comm.gpu_direct == SVP_GPU_DIRECT_ON)
                                ? SVP_COMM_GPU_DIRECT_ON
                            : (spec->comm.gpu_direct == SVP_GPU_DIRECT_OFF)
                                ? SVP_COMM_GPU_DIRECT_OFF
                                : SVP_COMM_GPU_DIRECT_AUTO;
        }
        status = svp_comm_create(w->rt, &cp, &w->pp.comm);
        if (status != SVP_OK) {
            svp_worker_fail(w->rt, w->world, w->rank, status);
            return status;
        }
    }
    if (spec->log.trace[0] != '\0') {
        /* array tasks sharing a prefix keep their own traces */
        if (w->shard.count > 1) {
            snprintf(w->trace_prefix, sizeof(w->trace_prefix), "%s.shard-%d-of-%d",
                     spec->log.trace, w->shard.index, w->shard.count);
        } else {
            snprintf(w->trace_prefix, sizeof(w->trace_prefix), "%s",
                     spec->log.trace);
        }
        w->info.trace = w->trace_prefix;
        status = svp_trace_create(w->trace_prefix, w->rank, svp_log_hostname(),
                                  &w->pp.trace);
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

/*
 * Everything before the first step, in the order the ranks must meet it.
 * With --check, only what every rank must agree on; the run stops there.
 */
static svp_status_t svp_worker_init(svp_worker_t *w)
{
    svp_status_t status;

    status = svp_worker_init_job(w);
    if (status != SVP_OK) {
        return status;
    }
    if (w->check) {
        svp_rt_set_leave_reason(w->rt, SVP_RT_LEAVE_DONE);
        return SVP_OK;
    }
    status = svp_worker_init_stage(w);
    if (status != SVP_OK) {
        return status;
    }
    return svp_worker_init_comm(w);
}

/* The samples, the final fence, and what the run leaves behind. */
static svp_status_t svp_worker_run(svp_worker_t *w)
{
    const svp_spec_t   *spec = w->spec;
    svp_pipe_stats_t    stats;
    svp_pipe_deadline_t dl;
    double              started;
    svp_status_t        status;

    /* run.json: rank 0 records the run once everyone is done */
    started = svp_trace_now_us();
    if (w->world > 1) {
        svp_worker_run_publish(w->rt);
    }
    status = svp_pipe_run(&w->pp, &stats);
    svp_trace_event(w->pp.trace, "run", -1, -1, started, svp_trace_now_us());
    if (status == SVP_OK && w->world > 1) {
        /* the others may still drain the pipeline: up to a chain's worth of
         * stages (plus those in flight) after this rank's last sample */
        svp_pipe_deadline_init(&dl, spec, &w->layout);
        if (stats.steps_done > 0) {
            svp_pipe_deadline_step(&dl, stats.busy / stats.steps_done);
        }
        svp_rt_set_fence_timeout(w->rt,
                                 svp_pipe_deadline_wait(&dl,
                                                        w->layout.stages +
                                                            spec->comm.inflight,
                                                        1));
        /*
         * Nobody leaves before everyone is done: a rank that finished its
         * part early (rank 0 in "ends" placement) would otherwise be gone
         * while a slower peer still connects to it, and a peer that exits
         * could not be told from a lost one.
         */
        status = svp_rt_fence_final(w->rt);
    }
    if (svp_stop_signal() != 0) {
        /* every rank got the signal: none tears the job down for the others */
        svp_rt_set_leave_signal(w->rt, svp_stop_signal());
        svp_worker_stop(svp_stop_signal(), w->spec);
    } else if (svp_stop_requested() != 0) {
        /* output.dir is another job's now (lease.h, Fencing): the others
         * heard it in this rank's notice; its own temporaries go */
        status = SVP_ERR_SPEC;
        svp_worker_stop(0, w->spec);
    } else if (status != SVP_OK) {
        /* tear the job down before the (bounded) cleanup below */
        svp_worker_fail(w->rt, w->world, w->rank, status);
    }
    if (status == SVP_OK && w->rank == 0 && w->wds != NULL) {
        /* after the final fence every sample is staged: the packer packs
         * what is left and ends */
        int pending = 0;

        status = svp_job_wds_packer_finish(w->wds, &pending);
        if (status != SVP_OK) {
            svp_error("cannot pack the shards in %s: %s", spec->output.dir,
                      svp_status_string(status));
        } else if (pending > 0) {
            /* every sample is done: a shard not packed had samples staged
             * where rank 0, the packer, could not see them */
            svp_warn("%d shards not packed in %s: their samples wait in %s/%s; "
                     "output.dir must be one folder every rank sees (a shared "
                     "file system) for output.format webdataset",
                     pending, spec->output.dir, spec->output.dir,
                     SVP_JOB_WDS_STAGING);
        }
    }
    if (status == SVP_OK && w->rank == 0) {
        /* after the final fence (and the last shard's packing): the
         * slowest rank is done too */
        double dt = svp_clock_now() - w->agreed;
        svp_info("job: %.3f samples/s (%d samples in %.3fs, from the start all "
                 "ranks agreed on to the last rank's end)",
                 (dt > 0) ? w->pp.nsamples / dt : 0.0, w->pp.nsamples, dt);
    }
    if (status == SVP_OK) {
        svp_worker_run_write(spec, w->rt, &w->info, started * 1e-6,
                             svp_trace_now_us() * 1e-6, w->pp.nsamples);
        svp_worker_run_profile(spec, &w->shard, w->rank);
    }
    svp_worker_beat_stop(w->beat);
    w->beat = NULL;
    svp_worker_task_write(spec, w->rt, &w->info, w->wall0, svp_clock_wall(),
                          (status == SVP_OK) ? "done"
                          : (svp_stop_signal() != 0 ||
                             (status == SVP_ERR_PEER_STOPPED &&
                              !svp_rt_cause_is_loss(w->rt)))
                              ? "stopped"
                              : "failed");
    return status;
}

/* Whether this rank wrote any of this run's samples (svp_layout_owner). */
static int svp_worker_writes(const svp_worker_t *w)
{
    int k;

    if (w->layout.world == 0) {
        return 0; /* no layout: the job ended before it was made */
    }
    for (k = 0; k < w->pp.nsamples; ++k) {
        if (svp_layout_owner(&w->layout, k) == w->rank) {
            return 1;
        }
    }
    return 0;
}

/*
 * Releases what init made, in reverse order, whatever point it reached
 * (each release takes NULL), tells the neighbours why this rank leaves, and
 * returns the process's exit code.
 */
static int svp_worker_cleanup(svp_worker_t *w, svp_status_t status)
{
    char cause[256];
    int  lost = 0;

    svp_worker_beat_stop(w->beat);
    svp_trace_destroy(w->pp.trace);
    svp_comm_destroy(w->pp.comm);
    svp_pipe_resume_cleanup(&w->resume);
    /* a rank that ends because the job lost output.dir (its own check, or
     * the notice of the rank that found it) ends as that rank does: exit 2;
     * the holder says it once, also when another rank found it first */
    if (status != SVP_OK && svp_stop_signal() == 0) {
        lost = (svp_stop_requested() != 0) ||
               (svp_rt_stop_cause(w->rt, cause, sizeof(cause)) &&
                strcmp(cause, SVP_JOB_LEASE_LOST_CAUSE) == 0);
        if (w->rank == 0 && svp_job_lease_lost(w->lease, NULL, 0)) {
            lost = 1;
        }
    }
    /* after the last fence (or the stop): no rank of this task writes now */
    svp_job_lease_release(w->lease);
    w->lease      = NULL;
    w->info.lease = NULL;
    w->pp.lease   = NULL;
    if (w->have_stage) {
        w->pp.stage.ops->destroy(w->pp.stage.self);
        if (status == SVP_OK && svp_worker_writes(w)) {
            svp_info("outputs in %s", w->spec->output.dir);
        }
    }
    if (w->rt != NULL) {
        if (svp_stop_signal() != 0) {
            /* a stop that unwound through an error is still the signal's
             * doing: the neighbours say "stopped by SIGTERM", not "failed" */
            svp_rt_set_leave_signal(w->rt, svp_stop_signal());
        } else if (svp_stop_requested() != 0) {
            /* the cause the ring already heard (watch.h): the same again */
            svp_rt_set_leave_ending(w->rt, svp_stop_request_why());
        } else if (status != SVP_OK &&
                   svp_rt_stop_cause(w->rt, cause, sizeof(cause))) {
            /* another rank's stop ends this one: said once, and in the
             * goodbye, so that no neighbour takes it for a failure */
            svp_info("ending: %s", cause);
            svp_rt_set_leave_ending(w->rt, cause);
        } else if (status != SVP_OK && (w->verdict || w->resume.agreed_failure)) {
            /* every rank stops on the same verdict: a rank still finishing
             * the agreement's fence must not take this one's exit for a
             * loss */
            svp_rt_set_leave_reason(w->rt, SVP_RT_LEAVE_DONE);
        } else if (status != SVP_OK) {
            /* the first error line says why; the status only what kind */
            char first[256]; /* the runtime cuts it to what a goodbye holds */

            svp_rt_set_leave_error(w->rt, svp_log_first_error(first, sizeof(first))
                                              ? first
                                              : svp_status_string(status));
        }
        svp_rt_cleanup(w->rt);
    }
    svp_job_samples_destroy(w->list);
    svp_spec_destroy(w->spec);
    if (svp_stop_signal() != 0) {
        return svp_stop_exit_code();
    }
    if (lost) {
        return SVP_EXIT_BAD_INPUT;
    }
    return svp_status_exit_code(status);
}

int main(int argc, char **argv)
{
    svp_worker_t w;
    svp_status_t status;
    int          rc;

    /* before anything reads argv or loads a model: the BLAS kernels this
     * CPU executes best, by re-executing with them where OpenBLAS picked
     * weaker ones (ops.h) */
    svp_ops_blas_choose(argv);
    memset(&w, 0, sizeof(w));
    w.shard.count = 1;
    w.world       = 1;
    rc            = svp_worker_parse_args(&w, argc, argv);
    if (rc < 0) {
        rc = svp_worker_load_spec(&w, (optind < argc) ? argv[optind] : NULL);
    }
    if (rc >= 0) {
        svp_spec_destroy(w.spec);
        return rc;
    }
    status = svp_worker_init(&w);
    if (status == SVP_OK && !w.check) {
        status = svp_worker_run(&w);
    }
    return svp_worker_cleanup(&w, status);
}
