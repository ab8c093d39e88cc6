/*
 * End-to-end test of store/redis.c's blocking client on the lab's Redis
 * Sentinel topology (tests/testbed/testbed sentinel up, started here): the
 * master is found through the Sentinels, and after SENTINEL failover the
 * same context ends up on the new master without the caller reconnecting.
 * (The async client's following is proven by tests/e2e/hub/redis_failover.sh.)
 *
 * A lone voice: one more real Sentinel, started here, monitors a real
 * redis-server of its own (no password) under the lab's master name, so it
 * names another address than the lab's three. The clients, blocking and
 * async, follow the majority wherever the liar stands in the list, refuse
 * when it is one of two, log who named what, and the liar's node never
 * sees an AUTH (the data password is never sent to it).
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
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "servers.h"
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

static void lab_up(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "\"%s/tests/testbed/testbed\" sentinel up >/dev/null",
             env("SW_SOURCE_DIR"));
    assert_int_equal(system(cmd), 0);
}

/* A blocking context on the first lab Sentinel, authenticated. */
static redisContext *first_sentinel(void)
{
    char s_url[512], s_url_pw[1024];
    const char *sentinels = env("SW_LAB_SENTINELS");
    struct sw_error err;
    snprintf(s_url, sizeof(s_url), "redis://%.*s/0", (int)strcspn(sentinels, ","), sentinels);
    assert_int_equal(sw_redis_url_with_password(s_url, env("SW_LAB_SENTINEL_PASSWORD"), s_url_pw,
                                                sizeof(s_url_pw), &err),
                     0);
    redisContext *s = NULL;
    assert_int_equal(sw_redis_sync_connect(s_url_pw, 2000, &s, &err), 0);
    return s;
}

/* ---- a lone voice --------------------------------------------------------- */

static pid_t liars[2]; /* the liar's node and the liar Sentinel */
static char liar_dir[64];
static int rogue_port, liar_port;

static int stop_liars(void **state)
{
    (void)state;
    return sw_test_stop_servers(liars, 2, liar_dir);
}

/* A plain connection to a local port, with an optional password. */
static redisContext *plain(int port, const char *password)
{
    char url[256], url_pw[512];
    struct sw_error err;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
    assert_int_equal(sw_redis_url_with_password(url, password, url_pw, sizeof(url_pw), &err), 0);
    redisContext *c = NULL;
    if (sw_redis_sync_connect(url_pw, 2000, &c, &err) != 0)
        return NULL;
    return c;
}

/* Starts the liar's node and the liar Sentinel (with the lab Sentinels'
 * password, so that the URL's works for it too); waits until it names its node. */
static void start_liar(void)
{
    snprintf(liar_dir, sizeof(liar_dir), "/tmp/sw-test-sentinel-liar-XXXXXX");
    assert_non_null(mkdtemp(liar_dir));
    rogue_port = sw_test_free_port();
    liar_port = sw_test_free_port();
    char path[128];
    snprintf(path, sizeof(path), "%s/rogue.conf", liar_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "bind 127.0.0.1\nport %d\nsave \"\"\nappendonly no\ndir %s\nlogfile %s/rogue.log\n",
            rogue_port, liar_dir, liar_dir);
    fclose(f);
    liars[0] = sw_test_start_server(path, 0);
    snprintf(path, sizeof(path), "%s/liar.conf", liar_dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "bind 127.0.0.1\nport %d\ndir %s\nlogfile %s/liar.log\nrequirepass %s\n"
            "sentinel monitor %s 127.0.0.1 %d 2\n"
            "sentinel down-after-milliseconds %s 60000\n",
            liar_port, liar_dir, liar_dir, env("SW_LAB_SENTINEL_PASSWORD"),
            env("SW_LAB_SENTINEL_MASTER"), rogue_port, env("SW_LAB_SENTINEL_MASTER"));
    fclose(f);
    liars[1] = sw_test_start_server(path, 1);
    for (int i = 0; i < 100; i++) {
        redisContext *l = plain(liar_port, env("SW_LAB_SENTINEL_PASSWORD"));
        int named = 0;
        if (l != NULL) {
            redisReply *r = redisCommand(l, "SENTINEL get-master-addr-by-name %s",
                                         env("SW_LAB_SENTINEL_MASTER"));
            named = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                    atoi(r->element[1]->str) == rogue_port;
            if (r != NULL)
                freeReplyObject(r);
            redisFree(l);
        }
        if (named)
            return;
        usleep(100000);
    }
    fail_msg("the liar Sentinel on port %d did not come up", liar_port);
}

/* Whether the liar's node was ever sent AUTH (by anyone: only a client that
 * followed the liar would send it one). */
static int rogue_saw_auth(void)
{
    redisContext *c = plain(rogue_port, NULL);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "INFO commandstats");
    assert_non_null(r);
    int saw = strstr(r->str, "cmdstat_auth:") != NULL;
    freeReplyObject(r);
    redisFree(c);
    return saw;
}

