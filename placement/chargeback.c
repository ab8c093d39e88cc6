/*
 * chargeback.c - sums usage lines into a team's cost report, builds the
 * per-team report over per-Job records, and parses the simulator's per-Job
 * CSV into such records.
 */
#include "placement/chargeback.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

double sw_chargeback_line_cost(const struct sw_usage_line *line)
{
    return line->gpu_hours * line->price_gpu_h;
}

void sw_chargeback_sum(const struct sw_usage_line *lines, size_t n, double idle_gpu_hours,
                       struct sw_chargeback *out)
{
    out->gpu_hours = 0;
    out->cost = 0;
    out->spot_gpu_hours = 0;
    for (size_t i = 0; i < n; i++) {
        out->gpu_hours += lines[i].gpu_hours;
        out->cost += sw_chargeback_line_cost(&lines[i]);
        if (lines[i].capacity == SW_CAP_SPOT)
            out->spot_gpu_hours += lines[i].gpu_hours;
    }
    out->idle_gpu_hours = idle_gpu_hours;
    out->spot_ratio = out->gpu_hours > 0 ? out->spot_gpu_hours / out->gpu_hours : 0;
    out->idle_fraction = out->gpu_hours > 0 ? idle_gpu_hours / out->gpu_hours : 0;
    out->efficiency = 1.0 - out->idle_fraction;
}

/* ---- Per-team reports ------------------------------------------------- */

static int cmp_team(const void *a, const void *b)
{
    return strcmp(((const struct sw_team_report *)a)->team,
                  ((const struct sw_team_report *)b)->team);
}

static double job_cost(const struct sw_job_usage *r)
{
    return r->cost[0] + r->cost[1] + r->cost[2] + r->egress;
}

/* Whether `a` goes before `b` in a team's costliest: dearer, or as dear
 * and first by name. */
static bool dearer(const struct sw_job_usage *a, const struct sw_job_usage *b)
{
    double ca = job_cost(a), cb = job_cost(b);
    if (ca != cb)
        return ca > cb;
    return strcmp(a->name, b->name) < 0;
}

int sw_chargeback_report(const struct sw_job_usage *recs, size_t n, double from, double to,
                         double ondemand_price, struct sw_team_report **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    struct sw_team_report *t = NULL;
    size_t nt = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_job_usage *r = &recs[i];
        if (!(r->at >= from && r->at < to))
            continue;
        /* Teams are few: a linear search keeps this simple. */
        size_t k = 0;
        while (k < nt && strcmp(t[k].team, r->team) != 0)
            k++;
        if (k == nt) {
            if (nt == cap) {
                cap = cap ? 2 * cap : 8;
                struct sw_team_report *g = sw_realloc(t, cap * sizeof(*g));
                if (g == NULL) {
                    sw_free(t);
                    return SW_ENOMEM;
                }
                t = g;
            }
            memset(&t[nt], 0, sizeof(t[nt]));
            memcpy(t[nt].team, r->team, sizeof(t[nt].team));
            nt++;
        }
        struct sw_team_report *x = &t[k];
        x->jobs++;
        for (int c = 0; c < 3; c++) {
            x->gpu_h[c] += r->gpu_h[c];
            x->cost[c] += r->cost[c];
        }
        x->egress += r->egress;
        x->preemptions += r->preemptions;
        x->lost_gpu_h += r->lost_gpu_h;
        /* Keep the costliest few, dearest first; ties by name, so that
         * the same records give the same list in any order (the live
         * records and the archive come in different orders). */
        size_t m = x->n_top < SW_CHARGEBACK_TOP ? x->n_top++ : SW_CHARGEBACK_TOP;
        while (m > 0 && dearer(r, &recs[x->top[m - 1]])) {
            if (m < SW_CHARGEBACK_TOP)
                x->top[m] = x->top[m - 1];
            m--;
        }
        if (m < SW_CHARGEBACK_TOP)
            x->top[m] = i;
    }
    for (size_t k = 0; k < nt; k++) {
        struct sw_team_report *x = &t[k];
        x->gpu_hours = x->gpu_h[0] + x->gpu_h[1] + x->gpu_h[2];
        x->total = x->cost[0] + x->cost[1] + x->cost[2] + x->egress;
        x->all_ondemand = x->gpu_hours * ondemand_price;
        x->savings = x->all_ondemand - x->total;
        x->savings_fraction = x->all_ondemand > 0 ? x->savings / x->all_ondemand : 0;
        double cloud = x->gpu_h[SW_CAP_SPOT] + x->gpu_h[SW_CAP_ON_DEMAND];
        x->spot_ratio = cloud > 0 ? x->gpu_h[SW_CAP_SPOT] / cloud : 0;
    }
    if (nt > 1)
        qsort(t, nt, sizeof(*t), cmp_team);
    *out = t;
    *n_out = nt;
    return 0;
}

