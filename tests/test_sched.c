/*
 * Tests for src/noise: the Euler sampler against diffusers'
 * EulerDiscreteScheduler (golden scheduler_svd and pipeline_tiny), the
 * per-frame guidance ramp, and the counter-based normal generator.
 *
 * Tolerances are the golden README's "Scheduler" ones: sigmas are double
 * math rounded to float (1 ulp), timesteps 1e-6 absolute, element-wise step
 * results 1e-6 * max|ref| (float32 formulas).
 */
#include "ops/ops_sched.h"
#include "noise/euler.h"
#include "noise/guidance.h"
#include "noise/rng.h"
#include "tensor/safetensors.h"
#include "tensor/config_json.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *golden_path(const char *rel, char *buf, size_t len)
{
    const char *dir = getenv("SVP_GOLDEN_DIR");

    if (dir == NULL || access(dir, R_OK) != 0) {
        cr_skip_test("golden data not found at %s (set SVP_GOLDEN_DIR)",
                     dir ? dir : "(unset)");
    }
    snprintf(buf, len, "%s/%s", dir, rel);
    return buf;
}

static svp_tensor_t *load(svp_safetensors_h st, const char *fmt, ...)
{
    svp_tensor_t *t = NULL;
    char          name[256];
    va_list       ap;

    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    cr_assert_eq(svp_safetensors_load(st, name, SVP_DTYPE_F32, &t), SVP_OK,
                 "cannot load %s", name);
    return t;
}

static float *fdata(svp_tensor_t *t)
{
    return (float *)t->data;
}

/* Distance in units in the last place between two finite floats of the
 * same sign (all sigmas are >= 0). */
static uint32_t ulps(float a, float b)
{
    uint32_t x, y;

    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return (x > y) ? x - y : y - x;
}

static float max_abs(const float *v, size_t n)
{
    float  m = 0.0f;
    size_t i;

    for (i = 0; i < n; ++i) {
        m = fmaxf(m, fabsf(v[i]));
    }
    return m;
}

/* max|got - ref| <= rel * max|ref| */
static void assert_close_rel(const float *got, const float *ref, size_t n,
                             double rel, const char *what)
{
    double tol = rel * max_abs(ref, n), worst = 0.0;
    size_t i, at                              = 0;

    for (i = 0; i < n; ++i) {
        double d = fabs((double)got[i] - (double)ref[i]);

        if (d > worst) {
            worst = d;
            at    = i;
        }
    }
    cr_assert(worst <= tol,
              "%s: max |diff| %.3g at %zu (got %.9g ref %.9g), "
              "tolerance %.3g",
              what, worst, at, (double)got[at], (double)ref[at], tol);
}

static svp_sched_h golden_sched(int steps)
{
    svp_sched_config_t config;
    svp_sched_h        sched;
    char               path[1024];

    golden_path("scheduler_svd/scheduler_config.json", path, sizeof(path));
    cr_assert_eq(svp_sched_config_load(path, &config), SVP_OK);
    cr_assert_eq(svp_sched_create(&config, steps, &sched), SVP_OK);
    return sched;
}

/* ---- schedule ---------------------------------------------------------- */

Test(euler, golden_config_is_svd_default)
{
    svp_sched_config_t config, dflt;
    char               path[1024];

    golden_path("scheduler_svd/scheduler_config.json", path, sizeof(path));
    cr_assert_eq(svp_sched_config_load(path, &config), SVP_OK);
    svp_sched_config_default(&dflt);
    cr_assert_eq(config.sigma_min, dflt.sigma_min);
    cr_assert_eq(config.sigma_max, dflt.sigma_max);
    cr_assert_eq(config.rho, dflt.rho);
    cr_assert_eq(config.prediction, dflt.prediction);
    cr_assert_eq(config.init_sigma_plus_one, 1);
}

ParameterizedTestParameters(euler, golden_schedule)
{
    static int steps[] = {3, 4, 14, 25, 28};

    return cr_make_param_array(int, steps, sizeof(steps) / sizeof(steps[0]));
}

