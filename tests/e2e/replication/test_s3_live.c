/*
 * test_s3_live.c - the S3 client, the verified copy and replication rules
 * against real S3 servers: versitygw (the lab; verifies SigV4) or the
 * second implementation (tests/testbed/s3-second).
 *
 *   test_s3_live versitygw   uses SW_LAB_S3_ENDPOINT_ONPREM -> _US_EAST_1
 *   test_s3_live second      uses SW_LAB_S3_SECOND_ENDPOINT (two buckets)
 *
 * The lab runs each versitygw with --region set to its region's name
 * ("onprem", "us-east-1"), which signatures must name; SW_LAB_S3_REGION_*
 * override that.
 *
 * Objects are generated in memory at test time and removed afterwards;
 * every test works under a prefix unique to this run.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/log.h"
#include "replication/copy.h"
#include "replication/replicator.h"
#include "replication/s3.h"
#include "tests/support/fill.h"

#define MiB ((size_t)1 << 20)

static uv_loop_t loop;
static struct sw_http *http;
static struct sw_s3 *src, *dst;
static const char *src_bucket, *dst_bucket;
static char run_prefix[64];
static int is_versitygw;
static char endpoint_dst[256], access_key[128], secret_key[256], region_src[64], region_dst[64];

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static const char *need_env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        fprintf(stderr,
                "test_s3_live: %s is not set; start the lab (tests/testbed/testbed up) "
                "and eval \"$(tests/testbed/testbed env)\"\n",
                name);
        exit(1);
    }
    return v;
}

static struct sw_s3 *client(const char *name, const char *endpoint, const char *region,
                            const char *ak, const char *sk)
{
    struct sw_s3_config cfg = {.name = name,
                               .endpoint = endpoint,
                               .region = region,
                               .access_key = ak,
                               .secret_key = sk,
                               .backoff_base_ms = 20,
                               .backoff_max_ms = 500,
                               .max_attempts = 10};
    struct sw_s3 *s;
    struct sw_error err;
    if (sw_s3_new(&loop, http, &cfg, &s, &err) != 0)
        fail_msg("%s", err.msg);
    return s;
}

static void put_or_fail(struct sw_s3 *s, const char *bucket, const char *key, const void *d,
                        size_t n)
{
    struct sw_error err;
    if (sw_s3_put_sync(s, bucket, key, d, n, NULL, 0, &err) != 0)
        fail_msg("put %s: %s", key, err.msg);
}

/* GETs the target object and compares the SHA-256 of every byte. */
static void verify_object(struct sw_s3 *s, const char *bucket, const char *key, const char *sha,
                          size_t size)
{
    char *data;
    size_t len;
    struct sw_error err;
    if (sw_s3_get_sync(s, bucket, key, size + 1, &data, &len, &err) != 0)
        fail_msg("get %s: %s", key, err.msg);
    assert_int_equal(len, size);
    char got[65];
    sw_sha256_hex(data, len, got);
    sw_free(data);
    if (strcmp(got, sha) != 0)
        fail_msg("%s: sha256 %s, expected %s", key, got, sha);
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(s, bucket, key, &h, &err), 0);
    assert_string_equal(h.sha256, sha);
    assert_int_equal(h.size, (int64_t)size);
}

static void delete_prefix(struct sw_s3 *s, const char *bucket, const char *prefix)
{
    char *token = NULL;
    for (;;) {
        struct sw_s3_list l;
        struct sw_error err;
        if (sw_s3_list_sync(s, bucket, prefix, token, &l, &err) != 0) {
            sw_free(token);
            return;
        }
        sw_free(token);
        token = NULL;
        for (size_t i = 0; i < l.n; i++)
            sw_s3_delete_sync(s, bucket, l.objects[i].key, &err);
        if (l.truncated) {
            token = l.next_token;
            l.next_token = NULL;
        }
        sw_s3_list_free(&l);
        if (token == NULL)
            return;
    }
}

