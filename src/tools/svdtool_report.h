/*
 * svdtool report: a run's per-rank traces (log.trace) and run.json turned
 * into report.md and a self-contained report.html (tables plus SVG
 * pictures, no script, no external reference), and report.json with the
 * figures.
 *
 *   svdtool report RUN_DIR | TRACE.rank0.json... -o DIR
 *          [--hardware TABLE.yaml] [--profile PROFILE.json]
 *          [--flops-per-step F] [--peak-tflops P]
 *
 * Everything is computed from the events, so any layout reads the same way
 * (one lane per rank; hand-offs are where a sample's consecutive steps
 * change rank).  Definitions, all in seconds from the earliest event:
 *
 *   wall (rank)   its "run" span (svdworker records it), else first to last
 *                 event;
 *   busy          steps + encodes ("begin") + decodes ("finish");
 *   idle          wall - busy, of which waiting for input ("wait recv") and
 *                 waiting for sends ("wait send") are the recorded waits
 *                 (waits under 0.1 ms are not recorded);
 *   makespan      earliest start to latest end over all ranks;
 *   bubble        idle share of W x makespan;
 *   fill, drain   the fill ends when the last rank starts its first step,
 *                 the drain begins when the first rank ends its last step;
 *                 between them is the steady state; the bubble is split
 *                 into its fill, steady and drain parts;
 *   samples/s     samples / makespan; in steady state, samples completed
 *                 (end of decode, else of the last step) in the steady
 *                 window / its length;
 *   MFU           FLOPs of the steps (FLOPs per step x steps) / time in
 *                 steps / peak, per rank; overall: all steps' FLOPs /
 *                 (W x makespan) / peak.
 */
#ifndef SVP_TOOLS_SVDTOOL_REPORT_H
#define SVP_TOOLS_SVDTOOL_REPORT_H

#include "common/status.h"

#include <stdio.h>

typedef enum {
    SVDTOOL_REPORT_STEP = 0,
    SVDTOOL_REPORT_ENCODE,
    SVDTOOL_REPORT_DECODE,
    SVDTOOL_REPORT_WAIT_RECV,
    SVDTOOL_REPORT_WAIT_SEND,
    SVDTOOL_REPORT_RUN,
    SVDTOOL_REPORT_NKINDS
} svdtool_report_kind_t;

typedef struct {
    svdtool_report_kind_t kind;
    int                   sample, step; /* -1: none */
    double                t0, t1;       /* seconds from the origin */
} svdtool_report_ev_t;

typedef struct {
    int                  rank;
    char                 host[64];
    svdtool_report_ev_t *ev; /* sorted by t0 */
    int                  nev, cap;
    /* figures (svdtool_report_analyse) */
    double start, end, wall;
    double busy, step_s, wait_recv, wait_send, idle;
    int    steps, encodes, decodes;
} svdtool_report_rank_t;

/* A hand-off: sample's work moved from rank src to rank dst. */
typedef struct {
    int    src, dst, sample, step;
    double t_sent, t_used; /* src's work ended, dst's began */
} svdtool_report_handoff_t;

typedef struct {
    /* inputs */
    int                    world;
    svdtool_report_rank_t *ranks;          /* [world], by rank */
    double                 origin_us;      /* wall clock of t = 0 */
    double                 flops_per_step; /* 0: unknown */
    double                 peak_flops;     /* per device, 0: unknown */
    double                 message_bytes;  /* per hand-off, 0: unknown */
    /* figures */
    double                    makespan, start, end;
    int                       samples; /* distinct samples the traces show */
    int                       window_lo, window_hi; /* sample indices [lo, hi): the
                                                  * middle three of them */
    double                    samples_per_s;
    double                    fill_end, drain_start; /* steady window */
    double                    steady_samples_per_s;  /* 0: no steady state */
    double                    bubble, bubble_fill, bubble_steady, bubble_drain;
    double                    steady_util; /* busy share in the window */
    double                    busy_total, flops_total;
    double                    achieved_flops, mfu; /* overall */
    svdtool_report_handoff_t *handoffs;
    int                       nhandoffs;
} svdtool_report_t;

/*
 * Reads one per-rank trace (Chrome trace JSON as svdworker writes it) into
 * r; the rank is the events' pid.  Errors: SVP_ERR_BAD_FILE (file named).
 */
svp_status_t svdtool_report_load_trace(svdtool_report_t *r, const char *path);

/* Computes the figures; call after every trace is loaded. */
svp_status_t svdtool_report_analyse(svdtool_report_t *r);

void svdtool_report_cleanup(svdtool_report_t *r);

/* The timeline picture (standalone SVG when xmlns is set). */
void svdtool_report_svg_timeline(const svdtool_report_t *r, FILE *out, int xmlns);

int svdtool_report_main(int argc, char **argv);

#endif
