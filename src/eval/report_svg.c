/* The accuracy/size plot (`--plot FILE.svg`): file size (MiB) on x, mean KLD or perplexity on y,
 * one labelled point per file plus the baseline. Self-contained SVG 1.1 (inline styles, no
 * scripts, fonts or links), written without any plotting dependency. An axis turns logarithmic
 * when its values are all positive and span a factor of 10 or more; KLD keeps a linear axis
 * because the baseline sits at 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report.h"

enum { W = 720, H = 460, LEFT = 80, RIGHT = 30, TOP = 56, BOTTOM = 64 };
#define CHAR_W 7.0 /* approximate width of a 12 px sans-serif character, for label placement */

static const char *const PALETTE[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#17becf", "#8c564b", "#e377c2"};

typedef struct {
    double lo, hi;
    bool log;
    double px0, px1; /* pixel positions of lo and hi */
} axis;

static double nice_step(double span) {
    const double raw = span / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* Fits an axis to values [min, max], with room around the points on a linear axis. */
static axis axis_fit(double min, double max, bool allow_log, bool from_zero, double px0, double px1) {
    axis a = {.px0 = px0, .px1 = px1};
    if (allow_log && min > 0 && max / min >= 10) {
        a.log = true;
        a.lo = pow(10, floor(log10(min)));
        a.hi = pow(10, ceil(log10(max)));
        if (a.hi <= a.lo) a.hi = a.lo * 10;
        return a;
    }
    double span = max - min;
    if (!(span > 0)) span = fabs(max) > 0 ? fabs(max) * 0.2 : 1;
    double lo = from_zero ? 0 : min - 0.1 * span, hi = max + 0.1 * span;
    if (min >= 0 && lo < 0) lo = 0;
    const double step = nice_step(hi - lo);
    a.lo = floor(lo / step) * step;
    a.hi = ceil(hi / step) * step;
    return a;
}

static double axis_px(const axis *a, double v) {
    const double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                            : (v - a->lo) / (a->hi - a->lo);
    return a->px0 + t * (a->px1 - a->px0);
}

/* Tick values: nice steps on a linear axis; 1-2-5 per decade on a log axis (decades only when
 * there are more than three). Returns the count (<= cap). */
static int axis_ticks(const axis *a, double *ticks, int cap) {
    int n = 0;
    if (a->log) {
        const bool fine = log10(a->hi / a->lo) <= 3.01;
        for (double d = a->lo; d <= a->hi * 1.0001 && n < cap; d *= 10)
            for (int m = 1; m <= 5 && n < cap; m += m == 1 ? 1 : 3)
                if ((m == 1 || fine) && d * m <= a->hi * 1.0001) ticks[n++] = d * m;
        return n;
    }
    const double step = nice_step(a->hi - a->lo);
    for (double v = a->lo; v <= a->hi + step * 1e-6 && n < cap; v += step)
        ticks[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    return n;
}

static void xml_text(elm_sbuf *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': elm_sb_puts(b, "&amp;"); break;
        case '<': elm_sb_puts(b, "&lt;"); break;
        case '>': elm_sb_puts(b, "&gt;"); break;
        case '"': elm_sb_puts(b, "&quot;"); break;
        case '\'': elm_sb_puts(b, "&apos;"); break;
        default: elm_sb_printf(b, "%c", *s);
        }
    }
}

static void draw_axes(elm_sbuf *b, const axis *x, const axis *y, const char *xlabel, const char *ylabel) {
    double ticks[64];
    const int nx = axis_ticks(x, ticks, 64);
    for (int i = 0; i < nx; i++) {
        const double px = axis_px(x, ticks[i]);
        elm_sb_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e5e5e5\"/>\n", px, TOP, px,
                  H - BOTTOM);
        elm_sb_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", px, H - BOTTOM + 18, ticks[i]);
    }
    const int ny = axis_ticks(y, ticks, 64);
    for (int i = 0; i < ny; i++) {
        const double py = axis_px(y, ticks[i]);
        elm_sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", LEFT, py,
                  W - RIGHT, py);
        elm_sb_printf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT - 8, py + 4, ticks[i]);
    }
    elm_sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
              LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);
    elm_sb_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (LEFT + W - RIGHT) / 2, H - 18);
    xml_text(b, xlabel);
    elm_sb_printf(b, "</text>\n<text transform=\"translate(20 %d) rotate(-90)\" text-anchor=\"middle\">",
              (TOP + H - BOTTOM) / 2);
    xml_text(b, ylabel);
    elm_sb_puts(b, "</text>\n");
}

typedef struct {
    double x0, y0, x1, y1;
} box;

