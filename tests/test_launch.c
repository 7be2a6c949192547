/*
 * Tests for launch/: the sbatch script (lines, quoting, hostile values), the
 * checked-in scripts, hardware tables and the planner's numbers.
 */
#include "common/file.h"
#include "common/util.h"
#include "plan/hardware.h"
#include "launch/launch.h"
#include "launch/launch_int.h"
#include "plan/plan.h"
#include "jobspec/spec.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A spec from YAML text; the test fails when it does not parse. */
static svp_spec_t *spec_from(const char *yaml)
{
    svp_spec_t *spec     = NULL;
    char        err[512] = "";

    cr_assert_eq(svp_spec_load_string(yaml, "job.yaml", NULL, 0, err, sizeof(err),
                                      &spec),
                 SVP_OK, "spec does not parse: %s", err);
    return spec;
}

static void set_str(char **field, const char *value)
{
    free(*field);
    *field = strdup(value);
}

static char *render(const svp_spec_t *spec, const char *const *sets, int nsets,
                    svp_status_t expect, char *err, int errlen)
{
    svp_launch_render_params_t params = {
        .spec_ref      = "/jobs/job.yaml",
        .spec_ref_kind = SVP_LAUNCH_SPEC_ABSOLUTE,
        .overrides     = sets,
        .num_overrides = nsets,
    };
    char        *script = NULL;
    svp_status_t status;

    status = svp_launch_render(spec, &params, err, errlen, &script);
    cr_assert_eq(status, expect, "render: %s (%s)", svp_status_name(status), err);
    return script;
}

static int count_lines_starting(const char *text, const char *prefix)
{
    int         n = 0;
    const char *p = text;

    while (p != NULL && *p != '\0') {
        n += !strncmp(p, prefix, strlen(prefix));
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return n;
}

static const char *full_yaml =
    "model: {kind: dummy}\n"
    "steps: 28\n"
    "device: cuda\n"
    "comm: {deadline: 100}\n"
    "cluster:\n"
    "  nodes: 2\n"
    "  ranks_per_node: 7\n"
    "  partition: gpu,gpu-long\n"
    "  account: proj_42\n"
    "  qos: high\n"
    "  time: 1-00:00:00\n"
    "  constraint: h100&nvlink\n"
    "  exclusive: true\n"
    "  job_name: svd.run-1\n"
    "  output: logs/%x-%j.out\n"
    "  error: logs/%x-%j.err\n"
    "  requeue: true\n"
    "  dependency: afterok:123:124\n"
    "  array: 0-15%4\n"
    "  mpi: pmix_v4\n"
    "  worker: /opt/svdpipe/bin/svdworker\n"
    "  container_image: nvcr.io#nvidia/pytorch:24.05-py3\n"
    "  container_mounts: [/data:/data, /scratch:/scratch:ro, /jobs:/spec]\n"
    "  container_workdir: /data/run\n"
    "  env: {UCX_TLS: 'cuda_copy,cuda_ipc,sm,self', NCCL_DEBUG: WARN}\n";

Test(render, sbatch_and_srun_lines)
{
    static const char *expected[] = {
        "#!/bin/bash\n",
        "\n#SBATCH --job-name=svd.run-1\n",
        "\n#SBATCH --nodes=2\n",
        "\n#SBATCH --ntasks-per-node=7\n",
        "\n#SBATCH --gpus-per-task=1\n",
        "\n#SBATCH --partition=gpu,gpu-long\n",
        "\n#SBATCH --account=proj_42\n",
        "\n#SBATCH --qos=high\n",
        "\n#SBATCH --time=1-00:00:00\n",
        "\n#SBATCH --constraint=h100&nvlink\n",
        "\n#SBATCH --exclusive\n",
        "\n#SBATCH --output=logs/%x-%j.out\n",
        "\n#SBATCH --error=logs/%x-%j.err\n",
        "\n#SBATCH --requeue\n#SBATCH --open-mode=append\n",
        "\n#SBATCH --dependency=afterok:123:124\n",
        "\n#SBATCH --array=0-15%4\n",
        "\nset -euo pipefail\n",
        "\nexport UCX_TLS='cuda_copy,cuda_ipc,sm,self'\n",
        "\nexport NCCL_DEBUG='WARN'\n",
        "\nsvp_spec='/jobs/job.yaml'\n",
        /* deadline 100 s + 30 s grace */
        "\nexec srun --mpi=pmix_v4 --kill-on-bad-exit=1 -W 130 \\\n"
        "    --gpus-per-task=1 --gpu-bind=per_task:1 \\\n"
        "    --container-image='nvcr.io#nvidia/pytorch:24.05-py3' "
        "--container-mounts='/data:/data,/scratch:/scratch:ro,/jobs:/spec' \\\n"
        "    --container-workdir='/data/run' \\\n"
        "    '/opt/svdpipe/bin/svdworker' '/spec/job.yaml' --set 'steps=14'\n",
    };
    static const char *sets[]   = {"steps=14"};
    svp_spec_t        *spec     = spec_from(full_yaml);
    char               err[512] = "";
    char              *script   = render(spec, sets, 1, SVP_OK, err, sizeof(err));

    for (size_t i = 0; i < SVP_ARRAY_SIZE(expected); ++i) {
        cr_expect_not_null(strstr(script, expected[i]), "missing:\n%s\nin:\n%s",
                           expected[i], script);
    }
    cr_assert_eq(count_lines_starting(script, "#SBATCH"), 16);
    /* every #SBATCH line precedes the first command */
    cr_assert_lt(strstr(script, "#SBATCH --array"), strstr(script, "set -e"));
    free(script);
    svp_spec_destroy(spec);
}

Test(render, cpu_job_binds_no_gpu)
{
    svp_spec_t *spec     = spec_from("steps: 8\ncluster: {nodes: 1, "
                                         "ranks_per_node: 4}\n");
    char        err[512] = "";
    char       *script   = render(spec, NULL, 0, SVP_OK, err, sizeof(err));

    cr_assert_null(strstr(script, "gpu"), "%s", script);
    cr_assert_not_null(strstr(script, "\n#SBATCH --ntasks-per-node=4\n"));
    /* defaults: pmix, svdworker, the spec's base name as job name */
    cr_assert_not_null(strstr(script, "\n#SBATCH --job-name=job\n"));
    cr_assert_not_null(strstr(script, "exec srun --mpi=pmix --kill-on-bad-exit=1"));
    cr_assert_not_null(strstr(script, "'svdworker' \"$svp_spec\"\n"));
    free(script);
    svp_spec_destroy(spec);
}

/* Values that must never reach an #SBATCH line: each rejected, key named. */
Test(render, hostile_sbatch_values_rejected)
{
    static const struct {
        size_t      offset;
        const char *key;
        const char *value;
    } cases[] = {
#define F(_f) offsetof(svp_spec_t, cluster._f)
        {F(partition), "cluster.partition", "gpu\n#SBATCH --x"},
        {F(partition), "cluster.partition", "$(rm -rf /)"},
        {F(partition), "cluster.partition", "gpu --x"},
        {F(partition), "cluster.partition", "gpu,"},
        {F(account), "cluster.account", "a'b"},
        {F(account), "cluster.account", "a\"b"},
        {F(qos), "cluster.qos", "`id`"},
        {F(time), "cluster.time", "tomorrow"},
        {F(time), "cluster.time", "1-00:00:00\n#SBATCH --x"},
        {F(time), "cluster.time", "10:99"},
        {F(time), "cluster.time", "1-24"},
        {F(constraint), "cluster.constraint", "h100 #x"},
        {F(job_name), "cluster.job_name", "a;b"},
        {F(output), "cluster.output", "out dir/x"},
        {F(error), "cluster.error", "x\r#SBATCH"},
        {F(dependency), "cluster.dependency", "afterok:1;rm"},
        {F(array), "cluster.array", "a-b"},
        {F(array), "cluster.array", "5-3"},
        {F(mpi), "cluster.mpi", "pmix --x"},
        {F(worker), "cluster.worker", "svdworker\nrm -rf /"},
        {F(container_image), "cluster.container_image", "img\n#SBATCH --x"},
#undef F
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        svp_spec_t *spec     = spec_from("steps: 8\n");
        char        err[512] = "", *script = NULL;
        char      **field = (char **)((char *)spec + cases[i].offset);

        set_str(field, cases[i].value);
        cr_expect_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_ERR_SPEC,
                     "accepted %s", cases[i].key);
        cr_expect_not_null(strstr(err, cases[i].key), "%s", err);
        cr_expect_null(strchr(err, '\n'), "message not escaped: %s", err);
        script = render(spec, NULL, 0, SVP_ERR_SPEC, err, sizeof(err));
        cr_expect_null(script);
        svp_spec_destroy(spec);
    }
}

Test(render, bad_env_names_and_values_rejected)
{
    static const char *names[] = {"A=B", "A B", "1X", "", "X-Y", "X\nY"};
    svp_spec_t        *spec    = spec_from("steps: 8\ncluster: {env: {OK: v}}\n");
    char               err[512];

    for (size_t i = 0; i < SVP_ARRAY_SIZE(names); ++i) {
        set_str(&spec->cluster.env.keys[0], names[i]);
        cr_expect_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_ERR_SPEC,
                     "accepted env name '%s'", names[i]);
        cr_expect_not_null(strstr(err, "cluster.env"), "%s", err);
    }
    set_str(&spec->cluster.env.keys[0], "_Ok_1");
    cr_assert_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_OK, "%s", err);
    set_str(&spec->cluster.env.values[0], "line\nline");
    cr_assert_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err, "cluster.env._Ok_1"), "%s", err);
    svp_spec_destroy(spec);
}

/*
 * Values that go through the shell: quoted, so the script parses (bash -n),
 * gains no #SBATCH line, and hands srun exactly the original strings.  A fake
 * srun first in PATH records its arguments.
 */
