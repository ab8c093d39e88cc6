/* Tests for placement/compare.c: feasible deadlines, misses, losses
 * against the best baseline and burst-now, the frontier, dominance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "placement/compare.h"

/* A Job record with deadline `dl` (0: none) ending at `end` (INFINITY: never). */
static struct sw_sim_job job(double dl, double end)
{
    struct sw_sim_job j = {0};
    j.deadline = dl;
    j.done = isfinite(end);
    j.end = end;
    return j;
}

static void test_compare(void **state)
{
    (void)state;
    /* Four Jobs: j0 without deadline; j1 met by burst-now only; j2 met by
     * nobody (infeasible); j3 met by all but spot-only. */
    const struct sw_sim_job ca[4] = {job(0, 5), job(100, 120), job(10, 50), job(100, 90)};
    const struct sw_sim_job bn[4] = {job(0, 5), job(100, 90), job(10, 40), job(100, 80)};
    const struct sw_sim_job so[4] = {job(0, 5), job(100, INFINITY), job(10, 60), job(100, 101)};
    const struct sw_sim_job sb[4] = {job(0, 5), job(100, 130), job(10, 70), job(100, 95)};
    struct sw_sim_run_view v[4] = {
        {.kind = SW_POLICY_COST_AWARE, .cloud_cost = 50, .jct_mean = 10, .jobs = ca},
        {.kind = SW_POLICY_BURST_NOW, .cloud_cost = 100, .jct_mean = 9, .jobs = bn},
        {.kind = SW_POLICY_SPOT_ONLY, .cloud_cost = 40, .jct_mean = 12, .jobs = so},
        /* Starburst: dearer and slower than cost-aware, as many misses. */
        {.kind = SW_POLICY_STARBURST, .cloud_cost = 60, .jct_mean = 11, .jobs = sb},
    };
    struct sw_sim_comparison c;
    sw_sim_compare(v, 4, 4, &c);
    assert_int_equal(c.feasible, 2);
    assert_int_equal(c.infeasible, 1);
    assert_int_equal(c.cost_aware, 0);
    assert_int_equal(c.burst_now, 1);
    assert_int_equal(c.best, 1); /* burst-now: no miss */
    assert_int_equal(v[0].misses, 1);
    assert_int_equal(v[1].misses, 0);
    assert_int_equal(v[2].misses, 2);
    assert_int_equal(v[3].misses, 1);
    assert_int_equal(v[0].lost_best, 1);
    assert_int_equal(v[2].lost_best, 2);
    assert_int_equal(v[0].lost_burst, 1);
    /* Frontier: cost-aware, burst-now, spot-only; starburst is dominated
     * by cost-aware (cheaper, faster, as many misses). */
    assert_true(v[0].frontier && v[1].frontier && v[2].frontier);
    assert_false(v[3].frontier);
    /* No baseline is cheaper, no slower and missing no more than cost-aware. */
    for (int i = 0; i < 4; i++)
        assert_false(v[i].dominates_cost_aware);
    /* Make spot-only as fast and as good at deadlines: it dominates. */
    v[2].jobs = bn;
    v[2].jct_mean = 10;
    sw_sim_compare(v, 4, 4, &c);
    assert_true(v[2].dominates_cost_aware);
    assert_false(v[0].frontier);
    assert_int_equal(c.best, 2); /* no misses, and cheaper than burst-now */
}

static void test_empty(void **state)
{
    (void)state;
    struct sw_sim_comparison c;
    sw_sim_compare(NULL, 0, 0, &c);
    assert_int_equal(c.best, -1);
    assert_int_equal(c.feasible, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
