/*
 * End-to-end test of rediss:// (store/redis_tls.c under store/redis.c)
 * against the lab's Redis on its TLS port, which requires a client
 * certificate: the blocking and the async client read and write through
 * it; a wrong CA, a host name the certificate does not hold, a plain-text
 * server and a missing client certificate are each refused, with an error
 * naming the server and the reason and never the password; and an ACL user
 * (AUTH user password) works over TLS and plain TCP. rediss+sentinel://
 * runs against a data node and a Sentinel the test starts itself, both
 * TLS-only with the lab's certificates (the lab's Sentinels are shared).
 */
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "servers.h"
#include "store/redis.h"

#define ACL_USER     "sw-test-tls-acl"
#define ACL_PASSWORD "acl-secret-5d1e0c"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        fail_msg("%s is not set: run eval \"$(tests/testbed/testbed env)\" on a lab with "
                 "Redis' TLS port (tests/testbed/testbed redis-tls)",
                 name);
    return v;
}

/* The lab's password, plain port and TLS port. */
struct lab {
    char password[128];
    int plain_port;
    int tls_port;
    const char *dir;
};

static void lab(struct lab *l)
{
    struct sw_redis_url u;
    struct sw_error err;
    assert_int_equal(sw_redis_url_parse(env("SW_LAB_REDIS_URL"), &u, &err), 0);
    snprintf(l->password, sizeof(l->password), "%s", u.password);
    l->plain_port = u.port;
    sw_redis_url_free(&u);
    assert_int_equal(sw_redis_url_parse(env("SW_LAB_REDIS_TLS_URL"), &u, &err), 0);
    assert_true(u.tls);
    l->tls_port = u.port;
    sw_redis_url_free(&u);
    l->dir = env("SW_LAB_REDIS_TLS_DIR");
}

/* A rediss URL to host:port with the given CA and, when `cert`, the client certificate. */
static void tls_url(char *out, size_t len, const struct lab *l, const char *cred, const char *host,
                    int port, const char *ca, int cert)
{
    int n =
        snprintf(out, len, "rediss://%s@%s:%d/0?tls_ca_file=%s/%s", cred, host, port, l->dir, ca);
    if (cert)
        snprintf(out + n, len - (size_t)n,
                 "&tls_cert_file=%s/client.crt&tls_key_file=%s/client.key", l->dir, l->dir);
}

static void test_sync_read_write(void **state)
{
    (void)state;
    struct sw_error err;
    redisContext *c = NULL;
    int rc = sw_redis_sync_connect(env("SW_LAB_REDIS_TLS_URL"), 5000, &c, &err);
    if (rc != 0)
        fail_msg("connect: %s", err.msg);
    redisReply *reply = NULL;
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "SET %s %s", "sw:test:tls", "t1"), 0);
    freeReplyObject(reply);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "GET %s", "sw:test:tls"), 0);
    assert_int_equal(reply->type, REDIS_REPLY_STRING);
    assert_string_equal(reply->str, "t1");
    freeReplyObject(reply);
    /* A reply larger than one TLS record (16 KiB) comes through whole. */
    static char big[100000];
    memset(big, 'x', sizeof(big) - 1);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "SET %s %s", "sw:test:tls:big", big),
                     0);
    freeReplyObject(reply);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "GET %s", "sw:test:tls:big"), 0);
    assert_int_equal(reply->len, sizeof(big) - 1);
    assert_memory_equal(reply->str, big, sizeof(big) - 1);
    freeReplyObject(reply);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "DEL %s", "sw:test:tls:big"), 0);
    freeReplyObject(reply);
    sw_redis_sync_free(c);
}

struct run {
    int replies;
    int ups;
    char last[32];
    struct sw_redis *r;
};

static void on_state(struct sw_redis *r, int up, const char *why, void *ctx)
{
    (void)r;
    (void)why;
    struct run *run = ctx;
    if (up)
        run->ups++;
}

static void on_set(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    struct run *run = ctx;
    if (reply == NULL)
        fail_msg("SET: %s", why);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    run->replies++;
}

static void on_get(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    struct run *run = ctx;
    if (reply == NULL)
        fail_msg("GET: %s", why);
    run->replies++;
    if (reply->type == REDIS_REPLY_STRING)
        snprintf(run->last, sizeof(run->last), "%s", reply->str);
    sw_redis_free(r);
}

