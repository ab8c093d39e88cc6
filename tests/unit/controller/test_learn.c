/*
 * Tests for controller/hub/learn.c: the prior until something is seen, the
 * mean of what was seen, and an interruption rate that moves from the prior
 * towards the observed rate as hours of running add up; the learned
 * figures' JSON form (kept in Redis) read back exactly, bad entries refused
 * naming the field; what explain is told a pool's figures rest on; spot
 * capacity shortages: begun once, their durations kept, the wait the engine
 * is given while one lasts (the prior, then the residuals of those seen),
 * and entries written before shortages were learned still read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <string.h>

#include "common/json.h"
#include "controller/hub/learn.h"

static void test_provision(void **state)
{
    (void)state;
    assert_float_equal(sw_learn_provision_s(0, 0), SW_PRIOR_PROVISION_S, 1e-9);
    assert_float_equal(sw_learn_provision_s(1, 2.0), 2.0, 1e-9);
    assert_float_equal(sw_learn_provision_s(4, 4 * 95.0 + 2), 95.5, 1e-9);
}

static void test_interrupt_rate(void **state)
{
    (void)state;
    /* Nothing seen: the prior. */
    assert_float_equal(sw_learn_interrupt_rate(0, 0), SW_PRIOR_SPOT_INTERRUPT, 1e-12);
    /* One interruption in a few minutes: above the prior, far below 1/min. */
    double r = sw_learn_interrupt_rate(1, 0.05);
    assert_true(r > SW_PRIOR_SPOT_INTERRUPT);
    assert_float_equal(r, 2.0 / 10.05, 1e-12);
    /* 1000 hours without one: close to 0. */
    assert_true(sw_learn_interrupt_rate(0, 1000) < 0.001);
    /* 50 in 1000 hours: close to the observed 0.05. */
    assert_float_equal(sw_learn_interrupt_rate(50, 1000), 51.0 / 1010.0, 1e-12);
    /* Negative hours (a clock step) count as none. */
    assert_float_equal(sw_learn_interrupt_rate(0, -5), SW_PRIOR_SPOT_INTERRUPT, 1e-12);
}