ParameterizedTest(int *steps, euler, golden_schedule)
{
    svp_safetensors_h st;
    svp_sched_h       sched;
    svp_tensor_t     *sig, *ts, *init;
    const float      *s, *t;
    char              path[1024];
    int               n = *steps, i;

    golden_path("scheduler_svd/scheduler.safetensors", path, sizeof(path));
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    sched = golden_sched(n);
    sig   = load(st, "n%d.sigmas", n);
    ts    = load(st, "n%d.timesteps", n);
    init  = load(st, "n%d.init_noise_sigma", n);
    cr_assert_eq(svp_tensor_numel(sig), n + 1);
    cr_assert_eq(svp_sched_num_steps(sched), n);

    s = svp_sched_sigmas(sched);
    t = svp_sched_timesteps(sched);
    for (i = 0; i <= n; ++i) {
        cr_assert(ulps(s[i], fdata(sig)[i]) <= 1,
                  "n=%d sigma[%d] = %.9g, diffusers %.9g", n, i, (double)s[i],
                  (double)fdata(sig)[i]);
    }
    cr_assert_eq(s[n], 0.0f);
    for (i = 0; i < n; ++i) {
        cr_assert(fabsf(t[i] - fdata(ts)[i]) <= 1e-6f,
                  "n=%d timestep[%d] = %.9g, diffusers %.9g", n, i, (double)t[i],
                  (double)fdata(ts)[i]);
    }
    cr_assert(ulps(svp_sched_init_noise_sigma(sched), fdata(init)[0]) <= 1,
              "init_noise_sigma %.9g, diffusers %.9g",
              (double)svp_sched_init_noise_sigma(sched), (double)fdata(init)[0]);

    svp_tensor_destroy(sig);
    svp_tensor_destroy(ts);
    svp_tensor_destroy(init);
    svp_sched_destroy(sched);
    svp_safetensors_close(st);
}

/* ---- single steps ------------------------------------------------------ */

typedef struct {
    int steps;
    int k;
} step_case_t;

