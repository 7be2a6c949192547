/*
 * svdtool subcommands of the UNet: each takes the arguments after the
 * subcommand name (argv[0] is the subcommand) and returns a process exit
 * code (0, or svp_status_exit_code() of the failure; 2 for bad usage).
 */
#ifndef SVP_TOOLS_SVDTOOL_CMDS_UNET_H
#define SVP_TOOLS_SVDTOOL_CMDS_UNET_H

/* svdtool unet --model DIR --input IN.safetensors --output OUT.safetensors */
int svdtool_unet_main(int argc, char **argv);

/* svdtool init --config CONFIG.json --seed S --output DIR */
int svdtool_init_main(int argc, char **argv);

#endif