/* ---- The simulator's per-Job CSV -------------------------------------- */

#define JOBS_MAX_COLS 40
#define JOBS_FIELD    256

enum {
    C_POLICY,
    C_JOB,
    C_TEAM,
    C_SUBMIT,
    C_JCT,
    C_COST_ONPREM,
    C_COST_SPOT,
    C_COST_ONDEMAND,
    C_EGRESS,
    C_GPU_H_ONPREM,
    C_GPU_H_SPOT,
    C_GPU_H_ONDEMAND,
    C_PREEMPTIONS,
    C_LOST,
    C__COUNT
};

static const char *const jobs_cols[C__COUNT] = {
    "policy",      "job",           "team",   "submit",       "jct_s",      "cost_onprem",
    "cost_spot",   "cost_ondemand", "egress", "gpu_h_onprem", "gpu_h_spot", "gpu_h_ondemand",
    "preemptions", "lost_gpu_h",
};

struct fields {
    const char *f[JOBS_MAX_COLS];
    size_t len[JOBS_MAX_COLS];
    int n;
};

static int split_line(const char *p, const char *end, struct fields *r)
{
    r->n = 0;
    for (;;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *fe = c ? c : end;
        if (r->n == JOBS_MAX_COLS)
            return -1;
        r->f[r->n] = p;
        r->len[r->n++] = (size_t)(fe - p);
        if (c == NULL)
            return 0;
        p = c + 1;
    }
}

static bool field_eq(const struct fields *r, int i, const char *s)
{
    return strlen(s) == r->len[i] && memcmp(r->f[i], s, r->len[i]) == 0;
}

/* A field as a C string in `dst` (cap bytes): SW_EPARSE if it does not fit. */
static int field_str(const struct fields *r, int i, char *dst, size_t cap, const char *what,
                     size_t line, const char *name, struct sw_error *err)
{
    if (r->len[i] >= cap)
        return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"%s\": longer than %zu characters",
                            what, line, name, cap - 1);
    memcpy(dst, r->f[i], r->len[i]);
    dst[r->len[i]] = '\0';
    return 0;
}

/* A non-negative finite number (or "inf" when `inf_ok`). */
static int field_num(const struct fields *r, int i, bool inf_ok, const char *what, size_t line,
                     const char *name, double *out, struct sw_error *err)
{
    char tmp[JOBS_FIELD];
    int rc = field_str(r, i, tmp, sizeof(tmp), what, line, name, err);
    if (rc != 0)
        return rc;
    char *end;
    double v = strtod(tmp, &end);
    bool ok = tmp[0] != '\0' && *end == '\0' && v >= 0 && (isfinite(v) || (inf_ok && v > 0));
    if (!ok || (isfinite(v) && v > 1e15))
        return sw_error_set(err, SW_EPARSE,
                            "%s:%zu: field \"%s\": expected a non-negative number, got \"%s\"",
                            what, line, name, tmp);
    *out = v;
    return 0;
}

