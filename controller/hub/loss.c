/*
 * loss.c - what the hub does for a Job when a member cluster is lost.
 *
 * A member is lost (members.c) once it has not answered, or not been
 * Ready, for members.lostAfterSeconds. Then, for each Job whose current
 * attempt is there:
 *   requeue (spillway.io/on-cluster-loss, the default; at least once): the
 *     mirror is remembered as stale in the record, its output rounds stop
 *     (what they copied back is the checkpoint the next attempt starts
 *     from), and the Job is decided again, elsewhere, as attempt N+1.
 *   wait (at most once): the Job stays as it is until the cluster returns.
 * A Job decided for a lost (or fenced) cluster but not yet dispatched is
 * decided again. When a lost cluster returns, every stale mirror there is
 * deleted before the cluster is given new work (decide.c only places on
 * members with no stale mirror left: sw_member_usable).
 *
 * Outputs are fenced by attempt: attempt N writes PREFIX/attempt-N/ and
 * only the attempt the record names is copied back (data.c), so a mirror
 * still running on a partitioned cluster never overwrites the outputs of
 * the attempt that replaced it.
 *
 * The Job's home (its origin's cluster) lost: a burstable Job running there
 * natively, or decided and not yet dispatched, is placed elsewhere like any
 * other (requeue), with the origin itself recorded as stale, as attempt 0:
 * the hub cannot suspend it while its cluster does not answer, so the
 * origin is suspended (and given spillway's finalizer) when its cluster
 * returns, before anything else happens there. A `wait` Job whose home is
 * lost waits: nothing is decided for it until its home returns.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"

static bool in_flight(enum sw_job_state s)
{
    return s == SW_JS_DISPATCHING || s == SW_JS_DISPATCHED || s == SW_JS_RUNNING ||
           s == SW_JS_REQUEUED;
}

/* ---- stale mirrors ---------------------------------------------------------- */

bool sw_loss_origin_fenced(const struct sw_job_rec *r)
{
    for (int i = 0; i < r->nstale; i++)
        if (r->stale[i].attempt == 0 && strcmp(r->stale[i].cluster, r->cluster) == 0 &&
            strcmp(r->stale[i].name, r->name) == 0)
            return true;
    return false;
}

struct stale_call {
    struct sw_hub *h;
    struct sw_job *j;
    char cluster[64];
    char name[64];
};

static void stale_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    (void)ctx;
    sw_hub_step_done(h, j, rc);
    if (rc == 0)
        sw_hub_want_decide(h); /* the cluster may take work again */
}

