/*
 * queue.c - how a member queues Jobs: the hub's one seam for it, with two
 * implementations behind it (docs/kueue.md):
 *
 *   plain  the scheduler queues pods. A Job waits at home when a pod of it
 *          is Unschedulable for lack of nvidia.com/gpu (or MIG slices,
 *          nvidia.com/mig-<profile>) and none is bound.
 *          Taking it is spec.suspend=true; nothing else holds it.
 *   kueue  Kueue queues Workloads. A Job (label kueue.x-k8s.io/queue-name)
 *          waits at home when its Workload is pending for quota
 *          (QuotaReserved=False, reason Pending, "insufficient unused
 *          quota") and no pod of it is bound. Taking it is the same one
 *          patch of the Job, conditional on its resourceVersion, that also
 *          removes the queue-name label: from then on Kueue's Job reconciler
 *          ignores the Job (manageJobsWithoutQueueName off), and an
 *          unsuspend it computed from an older version fails (Kueue patches
 *          Jobs with their resourceVersion). What Kueue still holds for the
 *          Job, its Workload, is then deactivated (spec.active=false), which
 *          releases any quota reserved meanwhile, and its owner reference
 *          dropped, so that Kueue can delete it later.
 *
 * Nothing here runs while no hub does: the on-prem queue never waits for
 * spillway. Workloads are indexed by their Job's UID once per change of a
 * member's Workloads, not per lookup.
 */
#include <stdlib.h>
#include <string.h>

#include "clusters/exec.h"
#include "clusters/kueue.h"
#include "clusters/record.h"
#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/annotations.h"
#include "controller/hub/hub.h"
#include "controller/hub/learn.h"

/* ---- the Workload index --------------------------------------------------- */

#define WL_BUCKETS 4096
struct sw_queue_wl {
    char key[200]; /* cluster/job-uid */
    struct sw_workload_facts f;
    char rv[32];
    char err[256]; /* a Workload the hub cannot read: why (cut to fit) */
    bool managed;  /* its Job is one of the hub's (sw_queue_home) */
    bool own;      /* and a delegated one, not dispatched yet, holding quota Kueue
                      reserved for it: the hub releases it before its mirror */
    struct sw_queue_wl *next;
};

static struct sw_queue_wl *wls[WL_BUCKETS];
static uint64_t wl_generation, wl_indexed = (uint64_t)-1;

static unsigned wl_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % WL_BUCKETS;
}

static void wl_clear(void)
{
    for (size_t b = 0; b < WL_BUCKETS; b++) {
        struct sw_queue_wl *e = wls[b];
        while (e) {
            struct sw_queue_wl *n = e->next;
            sw_free(e);
            e = n;
        }
        wls[b] = NULL;
    }
}

static const struct sw_queue_wl *wl_find(const char *cluster, const char *uid)
{
    char k[200];
    snprintf(k, sizeof(k), "%s/%s", cluster, uid);
    for (const struct sw_queue_wl *e = wls[wl_hash(k)]; e; e = e->next)
        if (strcmp(e->key, k) == 0)
            return e;
    return NULL;
}

struct wl_scan {
    const char *cluster;
};

static void wl_add(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct wl_scan *ws = ctx;
    const cJSON *o = obj;
    const cJSON *md = sw_json_child((cJSON *)o, "metadata");
    const char *uid = sw_json_str(sw_json_child((cJSON *)md, "labels"), SW_KUEUE_JOB_UID_LABEL);
    if (uid == NULL)
        return; /* not a Job's Workload */
    struct sw_queue_wl *e = sw_calloc(1, sizeof(*e));
    if (e == NULL)
        return;
    snprintf(e->key, sizeof(e->key), "%s/%s", ws->cluster, uid);
    struct sw_error err = {0};
    if (sw_workload_facts_from_json(o, &e->f, &err) != 0)
        snprintf(e->err, sizeof(e->err), "%.255s", err.msg);
    const char *rv = sw_json_str(md, "resourceVersion");
    snprintf(e->rv, sizeof(e->rv), "%s", rv ? rv : "");
    /* Named in errors even when unreadable: its key is "namespace/name". */
    if (e->f.name[0] == '\0')
        snprintf(e->f.name, sizeof(e->f.name), "%s", key);
    unsigned b = wl_hash(e->key);
    e->next = wls[b];
    wls[b] = e;
}

void sw_queue_changed(void)
{
    wl_generation++;
}

void sw_queue_seen(struct sw_member *m, const struct sw_job_record *rec)
{
    /* A member where a burstable Job sits in a Kueue queue, or was taken
     * from one (a hub started after the take still releases its Workload),
     * gets the Kueue informers (once; later calls return at once). */
    if ((sw_job_record_label(rec, SW_KUEUE_QUEUE_LABEL) != NULL ||
         sw_job_record_annotation(rec, SW_ANN_KUEUE_QUEUE) != NULL) &&
        m->cache != NULL)
        sw_cluster_cache_start_kueue(m->cache);
}

const char *sw_queue_origin_queue(const cJSON *origin)
{
    const cJSON *md = sw_json_child((cJSON *)origin, "metadata");
    const char *q = sw_json_str(sw_json_child((cJSON *)md, "labels"), SW_KUEUE_QUEUE_LABEL);
    if (q == NULL || q[0] == '\0')
        q = sw_json_str(sw_json_child((cJSON *)md, "annotations"), SW_ANN_KUEUE_QUEUE);
    return q != NULL && q[0] != '\0' ? q : NULL;
}

void sw_queue_scan(struct sw_hub *h)
{
    /* A member's Kueue informers that have just listed count as a change
     * too, whether or not their list reported each object as added. */
    static size_t synced_before;
    size_t synced = 0;
    for (size_t i = 0; i < h->nmembers; i++)
        synced +=
            h->members[i]->cache != NULL && sw_cluster_cache_kueue_synced(h->members[i]->cache);
    if (synced != synced_before) {
        synced_before = synced;
        wl_generation++;
    }
    if (wl_indexed == wl_generation)
        return;
    wl_clear();
    wl_indexed = wl_generation;
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_kueue_synced(m->cache))
            continue;
        struct wl_scan ws = {m->rec.name};
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_WORKLOAD), wl_add, &ws);
    }
}

/* ---- plain ---------------------------------------------------------------- */

static bool plain_waits(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    (void)origin;
    return sw_observe_starved(h, &j->rec, NULL);
}

static bool plain_holds(const cJSON *origin)
{
    (void)origin;
    return false;
}

static const struct sw_queue plain = {"plain", plain_waits, plain_holds};

/* ---- Kueue ---------------------------------------------------------------- */

