/*
 * informer_side.c - spillway's side of the informer benchmark, and its
 * load (bench/clusters/bench_informer.sh runs it; not a bench_* program of
 * its own because the load needs the lab's hub lock and the peer):
 *
 *   informer_side load KUBECONFIG NAMESPACE JOBS PODS
 *   informer_side measure KUBECONFIG
 *   informer_side measure-hub KUBECONFIG...
 *   informer_side unload KUBECONFIG NAMESPACE
 *   informer_side load-nodes KUBECONFIG NODES
 *   informer_side unload-nodes KUBECONFIG NODES
 *
 * load: creates JOBS suspended Jobs (no pods; managed by another
 * controller) in NAMESPACE and PODS one-GPU Pods held Pending by a
 * scheduling gate, with a node selector no node has (so no pool counts them
 * as pending), in NAMESPACE-pods, 64 requests in flight, no client-side
 * rate limit. Names are deterministic; existing ones are kept. Both keep
 * the cluster's controllers idle (see job_fmt and pods_namespace).
 *
 * measure: the hub's cache as the hub runs it (clusters/cache.h: informers
 * on Jobs, Nodes, and non-terminal Pods requesting GPUs; managedFields
 * stripped; the REST client's defaults, QPS 50, burst 100, pages of 500),
 * timed from loading the kubeconfig to all three synced. Prints one line
 * of key=value figures: the time, the objects cached, heap in use (glibc
 * mallinfo2 after malloc_trim) per cached object, and the process's RSS.
 *
 * measure-hub: as the hub runs it with several members: one client and one
 * cache per kubeconfig on one loop, timed to all synced; prints the totals
 * and the process's RSS and peak RSS (VmHWM).
 *
 * unload: deletes both namespaces and waits until they are gone (at most
 * 10 minutes each), so the load is over when it returns.
 *
 * load-nodes: NODES eight-GPU Node objects (spillway-bench-node-NNNN,
 * label spillway.io/bench=informer, a zone of their own), cordoned and
 * tainted, with no kwok annotation: no kubelet nor kwok runs them, so they
 * stay NotReady, nothing is scheduled there and no pool counts them (they
 * are excluded as not Ready), but each is a full Node object in every
 * cache. unload-nodes deletes them.
 */
#include <malloc.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusters/cache.h"
#include "clusters/kubeconfig.h"
#include "clusters/rest.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "net/http.h"

static uv_loop_t loop;
static struct sw_http *http;

