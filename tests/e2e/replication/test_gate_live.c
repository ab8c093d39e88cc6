/*
 * test_gate_live.c - the gating API against the lab's versitygw endpoints:
 * estimate, ensure (inputs present and verified in a region, with where),
 * errors naming the input, outputs flowing back continuously and once
 * more at the end, and the rounds of an attempt given up stopped with no
 * last round; the pool of worker threads every Job shares (no thread per
 * Job, work beyond the pool queued, an outputs stream given up while it
 * waits never runs a round).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/log.h"
#include "replication/gate.h"
#include "store/redis.h"

static uv_loop_t loop;
static struct sw_http *http;
static struct sw_gate_store stores[3];
static struct sw_s3 *onprem, *usw2;
static char id[64];

static const char *need(const char *n)
{
    const char *v = getenv(n);
    if (v == NULL || *v == '\0') {
        fprintf(stderr, "test_gate_live: %s is not set; start the lab\n", n);
        exit(1);
    }
    return v;
}

struct answer {
    int done;
    int rounds;
    int rc;
    char msg[SW_ERROR_MSG_MAX];
    char url[1200], store[64];
    int64_t objects, bytes, to_copy;
    size_t nloc;
};

static void on_answer(const struct sw_gate_result *r, void *ctx)
{
    struct answer *a = ctx;
    a->done = 1;
    a->rounds++;
    a->rc = r->rc;
    snprintf(a->msg, sizeof(a->msg), "%s", r->err.msg);
    a->nloc = r->nlocations;
    a->to_copy = r->bytes_to_copy;
    if (r->nlocations > 0) {
        snprintf(a->url, sizeof(a->url), "%s", r->locations[0].url);
        snprintf(a->store, sizeof(a->store), "%s", r->locations[0].store);
        a->objects = r->locations[0].objects;
        a->bytes = r->locations[0].bytes;
    }
}

static void wait_for(struct answer *a)
{
    for (int i = 0; i < 6000 && !a->done; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(a->done);
}

static void put(struct sw_s3 *s, const char *bucket, const char *key, size_t n, int seed)
{
    char *b = sw_malloc(n);
    memset(b, seed, n);
    struct sw_error err;
    if (sw_s3_put_sync(s, bucket, key, b, n, NULL, 0, &err) != 0)
        fail_msg("%s", err.msg);
    sw_free(b);
}

static struct sw_gate_request request(struct sw_gate_input *in, size_t n, const char *region)
{
    struct sw_gate_request r = {.job = "team-a/train-7",
                                .region = region,
                                .stores = stores,
                                .nstores = 3,
                                .inputs = in,
                                .ninputs = n,
                                .redis_url = getenv("SW_LAB_REDIS_URL"),
                                .assumed_bytes_per_s = 10e6};
    return r;
}

static void test_estimate_then_ensure(void **state)
{
    (void)state;
    char prefix[128], key[256];
    snprintf(prefix, sizeof(prefix), "%s/in/", id);
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof(key), "%spart-%d", prefix, i);
        put(onprem, "datasets", key, 1 << 20, i + 1);
    }
    struct sw_gate_input in = {"onprem", "datasets", prefix, NULL};
    struct sw_gate_request req = request(&in, 1, "us-west-2");
    struct answer a = {0};
    struct sw_error err;
    assert_int_equal(sw_gate_estimate(&loop, &req, on_answer, &a, &err), 0);
    wait_for(&a);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.to_copy, 3 << 20);

    memset(&a, 0, sizeof(a));
    assert_int_equal(sw_gate_ensure(&loop, &req, on_answer, &a, &err), 0);
    wait_for(&a);
    if (a.rc != 0)
        fail_msg("%s", a.msg);
    assert_int_equal(a.nloc, 1);
    assert_string_equal(a.store, "us-west-2");
    char want[256];
    snprintf(want, sizeof(want), "s3://datasets/%s", prefix);
    assert_string_equal(a.url, want);
    assert_int_equal(a.objects, 3);
    assert_int_equal(a.bytes, 3 << 20);
    snprintf(key, sizeof(key), "%spart-2", prefix);
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(usw2, "datasets", key, &h, &err), 0);
    assert_int_equal(h.size, 1 << 20);
    assert_int_equal(strlen(h.sha256), 64);

    /* Present now: nothing left to copy. */
    memset(&a, 0, sizeof(a));
    assert_int_equal(sw_gate_estimate(&loop, &req, on_answer, &a, &err), 0);
    wait_for(&a);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.to_copy, 0);
}

