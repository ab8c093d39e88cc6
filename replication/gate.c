/*
 * gate.c - the gating API: a small pool of worker threads, shared by every
 * Job, does the listing, copying and verifying, each piece of work on a
 * private loop; the hub's loop gets the answer through a uv_async and hands
 * it to the caller.
 *
 * The pool is the gate's own, not libuv's (uv_queue_work): libuv's 4
 * threads also serve file and DNS requests and the SHA-256 jobs of every
 * copy (replication/copy.c), and a gate's piece of work blocks for as long
 * as its listings and copies take while waiting for those very hashes, so
 * on libuv's pool a few gated Jobs would stop every copy (the reason rule
 * runs left it, controller/hub/rules.c). Its size is fixed
 * (sw_gate_set_workers, replication.workers in the hub's config): that many
 * threads, each with at most one Redis connection for the journal, kept
 * from one piece of work to the next, however many Jobs are gated. Work
 * beyond that waits in a queue (sw_gate_pool_stats), taken oldest first
 * among the tenants with the fewest pieces running (sw_gate_fair_pick):
 * one namespace's hundred gated Jobs do not make another's wait behind
 * them all; an outputs
 * stream is one piece of work per round, queued again when its interval
 * has passed, so a Job that runs for days holds no thread between rounds.
 */
#include "replication/gate.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "replication/replicator.h"
#include "store/redis.h"

#define MAX_STORES 16
#define MAX_INPUTS 64

enum mode { MODE_ENSURE, MODE_ESTIMATE, MODE_OUTPUTS };

/* A store config with its own copies of the strings (secrets wiped on free). */
struct owned_store {
    char name[64], endpoint[512], region[64], access[256], secret[256], token[2048], ca[512];
    int virtual_host, insecure;
};

struct owned_input {
    char store[64], bucket[64], prefix[1024];
    char target_bucket[64]; /* "" = bucket */
};

struct work {
    enum mode mode;
    uv_loop_t *hub;
    uv_async_t async;
    uv_timer_t timer;      /* MODE_OUTPUTS: the wait between rounds */
    int open_handles;      /* freed once both handles are closed */
    int idle;              /* hub loop only: the timer runs, no round queued or running */
    struct work *next;     /* its tenant's queue, under the pool's lock */
    struct tenant *tenant; /* while queued or running, under the pool's lock */
    int queued;            /* in the pool's queue, under its lock */
    int recovered;         /* MODE_OUTPUTS, worker: earlier attempts' journals recovered */
    char job[256];
    char rule_base[300];
    char region[64];
    char redis_url[1024];
    double bytes_per_s, assumed;
    struct owned_store stores[MAX_STORES];
    size_t nstores;
    struct owned_input inputs[MAX_INPUTS];
    size_t ninputs;
    struct owned_input out_to; /* MODE_OUTPUTS: where outputs go */
    int attempt;               /* MODE_OUTPUTS: the attempt whose outputs these are */
    size_t job_base_len;       /* rule_base without "-out-aN": the Job's own */
    double interval_s;
    /* result, written by the worker, read on the hub loop under mu */
    uv_mutex_t mu;
    int finishing; /* hub asked for the last round */
    int stopping;  /* hub gave the attempt up: no round starts any more */
    int have_result;
    int final; /* the worker is done; the result is the last one */
    struct sw_gate_result res;
    struct sw_gate_location locs[MAX_INPUTS];
    sw_gate_cb cb, done_cb;
    void *ctx, *done_ctx;
};

static void copy_store(struct owned_store *o, const struct sw_s3_config *c)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", c->name ? c->name : "");
    snprintf(o->endpoint, sizeof(o->endpoint), "%s", c->endpoint ? c->endpoint : "");
    snprintf(o->region, sizeof(o->region), "%s", c->region ? c->region : "");
    snprintf(o->access, sizeof(o->access), "%s", c->access_key ? c->access_key : "");
    snprintf(o->secret, sizeof(o->secret), "%s", c->secret_key ? c->secret_key : "");
    snprintf(o->token, sizeof(o->token), "%s", c->session_token ? c->session_token : "");
    snprintf(o->ca, sizeof(o->ca), "%s", c->ca_file ? c->ca_file : "");
    o->virtual_host = c->virtual_host;
    o->insecure = c->insecure_tls;
}

static void tenant_release(struct tenant *t);

static void free_work(struct work *w)
{
    /* Wipe the credentials before the memory goes back. */
    volatile char *p = (volatile char *)w->stores;
    for (size_t i = 0; i < sizeof(w->stores); i++)
        p[i] = 0;
    if (w->tenant != NULL)
        tenant_release(w->tenant);
    uv_mutex_destroy(&w->mu);
    sw_free(w);
}

