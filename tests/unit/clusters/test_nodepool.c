/*
 * Tests for clusters/nodepool.c: a NodePool's limit, capacity type and GPU
 * product read from the object, claims' GPUs and readiness, and the
 * figures: a pool at zero nodes has its whole limit as room, a launching
 * claim is counted once, idle GPUs on its nodes add to the room, waiting
 * pods not yet covered by a claim take from it; and errors naming the
 * object and field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/nodepool.h"
#include "common/json.h"

static cJSON *parse(const char *text)
{
    cJSON *j = NULL;
    struct sw_error err;
    if (sw_json_parse(text, strlen(text), "test", &j, &err) != 0)
        fail_msg("%s: %s", text, err.msg);
    return j;
}

static const char *SPOT_POOL =
    "{\"metadata\":{\"name\":\"gpu-spot\"},\"spec\":{\"limits\":{\"cpu\":\"512\","
    "\"nvidia.com/gpu\":\"64\"},\"template\":{\"metadata\":{\"labels\":{"
    "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}},\"spec\":{\"requirements\":["
    "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\"]},"
    "{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]}}},"
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";

static cJSON *claim(const char *name, const char *pool, const char *node, const char *cap_gpus,
                    const char *req_gpus, const char *initialized_at)
{
    char buf[1500];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"karpenter.sh/nodepool\":\"%s\"},"
             "\"creationTimestamp\":\"2026-11-25T12:00:00Z\"},"
             "\"spec\":{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"%s\"}}},"
             "\"status\":{%s%s%s%s%s%s\"conditions\":[{\"type\":\"Launched\",\"status\":\"True\","
             "\"lastTransitionTime\":\"2026-11-25T12:00:02Z\"},{\"type\":\"Initialized\","
             "\"status\":\"%s\",\"lastTransitionTime\":\"%s\"}]}}",
             name, pool, req_gpus, node ? "\"nodeName\":\"" : "", node ? node : "",
             node ? "\"," : "", cap_gpus ? "\"capacity\":{\"nvidia.com/gpu\":\"" : "",
             cap_gpus ? cap_gpus : "", cap_gpus ? "\"}," : "", initialized_at ? "True" : "Unknown",
             initialized_at ? initialized_at : "2026-11-25T12:00:00Z");
    return parse(buf);
}

static cJSON *node(const char *name, const char *pool, const char *gpus, const char *ready)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"karpenter.sh/nodepool\":\"%s\","
             "\"karpenter.sh/capacity-type\":\"spot\"}},"
             "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%s\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             name, pool, gpus, ready);
    return parse(buf);
}

static cJSON *pod(const char *name, const char *node_name, const char *gpus, const char *selector)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{%s%s%s"
             "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
             "\"%s\"}}}]%s%s},\"status\":{\"phase\":\"%s\"}}",
             name, node_name ? "\"nodeName\":\"" : "", node_name ? node_name : "",
             node_name ? "\"," : "", gpus, selector ? ",\"nodeSelector\":" : "",
             selector ? selector : "", node_name ? "Running" : "Pending");
    return parse(buf);
}

static void test_nodepool_facts(void **state)
{
    (void)state;
    cJSON *j = parse(SPOT_POOL);
    struct sw_nodepool_facts f;
    struct sw_error err;
    assert_int_equal(sw_nodepool_facts_from_json(j, &f, &err), 0);
    assert_string_equal(f.name, "gpu-spot");
    assert_int_equal(f.gpu_limit, 64);
    assert_string_equal(f.capacity_type, "spot");
    assert_string_equal(f.gpu_product, "NVIDIA-H100-80GB-HBM3");
    assert_true(f.ready);
    assert_true(sw_nodepool_serves(&f, "spot", "NVIDIA-H100-80GB-HBM3"));
    assert_true(sw_nodepool_serves(&f, "spot", ""));
    assert_false(sw_nodepool_serves(&f, "on-demand", "NVIDIA-H100-80GB-HBM3"));
    assert_false(sw_nodepool_serves(&f, "spot", "NVIDIA-A100-SXM4-80GB"));
    cJSON_Delete(j);

    /* No GPU limit: read, with -1 (registration refuses it). */
    j = parse("{\"metadata\":{\"name\":\"cpu\"},\"spec\":{\"limits\":{\"cpu\":\"8\"}}}");
    assert_int_equal(sw_nodepool_facts_from_json(j, &f, &err), 0);
    assert_int_equal(f.gpu_limit, -1);
    assert_null(f.capacity_type);
    assert_false(f.ready);
    assert_false(sw_nodepool_serves(&f, "spot", NULL));
    cJSON_Delete(j);

    /* A limit that is not a whole number of GPUs names the field. */
    j = parse("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"limits\":"
              "{\"nvidia.com/gpu\":\"1.5\"}}}");
    assert_int_equal(sw_nodepool_facts_from_json(j, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "NodePool bad"));
    assert_non_null(strstr(err.msg, "spec.limits.nvidia.com/gpu"));
    cJSON_Delete(j);
    j = parse("{\"spec\":{}}");
    assert_int_not_equal(sw_nodepool_facts_from_json(j, &f, &err), 0);
    assert_non_null(strstr(err.msg, "metadata.name"));
    cJSON_Delete(j);
}

