/*
 * plot.c - SVG pictures of a simulation, written by hand: a few rectangles,
 * lines, circles and texts, so that the CLI needs no plotting library and
 * the output is plain text that diffs.
 */
#include "controller/cli/plot.h"

#include <math.h>
#include <string.h>

#define W      1000.0
#define H      460.0
#define TOP    60.0
#define BOTTOM 60.0
#define LEFT   80.0
#define GAP    90.0

/* A scale from data [lo, hi] to pixels [a, b]. */
struct axis {
    double lo, hi, a, b;
};

static double px(const struct axis *x, double v)
{
    return x->a + (v - x->lo) / (x->hi - x->lo) * (x->b - x->a);
}

/* A step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
static double nice_step(double span, int want)
{
    double raw = span / want, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void widen(struct axis *x)
{
    if (!(x->hi > x->lo)) {
        x->hi = x->lo + 1;
        x->lo -= 1;
    }
    double pad = (x->hi - x->lo) * 0.06;
    x->lo -= pad;
    x->hi += pad;
}

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else if (*s == '&')
            fputs("&amp;", out);
        else
            fputc(*s, out);
    }
}

/* Axes with ticks and labels; `xs`/`ys` divide the tick values for show. */
static void axes(FILE *out, const struct axis *x, const struct axis *y, double xs, double ys,
                 const char *xlabel, const char *ylabel)
{
    fprintf(out, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#444'/>\n",
            x->a, y->b, x->b - x->a, y->a - y->b);
    /* Ticks fall on round numbers of the units shown. */
    double st = nice_step((x->hi - x->lo) / xs, 6) * xs;
    for (double v = ceil(x->lo / st) * st; v <= x->hi; v += st) {
        double p = px(x, v);
        fprintf(out,
                "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>"
                "<text x='%.1f' y='%.1f' font-size='11' text-anchor='middle'>%g</text>\n",
                p, y->a, p, y->b, p, y->a + 16, round(v / xs * 100) / 100);
    }
    st = nice_step((y->hi - y->lo) / ys, 6) * ys;
    for (double v = ceil(y->lo / st) * st; v <= y->hi; v += st) {
        double p = px(y, v);
        fprintf(out,
                "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>"
                "<text x='%.1f' y='%.1f' font-size='11' text-anchor='end'>%g</text>\n",
                x->a, p, x->b, p, x->a - 6, p + 4, round(v / ys * 100) / 100);
    }
    fprintf(out, "<text x='%.1f' y='%.1f' font-size='12' text-anchor='middle'>", (x->a + x->b) / 2,
            y->a + 36);
    xml_text(out, xlabel);
    fprintf(out,
            "</text>\n<text x='%.1f' y='%.1f' font-size='12' text-anchor='middle' "
            "transform='rotate(-90 %.1f %.1f)'>",
            x->a - 58, (y->a + y->b) / 2, x->a - 58, (y->a + y->b) / 2);
    xml_text(out, ylabel);
    fputs("</text>\n", out);
}

static const char *const kinds[] = {"cost-aware", "burst-now",        "spot-only",
                                    "greedy",     "const-wait",       "starburst",
                                    "local-only", "uniform-progress", NULL};
static const char *const colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#7f7f7f", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#17becf", "#000000"};

static const char *colour(const char *kind)
{
    size_t i = 0;
    while (kinds[i] != NULL && strcmp(kinds[i], kind) != 0)
        i++;
    return colours[i];
}

/* The points of the lower-left staircase (no other point both cheaper and
 * faster), joined in order of JCT. */
static void staircase(FILE *out, const struct sw_plot_point *pts, size_t n, bool p95,
                      const struct axis *x, const struct axis *y)
{
    double last_y = INFINITY;
    bool first = true;
    fputs("<polyline fill='none' stroke='#d62728' stroke-dasharray='4 3' points='", out);
    /* n is small (a sweep): pick the next point by JCT each time. */
    double done = -INFINITY;
    for (;;) {
        int k = -1;
        for (size_t i = 0; i < n; i++) {
            double v = p95 ? pts[i].jct_p95_s : pts[i].jct_mean_s;
            if (v > done && (k < 0 || v < (p95 ? pts[k].jct_p95_s : pts[k].jct_mean_s) ||
                             (v == (p95 ? pts[k].jct_p95_s : pts[k].jct_mean_s) &&
                              pts[i].cloud_cost < pts[k].cloud_cost)))
                k = (int)i;
        }
        if (k < 0)
            break;
        double v = p95 ? pts[k].jct_p95_s : pts[k].jct_mean_s;
        done = v;
        if (pts[k].cloud_cost < last_y) {
            double xp = px(x, v), yp = px(y, pts[k].cloud_cost);
            if (!first)
                fprintf(out, "%.1f,%.1f ", xp, px(y, last_y));
            fprintf(out, "%.1f,%.1f ", xp, yp);
            last_y = pts[k].cloud_cost;
            first = false;
        }
    }
    fputs("'/>\n", out);
}

