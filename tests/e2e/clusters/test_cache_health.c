/*
 * End-to-end: the hub-side pieces on the lab.
 *  - The /readyz prober makes a live cluster Ready, and one whose server
 *    does not answer Unreachable after the threshold, with the reason.
 *  - The per-cluster cache syncs Jobs, GPU Pods and Nodes, tells the
 *    handler about a new GPU Job and its Pod, and its capacity equals the
 *    capacity computed from fresh lists of the same nodes and pods.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "clusters/cache.h"
#include "clusters/health.h"
#include "common/alloc.h"
#include "common/json.h"
#include "lab.h"

struct changes {
    int states;
    enum sw_health_state last;
    char reason[256];
};

static void on_health(struct sw_health_prober *pr, const struct sw_health *h, void *ctx)
{
    (void)pr;
    struct changes *c = ctx;
    c->states++;
    c->last = h->state;
    snprintf(c->reason, sizeof(c->reason), "%s", h->reason);
}

static void test_health_prober(void **state)
{
    (void)state;
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *good = lab_client(&l, "cloud-spot", "-cert", 0);
    assert_non_null(good);
    /* The same credentials aimed at a port nobody listens on. */
    char path[1024];
    snprintf(path, sizeof(path), "%s/cloud-spot-cert.kubeconfig", lab_env("SW_LAB_KUBECONFIG_DIR"));
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(path, NULL, &t, &err), 0);
    sw_free(t->server);
    t->server = sw_strdup("https://127.0.0.12:1");
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = "nowhere";
    struct sw_kube_client *bad = NULL;
    assert_int_equal(sw_kube_client_new(&l.loop, l.http, t, &o, &bad, &err), 0);

    struct sw_health_policy p;
    sw_health_policy_default(&p);
    p.interval_ms = 100;
    struct changes cg = {0}, cb = {0};
    struct sw_health_prober *pg = NULL, *pb = NULL;
    assert_int_equal(sw_health_prober_start(good, &p, on_health, &cg, &pg), 0);
    assert_int_equal(sw_health_prober_start(bad, &p, on_health, &cb, &pb), 0);
    for (int i = 0; i < 100 && (cg.last != SW_HEALTH_READY || cb.last != SW_HEALTH_UNREACHABLE);
         i++)
        lab_run_for(&l, 50);
    assert_int_equal(cg.last, SW_HEALTH_READY);
    assert_string_equal(cg.reason, "/readyz ok");
    assert_int_equal(cb.last, SW_HEALTH_UNREACHABLE);
    /* Degraded after the first failure, Unreachable after the third. */
    assert_int_equal(cb.states, 2);
    assert_non_null(strstr(cb.reason, "3 probes in a row failed"));
    assert_non_null(strstr(cb.reason, "127.0.0.12"));
    const struct sw_health *h = sw_health_prober_health(pb);
    assert_true(h->since_ms > 0);
    sw_health_prober_free(pg);
    sw_health_prober_free(pb);
    sw_kube_client_free(good);
    sw_kube_client_free(bad);
    lab_close(&l);
}

struct keys {
    int job, pod, node;
    char ns[64];
};

static void on_change(struct sw_cluster_cache *cc, enum sw_kube_kind kind, const char *key,
                      void *ctx)
{
    (void)cc;
    struct keys *k = ctx;
    if (kind == SW_KIND_NODE)
        k->node++;
    else if (strncmp(key, k->ns, strlen(k->ns)) == 0 && key[strlen(k->ns)] == '/')
        *(kind == SW_KIND_JOB ? &k->job : &k->pod) += 1;
}

static void capacity_from_lists(struct lab *l, struct sw_kube_client *c,
                                struct sw_gpu_capacity *out)
{
    struct lab_wait wn = {0}, wp = {0};
    struct sw_kube_list_opts lo = {0};
    assert_int_equal(sw_kube_list(c, SW_KIND_NODE, NULL, &lo, lab_on_result, &wn), 0);
    assert_int_equal(sw_kube_list(c, SW_KIND_POD, NULL, &lo, lab_on_result, &wp), 0);
    assert_int_equal(lab_wait(l, &wn), 0);
    assert_int_equal(lab_wait(l, &wp), 0);
    const cJSON *ni = cJSON_GetObjectItem(wn.body, "items"),
                *pi = cJSON_GetObjectItem(wp.body, "items");
    size_t nn = (size_t)cJSON_GetArraySize(ni), np = (size_t)cJSON_GetArraySize(pi), a = 0, b = 0;
    struct sw_node_facts *nf = sw_calloc(nn + 1, sizeof(*nf));
    struct sw_pod_facts *pf = sw_calloc(np + 1, sizeof(*pf));
    const cJSON *it;
    cJSON_ArrayForEach(it, ni) assert_int_equal(sw_node_facts_from_json(it, &nf[a++], NULL), 0);
    cJSON_ArrayForEach(it, pi) assert_int_equal(sw_pod_facts_from_json(it, &pf[b++], NULL), 0);
    assert_int_equal(sw_capacity_compute(nf, a, pf, b, out), 0);
    sw_free(nf);
    sw_free(pf);
    cJSON_Delete(wn.body);
    cJSON_Delete(wp.body);
}

