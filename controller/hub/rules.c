/*
 * rules.c - the leading hub runs every replication rule (spillctl replicate
 * add), continuously: a model-registry rule every
 * replication.modelRegistrySeconds (a run lists the source and copies only
 * what is new, so each new version moves within that period plus its copy
 * time), any other rule every replication.intervalSeconds.
 *
 * One runner per rule across all replicas: only the leader runs rules, and
 * each run starts with a Lua script that compares the hub's epoch with
 * spillway:hub:epoch and, when it is current, marks the rule as the hub's
 * (spillway:rule-owner:RULE, with a TTL) — a hub that lost the lease starts
 * no run, and `spillctl replicate run` refuses a rule marked so unless
 * --force. A run already started by a hub that then loses the lease ends
 * on its own; the copies are verified and journaled, so a second run of
 * the same objects skips them.
 *
 * Runs are blocking (replication/replicator.h), so each runs on a thread
 * of its own (common/thread.h) with its own loop, HTTP and Redis
 * connection, at most RULE_THREADS at once; a due rule waits for a free
 * one, oldest start first. Never on libuv's pool: a run waits for its
 * copies' SHA-256 jobs, which go to that pool, so runs there stopped every
 * copy once there were as many rules as pool threads. Their outcome (the
 * RPO per target, the last run) is kept here for /metrics.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/thread.h"
#include "controller/hub/hub.h"
#include "replication/replicator.h"
#include "replication/rule.h"

static const char OWN_LUA[] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
                              "redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])\n"
                              "return 1\n";

/* Rule runs at once, each on its own thread with up to its rule's
 * concurrency (16 objects by default) in flight. */
#define RULE_THREADS 4

struct rule_run {
    struct sw_thread_job req;
    struct sw_hub *h;
    char name[SW_REPL_NAME_MAX];
    char redis_url[1024];
    char owner[256];
    int64_t epoch;
    int64_t ttl_ms;
    /* results */
    int rc;
    bool fenced;
    bool model_registry;
    double objective_s;
    struct sw_repl_stats st;
    char targets[SW_REPL_MAX_TARGETS][SW_REPL_NAME_MAX];
    size_t ntargets;
    struct sw_error err;
};

static void run_work(struct sw_thread_job *req)
{
    struct rule_run *rr = req->data;
    redisContext *c = NULL;
    uv_loop_t loop;
    struct sw_http *http = NULL;
    struct sw_rule_bound *b = NULL;
    struct sw_rule_spec spec;
    if (uv_loop_init(&loop) != 0) {
        rr->rc = sw_error_set(&rr->err, SW_ENOMEM, "rule %s: cannot start a loop", rr->name);
        return;
    }
    rr->rc = sw_redis_sync_connect(rr->redis_url, 5000, &c, &rr->err);
    if (rr->rc == 0) {
        char ep[32], ttl[32], okey[128];
        snprintf(ep, sizeof(ep), "%lld", (long long)rr->epoch);
        snprintf(ttl, sizeof(ttl), "%lld", (long long)rr->ttl_ms);
        snprintf(okey, sizeof(okey), "%s%s", SW_KEY_RULE_OWNER, rr->name);
        const char *argv[] = {"EVAL", OWN_LUA, "2", SW_KEY_EPOCH, okey, ep, rr->owner, ttl};
        redisReply *rep = NULL;
        rr->rc = sw_redis_sync_command_argv(c, &rep, &rr->err, 8, argv, NULL);
        if (rr->rc == 0) {
            rr->fenced = rep->type != REDIS_REPLY_INTEGER || rep->integer != 1;
            freeReplyObject(rep);
        }
    }
    if (rr->rc == 0 && !rr->fenced)
        rr->rc = sw_rule_load(c, rr->h->key, rr->name, &spec, &rr->err);
    if (rr->rc == 0 && !rr->fenced) {
        rr->model_registry = spec.model_registry != 0;
        rr->objective_s = spec.rpo_objective_s;
        if (sw_http_new(&loop, &http) != 0)
            rr->rc = sw_error_set(&rr->err, SW_ENOMEM, "rule %s: cannot start HTTP", rr->name);
    }
    if (rr->rc == 0 && !rr->fenced)
        rr->rc = sw_rule_bind(c, rr->h->key, &spec, &loop, http, &b, &rr->err);
    if (rr->rc == 0 && !rr->fenced) {
        rr->ntargets = b->rule.ntargets;
        for (size_t i = 0; i < rr->ntargets; i++)
            snprintf(rr->targets[i], sizeof(rr->targets[i]), "%s", b->rule.targets[i].name);
        rr->rc = sw_repl_run_once(&b->rule, c, NULL, NULL, &rr->st, &rr->err);
    }
    if (b)
        sw_rule_bound_free(b);
    if (http)
        sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT); /* let the clients' handles close */
    uv_loop_close(&loop);
    if (c)
        redisFree(c);
}

static struct sw_hub_rule *rule_find(struct sw_hub *h, const char *name)
{
    for (size_t i = 0; i < h->nrules; i++)
        if (strcmp(h->rules[i].name, name) == 0)
            return &h->rules[i];
    return NULL;
}