ParameterizedTestParameters(euler, golden_single_step)
{
    static step_case_t cases[] = {
        {25, 0}, {25, 1}, {25, 12}, {25, 23}, {25, 24}, {14, 0}, {14, 7}, {14, 13},
    };

    return cr_make_param_array(step_case_t, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(step_case_t *c, euler, golden_single_step)
{
    svp_safetensors_h st;
    svp_sched_h       sched;
    svp_tensor_t     *sample, *v, *ref_in, *ref_prev, *ref_x0, *sigma, *next, *t;
    float            *scaled, *prev, *x0;
    char              path[1024], what[64];
    size_t            n;

    golden_path("scheduler_svd/scheduler.safetensors", path, sizeof(path));
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);
    sched    = golden_sched(c->steps);
    sample   = load(st, "n%d.k%d.sample", c->steps, c->k);
    v        = load(st, "n%d.k%d.model_output", c->steps, c->k);
    ref_in   = load(st, "n%d.k%d.scale_model_input", c->steps, c->k);
    ref_prev = load(st, "n%d.k%d.prev_sample", c->steps, c->k);
    ref_x0   = load(st, "n%d.k%d.pred_original_sample", c->steps, c->k);
    sigma    = load(st, "n%d.k%d.sigma", c->steps, c->k);
    next     = load(st, "n%d.k%d.sigma_next", c->steps, c->k);
    t        = load(st, "n%d.k%d.timestep", c->steps, c->k);
    n        = (size_t)svp_tensor_numel(sample);

    cr_assert(ulps(svp_sched_sigmas(sched)[c->k], fdata(sigma)[0]) <= 1);
    cr_assert(ulps(svp_sched_sigmas(sched)[c->k + 1], fdata(next)[0]) <= 1);
    cr_assert(fabsf(svp_sched_timesteps(sched)[c->k] - fdata(t)[0]) <= 1e-6f);

    scaled = malloc(n * sizeof(float));
    prev   = malloc(n * sizeof(float));
    x0     = malloc(n * sizeof(float));
    svp_sched_scale_model_input(sched, c->k, fdata(sample), scaled, n);
    svp_sched_step(sched, c->k, fdata(v), fdata(sample), prev, x0, n);

    snprintf(what, sizeof(what), "n%d.k%d scale_model_input", c->steps, c->k);
    assert_close_rel(scaled, fdata(ref_in), n, 1e-6, what);
    snprintf(what, sizeof(what), "n%d.k%d prev_sample", c->steps, c->k);
    assert_close_rel(prev, fdata(ref_prev), n, 1e-6, what);
    snprintf(what, sizeof(what), "n%d.k%d pred_original_sample", c->steps, c->k);
    assert_close_rel(x0, fdata(ref_x0), n, 1e-6, what);

    /* in place, without the denoised estimate: the same result */
    svp_sched_step(sched, c->k, fdata(v), fdata(sample), fdata(sample), NULL, n);
    cr_assert_eq(memcmp(fdata(sample), prev, n * sizeof(float)), 0);

    free(scaled);
    free(prev);
    free(x0);
    svp_tensor_destroy(sample);
    svp_tensor_destroy(v);
    svp_tensor_destroy(ref_in);
    svp_tensor_destroy(ref_prev);
    svp_tensor_destroy(ref_x0);
    svp_tensor_destroy(sigma);
    svp_tensor_destroy(next);
    svp_tensor_destroy(t);
    svp_sched_destroy(sched);
    svp_safetensors_close(st);
}

/* The last step lands on sigma = 0: the result is the denoised estimate. */
Test(euler, last_step_returns_denoised)
{
    svp_sched_config_t config;
    svp_sched_h        sched;
    float              x[4] = {1.0f, -2.0f, 0.5f, 3.0f};
    float              v[4] = {0.1f, 0.2f, -0.3f, 0.4f}, prev[4], x0[4];
    int                i;

    svp_sched_config_default(&config);
    cr_assert_eq(svp_sched_create(&config, 5, &sched), SVP_OK);
    svp_sched_step(sched, 4, v, x, prev, x0, 4);
    for (i = 0; i < 4; ++i) {
        /* x + (x - d)/s * (0 - s) = d up to one rounding of each op */
        cr_assert(fabsf(prev[i] - x0[i]) <= 1e-6f * fabsf(x0[i]) + 1e-7f);
    }
    svp_sched_destroy(sched);
    cr_assert_eq(svp_sched_create(&config, 0, &sched), SVP_ERR_INVALID_PARAM);
}

Test(euler, one_step_schedule)
{
    svp_sched_config_t config;
    svp_sched_h        sched;

    svp_sched_config_default(&config);
    cr_assert_eq(svp_sched_create(&config, 1, &sched), SVP_OK);
    cr_assert_eq(svp_sched_sigmas(sched)[0], 700.0f);
    cr_assert_eq(svp_sched_sigmas(sched)[1], 0.0f);
    svp_sched_destroy(sched);
}

static svp_status_t read_config(const char *text)
{
    svp_sched_config_t config;
    svp_config_h       cfg;
    svp_status_t       status;

    cr_assert_eq(svp_config_parse(text, "scheduler_config.json", &cfg), SVP_OK);
    status = svp_sched_config_read(cfg, &config);
    svp_config_destroy(cfg);
    return status;
}

#define SVD_KEYS \
    "\"sigma_min\": 0.002, \"sigma_max\": 700.0, " \
    "\"timestep_spacing\": \"leading\""

Test(euler, rejects_unsupported_configs)
{
    cr_assert_eq(read_config("{\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": true, " SVD_KEYS "}"),
                 SVP_OK);
    cr_assert_eq(read_config("{\"prediction_type\": \"epsilon\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": true, " SVD_KEYS "}"),
                 SVP_ERR_UNSUPPORTED);
    /* diffusers' defaults (epsilon, discrete, no Karras) are not SVD's */
    cr_assert_eq(read_config("{" SVD_KEYS "}"), SVP_ERR_UNSUPPORTED);
    cr_assert_eq(read_config("{\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": false, " SVD_KEYS "}"),
                 SVP_ERR_UNSUPPORTED);
    cr_assert_eq(read_config("{\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": true, "
                             "\"sigma_max\": 700.0}"),
                 SVP_ERR_UNSUPPORTED);
    cr_assert_eq(read_config("{\"_class_name\": \"DDIMScheduler\", "
                             "\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": true, " SVD_KEYS "}"),
                 SVP_ERR_UNSUPPORTED);
    cr_assert_eq(read_config("{\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": true, "
                             "\"final_sigmas_type\": \"sigma_min\", " SVD_KEYS "}"),
                 SVP_ERR_UNSUPPORTED);
    cr_assert_eq(read_config("{\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": true, "
                             "\"sigma_min\": 800, \"sigma_max\": 700.0}"),
                 SVP_ERR_BAD_FILE);
    cr_assert_eq(read_config("{\"prediction_type\": \"v_prediction\", "
                             "\"timestep_type\": \"continuous\", "
                             "\"use_karras_sigmas\": \"yes\", " SVD_KEYS "}"),
                 SVP_ERR_BAD_FILE);
}

/* ---- the pipeline's use of the scheduler (pipeline_tiny) --------------- */

/* Guidance, scale_model_input and step on diffusers' own pipeline tensors:
 * every step's inputs are the golden ones (teacher forcing). */
Test(euler, golden_pipeline_steps)
{
    svp_safetensors_h  st;
    svp_sched_config_t config;
    svp_sched_h        sched;
    svp_tensor_t      *g, *init, *init_scaled;
    char               path[1024], what[64];
    float              scales[3];
    int                k, f;
    size_t             n, i;

    golden_path("pipeline_tiny/scheduler/scheduler_config.json", path, sizeof(path));
    cr_assert_eq(svp_sched_config_load(path, &config), SVP_OK);
    cr_assert_eq(svp_sched_create(&config, 4, &sched), SVP_OK);
    golden_path("pipeline_tiny/pipeline.safetensors", path, sizeof(path));
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK);

    /* guidance_scale [1, F, 1, 1, 1] for min 1.0, max 3.0 */
    g = load(st, "guidance_scale");
    svp_sched_guidance_scales(1.0, 3.0, 3, scales);
    for (f = 0; f < 3; ++f) {
        cr_assert_eq(scales[f], fdata(g)[f]);
    }

    init        = load(st, "latents_initial");
    init_scaled = load(st, "latents_initial_scaled");
    n           = (size_t)svp_tensor_numel(init);
    for (i = 0; i < n; ++i) {
        cr_assert_eq(fdata(init)[i] * svp_sched_init_noise_sigma(sched),
                     fdata(init_scaled)[i]);
    }

    for (k = 0; k < 4; ++k) {
        svp_tensor_t *before = load(st, "step%d.latents_before", k);
        svp_tensor_t *scaled = load(st, "step%d.scaled_latents", k);
        svp_tensor_t *u      = load(st, "step%d.noise_pred_uncond", k);
        svp_tensor_t *c      = load(st, "step%d.noise_pred_cond", k);
        svp_tensor_t *pred   = load(st, "step%d.noise_pred", k);
        svp_tensor_t *after  = load(st, "step%d.latents_after", k);
        svp_tensor_t *x0     = load(st, "step%d.pred_original_sample", k);
        float        *buf    = malloc(4 * n * sizeof(float));

        svp_sched_scale_model_input(sched, k, fdata(before), buf, n);
        snprintf(what, sizeof(what), "step%d scaled_latents", k);
        /* both CFG halves are the same scaled latents */
        assert_close_rel(buf, fdata(scaled), n, 1e-6, what);
        assert_close_rel(buf, fdata(scaled) + n, n, 1e-6, what);

        cr_assert_eq(svp_sched_guidance_apply(fdata(u), fdata(c), 1, 3, n / 3, 1.0,
                                              3.0, buf),
                     SVP_OK);
        snprintf(what, sizeof(what), "step%d noise_pred", k);
        assert_close_rel(buf, fdata(pred), n, 1e-6, what);

        svp_sched_step(sched, k, fdata(pred), fdata(before), buf + n, buf + 2 * n,
                       n);
        snprintf(what, sizeof(what), "step%d latents_after", k);
        assert_close_rel(buf + n, fdata(after), n, 1e-6, what);
        snprintf(what, sizeof(what), "step%d pred_original_sample", k);
        assert_close_rel(buf + 2 * n, fdata(x0), n, 1e-6, what);

        free(buf);
        svp_tensor_destroy(before);
        svp_tensor_destroy(scaled);
        svp_tensor_destroy(u);
        svp_tensor_destroy(c);
        svp_tensor_destroy(pred);
        svp_tensor_destroy(after);
        svp_tensor_destroy(x0);
    }
    svp_tensor_destroy(g);
    svp_tensor_destroy(init);
    svp_tensor_destroy(init_scaled);
    svp_safetensors_close(st);
    svp_sched_destroy(sched);
}