static double now_s(void)
{
    return (double)sw_mono_ms(sw_clock_system()) / 1000.0;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return 0;
    char line[256];
    long v = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmRSS:", 6) == 0) {
            v = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static size_t heap_used(void)
{
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static struct sw_kube_client *client(const char *kubeconfig, double qps, int burst)
{
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    if (sw_kubeconfig_load(kubeconfig, NULL, &t, &err) != 0) {
        fprintf(stderr, "informer_side: %s\n", err.msg);
        exit(1);
    }
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = "bench";
    if (qps >= 0) {
        o.qps = qps;
        o.burst = burst;
    }
    struct sw_kube_client *c = NULL;
    if (sw_kube_client_new(&loop, http, t, &o, &c, &err) != 0) {
        fprintf(stderr, "informer_side: %s\n", err.msg);
        exit(1);
    }
    return c;
}

struct wait {
    int done, rc;
    char msg[SW_ERROR_MSG_MAX];
};

static void on_result(struct sw_kube_result *res, void *ctx)
{
    struct wait *w = ctx;
    w->done = 1;
    w->rc = res->rc;
    snprintf(w->msg, sizeof(w->msg), "%s", res->err.msg);
}

/* ---- load ---------------------------------------------------------------- */

struct creator {
    struct sw_kube_client *c;
    const char *ns;
    enum sw_kube_kind kind;
    int next, end, inflight, failed;
};

static void create_more(struct creator *cr);

static void on_created(struct sw_kube_result *res, void *ctx)
{
    struct creator *cr = ctx;
    cr->inflight--;
    if (res->rc != 0 && res->rc != SW_EEXIST && cr->failed++ < 3)
        fprintf(stderr, "informer_side: create: %s\n", res->err.msg);
    create_more(cr);
}

/* A Job as a team submits it, created suspended so that it makes no pods,
 * and managed by another controller (spec.managedBy), so that the cluster's
 * job controller leaves it alone: otherwise it works through 10,000
 * suspended Jobs (a condition and an Event each, at its 20 requests a
 * second) for a quarter of an hour, a core busy under every round. */
static const char job_fmt[] =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train-%05d\","
    "\"labels\":{\"app\":\"train\",\"team\":\"ml\"},\"annotations\":{\"example.com/owner\":"
    "\"team-ml\"}},\"spec\":{\"suspend\":true,\"managedBy\":\"spillway.io/bench\","
    "\"parallelism\":1,\"completions\":1,"
    "\"backoffLimit\":0,\"template\":{\"metadata\":{\"labels\":{\"app\":\"train\"}},\"spec\":{"
    "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"train\",\"image\":"
    "\"registry.example/train:1\",\"args\":[\"--epochs\",\"3\"],\"resources\":{\"limits\":{"
    "\"nvidia.com/gpu\":\"1\"}}}]}}}}";

/* A Job's pod, held by a scheduling gate (the scheduler leaves it alone and
 * kwok never sees it bound) and selecting no node. */
static const char pod_fmt[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-%05d-0\","
    "\"labels\":{\"app\":\"train\",\"job-name\":\"train-%05d\",\"batch.kubernetes.io/"
    "job-name\":\"train-%05d\"}},\"spec\":{\"restartPolicy\":\"Never\",\"schedulingGates\":[{"
    "\"name\":\"spillway.io/bench\"}],\"nodeSelector\":{\"spillway.io/bench\":\"none\"},"
    "\"containers\":[{\"name\":\"train\",\"image\":\"registry.example/train:1\",\"args\":["
    "\"--epochs\",\"3\"],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}";

/* A GPU node as a cloud provider registers it, but cordoned, tainted and
 * never run (no kwok annotation). */
static const char node_fmt[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
    "\"spillway-bench-node-%04d\",\"labels\":{\"spillway.io/bench\":\"informer\","
    "\"kubernetes.io/hostname\":\"spillway-bench-node-%04d\",\"kubernetes.io/os\":\"linux\","
    "\"kubernetes.io/arch\":\"amd64\",\"node.kubernetes.io/instance-type\":\"p4d.24xlarge\","
    "\"topology.kubernetes.io/region\":\"bench\",\"topology.kubernetes.io/zone\":\"bench-a\","
    "\"karpenter.sh/capacity-type\":\"on-demand\",\"nvidia.com/gpu.product\":"
    "\"NVIDIA-A100-SXM4-40GB\",\"nvidia.com/gpu.memory\":\"40960\"}},\"spec\":{"
    "\"unschedulable\":true,\"taints\":[{\"key\":\"spillway.io/bench\",\"value\":"
    "\"informer\",\"effect\":\"NoSchedule\"}]},\"status\":{\"capacity\":{\"cpu\":\"96\","
    "\"memory\":\"1152Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"allocatable\":{"
    "\"cpu\":\"95\",\"memory\":\"1100Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"}}}";

static void create_more(struct creator *cr)
{
    while (cr->inflight < 64 && cr->next < cr->end) {
        char body[2048];
        int i = cr->next++;
        if (cr->kind == SW_KIND_JOB)
            snprintf(body, sizeof(body), job_fmt, i);
        else if (cr->kind == SW_KIND_NODE)
            snprintf(body, sizeof(body), node_fmt, i, i);
        else
            snprintf(body, sizeof(body), pod_fmt, i, i, i);
        cJSON *o = cJSON_Parse(body);
        if (o != NULL && sw_kube_create(cr->c, cr->kind, cr->ns, o, on_created, cr) == 0)
            cr->inflight++;
        cJSON_Delete(o);
    }
}

static int create_all(struct sw_kube_client *c, const char *ns, enum sw_kube_kind k, int n)
{
    struct creator cr = {.c = c, .ns = ns, .kind = k, .end = n};
    double t0 = now_s();
    create_more(&cr);
    while (cr.inflight > 0 || cr.next < cr.end)
        uv_run(&loop, UV_RUN_ONCE);
    fprintf(stderr, "informer_side: %d %s in %.1f s (%d failed)\n", n,
            k == SW_KIND_JOB    ? "Jobs"
            : k == SW_KIND_NODE ? "Nodes"
                                : "Pods",
            now_s() - t0, cr.failed);
    return cr.failed ? 1 : 0;
}

/* Creates namespace `ns`; an existing one is fine. */
static int make_namespace(struct sw_kube_client *c, const char *ns)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    cJSON *o = cJSON_Parse(body);
    struct wait w = {0};
    sw_kube_create(c, SW_KIND_NAMESPACE, NULL, o, on_result, &w);
    sw_kube_run_until(&loop, &w.done);
    cJSON_Delete(o);
    if (w.rc != 0 && w.rc != SW_EEXIST) {
        fprintf(stderr, "informer_side: namespace %s: %s\n", ns, w.msg);
        return 1;
    }
    return 0;
}

/* The Pods live in a namespace of their own (NS-pods): they have no owner,
 * and for each such Pod the cluster's job controller looks at every Job of
 * its namespace (GetPodJobs), 10,000 x 10,000 label selectors, a core
 * busy for minutes under every round. */
