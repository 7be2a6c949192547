/*
 * The Euler discrete scheduler with Karras sigmas and v-prediction
 * (euler.h), as diffusers' EulerDiscreteScheduler configures it for SVD:
 * its config file, the sigmas and timesteps of a run, and one step.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "noise/euler.h"
#include "noise/sched_math.h"
#include "common/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct svp_sched {
    int    num_steps;
    float *sigmas;    /* num_steps + 1 */
    float *timesteps; /* num_steps */
    float  init_noise_sigma;
};

void svp_sched_config_default(svp_sched_config_t *config)
{
    config->sigma_min           = 0.002;
    config->sigma_max           = 700.0;
    config->rho                 = 7.0;
    config->prediction          = SVP_SCHED_PREDICTION_V;
    config->init_sigma_plus_one = 1;
}

/* A string key that must hold one value (want); absent means dflt. */
static svp_status_t svp_sched_expect_string(svp_config_h cfg, const char *key,
                                            const char *dflt, const char *want)
{
    const char  *value;
    svp_status_t status;

    status = svp_config_get_string(cfg, key, dflt, &value);
    if (status != SVP_OK) {
        return status;
    }
    if (strcmp(value, want) != 0) {
        svp_error("%s: %s \"%s\" is not supported, only \"%s\"",
                  svp_config_path(cfg), key, value, want);
        return SVP_ERR_UNSUPPORTED;
    }
    return SVP_OK;
}

/* A boolean key that must hold want; absent means dflt. */
static svp_status_t svp_sched_expect_bool(svp_config_h cfg, const char *key,
                                          int dflt, int want)
{
    svp_status_t status;
    int          value;

    status = svp_config_get_bool(cfg, key, dflt, &value);
    if (status != SVP_OK) {
        return status;
    }
    if (value != want) {
        svp_error("%s: %s = %s is not supported", svp_config_path(cfg), key,
                  value ? "true" : "false");
        return SVP_ERR_UNSUPPORTED;
    }
    return SVP_OK;
}

svp_status_t svp_sched_config_read(svp_config_h cfg, svp_sched_config_t *config_p)
{
    static const char *const required[] = {"sigma_min", "sigma_max", NULL};
    svp_sched_config_t       config;
    const char              *spacing;
    svp_status_t             status;

    svp_sched_config_default(&config);

    /* Defaults below are diffusers' class defaults, so a file that leaves a
     * key out means what it means to diffusers. */
    if ((status =
             svp_sched_expect_string(cfg, "_class_name", "EulerDiscreteScheduler",
                                     "EulerDiscreteScheduler")) ||
        (status = svp_sched_expect_string(cfg, "prediction_type", "epsilon",
                                          "v_prediction")) ||
        (status = svp_sched_expect_string(cfg, "timestep_type", "discrete",
                                          "continuous")) ||
        (status =
             svp_sched_expect_string(cfg, "final_sigmas_type", "zero", "zero")) ||
        (status = svp_sched_expect_bool(cfg, "use_karras_sigmas", 0, 1)) ||
        (status = svp_sched_expect_bool(cfg, "use_exponential_sigmas", 0, 0)) ||
        (status = svp_sched_expect_bool(cfg, "use_beta_sigmas", 0, 0))) {
        return status;
    }

    /* Without both bounds diffusers derives them from the beta schedule,
     * which this sampler does not implement. */
    status = svp_config_require(cfg, required);
    if (status != SVP_OK) {
        return SVP_ERR_UNSUPPORTED;
    }
    if ((status = svp_config_get_double(cfg, "sigma_min", 0, &config.sigma_min)) ||
        (status = svp_config_get_double(cfg, "sigma_max", 0, &config.sigma_max))) {
        return status;
    }
    if (!(config.sigma_min > 0) || !(config.sigma_max > config.sigma_min) ||
        !isfinite(config.sigma_max)) {
        svp_error("%s: need 0 < sigma_min < sigma_max, got %g and %g",
                  svp_config_path(cfg), config.sigma_min, config.sigma_max);
        return SVP_ERR_BAD_FILE;
    }

    status = svp_config_get_string(cfg, "timestep_spacing", "linspace", &spacing);
    if (status != SVP_OK) {
        return status;
    }
    if (strcmp(spacing, "linspace") == 0 || strcmp(spacing, "trailing") == 0) {
        config.init_sigma_plus_one = 0;
    } else if (strcmp(spacing, "leading") == 0) {
        config.init_sigma_plus_one = 1;
    } else {
        svp_error("%s: timestep_spacing \"%s\" is not supported (leading, "
                  "linspace or trailing)",
                  svp_config_path(cfg), spacing);
        return SVP_ERR_UNSUPPORTED;
    }

    *config_p = config;
    return SVP_OK;
}

svp_status_t svp_sched_config_load(const char *path, svp_sched_config_t *config_p)
{
    svp_config_h cfg;
    svp_status_t status;

    status = svp_config_load(path, &cfg);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_sched_config_read(cfg, config_p);
    svp_config_destroy(cfg);
    return status;
}

