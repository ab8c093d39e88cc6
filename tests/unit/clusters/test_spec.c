/* Tests for clusters/spec.c: spec files, --pool flags, validation messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/spec.h"

static void test_file(void **state)
{
    (void)state;
    const char *y = "role: cloud\nregion: us-east-1\npools:\n"
                    "- name: spot-h100\n  capacityType: spot\n  gpuProduct: NVIDIA-H100\n"
                    "  gpuMemoryMiB: 81559\n  zone: us-east-1a\n  pricePerGpuHour: 2.10\n"
                    "  maxGpus: 64\n"
                    "- {name: od, capacityType: on-demand, gpuProduct: NVIDIA-H100, "
                    "pricePerGpuHour: 6.5}\n";
    struct sw_cluster_spec s = {0};
    struct sw_error err;
    assert_int_equal(sw_cluster_spec_parse(y, strlen(y), "spec.yaml", &s, &err), 0);
    assert_int_equal(s.role, SW_ROLE_CLOUD);
    assert_string_equal(s.region, "us-east-1");
    assert_int_equal(s.npools, 2);
    assert_string_equal(s.pools[0].name, "spot-h100");
    assert_int_equal(s.pools[0].gpu_memory_mib, 81559);
    assert_true(s.pools[0].price_per_gpu_hour == 2.10);
    assert_int_equal(s.pools[0].max_gpus, 64);
    assert_string_equal(s.pools[1].capacity_type, "on-demand");
    assert_int_equal(sw_cluster_spec_validate(&s, "spec", &err), 0);
}

static void test_flags(void **state)
{
    (void)state;
    struct sw_cluster_spec s = {0};
    struct sw_error err;
    assert_int_equal(
        sw_pool_flag_parse("name=a100,capacity=owned,product=NVIDIA-A100,memory=40960,price=0", &s,
                           &err),
        0);
    assert_string_equal(s.pools[0].gpu_product, "NVIDIA-A100");
    s.role = SW_ROLE_ONPREM;
    snprintf(s.region, sizeof(s.region), "dc1");
    assert_int_equal(sw_cluster_spec_validate(&s, "flags", &err), 0);
    assert_int_equal(sw_pool_flag_parse("name=x,capacity=cheap", &s, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "field \"capacity\": expected owned, on-demand or spot"));
    assert_int_equal(sw_pool_flag_parse("name=x,price=-1", &s, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "field \"price\""));
    assert_int_equal(sw_pool_flag_parse("nonsense", &s, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "expected key=value"));
}

static void test_errors_named(void **state)
{
    (void)state;
    struct {
        const char *y;
        const char *needle;
    } bad[] = {
        {"role: hybrid\n", "cluster spec \"s.yaml\": field \"role\": expected onprem or cloud"},
        {"pools: {a: b}\n", "field \"pools\": expected a list"},
        {"pools: [{name: a, gpuMemoryMiB: lots}]\n", "field \"pools[0].gpuMemoryMiB\""},
        {"pools: [{name: a, color: red}]\n", "field \"pools[0].color\": unknown"},
        {"regoin: x\n", "field \"regoin\": unknown"},
        {"role: [\n", "cluster spec \"s.yaml\": line"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_cluster_spec s = {0};
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_cluster_spec_parse(bad[i].y, strlen(bad[i].y), "s.yaml", &s, &err);
        if (rc == 0 || strstr(err.msg, bad[i].needle) == NULL)
            fail_msg("case %zu: rc=%d msg=%s", i, rc, err.msg);
    }
    struct sw_cluster_spec s = {.role = SW_ROLE_ONPREM};
    struct sw_error err;
    assert_int_equal(sw_cluster_spec_validate(&s, "c", &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "region is missing"));
    snprintf(s.region, sizeof(s.region), "dc");
    s.npools = 1;
    snprintf(s.pools[0].name, sizeof(s.pools[0].name), "p");
    snprintf(s.pools[0].capacity_type, sizeof(s.pools[0].capacity_type), "spot");
    snprintf(s.pools[0].gpu_product, sizeof(s.pools[0].gpu_product), "X");
    assert_int_equal(sw_cluster_spec_validate(&s, "c", &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "onprem cluster's pools are owned"));
    assert_true(sw_name_valid("cloud-spot"));
    assert_false(sw_name_valid("Cloud"));
    assert_false(sw_name_valid("-x"));
    assert_false(sw_name_valid(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_errors_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