/* Bucket names are global in AWS: an input can go to a bucket of another
 * name in the target region (here the lab's "models" in us-west-2). */
static void test_ensure_into_another_bucket(void **state)
{
    (void)state;
    char prefix[128], key[256];
    snprintf(prefix, sizeof(prefix), "%s/mapped/", id);
    snprintf(key, sizeof(key), "%sonly", prefix);
    put(onprem, "datasets", key, 4096, 7);
    struct sw_gate_input in = {"onprem", "datasets", prefix, "models"};
    struct sw_gate_request req = request(&in, 1, "us-west-2");
    struct answer a = {0};
    struct sw_error err;
    assert_int_equal(sw_gate_ensure(&loop, &req, on_answer, &a, &err), 0);
    wait_for(&a);
    if (a.rc != 0)
        fail_msg("%s", a.msg);
    char want[256];
    snprintf(want, sizeof(want), "s3://models/%s", prefix);
    assert_string_equal(a.url, want);
    assert_int_equal(a.objects, 1);
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(usw2, "models", key, &h, &err), 0);
    assert_int_equal(h.size, 4096);
    /* Not under the source's name in us-west-2. */
    assert_int_not_equal(sw_s3_head_sync(usw2, "datasets", key, &h, &err), 0);
}

static void test_errors_name_the_input(void **state)
{
    (void)state;
    struct sw_gate_input in = {"onprem", "nosuchbucket-gate", "x/", NULL};
    struct sw_gate_request req = request(&in, 1, "us-east-1");
    struct answer a = {0};
    struct sw_error err;
    assert_int_equal(sw_gate_ensure(&loop, &req, on_answer, &a, &err), 0);
    wait_for(&a);
    assert_int_equal(a.rc, SW_ENOENT);
    assert_non_null(strstr(a.msg, "team-a/train-7"));
    assert_non_null(strstr(a.msg, "nosuchbucket-gate"));
    assert_non_null(strstr(a.msg, "NoSuchBucket"));

    struct sw_gate_input ok = {"onprem", "datasets", "x/", NULL};
    req = request(&ok, 1, "eu-central-1");
    assert_int_equal(sw_gate_ensure(&loop, &req, on_answer, &a, &err), SW_EINFEASIBLE);
    assert_non_null(strstr(err.msg, "no object store in region eu-central-1"));
    struct sw_gate_input unknown = {"mars", "datasets", "x/", NULL};
    req = request(&unknown, 1, "us-east-1");
    assert_int_equal(sw_gate_ensure(&loop, &req, on_answer, &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "\"mars\""));
}

static void test_outputs_flow_back(void **state)
{
    (void)state;
    char from_p[128], to_p[128], key[256];
    snprintf(from_p, sizeof(from_p), "%s/ckpt/", id);
    snprintf(to_p, sizeof(to_p), "%s/ckpt-back/", id);
    snprintf(key, sizeof(key), "%sstep-100.pt", from_p);
    put(usw2, "checkpoints", key, 4096, 1);
    struct sw_gate_input from = {"us-west-2", "checkpoints", from_p, NULL};
    struct sw_gate_input to = {"onprem", "checkpoints", to_p, NULL};
    struct answer rounds = {0}, last = {0};
    struct sw_gate_outputs *o;
    struct sw_error err;
    assert_int_equal(sw_gate_outputs_start(&loop, stores, 3, "team-a/train-7", 1, &from, &to,
                                           getenv("SW_LAB_REDIS_URL"), 0.5, on_answer, &rounds, &o,
                                           &err),
                     0);
    /* Continuously: the first checkpoint arrives without the Job ending. */
    wait_for(&rounds);
    assert_int_equal(rounds.rc, 0);
    assert_int_equal(rounds.objects, 1);
    /* The Job writes its final checkpoint and ends at once. */
    snprintf(key, sizeof(key), "%sstep-200.pt", from_p);
    put(usw2, "checkpoints", key, 8192, 2);
    sw_gate_outputs_finish(o, on_answer, &last);
    wait_for(&last);
    if (last.rc != 0)
        fail_msg("%s", last.msg);
    assert_int_equal(last.objects, 2);
    snprintf(key, sizeof(key), "%sstep-200.pt", to_p);
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(onprem, "checkpoints", key, &h, &err), 0);
    assert_int_equal(h.size, 8192);
}

