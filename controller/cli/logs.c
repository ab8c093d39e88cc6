/*
 * logs.c - `spillctl logs CLUSTER/NAMESPACE/JOB [-f] [--attempt N]`: the
 * logs of a Job's pod wherever the Job runs now, as `kubectl logs` would
 * print them on that cluster.
 *
 * The origin Job is resolved to where it runs through the hub's record in
 * Redis: the current attempt's mirror on its target cluster (an earlier
 * attempt's from the record's stale mirrors), or the origin Job itself
 * when it was never sent away. The member's connection is opened from the
 * cluster registry with the sealing key; the pods are found by the
 * batch.kubernetes.io/job-name label, and the newest one's `log`
 * subresource is printed, or followed (follow=true) until it ends or
 * Ctrl-C. Read-only: nothing is written anywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/registry.h"
#include "clusters/rest.h"
#include "common/json.h"
#include "controller/cli/commands.h"
#include "controller/hub/jobrec.h"
#include "controller/hub/mirror.h"
#include "net/http.h"
#include "store/redis.h"

enum { OPT_FOLLOW = 'f', OPT_ATTEMPT = 'a', OPT_CONTAINER = 'c', OPT_TAIL = 't' };

/* Where the logs are: a Job on a member cluster. */
struct where {
    char cluster[64];
    char ns[64];
    char job[64];
    int attempt;
};

/* Reads one Redis string key into a new cJSON; 0, SW_ENOENT or an error. */
static int get_json(redisContext *c, const char *key, const char *what, cJSON **out,
                    struct sw_error *err)
{
    redisReply *v = NULL;
    *out = NULL;
    if (sw_redis_sync_command(c, &v, err, "GET %s", key) != 0)
        return err->code ? err->code : SW_EIO;
    int rc =
        v->type == REDIS_REPLY_STRING ? sw_json_parse(v->str, v->len, what, out, err) : SW_ENOENT;
    freeReplyObject(v);
    return rc;
}

/*
 * Resolves the origin `key` to the Job whose pods hold attempt `attempt`'s
 * logs (0: the current one). Returns 0, or SW_ENOENT / SW_EINVAL with a
 * message saying what is missing.
 */
static int resolve(redisContext *c, const char *key, int attempt, struct where *w,
                   struct sw_error *err)
{
    char rkey[320];
    snprintf(rkey, sizeof(rkey), "%s%s", SW_KEY_JOB, key);
    cJSON *o = NULL;
    int rc = get_json(c, rkey, key, &o, err);
    if (rc == SW_ENOENT)
        return sw_error_set(err, SW_ENOENT,
                            "no Job %s is managed by the hub (spillctl status lists them)", key);
    if (rc != 0)
        return rc;
    struct sw_job_rec r;
    rc = sw_job_rec_from_json(o, &r, err);
    cJSON_Delete(o);
    if (rc != 0)
        return rc;
    snprintf(w->ns, sizeof(w->ns), "%s", r.ns);
    if (attempt == 0)
        attempt = r.attempt;
    w->attempt = attempt;
    if (attempt == 0 || (attempt == r.attempt && r.mirror[0] == '\0')) {
        /* Never sent away: the origin Job runs (or waits) at home. */
        snprintf(w->cluster, sizeof(w->cluster), "%s", r.cluster);
        snprintf(w->job, sizeof(w->job), "%s", r.name);
        return 0;
    }
    if (attempt > r.attempt)
        return sw_error_set(err, SW_ENOENT, "%s: --attempt %d: the Job has had %d attempt%s", key,
                            attempt, r.attempt, r.attempt == 1 ? "" : "s");
    if (attempt == r.attempt) {
        snprintf(w->cluster, sizeof(w->cluster), "%s", r.target_cluster);
        snprintf(w->job, sizeof(w->job), "%s", r.mirror);
        return 0;
    }
    for (int i = 0; i < r.nstale; i++)
        if (r.stale[i].attempt == attempt) {
            snprintf(w->cluster, sizeof(w->cluster), "%s", r.stale[i].cluster);
            snprintf(w->job, sizeof(w->job), "%s", r.stale[i].name);
            return 0;
        }
    return sw_error_set(err, SW_ENOENT,
                        "%s: --attempt %d: the hub no longer records where attempt %d ran (only "
                        "the current attempt, %d, and mirrors still to clean up are kept)",
                        key, attempt, attempt, r.attempt);
}

