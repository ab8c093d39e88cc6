/* Tests for how listed keys become request paths: replication/replicator.c's
 * check of listed keys (only keys under the prefix asked for) and of the
 * keys they are copied to, and replication/s3.c's rule for every key it
 * sends (encoded per segment; empty, overlong and dot-segment keys
 * refused); and the batches a run plans from the merge of the listings,
 * the journal's records and the decision made from them alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
#include "replication/replicator.h"
#include "replication/s3.h"

static void test_keys(void **state)
{
    (void)state;
    assert_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/model.bin"));
    assert_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/a/b/c..d"));
    assert_null(sw_repl_key_problem("", "x/...")); /* "..." is a name, not a step up */
    assert_null(sw_repl_key_problem("", "x//y"));  /* empty segments are S3 names */
    assert_null(sw_repl_key_problem("", "/x"));
    assert_null(sw_repl_key_problem("out/", "out/")); /* a "folder" marker */
    /* A pod's key that climbs out of its prefix. */
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/../../team-b/x"));
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/./x"));
    assert_non_null(sw_repl_key_problem("out/", "out/.."));
    assert_non_null(sw_repl_key_problem("", "./x"));
    assert_non_null(sw_repl_key_problem("", ".."));
    /* A listing that answers with another prefix's key (shorter, or beside). */
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "out/"));
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "other/attempt-1/x"));
    /* An empty key would make the copy's requests name the bucket itself
     * (PUT /bucket/ creates a bucket); a key longer than S3's limit is not
     * one S3 lists. */
    assert_non_null(sw_repl_key_problem("", ""));
    char key[SW_S3_KEY_MAX + 2];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    assert_non_null(sw_repl_key_problem("", key));
    key[SW_S3_KEY_MAX] = '\0';
    assert_null(sw_repl_key_problem("", key));
}

static void assert_path(int vhost, const char *bucket, const char *key, const char *want)
{
    struct sw_buf b;
    sw_buf_init(&b, 64 * 1024);
    struct sw_error err;
    assert_int_equal(sw_s3_path(&b, vhost, bucket, key, &err), 0);
    assert_string_equal(b.data, want);
    sw_buf_free(&b);
}

static void assert_refused(const char *bucket, const char *key, const char *says)
{
    struct sw_buf b;
    sw_buf_init(&b, 64 * 1024);
    assert_int_equal(sw_buf_add(&b, "X", 1), 0);
    struct sw_error err;
    assert_int_equal(sw_s3_path(&b, 0, bucket, key, &err), SW_EINVAL);
    assert_string_equal(b.data, "X"); /* nothing appended */
    assert_non_null(strstr(err.msg, says));
    sw_buf_free(&b);
}

/* Every byte that means something in a URL or a path travels encoded, and
 * the path is the one SigV4 signs. */
static void test_path_encoded(void **state)
{
    (void)state;
    assert_path(0, "bkt", "a b/c?d#e%f", "/bkt/a%20b/c%3Fd%23e%25f");
    assert_path(1, "bkt", "a b/c?d#e%f", "/a%20b/c%3Fd%23e%25f");
    assert_path(0, "bkt", "x\ty\nz\x7f\x01", "/bkt/x%09y%0Az%7F%01");
    assert_path(0, "bkt", "\xc3\xa9t\xc3\xa9", "/bkt/%C3%A9t%C3%A9");
    assert_path(0, "bkt", "%2E%2E/x", "/bkt/%252E%252E/x"); /* a name, not a step up */
    assert_path(0, "bkt", "a//b/", "/bkt/a//b/");
    assert_path(0, "bkt", "/x", "/bkt//x");
    assert_path(0, "bkt", "x/.../.y/z.", "/bkt/x/.../.y/z.");
    assert_path(0, "bkt", NULL, "/bkt");
    assert_path(1, "bkt", NULL, "/");
}

static void test_path_refused(void **state)
{
    (void)state;
    assert_refused("bkt", "a/../b", "key \"a/../b\": a \".\" or \"..\" segment");
    assert_refused("bkt", "a/./b", "segment");
    assert_refused("bkt", "..", "segment");
    assert_refused("bkt", "a/..", "segment");
    assert_refused("bkt", ".", "segment");
    assert_refused("bkt", "", "empty key");
    assert_refused("..", "x", "bucket \"..\"");
    assert_refused("a/b", "x", "bucket \"a/b\"");
    assert_refused("evil.example@b", "x", "bucket");
    assert_refused("b?x", NULL, "bucket");
    assert_refused("", NULL, "bucket \"\": empty");
}

