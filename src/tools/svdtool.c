/*
 * svdtool: runs one piece of the model on files, for tests and for users
 * checking their weights against a reference.
 *
 *   svdtool COMMAND [ARGS...]      svdtool help lists the commands
 *
 * Every command reads and writes safetensors (outputs atomically) and exits
 * 0 on success, 2 on bad input, 1 on other failures.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/status.h"
#include "ops/ops.h"
#include "svdtool_cmds_unet.h"
#include "svdtool_schedule.h"
#include "svdtool_compare.h"
#include "svdtool_cmds_vae.h"
#include "svdtool_check.h"
#include "svdtool_report.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

static int svdtool_trace_merge_main(int argc, char **argv);

typedef struct {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} svdtool_cmd_t;

static const svdtool_cmd_t svdtool_cmds[] = {
    {"unet", svdtool_unet_main,
     "run the UNet: --model DIR --input IN.safetensors --output OUT.safetensors"},
    {"init", svdtool_init_main,
     "random weights: --config CONFIG.json | --model-config-dir DIR|NAME, --seed S --output DIR"},
    {"check-model", svdtool_check_model_main,
     "validate an SVD/SVD-XT checkpoint folder without loading weights: DIR"},
    {"clip", svdtool_clip_main,
     "run the CLIP image encoder: --model DIR --input IN --output OUT (pixel_values -> image_embeds)"},
    {"vae-encode", svdtool_vae_encode_main,
     "run the VAE encoder: --model DIR --input IN --output OUT (image -> mean, logvar, std)"},
    {"vae-decode", svdtool_vae_decode_main,
     "run the VAE decoder: --model DIR --input IN --output OUT [--frames N] [--chunk N]"},
    {"schedule", svdtool_schedule_main,
     "print sigmas and timesteps: --config scheduler_config.json --steps N"},
    {"compare", svdtool_compare_main,
     "relative difference of two tensors: A.safetensors[:T] REF.safetensors[:T] [--tol R]"},
    {"trace-merge", svdtool_trace_merge_main,
     "merge per-rank traces into one timeline: OUT.json IN.json..."},
    {"report", svdtool_report_main,
     "a run's report (HTML with pictures, Markdown, JSON): RUN_DIR|TRACES... -o DIR"},
};

static int svdtool_trace_merge_main(int argc, char **argv)
{
    svp_status_t status;

    if (argc < 3 || !strcmp(argv[1], "--help")) {
        fprintf(argc < 3 ? stderr : stdout,
                "usage: svdtool trace-merge OUT.json RANK0.json [RANK1.json ...]\n"
                "Joins the per-rank traces written with log.trace into one Chrome\n"
                "trace (chrome://tracing, Perfetto), one row per rank.\n");
        return (argc < 3) ? SVP_EXIT_BAD_INPUT : 0;
    }
    status = svp_trace_merge(argv[1], (const char *const *)argv + 2, argc - 2);
    return svp_status_exit_code(status);
}

static void svdtool_usage(FILE *out)
{
    size_t i;

    fprintf(out, "usage: svdtool COMMAND [ARGS...]   (svdtool COMMAND --help)\n\n");
    for (i = 0; i < sizeof(svdtool_cmds) / sizeof(svdtool_cmds[0]); ++i) {
        fprintf(out, "  %-12s %s\n", svdtool_cmds[i].name, svdtool_cmds[i].summary);
    }
}

int main(int argc, char **argv)
{
    size_t i;

    /* the BLAS kernels this CPU executes best, before argv is parsed (ops.h) */
    svp_ops_blas_choose(argv);
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "-h")) {
        svdtool_usage(argc < 2 ? stderr : stdout);
        return (argc < 2) ? SVP_EXIT_BAD_INPUT : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("svdtool (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
        return 0;
    }
    for (i = 0; i < sizeof(svdtool_cmds) / sizeof(svdtool_cmds[0]); ++i) {
        if (!strcmp(argv[1], svdtool_cmds[i].name)) {
            return svdtool_cmds[i].main(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "svdtool: unknown command '%s'\n\n", argv[1]);
    svdtool_usage(stderr);
    return SVP_EXIT_BAD_INPUT;
}
