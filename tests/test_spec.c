/* Tests for src/spec: parsing, errors with file:line:column, overrides, steps. */
#include "spec/spec.h"
#include "spec/spec_agree.h"
#include "spec/steps.h"
#include "common/log.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quiet(void)
{
    svp_log_set_stream(fopen("/dev/null", "w"));
}

TestSuite(spec, .init = quiet);

Test(spec, valid_full_spec)
{
    const char *yaml =
        "name: demo\n"
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

    cr_assert_eq(svp_spec_load_string(yaml, "job.yaml", NULL, 0, err, sizeof(err), &s),
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
                                          sizeof(err), &s), SVP_OK,
                     "%s: %s", cases[i].yaml, err);
        cr_assert_eq(s->comm.gpu_direct, cases[i].want, "%s", cases[i].yaml);
        svp_spec_destroy(s);
    }
}

Test(spec, overrides)
{
    const char *ov[] = {"steps=28", "samples=10", "comm.deadline=2.5",
                        "latent_shape=[2,3,4,5,6]", "cluster.env.UCX_TLS=tcp",
                        "video.inputs=x.png,y.png"};
    svp_spec_t *s    = NULL;
    char        err[512];

    cr_assert_eq(svp_spec_load_string("steps: 4\n", "j.yaml", ov, 6, err, sizeof(err),
                                      &s),
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
    {"steps: 8\nstpes: 3\n", "",
     {"j.yaml:2:1:", "unknown key 'stpes'", "did you mean 'steps'"}},
    {"comm:\n  deadlin: 3\n", "",
     {"j.yaml:2:3:", "'comm.deadlin'", "did you mean 'comm.deadline'"}},
    {"steps: many\n", "",
     {"j.yaml:1:8:", "key 'steps'", "expected an integer in [1, 10000], found 'many'"}},
    {"steps: 0\n", "", {"j.yaml:1:8:", "key 'steps'", "found '0'"}},
    {"comm:\n  deadline: soon\n", "",
     {"j.yaml:2:13:", "key 'comm.deadline'", "expected a number"}},
    {"model:\n  kind: sdxl\n", "",
     {"j.yaml:2:9:", "key 'model.kind'", "expected one of dummy, svd, found 'sdxl'"}},
    {"latent_shape: [1, 2, 3]\n", "",
     {"j.yaml:1:15:", "key 'latent_shape'", "expected 5 integers"}},
    {"steps: [1, 2]\n", "", {"j.yaml:1:8:", "key 'steps'", "expected a scalar, found a list"}},
    {"comm: 5\n", "", {"j.yaml:1:7:", "key 'comm'", "expected a mapping"}},
    {"steps: 8\nsteps: 9\n", "", {"j.yaml:2:1:", "duplicate key 'steps'", "line 1"}},
    {"steps: [8\n", "", {"j.yaml:", "invalid YAML", ""}},
    {"- a\n- b\n", "", {"j.yaml:1:1:", "expected a mapping of keys at the top", ""}},
    {"model: {kind: svd}\n", "", {"j.yaml:", "key 'model.path'", "expected a model folder"}},
    {"output: {mp4: maybe}\n", "", {"j.yaml:1:15:", "key 'output.mp4'", "expected true or false"}},
    {"", "sampels=3", {"j.yaml:", "unknown key 'sampels'", "did you mean 'samples'"}},
    {"", "steps", {"j.yaml:", "--set 'steps': expected key=value", ""}},
    {"", "seed=-1", {"j.yaml:", "key 'seed'", "non-negative"}},
    {"video: {min_guidance: 4, max_guidance: 3}\n", "",
     {"j.yaml:", "video.min_guidance", "max_guidance"}},
    {"comm: {gpu_direct: yes}\n", "",
     {"j.yaml:1:20:", "key 'comm.gpu_direct'", "expected one of auto, on, off"}},
    {"comm: {gpu_direct: on}\n", "",
     {"j.yaml:", "key 'comm.gpu_direct'", "auto or off with device cpu"}},
    {"", "comm.gpu_direct=on",
     {"j.yaml:", "key 'comm.gpu_direct'", "found on"}},
    {"device: cuda\ncomm: {gpu_direct: on}\n", "",
     {"j.yaml:", "key 'comm.gpu_direct'", "with model.kind dummy"}},
};

ParameterizedTestParameters(spec, bad_input)
{
    return cr_make_param_array(bad_case_t, bad_cases, sizeof(bad_cases) / sizeof(bad_cases[0]));
}

ParameterizedTest(bad_case_t *c, spec, bad_input)
{
    svp_spec_t *s = NULL;
    char        err[1024] = "";
    const char *ov[1]     = {c->override};
    int         nov       = (c->override[0] != '\0');
    int         i;

    cr_assert_eq(svp_spec_load_string(c->yaml, "j.yaml", ov, nov, err,
                                      sizeof(err), &s),
                 SVP_ERR_SPEC, "accepted: %s", c->yaml);
    cr_assert_null(s, "output written on failure");
    for (i = 0; i < 3; ++i) {
        cr_assert(strstr(err, c->expect[i]) != NULL, "message '%s' lacks '%s'", err,
                  c->expect[i]);
    }
}

Test(spec, missing_file_names_it)
{
    svp_spec_t *s = NULL;
    char        err[512] = "";

    cr_assert_eq(svp_spec_load("/nonexistent/job.yaml", NULL, 0, err, sizeof(err), &s),
                 SVP_ERR_SPEC);
    cr_assert(strstr(err, "/nonexistent/job.yaml") != NULL, "%s", err);
}

/*
 * Paths a job reads, written relative in the file, name files beside the
 * spec; --set values and what a job writes stay as given.
 */
Test(spec, relative_paths_resolve_against_the_spec_folder)
{
    const char *ov[] = {"model.conditioning=c.safetensors"};
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
          "cluster: {worker: ../bin/svdworker}\n", f);
    fclose(f);
    cr_assert_eq(svp_spec_load(path, ov, 1, err, sizeof(err), &s), SVP_OK,
                 "%s", err);
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

    cr_assert_eq(svp_spec_load_string("steps: 12\n", "j.yaml", ov, 3, err, sizeof(err), &a),
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
    static const int ok[][2] = {{8, 1}, {8, 2}, {8, 4}, {8, 8}, {28, 7}, {28, 4},
                                {25, 5}, {25, 1}, {30, 3}, {1, 1}};
    size_t           i;
    int              r, next;
    svp_step_range_t range;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); ++i) {
        next = 0;
        for (r = 0; r < ok[i][1]; ++r) {
            cr_assert_eq(svp_steps_assign(ok[i][0], ok[i][1], r, NULL, 0, &range), SVP_OK);
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

    cr_assert_eq(svp_steps_assign(25, 4, 0, err, sizeof(err), &range), SVP_ERR_SPEC);
    cr_assert(strstr(err, "steps=25") && strstr(err, "4 ranks") &&
              strstr(err, "steps=24") && strstr(err, "steps=28"), "%s", err);
    cr_assert_eq(range.begin, -7, "output written on failure");

    cr_assert_eq(svp_steps_assign(3, 7, 0, err, sizeof(err), &range), SVP_ERR_SPEC);
    cr_assert(strstr(err, "steps=7") != NULL, "%s", err);
    cr_assert_eq(svp_steps_assign(8, 2, 2, err, sizeof(err), &range),
                 SVP_ERR_INVALID_PARAM);
}

/* Every valid layout of W = 6, T = 12: groups of contiguous ranks, each
 * covering all steps once. */
Test(steps, layout_groups_cover_steps)
{
    static const int   valid[] = {1, 2, 3, 6};
    svp_steps_layout_t l;
    size_t             i;
    int                r, next = 0;

    for (i = 0; i < sizeof(valid) / sizeof(valid[0]); ++i) {
        cr_assert(svp_steps_layout_valid(12, 6, valid[i]));
        for (r = 0; r < 6; ++r) {
            cr_assert_eq(svp_steps_layout(12, 6, valid[i], r, NULL, 0, &l), SVP_OK);
            cr_assert_eq(l.groups * l.stages, 6);
            cr_assert_eq(l.group, r / valid[i]);
            cr_assert_eq(l.first + l.stage, r);
            next = (l.stage == 0) ? 0 : next;
            cr_assert_eq(l.range.begin, next, "S=%d r=%d", valid[i], r);
            cr_assert_eq(l.range.end - l.range.begin, 12 / valid[i]);
            next = l.range.end;
            if (l.stage == l.stages - 1) {
                cr_assert_eq(next, 12, "a group covers all steps");
            }
        }
    }
    /* 0 is one pipeline of all ranks */
    cr_assert_eq(svp_steps_layout(12, 6, 0, 5, NULL, 0, &l), SVP_OK);
    cr_assert_eq(l.stages, 6);
    cr_assert_eq(l.groups, 1);
}

Test(steps, bad_layout_names_w_s_g_t)
{
    char               err[512] = "";
    svp_steps_layout_t l        = {.stages = -7};

    cr_assert_eq(svp_steps_layout(12, 6, 4, 0, err, sizeof(err), &l), SVP_ERR_SPEC);
    cr_assert(strstr(err, "S=4") && strstr(err, "W=6") && strstr(err, "G=W/S=1.5") &&
              strstr(err, "T=12") && strstr(err, "valid S: 1, 2, 3, 6") &&
              strstr(err, "nearest: S=3"), "%s", err);
    cr_assert_eq(l.stages, -7, "output written on failure");
    cr_assert_eq(svp_steps_layout(28, 448, 448, 0, err, sizeof(err), &l), SVP_ERR_SPEC);
    cr_assert(strstr(err, "T must divide by S") && strstr(err, "nearest: S=28") &&
              strstr(err, "G=16"), "%s", err);
}

#include "spec/spec_int.h"
#include "common/util.h"

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

    cr_assert_eq(svp_spec_load_string("", "a.yaml", a_sets, 4, err, sizeof(err), &a), SVP_OK);
    cr_assert_eq(svp_spec_load_string("", "b.yaml", b_sets, 4, err, sizeof(err), &b), SVP_OK);
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
