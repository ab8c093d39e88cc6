/*
 * End-to-end: the REST client's verbs and limits on a real API server.
 * Create, get, paged list, JSON merge patch, server-side apply, delete with
 * preconditions and propagation; errors mapped to SW_E* with the server's
 * message; the client-side rate limit; the body size cap; the discovery
 * answers the hub reads Kueue's API version from (clusters/kueue.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "clusters/kueue.h"
#include "common/clock.h"
#include "common/json.h"
#include "lab.h"

static struct lab l;
static struct sw_kube_client *c;
static char ns[64];

static cJSON *job(const char *name)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"app\":\"e2e\"}},\"spec\":{\"suspend\":true,\"template\":{\"spec\":"
             "{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
             name);
    return cJSON_Parse(body);
}

static int call_create(const char *name, struct lab_wait *w)
{
    cJSON *o = job(name);
    memset(w, 0, sizeof(*w));
    assert_int_equal(sw_kube_create(c, SW_KIND_JOB, ns, o, lab_on_result, w), 0);
    cJSON_Delete(o);
    return lab_wait(&l, w);
}

static int setup(void **state)
{
    (void)state;
    lab_open(&l);
    c = lab_client(&l, "cloud-spot", "-cert", 0);
    if (c == NULL)
        return -1;
    snprintf(ns, sizeof(ns), "e2e-rest-%d", (int)getpid());
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "Namespace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "metadata"), "name", ns);
    struct lab_wait w = {0};
    sw_kube_create(c, SW_KIND_NAMESPACE, NULL, o, lab_on_result, &w);
    cJSON_Delete(o);
    int rc = lab_wait(&l, &w);
    cJSON_Delete(w.body);
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    struct lab_wait w = {0};
    struct sw_kube_delete_opts d = {.grace_period_s = -1};
    sw_kube_delete(c, SW_KIND_NAMESPACE, NULL, ns, &d, lab_on_result, &w);
    lab_wait(&l, &w);
    cJSON_Delete(w.body);
    sw_kube_client_free(c);
    lab_close(&l);
    return 0;
}

static void test_create_get_conflict(void **state)
{
    (void)state;
    struct lab_wait w;
    if (call_create("j1", &w) != 0)
        fail_msg("%s", w.msg);
    const char *uid = NULL;
    assert_int_equal(sw_json_string(w.body, "metadata.uid", true, "job", &uid, NULL), 0);
    cJSON_Delete(w.body);
    /* A second create with the same name: AlreadyExists is SW_EEXIST. */
    assert_int_equal(call_create("j1", &w), SW_EEXIST);
    assert_int_equal(w.status, 409);
    assert_non_null(strstr(w.msg, "AlreadyExists"));
    assert_non_null(strstr(w.msg, "cluster cloud-spot: POST /apis/batch/v1/namespaces/"));
    cJSON_Delete(w.body);
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_get(c, SW_KIND_JOB, ns, "j1", lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), 0);
    const cJSON *susp = sw_json_path(w.body, "spec.suspend");
    assert_true(cJSON_IsTrue(susp));
    cJSON_Delete(w.body);
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_get(c, SW_KIND_JOB, ns, "nope", lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), SW_ENOENT);
    assert_int_equal(w.status, 404);
    cJSON_Delete(w.body);
    /* Names are checked before anything is sent. */
    assert_int_equal(sw_kube_get(c, SW_KIND_JOB, ns, "../../x", lab_on_result, &w), SW_EINVAL);
}