static void test_nodeclaim_facts(void **state)
{
    (void)state;
    struct sw_nodeclaim_facts f;
    struct sw_error err;
    /* Launched, capacity known, initialized 47 s after creation. */
    cJSON *j = claim("gpu-spot-abc", "gpu-spot", "gpu-spot-abc", "8", "4", "2026-11-25T12:00:47Z");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), 0);
    assert_string_equal(f.nodepool, "gpu-spot");
    assert_string_equal(f.node_name, "gpu-spot-abc");
    assert_int_equal(f.gpus, 8);
    assert_int_equal(f.requested, 4);
    assert_int_equal(f.ready_ms - f.created_ms, 47000);
    assert_int_equal(f.launched_ms - f.created_ms, 2000);
    assert_false(f.deleting);
    cJSON_Delete(j);
    /* Just created: no capacity yet (the request counts), not initialized. */
    j = claim("gpu-spot-new", "gpu-spot", NULL, NULL, "4", NULL);
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), 0);
    assert_null(f.node_name);
    assert_int_equal(f.gpus, 4);
    assert_int_equal(f.requested, 4);
    assert_int_equal(f.ready_ms, 0);
    cJSON_Delete(j);
    /* Not launched yet (no conditions): neither time. */
    j = parse("{\"metadata\":{\"name\":\"gpu-spot-ice\",\"labels\":{\"karpenter.sh/nodepool\":"
              "\"gpu-spot\"},\"creationTimestamp\":\"2026-11-25T12:00:00Z\","
              "\"deletionTimestamp\":\"2026-11-25T12:00:01Z\"}}");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), 0);
    assert_int_equal(f.launched_ms, 0);
    assert_int_equal(f.ready_ms, 0);
    assert_true(f.deleting);
    assert_int_equal(f.deleted_ms - f.created_ms, 1000);
    cJSON_Delete(j);
    /* A bad creation time names the claim and the field. */
    j = parse("{\"metadata\":{\"name\":\"x\",\"creationTimestamp\":\"2026-13-01T00:00:00Z\"}}");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "NodeClaim x"));
    assert_non_null(strstr(err.msg, "creationTimestamp"));
    cJSON_Delete(j);
    /* Karpenter's kwok provider: capacity 4 (the pod's request), allocatable
     * 8 (the instance's): the node holds 8. */
    j = parse("{\"metadata\":{\"name\":\"k\",\"creationTimestamp\":\"2026-11-25T12:00:00Z\"},"
              "\"spec\":{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}},"
              "\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"4\"},"
              "\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), 0);
    assert_int_equal(f.gpus, 8);
    assert_int_equal(f.requested, 4);
    cJSON_Delete(j);
    /* Being deleted: when. */
    j = parse("{\"metadata\":{\"name\":\"z\",\"creationTimestamp\":\"2026-11-25T12:00:00Z\","
              "\"deletionTimestamp\":\"2026-11-25T12:30:00Z\"}}");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), 0);
    assert_true(f.deleting);
    assert_int_equal(f.deleted_ms - f.created_ms, 1800000);
    cJSON_Delete(j);
    j = parse("{\"metadata\":{\"name\":\"z\",\"creationTimestamp\":\"2026-11-25T12:00:00Z\","
              "\"deletionTimestamp\":\"soon\"}}");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "deletionTimestamp"));
    cJSON_Delete(j);
    /* A bad Initialized transition time too. */
    j = claim("y", "gpu-spot", NULL, NULL, "4", "yesterday");
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Initialized"));
    cJSON_Delete(j);
}

