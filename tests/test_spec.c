/* Tests for src/jobspec: parsing, errors with file:line:column, overrides, steps. */
#include "jobspec/spec.h"
#include "jobspec/spec_agree.h"
#include "jobspec/layout.h"
#include "common/log.h"
#include "common/util.h"
#include "common/file.h"
#include "common/str.h"
#include "job/samples.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void quiet(void)
{
    svp_log_set_stream(fopen("/dev/null", "w"));
}

TestSuite(spec, .init = quiet);
TestSuite(spec_limits, .init = quiet);

Test(spec, valid_full_spec)
{
    const char *yaml      = "name: demo\n"
                            "model:\n"
                            "  kind: dummy\n"
                            "  dummy: {cost: sleep, step_ms: 12.5, decode_ms: 40}\n"
                            "steps: 28\n"
                            "samples: 10\n"
                            "seed: 1234\n"
                            "latent_shape: [1, 25, 4, 72, 128]\n"
                            "comm: {deadline: 30, transport: 'posix,self', inflight: 3}\n"
                            "pipeline: {placement: ends}\n"
                            "video:\n"
                            "  inputs: [a.png, b.jpg]\n"
                            "  seeds: [1, 2]\n"
                            "output: {dir: /tmp/x, mp4: false}\n"
                            "log: {level: debug}\n"
                            "cluster:\n"
                            "  nodes: 2\n"
                            "  ranks_per_node: 7\n"
                            "  env: {UCX_TLS: 'rc,cuda_copy', OMP_NUM_THREADS: '4'}\n";
    char        err[1024] = "";
    svp_spec_t *s         = NULL;

    cr_assert_eq(svp_spec_load_string(yaml, "job.yaml", NULL, 0, err, sizeof(err),
                                      &s),
                 SVP_OK, "%s", err);
    cr_assert_str_eq(s->name, "demo");
    cr_assert_eq(s->model.kind, SVP_MODEL_DUMMY);
    cr_assert_eq(s->model.dummy.cost, SVP_DUMMY_COST_SLEEP);
    cr_assert_float_eq(s->model.dummy.step_ms, 12.5, 0);
    cr_assert_float_eq(s->model.dummy.decode_ms, 40, 0);
    cr_assert_eq(s->steps, 28);
    cr_assert_eq(s->samples, 10);
    cr_assert_eq(s->seed, 1234);
    cr_assert_eq(s->latent_shape[1], 25);
    cr_assert_eq(s->latent_shape[4], 128);
    cr_assert_float_eq(s->comm.deadline, 30, 0);
    cr_assert_str_eq(s->comm.transport, "posix,self");
    cr_assert_eq(s->comm.inflight, 3);
    cr_assert_eq(s->pipeline.placement, SVP_PLACEMENT_ENDS);
    cr_assert_eq(s->video.inputs.count, 2);
    cr_assert_str_eq(s->video.inputs.items[1], "b.jpg");
    cr_assert_eq(s->video.seeds.items[1], 2);
    cr_assert_str_eq(s->output.dir, "/tmp/x");
    cr_assert_eq(s->output.mp4, 0);
    cr_assert_eq(s->output.frames, 1);
    cr_assert_eq(s->log.level, SVP_LOG_LEVEL_DEBUG);
    cr_assert_eq(s->cluster.nodes, 2);
    cr_assert_eq(s->cluster.env.count, 2);
    cr_assert_str_eq(s->cluster.env.keys[0], "UCX_TLS");
    cr_assert_str_eq(s->cluster.env.values[0], "rc,cuda_copy");
    svp_spec_destroy(s);
}

Test(spec, defaults_and_name_from_file)
{
    svp_spec_t *s = NULL;

    cr_assert_eq(svp_spec_load_string("", "dir/my_job.yaml", NULL, 0, NULL, 0, &s),
                 SVP_OK);
    cr_assert_str_eq(s->name, "my_job");
    cr_assert_eq(s->model.kind, SVP_MODEL_DUMMY);
    cr_assert_eq(s->steps, 8);
    cr_assert_str_eq(s->cluster.mpi, "pmix");
    cr_assert_eq(s->pipeline.placement, SVP_PLACEMENT_SPREAD);
    svp_spec_destroy(s);
}

/* dtype and device: the tensor layer's and the ops layer's enums, as the
 * ops take them; the names in an error are those tables' */
Test(spec, dtype_and_device_are_the_layers_enums)
{
    static const struct {
        const char       *yaml;
        svp_dtype_t       dtype;
        svp_ops_backend_t device;
    } cases[] = {
        {"", SVP_DTYPE_F32, SVP_OPS_BACKEND_CPU},
        {"dtype: f16\n", SVP_DTYPE_F16, SVP_OPS_BACKEND_CPU},
        {"dtype: bf16\ndevice: cuda\n", SVP_DTYPE_BF16, SVP_OPS_BACKEND_CUDA},
        {"dtype: f32\ndevice: cpu\n", SVP_DTYPE_F32, SVP_OPS_BACKEND_CPU},
    };
    svp_spec_t *s;
    char        err[512];
    size_t      i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        s = NULL;
        cr_assert_eq(svp_spec_load_string(cases[i].yaml, "j.yaml", NULL, 0, err,
                                          sizeof(err), &s),
                     SVP_OK, "%s: %s", cases[i].yaml, err);
        cr_assert_eq(s->dtype, cases[i].dtype, "%s", cases[i].yaml);
        cr_assert_eq(s->device, cases[i].device, "%s", cases[i].yaml);
        svp_spec_destroy(s);
    }
    s = NULL;
    cr_assert_neq(svp_spec_load_string("dtype: f64\n", "j.yaml", NULL, 0, err,
                                       sizeof(err), &s),
                  SVP_OK, "f64 holds no weights");
    cr_assert_null(s);
    cr_assert(strstr(err, "one of f32, f16, bf16") != NULL, "%s", err);
    cr_assert_neq(svp_spec_load_string("device: dry\n", "j.yaml", NULL, 0, err,
                                       sizeof(err), &s),
                  SVP_OK, "dry is no device a job runs on");
    cr_assert(strstr(err, "one of cpu, cuda") != NULL, "%s", err);
}

/* comm.gpu_direct: every value with device cuda, auto and off with cpu */
Test(spec, gpu_direct_values)
{
    static const struct {
        const char           *yaml;
        svp_spec_gpu_direct_t want;
    } cases[] = {
        {"device: cuda\n", SVP_GPU_DIRECT_AUTO},
        {"device: cuda\nmodel: {kind: svd, path: m}\ncomm: {gpu_direct: on}\n",
         SVP_GPU_DIRECT_ON},
        {"device: cuda\ncomm: {gpu_direct: off}\n", SVP_GPU_DIRECT_OFF},
        {"device: cuda\ncomm: {gpu_direct: auto}\n", SVP_GPU_DIRECT_AUTO},
        {"comm: {gpu_direct: off}\n", SVP_GPU_DIRECT_OFF},
        {"comm: {gpu_direct: auto}\n", SVP_GPU_DIRECT_AUTO},
    };
    svp_spec_t *s;
    char        err[512];
    size_t      i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        s = NULL;
        cr_assert_eq(svp_spec_load_string(cases[i].yaml, "j.yaml", NULL, 0, err,
                                          sizeof(err), &s),
                     SVP_OK, "%s: %s", cases[i].yaml, err);
        cr_assert_eq(s->comm.gpu_direct, cases[i].want, "%s", cases[i].yaml);
        svp_spec_destroy(s);
    }
}

Test(spec, overrides)
{
    const char *ov[] = {"steps=28",
                        "samples=10",
                        "comm.deadline=2.5",
                        "latent_shape=[2,3,4,5,6]",
                        "cluster.env.UCX_TLS=tcp",
                        "video.inputs=x.png,y.png"};
    svp_spec_t *s    = NULL;
    char        err[512];

    cr_assert_eq(svp_spec_load_string("steps: 4\n", "j.yaml", ov, 6, err,
                                      sizeof(err), &s),
                 SVP_OK, "%s", err);
    cr_assert_eq(s->steps, 28);
    cr_assert_eq(s->samples, 10);
    cr_assert_float_eq(s->comm.deadline, 2.5, 0);
    cr_assert_eq(s->latent_shape[0], 2);
    cr_assert_eq(s->latent_shape[4], 6);
    cr_assert_str_eq(s->cluster.env.values[0], "tcp");
    cr_assert_eq(s->video.inputs.count, 2);
    svp_spec_destroy(s);
}

/* A --set list holds quoted items as YAML's flow style does: commas and
 * spaces inside, escapes, and no quotes kept; broken quoting is refused. */
