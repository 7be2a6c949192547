/*
 * The ops, one list: every op a backend implements is named here once,
 * with its parameters (type and name), what it computes, the argument
 * checks its public function makes, the output the profile waits for and
 * its FLOPs.  Everything else is generated from it: the public functions
 * (ops.h, ops_sched.h) and their dispatch (ops.c, ops_sched.c), the
 * backend table's slots and the function type of each (ops_backend.h),
 * the CPU and CUDA backends' declarations and tables (cpu/ops_cpu.h,
 * cuda/ops_cuda.h), the dry backend (ops_dry.c) and the profile's timing
 * wrappers (ops_profile.c).  Adding an op is a row here, its math
 * (ops_math.h where a kernel shares it) and one kernel per backend,
 * svp_ops_cpu_<name> and svp_ops_cuda_<name>; a new row changes the
 * backend table's layout, so it bumps SVP_OPS_MODULE_ABI (ops_module.h).
 *
 * A row is
 *
 *     _X(name, out, flops, (checks), (type, name), (type, name), ...)
 *
 * name:   the op: svp_ops_<name>() in public, the slot <name> of the table,
 *         the kind "<name>" in a profile.
 * out:    the parameter holding the result, which the profile waits for
 *         on an asynchronous backend.
 * flops:  an expression of the parameters: the op's FLOPs in the profile
 *         (2 per multiply-add; 0 for ops that move memory).
 * checks: statements the public function runs before it dispatches, with
 *         the parameters in scope: SVP_OPS_CHECK(cond) (ops_backend.h) for
 *         shapes, so that a backend may assume them positive and
 *         consistent, and for the matrix products
 *         SVP_OPS_OPERANDS(weight elements, x elements) (ops_weights.h),
 *         which replaces weight and x by the operands the backend takes.
 *         Empty for ops with no public function of their own.
 * params: up to 10 (type, name) pairs after the handle, which every op
 *         takes first as `svp_ops_h ops`.  Buffers are the handle's (ops.h).
 *
 * Each table takes _W, the type of a matrix product's weight operand: a
 * buffer of the handle's dtype in public (`const void *`), the fp32 (or,
 * for a backend with 16-bit products, as held) operand a backend receives
 * (`const float *`).
 *
 * The rows are in three tables by where their public function is: the
 * model's ops (ops.h), the scheduler's (ops_sched.h), and two a backend
 * implements that have no public function of their own (the widening of
 * 16-bit weights, ops_weights.c, and the guidance of one frame, called per
 * frame by svp_ops_sched_guidance()).  SVP_OPS_LIST is all of them, in the
 * order of the backend table's slots.
 */
#ifndef SVP_OPS_OPS_LIST_H
#define SVP_OPS_OPS_LIST_H

