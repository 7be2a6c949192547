/*
 * Seeded random weights written as a model directory (weights file plus a
 * copy of config.json), shared by the UNet, VAE and CLIP initialisers.
 *
 * Every tensor draws from its own counter-based stream, keyed by (seed,
 * hash of its name), so a tensor's values depend on neither the order of
 * the walk nor the other tensors.
 *
 * Ownership: the writer owns every tensor it is given until
 * svp_random_weights_destroy().
 */
#ifndef SVP_MODEL_RANDOM_WEIGHTS_H
#define SVP_MODEL_RANDOM_WEIGHTS_H

#include "common/status.h"

#include <stdint.h>

typedef struct svp_random_weights *svp_random_weights_h;

/*
 * layout_only: record names and shapes, allocate and draw nothing (to list
 * what a full-size model would hold); such a writer cannot commit.
 */
svp_status_t svp_random_weights_create(uint64_t seed, int layout_only,
                                       svp_random_weights_h *rw_p);
void         svp_random_weights_destroy(svp_random_weights_h rw);

/*
 * Adds tensor 'name' of the given shape, values mean + std * N(0, 1).
 * *first_p (may be NULL) receives its first value (0 when layout only).
 */
svp_status_t svp_random_weights_add(svp_random_weights_h rw, const char *name,
                                    int ndim, const int64_t *shape, double mean,
                                    double std, float *first_p);

/*
 * The default scheme, which keeps activations O(1) through residual
 * stacks: matrices and kernels N(0, 1/fan_in), vectors named *.weight (norm
 * scales) 1 + N(0, 0.1^2), other vectors (biases) N(0, 0.05^2).
 */
svp_status_t svp_random_weights_add_default(svp_random_weights_h rw,
                                            const char *name, int ndim,
                                            const int64_t *shape);

/* Number of tensors added so far. */
int svp_random_weights_count(svp_random_weights_h rw);

/* The index-th tensor added: name (owned by rw) and shape (ndim_p, shape_p
 * pointing into rw), valid until svp_random_weights_destroy(). */
void svp_random_weights_entry(svp_random_weights_h rw, int index,
                              const char **name_p, int *ndim_p,
                              const int64_t **shape_p);

/*
 * Creates out_dir if needed and writes out_dir/weights_name (atomically) and
 * a copy of config_path as out_dir/config.json (atomically).
 */
svp_status_t svp_random_weights_commit(svp_random_weights_h rw,
                                       const char *config_path, const char *out_dir,
                                       const char *weights_name);

/*
 * Adds every parameter of the VAE the config at config_path describes,
 * drawn as svp_vae_write_random() draws them.
 */
svp_status_t svp_vae_random_add_all(const char          *config_path,
                                    svp_random_weights_h rw);

#endif
