/*
 * Tests for clusters/intern.c: one copy per distinct string, references
 * counted, the last release frees, growth keeps every string findable, and
 * an allocation failure is reported, not a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/intern.h"
#include "common/alloc.h"

static void test_same_string_once(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    assert_non_null(t);
    char a[] = "batch-team", b[] = "batch-team";
    const char *x = sw_intern_str(t, a), *y = sw_intern_str(t, b);
    assert_ptr_equal(x, y);
    assert_ptr_not_equal(x, a);
    assert_string_equal(x, "batch-team");
    /* A length-delimited slice of a longer buffer is the same string. */
    const char *z = sw_intern(t, "batch-team/other", 10);
    assert_ptr_equal(z, x);
    assert_int_equal(sw_intern_count(t), 1);
    const char *w = sw_intern_str(t, "ml");
    assert_ptr_not_equal(w, x);
    assert_int_equal(sw_intern_count(t), 2);
    assert_null(sw_intern_str(t, NULL));
    /* Three references to "batch-team": it stays until the third release. */
    sw_intern_release(t, x);
    sw_intern_release(t, y);
    assert_int_equal(sw_intern_count(t), 2);
    sw_intern_release(t, z);
    assert_int_equal(sw_intern_count(t), 1);
    sw_intern_release(t, w);
    sw_intern_release(t, NULL);
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

static void test_growth(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    enum { N = 5000 };
    static const char *p[N];
    char buf[32];
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof(buf), "node-%d", i);
        p[i] = sw_intern_str(t, buf);
        assert_non_null(p[i]);
    }
    assert_int_equal(sw_intern_count(t), N);
    assert_true(sw_intern_bytes(t) > N * 8);
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof(buf), "node-%d", i);
        const char *q = sw_intern_str(t, buf);
        assert_ptr_equal(q, p[i]);
        sw_intern_release(t, q);
    }
    /* Released in another order than added. */
    for (int i = N - 1; i >= 0; i -= 2)
        sw_intern_release(t, p[i]);
    for (int i = N - 2; i >= 0; i -= 2)
        sw_intern_release(t, p[i]);
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    const char *a = sw_intern_str(t, "kept");
    sw_alloc_fail_at(1);
    assert_null(sw_intern_str(t, "new"));
    /* A string already there needs no allocation. */
    const char *b = sw_intern_str(t, "kept");
    sw_alloc_reset();
    assert_ptr_equal(a, b);
    assert_int_equal(sw_intern_count(t), 1);
    sw_intern_release(t, a);
    sw_intern_release(t, b);
    sw_intern_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_string_once),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