static const struct owned_store *find_store(const struct work *w, const char *name)
{
    for (size_t i = 0; i < w->nstores; i++)
        if (strcmp(w->stores[i].name, name) == 0)
            return &w->stores[i];
    return NULL;
}

static const struct owned_store *store_in_region(const struct work *w, const char *region)
{
    for (size_t i = 0; i < w->nstores; i++)
        if (strcmp(w->stores[i].region, region) == 0)
            return &w->stores[i];
    return NULL;
}

/* ---- worker side ------------------------------------------------------------ */

struct clients {
    uv_loop_t loop;
    struct sw_http *http;
    struct sw_s3 *s3[MAX_STORES];
    const struct owned_store *of[MAX_STORES];
    size_t n;
    redisContext *journal;
};

static struct sw_s3 *client(struct clients *c, const struct owned_store *s, struct sw_error *err)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->of[i] == s)
            return c->s3[i];
    struct sw_s3_config cfg = {.name = s->name,
                               .endpoint = s->endpoint,
                               .region = s->region,
                               .access_key = s->access,
                               .secret_key = s->secret,
                               .session_token = s->token[0] ? s->token : NULL,
                               .ca_file = s->ca[0] ? s->ca : NULL,
                               .virtual_host = s->virtual_host,
                               .insecure_tls = s->insecure};
    struct sw_s3 *s3;
    if (c->n == MAX_STORES || sw_s3_new(&c->loop, c->http, &cfg, &s3, err) != 0)
        return NULL;
    c->s3[c->n] = s3;
    c->of[c->n++] = s;
    return s3;
}

static void clients_close(struct clients *c)
{
    for (size_t i = 0; i < c->n; i++)
        sw_s3_free(c->s3[i]);
    if (c->http)
        sw_http_free(c->http);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    uv_loop_close(&c->loop);
    if (c->journal)
        sw_redis_sync_free(c->journal);
}

static void post(struct work *w, const struct sw_gate_result *res,
                 const struct sw_gate_location *locs, int final)
{
    uv_mutex_lock(&w->mu);
    w->res = *res;
    if (locs != NULL && res->nlocations > 0)
        memcpy(w->locs, locs, res->nlocations * sizeof(*locs));
    w->res.locations = w->locs;
    w->have_result = 1;
    if (final)
        w->final = 1;
    uv_mutex_unlock(&w->mu);
    uv_async_send(&w->async);
}

/* The earliest attempt whose outputs journal a new attempt looks into;
 * the hub config allows at most 100 attempts. */
#define MAX_EARLIER_ATTEMPTS 100

/* Outputs: before attempt N's first round, the uploads that the rounds of
 * attempts before it journaled and left open (a hub that crashed in a
 * round of an attempt given up meanwhile: that attempt's rounds never run
 * again to recover them) are aborted, by upload id from their journals.
 * They went to the same place (the origin's store, bucket and prefix), and
 * the hub runs no round of an earlier attempt once one of N may start
 * (data.c). Nothing open there is aborted for being open: the prefix is
 * not spillway's alone. Failures are logged; the next attempt tries again. */
static void recover_earlier_attempts(struct work *w, struct clients *c)
{
    if (c->journal == NULL || w->attempt <= 1)
        return;
    const struct owned_store *ts = find_store(w, w->out_to.store);
    struct sw_error e;
    sw_error_clear(&e);
    struct sw_s3 *dst = ts ? client(c, ts, &e) : NULL;
    if (dst == NULL)
        return; /* the round itself reports the store */
    int first = w->attempt - MAX_EARLIER_ATTEMPTS;
    for (int a = first > 1 ? first : 1; a < w->attempt; a++) {
        char rule_name[340];
        snprintf(rule_name, sizeof(rule_name), "%.*s-out-a%d-0", (int)w->job_base_len, w->rule_base,
                 a);
        struct sw_repl_rule r = {.name = rule_name, .ntargets = 1};
        r.targets[0] = (struct sw_repl_target){ts->name, dst, w->out_to.bucket, w->out_to.prefix};
        int64_t n = 0;
        if (sw_repl_recover(&r, c->journal, &n, &e) != 0)
            SW_LOG(SW_LOG_WARN, "cannot recover an earlier attempt's uploads",
                   "job=%s attempt=%d error=%s", sw_log_q(w->job), a, sw_log_q(e.msg));
        else if (n > 0)
            SW_LOG(SW_LOG_INFO, "aborted an earlier attempt's journaled uploads",
                   "job=%s attempt=%d uploads=%" PRId64, sw_log_q(w->job), a, n);
    }
}

