/*
 * The operand of the temporal conv's gemm (src/ops/cuda/ops_cuda.c): for
 * each output frame, frames t-1, t, t+1 of every input channel stacked in
 * torch's weight order [c_in, 3], zero outside the clip.
 */
#include "kernels.cuh"
#include "ops/ops_math.h"

/* e indexes col [count, c_in * 3, hw] for the frames bt0 .. bt0+count-1. */
static __global__ void svp_frames_col_kernel(int f, int c_in, int64_t hw, int bt0,
                                             int count, const float *x, float *col)
{
    int64_t rows = 3 * (int64_t)c_in;

    SVP_CUDA_FOR(e, count * rows * hw)
    {
        int64_t src = svp_math_frames_col_src(e, f, c_in, hw, bt0);

        col[e] = (src >= 0) ? x[src] : 0.0f;
    }
}

extern "C" svp_status_t svp_ops_cuda_frames_col(svp_ops_h ops, int f, int c_in,
                                                int64_t hw, int bt0, int count,
                                                const float *x, float *col)
{
    svp_frames_col_kernel<<<svp_cuda_grid((int64_t)count * 3 * c_in * hw),
                            SVP_CUDA_BLOCK, 0, svp_cuda_stream(ops)>>>(f, c_in, hw,
                                                                       bt0, count, x,
                                                                       col);
    return SVP_CUDA_LAUNCHED();
}
