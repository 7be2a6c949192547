/*
 * The op interface: every tensor operation the models need, behind one
 * backend handle.  The CPU backend (src/ops/cpu/) runs on fp32 host buffers
 * with OpenBLAS for the matrix products and OpenMP for the loops; a CUDA
 * backend implements the same table (src/ops/ops_backend.h) on device buffers.
 *
 * Buffers: every float pointer passed to an op is a buffer of the handle's
 * backend (host memory for "cpu", device memory for "cuda").  Get them with
 * svp_ops_alloc() and move data in and out with svp_ops_upload() and
 * svp_ops_download(); the caller owns them and frees them with svp_ops_free()
 * before destroying the handle.
 *
 * Layouts are C-contiguous.  Images are [N, C, H, W]; video tensors are
 * [B, F, C, H, W] (frame index inside batch index), so "N" of an image op is
 * B*F.  Linear weights are [out, in] as in torch; conv weights are
 * [C_out, C_in, KH, KW] and the temporal conv's [C_out, C_in, 3, 1, 1].
 *
 * Threading: a handle is used by one thread at a time (it owns scratch
 * memory); inside an op the backend uses as many threads as configured.
 * The CPU backend sets the process's OpenMP thread count and runs OpenBLAS
 * single-threaded (see src/ops/cpu/ops_cpu.h).  Its results are bit
 * identical from call to call and across thread counts: every op cuts its
 * work at fixed boundaries and shares the pieces among the threads.  (Two
 * BLAS kernel families, e.g. OpenBLAS's Haswell and SkylakeX, may differ
 * from each other.)  Ranks sharing a node should split its cores (threads or
 * $SVP_THREADS): the ops synchronise threads often, and an oversubscribed
 * core stalls every op (unet_small on 2 busy cores: 0.08 s becomes 1-6 s).
 * Ops return SVP_ERR_INVALID_PARAM for impossible shapes and
 * SVP_ERR_NO_MEMORY when scratch cannot grow; they write nothing else on
 * failure that the caller could mistake for a result.
 */
#ifndef SVP_OPS_OPS_H
#define SVP_OPS_OPS_H

#include "common/status.h"
#include "ops/ops_types.h"
#include "ops/ops_list.h"
#include "tensor/tensor.h"

#include <stddef.h>
#include <stdint.h>

typedef struct svp_ops *svp_ops_h;

typedef struct {
    /*
     * SVP_OPS_BACKEND_CPU (the default: 0) or SVP_OPS_BACKEND_CUDA; or
     * SVP_OPS_BACKEND_DRY, which computes nothing and whose buffers cannot
     * be read or written: a forward run on it makes the arena plan its
     * pass, which is how a model's activations are sized without its
     * weights or a device.
     */
    svp_ops_backend_t backend;
    /*
     * Worker threads; 0: $SVP_THREADS, else $OMP_NUM_THREADS, else the CPUs
     * of the process's affinity mask (svp_threads_default()).
     */
    int threads;
    /*
     * Upper bound on one attention score tile, in elements (0: the
     * default).  Attention is tiled (online softmax): each worker holds one
     * tile of queries x keys, never q_len x kv_len; a smaller bound means
     * smaller key tiles, the same result up to rounding.
     */
    size_t attn_max_scores;
    /*
     * The dtype the matrix weights (of linear, conv2d, conv_frames) are
     * held in: SVP_DTYPE_F32 (the default: 0), SVP_DTYPE_BF16 or
     * SVP_DTYPE_F16 (svp_dtype_is_weight(); another dtype fails
     * svp_ops_create() with SVP_ERR_INVALID_PARAM).  Products, activations,
     * normalisation and softmax statistics stay fp32 whatever it is: the
     * backend widens a 16-bit weight to fp32 just before its product
     * (exactly: every bf16/f16 value is an fp32 value), so a 16-bit handle
     * computes what an fp32 handle computes with the rounded
     * weights, at half the resident weight memory.  That is the CPU
     * backend's contract.  The CUDA backend's products of a 16-bit handle
     * run on tensor cores instead: the weight is used as held and the
     * activation operand is rounded to the same dtype (to nearest even)
     * just before the product, which accumulates in fp32
     * (svp_ops_product_dtype(); doc/DTYPES.md).  A backend that cannot
     * hold weights in it fails svp_ops_create() with SVP_ERR_UNSUPPORTED:
     * never a silent fallback to another dtype.
     */
    svp_dtype_t dtype;
    /*
     * For tests: a CPU handle of a 16-bit dtype rounds the activation
     * operand of linear, conv2d and conv_frames to that dtype too (to
     * nearest even, as the CUDA backend does) before its fp32 product.
     * It computes what the CUDA backend's tensor-core products compute, up
     * to fp32 summation order, so that their error is measured and tested
     * without a GPU.  Ignored for f32 and on other backends.
     */
    int round_activations;
    /*
     * A CPU handle of dtype bf16 runs its products on the CPU's BF16 units
     * (AVX512-BF16: both operands bf16, the activation rounded to nearest
     * even as round_activations rounds it, sums in fp32) wherever the CPU
     * has them: svp_ops_product_dtype() says so.  With this set it keeps
     * the products in f32 on the widened weights, as on a CPU without
     * them (tests and comparisons).
     */
    int f32_products;
} svp_ops_params_t;

