/*
 * End-to-end test of the async Redis client's reconnect (store/redis.c)
 * against a real redis-server that the test starts itself (not the lab's,
 * which others share): on a free 127.0.0.1 port, with a password and a
 * database other than 0, in a temporary folder.
 *
 * The server is restarted while the client is connected, once gracefully
 * (SIGTERM) and once killed (SIGKILL). Each time the commands in flight get
 * their callback with an error (no reply) instead of hanging, commands sent
 * while the server is down fail rather than wait, and the client connects
 * again by itself: AUTH and SELECT are sent again, so later commands succeed
 * in the same database.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/redis.h"

#define DB 3

static char dir[256];
static char conf[300];
static char url[256];
static int port;
static pid_t server = -1;

/* ---- the private redis-server -------------------------------------------- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0)
        fail_msg("cannot find a free port");
    close(fd);
    return ntohs(a.sin_port);
}

/* Waits until the server answers an authenticated PING (up to 10 s). */
static void wait_ready(void)
{
    for (int i = 0; i < 200; i++) {
        redisContext *c = NULL;
        if (sw_redis_sync_connect(url, 200, &c, NULL) == 0) {
            redisReply *r = NULL;
            int rc = sw_redis_sync_command(c, &r, NULL, "PING");
            if (r != NULL)
                freeReplyObject(r);
            redisFree(c);
            if (rc == 0)
                return;
        }
        usleep(50 * 1000);
    }
    fail_msg("redis-server on port %d did not come up (see %s/redis.log)", port, dir);
}

static void start_server(void)
{
    server = fork();
    assert_true(server >= 0);
    if (server == 0) {
        /* The password is in the config file (0600), not on a command line. */
        execlp("redis-server", "redis-server", conf, (char *)NULL);
        _exit(127);
    }
    wait_ready();
}

static void stop_server(int sig)
{
    assert_true(server > 0);
    assert_int_equal(kill(server, sig), 0);
    int st;
    assert_int_equal(waitpid(server, &st, 0), server);
    server = -1;
}

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/sw-e2e-redis-XXXXXX",
             base != NULL && base[0] != '\0' ? base : "/tmp");
    if (mkdtemp(dir) == NULL)
        return -1;
    unsigned char raw[16];
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw))
        return -1;
    close(fd);
    char pw[33];
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(pw + 2 * i, 3, "%02x", raw[i]);
    port = free_port();
    snprintf(conf, sizeof(conf), "%s/redis.conf", dir);
    fd = open(conf, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    fprintf(f,
            "bind 127.0.0.1\nport %d\nrequirepass %s\ndir %s\nlogfile %s/redis.log\n"
            "save \"\"\nappendonly no\ndaemonize no\ndatabases 16\n",
            port, pw, dir, dir);
    fclose(f);
    snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d/%d", pw, port, DB);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (server > 0) {
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
    }
    char p[400];
    snprintf(p, sizeof(p), "%s/redis.log", dir);
    unlink(p);
    unlink(conf);
    snprintf(p, sizeof(p), "%s/dump.rdb", dir);
    unlink(p);
    return rmdir(dir);
}

/* ---- loop helpers ---------------------------------------------------------- */

static void on_tick(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

/* Runs the loop until *flag >= want or `ms` pass; returns whether it got there. */
static int run_until(uv_loop_t *loop, const int *flag, int want, int ms)
{
    for (int waited = 0; *flag < want && waited < ms; waited += 20) {
        uv_timer_t t;
        int fired = 0;
        uv_timer_init(loop, &t);
        t.data = &fired;
        uv_timer_start(&t, on_tick, 20, 0);
        while (!fired)
            uv_run(loop, UV_RUN_ONCE);
        uv_close((uv_handle_t *)&t, NULL);
        uv_run(loop, UV_RUN_NOWAIT);
    }
    return *flag >= want;
}

/* ---- callbacks -------------------------------------------------------------- */

struct client {
    struct sw_redis *r;
    int ups, downs;
};

static void on_state(struct sw_redis *r, int up, const char *why, void *ctx)
{
    (void)r;
    (void)why;
    struct client *c = ctx;
    if (up)
        c->ups++;
    else
        c->downs++;
}

struct reply {
    int done;
    int type;      /* REDIS_REPLY_*, or -1 for no reply */
    char str[128]; /* the string, status or error text */
    char why[128]; /* why there was no reply */
};

static void on_reply(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    struct reply *out = ctx;
    out->done++;
    out->type = reply != NULL ? reply->type : -1;
    if (reply != NULL && reply->str != NULL)
        snprintf(out->str, sizeof(out->str), "%s", reply->str);
    snprintf(out->why, sizeof(out->why), "%s", why != NULL ? why : "");
}

/* SET then GET a value on the async client; both must succeed. */
static void set_get(uv_loop_t *loop, struct client *c, const char *value)
{
    struct reply s = {0}, g = {0};
    assert_int_equal(sw_redis_command(c->r, on_reply, &s, "SET sw:reconnect %s", value), 0);
    assert_int_equal(sw_redis_command(c->r, on_reply, &g, "GET sw:reconnect"), 0);
    assert_true(run_until(loop, &g.done, 1, 5000));
    assert_int_equal(s.done, 1);
    /* The server requires a password: NOAUTH here would mean no AUTH. */
    if (s.type != REDIS_REPLY_STATUS)
        fail_msg("SET: reply type %d: %s%s", s.type, s.str, s.why);
    assert_string_equal(s.str, "OK");
    assert_int_equal(g.type, REDIS_REPLY_STRING);
    assert_string_equal(g.str, value);
}

/* The value in database DB, read with a fresh blocking connection. */
static void check_stored(const char *value)
{
    redisContext *sc = NULL;
    struct sw_error err;
    assert_int_equal(sw_redis_sync_connect(url, 2000, &sc, &err), 0);
    redisReply *r = NULL;
    assert_int_equal(sw_redis_sync_command(sc, &r, &err, "GET sw:reconnect"), 0);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, value);
    freeReplyObject(r);
    /* Not in database 0: the client selected DB again after reconnecting. */
    assert_int_equal(sw_redis_sync_command(sc, &r, &err, "SELECT 0"), 0);
    freeReplyObject(r);
    assert_int_equal(sw_redis_sync_command(sc, &r, &err, "EXISTS sw:reconnect"), 0);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    redisFree(sc);
}

