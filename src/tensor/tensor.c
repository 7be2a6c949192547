/*
 * Tensors (tensor.h): the dtype table's names and sizes, creation with
 * shapes and strides, and the 16-bit conversions.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tensor/tensor.h"
#include "common/log.h"
#include "common/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVP_DTYPE_ROW_(_e, _st, _short, _size) \
    [SVP_DTYPE_##_e] = {_st, _short, _size},
#define SVP_DTYPE_WEIGHT_(_e, _st, _short, _size) \
    +1 /* NOLINT(bugprone-macro-parentheses): a count, term by term */

/* tensor.h's table, indexed by the enum */
static const struct {
    const char *name;
    const char *short_name;
    size_t      size;
} svp_dtype_table[] = {SVP_DTYPE_TABLE(SVP_DTYPE_ROW_)};

_Static_assert(sizeof(svp_dtype_table) / sizeof(svp_dtype_table[0]) ==
                   SVP_DTYPE_LAST,
               "one row of svp_dtype_table per dtype");

size_t svp_dtype_size(svp_dtype_t dtype)
{
    return ((unsigned)dtype < SVP_DTYPE_LAST) ? svp_dtype_table[dtype].size : 0;
}

const char *svp_dtype_name(svp_dtype_t dtype)
{
    return ((unsigned)dtype < SVP_DTYPE_LAST) ? svp_dtype_table[dtype].name : "?";
}

const char *svp_dtype_short_name(svp_dtype_t dtype)
{
    return ((unsigned)dtype < SVP_DTYPE_LAST) ? svp_dtype_table[dtype].short_name
                                              : "?";
}

int svp_dtype_parse(const char *name)
{
    int i;

    for (i = 0; i < SVP_DTYPE_LAST; ++i) {
        if (strcmp(name, svp_dtype_table[i].name) == 0) {
            return i;
        }
    }
    return -1;
}

int svp_dtype_parse_short(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < SVP_DTYPE_LAST; ++i) {
        if (strcmp(name, svp_dtype_table[i].short_name) == 0) {
            return i;
        }
    }
    return -1;
}

int svp_dtype_is_weight(svp_dtype_t dtype)
{
    /* the weight dtypes are the table's first rows */
    return (unsigned)dtype < (0 SVP_DTYPE_WEIGHT_TABLE(SVP_DTYPE_WEIGHT_));
}

int svp_dtype_is_float(svp_dtype_t dtype)
{
    return dtype == SVP_DTYPE_F32 || dtype == SVP_DTYPE_F16 ||
           dtype == SVP_DTYPE_BF16 || dtype == SVP_DTYPE_F64;
}

svp_status_t svp_shape_numel(int ndim, const int64_t *shape, int64_t *numel_p)
{
    int64_t numel = 1;
    int     i;

    if (ndim < 0 || ndim > SVP_TENSOR_MAX_DIMS) {
        return SVP_ERR_INVALID_PARAM;
    }
    for (i = 0; i < ndim; ++i) {
        if (shape[i] < 0) {
            return SVP_ERR_INVALID_PARAM;
        }
        /* every byte count derived from numel must fit in int64 too, so
         * keep numel * 8 (the widest dtype) representable */
        if (shape[i] != 0 && numel > (INT64_MAX / 8) / shape[i]) {
            return SVP_ERR_INVALID_PARAM;
        }
        numel *= shape[i];
    }
    *numel_p = numel;
    return SVP_OK;
}