/* The key a listed key is copied to: under the target's prefix, and
 * refused when joining the prefixes makes a dot segment. */
static void test_dst_key(void **state)
{
    (void)state;
    char *d = NULL;
    struct sw_error err;
    assert_int_equal(sw_repl_dst_key("in/", "out/a/", "in/x/y", &d, &err), 0);
    assert_string_equal(d, "out/a/x/y");
    sw_free(d);
    assert_int_equal(sw_repl_dst_key("in/a", "out/", "in/a.b/y", &d, &err), 0);
    assert_string_equal(d, "out/.b/y");
    sw_free(d);
    /* A clean key ("in/a../x" has segments "in", "a..", "x") that the join
     * turns into a step out of the target's prefix. */
    assert_int_equal(sw_repl_dst_key("in/a", "out/", "in/a../x", &d, &err), SW_EPARSE);
    assert_null(d);
    assert_non_null(strstr(err.msg, "would be copied to \"out/../x\""));
    assert_int_equal(sw_repl_dst_key("in/a", "out/", "in/a.", &d, &err), SW_EPARSE);
    assert_int_equal(sw_repl_dst_key("in/", "", "in/", &d, &err), SW_EPARSE); /* empty */
    assert_int_equal(sw_repl_dst_key("in/", "out/", "other/x", &d, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "outside the prefix"));
    assert_int_equal(sw_repl_dst_key("in/", "out/", "in/../x", &d, &err), SW_EPARSE);
    assert_null(d);
}

/* A listing in pages, as a store would answer it: "|" ends a page that
 * says more follow, NULL ends the listing. */
struct pages {
    const char *const *keys;
    size_t at;
};

static int next_page(void *ctx, struct sw_s3_list *page, struct sw_error *err)
{
    (void)err;
    struct pages *p = ctx;
    memset(page, 0, sizeof(*page));
    size_t n = 0;
    while (p->keys[p->at + n] != NULL && strcmp(p->keys[p->at + n], "|") != 0)
        n++;
    page->objects = n ? sw_calloc(n, sizeof(*page->objects)) : NULL;
    for (size_t i = 0; i < n; i++) {
        page->objects[i].key = sw_strdup(p->keys[p->at + i]);
        page->objects[i].size = (int64_t)strlen(p->keys[p->at + i]);
    }
    page->n = n;
    p->at += n;
    page->truncated = p->keys[p->at] != NULL;
    if (page->truncated)
        p->at++;
    return 0;
}

struct seen {
    int n;
    char line[16][80];
};

/* Records "S dst_key there?" for a source object, "T key" for a target-only one. */
static int on_cmp(const struct sw_s3_object *src, const char *dst_key,
                  const struct sw_s3_object *there, void *ctx)
{
    struct seen *s = ctx;
    assert_true(s->n < 16);
    if (src == NULL) {
        assert_non_null(there);
        assert_string_equal(there->key, dst_key);
        snprintf(s->line[s->n++], sizeof(s->line[0]), "T %s", dst_key);
    } else {
        if (there != NULL)
            assert_string_equal(there->key, dst_key);
        snprintf(s->line[s->n++], sizeof(s->line[0]), "S %s %s", dst_key,
                 there ? "there" : "missing");
    }
    return 0;
}

static int compare(const char *sp, const char *const *src, const char *dp, const char *const *dst,
                   struct seen *s, struct sw_error *err)
{
    struct pages ps = {src, 0}, pd = {dst, 0};
    memset(s, 0, sizeof(*s));
    sw_error_clear(err);
    return sw_repl_compare(sp, next_page, &ps, dp, next_page, &pd, on_cmp, s, err);
}