static bool kueue_label(const cJSON *origin)
{
    const cJSON *labels = sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "labels");
    return sw_json_str(labels, SW_KUEUE_QUEUE_LABEL) != NULL;
}

/* ---- a member's Kueue API ------------------------------------------------
 * When a member's Kueue informers cannot list, discovery (GET
 * /apis/kueue.x-k8s.io, which every authenticated client may read) says
 * whether that will pass: Kueue not installed, a Kueue without v1beta2, or
 * the list refused, is said once per change and then the Jobs there are
 * left alone; anything else is retried by the informers. Asked again at
 * most once a minute, kept by member name. */

struct api_entry {
    char cluster[SW_CLUSTER_NAME_MAX];
    char why[400]; /* "" while readable as far as is known */
    long list_status;
    bool asking;
    int64_t asked_ms;
    struct api_entry *next;
};

static struct api_entry *apis;

static void on_api_group(struct sw_kube_result *res, void *ctx)
{
    struct api_entry *e = ctx;
    e->asking = false;
    if (res->rc == SW_ECANCELED)
        return;
    char why[sizeof(e->why)];
    if (sw_kueue_api_verdict(e->cluster, res->status, res->body, e->list_status, why,
                             sizeof(why)) != 0) {
        if (strcmp(why, e->why) != 0)
            SW_LOG(SW_LOG_ERROR, "cannot read Kueue on a member; its Kueue Jobs are left alone",
                   "cluster=%s why=%s", sw_log_q(e->cluster), sw_log_q(why));
        snprintf(e->why, sizeof(e->why), "%s", why);
    } else {
        e->why[0] = '\0';
    }
}

const char *sw_queue_kueue_unreadable(struct sw_member *m)
{
    if (m->cache == NULL)
        return "";
    struct api_entry *e = apis;
    while (e != NULL && strcmp(e->cluster, m->rec.name) != 0)
        e = e->next;
    if (e == NULL) {
        if ((e = sw_calloc(1, sizeof(*e))) == NULL)
            return "";
        snprintf(e->cluster, sizeof(e->cluster), "%s", m->rec.name);
        e->next = apis;
        apis = e;
    }
    long failed = sw_cluster_cache_kueue_list_failed(m->cache);
    if (failed == 0 || sw_cluster_cache_kueue_synced(m->cache)) {
        e->why[0] = '\0';
        return e->why;
    }
    int64_t now = sw_hub_mono_ms();
    if (!e->asking && (e->asked_ms == 0 || now - e->asked_ms >= 60000) && m->client != NULL) {
        struct sw_kube_req rq = {.path = "/apis/" SW_KUEUE_GROUP};
        e->asked_ms = now;
        e->list_status = failed;
        e->asking = sw_kube_send(m->client, &rq, on_api_group, e, NULL) == 0;
    }
    return e->why;
}

/* ---- a LocalQueue's ClusterQueue ------------------------------------------
 * A pending Workload names its LocalQueue only. The ClusterQueue behind it
 * is read once per member, namespace and LocalQueue (a GET: the member role
 * has `get` on LocalQueues, no list) and kept; a LocalQueue is not moved
 * to another ClusterQueue in practice, and one the GET cannot find is
 * asked again after a minute. */

#define LQ_BUCKETS 256

struct lq_entry {
    char key[200]; /* cluster/namespace/localqueue */
    char cq[64];   /* its spec.clusterQueue; "" while unknown */
    bool missing;  /* the last GET found none (404) */
    bool asking;
    int64_t asked_ms;
    struct lq_entry *next;
};

static struct lq_entry *lqs[LQ_BUCKETS];
#define LQ_MAX 4096 /* LocalQueues kept, over every member and namespace */
static size_t n_lqs;

static void on_lq(struct sw_kube_result *res, void *ctx)
{
    struct lq_entry *e = ctx;
    e->asking = false;
    e->missing = res->rc == SW_ENOENT;
    const char *cq =
        res->rc == 0 ? sw_json_str(sw_json_child(res->body, "spec"), "clusterQueue") : NULL;
    if (cq != NULL && strlen(cq) < sizeof(e->cq)) {
        snprintf(e->cq, sizeof(e->cq), "%s", cq);
        sw_queue_changed();
    } else {
        SW_LOG(SW_LOG_DEBUG, "LocalQueue not read", "key=%s err=%s", sw_log_q(e->key),
               sw_log_q(res->rc ? res->err.msg : "no spec.clusterQueue"));
    }
}

/* The ClusterQueue of LocalQueue `lq` in `ns` of member `m`, or NULL while
 * unknown (asked for then; `*asking`, when given: the read is under way). */
static const char *lq_cluster_queue_of(struct sw_member *m, const char *ns, const char *lq,
                                       bool *asking)
{
    char key[200];
    snprintf(key, sizeof(key), "%s/%s/%s", m->rec.name, ns, lq);
    struct lq_entry *e = lqs[wl_hash(key) % LQ_BUCKETS];
    while (e != NULL && strcmp(e->key, key) != 0)
        e = e->next;
    if (e == NULL) {
        /* Queue names are the Jobs' labels, written by tenants: the table
         * is bounded, and a name past its bound is not read (unknown, as
         * before its GET: the Job is weighed without it). */
        if (n_lqs >= LQ_MAX)
            return NULL;
        e = sw_calloc(1, sizeof(*e));
        if (e == NULL)
            return NULL;
        n_lqs++;
        snprintf(e->key, sizeof(e->key), "%s", key);
        unsigned b = wl_hash(key) % LQ_BUCKETS;
        e->next = lqs[b];
        lqs[b] = e;
    }
    if (e->cq[0] != '\0')
        return e->cq;
    int64_t now = sw_hub_mono_ms();
    if (!e->asking && (e->asked_ms == 0 || now - e->asked_ms >= 60000) && m->client != NULL) {
        e->asked_ms = now;
        e->asking = sw_kube_get(m->client, SW_KIND_LOCALQUEUE, ns, lq, on_lq, e) == 0;
    }
    if (asking != NULL)
        *asking = e->asking;
    return NULL;
}

static const char *lq_cluster_queue(struct sw_member *m, const char *ns, const char *lq)
{
    return lq_cluster_queue_of(m, ns, lq, NULL);
}

const char *sw_queue_local_queue_cq(struct sw_member *m, const char *ns, const char *lq,
                                    bool *asking)
{
    *asking = false;
    if (m == NULL || lq == NULL || lq[0] == '\0')
        return NULL;
    return lq_cluster_queue_of(m, ns, lq, asking);
}