Test(spec, override_lists_with_quotes)
{
    const char *ov[] = {
        "cluster.setup=[\"module load a b\", 'x, y', \" pad \", plain, "
        "'it''s', \"q\\\"d\"]"};
    const char *bad[] = {"cluster.setup=['open", "cluster.setup=[\"a\"b]"};
    svp_spec_t *s     = NULL;
    char        err[512];

    cr_assert_eq(svp_spec_load_string("steps: 4\n", "j.yaml", ov, 1, err,
                                      sizeof(err), &s),
                 SVP_OK, "%s", err);
    cr_assert_eq(s->cluster.setup.count, 6);
    cr_expect_str_eq(s->cluster.setup.items[0], "module load a b");
    cr_expect_str_eq(s->cluster.setup.items[1], "x, y");
    cr_expect_str_eq(s->cluster.setup.items[2], " pad ");
    cr_expect_str_eq(s->cluster.setup.items[3], "plain");
    cr_expect_str_eq(s->cluster.setup.items[4], "it's");
    cr_expect_str_eq(s->cluster.setup.items[5], "q\"d");
    svp_spec_destroy(s);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        s = NULL;
        cr_expect_eq(svp_spec_load_string("steps: 4\n", "j.yaml", &bad[i], 1, err,
                                          sizeof(err), &s),
                     SVP_ERR_SPEC, "accepted %s", bad[i]);
        cr_expect_not_null(strstr(err, "expected a list like [a, b]"), "%s", err);
        svp_spec_destroy(s);
    }
}

/*
 * One row per class of bad input: the message must say where and what.
 * Arrays, not pointers: Criterion runs each parameter in a fresh process
 * image, where pointers into the parent's data would dangle.
 */
typedef struct {
    char yaml[96];
    char override[32];
    char expect[3][96];
} bad_case_t;

static bad_case_t bad_cases[] = {
    {"steps: 8\nstpes: 3\n",
     "",
     {"j.yaml:2:1:", "unknown key 'stpes'", "did you mean 'steps'"}},
    {"comm:\n  deadlin: 3\n",
     "",
     {"j.yaml:2:3:", "'comm.deadlin'", "did you mean 'comm.deadline'"}},
    {"steps: many\n",
     "",
     {"j.yaml:1:8:", "key 'steps'",
      "expected an integer in [1, 10000], found 'many'"}},
    {"steps: 0\n", "", {"j.yaml:1:8:", "key 'steps'", "found '0'"}},
    {"comm:\n  deadline: soon\n",
     "",
     {"j.yaml:2:13:", "key 'comm.deadline'", "expected a number"}},
    {"model:\n  kind: sdxl\n",
     "",
     {"j.yaml:2:9:", "key 'model.kind'",
      "expected one of dummy, svd, found 'sdxl'"}},
    {"latent_shape: [1, 2, 3]\n",
     "",
     {"j.yaml:1:15:", "key 'latent_shape'", "expected 5 integers"}},
    {"steps: [1, 2]\n",
     "",
     {"j.yaml:1:8:", "key 'steps'", "expected a scalar, found a list"}},
    {"comm: 5\n", "", {"j.yaml:1:7:", "key 'comm'", "expected a mapping"}},
    {"steps: 8\nsteps: 9\n", "", {"j.yaml:2:1:", "duplicate key 'steps'", "line 1"}},
    {"steps: [8\n", "", {"j.yaml:", "invalid YAML", ""}},
    {"- a\n- b\n", "", {"j.yaml:1:1:", "expected a mapping of keys at the top", ""}},
    {"model: {kind: svd}\n",
     "",
     {"j.yaml:", "key 'model.path'", "expected a model folder"}},
    {"output: {mp4: maybe}\n",
     "",
     {"j.yaml:1:15:", "key 'output.mp4'", "expected true or false"}},
    {"",
     "sampels=3",
     {"j.yaml:", "unknown key 'sampels'", "did you mean 'samples'"}},
    {"", "steps", {"j.yaml:", "--set 'steps': expected key=value", ""}},
    {"", "seed=-1", {"j.yaml:", "key 'seed'", "non-negative"}},
    {"video: {min_guidance: 4, max_guidance: 3}\n",
     "",
     {"j.yaml:", "video.min_guidance", "max_guidance"}},
    {"comm: {gpu_direct: yes}\n",
     "",
     {"j.yaml:1:20:", "key 'comm.gpu_direct'", "expected one of auto, on, off"}},
    {"comm: {gpu_direct: on}\n",
     "",
     {"j.yaml:", "key 'comm.gpu_direct'", "auto or off with device cpu"}},
    {"", "comm.gpu_direct=on", {"j.yaml:", "key 'comm.gpu_direct'", "found on"}},
    {"device: cuda\ncomm: {gpu_direct: on}\n",
     "",
     {"j.yaml:", "key 'comm.gpu_direct'", "with model.kind dummy"}},
};

ParameterizedTestParameters(spec, bad_input)
{
    return cr_make_param_array(bad_case_t, bad_cases,
                               sizeof(bad_cases) / sizeof(bad_cases[0]));
}

ParameterizedTest(bad_case_t *c, spec, bad_input)
{
    svp_spec_t *s         = NULL;
    char        err[1024] = "";
    const char *ov[1]     = {c->override};
    int         nov       = (c->override[0] != '\0');
    int         i;

    cr_assert_eq(svp_spec_load_string(c->yaml, "j.yaml", ov, nov, err, sizeof(err),
                                      &s),
                 SVP_ERR_SPEC, "accepted: %s", c->yaml);
    cr_assert_null(s, "output written on failure");
    for (i = 0; i < 3; ++i) {
        cr_assert(strstr(err, c->expect[i]) != NULL, "message '%s' lacks '%s'", err,
                  c->expect[i]);
    }
}

Test(spec, missing_file_names_it)
{
    svp_spec_t *s        = NULL;
    char        err[512] = "";

    cr_assert_eq(svp_spec_load("/nonexistent/job.yaml", NULL, 0, err, sizeof(err),
                               &s),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "/nonexistent/job.yaml") != NULL, "%s", err);
}

/*
 * A spec read from its file keeps where the file wrote each value: keys,
 * list items and mapping entries, with their text as written; nothing for
 * a --set, a default, a key written with a '.' in it, or a spec loaded
 * from a string.
 */
Test(spec, marks_say_where_the_file_wrote_values)
{
    const char            *ov[]  = {"cluster.partition=p"};
    char                   dir[] = "/tmp/svp_spec_XXXXXX", path[512], err[512] = "";
    const svp_spec_mark_t *m;
    svp_spec_t            *s = NULL;
    FILE                  *f;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/job.yaml", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("steps: 8\n"
          "cluster:\n"
          "  env: {A: x, B: y}\n"
          "  setup:\n"
          "    - one\n"
          "    - two\n"
          "cluster.time: \"10\"\n",
          f);
    fclose(f);
    cr_assert_eq(svp_spec_load(path, ov, 1, err, sizeof(err), &s), SVP_OK, "%s",
                 err);
    m = svp_spec_mark_find(s, "steps");
    cr_assert_not_null(m);
    cr_expect_eq(m->line, 1);
    cr_expect_eq(m->column, 8);
    cr_expect_str_eq(m->text, "8");
    m = svp_spec_mark_find(s, "cluster.env");
    cr_assert_not_null(m);
    cr_expect_eq(m->line, 3);
    cr_expect_eq(m->column, 8);
    cr_expect_null(m->text);
    m = svp_spec_mark_find(s, "cluster.env.B");
    cr_assert_not_null(m);
    cr_expect_eq(m->column, 18);
    cr_expect_str_eq(m->text, "y");
    m = svp_spec_mark_find(s, "cluster.setup[1]");
    cr_assert_not_null(m);
    cr_expect_eq(m->line, 6);
    cr_expect_eq(m->column, 7);
    cr_expect_str_eq(m->text, "two");
    cr_expect_null(svp_spec_mark_find(s, "cluster.setup[2]"));
    cr_expect_null(svp_spec_mark_find(s, "cluster.partition"));
    cr_expect_null(svp_spec_mark_find(s, "cluster.time"));
    cr_expect_null(svp_spec_mark_find(s, "cluster.nodes"));
    svp_spec_destroy(s);
    unlink(path);
    rmdir(dir);

    cr_assert_eq(svp_spec_load_string("steps: 8\n", "j.yaml", NULL, 0, err,
                                      sizeof(err), &s),
                 SVP_OK);
    cr_expect_null(svp_spec_mark_find(s, "steps"));
    svp_spec_destroy(s);
}

/*
 * Paths a job reads, written relative in the file, name files beside the
 * spec; --set values and what a job writes stay as given.
 */
Test(spec, relative_paths_resolve_against_the_spec_folder)
{
    const char *ov[]  = {"model.conditioning=c.safetensors"};
    char        dir[] = "/tmp/svp_spec_XXXXXX", path[512], err[512] = "";
    svp_spec_t *s = NULL;
    FILE       *f;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/job.yaml", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("model: {kind: svd, path: models/svd}\n"
          "video: {inputs: [a.png, /abs/b.png, imgs]}\n"
          "output: {dir: out}\n"
          "log: {trace: tr}\n"
          "cluster: {worker: ../bin/svdworker}\n",
          f);
    fclose(f);
    cr_assert_eq(svp_spec_load(path, ov, 1, err, sizeof(err), &s), SVP_OK, "%s",
                 err);
    snprintf(path, sizeof(path), "%s/models/svd", dir);
    cr_assert_str_eq(s->model.path, path);
    snprintf(path, sizeof(path), "%s/a.png", dir);
    cr_assert_str_eq(s->video.inputs.items[0], path);
    cr_assert_str_eq(s->video.inputs.items[1], "/abs/b.png");
    snprintf(path, sizeof(path), "%s/imgs", dir);
    cr_assert_str_eq(s->video.inputs.items[2], path);
    snprintf(path, sizeof(path), "%s/../bin/svdworker", dir);
    cr_assert_str_eq(s->cluster.worker, path);
    cr_assert_str_eq(s->model.conditioning, "c.safetensors");
    cr_assert_str_eq(s->output.dir, "out");
    cr_assert_str_eq(s->log.trace, "tr");
    svp_spec_destroy(s);

    /* a bare worker name is looked up on PATH, not beside the spec */
    snprintf(path, sizeof(path), "%s/job.yaml", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("cluster: {worker: svdworker}\n", f);
    fclose(f);
    cr_assert_eq(svp_spec_load(path, NULL, 0, err, sizeof(err), &s), SVP_OK);
    cr_assert_str_eq(s->cluster.worker, "svdworker");
    svp_spec_destroy(s);
    unlink(path);
    rmdir(dir);
}