static void forget_stale(struct sw_hub *h, struct sw_job *j, const char *cluster, const char *name)
{
    for (int i = 0; i < j->rec.nstale; i++)
        if (strcmp(j->rec.stale[i].cluster, cluster) == 0 &&
            strcmp(j->rec.stale[i].name, name) == 0) {
            sw_job_rec_remove_stale(&j->rec, i);
            break;
        }
    if (sw_rec_write(h, j, stale_written, NULL) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

static void on_stale_deleted(struct sw_kube_result *res, void *ctx)
{
    struct stale_call *sc = ctx;
    struct sw_hub *h = sc->h;
    struct sw_job *j = sc->j;
    if (res->rc != 0 && res->status != 404) {
        SW_LOG(SW_LOG_WARN, "cannot delete a stale mirror", "job=%s cluster=%s mirror=%s err=%s",
               sw_log_q(j->rec.key), sw_log_q(sc->cluster), sw_log_q(sc->name),
               sw_log_q(res->err.msg));
        sw_free(sc);
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    h->m.stale_deleted++;
    SW_LOG(SW_LOG_INFO, "stale mirror deleted from a returned cluster",
           "job=%s cluster=%s mirror=%s found=%s", sw_log_q(j->rec.key), sw_log_q(sc->cluster),
           sw_log_q(sc->name), res->status == 404 ? "no" : "yes");
    char msg[300];
    snprintf(msg, sizeof(msg), "stale mirror %s/%s deleted: cluster %s is back", sc->cluster,
             sc->name, sc->cluster);
    sw_follow_event(h, &j->rec, "Normal", "StaleMirrorDeleted", msg);
    forget_stale(h, j, sc->cluster, sc->name);
    sw_free(sc);
}

static void on_origin_fenced(struct sw_kube_result *res, void *ctx)
{
    struct sw_job *j = ctx;
    struct sw_hub *h = j->hub;
    struct sw_job_rec *r = &j->rec;
    if (res->rc != 0 && res->status != 404) {
        SW_LOG(SW_LOG_WARN, "cannot suspend the Job at its returned home", "job=%s err=%s",
               sw_log_q(r->key), sw_log_q(res->err.msg));
        sw_hub_step_done(h, j, res->rc);
        return;
    }
    SW_LOG(SW_LOG_INFO, "home run stopped: its cluster is back and the Job runs elsewhere",
           "job=%s cluster=%s placed=%s/%s", sw_log_q(r->key), sw_log_q(r->cluster),
           sw_log_q(r->target_cluster), sw_log_q(r->mirror));
    char msg[400];
    snprintf(msg, sizeof(msg),
             "cluster %s is back: this Job, placed in %s while the cluster was lost, is "
             "suspended here (its pods at home stop)",
             r->cluster, r->target_cluster[0] ? r->target_cluster : "another cluster");
    sw_follow_event(h, r, "Normal", "HomeRunStopped", msg);
    forget_stale(h, j, r->cluster, r->name);
}

/*
 * The origin, recorded stale when its cluster was lost, on its returned
 * cluster: spillway's finalizer, where it went, and (an annotation-only
 * Job) spec.suspend=true, which stops its pods there. What dispatch does
 * before it creates a mirror, done late because the cluster did not answer.
 */
static bool fence_origin(struct sw_hub *h, struct sw_job *j, struct sw_member *m)
{
    struct sw_job_rec *r = &j->rec;
    const cJSON *origin = sw_observe_origin(h, r);
    j->hub = h;
    j->busy = true;
    if (origin == NULL || r->state == SW_JS_OBSERVED || r->state == SW_JS_BLOCKED) {
        /* Gone meanwhile, or placed nowhere else after all (no pool would
         * take it): nothing to stop at home. */
        forget_stale(h, j, r->cluster, r->name);
        return true;
    }
    cJSON *patch = sw_dispatch_origin_patch(origin, r, false, r->form == SW_FORM_ANNOTATION);
    int rc = sw_kube_merge_patch(m->client, SW_KIND_JOB, r->ns, r->name, patch, NULL,
                                 on_origin_fenced, j);
    cJSON_Delete(patch);
    if (rc != 0)
        sw_hub_step_done(h, j, rc);
    return true;
}

/* Deletes the first stale mirror whose cluster answers again; true when a step started. */
static bool stale_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    for (int i = 0; i < r->nstale; i++) {
        struct sw_member *m = sw_member_find(h, r->stale[i].cluster);
        j->hub = h;
        if (m == NULL) {
            /* Removed from the registry: nothing of ours can be sent there. */
            SW_LOG(SW_LOG_WARN, "stale mirror on a cluster no longer registered; forgotten",
                   "job=%s cluster=%s mirror=%s", sw_log_q(r->key), sw_log_q(r->stale[i].cluster),
                   sw_log_q(r->stale[i].name));
            j->busy = true;
            char c[64], n[64];
            snprintf(c, sizeof(c), "%s", r->stale[i].cluster);
            snprintf(n, sizeof(n), "%s", r->stale[i].name);
            forget_stale(h, j, c, n);
            return true;
        }
        if (!sw_member_reachable(m))
            continue;
        if (r->stale[i].attempt == 0 && strcmp(r->stale[i].cluster, r->cluster) == 0 &&
            strcmp(r->stale[i].name, r->name) == 0)
            return fence_origin(h, j, m);
        struct stale_call *sc = sw_calloc(1, sizeof(*sc));
        if (sc == NULL)
            return false;
        sc->h = h;
        sc->j = j;
        snprintf(sc->cluster, sizeof(sc->cluster), "%s", r->stale[i].cluster);
        snprintf(sc->name, sizeof(sc->name), "%s", r->stale[i].name);
        /* Background: the pods go with the Job, and the record need not
         * wait for them; the cluster gets no new work until this is done. */
        struct sw_kube_delete_opts d = {.propagation = "Background", .grace_period_s = -1};
        j->busy = true;
        if (sw_kube_delete(m->client, SW_KIND_JOB, r->ns, sc->name, &d, on_stale_deleted, sc) !=
            0) {
            sw_free(sc);
            sw_hub_step_done(h, j, SW_EUNAVAIL);
        }
        return true;
    }
    return false;
}

/* ---- lost targets ----------------------------------------------------------- */

static void moved_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    (void)ctx;
    sw_hub_step_done(h, j, rc);
    if (rc == 0)
        sw_hub_want_decide(h);
}

static bool wants_requeue(struct sw_hub *h, struct sw_job *j)
{
    const cJSON *origin = sw_observe_origin(h, &j->rec);
    struct sw_burst_spec spec;
    struct sw_error err = {0};
    if (origin == NULL ||
        sw_burst_spec_parse(sw_json_child(sw_json_child(origin, "metadata"), "annotations"),
                            j->rec.created, &spec, &err) != 0)
        return true; /* the default */
    return spec.requeue_on_loss;
}

/* Attempt N's cluster is lost: remember its mirror as stale and decide again. */
static void move_off(struct sw_hub *h, struct sw_job *j, const struct sw_member *m)
{
    struct sw_job_rec *r = &j->rec;
    const struct sw_health *hs = m->health ? sw_health_prober_health(m->health) : NULL;
    int64_t since = hs && hs->bad_since_ms ? hs->bad_since_ms : m->lost_since_ms;
    double lost_for = (double)(sw_hub_wall_ms() - since) / 1000.0;
    if (r->mirror[0] && sw_job_rec_add_stale(r, r->target_cluster, r->mirror, r->attempt) != 0) {
        /* Too many stale mirrors to remember: never place it again. */
        if (r->started_ms == 0)
            r->started_ms = sw_budget_start_of(r); /* billed from its dispatch */
        r->state = SW_JS_FAILED;
        r->finished_ms = sw_hub_wall_ms();
        snprintf(r->reason, sizeof(r->reason),
                 "cluster %s lost, and %d stale mirrors already wait for deletion", m->rec.name,
                 SW_REC_MAX_STALE);
        sw_follow_event(h, r, "Warning", "BurstFailed", r->reason);
        j->busy = true;
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    sw_data_outputs_stop(h, j);
    r->preemptions++;
    h->m.cluster_requeues++;
    /* The lost attempt's cost, up to now, before the record forgets its start. */
    sw_metrics_spend(h, j);
    char msg[700];
    if (r->attempt >= h->cfg.max_attempts) {
        if (r->started_ms == 0)
            r->started_ms = sw_budget_start_of(r); /* billed from its dispatch */
        r->state = SW_JS_FAILED;
        r->finished_ms = sw_hub_wall_ms();
        snprintf(r->reason, sizeof(r->reason), "cluster %s lost with attempt %d (max %d attempts)",
                 m->rec.name, r->attempt, h->cfg.max_attempts);
        sw_follow_event(h, r, "Warning", "BurstFailed", r->reason);
    } else {
        snprintf(r->reason, sizeof(r->reason),
                 "cluster %s lost (not answering for %.0f s): attempt %d placed again", m->rec.name,
                 lost_for, r->attempt);
        snprintf(msg, sizeof(msg),
                 "cluster %s lost (not answering for %.0f s); mirror %s left there to be deleted "
                 "when it returns; deciding again (attempt %d of %d), from the outputs copied back",
                 m->rec.name, lost_for, r->mirror, r->attempt + 1, h->cfg.max_attempts);
        sw_follow_event(h, r, "Warning", "ClusterLost", msg);
        r->state = SW_JS_OBSERVED;
        r->started_ms = 0;
        r->mirror_completed_ms = 0;
        j->outputs_done = 0;
        j->status_synced = false;
    }
    SW_LOG(SW_LOG_WARN, "cluster lost; job placed again", "job=%s cluster=%s mirror=%s attempt=%d",
           sw_log_q(r->key), sw_log_q(m->rec.name), sw_log_q(r->mirror), r->attempt);
    j->busy = true;
    if (sw_rec_write(h, j, moved_written, NULL) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

/* "wait": the Job stays with its cluster; said once. */
static bool hold(struct sw_hub *h, struct sw_job *j, const struct sw_member *m)
{
    struct sw_job_rec *r = &j->rec;
    char why[256];
    snprintf(why, sizeof(why),
             "waiting for cluster %s to return (spillway.io/on-cluster-loss: wait)", m->rec.name);
    if (strcmp(r->reason, why) == 0)
        return true;
    snprintf(r->reason, sizeof(r->reason), "%s", why);
    SW_LOG(SW_LOG_WARN, "cluster lost; job waits for it", "job=%s cluster=%s", sw_log_q(r->key),
           sw_log_q(m->rec.name));
    sw_follow_event(h, r, "Warning", "ClusterLost", why);
    j->busy = true;
    sw_rec_step(h, j, SW_FP_NONE);
    return true;
}

/* ---- a lost home ------------------------------------------------------------ */

/* Records the origin as stale (attempt 0): suspended when its cluster returns. */
static int add_origin_fence(struct sw_hub *h, struct sw_job *j, const struct sw_member *om)
{
    struct sw_job_rec *r = &j->rec;
    if (sw_job_rec_add_stale(r, r->cluster, r->name, 0) != 0) {
        r->state = SW_JS_FAILED;
        r->finished_ms = sw_hub_wall_ms();
        snprintf(r->reason, sizeof(r->reason),
                 "cluster %s lost, and %d stale mirrors already wait for deletion", om->rec.name,
                 SW_REC_MAX_STALE);
        sw_follow_event(h, r, "Warning", "BurstFailed", r->reason);
        return -1;
    }
    return 0;
}

/*
 * The Job's home is lost while the Job runs there natively (its origin not
 * suspended, a pod bound to a node there): requeue places it elsewhere,
 * the origin recorded as stale; wait holds it. A Job only queued at home is
 * left to the decision, which places it as any starved Job (and dispatch
 * fences its origin, sw_loss_fence_origin). True when it took a step.
 */
static bool home_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    if (r->state != SW_JS_OBSERVED && r->state != SW_JS_BLOCKED)
        return false;
    struct sw_member *om = sw_member_find(h, r->cluster);
    if (om == NULL)
        return false;
    if (!sw_member_lost(om)) {
        /* A "wait" Job whose home is back: the reason goes with the loss. */
        if (strncmp(r->reason, "waiting for cluster ", 20) != 0)
            return false;
        r->reason[0] = '\0';
        j->busy = true;
        sw_rec_step(h, j, SW_FP_NONE);
        return true;
    }
    if (sw_loss_origin_fenced(r))
        return false; /* to be placed by the decision */
    if (!wants_requeue(h, j))
        return hold(h, j, om);
    const cJSON *origin = sw_observe_origin(h, r);
    if (origin == NULL || cJSON_IsTrue(sw_json_child(sw_json_child(origin, "spec"), "suspend")))
        return false;
    int bound = 0;
    sw_observe_pods(h, r->cluster, r->ns, r->name, &bound);
    if (bound == 0)
        return false;
    j->busy = true;
    if (add_origin_fence(h, j, om) != 0) {
        sw_rec_step(h, j, SW_FP_NONE);
        return true;
    }
    const struct sw_health *hs = om->health ? sw_health_prober_health(om->health) : NULL;
    int64_t since = hs && hs->bad_since_ms ? hs->bad_since_ms : om->lost_since_ms;
    double lost_for = (double)(sw_hub_wall_ms() - since) / 1000.0;
    h->m.cluster_requeues++;
    snprintf(r->reason, sizeof(r->reason),
             "home cluster %s lost (not answering for %.0f s) while the Job ran there: placed "
             "again; suspended there when it returns",
             om->rec.name, lost_for);
    sw_follow_event(h, r, "Warning", "ClusterLost", r->reason);
    SW_LOG(SW_LOG_WARN, "home cluster lost; job running there placed again", "job=%s cluster=%s",
           sw_log_q(r->key), sw_log_q(om->rec.name));
    if (sw_rec_write(h, j, moved_written, NULL) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
    return true;
}

int sw_loss_fence_origin(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    struct sw_member *om = sw_member_find(h, r->cluster);
    if (om == NULL || !sw_member_lost(om) || sw_loss_origin_fenced(r))
        return 0;
    j->busy = true;
    if (!wants_requeue(h, j)) {
        /* Decided before the loss; at most once: back to waiting for home. */
        snprintf(r->reason, sizeof(r->reason),
                 "waiting for cluster %s to return (spillway.io/on-cluster-loss: wait)",
                 om->rec.name);
        r->state = SW_JS_OBSERVED;
        sw_rec_step(h, j, SW_FP_NONE);
        return 1;
    }
    if (add_origin_fence(h, j, om) == 0)
        SW_LOG(SW_LOG_WARN, "home cluster lost; job dispatched without suspending it there",
               "job=%s cluster=%s", sw_log_q(r->key), sw_log_q(om->rec.name));
    sw_rec_step(h, j, SW_FP_NONE);
    return 1;
}

/*
 * The record names a target cluster the registry does not have: removed
 * (`spillctl cluster remove`) while the Job was on its way there or ran
 * there. Said, never silent. Before its mirror can exist the Job is
 * decided again. From the intent on, a mirror may run there that spillway
 * can no longer follow or delete, and placing the Job elsewhere could run
 * it twice: it fails, and the reason names the mirror for a person to
 * delete. True when it took a step (or waits for the registry).
 */
static bool unknown_target(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    if (!h->registry_read)
        return true; /* not listed yet: nothing is known of any name */
    if (r->state == SW_JS_DECIDED || r->state == SW_JS_DATA_READY) {
        snprintf(r->reason, sizeof(r->reason),
                 "cluster %s is not a registered member (removed from the registry); deciding "
                 "again",
                 r->target_cluster);
        SW_LOG(SW_LOG_WARN, "target cluster not registered; deciding again", "job=%s cluster=%s",
               sw_log_q(r->key), sw_log_q(r->target_cluster));
        sw_follow_event(h, r, "Warning", "TargetUnknown", r->reason);
        r->state = SW_JS_OBSERVED;
        j->busy = true;
        if (sw_rec_write(h, j, moved_written, NULL) != 0)
            sw_hub_step_done(h, j, SW_EUNAVAIL);
        return true;
    }
    if (!in_flight(r->state))
        return false;
    char last[64];
    snprintf(last, sizeof(last), "%s", r->target_cluster);
    snprintf(r->reason, sizeof(r->reason),
             "cluster %s was removed from the registry while attempt %d was there (mirror "
             "%s/%s/%s): spillway can no longer follow or delete it, and does not place the Job "
             "again, so that it never runs twice; delete that mirror if it still runs",
             last, r->attempt, last, r->ns, r->mirror[0] ? r->mirror : "(not created)");
    SW_LOG(SW_LOG_WARN, "target cluster removed while the job was there; job failed",
           "job=%s cluster=%s mirror=%s", sw_log_q(r->key), sw_log_q(last), sw_log_q(r->mirror));
    sw_data_outputs_stop(h, j);
    if (r->started_ms == 0)
        r->started_ms = sw_budget_start_of(r); /* billed from its dispatch */
    r->state = SW_JS_FAILED;
    r->finished_ms = sw_hub_wall_ms();
    sw_follow_event(h, r, "Warning", "BurstFailed", r->reason);
    j->busy = true;
    sw_rec_step(h, j, SW_FP_NONE);
    return true;
}

bool sw_loss_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job_rec *r = &j->rec;
    if (r->nstale > 0 && stale_step(h, j))
        return true;
    if (home_step(h, j))
        return true;
    if (sw_job_state_terminal(r->state) || r->target_cluster[0] == '\0')
        return false;
    struct sw_member *tm = sw_member_find(h, r->target_cluster);
    if (tm == NULL)
        return unknown_target(h, j);
    if (in_flight(r->state) && sw_member_lost(tm) && strcmp(r->target_cluster, r->cluster) != 0) {
        if (!wants_requeue(h, j))
            return hold(h, j, tm);
        move_off(h, j, tm);
        return true;
    }
    if (in_flight(r->state) && sw_member_lost(tm))
        return true; /* at home and home is lost: nothing to do until it returns */
    if ((r->state == SW_JS_DECIDED || r->state == SW_JS_DATA_READY) &&
        (sw_member_lost(tm) || tm->fenced)) {
        snprintf(r->reason, sizeof(r->reason), "cluster %s %s before dispatch; deciding again",
                 tm->rec.name, tm->fenced ? "fenced" : "lost");
        r->state = SW_JS_OBSERVED;
        j->busy = true;
        if (sw_rec_write(h, j, moved_written, NULL) != 0)
            sw_hub_step_done(h, j, SW_EUNAVAIL);
        return true;
    }
    if (r->state == SW_JS_DISPATCHING && !sw_member_usable(tm))
        return true; /* the mirror is created only where nothing stale remains */
    /* "wait" Jobs whose cluster is back: the reason goes with the loss. */
    if (in_flight(r->state) && strncmp(r->reason, "waiting for cluster ", 20) == 0) {
        r->reason[0] = '\0';
        j->busy = true;
        sw_rec_step(h, j, SW_FP_NONE);
        return true;
    }
    return false;
}