/* Whether the last GET of LocalQueue `lq` in `ns` of `m` found none. */
static bool lq_missing(struct sw_member *m, const char *ns, const char *lq)
{
    char key[200];
    snprintf(key, sizeof(key), "%s/%s/%s", m->rec.name, ns, lq);
    for (const struct lq_entry *e = lqs[wl_hash(key) % LQ_BUCKETS]; e != NULL; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e->missing && e->cq[0] == '\0';
    return false;
}

int sw_queue_home_unqueued(struct sw_hub *h, const struct sw_job *j, const cJSON *origin, char *why,
                           size_t len)
{
    why[0] = '\0';
    const char *oq = sw_queue_origin_queue(origin);
    struct sw_member *m = sw_member_find(h, j->rec.cluster);
    if (oq == NULL || m == NULL || m->cache == NULL)
        return 0;
    /* Its own Workload, while it is queued: Kueue's word, either way. */
    const struct sw_queue_wl *e = wl_find(j->rec.cluster, j->rec.uid);
    bool queued = e != NULL && e->err[0] == '\0' && e->f.state != SW_WL_INACTIVE &&
                  e->f.state != SW_WL_FINISHED;
    if (queued && e->f.state != SW_WL_INADMISSIBLE)
        return 0;
    if (queued) {
        char said[200];
        sw_log_escape(e->f.message, said, sizeof(said));
        snprintf(why, len, "its LocalQueue %s/%s in %s cannot admit it: Kueue says %s%s%s",
                 j->rec.ns, oq, m->rec.name, said[0] == '"' ? "" : "\"", said,
                 said[0] == '"' ? "" : "\"");
        return 1;
    }
    /* Else (none yet, or taken from Kueue) the LocalQueue (one GET, kept)
     * and its ClusterQueue (listed). */
    bool asking = false;
    const char *cq = lq_cluster_queue_of(m, j->rec.ns, oq, &asking);
    if (asking)
        return -1;
    if (cq == NULL) {
        if (!lq_missing(m, j->rec.ns, oq))
            return 0;
        snprintf(why, len, "its LocalQueue %s/%s does not exist in %s", j->rec.ns, oq, m->rec.name);
        return 1;
    }
    if (!sw_cluster_cache_kueue_synced(m->cache))
        return 0;
    const cJSON *o = sw_informer_get(sw_cluster_cache_informer(m->cache, SW_KIND_CLUSTERQUEUE), cq);
    const char *stop = sw_json_str(sw_json_child((cJSON *)o, "spec"), "stopPolicy");
    if (o != NULL && (stop == NULL || strcmp(stop, "None") == 0))
        return 0;
    snprintf(why, len, "the ClusterQueue %s of its LocalQueue %s/%s %s in %s", cq, j->rec.ns, oq,
             o == NULL ? "does not exist" : "is stopped", m->rec.name);
    return 1;
}

struct cq_all {
    struct sw_cluster_queue_facts cq[SW_QUEUE_MAX_CQ];
    size_t n;
};

static void add_cq_facts(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct cq_all *a = ctx;
    if (a->n < SW_QUEUE_MAX_CQ && sw_cluster_queue_facts_from_json(obj, &a->cq[a->n], NULL) == 0)
        a->n++;
}

/* The ClusterQueues of `m`, or NULL while the hub does not read them
 * (yet). Read again only after a Workload or ClusterQueue changed. */
static const struct cq_all *cq_read(struct sw_member *m)
{
    static struct cq_all *all;
    static char cached_cluster[SW_CLUSTER_NAME_MAX];
    static uint64_t cached_gen = (uint64_t)-1;
    if (m == NULL || m->cache == NULL || !sw_cluster_cache_kueue_synced(m->cache))
        return NULL;
    if (all == NULL && (all = sw_calloc(1, sizeof(*all))) == NULL)
        return NULL;
    if (cached_gen != wl_generation || strcmp(cached_cluster, m->rec.name) != 0) {
        all->n = 0;
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_CLUSTERQUEUE), add_cq_facts,
                            all);
        cached_gen = wl_generation;
        snprintf(cached_cluster, sizeof(cached_cluster), "%s", m->rec.name);
    }
    return all;
}

/* What ClusterQueue `cq` of `m` may still reserve, its cohort's lending
 * included; -1 when the hub does not read it (yet). */
static int64_t cq_headroom(struct sw_member *m, const char *cq)
{
    const struct cq_all *all = cq_read(m);
    for (size_t i = 0; all != NULL && i < all->n; i++)
        if (strcmp(all->cq[i].name, cq) == 0)
            return sw_cluster_queue_headroom(&all->cq[i], all->cq, all->n);
    return -1;
}

/* How the reason of a Job Kueue cannot admit as queued begins: a block
 * with it is the queue's own, and cleared by it (kueue_inadmissible), also
 * by a hub that did not set it. */
#define INADMISSIBLE_WHY "left in its Kueue queue, which cannot admit it: "

/*
 * A Workload Kueue cannot admit as queued (QuotaReserved=False, reason
 * Inadmissible: its LocalQueue, or that LocalQueue's ClusterQueue, missing
 * or inactive) waits for no GPUs and is not burst: the Job is blocked with
 * a reason naming the LocalQueue and quoting Kueue's message (API data:
 * escaped, cut), a Warning Event KueueInadmissible and the annotations;
 * once Kueue proceeds, the block is cleared (state observed again) and the
 * Job is weighed as any other from the next round. True while it is
 * blocked so, or was just cleared (its record being written).
 */
static bool kueue_inadmissible(struct sw_hub *h, struct sw_job *j,
                               const struct sw_workload_facts *f)
{
    struct sw_job_rec *r = &j->rec;
    /* Only a Job still to be decided is blocked or cleared here: asked again
     * by dispatch (a Job decided, then taken), an inadmissible Workload no
     * longer waits for GPUs, and dispatch says so itself (no second
     * record write beside its own). */
    if (r->state != SW_JS_OBSERVED && r->state != SW_JS_BLOCKED)
        return f->state == SW_WL_INADMISSIBLE;
    bool ours = r->state == SW_JS_BLOCKED &&
                (j->queue_blocked ||
                 strncmp(r->reason, INADMISSIBLE_WHY, sizeof(INADMISSIBLE_WHY) - 1) == 0);
    if (f->state == SW_WL_INADMISSIBLE) {
        char said[200], why[sizeof(r->reason)];
        sw_log_escape(f->message, said, sizeof(said));
        snprintf(why, sizeof(why), INADMISSIBLE_WHY "LocalQueue %s/%s: Kueue says %s%s%s", f->ns,
                 f->queue, said[0] == '"' ? "" : "\"", said, said[0] == '"' ? "" : "\"");
        j->queue_blocked = true;
        if (ours && strcmp(r->reason, why) == 0)
            return true;
        j->busy = true;
        sw_follow_block(h, j, "KueueInadmissible", why);
        sw_rec_step(h, j, SW_FP_NONE);
        return true;
    }
    j->queue_blocked = false;
    if (!ours)
        return false;
    SW_LOG(SW_LOG_INFO, "Kueue can admit the Job as queued now: its block cleared", "job=%s wl=%s",
           sw_log_q(r->key), sw_log_q(sw_workload_state_name(f->state)));
    r->state = SW_JS_OBSERVED;
    r->reason[0] = '\0';
    sw_follow_show_blocked(h, r, false);
    j->busy = true;
    sw_rec_step(h, j, SW_FP_NONE);
    return true;
}