Test(spec, dump_parses_back)
{
    const char *ov[] = {"cluster.env.A=x \"q\"", "video.inputs=[a b.png, c.png]",
                        "seed=18446744073709551615"};
    svp_spec_t *a = NULL, *b = NULL;
    char       *yaml, *yaml2, err[512];

    cr_assert_eq(svp_spec_load_string("steps: 12\n", "j.yaml", ov, 3, err,
                                      sizeof(err), &a),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_spec_dump(a, &yaml), SVP_OK);
    cr_assert_eq(svp_spec_load_string(yaml, "j.yaml", NULL, 0, err, sizeof(err), &b),
                 SVP_OK, "%s\n%s", err, yaml);
    cr_assert_eq(svp_spec_dump(b, &yaml2), SVP_OK);
    cr_assert_str_eq(yaml, yaml2);
    cr_assert_eq(b->seed, UINT64_MAX);
    cr_assert_str_eq(b->cluster.env.values[0], "x \"q\"");
    free(yaml);
    free(yaml2);
    svp_spec_destroy(a);
    svp_spec_destroy(b);
}

/* Step assignment over a table of (T, W). */
Test(steps, assignment_table)
{
    static const int ok[][2] = {{8, 1},  {8, 2},  {8, 4},  {8, 8},  {28, 7},
                                {28, 4}, {25, 5}, {25, 1}, {30, 3}, {1, 1}};
    size_t           i;
    int              r, next;
    svp_step_range_t range;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); ++i) {
        next = 0;
        for (r = 0; r < ok[i][1]; ++r) {
            cr_assert_eq(svp_layout_assign(ok[i][0], ok[i][1], r, NULL, 0, &range),
                         SVP_OK);
            cr_assert_eq(range.begin, next, "T=%d W=%d r=%d", ok[i][0], ok[i][1], r);
            cr_assert_eq(range.end - range.begin, ok[i][0] / ok[i][1]);
            next = range.end;
        }
        cr_assert_eq(next, ok[i][0], "ranges must cover all steps");
    }
}

Test(steps, not_divisible_names_alternatives)
{
    char             err[512] = "";
    svp_step_range_t range    = {-7, -7};

    cr_assert_eq(svp_layout_assign(25, 4, 0, err, sizeof(err), &range),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "steps=25") && strstr(err, "4 ranks") &&
                  strstr(err, "steps=24") && strstr(err, "steps=28"),
              "%s", err);
    cr_assert_eq(range.begin, -7, "output written on failure");

    cr_assert_eq(svp_layout_assign(3, 7, 0, err, sizeof(err), &range), SVP_ERR_SPEC);
    cr_assert(strstr(err, "steps=7") != NULL, "%s", err);
    cr_assert_eq(svp_layout_assign(8, 2, 2, err, sizeof(err), &range),
                 SVP_ERR_INVALID_PARAM);
}

/* Every valid layout of W = 6, T = 12: groups of contiguous ranks, each
 * covering all steps once. */
Test(steps, layout_groups_cover_steps)
{
    static const int   valid[] = {1, 2, 3, 6};
    svp_layout_t       l;
    svp_layout_place_t at;
    svp_step_range_t   range;
    size_t             i;
    int                r, next = 0;

    for (i = 0; i < sizeof(valid) / sizeof(valid[0]); ++i) {
        cr_assert(svp_layout_valid(12, 6, valid[i]));
        cr_assert_eq(svp_layout_make(12, 6, valid[i], 1, SVP_PLACEMENT_ENDS, NULL, 0,
                                     &l),
                     SVP_OK);
        cr_assert_eq(l.groups * l.stages, 6);
        cr_assert_eq(l.world, 6);
        cr_assert_eq(l.k, 12 / valid[i]);
        for (r = 0; r < 6; ++r) {
            at    = svp_layout_where(&l, r);
            range = svp_layout_range(&l, at.position);
            cr_assert_eq(at.group, r / valid[i]);
            cr_assert_eq(at.lane, 0);
            cr_assert_eq(svp_layout_rank(&l, at.group, at.position, at.lane), r);
            next = (at.position == 0) ? 0 : next;
            cr_assert_eq(range.begin, next, "S=%d r=%d", valid[i], r);
            cr_assert_eq(range.end - range.begin, 12 / valid[i]);
            next = range.end;
            if (at.position == l.stages - 1) {
                cr_assert_eq(next, 12, "a group covers all steps");
            }
        }
    }
    /* 0 is one pipeline of all ranks */
    cr_assert_eq(svp_layout_make(12, 6, 0, 1, SVP_PLACEMENT_ENDS, NULL, 0, &l),
                 SVP_OK);
    cr_assert_eq(l.stages, 6);
    cr_assert_eq(l.groups, 1);
}

Test(steps, bad_layout_names_w_s_g_t)
{
    char         err[512] = "";
    svp_layout_t l        = {.stages = -7};

    cr_assert_eq(svp_layout_make(12, 6, 4, 1, SVP_PLACEMENT_ENDS, err, sizeof(err),
                                 &l),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "S=4") && strstr(err, "W=6") && strstr(err, "G=W/S=1.5") &&
                  strstr(err, "T=12") && strstr(err, "valid S: 1, 2, 3, 6") &&
                  strstr(err, "nearest: S=3"),
              "%s", err);
    cr_assert_eq(l.stages, -7, "output written on failure");
    cr_assert_eq(svp_layout_make(28, 448, 448, 1, SVP_PLACEMENT_ENDS, err,
                                 sizeof(err), &l),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "T must divide by S") && strstr(err, "nearest: S=28") &&
                  strstr(err, "G=16"),
              "%s", err);
}

/* Guidance pairs (W = G x S x C): a stage's two ranks are adjacent, the
 * groups contiguous, and each pair covers the steps of its stage. */
Test(steps, layout_pairs)
{
    svp_layout_t       l;
    svp_layout_place_t at;
    svp_step_range_t   range;
    char               err[512] = "";
    int                r;

    /* W = 8, S = 2, C = 2: G = 2 */
    cr_assert_eq(svp_layout_make(12, 8, 2, 2, SVP_PLACEMENT_ENDS, NULL, 0, &l),
                 SVP_OK);
    cr_assert_eq(l.pairs, 2);
    cr_assert_eq(l.groups, 2);
    cr_assert_eq(l.stages, 2);
    cr_assert_eq(l.k, 6);
    for (r = 0; r < 8; ++r) {
        at    = svp_layout_where(&l, r);
        range = svp_layout_range(&l, at.position);
        cr_assert_eq(at.group, r / 4);
        cr_assert_eq(at.position, (r % 4) / 2, "rank %d", r);
        cr_assert_eq(at.lane, r % 2);
        cr_assert_eq(svp_layout_rank(&l, at.group, 0, 0), (r / 4) * 4);
        cr_assert_eq(svp_layout_rank(&l, at.group, at.position, at.lane), r);
        cr_assert_eq(range.begin, at.position * 6);
        cr_assert_eq(range.end, at.position * 6 + 6);
    }
    /* stages 0: one pipeline of W / C pairs */
    cr_assert_eq(svp_layout_make(12, 6, 0, 2, SVP_PLACEMENT_ENDS, NULL, 0, &l),
                 SVP_OK);
    at = svp_layout_where(&l, 5);
    cr_assert(l.stages == 3 && l.groups == 1 && at.position == 2 && at.lane == 1);
    /* C = 1 is the plain layout */
    cr_assert_eq(svp_layout_make(12, 6, 3, 1, SVP_PLACEMENT_ENDS, NULL, 0, &l),
                 SVP_OK);
    at = svp_layout_where(&l, 4);
    cr_assert(l.pairs == 1 && at.lane == 0 && at.position == 1 && l.groups == 2);
    /* an odd W, or S not dividing W / C: the valid (G, S, C) named */
    cr_assert_eq(svp_layout_make(12, 7, 1, 2, SVP_PLACEMENT_ENDS, err, sizeof(err),
                                 &l),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "C=2 with S=1 does not fit W=7") &&
                  strstr(err, "valid (G, S, C): (7, 1, 1)") && !strstr(err, ", 2)"),
              "%s", err);
    cr_assert_eq(svp_layout_make(6, 4, 4, 2, SVP_PLACEMENT_ENDS, err, sizeof(err),
                                 &l),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "valid (G, S, C): (4, 1, 1), (2, 2, 1), (2, 1, 2), "
                          "(1, 2, 2)"),
              "%s", err);
}

