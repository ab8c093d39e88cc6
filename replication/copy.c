/*
 * copy.c - one verified object copy: a small state machine on the loop.
 *
 *   small:      GET -> SHA-256 -> PUT (signed payload) -> ETag verify, or a
 *               HEAD when the ETag is not an MD5 that matches
 *   multipart:  HEAD source -> Create -> parts [GET range -> SHA-256 of
 *               the part on the thread pool -> UploadPart] x concurrency ->
 *               Complete -> (metadata) -> HEAD verify; Abort on failure
 *   server:     CopyObject, or Create -> UploadPartCopy x N -> Complete,
 *               -> HEAD verify
 *
 * The whole-object SHA-256 is fed in part order on the thread pool, one
 * job at a time per copy (a part's own SHA-256 is another job); a part's
 * buffer is released once it is both uploaded and hashed, and no part is
 * fetched further than a window ahead of the hash, so memory stays under
 * (2 x concurrency) parts.
 */
#include "replication/copy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "common/alloc.h"
#include "common/log.h"

#define MIN_PART  ((size_t)5 << 20)
#define MAX_PARTS 10000

struct part {
    struct copy *c;
    int idx;
    int64_t off;
    int64_t len;
    char *data; /* owned while fetched and not yet both hashed and uploaded */
    int fetched;
    int hashed;
    int uploaded;
    struct sw_throttle_slot slot; /* its share of the bandwidth limit */
    char sha[65];
    char etag[SW_S3_ETAG_MAX];
    uv_work_t work;
};

struct copy {
    struct sw_copy_spec spec; /* strings below are owned copies */
    char *src_bucket, *src_key, *dst_bucket, *dst_key;
    sw_copy_cb done;
    void *ctx;
    struct sw_copy_result res;
    char expect_sha[65];                /* known or from the source's metadata; "" if unknown */
    char src_etag[SW_S3_ETAG_MAX];      /* as the source sent it (quotes kept) */
    char src_etag_bare[SW_S3_ETAG_MAX]; /* recorded in the target's metadata */
    char md5[33];        /* small objects: the source's MD5 ETag, else the MD5 of the bytes sent */
    int meta_at_create;  /* sw-sha256 was set when the upload was created */
    int server;          /* server-side copy */
    int small_throttled; /* the small path reserved its bandwidth */
    EVP_MD_CTX *whole;   /* owned */
    struct sw_buf small;
    struct part *parts;
    int nparts;
    int next_fetch;
    int next_hash;  /* parts before it are in the whole-object hash */
    int whole_upto; /* parts [next_hash, whole_upto) are being hashed */
    int whole_busy; /* whole_work is queued or running */
    uv_work_t whole_work;
    int inflight; /* requests and thread-pool jobs outstanding */
    int uploaded;
    int failed;
    int finishing;
    uv_timer_t pump_timer;
    int timer_open;
};

int64_t sw_throttle_reserve(struct sw_throttle *t, int64_t now_ms, size_t n)
{
    if (t == NULL || t->bytes_per_s <= 0)
        return 0;
    int64_t start = t->next_free_ms > now_ms ? t->next_free_ms : now_ms;
    t->next_free_ms = start + (int64_t)((double)n * 1000.0 / t->bytes_per_s);
    return start - now_ms;
}

int64_t sw_throttle_wait(struct sw_throttle *t, struct sw_throttle_slot *s, int64_t now_ms,
                         size_t n)
{
    if (!s->reserved) {
        s->reserved = 1;
        s->start_ms = now_ms + sw_throttle_reserve(t, now_ms, n);
    }
    return s->start_ms > now_ms ? s->start_ms - now_ms : 0;
}

static uv_loop_t *loop_of(struct copy *c)
{
    return sw_s3_loop(c->spec.dst);
}

static void free_copy(struct copy *c)
{
    if (c->parts != NULL)
        for (int i = 0; i < c->nparts; i++)
            sw_free(c->parts[i].data);
    sw_free(c->parts);
    EVP_MD_CTX_free(c->whole);
    sw_buf_free(&c->small);
    sw_free(c->src_bucket);
    sw_free(c->src_key);
    sw_free(c->dst_bucket);
    sw_free(c->dst_key);
    sw_free((char *)c->spec.known_sha256);
    sw_free(c);
}

static void on_timer_closed(uv_handle_t *h)
{
    free_copy(h->data);
}

static void report(struct copy *c)
{
    c->done(&c->res, c->ctx);
    uv_timer_stop(&c->pump_timer);
    uv_close((uv_handle_t *)&c->pump_timer, on_timer_closed);
}

