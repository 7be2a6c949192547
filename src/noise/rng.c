/*
 * Counter-based random numbers (rng.h): Philox4x32-10 blocks, and normal and
 * uniform draws at any offset of a stream, so that any slice of a sample's
 * noise is the same whoever draws it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "noise/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void svp_rng_philox(uint64_t key, uint64_t counter_hi, uint64_t counter_lo,
                    uint32_t out[4])
{
    uint32_t c0 = (uint32_t)counter_lo, c1 = (uint32_t)(counter_lo >> 32);
    uint32_t c2 = (uint32_t)counter_hi, c3 = (uint32_t)(counter_hi >> 32);
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    uint64_t p0, p1;
    int      round;

    for (round = 0; round < 10; ++round) {
        p0 = (uint64_t)PHILOX_M0 * c0;
        p1 = (uint64_t)PHILOX_M1 * c2;
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* (0, 1]: never 0, so log() in Box-Muller is finite */
static double svp_rng_open01(uint32_t a, uint32_t b)
{
    uint64_t bits = ((uint64_t)a << 21) ^ (uint64_t)(b >> 11);

    bits &= (1ULL << 53) - 1;
    return ((double)bits + 1.0) / 9007199254740992.0;
}

void svp_rng_normal(uint64_t seed, uint64_t stream, uint64_t offset, size_t n,
                    float *out)
{
    uint32_t r[4];
    uint64_t block;
    size_t   i = 0;
    double   rad, theta;
    int      k;

    /* each block of 4 words gives 2 normals; position p lives in block p/2 */
    while (i < n) {
        uint64_t pos = offset + i;
        block        = pos / 2;
        svp_rng_philox(seed, stream, block, r);
        rad   = sqrt(-2.0 * log(svp_rng_open01(r[0], r[1])));
        theta = 2.0 * M_PI * (svp_rng_open01(r[2], r[3]) - 0.5);
        for (k = (int)(pos % 2); k < 2 && i < n; ++k, ++i) {
            out[i] = (float)((k == 0) ? rad * cos(theta) : rad * sin(theta));
        }
    }
}

void svp_rng_uniform(uint64_t seed, uint64_t stream, uint64_t offset, size_t n,
                     float *out)
{
    uint32_t r[4];
    size_t   i = 0;
    int      k;

    while (i < n) {
        uint64_t pos = offset + i;
        svp_rng_philox(seed ^ 0x5eed0fu, stream, pos / 4, r);
        for (k = (int)(pos % 4); k < 4 && i < n; ++k, ++i) {
            out[i] = (float)(r[k] >> 8) / 16777216.0f;
        }
    }
}
