/*
 * CPU attention.  Two paths with the same arithmetic:
 *
 * - short keys (SVD's temporal attention over F <= 25 frames, and its
 *   one-token cross-attention): millions of tiny problems, so one OpenMP
 *   loop over (batch, head, query) with the scores on the stack;
 * - long keys (spatial self-attention, up to 9216 keys at SVD level 0):
 *   flash-style tiles.  Per (batch, head, tile of 64 queries) the keys are
 *   visited a tile at a time: one sgemm for the tile's scores, the online
 *   softmax update of src/ops/ops_math.h (the CUDA kernel's own arithmetic)
 *   and one sgemm adding p . V into the tile's output.  Memory is one score
 *   tile (64 x at most 256, and at most attn_max_scores) per thread,
 *   whatever the sequence length: there is no q_len x kv_len buffer.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "common/util.h"

#include <cblas.h>
#include "ops/cpu/vecmath.h"
#include "ops/ops_math.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/*
 * Keys up to this length take the loop path (scores fit on the stack).  It
 * covers SVD's temporal attention (F <= 25).  unet_small, min of 30 runs:
 * 16 and 64 within 1% of each other, 128 (level-1 spatial attention with 96
 * keys looping too) 5% slower.
 */
#define SVP_OPS_CPU_ATTN_SHORT_KV 64

static void svp_softmax_row(float *s, int len)
{
    float max = s[0], sum = 0.0f, inv;
    int   i;

#pragma omp simd reduction(max : max)
    for (i = 1; i < len; i++) {
        max = (s[i] > max) ? s[i] : max;
    }
#pragma omp simd reduction(+ : sum)
    for (i = 0; i < len; i++) {
        s[i] = expf(s[i] - max);
        sum += s[i];
    }
    inv = 1.0f / sum;
#pragma omp simd
    for (i = 0; i < len; i++) {
        s[i] *= inv;
    }
}

static void svp_attention_short(const svp_ops_attention_t *p, float scale,
                                const float *q, const float *k, const float *v,
                                float *out)
{
    int64_t total = (int64_t)p->batch * p->heads * p->q_len;
    int64_t idx;

#pragma omp      parallel for schedule(static) if (total > 64)
    for (idx = 0; idx < total; idx++) {
             int64_t      bq = idx / ((int64_t)p->heads * p->q_len);
             int          h  = (int)((idx / p->q_len) % p->heads);
             int          i  = (int)(idx % p->q_len);
             int64_t      bk = bq / p->kv_batch_div;
             const float *qr = q + (bq * p->q_len + i) * p->q_stride + h * p->head_dim;
             float *orow = out + (bq * p->q_len + i) * p->out_stride + h * p->head_dim;
             float  s[SVP_OPS_CPU_ATTN_SHORT_KV];
             int    j, d;

             for (j = 0; j < p->kv_len; j++) {
                 const float *kr =
                     k + (bk * p->kv_len + j) * p->k_stride + h * p->head_dim;
                 float dot = 0.0f;
     #pragma omp simd reduction(+ : dot)
            for (d = 0; d < p->head_dim; d++) {
                     dot += qr[d] * kr[d];
            }
            s[j] = dot * scale;
             }
             svp_softmax_row(s, p->kv_len);
             for (d = 0; d < p->head_dim; d++) {
                 orow[d] = 0.0f;
             }
             for (j = 0; j < p->kv_len; j++) {
                 const float *vr =
                     v + (bk * p->kv_len + j) * p->v_stride + h * p->head_dim;
     #pragma omp simd
            for (d = 0; d < p->head_dim; d++) {
                     orow[d] += s[j] * vr[d];
            }
        }
    }
}

/* Query rows per tile of the long path (one sgemm's M). */
#define SVP_OPS_CPU_ATTN_TILE_Q 64
/* Keys per tile when attn_max_scores allows it: 64 x 256 scores = 64 KiB. */
#define SVP_OPS_CPU_ATTN_TILE_KV 256

