/*
 * bench_list.c - listing and decoding Jobs, against kubectl, and the memory
 * per cached object, on the same lab API server in one run.
 *
 *   bench_list [--cluster NAME] [--jobs N] [--runs R] [--cleanup]
 *
 * It makes sure N suspended Jobs exist in namespace "spillway-bench" (they
 * create no pods), then R times: lists every Job in all namespaces with
 * clusters/rest (pages of 500, decoded into cJSON) and runs
 * `kubectl get jobs -A -o json`, timing both and keeping the best run.
 * Then it fills an informer cache with the Jobs, and one with the Nodes and
 * Pods, and reports heap bytes per cached object (glibc mallinfo2, metadata
 * .managedFields stripped as the informer does). Reads the lab's
 * environment (tests/testbed/testbed env).
 */
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clusters/informer.h"
#include "clusters/kubeconfig.h"
#include "clusters/rest.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "net/http.h"

extern char **environ;

#define NS "spillway-bench"

static uv_loop_t loop;
static struct sw_http *http;

struct wait {
    int done;
    int rc;
    char msg[SW_ERROR_MSG_MAX];
    cJSON *body;
};

static void on_result(struct sw_kube_result *res, void *ctx)
{
    struct wait *w = ctx;
    w->done = 1;
    w->rc = res->rc;
    snprintf(w->msg, sizeof(w->msg), "%s", res->err.msg);
    w->body = res->body;
    res->body = NULL;
}

