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
    assert_string_equal(s.local_queue, "");
    assert_int_equal(sw_cluster_spec_validate(&s, "spec", &err), 0);
    const char *lq = "localQueue: gpu-a\n";
    assert_int_equal(sw_cluster_spec_parse(lq, strlen(lq), "spec.yaml", &s, &err), 0);
    assert_string_equal(s.local_queue, "gpu-a");
    /* At the limit: 63 characters; one more is refused. */
    char name[70];
    memset(name, 'q', 64);
    name[63] = '\0';
    assert_int_equal(sw_cluster_local_queue_check(name, "--local-queue", &err), 0);
    name[63] = 'q';
    name[64] = '\0';
    assert_int_equal(sw_cluster_local_queue_check(name, "--local-queue", &err), SW_EINVAL);
    assert_int_equal(sw_cluster_local_queue_check("-gpu", "--local-queue", &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "--local-queue: expected a LocalQueue name"));
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

/* The narrow member role's namespaces: flag and file, and what they grant. */
static void test_namespaces(void **state)
{
    (void)state;
    struct sw_cluster_spec s = {0};
    struct sw_error err;
    assert_true(sw_cluster_spec_grants(&s, "anything")); /* the wide role */
    const char *y = "role: cloud\nregion: r\nnamespaces: [team-a, team-b]\n";
    assert_int_equal(sw_cluster_spec_parse(y, strlen(y), "s.yaml", &s, &err), 0);
    assert_int_equal(s.nnamespaces, 2);
    assert_true(sw_cluster_spec_grants(&s, "team-b"));
    assert_false(sw_cluster_spec_grants(&s, "team-c"));
    char buf[64];
    sw_cluster_namespaces_str(&s, buf, sizeof(buf));
    assert_string_equal(buf, "team-a, team-b");
    sw_cluster_namespaces_str(&s, buf, 9);
    assert_string_equal(buf, "team-a");
    struct sw_cluster_spec f = {0};
    assert_int_equal(sw_cluster_namespaces_flag(&f, "x,y-1,z", "--namespaces", &err), 0);
    assert_int_equal(f.nnamespaces, 3);
    assert_string_equal(f.namespaces[2], "z");
    assert_int_equal(sw_cluster_namespaces_flag(&f, "w,,v", "--namespaces", &err), SW_EINVAL);
    assert_string_equal(err.msg, "--namespaces: expected a namespace name (1 to 63 of a-z, 0-9 "
                                 "and '-', starting and ending with a letter or digit), got \"\"");
    struct sw_cluster_spec m = {0};
    for (int i = 0; i < SW_MAX_BURST_NAMESPACES; i++) {
        snprintf(buf, sizeof(buf), "ns-%d", i);
        assert_int_equal(sw_cluster_namespace_add(&m, buf, "f", &err), 0);
    }
    assert_int_equal(sw_cluster_namespace_add(&m, "one-more", "f", &err), SW_ERANGE);
    assert_string_equal(err.msg, "f: at most 32 namespaces");
}

/* A pool bound to a Karpenter NodePool: flag and file, and its checks. */
static void test_nodepool(void **state)
{
    (void)state;
    struct sw_cluster_spec s = {.role = SW_ROLE_CLOUD};
    snprintf(s.region, sizeof(s.region), "us-east-1");
    struct sw_error err;
    assert_int_equal(sw_pool_flag_parse("name=spot,capacity=spot,product=H100,price=2.1,"
                                        "nodepool=gpu-spot",
                                        &s, &err),
                     0);
    assert_string_equal(s.pools[0].nodepool, "gpu-spot");
    assert_int_equal(sw_cluster_spec_validate(&s, "flags", &err), 0);
    assert_int_equal(sw_pool_flag_parse("name=x,nodepool=Gpu_Spot", &s, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "field \"nodepool\": expected a NodePool name"));
    /* Owned capacity is fixed nodes. */
    assert_int_equal(
        sw_pool_flag_parse("name=own,capacity=owned,product=H100,nodepool=np", &s, &err), 0);
    assert_int_equal(sw_cluster_spec_validate(&s, "flags", &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "pool \"own\": field \"nodePool\""));
    /* In a file. */
    struct sw_cluster_spec f = {0};
    const char *y = "role: cloud\nregion: us-west-2\npools:\n- name: od\n  capacityType: "
                    "on-demand\n  gpuProduct: H100\n  nodePool: gpu-on-demand\n";
    assert_int_equal(sw_cluster_spec_parse(y, strlen(y), "s.yaml", &f, &err), 0);
    assert_string_equal(f.pools[0].nodepool, "gpu-on-demand");
}