/* The dealing of samples to groups, and where they begin and end. */
Test(steps, layout_deals_and_places)
{
    svp_layout_t l;
    int          g, j, k, n, count[3] = {0};

    cr_assert_eq(svp_layout_make(12, 12, 2, 2, SVP_PLACEMENT_SPREAD, NULL, 0, &l),
                 SVP_OK);
    cr_assert_eq(l.groups, 3);
    for (k = 0; k < 11; ++k) {
        svp_layout_deal(&l, k, &g, &j);
        cr_assert_eq(g, k % 3);
        cr_assert_eq(j, count[g]++, "the group's samples in the job's order");
        /* spread: position j mod S encodes and finishes; lane 0 writes */
        cr_assert_eq(svp_layout_place(&l, j, SVP_LAYOUT_ENCODES), j % 2);
        cr_assert_eq(svp_layout_owner(&l, k), g * 4 + (j % 2) * 2);
    }
    for (g = 0, n = 0; g < 3; ++g) {
        cr_assert_eq(svp_layout_group_samples(&l, 11, g), count[g]);
        n += count[g];
    }
    cr_assert_eq(n, 11);
    cr_assert_eq(svp_layout_group_samples(&l, 2, 2), 0);
    l.placement = SVP_PLACEMENT_ENDS;
    cr_assert_eq(svp_layout_place(&l, 5, SVP_LAYOUT_ENCODES), 0);
    cr_assert_eq(svp_layout_place(&l, 5, SVP_LAYOUT_FINISHES), 1);
    cr_assert_eq(svp_layout_owner(&l, 4), 4 + 2);
}

#include "jobspec/spec_int.h"

/* The man page documents every key the parser accepts. */
Test(spec, man_page_lists_every_key)
{
    const char *top = getenv("SVP_TOP_SRCDIR");
    char        path[1024], *text, needle[160];
    int         i;

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    snprintf(path, sizeof(path), "%s/doc/svdpipe-job.5", top);
    cr_assert_eq(svp_file_read_all(path, &text, NULL), SVP_OK, "%s", path);
    for (i = 0; i < svp_spec_num_keys; ++i) {
        snprintf(needle, sizeof(needle), ".B %s\n", svp_spec_keys[i].path);
        cr_expect(strstr(text, needle) != NULL, "doc/svdpipe-job.5 lacks key %s",
                  svp_spec_keys[i].path);
    }
    free(text);
}

Test(spec, shared_dump_diff_names_keys_and_skips_per_rank_keys)
{
    const char *a_sets[] = {"name=j", "seed=1", "log.level=debug", "output.dir=a"};
    const char *b_sets[] = {"name=j", "seed=2", "steps=4", "output.dir=b"};
    svp_spec_t *a, *b;
    char        err[256], diff[512], *ta, *tb;

    cr_assert_eq(svp_spec_load_string("", "a.yaml", a_sets, 4, err, sizeof(err), &a),
                 SVP_OK);
    cr_assert_eq(svp_spec_load_string("", "b.yaml", b_sets, 4, err, sizeof(err), &b),
                 SVP_OK);
    cr_assert_eq(svp_spec_dump_shared(a, &ta), SVP_OK);
    cr_assert_eq(svp_spec_dump_shared(b, &tb), SVP_OK);
    cr_assert_null(strstr(ta, "log.level"), "per-rank key in the shared dump");
    cr_assert_null(strstr(ta, "output.dir"), "per-rank key in the shared dump");
    cr_assert_not_null(strstr(ta, "seed: 1"));
    cr_assert_eq(svp_spec_diff(ta, tb, diff, sizeof(diff)), 2, "%s", diff);
    cr_assert_str_eq(diff, "steps: 8 vs 4; seed: 1 vs 2");
    cr_assert_eq(svp_spec_diff(ta, ta, diff, sizeof(diff)), 0);
    free(ta);
    free(tb);
    svp_spec_destroy(a);
    svp_spec_destroy(b);
}

/*
 * Hostile specs: each is refused quickly, within a bounded memory, with a
 * message naming the limit, the same from a string and from a file (the
 * path the worker and svdlaunch take).  The big ones are made here; small
 * ones are also fuzz seeds (tests/fuzz/seeds/spec).
 */
typedef struct {
    char  *text;
    size_t len, cap;
} text_t;

static void text_add(text_t *t, const char *s, size_t times)
{
    size_t n = strlen(s);

    while (t->len + n * times + 1 > t->cap) {
        t->cap  = t->cap * 2 + 4096;
        t->text = realloc(t->text, t->cap);
        cr_assert_not_null(t->text);
    }
    while (times-- > 0) {
        memcpy(t->text + t->len, s, n);
        t->len += n;
    }
    t->text[t->len] = '\0';
}