/* ---- guidance ---------------------------------------------------------- */

Test(guidance, per_frame_ramp)
{
    float g[25];
    int   f;

    svp_sched_guidance_scales(1.0, 3.0, 25, g);
    cr_assert_eq(g[0], 1.0f);
    cr_assert_eq(g[24], 3.0f);
    cr_assert_eq(g[12], 2.0f);
    for (f = 1; f < 25; ++f) {
        cr_assert_gt(g[f], g[f - 1]);
        /* steps of (3-1)/24, each within float rounding of the exact ramp */
        cr_assert(fabsf(g[f] - (1.0f + 2.0f * (float)f / 24.0f)) <= 4e-7f);
    }
    svp_sched_guidance_scales(2.5, 2.5, 1, g);
    cr_assert_eq(g[0], 2.5f);
    cr_assert_eq(svp_sched_guidance_enabled(3.0), 1);
    cr_assert_eq(svp_sched_guidance_enabled(1.0), 0);
}

Test(guidance, applies_scale_of_each_frame)
{
    /* B = 2, F = 3, 2 elements per frame */
    float u[12], c[12], out[12];
    int   b, f, e;

    for (e = 0; e < 12; ++e) {
        u[e] = 1.0f;
        c[e] = 2.0f + (float)e;
    }
    cr_assert_eq(svp_sched_guidance_apply(u, c, 2, 3, 2, 1.0, 3.0, out), SVP_OK);
    for (b = 0; b < 2; ++b) {
        for (f = 0; f < 3; ++f) {
            for (e = 0; e < 2; ++e) {
                int i = (b * 3 + f) * 2 + e;

                /* g_f = 1, 2, 3: out = u + g_f (c - u), exact here */
                cr_assert_eq(out[i], 1.0f + (float)(f + 1) * (c[i] - 1.0f),
                             "b %d f %d e %d", b, f, e);
            }
        }
    }
    /* in place over the uncond half */
    cr_assert_eq(svp_sched_guidance_apply(u, c, 2, 3, 2, 1.0, 3.0, u), SVP_OK);
    cr_assert_eq(memcmp(u, out, sizeof(out)), 0);
    cr_assert_eq(svp_sched_guidance_apply(u, c, 2, 0, 2, 1.0, 3.0, out),
                 SVP_ERR_INVALID_PARAM);
}

