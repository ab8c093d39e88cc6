/* Tests for sw_gate_fair_pick, the rule by which the gate's shared pool
 * hands queued work to a free worker (no server needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "replication/gate.h"

static void test_empty_queue(void **state)
{
    (void)state;
    assert_int_equal(sw_gate_fair_pick(NULL, 0, NULL, 0), 0);
}

static void test_fifo_when_nothing_runs(void **state)
{
    (void)state;
    const char *q[] = {"onprem/a/j1", "onprem/b/j2", "onprem/a/j3"};
    assert_int_equal(sw_gate_fair_pick(q, 3, NULL, 0), 0);
}

/* One namespace floods the queue and holds the only worker: the other
 * namespace's Job, queued last, goes next. */
static void test_other_tenant_first(void **state)
{
    (void)state;
    const char *q[] = {"onprem/a/j2", "onprem/a/j3", "onprem/a/j4", "onprem/b/k1"};
    const char *r[] = {"onprem/a/j1"};
    assert_int_equal(sw_gate_fair_pick(q, 4, r, 1), 3);
}

/* The tenant with fewer pieces running goes first; oldest among equals. */
static void test_fewest_running(void **state)
{
    (void)state;
    const char *q[] = {"onprem/a/j9", "onprem/b/k9", "onprem/c/m9", "onprem/b/k8"};
    const char *r[] = {"onprem/a/j1", "onprem/a/j2", "onprem/b/k1", "onprem/c/m1"};
    /* a runs 2, b 1, c 1: b's oldest (index 1) before c's. */
    assert_int_equal(sw_gate_fair_pick(q, 4, r, 4), 1);
}

/* Every queued tenant equally busy: plain first come, first served. */
static void test_all_equal_is_fifo(void **state)
{
    (void)state;
    const char *q[] = {"onprem/b/k2", "onprem/a/j2"};
    const char *r[] = {"onprem/a/j1", "onprem/b/k1"};
    assert_int_equal(sw_gate_fair_pick(q, 2, r, 2), 0);
}

/* The tenant is the cluster and the namespace: the same namespace name
 * on two clusters is two tenants, and a name is not a prefix match. */
static void test_tenant_is_cluster_and_namespace(void **state)
{
    (void)state;
    const char *q1[] = {"onprem/a/j2", "edge/a/j1"};
    const char *r1[] = {"onprem/a/j1"};
    assert_int_equal(sw_gate_fair_pick(q1, 2, r1, 1), 1);
    const char *q2[] = {"onprem/ab/j2", "onprem/a/x"};
    const char *r2[] = {"onprem/a/j1"};
    assert_int_equal(sw_gate_fair_pick(q2, 2, r2, 1), 0);
    /* Keys without a cluster ("namespace/name") work the same way. */
    const char *q3[] = {"a/j2", "b/k1"};
    const char *r3[] = {"a/j1"};
    assert_int_equal(sw_gate_fair_pick(q3, 2, r3, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_queue),
        cmocka_unit_test(test_fifo_when_nothing_runs),
        cmocka_unit_test(test_other_tenant_first),
        cmocka_unit_test(test_fewest_running),
        cmocka_unit_test(test_all_equal_is_fifo),
        cmocka_unit_test(test_tenant_is_cluster_and_namespace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