Test(render, quoted_values_reach_srun_unchanged)
{
    static const char *tricky[] = {
        "$(rm -rf /)",
        "it's \"quoted\" `id` \\ ; #SBATCH --x",
        "'",
        "a'\\''b",
    };
    char        dir[]    = "/tmp/svp_launch_XXXXXX", path[512], cmd[2048], *got;
    char        err[512] = "", *script;
    const char *sets[]   = {"video.inputs=['a b', \"it's\"]"};
    size_t      len;
    FILE       *f;
    svp_spec_t *spec = spec_from("steps: 8\ncluster: {env: {V0: x, V1: x, "
                                 "V2: x, V3: x}}\n");
    svp_launch_render_params_t params = {
        .spec_ref_kind = SVP_LAUNCH_SPEC_ABSOLUTE,
        .overrides     = sets,
        .num_overrides = 1,
    };

    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 4; ++i) {
        set_str(&spec->cluster.env.values[i], tricky[i]);
    }
    set_str(&spec->cluster.worker, tricky[1]);
    set_str(&spec->cluster.container_image, tricky[0]);
    spec->cluster.container_mounts.count    = 2;
    spec->cluster.container_mounts.items[0] = strdup("/a'b:/c");
    snprintf(path, sizeof(path), "%s:/spec dir", dir);
    spec->cluster.container_mounts.items[1] = strdup(path);
    set_str(&spec->cluster.container_workdir, "/c");

    /* the spec path itself may hold quotes and blanks */
    snprintf(path, sizeof(path), "%s/it's a job.yaml", dir);
    cr_assert_eq(svp_file_write_atomic(path, "x", 1), SVP_OK);
    params.spec_ref = path;
    cr_assert_eq(svp_launch_render(spec, &params, err, sizeof(err), &script), SVP_OK,
                 "%s", err);
    cr_assert_eq(count_lines_starting(script, "#SBATCH"), 3, "%s", script);

    snprintf(path, sizeof(path), "%s/job.sh", dir);
    cr_assert_eq(svp_file_write_atomic(path, script, strlen(script)), SVP_OK);
    snprintf(cmd, sizeof(cmd), "bash -n '%s'", path);
    cr_assert_eq(system(cmd), 0, "bash -n rejects:\n%s", script);

    /* fake srun: NUL-separated argv, then the four variables */
    snprintf(path, sizeof(path), "%s/srun", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "#!/bin/bash\nprintf '%%s\\0' \"$@\" \"$V0\" \"$V1\" \"$V2\" "
            "\"$V3\" > '%s/args'\n",
            dir);
    fclose(f);
    chmod(path, 0755);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && env -u SLURM_JOB_ID PATH='%s':\"$PATH\" "
             "bash job.sh",
             dir, dir);
    cr_assert_eq(system(cmd), 0, "the script failed:\n%s", script);

    snprintf(path, sizeof(path), "%s/args", dir);
    cr_assert_eq(svp_file_read_all(path, &got, &len), SVP_OK);
    {
        char        expect_mounts[512];
        const char *want[] = {
            "--mpi=pmix",
            "--kill-on-bad-exit=1",
            "-W",
            "150",
            "--container-image=$(rm -rf /)",
            expect_mounts,
            "--container-workdir=/c",
            tricky[1],
            "/spec dir/it's a job.yaml",
            "--set",
            sets[0],
            tricky[0],
            tricky[1],
            tricky[2],
            tricky[3],
        };
        const char *p = got;

        snprintf(expect_mounts, sizeof(expect_mounts),
                 "--container-mounts="
                 "/a'b:/c,%s:/spec dir",
                 dir);
        for (size_t i = 0; i < SVP_ARRAY_SIZE(want); ++i) {
            cr_assert_lt((size_t)(p - got), len, "argument %zu missing", i);
            cr_assert_str_eq(p, want[i], "argument %zu", i);
            p += strlen(p) + 1;
        }
        cr_assert_eq((size_t)(p - got), len, "extra arguments");
    }
    free(got);
    free(script);
    svp_spec_destroy(spec);
    cr_assert_eq(svp_rmtree(dir), SVP_OK);
}

Test(render, control_characters_in_overrides_rejected)
{
    const char *sets[]   = {"steps=8\n#SBATCH --x"};
    svp_spec_t *spec     = spec_from("steps: 8\n");
    char        err[512] = "";

    cr_assert_null(render(spec, sets, 1, SVP_ERR_SPEC, err, sizeof(err)));
    cr_assert_not_null(strstr(err, "--set"), "%s", err);
    svp_spec_destroy(spec);
}

Test(launch, slurm_time_formats)
{
    static const struct {
        const char *text;
        long        seconds; /* -2: rejected */
    } cases[] = {
        {"30", 1800},       {"30:15", 1815},
        {"01:00:00", 3600}, {"1-00:00:00", 86400},
        {"2-12", 216000},   {"1-2:30", 95400},
        {"UNLIMITED", -1},  {"INFINITE", -1},
        {"tomorrow", -2},   {"", -2},
        {"1:2:3:4", -2},    {"10:60", -2},
        {"1-24:00:00", -2}, {"-5", -2},
        {"1-", -2},         {"5 ", -2},
        {"1h", -2},         {"999999999999999999999", -2},
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        long         secs   = -3;
        svp_status_t status = svp_launch_time_parse(cases[i].text, &secs);

        if (cases[i].seconds == -2) {
            cr_expect_neq(status, SVP_OK, "accepted '%s'", cases[i].text);
        } else {
            cr_expect_eq(status, SVP_OK, "rejected '%s'", cases[i].text);
            cr_expect_eq(secs, cases[i].seconds, "'%s' -> %ld", cases[i].text, secs);
        }
    }
}

Test(launch, relative_paths)
{
    char dir[] = "/tmp/svp_rel_XXXXXX", a[512], b[512], *rel;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(a, sizeof(a), "%s/slurm", dir);
    snprintf(b, sizeof(b), "%s/etc", dir);
    cr_assert_eq(svp_mkdir_p(a, 0755), SVP_OK);
    cr_assert_eq(svp_mkdir_p(b, 0755), SVP_OK);
    snprintf(b, sizeof(b), "%s/etc/job.yaml", dir);
    cr_assert_eq(svp_file_write_atomic(b, "x", 1), SVP_OK);

    cr_assert_eq(svp_launch_relpath(a, b, &rel), SVP_OK);
    cr_assert_str_eq(rel, "../etc/job.yaml");
    free(rel);
    cr_assert_eq(svp_launch_relpath(dir, b, &rel), SVP_OK);
    cr_assert_str_eq(rel, "etc/job.yaml");
    free(rel);
    cr_assert_eq(svp_launch_relpath("/", b, &rel), SVP_OK);
    cr_assert_str_eq(rel, b + 1);
    free(rel);
    cr_assert_eq(svp_launch_relpath(a, "/no/such/file", &rel), SVP_ERR_NOT_FOUND);
    cr_assert_eq(svp_rmtree(dir), SVP_OK);
}

Test(check, steps_must_divide_over_the_ranks)
{
    svp_spec_t *spec     = spec_from("steps: 25\ncluster: {nodes: 1, "
                                         "ranks_per_node: 7}\n");
    char        err[512] = "";

    cr_assert_eq(svp_launch_check(spec, err, sizeof(err)), SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err, "steps=28"), "%s", err);
    cr_assert_not_null(strstr(err, "ranks_per_node=7"), "%s", err);
    spec->steps = 28;
    cr_assert_eq(svp_launch_check(spec, err, sizeof(err)), SVP_OK, "%s", err);
    svp_spec_destroy(spec);
}

/*
 * comm.deadline against the hand-off gaps: the fill no longer counts (rank 3
 * of 4 waits 2.4 s for its first input with 400 ms steps, more than a 2 s
 * deadline, and the job handles it); a gap of one stage plus the encode does,
 * as the schedule places them, for any G x S x C.
 */
Test(check, deadline_against_handoff_gaps)
{
    svp_spec_t      *spec = spec_from("steps: 8\nmodel: {dummy: {cost: sleep, "
                                           "step_ms: 400, encode_ms: 300}}\n"
                                           "comm: {deadline: 2}\n"
                                           "pipeline: {placement: ends}\n"
                                           "cluster: {nodes: 1, ranks_per_node: 4}\n");
    svp_plan_costs_t costs;
    char             msg[512] = "";

    cr_assert_eq(svp_plan_costs_from_spec(spec, NULL, msg, sizeof(msg), &costs),
                 SVP_OK, "%s", msg);
    /* 2 steps of 0.4 s and the encode of 0.3 s */
    cr_assert_float_eq(svp_plan_handoff_gap(spec, &costs), 1.1, 1e-9);
    cr_assert_eq(svp_plan_deadline_warning(spec, &costs, msg, sizeof(msg)), 0, "%s",
                 msg);
    spec->comm.deadline = 1.0;
    cr_assert_eq(svp_plan_deadline_warning(spec, &costs, msg, sizeof(msg)), 1);
    cr_assert_not_null(strstr(msg, "comm.deadline (1 s) is shorter than the longest "
                                   "expected gap between hand-offs (1.1 s"),
                       "%s", msg);
    /* spread: one rank may encode and decode the same sample */
    spec->pipeline.placement    = SVP_PLACEMENT_SPREAD;
    spec->model.dummy.decode_ms = 500;
    cr_assert_eq(svp_plan_costs_from_spec(spec, NULL, msg, sizeof(msg), &costs),
                 SVP_OK, "%s", msg);
    cr_assert_float_eq(svp_plan_handoff_gap(spec, &costs), 1.6, 1e-9);
    /* 2 pipelines of 2 stages (G = 2): 4 steps a stage, not 8 / 4; the last
     * rank's decode the longest */
    spec->pipeline.stages    = 2;
    spec->pipeline.placement = SVP_PLACEMENT_ENDS;
    cr_assert_float_eq(svp_plan_handoff_gap(spec, &costs), 4 * 0.4 + 0.5, 1e-9);
    spec->comm.deadline = 1.5;
    cr_assert_eq(svp_plan_deadline_warning(spec, &costs, msg, sizeof(msg)), 1);
    cr_assert_not_null(strstr(msg, "(2.1 s: 4 steps of 0.4 s"), "%s", msg);
    /* pairs (S = 2, C = 2): a lane's half of each of its 4 steps; the last
     * position's shared finish, half the decode each */
    spec->pipeline.guidance_parallel = 2;
    cr_assert_float_eq(svp_plan_handoff_gap(spec, &costs), 0.3 + 4 * 0.2, 1e-9);
    spec->model.dummy.decode_ms = 1200;
    cr_assert_eq(svp_plan_costs_from_spec(spec, NULL, msg, sizeof(msg), &costs),
                 SVP_OK, "%s", msg);
    cr_assert_float_eq(svp_plan_handoff_gap(spec, &costs), 4 * 0.2 + 0.6, 1e-9);
    svp_spec_destroy(spec);
}

/* The checked-in scripts are exactly what their specs render today. */
Test(render, checked_in_scripts_up_to_date)
{
    static const char *jobs[] = {"svd_7gpu", "sim_4rank"};
    const char        *top    = getenv("SVP_TOP_SRCDIR");

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    for (size_t i = 0; i < SVP_ARRAY_SIZE(jobs); ++i) {
        char        spec_path[1024], script_path[1024], slurm_dir[1024];
        char        err[512] = "", *rel, *script, *on_disk;
        size_t      len;
        svp_spec_t *spec                  = NULL;
        svp_launch_render_params_t params = {
            .spec_ref_kind = SVP_LAUNCH_SPEC_SCRIPT_RELATIVE,
        };

        snprintf(spec_path, sizeof(spec_path), "%s/etc/%s.yaml", top, jobs[i]);
        snprintf(script_path, sizeof(script_path), "%s/slurm/%s.sh", top, jobs[i]);
        snprintf(slurm_dir, sizeof(slurm_dir), "%s/slurm", top);
        cr_assert_eq(svp_spec_load(spec_path, NULL, 0, err, sizeof(err), &spec),
                     SVP_OK, "%s", err);
        cr_assert_eq(svp_launch_check(spec, err, sizeof(err)), SVP_OK, "%s", err);
        cr_assert_eq(svp_launch_relpath(slurm_dir, spec_path, &rel), SVP_OK);
        snprintf(script_path, sizeof(script_path), "../etc/%s.yaml", jobs[i]);
        cr_assert_str_eq(rel, script_path);
        snprintf(script_path, sizeof(script_path), "%s/slurm/%s.sh", top, jobs[i]);
        params.spec_ref = rel;
        cr_assert_eq(svp_launch_render(spec, &params, err, sizeof(err), &script),
                     SVP_OK, "%s", err);
        cr_assert_eq(svp_file_read_all(script_path, &on_disk, &len), SVP_OK);
        cr_expect_str_eq(on_disk, script,
                         "slurm/%s.sh is stale: run `make "
                         "render-slurm`",
                         jobs[i]);
        cr_expect_eq(access(script_path, X_OK), 0, "slurm/%s.sh not executable",
                     jobs[i]);
        free(on_disk);
        free(script);
        free(rel);
        svp_spec_destroy(spec);
    }
}

