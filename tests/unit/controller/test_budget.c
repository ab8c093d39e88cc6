/* Tests for controller/hub/budget.c and the config's budgets: periods in
 * UTC, committed spend inside a period, bursts in flight counted once, the
 * limit itself, and a team without a budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "controller/hub/budget.h"
#include "controller/hub/config.h"

#define HOUR_MS 3600000LL
/* 2026-11-29T15:00:00Z, a Sunday. */
#define NOW   1795964400000LL
#define NOV_1 1793491200000LL
#define DEC_1 1796083200000LL

static void test_periods(void **state)
{
    (void)state;
    assert_int_equal(sw_budget_period_start(SW_PERIOD_MONTH, NOW), NOV_1);
    assert_int_equal(sw_budget_period_end(SW_PERIOD_MONTH, NOW), DEC_1);
    /* The week starts on Monday 2026-11-23. */
    assert_int_equal(sw_budget_period_start(SW_PERIOD_WEEK, NOW), 1795392000000LL);
    assert_int_equal(sw_budget_period_end(SW_PERIOD_WEEK, NOW), 1795996800000LL);
    assert_int_equal(sw_budget_period_start(SW_PERIOD_DAY, NOW), 1795910400000LL);
    assert_int_equal(sw_budget_period_end(SW_PERIOD_DAY, NOW), 1795996800000LL);
    /* Exactly at a period's start it is that period's; a millisecond
     * before, the one before. */
    assert_int_equal(sw_budget_period_start(SW_PERIOD_MONTH, DEC_1), DEC_1);
    assert_int_equal(sw_budget_period_start(SW_PERIOD_MONTH, DEC_1 - 1), NOV_1);
    /* December ends in the next year; a leap February on the 29th. */
    assert_int_equal(sw_budget_period_end(SW_PERIOD_MONTH, DEC_1), 1798761600000LL);
    assert_int_equal(sw_budget_period_start(SW_PERIOD_MONTH, 1835438400000LL), 1832976000000LL);
    assert_int_equal(sw_budget_period_end(SW_PERIOD_MONTH, 1835438400000LL), 1835481600000LL);
    /* Before 1970 too (floor, not truncation). */
    assert_int_equal(sw_budget_period_start(SW_PERIOD_MONTH, -43200000LL), -2678400000LL);
    assert_int_equal(sw_budget_period_start(SW_PERIOD_WEEK, -43200000LL), -259200000LL);
    enum sw_budget_period p;
    assert_int_equal(sw_budget_period_parse("week", &p), 0);
    assert_int_equal(p, SW_PERIOD_WEEK);
    assert_int_equal(sw_budget_period_parse("Month", &p), SW_EINVAL);
    assert_string_equal(sw_budget_period_name(SW_PERIOD_DAY), "day");
}

/* A record of team `team` on `capacity` at $price per GPU-hour, 2 GPUs. */
static void rec(struct sw_job_rec *r, const char *uid, const char *team, const char *capacity,
                enum sw_job_state st, double price, int64_t started, int64_t finished,
                double expected)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->uid, sizeof(r->uid), "%s", uid);
    snprintf(r->team, sizeof(r->team), "%s", team);
    snprintf(r->cluster, sizeof(r->cluster), "c1");
    snprintf(r->ns, sizeof(r->ns), "ns-%s", team);
    snprintf(r->capacity, sizeof(r->capacity), "%s", capacity);
    r->state = st;
    r->gpus = 2;
    r->price_gpu_h = price;
    r->started_ms = started;
    r->finished_ms = finished;
    r->expected_cost = expected;
}

/* Namespace ns-X of cluster c1 is granted team X (ml, cv, nlp). */
static struct sw_grant grants[] = {
    {.cluster = "c1", .ns = "ns-ml", .teams = {"ml"}, .nteams = 1},
    {.cluster = "c1", .ns = "ns-cv", .teams = {"cv"}, .nteams = 1},
    {.cluster = "c1", .ns = "ns-nlp", .teams = {"nlp"}, .nteams = 1},
};
static const struct sw_tenancy T = {.grants = grants, .n = 3};

static const struct sw_team_budget budgets[] = {
    {"ml", 100.0, SW_PERIOD_MONTH},
    {"cv", 50.0, SW_PERIOD_DAY},
};

/* A run across a period's start counts only its hours inside the period:
 * the rollover gives the new month its own budget. */