#define SVP_OPS_MODEL_LIST(_X, _W) \
    /* ---- convolutions ---- */ \
    /* y[n, c_out, ho, wo] = conv(x) + bias; bias may be NULL. */ \
    _X(conv2d, y, \
       2.0 * p->n * p->c_out * svp_ops_conv2d_out_h(p) * svp_ops_conv2d_out_w(p) * \
           p->c_in * p->kh * p->kw, \
       (SVP_OPS_CHECK(p->n > 0 && p->c_in > 0 && p->h > 0 && p->w > 0); \
        SVP_OPS_CHECK(p->c_out > 0 && p->kh > 0 && p->kw > 0); \
        SVP_OPS_CHECK(p->stride > 0 && p->pad >= 0); \
        SVP_OPS_CHECK(svp_ops_conv2d_out_h(p) > 0 && svp_ops_conv2d_out_w(p) > 0); \
        SVP_OPS_OPERANDS((size_t)p->c_out * p->c_in * p->kh * p->kw, \
                         (size_t)p->n * p->c_in * p->h * p->w)), \
       (const svp_ops_conv2d_t *, p), (const float *, x), (_W, weight), \
       (const float *, bias), (float *, y)) \
    /* \
     * Conv3d with kernel (3,1,1), stride 1, padding (1,0,0) over the \
     * frames of x [b, f, c_in, hw]: y[b, t, o] = bias[o] + sum_k \
     * W[o, :, k] . x[b, t+k-1] with zero frames outside [0, f).  weight \
     * [c_out, c_in, 3] (the trailing 1x1 of torch's [c_out, c_in, 3, 1, 1] \
     * is implicit).  y [b, f, c_out, hw].  Kernel 3 over frames, padding \
     * 1: every output sums 3 frames. \
     */ \
    _X(conv_frames, y, 2.0 * b * f * c_out * (double)hw * c_in * 3, \
       (SVP_OPS_CHECK(b > 0 && f > 0 && c_in > 0 && c_out > 0 && hw > 0); \
        SVP_OPS_CHECK(x != y); \
        SVP_OPS_OPERANDS((size_t)c_out * c_in * 3, (size_t)b * f * c_in * hw)), \
       (int, b), (int, f), (int, c_in), (int, c_out), (int64_t, hw), \
       (const float *, x), (_W, weight), (const float *, bias), (float *, y)) \
    /* ---- normalisation ---- */ \
    /* \
     * GroupNorm of x [n, frames, c, spatial]: mean and biased variance per \
     * (item, group) over frames x c/groups x spatial, then the per-channel \
     * affine gamma/beta [c].  frames = 1 is torch's GroupNorm on \
     * [N, C, H, W]; frames = F is GroupNorm on the [B, C, F, H, W] view of \
     * a video tensor (SVD's temporal blocks).  y may alias x. \
     */ \
    _X(group_norm, y, 0, \
       (SVP_OPS_CHECK(p->n > 0 && p->frames > 0 && p->c > 0 && p->spatial > 0); \
        SVP_OPS_CHECK(p->groups > 0 && p->c % p->groups == 0 && p->eps > 0)), \
       (const svp_ops_group_norm_t *, p), (const float *, x), \
       (const float *, gamma), (const float *, beta), (float *, y)) \
    /* LayerNorm over the last axis of x [rows, dim]; y may alias x. */ \
    _X(layer_norm, y, 0, (SVP_OPS_CHECK(rows > 0 && dim > 0 && eps > 0)), \
       (int64_t, rows), (int, dim), (float, eps), (const float *, x), \
       (const float *, gamma), (const float *, beta), (float *, y)) \
    /* ---- matrix products ---- */ \
    /* \
     * y[rows, out] = x[rows, in] . weight[out, in]^T + bias (bias may be \
     * NULL).  With accumulate set, the product is added to y instead (bias \
     * too). \
     */ \
    _X(linear, y, 2.0 * rows * in * out, \
       (SVP_OPS_CHECK(rows > 0 && in > 0 && out > 0 && x != y); \
        SVP_OPS_OPERANDS((size_t)in * out, (size_t)rows * in)), \
       (int64_t, rows), (int, in), (int, out), (const float *, x), (_W, weight), \
       (const float *, bias), (int, accumulate), (float *, y)) \
    /* \
     * Multi-head attention softmax(q k^T / sqrt(d)) v, head h taking \
     * channels [h*d, (h+1)*d) of each row.  q [batch, q_len, *], k and v \
     * [batch / kv_batch_div, kv_len, *], out [batch, q_len, *].  The \
     * softmax is fp32 and online over key tiles; scores held at once are \
     * one tile per worker.  out may be q itself (same strides): a query's \
     * output replaces only its own head slice, after that slice has been \
     * read.  FLOPs: QK^T and AV. \
     */ \
    _X(attention, out, \
       4.0 * p->batch * p->heads * (double)p->q_len * p->kv_len * p->head_dim, \
       (int64_t width = (int64_t)p->heads * p->head_dim; \
        SVP_OPS_CHECK(p->batch > 0 && p->heads > 0 && p->head_dim > 0); \
        SVP_OPS_CHECK(p->q_len > 0 && p->kv_len > 0); \
        SVP_OPS_CHECK(p->kv_batch_div > 0 && p->batch % p->kv_batch_div == 0); \
        SVP_OPS_CHECK(p->q_stride >= width && p->k_stride >= width && \
                      p->v_stride >= width && p->out_stride >= width)), \
       (const svp_ops_attention_t *, p), (const float *, q), (const float *, k), \
       (const float *, v), (float *, out)) \
    /* ---- activations and elementwise ---- */ \
    /* y[rows, inner] = x[:, :inner] * gelu_erf(x[:, inner:]), \
     * x [rows, 2*inner]. */ \
    _X(geglu, y, 0, (SVP_OPS_CHECK(rows > 0 && inner > 0 && x != y)), \
       (int64_t, rows), (int, inner), (const float *, x), (float *, y)) \
    /* Exact (erf) GELU, y may alias x. */ \
    _X(gelu, y, 0, (SVP_OPS_CHECK(n > 0)), (int64_t, n), (const float *, x), \
       (float *, y)) \
    /* x * sigmoid(x), y may alias x. */ \
    _X(silu, y, 0, (SVP_OPS_CHECK(n > 0)), (int64_t, n), (const float *, x), \
       (float *, y)) \
    /* y = a + b; y may alias a or b. */ \
    _X(add, y, 0, (SVP_OPS_CHECK(n > 0)), (int64_t, n), (const float *, a), \
       (const float *, b), (float *, y)) \
    /* x[o, m, i] += v[o, i] for x [outer, mid, inner] (a bias broadcast \
     * over m). */ \
    _X(add_broadcast, x, 0, (SVP_OPS_CHECK(outer > 0 && mid > 0 && inner > 0)), \
       (int64_t, outer), (int64_t, mid), (int64_t, inner), (float *, x), \
       (const float *, v)) \
    /* \
     * Learned blend: y = alpha * spatial + (1 - alpha) * temporal, alpha a \
     * host scalar (sigmoid of the mix factor, chosen by the caller).  y may \
     * alias either input. \
     */ \
    _X(blend, y, 0, (SVP_OPS_CHECK(n > 0)), (int64_t, n), (float, alpha), \
       (const float *, spatial), (const float *, temporal), (float *, y)) \
    /* \
     * Sinusoidal embedding of t [n] into y [n, dim] (dim even), computed in \
     * fp32 like diffusers' Timesteps(dim, flip_sin_to_cos=True, shift=0): \
     * w_i = exp(-ln(10000) * i / (dim/2)), y = [cos(t w), sin(t w)], cos \
     * first. \
     */ \
    _X(timestep_embedding, y, 0, (SVP_OPS_CHECK(n > 0 && dim > 0 && dim % 2 == 0)), \
       (int, n), (int, dim), (const float *, t), (float *, y)) \
    /* \
     * Nearest resize of x [n, c, h, w] to y [n, c, ho, wo] with \
     * src = floor(dst * in / out) on each axis (x2 when ho = 2h, wo = 2w). \
     */ \
    _X(upsample_nearest, y, 0, \
       (SVP_OPS_CHECK(n > 0 && c > 0 && h > 0 && w > 0 && ho > 0 && wo > 0); \
        SVP_OPS_CHECK(x != y)), \
       (int, n), (int, c), (int, h), (int, w), (int, ho), (int, wo), \
       (const float *, x), (float *, y)) \
    /* ---- data movement ---- */ \
    /* y[a, s, r, i] = x[a, r, s, i]: swaps the two middle axes. */ \
    _X(transpose, y, 0, \
       (SVP_OPS_CHECK(a > 0 && r > 0 && s > 0 && inner > 0 && x != y)), \
       (int64_t, a), (int64_t, r), (int64_t, s), (int64_t, inner), \
       (const float *, x), (float *, y)) \
    /* y[n, ca + cb, inner] = concat(a[n, ca, inner], b[n, cb, inner]) on \
     * axis 1. */ \
    _X(concat, y, 0, \
       (SVP_OPS_CHECK(n > 0 && ca > 0 && cb > 0 && inner > 0); \
        SVP_OPS_CHECK(y != a && y != b)), \
       (int64_t, n), (int64_t, ca), (int64_t, cb), (int64_t, inner), \
       (const float *, a), (const float *, b), (float *, y)) \
    /* y = x (buffers of this backend, no overlap). */ \
    _X(copy, y, 0, (SVP_OPS_CHECK(n > 0)), (int64_t, n), (const float *, x), \
       (float *, y))