/* ---- the shared per-element math (sched_math.h) ------------------------ */

/*
 * The scheduler's formulas as they were written before sched_math.h held
 * them (diffusers' order, plain float expressions): the shared functions,
 * which the CUDA kernels also run, must give these bits exactly.
 */
static void ref_step(const float *sigmas, int step, const float *v, const float *x,
                     float *prev, float *denoised_out, size_t n)
{
    float  sigma = sigmas[step];
    float  dt    = sigmas[step + 1] - sigma;
    float  s2    = sigma * sigma + 1.0f;
    float  c_out = -sigma / sqrtf(s2);
    size_t i;

    for (i = 0; i < n; ++i) {
        float xi       = x[i];
        float denoised = v[i] * c_out + xi / s2;
        float deriv    = (xi - denoised) / sigma;

        denoised_out[i] = denoised;
        prev[i]         = xi + deriv * dt;
    }
}

static void ref_scale(const float *sigmas, int step, const float *x, float *y,
                      size_t n)
{
    float  sigma = sigmas[step];
    float  s2    = sigma * sigma + 1.0f;
    float  c_in  = sqrtf(s2);
    size_t i;

    for (i = 0; i < n; ++i) {
        y[i] = x[i] / c_in;
    }
}

/* SVD's own scheduler settings: no golden data needed */
static svp_sched_h svd_sched(int steps)
{
    svp_sched_config_t config;
    svp_sched_h        sched;

    svp_sched_config_default(&config);
    cr_assert_eq(svp_sched_create(&config, steps, &sched), SVP_OK);
    return sched;
}