static void test_rollover(void **state)
{
    (void)state;
    struct sw_job_rec r;
    /* 2026-10-31T23:00Z to 2026-11-01T01:00Z, 2 GPUs at $2.50: $5 an hour. */
    rec(&r, "u1", "ml", "spot", SW_JS_SUCCEEDED, 2.5, NOV_1 - HOUR_MS, NOV_1 + HOUR_MS, 10);
    struct sw_budget_run run;
    sw_budget_run_of(&T, &r, &run);
    assert_true(run.cloud);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 5.0, 1e-9);
    /* Seen from October's last half hour: that month's half of it so far. */
    int64_t oct_1 = 1790812800000LL, now = NOV_1 - HOUR_MS / 2;
    assert_float_equal(sw_budget_run_committed(&run, oct_1, now), 2.5, 1e-9);
    /* A run that ended before the period costs it nothing. */
    rec(&r, "u2", "ml", "spot", SW_JS_SUCCEEDED, 2.5, NOV_1 - 2 * HOUR_MS, NOV_1, 10);
    sw_budget_run_of(&T, &r, &run);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 0.0, 0);
    /* Owned capacity is never charged; a run that never started neither. */
    rec(&r, "u3", "ml", "owned", SW_JS_SUCCEEDED, 2.5, NOV_1, NOV_1 + HOUR_MS, 10);
    sw_budget_run_of(&T, &r, &run);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 0.0, 0);
    rec(&r, "u4", "ml", "spot", SW_JS_DECIDED, 2.5, 0, 0, 10);
    sw_budget_run_of(&T, &r, &run);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 0.0, 0);
}

/* In flight: what was expected less what it cost so far, never below 0,
 * only while decided to running; the tally counts a Job once whether it is
 * live, archived, or both while it is being archived. */
static void test_in_flight_once(void **state)
{
    (void)state;
    struct sw_job_rec running, decided, over, done, owned, other;
    /* Running 2 h at $5 an hour: $10 committed, $30 of the $40 expected left. */
    rec(&running, "a", "ml", "on-demand", SW_JS_RUNNING, 2.5, NOW - 2 * HOUR_MS, 0, 40);
    assert_float_equal(sw_budget_in_flight(&running, NOW), 30.0, 1e-9);
    rec(&decided, "b", "ml", "spot", SW_JS_DISPATCHING, 1.0, 0, 0, 20);
    assert_float_equal(sw_budget_in_flight(&decided, NOW), 20.0, 1e-9);
    /* A reservation apart from the expected cost holds the reservation:
     * $160 reserved on $40 expected, $10 spent, $150 in flight. */
    running.reserved_cost = 160;
    assert_float_equal(sw_budget_in_flight(&running, NOW), 150.0, 1e-9);
    running.reserved_cost = 0;
    /* Ran longer than expected: nothing more in flight, all committed. */
    rec(&over, "c", "ml", "spot", SW_JS_RUNNING, 2.5, NOW - 3 * HOUR_MS, 0, 5);
    assert_float_equal(sw_budget_in_flight(&over, NOW), 0.0, 0);
    /* Finished: committed only. */
    rec(&done, "d", "ml", "spot", SW_JS_SUCCEEDED, 2.5, NOV_1, NOV_1 + HOUR_MS, 99);
    assert_float_equal(sw_budget_in_flight(&done, NOW), 0.0, 0);
    rec(&owned, "e", "ml", "owned", SW_JS_RUNNING, 0, NOW - HOUR_MS, 0, 3);
    assert_float_equal(sw_budget_in_flight(&owned, NOW), 0.0, 0);
    /* A team without a budget: counted nowhere. */
    rec(&other, "f", "nlp", "spot", SW_JS_RUNNING, 2.5, NOW - HOUR_MS, 0, 1000);

    const struct sw_job_rec *live[] = {&running, &decided, &over, &done, &owned, &other};
    /* "d" is being archived (live and ended), "g" ended twice (read twice),
     * "h" ended in October (outside the period), "i" is cv's. */
    struct sw_budget_run ended[5];
    sw_budget_run_of(&T, &done, &ended[0]);
    struct sw_job_rec g, hrec, i;
    rec(&g, "g", "ml", "spot", SW_JS_SUCCEEDED, 2.5, NOV_1 + HOUR_MS, NOV_1 + 3 * HOUR_MS, 9);
    sw_budget_run_of(&T, &g, &ended[1]);
    sw_budget_run_of(&T, &g, &ended[2]);
    rec(&hrec, "h", "ml", "spot", SW_JS_SUCCEEDED, 2.5, NOV_1 - 5 * HOUR_MS, NOV_1 - HOUR_MS, 9);
    sw_budget_run_of(&T, &hrec, &ended[3]);
    rec(&i, "i", "cv", "spot", SW_JS_SUCCEEDED, 2.5, NOW - 2 * HOUR_MS, NOW - HOUR_MS, 9);
    sw_budget_run_of(&T, &i, &ended[4]);

    struct sw_budget_status st[2];
    assert_int_equal(sw_budget_tally(budgets, 2, &T, live, 6, ended, 5, NOW, st, NULL), 0);
    assert_string_equal(st[0].team, "ml");
    /* committed: running $10 + over $15 + done $5 + g $10 (once) = $40;
     * in flight: running $30 + decided $20 = $50. */
    assert_float_equal(st[0].committed, 40.0, 1e-9);
    assert_float_equal(st[0].in_flight, 50.0, 1e-9);
    assert_float_equal(sw_budget_left(&st[0]), 10.0, 1e-9);
    assert_int_equal(st[0].start_ms, NOV_1);
    assert_int_equal(st[0].end_ms, DEC_1);
    /* cv's day: i ran 1 h today. */
    assert_string_equal(st[1].team, "cv");
    assert_float_equal(st[1].committed, 5.0, 1e-9);
    assert_float_equal(st[1].in_flight, 0.0, 0);
    assert_int_equal(st[1].period, SW_PERIOD_DAY);
    /* The same records tallied again (a new leader reading them) give the
     * same figures: nothing is added to a counter. */
    struct sw_budget_status again[2];
    assert_int_equal(sw_budget_tally(budgets, 2, &T, live, 6, ended, 5, NOW, again, NULL), 0);
    assert_memory_equal(st, again, sizeof(st));
}