/* ---- the planner ------------------------------------------------------- */

/*
 * Times below are sums of a few doubles: equal to the hand-computed values
 * up to rounding, 1e-12 s.
 */
#define PLAN_EPS 1e-12

static svp_plan_result_t *plan(int world, int rpn, int steps, int samples,
                               svp_placement_t placement, double step_s,
                               double encode_s, double decode_s, double latency_s)
{
    svp_plan_params_t p = {
        .world          = world,
        .ranks_per_node = rpn,
        .steps          = steps,
        .samples        = samples,
        .placement      = placement,
        .message_bytes  = 1e6,
        .costs          = {.step_s    = step_s,
                           .encode_s  = encode_s,
                           .decode_s  = decode_s,
                           .latency_s = latency_s},
    };
    svp_plan_result_t *res = NULL;

    cr_assert_eq(svp_plan_run(&p, &res), SVP_OK);
    return res;
}

/*
 * W=2, T=4, N=3, step 10 ms, decode 20 ms, no encode, free links.
 * ends: rank 0 runs 2 steps (20 ms) per sample, rank 1 2 steps + decode
 * (40 ms): the first sample leaves at 60 ms, the next two 40 ms apart:
 * 60 + 2 x 40 = 140 ms.  Busy 60 + 120 of 2 x 140: bubble 100/280.
 */
Test(plan, hand_computed_ends)
{
    svp_plan_result_t *r = plan(2, 2, 4, 3, SVP_PLACEMENT_ENDS, 0.010, 0, 0.020, 0);

    cr_assert_float_eq(r->makespan_s, 0.140, PLAN_EPS);
    cr_assert_float_eq(r->fill_s, 0.060, PLAN_EPS);
    cr_assert_float_eq(r->bottleneck_s, 0.040, PLAN_EPS);
    cr_assert_eq(r->bottleneck_rank, 1);
    cr_assert_float_eq(r->closed_form_s, 0.140, PLAN_EPS);
    cr_assert_float_eq(r->bubble, 100.0 / 280.0, PLAN_EPS);
    cr_assert_float_eq(r->samples_per_s, 3 / 0.140, 1e-9);
    cr_assert_eq(r->ranks[0].steps, 6);
    cr_assert_eq(r->ranks[1].decodes, 3);
    cr_assert_eq(r->ranks[0].decodes, 0);
    cr_assert_eq(r->link_msgs[0 * 2 + 1], 3);
    cr_assert_eq(r->link_msgs[1 * 2 + 0], 0);
    svp_plan_result_destroy(r);

    /* a 5 ms hop between the ranks delays the fill once: 145 ms */
    r = plan(2, 2, 4, 3, SVP_PLACEMENT_ENDS, 0.010, 0, 0.020, 0.005);
    cr_assert_float_eq(r->makespan_s, 0.145, PLAN_EPS);
    cr_assert_float_eq(r->link_s[0 * 2 + 1], 3 * 0.005, PLAN_EPS);
    svp_plan_result_destroy(r);

    /* a 7 ms link setup delays the first sample only: 147 ms */
    {
        svp_plan_params_t p = {
            .world          = 2,
            .ranks_per_node = 2,
            .steps          = 4,
            .samples        = 3,
            .placement      = SVP_PLACEMENT_ENDS,
            .costs = {.step_s = 0.010, .decode_s = 0.020, .link_setup_s = 0.007},
        };

        cr_assert_eq(svp_plan_run(&p, &r), SVP_OK);
        cr_assert_float_eq(r->makespan_s, 0.147, PLAN_EPS);
        cr_assert_float_eq(r->fill_s, 0.067, PLAN_EPS);
        cr_assert_float_eq(r->link_s[0 * 2 + 1], 0.007, PLAN_EPS);
        svp_plan_result_destroy(r);
    }
}

/*
 * Same job, placement spread: samples 0 and 2 are encoded and decoded on
 * rank 0, sample 1 on rank 1, in the worker's order (a final latent is
 * finished one sample after it left).  By hand (ms): r0 s0 [0,20] | r1 s0
 * [20,40], r0 s1 [20,40] | r1 s1 [40,60], r0 s2 [40,60] | r0 dec0 [60,80],
 * r1 dec1 [60,80] | r1 s2 [80,100] | r0 dec2 [100,120].
 */
Test(plan, hand_computed_spread)
{
    svp_plan_result_t *r =
        plan(2, 2, 4, 3, SVP_PLACEMENT_SPREAD, 0.010, 0, 0.020, 0);

    cr_assert_float_eq(r->makespan_s, 0.120, PLAN_EPS);
    cr_assert_float_eq(r->ranks[0].busy_s, 0.100, PLAN_EPS);
    cr_assert_float_eq(r->ranks[1].busy_s, 0.080, PLAN_EPS);
    cr_assert_eq(r->ranks[0].decodes, 2);
    cr_assert_eq(r->ranks[1].decodes, 1);
    /* samples 0 and 2 go back; sample 1 comes to rank 0 encoded */
    cr_assert_eq(r->link_msgs[1 * 2 + 0], 3);
    svp_plan_result_destroy(r);
}

/*
 * Spread placement spreads the encodes as well as the decodes: sample i is
 * encoded and decoded on rank i mod W.  W=2, 2 steps of 10 ms per rank,
 * encode 5 ms, decode 20 ms, N=2, free links.  Rank 0: e0 [0,5] s0 [5,25]
 * s1 [25,45] d0 [45,65]; rank 1: e1 [0,5] s0 [25,45] s1 [45,65] d1 [65,85].
 */
Test(plan, spread_spreads_encodes)
{
    svp_plan_result_t *r =
        plan(2, 2, 4, 2, SVP_PLACEMENT_SPREAD, 0.010, 0.005, 0.020, 0);

    cr_assert_float_eq(r->makespan_s, 0.085, PLAN_EPS);
    cr_assert_eq(r->ranks[0].encodes, 1);
    cr_assert_eq(r->ranks[1].encodes, 1);
    cr_assert_eq(r->ranks[0].decodes, 1);
    cr_assert_eq(r->ranks[1].decodes, 1);
    svp_plan_result_destroy(r);
}

/* For placement ends the simulation is the flow shop's closed form. */
Test(plan, ends_matches_closed_form)
{
    for (int w = 1; w <= 6; ++w) {
        for (int n = 1; n <= 9; n += 4) {
            double enc = 0.003 * w, dec = 0.011, step = 0.002, lat = 0.0001;
            svp_plan_result_t *r =
                plan(w, 4, 12 * w, n, SVP_PLACEMENT_ENDS, step, enc, dec, lat);
            double s_first = 12 * step + enc, s_last = 12 * step + dec;
            double s_max =
                w == 1 ? 12 * w * step + enc + dec : fmax(s_first, s_last);
            /* free bandwidth: a hop costs its latency */
            double expect =
                12 * w * step + enc + dec + (w - 1) * lat + (n - 1) * s_max;

            cr_expect_float_eq(r->makespan_s, expect, 1e-9,
                               "W=%d N=%d: %.9f "
                               "vs %.9f",
                               w, n, r->makespan_s, expect);
            cr_expect_float_eq(r->makespan_s, r->closed_form_s, 1e-9);
            svp_plan_result_destroy(r);
        }
    }
}

/* One GPU runs everything back to back: no bubble, N x (T t + e + d). */
Test(plan, single_gpu)
{
    svp_plan_result_t *r =
        plan(1, 1, 25, 4, SVP_PLACEMENT_ENDS, 0.8, 0.15, 3.4, 0.001);

    cr_assert_float_eq(r->makespan_s, 4 * (25 * 0.8 + 0.15 + 3.4), 1e-9);
    cr_assert_float_eq(r->bubble, 0, 1e-12);
    svp_plan_result_destroy(r);
}

Test(plan, rejects_bad_parameters)
{
    svp_plan_params_t  p = {.world          = 3,
                            .ranks_per_node = 1,
                            .steps          = 8,
                            .samples        = 1};
    svp_plan_result_t *r = NULL;

    cr_assert_eq(svp_plan_run(&p, &r), SVP_ERR_INVALID_PARAM);
    p.steps   = 9;
    p.samples = 0;
    cr_assert_eq(svp_plan_run(&p, &r), SVP_ERR_INVALID_PARAM);
    cr_assert_null(r);
}

/*
 * SVD-XT production (25 frames, 576x1024, fp16): the message is the latent
 * [25,4,72,128] + image latents [4,72,128] + embeddings [1,1024] + time ids
 * [3], 2 bytes each.  Weights: the checkpoint's fp16 tensor bytes.  UNet
 * activations: the arena's plan of a CFG batch of 2 x 25 frames (a dry run
 * of the forward; tests/test_unet.c checks such a plan against a real
 * forward's arena), fp32 whatever the dtype.  It holds at least the 12 skip
 * tensors alive across the mid block (746,496,000 elements), and less than
 * those plus every buffer of the level-0 transformer at once.
 */
Test(plan, svd_message_and_memory)
{
    svp_spec_t        *spec = spec_from("model: {kind: svd, path: m}\nsteps: 28\n"
                                               "dtype: f16\ndevice: cuda\n"
                                               "pipeline: {placement: ends}\n"
                                               "video: {decode_chunk_size: 2}\n"
                                               "cluster: {ranks_per_node: 7}\n");
    svp_plan_message_t msg;
    svp_plan_memory_t  m0, m3, m6;
    /* activations and latents are f32 in every dtype; weights follow it,
     * plus, on CUDA, the 16-bit copy of a product's operand (64 Mi
     * elements at most) */
    double widen   = 64.0 * 1048576 * 2;
    size_t planned = 0;
    double unet_act;

    cr_assert_eq(svp_unet_plan_bytes(svp_plan_svd_xt_unet(), 2, 25, 72, 128, 1,
                                     &planned),
                 SVP_OK);
    unet_act = (double)planned;
    cr_assert_geq(unet_act, 746496000.0 * 4);
    cr_assert_leq(unet_act, (746496000.0 + 50.0 * 9216 * 320 * 24) * 4);
    cr_log_info("svd-xt unet call: %.3f GB of activations planned", unet_act / 1e9);

    svp_plan_message(spec, &msg);
    cr_assert_float_eq(msg.latent, 25.0 * 4 * 72 * 128 * 4, 0.5);
    cr_assert_float_eq(msg.total, (1843200.0 + 73728 + 2048 + 6) * 2, 0.5);

    svp_plan_memory(spec, 7, 0, SVP_PLACEMENT_ENDS, &m0);
    svp_plan_memory(spec, 7, 3, SVP_PLACEMENT_ENDS, &m3);
    svp_plan_memory(spec, 7, 6, SVP_PLACEMENT_ENDS, &m6);
    cr_assert_float_eq(m3.weights, 3049246164.0 + widen, 0.5);
    cr_assert_float_eq(m0.weights, 3049246164.0 + 1264153600 + 68327328 + widen,
                       0.5);
    cr_assert_float_eq(m6.weights, 3049246164.0 + 127158366 + widen, 0.5);
    /* decode of 2 frames at a time is below one UNet call */
    cr_assert_float_eq(m3.activations, unet_act, 0.5);
    cr_assert_float_eq(m6.activations, unet_act, 0.5);
    /* two messages per sample in flight (comm.inflight 2, in and out) */
    cr_assert_float_eq(m3.buffers, 4 * msg.total, 0.5);
    svp_spec_destroy(spec);

    /* on the CPU, 16-bit weights are widened: one f32 buffer of the
     * largest weight (2560 -> 1280 3x3) instead */
    spec = spec_from("model: {kind: svd, path: m}\nsteps: 28\ndtype: bf16\n"
                     "device: cpu\npipeline: {placement: ends}\n"
                     "cluster: {ranks_per_node: 7}\n");
    svp_plan_memory(spec, 7, 3, SVP_PLACEMENT_ENDS, &m3);
    cr_assert_float_eq(m3.weights, 3049246164.0 + 1280.0 * 2560 * 9 * 4, 0.5);
    svp_spec_destroy(spec);
}

