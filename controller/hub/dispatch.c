/*
 * dispatch.c - the mirror Job, created exactly once per attempt.
 *
 * From "data-ready" the hub first writes its intent (attempt N, the mirror's
 * name, state "dispatching") under its epoch, and only then acts; each
 * action below is idempotent, so a hub that crashes anywhere simply runs the
 * step again after a restart and finds its own work:
 *   1. the ConfigMaps and Secrets the pod template references are copied to
 *      the target namespace (created if missing, with home's Pod Security
 *      labels; an existing one only if spillway made it for this origin or
 *      the grant allows it: nsguard.c); a missing reference blocks the
 *      burst, with its name in the reason, before anything is changed
 *   2. the origin gets spillway's finalizer (deleting it deletes the
 *      mirror) and, for an annotation-only Job, spec.suspend=true; this is
 *      refused if any of its pods is bound to a node: a Job with a pod
 *      running at home is never burst
 *      and, when the origin sits in a Kueue queue, the same patch removes
 *      its queue-name label: Kueue lets it go (queue.c, docs/kueue.md)
 *   3. the hub waits until the origin has no pods left, then deactivates
 *      the origin's Workload if it has one
 *   4. the mirror is created under a name derived from the origin's UID and
 *      the attempt number; AlreadyExists is success only when the Job of
 *      that name carries this origin's UID, cluster and attempt (ours)
 *   5. the record says "dispatched"
 * When the origin's cluster is lost (a requeue Job, loss.c), steps 2 and 3
 * cannot be done there: the record names the origin as stale first, and
 * the origin is suspended when its cluster returns, before anything else
 * happens there; the references are then used only if the target has them.
 * Steps 1 and 4 read the pod template: the cache keeps the whole spec of
 * burstable Jobs (sw_cluster_cache_keep_specs), and a copy of it is kept
 * (j->kept, sw_dispatch_keep_origin; renewed by step 2's patch answer). So a
 * dispatch spends one PATCH on the origin's cluster and no GET. With the
 * origin's cluster lost, they use the copy as it is.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/json.h"
#include "clusters/record.h"
#include "controller/hub/hub.h"
#include "controller/hub/podrefs.h"

/* ---- references: ConfigMaps and Secrets ----------------------------------- */

struct refs_chain {
    struct sw_hub *h;
    struct sw_job *j;
    /* Every Secret and ConfigMap the pod template references, checked
     * and bounded (podrefs.c); refs.refs[at] is the one in hand. */
    struct sw_pod_refs refs;
    size_t at;
    bool ns_done;
    bool check_only; /* the origin's cluster is lost: the target must have them already */
    bool lq_checked; /* the target's LocalQueue looked up (when mirrors are queued there) */
    /* The LocalQueue a mirror goes into in the target: the registration's
     * localQueue, else (lq_default) the origin's own LocalQueue name when
     * the target has one of that name; "" none. */
    char lq[64];
    bool lq_default;
    char *body; /* the copy being made of refs[at]; wiped when freed (a Secret's data) */
};

static void rc_free(struct refs_chain *rc)
{
    sw_free_wiped(rc->body);
    sw_free(rc);
}

/* The reference in hand. */
static const struct sw_pod_ref *cur_ref(const struct refs_chain *rc)
{
    return &rc->refs.refs[rc->at];
}

/* The API path of the reference in hand in the Job's namespace: its
 * collection, or (with_name) the object. Every segment goes through the
 * REST client's escaping, after sw_pod_refs_collect checked the name. */
static int ref_path(const struct refs_chain *rc, bool with_name, char *buf, size_t len)
{
    const struct sw_pod_ref *r = cur_ref(rc);
    int n = snprintf(buf, len, "/api/v1/namespaces");
    if (n < 0 || (size_t)n >= len)
        return SW_ETOOBIG;
    int rcode = sw_kube_path_segment(buf, len, rc->j->rec.ns);
    if (rcode == 0)
        rcode = sw_kube_path_segment(buf, len, sw_pod_ref_resource(r->kind));
    if (rcode == 0 && with_name)
        rcode = sw_kube_path_segment(buf, len, r->name);
    return rcode;
}

static void refs_next(struct refs_chain *rc);

/* The intent's attempt given back: called only before the origin was
 * suspended, so before any mirror of that attempt could be created. */
static void abandon_attempt(struct sw_job_rec *r)
{
    if (r->attempt > 0)
        r->attempt--;
    r->mirror[0] = '\0';
}

static void refs_fail(struct refs_chain *rc, const char *why)
{
    struct sw_hub *h = rc->h;
    struct sw_job *j = rc->j;
    rc_free(rc);
    snprintf(j->rec.reason, sizeof(j->rec.reason), "%s", why);
    /* Nothing was changed at home yet: the Job is not burst and stays as it
     * is, and the attempt the intent took is given back (no mirror of it
     * was made, so its name is free): a refused burst uses up no attempt. */
    j->rec.state = SW_JS_BLOCKED;
    j->rec.decided_ms = sw_hub_wall_ms();
    abandon_attempt(&j->rec);
    SW_LOG(SW_LOG_WARN, "burst refused", "job=%s reason=%s", sw_log_q(j->rec.key), sw_log_q(why));
    sw_follow_event(h, &j->rec, "Warning", "BurstRefused", why);
    sw_follow_show_blocked(h, &j->rec, true);
    sw_rec_step(h, j, SW_FP_NONE);
}

