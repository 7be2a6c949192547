/*
 * The checks of a sample's outputs that a stage's check_output (resume)
 * shares: a tensor file's metadata and shape against this job's.
 */
#ifndef SVP_JOB_OUTPUTS_H
#define SVP_JOB_OUTPUTS_H

#include "common/status.h"
#include "jobspec/spec.h"

#include <stddef.h>
#include <stdint.h>

/*
 * For a stage's check_output: does the safetensors file at path hold a
 * tensor `name` of the given shape (f32) with this job's metadata for sample
 * index with seed?  SVP_OK, SVP_ERR_NOT_FOUND (no file), SVP_ERR_BAD_FILE
 * (does not open) or SVP_ERR_SPEC (why[] names the first difference).
 */
svp_status_t svp_job_outputs_check_tensor(const svp_spec_t *spec, const char *path,
                                          const char *name, const char *model,
                                          int index, uint64_t seed, int ndim,
                                          const int64_t *shape, char *why,
                                          size_t len);

#endif
