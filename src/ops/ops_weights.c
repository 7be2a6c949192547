/*
 * Matrix weights in the handle's dtype (ops.h): upload with rounding, the
 * exact widening to fp32 that every product of a 16-bit CPU handle starts
 * with (a backend with 16-bit products takes them as held), and the CPU
 * twin of those products' rounded activations (round_activations).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_weights.h"
#include "ops/ops_math.h"
#include "common/log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Grows the widening buffer to count elements (a backend allocation). */
static svp_status_t svp_ops_widen_reserve(svp_ops_h ops, size_t count)
{
    float       *buf;
    svp_status_t status;

    if (count <= ops->widen_count || ops->vt->products16 || ops->native16) {
        return SVP_OK; /* a 16-bit product takes the weight as held */
    }
    status = ops->vt->alloc(ops, count, &buf);
    if (status != SVP_OK) {
        return status;
    }
    if (ops->widen_buf != NULL) {
        ops->vt->free(ops, ops->widen_buf);
    }
    ops->mem.backend_allocs++;
    ops->mem.reserved_bytes += (count - ops->widen_count) * sizeof(float);
    ops->widen_buf   = buf;
    ops->widen_count = count;
    return SVP_OK;
}

void svp_ops_weights_cleanup(svp_ops_h ops)
{
    if (ops->widen_buf != NULL) {
        ops->vt->free(ops, ops->widen_buf);
        ops->widen_buf   = NULL;
        ops->widen_count = 0;
    }
    if (ops->round_buf != NULL) {
        ops->vt->free(ops, ops->round_buf);
        ops->round_buf   = NULL;
        ops->round_count = 0;
    }
}

/*
 * Rounds count fp32 values to 16 bits into dst (padded to an even count
 * with zeros); SVP_ERR_INVALID_PARAM when a finite value leaves the range.
 */
