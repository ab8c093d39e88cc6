/* Tests for placement/chargeback.c: seed 001's monthly team report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "placement/chargeback.h"
#include "placement/cost.h"

static void test_ml_research_report(void **state)
{
    (void)state;
    const struct sw_usage_line lines[] = {
        {"A100 on-demand", SW_CAP_ON_DEMAND, 312, 3.06},
        {"A100 spot", SW_CAP_SPOT, 1935, 1.17},
        {"T4 spot", SW_CAP_SPOT, 600, 0.35},
    };
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&lines[0])), 95472);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&lines[1])), 226395);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&lines[2])), 21000);
    struct sw_chargeback r;
    sw_chargeback_sum(lines, 3, 423, &r);
    assert_int_equal(sw_cents(r.cost), 342867);
    assert_int_equal((int)lround(r.gpu_hours), 2847);
    /* "Idle GPU-hours: 423 hrs (14.9%)", "Efficiency score: 85.1%". */
    assert_int_equal((int)lround(r.idle_fraction * 1000), 149);
    assert_int_equal((int)lround(r.efficiency * 1000), 851);
    /* The seed prints a spot ratio of 89.1%; its own lines give
     * 2,535 / 2,847 = 89.04%, which is what the report computes. */
    assert_int_equal((int)lround(r.spot_ratio * 10000), 8904);
}

static void test_top_consumers(void **state)
{
    (void)state;
    const struct sw_usage_line llama = {"training-llama-ft-v3", SW_CAP_SPOT, 1200, 1.17};
    const struct sw_usage_line sweep = {"hyperparameter-sweep", SW_CAP_SPOT, 800, 0.35};
    const struct sw_usage_line alice = {"jupyter-alice", SW_CAP_SPOT, 400, 0.35};
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&llama)), 140400);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&sweep)), 28000);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&alice)), 14000);
}

static void test_empty_report(void **state)
{
    (void)state;
    struct sw_chargeback r;
    sw_chargeback_sum(NULL, 0, 0, &r);
    assert_int_equal(sw_cents(r.cost), 0);
    assert_true(r.spot_ratio == 0 && r.efficiency == 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ml_research_report),
        cmocka_unit_test(test_top_consumers),
        cmocka_unit_test(test_empty_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
