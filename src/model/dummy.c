/*
 * The simulator's stand-in for the UNet (dummy.h): a cheap deterministic
 * step (a small 3-D convolution with seeded weights) whose cost is chosen
 * (compute or sleep), so pipelines can be run and timed without a model.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/dummy.h"
#include "jobspec/spec.h"
#include "common/clock.h"
#include "common/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct svp_dummy {
    svp_dummy_params_t params;
    float             *weight;  /* [C_out, C_in, 3, 3, 3] */
    float             *bias;    /* [C] */
    float             *scratch; /* one batch item [C, F, H, W] */
    size_t             scratch_len;
};

/* splitmix64: weights only need to be deterministic, not high quality. */
static uint64_t svp_dummy_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static float svp_dummy_uniform(uint64_t seed, uint64_t i)
{
    /* 24 random bits -> [-1, 1) exactly representable */
    return (float)(svp_dummy_mix(seed ^ svp_dummy_mix(i)) >> 40) / 8388608.0f - 1.0f;
}

svp_status_t svp_dummy_create(const svp_dummy_params_t *params, svp_dummy_h *model_p)
{
    struct svp_dummy *m;
    int64_t           c = params->channels, i, n;
    float             scale;

    if (c < 1 || c > 4096) {
        svp_error("dummy model: invalid channel count %lld", (long long)c);
        return SVP_ERR_INVALID_PARAM;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    m->params = *params;
    n         = c * c * 27;
    m->weight = malloc(n * sizeof(float));
    m->bias   = malloc(c * sizeof(float));
    if (m->weight == NULL || m->bias == NULL) {
        svp_dummy_destroy(m);
        return SVP_ERR_NO_MEMORY;
    }
    /* ~ U(-1,1)/sqrt(fan_in) keeps activations O(1) */
    scale = 1.0f / sqrtf((float)(c * 27));
    for (i = 0; i < n; ++i) {
        m->weight[i] = svp_dummy_uniform(params->seed, (uint64_t)i) * scale;
    }
    for (i = 0; i < c; ++i) {
        m->bias[i] = 0.1f * svp_dummy_uniform(params->seed ^ 0xb1a5ULL, (uint64_t)i);
    }
    *model_p = m;
    return SVP_OK;
}

void svp_dummy_destroy(svp_dummy_h model)
{
    if (model == NULL) {
        return;
    }
    free(model->weight);
    free(model->bias);
    free(model->scratch);
    free(model);
}

/* out[c][f][y][x] = sum over (ci, kf, ky, kx) of w * in, zero padded. */
static void svp_dummy_conv3d(const struct svp_dummy *m, const float *in, float *out,
                             int64_t C, int64_t F, int64_t H, int64_t W, float tbias)
{
    /*
     * The sleep cost stands in for a GPU step: it must leave the CPU to the
     * other ranks.  OpenMP threads spin after a parallel region, and 7 ranks
     * x 2 spinning threads on 2 cores stretched 50 ms steps to 63 ms; so
     * only the compute cost runs in parallel.
     */
    int     parallel = (m->params.cost == SVP_DUMMY_COST_COMPUTE);
    int64_t co;

#pragma omp parallel for schedule(static) if (parallel)
    for (co = 0; co < C; ++co) {
        int64_t f, y, x, ci, kf, ky, kx;
        for (f = 0; f < F; ++f) {
            for (y = 0; y < H; ++y) {
                for (x = 0; x < W; ++x) {
                    float acc = m->bias[co] + tbias;
                    for (ci = 0; ci < C; ++ci) {
                        const float *w = m->weight + (co * C + ci) * 27;
                        for (kf = 0; kf < 3; ++kf) {
                            int64_t ff = f + kf - 1;
                            if (ff < 0 || ff >= F) {
                                continue;
                            }
                            for (ky = 0; ky < 3; ++ky) {
                                int64_t yy = y + ky - 1;
                                if (yy < 0 || yy >= H) {
                                    continue;
                                }
                                for (kx = 0; kx < 3; ++kx) {
                                    int64_t xx = x + kx - 1;
                                    if (xx < 0 || xx >= W) {
                                        continue;
                                    }
                                    acc += w[(kf * 3 + ky) * 3 + kx] *
                                           in[((ci * F + ff) * H + yy) * W + xx];
                                }
                            }
                        }
                    }
                    out[((co * F + f) * H + y) * W + x] = acc;
                }
            }
        }
    }
}

svp_status_t svp_dummy_step(svp_dummy_h m, svp_tensor_t *latent, int step)
{
    int64_t B, F, C, H, W, b, c, f, i, per_b, plane;
    float  *x, tbias;
    int     rep, reps;
    double  t0 = svp_clock_now(), left;

    if (latent->dtype != SVP_DTYPE_F32 || latent->ndim != 5 ||
        latent->shape[2] != m->params.channels) {
        svp_error("dummy model: expected an F32 latent [B, F, %lld, H, W]",
                  (long long)m->params.channels);
        return SVP_ERR_SHAPE;
    }
    B     = latent->shape[0];
    F     = latent->shape[1];
    C     = latent->shape[2];
    H     = latent->shape[3];
    W     = latent->shape[4];
    plane = H * W;
    per_b = F * C * plane;
    if (m->scratch_len < (size_t)(2 * per_b)) {
        free(m->scratch);
        m->scratch = malloc(2 * per_b * sizeof(float));
        if (m->scratch == NULL) {
            m->scratch_len = 0;
            return SVP_ERR_NO_MEMORY;
        }
        m->scratch_len = 2 * per_b;
    }
    tbias = 0.05f * sinf(0.7f * (float)step + 0.3f);
    reps  = (m->params.cost == SVP_DUMMY_COST_COMPUTE) ? m->params.work : 1;

    for (b = 0; b < B; ++b) {
        float *cfhw = m->scratch, *out = m->scratch + per_b;
        x = (float *)latent->data + b * per_b;
        /* [F, C, H, W] -> [C, F, H, W] so the conv runs over frames */
        for (f = 0; f < F; ++f) {
            for (c = 0; c < C; ++c) {
                memcpy(cfhw + (c * F + f) * plane, x + (f * C + c) * plane,
                       plane * sizeof(float));
            }
        }
        /* the cost knob repeats the same conv: the result does not depend on it */
        for (rep = 0; rep < reps; ++rep) {
            svp_dummy_conv3d(m, cfhw, out, C, F, H, W, tbias);
        }
        for (f = 0; f < F; ++f) {
            for (c = 0; c < C; ++c) {
                float *dst = x + (f * C + c) * plane;
                float *src = out + (c * F + f) * plane;
                for (i = 0; i < plane; ++i) {
                    dst[i] += 0.1f * tanhf(src[i]);
                }
            }
        }
    }

    if (m->params.cost == SVP_DUMMY_COST_SLEEP) {
        left = m->params.step_ms * 1e-3 - (svp_clock_now() - t0);
        svp_clock_sleep(left);
    }
    return SVP_OK;
}
