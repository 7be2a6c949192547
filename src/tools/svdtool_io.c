/*
 * svdtool's model subcommands: their command line; see svdtool_io.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_io.h"
#include "common/log.h"
#include "common/status.h"

#include <getopt.h>
#include <stdlib.h>

int svdtool_io_count(const char *cmd, const char *opt, const char *arg, int min,
                     int *value_p)
{
    char *end;
    long  v = strtol(arg, &end, 10);

    if (*arg == '\0' || *end != '\0' || v < min || v > 1000000) {
        fprintf(stderr, "svdtool %s: --%s needs an integer >= %d, got '%s'\n", cmd,
                opt, min, arg);
        return -1;
    }
    *value_p = (int)v;
    return 0;
}

int svdtool_io_main(const char *cmd, int argc, char **argv, void (*usage)(FILE *f),
                    svp_status_t (*run)(const svdtool_io_args_t *a))
{
    static const struct option options[] = {
        {"model", required_argument, NULL, 'm'},
        {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 't'},
        {"dtype", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    svdtool_io_args_t a = {.dtype = SVP_DTYPE_F32};
    int               c, d;
    svp_status_t      status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:o:t:d:h", options, NULL)) != -1) {
        switch (c) {
        case 'm':
            a.model = optarg;
            break;
        case 'i':
            a.input = optarg;
            break;
        case 'o':
            a.output = optarg;
            break;
        case 't':
            if (svdtool_io_count(cmd, "threads", optarg, 1, &a.threads) != 0) {
                return SVP_EXIT_BAD_INPUT;
            }
            break;
        case 'd':
            d = svp_dtype_parse_short(optarg);
            if (d < 0 || !svp_dtype_is_weight((svp_dtype_t)d)) {
                fprintf(stderr,
                        "svdtool %s: --dtype '%s': not a weight dtype "
                        "(f32, bf16, f16)\n",
                        cmd, optarg);
                return SVP_EXIT_BAD_INPUT;
            }
            a.dtype = (svp_dtype_t)d;
            break;
        case 'h':
            usage(stdout);
            return SVP_EXIT_OK;
        default:
            usage(stderr);
            return SVP_EXIT_BAD_INPUT;
        }
    }
    if (a.model == NULL || a.input == NULL || a.output == NULL || optind != argc) {
        fprintf(stderr, "svdtool %s: --model, --input and --output are required\n",
                cmd);
        usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    status = run(&a);
    if (status != SVP_OK) {
        svp_error("svdtool %s failed: %s", cmd, svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}
