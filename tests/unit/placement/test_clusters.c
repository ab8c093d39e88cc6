/* Tests for placement/clusters.c: the simulator's clusters file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
#include "placement/clusters.h"

static const char lab[] =
    "{\"pools\":["
    "{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\",\"gpus\":8,"
    "\"price_per_gpu_hour\":1.0,\"interconnect\":[\"nvlink\"]},"
    "{\"name\":\"cloud-spot\",\"region\":\"us-east-1\",\"capacity\":\"spot\",\"gpus\":64,"
    "\"provision_seconds\":180,\"price_per_gpu_hour\":1.5625,\"interruptions_per_hour\":0.1},"
    "{\"name\":\"cloud-ondemand\",\"region\":\"us-west-2\",\"capacity\":\"on-demand\",\"gpus\":32,"
    "\"price_per_gpu_hour\":4.10}],"
    "\"links\":[{\"from\":\"onprem\",\"to\":\"us-east-1\",\"price_per_gb\":0.02,\"bandwidth_gbps\":"
    "10}],"
    "\"quotas\":[{\"team\":\"ml\",\"flavour\":\"cloud-spot\",\"nominal\":16,\"cohort\":\"c\"}],"
    "\"budgets\":[{\"team\":\"ml\",\"cap\":1000}],"
    "\"job_defaults\":{\"checkpoint_seconds\":900,\"burst\":\"cloud-first\"}}";

static void test_lab(void **state)
{
    (void)state;
    struct sw_clusters c = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(lab, strlen(lab), "lab.json", &c, &err), 0);
    assert_int_equal(c.n_pools, 3);
    assert_string_equal(c.origin, "onprem");
    assert_int_equal(c.pools[0].total_gpus, 8);
    assert_int_equal(c.pools[0].free_gpus, 8);
    assert_int_equal(c.pools[0].interconnect, SW_IC_NVLINK);
    assert_int_equal(c.pools[1].total_gpus, 0);
    assert_int_equal(c.pools[1].max_gpus, 64);
    assert_int_equal(c.pools[1].capacity, SW_CAP_SPOT);
    assert_int_equal(c.n_links, 1);
    assert_int_equal(c.quotas[0].borrowing_limit, -1);
    assert_true(c.budgets[0].cap == 1000);
    assert_true(c.defaults.checkpoint_s == 900 && c.defaults.restart_s == 300);
    assert_int_equal(c.defaults.burst, SW_BURST_CLOUD_FIRST);
    sw_clusters_free(&c);
}

static void expect(const char *text, int code, const char *msg)
{
    struct sw_clusters c = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(text, strlen(text), "lab.json", &c, &err), code);
    assert_string_equal(err.msg, msg);
    sw_clusters_free(&c);
}

static void test_bad_input(void **state)
{
    (void)state;
    /* fuzz_clusters: $0 spot with 1e308 interruptions an hour gave NaN costs. */
    expect("{\"pools\":[{\"name\":\"s\",\"region\":\"r\",\"capacity\":\"spot\",\"gpus\":8,"
           "\"price_per_gpu_hour\":0,\"interruptions_per_hour\":1e308}]}",
           SW_EPARSE,
           "lab.json: pools[0]: field \"interruptions_per_hour\": 1e+308 is out of range "
           "(at most 3600)");
    expect("{\"pools\":[{\"name\":\"s\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1}],\"job_defaults\":{\"deadline_fraction\":2}}",
           SW_EPARSE,
           "lab.json: job_defaults: field \"deadline_fraction\": 2 is out of range (at "
           "most 1)");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":-8,"
           "\"price_per_gpu_hour\":1}]}",
           SW_EPARSE,
           "lab.json: pools[0]: field \"gpus\": expected an integer from 0 to 1000000, got -8");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
           "\"price_per_gpu_hour\":\"cheap\"}]}",
           SW_EPARSE,
           "lab.json: pools[0]: field \"price_per_gpu_hour\": expected a number, got a string");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"reserved\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1}]}",
           SW_EPARSE,
           "lab.json: pools[0]: field \"capacity\": expected owned, on-demand or spot, got "
           "\"reserved\"");
    expect(
        "{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
        "\"price_per_gpu_hour\":1}],\"quotas\":[{\"team\":\"t\",\"flavour\":\"b\",\"nominal\":1}]}",
        SW_ENOENT, "lab.json: quota \"t/b\": field \"flavour\": no pool has flavour \"b\"");
    expect("{\"pools\":[]}", SW_EPARSE, "lab.json: field \"pools\" is empty");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"spot\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1}]}",
           SW_EPARSE, "lab.json: field \"origin\" is missing and no pool is owned");
    expect("[1", SW_EPARSE, "lab.json: malformed JSON near byte 1");
    /* A field the format lacks is refused, naming it, where, and what is expected. */
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1}],\"qoutas\":[]}",
           SW_EPARSE,
           "lab.json: field \"qoutas\": unknown (expected pools, links, quotas, budgets, "
           "job_defaults, origin)");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1,\"mig\":[{\"profile\":\"1g.10gb\",\"per_gpu\":7,"
           "\"gpus\":1,\"slices\":7}]}]}",
           SW_EPARSE,
           "lab.json: pools[0]: mig[0]: field \"slices\": unknown (expected profile, per_gpu, "
           "gpus)");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1}],\"links\":[{\"from\":\"r\",\"to\":\"s\","
           "\"price_per_gb\":0,\"bandwidth_gbps\":1,\"latency\":1}]}",
           SW_EPARSE,
           "lab.json: links[0]: field \"latency\": unknown (expected from, to, price_per_gb, "
           "bandwidth_gbps)");
    expect("{\"pools\":[{\"name\":\"a\",\"region\":\"r\",\"capacity\":\"owned\",\"gpus\":8,"
           "\"price_per_gpu_hour\":1}],\"budgets\":[{\"team\":\"t\",\"cap\":1,\"currency\":1}]}",
           SW_EPARSE, "lab.json: budgets[0]: field \"currency\": unknown (expected team, cap)");
}

static void test_allocation_failures(void **state)
{
    (void)state;
    for (uint64_t n = 1; n < 500; n++) {
        struct sw_clusters c = {0};
        struct sw_error err = {0};
        sw_alloc_fail_at(sw_alloc_count() + n);
        int rc = sw_clusters_parse(lab, strlen(lab), "lab.json", &c, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_int_equal(c.n_pools, 3);
            sw_clusters_free(&c);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
        sw_clusters_free(&c);
    }
    fail_msg("never completed within 500 allocations");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lab),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
