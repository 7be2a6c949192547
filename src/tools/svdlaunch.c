/*
 * svdlaunch: turn a job spec into a Slurm job, or predict what it will cost.
 *
 *   svdlaunch render JOB.yaml [-o FILE] [--shard I/N] [--no-path-check]
 *                             [--set key=value ...]
 *   svdlaunch submit JOB.yaml [--dry-run] [--shard I/N] [--no-path-check]
 *                             [--set key=value ...]
 *   svdlaunch check  JOB.yaml [--no-path-check] [--set key=value ...]
 *   svdlaunch plan   JOB.yaml [--hardware FILE [--measured RESULTS]]
 *                             [--from-log FILE] [--json] [--set key=value ...]
 *
 * render, submit and check run every check first (svp_launch_preflight):
 * nothing is written or queued when one fails.
 *
 * Exit status: 0 done, 2 bad input (nothing submitted), 3 sbatch could not
 * be run or refused the job (SVP_ERR_RUNTIME), 1 anything else.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/log.h"
#include "job/samples.h"
#include "common/status.h"
#include "common/util.h"
#include "plan/hardware.h"
#include "launch/launch.h"
#include "launch/plan_report.h"
#include "plan/plan.h"
#include "jobspec/layout.h"
#include "jobspec/spec.h"
#include "common/str.h"
#include "common/file.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAUNCH_MAX_SET SVP_SPEC_MAX_LIST

typedef struct {
    const char     *command;
    const char     *job;
    const char     *output;
    const char     *hardware;
    const char     *from_log;
    const char     *measured;
    const char     *shard;    /* --shard I/N, NULL: the whole job */
    svp_job_shard_t shard_of; /* parsed */
    int             dry_run;
    int             no_path_check;
    int             json;
    const char     *sets[LAUNCH_MAX_SET];
    int             num_sets;
} launch_args_t;

static void launch_usage(FILE *f)
{
    fputs("usage: svdlaunch render JOB.yaml [-o FILE] [--shard I/N] "
          "[--no-path-check] [--set key=value ...]\n"
          "       svdlaunch submit JOB.yaml [--dry-run] [--shard I/N] "
          "[--no-path-check] [--set key=value ...]\n"
          "       svdlaunch check  JOB.yaml [--no-path-check] "
          "[--set key=value ...]\n"
          "       svdlaunch plan   JOB.yaml [--hardware FILE [--measured "
          "RESULTS]] [--from-log FILE]\n"
          "                                 [--json] [--set key=value ...]\n"
          "       svdlaunch status OUTPUT_DIR|JOBID [--json]\n"
          "       svdlaunch --help | --version\n"
          "\n"
          "render   write the sbatch script (stdout, or FILE atomically; a "
          "script written\n"
          "         to FILE names the job spec relative to FILE's directory, "
          "one on stdout\n"
          "         by its absolute path)\n"
          "submit   render beside output.dir (OUTPUT_DIR.sbatch) and run "
          "sbatch --parsable;\n"
          "         prints the job id (--dry-run: prints the script, submits "
          "nothing)\n"
          "check    validate the spec, the cluster values, the step "
          "assignment and, as\n"
          "         this host sees them, the model folder, the inputs, "
          "output.dir and the\n"
          "         worker; render and submit run the same checks first\n"
          "plan     predict makespan, throughput, bubbles, link time and "
          "memory per GPU;\n"
          "         --measured: the figures a GPU run measured "
          "(bench/results/gpu-*.yaml)\n"
          "         replace the hardware table's; --json: one JSON object\n"
          "status   done/total, rate, ETA and failed samples of the job writing "
          "into\n"
          "         OUTPUT_DIR, across its array tasks (--json: one JSON "
          "object);\n"
          "         a JOBID of a job svdlaunch rendered finds it in the job's "
          "script\n"
          "\n"
          "--shard I/N      render and submit: an independent job of shard "
          "I of N, the\n"
          "                 samples whose index is I mod N (svdworker --shard); "
          "submit keeps\n"
          "                 its script as OUTPUT_DIR.shard-I-of-N.sbatch\n"
          "--no-path-check  skip the checks of paths and of the worker (a "
          "script for\n"
          "                 another machine)\n"
          "--set key=value  override a key; a relative path given here is "
          "relative to\n"
          "                 the working directory, one in the spec to the "
          "spec's folder\n",
          f);
}