/*
 * The planner's default UNet is SVD-XT's config as checked in, and a model
 * folder whose unet/config.json can be read is planned for its own UNet.
 */
Test(plan, unet_activations_follow_the_model)
{
    const char       *top = getenv("SVP_TOP_SRCDIR");
    char              path[1024], yaml[1400];
    svp_unet_config_t cfg;
    svp_spec_t       *spec;
    size_t            mini = 0, xt = 0;

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    snprintf(path, sizeof(path), "%s/etc/models/svd-xt/unet/config.json", top);
    cr_assert_eq(svp_unet_config_load(path, &cfg), SVP_OK);
    cr_assert_eq(memcmp(&cfg, svp_plan_svd_xt_unet(), sizeof(cfg)), 0,
                 "the planner's SVD-XT UNet differs from %s", path);

    snprintf(path, sizeof(path), "%s/etc/models/svd-mini/unet/config.json", top);
    cr_assert_eq(svp_unet_config_load(path, &cfg), SVP_OK);
    snprintf(yaml, sizeof(yaml),
             "model: {kind: svd, path: '%s/etc/models/"
             "svd-mini'}\nsteps: 28\nvideo: {num_frames: 6, width: 128, "
             "height: 64, max_guidance: 1.0, min_guidance: 1.0}\n",
             top);
    spec = spec_from(yaml);
    cr_assert_eq(svp_unet_plan_bytes(&cfg, 1, 6, 8, 16, 1, &mini), SVP_OK);
    cr_assert_eq(svp_unet_plan_bytes(svp_plan_svd_xt_unet(), 1, 6, 8, 16, 1, &xt),
                 SVP_OK);
    cr_assert_neq(mini, xt);
    cr_assert_float_eq(svp_plan_unet_activations(spec, 1), (double)mini, 0.5);
    svp_spec_destroy(spec);
}

/*
 * The VAE's figures come from its own plans (SVD-XT's VAE by default, as
 * checked in), and the decode, which grows with decode_chunk_size, is what
 * the last rank needs when it is larger than a UNet call.
 */
Test(plan, vae_activations_follow_the_chunk)
{
    const char       *top = getenv("SVP_TOP_SRCDIR");
    char              path[1024];
    svp_vae_config_t  cfg;
    svp_spec_t       *spec;
    svp_plan_memory_t m6;
    size_t            dec25 = 0, enc = 0;

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    snprintf(path, sizeof(path), "%s/etc/models/svd-xt/vae/config.json", top);
    cr_assert_eq(svp_vae_config_load(path, &cfg), SVP_OK);
    cr_assert_eq(memcmp(&cfg, svp_plan_svd_xt_vae(), sizeof(cfg)), 0,
                 "the planner's SVD-XT VAE differs from %s", path);

    spec = spec_from("model: {kind: svd, path: m}\nsteps: 28\n"
                     "pipeline: {placement: ends}\n"
                     "video: {decode_chunk_size: 25}\n"
                     "cluster: {ranks_per_node: 7}\n");
    cr_assert_eq(svp_vae_plan_bytes(&cfg, 1, 25, 72, 128, 25, &dec25), SVP_OK);
    cr_assert_eq(svp_vae_plan_bytes(&cfg, 0, 1, 576, 1024, 0, &enc), SVP_OK);
    cr_assert_float_eq(svp_plan_vae_activations(spec, 1), (double)dec25, 0.5);
    cr_assert_float_eq(svp_plan_vae_activations(spec, 0), (double)enc, 0.5);
    /* at least the input and output of the last 128-channel convolution */
    cr_assert_geq((double)dec25, 2.0 * 25 * 128 * 576 * 1024 * 4);
    svp_plan_memory(spec, 7, 6, SVP_PLACEMENT_ENDS, &m6);
    cr_assert_gt((double)dec25, svp_plan_unet_activations(spec, 2));
    cr_assert_float_eq(m6.activations, (double)dec25, 0.5);
    cr_log_info("svd-xt vae: decode of 25 frames at once %.2f GB, encode "
                "%.2f GB",
                dec25 / 1e9, enc / 1e9);
    svp_spec_destroy(spec);
}

Test(plan, costs_scale_from_the_hardware_reference)
{
    svp_spec_t      *spec = spec_from("model: {kind: svd, path: m}\nsteps: 28\n"
                                           "video: {num_frames: 14, width: 512, "
                                           "height: 288, max_guidance: 1.0, "
                                           "min_guidance: 1.0}\n");
    svp_hw_t         hw   = {.file = "h.yaml",
                             .name = "h",
                             .svd = {2, 25, 576, 1024, 0.8, 0.16, 3.4, .dtype = SVP_DTYPE_F32},
                             .intra_node_gbps = 300,
                             .inter_node_gbps = 25,
                             .latency_us      = 10};
    svp_plan_costs_t c;
    char             err[512] = "";

    cr_assert_eq(svp_plan_costs_from_spec(spec, &hw, err, sizeof(err), &c), SVP_OK,
                 "%s", err);
    /* no guidance: batch 1; 14/25 frames; a quarter of the pixels */
    cr_assert_float_eq(c.step_s, 0.8 * 0.5 * 14 / 25 * 0.25, 1e-12);
    cr_assert_float_eq(c.encode_s, 0.16 * 0.25, 1e-12);
    cr_assert_float_eq(c.decode_s, 3.4 * 14 / 25 * 0.25, 1e-12);
    cr_assert_float_eq(c.latency_s, 10e-6, 1e-15);

    hw.svd.unet_step_s = 0;
    cr_assert_eq(svp_plan_costs_from_spec(spec, &hw, err, sizeof(err), &c),
                 SVP_ERR_UNSUPPORTED);
    svp_spec_destroy(spec);

    /* the dummy model's sleep times are taken as they are */
    spec = spec_from("model: {kind: dummy, dummy: {cost: sleep, step_ms: 7, "
                     "encode_ms: 3, decode_ms: 11}}\n");
    cr_assert_eq(svp_plan_costs_from_spec(spec, NULL, err, sizeof(err), &c), SVP_OK);
    cr_assert_float_eq(c.step_s, 0.007, 1e-15);
    cr_assert_float_eq(c.encode_s, 0.003, 1e-15);
    cr_assert_float_eq(c.decode_s, 0.011, 1e-15);
    cr_assert_float_eq(c.intra_node_gbps, 0, 0);
    spec->model.dummy.cost = SVP_DUMMY_COST_COMPUTE;
    cr_assert_eq(svp_plan_costs_from_spec(spec, NULL, err, sizeof(err), &c),
                 SVP_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(err, "model.dummy.cost"), "%s", err);
    svp_spec_destroy(spec);
}

Test(plan, costs_from_a_log)
{
    char        dir[] = "/tmp/svp_log_XXXXXX", path[256], err[256] = "";
    const char *log =
        "2026-11-22T06:31:14.123Z n1:r0 info  pipe: svp-cost kind=step s=0.010\n"
        "unrelated line\n"
        "n1:r1 svp-cost kind=step sample=1 s=0.030\n"
        "n1:r1 svp-cost kind=decode s=0.5\n"
        "2026-11-22T06:31:15.000Z n1:r0 debug pipe: sample 0 step 1/8 40.0 ms\n";
    svp_plan_costs_t c = {.step_s = 9, .encode_s = 7, .decode_s = 9};

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/run.log", dir);
    cr_assert_eq(svp_file_write_atomic(path, log, strlen(log)), SVP_OK);
    cr_assert_eq(svp_plan_costs_from_log(path, err, sizeof(err), &c), SVP_OK, "%s",
                 err);
    cr_assert_float_eq(c.step_s, (0.010 + 0.030 + 0.040) / 3, 1e-12);
    cr_assert_float_eq(c.decode_s, 0.5, 1e-12);
    cr_assert_float_eq(c.encode_s, 7, 0); /* not measured: kept */

    log = "ok\nsvp-cost kind=stpe s=1\n";
    cr_assert_eq(svp_file_write_atomic(path, log, strlen(log)), SVP_OK);
    cr_assert_eq(svp_plan_costs_from_log(path, err, sizeof(err), &c),
                 SVP_ERR_BAD_FILE);
    cr_assert_not_null(strstr(err, "run.log:2:"), "%s", err);
    cr_assert_eq(svp_rmtree(dir), SVP_OK);
}

/* ---- hardware tables --------------------------------------------------- */

Test(hardware, reads_a_table)
{
    svp_hw_t *hw       = NULL;
    char      err[512] = "";

    cr_assert_eq(
        svp_hw_load_string(
            "name: h100\nmemory_gb: 80\n"
            "svd:\n  reference: {batch: 2, frames: 25, height: 576, width: 1024}\n"
            "  unet_step_s: 0.8\n  encode_s: 0.15\n  decode_s: 3.4\n  dtype: bf16\n"
            "links: {intra_node_gbps: 300, inter_node_gbps: 25, latency_us: 10}\n",
            "h.yaml", err, sizeof(err), &hw),
        SVP_OK, "%s", err);
    cr_assert_str_eq(hw->name, "h100");
    /* the dtype as the tensor layer's enum, never a string to compare */
    cr_assert_eq(hw->svd.dtype, SVP_DTYPE_BF16);
    cr_assert_eq(hw->svd.frames, 25);
    cr_assert_float_eq(hw->svd.decode_s, 3.4, 1e-15);
    cr_assert_float_eq(hw->intra_node_gbps, 300, 0);
    svp_hw_destroy(hw);
}

Test(hardware, errors_name_line_column_key_expected_found)
{
    static const struct {
        const char *yaml;
        const char *message;
    } cases[] = {
        {"name: x\nlinks: {intra_node_gbps: fast, inter_node_gbps: 1, "
         "latency_us: 1}\n",
         "h.yaml:2:26: key 'links.intra_node_gbps': expected a number in "
         "[1e-06, 1e+06], found 'fast'"},
        {"name: x\nlinks:\n  intra_node_gbps: 1\n  inter_node_gbps: 1\n"
         "  latncy_us: 1\n",
         "h.yaml:5:3: unknown key 'links.latncy_us' (did you mean "
         "'links.latency_us'?)"},
        {"name: x\nsvd: {reference: {frames: 2.5}}\nlinks: {intra_node_gbps: "
         "1, inter_node_gbps: 1, latency_us: 1}\n",
         "h.yaml:2:27: key 'svd.reference.frames': expected an integer in "
         "[1, 1024], found '2.5'"},
        {"name: x\nlinks: {intra_node_gbps: 1, inter_node_gbps: 1}\n",
         "key 'links.latency_us': expected a value, found nothing"},
        {"name: x\nlinks: [1, 2]\n",
         "h.yaml:2:8: key 'links': expected a mapping (a section), found a list"},
        {"name: x\nmemory_gb: -1\nlinks: {intra_node_gbps: 1, "
         "inter_node_gbps: 1, latency_us: 1}\n",
         "h.yaml:2:12: key 'memory_gb': expected a number in [0, 1e+06], "
         "found '-1'"},
        {"name: x\nsvd: {dtype: f8}\nlinks: {intra_node_gbps: 1, "
         "inter_node_gbps: 1, latency_us: 1}\n",
         "h.yaml:2:14: key 'svd.dtype': expected one of f32, f16, bf16, "
         "found 'f8'"},
        {"name: x\nlinks: {intra_node_gbps: 1, inter_node_gbps: 1, "
         "latency_us: 1, source: guessed}\n",
         "h.yaml:2:72: key 'links.source': expected one of measured, quoted, "
         "found 'guessed'"},
        {"name: [x\n", "h.yaml:2:1:"},
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        svp_hw_t *hw       = NULL;
        char      err[512] = "";

        cr_expect_eq(svp_hw_load_string(cases[i].yaml, "h.yaml", err, sizeof(err),
                                        &hw),
                     SVP_ERR_BAD_FILE, "case %zu accepted", i);
        cr_expect_null(hw);
        cr_expect_not_null(strstr(err, cases[i].message), "case %zu: '%s'", i, err);
    }
}

