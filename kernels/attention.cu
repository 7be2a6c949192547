/*
 * Multi-head attention, two paths with the CPU backend's split
 * (src/ops/cpu/attention.c):
 *
 * - short keys (SVD's temporal attention over F <= 25 frames, and its
 *   one-token cross-attention): millions of tiny problems, one warp per
 *   (batch, head, query) row with its scores in registers and shared memory;
 * - long keys (spatial self-attention): per query batch and chunk of
 *   queries, scores for all heads by one strided batched sgemm, a softmax
 *   kernel over the rows, and a second batched sgemm into out.  The chunk
 *   keeps heads x chunk x kv_len within attn_max_scores.
 *
 * out may be q: a row's head slice is read before it is written, by the
 * same warp (short) or by an earlier call on the same stream (long).
 */
#include "kernels.cuh"

#include <math.h>

/* Keys up to this length take the warp path: two scores per lane. */
#define SVP_ATTN_SHORT_KV 64
#define SVP_ATTN_WARPS    4
#define SVP_SOFTMAX_BLOCK 256

static __device__ inline float svp_warp_max(float v)
{
    for (int o = 16; o > 0; o /= 2) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v;
}

static __device__ inline float svp_warp_sum(float v)
{
    for (int o = 16; o > 0; o /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

static __global__ void svp_attention_short_kernel(svp_ops_attention_t p,
                                                  float scale, const float *q,
                                                  const float *k,
                                                  const float *v, float *out)
{
    extern __shared__ float shared[];
    int     lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int     d    = p.head_dim;
    float  *qs   = shared + warp * (d + SVP_ATTN_SHORT_KV);
    float  *ps   = qs + d;
    int64_t total = (int64_t)p.batch * p.heads * p.q_len;

    for (int64_t row = (int64_t)blockIdx.x * SVP_ATTN_WARPS + warp;
         row < total; row += (int64_t)gridDim.x * SVP_ATTN_WARPS) {
        int64_t      bq = row / ((int64_t)p.heads * p.q_len);
        int          h  = (int)((row / p.q_len) % p.heads);
        int64_t      i  = row % p.q_len;
        int64_t      bk = bq / p.kv_batch_div;
        const float *qr = q + (bq * p.q_len + i) * p.q_stride + (int64_t)h * d;
        float       *orow = out + (bq * p.q_len + i) * p.out_stride +
                            (int64_t)h * d;
        float        s[2] = { -INFINITY, -INFINITY };
        float        max, sum;

        for (int dd = lane; dd < d; dd += 32) {
            qs[dd] = qr[dd];
        }
        __syncwarp();
        for (int c = 0; c < 2; c++) {
            int j = lane + 32 * c;
            if (j < p.kv_len) {
                const float *kr = k + (bk * p.kv_len + j) * p.k_stride +
                                  (int64_t)h * d;
                float dot = 0.0f;
                for (int dd = 0; dd < d; dd++) {
                    dot += qs[dd] * kr[dd];
                }
                s[c] = dot * scale;
            }
        }
        max = svp_warp_max(fmaxf(s[0], s[1]));
        for (int c = 0; c < 2; c++) {
            s[c] = (lane + 32 * c < p.kv_len) ? expf(s[c] - max) : 0.0f;
        }
        sum = svp_warp_sum(s[0] + s[1]);
        for (int c = 0; c < 2; c++) {
            if (lane + 32 * c < p.kv_len) {
                ps[lane + 32 * c] = s[c] * (1.0f / sum);
            }
        }
        __syncwarp();
        for (int dd = lane; dd < d; dd += 32) {
            const float *vc = v + bk * p.kv_len * p.v_stride + (int64_t)h * d + dd;
            float        acc = 0.0f;
            for (int j = 0; j < p.kv_len; j++) {
                acc += ps[j] * vc[j * p.v_stride];
            }
            orow[dd] = acc;
        }
        __syncwarp();   /* qs and ps are rewritten for the next row */
    }
}

/* In place on each row of s [rows, len]: one block per row. */
static __global__ void svp_softmax_kernel(int len, float *s)
{
    __shared__ double shared_sum[32];
    __shared__ float  shared_max[32];
    float            *row = s + (int64_t)blockIdx.x * len;
    float             max = -INFINITY, inv;
    double            sum = 0.0;

    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        max = fmaxf(max, row[j]);
    }
    max = svp_cuda_block_max(max, shared_max);
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        float e = expf(row[j] - max);
        row[j] = e;
        sum += e;
    }
    inv = (float)(1.0 / svp_cuda_block_sum(sum, shared_sum));
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        row[j] *= inv;
    }
}