/* Commands issued at once queue behind the TLS connect (on its thread) and AUTH. */
static void test_async_read_write(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct run run = {0};
    struct sw_error err;
    assert_int_equal(
        sw_redis_connect(&loop, env("SW_LAB_REDIS_TLS_URL"), on_state, &run, &run.r, &err), 0);
    assert_int_equal(sw_redis_command(run.r, on_set, &run, "SET %s %s", "sw:test:tls", "a2"), 0);
    const char *argv[] = {"GET", "sw:test:tls"};
    assert_int_equal(sw_redis_command_argv(run.r, on_get, &run, 2, argv, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(run.ups, 1);
    assert_int_equal(run.replies, 2);
    assert_string_equal(run.last, "a2");
    assert_int_equal(uv_loop_close(&loop), 0);
}

struct refusal {
    char why[512];
    int calls;
};

static void on_refused(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    struct refusal *f = ctx;
    assert_null(reply);
    snprintf(f->why, sizeof(f->why), "%s", why ? why : "");
    f->calls++;
    sw_redis_free(r);
}

/* The async client: a command queued behind a refused TLS connect gets the reason. */
static void test_async_wrong_ca_refused(void **state)
{
    (void)state;
    const char *url = env("SW_LAB_REDIS_TLS_URL");
    const char *dir = env("SW_LAB_REDIS_TLS_DIR");
    char bad[1024], from[600], to[600];
    snprintf(from, sizeof(from), "tls_ca_file=%s/ca.crt", dir);
    snprintf(to, sizeof(to), "tls_ca_file=%s/other-ca.crt", dir);
    const char *at = strstr(url, from);
    assert_non_null(at);
    snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - url), url, to, at + strlen(from));
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct refusal f = {0};
    struct sw_error err;
    struct sw_redis *r = NULL;
    assert_int_equal(sw_redis_connect(&loop, bad, NULL, NULL, &r, &err), 0);
    assert_int_equal(sw_redis_command(r, on_refused, &f, "GET %s", "sw:test:tls"), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(f.calls, 1);
    if (strstr(f.why, "the server's certificate was not accepted") == NULL)
        fail_msg("unexpected reason: %s", f.why);
    struct lab l;
    lab(&l);
    assert_null(strstr(f.why, l.password));
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Connecting to `url` fails with `code`, naming host:port and `reason`, never the password. */
static void refused(const char *url, int code, const char *hostport, const char *reason,
                    const char *password)
{
    struct sw_error err = {0};
    redisContext *c = NULL;
    int rc = sw_redis_sync_connect(url, 1000, &c, &err);
    /* A plain-text Redis may answer the ClientHello (an error that is not
     * TLS), or wait for a line end that never comes (a timeout). */
    if (rc != code && !(code == SW_ETLS && rc == SW_ETIMEDOUT && strstr(reason, "TLS port")))
        fail_msg("expected %d, got %d: %s", code, rc, err.msg);
    assert_null(c);
    if (strstr(err.msg, hostport) == NULL || strstr(err.msg, reason) == NULL)
        fail_msg("expected \"%s\" and \"%s\" in: %s", hostport, reason, err.msg);
    assert_null(strstr(err.msg, password));
    print_message("refused as expected: %s\n", err.msg);
}

static void test_wrong_ca_refused(void **state)
{
    (void)state;
    struct lab l;
    lab(&l);
    char url[1024], cred[160], hp[64];
    snprintf(cred, sizeof(cred), ":%s", l.password);
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", l.tls_port);
    tls_url(url, sizeof(url), &l, cred, "127.0.0.1", l.tls_port, "other-ca.crt", 1);
    refused(url, SW_ETLS, hp, "certificate was not accepted", l.password);
}

static void test_wrong_host_name_refused(void **state)
{
    (void)state;
    struct lab l;
    lab(&l);
    char url[1024], cred[160], hp[64];
    snprintf(cred, sizeof(cred), ":%s", l.password);
    /* localhost reaches the same server, but its certificate names
     * 127.0.0.1 and redis.lab.spillway.test only. */
    snprintf(hp, sizeof(hp), "localhost:%d", l.tls_port);
    tls_url(url, sizeof(url), &l, cred, "localhost", l.tls_port, "ca.crt", 1);
    refused(url, SW_ETLS, hp, "hostname mismatch", l.password);
}

static void test_plain_text_server_refused(void **state)
{
    (void)state;
    struct lab l;
    lab(&l);
    char url[1024], cred[160], hp[64];
    snprintf(cred, sizeof(cred), ":%s", l.password);
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", l.plain_port);
    tls_url(url, sizeof(url), &l, cred, "127.0.0.1", l.plain_port, "ca.crt", 1);
    refused(url, SW_ETLS, hp, "is it a TLS port? rediss:// refuses a plain-text server",
            l.password);
}

static void test_no_client_certificate_refused(void **state)
{
    (void)state;
    struct lab l;
    lab(&l);
    char url[1024], cred[160];
    snprintf(cred, sizeof(cred), ":%s", l.password);
    tls_url(url, sizeof(url), &l, cred, "127.0.0.1", l.tls_port, "ca.crt", 0);
    struct sw_error err = {0};
    redisContext *c = NULL;
    /* With TLS 1.3 the server's refusal comes after the client's side of
     * the handshake is done: it shows as the connection closed at AUTH. */
    assert_int_not_equal(sw_redis_sync_connect(url, 5000, &c, &err), 0);
    assert_null(c);
    assert_null(strstr(err.msg, l.password));
    assert_non_null(strstr(err.msg, "is tls_cert_file needed?"));
    print_message("refused as expected: %s\n", err.msg);
}

/* An ACL user (Redis 6+): AUTH user password, over TLS and plain TCP. */
static void test_acl_user(void **state)
{
    (void)state;
    struct lab l;
    lab(&l);
    struct sw_error err;
    redisContext *admin = NULL;
    assert_int_equal(sw_redis_sync_connect(env("SW_LAB_REDIS_URL"), 5000, &admin, &err), 0);
    redisReply *reply = NULL;
    assert_int_equal(sw_redis_sync_command(admin, &reply, &err,
                                           "ACL SETUSER " ACL_USER " reset on >" ACL_PASSWORD
                                           " ~sw:test:acl:* +@all"),
                     0);
    freeReplyObject(reply);
    char url[1024];
    tls_url(url, sizeof(url), &l, ACL_USER ":" ACL_PASSWORD, "127.0.0.1", l.tls_port, "ca.crt", 1);
    redisContext *c = NULL;
    if (sw_redis_sync_connect(url, 5000, &c, &err) != 0)
        fail_msg("ACL user over TLS: %s", err.msg);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "ACL WHOAMI"), 0);
    assert_string_equal(reply->str, ACL_USER);
    freeReplyObject(reply);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "SET %s %s", "sw:test:acl:k", "v"), 0);
    freeReplyObject(reply);
    /* The user's keys are limited: the grant is the user's, not the default's. */
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "GET %s", "sw:test:tls"), SW_EIO);
    sw_redis_sync_free(c);
    /* Plain TCP, and a wrong password refused without echoing it. */
    snprintf(url, sizeof(url), "redis://" ACL_USER ":" ACL_PASSWORD "@127.0.0.1:%d/0",
             l.plain_port);
    assert_int_equal(sw_redis_sync_connect(url, 5000, &c, &err), 0);
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "ACL WHOAMI"), 0);
    assert_string_equal(reply->str, ACL_USER);
    freeReplyObject(reply);
    sw_redis_sync_free(c);
    snprintf(url, sizeof(url), "redis://" ACL_USER ":not-" ACL_PASSWORD "@127.0.0.1:%d/0",
             l.plain_port);
    assert_int_equal(sw_redis_sync_connect(url, 5000, &c, &err), SW_EAUTH);
    assert_null(strstr(err.msg, ACL_PASSWORD));
    assert_int_equal(sw_redis_sync_command(admin, &reply, &err, "ACL DELUSER " ACL_USER), 0);
    freeReplyObject(reply);
    sw_redis_sync_free(admin);
}

