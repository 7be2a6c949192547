/*
 * Matrix weights in the handle's dtype: what ops.c needs of ops_weights.c.
 * Only ops.c and ops_weights.c include this.
 */
#ifndef SVP_OPS_OPS_WEIGHTS_H
#define SVP_OPS_OPS_WEIGHTS_H

#include "ops/ops_backend.h"

/*
 * The weight operand the backend's product takes: weight itself for an f32
 * handle or a backend whose products take 16-bit weights (products16),
 * else its fp32 values in the widening buffer, valid until the next call.
 */
svp_status_t svp_ops_weights_f32(svp_ops_h ops, const void *weight, size_t count,
                                 const float **w_p);

/*
 * The activation operand of count elements the backend's product takes:
 * x itself, or, on a host-memory backend whose product dtype is 16-bit
 * (round_activations), x rounded to it and widened back in a buffer valid
 * until the next call.
 */
svp_status_t svp_ops_weights_operand(svp_ops_h ops, const float *x, size_t count,
                                     const float **x_p);

/*
 * Both operands of a product as its backend takes them: *weight_p replaced
 * by svp_ops_weights_f32() of it, then *x_p by svp_ops_weights_operand().
 * Nothing is replaced on failure.
 */
svp_status_t svp_ops_weights_operands(svp_ops_h ops, const void **weight_p,
                                      size_t weight_count, const float **x_p,
                                      size_t x_count);

/*
 * A product's check in the list of ops (ops_list.h): its public function
 * passes weight and x on as the backend's operands of weight_count and
 * x_count elements, or returns the failure.
 */
#define SVP_OPS_OPERANDS(_weight_count, _x_count) \
    SVP_TRY(svp_ops_weights_operands(ops, &weight, (_weight_count), &x, (_x_count)))

/* Releases the widening and rounding buffers (before the backend's
 * cleanup). */
void svp_ops_weights_cleanup(svp_ops_h ops);

#endif
