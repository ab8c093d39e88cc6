/*
 * Tests for clusters/listsplit.c: items framed whatever the chunking,
 * braces and quotes inside strings, an "items" member inside an item, the
 * envelope kept with "items":[], and errors for what is not a List.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/listsplit.h"

struct got {
    int n;
    char items[8][256];
};

static int on_item(const char *item, size_t len, void *ctx, struct sw_error *err)
{
    (void)err;
    struct got *g = ctx;
    assert_true(g->n < 8);
    assert_true(len < sizeof(g->items[0]));
    memcpy(g->items[g->n], item, len);
    g->items[g->n][len] = '\0';
    g->n++;
    return 0;
}

static const char LIST[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"12\","
    "\"continue\":\"abc\"},\"items\":[ {\"metadata\":{\"name\":\"a\"},\"x\":\"}]\\\"{[\"},\n"
    "{\"metadata\":{\"name\":\"b\"},\"items\":[{\"y\":[1,2]}],\"s\":\"\\\\\"} ,{}],"
    "\"extra\":[\"items\"]}\n";

static void check(const struct got *g, const char *env)
{
    assert_int_equal(g->n, 3);
    assert_string_equal(g->items[0], "{\"metadata\":{\"name\":\"a\"},\"x\":\"}]\\\"{[\"}");
    assert_string_equal(g->items[1],
                        "{\"metadata\":{\"name\":\"b\"},\"items\":[{\"y\":[1,2]}],\"s\":\"\\\\\"}");
    assert_string_equal(g->items[2], "{}");
    assert_string_equal(env, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{"
                             "\"resourceVersion\":\"12\",\"continue\":\"abc\"},\"items\":[],"
                             "\"extra\":[\"items\"]}");
}

static void test_any_chunking(void **state)
{
    (void)state;
    size_t n = strlen(LIST);
    /* Whole, byte by byte, and in chunks of every size up to 40. */
    for (size_t chunk = 0; chunk <= 40; chunk++) {
        struct got g = {0};
        struct sw_list_splitter *s = NULL;
        struct sw_error err;
        assert_int_equal(sw_list_splitter_new("list pods", 0, on_item, &g, &s), 0);
        size_t step = chunk ? chunk : n;
        for (size_t i = 0; i < n; i += step)
            assert_int_equal(sw_list_splitter_feed(s, LIST + i, i + step > n ? n - i : step, &err),
                             0);
        const char *env = NULL;
        size_t len = 0;
        assert_int_equal(sw_list_splitter_finish(s, &env, &len, &err), 0);
        assert_int_equal(len, strlen(env));
        check(&g, env);
        assert_int_equal(sw_list_splitter_items(s), 3);
        sw_list_splitter_free(s);
    }
}

/* Each item split from "{\"items\":[ITEM]}" fed byte by byte and whole. */
static void split_one(const char *item, char *out, size_t cap)
{
    char doc[1024];
    snprintf(doc, sizeof(doc), "{\"items\":[%s]}", item);
    for (int whole = 0; whole < 2; whole++) {
        struct got g = {0};
        struct sw_list_splitter *s = NULL;
        struct sw_error err;
        assert_int_equal(sw_list_splitter_new("list", 0, on_item, &g, &s), 0);
        size_t n = strlen(doc), step = whole ? n : 1;
        for (size_t i = 0; i < n; i += step)
            assert_int_equal(sw_list_splitter_feed(s, doc + i, step, &err), 0);
        const char *env;
        size_t len;
        assert_int_equal(sw_list_splitter_finish(s, &env, &len, &err), 0);
        assert_int_equal(g.n, 1);
        if (whole)
            assert_string_equal(out, g.items[0]); /* the same either way */
        snprintf(out, cap, "%s", g.items[0]);
        sw_list_splitter_free(s);
    }
}