int sw_job_usage_parse_csv(const char *buf, size_t len, const char *what, const char *policy,
                           struct sw_job_usage **out, size_t *n_out, struct sw_error *err)
{
    *out = NULL;
    *n_out = 0;
    const char *p = buf, *end = buf + len;
    int col[C__COUNT];
    char first_policy[64] = "";
    struct sw_job_usage *recs = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        if (memchr(p, '\0', (size_t)(le - p)) != NULL) {
            rc = sw_error_set(err, SW_EPARSE, "%s:%zu: a NUL byte in the line", what, line);
            goto fail;
        }
        struct fields r;
        if (split_line(p, le, &r) != 0) {
            rc = sw_error_set(err, SW_EPARSE, "%s:%zu: more than %d fields", what, line,
                              JOBS_MAX_COLS);
            goto fail;
        }
        p = next;
        if (line == 1) {
            for (int c = 0; c < C__COUNT; c++) {
                col[c] = -1;
                for (int i = 0; i < r.n && col[c] < 0; i++)
                    if (field_eq(&r, i, jobs_cols[c]))
                        col[c] = i;
                if (col[c] < 0) {
                    rc = sw_error_set(err, SW_EPARSE,
                                      "%s:1: header lacks column \"%s\" (expected the CSV of "
                                      "spillctl simulate --jobs-csv)",
                                      what, jobs_cols[c]);
                    goto fail;
                }
            }
            continue;
        }
        if (r.n == 1 && r.len[0] == 0)
            continue; /* a blank line */
        int need = 0;
        for (int c = 0; c < C__COUNT; c++)
            if (col[c] >= need)
                need = col[c] + 1;
        if (r.n < need) {
            rc = sw_error_set(err, SW_EPARSE, "%s:%zu: expected at least %d fields, got %d", what,
                              line, need, r.n);
            goto fail;
        }
        char pol[64];
        if ((rc = field_str(&r, col[C_POLICY], pol, sizeof(pol), what, line, "policy", err)) != 0)
            goto fail;
        if (policy != NULL) {
            if (strcmp(pol, policy) != 0)
                continue;
        } else if (first_policy[0] == '\0') {
            memcpy(first_policy, pol, sizeof(pol));
        } else if (strcmp(first_policy, pol) != 0) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s:%zu: field \"policy\": a second run \"%s\" after \"%s\"; "
                              "choose one with --policy",
                              what, line, pol, first_policy);
            goto fail;
        }
        struct sw_job_usage u = {0};
        double submit, jct, pre;
        if ((rc = field_str(&r, col[C_JOB], u.name, sizeof(u.name), what, line, "job", err)) ||
            (rc = field_str(&r, col[C_TEAM], u.team, sizeof(u.team), what, line, "team", err)) ||
            (rc = field_num(&r, col[C_SUBMIT], false, what, line, "submit", &submit, err)) ||
            (rc = field_num(&r, col[C_JCT], true, what, line, "jct_s", &jct, err)) ||
            (rc = field_num(&r, col[C_COST_ONPREM], false, what, line, "cost_onprem",
                            &u.cost[SW_CAP_OWNED], err)) ||
            (rc = field_num(&r, col[C_COST_SPOT], false, what, line, "cost_spot",
                            &u.cost[SW_CAP_SPOT], err)) ||
            (rc = field_num(&r, col[C_COST_ONDEMAND], false, what, line, "cost_ondemand",
                            &u.cost[SW_CAP_ON_DEMAND], err)) ||
            (rc = field_num(&r, col[C_EGRESS], false, what, line, "egress", &u.egress, err)) ||
            (rc = field_num(&r, col[C_GPU_H_ONPREM], false, what, line, "gpu_h_onprem",
                            &u.gpu_h[SW_CAP_OWNED], err)) ||
            (rc = field_num(&r, col[C_GPU_H_SPOT], false, what, line, "gpu_h_spot",
                            &u.gpu_h[SW_CAP_SPOT], err)) ||
            (rc = field_num(&r, col[C_GPU_H_ONDEMAND], false, what, line, "gpu_h_ondemand",
                            &u.gpu_h[SW_CAP_ON_DEMAND], err)) ||
            (rc = field_num(&r, col[C_PREEMPTIONS], false, what, line, "preemptions", &pre, err)) ||
            (rc = field_num(&r, col[C_LOST], false, what, line, "lost_gpu_h", &u.lost_gpu_h, err)))
            goto fail;
        if (pre != floor(pre) || pre > 1e9) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s:%zu: field \"preemptions\": expected a whole number, got %g",
                              what, line, pre);
            goto fail;
        }
        if (u.team[0] == '\0') {
            rc = sw_error_set(err, SW_EPARSE, "%s:%zu: field \"team\" is empty", what, line);
            goto fail;
        }
        u.preemptions = (unsigned)pre;
        u.at = isfinite(jct) ? submit + jct : submit;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            struct sw_job_usage *g = sw_realloc(recs, cap * sizeof(*g));
            if (g == NULL) {
                rc = sw_error_set(err, SW_ENOMEM, "%s:%zu: out of memory", what, line);
                goto fail;
            }
            recs = g;
        }
        recs[n++] = u;
    }
    if (p == buf) {
        rc = sw_error_set(err, SW_EPARSE, "%s:1: expected a header line", what);
        goto fail;
    }
    *out = recs;
    *n_out = n;
    return 0;
