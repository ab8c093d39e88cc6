/*
 * test_copy.c - the bandwidth limit of replication/copy.c, with a fixed
 * clock: a reservation made once is waited for in full, however often the
 * copy asks before its time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replication/copy.h"

#define MB 1000000

static void test_reserve(void **state)
{
    (void)state;
    struct sw_throttle none = {0, 0};
    assert_int_equal(sw_throttle_reserve(&none, 1000, 5 * MB), 0);
    assert_int_equal(sw_throttle_reserve(NULL, 1000, 5 * MB), 0);
    /* 10 MB/s: 5 MB take 500 ms of the link each. */
    struct sw_throttle t = {10.0 * MB, 0};
    assert_int_equal(sw_throttle_reserve(&t, 1000, 5 * MB), 0);
    assert_int_equal(sw_throttle_reserve(&t, 1000, 5 * MB), 500);
    assert_int_equal(sw_throttle_reserve(&t, 1200, 5 * MB), 800);
    assert_int_equal(t.next_free_ms, 2500);
    /* An idle link does not bank credit. */
    assert_int_equal(sw_throttle_reserve(&t, 9000, 5 * MB), 0);
    assert_int_equal(t.next_free_ms, 9500);
}

/* The bug this guards against: a part whose bandwidth was reserved went
 * as soon as anything (an upload or a hash finishing) asked again, before
 * its reserved time; a run limited to 60 MB/s moved 180 MB in its first
 * second. */
static void test_wait_honours_the_reservation(void **state)
{
    (void)state;
    struct sw_throttle t = {10.0 * MB, 0};
    struct sw_throttle_slot a = {0, 0}, b = {0, 0};
    assert_int_equal(sw_throttle_wait(&t, &a, 1000, 5 * MB), 0);
    assert_int_equal(sw_throttle_wait(&t, &b, 1000, 5 * MB), 500);
    /* Asked again early: the rest of the wait, and nothing reserved twice. */
    assert_int_equal(sw_throttle_wait(&t, &b, 1100, 5 * MB), 400);
    assert_int_equal(sw_throttle_wait(&t, &b, 1499, 5 * MB), 1);
    assert_int_equal(t.next_free_ms, 2000);
    assert_int_equal(sw_throttle_wait(&t, &b, 1500, 5 * MB), 0);
    assert_int_equal(sw_throttle_wait(&t, &b, 1700, 5 * MB), 0);
    assert_int_equal(sw_throttle_wait(&t, &a, 1700, 5 * MB), 0);
    assert_int_equal(t.next_free_ms, 2000);
    /* Another copy sharing the limit queues behind both. */
    struct sw_throttle_slot c = {0, 0};
    assert_int_equal(sw_throttle_wait(&t, &c, 1700, 5 * MB), 300);
    assert_int_equal(t.next_free_ms, 2500);
}

static void test_wait_unlimited(void **state)
{
    (void)state;
    struct sw_throttle none = {0, 0};
    struct sw_throttle_slot s = {0, 0};
    assert_int_equal(sw_throttle_wait(&none, &s, 1000, 5 * MB), 0);
    assert_int_equal(sw_throttle_wait(&none, &s, 1001, 5 * MB), 0);
    struct sw_throttle_slot n = {0, 0};
    assert_int_equal(sw_throttle_wait(NULL, &n, 1000, 5 * MB), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_wait_honours_the_reservation),
        cmocka_unit_test(test_wait_unlimited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