/* Exactly at the limit fits; a cent over does not; the engine is given the
 * same figure (cap - spent is what is left). */
static void test_at_limit(void **state)
{
    (void)state;
    struct sw_budget_status s = {.team = "ml", .amount = 100, .committed = 60, .in_flight = 30};
    assert_true(sw_budget_fits(&s, 10.0));
    assert_false(sw_budget_fits(&s, 10.01));
    assert_float_equal(sw_budget_left(&s), 10.0, 1e-9);
    struct sw_budget b;
    sw_budget_engine(&s, &b);
    assert_string_equal(b.team, "ml");
    assert_float_equal(b.cap, 100.0, 0);
    assert_float_equal(b.spent, 90.0, 1e-9);
    /* Spent past it (a run longer than expected): nothing left, not negative. */
    s.committed = 120;
    assert_float_equal(sw_budget_left(&s), 0.0, 0);
    assert_false(sw_budget_fits(&s, 0.01));
    /* A zero budget lets nothing burst but a free option. */
    struct sw_budget_status z = {.team = "cv", .amount = 0};
    assert_true(sw_budget_fits(&z, 0.0));
    assert_false(sw_budget_fits(&z, 0.01));
    /* No budgets: no statuses, nothing allocated. */
    assert_int_equal(sw_budget_tally(budgets, 0, &T, NULL, 0, NULL, 0, NOW, NULL, NULL), 0);
}

/* The budget a record counts against: its team when its namespace's grant
 * names that team, else CLUSTER/NS, which no budget matches (review
 * finding 2: a namespace named like a granted team is not charged to it). */
static void test_key_of(void **state)
{
    (void)state;
    struct sw_job_rec r;
    char key[SW_NAME_MAX];
    rec(&r, "u", "ml", "spot", SW_JS_RUNNING, 1, 0, 0, 0);
    sw_budget_key_of(&T, &r, key);
    assert_string_equal(key, "ml");
    /* Namespace "ml" of cluster c2 has no grant: its team is its name
     * (tenancy), "ml", and yet it is not team ml's. */
    snprintf(r.cluster, sizeof(r.cluster), "c2");
    snprintf(r.ns, sizeof(r.ns), "ml");
    sw_budget_key_of(&T, &r, key);
    assert_string_equal(key, "c2/ml");
    /* No tenancy at all: the same. */
    sw_budget_key_of(NULL, &r, key);
    assert_string_equal(key, "c2/ml");
    /* A grant that names no team: the namespace's own key. */
    struct sw_grant g[] = {{.cluster = "c1", .ns = "cv"}};
    struct sw_tenancy tn = {.grants = g, .n = 1};
    rec(&r, "u", "cv", "spot", SW_JS_RUNNING, 1, 0, 0, 0);
    snprintf(r.ns, sizeof(r.ns), "cv");
    sw_budget_key_of(&tn, &r, key);
    assert_string_equal(key, "c1/cv");
    /* A record whose team its grant does not name (the grant changed). */
    rec(&r, "u", "cv", "spot", SW_JS_RUNNING, 1, 0, 0, 0);
    snprintf(r.ns, sizeof(r.ns), "ns-ml");
    sw_budget_key_of(&T, &r, key);
    assert_string_equal(key, "c1/ns-ml");

    /* The tally: the ungranted "ml" namespace's spot run, and a grant
     * without teams, charge neither ml nor cv. */
    struct sw_job_rec a, b2;
    rec(&a, "x", "ml", "spot", SW_JS_RUNNING, 2.5, NOW - HOUR_MS, 0, 1000);
    snprintf(a.cluster, sizeof(a.cluster), "c2");
    snprintf(a.ns, sizeof(a.ns), "ml");
    rec(&b2, "y", "cv", "spot", SW_JS_RUNNING, 2.5, NOW - HOUR_MS, 0, 1000);
    snprintf(b2.ns, sizeof(b2.ns), "cv");
    const struct sw_job_rec *live[] = {&a, &b2};
    struct sw_budget_status st[2];
    assert_int_equal(sw_budget_tally(budgets, 2, &tn, live, 2, NULL, 0, NOW, st, NULL), 0);
    assert_float_equal(st[0].committed + st[0].in_flight, 0.0, 0);
    assert_float_equal(st[1].committed + st[1].in_flight, 0.0, 0);
}

