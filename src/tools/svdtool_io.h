/*
 * What svdtool's model subcommands (unet, vae-encode, vae-decode, clip)
 * share: their command line, inputs read by name from a safetensors file
 * with a rank check, and outputs written atomically.
 */
#ifndef SVP_TOOLS_SVDTOOL_IO_H
#define SVP_TOOLS_SVDTOOL_IO_H

#include "common/status.h"
#include "tensor/safetensors.h"

#include <stdio.h>

typedef struct {
    const char *model, *input, *output;
    int         threads;        /* 0: the backend's default */
} svdtool_io_args_t;

/*
 * Loads name from st as F32 into *t_p (destroy with svp_tensor_destroy());
 * a rank outside [min_ndim, max_ndim] is SVP_ERR_SHAPE, logged naming the
 * file and the tensor, and nothing is returned.
 */
svp_status_t svdtool_io_input(svp_safetensors_h st, const char *name,
                              int min_ndim, int max_ndim, svp_tensor_t **t_p);

/* Writes the count named tensors to path atomically. */
svp_status_t svdtool_io_write(const char *path, int count,
                              const char *const *names,
                              svp_tensor_t *const *tensors);

/*
 * Parses arg as an integer in [min, 10^6] into *value_p; otherwise prints
 * a message naming the command and the option and returns -1.
 */
int svdtool_io_count(const char *cmd, const char *opt, const char *arg,
                     int min, int *value_p);

/*
 * The whole main() of a subcommand whose options are --model, --input,
 * --output (all required), --threads and --help: parses argv, runs run(),
 * and turns its status into an exit code.
 */
int svdtool_io_main(const char *cmd, int argc, char **argv,
                    void (*usage)(FILE *f),
                    svp_status_t (*run)(const svdtool_io_args_t *a));

#endif