/* One pass over every (input -> target) pair: estimate, then copy unless
 * only an estimate was asked for. */
static void one_pass(struct work *w, struct clients *c, struct sw_gate_result *res,
                     struct sw_gate_location *locs)
{
    memset(res, 0, sizeof(*res));
    res->locations = locs;
    const struct owned_store *tgt_store = NULL;
    if (w->mode != MODE_OUTPUTS) {
        tgt_store = store_in_region(w, w->region);
        if (tgt_store == NULL) {
            res->rc = sw_error_set(&res->err, SW_EINFEASIBLE,
                                   "job %s: no object store in region %s", w->job, w->region);
            return;
        }
    }
    /* Messages name what is copied: a Job's input, or its outputs. */
    const char *what = w->mode == MODE_OUTPUTS ? "outputs" : "input";
    for (size_t i = 0; i < w->ninputs; i++) {
        const struct owned_input *in = &w->inputs[i];
        const struct owned_input *to = w->mode == MODE_OUTPUTS ? &w->out_to : NULL;
        const struct owned_store *ss = find_store(w, in->store);
        const struct owned_store *ts = to ? find_store(w, to->store) : tgt_store;
        struct sw_error e;
        sw_error_clear(&e);
        struct sw_s3 *src = ss ? client(c, ss, &e) : NULL;
        struct sw_s3 *dst = ts ? client(c, ts, &e) : NULL;
        if (src == NULL || dst == NULL) {
            res->rc = sw_error_set(&res->err, e.code ? e.code : SW_EINVAL,
                                   "job %s: %s %s:%s/%s: %s", w->job, what, in->store, in->bucket,
                                   in->prefix, e.msg[0] ? e.msg : "unknown store");
            return;
        }
        char rule_name[340];
        snprintf(rule_name, sizeof(rule_name), "%s-%zu", w->rule_base, i);
        struct sw_repl_rule r = {.name = rule_name,
                                 .src_name = ss->name,
                                 .src = src,
                                 .bucket = in->bucket,
                                 .prefix = in->prefix,
                                 .ntargets = 1,
                                 .concurrency = 16,
                                 .part_concurrency = 4,
                                 .bytes_per_s = w->bytes_per_s};
        const char *tb = to ? to->bucket : in->target_bucket[0] ? in->target_bucket : in->bucket;
        const char *tp = to ? to->prefix : in->prefix;
        r.targets[0] = (struct sw_repl_target){ts->name, dst, tb, tp};
        int64_t objs = 0, bytes = 0;
        double secs = 0;
        int rc = sw_repl_estimate(&r, c->journal, w->assumed, &objs, &bytes, &secs, &e);
        if (rc == 0) {
            res->objects_to_copy += objs;
            res->bytes_to_copy += bytes;
            res->seconds += secs;
        }
        struct sw_repl_stats st;
        memset(&st, 0, sizeof(st));
        if (rc == 0 && w->mode != MODE_ESTIMATE)
            rc = sw_repl_run_once(&r, c->journal, NULL, NULL, &st, &e);
        if (rc != 0) {
            res->rc = rc;
            res->err = e;
            sw_error_wrap(&res->err, "job %s: %s %s:%s/%s to %s", w->job, what, in->store,
                          in->bucket, in->prefix, ts->name);
            return;
        }
        struct sw_gate_location *l = &locs[res->nlocations++];
        memset(l, 0, sizeof(*l));
        snprintf(l->store, sizeof(l->store), "%s", ts->name);
        snprintf(l->endpoint, sizeof(l->endpoint), "%s", ts->endpoint);
        snprintf(l->url, sizeof(l->url), "s3://%s/%s", tb, tp);
        l->objects = w->mode == MODE_ESTIMATE ? objs : st.listed;
        l->bytes = w->mode == MODE_ESTIMATE ? bytes : st.bytes_listed;
    }
}

/* ---- the pool ------------------------------------------------------------------ */

#define DEFAULT_WORKERS 4
#define MAX_WORKERS     64

/* A tenant of the pool: the Jobs of one namespace of one cluster, with
 * its own queue (oldest first). Known while a piece of work of it exists
 * (made, queued, running or waiting for its next round) or a worker runs
 * one: `refs` counts them, so queuing never allocates. */
struct tenant {
    char key[256];
    struct work *head, *tail;
    size_t idx;  /* in pool.tenants and pool.loads */
    size_t refs; /* pieces of work and workers holding it */
};

