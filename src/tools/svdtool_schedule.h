/*
 * `svdtool schedule`: prints the sampler's sigmas and timesteps as JSON.
 */
#ifndef SVP_TOOLS_SVDTOOL_SCHEDULE_H
#define SVP_TOOLS_SVDTOOL_SCHEDULE_H

/*
 * argv[0] is the subcommand name ("schedule"); options follow:
 *   --config FILE   a diffusers scheduler_config.json (default: SVD's values)
 *   --steps N       number of sampling steps (default 25)
 * Returns a process exit code (SVP_EXIT_*).
 */
int svdtool_schedule_main(int argc, char **argv);

#endif