static void test_learned_round_trip(void **state)
{
    (void)state;
    struct sw_learned l = {.provisions = 7,
                           .provision_sum_s = 161.25,
                           .provision_last_s = 19.5,
                           .last_ready_ms = 1795000123456,
                           .interruptions = 2,
                           .run_hours = 3.75};
    cJSON *o = sw_learned_to_json(&l);
    assert_non_null(o);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    struct sw_error err = {0};
    assert_int_equal(sw_json_parse(text, strlen(text), "t", &o, &err), 0);
    cJSON_free(text);
    struct sw_learned back;
    memset(&back, 0xff, sizeof(back));
    assert_int_equal(sw_learned_from_json(o, "cloud-spot/gpu-spot", &back, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(back.provisions, 7);
    assert_float_equal(back.provision_sum_s, 161.25, 0);
    assert_float_equal(back.provision_last_s, 19.5, 0);
    assert_int_equal(back.last_ready_ms, 1795000123456);
    assert_int_equal(back.interruptions, 2);
    assert_float_equal(back.run_hours, 3.75, 0);
    /* The figures the engine is given are the same after the trip. */
    assert_float_equal(sw_learn_provision_s(back.provisions, back.provision_sum_s), 161.25 / 7,
                       1e-12);
}

/* A bad entry is refused naming the entry and the field; *out untouched. */
static void expect_refused(const char *json, const char *want)
{
    cJSON *o = cJSON_Parse(json);
    struct sw_learned out = {.provisions = 42};
    struct sw_error err = {0};
    assert_int_not_equal(sw_learned_from_json(o, "cloud-spot/gpu-spot", &out, &err), 0);
    cJSON_Delete(o);
    if (strstr(err.msg, want) == NULL || strstr(err.msg, "cloud-spot/gpu-spot") == NULL)
        fail_msg("\"%s\": error \"%s\" does not say \"%s\"", json, err.msg, want);
    assert_int_equal(out.provisions, 42);
}

static void test_learned_refused(void **state)
{
    (void)state;
    expect_refused("[]", "expected a JSON object");
    expect_refused("{\"provisionSumSeconds\":1,\"provisionLastSeconds\":1,\"lastReadyMs\":1,"
                   "\"interruptions\":0,\"runHours\":0}",
                   "field \"provisions\": missing");
    expect_refused("{\"provisions\":\"3\",\"provisionSumSeconds\":1,\"provisionLastSeconds\":1,"
                   "\"lastReadyMs\":1,\"interruptions\":0,\"runHours\":0}",
                   "field \"provisions\": expected a number");
    expect_refused("{\"provisions\":1,\"provisionSumSeconds\":1,\"provisionLastSeconds\":1,"
                   "\"lastReadyMs\":1,\"interruptions\":0,\"runHours\":-0.5}",
                   "field \"runHours\": -0.5, expected a number from 0");
}

static void test_basis(void **state)
{
    (void)state;
    /* A NodePool with three claims seen and nothing run yet. */
    struct sw_learned l = {.provisions = 3, .provision_sum_s = 60};
    cJSON *b = sw_learn_basis_json("gpu-spot", &l, 20, SW_PRIOR_SPOT_INTERRUPT, 0, 0);
    assert_non_null(b);
    assert_string_equal(sw_json_str(b, "source"), "nodepool");
    assert_string_equal(sw_json_str(b, "nodePool"), "gpu-spot");
    assert_string_equal(sw_json_str(b, "provisionFrom"), "learned");
    assert_float_equal(cJSON_GetObjectItem(b, "provisionsSeen")->valuedouble, 3, 0);
    assert_float_equal(cJSON_GetObjectItem(b, "provisionSeconds")->valuedouble, 20, 0);
    assert_string_equal(sw_json_str(b, "interruptFrom"), "prior");
    cJSON_Delete(b);
    /* Once something ran there, the rate is learned. */
    l.run_hours = 0.5;
    b = sw_learn_basis_json("gpu-spot", &l, 20, sw_learn_interrupt_rate(0, 0.5), 0, 0);
    assert_string_equal(sw_json_str(b, "interruptFrom"), "learned");
    assert_float_equal(cJSON_GetObjectItem(b, "runHoursSeen")->valuedouble, 0.5, 0);
    cJSON_Delete(b);
    /* A NodePool with nothing seen: the prior. */
    struct sw_learned none = {0};
    b = sw_learn_basis_json("gpu-on-demand", &none, SW_PRIOR_PROVISION_S, 0, 0, 0);
    assert_string_equal(sw_json_str(b, "provisionFrom"), "prior");
    assert_string_equal(sw_json_str(b, "interruptFrom"), "none");
    cJSON_Delete(b);
    /* Fixed nodes: no NodePool; an owned pool adds no node. */
    b = sw_learn_basis_json("", NULL, 0, 0, 0, 0);
    assert_string_equal(sw_json_str(b, "source"), "nodes");
    assert_null(cJSON_GetObjectItem(b, "nodePool"));
    assert_string_equal(sw_json_str(b, "provisionFrom"), "none");
    cJSON_Delete(b);
}

/* A Job running at home: its declared runtime, as the engine reckons what
 * is left of a running Job (log-normal, sigma 0.5); the prior without one.
 * Expected values computed independently: E[T - a | T > a] for T
 * log-normal, median 3600 s, sigma 0.5. */
static void test_home_remaining(void **state)
{
    (void)state;
    int64_t start = 1700000000000LL;
    assert_float_equal(sw_learn_home_remaining(3600, start, start), 4079.33, 0.5);
    assert_float_equal(sw_learn_home_remaining(3600, start, start + 1800000), 2515.96, 0.5);
    assert_float_equal(sw_learn_home_remaining(3600, start, start + 3600000), 2041.41, 0.5);
    /* Past its declared runtime it is not expected to end at once. */
    assert_float_equal(sw_learn_home_remaining(3600, start, start + 7200000), 2045.74, 0.5);
    /* A start in the future (clocks apart) counts as just started. */
    assert_float_equal(sw_learn_home_remaining(3600, start, start - 5000), 4079.33, 0.5);
    /* No declared runtime, or no start: the prior. */
    assert_true(sw_learn_home_remaining(0, start, start) == SW_PRIOR_HOME_REMAINING);
    assert_true(sw_learn_home_remaining(-1, start, start) == SW_PRIOR_HOME_REMAINING);
    assert_true(sw_learn_home_remaining(3600, 0, start) == SW_PRIOR_HOME_REMAINING);
}

/* Kueue's maximumExecutionTimeSeconds bounds what a Job can still take
 * and what one waiting can take in all. */
static void test_max_exec_bounds(void **state)
{
    (void)state;
    int64_t start = 1000000;
    /* 600 s at most, 100 s run: 500 left, below the 1,800 expected. */
    assert_float_equal(sw_learn_capped_remaining(1800, 600, start, start + 100000), 500, 1e-9);
    /* Expected sooner than the bound: as expected. */
    assert_float_equal(sw_learn_capped_remaining(300, 600, start, start + 100000), 300, 1e-9);
    /* Past the bound: nothing left (Kueue stops it). */
    assert_float_equal(sw_learn_capped_remaining(1800, 600, start, start + 700000), 0, 1e-9);
    /* No bound, or no start: as is. */
    assert_float_equal(sw_learn_capped_remaining(1800, 0, start, start + 100000), 1800, 1e-9);
    assert_float_equal(sw_learn_capped_remaining(1800, 600, 0, start), 1800, 1e-9);
    /* A start after now (clocks apart): the whole bound left. */
    assert_float_equal(sw_learn_capped_remaining(1800, 600, start, start - 5000), 600, 1e-9);

    /* Waiting: declared, else the prior; capped by the bound. */
    assert_float_equal(sw_learn_queued_runtime(1200, 0, 3600), 1200, 1e-9);
    assert_float_equal(sw_learn_queued_runtime(0, 0, 3600), 3600, 1e-9);
    assert_float_equal(sw_learn_queued_runtime(0, 900, 3600), 900, 1e-9);
    assert_float_equal(sw_learn_queued_runtime(1200, 900, 3600), 900, 1e-9);
    assert_float_equal(sw_learn_queued_runtime(1200, 7200, 3600), 1200, 1e-9);
}

static void test_shortage_begin_end(void **state)
{
    (void)state;
    struct sw_learned l = {0};
    /* Nothing going on: no end, nothing counted. */
    assert_float_equal(sw_learn_shortage_end(&l, 5000), -1, 0);
    assert_true(sw_learn_shortage_begin(&l, 10000));
    /* A second failure during it keeps the first one's time. */
    assert_false(sw_learn_shortage_begin(&l, 12000));
    assert_int_equal(l.short_since_ms, 10000);
    /* An end before it began (a claim launched earlier) changes nothing. */
    assert_float_equal(sw_learn_shortage_end(&l, 9000), -1, 0);
    assert_int_equal(l.short_since_ms, 10000);
    assert_float_equal(sw_learn_shortage_end(&l, 100500), 90.5, 1e-9);
    assert_int_equal(l.short_since_ms, 0);
    assert_int_equal(l.shortages, 1);
    assert_int_equal(l.nshortage_s, 1);
    assert_float_equal(l.shortage_s[0], 90.5, 1e-9);
    assert_float_equal(l.shortage_sum_s, 90.5, 1e-9);
    /* The latest SW_LEARN_SHORTAGES are kept, the oldest dropped; all counted. */
    for (int i = 0; i < SW_LEARN_SHORTAGES + 3; i++) {
        assert_true(sw_learn_shortage_begin(&l, 1000000 + i * 100000));
        assert_float_equal(sw_learn_shortage_end(&l, 1000000 + i * 100000 + (i + 1) * 1000), i + 1,
                           1e-9);
    }
    assert_int_equal(l.shortages, SW_LEARN_SHORTAGES + 4);
    assert_int_equal(l.nshortage_s, SW_LEARN_SHORTAGES);
    assert_float_equal(l.shortage_s[0], 4, 1e-9);
    assert_float_equal(l.shortage_s[SW_LEARN_SHORTAGES - 1], SW_LEARN_SHORTAGES + 3, 1e-9);
}

static void test_capacity_wait(void **state)
{
    (void)state;
    struct sw_learned l = {0};
    double pts[SW_LEARN_WAIT_POINTS];
    int n = -1;
    /* Not short: no wait. */
    assert_float_equal(sw_learn_capacity_wait(&l, 5000, pts, &n), 0, 0);
    assert_int_equal(n, 0);
    /* Short, nothing seen: the prior, then as long again once past it. */
    l.short_since_ms = 1000000;
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000 + 60000, pts, &n), SW_PRIOR_SHORTAGE_S,
                       1e-9);
    assert_int_equal(n, 0);
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000 + 4000000, pts, &n), 4000, 1e-9);
    /* Seen: 60, 120, 300 s. 50 s in: the residuals 10, 70, 250, mean 110. */
    l.shortage_s[0] = 120;
    l.shortage_s[1] = 60;
    l.shortage_s[2] = 300;
    l.nshortage_s = 3;
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000 + 50000, pts, &n), 110, 1e-9);
    assert_int_equal(n, 3);
    assert_float_equal(pts[0], 10, 1e-9);
    assert_float_equal(pts[1], 70, 1e-9);
    assert_float_equal(pts[2], 250, 1e-9);
    /* 100 s in: 120 and 300 lasted longer, residuals 20 and 200. */
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000 + 100000, pts, &n), 110, 1e-9);
    assert_int_equal(n, 2);
    assert_float_equal(pts[0], 20, 1e-9);
    /* 299 s in: 1 s left, given at least the floor. */
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000 + 299000, pts, &n),
                       SW_SHORTAGE_MIN_WAIT_S, 1e-9);
    assert_float_equal(pts[0], SW_SHORTAGE_MIN_WAIT_S, 1e-9);
    /* Longer than any seen: as long again, no points. */
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000 + 400000, pts, &n), 400, 1e-9);
    assert_int_equal(n, 0);
    /* Many seen: SW_LEARN_WAIT_POINTS quantiles, ascending; the mean of all. */
    l.nshortage_s = 16;
    for (int i = 0; i < 16; i++)
        l.shortage_s[i] = 10.0 * (16 - i); /* 160, 150, ..., 10 */
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000, pts, &n), 85, 1e-9);
    assert_int_equal(n, SW_LEARN_WAIT_POINTS);
    for (int q = 0; q < n; q++)
        assert_float_equal(pts[q], 10.0 * (2 * q + 2), 1e-9); /* residual (q + 0.5) x 2 */
    /* The points are optional. */
    assert_float_equal(sw_learn_capacity_wait(&l, 1000000, NULL, &n), 85, 1e-9);
    assert_int_equal(n, 0);
}