static void run_done(struct sw_thread_job *req, int status)
{
    struct rule_run *rr = req->data;
    struct sw_hub *h = rr->h;
    struct sw_hub_rule *r = rule_find(h, rr->name);
    h->rule_runs--;
    if (r != NULL) {
        r->busy = false;
        r->model_registry = rr->model_registry;
        r->objective_s = rr->objective_s > 0 ? rr->objective_s : h->cfg.repl_rpo_objective_s;
        if (status == 0 && rr->rc == 0 && !rr->fenced) {
            int64_t now = sw_hub_wall_ms();
            r->refused = false;
            r->last_run_ms = now;
            r->runs_ok++;
            r->ntargets = rr->ntargets;
            for (size_t i = 0; i < rr->ntargets; i++) {
                snprintf(r->targets[i], sizeof(r->targets[i]), "%s", rr->targets[i]);
                r->oldest_pending_ms[i] = rr->st.rpo_ms[i] > 0 ? now - rr->st.rpo_ms[i] : 0;
            }
            h->m.replication_bytes += (uint64_t)(rr->st.bytes_copied > 0 ? rr->st.bytes_copied : 0);
            if (rr->st.copied > 0)
                SW_LOG(SW_LOG_INFO, "replication rule ran",
                       "rule=%s copied=%lld bytes=%lld ms=%lld", sw_log_q(rr->name),
                       (long long)rr->st.copied, (long long)rr->st.bytes_copied,
                       (long long)rr->st.elapsed_ms);
        } else if (!rr->fenced && rr->rc == SW_ECRYPTO) {
            /* The rule's record, or a store it names, does not verify:
             * nothing was sent to what they name. */
            r->runs_failed++;
            SW_LOG(r->refused ? SW_LOG_DEBUG : SW_LOG_ERROR,
                   "replication rule refused: a record does not verify", "rule=%s err=%s",
                   sw_log_q(rr->name), sw_log_q(rr->err.msg));
            r->refused = true;
        } else if (!rr->fenced) {
            r->refused = false;
            r->runs_failed++;
            SW_LOG(SW_LOG_WARN, "replication rule failed", "rule=%s err=%s", sw_log_q(rr->name),
                   sw_log_q(rr->rc ? rr->err.msg : "canceled"));
        } else {
            SW_LOG(SW_LOG_WARN, "replication rule not run: the epoch moved on", "rule=%s",
                   sw_log_q(rr->name));
        }
    }
    sw_seal_wipe_free(rr, sizeof(*rr));
}

static void start_run(struct sw_hub *h, struct sw_hub_rule *r)
{
    struct rule_run *rr = sw_calloc(1, sizeof(*rr));
    if (rr == NULL)
        return;
    rr->req.data = rr;
    rr->h = h;
    snprintf(rr->name, sizeof(rr->name), "%s", r->name);
    snprintf(rr->redis_url, sizeof(rr->redis_url), "%s", h->redis_url);
    double every = r->model_registry ? h->cfg.repl_model_s : h->cfg.repl_interval_s;
    snprintf(rr->owner, sizeof(rr->owner), "%s epoch %lld, every %g s", h->id, (long long)h->epoch,
             every);
    rr->epoch = h->epoch;
    /* Marked for a little longer than the gap between two runs. */
    rr->ttl_ms = (int64_t)(every * 1000) * 3 + 10000;
    r->busy = true;
    r->started_ms = sw_hub_wall_ms();
    if (sw_thread_job_start(h->loop, &rr->req, run_work, run_done) != 0) {
        r->busy = false;
        sw_free(rr);
        return;
    }
    h->rule_runs++;
}

/* ---- the list of rules, re-read with the stores ------------------------------- */

void sw_rules_set(struct sw_hub *h, char **names, size_t n)
{
    struct sw_hub_rule next[SW_HUB_MAX_RULES];
    size_t nn = 0;
    for (size_t i = 0; i < n && nn < SW_HUB_MAX_RULES; i++) {
        struct sw_hub_rule *old = rule_find(h, names[i]);
        if (old)
            next[nn] = *old;
        else {
            memset(&next[nn], 0, sizeof(next[nn]));
            snprintf(next[nn].name, sizeof(next[nn].name), "%s", names[i]);
            SW_LOG(SW_LOG_INFO, "replication rule added", "rule=%s", sw_log_q(names[i]));
        }
        nn++;
    }
    /* A removed rule whose run is still going stays until it ends. */
    for (size_t i = 0; i < h->nrules && nn < SW_HUB_MAX_RULES; i++) {
        bool kept = false;
        for (size_t k = 0; k < n; k++)
            kept = kept || strcmp(names[k], h->rules[i].name) == 0;
        if (!kept && h->rules[i].busy)
            next[nn++] = h->rules[i];
    }
    memcpy(h->rules, next, nn * sizeof(next[0]));
    h->nrules = nn;
}

void sw_rules_tick(struct sw_hub *h)
{
    int64_t now = sw_hub_wall_ms();
    while (h->rule_runs < RULE_THREADS) {
        /* The due rule that started longest ago (never: first), so that no
         * rule waits behind others forever. */
        struct sw_hub_rule *next = NULL;
        for (size_t i = 0; i < h->nrules; i++) {
            struct sw_hub_rule *r = &h->rules[i];
            double every = r->model_registry ? h->cfg.repl_model_s : h->cfg.repl_interval_s;
            if (r->busy || (r->started_ms != 0 && now - r->started_ms < (int64_t)(every * 1000)))
                continue;
            if (next == NULL || r->started_ms < next->started_ms)
                next = r;
        }
        if (next == NULL)
            return;
        size_t before = h->rule_runs;
        start_run(h, next);
        if (h->rule_runs == before)
            return; /* could not start: the next tick tries again */
    }
}
