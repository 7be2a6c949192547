/*
 * The backends, one table: the enum a job spec's device key, the ops
 * handle's parameters and the workers carry end to end, and each one's
 * name, the only place the names are written (strings exist only at the
 * edges: the spec, the command line, logs and sample.json).  The devices a
 * spec may name come first, so a list of their names is indexed by the
 * backend; "dry" computes nothing and sizes a model's activations
 * (ops.h).  This header holds types only, so the spec can include it.
 */
#ifndef SVP_OPS_OPS_TYPES_H
#define SVP_OPS_OPS_TYPES_H

#include "common/status.h"

#define SVP_OPS_DEVICE_TABLE(_X) \
    _X(CPU, "cpu") \
    _X(CUDA, "cuda")
#define SVP_OPS_BACKEND_TABLE(_X) \
    SVP_OPS_DEVICE_TABLE(_X) \
    _X(DRY, "dry")

#define SVP_OPS_BACKEND_ENUM_(_e, _name) SVP_OPS_BACKEND_##_e,
#define SVP_OPS_BACKEND_NAME_(_e, _name) _name,

typedef enum {
    SVP_OPS_BACKEND_TABLE(SVP_OPS_BACKEND_ENUM_) SVP_OPS_BACKEND_LAST
} svp_ops_backend_t;

/* "cpu", "cuda": initialisers of a list of the devices' names, in the
 * enum's order (append NULL where a list ends with one). */
#define SVP_OPS_DEVICE_NAMES SVP_OPS_DEVICE_TABLE(SVP_OPS_BACKEND_NAME_)

/* "cpu", "cuda", "dry"; "?" for an invalid value. */
const char *svp_ops_backend_name(svp_ops_backend_t backend);

/* A backend by its name; SVP_ERR_UNSUPPORTED, logged with the names this
 * build has, when there is none.  *backend_p is written only on success. */
svp_status_t svp_ops_backend_parse(const char *name, svp_ops_backend_t *backend_p);

#endif
