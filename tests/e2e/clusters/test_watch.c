/*
 * End-to-end: informers against a real API server.
 *  - A watch resumes across an API server restart without missing or
 *    duplicating an event: every Lease change made before, during and after
 *    the restart is seen exactly once, in resourceVersion order.
 *  - A watch from a resourceVersion that is too old gets 410 Gone and the
 *    informer relists; its cache then matches the server.
 *  - Label and field selectors reach the server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clusters/informer.h"
#include "common/alloc.h"
#include "common/json.h"
#include "lab.h"
#include <unistd.h>

#define MAX_EVENTS 256

struct seen {
    int n;
    enum sw_watch_type type[MAX_EVENTS];
    char name[MAX_EVENTS][64];
    unsigned long long rv[MAX_EVENTS];
};

static void on_change(struct sw_informer *inf, enum sw_watch_type type, const char *key,
                      const void *old, const void *obj, void *ctx)
{
    (void)inf;
    (void)old;
    struct seen *s = ctx;
    if (s->n >= MAX_EVENTS)
        return;
    const cJSON *rv = sw_json_path(obj, "metadata.resourceVersion");
    const char *slash = strchr(key, '/');
    s->type[s->n] = type;
    snprintf(s->name[s->n], sizeof(s->name[0]), "%s", slash ? slash + 1 : key);
    s->rv[s->n] = cJSON_IsString(rv) ? strtoull(rv->valuestring, NULL, 10) : 0;
    s->n++;
}

static void make_namespace(struct lab *l, struct sw_kube_client *c, const char *ns)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
             "{\"name\":\"%s\"}}",
             ns);
    cJSON *o = cJSON_Parse(body);
    struct lab_wait w = {0};
    assert_int_equal(sw_kube_create(c, SW_KIND_NAMESPACE, NULL, o, lab_on_result, &w), 0);
    if (lab_wait(l, &w) != 0)
        fail_msg("create namespace: %s", w.msg);
    cJSON_Delete(w.body);
    cJSON_Delete(o);
}

static void delete_namespace(struct lab *l, struct sw_kube_client *c, const char *ns)
{
    struct lab_wait w = {0};
    struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
    if (sw_kube_delete(c, SW_KIND_NAMESPACE, NULL, ns, &d, lab_on_result, &w) == 0)
        lab_wait(l, &w);
    cJSON_Delete(w.body);
}

static unsigned long long result_rv(const cJSON *body)
{
    const cJSON *rv = sw_json_path(body, "metadata.resourceVersion");
    return cJSON_IsString(rv) ? strtoull(rv->valuestring, NULL, 10) : 0;
}

static unsigned long long make_lease(struct lab *l, struct sw_kube_client *c, const char *ns,
                                     const char *name, const char *label)
{
    unsigned long long rv = 0;
    char body[512];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
             "{\"name\":\"%s\",\"labels\":{\"test\":\"%s\"}},\"spec\":{\"holderIdentity\":\"a\"}}",
             name, label);
    cJSON *o = cJSON_Parse(body);
    struct lab_wait w = {0};
    int rc = 0;
    /* Right after a restart the server may refuse for a moment; the client
     * retries 5xx itself, and connection errors are retried here. */
    for (int i = 0; i < 20; i++) {
        memset(&w, 0, sizeof(w));
        assert_int_equal(sw_kube_create(c, SW_KIND_LEASE, ns, o, lab_on_result, &w), 0);
        rc = lab_wait(l, &w);
        rv = result_rv(w.body);
        cJSON_Delete(w.body);
        if (rc != SW_ENET && rc != SW_EUNAVAIL)
            break;
        lab_run_for(l, 500);
    }
    if (rc != 0)
        fail_msg("create lease %s: %s", name, w.msg);
    cJSON_Delete(o);
    return rv;
}

static unsigned long long patch_lease(struct lab *l, struct sw_kube_client *c, const char *ns,
                                      const char *name, const char *holder)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"spec\":{\"holderIdentity\":\"%s\"}}", holder);
    cJSON *p = cJSON_Parse(body);
    struct lab_wait w = {0};
    assert_int_equal(sw_kube_merge_patch(c, SW_KIND_LEASE, ns, name, p, NULL, lab_on_result, &w),
                     0);
    if (lab_wait(l, &w) != 0)
        fail_msg("patch lease %s: %s", name, w.msg);
    unsigned long long rv = result_rv(w.body);
    cJSON_Delete(w.body);
    cJSON_Delete(p);
    return rv;
}

