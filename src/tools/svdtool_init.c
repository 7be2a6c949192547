/*
 * svdtool init: a UNet with seeded random weights in diffusers layout.
 *
 *   svdtool init --config CONFIG.json --seed S --output DIR
 *
 * DIR gets config.json (a copy) and diffusion_pytorch_model.safetensors with
 * exactly the tensor names and shapes diffusers gives that config.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tools/svdtool_cmds_unet.h"
#include "common/log.h"
#include "common/status.h"
#include "model/unet.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void svdtool_init_usage(FILE *f)
{
    fprintf(f,
            "usage: svdtool init --config CONFIG.json --seed S --output DIR\n"
            "  writes a UNet with random weights (N(0, 1/fan_in)) for CONFIG\n"
            "  in diffusers layout: DIR/config.json and\n"
            "  DIR/diffusion_pytorch_model.safetensors.\n");
}

int svdtool_init_main(int argc, char **argv)
{
    static const struct option options[] = {
        { "config", required_argument, NULL, 'c' },
        { "seed",   required_argument, NULL, 's' },
        { "output", required_argument, NULL, 'o' },
        { "help",   no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char        *config = NULL, *output = NULL, *seed_arg = NULL;
    unsigned long long seed;
    char              *end;
    int                c;
    svp_status_t       status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "c:s:o:h", options, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 's': seed_arg = optarg; break;
        case 'o': output = optarg; break;
        case 'h': svdtool_init_usage(stdout); return SVP_EXIT_OK;
        default:  svdtool_init_usage(stderr); return SVP_EXIT_BAD_INPUT;
        }
    }
    if (config == NULL || seed_arg == NULL || output == NULL || optind != argc) {
        fprintf(stderr, "svdtool init: --config, --seed and --output are required\n");
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
    status = svp_unet_write_random(config, (uint64_t)seed, output);
    if (status != SVP_OK) {
        svp_error("svdtool init failed: %s", svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}
