/* Tests for how listed keys become request paths: replication/replicator.c's
 * check of listed keys (only keys under the prefix asked for) and of the
 * keys they are copied to, and replication/s3.c's rule for every key it
 * sends (encoded per segment; empty, overlong and dot-segment keys
 * refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

struct seen {
    int n;
    char keys[4][64];
    int there[4];
};

static int on_cmp(const struct sw_s3_object *src, const char *dst_key,
                  const struct sw_s3_object *there, void *ctx)
{
    (void)src;
    struct seen *s = ctx;
    snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", dst_key);
    s->there[s->n++] = there != NULL;
    return 0;
}

static void test_compare(void **state)
{
    (void)state;
    struct sw_s3_object src[2] = {{.key = "in/b", .size = 1}, {.key = "in/a", .size = 2}};
    struct sw_s3_object dst[2] = {{.key = "out/z", .size = 1}, {.key = "out/a", .size = 2}};
    struct seen s = {0};
    struct sw_error err;
    assert_int_equal(sw_repl_compare("in/", src, 2, "out/", dst, 2, on_cmp, &s, &err), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.keys[0], "out/b");
    assert_false(s.there[0]);
    assert_string_equal(s.keys[1], "out/a");
    assert_true(s.there[1]);
    /* A target listing holding a key outside its prefix is malformed. */
    struct sw_s3_object bad[1] = {{.key = "elsewhere/a"}};
    memset(&s, 0, sizeof(s));
    assert_int_equal(sw_repl_compare("in/", src, 2, "out/", bad, 1, on_cmp, &s, &err), SW_EPARSE);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),         cmocka_unit_test(test_path_encoded),
        cmocka_unit_test(test_path_refused), cmocka_unit_test(test_dst_key),
        cmocka_unit_test(test_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
