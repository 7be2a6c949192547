/*
 * svdtool report: the writers.  Every section is written once through a
 * small document writer that emits Markdown and HTML side by side; the
 * HTML is well-formed XML (XHTML with inline SVG), self-contained: inline
 * style, no script, no external reference.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_report_int.h"
#include "common/log.h"
#include "common/file.h"
#include "common/str.h"
#include "common/util.h"
#include "jobspec/layout.h"
#include "plan/plan.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the document writer ----------------------------------------------- */

typedef struct {
    FILE       *md, *html;
    const char *dir;
    int         row; /* rows written in the open table */
} rdoc_t;

static void rdoc_html_text(FILE *f, const char *s)
{
    for (; *s; ++s) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void rdoc_h(rdoc_t *d, int level, const char *text)
{
    fprintf(d->md, "\n%.*s %s\n\n", level, "####", text);
    fprintf(d->html, "<h%d>", level);
    rdoc_html_text(d->html, text);
    fprintf(d->html, "</h%d>\n", level);
}

static void rdoc_p(rdoc_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rdoc_p(rdoc_t *d, const char *fmt, ...)
{
    char    raw[2048], buf[2048 * 4];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* a run's own text (its job name, paths) reaches both files escaped */
    svp_str_escape(raw, strlen(raw), buf, sizeof(buf), SVP_STR_ESCAPE_TERMINAL);
    fprintf(d->md, "%s\n\n", buf);
    fprintf(d->html, "<p>");
    rdoc_html_text(d->html, buf);
    fprintf(d->html, "</p>\n");
}

/* A row of cells separated by '|'; the first row of a table is its header. */
static void rdoc_row(rdoc_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rdoc_row(rdoc_t *d, const char *fmt, ...)
{
    char    raw[2048], buf[2048 * 4], *cell, *save = NULL, *end;
    int     n = 0, i;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    svp_str_escape(raw, strlen(raw), buf, sizeof(buf), SVP_STR_ESCAPE_TERMINAL);
    if (d->row == 0) {
        fprintf(d->html, "<table>\n");
    }
    fprintf(d->md, "|");
    fprintf(d->html, "<tr>");
    for (cell = strtok_r(buf, "|", &save); cell != NULL;
         cell = strtok_r(NULL, "|", &save)) {
        fprintf(d->md, " %s |", cell);
        strtod(cell, &end);
        fprintf(d->html, !d->row            ? "<th>"
                         : (*cell && !*end) ? "<td class=\"n\">"
                                            : "<td>");
        rdoc_html_text(d->html, cell);
        fprintf(d->html, d->row ? "</td>" : "</th>");
        ++n;
    }
    fprintf(d->md, "\n");
    fprintf(d->html, "</tr>\n");
    if (d->row == 0) {
        fprintf(d->md, "|");
        for (i = 0; i < n; ++i) {
            fprintf(d->md, "---|");
        }
        fprintf(d->md, "\n");
    }
    d->row++;
}

static void rdoc_table_end(rdoc_t *d)
{
    if (d->row > 0) {
        fprintf(d->html, "</table>\n");
        fprintf(d->md, "\n");
    }
    d->row = 0;
}

/* A picture: inline in the HTML, a file beside report.md. */
static svp_status_t rdoc_svg(rdoc_t *d, const char *name, const char *alt,
                             void (*draw)(const void *arg, FILE *out, int xmlns),
                             const void *arg)
{
    char         path[4096];
    FILE        *f;
    char        *text = NULL;
    size_t       len  = 0;
    svp_status_t status;

    f = open_memstream(&text, &len);
    if (f == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    draw(arg, f, 1);
    fclose(f);
    snprintf(path, sizeof(path), "%s/%s", d->dir, name);
    status = svp_file_write_atomic(path, text, len);
    free(text);
    if (status != SVP_OK) {
        svp_error("cannot write %s: %s", path, svp_status_string(status));
        return status;
    }
    fprintf(d->md, "![%s](%s)\n\n", alt, name);
    fprintf(d->html, "<div class=\"fig\">\n");
    draw(arg, d->html, 0);
    fprintf(d->html, "</div>\n");
    return SVP_OK;
}

/* ---- the sections ------------------------------------------------------ */

static void rsvg_timeline(const void *arg, FILE *out, int xmlns)
{
    svdtool_report_svg_timeline(arg, out, xmlns);
}

/* Stacked bars: busy, waiting for input, waiting for sends, other idle. */
static void rsvg_util(const void *arg, FILE *out, int xmlns)
{
    const svdtool_report_t *r  = arg;
    double                  pw = 900, x0 = 90, h = 30 + r->world * 24 + 30;
    int                     q, k;

    fprintf(out,
            "<svg %sviewBox=\"0 0 1100 %.0f\" width=\"1100\" height=\"%.0f\" "
            "font-family=\"sans-serif\">\n<title>utilisation per rank</title>\n",
            xmlns ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", h, h);
    for (q = 0; q < r->world; ++q) {
        const svdtool_report_rank_t *rk = &r->ranks[q];
        double             parts[4]     = {rk->busy, rk->wait_recv, rk->wait_send,
                                           rk->wall - rk->busy - rk->wait_recv - rk->wait_send};
        static const char *fills[4] = {"#43a047", "#e53935", "#fb8c00", "#bdbdbd"};
        double             x = x0, y = 20 + q * 24;

        fprintf(out, "<text x=\"6\" y=\"%.0f\" font-size=\"12\">rank %d</text>\n",
                y + 13, q);
        for (k = 0; k < 4; ++k) {
            double w =
                (r->makespan > 0) ? SVP_MAX(0, parts[k]) / r->makespan * pw : 0;
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"18\" "
                    "fill=\"%s\"/>\n",
                    x, y, w, fills[k]);
            x += w;
        }
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">%.0f%% busy</text>\n",
                x + 6, y + 13, rk->wall > 0 ? 100 * rk->busy / rk->wall : 0);
    }
    fprintf(
        out,
        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">green: busy, red: waiting "
        "for input, orange: waiting for sends, grey: other; bar length: share of the "
        "makespan</text>\n</svg>\n",
        x0, h - 8);
}

static void rsec_summary(rdoc_t *d, const svdtool_report_t *r,
                         const svdtool_report_inputs_t *in)
{
    json_t *hosts = in->run ? json_object_get(in->run, "hosts") : NULL;
    size_t  i;
    char    hl[512] = "";

    rdoc_h(d, 2, "Run");
    rdoc_row(d, "what|value");
    if (in->run != NULL) {
        rdoc_row(d, "job|%s", svdtool_report_str(in->run, "job", "?"));
        rdoc_row(d, "spec|%s", svdtool_report_str(in->run, "spec_file", "?"));
        rdoc_row(d, "placement|%s",
                 svdtool_report_str(json_object_get(in->run, "layout"), "placement",
                                    "?"));
        if (json_object_get(json_object_get(in->run, "layout"), "stages") != NULL) {
            json_int_t st = json_integer_value(
                json_object_get(json_object_get(in->run, "layout"), "stages"));
            json_int_t gr = json_integer_value(
                json_object_get(json_object_get(in->run, "layout"), "groups"));
            rdoc_row(d, "layout|%lld pipeline%s x %lld stage%s", (long long)gr,
                     (gr == 1) ? "" : "s", (long long)st, (st == 1) ? "" : "s");
        }
        rdoc_row(d, "backend, dtype, threads|%s, %s, %s",
                 svdtool_report_str(in->run, "backend", "?"),
                 svdtool_report_str(in->run, "dtype", "?"),
                 svdtool_report_str(in->run, "threads", "?"));
        for (i = 0; i < json_array_size(hosts) && strlen(hl) < sizeof(hl) - 80;
             ++i) {
            const char *h = json_string_value(json_array_get(hosts, i));
            if (i == 0 ||
                strcmp(h ? h : "?",
                       json_string_value(json_array_get(hosts, i - 1))
                           ? json_string_value(json_array_get(hosts, i - 1))
                           : "?")) {
                snprintf(hl + strlen(hl), sizeof(hl) - strlen(hl), "%s%s",
                         hl[0] ? ", " : "", h ? h : "?");
            }
        }
        rdoc_row(d, "hosts|%s", hl[0] ? hl : "?");
        rdoc_row(d, "build|svdpipe %s, configure%s",
                 svdtool_report_str(json_object_get(in->run, "svdpipe"), "version",
                                    "?"),
                 svdtool_report_str(json_object_get(in->run, "svdpipe"), "configure",
                                    ""));
    }
    if (in->hw != NULL) {
        rdoc_row(d, "hardware table|%s (%s)%s", in->hw->name,
                 in->hw->description ? in->hw->description : "",
                 in->hw->peak_tflops > 0 ? "" : ", no peak_tflops");
    }
    rdoc_row(d, "ranks|%d", r->world);
    rdoc_row(d, "samples|%d", r->samples);
    rdoc_row(d, "makespan|%.3f s", r->makespan);
    if (r->steady_samples_per_s > 0) {
        rdoc_row(d, "samples/s|%.4f overall, %.4f in steady state", r->samples_per_s,
                 r->steady_samples_per_s);
    } else {
        rdoc_row(
            d,
            "samples/s|%.4f overall (no sample completed in a steady state: too "
            "few samples for the ranks)",
            r->samples_per_s);
    }
    rdoc_row(
        d,
        "bubble|%.1f%% of %d x makespan (fill %.1f%%, steady %.1f%%, drain %.1f%%)",
        100 * r->bubble, r->world, 100 * r->bubble_fill, 100 * r->bubble_steady,
        100 * r->bubble_drain);
    rdoc_table_end(d);
}

/* A webdataset run's shards, from the task's listing (job/wds.h). */
static void rsec_outputs(rdoc_t *d, const svdtool_report_inputs_t *in)
{
    json_t    *v;
    size_t     k;
    int        packed = 0, timed = 0;
    json_int_t bytes = 0, samples = 0;
    double     seconds = 0, longest = 0, s;

    if (in->shards == NULL) {
        return;
    }
    json_array_foreach(json_object_get(in->shards, "shards"), k, v)
    {
        if (strcmp(svdtool_report_str(v, "status", ""), "packed") != 0) {
            continue;
        }
        packed++;
        bytes += json_integer_value(json_object_get(v, "bytes"));
        samples += json_integer_value(json_object_get(v, "successes"));
        if (json_is_number(json_object_get(v, "seconds"))) {
            s = json_number_value(json_object_get(v, "seconds"));
            seconds += s;
            longest = (s > longest) ? s : longest;
            timed++;
        }
    }
    rdoc_h(d, 2, "Outputs");
    rdoc_row(d, "what|value");
    rdoc_row(d, "format|webdataset, %lld samples per shard",
             (long long)json_integer_value(
                 json_object_get(in->shards, "samples_per_shard")));
    rdoc_row(d, "shards|%d packed of %lld, %lld samples, %.1f MB", packed,
             (long long)json_integer_value(
                 json_object_get(in->shards, "shards_count")),
             (long long)samples, (double)bytes / 1e6);
    if (timed > 0) {
        rdoc_row(d,
                 "packing|%d shards in %.2f s (on rank 0's packer, beside the "
                 "pipeline), the longest %.2f s",
                 timed, seconds, longest);
    }
    rdoc_table_end(d);
}

static svp_status_t rsec_timeline(rdoc_t *d, const svdtool_report_t *r)
{
    rdoc_h(d, 2, "Timeline");
    rdoc_p(
        d,
        "One lane per rank. Blocks are a rank's steps of one sample (the number is "
        "the sample), E an encode, D a decode; red strips under a lane are waits "
        "for input, orange strips over it waits for a send to complete; arrows are "
        "the hand-offs of samples %d to %d. Steady state from %.3f s to %.3f s.",
        r->window_lo, r->window_hi - 1, r->fill_end, r->drain_start);
    return rdoc_svg(d, "timeline.svg", "timeline", rsvg_timeline, r);
}

static svp_status_t rsec_util(rdoc_t *d, const svdtool_report_t *r)
{
    int q;

    rdoc_h(d, 2, "Utilisation");
    rdoc_row(
        d, "rank|host|wall s|busy s|busy %%|waiting for input s|waiting for sends s|"
           "idle s|steps|encodes|decodes");
    for (q = 0; q < r->world; ++q) {
        const svdtool_report_rank_t *rk = &r->ranks[q];
        rdoc_row(d, "%d|%s|%.3f|%.3f|%.1f|%.3f|%.3f|%.3f|%d|%d|%d", q,
                 rk->host[0] ? rk->host : "?", rk->wall, rk->busy,
                 rk->wall > 0 ? 100 * rk->busy / rk->wall : 0, rk->wait_recv,
                 rk->wait_send, rk->idle, rk->steps, rk->encodes, rk->decodes);
    }
    rdoc_table_end(d);
    rdoc_p(
        d,
        "Bubble: %.1f%% of the ranks' time over the makespan is idle: %.1f%% in the "
        "fill (until %.3f s), %.1f%% in steady state, %.1f%% in the drain (from %.3f "
        "s). In steady state the ranks are %.1f%% busy and complete %.4f samples/s "
        "(%.4f overall).",
        100 * r->bubble, 100 * r->bubble_fill, r->fill_end, 100 * r->bubble_steady,
        100 * r->bubble_drain, r->drain_start, 100 * r->steady_util,
        r->steady_samples_per_s, r->samples_per_s);
    return rdoc_svg(d, "utilisation.svg", "utilisation", rsvg_util, r);
}

static double rmean(const svdtool_report_t *r, svdtool_report_kind_t kind)
{
    double s = 0;
    int    n = 0, q, i;

    for (q = 0; q < r->world; ++q) {
        for (i = 0; i < r->ranks[q].nev; ++i) {
            if (r->ranks[q].ev[i].kind == kind) {
                s += r->ranks[q].ev[i].t1 - r->ranks[q].ev[i].t0;
                ++n;
            }
        }
    }
    return n ? s / n : 0;
}

static void rsec_plan(rdoc_t *d, const svdtool_report_t *r,
                      const svdtool_report_inputs_t *in, json_t *figs)
{
    svp_plan_params_t  pp;
    svp_plan_result_t *res = NULL;
    char               err[512];
    const char        *basis;
    json_t            *jr;
    double            *busy, makespan, busy_sum, rate, bubble, first = -1, lat = 0;
    int                q, g, c, stages, groups, pairs;
    svp_layout_t       job;
    svp_plan_message_t msg;

    rdoc_h(d, 2, "Predicted against measured");
    if (in->spec == NULL) {
        rdoc_p(d,
               "No run.json beside the traces: the planner needs the job's spec.");
        return;
    }
    memset(&pp, 0, sizeof(pp));
    if (svp_plan_costs_from_spec(in->spec, in->hw, err, sizeof(err), &pp.costs) ==
        SVP_OK) {
        basis = in->hw ? "the spec and the hardware table" : "the spec";
    } else {
        /* no table for this model: the planner on the measured unit costs
         * still shows what the schedule alone explains */
        memset(&pp.costs, 0, sizeof(pp.costs));
        pp.costs.step_s   = rmean(r, SVDTOOL_REPORT_STEP);
        pp.costs.encode_s = rmean(r, SVDTOOL_REPORT_ENCODE);
        pp.costs.decode_s = rmean(r, SVDTOOL_REPORT_DECODE);
        basis =
            "the measured mean step, encode and decode times (no hardware table for "
            "this model)";
    }
    pp.world = r->world;
    pp.ranks_per_node =
        (int)json_integer_value(json_object_get(in->run, "ranks_per_node"));
    if (pp.ranks_per_node < 1) {
        pp.ranks_per_node = r->world;
    }
    pp.steps = in->spec->steps;
    /* a resumed run computed only the samples it found unfinished */
    pp.samples = in->spec->samples;
    if (json_integer_value(
            json_object_get(json_object_get(in->run, "layout"), "samples")) > 0) {
        /* the job's sample list (samples is a cap, 0 for all of them) */
        pp.samples = (int)json_integer_value(
            json_object_get(json_object_get(in->run, "layout"), "samples"));
    }
    if (json_integer_value(json_object_get(json_object_get(in->run, "layout"),
                                           "samples_run")) > 0) {
        pp.samples = (int)json_integer_value(
            json_object_get(json_object_get(in->run, "layout"), "samples_run"));
    }
    pp.placement     = in->spec->pipeline.placement;
    pp.message_bytes = r->message_bytes;
    /* G pipelines of S stages of C ranks (pipeline.stages and
     * guidance_parallel): each group is planned as the worker deals it,
     * position j to group j mod G */
    if (svp_layout_of_spec(in->spec, r->world, NULL, 0, &job) != SVP_OK &&
        svp_layout_make(in->spec->steps, r->world, 0, 1, pp.placement, NULL, 0,
                        &job) != SVP_OK) {
        rdoc_p(d, "The planner cannot model this run (%d ranks, %d steps).",
               r->world, in->spec->steps);
        return;
    }
    pairs  = job.pairs;
    stages = job.stages;
    groups = job.groups;
    svp_plan_message(in->spec, &msg);
    pp.pairs      = pairs;
    pp.half_bytes = msg.latent;
    busy          = calloc((size_t)r->world, sizeof(*busy));
    if (busy == NULL) {
        rdoc_p(d, "Out of memory for the planner's figures.");
        return;
    }
    makespan = busy_sum = 0;
    for (g = 0; g < groups && g < pp.samples; ++g) {
        svp_plan_params_t gp = pp;

        gp.stages     = stages;
        gp.samples    = svp_layout_group_samples(&job, pp.samples, g);
        gp.first_rank = svp_layout_rank(&job, g, 0, 0);
        if (svp_plan_run(&gp, &res) != SVP_OK) {
            rdoc_p(
                d,
                "The planner cannot model this run (%d ranks, %d stages, %d steps, "
                "%d samples).",
                pp.world, stages, pp.steps, pp.samples);
            free(busy);
            return;
        }
        for (q = 0; q < stages; ++q) {
            for (c = 0; c < pairs; ++c) {
                /* a pair's second rank runs the same steps; it shares the
                 * decodes of the last stage and has none elsewhere */
                double b = res->ranks[q].busy_s -
                           (c > 0 && q < stages - 1
                                ? res->ranks[q].decodes * pp.costs.decode_s
                                : 0);

                busy[svp_layout_rank(&job, g, q, c)] = b;
                busy_sum += b;
            }
        }
        first = (first < 0 || res->first_out_s < first) ? res->first_out_s : first;
        lat   = (res->latency_s > lat) ? res->latency_s : lat;
        makespan = (res->makespan_s > makespan) ? res->makespan_s : makespan;
        svp_plan_result_destroy(res);
        res = NULL;
    }
    rate   = (makespan > 0) ? pp.samples / makespan : 0;
    bubble = (makespan > 0) ? 1 - busy_sum / (r->world * makespan) : 0;
    rdoc_p(
        d,
        "The planner (svdlaunch plan) fed with %s: step %.4f s, encode %.4f s, decode "
        "%.4f s per sample.",
        basis, pp.costs.step_s, pp.costs.encode_s, pp.costs.decode_s);
    rdoc_row(d, "rank|predicted busy s|measured busy s|error %%");
    jr = json_array();
    for (q = 0; q < r->world; ++q) {
        double m = r->ranks[q].busy, p = busy[q];
        rdoc_row(d, "%d|%.3f|%.3f|%+.1f", q, p, m, m > 0 ? 100 * (p - m) / m : 0);
        json_array_append_new(jr, json_pack("{s:f, s:f}", "predicted_busy_s", p,
                                            "measured_busy_s", m));
    }
    rdoc_row(d, "makespan s|%.3f|%.3f|%+.1f", makespan, r->makespan,
             r->makespan > 0 ? 100 * (makespan - r->makespan) / r->makespan : 0);
    rdoc_row(d, "samples/s|%.4f|%.4f|%+.1f", rate, r->samples_per_s,
             r->samples_per_s > 0
                 ? 100 * (rate - r->samples_per_s) / r->samples_per_s
                 : 0);
    rdoc_row(d, "bubble %%|%.1f|%.1f|-", 100 * bubble, 100 * r->bubble);
    rdoc_row(d, "first outputs s|%.3f|-|-", first);
    rdoc_row(d, "latency of a sample s (steady state)|%.3f|-|-", lat);
    rdoc_table_end(d);
    json_object_set_new(figs, "plan",
                        json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, "
                                  "s:f, s:f, s:o}",
                                  "basis", basis, "stages", stages, "groups", groups,
                                  "pairs", pairs, "makespan_s", makespan,
                                  "samples_per_s", rate, "bubble", bubble,
                                  "first_out_s", first, "latency_s", lat, "ranks",
                                  jr));
    free(busy);
}

static void rsec_mfu(rdoc_t *d, const svdtool_report_t *r,
                     const svdtool_report_inputs_t *in)
{
    int q;

    rdoc_h(d, 2, "Model FLOP utilisation");
    if (r->flops_per_step <= 0) {
        rdoc_p(
            d,
            "No FLOP count: the dummy model does no model work (give --flops-per-step "
            "to count its steps as model calls).");
        return;
    }
    rdoc_p(d, "%.4g FLOPs per step (%s); peak %s.", r->flops_per_step,
           in->flops_source,
           r->peak_flops > 0 ? "from the hardware table"
                             : "unknown (no peak_tflops given)");
    rdoc_row(d, "rank|steps|time in steps s|achieved TFLOP/s|MFU %%");
    for (q = 0; q < r->world; ++q) {
        const svdtool_report_rank_t *rk = &r->ranks[q];
        double a = rk->step_s > 0 ? rk->steps * r->flops_per_step / rk->step_s : 0;
        if (r->peak_flops > 0) {
            rdoc_row(d, "%d|%d|%.3f|%.3f|%.3g", q, rk->steps, rk->step_s, a * 1e-12,
                     100 * a / r->peak_flops);
        } else {
            rdoc_row(d, "%d|%d|%.3f|%.3f|-", q, rk->steps, rk->step_s, a * 1e-12);
        }
    }
    if (r->peak_flops > 0) {
        rdoc_row(d, "all (over the makespan)|%.0f|%.3f|%.3f|%.3g",
                 r->flops_total / r->flops_per_step, r->makespan,
                 r->achieved_flops * 1e-12, 100 * r->mfu);
    } else {
        rdoc_row(d, "all (over the makespan)|%.0f|%.3f|%.3f|-",
                 r->flops_total / r->flops_per_step, r->makespan,
                 r->achieved_flops * 1e-12);
    }
    rdoc_table_end(d);
}

typedef struct {
    const char *name;
    double      s, flops;
    long        count;
} rprof_row_t;

static int rprof_cmp(const void *a, const void *b)
{
    const rprof_row_t *x = a, *y = b;

    return (x->s < y->s) - (x->s > y->s);
}

/* The UNet part of a profile: its root range and how many calls it holds. */
typedef struct {
    json_t     *ranges;
    const char *root; /* "unet b2 f25 72x128" */
    size_t      root_len;
    double      calls, s; /* s: per call */
} rprof_t;

static int rprof_find(json_t *prof, rprof_t *p)
{
    json_t *e;
    size_t  i;

    memset(p, 0, sizeof(*p));
    p->ranges = json_object_get(json_object_get(prof, "profile"), "ranges");
    json_array_foreach(p->ranges, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (json_integer_value(json_object_get(e, "depth")) == 0 && name != NULL &&
            !strncmp(name, "unet", 4)) {
            p->root     = name;
            p->root_len = strlen(name);
            p->calls    = (double)json_integer_value(json_object_get(e, "count"));
            p->s = json_number_value(json_object_get(e, "s")) / SVP_MAX(1, p->calls);
            return p->calls > 0;
        }
    }
    return 0;
}

/* A range under the UNet root: its name below the root, else NULL. */
static const char *rprof_under(const rprof_t *p, json_t *e, int depth)
{
    const char *name = json_string_value(json_object_get(e, "name"));

    if (name == NULL || strncmp(name, p->root, p->root_len) ||
        name[p->root_len] != '/') {
        return NULL;
    }
    if (depth >= 0 && json_integer_value(json_object_get(e, "depth")) != depth) {
        return NULL;
    }
    return name + p->root_len + 1;
}

static void rsvg_profile(const void *arg, FILE *out, int xmlns)
{
    const rprof_t *p = arg;
    json_t        *e;
    size_t         i;
    double         y = 10;
    int            n = 0;

    json_array_foreach(p->ranges, i, e)
    {
        n += (rprof_under(p, e, 1) != NULL);
    }
    fprintf(
        out,
        "<svg %sviewBox=\"0 0 1100 %d\" width=\"1100\" height=\"%d\" "
        "font-family=\"sans-serif\">\n<title>time per block of one UNet call</title>\n",
        xmlns ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", 20 + n * 20,
        20 + n * 20);
    json_array_foreach(p->ranges, i, e)
    {
        const char *name = rprof_under(p, e, 1);
        double      s    = json_number_value(json_object_get(e, "s")) / p->calls;
        double      w    = (p->s > 0) ? s / p->s * 850 : 0;

        if (name == NULL) {
            continue;
        }
        fprintf(out, "<text x=\"6\" y=\"%.0f\" font-size=\"12\">", y + 12);
        rdoc_html_text(out, name);
        fprintf(
            out,
            "</text>\n<rect x=\"120\" y=\"%.0f\" width=\"%.1f\" height=\"15\" "
            "fill=\"#5c6bc0\"/>\n<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">%.1f ms "
            "(%.0f%%)</text>\n",
            y, w, 126 + w, y + 12, s * 1e3, p->s > 0 ? 100 * s / p->s : 0);
        y += 20;
    }
    fprintf(out, "</svg>\n");
}

static svp_status_t rsec_profile(rdoc_t *d, const svdtool_report_t *r,
                                 const svdtool_report_inputs_t *in)
{
    json_t     *prof = in->profile, *ops, *e, *shape;
    rprof_row_t rows[512];
    rprof_t     p;
    size_t      i;
    int         n = 0, k;
    double      flops;

    rdoc_h(d, 2, "Profile of one UNet call");
    if (prof == NULL || !rprof_find(prof, &p)) {
        rdoc_p(
            d,
            "No profile: run the job with log.profile: true, or give --profile "
            "PROFILE.json written by `svdtool unet --profile` on the same backend "
            "and shape.");
        return SVP_OK;
    }
    ops   = json_object_get(json_object_get(prof, "profile"), "ops");
    shape = json_object_get(prof, "shape");
    if (!strcmp(svdtool_report_str(prof, "kind", ""), "run")) {
        /* one call a step runs the guidance batch; a guidance pair's rank
         * calls the UNet on its half, half a step's FLOPs */
        flops = r->flops_per_step /
                ((in->spec != NULL && in->spec->video.max_guidance > 1.0 &&
                  in->spec->pipeline.guidance_parallel > 1)
                     ? 2
                     : 1);
        rdoc_p(
            d,
            "Collected in the run (log.profile) on rank %d: %.0f UNet calls (%s), "
            "%.3f s per call, %.4g counted FLOPs, %.3f TFLOP/s.",
            (int)json_integer_value(json_object_get(prof, "rank")), p.calls, p.root,
            p.s, flops, p.s > 0 ? flops / p.s * 1e-12 : 0);
    } else {
        flops = json_number_value(json_object_get(prof, "flops_counted"));
        rdoc_p(
            d,
            "Measured by svdtool unet --profile on the %s backend (%d threads), batch "
            "%d, %d frames, %dx%d latents: %.3f s per call, %.4g counted FLOPs, %.3f "
            "TFLOP/s.",
            svdtool_report_str(prof, "backend", "?"),
            (int)json_integer_value(json_object_get(prof, "threads")),
            (int)json_integer_value(json_object_get(shape, "batch")),
            (int)json_integer_value(json_object_get(shape, "frames")),
            (int)json_integer_value(json_object_get(shape, "height")),
            (int)json_integer_value(json_object_get(shape, "width")), p.s, flops,
            p.s > 0 ? flops / p.s * 1e-12 : 0);
    }
    if (rdoc_svg(d, "profile.svg", "time per block", rsvg_profile, &p) != SVP_OK) {
        return SVP_ERR_IO;
    }
    rdoc_h(d, 3, "Top blocks");
    json_array_foreach(p.ranges, i, e)
    {
        const char *name = rprof_under(&p, e, -1);
        if (name == NULL || strchr(name, '/') == NULL || n == 512) {
            continue; /* inside the top-level blocks: resnets, transformers, halves */
        }
        rows[n++] =
            (rprof_row_t){name, json_number_value(json_object_get(e, "s")) / p.calls,
                          json_number_value(json_object_get(e, "flops")) / p.calls,
                          (long)(json_integer_value(json_object_get(e, "count")) /
                                 p.calls)};
    }
    qsort(rows, n, sizeof(rows[0]), rprof_cmp);
    rdoc_row(d, "block|calls|ms|%% of call|GFLOP|achieved GFLOP/s");
    for (k = 0; k < n && k < 15; ++k) {
        rdoc_row(d, "%s|%ld|%.2f|%.1f|%.3f|%.1f", rows[k].name, rows[k].count,
                 rows[k].s * 1e3, p.s > 0 ? 100 * rows[k].s / p.s : 0,
                 rows[k].flops * 1e-9,
                 rows[k].s > 0 ? rows[k].flops / rows[k].s * 1e-9 : 0);
    }
    rdoc_table_end(d);
    rdoc_h(d, 3, "Per op kind");
    n = 0;
    json_array_foreach(ops, i, e)
    {
        const char *root = json_string_value(json_object_get(e, "root"));
        if (root != NULL && strcmp(root, p.root)) {
            continue; /* the VAE's or CLIP's ops */
        }
        if (n < 512) {
            rows[n++] =
                (rprof_row_t){json_string_value(json_object_get(e, "kind")),
                              json_number_value(json_object_get(e, "s")) / p.calls,
                              json_number_value(json_object_get(e, "flops")) /
                                  p.calls,
                              (long)(json_integer_value(
                                         json_object_get(e, "count")) /
                                     p.calls)};
        }
    }
    qsort(rows, n, sizeof(rows[0]), rprof_cmp);
    rdoc_row(d, "op|calls|ms|%% of call|GFLOP|achieved GFLOP/s");
    for (k = 0; k < n; ++k) {
        rdoc_row(d, "%s|%ld|%.2f|%.1f|%.3f|%.1f", rows[k].name ? rows[k].name : "?",
                 rows[k].count, rows[k].s * 1e3, p.s > 0 ? 100 * rows[k].s / p.s : 0,
                 rows[k].flops * 1e-9,
                 rows[k].s > 0 ? rows[k].flops / rows[k].s * 1e-9 : 0);
    }
    rdoc_table_end(d);
    return SVP_OK;
}

static int rwait_cmp(const void *a, const void *b)
{
    const svdtool_report_ev_t *const *x = a, *const *y = b;
    double dx = (*x)->t1 - (*x)->t0, dy = (*y)->t1 - (*y)->t0;

    return (dx < dy) - (dx > dy);
}

static void rsec_handoffs(rdoc_t *d, const svdtool_report_t *r, json_t *figs)
{
    const svdtool_report_ev_t **waits;
    int                         a, b, i, q, n, nw = 0;
    json_t                     *links = json_array();
    char                        bw[32];

    rdoc_h(d, 2, "Hand-offs");
    rdoc_p(
        d,
        "A hand-off is where a sample's work moves to another rank; its gap is from "
        "the end of the sender's work to the start of the receiver's (transfer plus "
        "any queueing at the receiver), so bytes / shortest gap bounds the link's "
        "bandwidth from below. %.0f bytes per message.",
        r->message_bytes);
    rdoc_row(d, "link|messages|MB|shortest gap ms|median gap ms|bandwidth >= GB/s");
    for (a = 0; a < r->world; ++a) {
        for (b = 0; b < r->world; ++b) {
            double gmin = INFINITY, *gaps;
            n           = 0;
            for (i = 0; i < r->nhandoffs; ++i) {
                n += (r->handoffs[i].src == a && r->handoffs[i].dst == b);
            }
            if (n == 0) {
                continue;
            }
            gaps = calloc(n, sizeof(*gaps));
            n    = 0;
            for (i = 0; i < r->nhandoffs && gaps; ++i) {
                if (r->handoffs[i].src == a && r->handoffs[i].dst == b) {
                    gaps[n] =
                        SVP_MAX(0, r->handoffs[i].t_used - r->handoffs[i].t_sent);
                    gmin = SVP_MIN(gmin, gaps[n]);
                    ++n;
                }
            }
            if (gaps == NULL) {
                return;
            }
            /* the median, by selection on a small array */
            for (i = 0; i < n; ++i) {
                int j, less = 0;
                for (j = 0; j < n; ++j) {
                    less += gaps[j] < gaps[i];
                }
                if (less == n / 2) {
                    break;
                }
            }
            if (gmin > 0 && r->message_bytes > 0) {
                snprintf(bw, sizeof(bw), "%.3f", r->message_bytes / gmin * 1e-9);
            } else {
                snprintf(bw, sizeof(bw), "-");
            }
            rdoc_row(d, "%d -> %d|%d|%.3f|%.3f|%.3f|%s", a, b, n,
                     n * r->message_bytes * 1e-6, gmin * 1e3,
                     (i < n ? gaps[i] : gmin) * 1e3, bw);
            json_array_append_new(links, json_pack("{s:i, s:i, s:i, s:f, s:f}",
                                                   "from", a, "to", b, "messages", n,
                                                   "bytes", n * r->message_bytes,
                                                   "min_gap_s", gmin));
            free(gaps);
        }
    }
    rdoc_table_end(d);
    json_object_set_new(figs, "links", links);

    for (q = 0; q < r->world; ++q) {
        nw += r->ranks[q].nev;
    }
    waits =
        calloc(nw + 1,
               sizeof(*waits)); /* NOLINT(bugprone-sizeof-expression): pointers */
    if (waits == NULL) {
        return;
    }
    nw = 0;
    for (q = 0; q < r->world; ++q) {
        for (i = 0; i < r->ranks[q].nev; ++i) {
            if (r->ranks[q].ev[i].kind == SVDTOOL_REPORT_WAIT_RECV ||
                r->ranks[q].ev[i].kind == SVDTOOL_REPORT_WAIT_SEND) {
                waits[nw++] = &r->ranks[q].ev[i];
            }
        }
    }
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    qsort(waits, nw, sizeof(*waits), rwait_cmp);
    rdoc_h(d, 3, "Slowest waits");
    rdoc_row(d, "rank|waiting for|sample|at s|ms");
    for (i = 0; i < nw && i < 10; ++i) {
        for (q = 0; q < r->world; ++q) {
            if (waits[i] >= r->ranks[q].ev &&
                waits[i] < r->ranks[q].ev + r->ranks[q].nev) {
                break;
            }
        }
        rdoc_row(d, "%d|%s|%d|%.3f|%.2f", q,
                 waits[i]->kind == SVDTOOL_REPORT_WAIT_RECV ? "input" : "a send",
                 waits[i]->sample, waits[i]->t0,
                 (waits[i]->t1 - waits[i]->t0) * 1e3);
    }
    if (nw == 0) {
        rdoc_row(d, "-|no wait over 0.1 ms was recorded|-|-|-");
    }
    rdoc_table_end(d);
    free(waits);
}

static json_t *rfigures(const svdtool_report_t *r)
{
    json_t *ranks = json_array();
    int     q;

    for (q = 0; q < r->world; ++q) {
        const svdtool_report_rank_t *rk = &r->ranks[q];
        json_array_append_new(ranks,
                              json_pack("{s:i, s:s, s:f, s:f, s:f, s:f, s:f, s:f, "
                                        "s:i, s:i, s:i}",
                                        "rank", q, "host", rk->host, "wall_s",
                                        rk->wall, "busy_s", rk->busy, "idle_s",
                                        rk->idle, "wait_recv_s", rk->wait_recv,
                                        "wait_send_s", rk->wait_send, "step_s",
                                        rk->step_s, "steps", rk->steps, "encodes",
                                        rk->encodes, "decodes", rk->decodes));
    }
    return json_pack(
        "{s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
        "s:f, s:f, s:o}",
        "world", r->world, "samples", r->samples, "makespan_s", r->makespan,
        "samples_per_s", r->samples_per_s, "steady_samples_per_s",
        r->steady_samples_per_s, "fill_end_s", r->fill_end, "drain_start_s",
        r->drain_start, "bubble", r->bubble, "bubble_fill", r->bubble_fill,
        "bubble_steady", r->bubble_steady, "bubble_drain", r->bubble_drain,
        "steady_util", r->steady_util, "flops_per_step", r->flops_per_step,
        "achieved_flops", r->achieved_flops, "mfu", r->mfu, "ranks", ranks);
}

static const char rhtml_head[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n"
    "<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
    "<meta charset=\"UTF-8\"/>\n<title>svdpipe run report</title>\n<style>\n"
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1440px}\n"
    "table{border-collapse:collapse;margin:8px 0 16px}\n"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}\n"
    "th{background:#f0f0f0}\ntd.n{text-align:right}\n"
    ".fig{overflow-x:auto;margin:8px 0 16px}\nh2{border-bottom:1px solid #ddd}\n"
    "</style>\n</head>\n<body>\n";

/* Writes report.md, report.html, report.json and the pictures into dir. */
svp_status_t svdtool_report_write(const char *dir, svdtool_report_t *r,
                                  svdtool_report_inputs_t *in)
{
    char        *md = NULL, *html = NULL, *js = NULL, path[4096];
    size_t       md_len = 0, html_len = 0;
    rdoc_t       d = {0};
    json_t      *figs;
    svp_status_t status;

    status = svp_mkdir_p(dir, 0755);
    if (status != SVP_OK) {
        svp_error("cannot create %s: %s", dir, svp_status_string(status));
        return status;
    }
    d.dir  = dir;
    d.md   = open_memstream(&md, &md_len);
    d.html = open_memstream(&html, &html_len);
    if (d.md == NULL || d.html == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    figs = rfigures(r);
    fputs(rhtml_head, d.html);
    rdoc_h(&d, 1, "svdpipe run report");
    rsec_summary(&d, r, in);
    rsec_outputs(&d, in);
    status = rsec_timeline(&d, r);
    if (status == SVP_OK) {
        status = rsec_util(&d, r);
    }
    if (status == SVP_OK) {
        rsec_plan(&d, r, in, figs);
        rsec_mfu(&d, r, in);
        status = rsec_profile(&d, r, in);
    }
    if (status == SVP_OK) {
        rsec_handoffs(&d, r, figs);
    }
    fputs("</body>\n</html>\n", d.html);
    fclose(d.md);
    fclose(d.html);
    js = json_dumps(figs, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(figs);
    if (status == SVP_OK) {
        snprintf(path, sizeof(path), "%s/report.md", dir);
        status = svp_file_write_atomic(path, md, md_len);
    }
    if (status == SVP_OK) {
        snprintf(path, sizeof(path), "%s/report.json", dir);
        status =
            js ? svp_file_write_atomic(path, js, strlen(js)) : SVP_ERR_NO_MEMORY;
    }
    if (status == SVP_OK) {
        snprintf(path, sizeof(path), "%s/report.html", dir);
        status = svp_file_write_atomic(path, html, html_len);
    }
    if (status == SVP_OK) {
        printf("report: %s/report.html (and report.md, report.json)\n", dir);
    } else {
        svp_error("cannot write the report into %s: %s", dir,
                  svp_status_string(status));
    }
    free(md);
    free(html);
    free(js);
    return status;
}