/* The tables shipped in etc/hardware/ all read. */
Test(hardware, shipped_tables_read)
{
    static const char *names[] = {"h100", "h200", "cpu-sim"};
    const char        *top     = getenv("SVP_TOP_SRCDIR");

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    for (size_t i = 0; i < SVP_ARRAY_SIZE(names); ++i) {
        char      path[1024], err[512] = "";
        svp_hw_t *hw = NULL;

        snprintf(path, sizeof(path), "%s/etc/hardware/%s.yaml", top, names[i]);
        cr_expect_eq(svp_hw_load(path, err, sizeof(err), &hw), SVP_OK, "%s", err);
        cr_expect_str_eq(hw ? hw->name : "", names[i]);
        /* every table says whether its figures are measured or quoted */
        cr_expect(hw == NULL || hw->links_source != NULL, "%s: links.source missing",
                  path);
        cr_expect(hw == NULL || hw->svd.unet_step_s == 0 || hw->svd.source != NULL,
                  "%s: svd.source missing", path);
        svp_hw_destroy(hw);
    }
}

/*
 * A results file (bench/gpu-check.sh writes one) overlays its measured
 * figures on a table; the plan uses them and says so.
 */
Test(hardware, measured_results_replace_quoted_figures)
{
    static const char table[] =
        "name: h100\nmemory_gb: 80\n"
        "svd:\n  reference: {batch: 2, frames: 25, height: 576, width: 1024}\n"
        "  unet_step_s: 0.8\n  encode_s: 0.15\n  decode_s: 3.4\n"
        "  source: quoted\n  dtype: f16\n"
        "links: {intra_node_gbps: 300, inter_node_gbps: 25, latency_us: 10, "
        "source: quoted}\n";
    static const char results[] =
        "# measured\nmemory_gb: 79.6\n"
        "svd:\n  source: measured\n  dtype: bf16\n"
        "  reference: {batch: 2, frames: 25, height: 288, width: 512}\n"
        "  unet_step_s: 0.1\n";
    char             dir[] = "/tmp/svp_meas_XXXXXX", path[512], err[512] = "";
    svp_hw_t        *hw = NULL;
    svp_spec_t      *spec;
    svp_plan_costs_t c;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/gpu.yaml", dir);
    cr_assert_eq(svp_hw_load_string(table, "h.yaml", err, sizeof(err), &hw), SVP_OK,
                 "%s", err);
    cr_assert_str_eq(hw->svd.source, "quoted");

    cr_assert_eq(svp_file_write_atomic(path, results, strlen(results)), SVP_OK);
    cr_assert_eq(svp_hw_overlay_measured(hw, path, err, sizeof(err)), SVP_OK, "%s",
                 err);
    cr_assert_float_eq(hw->svd.unet_step_s, 0.1, 1e-15);
    cr_assert_eq(hw->svd.height, 288);
    cr_assert_float_eq(hw->memory_gb, 79.6, 1e-12);
    cr_assert_str_eq(hw->svd.source, "measured");
    cr_assert_eq(hw->svd.dtype, SVP_DTYPE_BF16);
    cr_assert_str_eq(hw->links_source, "quoted"); /* not in the file */
    cr_assert_float_eq(hw->intra_node_gbps, 300, 0);
    /* the table's encode/decode, moved to the new reference (1/4 pixels) */
    cr_assert_float_eq(hw->svd.encode_s, 0.15 / 4, 1e-12);
    cr_assert_float_eq(hw->svd.decode_s, 3.4 / 4, 1e-12);

    spec = spec_from("model: {kind: svd, path: m}\nsteps: 28\ndtype: bf16\n"
                     "video: {num_frames: 25, width: 1024, height: 576}\n");
    cr_assert_eq(svp_plan_costs_from_spec(spec, hw, err, sizeof(err), &c), SVP_OK,
                 "%s", err);
    cr_assert_float_eq(c.step_s, 0.4, 1e-12); /* 4x the pixels */
    cr_assert_float_eq(c.decode_s, 3.4, 1e-12);
    cr_assert(strstr(c.source, "measured in ") != NULL, "%s", c.source);
    cr_assert(strstr(c.source, path) != NULL, "%s", c.source);
    svp_spec_destroy(spec);

    /* a results file that calls its figures quoted is refused */
    cr_assert_eq(svp_file_write_atomic(
                     path,
                     "svd:\n  source: quoted\n"
                     "  reference: {batch: 1, frames: 1, height: 64, width: 64}\n"
                     "  unet_step_s: 1\n",
                     97),
                 SVP_OK);
    cr_assert_eq(svp_hw_overlay_measured(hw, path, err, sizeof(err)),
                 SVP_ERR_BAD_FILE);
    cr_assert(strstr(err, "svd.source: expected measured") != NULL, "%s", err);
    cr_assert_float_eq(hw->svd.unet_step_s, 0.1, 1e-15); /* unchanged */
    /* and a bad value is named */
    cr_assert_eq(svp_file_write_atomic(path, "svd: {source: guessed}\n", 23),
                 SVP_OK);
    cr_assert_eq(svp_hw_overlay_measured(hw, path, err, sizeof(err)),
                 SVP_ERR_BAD_FILE);
    cr_assert(strstr(err, "gpu.yaml:1:15: key 'svd.source': expected one of "
                          "measured, quoted") != NULL,
              "%s", err);

    svp_hw_destroy(hw);
    unlink(path);
    rmdir(dir);
}

/*
 * Layouts by hand: 12 steps of 1 s on 6 ranks, nothing else costs.  One
 * pipeline of n samples and S stages takes T + (n - 1) * T / S seconds.
 */
Test(plan, layouts_hand_computed)
{
    svp_plan_params_t   p = {.world          = 6,
                             .ranks_per_node = 6,
                             .steps          = 12,
                             .samples        = 12,
                             .placement      = SVP_PLACEMENT_SPREAD,
                             .costs          = {.step_s = 1.0}};
    svp_plan_estimate_t l[6];
    static const struct {
        int    stages, groups, per;
        double makespan;
    } want[] = {{1, 6, 2, 24}, {2, 3, 4, 30}, {3, 2, 6, 32}, {6, 1, 12, 34}};
    int n = 0, best = -1;

    cr_assert_eq(svp_plan_layouts(&p, l, &n, &best), SVP_OK);
    cr_assert_eq(n, 4);
    for (int k = 0; k < n; ++k) {
        cr_assert_eq(l[k].stages, want[k].stages);
        cr_assert_eq(l[k].groups, want[k].groups);
        cr_assert_eq(l[k].samples_max, want[k].per);
        cr_assert_float_eq(l[k].makespan_s, want[k].makespan, 1e-9, "S=%d: %g",
                           l[k].stages, l[k].makespan_s);
    }
    cr_assert_eq(l[best].stages, 1, "short job: replicas win");
    cr_assert_eq(svp_plan_layout(&p, 4, &l[0]), SVP_ERR_INVALID_PARAM);

    /* 7 samples: the replicas' busiest runs 2, the 6-stage pipeline's fill
     * costs as much; the tie goes to the smaller S */
    p.samples = 7;
    cr_assert_eq(svp_plan_layouts(&p, l, &n, &best), SVP_OK);
    cr_assert_float_eq(l[0].makespan_s, 24, 1e-9);
    cr_assert_float_eq(l[3].makespan_s, 12 + 6 * 2, 1e-9);
    cr_assert_eq(best, 0);
}

/* 64 nodes x 7 GPUs, 28 steps: one pipeline cannot run, auto picks a layout
 * that can, fast, and render passes it to every rank. */
Test(plan, auto_at_448_ranks)
{
    svp_spec_t         *spec = spec_from("model: {kind: svd, path: m}\nsteps: 28\n"
                                                 "samples: 4480\n"
                                                 "cluster: {nodes: 64, ranks_per_node: 7}\n"
                                                 "pipeline: {stages: auto}\n");
    svp_plan_costs_t    c    = {.step_s          = 0.8,
                                .encode_s        = 0.15,
                                .decode_s        = 3.4,
                                .intra_node_gbps = 300,
                                .inter_node_gbps = 25,
                                .latency_s       = 10e-6};
    svp_plan_estimate_t best;
    char                why[256], err[512] = "", *script, line[128];
    struct timespec     t0, t1;

    cr_assert_eq(spec->pipeline.stages, SVP_PIPE_STAGES_AUTO);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(svp_plan_choose_stages(spec, &c, &best, why, sizeof(why)), SVP_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert(t1.tv_sec - t0.tv_sec < 5, "planning 448 ranks must stay fast");
    cr_assert(best.stages >= 1 && 448 % best.stages == 0 && 28 % best.stages == 0);
    /* 10 samples per rank: no fill and drain beats any pipeline */
    cr_assert_eq(best.stages, 1);
    cr_assert_eq(best.groups, 448);
    cr_assert_float_eq(best.makespan_s, 10 * (0.15 + 28 * 0.8 + 3.4), 1e-6);

    script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    snprintf(line, sizeof(line), "# pipeline.stages: auto -> %d (%d pipelines x",
             best.stages, best.groups);
    cr_assert(strstr(script, line) != NULL, "%s", script);
    cr_assert(strstr(script, " --set pipeline.stages=1\n") != NULL, "%s", script);
    free(script);
    svp_spec_destroy(spec);
}

/* The table's times are for its own dtype: another is refused, never used. */
Test(plan, costs_are_those_of_the_spec_dtype)
{
    svp_hw_t         hw  = {.file = "h.yaml",
                            .name = "h",
                            .svd  = {2, 25, 576, 1024, 0.8, 0.15, 3.4,
                                     .dtype = SVP_DTYPE_F16}};
    svp_spec_t      *f16 = spec_from("model: {kind: svd, path: m}\n"
                                          "dtype: f16\n");
    svp_spec_t      *f32 = spec_from("model: {kind: svd, path: m}\n");
    svp_plan_costs_t c;
    char             err[512] = "";

    cr_assert_eq(svp_plan_costs_from_spec(f16, &hw, err, sizeof(err), &c), SVP_OK,
                 "%s", err);
    cr_assert_float_eq(c.step_s, 0.8, 1e-12);
    cr_assert(strstr(c.source, "f16") != NULL, "%s", c.source);

    cr_assert_eq(svp_plan_costs_from_spec(f32, &hw, err, sizeof(err), &c),
                 SVP_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "dtype: f32") != NULL, "%s", err);
    cr_assert(strstr(err, "no figures for f32") != NULL, "%s", err);
    cr_assert(strstr(err, "for f16") != NULL, "%s", err);

    /* a table that does not say its dtype prices none */
    hw.svd.dtype = SVP_DTYPE_LAST;
    cr_assert_eq(svp_plan_costs_from_spec(f16, &hw, err, sizeof(err), &c),
                 SVP_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "of no stated dtype") != NULL, "%s", err);
    svp_spec_destroy(f32);
    svp_spec_destroy(f16);
}