static int restart_apiserver(const char *cluster)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s/tests/testbed/testbed restart-apiserver %s >/dev/null",
             lab_env("SW_SOURCE_DIR"), cluster);
    return system(cmd);
}

static void test_watch_resumes_across_restart(void **state)
{
    (void)state;
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *c = lab_client(&l, "onprem", "-cert", 0);
    struct sw_kube_client *writer = lab_client(&l, "onprem", "-cert", 0);
    assert_non_null(c);
    char ns[64];
    snprintf(ns, sizeof(ns), "e2e-watch-%d", (int)getpid());
    make_namespace(&l, writer, ns);

    struct seen s = {0};
    struct sw_informer_opts o = {.kind = SW_KIND_LEASE, .ns = ns, .handler = on_change, .ctx = &s};
    struct sw_informer *inf = NULL;
    assert_int_equal(sw_informer_new(c, &o, &inf), 0);
    assert_int_equal(sw_informer_start(inf), 0);
    for (int i = 0; i < 200 && !sw_informer_synced(inf); i++)
        lab_run_for(&l, 50);
    assert_true(sw_informer_synced(inf));

    /* Before: three creations and a change. */
    make_lease(&l, writer, ns, "before-1", "x");
    make_lease(&l, writer, ns, "before-2", "x");
    make_lease(&l, writer, ns, "before-3", "x");
    patch_lease(&l, writer, ns, "before-1", "b");
    for (int i = 0; i < 100 && s.n < 4; i++)
        lab_run_for(&l, 50);
    assert_int_equal(s.n, 4);
    struct sw_informer_stats st0;
    sw_informer_stats(inf, &st0);

    /* The restart blocks this thread: the watch connection drops meanwhile. */
    assert_int_equal(restart_apiserver("onprem"), 0);
    /* Changes made right after the restart, before the informer has had a
     * chance to reconnect (it is backing off), must still arrive. */
    unsigned long long rv_after1 = make_lease(&l, writer, ns, "after-1", "x");
    unsigned long long rv_before2 = patch_lease(&l, writer, ns, "before-2", "c");
    unsigned long long rv_after2 = make_lease(&l, writer, ns, "after-2", "x");
    struct lab_wait dw = {0};
    struct sw_kube_delete_opts d = {.grace_period_s = -1};
    assert_int_equal(sw_kube_delete(writer, SW_KIND_LEASE, ns, "before-3", &d, lab_on_result, &dw),
                     0);
    if (lab_wait(&l, &dw) != 0)
        fail_msg("delete: %s", dw.msg);
    cJSON_Delete(dw.body);
    for (int i = 0; i < 600 && s.n < 8; i++)
        lab_run_for(&l, 50);
    lab_run_for(&l, 2000); /* and nothing more arrives */

    struct sw_informer_stats st;
    sw_informer_stats(inf, &st);
    printf("  events=%d watches=%llu lists=%llu relists=%llu errors=%llu\n", s.n,
           (unsigned long long)st.watches, (unsigned long long)st.lists,
           (unsigned long long)st.relists, (unsigned long long)st.errors);
    for (int i = 0; i < s.n; i++)
        printf("    %-8s %-10s rv=%llu\n", sw_watch_type_name(s.type[i]), s.name[i], s.rv[i]);
    assert_int_equal(s.n, 8);
    /* Before the restart: in order, resourceVersions increasing. */
    static const char *before[] = {"ADDED before-1", "ADDED before-2", "ADDED before-3",
                                   "MODIFIED before-1"};
    for (int i = 0; i < 4; i++) {
        char got[96];
        snprintf(got, sizeof(got), "%s %s", sw_watch_type_name(s.type[i]), s.name[i]);
        assert_string_equal(got, before[i]);
        if (i > 0)
            assert_true(s.rv[i] > s.rv[i - 1]);
    }
    /* After: each change exactly once, carrying the resourceVersion the
     * server gave it, whether the informer resumed its watch or (when the
     * restarted server's watch cache no longer reaches back to its version:
     * 410) relisted. A relist reports a deletion with the last known state. */
    struct {
        const char *what;
        unsigned long long rv;
        int count;
    } after[] = {{"ADDED after-1", rv_after1, 0},
                 {"MODIFIED before-2", rv_before2, 0},
                 {"ADDED after-2", rv_after2, 0},
                 {"DELETED before-3", 0, 0}};
    for (int i = 4; i < 8; i++) {
        char got[96];
        snprintf(got, sizeof(got), "%s %s", sw_watch_type_name(s.type[i]), s.name[i]);
        int matched = 0;
        for (int j = 0; j < 4; j++) {
            if (strcmp(got, after[j].what) != 0)
                continue;
            matched = 1;
            after[j].count++;
            if (after[j].rv != 0)
                assert_int_equal(s.rv[i], after[j].rv);
        }
        if (!matched)
            fail_msg("unexpected event %s", got);
    }
    for (int j = 0; j < 4; j++)
        if (after[j].count != 1)
            fail_msg("%s seen %d times", after[j].what, after[j].count);
    /* It reconnected: a new watch, and at most one relist. */
    assert_true(st.watches > st0.watches);
    assert_true(st.relists <= 1);
    assert_int_equal(sw_informer_count(inf), 4);
    char key[128];
    snprintf(key, sizeof(key), "%s/before-3", ns);
    assert_null(sw_informer_get(inf, key));
    snprintf(key, sizeof(key), "%s/after-2", ns);
    const cJSON *a2 = sw_informer_get(inf, key);
    assert_non_null(a2);
    assert_int_equal(result_rv(a2), rv_after2);
    sw_informer_free(inf);
    delete_namespace(&l, writer, ns);
    sw_kube_client_free(c);
    sw_kube_client_free(writer);
    lab_close(&l);
}