/* Review finding 3: a record whose price x GPUs, or expected cost, is not a
 * sane number counts for no budget (and is counted as bad) instead of
 * making the tally infinite; the engine's spent is never more than the cap
 * nor a number it refuses. */
static void test_out_of_bounds(void **state)
{
    (void)state;
    struct sw_job_rec huge, inf_cost, nan_price, fine;
    struct sw_budget_run run;
    /* 1e300 GPUs x $1e10: finite each, infinite together. */
    rec(&huge, "h", "ml", "spot", SW_JS_RUNNING, 1e10, NOW - HOUR_MS, 0, 10);
    huge.billed_gpus = 1e300;
    assert_int_equal(sw_budget_run_of(&T, &huge, &run), SW_ERANGE);
    assert_false(run.cloud);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 0.0, 0);
    /* Just over the bound per hour. */
    rec(&huge, "h", "ml", "spot", SW_JS_RUNNING, SW_BUDGET_MAX_RATE_H / 2 + 1, NOW - HOUR_MS, 0,
        10);
    assert_int_equal(sw_budget_run_of(&T, &huge, &run), SW_ERANGE);
    rec(&inf_cost, "i", "ml", "spot", SW_JS_RUNNING, 2.5, NOW - HOUR_MS, 0, 1e300);
    assert_int_equal(sw_budget_run_of(&T, &inf_cost, &run), SW_ERANGE);
    assert_float_equal(sw_budget_in_flight(&inf_cost, NOW), 0.0, 0);
    rec(&nan_price, "n", "ml", "spot", SW_JS_RUNNING, NAN, NOW - HOUR_MS, 0, 10);
    assert_int_equal(sw_budget_run_of(&T, &nan_price, &run), SW_ERANGE);
    rec(&fine, "f", "ml", "spot", SW_JS_RUNNING, 2.5, NOW - HOUR_MS, 0, 10);
    fine.reserved_cost = 1e300; /* a reservation no budget believes */
    assert_int_equal(sw_budget_run_of(&T, &fine, &run), SW_ERANGE);
    assert_float_equal(sw_budget_in_flight(&fine, NOW), 0.0, 0);
    fine.reserved_cost = 0;
    assert_int_equal(sw_budget_run_of(&T, &fine, &run), 0);
    /* Negative GPUs x a negative price: a positive rate, still refused. */
    struct sw_job_rec neg, nlp_bad;
    rec(&neg, "g", "cv", "spot", SW_JS_RUNNING, -2.5, NOW - HOUR_MS, 0, 10);
    neg.gpus = -2;
    assert_int_equal(sw_budget_run_of(&T, &neg, &run), SW_ERANGE);
    assert_true(run.bad);
    assert_string_equal(run.team, "cv");
    neg.gpus = 2;
    neg.billed_gpus = -1;
    neg.price_gpu_h = 2.5;
    assert_int_equal(sw_budget_run_of(&T, &neg, &run), SW_ERANGE);
    neg.billed_gpus = 2;
    neg.price_gpu_h = -2.5;
    assert_int_equal(sw_budget_run_of(&T, &neg, &run), SW_ERANGE);
    /* A team without a budget: its broken record limits nobody. */
    rec(&nlp_bad, "x", "nlp", "spot", SW_JS_RUNNING, NAN, NOW - HOUR_MS, 0, 10);
    const struct sw_job_rec *live[] = {&huge, &inf_cost, &nan_price, &fine, &neg, &nlp_bad};
    struct sw_budget_status st[2];
    size_t bad = 0;
    assert_int_equal(sw_budget_tally(budgets, 2, &T, live, 6, NULL, 0, NOW, st, &bad), 0);
    assert_int_equal(bad, 5);
    /* Fail closed: each of ml's three broken records charges its whole
     * $100; fine adds 1 h at $5 committed, $5 of its $10 in flight. cv's
     * one broken record takes its whole $50. */
    assert_float_equal(st[0].committed, 305.0, 1e-9);
    assert_float_equal(st[0].in_flight, 5.0, 1e-9);
    assert_float_equal(st[1].committed, 50.0, 1e-9);
    assert_float_equal(sw_budget_left(&st[1]), 0.0, 0);
    /* An ended run marked bad does as well, once per UID. */
    struct sw_budget_run ended[2];
    assert_int_equal(sw_budget_run_of(&T, &neg, &ended[0]), SW_ERANGE);
    ended[1] = ended[0];
    assert_int_equal(sw_budget_tally(budgets, 2, &T, NULL, 0, ended, 2, NOW, st, NULL), 0);
    assert_float_equal(st[1].committed, 50.0, 1e-9);
    assert_float_equal(st[0].committed, 0.0, 0);
    /* The engine's spent: the cap when the sum is not finite or past it. */
    struct sw_budget b;
    struct sw_budget_status s = {.team = "ml", .amount = 100, .committed = INFINITY};
    sw_budget_engine(&s, &b);
    assert_float_equal(b.spent, 100.0, 0);
    s.committed = NAN;
    sw_budget_engine(&s, &b);
    assert_float_equal(b.spent, 100.0, 0);
    s.committed = 1e308;
    s.in_flight = 1e308;
    sw_budget_engine(&s, &b);
    assert_float_equal(b.spent, 100.0, 0);
}

