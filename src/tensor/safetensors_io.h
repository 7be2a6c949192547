/*
 * Whole tensors in and out of safetensors files, for programs that take
 * their inputs and give their outputs as files: a named input with a rank
 * check, and a set of outputs written atomically.
 */
#ifndef SVP_TENSOR_SAFETENSORS_IO_H
#define SVP_TENSOR_SAFETENSORS_IO_H

#include "common/status.h"
#include "tensor/safetensors.h"

/*
 * Loads name from st as F32 into *t_p (destroy with svp_tensor_destroy());
 * a rank outside [min_ndim, max_ndim] is SVP_ERR_SHAPE, logged naming the
 * file and the tensor, and nothing is returned.
 */
svp_status_t svp_safetensors_load_ranked(svp_safetensors_h st, const char *name,
                                         int min_ndim, int max_ndim,
                                         svp_tensor_t **t_p);

/* Writes the count named tensors to path atomically. */
svp_status_t svp_safetensors_write_all(const char *path, int count,
                                       const char *const   *names,
                                       svp_tensor_t *const *tensors);

#endif