fail:
    sw_free(recs);
    return rc;
}

/* Hours of [a, b) within [from, to). */
static double overlap_h(double a, double b, double from, double to)
{
    double s = a > from ? a : from, e = b < to ? b : to;
    return e > s ? (e - s) / 3600.0 : 0;
}

static int bill_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sw_nodepool_bill *)a)->pool,
                  ((const struct sw_nodepool_bill *)b)->pool);
}

int sw_chargeback_nodepools(const struct sw_node_life *nodes, size_t n,
                            const struct sw_pool_run *runs, size_t nruns, double from, double to,
                            double now, struct sw_nodepool_bill **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    double end = now < to ? now : to;
    struct sw_nodepool_bill *b = NULL;
    size_t nb = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_node_life *l = &nodes[i];
        double h = overlap_h(l->created, l->deleted > 0 ? l->deleted : end, from, to);
        if (h <= 0)
            continue;
        size_t k = 0;
        while (k < nb && strcmp(b[k].pool, l->pool) != 0)
            k++;
        if (k == nb) {
            if (nb == cap) {
                cap = cap ? 2 * cap : 8;
                struct sw_nodepool_bill *g = sw_realloc(b, cap * sizeof(*g));
                if (g == NULL) {
                    sw_free(b);
                    return SW_ENOMEM;
                }
                b = g;
            }
            memset(&b[nb], 0, sizeof(b[nb]));
            memcpy(b[nb].pool, l->pool, sizeof(b[nb].pool));
            memcpy(b[nb].nodepool, l->nodepool, sizeof(b[nb].nodepool));
            nb++;
        }
        b[k].nodes++;
        b[k].node_hours += h;
        b[k].gpu_hours += h * l->gpus;
        b[k].cost += h * l->gpus * l->price_gpu_h;
    }
    for (size_t k = 0; k < nb; k++) {
        struct sw_nodepool_bill *x = &b[k];
        for (size_t i = 0; i < nruns; i++)
            if (strcmp(runs[i].pool, x->pool) == 0)
                x->job_gpu_hours += runs[i].gpus * overlap_h(runs[i].start, runs[i].end, from, end);
        /* One price per pool: the bill's average per GPU-hour. */
        double price = x->gpu_hours > 0 ? x->cost / x->gpu_hours : 0;
        double used = x->job_gpu_hours < x->gpu_hours ? x->job_gpu_hours : x->gpu_hours;
        x->job_cost = used * price;
        x->idle_gpu_hours = x->gpu_hours - used;
        x->idle_cost = x->cost - x->job_cost;
        x->idle_fraction = x->gpu_hours > 0 ? x->idle_gpu_hours / x->gpu_hours : 0;
    }
    if (nb > 1)
        qsort(b, nb, sizeof(*b), bill_cmp);
    *out = b;
    *n_out = nb;
    return 0;
}