bool sw_queue_blocked(const struct sw_job *j)
{
    return j->queue_blocked && j->rec.state == SW_JS_BLOCKED;
}

static bool kueue_waits(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    (void)origin;
    const struct sw_queue_wl *e = wl_find(j->rec.cluster, j->rec.uid);
    if (e == NULL) {
        /* No Workload yet, or Kueue not read yet; or never readable. */
        struct sw_member *m = sw_member_find(h, j->rec.cluster);
        const char *why = m != NULL ? sw_queue_kueue_unreadable(m) : "";
        if (why[0] != '\0' && !j->queue_warned) {
            char msg[480];
            j->queue_warned = true;
            snprintf(msg, sizeof(msg), "not burst, left in its Kueue queue: %s", why);
            SW_LOG(SW_LOG_WARN, "a Job in a Kueue queue the hub cannot read; leaving it alone",
                   "job=%s why=%s", sw_log_q(j->rec.key), sw_log_q(why));
            sw_follow_event(h, &j->rec, "Warning", "KueueUnreadable", msg);
        }
        return false;
    }
    if (e->err[0] != '\0') {
        if (!j->queue_warned) {
            char msg[400];
            j->queue_warned = true;
            snprintf(msg, sizeof(msg), "not burst: %s", e->err);
            SW_LOG(SW_LOG_WARN, "a Workload the hub cannot read; leaving the Job alone",
                   "job=%s err=%s", sw_log_q(j->rec.key), sw_log_q(e->err));
            sw_follow_event(h, &j->rec, "Warning", "BadWorkload", msg);
        }
        return false;
    }
    if (kueue_inadmissible(h, j, &e->f))
        return false;
    int bound = 0;
    sw_observe_pods(h, j->rec.cluster, j->rec.ns, j->rec.name, &bound);
    if (bound != 0)
        return false;
    struct sw_member *m = sw_member_find(h, j->rec.cluster);
    if (e->f.state == SW_WL_PENDING_QUOTA) {
        /* On a member with several ClusterQueues a pending Workload does
         * not say which is its: decided once its LocalQueue's is read (one
         * GET, kept), so that the decision names it. */
        const struct cq_all *all = cq_read(m);
        return all == NULL || all->n <= 1 || lq_cluster_queue(m, e->f.ns, e->f.queue) != NULL;
    }
    /* Kueue's scheduler reaches a Workload in its own time (one head per
     * ClusterQueue a cycle): with a thousand queued at once, the last is
     * marked pending for quota minutes after it was made. One it has not
     * reached that asks for more GPUs than its LocalQueue's ClusterQueue
     * may still reserve (with what the cohort lends) will wait for quota
     * all the same; the hub decides it now. Should Kueue reserve quota for
     * it meanwhile, the take's conditional patch and the Workload's deactivation settle who has it
     * (docs/kueue.md, "Taking a Job from Kueue, never twice"). */
    if (e->f.state != SW_WL_NEW)
        return false;
    const char *cq = m ? lq_cluster_queue(m, e->f.ns, e->f.queue) : NULL;
    int64_t room = cq ? cq_headroom(m, cq) : -1;
    return room >= 0 && e->f.gpus > room;
}

static const struct sw_queue kueue = {"kueue", kueue_waits, kueue_label};

const struct sw_queue *sw_queue_of(const cJSON *origin)
{
    return kueue_label(origin) ? &kueue : &plain;
}

void sw_queue_take(cJSON *patch, const cJSON *origin)
{
    cJSON *md = sw_json_child(patch, "metadata");
    cJSON *labels = sw_json_child(md, "labels");
    if (labels == NULL)
        labels = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddNullToObject(labels, SW_KUEUE_QUEUE_LABEL);
    /* Where it was queued, kept: a hub started later still knows the Job
     * is Kueue's (its Workload to release) and which LocalQueue a mirror
     * of it defaults to. */
    const char *q = sw_json_str(sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "labels"),
                                SW_KUEUE_QUEUE_LABEL);
    if (q != NULL) {
        cJSON *ann = sw_json_child(md, "annotations");
        if (ann == NULL)
            ann = cJSON_AddObjectToObject(md, "annotations");
        if (sw_json_child(ann, SW_ANN_KUEUE_QUEUE) == NULL)
            cJSON_AddStringToObject(ann, SW_ANN_KUEUE_QUEUE, q);
    }
    cJSON *spec = sw_json_child(patch, "spec");
    if (spec == NULL)
        spec = cJSON_AddObjectToObject(patch, "spec");
    /* Kueue's webhook lets the label go only from a suspended Job (a
     * delegated origin's hold is cleared after the take: dispatch.c). */
    if (sw_json_child(spec, "suspend") == NULL)
        cJSON_AddBoolToObject(spec, "suspend", 1);
}

bool sw_queue_taken(const cJSON *origin)
{
    const cJSON *md = sw_json_child((cJSON *)origin, "metadata");
    return sw_json_str(sw_json_child((cJSON *)md, "annotations"), SW_ANN_KUEUE_QUEUE) != NULL &&
           !kueue_label(origin);
}