static void test_compare(void **state)
{
    (void)state;
    /* Equal, only-in-source and only-in-target keys, on both sides of the
     * page boundaries, and an empty page that says more follow. */
    const char *const src[] = {"in/a", "in/b", "|", "in/c", "in/e", "|", "|", "in/g", NULL};
    const char *const dst[] = {"out/0", "out/b", "out/c", "|",     "out/d",
                               "|",     "out/e", "out/h", "out/i", NULL};
    struct seen s;
    struct sw_error err;
    assert_int_equal(compare("in/", src, "out/", dst, &s, &err), 0);
    const char *want[] = {"T out/0",         "S out/a missing", "S out/b there",
                          "S out/c there",   "T out/d",         "S out/e there",
                          "S out/g missing", "T out/h",         "T out/i"};
    assert_int_equal(s.n, 9);
    for (int i = 0; i < 9; i++)
        assert_string_equal(s.line[i], want[i]);
    /* Empty listings. */
    const char *const none[] = {NULL};
    assert_int_equal(compare("in/", none, "out/", dst, &s, &err), 0);
    assert_int_equal(s.n, 7);
    assert_string_equal(s.line[6], "T out/i");
    assert_int_equal(compare("in/", src, "out/", none, &s, &err), 0);
    assert_int_equal(s.n, 5);
    assert_string_equal(s.line[4], "S out/g missing");
    /* The order is UTF-8 binary (bytes compared unsigned), as S3 lists:
     * "in/\xc3\xa9" (é) comes after "in/z". */
    const char *const utf[] = {"in/Z", "in/z", "|", "in/\xc3\xa9", NULL};
    const char *const utfd[] = {"in/z", "in/\xc3\xa9", NULL};
    assert_int_equal(compare("in/", utf, "in/", utfd, &s, &err), 0);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.line[2], "S in/\xc3\xa9 there");
}

static void test_compare_refused(void **state)
{
    (void)state;
    struct seen s;
    struct sw_error err;
    const char *const src[] = {"in/a", "in/b", NULL};
    const char *const empty[] = {NULL};
    /* A target listing holding a key outside its prefix is malformed. */
    const char *const bad[] = {"elsewhere/a", NULL};
    assert_int_equal(compare("in/", src, "out/", bad, &s, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "target listing"));
    assert_non_null(strstr(err.msg, "outside the prefix"));
    /* A page whose keys go backwards, within a page and across pages, on
     * either side, and a key listed twice: refused, not miscompared. */
    const char *const back[] = {"in/b", "in/a", NULL};
    assert_int_equal(compare("in/", back, "out/", empty, &s, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "source listing"));
    assert_non_null(strstr(err.msg, "out of order"));
    assert_int_equal(s.n, 0);
    const char *const across[] = {"out/a", "out/c", "|", "out/b", NULL};
    assert_int_equal(compare("in/", src, "out/", across, &s, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "target listing: listed key \"out/b\" after \"out/c\""));
    const char *const twice[] = {"in/a", "|", "in/a", NULL};
    assert_int_equal(compare("in/", twice, "out/", empty, &s, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "out of order"));
    /* A join that makes a dot segment. */
    const char *const dots[] = {"in/a..", NULL};
    assert_int_equal(compare("in/a", dots, "out/", empty, &s, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "would be copied to"));
}

/* A generated listing: `pages` pages of `per` keys each ("in/%08zu", in
 * order), each saying more follow until the last; `per` 0: empty pages. */
struct gen {
    size_t pages, per, at, next;
};

static int gen_page(void *ctx, struct sw_s3_list *page, struct sw_error *err)
{
    (void)err;
    struct gen *g = ctx;
    memset(page, 0, sizeof(*page));
    page->objects = g->per ? sw_calloc(g->per, sizeof(*page->objects)) : NULL;
    for (size_t i = 0; i < g->per; i++) {
        char k[32];
        snprintf(k, sizeof(k), "in/%08zu", g->next++);
        page->objects[i].key = sw_strdup(k);
    }
    page->n = g->per;
    page->truncated = ++g->at < g->pages;
    return 0;
}

static int count_cb(const struct sw_s3_object *src, const char *dst_key,
                    const struct sw_s3_object *there, void *ctx)
{
    (void)src, (void)dst_key, (void)there;
    ++*(size_t *)ctx;
    return 0;
}