/*
 * The scheduler's per-step arithmetic (ops_sched.h): both backends evaluate
 * sched_math.h's functions, so they give the CPU scheduler's bits.  Every
 * output may alias an input of the same index; coef is host memory.
 */
#define SVP_OPS_SCHED_LIST(_X, _W) \
    /* y = x / c_in (svp_sched_scale_model_input), n elements. */ \
    _X(sched_scale, y, 0, (SVP_OPS_CHECK(n > 0 && x != NULL && y != NULL)), \
       (int64_t, n), (float, c_in), (const float *, x), (float *, y)) \
    /* y = one Euler step of x along v (svp_sched_step, coef from \
     * svp_sched_euler_coef), n elements. */ \
    _X(sched_euler, y, 0, \
       (SVP_OPS_CHECK(n > 0 && coef != NULL && v != NULL && x != NULL && \
                      y != NULL)), \
       (int64_t, n), (const svp_sched_euler_coef_t *, coef), (const float *, v), \
       (const float *, x), (float *, y))

/*
 * Ops a backend implements that have no public function of their own.
 */
#define SVP_OPS_INNER_LIST(_X, _W) \
    /* \
     * out = uncond + g (cond - uncond), n elements: one frame's guidance \
     * with its scale g (svp_ops_sched_guidance() calls it per frame). \
     */ \
    _X(sched_guidance, out, 0, (), (int64_t, n), (float, g), \
       (const float *, uncond), (const float *, cond), (float *, out)) \
    /* \
     * Widens count 16-bit weights (SVP_DTYPE_BF16 or SVP_DTYPE_F16) of a \
     * backend buffer into the fp32 backend buffer dst, exactly \
     * (ops_weights.c, before a product).  Optional: a backend whose slot \
     * is NULL holds fp32 weights only, and svp_ops_create() refuses a \
     * 16-bit dtype for it. \
     */ \
    _X(widen, dst, 0, (), (svp_dtype_t, dtype), (const void *, src), \
       (size_t, count), (float *, dst))