/* Opens a client for member `name` from the registry, with the sealing key. */
static int open_member(const struct sw_cli_globals *g, redisContext *c, uv_loop_t *loop,
                       struct sw_http *http, const char *name, struct sw_kube_client **out,
                       struct sw_error *err)
{
    char key[160];
    snprintf(key, sizeof(key), "%s%s", SW_REGISTRY_PREFIX, name);
    redisReply *v = NULL;
    if (sw_redis_sync_command(c, &v, err, "GET %s", key) != 0)
        return err->code ? err->code : SW_EIO;
    if (v->type != REDIS_REPLY_STRING) {
        freeReplyObject(v);
        return sw_error_set(err, SW_ENOENT,
                            "cluster %s is not registered (spillctl cluster list shows those that "
                            "are)",
                            name);
    }
    struct sw_cluster_record rec;
    memset(&rec, 0, sizeof(rec));
    int rc = sw_cluster_record_from_json(v->str, v->len, key, &rec, err);
    freeReplyObject(v);
    struct sw_seal_key *seal = NULL;
    struct sw_kube_target *t = NULL;
    if (rc == 0)
        rc = sw_cli_secret_key(g, &seal, err);
    if (rc == 0)
        rc = sw_cluster_record_open(&rec, seal, &t, err);
    sw_seal_key_free(seal);
    sw_cluster_record_clear(&rec);
    if (rc != 0)
        return rc;
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = name;
    o.max_retries = 2;
    o.max_body = 256u << 20; /* a log without -f is read whole */
    return sw_kube_client_new(loop, http, t, &o, out, err);
}

struct call {
    int done;
    int rc;
    long status;
    struct sw_error err;
    cJSON *body;
    const char *raw; /* valid in the callback only: printed there */
    int print;
};

static void on_result(struct sw_kube_result *res, void *ctx)
{
    struct call *k = ctx;
    k->done = 1;
    k->rc = res->rc;
    k->status = res->status;
    k->err = res->err;
    k->body = res->body;
    res->body = NULL;
    if (res->rc == 0 && k->print && res->raw != NULL)
        fwrite(res->raw, 1, res->raw_len, stdout);
    /* A raw request's error body is not parsed for its message: add the
     * Status's message (or the body's start) to the error. */
    if (res->rc != 0 && res->raw != NULL && res->raw_len > 0) {
        cJSON *st = cJSON_ParseWithLength(res->raw, res->raw_len);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "message");
        size_t used = strlen(k->err.msg);
        while (used > 0 && k->err.msg[used - 1] == ' ')
            k->err.msg[--used] = '\0';
        if (cJSON_IsString(m))
            snprintf(k->err.msg + used, sizeof(k->err.msg) - used, "%s%s", used ? ": " : "",
                     m->valuestring);
        else
            snprintf(k->err.msg + used, sizeof(k->err.msg) - used, "%s%.*s", used ? ": " : "",
                     (int)(res->raw_len > 300 ? 300 : res->raw_len), res->raw);
        cJSON_Delete(st);
    }
}

