/*
 * replicator.c - one run of a replication rule: recover the journal, list
 * both sides, plan, copy with bounded concurrency, record, report RPO.
 *
 * The source and each target are merged page by page and planned in
 * batches (sw_repl_batches); a batch's copies run on the loop through
 * copy.c while the next pages are listed and planned, so a run holds a
 * page of each side, two batches and the copies in flight, whatever the
 * prefix holds.
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

/* ---- batches ------------------------------------------------------------- */

struct batcher {
    struct sw_repl_item *v;
    size_t n, cap;
    sw_repl_batch_fn fn;
    void *ctx;
    struct sw_error *err;
};

static void items_free(struct sw_repl_item *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sw_free(v[i].src_key);
        sw_free(v[i].dst_key);
        v[i].src_key = v[i].dst_key = NULL;
    }
}

static int batch_flush(struct batcher *b)
{
    if (b->n == 0)
        return 0;
    int rc = b->fn(b->v, b->n, b->ctx, b->err);
    items_free(b->v, b->n);
    b->n = 0;
    return rc;
}

static int batch_add(const struct sw_s3_object *o, const char *dst_key,
                     const struct sw_s3_object *there, void *ctx)
{
    struct batcher *b = ctx;
    if (o == NULL)
        return 0; /* only on the target: nothing to plan */
    struct sw_repl_item *it = &b->v[b->n];
    memset(it, 0, sizeof(*it));
    it->src_key = sw_strdup(o->key);
    it->dst_key = sw_strdup(dst_key);
    if (it->src_key == NULL || it->dst_key == NULL) {
        items_free(it, 1);
        return sw_error_set(b->err, SW_ENOMEM, "listed key \"%.200s\": out of memory", o->key);
    }
    memcpy(it->etag, o->etag, sizeof(it->etag));
    it->etag[sizeof(it->etag) - 1] = '\0';
    it->size = o->size;
    it->last_modified_ms = o->last_modified_ms;
    it->there = there != NULL;
    it->there_size = there != NULL ? there->size : 0;
    b->n++;
    return b->n == b->cap ? batch_flush(b) : 0;
}

int sw_repl_batches(const char *src_prefix, sw_repl_page_fn src_pages, void *src_ctx,
                    const char *dst_prefix, sw_repl_page_fn dst_pages, void *dst_ctx, size_t batch,
                    sw_repl_batch_fn fn, void *ctx, struct sw_error *err)
{
    if (batch == 0)
        batch = 1;
    struct batcher b = {.cap = batch, .fn = fn, .ctx = ctx, .err = err};
    b.v = sw_calloc(batch, sizeof(*b.v));
    if (b.v == NULL)
        return sw_error_set(err, SW_ENOMEM, "comparing listings: out of memory");
    int rc = sw_repl_compare(src_prefix, src_pages, src_ctx, dst_prefix, dst_pages, dst_ctx,
                             batch_add, &b, err);
    if (rc == 0)
        rc = batch_flush(&b);
    items_free(b.v, b.n);
    sw_free(b.v);
    return rc;
}

int sw_repl_done_parse(const char *v, struct sw_repl_done *out)
{
    memset(out, 0, sizeof(*out));
    if (v == NULL || sscanf(v, "%127s %" SCNd64 " %64s", out->etag, &out->size, out->sha) != 3) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    return 0;
}