static svp_status_t svp_attention_long(svp_ops_h ops,
                                       const svp_ops_attention_t *p,
                                       float scale, const float *q,
                                       const float *k, const float *v,
                                       float *out)
{
    svp_ops_cuda_t *cu   = svp_ops_cuda(ops);
    const float     one  = 1.0f, zero = 0.0f;
    int             d    = p->head_dim;
    int64_t         chunk;
    float          *scores;
    svp_status_t    status;

    chunk = (int64_t)(ops->attn_max_scores / ((size_t)p->kv_len * p->heads));
    chunk = (chunk < 1) ? 1 : (chunk > p->q_len) ? p->q_len : chunk;
    status = svp_ops_cuda_scratch(ops, (size_t)(chunk * p->kv_len * p->heads),
                                  &scores);
    if (status != SVP_OK) {
        return status;
    }

    for (int64_t bq = 0; bq < p->batch; bq++) {
        int64_t      bk = bq / p->kv_batch_div;
        const float *kb = k + bk * p->kv_len * p->k_stride;
        const float *vb = v + bk * p->kv_len * p->v_stride;

        for (int64_t i0 = 0; i0 < p->q_len; i0 += chunk) {
            int          m  = (int)((p->q_len - i0 < chunk) ? p->q_len - i0 : chunk);
            const float *qc = q + (bq * p->q_len + i0) * p->q_stride;
            float       *oc = out + (bq * p->q_len + i0) * p->out_stride;

            /* per head h (pointer offset h*d), row-major S[m, kv] =
             * scale Q_h K_h^T: column-major S^T = K_h^T' Q_h^T' */
            status = SVP_CUBLAS_FUNC(cublasSgemmStridedBatched(
                         cu->cublas, CUBLAS_OP_T, CUBLAS_OP_N, p->kv_len, m, d,
                         &scale, kb, (int)p->k_stride, d, qc, (int)p->q_stride,
                         d, &zero, scores, p->kv_len, (int64_t)m * p->kv_len,
                         p->heads));
            if (status != SVP_OK) {
                return status;
            }
            svp_softmax_kernel<<<(unsigned)(m * p->heads), SVP_SOFTMAX_BLOCK,
                                 0, cu->stream>>>(p->kv_len, scores);
            status = SVP_CUDA_LAUNCHED();
            if (status != SVP_OK) {
                return status;
            }
            /* O_h[m, d] = P[m, kv] V_h[kv, d]: column-major O^T = V^T P^T */
            status = SVP_CUBLAS_FUNC(cublasSgemmStridedBatched(
                         cu->cublas, CUBLAS_OP_N, CUBLAS_OP_N, d, m, p->kv_len,
                         &one, vb, (int)p->v_stride, d, scores, p->kv_len,
                         (int64_t)m * p->kv_len, &zero, oc, (int)p->out_stride,
                         d, p->heads));
            if (status != SVP_OK) {
                return status;
            }
        }
    }
    return SVP_OK;
}

extern "C" svp_status_t svp_ops_cuda_attention(svp_ops_h ops,
                                               const svp_ops_attention_t *p,
                                               const float *q, const float *k,
                                               const float *v, float *out)
{
    float   scale = 1.0f / sqrtf((float)p->head_dim);
    int64_t total = (int64_t)p->batch * p->heads * p->q_len;
    int64_t blocks;
    size_t  shared;

    if (p->kv_len > SVP_ATTN_SHORT_KV) {
        return svp_attention_long(ops, p, scale, q, k, v, out);
    }
    blocks = (total + SVP_ATTN_WARPS - 1) / SVP_ATTN_WARPS;
    blocks = (blocks < ((int64_t)1 << 20)) ? blocks : ((int64_t)1 << 20);
    shared = SVP_ATTN_WARPS * (p->head_dim + SVP_ATTN_SHORT_KV) * sizeof(float);
    svp_attention_short_kernel<<<(unsigned)blocks, SVP_ATTN_WARPS * 32, shared,
                                 svp_cuda_stream(ops)>>>(*p, scale, q, k, v, out);
    return SVP_CUDA_LAUNCHED();
}
