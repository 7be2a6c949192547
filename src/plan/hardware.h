/*
 * Hardware tables (the YAML files in etc/hardware/): what one device and its links cost,
 * for the planner.  Times are measured at a reference setting and scaled by
 * the planner to the job's frames and resolution.
 *
 *   name: h100
 *   description: NVIDIA H100 SXM 80 GB, NVLink 4
 *   memory_gb: 80
 *   peak_tflops: 989              # optional: dense peak of the dtype run, for MFU
 *   svd:                          # optional: only plans of model.kind svd
 *     reference: {batch: 2, frames: 25, height: 576, width: 1024}
 *     unet_step_s: 0.8            # one UNet call at the reference
 *     encode_s: 0.15              # CLIP + VAE encode of one sample
 *     decode_s: 3.4               # VAE decode of one sample
 *     source: quoted              # optional: measured | quoted (default)
 *     dtype: f16                  # the spec dtype the times are for; the
 *                                 # planner prices no other with them
 *   links:
 *     intra_node_gbps: 300        # GB/s between two ranks on one node
 *     inter_node_gbps: 25         # GB/s between nodes
 *     latency_us: 10              # per message
 *     setup_ms: 0                 # optional: the first message on a link
 *     source: quoted              # optional: measured | quoted (default)
 *
 * "measured": timed with svdpipe on that hardware (bench/gpu-check.sh);
 * "quoted": a vendor's or a third party's figure, or an estimate.
 *
 * The job spec's reader reads it (jobspec/keys.h), by the same rules and within
 * the same limits: errors name file:line:column, the key path, what was
 * expected and what was found; an unknown key gets the nearest known one as
 * a suggestion.
 */
#ifndef SVP_PLAN_HARDWARE_H
#define SVP_PLAN_HARDWARE_H

#include "common/status.h"
#include "tensor/tensor.h"

typedef struct {
    char  *file;
    char  *name;
    char  *description;
    double memory_gb;   /* per device; 0 = not given */
    double peak_tflops; /* dense peak, 1e12 FLOP/s; 0 = not given */
    struct {
        int         batch, frames, height, width;
        double      unet_step_s; /* 0 = not given */
        double      encode_s;
        double      decode_s;
        char       *source; /* "measured" | "quoted"; NULL = quoted */
        svp_dtype_t dtype;  /* SVP_DTYPE_LAST = not stated */
    } svd;
    double intra_node_gbps; /* GB/s = 1e9 bytes per second */
    double inter_node_gbps;
    double latency_us;
    double setup_ms;      /* extra for a link's first message */
    char  *links_source;  /* "measured" | "quoted"; NULL = quoted */
    char  *measured_file; /* the results file overlaid, or NULL */
} svp_hw_t;

/*
 * Reads a hardware table.  On success *hw_p is allocated and owned by the
 * caller (svp_hw_destroy); on failure nothing is returned, the message is in
 * errbuf (when not NULL) and the result is SVP_ERR_BAD_FILE (malformed),
 * SVP_ERR_NOT_FOUND / SVP_ERR_IO (unreadable) or SVP_ERR_NO_MEMORY.
 */
svp_status_t svp_hw_load(const char *file, char *errbuf, int errlen,
                         svp_hw_t **hw_p);

/* Same, from a string; file is the name used in messages. */
svp_status_t svp_hw_load_string(const char *yaml, const char *file, char *errbuf,
                                int errlen, svp_hw_t **hw_p);

void svp_hw_destroy(svp_hw_t *hw);

/*
 * Overlays the measured figures of a results file on hw: a file in the same
 * format where every key is optional (bench/gpu-check.sh writes one as
 * bench/results/gpu-<date>-<gpu>.yaml).  The figures it gives replace the
 * table's; its svd and links sections must say "source: measured".  The svd
 * times come whole (reference and unet_step_s) or not at all.  Errors as
 * svp_hw_load(); hw is unchanged on failure.
 */
svp_status_t svp_hw_overlay_measured(svp_hw_t *hw, const char *file, char *errbuf,
                                     int errlen);

#endif