static struct {
    uv_once_t once;
    uv_mutex_t mu;
    uv_cond_t cv;
    /* The tenants in the order they came, their loads beside them (the
     * fair pick's input), and where the next pick starts looking. */
    struct tenant **tenants;
    struct sw_gate_tenant_load *loads;
    size_t ntenants, cap, cursor;
    size_t queued, running;
    int want;    /* threads to start (sw_gate_set_workers) */
    int started; /* threads running */
} pool = {.once = UV_ONCE_INIT, .want = DEFAULT_WORKERS};

/* What a worker keeps from one piece of work to the next: its Redis
 * connection for the journals (one per worker, whatever the number of
 * Jobs), made when first needed and made again after a failure. */
struct worker_state {
    redisContext *journal;
    char url[1024];
};

static void pool_init(void)
{
    uv_mutex_init(&pool.mu);
    uv_cond_init(&pool.cv);
}

int sw_gate_set_workers(int n)
{
    if (n < 1 || n > MAX_WORKERS)
        return SW_EINVAL;
    uv_once(&pool.once, pool_init);
    uv_mutex_lock(&pool.mu);
    int rc = pool.started > 0 && pool.started != n ? SW_ESTATE : 0;
    if (rc == 0)
        pool.want = n;
    uv_mutex_unlock(&pool.mu);
    return rc;
}

void sw_gate_pool_stats(struct sw_gate_pool_stats *st)
{
    uv_once(&pool.once, pool_init);
    uv_mutex_lock(&pool.mu);
    st->workers = pool.started ? pool.started : pool.want;
    st->running = pool.running;
    st->queued = pool.queued;
    uv_mutex_unlock(&pool.mu);
}

/* Through Sentinel, a kept connection may be to a master demoted since
 * (a failover while the old one stayed reachable): its journal writes
 * would be lost when it rejoins as a replica. Asked before each piece of
 * work (one ROLE); a new connection is found through the Sentinels, with
 * their quorum. A plain URL names its server: nothing to ask. */
static bool still_master(redisContext *c, const char *url)
{
    if (strncmp(url, SW_REDIS_SENTINEL_SCHEME, strlen(SW_REDIS_SENTINEL_SCHEME)) != 0 &&
        strncmp(url, SW_REDIS_SENTINEL_TLS_SCHEME, strlen(SW_REDIS_SENTINEL_TLS_SCHEME)) != 0)
        return true;
    redisReply *r = redisCommand(c, "ROLE");
    bool master = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    if (r != NULL)
        freeReplyObject(r);
    return master;
}

/* The journal connection for `url`, connecting (again) when needed. */
static int worker_journal(struct worker_state *ws, const char *url, redisContext **out,
                          struct sw_error *err)
{
    *out = NULL;
    if (url[0] == '\0')
        return 0;
    if (ws->journal != NULL &&
        (ws->journal->err != 0 || strcmp(ws->url, url) != 0 || !still_master(ws->journal, url))) {
        sw_redis_sync_free(ws->journal);
        ws->journal = NULL;
    }
    if (ws->journal == NULL) {
        int rc = sw_redis_sync_connect(url, 5000, &ws->journal, err);
        if (rc != 0) {
            ws->journal = NULL;
            return rc;
        }
        snprintf(ws->url, sizeof(ws->url), "%s", url);
    }
    *out = ws->journal;
    return 0;
}