svp_status_t svp_sched_create(const svp_sched_config_t *config, int num_steps,
                              svp_sched_h *sched_p)
{
    svp_sched_h sched;
    double      max_inv_rho, min_inv_rho, ramp_step, ramp;
    float       max_sigma, s2;
    int         i;

    if (num_steps < 1 || num_steps > 100000) {
        svp_error("invalid number of sampling steps %d", num_steps);
        return SVP_ERR_INVALID_PARAM;
    }
    if (config->prediction != SVP_SCHED_PREDICTION_V) {
        return SVP_ERR_UNSUPPORTED;
    }
    sched = calloc(1, sizeof(*sched));
    if (sched == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    sched->sigmas    = malloc((size_t)(num_steps + 1) * sizeof(float));
    sched->timesteps = malloc((size_t)num_steps * sizeof(float));
    if (sched->sigmas == NULL || sched->timesteps == NULL) {
        svp_sched_destroy(sched);
        return SVP_ERR_NO_MEMORY;
    }
    sched->num_steps = num_steps;

    /*
     * Karras et al. (2022) eq. 5 in double, as diffusers does it with numpy:
     * the ramp is linspace(0, 1, n), which numpy evaluates as i * (1/(n-1))
     * with the last value set to exactly 1 (not i/(n-1): the two differ in
     * the last bit of some doubles).  Each sigma is then rounded to float.
     */
    max_inv_rho = pow(config->sigma_max, 1.0 / config->rho);
    min_inv_rho = pow(config->sigma_min, 1.0 / config->rho);
    ramp_step   = (num_steps > 1) ? 1.0 / (double)(num_steps - 1) : 0.0;
    for (i = 0; i < num_steps; ++i) {
        ramp = (num_steps > 1 && i == num_steps - 1) ? 1.0 : i * ramp_step;
        sched->sigmas[i] =
            (float)pow(max_inv_rho + ramp * (min_inv_rho - max_inv_rho),
                       config->rho);
    }
    sched->sigmas[num_steps] = 0.0f;

    /* "continuous" timesteps of a v-prediction model: 0.25 ln(sigma), in
     * float as torch computes it on the float32 sigmas */
    for (i = 0; i < num_steps; ++i) {
        sched->timesteps[i] = 0.25f * logf(sched->sigmas[i]);
    }

    max_sigma = sched->sigmas[0];
    for (i = 1; i <= num_steps; ++i) {
        max_sigma = fmaxf(max_sigma, sched->sigmas[i]);
    }
    if (config->init_sigma_plus_one) {
        s2                      = max_sigma * max_sigma + 1.0f;
        sched->init_noise_sigma = sqrtf(s2);
    } else {
        sched->init_noise_sigma = max_sigma;
    }
    *sched_p = sched;
    return SVP_OK;
}

void svp_sched_destroy(svp_sched_h sched)
{
    if (sched == NULL) {
        return;
    }
    free(sched->sigmas);
    free(sched->timesteps);
    free(sched);
}

int svp_sched_num_steps(svp_sched_h sched)
{
    return sched->num_steps;
}

const float *svp_sched_sigmas(svp_sched_h sched)
{
    return sched->sigmas;
}

const float *svp_sched_timesteps(svp_sched_h sched)
{
    return sched->timesteps;
}

float svp_sched_init_noise_sigma(svp_sched_h sched)
{
    return sched->init_noise_sigma;
}

float svp_sched_c_in(svp_sched_h sched, int step)
{
    float sigma = sched->sigmas[step];
    float s2    = sigma * sigma + 1.0f;

    return sqrtf(s2);
}

void svp_sched_scale_model_input(svp_sched_h sched, int step, const float *sample,
                                 float *out, size_t n)
{
    float  c_in = svp_sched_c_in(sched, step);
    size_t i;

    for (i = 0; i < n; ++i) {
        out[i] = svp_sched_math_scale(sample[i], c_in);
    }
}

void svp_sched_euler_coef(svp_sched_h sched, int step,
                          svp_sched_euler_coef_t *coef_p)
{
    float sigma = sched->sigmas[step];
    float s2    = sigma * sigma + 1.0f;

    coef_p->sigma = sigma;
    coef_p->s2    = s2;
    coef_p->c_out = -sigma / sqrtf(s2);
    coef_p->dt    = sched->sigmas[step + 1] - sigma;
}

void svp_sched_step(svp_sched_h sched, int step, const float *model_output,
                    const float *sample, float *prev_sample,
                    float *pred_original_sample, size_t n)
{
    svp_sched_euler_coef_t coef;
    size_t                 i;

    /* the per-element formula is sched_math.h's, shared with the CUDA
     * kernel (kernels/sched.cu) */
    svp_sched_euler_coef(sched, step, &coef);
    for (i = 0; i < n; ++i) {
        prev_sample[i] = svp_sched_math_euler(&coef, model_output[i], sample[i],
                                              pred_original_sample != NULL
                                                  ? &pred_original_sample[i]
                                                  : NULL);
    }
}