/* A record of a Lease, as a cache's `compact` makes one. */
struct lease_rec {
    char name[64];
    char rv[32];
    char holder[64];
};

static int live_recs; /* records made and not yet released */

static int compact_lease(const cJSON *obj, void *ctx, void **rec, struct sw_error *err)
{
    (void)ctx;
    const char *name = cJSON_GetStringValue(sw_json_path(obj, "metadata.name"));
    const char *rv = cJSON_GetStringValue(sw_json_path(obj, "metadata.resourceVersion"));
    const char *holder = cJSON_GetStringValue(sw_json_path(obj, "spec.holderIdentity"));
    if (name == NULL || rv == NULL)
        return sw_error_set(err, SW_EPARSE, "Lease: field \"metadata.name\": expected a string");
    struct lease_rec *r = calloc(1, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->rv, sizeof(r->rv), "%s", rv);
    snprintf(r->holder, sizeof(r->holder), "%s", holder ? holder : "");
    live_recs++;
    *rec = r;
    return 0;
}

static void release_lease(void *rec, void *ctx)
{
    (void)ctx;
    live_recs--;
    free(rec);
}

static const char *lease_rv(const void *rec)
{
    return ((const struct lease_rec *)rec)->rv;
}

static void on_change_rec(struct sw_informer *inf, enum sw_watch_type type, const char *key,
                          const void *old, const void *obj, void *ctx)
{
    (void)inf;
    (void)key;
    (void)old;
    struct seen *s = ctx;
    const struct lease_rec *r = obj;
    if (s->n >= MAX_EVENTS)
        return;
    s->type[s->n] = type;
    snprintf(s->name[s->n], sizeof(s->name[0]), "%s", r->name);
    s->rv[s->n] = strtoull(r->rv, NULL, 10);
    s->n++;
}