struct world {
    cJSON *objs[16];
    size_t n;
    struct sw_nodeclaim_facts claims[4];
    size_t nclaims;
    struct sw_node_facts nodes[4];
    size_t nnodes;
    struct sw_pod_facts pods[4];
    size_t npods;
};

static void add_claim(struct world *w, cJSON *j)
{
    struct sw_error err;
    w->objs[w->n++] = j;
    assert_int_equal(sw_nodeclaim_facts_from_json(j, &w->claims[w->nclaims++], &err), 0);
}

static void add_node(struct world *w, cJSON *j)
{
    struct sw_error err;
    w->objs[w->n++] = j;
    assert_int_equal(sw_node_facts_from_json(j, &w->nodes[w->nnodes++], &err), 0);
}

static void add_pod(struct world *w, cJSON *j)
{
    struct sw_error err;
    w->objs[w->n++] = j;
    assert_int_equal(sw_pod_facts_from_json(j, &w->pods[w->npods++], &err), 0);
}

static void world_free(struct world *w)
{
    for (size_t i = 0; i < w->n; i++)
        cJSON_Delete(w->objs[i]);
}

static void test_capacity_figures(void **state)
{
    (void)state;
    cJSON *npj = parse(SPOT_POOL);
    struct sw_nodepool_facts np;
    struct sw_error err;
    assert_int_equal(sw_nodepool_facts_from_json(npj, &np, &err), 0);
    struct sw_nodepool_capacity c;

    /* At zero nodes: the whole limit is room, and free. */
    struct world w = {0};
    sw_nodepool_capacity(&np, NULL, 0, NULL, 0, NULL, 0, &c);
    assert_int_equal(c.limit, 64);
    assert_int_equal(c.nodes, 0);
    assert_int_equal(c.room, 64);
    assert_int_equal(c.free, 64);
    assert_false(sw_nodepool_stalled(&c)); /* nothing waits */
    assert_false(sw_nodepool_full(&c));

    /* A mirror's pod waits (4 GPUs, selecting spot): it takes from the
     * room until a claim covers it. A pod of another pool does not. */
    add_pod(&w, pod("m1", NULL, "4", "{\"karpenter.sh/capacity-type\":\"spot\"}"));
    add_pod(&w, pod("od", NULL, "8", "{\"karpenter.sh/capacity-type\":\"on-demand\"}"));
    sw_nodepool_capacity(&np, w.claims, w.nclaims, w.nodes, w.nnodes, w.pods, w.npods, &c);
    assert_int_equal(c.pending, 4);
    assert_int_equal(c.waiting, 4);
    assert_int_equal(c.room, 60);
    /* No claim for it yet, room under the limit: stalled (for as long as
     * that lasts; the hub's grace tells Karpenter's batching apart). */
    assert_true(sw_nodepool_stalled(&c));
    assert_false(sw_nodepool_full(&c));

    /* Karpenter launches an 8-GPU claim for it: counted once, as
     * provisioned and launching; the pod is covered, not counted again. */
    add_claim(&w, claim("gpu-spot-a", "gpu-spot", NULL, "8", "4", NULL));
    sw_nodepool_capacity(&np, w.claims, w.nclaims, w.nodes, w.nnodes, w.pods, w.npods, &c);
    assert_int_equal(c.claims, 1);
    assert_int_equal(c.claims_launching, 1);
    assert_int_equal(c.provisioned, 8);
    assert_int_equal(c.launching, 8);
    assert_int_equal(c.waiting, 0);
    assert_int_equal(c.idle, 0);
    assert_int_equal(c.room, 56);
    assert_int_equal(c.free, 56);
    assert_false(sw_nodepool_stalled(&c)); /* a claim launching covers it */
    world_free(&w);

    /* Its node is Ready and the pod runs there: 4 GPUs idle on it, 56 room. */
    memset(&w, 0, sizeof(w));
    add_claim(&w, claim("gpu-spot-a", "gpu-spot", "gpu-spot-a", "8", "4", "2026-11-25T12:00:30Z"));
    add_node(&w, node("gpu-spot-a", "gpu-spot", "8", "True"));
    add_pod(&w, pod("m1", "gpu-spot-a", "4", "{\"karpenter.sh/capacity-type\":\"spot\"}"));
    /* Another NodePool's claim and node count for nothing here. */
    add_claim(&w, claim("other-b", "other", "other-b", "8", "8", "2026-11-25T12:00:30Z"));
    add_node(&w, node("other-b", "other", "8", "True"));
    sw_nodepool_capacity(&np, w.claims, w.nclaims, w.nodes, w.nnodes, w.pods, w.npods, &c);
    assert_int_equal(c.nodes, 1);
    assert_int_equal(c.node_gpus, 8);
    assert_int_equal(c.idle, 4);
    assert_int_equal(c.claims, 1);
    assert_int_equal(c.claims_launching, 0);
    assert_int_equal(c.provisioned, 8);
    assert_int_equal(c.room, 56);
    assert_int_equal(c.free, 60);

    /* A pod waiting to be scheduled (a mirror just made) takes the idle
     * GPUs first: they are not offered again while it waits. */
    add_pod(&w, pod("m2", NULL, "4", "{\"karpenter.sh/capacity-type\":\"spot\"}"));
    sw_nodepool_capacity(&np, w.claims, w.nclaims, w.nodes, w.nnodes, w.pods, w.npods, &c);
    assert_int_equal(c.pending, 4);
    assert_int_equal(c.idle, 0);
    assert_int_equal(c.waiting, 0);
    assert_int_equal(c.room, 56);
    assert_int_equal(c.free, 56);
    /* One more than the idle GPUs hold: the rest comes off the room. */
    add_pod(&w, pod("m3", NULL, "2", "{\"karpenter.sh/capacity-type\":\"spot\"}"));
    sw_nodepool_capacity(&np, w.claims, w.nclaims, w.nodes, w.nnodes, w.pods, w.npods, &c);
    assert_int_equal(c.waiting, 2);
    assert_int_equal(c.room, 54);
    assert_int_equal(c.free, 54);
    assert_true(sw_nodepool_stalled(&c)); /* 2 GPUs with no claim, room left */
    world_free(&w);

    /* At the limit: no room; a waiting pod beyond it leaves room at 0. */
    memset(&w, 0, sizeof(w));
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-spot-%d", i);
        add_claim(&w, claim(name, "gpu-spot", NULL, "16", "16", NULL));
    }
    add_pod(&w, pod("late", NULL, "80", "{\"karpenter.sh/nodepool\":\"gpu-spot\"}"));
    sw_nodepool_capacity(&np, w.claims, w.nclaims, w.nodes, w.nnodes, w.pods, w.npods, &c);
    assert_int_equal(c.provisioned, 64);
    assert_int_equal(c.waiting, 16);
    assert_int_equal(c.room, 0);
    assert_int_equal(c.free, 0);
    assert_false(sw_nodepool_stalled(&c)); /* at its limit: full, not short */
    assert_true(sw_nodepool_full(&c));
    world_free(&w);
    cJSON_Delete(npj);
}

