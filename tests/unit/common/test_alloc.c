/*
 * Tests for common/alloc.c: the Nth allocation fails once armed, and every
 * one after it until reset; the count and the injection belong to the
 * thread that armed them, so another thread's allocations (the hub's pool
 * and rule threads) neither fail nor move the armed thread's count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <uv.h>

#include "common/alloc.h"

static void test_fail_at_nth(void **state)
{
    (void)state;
    sw_alloc_fail_at(3);
    void *a = sw_malloc(8), *b = sw_calloc(2, 8);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(sw_alloc_injected(), 0);
    assert_null(sw_malloc(8)); /* the third */
    assert_int_equal(sw_alloc_injected(), 1);
    assert_null(sw_realloc(a, 16)); /* and every one after it */
    assert_int_equal(sw_alloc_count(), 4);
    sw_alloc_reset();
    assert_int_equal(sw_alloc_injected(), 0);
    void *c = sw_malloc(8);
    assert_non_null(c);
    sw_free(a);
    sw_free(b);
    sw_free(c);
}

#define OTHER_ALLOCS 1000

struct other {
    int failed;
    uint64_t count;
};

static void other_thread(void *arg)
{
    struct other *o = arg;
    uint64_t before = sw_alloc_count();
    for (int i = 0; i < OTHER_ALLOCS; i++) {
        void *p = sw_malloc(32);
        if (p == NULL)
            o->failed++;
        sw_free(p);
    }
    o->count = sw_alloc_count() - before;
}

static void test_per_thread(void **state)
{
    (void)state;
    sw_alloc_fail_at(1); /* this thread's next allocation fails */
    struct other o = {0};
    uv_thread_t t;
    assert_int_equal(uv_thread_create(&t, other_thread, &o), 0);
    assert_int_equal(uv_thread_join(&t), 0);
    assert_int_equal(o.failed, 0);
    assert_int_equal(o.count, OTHER_ALLOCS);
    assert_int_equal(sw_alloc_count(), 0);
    assert_int_equal(sw_alloc_injected(), 0);
    assert_null(sw_malloc(8)); /* still armed here */
    assert_int_equal(sw_alloc_injected(), 1);
    sw_alloc_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_at_nth),
        cmocka_unit_test(test_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