/* ---- site options and containers --------------------------------------- */

/* The site keys reach the script as an experienced Slurm user writes them. */
Test(render, site_options)
{
    svp_spec_t *spec = spec_from(
        "steps: 8\n"
        "cluster:\n"
        "  cpus_per_task: 8\n"
        "  mem: 200G\n"
        "  signal: \"B:TERM@120\"\n"
        "  sbatch_args: [\"--gres-flags=enforce-binding\", \"--mail-type=END\"]\n"
        "  srun_args: [\"--cpu-bind=cores\", \"--comment=a b\"]\n"
        "  setup: [\"module load cuda/12.4\", \"source $HOME/env.sh\"]\n"
        "  env: {TMPDIR: \"$SCRATCH/t\"}\n");
    char err[512] = "", *script;

    script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    cr_expect_not_null(strstr(script, "\n#SBATCH --cpus-per-task=8\n"), "%s",
                       script);
    cr_expect_not_null(strstr(script, "\n#SBATCH --mem=200G\n"), "%s", script);
    cr_expect_not_null(strstr(script, "\n#SBATCH --signal=B:TERM@120\n"));
    cr_expect_not_null(strstr(script, "\n#SBATCH --gres-flags=enforce-binding\n"
                                      "#SBATCH --mail-type=END\n"));
    /* srun does not inherit --cpus-per-task from the allocation */
    cr_expect_not_null(strstr(script, " --cpus-per-task=8"));
    cr_expect_not_null(strstr(script, "--cpu-bind=cores '--comment=a b'"), "%s",
                       script);
    cr_expect_not_null(strstr(script, "\nset +u\nmodule load cuda/12.4\n"
                                      "source $HOME/env.sh\nset -u\n"),
                       "%s", script);
    /* literal by default: $SCRATCH is not expanded */
    cr_expect_not_null(strstr(script, "export TMPDIR='$SCRATCH/t'\n"), "%s", script);
    /* every #SBATCH line comes before the first command */
    cr_expect_lt(strstr(script, "#SBATCH --mail-type"), strstr(script, "set -eu"));
    free(script);

    spec->cluster.env_expand = 1;
    script                   = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    cr_expect_not_null(strstr(script, "export TMPDIR=\"$SCRATCH/t\"\n"), "%s",
                       script);
    free(script);
    svp_spec_destroy(spec);
}

Test(render, site_options_rejected)
{
    static const struct {
        const char *yaml, *key;
    } cases[] = {
        {"cluster: {mem: lots}", "cluster.mem"},
        {"cluster: {mem: \"64G --x\"}", "cluster.mem"},
        {"cluster: {mem_per_gpu: 0}", "cluster.mem_per_gpu"},
        {"cluster: {mem: 10G, mem_per_gpu: 8G}", "cluster.mem_per_gpu"},
        /* the worker stops cleanly on TERM and INT only */
        {"cluster: {signal: USR1@120}", "cluster.signal"},
        {"cluster: {signal: \"TERM@soon\"}", "cluster.signal"},
        {"cluster: {signal: \"TERM@99999\"}", "cluster.signal"},
        {"cluster: {sbatch_args: [\"mail-type=END\"]}", "cluster.sbatch_args[0]"},
        {"cluster: {sbatch_args: [\"--x=1\", \"--comment=a b\"]}",
         "cluster.sbatch_args[1]"},
        {"cluster: {sbatch_args: [\"--x=#y\"]}", "cluster.sbatch_args[0]"},
        {"cluster: {sbatch_args: [\"--time=10\"]}", "use cluster.time"},
        {"cluster: {sbatch_args: [\"-N2\"]}", "use cluster.nodes"},
        {"cluster: {srun_args: [\"--mpi=pmi2\"]}", "use cluster.mpi"},
        {"cluster: {srun_args: [\"cores\"]}", "cluster.srun_args[0]"},
        {"cluster: {setup: [\"\"]}", "cluster.setup[0]"},
        {"cluster: {env_expand: true, env: {A: \"$(id)\"}}", "cluster.env.A"},
        {"cluster: {env_expand: true, env: {A: \"`id`\"}}", "cluster.env.A"},
        {"cluster: {env_expand: true, env: {A: \"${X:-y}\"}}", "cluster.env.A"},
        {"cluster: {env_expand: true, env: {A: \"a\\\"b\"}}", "cluster.env.A"},
        {"cluster: {container_workdir: /w}", "cluster.container_workdir"},
        {"cluster: {container_runtime: apptainer}", "cluster.container_runtime"},
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        char        yaml[512], err[512] = "";
        svp_spec_t *spec;

        snprintf(yaml, sizeof(yaml), "steps: 8\n%s\n", cases[i].yaml);
        spec = spec_from(yaml);
        cr_expect_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_ERR_SPEC,
                     "accepted %s", cases[i].yaml);
        cr_expect_not_null(strstr(err, cases[i].key), "%s: %s", cases[i].yaml, err);
        cr_expect_not_null(strstr(err, "job.yaml: "), "%s", err);
        svp_spec_destroy(spec);
    }

    /* typed keys are refused by the parser, at their line and column */
    {
        static const char *typed[] = {
            "steps: 8\ncluster:\n  cpus_per_task: -1\n",
            "steps: 8\ncluster:\n  container_runtime: docker\n",
            "steps: 8\ncluster:\n  env_expand: sometimes\n",
        };

        for (size_t i = 0; i < SVP_ARRAY_SIZE(typed); ++i) {
            svp_spec_t *spec     = NULL;
            char        err[512] = "";

            cr_expect_eq(svp_spec_load_string(typed[i], "job.yaml", NULL, 0, err,
                                              sizeof(err), &spec),
                         SVP_ERR_SPEC);
            cr_expect_not_null(strstr(err, "job.yaml:3:"), "%s", err);
        }
    }
}

static const char *container_yaml =
    "model: {kind: svd, path: /data/models/svd-xt}\n"
    "dtype: f16\ndevice: cuda\nsteps: 8\n"
    "video: {inputs: [/data/in]}\n"
    "output: {dir: out}\n"
    "cluster:\n"
    "  container_image: /images/svd.sqsh\n"
    "  container_mounts: [\"/lustre/proj:/data\", \"/images\"]\n"
    "  container_workdir: /data/work\n";

/* The line that runs the worker, from its quoted name to the end. */
static const char *worker_line(const char *script)
{
    const char *w = strstr(script, "'svdworker' ");

    cr_assert_not_null(w, "%s", script);
    return w + strlen("'svdworker' ");
}

Test(render, pyxis_passes_the_container_side_spec)
{
    svp_spec_t                *spec   = spec_from(container_yaml);
    svp_launch_render_params_t params = {
        .spec_ref      = "/lustre/proj/jobs/job.yaml",
        .spec_ref_kind = SVP_LAUNCH_SPEC_ABSOLUTE,
    };
    char err[512] = "", *script = NULL;

    cr_assert_eq(svp_launch_render(spec, &params, err, sizeof(err), &script), SVP_OK,
                 "%s", err);
    cr_expect_not_null(strstr(script,
                              "--container-image='/images/svd.sqsh' "
                              "--container-mounts='/lustre/proj:/data,/images'"),
                       "%s", script);
    cr_expect_not_null(strstr(script, "--container-workdir='/data/work'"));
    cr_expect(!strncmp(worker_line(script), "'/data/jobs/job.yaml'\n", 21), "%s",
              script);
    cr_expect_null(strstr(script, "apptainer"));
    free(script);

    /* a spec under no mount: the worker could not read it */
    params.spec_ref = "/home/u/job.yaml";
    cr_expect_eq(svp_launch_render(spec, &params, err, sizeof(err), &script),
                 SVP_ERR_SPEC);
    cr_expect_not_null(strstr(err, "under no mount's SRC"), "%s", err);
    svp_spec_destroy(spec);
}

Test(render, apptainer_passes_the_container_side_spec)
{
    svp_spec_t                *spec   = spec_from(container_yaml);
    svp_launch_render_params_t params = {
        .spec_ref      = "../jobs/job.yaml",
        .spec_ref_kind = SVP_LAUNCH_SPEC_SCRIPT_RELATIVE,
        .spec_host     = "/lustre/proj/jobs/job.yaml",
    };
    char err[512] = "", *script = NULL;

    spec->cluster.container_runtime = SVP_CONTAINER_APPTAINER;
    set_str(&spec->cluster.container_image, "/images/svd.sif");
    cr_assert_eq(svp_launch_render(spec, &params, err, sizeof(err), &script), SVP_OK,
                 "%s", err);
    cr_expect_not_null(strstr(script,
                              " \\\n    apptainer exec --nv --bind "
                              "'/lustre/proj:/data,/images' --pwd '/data/work' "
                              "'/images/svd.sif' \\\n    'svdworker' "),
                       "%s", script);
    cr_expect(!strncmp(worker_line(script), "'/data/jobs/job.yaml'\n", 21), "%s",
              script);
    cr_expect_null(strstr(script, "--container-image"));
    free(script);

    /* a CPU job binds no GPU driver */
    spec->device = SVP_OPS_BACKEND_CPU;
    spec->dtype  = SVP_DTYPE_F32;
    cr_assert_eq(svp_launch_render(spec, &params, err, sizeof(err), &script), SVP_OK,
                 "%s", err);
    cr_expect_null(strstr(script, "--nv"), "%s", script);
    free(script);
    svp_spec_destroy(spec);
}

/* What the worker opens in the container must lie under a mount. */
Test(check, container_sees_its_paths)
{
    static const struct {
        const char *set, *key;
    } cases[] = {
        {"model.path=/models/svd", "model.path"},
        {"video.inputs=[/home/u/in]", "video.inputs[0]"},
        {"output.dir=/scratch/out", "output.dir"},
        {"cluster.container_workdir=", "output.dir"},
        {"cluster.container_workdir=/tmp", "cluster.container_workdir"},
        /* "/database" is not under the mount "/data" */
        {"output.dir=/database/out", "output.dir"},
    };
    char err[512] = "";

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        const char *sets[] = {cases[i].set};
        svp_spec_t *spec   = NULL;

        cr_assert_eq(svp_spec_load_string(container_yaml, "job.yaml", sets, 1, err,
                                          sizeof(err), &spec),
                     SVP_OK, "%s", err);
        cr_expect_eq(svp_launch_container_check(spec, "/lustre/proj/job.yaml", err,
                                                sizeof(err)),
                     SVP_ERR_SPEC, "accepted %s", cases[i].set);
        cr_expect_not_null(strstr(err, cases[i].key), "%s: %s", cases[i].set, err);
        svp_spec_destroy(spec);
    }
    {
        svp_spec_t *spec = spec_from(container_yaml);

        cr_expect_eq(svp_launch_container_check(spec, "/lustre/proj/job.yaml", err,
                                                sizeof(err)),
                     SVP_OK, "%s", err);
        svp_spec_destroy(spec);
    }
}

