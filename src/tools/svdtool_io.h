/*
 * What svdtool's model subcommands (unet, vae-encode, vae-decode, clip)
 * share: their command line.  Their inputs and outputs are files read and
 * written by tensor/safetensors_io.h.
 */
#ifndef SVP_TOOLS_SVDTOOL_IO_H
#define SVP_TOOLS_SVDTOOL_IO_H

#include "common/status.h"
#include "tensor/tensor.h"

#include <stdio.h>

typedef struct {
    const char *model, *input, *output;
    int         threads; /* 0: the backend's default */
    svp_dtype_t dtype;   /* --dtype: the matrix weights' dtype (f32) */
} svdtool_io_args_t;

/*
 * Parses arg as an integer in [min, 10^6] into *value_p; otherwise prints
 * a message naming the command and the option and returns -1.
 */
int svdtool_io_count(const char *cmd, const char *opt, const char *arg, int min,
                     int *value_p);

/*
 * The whole main() of a subcommand whose options are --model, --input,
 * --output (all required), --threads, --dtype and --help: parses argv, runs run(),
 * and turns its status into an exit code.
 */
int svdtool_io_main(const char *cmd, int argc, char **argv, void (*usage)(FILE *f),
                    svp_status_t (*run)(const svdtool_io_args_t *a));

#endif