static void pods_namespace(const char *ns, char *out, size_t n)
{
    snprintf(out, n, "%s-pods", ns);
}

static int load(const char *kc, const char *ns, int jobs, int pods)
{
    struct sw_kube_client *c = client(kc, 0, 0);
    char pns[256];
    pods_namespace(ns, pns, sizeof(pns));
    if (make_namespace(c, ns) != 0 || make_namespace(c, pns) != 0)
        return 1;
    int rc = create_all(c, ns, SW_KIND_JOB, jobs) | create_all(c, pns, SW_KIND_POD, pods);
    sw_kube_client_free(c);
    return rc;
}

/* Deletes namespace `ns` and waits until it is gone (at most 10 minutes). */
static int drop_namespace(struct sw_kube_client *c, const char *ns)
{
    struct wait w = {0};
    struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
    sw_kube_delete(c, SW_KIND_NAMESPACE, NULL, ns, &d, on_result, &w);
    sw_kube_run_until(&loop, &w.done);
    if (w.rc != 0 && w.rc != SW_ENOENT) {
        fprintf(stderr, "informer_side: delete namespace %s: %s\n", ns, w.msg);
        return 1;
    }
    double t0 = now_s();
    for (;;) {
        struct wait g = {0};
        sw_kube_get(c, SW_KIND_NAMESPACE, NULL, ns, on_result, &g);
        sw_kube_run_until(&loop, &g.done);
        if (g.rc == SW_ENOENT)
            break;
        if (now_s() - t0 > 600) {
            fprintf(stderr, "informer_side: namespace %s still there after 10 minutes\n", ns);
            return 1;
        }
        sleep(2);
    }
    fprintf(stderr, "informer_side: namespace %s gone in %.1f s\n", ns, now_s() - t0);
    return 0;
}

static int unload(const char *kc, const char *ns)
{
    struct sw_kube_client *c = client(kc, -1, 0);
    char pns[256];
    pods_namespace(ns, pns, sizeof(pns));
    int rc = drop_namespace(c, pns) | drop_namespace(c, ns);
    sw_kube_client_free(c);
    return rc;
}

static int load_nodes(const char *kc, int n)
{
    struct sw_kube_client *c = client(kc, 0, 0);
    int rc = create_all(c, NULL, SW_KIND_NODE, n);
    sw_kube_client_free(c);
    return rc;
}

/* Deletes the bench's Nodes, 64 at a time; gone ones are fine. */
static int unload_nodes(const char *kc, int n)
{
    struct sw_kube_client *c = client(kc, 0, 0);
    struct wait *w = sw_calloc((size_t)(n > 0 ? n : 1), sizeof(*w));
    struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
    int failed = 0, next = 0, done = 0;
    char name[64];
    while (done < n) {
        while (next < n && next - done < 64) {
            snprintf(name, sizeof(name), "spillway-bench-node-%04d", next);
            sw_kube_delete(c, SW_KIND_NODE, NULL, name, &d, on_result, &w[next]);
            next++;
        }
        uv_run(&loop, UV_RUN_ONCE);
        while (done < next && w[done].done) {
            if (w[done].rc != 0 && w[done].rc != SW_ENOENT && failed++ < 3)
                fprintf(stderr, "informer_side: delete node: %s\n", w[done].msg);
            done++;
        }
    }
    fprintf(stderr, "informer_side: %d Nodes deleted (%d failed)\n", n, failed);
    sw_free(w);
    sw_kube_client_free(c);
    return failed ? 1 : 0;
}

/* ---- measure ------------------------------------------------------------- */

static void on_change(struct sw_cluster_cache *cc, enum sw_kube_kind kind, const char *key,
                      void *ctx)
{
    (void)cc;
    (void)kind;
    (void)key;
    (*(size_t *)ctx)++;
}

