/*
 * test_rpo.c - RPO arithmetic and metrics text, with a fixed clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "replication/rpo.h"

static void test_seconds(void **state)
{
    (void)state;
    struct sw_rpo_entry never = {"r", "t", 0, 0};
    struct sw_rpo_entry clean = {"r", "t", 0, 1000000};
    struct sw_rpo_entry behind = {"r", "t", 940000, 1000000};
    assert_true(sw_rpo_seconds(&never, 1000000) < 0);
    assert_true(sw_rpo_seconds(&clean, 1060000) == 0);
    assert_true(sw_rpo_seconds(&behind, 1000000) == 60.0);
    assert_true(sw_rpo_seconds(&behind, 1030000) == 90.0);
}

static void test_metrics(void **state)
{
    (void)state;
    struct sw_rpo_entry e[] = {{"models-dr", "us-west-2", 940000, 1000000},
                               {"data\"set", "us-east-1", 0, 990000},
                               {"new", "x", 0, 0}};
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    assert_int_equal(sw_rpo_metrics(e, 3, 1000000, &b), 0);
    assert_non_null(strstr(b.data, "# TYPE spillway_replication_rpo_seconds gauge\n"));
    assert_non_null(strstr(
        b.data,
        "spillway_replication_rpo_seconds{rule=\"models-dr\",target=\"us-west-2\"} 60.000\n"));
    assert_non_null(strstr(
        b.data,
        "spillway_replication_rpo_seconds{rule=\"data\\\"set\",target=\"us-east-1\"} 0.000\n"));
    assert_null(strstr(b.data, "rule=\"new\""));
    assert_non_null(strstr(b.data, "spillway_replication_last_run_age_seconds{rule=\"data\\\"set\","
                                   "target=\"us-east-1\"} 10.000\n"));
    sw_buf_free(&b);
    /* A cap too small is an error, not a silent cut. */
    sw_buf_init(&b, 64);
    assert_int_equal(sw_rpo_metrics(e, 3, 1000000, &b), SW_ETOOBIG);
    sw_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
