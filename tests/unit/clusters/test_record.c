/*
 * Tests for clusters/record.c: what a Job, Pod and Node record keeps and
 * drops, the JSON view of a Job record, shared strings, capacity from
 * records equal to capacity from JSON, errors naming the object and field,
 * and an allocation-failure loop that leaks no string.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/record.h"
#include "common/alloc.h"
#include "common/json.h"

static const char JOB[] =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train\","
    "\"namespace\":\"ml\",\"uid\":\"u-1\",\"resourceVersion\":\"42\","
    "\"creationTimestamp\":\"2026-01-02T03:04:05Z\","
    "\"labels\":{\"team\":\"vision\",\"spillway.io/origin-uid\":\"o-9\","
    "\"app.kubernetes.io/managed-by\":\"spillway\"},"
    "\"annotations\":{\"spillway.io/burst\":\"auto\",\"spillway.io/team\":\"vision\","
    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{...}\"},"
    "\"finalizers\":[\"spillway.io/mirror\",\"other/x\"],"
    "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},"
    "\"spec\":{\"parallelism\":4,\"completions\":8,\"suspend\":true,"
    "\"managedBy\":\"spillway.io/hub\",\"template\":{\"spec\":{"
    "\"nodeSelector\":{\"karpenter.sh/capacity-type\":\"spot\"},"
    "\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}},"
    "{\"name\":\"warm\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"8\"}}}],"
    "\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"env\":[{\"name\":\"SPILLWAY_REGION\","
    "\"value\":\"us-east-1\"}],\"resources\":{\"requests\":{\"nvidia.com/gpu\":2}}},"
    "{\"name\":\"b\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}},"
    "\"status\":{\"active\":3,\"ready\":2,\"succeeded\":1,\"startTime\":\"2026-01-02T03:05:00Z\","
    "\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\",\"reason\":\"JobSuspended\","
    "\"message\":\"Job suspended\",\"lastTransitionTime\":\"2026-01-02T03:06:00Z\"}]}}";

/* A member to change, found by path. */
static cJSON *mut(cJSON *o, const char *path)
{
    return (cJSON *)sw_json_path(o, path);
}

static cJSON *parse(const char *s)
{
    cJSON *j = NULL;
    struct sw_error err;
    if (sw_json_parse(s, strlen(s), "test", &j, &err) != 0)
        fail_msg("%s", err.msg);
    return j;
}

