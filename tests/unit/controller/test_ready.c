/*
 * Tests for controller/hub/ready.c: /readyz's decision, one case per row.
 * Ready needs Redis connected, and either leading (acting, the members'
 * caches synced) or standing by (Redis answered a campaign within the
 * lease's TTL that another hub holds the lease).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "controller/hub/ready.h"

#define TTL 10000 /* ms */
#define NOW 500000

struct row {
    const char *what;
    struct sw_readiness in;
    const char *why; /* NULL: ready; else a word the reason must hold */
};

static const struct row ROWS[] = {
    /* The issue: every replica showed Ready with no Redis. */
    {"Redis never reachable",
     {.redis_up = false, .standby_ms = 0, .now_ms = NOW, .lease_ttl_ms = TTL},
     "Redis"},
    /* Standbys. */
    {"standby, Redis answered 1 s ago",
     {.redis_up = true, .standby_ms = NOW - 1000, .now_ms = NOW, .lease_ttl_ms = TTL},
     NULL},
    {"standby, answered just within the TTL",
     {.redis_up = true, .standby_ms = NOW - TTL, .now_ms = NOW, .lease_ttl_ms = TTL},
     NULL},
    {"standby, last answer older than the TTL",
     {.redis_up = true, .standby_ms = NOW - TTL - 1, .now_ms = NOW, .lease_ttl_ms = TTL},
     "lease"},
    {"Redis connected, no campaign answered yet",
     {.redis_up = true, .standby_ms = 0, .now_ms = NOW, .lease_ttl_ms = TTL},
     "lease"},
    {"standby, Redis connection lost since its last answer",
     {.redis_up = false, .standby_ms = NOW - 1000, .now_ms = NOW, .lease_ttl_ms = TTL},
     "Redis"},
    /* Leaders. */
    {"leader acting, members synced",
     {.redis_up = true,
      .leader = true,
      .acting = true,
      .members_synced = true,
      .now_ms = NOW,
      .lease_ttl_ms = TTL},
     NULL},
    {"leader acting, members synced, Redis connection lost",
     {.redis_up = false,
      .leader = true,
      .acting = true,
      .members_synced = true,
      .now_ms = NOW,
      .lease_ttl_ms = TTL},
     "Redis"},
    {"leader acting, members syncing",
     {.redis_up = true, .leader = true, .acting = true, .now_ms = NOW, .lease_ttl_ms = TTL},
     "member caches"},
    {"leader not acting yet (records loading)",
     {.redis_up = true, .leader = true, .members_synced = true, .now_ms = NOW, .lease_ttl_ms = TTL},
     "leading"},
    /* A leader is judged as one: an old standby answer does not make it ready. */
    {"leader not acting, an old standby answer",
     {.redis_up = true,
      .leader = true,
      .standby_ms = NOW - 1000,
      .now_ms = NOW,
      .lease_ttl_ms = TTL},
     "leading"},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
        const struct row *w = &ROWS[i];
        const char *why = sw_readiness_check(&w->in);
        if (w->why == NULL && why != NULL)
            fail_msg("%s: not ready (%s), expected ready", w->what, why);
        if (w->why != NULL && why == NULL)
            fail_msg("%s: ready, expected not ready (%s)", w->what, w->why);
        if (w->why != NULL) {
            if (strstr(why, w->why) == NULL)
                fail_msg("%s: \"%s\" does not say \"%s\"", w->what, why, w->why);
            if (strncmp(why, "not ready: ", 11) != 0 || why[strlen(why) - 1] != '\n')
                fail_msg("%s: \"%s\" is not \"not ready: ...\\n\"", w->what, why);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
