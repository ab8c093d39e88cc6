/*
 * report.c - `spillctl report chargeback`: per-team GPU-hours, cost,
 * savings against all on-demand, preemptions and egress over a period, in
 * the seeds' monthly-report form, as CSV or as JSON.
 *
 * The figures come from sw_chargeback_report (placement/chargeback.c), a
 * function over per-Job records: a simulation's per-Job CSV (`spillctl
 * simulate --jobs-csv`) or the hub's records in Redis. From the hub, the
 * report also bills the cloud nodes of pools bound to a Karpenter NodePool
 * (their NodeClaims' lives, spillway:node-hours) and reconciles them with
 * the Jobs that ran there (sw_chargeback_nodepools).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "clusters/exec.h"
#include "common/alloc.h"
#include "controller/cli/commands.h"
#include "common/json.h"
#include "controller/cli/globals.h"
#include "controller/hub/budget.h"
#include "controller/hub/jobrec.h"
#include "store/redis.h"
#include "placement/chargeback.h"

/* Seconds since the Unix epoch of "YYYY-MM-DD" or an RFC 3339 time. */
static int parse_date(const char *opt, const char *s, double *out)
{
    char buf[64];
    const char *t = s;
    if (strlen(s) == 10) {
        snprintf(buf, sizeof(buf), "%sT00:00:00Z", s);
        t = buf;
    }
    int64_t ms;
    const char *why = NULL;
    if (sw_parse_rfc3339(t, &ms, &why) != 0) {
        fprintf(stderr,
                "spillctl report chargeback: %s: expected YYYY-MM-DD or an RFC 3339 time, got "
                "\"%s\"%s%s\n",
                opt, s, why ? ": " : "", why ? why : "");
        return -1;
    }
    *out = (double)ms / 1000.0;
    return 0;
}

