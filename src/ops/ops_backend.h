/*
 * What a backend implements: the table behind svp_ops_h.  Only ops.c,
 * ops_arena.c and the backends include this.  ops.c checks arguments before
 * dispatching, so a backend may assume shapes are positive and consistent.
 *
 * A backend's init fills ops->vt and ops->impl; ops->vt->cleanup releases
 * what init allocated.  Besides memory, the entries are the ops of
 * ops_list.h, one slot each, generated with their types from the list.
 */
#ifndef SVP_OPS_OPS_BACKEND_H
#define SVP_OPS_OPS_BACKEND_H

#include "ops/ops.h"
#include "tensor/tensor.h"
#include "noise/sched_math.h"
#include "ops/ops_arena.h"
#include "ops/ops_plan.h"
#include "ops/ops_list.h"

/*
 * The function type of each op as a backend implements it,
 * svp_ops_<name>_fn_t: the row's parameters after the handle, the weight of
 * a product as the backend's operand (const float *).  A backend declares
 * its kernels with them (svp_ops_conv2d_fn_t svp_ops_cpu_conv2d;), so that
 * their parameter lists are written in the list and at the definitions
 * only.
 */
#define SVP_OPS_FN_TYPE_(_name, _out, _flops, _checks, ...) \
    typedef svp_status_t svp_ops_##_name##_fn_t(SVP_OPS_PARAMS(__VA_ARGS__));
SVP_OPS_LIST(SVP_OPS_FN_TYPE_, const float *)

#define SVP_OPS_SLOT_(_name, _out, _flops, _checks, ...) \
    svp_ops_##_name##_fn_t *_name;

typedef struct svp_ops_ops {
    svp_ops_backend_t backend;     /* which backend (ops_types.h) this is */
    int               host_memory; /* buffers are plain host memory */
    /*
     * The products of a 16-bit handle take 16-bit operands: conv2d,
     * conv_frames and linear get the weight as held (bf16/f16 bits in the
     * buffer passed as weight, never widened) and round the activation to
     * the handle's dtype themselves (ops->product_dtype).  0: they get fp32
     * weights and activations.
     */
    int products16;
    void (*cleanup)(svp_ops_h ops);

    svp_status_t (*alloc)(svp_ops_h ops, size_t count, float **buf_p);
    void (*free)(svp_ops_h ops, float *buf);
    svp_status_t (*upload)(svp_ops_h ops, float *dst, const float *src,
                           size_t count);
    svp_status_t (*download)(svp_ops_h ops, float *dst, const float *src,
                             size_t count);

    /* one slot per op of the list (ops_list.h), in its order */
    SVP_OPS_LIST(SVP_OPS_SLOT_, const float *)
} svp_ops_ops_t;

struct svp_ops {
    const svp_ops_ops_t *vt;
    void                *impl; /* the backend's own state */
    int                  threads;
    const char          *threads_from; /* static: where threads came from */
    size_t               attn_max_scores;
    int                  device;       /* device backends: which one */
    svp_dtype_t          weight_dtype; /* F32, F16 or BF16 */

    /* Matrix weights (ops_weights.c): bytes uploaded, and the fp32 buffer
     * a 16-bit weight is widened into before its product, sized by the
     * largest weight uploaded. */
    size_t weight_bytes;
    float *widen_buf;
    size_t widen_count;
    /* The dtype the products' operands are rounded to (ops.h), and the
     * buffer the CPU rounds activations into when that is 16-bit
     * (round_activations), sized by the largest operand so far. */
    svp_dtype_t product_dtype;
    /* A host backend whose products take the 16-bit operands themselves
     * on this CPU (the CPU backend on BF16 units, src/ops/cpu/bf16.c): as
     * products16, for this handle. */
    int    native16;
    float *round_buf;
    size_t round_count;

    /* The arena (ops_arena.c).  A backend that grows its own workspace counts
     * that in mem.backend_allocs and mem.reserved_bytes too. */
    svp_ops_arena_t     arena;
    svp_ops_mem_stats_t mem;
};

/* The CPU backend (src/ops/cpu/); whether its bf16 products run on the
 * CPU's BF16 units (bf16.c). */
svp_status_t svp_ops_cpu_init(svp_ops_h ops);
int          svp_ops_cpu_has_bf16(void);
/* The dry backend (src/ops/ops_dry.c): no data, no work; for planning. */
svp_status_t svp_ops_dry_init(svp_ops_h ops);
/* The CUDA backend (src/ops/cuda/, kernels/), in builds with HAVE_CUDA. */
svp_status_t svp_ops_cuda_init(svp_ops_h ops);

/*
 * For the public ops' argument checks (ops.c, ops_sched.c): logs the failed
 * condition under the op's name and returns SVP_ERR_INVALID_PARAM.  The
 * file using it includes common/log.h.
 */
#define SVP_OPS_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            svp_error("%s: invalid arguments (%s)", __func__, #_cond); \
            return SVP_ERR_INVALID_PARAM; \
        } \
    } while (0)

/*
 * The public function of a row of the list (ops_list.h), for the files that
 * define them (ops.c, ops_sched.c): the row's checks, which may replace a
 * product's operands (SVP_OPS_OPERANDS, ops_weights.h), then the backend's
 * slot.  __func__ is the public name, so a failed check names the op.
 */
#define SVP_OPS_DISPATCH(_name, _out, _flops, _checks, ...) \
    svp_status_t svp_ops_##_name(SVP_OPS_PARAMS(__VA_ARGS__)) \
    { \
        SVP_OPS_STMTS(_checks) \
        return ops->vt->_name(SVP_OPS_ARGS(__VA_ARGS__)); \
    }

#endif
