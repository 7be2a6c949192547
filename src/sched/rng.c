#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "sched/rng.h"

#include <math.h>

/* Philox4x32 round multipliers and Weyl key increments (SC'11, table 2) */
#define SVP_PHILOX_M0 0xD2511F53u
#define SVP_PHILOX_M1 0xCD9E8D57u
#define SVP_PHILOX_W0 0x9E3779B9u
#define SVP_PHILOX_W1 0xBB67AE85u
#define SVP_PHILOX_ROUNDS 10

void svp_sched_philox4x32(const uint32_t ctr[4], const uint32_t key[2],
                          uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    uint64_t p0, p1;
    int      r;

    for (r = 0; r < SVP_PHILOX_ROUNDS; ++r) {
        if (r > 0) {
            k0 += SVP_PHILOX_W0;
            k1 += SVP_PHILOX_W1;
        }
        p0 = (uint64_t)SVP_PHILOX_M0 * c0;
        p1 = (uint64_t)SVP_PHILOX_M1 * c2;
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c1 = (uint32_t)p1;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c3 = (uint32_t)p0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The two normals of Philox block `block`. */
static void svp_sched_randn_pair(const uint32_t key[2], uint64_t stream,
                                 uint64_t block, double z[2])
{
    const double two_pi = 6.283185307179586476925286766559;
    uint32_t     ctr[4], r[4];
    double       u1, u2, radius;

    ctr[0] = (uint32_t)block;
    ctr[1] = (uint32_t)(block >> 32);
    ctr[2] = (uint32_t)stream;
    ctr[3] = (uint32_t)(stream >> 32);
    svp_sched_philox4x32(ctr, key, r);

    /* u1 in (0, 1) so the log is finite; 53 bits keep the tails out to
     * about 8.6 sigma instead of the 4.8 that 32-bit uniforms would give */
    u1 = ((double)((((uint64_t)r[0] << 32) | r[1]) >> 11) + 0.5) * 0x1p-53;
    u2 = (double)((((uint64_t)r[2] << 32) | r[3]) >> 11) * 0x1p-53;
    radius = sqrt(-2.0 * log(u1));
    z[0]   = radius * cos(two_pi * u2);
    z[1]   = radius * sin(two_pi * u2);
}

void svp_sched_randn(uint64_t seed, uint64_t stream, uint64_t offset, size_t n,
                     float *out)
{
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint64_t index, block = UINT64_MAX;
    double   z[2] = {0.0, 0.0};
    size_t   i;

    for (i = 0; i < n; ++i) {
        index = offset + i;
        if (index / 2 != block) {
            block = index / 2;
            svp_sched_randn_pair(key, stream, block, z);
        }
        out[i] = (float)z[index & 1];
    }
}