static void gone_relists(bool compact)
{
    /* The API server answers a watch from its watch cache, which holds the
     * events since the server started: on a lab that has just come up,
     * resourceVersion 1 is still in it and no 410 would come. Restarting
     * the server first makes its cache begin at the current revision. */
    assert_int_equal(restart_apiserver("cloud-ondemand"), 0);
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *c = lab_client(&l, "cloud-ondemand", "-cert", 0);
    assert_non_null(c);
    char ns[64];
    snprintf(ns, sizeof(ns), "e2e-gone-%s%d", compact ? "rec-" : "", (int)getpid());
    make_namespace(&l, c, ns);
    make_lease(&l, c, ns, "keep-1", "keep");
    make_lease(&l, c, ns, "keep-2", "keep");
    make_lease(&l, c, ns, "other", "other");

    struct seen s = {0};
    struct sw_informer_opts o = {.kind = SW_KIND_LEASE,
                                 .ns = ns,
                                 .label_selector = "test=keep",
                                 .field_selector = "metadata.name!=keep-2",
                                 .handler = on_change,
                                 .ctx = &s};
    if (compact) {
        /* The cache keeps records, as the hub's does (clusters/record.h). */
        o.handler = on_change_rec;
        o.compact = compact_lease;
        o.release = release_lease;
        o.record_rv = lease_rv;
        make_lease(&l, c, ns, "keep-4", "keep");
    }
    struct sw_informer *inf = NULL;
    assert_int_equal(sw_informer_new(c, &o, &inf), 0);
    assert_int_equal(sw_informer_start(inf), 0);
    for (int i = 0; i < 200 && !sw_informer_synced(inf); i++)
        lab_run_for(&l, 50);
    /* The selectors were applied by the server: only keep-1 (and keep-4) qualify. */
    assert_int_equal(sw_informer_count(inf), compact ? 2 : 1);
    char key[128];
    snprintf(key, sizeof(key), "%s/keep-1", ns);
    assert_non_null(sw_informer_get(inf, key));
    if (compact) {
        assert_int_equal(live_recs, 2);
        /* The record holds what compact kept: spec.holderIdentity. */
        assert_string_equal(((const struct lease_rec *)sw_informer_get(inf, key))->holder, "a");
    }

    /* A lease the informer should see appears; then etcd is compacted up to
     * it and the informer is pointed at an ancient resourceVersion: the
     * server answers 410 Gone, and only a relist can find keep-3. */
    unsigned long long rv3 = make_lease(&l, c, ns, "keep-3", "keep");
    const char *server = sw_kube_client_target(c)->server; /* https://IP:6443 */
    char ip[64];
    assert_int_equal(sscanf(server, "https://%63[0-9.]", ip), 1);
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "curl -sf -X POST http://%s:2379/v3/kv/compaction -d '{\"revision\":\"%llu\","
             "\"physical\":true}' >/dev/null",
             ip, rv3);
    assert_int_equal(system(cmd), 0);
    if (compact) {
        /* Deleted while this loop does not run, and the watch is then
         * dropped unread: only the relist's differences can tell. */
        snprintf(cmd, sizeof(cmd), "%s --kubeconfig %s -n %s delete lease keep-4 >/dev/null",
                 lab_env("SW_LAB_KUBECTL"), lab_env("SW_LAB_KUBECONFIG_CLOUD_ONDEMAND"), ns);
        assert_int_equal(system(cmd), 0);
    }
    sw__informer_force_rewatch(inf, "1");
    struct sw_informer_stats st;
    for (int i = 0; i < 400; i++) {
        lab_run_for(&l, 50);
        sw_informer_stats(inf, &st);
        if (st.relists > 0 && st.lists >= 2)
            break;
    }
    printf("  lists=%llu relists=%llu watches=%llu count=%zu\n", (unsigned long long)st.lists,
           (unsigned long long)st.relists, (unsigned long long)st.watches, sw_informer_count(inf));
    assert_int_equal(st.relists, 1);
    assert_int_equal(st.lists, 2);
    assert_int_equal(sw_informer_count(inf), 2);
    snprintf(key, sizeof(key), "%s/keep-3", ns);
    assert_non_null(sw_informer_get(inf, key));
    /* The handler heard of keep-3 from the relist's differences. */
    int found = 0, gone = 0;
    for (int i = 0; i < s.n; i++) {
        found |= s.type[i] == SW_WATCH_ADDED && strcmp(s.name[i], "keep-3") == 0;
        gone |= s.type[i] == SW_WATCH_DELETED && strcmp(s.name[i], "keep-4") == 0;
    }
    assert_true(found);
    if (compact) {
        /* ... and of keep-4's deletion, with its record; one record per object. */
        assert_true(gone);
        snprintf(key, sizeof(key), "%s/keep-4", ns);
        assert_null(sw_informer_get(inf, key));
        assert_int_equal(live_recs, 2);
        snprintf(key, sizeof(key), "%s/keep-3", ns);
        assert_string_equal(((const struct lease_rec *)sw_informer_get(inf, key))->name, "keep-3");
    }
    sw_informer_free(inf);
    /* Freeing drops the records at once. */
    assert_int_equal(live_recs, 0);
    delete_namespace(&l, c, ns);
    sw_kube_client_free(c);
    lab_close(&l);
}

static void test_gone_relists_and_selectors(void **state)
{
    (void)state;
    gone_relists(false);
}

static void test_gone_relists_records(void **state)
{
    (void)state;
    gone_relists(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gone_relists_and_selectors),
        cmocka_unit_test(test_gone_relists_records),
        cmocka_unit_test(test_watch_resumes_across_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