/*
 * Linear in the samples: each sample's chain is simulated once, task by
 * task (events = N x (W + 2)), and the heaps hold only the samples in
 * flight.  At 200,000 samples the flow shop's closed form still holds (a
 * first version, which scanned every sample per event, took minutes here).
 * Asked again, the same pipeline gives the same answer from the memo.
 */
Test(plan, linear_in_samples)
{
    const int          N = 200000, W = 7;
    svp_plan_result_t *r =
        plan(W, 7, 28, N, SVP_PLACEMENT_ENDS, 0.8, 0.15, 3.4, 10e-6);
    svp_plan_result_t *again =
        plan(W, 7, 28, N, SVP_PLACEMENT_ENDS, 0.8, 0.15, 3.4, 10e-6);
    long steps = 0;

    cr_assert_eq(r->events, (long)N * (W + 2));
    cr_expect_float_eq(r->makespan_s, r->closed_form_s, 1e-6 * r->makespan_s,
                       "%.6f vs %.6f", r->makespan_s, r->closed_form_s);
    for (int k = 0; k < W; ++k) {
        steps += r->ranks[k].steps;
    }
    cr_assert_eq(steps, 28L * N);
    cr_assert_eq(r->ranks[0].encodes, N);
    cr_assert_eq(r->ranks[W - 1].decodes, N);
    cr_assert_float_eq(again->makespan_s, r->makespan_s, 0);
    cr_assert_eq(again->link_msgs[0 * W + 1], N);
    cr_assert(again->ranks != r->ranks);
    svp_plan_result_destroy(again);
    svp_plan_result_destroy(r);

    /* spread: every rank encodes and decodes its N / W */
    r = plan(W, 7, 28, 7000, SVP_PLACEMENT_SPREAD, 0.8, 0.15, 3.4, 10e-6);
    cr_assert_eq(r->events, 7000L * (W + 2));
    for (int k = 0; k < W; ++k) {
        cr_assert_eq(r->ranks[k].encodes, 1000);
        cr_assert_eq(r->ranks[k].decodes, 1000);
    }
    svp_plan_result_destroy(r);
}

/* How many tasks a cluster.array makes: the planner divides the samples by it. */
Test(launch, array_task_count)
{
    static const struct {
        const char *array;
        int         tasks;
    } cases[] = {
        {"", 0},         {"0-63", 64}, {"1,3,5-7", 5}, {"0-15:4", 4},
        {"0-99%8", 100}, {"7", 1},     {"5-3", 0},
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        svp_spec_t *spec = spec_from("steps: 8\n");

        set_str(&spec->cluster.array, cases[i].array);
        cr_expect_eq(svp_launch_array_tasks(spec), cases[i].tasks, "%s",
                     cases[i].array);
        svp_spec_destroy(spec);
    }
}

/* ---- site options as Slurm reads them ----------------------------------- */

/*
 * sbatch_args and srun_args are resolved as sbatch and srun read them
 * (getopt_long: a unique prefix is the option) before the checks: an
 * abbreviation of an option the script sets is refused with its key, an
 * ambiguous one with its candidates; what Slurm refuses beside the
 * script's own options, or what breaks the job, is refused with the reason.
 */
Test(render, site_options_as_slurm_reads_them)
{
    static const struct {
        const char *yaml, *expect; /* expect NULL: accepted */
    } cases[] = {
        /* abbreviations of the script's own options */
        {"cluster: {sbatch_args: [\"--ntasks-per-n=4\"]}",
         "(--ntasks-per-node: use cluster.ranks_per_node)"},
        {"cluster: {sbatch_args: [\"--tasks-per-node=4\"]}",
         "use cluster.ranks_per_node"},
        {"cluster: {sbatch_args: [\"--parti=gpu\"]}",
         "(--partition: use cluster.partition)"},
        {"cluster: {sbatch_args: [\"--ti=10\"]}", "--time, --time-min"},
        {"cluster: {srun_args: [\"--mp=none\"]}", "(--mpi: use cluster.mpi)"},
        {"cluster: {srun_args: [\"--kill-on=0\"]}", "set by svdlaunch itself"},
        {"cluster: {srun_args: [\"-W5\"]}", "(--wait: set by svdlaunch itself)"},
        {"cluster: {sbatch_args: [\"-Hn4\"]}", "(--ntasks: use cluster.nodes"},
        /* ambiguous: sbatch refuses them at submit time */
        {"cluster: {sbatch_args: [\"--nod=2\"]}",
         "--nod is the beginning of --nodefile, --nodelist, --nodes"},
        {"cluster: {sbatch_args: [\"--me=1G\"]}", "write the option in full"},
        /* values: one that takes one, one that takes none */
        {"cluster: {sbatch_args: [\"--mail-type\"]}", "--mail-type=VALUE"},
        {"cluster: {srun_args: [\"--cpu-b\"]}", "--cpu-bind=VALUE"},
        {"cluster: {srun_args: [\"-o\"]}", "-oVALUE or --output=VALUE"},
        {"cluster: {sbatch_args: [\"--hold=yes\"]}", "--hold without a value"},
        /* contradictions */
        {"cluster: {mem: 10G, sbatch_args: [\"--mem-per-cpu=4G\"]}",
         "no --mem-per-cpu beside cluster.mem"},
        {"cluster: {mem_per_gpu: 10G, sbatch_args: [\"--mem-per-c=4G\"]}",
         "no --mem-per-cpu beside cluster.mem"},
        {"cluster: {mem: 10G, srun_args: [\"--mem-per-cpu=4G\"]}",
         "Slurm takes one of --mem, --mem-per-cpu and --mem-per-gpu"},
        {"cluster: {sbatch_args: [\"--wrap=hostname\"]}", "no --wrap"},
        {"cluster: {sbatch_args: [\"--wr=hostname\"]}", "no --wrap"},
        {"cluster: {srun_args: [\"--pty\"]}", "no --pty"},
        {"cluster: {srun_args: [\"--export=NONE\"]}", "no --export without ALL"},
        {"cluster: {srun_args: [\"--exp=NIL\"]}", "the PMIx settings"},
        {"cluster: {srun_args: [\"--export=PATH,HOME\"]}",
         "--export=ALL,NAME=value"},
        /* accepted */
        {"cluster: {sbatch_args: [\"--mem-per-cpu=4G\"]}", NULL},
        {"cluster: {sbatch_args: [\"--mail-t=END\", \"-Hk\"]}", NULL},
        {"cluster: {sbatch_args: [\"--site-plugin-opt=1\"]}", NULL},
        {"cluster: {sbatch_args: [\"--export=NONE\"]}", NULL},
        {"cluster: {srun_args: [\"--export=ALL,X=1\"]}", NULL},
        {"cluster: {srun_args: [\"--output=rank-%t.log\", \"--error=rank-%t.err\"]}",
         NULL},
        {"cluster: {srun_args: [\"-orank-%t.log\", \"--open-mode=append\"]}", NULL},
        {"cluster: {srun_args: [\"--lab\", \"--cpu_bind=cores\"]}", NULL},
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        char        yaml[512], err[1024] = "";
        svp_spec_t *spec;

        snprintf(yaml, sizeof(yaml), "steps: 8\n%s\n", cases[i].yaml);
        spec = spec_from(yaml);
        if (cases[i].expect == NULL) {
            cr_expect_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_OK,
                         "%s: %s", cases[i].yaml, err);
        } else {
            cr_expect_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_ERR_SPEC,
                         "accepted %s", cases[i].yaml);
            cr_expect_not_null(strstr(err, cases[i].expect), "%s: %s", cases[i].yaml,
                               err);
            cr_expect_not_null(strstr(err, "job.yaml: cluster."), "%s", err);
        }
        svp_spec_destroy(spec);
    }
}

/* Per-rank srun output files reach srun; sbatch --export=NONE is the
 * script's own, and srun gets the environment back. */
Test(render, srun_output_files_and_sbatch_export)
{
    svp_spec_t *spec     = spec_from("steps: 8\ncluster:\n"
                                         "  srun_args: [\"--output=rank-%t.log\"]\n"
                                         "  sbatch_args: [\"--export=NONE\"]\n");
    char        err[512] = "", *script;

    script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    cr_expect_not_null(strstr(script, " \\\n    --output=rank-%t.log \\\n"), "%s",
                       script);
    cr_expect_not_null(strstr(script, "\n#SBATCH --export=NONE\n"), "%s", script);
    cr_expect_lt(strstr(script, "\nexport SLURM_EXPORT_ENV=ALL\n"),
                 strstr(script, "exec srun"), "%s", script);
    free(script);
    set_str(&spec->cluster.sbatch_args.items[0], "--export=ALL");
    script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    cr_expect_null(strstr(script, "SLURM_EXPORT_ENV"), "%s", script);
    free(script);
    svp_spec_destroy(spec);
}

/*
 * The table is Slurm 22.05's; where sbatch and srun 22.05 are installed it
 * is held against them: every prefix of every option, and every first
 * letter, resolves as the tool itself resolves it (the same option, the
 * same candidates when ambiguous, the same way of taking a value).
 */
typedef struct {
    char kind;        /* 'A' ambiguous, 'N' none, 'R' requires a value,
                           'X' takes none, 'O' accepted (optional value) */
    char names[1024]; /* the option, or the sorted candidates */
} real_answer_t;

static long clock_gettime_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts "--b, --a" into "--a, --b" in place. */
static void sort_names(char *list)
{
    char *items[256], copy[1024], *tok, *save = NULL;
    int   n = 0;

    snprintf(copy, sizeof(copy), "%s", list);
    for (tok = strtok_r(copy, ", '", &save); tok != NULL && n < 256;
         tok = strtok_r(NULL, ", '", &save)) {
        items[n++] = tok;
    }
    qsort(items, (size_t)n, sizeof(items[0]), cmp_str);
    list[0] = '\0';
    for (int i = 0; i < n; ++i) {
        strcat(list, i ? ", " : "");
        strcat(list, items[i]);
    }
}

/*
 * What `tool arg` says (stdin empty, SLURM_CONF set by the caller).  An
 * option error comes at once; a tool still silent after 3 s took its
 * options and is talking to a controller (srun outlives SIGTERM): it is
 * killed, and the answer is "accepted".
 */