static void fail(struct copy *c, const struct sw_error *e);
static void maybe_abort_and_report(struct copy *c);

/* Sets the error (first one wins) without reporting yet. */
static void set_error(struct copy *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_error(struct copy *c, int code, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    c->res.rc = code;
    c->res.err.code = code;
    vsnprintf(c->res.err.msg, sizeof(c->res.err.msg), fmt, ap);
    va_end(ap);
}

static void fail(struct copy *c, const struct sw_error *e)
{
    if (!c->failed) {
        c->failed = 1;
        c->res.rc = e->code ? e->code : SW_EIO;
        c->res.err = *e;
        c->res.err.code = c->res.rc;
    }
    maybe_abort_and_report(c);
}

/* ---- verification --------------------------------------------------------- */

static void on_verify_head(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    struct sw_s3_head h;
    sw_s3_head_from_headers(r->http, &h);
    if (h.size != c->res.size)
        set_error(c, SW_EIO,
                  "store %s: verify s3://%s/%s: size is %" PRId64 " bytes after the copy, "
                  "expected %" PRId64,
                  sw_s3_name(c->spec.dst), c->dst_bucket, c->dst_key, h.size, c->res.size);
    else if (strcmp(h.sha256, c->res.sha256) != 0)
        set_error(c, SW_EIO,
                  "store %s: verify s3://%s/%s: sw-sha256 metadata is \"%s\" after the copy, "
                  "expected %s",
                  sw_s3_name(c->spec.dst), c->dst_bucket, c->dst_key, h.sha256, c->res.sha256);
    /* The object is complete by now: nothing to abort any more. */
    c->res.upload_id[0] = '\0';
    maybe_abort_and_report(c);
}

static void verify(struct copy *c)
{
    struct sw_s3_request req = {.method = "HEAD", .bucket = c->dst_bucket, .key = c->dst_key};
    struct sw_error e;
    if (sw_s3_send(c->spec.dst, &req, on_verify_head, c, &e) != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

static int check_sha(struct copy *c, const char *got)
{
    if (c->expect_sha[0] != '\0' && strcmp(c->expect_sha, got) != 0) {
        set_error(c, SW_EIO,
                  "store %s: s3://%s/%s: the bytes read hash to %s but the source's checksum is "
                  "%s (changed or corrupted on the way); not copied",
                  sw_s3_name(c->spec.src), c->src_bucket, c->src_key, got, c->expect_sha);
        return -1;
    }
    return 0;
}

/* ---- abort / finish ------------------------------------------------------- */

static void on_abort_done(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc == 0 || r->rc == SW_ENOENT) {
        c->res.aborted = 1;
    } else {
        SW_LOG(SW_LOG_WARN, "multipart abort failed", "store=%s bucket=%s upload=%s code=%s",
               sw_log_q(sw_s3_name(c->spec.dst)), sw_log_q(c->dst_bucket),
               sw_log_q(c->res.upload_id), sw_log_q(r->s3err.code));
    }
    report(c);
}

static void maybe_abort_and_report(struct copy *c)
{
    if (c->inflight > 0 || c->finishing)
        return;
    c->finishing = 1;
    if (c->failed && c->res.upload_id[0] != '\0') {
        struct sw_sigv4_pair q[] = {{"uploadId", c->res.upload_id}};
        struct sw_s3_request req = {.method = "DELETE",
                                    .bucket = c->dst_bucket,
                                    .key = c->dst_key,
                                    .query = q,
                                    .nquery = 1};
        struct sw_error e;
        if (sw_s3_send(c->spec.dst, &req, on_abort_done, c, &e) == 0) {
            c->inflight++;
            return;
        }
    }
    report(c);
}

static void set_src_etag(struct copy *c, const char *etag)
{
    snprintf(c->src_etag, sizeof(c->src_etag), "%s", etag);
    sw_s3_etag_bare(etag, c->src_etag_bare, sizeof(c->src_etag_bare));
}

/* ---- small objects ------------------------------------------------------ */

static void on_small_put(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    sw_buf_free(&c->small);
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    if (c->spec.on_bytes)
        c->spec.on_bytes(c->res.size, c->spec.ctx);
    /* The server answers a whole-object PUT with the MD5 of what it stored
     * as ETag (unless it encrypts with KMS): when it matches the source's
     * MD5 ETag, or else the MD5 of the bytes sent, the copy is verified
     * without another request. The PUT carried the SHA-256 as signed
     * payload hash and as metadata, so the server checked those bytes too.
     * Otherwise a HEAD decides. */
    char etag[SW_S3_ETAG_MAX], bare[SW_S3_ETAG_MAX];
    if (sw_http_header(r->http, "ETag", etag, sizeof(etag)) == 0) {
        sw_s3_etag_bare(etag, bare, sizeof(bare));
        if (c->md5[0] != '\0' && strcasecmp(bare, c->md5) == 0) {
            maybe_abort_and_report(c);
            return;
        }
    }
    verify(c);
}

static void on_small_get(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    c->small = r->http->body;
    sw_buf_init(&r->http->body, 0);
    struct sw_s3_head h;
    sw_s3_head_from_headers(r->http, &h);
    if (c->expect_sha[0] == '\0' && h.sha256[0] != '\0')
        memcpy(c->expect_sha, h.sha256, 65);
    set_src_etag(c, h.etag);
    c->res.size = (int64_t)c->small.len;
    sw_sha256_hex(c->small.data ? c->small.data : "", c->small.len, c->res.sha256);
    /* The target's ETag is compared with an MD5 once the PUT is done. A
     * source ETag shaped like one (a single-PUT object) is the MD5 of the
     * source's bytes: a target ETag equal to it proves that the bytes
     * arrived as the source holds them, GET included, without hashing them
     * a second time here. Otherwise the MD5 of the bytes sent is computed. */
    if (sw_s3_etag_is_md5(c->src_etag_bare)) {
        for (int i = 0; i < 32; i++)
            c->md5[i] = (char)tolower((unsigned char)c->src_etag_bare[i]);
        c->md5[32] = '\0';
    } else {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (EVP_Digest(c->small.data ? c->small.data : "", c->small.len, md, &mdlen, EVP_md5(),
                       NULL) == 1 &&
            mdlen == 16)
            sw_hex(md, 16, c->md5);
    }
    if (check_sha(c, c->res.sha256) != 0) {
        maybe_abort_and_report(c);
        return;
    }
    struct sw_sigv4_pair meta[] = {{SW_S3_META_SHA256, c->res.sha256},
                                   {SW_S3_META_SOURCE_ETAG, c->src_etag_bare}};
    struct sw_s3_request req = {.method = "PUT",
                                .bucket = c->dst_bucket,
                                .key = c->dst_key,
                                .headers = meta,
                                .nheaders = 2,
                                .body = c->small.data ? c->small.data : "",
                                .body_len = c->small.len,
                                .body_sha256 = c->res.sha256};
    struct sw_error e;
    if (sw_s3_send(c->spec.dst, &req, on_small_put, c, &e) != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

static int send_small_get(struct copy *c, struct sw_error *e)
{
    struct sw_s3_request req = {.method = "GET",
                                .bucket = c->src_bucket,
                                .key = c->src_key,
                                .max_body = (size_t)c->spec.part_size + 1};
    int rc = sw_s3_send(c->spec.src, &req, on_small_get, c, e);
    if (rc == 0)
        c->inflight++;
    return rc;
}

static void on_small_delay(uv_timer_t *t)
{
    struct copy *c = t->data;
    struct sw_error e;
    if (send_small_get(c, &e) != 0)
        fail(c, &e);
}

/* Starts the small path, after the bandwidth limit allows. Returns 0 or
 * the error of a request that could not even start (nothing reported). */
static int start_small_rc(struct copy *c, struct sw_error *e)
{
    /* Small objects take their share of the bandwidth limit too. */
    if (!c->small_throttled) {
        c->small_throttled = 1;
        int64_t wait = sw_throttle_reserve(c->spec.throttle, (int64_t)uv_now(loop_of(c)),
                                           (size_t)(c->res.size > 0 ? c->res.size : 0));
        if (wait > 0) {
            uv_timer_start(&c->pump_timer, on_small_delay, (uint64_t)wait, 0);
            return 0;
        }
    }
    return send_small_get(c, e);
}

static void start_small(struct copy *c)
{
    struct sw_error e;
    if (start_small_rc(c, &e) != 0)
        fail(c, &e);
}

/* ---- multipart ------------------------------------------------------------ */

static void pump(struct copy *c);
static void complete_upload(struct copy *c);

static void release_if_done(struct part *p)
{
    if (p->hashed && p->uploaded) {
        sw_free(p->data);
        p->data = NULL;
    }
}

static void check_all_done(struct copy *c);

/* The whole-object SHA-256 of parts [next_hash, whole_upto), on the thread
 * pool. One such job at a time per copy, so the parts go in in order; the
 * fields it reads do not change until it is done. */
static void whole_hash_work(uv_work_t *w)
{
    struct copy *c = w->data;
    for (int i = c->next_hash; i < c->whole_upto; i++)
        EVP_DigestUpdate(c->whole, c->parts[i].data, (size_t)c->parts[i].len);
}

static void hash_in_order(struct copy *c);

static void whole_hash_done(uv_work_t *w, int status)
{
    struct copy *c = w->data;
    c->inflight--;
    c->whole_busy = 0;
    if (status != 0) {
        /* Nothing cancels these jobs today; a job that did not run did
         * not hash its parts, and the copy cannot be completed. */
        set_error(c, SW_EIO, "copy s3://%s/%s: whole-object SHA-256 job did not run: %s",
                  c->src_bucket, c->src_key, uv_strerror(status));
        maybe_abort_and_report(c);
        return;
    }
    for (; c->next_hash < c->whole_upto; c->next_hash++) {
        c->parts[c->next_hash].hashed = 1;
        release_if_done(&c->parts[c->next_hash]);
    }
    /* check_all_done() reports a failure, the queueing's included once
     * nothing is in flight, or pumps, or completes the upload. */
    if (!c->failed)
        hash_in_order(c);
    check_all_done(c);
}

/* Feeds the fetched parts that come next in order to the whole-object
 * hash, off the loop: hashing a 16 MiB part takes milliseconds the loop
 * would otherwise not spend on the transfers. */
static void hash_in_order(struct copy *c)
{
    if (c->whole_busy)
        return;
    int upto = c->next_hash;
    while (upto < c->nparts && c->parts[upto].fetched)
        upto++;
    if (upto == c->next_hash)
        return;
    c->whole_upto = upto;
    c->whole_work.data = c;
    if (uv_queue_work(loop_of(c), &c->whole_work, whole_hash_work, whole_hash_done) != 0) {
        set_error(c, SW_EIO, "cannot queue work on the thread pool");
        return;
    }
    c->whole_busy = 1;
    c->inflight++;
}

static void check_all_done(struct copy *c)
{
    if (c->failed) {
        maybe_abort_and_report(c);
        return;
    }
    if (c->uploaded == c->nparts && (c->server || c->next_hash == c->nparts) && c->inflight == 0)
        complete_upload(c);
    else
        pump(c);
}

static void on_part_put(struct sw_s3_response *r, void *ctx)
{
    struct part *p = ctx;
    struct copy *c = p->c;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    if (c->server) {
        struct sw_error e;
        if (sw_s3xml_parse_etag_result(r->http->body.data, r->http->body.len, "CopyPartResult",
                                       p->etag, NULL, &e) != 0) {
            sw_error_wrap(&e, "store %s: UploadPartCopy s3://%s/%s part %d",
                          sw_s3_name(c->spec.dst), c->dst_bucket, c->dst_key, p->idx + 1);
            fail(c, &e);
            return;
        }
    } else if (sw_http_header(r->http, "ETag", p->etag, sizeof(p->etag)) != 0) {
        set_error(c, SW_EPARSE, "store %s: UploadPart s3://%s/%s part %d: no ETag in the reply",
                  sw_s3_name(c->spec.dst), c->dst_bucket, c->dst_key, p->idx + 1);
        maybe_abort_and_report(c);
        return;
    }
    p->uploaded = 1;
    c->uploaded++;
    release_if_done(p);
    if (c->spec.on_bytes)
        c->spec.on_bytes(p->len, c->spec.ctx);
    check_all_done(c);
}

static void upload_part(struct copy *c, struct part *p)
{
    char num[16];
    snprintf(num, sizeof(num), "%d", p->idx + 1);
    struct sw_sigv4_pair q[] = {{"partNumber", num}, {"uploadId", c->res.upload_id}};
    struct sw_s3_request req = {.method = "PUT",
                                .bucket = c->dst_bucket,
                                .key = c->dst_key,
                                .query = q,
                                .nquery = 2,
                                .body = p->data,
                                .body_len = (size_t)p->len,
                                .body_sha256 = p->sha};
    struct sw_buf src;
    sw_buf_init(&src, 8192);
    char range[80];
    struct sw_sigv4_pair h[2];
    if (c->server) {
        /* x-amz-copy-source is /bucket/key, URL-encoded. */
        sw_buf_add(&src, "/", 1);
        sw_sigv4_uri_encode(&src, c->src_bucket, strlen(c->src_bucket), 0);
        sw_buf_add(&src, "/", 1);
        sw_sigv4_uri_encode(&src, c->src_key, strlen(c->src_key), 1);
        snprintf(range, sizeof(range), "bytes=%" PRId64 "-%" PRId64, p->off, p->off + p->len - 1);
        h[0] = (struct sw_sigv4_pair){"x-amz-copy-source", src.data};
        h[1] = (struct sw_sigv4_pair){"x-amz-copy-source-range", range};
        req.headers = h;
        req.nheaders = 2;
        req.body = NULL;
        req.body_len = 0;
        req.body_sha256 = NULL;
    }
    struct sw_error e;
    int rc =
        src.len == 0 && c->server ? SW_ENOMEM : sw_s3_send(c->spec.dst, &req, on_part_put, p, &e);
    sw_buf_free(&src);
    if (rc != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

static void hash_part_work(uv_work_t *w)
{
    struct part *p = w->data;
    sw_sha256_hex(p->data, (size_t)p->len, p->sha);
}

static void hash_part_done(uv_work_t *w, int status)
{
    (void)status;
    struct part *p = w->data;
    struct copy *c = p->c;
    c->inflight--;
    if (c->failed) {
        maybe_abort_and_report(c);
        return;
    }
    upload_part(c, p);
}

static void on_part_get(struct sw_s3_response *r, void *ctx)
{
    struct part *p = ctx;
    struct copy *c = p->c;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    if ((int64_t)r->http->body.len != p->len) {
        set_error(c, SW_EIO,
                  "store %s: GET s3://%s/%s bytes %" PRId64 "-%" PRId64 ": got %zu bytes, expected "
                  "%" PRId64 " (the object changed during the copy?)",
                  sw_s3_name(c->spec.src), c->src_bucket, c->src_key, p->off, p->off + p->len - 1,
                  r->http->body.len, p->len);
        maybe_abort_and_report(c);
        return;
    }
    p->data = sw_buf_take(&r->http->body, NULL);
    p->fetched = 1;
    hash_in_order(c);
    p->work.data = p;
    if (uv_queue_work(loop_of(c), &p->work, hash_part_work, hash_part_done) != 0) {
        set_error(c, SW_EIO, "cannot queue work on the thread pool");
        maybe_abort_and_report(c);
        return;
    }
    c->inflight++;
}

static void fetch_part(struct copy *c, struct part *p)
{
    if (c->server) {
        upload_part(c, p);
        return;
    }
    char range[80];
    snprintf(range, sizeof(range), "bytes=%" PRId64 "-%" PRId64, p->off, p->off + p->len - 1);
    /* If-Match: every part comes from the version the HEAD saw. */
    struct sw_sigv4_pair h[] = {{"Range", range}, {"If-Match", c->src_etag}};
    struct sw_s3_request req = {.method = "GET",
                                .bucket = c->src_bucket,
                                .key = c->src_key,
                                .headers = h,
                                .nheaders = c->src_etag[0] ? 2 : 1,
                                .max_body = (size_t)p->len + 1};
    struct sw_error e;
    if (sw_s3_send(c->spec.src, &req, on_part_get, p, &e) != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

static void on_pump_timer(uv_timer_t *t)
{
    pump(t->data);
}

static void pump(struct copy *c)
{
    if (c->failed) {
        maybe_abort_and_report(c);
        return;
    }
    int window = 2 * c->spec.concurrency;
    /* In-flight parts are those fetched-or-fetching but not uploaded. */
    while (c->next_fetch < c->nparts && c->next_fetch - c->uploaded < c->spec.concurrency &&
           (c->server || c->next_fetch < c->next_hash + window)) {
        struct part *p = &c->parts[c->next_fetch];
        /* pump() also runs when a part is uploaded or hashed, not only
         * from the timer: a part whose reserved time has not come yet
         * waits for the rest of it whoever calls. */
        if (!c->server) {
            int64_t wait = sw_throttle_wait(c->spec.throttle, &p->slot, (int64_t)uv_now(loop_of(c)),
                                            (size_t)p->len);
            if (wait > 0) {
                uv_timer_start(&c->pump_timer, on_pump_timer, (uint64_t)wait, 0);
                return;
            }
        }
        c->next_fetch++;
        fetch_part(c, p);
        if (c->failed)
            return;
    }
}

static void on_meta_copy(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    verify(c);
}

/* Sets sw-sha256 on an object written without it, by copying the object
 * onto itself with new metadata (a metadata-only update on most servers). */
static void set_metadata(struct copy *c)
{
    struct sw_buf src;
    sw_buf_init(&src, 8192);
    sw_buf_add(&src, "/", 1);
    sw_sigv4_uri_encode(&src, c->dst_bucket, strlen(c->dst_bucket), 0);
    sw_buf_add(&src, "/", 1);
    sw_sigv4_uri_encode(&src, c->dst_key, strlen(c->dst_key), 1);
    struct sw_sigv4_pair h[] = {{"x-amz-copy-source", src.data ? src.data : ""},
                                {"x-amz-metadata-directive", "REPLACE"},
                                {SW_S3_META_SHA256, c->res.sha256},
                                {SW_S3_META_SOURCE_ETAG, c->src_etag_bare}};
    struct sw_s3_request req = {
        .method = "PUT", .bucket = c->dst_bucket, .key = c->dst_key, .headers = h, .nheaders = 4};
    struct sw_error e;
    int rc = src.data == NULL ? SW_ENOMEM : sw_s3_send(c->spec.dst, &req, on_meta_copy, c, &e);
    sw_buf_free(&src);
    if (rc != 0) {
        sw_error_set(&e, rc, "store %s: s3://%s/%s: cannot set metadata", sw_s3_name(c->spec.dst),
                     c->dst_bucket, c->dst_key);
        fail(c, &e);
        return;
    }
    c->inflight++;
}

static void on_complete(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    char etag[SW_S3_ETAG_MAX];
    struct sw_error e;
    if (sw_s3xml_parse_etag_result(r->http->body.data, r->http->body.len,
                                   "CompleteMultipartUploadResult", etag, NULL, &e) != 0) {
        sw_error_wrap(&e, "store %s: complete s3://%s/%s", sw_s3_name(c->spec.dst), c->dst_bucket,
                      c->dst_key);
        fail(c, &e);
        return;
    }
    /* The upload no longer exists once completed. */
    c->res.upload_id[0] = '\0';
    if (c->meta_at_create)
        verify(c);
    else
        set_metadata(c);
}

static void complete_upload(struct copy *c)
{
    if (!c->server) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        EVP_DigestFinal_ex(c->whole, md, &mdlen);
        sw_hex(md, mdlen, c->res.sha256);
        if (check_sha(c, c->res.sha256) != 0) {
            maybe_abort_and_report(c);
            return;
        }
    }
    struct sw_buf body;
    sw_buf_init(&body, (size_t)c->nparts * 160 + 128);
    int rc = sw_buf_adds(&body, "<CompleteMultipartUpload>");
    for (int i = 0; rc == 0 && i < c->nparts; i++) {
        /* ETags are hex in quotes; &quot; keeps the XML valid whatever they hold. */
        rc = sw_buf_addf(&body, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1);
        for (const char *s = c->parts[i].etag; rc == 0 && *s; s++)
            rc = *s == '"'   ? sw_buf_adds(&body, "&quot;")
                 : *s == '&' ? sw_buf_adds(&body, "&amp;")
                 : *s == '<' ? sw_buf_adds(&body, "&lt;")
                             : sw_buf_add(&body, s, 1);
        if (rc == 0)
            rc = sw_buf_adds(&body, "</ETag></Part>");
    }
    if (rc == 0)
        rc = sw_buf_adds(&body, "</CompleteMultipartUpload>");
    if (rc != 0) {
        sw_buf_free(&body);
        set_error(c, rc, "complete s3://%s/%s: %s", c->dst_bucket, c->dst_key, sw_strerror(rc));
        maybe_abort_and_report(c);
        return;
    }
    /* The body must outlive the request: keep it in c->small. */
    sw_buf_free(&c->small);
    c->small = body;
    struct sw_sigv4_pair q[] = {{"uploadId", c->res.upload_id}};
    struct sw_s3_request req = {.method = "POST",
                                .bucket = c->dst_bucket,
                                .key = c->dst_key,
                                .query = q,
                                .nquery = 1,
                                .body = c->small.data,
                                .body_len = c->small.len};
    struct sw_error e;
    if (sw_s3_send(c->spec.dst, &req, on_complete, c, &e) != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

static void on_create(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    char *id = NULL;
    struct sw_error e;
    if (sw_s3xml_parse_initiate(r->http->body.data, r->http->body.len, &id, &e) != 0) {
        sw_error_wrap(&e, "store %s: create upload s3://%s/%s", sw_s3_name(c->spec.dst),
                      c->dst_bucket, c->dst_key);
        fail(c, &e);
        return;
    }
    snprintf(c->res.upload_id, sizeof(c->res.upload_id), "%s", id);
    sw_free(id);
    /* An upload nobody recorded could not be found again after a crash:
     * one that cannot be recorded is aborted before any part is sent. */
    int rc = c->spec.on_upload ? c->spec.on_upload(c->res.upload_id, c->spec.ctx) : 0;
    if (rc != 0) {
        set_error(c, rc,
                  "store %s: s3://%s/%s: the multipart upload could not be journaled before its "
                  "first part (%s); aborted, nothing sent",
                  sw_s3_name(c->spec.dst), c->dst_bucket, c->dst_key, sw_strerror(rc));
        maybe_abort_and_report(c);
        return;
    }
    pump(c);
}

static void start_multipart(struct copy *c)
{
    int64_t ps = (int64_t)c->spec.part_size;
    if (c->server && ps < ((int64_t)512 << 20))
        ps = (int64_t)512 << 20;
    if ((c->res.size + ps - 1) / ps > MAX_PARTS)
        ps = (c->res.size + MAX_PARTS - 1) / MAX_PARTS;
    c->nparts = (int)((c->res.size + ps - 1) / ps);
    c->parts = sw_calloc((size_t)c->nparts, sizeof(*c->parts));
    if (c->parts == NULL) {
        struct sw_error e;
        sw_error_set(&e, SW_ENOMEM, "copy s3://%s/%s: out of memory", c->src_bucket, c->src_key);
        fail(c, &e);
        return;
    }
    for (int i = 0; i < c->nparts; i++) {
        c->parts[i].c = c;
        c->parts[i].idx = i;
        c->parts[i].off = (int64_t)i * ps;
        c->parts[i].len = i + 1 < c->nparts ? ps : c->res.size - (int64_t)i * ps;
    }
    c->whole = EVP_MD_CTX_new();
    if (c->whole == NULL || EVP_DigestInit_ex(c->whole, EVP_sha256(), NULL) != 1) {
        struct sw_error e;
        sw_error_set(&e, SW_ECRYPTO, "copy s3://%s/%s: cannot start SHA-256", c->src_bucket,
                     c->src_key);
        fail(c, &e);
        return;
    }
    struct sw_sigv4_pair meta[] = {{SW_S3_META_SHA256, c->expect_sha},
                                   {SW_S3_META_SOURCE_ETAG, c->src_etag_bare}};
    c->meta_at_create = c->expect_sha[0] != '\0';
    if (c->server)
        memcpy(c->res.sha256, c->expect_sha, 65);
    struct sw_sigv4_pair q[] = {{"uploads", ""}};
    struct sw_s3_request req = {.method = "POST",
                                .bucket = c->dst_bucket,
                                .key = c->dst_key,
                                .query = q,
                                .nquery = 1,
                                .headers = meta,
                                .nheaders = c->meta_at_create ? 2 : 0};
    struct sw_error e;
    if (sw_s3_send(c->spec.dst, &req, on_create, c, &e) != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

/* ---- server-side copy ------------------------------------------------------ */

static void on_copy_object(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    char etag[SW_S3_ETAG_MAX];
    struct sw_error e;
    if (sw_s3xml_parse_etag_result(r->http->body.data, r->http->body.len, "CopyObjectResult", etag,
                                   NULL, &e) != 0) {
        sw_error_wrap(&e, "store %s: copy to s3://%s/%s", sw_s3_name(c->spec.dst), c->dst_bucket,
                      c->dst_key);
        fail(c, &e);
        return;
    }
    if (c->spec.on_bytes)
        c->spec.on_bytes(c->res.size, c->spec.ctx);
    verify(c);
}

static void start_server_copy(struct copy *c)
{
    c->res.server_side = 1;
    memcpy(c->res.sha256, c->expect_sha, 65);
    if (c->res.size > SW_COPY_MAX_SINGLE_COPY) {
        start_multipart(c);
        return;
    }
    struct sw_buf src;
    sw_buf_init(&src, 8192);
    sw_buf_add(&src, "/", 1);
    sw_sigv4_uri_encode(&src, c->src_bucket, strlen(c->src_bucket), 0);
    sw_buf_add(&src, "/", 1);
    sw_sigv4_uri_encode(&src, c->src_key, strlen(c->src_key), 1);
    struct sw_sigv4_pair h[] = {{"x-amz-copy-source", src.data ? src.data : ""},
                                {"x-amz-metadata-directive", "REPLACE"},
                                {SW_S3_META_SHA256, c->res.sha256},
                                {SW_S3_META_SOURCE_ETAG, c->src_etag_bare},
                                {"x-amz-copy-source-if-match", c->src_etag}};
    struct sw_s3_request req = {.method = "PUT",
                                .bucket = c->dst_bucket,
                                .key = c->dst_key,
                                .headers = h,
                                .nheaders = c->src_etag[0] ? 5 : 4};
    struct sw_error e;
    int rc = src.data == NULL ? SW_ENOMEM : sw_s3_send(c->spec.dst, &req, on_copy_object, c, &e);
    sw_buf_free(&src);
    if (rc != 0) {
        fail(c, &e);
        return;
    }
    c->inflight++;
}

/* ---- start ------------------------------------------------------------------ */

static void on_src_head(struct sw_s3_response *r, void *ctx)
{
    struct copy *c = ctx;
    c->inflight--;
    if (r->rc != 0) {
        fail(c, &r->err);
        return;
    }
    struct sw_s3_head h;
    sw_s3_head_from_headers(r->http, &h);
    c->res.size = h.size;
    set_src_etag(c, h.etag);
    if (c->expect_sha[0] == '\0' && h.sha256[0] != '\0')
        memcpy(c->expect_sha, h.sha256, 65);
    if (c->spec.allow_server_copy && sw_s3_same_endpoint(c->spec.src, c->spec.dst) &&
        c->expect_sha[0] != '\0') {
        c->server = 1;
        start_server_copy(c);
    } else if (c->res.size <= (int64_t)c->spec.part_size) {
        start_small(c);
    } else {
        start_multipart(c);
    }
}

int sw_copy_start(const struct sw_copy_spec *spec, sw_copy_cb done, void *ctx, struct sw_error *err)
{
    struct copy *c = sw_calloc(1, sizeof(*c));
    if (c == NULL)
        return sw_error_set(err, SW_ENOMEM, "copy: out of memory");
    c->spec = *spec;
    c->done = done;
    c->ctx = ctx;
    c->src_bucket = sw_strdup(spec->src_bucket);
    c->src_key = sw_strdup(spec->src_key);
    c->dst_bucket = sw_strdup(spec->dst_bucket);
    c->dst_key = sw_strdup(spec->dst_key);
    c->spec.known_sha256 = spec->known_sha256 ? sw_strdup(spec->known_sha256) : NULL;
    sw_buf_init(&c->small, 0);
    if (!c->src_bucket || !c->src_key || !c->dst_bucket || !c->dst_key ||
        (spec->known_sha256 && !c->spec.known_sha256)) {
        free_copy(c);
        return sw_error_set(err, SW_ENOMEM, "copy: out of memory");
    }
    if (c->spec.part_size == 0)
        c->spec.part_size = SW_COPY_DEFAULT_PART;
    if (c->spec.part_size < MIN_PART)
        c->spec.part_size = MIN_PART;
    if (c->spec.concurrency <= 0)
        c->spec.concurrency = 4;
    if (spec->known_sha256 && strlen(spec->known_sha256) == 64)
        memcpy(c->expect_sha, spec->known_sha256, 65);
    c->res.size = spec->size;
    uv_timer_init(loop_of(c), &c->pump_timer);
    c->pump_timer.data = c;

    /* Small objects known by the listing go straight to GET (whose headers
     * carry the metadata); larger ones, and server-side candidates, start
     * with a HEAD of the source. */
    int server_candidate = spec->allow_server_copy && sw_s3_same_endpoint(spec->src, spec->dst);
    struct sw_error e;
    int rc;
    if (!server_candidate && spec->size >= 0 && spec->size <= (int64_t)c->spec.part_size) {
        rc = start_small_rc(c, &e);
        if (rc == 0)
            return 0;
    } else {
        struct sw_s3_request req = {.method = "HEAD", .bucket = c->src_bucket, .key = c->src_key};
        rc = sw_s3_send(c->spec.src, &req, on_src_head, c, &e);
    }
    if (rc != 0) {
        if (err)
            *err = e;
        /* The timer is open: close it and free from the loop. */
        uv_close((uv_handle_t *)&c->pump_timer, on_timer_closed);
        return rc;
    }
    c->inflight++;
    return 0;
}

int sw_copy_abort_sync(struct sw_s3 *dst, const char *bucket, const char *key,
                       const char *upload_id, struct sw_error *err)
{
    struct sw_sigv4_pair q[] = {{"uploadId", upload_id}};
    struct sw_s3_request req = {
        .method = "DELETE", .bucket = bucket, .key = key, .query = q, .nquery = 1};
    struct sw_s3_result r;
    sw_s3_do(dst, &req, &r);
    sw_s3_result_free(&r);
    if (r.rc == SW_ENOENT)
        r.rc = 0;
    if (r.rc != 0 && err)
        *err = r.err;
    return r.rc;
}
