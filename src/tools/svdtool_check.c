/*
 * svdtool check-model DIR: is DIR a usable SVD / SVD-XT checkpoint?  The
 * check is the model layer's (model/checkpoint.h); this is its command
 * line.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_check.h"
#include "common/status.h"
#include "model/checkpoint.h"

#include <getopt.h>
#include <stdio.h>

static void check_usage(FILE *f)
{
    fprintf(f, "usage: svdtool check-model DIR\n"
               "  checks a diffusers SVD / SVD-XT folder (unet/, vae/,\n"
               "  image_encoder/, scheduler/, feature_extractor/; fp32 or .fp16\n"
               "  weights) without loading weights: configs parse, every tensor\n"
               "  is present with the right shape, the components fit together.\n");
}

int svdtool_check_model_main(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char  *dir;
    int          c;
    svp_status_t status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'h':
            check_usage(stdout);
            return SVP_EXIT_OK;
        default:
            check_usage(stderr);
            return SVP_EXIT_BAD_INPUT;
        }
    }
    if (optind != argc - 1) {
        check_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    dir = argv[optind];
    printf("%s:\n", dir);
    status = svp_checkpoint_check(dir, 0, stdout);
    if (status != SVP_OK) {
        printf("%s: not a usable SVD checkpoint\n", dir);
        return svp_status_exit_code(status);
    }
    printf("%s: ok\n", dir);
    return SVP_EXIT_OK;
}
