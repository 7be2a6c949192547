/*
 * svdtool init: models with seeded random weights in diffusers layout.
 *
 *   svdtool init --config CONFIG.json --seed S --output DIR
 *   svdtool init --model-config-dir DIR --seed S --output OUT
 *
 * The first writes the one model CONFIG describes (SVD UNet, temporal VAE
 * or CLIP image encoder): DIR gets config.json (a copy) and the weights
 * file with exactly the tensor names and shapes diffusers / transformers
 * give that config.  The second turns a folder of SVD configs into a
 * complete checkpoint folder.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_cmds_unet.h"
#include "common/log.h"
#include "common/status.h"
#include "model/svd_init.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void svdtool_init_usage(FILE *f)
{
    fprintf(f,
            "usage: svdtool init --config CONFIG.json --seed S --output DIR\n"
            "       svdtool init --model-config-dir DIR --seed S --output OUT\n"
            "  --config: writes the model CONFIG describes (by its _class_name:\n"
            "    UNetSpatioTemporalConditionModel, AutoencoderKLTemporalDecoder;\n"
            "    or a CLIPVisionModelWithProjection config) with random weights\n"
            "    (N(0, 1/fan_in)) in diffusers layout: DIR/config.json and the\n"
            "    weights file.\n"
            "  --model-config-dir: DIR holds an SVD checkpoint's configs only\n"
            "    (model_index.json, unet/, vae/, image_encoder/, scheduler/,\n"
            "    feature_extractor/); OUT becomes the complete folder, the three\n"
            "    models with random weights.  OUT appears only when whole.\n");
}

int svdtool_init_main(int argc, char **argv)
{
    static const struct option options[] = {
        { "config", required_argument, NULL, 'c' },
        { "model-config-dir", required_argument, NULL, 'm' },
        { "seed",   required_argument, NULL, 's' },
        { "output", required_argument, NULL, 'o' },
        { "help",   no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char        *config = NULL, *config_dir = NULL, *output = NULL;
    const char        *seed_arg = NULL;
    unsigned long long seed;
    char              *end;
    int                c;
    svp_status_t       status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "c:m:s:o:h", options, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 'm': config_dir = optarg; break;
        case 's': seed_arg = optarg; break;
        case 'o': output = optarg; break;
        case 'h': svdtool_init_usage(stdout); return SVP_EXIT_OK;
        default:  svdtool_init_usage(stderr); return SVP_EXIT_BAD_INPUT;
        }
    }
    if ((config == NULL) == (config_dir == NULL) || seed_arg == NULL ||
        output == NULL || optind != argc) {
        fprintf(stderr, "svdtool init: one of --config and --model-config-dir, "
                "--seed and --output are required\n");
        svdtool_init_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    errno = 0;
    seed  = strtoull(seed_arg, &end, 0);
    if (errno != 0 || *end != '\0' || *seed_arg == '\0' || *seed_arg == '-') {
        fprintf(stderr, "svdtool init: --seed expects a non-negative integer, got '%s'\n",
                seed_arg);
        return SVP_EXIT_BAD_INPUT;
    }
    if (config != NULL) {
        status = svp_model_write_random(config, (uint64_t)seed, output);
    } else {
        status = svp_svd_write_random(config_dir, (uint64_t)seed, output);
    }
    if (status != SVP_OK) {
        svp_error("svdtool init failed: %s", svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}