enum sw_repl_plan sw_repl_plan(const struct sw_repl_item *it, const struct sw_repl_done *rec,
                               char known_sha[65])
{
    known_sha[0] = '\0';
    if (rec != NULL && strcmp(rec->etag, it->etag[0] ? it->etag : "-") == 0 &&
        rec->size == it->size)
        memcpy(known_sha, rec->sha, 65);
    if (!it->there)
        return SW_REPL_COPY;
    if (it->there_size == it->size && known_sha[0] != '\0')
        return SW_REPL_SKIP; /* verified earlier, same source version, still there */
    return SW_REPL_CHECK;
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

static void journal_key(char *out, size_t n, const char *rule, const char *what, const char *target)
{
    snprintf(out, n, "sw:repl:%s:%s%s%s", rule, what, target ? ":" : "", target ? target : "");
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

/* The done records of a batch's destination keys on one target, by one
 * HMGET (what a run or an estimate holds of the journal is a batch's
 * records, whatever the hash holds). has[i] says whether items[i] has a
 * readable one. An answer of the wrong shape reads as no records: it only
 * costs a check on the target. */
static int lookup_done(redisContext *j, const char *rule, const char *target,
                       const struct sw_repl_item *items, size_t n, struct sw_repl_done *recs,
                       int *has, struct sw_error *err)
{
    for (size_t i = 0; i < n; i++)
        has[i] = 0;
    if (j == NULL || n == 0)
        return 0;
    char k[512];
    journal_key(k, sizeof(k), rule, "done", target);
    const char **argv = sw_calloc(n + 2, sizeof(*argv));
    size_t *len = sw_calloc(n + 2, sizeof(*len));
    if (argv == NULL || len == NULL) {
        sw_free(argv);
        sw_free(len);
        return sw_error_set(err, SW_ENOMEM, "journal: out of memory");
    }
    argv[0] = "HMGET";
    argv[1] = k;
    for (size_t i = 0; i < n; i++)
        argv[i + 2] = items[i].dst_key;
    for (size_t i = 0; i < n + 2; i++)
        len[i] = strlen(argv[i]);
    redisReply *r = NULL;
    int rc = sw_redis_sync_command_argv(j, &r, err, (int)(n + 2), argv, len);
    sw_free(argv);
    sw_free(len);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == n) {
        for (size_t i = 0; i < n; i++)
            if (r->element[i]->type == REDIS_REPLY_STRING)
                has[i] = sw_repl_done_parse(r->element[i]->str, &recs[i]) == 0;
    } else {
        SW_LOG(SW_LOG_WARN,
               "journal: HMGET answered out of shape; the batch is checked on the target",
               "rule=%s target=%s", sw_log_q(rule), sw_log_q(target));
    }
    freeReplyObject(r);
    return 0;
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

/* One object x target copy, planned: what it needs of the source object
 * is copied in, since the page it was listed on is gone by the time it
 * runs. Freed when the copy ends. */
struct job {
    struct run *run;
    size_t target;
    char *src_key, *dst_key;
    char etag[SW_S3_ETAG_MAX];
    int64_t size, last_modified_ms;
    char known_sha[65];
    int upload_journaled; /* its multipart upload id is in the journal */
};

/* The batch a run plans at a time: the merge hands on this many source
 * objects (a listing page's worth), their done records are read by one
 * HMGET, and their copies queue behind the batch before. What a run holds
 * is a page of each side, the batch being planned, the one queued and the
 * copies in flight (at most `concurrency`), whatever the prefix holds. */
#define PLAN_BATCH 1000

struct run {
    const struct sw_repl_rule *rule;
    redisContext *j;
    size_t target;      /* the target being planned */
    int count_source;   /* the first target's merge counts the source */
    struct job **queue; /* planned, not started: queue[qhead .. qhead+qn) */
    size_t qhead, qn;
    struct job **planned; /* the batch being planned */
    struct sw_repl_done *recs;
    int *has;
    size_t active;           /* copies in flight */
    int64_t *oldest_pending; /* per target, ms; INT64_MAX if none */
    struct sw_throttle throttle;
    struct sw_repl_stats *st;
    struct sw_repl_progress prog;
    sw_repl_progress_cb progress;
    void *ctx;
    int64_t last_progress_ms;
    int jpending; /* pipelined journal writes whose replies are unread */
};

static void job_free(struct job *jb)
{
    if (jb == NULL)
        return;
    sw_free(jb->src_key);
    sw_free(jb->dst_key);
    sw_free(jb);
}

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
    char k[512];
    if (jb->upload_journaled && (res->upload_id[0] == '\0' || res->aborted)) {
        journal_key(k, sizeof(k), r->rule->name, "uploads", NULL);
        journal_pipelined(r, "HDEL %s %s\n%s", k, tg->name, jb->dst_key);
    }
    r->active--;
    r->prog.objects_done++;
    if (res->rc == 0) {
        r->st->copied++;
        r->st->bytes_copied += res->size;
        record_done(r, tg->name, jb->dst_key, jb->etag, res->size, res->sha256);
    } else {
        r->st->failed++;
        if (r->st->first_error.code == 0)
            r->st->first_error = res->err;
        if (jb->last_modified_ms < r->oldest_pending[jb->target])
            r->oldest_pending[jb->target] = jb->last_modified_ms;
        SW_LOG(SW_LOG_WARN, "copy failed", "rule=%s target=%s code=%s", sw_log_q(r->rule->name),
               sw_log_q(tg->name), sw_err_name(res->rc));
    }
    job_free(jb);
    report_progress(r, 0);
    start_next(r);
}

/* Starts queued copies while fewer than `concurrency` are in flight. Runs
 * from a copy's end too (on the loop, while a listing page or a HEAD of
 * the next batch is awaited): it only takes from the queue, which the
 * planning fills only when it is empty. */
static void start_next(struct run *r)
{
    int limit = r->rule->concurrency > 0 ? r->rule->concurrency : 16;
    while (r->qn > 0 && r->active < (size_t)limit) {
        struct job *jb = r->queue[r->qhead++];
        r->qn--;
        const struct sw_repl_target *tg = &r->rule->targets[jb->target];
        struct sw_copy_spec spec = {
            .src = r->rule->src,
            .src_bucket = r->rule->bucket,
            .src_key = jb->src_key,
            .dst = tg->s3,
            .dst_bucket = tg->bucket,
            .dst_key = jb->dst_key,
            .size = jb->size,
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
            r->prog.objects_done++;
            if (r->st->first_error.code == 0)
                r->st->first_error = e;
            job_free(jb);
            continue;
        }
        r->active++;
    }
    if (r->qn == 0)
        r->qhead = 0;
}

/* Decides whether the job's object must go to its target; fills
 * jb->known_sha. The listings and the journal decide (sw_repl_plan); an
 * object on the target that they do not prove the same is compared by
 * HEAD. */
static int plan_one(struct run *r, const struct sw_repl_item *it, const struct sw_repl_done *rec,
                    struct job *jb, int *conflict, struct sw_error *err)
{
    const struct sw_repl_target *tg = &r->rule->targets[jb->target];
    *conflict = 0;
    enum sw_repl_plan p = sw_repl_plan(it, rec, jb->known_sha);
    if (p == SW_REPL_COPY)
        return 1;
    if (p == SW_REPL_SKIP)
        return 0;
    /* Compare checksums by metadata. */
    struct sw_s3_head th, sh;
    struct sw_error e;
    if (sw_s3_head_sync(tg->s3, tg->bucket, jb->dst_key, &th, &e) != 0)
        return 1;
    /* The target says which source version it was copied from and what its
     * bytes hash to (both checked when it was written). */
    char bare[SW_S3_ETAG_MAX];
    sw_s3_etag_bare(jb->etag, bare, sizeof(bare));
    if (th.size == jb->size && th.sha256[0] != '\0' && bare[0] != '\0' &&
        strcmp(th.source_etag, bare) == 0) {
        record_done(r, tg->name, jb->dst_key, jb->etag, jb->size, th.sha256);
        return 0;
    }
    if (jb->known_sha[0] == '\0') {
        if (sw_s3_head_sync(r->rule->src, r->rule->bucket, jb->src_key, &sh, err) != 0)
            return -1;
        memcpy(jb->known_sha, sh.sha256, 65);
    }
    int same = th.size == jb->size && th.sha256[0] != '\0' && strcmp(th.sha256, jb->known_sha) == 0;
    if (same) {
        record_done(r, tg->name, jb->dst_key, jb->etag, jb->size, th.sha256);
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
                     r->rule->name, tg->bucket, jb->dst_key, tg->name, r->rule->bucket, jb->src_key,
                     th.size, jb->size, th.source_etag[0] ? th.source_etag : "unknown", bare);
        return 0;
    }
    return 1;
}