static void text_fill(text_t *t, char c, size_t n)
{
    text_add(t, "", 0);
    while (t->len + n + 1 > t->cap) {
        t->cap  = t->cap * 2 + n;
        t->text = realloc(t->text, t->cap);
        cr_assert_not_null(t->text);
    }
    memset(t->text + t->len, c, n);
    t->len += n;
    t->text[t->len] = '\0';
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long maxrss_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Writes text to a new file in a new folder; *dir_p is removed with it. */
static void text_to_file(const text_t *t, char *dir, char *path, size_t pathlen)
{
    FILE *f;

    strcpy(dir, "/tmp/svp_spec_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, pathlen, "%s/job.yaml", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(t->text, 1, t->len, f), t->len);
    fclose(f);
}

/*
 * Refused from the string and from a file, each in under 1 s and under
 * 100 MB more resident memory (the figures: the deep spec did not
 * finish in 60 s, the alias spec reached 823 MB), naming the limit.
 */
static void expect_refused(text_t *t, const char *where, const char *limit)
{
    char        dir[64], path[128], err[1024] = "";
    svp_spec_t *s = NULL;
    long        rss0;
    double      t0, dt;
    int         from_file;

    for (from_file = 0; from_file < 2; ++from_file) {
        if (from_file) {
            text_to_file(t, dir, path, sizeof(path));
        }
        rss0 = maxrss_kb();
        t0   = now_s();
        cr_assert_neq(from_file ? svp_spec_load(path, NULL, 0, err, sizeof(err), &s)
                                : svp_spec_load_string(t->text, "j.yaml", NULL, 0,
                                                       err, sizeof(err), &s),
                      SVP_OK, "a hostile spec was accepted");
        dt = now_s() - t0;
        cr_assert_null(s);
        cr_assert_lt(dt, 1.0, "refused after %.2f s: %s", dt, err);
        cr_assert_lt(maxrss_kb() - rss0, 100 * 1024, "parsing took %ld MB more",
                     (maxrss_kb() - rss0) / 1024);
        cr_assert_not_null(strstr(err, limit), "message '%s' lacks '%s'", err,
                           limit);
        if (from_file) {
            cr_assert_eq(strncmp(err, path, strlen(path)), 0, "%s", err);
            cr_assert_not_null(strstr(err, where + strlen("j.yaml")), "%s", err);
            unlink(path);
            rmdir(dir);
        } else {
            cr_assert_eq(strncmp(err, where, strlen(where)), 0,
                         "message '%s' does not start '%s'", err, where);
        }
    }
    free(t->text);
}

Test(spec_limits, deep_nesting_2mb)
{
    text_t t = {0};

    text_add(&t, "steps: ", 1);
    text_add(&t, "[", 1000000);
    text_add(&t, "]", 1000000);
    text_add(&t, "\n", 1);
    /* the top mapping is level 1: the 32nd '[' opens level 33 */
    expect_refused(&t, "j.yaml:1:39:", "over the nesting depth limit of 32");
}

Test(spec_limits, depth_at_the_limit_reaches_the_keys)
{
    text_t      t        = {0};
    char        err[512] = "";
    svp_spec_t *s        = NULL;

    text_add(&t, "steps: ", 1);
    text_add(&t, "[", 31);
    text_add(&t, "]", 31);
    cr_assert_eq(svp_spec_load_string(t.text, "j.yaml", NULL, 0, err, sizeof(err),
                                      &s),
                 SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err, "key 'steps': expected a scalar, found a list"),
                       "%s", err);
    free(t.text);
}

/* The case: one 1 MB value anchored and used 256 times in each of
 * three lists; the value itself is over the string limit. */
Test(spec_limits, alias_of_a_1mb_value)
{
    text_t t = {0};

    text_add(&t, "cluster:\n  env: {A: &a ", 1);
    text_fill(&t, 'x', 1000000);
    text_add(&t, "}\n  container_mounts: [", 1);
    text_add(&t, "*a, ", 255);
    text_add(&t, "*a]\nvideo:\n  inputs: [", 1);
    text_add(&t, "*a, ", 255);
    text_add(&t, "*a]\n  seeds: [", 1);
    text_add(&t, "*a, ", 255);
    text_add(&t, "*a]\n", 1);
    expect_refused(&t,
                   "j.yaml:2:12:", "over the string length limit of 16384 bytes");
}

/* Within the string limit: 64 anchors of 15,000 bytes (a 1 MB spec), used
 * 256 times in each of three lists, would copy 11 MB of strings; the 18th
 * use passes 256 KiB. */
Test(spec_limits, alias_amplification_1mb)
{
    text_t t = {0};
    char   item[64];
    int    i, l;

    text_add(&t, "cluster:\n  env:\n", 1);
    for (i = 0; i < 64; ++i) {
        snprintf(item, sizeof(item), "    A%d: &a%d ", i, i);
        text_add(&t, item, 1);
        text_fill(&t, 'a' + i % 26, 15000);
        text_add(&t, "\n", 1);
    }
    for (l = 0; l < 3; ++l) {
        text_add(&t,
                 (l == 0)   ? "  container_mounts: ["
                 : (l == 1) ? "video:\n  inputs: ["
                            : "  seeds: [",
                 1);
        for (i = 0; i < 256; ++i) {
            snprintf(item, sizeof(item), "*a%d%s", i % 64, (i < 255) ? ", " : "]\n");
            text_add(&t, item, 1);
        }
    }
    cr_assert_gt(t.len, 960000);
    expect_refused(&t,
                   "j.yaml:67:", "over the alias expansion limit of 262144 bytes");
}

/* Billion laughs in lists: each level is ten aliases of the one before. */
Test(spec_limits, nested_aliases_hit_the_node_limit)
{
    text_t t = {0};

    text_add(&t,
             "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
             "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
             "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
             "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
             "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
             1);
    expect_refused(&t, "j.yaml:5:", "over the node limit of 16384");
}

Test(spec_limits, alias_uses_counted)
{
    text_t t = {0};

    text_add(&t, "name: &n job\nvideo: {inputs: [", 1);
    text_add(&t, "*n, ", 300);
    text_add(&t, "*n]}\n", 1);
    expect_refused(&t, "j.yaml:2:", "over the alias limit of 256");
}

/* Anchors with long names that share a prefix: each new one is compared
 * with all before it, so their number is bounded too. */
Test(spec_limits, anchors_counted)
{
    text_t t = {0};
    char   item[32];
    int    i;

    text_add(&t, "video: {inputs: [", 1);
    for (i = 0; i < 300; ++i) {
        text_add(&t, "&", 1);
        text_fill(&t, 'a', 12000);
        snprintf(item, sizeof(item), "%d x, ", i);
        text_add(&t, item, 1);
    }
    text_add(&t, "x]}\n", 1);
    expect_refused(&t, "j.yaml:1:", "over the anchor limit of 256");
}

Test(spec_limits, long_lists_and_mappings)
{
    text_t t = {0};
    char   item[32];
    int    i;

    text_add(&t, "video: {seeds: [", 1);
    text_add(&t, "1, ", 5000);
    text_add(&t, "1]}\n", 1);
    expect_refused(&t, "j.yaml:1:", "over the list length limit of 4096");

    memset(&t, 0, sizeof(t));
    text_add(&t, "cluster: {env: {", 1);
    for (i = 0; i < 5000; ++i) {
        snprintf(item, sizeof(item), "K%d: v, ", i);
        text_add(&t, item, 1);
    }
    text_add(&t, "}}\n", 1);
    expect_refused(&t, "j.yaml:1:", "over the list length limit of 4096");

    /* short lists, many of them: the node limit */
    memset(&t, 0, sizeof(t));
    for (i = 0; i < 6; ++i) {
        snprintf(item, sizeof(item), "k%d: [", i);
        text_add(&t, item, 1);
        text_add(&t, "1, ", 3000);
        text_add(&t, "1]\n", 1);
    }
    expect_refused(&t, "j.yaml:6:", "over the node limit of 16384");
}

Test(spec_limits, long_strings)
{
    text_t      t        = {0};
    char        err[512] = "", *ov;
    const char *sets[1];
    svp_spec_t *s = NULL;

    /* 10 MB: over the size limit before a byte is parsed */
    text_add(&t, "name: ", 1);
    text_fill(&t, 'n', 10 << 20);
    expect_refused(&t, "j.yaml: ", "over the size limit of 4194304 bytes");

    /* 1 MB: within the size, over the string limit */
    memset(&t, 0, sizeof(t));
    text_add(&t, "name: ", 1);
    text_fill(&t, 'n', 1 << 20);
    expect_refused(&t, "j.yaml:1:7:",
                   "a value of 1048576 bytes: over the string "
                   "length limit of 16384 bytes");

    /* at the limit, accepted; one more, refused */
    memset(&t, 0, sizeof(t));
    text_add(&t, "name: ", 1);
    text_fill(&t, 'n', 16384);
    cr_assert_eq(svp_spec_load_string(t.text, "j.yaml", NULL, 0, err, sizeof(err),
                                      &s),
                 SVP_OK, "%s", err);
    cr_assert_eq(strlen(s->name), 16384);
    svp_spec_destroy(s);
    s = NULL;
    text_add(&t, "n", 1);
    cr_assert_eq(svp_spec_load_string(t.text, "j.yaml", NULL, 0, err, sizeof(err),
                                      &s),
                 SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err, "16385 bytes"), "%s", err);
    free(t.text);

    /* and from --set */
    ov = malloc(20000);
    cr_assert_not_null(ov);
    strcpy(ov, "name=");
    memset(ov + 5, 'n', 20000 - 6);
    ov[20000 - 1] = '\0';
    sets[0]       = ov;
    cr_assert_eq(svp_spec_load_string("", "j.yaml", sets, 1, err, sizeof(err), &s),
                 SVP_ERR_SPEC);
    cr_assert_not_null(strstr(err, "--set name: a value of 19994 bytes: over the "
                                   "string length limit of 16384"),
                       "%s", err);
    free(ov);
}

/* A list of long values for latent_shape used to be joined past the end of
 * a 4 KB stack buffer. */
Test(spec_limits, long_values_in_a_shape)
{
    text_t      t        = {0};
    char        err[512] = "";
    svp_spec_t *s        = NULL;

    text_add(&t, "latent_shape: [", 1);
    text_fill(&t, '1', 3000);
    text_add(&t, ", ", 1);
    text_fill(&t, '2', 3000);
    text_add(&t, ", ", 1);
    text_fill(&t, '3', 3000);
    text_add(&t, "]\n", 1);
    cr_assert_eq(svp_spec_load_string(t.text, "j.yaml", NULL, 0, err, sizeof(err),
                                      &s),
                 SVP_ERR_SPEC);
    cr_assert_not_null(
        strstr(err, "j.yaml:1:15: key 'latent_shape': expected 5 integers"), "%s",
        err);
    free(t.text);
}

Test(spec_limits, composer_errors_keep_libyaml_words)
{
    static const char *const cases[][2] = {
        {"name: *nope\n", "j.yaml:1:7: invalid YAML: found undefined alias"},
        {"a: &x 1\nb: &x 2\n", "j.yaml:2:4: invalid YAML: found duplicate anchor "
                               "(first at line 1)"},
        {"video: {inputs: &l [a, *l]}\n",
         "j.yaml:1:24: alias *l inside the node it names"},
    };
    char        err[512];
    svp_spec_t *s = NULL;
    size_t      i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        err[0] = '\0';
        cr_assert_eq(svp_spec_load_string(cases[i][0], "j.yaml", NULL, 0, err,
                                          sizeof(err), &s),
                     SVP_ERR_SPEC);
        cr_assert_str_eq(err, cases[i][1]);
    }
    /* an alias within the limits reads as its anchor's value */
    cr_assert_eq(svp_spec_load_string("name: &n job\nvideo: {inputs: [*n, *n]}\n",
                                      "j.yaml", NULL, 0, err, sizeof(err), &s),
                 SVP_OK, "%s", err);
    cr_assert_eq(s->video.inputs.count, 2);
    cr_assert_str_eq(s->video.inputs.items[1], "job");
    svp_spec_destroy(s);
}