static void test_patch_apply_delete(void **state)
{
    (void)state;
    struct lab_wait w;
    if (call_create("j2", &w) != 0)
        fail_msg("%s", w.msg);
    char uid[64];
    snprintf(uid, sizeof(uid), "%s",
             cJSON_GetObjectItem(cJSON_GetObjectItem(w.body, "metadata"), "uid")->valuestring);
    cJSON_Delete(w.body);
    /* JSON merge patch: set an annotation, remove a label (null). The keys are
     * none of spillway's (spillway.io/...): this test does not hold the lab
     * lock, and a hub running beside it would take a Job asking to burst. */
    cJSON *p = cJSON_Parse("{\"metadata\":{\"annotations\":{\"e2e.example/rest\":\"auto\"},"
                           "\"labels\":{\"app\":null}}}");
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_merge_patch(c, SW_KIND_JOB, ns, "j2", p, NULL, lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), 0);
    cJSON_Delete(p);
    const cJSON *ann = sw_json_path(w.body, "metadata.annotations");
    assert_string_equal(cJSON_GetObjectItem(ann, "e2e.example/rest")->valuestring, "auto");
    assert_null(sw_json_path(w.body, "metadata.labels.app"));
    cJSON_Delete(w.body);
    /* Server-side apply as field manager "spillway". */
    cJSON *a = cJSON_Parse("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":"
                           "{\"name\":\"j2\",\"annotations\":{\"e2e.example/placed\":\"cloud\"}}}");
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_apply(c, SW_KIND_JOB, ns, "j2", a, "spillway", 1, lab_on_result, &w),
                     0);
    if (lab_wait(&l, &w) != 0)
        fail_msg("apply: %s", w.msg);
    cJSON_Delete(a);
    ann = sw_json_path(w.body, "metadata.annotations");
    assert_string_equal(cJSON_GetObjectItem(ann, "e2e.example/placed")->valuestring, "cloud");
    int managed = 0;
    const cJSON *mf;
    cJSON_ArrayForEach(mf, sw_json_path(w.body, "metadata.managedFields"))
    {
        const cJSON *m = cJSON_GetObjectItem(mf, "manager");
        const cJSON *op = cJSON_GetObjectItem(mf, "operation");
        managed |= cJSON_IsString(m) && strcmp(m->valuestring, "spillway") == 0 &&
                   strcmp(op->valuestring, "Apply") == 0;
    }
    assert_true(managed);
    cJSON_Delete(w.body);
    /* Delete with a wrong UID precondition: Conflict, nothing deleted. */
    struct sw_kube_delete_opts d = {.precondition_uid = "00000000-0000-0000-0000-000000000000",
                                    .propagation = "Foreground",
                                    .grace_period_s = -1};
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_delete(c, SW_KIND_JOB, ns, "j2", &d, lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), SW_ECONFLICT);
    if (strstr(w.msg, "the UID in the precondition") == NULL)
        fail_msg("unexpected message: %s", w.msg);
    cJSON_Delete(w.body);
    /* The right UID, background propagation: deleted. */
    d.precondition_uid = uid;
    d.propagation = "Background";
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_delete(c, SW_KIND_JOB, ns, "j2", &d, lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), 0);
    cJSON_Delete(w.body);
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_get(c, SW_KIND_JOB, ns, "j2", lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), SW_ENOENT);
    cJSON_Delete(w.body);
}

struct split_seen {
    int n, managed, named;
};

static struct split_seen *split_now; /* the list's ctx is the lab_wait */

static void on_split_item(cJSON *item, void *ctx)
{
    (void)ctx;
    struct split_seen *sp = split_now;
    sp->n++;
    sp->managed += sw_json_path(item, "metadata.managedFields") != NULL;
    const char *name = cJSON_GetStringValue(sw_json_path(item, "metadata.name"));
    sp->named += name != NULL && (strncmp(name, "page-", 5) == 0 || strcmp(name, "j1") == 0);
    cJSON_Delete(item);
}

static void test_paging_and_event(void **state)
{
    (void)state;
    struct lab_wait w;
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof(name), "page-%d", i);
        if (call_create(name, &w) != 0)
            fail_msg("%s", w.msg);
        cJSON_Delete(w.body);
    }
    uint64_t before = sw_kube_client_sent(c);
    struct sw_kube_list_opts lo = {.label_selector = "app=e2e", .limit = 2};
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_list(c, SW_KIND_JOB, ns, &lo, lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), 0);
    /* page-0..6 and j1 carry app=e2e (j2 lost it, and is gone). */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(w.body, "items")), 8);
    assert_int_equal(sw_kube_client_sent(c) - before, 4); /* 2+2+2+2 */
    assert_null(sw_json_path(w.body, "metadata.continue"));
    assert_non_null(sw_json_path(w.body, "metadata.resourceVersion"));
    cJSON_Delete(w.body);
    /* The same list split into items as they arrive: every item once, in
     * order, without managedFields; the List itself then has none. */
    struct split_seen sp = {0};
    split_now = &sp;
    lo.on_item = on_split_item;
    before = sw_kube_client_sent(c);
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_list(c, SW_KIND_JOB, ns, &lo, lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), 0);
    assert_int_equal(sp.n, 8);
    assert_int_equal(sp.managed, 0);
    assert_int_equal(sp.named, 8);
    assert_int_equal(sw_kube_client_sent(c) - before, 4);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(w.body, "items")), 0);
    assert_non_null(sw_json_path(w.body, "metadata.resourceVersion"));
    cJSON_Delete(w.body);
    /* An Event about j1. */
    char body[512];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"j1.spill\"},"
             "\"involvedObject\":{\"kind\":\"Job\",\"namespace\":\"%s\",\"name\":\"j1\"},"
             "\"reason\":\"Burst\",\"message\":\"placed on cloud-spot\",\"type\":\"Normal\","
             "\"source\":{\"component\":\"spillway\"}}",
             ns);
    cJSON *ev = cJSON_Parse(body);
    memset(&w, 0, sizeof(w));
    assert_int_equal(sw_kube_create(c, SW_KIND_EVENT, ns, ev, lab_on_result, &w), 0);
    if (lab_wait(&l, &w) != 0)
        fail_msg("event: %s", w.msg);
    cJSON_Delete(ev);
    cJSON_Delete(w.body);
}

