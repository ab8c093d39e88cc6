/* Tests for sw_redis_sentinel_agree, the quorum rule the Redis client
 * follows a Sentinel master by (no server needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "store/redis.h"

/* Sentinel i of the list: "named" a host:port, "silent" or "unknown" with a reason. */
static void named(struct sw_redis_sentinel_answer *a, int i, const char *host, int port)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->sentinel, sizeof(a->sentinel), "10.0.0.%d:26379", i);
    a->said = SW_SENTINEL_NAMED;
    snprintf(a->host, sizeof(a->host), "%s", host);
    a->port = port;
}

static void not_named(struct sw_redis_sentinel_answer *a, int i, enum sw_redis_sentinel_said said,
                      const char *why)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->sentinel, sizeof(a->sentinel), "10.0.0.%d:26379", i);
    a->said = said;
    snprintf(a->why, sizeof(a->why), "%s", why);
}

static void test_unanimous(void **state)
{
    (void)state;
    struct sw_redis_sentinel_answer a[3];
    for (int i = 0; i < 3; i++)
        named(&a[i], i + 1, "10.1.0.1", 6379);
    size_t k = 99;
    char dissent[256] = "x";
    struct sw_error err;
    assert_int_equal(sw_redis_sentinel_agree("m", a, 3, &k, dissent, sizeof(dissent), &err), 0);
    assert_true(k < 3);
    assert_string_equal(a[k].host, "10.1.0.1");
    assert_string_equal(dissent, "");
}

/* The lone voice is never followed, wherever it stands in the list. */
static void test_lone_voice_outvoted(void **state)
{
    (void)state;
    struct sw_redis_sentinel_answer a[4];
    named(&a[0], 1, "10.66.0.1", 6379); /* first in the list: the old client followed it */
    named(&a[1], 2, "10.1.0.1", 6379);
    named(&a[2], 3, "10.1.0.1", 6379);
    named(&a[3], 4, "10.1.0.1", 6379);
    size_t k = 99;
    char dissent[512];
    struct sw_error err;
    assert_int_equal(sw_redis_sentinel_agree("m", a, 4, &k, dissent, sizeof(dissent), &err), 0);
    assert_string_equal(a[k].host, "10.1.0.1");
    /* The log says who named what. */
    assert_non_null(strstr(dissent, "10.0.0.1:26379 names 10.66.0.1:6379"));
    assert_non_null(strstr(dissent, "10.0.0.2:26379 names 10.1.0.1:6379"));
    assert_non_null(strstr(dissent, "10.0.0.4:26379 names 10.1.0.1:6379"));
}

static void test_no_majority(void **state)
{
    (void)state;
    struct sw_redis_sentinel_answer a[3];
    size_t k = 99;
    char dissent[512];
    struct sw_error err;
    /* One for each, one silent: 1 vote each of the 2 needed. */
    named(&a[0], 1, "10.66.0.1", 6379);
    named(&a[1], 2, "10.1.0.1", 6379);
    not_named(&a[2], 3, SW_SENTINEL_SILENT, "cannot connect: Connection refused");
    assert_int_equal(sw_redis_sentinel_agree("spill", a, 3, &k, dissent, sizeof(dissent), &err),
                     SW_EUNAVAIL);
    assert_int_equal(k, 99);
    assert_non_null(strstr(err.msg, "no majority of the 3 Sentinels (2 needed)"));
    assert_non_null(strstr(err.msg, "\"spill\""));
    assert_non_null(strstr(err.msg, "10.0.0.1:26379 names 10.66.0.1:6379"));
    assert_non_null(strstr(err.msg, "10.0.0.2:26379 names 10.1.0.1:6379"));
    assert_non_null(strstr(err.msg, "10.0.0.3:26379: cannot connect: Connection refused"));
    assert_non_null(strstr(dissent, "10.0.0.1:26379 names 10.66.0.1:6379"));

    /* Two configured, one reachable: a single voice is not a majority of two. */
    named(&a[0], 1, "10.1.0.1", 6379);
    not_named(&a[1], 2, SW_SENTINEL_SILENT, "timed out");
    assert_int_equal(sw_redis_sentinel_agree("m", a, 2, &k, dissent, sizeof(dissent), &err),
                     SW_EUNAVAIL);
    assert_string_equal(dissent, ""); /* silence is no dissent */

    /* A majority of the configured, not of those that answered: 1 of 3. */
    named(&a[0], 1, "10.1.0.1", 6379);
    not_named(&a[1], 2, SW_SENTINEL_SILENT, "timed out");
    not_named(&a[2], 3, SW_SENTINEL_SILENT, "timed out");
    assert_int_equal(sw_redis_sentinel_agree("m", a, 3, &k, NULL, 0, &err), SW_EUNAVAIL);

    /* Same host, another port: another address. */
    named(&a[0], 1, "10.1.0.1", 6379);
    named(&a[1], 2, "10.1.0.1", 6380);
    not_named(&a[2], 3, SW_SENTINEL_UNKNOWN, "does not monitor a master of that name");
    assert_int_equal(sw_redis_sentinel_agree("m", a, 3, &k, dissent, sizeof(dissent), &err),
                     SW_EUNAVAIL);
    assert_non_null(strstr(dissent, "10.0.0.3:26379: does not monitor a master of that name"));
}

