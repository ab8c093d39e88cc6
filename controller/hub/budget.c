/*
 * budget.c - team budgets' arithmetic (budget.h): periods in UTC, what a
 * run cost inside a period, what a burst in flight is still expected to
 * cost, and every team's tally from the records, each counted once.
 */
#include "controller/hub/budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctype.h>
#include <math.h>

#include "common/dns1123.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/json.h"
#include "controller/hub/runtimes.h"

#define MS_PER_DAY 86400000LL

static const char *const period_names[] = {"month", "week", "day"};

const char *sw_budget_period_name(enum sw_budget_period p)
{
    return (unsigned)p < sizeof(period_names) / sizeof(period_names[0]) ? period_names[p] : "?";
}

int sw_budget_period_parse(const char *s, enum sw_budget_period *out)
{
    for (size_t i = 0; s != NULL && i < sizeof(period_names) / sizeof(period_names[0]); i++)
        if (strcmp(s, period_names[i]) == 0) {
            *out = (enum sw_budget_period)i;
            return 0;
        }
    return SW_EINVAL;
}

/* Days since 1970-01-01 of a civil date, and back (H. Hinnant's
 * algorithms, proleptic Gregorian): no libc time zone involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* Floor division for times before 1970 too. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t sw_budget_period_start(enum sw_budget_period p, int64_t now_ms)
{
    int64_t day = floor_div(now_ms, MS_PER_DAY);
    switch (p) {
    case SW_PERIOD_DAY:
        return day * MS_PER_DAY;
    case SW_PERIOD_WEEK: {
        /* 1970-01-01 was a Thursday: day 0 is 3 days after a Monday. */
        int64_t monday = day - (((day + 3) % 7) + 7) % 7;
        return monday * MS_PER_DAY;
    }
    case SW_PERIOD_MONTH:
    default: {
        int64_t y;
        unsigned m;
        civil_from_days(day, &y, &m);
        return days_from_civil(y, m, 1) * MS_PER_DAY;
    }
    }
}

int64_t sw_budget_period_end(enum sw_budget_period p, int64_t now_ms)
{
    int64_t start = sw_budget_period_start(p, now_ms);
    switch (p) {
    case SW_PERIOD_DAY:
        return start + MS_PER_DAY;
    case SW_PERIOD_WEEK:
        return start + 7 * MS_PER_DAY;
    case SW_PERIOD_MONTH:
    default: {
        int64_t y;
        unsigned m;
        civil_from_days(floor_div(start, MS_PER_DAY), &y, &m);
        return days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * MS_PER_DAY;
    }
    }
}

void sw_budget_key_of(const struct sw_tenancy *t, const struct sw_job_rec *r, char out[SW_NAME_MAX])
{
    const struct sw_grant *g = sw_tenancy_find(t, r->cluster, r->ns);
    bool named = false;
    for (size_t i = 0; g != NULL && r->team[0] && i < g->nteams && !named; i++)
        named = strcmp(g->teams[i], r->team) == 0;
    /* The same keys as the runtimes' learners (runtimes.c). */
    sw_runtime_learner(named, r->team, r->cluster, r->ns, out);
}

bool sw_budget_cloud(const char *capacity)
{
    return strcmp(capacity, "spot") == 0 || strcmp(capacity, "on-demand") == 0;
}

/* A rate (USD per ms) and an expected cost a budget believes. */
static bool sane_rate(double per_ms)
{
    return isfinite(per_ms) && per_ms >= 0 && per_ms <= SW_BUDGET_MAX_RATE_H / 3.6e6;
}

static bool sane_cost(double usd)
{
    return isfinite(usd) && usd >= 0 && usd <= SW_BUDGET_MAX_COST;
}

int64_t sw_budget_start_of(const struct sw_job_rec *r)
{
    if (r->started_ms > 0)
        return r->started_ms;
    /* A mirror dispatched and never seen running (a readiness probe that
     * never passes, say): billed from its dispatch, while it is out there
     * and once it has ended (failed, its origin deleted), as the hub bills
     * it (follow.c finish). */
    switch (r->state) {
    case SW_JS_DISPATCHED:
    case SW_JS_RUNNING:
    case SW_JS_SUCCEEDED:
    case SW_JS_FAILED:
        return r->dispatched_ms > 0 ? r->dispatched_ms : 0;
    default:
        return 0;
    }
}

