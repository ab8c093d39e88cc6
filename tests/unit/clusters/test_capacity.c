/*
 * Tests for clusters/capacity.c: pools by attributes, cordoned and NotReady
 * nodes excluded, terminal pods ignored, init containers counted as the
 * scheduler does, pending demand matched by nodeSelector, and errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/capacity.h"
#include "common/alloc.h"
#include "common/json.h"

static cJSON *node(const char *name, const char *ct, const char *zone, const char *gpus,
                   const char *ready, int cordoned)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"karpenter.sh/capacity-type\":\"%s\","
             "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\",\"nvidia.com/gpu.memory\":"
             "\"81559\",\"topology.kubernetes.io/region\":\"us-east-1\","
             "\"topology.kubernetes.io/zone\":\"%s\"}},"
             "\"spec\":{\"unschedulable\":%s},"
             "\"status\":{\"allocatable\":{\"cpu\":\"32\",\"nvidia.com/gpu\":\"%s\"},"
             "\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
             "{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             name, ct, zone, cordoned ? "true" : "false", gpus, ready);
    cJSON *j = NULL;
    struct sw_error err;
    assert_int_equal(sw_json_parse(buf, strlen(buf), "node", &j, &err), 0);
    return j;
}

static cJSON *pod(const char *name, const char *node_name, const char *phase, const char *gpus,
                  const char *init_gpus, const char *selector)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},"
             "\"spec\":{%s%s%s\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":\"%s\"}}},{\"name\":\"b\"}],"
             "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":"
             "{\"nvidia.com/gpu\":\"%s\"}}}]"
             "%s%s%s},\"status\":{\"phase\":\"%s\"}}",
             name, node_name ? "\"nodeName\":\"" : "", node_name ? node_name : "",
             node_name ? "\"," : "", gpus, init_gpus, selector ? ",\"nodeSelector\":" : "",
             selector ? selector : "", "", phase);
    cJSON *j = NULL;
    struct sw_error err;
    if (sw_json_parse(buf, strlen(buf), "pod", &j, &err) != 0)
        fail_msg("%s: %s", buf, err.msg);
    return j;
}

static void test_pools_and_rules(void **state)
{
    (void)state;
    cJSON *nodes[] = {
        node("n1", "spot", "us-east-1a", "8", "True", 0),
        node("n2", "spot", "us-east-1a", "8", "True", 0),
        node("n3", "spot", "us-east-1a", "8", "True", 1),  /* cordoned */
        node("n4", "spot", "us-east-1a", "8", "False", 0), /* NotReady */
        node("n5", "spot", "us-east-1b", "8", "True", 0),
        node("n6", "on-demand", "us-east-1a", "4", "True", 0),
    };
    cJSON *pods[] = {
        pod("p1", "n1", "Running", "3", "0", NULL),
        pod("p2", "n1", "Pending", "1", "2", NULL),   /* bound, not yet running: counts 2 */
        pod("p3", "n2", "Succeeded", "8", "0", NULL), /* terminal: ignored */
        pod("p4", "n3", "Running", "2", "0", NULL),   /* on a cordoned node */
        pod("p5", "n5", "Running", "8", "0", NULL),
        pod("p6", "n6", "Failed", "4", "0", NULL),
        pod("q1", NULL, "Pending", "2", "0", "{\"karpenter.sh/capacity-type\":\"spot\"}"),
        pod("q2", NULL, "Pending", "4", "0", NULL),
        pod("q3", NULL, "Failed", "4", "0", NULL), /* terminal: no demand */
    };
    struct sw_node_facts nf[6];
    struct sw_pod_facts pf[9];
    struct sw_error err;
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(sw_node_facts_from_json(nodes[i], &nf[i], &err), 0);
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(sw_pod_facts_from_json(pods[i], &pf[i], &err), 0);
    assert_int_equal(pf[1].gpu_request, 2);
    assert_int_equal(pf[0].gpu_request, 3);
    assert_true(nf[0].ready);
    assert_false(nf[3].ready);
    struct sw_gpu_capacity cap;
    assert_int_equal(sw_capacity_compute(nf, 6, pf, 9, &cap), 0);
    assert_int_equal(cap.npools, 3);
    /* Sorted by key: on-demand first. */
    struct sw_gpu_pool *od = &cap.pools[0], *a = &cap.pools[1], *b = &cap.pools[2];
    assert_string_equal(od->key, "on-demand/NVIDIA-H100-80GB-HBM3/81559/us-east-1/us-east-1a");
    assert_string_equal(a->key, "spot/NVIDIA-H100-80GB-HBM3/81559/us-east-1/us-east-1a");
    assert_int_equal(od->total, 4);
    assert_int_equal(od->used, 0);
    assert_int_equal(od->free, 4);
    assert_int_equal(a->nodes, 2);
    assert_int_equal(a->nodes_excluded, 2);
    assert_int_equal(a->total, 16);
    assert_int_equal(a->excluded, 16);
    assert_int_equal(a->used, 5);
    assert_int_equal(a->free, 11);
    assert_int_equal(b->total, 8);
    assert_int_equal(b->used, 8);
    assert_int_equal(b->free, 0);
    /* Pending: q1 (spot only) lands on both spot pools, q2 on every pool. */
    assert_int_equal(cap.pending_total, 6);
    assert_int_equal(cap.pending_pods, 2);
    assert_int_equal(a->pending, 6);
    assert_int_equal(b->pending, 6);
    assert_int_equal(od->pending, 4);
    sw_capacity_free(&cap);
    for (size_t i = 0; i < 6; i++)
        cJSON_Delete(nodes[i]);
    for (size_t i = 0; i < 9; i++)
        cJSON_Delete(pods[i]);
}

