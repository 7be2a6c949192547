/*
 * svdtool check-model: validates a diffusers SVD / SVD-XT checkpoint folder
 * without loading any weight (svp_checkpoint_check()).
 */
#ifndef SVP_TOOLS_SVDTOOL_CHECK_H
#define SVP_TOOLS_SVDTOOL_CHECK_H

/* argv[0] is "check-model"; returns an SVP_EXIT_* code. */
int svdtool_check_model_main(int argc, char **argv);

#endif