/* ---- rediss+sentinel:// on a private data node and Sentinel -------------- */

/* Writes a TLS-only server config (plain port 0) into dir/name. */
static void write_conf(const char *dir, const char *name, const char *tls, int port,
                       const char *extra)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "bind 127.0.0.1\nport 0\ntls-port %d\ntls-cert-file %s/server.crt\n"
            "tls-key-file %s/server.key\ntls-ca-cert-file %s/ca.crt\ntls-auth-clients yes\n"
            "save \"\"\nappendonly no\ndir %s\nlogfile %s/%s.log\n%s",
            port, tls, tls, tls, dir, dir, name, extra);
    fclose(f);
}

/* The private servers, stopped by the teardown even when the test fails. */
static pid_t servers[2];
static char server_dir[64];

static int stop_servers(void **state)
{
    (void)state;
    return sw_test_stop_servers(servers, 2, server_dir);
}

static void test_sentinel_over_tls(void **state)
{
    (void)state;
    const char *tls = env("SW_LAB_REDIS_TLS_DIR");
    char *dir = server_dir;
    snprintf(server_dir, sizeof(server_dir), "/tmp/sw-test-rediss-sentinel-XXXXXX");
    assert_non_null(mkdtemp(dir));
    int dport = sw_test_free_port(), sport = sw_test_free_port();
    char extra[256], conf[600];
    write_conf(dir, "data.conf", tls, dport, "requirepass data-secret-91c2\n");
    char extra2[768];
    snprintf(extra, sizeof(extra),
             "tls-replication yes\nsentinel monitor m 127.0.0.1 %d 1\n"
             "sentinel auth-pass m data-secret-91c2\n",
             dport);
    snprintf(extra2, sizeof(extra2),
             "%stls-client-cert-file %s/client.crt\ntls-client-key-file %s/client.key\n", extra,
             tls, tls);
    write_conf(dir, "sentinel.conf", tls, sport, extra2);
    snprintf(conf, sizeof(conf), "%s/data.conf", dir);
    servers[0] = sw_test_start_server(conf, 0);
    snprintf(conf, sizeof(conf), "%s/sentinel.conf", dir);
    servers[1] = sw_test_start_server(conf, 1);

    char url[1024];
    snprintf(url, sizeof(url),
             "rediss+sentinel://:data-secret-91c2@127.0.0.1:%d/m/0?tls_ca_file=%s/ca.crt"
             "&tls_cert_file=%s/client.crt&tls_key_file=%s/client.key",
             sport, tls, tls, tls);
    struct sw_error err = {0};
    redisContext *c = NULL;
    int rc = -1;
    for (int i = 0; i < 100 && rc != 0; i++) { /* until both are up */
        rc = sw_redis_sync_connect(url, 1000, &c, &err);
        if (rc != 0)
            usleep(100000);
    }
    if (rc != 0)
        fail_msg("rediss+sentinel: %s", err.msg);
    redisReply *reply = NULL;
    assert_int_equal(sw_redis_sync_command(c, &reply, &err, "SET %s %s", "k", "sentinel-tls"), 0);
    freeReplyObject(reply);
    sw_redis_sync_free(c);

    /* The async client finds the master through the Sentinel, both over TLS. */
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct run run = {0};
    assert_int_equal(sw_redis_connect(&loop, url, on_state, &run, &run.r, &err), 0);
    assert_int_equal(sw_redis_command(run.r, on_set, &run, "SET %s %s", "k2", "x"), 0);
    assert_int_equal(sw_redis_command(run.r, on_get, &run, "GET %s", "k"), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(run.ups, 1);
    assert_string_equal(run.last, "sentinel-tls");
    assert_int_equal(uv_loop_close(&loop), 0);

    /* A wrong CA: the Sentinel itself is refused, named, with the reason. */
    snprintf(url, sizeof(url),
             "rediss+sentinel://:data-secret-91c2@127.0.0.1:%d/m/0?tls_ca_file=%s/other-ca.crt"
             "&tls_cert_file=%s/client.crt&tls_key_file=%s/client.key",
             sport, tls, tls, tls);
    assert_int_equal(sw_redis_sync_connect(url, 1000, &c, &err), SW_ENET);
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", sport);
    if (strstr(err.msg, hp) == NULL ||
        strstr(err.msg, "the server's certificate was not accepted") == NULL)
        fail_msg("unexpected: %s", err.msg);
    assert_null(strstr(err.msg, "data-secret-91c2"));
    print_message("refused as expected: %s\n", err.msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_read_write),
        cmocka_unit_test(test_async_read_write),
        cmocka_unit_test(test_async_wrong_ca_refused),
        cmocka_unit_test(test_wrong_ca_refused),
        cmocka_unit_test(test_wrong_host_name_refused),
        cmocka_unit_test(test_plain_text_server_refused),
        cmocka_unit_test(test_no_client_certificate_refused),
        cmocka_unit_test(test_acl_user),
        cmocka_unit_test_teardown(test_sentinel_over_tls, stop_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