static bool overlaps(const box *a, const box *b) {
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* Places a label beside the point, right of it (left near the right edge), trying the other
 * side and then heights alternately above and below until it clears the labels already placed,
 * staying inside the plot area. */
static box place_label(const box *placed, int n_placed, double px, double py, const char *name,
                       bool *anchor_end) {
    const double w = CHAR_W * (double)utf8_width(name);
    const bool prefer_end = px + 8 + w > W - RIGHT;
    box first = {0};
    for (int step = 0; step < 16; step++) {
        const double dy = 14.0 * ((step / 2 + 1) / 2) * ((step / 2) % 2 ? 1 : -1);
        const bool end = (step % 2) ? !prefer_end : prefer_end;
        box bx = {end ? px - 8 - w : px + 8, py - 12 + dy, 0, 0};
        bx.x1 = bx.x0 + w;
        bx.y1 = bx.y0 + 14;
        if (step == 0) {
            first = bx;
            *anchor_end = end;
        }
        if (bx.x0 < LEFT || bx.x1 > W - RIGHT || bx.y0 < TOP || bx.y1 > H - BOTTOM) continue;
        bool clash = false;
        for (int i = 0; i < n_placed && !clash; i++) clash = overlaps(&bx, &placed[i]);
        if (!clash) {
            *anchor_end = end;
            return bx;
        }
    }
    return first; /* crowded: overlap rather than leave the plot */
}

static double y_of(const elm_eval_entry *e, elm_plot_y which) {
    return which == ELM_PLOT_PPL ? e->ppl.ppl : e->kld.kld_mean;
}

char *elm_report_svg(const elm_eval_report *r, elm_plot_y which) {
    const int n = r->n_models + 1; /* the baseline first */
    box *placed = malloc(sizeof(box) * (size_t)n);
    if (!placed) return NULL;
    double xmin = r->baseline.size_mib, xmax = xmin, ymin = y_of(&r->baseline, which), ymax = ymin;
    for (int k = 0; k < r->n_models; k++) {
        const double x = r->models[k].size_mib, y = y_of(&r->models[k], which);
        xmin = fmin(xmin, x), xmax = fmax(xmax, x), ymin = fmin(ymin, y), ymax = fmax(ymax, y);
    }
    const axis ax = axis_fit(xmin, xmax, true, false, LEFT, W - RIGHT);
    const axis ay = axis_fit(ymin, ymax, which == ELM_PLOT_PPL, which == ELM_PLOT_KLD, H - BOTTOM, TOP);
    const char *what = which == ELM_PLOT_PPL ? "perplexity" : "mean KL divergence";

    elm_sbuf b = {0};
    elm_sb_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    elm_sb_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n",
              W, H, W, H);
    elm_sb_printf(&b, "<title>edgelm eval: %s against file size</title>\n", what);
    elm_sb_printf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    elm_sb_printf(&b, "<text x=\"%d\" y=\"24\" font-size=\"15\" font-weight=\"bold\">%s%s against file size</text>\n",
              LEFT, which == ELM_PLOT_PPL ? "Perplexity" : "Mean KL divergence from the baseline",
              which == ELM_PLOT_PPL ? "" : ",");
    elm_sb_printf(&b, "<text x=\"%d\" y=\"42\" fill=\"#666\">", LEFT);
    elm_sbuf desc = {0};
    eval_describe(&desc, r);
    char *d = elm_sb_finish(&desc);
    if (d) xml_text(&b, d);
    free(d);
    elm_sb_puts(&b, "</text>\n");
    draw_axes(&b, &ax, &ay, ax.log ? "file size (MiB, log scale)" : "file size (MiB)",
              which == ELM_PLOT_PPL ? (ay.log ? "perplexity (log scale)" : "perplexity")
                                    : "mean KLD (nats)");
    elm_sb_puts(&b, "<g class=\"points\">\n");
    for (int k = -1; k < r->n_models; k++) {
        const elm_eval_entry *e = k < 0 ? &r->baseline : &r->models[k];
        const double px = axis_px(&ax, e->size_mib), py = axis_px(&ay, y_of(e, which));
        const char *color = k < 0 ? "#222222" : PALETTE[k % (int)(sizeof PALETTE / sizeof PALETTE[0])];
        char label[320];
        snprintf(label, sizeof label, "%s%s", e->name, k < 0 ? " (baseline)" : "");
        bool end = false;
        const box bx = place_label(placed, k + 1, px, py, label, &end);
        placed[k + 1] = bx;
        elm_sb_printf(&b, "<circle class=\"point%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>",
                  k < 0 ? " baseline" : "", px, py, color);
        xml_text(&b, e->name);
        elm_sb_printf(&b, ": %.3f MiB, %s %.6g</title></circle>\n", e->size_mib,
                  which == ELM_PLOT_PPL ? "PPL" : "KLD", y_of(e, which));
        elm_sb_printf(&b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\"%s>", end ? bx.x1 : bx.x0, bx.y0 + 11,
                  end ? " text-anchor=\"end\"" : "");
        xml_text(&b, label);
        elm_sb_puts(&b, "</text>\n");
    }
    elm_sb_puts(&b, "</g>\n</svg>\n");
    free(placed);
    return elm_sb_finish(&b);
}
