/*
 * The planner's costs: what a step, an encode and a decode take, from the
 * spec and a hardware table or from a measured run's log (see plan.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/plan.h"
#include "plan/plan_int.h"
#include "common/util.h" /* svp_errf */
#include "common/errf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

svp_status_t svp_plan_costs_from_spec(const svp_spec_t *spec, const svp_hw_t *hw,
                                      char *errbuf, int errlen,
                                      svp_plan_costs_t *costs_p)
{
    svp_plan_costs_t c = {0};

    if (hw != NULL) {
        c.intra_node_gbps = hw->intra_node_gbps;
        c.inter_node_gbps = hw->inter_node_gbps;
        c.latency_s       = hw->latency_us * 1e-6;
        c.link_setup_s    = hw->setup_ms * 1e-3;
    }

    if (spec->model.kind == SVP_MODEL_DUMMY) {
        if (spec->model.dummy.cost != SVP_DUMMY_COST_SLEEP) {
            svp_errf(errbuf, errlen,
                     "%s: model.dummy.cost: the planner "
                     "has no time model for 'compute' (use 'sleep', or "
                     "--from-log with a measured run)",
                     spec->file);
            return SVP_ERR_UNSUPPORTED;
        }
        c.step_s   = spec->model.dummy.step_ms * 1e-3;
        c.encode_s = spec->model.dummy.encode_ms * 1e-3;
        c.decode_s = spec->model.dummy.decode_ms * 1e-3;
        snprintf(c.source, sizeof(c.source), "model.dummy (sleep)%s%s",
                 hw ? ", links from " : ", links free", hw ? hw->file : "");
    } else {
        double scale, pix, pix_ref;

        if (hw == NULL || hw->svd.unet_step_s <= 0) {
            svp_errf(errbuf, errlen,
                     "%s: model svd needs a hardware "
                     "table with an svd section (--hardware)",
                     spec->file);
            return SVP_ERR_UNSUPPORTED;
        }
        /*
         * The table's times are for one dtype.  A 16-bit run on tensor cores
         * and an f32 run differ several-fold, and by an amount no table here
         * states, so another dtype's figures are refused rather than scaled
         * (an f32 spec was once priced with the fp16 figures, unlabelled).
         */
        if (hw->svd.dtype != spec->dtype) {
            const char *stated = (hw->svd.dtype != SVP_DTYPE_LAST)
                                     ? svp_dtype_short_name(hw->svd.dtype)
                                     : NULL;

            svp_errf(errbuf, errlen,
                     "%s: dtype: %s: %s%s%s has no "
                     "figures for %s (its svd times are %s%s); plan "
                     "with --set dtype=%s, or time %s on the GPU with "
                     "bench/gpu-check.sh and pass its results with "
                     "--measured",
                     spec->file, svp_dtype_short_name(spec->dtype), hw->file,
                     hw->measured_file ? " with " : "",
                     hw->measured_file ? hw->measured_file : "",
                     svp_dtype_short_name(spec->dtype),
                     stated ? "for " : "of no stated dtype", stated ? stated : "",
                     stated ? stated : "f16", svp_dtype_short_name(spec->dtype));
            return SVP_ERR_UNSUPPORTED;
        }
        /* first order: work grows with pixels x frames x batch */
        pix     = (double)spec->video.height * spec->video.width;
        pix_ref = (double)hw->svd.height * hw->svd.width;
        scale   = pix * spec->video.num_frames * svp_plan_cfg_batch(spec) /
                (pix_ref * hw->svd.frames * hw->svd.batch);
        c.step_s   = hw->svd.unet_step_s * scale;
        c.encode_s = hw->svd.encode_s * pix / pix_ref;
        c.decode_s = hw->svd.decode_s * pix * spec->video.num_frames /
                     (pix_ref * hw->svd.frames);
        snprintf(c.source, sizeof(c.source),
                 "%s (%s), UNet scaled x%.3f from "
                 "batch %d x %d frames x %dx%d, %s%s%s, %s",
                 hw->file, hw->name, scale, hw->svd.batch, hw->svd.frames,
                 hw->svd.height, hw->svd.width,
                 hw->svd.source ? hw->svd.source : "quoted",
                 hw->measured_file ? " in " : "",
                 hw->measured_file ? hw->measured_file : "",
                 svp_dtype_short_name(hw->svd.dtype));
    }
    *costs_p = c;
    return SVP_OK;
}

svp_status_t svp_plan_costs_from_log(const char *file, char *errbuf, int errlen,
                                     svp_plan_costs_t *costs_p)
{
    static const char *kinds[]  = {"encode", "step", "decode"};
    double             sum[3]   = {0}, *dst[3];
    long               count[3] = {0};
    svp_plan_costs_t   c        = *costs_p;
    char              *line     = NULL;
    size_t             cap      = 0;
    long               lineno   = 0;
    FILE              *f;

    f = fopen(file, "r");
    if (f == NULL) {
        svp_errf(errbuf, errlen, "%s: %s", file, strerror(errno));
        return SVP_ERR_IO;
    }
    while (getline(&line, &cap, f) >= 0) {
        const char *tok = strstr(line, "svp-cost "), *k, *s;
        char       *end;
        double      v;
        int         i;

        ++lineno;
        if (tok == NULL) {
            /* svdworker's debug line: "sample 3 step 5/28 812.0 ms" */
            const char *smp = strstr(line, " sample ");
            int         sample, step, steps;
            double      ms;

            if (smp != NULL &&
                /* NOLINTNEXTLINE(cert-err34-c): only ms is used, and checked */
                sscanf(smp, " sample %d step %d/%d %lf ms", &sample, &step, &steps,
                       &ms) == 4 &&
                ms >= 0 && isfinite(ms)) {
                sum[1] += ms * 1e-3;
                ++count[1];
            }
            continue;
        }
        k = strstr(tok, " kind=");
        s = strstr(tok, " s=");
        for (i = 0; k != NULL && i < 3; ++i) {
            size_t n = strlen(kinds[i]);
            if (!strncmp(k + 6, kinds[i], n) &&
                (k[6 + n] == ' ' || k[6 + n] == '\n' || k[6 + n] == '\0')) {
                break;
            }
        }
        v = s ? strtod(s + 3, &end) : NAN;
        if (k == NULL || i == 3 || s == NULL || end == s + 3 || !(v >= 0) ||
            !isfinite(v)) {
            svp_errf(errbuf, errlen,
                     "%s:%ld: expected svp-cost "
                     "kind=step|encode|decode s=SECONDS",
                     file, lineno);
            free(line);
            fclose(f);
            return SVP_ERR_BAD_FILE;
        }
        sum[i] += v;
        ++count[i];
    }
    free(line);
    fclose(f);

    dst[0] = &c.encode_s;
    dst[1] = &c.step_s;
    dst[2] = &c.decode_s;
    for (int i = 0; i < 3; ++i) {
        if (count[i] > 0) {
            *dst[i] = sum[i] / count[i];
        }
    }
    snprintf(c.source, sizeof(c.source),
             "measured in %s (%ld steps, %ld "
             "encodes, %ld decodes)",
             file, count[1], count[0], count[2]);
    *costs_p = c;
    return SVP_OK;
}
