/*
 * hub_load.c - creates N one-GPU Jobs at once through spillway's own REST
 * client, for the hub benchmark (bench/hub/bench_hub.sh):
 *
 *   hub_load KUBECONFIG NAMESPACE COUNT burstable|delegated|plain QPS BURST [QUEUE]
 *
 * "burstable" Jobs carry spillway.io/burst: auto (the load the hub
 * dispatches once their pods are Unschedulable at home); "delegated" ones
 * also spec.managedBy: spillway.io/hub (no pods at home); "plain" ones do not (the ceiling: the
 * same Jobs created directly on the cloud cluster by one client with the hub's rate limits). The
 * plain Jobs are created suspended, so that the ceiling measures the API's create path and leaves
 * no pods behind. QPS 0 means no client-side limit (the users submitting). Prints one line per Job,
 * "NAME CREATED_UNIX_MS", then on stderr the count, the seconds and the rate. Every Job's pod holds
 * its GPU for an hour in the lab. The first line on stderr is "sending from UNIX_MS", when the
 * first create is sent. With QUEUE (the Kueue benchmark, bench/kueue/bench_kueue.sh) every Job
 * carries the label kueue.x-k8s.io/queue-name: QUEUE and is created unsuspended, plain ones too:
 * Kueue's webhook suspends it, as it does a user's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "clusters/kubeconfig.h"
#include "clusters/rest.h"
#include "common/json.h"

struct load {
    int done, ok, failed, total, retried;
    int64_t *t_ms;
    uv_loop_t loop;
    int all_done;
};

struct one {
    struct load *l;
    int i;
    int tries;
    struct sw_kube_client *c;
    const char *ns;
    cJSON *job; /* kept to send again after a transport failure */
    int retried;
};

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void on_created(struct sw_kube_result *res, void *ctx)
{
    struct one *o = ctx;
    struct load *l = o->l;
    /* A create that never reached the server (no HTTP status: a TLS
     * handshake timed out on a busy API server) is sent again, as a user's
     * client would, up to 3 times; one that reached it after all answers
     * AlreadyExists then, and counts as created. */
    if (res->rc != 0 && res->status == 0 && o->tries < 3) {
        o->tries++;
        l->retried++;
        if (sw_kube_create(o->c, SW_KIND_JOB, o->ns, o->job, on_created, o) == 0)
            return;
    }
    if (res->rc == 0 || (o->tries > 0 && res->status == 409)) {
        l->ok++;
        l->t_ms[o->i] = now_ms();
    } else {
        l->failed++;
        if (l->failed < 5)
            fprintf(stderr, "hub_load: %s\n", res->err.msg);
    }
    cJSON_Delete(o->job);
    free(o);
    if (++l->done == l->total)
        l->all_done = 1;
}

static void on_ns(struct sw_kube_result *res, void *ctx)
{
    int *done = ctx;
    (void)res;
    *done = 1;
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: hub_load KUBECONFIG NAMESPACE COUNT burstable|delegated|plain QPS "
                        "BURST [QUEUE]\n");
        return 2;
    }
    const char *ns = argv[2];
    int n = atoi(argv[3]);
    int delegated = strcmp(argv[4], "delegated") == 0;
    int burstable = delegated || strcmp(argv[4], "burstable") == 0;
    const char *queue = argc == 8 ? argv[7] : NULL;
    struct load l = {.total = n};
    l.t_ms = calloc((size_t)n, sizeof(*l.t_ms));
    uv_loop_init(&l.loop);
    sw_json_init_hooks();
    struct sw_http *http = NULL;
    struct sw_error err = {0};
    struct sw_kube_target *t = NULL;
    if (n <= 0 || sw_http_new(&l.loop, &http) != 0 ||
        sw_kubeconfig_load(argv[1], NULL, &t, &err) != 0 ||
        sw_kube_target_load_files(t, &err) != 0) {
        fprintf(stderr, "hub_load: %s\n", err.msg[0] ? err.msg : "bad arguments");
        return 1;
    }
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = "load";
    o.qps = atof(argv[5]);
    o.burst = atoi(argv[6]);
    struct sw_kube_client *c = NULL;
    if (sw_kube_client_new(&l.loop, http, t, &o, &c, &err) != 0) {
        fprintf(stderr, "hub_load: %s\n", err.msg);
        return 1;
    }
    cJSON *nso = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{}}");
    cJSON_AddStringToObject(cJSON_GetObjectItem(nso, "metadata"), "name", ns);
    int nsdone = 0;
    sw_kube_create(c, SW_KIND_NAMESPACE, NULL, nso, on_ns, &nsdone);
    sw_kube_run_until(&l.loop, &nsdone);
    cJSON_Delete(nso);

    const char *tpl =
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"annotations\":{}},"
        "\"spec\":{\"backoffLimit\":0,\"template\":{\"metadata\":{\"annotations\":"
        "{\"pod-complete.stage.kwok.x-k8s.io/delay\":\"3600s\"}},\"spec\":{\"restartPolicy\":"
        "\"Never\",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
        "\"effect\":\"NoSchedule\"},{\"key\":\"spillway.io/spot\",\"operator\":\"Exists\","
        "\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"train\",\"image\":"
        "\"registry.example/train:1\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}";
    int64_t t0 = now_ms();
    /* When the first create is sent: a rate measured from the first
     * answer would leave out the server's first answer time, which the
     * ceiling's own rate (from t0) counts. */
    fprintf(stderr, "sending from %lld\n", (long long)t0);
    for (int i = 0; i < n; i++) {
        cJSON *job = cJSON_Parse(tpl);
        char name[32];
        snprintf(name, sizeof(name), "job-%05d", i);
        cJSON *md = cJSON_GetObjectItem(job, "metadata");
        cJSON_AddStringToObject(md, "name", name);
        if (delegated)
            cJSON_AddStringToObject(cJSON_GetObjectItem(job, "spec"), "managedBy",
                                    "spillway.io/hub");
        if (!burstable && !queue)
            cJSON_AddBoolToObject(cJSON_GetObjectItem(job, "spec"), "suspend", 1);
        if (queue) {
            cJSON *lbl = cJSON_AddObjectToObject(md, "labels");
            cJSON_AddStringToObject(lbl, "kueue.x-k8s.io/queue-name", queue);
        }
        if (burstable) {
            cJSON *ann = cJSON_GetObjectItem(md, "annotations");
            cJSON_AddStringToObject(ann, "spillway.io/burst", "auto");
            cJSON_AddStringToObject(ann, "spillway.io/expected-runtime", "1h");
        }
        struct one *one = calloc(1, sizeof(*one));
        one->l = &l;
        one->i = i;
        one->c = c;
        one->ns = ns;
        one->job = job;
        if (sw_kube_create(c, SW_KIND_JOB, ns, job, on_created, one) != 0) {
            free(one);
            cJSON_Delete(job);
            l.failed++;
            l.done++;
        }
    }
    if (l.done < n)
        sw_kube_run_until(&l.loop, &l.all_done);
    double secs = (double)(now_ms() - t0) / 1000.0;
    for (int i = 0; i < n; i++)
        if (l.t_ms[i])
            printf("job-%05d %lld\n", i, (long long)l.t_ms[i]);
    fprintf(stderr, "created %d of %d Jobs in %.3f s: %.1f Jobs/s (%d failed, %d sent again)\n",
            l.ok, n, secs, l.ok / secs, l.failed, l.retried);
    sw_kube_client_free(c);
    sw_http_free(http);
    uv_run(&l.loop, UV_RUN_DEFAULT);
    return l.failed ? 1 : 0;
}