static svp_status_t svp_tensor_alloc(svp_dtype_t dtype, int ndim,
                                     const int64_t *shape, svp_tensor_t **tensor_p)
{
    svp_tensor_t *tensor;
    int64_t       numel;

    if (svp_dtype_size(dtype) == 0) {
        svp_error("invalid dtype %d", (int)dtype);
        return SVP_ERR_INVALID_PARAM;
    }
    if ((ndim > 0 && shape == NULL) ||
        svp_shape_numel(ndim, shape, &numel) != SVP_OK) {
        svp_error("invalid tensor shape (ndim %d)", ndim);
        return SVP_ERR_INVALID_PARAM;
    }
    tensor = calloc(1, sizeof(*tensor));
    if (tensor == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    tensor->dtype = dtype;
    tensor->ndim  = ndim;
    if (ndim > 0) {
        memcpy(tensor->shape, shape, (size_t)ndim * sizeof(shape[0]));
    }
    *tensor_p = tensor;
    return SVP_OK;
}

svp_status_t svp_tensor_create(svp_dtype_t dtype, int ndim, const int64_t *shape,
                               svp_tensor_t **tensor_p)
{
    svp_tensor_t *tensor;
    svp_status_t  status;
    size_t        nbytes;

    status = svp_tensor_alloc(dtype, ndim, shape, &tensor);
    if (status != SVP_OK) {
        return status;
    }
    nbytes = svp_tensor_nbytes(tensor);
    /* calloc(0) may return NULL; an empty tensor still gets a valid pointer */
    tensor->data = calloc(1, SVP_MAX(nbytes, 1));
    if (tensor->data == NULL) {
        svp_error("cannot allocate %zu bytes for a tensor", nbytes);
        free(tensor);
        return SVP_ERR_NO_MEMORY;
    }
    tensor->owns_data = 1;
    *tensor_p         = tensor;
    return SVP_OK;
}

svp_status_t svp_tensor_wrap(svp_dtype_t dtype, int ndim, const int64_t *shape,
                             void *data, svp_tensor_t **tensor_p)
{
    svp_tensor_t *tensor;
    svp_status_t  status;

    status = svp_tensor_alloc(dtype, ndim, shape, &tensor);
    if (status != SVP_OK) {
        return status;
    }
    if (data == NULL && svp_tensor_nbytes(tensor) > 0) {
        free(tensor);
        return SVP_ERR_INVALID_PARAM;
    }
    tensor->data      = data;
    tensor->owns_data = 0;
    *tensor_p         = tensor;
    return SVP_OK;
}

void svp_tensor_destroy(svp_tensor_t *tensor)
{
    if (tensor == NULL) {
        return;
    }
    if (tensor->owns_data) {
        free(tensor->data);
    }
    free(tensor);
}

int64_t svp_tensor_numel(const svp_tensor_t *tensor)
{
    int64_t numel = 1;
    int     i;

    for (i = 0; i < tensor->ndim; ++i) {
        numel *= tensor->shape[i];
    }
    return numel;
}

size_t svp_tensor_nbytes(const svp_tensor_t *tensor)
{
    return (size_t)svp_tensor_numel(tensor) * svp_dtype_size(tensor->dtype);
}

/*
 * Element conversion between any dtype and a float dtype.  Elements are read
 * and written with memcpy because the source may sit unaligned inside a
 * safetensors mapping (golden files mix U8 and F32 tensors).
 */
static double svp_elem_read(svp_dtype_t dtype, const unsigned char *p)
{
    float    f;
    double   d;
    uint16_t h;
    int32_t  i32;
    int64_t  i64;

    switch (dtype) {
    case SVP_DTYPE_F32:
        memcpy(&f, p, 4);
        return f;
    case SVP_DTYPE_F16:
        memcpy(&h, p, 2);
        return svp_f16_to_f32(h);
    case SVP_DTYPE_BF16:
        memcpy(&h, p, 2);
        return svp_bf16_to_f32(h);
    case SVP_DTYPE_F64:
        memcpy(&d, p, 8);
        return d;
    case SVP_DTYPE_U8:
        return *p;
    case SVP_DTYPE_I32:
        memcpy(&i32, p, 4);
        return i32;
    case SVP_DTYPE_I64:
        memcpy(&i64, p, 8);
        return (double)i64;
    default:
        return 0.0;
    }
}

static void svp_elem_write(svp_dtype_t dtype, double v, unsigned char *p)
{
    float    f;
    uint16_t h;

    switch (dtype) {
    case SVP_DTYPE_F32:
        f = (float)v;
        memcpy(p, &f, 4);
        break;
    case SVP_DTYPE_F16:
        /* a double source is rounded to float first: double rounding can
         * differ from a direct conversion only on exact f16 ties of an F64
         * value, which the model files never hold */
        h = svp_f32_to_f16((float)v);
        memcpy(p, &h, 2);
        break;
    case SVP_DTYPE_BF16:
        h = svp_f32_to_bf16((float)v);
        memcpy(p, &h, 2);
        break;
    case SVP_DTYPE_F64:
        memcpy(p, &v, 8);
        break;
    default:
        break;
    }
}

/* Elements below which a conversion stays on one thread. */
#define SVP_CONVERT_PAR_MIN (1 << 16)

/*
 * One element type to another through fn, memcpy'ing each element since
 * either side may be unaligned.  Element-wise, so splitting it over the
 * OpenMP threads (the backend's count) changes no bit.
 */
#define svp_convert_loop(_src_t, _dst_t, _fn) \
    do { \
        _Pragma("omp parallel for schedule(static) if (numel >= SVP_CONVERT_PAR_MIN)") for ( \
            i = 0; i < numel; ++i) \
        { \
            _src_t _in; \
            _dst_t _out; \
            memcpy(&_in, s + i * sizeof(_src_t), sizeof(_src_t)); \
            _out = _fn(_in); \
            memcpy(d + i * sizeof(_dst_t), &_out, sizeof(_dst_t)); \
        } \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

/*
 * f16 -> f32 eight at a time with the F16C instruction, which is exact for
 * every finite value, subnormals included.  A block holding an infinity or
 * NaN goes through svp_f16_to_f32(), which keeps a NaN's payload bit for
 * bit (the instruction would quiet a signalling one).
 *
 * This function does blocks [b0, b1) of eight, and the OpenMP loop that
 * shares them out is in its caller: clang compiles an OpenMP loop's body
 * as a function of its own that does not inherit the target attribute,
 * and refuses AVX vectors there ("AVX vector ... without 'avx' enabled
 * changes the ABI").
 */
__attribute__((target("f16c,avx"))) static void
svp_f16_to_f32_f16c_blocks(const unsigned char *s, unsigned char *d, int64_t b0,
                           int64_t b1)
{
    int64_t b;

    for (b = b0; b < b1; ++b) {
        const unsigned char *in  = s + b * 16;
        unsigned char       *out = d + b * 32;
        __m128i              h   = _mm_loadu_si128((const __m128i *)in);
        __m128i              e   = _mm_and_si128(h, _mm_set1_epi16(0x7c00));
        int                  k;

        if (_mm_movemask_epi8(_mm_cmpeq_epi16(e, _mm_set1_epi16(0x7c00))) == 0) {
            _mm256_storeu_ps((float *)out, _mm256_cvtph_ps(h));
            continue;
        }
        for (k = 0; k < 8; ++k) {
            uint16_t v;
            float    f;

            memcpy(&v, in + 2 * k, 2);
            f = svp_f16_to_f32(v);
            memcpy(out + 4 * k, &f, 4);
        }
    }
}

/* blocks per call of the function above: 32 KiB of f32 out */
#define SVP_F16C_CHUNK 1024

static void svp_f16_to_f32_f16c(const unsigned char *s, unsigned char *d,
                                int64_t numel)
{
    int64_t nblocks = numel / 8, c, i;

#pragma omp parallel for schedule(static) if (numel >= SVP_CONVERT_PAR_MIN)
    for (c = 0; c < nblocks; c += SVP_F16C_CHUNK) {
        svp_f16_to_f32_f16c_blocks(s, d, c, SVP_MIN(nblocks, c + SVP_F16C_CHUNK));
    }
    for (i = nblocks * 8; i < numel; ++i) {
        uint16_t v;
        float    f;

        memcpy(&v, s + 2 * i, 2);
        f = svp_f16_to_f32(v);
        memcpy(d + 4 * i, &f, 4);
    }
}

static int svp_have_f16c(void)
{
    static int have = -1;

    if (have < 0) {
        unsigned int eax, ebx, ecx, edx;

        /* F16C from CPUID leaf 1 itself: clang 14's __builtin_cpu_supports
         * does not know "f16c" (a compile error); "avx" also checks that
         * the OS saves the YMM registers */
        __builtin_cpu_init();
        have = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) &&
               __builtin_cpu_supports("avx");
    }
    return have;
}
#endif

svp_status_t svp_convert_elements(svp_dtype_t src_dtype, const void *src,
                                  svp_dtype_t dst_dtype, void *dst, int64_t numel)
{
    const unsigned char *s = src;
    unsigned char       *d = dst;
    size_t               ss, ds;
    int64_t              i;

    ss = svp_dtype_size(src_dtype);
    ds = svp_dtype_size(dst_dtype);
    if (ss == 0 || ds == 0) {
        return SVP_ERR_INVALID_PARAM;
    }
    if (src_dtype == dst_dtype) {
        memcpy(dst, src, (size_t)numel * ss);
        return SVP_OK;
    }
    /* integers are only ever copied as they are: converting to or between
     * them would silently truncate or wrap */
    if (!svp_dtype_is_float(dst_dtype)) {
        return SVP_ERR_UNSUPPORTED;
    }
    /* weights are loaded by the gigabyte: the pairs that loading and saving
     * use get loops without a per-element dtype switch */
    if (src_dtype == SVP_DTYPE_F16 && dst_dtype == SVP_DTYPE_F32) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (svp_have_f16c()) {
            svp_f16_to_f32_f16c(s, d, numel);
            return SVP_OK;
        }
#endif
        svp_convert_loop(uint16_t, float, svp_f16_to_f32);
        /* the branches differ in their function: clang-tidy 14 takes two
     * "omp parallel for" loops for clones */
    } else if (src_dtype == SVP_DTYPE_BF16 &&
               dst_dtype == SVP_DTYPE_F32) { /* NOLINT(bugprone-branch-clone) */
        svp_convert_loop(uint16_t, float, svp_bf16_to_f32);
    } else if (src_dtype == SVP_DTYPE_F32 && dst_dtype == SVP_DTYPE_F16) {
        svp_convert_loop(float, uint16_t, svp_f32_to_f16);
    } else if (src_dtype == SVP_DTYPE_F32 && dst_dtype == SVP_DTYPE_BF16) {
        svp_convert_loop(float, uint16_t, svp_f32_to_bf16);
    } else {
        for (i = 0; i < numel; ++i) {
            svp_elem_write(dst_dtype, svp_elem_read(src_dtype, s + i * ss),
                           d + i * ds);
        }
    }
    return SVP_OK;
}