#define MATH_N 4099 /* odd: no vector width divides it */

/* latents and model outputs as a run sees them: N(0,1) scaled over the
 * range of the schedule's sigmas, with exact zeros and tiny values mixed in */
static void math_inputs(float *x, float *v, float scale)
{
    int i;

    svp_rng_normal(7, 1, 0, MATH_N, x);
    svp_rng_normal(7, 2, 0, MATH_N, v);
    for (i = 0; i < MATH_N; ++i) {
        x[i] *= scale;
        if (i % 97 == 0) {
            x[i] = 0.0f;
        } else if (i % 89 == 0) {
            v[i] *= 1e-30f;
        }
    }
}

Test(sched_math, euler_step_matches_the_reference_bit_for_bit)
{
    static const int steps_list[] = {1, 4, 25};
    svp_sched_h      sched;
    float *x = malloc(MATH_N * sizeof(float)), *v = malloc(MATH_N * sizeof(float));
    float *got  = malloc(MATH_N * sizeof(float)),
          *ref  = malloc(MATH_N * sizeof(float));
    float *den  = malloc(MATH_N * sizeof(float)),
          *rden = malloc(MATH_N * sizeof(float));
    int k, step, steps;

    for (k = 0; k < 3; ++k) {
        steps = steps_list[k];
        sched = svd_sched(steps);
        for (step = 0; step < steps; ++step) {
            math_inputs(x, v, svp_sched_sigmas(sched)[step]);
            ref_step(svp_sched_sigmas(sched), step, v, x, ref, rden, MATH_N);
            svp_sched_step(sched, step, v, x, got, den, MATH_N);
            cr_assert_eq(memcmp(got, ref, MATH_N * sizeof(float)), 0,
                         "steps %d step %d: prev_sample differs", steps, step);
            cr_assert_eq(memcmp(den, rden, MATH_N * sizeof(float)), 0,
                         "steps %d step %d: denoised differs", steps, step);
            /* in place, as the stage calls it */
            memcpy(got, x, MATH_N * sizeof(float));
            svp_sched_step(sched, step, v, got, got, NULL, MATH_N);
            cr_assert_eq(memcmp(got, ref, MATH_N * sizeof(float)), 0);

            ref_scale(svp_sched_sigmas(sched), step, x, ref, MATH_N);
            svp_sched_scale_model_input(sched, step, x, got, MATH_N);
            cr_assert_eq(memcmp(got, ref, MATH_N * sizeof(float)), 0,
                         "steps %d step %d: model input differs", steps, step);
        }
        svp_sched_destroy(sched);
    }
    free(x);
    free(v);
    free(got);
    free(ref);
    free(den);
    free(rden);
}

