/*
 * A model's weights read from its directory's safetensors file, shared by
 * the UNet, the VAE and the image encoder.
 *
 * Every tensor is looked up by the name diffusers (or transformers) gives
 * it and checked against the shape the config implies before anything is
 * read; F32, F16 and BF16 files are accepted and converted to fp32.  In
 * check mode only the header is consulted, so a full-size checkpoint can be
 * validated without reading its data.
 *
 * Ownership: the backend buffers uploaded by svp_weights_load() belong to
 * the svp_weight_bufs_t the loader was opened with, freed by
 * svp_weight_bufs_free(); the loader itself holds only the open file.
 */
#ifndef SVP_MODEL_WEIGHTS_H
#define SVP_MODEL_WEIGHTS_H

#include "common/status.h"
#include "ops/ops.h"
#include "tensor/safetensors.h"
#include "tensor/config_json.h"

#include <stdint.h>

/*
 * Every backend buffer a model holds, and the mapped files its borrowed
 * matrix weights live in (see svp_weights_load_matrix()).
 */
typedef struct {
    float **bufs;
    int     count, cap;
    void   *map; /* one mapped weights file, or NULL */
    size_t  map_len;
} svp_weight_bufs_t;

/* Frees every buffer in bufs (with ops), unmaps its file, frees the list. */
void svp_weight_bufs_free(svp_ops_h ops, svp_weight_bufs_t *bufs);

typedef struct {
    svp_safetensors_h  st;
    svp_ops_h          ops;  /* where tensors are uploaded */
    svp_weight_bufs_t *keep; /* NULL: check mode, the header only */
    int                used; /* tensors found so far */
    void              *map;  /* the file mapped, while loading */
    size_t             map_len;
    int                map_state; /* 0: not tried, 1: mapped, -1: not used */
} svp_weights_t;

/*
 * Opens model_dir/weights_file, or when weights_file is NULL the first of
 * model_dir/<stem>.safetensors and model_dir/<stem>.fp16.safetensors that
 * exists (SVP_ERR_NOT_FOUND, logged, when neither does).  keep NULL opens
 * in check mode (ops is then not used).  Close with svp_weights_close().
 */
svp_status_t svp_weights_open(const char *model_dir, const char *weights_file,
                              const char *stem, svp_ops_h ops,
                              svp_weight_bufs_t *keep, svp_weights_t *w_p);
void         svp_weights_close(svp_weights_t *w);

/* The file's path, for messages. */
const char *svp_weights_path(const svp_weights_t *w);

/*
 * Finds tensor name and checks its shape and dtype; SVP_ERR_BAD_FILE, with
 * an error naming the file, the tensor and both shapes, when it is missing,
 * shaped otherwise or not a float tensor.  Counts it as used.
 */
svp_status_t svp_weights_find(svp_weights_t *w, const char *name, int ndim,
                              const int64_t *shape);

/*
 * svp_weights_find(), then (unless in check mode) reads the tensor as fp32,
 * multiplies it by scale and uploads it into a new backend buffer kept in
 * w->keep.  *buf_p is written only when a buffer was uploaded.
 */
svp_status_t svp_weights_load(svp_weights_t *w, const char *name, int ndim,
                              const int64_t *shape, float scale, float **buf_p);

/*
 * svp_weights_load() for the weight of a linear or convolution, held in the
 * ops handle's dtype.  When the file already holds that dtype (and scale is
 * 1) and the backend's buffers are host memory, the tensor is used in
 * place from the file mapped read-only, as torch does with safetensors:
 * nothing is copied and pages are read when first used (the mapping then
 * belongs to w->keep).  Otherwise it is read, rounded and uploaded with
 * svp_ops_weights_upload() (an error names the tensor when a value is
 * beyond the dtype's range).
 */
svp_status_t svp_weights_load_matrix(svp_weights_t *w, const char *name, int ndim,
                                     const int64_t *shape, float scale,
                                     void **buf_p);

/* A one-element tensor read on the host; 0 in check mode. */
svp_status_t svp_weights_scalar(svp_weights_t *w, const char *name, float *value_p);

/*
 * Logs (debug) how many of the file's tensors were not used by what.
 * Extra tensors are not an error: diffusers only warns about them.
 */
void svp_weights_log_unused(const svp_weights_t *w, const char *what);

/*
 * Reads a config's "block_out_channels": 1 to max entries, each a positive
 * multiple of 32 (every GroupNorm in these models has 32 groups).  Errors
 * name path and the entry; *count_p and out are written only on success.
 */
svp_status_t svp_weights_config_channels(svp_config_h cj, const char *path, int max,
                                         int *out, int *count_p);

#endif