char *sw_budget_spend_entry(const struct sw_job_rec *r, int64_t end_ms)
{
    int64_t start = sw_budget_start_of(r);
    if (!sw_budget_cloud(r->capacity) || start <= 0)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    bool ok = cJSON_AddStringToObject(o, "uid", r->uid) &&
              cJSON_AddStringToObject(o, "cluster", r->cluster) &&
              cJSON_AddStringToObject(o, "namespace", r->ns) &&
              cJSON_AddStringToObject(o, "team", r->team) &&
              cJSON_AddStringToObject(o, "capacity", r->capacity) &&
              cJSON_AddNumberToObject(o, "billedGpus", sw_job_rec_billed_gpus(r)) &&
              cJSON_AddNumberToObject(o, "pricePerGpuHour", r->price_gpu_h) &&
              cJSON_AddNumberToObject(o, "startedMs", (double)start) &&
              cJSON_AddNumberToObject(o, "finishedMs", (double)end_ms);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

/* Wall ms from 0 to the year 9999. */
#define SPEND_MAX_MS 253402300800000.0

static int spend_str(const cJSON *o, const char *k, char *out, size_t cap, bool needed,
                     struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap || (needed && !v->valuestring[0]))
        return sw_error_set(err, SW_EPARSE,
                            "%s entry: field \"%s\": expected a string of %s%zu characters",
                            SW_KEY_SPEND, k, needed ? "1 to " : "at most ", cap - 1);
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

static int spend_num(const cJSON *o, const char *k, double lo, double hi, double *out,
                     struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return sw_error_set(err, SW_EPARSE,
                            "%s entry: field \"%s\": expected a number from %g to %g", SW_KEY_SPEND,
                            k, lo, hi);
    *out = v->valuedouble;
    return 0;
}

int sw_budget_spend_parse(const char *text, size_t len, struct sw_job_rec *r, struct sw_error *err)
{
    memset(r, 0, sizeof(*r));
    cJSON *o = NULL;
    int rc = sw_json_parse(text, len, SW_KEY_SPEND, &o, err);
    if (rc != 0)
        return SW_EPARSE;
    double gpus = 0, price = 0, start = 0, end = 0;
    if (!cJSON_IsObject(o))
        rc = sw_error_set(err, SW_EPARSE, "%s entry: expected an object", SW_KEY_SPEND);
    if (rc == 0)
        rc = spend_str(o, "uid", r->uid, sizeof(r->uid), true, err);
    if (rc == 0)
        rc = spend_str(o, "cluster", r->cluster, sizeof(r->cluster), true, err);
    if (rc == 0)
        rc = spend_str(o, "namespace", r->ns, sizeof(r->ns), true, err);
    if (rc == 0)
        rc = spend_str(o, "team", r->team, sizeof(r->team), false, err);
    if (rc == 0)
        rc = spend_str(o, "capacity", r->capacity, sizeof(r->capacity), true, err);
    /* The rate's bounds are the budget's (sw_budget_run_of): out of them
     * the entry still parses, and the tally fails closed on it. */
    if (rc == 0)
        rc = spend_num(o, "billedGpus", -1e300, 1e300, &gpus, err);
    if (rc == 0)
        rc = spend_num(o, "pricePerGpuHour", -1e300, 1e300, &price, err);
    if (rc == 0)
        rc = spend_num(o, "startedMs", 1, SPEND_MAX_MS, &start, err);
    if (rc == 0)
        rc = spend_num(o, "finishedMs", 0, SPEND_MAX_MS, &end, err);
    cJSON_Delete(o);
    if (rc != 0) {
        memset(r, 0, sizeof(*r));
        return SW_EPARSE;
    }
    r->state = SW_JS_SUCCEEDED;
    r->billed_gpus = gpus;
    r->price_gpu_h = price;
    r->started_ms = (int64_t)start;
    r->finished_ms = (int64_t)end;
    return 0;
}

int sw_budget_run_of(const struct sw_tenancy *t, const struct sw_job_rec *r,
                     struct sw_budget_run *out)
{
    memset(out, 0, sizeof(*out));
    sw_budget_key_of(t, r, out->team);
    snprintf(out->uid, sizeof(out->uid), "%.*s", (int)sizeof(out->uid) - 1, r->uid);
    double gpus = sw_job_rec_billed_gpus(r);
    /* No GPUs or a zero price bill nothing; a price that is not a number,
     * or a negative factor (two of them would make a positive rate), is
     * out of bounds. */
    double rate = gpus > 0 && r->price_gpu_h != 0 ? gpus * r->price_gpu_h / 3.6e6 : 0;
    out->bad = true;
    if (r->gpus < 0 || r->billed_gpus < 0 || !(r->price_gpu_h >= 0) || !sane_rate(rate) ||
        !sane_cost(r->expected_cost > 0 ? r->expected_cost : 0) ||
        !sane_cost(r->reserved_cost > 0 ? r->reserved_cost : 0))
        return SW_ERANGE;
    out->bad = false;
    out->cloud = sw_budget_cloud(r->capacity);
    out->started_ms = sw_budget_start_of(r);
    out->finished_ms = r->finished_ms;
    out->dollars_per_ms = rate;
    return 0;
}

double sw_budget_reserve_s(const struct sw_estimate *b, size_t min_runs, double prior_mean_s)
{
    double mean = sw_estimate_mean(b);
    double p90 = b->median_s * exp(SW_BUDGET_RESERVE_Z * b->sigma);
    double r = isfinite(p90) && p90 > mean ? p90 : mean;
    if (b->source == SW_EST_ANNOTATION && b->runs < min_runs && prior_mean_s > r)
        r = prior_mean_s;
    if (!isfinite(r) || r > SW_MAX_SECONDS)
        r = SW_MAX_SECONDS;
    return r;
}

double sw_budget_run_committed(const struct sw_budget_run *run, int64_t start_ms, int64_t now_ms)
{
    if (!run->cloud || run->started_ms <= 0)
        return 0;
    int64_t from = run->started_ms > start_ms ? run->started_ms : start_ms;
    int64_t to = run->finished_ms > 0 ? run->finished_ms : now_ms;
    if (to > now_ms)
        to = now_ms;
    return to > from ? run->dollars_per_ms * (double)(to - from) : 0;
}

double sw_budget_in_flight(const struct sw_job_rec *r, int64_t now_ms)
{
    switch (r->state) {
    case SW_JS_DECIDED:
    case SW_JS_DATA_READY:
    case SW_JS_DISPATCHING:
    case SW_JS_DISPATCHED:
    case SW_JS_RUNNING:
        break;
    default:
        return 0;
    }
    /* What its decision reserved; a record without a reservation (no
     * budget then, or written before): its expected cost. */
    double reserved = r->reserved_cost > 0 ? r->reserved_cost : r->expected_cost;
    if (!sw_budget_cloud(r->capacity) || !(reserved > 0) || !sane_cost(reserved))
        return 0;
    /* Less what it has cost so far, from when the budget counts it
     * committed (sw_budget_run_of: a dispatched mirror from its dispatch). */
    int64_t from = sw_budget_start_of(r);
    double so_far = 0;
    if (from > 0 && now_ms > from)
        so_far = sw_job_rec_billed_gpus(r) * r->price_gpu_h * (double)(now_ms - from) / 3.6e6;
    double left = reserved - so_far;
    return left > 0 && left <= SW_BUDGET_MAX_COST ? left : 0;
}

double sw_budget_left(const struct sw_budget_status *s)
{
    double left = s->amount - s->committed - s->in_flight;
    return left > 0 ? left : 0;
}

bool sw_budget_fits(const struct sw_budget_status *s, double cost)
{
    return s->committed + s->in_flight + cost <= s->amount;
}

void sw_budget_engine(const struct sw_budget_status *s, struct sw_budget *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->team, sizeof(out->team), "%.*s", (int)sizeof(out->team) - 1, s->team);
    out->cap = s->amount;
    /* Never more than the cap, nor a number the engine refuses. */
    double spent = s->committed + s->in_flight;
    out->spent = isfinite(spent) && spent >= 0 && spent < s->amount ? spent : s->amount;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Ended runs ordered by UID, then by position: the first of a UID counts. */
static int cmp_run(const void *a, const void *b)
{
    const struct sw_budget_run *x = *(const struct sw_budget_run *const *)a;
    const struct sw_budget_run *y = *(const struct sw_budget_run *const *)b;
    int c = strcmp(x->uid, y->uid);
    return c != 0 ? c : (x > y) - (x < y);
}

static int find_budget(const struct sw_team_budget *b, size_t nb, const char *team)
{
    for (size_t i = 0; i < nb; i++)
        if (strcmp(b[i].team, team) == 0)
            return (int)i;
    return -1;
}

int sw_budget_tally(const struct sw_team_budget *b, size_t nb, const struct sw_tenancy *t,
                    const struct sw_job_rec *const *live, size_t nlive,
                    const struct sw_budget_run *ended, size_t nended, int64_t now_ms,
                    struct sw_budget_status *out, size_t *nbad)
{
    if (nbad)
        *nbad = 0;
    for (size_t i = 0; i < nb; i++) {
        struct sw_budget_status *s = &out[i];
        memset(s, 0, sizeof(*s));
        snprintf(s->team, sizeof(s->team), "%s", b[i].team);
        s->amount = b[i].amount;
        s->period = b[i].period;
        s->start_ms = sw_budget_period_start(b[i].period, now_ms);
        s->end_ms = sw_budget_period_end(b[i].period, now_ms);
    }
    if (nb == 0)
        return 0;
    const char **seen = sw_malloc((nlive + 1) * sizeof(*seen));
    const struct sw_budget_run **order = sw_malloc((nended + 1) * sizeof(*order));
    if (seen == NULL || order == NULL) {
        sw_free(seen);
        sw_free(order);
        return SW_ENOMEM;
    }
    size_t nseen = 0;
    for (size_t i = 0; i < nlive; i++) {
        const struct sw_job_rec *r = live[i];
        if (r->uid[0])
            seen[nseen++] = r->uid;
        struct sw_budget_run run;
        int bad = sw_budget_run_of(t, r, &run);
        if (bad != 0 && nbad)
            (*nbad)++;
        int k = find_budget(b, nb, run.team);
        if (k < 0)
            continue;
        if (bad != 0) {
            out[k].committed += b[k].amount; /* fail closed: nothing left */
            continue;
        }
        out[k].committed += sw_budget_run_committed(&run, out[k].start_ms, now_ms);
        out[k].in_flight += sw_budget_in_flight(r, now_ms);
    }
    qsort(seen, nseen, sizeof(*seen), cmp_str);
    /* An ended run counts unless a live record has its UID (it is being
     * archived: the live record counts) or another ended run of that UID
     * came before it (read twice). A run without a UID counts alone. */
    for (size_t i = 0; i < nended; i++)
        order[i] = &ended[i];
    qsort(order, nended, sizeof(*order), cmp_run);
    for (size_t o = 0; o < nended; o++) {
        const struct sw_budget_run *run = order[o];
        if (run->uid[0]) {
            const char *key = run->uid;
            if (o > 0 && strcmp(order[o - 1]->uid, key) == 0)
                continue;
            if (bsearch(&key, seen, nseen, sizeof(*seen), cmp_str) != NULL)
                continue;
        }
        int k = find_budget(b, nb, run->team);
        if (k >= 0)
            out[k].committed += run->bad ? b[k].amount /* fail closed */
                                         : sw_budget_run_committed(run, out[k].start_ms, now_ms);
    }
    sw_free(seen);
    sw_free(order);
    return 0;
}

int sw_budgets_from_json(const cJSON *o, struct sw_team_budget *out, size_t *n,
                         struct sw_error *err)
{
    *n = 0;
    const cJSON *a = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "budgets") : NULL;
    if (!cJSON_IsArray(a))
        return sw_error_set(err, SW_EPARSE, "%s: expected an object with a list \"budgets\"",
                            SW_KEY_BUDGETS);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (i == SW_HUB_MAX_BUDGETS)
            return sw_error_set(err, SW_EPARSE, "%s: more than %d budgets", SW_KEY_BUDGETS,
                                SW_HUB_MAX_BUDGETS);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "team");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "amount");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "period");
        struct sw_team_budget *b = &out[i];
        memset(b, 0, sizeof(*b));
        if (!cJSON_IsString(t) || !sw_dns1123_label(t->valuestring))
            return sw_error_set(err, SW_EPARSE,
                                "%s: budgets[%zu].team: expected a team name (a DNS-1123 label)",
                                SW_KEY_BUDGETS, i);
        if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) || m->valuedouble < 0 ||
            m->valuedouble > SW_BUDGET_MAX_AMOUNT)
            return sw_error_set(err, SW_EPARSE,
                                "%s: budgets[%zu].amount: expected US dollars from 0 to %g",
                                SW_KEY_BUDGETS, i, SW_BUDGET_MAX_AMOUNT);
        if (!cJSON_IsString(p) || sw_budget_period_parse(p->valuestring, &b->period) != 0)
            return sw_error_set(err, SW_EPARSE,
                                "%s: budgets[%zu].period: expected month, week or day",
                                SW_KEY_BUDGETS, i);
        snprintf(b->team, sizeof(b->team), "%s", t->valuestring);
        b->amount = m->valuedouble;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out[j].team, b->team) == 0)
                return sw_error_set(err, SW_EPARSE, "%s: budgets[%zu].team: %s given twice",
                                    SW_KEY_BUDGETS, i, b->team);
        i++;
    }
    *n = i;
    return 0;
}

