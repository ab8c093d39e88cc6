/*
 * fuzz_s3_copyplan.c - libFuzzer target for the path from an S3 listing to
 * the requests a replication run sends: replication/s3xml.c parses
 * ListObjectsV2 answers (a store's, untrusted), replication/replicator.c
 * checks the listed keys and merges the source with the target page by
 * page (sw_repl_key_problem, sw_repl_compare), and replication/s3.c builds
 * the request paths of every copy (sw_s3_path, the URL's path and the URI
 * SigV4 signs).
 *
 * The input: the source prefix up to the first '\n', the target prefix up
 * to the next, then the source's listing and, after a NUL byte, the
 * target's; each listing is handed to the merge in pages of 1 to 4 objects
 * (the input's size picks). Promised, and checked here with code of its
 * own: a listing the run accepts holds only keys under its prefix,
 * non-empty, at most 1,024 bytes, without "." or ".." segments, in strictly
 * ascending byte order across its pages (anything else is refused with
 * SW_EPARSE); every copy planned goes from a key under the source prefix to
 * the target prefix plus the rest of that key, with the same rules; its
 * target match is the target object of exactly that key; every target
 * object no source object is copied to is reported as such; the keys
 * reported come in ascending order; and every path built is "/bucket/" (or
 * "/") followed by the key percent-encoded (unreserved characters, '/' and
 * upper-case %XX only), which decodes back to the key. A refusal names the
 * key. The batches a run plans from (sw_repl_batches, in batches of 1 to
 * 5, the input's size picks) hold each source object the merge reports,
 * in the same order with the same destination key and target match, none
 * past its batch size, and end as the merge does (the same code and
 * message).
 * Seeds: tests/fuzz/corpus/fuzz_s3_copyplan/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "fuzz.h"
#include "replication/replicator.h"
#include "replication/s3.h"
#include "replication/s3xml.h"

#define PREFIX_MAX 256

static int has_dot_segment(const char *k)
{
    for (const char *s = k;;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return 1;
        if (e == NULL)
            return 0;
        s = e + 1;
    }
}

/* What the S3 client promises to send, by this file's own reading. */
static int sendable(const char *key)
{
    return key[0] != '\0' && strlen(key) <= SW_S3_KEY_MAX && !has_dot_segment(key);
}