static void test_majority_with_one_down(void **state)
{
    (void)state;
    struct sw_redis_sentinel_answer a[5];
    size_t k = 99;
    struct sw_error err;
    char dissent[512] = "x";
    /* 3 of 5, the two others silent: followed, and no dissent to log. */
    not_named(&a[0], 1, SW_SENTINEL_SILENT, "timed out");
    named(&a[1], 2, "Redis-A.example", 6379);
    named(&a[2], 3, "redis-a.example", 6379); /* host names compare without case */
    not_named(&a[3], 4, SW_SENTINEL_SILENT, "WRONGPASS");
    named(&a[4], 5, "redis-a.example", 6379);
    assert_int_equal(sw_redis_sentinel_agree("m", a, 5, &k, dissent, sizeof(dissent), &err), 0);
    assert_true(k == 1 || k == 2 || k == 4);
    assert_string_equal(dissent, "");
    /* A single configured Sentinel is its own majority. */
    named(&a[0], 1, "10.1.0.1", 6379);
    assert_int_equal(sw_redis_sentinel_agree("m", a, 1, &k, NULL, 0, &err), 0);
    assert_int_equal(k, 0);
    /* Two of two agree. */
    named(&a[1], 2, "10.1.0.1", 6379);
    assert_int_equal(sw_redis_sentinel_agree("m", a, 2, &k, NULL, 0, &err), 0);
}

static void test_none_named(void **state)
{
    (void)state;
    struct sw_redis_sentinel_answer a[3];
    size_t k = 99;
    struct sw_error err;
    for (int i = 0; i < 3; i++)
        not_named(&a[i], i + 1, SW_SENTINEL_SILENT, "cannot connect: Connection refused");
    assert_int_equal(sw_redis_sentinel_agree("m", a, 3, &k, NULL, 0, &err), SW_ENET);
    assert_non_null(strstr(err.msg, "no Sentinel named the master \"m\""));
    assert_non_null(strstr(err.msg, "10.0.0.3:26379: cannot connect"));
    not_named(&a[1], 2, SW_SENTINEL_UNKNOWN, "does not monitor a master of that name");
    assert_int_equal(sw_redis_sentinel_agree("m", a, 3, &k, NULL, 0, &err), SW_ENOENT);
    assert_int_equal(sw_redis_sentinel_agree("m", a, 0, &k, NULL, 0, &err), SW_ENET);
    assert_int_equal(k, 99);
}

/* Sixteen Sentinels, each with a long reason: the message is bounded. */
static void test_long_bounded(void **state)
{
    (void)state;
    struct sw_redis_sentinel_answer a[SW_REDIS_MAX_SENTINELS];
    char why[200];
    memset(why, 'w', sizeof(why) - 1);
    why[sizeof(why) - 1] = '\0';
    for (int i = 0; i < SW_REDIS_MAX_SENTINELS; i++)
        if (i % 2)
            named(&a[i], i, "10.1.0.1", 6379);
        else
            not_named(&a[i], i, SW_SENTINEL_UNKNOWN, why);
    size_t k = 99;
    char dissent[64];
    struct sw_error err;
    assert_int_equal(
        sw_redis_sentinel_agree("m", a, SW_REDIS_MAX_SENTINELS, &k, dissent, sizeof(dissent), &err),
        SW_EUNAVAIL); /* 8 of 16: 9 needed */
    assert_true(strlen(err.msg) < sizeof(err.msg));
    assert_true(strlen(dissent) < sizeof(dissent));
    named(&a[0], 0, "10.1.0.1", 6379);
    assert_int_equal(
        sw_redis_sentinel_agree("m", a, SW_REDIS_MAX_SENTINELS, &k, dissent, sizeof(dissent), &err),
        0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unanimous),   cmocka_unit_test(test_lone_voice_outvoted),
        cmocka_unit_test(test_no_majority), cmocka_unit_test(test_majority_with_one_down),
        cmocka_unit_test(test_none_named),  cmocka_unit_test(test_long_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