int sw_budget_grants_to_json(const struct sw_tenancy *t, cJSON *o)
{
    cJSON *a = cJSON_AddArrayToObject(o, "grants");
    if (a == NULL)
        return SW_ENOMEM;
    for (size_t i = 0; t != NULL && i < t->n; i++) {
        const struct sw_grant *g = &t->grants[i];
        if (g->nteams == 0)
            continue;
        cJSON *e = cJSON_CreateObject(), *teams = NULL;
        if (e == NULL || !cJSON_AddItemToArray(a, e) ||
            cJSON_AddStringToObject(e, "cluster", g->cluster) == NULL ||
            cJSON_AddStringToObject(e, "namespace", g->ns) == NULL ||
            (teams = cJSON_AddArrayToObject(e, "teams")) == NULL)
            return SW_ENOMEM;
        for (size_t k = 0; k < g->nteams; k++) {
            cJSON *s = cJSON_CreateString(g->teams[k]);
            if (s == NULL || !cJSON_AddItemToArray(teams, s)) {
                cJSON_Delete(s);
                return SW_ENOMEM;
            }
        }
    }
    return 0;
}

static bool short_string(const cJSON *s, size_t len)
{
    return cJSON_IsString(s) && s->valuestring[0] != '\0' && strlen(s->valuestring) < len;
}