/*
 * Creates a backend handle.  params may be NULL (defaults).  On failure
 * nothing is allocated and *ops_p is untouched.
 */
svp_status_t svp_ops_create(const svp_ops_params_t *params, svp_ops_h *ops_p);
void         svp_ops_destroy(svp_ops_h ops);

/* The backend's name, "cpu" or "cuda" (svp_ops_backend_name()). */
const char *svp_ops_backend(svp_ops_h ops);
/* The name of the dtype the handle holds matrix weights in ("f32", "bf16",
 * "f16": svp_dtype_short_name()). */
const char *svp_ops_dtype(svp_ops_h ops);
/* The same as a tensor dtype: SVP_DTYPE_F32, SVP_DTYPE_BF16, SVP_DTYPE_F16. */
svp_dtype_t svp_ops_weights_dtype(svp_ops_h ops);
/*
 * The dtype both operands of the matrix products (linear, conv2d,
 * conv_frames) are rounded to: SVP_DTYPE_F32 (products in fp32 with the
 * weights widened exactly: every f32 handle, and 16-bit ones on the CPU),
 * or the handle's 16-bit dtype (tensor-core products on the CUDA backend,
 * fp32 accumulation; the CPU with round_activations).
 */
svp_dtype_t svp_ops_product_dtype(svp_ops_h ops);
/*
 * Where 16-bit products run, for logs: "tensor cores", "the CPU's
 * AVX512-BF16 units", "fp32 on the CPU (round_activations)"; NULL when the
 * products are f32.
 */
const char *svp_ops_product_units(svp_ops_h ops);
/* The number of worker threads the handle uses. */
int svp_ops_threads(svp_ops_h ops);
/*
 * What this CPU executes, as the kernel choice below weighs it: vendor,
 * family and model as /proc/cpuinfo gives them (CPUID leaves 0 and 1), and
 * the vector features the operating system enables (SVP_OPS_CPUID_*).  Zeros
 * and "" off x86.
 */
enum {
    SVP_OPS_CPUID_AVX      = 1 << 0,
    SVP_OPS_CPUID_AVX2     = 1 << 1,
    SVP_OPS_CPUID_FMA      = 1 << 2,
    SVP_OPS_CPUID_AVX512F  = 1 << 3,
    SVP_OPS_CPUID_AVX512BW = 1 << 4,
    SVP_OPS_CPUID_AVX512VL = 1 << 5,
    SVP_OPS_CPUID_AVX512DQ = 1 << 6
};

typedef struct {
    char     vendor[16]; /* "GenuineIntel", "AuthenticAMD"; "" */
    int      family;     /* 6; 25 for Zen 3 and 4 */
    int      model;      /* 207 (Emerald Rapids), 17 */
    unsigned features;   /* SVP_OPS_CPUID_* */
} svp_ops_cpuid_t;

