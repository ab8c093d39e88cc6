/*
 * record.c - the hub's state in Redis: one JSON record per origin Job.
 *
 *   spillway:jobs               set of the records' keys ("cluster/ns/name")
 *   spillway:job:KEY            the record (JSON)
 *   spillway:explain:KEY        the stored decision's explanation (JSON)
 *   spillway:hub:epoch          the fencing epoch (leader.c increments it)
 *   spillway:ended              records that ended, for reports (jobrec.h)
 *   spillway:runtimes           finished Jobs' runtimes, by origin UID (runtimes.h)
 *   spillway:runtimes:order     their UIDs by when they finished, for the bound
 *   spillway:runtimes:byteam    "TEAM\0FINISHEDMS\0UID" by bytes: a team's oldest
 *   spillway:runtimes:teams     teams scored by how many they hold
 *
 * Every write goes through one Lua script that compares the writer's epoch
 * with spillway:hub:epoch inside Redis and refuses the write when they
 * differ, so a paused or partitioned former leader can never overwrite what
 * its successor wrote (a compare-and-set, not read-then-write).
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"

/* With a finished Job's runtime (ARGV[5] its UID, ARGV[6] the observation,
 * ARGV[7] when it finished, ARGV[8] the bound, ARGV[9] its team, ARGV[10]
 * its per-team member "TEAM\0FINISHEDMS\0UID"), the record that says it was
 * counted and the observation go in together: a UID kept already is not
 * added again (a write retried after a lost reply). Beyond the bound, the
 * entry dropped is the oldest of the team holding the most (ties: the
 * greatest name by bytes, ZREVRANGE's order; runtimes.c drops the same),
 * so a team flooding the history drops its own. While some entries are in
 * no team's set (written by a hub before the per-team sets), the oldest
 * of all goes instead (and its team's entry with it, if it has one), until
 * every entry is a team's. At most 64 entries go in one write: a history
 * swollen by a Redis writer drains over several writes rather than
 * holding Redis in one script. */