/* The man page's table of limits says what the parser holds to. */
Test(spec_limits, man_page_states_the_limits)
{
    const char *top = getenv("SVP_TOP_SRCDIR");
    char        path[1024], *text, needle[9][64];
    int         i;

    if (top == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    snprintf(path, sizeof(path), "%s/doc/svdpipe-job.5", top);
    cr_assert_eq(svp_file_read_all(path, &text, NULL), SVP_OK, "%s", path);
    snprintf(needle[0], 64, "(%d bytes)\n", SVP_SPEC_LIMIT_BYTES);
    snprintf(needle[1], 64, " %d levels\n", SVP_SPEC_LIMIT_DEPTH);
    snprintf(needle[2], 64, " %d bytes\n", SVP_SPEC_LIMIT_STRING);
    snprintf(needle[3], 64, "mapping                  %d\n", SVP_SPEC_LIMIT_ENTRIES);
    snprintf(needle[4], 64, "used)    %d\n", SVP_SPEC_LIMIT_NODES);
    snprintf(needle[5], 64, "(*name)                         %d\n",
             SVP_SPEC_LIMIT_ALIASES);
    snprintf(needle[6], 64, "(%d bytes)\n", SVP_SPEC_LIMIT_ALIAS_BYTES);
    snprintf(needle[7], 64, "at most %d entries", SVP_SPEC_MAX_LIST);
    snprintf(needle[8], 64, "(&name)                                 %d\n",
             SVP_SPEC_LIMIT_ANCHORS);
    for (i = 0; i < 9; ++i) {
        cr_expect_not_null(strstr(text, needle[i]), "doc/svdpipe-job.5 lacks '%s'",
                           needle[i]);
    }
    free(text);
}

static void expect_not_regular(const char *file, const char *kind)
{
    char        err[512] = "";
    svp_spec_t *s        = NULL;
    double      t0       = now_s();

    cr_assert_eq(svp_spec_load(file, NULL, 0, err, sizeof(err), &s), SVP_ERR_SPEC);
    cr_assert_lt(now_s() - t0, 1.0);
    cr_assert_null(s);
    cr_assert_eq(strncmp(err, file, strlen(file)), 0, "%s", err);
    cr_assert_not_null(strstr(err, "not a regular file"), "%s", err);
    cr_assert_not_null(strstr(err, kind), "%s", err);
}

/* .timeout: a FIFO with no writer used to block the open for ever */
Test(spec_limits, only_regular_files, .timeout = 10)
{
    char dir[] = "/tmp/svp_spec_XXXXXX", fifo[64];

    expect_not_regular("/dev/zero", "a character device");
    cr_assert_not_null(mkdtemp(dir));
    expect_not_regular(dir, "a directory");
    snprintf(fifo, sizeof(fifo), "%s/job.yaml", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    expect_not_regular(fifo, "a FIFO");
    unlink(fifo);
    rmdir(dir);
}

/*
 * Out of memory while parsing: a message a person can read (it used to be
 * whatever the caller's buffer held).  In a child whose data may grow only
 * 1 MB more, a spec of 200 values of 15,000 bytes needs about 9 MB.
 * RLIMIT_DATA, not RLIMIT_AS: malloc's thread arenas reserve 64 MB of
 * address space up front (OpenBLAS and Criterion start threads), which a
 * parse then fills without growing the address space.  The spec is
 * written into a mapping of its own: text_t's reallocations would leave
 * megabytes free in the heap for the parse to use.  AddressSanitizer aborts
 * on a failed allocation, so this is skipped under it.
 */
Test(spec_limits, out_of_memory_says_so)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer dies on a failed allocation");
#else
    const size_t  len = 17 + 200 * (4 + 15000 + 1);
    char         *text, *p, err[1024];
    struct rlimit rl;
    long          pages;
    FILE         *statm;
    int           fds[2], status, i, printable = 1;
    ssize_t       n;
    pid_t         pid;

    text = mmap(NULL, len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    cr_assert_neq(text, MAP_FAILED);
    p = text + sprintf(text, "video:\n  inputs:\n");
    for (i = 0; i < 200; ++i) {
        p += sprintf(p, "  - ");
        memset(p, 'p', 15000);
        p += 15000;
        *p++ = '\n';
    }
    *p = '\0';
    cr_assert_eq((size_t)(p - text), len);
    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        svp_spec_t  *s = NULL;
        svp_status_t st;

        memset(err, 0xff, sizeof(err)); /* what a caller's buffer might hold */
        statm = fopen("/proc/self/statm", "r");
        /* size resident shared text lib data: pages */
        if (statm == NULL || fscanf(statm, "%*d %*d %*d %*d %*d %ld", &pages) != 1) {
            _exit(3);
        }
        fclose(statm);
        rl.rlim_cur = rl.rlim_max = pages * sysconf(_SC_PAGESIZE) + (1 << 20);
        if (setrlimit(RLIMIT_DATA, &rl) != 0) {
            _exit(4);
        }
        /* does the limit bind at all?  Under qemu-user it does not: the
         * emulator maps the guest's memory itself */
        {
            char *volatile probe = malloc(8u << 20);

            if (probe != NULL) {
                probe[0] = 1;
                _exit(6);
            }
        }
        st = svp_spec_load_string(text, "j.yaml", NULL, 0, err, sizeof(err), &s);
        if (write(fds[1], err, strnlen(err, sizeof(err) - 1)) < 0) {
            _exit(5);
        }
        _exit(st == SVP_OK ? 1 : 0);
    }
    close(fds[1]);
    n = read(fds[0], err, sizeof(err) - 1);
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 6) {
        munmap(text, len + 1);
        cr_skip_test("RLIMIT_DATA does not bind this process (8 MB allocated past "
                     "a 1 MB limit: an emulator such as qemu-user maps its memory)");
    }
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child exited %d (1: the spec loaded within 1 MB)",
              WEXITSTATUS(status));
    cr_assert_gt(n, 0);
    err[n] = '\0';
    for (i = 0; i < n; ++i) {
        printable &= (isprint((unsigned char)err[i]) != 0);
    }
    cr_assert(printable, "unreadable message '%s'", err);
    cr_assert_eq(strncmp(err, "j.yaml", 6), 0, "%s", err);
    cr_assert_not_null(strstr(err, "out of memory"), "%s", err);
    munmap(text, len + 1);
#endif
}

/* ---- messages safe to print, YAML 1.2 numbers ---------------------------- */

/* No byte below 0x20 (newline included: a message is one line), no DEL and
 * no invalid UTF-8 in a message. */
static void assert_printable(const char *msg)
{
    size_t bad;

    for (const char *p = msg; *p != '\0'; ++p) {
        cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f,
                  "raw byte 0x%02x in '%s'", (unsigned char)*p, msg);
    }
    cr_assert(svp_utf8_valid(msg, strlen(msg), &bad),
              "invalid UTF-8 at %zu in "
              "a message",
              bad);
}

/* A spec file of len bytes (NULs and bad bytes allowed) loaded; returns
 * the status, the message in err. */
static svp_status_t load_bytes(const char *text, size_t len, char *err, int errlen)
{
    char         dir[] = "/tmp/svp_spec_XXXXXX", path[256];
    svp_spec_t  *s     = NULL;
    FILE        *f;
    svp_status_t st;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/j.yaml", dir);
    f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    st = svp_spec_load(path, NULL, 0, err, errlen, &s);
    svp_spec_destroy(s);
    unlink(path);
    rmdir(dir);
    return st;
}

/*
 * A second document is refused at its start, whatever it holds; the
 * document markers of a single one are fine.
 */
Test(spec, second_document_refused)
{
    static const struct {
        const char *yaml, *mark;
    } bad[] = {
        {"steps: 4\n---\nsteps: 5\n", "j.yaml:2:1:"},
        {"steps: 4\n---\n- not\n- a spec\n", "j.yaml:2:1:"},
        {"---\nsteps: 4\n...\n---\n", "j.yaml:4:1:"},
        {"steps: 4\n...\nnotes: [not yaml\n", "j.yaml:"},
    };
    static const char *good[] = {"---\nsteps: 4\n", "---\nsteps: 4\n...\n",
                                 "steps: 4\n...\n", "steps: 4\n# --- trailing\n"};
    char               err[1024];
    svp_spec_t        *s;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        s = NULL;
        cr_expect_eq(svp_spec_load_string(bad[i].yaml, "j.yaml", NULL, 0, err,
                                          sizeof(err), &s),
                     SVP_ERR_SPEC, "accepted %s", bad[i].yaml);
        cr_expect_null(s);
        cr_expect_not_null(strstr(err, bad[i].mark), "%s: %s", bad[i].yaml, err);
        if (i < 3) {
            cr_expect_not_null(strstr(err, "a second YAML document"), "%s", err);
        }
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        s = NULL;
        cr_expect_eq(svp_spec_load_string(good[i], "j.yaml", NULL, 0, err,
                                          sizeof(err), &s),
                     SVP_OK, "%s: %s", good[i], err);
        cr_expect_eq(s ? s->steps : 0, 4);
        svp_spec_destroy(s);
    }
}

/*
 * Bytes libyaml's reader refuses (not UTF-8, control characters, NUL) are
 * reported at their line and column, with the byte escaped; before, every
 * one was at 1:1.
 */
Test(spec, encoding_errors_name_their_position)
{
    static const struct {
        const char text[48];
        size_t     len;
        const char where[16], byte[8];
    } cases[] = {
        {"steps: 4\nname: x\nseed: 5\xff\n", 25, "j.yaml:3:8:", "0xff"},
        {"steps: 4\nname: x\n  seed: \0\n", 26, "j.yaml:3:9:", "0x00"},
        {"steps: 4\nname: a\x1b[31m\n", 22, "j.yaml:2:8:", "0x1b"},
        {"name: \xc3\xa9t\xc3\xa9\x80\n", 14, "j.yaml:1:10:", "0x80"},
        {"\xfe\xffsteps: 4\n", 11, "j.yaml:1:1:", "0xfe"},
        {"steps: 4\r\nname: x\r\nseed: \x07\r\n", 27, "j.yaml:3:7:", "0x07"},
    };
    char err[1024];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        err[0] = '\0';
        cr_expect_eq(load_bytes(cases[i].text, cases[i].len, err, sizeof(err)),
                     SVP_ERR_SPEC, "case %zu accepted", i);
        cr_expect_not_null(strstr(err, cases[i].where), "case %zu: %s", i, err);
        cr_expect_not_null(strstr(err, cases[i].byte), "case %zu: %s", i, err);
        assert_printable(err);
    }
}