/* Plans one batch of the merge for the current target (sw_repl_batches):
 * reads its done records, decides each object, then queues the copies once
 * the batch before has all started, and returns to the merge while they
 * run: the next pages are listed and planned with at most `concurrency`
 * copies in flight and one batch queued. */
static int plan_batch(struct sw_repl_item *items, size_t n, void *ctx, struct sw_error *err)
{
    struct run *r = ctx;
    const struct sw_repl_rule *rule = r->rule;
    const struct sw_repl_target *tg = &rule->targets[r->target];
    if (r->count_source) {
        r->st->listed += (int64_t)n;
        for (size_t i = 0; i < n; i++)
            r->st->bytes_listed += items[i].size;
    }
    if (r->j != NULL)
        journal_drain(r); /* the HMGET's reply must not be a pipelined write's */
    int rc = lookup_done(r->j, rule->name, tg->name, items, n, r->recs, r->has, err);
    if (rc != 0)
        return sw_error_wrap(err, "rule %s, target %s: reading the journal", rule->name, tg->name);
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_repl_item *it = &items[i];
        struct job *jb = sw_calloc(1, sizeof(*jb));
        if (jb == NULL) {
            rc = sw_error_set(err, SW_ENOMEM, "rule %s: out of memory", rule->name);
            break;
        }
        jb->run = r;
        jb->target = r->target;
        jb->src_key = items[i].src_key;
        jb->dst_key = items[i].dst_key;
        items[i].src_key = items[i].dst_key = NULL;
        memcpy(jb->etag, it->etag, sizeof(jb->etag));
        jb->size = it->size;
        jb->last_modified_ms = it->last_modified_ms;
        int conflict = 0;
        struct sw_error pe;
        sw_error_clear(&pe);
        int need = plan_one(r, it, r->has[i] ? &r->recs[i] : NULL, jb, &conflict, &pe);
        if (need < 0 || conflict) {
            r->st->failed++;
            if (r->st->first_error.code == 0)
                r->st->first_error = pe;
            if (jb->last_modified_ms < r->oldest_pending[r->target])
                r->oldest_pending[r->target] = jb->last_modified_ms;
            need = 0;
        } else if (need == 0) {
            r->st->skipped++;
        }
        if (need) {
            r->prog.objects_total++;
            r->prog.bytes_total += jb->size;
            r->planned[np++] = jb;
        } else {
            job_free(jb);
        }
    }
    if (rc != 0) {
        for (size_t i = 0; i < np; i++)
            job_free(r->planned[i]);
        return rc;
    }
    /* The batch before has all started: its place in the queue is free. */
    uv_loop_t *loop = sw_s3_loop(rule->src);
    while (r->qn > 0)
        uv_run(loop, UV_RUN_ONCE);
    if (np > 0)
        memcpy(r->queue, r->planned, np * sizeof(*r->queue));
    r->qhead = 0;
    r->qn = np;
    report_progress(r, 0);
    start_next(r);
    return 0;
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
    r.queue = sw_calloc(PLAN_BATCH, sizeof(*r.queue));
    r.planned = sw_calloc(PLAN_BATCH, sizeof(*r.planned));
    r.recs = sw_calloc(PLAN_BATCH, sizeof(*r.recs));
    r.has = sw_calloc(PLAN_BATCH, sizeof(*r.has));
    if (r.queue == NULL || r.planned == NULL || r.recs == NULL || r.has == NULL)
        rc = sw_error_set(err, SW_ENOMEM, "rule %s: out of memory", rule->name);
    /* Each target is merged with the source page by page (the source is
     * listed once per target), and planned and copied batch by batch. */
    for (size_t t = 0; t < rule->ntargets && rc == 0; t++) {
        const struct sw_repl_target *tg = &rule->targets[t];
        const char *dp = tg->prefix ? tg->prefix : rule->prefix;
        r.target = t;
        r.count_source = t == 0;
        struct s3_pages sp = {rule->src, rule->bucket, rule->prefix, NULL};
        struct s3_pages tp = {tg->s3, tg->bucket, dp, NULL};
        rc = sw_repl_batches(rule->prefix, s3_page, &sp, dp, s3_page, &tp, PLAN_BATCH, plan_batch,
                             &r, err);
        sw_free(sp.token);
        sw_free(tp.token);
        if (rc != 0 && err != NULL && strncmp(err->msg, "rule ", 5) != 0)
            sw_error_wrap(err, "rule %s, target %s", rule->name, tg->name);
    }
    /* A refusal stops the run: what is queued is not started, what is in
     * flight ends (and is journaled) first. */
    if (rc != 0) {
        for (size_t i = 0; i < r.qn; i++)
            job_free(r.queue[r.qhead + i]);
        r.qn = 0;
    }
    uv_loop_t *loop = sw_s3_loop(rule->src);
    while (r.active > 0 || r.qn > 0)
        uv_run(loop, UV_RUN_ONCE);
    if (rc == 0) {
        SW_LOG(SW_LOG_INFO, "replication run",
               "rule=%s listed=%" PRId64 " copied=%" PRId64 " skipped=%" PRId64 " failed=%" PRId64,
               sw_log_q(rule->name), st->listed, st->copied, st->skipped, st->failed);
        report_progress(&r, 1);
    }
    if (journal != NULL)
        journal_drain(&r);
    int64_t now = sw_now_ms(sw_clock_system());
    /* A run that ended early (a listing refused, the journal lost) did not
     * see every object: it knows nothing of what is pending, so the RPO
     * records keep what the last complete run said. */
    for (size_t t = 0; t < rule->ntargets && rc == 0; t++) {
        st->rpo_ms[t] = oldest[t] == INT64_MAX ? 0 : now - oldest[t];
        char k[512];
        journal_key(k, sizeof(k), rule->name, "rpo", rule->targets[t].name);
        char v[64];
        snprintf(v, sizeof(v), "%" PRId64 " %" PRId64,
                 oldest[t] == INT64_MAX ? (int64_t)0 : oldest[t], now);
        journal_cmd(journal, "SET %s %s", k, v);
    }
    sw_free(r.queue);
    sw_free(r.planned);
    sw_free(r.recs);
    sw_free(r.has);
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
    redisContext *j;
    const char *rule, *target;
    struct sw_repl_done *recs;
    int *has;
    int64_t n, b;
};

