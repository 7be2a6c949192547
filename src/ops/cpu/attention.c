/*
 * CPU attention.  Two paths with the same arithmetic:
 *
 * - short keys (SVD's temporal attention over F <= 25 frames, and its
 *   one-token cross-attention): millions of tiny problems, so one OpenMP
 *   loop over (batch, head, query) with the scores on the stack;
 * - long keys (spatial self-attention, up to 9216 keys at SVD level 0):
 *   two single-threaded sgemms per (batch, head, chunk of queries), the
 *   items spread over the threads, each thread with its own scores; the
 *   chunk is sized so that threads x chunk x kv_len <= attn_max_scores.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "common/util.h"

#include <cblas.h>
#include "ops/cpu/vecmath.h"
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

#pragma omp simd reduction(max:max)
    for (i = 1; i < len; i++) {
        max = (s[i] > max) ? s[i] : max;
    }
#pragma omp simd reduction(+:sum)
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
                                const float *q, const float *k,
                                const float *v, float *out)
{
    int64_t total = (int64_t)p->batch * p->heads * p->q_len;
    int64_t idx;

#pragma omp parallel for schedule(static) if(total > 64)
    for (idx = 0; idx < total; idx++) {
        int64_t      bq = idx / ((int64_t)p->heads * p->q_len);
        int          h  = (int)((idx / p->q_len) % p->heads);
        int          i  = (int)(idx % p->q_len);
        int64_t      bk = bq / p->kv_batch_div;
        const float *qr = q + (bq * p->q_len + i) * p->q_stride + h * p->head_dim;
        float       *orow = out + (bq * p->q_len + i) * p->out_stride +
                            h * p->head_dim;
        float        s[SVP_OPS_CPU_ATTN_SHORT_KV];
        int          j, d;

        for (j = 0; j < p->kv_len; j++) {
            const float *kr = k + (bk * p->kv_len + j) * p->k_stride +
                              h * p->head_dim;
            float dot = 0.0f;
#pragma omp simd reduction(+:dot)
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
            const float *vr = v + (bk * p->kv_len + j) * p->v_stride +
                              h * p->head_dim;
#pragma omp simd
            for (d = 0; d < p->head_dim; d++) {
                orow[d] += s[j] * vr[d];
            }
        }
    }
}

svp_status_t svp_ops_cpu_attention(svp_ops_h ops, const svp_ops_attention_t *p,
                                   const float *q, const float *k,
                                   const float *v, float *out)
{
    float        scale = 1.0f / sqrtf((float)p->head_dim);
    int64_t      chunk, n_chunks, item;
    float       *scores;
    svp_status_t status;

    if (p->kv_len <= SVP_OPS_CPU_ATTN_SHORT_KV) {
        svp_attention_short(p, scale, q, k, v, out);
        return SVP_OK;
    }

    chunk = (int64_t)(ops->attn_max_scores / ((size_t)p->kv_len * ops->threads));
    chunk = (chunk < 1) ? 1 : (chunk > p->q_len) ? p->q_len : chunk;
    status = svp_ops_cpu_scratch(ops, (size_t)chunk * p->kv_len * ops->threads,
                                 &scores);
    if (status != SVP_OK) {
        return status;
    }
    n_chunks = (p->q_len + chunk - 1) / chunk;

#pragma omp parallel for schedule(dynamic) num_threads(ops->threads)
    for (item = 0; item < (int64_t)p->batch * p->heads * n_chunks; item++) {
#ifdef _OPENMP
        float       *s  = scores + (int64_t)omp_get_thread_num() * chunk * p->kv_len;
#else
        float       *s  = scores;
#endif
        int64_t      bq = item / ((int64_t)p->heads * n_chunks);
        int          h  = (int)((item / n_chunks) % p->heads);
        int64_t      i0 = (item % n_chunks) * chunk;
        int64_t      bk = bq / p->kv_batch_div;
        int          m  = (int)SVP_MIN(chunk, p->q_len - i0);
        const float *kh = k + bk * p->kv_len * p->k_stride + h * p->head_dim;
        const float *vh = v + bk * p->kv_len * p->v_stride + h * p->head_dim;
        const float *qc = q + (bq * p->q_len + i0) * p->q_stride + h * p->head_dim;
        float       *oc = out + (bq * p->q_len + i0) * p->out_stride +
                          h * p->head_dim;
        int          r;

        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, p->kv_len,
                    p->head_dim, scale, qc, (int)p->q_stride, kh,
                    (int)p->k_stride, 0.0f, s, p->kv_len);
        for (r = 0; r < m; r++) {
            svp_softmax_row(s + (int64_t)r * p->kv_len, p->kv_len);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, p->head_dim,
                    p->kv_len, 1.0f, s, p->kv_len, vh, (int)p->v_stride, 0.0f,
                    oc, (int)p->out_stride);
    }
    return SVP_OK;
}
