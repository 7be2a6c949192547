/*
 * Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
 *
 * The value at position i of stream s under seed k is a pure function of
 * (k, s, i): sample 7's initial noise is the same whether rank 0 of 1 or rank
 * 0 of 7 makes it, and in whatever order samples are made.  That is what makes
 * a W-rank result bit-identical to the 1-rank result.
 */
#ifndef SVP_NOISE_RNG_H
#define SVP_NOISE_RNG_H

#include <stddef.h>
#include <stdint.h>

/*
 * What a stream is drawn for.  A sample's streams are svp_rng_stream(purpose)
 * under the sample's own seed: the noise depends on the seed alone, not on
 * where the sample sits in the job's list, so two samples with the same
 * image, seed and parameters are the same video, and a manifest line
 * inserted above one changes nothing of it.  Every purpose has its own
 * stream, so the noise added to the conditioning image never correlates
 * with the latents.
 */
typedef enum {
    SVP_RNG_LATENTS   = 0, /* initial latents, N(0,1) before scaling */
    SVP_RNG_NOISE_AUG = 1, /* noise added to the conditioning image */
    SVP_RNG_PURPOSE_LAST
} svp_rng_purpose_t;

/* The stream of a purpose. */
static inline uint64_t svp_rng_stream(svp_rng_purpose_t purpose)
{
    return (uint64_t)purpose << 56;
}

/*
 * These numbers are not torch.Generator's: a run cannot reproduce the noise
 * of a diffusers run with the same seed (tests against diffusers feed the
 * reference noise instead).
 */

/* One Philox4x32-10 block: 4 x 32 random bits for (key, counter). */
void svp_rng_philox(uint64_t key, uint64_t counter_hi, uint64_t counter_lo,
                    uint32_t out[4]);

/*
 * n standard normal floats (Box-Muller in double, rounded to float) for
 * stream 'stream' under 'seed', starting at position 'offset' of the stream.
 */
void svp_rng_normal(uint64_t seed, uint64_t stream, uint64_t offset, size_t n,
                    float *out);

/* n uniform floats in [0, 1) (24-bit resolution), same addressing. */
void svp_rng_uniform(uint64_t seed, uint64_t stream, uint64_t offset, size_t n,
                     float *out);

#endif