static void test_job_record(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    cJSON *j = parse(JOB);
    struct sw_job_record *r = NULL;
    struct sw_error err;
    assert_int_equal(sw_job_record_from_json(t, j, &r, &err), 0);
    cJSON_Delete(j);
    assert_string_equal(r->name, "train");
    assert_string_equal(r->ns, "ml");
    assert_string_equal(r->uid, "u-1");
    assert_string_equal(r->rv, "42");
    assert_string_equal(r->created, "2026-01-02T03:04:05Z");
    assert_null(r->deleting);
    assert_int_equal(r->parallelism, 4);
    assert_int_equal(r->completions, 8);
    assert_int_equal(r->suspend, 1);
    assert_string_equal(r->managed_by, "spillway.io/hub");
    /* Containers 2 + 1, the sidecar 1 alongside: 4; the plain init
     * container starts with the sidecar only: 8 + 1 = 9 wins. */
    assert_int_equal(r->gpus_per_pod, 9);
    assert_string_equal(r->region_env, "us-east-1");
    assert_int_equal(r->active, 3);
    assert_int_equal(r->ready, 2);
    assert_int_equal(r->succeeded, 1);
    assert_int_equal(r->failed, SW_REC_ABSENT);
    assert_int_equal(r->terminating, SW_REC_ABSENT);
    assert_string_equal(r->start_time, "2026-01-02T03:05:00Z");
    assert_null(r->completion_time);
    /* Only spillway's labels and annotations. */
    assert_int_equal(r->nlabels, 2);
    assert_string_equal(sw_job_record_label(r, "spillway.io/origin-uid"), "o-9");
    assert_string_equal(sw_job_record_label(r, "app.kubernetes.io/managed-by"), "spillway");
    assert_null(sw_job_record_label(r, "team"));
    assert_int_equal(r->nannotations, 2);
    assert_string_equal(sw_job_record_annotation(r, "spillway.io/burst"), "auto");
    assert_null(sw_job_record_annotation(r, "kubectl.kubernetes.io/last-applied-configuration"));
    assert_int_equal(r->nfinalizers, 2);
    assert_string_equal(r->finalizers[1], "other/x");
    assert_int_equal(r->nselector, 1);
    assert_string_equal(r->node_selector[0].value, "spot");
    assert_int_equal(r->nconditions, 1);
    assert_string_equal(r->conditions[0].reason, "JobSuspended");
    assert_string_equal(r->conditions[0].last_transition, "2026-01-02T03:06:00Z");

    /* The view has the API's field names and the GPU shape. */
    cJSON *v = sw_job_record_json(r);
    assert_string_equal(sw_json_str(sw_json_child(v, "metadata"), "uid"), "u-1");
    assert_string_equal(cJSON_GetStringValue(sw_json_path(v, "metadata.annotations")->child),
                        "auto");
    assert_null(sw_json_path(v, "metadata.managedFields"));
    assert_true(cJSON_IsTrue(sw_json_path(v, "spec.suspend")));
    assert_int_equal(sw_json_path(v, "spec.parallelism")->valueint, 4);
    const cJSON *c0 = cJSON_GetArrayItem(sw_json_path(v, "spec.template.spec.containers"), 0);
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(sw_json_path(c0, "resources.requests"), "nvidia.com/gpu")
            ->valueint,
        9);
    assert_string_equal(
        sw_json_str(cJSON_GetArrayItem(sw_json_child((cJSON *)c0, "env"), 0), "value"),
        "us-east-1");
    assert_string_equal(
        sw_json_str(cJSON_GetArrayItem(sw_json_path(v, "status.conditions"), 0), "message"),
        "Job suspended");
    assert_int_equal(sw_json_path(v, "status.active")->valueint, 3);
    assert_null(sw_json_path(v, "status.failed"));
    assert_string_equal(cJSON_GetArrayItem(sw_json_path(v, "metadata.finalizers"), 0)->valuestring,
                        "spillway.io/mirror");
    cJSON_Delete(v);
    sw_job_record_free(t, r);
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

static void test_job_shared_strings_and_bad_input(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    struct sw_job_record *a = NULL, *b = NULL, *c = NULL;
    struct sw_error err;
    cJSON *j = parse(JOB);
    assert_int_equal(sw_job_record_from_json(t, j, &a, &err), 0);
    cJSON_SetValuestring(mut(j, "metadata.name"), "train-2");
    assert_int_equal(sw_job_record_from_json(t, j, &b, &err), 0);
    assert_ptr_equal(a->ns, b->ns);
    assert_ptr_equal(a->annotations[0].key, b->annotations[0].key);
    assert_ptr_not_equal(a->name, b->name);
    size_t n = sw_intern_count(t);

    /* A GPU quantity that is not a whole number: kept as invalid, shown as such. */
    cJSON *q = cJSON_GetObjectItemCaseSensitive(
        sw_json_path(cJSON_GetArrayItem(sw_json_path(j, "spec.template.spec.containers"), 1),
                     "resources.limits"),
        "nvidia.com/gpu");
    cJSON_SetValuestring(q, "1.5");
    cJSON_ReplaceItemInObjectCaseSensitive(sw_json_child(j, "spec"), "parallelism",
                                           cJSON_CreateString("four"));
    assert_int_equal(sw_job_record_from_json(t, j, &c, &err), 0);
    assert_int_equal(c->gpus_per_pod, SW_REC_INVALID);
    assert_int_equal(c->parallelism, SW_REC_INVALID);
    cJSON *v = sw_job_record_json(c);
    assert_string_equal(sw_json_str(sw_json_child(v, "spec"), "parallelism"), "invalid");
    cJSON_Delete(v);
    assert_int_equal(sw_intern_count(t), n);
    sw_job_record_free(t, c);

    /* No name: an error naming the field. */
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(j, "metadata"), "name");
    c = (void *)1;
    assert_int_equal(sw_job_record_from_json(t, j, &c, &err), SW_EPARSE);
    assert_null(c);
    assert_string_equal(err.msg, "Job: field \"metadata.name\": expected a string");
    cJSON_Delete(j);
    j = parse("[1]");
    assert_int_equal(sw_job_record_from_json(t, j, &c, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "\"metadata\""));
    cJSON_Delete(j);

    sw_job_record_free(t, a);
    sw_job_record_free(t, b);
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