static void test_errors_named(void **state)
{
    (void)state;
    struct {
        const char *y;
        const char *msg;
    } bad[] = {
        {"role: hybrid\n", "cluster spec \"s.yaml\": line 1: field \"role\": expected onprem or "
                           "cloud, got \"hybrid\""},
        {"pools: {a: b}\n", "cluster spec \"s.yaml\": line 1: field \"pools\": expected a list of "
                            "pools, got a mapping"},
        {"pools: [{name: a, gpuMemoryMiB: lots}]\n",
         "cluster spec \"s.yaml\": line 1: field \"pools[0].gpuMemoryMiB\": expected a whole "
         "number of MiB, got \"lots\""},
        {"pools: [{name: a, color: red}]\n",
         "cluster spec \"s.yaml\": line 1: field \"pools[0].color\": unknown (expected name, "
         "capacityType, gpuProduct, gpuMemoryMiB, zone, pricePerGpuHour, maxGpus, nodePool)"},
        {"role: cloud\nregoin: x\n",
         "cluster spec \"s.yaml\": line 2: field \"regoin\": unknown (expected role, region, name, "
         "pools, localQueue, namespaces)"},
        {"localQueue: Team_CV\n",
         "cluster spec \"s.yaml\": line 1: field \"localQueue\": expected a LocalQueue name (1 to "
         "63 "
         "of a-z, 0-9 and '-', starting and ending with a letter or digit), got \"Team_CV\""},
        {"role: [\n", "cluster spec \"s.yaml\": line 2: did not find expected node content"},
        {"namespaces: team-a\n", "cluster spec \"s.yaml\": line 1: field \"namespaces\": "
                                 "expected a list of namespace names, got a scalar"},
        {"namespaces: []\n", "cluster spec \"s.yaml\": line 1: field \"namespaces\": expected "
                             "a list of namespace names, got an empty list"},
        {"namespaces: [a, Team_B]\n",
         "cluster spec \"s.yaml\": line 1: field \"namespaces[1]\": expected a namespace name (1 "
         "to 63 of a-z, 0-9 and '-', starting and ending with a letter or digit), got "
         "\"Team_B\""},
        {"namespaces: [a, {b: c}]\n", "cluster spec \"s.yaml\": line 1: field \"namespaces[1]\": "
                                      "expected a namespace name, got a mapping"},
        {"namespaces: [a, a]\n", "cluster spec \"s.yaml\": line 1: field \"namespaces[1]\": "
                                 "namespace \"a\" is listed twice"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_cluster_spec s = {0};
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_cluster_spec_parse(bad[i].y, strlen(bad[i].y), "s.yaml", &s, &err);
        if (rc == 0 || strcmp(err.msg, bad[i].msg) != 0)
            fail_msg("case %zu: rc=%d\n  got:  %s\n  want: %s", i, rc, err.msg, bad[i].msg);
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

/*
 * The spec file is read strictly: unknown keys at every level, keys given
 * twice, keys that are not field names, and values of the wrong shape
 * (a list or a mapping where a scalar goes, a scalar where a list or a
 * mapping goes, null, NUL bytes) are errors naming the file, the line and
 * the field, never skipped and never "last one wins".
 */
static void test_strict(void **state)
{
    (void)state;
    struct {
        const char *y;
        int rc;
        const char *msg;
    } bad[] = {
        /* Keys given twice. */
        {"role: cloud\nregion: a\nregion: b\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 3: field \"region\": given twice (first on line 2)"},
        {"role: cloud\nrole: onprem\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 2: field \"role\": given twice (first on line 1)"},
        {"pools: []\nregion: a\npools: []\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 3: field \"pools\": given twice (first on line 1)"},
        {"name: a\nname: b\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 2: field \"name\": given twice (first on line 1)"},
        {"pools:\n- name: a\n  zone: z1\n  zone: z2\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 4: field \"pools[0].zone\": given twice (first on "
         "line 3)"},
        {"pools:\n- {name: a}\n- {name: b, maxGpus: 1,\n   maxGpus: 2}\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 4: field \"pools[1].maxGpus\": given twice (first on "
         "line 3)"},
        /* Keys that are not field names, at the top and in a pool. */
        {"role: cloud\n? [a, b]\n: x\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 2: a key of the top-level mapping: expected a field "
         "name, got a list"},
        {"? {a: b}\n: x\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: a key of the top-level mapping: expected a field "
         "name, got a mapping"},
        {"~: x\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: a key of the top-level mapping: expected a field "
         "name, got null"},
        {"\"role\\0\": cloud\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: a key of the top-level mapping: expected a field "
         "name, got a string with a NUL character"},
        {"pools:\n- name: a\n  ? [zone]\n  : x\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 3: a key of \"pools[0]\": expected a field name, got "
         "a list"},
        /* Unknown keys at every level, including the --pool short names. */
        {"role: cloud\nextra: {a: b}\n", SW_EINVAL,
         "cluster spec \"dir/s.yaml\": line 2: field \"extra\": unknown (expected role, region, "
         "name, pools, localQueue, namespaces)"},
        {"pools:\n- name: a\n  capacity: spot\n", SW_EINVAL,
         "cluster spec \"dir/s.yaml\": line 3: field \"pools[0].capacity\": unknown (expected "
         "name, capacityType, gpuProduct, gpuMemoryMiB, zone, pricePerGpuHour, maxGpus, nodePool)"},
        {"pools:\n- name: a\n  labels: {x: y}\n", SW_EINVAL,
         "cluster spec \"dir/s.yaml\": line 3: field \"pools[0].labels\": unknown (expected "
         "name, capacityType, gpuProduct, gpuMemoryMiB, zone, pricePerGpuHour, maxGpus, nodePool)"},
        /* A list or a mapping where a scalar goes. */
        {"role: [cloud]\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"role\": expected onprem or cloud, got a "
         "list"},
        {"region: {name: x}\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"region\": expected a region name, got a "
         "mapping"},
        {"name: [a, b]\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"name\": expected a cluster name, got a "
         "list"},
        {"pools:\n- name: a\n  gpuProduct: [H100]\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 3: field \"pools[0].gpuProduct\": expected a GPU "
         "product name, got a list"},
        {"pools:\n- name: {x: y}\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 2: field \"pools[0].name\": expected a pool name, got "
         "a mapping"},
        /* A scalar where a list or a mapping goes. */
        {"pools: spot-h100\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"pools\": expected a list of pools, got a "
         "scalar"},
        {"pools:\n- spot-h100\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 2: field \"pools[0]\": expected a mapping, got a "
         "scalar"},
        {"- role: cloud\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": expected a mapping at the top, got a list"},
        {"cloud\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": expected a mapping at the top, got a scalar"},
        {"", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": expected a mapping at the top, got an empty "
         "file"},
        /* Null is not a value, and neither is a string with a NUL inside. */
        {"role:\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"role\": expected onprem or cloud, got "
         "null"},
        {"pools:\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"pools\": expected a list of pools, got "
         "null"},
        {"pools:\n- name: a\n  zone: ~\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 3: field \"pools[0].zone\": expected a zone name, got "
         "null"},
        {"region: \"us\\0east\"\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 1: field \"region\": expected a region name, got a "
         "string with a NUL character"},
        /* A second document would be ignored by a one-document load. */
        {"role: cloud\nregion: a\n---\nregion: b\n", SW_EPARSE,
         "cluster spec \"dir/s.yaml\": line 3: a second YAML document; a spec file holds one"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_cluster_spec s = {0};
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_cluster_spec_parse(bad[i].y, strlen(bad[i].y), "dir/s.yaml", &s, &err);
        if (rc != bad[i].rc || strcmp(err.msg, bad[i].msg) != 0)
            fail_msg("case %zu: rc=%d (want %d)\n  got:  %s\n  want: %s", i, rc, bad[i].rc, err.msg,
                     bad[i].msg);
    }

    /* Quoted "null" is a string, and the same key in two pools is fine. */
    const char *ok = "role: cloud\nregion: 'null'\nname: lab\npools:\n"
                     "- {name: a, capacityType: spot, gpuProduct: G, zone: z}\n"
                     "- {name: b, capacityType: spot, gpuProduct: G, zone: z}\n";
    struct sw_cluster_spec s = {0};
    struct sw_error err;
    assert_int_equal(sw_cluster_spec_parse(ok, strlen(ok), "dir/s.yaml", &s, &err), 0);
    assert_string_equal(s.region, "null");
    assert_int_equal(s.npools, 2);
    assert_string_equal(s.pools[1].zone, "z");
}

/* A --pool flag names each field once, whichever spelling it uses. */
static void test_flag_strict(void **state)
{
    (void)state;
    struct {
        const char *v;
        const char *msg;
    } bad[] = {
        {"name=a,capacity=spot,capacity=owned",
         "--pool \"name=a,capacity=spot,capacity=owned\": key \"capacity\": given twice (as "
         "\"capacity\" before)"},
        {"name=a,capacity=spot,capacityType=owned",
         "--pool \"name=a,capacity=spot,capacityType=owned\": key \"capacityType\": given twice "
         "(as \"capacity\" before)"},
        {"name=a,name=b", "--pool \"name=a,name=b\": key \"name\": given twice (as \"name\" "
                          "before)"},
        {"name=a,color=red", "--pool \"name=a,color=red\": key \"color\": unknown (expected name, "
                             "capacity, product, memory, zone, price, max)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_cluster_spec s = {0};
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_pool_flag_parse(bad[i].v, &s, &err);
        if (rc != SW_EINVAL || strcmp(err.msg, bad[i].msg) != 0 || s.npools != 0)
            fail_msg("case %zu: rc=%d\n  got:  %s\n  want: %s", i, rc, err.msg, bad[i].msg);
    }
}

/* One limit per name: 63 characters pass (and the placement engine carries
 * them whole, tests/unit/placement/test_engine.c), 64 are refused here,
 * where the name enters; the same for a GPU product. */
static void test_names_at_the_limit(void **state)
{
    (void)state;
    char name[80], product[80], flag[300];
    struct sw_error err;
    for (int len = 63; len <= 64; len++) {
        memset(name, 'a', (size_t)len);
        name[len] = '\0';
        assert_int_equal(sw_name_valid(name) != 0, len == 63);
        memset(product, 'P', (size_t)len);
        product[len] = '\0';
        struct sw_cluster_spec s = {0};
        snprintf(flag, sizeof(flag), "name=%s,capacity=spot,product=H100,memory=1,price=1", name);
        assert_int_equal(sw_pool_flag_parse(flag, &s, &err), len == 63 ? 0 : SW_EINVAL);
        if (len == 63)
            assert_string_equal(s.pools[0].name, name);
        struct sw_cluster_spec t = {0};
        snprintf(flag, sizeof(flag), "name=p,capacity=spot,product=%s,memory=1,price=1", product);
        sw_error_clear(&err);
        int rc = sw_pool_flag_parse(flag, &t, &err);
        if (len == 63) {
            assert_int_equal(rc, 0);
            assert_string_equal(t.pools[0].gpu_product, product);
        } else {
            assert_int_equal(rc, SW_EINVAL);
            assert_non_null(strstr(err.msg, "expected a GPU product name of 1-63 characters"));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_namespaces),
        cmocka_unit_test(test_errors_named),
        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_flag_strict),
        cmocka_unit_test(test_names_at_the_limit),
        cmocka_unit_test(test_nodepool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
