/*
 * Do the ranks of a job run the same spec?  Each rank publishes the keys
 * that must agree (every key but those flagged per-rank in spec_keys.c:
 * log level, trace prefix, output directory) and compares them with rank
 * 0's, key by key, so that a mismatch names the keys and both values instead
 * of two hashes.
 */
#ifndef SVP_JOBSPEC_SPEC_AGREE_H
#define SVP_JOBSPEC_SPEC_AGREE_H

#include "common/status.h"
#include "rt/rt.h"
#include "jobspec/spec.h"

#include <stddef.h>
#include <stdint.h>

/* The spec as "key: value" lines, without the per-rank keys: what all ranks
 * must share.  *text_p is malloc'ed; the caller frees it. */
svp_status_t svp_spec_dump_shared(const svp_spec_t *spec, char **text_p);

/*
 * Compares two svp_spec_dump_shared() texts key by key.  Writes
 * "key: A vs B; key: A vs B" for each differing key into buf (truncated to
 * len) and returns how many keys differ.
 */
int svp_spec_diff(const char *mine, const char *theirs, char *buf, size_t len);

/*
 * Publishes this rank's shared spec, fences, and compares it with rank 0's.
 * On a mismatch logs each differing key with both values and returns
 * SVP_ERR_SPEC.  *job_id_p gets a hash of the shared spec (the same on every
 * rank that agrees).  Collective: every rank calls it once.
 */
svp_status_t svp_spec_agree(const svp_spec_t *spec, svp_rt_h rt, uint64_t *job_id_p);

#endif