static void restart_while_connected(uv_loop_t *loop, struct client *c, int sig, int round)
{
    /* Commands in flight at the restart: blocked server-side. */
    struct reply b1 = {0}, b2 = {0};
    assert_int_equal(sw_redis_command(c->r, on_reply, &b1, "BLPOP sw:never 30"), 0);
    assert_int_equal(sw_redis_command(c->r, on_reply, &b2, "BLPOP sw:never2 30"), 0);
    int never = 0;
    run_until(loop, &never, 1, 200); /* let them reach the server */
    assert_int_equal(b1.done, 0);

    stop_server(sig);
    /* Their callbacks run with no reply and a reason, well before the 30 s. */
    assert_true(run_until(loop, &b2.done, 1, 5000));
    assert_int_equal(b1.done, 1);
    assert_int_equal(b1.type, -1);
    assert_int_equal(b2.type, -1);
    assert_true(b1.why[0] != '\0');
    printf("  round %d (signal %d): in-flight command failed: %s\n", round, sig, b1.why);
    assert_int_equal(c->downs, round);
    assert_false(sw_redis_is_up(c->r));

    /* While the server is down (long enough for several connect attempts
     * to be refused) commands fail: refused at once, or, when a connect
     * attempt is under way, their callback runs with an error once it
     * fails. */
    struct reply d[8];
    memset(d, 0, sizeof(d));
    int queued = 0, refused = 0, failed = 0;
    for (int i = 0; i < 8; i++) {
        int rc = sw_redis_command(c->r, on_reply, &d[i], "GET sw:reconnect");
        if (rc == 0)
            queued++;
        else {
            assert_int_equal(rc, SW_EUNAVAIL);
            refused++;
        }
        int tick = 0;
        run_until(loop, &tick, 1, 100);
    }
    for (int i = 0; i < 8; i++) {
        if (d[i].done == 0 && queued > 0)
            run_until(loop, &d[i].done, 1, 15000);
        if (d[i].done) {
            assert_int_equal(d[i].done, 1);
            assert_int_equal(d[i].type, -1);
            failed++;
        }
    }
    assert_int_equal(failed, queued);
    assert_int_equal(refused + failed, 8);
    assert_int_equal(c->ups, round);
    printf("  round %d: while down, %d commands refused, %d failed in a connect attempt\n", round,
           refused, failed);

    start_server();
    /* The client comes back by itself (backoff from 100 ms, doubling). */
    assert_true(run_until(loop, &c->ups, round + 1, 20000));
    assert_true(sw_redis_is_up(c->r));
}

static void test_reconnect_after_restart(void **state)
{
    (void)state;
    start_server();
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct client c = {0};
    struct sw_error err;
    assert_int_equal(sw_redis_connect(&loop, url, on_state, &c, &c.r, &err), 0);
    assert_true(run_until(&loop, &c.ups, 1, 5000));
    set_get(&loop, &c, "before");
    check_stored("before");

    /* The server's data is not persisted, so a value read after a restart
     * was written after it. */
    restart_while_connected(&loop, &c, SIGTERM, 1);
    set_get(&loop, &c, "after-sigterm");
    check_stored("after-sigterm");

    restart_while_connected(&loop, &c, SIGKILL, 2);
    set_get(&loop, &c, "after-sigkill");
    check_stored("after-sigkill");
    assert_int_equal(c.ups, 3);
    assert_int_equal(c.downs, 2);

    sw_redis_free(c.r);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    stop_server(SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reconnect_after_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
