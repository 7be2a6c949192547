/*
 * The sbatch script.  Layout, top to bottom:
 *
 *   #!/bin/bash and a comment naming the spec it came from
 *   #SBATCH lines      sbatch reads them only before the first command, so
 *                      they all come first; values validated, never quoted
 *                      (cluster.sbatch_args last, one option a line)
 *   set -euo pipefail
 *   exports            cluster.env, single-quoted (double-quoted with
 *                      cluster.env_expand: $NAME expands, nothing else)
 *   setup              cluster.setup, verbatim: they are shell by intent
 *   spec lookup        where the job spec is at run time (see launch.h)
 *   exec srun ...      one task per rank, the container runtime, the worker
 *                      and the spec (its container-side path in one)
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "plan/plan.h"
#include "common/str.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes s single-quoted: every ' becomes '\'' and nothing else is special. */
static void launch_put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s != '\0'; ++s) {
        if (*s == '\'') {
            fputs("'\\''", f);
        } else {
            fputc(*s, f);
        }
    }
    fputc('\'', f);
}

static void launch_put_sbatch(FILE *f, const char *option, const char *value)
{
    if (value != NULL && *value != '\0') {
        fprintf(f, "#SBATCH --%s=%s\n", option, value);
    }
}

static void launch_put_spec_lookup(FILE *f, const svp_launch_render_params_t *params)
{
    if (params->spec_ref_kind == SVP_LAUNCH_SPEC_ABSOLUTE) {
        fputs("svp_spec=", f);
        launch_put_quoted(f, params->spec_ref);
        fputs("\n", f);
    } else {
        /*
         * Slurm quirk: sbatch copies the script into slurmd's spool
         * directory and runs the copy, so $0 is ".../job<ID>/slurm_script"
         * there.  The submitted path survives in the job's Command field.
         * $0 is tried first so that the script also runs by hand (bash, or
         * inside salloc).
         */
        fputs("# The job spec is named relative to this script.  sbatch runs a "
              "spooled copy\n# of the script, so when $0 does not lead to the "
              "spec, the submitted path\n# is taken from the job's Command "
              "field.\n",
              f);
        fputs("svp_rel=", f);
        launch_put_quoted(f, params->spec_ref);
        fputs("\n"
              "svp_spec=$(dirname -- \"$0\")/$svp_rel\n"
              "if [ ! -f \"$svp_spec\" ] && [ -n \"${SLURM_JOB_ID:-}\" ]; then\n"
              "    svp_script=$(scontrol show job \"$SLURM_JOB_ID\" |\n"
              "                 sed -n 's/^ *Command=//p' | head -n 1) || "
              "svp_script=\n"
              "    svp_spec=$(dirname -- \"$svp_script\")/$svp_rel\n"
              "fi\n",
              f);
    }
    fputs("if [ ! -f \"$svp_spec\" ]; then\n"
          "    echo \"job spec not found: $svp_spec\" >&2\n"
          "    exit 2\n"
          "fi\n",
          f);
}

/* Writes s double-quoted; validation left only $NAME and ${NAME} in it. */
static void launch_put_expanded(FILE *f, const char *s)
{
    fprintf(f, "\"%s\"", s);
}

/* The mounts joined with commas, single-quoted (pyxis and apptainer both
 * take one comma-separated list). */
static void launch_put_mounts(FILE *f, const svp_spec_t *spec)
{
    fputc('\'', f);
    for (int i = 0; i < spec->cluster.container_mounts.count; ++i) {
        const char *m = spec->cluster.container_mounts.items[i];
        if (i > 0) {
            fputc(',', f);
        }
        for (; *m != '\0'; ++m) {
            if (*m == '\'') {
                fputs("'\\''", f);
            } else {
                fputc(*m, f);
            }
        }
    }
    fputc('\'', f);
}

