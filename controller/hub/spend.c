/*
 * spend.c - what each team with a budget has spent in its period, for the
 * decisions (decide.c gives the engine each budget) and /metrics.
 *
 * The live records are the hub's own; the runs of records that ended are
 * the compact spend entries (SW_KEY_SPEND: only runs on cloud capacity,
 * scored by when they ended, so those from the earliest budget's period
 * start on are the only ones that can have run in it), read by the leader
 * before its first decision and every minute after, page by page
 * (SW_SPEND_PAGE at a time, each page after the last score seen), all of
 * them: no number of other Jobs can push a team's runs out of the read.
 * The figures read before stay until a whole read is in. A record this hub
 * ends is kept at once (and in the read under way, should it have passed
 * its score already), so that it does not drop out of the spend until the
 * next read. The tally counts an ended run once, and not at all while a
 * live record has its UID (budget.h).
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

struct sw_spend_read {
    struct sw_hub *h;
    void (*done)(struct sw_hub *h, int rc);
    struct sw_budget_run *runs; /* what this read has kept so far */
    size_t n, cap, skipped, bad, pages;
    char cursor[64]; /* the last score seen ("" before the first page) */
    size_t skip;     /* entries at that score already seen */
    char from[32];   /* the earliest period's start */
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

static bool budgeted(const struct sw_hub *h, const char *team)
{
    for (size_t i = 0; i < h->cfg.nbudgets; i++)
        if (strcmp(h->cfg.budgets[i].team, team) == 0)
            return true;
    return false;
}

/* Keeps the run of `r` when a budget counts it (a team with a budget, run
 * on cloud capacity); one whose figures no budget believes is counted in
 * *bad and kept as such when its team has a budget (the tally charges that
 * team the whole amount). */
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
    struct sw_budget_run *run = &(*runs)[*n];
    if (sw_budget_run_of(&h->cfg.tenancy, r, run) != 0) {
        (*bad)++;
        if (budgeted(h, run->team))
            (*n)++;
    } else if (run->cloud && run->started_ms > 0 && budgeted(h, run->team)) {
        (*n)++;
    }
    return 0;
}

static int send_page(struct sw_spend_read *l);

static void read_failed(struct sw_spend_read *l, const char *why)
{
    struct sw_hub *h = l->h;
    void (*done)(struct sw_hub *, int) = l->done;
    SW_LOG(SW_LOG_WARN, "cannot read the spend of ended runs for the budgets; trying again",
           "key=%s err=%s page=%zu retry_s=%d", SW_KEY_SPEND, sw_log_q(why), l->pages,
           RETRY_MS / 1000);
    sw_free(l->runs);
    sw_free(l);
    h->budget_read = NULL;
    h->budget_loading = false;
    h->budget_read_ms = sw_hub_mono_ms() - REREAD_MS + RETRY_MS;
    if (done)
        done(h, SW_EUNAVAIL);
}

static void read_done(struct sw_spend_read *l)
{
    struct sw_hub *h = l->h;
    void (*done)(struct sw_hub *, int) = l->done;
    if (l->skipped > 0)
        SW_LOG(SW_LOG_WARN, "spend entries that do not parse count for no budget",
               "key=%s entries=%zu", SW_KEY_SPEND, l->skipped);
    if (l->bad > 0)
        SW_LOG(SW_LOG_WARN,
               "spend entries whose price is out of bounds charge their team's whole budget",
               "key=%s entries=%zu max_usd_per_hour=%g", SW_KEY_SPEND, l->bad,
               SW_BUDGET_MAX_RATE_H);
    sw_free(h->budget_ended);
    h->budget_ended = l->runs;
    h->nbudget_ended = l->n;
    h->cap_budget_ended = l->cap;
    h->budget_read = NULL;
    h->budget_loading = false;
    bool first = !h->budget_loaded;
    if (first)
        SW_LOG(SW_LOG_INFO, "ended runs read for the budgets", "runs=%zu pages=%zu", l->n,
               l->pages);
    h->budget_loaded = true;
    sw_free(l);
    if (first)
        sw_hub_want_decide(h); /* the rounds waited for it */
    if (done)
        done(h, 0);
}

