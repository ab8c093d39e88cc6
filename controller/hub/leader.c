/*
 * leader.c - one acting hub at a time: a lease in Redis and a fencing epoch.
 *
 * Every hub runs the same Lua script every TTL/3: it renews the lease when
 * this hub holds it, takes it when nobody does (incrementing the epoch), and
 * otherwise answers 0. Redis runs the script atomically, so two hubs never
 * both get the lease. The hub acts only until the time it sent its last
 * successful renewal plus the TTL; past that, or when a fenced write is
 * refused because the epoch moved on, it exits (crash-only: the process
 * supervisor starts it again as a standby). A standby serves /healthz and
 * /readyz (ready while Redis answers its campaigns that another hub holds
 * the lease: ready.h) and does nothing else.
 *
 * Redis Sentinel. Replication is asynchronous, so a failover can lose the
 * newest writes, the epoch's increment among them. Two rules keep every
 * epoch a hub acts under strictly above any epoch acted under before:
 *   - a take (and a re-take) writes max(the epoch in Redis, the taker's own
 *     last epoch) + 1, never a bare INCR;
 *   - with Sentinel, a hub acts under a new epoch only once a replica has
 *     it (WAIT 1), or when no replica is connected at all (ROLE): the node
 *     a failover promotes then holds it, so a standby that takes the lease
 *     there gets a higher one. (Not covered: the master dies before any
 *     replica linked up, and Sentinel promotes a replica that had been
 *     unlinked only briefly; docs/dr.md.)
 * When the client follows a failover to another node, the leader re-takes
 * its lease there under a new epoch and reads the records again (its
 * memory may be ahead of what the new master kept); a record the failover
 * lost is re-derived from the clusters (adopt.c). Its steps in flight
 * (Redis writes, Kubernetes calls: j->busy) finish first: their writes are
 * of things that happened. Long transfers (j->transfer: an input copy, a
 * final outputs round) are not waited for: when one lands, data.c uses its
 * result only if the record as read again still asks for it, and writes it
 * under the epoch of that moment.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/hub/hub.h"

/* How long the new epoch may take to reach a replica (WAIT), in ms. */
#define WAIT_MS 1000

/* KEYS: lease, epoch. ARGV: this hub's id, the TTL in ms, its own epoch
 * (0 before it led), "retake" to take the lease anew even while it holds it. */
static const char LEASE_LUA[] = "local cur = redis.call('GET', KEYS[1])\n"
                                "if cur and cur ~= ARGV[1] then return 0 end\n"
                                "local epoch = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
                                "if cur == ARGV[1] and ARGV[4] ~= 'retake' then\n"
                                "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                "  return epoch\n"
                                "end\n"
                                "local own = tonumber(ARGV[3]) or 0\n"
                                "if own > epoch then epoch = own end\n"
                                "epoch = epoch + 1\n"
                                "redis.call('SET', KEYS[2], string.format('%d', epoch))\n"
                                "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                                "return epoch\n";

struct renew {
    struct sw_hub *h;
    int64_t sent_mono;
    bool retake;
};

static void on_loaded(struct sw_hub *h, int rc)
{
    h->loading = false;
    if (rc != 0) {
        SW_LOG(SW_LOG_ERROR,
               "cannot load the job records, the learned figures or the runtimes; trying again",
               "epoch=%lld", (long long)h->epoch);
        return;
    }
    h->loaded = true;
    SW_LOG(SW_LOG_INFO, "acting as leader", "hub=%s epoch=%lld jobs=%zu", sw_log_q(h->id),
           (long long)h->epoch, h->njobs);
    sw_members_publish(h); /* the view says who acts, under which epoch */
    sw_hub_want_decide(h);
}

void sw_leader_lost(struct sw_hub *h, const char *why)
{
    SW_LOG(SW_LOG_ERROR, "leadership lost; exiting so that only one hub acts",
           "hub=%s epoch=%lld why=%s", sw_log_q(h->id), (long long)h->epoch, sw_log_q(why));
    fflush(NULL);
    _Exit(3);
}

static void load_records(struct sw_hub *h);

/* The runtimes are in: leading. The ended records the budgets count are
 * read next (spend.c), not as part of taking leadership: no decision
 * waits for them but those of a hub with budgets (decide.c), and a read
 * that fails is tried again on its own (sw_spend_tick). */
