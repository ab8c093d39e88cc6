/*
 * Tests for controller/hub/learn.c: the prior until something is seen, the
 * mean of what was seen, and an interruption rate that moves from the prior
 * towards the observed rate as hours of running add up; the learned
 * figures' JSON form (kept in Redis) read back exactly, bad entries refused
 * naming the field; what explain is told a pool's figures rest on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
    cJSON *b = sw_learn_basis_json("gpu-spot", &l, 20, SW_PRIOR_SPOT_INTERRUPT);
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
    b = sw_learn_basis_json("gpu-spot", &l, 20, sw_learn_interrupt_rate(0, 0.5));
    assert_string_equal(sw_json_str(b, "interruptFrom"), "learned");
    assert_float_equal(cJSON_GetObjectItem(b, "runHoursSeen")->valuedouble, 0.5, 0);
    cJSON_Delete(b);
    /* A NodePool with nothing seen: the prior. */
    struct sw_learned none = {0};
    b = sw_learn_basis_json("gpu-on-demand", &none, SW_PRIOR_PROVISION_S, 0);
    assert_string_equal(sw_json_str(b, "provisionFrom"), "prior");
    assert_string_equal(sw_json_str(b, "interruptFrom"), "none");
    cJSON_Delete(b);
    /* Fixed nodes: no NodePool; an owned pool adds no node. */
    b = sw_learn_basis_json("", NULL, 0, 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learned_round_trip),
        cmocka_unit_test(test_learned_refused),
        cmocka_unit_test(test_basis),
        cmocka_unit_test(test_provision),
        cmocka_unit_test(test_interrupt_rate),
        cmocka_unit_test(test_home_remaining),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
