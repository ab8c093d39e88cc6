/* Tests for clusters/health.c's state machine: thresholds, reasons, times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "clusters/health.h"
#include "common/error.h"

static void test_transitions(void **state)
{
    (void)state;
    struct sw_health_policy p;
    sw_health_policy_default(&p);
    struct sw_health h = {0};
    /* The first good probe makes an unknown cluster Ready. */
    assert_int_equal(sw_health_observe(&h, &p, 1000, 0, 200, 10, ""), 1);
    assert_int_equal(h.state, SW_HEALTH_READY);
    assert_int_equal(h.since_ms, 1000);
    assert_int_equal(sw_health_observe(&h, &p, 2000, 0, 200, 10, ""), 0);
    /* A failing check: Degraded with the check named. */
    assert_int_equal(sw_health_observe(&h, &p, 3000, 0, 500, 10, "etcd failed"), 1);
    assert_int_equal(h.state, SW_HEALTH_DEGRADED);
    assert_non_null(strstr(h.reason, "/readyz answered 500: etcd failed"));
    assert_int_equal(h.since_ms, 3000);
    /* One good probe is not enough to be Ready again; two are. */
    assert_int_equal(sw_health_observe(&h, &p, 4000, 0, 200, 10, ""), 0);
    assert_int_equal(h.state, SW_HEALTH_DEGRADED);
    assert_int_equal(sw_health_observe(&h, &p, 5000, 0, 200, 10, ""), 1);
    assert_int_equal(h.state, SW_HEALTH_READY);
    /* Slow answers degrade. */
    assert_int_equal(sw_health_observe(&h, &p, 6000, 0, 200, 2500, ""), 1);
    assert_non_null(strstr(h.reason, "took 2500 ms"));
    /* Transport failures: Degraded until the threshold, then Unreachable. */
    sw_health_observe(&h, &p, 7000, 0, 200, 10, "");
    sw_health_observe(&h, &p, 8000, 0, 200, 10, "");
    assert_int_equal(h.state, SW_HEALTH_READY);
    assert_int_equal(sw_health_observe(&h, &p, 9000, -8, 0, 5000, "connection refused"), 1);
    assert_int_equal(h.state, SW_HEALTH_DEGRADED);
    assert_non_null(strstr(h.reason, "1 of 3"));
    assert_int_equal(sw_health_observe(&h, &p, 10000, -8, 0, 5000, "connection refused"), 0);
    assert_int_equal(sw_health_observe(&h, &p, 11000, -8, 0, 5000, "connection refused"), 1);
    assert_int_equal(h.state, SW_HEALTH_UNREACHABLE);
    assert_int_equal(h.since_ms, 11000);
    assert_non_null(strstr(h.reason, "3 probes in a row failed: connection refused"));
    /* Further failures keep the time it went down. */
    assert_int_equal(sw_health_observe(&h, &p, 12000, -8, 0, 5000, "x"), 0);
    assert_int_equal(h.since_ms, 11000);
    /* Recovery needs success_threshold good probes. */
    assert_int_equal(sw_health_observe(&h, &p, 13000, 0, 200, 10, ""), 0);
    assert_int_equal(h.state, SW_HEALTH_UNREACHABLE);
    assert_int_equal(sw_health_observe(&h, &p, 14000, 0, 200, 10, ""), 1);
    assert_int_equal(h.state, SW_HEALTH_READY);
    assert_string_equal(sw_health_state_name(h.state), "Ready");
}

/* bad_since_ms: when the current run of unanswered or not-200 probes began
 * (the hub's loss toleration counts from it); a 200, even slow, ends it. */
static void test_bad_since(void **state)
{
    (void)state;
    struct sw_health_policy p;
    sw_health_policy_default(&p);
    struct sw_health h = {0};
    sw_health_observe(&h, &p, 1000, 0, 200, 10, "");
    assert_int_equal(h.bad_since_ms, 0);
    sw_health_observe(&h, &p, 2000, SW_EUNAVAIL, 0, 0, "connection refused");
    assert_int_equal(h.bad_since_ms, 2000);
    sw_health_observe(&h, &p, 3000, 0, 500, 10, "etcd failed");
    assert_int_equal(h.bad_since_ms, 2000); /* still not Ready: the run goes on */
    sw_health_observe(&h, &p, 4000, SW_EUNAVAIL, 0, 0, "timeout");
    assert_int_equal(h.bad_since_ms, 2000);
    sw_health_observe(&h, &p, 5000, 0, 200, 9000, ""); /* slow, but an answer */
    assert_int_equal(h.bad_since_ms, 0);
    assert_int_equal(h.state, SW_HEALTH_DEGRADED);
    sw_health_observe(&h, &p, 6000, 0, 503, 10, "");
    assert_int_equal(h.bad_since_ms, 6000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transitions),
        cmocka_unit_test(test_bad_since),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
