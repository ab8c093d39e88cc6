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
 *
 * The caches hold compact records (clusters/record.h). A reconciler that
 * asks for an origin or a mirror gets a JSON view of its record, made on
 * demand and freed at the end of the loop turn (the same lifetime a cached
 * tree had: the next watch event could replace it); it holds what the
 * record keeps, not the pod template (dispatch GETs the Job for that).
 */
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "clusters/exec.h"
#include "clusters/record.h"
#include "common/json.h"
#include "controller/hub/adopt.h"
#include "controller/hub/hub.h"
#include "controller/hub/retire.h"

/* ---- pods grouped by Job -------------------------------------------------- */

#define AGG_BUCKETS 8192
struct pod_agg {
    char key[200]; /* cluster/ns/job */
    int pods;
    int bound;
    int starved; /* Unschedulable for lack of GPUs */
    int lost;    /* bound to a node the cache saw deleted, or whose NodeClaim is deleted */
    char lost_node[128];
    char node[128]; /* a node one of its pods is bound to ("" none) */
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

static bool pod_starved(const struct sw_pod_record *pod)
{
    for (size_t i = 0; i < pod->nconditions; i++) {
        const struct sw_condition *c = &pod->conditions[i];
        if (c->type && strcmp(c->type, "PodScheduled") == 0 && c->status &&
            strcmp(c->status, "False") == 0 && c->reason &&
            strcmp(c->reason, "Unschedulable") == 0 && c->message &&
            (strstr(c->message, "nvidia.com/gpu") != NULL ||
             strstr(c->message, "nvidia.com/mig-") != NULL))
            return true;
    }
    return false;
}

#define MAX_RECLAIMED 64
struct pod_scan {
    const char *cluster;
    struct sw_cluster_cache *cache;
    /* Nodes whose Karpenter NodeClaim is being deleted (a spot interruption
     * as Karpenter handles one: the node is drained, then goes), and the
     * claims' names. */
    char reclaimed[MAX_RECLAIMED][128];
    char claims[MAX_RECLAIMED][64];
    size_t nreclaimed;
};

static void note_reclaimed(const struct sw_nodeclaim_facts *c, void *ctx)
{
    struct pod_scan *ps = ctx;
    if (!c->deleting || c->node_name == NULL || ps->nreclaimed >= MAX_RECLAIMED)
        return;
    snprintf(ps->reclaimed[ps->nreclaimed], sizeof(ps->reclaimed[0]), "%.127s", c->node_name);
    snprintf(ps->claims[ps->nreclaimed], sizeof(ps->claims[0]), "%.63s", c->name);
    ps->nreclaimed++;
}

static void agg_pod(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct pod_scan *ps = ctx;
    const struct sw_pod_record *pod = obj;
    if (pod->ns == NULL || pod->owner == NULL)
        return;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s/%s", ps->cluster, pod->ns, pod->owner);
    struct pod_agg *a = agg_find(k, true);
    if (a == NULL)
        return;
    a->pods++;
    const char *node = pod->node;
    if (node && node[0]) {
        a->bound++;
        if (a->node[0] == '\0')
            snprintf(a->node, sizeof(a->node), "%.127s", node);
        /* Lost only when its node was seen deleted: a node the cache has
         * not delivered yet is not gone, and its pods still run. */
        bool gone = sw_cluster_cache_node_gone(ps->cache, node);
        if (gone) {
            a->lost++;
            snprintf(a->lost_node, sizeof(a->lost_node), "%s", node);
        }
        for (size_t i = 0; !gone && i < ps->nreclaimed; i++)
            if (strcmp(ps->reclaimed[i], node) == 0) {
                a->lost++;
                snprintf(a->lost_node, sizeof(a->lost_node), "%.60s (NodeClaim %.40s deleted)",
                         node, ps->claims[i]);
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

bool sw_observe_pod_node(struct sw_hub *h, const char *cluster, const char *ns,
                         const char *job_name, char *node, size_t len)
{
    (void)h;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s/%s", cluster, ns, job_name);
    struct pod_agg *a = agg_find(k, false);
    if (a == NULL || a->node[0] == '\0')
        return false;
    snprintf(node, len, "%s", a->node);
    return true;
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

/* ---- views of records ----------------------------------------------------- */

#define VIEW_BUCKETS 4096
/* A view unused for a whole sweep period is freed at the next sweep. */
#define VIEW_SWEEP_MS 5000

struct view {
    const struct sw_job_record *rec;
    cJSON *json;
    const char *rv, *uid; /* in json */
    unsigned period;      /* the sweep period it was last used in */
    struct view *next;
};

/*
 * JSON views of cached records, kept across loop turns while their record
 * stays as it was (the same record, resourceVersion and UID): a tick steps
 * every managed Job and indexes every mirror, and building each view anew
 * each turn was most of the hub's CPU under load. The hub has one loop: no
 * lock. A view replaced because its record changed is freed at the end of
 * the loop turn, so that a view handed out stays valid until then.
 */
static struct view *views[VIEW_BUCKETS];
static struct view *views_retired;
static unsigned view_period;
static int64_t views_swept_ms;
static uv_check_t views_check;
static bool views_check_open;

static void views_sweep(uv_check_t *c)
{
    (void)c;
    while (views_retired) {
        struct view *n = views_retired->next;
        cJSON_Delete(views_retired->json);
        sw_free(views_retired);
        views_retired = n;
    }
    int64_t now = sw_hub_mono_ms();
    if (now - views_swept_ms < VIEW_SWEEP_MS)
        return;
    views_swept_ms = now;
    for (size_t b = 0; b < VIEW_BUCKETS; b++) {
        struct view **pp = &views[b];
        while (*pp) {
            struct view *v = *pp;
            if (v->period != view_period) {
                *pp = v->next;
                cJSON_Delete(v->json);
                sw_free(v);
            } else
                pp = &v->next;
        }
    }
    view_period++;
}

/* Whether a view shows the record as it is now. */
static bool view_current(const struct view *v, const struct sw_job_record *rec)
{
    return v->rv && rec->rv && strcmp(v->rv, rec->rv) == 0 &&
           ((v->uid == NULL && rec->uid == NULL) ||
            (v->uid && rec->uid && strcmp(v->uid, rec->uid) == 0));
}

const cJSON *sw_observe_view(struct sw_hub *h, const struct sw_job_record *rec)
{
    if (rec == NULL)
        return NULL;
    size_t b = ((uintptr_t)rec >> 4) % VIEW_BUCKETS;
    struct view **pp = &views[b];
    for (; *pp; pp = &(*pp)->next) {
        struct view *v = *pp;
        if (v->rec != rec)
            continue;
        if (view_current(v, rec)) {
            v->period = view_period;
            return v->json;
        }
        /* The record changed (or its memory went to another): retired. */
        *pp = v->next;
        v->next = views_retired;
        views_retired = v;
        break;
    }
    if (!views_check_open && h->loop != NULL) {
        uv_check_init(h->loop, &views_check);
        uv_unref((uv_handle_t *)&views_check);
        uv_check_start(&views_check, views_sweep);
        views_check_open = true;
        views_swept_ms = sw_hub_mono_ms();
    }
    struct view *v = sw_calloc(1, sizeof(*v));
    if (v == NULL || (v->json = sw_job_record_json(rec)) == NULL) {
        sw_free(v);
        return NULL;
    }
    v->rec = rec;
    const cJSON *md = sw_json_child(v->json, "metadata");
    v->rv = sw_json_str(md, "resourceVersion");
    v->uid = sw_json_str(md, "uid");
    v->period = view_period;
    v->next = views[b];
    views[b] = v;
    return v->json;
}

static const cJSON *view_of(struct sw_hub *h, const struct sw_job_record *rec)
{
    return sw_observe_view(h, rec);
}

/* ---- lookups -------------------------------------------------------------- */

static const struct sw_job_record *job_in(struct sw_hub *h, const char *cluster, const char *ns,
                                          const char *name)
{
    struct sw_member *m = sw_member_find(h, cluster);
    if (m == NULL || m->cache == NULL || name[0] == '\0')
        return NULL;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s", ns, name);
    return sw_informer_get(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), k);
}

const struct sw_job_record *sw_observe_origin_record(struct sw_hub *h, const struct sw_job_rec *r)
{
    const struct sw_job_record *o = job_in(h, r->cluster, r->ns, r->name);
    if (o && r->uid[0] && strcmp(o->uid, r->uid) != 0)
        return NULL;
    return o;
}

const cJSON *sw_observe_origin_whole(struct sw_hub *h, const struct sw_job_rec *r)
{
    const struct sw_job_record *o = sw_observe_origin_record(h, r);
    return o && o->spec_text ? view_of(h, o) : NULL;
}

const cJSON *sw_observe_origin(struct sw_hub *h, const struct sw_job_rec *r)
{
    const struct sw_job_record *o = job_in(h, r->cluster, r->ns, r->name);
    if (o && r->uid[0] && strcmp(o->uid, r->uid) != 0)
        return NULL; /* a new Job of the same name: ours is gone */
    return view_of(h, o);
}

const struct sw_job_record *sw_observe_mirror_record(struct sw_hub *h, const struct sw_job_rec *r)
{
    return job_in(h, r->target_cluster, r->ns, r->mirror);
}

const cJSON *sw_observe_mirror(struct sw_hub *h, const struct sw_job_rec *r)
{
    return view_of(h, sw_observe_mirror_record(h, r));
}

const cJSON *sw_observe_mirror_final(struct sw_hub *h, const struct sw_job_rec *r)
{
    struct sw_member *m = sw_member_find(h, r->target_cluster);
    if (m == NULL || m->cache == NULL || r->mirror[0] == '\0')
        return NULL;
    char k[200];
    snprintf(k, sizeof(k), "%s/%s", r->ns, r->mirror);
    return sw_cluster_cache_job_tombstone(m->cache, k);
}

int sw_observe_spec(struct sw_hub *h, const struct sw_job_rec *r, const cJSON *origin,
                    struct sw_burst_spec *spec, struct sw_error *err)
{
    int rc = sw_burst_spec_parse(sw_json_child(sw_json_child(origin, "metadata"), "annotations"),
                                 r->created, spec, err);
    if (rc != 0)
        return rc;
    if ((rc = sw_tenancy_apply(&h->cfg.tenancy, r->cluster, r->ns, spec, err)) != 0)
        return rc;
    /* Fixed at decision (decide.c): the outputs go where they were decided
     * to go, checked against the grant then and now. */
    if (r->outputs[0] != '\0') {
        struct sw_s3_uri u;
        const char *why = NULL;
        if (sw_s3_uri_parse(r->outputs, &u, &why) != 0)
            return sw_error_set(err, SW_EINVAL, "record %s: field \"outputs\": %s", r->key,
                                why ? why : "not an s3:// URI");
        struct sw_burst_spec fixed = *spec;
        fixed.has_outputs = true;
        fixed.outputs = u;
        fixed.n_inputs = 0;
        if ((rc = sw_tenancy_apply(&h->cfg.tenancy, r->cluster, r->ns, &fixed, err)) != 0)
            return rc;
        spec->has_outputs = true;
        spec->outputs = u;
    }
    return 0;
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

/* The Warning Event on a Job another hub (or a lost record) holds. */
/* A Warning Event on an origin Job the hub keeps no record of (a bad
 * annotation, a Job another hub holds): once per Job and hub process. */
static void warn_once(struct sw_hub *h, struct sw_job *j, const char *cluster, const char *ns,
                      const char *name, const char *uid, const char *reason, const char *msg)
{
    j->warned = true;
    struct sw_job_rec tmp = {0};
    snprintf(tmp.cluster, sizeof(tmp.cluster), "%s", cluster);
    snprintf(tmp.ns, sizeof(tmp.ns), "%s", ns);
    snprintf(tmp.name, sizeof(tmp.name), "%s", name);
    snprintf(tmp.uid, sizeof(tmp.uid), "%s", uid);
    sw_follow_event(h, &tmp, "Warning", reason, msg);
}

#define HELD_ELSEWHERE_MSG                                                                         \
    "spillway: this Job's " SW_ANN_MIRROR " annotation names a mirror of it and a mirror of it "   \
    "exists, but this hub holds no record of it and did not place that mirror: another hub "       \
    "placed it (its namespace was moved to this hub while it ran). Left alone so that it never "   \
    "runs twice. Let it finish on the hub that placed it (move a namespace between hubs only "     \
    "once its burstable Jobs have finished); if no hub follows it, delete its mirrors (label "     \
    "spillway.io/origin-uid=<this Job's UID> in the target clusters): this hub then takes it as "  \
    "a new Job."

static void scan_job(const char *key, const void *obj, void *ctx)
{
    struct job_scan *js = ctx;
    struct sw_hub *h = js->h;
    const struct sw_job_record *rec = obj;
    /* Most Jobs are not ours: decided on the record, without a view. */
    if (sw_job_record_annotation(rec, SW_ANN_BURST) == NULL ||
        sw_job_record_label(rec, SW_LBL_ORIGIN_UID) != NULL)
        return;
    char k[256];
    snprintf(k, sizeof(k), "%s/%s", js->m->rec.name, key);
    struct sw_job *j = sw_hub_job_find(h, k);
    /* Decided on the compact record too, before any JSON view or namespace
     * lookup: a Job the hub knows, or one whose record ended (retire.h),
     * costs a lookup. A Job this hub holds a record of is followed to its
     * end wherever its namespace goes (namespaceSelector). */
    if (j && j->persisted && rec->uid && strcmp(j->rec.uid, rec->uid) == 0) {
        sw_queue_seen(js->m, rec);
        return; /* known */
    }
    if (j && j->busy) {
        sw_queue_seen(js->m, rec); /* its record is being written: taken here */
        return;
    }
    if (j && j->persisted && !sw_job_state_terminal(j->rec.state))
        return; /* the old Job of this name is still being cleaned up */
    /* Seen finished (a Complete or Failed condition, or the outcome of a
     * burst of its own UID in its annotations): no record follows it, and
     * none is needed. Never burst a Job seen finished. */
    if (sw_retire_origin_done(rec))
        return;
    /* A Job in a namespace this hub does not serve (namespaceSelector,
     * nsscope.c) is another hub's or nobody's: never touched, annotated or
     * counted here. Except one with a mirror carrying this hub's proof: it
     * placed that Job and Redis lost the record, which is re-derived below
     * wherever its namespace went. The key is "namespace/name". */
    if (!sw_adopt_proven(rec->uid)) {
        const char *slash = strchr(key, '/');
        char kns[64];
        if (slash == NULL || (size_t)(slash - key) >= sizeof(kns))
            return;
        memcpy(kns, key, (size_t)(slash - key));
        kns[slash - key] = '\0';
        if (!sw_nsscope_serves(h, js->m, kns))
            return;
    }
    sw_queue_seen(js->m, rec);
    const cJSON *job = view_of(h, rec);
    const cJSON *md = sw_json_child(job, "metadata");
    const cJSON *ann = sw_json_child(md, "annotations");
    const char *burst = sw_json_str(ann, SW_ANN_BURST);
    if (burst == NULL || sw_json_str(sw_json_child(md, "labels"), SW_LBL_ORIGIN_UID) != NULL)
        return;
    const char *uid = sw_json_str(md, "uid");
    const char *ns = sw_json_str(md, "namespace"), *name = sw_json_str(md, "name");
    if (uid == NULL || ns == NULL || name == NULL)
        return;

    /* A Job whose spillway.io/mirror annotation names a mirror of its own
     * UID (retire.h), of which this hub holds no record, while a mirror of
     * it exists that does not carry this hub's proof: another hub placed it
     * (its namespace moved to this one while it ran). Taking it could run
     * it twice: it is left alone, with a Warning Event saying what to do.
     * With no mirror of it anywhere (every member listed), Redis lost its
     * record before a mirror existed or after the last one went: it is
     * taken as new, as docs/dr.md says. */
    if (sw_retire_origin_claimed(rec) && !sw_adopt_proven(uid)) {
        if (!sw_adopt_all_synced(h))
            return; /* its mirror may be in a member not listed yet */
        if (sw_adopt_any(uid)) {
            if (j == NULL)
                j = sw_hub_job_get(h, k);
            if (j && !j->warned) {
                SW_LOG(SW_LOG_WARN,
                       "Job with a mirror this hub did not place and no record here; leaving it "
                       "alone",
                       "job=%s uid=%s", sw_log_q(k), sw_log_q(uid));
                warn_once(h, j, js->m->rec.name, ns, name, uid, "HeldByAnotherHub",
                          HELD_ELSEWHERE_MSG);
            }
            return;
        }
    }

    struct sw_burst_spec spec;
    struct sw_error err = {0};
    int64_t created_ms = 0;
    const char *ts = sw_json_str(md, "creationTimestamp");
    const char *why = NULL;
    if (ts)
        sw_parse_rfc3339(ts, &created_ms, &why);
    struct sw_gpu_ask ask;
    const char *reason = "BadAnnotation";
    int bad = sw_burst_spec_parse(ann, (double)created_ms / 1000.0, &spec, &err);
    /* What its pods ask of GPUs: an unknown MIG profile, two of them, or a
     * share of more than one GPU is said once, as a bad annotation is. */
    if (bad == 0 && spec.managed && sw_job_gpu_ask(job, &spec, &ask, &err) != 0) {
        bad = SW_EINVAL;
        reason = "BadGpuRequest";
    }
    if (bad != 0) {
        if (j == NULL)
            j = sw_hub_job_get(h, k);
        if (j && !j->warned) {
            SW_LOG(SW_LOG_WARN, "bad spillway annotation or GPU request; leaving the Job alone",
                   "job=%s err=%s", sw_log_q(k), sw_log_q(err.msg));
            warn_once(h, j, js->m->rec.name, ns, name, uid, reason, err.msg);
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
    j->admitted = false;
    j->queue_warned = false;
    j->queue_released = false;
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
    sw_queue_scan(h);
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            continue;
        struct pod_scan *ps = sw_calloc(1, sizeof(*ps));
        if (ps == NULL)
            continue;
        ps->cluster = m->rec.name;
        ps->cache = m->cache;
        sw_cluster_cache_nodeclaims_foreach(m->cache, note_reclaimed, ps);
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_POD), agg_pod, ps);
        sw_free(ps);
    }
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            continue;
        struct job_scan js = {h, m};
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), scan_job, &js);
    }
}