static void test_compare_bounded(void **state)
{
    (void)state;
    struct sw_error err;
    size_t n = 0;
    /* Empty pages that say more follow, without end (a token cycle): refused
     * after 16 in a row, on either side; a few are skipped. */
    struct gen src = {SIZE_MAX, 0, 0, 0}, dst = {1, 0, 0, 0};
    sw_error_clear(&err);
    assert_int_equal(
        sw_repl_compare("in/", gen_page, &src, "in/", gen_page, &dst, count_cb, &n, &err),
        SW_EPARSE);
    assert_non_null(strstr(err.msg, "source listing: 17 empty pages in a row"));
    assert_int_equal(src.at, 17);
    src = (struct gen){1, 0, 0, 0};
    dst = (struct gen){SIZE_MAX, 0, 0, 0};
    assert_int_equal(
        sw_repl_compare("in/", gen_page, &src, "in/", gen_page, &dst, count_cb, &n, &err),
        SW_EPARSE);
    assert_non_null(strstr(err.msg, "target listing"));
    src = (struct gen){16, 0, 0, 0};
    dst = (struct gen){1, 0, 0, 0};
    assert_int_equal(
        sw_repl_compare("in/", gen_page, &src, "in/", gen_page, &dst, count_cb, &n, &err), 0);
    /* More than a million objects on the target alone (what a copy would
     * never need, but a hostile store can list): refused, not walked for
     * ever; a million exactly is compared. */
    src = (struct gen){1, 0, 0, 0};
    dst = (struct gen){1001, 1000, 0, 0};
    n = 0;
    assert_int_equal(
        sw_repl_compare("in/", gen_page, &src, "in/", gen_page, &dst, count_cb, &n, &err),
        SW_ETOOBIG);
    assert_non_null(strstr(err.msg, "target listing under \"in/\": more than 1000000 objects"));
    assert_int_equal(n, 1000000);
    src = (struct gen){1000, 1000, 0, 0};
    dst = (struct gen){1, 0, 0, 0};
    n = 0;
    assert_int_equal(
        sw_repl_compare("in/", gen_page, &src, "in/", gen_page, &dst, count_cb, &n, &err), 0);
    assert_int_equal(n, 1000000);
}

/* What the batches of a merge handed on: "S dst_key there?" per source
 * object, and the size of each batch. */
struct batches {
    size_t max; /* the batch size asked for */
    int nb, stop_at;
    size_t sizes[16];
    struct seen lines;
};

static int on_batch(struct sw_repl_item *items, size_t n, void *ctx, struct sw_error *err)
{
    (void)err;
    struct batches *b = ctx;
    assert_true(n >= 1 && n <= b->max);
    assert_true(b->nb < 16);
    b->sizes[b->nb++] = n;
    for (size_t i = 0; i < n; i++) {
        assert_true(b->lines.n < 16);
        assert_non_null(items[i].src_key);
        assert_int_equal(items[i].size, (int64_t)strlen(items[i].src_key));
        if (items[i].there)
            assert_int_equal(items[i].there_size, (int64_t)strlen(items[i].dst_key));
        snprintf(b->lines.line[b->lines.n++], sizeof(b->lines.line[0]), "S %s %s", items[i].dst_key,
                 items[i].there ? "there" : "missing");
    }
    /* A batch function may keep a key (it frees it itself). */
    sw_free(items[0].src_key);
    items[0].src_key = NULL;
    return b->nb == b->stop_at ? 7 : 0;
}

static int batches(const char *const *src, const char *const *dst, size_t max, struct batches *b,
                   struct sw_error *err)
{
    struct pages ps = {src, 0}, pd = {dst, 0};
    memset(b, 0, sizeof(*b));
    b->max = max;
    sw_error_clear(err);
    return sw_repl_batches("in/", next_page, &ps, "out/", next_page, &pd, max, on_batch, b, err);
}