static svp_status_t launch_check_params(const svp_launch_render_params_t *params,
                                        char *errbuf, int errlen)
{
    if (params->spec_ref == NULL || *params->spec_ref == '\0' ||
        svp_launch_has_control(params->spec_ref)) {
        svp_errf(errbuf, errlen,
                 "job spec path: expected a path "
                 "without control characters");
        return SVP_ERR_SPEC;
    }
    if (params->spec_ref_kind == SVP_LAUNCH_SPEC_ABSOLUTE &&
        params->spec_ref[0] != '/') {
        svp_errf(errbuf, errlen,
                 "job spec path: expected an absolute "
                 "path, found \"%s\"",
                 params->spec_ref);
        return SVP_ERR_SPEC;
    }
    for (int i = 0; i < params->num_overrides; ++i) {
        const char *o = params->overrides[i];
        if (o == NULL || strchr(o, '=') == NULL || svp_launch_has_control(o)) {
            const char *found = o ? o : "";
            char        esc[256];

            svp_str_escape(found, strlen(found), esc, sizeof(esc),
                           SVP_STR_ESCAPE_QUOTED);
            svp_errf(errbuf, errlen,
                     "--set: expected key=value without "
                     "control characters, found \"%s\"",
                     esc);
            return SVP_ERR_SPEC;
        }
    }
    if (params->shard_count > 1 &&
        (params->shard_index < 0 || params->shard_index >= params->shard_count)) {
        svp_errf(errbuf, errlen,
                 "--shard: expected I/N with 0 <= I < N, "
                 "found %d/%d",
                 params->shard_index, params->shard_count);
        return SVP_ERR_SPEC;
    }
    if (params->spec_host != NULL && params->spec_host[0] != '/') {
        svp_errf(errbuf, errlen,
                 "job spec host path: expected an "
                 "absolute path, found \"%s\"",
                 params->spec_host);
        return SVP_ERR_SPEC;
    }
    return SVP_OK;
}

/* pipeline.stages: auto, as planned at render time; stages 0 when the spec
 * names its layout */
typedef struct {
    svp_plan_estimate_t layout;
    char                why[256];   /* where the costs came from */
    int                 unit_costs; /* no time model: every step one unit */
} launch_auto_t;

static svp_status_t launch_plan_auto(const svp_spec_t *spec, launch_auto_t *a,
                                     char *errbuf, int errlen)
{
    svp_plan_costs_t costs;
    svp_status_t     status;

    if (spec->pipeline.stages != SVP_PIPE_STAGES_AUTO) {
        return SVP_OK;
    }
    /* without a time model every step costs one unit: the choice then
     * rests on fill, drain and balance, and the makespan is in steps */
    if (svp_plan_costs_from_spec(spec, NULL, a->why, sizeof(a->why), &costs) !=
        SVP_OK) {
        memset(&costs, 0, sizeof(costs));
        costs.step_s = 1.0;
        snprintf(costs.source, sizeof(costs.source),
                 "unit step costs "
                 "(no time model for this model without a hardware "
                 "table)");
        a->unit_costs = 1;
    }
    status =
        svp_plan_choose_stages(spec, &costs, &a->layout, a->why, sizeof(a->why));
    if (status != SVP_OK) {
        svp_errf(errbuf, errlen,
                 "%s: pipeline.stages: auto: no layout "
                 "could be planned",
                 spec->file);
    }
    return status;
}

/* The checks before anything is written, the spec's container-side path
 * (empty outside a container) and the auto layout. */
