/*
 * Tests for controller/hub/admission_pod.c: the Pod home's admission
 * judges for a burst, its verdict's key, what an answer means, the
 * message shown, and the bounded verdict cache.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "controller/hub/admission_pod.h"

/* A Job as the API server keeps it: the Job controller's four labels in
 * its template, valued with its UID and name. */
static const char JOB[] =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\","
    "\"namespace\":\"team-a\",\"uid\":\"%s\",\"annotations\":{\"spillway.io/burst\":\"auto\"}},"
    "\"spec\":{\"managedBy\":\"spillway.io/hub\",\"template\":{\"metadata\":{\"labels\":{"
    "\"batch.kubernetes.io/controller-uid\":\"%s\",\"batch.kubernetes.io/job-name\":\"%s\","
    "\"controller-uid\":\"%s\",\"job-name\":\"%s\",\"app\":\"trainer\"},\"annotations\":{"
    "\"team\":\"a\"}},\"spec\":{\"restartPolicy\":\"Never\",\"hostNetwork\":%s,"
    "\"containers\":[{\"name\":\"train\",\"image\":\"registry.example/train:1\","
    "\"securityContext\":{\"privileged\":%s}}]}}}}";

static cJSON *job(const char *name, const char *uid, bool privileged)
{
    char text[2048];
    const char *p = privileged ? "true" : "false";
    snprintf(text, sizeof(text), JOB, name, uid, uid, name, uid, name, p, p);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    return j;
}

static const char *md_str(const cJSON *pod, const char *k)
{
    return sw_json_str(sw_json_child(pod, "metadata"), k);
}

static void test_pod_from_job(void **state)
{
    (void)state;
    cJSON *j = job("train-7", "0fea", true);
    struct sw_error err = {0};
    cJSON *pod = sw_admission_pod(j, "team-a", &err);
    assert_non_null(pod);
    assert_string_equal(sw_json_str(pod, "apiVersion"), "v1");
    assert_string_equal(sw_json_str(pod, "kind"), "Pod");
    assert_string_equal(md_str(pod, "generateName"), "train-7-");
    assert_null(md_str(pod, "name"));
    assert_string_equal(md_str(pod, "namespace"), "team-a");
    /* The template's labels but the Job controller's; its annotations. */
    const cJSON *labels = sw_json_child(sw_json_child(pod, "metadata"), "labels");
    assert_int_equal(cJSON_GetArraySize(labels), 1);
    assert_string_equal(sw_json_str(labels, "app"), "trainer");
    assert_string_equal(
        sw_json_str(sw_json_child(sw_json_child(pod, "metadata"), "annotations"), "team"), "a");
    /* Nothing of the Job's own metadata. */
    assert_null(sw_json_child(sw_json_child(sw_json_child(pod, "metadata"), "annotations"),
                              "spillway.io/burst"));
    assert_null(md_str(pod, "uid"));
    /* The template's spec as it is, privileged and hostNetwork included. */
    const cJSON *tspec = sw_json_path(j, "spec.template.spec");
    assert_true(cJSON_Compare(sw_json_child(pod, "spec"), tspec, 1));
    assert_true(cJSON_IsTrue(sw_json_path(pod, "spec.hostNetwork")));
    assert_null(sw_json_child(pod, "status"));
    cJSON_Delete(pod);

    /* A template whose labels are all the Job controller's: no labels. */
    cJSON *tl = (cJSON *)sw_json_path(j, "spec.template.metadata.labels");
    cJSON_DeleteItemFromObjectCaseSensitive(tl, "app");
    pod = sw_admission_pod(j, "team-a", &err);
    assert_null(sw_json_child(sw_json_child(pod, "metadata"), "labels"));
    cJSON_Delete(pod);

    /* A template without a spec: the Pod has none (the API server refuses it). */
    cJSON_DeleteItemFromObjectCaseSensitive((cJSON *)sw_json_path(j, "spec.template"), "spec");
    pod = sw_admission_pod(j, "team-a", &err);
    assert_non_null(pod);
    assert_null(sw_json_child(pod, "spec"));
    cJSON_Delete(pod);

    /* No template at all: refused, named. */
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(j, "spec"), "template");
    assert_null(sw_admission_pod(j, "team-a", &err));
    assert_int_equal(err.code, SW_EINVAL);
    assert_string_equal(err.msg,
                        "Job team-a/train-7: field \"spec.template\": expected an object, got "
                        "nothing");
    cJSON_Delete(j);
}