/*
 * What a message quotes from the spec or --set is escaped: terminal
 * sequences, bytes that are not UTF-8, C1 controls, bidi overrides, a BOM.
 */
Test(spec, hostile_text_escaped_in_messages)
{
    static const struct {
        const char *yaml, *set, *shown;
    } cases[] = {
        {"steps: \"\\e[31mred\\e]0;title\\a\"\n", NULL,
         "\\x1b[31mred\\x1b]0;title\\x07"},
        {"name: \"x\"\n\"ke\\ey\": 1\n", NULL, "unknown key 'ke\\x1by'"},
        {"steps: \"\\u009b2J\"\n", NULL, "\\u009b2J"},
        {"model: {kind: \"svd\\u202e\"}\n", NULL, "svd\\u202e"},
        {"", "lo\xff\xfeg.level=warn", "the byte 0xff at offset 2"},
        {"", "steps=\x1b[2J\x1b]0;x\x07", "\\x1b[2J\\x1b]0;x\\x07"},
        {"", "\xef\xbb\xbfsteps=3", "unknown key '\\ufeffsteps'"},
        {"", "cluster.env.A\nB=1", NULL},
        {"", "name\x7f=x", "unknown key 'name\\x7f'"},
    };
    char        err[1024];
    svp_spec_t *s;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        const char *ov[1] = {cases[i].set};

        s      = NULL;
        err[0] = '\0';
        if (svp_spec_load_string(cases[i].yaml, "j.yaml", ov, cases[i].set != NULL,
                                 err, sizeof(err), &s) == SVP_OK) {
            svp_spec_destroy(s); /* an env name is checked by the launcher */
            cr_expect_null(cases[i].shown, "case %zu accepted", i);
            continue;
        }
        assert_printable(err);
        if (cases[i].shown != NULL) {
            cr_expect_not_null(strstr(err, cases[i].shown), "case %zu: %s", i, err);
        }
    }
}

/*
 * Integers as YAML 1.2's core schema reads them: 010 is ten, 0o10 eight,
 * 0x10 sixteen; a quoted value is text, not a number; no blanks, no
 * underscores; a seed is any 64-bit unsigned integer.
 */
Test(spec, numbers_are_yaml_1_2_core_schema)
{
    static const struct {
        const char *yaml, *set;
        int         steps;
        uint64_t    seed;
        double      deadline;
    } good[] = {
        {"steps: 010\n", NULL, 10, 42, 120},
        {"steps: 0o10\n", NULL, 8, 42, 120},
        {"steps: 0x10\n", NULL, 16, 42, 120},
        {"steps: +12\n", NULL, 12, 42, 120},
        {"steps: 08\n", NULL, 8, 42, 120},
        {"seed: 0xffffffffffffffff\n", NULL, 8, UINT64_MAX, 120},
        {"seed: 18446744073709551615\n", NULL, 8, UINT64_MAX, 120},
        {"seed: -0\n", NULL, 8, 0, 120},
        {"comm: {deadline: 1e1}\n", NULL, 8, 42, 10},
        {"comm: {deadline: .5}\n", NULL, 8, 42, 0.5},
        {"comm: {deadline: 0x20}\n", NULL, 8, 42, 32},
        {"", "steps=010", 10, 42, 120},
        {"", "seed=18446744073709551615", 8, UINT64_MAX, 120},
        {"pipeline: {stages: \"auto\"}\n", NULL, 8, 42, 120},
    };
    static const struct {
        const char *yaml, *set, *expect;
    } bad[] = {
        {"seed: \" -1\"\n", NULL,
         "j.yaml:1:7: key 'seed': expected an integer, "
         "found the quoted string ' -1'"},
        {"steps: \"8\"\n", NULL, "found the quoted string '8'"},
        {"steps: '8'\n", NULL, "found the quoted string '8'"},
        {"steps: |\n  8\n", NULL, "found the quoted string"},
        {"comm: {deadline: \"5\"}\n", NULL, "expected a number, found the quoted"},
        {"video: {seeds: [1, \"2\"]}\n", NULL, "j.yaml:1:20:"},
        {"latent_shape: [1, 2, '3', 4, 5]\n", NULL, "j.yaml:1:22:"},
        {"seed: -1\n", NULL, "found '-1'"},
        {"seed: 18446744073709551616\n", NULL, "up to 18446744073709551615"},
        {"steps: 1_0\n", NULL, "found '1_0'"},
        {"steps: -0x10\n", NULL, "found '-0x10'"},
        {"steps: 0b101\n", NULL, "found '0b101'"},
        {"comm: {deadline: 0x1p3}\n", NULL, "found '0x1p3'"},
        {"comm: {deadline: .inf}\n", NULL, "found '.inf'"},
        {"", "seed= -1", "found ' -1'"},
        {"", "seed=-1", "found '-1'"},
        {"", "steps=8 ", "found '8 '"},
        {"", "comm.deadline= 5", "found ' 5'"},
    };
    char        err[1024];
    svp_spec_t *s;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        const char *ov[1] = {good[i].set};

        s = NULL;
        cr_assert_eq(svp_spec_load_string(good[i].yaml, "j.yaml", ov,
                                          good[i].set != NULL, err, sizeof(err), &s),
                     SVP_OK, "%s%s: %s", good[i].yaml,
                     good[i].set ? good[i].set : "", err);
        cr_expect_eq(s->steps, good[i].steps, "%s", good[i].yaml);
        cr_expect_eq(s->seed, good[i].seed, "%s", good[i].yaml);
        cr_expect_float_eq(s->comm.deadline, good[i].deadline, 1e-12, "%s",
                           good[i].yaml);
        svp_spec_destroy(s);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        const char *ov[1] = {bad[i].set};

        s      = NULL;
        err[0] = '\0';
        cr_expect_eq(svp_spec_load_string(bad[i].yaml, "j.yaml", ov,
                                          bad[i].set != NULL, err, sizeof(err), &s),
                     SVP_ERR_SPEC, "accepted %s%s", bad[i].yaml,
                     bad[i].set ? bad[i].set : "");
        cr_expect_not_null(strstr(err, bad[i].expect), "%s%s: %s", bad[i].yaml,
                           bad[i].set ? bad[i].set : "", err);
        svp_spec_destroy(s);
    }
}

/* Every cap a spec or --set meets names itself with its value. */
Test(spec, caps_name_their_value)
{
    char        set[4096], key[400], err[1024];
    const char *ov[1] = {set};
    svp_spec_t *s     = NULL;
    int         n;

    n = snprintf(set, sizeof(set), "video.seeds=[");
    for (int i = 0; i <= SVP_SPEC_MAX_LIST; ++i) {
        n += snprintf(set + n, sizeof(set) - n, "%s%d", i ? "," : "", i);
    }
    snprintf(set + n, sizeof(set) - n, "]");
    cr_assert_eq(svp_spec_load_string("", "j.yaml", ov, 1, err, sizeof(err), &s),
                 SVP_ERR_SPEC);
    cr_expect_not_null(strstr(err, "over the list limit of 256"), "%s", err);

    memset(key, 'k', sizeof(key));
    snprintf(set, sizeof(set), "%.300s=1", key);
    cr_assert_eq(svp_spec_load_string("", "j.yaml", ov, 1, err, sizeof(err), &s),
                 SVP_ERR_SPEC);
    cr_expect_not_null(strstr(err, "a key of 300 bytes: over the key length "
                                   "limit of 255 bytes"),
                       "%s", err);

    {
        char yaml[512];

        snprintf(yaml, sizeof(yaml), "%.300s: 1\n", key);
        cr_assert_eq(svp_spec_load_string(yaml, "j.yaml", NULL, 0, err, sizeof(err),
                                          &s),
                     SVP_ERR_SPEC);
        cr_expect_not_null(strstr(err,
                                  "j.yaml:1:1: a key of 300 bytes: over the key "
                                  "length limit of 255 bytes"),
                           "%s", err);
    }
    {
        char yaml[8192];
        int  m = snprintf(yaml, sizeof(yaml), "cluster:\n  env:\n");

        for (int i = 0; i <= SVP_SPEC_MAX_LIST; ++i) {
            m += snprintf(yaml + m, sizeof(yaml) - m, "    V%d: x\n", i);
        }
        cr_assert_eq(svp_spec_load_string(yaml, "j.yaml", NULL, 0, err, sizeof(err),
                                          &s),
                     SVP_ERR_SPEC);
        cr_expect_not_null(strstr(err, "over the mapping limit of 256"), "%s", err);
    }
}

/* --print-spec and the run records: the dump escapes what a terminal would
 * act on, and still reads back the same. */