static int starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static int hexup(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static int unreserved(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* The path for `key` in `bucket`, both styles: well-formed, and decoding
 * back to exactly the bucket and key. */
static void check_path(const char *bucket, const char *key)
{
    for (int vhost = 0; vhost <= 1; vhost++) {
        struct sw_buf b;
        sw_buf_init(&b, 64 * 1024);
        struct sw_error err;
        int rc = sw_s3_path(&b, vhost, bucket, key, &err);
        if (rc == SW_ENOMEM) {
            sw_buf_free(&b);
            continue;
        }
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(b.data[0] == '/');
        char *dec = malloc(b.len + 1);
        FUZZ_CHECK(dec != NULL);
        size_t n = 0;
        for (size_t i = 0; i < b.len; i++) {
            char c = b.data[i];
            if (c == '%') {
                FUZZ_CHECK(i + 2 < b.len && hexup(b.data[i + 1]) && hexup(b.data[i + 2]));
                dec[n++] = (char)strtol((char[]){b.data[i + 1], b.data[i + 2], 0}, NULL, 16);
                i += 2;
            } else {
                FUZZ_CHECK(unreserved(c) || c == '/');
                dec[n++] = c;
            }
        }
        dec[n] = '\0';
        /* Nothing the server would read as a step up, or as the query. */
        FUZZ_CHECK(!has_dot_segment(b.data));
        const char *rest = dec + 1;
        if (!vhost) {
            FUZZ_CHECK(starts(rest, bucket) && rest[strlen(bucket)] == '/');
            rest += strlen(bucket) + 1;
        }
        FUZZ_CHECK(n - (size_t)(rest - dec) == strlen(key) && strcmp(rest, key) == 0);
        free(dec);
        sw_buf_free(&b);
    }
}

/* What the merge reported of the source, in order, to check the batches
 * against. */
struct reported {
    char **dst;
    int *there;
    size_t n, cap;
};

struct plan {
    const char *sp, *dp;
    const struct sw_s3_list *src, *dst;
    size_t src_calls, dst_calls;
    char *last; /* the last key reported (owned) */
    struct reported rep;
    int sound; /* both listings accepted whole (accepted()) */
};

/* Whether some source key is copied to `key`. */
static int mapped(const struct plan *p, const char *key)
{
    if (!starts(key, p->dp))
        return 0;
    for (size_t i = 0; i < p->src->n; i++)
        if (starts(p->src->objects[i].key, p->sp) &&
            strcmp(p->src->objects[i].key + strlen(p->sp), key + strlen(p->dp)) == 0)
            return 1;
    return 0;
}

static int on_object(const struct sw_s3_object *o, const char *dst_key,
                     const struct sw_s3_object *there, void *ctx)
{
    struct plan *p = ctx;
    FUZZ_CHECK(p->last == NULL || strcmp(p->last, dst_key) < 0);
    sw_free(p->last);
    p->last = sw_strdup(dst_key);
    FUZZ_CHECK(p->last != NULL);
    if (o == NULL) {
        p->dst_calls++;
        FUZZ_CHECK(there != NULL && strcmp(there->key, dst_key) == 0);
        FUZZ_CHECK(starts(dst_key, p->dp) && sendable(dst_key));
        /* Whether a source key maps to it is known only of listings that
         * are sound through their end: the merge reports as it goes, and a
         * key out of order on a later page is refused only when it comes. */
        FUZZ_CHECK(!p->sound || !mapped(p, dst_key));
        return 0;
    }
    p->src_calls++;
    if (p->rep.n == p->rep.cap) {
        size_t cap = p->rep.cap ? p->rep.cap * 2 : 16;
        char **d = realloc(p->rep.dst, cap * sizeof(*d));
        FUZZ_CHECK(d != NULL);
        p->rep.dst = d;
        int *t = realloc(p->rep.there, cap * sizeof(*t));
        FUZZ_CHECK(t != NULL);
        p->rep.there = t;
        p->rep.cap = cap;
    }
    p->rep.dst[p->rep.n] = strdup(dst_key);
    FUZZ_CHECK(p->rep.dst[p->rep.n] != NULL);
    p->rep.there[p->rep.n++] = there != NULL;
    FUZZ_CHECK(starts(o->key, p->sp) && sendable(o->key));
    FUZZ_CHECK(starts(dst_key, p->dp) && sendable(dst_key));
    FUZZ_CHECK(strcmp(dst_key + strlen(p->dp), o->key + strlen(p->sp)) == 0);
    int present = 0;
    for (size_t i = 0; i < p->dst->n; i++)
        present |= strcmp(p->dst->objects[i].key, dst_key) == 0;
    FUZZ_CHECK(!p->sound || present == (there != NULL));
    FUZZ_CHECK(there == NULL || strcmp(there->key, dst_key) == 0);
    if (there != NULL)
        p->dst_calls++;
    check_path("src-bucket", o->key);
    check_path("dst.bucket", dst_key);
    return 0;
}

struct batch_check {
    const struct reported *rep;
    size_t at, max;
};

static int on_batch(struct sw_repl_item *items, size_t n, void *ctx, struct sw_error *err)
{
    (void)err;
    struct batch_check *b = ctx;
    FUZZ_CHECK(n >= 1 && n <= b->max);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(b->at < b->rep->n);
        FUZZ_CHECK(strcmp(items[i].dst_key, b->rep->dst[b->at]) == 0);
        FUZZ_CHECK(items[i].there == b->rep->there[b->at]);
        b->at++;
    }
    return 0;
}

/* A listing as the run takes it: every key checked, in strictly ascending
 * byte order. Returns 1 when accepted. */
static int accepted(const char *prefix, const struct sw_s3_list *l)
{
    int ok_all = 1;
    for (size_t i = 0; i < l->n; i++) {
        const char *why = sw_repl_key_problem(prefix, l->objects[i].key);
        int ok = starts(l->objects[i].key, prefix) && sendable(l->objects[i].key);
        FUZZ_CHECK((why == NULL) == ok);
        if (!ok || (i > 0 && strcmp(l->objects[i - 1].key, l->objects[i].key) >= 0))
            ok_all = 0;
    }
    return ok_all;
}

/* Hands a parsed listing over in pages of `size` objects. */
struct pager {
    const struct sw_s3_list *l;
    size_t at, size;
};

static int next_page(void *ctx, struct sw_s3_list *page, struct sw_error *err)
{
    struct pager *g = ctx;
    memset(page, 0, sizeof(*page));
    size_t n = g->l->n - g->at < g->size ? g->l->n - g->at : g->size;
    if (n > 0) {
        page->objects = sw_calloc(n, sizeof(*page->objects));
        if (page->objects == NULL)
            return sw_error_set(err, SW_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        page->objects[i] = g->l->objects[g->at + i];
        page->objects[i].key = sw_strdup(g->l->objects[g->at + i].key);
        page->n++;
        if (page->objects[i].key == NULL) {
            sw_s3_list_free(page);
            return sw_error_set(err, SW_ENOMEM, "out of memory");
        }
    }
    g->at += n;
    page->truncated = g->at < g->l->n;
    return 0;
}

static int take_line(const uint8_t **d, size_t *n, char *out)
{
    const uint8_t *nl = memchr(*d, '\n', *n < PREFIX_MAX ? *n : PREFIX_MAX);
    if (nl == NULL)
        return -1;
    size_t l = (size_t)(nl - *d);
    if (memchr(*d, '\0', l) != NULL)
        return -1;
    memcpy(out, *d, l);
    out[l] = '\0';
    *d += l + 1;
    *n -= l + 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char sp[PREFIX_MAX + 1], dp[PREFIX_MAX + 1];
    if (take_line(&data, &size, sp) != 0 || take_line(&data, &size, dp) != 0)
        return 0;
    const uint8_t *nul = memchr(data, '\0', size);
    size_t slen = nul ? (size_t)(nul - data) : size;
    struct sw_error err;
    struct sw_s3_list src, dst;
    memset(&dst, 0, sizeof(dst));
    if (sw_s3xml_parse_list((const char *)data, slen, &src, &err) != 0)
        return 0;
    if (nul != NULL && sw_s3xml_parse_list((const char *)nul + 1, size - slen - 1, &dst, &err) != 0)
        memset(&dst, 0, sizeof(dst));
    size_t psize = 1 + size % 4;
    int ok = accepted(sp, &src) & accepted(dp, &dst);
    struct plan p = {.sp = sp, .dp = dp, .src = &src, .dst = &dst, .sound = ok};
    struct pager gs = {&src, 0, psize}, gd = {&dst, 0, psize};
    sw_error_clear(&err);
    int rc = sw_repl_compare(sp, next_page, &gs, dp, next_page, &gd, on_object, &p, &err);
    if (rc == 0) {
        FUZZ_CHECK(ok);
        FUZZ_CHECK(p.src_calls == src.n && p.dst_calls == dst.n);
    } else if (rc != SW_ENOMEM) {
        FUZZ_CHECK(rc == SW_EPARSE);
        if (ok) {
            /* Both listings are sound: only a join that makes an
             * unsendable key is refused. */
            FUZZ_CHECK(strstr(err.msg, "would be copied to") != NULL);
            const char *k = src.objects[p.src_calls].key;
            size_t n = strlen(dp) + strlen(k) - strlen(sp) + 1;
            char *d = malloc(n);
            FUZZ_CHECK(d != NULL);
            snprintf(d, n, "%s%s", dp, k + strlen(sp));
            FUZZ_CHECK(!sendable(d));
            free(d);
        }
    }
    /* The same listings, in batches: what the merge reported, no more. */
    char msg[sizeof(err.msg)];
    memcpy(msg, err.msg, sizeof(msg));
    struct batch_check bc = {&p.rep, 0, 1 + size % 5};
    struct pager bs = {&src, 0, psize}, bd = {&dst, 0, psize};
    struct sw_error berr;
    sw_error_clear(&berr);
    int brc = sw_repl_batches(sp, next_page, &bs, dp, next_page, &bd, bc.max, on_batch, &bc, &berr);
    if (rc != SW_ENOMEM && brc != SW_ENOMEM) {
        FUZZ_CHECK(brc == rc);
        if (rc == 0)
            FUZZ_CHECK(bc.at == p.rep.n);
        else
            FUZZ_CHECK(strcmp(berr.msg, msg) == 0 && bc.at <= p.rep.n);
    }
    for (size_t i = 0; i < p.rep.n; i++)
        free(p.rep.dst[i]);
    free(p.rep.dst);
    free(p.rep.there);
    sw_free(p.last);
    sw_s3_list_free(&src);
    sw_s3_list_free(&dst);
    return 0;
}