static struct sw_repl_rule make_rule(const char *name, const char *sub)
{
    static char sp[256], dp[256];
    snprintf(sp, sizeof(sp), "%s%s/", run_prefix, sub);
    snprintf(dp, sizeof(dp), "%sdr/%s/", run_prefix, sub);
    struct sw_repl_rule r = {.name = name,
                             .src_name = "src",
                             .src = src,
                             .bucket = src_bucket,
                             .prefix = sp,
                             .ntargets = 1,
                             .concurrency = 16,
                             .part_concurrency = 4,
                             .part_size = 5 * MiB};
    r.targets[0] = (struct sw_repl_target){"dst", dst, dst_bucket, dp};
    return r;
}

/* ---- tests ----------------------------------------------------------------------- */

static void test_basic_ops_and_errors(void **state)
{
    (void)state;
    char key[256];
    snprintf(key, sizeof(key), "%sbasic/hello.txt", run_prefix);
    put_or_fail(src, src_bucket, key, "hello", 5);
    struct sw_s3_head h;
    struct sw_error err;
    assert_int_equal(sw_s3_head_sync(src, src_bucket, key, &h, &err), 0);
    assert_int_equal(h.size, 5);
    assert_true(h.etag[0] != '\0');
    char *data;
    size_t len;
    assert_int_equal(sw_s3_get_sync(src, src_bucket, key, 1024, &data, &len, &err), 0);
    assert_int_equal(len, 5);
    assert_memory_equal(data, "hello", 5);
    sw_free(data);
    assert_int_equal(sw_s3_delete_sync(src, src_bucket, key, &err), 0);

    /* A missing object: the message names the store, bucket, key and S3 code. */
    int rc = sw_s3_get_sync(src, src_bucket, key, 1024, &data, &len, &err);
    assert_int_equal(rc, SW_ENOENT);
    assert_non_null(strstr(err.msg, src_bucket));
    assert_non_null(strstr(err.msg, "basic/hello.txt"));
    assert_non_null(strstr(err.msg, "NoSuchKey"));
    assert_int_equal(sw_s3_head_sync(src, src_bucket, key, &h, &err), SW_ENOENT);

    /* A missing bucket. */
    struct sw_s3_list l;
    rc = sw_s3_list_sync(src, "sw-no-such-bucket-e2e", "", NULL, &l, &err);
    assert_int_equal(rc, SW_ENOENT);
    assert_non_null(strstr(err.msg, "NoSuchBucket"));
    assert_non_null(strstr(err.msg, "sw-no-such-bucket-e2e"));
}

static void test_sizes(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 5 * MiB - 1, 5 * MiB + 1, 100 * MiB};
    char *buf = sw_malloc(100 * MiB);
    assert_non_null(buf);
    char shas[5][65];
    for (size_t i = 0; i < 5; i++) {
        char key[256];
        snprintf(key, sizeof(key), "%ssizes/obj-%zu.bin", run_prefix, sizes[i]);
        sw_test_fill(buf, sizes[i], i + 1);
        sw_sha256_hex(buf, sizes[i], shas[i]);
        put_or_fail(src, src_bucket, key, buf, sizes[i]);
    }
    sw_free(buf);
    struct sw_repl_rule r = make_rule("e2e-sizes", "sizes");
    struct sw_repl_stats st;
    struct sw_error err;
    if (sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 5);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.bytes_copied, (int64_t)(1 + 10 * MiB + 100 * MiB));
    for (size_t i = 0; i < 5; i++) {
        char key[256];
        snprintf(key, sizeof(key), "%sdr/sizes/obj-%zu.bin", run_prefix, sizes[i]);
        verify_object(dst, dst_bucket, key, shas[i], sizes[i]);
    }
    /* Nothing left open on the target. */
    struct sw_s3_uploads ups;
    char p[256];
    snprintf(p, sizeof(p), "%sdr/", run_prefix);
    assert_int_equal(sw_s3_list_uploads_sync(dst, dst_bucket, p, &ups, &err), 0);
    assert_int_equal(ups.n, 0);
    sw_s3_uploads_free(&ups);
    /* Incremental: a second run copies nothing. */
    assert_int_equal(sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err), 0);
    assert_int_equal(st.copied, 0);
    assert_int_equal(st.skipped, 5);
}

