/* Tests for common/clock.c: the fake clock moves only when told to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/clock.h"

static void test_fake_clock(void **state)
{
    (void)state;
    struct sw_fake_clock fc;
    sw_fake_clock_init(&fc, 1000);
    const struct sw_clock *c = &fc.clock;
    assert_int_equal(sw_now_ms(c), 1000);
    sw_fake_clock_advance(&fc, 2500);
    assert_int_equal(sw_now_ms(c), 3500);
    assert_int_equal(sw_mono_ms(c), 3500);
}

static void test_system_clock_is_plausible(void **state)
{
    (void)state;
    const struct sw_clock *c = sw_clock_system();
    /* After 2020-01-01 and monotonic never goes back. */
    assert_true(sw_now_ms(c) > 1577836800000LL);
    int64_t a = sw_mono_ms(c), b = sw_mono_ms(c);
    assert_true(b >= a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_clock),
        cmocka_unit_test(test_system_clock_is_plausible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