static int on_chunk(const char *data, size_t len, void *ctx)
{
    (void)ctx;
    fwrite(data, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* The newest pod of the list (by creationTimestamp, then name), or NULL. */
static const cJSON *newest_pod(const cJSON *list)
{
    const cJSON *best = NULL, *p;
    const char *best_ts = "", *best_name = "";
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(list, "items"))
    {
        const cJSON *ts = sw_json_path(p, "metadata.creationTimestamp");
        const cJSON *nm = sw_json_path(p, "metadata.name");
        const char *t = cJSON_IsString(ts) ? ts->valuestring : "";
        const char *n = cJSON_IsString(nm) ? nm->valuestring : "";
        int c = strcmp(t, best_ts);
        if (best == NULL || c > 0 || (c == 0 && strcmp(n, best_name) > 0)) {
            best = p;
            best_ts = t;
            best_name = n;
        }
    }
    return best;
}

static int run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    const char *key = a->pos[0];
    const char *s1 = strchr(key, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (s1 == NULL || s2 == NULL || strchr(s2 + 1, '/') != NULL || s1 == key || s2 == s1 + 1 ||
        s2[1] == '\0') {
        fprintf(stderr, "spillctl logs: \"%s\": expected CLUSTER/NAMESPACE/JOB\n", key);
        return SW_EXIT_USAGE;
    }
    int attempt = 0;
    const char *as = sw_cli_arg(a, OPT_ATTEMPT);
    if (as != NULL) {
        char *end;
        long v = strtol(as, &end, 10);
        if (end == as || *end != '\0' || v < 1 || v > 1000000) {
            fprintf(stderr, "spillctl logs: --attempt: expected a number from 1, got \"%s\"\n", as);
            return SW_EXIT_USAGE;
        }
        attempt = (int)v;
    }
    const char *tail = sw_cli_arg(a, OPT_TAIL);
    if (tail != NULL) {
        char *end;
        long v = strtol(tail, &end, 10);
        if (end == tail || *end != '\0' || v < 0) {
            fprintf(stderr, "spillctl logs: --tail: expected a number of lines, got \"%s\"\n",
                    tail);
            return SW_EXIT_USAGE;
        }
    }
    struct sw_error err = {0};
    if (sw_cli_no_output_format(g, "spillctl logs", &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    int rc = sw_cli_redis_open(g, "logs", &c);
    if (rc != 0)
        return rc;
    struct where w;
    memset(&w, 0, sizeof(w));
    if (resolve(c, key, attempt, &w, &err) != 0) {
        fprintf(stderr, "spillctl logs: %s\n", err.msg);
        sw_redis_sync_free(c);
        return SW_EXIT_FAIL;
    }
    uv_loop_t loop;
    struct sw_http *http = NULL;
    struct sw_kube_client *kc = NULL;
    int exit_code = SW_EXIT_FAIL;
    if (uv_loop_init(&loop) != 0) {
        fprintf(stderr, "spillctl logs: cannot create an event loop\n");
        sw_redis_sync_free(c);
        return SW_EXIT_FAIL;
    }
    if (sw_http_new(&loop, &http) != 0) {
        fprintf(stderr, "spillctl logs: cannot start HTTP\n");
        goto out;
    }
    rc = open_member(g, c, &loop, http, w.cluster, &kc, &err);
    sw_redis_sync_free(c);
    c = NULL;
    if (rc != 0) {
        fprintf(stderr, "spillctl logs: %s\n", err.msg);
        goto out;
    }
    /* The Job's pods, by the label the Job controller sets on them. */
    char selector[128];
    snprintf(selector, sizeof(selector), "batch.kubernetes.io/job-name=%s", w.job);
    struct sw_kube_list_opts lo = {.label_selector = selector};
    struct call list = {0};
    if (sw_kube_list(kc, SW_KIND_POD, w.ns, &lo, on_result, &list) != 0) {
        fprintf(stderr, "spillctl logs: cannot list pods on %s\n", w.cluster);
        goto out;
    }
    sw_kube_run_until(&loop, &list.done);
    if (list.rc != 0) {
        fprintf(stderr, "spillctl logs: %s\n", list.err.msg);
        goto out;
    }
    const cJSON *pod = newest_pod(list.body);
    if (pod == NULL) {
        fprintf(stderr,
                "spillctl logs: %s (attempt %d) runs as Job %s/%s on cluster %s, which has no "
                "pods (yet, or any more)\n",
                key, w.attempt, w.ns, w.job, w.cluster);
        cJSON_Delete(list.body);
        goto out;
    }
    const cJSON *pn = sw_json_path(pod, "metadata.name");
    /* Each segment escaped (clusters/rest.h): names from records and
     * answers never shape the path. */
    char ns_seg[256] = "", pod_seg[300] = "", path[600];
    if (sw_kube_path_segment(ns_seg, sizeof(ns_seg), w.ns) != 0 ||
        sw_kube_path_segment(pod_seg, sizeof(pod_seg), cJSON_IsString(pn) ? pn->valuestring : "") !=
            0) {
        fprintf(stderr, "spillctl logs: %s: namespace or pod name not usable in a path\n", key);
        cJSON_Delete(list.body);
        goto out;
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces%s/pods%s/log", ns_seg, pod_seg);
    fprintf(stderr, "spillctl logs: %s attempt %d: pod %s/%s on cluster %s\n", key, w.attempt, w.ns,
            cJSON_IsString(pn) ? pn->valuestring : "", w.cluster);
    cJSON_Delete(list.body);
    int follow = sw_cli_arg(a, OPT_FOLLOW) != NULL;
    const char *container = sw_cli_arg(a, OPT_CONTAINER);
    if ((container != NULL &&
         sw_kube_path_query(path, sizeof(path), "container", container) != 0)) {
        fprintf(stderr, "spillctl logs: --container: too long\n");
        goto out;
    }
    /* Without -f the whole log; with it, first a call that returns at once
     * (tailLines=0), so that an error is a message, not a stream, then the
     * stream itself. */
    char first[600];
    snprintf(first, sizeof(first), "%s", path);
    if (follow || tail != NULL)
        sw_kube_path_query(first, sizeof(first), "tailLines", follow ? "0" : tail);
    struct call log = {.print = !follow};
    struct sw_kube_req req = {.method = "GET", .path = first, .raw = 1};
    if (sw_kube_send(kc, &req, on_result, &log, NULL) != 0)
        goto out;
    sw_kube_run_until(&loop, &log.done);
    fflush(stdout);
    cJSON_Delete(log.body);
    if (log.rc != 0) {
        fprintf(stderr, "spillctl logs: %s\n", log.err.msg);
        goto out;
    }
    if (follow) {
        if (tail != NULL)
            sw_kube_path_query(path, sizeof(path), "tailLines", tail);
        sw_kube_path_query(path, sizeof(path), "follow", "true");
        struct call stream = {0};
        struct sw_kube_req sreq = {
            .method = "GET", .path = path, .on_data = on_chunk, .timeout_ms = -1, .no_retry = 1};
        if (sw_kube_send(kc, &sreq, on_result, &stream, NULL) != 0)
            goto out;
        sw_kube_run_until(&loop, &stream.done);
        cJSON_Delete(stream.body);
        if (stream.rc != 0) {
            fprintf(stderr, "spillctl logs: %s\n", stream.err.msg);
            goto out;
        }
    }
    exit_code = SW_EXIT_OK;
out:
    if (c != NULL)
        sw_redis_sync_free(c);
    if (kc != NULL)
        sw_kube_client_free(kc);
    if (http != NULL)
        sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return exit_code;
}

static const struct sw_cli_opt opts[] = {
    {"follow", 'f', SW_CLI_FLAG, OPT_FOLLOW, NULL},
    {"attempt", 0, SW_CLI_VALUE, OPT_ATTEMPT, "N"},
    {"container", 'c', SW_CLI_VALUE, OPT_CONTAINER, "NAME"},
    {"tail", 0, SW_CLI_VALUE, OPT_TAIL, "LINES"},
};

const struct sw_cli_spec sw_cli_logs_specs[] = {
    {.path = "logs",
     .summary = "a Job's pod logs, wherever the Job runs now",
     .help = "Usage: spillctl logs CLUSTER/NAMESPACE/JOB [-f] [--attempt N] [-c CONTAINER]\n"
             "                     [--tail LINES]\n"
             "\n"
             "The logs of the Job submitted as CLUSTER/NAMESPACE/JOB, from where it runs:\n"
             "the hub's record in Redis names the current attempt's mirror and its\n"
             "cluster (or the origin Job itself when it never left home); the newest pod\n"
             "of that Job (label batch.kubernetes.io/job-name) is read on that cluster\n"
             "with the credentials registered for it (so --secret-key-file is needed).\n"
             "Which pod and cluster is said on stderr; the log goes to stdout.\n"
             "\n"
             "Options:\n"
             "  -f, --follow           stream the log until the pod ends or Ctrl-C\n"
             "  --attempt N            an earlier attempt's mirror, while the hub still\n"
             "                         records it (default: the current attempt)\n"
             "  -c, --container NAME   the container, for pods with more than one\n"
             "  --tail LINES           only the last LINES lines\n",
     .examples = "  spillctl logs onprem/research/train-llama\n"
                 "  spillctl logs onprem/research/train-llama -f --tail 100\n"
                 "  spillctl logs onprem/research/train-llama --attempt 1\n",
     .opts = opts,
     .nopts = sizeof(opts) / sizeof(opts[0]),
     .min_pos = 1,
     .max_pos = 1,
     .run = run},
};
const size_t sw_cli_logs_nspecs = 1;