/* A small copy whose source ETag is not an MD5 (the source was written as
 * a multipart upload): verified by the MD5 of the bytes sent instead of
 * the source's ETag, and byte for byte right. */
static void test_small_from_multipart_source(void **state)
{
    (void)state;
    size_t size = 6 * MiB;
    char *buf = sw_malloc(size), sha[65], key[256];
    assert_non_null(buf);
    sw_test_fill(buf, size, 77);
    sw_sha256_hex(buf, size, sha);
    snprintf(key, sizeof(key), "%smp/obj.bin", run_prefix);
    /* With its sw-sha256, so that the copy below sets the metadata when it
     * creates the upload and never rewrites the object (which gives it an
     * MD5 ETag on some servers). */
    struct sw_sigv4_pair meta[] = {{SW_S3_META_SHA256, sha}};
    struct sw_error err;
    if (sw_s3_put_sync(src, src_bucket, key, buf, size, meta, 1, &err) != 0)
        fail_msg("put %s: %s", key, err.msg);
    sw_free(buf);
    /* 5 MiB parts: the first copy is a multipart upload. */
    struct sw_repl_rule r1 = make_rule("e2e-mp1", "mp");
    struct sw_repl_stats st;
    if (sw_repl_run_once(&r1, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 1);
    char mid[256];
    snprintf(mid, sizeof(mid), "%sdr/mp/obj.bin", run_prefix);
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(dst, dst_bucket, mid, &h, &err), 0);
    char bare[SW_S3_ETAG_MAX];
    sw_s3_etag_bare(h.etag, bare, sizeof(bare));
    if (sw_s3_etag_is_md5(bare))
        fail_msg("%s: ETag %s after a multipart upload; the test needs a non-MD5 ETag", mid,
                 h.etag);
    /* Back with 16 MiB parts: a whole-object PUT from that source. */
    char sp[256], dp[256];
    snprintf(sp, sizeof(sp), "%sdr/mp/", run_prefix);
    snprintf(dp, sizeof(dp), "%sback/mp/", run_prefix);
    struct sw_repl_rule r2 = {.name = "e2e-mp2",
                              .src_name = "dst",
                              .src = dst,
                              .bucket = dst_bucket,
                              .prefix = sp,
                              .ntargets = 1,
                              .concurrency = 4,
                              .part_concurrency = 4,
                              .part_size = 16 * MiB};
    r2.targets[0] = (struct sw_repl_target){"src", src, src_bucket, dp};
    if (sw_repl_run_once(&r2, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 1);
    assert_int_equal(st.failed, 0);
    snprintf(key, sizeof(key), "%sback/mp/obj.bin", run_prefix);
    verify_object(src, src_bucket, key, sha, size);
    assert_int_equal(sw_s3_head_sync(src, src_bucket, key, &h, &err), 0);
    sw_s3_etag_bare(h.etag, bare, sizeof(bare));
    assert_true(sw_s3_etag_is_md5(bare)); /* one PUT */
}

static void test_keys(void **state)
{
    (void)state;
    static const char *names[] = {"dir with space/file name.txt",
                                  "na\xc3\xafve caf\xc3\xa9/\xe2\x9c\x93 done.bin",
                                  "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e/\xe3\x83\x87\xe3\x83\xbc"
                                  "\xe3\x82\xbf.txt",
                                  "a+b=c&d;e,f'g(h)!.txt",
                                  "percent%20literal.txt",
                                  "tilde~and*star.txt",
                                  "query?x=1#fragment %2E%2E.txt"};
    size_t n = sizeof(names) / sizeof(names[0]);
    char shas[8][65];
    for (size_t i = 0; i < n; i++) {
        char key[512], body[64];
        snprintf(key, sizeof(key), "%skeys/%s", run_prefix, names[i]);
        int bl = snprintf(body, sizeof(body), "object %zu", i);
        sw_sha256_hex(body, (size_t)bl, shas[i]);
        put_or_fail(src, src_bucket, key, body, (size_t)bl);
    }
    struct sw_repl_rule r = make_rule("e2e-keys", "keys");
    struct sw_repl_stats st;
    struct sw_error err;
    if (sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        char key[512];
        snprintf(key, sizeof(key), "%sdr/keys/%s", run_prefix, names[i]);
        verify_object(dst, dst_bucket, key, shas[i], strlen("object 0"));
    }
}

struct bulk {
    int inflight, failed;
};

static void on_bulk_put(struct sw_s3_response *resp, void *ctx)
{
    struct bulk *b = ctx;
    b->inflight--;
    if (resp->rc != 0) {
        b->failed++;
        fprintf(stderr, "%s\n", resp->err.msg);
    }
}

static void bulk_put(struct sw_s3 *s, const char *bucket, const char *prefix, int count,
                     size_t size, const char *body)
{
    struct bulk b = {0, 0};
    static char keys[64][256];
    for (int i = 0; i < count; i++) {
        while (b.inflight >= 32)
            uv_run(&loop, UV_RUN_ONCE);
        char *k = keys[i % 64];
        snprintf(k, 256, "%sobj-%05d", prefix, i);
        struct sw_s3_request req = {
            .method = "PUT", .bucket = bucket, .key = k, .body = body, .body_len = size};
        struct sw_error err;
        if (sw_s3_send(s, &req, on_bulk_put, &b, &err) != 0)
            fail_msg("%s", err.msg);
        b.inflight++;
    }
    while (b.inflight > 0)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(b.failed, 0);
}

static void test_many_small(void **state)
{
    (void)state;
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%smany/", run_prefix);
    char body[1024];
    sw_test_fill(body, sizeof(body), 7);
    bulk_put(src, src_bucket, prefix, 2000, sizeof(body), body);
    struct sw_repl_rule r = make_rule("e2e-many", "many");
    r.concurrency = 32;
    struct sw_repl_stats st;
    struct sw_error err;
    if (sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.listed, 2000);
    assert_int_equal(st.copied, 2000);
    /* The target lists 2,000 objects, over two pages. */
    char dp[256];
    snprintf(dp, sizeof(dp), "%sdr/many/", run_prefix);
    struct sw_s3_list l;
    assert_int_equal(sw_s3_list_sync(dst, dst_bucket, dp, NULL, &l, &err), 0);
    assert_true(l.truncated);
    size_t total = l.n;
    char *tok = l.next_token;
    l.next_token = NULL;
    sw_s3_list_free(&l);
    assert_int_equal(sw_s3_list_sync(dst, dst_bucket, dp, tok, &l, &err), 0);
    sw_free(tok);
    total += l.n;
    assert_false(l.truncated);
    sw_s3_list_free(&l);
    assert_int_equal(total, 2000);
    char sha[65];
    sw_sha256_hex(body, sizeof(body), sha);
    char k[300];
    snprintf(k, sizeof(k), "%sobj-01999", dp);
    verify_object(dst, dst_bucket, k, sha, sizeof(body));

    /* One object changes: the next run copies exactly that one. */
    char nk[300];
    snprintf(nk, sizeof(nk), "%sobj-00042", prefix);
    put_or_fail(src, src_bucket, nk, "changed", 7);
    assert_int_equal(sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err), 0);
    assert_int_equal(st.copied, 1);
    assert_int_equal(st.skipped, 1999);
    sw_sha256_hex("changed", 7, sha);
    snprintf(k, sizeof(k), "%sobj-00042", dp);
    verify_object(dst, dst_bucket, k, sha, 7);
}

