/*
 * spend.c - what each team with a budget has spent in its period, for the
 * decisions (decide.c gives the engine each budget) and /metrics.
 *
 * The live records are the hub's own; the records that ended (retired,
 * spillway:ended) are read from Redis by the leader before its first
 * decision and every minute after, from the start of the earliest budget's
 * period (a record's score there is when its Job finished, so those are
 * the only ones that can have run in it). A record this hub ends is kept at
 * once, so that it does not drop out of the spend until the next read;
 * replies come in the order the commands were sent, so a read answered
 * after that end includes it, and one answered before it is replaced by
 * it. The tally counts an ended run once, and not at all while a live
 * record has its UID (budget.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"

#define REREAD_MS 60000
/* A read that failed is tried again after this. */
#define RETRY_MS 5000
/* The most ended records one read takes: the newest of the period. Beyond
 * it the budgets are short of the oldest runs, and the hub says so. */
#define MAX_READ 10000

struct load_ctx {
    struct sw_hub *h;
    void (*done)(struct sw_hub *h, int rc);
};

/* The start of the earliest current period of every budget. */
static int64_t earliest_start(const struct sw_hub *h, int64_t now_ms)
{
    int64_t from = now_ms;
    for (size_t i = 0; i < h->cfg.nbudgets; i++) {
        int64_t s = sw_budget_period_start(h->cfg.budgets[i].period, now_ms);
        if (s < from)
            from = s;
    }
    return from;
}

/* Keeps the run of `r`; one whose figures no budget believes is counted
 * in *bad and not kept. */
static int keep(struct sw_hub *h, struct sw_budget_run **runs, size_t *n, size_t *cap,
                const struct sw_job_rec *r, size_t *bad)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct sw_budget_run *nr = sw_realloc(*runs, nc * sizeof(*nr));
        if (nr == NULL)
            return SW_ENOMEM;
        *runs = nr;
        *cap = nc;
    }
    if (sw_budget_run_of(&h->cfg.tenancy, r, &(*runs)[*n]) != 0)
        (*bad)++;
    else
        (*n)++;
    return 0;
}

static void on_ended(struct sw_redis *rd, redisReply *reply, const char *errs, void *ctx)
{
    (void)rd;
    struct load_ctx *l = ctx;
    struct sw_hub *h = l->h;
    void (*done)(struct sw_hub *, int) = l->done;
    sw_free(l);
    h->budget_loading = false;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        SW_LOG(SW_LOG_WARN, "cannot read the ended records for the budgets; trying again",
               "err=%s retry_s=%d",
               sw_log_q(reply && reply->type == REDIS_REPLY_ERROR ? reply->str
                        : errs                                    ? errs
                                                                  : "not a list"),
               RETRY_MS / 1000);
        h->budget_read_ms = sw_hub_mono_ms() - REREAD_MS + RETRY_MS;
        if (done)
            done(h, SW_EUNAVAIL);
        return;
    }
    struct sw_budget_run *runs = NULL;
    size_t n = 0, cap = 0, skipped = 0, bad = 0;
    for (size_t i = 0; i < reply->elements; i++) {
        redisReply *e = reply->element[i];
        if (e->type != REDIS_REPLY_STRING)
            continue;
        cJSON *o = NULL;
        struct sw_job_rec r;
        struct sw_error err = {0};
        if (sw_json_parse(e->str, e->len, SW_KEY_ENDED, &o, &err) != 0 ||
            sw_job_rec_from_json(o, &r, &err) != 0) {
            /* A record that does not parse bills nothing: said, not fatal. */
            skipped++;
            cJSON_Delete(o);
            continue;
        }
        cJSON_Delete(o);
        if (r.started_ms == 0)
            continue;
        if (keep(h, &runs, &n, &cap, &r, &bad) != 0) {
            sw_free(runs);
            if (done)
                done(h, SW_ENOMEM);
            return;
        }
    }
    if (skipped > 0)
        SW_LOG(SW_LOG_WARN, "ended records that do not parse count for no budget", "records=%zu",
               skipped);
    if (bad > 0)
        SW_LOG(SW_LOG_WARN,
               "ended records whose price or expected cost is out of bounds count for no budget",
               "records=%zu max_usd_per_hour=%g max_cost_usd=%g", bad, SW_BUDGET_MAX_RATE_H,
               SW_BUDGET_MAX_COST);
    bool partial = reply->elements >= MAX_READ;
    if (partial && !h->budget_partial)
        SW_LOG(SW_LOG_WARN,
               "more ended records in the budgets' periods than one read takes: the oldest "
               "runs count for no budget, the teams' spend is short of them",
               "read=%d", MAX_READ);
    h->budget_partial = partial;
    sw_free(h->budget_ended);
    h->budget_ended = runs;
    h->nbudget_ended = n;
    h->cap_budget_ended = cap;
    bool first = !h->budget_loaded;
    if (first)
        SW_LOG(SW_LOG_INFO, "ended records read for the budgets", "runs=%zu", n);
    h->budget_loaded = true;
    if (first)
        sw_hub_want_decide(h); /* the rounds waited for it */
    if (done)
        done(h, 0);
}

/* The budgets this hub enforces, for spillctl report budget: written with
 * every read of the ended records (a leader's config is what counts), with
 * the grants that name teams (to key records as the hub does), under the
 * epoch: a hub that no longer leads writes nothing. */
