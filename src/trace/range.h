/*
 * Named, nested ranges around the work a rank does (a UNet call and its
 * blocks, a VAE decode chunk, CLIP, VAE encode, a sample's step, a hand-off).
 * One call site serves two readers:
 *
 *   - Nsight Systems: in a CUDA build each range is also an NVTX range
 *     (nvtx3, header-only).  Names are formatted only when a tool is attached
 *     (nsys sets NVTX_INJECTION64_PATH); otherwise a range costs a branch.
 *     Without CUDA the NVTX part compiles away.
 *   - The per-block profile (svdtool unet --profile, log.profile): when the
 *     profile is on, every range adds its time, count and the FLOPs of the
 *     ops run inside it to an entry named by its path ("unet/down.1/res.0"),
 *     and svp_range_op() adds each op's time and FLOPs per op kind.
 *
 * Ranges are per process and must be pushed and popped by one thread (the
 * model code runs on the main thread; the ops parallelise inside).  A
 * function that pushes remembers the depth it was called at and pops back
 * to it on every exit path (svp_range_pop_to), so an error unwinding by goto
 * leaves no range open.
 */
#ifndef SVP_TRACE_RANGE_H
#define SVP_TRACE_RANGE_H

#include "common/status.h"

#include <jansson.h>
#include <stdio.h>

#define SVP_RANGE_MAX_DEPTH 32

/* Opens a range named by fmt; returns the depth before the push. */
int svp_range_push(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Same, for a range that says where the work belongs (a sample's step, a
 * hand-off): an NVTX range, but no level of the profile, so that a block's
 * profile entry gathers its calls across samples and steps.
 */
int svp_range_push_ctx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Closes the innermost range (none open: nothing). */
void svp_range_pop(void);

/* Closes ranges until depth of them are open. */
void svp_range_pop_to(int depth);

/* Whether a push will do anything (a tool is attached or the profile is on). */
int svp_range_active(void);

/* ---- the profile ------------------------------------------------------- */

/*
 * Turns collection on or off.  sync, when not NULL, is called before every
 * time stamp, so that ranges measure finished work on an asynchronous device
 * (the CUDA backend); arg is passed to it.
 */
void svp_range_profile_enable(int on, void (*sync)(void *arg), void *arg);

int svp_range_profile_enabled(void);

/* Forgets what was collected. */
void svp_range_profile_reset(void);

/* One op of kind (a static string) took seconds and did flops. */
void svp_range_op(const char *kind, double seconds, double flops);

/*
 * Writes what was collected as JSON:
 *   {"ranges":[{"name","depth","count","s","flops"}...],   (first-seen order)
 *    "ops":[{"root","kind","count","s","flops"}...]}
 * Times and FLOPs are totals; a range's include its children's; ops are
 * counted per kind and per outermost range they ran in ("root": its name,
 * "" outside any).
 */
svp_status_t svp_range_profile_write(FILE *out);

/*
 * Writes about with "profile": <the above> added to path, atomically, as
 * one line of JSON; about is an object saying what the profile was taken
 * on (e.g. {"kind": "run", "rank": 0}), and is taken: freed here, written
 * or not (NULL: out of memory, reported).  Logs the outcome.
 */
svp_status_t svp_range_profile_save(const char *path, json_t *about);

#endif