static void test_server_side_copy(void **state)
{
    (void)state;
    /* Same endpoint, two buckets (or two prefixes): CopyObject, verified. */
    struct sw_s3 *same =
        client("dst-same", env_or("SW_E2E_SRC_ENDPOINT", ""), region_src, access_key, secret_key);
    char key[256];
    snprintf(key, sizeof(key), "%sscopy/weights.bin", run_prefix);
    size_t n = 6 * MiB + 3;
    char *buf = sw_malloc(n);
    sw_test_fill(buf, n, 99);
    char sha[65];
    sw_sha256_hex(buf, n, sha);
    struct sw_sigv4_pair meta[] = {{SW_S3_META_SHA256, sha}};
    struct sw_error err;
    assert_int_equal(sw_s3_put_sync(src, src_bucket, key, buf, n, meta, 1, &err), 0);
    sw_free(buf);
    struct sw_repl_rule r = make_rule("e2e-scopy", "scopy");
    r.targets[0].s3 = same;
    r.targets[0].bucket = src_bucket;
    r.allow_server_copy = 1;
    struct sw_repl_stats st;
    if (sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 1);
    snprintf(key, sizeof(key), "%sdr/scopy/weights.bin", run_prefix);
    verify_object(same, src_bucket, key, sha, n);
    delete_prefix(same, src_bucket, key);
    sw_s3_free(same);
}

