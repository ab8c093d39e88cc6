/*
 * hub.c - the hub's loop: the job table and the tick that steps every Job
 * one step toward its goal.
 *
 * A tick runs every 200 ms, and soon after any change a cache reports
 * (coalesced). It does nothing unless this hub holds the lease and has
 * loaded the records. Each Job has at most one step in flight; a failed
 * step backs off exponentially (capped at 30 s), as client-go's workqueue.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"
#include "controller/hub/adopt.h"
#include "clusters/record.h"
#include "controller/hub/hub.h"
#include "controller/hub/retire.h"
#include "replication/gate.h"

int64_t sw_hub_mono_ms(void)
{
    return (int64_t)(uv_hrtime() / 1000000u);
}

int64_t sw_hub_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool sw_hub_acting(const struct sw_hub *h)
{
    return h->leader && h->loaded && sw_hub_mono_ms() < h->lease_until_mono;
}

/* ---- the job table ------------------------------------------------------- */

static unsigned hash_key(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % SW_HUB_JOB_BUCKETS;
}

struct sw_job *sw_hub_job_find(struct sw_hub *h, const char *key)
{
    for (struct sw_job *j = h->buckets[hash_key(key)]; j; j = j->next)
        if (strcmp(j->rec.key, key) == 0)
            return j;
    return NULL;
}

struct sw_job *sw_hub_job_get(struct sw_hub *h, const char *key)
{
    struct sw_job *j = sw_hub_job_find(h, key);
    if (j)
        return j;
    j = sw_calloc(1, sizeof(*j));
    if (j == NULL)
        return NULL;
    snprintf(j->rec.key, sizeof(j->rec.key), "%s", key);
    unsigned b = hash_key(key);
    j->next = h->buckets[b];
    h->buckets[b] = j;
    h->njobs++;
    return j;
}

void sw_hub_job_drop(struct sw_hub *h, struct sw_job *j)
{
    struct sw_job **pp = &h->buckets[hash_key(j->rec.key)];
    while (*pp && *pp != j)
        pp = &(*pp)->next;
    if (*pp == NULL)
        return;
    *pp = j->next;
    h->njobs--;
    sw_free(j->explain);
    sw_free(j->secrets);
    cJSON_Delete(j->kept);
    sw_free(j);
}

void sw_hub_jobs_foreach(struct sw_hub *h, void (*fn)(struct sw_hub *, struct sw_job *, void *),
                         void *ctx)
{
    for (size_t b = 0; b < SW_HUB_JOB_BUCKETS; b++)
        for (struct sw_job *j = h->buckets[b]; j; j = j->next)
            fn(h, j, ctx);
}

void sw_hub_step_done(struct sw_hub *h, struct sw_job *j, int rc)
{
    j->busy = false;
    if (rc == 0) {
        j->backoff = 0;
        j->next_ms = 0;
        sw_hub_kick(h);
        return;
    }
    if (j->backoff < 8)
        j->backoff++;
    int64_t delay = 250LL << j->backoff;
    if (delay > 30000)
        delay = 30000;
    j->next_ms = sw_hub_mono_ms() + delay;
}

/* ---- the tick ------------------------------------------------------------ */

/*
 * A finished Job with nothing left to do: its outcome shown, its outputs
 * rounds over, no stale mirror, its origin still there as the hub left it.
 * Checked on the cache's compact record, so that the many finished Jobs a
 * hub keeps cost no JSON view per tick.
 */
static bool settled(struct sw_hub *h, const struct sw_job *j)
{
    const struct sw_job_rec *r = &j->rec;
    if (!sw_job_state_terminal(r->state) || !j->status_synced || j->output_stops > 0 ||
        r->nstale > 0)
        return false;
    const struct sw_job_record *o = sw_observe_origin_record(h, r);
    if (o == NULL || o->deleting != NULL)
        return false; /* gone or going: the record follows it */
    /* An annotation-only origin resumed at home after a burst that completed
     * is suspended again (follow.c). */
    return !(r->form == SW_FORM_ANNOTATION && r->state == SW_JS_SUCCEEDED && o->suspend != 1 &&
             strcmp(r->target_cluster, r->cluster) != 0);
}

/*
 * A settled record ends once its Job has been finished for
 * records.retireAfterSeconds and its origin proves the outcome by itself
 * (retire.h); until the origin shows it, the outcome is written there again
 * every 30 s.
 */
static void retire_if_due(struct sw_hub *h, struct sw_job *j)
{
    const struct sw_job_record *o = sw_observe_origin_record(h, &j->rec);
    switch (
        sw_retire_check(&j->rec, o, sw_hub_wall_ms(), (int64_t)(h->cfg.retire_after_s * 1000))) {
    case SW_RETIRE_NOT_YET:
        return;
    case SW_RETIRE_SHOW:
        sw_follow_annotate(h, &j->rec);
        j->next_ms = sw_hub_mono_ms() + 30000;
        return;
    case SW_RETIRE_NOW:
        sw_follow_retire(h, j);
        return;
    }
}

