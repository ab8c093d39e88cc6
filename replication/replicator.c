/*
 * replicator.c - one run of a replication rule: recover the journal, list
 * both sides, plan, copy with bounded concurrency, record, report RPO.
 *
 * Listing and planning are blocking (they are bounded by the listing
 * size); the copies run concurrently on the loop through copy.c.
 */
#include "replication/replicator.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "store/redis.h"

/* Listing more than this many objects in one rule is refused: split the rule. */
#define MAX_OBJECTS 1000000
/* Empty pages in a row, each saying more follow, before a listing is
 * refused as malformed (a store may return a few; never without end). */
#define MAX_EMPTY_PAGES 16

struct objs {
    struct sw_s3_object *v;
    size_t n, cap;
};

static void objs_free(struct objs *o)
{
    for (size_t i = 0; i < o->n; i++)
        sw_free(o->v[i].key);
    sw_free(o->v);
    memset(o, 0, sizeof(*o));
}

const char *sw_repl_key_problem(const char *prefix, const char *key)
{
    size_t pl = strlen(prefix);
    if (strncmp(key, prefix, pl) != 0)
        return "outside the prefix listed (a malformed answer)";
    return sw_s3_key_problem(key);
}

int sw_repl_dst_key(const char *src_prefix, const char *dst_prefix, const char *key, char **out,
                    struct sw_error *err)
{
    *out = NULL;
    const char *why = sw_repl_key_problem(src_prefix, key);
    if (why != NULL)
        return sw_error_set(err, SW_EPARSE, "listed key \"%.200s\": %s", key, why);
    const char *rest = key + strlen(src_prefix);
    size_t n = strlen(dst_prefix) + strlen(rest) + 1;
    char *d = sw_malloc(n);
    if (d == NULL)
        return sw_error_set(err, SW_ENOMEM, "listed key \"%.200s\": out of memory", key);
    snprintf(d, n, "%s%s", dst_prefix, rest);
    /* The key is clean, but the join may not be: "in/a" and "out/" make
     * "in/a../x" into "out/../x". */
    why = sw_s3_key_problem(d);
    if (why != NULL) {
        int rc = sw_error_set(
            err, SW_EPARSE, "listed key \"%.200s\" would be copied to \"%.200s\": %s", key, d, why);
        sw_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

static int cmp_obj(const void *a, const void *b)
{
    return strcmp(((const struct sw_s3_object *)a)->key, ((const struct sw_s3_object *)b)->key);
}

/* One side of a merge: the page in hand, where we are in it, and the last
 * key seen (the previous page's last one included), which every key must
 * follow. */
struct side {
    const char *what; /* "source" or "target", for messages */
    const char *prefix;
    sw_repl_page_fn next;
    void *ctx;
    struct sw_s3_list page;
    size_t i;
    int more;      /* a page may follow */
    int seen;      /* prev holds a key */
    size_t listed; /* objects listed so far: at most MAX_OBJECTS */
    int empty_run; /* empty pages in a row that said more follow */
    char prev[SW_S3_KEY_MAX + 1];
};

/* The side's current object, fetching pages as needed (an empty page that
 * says more follow is skipped), or NULL at its end. Every key of a page is
 * checked when it arrives: under the prefix, sendable, and after the one
 * before it in UTF-8 binary order (strcmp), as ListObjectsV2 promises; a
 * page that goes backwards or repeats a key is a malformed answer, which
 * would otherwise make the merge miscompare. */
static int side_cur(struct side *s, const struct sw_s3_object **out, struct sw_error *err)
{
    *out = NULL;
    while (s->i == s->page.n) {
        if (!s->more)
            return 0;
        sw_s3_list_free(&s->page);
        s->i = 0;
        int rc = s->next(s->ctx, &s->page, err);
        if (rc != 0) {
            memset(&s->page, 0, sizeof(s->page));
            return rc;
        }
        s->more = s->page.truncated;
        /* A hostile or broken store bounds nothing itself: a listing ends
         * after MAX_OBJECTS objects, and after MAX_EMPTY_PAGES empty pages
         * in a row that each say more follow (tokens that cycle, say). */
        s->empty_run = s->page.n == 0 && s->more ? s->empty_run + 1 : 0;
        if (s->empty_run > MAX_EMPTY_PAGES)
            return sw_error_set(err, SW_EPARSE,
                                "%s listing: %d empty pages in a row, each saying more follow "
                                "(a malformed answer)",
                                s->what, s->empty_run);
        s->listed += s->page.n;
        if (s->listed > MAX_OBJECTS)
            return sw_error_set(err, SW_ETOOBIG,
                                "%s listing under \"%.200s\": more than %d objects; split the rule",
                                s->what, s->prefix, MAX_OBJECTS);
        for (size_t k = 0; k < s->page.n; k++) {
            const char *key = s->page.objects[k].key;
            const char *why = sw_repl_key_problem(s->prefix, key);
            if (why != NULL)
                return sw_error_set(err, SW_EPARSE, "%s listing: listed key \"%.200s\": %s",
                                    s->what, key, why);
            if (s->seen && strcmp(key, s->prev) <= 0)
                return sw_error_set(err, SW_EPARSE,
                                    "%s listing: listed key \"%.200s\" after \"%.200s\": keys "
                                    "out of order (a malformed answer)",
                                    s->what, key, s->prev);
            /* sw_repl_key_problem bounds the key to SW_S3_KEY_MAX. */
            snprintf(s->prev, sizeof(s->prev), "%s", key);
            s->seen = 1;
        }
    }
    *out = &s->page.objects[s->i];
    return 0;
}

int sw_repl_compare(const char *src_prefix, sw_repl_page_fn src_pages, void *src_ctx,
                    const char *dst_prefix, sw_repl_page_fn dst_pages, void *dst_ctx,
                    sw_repl_compare_cb cb, void *ctx, struct sw_error *err)
{
    struct side *s = sw_calloc(2, sizeof(*s));
    if (s == NULL)
        return sw_error_set(err, SW_ENOMEM, "comparing listings: out of memory");
    struct side *src = &s[0], *dst = &s[1];
    *src = (struct side){
        .what = "source", .prefix = src_prefix, .next = src_pages, .ctx = src_ctx, .more = 1};
    *dst = (struct side){
        .what = "target", .prefix = dst_prefix, .next = dst_pages, .ctx = dst_ctx, .more = 1};
    int rc = 0;
    for (;;) {
        const struct sw_s3_object *o, *d;
        if ((rc = side_cur(src, &o, err)) != 0)
            break;
        if (o == NULL) {
            /* The source has ended: what the target still holds is its own. */
            while ((rc = side_cur(dst, &d, err)) == 0 && d != NULL) {
                dst->i++;
                if ((rc = cb(NULL, d->key, d, ctx)) != 0)
                    break;
            }
            break;
        }
        char *dk = NULL;
        if ((rc = sw_repl_dst_key(src_prefix, dst_prefix, o->key, &dk, err)) != 0)
            break;
        /* The join keeps the order: every destination key is the same
         * prefix followed by the rest of its source key. */
        int c = 1;
        while ((rc = side_cur(dst, &d, err)) == 0 && d != NULL && (c = strcmp(d->key, dk)) < 0) {
            dst->i++;
            if ((rc = cb(NULL, d->key, d, ctx)) != 0)
                break;
        }
        if (rc == 0) {
            const struct sw_s3_object *there = d != NULL && c == 0 ? d : NULL;
            rc = cb(o, dk, there, ctx);
            if (there != NULL)
                dst->i++;
            src->i++;
        }
        sw_free(dk);
        if (rc != 0)
            break;
    }
    sw_s3_list_free(&src->page);
    sw_s3_list_free(&dst->page);
    sw_free(s);
    return rc;
}

static int list_all(struct sw_s3 *s3, const char *bucket, const char *prefix, struct objs *out,
                    struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    char *token = NULL;
    for (;;) {
        struct sw_s3_list page;
        int rc = sw_s3_list_sync(s3, bucket, prefix, token, &page, err);
        sw_free(token);
        token = NULL;
        if (rc != 0) {
            objs_free(out);
            return rc;
        }
        if (out->n + page.n > MAX_OBJECTS) {
            sw_s3_list_free(&page);
            objs_free(out);
            return sw_error_set(err, SW_ETOOBIG, "s3://%s/%s: more than %d objects; split the rule",
                                bucket, prefix, MAX_OBJECTS);
        }
        if (out->n + page.n > out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 1024;
            while (cap < out->n + page.n)
                cap *= 2;
            struct sw_s3_object *v = sw_realloc(out->v, cap * sizeof(*v));
            if (v == NULL) {
                sw_s3_list_free(&page);
                objs_free(out);
                return sw_error_set(err, SW_ENOMEM, "listing s3://%s/%s: out of memory", bucket,
                                    prefix);
            }
            out->v = v;
            out->cap = cap;
        }
        for (size_t i = 0; i < page.n; i++) {
            const char *why = sw_repl_key_problem(prefix, page.objects[i].key);
            if (why != NULL) {
                rc = sw_error_set(err, SW_EPARSE, "s3://%s/%s: listed key \"%.200s\": %s", bucket,
                                  prefix, page.objects[i].key, why);
                sw_s3_list_free(&page);
                objs_free(out);
                return rc;
            }
        }
        if (page.n > 0)
            memcpy(out->v + out->n, page.objects, page.n * sizeof(*page.objects));
        out->n += page.n;
        /* The keys moved into out; free only the array. */
        sw_free(page.objects);
        page.objects = NULL;
        page.n = 0;
        int more = page.truncated;
        if (more)
            token = page.next_token, page.next_token = NULL;
        sw_s3_list_free(&page);
        if (!more)
            return 0;
    }
}

static const struct sw_s3_object *find(const struct objs *o, const char *key)
{
    struct sw_s3_object k = {.key = (char *)key};
    return o->n ? bsearch(&k, o->v, o->n, sizeof(*o->v), cmp_obj) : NULL;
}

/* A listing as a page source for sw_repl_compare: one ListObjectsV2 page
 * per call, so a comparison holds one page of each side at a time. */
struct s3_pages {
    struct sw_s3 *s3;
    const char *bucket, *prefix;
    char *token; /* the next page's continuation token; NULL before the first */
};

static int s3_page(void *ctx, struct sw_s3_list *page, struct sw_error *err)
{
    struct s3_pages *p = ctx;
    int rc = sw_s3_list_sync(p->s3, p->bucket, p->prefix, p->token, page, err);
    char *asked = p->token;
    p->token = NULL;
    if (rc == 0 && page->truncated) {
        /* More pages need a token that moves on: without one, or with the
         * one just sent, the listing would start over or never end. */
        if (page->next_token == NULL || page->next_token[0] == '\0' ||
            (asked != NULL && strcmp(asked, page->next_token) == 0)) {
            sw_s3_list_free(page);
            rc = sw_error_set(err, SW_EPARSE,
                              "s3://%s/%s: a truncated page without a new continuation token "
                              "(a malformed answer)",
                              p->bucket, p->prefix);
        } else {
            p->token = page->next_token;
            page->next_token = NULL;
        }
    }
    sw_free(asked);
    return rc;
}

/* ---- journal ---------------------------------------------------------------- */

struct done_rec {
    char *key;
    char etag[SW_S3_ETAG_MAX];
    int64_t size;
    char sha[65];
};

struct done_set {
    struct done_rec *v;
    size_t n;
};

static int cmp_done(const void *a, const void *b)
{
    return strcmp(((const struct done_rec *)a)->key, ((const struct done_rec *)b)->key);
}

static void done_free(struct done_set *d)
{
    for (size_t i = 0; i < d->n; i++)
        sw_free(d->v[i].key);
    sw_free(d->v);
    memset(d, 0, sizeof(*d));
}

static void journal_key(char *out, size_t n, const char *rule, const char *what, const char *target)
{
    snprintf(out, n, "sw:repl:%s:%s%s%s", rule, what, target ? ":" : "", target ? target : "");
}

static int load_done(redisContext *j, const char *rule, const char *target, struct done_set *out,
                     struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    if (j == NULL)
        return 0;
    char k[512];
    journal_key(k, sizeof(k), rule, "done", target);
    redisReply *r = NULL;
    int rc = sw_redis_sync_command(j, &r, err, "HGETALL %s", k);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
        out->v = sw_calloc(r->elements / 2, sizeof(*out->v));
        if (out->v == NULL) {
            freeReplyObject(r);
            return sw_error_set(err, SW_ENOMEM, "journal: out of memory");
        }
        for (size_t i = 0; i + 1 < r->elements; i += 2) {
            struct done_rec *d = &out->v[out->n];
            if (sscanf(r->element[i + 1]->str, "%127s %" SCNd64 " %64s", d->etag, &d->size,
                       d->sha) != 3)
                continue; /* an unreadable record only costs a re-check */
            d->key = sw_strdup(r->element[i]->str);
            if (d->key == NULL) {
                freeReplyObject(r);
                done_free(out);
                return sw_error_set(err, SW_ENOMEM, "journal: out of memory");
            }
            out->n++;
        }
        if (out->n > 1)
            qsort(out->v, out->n, sizeof(*out->v), cmp_done);
    }
    freeReplyObject(r);
    return 0;
}

static const struct done_rec *find_done(const struct done_set *d, const char *key)
{
    struct done_rec k = {.key = (char *)key};
    return d->n ? bsearch(&k, d->v, d->n, sizeof(*d->v), cmp_done) : NULL;
}

static void journal_cmd(redisContext *j, const char *fmt, ...)
{
    if (j == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(j, fmt, ap);
    va_end(ap);
    if (r == NULL)
        SW_LOG(SW_LOG_WARN, "journal write failed", "error=%s", sw_log_q(j->errstr));
    else
        freeReplyObject(r);
}

/* Aborts the multipart uploads a crashed run left open: those its journal
 * names by upload id, and nothing else. A target prefix is not the rule's
 * alone (other teams and tools write there too), so an upload is never
 * aborted because it was found open under it: only an id this replicator
 * recorded before sending the upload's first part (on_upload) is one it
 * started. Without a journal nothing is aborted here at all: a failed copy
 * aborts its own upload, and a crash leaves it to the bucket's lifecycle
 * rule (AbortIncompleteMultipartUpload). */
int sw_repl_recover(const struct sw_repl_rule *rule, redisContext *j, int64_t *aborted,
                    struct sw_error *err)
{
    if (j == NULL) {
        static atomic_flag said = ATOMIC_FLAG_INIT;
        if (!atomic_flag_test_and_set(&said))
            SW_LOG(SW_LOG_INFO,
                   "replication runs without a journal: a multipart upload left open by a "
                   "crash is not aborted by spillway (uploads are never aborted by listing)",
                   "rule=%s", sw_log_q(rule->name));
        return 0;
    }
    char k[512];
    journal_key(k, sizeof(k), rule->name, "uploads", NULL);
    redisReply *r = NULL;
    int rc = sw_redis_sync_command(j, &r, err, "HGETALL %s", k);
    if (rc != 0)
        return rc;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        const char *field = r->element[i]->str;
        const char *nl = field ? strchr(field, '\n') : NULL;
        const char *id = r->element[i + 1]->str;
        if (nl == NULL || id == NULL || id[0] == '\0')
            continue;
        for (size_t t = 0; t < rule->ntargets; t++) {
            const struct sw_repl_target *tg = &rule->targets[t];
            if (strlen(tg->name) != (size_t)(nl - field) ||
                strncmp(tg->name, field, (size_t)(nl - field)) != 0)
                continue;
            struct sw_error e;
            if (sw_copy_abort_sync(tg->s3, tg->bucket, nl + 1, id, &e) == 0) {
                if (aborted != NULL)
                    (*aborted)++;
                journal_cmd(j, "HDEL %s %s", k, field);
                SW_LOG(SW_LOG_INFO, "aborted a journaled upload", "rule=%s target=%s",
                       sw_log_q(rule->name), sw_log_q(tg->name));
            } else {
                /* Kept in the journal: the next run tries again. */
                SW_LOG(SW_LOG_WARN, "abort failed", "rule=%s target=%s error=%s",
                       sw_log_q(rule->name), sw_log_q(tg->name), sw_log_q(e.msg));
            }
        }
    }
    freeReplyObject(r);
    return 0;
}

/* ---- the run ---------------------------------------------------------------- */

struct job {
    struct run *run;
    size_t obj;
    size_t target;
    char *dst_key;
    char known_sha[65];
    int upload_journaled; /* its multipart upload id is in the journal */
};

struct run {
    const struct sw_repl_rule *rule;
    redisContext *j;
    struct objs src;
    struct job *jobs;
    size_t njobs, next, active, finished;
    int64_t *oldest_pending; /* per target, ms; INT64_MAX if none */
    struct sw_throttle throttle;
    struct sw_repl_stats *st;
    struct sw_repl_progress prog;
    sw_repl_progress_cb progress;
    void *ctx;
    int64_t last_progress_ms;
    int jpending; /* pipelined journal writes whose replies are unread */
};

/* Journal writes nothing waits for (a verified copy, an upload that is
 * gone) are pipelined: sent at once, their replies read in batches, so the
 * loop does not stop for a Redis round trip per object. Losing them in a
 * crash costs the next run a HEAD per object, or an abort of an upload
 * that no longer exists. A write that must be in Redis before its effect
 * (an upload id, before the first part) waits for its reply, after the
 * pipelined ones, whose replies come first. */
#define JOURNAL_BATCH 256

static void journal_drain(struct run *r)
{
    while (r->jpending > 0) {
        void *reply = NULL;
        if (redisGetReply(r->j, &reply) != REDIS_OK) {
            SW_LOG(SW_LOG_WARN, "journal write failed", "error=%s", sw_log_q(r->j->errstr));
            r->jpending = 0;
            return;
        }
        redisReply *rep = reply;
        if (rep != NULL && rep->type == REDIS_REPLY_ERROR)
            SW_LOG(SW_LOG_WARN, "journal write refused", "error=%s", sw_log_q(rep->str));
        freeReplyObject(reply);
        r->jpending--;
    }
}

static void journal_pipelined(struct run *r, const char *fmt, ...)
{
    if (r->j == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    int rc = redisvAppendCommand(r->j, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK) {
        SW_LOG(SW_LOG_WARN, "journal write failed", "error=%s", sw_log_q(r->j->errstr));
        return;
    }
    r->jpending++;
    int done = 0;
    while (!done)
        if (redisBufferWrite(r->j, &done) != REDIS_OK) {
            SW_LOG(SW_LOG_WARN, "journal write failed", "error=%s", sw_log_q(r->j->errstr));
            break;
        }
    if (r->jpending >= JOURNAL_BATCH)
        journal_drain(r);
}

/* A write whose reply is awaited (after the pipelined ones). Returns 0
 * once Redis has taken it (or when there is no journal), else SW_EIO. */
static int journal_now(struct run *r, const char *fmt, ...)
{
    if (r->j == NULL)
        return 0;
    journal_drain(r);
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(r->j, fmt, ap);
    va_end(ap);
    if (rep == NULL) {
        SW_LOG(SW_LOG_WARN, "journal write failed", "error=%s", sw_log_q(r->j->errstr));
        return SW_EIO;
    }
    int rc = 0;
    if (rep->type == REDIS_REPLY_ERROR) {
        SW_LOG(SW_LOG_WARN, "journal write refused", "error=%s", sw_log_q(rep->str));
        rc = SW_EIO;
    }
    freeReplyObject(rep);
    return rc;
}

/* Records a verified copy: done:TARGET KEY -> "SOURCE-ETAG SIZE SHA256"
 * (one Redis argument; hiredis splits the format only at literal spaces). */
static void record_done(struct run *r, const char *target, const char *key, const char *etag,
                        int64_t size, const char *sha)
{
    char k[512], v[SW_S3_ETAG_MAX + 96];
    journal_key(k, sizeof(k), r->rule->name, "done", target);
    snprintf(v, sizeof(v), "%s %" PRId64 " %s", etag[0] ? etag : "-", size, sha);
    journal_pipelined(r, "HSET %s %s %s", k, key, v);
}

static int dst_key_for(const struct sw_repl_rule *rule, size_t t, const char *key, char **out,
                       struct sw_error *err)
{
    const char *p = rule->targets[t].prefix ? rule->targets[t].prefix : rule->prefix;
    int rc = sw_repl_dst_key(rule->prefix, p, key, out, err);
    if (rc != 0)
        sw_error_wrap(err, "rule %s, target %s", rule->name, rule->targets[t].name);
    return rc;
}

/* The upload's id goes into the journal, and Redis has answered, before
 * its first part is sent: recovery aborts only what the journal names, so
 * an upload it could not name would be left open. When the write fails the
 * copy fails and aborts the upload itself (copy.c). */
static int on_upload(const char *upload_id, void *ctx)
{
    struct job *jb = ctx;
    struct run *r = jb->run;
    if (r->j == NULL)
        return 0;
    char k[512];
    journal_key(k, sizeof(k), r->rule->name, "uploads", NULL);
    int rc = journal_now(r, "HSET %s %s\n%s %s", k, r->rule->targets[jb->target].name, jb->dst_key,
                         upload_id);
    if (rc == 0)
        jb->upload_journaled = 1;
    return rc;
}

static void report_progress(struct run *r, int force)
{
    if (r->progress == NULL)
        return;
    int64_t now = (int64_t)uv_now(sw_s3_loop(r->rule->src));
    if (!force && now - r->last_progress_ms < 200)
        return;
    r->last_progress_ms = now;
    r->progress(&r->prog, r->ctx);
}

static void on_bytes(int64_t n, void *ctx)
{
    struct job *jb = ctx;
    jb->run->prog.bytes_done += n;
    report_progress(jb->run, 0);
}

static void start_next(struct run *r);

static void on_copied(const struct sw_copy_result *res, void *ctx)
{
    struct job *jb = ctx;
    struct run *r = jb->run;
    const struct sw_repl_target *tg = &r->rule->targets[jb->target];
    const struct sw_s3_object *o = &r->src.v[jb->obj];
    char k[512];
    if (jb->upload_journaled && (res->upload_id[0] == '\0' || res->aborted)) {
        journal_key(k, sizeof(k), r->rule->name, "uploads", NULL);
        journal_pipelined(r, "HDEL %s %s\n%s", k, tg->name, jb->dst_key);
    }
    r->active--;
    r->finished++;
    r->prog.objects_done++;
    if (res->rc == 0) {
        r->st->copied++;
        r->st->bytes_copied += res->size;
        record_done(r, tg->name, jb->dst_key, o->etag, res->size, res->sha256);
    } else {
        r->st->failed++;
        if (r->st->first_error.code == 0)
            r->st->first_error = res->err;
        if (o->last_modified_ms < r->oldest_pending[jb->target])
            r->oldest_pending[jb->target] = o->last_modified_ms;
        SW_LOG(SW_LOG_WARN, "copy failed", "rule=%s target=%s code=%s", sw_log_q(r->rule->name),
               sw_log_q(tg->name), sw_err_name(res->rc));
    }
    sw_free(jb->dst_key);
    jb->dst_key = NULL;
    report_progress(r, 0);
    start_next(r);
}

static void start_next(struct run *r)
{
    int limit = r->rule->concurrency > 0 ? r->rule->concurrency : 16;
    while (r->next < r->njobs && r->active < (size_t)limit) {
        struct job *jb = &r->jobs[r->next++];
        const struct sw_s3_object *o = &r->src.v[jb->obj];
        const struct sw_repl_target *tg = &r->rule->targets[jb->target];
        struct sw_copy_spec spec = {
            .src = r->rule->src,
            .src_bucket = r->rule->bucket,
            .src_key = o->key,
            .dst = tg->s3,
            .dst_bucket = tg->bucket,
            .dst_key = jb->dst_key,
            .size = o->size,
            .known_sha256 = jb->known_sha[0] ? jb->known_sha : NULL,
            .part_size = r->rule->part_size,
            .concurrency = r->rule->part_concurrency,
            .allow_server_copy = r->rule->allow_server_copy,
            .throttle = &r->throttle,
            .on_upload = on_upload,
            .on_bytes = on_bytes,
            .ctx = jb,
        };
        struct sw_error e;
        if (sw_copy_start(&spec, on_copied, jb, &e) != 0) {
            r->st->failed++;
            r->finished++;
            if (r->st->first_error.code == 0)
                r->st->first_error = e;
            continue;
        }
        r->active++;
    }
}

/* Decides whether object o must go to target t; fills jb->known_sha. */
static int plan_one(struct run *r, size_t t, const struct objs *dst, const struct done_set *done,
                    const struct sw_s3_object *o, struct job *jb, int *conflict,
                    struct sw_error *err)
{
    const struct sw_repl_target *tg = &r->rule->targets[t];
    *conflict = 0;
    const struct sw_s3_object *there = find(dst, jb->dst_key);
    const struct done_rec *rec = find_done(done, jb->dst_key);
    if (rec != NULL && strcmp(rec->etag, o->etag[0] ? o->etag : "-") == 0 && rec->size == o->size)
        memcpy(jb->known_sha, rec->sha, 65);
    if (there == NULL)
        return 1;
    if (there->size == o->size && rec != NULL && jb->known_sha[0] != '\0')
        return 0; /* verified earlier, same source version, still there */
    /* Compare checksums by metadata. */
    struct sw_s3_head th, sh;
    struct sw_error e;
    if (sw_s3_head_sync(tg->s3, tg->bucket, jb->dst_key, &th, &e) != 0)
        return 1;
    /* The target says which source version it was copied from and what its
     * bytes hash to (both checked when it was written). */
    char bare[SW_S3_ETAG_MAX];
    sw_s3_etag_bare(o->etag, bare, sizeof(bare));
    if (th.size == o->size && th.sha256[0] != '\0' && bare[0] != '\0' &&
        strcmp(th.source_etag, bare) == 0) {
        record_done(r, tg->name, jb->dst_key, o->etag, o->size, th.sha256);
        return 0;
    }
    if (jb->known_sha[0] == '\0') {
        if (sw_s3_head_sync(r->rule->src, r->rule->bucket, o->key, &sh, err) != 0)
            return -1;
        memcpy(jb->known_sha, sh.sha256, 65);
    }
    int same = th.size == o->size && th.sha256[0] != '\0' && strcmp(th.sha256, jb->known_sha) == 0;
    if (same) {
        record_done(r, tg->name, jb->dst_key, o->etag, o->size, th.sha256);
        return 0;
    }
    /* Model versions are immutable: an object already on the target that
     * is not provably the same is a conflict, never overwritten. */
    if (r->rule->immutable) {
        *conflict = 1;
        sw_error_set(err, SW_ECONFLICT,
                     "rule %s: s3://%s/%s on %s differs from the source s3://%s/%s (size %" PRId64
                     " vs %" PRId64 ", copied from ETag %s, source ETag now %s), but model "
                     "versions are immutable: not overwritten",
                     r->rule->name, tg->bucket, jb->dst_key, tg->name, r->rule->bucket, o->key,
                     th.size, o->size, th.source_etag[0] ? th.source_etag : "unknown", bare);
        return 0;
    }
    return 1;
}

int sw_repl_run_once(const struct sw_repl_rule *rule, redisContext *journal,
                     sw_repl_progress_cb progress, void *ctx, struct sw_repl_stats *st,
                     struct sw_error *err)
{
    memset(st, 0, sizeof(*st));
    int64_t t0 = sw_mono_ms(sw_clock_system());
    if (rule->ntargets == 0 || rule->ntargets > SW_REPL_MAX_TARGETS)
        return sw_error_set(err, SW_EINVAL, "rule %s: between 1 and %d targets are required",
                            rule->name, SW_REPL_MAX_TARGETS);
    struct run r;
    memset(&r, 0, sizeof(r));
    r.rule = rule;
    r.j = journal;
    r.st = st;
    r.progress = progress;
    r.ctx = ctx;
    r.throttle.bytes_per_s = rule->bytes_per_s;
    int64_t oldest[SW_REPL_MAX_TARGETS];
    r.oldest_pending = oldest;
    for (size_t t = 0; t < rule->ntargets; t++)
        oldest[t] = INT64_MAX;

    int rc = sw_repl_recover(rule, journal, &st->aborted_uploads, err);
    if (rc != 0)
        return sw_error_wrap(err, "rule %s: recovering the journal", rule->name);
    rc = list_all(rule->src, rule->bucket, rule->prefix, &r.src, err);
    if (rc != 0)
        return rc;
    st->listed = (int64_t)r.src.n;
    for (size_t i = 0; i < r.src.n; i++)
        st->bytes_listed += r.src.v[i].size;
    r.jobs = sw_calloc(r.src.n * rule->ntargets + 1, sizeof(*r.jobs));
    if (r.jobs == NULL) {
        objs_free(&r.src);
        return sw_error_set(err, SW_ENOMEM, "rule %s: out of memory", rule->name);
    }
    for (size_t t = 0; t < rule->ntargets && rc == 0; t++) {
        const struct sw_repl_target *tg = &rule->targets[t];
        struct objs dst;
        struct done_set done;
        rc = list_all(tg->s3, tg->bucket, tg->prefix ? tg->prefix : rule->prefix, &dst, err);
        if (rc != 0)
            break;
        if (dst.n > 1)
            qsort(dst.v, dst.n, sizeof(*dst.v), cmp_obj);
        rc = load_done(journal, rule->name, tg->name, &done, err);
        for (size_t i = 0; rc == 0 && i < r.src.n; i++) {
            const struct sw_s3_object *o = &r.src.v[i];
            struct job *jb = &r.jobs[r.njobs];
            /* The slot may hold what a skipped object left. */
            memset(jb, 0, sizeof(*jb));
            jb->run = &r;
            jb->obj = i;
            jb->target = t;
            rc = dst_key_for(rule, t, o->key, &jb->dst_key, err);
            if (rc != 0)
                break;
            int conflict = 0;
            struct sw_error pe;
            sw_error_clear(&pe);
            int need = plan_one(&r, t, &dst, &done, o, jb, &conflict, &pe);
            if (need < 0 || conflict) {
                st->failed++;
                if (st->first_error.code == 0)
                    st->first_error = pe;
                if (o->last_modified_ms < oldest[t])
                    oldest[t] = o->last_modified_ms;
                need = 0;
            } else if (need == 0) {
                st->skipped++;
            }
            if (need) {
                r.prog.objects_total++;
                r.prog.bytes_total += o->size;
                r.njobs++;
            } else {
                sw_free(jb->dst_key);
                jb->dst_key = NULL;
            }
        }
        done_free(&done);
        objs_free(&dst);
    }
    if (rc == 0) {
        SW_LOG(SW_LOG_INFO, "replication run",
               "rule=%s listed=%" PRId64 " to_copy=%zu "
               "skipped=%" PRId64,
               sw_log_q(rule->name), st->listed, r.njobs, st->skipped);
        report_progress(&r, 1);
        start_next(&r);
        uv_loop_t *loop = sw_s3_loop(rule->src);
        while (r.finished < r.njobs)
            uv_run(loop, UV_RUN_ONCE);
        report_progress(&r, 1);
    }
    if (journal != NULL)
        journal_drain(&r);
    int64_t now = sw_now_ms(sw_clock_system());
    for (size_t t = 0; t < rule->ntargets; t++) {
        st->rpo_ms[t] = oldest[t] == INT64_MAX ? 0 : now - oldest[t];
        char k[512];
        journal_key(k, sizeof(k), rule->name, "rpo", rule->targets[t].name);
        char v[64];
        snprintf(v, sizeof(v), "%" PRId64 " %" PRId64,
                 oldest[t] == INT64_MAX ? (int64_t)0 : oldest[t], now);
        journal_cmd(journal, "SET %s %s", k, v);
    }
    for (size_t i = 0; i < r.njobs; i++)
        sw_free(r.jobs[i].dst_key);
    sw_free(r.jobs);
    objs_free(&r.src);
    st->elapsed_ms = sw_mono_ms(sw_clock_system()) - t0;
    if (rc == 0 && st->failed > 0) {
        rc = st->first_error.code ? st->first_error.code : SW_EIO;
        if (err)
            *err = st->first_error;
        sw_error_wrap(err, "rule %s: %" PRId64 " of %" PRId64 " copies failed; first", rule->name,
                      st->failed, st->failed + st->copied);
    }
    return rc;
}

struct est {
    const struct done_set *done;
    int64_t n, b;
};

static int est_one(const struct sw_s3_object *o, const char *dst_key,
                   const struct sw_s3_object *there, void *ctx)
{
    struct est *e = ctx;
    if (o == NULL)
        return 0; /* only on the target: nothing to move */
    const struct done_rec *rec = find_done(e->done, dst_key);
    int same =
        there != NULL && there->size == o->size && (rec == NULL || strcmp(rec->etag, o->etag) == 0);
    if (!same) {
        e->n++;
        e->b += o->size;
    }
    return 0;
}

int sw_repl_estimate(const struct sw_repl_rule *rule, redisContext *journal, double bytes_per_s,
                     int64_t *objects, int64_t *bytes, double *seconds, struct sw_error *err)
{
    *objects = 0;
    *bytes = 0;
    *seconds = 0;
    int rc = 0;
    /* Both sides are merged page by page (sw_repl_compare): the memory an
     * estimate takes is a page of each, whatever the prefix holds. */
    for (size_t t = 0; t < rule->ntargets && rc == 0; t++) {
        const struct sw_repl_target *tg = &rule->targets[t];
        const char *dp = tg->prefix ? tg->prefix : rule->prefix;
        struct done_set done;
        rc = load_done(journal, rule->name, tg->name, &done, err);
        struct est e = {.done = &done};
        if (rc == 0) {
            struct s3_pages sp = {rule->src, rule->bucket, rule->prefix, NULL};
            struct s3_pages tp = {tg->s3, tg->bucket, dp, NULL};
            rc = sw_repl_compare(rule->prefix, s3_page, &sp, dp, s3_page, &tp, est_one, &e, err);
            sw_free(sp.token);
            sw_free(tp.token);
            if (rc != 0)
                sw_error_wrap(err, "rule %s, target %s", rule->name, tg->name);
        }
        if (e.b > *bytes || (e.b == *bytes && e.n > *objects)) {
            *bytes = e.b;
            *objects = e.n;
        }
        done_free(&done);
    }
    if (rc == 0 && bytes_per_s > 0)
        *seconds = (double)*bytes / bytes_per_s;
    return rc;
}