static pid_t start_proxy(const char *upstream, double rate, const char *stats, int *port)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        char r[32];
        snprintf(r, sizeof(r), "%g", rate);
        const char *dir = env_or("SW_SOURCE_DIR", ".");
        char script[1024];
        snprintf(script, sizeof(script), "%s/tests/e2e/replication/faultproxy.py", dir);
        execlp("python3", "python3", script, "--upstream", upstream, "--rate", r, "--reset", "0.05",
               "--stats", stats, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[64] = "";
    FILE *f = fdopen(fds[0], "r");
    if (fgets(line, sizeof(line), f) == NULL || sscanf(line, "PORT %d", port) != 1)
        fail_msg("fault proxy did not start");
    fclose(f);
    return pid;
}

static void test_503_storm(void **state)
{
    (void)state;
    char stats[128];
    snprintf(stats, sizeof(stats), "/tmp/sw-faultproxy-%d.stats", (int)getpid());
    int port;
    pid_t pid = start_proxy(endpoint_dst, 0.3, stats, &port);
    char ep[64];
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
    /* The signature covers the Host header, which the proxy forwards as is,
     * so the upstream checks the signature made for the proxy's address. */
    struct sw_s3 *flaky = client("dst-behind-proxy", ep, region_dst, access_key, secret_key);
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%sstorm/", run_prefix);
    char body[4096];
    sw_test_fill(body, sizeof(body), 3);
    bulk_put(src, src_bucket, prefix, 40, sizeof(body), body);
    size_t big = 11 * MiB;
    char *buf = sw_malloc(big);
    sw_test_fill(buf, big, 11);
    char key[512], sha[65];
    snprintf(key, sizeof(key), "%sbig.bin", prefix);
    sw_sha256_hex(buf, big, sha);
    put_or_fail(src, src_bucket, key, buf, big);
    sw_free(buf);
    struct sw_repl_rule r = make_rule("e2e-storm", "storm");
    r.targets[0].s3 = flaky;
    struct sw_repl_stats st;
    struct sw_error err;
    int rc = sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err);
    kill(pid, SIGTERM);
    if (rc != 0)
        fprintf(stderr, "storm: %s\n", st.first_error.msg);
    waitpid(pid, NULL, 0);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 41);
    FILE *f = fopen(stats, "r");
    assert_non_null(f);
    long requests = 0, injected = 0, resets = 0;
    assert_int_equal(
        fscanf(f, "requests %ld injected_503 %ld resets %ld", &requests, &injected, &resets), 3);
    fclose(f);
    unlink(stats);
    fprintf(stderr, "503 storm: %ld requests through the proxy, %ld answered 503, %ld reset\n",
            requests, injected, resets);
    assert_true(injected >= 10);
    snprintf(key, sizeof(key), "%sdr/storm/big.bin", run_prefix);
    verify_object(dst, dst_bucket, key, sha, big);
    sw_s3_free(flaky);
}