/* One piece of work: an estimate, an ensure, or one round of outputs. */
static void run_work(struct work *w, struct worker_state *ws)
{
    struct clients c;
    memset(&c, 0, sizeof(c));
    struct sw_gate_result res;
    memset(&res, 0, sizeof(res));
    int fin = 0, stop = 0;
    if (w->mode == MODE_OUTPUTS) {
        uv_mutex_lock(&w->mu);
        fin = w->finishing;
        stop = w->stopping;
        uv_mutex_unlock(&w->mu);
        if (stop) {
            /* Given up while it waited: no round starts. */
            post(w, &res, NULL, 1);
            return;
        }
    }
    struct sw_gate_location *locs = sw_calloc(MAX_INPUTS, sizeof(*locs));
    if (locs == NULL || uv_loop_init(&c.loop) != 0) {
        res.rc = sw_error_set(&res.err, SW_ENOMEM, "job %s: cannot start the gate", w->job);
        post(w, &res, NULL, w->mode != MODE_OUTPUTS || fin);
        sw_free(locs);
        return;
    }
    if (sw_http_new(&c.loop, &c.http) != 0)
        res.rc = sw_error_set(&res.err, SW_ENOMEM, "job %s: cannot start HTTP", w->job);
    if (res.rc == 0)
        res.rc = worker_journal(ws, w->redis_url, &c.journal, &res.err);
    int final = 1;
    if (res.rc != 0) {
        /* An outputs round that cannot start is reported as a round; the
         * stream goes on (the next round tries again). */
        final = w->mode != MODE_OUTPUTS || fin;
    } else if (w->mode != MODE_OUTPUTS) {
        uint64_t t0 = uv_hrtime();
        one_pass(w, &c, &res, locs);
        if (w->mode == MODE_ENSURE && res.rc == 0)
            res.seconds = (double)(uv_hrtime() - t0) / 1e9;
    } else {
        if (!w->recovered) {
            recover_earlier_attempts(w, &c);
            w->recovered = 1;
        }
        one_pass(w, &c, &res, locs);
        /* A round under way when the attempt was given up is its last. */
        uv_mutex_lock(&w->mu);
        stop = w->stopping;
        uv_mutex_unlock(&w->mu);
        final = fin || stop;
    }
    /* The clients go before the answer: once a last answer is posted the
     * hub may free `w`, whose strings they borrow. */
    c.journal = NULL; /* the worker's, kept for its next piece of work */
    clients_close(&c);
    post(w, &res, locs, final);
    sw_free(locs);
}

/* The length of a Job key's tenant: the key without its last segment. */
static size_t tenant_len(const char *job)
{
    const char *slash = strrchr(job, '/');
    return slash ? (size_t)(slash - job) : strlen(job);
}

size_t sw_gate_fair_pick(const struct sw_gate_tenant_load *t, size_t n, size_t cursor)
{
    size_t best = n;
    for (size_t k = 0; k < n; k++) {
        size_t i = (cursor + k) % n;
        if (t[i].waiting > 0 && (best == n || t[i].running < t[best].running))
            best = i;
    }
    return best;
}

/* The tenant of `job`, made known if it is not, with one more reference;
 * NULL when out of memory. pool.mu held. */
static struct tenant *tenant_get(const char *job)
{
    size_t len = tenant_len(job);
    if (len >= sizeof(((struct tenant *)0)->key))
        len = sizeof(((struct tenant *)0)->key) - 1;
    for (size_t i = 0; i < pool.ntenants; i++) {
        struct tenant *t = pool.tenants[i];
        if (strlen(t->key) == len && memcmp(t->key, job, len) == 0) {
            t->refs++;
            return t;
        }
    }
    if (pool.ntenants == pool.cap) {
        size_t cap = pool.cap ? 2 * pool.cap : 16;
        struct tenant **ts = sw_realloc(pool.tenants, cap * sizeof(*ts));
        if (ts == NULL)
            return NULL;
        pool.tenants = ts;
        struct sw_gate_tenant_load *ls = sw_realloc(pool.loads, cap * sizeof(*ls));
        if (ls == NULL)
            return NULL;
        pool.loads = ls;
        pool.cap = cap;
    }
    struct tenant *t = sw_calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    memcpy(t->key, job, len);
    t->idx = pool.ntenants;
    t->refs = 1;
    pool.tenants[pool.ntenants] = t;
    pool.loads[pool.ntenants] = (struct sw_gate_tenant_load){0, 0};
    pool.ntenants++;
    return t;
}

/* Drops a reference; the last one forgets the tenant. pool.mu held. */
static void tenant_put(struct tenant *t)
{
    if (--t->refs > 0)
        return;
    size_t i = t->idx;
    memmove(&pool.tenants[i], &pool.tenants[i + 1],
            (pool.ntenants - i - 1) * sizeof(pool.tenants[0]));
    memmove(&pool.loads[i], &pool.loads[i + 1], (pool.ntenants - i - 1) * sizeof(pool.loads[0]));
    pool.ntenants--;
    for (size_t k = i; k < pool.ntenants; k++)
        pool.tenants[k]->idx = k;
    if (pool.cursor > i)
        pool.cursor--;
    if (pool.cursor >= pool.ntenants)
        pool.cursor = 0;
    sw_free(t);
}

/* tenant_put, taking the pool's lock (any thread). */
static void tenant_release(struct tenant *t)
{
    uv_mutex_lock(&pool.mu);
    tenant_put(t);
    uv_mutex_unlock(&pool.mu);
}

