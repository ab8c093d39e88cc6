/*
 * observe.c - which Jobs spillway manages, read from the members' caches.
 *
 * A Job is managed when it carries spillway.io/burst with a value other
 * than "never" and is not itself a mirror. The first time the hub sees one
 * it writes a record for it (state "observed"). A bad annotation value gets
 * one Warning Event on the Job naming the annotation, the value and what is
 * expected, and the Job is left alone (no record: not burst, not failed)
 * until the annotation is fixed.
 *
 * Pods are grouped by their Job (the job-name label) once per scan, so that
 * asking whether a Job starves at home costs a lookup, not a walk.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "clusters/exec.h"
#include "common/json.h"
#include "controller/hub/adopt.h"
#include "controller/hub/hub.h"

/* ---- pods grouped by Job -------------------------------------------------- */

#define AGG_BUCKETS 8192
struct pod_agg {
    char key[200]; /* cluster/ns/job */
    int pods;
    int bound;
    int starved; /* Unschedulable for lack of GPUs */
    int lost;    /* bound to a node that no longer exists */
    char lost_node[128];
    struct pod_agg *next;
};

static struct pod_agg *aggs[AGG_BUCKETS];

static unsigned agg_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % AGG_BUCKETS;
}

static struct pod_agg *agg_find(const char *key, bool create)
{
    unsigned b = agg_hash(key);
    for (struct pod_agg *a = aggs[b]; a; a = a->next)
        if (strcmp(a->key, key) == 0)
            return a;
    if (!create)
        return NULL;
    struct pod_agg *a = sw_calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    snprintf(a->key, sizeof(a->key), "%s", key);
    a->next = aggs[b];
    aggs[b] = a;
    return a;
}

static void aggs_clear(void)
{
    for (size_t b = 0; b < AGG_BUCKETS; b++) {
        struct pod_agg *a = aggs[b];
        while (a) {
            struct pod_agg *n = a->next;
            sw_free(a);
            a = n;
        }
        aggs[b] = NULL;
    }
}

static bool pod_starved(const cJSON *pod)
{
    const cJSON *conds = sw_json_child(sw_json_child(pod, "status"), "conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const char *t = sw_json_str(c, "type"), *s = sw_json_str(c, "status"),
                   *r = sw_json_str(c, "reason");
        const char *msg = sw_json_str(c, "message");
        if (t && strcmp(t, "PodScheduled") == 0 && s && strcmp(s, "False") == 0 && r &&
            strcmp(r, "Unschedulable") == 0 && msg && strstr(msg, "nvidia.com/gpu") != NULL)
            return true;
    }
    return false;
}

struct pod_scan {
    const char *cluster;
    struct sw_informer *nodes;
};

static void agg_pod(const char *key, const cJSON *pod, void *ctx)
{
    (void)key;
    struct pod_scan *ps = ctx;
    const cJSON *md = sw_json_child(pod, "metadata");
    const char *ns = sw_json_str(md, "namespace");
    const char *job = sw_json_str(sw_json_child(md, "labels"), "batch.kubernetes.io/job-name");
    if (job == NULL)
        job = sw_json_str(sw_json_child(md, "labels"), "job-name");
    if (ns == NULL || job == NULL)
        return;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s/%s", ps->cluster, ns, job);
    struct pod_agg *a = agg_find(k, true);
    if (a == NULL)
        return;
    a->pods++;
    const char *node = sw_json_str(sw_json_child(pod, "spec"), "nodeName");
    if (node && node[0]) {
        a->bound++;
        if (ps->nodes && sw_informer_get(ps->nodes, node) == NULL) {
            a->lost++;
            snprintf(a->lost_node, sizeof(a->lost_node), "%s", node);
        }
    } else if (pod_starved(pod))
        a->starved++;
}

int sw_observe_pods(struct sw_hub *h, const char *cluster, const char *ns, const char *job_name,
                    int *bound)
{
    (void)h;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s/%s", cluster, ns, job_name);
    struct pod_agg *a = agg_find(k, false);
    if (bound)
        *bound = a ? a->bound : 0;
    return a ? a->pods : 0;
}

int sw_observe_lost(struct sw_hub *h, const char *cluster, const char *ns, const char *job_name,
                    char *node, size_t len)
{
    (void)h;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s/%s", cluster, ns, job_name);
    struct pod_agg *a = agg_find(k, false);
    if (a && a->lost && node)
        snprintf(node, len, "%s", a->lost_node);
    return a ? a->lost : 0;
}

bool sw_observe_starved(struct sw_hub *h, const struct sw_job_rec *r, bool *any_bound)
{
    (void)h;
    struct pod_agg *a = agg_find(r->key, false);
    if (any_bound)
        *any_bound = a && a->bound > 0;
    return a && a->starved > 0 && a->bound == 0;
}

/* ---- lookups -------------------------------------------------------------- */

static const cJSON *job_in(struct sw_hub *h, const char *cluster, const char *ns, const char *name)
{
    struct sw_member *m = sw_member_find(h, cluster);
    if (m == NULL || m->cache == NULL || name[0] == '\0')
        return NULL;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s", ns, name);
    return sw_informer_get(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), k);
}