static const char WRITE_LUA[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
    "  return redis.error_reply('FENCED epoch ' .. ARGV[1] .. ' is not the current one')\n"
    "end\n"
    "redis.call('SET', KEYS[2], ARGV[2])\n"
    "redis.call('SADD', KEYS[3], ARGV[3])\n"
    "if ARGV[4] ~= '' then redis.call('SET', KEYS[4], ARGV[4]) end\n"
    "if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[5], ARGV[5]) == 0 then\n"
    "  redis.call('HSET', KEYS[5], ARGV[5], ARGV[6])\n"
    "  redis.call('ZADD', KEYS[6], ARGV[7], ARGV[5])\n"
    "  redis.call('ZADD', KEYS[7], 0, ARGV[10])\n"
    "  redis.call('ZINCRBY', KEYS[8], 1, ARGV[9])\n"
    "  local cap = tonumber(ARGV[8])\n"
    "  local drops = 0\n"
    "  while drops < 64 and redis.call('ZCARD', KEYS[6]) > cap do\n"
    "    drops = drops + 1\n"
    "    local top = redis.call('ZREVRANGE', KEYS[8], 0, 0)[1]\n"
    "    local m = nil\n"
    "    if top and redis.call('ZCARD', KEYS[6]) <= redis.call('ZCARD', KEYS[7]) then\n"
    "      m = redis.call('ZRANGEBYLEX', KEYS[7], '[' .. top .. '\\0', '(' .. top .. '\\1',"
    " 'LIMIT', 0, 1)[1]\n"
    "    end\n"
    "    if m then\n"
    "      local id = string.sub(m, #top + 19)\n"
    "      redis.call('ZREM', KEYS[7], m)\n"
    "      redis.call('ZREM', KEYS[6], id)\n"
    "      redis.call('HDEL', KEYS[5], id)\n"
    "      if tonumber(redis.call('ZINCRBY', KEYS[8], -1, top)) <= 0 then\n"
    "        redis.call('ZREM', KEYS[8], top)\n"
    "      end\n"
    "    else\n"
    "      local old = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')\n"
    "      if not old[1] then break end\n"
    "      local ok, o = pcall(cjson.decode, redis.call('HGET', KEYS[5], old[1]) or '')\n"
    "      if ok and type(o) == 'table' and type(o.team) == 'string' then\n"
    "        local t = o.team\n"
    "        local tm = t .. '\\0' .. string.format('%016d', tonumber(old[2])) .. '\\0' .. old[1]\n"
    "        if redis.call('ZREM', KEYS[7], tm) == 1 and\n"
    "           tonumber(redis.call('ZINCRBY', KEYS[8], -1, t)) <= 0 then\n"
    "          redis.call('ZREM', KEYS[8], t)\n"
    "        end\n"
    "      end\n"
    "      redis.call('ZREM', KEYS[6], old[1])\n"
    "      redis.call('HDEL', KEYS[5], old[1])\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return 1\n";

/* Ends a record: into the archive (when ARGV[3] is a record, scored by
 * ARGV[4], the archive trimmed below ARGV[5]) and out of the live set, in
 * one fenced script, so that no reader sees it in both or in neither. */
static const char DELETE_LUA[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
    "  return redis.error_reply('FENCED epoch ' .. ARGV[1] .. ' is not the current one')\n"
    "end\n"
    "if ARGV[3] ~= '' then\n"
    "  redis.call('ZADD', KEYS[6], ARGV[4], ARGV[3])\n"
    "  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', '(' .. ARGV[5])\n"
    "end\n"
    "if ARGV[6] ~= '' then\n"
    "  redis.call('ZADD', KEYS[7], ARGV[4], ARGV[6])\n"
    "  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', '(' .. ARGV[7])\n"
    "end\n"
    "redis.call('DEL', KEYS[2], KEYS[4])\n"
    "redis.call('SREM', KEYS[3], ARGV[2])\n"
    "redis.call('HDEL', KEYS[5], ARGV[2])\n"
    "return 1\n";

struct write_ctx {
    struct sw_hub *h;
    struct sw_job *j;
    sw_rec_cb cb;
    void *ctx;
    bool observed; /* the write carries obs: a finished Job's runtime */
    struct sw_runtime_obs obs;
};

static void on_written(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct write_ctx *w = ctx;
    struct sw_hub *h = w->h;
    struct sw_job *j = w->j;
    int rc = 0;
    if (reply == NULL) {
        SW_LOG(SW_LOG_WARN, "record write failed", "job=%s err=%s", sw_log_q(j->rec.key),
               sw_log_q(errs ? errs : "no reply"));
        rc = SW_EUNAVAIL;
    } else if (reply->type == REDIS_REPLY_ERROR) {
        if (strstr(reply->str, "FENCED") != NULL) {
            h->m.fenced++;
            rc = SW_ECONFLICT;
        } else {
            SW_LOG(SW_LOG_WARN, "record write refused", "job=%s err=%s", sw_log_q(j->rec.key),
                   sw_log_q(reply->str));
            rc = SW_EIO;
        }
    } else {
        j->persisted = true;
        j->saved = j->rec;
        sw_free(j->explain);
        j->explain = NULL;
        /* In Redis now: learned from by this hub's beliefs as well. */
        if (w->observed && sw_runtimes_add(&h->runtimes, &w->obs) == 1) {
            sw_metrics_runtime(h, &w->obs);
            SW_LOG(SW_LOG_INFO, "runtime learned", "job=%s runtime=%.1f predicted=%.1f source=%s",
                   sw_log_q(j->rec.key), w->obs.runtime_s, w->obs.predicted_s,
                   sw_estimate_source_name(w->obs.source));
        }
    }
    /* While a re-take after a Redis failover is pending, the epoch there
     * may differ from this hub's (a lost increment): the re-take decides,
     * and exits if another hub holds the lease. */
    if (rc == SW_ECONFLICT && !h->retake_wanted)
        sw_leader_lost(h, "a fenced write was refused: another hub has a newer epoch");
    if (rc != 0 && j->persisted)
        j->rec = j->saved; /* never act on a state that is not in Redis */
    sw_rec_cb cb = w->cb;
    void *cctx = w->ctx;
    free(w);
    if (cb)
        cb(h, j, rc, cctx);
}

int sw_rec_write(struct sw_hub *h, struct sw_job *j, sw_rec_cb cb, void *ctx)
{
    j->rec.epoch = h->epoch;
    /* A Job's first success is counted with the record that says so. */
    struct sw_runtime_obs obs;
    bool observed = sw_runtime_observation(&j->rec, &obs);
    if (observed) {
        /* Learned with its learner (runtimes.h), not its bare team. */
        const struct sw_grant *g = sw_tenancy_find(&h->cfg.tenancy, j->rec.cluster, j->rec.ns);
        observed = sw_runtime_learner(g != NULL && g->nteams > 0, j->rec.team, j->rec.cluster,
                                      j->rec.ns, obs.team);
    }
    if (observed)
        j->rec.runtime_counted = true;
    cJSON *o = sw_job_rec_to_json(&j->rec);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    cJSON *oj = observed ? sw_runtime_obs_to_json(&obs) : NULL;
    char *otext = oj ? cJSON_PrintUnformatted(oj) : NULL;
    cJSON_Delete(oj);
    struct write_ctx *w = text && (!observed || otext) ? malloc(sizeof(*w)) : NULL;
    if (w == NULL) {
        cJSON_free(text);
        cJSON_free(otext);
        if (observed)
            j->rec.runtime_counted = false;
        return SW_ENOMEM;
    }
    *w = (struct write_ctx){h, j, cb, ctx, observed, obs};
    char epoch[32], key[300], ekey[300], score[32], cap[32];
    /* "TEAM\0FINISHEDMS\0UID": a team's entries together, oldest first. */
    char member[sizeof(obs.team) + 18 + sizeof(obs.id)];
    size_t mlen = 0;
    if (observed) {
        size_t tl = strlen(obs.team), il = strlen(obs.id);
        memcpy(member, obs.team, tl);
        snprintf(member + tl, sizeof(member) - tl, "%c%016lld%c", 'x', (long long)obs.finished_ms,
                 'x');
        member[tl] = member[tl + 17] = '\0';
        memcpy(member + tl + 18, obs.id, il);
        mlen = tl + 18 + il;
    }
    snprintf(epoch, sizeof(epoch), "%lld", (long long)h->epoch);
    snprintf(key, sizeof(key), SW_KEY_JOB "%s", j->rec.key);
    snprintf(ekey, sizeof(ekey), SW_KEY_EXPLAIN "%s", j->rec.key);
    snprintf(score, sizeof(score), "%lld", (long long)(observed ? obs.finished_ms : 0));
    snprintf(cap, sizeof(cap), "%d", SW_RUNTIMES_MAX);
    const char *argv[] = {"EVAL",
                          WRITE_LUA,
                          "8",
                          SW_KEY_EPOCH,
                          key,
                          SW_KEY_JOBS,
                          ekey,
                          SW_KEY_RUNTIMES,
                          SW_KEY_RUNTIMES_ORDER,
                          SW_KEY_RUNTIMES_BYTEAM,
                          SW_KEY_RUNTIMES_TEAMS,
                          epoch,
                          text,
                          j->rec.key,
                          j->explain ? j->explain : "",
                          observed ? obs.id : "",
                          otext ? otext : "",
                          score,
                          cap,
                          observed ? obs.team : "",
                          observed ? member : ""};
    size_t lens[21];
    for (size_t i = 0; i < 21; i++)
        lens[i] = strlen(argv[i]);
    lens[20] = mlen; /* binary: NULs inside */
    int rc = sw_redis_command_argv(h->redis, on_written, w, 21, argv, lens);
    cJSON_free(text);
    cJSON_free(otext);
    if (rc != 0) {
        free(w);
        if (observed)
            j->rec.runtime_counted = false;
        if (j->persisted)
            j->rec = j->saved; /* never act on a state that is not in Redis */
        return rc;
    }
    return 0;
}

struct end_ctx {
    struct sw_hub *h;
    struct sw_job *j;
    const char *why; /* static */
};

static void on_deleted(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    (void)errs;
    struct end_ctx *w = ctx;
    struct sw_hub *h = w->h;
    struct sw_job *j = w->j;
    const char *why = w->why;
    free(w);
    if (reply && reply->type == REDIS_REPLY_ERROR && strstr(reply->str, "FENCED") != NULL) {
        h->m.fenced++;
        if (!h->retake_wanted)
            sw_leader_lost(h, "a fenced delete was refused: another hub has a newer epoch");
    }
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        sw_hub_step_done(h, j, SW_EUNAVAIL);
        return;
    }
    SW_LOG(SW_LOG_INFO, "record ended", "job=%s why=%s", sw_log_q(j->rec.key), sw_log_q(why));
    sw_spend_ended(h, &j->rec); /* archived: its run still counts against its budget */
    sw_hub_job_drop(h, j);
}

int sw_rec_end(struct sw_hub *h, struct sw_job *j, const char *why)
{
    struct end_ctx *w = malloc(sizeof(*w));
    if (w == NULL)
        return SW_ENOMEM;
    *w = (struct end_ctx){h, j, why};
    /* A record with nothing run to bill is not archived. */
    char *text = NULL;
    if (sw_budget_start_of(&j->rec) > 0) {
        cJSON *o = sw_job_rec_to_json(&j->rec);
        text = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        if (text == NULL) {
            free(w);
            return SW_ENOMEM;
        }
    }
    int64_t now = sw_hub_wall_ms();
    int64_t keep_ms = (int64_t)h->cfg.archive_days * 86400000LL;
    char epoch[32], key[300], ekey[300], score[32], floor[32], sfloor[32];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)h->epoch);
    snprintf(key, sizeof(key), SW_KEY_JOB "%s", j->rec.key);
    snprintf(ekey, sizeof(ekey), SW_KEY_EXPLAIN "%s", j->rec.key);
    snprintf(score, sizeof(score), "%lld",
             (long long)(j->rec.finished_ms > 0 ? j->rec.finished_ms : now));
    snprintf(floor, sizeof(floor), "%lld", (long long)(now - keep_ms));
    /* Its run on cloud capacity, compact, for the budgets (SW_KEY_SPEND),
     * scored as the archive is: when it ended. */
    int64_t end_ms = j->rec.finished_ms > 0 ? j->rec.finished_ms : now;
    char *spend = sw_budget_spend_entry(&j->rec, end_ms);
    if (spend == NULL && sw_budget_cloud(j->rec.capacity) && sw_budget_start_of(&j->rec) > 0) {
        cJSON_free(text);
        free(w);
        return SW_ENOMEM;
    }
    snprintf(sfloor, sizeof(sfloor), "%lld", (long long)(now - SW_SPEND_KEEP_MS));
    const char *argv[] = {"EVAL",
                          DELETE_LUA,
                          "7",
                          SW_KEY_EPOCH,
                          key,
                          SW_KEY_JOBS,
                          ekey,
                          SW_KEY_OUTPUTS_SYNCED,
                          SW_KEY_ENDED,
                          SW_KEY_SPEND,
                          epoch,
                          j->rec.key,
                          text ? text : "",
                          score,
                          floor,
                          spend ? spend : "",
                          sfloor};
    int rc = sw_redis_command_argv(h->redis, on_deleted, w, 17, argv, NULL);
    cJSON_free(text);
    cJSON_free(spend);
    if (rc != 0)
        free(w);
    return rc;
}

