/*
 * The Euler sampler as Stable Video Diffusion uses it: diffusers'
 * EulerDiscreteScheduler with Karras sigmas, v-prediction and "continuous"
 * timesteps.
 *
 * A schedule is immutable after creation and every call takes the step index
 * explicitly, so a rank that runs steps [a, b) of a sample needs no state
 * from the ranks before it: the same (config, steps) gives the same sigmas
 * everywhere.
 *
 * Arithmetic follows diffusers bit for bit where it matters: sigmas in double
 * rounded to float, then every per-element formula in float in the order
 * diffusers evaluates it (its tensors are float32).
 */
#ifndef SVP_NOISE_EULER_H
#define SVP_NOISE_EULER_H

#include "common/status.h"
#include "noise/sched_math.h"
#include "tensor/config_json.h"

#include <stddef.h>

typedef enum {
    SVP_SCHED_PREDICTION_V = 0, /* "v_prediction", the only one SVD uses */
    SVP_SCHED_PREDICTION_LAST
} svp_sched_prediction_t;

typedef struct {
    double                 sigma_min; /* 0.002 for SVD */
    double                 sigma_max; /* 700 for SVD */
    double                 rho;       /* Karras exponent, 7 */
    svp_sched_prediction_t prediction;
    /* 1 when init_noise_sigma = sqrt(sigma_max^2 + 1) (timestep_spacing
     * "leading", SVD's); 0 for "linspace"/"trailing" (= sigma_max). */
    int init_sigma_plus_one;
} svp_sched_config_t;

typedef struct svp_sched *svp_sched_h;

/* SVD / SVD-XT's scheduler_config.json values. */
void svp_sched_config_default(svp_sched_config_t *config);

/*
 * Reads a diffusers scheduler_config.json (already loaded).  Settings this
 * sampler does not implement (another _class_name, no Karras sigmas,
 * epsilon/sample prediction, discrete timesteps, beta/exponential sigmas,
 * final_sigmas_type other than "zero", ...) are SVP_ERR_UNSUPPORTED, logged
 * with the file, the key and the value.  Malformed values: SVP_ERR_BAD_FILE.
 */
svp_status_t svp_sched_config_read(svp_config_h cfg, svp_sched_config_t *config_p);

/* svp_sched_config_read() on the file at path. */
svp_status_t svp_sched_config_load(const char *path, svp_sched_config_t *config_p);

/* Computes the schedule for num_steps >= 1 steps; free with destroy. */
svp_status_t svp_sched_create(const svp_sched_config_t *config, int num_steps,
                              svp_sched_h *sched_p);
void         svp_sched_destroy(svp_sched_h sched);

int svp_sched_num_steps(svp_sched_h sched);
/* num_steps + 1 values, the last one 0; valid until destroy. */
const float *svp_sched_sigmas(svp_sched_h sched);
/* num_steps values, 0.25 * ln(sigma_k): what the UNet gets as time. */
const float *svp_sched_timesteps(svp_sched_h sched);
/* The factor the initial N(0,1) noise is multiplied by. */
float svp_sched_init_noise_sigma(svp_sched_h sched);

/* sqrt(sigma_step^2 + 1): what the model input is divided by. */
float svp_sched_c_in(svp_sched_h sched, int step);

/* out = sample / sqrt(sigma_step^2 + 1); out may equal sample. */
void svp_sched_scale_model_input(svp_sched_h sched, int step, const float *sample,
                                 float *out, size_t n);

/*
 * One Euler step from sigma_step to sigma_{step+1} for a v-prediction
 * model_output: prev_sample (and pred_original_sample when not NULL, the
 * denoised estimate) of n elements.  prev_sample may equal sample.
 * No churn: SVD samples deterministically (s_churn = 0).
 */
void svp_sched_step(svp_sched_h sched, int step, const float *model_output,
                    const float *sample, float *prev_sample,
                    float *pred_original_sample, size_t n);

/* The constants of step `step` (sched_math.h), for a device that runs the
 * same per-element update (svp_ops_sched_euler). */
void svp_sched_euler_coef(svp_sched_h sched, int step,
                          svp_sched_euler_coef_t *coef_p);

#endif