/* Review finding 1: a mirror dispatched and never seen running counts
 * from its dispatch (as the hub bills it when it ends), its in-flight
 * share less that; a budgeted burst reserves a pessimistic runtime. */
static void test_dispatched_and_reserve(void **state)
{
    (void)state;
    struct sw_job_rec r;
    struct sw_budget_run run;
    rec(&r, "d", "ml", "spot", SW_JS_DISPATCHED, 2.5, 0, 0, 40);
    r.dispatched_ms = NOW - 2 * HOUR_MS;
    assert_int_equal(sw_budget_run_of(&T, &r, &run), 0);
    assert_int_equal(run.started_ms, NOW - 2 * HOUR_MS);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 10.0, 1e-9);
    assert_float_equal(sw_budget_in_flight(&r, NOW), 30.0, 1e-9);
    const struct sw_job_rec *live[] = {&r};
    struct sw_budget_status st[2];
    assert_int_equal(sw_budget_tally(budgets, 2, &T, live, 1, NULL, 0, NOW, st, NULL), 0);
    assert_float_equal(st[0].committed + st[0].in_flight, 40.0, 1e-9);
    /* Dispatching (not yet created): nothing committed, all in flight. */
    r.state = SW_JS_DISPATCHING;
    assert_int_equal(sw_budget_run_of(&T, &r, &run), 0);
    assert_int_equal(run.started_ms, 0);
    assert_float_equal(sw_budget_in_flight(&r, NOW), 40.0, 1e-9);
    /* Failed without ever reporting running (its origin deleted, its
     * cluster lost): still billed from its dispatch to its end, so that
     * deleting the origin does not wipe its spend. */
    r.state = SW_JS_FAILED;
    r.finished_ms = NOW - HOUR_MS;
    assert_int_equal(sw_budget_start_of(&r), NOW - 2 * HOUR_MS);
    assert_int_equal(sw_budget_run_of(&T, &r, &run), 0);
    assert_float_equal(sw_budget_run_committed(&run, NOV_1, NOW), 5.0, 1e-9);
    assert_float_equal(sw_budget_in_flight(&r, NOW), 0.0, 0);
    /* Requeued and deciding again: the old dispatch bills nothing. */
    r.state = SW_JS_OBSERVED;
    r.finished_ms = 0;
    assert_int_equal(sw_budget_start_of(&r), 0);
    r.state = SW_JS_DECIDED;
    assert_int_equal(sw_budget_start_of(&r), 0);
    /* A start it has wins over its dispatch. */
    r.state = SW_JS_SUCCEEDED;
    r.started_ms = NOW - HOUR_MS;
    assert_int_equal(sw_budget_start_of(&r), NOW - HOUR_MS);

    /* The reservation: the 90th percentile of a learned belief... */
    struct sw_estimate b = {.median_s = 3600, .sigma = 0.5, .source = SW_EST_LEARNED, .runs = 9};
    assert_float_equal(sw_budget_reserve_s(&b, 5, 7200), 3600 * exp(SW_BUDGET_RESERVE_Z * 0.5),
                       1e-6);
    /* ...never below its mean (a wide belief, where the mean is above it)... */
    b.sigma = 3.0;
    assert_float_equal(sw_budget_reserve_s(&b, 5, 0), sw_estimate_mean(&b), 1e-3);
    /* ...and an unlearned annotation of 60 s reserves no less than the
     * team's prior mean; learned (5 annotated runs), its own quantile. */
    struct sw_estimate a = {.median_s = 60, .sigma = 0.5, .source = SW_EST_ANNOTATION, .runs = 4};
    assert_float_equal(sw_budget_reserve_s(&a, 5, 26000), 26000, 0);
    a.runs = 5;
    assert_float_equal(sw_budget_reserve_s(&a, 5, 26000), 60 * exp(SW_BUDGET_RESERVE_Z * 0.5),
                       1e-9);
    /* Never past SW_MAX_SECONDS. */
    struct sw_estimate w = {.median_s = 1e15, .sigma = 10, .source = SW_EST_PRIOR};
    assert_true(sw_budget_reserve_s(&w, 5, 0) <= SW_MAX_SECONDS);
}