static void on_deactivated(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    struct sw_hub *h = j->hub;
    if (res->rc != 0)
        SW_LOG(SW_LOG_WARN, "cannot deactivate the origin's Workload", "job=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(res->err.msg));
    else
        SW_LOG(SW_LOG_INFO, "origin's Workload deactivated", "job=%s", sw_log_q(j->rec.key));
    /* Not asked again while the cache has not seen the change yet. */
    if (res->rc == 0 || res->status == 404)
        j->queue_released = true;
    sw_hub_step_done(h, j, res->status == 404 ? 0 : res->rc);
}

static void on_hold_cleared(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    if (res->rc == 0)
        j->kueue_hold_cleared = true;
    else
        SW_LOG(SW_LOG_WARN, "cannot clear Kueue's suspend of the delegated origin", "job=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(res->err.msg));
    sw_hub_step_done(j->hub, j, res->rc);
}

/* A Workload's deactivation, to send (a hold point may send it late). */
struct deactivation {
    struct sw_job *j;
    char ns[sizeof(((struct sw_workload_facts *)0)->ns)];
    char name[sizeof(((struct sw_workload_facts *)0)->name)];
};

/* Deactivates the Workload and takes it from its Job: quota reserved for it
 * meanwhile goes back to the queue. Not owned by the Job any more, Kueue no
 * longer reconciles the Job, and only for a Workload without owners does
 * its Workload controller remove its finalizer when it is deleted (with its
 * namespace, say). */
static void deactivate(void *arg)
{
    const struct deactivation *d = arg;
    struct sw_job *j = d->j;
    struct sw_member *om = sw_member_find(j->hub, j->rec.cluster);
    if (om == NULL || !sw_member_reachable(om)) {
        sw_hub_step_done(j->hub, j, SW_EUNAVAIL);
        return;
    }
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddNullToObject(cJSON_AddObjectToObject(patch, "metadata"), "ownerReferences");
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(patch, "spec"), "active", 0);
    int rc = sw_kube_merge_patch(om->client, SW_KIND_WORKLOAD, d->ns, d->name, patch, NULL,
                                 on_deactivated, j);
    cJSON_Delete(patch);
    if (rc != 0)
        sw_hub_step_done(j->hub, j, rc);
}

int sw_queue_release(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    /* A delegated origin taken from Kueue: Kueue's webhook suspended it as
     * it suspends every queued Job, and the take kept that (the label goes
     * only from a suspended Job). A delegated origin never runs itself; its
     * suspend is its owner's pause of the mirror, so Kueue's hold is
     * cleared once the label is gone, before the first mirror exists. */
    if (j->rec.form == SW_FORM_DELEGATED && j->rec.attempt == 1 && !j->kueue_hold_cleared &&
        om != NULL && sw_queue_taken(origin) &&
        cJSON_IsTrue(sw_json_child(sw_json_child((cJSON *)origin, "spec"), "suspend"))) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddBoolToObject(cJSON_AddObjectToObject(p, "spec"), "suspend", 0);
        SW_LOG(SW_LOG_INFO, "delegated origin taken from Kueue: Kueue's suspend cleared", "job=%s",
               sw_log_q(j->rec.key));
        j->hub = h;
        j->busy = true;
        int rc = sw_kube_merge_patch(om->client, SW_KIND_JOB, j->rec.ns, j->rec.name, p, NULL,
                                     on_hold_cleared, j);
        cJSON_Delete(p);
        if (rc != 0)
            sw_hub_step_done(h, j, rc);
        return 1;
    }
    if (j->queue_released)
        return 0;
    /* A Job taken from Kueue (its annotation, on the origin as dispatch
     * has it: the cache's or its take's answer) on a member whose Kueue
     * informers have not listed yet (a hub started after the take): its
     * Workload is not known yet, so not known to be released either. The
     * mirror waits for the list. */
    const cJSON *ann = sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "annotations");
    bool marked = om != NULL && sw_json_str(ann, SW_ANN_KUEUE_QUEUE) != NULL;
    if (marked && om->cache != NULL && sw_member_reachable(om) &&
        !sw_cluster_cache_kueue_synced(om->cache)) {
        sw_cluster_cache_start_kueue(om->cache);
        j->busy = false;
        j->next_ms = sw_hub_mono_ms() + 500;
        return 1;
    }
    const struct sw_queue_wl *e = wl_find(j->rec.cluster, j->rec.uid);
    /* Inactive already and no owner (a delegated origin's, deactivated
     * before its take, keeps its owner until now: sw_queue_stop_delegated). */
    if (e == NULL || (!e->f.active && !e->f.owned) || e->f.state == SW_WL_FINISHED)
        return 0;
    if (om == NULL || !sw_member_reachable(om))
        return 0;
    /* Deactivated and taken from its Job (deactivate). */
    struct deactivation d = {.j = j};
    snprintf(d.ns, sizeof(d.ns), "%s", e->f.ns);
    snprintf(d.name, sizeof(d.name), "%s", e->f.name);
    j->hub = h;
    j->busy = true;
    /* The race tests' hold point (test builds): the deactivation of a
     * Workload taken from Kueue sent late, so that Kueue may reserve quota
     * for it meanwhile. */
    if (marked)
        SW_FAILPOINT_HOLD(h->loop, SW_FP_HOLD_RELEASE, j->rec.key, deactivate, &d);
    else
        deactivate(&d);
    return 1;
}

static void on_stop_deactivated(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    if (res->rc != 0)
        SW_LOG(SW_LOG_WARN, "cannot deactivate the delegated origin's Workload", "job=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(res->err.msg));
    sw_hub_step_done(j->hub, j, res->rc);
}

int sw_queue_stop_delegated(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    if (om == NULL || om->cache == NULL || !sw_member_reachable(om))
        return 0;
    if (!sw_cluster_cache_kueue_synced(om->cache)) {
        sw_cluster_cache_start_kueue(om->cache);
        j->busy = false;
        j->next_ms = sw_hub_mono_ms() + 500;
        return 1;
    }
    const struct sw_queue_wl *e = wl_find(j->rec.cluster, j->rec.uid);
    if (e == NULL || e->err[0] != '\0' || e->f.state == SW_WL_FINISHED)
        return 0;
    bool suspended = cJSON_IsTrue(sw_json_child(sw_json_child((cJSON *)origin, "spec"), "suspend"));
    if (!e->f.active) {
        /* Deactivated: Kueue evicts it and stops the Job, its template
         * restored in the same update that suspends it. */
        if (suspended && e->f.state != SW_WL_ADMITTED && e->f.state != SW_WL_RESERVED)
            return 0;
        j->busy = false;
        j->next_ms = sw_hub_mono_ms() + 300;
        return 1;
    }
    if (suspended && e->f.state != SW_WL_ADMITTED && e->f.state != SW_WL_RESERVED)
        return 0; /* not started, nothing reserved: the take may go now */
    SW_LOG(SW_LOG_INFO,
           "delegated origin admitted by Kueue: its Workload deactivated before the take",
           "job=%s workload=%s/%s state=%s", sw_log_q(j->rec.key), sw_log_q(e->f.ns),
           sw_log_q(e->f.name), sw_log_q(sw_workload_state_name(e->f.state)));
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(patch, "spec"), "active", 0);
    j->hub = h;
    j->busy = true;
    int rc = sw_kube_merge_patch(om->client, SW_KIND_WORKLOAD, e->f.ns, e->f.name, patch, NULL,
                                 on_stop_deactivated, j);
    cJSON_Delete(patch);
    if (rc != 0)
        sw_hub_step_done(h, j, rc);
    return 1;
}