static void on_runtimes(struct sw_hub *h, int rc)
{
    on_loaded(h, rc);
    if (rc == 0 && sw_spend_load(h, NULL) != 0)
        SW_LOG(SW_LOG_WARN, "cannot ask for the ended records the budgets count; trying again",
               "epoch=%lld", (long long)h->epoch);
}

/* The learned figures are in: the finished Jobs' runtimes next (record.c). */
static void on_figures(struct sw_hub *h, int rc)
{
    if (rc == 0 && sw_rec_runtimes_load(h, on_runtimes) == 0)
        return;
    on_loaded(h, rc != 0 ? rc : SW_EUNAVAIL);
}

/* The records are in: the NodePools' learned figures next (capacity.c). */
static void on_records(struct sw_hub *h, int rc)
{
    if (rc == 0 && sw_capacity_load(h, on_figures) == 0)
        return;
    on_loaded(h, rc != 0 ? rc : SW_EUNAVAIL);
}

/* No replica acknowledged the epoch: acting is safe only if none is connected. */
static void on_role(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct sw_hub *h = ctx;
    h->loading = false;
    /* ROLE on a master: "master", offset, [[ip, port, offset]...]. */
    bool none = reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 3 &&
                reply->element[2]->type == REDIS_REPLY_ARRAY && reply->element[2]->elements == 0;
    if (!none) {
        const char *why = reply == NULL                      ? (errs ? errs : "no reply")
                          : reply->type == REDIS_REPLY_ERROR ? reply->str
                                                             : "a replica is connected, behind";
        SW_LOG(SW_LOG_WARN, "the new epoch is on no replica yet; not acting under it",
               "hub=%s epoch=%lld err=%s", sw_log_q(h->id), (long long)h->epoch, sw_log_q(why));
        return; /* the next renewal tries again */
    }
    /* Nothing could be promoted with an older epoch: a replica that links
     * up later copies this one. (After a crash of the old master this is
     * the usual case, and waiting for a replica would stop the hub.) */
    SW_LOG(SW_LOG_WARN,
           "no replica connected to the Redis master; acting under an epoch only it has",
           "hub=%s epoch=%lld", sw_log_q(h->id), (long long)h->epoch);
    h->epoch_replicated = true;
    load_records(h);
}

static void on_waited(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    (void)errs;
    struct sw_hub *h = ctx;
    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER || reply->integer < 1) {
        if (sw_redis_command(h->redis, on_role, h, "ROLE") != 0)
            h->loading = false;
        return;
    }
    h->loading = false;
    h->epoch_replicated = true;
    load_records(h);
}

/*
 * Reads the records (sw_rec_load_all), once the epoch is safe: with
 * Sentinel, only after a replica acknowledged it (WAIT) or when none is
 * connected, so that a failover cannot take the epoch back below one this
 * hub acted under.
 */
static void load_records(struct sw_hub *h)
{
    if (h->loading || h->loaded || h->retake_wanted)
        return;
    h->loading = true;
    if (sw_redis_is_sentinel(h->redis) && !h->epoch_replicated) {
        if (sw_redis_command(h->redis, on_waited, h, "WAIT 1 %d", WAIT_MS) != 0)
            h->loading = false;
        return;
    }
    if (sw_rec_load_all(h, on_records) != 0)
        h->loading = false;
}

static void on_reply(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct renew *rn = ctx;
    struct sw_hub *h = rn->h;
    int64_t sent = rn->sent_mono;
    bool retake = rn->retake;
    free(rn);
    if (retake)
        h->retaking = false;
    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        const char *why = reply && reply->type == REDIS_REPLY_ERROR ? reply->str
                          : errs                                    ? errs
                                                                    : "no reply";
        h->standby_mono = 0;
        SW_LOG(SW_LOG_WARN, "lease renewal failed", "hub=%s err=%s", sw_log_q(h->id),
               sw_log_q(why));
        if (h->leader && sw_hub_mono_ms() >= h->lease_until_mono)
            sw_leader_lost(h, "the lease expired without a renewal");
        return;
    }
    int64_t epoch = reply->integer;
    if (epoch == 0) {
        if (h->leader)
            sw_leader_lost(h, "another hub holds the lease");
        h->standby_mono = sw_hub_mono_ms(); /* standing by, ready to take over */
        return;
    }
    if (retake) {
        /* A new epoch on the node the client followed the failover to. */
        SW_LOG(SW_LOG_INFO, "re-took the lease after a Redis failover",
               "hub=%s epoch=%lld was=%lld redis=%s", sw_log_q(h->id), (long long)epoch,
               (long long)h->epoch, sw_log_q(sw_redis_node(h->redis)));
        h->epoch = epoch;
        h->retake_wanted = false;
        h->epoch_replicated = false;
    } else if (h->leader && epoch != h->epoch && !h->retake_wanted) {
        /* Lower: the store lost the epoch's increment (a failover not
         * followed as one); higher: another hub took over. Either way this
         * hub must not go on under its epoch. */
        sw_leader_lost(h, "the epoch moved on");
    }
    h->lease_until_mono = sent + (int64_t)(h->cfg.lease_ttl_s * 1000);
    if (!h->leader) {
        h->leader = true;
        h->epoch = epoch;
        h->epoch_replicated = false;
        SW_LOG(SW_LOG_INFO, "took the lease", "hub=%s epoch=%lld", sw_log_q(h->id),
               (long long)epoch);
        sw_members_start(h);
    }
    snprintf(h->redis_node, sizeof(h->redis_node), "%s", sw_redis_node(h->redis));
    if (!h->loaded && !h->loading)
        load_records(h);
}