/* A Sentinel URL over `sentinels` ("h:p,h:p"), with both lab passwords. */
static void sentinel_url(char *out, size_t len, const char *sentinels)
{
    char base[512], with_data[1024];
    struct sw_error err;
    snprintf(base, sizeof(base), "redis+sentinel://%s/%s/5", sentinels,
             env("SW_LAB_SENTINEL_MASTER"));
    assert_int_equal(sw_redis_url_with_password(base, env("SW_LAB_SENTINEL_DATA_PASSWORD"),
                                                with_data, sizeof(with_data), &err),
                     0);
    assert_int_equal(sw_redis_url_with_sentinel_password(with_data, env("SW_LAB_SENTINEL_PASSWORD"),
                                                         out, len, &err),
                     0);
}

struct watch {
    int up, ups;
};

static void on_state(struct sw_redis *r, int up, const char *why, void *ctx)
{
    (void)r;
    (void)why;
    struct watch *w = ctx;
    w->up = up;
    w->ups += up;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* Runs the loop until w->up or ms passed. */
static void run_for(uv_loop_t *loop, struct watch *w, int ms)
{
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, on_tick, 50, 50);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        uv_run(loop, UV_RUN_ONCE);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!w->up && (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void test_lone_voice(void **state)
{
    (void)state;
    lab_up();
    start_liar();
    redisContext *s = first_sentinel();
    int master = master_port(s);
    assert_int_not_equal(master, rogue_port);
    const char *lab = env("SW_LAB_SENTINELS");
    char list[512], url[1536], liar_hp[64];
    snprintf(liar_hp, sizeof(liar_hp), "127.0.0.1:%d", liar_port);
    /* The liar first: the first Sentinel that answers used to be followed. */
    snprintf(list, sizeof(list), "%s,%s", liar_hp, lab);
    sentinel_url(url, sizeof(url), list);
    FILE *logf = tmpfile();
    assert_non_null(logf);
    sw_log_set_stream(logf);

    /* Blocking: 3 of 4 name the lab's master; followed. */
    struct sw_error err;
    redisContext *c = NULL;
    if (sw_redis_sync_connect(url, 2000, &c, &err) != 0)
        fail_msg("connect with a liar among four: %s", err.msg);
    assert_int_equal(node_port(c), master);
    sw_redis_sync_free(c);

    /* Async: the same, and the disagreement is logged once, naming the liar. */
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct watch w = {0};
    struct sw_redis *r = NULL;
    assert_int_equal(sw_redis_connect(&loop, url, on_state, &w, &r, &err), 0);
    run_for(&loop, &w, 10000);
    assert_true(w.up);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", master);
    assert_string_equal(sw_redis_node(r), want);
    sw_redis_free(r);
    uv_run(&loop, UV_RUN_DEFAULT);

    /* Async, the liar one of two: a lone voice against a lone voice is no
     * majority. Never up, and nothing sent to the liar's node. */
    char two[256];
    snprintf(two, sizeof(two), "%s,%.*s", liar_hp, (int)strcspn(lab, ","), lab);
    sentinel_url(url, sizeof(url), two);
    w = (struct watch){0};
    assert_int_equal(sw_redis_connect(&loop, url, on_state, &w, &r, &err), 0);
    run_for(&loop, &w, 2500);
    assert_int_equal(w.ups, 0);
    assert_string_equal(sw_redis_node(r), "");
    sw_redis_free(r);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);

    /* Blocking lookup: refused at once, naming each Sentinel and what it said. */
    struct sw_redis_url u;
    assert_int_equal(sw_redis_url_parse(url, &u, &err), 0);
    char host[256], dissent[1024];
    int port = 0;
    assert_int_equal(sw_redis_sentinel_discover(&u, 2000, host, sizeof(host), &port, dissent,
                                                sizeof(dissent), &err),
                     SW_EUNAVAIL);
    sw_redis_url_free(&u);
    char said[128];
    snprintf(said, sizeof(said), "%s names 127.0.0.1:%d", liar_hp, rogue_port);
    if (strstr(err.msg, "no majority of the 2 Sentinels (2 needed)") == NULL ||
        strstr(err.msg, said) == NULL || strstr(err.msg, want) == NULL)
        fail_msg("unexpected: %s", err.msg);
    assert_null(strstr(err.msg, env("SW_LAB_SENTINEL_PASSWORD")));
    assert_null(strstr(err.msg, env("SW_LAB_SENTINEL_DATA_PASSWORD")));
    assert_non_null(strstr(dissent, said));
    print_message("refused as expected: %s\n", err.msg);

    /* The log: who named what, never a password. */
    sw_log_set_stream(stderr);
    fflush(logf);
    rewind(logf);
    static char text[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, logf);
    text[n] = '\0';
    fclose(logf);
    if (strstr(text, "the Sentinels disagree on the master") == NULL || strstr(text, said) == NULL)
        fail_msg("no disagreement naming the liar in the log:\n%s", text);
    assert_null(strstr(text, env("SW_LAB_SENTINEL_PASSWORD")));
    assert_null(strstr(text, env("SW_LAB_SENTINEL_DATA_PASSWORD")));
    assert_false(rogue_saw_auth());
    sw_redis_sync_free(s);
}

static void test_sync_follows_failover(void **state)
{
    (void)state;
    lab_up();

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
        cmocka_unit_test_teardown(test_lone_voice, stop_liars),
        cmocka_unit_test(test_sync_follows_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