static const char PUBLISH_LUA[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
    "  return redis.error_reply('FENCED epoch ' .. ARGV[1] .. ' is not the current one')\n"
    "end\n"
    "redis.call('SET', KEYS[2], ARGV[2])\n"
    "return 1\n";

static void on_published(struct sw_redis *rd, redisReply *reply, const char *errs, void *ctx)
{
    (void)rd;
    struct sw_hub *h = ctx;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && strstr(reply->str, "FENCED")) {
        h->m.fenced++;
        if (!h->retake_wanted)
            sw_leader_lost(h, "a fenced write was refused: another hub has a newer epoch");
    } else if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        SW_LOG(SW_LOG_WARN, "cannot publish the budgets; written again with the next read",
               "key=%s err=%s", SW_KEY_BUDGETS,
               sw_log_q(reply  ? reply->str
                        : errs ? errs
                               : "no reply"));
    }
}

static void publish(struct sw_hub *h)
{
    cJSON *o = cJSON_CreateObject(), *a = o ? cJSON_AddArrayToObject(o, "budgets") : NULL;
    for (size_t i = 0; a != NULL && i < h->cfg.nbudgets; i++) {
        const struct sw_team_budget *b = &h->cfg.budgets[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "team", b->team);
        cJSON_AddNumberToObject(e, "amount", b->amount);
        cJSON_AddStringToObject(e, "period", sw_budget_period_name(b->period));
        cJSON_AddItemToArray(a, e);
    }
    char *text = NULL;
    if (a != NULL && sw_budget_grants_to_json(&h->cfg.tenancy, o) == 0) {
        cJSON_AddNumberToObject(o, "epoch", (double)h->epoch);
        cJSON_AddNumberToObject(o, "writtenMs", (double)sw_hub_wall_ms());
        text = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(o);
    if (text == NULL) {
        SW_LOG(SW_LOG_WARN, "out of memory publishing the budgets", "key=%s", SW_KEY_BUDGETS);
        return;
    }
    char epoch[32];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)h->epoch);
    const char *argv[] = {"EVAL", PUBLISH_LUA, "2", SW_KEY_EPOCH, SW_KEY_BUDGETS, epoch, text};
    sw_redis_command_argv(h->redis, on_published, h, 7, argv, NULL);
    cJSON_free(text);
}

int sw_spend_load(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc))
{
    if (h->cfg.nbudgets == 0) {
        publish(h); /* none: a list an earlier leader wrote is not shown */
        h->budget_loaded = true;
        if (done)
            done(h, 0);
        return 0;
    }
    struct load_ctx *l = sw_calloc(1, sizeof(*l));
    if (l == NULL)
        return SW_ENOMEM;
    *l = (struct load_ctx){h, done};
    h->budget_loading = true;
    h->budget_read_ms = sw_hub_mono_ms();
    publish(h);
    /* The newest first, at most MAX_READ of them (one reply parsed on the
     * loop stays bounded). */
    int rc =
        sw_redis_command(h->redis, on_ended, l, "ZREVRANGEBYSCORE %s +inf %lld LIMIT 0 %d",
                         SW_KEY_ENDED, (long long)earliest_start(h, sw_hub_wall_ms()), MAX_READ);
    if (rc != 0) {
        h->budget_loading = false;
        h->budget_read_ms = sw_hub_mono_ms() - REREAD_MS + RETRY_MS;
        sw_free(l);
    }
    return rc;
}

void sw_spend_tick(struct sw_hub *h)
{
    if (h->cfg.nbudgets == 0 || h->budget_loading ||
        sw_hub_mono_ms() - h->budget_read_ms < REREAD_MS)
        return;
    sw_spend_load(h, NULL);
}

void sw_spend_ended(struct sw_hub *h, const struct sw_job_rec *r)
{
    if (h->cfg.nbudgets == 0 || r->started_ms == 0)
        return;
    size_t bad = 0;
    if (keep(h, &h->budget_ended, &h->nbudget_ended, &h->cap_budget_ended, r, &bad) != 0)
        SW_LOG(SW_LOG_WARN,
               "out of memory keeping an ended run for the budgets until the next read", "job=%s",
               sw_log_q(r->key));
}

struct gather {
    const struct sw_job_rec **recs;
    size_t n, cap;
    bool oom;
};

static void gather_one(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)h;
    struct gather *g = ctx;
    if (g->oom)
        return;
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 256;
        const struct sw_job_rec **nr = sw_realloc(g->recs, nc * sizeof(*nr));
        if (nr == NULL) {
            g->oom = true;
            return;
        }
        g->recs = nr;
        g->cap = nc;
    }
    /* The record as this hub has it: a decision whose write is still under
     * way counts already (its Job is busy, never decided twice), so the
     * next round cannot spend the same money; a write that fails puts it
     * back. */
    g->recs[g->n++] = &j->rec;
}

int sw_spend_tally(struct sw_hub *h)
{
    struct gather g = {0};
    sw_hub_jobs_foreach(h, gather_one, &g);
    struct sw_budget_status st[SW_HUB_MAX_BUDGETS];
    size_t bad = 0;
    int rc = g.oom ? SW_ENOMEM
                   : sw_budget_tally(h->cfg.budgets, h->cfg.nbudgets, &h->cfg.tenancy, g.recs, g.n,
                                     h->budget_ended, h->nbudget_ended, sw_hub_wall_ms(), st, &bad);
    sw_free(g.recs);
    if (rc != 0)
        return rc;
    /* Said when their number changes, not every round and scrape. */
    if (bad != h->budget_bad)
        SW_LOG(bad > 0 ? SW_LOG_WARN : SW_LOG_INFO,
               "job records whose price or expected cost is out of bounds count for no budget",
               "records=%zu max_usd_per_hour=%g max_cost_usd=%g", bad, SW_BUDGET_MAX_RATE_H,
               SW_BUDGET_MAX_COST);
    h->budget_bad = bad;
    memcpy(h->budget_status, st, h->cfg.nbudgets * sizeof(st[0]));
    h->nbudget_status = h->cfg.nbudgets;
    return 0;
}
