/*
 * The report's pictures, as SVG text: plain shapes, no script, no external
 * reference, sized for a laptop screen.  The timeline stays legible at
 * 7 ranks x 40 samples: one block per (rank, sample) run of steps, labelled
 * with the sample when it is wide enough.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_report.h"
#include "common/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SVG_W     1400
#define SVG_LEFT  110
#define SVG_RIGHT 20
#define SVG_TOP   46
#define SVG_LANE  34
#define SVG_GAP   10
#define SVG_STRIP 5

static const char *const svg_kind_fill[SVDTOOL_REPORT_NKINDS] = {
    "#888", "#263238", "#6d4c41", "#e53935", "#fb8c00", "none",
};

/* A tick step of 1, 2 or 5 x 10^k giving at most about 12 ticks. */
static double svg_tick(double span)
{
    double raw = span / 12, p = pow(10, floor(log10(raw > 0 ? raw : 1))),
           m = raw / p;

    return p * ((m <= 1) ? 1 : (m <= 2) ? 2 : (m <= 5) ? 5 : 10);
}

/* The colour of a sample: hues spread by the golden angle. */
static void svg_sample_fill(int sample, char *buf, size_t len)
{
    snprintf(buf, len, "hsl(%d,62%%,%d%%)", (int)fmod(sample * 137.508, 360.0),
             (sample % 2) ? 62 : 48);
}

static void svg_axis(FILE *out, double x0, double pw, double span, double y,
                     double h)
{
    double step = svg_tick(span), t;
    int    k;

    /* the k-th tick at k * step: a running sum of steps would drift */
    for (k = 0; k * step <= span * 1.0001; ++k) {
        double x;

        t = k * step;
        x = x0 + t / span * pw;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n",
                x, y, x, y + h);
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
                "text-anchor=\"middle\">%g</text>\n",
                x, y - 4, t);
    }
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">"
            "seconds</text>\n",
            x0 + pw, y - 18);
}

static void svg_legend(FILE *out, double x, double y)
{
    static const struct {
        const char *fill, *label;
        int         strip;
    } items[] = {
        {"hsl(200,62%,55%)", "steps (colour: sample)", 0},
        {"#263238", "encode", 0},
        {"#6d4c41", "decode", 0},
        {"#e53935", "waiting for input", 1},
        {"#fb8c00", "waiting for a send", 1},
        {"#f3f3f3", "idle", 0},
    };
    size_t i;

    for (i = 0; i < sizeof(items) / sizeof(items[0]); ++i) {
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"%d\" fill=\"%s\" "
                "stroke=\"#999\" stroke-width=\"0.5\"/>\n",
                x, y + (items[i].strip ? 4 : 0), items[i].strip ? 5 : 12,
                items[i].fill);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                x + 18, y + 10, items[i].label);
        x += 40 + 6.2 * (double)strlen(items[i].label);
    }
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#111\" "
            "stroke-width=\"1.2\" marker-end=\"url(#svp-arrow)\"/>\n",
            x, y + 6, x + 22, y + 6);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">hand-off</text>\n",
            x + 28, y + 10);
}

