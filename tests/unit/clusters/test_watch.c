/*
 * Tests for clusters/watch.c: events split at every byte boundary decode
 * the same, ERROR/410 and BOOKMARK events, size cap, malformed lines named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/watch.h"
#include "common/alloc.h"

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"11\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
    "\"15\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"16\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
    "\"message\":\"too old resource version: 5 (16)\"}}\n";

struct seen {
    char log[512];
    int steal;
    cJSON *stolen;
};

static int on_event(struct sw_watch_event *ev, void *ctx)
{
    struct seen *s = ctx;
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof(s->log) - n, "%s:%s:%d;", sw_watch_type_name(ev->type),
             ev->resource_version, ev->code);
    if (s->steal && s->stolen == NULL) {
        s->stolen = ev->object;
        ev->object = NULL;
    }
    return 0;
}

static const char expected[] = "ADDED:10:0;MODIFIED:11:0;BOOKMARK:15:0;DELETED:16:0;ERROR::410;";

static void test_every_split_decodes_the_same(void **state)
{
    (void)state;
    size_t len = strlen(stream);
    for (size_t cut = 0; cut <= len; cut++) {
        struct seen s = {0};
        struct sw_watch_decoder *d;
        struct sw_error err;
        assert_int_equal(sw_watch_decoder_new("watch of Pods on t", 0, on_event, &s, &d), 0);
        assert_int_equal(sw_watch_decoder_feed(d, stream, cut, &err), 0);
        assert_int_equal(sw_watch_decoder_feed(d, stream + cut, len - cut, &err), 0);
        assert_int_equal(sw_watch_decoder_finish(d, &err), 0);
        assert_string_equal(s.log, expected);
        assert_int_equal(sw_watch_decoder_events(d), 5);
        sw_watch_decoder_free(d);
    }
    /* One byte at a time. */
    struct seen s = {0};
    struct sw_watch_decoder *d;
    struct sw_error err;
    assert_int_equal(sw_watch_decoder_new("w", 0, on_event, &s, &d), 0);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(sw_watch_decoder_feed(d, stream + i, 1, &err), 0);
    assert_string_equal(s.log, expected);
    sw_watch_decoder_free(d);
}

static void test_callback_takes_object(void **state)
{
    (void)state;
    struct seen s = {.steal = 1};
    struct sw_watch_decoder *d;
    struct sw_error err;
    assert_int_equal(sw_watch_decoder_new("w", 0, on_event, &s, &d), 0);
    assert_int_equal(sw_watch_decoder_feed(d, stream, strlen(stream), &err), 0);
    sw_watch_decoder_free(d);
    assert_non_null(s.stolen);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(s.stolen, "metadata"), "name")->valuestring, "a");
    cJSON_Delete(s.stolen);
}

static void expect_fail(const char *input, size_t max, int code, const char *needle)
{
    struct seen s = {0};
    struct sw_watch_decoder *d;
    struct sw_error err;
    sw_error_clear(&err);
    assert_int_equal(sw_watch_decoder_new("watch of Jobs on onprem", max, on_event, &s, &d), 0);
    int rc = sw_watch_decoder_feed(d, input, strlen(input), &err);
    if (rc == 0)
        rc = sw_watch_decoder_finish(d, &err);
    if (rc != code || strstr(err.msg, needle) == NULL ||
        strstr(err.msg, "watch of Jobs on onprem") == NULL)
        fail_msg("input %s: rc=%d msg=%s", input, rc, err.msg);
    /* After a failure the decoder refuses more input. */
    if (code != SW_EPARSE || strstr(needle, "mid-event") == NULL)
        assert_int_equal(sw_watch_decoder_feed(d, "\n", 1, &err), SW_ESTATE);
    sw_watch_decoder_free(d);
}

static void test_malformed_named(void **state)
{
    (void)state;
    expect_fail("{\"type\":\"ADDED\",\"object\":{}}\n{nope}\n", 0, SW_EPARSE, "event 2 at byte 29");
    expect_fail("{\"type\":\"RENAMED\",\"object\":{}}\n", 0, SW_EPARSE,
                "field \"type\": expected ADDED");
    expect_fail("{\"object\":{}}\n", 0, SW_ENOENT, "field \"type\" is missing");
    expect_fail("{\"type\":\"ADDED\",\"object\":[]}\n", 0, SW_EPARSE,
                "field \"object\": expected an object");
    expect_fail("{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}\n", 0, SW_ENOENT,
                "metadata.resourceVersion");
    expect_fail("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"012345678901234\"}}}\n",
                32, SW_ETOOBIG, "exceeds the limit of 32 bytes");
    expect_fail("{\"type\":\"ADDED\",\"obj", 0, SW_EPARSE, "mid-event");
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth < 500; nth++) {
        struct seen s = {0};
        struct sw_watch_decoder *d = NULL;
        struct sw_error err;
        sw_alloc_fail_at(nth);
        int rc = sw_watch_decoder_new("w", 0, on_event, &s, &d);
        for (size_t i = 0; rc == 0 && i < strlen(stream); i += 7) {
            size_t n = strlen(stream) - i < 7 ? strlen(stream) - i : 7;
            rc = sw_watch_decoder_feed(d, stream + i, n, &err);
        }
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        sw_watch_decoder_free(d);
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_string_equal(s.log, expected);
            return;
        }
        assert_true(rc == SW_ENOMEM || rc == SW_EPARSE);
    }
    fail();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split_decodes_the_same),
        cmocka_unit_test(test_callback_takes_object),
        cmocka_unit_test(test_malformed_named),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
