/*
 * svdtool report: the command line.  Loading, analysis and writing are
 * svdtool_report_load.c, svdtool_report.c and svdtool_report_write.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_report_int.h"
#include "common/log.h"
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void rusage(FILE *f)
{
    fprintf(
        f,
        "usage: svdtool report RUN_DIR | TRACE.rankN.json... -o DIR\n"
        "         [--run RUN.json] [--hardware TABLE.yaml] [--profile PROFILE.json]\n"
        "         [--flops-per-step F] [--peak-tflops P]\n"
        "Writes DIR/report.html (self-contained, with pictures), report.md and\n"
        "report.json from a run's per-rank traces (log.trace) and its run.json:\n"
        "timeline, utilisation and bubble, predicted against measured, MFU, the\n"
        "profile of one UNet call (svdtool unet --profile) and the hand-offs.\n");
}

int svdtool_report_main(int argc, char **argv)
{
    svdtool_report_t        r;
    svdtool_report_inputs_t in;
    const char        *out = NULL, *hwfile = NULL, *proffile = NULL, *runfile = NULL;
    double             flops = -1, peak = -1;
    char               err[512];
    svp_status_t       status = SVP_OK;
    struct stat        sb;
    int                i, ninputs = 0;
    char              *end;
    svp_plan_message_t msg;

    memset(&r, 0, sizeof(r));
    memset(&in, 0, sizeof(in));
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rusage(stdout);
            return 0;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--hardware") ||
            !strcmp(a, "--profile") || !strcmp(a, "--run") ||
            !strcmp(a, "--flops-per-step") || !strcmp(a, "--peak-tflops")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "svdtool report: %s needs a value\n", a);
                return SVP_EXIT_BAD_INPUT;
            }
            if (!strcmp(a, "-o")) {
                out = argv[++i];
            } else if (!strcmp(a, "--hardware")) {
                hwfile = argv[++i];
            } else if (!strcmp(a, "--profile")) {
                proffile = argv[++i];
            } else if (!strcmp(a, "--run")) {
                runfile = argv[++i];
            } else {
                double v = strtod(argv[++i], &end);
                if (*end != '\0' || !(v >= 0)) {
                    fprintf(
                        stderr,
                        "svdtool report: %s: expected a number >= 0, found '%s'\n",
                        a, argv[i]);
                    return SVP_EXIT_BAD_INPUT;
                }
                *(!strcmp(a, "--peak-tflops") ? &peak : &flops) = v;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "svdtool report: unknown option '%s'\n", a);
            rusage(stderr);
            return SVP_EXIT_BAD_INPUT;
        } else {
            ++ninputs;
        }
    }
    if (out == NULL || ninputs == 0) {
        rusage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    if (runfile != NULL) {
        status = svdtool_report_load_run(runfile, &in);
    }
    if (status == SVP_OK && proffile != NULL) {
        json_error_t jerr;
        in.profile = json_load_file(proffile, 0, &jerr);
        if (in.profile == NULL) {
            svp_error("%s:%d:%d: %s", proffile, jerr.line, jerr.column, jerr.text);
            status = SVP_ERR_BAD_FILE;
        }
    }
    for (i = 1; i < argc && status == SVP_OK; ++i) {
        /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): i < argc */
        if (argv[i][0] == '-') {
            ++i; /* an option and its value */
            continue;
        }
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            status = svdtool_report_load_dir(argv[i], &r, &in);
        } else {
            status = svdtool_report_load_trace(&r, argv[i]);
        }
    }
    if (status == SVP_OK &&
        (hwfile != NULL || json_object_get(in.run, "hardware"))) {
        if (hwfile != NULL) {
            status = svp_hw_load(hwfile, err, sizeof(err), &in.hw);
        } else {
            json_t *h = json_object_get(in.run, "hardware");
            status    = svp_hw_load_string(svdtool_report_str(h, "text", ""),
                                           svdtool_report_str(h, "file", "run.json"),
                                           err, sizeof(err), &in.hw);
        }
        if (status != SVP_OK) {
            svp_error("%s", err);
        }
    }
    if (status != SVP_OK) {
        goto out;
    }
    r.flops_per_step = (flops >= 0) ? flops : svdtool_report_inputs_flops(&in);
    if (flops >= 0) {
        snprintf(in.flops_source, sizeof(in.flops_source),
                 "given with --flops-per-step");
    }
    r.peak_flops =
        (peak >= 0) ? peak * 1e12 : (in.hw ? in.hw->peak_tflops * 1e12 : 0);
    if (in.spec != NULL) {
        svp_plan_message(in.spec, &msg);
        r.message_bytes = msg.total;
    }
    status = svdtool_report_analyse(&r);
    if (status == SVP_OK) {
        status = svdtool_report_write(out, &r, &in);
    }
out:
    svdtool_report_cleanup(&r);
    json_decref(in.run);
    json_decref(in.profile);
    json_decref(in.shards);
    svp_spec_destroy(in.spec);
    svp_hw_destroy(in.hw);
    return svp_status_exit_code(status);
}
