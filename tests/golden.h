/*
 * What the model tests share: the golden case directories
 * ($SVP_GOLDEN_DIR/<case>, a skip when absent), tensors read from golden
 * safetensors files, the relative comparison the golden README recommends
 * (max|got - ref| <= tol * max|ref|), captured intermediates, and rewritten
 * weight files for the loader tests.
 *
 * Every function here fails the running test (cr_assert) rather than
 * returning an error.
 */
#ifndef SVP_TESTS_GOLDEN_H
#define SVP_TESTS_GOLDEN_H

#include "tensor/safetensors.h"
#include "tensor/tensor.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The golden case directory into buf, or a visible skip when it is absent. */
void golden_dir(const char *name, char *buf, size_t len);

/* dir/file opened (close with svp_safetensors_close()). */
svp_safetensors_h golden_open(const char *dir, const char *file);

/* Tensor name of st as F32 (destroy with svp_tensor_destroy()). */
svp_tensor_t *golden_load(svp_safetensors_h st, const char *name);

/*
 * max|got - ref| / max|ref| over n elements, *worst_p the index of the
 * largest difference; the reference must not be all zeros.
 */
double golden_rel_err(const float *got, const float *ref, int64_t n,
                      int64_t *worst_p);

/* sqrt(mean (got - ref)^2 / mean ref^2) over n elements (not all zeros);
 * a NaN in got gives NaN. */
double golden_rms_err(const float *got, const float *ref, int64_t n);

/* Asserts max|got - ref| <= tol * max|ref|, naming what and the worst element. */
void golden_assert_close(const char *what, const float *got, const float *ref,
                         int64_t n, double tol);

/* A new directory /tmp/svp_<what>_XXXXXX into tmp (remove with svp_rmtree()). */
void golden_make_tmp(const char *what, char *tmp, size_t len);

/* ---- captured intermediates ---- */

#define GOLDEN_MAX_CAPTURES 256

typedef struct {
    char   *name;
    float  *data;
    int64_t count;
} golden_capture_t;

typedef struct {
    golden_capture_t items[GOLDEN_MAX_CAPTURES];
    int              n;
} golden_captures_t;

/* An empty list, freed with golden_captures_free(). */
golden_captures_t *golden_captures_new(void);
void               golden_captures_free(golden_captures_t *caps);

/* A model's capture callback: arg is a golden_captures_t, data is copied. */
void golden_capture_cb(const char *name, const float *data, int ndim,
                       const int64_t *shape, void *arg);

/* The capture called name, or NULL. */
const golden_capture_t *golden_captures_find(const golden_captures_t *caps,
                                             const char              *name);

/* ---- weight files ---- */

/*
 * Copies dir/src_file's tensors into tmp/file converted to dtype, leaving
 * out the tensor named skip (or none) and reshaping the tensor named bad
 * (if any) to one element; dir/config.json is copied too.
 */
void golden_rewrite_weights(const char *dir, const char *src_file, const char *tmp,
                            const char *file, svp_dtype_t dtype, const char *skip,
                            const char *bad);

/*
 * Writes a safetensors file at path with header hdr (its data_offsets
 * spanning data_bytes) and a data region that is a hole: zeros that take
 * no disk, so a full-size checkpoint's layout costs a few kilobytes.
 */
void golden_write_hollow(const char *path, json_t *hdr, uint64_t data_bytes);

/*
 * Writes tensors.json's names and shapes as an F16 safetensors file at path
 * whose data region is a hole (zeros, no disk), in reverse registration
 * order and with one extra tensor named extra: the loader must depend on
 * neither order nor the absence of unknown tensors.  Returns the number of
 * tensors of tensors.json.
 */
int golden_write_sparse_layout(const char *tensors_json, const char *path,
                               const char *extra);

#endif