/* Takes the fair pick out of the queue; pool.mu held, queue not empty. */
static struct work *take_next(void)
{
    size_t i = sw_gate_fair_pick(pool.loads, pool.ntenants, pool.cursor);
    struct tenant *t = pool.tenants[i];
    struct work *w = t->head;
    t->head = w->next;
    if (t->head == NULL)
        t->tail = NULL;
    w->next = NULL;
    w->queued = 0;
    pool.loads[i].waiting--;
    pool.loads[i].running++;
    t->refs++; /* the worker's: `w` may be freed before it is done */
    pool.queued--;
    pool.running++;
    /* The next pick starts after this tenant: among equals, the tenant
     * served longest ago goes first. */
    pool.cursor = (i + 1) % pool.ntenants;
    return w;
}

static void pool_thread(void *arg)
{
    (void)arg;
    struct worker_state ws;
    memset(&ws, 0, sizeof(ws));
    for (;;) {
        uv_mutex_lock(&pool.mu);
        while (pool.queued == 0)
            uv_cond_wait(&pool.cv, &pool.mu);
        struct work *w = take_next();
        struct tenant *t = w->tenant;
        uv_mutex_unlock(&pool.mu);
        run_work(w, &ws); /* (w may be freed once its last answer is posted) */
        uv_mutex_lock(&pool.mu);
        pool.running--;
        pool.loads[t->idx].running--;
        tenant_put(t);
        uv_mutex_unlock(&pool.mu);
    }
}

/* Starts the threads on first use. Returns 0 once at least one runs. */
static int pool_start(void)
{
    uv_once(&pool.once, pool_init);
    uv_mutex_lock(&pool.mu);
    while (pool.started < pool.want) {
        uv_thread_t t;
        if (uv_thread_create(&t, pool_thread, NULL) != 0)
            break;
        pool.started++;
    }
    int rc = pool.started > 0 ? 0 : SW_EIO;
    uv_mutex_unlock(&pool.mu);
    return rc;
}

/* Queues `w` for a worker (any thread). */
static void enqueue(struct work *w)
{
    uv_mutex_lock(&pool.mu);
    struct tenant *t = w->tenant; /* (start_work got it) */
    w->next = NULL;
    w->queued = 1;
    if (t->tail)
        t->tail->next = w;
    else
        t->head = w;
    t->tail = w;
    pool.loads[t->idx].waiting++;
    pool.queued++;
    size_t waiting = pool.queued, busy = pool.running;
    int workers = pool.started;
    uv_cond_signal(&pool.cv);
    uv_mutex_unlock(&pool.mu);
    if (busy >= (size_t)workers)
        SW_LOG(SW_LOG_INFO, "gate work waits for a worker", "job=%s waiting=%zu workers=%d",
               sw_log_q(w->job), waiting, workers);
}

/* Takes `w` out of the queue if it is still there. Returns 1 if it was. */
static int dequeue(struct work *w)
{
    uv_mutex_lock(&pool.mu);
    int was = w->queued;
    if (was) {
        struct tenant *t = w->tenant;
        struct work **pp = &t->head, *prev = NULL;
        while (*pp != w)
            prev = *pp, pp = &(*pp)->next;
        *pp = w->next;
        if (t->tail == w)
            t->tail = prev;
        w->next = NULL;
        w->queued = 0;
        pool.loads[t->idx].waiting--;
        pool.queued--;
    }
    uv_mutex_unlock(&pool.mu);
    return was;
}

/* ---- hub side --------------------------------------------------------------- */

static void on_closed(uv_handle_t *h)
{
    struct work *w = h->data;
    if (--w->open_handles == 0)
        free_work(w);
}

static void close_work(struct work *w)
{
    uv_close((uv_handle_t *)&w->async, on_closed);
    uv_close((uv_handle_t *)&w->timer, on_closed);
}

/* An outputs stream ends without another round: its last answer is an
 * empty one (nothing copied), delivered through the async like any. */
static void end_without_round(struct work *w)
{
    struct sw_gate_result res;
    memset(&res, 0, sizeof(res));
    post(w, &res, NULL, 1);
}

static void on_interval(uv_timer_t *t)
{
    struct work *w = t->data;
    w->idle = 0;
    enqueue(w);
}

/* After a round that was not the last: the next one, now if the Job has
 * ended (its last round), none if the attempt was given up, else after
 * the interval. */
static void schedule_round(struct work *w)
{
    uv_mutex_lock(&w->mu);
    int fin = w->finishing, stop = w->stopping;
    uv_mutex_unlock(&w->mu);
    if (stop)
        end_without_round(w);
    else if (fin)
        enqueue(w);
    else {
        w->idle = 1;
        uv_timer_start(&w->timer, on_interval, (uint64_t)(w->interval_s * 1000), 0);
    }
}

