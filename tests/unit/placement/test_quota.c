/* Tests for placement/quota.c: Kueue nominal quotas, borrowing, cohorts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "placement/quota.h"

/* Seed 001: 32 A100s, team A and team B with 16 each in one cohort; B may
 * borrow 8. A uses 8, so B runs on 16 + 8 = 24 and not one GPU more. */
static void test_seed_borrowing(void **state)
{
    (void)state;
    const struct sw_quota quotas[] = {
        {"team-a", "a100", "ai-platform", 16, -1, 8},
        {"team-b", "a100", "ai-platform", 16, 8, 16},
    };
    struct sw_quota_state st[2];
    struct sw_quota_group g[2];
    size_t ng;
    sw_quota_build(quotas, 2, st, g, &ng);
    assert_int_equal(ng, 1);
    assert_int_equal(g[0].nominal, 32);
    assert_int_equal(g[0].used, 24);
    int borrowed;
    assert_int_equal(sw_quota_check(&st[1], g, 8, &borrowed), SW_QUOTA_OK);
    assert_int_equal(borrowed, 8);
    assert_int_equal(sw_quota_check(&st[1], g, 9, &borrowed), SW_QUOTA_BORROW_LIMIT);
    sw_quota_charge(&st[1], g, 8);
    assert_int_equal(st[1].used, 24);
    assert_int_equal(g[0].used, 32);
    /* Team A is within its nominal quota: that is guaranteed (Kueue would
     * reclaim what B borrowed). */
    assert_int_equal(sw_quota_check(&st[0], g, 8, &borrowed), SW_QUOTA_OK);
    assert_int_equal(borrowed, 0);
    /* Past its nominal, A finds the cohort fully used. */
    assert_int_equal(sw_quota_check(&st[0], g, 9, &borrowed), SW_QUOTA_COHORT);
}

static void test_no_cohort_no_borrowing(void **state)
{
    (void)state;
    const struct sw_quota quotas[] = {
        {"team-a", "spot", "", 8, 100, 4},
        {"team-b", "spot", "other", 8, -1, 0},
    };
    struct sw_quota_state st[2];
    struct sw_quota_group g[2];
    size_t ng;
    sw_quota_build(quotas, 2, st, g, &ng);
    assert_int_equal(ng, 1);
    assert_int_equal(st[0].group, -1);
    assert_int_equal(sw_quota_check(&st[0], g, 4, NULL), SW_QUOTA_OK);
    assert_int_equal(sw_quota_check(&st[0], g, 5, NULL), SW_QUOTA_NOMINAL);
    /* Alone in its cohort, B can only borrow from itself: nothing. */
    assert_int_equal(sw_quota_check(&st[1], g, 9, NULL), SW_QUOTA_COHORT);
    assert_string_equal(sw_quota_verdict_name(SW_QUOTA_BORROW_LIMIT), "borrowing limit reached");
}

static void test_groups_by_cohort_and_flavour(void **state)
{
    (void)state;
    const struct sw_quota quotas[] = {
        {"a", "a100", "c1", 4, -1, 0},
        {"b", "t4", "c1", 4, -1, 0},
        {"c", "a100", "c1", 4, -1, 0},
        {"d", "a100", "c2", 4, -1, 0},
    };
    struct sw_quota_state st[4];
    struct sw_quota_group g[4];
    size_t ng;
    sw_quota_build(quotas, 4, st, g, &ng);
    assert_int_equal(ng, 3);
    assert_int_equal(st[0].group, st[2].group);
    assert_true(st[0].group != st[1].group && st[0].group != st[3].group);
    assert_int_equal(g[st[0].group].nominal, 8);
    /* a may borrow c's 4 unused GPUs, but not b's (another flavour). */
    assert_int_equal(sw_quota_check(&st[0], g, 8, NULL), SW_QUOTA_OK);
    assert_int_equal(sw_quota_check(&st[0], g, 9, NULL), SW_QUOTA_COHORT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_borrowing),
        cmocka_unit_test(test_no_cohort_no_borrowing),
        cmocka_unit_test(test_groups_by_cohort_and_flavour),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