static struct sw_kube_client *client(const char *kubeconfig, const char *name, double qps)
{
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    if (sw_kubeconfig_load(kubeconfig, NULL, &t, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = name;
    o.qps = qps;
    o.burst = (int)qps;
    struct sw_kube_client *c = NULL;
    if (sw_kube_client_new(&loop, http, t, &o, &c, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static int count_jobs(struct sw_kube_client *c)
{
    struct wait w = {0};
    struct sw_kube_list_opts lo = {0};
    sw_kube_list(c, SW_KIND_JOB, NS, &lo, on_result, &w);
    sw_kube_run_until(&loop, &w.done);
    int n = w.rc == 0 ? cJSON_GetArraySize(cJSON_GetObjectItem(w.body, "items")) : 0;
    cJSON_Delete(w.body);
    return n;
}

struct creator {
    struct sw_kube_client *c;
    int next, end, inflight, failed;
};

static void create_one(struct creator *cr);

static void on_created(struct sw_kube_result *res, void *ctx)
{
    struct creator *cr = ctx;
    cr->inflight--;
    if (res->rc != 0 && res->rc != SW_EEXIST && cr->failed++ < 3)
        fprintf(stderr, "bench: create: %s\n", res->err.msg);
    create_one(cr);
}

static void create_one(struct creator *cr)
{
    while (cr->inflight < 64 && cr->next < cr->end) {
        char body[1024];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
                 "\"bench-%05d\",\"labels\":{\"app\":\"bench\",\"team\":\"ml\"},"
                 "\"annotations\":{\"spillway.io/burst\":\"auto\"}},\"spec\":{\"suspend\":true,"
                 "\"parallelism\":1,\"completions\":1,\"template\":{\"metadata\":{\"labels\":"
                 "{\"app\":\"bench\"}},\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
                 "\"name\":\"train\",\"image\":\"registry.example/train:1\",\"resources\":{"
                 "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}",
                 cr->next);
        cJSON *o = cJSON_Parse(body);
        if (sw_kube_create(cr->c, SW_KIND_JOB, NS, o, on_created, cr) == 0)
            cr->inflight++;
        cJSON_Delete(o);
        cr->next++;
    }
}

static void ensure_jobs(struct sw_kube_client *c, int want)
{
    cJSON *ns = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":"
                            "\"" NS "\"}}");
    struct wait w = {0};
    sw_kube_create(c, SW_KIND_NAMESPACE, NULL, ns, on_result, &w);
    sw_kube_run_until(&loop, &w.done);
    cJSON_Delete(w.body);
    cJSON_Delete(ns);
    int have = count_jobs(c);
    if (have >= want)
        return;
    fprintf(stderr, "bench: creating %d Jobs in namespace %s...\n", want - have, NS);
    /* Names are deterministic: existing ones answer AlreadyExists. */
    struct creator cr = {c, 0, want, 0, 0};
    int64_t t0 = sw_mono_ms(sw_clock_system());
    create_one(&cr);
    while (cr.inflight > 0 || cr.next < cr.end)
        uv_run(&loop, UV_RUN_ONCE);
    fprintf(stderr, "bench: created in %.1f s\n",
            (double)(sw_mono_ms(sw_clock_system()) - t0) / 1000.0);
}

/* Pods for the per-object figure: GPU requests like the Pods the cache
 * keeps, but no toleration of the GPU taint, so they stay Pending and use
 * no capacity; deleted again after the measurement. */
struct podmaker {
    struct sw_kube_client *c;
    int next, end, inflight;
    int del;
};

static void pod_step(struct podmaker *pm);

static void on_pod(struct sw_kube_result *res, void *ctx)
{
    (void)res;
    struct podmaker *pm = ctx;
    pm->inflight--;
    pod_step(pm);
}

static void pod_step(struct podmaker *pm)
{
    while (pm->inflight < 64 && pm->next < pm->end) {
        char name[32];
        snprintf(name, sizeof(name), "bench-pod-%04d", pm->next);
        int rc;
        if (pm->del) {
            struct sw_kube_delete_opts d = {.grace_period_s = 0};
            rc = sw_kube_delete(pm->c, SW_KIND_POD, NS, name, &d, on_pod, pm);
        } else {
            char body[1024];
            snprintf(body, sizeof(body),
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                     "\"labels\":{\"app\":\"bench\",\"job-name\":\"bench\"}},\"spec\":{"
                     "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"train\","
                     "\"image\":\"registry.example/train:1\",\"resources\":{\"limits\":{"
                     "\"nvidia.com/gpu\":\"1\"}}}]}}",
                     name);
            cJSON *o = cJSON_Parse(body);
            rc = sw_kube_create(pm->c, SW_KIND_POD, NS, o, on_pod, pm);
            cJSON_Delete(o);
        }
        if (rc == 0)
            pm->inflight++;
        pm->next++;
    }
}

static void pods(struct sw_kube_client *c, int n, int del)
{
    struct podmaker pm = {c, 0, n, 0, del};
    pod_step(&pm);
    while (pm.inflight > 0 || pm.next < pm.end)
        uv_run(&loop, UV_RUN_ONCE);
}

static double list_ours(struct sw_kube_client *c, int *items, size_t *bytes_out)
{
    struct wait w = {0};
    struct sw_kube_list_opts lo = {.limit = 500};
    int64_t t0 = sw_mono_ms(sw_clock_system());
    sw_kube_list(c, SW_KIND_JOB, NULL, &lo, on_result, &w);
    sw_kube_run_until(&loop, &w.done);
    int64_t t1 = sw_mono_ms(sw_clock_system());
    if (w.rc != 0) {
        fprintf(stderr, "bench: list: %s\n", w.msg);
        exit(1);
    }
    *items = cJSON_GetArraySize(cJSON_GetObjectItem(w.body, "items"));
    *bytes_out = 0;
    cJSON_Delete(w.body);
    return (double)(t1 - t0) / 1000.0;
}

static double run_kubectl(const char *kubectl, const char *kubeconfig, int raw, long *maxrss_kb)
{
    char *full[] = {(char *)kubectl,
                    "--kubeconfig",
                    (char *)kubeconfig,
                    "get",
                    "jobs",
                    "-A",
                    "-o",
                    "json",
                    NULL};
    /* The transport alone: one unpaged GET, bytes to /dev/null, no decoding. */
    char *bare[] = {(char *)kubectl,
                    "--kubeconfig",
                    (char *)kubeconfig,
                    "get",
                    "--raw",
                    "/apis/batch/v1/jobs",
                    NULL};
    char **argv = raw ? bare : full;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int64_t t0 = sw_mono_ms(sw_clock_system());
    if (posix_spawn(&pid, kubectl, &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench: cannot run %s\n", kubectl);
        exit(1);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    int64_t t1 = sw_mono_ms(sw_clock_system());
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: kubectl failed\n");
        exit(1);
    }
    *maxrss_kb = ru.ru_maxrss;
    return (double)(t1 - t0) / 1000.0;
}

static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Fills an informer and returns heap bytes per cached object. */
static double per_object(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                         size_t *count)
{
    malloc_trim(0);
    size_t before = heap_used();
    struct sw_informer *inf = NULL;
    struct sw_informer_opts o = {.kind = k, .ns = ns, .page = 500};
    sw_informer_new(c, &o, &inf);
    sw_informer_start(inf);
    while (!sw_informer_synced(inf))
        uv_run(&loop, UV_RUN_ONCE);
    malloc_trim(0);
    size_t after = heap_used();
    *count = sw_informer_count(inf);
    sw_informer_free(inf);
    uv_run(&loop, UV_RUN_NOWAIT);
    return *count ? (double)(after - before) / (double)*count : 0;
}

int main(int argc, char **argv)
{
    const char *cluster = "cloud-ondemand";
    int jobs = 10000, runs = 3, cleanup = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc)
            cluster = argv[++i];
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            jobs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--cleanup") == 0)
            cleanup = 1;
        else {
            fprintf(stderr,
                    "usage: bench_list [--cluster NAME] [--jobs N] [--runs R] [--cleanup]\n");
            return 2;
        }
    }
    const char *dir = getenv("SW_LAB_KUBECONFIG_DIR"), *kubectl = getenv("SW_LAB_KUBECTL");
    if (dir == NULL || kubectl == NULL) {
        fprintf(stderr, "bench: run eval \"$(tests/testbed/testbed env)\" first\n");
        return 2;
    }
    sw_json_init_hooks();
    sw_log_set_level(SW_LOG_ERROR);
    char kc[1024];
    snprintf(kc, sizeof(kc), "%s/%s-cert.kubeconfig", dir, cluster);
    uv_loop_init(&loop);
    sw_http_new(&loop, &http);
    struct sw_kube_client *c = client(kc, cluster, 2000);
    ensure_jobs(c, jobs);

    double best_ours = 1e9, best_kubectl = 1e9, best_raw = 1e9;
    int items = 0;
    long rss = 0;
    for (int r = 0; r < runs; r++) {
        size_t bytes;
        double t = list_ours(c, &items, &bytes);
        if (t < best_ours)
            best_ours = t;
        long kb;
        double k = run_kubectl(kubectl, kc, 0, &kb);
        if (k < best_kubectl)
            best_kubectl = k;
        long kb2;
        double kr = run_kubectl(kubectl, kc, 1, &kb2);
        if (kr < best_raw)
            best_raw = kr;
        if (kb > rss)
            rss = kb;
    }
    size_t njobs, nnodes, npods;
    double job_bytes = per_object(c, SW_KIND_JOB, NS, &njobs);
    double node_bytes = per_object(c, SW_KIND_NODE, NULL, &nnodes);
    pods(c, 500, 0);
    double pod_bytes = per_object(c, SW_KIND_POD, NS, &npods);
    pods(c, 500, 1);
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    printf("cluster %s, %d Jobs in all namespaces, best of %d runs\n", cluster, items, runs);
    printf("  list+decode, clusters/rest (pages of 500): %7.3f s  (%.0f Jobs/s)\n", best_ours,
           items / best_ours);
    printf("  kubectl get jobs -A -o json:               %7.3f s  (%.0f Jobs/s, max RSS %ld MiB)\n",
           best_kubectl, items / best_kubectl, rss / 1024);
    printf("  kubectl get --raw (transport only, no decode): %5.3f s\n", best_raw);
    printf("  this process max RSS: %ld MiB\n", self.ru_maxrss / 1024);
    printf("memory per cached object (heap, managedFields stripped):\n");
    printf("  Job:  %7.0f bytes  (%zu cached)\n", job_bytes, njobs);
    printf("  Node: %7.0f bytes  (%zu cached)\n", node_bytes, nnodes);
    printf("  Pod:  %7.0f bytes  (%zu cached)\n", pod_bytes, npods);
    if (cleanup) {
        /* The namespace goes, and its Jobs with it (asynchronously). */
        struct wait w = {0};
        struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
        sw_kube_delete(c, SW_KIND_NAMESPACE, NULL, NS, &d, on_result, &w);
        sw_kube_run_until(&loop, &w.done);
        cJSON_Delete(w.body);
        printf("namespace %s deleted\n", NS);
    }
    sw_kube_client_free(c);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 0;
}