void svdtool_report_svg_timeline(const svdtool_report_t *r, FILE *out, int xmlns)
{
    double pw   = SVG_W - SVG_LEFT - SVG_RIGHT,
           span = r->makespan > 0 ? r->makespan : 1;
    double h    = SVG_TOP + r->world * (SVG_LANE + SVG_GAP) + 34;
    int    q, i, j, w0, w1;
    char   fill[32];

#define X(_t)    (SVG_LEFT + (_t) / span * pw)
#define LANE(_q) (SVG_TOP + (_q) * (SVG_LANE + SVG_GAP))
    fprintf(out,
            "<svg %sviewBox=\"0 0 %d %.0f\" width=\"%d\" height=\"%.0f\" "
            "font-family=\"sans-serif\" role=\"img\">\n",
            xmlns ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", SVG_W, h, SVG_W,
            h);
    fprintf(
        out,
        "<title>timeline: one lane per rank</title>\n"
        "<defs><marker id=\"svp-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
        "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 "
        "L0,10 z\" fill=\"#111\"/></marker></defs>\n");
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    svg_axis(out, SVG_LEFT, pw, span, SVG_TOP - 6, r->world * (SVG_LANE + SVG_GAP));

    for (q = 0; q < r->world; ++q) {
        const svdtool_report_rank_t *rk = &r->ranks[q];
        double                       y  = LANE(q);

        fprintf(out,
                "<text x=\"6\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">"
                "rank %d</text>\n",
                y + 15, q);
        fprintf(out,
                "<text x=\"6\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">%.14s"
                "</text>\n",
                y + 28, rk->host);
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                "fill=\"#f3f3f3\"/>\n",
                X(rk->start), y, X(rk->end) - X(rk->start), SVG_LANE);
        for (i = 0; i < rk->nev; ++i) {
            const svdtool_report_ev_t *ev = &rk->ev[i];
            double                     t1 = ev->t1, x0, wd;

            if (ev->kind == SVDTOOL_REPORT_RUN) {
                continue;
            }
            if (ev->kind == SVDTOOL_REPORT_WAIT_RECV ||
                ev->kind == SVDTOOL_REPORT_WAIT_SEND) {
                x0 = X(ev->t0);
                wd = SVP_MAX(0.5, X(ev->t1) - x0);
                fprintf(
                    out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                    "fill=\"%s\"><title>rank %d waits %s sample %d: %.3f s</title>"
                    "</rect>\n",
                    x0,
                    y + (ev->kind == SVDTOOL_REPORT_WAIT_RECV ? SVG_LANE - SVG_STRIP
                                                              : 0),
                    wd, SVG_STRIP, svg_kind_fill[ev->kind], q,
                    ev->kind == SVDTOOL_REPORT_WAIT_RECV ? "for input of"
                                                         : "to send",
                    ev->sample, ev->t1 - ev->t0);
                continue;
            }
            /* a rank's consecutive steps of one sample make one block */
            j = i;
            if (ev->kind == SVDTOOL_REPORT_STEP) {
                while (j + 1 < rk->nev &&
                       rk->ev[j + 1].kind == SVDTOOL_REPORT_STEP &&
                       rk->ev[j + 1].sample == ev->sample) {
                    ++j;
                }
                t1 = rk->ev[j].t1;
                svg_sample_fill(ev->sample, fill, sizeof(fill));
            } else {
                snprintf(fill, sizeof(fill), "%s", svg_kind_fill[ev->kind]);
            }
            x0 = X(ev->t0);
            wd = SVP_MAX(0.8, X(t1) - x0);
            fprintf(
                out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                "fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>rank %d "
                "sample %d %s%s%.3f-%.3f s</title></rect>\n",
                x0, y + SVG_STRIP, wd, SVG_LANE - 2 * SVG_STRIP, fill, q, ev->sample,
                ev->kind == SVDTOOL_REPORT_STEP     ? "steps "
                : ev->kind == SVDTOOL_REPORT_ENCODE ? "encode"
                                                    : "decode",
                ev->kind == SVDTOOL_REPORT_STEP ? "" : " ", ev->t0, t1);
            if (ev->kind == SVDTOOL_REPORT_STEP && wd >= 14 && ev->sample >= 0) {
                fprintf(out,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                        "text-anchor=\"middle\" fill=\"#fff\">%d</text>\n",
                        x0 + wd / 2, y + SVG_LANE / 2.0 + 4, ev->sample);
            } else if (ev->kind != SVDTOOL_REPORT_STEP && wd >= 10) {
                fprintf(out,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" "
                        "text-anchor=\"middle\" fill=\"#fff\">%s</text>\n",
                        x0 + wd / 2, y + SVG_LANE / 2.0 + 3,
                        ev->kind == SVDTOOL_REPORT_ENCODE ? "E" : "D");
            }
            i = j;
        }
    }

    /* hand-off arrows for a window of three samples in the middle of the run */
    w0 = r->window_lo;
    w1 = r->window_hi;
    for (i = 0; i < r->nhandoffs; ++i) {
        const svdtool_report_handoff_t *hf = &r->handoffs[i];
        double                          ys, yd;

        if (hf->sample < w0 || hf->sample >= w1) {
            continue;
        }
        ys = LANE(hf->src) + (hf->dst > hf->src ? SVG_LANE - SVG_STRIP : SVG_STRIP);
        yd = LANE(hf->dst) + (hf->dst > hf->src ? SVG_STRIP : SVG_LANE - SVG_STRIP);
        fprintf(
            out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#111\" "
            "stroke-width=\"1.2\" marker-end=\"url(#svp-arrow)\"><title>sample %d: "
            "rank %d to rank %d</title></line>\n",
            X(hf->t_sent), ys, SVP_MAX(X(hf->t_used), X(hf->t_sent) + 1), yd,
            hf->sample, hf->src, hf->dst);
    }
    svg_legend(out, SVG_LEFT, h - 22);
    fprintf(out, "</svg>\n");
#undef X
#undef LANE
}
