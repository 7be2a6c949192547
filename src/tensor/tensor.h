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

/*
 * The dtypes, one table from the file to the kernels: the enum value, the
 * safetensors name, the lower-case name (a job spec, a hardware table, the
 * logs and sample.json) and the bytes per element.  The first three are
 * the dtypes matrix weights may be held in (ops.h, doc/DTYPES.md); they
 * come first, so a list of their names is indexed by the dtype (the spec's
 * dtype key stores the index it matched).
 */
#define SVP_DTYPE_WEIGHT_TABLE(_X) \
    _X(F32, "F32", "f32", 4) \
    _X(F16, "F16", "f16", 2) \
    _X(BF16, "BF16", "bf16", 2)
#define SVP_DTYPE_TABLE(_X) \
    SVP_DTYPE_WEIGHT_TABLE(_X) \
    _X(F64, "F64", "f64", 8) \
    _X(U8, "U8", "u8", 1) \
    _X(I32, "I32", "i32", 4) \
    _X(I64, "I64", "i64", 8)

#define SVP_DTYPE_ENUM_(_e, _st, _short, _size)  SVP_DTYPE_##_e,
#define SVP_DTYPE_SHORT_(_e, _st, _short, _size) _short,

typedef enum { SVP_DTYPE_TABLE(SVP_DTYPE_ENUM_) SVP_DTYPE_LAST } svp_dtype_t;

/* "f32", "f16", "bf16": initialisers of a list of the weight dtypes' names,
 * in the enum's order (append NULL where a list ends with one). */
#define SVP_DTYPE_WEIGHT_NAMES SVP_DTYPE_WEIGHT_TABLE(SVP_DTYPE_SHORT_)

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

/* The lower-case name ("f32", "bf16", ...); "?" for an invalid dtype. */
const char *svp_dtype_short_name(svp_dtype_t dtype);

/* Parses a lower-case dtype name; returns -1 when unknown. */
int svp_dtype_parse_short(const char *name);

/* 1 for the dtypes matrix weights may be held in (F32, F16, BF16). */
int svp_dtype_is_weight(svp_dtype_t dtype);

svp_status_t svp_tensor_create(svp_dtype_t dtype, int ndim, const int64_t *shape,
                               svp_tensor_t **tensor_p);
svp_status_t svp_tensor_wrap(svp_dtype_t dtype, int ndim, const int64_t *shape,
                             void *data, svp_tensor_t **tensor_p);
void         svp_tensor_destroy(svp_tensor_t *tensor);

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
                                  svp_dtype_t dst_dtype, void *dst, int64_t numel);

float    svp_f16_to_f32(uint16_t h);
uint16_t svp_f32_to_f16(float f); /* round to nearest even */
float    svp_bf16_to_f32(uint16_t b);
uint16_t svp_f32_to_bf16(float f); /* round to nearest even */

#endif