svp_status_t svp_tensor_convert(const svp_tensor_t *src, svp_dtype_t dtype,
                                svp_tensor_t **dst_p)
{
    svp_tensor_t *dst;
    svp_status_t  status;
    char          shape[128];

    status = svp_tensor_create(dtype, src->ndim, src->shape, &dst);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_convert_elements(src->dtype, src->data, dtype, dst->data,
                                  svp_tensor_numel(src));
    if (status != SVP_OK) {
        svp_error("cannot convert a %s tensor %s to %s", svp_dtype_name(src->dtype),
                  svp_tensor_shape_str(src, shape, sizeof(shape)),
                  svp_dtype_name(dtype));
        svp_tensor_destroy(dst);
        return status;
    }
    *dst_p = dst;
    return SVP_OK;
}

const char *svp_tensor_shape_str(const svp_tensor_t *tensor, char *buf, int len)
{
    return svp_shape_str(tensor->ndim, tensor->shape, buf, len);
}

const char *svp_shape_str(int ndim, const int64_t *shape, char *buf, int len)
{
    int pos = 0, i, n;

    if (len <= 0) {
        return buf;
    }
    buf[0] = '\0';
    n      = snprintf(buf, (size_t)len, "[");
    for (i = 0; i < ndim && n >= 0 && pos + n < len; ++i) {
        pos += n;
        n = snprintf(buf + pos, (size_t)(len - pos), "%s%lld", (i > 0) ? "," : "",
                     (long long)shape[i]);
    }
    if (n >= 0 && pos + n < len) {
        pos += n;
        snprintf(buf + pos, (size_t)(len - pos), "]");
    }
    return buf;
}