static void step_one(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)ctx;
    if (j->busy || j->transfer || !j->persisted || sw_hub_mono_ms() < j->next_ms)
        return;
    struct sw_member *origin_m = sw_member_find(h, j->rec.cluster);
    if (origin_m == NULL || !sw_cluster_cache_synced(origin_m->cache))
        return;
    if (settled(h, j)) {
        retire_if_due(h, j);
        return;
    }
    const cJSON *origin = sw_observe_origin(h, &j->rec);
    bool deleting = origin && cJSON_GetObjectItemCaseSensitive(
                                  cJSON_GetObjectItemCaseSensitive(origin, "metadata"),
                                  "deletionTimestamp") != NULL;
    if (origin == NULL || deleting) {
        sw_follow_origin_gone(h, j, origin);
        return;
    }
    /* An annotation-only Job that finished at home before it was suspended
     * ran at home: nothing more to do for it (never run it again). */
    if (j->rec.form == SW_FORM_ANNOTATION && sw_follow_finished_at_home(h, j, origin))
        return;
    if (sw_loss_step(h, j))
        return;
    if (sw_dispatch_keep_origin(h, j))
        return;
    switch (j->rec.state) {
    case SW_JS_DECIDED:
        sw_data_step(h, j);
        break;
    case SW_JS_DATA_READY:
    case SW_JS_DISPATCHING:
        sw_dispatch_step(h, j);
        break;
    case SW_JS_DISPATCHED:
    case SW_JS_RUNNING:
    case SW_JS_REQUEUED:
    case SW_JS_SUCCEEDED:
    case SW_JS_FAILED:
        sw_follow_step(h, j);
        break;
    default:
        break;
    }
}

static void count_backlog(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)ctx;
    enum sw_job_state s = j->rec.state;
    if (j->persisted && (s == SW_JS_DECIDED || s == SW_JS_DATA_READY || s == SW_JS_DISPATCHING))
        h->dispatch_backlog++;
}

static void tick(uv_timer_t *t)
{
    struct sw_hub *h = t->data;
    h->kick_pending = false;
    if (!sw_hub_acting(h))
        return;
    h->dispatch_backlog = 0;
    sw_hub_jobs_foreach(h, count_backlog, NULL);
    sw_members_tick(h);
    sw_capacity_shortage_tick(h);
    sw_capacity_flush(h);
    sw_rules_tick(h);
    sw_spend_tick(h);
    if (h->dispatch_backlog == 0)
        sw_follow_flush_events(h, 10); /* 50 a second: a member's default QPS */
    sw_observe_scan(h);
    sw_adopt_round(h); /* records that say less than their mirrors, before any decision */
    int64_t now = sw_hub_mono_ms();
    if (sw_members_synced(h) && (h->decide_wanted || now >= h->next_decide_ms)) {
        h->decide_wanted = false;
        h->next_decide_ms = now + (int64_t)(h->cfg.recheck_s * 1000);
        sw_decide_round(h);
    }
    /* MultiKueue's external dispatcher, when configured (multikueue.c). */
    if (sw_members_synced(h))
        sw_mk_dispatch_round(h);
    sw_hub_jobs_foreach(h, step_one, NULL);
}

static void tick_again(uv_timer_t *t)
{
    tick(t);
}

void sw_hub_kick(struct sw_hub *h)
{
    if (h->kick_pending)
        return;
    h->kick_pending = true;
    /* Coalesce a burst of changes into one round 50 ms later. */
    uv_timer_start(&h->tick_timer, tick_again, 50, 200);
}

void sw_hub_want_decide(struct sw_hub *h)
{
    h->decide_wanted = true;
    sw_hub_kick(h);
}

int sw_hub_run(struct sw_hub *h);

int sw_hub_run(struct sw_hub *h)
{
    struct sw_error err = {0};
    h->started_ms = sw_hub_wall_ms();
    /* Before the first gated Job: the pool's size is fixed once it runs. */
    if (sw_gate_set_workers(h->cfg.gate_workers) != 0) {
        SW_LOG(SW_LOG_ERROR, "cannot size the data gate's pool", "workers=%d", h->cfg.gate_workers);
        return 1;
    }
    if (sw_runtimes_init(&h->runtimes, SW_RUNTIMES_MAX, NULL) != 0) {
        SW_LOG(SW_LOG_ERROR, "cannot make room for the runtimes history", "max=%d",
               SW_RUNTIMES_MAX);
        return 1;
    }
    if (sw_metrics_start(h, &err) != 0) {
        SW_LOG(SW_LOG_ERROR, "cannot serve metrics", "listen=%s err=%s", sw_log_q(h->cfg.listen),
               sw_log_q(err.msg));
        return 1;
    }
    uv_timer_init(h->loop, &h->tick_timer);
    h->tick_timer.data = h;
    uv_timer_start(&h->tick_timer, tick_again, 200, 200);
    if (sw_leader_start(h) != 0)
        return 1;
    uv_run(h->loop, UV_RUN_DEFAULT);
    return 0;
}
