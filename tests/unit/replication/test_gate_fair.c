/* Tests for sw_gate_fair_pick, the rule by which the gate's shared pool
 * hands queued work to a free worker (no server needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "replication/gate.h"

static void test_nothing_waiting(void **state)
{
    (void)state;
    assert_int_equal(sw_gate_fair_pick(NULL, 0, 0), 0);
    struct sw_gate_tenant_load t[2] = {{2, 0}, {0, 0}};
    assert_int_equal(sw_gate_fair_pick(t, 2, 0), 2);
}

/* One namespace holds the only running piece: the other's goes next,
 * wherever the cursor is. */
static void test_fewest_running_first(void **state)
{
    (void)state;
    struct sw_gate_tenant_load t[3] = {{1, 50}, {0, 1}, {2, 3}};
    for (size_t c = 0; c < 3; c++)
        assert_int_equal(sw_gate_fair_pick(t, 3, c), 1);
}

/* Among equals, the first from the cursor on, wrapping. */
static void test_ties_from_cursor(void **state)
{
    (void)state;
    struct sw_gate_tenant_load t[3] = {{1, 4}, {1, 0}, {1, 2}};
    assert_int_equal(sw_gate_fair_pick(t, 3, 0), 0);
    assert_int_equal(sw_gate_fair_pick(t, 3, 1), 2);
    assert_int_equal(sw_gate_fair_pick(t, 3, 2), 2);
}

/* The pool as gate.c drives it, with `workers` workers that each finish
 * before the next pick: tenant a queued 4 pieces before tenant b's one.
 * Returns the order served as a string of tenant letters. */
static void serve(int workers, char *order)
{
    struct sw_gate_tenant_load t[2] = {{0, 4}, {0, 1}};
    size_t cursor = 0, k = 0;
    size_t running[64];
    size_t nrun = 0;
    while (t[0].waiting + t[1].waiting > 0) {
        /* Fill the free workers, then one finishes (the oldest). */
        while ((int)nrun < workers) {
            size_t i = sw_gate_fair_pick(t, 2, cursor);
            if (i == 2)
                break;
            t[i].waiting--;
            t[i].running++;
            cursor = (i + 1) % 2;
            order[k++] = (char)('a' + i);
            running[nrun++] = i;
        }
        t[running[0]].running--;
        memmove(&running[0], &running[1], (--nrun) * sizeof(running[0]));
    }
    order[k] = '\0';
}

/* With one worker nothing runs at a pick, so fewest-running alone would
 * be plain FIFO (a a a a b); the cursor takes turns instead. */
static void test_one_worker_takes_turns(void **state)
{
    (void)state;
    char order[16];
    serve(1, order);
    assert_string_equal(order, "abaaa");
    serve(2, order);
    assert_string_equal(order, "abaaa");
    serve(4, order);
    assert_string_equal(order, "abaaa");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_waiting),
        cmocka_unit_test(test_fewest_running_first),
        cmocka_unit_test(test_ties_from_cursor),
        cmocka_unit_test(test_one_worker_takes_turns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