/* Fills *cpu_p from this CPU. */
void svp_ops_cpuid_probe(svp_ops_cpuid_t *cpu_p);
/* The features in cpu->features, widest first: "avx512f avx512bw ... fma" */
void svp_ops_cpuid_features(const svp_ops_cpuid_t *cpu, char *buf, size_t len);

/*
 * The OpenBLAS kernel family to run instead of `library_choice` (its own
 * pick, "Prescott") on `cpu`, or NULL to keep it.  Pure: a function of the
 * CPU's features and vendor alone, so ranks on identical nodes choose the
 * same family.  Tiers: SSE families < AVX (Sandybridge, the Bulldozer line)
 * < AVX2 and FMA (Haswell, Zen, Excavator) < AVX-512 F, BW, VL and DQ
 * (SkylakeX, Cooperlake, SapphireRapids).  When the library's family sits in
 * a lower tier than the CPU's, the answer is that tier's family: SkylakeX;
 * Zen on AMD and Hygon CPUs, Haswell on others; Sandybridge.  NULL as well
 * for a family this table does not know.
 */
const char *svp_ops_blas_better(const svp_ops_cpuid_t *cpu,
                                const char            *library_choice);

/*
 * The first call in a program's main(), before argv is parsed: where the
 * site set no $OPENBLAS_CORETYPE, OpenBLAS is built for many CPUs
 * (DYNAMIC_ARCH) and its choice for this CPU is weaker than what the CPU
 * executes (svp_ops_blas_better()), sets OPENBLAS_CORETYPE to the better
 * family, with $SVP_OPENBLAS_CHOICE naming it, the library's own choice and
 * this process, and re-executes the program (/proc/self/exe, the same argv):
 * OpenBLAS reads the variable only when it is loaded.  Returns when there is
 * nothing to change, in the re-executed process, or when the exec failed
 * (svp_ops_blas_query() then says why).  A choice inherited from another
 * svdpipe program (a parent on another CPU) is dropped and made afresh.
 */
void svp_ops_blas_choose(char **argv);

/*
 * The CPU backend's BLAS and the kernel family it runs, as the BLAS itself
 * reports them (src/ops/cpu/blas.c), and who chose that family: the site
 * ($OPENBLAS_CORETYPE), svdpipe (svp_ops_blas_choose()) or the BLAS.  A
 * value struct with no ownership.
 */
typedef struct {
    char library[64];    /* "OpenBLAS 0.3.21"; "CBLAS" for one that does not say */
    char kernels[64];    /* openblas_get_corename(): "Haswell", "Cooperlake";
                           "unknown" */
    char forced[64];     /* the site's $OPENBLAS_CORETYPE when set (it chose
                           the family), else "" */
    char ours[64];       /* the family svdpipe set for this CPU, else "" */
    char own[64];        /* the BLAS's own choice for this CPU when svdpipe
                           replaced it, else "" */
    char better[64];     /* the family svdpipe would run where the site's or
                           the BLAS's own is weaker and stays, else "" */
    char note[256];      /* why svdpipe's choice is not in use, else "" */
    char config[256];    /* openblas_get_config(), else "" */
    svp_ops_cpuid_t cpu; /* the CPU the choice was made for */
} svp_ops_blas_t;

/* Fills *blas_p; callable before any handle exists. */
void svp_ops_blas_query(svp_ops_blas_t *blas_p);
/*
 * One line for logs and benchmarks, e.g. "OpenBLAS 0.3.21, Haswell kernels
 * (OPENBLAS_CORETYPE=Haswell)", "..., Cooperlake kernels (its choice for
 * this CPU)" or "..., SkylakeX kernels (svdpipe's choice; OpenBLAS chose
 * Prescott for this CPU (GenuineIntel, family 6, model 207); features:
 * avx512f avx512bw avx512vl avx512dq avx2 fma avx)".
 */
void svp_ops_blas_describe(const svp_ops_blas_t *blas, char *buf, size_t len);
/*
 * The CPU as the line above names it: "GenuineIntel, family 6, model 207;
 * features: avx512f ... avx".
 */
void svp_ops_blas_describe_cpu(const svp_ops_blas_t *blas, char *buf, size_t len);