static void test_generate_name(void **state)
{
    (void)state;
    static const struct {
        const char *name, *want;
    } cases[] = {
        /* 63 characters: cut to 57, and "-": the 58 Kubernetes keeps. */
        {"a23456789012345678901234567890123456789012345678901234567890123",
         "a23456789012345678901234567890123456789012345678901234567-"},
        /* exactly 57: kept whole */
        {"b23456789012345678901234567890123456789012345678901234567",
         "b23456789012345678901234567890123456789012345678901234567-"},
        /* a cut that ends in '.' or '-' would make an invalid name */
        {"c2345678901234567890123456789012345678901234567890123456.-89",
         "c2345678901234567890123456789012345678901234567890123456-"},
        {"train.v1", "train.v1-"},
        {"", "spillway-admission-"},
        {NULL, "spillway-admission-"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *j = job("x", "u", false);
        cJSON *md = sw_json_child(j, "metadata");
        cJSON_DeleteItemFromObjectCaseSensitive(md, "name");
        if (cases[i].name)
            cJSON_AddStringToObject(md, "name", cases[i].name);
        cJSON *pod = sw_admission_pod(j, "team-a", NULL);
        assert_non_null(pod);
        if (strcmp(md_str(pod, "generateName"), cases[i].want) != 0)
            fail_msg("case %zu: generateName %s, expected %s", i, md_str(pod, "generateName"),
                     cases[i].want);
        assert_true(strlen(md_str(pod, "generateName")) <= SW_ADMISSION_GENERATE_MAX);
        cJSON_Delete(pod);
        cJSON_Delete(j);
    }
}

static void key_of(const char *name, const char *uid, bool privileged, const char *cluster,
                   const char *ns, struct sw_admission_key *k)
{
    cJSON *j = job(name, uid, privileged);
    cJSON *pod = sw_admission_pod(j, ns, NULL);
    assert_non_null(pod);
    assert_int_equal(sw_admission_key(pod, cluster, ns, k), 0);
    cJSON_Delete(pod);
    cJSON_Delete(j);
}

static void test_key(void **state)
{
    (void)state;
    struct sw_admission_key a, b;
    /* Two Jobs of one template (other names, other UIDs): one verdict. */
    key_of("job-00001", "uid-1", false, "onprem", "team-a", &a);
    key_of("job-00002", "uid-2", false, "onprem", "team-a", &b);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_string_equal(a.cluster, "onprem");
    assert_string_equal(a.ns, "team-a");
    /* Another spec, namespace or cluster: another verdict. */
    key_of("job-00001", "uid-1", true, "onprem", "team-a", &b);
    assert_memory_not_equal(a.sha, b.sha, sizeof(a.sha));
    key_of("job-00001", "uid-1", false, "onprem", "team-b", &b);
    assert_memory_not_equal(a.sha, b.sha, sizeof(a.sha)); /* the body names it too */
    key_of("job-00001", "uid-1", false, "edge", "team-a", &b);
    assert_memory_equal(a.sha, b.sha, sizeof(a.sha));
    assert_memory_not_equal(&a, &b, sizeof(a));
    /* Another label or annotation: another verdict (a policy may read them). */
    cJSON *j = job("job-00001", "uid-1", false);
    cJSON_AddStringToObject((cJSON *)sw_json_path(j, "spec.template.metadata.annotations"),
                            "container.apparmor.security.beta.kubernetes.io/train", "unconfined");
    cJSON *pod = sw_admission_pod(j, "team-a", NULL);
    assert_int_equal(sw_admission_key(pod, "onprem", "team-a", &b), 0);
    assert_memory_not_equal(a.sha, b.sha, sizeof(a.sha));
    /* Names longer than the key holds are refused, not cut. */
    char longname[80];
    memset(longname, 'c', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(sw_admission_key(pod, longname, "team-a", &b), SW_EINVAL);
    assert_int_equal(sw_admission_key(pod, "onprem", longname, &b), SW_EINVAL);
    cJSON_Delete(pod);
    cJSON_Delete(j);
}

static const char PSA[] =
    "pods \"train-7-x2k9p\" is forbidden: violates PodSecurity \"restricted:latest\": "
    "privileged (container \"train\" must not set securityContext.privileged=true), "
    "host namespaces (hostNetwork=true)";

static void test_classify(void **state)
{
    (void)state;
    static const struct {
        long status;
        const char *message;
        enum sw_admission_outcome want;
    } cases[] = {
        {201, NULL, SW_ADMISSION_ADMITTED},
        {200, "", SW_ADMISSION_ADMITTED},
        {403, PSA, SW_ADMISSION_REFUSED},
        {400,
         "admission webhook \"validate.kyverno.svc-fail\" denied the request: policy "
         "Pod/team-a/train-7-x2k9p for resource violation: disallow-host-path",
         SW_ADMISSION_REFUSED},
        {403,
         "admission webhook \"validation.gatekeeper.sh\" denied the request: [psp-privileged] "
         "Privileged container is not allowed: train",
         SW_ADMISSION_REFUSED},
        {422, "Pod \"train-7-x2k9p\" is invalid: spec.containers[0].image: Required value",
         SW_ADMISSION_REFUSED},
        {403,
         "pods is forbidden: User \"system:serviceaccount:spillway:hub\" cannot create "
         "resource \"pods\" in API group \"\" in the namespace \"team-a\"",
         SW_ADMISSION_NO_RIGHT},
        /* home's full quota is what a burst leaves behind; it is judged last */
        {403,
         "pods \"train-7-x2k9p\" is forbidden: exceeded quota: gpu, requested: "
         "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: "
         "requests.nvidia.com/gpu=8",
         SW_ADMISSION_ADMITTED},
        /* a request or limit the quota requires is missing: policy */
        {403, "pods \"t-abcde\" is forbidden: failed quota: gpu: must specify limits.cpu",
         SW_ADMISSION_REFUSED},
        /* the same before the API server named the Pod (generateName) */
        {403,
         "pods is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, used: "
         "requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8",
         SW_ADMISSION_ADMITTED},
        /* a webhook quoting those words is a webhook's refusal */
        {403,
         "admission webhook \"x\" denied the request: pods \"a\" is forbidden: exceeded "
         "quota: ",
         SW_ADMISSION_REFUSED},
        {400, "pods \"t-abcde\" is forbidden: exceeded quota: gpu", SW_ADMISSION_REFUSED},
        {403,
         "pods \"t-abcde\" is forbidden: error looking up service account team-a/default: "
         "serviceaccount \"default\" not found",
         SW_ADMISSION_REFUSED_ONCE},
        {403, NULL, SW_ADMISSION_REFUSED},
        {0, NULL, SW_ADMISSION_TRANSIENT},
        {401, "Unauthorized", SW_ADMISSION_TRANSIENT},
        {404, "namespaces \"team-a\" not found", SW_ADMISSION_TRANSIENT},
        {409, "already exists", SW_ADMISSION_TRANSIENT},
        {429, "too many requests", SW_ADMISSION_TRANSIENT},
        {500, "Internal error occurred: failed calling webhook \"x\": context deadline exceeded",
         SW_ADMISSION_TRANSIENT},
        {503, NULL, SW_ADMISSION_TRANSIENT},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum sw_admission_outcome got = sw_admission_classify(cases[i].status, cases[i].message);
        if (got != cases[i].want)
            fail_msg("case %zu (%ld %s): %d, expected %d", i, cases[i].status,
                     cases[i].message ? cases[i].message : "(none)", got, cases[i].want);
    }
}

/* A quota refusal of `quota`'s three lists, as the API server words it. */
static enum sw_admission_outcome quota_says(long status, const char *requested, const char *used,
                                            const char *limited)
{
    char m[512];
    snprintf(m, sizeof(m),
             "pods \"train-7-x2k9p\" is forbidden: exceeded quota: gpu-quota, requested: %s, "
             "used: %s, limited: %s",
             requested, used, limited);
    return sw_admission_classify(status, m);
}

static void test_quota(void **state)
{
    (void)state;
    static const struct {
        const char *requested, *used, *limited;
        enum sw_admission_outcome want;
    } cases[] = {
        /* full now, fits once it frees up */
        {"requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8",
         SW_ADMISSION_ADMITTED},
        {"requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8",
         SW_ADMISSION_ADMITTED},
        /* a quota of 0, or smaller than the request: policy */
        {"requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=0", "requests.nvidia.com/gpu=0",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=0", "requests.nvidia.com/gpu=4",
         SW_ADMISSION_REFUSED},
        /* several resources: every one must fit */
        {"limits.memory=64Gi,requests.nvidia.com/gpu=2",
         "limits.memory=100Gi,requests.nvidia.com/gpu=8",
         "limits.memory=128Gi,requests.nvidia.com/gpu=8", SW_ADMISSION_ADMITTED},
        {"limits.memory=64Gi,requests.nvidia.com/gpu=2",
         "limits.memory=0,requests.nvidia.com/gpu=8",
         "limits.memory=32Gi,requests.nvidia.com/gpu=8", SW_ADMISSION_REFUSED},
        {"limits.memory=64Gi,requests.nvidia.com/gpu=9",
         "limits.memory=100Gi,requests.nvidia.com/gpu=8",
         "limits.memory=128Gi,requests.nvidia.com/gpu=8", SW_ADMISSION_REFUSED},
        /* the limited list in another order */
        {"requests.cpu=2,requests.memory=1Gi", "requests.cpu=4,requests.memory=1Gi",
         "requests.memory=1Gi,requests.cpu=4", SW_ADMISSION_ADMITTED},
        /* quantities read exactly, whatever their form */
        {"requests.memory=1Gi", "requests.memory=0", "requests.memory=1073741824",
         SW_ADMISSION_ADMITTED},
        {"requests.memory=1073741825", "requests.memory=0", "requests.memory=1Gi",
         SW_ADMISSION_REFUSED},
        {"requests.memory=2Gi", "requests.memory=0", "requests.memory=2G", SW_ADMISSION_REFUSED},
        {"requests.memory=2G", "requests.memory=0", "requests.memory=2Gi", SW_ADMISSION_ADMITTED},
        {"requests.memory=512Mi", "requests.memory=0", "requests.memory=0.5Gi",
         SW_ADMISSION_ADMITTED},
        {"requests.cpu=1500m", "requests.cpu=0", "requests.cpu=1.5", SW_ADMISSION_ADMITTED},
        {"requests.cpu=1501m", "requests.cpu=0", "requests.cpu=1.5", SW_ADMISSION_REFUSED},
        {"requests.cpu=100m", "requests.cpu=0", "requests.cpu=0.1", SW_ADMISSION_ADMITTED},
        {"requests.cpu=1k", "requests.cpu=0", "requests.cpu=1e3", SW_ADMISSION_ADMITTED},
        {"requests.cpu=1001", "requests.cpu=0", "requests.cpu=1E3", SW_ADMISSION_REFUSED},
        {"requests.cpu=1m", "requests.cpu=0", "requests.cpu=1e-3", SW_ADMISSION_ADMITTED},
        {"requests.cpu=1000001n", "requests.cpu=0", "requests.cpu=1m", SW_ADMISSION_REFUSED},
        {"requests.cpu=1000u", "requests.cpu=0", "requests.cpu=1m", SW_ADMISSION_ADMITTED},
        {"requests.memory=1E", "requests.memory=0", "requests.memory=1Ei", SW_ADMISSION_ADMITTED},
        {"requests.memory=1Ei", "requests.memory=0", "requests.memory=1E", SW_ADMISSION_REFUSED},
        {"requests.memory=1Pi", "requests.memory=0", "requests.memory=1024Ti",
         SW_ADMISSION_ADMITTED},
        {"requests.memory=1M", "requests.memory=0", "requests.memory=1Mi", SW_ADMISSION_ADMITTED},
        {"count/pods=1", "count/pods=10", "count/pods=10", SW_ADMISSION_ADMITTED},
        {"pods=1", "pods=0", "pods=+0", SW_ADMISSION_REFUSED},
        /* anything that does not read as a quantity or a list: refused */
        {"requests.nvidia.com/gpu=8x", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8ki",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=-1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=1e",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=1e9999",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=1.2.3",
         SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=1,", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8",
         SW_ADMISSION_REFUSED},
        {"", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8", SW_ADMISSION_REFUSED},
        {"8", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gpu=8", SW_ADMISSION_REFUSED},
        /* a resource requested that the limited list lacks */
        {"requests.nvidia.com/gpu=1", "requests.cpu=8", "requests.cpu=8", SW_ADMISSION_REFUSED},
        {"requests.nvidia.com/gpu=1", "requests.nvidia.com/gpu=8", "requests.nvidia.com/gp=8",
         SW_ADMISSION_REFUSED},
        /* beyond what is held exactly: refused, not rounded */
        {"requests.cpu=1", "requests.cpu=0",
         "requests.cpu=1000000000000000000000000000000000000000000000000000000000000000000000000000"
         "000",
         SW_ADMISSION_REFUSED},
        {"requests.cpu=0.0000000000000000000000000000001", "requests.cpu=0", "requests.cpu=1",
         SW_ADMISSION_REFUSED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum sw_admission_outcome got =
            quota_says(403, cases[i].requested, cases[i].used, cases[i].limited);
        if (got != cases[i].want)
            fail_msg("case %zu (requested %s, limited %s): %d, expected %d", i, cases[i].requested,
                     cases[i].limited, got, cases[i].want);
    }
    /* Not a quota's full message: refused. */
    static const char *const short_ones[] = {
        "pods \"t-abcde\" is forbidden: exceeded quota: gpu",
        "pods \"t-abcde\" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1",
        "pods \"t-abcde\" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, "
        "used: requests.nvidia.com/gpu=8",
        "pods \"t-abcde\" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, "
        "limited: requests.nvidia.com/gpu=8",
    };
    for (size_t i = 0; i < sizeof(short_ones) / sizeof(short_ones[0]); i++)
        assert_int_equal(sw_admission_classify(403, short_ones[i]), SW_ADMISSION_REFUSED);
    /* Only a 403 reads as a quota's refusal. */
    assert_int_equal(quota_says(400, "pods=1", "pods=1", "pods=1"), SW_ADMISSION_REFUSED);
    assert_int_equal(quota_says(500, "pods=1", "pods=1", "pods=1"), SW_ADMISSION_TRANSIENT);
    /* limitedResources and scopes the platform configured: policy, at any status. */
    assert_int_equal(
        sw_admission_classify(403, "pods \"t-abcde\" is forbidden: insufficient quota to consume: "
                                   "requests.nvidia.com/gpu"),
        SW_ADMISSION_REFUSED);
    assert_int_equal(
        sw_admission_classify(403, "pods is forbidden: insufficient quota to consume: pods"),
        SW_ADMISSION_REFUSED);
    assert_int_equal(
        sw_admission_classify(500, "insufficient quota to match these scopes: [{PriorityClass In "
                                   "[high]}]"),
        SW_ADMISSION_REFUSED);
    assert_int_equal(
        sw_admission_classify(403, "insufficient quota to match these scopes: [{PriorityClass In "
                                   "[high]}]"),
        SW_ADMISSION_REFUSED);
    /* ... but a webhook's message quoting those words is a webhook's 500. */
    assert_int_equal(sw_admission_classify(500, "Internal error occurred: failed calling webhook "
                                                "\"x\": insufficient quota to consume: pods"),
                     SW_ADMISSION_TRANSIENT);
    /* A new quota whose usage is not counted yet: asked again later. */
    assert_int_equal(sw_admission_classify(403, "pods \"t-abcde\" is forbidden: status unknown for "
                                                "quota: gpu, resources: requests.nvidia.com/gpu"),
                     SW_ADMISSION_TRANSIENT);
}

/* The Pod the API server answers a dry run of job("train-7", ..., false)'s
 * Pod with: its defaults, the service-account token volume, the
 * default tolerations, securityContext {} and no hostNetwork (false). */
static const char ANSWER[] =
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"train-7-x2k9p\","
    "\"generateName\":\"train-7-\",\"namespace\":\"team-a\",\"uid\":\"5d7e\","
    "\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"labels\":{\"app\":\"trainer\"},"
    "\"annotations\":{\"team\":\"a\"}},\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-x\","
    "\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":"
    "\"token\"}}],\"defaultMode\":420}}],\"containers\":[{\"name\":\"train\",\"image\":"
    "\"registry.example/train:1\",\"resources\":{},\"volumeMounts\":[{\"name\":"
    "\"kube-api-access-x\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"terminationMessagePath\":"
    "\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":"
    "\"IfNotPresent\",\"securityContext\":{\"privileged\":false}}],\"restartPolicy\":\"Never\","
    "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":"
    "\"default\",\"serviceAccount\":\"default\",\"securityContext\":{},\"schedulerName\":"
    "\"default-scheduler\",\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","
    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":0,"
    "\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},\"status\":{"
    "\"phase\":\"Pending\",\"qosClass\":\"BestEffort\"}}";

static cJSON *sent_pod(void)
{
    cJSON *j = job("train-7", "0fea", false);
    cJSON *pod = sw_admission_pod(j, "team-a", NULL);
    cJSON_Delete(j);
    assert_non_null(pod);
    return pod;
}

static cJSON *answer(void)
{
    cJSON *a = cJSON_Parse(ANSWER);
    assert_non_null(a);
    return a;
}

/* The item at a dotted path whose numeric steps index arrays ("spec.containers.0"). */
static cJSON *at(cJSON *o, const char *path)
{
    char step[64];
    cJSON *v = o;
    while (v != NULL && *path != '\0') {
        size_t n = strcspn(path, ".");
        assert_true(n < sizeof(step));
        memcpy(step, path, n);
        step[n] = '\0';
        path += n + (path[n] == '.');
        if (step[0] >= '0' && step[0] <= '9')
            v = cJSON_GetArrayItem(v, atoi(step));
        else
            v = cJSON_GetObjectItemCaseSensitive(v, step);
    }
    assert_non_null(v);
    return v;
}

/* Replaces (or adds) o's member k with the JSON `value`. */
static void set(cJSON *o, const char *k, const char *value)
{
    cJSON *v = cJSON_Parse(value);
    assert_non_null(v);
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    assert_true(cJSON_AddItemToObject(o, k, v));
}

/* Adds value's members (JSON) to o's member k, made an object if absent. */
static void merge(cJSON *o, const char *k, const char *value)
{
    cJSON *v = cJSON_Parse(value);
    assert_non_null(v);
    cJSON *t = cJSON_GetObjectItemCaseSensitive(o, k);
    if (t == NULL)
        t = cJSON_AddObjectToObject(o, k);
    assert_true(cJSON_IsObject(t));
    while (v->child != NULL) {
        cJSON *m = cJSON_DetachItemViaPointer(v, v->child);
        cJSON_DeleteItemFromObjectCaseSensitive(t, m->string);
        cJSON_AddItemToObject(t, m->string, m);
    }
    cJSON_Delete(v);
}

static void expect(const cJSON *sent, const cJSON *returned, const char *field)
{
    bool changed = true;
    char got[SW_ADMISSION_MSG_MAX] = "unset";
    assert_int_equal(sw_admission_changed(sent, returned, &changed, got, sizeof(got)), 0);
    if (field == NULL && changed)
        fail_msg("changed (%s), expected no change", got);
    if (field != NULL && (!changed || strcmp(got, field) != 0))
        fail_msg("%s (%s), expected changed %s", changed ? "changed" : "unchanged", got, field);
}

static void test_changed_none(void **state)
{
    (void)state;
    cJSON *s = sent_pod(), *r = answer();
    /* The API server's own defaults and additions are not changes. */
    expect(s, r, NULL);
    /* Nor are what it drops as empty, or absent booleans at their defaults. */
    cJSON *sc = at(s, "spec.containers.0.securityContext");
    set(sc, "capabilities", "{\"add\":[],\"drop\":null}");
    set(sc, "seLinuxOptions", "{\"user\":\"\"}");
    set(at(s, "spec"), "hostPID", "false");
    set(at(s, "spec"), "hostUsers", "true");
    set(at(r, "spec"), "hostIPC", "null");
    expect(s, r, NULL);
    /* Members in another order. */
    set(sc, "runAsUser", "1000");
    set(sc, "runAsNonRoot", "true");
    set(at(r, "spec.containers.0"), "securityContext",
        "{\"runAsNonRoot\":true,\"privileged\":false,\"runAsUser\":1000}");
    expect(s, r, NULL);
    /* Nothing to compare at all: nothing changed. */
    expect(NULL, NULL, NULL);
    cJSON_Delete(s);
    cJSON_Delete(r);
}

static void test_changed_each_field(void **state)
{
    (void)state;
    static const struct {
        const char *path, *key, *value, *field;
    } cases[] = {
        {"spec", "securityContext", "{\"runAsNonRoot\":true}", "spec.securityContext"},
        {"spec", "securityContext", "{\"runAsUser\":1000}", "spec.securityContext"},
        {"spec", "securityContext", "{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}",
         "spec.securityContext"},
        {"spec", "hostNetwork", "true", "spec.hostNetwork"},
        {"spec", "hostPID", "true", "spec.hostPID"},
        {"spec", "hostIPC", "true", "spec.hostIPC"},
        {"spec", "hostUsers", "false", "spec.hostUsers"},
        {"spec.containers.0", "securityContext", "{\"privileged\":false,\"runAsNonRoot\":true}",
         "spec.containers[0].securityContext"},
        {"spec.containers.0", "securityContext",
         "{\"privileged\":false,\"capabilities\":{\"drop\":[\"ALL\"]}}",
         "spec.containers[0].securityContext"},
        {"spec.containers.0", "securityContext", "{\"privileged\":true}",
         "spec.containers[0].securityContext"},
        {"spec.containers.0", "securityContext", "{}", "spec.containers[0].securityContext"},
        {"spec.containers.0", "image", "\"registry.example/train@sha256:0f1e\"",
         "spec.containers[0].image"},
        {"spec.containers.0", "name", "\"trainer\"", "spec.containers[0]"},
        {"spec", "containers",
         "[{\"name\":\"train\",\"image\":\"registry.example/train:1\",\"securityContext\":{"
         "\"privileged\":false}},{\"name\":\"istio-proxy\",\"image\":\"proxy:1\"}]",
         "spec.containers[1]"},
        {"spec", "containers", "[]", "spec.containers[0]"},
        {"spec", "initContainers",
         "[{\"name\":\"setup\",\"image\":\"busybox\",\"securityContext\":{\"runAsUser\":0}}]",
         "spec.initContainers[0]"},
        {"spec", "ephemeralContainers", "[{\"name\":\"debug\",\"image\":\"busybox\"}]",
         "spec.ephemeralContainers[0]"},
        {"metadata.annotations", "container.apparmor.security.beta.kubernetes.io/ghost",
         "\"unconfined\"",
         "metadata.annotations[\"container.apparmor.security.beta.kubernetes."
         "io/ghost\"]"},
        {"metadata.annotations", "seccomp.security.alpha.kubernetes.io/other", "\"unconfined\"",
         "metadata.annotations[\"seccomp.security.alpha.kubernetes.io/other\"]"},
        /* a profile annotation read as the field the API server makes of it */
        {"metadata.annotations", "container.apparmor.security.beta.kubernetes.io/train",
         "\"unconfined\"", "spec.containers[0].securityContext"},
        {"metadata.annotations", "seccomp.security.alpha.kubernetes.io/pod",
         "\"localhost/loose.json\"", "spec.securityContext"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *s = sent_pod(), *r = answer();
        set(at(r, cases[i].path), cases[i].key, cases[i].value);
        bool changed = false;
        char got[SW_ADMISSION_MSG_MAX] = "";
        assert_int_equal(sw_admission_changed(s, r, &changed, got, sizeof(got)), 0);
        if (!changed || strcmp(got, cases[i].field) != 0)
            fail_msg("case %zu (%s.%s): %s %s, expected %s", i, cases[i].path, cases[i].key,
                     changed ? "changed" : "unchanged", got, cases[i].field);
        /* The other way round (home dropped what the template set): changed too. */
        assert_int_equal(sw_admission_changed(r, s, &changed, got, sizeof(got)), 0);
        if (!changed)
            fail_msg("case %zu reversed: unchanged", i);
        cJSON_Delete(s);
        cJSON_Delete(r);
    }
    /* A field home removed: changed; the name is cut to fit. */
    cJSON *s = sent_pod(), *r = answer();
    cJSON_DeleteItemFromObjectCaseSensitive(at(r, "spec.containers.0"), "image");
    expect(s, r, "spec.containers[0].image");
    bool changed = false;
    char small[8];
    assert_int_equal(sw_admission_changed(s, r, &changed, small, sizeof(small)), 0);
    assert_true(changed);
    assert_string_equal(small, "spec.co");
    assert_int_equal(sw_admission_changed(s, r, &changed, NULL, 0), 0);
    assert_true(changed);
    cJSON_Delete(s);
    cJSON_Delete(r);
}

/* The API server's copies between the deprecated profile annotations and
 * the fields, as each version makes them, are not changes. */
static void test_changed_version_skew(void **state)
{
    (void)state;
    static const struct {
        const char *sent_ann, *sent_ctr_sc, *sent_pod_sc; /* as the template has them */
        const char *ret_ann, *ret_ctr_sc, *ret_pod_sc;    /* as the API server answers */
    } cases[] = {
        /* AppArmor, 1.30+: the annotation copied to the container's field */
        {"{\"container.apparmor.security.beta.kubernetes.io/train\":\"runtime/default\"}", NULL,
         NULL, "{\"container.apparmor.security.beta.kubernetes.io/train\":\"runtime/default\"}",
         "{\"appArmorProfile\":{\"type\":\"RuntimeDefault\"}}", NULL},
        /* ... unless it is the pod's profile */
        {"{\"container.apparmor.security.beta.kubernetes.io/train\":\"unconfined\"}", NULL,
         "{\"appArmorProfile\":{\"type\":\"Unconfined\"}}",
         "{\"container.apparmor.security.beta.kubernetes.io/train\":\"unconfined\"}", NULL,
         "{\"appArmorProfile\":{\"type\":\"Unconfined\"}}"},
        /* AppArmor, 1.30: the field copied to the annotation, the container's or the pod's */
        {NULL, "{\"appArmorProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"k8s-x\"}}",
         NULL, "{\"container.apparmor.security.beta.kubernetes.io/train\":\"localhost/k8s-x\"}",
         "{\"appArmorProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"k8s-x\"}}", NULL},
        {NULL, NULL, "{\"appArmorProfile\":{\"type\":\"RuntimeDefault\"}}",
         "{\"container.apparmor.security.beta.kubernetes.io/train\":\"runtime/default\"}", NULL,
         "{\"appArmorProfile\":{\"type\":\"RuntimeDefault\"}}"},
        /* seccomp before 1.27: both ways, for the pod and for each container */
        {NULL, NULL, "{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}",
         "{\"seccomp.security.alpha.kubernetes.io/pod\":\"runtime/default\"}", NULL,
         "{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"},
        {"{\"seccomp.security.alpha.kubernetes.io/pod\":\"docker/default\"}", NULL, NULL,
         "{\"seccomp.security.alpha.kubernetes.io/pod\":\"docker/default\"}", NULL,
         "{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"},
        {"{\"container.seccomp.security.alpha.kubernetes.io/train\":\"localhost/a.json\"}", NULL,
         NULL, "{\"container.seccomp.security.alpha.kubernetes.io/train\":\"localhost/a.json\"}",
         "{\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"a.json\"}}", NULL},
        {NULL, "{\"seccompProfile\":{\"type\":\"Unconfined\"}}", NULL,
         "{\"container.seccomp.security.alpha.kubernetes.io/train\":\"unconfined\"}",
         "{\"seccompProfile\":{\"type\":\"Unconfined\"}}", NULL},
        /* and a version that copies nothing */
        {"{\"container.apparmor.security.beta.kubernetes.io/train\":\"runtime/default\"}", NULL,
         NULL, "{\"container.apparmor.security.beta.kubernetes.io/train\":\"runtime/default\"}",
         NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *s = sent_pod(), *r = answer();
        if (cases[i].sent_ann)
            merge(at(s, "metadata"), "annotations", cases[i].sent_ann);
        if (cases[i].sent_ctr_sc)
            merge(at(s, "spec.containers.0"), "securityContext", cases[i].sent_ctr_sc);
        if (cases[i].sent_pod_sc)
            merge(at(s, "spec"), "securityContext", cases[i].sent_pod_sc);
        if (cases[i].ret_ann)
            merge(at(r, "metadata"), "annotations", cases[i].ret_ann);
        if (cases[i].ret_ctr_sc)
            merge(at(r, "spec.containers.0"), "securityContext", cases[i].ret_ctr_sc);
        if (cases[i].ret_pod_sc)
            merge(at(r, "spec"), "securityContext", cases[i].ret_pod_sc);
        bool changed = true;
        char got[SW_ADMISSION_MSG_MAX] = "";
        assert_int_equal(sw_admission_changed(s, r, &changed, got, sizeof(got)), 0);
        if (changed)
            fail_msg("case %zu: changed %s, expected no change", i, got);
        cJSON_Delete(s);
        cJSON_Delete(r);
    }
    /* A webhook that changes a profile the template set is a change. */
    cJSON *s = sent_pod(), *r = answer();
    merge(at(s, "metadata"), "annotations",
          "{\"container.apparmor.security.beta.kubernetes.io/train\":\"localhost/strict\"}");
    merge(at(r, "metadata"), "annotations",
          "{\"container.apparmor.security.beta.kubernetes.io/train\":\"localhost/loose\"}");
    expect(s, r, "spec.containers[0].securityContext");
    /* ... and so is one that keeps the field but changes the annotation. */
    merge(at(s, "spec.containers.0"), "securityContext",
          "{\"appArmorProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"strict\"}}");
    merge(at(r, "spec.containers.0"), "securityContext",
          "{\"appArmorProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"strict\"}}");
    expect(s, r, "metadata.annotations[\"container.apparmor.security.beta.kubernetes.io/train\"]");
    cJSON_Delete(s);
    cJSON_Delete(r);
}

static void test_changed_alloc_failures(void **state)
{
    (void)state;
    sw_json_init_hooks();
    cJSON *s = sent_pod(), *r = answer();
    set(at(s, "spec"), "securityContext", "{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}");
    set(at(r, "spec"), "securityContext", "{\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}");
    set(at(r, "metadata"), "annotations",
        "{\"container.apparmor.security.beta.kubernetes.io/train\":\"localhost/x\"}");
    for (uint64_t nth = 1; nth < 2000; nth++) {
        bool changed = false;
        char field[64] = "";
        sw_alloc_fail_at(nth);
        int rc = sw_admission_changed(s, r, &changed, field, sizeof(field));
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_true(changed);
            assert_string_equal(field, "spec.containers[0].securityContext");
            assert_true(nth > 1);
            cJSON_Delete(s);
            cJSON_Delete(r);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
    }
    fail_msg("more allocations than expected");
}

/* A running annotation-only Job as the last view of a lost home shows it. */
static struct sw_admission_home_view running_view(void)
{
    struct sw_admission_home_view v = {
        .seen = true,
        .annotation = true,
        .uid = "0fea",
        .generation = 1,
        .suspend = 0,
        .deleting = false,
        .active = 1,
        .pods = 1,
    };
    return v;
}

static void test_ran_at_home(void **state)
{
    (void)state;
    cJSON *j = job("train-7", "0fea", false);
    cJSON_AddNumberToObject(sw_json_child(j, "metadata"), "generation", 1);
    struct sw_admission_home_view v = running_view();
    assert_true(sw_admission_ran_at_home(&v, j));
    /* spec.suspend absent reads as not suspended (Kubernetes' default) */
    v.suspend = -1;
    assert_true(sw_admission_ran_at_home(&v, j));
    /* Each part of the evidence missing: no evidence. */
    v = running_view();
    v.seen = false;
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.annotation = false; /* a delegated origin: its status is the hub's copy */
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.suspend = 1; /* its template may have changed since its pods were made */
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.deleting = true;
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.uid = "another"; /* a Job of that name made again */
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.uid = NULL;
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.generation = 2; /* the copy judged is not the template of the view */
    assert_false(sw_admission_ran_at_home(&v, j));
    v = running_view();
    v.generation = -1;
    assert_false(sw_admission_ran_at_home(&v, j));
    /* Old status counts alone, with no pod in the view: no evidence. */
    v = running_view();
    v.pods = 0;
    v.active = 3;
    assert_false(sw_admission_ran_at_home(&v, j));
    /* A pod that only carries the Job's label, its controller counting none. */
    v = running_view();
    v.active = 0;
    assert_false(sw_admission_ran_at_home(&v, j));
    v.active = -1;
    assert_false(sw_admission_ran_at_home(&v, j));
    assert_false(sw_admission_ran_at_home(NULL, j));
    /* The copy judged without a generation or UID: no evidence. */
    v = running_view();
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(j, "metadata"), "generation");
    assert_false(sw_admission_ran_at_home(&v, j));
    cJSON_AddNumberToObject(sw_json_child(j, "metadata"), "generation", 1);
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(j, "metadata"), "uid");
    assert_false(sw_admission_ran_at_home(&v, j));
    cJSON_Delete(j);
}

static void test_message(void **state)
{
    (void)state;
    char out[SW_ADMISSION_MSG_MAX];
    sw_admission_message(PSA, out, sizeof(out));
    assert_string_equal(out, "violates PodSecurity \"restricted:latest\": privileged (container "
                             "\"train\" must not set securityContext.privileged=true), host "
                             "namespaces (hostNetwork=true)");
    sw_admission_message("Pod \"t-abcde\" is invalid: spec.containers: Required value", out,
                         sizeof(out));
    assert_string_equal(out, "invalid: spec.containers: Required value");
    const char *webhook = "admission webhook \"v.kyverno\" denied the request: no hostPath";
    sw_admission_message(webhook, out, sizeof(out));
    assert_string_equal(out, webhook);
    /* Not of the shape: kept as it is. */
    sw_admission_message("pods \"unterminated is forbidden: x", out, sizeof(out));
    assert_string_equal(out, "pods \"unterminated is forbidden: x");
    sw_admission_message(NULL, out, sizeof(out));
    assert_string_equal(out, "");
    char small[8];
    sw_admission_message(PSA, small, sizeof(small));
    assert_string_equal(small, "viol...");
    /* Pod Security's message for a pod breaking every rule of restricted
     * (near 600 bytes) is kept whole, its last rule named. */
    char psa[700];
    snprintf(psa, sizeof(psa),
             "pods \"t-abcde\" is forbidden: violates PodSecurity \"restricted:latest\": "
             "host namespaces (hostNetwork=true), privileged (container \"train\" must not set "
             "securityContext.privileged=true), allowPrivilegeEscalation != false (container "
             "\"train\" must set securityContext.allowPrivilegeEscalation=false), unrestricted "
             "capabilities (container \"train\" must set securityContext.capabilities.drop=["
             "\"ALL\"]), runAsNonRoot != true (pod or container \"train\" must set "
             "securityContext.runAsNonRoot=true), seccompProfile (pod or container \"train\" "
             "must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
             "\"Localhost\"), restricted volume types (volume \"root\" uses restricted volume "
             "type \"hostPath\")");
    sw_admission_message(psa, out, sizeof(out));
    assert_non_null(strstr(out, "restricted volume type \"hostPath\")"));
    assert_null(strstr(out, "..."));
}

static struct sw_admission_key key_n(int n)
{
    struct sw_admission_key k;
    memset(&k, 0, sizeof(k));
    snprintf(k.cluster, sizeof(k.cluster), "onprem");
    snprintf(k.ns, sizeof(k.ns), "team-a");
    k.sha[0] = (unsigned char)n;
    k.sha[31] = (unsigned char)(n >> 8);
    return k;
}

static void test_cache(void **state)
{
    (void)state;
    struct sw_admission_cache *c = sw_admission_cache_new(3, 1000);
    assert_non_null(c);
    struct sw_admission_verdict v;
    struct sw_admission_key k1 = key_n(1), k2 = key_n(2), k3 = key_n(3), k4 = key_n(4);
    assert_false(sw_admission_cache_get(c, &k1, 0, true, &v));
    sw_admission_cache_put(c, &k1, true, NULL, 100);
    sw_admission_cache_put(c, &k2, false, "violates PodSecurity \"restricted:latest\"", 200);
    assert_true(sw_admission_cache_get(c, &k1, 1099, false, &v));
    assert_true(v.admitted);
    assert_int_equal(v.at_ms, 100);
    /* A refusal is kept, with its message. */
    assert_true(sw_admission_cache_get(c, &k2, 1100, false, &v));
    assert_false(v.admitted);
    assert_string_equal(v.message, "violates PodSecurity \"restricted:latest\"");
    /* Past its ttl: not used, but for a lost home (any age). */
    assert_false(sw_admission_cache_get(c, &k1, 1100, false, &v));
    assert_true(sw_admission_cache_get(c, &k1, 1100, true, &v));
    /* Another namespace or cluster is another verdict. */
    struct sw_admission_key other = k1;
    snprintf(other.ns, sizeof(other.ns), "team-b");
    assert_false(sw_admission_cache_get(c, &other, 150, true, &v));
    other = k1;
    snprintf(other.cluster, sizeof(other.cluster), "edge");
    assert_false(sw_admission_cache_get(c, &other, 150, true, &v));
    /* Given again: replaced, not added. */
    sw_admission_cache_put(c, &k1, false, "now refused", 1200);
    assert_int_equal(sw_admission_cache_len(c), 2);
    assert_true(sw_admission_cache_get(c, &k1, 1300, false, &v));
    assert_false(v.admitted);
    /* Bounded: the oldest (k2, given at 200) goes. */
    sw_admission_cache_put(c, &k3, true, NULL, 1250);
    sw_admission_cache_put(c, &k4, true, NULL, 1260);
    assert_int_equal(sw_admission_cache_len(c), 3);
    assert_false(sw_admission_cache_get(c, &k2, 1300, true, &v));
    assert_true(sw_admission_cache_get(c, &k1, 1300, true, &v));
    assert_true(sw_admission_cache_get(c, &k3, 1300, true, &v));
    assert_true(sw_admission_cache_get(c, &k4, 1300, true, &v));
    /* A long message is cut to fit. */
    char msg[2 * SW_ADMISSION_MSG_MAX];
    memset(msg, 'm', sizeof(msg) - 1);
    msg[sizeof(msg) - 1] = '\0';
    sw_admission_cache_put(c, &k4, false, msg, 1270);
    assert_true(sw_admission_cache_get(c, &k4, 1300, false, &v));
    assert_int_equal(strlen(v.message), SW_ADMISSION_MSG_MAX - 1);
    assert_false(v.changed);
    /* A Pod home's admission changed: a refusal, kept with the field. */
    sw_admission_cache_put_changed(c, &k3, "spec.containers[0].securityContext", 1280);
    assert_true(sw_admission_cache_get(c, &k3, 1300, false, &v));
    assert_false(v.admitted);
    assert_true(v.changed);
    assert_string_equal(v.message, "spec.containers[0].securityContext");
    /* Given again as admission's own refusal: no longer marked changed. */
    sw_admission_cache_put(c, &k3, false, "violates PodSecurity", 1290);
    assert_true(sw_admission_cache_get(c, &k3, 1300, false, &v));
    assert_false(v.changed);
    sw_admission_cache_free(c);
}

static void test_cache_at_its_limit(void **state)
{
    (void)state;
    /* The hub's own size: the 1,025th verdict evicts the first. */
    struct sw_admission_cache *c =
        sw_admission_cache_new(SW_ADMISSION_CACHE_MAX, SW_ADMISSION_TTL_MS);
    struct sw_admission_verdict v;
    for (int i = 0; i < SW_ADMISSION_CACHE_MAX; i++) {
        struct sw_admission_key k = key_n(i);
        sw_admission_cache_put(c, &k, true, NULL, 1000 + i);
    }
    assert_int_equal(sw_admission_cache_len(c), SW_ADMISSION_CACHE_MAX);
    struct sw_admission_key first = key_n(0), last = key_n(SW_ADMISSION_CACHE_MAX - 1);
    assert_true(sw_admission_cache_get(c, &first, 2000, false, &v));
    struct sw_admission_key more = key_n(SW_ADMISSION_CACHE_MAX);
    sw_admission_cache_put(c, &more, true, NULL, 5000);
    assert_int_equal(sw_admission_cache_len(c), SW_ADMISSION_CACHE_MAX);
    assert_false(sw_admission_cache_get(c, &first, 5000, true, &v));
    assert_true(sw_admission_cache_get(c, &last, 5000, true, &v));
    assert_true(sw_admission_cache_get(c, &more, 5000, true, &v));
    /* Ten minutes after it was given, a verdict is no longer used. */
    assert_true(sw_admission_cache_get(c, &more, 5000 + SW_ADMISSION_TTL_MS - 1, false, &v));
    assert_false(sw_admission_cache_get(c, &more, 5000 + SW_ADMISSION_TTL_MS, false, &v));
    sw_admission_cache_free(c);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    sw_json_init_hooks();
    cJSON *j = job("train-7", "0fea", true);
    for (uint64_t nth = 1; nth < 500; nth++) {
        struct sw_error err = {0};
        struct sw_admission_key k;
        sw_alloc_fail_at(nth);
        cJSON *pod = sw_admission_pod(j, "team-a", &err);
        int rc = pod ? sw_admission_key(pod, "onprem", "team-a", &k) : err.code;
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        cJSON_Delete(pod);
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_true(nth > 1);
            cJSON_Delete(j);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
    }
    fail_msg("more allocations than expected");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_from_job),
        cmocka_unit_test(test_generate_name),
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_changed_none),
        cmocka_unit_test(test_changed_each_field),
        cmocka_unit_test(test_changed_version_skew),
        cmocka_unit_test(test_changed_alloc_failures),
        cmocka_unit_test(test_ran_at_home),
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_cache_at_its_limit),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
