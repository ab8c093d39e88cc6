/*
 * rpo.c - RPO arithmetic and its Prometheus exposition.
 */
#include "replication/rpo.h"

#include <string.h>

double sw_rpo_seconds(const struct sw_rpo_entry *e, int64_t now_ms)
{
    if (e->last_run_ms <= 0)
        return -1;
    if (e->oldest_pending_ms <= 0)
        return 0;
    int64_t d = now_ms - e->oldest_pending_ms;
    return d > 0 ? (double)d / 1000.0 : 0;
}

/* Label values escape backslash, quote and newline (exposition format). */
static int add_label(struct sw_buf *b, const char *v)
{
    for (; *v; v++) {
        int rc = *v == '\\'   ? sw_buf_adds(b, "\\\\")
                 : *v == '"'  ? sw_buf_adds(b, "\\\"")
                 : *v == '\n' ? sw_buf_adds(b, "\\n")
                              : sw_buf_add(b, v, 1);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int series(struct sw_buf *b, const char *name, const struct sw_rpo_entry *e, double v)
{
    int rc = sw_buf_addf(b, "%s{rule=\"", name);
    if (rc == 0)
        rc = add_label(b, e->rule);
    if (rc == 0)
        rc = sw_buf_adds(b, "\",target=\"");
    if (rc == 0)
        rc = add_label(b, e->target);
    if (rc == 0)
        rc = sw_buf_addf(b, "\"} %.3f\n", v);
    return rc;
}

int sw_rpo_metrics(const struct sw_rpo_entry *e, size_t n, int64_t now_ms, struct sw_buf *out)
{
    int rc = sw_buf_adds(out, "# HELP spillway_replication_rpo_seconds Age of the oldest source "
                              "object the last run left unreplicated (0: none).\n"
                              "# TYPE spillway_replication_rpo_seconds gauge\n");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        double v = sw_rpo_seconds(&e[i], now_ms);
        if (v >= 0)
            rc = series(out, "spillway_replication_rpo_seconds", &e[i], v);
    }
    if (rc == 0)
        rc = sw_buf_adds(out, "# HELP spillway_replication_last_run_age_seconds Seconds since "
                              "the last run of the rule ended.\n"
                              "# TYPE spillway_replication_last_run_age_seconds gauge\n");
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (e[i].last_run_ms > 0)
            rc = series(out, "spillway_replication_last_run_age_seconds", &e[i],
                        (double)(now_ms - e[i].last_run_ms) / 1000.0);
    return rc;
}
