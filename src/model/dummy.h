/*
 * The dummy UNet: a synthetic stand-in for the simulator.
 *
 * forward(latent, step) -> latent is a Conv3d (3x3x3, C -> C, zero padding)
 * over [C, F, H, W] per batch item, with deterministic weights derived from
 * the seed, followed by x + 0.1 * tanh(conv(x) + b(step)).  It is exactly
 * reproducible: every output element is computed by one thread in a fixed
 * order, so results are bit-identical whatever the thread count or rank.
 *
 * Cost: SVP_DUMMY_COST_COMPUTE computes the conv 'work' times (real CPU
 * load, the same result); SVP_DUMMY_COST_SLEEP runs the forward once and then sleeps until
 * step_ms has passed since the step began, a stand-in for a GPU step that
 * leaves the CPU free (pipeline benchmarks on a 2-core machine).
 */
#ifndef SVP_MODEL_DUMMY_H
#define SVP_MODEL_DUMMY_H

#include "common/status.h"
#include "tensor/tensor.h"

#include <stdint.h>

typedef struct svp_dummy *svp_dummy_h;

typedef struct {
    uint64_t seed;
    int64_t  channels; /* C of the [B, F, C, H, W] latent */
    int      cost;     /* svp_dummy_cost_t */
    int      work;     /* compute: forward repetitions per step */
    double   step_ms;  /* sleep: wall time per step */
} svp_dummy_params_t;

/* Allocates the model and its weights; destroy with svp_dummy_destroy(). */
svp_status_t svp_dummy_create(const svp_dummy_params_t *params,
                              svp_dummy_h              *model_p);
void         svp_dummy_destroy(svp_dummy_h model);

/*
 * One denoising step in place on an F32 latent [B, F, C, H, W] (C must match
 * the params).  step is the global step index: it changes the bias, so a
 * step run on the wrong rank or twice gives a different result.
 */
svp_status_t svp_dummy_step(svp_dummy_h model, svp_tensor_t *latent, int step);

#endif