/* ---- a mirror in the target's queue --------------------------------------- */

static int count_of(const cJSON *status, const char *k)
{
    const cJSON *v = sw_json_child((cJSON *)status, k);
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

static void fmt_span(double s, char *buf, size_t len)
{
    if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else
        snprintf(buf, len, "%.0f min", s / 60);
}

static void on_mirror_paused(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    if (res->rc != 0)
        SW_LOG(SW_LOG_WARN, "cannot pause or resume the mirror's Workload", "job=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(res->err.msg));
    sw_hub_step_done(j->hub, j, res->rc == SW_ENOENT ? 0 : res->rc);
}

int sw_queue_mirror_pause(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, bool paused)
{
    const struct sw_job_rec *r = &j->rec;
    const char *uid = sw_json_str(sw_json_child((cJSON *)mirror, "metadata"), "uid");
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    if (uid == NULL || tm == NULL || tm->cache == NULL || !sw_member_reachable(tm))
        return 0;
    sw_cluster_cache_start_kueue(tm->cache);
    const struct sw_queue_wl *e = wl_find(r->target_cluster, uid);
    if (e == NULL || e->err[0] != '\0' || e->f.state == SW_WL_FINISHED || e->f.active != paused)
        return 0;
    SW_LOG(SW_LOG_INFO,
           paused ? "delegated origin paused: its mirror's Workload deactivated"
                  : "delegated origin resumed: its mirror's Workload active again",
           "job=%s workload=%s/%s/%s", sw_log_q(r->key), sw_log_q(r->target_cluster),
           sw_log_q(e->f.ns), sw_log_q(e->f.name));
    cJSON *patch = cJSON_CreateObject();
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(patch, "spec"), "active", paused ? 0 : 1);
    j->hub = h;
    j->busy = true;
    int rc = sw_kube_merge_patch(tm->client, SW_KIND_WORKLOAD, e->f.ns, e->f.name, patch, NULL,
                                 on_mirror_paused, j);
    cJSON_Delete(patch);
    if (rc != 0)
        sw_hub_step_done(h, j, rc);
    return 1;
}

bool sw_queue_mirror_unadmitted(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, char *why,
                                size_t len)
{
    const struct sw_job_rec *r = &j->rec;
    const cJSON *md = sw_json_child((cJSON *)mirror, "metadata");
    const char *lq = sw_json_str(sw_json_child((cJSON *)md, "labels"), SW_KUEUE_QUEUE_LABEL);
    const char *uid = sw_json_str(md, "uid");
    if (lq == NULL || uid == NULL || r->state != SW_JS_DISPATCHED || r->started_ms != 0)
        return false;
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    if (tm == NULL || tm->cache == NULL)
        return false;
    sw_cluster_cache_start_kueue(tm->cache);
    if (!sw_cluster_cache_kueue_synced(tm->cache))
        return false;
    /* Never started: still suspended, no pod of it counted, ever. */
    const cJSON *st = sw_json_child((cJSON *)mirror, "status");
    if (!cJSON_IsTrue(sw_json_child(sw_json_child((cJSON *)mirror, "spec"), "suspend")) ||
        sw_json_str(st, "startTime") != NULL || count_of(st, "active") != 0 ||
        count_of(st, "ready") != 0 || count_of(st, "succeeded") != 0 ||
        count_of(st, "failed") != 0 || count_of(st, "terminating") != 0 ||
        sw_observe_pods(h, r->target_cluster, r->ns, r->mirror, NULL) != 0)
        return false;
    /* Its Workload: quota reserved or admitted is Kueue's to start now;
     * deactivated, its delegated origin's owner paused it (follow.c). */
    const struct sw_queue_wl *e = wl_find(r->target_cluster, uid);
    if (e != NULL && e->err[0] == '\0' &&
        (e->f.state == SW_WL_RESERVED || e->f.state == SW_WL_ADMITTED ||
         e->f.state == SW_WL_FINISHED || !e->f.active))
        return false;
    double waited = (double)(sw_hub_wall_ms() - r->dispatched_ms) / 1000.0;
    if (r->dispatched_ms <= 0 || waited < h->cfg.mirror_admission_s)
        return false;
    char w[32], b[32];
    fmt_span(waited, w, sizeof(w));
    fmt_span(h->cfg.mirror_admission_s, b, sizeof(b));
    snprintf(why, len,
             "%s %s: mirror %s waited %s unadmitted in LocalQueue %s/%s there (%s%.160s), past "
             "kueue.mirrorAdmissionSeconds (%s)",
             SW_QUEUE_WITHDRAWN, r->target_cluster, r->mirror, w, r->ns, lq,
             e == NULL   ? "no Workload yet"
             : e->err[0] ? "its Workload unreadable"
                         : "Workload: ",
             e == NULL || e->err[0] ? ""
             : e->f.message[0]      ? e->f.message
                                    : e->f.reason,
             b);
    return true;
}

bool sw_queue_mirror_evicted(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, char *why,
                             size_t len, int64_t *evicted_ms, bool *set_aside)
{
    const struct sw_job_rec *r = &j->rec;
    const cJSON *md = sw_json_child((cJSON *)mirror, "metadata");
    const char *lq = sw_json_str(sw_json_child((cJSON *)md, "labels"), SW_KUEUE_QUEUE_LABEL);
    const char *uid = sw_json_str(md, "uid");
    /* Only an attempt seen running: one evicted before it ran is still
     * "never started" to the withdrawal rule above. */
    if (lq == NULL || uid == NULL || r->state != SW_JS_RUNNING || r->started_ms == 0)
        return false;
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    if (tm == NULL || tm->cache == NULL)
        return false;
    sw_cluster_cache_start_kueue(tm->cache);
    if (!sw_cluster_cache_kueue_synced(tm->cache))
        return false;
    /* Kueue suspends the Job it evicts before it gives the quota back; a
     * mirror still unsuspended has pods Kueue has not stopped yet. */
    if (!cJSON_IsTrue(sw_json_child(sw_json_child((cJSON *)mirror, "spec"), "suspend")))
        return false;
    const struct sw_queue_wl *e = wl_find(r->target_cluster, uid);
    /* The Workload is found by the mirror's UID label, which whoever may
     * create Workloads can write: only one in the mirror's own namespace
     * speaks for it. */
    if (e == NULL || e->err[0] != '\0' || strcmp(e->f.ns, r->ns) != 0 ||
        !sw_workload_taken_back(&e->f))
        return false;
    /* "evicted from CLUSTER (REASON)" first: the decision that follows
     * names the eviction by it (decide.c). */
    snprintf(why, len, "%s %s (%s): Kueue evicted mirror %s (Workload %s/%s, LocalQueue %s/%s)%s%s",
             SW_QUEUE_EVICTED, r->target_cluster,
             e->f.evicted_reason[0] ? e->f.evicted_reason : "no reason given", r->mirror, e->f.ns,
             e->f.name, r->ns, lq, e->f.evicted_message[0] ? ": " : "", e->f.evicted_message);
    /* Billed up to the eviction Kueue stamped, never before the attempt
     * started nor after now (a clock apart, a hostile timestamp). */
    int64_t now = sw_hub_wall_ms(), at = 0;
    const char *bad = NULL;
    if (e->f.evicted_at[0] == '\0' || sw_parse_rfc3339(e->f.evicted_at, &at, &bad) != 0)
        at = now;
    *evicted_ms = at < r->started_ms ? r->started_ms : at > now ? now : at;
    /* Only a ClusterQueue stopped sets the member's queue aside: the
     * platform stopped it, and the hub reads no stopPolicy. A preemption
     * is in Kueue's figures already; a LocalQueue stopped is one
     * namespace's (a tenant who may edit its LocalQueue must not freeze a
     * cluster's bursts for everyone), and PodsReadyTimeout and the like
     * are one Workload's own. */
    *set_aside = strcmp(e->f.evicted_reason, "ClusterQueueStopped") == 0;
    return true;
}

/* ---- the home queue, as Kueue has it -------------------------------------- */

static void mark_managed(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)h;
    (void)ctx;
    struct sw_queue_wl *e = (struct sw_queue_wl *)wl_find(j->rec.cluster, j->rec.uid);
    if (e == NULL)
        return;
    e->managed = true;
    enum sw_job_state s = j->rec.state;
    e->own = j->rec.form == SW_FORM_DELEGATED && e->err[0] == '\0' && e->f.active &&
             (e->f.state == SW_WL_RESERVED || e->f.state == SW_WL_ADMITTED) &&
             (s == SW_JS_OBSERVED || s == SW_JS_BLOCKED);
}

