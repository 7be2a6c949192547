/*
 * The step pipeline.  With T steps on W ranks, rank r runs steps
 * [r*T/W, (r+1)*T/W) of every sample; a sample enters on rank 0, walks
 * 0 -> 1 -> ... -> W-1 and leaves on the last rank, which finishes it
 * (decode, outputs).  Many samples are in flight, so in steady state every
 * rank works on a different sample.
 *
 * Layouts (pipeline.stages = S): the W ranks form G = W / S groups of S
 * contiguous ranks, each an independent pipeline of S stages as above over
 * the samples dealt to it (position j of the job's list to group j mod G);
 * "rank" and "W" above are then the position in the group and S.
 *
 * Placement of the work at the ends (pipeline.placement):
 *   ends:   rank 0 encodes (the stage's begin) and the last rank finishes
 *           (decode, outputs) every sample;
 *   spread: sample i is encoded and finished by rank i mod W: the encoding
 *           rank sends it to rank 0 (an INIT message) and the last rank sends
 *           the final latent back (a FINAL message), so every rank carries
 *           T/W steps plus 1/W of the encodes and decodes per sample.
 *
 * Who does what, in which order, is the schedule's (pipe/schedule.h): each
 * rank executes its list of actions, which the planner costs as well.
 */
#ifndef SVP_PIPE_PIPE_H
#define SVP_PIPE_PIPE_H

#include "common/status.h"
#include "pipe/stage.h"
#include "jobspec/spec.h"
#include "comm/comm.h"
#include "trace/trace.h"
#include "jobspec/layout.h"

typedef struct {
    int    rank, world;
    int    samples_done; /* samples this rank handled */
    int    steps_done;
    double wall;      /* seconds from start to end */
    double busy;      /* in stage begin/step/finish */
    double wait_recv; /* blocked waiting for input */
    double wait_send; /* blocked waiting for sends to complete */
} svp_pipe_stats_t;

typedef struct {
    const svp_spec_t *spec;
    int               rank, world;
    svp_comm_h        comm; /* NULL when world == 1 */
    svp_stage_t       stage;
    svp_trace_h       trace; /* may be NULL */
    /*
     * The samples to run, in order (NULL: 0 .. spec->samples - 1).  A sample
     * keeps its index (seed, noise stream, file name) whatever its position,
     * so a shorter list (a resumed job) gives the same outputs.  The list is
     * dealt to the pipelines: position j goes to pipeline j mod G.  Every rank
     * must pass the same list.  Not copied; must outlive svp_pipe_run().
     */
    const int *samples;
    int        nsamples;
    /* output.dir's lease (held, or viewed: job/lease.h), checked before a
     * sample's outputs are written; NULL: none */
    struct svp_job_lease *lease;
} svp_pipe_params_t;

/*
 * Runs this rank's part of the job.  Logs the step range at start, per-step
 * times at debug level, a progress line per sample with an ETA, and a final
 * summary.  Fills *stats_p (may be NULL) on success.  After SIGTERM/SIGINT
 * (common/stop.h) it returns SVP_ERR_CANCELED between two steps or from a
 * wait; the samples finished by then are complete on disk.
 */
svp_status_t svp_pipe_run(const svp_pipe_params_t *params,
                          svp_pipe_stats_t        *stats_p);

#endif