static void on_step_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    enum sw_failpoint fp = (enum sw_failpoint)(uintptr_t)ctx;
    sw_hub_step_done(h, j, rc);
    if (rc == 0)
        SW_FAILPOINT_CRASH(fp);
}

void sw_rec_step(struct sw_hub *h, struct sw_job *j, enum sw_failpoint fp)
{
    if (sw_rec_write(h, j, on_step_written, (void *)(uintptr_t)fp) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

/* ---- loading ------------------------------------------------------------- */

struct load_ctx {
    struct sw_hub *h;
    void (*done)(struct sw_hub *h, int rc);
};

static void forget_one(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)h;
    (void)ctx;
    if (!j->busy)
        j->persisted = false;
}

static void on_values(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    (void)errs;
    struct load_ctx *l = ctx;
    struct sw_hub *h = l->h;
    int rc = 0;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        rc = SW_EUNAVAIL;
    } else {
        /* Loading again (after a Redis failover): what Redis holds now is
         * the truth; a Job it lost is found again by the scan (adopt.c). */
        sw_hub_jobs_foreach(h, forget_one, NULL);
        for (size_t i = 0; i < reply->elements; i++) {
            redisReply *e = reply->element[i];
            if (e->type != REDIS_REPLY_STRING)
                continue;
            cJSON *o = NULL;
            struct sw_error err = {0};
            struct sw_job_rec rec;
            if (sw_json_parse(e->str, e->len, "job record", &o, &err) != 0 ||
                sw_job_rec_from_json(o, &rec, &err) != 0) {
                SW_LOG(SW_LOG_ERROR, "skipping a bad job record", "err=%s", sw_log_q(err.msg));
                cJSON_Delete(o);
                continue;
            }
            cJSON_Delete(o);
            struct sw_job *j = sw_hub_job_get(h, rec.key);
            if (j == NULL) {
                rc = SW_ENOMEM;
                break;
            }
            if (j->busy)
                continue; /* its write in flight says what happened */
            j->rec = rec;
            j->saved = rec;
            j->persisted = true;
        }
    }
    void (*done)(struct sw_hub *, int) = l->done;
    free(l);
    done(h, rc);
}