static void test_batches(void **state)
{
    (void)state;
    const char *const src[] = {"in/a", "in/b", "|", "in/c", "in/e", "|", "|", "in/g", NULL};
    const char *const dst[] = {"out/0", "out/b", "out/c", "|",     "out/d",
                               "|",     "out/e", "out/h", "out/i", NULL};
    const char *want[] = {"S out/a missing", "S out/b there", "S out/c there", "S out/e there",
                          "S out/g missing"};
    struct batches b;
    struct sw_error err;
    /* The source objects in key order, in batches of the size asked (the
     * last one shorter); the target's own objects are not planned. */
    size_t sizes[] = {2, 1, 3, 1000};
    size_t nbatches[] = {3, 5, 2, 1};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(batches(src, dst, sizes[k], &b, &err), 0);
        assert_int_equal(b.nb, (int)nbatches[k]);
        assert_int_equal(b.lines.n, 5);
        for (int i = 0; i < 5; i++)
            assert_string_equal(b.lines.line[i], want[i]);
        for (int i = 0; i + 1 < b.nb; i++)
            assert_int_equal(b.sizes[i], sizes[k]);
    }
    /* Nothing listed in the source: no batch. */
    const char *const none[] = {NULL};
    assert_int_equal(batches(none, dst, 2, &b, &err), 0);
    assert_int_equal(b.nb, 0);
    /* The batch function's error stops the merge. */
    memset(&b, 0, sizeof(b));
    struct pages ps = {src, 0}, pd = {dst, 0};
    b.max = 1;
    b.stop_at = 2;
    assert_int_equal(
        sw_repl_batches("in/", next_page, &ps, "out/", next_page, &pd, 1, on_batch, &b, &err), 7);
    assert_int_equal(b.nb, 2);
    /* A refusal on a later page comes after the batches before it. */
    const char *const back[] = {"in/a", "in/b", "|", "in/a", NULL};
    assert_int_equal(batches(back, none, 2, &b, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "source listing: listed key \"in/a\" after \"in/b\""));
    assert_int_equal(b.nb, 1);
    const char *const bad[] = {"out/a", "|", "elsewhere/x", NULL};
    assert_int_equal(batches(src, bad, 1, &b, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "target listing"));
    assert_non_null(strstr(err.msg, "outside the prefix"));
    assert_int_equal(b.nb, 1);
}

/* A generated source (gen_page) whose pages check that the merge hands
 * its objects on as it goes: before a page is listed, all but the last
 * batch and page of what was listed has been handed on. */
struct stream {
    struct gen g;
    size_t batch, handed, batches;
};

static int stream_page(void *ctx, struct sw_s3_list *page, struct sw_error *err)
{
    struct stream *s = ctx;
    assert_true(s->g.next - s->handed <= s->batch + s->g.per);
    return gen_page(&s->g, page, err);
}

static int stream_batch(struct sw_repl_item *items, size_t n, void *ctx, struct sw_error *err)
{
    (void)err;
    struct stream *s = ctx;
    assert_true(n <= s->batch);
    assert_false(items[0].there);
    s->handed += n;
    s->batches++;
    return 0;
}

static void test_batches_bounded(void **state)
{
    (void)state;
    struct sw_error err;
    sw_error_clear(&err);
    /* A million objects in batches of 1,000 (pages of 1,000): each handed
     * on before the next page; a page more is refused as a merge is. */
    struct stream s = {{1000, 1000, 0, 0}, 1000, 0, 0};
    struct gen dst = {1, 0, 0, 0};
    assert_int_equal(sw_repl_batches("in/", stream_page, &s, "out/", gen_page, &dst, 1000,
                                     stream_batch, &s, &err),
                     0);
    assert_int_equal(s.handed, 1000000);
    assert_int_equal(s.batches, 1000);
    s = (struct stream){{1001, 1000, 0, 0}, 1000, 0, 0};
    dst = (struct gen){1, 0, 0, 0};
    assert_int_equal(sw_repl_batches("in/", stream_page, &s, "out/", gen_page, &dst, 1000,
                                     stream_batch, &s, &err),
                     SW_ETOOBIG);
    assert_non_null(strstr(err.msg, "source listing under \"in/\": more than 1000000 objects"));
    assert_int_equal(s.handed, 1000000);
    /* Batches smaller and larger than the pages. */
    s = (struct stream){{50, 7, 0, 0}, 3, 0, 0};
    dst = (struct gen){1, 0, 0, 0};
    assert_int_equal(
        sw_repl_batches("in/", stream_page, &s, "out/", gen_page, &dst, 3, stream_batch, &s, &err),
        0);
    assert_int_equal(s.handed, 350);
    assert_int_equal(s.batches, 117);
    s = (struct stream){{50, 7, 0, 0}, 20, 0, 0};
    dst = (struct gen){1, 0, 0, 0};
    assert_int_equal(
        sw_repl_batches("in/", stream_page, &s, "out/", gen_page, &dst, 20, stream_batch, &s, &err),
        0);
    assert_int_equal(s.handed, 350);
    assert_int_equal(s.batches, 18);
}