static void test_shortage_round_trip(void **state)
{
    (void)state;
    struct sw_learned l = {.provisions = 2, .provision_sum_s = 4};
    assert_true(sw_learn_shortage_begin(&l, 1795000000000));
    sw_learn_shortage_end(&l, 1795000062500);
    assert_true(sw_learn_shortage_begin(&l, 1795000100000));
    cJSON *o = sw_learned_to_json(&l);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    assert_non_null(strstr(text, "\"shortageSeconds\":[62.5]"));
    struct sw_error err = {0};
    assert_int_equal(sw_json_parse(text, strlen(text), "t", &o, &err), 0);
    cJSON_free(text);
    struct sw_learned back;
    assert_int_equal(sw_learned_from_json(o, "cloud-spot/gpu-spot", &back, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(back.shortages, 1);
    assert_float_equal(back.shortage_sum_s, 62.5, 0);
    assert_int_equal(back.nshortage_s, 1);
    assert_float_equal(back.shortage_s[0], 62.5, 0);
    assert_int_equal(back.short_since_ms, 1795000100000);
    assert_int_equal(back.provisions, 2);
    /* An entry written before shortages were learned: none seen. */
    const char *old = "{\"provisions\":3,\"provisionSumSeconds\":6,\"provisionLastSeconds\":2,"
                      "\"lastReadyMs\":1795000000000,\"interruptions\":1,\"runHours\":0.5}";
    o = cJSON_Parse(old);
    memset(&back, 0xff, sizeof(back));
    assert_int_equal(sw_learned_from_json(o, "cloud-spot/gpu-spot", &back, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(back.provisions, 3);
    assert_int_equal(back.shortages, 0);
    assert_int_equal(back.nshortage_s, 0);
    assert_int_equal(back.short_since_ms, 0);
    assert_float_equal(back.shortage_sum_s, 0, 0);
    /* Bad shortage fields are refused, naming them. */
    expect_refused("{\"provisions\":1,\"provisionSumSeconds\":1,\"provisionLastSeconds\":1,"
                   "\"lastReadyMs\":1,\"interruptions\":0,\"runHours\":0,\"shortageSeconds\":5}",
                   "field \"shortageSeconds\": expected an array");
    expect_refused("{\"provisions\":1,\"provisionSumSeconds\":1,\"provisionLastSeconds\":1,"
                   "\"lastReadyMs\":1,\"interruptions\":0,\"runHours\":0,"
                   "\"shortageSeconds\":[3,-1]}",
                   "field \"shortageSeconds\": item 2");
    expect_refused("{\"provisions\":1,\"provisionSumSeconds\":1,\"provisionLastSeconds\":1,"
                   "\"lastReadyMs\":1,\"interruptions\":0,\"runHours\":0,\"shortSinceMs\":\"x\"}",
                   "field \"shortSinceMs\": expected a number");
}

static void test_basis_capacity_wait(void **state)
{
    (void)state;
    struct sw_learned l = {.short_since_ms = 1000000};
    /* Short, nothing seen end: the prior, and how long it has lasted. */
    cJSON *b = sw_learn_basis_json("gpu-spot", &l, 2, 0.1, SW_PRIOR_SHORTAGE_S, 1000000 + 42000);
    assert_string_equal(sw_json_str(b, "capacityWaitFrom"), "prior");
    assert_float_equal(cJSON_GetObjectItem(b, "capacityWaitSeconds")->valuedouble,
                       SW_PRIOR_SHORTAGE_S, 0);
    assert_float_equal(cJSON_GetObjectItem(b, "shortForSeconds")->valuedouble, 42, 0);
    assert_float_equal(cJSON_GetObjectItem(b, "shortagesSeen")->valuedouble, 0, 0);
    cJSON_Delete(b);
    /* One seen end: learned. */
    l.shortage_s[0] = 90;
    l.nshortage_s = 1;
    l.shortages = 1;
    b = sw_learn_basis_json("gpu-spot", &l, 2, 0.1, 48, 1000000 + 42000);
    assert_string_equal(sw_json_str(b, "capacityWaitFrom"), "learned");
    assert_float_equal(cJSON_GetObjectItem(b, "capacityWaitSeconds")->valuedouble, 48, 0);
    assert_float_equal(cJSON_GetObjectItem(b, "shortagesSeen")->valuedouble, 1, 0);
    cJSON_Delete(b);
    /* Not short: none. */
    l.short_since_ms = 0;
    b = sw_learn_basis_json("gpu-spot", &l, 2, 0.1, 0, 1000000 + 42000);
    assert_string_equal(sw_json_str(b, "capacityWaitFrom"), "none");
    assert_float_equal(cJSON_GetObjectItem(b, "shortForSeconds")->valuedouble, 0, 0);
    cJSON_Delete(b);
}

/* A controller's Lease: renewals seen keep it answering; none seen for its
 * duration plus the grace, it is down (from then); a renewal brings it back. */
static void test_ctl_lease(void **state)
{
    (void)state;
    struct sw_ctl_seen s = {0};
    /* Never seen: not known, never down. */
    assert_int_equal(sw_learn_ctl_observe(&s, false, NULL, NULL, 0, 1000000, true), 0);
    assert_int_equal(sw_learn_ctl_observe(&s, false, NULL, NULL, 0, 9000000, true), 0);
    assert_int_equal(s.down_since_ms, 0);
    assert_float_equal(sw_learn_ctl_silent_s(&s, 9000000), 0, 0);
    /* First seen: counts as a renewal. */
    int64_t t = 10000000;
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:00:00.000000Z", "k_1", 15, t, true), 0);
    assert_int_equal(s.renewed_ms, t);
    /* Renewed every 2 s for a minute: answers. */
    for (int i = 1; i <= 30; i++) {
        char r[48];
        snprintf(r, sizeof(r), "2026-11-29T16:00:%02d.000000Z", 2 * i % 60);
        assert_int_equal(sw_learn_ctl_observe(&s, true, r, "k_1", 15, t + 2000 * i, true), 0);
    }
    t += 60000;
    assert_int_equal(s.renewed_ms, t);
    /* Killed: the same renewTime, seen each second; down only past 15 + 15 s. */
    const char *last = "2026-11-29T16:00:00.000000Z";
    assert_int_equal(sw_learn_ctl_observe(&s, true, last, "k_1", 15, t + 30000, true), 0);
    assert_int_equal(s.down_since_ms, 0);
    assert_float_equal(sw_learn_ctl_silent_s(&s, t + 30000), 30, 1e-9);
    /* Silent long enough: down once a read of the Lease confirms it. */
    assert_int_equal(sw_learn_ctl_observe(&s, true, last, "k_1", 15, t + 30001, true),
                     SW_CTL_CONFIRM);
    assert_int_equal(s.down_since_ms, 0);
    sw_learn_ctl_confirm(&s, false, false, NULL, NULL, t + 30001); /* no answer */
    assert_int_equal(sw_learn_ctl_observe(&s, true, last, "k_1", 15, t + 30001, true),
                     SW_CTL_CONFIRM);
    sw_learn_ctl_confirm(&s, true, true, last, "k_1", t + 30001);
    assert_int_equal(sw_learn_ctl_observe(&s, true, last, "k_1", 15, t + 30001, true), 1);
    assert_int_equal(s.down_since_ms, t + 30001);
    assert_int_equal(sw_learn_ctl_observe(&s, true, last, "k_1", 15, t + 40000, true), 0);
    assert_int_equal(s.down_since_ms, t + 30001);
    /* A Lease gone from the cache is no renewal: still down. */
    assert_int_equal(sw_learn_ctl_observe(&s, false, NULL, NULL, 0, t + 41000, true), 0);
    assert_true(s.down_since_ms != 0);
    /* A restarted controller takes the Lease: a new renewTime with a holder. */
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:45.000000Z", "k_2", 15, t + 45000, true),
        -1);
    assert_int_equal(s.down_since_ms, 0);
    /* A clean stop releases it (no holder): a new renewTime that is no
     * renewal; a restart within the lease duration never shows as down. */
    t += 45000;
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:50.000000Z", "", 1, t + 5000, true), 0);
    assert_int_equal(s.renewed_ms, t);
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:52.000000Z", "k_3", 15, t + 7000, true),
        0);
    assert_int_equal(s.renewed_ms, t + 7000);
    assert_int_equal(s.down_since_ms, 0);
    /* Released and not taken again: down after the (released) duration of
     * 1 s plus the grace, 15 s. */
    t += 7000;
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:53.000000Z", "", 1, t + 1000, true), 0);
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:53.000000Z", "", 1, t + 16000, true), 0);
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:53.000000Z", "", 1, t + 16001, true),
        SW_CTL_CONFIRM);
    sw_learn_ctl_confirm(&s, true, false, NULL, NULL, t + 16001); /* deleted meanwhile */
    assert_int_equal(
        sw_learn_ctl_observe(&s, true, "2026-11-29T16:01:53.000000Z", "", 1, t + 16001, true), 1);
    /* A process killed and restarted at once takes the Lease 19 s after the
     * last renewal (a lease duration from its first look, its start, a
     * retry): never down. */
    struct sw_ctl_seen k = {0};
    assert_int_equal(sw_learn_ctl_observe(&k, true, "a", "k_1", 15, 0, true), 0);
    for (int64_t ms = 1000; ms < 19000; ms += 1000)
        assert_int_equal(sw_learn_ctl_observe(&k, true, "a", "k_1", 15, ms, true), 0);
    assert_int_equal(sw_learn_ctl_observe(&k, true, "b", "k_2", 15, 19000, true), 0);
    assert_int_equal(k.down_since_ms, 0);
    /* A hostile duration is capped: down after 300 + 15 s, not a day. */
    struct sw_ctl_seen h = {0};
    assert_int_equal(sw_learn_ctl_observe(&h, true, "x", "k", 86400, 0, true), 0);
    assert_float_equal(h.lease_s, SW_CTL_LEASE_MAX_S, 0);
    assert_int_equal(sw_learn_ctl_observe(&h, true, "x", "k", 86400, 315001, true), SW_CTL_CONFIRM);
}

/* Silence counts only while the hub can see: a watch not open or a member
 * unreachable moves the last renewal on; a read of the Lease that finds a
 * renewal the watch missed is one. */
static void test_ctl_lease_trust(void **state)
{
    (void)state;
    struct sw_ctl_seen s = {0};
    assert_int_equal(sw_learn_ctl_observe(&s, true, "a", "k_1", 15, 1000, true), 0);
    /* 60 s the hub cannot see (its watch retrying, the member unreachable). */
    for (int64_t ms = 2000; ms <= 61000; ms += 1000)
        assert_int_equal(sw_learn_ctl_observe(&s, false, NULL, NULL, 0, ms, false), 0);
    assert_int_equal(s.down_since_ms, 0);
    assert_float_equal(sw_learn_ctl_silent_s(&s, 61000), 0, 1e-9);
    /* Seen again: the silence counts from there, 30 s more. */
    assert_int_equal(sw_learn_ctl_observe(&s, true, "a", "k_1", 15, 91000, true), 0);
    assert_int_equal(sw_learn_ctl_observe(&s, true, "a", "k_1", 15, 91001, true), SW_CTL_CONFIRM);
    /* The read finds a renewTime the watch did not bring: a renewal. */
    sw_learn_ctl_confirm(&s, true, true, "b", "k_1", 91001);
    assert_int_equal(s.renewed_ms, 91001);
    assert_false(s.confirmed);
    assert_int_equal(sw_learn_ctl_observe(&s, true, "a", "k_1", 15, 92000, true), 0);
    /* A renewal seen while not trusted counts all the same. */
    assert_int_equal(sw_learn_ctl_observe(&s, true, "c", "k_1", 15, 95000, false), 0);
    assert_int_equal(s.renewed_ms, 95000);
    /* Down already: not seeing keeps it down (no renewal seen). */
    struct sw_ctl_seen d = {0};
    assert_int_equal(sw_learn_ctl_observe(&d, true, "a", "k_1", 15, 1000, true), 0);
    assert_int_equal(sw_learn_ctl_observe(&d, true, "a", "k_1", 15, 32000, true), SW_CTL_CONFIRM);
    sw_learn_ctl_confirm(&d, true, true, "a", "k_1", 32000);
    assert_int_equal(sw_learn_ctl_observe(&d, true, "a", "k_1", 15, 33000, true), 1);
    assert_int_equal(sw_learn_ctl_observe(&d, false, NULL, NULL, 0, 60000, false), 0);
    assert_int_equal(d.down_since_ms, 33000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shortage_begin_end),
        cmocka_unit_test(test_capacity_wait),
        cmocka_unit_test(test_shortage_round_trip),
        cmocka_unit_test(test_basis_capacity_wait),
        cmocka_unit_test(test_learned_round_trip),
        cmocka_unit_test(test_learned_refused),
        cmocka_unit_test(test_basis),
        cmocka_unit_test(test_provision),
        cmocka_unit_test(test_interrupt_rate),
        cmocka_unit_test(test_home_remaining),
        cmocka_unit_test(test_max_exec_bounds),
        cmocka_unit_test(test_ctl_lease),
        cmocka_unit_test(test_ctl_lease_trust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