static int home_has(const char *key, int64_t *size)
{
    struct sw_s3_head h;
    struct sw_error err;
    int rc = sw_s3_head_sync(onprem, "checkpoints", key, &h, &err);
    if (rc == 0 && size)
        *size = h.size;
    return rc == 0;
}

/* An attempt given up: what it wrote after the last round that ran is never
 * copied, not even by a round at the stop; the stop's end is reported once
 * the rounds' thread has ended; each attempt's journal is its own. */
static void test_outputs_stop_has_no_last_round(void **state)
{
    (void)state;
    char job[128], from_p[128], to_p[128], key[256];
    snprintf(job, sizeof(job), "team-a/%s-stop", id);
    snprintf(from_p, sizeof(from_p), "%s/stop/attempt-1/", id);
    snprintf(to_p, sizeof(to_p), "%s/stop-back/", id);
    snprintf(key, sizeof(key), "%sckpt-1.pt", from_p);
    put(usw2, "checkpoints", key, 4096, 3);
    struct sw_gate_input from = {"us-west-2", "checkpoints", from_p, NULL};
    struct sw_gate_input to = {"onprem", "checkpoints", to_p, NULL};
    struct answer rounds = {0}, stopped = {0};
    struct sw_gate_outputs *o;
    struct sw_error err;
    /* One round at the start; the next would come 300 s later. */
    assert_int_equal(sw_gate_outputs_start(&loop, stores, 3, job, 1, &from, &to,
                                           getenv("SW_LAB_REDIS_URL"), 300, on_answer, &rounds, &o,
                                           &err),
                     0);
    wait_for(&rounds);
    assert_int_equal(rounds.rc, 0);
    snprintf(key, sizeof(key), "%sckpt-1.pt", to_p);
    assert_true(home_has(key, NULL));
    /* The attempt writes again, and is given up before any round saw it. */
    snprintf(key, sizeof(key), "%sckpt-2.pt", from_p);
    put(usw2, "checkpoints", key, 4096, 4);
    sw_gate_outputs_stop(o, on_answer, &stopped);
    snprintf(key, sizeof(key), "%sckpt-3.pt", from_p);
    put(usw2, "checkpoints", key, 4096, 5);
    wait_for(&stopped);
    assert_int_equal(stopped.rc, 0);
    assert_int_equal(stopped.rounds, 1);
    /* Let a late round, were there one, run its course. */
    for (int i = 0; i < 20; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep(50000);
    }
    snprintf(key, sizeof(key), "%sckpt-2.pt", to_p);
    if (home_has(key, NULL))
        fail_msg("%s reached home after its attempt was given up", key);
    snprintf(key, sizeof(key), "%sckpt-3.pt", to_p);
    if (home_has(key, NULL))
        fail_msg("%s reached home after its attempt was given up", key);
    assert_int_equal(rounds.rounds, 1);

    /* Attempt 2 of the same Job: its journal is not attempt 1's. */
    redisContext *c = NULL;
    assert_int_equal(sw_redis_sync_connect(getenv("SW_LAB_REDIS_URL"), 5000, &c, &err), 0);
    char jk[400], base[200];
    snprintf(base, sizeof(base), "gate-%s", job);
    for (char *p = base; *p; p++)
        if (*p == '/' || *p == ':' || *p == ' ')
            *p = '.';
    snprintf(jk, sizeof(jk), "sw:repl:%s-out-a1-0:done:onprem", base);
    redisReply *r = NULL;
    assert_int_equal(sw_redis_sync_command(c, &r, &err, "EXISTS %s", jk), 0);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    snprintf(jk, sizeof(jk), "sw:repl:%s-out-a2-0:done:onprem", base);
    assert_int_equal(sw_redis_sync_command(c, &r, &err, "EXISTS %s", jk), 0);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    sw_redis_sync_free(c);
}