static void on_page(struct sw_redis *rd, redisReply *reply, const char *errs, void *ctx)
{
    (void)rd;
    struct sw_spend_read *l = ctx;
    struct sw_hub *h = l->h;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) {
        read_failed(l, reply && reply->type == REDIS_REPLY_ERROR ? reply->str
                       : errs                                    ? errs
                              : "not a list of entries and scores");
        return;
    }
    size_t k = reply->elements / 2;
    l->pages++;
    for (size_t i = 0; i < k; i++) {
        redisReply *e = reply->element[2 * i], *sc = reply->element[2 * i + 1];
        if (sc->type != REDIS_REPLY_STRING || sc->len == 0 || sc->len >= sizeof(l->cursor)) {
            read_failed(l, "a score that is not a number");
            return;
        }
        /* The cursor: the last score seen, and how many entries at it. */
        if (strcmp(sc->str, l->cursor) == 0) {
            l->skip++;
        } else {
            memcpy(l->cursor, sc->str, sc->len + 1);
            l->skip = 1;
        }
        struct sw_job_rec r;
        struct sw_error err = {0};
        if (e->type != REDIS_REPLY_STRING || sw_budget_spend_parse(e->str, e->len, &r, &err) != 0) {
            l->skipped++; /* bills nothing: said, not fatal */
            continue;
        }
        if (keep(h, &l->runs, &l->n, &l->cap, &r, &l->bad) != 0) {
            read_failed(l, "out of memory");
            return;
        }
    }
    if (k < SW_SPEND_PAGE) {
        read_done(l);
        return;
    }
    if (send_page(l) != 0)
        read_failed(l, "cannot send the next page");
}

/* The next page: entries from the cursor's score on, past those at it
 * already seen (one added meanwhile at an earlier score is missed by this
 * read and kept by sw_spend_ended; one at the cursor's may be read twice,
 * and counts once by its UID). */
static int send_page(struct sw_spend_read *l)
{
    char skip[32], page[32];
    snprintf(skip, sizeof(skip), "%zu", l->cursor[0] ? l->skip : (size_t)0);
    snprintf(page, sizeof(page), "%d", SW_SPEND_PAGE);
    const char *argv[] = {"ZRANGEBYSCORE",
                          SW_KEY_SPEND,
                          l->cursor[0] ? l->cursor : l->from,
                          "+inf",
                          "WITHSCORES",
                          "LIMIT",
                          skip,
                          page};
    return sw_redis_command_argv(l->h->redis, on_page, l, 8, argv, NULL);
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
    struct sw_spend_read *l = sw_calloc(1, sizeof(*l));
    if (l == NULL)
        return SW_ENOMEM;
    l->h = h;
    l->done = done;
    snprintf(l->from, sizeof(l->from), "%lld", (long long)earliest_start(h, sw_hub_wall_ms()));
    h->budget_loading = true;
    h->budget_read = l;
    h->budget_read_ms = sw_hub_mono_ms();
    publish(h);
    int rc = send_page(l);
    if (rc != 0) {
        h->budget_loading = false;
        h->budget_read = NULL;
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
    if (h->cfg.nbudgets == 0 || sw_budget_start_of(r) <= 0)
        return;
    size_t bad = 0;
    struct sw_spend_read *l = h->budget_read;
    if (keep(h, &h->budget_ended, &h->nbudget_ended, &h->cap_budget_ended, r, &bad) != 0 ||
        (l != NULL && keep(h, &l->runs, &l->n, &l->cap, r, &l->bad) != 0))
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
               "job records whose price or expected cost is out of bounds charge their team's "
               "whole budget",
               "records=%zu max_usd_per_hour=%g max_cost_usd=%g", bad, SW_BUDGET_MAX_RATE_H,
               SW_BUDGET_MAX_COST);
    h->budget_bad = bad;
    memcpy(h->budget_status, st, h->cfg.nbudgets * sizeof(st[0]));
    h->nbudget_status = h->cfg.nbudgets;
    return 0;
}
