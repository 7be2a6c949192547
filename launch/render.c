/*
 * The sbatch script.  Layout, top to bottom:
 *
 *   #!/bin/bash and a comment naming the spec it came from
 *   #SBATCH lines      sbatch reads them only before the first command, so
 *                      they all come first; values validated, never quoted
 *   set -euo pipefail
 *   exports            cluster.env, single-quoted
 *   spec lookup        where the job spec is at run time (see launch.h)
 *   exec srun ...      one task per rank, the worker and the spec
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "launch/plan.h"

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

static void launch_put_spec_lookup(FILE *f,
                                   const svp_launch_render_params_t *params)
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
              "field.\n", f);
        fputs("svp_rel=", f);
        launch_put_quoted(f, params->spec_ref);
        fputs("\n"
              "svp_spec=$(dirname -- \"$0\")/$svp_rel\n"
              "if [ ! -f \"$svp_spec\" ] && [ -n \"${SLURM_JOB_ID:-}\" ]; then\n"
              "    svp_script=$(scontrol show job \"$SLURM_JOB_ID\" |\n"
              "                 sed -n 's/^ *Command=//p' | head -n 1) || "
              "svp_script=\n"
              "    svp_spec=$(dirname -- \"$svp_script\")/$svp_rel\n"
              "fi\n", f);
    }
    fputs("if [ ! -f \"$svp_spec\" ]; then\n"
          "    echo \"job spec not found: $svp_spec\" >&2\n"
          "    exit 2\n"
          "fi\n", f);
}

static svp_status_t launch_check_params(const svp_launch_render_params_t *params,
                                        char *errbuf, int errlen)
{
    if (params->spec_ref == NULL || *params->spec_ref == '\0' ||
        svp_launch_has_control(params->spec_ref)) {
        svp_launch_errf(errbuf, errlen, "job spec path: expected a path "
                        "without control characters");
        return SVP_ERR_SPEC;
    }
    if (params->spec_ref_kind == SVP_LAUNCH_SPEC_ABSOLUTE &&
        params->spec_ref[0] != '/') {
        svp_launch_errf(errbuf, errlen, "job spec path: expected an absolute "
                        "path, found \"%s\"", params->spec_ref);
        return SVP_ERR_SPEC;
    }
    for (int i = 0; i < params->num_overrides; ++i) {
        const char *o = params->overrides[i];
        if (o == NULL || strchr(o, '=') == NULL || svp_launch_has_control(o)) {
            char esc[256];

            svp_launch_escape(o ? o : "", esc, sizeof(esc));
            svp_launch_errf(errbuf, errlen, "--set: expected key=value without "
                            "control characters, found \"%s\"", esc);
            return SVP_ERR_SPEC;
        }
    }
    return SVP_OK;
}

svp_status_t svp_launch_render(const svp_spec_t *spec,
                               const svp_launch_render_params_t *params,
                               char *errbuf, int errlen, char **script_p)
{
    svp_status_t status;
    char        *buf = NULL;
    size_t       len = 0;
    FILE        *f;
    int          gpus, i;
    svp_plan_layout_t layout = {0};
    char         costs_why[256] = "";

    status = svp_launch_validate(spec, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    status = launch_check_params(params, errbuf, errlen);
    if (status != SVP_OK) {
        return status;
    }
    if (spec->pipeline.stages == SVP_PIPE_STAGES_AUTO) {
        status = svp_plan_choose_stages(spec, NULL, &layout, costs_why,
                                        sizeof(costs_why));
        if (status != SVP_OK) {
            svp_launch_errf(errbuf, errlen, "%s: pipeline.stages: auto: no layout "
                            "could be planned", spec->file);
            return status;
        }
    }

    f = open_memstream(&buf, &len);
    if (f == NULL) {
        svp_launch_errf(errbuf, errlen, "open_memstream: %s", strerror(errno));
        return SVP_ERR_NO_MEMORY;
    }

    gpus = svp_launch_gpus_per_task(spec);

    fputs("#!/bin/bash\n", f);
    fprintf(f, "# svdpipe job %s, rendered by svdlaunch from ",
            svp_launch_job_name(spec));
    fputs(params->spec_ref, f);
    fputs(".\n# Edit the job spec and render again: changes made here are "
          "lost.\n", f);
    if (layout.stages > 0) {
        fprintf(f, "# pipeline.stages: auto -> %d (%d pipeline%s x %d stage%s), "
                "predicted makespan %.3f s from %s\n", layout.stages,
                layout.groups, layout.groups > 1 ? "s" : "", layout.stages,
                layout.stages > 1 ? "s" : "", layout.makespan_s, costs_why);
    }

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

    fputs("\nset -euo pipefail\n\n", f);

    for (i = 0; i < spec->cluster.env.count; ++i) {
        fprintf(f, "export %s=", spec->cluster.env.keys[i]);
        launch_put_quoted(f, spec->cluster.env.values[i] ?
                             spec->cluster.env.values[i] : "");
        fputs("\n", f);
    }
    if (spec->cluster.env.count > 0) {
        fputs("\n", f);
    }

    launch_put_spec_lookup(f, params);

    /*
     * --kill-on-bad-exit: a rank that fails takes the job down at once
     * instead of leaving its peers waiting for their deadlines.  -W bounds a
     * rank that exits cleanly while others hang.
     */
    fprintf(f, "\nexec srun --mpi=%s --kill-on-bad-exit=1 -W %ld",
            svp_launch_mpi(spec), svp_launch_exit_wait(spec));
    if (gpus > 0) {
        /* one GPU per task: CUDA_VISIBLE_DEVICES names only the task's own */
        fprintf(f, " \\\n    --gpus-per-task=%d --gpu-bind=per_task:%d", gpus,
                gpus);
    }
    if (spec->cluster.container_image != NULL &&
        *spec->cluster.container_image != '\0') {
        fputs(" \\\n    --container-image=", f);
        launch_put_quoted(f, spec->cluster.container_image);
        if (spec->cluster.container_mounts.count > 0) {
            fputs(" --container-mounts='", f);
            for (i = 0; i < spec->cluster.container_mounts.count; ++i) {
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
    }
    fputs(" \\\n    ", f);
    launch_put_quoted(f, svp_launch_worker(spec));
    fputs(" \"$svp_spec\"", f);
    for (i = 0; i < params->num_overrides; ++i) {
        fputs(" --set ", f);
        launch_put_quoted(f, params->overrides[i]);
    }
    if (layout.stages > 0) {
        fprintf(f, " --set pipeline.stages=%d", layout.stages);
    }
    fputs("\n", f);

    if (ferror(f) || fclose(f) != 0) {
        free(buf);
        svp_launch_errf(errbuf, errlen, "rendering the script: out of memory");
        return SVP_ERR_NO_MEMORY;
    }
    *script_p = buf;
    return SVP_OK;
}

svp_status_t svp_launch_relpath(const char *dir, const char *target,
                                char **rel_p)
{
    char        rdir[PATH_MAX], rtarget[PATH_MAX];
    const char *d, *t;
    char       *rel;
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
    rel[0] = '\0';
    for (i = 0; i < ups; ++i) {
        strcat(rel, "../");
    }
    strcat(rel, t);
    *rel_p = rel;
    return SVP_OK;
}