static svp_status_t launch_render_prepare(const svp_spec_t                 *spec,
                                          const svp_launch_render_params_t *params,
                                          char *in_container, size_t size,
                                          launch_auto_t *a, char *errbuf, int errlen)
{
    svp_status_t status;

    status = svp_launch_validate(spec, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    status = launch_check_params(params, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    if (params->shard_count > 1 && spec->cluster.array != NULL &&
        spec->cluster.array[0] != '\0') {
        /* each array task takes its own shard already (svdworker --shard) */
        svp_errf(errbuf, errlen,
                 "%s: --shard %d/%d: expected a job without "
                 "cluster.array (its tasks are the shards already), found "
                 "cluster.array: %s",
                 spec->file, params->shard_index, params->shard_count,
                 spec->cluster.array);
        return SVP_ERR_SPEC;
    }
    if (svp_launch_in_container(spec)) {
        const char *host = params->spec_host ? params->spec_host : params->spec_ref;

        status = svp_launch_container_check(spec, host, errbuf, errlen);
        if (status != SVP_OK) {
            return status;
        }
        svp_launch_container_path(spec, host, in_container, size);
    }
    return launch_plan_auto(spec, a, errbuf, errlen);
}

/*
 * Where the outputs land, as the submitting side sees them, for `svdlaunch
 * status JOBID`: output.dir as the spec has it (a relative one is the job's
 * working directory's, for the worker too), or, in a container, its host
 * path through the mounts.  Left out when not known, or when the path
 * holds a line break (it must stay a comment).
 */
static void launch_put_output(FILE *f, const svp_spec_t *spec)
{
    const char *out = spec->output.dir, *wd = spec->cluster.container_workdir;
    char        host[4096], joined[4096];

    if (out == NULL || out[0] == '\0') {
        return;
    }
    if (svp_launch_in_container(spec)) {
        if (out[0] != '/') {
            if (wd == NULL || wd[0] == '\0') {
                return;
            }
            snprintf(joined, sizeof(joined), "%s/%s", wd, out);
            out = joined;
        }
        if (!svp_launch_container_host(spec, out, host, sizeof(host))) {
            return;
        }
        out = host;
    }
    if (strpbrk(out, "\n\r") == NULL) {
        fprintf(f, "%s%s\n", SVP_LAUNCH_OUTPUT_MARK, out);
    }
}

/* #!/bin/bash, where the script came from, the auto layout and the array. */
static void launch_put_header(FILE *f, const svp_spec_t *spec,
                              const svp_launch_render_params_t *params,
                              const launch_auto_t              *a)
{
    const svp_plan_estimate_t *layout = &a->layout;

    fputs("#!/bin/bash\n", f);
    fprintf(f, "# svdpipe job %s, rendered by svdlaunch from ",
            svp_launch_job_name(spec));
    fputs(params->spec_ref, f);
    fputs(".\n# Edit the job spec and render again: changes made here are "
          "lost.\n",
          f);
    launch_put_output(f, spec);
    if (layout->stages > 0) {
        fprintf(f,
                "# pipeline.stages: auto -> %d (%d pipeline%s x %d stage%s), "
                "predicted makespan ",
                layout->stages, layout->groups, layout->groups > 1 ? "s" : "",
                layout->stages, layout->stages > 1 ? "s" : "");
        if (a->unit_costs) {
            fprintf(f,
                    "%.0f step times (no time model: every step "
                    "one unit, encode and decode free)\n",
                    layout->makespan_s);
        } else {
            fprintf(f, "%.3f s from %s\n", layout->makespan_s, a->why);
        }
    }
    if (params->shard_count > 1) {
        fprintf(f,
                "# shard %d of %d: this job makes the samples whose index is "
                "%d mod %d\n",
                params->shard_index, params->shard_count, params->shard_index,
                params->shard_count);
    }
    if (svp_launch_array_tasks(spec) > 1) {
        fprintf(f,
                "# job array: %d tasks of %d node%s x %d ranks, each making "
                "its share of the samples\n",
                svp_launch_array_tasks(spec), spec->cluster.nodes,
                spec->cluster.nodes > 1 ? "s" : "", spec->cluster.ranks_per_node);
    }
}

static void launch_put_sbatch_lines(FILE *f, const svp_spec_t *spec, int gpus)
{
    launch_put_sbatch(f, "job-name", svp_launch_job_name(spec));
    fprintf(f, "#SBATCH --nodes=%d\n", spec->cluster.nodes);
    fprintf(f, "#SBATCH --ntasks-per-node=%d\n", spec->cluster.ranks_per_node);
    if (gpus > 0) {
        fprintf(f, "#SBATCH --gpus-per-task=%d\n", gpus);
    }
    launch_put_sbatch(f, "partition", spec->cluster.partition);
    launch_put_sbatch(f, "account", spec->cluster.account);
    launch_put_sbatch(f, "qos", spec->cluster.qos);
    launch_put_sbatch(f, "time", spec->cluster.time);
    launch_put_sbatch(f, "constraint", spec->cluster.constraint);
    if (spec->cluster.exclusive) {
        fputs("#SBATCH --exclusive\n", f);
    }
    launch_put_sbatch(f, "output", spec->cluster.output);
    launch_put_sbatch(f, "error", spec->cluster.error);
    if (spec->cluster.requeue) {
        /* a requeued run resumes (finished samples are skipped) and appends
         * to the same log instead of truncating the first run's */
        fputs("#SBATCH --requeue\n#SBATCH --open-mode=append\n", f);
    }
    launch_put_sbatch(f, "dependency", spec->cluster.dependency);
    launch_put_sbatch(f, "array", spec->cluster.array);
    if (spec->cluster.cpus_per_task > 0) {
        fprintf(f, "#SBATCH --cpus-per-task=%d\n", spec->cluster.cpus_per_task);
    }
    launch_put_sbatch(f, "mem", spec->cluster.mem);
    launch_put_sbatch(f, "mem-per-gpu", spec->cluster.mem_per_gpu);
    launch_put_sbatch(f, "signal", spec->cluster.signal);
    for (int i = 0; i < spec->cluster.sbatch_args.count; ++i) {
        fprintf(f, "#SBATCH %s\n", spec->cluster.sbatch_args.items[i]);
    }
}

/* cluster.env as exports, then cluster.setup verbatim. */
static void launch_put_environment(FILE *f, const svp_spec_t *spec)
{
    int i;

    for (i = 0; i < spec->cluster.env.count; ++i) {
        const char *v =
            spec->cluster.env.values[i] ? spec->cluster.env.values[i] : "";

        fprintf(f, "export %s=", spec->cluster.env.keys[i]);
        if (spec->cluster.env_expand) {
            launch_put_expanded(f, v);
        } else {
            launch_put_quoted(f, v);
        }
        fputs("\n", f);
    }
    if (spec->cluster.env.count > 0) {
        fputs("\n", f);
    }
    if (spec->cluster.setup.count > 0) {
        /* module and conda scripts read unset variables: -u off meanwhile */
        fputs("set +u\n", f);
        for (i = 0; i < spec->cluster.setup.count; ++i) {
            fprintf(f, "%s\n", spec->cluster.setup.items[i]);
        }
        fputs("set -u\n\n", f);
    }
}

/*
 * Whether cluster.sbatch_args holds an --export without ALL (NONE, or a
 * list of names).  sbatch hands it on to the job as SLURM_EXPORT_ENV, and
 * srun reads that as its own --export: the ranks would start without the
 * environment the script exports (cluster.env, the UCX and PMIx settings).
 */
static int launch_sbatch_export_narrow(const svp_spec_t *spec)
{
    for (int i = 0; i < spec->cluster.sbatch_args.count; ++i) {
        svp_launch_slurm_opt_t opts[16];
        char                   why[512];
        int                    n;

        n = svp_launch_slurm_parse(SVP_LAUNCH_SBATCH,
                                   spec->cluster.sbatch_args.items[i], opts,
                                   (int)SVP_ARRAY_SIZE(opts), why, sizeof(why));
        for (int j = 0; j < n; ++j) {
            if (opts[j].name != NULL && !strcmp(opts[j].name, "export") &&
                opts[j].value != NULL && strcmp(opts[j].value, "ALL") != 0 &&
                strncmp(opts[j].value, "ALL,", 4) != 0) {
                return 1;
            }
        }
    }
    return 0;
}

/* exec srun with its own options and cluster.srun_args. */
static void launch_put_srun(FILE *f, const svp_spec_t *spec, int gpus)
{
    if (launch_sbatch_export_narrow(spec)) {
        /* sbatch(1), --export: "to avoid steps inheriting environment
         * export settings (e.g. NONE) from sbatch command, the environment
         * variable SLURM_EXPORT_ENV should be set to ALL in the job script" */
        fputs("\n# sbatch --export (cluster.sbatch_args) is for this script; "
              "srun would inherit it\n# and start the ranks without the "
              "exports above\nexport SLURM_EXPORT_ENV=ALL\n",
              f);
    }
    /*
     * --kill-on-bad-exit: a rank that fails takes the job down at once
     * instead of leaving its peers waiting for their deadlines.  -W bounds a
     * rank that exits cleanly while others hang.
     */
    fprintf(f, "\nexec srun --mpi=%s --kill-on-bad-exit=1 -W %ld",
            svp_launch_mpi(spec), svp_launch_exit_wait(spec));
    if (gpus > 0) {
        /* one GPU per task: CUDA_VISIBLE_DEVICES names only the task's own */
        fprintf(f, " \\\n    --gpus-per-task=%d --gpu-bind=per_task:%d", gpus, gpus);
    }
    if (spec->cluster.cpus_per_task > 0) {
        /*
         * Slurm 22.05 and later: srun no longer inherits --cpus-per-task
         * from the allocation, and without it each rank is bound to one CPU
         * (the worker sizes its threads by its affinity mask).
         */
        fprintf(f, " --cpus-per-task=%d", spec->cluster.cpus_per_task);
    }
    for (int i = 0; i < spec->cluster.srun_args.count; ++i) {
        const char *a = spec->cluster.srun_args.items[i];

        fputs(i == 0 ? " \\\n    " : " ", f);
        /* quoted only when the shell would read something into it */
        if (strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789-_=:,./+@%") == strlen(a)) {
            fputs(a, f);
        } else {
            launch_put_quoted(f, a);
        }
    }
}

/* The container runtime's part of the srun line: pyxis's srun options, or
 * apptainer exec before the worker. */
static void launch_put_container(FILE *f, const svp_spec_t *spec, int gpus)
{
    if (!svp_launch_in_container(spec)) {
        return;
    }
    if (spec->cluster.container_runtime == SVP_CONTAINER_PYXIS) {
        fputs(" \\\n    --container-image=", f);
        launch_put_quoted(f, spec->cluster.container_image);
        if (spec->cluster.container_mounts.count > 0) {
            fputs(" --container-mounts=", f);
            launch_put_mounts(f, spec);
        }
        if (spec->cluster.container_workdir != NULL &&
            spec->cluster.container_workdir[0] != '\0') {
            fputs(" \\\n    --container-workdir=", f);
            launch_put_quoted(f, spec->cluster.container_workdir);
        }
        return;
    }
    /* apptainer exec: --nv binds the host's driver and the task's GPUs */
    fputs(" \\\n    apptainer exec", f);
    if (gpus > 0) {
        fputs(" --nv", f);
    }
    if (spec->cluster.container_mounts.count > 0) {
        fputs(" --bind ", f);
        launch_put_mounts(f, spec);
    }
    if (spec->cluster.container_workdir != NULL &&
        spec->cluster.container_workdir[0] != '\0') {
        fputs(" --pwd ", f);
        launch_put_quoted(f, spec->cluster.container_workdir);
    }
    fputc(' ', f);
    launch_put_quoted(f, spec->cluster.container_image);
}

/* The worker, its spec and the overrides: the end of the srun line. */
static void launch_put_worker(FILE *f, const svp_spec_t *spec,
                              const svp_launch_render_params_t *params,
                              const char *in_container, const launch_auto_t *a)
{
    char worker[4096], why[512];

    fputs(" \\\n    ", f);
    /* checked by svp_launch_validate: resolves here as it did there */
    if (!svp_launch_worker_path(spec, worker, sizeof(worker), why, sizeof(why))) {
        snprintf(worker, sizeof(worker), "%s", svp_launch_worker(spec));
    }
    launch_put_quoted(f, worker);
    if (in_container[0] != '\0') {
        /* the worker reads the spec inside the container, by its path there */
        fputc(' ', f);
        launch_put_quoted(f, in_container);
    } else {
        fputs(" \"$svp_spec\"", f);
    }
    if (params->shard_count > 1) {
        fprintf(f, " --shard %d/%d", params->shard_index, params->shard_count);
    }
    for (int i = 0; i < params->num_overrides; ++i) {
        fputs(" --set ", f);
        launch_put_quoted(f, params->overrides[i]);
    }
    if (a->layout.stages > 0) {
        fprintf(f, " --set pipeline.stages=%d", a->layout.stages);
    }
    fputs("\n", f);
}

svp_status_t svp_launch_render(const svp_spec_t                 *spec,
                               const svp_launch_render_params_t *params,
                               char *errbuf, int errlen, char **script_p)
{
    svp_status_t  status;
    char         *buf = NULL;
    size_t        len = 0;
    FILE         *f;
    int           gpus;
    launch_auto_t a                  = {0};
    char          in_container[4096] = "";

    status = launch_render_prepare(spec, params, in_container, sizeof(in_container),
                                   &a, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    f = open_memstream(&buf, &len);
    if (f == NULL) {
        svp_errf(errbuf, errlen, "open_memstream: %s", strerror(errno));
        return SVP_ERR_NO_MEMORY;
    }
    gpus = svp_launch_gpus_per_task(spec);

    launch_put_header(f, spec, params, &a);
    launch_put_sbatch_lines(f, spec, gpus);
    fputs("\nset -euo pipefail\n\n", f);
    launch_put_environment(f, spec);
    launch_put_spec_lookup(f, params);
    launch_put_srun(f, spec, gpus);
    launch_put_container(f, spec, gpus);
    launch_put_worker(f, spec, params, in_container, &a);

    if (ferror(f) || fclose(f) != 0) {
        free(buf);
        svp_errf(errbuf, errlen, "rendering the script: out of memory");
        return SVP_ERR_NO_MEMORY;
    }
    *script_p = buf;
    return SVP_OK;
}

svp_status_t svp_launch_relpath(const char *dir, const char *target, char **rel_p)
{
    char        rdir[PATH_MAX], rtarget[PATH_MAX];
    const char *d, *t;
    char       *rel, *end;
    size_t      common = 0, i, ups = 0, size;

    if (realpath(dir, rdir) == NULL || realpath(target, rtarget) == NULL) {
        return SVP_ERR_NOT_FOUND;
    }
    /* the longest common prefix that ends at a path component boundary */
    for (i = 0; rdir[i] != '\0' && rdir[i] == rtarget[i]; ++i) {
        if (rdir[i] == '/') {
            common = i;
        }
    }
    if (rdir[i] == '\0' && (rtarget[i] == '/' || rtarget[i] == '\0')) {
        common = i;
    }
    d = rdir + common;
    t = rtarget + common;
    /* one "../" per component of dir below the common prefix */
    for (; *d != '\0'; ++d) {
        ups += (d[0] == '/' && d[1] != '\0');
    }
    if (*t == '/') {
        ++t;
    }
    size = ups * 3 + strlen(t) + 1;
    rel  = malloc(size);
    if (rel == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    end = rel;
    for (i = 0; i < ups; ++i) {
        end = stpcpy(end, "../");
    }
    memcpy(end, t, strlen(t) + 1);
    *rel_p = rel;
    return SVP_OK;
}