/*
 * IEEE binary16 <-> binary32.  Done with integer arithmetic so the result is
 * the same on every host whatever its FPU rounding mode or F16C support.
 */
float svp_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp  = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    float    f;

    if (exp == 0x1f) { /* inf or NaN: keep the payload */
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) { /* normal */
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    } else if (mant == 0) { /* signed zero */
        bits = sign;
    } else { /* subnormal: normalize */
        exp = 127 - 15 + 1;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t svp_f32_to_f16(float f)
{
    uint32_t bits, sign, mant, round;
    int32_t  exp;
    uint16_t h;

    memcpy(&bits, &f, 4);
    sign = (bits >> 16) & 0x8000u;
    exp  = (int32_t)((bits >> 23) & 0xffu);
    mant = bits & 0x7fffffu;

    if (exp == 0xff) { /* inf, or NaN kept quiet */
        return (uint16_t)(sign | 0x7c00u | (mant ? (0x200u | (mant >> 13)) : 0));
    }
    exp -= 127 - 15;
    if (exp >= 0x1f) { /* too large: inf */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (exp <= 0) {
        /* subnormal or zero in f16: shift the full significand right and
         * round to nearest even on the bits shifted out */
        uint32_t shift;

        if (exp < -10) { /* below half the smallest subnormal */
            return (uint16_t)sign;
        }
        mant |= 0x800000u;
        shift = (uint32_t)(14 - exp);
        h     = (uint16_t)(mant >> shift);
        round = mant & ((1u << shift) - 1);
        if (round > (1u << (shift - 1)) ||
            (round == (1u << (shift - 1)) && (h & 1u))) {
            ++h; /* may carry into the smallest normal */
        }
        return (uint16_t)(sign | h);
    }
    h     = (uint16_t)((exp << 10) | (mant >> 13));
    round = mant & 0x1fffu;
    if (round > 0x1000u || (round == 0x1000u && (h & 1u))) {
        ++h; /* a carry into exp is correct, up to inf */
    }
    return (uint16_t)(sign | h);
}

float svp_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float    f;

    memcpy(&f, &bits, 4);
    return f;
}

uint16_t svp_f32_to_bf16(float f)
{
    uint32_t bits;

    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { /* NaN: truncate, keep quiet */
        return (uint16_t)((bits >> 16) | 0x40u);
    }
    bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(bits >> 16);
}