static void busy_one(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)h;
    if (j->busy)
        *(bool *)ctx = true;
}

static bool any_busy(struct sw_hub *h)
{
    bool busy = false;
    sw_hub_jobs_foreach(h, busy_one, &busy);
    return busy;
}

static void campaign(uv_timer_t *t)
{
    struct sw_hub *h = t->data;
    if (h->leader && sw_hub_mono_ms() >= h->lease_until_mono)
        sw_leader_lost(h, "the lease expired without a renewal");
    struct renew *rn = malloc(sizeof(*rn));
    if (rn == NULL)
        return;
    rn->h = h;
    rn->sent_mono = sw_hub_mono_ms();
    /* Re-take once the steps in flight have finished (their writes are of
     * things that happened, under the old epoch); long transfers are not
     * steps, and are not waited for. */
    rn->retake = h->retake_wanted && h->leader && !h->retaking && !any_busy(h);
    if (h->retaking) {
        free(rn); /* one re-take at a time: its answer decides */
        return;
    }
    char ttl[32], own[32];
    snprintf(ttl, sizeof(ttl), "%lld", (long long)(h->cfg.lease_ttl_s * 1000));
    snprintf(own, sizeof(own), "%lld", (long long)h->epoch);
    const char *argv[] = {"EVAL",       LEASE_LUA,    "2",
                          SW_KEY_LEASE, SW_KEY_EPOCH, h->id,
                          ttl,          own,          rn->retake ? "retake" : ""};
    if (rn->retake)
        h->retaking = true;
    if (sw_redis_command_argv(h->redis, on_reply, rn, 9, argv, NULL) != 0) {
        h->standby_mono = 0;
        if (rn->retake)
            h->retaking = false;
        free(rn);
        if (h->leader && sw_hub_mono_ms() >= h->lease_until_mono)
            sw_leader_lost(h, "Redis unreachable past the lease");
    }
}

void sw_leader_redis_state(struct sw_redis *r, int up, const char *why, void *ctx)
{
    (void)r;
    (void)why;
    struct sw_hub *h = ctx;
    /* Followed a Sentinel failover to another node: the records there may
     * lack the newest writes. Stop acting, let the steps in flight finish,
     * then re-take the lease under a new epoch and read the records again. */
    if (up && h->leader && sw_redis_is_sentinel(h->redis) && h->redis_node[0] != '\0' &&
        strcmp(h->redis_node, sw_redis_node(h->redis)) != 0) {
        SW_LOG(SW_LOG_WARN, "Redis failed over; re-taking the lease on the new master",
               "hub=%s epoch=%lld was=%s now=%s", sw_log_q(h->id), (long long)h->epoch,
               sw_log_q(h->redis_node), sw_log_q(sw_redis_node(h->redis)));
        h->retake_wanted = true;
        h->loaded = false;
        h->failovers++;
    }
    /* Back after a Redis restart or a lost connection: renew at once rather
     * than at the next period, so a short outage never costs the lease. */
    if (up && h->lease_timer.data == h)
        campaign(&h->lease_timer);
}

int sw_leader_start(struct sw_hub *h)
{
    uv_timer_init(h->loop, &h->lease_timer);
    h->lease_timer.data = h;
    int64_t every = (int64_t)(h->cfg.lease_ttl_s * 1000) / 3;
    if (every < 100)
        every = 100;
    uv_timer_start(&h->lease_timer, campaign, 0, (uint64_t)every);
    return 0;
}