static int est_batch(struct sw_repl_item *items, size_t n, void *ctx, struct sw_error *err)
{
    struct est *e = ctx;
    int rc = lookup_done(e->j, e->rule, e->target, items, n, e->recs, e->has, err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const struct sw_repl_item *o = &items[i];
        int same = o->there && o->there_size == o->size &&
                   (!e->has[i] || strcmp(e->recs[i].etag, o->etag) == 0);
        if (!same) {
            e->n++;
            e->b += o->size;
        }
    }
    return 0;
}

int sw_repl_estimate(const struct sw_repl_rule *rule, redisContext *journal, double bytes_per_s,
                     int64_t *objects, int64_t *bytes, double *seconds, struct sw_error *err)
{
    *objects = 0;
    *bytes = 0;
    *seconds = 0;
    struct sw_repl_done *recs = sw_calloc(PLAN_BATCH, sizeof(*recs));
    int *has = sw_calloc(PLAN_BATCH, sizeof(*has));
    int rc = 0;
    if (recs == NULL || has == NULL)
        rc = sw_error_set(err, SW_ENOMEM, "rule %s: out of memory", rule->name);
    /* Both sides are merged page by page and the journal read batch by
     * batch (sw_repl_batches): the memory an estimate takes is a page of
     * each side and a batch, whatever the prefix holds. */
    for (size_t t = 0; t < rule->ntargets && rc == 0; t++) {
        const struct sw_repl_target *tg = &rule->targets[t];
        const char *dp = tg->prefix ? tg->prefix : rule->prefix;
        struct est e = {journal, rule->name, tg->name, recs, has, 0, 0};
        struct s3_pages sp = {rule->src, rule->bucket, rule->prefix, NULL};
        struct s3_pages tp = {tg->s3, tg->bucket, dp, NULL};
        rc = sw_repl_batches(rule->prefix, s3_page, &sp, dp, s3_page, &tp, PLAN_BATCH, est_batch,
                             &e, err);
        sw_free(sp.token);
        sw_free(tp.token);
        if (rc != 0)
            sw_error_wrap(err, "rule %s, target %s", rule->name, tg->name);
        if (e.b > *bytes || (e.b == *bytes && e.n > *objects)) {
            *bytes = e.b;
            *objects = e.n;
        }
    }
    sw_free(recs);
    sw_free(has);
    if (rc == 0 && bytes_per_s > 0)
        *seconds = (double)*bytes / bytes_per_s;
    return rc;
}