/* The compact spend entry an ended record leaves for the budgets: only a
 * run on cloud capacity, read back into what sw_budget_run_of needs; an
 * entry from Redis is input, each field checked. */
static void test_spend_entry(void **state)
{
    (void)state;
    struct sw_job_rec r, back;
    struct sw_budget_run a, b;
    struct sw_error err = {0};
    rec(&r, "u-1", "ml", "spot", SW_JS_SUCCEEDED, 2.5, NOV_1, NOV_1 + HOUR_MS, 10);
    char *e = sw_budget_spend_entry(&r, NOV_1 + HOUR_MS);
    assert_non_null(e);
    assert_int_equal(sw_budget_spend_parse(e, strlen(e), &back, &err), 0);
    cJSON_free(e);
    assert_int_equal(sw_budget_run_of(&T, &r, &a), 0);
    assert_int_equal(sw_budget_run_of(&T, &back, &b), 0);
    assert_string_equal(b.team, "ml");
    assert_string_equal(b.uid, "u-1");
    assert_true(b.cloud);
    assert_int_equal(b.started_ms, a.started_ms);
    assert_int_equal(b.finished_ms, a.finished_ms);
    assert_float_equal(b.dollars_per_ms, a.dollars_per_ms, 1e-18);
    assert_float_equal(sw_budget_run_committed(&b, NOV_1, NOW), 5.0, 1e-9);
    /* A dispatched mirror that failed without running: from its dispatch. */
    rec(&r, "u-2", "ml", "on-demand", SW_JS_FAILED, 2.5, 0, NOV_1 + HOUR_MS, 10);
    r.dispatched_ms = NOV_1;
    e = sw_budget_spend_entry(&r, NOV_1 + HOUR_MS);
    assert_non_null(e);
    assert_int_equal(sw_budget_spend_parse(e, strlen(e), &back, &err), 0);
    cJSON_free(e);
    assert_int_equal(back.started_ms, NOV_1);
    /* Owned capacity, or a run that never started: no entry. */
    rec(&r, "u-3", "ml", "owned", SW_JS_SUCCEEDED, 0, NOV_1, NOV_1 + HOUR_MS, 0);
    assert_null(sw_budget_spend_entry(&r, NOV_1 + HOUR_MS));
    rec(&r, "u-4", "ml", "spot", SW_JS_FAILED, 2.5, 0, NOV_1, 10);
    assert_null(sw_budget_spend_entry(&r, NOV_1));

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"not json", ""},
        {"[1]", "expected an object"},
        {"{\"cluster\":\"c1\",\"namespace\":\"ns-ml\",\"team\":\"ml\",\"capacity\":\"spot\","
         "\"billedGpus\":2,\"pricePerGpuHour\":2.5,\"startedMs\":1,\"finishedMs\":2}",
         "field \"uid\": expected a string of 1 to 63 characters"},
        {"{\"uid\":\"u\",\"cluster\":\"c1\",\"namespace\":\"ns-ml\",\"team\":\"ml\",\"capacity\":"
         "\"spot-but-much-too-long\",\"billedGpus\":2,\"pricePerGpuHour\":2.5,\"startedMs\":1,"
         "\"finishedMs\":2}",
         "field \"capacity\": expected a string of 1 to 15 characters"},
        {"{\"uid\":\"u\",\"cluster\":\"c1\",\"namespace\":\"ns-ml\",\"team\":\"ml\",\"capacity\":"
         "\"spot\",\"billedGpus\":\"2\",\"pricePerGpuHour\":2.5,\"startedMs\":1,\"finishedMs\":2}",
         "field \"billedGpus\": expected a number"},
        {"{\"uid\":\"u\",\"cluster\":\"c1\",\"namespace\":\"ns-ml\",\"team\":\"ml\",\"capacity\":"
         "\"spot\",\"billedGpus\":2,\"pricePerGpuHour\":2.5,\"startedMs\":0,\"finishedMs\":2}",
         "field \"startedMs\": expected a number from 1 to"},
        {"{\"uid\":\"u\",\"cluster\":\"c1\",\"namespace\":\"ns-ml\",\"team\":\"ml\",\"capacity\":"
         "\"spot\",\"billedGpus\":2,\"pricePerGpuHour\":2.5,\"startedMs\":1,\"finishedMs\":1e300}",
         "field \"finishedMs\": expected a number from 0 to"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        if (sw_budget_spend_parse(bad[i].text, strlen(bad[i].text), &back, &err) == 0)
            fail_msg("accepted: %s", bad[i].text);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("for %s: got \"%s\", expected \"%s\"", bad[i].text, err.msg, bad[i].msg);
        assert_string_equal(back.uid, "");
    }
    /* A price no budget believes parses, and the run is out of bounds. */
    const char *huge = "{\"uid\":\"u\",\"cluster\":\"c1\",\"namespace\":\"ns-ml\",\"team\":\"ml\","
                       "\"capacity\":\"spot\",\"billedGpus\":1e200,\"pricePerGpuHour\":1e200,"
                       "\"startedMs\":1,\"finishedMs\":2}";
    assert_int_equal(sw_budget_spend_parse(huge, strlen(huge), &back, &err), 0);
    assert_int_equal(sw_budget_run_of(&T, &back, &b), SW_ERANGE);
}