Test(sched_math, guidance_matches_the_reference_bit_for_bit)
{
    float  *u = malloc(MATH_N * sizeof(float)), *c = malloc(MATH_N * sizeof(float));
    float   g[3], ref[MATH_N], got[MATH_N];
    int64_t fe = MATH_N / 3;
    int     f, i;

    math_inputs(u, c, 3.0f);
    svp_sched_guidance_scales(1.0, 3.0, 3, g);
    for (f = 0; f < 3; ++f) {
        for (i = 0; i < fe; ++i) {
            float uu = u[f * fe + i];

            ref[f * fe + i] = uu + g[f] * (c[f * fe + i] - uu);
        }
    }
    cr_assert_eq(svp_sched_guidance_apply(u, c, 1, 3, fe, 1.0, 3.0, got), SVP_OK);
    cr_assert_eq(memcmp(got, ref, 3 * fe * sizeof(float)), 0);
    free(u);
    free(c);
}

/*
 * The scheduler's ops (ops_sched.h) on the CPU backend: the bits of the CPU
 * scheduler, whatever the thread count (tests/test_ops_cuda.c holds the
 * CUDA backend to the same bits on a device).
 */
Test(sched_math, cpu_ops_give_the_scheduler_bits)
{
    svp_ops_params_t       op = {.backend = SVP_OPS_BACKEND_CPU, .threads = 2};
    svp_ops_h              ops;
    svp_sched_h            sched = svd_sched(25);
    svp_sched_euler_coef_t coef;
    float *x = malloc(MATH_N * sizeof(float)), *v = malloc(MATH_N * sizeof(float));
    float *got = malloc(MATH_N * sizeof(float)),
          *ref = malloc(MATH_N * sizeof(float));
    float   g[2];
    int64_t fe = MATH_N / 2;
    int     step;

    cr_assert_eq(svp_ops_create(&op, &ops), SVP_OK);
    for (step = 0; step < 25; step += 6) {
        math_inputs(x, v, svp_sched_sigmas(sched)[step]);
        svp_sched_step(sched, step, v, x, ref, NULL, MATH_N);
        svp_sched_euler_coef(sched, step, &coef);
        cr_assert_eq(svp_ops_sched_euler(ops, MATH_N, &coef, v, x, got), SVP_OK);
        cr_assert_eq(memcmp(got, ref, MATH_N * sizeof(float)), 0, "step %d", step);

        svp_sched_scale_model_input(sched, step, x, ref, MATH_N);
        cr_assert_eq(svp_ops_sched_scale(ops, MATH_N, svp_sched_c_in(sched, step), x,
                                         got),
                     SVP_OK);
        cr_assert_eq(memcmp(got, ref, MATH_N * sizeof(float)), 0, "step %d", step);
    }
    svp_sched_guidance_scales(1.0, 3.0, 2, g);
    cr_assert_eq(svp_sched_guidance_apply(x, v, 1, 2, fe, 1.0, 3.0, ref), SVP_OK);
    cr_assert_eq(svp_ops_sched_guidance(ops, 2, fe, g, x, v, got), SVP_OK);
    cr_assert_eq(memcmp(got, ref, 2 * fe * sizeof(float)), 0);
    /* nothing computed on bad arguments */
    cr_assert_eq(svp_ops_sched_euler(ops, 0, &coef, v, x, got),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_ops_sched_guidance(ops, 0, fe, g, x, v, got),
                 SVP_ERR_INVALID_PARAM);
    svp_ops_destroy(ops);
    svp_sched_destroy(sched);
    free(x);
    free(v);
    free(got);
    free(ref);
}

/* ---- random numbers ---------------------------------------------------- */

/* Known-answer vectors of the Random123 distribution (kat_vectors):
 * counter words c0..c3 are (counter_lo, counter_hi) low word first, key
 * words k0, k1 the low and high halves of key. */
Test(rng, philox_known_answers)
{
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    uint32_t out[4];
    size_t   i;
    int      j;

    for (i = 0; i < sizeof(kat) / sizeof(kat[0]); ++i) {
        svp_rng_philox(((uint64_t)kat[i].key[1] << 32) | kat[i].key[0],
                       ((uint64_t)kat[i].ctr[3] << 32) | kat[i].ctr[2],
                       ((uint64_t)kat[i].ctr[1] << 32) | kat[i].ctr[0], out);
        for (j = 0; j < 4; ++j) {
            cr_assert_eq(out[j], kat[i].out[j], "vector %zu word %d: %08x", i, j,
                         out[j]);
        }
    }
}