/* 1234567.891 as "1,234,567.89" (two decimals) or "1,234,568" (none). */
static const char *money(double v, int decimals, char *buf, size_t cap)
{
    char raw[64];
    snprintf(raw, sizeof(raw), "%.*f", decimals, fabs(v));
    const char *dot = strchr(raw, '.');
    size_t ints = dot ? (size_t)(dot - raw) : strlen(raw), o = 0;
    if (v < 0 && o + 1 < cap)
        buf[o++] = '-';
    for (size_t i = 0; i < ints && o + 2 < cap; i++) {
        if (i > 0 && (ints - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    for (const char *p = dot; p != NULL && *p && o + 1 < cap; p++)
        buf[o++] = *p;
    buf[o] = '\0';
    return buf;
}

static void print_table(const struct sw_team_report *t, size_t nt, const struct sw_job_usage *recs,
                        const char *from, const char *to, double price)
{
    static const enum sw_capacity order[3] = {SW_CAP_OWNED, SW_CAP_SPOT, SW_CAP_ON_DEMAND};
    static const char *const cap_name[3] = {"home (owned)", "spot", "on-demand"};
    char a[48], b[48], c[48];
    for (size_t k = 0; k < nt; k++) {
        const struct sw_team_report *x = &t[k];
        printf("GPU Report — %s, %s to %s\n", x->team, from, to);
        printf("━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n");
        printf("GPU-hours consumed: %s hrs (%zu Jobs)\n", money(x->gpu_hours, 0, a, sizeof(a)),
               x->jobs);
        for (int i = 0; i < 3; i++)
            printf("%s %s: %s hrs = $%s\n", i < 2 ? "├──" : "└──", cap_name[i],
                   money(x->gpu_h[order[i]], 0, a, sizeof(a)),
                   money(x->cost[order[i]], 2, b, sizeof(b)));
        printf("Egress: $%s\n", money(x->egress, 2, a, sizeof(a)));
        printf("──────────\n");
        printf("Total: $%s\n", money(x->total, 2, a, sizeof(a)));
        printf("All on-demand ($%.2f/GPU-h): $%s; saved $%s (%.1f%%)\n", price,
               money(x->all_ondemand, 2, a, sizeof(a)), money(x->savings, 2, b, sizeof(b)),
               100.0 * x->savings_fraction);
        printf("Spot ratio: %.1f%% of cloud GPU-hours (target: >70%%)\n", 100.0 * x->spot_ratio);
        printf("Preemptions: %u; lost GPU-hours: %s hrs\n", x->preemptions,
               money(x->lost_gpu_h, 1, a, sizeof(a)));
        printf("Top consumers:\n");
        for (size_t i = 0; i < x->n_top; i++) {
            const struct sw_job_usage *r = &recs[x->top[i]];
            double gh = r->gpu_h[0] + r->gpu_h[1] + r->gpu_h[2];
            double cost = r->cost[0] + r->cost[1] + r->cost[2] + r->egress;
            printf("%zu. %s: %s GPU-hrs ($%s)\n", i + 1, r->name, money(gh, 0, c, sizeof(c)),
                   money(cost, 2, b, sizeof(b)));
        }
        if (k + 1 < nt)
            printf("\n");
    }
}

/* The cloud bill's side: node-hours per NodePool-bound pool, the Jobs'
 * share by their GPUs, the idle rest. */
static void print_bills(const struct sw_nodepool_bill *b, size_t n)
{
    if (n == 0)
        return;
    char a[48], c[48], d[48];
    printf("\nCloud nodes per NodePool (node-hours at the pool's price)\n");
    printf("━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n");
    for (size_t k = 0; k < n; k++) {
        const struct sw_nodepool_bill *x = &b[k];
        printf("%s (NodePool %s): %zu node%s, %.2f node-hours, %s GPU-hrs = $%s\n", x->pool,
               x->nodepool, x->nodes, x->nodes == 1 ? "" : "s", x->node_hours,
               money(x->gpu_hours, 1, a, sizeof(a)), money(x->cost, 2, c, sizeof(c)));
        printf("├── Jobs (by their GPUs): %s GPU-hrs = $%s\n",
               money(x->job_gpu_hours, 1, a, sizeof(a)), money(x->job_cost, 2, c, sizeof(c)));
        printf("└── idle (provisioning, partly used nodes, consolidation): %s GPU-hrs = $%s "
               "(%.1f%%)\n",
               money(x->idle_gpu_hours, 1, a, sizeof(a)), money(x->idle_cost, 2, d, sizeof(d)),
               100.0 * x->idle_fraction);
    }
}

static void print_csv(const struct sw_team_report *t, size_t nt)
{
    printf("team,jobs,gpu_h_home,gpu_h_spot,gpu_h_ondemand,cost_home,cost_spot,cost_ondemand,"
           "egress,total,all_ondemand,savings,savings_fraction,spot_ratio,preemptions,"
           "lost_gpu_h\n");
    for (size_t k = 0; k < nt; k++) {
        const struct sw_team_report *x = &t[k];
        printf("%s,%zu,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f,%.4f,%u,%.3f\n",
               x->team, x->jobs, x->gpu_h[SW_CAP_OWNED], x->gpu_h[SW_CAP_SPOT],
               x->gpu_h[SW_CAP_ON_DEMAND], x->cost[SW_CAP_OWNED], x->cost[SW_CAP_SPOT],
               x->cost[SW_CAP_ON_DEMAND], x->egress, x->total, x->all_ondemand, x->savings,
               x->savings_fraction, x->spot_ratio, x->preemptions, x->lost_gpu_h);
    }
}

static int print_json(const struct sw_team_report *t, size_t nt, const struct sw_job_usage *recs,
                      const char *from, const char *to, double price,
                      const struct sw_nodepool_bill *bills, size_t nbills)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *teams = root ? cJSON_AddArrayToObject(root, "teams") : NULL;
    bool ok = teams != NULL && cJSON_AddStringToObject(root, "from", from) &&
              cJSON_AddStringToObject(root, "to", to) &&
              cJSON_AddNumberToObject(root, "ondemand_price_per_gpu_hour", price);
    for (size_t k = 0; ok && k < nt; k++) {
        const struct sw_team_report *x = &t[k];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(teams, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        cJSON *gh = cJSON_AddObjectToObject(o, "gpu_hours");
        cJSON *cost = cJSON_AddObjectToObject(o, "cost");
        cJSON *top = cJSON_AddArrayToObject(o, "top");
        ok = cJSON_AddStringToObject(o, "team", x->team) &&
             cJSON_AddNumberToObject(o, "jobs", (double)x->jobs) && gh && cost && top &&
             cJSON_AddNumberToObject(gh, "home", x->gpu_h[SW_CAP_OWNED]) &&
             cJSON_AddNumberToObject(gh, "spot", x->gpu_h[SW_CAP_SPOT]) &&
             cJSON_AddNumberToObject(gh, "ondemand", x->gpu_h[SW_CAP_ON_DEMAND]) &&
             cJSON_AddNumberToObject(gh, "total", x->gpu_hours) &&
             cJSON_AddNumberToObject(cost, "home", round(x->cost[SW_CAP_OWNED] * 100) / 100) &&
             cJSON_AddNumberToObject(cost, "spot", round(x->cost[SW_CAP_SPOT] * 100) / 100) &&
             cJSON_AddNumberToObject(cost, "ondemand",
                                     round(x->cost[SW_CAP_ON_DEMAND] * 100) / 100) &&
             cJSON_AddNumberToObject(cost, "egress", round(x->egress * 100) / 100) &&
             cJSON_AddNumberToObject(cost, "total", round(x->total * 100) / 100) &&
             cJSON_AddNumberToObject(o, "all_ondemand", round(x->all_ondemand * 100) / 100) &&
             cJSON_AddNumberToObject(o, "savings", round(x->savings * 100) / 100) &&
             cJSON_AddNumberToObject(o, "savings_fraction", x->savings_fraction) &&
             cJSON_AddNumberToObject(o, "spot_ratio", x->spot_ratio) &&
             cJSON_AddNumberToObject(o, "preemptions", x->preemptions) &&
             cJSON_AddNumberToObject(o, "lost_gpu_hours", x->lost_gpu_h);
        for (size_t i = 0; ok && i < x->n_top; i++) {
            const struct sw_job_usage *r = &recs[x->top[i]];
            cJSON *j = cJSON_CreateObject();
            ok = j != NULL && cJSON_AddItemToArray(top, j);
            if (!ok) {
                cJSON_Delete(j);
                break;
            }
            ok = cJSON_AddStringToObject(j, "job", r->name) &&
                 cJSON_AddNumberToObject(j, "gpu_hours", r->gpu_h[0] + r->gpu_h[1] + r->gpu_h[2]) &&
                 cJSON_AddNumberToObject(
                     j, "cost",
                     round((r->cost[0] + r->cost[1] + r->cost[2] + r->egress) * 100) / 100);
        }
    }
    cJSON *nps = ok ? cJSON_AddArrayToObject(root, "nodepools") : NULL;
    ok = ok && nps != NULL;
    for (size_t k = 0; ok && k < nbills; k++) {
        const struct sw_nodepool_bill *x = &bills[k];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(nps, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddStringToObject(o, "pool", x->pool) &&
             cJSON_AddStringToObject(o, "nodepool", x->nodepool) &&
             cJSON_AddNumberToObject(o, "nodes", (double)x->nodes) &&
             cJSON_AddNumberToObject(o, "node_hours", x->node_hours) &&
             cJSON_AddNumberToObject(o, "gpu_hours", x->gpu_hours) &&
             cJSON_AddNumberToObject(o, "cost", round(x->cost * 100) / 100) &&
             cJSON_AddNumberToObject(o, "job_gpu_hours", x->job_gpu_hours) &&
             cJSON_AddNumberToObject(o, "job_cost", round(x->job_cost * 100) / 100) &&
             cJSON_AddNumberToObject(o, "idle_gpu_hours", x->idle_gpu_hours) &&
             cJSON_AddNumberToObject(o, "idle_cost", round(x->idle_cost * 100) / 100) &&
             cJSON_AddNumberToObject(o, "idle_fraction", x->idle_fraction);
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (text == NULL) {
        fprintf(stderr, "spillctl report chargeback: out of memory\n");
        return -1;
    }
    puts(text);
    cJSON_free(text);
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One number of a NodeClaim's life, named in the error when it is not one. */
static int life_num(const cJSON *o, const char *field, const char *k, double *out,
                    struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0))
        return sw_error_set(err, SW_EPARSE, "%s %s: field \"%s\": expected a non-negative number",
                            SW_KEY_NODE_HOURS, field, k);
    *out = v->valuedouble;
    return 0;
}

/* The NodeClaims' lives the hub recorded (spillway:node-hours); an entry
 * that cannot be read is skipped, said on stderr. */
static int hub_lives(redisContext *c, struct sw_node_life **out, size_t *n, struct sw_error *err)
{
    redisReply *h = NULL;
    int rc = sw_redis_sync_command(c, &h, err, "HGETALL %s", SW_KEY_NODE_HOURS);
    if (rc != 0)
        return rc;
    *out = sw_calloc(h->elements / 2 + 1, sizeof(**out));
    if (*out == NULL) {
        freeReplyObject(h);
        return SW_ENOMEM;
    }
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const char *field = h->element[i]->str;
        cJSON *o = NULL;
        struct sw_error e = {0};
        double gpus = 0, price = 0, created = 0, deleted = 0;
        const char *cluster = NULL, *pool = NULL, *np = NULL;
        if (sw_json_parse(h->element[i + 1]->str, h->element[i + 1]->len, field, &o, &e) != 0 ||
            sw_json_string(o, "cluster", true, field, &cluster, &e) != 0 ||
            sw_json_string(o, "pool", true, field, &pool, &e) != 0 ||
            sw_json_string(o, "nodePool", true, field, &np, &e) != 0 ||
            life_num(o, field, "gpus", &gpus, &e) != 0 ||
            life_num(o, field, "pricePerGpuHour", &price, &e) != 0 ||
            life_num(o, field, "createdMs", &created, &e) != 0 ||
            life_num(o, field, "deletedMs", &deleted, &e) != 0) {
            fprintf(stderr, "spillctl report chargeback: skipping %s %s: %s\n", SW_KEY_NODE_HOURS,
                    field, e.msg);
            cJSON_Delete(o);
            continue;
        }
        struct sw_node_life *l = &(*out)[(*n)++];
        snprintf(l->pool, sizeof(l->pool), "%.31s/%.31s", cluster, pool);
        snprintf(l->nodepool, sizeof(l->nodepool), "%.*s", (int)sizeof(l->nodepool) - 1, np);
        l->gpus = gpus;
        l->price_gpu_h = price;
        l->created = created / 1000.0;
        l->deleted = deleted / 1000.0;
        cJSON_Delete(o);
    }
    freeReplyObject(h);
    return 0;
}

/* Usage being gathered: the Jobs' rows and their runs per pool, grown as
 * records are read. */
struct usage_acc {
    struct sw_job_usage *recs;
    struct sw_pool_run *runs;
    size_t n, cap;
};

/* Adds one record (JSON text, `what` names it in a message) as usage: its
 * last attempt, GPUs x hours run at the price of the pool it ran in. A
 * record that does not parse is skipped with a message; 0 or SW_ENOMEM. */
static int add_usage(struct usage_acc *u, const char *what, const char *text, size_t len)
{
    cJSON *o = NULL;
    struct sw_job_rec r;
    struct sw_error e = {0};
    if (sw_json_parse(text, len, what, &o, &e) != 0 || sw_job_rec_from_json(o, &r, &e) != 0) {
        fprintf(stderr, "spillctl report chargeback: skipping record %s: %s\n", what, e.msg);
        cJSON_Delete(o);
        return 0;
    }
    cJSON_Delete(o);
    enum sw_capacity cap;
    if (r.started_ms == 0 || sw_capacity_parse(r.capacity, &cap) != 0)
        return 0;
    if (u->n == u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 64;
        struct sw_job_usage *nr = sw_realloc(u->recs, nc * sizeof(*nr));
        if (nr == NULL)
            return SW_ENOMEM;
        u->recs = nr;
        struct sw_pool_run *np = sw_realloc(u->runs, nc * sizeof(*np));
        if (np == NULL)
            return SW_ENOMEM;
        u->runs = np;
        u->cap = nc;
    }
    int64_t end = r.finished_ms ? r.finished_ms : r.started_ms;
    struct sw_job_usage *ju = &u->recs[u->n];
    memset(ju, 0, sizeof(*ju));
    snprintf(ju->name, sizeof(ju->name), "%.*s", (int)sizeof(ju->name) - 1, r.key);
    snprintf(ju->team, sizeof(ju->team), "%.*s", (int)sizeof(ju->team) - 1,
             r.team[0] ? r.team : r.ns);
    ju->at = (double)(r.finished_ms ? r.finished_ms : r.observed_ms) / 1000.0;
    ju->gpu_h[cap] = sw_job_rec_billed_gpus(&r) * (double)(end - r.started_ms) / 3.6e6;
    ju->cost[cap] = ju->gpu_h[cap] * r.price_gpu_h;
    if (strcmp(r.target_cluster, r.cluster) != 0 && r.input_bytes > 1)
        ju->egress = (double)(r.input_bytes - 1) / 1e9 * 0.02;
    ju->preemptions = (unsigned)r.preemptions;
    /* Its run in the pool, for the NodePools' bills: a running Job until
     * now. */
    struct sw_pool_run *pr = &u->runs[u->n];
    memset(pr, 0, sizeof(*pr));
    snprintf(pr->pool, sizeof(pr->pool), "%.31s/%.31s", r.target_cluster, r.target_pool);
    pr->gpus = r.gpus;
    pr->start = (double)r.started_ms / 1000.0;
    pr->end = (double)(r.finished_ms ? r.finished_ms : now_ms()) / 1000.0;
    u->n++;
    return 0;
}

/* The hub's records as usage: the live records, and the ended ones
 * (SW_KEY_ENDED) of Jobs that finished at `from` (unix s) or later, the
 * only ones that can have run in the period. */
static int hub_usage(const struct sw_cli_globals *g, double from, struct sw_job_usage **out,
                     size_t *n, struct sw_pool_run **runs, size_t *nruns,
                     struct sw_node_life **lives, size_t *nlives, struct sw_error *err)
{
    char url[SW_CLI_REDIS_URL_MAX];
    redisContext *c = NULL;
    redisReply *keys = NULL, *ended = NULL;
    struct usage_acc u = {0};
    *out = NULL;
    *n = 0;
    *runs = NULL;
    *nruns = 0;
    if (sw_cli_redis_url(g, url, sizeof(url), err) != 0 ||
        sw_redis_sync_connect(url, 5000, &c, err) != 0)
        return err->code ? err->code : SW_EINVAL;
    int rc = sw_redis_sync_command(c, &keys, err, "SMEMBERS %s", SW_KEY_JOBS);
    if (rc != 0)
        goto out;
    for (size_t i = 0; i < keys->elements && rc == 0; i++) {
        redisReply *v = NULL;
        if (sw_redis_sync_command(c, &v, err, "GET %s%s", SW_KEY_JOB, keys->element[i]->str) != 0)
            continue;
        if (v->type == REDIS_REPLY_STRING)
            rc = add_usage(&u, keys->element[i]->str, v->str, v->len);
        freeReplyObject(v);
    }
    if (rc != 0)
        goto out;
    rc = sw_redis_sync_command(c, &ended, err, "ZRANGEBYSCORE %s %lld +inf", SW_KEY_ENDED,
                               (long long)(from * 1000.0));
    if (rc != 0)
        goto out;
    if (ended->type != REDIS_REPLY_ARRAY) {
        rc = sw_error_set(err, SW_EPARSE, "redis: %s is not a sorted set", SW_KEY_ENDED);
        goto out;
    }
    for (size_t i = 0; i < ended->elements && rc == 0; i++)
        if (ended->element[i]->type == REDIS_REPLY_STRING)
            rc = add_usage(&u, "(ended record)", ended->element[i]->str, ended->element[i]->len);
    if (rc != 0)
        goto out;
    rc = hub_lives(c, lives, nlives, err);
out:
    if (rc == 0 && u.recs == NULL) {
        /* Callers index the arrays: never NULL on success. */
        u.recs = sw_calloc(1, sizeof(*u.recs));
        u.runs = sw_calloc(1, sizeof(*u.runs));
        if (u.recs == NULL || u.runs == NULL)
            rc = SW_ENOMEM;
    }
    *out = u.recs;
    *n = u.n;
    *runs = u.runs;
    *nruns = u.n;
    if (keys)
        freeReplyObject(keys);
    if (ended)
        freeReplyObject(ended);
    sw_redis_sync_free(c);
    return rc;
}

static int chargeback(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    const char *from_s = NULL, *to_s = NULL, *sim = NULL, *policy = NULL, *epoch_s = NULL;
    int from_hub = 0;
    /* -o is a global option (controller/cli/globals.h). */
    const char *format = sw_cli_format_name(g->output);
    double price = -1;
    size_t it = 0;
    const char *optv;
    int ch;
    while ((ch = sw_cli_next(a, &it, &optv)) != -1) {
        switch (ch) {
        case 'f':
            from_s = optv;
            break;
        case 't':
            to_s = optv;
            break;
        case 's':
            sim = optv;
            break;
        case 'H':
            from_hub = 1;
            break;
        case 'p':
            policy = optv;
            break;
        case 'e':
            epoch_s = optv;
            break;
        case 'P': {
            char *end;
            price = strtod(optv, &end);
            if (end == optv || *end != '\0' || !isfinite(price) || price < 0 || price > 1e6) {
                fprintf(stderr,
                        "spillctl report chargeback: --ondemand-price: expected dollars per "
                        "GPU-hour, got "
                        "\"%s\"\n",
                        optv);
                return SW_EXIT_USAGE;
            }
            break;
        }
        }
    }
    if (from_s == NULL || to_s == NULL || (sim == NULL) == (from_hub == 0) || price < 0) {
        fprintf(stderr, "spillctl report chargeback: --from, --to, one of --from-hub and "
                        "--from-simulation, and --ondemand-price are required (see spillctl "
                        "report chargeback --help)\n");
        return SW_EXIT_USAGE;
    }
    if (strcmp(format, "table") != 0 && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0) {
        fprintf(stderr, "spillctl report chargeback: -o: expected table, csv or json, got \"%s\"\n",
                format);
        return SW_EXIT_USAGE;
    }
    double from, to, epoch = 0;
    if (parse_date("--from", from_s, &from) != 0 || parse_date("--to", to_s, &to) != 0 ||
        (epoch_s != NULL && parse_date("--epoch", epoch_s, &epoch) != 0))
        return SW_EXIT_USAGE;
    if (!(to > from)) {
        fprintf(stderr, "spillctl report chargeback: --to must be after --from\n");
        return SW_EXIT_USAGE;
    }
    char *buf = NULL;
    size_t len;
    struct sw_job_usage *recs = NULL;
    size_t n = 0;
    struct sw_error err = {0};
    int status = SW_EXIT_FAIL;
    struct sw_team_report *t = NULL;
    size_t nt = 0;
    struct sw_pool_run *runs = NULL;
    struct sw_node_life *lives = NULL;
    struct sw_nodepool_bill *bills = NULL;
    size_t nruns = 0, nlives = 0, nbills = 0;
    if (from_hub) {
        if (hub_usage(g, from, &recs, &n, &runs, &nruns, &lives, &nlives, &err) != 0 ||
            sw_chargeback_nodepools(lives, nlives, runs, nruns, from, to, (double)now_ms() / 1000.0,
                                    &bills, &nbills) != 0) {
            if (err.msg[0] == '\0')
                snprintf(err.msg, sizeof(err.msg), "out of memory");
            fprintf(stderr, "spillctl report chargeback: %s\n", err.msg);
            goto out;
        }
    } else {
        /* The file named on the command line: unreadable or malformed is
         * bad usage (2), as a bad flag is. */
        if (sw__cli_read_file("report chargeback", sim, &buf, &len) != 0)
            return SW_EXIT_USAGE;
        if (sw_job_usage_parse_csv(buf, len, sim, policy, &recs, &n, &err) != 0) {
            fprintf(stderr, "spillctl report chargeback: %s\n", err.msg);
            status = SW_EXIT_USAGE;
            goto out;
        }
    }
    /* A simulation's times are seconds from its epoch (0 for the hub's). */
    for (size_t i = 0; i < n; i++)
        recs[i].at += epoch;
    if (sw_chargeback_report(recs, n, from, to, price, &t, &nt) != 0) {
        fprintf(stderr, "spillctl report chargeback: out of memory\n");
        goto out;
    }
    if (strcmp(format, "table") == 0) {
        if (nt == 0)
            printf("No Job completed between %s and %s.\n", from_s, to_s);
        print_table(t, nt, recs, from_s, to_s, price);
        print_bills(bills, nbills);
    } else if (strcmp(format, "csv") == 0) {
        print_csv(t, nt);
    } else if (print_json(t, nt, recs, from_s, to_s, price, bills, nbills) != 0) {
        goto out;
    }
    status = SW_EXIT_OK;
out:
    sw_free(runs);
    sw_free(lives);
    sw_free(bills);
    sw_free(t);
    sw_free(recs);
    sw_free(buf);
    return status;
}

/* ---- report budget --------------------------------------------------------- */

/* The records a budget tally reads: the live ones and the runs of ended
 * ones since `from_ms`. A record that does not parse is skipped with a
 * message (it counts for no team), as chargeback does. */
struct budget_input {
    struct sw_job_rec *live;
    size_t nlive, cap_live;
    struct sw_budget_run *ended;
    size_t nended, cap_ended;
};

static int parse_rec(const char *what, const char *text, size_t len, struct sw_job_rec *r)
{
    cJSON *o = NULL;
    struct sw_error e = {0};
    int rc = sw_json_parse(text, len, what, &o, &e);
    if (rc == 0)
        rc = sw_job_rec_from_json(o, r, &e);
    cJSON_Delete(o);
    if (rc != 0)
        fprintf(stderr, "spillctl report budget: skipping record %s: %s\n", what, e.msg);
    return rc;
}

static int budget_read(redisContext *c, const struct sw_tenancy *t, int64_t from_ms,
                       struct budget_input *in, struct sw_error *err)
{
    redisReply *keys = NULL, *ended = NULL;
    int rc = sw_redis_sync_command(c, &keys, err, "SMEMBERS %s", SW_KEY_JOBS);
    for (size_t i = 0; rc == 0 && keys->type == REDIS_REPLY_ARRAY && i < keys->elements; i++) {
        redisReply *v = NULL;
        if (keys->element[i]->type != REDIS_REPLY_STRING ||
            sw_redis_sync_command(c, &v, err, "GET %s%s", SW_KEY_JOB, keys->element[i]->str) != 0)
            continue;
        if (v->type == REDIS_REPLY_STRING) {
            if (in->nlive == in->cap_live) {
                size_t nc = in->cap_live ? in->cap_live * 2 : 64;
                struct sw_job_rec *nr = sw_realloc(in->live, nc * sizeof(*nr));
                if (nr == NULL) {
                    freeReplyObject(v);
                    rc = SW_ENOMEM;
                    break;
                }
                in->live = nr;
                in->cap_live = nc;
            }
            if (parse_rec(keys->element[i]->str, v->str, v->len, &in->live[in->nlive]) == 0)
                in->nlive++;
        }
        freeReplyObject(v);
    }
    /* The spend entries (SW_KEY_SPEND) of runs that ended from `from_ms`
     * on, page by page as the hub reads them, all of them. */
    char from[32], cursor[64] = "";
    size_t skip = 0, skipped = 0;
    snprintf(from, sizeof(from), "%lld", (long long)from_ms);
    for (bool more = rc == 0; more && rc == 0;) {
        char skips[32], page[32];
        snprintf(skips, sizeof(skips), "%zu", cursor[0] ? skip : (size_t)0);
        snprintf(page, sizeof(page), "%d", SW_SPEND_PAGE);
        const char *argv[] = {"ZRANGEBYSCORE", SW_KEY_SPEND, cursor[0] ? cursor : from,
                              "+inf",          "WITHSCORES", "LIMIT",
                              skips,           page};
        rc = sw_redis_sync_command_argv(c, &ended, err, 8, argv, NULL);
        if (rc != 0)
            break;
        if (ended->type != REDIS_REPLY_ARRAY || ended->elements % 2 != 0) {
            rc = sw_error_set(err, SW_EPARSE, "redis: %s is not a sorted set", SW_KEY_SPEND);
            break;
        }
        size_t k = ended->elements / 2;
        more = k == SW_SPEND_PAGE;
        for (size_t i = 0; i < k; i++) {
            redisReply *e = ended->element[2 * i], *sc = ended->element[2 * i + 1];
            if (sc->type != REDIS_REPLY_STRING || sc->len == 0 || sc->len >= sizeof(cursor)) {
                rc = sw_error_set(err, SW_EPARSE, "redis: %s: a score that is not a number",
                                  SW_KEY_SPEND);
                break;
            }
            if (strcmp(sc->str, cursor) == 0) {
                skip++;
            } else {
                memcpy(cursor, sc->str, sc->len + 1);
                skip = 1;
            }
            struct sw_job_rec r;
            struct sw_error pe = {0};
            if (e->type != REDIS_REPLY_STRING ||
                sw_budget_spend_parse(e->str, e->len, &r, &pe) != 0) {
                if (skipped++ == 0)
                    fprintf(stderr, "spillctl report budget: skipping a spend entry: %s\n",
                            pe.msg[0] ? pe.msg : "not a string");
                continue;
            }
            if (in->nended == in->cap_ended) {
                size_t nc = in->cap_ended ? in->cap_ended * 2 : 64;
                struct sw_budget_run *nr = sw_realloc(in->ended, nc * sizeof(*nr));
                if (nr == NULL) {
                    rc = SW_ENOMEM;
                    break;
                }
                in->ended = nr;
                in->cap_ended = nc;
            }
            if (sw_budget_run_of(t, &r, &in->ended[in->nended]) != 0)
                fprintf(stderr,
                        "spillctl report budget: the spend entry of %s/%s (uid %s) has a price "
                        "out of bounds: it charges its team's whole budget\n",
                        r.cluster, r.ns, r.uid);
            in->nended++;
        }
        freeReplyObject(ended);
        ended = NULL;
    }
    if (skipped > 1)
        fprintf(stderr, "spillctl report budget: %zu spend entries skipped in all\n", skipped);
    if (keys)
        freeReplyObject(keys);
    if (ended)
        freeReplyObject(ended);
    if (rc == SW_ENOMEM)
        sw_error_set(err, SW_ENOMEM, "out of memory");
    return rc;
}

/* The published budgets' "epoch" (a whole number from 0) and "writtenMs"
 * (wall ms, a whole number from 0 to the year 9999): a Redis record is
 * input, each field named when it is wrong. */
static int published_stamp(const cJSON *o, double *epoch, double *written, struct sw_error *err)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "epoch");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "writtenMs");
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0 ||
        e->valuedouble > 9e15 || e->valuedouble != floor(e->valuedouble))
        return sw_error_set(err, SW_EPARSE, "%s: field \"epoch\": expected a whole number from 0",
                            SW_KEY_BUDGETS);
    if (!cJSON_IsNumber(w) || !isfinite(w->valuedouble) || w->valuedouble < 0 ||
        w->valuedouble > 253402300800000.0 || w->valuedouble != floor(w->valuedouble))
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"writtenMs\": expected wall milliseconds (a whole number "
                            "from 0 to the year 9999)",
                            SW_KEY_BUDGETS);
    *epoch = e->valuedouble;
    *written = w->valuedouble;
    return 0;
}