/* The grants the hub publishes with its budgets, read back as the CLI
 * does; a bad entry is named. */
static void test_grants_json(void **state)
{
    (void)state;
    struct sw_grant g[] = {
        {.cluster = "c1", .ns = "ns-ml", .teams = {"ml", "ml2"}, .nteams = 2},
        {.cluster = "c1", .ns = "open"}, /* no teams: not published */
    };
    struct sw_tenancy in = {.grants = g, .n = 2}, out;
    cJSON *o = cJSON_CreateObject();
    assert_int_equal(sw_budget_grants_to_json(&in, o), 0);
    struct sw_error err = {0};
    assert_int_equal(sw_budget_grants_from_json(o, &out, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(out.n, 1);
    assert_string_equal(out.grants[0].cluster, "c1");
    assert_string_equal(out.grants[0].ns, "ns-ml");
    assert_int_equal(out.grants[0].nteams, 2);
    assert_string_equal(out.grants[0].teams[1], "ml2");
    sw_tenancy_free(&out);
    const char *bad[] = {
        "{\"grants\": 3}",
        "{\"grants\": [{\"cluster\": \"c\", \"namespace\": \"n\", \"teams\": [\"Bad\"]}]}",
        "{\"grants\": [{\"cluster\": 1, \"namespace\": \"n\", \"teams\": [\"a\"]}]}",
        "{\"grants\": [{\"cluster\": \"c\", \"namespace\": \"n\", \"teams\": []}]}",
    };
    const char *field[] = {"grants", "grants[0].teams", "grants[0].cluster", "grants[0].teams"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o = cJSON_Parse(bad[i]);
        memset(&err, 0, sizeof(err));
        assert_int_equal(sw_budget_grants_from_json(o, &out, &err), SW_EPARSE);
        cJSON_Delete(o);
        if (strstr(err.msg, field[i]) == NULL)
            fail_msg("for %s: got \"%s\", expected \"%s\"", bad[i], err.msg, field[i]);
    }
    /* Absent: no grants (every record keyed by its namespace). */
    o = cJSON_Parse("{\"budgets\": []}");
    assert_int_equal(sw_budget_grants_from_json(o, &out, &err), 0);
    assert_int_equal(out.n, 0);
    cJSON_Delete(o);
    sw_tenancy_free(&out);
}

static int parse(const char *budgets_yaml, struct sw_hub_config *c, struct sw_error *err)
{
    /* The grants come after the budgets, so the budgets' lines are 3 on. */
    char text[2048];
    snprintf(text, sizeof(text),
             "redis: {url: \"redis://127.0.0.1:6379/0\"}\nsecretKeyFile: k\n%s"
             "tenancy:\n  grants:\n  - {cluster: c1, namespace: ns-ml, teams: [ml-research, ml]}\n"
             "  - {cluster: c1, namespace: ns-cv, teams: [cv]}\n",
             budgets_yaml);
    return sw_hub_config_parse(text, strlen(text), "hub.yaml", c, err);
}

static void test_config(void **state)
{
    (void)state;
    struct sw_hub_config c;
    struct sw_error err = {0};
    assert_int_equal(parse("budgets:\n"
                           "- team: ml-research\n"
                           "  amount: 5000\n"
                           "- team: cv\n"
                           "  amount: 12.5\n"
                           "  period: week\n",
                           &c, &err),
                     0);
    assert_int_equal(c.nbudgets, 2);
    assert_string_equal(c.budgets[0].team, "ml-research");
    assert_float_equal(c.budgets[0].amount, 5000, 0);
    assert_int_equal(c.budgets[0].period, SW_PERIOD_MONTH);
    assert_int_equal(c.budgets[1].period, SW_PERIOD_WEEK);
    sw_hub_config_free(&c);
    /* None given: none. */
    assert_int_equal(parse("", &c, &err), 0);
    assert_int_equal(c.nbudgets, 0);
    sw_hub_config_free(&c);

    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"budgets: {team: ml}\n", "hub.yaml:3: field \"budgets\": expected a list of budgets"},
        {"budgets:\n- team: ml\n",
         "hub.yaml:4: field \"budgets[0]\": expected an amount, got none"},
        {"budgets:\n- amount: 5\n", "hub.yaml:4: field \"budgets[0]\": expected a team, got none"},
        {"budgets:\n- team: ML\n  amount: 5\n",
         "hub.yaml:4: field \"budgets[0].team\": expected a team name (a DNS-1123 label"},
        {"budgets:\n- team: ml\n  amount: -1\n",
         "hub.yaml:5: field \"budgets[0].amount\": expected US dollars per period, a number from "
         "0 to 1e+09, got \"-1\""},
        {"budgets:\n- team: ml\n  amount: 5k\n",
         "field \"budgets[0].amount\": expected US dollars"},
        {"budgets:\n- team: ml\n  amount: [5]\n",
         "field \"budgets[0].amount\": expected US dollars"},
        {"budgets:\n- team: ml\n  amount: 5\n  period: year\n",
         "hub.yaml:6: field \"budgets[0].period\": expected month, week or day, got \"year\""},
        {"budgets:\n- team: ml\n  amount: 5\n  cap: 3\n",
         "hub.yaml:6: field \"budgets[0].cap\": unknown (expected team, amount, period)"},
        {"budgets:\n- team: ml\n  amount: 5\n  amount: 6\n",
         "field \"budgets[0].amount\": given twice"},
        {"budgets:\n- team: ml\n  amount: 5\n- team: ml\n  amount: 6\n",
         "hub.yaml:6: field \"budgets[1].team\": a second budget for team ml (first: budgets[0])"},
        {"budgets:\n- ml\n", "hub.yaml:4: field \"budgets[0]\": expected a mapping"},
        /* A team no grant names: its budget would limit nothing. */
        {"budgets:\n- team: ml\n  amount: 5\n- team: nlp\n  amount: 6\n",
         "hub.yaml:6: field \"budgets[1].team\": team nlp is named by no grant "
         "(tenancy.grants[].teams), so its budget would limit nothing"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        if (parse(bad[i].yaml, &c, &err) == 0)
            fail_msg("accepted: %s", bad[i].yaml);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("for %s: got \"%s\", expected \"%s\"", bad[i].yaml, err.msg, bad[i].msg);
        sw_hub_config_free(&c);
    }
}

/* The budgets a hub published in Redis: input, checked field by field. */
static void test_published(void **state)
{
    (void)state;
    struct sw_team_budget b[SW_HUB_MAX_BUDGETS];
    size_t n = 99;
    struct sw_error err = {0};
    cJSON *o = cJSON_Parse("{\"budgets\": [{\"team\": \"ml\", \"amount\": 5000, \"period\": "
                           "\"month\"}, {\"team\": \"cv\", \"amount\": 0, \"period\": \"day\"}], "
                           "\"epoch\": 3}");
    assert_int_equal(sw_budgets_from_json(o, b, &n, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(n, 2);
    assert_string_equal(b[1].team, "cv");
    assert_int_equal(b[1].period, SW_PERIOD_DAY);
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"[]", "spillway:budgets: expected an object with a list \"budgets\""},
        {"{\"budgets\": [{\"team\": \"ML\", \"amount\": 1, \"period\": \"day\"}]}",
         "budgets[0].team: expected a team name"},
        {"{\"budgets\": [{\"team\": \"ml\", \"amount\": -1, \"period\": \"day\"}]}",
         "budgets[0].amount: expected US dollars from 0 to 1e+09"},
        {"{\"budgets\": [{\"team\": \"ml\", \"amount\": \"5\", \"period\": \"day\"}]}",
         "budgets[0].amount"},
        {"{\"budgets\": [{\"team\": \"ml\", \"amount\": 1e300, \"period\": \"day\"}]}",
         "budgets[0].amount"},
        {"{\"budgets\": [{\"team\": \"ml\", \"amount\": 1, \"period\": \"year\"}]}",
         "budgets[0].period: expected month, week or day"},
        {"{\"budgets\": [{\"team\": \"ml\", \"amount\": 1, \"period\": \"day\"}, {\"team\": "
         "\"ml\", \"amount\": 2, \"period\": \"day\"}]}",
         "budgets[1].team: ml given twice"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o = cJSON_Parse(bad[i].json);
        assert_non_null(o);
        memset(&err, 0, sizeof(err));
        assert_int_equal(sw_budgets_from_json(o, b, &n, &err), SW_EPARSE);
        cJSON_Delete(o);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("for %s: got \"%s\", expected \"%s\"", bad[i].json, err.msg, bad[i].msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_periods),
        cmocka_unit_test(test_rollover),
        cmocka_unit_test(test_in_flight_once),
        cmocka_unit_test(test_at_limit),
        cmocka_unit_test(test_key_of),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_published),
        cmocka_unit_test(test_out_of_bounds),
        cmocka_unit_test(test_dispatched_and_reserve),
        cmocka_unit_test(test_grants_json),
        cmocka_unit_test(test_spend_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
