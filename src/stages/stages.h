/*
 * The stages (pipe/stage.h is what the executor asks of one): the
 * simulator's (stage_dummy.c) and real SVD denoising's (stage_svd*.c).
 */
#ifndef SVP_STAGES_STAGES_H
#define SVP_STAGES_STAGES_H

#include "common/status.h"
#include "jobspec/spec.h"
#include "pipe/stage.h"

/* The simulator stage (model.kind: dummy). */
svp_status_t svp_stage_dummy_create(const svp_spec_t *spec, svp_stage_t *stage_p);

/* Real SVD denoising (model.kind: svd); see stage_svd.c for the inputs. */
svp_status_t svp_stage_svd_create(const svp_spec_t *spec, svp_stage_t *stage_p);

#endif
