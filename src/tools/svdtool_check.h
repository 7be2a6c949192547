/*
 * svdtool check-model: validates a diffusers SVD / SVD-XT checkpoint folder
 * without loading any weight.
 */
#ifndef SVP_TOOLS_SVDTOOL_CHECK_H
#define SVP_TOOLS_SVDTOOL_CHECK_H

#include "common/status.h"

#include <stdio.h>

/* What svdtool_check_model_dir() asks of the folder. */
enum {
    /* only what a job uses: unet/ always; scheduler/ and model_index.json
     * when present; without SVDTOOL_CHECK_IMAGES, vae/ when present */
    SVDTOOL_CHECK_FOR_JOB = 1u << 0,
    /* the job encodes images: vae/, image_encoder/, feature_extractor/ */
    SVDTOOL_CHECK_IMAGES  = 1u << 1
};

/*
 * Checks a diffusers SVD / SVD-XT folder without loading weights: configs
 * parse, every tensor the configs imply is present with the right shape,
 * and the components fit together.  flags 0 asks for a complete checkpoint
 * (svdtool check-model).  One line per component goes to report (NULL:
 * none); the reasons for a failure are logged.
 */
svp_status_t svdtool_check_model_dir(const char *dir, unsigned flags,
                                     FILE *report);

/* argv[0] is "check-model"; returns an SVP_EXIT_* code. */
int svdtool_check_model_main(int argc, char **argv);

#endif
