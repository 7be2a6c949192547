/*
 * The job spec as JSON, for the records a run leaves (run.json's "spec"):
 * one member per key of the spec, named by its path, with the value the
 * key holds as JSON's own type, in the order of svp_spec_dump()'s lines:
 *
 *   {"name": "default", "model.kind": "dummy", "steps": 8, "seed": 42,
 *    "latent_shape": [1, 14, 4, 8, 8], "video.fps": 7.0,
 *    "output.frames": true, "cluster.env": {"UCX_TLS": "sm,self"}, ...}
 *
 * Flat, as the dump and the key table are: a key's path is one member, so
 * a reader finds "cluster.env" or "pipeline.stages" by the name the spec,
 * --set and the man page use.  Names an integer key takes ("auto") and enum
 * values are strings; a seed above 2^63 - 1, which a JSON reader such as
 * jansson cannot hold as an integer, is the string of its digits.
 */
#ifndef SVP_JOBSPEC_SPEC_JSON_H
#define SVP_JOBSPEC_SPEC_JSON_H

#include "common/status.h"
#include "jobspec/spec.h"

#include <jansson.h>

/*
 * The effective spec as a new JSON object (*obj_p, the caller's reference:
 * json_decref).  SVP_ERR_NO_MEMORY, and nothing returned, when a value
 * cannot be made.
 */
svp_status_t svp_spec_to_json(const svp_spec_t *spec, json_t **obj_p);

/*
 * Reads a spec back from a run record's "spec": the object of
 * svp_spec_to_json(), or the string of svp_spec_dump() that older records
 * carry (both are read by the spec's own reader, with its checks and
 * messages; file names the record in them).  Members may also be sections
 * holding their keys ({"model": {"kind": "dummy"}}), as a spec file's.
 * Errors as svp_spec_load_string(); a value that is neither an object nor
 * a string is SVP_ERR_SPEC.  The spec is freed with svp_spec_destroy().
 */
svp_status_t svp_spec_load_json(const json_t *value, const char *file, char *errbuf,
                                int errlen, svp_spec_t **spec_p);

#endif