/* Two mirrors burst at once are told apart by what they ask. */
static void test_nodeclaim_pick(void **state)
{
    (void)state;
    struct sw_claim_candidate c[] = {
        {"gpu-spot-d2qq5", 1000, 8},
        {"gpu-spot-6h97w", 1000, 4},
        {"gpu-spot-late", 2000, 4},
    };
    /* Exact room first, the earliest of those. */
    assert_int_equal(sw_nodeclaim_pick(c, 3, 4), 1);
    assert_int_equal(sw_nodeclaim_pick(c, 3, 8), 0);
    /* No exact room: the tightest that holds it. */
    assert_int_equal(sw_nodeclaim_pick(c, 3, 2), 1);
    /* Pods on more than one node: the claim with the most room. */
    assert_int_equal(sw_nodeclaim_pick(c, 3, 16), 0);
    assert_int_equal(sw_nodeclaim_pick(c, 0, 1), -1);
    /* A claim already named for another mirror has less room left. */
    c[0].room = 0;
    assert_int_equal(sw_nodeclaim_pick(c, 3, 8), 1);
    c[1].room = c[2].room = 0;
    assert_int_equal(sw_nodeclaim_pick(c, 3, 8), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodepool_facts),
        cmocka_unit_test(test_nodeclaim_facts),
        cmocka_unit_test(test_nodeclaim_pick),
        cmocka_unit_test(test_capacity_figures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