static void test_wrong_credentials(void **state)
{
    (void)state;
    struct sw_s3 *bad = client("onprem-bad-secret", env_or("SW_E2E_SRC_ENDPOINT", ""), region_src,
                               access_key, "not-the-secret");
    struct sw_s3_list l;
    struct sw_error err;
    int rc = sw_s3_list_sync(bad, src_bucket, "", NULL, &l, &err);
    assert_int_equal(rc, SW_EAUTH);
    assert_non_null(strstr(err.msg, "SignatureDoesNotMatch"));
    assert_non_null(strstr(err.msg, src_bucket));
    assert_null(strstr(err.msg, "not-the-secret"));
    fprintf(stderr, "wrong secret: %s\n", err.msg);
    sw_s3_free(bad);

    bad = client("onprem-bad-key", env_or("SW_E2E_SRC_ENDPOINT", ""), region_src, "NOSUCHKEY",
                 secret_key);
    struct sw_repl_rule r = make_rule("e2e-badcreds", "sizes");
    r.src = bad;
    struct sw_repl_stats st;
    rc = sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err);
    fprintf(stderr, "wrong access key: %s\n", err.msg);
    assert_int_equal(rc, SW_EAUTH);
    /* AWS says InvalidAccessKeyId; versitygw says XAdminUserNotFound. */
    assert_true(strstr(err.msg, "InvalidAccessKeyId") != NULL ||
                strstr(err.msg, "XAdminUserNotFound") != NULL);
    assert_non_null(strstr(err.msg, "s3://datasets/"));
    assert_non_null(strstr(err.msg, "onprem-bad-key"));
    sw_s3_free(bad);
}

/* Virtual-host addressing (bucket.localhost:PORT): needs a server started
 * with a virtual domain (versitygw --virtual-domain localhost); curl
 * resolves *.localhost to the loopback address. */