static void on_members(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)errs;
    struct load_ctx *l = ctx;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        void (*done)(struct sw_hub *, int) = l->done;
        struct sw_hub *h = l->h;
        free(l);
        done(h, SW_EUNAVAIL);
        return;
    }
    if (reply->elements == 0) {
        void (*done)(struct sw_hub *, int) = l->done;
        struct sw_hub *h = l->h;
        free(l);
        sw_hub_jobs_foreach(h, forget_one, NULL);
        done(h, 0);
        return;
    }
    size_t n = reply->elements;
    const char **argv = malloc((n + 1) * sizeof(*argv));
    char **keys = malloc(n * sizeof(*keys));
    if (argv == NULL || keys == NULL) {
        free(argv);
        free(keys);
        void (*done)(struct sw_hub *, int) = l->done;
        struct sw_hub *h = l->h;
        free(l);
        done(h, SW_ENOMEM);
        return;
    }
    argv[0] = "MGET";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(SW_KEY_JOB) + reply->element[i]->len + 1;
        keys[i] = malloc(len);
        snprintf(keys[i], len, SW_KEY_JOB "%s", reply->element[i]->str);
        argv[i + 1] = keys[i];
    }
    int rc = sw_redis_command_argv(r, on_values, l, (int)n + 1, argv, NULL);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(argv);
    if (rc != 0) {
        void (*done)(struct sw_hub *, int) = l->done;
        struct sw_hub *h = l->h;
        free(l);
        done(h, rc);
    }
}