static const char POD[] =
    "{\"metadata\":{\"name\":\"train-abc\",\"namespace\":\"ml\",\"resourceVersion\":\"7\","
    "\"labels\":{\"batch.kubernetes.io/job-name\":\"train\"},"
    "\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"other\",\"controller\":true}]},"
    "\"spec\":{\"nodeSelector\":{\"karpenter.sh/capacity-type\":\"spot\"},"
    "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]},"
    "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
    "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes are available: 3 "
    "Insufficient nvidia.com/gpu.\",\"lastTransitionTime\":\"2026-01-02T03:06:00Z\"}]}}";

static void test_pod_record(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    cJSON *j = parse(POD);
    struct sw_pod_record *r = NULL, *r2 = NULL;
    struct sw_error err;
    assert_int_equal(sw_pod_record_from_json(t, j, &r, &err), 0);
    assert_string_equal(r->name, "train-abc");
    assert_string_equal(r->ns, "ml");
    assert_string_equal(r->rv, "7");
    assert_string_equal(r->owner, "train"); /* the label first */
    assert_null(r->node);
    assert_string_equal(r->phase, "Pending");
    assert_int_equal(r->gpu_request, 2);
    assert_int_equal(r->nconditions, 1);
    assert_string_equal(r->conditions[0].reason, "Unschedulable");
    assert_null(r->conditions[0].last_transition); /* no timestamps for pods */
    struct sw_pod_facts f;
    assert_int_equal(sw_pod_facts_from_record(r, &f, &err), 0);
    assert_int_equal(f.gpu_request, 2);
    assert_false(f.terminal);
    assert_int_equal(f.nselectorv, 1);

    /* Without the label, the controller reference names the Job; the
     * message is shared with the first pod's. */
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(j, "metadata"), "labels");
    cJSON_SetValuestring(mut(j, "metadata.name"), "other-x");
    cJSON_AddStringToObject(sw_json_child(j, "spec"), "nodeName", "gpu-1");
    assert_int_equal(sw_pod_record_from_json(t, j, &r2, &err), 0);
    assert_string_equal(r2->owner, "other");
    assert_string_equal(r2->node, "gpu-1");
    assert_ptr_equal(r2->conditions[0].message, r->conditions[0].message);
    sw_pod_record_free(t, r2);

    /* A bad quantity: the facts say which pod and field. */
    cJSON *q = cJSON_GetObjectItemCaseSensitive(
        sw_json_path(cJSON_GetArrayItem(sw_json_path(j, "spec.containers"), 0), "resources.limits"),
        "nvidia.com/gpu");
    cJSON_SetValuestring(q, "two");
    assert_int_equal(sw_pod_record_from_json(t, j, &r2, &err), 0);
    assert_int_equal(sw_pod_facts_from_record(r2, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Pod ml/other-x"));
    assert_non_null(strstr(err.msg, "nvidia.com/gpu"));
    sw_pod_record_free(t, r2);
    cJSON_Delete(j);
    sw_pod_record_free(t, r);
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

static cJSON *node_json(const char *name, const char *ct, const char *gpus, const char *ready,
                        bool cordoned)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"3\",\"labels\":{"
             "\"karpenter.sh/capacity-type\":\"%s\",\"nvidia.com/gpu.product\":\"H100\","
             "\"topology.kubernetes.io/zone\":\"a\"}},\"spec\":{\"unschedulable\":%s,"
             "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}]},"
             "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%s\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             name, ct, cordoned ? "true" : "false", gpus, ready);
    return parse(buf);
}

/* A cached Node with only GKE's spot label counts as spot, as from JSON. */
static void test_node_record_provider_capacity_type(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    struct sw_error err;
    cJSON *nj = parse("{\"metadata\":{\"name\":\"gke-gpu-1\",\"resourceVersion\":\"3\","
                      "\"labels\":{\"cloud.google.com/gke-spot\":\"true\"}},"
                      "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}");
    struct sw_node_record *nr = NULL;
    struct sw_node_facts fr;
    assert_int_equal(sw_node_record_from_json(t, nj, &nr, &err), 0);
    assert_int_equal(sw_node_facts_from_record(nr, &fr, &err), 0);
    assert_string_equal(fr.capacity_type, "spot");
    assert_string_equal(fr.capacity_label, "cloud.google.com/gke-spot");
    assert_string_equal(fr.capacity_value, "true");
    sw_node_record_free(t, nr);
    cJSON_Delete(nj);
    sw_intern_free(t);
}

/* A node sharing its GPUs as NVIDIA's device plugin and GPU feature
 * discovery advertise it: 4 GPUs time-sliced 4 ways (allocatable 16), and
 * MIG slices of two profiles. */
static void test_node_gpu_sharing(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    struct sw_error err = {0};
    cJSON *nj = parse("{\"metadata\":{\"name\":\"g1\",\"labels\":{"
                      "\"nvidia.com/gpu.sharing-strategy\":\"time-slicing\","
                      "\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.count\":\"4\"}},"
                      "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"nvidia.com/gpu\":\"16\","
                      "\"nvidia.com/mig-1g.10gb\":\"7\",\"nvidia.com/mig-3g.40gb\":2,"
                      "\"nvidia.com/mig-\":\"1\"}}}");
    struct sw_node_record *r = NULL;
    assert_int_equal(sw_node_record_from_json(t, nj, &r, &err), 0);
    assert_int_equal(r->gpu_allocatable, 16);
    assert_int_equal(r->nmig, 2); /* "nvidia.com/mig-" alone names no profile */
    assert_string_equal(r->mig[0].profile, "1g.10gb");
    assert_int_equal(r->mig[0].count, 7);
    assert_string_equal(r->mig[1].profile, "3g.40gb");
    assert_int_equal(r->mig[1].count, 2);
    struct sw_node_gpu_sharing g;
    assert_int_equal(sw_node_gpu_sharing_from_record(r, &g, &err), 0);
    assert_string_equal(g.strategy, "time-slicing");
    assert_int_equal(g.replicas, 4);
    assert_int_equal(g.nmig, 2);
    assert_int_equal(g.mig[1].count, 2);
    /* Capacity reads the same from the record (capacity.h). */
    struct sw_node_facts nf;
    assert_int_equal(sw_node_facts_from_record(r, &nf, &err), 0);
    assert_true(nf.time_sliced);
    assert_int_equal(nf.gpu_replicas, 4);
    assert_int_equal(nf.nmig, 2);
    assert_string_equal(nf.mig[0].profile, "1g.10gb");
    assert_int_equal(nf.mig[0].count, 7);
    sw_node_record_free(t, r);
    /* Bad values: the record keeps them, reading them names the node and
     * the label or field. */
    cJSON *labels = mut(nj, "metadata.labels");
    cJSON_ReplaceItemInObjectCaseSensitive(labels, "nvidia.com/gpu.replicas",
                                           cJSON_CreateString("four"));
    assert_int_equal(sw_node_record_from_json(t, nj, &r, &err), 0);
    assert_int_equal(sw_node_gpu_sharing_from_record(r, &g, &err), SW_EPARSE);
    assert_string_equal(err.msg, "Node g1: label \"nvidia.com/gpu.replicas\": expected a whole "
                                 "number from 1 to 1024, got \"four\"");
    assert_int_equal(sw_node_facts_from_record(r, &nf, &err), SW_EPARSE);
    assert_string_equal(err.msg, "Node g1: label \"nvidia.com/gpu.replicas\": expected a whole "
                                 "number from 1 to 1024, got \"four\"");
    sw_node_record_free(t, r);
    cJSON_DeleteItemFromObjectCaseSensitive(labels, "nvidia.com/gpu.replicas");
    cJSON_DeleteItemFromObjectCaseSensitive(labels, "nvidia.com/gpu.sharing-strategy");
    cJSON_ReplaceItemInObjectCaseSensitive(mut(nj, "status.allocatable"), "nvidia.com/mig-1g.10gb",
                                           cJSON_CreateString("x"));
    assert_int_equal(sw_node_record_from_json(t, nj, &r, &err), 0);
    assert_int_equal(r->mig[0].count, SW_REC_INVALID);
    assert_int_equal(sw_node_gpu_sharing_from_record(r, &g, &err), SW_EPARSE);
    assert_string_equal(err.msg, "Node g1: field \"status.allocatable.nvidia.com/mig-1g.10gb\": "
                                 "expected a whole number of MIG slices");
    sw_node_record_free(t, r);
    /* Without the labels: no sharing, one replica. */
    cJSON_ReplaceItemInObjectCaseSensitive(mut(nj, "status.allocatable"), "nvidia.com/mig-1g.10gb",
                                           cJSON_CreateString("7"));
    assert_int_equal(sw_node_record_from_json(t, nj, &r, &err), 0);
    assert_int_equal(sw_node_gpu_sharing_from_record(r, &g, &err), 0);
    assert_string_equal(g.strategy, "none");
    assert_int_equal(g.replicas, 1);
    sw_node_record_free(t, r);
    cJSON_Delete(nj);
    /* A pod asking for MIG slices: the record keeps the profile and count. */
    cJSON *pj = parse("{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ml\"},\"spec\":{"
                      "\"nodeName\":\"g1\",\"containers\":[{\"resources\":{\"limits\":"
                      "{\"nvidia.com/mig-3g.40gb\":\"2\"}}}]},\"status\":{\"phase\":\"Running\"}}");
    struct sw_pod_record *pr = NULL;
    assert_int_equal(sw_pod_record_from_json(t, pj, &pr, &err), 0);
    assert_string_equal(pr->mig_profile, "3g.40gb");
    assert_int_equal(pr->mig_request, 2);
    assert_int_equal(pr->gpu_request, 0);
    struct sw_pod_facts pf;
    assert_int_equal(sw_pod_facts_from_record(pr, &pf, &err), 0);
    assert_string_equal(pf.mig_profile, "3g.40gb");
    assert_int_equal(pf.mig_request, 2);
    sw_pod_record_free(t, pr);
    cJSON_Delete(pj);
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

static void test_node_record_and_capacity(void **state)
{
    (void)state;
    struct sw_intern *t = sw_intern_new();
    struct sw_error err;
    cJSON *nj[3] = {node_json("n1", "spot", "8", "True", false),
                    node_json("n2", "spot", "8", "False", false),
                    node_json("n3", "on-demand", "4", "True", false)};
    struct sw_node_record *nr[3];
    struct sw_node_facts fj[3], fr[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sw_node_record_from_json(t, nj[i], &nr[i], &err), 0);
        assert_int_equal(sw_node_facts_from_json(nj[i], &fj[i], &err), 0);
        assert_int_equal(sw_node_facts_from_record(nr[i], &fr[i], &err), 0);
    }
    assert_int_equal(nr[0]->ntaints, 1);
    assert_string_equal(nr[0]->taints[0].effect, "NoSchedule");
    assert_null(nr[0]->taints[0].value);
    assert_int_equal(nr[0]->gpu_allocatable, 8);
    assert_true(nr[0]->ready);
    assert_false(nr[1]->ready);
    assert_string_equal(fr[2].capacity_type, "on-demand");
    assert_string_equal(fr[2].gpu_memory, "0");
    /* Pods: one bound to n1, one pending that only spot nodes fit. */
    cJSON *pj[2] = {parse(POD), parse(POD)};
    cJSON_SetValuestring(mut(pj[0], "metadata.name"), "bound");
    cJSON_AddStringToObject(sw_json_child(pj[0], "spec"), "nodeName", "n1");
    struct sw_pod_record *pr[2];
    struct sw_pod_facts pfj[2], pfr[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sw_pod_record_from_json(t, pj[i], &pr[i], &err), 0);
        assert_int_equal(sw_pod_facts_from_json(pj[i], &pfj[i], &err), 0);
        assert_int_equal(sw_pod_facts_from_record(pr[i], &pfr[i], &err), 0);
    }
    struct sw_gpu_capacity a, b;
    assert_int_equal(sw_capacity_compute(fj, 3, pfj, 2, &a), 0);
    assert_int_equal(sw_capacity_compute(fr, 3, pfr, 2, &b), 0);
    assert_int_equal(a.npools, 2);
    assert_int_equal(b.npools, a.npools);
    for (size_t i = 0; i < a.npools; i++) {
        assert_string_equal(a.pools[i].key, b.pools[i].key);
        assert_int_equal(a.pools[i].total, b.pools[i].total);
        assert_int_equal(a.pools[i].used, b.pools[i].used);
        assert_int_equal(a.pools[i].excluded, b.pools[i].excluded);
        assert_int_equal(a.pools[i].pending, b.pools[i].pending);
    }
    /* The spot pool: n1 included (8, 2 used), n2 NotReady excluded, 2 pending. */
    const struct sw_gpu_pool *spot =
        strncmp(b.pools[0].key, "spot", 4) == 0 ? &b.pools[0] : &b.pools[1];
    assert_int_equal(spot->total, 8);
    assert_int_equal(spot->used, 2);
    assert_int_equal(spot->excluded, 8);
    assert_int_equal(spot->pending, 2);
    assert_int_equal(b.pending_total, 2);
    sw_capacity_free(&a);
    sw_capacity_free(&b);

    /* A bad allocatable: the record keeps it as invalid, the facts name the node. */
    cJSON_ReplaceItemInObjectCaseSensitive(mut(nj[0], "status.allocatable"), "nvidia.com/gpu",
                                           cJSON_CreateString("eight"));
    struct sw_node_record *bad = NULL;
    assert_int_equal(sw_node_record_from_json(t, nj[0], &bad, &err), 0);
    assert_int_equal(sw_node_facts_from_record(bad, &fr[0], &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Node n1"));
    sw_node_record_free(t, bad);

    for (int i = 0; i < 3; i++) {
        sw_node_record_free(t, nr[i]);
        cJSON_Delete(nj[i]);
    }
    for (int i = 0; i < 2; i++) {
        sw_pod_record_free(t, pr[i]);
        cJSON_Delete(pj[i]);
    }
    assert_int_equal(sw_intern_count(t), 0);
    sw_intern_free(t);
}

/* Fail the Nth allocation for every N until a conversion needs no more:
 * each failure is SW_ENOMEM, and no string stays referenced. */
static void test_allocation_failures(void **state)
{
    (void)state;
    const char *docs[] = {JOB, POD};
    for (int d = 0; d < 2; d++) {
        cJSON *j = parse(docs[d]);
        struct sw_intern *t = sw_intern_new();
        bool done = false;
        for (uint64_t n = 1; n < 200 && !done; n++) {
            struct sw_error err;
            void *r = NULL;
            sw_alloc_fail_at(n);
            int rc = d == 0 ? sw_job_record_from_json(t, j, (struct sw_job_record **)&r, &err)
                            : sw_pod_record_from_json(t, j, (struct sw_pod_record **)&r, &err);
            int injected = sw_alloc_injected();
            sw_alloc_reset();
            if (!injected) {
                assert_int_equal(rc, 0);
                done = true;
            } else {
                assert_int_equal(rc, SW_ENOMEM);
                assert_null(r);
                assert_non_null(strstr(err.msg, "out of memory"));
            }
            if (d == 0)
                sw_job_record_free(t, r);
            else
                sw_pod_record_free(t, r);
            assert_int_equal(sw_intern_count(t), 0);
        }
        assert_true(done);
        sw_intern_free(t);
        cJSON_Delete(j);
    }
}

int main(void)
{
    sw_json_init_hooks();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_record),
        cmocka_unit_test(test_job_shared_strings_and_bad_input),
        cmocka_unit_test(test_pod_record),
        cmocka_unit_test(test_node_record_and_capacity),
        cmocka_unit_test(test_node_record_provider_capacity_type),
        cmocka_unit_test(test_node_gpu_sharing),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