static void test_bad_quantities_named(void **state)
{
    (void)state;
    struct sw_error err;
    cJSON *n = node("gpu-7", "spot", "z", "eight", "True", 0);
    struct sw_node_facts nf;
    assert_int_equal(sw_node_facts_from_json(n, &nf, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Node gpu-7"));
    assert_non_null(strstr(err.msg, "status.allocatable.nvidia.com/gpu"));
    cJSON_Delete(n);
    cJSON *p = pod("train", "n1", "Running", "1.5", "0", NULL);
    struct sw_pod_facts pf;
    assert_int_equal(sw_pod_facts_from_json(p, &pf, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Pod ml/train"));
    assert_non_null(strstr(err.msg, "resources.limits.nvidia.com/gpu"));
    cJSON_Delete(p);
}

static cJSON *parse(const char *text)
{
    cJSON *j = NULL;
    struct sw_error err;
    if (sw_json_parse(text, strlen(text), "test", &j, &err) != 0)
        fail_msg("%s: %s", text, err.msg);
    return j;
}

/* A pool's MIG slices and time-slicing, as NVIDIA's device plugin (mixed
 * MIG strategy) and GPU feature discovery advertise them: slices per
 * profile in total and idle, and a time-sliced pool's GPUs in thousandths
 * (a replica of 4 per GPU is 250). */
static void test_mig_and_time_slicing(void **state)
{
    (void)state;
    cJSON *nodes[] = {
        /* Two MIG nodes of one spot pool: 1g.10gb on both, 3g.40gb on one. */
        parse("{\"metadata\":{\"name\":\"m1\",\"labels\":{\"karpenter.sh/capacity-type\":\"spot\","
              "\"nvidia.com/mig.strategy\":\"mixed\"}},"
              "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"0\","
              "\"nvidia.com/mig-1g.10gb\":\"7\",\"nvidia.com/mig-3g.40gb\":\"2\"},"
              "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"),
        parse(
            "{\"metadata\":{\"name\":\"m2\",\"labels\":{\"karpenter.sh/capacity-type\":\"spot\"}},"
            "\"status\":{\"allocatable\":{\"nvidia.com/mig-1g.10gb\":14},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"),
        /* An owned node of 2 GPUs time-sliced 4 ways: 8 replicas. */
        parse("{\"metadata\":{\"name\":\"t1\",\"labels\":{\"nvidia.com/gpu.sharing-strategy\":"
              "\"time-slicing\",\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.count\":\"2\"}},"
              "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"},"
              "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"),
    };
    cJSON *pods[] = {
        /* 3 slices of 1g.10gb in two containers, on m2. */
        parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"m2\","
              "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"2\"}}},"
              "{\"resources\":{\"requests\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}}]},"
              "\"status\":{\"phase\":\"Running\"}}"),
        /* A finished one takes nothing. */
        parse("{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"m1\","
              "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/mig-3g.40gb\":\"1\"}}}]},"
              "\"status\":{\"phase\":\"Succeeded\"}}"),
        /* 3 replicas on the time-sliced node. */
        parse("{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"t1\","
              "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"3\"}}}]},"
              "\"status\":{\"phase\":\"Running\"}}"),
    };
    struct sw_node_facts nf[3];
    struct sw_pod_facts pf[3];
    struct sw_error err;
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sw_node_facts_from_json(nodes[i], &nf[i], &err), 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sw_pod_facts_from_json(pods[i], &pf[i], &err), 0);
    assert_int_equal(nf[0].nmig, 2);
    assert_false(nf[0].time_sliced);
    assert_true(nf[2].time_sliced);
    assert_int_equal(nf[2].gpu_replicas, 4);
    assert_string_equal(pf[0].mig_profile, "1g.10gb");
    assert_int_equal(pf[0].mig_request, 3);
    assert_int_equal(pf[0].gpu_request, 0);
    assert_null(pf[2].mig_profile);
    struct sw_gpu_capacity cap;
    assert_int_equal(sw_capacity_compute(nf, 3, pf, 3, &cap), 0);
    assert_int_equal(cap.npools, 2);
    const struct sw_gpu_pool *owned = &cap.pools[0], *spot = &cap.pools[1];
    assert_string_equal(spot->capacity_type, "spot");
    assert_int_equal(spot->total, 0);
    assert_false(spot->time_sliced);
    assert_int_equal(spot->nmig, 2);
    assert_string_equal(spot->mig[0].profile, "1g.10gb");
    assert_int_equal(spot->mig[0].per_gpu, 7);
    assert_int_equal(spot->mig[0].total, 21);
    assert_int_equal(spot->mig[0].used, 3);
    assert_int_equal(spot->mig[0].free, 18);
    assert_string_equal(spot->mig[1].profile, "3g.40gb");
    assert_int_equal(spot->mig[1].per_gpu, 2);
    assert_int_equal(spot->mig[1].total, 2);
    assert_int_equal(spot->mig[1].free, 2);
    assert_true(owned->time_sliced);
    assert_int_equal(owned->replicas, 4);
    assert_int_equal(owned->total, 8);
    assert_int_equal(owned->free, 5);
    assert_int_equal(owned->milli_total, 2000);
    assert_int_equal(owned->milli_used, 750);
    assert_int_equal(owned->milli_free, 1250);
    assert_int_equal(owned->nmig, 0);
    sw_capacity_free(&cap);

    /* Bad input names the node and the label or field. */
    cJSON *bad =
        parse("{\"metadata\":{\"name\":\"t9\",\"labels\":{\"nvidia.com/gpu.sharing-strategy\":"
              "\"time-slicing\",\"nvidia.com/gpu.replicas\":\"four\"}}}");
    struct sw_node_facts f;
    assert_int_equal(sw_node_facts_from_json(bad, &f, &err), SW_EPARSE);
    assert_string_equal(err.msg, "Node t9: label \"nvidia.com/gpu.replicas\": expected a whole "
                                 "number from 1 to 1024, got \"four\"");
    cJSON_Delete(bad);
    bad = parse("{\"metadata\":{\"name\":\"m9\"},\"status\":{\"allocatable\":"
                "{\"nvidia.com/mig-1g.10gb\":\"1.5\"}}}");
    assert_int_equal(sw_node_facts_from_json(bad, &f, &err), SW_EPARSE);
    assert_non_null(
        strstr(err.msg, "Node m9: field \"status.allocatable.nvidia.com/mig-1g.10gb\""));
    cJSON_Delete(bad);
    bad = parse("{\"metadata\":{\"name\":\"p9\",\"namespace\":\"ml\"},\"spec\":{\"containers\":"
                "[{\"resources\":{\"limits\":{\"nvidia.com/mig-2g.20gb\":\"x\"}}}]}}");
    struct sw_pod_facts g;
    assert_int_equal(sw_pod_facts_from_json(bad, &g, &err), SW_EPARSE);
    assert_non_null(
        strstr(err.msg, "Pod ml/p9: field \"resources.limits.nvidia.com/mig-2g.20gb\""));
    cJSON_Delete(bad);
    for (size_t i = 0; i < 3; i++) {
        cJSON_Delete(nodes[i]);
        cJSON_Delete(pods[i]);
    }
}

static void test_mig_per_gpu(void **state)
{
    (void)state;
    assert_int_equal(sw_mig_per_gpu("1g.10gb"), 7);
    assert_int_equal(sw_mig_per_gpu("1g.10gb+me"), 7);
    assert_int_equal(sw_mig_per_gpu("2g.20gb"), 3);
    assert_int_equal(sw_mig_per_gpu("3g.40gb"), 2);
    assert_int_equal(sw_mig_per_gpu("4g.40gb"), 1);
    assert_int_equal(sw_mig_per_gpu("7g.80gb"), 1);
    assert_int_equal(sw_mig_per_gpu("8g.80gb"), 0);
    assert_int_equal(sw_mig_per_gpu("gpu"), 0);
    assert_int_equal(sw_mig_per_gpu(""), 0);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    cJSON *n1 = node("n1", "spot", "a", "8", "True", 0),
          *n2 = node("n2", "owned", "b", "4", "True", 0);
    struct sw_node_facts nf[2];
    struct sw_error err;
    assert_int_equal(sw_node_facts_from_json(n1, &nf[0], &err), 0);
    assert_int_equal(sw_node_facts_from_json(n2, &nf[1], &err), 0);
    for (uint64_t nth = 1; nth < 100; nth++) {
        struct sw_gpu_capacity cap;
        sw_alloc_fail_at(nth);
        int rc = sw_capacity_compute(nf, 2, NULL, 0, &cap);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (rc == 0) {
            assert_int_equal(cap.npools, 2);
            sw_capacity_free(&cap);
        } else {
            assert_int_equal(rc, SW_ENOMEM);
        }
        if (!injected)
            break;
    }
    cJSON_Delete(n1);
    cJSON_Delete(n2);
}

/* A label lookup over NULL-terminated key, value pairs. */
static const char *pairs_get(const void *ctx, const char *key)
{
    const char *const *kv = ctx;
    for (; kv[0] != NULL; kv += 2)
        if (strcmp(kv[0], key) == 0)
            return kv[1];
    return NULL;
}

static const char *type_of(const char *k1, const char *v1, const char *k2, const char *v2)
{
    const char *kv[] = {k1, v1, k2, v2, NULL, NULL};
    return sw_capacity_type_of(pairs_get, kv);
}

/* Time-slicing replicas from a node's labels, as the hub reads a running
 * pod's share: 1000 / replicas thousandths per unit of nvidia.com/gpu. */
static void test_gpu_replicas_of(void **state)
{
    (void)state;
    const char *ts[] = {"nvidia.com/gpu.sharing-strategy",
                        "time-slicing",
                        "nvidia.com/gpu.replicas",
                        "4",
                        NULL,
                        NULL};
    assert_int_equal(sw_gpu_replicas_of(pairs_get, ts), 4);
    /* Replicas without time-slicing, or time-slicing without replicas. */
    const char *mps[] = {
        "nvidia.com/gpu.sharing-strategy", "mps", "nvidia.com/gpu.replicas", "4", NULL, NULL};
    assert_int_equal(sw_gpu_replicas_of(pairs_get, mps), 1);
    const char *bare[] = {"nvidia.com/gpu.sharing-strategy", "time-slicing", NULL, NULL};
    assert_int_equal(sw_gpu_replicas_of(pairs_get, bare), 1);
    /* Out of range or not a number: 1 (the node's facts refuse it). */
    const char *bad[] = {"nvidia.com/gpu.sharing-strategy",
                         "time-slicing",
                         "nvidia.com/gpu.replicas",
                         "1025",
                         NULL,
                         NULL};
    assert_int_equal(sw_gpu_replicas_of(pairs_get, bad), 1);
    bad[3] = "4x";
    assert_int_equal(sw_gpu_replicas_of(pairs_get, bad), 1);
    bad[3] = "1024";
    assert_int_equal(sw_gpu_replicas_of(pairs_get, bad), 1024);
}

static void test_capacity_type_karpenter(void **state)
{
    (void)state;
    assert_string_equal(type_of("karpenter.sh/capacity-type", "spot", NULL, NULL), "spot");
    assert_string_equal(type_of("karpenter.sh/capacity-type", "on-demand", NULL, NULL),
                        "on-demand");
    /* Karpenter's label wins over a provider's. */
    assert_string_equal(type_of("karpenter.sh/capacity-type", "on-demand",
                                "eks.amazonaws.com/capacityType", "SPOT"),
                        "on-demand");
    assert_string_equal(type_of("karpenter.sh/capacity-type", "", NULL, NULL), "owned");
    assert_string_equal(type_of(NULL, NULL, NULL, NULL), "owned");
    /* The label that decided, for a mirror's nodeSelector; none for owned. */
    const char *kv[] = {"eks.amazonaws.com/capacityType", "ON_DEMAND", NULL, NULL};
    const char *label = "x", *value = "x";
    assert_string_equal(sw_capacity_type_label(pairs_get, kv, &label, &value), "on-demand");
    assert_string_equal(label, "eks.amazonaws.com/capacityType");
    assert_string_equal(value, "ON_DEMAND");
    const char *none[] = {NULL, NULL};
    assert_string_equal(sw_capacity_type_label(pairs_get, none, &label, &value), "owned");
    assert_null(label);
    assert_null(value);
}

static void test_capacity_type_eks(void **state)
{
    (void)state;
    assert_string_equal(type_of("eks.amazonaws.com/capacityType", "SPOT", NULL, NULL), "spot");
    assert_string_equal(type_of("eks.amazonaws.com/capacityType", "ON_DEMAND", NULL, NULL),
                        "on-demand");
    /* A value it does not know (capacity blocks) is not taken for spot. */
    assert_string_equal(type_of("eks.amazonaws.com/capacityType", "CAPACITY_BLOCK", NULL, NULL),
                        "owned");
}

static void test_capacity_type_gke(void **state)
{
    (void)state;
    assert_string_equal(type_of("cloud.google.com/gke-spot", "true", NULL, NULL), "spot");
    assert_string_equal(type_of("cloud.google.com/gke-spot", "false", NULL, NULL), "owned");
    assert_string_equal(type_of("cloud.google.com/gke-preemptible", "true", NULL, NULL), "spot");
    assert_string_equal(type_of("cloud.google.com/gke-provisioning", "spot", NULL, NULL), "spot");
    assert_string_equal(type_of("cloud.google.com/gke-provisioning", "standard", NULL, NULL),
                        "on-demand");
    assert_string_equal(type_of("cloud.google.com/gke-provisioning", "standard",
                                "cloud.google.com/gke-spot", "true"),
                        "spot");
}

static void test_capacity_type_aks(void **state)
{
    (void)state;
    assert_string_equal(type_of("kubernetes.azure.com/scalesetpriority", "spot", NULL, NULL),
                        "spot");
    assert_string_equal(type_of("kubernetes.azure.com/scalesetpriority", "regular", NULL, NULL),
                        "on-demand");
}

/* A Node object with only a provider's label is read as that capacity type. */
static void test_capacity_type_from_node_json(void **state)
{
    (void)state;
    const char *doc = "{\"metadata\":{\"name\":\"aks-gpu-1\",\"labels\":"
                      "{\"kubernetes.azure.com/scalesetpriority\":\"spot\"}},"
                      "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"4\"}}}";
    cJSON *j = NULL;
    struct sw_error err;
    assert_int_equal(sw_json_parse(doc, strlen(doc), "node", &j, &err), 0);
    struct sw_node_facts nf;
    assert_int_equal(sw_node_facts_from_json(j, &nf, &err), 0);
    assert_string_equal(nf.capacity_type, "spot");
    assert_string_equal(nf.capacity_label, "kubernetes.azure.com/scalesetpriority");
    assert_string_equal(nf.capacity_value, "spot");
    assert_int_equal(nf.gpu_allocatable, 4);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pools_and_rules),
        cmocka_unit_test(test_bad_quantities_named),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_mig_and_time_slicing),
        cmocka_unit_test(test_mig_per_gpu),
        cmocka_unit_test(test_gpu_replicas_of),
        cmocka_unit_test(test_capacity_type_karpenter),
        cmocka_unit_test(test_capacity_type_eks),
        cmocka_unit_test(test_capacity_type_gke),
        cmocka_unit_test(test_capacity_type_aks),
        cmocka_unit_test(test_capacity_type_from_node_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