static svp_status_t launch_parse_args(int argc, char **argv, launch_args_t *a)
{
    static const struct option options[] =
        {{"output", required_argument, NULL, 'o'},
         {"set", required_argument, NULL, 's'},
         {"hardware", required_argument, NULL, 'H'},
         {"from-log", required_argument, NULL, 'L'},
         {"measured", required_argument, NULL, 'M'},
         {"shard", required_argument, NULL, 'S'},
         {"dry-run", no_argument, NULL, 'n'},
         {"no-path-check", no_argument, NULL, 'P'},
         {"json", no_argument, NULL, 'j'},
         {"help", no_argument, NULL, 'h'},
         {"version", no_argument, NULL, 'V'},
         {NULL, 0, NULL, 0}};
    int c;

    if (argc < 2) {
        launch_usage(stderr);
        return SVP_ERR_USAGE;
    }
    a->command = argv[1];
    if (!strcmp(a->command, "-h") || !strcmp(a->command, "--help")) {
        launch_usage(stdout);
        exit(SVP_EXIT_OK);
    }
    if (!strcmp(a->command, "-V") || !strcmp(a->command, "--version")) {
        printf("svdlaunch (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
        exit(SVP_EXIT_OK);
    }

    optind = 2;
    while ((c = getopt_long(argc, argv, "o:s:hn", options, NULL)) != -1) {
        switch (c) {
        case 'o':
            a->output = optarg;
            break;
        case 's':
            if (a->num_sets == LAUNCH_MAX_SET) {
                svp_error("more than %d --set options: over the limit of %d",
                          LAUNCH_MAX_SET, LAUNCH_MAX_SET);
                return SVP_ERR_USAGE;
            }
            a->sets[a->num_sets++] = optarg;
            break;
        case 'H':
            a->hardware = optarg;
            break;
        case 'L':
            a->from_log = optarg;
            break;
        case 'M':
            a->measured = optarg;
            break;
        case 'S':
            a->shard = optarg;
            break;
        case 'n':
            a->dry_run = 1;
            break;
        case 'P':
            a->no_path_check = 1;
            break;
        case 'j':
            a->json = 1;
            break;
        case 'h':
            launch_usage(stdout);
            exit(SVP_EXIT_OK);
        case 'V':
            printf("svdlaunch (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
            exit(SVP_EXIT_OK);
        default:
            launch_usage(stderr);
            return SVP_ERR_USAGE;
        }
    }
    if (optind != argc - 1) {
        svp_error("%s: expected exactly one job spec", a->command);
        return SVP_ERR_USAGE;
    }
    a->job = argv[optind];

    if ((a->output && strcmp(a->command, "render")) ||
        (a->dry_run && strcmp(a->command, "submit")) ||
        (a->shard && strcmp(a->command, "render") && strcmp(a->command, "submit")) ||
        (a->no_path_check && !strcmp(a->command, "plan")) ||
        ((a->hardware || a->from_log || a->measured || a->json) &&
         strcmp(a->command, "plan"))) {
        svp_error("%s: option not valid for this command", a->command);
        return SVP_ERR_USAGE;
    }
    if (a->measured && !a->hardware) {
        svp_error("plan: --measured needs --hardware (the table it refines)");
        return SVP_ERR_USAGE;
    }
    a->shard_of.index = 0;
    a->shard_of.count = 1;
    if (a->shard != NULL) {
        char         err[512];
        svp_status_t status =
            svp_job_shard_parse(a->shard, &a->shard_of, err, sizeof(err));

        if (status != SVP_OK) {
            svp_error("%s: %s", a->command, err);
            return SVP_ERR_USAGE;
        }
    }
    return SVP_OK;
}

static svp_status_t launch_render_to(const svp_spec_t *spec, const launch_args_t *a,
                                     svp_launch_spec_ref_t kind,
                                     const char *spec_ref, char **script_p)
{
    svp_launch_render_params_t params = {
        .spec_ref      = spec_ref,
        .spec_ref_kind = kind,
        .overrides     = a->sets,
        .num_overrides = a->num_sets,
        .shard_index   = a->shard_of.index,
        .shard_count   = a->shard_of.count,
    };
    char         err[1024], host[PATH_MAX];
    svp_status_t status;

    if (realpath(a->job, host) != NULL) {
        params.spec_host = host;
    }

    status = svp_launch_render(spec, &params, err, sizeof(err), script_p);
    if (status != SVP_OK) {
        svp_error("%s", err);
    }
    return status;
}

static svp_status_t launch_write(const char *path, const char *script)
{
    return svp_file_write_atomic(path, script, strlen(script));
}

static svp_status_t launch_cmd_render(const svp_spec_t *spec, const launch_args_t *a)
{
    char         abs_job[PATH_MAX], *script, *rel = NULL, *dir;
    svp_status_t status;

    if (a->output == NULL) {
        if (realpath(a->job, abs_job) == NULL) {
            svp_error("%s: %m", a->job);
            return SVP_ERR_NOT_FOUND;
        }
        status =
            launch_render_to(spec, a, SVP_LAUNCH_SPEC_ABSOLUTE, abs_job, &script);
        if (status == SVP_OK) {
            fputs(script, stdout);
            free(script);
        }
        return status;
    }

    dir = svp_strdup(a->output);
    if (dir == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_launch_relpath(dirname(dir), a->job, &rel);
    if (status != SVP_OK) {
        svp_error("cannot name %s relative to the directory of %s", a->job,
                  a->output);
        goto out_free_dir;
    }
    status =
        launch_render_to(spec, a, SVP_LAUNCH_SPEC_SCRIPT_RELATIVE, rel, &script);
    if (status != SVP_OK) {
        goto out_free_rel;
    }
    status = launch_write(a->output, script);
    free(script);

out_free_rel:
    free(rel);
out_free_dir:
    free(dir);
    return status;
}

/* Runs sbatch --parsable SCRIPT and returns its first line (the job id). */
static svp_status_t launch_sbatch(const char *script_path, char *id, size_t len)
{
    int   fds[2], wstatus;
    pid_t pid;
    FILE *f;
    char *got;

    if (pipe(fds) != 0) {
        svp_error("pipe: %m");
        return SVP_ERR_IO;
    }
    pid = fork();
    if (pid < 0) {
        svp_error("fork: %m");
        close(fds[0]);
        close(fds[1]);
        return SVP_ERR_IO;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("sbatch", "sbatch", "--parsable", script_path, (char *)NULL);
        fprintf(stderr, "svdlaunch: cannot run sbatch: %s\n", strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    f   = fdopen(fds[0], "r");
    got = f ? fgets(id, (int)len, f) : NULL;
    if (f != NULL) {
        fclose(f);
    } else {
        close(fds[0]);
    }
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || got == NULL) {
        svp_error("sbatch %s failed (exit status %d)", script_path,
                  WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
        return SVP_ERR_RUNTIME;
    }
    /* --parsable prints "jobid" or "jobid;cluster" */
    id[strcspn(id, ";\n")] = '\0';
    return SVP_OK;
}

static svp_status_t launch_cmd_submit(const svp_spec_t *spec, const launch_args_t *a)
{
    char         abs_job[PATH_MAX], path[PATH_MAX], id[64], *script, *parent;
    const char  *out_dir = spec->output.dir;
    svp_status_t status;
    size_t       n;

    if (realpath(a->job, abs_job) == NULL) {
        svp_error("%s: %m", a->job);
        return SVP_ERR_NOT_FOUND;
    }
    /* the script is kept beside the results: OUTPUT_DIR.sbatch */
    if (out_dir == NULL || *out_dir == '\0') {
        svp_error("%s: output.dir: expected a directory to put the script "
                  "beside, found nothing",
                  spec->file);
        return SVP_ERR_SPEC;
    }
    n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') {
        --n;
    }
    if (a->shard_of.count > 1) {
        /* the shards of one job share output.dir: a script each */
        n = (size_t)snprintf(path, sizeof(path), "%.*s.shard-%d-of-%d.sbatch",
                             (int)n, out_dir, a->shard_of.index, a->shard_of.count);
    } else {
        n = (size_t)snprintf(path, sizeof(path), "%.*s.sbatch", (int)n, out_dir);
    }
    if (n >= sizeof(path)) {
        svp_error("output.dir too long: %s", out_dir);
        return SVP_ERR_SPEC;
    }

    status = launch_render_to(spec, a, SVP_LAUNCH_SPEC_ABSOLUTE, abs_job, &script);
    if (status != SVP_OK) {
        return status;
    }
    if (a->dry_run) {
        fputs(script, stdout);
        goto out_free_script;
    }

    parent = svp_strdup(path);
    if (parent == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out_free_script;
    }
    status = svp_mkdir_p(dirname(parent), 0755);
    free(parent);
    if (status != SVP_OK) {
        goto out_free_script;
    }
    status = launch_write(path, script);
    if (status != SVP_OK) {
        goto out_free_script;
    }
    status = launch_sbatch(path, id, sizeof(id));
    if (status == SVP_OK) {
        printf("%s\n", id);
    }

out_free_script:
    free(script);
    return status;
}

/* Warns when comm.deadline is shorter than the planned hand-off gaps; quiet
 * when the planner has no figures for the model (svd without a table). */
static void launch_warn_deadline(const svp_spec_t       *spec,
                                 const svp_plan_costs_t *costs)
{
    svp_plan_costs_t c;
    char             msg[512];

    if (costs == NULL) {
        if (svp_plan_costs_from_spec(spec, NULL, msg, sizeof(msg), &c) != SVP_OK) {
            return;
        }
        costs = &c;
    }
    if (svp_plan_deadline_warning(spec, costs, msg, sizeof(msg))) {
        svp_warn("%s", msg);
    }
}

/* What Slurm would make of cluster.array (MaxArraySize, tasks with no
 * sample): a warning, since sites raise the limit. */
static void launch_warn_array(const svp_spec_t *spec)
{
    char msg[1024];

    if (svp_launch_array_warning(spec, spec->samples, msg, sizeof(msg))) {
        svp_warn("%s", msg);
    }
}

/* Everything that can be checked before a job is queued. */
static svp_status_t launch_preflight(const svp_spec_t *spec, const launch_args_t *a)
{
    char         err[1024], host[PATH_MAX];
    svp_status_t status;

    /* what a container sees does not depend on this host's files */
    status = svp_launch_validate(spec, err, sizeof(err));
    if (status == SVP_OK) {
        status =
            svp_launch_container_check(spec, realpath(a->job, host) ? host : NULL,
                                       err, sizeof(err));
    }
    if (status != SVP_OK) {
        fprintf(stderr, "%s\n", err);
        return SVP_ERR_SPEC;
    }
    if (a->no_path_check) {
        status = svp_launch_check(spec, err, sizeof(err));
        if (status == SVP_OK) {
            status = svp_launch_check_compute(spec, err, sizeof(err));
        }
    } else {
        status = svp_launch_preflight(spec, err, sizeof(err));
    }
    if (status != SVP_OK) {
        fprintf(stderr, "%s\n", err);
        /* whatever the cause, nothing was started: bad input */
        return SVP_IS_INPUT_ERROR(status) ? status : SVP_ERR_SPEC;
    }
    launch_warn_array(spec);
    return SVP_OK;
}

static svp_status_t launch_cmd_check(const svp_spec_t *spec, const launch_args_t *a)
{
    svp_status_t status;
    int          world, stages;
    char         file[4096];

    status = launch_preflight(spec, a);
    if (status != SVP_OK) {
        return status;
    }
    launch_warn_deadline(spec, NULL);
    world = svp_layout_spec_world(spec);
    /* the file name is the user's text: printed escaped, as messages are */
    svp_str_escape(spec->file, strlen(spec->file), file, sizeof(file),
                   SVP_STR_ESCAPE_TERMINAL);
    if (spec->pipeline.stages < 0) {
        printf("%s: ok: %d ranks (%d x %d), layout chosen at render "
               "(pipeline.stages: auto), %d samples\n",
               file, world, spec->cluster.nodes, spec->cluster.ranks_per_node,
               spec->samples);
        return SVP_OK;
    }
    stages = (spec->pipeline.stages == 0) ? world : spec->pipeline.stages;
    printf("%s: ok: %d ranks (%d x %d), %d pipeline%s x %d stage%s, %d steps each, "
           "%d samples\n",
           file, world, spec->cluster.nodes, spec->cluster.ranks_per_node,
           world / stages, (world / stages == 1) ? "" : "s", stages,
           (stages == 1) ? "" : "s", spec->steps / stages, spec->samples);
    return SVP_OK;
}

static svp_status_t launch_cmd_plan(const svp_spec_t *spec, const launch_args_t *a)
{
    svp_plan_costs_t costs;
    svp_hw_t        *hw = NULL;
    char             err[512];
    svp_status_t     status;

    /* not svp_launch_check(): a layout the job cannot run is still planned,
     * marked invalid beside the ones it can */
    status = svp_launch_validate(spec, err, sizeof(err));
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    if (a->hardware != NULL) {
        status = svp_hw_load(a->hardware, err, sizeof(err), &hw);
        if (status != SVP_OK) {
            svp_error("%s", err);
            return status;
        }
        if (a->measured != NULL) {
            status = svp_hw_overlay_measured(hw, a->measured, err, sizeof(err));
            if (status != SVP_OK) {
                svp_error("%s", err);
                goto out_destroy_hw;
            }
        }
    }
    status = svp_plan_costs_from_spec(spec, hw, err, sizeof(err), &costs);
    if (status == SVP_ERR_UNSUPPORTED && a->from_log != NULL) {
        /* the log supplies the times the spec and table could not */
        status = SVP_OK;
        memset(&costs, 0, sizeof(costs));
        if (hw != NULL) {
            costs.intra_node_gbps = hw->intra_node_gbps;
            costs.inter_node_gbps = hw->inter_node_gbps;
            costs.latency_s       = hw->latency_us * 1e-6;
            costs.link_setup_s    = hw->setup_ms * 1e-3;
        }
    }
    if (status != SVP_OK) {
        svp_error("%s", err);
        goto out_destroy_hw;
    }
    if (a->from_log != NULL) {
        status = svp_plan_costs_from_log(a->from_log, err, sizeof(err), &costs);
        if (status != SVP_OK) {
            svp_error("%s", err);
            goto out_destroy_hw;
        }
    }
    launch_warn_deadline(spec, &costs);
    status = svp_launch_plan_report(stdout, spec, &costs,
                                    a->json ? SVP_LAUNCH_PLAN_JSON : 0);
    if (status != SVP_OK) {
        svp_error("plan: %s", svp_status_string(status));
    }

out_destroy_hw:
    svp_hw_destroy(hw);
    return status;
}

/*
 * The planner and check count what the job will make: the sample list
 * (job/samples.h) resolved here, where `samples` may be 0 ("all of them").
 * The list is read from this host; where it cannot be (images only inside
 * a container) and samples is 0, the count is unknown and said so.
 */
static svp_status_t launch_resolve_samples(svp_spec_t *spec, int quiet)
{
    svp_job_samples_t *list;
    char               err[1024];
    svp_status_t       status;

    status = svp_launch_samples(spec, err, sizeof(err), &list);
    if (status == SVP_OK) {
        spec->samples = list->count;
        svp_job_samples_destroy(list);
        return SVP_OK;
    }
    if (spec->samples > 0 || quiet) {
        return SVP_OK; /* the cap is as good a count as the planner gets */
    }
    svp_error("%s (the sample count comes from the inputs; set samples to plan "
              "without them)",
              err);
    return status;
}

/* svdlaunch status OUTPUT_DIR|JOBID [--json]: takes a directory, not a spec */
static int launch_cmd_status(int argc, char **argv)
{
    const char  *dir = NULL;
    char         err[1024], found[4096];
    struct stat  sb;
    int          i, as_json = 0;
    svp_status_t status;

    for (i = 2; i < argc; ++i) {
        if (!strcmp(argv[i], "--json")) {
            as_json = 1;
        } else if (argv[i][0] == '-' || dir != NULL) {
            svp_error("status: expected OUTPUT_DIR|JOBID [--json], found '%s'",
                      argv[i]);
            return svp_status_exit_code(SVP_ERR_USAGE);
        } else {
            dir = argv[i];
        }
    }
    if (dir == NULL) {
        svp_error(
            "status: expected OUTPUT_DIR (the job's output.dir) or a Slurm JOBID");
        return svp_status_exit_code(SVP_ERR_USAGE);
    }
    if (stat(dir, &sb) != 0 && dir[0] >= '0' && dir[0] <= '9') {
        /* a Slurm job id: its script says where the outputs go */
        status = svp_launch_job_output(dir, found, sizeof(found), err, sizeof(err));
        if (status != SVP_OK) {
            svp_error("status: %s", err);
            return svp_status_exit_code(status);
        }
        dir = found;
    }
    status = svp_launch_status(stdout, dir, as_json, err, sizeof(err));
    if (status != SVP_OK) {
        svp_error("%s", err);
    }
    return svp_status_exit_code(status);
}

int main(int argc, char **argv)
{
    launch_args_t a = {0};
    svp_spec_t   *spec;
    char          err[1024];
    svp_status_t  status;

    if (argc >= 2 && !strcmp(argv[1], "status")) {
        return launch_cmd_status(argc, argv);
    }
    status = launch_parse_args(argc, argv, &a);
    if (status != SVP_OK) {
        return svp_status_exit_code(status);
    }
    if (strcmp(a.command, "render") && strcmp(a.command, "submit") &&
        strcmp(a.command, "check") && strcmp(a.command, "plan")) {
        svp_error("unknown command '%s' (render, submit, check, plan, status)",
                  a.command);
        return svp_status_exit_code(SVP_ERR_USAGE);
    }

    status = svp_spec_load(a.job, a.sets, a.num_sets, err, sizeof(err), &spec);
    if (status != SVP_OK) {
        fprintf(stderr, "%s\n", err);
        return svp_status_exit_code(status);
    }

    if (!strcmp(a.command, "plan") || !strcmp(a.command, "check") ||
        (!strcmp(a.command, "render") && spec->pipeline.stages < 0)) {
        /* check's preflight reports a bad list itself, naming file:line */
        status = launch_resolve_samples(spec, !strcmp(a.command, "check"));
        if (status != SVP_OK) {
            svp_spec_destroy(spec);
            return svp_status_exit_code(status);
        }
    } else if (spec->cluster.array[0] != '\0') {
        /* for the array's warning: the count when the list reads here (a
         * bad one is preflight's to report) */
        launch_resolve_samples(spec, 1);
    }
    svp_job_shard_set_block(&a.shard_of, spec);
    if (a.shard_of.count > 1 && spec->samples > 0) {
        /* a shard job plans for its own samples */
        spec->samples = svp_job_shard_size(&a.shard_of, spec->samples);
    }
    if (!strcmp(a.command, "render")) {
        status = launch_preflight(spec, &a);
        if (status == SVP_OK) {
            status = launch_cmd_render(spec, &a);
        }
    } else if (!strcmp(a.command, "submit")) {
        status = launch_preflight(spec, &a);
        if (status == SVP_OK) {
            status = launch_cmd_submit(spec, &a);
        }
    } else if (!strcmp(a.command, "check")) {
        status = launch_cmd_check(spec, &a);
    } else {
        status = launch_cmd_plan(spec, &a);
    }
    svp_spec_destroy(spec);
    return status == SVP_OK ? SVP_EXIT_OK : svp_status_exit_code(status);
}