/* Says on stderr when the budgets were written under an epoch other than
 * the current one (a new leader has not written its own yet) or more than
 * 5 minutes ago (the leader rewrites them every minute). */
static void published_note(redisContext *c, double epoch, double written, int64_t now)
{
    redisReply *cur = NULL;
    struct sw_error err = {0};
    if (sw_redis_sync_command(c, &cur, &err, "GET %s", SW_KEY_EPOCH) == 0 &&
        cur->type == REDIS_REPLY_STRING) {
        char *end = NULL;
        errno = 0;
        long long ce = strtoll(cur->str, &end, 10);
        if (errno == 0 && end != cur->str && *end == '\0' && (double)ce != epoch)
            fprintf(stderr,
                    "spillctl report budget: note: the budgets were written under epoch %.0f, "
                    "the current one is %lld (a new leader writes its own within a minute)\n",
                    epoch, ce);
    }
    if (cur)
        freeReplyObject(cur);
    if ((double)now - written > 300000.0)
        fprintf(stderr,
                "spillctl report budget: note: the budgets were written %.0f min ago; a leading "
                "hub rewrites them every minute (is one leading?)\n",
                ((double)now - written) / 60000.0);
}

static void utc_date(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d", &tm);
}

static double used_fraction(const struct sw_budget_status *s)
{
    double spent = s->committed + s->in_flight;
    if (s->amount > 0)
        return spent / s->amount;
    return spent > 0 ? 1.0 : 0.0;
}