static void real_answer(const char *tool, const char *arg, real_answer_t *a)
{
    char          out[4096];
    int           fds[2], st, devnull;
    ssize_t       n, got = 0;
    pid_t         pid;
    const char   *p;
    struct pollfd pfd;
    double        t0 = (double)clock_gettime_ms();

    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(fds[1], 2);
        close(fds[0]);
        execlp(tool, tool, arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    pfd.fd     = fds[0];
    pfd.events = POLLIN;
    for (;;) {
        int left = 3000 - (int)((double)clock_gettime_ms() - t0);

        if (left <= 0 || poll(&pfd, 1, left) <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        n = read(fds[0], out + got, sizeof(out) - 1 - (size_t)got);
        if (n <= 0) {
            break;
        }
        got += n;
    }
    close(fds[0]);
    waitpid(pid, &st, 0);
    out[got]    = '\0';
    a->names[0] = '\0';
    if ((p = strstr(out, "ambiguous; possibilities: ")) != NULL) {
        a->kind = 'A';
        snprintf(a->names, sizeof(a->names), "%.*s", (int)strcspn(p + 26, "\n"),
                 p + 26);
        sort_names(a->names);
    } else if (strstr(out, "unrecognized option") != NULL) {
        a->kind = 'N';
    } else if ((p = strstr(out, "option '--")) != NULL &&
               (strstr(out, "requires an argument") ||
                strstr(out, "allow an argument"))) {
        a->kind = strstr(out, "requires an argument") ? 'R' : 'X';
        snprintf(a->names, sizeof(a->names), "%.*s", (int)strcspn(p + 10, "'"),
                 p + 10);
    } else {
        a->kind = 'O';
    }
}

/*
 * Every option the tool lists for an ambiguous prefix is among ours.  The
 * tool may list fewer: getopt_long leaves out an alias of the option found
 * first (srun's --cpu_bind beside --cpu-bind), which is the same option.
 */
static void expect_listed(const char *ours, const char *real, const char *tool,
                          const char *prefix)
{
    char copy[1024], *tok, *save = NULL, want[96];

    snprintf(copy, sizeof(copy), "%s", real);
    for (tok = strtok_r(copy, ", ", &save); tok != NULL;
         tok = strtok_r(NULL, ", ", &save)) {
        snprintf(want, sizeof(want), "%s,", tok);
        cr_expect(strstr(ours, tok) != NULL &&
                      (strstr(ours, want) != NULL ||
                       !strcmp(ours + strlen(ours) - strlen(tok), tok)),
                  "%s --%s: %s lists %s, the table does not (%s)", tool, prefix,
                  tool, tok, ours);
    }
}

Test(launch, slurm_option_table_is_slurm_22_05s, .timeout = 300)
{
    char        dir[] = "/tmp/svp_slurm_XXXXXX", conf[256], version[256] = "";
    const char *tools[] = {"sbatch", "srun"};
    FILE       *f;
    int         checked = 0;

    if (system("command -v sbatch >/dev/null && command -v srun >/dev/null") != 0) {
        cr_skip_test("sbatch and srun are not installed");
    }
    cr_assert_not_null(mkdtemp(dir));
    snprintf(conf, sizeof(conf), "%s/slurm.conf", dir);
    f = fopen(conf, "w");
    cr_assert_not_null(f);
    /* enough for the tools to read their options; a probe that gets past
     * them (srun --test-only) finds port 1 closed and ends at once, where
     * a controller that does not answer kept it retrying for 18 s */
    fputs("ClusterName=probe\nSlurmctldHost=localhost\nSlurmctldPort=1\n"
          "MessageTimeout=1\nTCPTimeout=1\nNodeName=localhost CPUs=1\n"
          "PartitionName=p Nodes=localhost Default=YES\n",
          f);
    fclose(f);
    setenv("SLURM_CONF", conf, 1);
    f = popen("sbatch --version 2>/dev/null", "r");
    if (f != NULL) {
        if (fgets(version, sizeof(version), f) == NULL) {
            version[0] = '\0';
        }
        pclose(f);
    }
    if (strstr(version, " 22.05.") == NULL) {
        unlink(conf);
        rmdir(dir);
        cr_skip_test("the table is Slurm 22.05's; this sbatch is '%.*s'",
                     (int)strcspn(version, "\n"), version);
    }
    for (int t = 0; t < 2; ++t) {
        char        prefix[64], arg[80], cands[1024];
        const char *name;
        int         takes;

        /* every prefix of every option (the table is sorted: a prefix the
         * option before shares was tried with it), then every letter */
        for (size_t i = 0; (name = svp_launch_slurm_option_name(t, i)) != NULL;
             ++i) {
            const char *prev = i ? svp_launch_slurm_option_name(t, i - 1) : NULL;

            for (size_t len = 1; len <= strlen(name); ++len) {
                real_answer_t real;
                const char   *ours;

                snprintf(prefix, sizeof(prefix), "%.*s", (int)len, name);
                if (prev != NULL && len < strlen(name) &&
                    !strncmp(prev, prefix, len)) {
                    continue;
                }
                snprintf(arg, sizeof(arg), "--%s", prefix);
                real_answer(tools[t], arg, &real);
                ours = svp_launch_slurm_resolve(t, prefix, strlen(prefix), cands,
                                                sizeof(cands), &takes);
                if (real.kind == 'O') {
                    /* a value only after '=', or none: "--name=" tells */
                    snprintf(arg, sizeof(arg), "--%s=", prefix);
                    real_answer(tools[t], arg, &real);
                    if (real.kind != 'X') {
                        real.kind = 'O';
                    }
                }
                switch (real.kind) {
                case 'A':
                    cr_expect_eq(takes, -1, "%s %s: ambiguous to %s", tools[t], arg,
                                 tools[t]);
                    expect_listed(cands, real.names, tools[t], prefix);
                    break;
                case 'N':
                    cr_expect_null(ours, "%s --%s: %s knows no such option",
                                   tools[t], prefix, tools[t]);
                    cr_expect_eq(takes, 0, "%s --%s", tools[t], prefix);
                    break;
                default:
                    cr_expect_not_null(ours, "%s --%s is --%s to %s", tools[t],
                                       prefix, real.names, tools[t]);
                    if (ours != NULL && real.kind != 'O') {
                        cr_expect_str_eq(ours, real.names, "%s --%s", tools[t],
                                         prefix);
                    }
                    cr_expect_eq(takes,
                                 real.kind == 'X'   ? 1
                                 : real.kind == 'R' ? 2
                                                    : 3,
                                 "%s --%s (%s): how it takes a value", tools[t],
                                 prefix, ours ? ours : "?");
                    break;
                }
                ++checked;
            }
        }
        /* every first letter: the candidates list every option it starts */
        for (char c = 'a'; c <= 'z'; ++c) {
            real_answer_t real;

            snprintf(arg, sizeof(arg), "--%c", c);
            real_answer(tools[t], arg, &real);
            svp_launch_slurm_resolve(t, arg + 2, 1, cands, sizeof(cands), &takes);
            if (real.kind == 'A') {
                cr_expect_eq(takes, -1, "%s --%c", tools[t], c);
                expect_listed(cands, real.names, tools[t], arg + 2);
            } else if (real.kind == 'N') {
                cr_expect_eq(takes, 0, "%s --%c: no option starts so", tools[t], c);
            } else {
                cr_expect_gt(takes, 0, "%s --%c: one option starts so", tools[t], c);
            }
            ++checked;
        }
    }
    cr_expect_gt(checked, 1000);
    unsetenv("SLURM_CONF");
    unlink(conf);
    rmdir(dir);
}

/*
 * A relative cluster.worker names the file from the spec's folder (the
 * spec reader joined it) or, from --set, from the working directory: the
 * script names it from the root, since the job's srun runs elsewhere.  In
 * a container, the path a mount shows; none: refused.
 */
Test(render, relative_worker_is_resolved)
{
    char        cwd[4096], want[8192], err[1024] = "", *script;
    svp_spec_t *spec;

    cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
    spec   = spec_from("steps: 8\ncluster: {worker: bin/svdworker}\n");
    script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    snprintf(want, sizeof(want), "\n    '%s/bin/svdworker' \"$svp_spec\"\n", cwd);
    cr_expect_not_null(strstr(script, want), "%s", script);
    free(script);

    /* a bare name is looked up on PATH; an absolute path stays */
    set_str(&spec->cluster.worker, "svdworker");
    script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
    cr_expect_not_null(strstr(script, "\n    'svdworker' \"$svp_spec\"\n"));
    free(script);
    svp_spec_destroy(spec);

    /* in a container: through the mount that shows it, or refused */
    if (chdir("/tmp") == 0) {
        spec =
            spec_from("steps: 8\noutput: {dir: /host-tmp/out}\n"
                      "cluster:\n  container_image: /i.sqsh\n"
                      "  container_mounts: [\"/tmp:/host-tmp\", \"/jobs:/spec\"]\n"
                      "  worker: svp/bin/svdworker\n");
        script = render(spec, NULL, 0, SVP_OK, err, sizeof(err));
        cr_expect_not_null(strstr(script, "\n    '/host-tmp/svp/bin/svdworker' "
                                          "'/spec/job.yaml'\n"),
                           "%s", script);
        free(script);
        set_str(&spec->cluster.container_mounts.items[0], "/scratch:/scratch");
        cr_expect_eq(svp_launch_validate(spec, err, sizeof(err)), SVP_ERR_SPEC);
        cr_expect_not_null(strstr(err, "cluster.worker: expected an absolute path "
                                       "in the container"),
                           "%s", err);
        cr_expect_not_null(strstr(err, "/tmp/svp/bin/svdworker is under no mount"),
                           "%s", err);
        svp_spec_destroy(spec);
        cr_assert_eq(chdir(cwd), 0);
    }
}

/* An independent shard job runs the worker with --shard I/N; not beside
 * cluster.array, whose tasks are the shards already. */
Test(render, shard_job)
{
    svp_spec_t                *spec   = spec_from("steps: 8\n");
    svp_launch_render_params_t params = {
        .spec_ref      = "/jobs/job.yaml",
        .spec_ref_kind = SVP_LAUNCH_SPEC_ABSOLUTE,
        .shard_index   = 2,
        .shard_count   = 3,
    };
    const char *sets[]   = {"samples=9"};
    char        err[512] = "", *script = NULL;

    params.overrides     = sets;
    params.num_overrides = 1;
    cr_assert_eq(svp_launch_render(spec, &params, err, sizeof(err), &script), SVP_OK,
                 "%s", err);
    cr_expect_not_null(strstr(script, "\n# shard 2 of 3: this job makes the samples "
                                      "whose index is 2 mod 3\n"),
                       "%s", script);
    cr_expect_not_null(strstr(script, "'svdworker' \"$svp_spec\" --shard 2/3 --set "
                                      "'samples=9'\n"),
                       "%s", script);
    free(script);
    script             = NULL;
    params.shard_index = 3;
    cr_expect_eq(svp_launch_render(spec, &params, err, sizeof(err), &script),
                 SVP_ERR_SPEC);
    params.shard_index = 0;
    set_str(&spec->cluster.array, "0-3");
    cr_expect_eq(svp_launch_render(spec, &params, err, sizeof(err), &script),
                 SVP_ERR_SPEC);
    cr_expect_not_null(strstr(err, "expected a job without cluster.array"), "%s",
                       err);
    cr_expect_null(script);
    svp_spec_destroy(spec);
}

/* Arrays past Slurm's default MaxArraySize, or with more tasks than
 * samples, are warned about, naming MaxArraySize. */
Test(launch, array_warnings)
{
    static const struct {
        const char *array;
        int         samples;
        const char *expect; /* NULL: no warning */
    } cases[] = {
        {"0-1000", 2000, NULL},
        {"1-1001", 2000,
         "task ids up to 1001, and Slurm's default MaxArraySize of "
         "1001 allows ids up to 1000"},
        {"0-2000%16", 5000, "MaxArraySize"},
        {"0-15", 10, "0-15 makes 16 tasks for 10 samples: 6 tasks get no sample"},
        {"0-1", 1, "1 task gets no sample and ends at once"},
        {"0-15", 16, NULL},
        {"0-15", 0, NULL},
        {"", 3, NULL},
    };

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        svp_spec_t *spec      = spec_from("steps: 8\n");
        char        msg[1024] = "";
        int         warned;

        set_str(&spec->cluster.array, cases[i].array);
        warned = svp_launch_array_warning(spec, cases[i].samples, msg, sizeof(msg));
        cr_expect_eq(warned, cases[i].expect != NULL, "%s: %s", cases[i].array, msg);
        if (cases[i].expect != NULL) {
            cr_expect_not_null(strstr(msg, cases[i].expect), "%s", msg);
            cr_expect_not_null(strstr(msg, "MaxArraySize"), "%s", msg);
        }
        svp_spec_destroy(spec);
    }
}
