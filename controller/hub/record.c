/*
 * record.c - the hub's state in Redis: one JSON record per origin Job.
 *
 *   spillway:jobs               set of the records' keys ("cluster/ns/name")
 *   spillway:job:KEY            the record (JSON)
 *   spillway:explain:KEY        the stored decision's explanation (JSON)
 *   spillway:hub:epoch          the fencing epoch (leader.c increments it)
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

static const char WRITE_LUA[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
    "  return redis.error_reply('FENCED epoch ' .. ARGV[1] .. ' is not the current one')\n"
    "end\n"
    "redis.call('SET', KEYS[2], ARGV[2])\n"
    "redis.call('SADD', KEYS[3], ARGV[3])\n"
    "if ARGV[4] ~= '' then redis.call('SET', KEYS[4], ARGV[4]) end\n"
    "return 1\n";

static const char *form_name(enum sw_job_form f)
{
    return f == SW_FORM_DELEGATED ? "delegated" : "annotation";
}

cJSON *sw_job_rec_to_json(const struct sw_job_rec *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "key", r->key);
    cJSON_AddStringToObject(o, "cluster", r->cluster);
    cJSON_AddStringToObject(o, "namespace", r->ns);
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "uid", r->uid);
    cJSON_AddStringToObject(o, "form", form_name(r->form));
    cJSON_AddStringToObject(o, "state", sw_job_state_name(r->state));
    cJSON_AddNumberToObject(o, "attempt", r->attempt);
    cJSON_AddNumberToObject(o, "preemptions", r->preemptions);
    cJSON_AddStringToObject(o, "targetCluster", r->target_cluster);
    cJSON_AddStringToObject(o, "targetPool", r->target_pool);
    cJSON_AddStringToObject(o, "targetRegion", r->target_region);
    cJSON_AddStringToObject(o, "capacity", r->capacity);
    cJSON_AddStringToObject(o, "mirror", r->mirror);
    cJSON_AddStringToObject(o, "team", r->team);
    cJSON_AddNumberToObject(o, "gpus", r->gpus);
    cJSON_AddNumberToObject(o, "pricePerGpuHour", r->price_gpu_h);
    cJSON_AddNumberToObject(o, "expectedCost", r->expected_cost);
    cJSON_AddNumberToObject(o, "homeWaitSeconds", r->home_wait_s);
    cJSON_AddNumberToObject(o, "burstNowCost", r->burst_now_cost);
    cJSON_AddStringToObject(o, "summary", r->summary);
    cJSON_AddStringToObject(o, "reason", r->reason);
    cJSON_AddNumberToObject(o, "inputBytes", (double)r->input_bytes);
    cJSON_AddNumberToObject(o, "created", r->created);
    cJSON_AddNumberToObject(o, "observedMs", (double)r->observed_ms);
    cJSON_AddNumberToObject(o, "decidedMs", (double)r->decided_ms);
    cJSON_AddNumberToObject(o, "dataReadyMs", (double)r->data_ready_ms);
    cJSON_AddNumberToObject(o, "dispatchedMs", (double)r->dispatched_ms);
    cJSON_AddNumberToObject(o, "startedMs", (double)r->started_ms);
    cJSON_AddNumberToObject(o, "finishedMs", (double)r->finished_ms);
    cJSON_AddNumberToObject(o, "epoch", (double)r->epoch);
    return o;
}

static int get_str(const cJSON *o, const char *k, char *dst, size_t cap, const char *what,
                   struct sw_error *err)
{
    const char *s = NULL;
    int rc = sw_json_string(o, k, false, what, &s, err);
    if (rc != 0)
        return rc;
    if (s == NULL)
        s = "";
    if (strlen(s) >= cap)
        return sw_error_set(err, SW_ETOOBIG, "%s: field \"%s\": longer than %zu bytes", what, k,
                            cap - 1);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int get_num(const cJSON *o, const char *k, double *out, const char *what,
                   struct sw_error *err)
{
    *out = 0;
    return sw_json_number(o, k, false, what, out, err);
}

int sw_job_rec_from_json(const cJSON *o, struct sw_job_rec *r, struct sw_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *what = "job record";
    char tmp[32];
    double d;
    int rc;
#define S(k, f)                                                                                    \
    if ((rc = get_str(o, k, r->f, sizeof(r->f), what, err)) != 0)                                  \
        return rc;
#define N(k, f, T)                                                                                 \
    if ((rc = get_num(o, k, &d, what, err)) != 0)                                                  \
        return rc;                                                                                 \
    r->f = (T)d;
    S("key", key);
    S("cluster", cluster);
    S("namespace", ns);
    S("name", name);
    S("uid", uid);
    if ((rc = get_str(o, "form", tmp, sizeof(tmp), what, err)) != 0)
        return rc;
    r->form = strcmp(tmp, "delegated") == 0 ? SW_FORM_DELEGATED : SW_FORM_ANNOTATION;
    if ((rc = get_str(o, "state", tmp, sizeof(tmp), what, err)) != 0)
        return rc;
    if (sw_job_state_parse(tmp, &r->state) != 0)
        return sw_error_set(err, SW_EINVAL, "%s %s: field \"state\": unknown state \"%s\"", what,
                            r->key, tmp);
    N("attempt", attempt, int);
    N("preemptions", preemptions, int);
    S("targetCluster", target_cluster);
    S("targetPool", target_pool);
    S("targetRegion", target_region);
    S("capacity", capacity);
    S("mirror", mirror);
    S("team", team);
    N("gpus", gpus, int);
    N("pricePerGpuHour", price_gpu_h, double);
    N("expectedCost", expected_cost, double);
    N("homeWaitSeconds", home_wait_s, double);
    N("burstNowCost", burst_now_cost, double);
    S("summary", summary);
    S("reason", reason);
    N("inputBytes", input_bytes, int64_t);
    N("created", created, double);
    N("observedMs", observed_ms, int64_t);
    N("decidedMs", decided_ms, int64_t);
    N("dataReadyMs", data_ready_ms, int64_t);
    N("dispatchedMs", dispatched_ms, int64_t);
    N("startedMs", started_ms, int64_t);
    N("finishedMs", finished_ms, int64_t);
    N("epoch", epoch, int64_t);
#undef S
#undef N
    if (r->key[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "%s: field \"key\": missing", what);
    return 0;
}

struct write_ctx {
    struct sw_hub *h;
    struct sw_job *j;
    sw_rec_cb cb;
    void *ctx;
};

static void on_written(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct write_ctx *w = ctx;
    struct sw_hub *h = w->h;
    struct sw_job *j = w->j;
    int rc = 0;
    if (reply == NULL) {
        SW_LOG(SW_LOG_WARN, "record write failed", "job=%s err=\"%s\"", j->rec.key,
               errs ? errs : "no reply");
        rc = SW_EUNAVAIL;
    } else if (reply->type == REDIS_REPLY_ERROR) {
        if (strstr(reply->str, "FENCED") != NULL) {
            h->m.fenced++;
            rc = SW_ECONFLICT;
        } else {
            SW_LOG(SW_LOG_WARN, "record write refused", "job=%s err=\"%s\"", j->rec.key,
                   reply->str);
            rc = SW_EIO;
        }
    } else {
        j->persisted = true;
    }
    sw_rec_cb cb = w->cb;
    void *cctx = w->ctx;
    free(w);
    if (cb)
        cb(h, j, rc, cctx);
    if (rc == SW_ECONFLICT)
        sw_leader_lost(h, "a fenced write was refused: another hub has a newer epoch");
}

int sw_rec_write(struct sw_hub *h, struct sw_job *j, sw_rec_cb cb, void *ctx)
{
    j->rec.epoch = h->epoch;
    cJSON *o = sw_job_rec_to_json(&j->rec);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (text == NULL)
        return SW_ENOMEM;
    struct write_ctx *w = malloc(sizeof(*w));
    if (w == NULL) {
        cJSON_free(text);
        return SW_ENOMEM;
    }
    *w = (struct write_ctx){h, j, cb, ctx};
    char epoch[32], key[300], ekey[300];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)h->epoch);
    snprintf(key, sizeof(key), SW_KEY_JOB "%s", j->rec.key);
    snprintf(ekey, sizeof(ekey), SW_KEY_EXPLAIN "%s", j->rec.key);
    const char *argv[] = {"EVAL", WRITE_LUA, "4",  SW_KEY_EPOCH, key,       SW_KEY_JOBS,
                          ekey,   epoch,     text, j->rec.key,   j->explain ? j->explain : ""};
    int rc = sw_redis_command_argv(h->redis, on_written, w, 11, argv, NULL);
    cJSON_free(text);
    if (rc != 0) {
        free(w);
        return rc;
    }
    sw_free(j->explain);
    j->explain = NULL;
    return 0;
}

/* ---- loading ------------------------------------------------------------- */

struct load_ctx {
    struct sw_hub *h;
    void (*done)(struct sw_hub *h, int rc);
};

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
        for (size_t i = 0; i < reply->elements; i++) {
            redisReply *e = reply->element[i];
            if (e->type != REDIS_REPLY_STRING)
                continue;
            cJSON *o = NULL;
            struct sw_error err = {0};
            struct sw_job_rec rec;
            if (sw_json_parse(e->str, e->len, "job record", &o, &err) != 0 ||
                sw_job_rec_from_json(o, &rec, &err) != 0) {
                SW_LOG(SW_LOG_ERROR, "skipping a bad job record", "err=\"%s\"", err.msg);
                cJSON_Delete(o);
                continue;
            }
            cJSON_Delete(o);
            struct sw_job *j = sw_hub_job_get(h, rec.key);
            if (j == NULL) {
                rc = SW_ENOMEM;
                break;
            }
            j->rec = rec;
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
