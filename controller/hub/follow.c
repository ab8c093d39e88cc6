/*
 * follow.c - a dispatched Job followed to its outcome, shown where the user
 * submitted it.
 *
 * The mirror's progress and outcome go onto the origin Job as annotations
 * (spillway.io/state, placed-in, mirror, decision, cost) and Events; for a
 * delegated Job (spec.managedBy: spillway.io/hub) the hub also writes the
 * origin's status from the mirror's (startTime, active, ready, succeeded,
 * failed, conditions, completionTime), so `kubectl wait
 * --for=condition=complete` works wherever it ran. Suspending a delegated
 * origin suspends its mirror.
 *
 * A mirror that fails because its pod was disrupted (its node reclaimed or
 * deleted: the DisruptionTarget rule dispatch.c adds), or that disappears,
 * is deleted and the Job goes back to be decided again, its preemptions
 * counted, up to the configured number of attempts; so is one its target's
 * Kueue evicts after it ran (its queue stopped with HoldAndDrain, a
 * preemption there: queue.c), billed up to the eviction. A mirror its target's
 * Kueue leaves unadmitted past kueue.mirrorAdmissionSeconds is withdrawn
 * (deleted only while it never started) and decided again the same way;
 * so is one whose pods wait on a NodePool short of capacity past
 * karpenter.shortageWithdrawSeconds (deleted only while it is the version
 * seen), so that no pod waits against a NodePool that cannot grow without
 * a decision.
 */
#include <string.h>
#include <time.h>

#include "clusters/exec.h"
#include "common/alloc.h"
#include "common/log.h"
#include "common/json.h"
#include "controller/hub/hub.h"

static const cJSON *condition(const cJSON *job, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, sw_json_child(sw_json_child(job, "status"), "conditions"))
    {
        const char *t = sw_json_str(c, "type"), *s = sw_json_str(c, "status");
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
            return c;
    }
    return NULL;
}

static void now_rfc3339(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- events and annotations (best effort) --------------------------------- */

static void ignore(struct sw_kube_result *res, void *ctx)
{
    const char *what = ctx;
    if (res->rc != 0)
        SW_LOG(SW_LOG_DEBUG, "best-effort request failed", "what=%s err=%s", sw_log_q(what),
               sw_log_q(res->err.msg));
}

/* An Event waiting for the dispatch path to be clear. */
struct sw_pending_event {
    struct sw_pending_event *next;
    char cluster[64];
    char ns[64];
    cJSON *obj;
};

/* At most this many Events wait; past it the oldest is dropped (logged). */
#define MAX_PENDING_EVENTS 100000

static void send_event(struct sw_hub *h, const char *cluster, const char *ns, const cJSON *e)
{
    struct sw_member *m = sw_member_find(h, cluster);
    if (m == NULL || m->client == NULL)
        return;
    sw_kube_create(m->client, SW_KIND_EVENT, ns, e, ignore, "event");
}

/*
 * Whether a request that can wait (an Event, a running Job's status) may go
 * to `cluster` now: no Job waits for its mirror, and the member's rate-limit
 * bucket is nearly full (sw_kube_client_spare). Between two rounds of
 * decisions the backlog may be empty while the budget is still spent on
 * dispatch; these requests then wait too, and spend only what would
 * otherwise go unused, so they never delay the next round's patches.
 */
static bool may_send_later_work(struct sw_hub *h, const char *cluster)
{
    if (h->dispatch_backlog != 0)
        return false;
    struct sw_member *m = sw_member_find(h, cluster);
    return m == NULL || m->client == NULL || sw_kube_client_spare(m->client);
}

void sw_follow_flush_events(struct sw_hub *h, size_t max)
{
    struct sw_pending_event **pp = &h->events_head, *prev = NULL;
    size_t sent = 0, looked = 0;
    /* Events for a member whose budget is spent are passed over, not dropped;
     * a bounded look keeps a long queue cheap. */
    while (*pp && sent < max && looked++ < 1000) {
        struct sw_pending_event *p = *pp;
        if (!may_send_later_work(h, p->cluster)) {
            prev = p;
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        if (h->events_tail == p)
            h->events_tail = prev;
        h->nevents--;
        send_event(h, p->cluster, p->ns, p->obj);
        cJSON_Delete(p->obj);
        sw_free(p);
        sent++;
    }
}

void sw_follow_event(struct sw_hub *h, const struct sw_job_rec *r, const char *type,
                     const char *reason, const char *message)
{
    static unsigned seq;
    char name[128], ts[32];
    snprintf(name, sizeof(name), "%.60s.sw%llx%04x", r->name, (unsigned long long)sw_hub_wall_ms(),
             ++seq & 0xffff);
    now_rfc3339(ts, sizeof(ts));
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "apiVersion", "v1");
    cJSON_AddStringToObject(e, "kind", "Event");
    cJSON *md = cJSON_AddObjectToObject(e, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", r->ns);
    cJSON *io = cJSON_AddObjectToObject(e, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", "batch/v1");
    cJSON_AddStringToObject(io, "kind", "Job");
    cJSON_AddStringToObject(io, "name", r->name);
    cJSON_AddStringToObject(io, "namespace", r->ns);
    if (r->uid[0])
        cJSON_AddStringToObject(io, "uid", r->uid);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddStringToObject(e, "reason", reason);
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "source"), "component", "spillway");
    cJSON_AddStringToObject(e, "firstTimestamp", ts);
    cJSON_AddStringToObject(e, "lastTimestamp", ts);
    cJSON_AddNumberToObject(e, "count", 1);
    if (h->events_head == NULL && may_send_later_work(h, r->cluster)) {
        send_event(h, r->cluster, r->ns, e);
        cJSON_Delete(e);
        return;
    }
    struct sw_pending_event *p = sw_calloc(1, sizeof(*p));
    if (p == NULL) {
        cJSON_Delete(e);
        return;
    }
    snprintf(p->cluster, sizeof(p->cluster), "%s", r->cluster);
    snprintf(p->ns, sizeof(p->ns), "%s", r->ns);
    p->obj = e;
    if (h->events_tail)
        h->events_tail->next = p;
    else
        h->events_head = p;
    h->events_tail = p;
    if (++h->nevents > MAX_PENDING_EVENTS) {
        SW_LOG(SW_LOG_WARN, "too many Events waiting; dropping the oldest", "max=%d",
               MAX_PENDING_EVENTS);
        struct sw_pending_event *old = h->events_head;
        h->events_head = old->next;
        h->nevents--;
        cJSON_Delete(old->obj);
        sw_free(old);
    }
}

static double cost_so_far(const struct sw_job_rec *r)
{
    return sw_job_rec_cost(r, sw_hub_wall_ms());
}

void sw_follow_annotate(struct sw_hub *h, const struct sw_job_rec *r)
{
    struct sw_member *m = sw_member_find(h, r->cluster);
    if (m == NULL || m->client == NULL)
        return;
    cJSON *p = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"), "annotations");
    char placed[256], cost[96];
    snprintf(placed, sizeof(placed), "%s/%s/%s", r->target_cluster, r->ns, r->mirror);
    snprintf(cost, sizeof(cost), "$%.2f expected, $%.2f so far", r->expected_cost, cost_so_far(r));
    cJSON_AddStringToObject(ann, SW_ANN_STATE, sw_job_state_name(r->state));
    cJSON_AddStringToObject(ann, SW_ANN_PLACED, placed);
    cJSON_AddStringToObject(ann, SW_ANN_MIRROR, r->mirror);
    cJSON_AddStringToObject(ann, SW_ANN_DECISION, r->summary);
    cJSON_AddStringToObject(ann, SW_ANN_COST, cost);
    sw_kube_merge_patch(m->client, SW_KIND_JOB, r->ns, r->name, p, NULL, ignore, "annotate");
    cJSON_Delete(p);
}

void sw_follow_show_unplaced(struct sw_hub *h, const struct sw_job_rec *r)
{
    struct sw_member *m = sw_member_find(h, r->cluster);
    if (m == NULL || m->client == NULL)
        return;
    cJSON *p = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"), "annotations");
    cJSON_AddStringToObject(ann, SW_ANN_STATE, sw_job_state_name(SW_JS_OBSERVED));
    cJSON_AddStringToObject(ann, SW_ANN_REASON, r->reason);
    cJSON_AddNullToObject(ann, SW_ANN_PLACED);
    cJSON_AddNullToObject(ann, SW_ANN_MIRROR);
    sw_kube_merge_patch(m->client, SW_KIND_JOB, r->ns, r->name, p, NULL, ignore, "annotate");
    cJSON_Delete(p);
}

void sw_follow_show_blocked(struct sw_hub *h, const struct sw_job_rec *r, bool blocked)
{
    struct sw_member *m = sw_member_find(h, r->cluster);
    if (m == NULL || m->client == NULL)
        return;
    cJSON *p = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "metadata"), "annotations");
    if (blocked) {
        cJSON_AddStringToObject(ann, SW_ANN_STATE, sw_job_state_name(SW_JS_BLOCKED));
        cJSON_AddStringToObject(ann, SW_ANN_REASON, r->reason);
    } else {
        cJSON_AddStringToObject(ann, SW_ANN_STATE, sw_job_state_name(r->state));
        cJSON_AddNullToObject(ann, SW_ANN_REASON);
    }
    sw_kube_merge_patch(m->client, SW_KIND_JOB, r->ns, r->name, p, NULL, ignore, "annotate");
    cJSON_Delete(p);
    if (r->form != SW_FORM_DELEGATED)
        return;
    /* The origin's status is the hub's alone while no mirror runs. */
    char ts[32];
    now_rfc3339(ts, sizeof(ts));
    p = cJSON_CreateObject();
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", SW_COND_BLOCKED);
    cJSON_AddStringToObject(c, "status", blocked ? "True" : "False");
    cJSON_AddStringToObject(c, "reason", blocked ? "BurstBlocked" : "Unblocked");
    cJSON_AddStringToObject(c, "message", blocked ? r->reason : "");
    cJSON_AddStringToObject(c, "lastProbeTime", ts);
    cJSON_AddStringToObject(c, "lastTransitionTime", ts);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(p, "status"), "conditions"),
                         c);
    sw_kube_merge_patch(m->client, SW_KIND_JOB, r->ns, r->name, p, "status", ignore, "blocked");
    cJSON_Delete(p);
}