int sw_rec_load_all(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc))
{
    struct load_ctx *l = malloc(sizeof(*l));
    if (l == NULL)
        return SW_ENOMEM;
    l->h = h;
    l->done = done;
    int rc = sw_redis_command(h->redis, on_members, l, "SMEMBERS %s", SW_KEY_JOBS);
    if (rc != 0)
        free(l);
    return rc;
}

/* ---- finished Jobs' runtimes ---------------------------------------------- */

struct runtimes_ctx {
    struct sw_hub *h;
    void (*done)(struct sw_hub *h, int rc);
    char (*ids)[sizeof(((struct sw_runtime_obs *)0)->id)]; /* asked for, in order */
    size_t nids;
};

static void runtimes_failed(struct runtimes_ctx *l, redisReply *reply, const char *errs, int rc)
{
    struct sw_hub *h = l->h;
    void (*done)(struct sw_hub *, int) = l->done;
    SW_LOG(SW_LOG_WARN, "cannot read the finished Jobs' runtimes", "err=%s",
           sw_log_q(reply && reply->type == REDIS_REPLY_ERROR ? reply->str
                    : errs                                    ? errs
                                                              : "no reply"));
    sw_free(l->ids);
    free(l);
    done(h, rc);
}

/* The values of the ids asked for (HMGET: nil for one dropped since). */
static void on_runtimes(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct runtimes_ctx *l = ctx;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements != l->nids) {
        runtimes_failed(l, reply, errs, SW_EUNAVAIL);
        return;
    }
    struct sw_hub *h = l->h;
    void (*done)(struct sw_hub *, int) = l->done;
    size_t n = l->nids, got = 0, bad = 0;
    struct sw_runtime_obs *t = n ? sw_calloc(n, sizeof(*t)) : NULL;
    if (n > 0 && t == NULL) {
        runtimes_failed(l, NULL, "out of memory", SW_ENOMEM);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *v = reply->element[i];
        const char *id = l->ids[i];
        if (v->type != REDIS_REPLY_STRING)
            continue; /* dropped between the two reads */
        struct sw_error err = {0};
        cJSON *o = NULL;
        if (sw_json_parse(v->str, v->len, id, &o, &err) == 0)
            sw_runtime_obs_from_json(o, id, &t[got], &err);
        cJSON_Delete(o);
        if (err.msg[0] != '\0') {
            /* One bad entry costs that Job's runtime, nothing else. */
            if (bad++ < 10)
                SW_LOG(SW_LOG_WARN, "skipping an unreadable runtime observation", "err=%s",
                       sw_log_q(err.msg));
            continue;
        }
        got++;
    }
    sw_free(l->ids);
    free(l);
    int rc = sw_runtimes_clear(&h->runtimes);
    int added = rc == 0 ? sw_runtimes_load(&h->runtimes, t, got) : rc;
    sw_free(t);
    if (added < 0) {
        done(h, added);
        return;
    }
    SW_LOG(SW_LOG_INFO, "finished Jobs' runtimes loaded", "kept=%d skipped=%zu", added, bad);
    done(h, 0);
}