static void add_cq(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct sw_queue_home *qh = ctx;
    if (qh->ncq >= SW_QUEUE_MAX_CQ)
        return;
    struct sw_error err = {0};
    if (sw_cluster_queue_facts_from_json(obj, &qh->cq[qh->ncq], &err) == 0)
        qh->ncq++;
    else
        SW_LOG(SW_LOG_WARN, "a ClusterQueue the hub cannot read; not counted", "err=%s",
               sw_log_q(err.msg));
}

static void add_rf(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct sw_queue_home *qh = ctx;
    if (qh->nrf >= sizeof(qh->rf) / sizeof(qh->rf[0]))
        return;
    struct sw_error err = {0};
    if (sw_resource_flavor_facts_from_json(obj, &qh->rf[qh->nrf], &err) == 0)
        qh->nrf += qh->rf[qh->nrf].capacity_type[0] != '\0';
    else
        SW_LOG(SW_LOG_WARN,
               "a ResourceFlavor the hub cannot read; its flavour counts for every pool", "err=%s",
               sw_log_q(err.msg));
}

static int ahead_cmp(const void *a, const void *b)
{
    const struct sw_queue_wl *x = *(const struct sw_queue_wl *const *)a,
                             *y = *(const struct sw_queue_wl *const *)b;
    if (x->f.priority != y->f.priority)
        return x->f.priority > y->f.priority ? -1 : 1;
    return strcmp(x->f.created, y->f.created);
}

/* Quota Kueue reserved for a delegated Job the hub is about to place is the
 * Job's wherever it goes: given back to the ClusterQueue that reserved it
 * (so its cohort's figures stay right), or added as is when that queue is
 * not among those read. */
static void own_gpus(struct sw_queue_home *out, const struct sw_queue_wl *e, int64_t *extra)
{
    for (size_t i = 0; i < out->ncq; i++)
        if (strcmp(out->cq[i].name, e->f.cluster_queue) == 0) {
            out->cq[i].reserved_gpus -= e->f.gpus;
            if (out->cq[i].reserved_gpus < 0)
                out->cq[i].reserved_gpus = 0;
            return;
        }
    *extra += e->f.gpus;
}

int sw_queue_home(struct sw_hub *h, struct sw_member *m, struct sw_queue_home *out)
{
    int64_t extra = 0;
    memset(out, 0, sizeof(*out));
    out->m = m;
    if (m->cache == NULL || !sw_cluster_cache_kueue_synced(m->cache))
        return SW_ENOENT;
    sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_CLUSTERQUEUE), add_cq, out);
    if (out->ncq == 0)
        return SW_ENOENT;
    sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_RESOURCEFLAVOR), add_rf, out);
    long rf_failed = sw_cluster_cache_flavors_list_failed(m->cache);
    if (rf_failed != 0 && !m->flavors_warned) {
        m->flavors_warned = true;
        SW_LOG(SW_LOG_WARN,
               "cannot list the member's Kueue ResourceFlavors; each ClusterQueue's flavours "
               "count for every pool (the member role grants list and watch on resourceflavors)",
               "cluster=%s status=%ld", sw_log_q(m->rec.name), rf_failed);
    }
    for (size_t i = 0; i < out->ncq; i++) {
        out->reserved += out->cq[i].reserved_gpus;
        out->nominal += out->cq[i].nominal_gpus;
    }
    /* Workloads pending for quota that spillway does not manage wait ahead
     * of every burstable Job, in Kueue's order (priority, then age). */
    for (size_t b = 0; b < WL_BUCKETS; b++)
        for (struct sw_queue_wl *e = wls[b]; e; e = e->next)
            e->managed = e->own = false;
    sw_hub_jobs_foreach(h, mark_managed, NULL);
    size_t prefix = strlen(m->rec.name);
    for (size_t b = 0; b < WL_BUCKETS; b++)
        for (struct sw_queue_wl *e = wls[b]; e; e = e->next) {
            if (strncmp(e->key, m->rec.name, prefix) != 0 || e->key[prefix] != '/')
                continue;
            /* Released before its mirror (own_gpus). */
            if (e->own)
                own_gpus(out, e, &extra);
            if (e->err[0] != '\0' || e->managed || e->f.state != SW_WL_PENDING_QUOTA)
                continue;
            if (out->nahead == out->cap_ahead) {
                size_t n = out->cap_ahead ? out->cap_ahead * 2 : 16;
                void *p = sw_realloc(out->ahead_e, n * sizeof(*out->ahead_e));
                if (p == NULL)
                    break;
                out->ahead_e = p;
                out->cap_ahead = n;
            }
            out->ahead_e[out->nahead++] = e;
        }
    if (out->nahead > 1)
        qsort(out->ahead_e, out->nahead, sizeof(*out->ahead_e), ahead_cmp);
    /* What they may still reserve between them, a cohort's unused quota
     * counted once. */
    out->own_extra = extra;
    out->headroom = sw_cluster_queues_free(out->cq, out->ncq) + extra;
    return 0;
}

