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
 * does nothing else.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/hub/hub.h"

static const char LEASE_LUA[] = "local cur = redis.call('GET', KEYS[1])\n"
                                "if cur == ARGV[1] then\n"
                                "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                "  return tonumber(redis.call('GET', KEYS[2]) or '0')\n"
                                "end\n"
                                "if cur then return 0 end\n"
                                "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                                "return redis.call('INCR', KEYS[2])\n";

struct renew {
    struct sw_hub *h;
    int64_t sent_mono;
};

static void on_loaded(struct sw_hub *h, int rc)
{
    h->loading = false;
    if (rc != 0) {
        SW_LOG(SW_LOG_ERROR, "cannot load the job records; trying again", "epoch=%lld",
               (long long)h->epoch);
        return;
    }
    h->loaded = true;
    SW_LOG(SW_LOG_INFO, "acting as leader", "hub=%s epoch=%lld jobs=%zu", sw_log_q(h->id),
           (long long)h->epoch, h->njobs);
    sw_hub_want_decide(h);
}

void sw_leader_lost(struct sw_hub *h, const char *why)
{
    SW_LOG(SW_LOG_ERROR, "leadership lost; exiting so that only one hub acts",
           "hub=%s epoch=%lld why=%s", sw_log_q(h->id), (long long)h->epoch, sw_log_q(why));
    fflush(NULL);
    _Exit(3);
}

static void on_reply(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct renew *rn = ctx;
    struct sw_hub *h = rn->h;
    int64_t sent = rn->sent_mono;
    free(rn);
    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        const char *why = reply && reply->type == REDIS_REPLY_ERROR ? reply->str
                          : errs                                    ? errs
                                                                    : "no reply";
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
        return;
    }
    if (h->leader && epoch != h->epoch)
        sw_leader_lost(h, "the epoch moved on");
    h->lease_until_mono = sent + (int64_t)(h->cfg.lease_ttl_s * 1000);
    if (!h->leader) {
        h->leader = true;
        h->epoch = epoch;
        SW_LOG(SW_LOG_INFO, "took the lease", "hub=%s epoch=%lld", sw_log_q(h->id),
               (long long)epoch);
        sw_members_start(h);
    }
    if (!h->loaded && !h->loading) {
        h->loading = true;
        if (sw_rec_load_all(h, on_loaded) != 0)
            h->loading = false;
    }
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
    char ttl[32];
    snprintf(ttl, sizeof(ttl), "%lld", (long long)(h->cfg.lease_ttl_s * 1000));
    const char *argv[] = {"EVAL", LEASE_LUA, "2", SW_KEY_LEASE, SW_KEY_EPOCH, h->id, ttl};
    if (sw_redis_command_argv(h->redis, on_reply, rn, 7, argv, NULL) != 0) {
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