static void ref_done(struct sw_kube_result *res, void *ctx);

/* Whether the target's object of refs[at] (its metadata `md`) is spillway's
 * copy from the origin's cluster; if not, the burst is refused, named. */
static bool ours_or_refuse(struct refs_chain *rc, const cJSON *md)
{
    struct sw_job *j = rc->j;
    const struct sw_pod_ref *r = cur_ref(rc);
    const char *from = sw_json_str(sw_json_child((cJSON *)md, "labels"), SW_LBL_ORIGIN_CL);
    if (from != NULL && strcmp(from, j->rec.cluster) == 0)
        return true;
    char why[600];
    snprintf(why, sizeof(why),
             "%s %s/%s already exists in cluster %s and is not spillway's copy from cluster "
             "%s; the mirror would use it instead of the origin's",
             sw_pod_ref_kind_name(r->kind), j->rec.ns, r->name, j->rec.target_cluster,
             j->rec.cluster);
    refs_fail(rc, why);
    return false;
}

/* A copy of that name is there already: spillway's copy from the same
 * origin cluster is brought up to date; anything else is not ours to use. */
static void on_ref_existing(struct sw_kube_result *res, void *ctx)
{
    struct refs_chain *rc = ctx;
    struct sw_job *j = rc->j;
    if (res->rc != 0) {
        struct sw_hub *h = rc->h;
        rc_free(rc);
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    const cJSON *md = sw_json_child(res->body, "metadata");
    if (!ours_or_refuse(rc, md))
        return;
    /* The copy's text, and every tree and string made of it, holds the
     * Secret's data: each is wiped before it is freed. */
    size_t blen = rc->body ? strlen(rc->body) : 0;
    cJSON *o = rc->body ? cJSON_ParseWithLength(rc->body, blen) : NULL;
    const char *rv = sw_json_str(md, "resourceVersion");
    if (o && rv)
        cJSON_AddStringToObject(sw_json_child(o, "metadata"), "resourceVersion", rv);
    char *body = o ? sw_json_print_wiped(o, blen, NULL) : NULL;
    sw_json_delete_wiped(o);
    struct sw_member *tm = sw_member_find(rc->h, j->rec.target_cluster);
    char path[600];
    int rcode = ref_path(rc, true, path, sizeof(path));
    struct sw_kube_req req = {.method = "PUT",
                              .path = path,
                              .body = body,
                              .body_len = body ? strlen(body) : 0,
                              .sensitive = 1};
    if (rcode == 0)
        rcode = body && tm ? sw_kube_send(tm->client, &req, ref_done, rc, NULL) : SW_ENOMEM;
    sw_free_wiped(body);
    if (rcode != 0) {
        struct sw_hub *h = rc->h;
        rc_free(rc);
        sw_hub_step_done(h, j, rcode);
    }
}

static void on_ref_created(struct sw_kube_result *res, void *ctx)
{
    struct refs_chain *rc = ctx;
    if (res->rc != 0 && strcmp(res->reason, "AlreadyExists") == 0) {
        struct sw_member *tm = sw_member_find(rc->h, rc->j->rec.target_cluster);
        char path[600];
        int rcode = ref_path(rc, true, path, sizeof(path));
        struct sw_kube_req req = {.path = path, .sensitive = 1};
        if (rcode == 0)
            rcode = tm ? sw_kube_send(tm->client, &req, on_ref_existing, rc, NULL) : SW_ENOENT;
        if (rcode != 0) {
            struct sw_hub *h = rc->h;
            struct sw_job *j = rc->j;
            rc_free(rc);
            sw_hub_step_done(h, j, rcode);
        }
        return;
    }
    ref_done(res, ctx);
}

static void ref_done(struct sw_kube_result *res, void *ctx)
{
    struct refs_chain *rc = ctx;
    if (res->rc != 0) {
        struct sw_hub *h = rc->h;
        struct sw_job *j = rc->j;
        SW_LOG(SW_LOG_WARN, "copying a reference failed", "job=%s err=%s", sw_log_q(j->rec.key),
               sw_log_q(res->err.msg));
        rc_free(rc);
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    sw_free_wiped(rc->body);
    rc->body = NULL;
    rc->at++;
    refs_next(rc);
}

static void on_ref_got(struct sw_kube_result *res, void *ctx)
{
    struct refs_chain *rc = ctx;
    const struct sw_pod_ref *r = cur_ref(rc);
    struct sw_job *j = rc->j;
    if (res->rc != 0) {
        if (res->status == 404 && r->optional) {
            rc->at++;
            refs_next(rc);
            return;
        }
        if (res->status == 404) {
            char why[512];
            snprintf(why, sizeof(why),
                     "the pod template references %s %s/%s, which does not exist in cluster %s",
                     sw_pod_ref_kind_name(r->kind), j->rec.ns, r->name, j->rec.cluster);
            refs_fail(rc, why);
            return;
        }
        struct sw_hub *h = rc->h;
        rc_free(rc);
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    cJSON *o = res->body;
    cJSON *md = sw_json_child(o, "metadata");
    cJSON *keep = cJSON_CreateObject();
    cJSON_AddStringToObject(keep, "name", r->name);
    cJSON_AddStringToObject(keep, "namespace", j->rec.ns);
    cJSON *labels = cJSON_AddObjectToObject(keep, "labels");
    cJSON_AddStringToObject(labels, SW_LBL_MANAGED, "spillway");
    cJSON_AddStringToObject(labels, SW_LBL_ORIGIN_CL, j->rec.cluster);
    cJSON_DeleteItemFromObjectCaseSensitive(o, "metadata");
    (void)md;
    cJSON_AddItemToObject(o, "metadata", keep);
    /* The answer's tree is wiped by the REST client (sensitive); the text
     * printed from it is kept for an update, and wiped when done. */
    char *body = sw_json_print_wiped(o, 0, NULL);
    struct sw_member *tm = sw_member_find(rc->h, j->rec.target_cluster);
    char path[512];
    int rcode = ref_path(rc, false, path, sizeof(path));
    struct sw_kube_req req = {.method = "POST",
                              .path = path,
                              .body = body,
                              .body_len = body ? strlen(body) : 0,
                              .sensitive = 1};
    sw_free_wiped(rc->body);
    rc->body = body;
    if (rcode == 0)
        rcode = body && tm ? sw_kube_send(tm->client, &req, on_ref_created, rc, NULL) : SW_ENOMEM;
    if (rcode != 0) {
        struct sw_hub *h = rc->h;
        rc_free(rc);
        sw_hub_step_done(h, j, rcode);
    }
}

/* The origin's cluster is lost: the reference can only be used if the
 * target has spillway's copy of it from that cluster already. */
static void on_ref_checked(struct sw_kube_result *res, void *ctx)
{
    struct refs_chain *rc = ctx;
    const struct sw_pod_ref *r = cur_ref(rc);
    struct sw_job *j = rc->j;
    if (res->rc == 0 && !ours_or_refuse(rc, sw_json_child(res->body, "metadata")))
        return;
    if (res->rc == 0 || (res->status == 404 && r->optional)) {
        rc->at++;
        refs_next(rc);
        return;
    }
    if (res->status == 404) {
        char why[512];
        snprintf(why, sizeof(why),
                 "the pod template references %s %s/%s, which is not in cluster %s, and cluster "
                 "%s, where it lives, is lost",
                 sw_pod_ref_kind_name(r->kind), j->rec.ns, r->name, j->rec.target_cluster,
                 j->rec.cluster);
        refs_fail(rc, why);
        return;
    }
    struct sw_hub *h = rc->h;
    rc_free(rc);
    sw_hub_step_done(h, j, res->rc);
}

/* The target namespace judged (nsguard.c). */
static void on_ns(struct sw_hub *h, struct sw_job *j, int rcode, const char *why, void *ctx)
{
    struct refs_chain *rc = ctx;
    if (rcode == SW_EFORBIDDEN && why != NULL) {
        refs_fail(rc, why);
        return;
    }
    if (rcode != 0) {
        rc_free(rc);
        sw_hub_step_done(h, j, rcode);
        return;
    }
    rc->ns_done = true;
    refs_next(rc);
}

static void on_lq_checked(struct sw_kube_result *res, void *ctx)
{
    struct refs_chain *rc = ctx;
    struct sw_job *j = rc->j;
    struct sw_member *tm = sw_member_find(rc->h, j->rec.target_cluster);
    if (res->status == 404 && rc->lq_default) {
        /* No LocalQueue of the origin's queue's name there (or no Kueue at
         * all): the mirror is not queued, as on a plain cluster. */
        SW_LOG(SW_LOG_INFO, "mirror not queued: no LocalQueue of the origin's name in the target",
               "job=%s target=%s queue=%s", sw_log_q(j->rec.key), sw_log_q(j->rec.target_cluster),
               sw_log_q(rc->lq));
        j->mirror_queue[0] = '\0';
        rc->lq_checked = true;
        refs_next(rc);
        return;
    }
    if (res->status == 404 && tm != NULL) {
        char why[512];
        snprintf(why, sizeof(why),
                 "cluster %s queues mirrors in LocalQueue %s/%s (its registration's localQueue), "
                 "which does not exist there",
                 j->rec.target_cluster, j->rec.ns, tm->rec.spec.local_queue);
        refs_fail(rc, why);
        return;
    }
    if (res->rc != 0) {
        struct sw_hub *h = rc->h;
        rc_free(rc);
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    snprintf(j->mirror_queue, sizeof(j->mirror_queue), "%s", rc->lq);
    rc->lq_checked = true;
    refs_next(rc);
}

static void refs_next(struct refs_chain *rc)
{
    struct sw_hub *h = rc->h;
    struct sw_job *j = rc->j;
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    struct sw_member *tm = sw_member_find(h, j->rec.target_cluster);
    int rcode = 0;
    if (om == NULL || tm == NULL) {
        rcode = SW_ENOENT;
    } else if (!rc->ns_done) {
        /* The namespace, spillway's for this origin or granted, never
         * weaker than home's Pod Security (nsguard.c); on_ns goes on. */
        rcode = sw_nsguard_ensure(h, j, rc->check_only, on_ns, rc);
    } else if (rc->at < rc->refs.n) {
        char path[512];
        rcode = ref_path(rc, true, path, sizeof(path));
        struct sw_kube_req req = {.path = path, .sensitive = 1};
        if (rcode == 0)
            rcode = rc->check_only ? sw_kube_send(tm->client, &req, on_ref_checked, rc, NULL)
                                   : sw_kube_send(om->client, &req, on_ref_got, rc, NULL);
    } else if (rc->lq[0] != '\0' && !rc->lq_checked) {
        /* The target's LocalQueue, before anything changes at home: a
         * mirror in a queue that does not exist would wait for ever. */
        rcode = sw_kube_get(tm->client, SW_KIND_LOCALQUEUE, j->rec.ns, rc->lq, on_lq_checked, rc);
    } else {
        j->refs_ok = true;
        rc_free(rc);
        sw_hub_step_done(h, j, 0);
        return;
    }
    if (rcode != 0) {
        rc_free(rc);
        sw_hub_step_done(h, j, rcode);
    }
}

/* ---- the steps ------------------------------------------------------------ */

static void keep(struct sw_job *j, cJSON *b);

static void on_origin_patched(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    struct sw_hub *h = j->hub;
    const char *uid = sw_json_str(sw_json_child(res->body, "metadata"), "uid");
    if (res->rc != 0) {
        SW_LOG(SW_LOG_WARN, "cannot prepare the origin Job", "job=%s err=%s", sw_log_q(j->rec.key),
               sw_log_q(res->err.msg));
        j->patched_from_rv[0] = '\0';
    } else if (uid && strcmp(uid, j->rec.uid) == 0) {
        /* The answer is the origin whole, at its new generation: step 4
         * builds the mirror from it without reading it again. */
        const char *nrv = sw_json_str(sw_json_child(res->body, "metadata"), "resourceVersion");
        if (nrv == NULL || strcmp(nrv, j->patched_from_rv) == 0)
            j->patched_from_rv[0] = '\0'; /* nothing changed: nothing to wait for */
        keep(j, res->body);
        res->body = NULL;
        j->patched_ms = sw_hub_mono_ms();
    } else
        j->patched_from_rv[0] = '\0';
    sw_hub_step_done(h, j, res->rc);
    if (res->rc == 0)
        SW_FAILPOINT_CRASH(SW_FP_AFTER_SUSPEND);
}

/* Whether the Job `m` (a mirror's name taken in the target) is this
 * attempt's mirror: labelled with the origin's UID, cluster and the
 * attempt, and carrying the hub's proof for the target cluster (mirror.h):
 * labels alone a tenant can write on a Job of that name. Anything else of
 * that name is someone else's. */
static bool mirror_ours(const struct sw_hub *h, const cJSON *m, const struct sw_job_rec *r)
{
    if (!sw_mirror_proof_ok(m, r->target_cluster, h->proof_key))
        return false;
    const cJSON *l = sw_json_path(m, "metadata.labels");
    const char *uid = sw_json_str(l, SW_LBL_ORIGIN_UID);
    const char *cl = sw_json_str(l, SW_LBL_ORIGIN_CL);
    const char *at = sw_json_str(l, SW_LBL_ATTEMPT);
    char want[16];
    snprintf(want, sizeof(want), "%d", r->attempt);
    return uid && cl && at && strcmp(uid, r->uid) == 0 && strcmp(cl, r->cluster) == 0 &&
           strcmp(at, want) == 0;
}

static void refuse_taken_name(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    char why[400];
    snprintf(why, sizeof(why),
             "a Job named %s already exists in namespace %s of cluster %s and is not this Job's "
             "mirror (attempt %d); the burst is refused rather than follow it",
             r->mirror, r->ns, r->target_cluster, r->attempt);
    SW_LOG(SW_LOG_WARN, "mirror name taken by another Job", "job=%s mirror=%s/%s/%s",
           sw_log_q(r->key), sw_log_q(r->target_cluster), sw_log_q(r->ns), sw_log_q(r->mirror));
    /* Nothing of ours runs there: the record stays in dispatching, blocked
     * in its reason, until the name is freed or the Job is deleted. */
    if (strcmp(r->reason, why) != 0)
        sw_follow_event(h, r, "Warning", "BurstRefused", why);
    snprintf(r->reason, sizeof(r->reason), "%s", why);
    j->busy = false;
    j->next_ms = sw_hub_mono_ms() + 30000;
}

static void on_mirror_created(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    struct sw_hub *h = j->hub;
    if (res->rc != 0 && strcmp(res->reason, "AlreadyExists") != 0) {
        SW_LOG(SW_LOG_WARN, "cannot create the mirror", "job=%s mirror=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(j->rec.mirror), sw_log_q(res->err.msg));
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    if (res->rc != 0) {
        /* AlreadyExists: ours only if the cache shows it labelled ours
         * (the next step looks, once the watch has it). */
        SW_LOG(SW_LOG_INFO, "mirror name exists; checking whose it is", "job=%s mirror=%s",
               sw_log_q(j->rec.key), sw_log_q(j->rec.mirror));
        sw_hub_step_done(h, j, SW_EUNAVAIL);
        return;
    }
    SW_FAILPOINT_CRASH(SW_FP_AFTER_MIRROR_CREATE);
    struct sw_job_rec *r = &j->rec;
    r->state = SW_JS_DISPATCHED;
    r->dispatched_ms = sw_hub_wall_ms();
    h->m.dispatches++;
    if (r->created > 0)
        sw_metrics_dispatch_latency(h, (double)r->dispatched_ms / 1000.0 - r->created);
    SW_LOG(SW_LOG_INFO, "mirror created", "job=%s mirror=%s/%s/%s attempt=%d", sw_log_q(r->key),
           sw_log_q(r->target_cluster), sw_log_q(r->ns), sw_log_q(r->mirror), r->attempt);
    bool burst = strcmp(r->target_cluster, r->cluster) != 0;
    if (burst && r->has_kueue)
        sw_metrics_kueue_burst(h, r->cluster, r->kueue.cluster_queue);
    char msg[SW_REC_SUMMARY_MAX + 256];
    snprintf(msg, sizeof(msg), "%s; mirror %s/%s/%s (attempt %d)", r->summary, r->target_cluster,
             r->ns, r->mirror, r->attempt);
    sw_follow_event(h, r, "Normal", burst ? "Burst" : "Placed", msg);
    sw_rec_step(h, j, SW_FP_AFTER_DISPATCHED);
}

/* The origin as an answer of its API server (ownership taken): kept as
 * j->kept without status and managedFields. */
static void keep(struct sw_job *j, cJSON *b)
{
    cJSON_DeleteItemFromObjectCaseSensitive(b, "status");
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(b, "metadata"), "managedFields");
    cJSON_Delete(j->kept);
    j->kept = b;
}

/* Whether the kept copy's spec is the one the cache has now: its
 * metadata.generation at least the cached one's. (A Job's pod template is
 * immutable but for a suspended Job's scheduling directives, and a change
 * of those moves the generation.) */
static bool kept_current(struct sw_hub *h, const struct sw_job *j)
{
    const struct sw_job_record *o = sw_observe_origin_record(h, &j->rec);
    if (j->kept == NULL || o == NULL)
        return false;
    const cJSON *g = sw_json_child(sw_json_child(j->kept, "metadata"), "generation");
    return o->generation < 0 || (cJSON_IsNumber(g) && (int64_t)g->valuedouble >= o->generation);
}

/*
 * The origin with its pod template, for steps 1 and 4: as the cache keeps
 * it for burstable Jobs (their whole spec), or the copy kept from it (and
 * renewed by step 2's patch answer) while its generation is current; with
 * the origin's cluster lost, the kept copy as it is. No GET: the member
 * role has no `get` on Jobs. NULL when there is none yet (the step is
 * retried after a backoff, with the step ended).
 */
static const cJSON *full_origin(struct sw_hub *h, struct sw_job *j, struct sw_member *om)
{
    if (sw_member_lost(om)) {
        if (j->kept == NULL) {
            SW_LOG(SW_LOG_WARN, "home lost before its Job was read whole; waiting for it", "job=%s",
                   sw_log_q(j->rec.key));
            sw_hub_step_done(h, j, SW_EUNAVAIL);
        }
        return j->kept;
    }
    const cJSON *whole = sw_observe_origin_whole(h, &j->rec);
    if (whole != NULL)
        return whole;
    if (kept_current(h, j))
        return j->kept;
    SW_LOG(SW_LOG_WARN, "the cache holds no pod template for the origin yet; waiting", "job=%s",
           sw_log_q(j->rec.key));
    sw_hub_step_done(h, j, SW_EUNAVAIL);
    return NULL;
}

/* How long the cache may lag behind dispatch's own patch before the step
 * goes on without it (a watch that broke is listed again meanwhile). */
#define CACHE_LAG_WAIT_MS 60000

/*
 * Whether the cache's origin is still the one dispatch's patch was made
 * against: its resourceVersion is the one the patch carried, and the patch
 * was answered less than CACHE_LAG_WAIT_MS ago. Past that, or once the
 * cache shows another resourceVersion, the mark is forgotten.
 */
static bool cache_behind(struct sw_job *j, const cJSON *origin)
{
    if (j->patched_from_rv[0] == '\0')
        return false;
    const char *rv = sw_json_str(sw_json_child((cJSON *)origin, "metadata"), "resourceVersion");
    if (rv != NULL && strcmp(rv, j->patched_from_rv) == 0 &&
        sw_hub_mono_ms() - j->patched_ms < CACHE_LAG_WAIT_MS)
        return true;
    j->patched_from_rv[0] = '\0';
    return false;
}

bool sw_dispatch_keep_origin(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    if (sw_job_state_terminal(r->state)) {
        cJSON_Delete(j->kept); /* nothing will be placed again */
        j->kept = NULL;
        return false;
    }
    struct sw_member *om = sw_member_find(h, r->cluster);
    if (om == NULL || !sw_member_reachable(om))
        return false;
    /* The cache's whole copy, when it keeps one, costs no request: the
     * kept copy follows it, for a home that may be lost later. */
    const cJSON *whole = sw_observe_origin_whole(h, r);
    const char *rv = sw_json_str(sw_json_child(whole, "metadata"), "resourceVersion");
    const char *krv = sw_json_str(sw_json_child(j->kept, "metadata"), "resourceVersion");
    if (whole != NULL && !(rv && krv && strcmp(rv, krv) == 0) && !cache_behind(j, whole)) {
        cJSON *copy = cJSON_Duplicate(whole, 1);
        if (copy != NULL)
            keep(j, copy);
    }
    return false;
}

cJSON *sw_dispatch_origin_patch(const cJSON *origin, const struct sw_job_rec *r, bool dispatching,
                                bool suspend)
{
    const cJSON *omd = sw_json_child((cJSON *)origin, "metadata");
    cJSON *patch = cJSON_CreateObject();
    cJSON *md = cJSON_AddObjectToObject(patch, "metadata");
    const char *rv = sw_json_str(omd, "resourceVersion");
    if (dispatching && rv)
        cJSON_AddStringToObject(md, "resourceVersion", rv);
    cJSON *fl = cJSON_AddArrayToObject(md, "finalizers");
    const cJSON *f;
    bool fin = false;
    cJSON_ArrayForEach(f, sw_json_child((cJSON *)omd, "finalizers"))
    {
        if (cJSON_IsString(f)) {
            fin = fin || strcmp(f->valuestring, SW_FINALIZER) == 0;
            cJSON_AddItemToArray(fl, cJSON_CreateString(f->valuestring));
        }
    }
    if (!fin)
        cJSON_AddItemToArray(fl, cJSON_CreateString(SW_FINALIZER));
    cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
    if (dispatching) {
        cJSON_AddStringToObject(ann, SW_ANN_STATE, "dispatching");
        cJSON_AddStringToObject(ann, SW_ANN_DECISION, r->summary);
        /* A withdrawal's reason (shown with the state back to observed)
         * is over with the next attempt; a block's is removed by follow
         * with its condition (sw_follow_show_blocked). */
        const cJSON *oann = sw_json_child((cJSON *)omd, "annotations");
        const char *ostate = sw_json_str(oann, SW_ANN_STATE);
        if (sw_json_str(oann, SW_ANN_REASON) != NULL && ostate != NULL &&
            strcmp(ostate, sw_job_state_name(SW_JS_OBSERVED)) == 0)
            cJSON_AddNullToObject(ann, SW_ANN_REASON);
    }
    if (r->target_cluster[0] && r->mirror[0]) {
        char placed[256];
        snprintf(placed, sizeof(placed), "%s/%s/%s", r->target_cluster, r->ns, r->mirror);
        cJSON_AddStringToObject(ann, SW_ANN_PLACED, placed);
        cJSON_AddStringToObject(ann, SW_ANN_MIRROR, r->mirror);
    }
    if (suspend)
        cJSON_AddBoolToObject(cJSON_AddObjectToObject(patch, "spec"), "suspend", 1);
    return patch;
}

static bool has_finalizer(const cJSON *origin)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "finalizers"))
    {
        if (cJSON_IsString(f) && strcmp(f->valuestring, SW_FINALIZER) == 0)
            return true;
    }
    return false;
}

/* Step 2's patch of the origin, to send (a hold point may send it late). */
struct origin_patch {
    struct sw_job *j;
    cJSON *patch; /* owned */
};

/* Sends step 2's patch of the origin, made against the resourceVersion it
 * names, if any (the patch's ownership taken). */
static void send_origin_patch(void *arg)
{
    const struct origin_patch *op = arg;
    struct sw_job *j = op->j;
    struct sw_job_rec *r = &j->rec;
    struct sw_member *om = sw_member_find(j->hub, r->cluster);
    if (om == NULL) {
        cJSON_Delete(op->patch);
        sw_hub_step_done(j->hub, j, SW_EUNAVAIL);
        return;
    }
    const char *prv = sw_json_str(sw_json_child(op->patch, "metadata"), "resourceVersion");
    snprintf(j->patched_from_rv, sizeof(j->patched_from_rv), "%s",
             prv != NULL && strlen(prv) < sizeof(j->patched_from_rv) ? prv : "");
    int rc = sw_kube_merge_patch(om->client, SW_KIND_JOB, r->ns, r->name, op->patch, NULL,
                                 on_origin_patched, j);
    cJSON_Delete(op->patch);
    if (rc != 0) {
        j->patched_from_rv[0] = '\0';
        sw_hub_step_done(j->hub, j, rc);
    }
}

void sw_dispatch_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    j->hub = h;
    const cJSON *origin = sw_observe_origin(h, r);
    if (origin == NULL)
        return;
    if (r->state == SW_JS_DATA_READY) {
        /* The intent, before any effect. */
        r->attempt++;
        sw_mirror_name(r->uid, r->attempt, r->mirror, sizeof(r->mirror));
        r->state = SW_JS_DISPATCHING;
        /* Where its Secrets are copied, known before any is (copies.c
         * releases them there at the end, wherever the Job went next). */
        if (strcmp(r->target_cluster, r->cluster) != 0 &&
            sw_job_rec_add_copied(r, r->target_cluster) != 0)
            SW_LOG(SW_LOG_WARN,
                   "too many targets to remember: spillway's copies of Secrets there will be left",
                   "job=%s target=%s max=%d", sw_log_q(r->key), sw_log_q(r->target_cluster),
                   SW_REC_MAX_COPIED);
        j->refs_ok = false;
        j->admitted = false;
        j->mirror_queue[0] = '\0'; /* step 1 finds this attempt's */
        j->busy = true;
        sw_rec_step(h, j, SW_FP_AFTER_INTENT);
        return;
    }
    struct sw_member *om = sw_member_find(h, r->cluster);
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    if (om == NULL || tm == NULL || tm->cache == NULL || !sw_cluster_cache_synced(tm->cache))
        return;
    /* The cache has not yet seen the patch step 2 made: what it holds would
     * ask for the same patch again, refused as a conflict (a request spent
     * from the origin cluster's budget). The patch's answer, kept, is the
     * origin as of that patch: the steps go on from it rather than wait for
     * the watch, which on an API server busy with creates was seen 3 to 5 s
     * behind (the mirrors' budget idle meanwhile). The status, which the
     * answer kept lacks, is the cache's (step 3). */
    const cJSON *cached = origin;
    bool from_answer = false;
    if (cache_behind(j, origin)) {
        if (j->kept == NULL) {
            j->next_ms = sw_hub_mono_ms() + 20;
            return;
        }
        origin = j->kept;
        from_answer = true;
    }
    j->busy = true;
    /* Created already (a retry after a crash finds its own work). */
    const cJSON *mirror = sw_observe_mirror(h, r);
    if (mirror != NULL && !mirror_ours(h, mirror, r)) {
        refuse_taken_name(h, j);
        return;
    }
    if (mirror != NULL) {
        struct sw_kube_result fake = {.rc = 0, .reason = ""};
        on_mirror_created(&fake, j);
        return;
    }
    /* The origin's cluster lost: its Job is fenced when it returns (loss.c). */
    if (sw_loss_fence_origin(h, j))
        return;
    bool home_lost = sw_member_lost(om);
    /* 0. home's admission judges the pods of a mirror that goes elsewhere
     * (admission.c), before anything changes at home */
    if (!j->admitted && strcmp(r->target_cluster, r->cluster) != 0) {
        const cJSON *full = full_origin(h, j, om);
        if (full == NULL || !sw_admission_check(h, j, om, full))
            return;
    }
    /* 1. references, before anything changes at home */
    if (!j->refs_ok && strcmp(r->target_cluster, r->cluster) != 0) {
        const cJSON *full = full_origin(h, j, om);
        if (full == NULL)
            return;
        /* A release of copies there for this origin namespace is under
         * way: it counted the users before this Job came, so what it
         * deletes is copied again once it is over (copies.c). */
        if (sw_copies_releasing(h, j)) {
            if (!j->copies_waited)
                SW_LOG(SW_LOG_INFO, "dispatch waits for a release of copies in the target",
                       "job=%s target=%s ns=%s", sw_log_q(r->key), sw_log_q(r->target_cluster),
                       sw_log_q(r->ns));
            j->copies_waited = true;
            j->busy = false;
            j->next_ms = sw_hub_mono_ms() + 100;
            return;
        }
        sw_copies_note(j, sw_json_path(full, "spec.template.spec"));
        struct refs_chain *rc = sw_calloc(1, sizeof(*rc));
        if (rc == NULL) {
            sw_hub_step_done(h, j, SW_ENOMEM);
            return;
        }
        rc->h = h;
        rc->j = j;
        rc->check_only = home_lost;
        /* The LocalQueue its mirror goes into: the target's registration
         * names one, or the origin's own LocalQueue name, if the target
         * has it (docs/kueue.md). */
        j->mirror_queue[0] = '\0';
        const char *oq = sw_queue_origin_queue(origin);
        if (tm->rec.spec.local_queue[0] != '\0')
            snprintf(rc->lq, sizeof(rc->lq), "%s", tm->rec.spec.local_queue);
        else if (oq != NULL && strlen(oq) < sizeof(rc->lq)) {
            snprintf(rc->lq, sizeof(rc->lq), "%s", oq);
            rc->lq_default = true;
        }
        /* Every reference, bounded and checked, before any path is built
         * from one: a pod template that names too many, or a name that is
         * not a Kubernetes name, refuses the burst with the reason. */
        struct sw_error cerr;
        sw_error_clear(&cerr);
        int crc = sw_pod_refs_collect(sw_json_path(full, "spec.template.spec"),
                                      "spec.template.spec", &rc->refs, &cerr);
        if (crc == SW_ENOMEM) {
            rc_free(rc);
            sw_hub_step_done(h, j, crc);
            return;
        }
        if (crc != 0) {
            refs_fail(rc, cerr.msg);
            return;
        }
        refs_next(rc);
        return;
    }
    /* 2. finalizer, and suspend an annotation-only Job; take it from its
     * queue (queue.c) */
    const cJSON *ospec = sw_json_child((cJSON *)origin, "spec");
    bool suspended = cJSON_IsTrue(sw_json_child((cJSON *)ospec, "suspend"));
    bool fin = has_finalizer(origin);
    bool need_suspend = r->form == SW_FORM_ANNOTATION && !suspended;
    const struct sw_queue *q = sw_queue_of(origin);
    bool take = q->holds(origin);
    /* An attempt after a withdrawal or a loss finds the origin with its
     * finalizer and suspended already: it is patched all the same when it
     * does not name this attempt's mirror (one patch per attempt, made
     * against the answer kept while the cache is behind). */
    const char *named = sw_json_str(
        sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "annotations"), SW_ANN_MIRROR);
    bool rename = named == NULL || strcmp(named, r->mirror) != 0;
    cJSON *patch = NULL;
    if ((!fin || need_suspend || take || rename) && !home_lost) {
        /* Home lost: the origin is fenced on return instead (sw_loss_step). */
        int bound = 0;
        sw_observe_pods(h, r->cluster, r->ns, r->name, &bound);
        if ((need_suspend || (take && r->form == SW_FORM_ANNOTATION)) &&
            (bound > 0 || !q->waits(h, j, origin))) {
            /* A pod got a node at home meanwhile (or none waits for GPUs
             * any more): this Job runs at home. */
            r->state = SW_JS_OBSERVED;
            snprintf(r->summary, sizeof(r->summary), "not burst: %s",
                     bound > 0 || !take ? "a pod of the Job was scheduled at home"
                                        : "its Workload is no longer pending for quota at home");
            abandon_attempt(r);
            /* Not burst: its queue is no longer why it left. */
            r->has_kueue = false;
            memset(&r->kueue, 0, sizeof(r->kueue));
            SW_LOG(SW_LOG_INFO, "burst abandoned: the Job runs at home", "job=%s queue=%s",
                   sw_log_q(r->key), sw_log_q(q->name));
            sw_rec_step(h, j, SW_FP_NONE);
            return;
        }
        /* A delegated origin Kueue has started: stopped by Kueue first. */
        if (take && r->form == SW_FORM_DELEGATED && sw_queue_stop_delegated(h, j, origin))
            return;
        /* Where it is going is known now: one patch says it all. */
        patch = sw_dispatch_origin_patch(origin, r, true, need_suspend);
        if (take)
            sw_queue_take(patch, origin);
    }
    if (patch != NULL) {
        struct origin_patch op = {.j = j, .patch = patch};
        /* The race tests' hold point (test builds): the take, built from
         * the origin as just checked, sent late, as over a slow link; the
         * origin may have changed meanwhile. */
        if (take)
            SW_FAILPOINT_HOLD(h->loop, SW_FP_HOLD_TAKE, r->key, send_origin_patch, &op);
        else
            send_origin_patch(&op);
        return;
    }
    /* 3. the origin's pods gone (on a lost home: stopped on return) */
    if (r->form == SW_FORM_ANNOTATION && !home_lost) {
        int pods = sw_observe_pods(h, r->cluster, r->ns, r->name, NULL);
        const cJSON *st = sw_json_child((cJSON *)cached, "status");
        int busy_pods = 0;
        static const char *counts[] = {"active", "ready", "terminating"};
        for (size_t i = 0; i < 3; i++) {
            const cJSON *v = sw_json_child((cJSON *)st, counts[i]);
            if (cJSON_IsNumber(v))
                busy_pods += v->valueint;
        }
        if (pods > 0 || busy_pods > 0) {
            j->busy = false;
            j->next_ms = sw_hub_mono_ms() + 300;
            return;
        }
    }
    /* What the queue still holds for the origin (a Kueue Workload, and a
     * delegated origin's suspend) released. */
    if (!home_lost && sw_queue_release(h, j, origin))
        return;
    /* 4. the mirror */
    const cJSON *full = from_answer ? j->kept : full_origin(h, j, om);
    if (full == NULL)
        return;
    /* The pods as the mirror will carry them judged again: a suspended
     * Job's template may have changed since step 0 (a verdict kept for it
     * costs no request; a new template is asked about first). */
    if (strcmp(r->target_cluster, r->cluster) != 0 && !sw_admission_check(h, j, om, full))
        return;
    const struct sw_hub_store *st = sw_store_for_region(h, r->target_region);
    /* The selector names the label the target's nodes of that capacity
     * carry; with none cached (a NodePool at zero), Karpenter's. */
    const char *cap_label = NULL, *cap_value = NULL;
    if (tm && tm->cache)
        (void)sw_cluster_cache_capacity_label(tm->cache, r->capacity, &cap_label, &cap_value);
    cJSON *m = sw_mirror_build(full, r, r->mirror, st ? st->endpoint : NULL, h->epoch,
                               strcmp(r->capacity, "spot") == 0, cap_label, cap_value, &h->cfg,
                               h->proof_key);
    if (m == NULL) {
        r->state = SW_JS_FAILED;
        snprintf(r->reason, sizeof(r->reason), "the origin Job has no pod template");
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    /* Into the LocalQueue step 1 found in the target; a mirror at home
     * into the origin's own, so that home's quota still governs it. */
    const char *mq = strcmp(r->target_cluster, r->cluster) == 0 ? sw_queue_origin_queue(full)
                     : j->mirror_queue[0] != '\0'               ? j->mirror_queue
                                                                : NULL;
    if (mq != NULL)
        sw_mirror_queue(m, mq);
    int rc = sw_kube_create(tm->client, SW_KIND_JOB, r->ns, m, on_mirror_created, j);
    cJSON_Delete(m);
    if (rc != 0)
        sw_hub_step_done(h, j, rc);
}