static void on_async(uv_async_t *a)
{
    struct work *w = a->data;
    uv_mutex_lock(&w->mu);
    int have = w->have_result, final = w->final;
    struct sw_gate_result res = w->res;
    struct sw_gate_location locs[MAX_INPUTS];
    memcpy(locs, w->locs, res.nlocations * sizeof(locs[0]));
    res.locations = locs;
    w->have_result = 0;
    uv_mutex_unlock(&w->mu);
    if (!have)
        return;
    if (w->mode == MODE_OUTPUTS && final) {
        if (w->done_cb)
            w->done_cb(&res, w->done_ctx);
    } else if (w->cb) {
        w->cb(&res, w->ctx);
    }
    if (final)
        close_work(w);
    else if (w->mode == MODE_OUTPUTS)
        schedule_round(w);
}

static int make_work(uv_loop_t *loop, enum mode mode, const char *job,
                     const struct sw_gate_store *stores, size_t nstores, const char *redis_url,
                     struct work **out, struct sw_error *err)
{
    if (nstores > MAX_STORES)
        return sw_error_set(err, SW_ETOOBIG, "job %s: more than %d stores", job, MAX_STORES);
    struct work *w = sw_calloc(1, sizeof(*w));
    if (w == NULL)
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    w->mode = mode;
    w->hub = loop;
    snprintf(w->job, sizeof(w->job), "%s", job ? job : "");
    /* Journal keys are per Job: "gate-NS.NAME-I". */
    snprintf(w->rule_base, sizeof(w->rule_base), "gate-%s", w->job);
    for (char *p = w->rule_base; *p; p++)
        if (*p == '/' || *p == ':' || *p == ' ')
            *p = '.';
    snprintf(w->redis_url, sizeof(w->redis_url), "%s", redis_url ? redis_url : "");
    for (size_t i = 0; i < nstores; i++)
        copy_store(&w->stores[i], &stores[i].cfg);
    w->nstores = nstores;
    uv_mutex_init(&w->mu);
    *out = w;
    return 0;
}

static int start_work(struct work *w, struct sw_error *err)
{
    if (pool_start() != 0) {
        free_work(w);
        return sw_error_set(err, SW_EIO, "cannot start the gate's worker threads");
    }
    uv_mutex_lock(&pool.mu);
    w->tenant = tenant_get(w->job);
    uv_mutex_unlock(&pool.mu);
    if (w->tenant == NULL) {
        free_work(w);
        return sw_error_set(err, SW_ENOMEM, "job %s: out of memory", w->job);
    }
    if (uv_async_init(w->hub, &w->async, on_async) != 0) {
        free_work(w);
        return sw_error_set(err, SW_EIO, "cannot create an async handle");
    }
    uv_timer_init(w->hub, &w->timer);
    w->async.data = w;
    w->timer.data = w;
    w->open_handles = 2;
    enqueue(w);
    return 0;
}