static void test_managed_fields_dropped(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        /* in the middle, first, last, alone */
        {"{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"x\",\"f:m\":{\"}\":[]}}],"
         "\"uid\":\"u\"},\"spec\":{}}",
         "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"},\"spec\":{}}"},
        {"{\"metadata\":{\"managedFields\":[{}] , \"name\":\"a\"}}",
         "{\"metadata\":{  \"name\":\"a\"}}"},
        {"{\"kind\":\"Pod\", \"metadata\" : {\"name\":\"a\" , \"managedFields\" : [ ] } }",
         "{\"kind\":\"Pod\", \"metadata\" : {\"name\":\"a\"  } }"},
        {"{\"metadata\":{\"managedFields\":[]}}", "{\"metadata\":{}}"},
        /* elsewhere, or not a key: kept */
        {"{\"spec\":{\"managedFields\":[1]}}", "{\"spec\":{\"managedFields\":[1]}}"},
        {"{\"metadata\":{\"name\":\"managedFields\",\"x\":[1]}}",
         "{\"metadata\":{\"name\":\"managedFields\",\"x\":[1]}}"},
        {"{\"metadata\":{\"labels\":{\"managedFields\":\"[x]\"}}}",
         "{\"metadata\":{\"labels\":{\"managedFields\":\"[x]\"}}}"},
        {"{\"status\":\"metadata\",\"x\":{\"managedFields\":[]}}",
         "{\"status\":\"metadata\",\"x\":{\"managedFields\":[]}}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[256];
        split_one(cases[i].in, out, sizeof(out));
        if (strcmp(out, cases[i].out) != 0)
            fail_msg("case %zu:\n  got  %s\n  want %s", i, out, cases[i].out);
    }
}

static int refuse(const char *item, size_t len, void *ctx, struct sw_error *err)
{
    (void)item;
    (void)len;
    (void)ctx;
    return sw_error_set(err, SW_EPARSE, "item refused");
}

static void test_errors(void **state)
{
    (void)state;
    struct {
        const char *doc;
        size_t max_item;
        int feed_rc, finish_rc;
        const char *msg;
    } cases[] = {
        {"{\"items\":[1]}", 0, SW_EPARSE, 0,
         "list pods: field \"items\": expected objects, got '1' after item 0"},
        {"{\"items\":[{\"a\":1},", 0, 0, SW_EPARSE,
         "list pods: the list ended early (after 1 items)"},
        {"{\"items\":[{\"a\":\"0123456789\"}]}", 10, SW_ETOOBIG, 0,
         "list pods: an item longer than 10 bytes"},
        {"[]", 0, SW_EPARSE, 0, "list pods: expected a List object, got '['"},
        {"{\"items\":[]} x", 0, SW_EPARSE, 0, "list pods: unexpected data after the list"},
        {"{\"items\":[]\001}", 0, SW_EPARSE, 0, "list pods: control character 0x01 in the list"},
        {"{\"items\":[]}", 0, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct got g = {0};
        struct sw_list_splitter *s = NULL;
        struct sw_error err = {0};
        assert_int_equal(sw_list_splitter_new("list pods", cases[i].max_item, on_item, &g, &s), 0);
        int rc = sw_list_splitter_feed(s, cases[i].doc, strlen(cases[i].doc), &err);
        if (rc != cases[i].feed_rc)
            fail_msg("case %zu: feed %d (%s)", i, rc, err.msg);
        if (rc == 0) {
            const char *env;
            size_t len;
            rc = sw_list_splitter_finish(s, &env, &len, &err);
            if (rc != cases[i].finish_rc)
                fail_msg("case %zu: finish %d (%s)", i, rc, err.msg);
        }
        if (cases[i].msg)
            assert_string_equal(err.msg, cases[i].msg);
        sw_list_splitter_free(s);
    }
    /* The callback's error stops the feed. */
    struct sw_list_splitter *s = NULL;
    struct sw_error err;
    assert_int_equal(sw_list_splitter_new("list pods", 0, refuse, NULL, &s), 0);
    assert_int_equal(sw_list_splitter_feed(s, LIST, strlen(LIST), &err), SW_EPARSE);
    assert_string_equal(err.msg, "item refused");
    sw_list_splitter_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_chunking),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_managed_fields_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