/*
 * SVP_ERR_UNSUPPORTED, with why in errbuf, when $OPENBLAS_CORETYPE forced
 * a kernel family whose instructions this CPU lacks (x86: SkylakeX without
 * AVX-512, Bulldozer's FMA4 and XOP on a Zen): OpenBLAS would load it and
 * die of SIGILL at the first product.  SVP_OK otherwise, and where the
 * family or the CPU is not known.
 */
svp_status_t svp_ops_blas_check(const svp_ops_blas_t *blas, char *errbuf,
                                int errlen);

/*
 * Where that number came from, a static phrase: "the caller" (params),
 * "SVP_THREADS", "OMP_NUM_THREADS", "the CPU affinity mask" or "the online
 * CPUs" (svp_threads_default()).
 */
const char *svp_ops_threads_from(svp_ops_h ops);

/*
 * Memory of the backend, count fp32 elements.  free(NULL) is a no-op.
 *
 * One memory plan: svp_ops_free() does not give a buffer back to the
 * backend; it returns it to the handle's arena.  Outside a pass (below),
 * svp_ops_alloc() serves a request from a freed buffer of exactly its size
 * before it asks the backend: that is for long-lived buffers (weights,
 * a sample's latents).  The arena is released when the handle is destroyed.
 */
svp_status_t svp_ops_alloc(svp_ops_h ops, size_t count, float **buf_p);
void         svp_ops_free(svp_ops_h ops, float *buf);

/*
 * A pass: one forward of a model at one shape, between svp_ops_pass_begin()
 * and svp_ops_pass_end().  name and dims[ndims] (the model and its shape)
 * name the kind of pass.  The first pass of a kind takes its buffers
 * from the backend one by one, giving each back when it is freed, and
 * records their sizes and lifetimes; at its end the arena places them in
 * one slab (sized for the largest kind so far, shared by every kind: passes
 * do not overlap in time), so that buffers alive together never share a
 * byte.  While a kind is recorded the idle slab is given back, and made
 * again at the end, so the two are never held together.  Every
 * later pass of that kind is served from the slab, in the recorded order,
 * with no backend allocation (cudaMalloc/cudaFree synchronise the device;
 * malloc of large blocks maps fresh pages).  A pass that asks for something
 * else than its plan (another size, another order of frees, a hash
 * collision) is served correctly from outside the slab from that request
 * on, and leaves a new plan for its kind.  A buffer may outlive its pass.
 * Passes nest: only the outermost counts.  Neither call can fail; when the
 * slab cannot be allocated (logged), passes are served buffer by buffer.
 */
void svp_ops_pass_begin(svp_ops_h ops, const char *name, int ndims,
                        const int64_t *dims);
void svp_ops_pass_end(svp_ops_h ops);

typedef struct {
    /* Backend allocations since the handle was created: buffers, slabs and
     * the backend's own workspace growth.  Constant once warmed up. */
    uint64_t backend_allocs;
    /* Bytes the arena holds from the backend (buffers, the slab and
     * workspace). */
    size_t reserved_bytes;
    /* Bytes of buffers handed out now, and the most ever at once. */
    size_t live_bytes;
    size_t peak_live_bytes;
    /* Bytes of the slab (part of reserved_bytes), and the most bytes alive
     * at once in the largest planned pass: what no slab could go below. */
    size_t slab_bytes;
    size_t pass_peak_bytes;
    /* Bytes of the backend's own workspace (im2col, attention tiles; part
     * of reserved_bytes): it depends on the backend and its threads. */
    size_t workspace_bytes;
} svp_ops_mem_stats_t;

void svp_ops_mem_stats(svp_ops_h ops, svp_ops_mem_stats_t *stats);
/* Starts a new peak: peak_live_bytes becomes live_bytes. */
void         svp_ops_mem_reset_peak(svp_ops_h ops);
svp_status_t svp_ops_upload(svp_ops_h ops, float *dst, const float *host_src,
                            size_t count);
svp_status_t svp_ops_download(svp_ops_h ops, float *host_dst, const float *src,
                              size_t count);