#define SVP_OPS_LIST(_X, _W) \
    SVP_OPS_MODEL_LIST(_X, _W) \
    SVP_OPS_SCHED_LIST(_X, _W) \
    SVP_OPS_INNER_LIST(_X, _W)

/*
 * What the generators make of a row's parameters: SVP_OPS_PARAMS(pairs)
 * is the parameter list "svp_ops_h ops, type name, ...", SVP_OPS_ARGS(pairs)
 * the arguments "ops, name, ..." passing them on, SVP_OPS_STMTS((checks))
 * the checks' statements.
 */
#define SVP_OPS_PARAMS(...)    svp_ops_h ops, SVP_OPS_MAP_(SVP_OPS_PARAM_, __VA_ARGS__)
#define SVP_OPS_ARGS(...)      ops, SVP_OPS_MAP_(SVP_OPS_ARG_, __VA_ARGS__)
#define SVP_OPS_STMTS(_checks) SVP_OPS_STMTS_ _checks

/* The declaration of a row's public function (ops.h, ops_sched.h). */
#define SVP_OPS_DECLARE(_name, _out, _flops, _checks, ...) \
    svp_status_t svp_ops_##_name(SVP_OPS_PARAMS(__VA_ARGS__));

#define SVP_OPS_PARAM_(_type, _name) _type _name
#define SVP_OPS_ARG_(_type, _name)   _name
#define SVP_OPS_STMTS_(...)          __VA_ARGS__;

/* _m applied to each of up to 10 pairs, comma-separated. */
#define SVP_OPS_MAP_(_m, ...) \
    SVP_OPS_CAT_(SVP_OPS_MAP_, SVP_OPS_COUNT_(__VA_ARGS__))(_m, __VA_ARGS__)
#define SVP_OPS_COUNT_(...) \
    SVP_OPS_COUNT_AT_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define SVP_OPS_COUNT_AT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _n, ...) _n
#define SVP_OPS_CAT_(_a, _b)                                                SVP_OPS_CAT2_(_a, _b)
#define SVP_OPS_CAT2_(_a, _b)                                               _a##_b
#define SVP_OPS_MAP_1(_m, _p)                                               _m _p
#define SVP_OPS_MAP_2(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_1(_m, __VA_ARGS__)
#define SVP_OPS_MAP_3(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_2(_m, __VA_ARGS__)
#define SVP_OPS_MAP_4(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_3(_m, __VA_ARGS__)
#define SVP_OPS_MAP_5(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_4(_m, __VA_ARGS__)
#define SVP_OPS_MAP_6(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_5(_m, __VA_ARGS__)
#define SVP_OPS_MAP_7(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_6(_m, __VA_ARGS__)
#define SVP_OPS_MAP_8(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_7(_m, __VA_ARGS__)
#define SVP_OPS_MAP_9(_m, _p, ...)                                          _m _p, SVP_OPS_MAP_8(_m, __VA_ARGS__)
#define SVP_OPS_MAP_10(_m, _p, ...)                                         _m _p, SVP_OPS_MAP_9(_m, __VA_ARGS__)

#endif