int sw_plot_frontier(FILE *out, const struct sw_plot_point *pts, size_t n, const char *title)
{
    double pw = (W - LEFT - GAP - 40) / 2;
    struct axis y = {INFINITY, -INFINITY, H - BOTTOM, TOP};
    struct axis xm = {INFINITY, -INFINITY, LEFT, LEFT + pw};
    struct axis xp = {INFINITY, -INFINITY, LEFT + pw + GAP, LEFT + 2 * pw + GAP};
    for (size_t i = 0; i < n; i++) {
        y.lo = fmin(y.lo, pts[i].cloud_cost);
        y.hi = fmax(y.hi, pts[i].cloud_cost);
        xm.lo = fmin(xm.lo, pts[i].jct_mean_s);
        xm.hi = fmax(xm.hi, pts[i].jct_mean_s);
        xp.lo = fmin(xp.lo, pts[i].jct_p95_s);
        xp.hi = fmax(xp.hi, pts[i].jct_p95_s);
    }
    if (n == 0)
        y.lo = y.hi = xm.lo = xm.hi = xp.lo = xp.hi = 0;
    widen(&y);
    widen(&xm);
    widen(&xp);
    fprintf(out,
            "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n"
            "<text x='%.1f' y='24' font-size='15' text-anchor='middle'>",
            W, H + 60, W / 2);
    xml_text(out, title);
    fputs("</text>\n", out);
    axes(out, &xm, &y, 3600, 1000, "mean JCT (hours)", "cloud cost (thousand $)");
    axes(out, &xp, &y, 3600, 1000, "p95 JCT (hours)", "cloud cost (thousand $)");
    staircase(out, pts, n, false, &xm, &y);
    staircase(out, pts, n, true, &xp, &y);
    /* The named policies last, so that no sweep point hides them. */
    for (int pass = 0; pass < 4; pass++) {
        const struct axis *x = pass % 2 ? &xp : &xm;
        for (size_t i = 0; i < n; i++) {
            double v = pass % 2 ? pts[i].jct_p95_s : pts[i].jct_mean_s;
            const char *c = colour(pts[i].kind);
            bool named = strcmp(pts[i].kind, "cost-aware") == 0 ||
                         strcmp(pts[i].kind, "burst-now") == 0 ||
                         strcmp(pts[i].kind, "spot-only") == 0;
            if (named != (pass >= 2))
                continue;
            fprintf(out,
                    "<circle cx='%.1f' cy='%.1f' r='5' fill='%s' stroke='%s' "
                    "stroke-width='1.5'><title>",
                    px(x, v), px(&y, pts[i].cloud_cost), pts[i].frontier ? c : "white", c);
            xml_text(out, pts[i].label);
            fputs("</title></circle>\n", out);
            if (named) {
                fprintf(out, "<text x='%.1f' y='%.1f' font-size='11' fill='%s'>", px(x, v) + 7,
                        px(&y, pts[i].cloud_cost) - 6, c);
                xml_text(out, pts[i].label);
                fputs("</text>\n", out);
            }
        }
    }
    /* Legend: the policies present, then what the marks mean. */
    double lx = LEFT, ly = H + 22;
    for (size_t k = 0; kinds[k] != NULL; k++) {
        bool present = false;
        for (size_t i = 0; i < n && !present; i++)
            present = strcmp(pts[i].kind, kinds[k]) == 0;
        if (!present)
            continue;
        fprintf(out,
                "<circle cx='%.1f' cy='%.1f' r='5' fill='%s'/><text x='%.1f' y='%.1f' "
                "font-size='12'>%s</text>\n",
                lx, ly, colours[k], lx + 9, ly + 4, kinds[k]);
        lx += 20 + 7.5 * (double)strlen(kinds[k]);
    }
    fprintf(out,
            "<text x='%.1f' y='%.1f' font-size='11' fill='#444'>filled: on the frontier (cloud "
            "cost, mean JCT, deadline misses); hollow: dominated; dashed: the cheapest run for "
            "its JCT or less</text>\n",
            LEFT - 5, ly + 24);
    return fputs("</svg>\n", out) < 0 ? -1 : 0;
}

int sw_plot_usage(FILE *out, const struct sw_sim_usage *u, size_t n, const char *title)
{
    if (n < 2)
        return -1;
    struct axis x = {u[0].t / 86400.0, u[n - 1].t / 86400.0, LEFT, W - 40};
    int top = 1;
    for (size_t i = 0; i < n; i++) {
        int sum = u[i].gpus[0] + u[i].gpus[1] + u[i].gpus[2];
        if (sum > top)
            top = sum;
    }
    struct axis y = {0, top * 1.05, H - BOTTOM, TOP};
    fprintf(out,
            "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n"
            "<text x='%.1f' y='24' font-size='15' text-anchor='middle'>",
            W, H + 40, W / 2);
    xml_text(out, title);
    fputs("</text>\n", out);
    axes(out, &x, &y, 1, 1, "days since the trace started", "GPUs in use");
    /* Stacked bands: home at the bottom, then spot, then on-demand. */
    static const int order[3] = {SW_CAP_OWNED, SW_CAP_SPOT, SW_CAP_ON_DEMAND};
    static const char *const fill[3] = {"#7f7f7f", "#2ca02c", "#1f77b4"};
    static const char *const name[3] = {"home (owned)", "spot", "on-demand"};
    for (int b = 2; b >= 0; b--) {
        fprintf(out, "<polygon fill='%s' stroke='none' points='", fill[b]);
        for (size_t i = 0; i < n; i++) {
            int sum = 0;
            for (int k = 0; k <= b; k++)
                sum += u[i].gpus[order[k]];
            fprintf(out, "%.1f,%.1f ", px(&x, u[i].t / 86400.0), px(&y, sum));
        }
        fprintf(out, "%.1f,%.1f %.1f,%.1f'/>\n", px(&x, u[n - 1].t / 86400.0), px(&y, 0),
                px(&x, u[0].t / 86400.0), px(&y, 0));
    }
    double lx = LEFT;
    for (int b = 0; b < 3; b++) {
        fprintf(out,
                "<rect x='%.1f' y='%.1f' width='12' height='12' fill='%s'/><text x='%.1f' "
                "y='%.1f' font-size='12'>%s</text>\n",
                lx, H + 14, fill[b], lx + 16, H + 24, name[b]);
        lx += 130;
    }
    return fputs("</svg>\n", out) < 0 ? -1 : 0;
}
