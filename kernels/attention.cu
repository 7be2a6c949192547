/*
 * Multi-head attention, two paths with the CPU backend's split
 * (src/ops/cpu/attention.c):
 *
 * - short keys (SVD's temporal attention over F <= 25 frames, and its
 *   one-token cross-attention): millions of tiny problems, one warp per
 *   (batch, head, query) row with its scores in registers and shared memory;
 * - long keys (spatial self-attention): a fused, tiled kernel with an
 *   online softmax (below); no score buffer outside one tile.
 *
 * out may be q: a row's head slice is read before it is written, by the
 * same warp (short) or the same thread (long).
 */
#include "kernels.cuh"
#include "ops/ops_math.h"
extern "C" {
#include "common/log.h"
}

#include <math.h>

/* Keys up to this length take the warp path: two scores per lane. */
#define SVP_ATTN_SHORT_KV 64
#define SVP_ATTN_WARPS    4

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

static __global__ void svp_attention_short_kernel(svp_ops_attention_t p, float scale,
                                                  const float *q, const float *k,
                                                  const float *v, float *out)
{
    extern __shared__ float shared[];
    int                     lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int                     d     = p.head_dim;
    float                  *qs    = shared + warp * (d + SVP_ATTN_SHORT_KV);
    float                  *ps    = qs + d;
    int64_t                 total = (int64_t)p.batch * p.heads * p.q_len;

    for (int64_t row = (int64_t)blockIdx.x * SVP_ATTN_WARPS + warp; row < total;
         row += (int64_t)gridDim.x * SVP_ATTN_WARPS) {
        int64_t      bq   = row / ((int64_t)p.heads * p.q_len);
        int          h    = (int)((row / p.q_len) % p.heads);
        int64_t      i    = row % p.q_len;
        int64_t      bk   = bq / p.kv_batch_div;
        const float *qr   = q + (bq * p.q_len + i) * p.q_stride + (int64_t)h * d;
        float       *orow = out + (bq * p.q_len + i) * p.out_stride + (int64_t)h * d;
        float        s[2] = {-INFINITY, -INFINITY};
        float        max, sum;

        for (int dd = lane; dd < d; dd += 32) {
            qs[dd] = qr[dd];
        }
        __syncwarp();
        for (int c = 0; c < 2; c++) {
            int j = lane + 32 * c;
            if (j < p.kv_len) {
                const float *kr =
                    k + (bk * p.kv_len + j) * p.k_stride + (int64_t)h * d;
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
            const float *vc  = v + bk * p.kv_len * p.v_stride + (int64_t)h * d + dd;
            float        acc = 0.0f;
            for (int j = 0; j < p.kv_len; j++) {
                acc += ps[j] * vc[j * p.v_stride];
            }
            orow[dd] = acc;
        }
        __syncwarp(); /* qs and ps are rewritten for the next row */
    }
}

/*
 * Long keys, flash style: a block of SVP_FLASH_ROWS threads takes
 * SVP_FLASH_ROWS query rows of one (batch, head), one row per thread; key
 * and value tiles of SVP_FLASH_KV rows are staged in shared memory and each
 * thread folds its tile's scores into its row with the online-softmax
 * update of src/ops/ops_math.h (the CPU backend's arithmetic, tested there
 * on every build).  Memory is one K and one V tile per block and one score
 * tile per thread, whatever q_len and kv_len are.
 */
#define SVP_FLASH_ROWS  64
#define SVP_FLASH_KV    32
#define SVP_FLASH_MAX_D 128

static __global__ void __launch_bounds__(SVP_FLASH_ROWS)
    svp_attention_flash_kernel(svp_ops_attention_t p, float scale, const float *q,
                               const float *k, const float *v, float *out)
{
    __shared__ float ks[SVP_FLASH_KV * SVP_FLASH_MAX_D];
    __shared__ float vs[SVP_FLASH_KV * SVP_FLASH_MAX_D];
    int              d     = p.head_dim;
    int64_t          n_qt  = (p.q_len + SVP_FLASH_ROWS - 1) / SVP_FLASH_ROWS;
    int64_t          items = (int64_t)p.batch * p.heads * n_qt;

    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        int64_t      bq   = item / ((int64_t)p.heads * n_qt);
        int          h    = (int)((item / n_qt) % p.heads);
        int64_t      i    = (item % n_qt) * SVP_FLASH_ROWS + threadIdx.x;
        int64_t      bk   = bq / p.kv_batch_div;
        bool         live = i < p.q_len;
        const float *kh   = k + bk * p.kv_len * p.k_stride + (int64_t)h * d;
        const float *vh   = v + bk * p.kv_len * p.v_stride + (int64_t)h * d;
        float        qr[SVP_FLASH_MAX_D], o[SVP_FLASH_MAX_D], s[SVP_FLASH_KV];
        float        m = -INFINITY, l = 0.0f;

        if (live) {
            const float *qrow = q + (bq * p.q_len + i) * p.q_stride + (int64_t)h * d;
            for (int dd = 0; dd < d; dd++) {
                qr[dd] = qrow[dd];
                o[dd]  = 0.0f;
            }
        }
        for (int64_t j0 = 0; j0 < p.kv_len; j0 += SVP_FLASH_KV) {
            int n =
                (int)((p.kv_len - j0 < SVP_FLASH_KV) ? p.kv_len - j0 : SVP_FLASH_KV);

            __syncthreads(); /* the previous tile is consumed */
            for (int e = threadIdx.x; e < n * d; e += blockDim.x) {
                int jj = e / d, dd = e % d;

                ks[e] = kh[(j0 + jj) * p.k_stride + dd];
                vs[e] = vh[(j0 + jj) * p.v_stride + dd];
            }
            __syncthreads();
            if (live) {
                float corr;

                for (int jj = 0; jj < n; jj++) {
                    float dot = 0.0f;

                    for (int dd = 0; dd < d; dd++) {
                        dot += qr[dd] * ks[jj * d + dd];
                    }
                    s[jj] = dot * scale;
                }
                corr = svp_math_attn_tile_row(s, n, &m, &l);
                svp_math_attn_acc_row(o, d, corr, s, n, vs, d);
            }
        }
        if (live) {
            /* the row's q slice was copied to qr: out may alias q */
            float *orow = out + (bq * p.q_len + i) * p.out_stride + (int64_t)h * d;
            float  inv  = svp_math_attn_finish_row(l);

            for (int dd = 0; dd < d; dd++) {
                orow[dd] = o[dd] * inv;
            }
        }
    }
}

static svp_status_t svp_attention_long(svp_ops_h ops, const svp_ops_attention_t *p,
                                       float scale, const float *q, const float *k,
                                       const float *v, float *out)
{
    int64_t n_qt   = (p->q_len + SVP_FLASH_ROWS - 1) / SVP_FLASH_ROWS;
    int64_t items  = (int64_t)p->batch * p->heads * n_qt;
    int64_t blocks = (items < ((int64_t)1 << 20)) ? items : ((int64_t)1 << 20);

    if (p->head_dim > SVP_FLASH_MAX_D) {
        svp_error("cuda attention: head_dim %d is above the fused kernel's "
                  "%d",
                  p->head_dim, SVP_FLASH_MAX_D);
        return SVP_ERR_UNSUPPORTED;
    }
    svp_attention_flash_kernel<<<(unsigned)blocks, SVP_FLASH_ROWS, 0,
                                 svp_cuda_stream(ops)>>>(*p, scale, q, k, v, out);
    return SVP_CUDA_LAUNCHED();
}

extern "C" svp_status_t svp_ops_cuda_attention(svp_ops_h                  ops,
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