Test(rng, independent_of_how_it_is_split)
{
    enum { N = 1001 };
    uint64_t s7 = svp_rng_stream(SVP_RNG_LATENTS);
    float    whole[N], parts[N], other[N];
    int      i;

    cr_assert_eq(s7, 0, "the latents' stream is purpose 0's");
    svp_rng_normal(42, s7, 0, N, whole);
    /* odd split points: the pair boundary must not matter */
    svp_rng_normal(42, s7, 0, 333, parts);
    svp_rng_normal(42, s7, 333, 1, parts + 333);
    svp_rng_normal(42, s7, 334, N - 334, parts + 334);
    cr_assert_eq(memcmp(whole, parts, sizeof(whole)), 0);

    /* another purpose or seed: a different sequence */
    svp_rng_normal(42, svp_rng_stream(SVP_RNG_NOISE_AUG), 0, N, other);
    cr_assert_neq(memcmp(whole, other, sizeof(whole)), 0);
    svp_rng_normal(43, s7, 0, N, other);
    cr_assert_neq(memcmp(whole, other, sizeof(whole)), 0);
    for (i = 0; i < N; ++i) {
        cr_assert(isfinite(whole[i]));
    }
}

/* Moments and tail mass of 2^20 draws.  With n = 2^20 the standard errors
 * are 1e-3 (mean), 1.4e-3 (variance), 2.4e-3 (skewness), 4.8e-3 (excess
 * kurtosis); the bounds are about 5 standard errors. */
Test(rng, standard_normal_statistics)
{
    enum { N = 1 << 20 };
    float *z  = malloc(N * sizeof(float));
    double m1 = 0, m2 = 0, m3 = 0, m4 = 0, var;
    size_t i, beyond2 = 0;

    cr_assert_not_null(z);
    svp_rng_normal(20261122, 0, 0, N, z);
    for (i = 0; i < N; ++i) {
        m1 += z[i];
    }
    m1 /= N;
    for (i = 0; i < N; ++i) {
        double d = z[i] - m1;

        m2 += d * d;
        m3 += d * d * d;
        m4 += d * d * d * d;
        beyond2 += fabs(z[i]) > 2.0;
    }
    var = m2 / N;
    cr_assert(fabs(m1) < 5e-3, "mean %g", m1);
    cr_assert(fabs(var - 1.0) < 7e-3, "variance %g", var);
    cr_assert(fabs(m3 / N / pow(var, 1.5)) < 1.2e-2, "skewness %g",
              m3 / N / pow(var, 1.5));
    cr_assert(fabs(m4 / N / (var * var) - 3.0) < 2.5e-2, "excess kurtosis %g",
              m4 / N / (var * var) - 3.0);
    /* P(|z| > 2) = 0.0455003; binomial standard error 2e-4 */
    cr_assert(fabs((double)beyond2 / N - 0.0455003) < 1e-3, "P(|z|>2) = %g",
              (double)beyond2 / N);
    free(z);
}

Test(rng, uniform_range_and_mean)
{
    enum { N = 1 << 16 };
    float *u    = malloc(N * sizeof(float));
    double mean = 0;
    size_t i;

    cr_assert_not_null(u);
    svp_rng_uniform(5, 1, 3, N, u);
    for (i = 0; i < N; ++i) {
        cr_assert(u[i] >= 0.0f && u[i] < 1.0f, "u[%zu] = %g", i, (double)u[i]);
        mean += u[i];
    }
    /* standard error of the mean: sqrt(1/12 / 2^16) = 1.1e-3 */
    cr_assert(fabs(mean / N - 0.5) < 6e-3, "mean %g", mean / N);
    free(u);
}