/*
 * Matrix weights: the weight operand of svp_ops_linear(), svp_ops_conv2d()
 * and svp_ops_conv_frames() is a buffer of the handle's dtype.  For an f32
 * handle any fp32 buffer of the backend will do; in general make it with
 * svp_ops_weights_upload(), which rounds count fp32 host values to the
 * handle's dtype (to nearest even) into a new backend buffer.  A finite
 * value beyond the dtype's range is SVP_ERR_INVALID_PARAM (the caller
 * names the tensor), never an infinity in the model.  Free the buffer with
 * svp_ops_free().  Uploading also sizes the scratch the products widen
 * into, so a forward allocates nothing for it.
 */
svp_status_t svp_ops_weights_upload(svp_ops_h ops, const float *host_src,
                                    size_t count, void **buf_p);

/*
 * The same for count values already in the handle's 16-bit dtype (bf16 or
 * f16 bits, as read from a file of that dtype): copied as they are, no
 * rounding.  SVP_ERR_INVALID_PARAM for an f32 handle.
 */
svp_status_t svp_ops_weights_upload_bits(svp_ops_h ops, const uint16_t *bits,
                                         size_t count, void **buf_p);

/*
 * Matrix weights already in host memory in the handle's dtype (a mapped
 * checkpoint): used in place, no copy, by a backend whose buffers are host
 * memory (cpu); SVP_ERR_UNSUPPORTED, nothing logged, by any other (upload
 * them instead).  host must be aligned to the dtype's size, stay valid and
 * unchanged while the handle uses it, and is never freed by ops (do not
 * pass *buf_p to svp_ops_free()).
 */
svp_status_t svp_ops_weights_borrow(svp_ops_h ops, const void *host, size_t count,
                                    void **buf_p);

/* Bytes of matrix weights uploaded so far (as held, in the handle's dtype). */
size_t svp_ops_weights_bytes(svp_ops_h ops);

/* ---- the ops' descriptors ---- */

typedef struct {
    int n, c_in, h, w; /* input [n, c_in, h, w] */
    int c_out, kh, kw; /* weight [c_out, c_in, kh, kw] */
    int stride, pad;   /* same on both axes, zero padding */
} svp_ops_conv2d_t;

/* Output height/width of a conv2d descriptor. */
static inline int svp_ops_conv2d_out_h(const svp_ops_conv2d_t *p)
{
    return (p->h + 2 * p->pad - p->kh) / p->stride + 1;
}
static inline int svp_ops_conv2d_out_w(const svp_ops_conv2d_t *p)
{
    return (p->w + 2 * p->pad - p->kw) / p->stride + 1;
}

/* GroupNorm (svp_ops_group_norm) */
typedef struct {
    int     n;       /* independent items (statistics never cross them) */
    int     frames;  /* frames per item that share statistics (1: per image) */
    int     c;       /* channels */
    int64_t spatial; /* elements per channel per frame (H*W) */
    int     groups;  /* c % groups == 0 */
    float   eps;
    int     silu; /* apply SiLU to the normalised, affine output */
} svp_ops_group_norm_t;

/* Multi-head attention (svp_ops_attention) */
typedef struct {
    int batch; /* query batches */
    int heads;
    int head_dim; /* scale is 1/sqrt(head_dim) */
    int q_len, kv_len;
    /*
     * Query batch i attends to key/value batch i / kv_batch_div, so a
     * context shared by F frames (or by H*W positions) is stored once.
     */
    int kv_batch_div;
    /* Row strides, in elements, of q, k, v and out (>= heads*head_dim). */
    int64_t q_stride, k_stride, v_stride, out_stride;
} svp_ops_attention_t;

/*
 * ---- the ops ----
 *
 * One function per row of SVP_OPS_MODEL_LIST (ops/ops_list.h), where each
 * is documented: svp_ops_<name>(ops, the row's parameters), returning
 * svp_status_t.  The weight of linear, conv2d and conv_frames is a buffer
 * of the handle's dtype (above).
 */
SVP_OPS_MODEL_LIST(SVP_OPS_DECLARE, const void *)

#endif