static void test_cache(void **state)
{
    (void)state;
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *c = lab_client(&l, "onprem", "-cert", 0);
    assert_non_null(c);
    struct keys k = {0};
    snprintf(k.ns, sizeof(k.ns), "e2e-cache-%d", (int)getpid());
    struct sw_cluster_cache *cc = NULL;
    assert_int_equal(sw_cluster_cache_start(c, on_change, &k, &cc), 0);
    for (int i = 0; i < 200 && !sw_cluster_cache_synced(cc); i++)
        lab_run_for(&l, 50);
    assert_true(sw_cluster_cache_synced(cc));
    assert_int_equal(k.node, 2); /* the lab's two onprem nodes, from the list */

    char body[1024];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", k.ns);
    cJSON *o = cJSON_Parse(body);
    struct lab_wait w = {0};
    sw_kube_create(c, SW_KIND_NAMESPACE, NULL, o, lab_on_result, &w);
    assert_int_equal(lab_wait(&l, &w), 0);
    cJSON_Delete(w.body);
    cJSON_Delete(o);
    o = cJSON_Parse(
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train\"},\"spec\":"
        "{\"template\":{\"metadata\":{\"annotations\":{\"pod-complete.stage.kwok.x-k8s.io/delay\":"
        "\"600s\"}},\"spec\":{\"restartPolicy\":\"Never\",\"tolerations\":[{\"key\":"
        "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":"
        "[{\"name\":\"t\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/"
        "gpu\":\"2\"}}}]}}}}");
    memset(&w, 0, sizeof(w));
    sw_kube_create(c, SW_KIND_JOB, k.ns, o, lab_on_result, &w);
    if (lab_wait(&l, &w) != 0)
        fail_msg("create job: %s", w.msg);
    cJSON_Delete(w.body);
    cJSON_Delete(o);
    /* The Job and its GPU Pod reach the handler; wait until the pod is bound. */
    struct sw_gpu_capacity a = {0}, b = {0};
    int equal = 0;
    for (int i = 0; i < 300 && !equal; i++) {
        lab_run_for(&l, 100);
        if (k.job == 0 || k.pod == 0)
            continue;
        sw_capacity_free(&a);
        sw_capacity_free(&b);
        assert_int_equal(sw_cluster_cache_capacity(cc, &a), 0);
        capacity_from_lists(&l, c, &b);
        equal = a.npools == 1 && b.npools == 1 && a.pools[0].used >= 2 &&
                a.pools[0].total == b.pools[0].total && a.pools[0].used == b.pools[0].used &&
                a.pools[0].free == b.pools[0].free && a.pending_total == b.pending_total;
    }
    printf("  handler: job=%d pod=%d node=%d; cache: %s free %lld/%lld; lists: free %lld/%lld\n",
           k.job, k.pod, k.node, a.npools ? a.pools[0].key : "-",
           a.npools ? (long long)a.pools[0].free : -1, a.npools ? (long long)a.pools[0].total : -1,
           b.npools ? (long long)b.pools[0].free : -1, b.npools ? (long long)b.pools[0].total : -1);
    assert_true(k.job >= 1);
    assert_true(k.pod >= 1);
    assert_true(equal);
    sw_capacity_free(&a);
    sw_capacity_free(&b);
    struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
    memset(&w, 0, sizeof(w));
    sw_kube_delete(c, SW_KIND_NAMESPACE, NULL, k.ns, &d, lab_on_result, &w);
    lab_wait(&l, &w);
    cJSON_Delete(w.body);
    sw_cluster_cache_free(cc);
    sw_kube_client_free(c);
    lab_close(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_prober),
        cmocka_unit_test(test_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