static void test_virtual_host(void **state)
{
    (void)state;
    const char *ep = env_or("SW_E2E_SRC_ENDPOINT", "");
    const char *port = strrchr(ep, ':');
    char vep[128];
    snprintf(vep, sizeof(vep), "http://%s%s", env_or("SW_LAB_S3_VIRTUAL_DOMAIN", "localhost"),
             port ? port : "");
    struct sw_s3_config cfg = {.name = "onprem-vhost",
                               .endpoint = vep,
                               .region = region_src,
                               .access_key = access_key,
                               .secret_key = secret_key,
                               .virtual_host = 1};
    struct sw_s3 *v;
    struct sw_error err;
    assert_int_equal(sw_s3_new(&loop, http, &cfg, &v, &err), 0);
    char key[256];
    snprintf(key, sizeof(key), "%svhost/a b \xc3\xa9.txt", run_prefix);
    if (sw_s3_put_sync(v, src_bucket, key, "hello", 5, NULL, 0, &err) != 0)
        fail_msg("%s", err.msg);
    char *d;
    size_t n;
    assert_int_equal(sw_s3_get_sync(src, src_bucket, key, 100, &d, &n, &err), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(d, "hello", 5);
    sw_free(d);
    struct sw_s3_list l;
    char p[256];
    snprintf(p, sizeof(p), "%svhost/", run_prefix);
    assert_int_equal(sw_s3_list_sync(v, src_bucket, p, NULL, &l, &err), 0);
    assert_int_equal(l.n, 1);
    sw_s3_list_free(&l);
    sw_s3_free(v);
}

static int teardown(void **state)
{
    (void)state;
    delete_prefix(src, src_bucket, run_prefix);
    delete_prefix(dst, dst_bucket, run_prefix);
    return 0;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "versitygw";
    sw_log_set_level(SW_LOG_WARN);
    uv_loop_init(&loop);
    if (sw_http_new(&loop, &http) != 0)
        return 1;
    const char *ep_src;
    if (strcmp(which, "versitygw") == 0) {
        is_versitygw = 1;
        ep_src = need_env("SW_LAB_S3_ENDPOINT_ONPREM");
        snprintf(endpoint_dst, sizeof(endpoint_dst), "%s",
                 need_env("SW_LAB_S3_ENDPOINT_US_EAST_1"));
        snprintf(access_key, sizeof(access_key), "%s", need_env("SW_LAB_S3_ACCESS_KEY"));
        snprintf(secret_key, sizeof(secret_key), "%s", need_env("SW_LAB_S3_SECRET_KEY"));
        snprintf(region_src, sizeof(region_src), "%s", env_or("SW_LAB_S3_REGION_ONPREM", "onprem"));
        snprintf(region_dst, sizeof(region_dst), "%s",
                 env_or("SW_LAB_S3_REGION_US_EAST_1", "us-east-1"));
        src_bucket = "datasets";
        dst_bucket = "datasets";
    } else {
        ep_src = need_env("SW_LAB_S3_SECOND_ENDPOINT");
        snprintf(endpoint_dst, sizeof(endpoint_dst), "%s", ep_src);
        snprintf(access_key, sizeof(access_key), "%s", need_env("SW_LAB_S3_SECOND_ACCESS_KEY"));
        snprintf(secret_key, sizeof(secret_key), "%s", need_env("SW_LAB_S3_SECOND_SECRET_KEY"));
        snprintf(region_src, sizeof(region_src), "us-east-1");
        snprintf(region_dst, sizeof(region_dst), "us-east-1");
        src_bucket = "sw-e2e-src";
        dst_bucket = "sw-e2e-dst";
    }
    setenv("SW_E2E_SRC_ENDPOINT", ep_src, 1);
    src = client("src", ep_src, region_src, access_key, secret_key);
    dst = client("dst", endpoint_dst, region_dst, access_key, secret_key);
    struct sw_error err;
    /* The lab creates its buckets; creating them again is harmless. */
    if ((sw_s3_create_bucket_sync(src, src_bucket, &err) != 0 ||
         sw_s3_create_bucket_sync(dst, dst_bucket, &err) != 0)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    snprintf(run_prefix, sizeof(run_prefix), "e2e-%d-%ld/", (int)getpid(), (long)time(NULL));

    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_basic_ops_and_errors),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_many_small),
        cmocka_unit_test(test_small_from_multipart_source),
        cmocka_unit_test(test_server_side_copy),
        cmocka_unit_test(test_503_storm),
    };
    int failed = cmocka_run_group_tests_name(which, common, NULL, teardown);
    /* The second implementation accepts any credentials by design, so the
     * credentials test runs against versitygw, which verifies them. */
    if (is_versitygw) {
        const struct CMUnitTest auth[] = {cmocka_unit_test(test_wrong_credentials)};
        failed += cmocka_run_group_tests_name("versitygw-auth", auth, NULL, NULL);
    }
    /* Virtual-host addressing: the lab's versitygw answers BUCKET.DOMAIN
     * (testbed env exports SW_LAB_S3_VIRTUAL_DOMAIN; localhost otherwise). */
    if (is_versitygw) {
        const struct CMUnitTest vh[] = {cmocka_unit_test(test_virtual_host)};
        failed += cmocka_run_group_tests_name("versitygw-virtual-host", vh, NULL, teardown);
    }
    sw_s3_free(src);
    sw_s3_free(dst);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return failed ? 1 : 0;
}
