/* Tests for placement/model.c: names and validation of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "lab.h"

static void test_valid_lab(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    lab_workload(&l.pending[0], "train-1", "ml", SW_PRIO_TRAINING, 1, 8, 3600);
    l.snap.n_pending = 1;
    struct sw_error err = {0};
    assert_int_equal(sw_snapshot_validate(&l.snap, &err), 0);
}

static void expect_error(const struct sw_snapshot *s, int code, const char *msg)
{
    struct sw_error err = {0};
    assert_int_equal(sw_snapshot_validate(s, &err), code);
    assert_string_equal(err.msg, msg);
}

static void test_negative_gpus(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    lab_workload(&l.pending[0], "train-1", "ml", SW_PRIO_TRAINING, 1, -2, 3600);
    l.snap.n_pending = 1;
    expect_error(
        &l.snap, SW_EINVAL,
        "workload \"train-1\": field \"gpus_per_pod\": expected a positive integer, got -2");
    l.pending[0].gpus_per_pod = 1;
    l.pending[0].pods = 0;
    expect_error(&l.snap, SW_EINVAL,
                 "workload \"train-1\": field \"pods\": expected a positive integer, got 0");
}

static void test_nan_prices(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    l.pools[1].price_gpu_h = NAN;
    expect_error(&l.snap, SW_EINVAL,
                 "pool \"cloud-spot\": field \"price_per_gpu_hour\": expected a finite "
                 "non-negative number, got nan");
    l.pools[1].price_gpu_h = 1;
    l.pools[2].interrupt_per_h = -1;
    expect_error(&l.snap, SW_EINVAL,
                 "pool \"cloud-ondemand\": field \"interruptions_per_hour\": expected a finite "
                 "non-negative number, got -1");
    l.pools[2].interrupt_per_h = 0;
    l.links[0].price_per_gb = INFINITY;
    expect_error(&l.snap, SW_EINVAL,
                 "link \"onprem->us-east-1\": field \"price_per_gb\": expected a finite "
                 "non-negative number, got inf");
    l.links[0].price_per_gb = 0;
    lab_workload(&l.pending[0], "w", "ml", SW_PRIO_TRAINING, 1, 1, NAN);
    l.snap.n_pending = 1;
    expect_error(&l.snap, SW_EINVAL,
                 "workload \"w\": field \"runtime_seconds\": expected a finite non-negative "
                 "number, got nan");
    l.pending[0].runtime_s = 1;
    l.pending[0].max_price = NAN;
    expect_error(&l.snap, SW_EINVAL,
                 "workload \"w\": field \"max_price_per_gpu_hour\": expected a finite "
                 "non-negative number, got nan");
}

static void test_unknown_names(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    strcpy(l.queues[0].pool, "onprem-2");
    expect_error(&l.snap, SW_ENOENT, "local queue #0: field \"pool\": unknown pool \"onprem-2\"");
    strcpy(l.queues[0].pool, "onprem");
    l.quotas[0] = (struct sw_quota){"ml", "no-such-pool", "", 1, 0, 0};
    l.snap.n_quotas = 1;
    expect_error(
        &l.snap, SW_ENOENT,
        "quota \"ml/no-such-pool\": field \"flavour\": no pool has flavour \"no-such-pool\"");
}

static void test_inconsistent_pools(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    l.pools[0].free_gpus = 9;
    expect_error(&l.snap, SW_EINVAL,
                 "pool \"onprem\": field \"free_gpus\": 9 exceeds total_gpus 8");
    l.pools[0].free_gpus = 0;
    strcpy(l.pools[2].name, "cloud-spot");
    expect_error(&l.snap, SW_EINVAL, "pool \"cloud-spot\": duplicate name (pools #1 and #2)");
}

static void test_enum_names(void **state)
{
    (void)state;
    enum sw_capacity c;
    enum sw_burst_mode b;
    enum sw_priority_class p;
    assert_int_equal(sw_capacity_parse("spot", &c), 0);
    assert_int_equal(c, SW_CAP_SPOT);
    assert_int_equal(sw_capacity_parse("reserved", &c), SW_EINVAL);
    assert_int_equal(sw_burst_mode_parse("cloud-first", &b), 0);
    assert_int_equal(b, SW_BURST_CLOUD_FIRST);
    assert_int_equal(sw_priority_parse("production", &p), 0);
    assert_string_equal(sw_priority_name(p), "production");
    assert_string_equal(sw_capacity_name(SW_CAP_ON_DEMAND), "on-demand");
    char small[4];
    assert_int_equal(sw_name_set(small, sizeof(small), "abcdef"), SW_ETOOBIG);
    assert_string_equal(small, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_lab),          cmocka_unit_test(test_negative_gpus),
        cmocka_unit_test(test_nan_prices),         cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_inconsistent_pools), cmocka_unit_test(test_enum_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