static void test_rate_limit_and_body_cap(void **state)
{
    (void)state;
    /* QPS 10, burst 2: 12 GETs need at least (12 - 2) / 10 = 1 s. */
    struct lab l2;
    lab_open(&l2);
    struct sw_kube_client *slow = lab_client(&l2, "cloud-spot", "-cert", 10);
    /* lab_client sets burst to 2 x QPS; make it 2. */
    sw_kube_client_free(slow);
    char path[1024];
    snprintf(path, sizeof(path), "%s/cloud-spot-cert.kubeconfig", lab_env("SW_LAB_KUBECONFIG_DIR"));
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(path, NULL, &t, &err), 0);
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.qps = 10;
    o.burst = 2;
    o.max_body = 2048; /* /version fits; the test's Jobs do not */
    assert_int_equal(sw_kube_client_new(&l2.loop, l2.http, t, &o, &slow, &err), 0);
    struct lab_wait ws[12];
    memset(ws, 0, sizeof(ws));
    int64_t t0 = sw_mono_ms(sw_clock_system());
    struct sw_kube_req r = {.method = "GET", .path = "/version"};
    for (int i = 0; i < 12; i++)
        assert_int_equal(sw_kube_send(slow, &r, lab_on_result, &ws[i], NULL), 0);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(lab_wait(&l2, &ws[i]), 0);
        cJSON_Delete(ws[i].body);
    }
    int64_t elapsed = sw_mono_ms(sw_clock_system()) - t0;
    printf("  12 requests at QPS 10 burst 2 took %lld ms\n", (long long)elapsed);
    assert_true(elapsed >= 950);
    struct lab_wait big = {0};
    struct sw_kube_list_opts lo = {.limit = -1};
    assert_int_equal(sw_kube_list(slow, SW_KIND_JOB, ns, &lo, lab_on_result, &big), 0);
    assert_int_equal(lab_wait(&l2, &big), SW_ETOOBIG);
    assert_non_null(strstr(big.msg, "exceeds its limit of 2048 bytes"));
    sw_kube_client_free(slow);
    lab_close(&l2);
}

static int discover(const char *path, struct lab_wait *w)
{
    memset(w, 0, sizeof(*w));
    struct sw_kube_req rq = {.path = path};
    assert_int_equal(sw_kube_send(c, &rq, lab_on_result, w, NULL), 0);
    return lab_wait(&l, w);
}

/* What the lab's API server answers for the Kueue group (its v0.17 CRDs),
 * for a group without v1beta2 (batch), and for a group nobody installed,
 * read as the hub reads them when a Kueue informer's list fails. */
static void test_kueue_discovery(void **state)
{
    (void)state;
    char msg[400], served[128];
    struct lab_wait w;
    assert_int_equal(discover("/apis/" SW_KUEUE_GROUP, &w), 0);
    assert_int_equal(w.status, 200);
    assert_true(sw_api_group_serves(w.body, SW_KUEUE_VERSION, served, sizeof(served)));
    printf("  %s serves %s\n", SW_KUEUE_GROUP, served);
    /* v1beta2 served: a failed list (here a 500) is not a verdict. */
    assert_int_equal(sw_kueue_api_verdict("cloud-spot", w.status, w.body, 500, msg, sizeof(msg)),
                     0);
    cJSON_Delete(w.body);
    /* A group served without v1beta2: the versions it serves are named. */
    assert_int_equal(discover("/apis/batch", &w), 0);
    assert_false(sw_api_group_serves(w.body, SW_KUEUE_VERSION, served, sizeof(served)));
    assert_string_equal(served, "v1");
    assert_int_equal(sw_kueue_api_verdict("cloud-spot", w.status, w.body, 404, msg, sizeof(msg)),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(msg, " v1 only, not v1beta2"));
    cJSON_Delete(w.body);
    /* No such group: the API server's 404. */
    assert_int_not_equal(discover("/apis/nosuch.spillway.test", &w), 0);
    assert_int_equal(w.status, 404);
    assert_int_equal(sw_kueue_api_verdict("cloud-spot", w.status, w.body, 404, msg, sizeof(msg)),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(msg, "Kueue is not installed"));
    printf("  %s\n", msg);
    cJSON_Delete(w.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_get_conflict), cmocka_unit_test(test_patch_apply_delete),
        cmocka_unit_test(test_paging_and_event),    cmocka_unit_test(test_rate_limit_and_body_cap),
        cmocka_unit_test(test_kueue_discovery),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