void sw_follow_block(struct sw_hub *h, struct sw_job *j, const char *event, const char *why)
{
    bool same = j->rec.state == SW_JS_BLOCKED &&
                strncmp(j->rec.reason, why, sizeof(j->rec.reason) - 1) == 0;
    snprintf(j->rec.reason, sizeof(j->rec.reason), "%s", why);
    j->rec.state = SW_JS_BLOCKED;
    j->rec.decided_ms = sw_hub_wall_ms();
    if (same)
        return; /* said already */
    SW_LOG(SW_LOG_WARN, "burst blocked", "job=%s reason=%s", sw_log_q(j->rec.key), sw_log_q(why));
    sw_follow_event(h, &j->rec, "Warning", event, why);
    sw_follow_show_blocked(h, &j->rec, true);
}

/* ---- the origin's status (delegated Jobs) --------------------------------- */

static void on_status(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    if (res->rc != 0) {
        SW_LOG(SW_LOG_WARN, "cannot write the origin's status", "job=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(res->err.msg));
    } else if (sw_job_state_terminal(j->rec.state)) {
        j->status_synced = true;
    }
    sw_hub_step_done(j->hub, j, res->rc);
}

/* Copies the mirror's status onto the origin (delegated only); busy. */
static int write_status(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, bool terminal)
{
    struct sw_member *m = sw_member_find(h, j->rec.cluster);
    if (m == NULL)
        return SW_ENOENT;
    const cJSON *ms = sw_json_child(mirror, "status");
    cJSON *p = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(p, "status");
    static const char *run_fields[] = {"startTime", "active", "ready", "terminating"};
    static const char *end_fields[] = {
        "startTime", "completionTime", "active",           "ready",         "succeeded",
        "failed",    "conditions",     "completedIndexes", "failedIndexes", "terminating"};
    const char **fields = terminal ? end_fields : run_fields;
    size_t n = terminal ? sizeof(end_fields) / sizeof(end_fields[0])
                        : sizeof(run_fields) / sizeof(run_fields[0]);
    for (size_t i = 0; i < n; i++) {
        const cJSON *v = sw_json_child(ms, fields[i]);
        if (v)
            cJSON_AddItemToObject(st, fields[i], cJSON_Duplicate(v, 1));
    }
    /* startTime is set once: a later attempt's mirror does not move it. */
    const cJSON *origin = sw_observe_origin(h, &j->rec);
    if (sw_json_str(sw_json_child(origin, "status"), "startTime") != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(st, "startTime");
    else if (sw_json_child(st, "startTime") == NULL) {
        char ts[32];
        now_rfc3339(ts, sizeof(ts));
        cJSON_AddStringToObject(st, "startTime", ts);
    }
    /* Counts the mirror's status leaves out are zero; a merge patch must
     * say so, or the origin keeps its earlier values. */
    static const char *counts[] = {"active", "ready", "terminating", "succeeded", "failed"};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        if (sw_json_child(st, counts[i]) == NULL && (terminal || i < 3))
            cJSON_AddNumberToObject(st, counts[i], 0);
    int rc = sw_kube_merge_patch(m->client, SW_KIND_JOB, j->rec.ns, j->rec.name, p, "status",
                                 on_status, j);
    cJSON_Delete(p);
    return rc;
}

/* A delegated origin failed by the hub itself (no mirror status to copy):
 * FailureTarget and Failed, with the startTime the API requires of a
 * finished Job. Busy. */
static int write_failed(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_member *m = sw_member_find(h, j->rec.cluster);
    if (m == NULL)
        return SW_ENOENT;
    char ts[32];
    now_rfc3339(ts, sizeof(ts));
    cJSON *p = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(p, "status");
    if (sw_json_str(sw_json_child(origin, "status"), "startTime") == NULL)
        cJSON_AddStringToObject(st, "startTime", ts);
    cJSON_AddNumberToObject(st, "active", 0);
    cJSON_AddNumberToObject(st, "ready", 0);
    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    static const char *types[] = {"FailureTarget", "Failed"};
    for (size_t i = 0; i < 2; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", types[i]);
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddStringToObject(c, "reason", "SpillwayGaveUp");
        cJSON_AddStringToObject(c, "message", j->rec.reason);
        cJSON_AddStringToObject(c, "lastProbeTime", ts);
        cJSON_AddStringToObject(c, "lastTransitionTime", ts);
        cJSON_AddItemToArray(conds, c);
    }
    int rc = sw_kube_merge_patch(m->client, SW_KIND_JOB, j->rec.ns, j->rec.name, p, "status",
                                 on_status, j);
    cJSON_Delete(p);
    return rc;
}

/* A wall time in ms as RFC 3339. */
static void ms_rfc3339(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * A delegated origin completed by the hub itself: its mirror completed (the
 * record says so) but is gone, deleted before the origin's status was
 * written, and no last state of it was kept. What the API requires of a
 * Job that completed: SuccessCriteriaMet and Complete, a completionTime,
 * every completion succeeded (and, Indexed, every index). Busy.
 */
static int write_completed(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_member *m = sw_member_find(h, j->rec.cluster);
    if (m == NULL)
        return SW_ENOENT;
    const struct sw_job_rec *r = &j->rec;
    char ts[32], start[32];
    ms_rfc3339(r->finished_ms ? r->finished_ms : sw_hub_wall_ms(), ts, sizeof(ts));
    ms_rfc3339(r->started_ms ? r->started_ms : r->dispatched_ms, start, sizeof(start));
    const cJSON *spec = sw_json_child(origin, "spec");
    const cJSON *cv = sw_json_child(spec, "completions");
    int completions = cJSON_IsNumber(cv) && cv->valueint > 0 ? cv->valueint : 1;
    const char *mode = sw_json_str(spec, "completionMode");
    cJSON *p = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(p, "status");
    if (sw_json_str(sw_json_child(origin, "status"), "startTime") == NULL)
        cJSON_AddStringToObject(st, "startTime", start);
    cJSON_AddStringToObject(st, "completionTime", ts);
    static const char *zero[] = {"active", "ready", "terminating", "failed"};
    for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
        cJSON_AddNumberToObject(st, zero[i], 0);
    cJSON_AddNumberToObject(st, "succeeded", completions);
    if (mode && strcmp(mode, "Indexed") == 0) {
        char idx[32];
        if (completions == 1)
            snprintf(idx, sizeof(idx), "0");
        else
            snprintf(idx, sizeof(idx), "0-%d", completions - 1);
        cJSON_AddStringToObject(st, "completedIndexes", idx);
    }
    cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
    static const char *types[] = {"SuccessCriteriaMet", "Complete"};
    for (size_t i = 0; i < 2; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", types[i]);
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddStringToObject(c, "reason", "CompletedElsewhere");
        char msg[300];
        snprintf(msg, sizeof(msg), "completed in %s as %s (attempt %d); its mirror was deleted",
                 r->target_cluster, r->mirror, r->attempt);
        cJSON_AddStringToObject(c, "message", msg);
        cJSON_AddStringToObject(c, "lastProbeTime", ts);
        cJSON_AddStringToObject(c, "lastTransitionTime", ts);
        cJSON_AddItemToArray(conds, c);
    }
    int rc = sw_kube_merge_patch(m->client, SW_KIND_JOB, r->ns, r->name, p, "status", on_status, j);
    cJSON_Delete(p);
    return rc;
}

/* ---- record transitions ----------------------------------------------------- */

/* A number of a Job's status, 0 when absent (the API leaves zeros out). */
static int count_of(const cJSON *status, const char *k)
{
    const cJSON *v = sw_json_child(status, k);
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

static void requeued_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    (void)ctx;
    sw_hub_step_done(h, j, rc);
    if (rc == 0 && j->rec.state == SW_JS_OBSERVED)
        sw_hub_want_decide(h);
}

/*
 * A mirror lost (its node gone, its pod disrupted, the Job gone, its
 * target's Kueue evicted it): the intent first (state "requeued", the
 * preemption counted), then the old mirror is deleted and its live pods
 * awaited (requeue_step), and only then is the Job decided again, so that
 * two attempts never run at once. `interrupted`: its capacity was taken
 * (counted against its NodePool's interruption rate); a queue's eviction
 * is not.
 */
static void requeue_as(struct sw_hub *h, struct sw_job *j, const char *why, bool interrupted)
{
    struct sw_job_rec *r = &j->rec;
    snprintf(r->reason, sizeof(r->reason), "%s", why);
    r->state = SW_JS_REQUEUED;
    r->preemptions++;
    h->m.preemptions++;
    sw_capacity_mirror_ended(h, r, interrupted);
    SW_LOG(SW_LOG_WARN, "mirror lost; requeueing", "job=%s mirror=%s reason=%s", sw_log_q(r->key),
           sw_log_q(r->mirror), sw_log_q(r->reason));
    sw_data_outputs_stop(h, j);
    sw_rec_step(h, j, SW_FP_NONE);
}

static void requeue(struct sw_hub *h, struct sw_job *j, const char *why)
{
    requeue_as(h, j, why, true);
}

static void on_lost_deleted(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    int rc = res->rc != 0 && res->status != 404 ? res->rc : 0;
    sw_hub_step_done(j->hub, j, rc);
}

/* "requeued": delete the old mirror, wait for its live pods, then decide again. */
static void requeue_step(struct sw_hub *h, struct sw_job *j, struct sw_member *tm,
                         const cJSON *mirror)
{
    struct sw_job_rec *r = &j->rec;
    if (mirror && sw_json_child(sw_json_child(mirror, "metadata"), "deletionTimestamp") == NULL) {
        struct sw_kube_delete_opts d = {.propagation = "Foreground", .grace_period_s = -1};
        j->busy = true;
        if (sw_kube_delete(tm->client, SW_KIND_JOB, r->ns, r->mirror, &d, on_lost_deleted, j) != 0)
            sw_hub_step_done(h, j, SW_EUNAVAIL);
        return;
    }
    /* Pods on a node that is gone run nowhere; the rest must be gone. */
    int pods = sw_observe_pods(h, r->target_cluster, r->ns, r->mirror, NULL);
    int lost = sw_observe_lost(h, r->target_cluster, r->ns, r->mirror, NULL, 0);
    if (pods - lost > 0) {
        /* An attempt billed up to its eviction (follow_step) is billed
         * on while its pods still run: their grace period is the
         * template's, which its author chooses. */
        if (r->finished_ms != 0)
            r->finished_ms = sw_hub_wall_ms();
        j->next_ms = sw_hub_mono_ms() + 500;
        return;
    }
    char msg[700];
    /* The lost attempt's cost is counted before the record forgets its start. */
    sw_metrics_spend(h, j);
    if (r->attempt >= h->cfg.max_attempts) {
        r->state = SW_JS_FAILED;
        r->finished_ms = sw_hub_wall_ms();
        char last[200];
        snprintf(last, sizeof(last), "%.199s", r->reason);
        snprintf(r->reason, sizeof(r->reason), "lost its mirror %d times (max %d attempts): %s",
                 r->preemptions, h->cfg.max_attempts, last);
        snprintf(msg, sizeof(msg), "%s", r->reason);
        sw_follow_event(h, r, "Warning", "BurstFailed", msg);
    } else {
        bool withdrawn = strncmp(r->reason, SW_QUEUE_WITHDRAWN, strlen(SW_QUEUE_WITHDRAWN)) == 0;
        bool evicted = strncmp(r->reason, SW_QUEUE_EVICTED, strlen(SW_QUEUE_EVICTED)) == 0;
        snprintf(msg, sizeof(msg), "mirror %s/%s %s (%.400s); deciding again (attempt %d of %d)",
                 r->target_cluster, r->mirror,
                 withdrawn ? "withdrawn"
                 : evicted ? "evicted"
                           : "lost",
                 r->reason, r->attempt + 1, h->cfg.max_attempts);
        sw_follow_event(h, r, "Warning", "Requeued", msg);
        r->state = SW_JS_OBSERVED;
        r->started_ms = 0;
        r->finished_ms = 0; /* an evicted attempt's end, billed above */
        r->mirror_completed_ms = 0;
        r->node_wait_ms = 0; /* the next attempt's wait is its own */
        r->node_pool[0] = r->node_claim[0] = '\0';
        r->node_wait_expected_s = r->node_wait_s = 0;
        j->outputs_done = 0;
        j->status_synced = false;
    }
    j->busy = true;
    if (sw_rec_write(h, j, requeued_written, NULL) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

/* ---- a mirror waiting for a node being provisioned ------------------------- */

static void node_wait_event(struct sw_hub *h, const struct sw_job_rec *r)
{
    char msg[600];
    snprintf(msg, sizeof(msg),
             "mirror %s/%s/%s waits for a node: NodeClaim %s of NodePool %s is being "
             "provisioned in %s (expected %.0f s)",
             r->target_cluster, r->ns, r->mirror, r->node_claim, r->node_pool, r->target_cluster,
             r->node_wait_expected_s);
    sw_follow_event(h, r, "Normal", "WaitingForNode", msg);
}

static void node_wait_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    (void)ctx;
    if (rc == 0)
        node_wait_event(h, &j->rec);
    sw_hub_step_done(h, j, rc);
}

/*
 * A dispatched mirror with no pod ready and one not bound to a node: when
 * its pool is adding a node for it (capacity.c says; a NodePool's
 * NodeClaim launching), the wait is
 * recorded first and the origin told (WaitingForNode), once per attempt.
 * True when a step started.
 */
static bool node_wait(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    /* Only a pod not bound to a node waits for one. */
    int bound = 0;
    int pods = sw_observe_pods(h, r->target_cluster, r->ns, r->mirror, &bound);
    struct sw_node_wait w;
    if (pods <= bound || !sw_capacity_node_wait(h, r, &w))
        return false;
    r->node_wait_ms = sw_hub_wall_ms();
    snprintf(r->node_pool, sizeof(r->node_pool), "%s", w.nodepool);
    snprintf(r->node_claim, sizeof(r->node_claim), "%s", w.nodeclaim);
    r->node_wait_expected_s = w.expected_s;
    SW_LOG(SW_LOG_INFO, "mirror waits for a node", "job=%s cluster=%s nodepool=%s nodeclaim=%s",
           sw_log_q(r->key), sw_log_q(r->target_cluster), sw_log_q(r->node_pool),
           sw_log_q(r->node_claim));
    j->busy = true;
    if (sw_rec_write(h, j, node_wait_written, NULL) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
    return true;
}

/* The mirror runs after waiting for a node: the wait, mirror created to
 * running, and the claim of the node its pod runs on (the scheduler may
 * bind it to another new node than the one Karpenter made for it) go into
 * the record (with the running state) and onto the origin. */
static void node_waited(struct sw_hub *h, struct sw_job_rec *r)
{
    r->node_wait_s =
        r->started_ms > r->dispatched_ms ? (double)(r->started_ms - r->dispatched_ms) / 1000.0 : 0;
    char node[128], claim[64];
    if (sw_observe_pod_node(h, r->target_cluster, r->ns, r->mirror, node, sizeof(node)) &&
        sw_capacity_claim_of_node(h, r->target_cluster, node, claim, sizeof(claim)))
        snprintf(r->node_claim, sizeof(r->node_claim), "%s", claim);
    char msg[600];
    snprintf(msg, sizeof(msg),
             "mirror %s/%s/%s runs after %.0f s waiting for a node: NodeClaim %s of NodePool %s "
             "(expected %.0f s)",
             r->target_cluster, r->ns, r->mirror, r->node_wait_s, r->node_claim, r->node_pool,
             r->node_wait_expected_s);
    sw_follow_event(h, r, "Normal", "NodeProvisioned", msg);
}

/*
 * A mirror its target's Kueue left unadmitted past the bound (queue.c):
 * deleted only if it is still the version seen suspended and never started
 * (a delete conditional on its resourceVersion: Kueue unsuspends a Job with
 * a patch that changes it, so one of the two fails), then the Job goes
 * back to be decided, the target's pools set aside for the same bound.
 */
static void withdrawn(struct sw_kube_result *res, struct sw_job *j, bool short_pool)
{
    struct sw_hub *h = j->hub;
    struct sw_job_rec *r = &j->rec;
    if (res->rc != 0) {
        /* 409: the mirror changed (admitted, say): looked at again. 404:
         * gone, which the next step handles as any disappearance. */
        SW_LOG(SW_LOG_INFO, "mirror not withdrawn", "job=%s mirror=%s status=%ld err=%s",
               sw_log_q(r->key), sw_log_q(r->mirror), (long)res->status, sw_log_q(res->err.msg));
        r->reason[0] = '\0';
        sw_hub_step_done(h, j, res->status == 409 || res->status == 404 ? 0 : res->rc);
        return;
    }
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    if (short_pool) {
        /* The pool stays short until a NodeClaim of it launches (the
         * engine is given the wait for it), or offers no room while its
         * Karpenter does not answer (capacity.c), nothing else. */
        sw_capacity_withdrawn(h, r);
        SW_LOG(SW_LOG_WARN, "mirror withdrawn from a NodePool that cannot grow; deciding again",
               "job=%s reason=%s", sw_log_q(r->key), sw_log_q(r->reason));
    } else {
        if (tm != NULL)
            tm->queue_aside_until_ms =
                sw_hub_wall_ms() + (int64_t)(h->cfg.mirror_admission_s * 1000);
        SW_LOG(SW_LOG_WARN, "mirror withdrawn unadmitted; deciding again", "job=%s reason=%s",
               sw_log_q(r->key), sw_log_q(r->reason));
    }
    sw_follow_event(h, r, "Warning", "MirrorWithdrawn", r->reason);
    /* The origin names the withdrawn mirror no more: back to observed, with
     * the reason, in this same step (dispatch names the next one). */
    sw_follow_show_unplaced(h, r);
    r->state = SW_JS_REQUEUED;
    r->withdrawals++;
    sw_data_outputs_stop(h, j);
    sw_rec_step(h, j, SW_FP_NONE);
}

static void on_withdrawn(struct sw_kube_result *res, void *ctx)
{
    withdrawn(res, ctx, false);
}

static void on_withdrawn_short(struct sw_kube_result *res, void *ctx)
{
    withdrawn(res, ctx, true);
}

static void withdraw(struct sw_hub *h, struct sw_job *j, struct sw_member *tm, const cJSON *mirror,
                     bool short_pool)
{
    struct sw_job_rec *r = &j->rec;
    const char *rv = sw_json_str(sw_json_child((cJSON *)mirror, "metadata"), "resourceVersion");
    const char *uid = sw_json_str(sw_json_child((cJSON *)mirror, "metadata"), "uid");
    struct sw_kube_delete_opts d = {.precondition_uid = uid,
                                    .precondition_resource_version = rv,
                                    .propagation = "Background",
                                    .grace_period_s = -1};
    j->busy = true;
    if (rv == NULL || sw_kube_delete(tm->client, SW_KIND_JOB, r->ns, r->mirror, &d,
                                     short_pool ? on_withdrawn_short : on_withdrawn, j) != 0) {
        r->reason[0] = '\0';
        sw_hub_step_done(h, j, SW_EUNAVAIL);
    }
}

static void finish(struct sw_hub *h, struct sw_job *j, enum sw_job_state s, const char *why)
{
    struct sw_job_rec *r = &j->rec;
    if (s == SW_JS_FAILED)
        sw_data_outputs_stop(h, j);
    r->state = s;
    r->finished_ms = sw_hub_wall_ms();
    if (r->started_ms == 0)
        r->started_ms = r->dispatched_ms;
    sw_metrics_spend(h, j);
    sw_capacity_mirror_ended(h, r, false);
    if (why && (s == SW_JS_FAILED || r->reason[0] == '\0'))
        snprintf(r->reason, sizeof(r->reason), "%s", why);
    char msg[800];
    snprintf(msg, sizeof(msg), "%s in %s/%s/%s: $%.2f (%d GPUs, %.1f min)%s%s",
             s == SW_JS_SUCCEEDED ? "completed" : "failed", r->target_cluster, r->ns, r->mirror,
             cost_so_far(r), r->gpus, (double)(r->finished_ms - r->started_ms) / 60000.0,
             r->reason[0] ? "; " : "", r->reason);
    SW_LOG(SW_LOG_INFO, "job finished", "job=%s state=%s cost=%.2f", sw_log_q(r->key),
           sw_log_q(sw_job_state_name(s)), cost_so_far(r));
    sw_follow_event(h, r, s == SW_JS_SUCCEEDED ? "Normal" : "Warning",
                    s == SW_JS_SUCCEEDED ? "Completed" : "Failed", msg);
    sw_follow_annotate(h, r);
    sw_rec_step(h, j, SW_FP_AFTER_FINISH);
}

static void on_mirror_suspend(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    sw_hub_step_done(j->hub, j, res->rc);
}

/*
 * An annotation-only origin resumed at home (spec.suspend set back to
 * false by its owner, a pipeline or a person) after the hub burst it:
 * while its mirror runs, and once it has completed, that would run the Job
 * a second time, so the hub suspends it again and says so. A burst that
 * failed is the owner's to take back: its origin may run at home. True
 * when a step started.
 */
static bool resuspend(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_job_rec *r = &j->rec;
    if (r->form != SW_FORM_ANNOTATION || origin == NULL ||
        strcmp(r->target_cluster, r->cluster) == 0)
        return false;
    if (r->state != SW_JS_DISPATCHED && r->state != SW_JS_RUNNING && r->state != SW_JS_SUCCEEDED)
        return false;
    if (cJSON_IsTrue(sw_json_child(sw_json_child(origin, "spec"), "suspend")))
        return false;
    /* A home that does not answer cannot be written to: a Job placed
     * elsewhere while its home was lost has its origin recorded stale and
     * suspended when the home returns (loss.c), not here. */
    struct sw_member *om = sw_member_find(h, r->cluster);
    if (om == NULL || om->client == NULL || !sw_member_reachable(om) || sw_loss_origin_fenced(r))
        return false;
    char msg[512];
    snprintf(msg, sizeof(msg),
             "resumed at home, but this Job %s as %s/%s/%s (attempt %d): suspended again so that "
             "it never runs twice; delete the Job to stop it",
             r->state == SW_JS_SUCCEEDED ? "completed" : "runs", r->target_cluster, r->ns,
             r->mirror, r->attempt);
    SW_LOG(SW_LOG_WARN, "burst origin resumed at home; suspended again", "job=%s mirror=%s/%s",
           sw_log_q(r->key), sw_log_q(r->target_cluster), sw_log_q(r->mirror));
    sw_follow_event(h, r, "Warning", "ResumedAtHome", msg);
    cJSON *p = cJSON_CreateObject();
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(p, "spec"), "suspend", true);
    j->busy = true;
    int rc =
        sw_kube_merge_patch(om->client, SW_KIND_JOB, r->ns, r->name, p, NULL, on_mirror_suspend, j);
    cJSON_Delete(p);
    if (rc != 0)
        sw_hub_step_done(h, j, rc);
    return true;
}

void sw_follow_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    j->hub = h;
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    bool synced = tm && tm->cache && sw_cluster_cache_synced(tm->cache);
    /* A finished Job's origin still shows its outcome when its target has
     * left the registry (loss.c fails a Job whose target was removed). */
    if (!synced && !(tm == NULL && sw_job_state_terminal(r->state)))
        return;
    const cJSON *origin = sw_observe_origin(h, r);
    const cJSON *live = synced ? sw_observe_mirror(h, r) : NULL;
    if (r->state == SW_JS_REQUEUED) {
        requeue_step(h, j, tm, live);
        return;
    }
    if (resuspend(h, j, origin))
        return;
    /* A mirror deleted after it finished (a cleanup script, a TTL, a
     * person) is known by its last state: absence alone is no outcome. */
    const cJSON *mirror = live ? live : synced ? sw_observe_mirror_final(h, r) : NULL;
    if (sw_job_state_terminal(r->state)) {
        /* A delegated origin shows the outcome once (again after a restart):
         * the mirror's status; when there is no mirror state to copy, a
         * completion (the record saw it complete) or a failure (lost too
         * often, its cluster removed) written by the hub. */
        if (r->form == SW_FORM_DELEGATED && !j->status_synced && origin &&
            condition(origin, "Complete") == NULL && condition(origin, "Failed") == NULL) {
            j->busy = true;
            bool ok = r->state == SW_JS_SUCCEEDED;
            int rc = mirror && ok && condition(mirror, "Complete")
                         ? write_status(h, j, mirror, true)
                     : ok                                    ? write_completed(h, j, origin)
                     : mirror && condition(mirror, "Failed") ? write_status(h, j, mirror, true)
                                                             : write_failed(h, j, origin);
            if (rc != 0)
                sw_hub_step_done(h, j, SW_EUNAVAIL);
        } else {
            j->status_synced = true;
        }
        return;
    }
    if (mirror == NULL && r->mirror_completed_ms > 0) {
        /* Seen complete, then deleted before the outcome was recorded: it
         * completed. Its outputs are in the store, not in the mirror. */
        j->busy = true;
        if (j->outputs_done == 0) {
            sw_data_outputs(h, j, true);
            return;
        }
        finish(h, j, j->outputs_done < 0 ? SW_JS_FAILED : SW_JS_SUCCEEDED, NULL);
        return;
    }
    if (mirror == NULL) {
        if (sw_hub_wall_ms() - r->dispatched_ms < 30000) {
            j->next_ms = sw_hub_mono_ms() + 1000; /* the cache may not show it yet */
            return;
        }
        j->busy = true;
        requeue(h, j,
                "the mirror Job disappeared before it finished (no Complete or Failed "
                "condition was seen)");
        return;
    }
    const cJSON *failed = condition(mirror, "Failed");
    const cJSON *complete = condition(mirror, "Complete");
    if (failed) {
        const char *reason = sw_json_str(failed, "reason"), *msg = sw_json_str(failed, "message");
        j->busy = true;
        if (reason && strcmp(reason, "PodFailurePolicy") == 0 && msg &&
            strstr(msg, "DisruptionTarget") != NULL) {
            requeue(h, j, "its pod was disrupted (node reclaimed or lost)");
            return;
        }
        char why[512];
        snprintf(why, sizeof(why), "mirror failed: %s: %s", reason ? reason : "Failed",
                 msg ? msg : "");
        if (r->form == SW_FORM_DELEGATED && !j->status_synced) {
            r->state = SW_JS_FAILED; /* status first; the record follows next step */
            finish(h, j, SW_JS_FAILED, why);
            return;
        }
        finish(h, j, SW_JS_FAILED, why);
        return;
    }
    if (complete) {
        j->busy = true;
        if (r->mirror_completed_ms == 0) {
            /* Recorded before anything else: from now on the Job completed,
             * whatever becomes of the mirror. */
            r->mirror_completed_ms = sw_hub_wall_ms();
            sw_rec_step(h, j, SW_FP_NONE);
            return;
        }
        if (j->outputs_done == 0) {
            sw_data_outputs(h, j, true);
            return;
        }
        /* Outputs that did not come back fail the Job (data.c's reason). */
        finish(h, j, j->outputs_done < 0 ? SW_JS_FAILED : SW_JS_SUCCEEDED, NULL);
        return;
    }
    /* A node gone with the mirror's pod on it (spot reclaimed, node lost):
     * decide again now rather than after the pod garbage collector. */
    char node[128] = "";
    if (sw_observe_lost(h, r->target_cluster, r->ns, r->mirror, node, sizeof(node)) > 0) {
        char why[256];
        snprintf(why, sizeof(why), "its node %s was lost", node);
        j->busy = true;
        requeue(h, j, why);
        return;
    }
    /* Taken back by the target's Kueue after it ran (its queue stopped
     * with HoldAndDrain, a preemption there, at home too): a lost attempt,
     * billed up to the eviction only (the attempt's end, until
     * requeue_step bills it), the target's queue set aside as for a
     * withdrawal unless Kueue's figures show why already. */
    int64_t evicted_ms = 0;
    bool aside = false;
    char evicted[sizeof(r->reason)];
    if (live != NULL &&
        sw_queue_mirror_evicted(h, j, live, evicted, sizeof(evicted), &evicted_ms, &aside)) {
        r->finished_ms = evicted_ms;
        if (aside)
            tm->queue_aside_until_ms =
                sw_hub_wall_ms() + (int64_t)(h->cfg.mirror_admission_s * 1000);
        j->busy = true;
        requeue_as(h, j, evicted, false);
        return;
    }
    /* Left unadmitted in the target's Kueue queue too long: withdrawn (a
     * mirror still there, not the last state of one deleted). */
    if (live != NULL && sw_queue_mirror_unadmitted(h, j, live, r->reason, sizeof(r->reason))) {
        withdraw(h, j, tm, live, false);
        return;
    }
    /* Its pods left waiting on a NodePool short of capacity too long:
     * withdrawn the same way, so that no pod waits there undecided. */
    if (live != NULL && sw_capacity_mirror_short(h, r, r->reason, sizeof(r->reason))) {
        withdraw(h, j, tm, live, true);
        return;
    }
    /* Running, or about to: a block shown earlier is over (a withdrawal's
     * reason is removed by the next attempt's dispatch patch, which also
     * names its mirror). */
    const cJSON *oann = sw_json_child(sw_json_child(origin, "metadata"), "annotations");
    const char *ostate = sw_json_str(oann, SW_ANN_STATE);
    if (sw_json_str(oann, SW_ANN_REASON) != NULL &&
        (ostate == NULL || strcmp(ostate, sw_job_state_name(SW_JS_OBSERVED)) != 0))
        sw_follow_show_blocked(h, r, false);
    const cJSON *ms = sw_json_child(mirror, "status");
    int active = count_of(ms, "active");
    int ready = count_of(ms, "ready");
    if (r->state == SW_JS_DISPATCHED && ready == 0 && r->node_wait_ms == 0 && node_wait(h, j))
        return;
    /* Running means a pod runs (ready), not only that one exists: a pod
     * waiting for a node is active too. */
    if (r->state == SW_JS_DISPATCHED && ready > 0) {
        r->state = SW_JS_RUNNING;
        r->started_ms = sw_hub_wall_ms();
        if (r->node_wait_ms > 0)
            node_waited(h, r);
        j->busy = true;
        if (strcmp(r->target_cluster, r->cluster) != 0)
            sw_data_outputs(h, j, false);
        sw_rec_step(h, j, SW_FP_AFTER_RUNNING);
        return;
    }
    if (r->form == SW_FORM_DELEGATED && origin) {
        const cJSON *os = sw_json_child(origin, "status");
        bool want_start =
            sw_json_str(ms, "startTime") != NULL && sw_json_str(os, "startTime") == NULL;
        int oactive = count_of(os, "active");
        /* The running status waits while Jobs wait for their mirrors. */
        if ((want_start || oactive != active) && may_send_later_work(h, r->cluster)) {
            j->busy = true;
            if (write_status(h, j, mirror, false) != 0)
                sw_hub_step_done(h, j, SW_EUNAVAIL);
            return;
        }
        bool osusp = cJSON_IsTrue(sw_json_child(sw_json_child(origin, "spec"), "suspend"));
        bool msusp = cJSON_IsTrue(sw_json_child(sw_json_child(mirror, "spec"), "suspend"));
        /* A mirror in the target's Kueue queue: its suspend is Kueue's;
         * the owner's pause goes through its Workload (queue.c). */
        if (sw_json_str(sw_json_child(sw_json_child(mirror, "metadata"), "labels"),
                        SW_KUEUE_QUEUE_LABEL) != NULL) {
            sw_queue_mirror_pause(h, j, mirror, osusp);
            return;
        }
        if (osusp != msusp) {
            SW_LOG(SW_LOG_INFO, "delegated origin's suspend copied to its mirror",
                   "job=%s suspend=%s", sw_log_q(r->key), osusp ? "true" : "false");
            cJSON *p = cJSON_CreateObject();
            cJSON_AddBoolToObject(cJSON_AddObjectToObject(p, "spec"), "suspend", osusp);
            j->busy = true;
            int rc = sw_kube_merge_patch(tm->client, SW_KIND_JOB, r->ns, r->mirror, p, NULL,
                                         on_mirror_suspend, j);
            cJSON_Delete(p);
            if (rc != 0)
                sw_hub_step_done(h, j, rc);
        }
    }
}

/* ---- the origin deleted --------------------------------------------------- */

static void on_gone_step(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    int rc = res->rc != 0 && res->status != 404 && res->status != 409 ? res->rc : 0;
    sw_hub_step_done(j->hub, j, rc);
}

/* Deletes the record's mirror from `tm` (background propagation), saying
 * why in the log (`msg`, static); j busy until the answer. */
static void delete_mirror(struct sw_hub *h, struct sw_job *j, struct sw_member *tm, const char *msg)
{
    struct sw_job_rec *r = &j->rec;
    j->busy = true;
    SW_LOG(SW_LOG_INFO, msg, "job=%s mirror=%s/%s", sw_log_q(r->key), sw_log_q(r->target_cluster),
           sw_log_q(r->mirror));
    struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
    if (sw_kube_delete(tm->client, SW_KIND_JOB, r->ns, r->mirror, &d, on_gone_step, j) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

/*
 * Removes spillway's finalizer from the origin (a patch conditional on the
 * version seen, keeping any other finalizer): true when it was there and
 * the patch is in flight (j busy), false when there is none to remove.
 */
static bool drop_finalizer(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_job_rec *r = &j->rec;
    const cJSON *f;
    bool ours = false;
    cJSON *p = cJSON_CreateObject();
    cJSON *md = cJSON_AddObjectToObject(p, "metadata");
    const char *rv = sw_json_str(sw_json_child(origin, "metadata"), "resourceVersion");
    if (rv)
        cJSON_AddStringToObject(md, "resourceVersion", rv);
    cJSON *fl = cJSON_AddArrayToObject(md, "finalizers");
    cJSON_ArrayForEach(f, sw_json_child(sw_json_child(origin, "metadata"), "finalizers"))
    {
        if (!cJSON_IsString(f))
            continue;
        if (strcmp(f->valuestring, SW_FINALIZER) == 0)
            ours = true;
        else
            cJSON_AddItemToArray(fl, cJSON_CreateString(f->valuestring));
    }
    struct sw_member *om = sw_member_find(h, r->cluster);
    if (!ours || om == NULL) {
        cJSON_Delete(p);
        return false;
    }
    j->busy = true;
    if (sw_kube_merge_patch(om->client, SW_KIND_JOB, r->ns, r->name, p, NULL, on_gone_step, j) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
    cJSON_Delete(p);
    return true;
}

/*
 * Whether a deleted origin is let go now, before its mirror and copies are
 * cleaned up: its deletion is records.deletedOriginSeconds old, or its
 * target does not answer (a deletion is never held for a cluster that may
 * not return); a target no longer registered has nothing left to clean. Said once, with a Warning
 * Event, and counted; the record stays and goes on cleaning up once the target answers.
 */
static bool let_go_now(struct sw_hub *h, struct sw_job *j, const cJSON *origin,
                       const struct sw_member *tm, const cJSON *mirror)
{
    struct sw_job_rec *r = &j->rec;
    const char *ts = sw_json_str(sw_json_child(origin, "metadata"), "deletionTimestamp");
    int64_t since = 0;
    bool late = ts != NULL && sw_parse_rfc3339(ts, &since, NULL) == 0 &&
                sw_hub_wall_ms() - since >= (int64_t)(h->cfg.deleted_origin_s * 1000);
    /* Not answering: fenced, or lost (members.lostAfterSeconds of failed
     * probes; one failed probe is not enough, and a cache not yet synced
     * after a restart is no reason either). */
    bool away = tm != NULL && (tm->fenced || sw_member_lost(tm));
    if (!late && !away)
        return false;
    char what[600];
    sw_copies_pending(j, what, sizeof(what));
    /* A target whose cache has not synced may hold the mirror unseen. */
    bool unseen = tm != NULL && (tm->cache == NULL || !sw_cluster_cache_synced(tm->cache));
    if (!j->let_go && (mirror != NULL || what[0] != '\0' || unseen)) {
        j->let_go = true;
        h->m.origins_let_go++;
        char msg[1200];
        snprintf(msg, sizeof(msg),
                 "origin let go %s: %s%s%s%s%s left; the hub deletes %s once cluster %s answers, "
                 "else delete %s there by hand",
                 away ? "while its target does not answer" : "after records.deletedOriginSeconds",
                 mirror || unseen ? "mirror " : "", mirror || unseen ? r->mirror : "",
                 (mirror || unseen) && what[0] ? " and " : "",
                 what[0] ? "spillway's copies of " : "", what,
                 (mirror || unseen) && what[0] ? "them" : "it", r->target_cluster,
                 (mirror || unseen) && what[0] ? "them" : "it");
        SW_LOG(SW_LOG_WARN, "deleted origin let go before its cleanup ended",
               "job=%s target=%s mirror=%s copies=%s why=%s", sw_log_q(r->key),
               sw_log_q(r->target_cluster), sw_log_q(mirror || unseen ? r->mirror : ""),
               sw_log_q(what),
               away ? "target not answering" : "records.deletedOriginSeconds passed");
        sw_follow_event(h, r, "Warning", "CleanupLeft", msg);
    }
    return true;
}

void sw_follow_origin_gone(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_job_rec *r = &j->rec;
    j->hub = h;
    sw_data_outputs_stop(h, j);
    struct sw_member *tm = r->target_cluster[0] ? sw_member_find(h, r->target_cluster) : NULL;
    /* Its copies' names, read once while its template is known (the origin goes). */
    const cJSON *whole = origin ? sw_observe_origin_whole(h, r) : NULL;
    if (whole == NULL)
        whole = j->kept;
    if (whole)
        sw_copies_note(j, sw_json_path(whole, "spec.template.spec"));
    const cJSON *mirror = tm ? sw_observe_mirror(h, r) : NULL;
    /* Being deleted: let it go once the mirror is gone and the copies of
     * Secrets made for it released, or at once when that cannot be soon
     * (let_go_now); the record goes on with what is left. */
    bool let_go = origin && let_go_now(h, j, origin, tm, mirror);
    if (let_go && drop_finalizer(h, j, origin))
        return;
    /* The target does not answer (the origin gone already): wait for it,
     * sending nothing. */
    if (tm && !sw_member_reachable(tm)) {
        j->next_ms = sw_hub_mono_ms() + 1000;
        return;
    }
    if (mirror && sw_json_child(sw_json_child(mirror, "metadata"), "deletionTimestamp") == NULL) {
        delete_mirror(h, j, tm, "origin deleted; deleting its mirror");
        return;
    }
    if (mirror) {
        j->next_ms = sw_hub_mono_ms() + 1000;
        return;
    }
    if (sw_copies_release(h, j))
        return;
    if (origin && !let_go && drop_finalizer(h, j, origin))
        return;
    if (!sw_job_state_terminal(r->state) && origin == NULL) {
        /* A mirror dispatched that never reported running is billed from
         * its dispatch, as finish() bills it. */
        if (r->started_ms == 0)
            r->started_ms = sw_budget_start_of(r);
        r->state = SW_JS_FAILED;
        r->finished_ms = sw_hub_wall_ms();
        sw_metrics_spend(h, j);
        snprintf(r->reason, sizeof(r->reason), "the origin Job was deleted");
        j->busy = true;
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    if (origin == NULL && j->output_stops == 0) {
        /* Origin and mirror gone, the outcome recorded: the record goes
         * too (the job is freed once Redis has dropped it). */
        j->busy = true;
        if (sw_rec_end(h, j, "its origin and mirror are gone") != 0)
            sw_hub_step_done(h, j, SW_EUNAVAIL);
    }
}

/* ---- a finished Job retired ----------------------------------------------- */

void sw_follow_retire(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    j->hub = h;
    /* The finished mirror first, so that nothing is left that the origin's
     * finalizer would have to clean up, and no mirror outlives its record
     * (adoption would find it again). A target the hub cannot see now is
     * waited for; one removed from the registry has nothing to delete. */
    struct sw_member *tm =
        r->target_cluster[0] && r->mirror[0] ? sw_member_find(h, r->target_cluster) : NULL;
    if (tm) {
        if (tm->cache == NULL || !sw_cluster_cache_synced(tm->cache))
            return;
        const cJSON *mirror = sw_observe_mirror(h, r);
        if (mirror) {
            if (sw_json_child(sw_json_child(mirror, "metadata"), "deletionTimestamp") != NULL) {
                j->next_ms = sw_hub_mono_ms() + 1000;
                return;
            }
            delete_mirror(h, j, tm, "finished Job retired; deleting its mirror");
            return;
        }
    }
    /* The mirror is gone: the copies of Secrets made for it, once no other
     * mirror of its origin namespace there uses them (copies.c). */
    if (sw_copies_release(h, j))
        return;
    const cJSON *origin = sw_observe_origin(h, r);
    if (origin && drop_finalizer(h, j, origin))
        return;
    j->busy = true;
    if (sw_rec_end(h, j, "finished, retired after records.retireAfterSeconds") != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

bool sw_follow_requeued(const struct sw_job_rec *r, const cJSON *origin)
{
    return (r->preemptions > 0 || r->withdrawals > 0) &&
           cJSON_IsTrue(sw_json_child(sw_json_child(origin, "spec"), "suspend"));
}

bool sw_follow_finished_at_home(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    struct sw_job_rec *r = &j->rec;
    bool before_suspend = r->state == SW_JS_OBSERVED || r->state == SW_JS_BLOCKED ||
                          r->state == SW_JS_DECIDED || r->state == SW_JS_DATA_READY ||
                          r->state == SW_JS_DISPATCHING;
    if (!before_suspend || cJSON_IsTrue(sw_json_child(sw_json_child(origin, "spec"), "suspend")))
        return false;
    bool ok = condition(origin, "Complete") != NULL;
    if (!ok && condition(origin, "Failed") == NULL)
        return false;
    r->state = ok ? SW_JS_SUCCEEDED : SW_JS_FAILED;
    r->finished_ms = sw_hub_wall_ms();
    snprintf(r->target_cluster, sizeof(r->target_cluster), "%s", r->cluster);
    snprintf(r->capacity, sizeof(r->capacity), "owned");
    r->mirror[0] = '\0';
    snprintf(r->reason, sizeof(r->reason), "ran at home (%s there before any burst)",
             ok ? "completed" : "failed");
    SW_LOG(SW_LOG_INFO, "job finished at home", "job=%s", sw_log_q(r->key));
    j->busy = true;
    sw_rec_step(h, j, SW_FP_NONE);
    return true;
}