Test(spec, dump_escapes_and_parses_back)
{
    const char *ov[] = {"name=a\x7f"
                        "b\xc2\x9b"
                        "c\xe2\x80\xae"
                        "d\te\x1b",
                        "cluster.env.X=\xef\xbb\xbfv"};
    svp_spec_t *a = NULL, *b = NULL;
    char       *yaml, err[512];

    cr_assert_eq(svp_spec_load_string("", "j.yaml", ov, 2, err, sizeof(err), &a),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_spec_dump(a, &yaml), SVP_OK);
    cr_expect_not_null(strstr(yaml, "name: \"a\\x7fb\\u009bc\\u202ed\\te\\x1b\""),
                       "%s", yaml);
    cr_expect_not_null(strstr(yaml, "\"X\": \"\\ufeffv\""), "%s", yaml);
    for (const char *p = yaml; *p != '\0'; ++p) {
        cr_assert((unsigned char)*p >= 0x20 || *p == '\n', "raw 0x%02x in the dump",
                  (unsigned char)*p);
    }
    cr_assert_eq(svp_spec_load_string(yaml, "j.yaml", NULL, 0, err, sizeof(err), &b),
                 SVP_OK, "%s\n%s", err, yaml);
    cr_expect_str_eq(b->name, a->name);
    cr_expect_str_eq(b->cluster.env.values[0], a->cluster.env.values[0]);
    free(yaml);
    svp_spec_destroy(a);
    svp_spec_destroy(b);
}

/* A manifest seed is any 64-bit unsigned integer, as the spec's is. */
Test(spec, manifest_seed_takes_64_bits)
{
    char        dir[]   = "/tmp/svp_spec_XXXXXX", path[512], err[1024];
    const char *lines[] = {
        "{\"image\": \"a.png\", \"seed\": 18446744073709551615}\n"
        "{\"seed\":9223372036854775808 , \"image\": \"a.png\"}\n"
        "{\"image\": \"seed\", \"seed\": 7, \"name\": \"seed\"}\n",
        "{\"image\": \"a.png\", \"seed\": 18446744073709551616}\n",
        "{\"image\": \"a.png\", \"seed\": -1}\n",
    };
    svp_job_samples_t *list = NULL;
    svp_spec_t        *s    = NULL;
    FILE              *f;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/a.png", dir);
    cr_assert_eq(svp_file_write_atomic(path, "x", 1), SVP_OK);
    snprintf(path, sizeof(path), "%s/seed", dir);
    cr_assert_eq(svp_file_write_atomic(path, "x", 1), SVP_OK);
    snprintf(path, sizeof(path), "%s/m.jsonl", dir);
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); ++i) {
        f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(lines[i], f);
        fclose(f);
        {
            char        set[600];
            const char *ov[1] = {set};

            snprintf(set, sizeof(set), "video.manifest=%s", path);
            cr_assert_eq(svp_spec_load_string("", "j.yaml", ov, 1, err, sizeof(err),
                                              &s),
                         SVP_OK, "%s", err);
        }
        list = NULL;
        if (i == 0) {
            cr_assert_eq(svp_job_samples_create(s, err, sizeof(err), &list), SVP_OK,
                         "%s", err);
            cr_expect_eq(list->items[0].seed, UINT64_MAX);
            cr_expect_eq(list->items[1].seed, (uint64_t)INT64_MAX + 1);
            cr_expect_eq(list->items[2].seed, 7);
            svp_job_samples_destroy(list);
        } else {
            cr_expect_eq(svp_job_samples_create(s, err, sizeof(err), &list),
                         SVP_ERR_SPEC, "accepted %s", lines[i]);
            cr_expect_not_null(strstr(err, ":1: key 'seed': expected a non-negative "
                                           "integer (at most 18446744073709551615)"),
                               "%s", err);
        }
        svp_spec_destroy(s);
        s = NULL;
    }
    unlink(path);
    snprintf(path, sizeof(path), "%s/a.png", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/seed", dir);
    unlink(path);
    rmdir(dir);
}

/* run.json's "spec": the object of svp_spec_to_json() and, in records
 * written before it, svp_spec_dump()'s lines as one string. */
#include "jobspec/spec_json.h"

static svp_spec_t *record_spec(const char *name)
{
    const char  *top = getenv("SVP_TOP_SRCDIR");
    char         path[1024], err[512];
    json_error_t jerr;
    json_t      *run;
    svp_spec_t  *spec = NULL;

    snprintf(path, sizeof(path), "%s/tests/run_records/%s", top, name);
    run = json_load_file(path, 0, &jerr);
    cr_assert_not_null(run, "%s:%d: %s", path, jerr.line, jerr.text);
    cr_assert_eq(svp_spec_load_json(json_object_get(run, "spec"), path, err,
                                    sizeof(err), &spec),
                 SVP_OK, "%s: %s", name, err);
    json_decref(run);
    return spec;
}

Test(spec, run_record_spec_as_string_and_as_object)
{
    const char *names[] = {"run-spec-string.json", "run-spec-object.json"};
    char       *dump[2];

    if (getenv("SVP_TOP_SRCDIR") == NULL) {
        cr_skip_test("SVP_TOP_SRCDIR not set (run through make check)");
    }
    for (int i = 0; i < 2; ++i) {
        svp_spec_t *s = record_spec(names[i]);

        cr_expect_str_eq(s->name, "record", "%s", names[i]);
        cr_expect_eq(s->steps, 6, "%s", names[i]);
        cr_expect_eq(s->seed, UINT64_MAX, "%s", names[i]);
        cr_expect_eq(s->latent_shape[1], 3, "%s", names[i]);
        cr_expect_eq(s->comm.deadline, 30.5, "%s", names[i]);
        cr_expect_eq(s->pipeline.stages, SVP_PIPE_STAGES_AUTO, "%s", names[i]);
        cr_expect_str_eq(s->output.dir, "out/\033[31mred", "%s", names[i]);
        cr_assert_eq(s->cluster.env.count, 2, "%s", names[i]);
        cr_expect_str_eq(s->cluster.env.keys[0], "UCX_TLS", "%s", names[i]);
        cr_expect_str_eq(s->cluster.env.values[1], "2", "%s", names[i]);
        cr_assert_eq(svp_spec_dump(s, &dump[i]), SVP_OK);
        svp_spec_destroy(s);
    }
    cr_expect_str_eq(dump[0], dump[1]);
    free(dump[0]);
    free(dump[1]);
}

/* What svdworker records reads back to the same spec, the values the
 * dump's escapes and a seed past INT64_MAX exist for among them. */
Test(spec, spec_json_round_trip)
{
    const char *yaml = "name: \"j\\u2028k\\x1b\"\n"
                       "model: {kind: dummy, dummy: {cost: sleep, step_ms: 0.1}}\n"
                       "steps: 12\nseed: 18446744073709551615\n"
                       "pipeline: {stages: auto, placement: ends}\n"
                       "video: {seeds: [5, 0, 7], noise_aug_strength: 0.02}\n"
                       "cluster: {env: {Z: 'a \"b\"', A: '\\'}, "
                       "container_mounts: ['/x:/y'], time: '1:00'}\n";
    svp_spec_t *a, *b;
    json_t     *obj, *seed;
    char        err[512], *da, *db, *text;

    cr_assert_eq(svp_spec_load_string(yaml, "j.yaml", NULL, 0, err, sizeof(err), &a),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_spec_to_json(a, &obj), SVP_OK);
    cr_expect_eq(json_integer_value(json_object_get(obj, "steps")), 12);
    cr_expect_str_eq(json_string_value(json_object_get(obj, "model.kind")), "dummy");
    cr_expect_str_eq(json_string_value(json_object_get(obj, "pipeline.stages")),
                     "auto");
    cr_expect(json_is_true(json_object_get(obj, "output.frames")));
    seed = json_object_get(obj, "seed");
    cr_expect_str_eq(json_string_value(seed), "18446744073709551615");
    /* through the text, as run.json carries it */
    text = json_dumps(obj, JSON_INDENT(1));
    json_decref(obj);
    obj = json_loads(text, 0, NULL);
    free(text);
    cr_assert_not_null(obj);
    cr_assert_eq(svp_spec_load_json(obj, "run.json", err, sizeof(err), &b), SVP_OK,
                 "%s", err);
    cr_assert_eq(svp_spec_dump(a, &da), SVP_OK);
    cr_assert_eq(svp_spec_dump(b, &db), SVP_OK);
    cr_expect_str_eq(da, db);
    free(da);
    free(db);
    json_decref(obj);
    svp_spec_destroy(a);
    svp_spec_destroy(b);
}

/* A forged or damaged record is refused with the spec reader's words. */
Test(spec, spec_json_refuses_what_a_spec_refuses)
{
    const char *cases[][2] = {
        {"{\"stpes\": 8}", "did you mean 'steps'"},
        {"{\"steps\": \"8\"}", "quoted string '8'"},
        {"{\"steps\": null}", "key 'steps'"},
        {"{\"latent_shape\": [1, [2]]}", "key 'latent_shape'"},
        {"{\"seed\": \"-1\"}", "key 'seed'"},
        {"[1, 2]", "expected an object of the spec's keys"},
        {"7", "found a number"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        json_t     *v        = json_loads(cases[i][0], JSON_DECODE_ANY, NULL);
        svp_spec_t *s        = NULL;
        char        err[512] = "";

        cr_assert_not_null(v, "%s", cases[i][0]);
        cr_expect_eq(svp_spec_load_json(v, "run.json", err, sizeof(err), &s),
                     SVP_ERR_SPEC, "accepted %s", cases[i][0]);
        cr_expect_not_null(strstr(err, cases[i][1]), "%s: %s", cases[i][0], err);
        cr_expect_null(s);
        json_decref(v);
    }
}
