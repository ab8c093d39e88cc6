/*
 * Tests for controller/hub/learn.c: the prior until something is seen, the
 * mean of what was seen, and an interruption rate that moves from the prior
 * towards the observed rate as hours of running add up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provision),
        cmocka_unit_test(test_interrupt_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
