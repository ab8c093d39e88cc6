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
        /* home's quota is what a burst leaves behind; it is judged last */
        {403,
         "pods \"train-7-x2k9p\" is forbidden: exceeded quota: gpu, requested: "
         "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: "
         "requests.nvidia.com/gpu=8",
         SW_ADMISSION_ADMITTED},
        {403, "pods \"t-abcde\" is forbidden: failed quota: gpu: must specify limits.cpu",
         SW_ADMISSION_ADMITTED},
        /* the same before the API server named the Pod (generateName) */
        {403, "pods is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1",
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
    assert_string_equal(small, "violate");
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
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_cache_at_its_limit),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
