/*
 * svdtool schedule: the scheduler's sigmas and timesteps for a config and a
 * step count, as JSON (a check against diffusers' own).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_schedule.h"
#include "noise/euler.h"
#include "common/log.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define SVDTOOL_SCHEDULE_DEFAULT_STEPS 25

static void svdtool_schedule_usage(FILE *out)
{
    fprintf(out, "usage: svdtool schedule [--config scheduler_config.json] "
                 "[--steps N]\n"
                 "Prints the Euler sampler's sigmas (N+1, the last 0), timesteps "
                 "(N) and\ninit_noise_sigma as JSON.  Without --config the SVD "
                 "values are used.\n");
}

/* Builds {"num_inference_steps", "init_noise_sigma", "sigmas", "timesteps"}. */
static json_t *svdtool_schedule_json(svp_sched_h sched)
{
    json_t      *root, *sigmas, *timesteps;
    const float *s = svp_sched_sigmas(sched), *t = svp_sched_timesteps(sched);
    int          n = svp_sched_num_steps(sched), i, err = 0;

    sigmas    = json_array();
    timesteps = json_array();
    for (i = 0; sigmas != NULL && timesteps != NULL && i <= n; ++i) {
        err |= json_array_append_new(sigmas, json_real(s[i]));
        if (i < n) {
            err |= json_array_append_new(timesteps, json_real(t[i]));
        }
    }
    /* "o" steals both arrays, also when packing fails */
    root = json_pack("{s:i, s:f, s:o, s:o}", "num_inference_steps", n,
                     "init_noise_sigma", (double)svp_sched_init_noise_sigma(sched),
                     "sigmas", sigmas, "timesteps", timesteps);
    if (err != 0) {
        json_decref(root);
        return NULL;
    }
    return root;
}

int svdtool_schedule_main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"steps", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    svp_sched_config_t config;
    svp_sched_h        sched;
    svp_status_t       status;
    const char        *config_path = NULL;
    json_t            *root;
    char              *end;
    long               steps = SVDTOOL_SCHEDULE_DEFAULT_STEPS;
    int                opt;

    optind = 0; /* glibc: rescan from argv[1] even after an earlier getopt */
    while ((opt = getopt_long(argc, argv, "c:s:h", options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config_path = optarg;
            break;
        case 's':
            errno = 0;
            steps = strtol(optarg, &end, 10);
            if (errno != 0 || *end != '\0' || end == optarg || steps < 1 ||
                steps > 100000) {
                fprintf(stderr,
                        "svdtool schedule: --steps: expected an "
                        "integer in [1, 100000], got '%s'\n",
                        optarg);
                return SVP_EXIT_BAD_INPUT;
            }
            break;
        case 'h':
            svdtool_schedule_usage(stdout);
            return SVP_EXIT_OK;
        default:
            svdtool_schedule_usage(stderr);
            return SVP_EXIT_BAD_INPUT;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "svdtool schedule: unexpected argument '%s'\n",
                argv[optind]);
        svdtool_schedule_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }

    if (config_path != NULL) {
        status = svp_sched_config_load(config_path, &config);
        if (status != SVP_OK) {
            return svp_status_exit_code(status);
        }
    } else {
        svp_sched_config_default(&config);
    }
    status = svp_sched_create(&config, (int)steps, &sched);
    if (status != SVP_OK) {
        return svp_status_exit_code(status);
    }

    root = svdtool_schedule_json(sched);
    svp_sched_destroy(sched);
    /* 17 significant digits print each float exactly as its double value */
    if (root == NULL ||
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0 ||
        fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
        svp_error("cannot write the schedule to stdout");
        json_decref(root);
        return SVP_EXIT_FAILURE;
    }
    json_decref(root);
    return SVP_EXIT_OK;
}