static int gate_start(uv_loop_t *loop, enum mode mode, const struct sw_gate_request *req,
                      sw_gate_cb cb, void *ctx, struct sw_error *err)
{
    if (req->ninputs == 0 || req->ninputs > MAX_INPUTS)
        return sw_error_set(err, SW_EINVAL, "job %s: 1 to %d inputs expected", req->job,
                            MAX_INPUTS);
    if (req->region == NULL || req->region[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "job %s: a region is required", req->job);
    struct work *w;
    int rc = make_work(loop, mode, req->job, req->stores, req->nstores, req->redis_url, &w, err);
    if (rc != 0)
        return rc;
    snprintf(w->region, sizeof(w->region), "%s", req->region);
    w->bytes_per_s = req->bytes_per_s;
    w->assumed = req->assumed_bytes_per_s > 0 ? req->assumed_bytes_per_s : 100e6;
    for (size_t i = 0; i < req->ninputs; i++) {
        const struct sw_gate_input *in = &req->inputs[i];
        if (in->store == NULL || in->bucket == NULL || find_store(w, in->store) == NULL) {
            rc = sw_error_set(err, SW_EINVAL,
                              "job %s: input %zu names store \"%s\", which is "
                              "not among the stores given",
                              req->job, i, in->store ? in->store : "(none)");
            free_work(w);
            return rc;
        }
        snprintf(w->inputs[i].store, sizeof(w->inputs[i].store), "%s", in->store);
        snprintf(w->inputs[i].bucket, sizeof(w->inputs[i].bucket), "%s", in->bucket);
        snprintf(w->inputs[i].prefix, sizeof(w->inputs[i].prefix), "%s",
                 in->prefix ? in->prefix : "");
        snprintf(w->inputs[i].target_bucket, sizeof(w->inputs[i].target_bucket), "%s",
                 in->target_bucket ? in->target_bucket : "");
    }
    w->ninputs = req->ninputs;
    if (store_in_region(w, req->region) == NULL) {
        rc = sw_error_set(err, SW_EINFEASIBLE, "job %s: no object store in region %s", req->job,
                          req->region);
        free_work(w);
        return rc;
    }
    w->cb = cb;
    w->ctx = ctx;
    return start_work(w, err);
}

int sw_gate_ensure(uv_loop_t *loop, const struct sw_gate_request *req, sw_gate_cb cb, void *ctx,
                   struct sw_error *err)
{
    return gate_start(loop, MODE_ENSURE, req, cb, ctx, err);
}

int sw_gate_estimate(uv_loop_t *loop, const struct sw_gate_request *req, sw_gate_cb cb, void *ctx,
                     struct sw_error *err)
{
    return gate_start(loop, MODE_ESTIMATE, req, cb, ctx, err);
}

struct sw_gate_outputs {
    struct work *w;
};

int sw_gate_outputs_start(uv_loop_t *loop, const struct sw_gate_store *stores, size_t nstores,
                          const char *job, int attempt, const struct sw_gate_input *from,
                          const struct sw_gate_input *to, const char *redis_url, double interval_s,
                          sw_gate_cb on_round, void *ctx, struct sw_gate_outputs **out,
                          struct sw_error *err)
{
    *out = NULL;
    struct sw_gate_outputs *o = sw_calloc(1, sizeof(*o));
    if (o == NULL)
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    struct work *w;
    int rc = make_work(loop, MODE_OUTPUTS, job, stores, nstores, redis_url, &w, err);
    if (rc != 0) {
        sw_free(o);
        return rc;
    }
    if (find_store(w, from->store) == NULL || find_store(w, to->store) == NULL) {
        rc = sw_error_set(err, SW_EINVAL, "job %s: outputs from \"%s\" to \"%s\": unknown store",
                          job, from->store, to->store);
        free_work(w);
        sw_free(o);
        return rc;
    }
    /* One journal per attempt: "gate-NS.NAME-out-aN". */
    size_t bl = strlen(w->rule_base);
    w->job_base_len = bl;
    w->attempt = attempt;
    snprintf(w->rule_base + bl, sizeof(w->rule_base) - bl, "-out-a%d", attempt);
    snprintf(w->inputs[0].store, sizeof(w->inputs[0].store), "%s", from->store);
    snprintf(w->inputs[0].bucket, sizeof(w->inputs[0].bucket), "%s", from->bucket);
    snprintf(w->inputs[0].prefix, sizeof(w->inputs[0].prefix), "%s", from->prefix);
    w->ninputs = 1;
    snprintf(w->out_to.store, sizeof(w->out_to.store), "%s", to->store);
    snprintf(w->out_to.bucket, sizeof(w->out_to.bucket), "%s", to->bucket);
    snprintf(w->out_to.prefix, sizeof(w->out_to.prefix), "%s", to->prefix);
    w->interval_s = interval_s > 0 ? interval_s : 30;
    w->assumed = 100e6;
    w->cb = on_round;
    w->ctx = ctx;
    o->w = w;
    rc = start_work(w, err);
    if (rc != 0) {
        sw_free(o);
        return rc;
    }
    *out = o;
    return 0;
}

static void outputs_end(struct sw_gate_outputs *o, int stop, sw_gate_cb done, void *ctx)
{
    struct work *w = o->w;
    uv_mutex_lock(&w->mu);
    w->done_cb = done;
    w->done_ctx = ctx;
    if (stop)
        w->stopping = 1;
    else
        w->finishing = 1;
    uv_mutex_unlock(&w->mu);
    sw_free(o);
    if (w->idle) {
        /* Between rounds: the wait ends now. */
        uv_timer_stop(&w->timer);
        w->idle = 0;
        if (stop)
            end_without_round(w);
        else
            enqueue(w);
    } else if (stop && dequeue(w)) {
        /* Queued, not started: it never will. */
        end_without_round(w);
    }
    /* Otherwise a round runs (its end sees the flags), or its answer is
     * on its way to on_async (schedule_round sees them). */
}

void sw_gate_outputs_finish(struct sw_gate_outputs *o, sw_gate_cb done, void *ctx)
{
    outputs_end(o, 0, done, ctx);
}

void sw_gate_outputs_stop(struct sw_gate_outputs *o, sw_gate_cb done, void *ctx)
{
    outputs_end(o, 1, done, ctx);
}