const cJSON *sw_observe_origin(struct sw_hub *h, const struct sw_job_rec *r)
{
    const cJSON *o = job_in(h, r->cluster, r->ns, r->name);
    const char *uid = sw_json_str(sw_json_child(o, "metadata"), "uid");
    if (o && r->uid[0] && uid && strcmp(uid, r->uid) != 0)
        return NULL; /* a new Job of the same name: ours is gone */
    return o;
}

const cJSON *sw_observe_mirror(struct sw_hub *h, const struct sw_job_rec *r)
{
    return job_in(h, r->target_cluster, r->ns, r->mirror);
}

/* ---- the scan ------------------------------------------------------------- */

struct job_scan {
    struct sw_hub *h;
    struct sw_member *m;
};

static void on_new_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    (void)ctx;
    j->busy = false;
    if (rc == 0) {
        SW_LOG(SW_LOG_INFO, "job observed", "job=%s form=%s", sw_log_q(j->rec.key),
               sw_log_q(j->rec.form == SW_FORM_DELEGATED ? "delegated" : "annotation"));
        sw_hub_want_decide(h);
    }
}

static void scan_job(const char *key, const cJSON *job, void *ctx)
{
    struct job_scan *js = ctx;
    struct sw_hub *h = js->h;
    const cJSON *md = sw_json_child(job, "metadata");
    const cJSON *ann = sw_json_child(md, "annotations");
    const char *burst = sw_json_str(ann, SW_ANN_BURST);
    if (burst == NULL || sw_json_str(sw_json_child(md, "labels"), SW_LBL_ORIGIN_UID) != NULL)
        return;
    char k[256];
    snprintf(k, sizeof(k), "%s/%s", js->m->rec.name, key);
    struct sw_job *j = sw_hub_job_find(h, k);
    const char *uid = sw_json_str(md, "uid");
    const char *ns = sw_json_str(md, "namespace"), *name = sw_json_str(md, "name");
    if (uid == NULL || ns == NULL || name == NULL)
        return;
    if (j && j->persisted && strcmp(j->rec.uid, uid) == 0)
        return; /* known */
    if (j && j->busy)
        return;
    if (j && j->persisted && !sw_job_state_terminal(j->rec.state))
        return; /* the old Job of this name is still being cleaned up */

    struct sw_burst_spec spec;
    struct sw_error err = {0};
    int64_t created_ms = 0;
    const char *ts = sw_json_str(md, "creationTimestamp");
    const char *why = NULL;
    if (ts)
        sw_parse_rfc3339(ts, &created_ms, &why);
    if (sw_burst_spec_parse(ann, (double)created_ms / 1000.0, &spec, &err) != 0) {
        if (j == NULL)
            j = sw_hub_job_get(h, k);
        if (j && !j->warned) {
            j->warned = true;
            struct sw_job_rec tmp = {0};
            snprintf(tmp.cluster, sizeof(tmp.cluster), "%s", js->m->rec.name);
            snprintf(tmp.ns, sizeof(tmp.ns), "%s", ns);
            snprintf(tmp.name, sizeof(tmp.name), "%s", name);
            snprintf(tmp.uid, sizeof(tmp.uid), "%s", uid);
            SW_LOG(SW_LOG_WARN, "bad spillway annotation; leaving the Job alone", "job=%s err=%s",
                   sw_log_q(k), sw_log_q(err.msg));
            sw_follow_event(h, &tmp, "Warning", "BadAnnotation", err.msg);
        }
        return;
    }
    if (!spec.managed)
        return;
    if (j == NULL && (j = sw_hub_job_get(h, k)) == NULL)
        return;
    /* A new Job (or a new one of the same name): nothing of the old one's
     * per-Job state carries over. */
    sw_data_outputs_stop(h, j);
    sw_free(j->explain);
    j->explain = NULL;
    j->outputs_done = 0;
    j->status_synced = false;
    j->refs_ok = false;
    j->backoff = 0;
    j->next_ms = 0;
    struct sw_job_rec *r = &j->rec;
    memset(r, 0, sizeof(*r));
    snprintf(r->key, sizeof(r->key), "%s", k);
    snprintf(r->cluster, sizeof(r->cluster), "%s", js->m->rec.name);
    snprintf(r->ns, sizeof(r->ns), "%s", ns);
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->uid, sizeof(r->uid), "%s", uid);
    const char *mb = sw_json_str(sw_json_child(job, "spec"), "managedBy");
    r->form = mb && strcmp(mb, SW_MANAGED_BY) == 0 ? SW_FORM_DELEGATED : SW_FORM_ANNOTATION;
    r->state = SW_JS_OBSERVED;
    r->created = (double)created_ms / 1000.0;
    r->observed_ms = sw_hub_wall_ms();
    j->warned = false;
    sw_adopt_new_record(h, j); /* a record Redis lost: from the mirror, if there is one */
    j->busy = true;
    if (sw_rec_write(h, j, on_new_written, NULL) != 0)
        j->busy = false;
}

void sw_observe_scan(struct sw_hub *h)
{
    aggs_clear();
    sw_adopt_index(h);
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            continue;
        struct pod_scan ps = {m->rec.name, sw_cluster_cache_informer(m->cache, SW_KIND_NODE)};
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_POD), agg_pod, &ps);
    }
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            continue;
        struct job_scan js = {h, m};
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), scan_job, &js);
    }
}