/* The latest SW_RUNTIMES_MAX ids (never more, whatever Redis holds), then
 * their values. */
static void on_runtime_ids(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    struct runtimes_ctx *l = ctx;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        runtimes_failed(l, reply, errs, SW_EUNAVAIL);
        return;
    }
    size_t n = reply->elements < SW_RUNTIMES_MAX ? reply->elements : SW_RUNTIMES_MAX, bad = 0;
    l->ids = n ? sw_calloc(n, sizeof(*l->ids)) : NULL;
    const char **argv = sw_calloc(n + 2, sizeof(*argv));
    size_t *lens = sw_calloc(n + 2, sizeof(*lens));
    if ((n > 0 && l->ids == NULL) || argv == NULL || lens == NULL) {
        sw_free(argv);
        sw_free(lens);
        runtimes_failed(l, NULL, "out of memory", SW_ENOMEM);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = reply->element[i];
        if (k->type != REDIS_REPLY_STRING || k->len >= sizeof(l->ids[0]) || k->len == 0 ||
            memchr(k->str, '\0', k->len) != NULL) {
            if (bad++ < 10)
                SW_LOG(SW_LOG_WARN, "skipping an unreadable runtime observation", "err=%s",
                       sw_log_q("its UID in spillway:runtimes:order is empty, not a string or "
                                "longer than 63 bytes"));
            continue;
        }
        memcpy(l->ids[l->nids], k->str, k->len);
        l->ids[l->nids][k->len] = '\0';
        argv[2 + l->nids] = l->ids[l->nids];
        lens[2 + l->nids] = k->len;
        l->nids++;
    }
    int rc = 0;
    if (l->nids == 0) {
        /* Nothing to read: an empty history. */
        struct sw_hub *h = l->h;
        void (*done)(struct sw_hub *, int) = l->done;
        sw_free(argv);
        sw_free(lens);
        sw_free(l->ids);
        free(l);
        rc = sw_runtimes_clear(&h->runtimes);
        SW_LOG(SW_LOG_INFO, "finished Jobs' runtimes loaded", "kept=0 skipped=%zu", bad);
        done(h, rc);
        return;
    }
    argv[0] = "HMGET";
    argv[1] = SW_KEY_RUNTIMES;
    lens[0] = strlen(argv[0]);
    lens[1] = strlen(argv[1]);
    rc = sw_redis_command_argv(r, on_runtimes, l, (int)(l->nids + 2), argv, lens);
    sw_free(argv);
    sw_free(lens);
    if (rc != 0)
        runtimes_failed(l, NULL, "cannot send HMGET", rc);
}

int sw_rec_runtimes_load(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc))
{
    struct runtimes_ctx *l = malloc(sizeof(*l));
    if (l == NULL)
        return SW_ENOMEM;
    *l = (struct runtimes_ctx){h, done, NULL, 0};
    int rc = sw_redis_command(h->redis, on_runtime_ids, l, "ZREVRANGE %s 0 %d",
                              SW_KEY_RUNTIMES_ORDER, SW_RUNTIMES_MAX - 1);
    if (rc != 0)
        free(l);
    return rc;
}