int sw_budget_grants_from_json(const cJSON *o, struct sw_tenancy *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const cJSON *a = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "grants") : NULL;
    if (a == NULL)
        return 0;
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (n < 0 || n > SW_TENANCY_MAX_GRANTS)
        return sw_error_set(err, SW_EPARSE, "%s: field \"grants\": expected a list of at most %d",
                            SW_KEY_BUDGETS, SW_TENANCY_MAX_GRANTS);
    out->grants = sw_calloc((size_t)n + 1, sizeof(*out->grants));
    if (out->grants == NULL)
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, a)
    {
        struct sw_grant *g = &out->grants[i];
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "cluster");
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(e, "namespace");
        const cJSON *teams = cJSON_GetObjectItemCaseSensitive(e, "teams");
        const char *bad = !short_string(c, sizeof(g->cluster)) ? "cluster"
                          : !short_string(ns, sizeof(g->ns))   ? "namespace"
                          : !cJSON_IsArray(teams) || cJSON_GetArraySize(teams) < 1 ||
                                  cJSON_GetArraySize(teams) > SW_GRANT_MAX_TEAMS
                              ? "teams"
                              : NULL;
        const cJSON *t;
        cJSON_ArrayForEach(t, teams)
        {
            if (bad != NULL)
                break;
            if (!cJSON_IsString(t) || !sw_dns1123_label(t->valuestring))
                bad = "teams";
            else
                snprintf(g->teams[g->nteams++], sizeof(g->teams[0]), "%s", t->valuestring);
        }
        if (bad != NULL) {
            sw_tenancy_free(out);
            return sw_error_set(
                err, SW_EPARSE, "%s: grants[%zu].%s: expected %s", SW_KEY_BUDGETS, i, bad,
                strcmp(bad, "teams") == 0 ? "a list of 1 to 8 team names (DNS-1123 labels)"
                                          : "a name shorter than 64 bytes");
        }
        snprintf(g->cluster, sizeof(g->cluster), "%s", c->valuestring);
        snprintf(g->ns, sizeof(g->ns), "%s", ns->valuestring);
        i++;
    }
    out->n = i;
    return 0;
}