/* CPU seconds this process used (user + system): with the wall time, how
 * much of the sync was ours and how much waiting for the server. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int measure(const char *kc)
{
    size_t heap0 = heap_used();
    long rss0 = rss_kib();
    size_t events = 0;
    double t0 = now_s();
    struct sw_kube_client *c = client(kc, -1, 0);
    struct sw_cluster_cache *cc = NULL;
    if (sw_cluster_cache_start(c, on_change, &events, &cc) != 0) {
        fprintf(stderr, "informer_side: cache did not start\n");
        return 1;
    }
    /* When each informer synced: which list the time waits for. */
    static const enum sw_kube_kind kinds[3] = {SW_KIND_JOB, SW_KIND_POD, SW_KIND_NODE};
    double at[3] = {0, 0, 0};
    while (!sw_cluster_cache_synced(cc)) {
        uv_run(&loop, UV_RUN_ONCE);
        for (int k = 0; k < 3; k++)
            if (at[k] == 0 && sw_informer_synced(sw_cluster_cache_informer(cc, kinds[k])))
                at[k] = now_s() - t0;
    }
    double synced = now_s() - t0;
    size_t nj = sw_informer_count(sw_cluster_cache_informer(cc, SW_KIND_JOB));
    size_t np = sw_informer_count(sw_cluster_cache_informer(cc, SW_KIND_POD));
    size_t nn = sw_informer_count(sw_cluster_cache_informer(cc, SW_KIND_NODE));
    size_t heap1 = heap_used();
    long rss1 = rss_kib();
    double n = (double)(nj + np + nn);
    printf("side=spillway synced_s=%.3f cpu_s=%.3f jobs_s=%.3f pods_s=%.3f nodes_s=%.3f "
           "jobs=%zu pods=%zu nodes=%zu "
           "heap_inuse_per_obj=%.0f heap_inuse_mib=%.1f rss_mib=%.1f rss_delta_per_obj=%.0f\n",
           synced, cpu_s(), at[0], at[1], at[2], nj, np, nn, (double)(heap1 - heap0) / n,
           (double)heap1 / 1048576.0, (double)rss1 / 1024.0, (double)(rss1 - rss0) * 1024.0 / n);
    sw_cluster_cache_free(cc);
    sw_kube_client_free(c);
    return 0;
}

static long hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

#define MAX_MEMBERS 8

static int measure_hub(int n, char **kcs)
{
    size_t heap0 = heap_used();
    size_t events = 0;
    double t0 = now_s();
    struct sw_kube_client *c[MAX_MEMBERS];
    struct sw_cluster_cache *cc[MAX_MEMBERS];
    for (int i = 0; i < n; i++) {
        c[i] = client(kcs[i], -1, 0);
        if (sw_cluster_cache_start(c[i], on_change, &events, &cc[i]) != 0) {
            fprintf(stderr, "informer_side: cache %s did not start\n", kcs[i]);
            return 1;
        }
    }
    for (int i = 0; i < n; i++)
        while (!sw_cluster_cache_synced(cc[i]))
            uv_run(&loop, UV_RUN_ONCE);
    double synced = now_s() - t0;
    size_t nj = 0, np = 0, nn = 0;
    for (int i = 0; i < n; i++) {
        nj += sw_informer_count(sw_cluster_cache_informer(cc[i], SW_KIND_JOB));
        np += sw_informer_count(sw_cluster_cache_informer(cc[i], SW_KIND_POD));
        nn += sw_informer_count(sw_cluster_cache_informer(cc[i], SW_KIND_NODE));
    }
    size_t heap1 = heap_used();
    printf("side=spillway-hub clusters=%d synced_s=%.3f jobs=%zu pods=%zu nodes=%zu "
           "heap_inuse_mib=%.1f heap_per_obj=%.0f rss_mib=%.1f peak_rss_mib=%.1f\n",
           n, synced, nj, np, nn, (double)heap1 / 1048576.0,
           (double)(heap1 - heap0) / (double)(nj + np + nn), (double)rss_kib() / 1024.0,
           (double)hwm_kib() / 1024.0);
    for (int i = 0; i < n; i++) {
        sw_cluster_cache_free(cc[i]);
        sw_kube_client_free(c[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    sw_json_init_hooks();
    sw_log_set_level(SW_LOG_ERROR);
    uv_loop_init(&loop);
    sw_http_new(&loop, &http);
    int rc;
    if (argc == 6 && strcmp(argv[1], "load") == 0)
        rc = load(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
    else if (argc == 3 && strcmp(argv[1], "measure") == 0)
        rc = measure(argv[2]);
    else if (argc >= 3 && argc - 2 <= MAX_MEMBERS && strcmp(argv[1], "measure-hub") == 0)
        rc = measure_hub(argc - 2, argv + 2);
    else if (argc == 4 && strcmp(argv[1], "unload") == 0)
        rc = unload(argv[2], argv[3]);
    else if (argc == 4 && strcmp(argv[1], "load-nodes") == 0)
        rc = load_nodes(argv[2], atoi(argv[3]));
    else if (argc == 4 && strcmp(argv[1], "unload-nodes") == 0)
        rc = unload_nodes(argv[2], atoi(argv[3]));
    else {
        fprintf(stderr, "usage: informer_side load KUBECONFIG NAMESPACE JOBS PODS\n"
                        "       informer_side measure KUBECONFIG\n"
                        "       informer_side measure-hub KUBECONFIG...\n"
                        "       informer_side unload KUBECONFIG NAMESPACE\n"
                        "       informer_side load-nodes KUBECONFIG NODES\n"
                        "       informer_side unload-nodes KUBECONFIG NODES\n");
        return 2;
    }
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc;
}