/* A stop while a round is under way: the round ends (its object complete at
 * home, no upload left open) before the stop is reported. */
static void test_outputs_stop_waits_for_the_round(void **state)
{
    (void)state;
    char job[128], from_p[128], to_p[128], key[256];
    snprintf(job, sizeof(job), "team-a/%s-busy", id);
    snprintf(from_p, sizeof(from_p), "%s/busy/attempt-1/", id);
    snprintf(to_p, sizeof(to_p), "%s/busy-back/", id);
    snprintf(key, sizeof(key), "%sbig.pt", from_p);
    put(usw2, "checkpoints", key, (size_t)40 << 20, 6);
    struct sw_gate_input from = {"us-west-2", "checkpoints", from_p, NULL};
    struct sw_gate_input to = {"onprem", "checkpoints", to_p, NULL};
    struct answer rounds = {0}, stopped = {0};
    struct sw_gate_outputs *o;
    struct sw_error err;
    assert_int_equal(sw_gate_outputs_start(&loop, stores, 3, job, 1, &from, &to,
                                           getenv("SW_LAB_REDIS_URL"), 300, on_answer, &rounds, &o,
                                           &err),
                     0);
    /* The first round starts at once; stop while it copies 40 MiB. */
    usleep(100000);
    sw_gate_outputs_stop(o, on_answer, &stopped);
    wait_for(&stopped);
    if (stopped.rc != 0)
        fail_msg("%s", stopped.msg);
    snprintf(key, sizeof(key), "%sbig.pt", to_p);
    int64_t size = 0;
    if (stopped.objects == 1) {
        /* The round was under way: it ended before the stop was reported. */
        assert_true(home_has(key, &size));
        assert_int_equal(size, (int64_t)40 << 20);
    }
    struct sw_s3_uploads u;
    assert_int_equal(sw_s3_list_uploads_sync(onprem, "checkpoints", to_p, &u, &err), 0);
    assert_int_equal(u.n, 0);
    sw_s3_uploads_free(&u);
}

static int threads_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    int n = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* A "Redis" that takes connections and never answers: gate work that
 * journals there holds its worker until the command times out (5 s). */
static int silent_server(char *url, size_t n)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t l = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    snprintf(url, n, "redis://127.0.0.1:%d", ntohs(a.sin_port));
    return fd;
}

/* Eight gated Jobs at once on a pool of two (main sets it): no thread is
 * started for any of them, six wait in the queue, an outputs stream given
 * up while it waits is reported at once and never runs a round, and the
 * waiting estimates are answered once the workers are free. */
