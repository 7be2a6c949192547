/*
 * Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11).
 *
 * Every value is a pure function of (seed, stream, index): there is no
 * generator state to carry between ranks.  A sample's initial noise is
 * therefore the same whichever rank draws it and however many ranks the job
 * has, and a tensor may be drawn in pieces (offset) with the same result as
 * in one call.
 *
 * These numbers are not torch.Generator's: a run cannot reproduce the noise
 * of a diffusers run with the same seed (tests against diffusers feed the
 * reference noise instead).
 */
#ifndef SVP_SCHED_RNG_H
#define SVP_SCHED_RNG_H

#include <stddef.h>
#include <stdint.h>

/* What a stream is drawn for; one stream per (sample, purpose). */
typedef enum {
    SVP_SCHED_RNG_LATENTS   = 0,   /* initial latents, N(0,1) before scaling */
    SVP_SCHED_RNG_NOISE_AUG = 1,   /* noise added to the conditioning image */
    SVP_SCHED_RNG_PURPOSE_LAST
} svp_sched_rng_purpose_t;

/* The stream of a sample index and a purpose. */
static inline uint64_t svp_sched_rng_stream(uint64_t sample,
                                            svp_sched_rng_purpose_t purpose)
{
    return (sample << 8) | (uint64_t)purpose;
}

/* One Philox4x32-10 block: out = bijection_key(ctr). */
void svp_sched_philox4x32(const uint32_t ctr[4], const uint32_t key[2],
                          uint32_t out[4]);

/*
 * out[i] = the standard normal number (offset + i) of (seed, stream).
 * Philox block b = index / 2 with counter (b, stream) and key seed gives two
 * 53-bit uniforms and, by Box-Muller in double, two normals rounded to float.
 */
void svp_sched_randn(uint64_t seed, uint64_t stream, uint64_t offset, size_t n,
                     float *out);

#endif