static svp_status_t svp_ops_weights_round(svp_dtype_t dtype, const float *src,
                                          size_t count, uint16_t *dst)
{
    int64_t i, bad = -1;

#pragma omp parallel for schedule(static) if (count >= (1u << 16))
    for (i = 0; i < (int64_t)count; i++) {
        uint16_t h = (dtype == SVP_DTYPE_BF16) ? svp_f32_to_bf16(src[i])
                                               : svp_f32_to_f16(src[i]);
        float    back =
            (dtype == SVP_DTYPE_BF16) ? svp_bf16_to_f32(h) : svp_f16_to_f32(h);

        if (isfinite(src[i]) && !isfinite(back)) {
#pragma omp critical(svp_ops_weights_round)
            if (bad < 0 || i < bad) {
                bad = i;
            }
        }
        dst[i] = h;
    }
    if (count % 2 != 0) {
        dst[count] = 0;
    }
    if (bad >= 0) {
        svp_error("weight element %lld (%g) is beyond the range of %s",
                  (long long)bad, (double)src[bad], svp_dtype_name(dtype));
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_OK;
}

svp_status_t svp_ops_weights_upload(svp_ops_h ops, const float *host_src,
                                    size_t count, void **buf_p)
{
    uint16_t    *half;
    float       *buf;
    svp_status_t status;

    if (ops->weight_dtype == SVP_DTYPE_F32) {
        status = svp_ops_alloc(ops, count, &buf);
        if (status != SVP_OK) {
            return status;
        }
        status = svp_ops_upload(ops, buf, host_src, count);
        if (status != SVP_OK) {
            svp_ops_free(ops, buf);
            return status;
        }
        ops->weight_bytes += count * sizeof(float);
        *buf_p = buf;
        return SVP_OK;
    }

    /* rounded, then uploaded as the bits of a 16-bit file would be */
    half = malloc(((count + 1) / 2) * 2 * sizeof(*half));
    if (half == NULL) {
        svp_error("cannot allocate %zu bytes to round weights", count * 2);
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_ops_weights_round(ops->weight_dtype, host_src, count, half);
    if (status == SVP_OK) {
        status = svp_ops_weights_upload_bits(ops, half, count, buf_p);
    }
    free(half);
    return status;
}

svp_status_t svp_ops_weights_upload_bits(svp_ops_h ops, const uint16_t *bits,
                                         size_t count, void **buf_p)
{
    size_t       units  = (count + 1) / 2;
    uint16_t    *padded = NULL;
    float       *buf;
    svp_status_t status;

    if (ops->weight_dtype == SVP_DTYPE_F32) {
        svp_error("ops: 16-bit weights given to an f32 handle");
        return SVP_ERR_INVALID_PARAM;
    }
    if (count % 2 != 0) {
        /* whole fp32 units: the last one gets a zero high half */
        padded = malloc(units * 2 * sizeof(*padded));
        if (padded == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        memcpy(padded, bits, count * sizeof(*padded));
        padded[count] = 0;
        bits          = padded;
    }
    status = svp_ops_widen_reserve(ops, count);
    if (status == SVP_OK) {
        status = svp_ops_alloc(ops, units, &buf);
    }
    if (status == SVP_OK) {
        status = ops->vt->upload(ops, buf, (const float *)(const void *)bits, units);
        if (status != SVP_OK) {
            svp_ops_free(ops, buf);
        }
    }
    if (status == SVP_OK) {
        ops->weight_bytes += count * sizeof(uint16_t);
        *buf_p = buf;
    }
    free(padded);
    return status;
}

svp_status_t svp_ops_weights_borrow(svp_ops_h ops, const void *host, size_t count,
                                    void **buf_p)
{
    size_t       esize = svp_dtype_size(ops->weight_dtype);
    svp_status_t status;

    if (!ops->vt->host_memory) {
        return SVP_ERR_UNSUPPORTED;
    }
    if ((uintptr_t)host % esize != 0) {
        svp_error("ops: borrowed %s weights at %p are not aligned",
                  svp_ops_dtype(ops), host);
        return SVP_ERR_INVALID_PARAM;
    }
    if (ops->weight_dtype != SVP_DTYPE_F32) {
        status = svp_ops_widen_reserve(ops, count);
        if (status != SVP_OK) {
            return status;
        }
    }
    ops->weight_bytes += count * esize;
    *buf_p = (void *)host; /* the op reads borrowed weights only */
    return SVP_OK;
}

svp_dtype_t svp_ops_weights_dtype(svp_ops_h ops)
{
    return ops->weight_dtype;
}

size_t svp_ops_weights_bytes(svp_ops_h ops)
{
    return ops->weight_bytes;
}

svp_status_t svp_ops_weights_f32(svp_ops_h ops, const void *weight, size_t count,
                                 const float **w_p)
{
    svp_status_t status;

    if (ops->weight_dtype == SVP_DTYPE_F32 || ops->vt->products16 || ops->native16) {
        *w_p = weight;
        return SVP_OK;
    }
    if (count > ops->widen_count) {
        svp_error("ops: a %s weight of %zu elements is larger than any "
                  "uploaded (%zu): not a buffer of svp_ops_weights_upload()",
                  svp_ops_dtype(ops), count, ops->widen_count);
        return SVP_ERR_INVALID_PARAM;
    }
    status = ops->vt->widen(ops, ops->weight_dtype, weight, count, ops->widen_buf);
    if (status == SVP_OK) {
        *w_p = ops->widen_buf;
    }
    return status;
}

svp_status_t svp_ops_weights_operand(svp_ops_h ops, const float *x, size_t count,
                                     const float **x_p)
{
    float       *buf;
    int64_t      i;
    svp_status_t status;

    if (ops->product_dtype == SVP_DTYPE_F32 || ops->vt->products16 ||
        ops->native16) {
        *x_p = x;
        return SVP_OK;
    }
    /* the CPU twin of a 16-bit product: the activation rounded to nearest
     * even and widened back exactly, as the device rounds its operand */
    if (count > ops->round_count) {
        status = ops->vt->alloc(ops, count, &buf);
        if (status != SVP_OK) {
            return status;
        }
        if (ops->round_buf != NULL) {
            ops->vt->free(ops, ops->round_buf);
        }
        ops->mem.backend_allocs++;
        ops->mem.reserved_bytes += (count - ops->round_count) * sizeof(float);
        ops->round_buf   = buf;
        ops->round_count = count;
    }
    buf = ops->round_buf;
    /* the branches differ (bf16, f16): clang-tidy 14 takes two "omp
     * parallel for" loops for clones */
    if (ops->product_dtype == SVP_DTYPE_BF16) { /* NOLINT(bugprone-branch-clone) */
#pragma omp parallel for schedule(static) if (count >= (1u << 16))
        for (i = 0; i < (int64_t)count; i++) {
            buf[i] = svp_math_bf16_to_f32(svp_math_f32_to_bf16(x[i]));
        }
    } else {
#pragma omp parallel for schedule(static) if (count >= (1u << 16))
        for (i = 0; i < (int64_t)count; i++) {
            buf[i] = svp_math_f16_to_f32(svp_math_f32_to_f16(x[i]));
        }
    }
    *x_p = buf;
    return SVP_OK;
}

svp_status_t svp_ops_weights_operands(svp_ops_h ops, const void **weight_p,
                                      size_t weight_count, const float **x_p,
                                      size_t x_count)
{
    const float *w, *x;

    SVP_TRY(svp_ops_weights_f32(ops, *weight_p, weight_count, &w));
    SVP_TRY(svp_ops_weights_operand(ops, *x_p, x_count, &x));
    *weight_p = w;
    *x_p      = x;
    return SVP_OK;
}