static void test_pool_is_shared_and_small(void **state)
{
    (void)state;
    char prefix[128], key[256], from_p[128], to_p[128], job[128], silent[64];
    snprintf(prefix, sizeof(prefix), "%s/pool/", id);
    snprintf(key, sizeof(key), "%sa.bin", prefix);
    put(onprem, "datasets", key, 1024, 7);
    snprintf(from_p, sizeof(from_p), "%s/pool-out/attempt-1/", id);
    snprintf(to_p, sizeof(to_p), "%s/pool-back/", id);
    snprintf(key, sizeof(key), "%sckpt.pt", from_p);
    put(usw2, "checkpoints", key, 2048, 8);
    snprintf(job, sizeof(job), "team-a/%s-pool", id);
    int fd = silent_server(silent, sizeof(silent));
    struct sw_gate_pool_stats st;
    sw_gate_pool_stats(&st);
    assert_int_equal(st.workers, 2);
    int before = threads_now();

    struct sw_gate_input in = {"onprem", "datasets", prefix, NULL};
    struct sw_gate_request req = request(&in, 1, "us-west-2");
    struct answer held[2] = {{0}}, est[5] = {{0}}, rounds = {0}, stopped = {0};
    struct sw_error err;
    req.redis_url = silent;
    for (int i = 0; i < 2; i++)
        assert_int_equal(sw_gate_estimate(&loop, &req, on_answer, &held[i], &err), 0);
    req.redis_url = getenv("SW_LAB_REDIS_URL");
    for (int i = 0; i < 5; i++)
        assert_int_equal(sw_gate_estimate(&loop, &req, on_answer, &est[i], &err), 0);
    struct sw_gate_input from = {"us-west-2", "checkpoints", from_p, NULL};
    struct sw_gate_input to = {"onprem", "checkpoints", to_p, NULL};
    struct sw_gate_outputs *o;
    assert_int_equal(sw_gate_outputs_start(&loop, stores, 3, job, 1, &from, &to,
                                           getenv("SW_LAB_REDIS_URL"), 300, on_answer, &rounds, &o,
                                           &err),
                     0);
    /* Both workers are held by the silent journal; the rest waits. */
    for (int i = 0; i < 100; i++) {
        sw_gate_pool_stats(&st);
        if (st.running == 2 && st.queued == 6)
            break;
        usleep(10000);
    }
    assert_int_equal(st.running, 2);
    assert_int_equal(st.queued, 6);
    assert_int_equal(threads_now(), before);
    /* Given up while waiting: reported without a round. */
    sw_gate_outputs_stop(o, on_answer, &stopped);
    wait_for(&stopped);
    assert_int_equal(stopped.rc, 0);
    assert_int_equal(stopped.nloc, 0);
    assert_int_equal(rounds.rounds, 0);
    sw_gate_pool_stats(&st);
    assert_int_equal(st.queued, 5);
    /* The held ones fail on their journal; then the queue drains. */
    for (int i = 0; i < 2; i++) {
        wait_for(&held[i]);
        assert_int_not_equal(held[i].rc, 0);
    }
    for (int i = 0; i < 5; i++) {
        wait_for(&est[i]);
        if (est[i].rc != 0)
            fail_msg("%s", est[i].msg);
        assert_int_equal(est[i].to_copy, 1024);
    }
    assert_int_equal(threads_now(), before);
    snprintf(key, sizeof(key), "%sckpt.pt", to_p);
    if (home_has(key, NULL))
        fail_msg("%s reached home, but its stream was given up before any round", key);
    assert_int_equal(rounds.rounds, 0);
    close(fd);
}

static struct sw_s3 *client(const struct sw_s3_config *cfg)
{
    struct sw_s3 *s;
    struct sw_error err;
    if (sw_s3_new(&loop, http, cfg, &s, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    return s;
}

int main(void)
{
    sw_log_set_level(SW_LOG_ERROR);
    const char *ak = need("SW_LAB_S3_ACCESS_KEY"), *sk = need("SW_LAB_S3_SECRET_KEY");
    const char *names[3] = {"onprem", "us-east-1", "us-west-2"};
    const char *eps[3] = {need("SW_LAB_S3_ENDPOINT_ONPREM"), need("SW_LAB_S3_ENDPOINT_US_EAST_1"),
                          need("SW_LAB_S3_ENDPOINT_US_WEST_2")};
    for (int i = 0; i < 3; i++)
        stores[i].cfg = (struct sw_s3_config){.name = names[i],
                                              .endpoint = eps[i],
                                              .region = names[i],
                                              .access_key = ak,
                                              .secret_key = sk};
    /* A pool of two for every test here (test_pool_is_shared_and_small). */
    if (sw_gate_set_workers(2) != 0)
        return 1;
    uv_loop_init(&loop);
    sw_http_new(&loop, &http);
    onprem = client(&stores[0].cfg);
    usw2 = client(&stores[2].cfg);
    snprintf(id, sizeof(id), "gate-e2e-%d-%ld", (int)getpid(), (long)time(NULL));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_then_ensure),
        cmocka_unit_test(test_ensure_into_another_bucket),
        cmocka_unit_test(test_errors_name_the_input),
        cmocka_unit_test(test_outputs_flow_back),
        cmocka_unit_test(test_outputs_stop_has_no_last_round),
        cmocka_unit_test(test_outputs_stop_waits_for_the_round),
        cmocka_unit_test(test_pool_is_shared_and_small),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    sw_s3_free(onprem);
    sw_s3_free(usw2);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return failed ? 1 : 0;
}
