/*
 * Tensors: a dtype, a shape and C-contiguous host memory.
 *
 * Ownership: svp_tensor_create() allocates (zeroed) and the tensor owns its
 * data; svp_tensor_wrap() borrows memory that must outlive the tensor.
 * svp_tensor_destroy() frees the struct, and the data only when owned.
 * Output parameters are written only on success.
 */
#ifndef SVP_TENSOR_TENSOR_H
#define SVP_TENSOR_TENSOR_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

#define SVP_TENSOR_MAX_DIMS 8

typedef enum {
    SVP_DTYPE_F32 = 0,
    SVP_DTYPE_F16,
    SVP_DTYPE_BF16,
    SVP_DTYPE_F64,
    SVP_DTYPE_U8,
    SVP_DTYPE_I32,
    SVP_DTYPE_I64,
    SVP_DTYPE_LAST
} svp_dtype_t;

typedef struct svp_tensor {
    svp_dtype_t dtype;
    int         ndim;
    int64_t     shape[SVP_TENSOR_MAX_DIMS];
    void       *data;
    int         owns_data;
} svp_tensor_t;

/* Bytes per element; 0 for an invalid dtype. */
size_t svp_dtype_size(svp_dtype_t dtype);

/* The safetensors name ("F32", "F16", "BF16", "F64", "U8", "I32", "I64"). */
const char *svp_dtype_name(svp_dtype_t dtype);

/* Parses a safetensors dtype name; returns -1 when unknown. */
int svp_dtype_parse(const char *name);

svp_status_t svp_tensor_create(svp_dtype_t dtype, int ndim,
                               const int64_t *shape, svp_tensor_t **tensor_p);
svp_status_t svp_tensor_wrap(svp_dtype_t dtype, int ndim, const int64_t *shape,
                             void *data, svp_tensor_t **tensor_p);
void svp_tensor_destroy(svp_tensor_t *tensor);

int64_t svp_tensor_numel(const svp_tensor_t *tensor);
size_t  svp_tensor_nbytes(const svp_tensor_t *tensor);

/* A new owned copy converted to dtype (rules of svp_convert_elements). */
svp_status_t svp_tensor_convert(const svp_tensor_t *src, svp_dtype_t dtype,
                                svp_tensor_t **dst_p);

/* "[2,4,3,8,12]" into buf. */
const char *svp_tensor_shape_str(const svp_tensor_t *tensor, char *buf, int len);
const char *svp_shape_str(int ndim, const int64_t *shape, char *buf, int len);

/* 1 for F32, F16, BF16, F64. */
int svp_dtype_is_float(svp_dtype_t dtype);

/*
 * The element count of a shape.  SVP_ERR_INVALID_PARAM when ndim is outside
 * [0, SVP_TENSOR_MAX_DIMS], a dimension is negative, or numel * 8 would
 * overflow int64 (so any byte count derived from it is representable).
 */
svp_status_t svp_shape_numel(int ndim, const int64_t *shape, int64_t *numel_p);

/*
 * Converts numel elements from src to dst (no allocation).  Either pointer
 * may be unaligned.  Same dtype: a copy; to a float dtype: from any dtype
 * (an F64 -> F16/BF16 value is rounded to F32 first); to an integer dtype
 * from another dtype: SVP_ERR_UNSUPPORTED, nothing logged.
 */
svp_status_t svp_convert_elements(svp_dtype_t src_dtype, const void *src,
                                  svp_dtype_t dst_dtype, void *dst,
                                  int64_t numel);

float    svp_f16_to_f32(uint16_t h);
uint16_t svp_f32_to_f16(float f);          /* round to nearest even */
float    svp_bf16_to_f32(uint16_t b);
uint16_t svp_f32_to_bf16(float f);         /* round to nearest even */

#endif
