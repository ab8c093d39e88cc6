/*
 * End-to-end test of store/redis.c against the lab's Redis (which has a
 * password): the async client on a libuv loop authenticates before the
 * first command, answers in order, and the blocking helper does the same; a
 * wrong password is refused with SW_EAUTH and is not echoed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis.h"

static const char *lab_url(void)
{
    const char *u = getenv("SW_LAB_REDIS_URL");
    if (u == NULL || u[0] == '\0')
        fail_msg("SW_LAB_REDIS_URL is not set: run eval \"$(tests/testbed/testbed env)\"");
    return u;
}

struct run {
    int replies;
    char last[64];
    int ups;
    struct sw_redis *r;
};

static void on_get(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    struct run *run = ctx;
    assert_non_null(reply);
    (void)why;
    run->replies++;
    if (reply->type == REDIS_REPLY_STRING)
        snprintf(run->last, sizeof(run->last), "%s", reply->str);
    if (run->replies == 3)
        sw_redis_free(r);
}

static void on_set(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    (void)why;
    struct run *run = ctx;
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    run->replies++;
}

static void on_state(struct sw_redis *r, int up, const char *why, void *ctx)
{
    (void)r;
    (void)why;
    struct run *run = ctx;
    if (up)
        run->ups++;
}

static void test_async_auth_and_order(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct run run = {0};
    struct sw_error err;
    assert_int_equal(sw_redis_connect(&loop, lab_url(), on_state, &run, &run.r, &err), 0);
    /* Commands queue behind AUTH even before the connection is up. */
    assert_int_equal(sw_redis_command(run.r, on_set, &run, "SET %s %s", "sw:test:redis", "v1"), 0);
    const char *argv[] = {"SET", "sw:test:redis", "v2"};
    assert_int_equal(sw_redis_command_argv(run.r, on_set, &run, 3, argv, NULL), 0);
    assert_int_equal(sw_redis_command(run.r, on_get, &run, "GET %s", "sw:test:redis"), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(run.replies, 3);
    assert_string_equal(run.last, "v2");
    assert_int_equal(run.ups, 1);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_sync_and_wrong_password(void **state)
{
    (void)state;
    struct sw_error err;
    redisContext *c = NULL;
    assert_int_equal(sw_redis_sync_connect(lab_url(), 5000, &c, &err), 0);
    redisReply *reply = NULL;
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "GET %s", "sw:test:redis"), 0);
    assert_string_equal(reply->str, "v2");
    freeReplyObject(reply);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "NOSUCHCOMMAND"), SW_EIO);
    assert_null(reply);
    redisFree(c);

    /* Same server, wrong password. */
    struct sw_redis_url u;
    assert_int_equal(sw_redis_url_parse(lab_url(), &u, &err), 0);
    char bad[300];
    snprintf(bad, sizeof(bad), "redis://:wrong-pass-xyz@%s:%d/%d", u.host, u.port, u.db);
    sw_redis_url_free(&u);
    assert_int_equal(sw_redis_sync_connect(bad, 5000, &c, &err), SW_EAUTH);
    assert_null(strstr(err.msg, "wrong-pass-xyz"));
    assert_non_null(strstr(err.msg, "***"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_auth_and_order),
        cmocka_unit_test(test_sync_and_wrong_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