svp_status_t svp_ops_cpu_attention(svp_ops_h ops, const svp_ops_attention_t *p,
                                   const float *q, const float *k, const float *v,
                                   float *out)
{
    float        scale = 1.0f / sqrtf((float)p->head_dim);
    int64_t      tq, tk, n_qt, item, per_thread;
    float       *scratch;
    svp_status_t status;

    if (p->kv_len <= SVP_OPS_CPU_ATTN_SHORT_KV) {
        svp_attention_short(p, scale, q, k, v, out);
        return SVP_OK;
    }

    /* One score tile of tq x tk per thread, tq x tk <= attn_max_scores. */
    tq = SVP_MIN(SVP_OPS_CPU_ATTN_TILE_Q, p->q_len);
    tk = (int64_t)(ops->attn_max_scores / (size_t)tq);
    tk = SVP_MAX(1, SVP_MIN(tk, SVP_MIN(SVP_OPS_CPU_ATTN_TILE_KV, p->kv_len)));
    /* per thread: scores [tq, tk], output [tq, d], running max and sum [tq] */
    per_thread = tq * tk + tq * p->head_dim + 2 * tq;
    status = svp_ops_cpu_scratch(ops, (size_t)(per_thread * ops->threads), &scratch);
    if (status != SVP_OK) {
        return status;
    }
    n_qt = (p->q_len + tq - 1) / tq;

#pragma omp parallel for schedule(dynamic) num_threads(ops->threads)
    for (item = 0; item < (int64_t)p->batch * p->heads * n_qt; item++) {
        float       *s  = svp_ops_cpu_thread_part(scratch, per_thread);
        float       *o  = s + tq * tk;
        float       *mx = o + tq * p->head_dim;
        float       *l  = mx + tq;
        int64_t      bq = item / ((int64_t)p->heads * n_qt);
        int          h  = (int)((item / n_qt) % p->heads);
        int64_t      i0 = (item % n_qt) * tq;
        int64_t      bk = bq / p->kv_batch_div;
        int          m  = (int)SVP_MIN(tq, p->q_len - i0);
        int          d  = p->head_dim;
        const float *kh = k + bk * p->kv_len * p->k_stride + h * d;
        const float *vh = v + bk * p->kv_len * p->v_stride + h * d;
        const float *qc = q + (bq * p->q_len + i0) * p->q_stride + h * d;
        float       *oc = out + (bq * p->q_len + i0) * p->out_stride + h * d;
        int64_t      j0;
        int          r, dd;

        for (r = 0; r < m; r++) {
            mx[r] = -INFINITY;
            l[r]  = 0.0f;
        }
        for (j0 = 0; j0 < p->kv_len; j0 += tk) {
            int n = (int)SVP_MIN(tk, p->kv_len - j0);

            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, d, scale, qc,
                        (int)p->q_stride, kh + j0 * p->k_stride, (int)p->k_stride,
                        0.0f, s, (int)tk);
            for (r = 0; r < m; r++) {
                float  corr = svp_math_attn_tile_row(s + r * tk, n, &mx[r], &l[r]);
                float *orow = o + (int64_t)r * d;

                if (j0 == 0) {
                    continue; /* o is written, not scaled, by this tile */
                }
#pragma omp simd
                for (dd = 0; dd < d; dd++) {
                    orow[dd] *= corr;
                }
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, d, n, 1.0f, s,
                        (int)tk, vh + j0 * p->v_stride, (int)p->v_stride,
                        (j0 == 0) ? 0.0f : 1.0f, o, d);
        }
        /* q's rows of this tile were last read above: out may alias q */
        for (r = 0; r < m; r++) {
            float inv = svp_math_attn_finish_row(l[r]);

#pragma omp simd
            for (dd = 0; dd < d; dd++) {
                oc[r * p->out_stride + dd] = o[(int64_t)r * d + dd] * inv;
            }
        }
    }
    return SVP_OK;
}