int64_t sw_queue_home_ahead_gpus(const struct sw_queue_home *qh, size_t i)
{
    const struct sw_queue_wl *e = qh->ahead_e[i];
    return e->f.gpus;
}

double sw_queue_home_ahead_runtime(const struct sw_queue_home *qh, size_t i, double prior_s)
{
    const struct sw_queue_wl *e = qh->ahead_e[i];
    double declared = 0;
    const struct sw_member *m = qh->m;
    if (e->f.owner_job[0] != '\0' && m != NULL && m->cache != NULL) {
        char k[330];
        snprintf(k, sizeof(k), "%s/%s", e->f.ns, e->f.owner_job);
        const struct sw_job_record *j =
            sw_informer_get(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), k);
        const char *ann = j != NULL && strcmp(j->uid, e->f.job_uid) == 0
                              ? sw_job_record_annotation(j, SW_ANN_RUNTIME)
                              : NULL;
        if (ann != NULL && sw_duration_parse(ann, &declared) != 0)
            declared = 0;
    }
    return sw_learn_queued_runtime(declared, (double)e->f.max_exec_s, prior_s);
}

const char *sw_queue_home_ahead_cq(const struct sw_queue_home *qh, size_t i)
{
    const struct sw_queue_wl *e = qh->ahead_e[i];
    if (qh->ncq == 1)
        return qh->cq[0].name;
    if (e->f.cluster_queue[0] != '\0')
        return e->f.cluster_queue; /* evicted, its admission's queue kept */
    return qh->m != NULL ? lq_cluster_queue(qh->m, e->f.ns, e->f.queue) : NULL;
}

int64_t sw_queue_home_cq_headroom(const struct sw_queue_home *qh, size_t i)
{
    return sw_cluster_queue_headroom(&qh->cq[i], qh->cq, qh->ncq);
}

int64_t sw_queue_home_pool_headroom(const struct sw_queue_home *qh, const char *capacity_type,
                                    long cq)
{
    bool narrowed = false;
    struct sw_cluster_queue_facts one;
    for (size_t i = 0; i < qh->ncq && !narrowed; i++)
        narrowed = sw_cluster_queue_for_capacity(&qh->cq[i], capacity_type, qh->rf, qh->nrf, &one);
    /* Every flavour takes it (or no memory to tell): all of them count. */
    struct sw_cluster_queue_facts *p = narrowed ? sw_calloc(qh->ncq, sizeof(*p)) : NULL;
    if (p == NULL)
        return cq < 0 ? qh->headroom : sw_queue_home_cq_headroom(qh, (size_t)cq);
    for (size_t i = 0; i < qh->ncq; i++)
        sw_cluster_queue_for_capacity(&qh->cq[i], capacity_type, qh->rf, qh->nrf, &p[i]);
    int64_t room = cq < 0 ? sw_cluster_queues_free(p, qh->ncq) + qh->own_extra
                          : sw_cluster_queue_headroom(&p[cq], p, qh->ncq);
    sw_free(p);
    return room;
}

const char *sw_queue_admitted_by(const char *cluster, const char *uid)
{
    const struct sw_queue_wl *e = uid != NULL ? wl_find(cluster, uid) : NULL;
    if (e == NULL || e->err[0] != '\0' || e->f.cluster_queue[0] == '\0' ||
        (e->f.state != SW_WL_RESERVED && e->f.state != SW_WL_ADMITTED))
        return NULL;
    return e->f.cluster_queue;
}

int64_t sw_queue_max_exec_s(const char *cluster, const char *uid)
{
    const struct sw_queue_wl *e = uid != NULL ? wl_find(cluster, uid) : NULL;
    return e != NULL && e->err[0] == '\0' ? e->f.max_exec_s : 0;
}

int sw_queue_job_kueue(const struct sw_job *j, const cJSON *origin, const struct sw_queue_home *qh,
                       struct sw_job_kueue *out)
{
    memset(out, 0, sizeof(*out));
    if (!kueue_label(origin) || qh->ncq == 0)
        return SW_ENOENT;
    const char *lq = sw_queue_origin_queue(origin);
    snprintf(out->local_queue, sizeof(out->local_queue), "%.*s", (int)sizeof(out->local_queue) - 1,
             lq ? lq : "");
    /* A pending Workload does not name its ClusterQueue (only an admission
     * does): with one ClusterQueue it is that one, else its LocalQueue's
     * (read once, lq_cluster_queue). */
    const struct sw_cluster_queue_facts *cq = qh->ncq == 1 ? &qh->cq[0] : NULL;
    const struct sw_queue_wl *e = wl_find(j->rec.cluster, j->rec.uid);
    const char *name = e != NULL && e->f.cluster_queue[0] ? e->f.cluster_queue : NULL;
    if (cq == NULL && name == NULL && qh->m != NULL && lq != NULL)
        name = lq_cluster_queue(qh->m, j->rec.ns, lq);
    for (size_t i = 0; cq == NULL && name != NULL && i < qh->ncq; i++)
        if (strcmp(qh->cq[i].name, name) == 0)
            cq = &qh->cq[i];
    /* Evicted by a higher priority and requeued (annotation form: its own
     * Workload, still active until the take). */
    out->preempted = e != NULL && e->err[0] == '\0' && e->f.preempted;
    if (cq != NULL) {
        snprintf(out->cluster_queue, sizeof(out->cluster_queue), "%s", cq->name);
        out->reserved_gpus = cq->reserved_gpus;
        out->nominal_gpus = cq->nominal_gpus;
    } else {
        out->reserved_gpus = qh->reserved;
        out->nominal_gpus = qh->nominal;
    }
    /* The engine queues the Workloads pending for quota that spillway does
     * not manage ahead of every burstable Job of their ClusterQueue (each
     * of the cluster's when its queue is not known: decide.c). */
    out->ahead = 0;
    for (size_t i = 0; i < qh->nahead; i++) {
        const char *of = cq != NULL ? sw_queue_home_ahead_cq(qh, i) : NULL;
        out->ahead += cq == NULL || of == NULL || strcmp(of, cq->name) == 0;
    }
    return 0;
}

void sw_queue_home_free(struct sw_queue_home *qh)
{
    sw_free(qh->ahead_e);
    qh->ahead_e = NULL;
    qh->nahead = qh->cap_ahead = 0;
}
