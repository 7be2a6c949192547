/*
 * svdtool subcommands of the VAE and the CLIP image encoder: each takes the
 * arguments after the subcommand name (argv[0] is the subcommand) and
 * returns a process exit code (0, or svp_status_exit_code() of the failure;
 * 2 for bad usage).  Outputs are F32 safetensors, written atomically.
 */
#ifndef SVP_TOOLS_SVDTOOL_CMDS_VAE_H
#define SVP_TOOLS_SVDTOOL_CMDS_VAE_H

/* svdtool clip --model DIR --input IN.safetensors --output OUT.safetensors
 * (pixel_values [B,3,S,S] -> image_embeds [B,P]) */
int svdtool_clip_main(int argc, char **argv);

/* svdtool vae-encode --model DIR --input IN.safetensors --output OUT.safetensors
 * (image [N,3,H,W] -> mean, logvar, std [N,4,H/8,W/8]) */
int svdtool_vae_encode_main(int argc, char **argv);

/* svdtool vae-decode --model DIR --input IN.safetensors --output OUT.safetensors
 *                    [--frames N] [--chunk N] [--unscale]
 * (latents [N,4,h,w] or [B,F,4,h,w] -> frames [N,3,8h,8w] or [B,F,3,8h,8w]) */
int svdtool_vae_decode_main(int argc, char **argv);

#endif
