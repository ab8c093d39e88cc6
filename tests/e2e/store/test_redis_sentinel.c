/*
 * End-to-end test of store/redis.c's blocking client on the lab's Redis
 * Sentinel topology (tests/testbed/testbed sentinel up, started here): the
 * master is found through the Sentinels, and after SENTINEL failover the
 * same context ends up on the new master without the caller reconnecting.
 * (The async client's following is proven by tests/e2e/hub/redis_failover.sh.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/redis.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        fail_msg("%s is not set: run eval \"$(tests/testbed/testbed env)\"", name);
    return v;
}

/* The master's port, as the first Sentinel names it. */
static int master_port(redisContext *s)
{
    redisReply *r = NULL;
    struct sw_error err;
    assert_int_equal(sw_redis_sync_command(s, &r, &err, "SENTINEL get-master-addr-by-name %s",
                                           env("SW_LAB_SENTINEL_MASTER")),
                     0);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    int port = atoi(r->element[1]->str);
    freeReplyObject(r);
    return port;
}

static int node_port(redisContext *c)
{
    redisReply *r = NULL;
    struct sw_error err;
    if (sw_redis_sync_command(c, &r, &err, "CONFIG GET port") != 0)
        return -1;
    int port = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? atoi(r->element[1]->str) : -1;
    freeReplyObject(r);
    return port;
}

static void test_sync_follows_failover(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "\"%s/tests/testbed/testbed\" sentinel up >/dev/null",
             env("SW_SOURCE_DIR"));
    assert_int_equal(system(cmd), 0);

    /* The URL with both passwords, as spillctl builds it. */
    char base[512], with_data[1024], url[1536];
    snprintf(base, sizeof(base), "redis+sentinel://%s/%s/5", env("SW_LAB_SENTINELS"),
             env("SW_LAB_SENTINEL_MASTER"));
    struct sw_error err;
    assert_int_equal(sw_redis_url_with_password(base, env("SW_LAB_SENTINEL_DATA_PASSWORD"),
                                                with_data, sizeof(with_data), &err),
                     0);
    assert_int_equal(sw_redis_url_with_sentinel_password(with_data, env("SW_LAB_SENTINEL_PASSWORD"),
                                                         url, sizeof(url), &err),
                     0);

    /* A plain connection to the first Sentinel, to watch and to ask for the failover. */
    char s_url[512];
    const char *sentinels = env("SW_LAB_SENTINELS");
    snprintf(s_url, sizeof(s_url), "redis://%.*s/0", (int)strcspn(sentinels, ","), sentinels);
    char s_url_pw[1024];
    assert_int_equal(sw_redis_url_with_password(s_url, env("SW_LAB_SENTINEL_PASSWORD"), s_url_pw,
                                                sizeof(s_url_pw), &err),
                     0);
    redisContext *s = NULL;
    assert_int_equal(sw_redis_sync_connect(s_url_pw, 2000, &s, &err), 0);

    redisContext *c = NULL;
    if (sw_redis_sync_connect(url, 2000, &c, &err) != 0)
        fail_msg("connect through the Sentinels: %s", err.msg);
    int before = master_port(s);
    assert_int_equal(node_port(c), before);
    redisReply *r = NULL;
    assert_int_equal(sw_redis_sync_command(c, &r, &err, "SET sw:e2e:sentinel before"), 0);
    freeReplyObject(r);

    /* A wrong Sentinel password: refused, named, not echoed. */
    char bad[1536];
    assert_int_equal(
        sw_redis_url_with_sentinel_password(with_data, "not-the-password", bad, sizeof(bad), &err),
        0);
    redisContext *b = NULL;
    assert_int_not_equal(sw_redis_sync_connect(bad, 2000, &b, &err), 0);
    assert_non_null(strstr(err.msg, "WRONGPASS"));
    assert_null(strstr(err.msg, "not-the-password"));

    assert_int_equal(
        sw_redis_sync_command(s, &r, &err, "SENTINEL failover %s", env("SW_LAB_SENTINEL_MASTER")),
        0);
    freeReplyObject(r);

    /* Keep writing on the same context: once the old master is demoted
     * (READONLY, or its connections closed), the context follows. At most
     * one command fails (the one the lost connection took). */
    int errors = 0, after = -1, on_new = 0;
    time_t t0 = time(NULL);
    for (int i = 0; time(NULL) - t0 < 60; i++) {
        int rc = sw_redis_sync_command(c, &r, &err, "SET sw:e2e:sentinel v%d", i);
        if (rc != 0) {
            errors++;
        } else {
            freeReplyObject(r);
            after = master_port(s);
            if (after != before && node_port(c) == after) {
                on_new = 1;
                break;
            }
        }
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(on_new);
    assert_true(errors <= 1);
    /* The write landed on the new master. */
    assert_int_equal(sw_redis_sync_command(c, &r, &err, "ROLE"), 0);
    assert_string_equal(r->element[0]->str, "master");
    freeReplyObject(r);
    sw_redis_sync_free(c);
    sw_redis_sync_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_follows_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
