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

#include "common/alloc.h"
#include "common/error.h"

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

const char *sw_budget_team_of(const struct sw_job_rec *r)
{
    return r->team[0] ? r->team : r->ns;
}

static bool cloud_capacity(const char *capacity)
{
    return strcmp(capacity, "spot") == 0 || strcmp(capacity, "on-demand") == 0;
}

void sw_budget_run_of(const struct sw_job_rec *r, struct sw_budget_run *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->team, sizeof(out->team), "%.*s", (int)sizeof(out->team) - 1,
             sw_budget_team_of(r));
    snprintf(out->uid, sizeof(out->uid), "%.*s", (int)sizeof(out->uid) - 1, r->uid);
    out->cloud = cloud_capacity(r->capacity);
    out->started_ms = r->started_ms;
    out->finished_ms = r->finished_ms;
    double rate = sw_job_rec_billed_gpus(r) * r->price_gpu_h / 3.6e6;
    out->dollars_per_ms = rate > 0 ? rate : 0;
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
    if (!cloud_capacity(r->capacity) || !(r->expected_cost > 0))
        return 0;
    double left = r->expected_cost - sw_job_rec_cost(r, now_ms);
    return left > 0 ? left : 0;
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
    out->spent = s->committed + s->in_flight;
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

int sw_budget_tally(const struct sw_team_budget *b, size_t nb, const struct sw_job_rec *const *live,
                    size_t nlive, const struct sw_budget_run *ended, size_t nended, int64_t now_ms,
                    struct sw_budget_status *out)
{
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
        int k = find_budget(b, nb, sw_budget_team_of(r));
        if (k < 0)
            continue;
        struct sw_budget_run run;
        sw_budget_run_of(r, &run);
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
            out[k].committed += sw_budget_run_committed(run, out[k].start_ms, now_ms);
    }
    sw_free(seen);
    sw_free(order);
    return 0;
}

static bool dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
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
        if (!cJSON_IsString(t) || !dns_label(t->valuestring))
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