static void test_done_parse(void **state)
{
    (void)state;
    struct sw_repl_done d;
    char sha[65];
    memset(sha, 'a', 64);
    sha[64] = '\0';
    char v[256];
    snprintf(v, sizeof(v), "\"e1\" 42 %s", sha);
    assert_int_equal(sw_repl_done_parse(v, &d), 0);
    assert_string_equal(d.etag, "\"e1\"");
    assert_int_equal(d.size, 42);
    assert_string_equal(d.sha, sha);
    snprintf(v, sizeof(v), "- 0 %s", sha);
    assert_int_equal(sw_repl_done_parse(v, &d), 0);
    assert_string_equal(d.etag, "-");
    /* None, or unreadable (a hostile or older record): no record. */
    assert_int_equal(sw_repl_done_parse(NULL, &d), -1);
    assert_int_equal(sw_repl_done_parse("", &d), -1);
    assert_int_equal(sw_repl_done_parse("\"e1\" many aaaa", &d), -1);
    assert_int_equal(sw_repl_done_parse("\"e1\" 42", &d), -1);
    assert_string_equal(d.etag, "");
    /* An overlong field is cut at its bound, never written past it. */
    char big[600];
    memset(big, 'x', 300);
    snprintf(big + 300, sizeof(big) - 300, " 1 %s", sha);
    assert_int_equal(sw_repl_done_parse(big, &d), -1);
}

static void test_plan(void **state)
{
    (void)state;
    char sha[65], known[65];
    memset(sha, 'b', 64);
    sha[64] = '\0';
    struct sw_repl_item it = {.etag = "\"e1\"", .size = 10, .there = 1, .there_size = 10};
    struct sw_repl_done rec = {.etag = "\"e1\"", .size = 10};
    memcpy(rec.sha, sha, 65);
    /* Verified earlier from this source version, still there: skipped
     * without a request. */
    assert_int_equal(sw_repl_plan(&it, &rec, known), SW_REPL_SKIP);
    assert_string_equal(known, sha);
    /* Not on the target: copied, verified against the journal's hash when
     * it names this version. */
    it.there = 0;
    assert_int_equal(sw_repl_plan(&it, &rec, known), SW_REPL_COPY);
    assert_string_equal(known, sha);
    assert_int_equal(sw_repl_plan(&it, NULL, known), SW_REPL_COPY);
    assert_string_equal(known, "");
    /* On the target with another size, or without a record of this
     * version (another ETag or size): checked by HEAD. */
    it.there = 1;
    it.there_size = 11;
    assert_int_equal(sw_repl_plan(&it, &rec, known), SW_REPL_CHECK);
    assert_string_equal(known, sha);
    it.there_size = 10;
    snprintf(rec.etag, sizeof(rec.etag), "\"e0\"");
    assert_int_equal(sw_repl_plan(&it, &rec, known), SW_REPL_CHECK);
    assert_string_equal(known, "");
    snprintf(rec.etag, sizeof(rec.etag), "\"e1\"");
    rec.size = 9;
    assert_int_equal(sw_repl_plan(&it, &rec, known), SW_REPL_CHECK);
    assert_int_equal(sw_repl_plan(&it, NULL, known), SW_REPL_CHECK);
    /* A source without an ETag is recorded as "-". */
    rec.size = 10;
    it.etag[0] = '\0';
    snprintf(rec.etag, sizeof(rec.etag), "-");
    assert_int_equal(sw_repl_plan(&it, &rec, known), SW_REPL_SKIP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_path_encoded),
        cmocka_unit_test(test_path_refused),
        cmocka_unit_test(test_dst_key),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_compare_refused),
        cmocka_unit_test(test_compare_bounded),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_batches_bounded),
        cmocka_unit_test(test_done_parse),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