static int budget_print_json(const struct sw_budget_status *st, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *teams = root ? cJSON_AddArrayToObject(root, "teams") : NULL;
    bool ok = teams != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const struct sw_budget_status *s = &st[i];
        char from[16], to[16];
        utc_date(s->start_ms, from, sizeof(from));
        utc_date(s->end_ms, to, sizeof(to));
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(teams, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddStringToObject(o, "team", s->team) &&
             cJSON_AddStringToObject(o, "period", sw_budget_period_name(s->period)) &&
             cJSON_AddStringToObject(o, "from", from) && cJSON_AddStringToObject(o, "to", to) &&
             cJSON_AddNumberToObject(o, "budget", round(s->amount * 100) / 100) &&
             cJSON_AddNumberToObject(o, "committed", round(s->committed * 100) / 100) &&
             cJSON_AddNumberToObject(o, "inFlight", round(s->in_flight * 100) / 100) &&
             cJSON_AddNumberToObject(o, "left", round(sw_budget_left(s) * 100) / 100) &&
             cJSON_AddNumberToObject(o, "usedFraction", round(used_fraction(s) * 10000) / 10000);
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (text == NULL) {
        fprintf(stderr, "spillctl report budget: out of memory\n");
        return -1;
    }
    puts(text);
    cJSON_free(text);
    return 0;
}

static void budget_print_table(const struct sw_budget_status *st, size_t n)
{
    if (n == 0) {
        printf("No team budgets: the leading hub's configuration sets none (budgets).\n");
        return;
    }
    printf("%-24s %-6s %-23s %14s %14s %14s %14s %7s\n", "TEAM", "PERIOD", "FROM-TO", "BUDGET",
           "COMMITTED", "IN FLIGHT", "LEFT", "USED");
    for (size_t i = 0; i < n; i++) {
        const struct sw_budget_status *s = &st[i];
        char from[16], to[16], range[40], a[48], b[48], c[48], d[48];
        utc_date(s->start_ms, from, sizeof(from));
        utc_date(s->end_ms, to, sizeof(to));
        snprintf(range, sizeof(range), "%s-%s", from, to);
        printf("%-24s %-6s %-23s %14s %14s %14s %14s %6.1f%%\n", s->team,
               sw_budget_period_name(s->period), range, money(s->amount, 2, a, sizeof(a)),
               money(s->committed, 2, b, sizeof(b)), money(s->in_flight, 2, c, sizeof(c)),
               money(sw_budget_left(s), 2, d, sizeof(d)), 100.0 * used_fraction(s));
    }
}

static int budget(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    (void)a;
    const char *format = sw_cli_format_name(g->output);
    if (strcmp(format, "table") != 0 && strcmp(format, "json") != 0) {
        fprintf(stderr, "spillctl report budget: -o: expected table or json, got \"%s\"\n", format);
        return SW_EXIT_USAGE;
    }
    char url[SW_CLI_REDIS_URL_MAX];
    redisContext *c = NULL;
    redisReply *pub = NULL;
    struct sw_error err = {0};
    struct budget_input in = {0};
    struct sw_tenancy grants = {0};
    struct sw_team_budget *budgets = sw_calloc(SW_HUB_MAX_BUDGETS, sizeof(*budgets));
    struct sw_budget_status *st = sw_calloc(SW_HUB_MAX_BUDGETS, sizeof(*st));
    size_t nb = 0;
    int status = SW_EXIT_FAIL;
    if (budgets == NULL || st == NULL) {
        fprintf(stderr, "spillctl report budget: out of memory\n");
        goto out;
    }
    if (sw_cli_redis_url(g, url, sizeof(url), &err) != 0 ||
        sw_redis_sync_connect(url, 5000, &c, &err) != 0 ||
        sw_redis_sync_command(c, &pub, &err, "GET %s", SW_KEY_BUDGETS) != 0) {
        fprintf(stderr, "spillctl report budget: %s\n", err.msg);
        goto out;
    }
    if (pub->type == REDIS_REPLY_STRING) {
        cJSON *o = NULL;
        double epoch = 0, written = 0;
        if (sw_json_parse(pub->str, pub->len, SW_KEY_BUDGETS, &o, &err) != 0 ||
            sw_budgets_from_json(o, budgets, &nb, &err) != 0 ||
            sw_budget_grants_from_json(o, &grants, &err) != 0 ||
            published_stamp(o, &epoch, &written, &err) != 0) {
            cJSON_Delete(o);
            fprintf(stderr, "spillctl report budget: %s\n", err.msg);
            goto out;
        }
        cJSON_Delete(o);
        published_note(c, epoch, written, now_ms());
    }
    int64_t now = now_ms(), from = now;
    for (size_t i = 0; i < nb; i++) {
        int64_t s = sw_budget_period_start(budgets[i].period, now);
        if (s < from)
            from = s;
    }
    if (nb > 0) {
        if (budget_read(c, &grants, from, &in, &err) != 0) {
            fprintf(stderr, "spillctl report budget: %s\n", err.msg);
            goto out;
        }
        const struct sw_job_rec **live = sw_calloc(in.nlive + 1, sizeof(*live));
        if (live == NULL) {
            fprintf(stderr, "spillctl report budget: out of memory\n");
            goto out;
        }
        for (size_t i = 0; i < in.nlive; i++)
            live[i] = &in.live[i];
        size_t bad = 0;
        int rc = sw_budget_tally(budgets, nb, &grants, live, in.nlive, in.ended, in.nended, now, st,
                                 &bad);
        if (bad > 0)
            fprintf(stderr,
                    "spillctl report budget: %zu live record(s) whose price or expected cost is "
                    "out of bounds charge their team's whole budget\n",
                    bad);
        sw_free(live);
        if (rc != 0) {
            fprintf(stderr, "spillctl report budget: out of memory\n");
            goto out;
        }
    }
    if (strcmp(format, "json") == 0) {
        if (budget_print_json(st, nb) != 0)
            goto out;
    } else {
        budget_print_table(st, nb);
    }
    status = SW_EXIT_OK;
out:
    if (pub)
        freeReplyObject(pub);
    sw_redis_sync_free(c);
    sw_free(in.live);
    sw_free(in.ended);
    sw_tenancy_free(&grants);
    sw_free(budgets);
    sw_free(st);
    return status;
}

static const struct sw_cli_opt opts[] = {
    {"from", 0, SW_CLI_VALUE, 'f', "DATE"},
    {"to", 0, SW_CLI_VALUE, 't', "DATE"},
    {"from-simulation", 0, SW_CLI_VALUE, 's', "FILE"},
    {"from-hub", 0, SW_CLI_FLAG, 'H', NULL},
    {"policy", 0, SW_CLI_VALUE, 'p', "LABEL"},
    {"epoch", 0, SW_CLI_VALUE, 'e', "DATE"},
    {"ondemand-price", 0, SW_CLI_VALUE, 'P', "DOLLARS"},
};

const struct sw_cli_spec sw_cli_report_specs[] = {
    {.path = "report chargeback",
     .formats = SW_CLI_FMT(SW_CLI_TABLE) | SW_CLI_FMT(SW_CLI_CSV) | SW_CLI_FMT(SW_CLI_JSON),
     .summary = "per-team chargeback: GPU-hours, cost, savings",
     .help = "Usage: spillctl report chargeback --from DATE --to DATE\n"
             "                                  --from-hub | --from-simulation FILE\n"
             "                                  --ondemand-price DOLLARS\n"
             "                                  [--policy LABEL] [--epoch DATE]\n"
             "                                  [-o table|csv|json]\n"
             "\n"
             "Per team, over [--from, --to): GPU-hours at home, on spot and on-demand, their\n"
             "cost, egress, the total, what the same GPU-hours would cost on on-demand and\n"
             "the saving, preemptions and lost GPU-hours, and the costliest Jobs. A Job\n"
             "counts in the period it completed in (or was submitted in, if it never did).\n"
             "From the hub, pools bound to a Karpenter NodePool are billed too: their\n"
             "nodes' hours in the period (NodeClaim created to deleted) x GPUs x the pool's\n"
             "price, the share of the Jobs that ran there by their GPUs, and the idle rest\n"
             "(provisioning, partly used nodes, consolidation); in the table and in JSON\n"
             "(\"nodepools\"), not in CSV.\n"
             "\n"
             "Options:\n"
             "  --from DATE, --to DATE   the period: YYYY-MM-DD or RFC 3339\n"
             "  --from-hub               the hub's records in Redis (the global --redis),\n"
             "                           live and ended (spillway:ended, records.archiveDays):\n"
             "                           each Job's last attempt, GPUs x hours run, at the\n"
             "                           price of the pool it ran in; inputs moved out of\n"
             "                           their region at $0.02 per GB\n"
             "  --from-simulation FILE   the per-Job CSV of spillctl simulate --jobs-csv\n"
             "  --policy LABEL           the run to report (needed when FILE holds several)\n"
             "  --epoch DATE             the date of a simulation's time 0 (default 1970-01-01)\n"
             "  --ondemand-price DOLLARS price per GPU-hour the savings are measured against\n"
             "  -o FORMAT                table (default), csv or json (the global -o)\n",
     .examples = "  spillctl report chargeback --from-hub --from 2026-11-01 --to 2026-12-01 \\\n"
                 "      --ondemand-price 4.10\n"
                 "  spillctl report chargeback --from-simulation jobs.csv --policy cost-aware \\\n"
                 "      --from 1970-01-01 --to 1970-01-31 --ondemand-price 4.10 -o csv\n",
     .opts = opts,
     .nopts = sizeof(opts) / sizeof(opts[0]),
     .run = chargeback},
    {.path = "report budget",
     .formats = SW_CLI_FMT(SW_CLI_TABLE) | SW_CLI_FMT(SW_CLI_JSON),
     .summary = "per-team cloud budgets: budget, committed, in flight, left",
     .help = "Usage: spillctl report budget [-o table|json]\n"
             "\n"
             "Per team with a budget (the leading hub's configuration, budgets): its\n"
             "period (month, week or day, UTC) and the dates it runs from and to, the\n"
             "budget, what is committed (its Jobs' runs on spot and on-demand inside the\n"
             "period: GPUs billed x price x hours), what is in flight (bursts decided or\n"
             "running: what they reserved not yet run), what is left and the share used.\n"
             "The same tally the hub decides with, from Redis (the global --redis): the\n"
             "live records and the runs of ended ones that finished in the period\n"
             "(spillway:spend, read whole, page by page): a burst that does not fit in\n"
             "what is left stays at home (BudgetExhausted).\n"
             "\n"
             "Options:\n"
             "  -o FORMAT                table (default) or json (the global -o)\n",
     .examples = "  spillctl report budget\n"
                 "  spillctl report budget -o json\n",
     .opts = NULL,
     .nopts = 0,
     .run = budget},
};
const size_t sw_cli_report_nspecs = 2;
