/*
 * test_recover_live.c - recovery aborts only the multipart uploads spillway
 * itself started, against the lab's versitygw endpoints and Redis.
 *
 * A target prefix is shared: another team or tool may have an upload open
 * under it. Recovery (replication/replicator.c, sw_repl_recover) aborts the
 * uploads its journal names by upload id, and nothing else, in a plain
 * rule's run, without a journal, and in a Job's outputs round
 * (replication/gate.c), where attempt N also aborts what attempt N-1's
 * journal still names. And an upload whose id cannot be journaled is
 * aborted before any part is sent (replication/copy.c). And a run with
 * its journal over more than one planning batch, to two targets, decides
 * from the journal's records as it did when it read them whole.
 *
 * Every "foreign" upload here is made with the project's own client, as
 * another writer would, and never appears in a journal. Each test works
 * under a prefix unique to this run and removes what it made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/log.h"
#include "replication/copy.h"
#include "replication/gate.h"
#include "replication/replicator.h"
#include "replication/s3.h"
#include "replication/s3xml.h"
#include "store/redis.h"
#include "tests/support/fill.h"

#define MiB ((size_t)1 << 20)

static uv_loop_t loop;
static struct sw_http *http;
static struct sw_gate_store stores[3];
static struct sw_s3 *onprem, *use1, *usw2;
static redisContext *redis;
static char id[64];

static const char *need(const char *n)
{
    const char *v = getenv(n);
    if (v == NULL || *v == '\0') {
        fprintf(stderr,
                "test_recover_live: %s is not set; start the lab and eval \"$(tests/testbed/"
                "testbed env)\"\n",
                n);
        exit(1);
    }
    return v;
}

/* CreateMultipartUpload, as any writer would; returns the new upload id. */
static char *open_upload(struct sw_s3 *s, const char *bucket, const char *key)
{
    struct sw_sigv4_pair q[] = {{"uploads", ""}};
    struct sw_s3_request req = {
        .method = "POST", .bucket = bucket, .key = key, .query = q, .nquery = 1};
    struct sw_s3_result r;
    if (sw_s3_do(s, &req, &r) != 0)
        fail_msg("create upload %s: %s", key, r.err.msg);
    char *upload_id = NULL;
    struct sw_error err;
    if (sw_s3xml_parse_initiate(r.body.data, r.body.len, &upload_id, &err) != 0)
        fail_msg("create upload %s: %s", key, err.msg);
    sw_s3_result_free(&r);
    return upload_id;
}

/* Whether upload `upload_id` of `key` is still open. */
static int upload_open(struct sw_s3 *s, const char *bucket, const char *key, const char *upload_id)
{
    struct sw_s3_uploads u;
    struct sw_error err;
    if (sw_s3_list_uploads_sync(s, bucket, key, &u, &err) != 0)
        fail_msg("list uploads %s: %s", key, err.msg);
    int open = 0;
    for (size_t i = 0; i < u.n; i++)
        if (strcmp(u.uploads[i].key, key) == 0 && strcmp(u.uploads[i].upload_id, upload_id) == 0)
            open = 1;
    sw_s3_uploads_free(&u);
    return open;
}

static size_t uploads_under(struct sw_s3 *s, const char *bucket, const char *prefix)
{
    struct sw_s3_uploads u;
    struct sw_error err;
    if (sw_s3_list_uploads_sync(s, bucket, prefix, &u, &err) != 0)
        fail_msg("list uploads %s: %s", prefix, err.msg);
    size_t n = u.n;
    sw_s3_uploads_free(&u);
    return n;
}

static void put(struct sw_s3 *s, const char *bucket, const char *key, size_t n, int seed)
{
    char *b = sw_malloc(n ? n : 1);
    sw_test_fill(b, n, (uint64_t)seed);
    struct sw_error err;
    if (sw_s3_put_sync(s, bucket, key, b, n, NULL, 0, &err) != 0)
        fail_msg("put %s: %s", key, err.msg);
    sw_free(b);
}

static void journal_upload(const char *rule, const char *target, const char *key,
                           const char *upload_id)
{
    redisReply *r = NULL;
    struct sw_error err;
    char k[512], f[1024];
    snprintf(k, sizeof(k), "sw:repl:%s:uploads", rule);
    snprintf(f, sizeof(f), "%s\n%s", target, key);
    const char *argv[] = {"HSET", k, f, upload_id};
    if (sw_redis_sync_command_argv(redis, &r, &err, 4, argv, NULL) != 0)
        fail_msg("journal: %s", err.msg);
    freeReplyObject(r);
}

static long long journal_len(const char *rule)
{
    redisReply *r = NULL;
    struct sw_error err;
    char k[512];
    snprintf(k, sizeof(k), "sw:repl:%s:uploads", rule);
    if (sw_redis_sync_command(redis, &r, &err, "HLEN %s", k) != 0)
        fail_msg("journal: %s", err.msg);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

static void journal_drop(const char *rule, const char *target)
{
    redisReply *r = NULL;
    struct sw_error err;
    if (sw_redis_sync_command(redis, &r, &err,
                              "DEL sw:repl:%s:uploads sw:repl:%s:done:%s "
                              "sw:repl:%s:rpo:%s",
                              rule, rule, target, rule, target) == 0)
        freeReplyObject(r);
}

static void abort_quietly(struct sw_s3 *s, const char *bucket, const char *key, char *upload_id)
{
    struct sw_error err;
    sw_copy_abort_sync(s, bucket, key, upload_id, &err);
    sw_free(upload_id);
}

/* A rule's run with its journal: the journaled upload (a crashed run's) is
 * aborted and leaves the journal; another writer's upload under the same
 * target prefix, and one at the very key the run then copies, stay open.
 * A run without a journal aborts nothing either. */
static void test_run_aborts_only_journaled_uploads(void **state)
{
    (void)state;
    char sp[128], dp[128], rule_name[128], key[256];
    snprintf(sp, sizeof(sp), "%s/run/src/", id);
    snprintf(dp, sizeof(dp), "%s/run/dst/", id);
    snprintf(rule_name, sizeof(rule_name), "%s-run", id);
    snprintf(key, sizeof(key), "%sa.bin", sp);
    put(onprem, "datasets", key, 4096, 1);

    char ours_key[256], other_key[256], same_key[256];
    snprintf(ours_key, sizeof(ours_key), "%sckpt-9.pt", dp);
    snprintf(other_key, sizeof(other_key), "%steam-b/in-progress.parquet", dp);
    snprintf(same_key, sizeof(same_key), "%sa.bin", dp);
    char *ours = open_upload(use1, "datasets", ours_key);
    char *other = open_upload(use1, "datasets", other_key);
    char *same = open_upload(use1, "datasets", same_key);
    journal_upload(rule_name, "us-east-1", ours_key, ours);

    struct sw_repl_rule r = {.name = rule_name,
                             .src_name = "onprem",
                             .src = onprem,
                             .bucket = "datasets",
                             .prefix = sp,
                             .ntargets = 1,
                             .concurrency = 4,
                             .part_concurrency = 2,
                             .part_size = 5 * MiB};
    r.targets[0] = (struct sw_repl_target){"us-east-1", use1, "datasets", dp};
    struct sw_repl_stats st;
    struct sw_error err;
    if (sw_repl_run_once(&r, redis, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 1);
    assert_int_equal(st.aborted_uploads, 1);
    if (upload_open(use1, "datasets", ours_key, ours))
        fail_msg("the journaled upload of %s is still open after recovery", ours_key);
    assert_int_equal(journal_len(rule_name), 0);
    if (!upload_open(use1, "datasets", other_key, other))
        fail_msg("another writer's upload of %s, never journaled, was aborted", other_key);
    if (!upload_open(use1, "datasets", same_key, same))
        fail_msg("another writer's upload of %s, never journaled, was aborted", same_key);

    /* Without a journal: nothing is aborted by listing either. */
    if (sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.aborted_uploads, 0);
    assert_true(upload_open(use1, "datasets", other_key, other));
    assert_true(upload_open(use1, "datasets", same_key, same));

    abort_quietly(use1, "datasets", other_key, other);
    abort_quietly(use1, "datasets", same_key, same);
    sw_free(ours);
    sw_s3_delete_sync(onprem, "datasets", key, &err);
    sw_s3_delete_sync(use1, "datasets", same_key, &err);
    journal_drop(rule_name, "us-east-1");
}

/* PUTs (body given) or DELETEs `count` objects PREFIXobj-%05d, 32 at a time. */
struct bulk {
    int inflight, failed;
};

static void on_bulk(struct sw_s3_response *resp, void *ctx)
{
    struct bulk *b = ctx;
    b->inflight--;
    if (resp->rc != 0) {
        b->failed++;
        fprintf(stderr, "%s\n", resp->err.msg);
    }
}

static void bulk(struct sw_s3 *s, const char *bucket, const char *prefix, int count,
                 const char *body, size_t size)
{
    struct bulk b = {0, 0};
    static char keys[64][256];
    for (int i = 0; i < count; i++) {
        while (b.inflight >= 32)
            uv_run(&loop, UV_RUN_ONCE);
        char *k = keys[i % 64];
        snprintf(k, 256, "%sobj-%05d", prefix, i);
        struct sw_s3_request req = {.method = body ? "PUT" : "DELETE",
                                    .bucket = bucket,
                                    .key = k,
                                    .body = body,
                                    .body_len = body ? size : 0};
        struct sw_error err;
        if (sw_s3_send(s, &req, on_bulk, &b, &err) != 0)
            fail_msg("%s", err.msg);
        b.inflight++;
    }
    while (b.inflight > 0)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(b.failed, 0);
}

static long long done_len(const char *rule, const char *target)
{
    redisReply *r = NULL;
    struct sw_error err;
    if (sw_redis_sync_command(redis, &r, &err, "HLEN sw:repl:%s:done:%s", rule, target) != 0)
        fail_msg("journal: %s", err.msg);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

static void done_set(const char *rule, const char *target, const char *key, const char *v)
{
    redisReply *r = NULL;
    struct sw_error err;
    if (sw_redis_sync_command(redis, &r, &err, "HSET sw:repl:%s:done:%s %s %s", rule, target, key,
                              v) != 0)
        fail_msg("journal: %s", err.msg);
    freeReplyObject(r);
}

/* A run plans in batches of 1,000, each batch's records read by one HMGET:
 * 1,001 objects to two targets make two batches per target. What counts
 * as done is what it was when the hash was read whole: a record of the
 * source version now listed, with the target still there at that size,
 * skips without a HEAD (a same-size object rewritten behind the journal's
 * back, in the second batch, is not looked at); an unreadable record costs
 * a HEAD, which finds the copy and writes the record again; a copy gone
 * from the target is made again. */
static void test_journal_in_batches(void **state)
{
    (void)state;
    enum { N = 1001 };
    char sp[128], dp1[128], dp2[128], rule_name[128];
    snprintf(sp, sizeof(sp), "%s/batches/src/", id);
    snprintf(dp1, sizeof(dp1), "%s/batches/use1/", id);
    snprintf(dp2, sizeof(dp2), "%s/batches/usw2/", id);
    snprintf(rule_name, sizeof(rule_name), "%s-batches", id);
    char body[64];
    sw_test_fill(body, sizeof(body), 11);
    bulk(onprem, "datasets", sp, N, body, sizeof(body));

    struct sw_repl_rule r = {.name = rule_name,
                             .src_name = "onprem",
                             .src = onprem,
                             .bucket = "datasets",
                             .prefix = sp,
                             .ntargets = 2,
                             .concurrency = 32};
    r.targets[0] = (struct sw_repl_target){"us-east-1", use1, "datasets", dp1};
    r.targets[1] = (struct sw_repl_target){"us-west-2", usw2, "datasets", dp2};
    struct sw_repl_stats st;
    struct sw_error err;
    if (sw_repl_run_once(&r, redis, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.listed, N);
    assert_int_equal(st.copied, 2 * N);
    assert_int_equal(done_len(rule_name, "us-east-1"), N);
    assert_int_equal(done_len(rule_name, "us-west-2"), N);

    /* Behind the journal's back, in the second batch: the same size, other
     * bytes, no metadata. The journal says it was verified: skipped. */
    char k[256], other[64];
    snprintf(k, sizeof(k), "%sobj-%05d", dp1, 1000);
    sw_test_fill(other, sizeof(other), 12);
    if (sw_s3_put_sync(use1, "datasets", k, other, sizeof(other), NULL, 0, &err) != 0)
        fail_msg("put %s: %s", k, err.msg);
    /* An unreadable record, and a copy gone. */
    snprintf(k, sizeof(k), "%sobj-%05d", dp1, 999);
    done_set(rule_name, "us-east-1", k, "garbage");
    snprintf(k, sizeof(k), "%sobj-%05d", dp2, 1000);
    if (sw_s3_delete_sync(usw2, "datasets", k, &err) != 0)
        fail_msg("delete %s: %s", k, err.msg);
    if (sw_repl_run_once(&r, redis, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(st.copied, 1);
    assert_int_equal(st.skipped, 2 * N - 1);
    assert_int_equal(st.failed, 0);
    struct sw_s3_head h;
    snprintf(k, sizeof(k), "%sobj-%05d", dp1, 1000);
    assert_int_equal(sw_s3_head_sync(use1, "datasets", k, &h, &err), 0);
    assert_string_equal(h.sha256, ""); /* not rewritten: it was not looked at */
    /* The unreadable record was written again from the HEAD. */
    redisReply *rep = NULL;
    snprintf(k, sizeof(k), "%sobj-%05d", dp1, 999);
    if (sw_redis_sync_command(redis, &rep, &err, "HGET sw:repl:%s:done:us-east-1 %s", rule_name,
                              k) != 0)
        fail_msg("journal: %s", err.msg);
    struct sw_repl_done d;
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_int_equal(sw_repl_done_parse(rep->str, &d), 0);
    assert_int_equal(d.size, (int64_t)sizeof(body));
    freeReplyObject(rep);

    bulk(onprem, "datasets", sp, N, NULL, 0);
    bulk(use1, "datasets", dp1, N, NULL, 0);
    bulk(usw2, "datasets", dp2, N, NULL, 0);
    journal_drop(rule_name, "us-east-1");
    journal_drop(rule_name, "us-west-2");
}

struct answer {
    int done;
    int rc;
    char msg[SW_ERROR_MSG_MAX];
};

static void on_answer(const struct sw_gate_result *res, void *ctx)
{
    struct answer *a = ctx;
    a->done = 1;
    a->rc = res->rc;
    snprintf(a->msg, sizeof(a->msg), "%s", res->err.msg);
}

static void wait_for(struct answer *a)
{
    for (int i = 0; i < 6000 && !a->done; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(a->done);
}

/* A Job's outputs round (what controller/hub/data.c runs): attempt 2's
 * first round aborts the upload attempt 1's journal names, and leaves the
 * upload another writer has open under the origin's prefix. */
static void test_outputs_round_leaves_foreign_uploads(void **state)
{
    (void)state;
    char job[128], base[200], rule1[300], rule2[300], from_p[128], to_p[128], key[256];
    snprintf(job, sizeof(job), "team-a/%s-out", id);
    snprintf(base, sizeof(base), "gate-%s", job);
    for (char *p = base; *p; p++)
        if (*p == '/' || *p == ':' || *p == ' ')
            *p = '.';
    snprintf(rule1, sizeof(rule1), "%s-out-a1-0", base);
    snprintf(rule2, sizeof(rule2), "%s-out-a2-0", base);
    snprintf(from_p, sizeof(from_p), "%s/out/attempt-2/", id);
    snprintf(to_p, sizeof(to_p), "%s/out-back/", id);
    snprintf(key, sizeof(key), "%sckpt-1.pt", from_p);
    put(usw2, "checkpoints", key, 4096, 2);

    char ours_key[256], other_key[256];
    snprintf(ours_key, sizeof(ours_key), "%sckpt-0.pt", to_p);
    snprintf(other_key, sizeof(other_key), "%sshared/model.safetensors", to_p);
    char *ours = open_upload(onprem, "checkpoints", ours_key);
    char *other = open_upload(onprem, "checkpoints", other_key);
    journal_upload(rule1, "onprem", ours_key, ours);

    struct sw_gate_input from = {"us-west-2", "checkpoints", from_p, NULL};
    struct sw_gate_input to = {"onprem", "checkpoints", to_p, NULL};
    struct answer done = {0};
    struct sw_gate_outputs *o;
    struct sw_error err;
    assert_int_equal(sw_gate_outputs_start(&loop, stores, 3, job, 2, &from, &to,
                                           getenv("SW_LAB_REDIS_URL"), 300, NULL, NULL, &o, &err),
                     0);
    sw_gate_outputs_finish(o, on_answer, &done);
    wait_for(&done);
    if (done.rc != 0)
        fail_msg("%s", done.msg);
    char back[256];
    snprintf(back, sizeof(back), "%sckpt-1.pt", to_p);
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(onprem, "checkpoints", back, &h, &err), 0);
    if (upload_open(onprem, "checkpoints", ours_key, ours))
        fail_msg("attempt 1's journaled upload of %s is still open", ours_key);
    assert_int_equal(journal_len(rule1), 0);
    if (!upload_open(onprem, "checkpoints", other_key, other))
        fail_msg("another writer's upload of %s, never journaled, was aborted by an outputs round",
                 other_key);
    assert_int_equal(uploads_under(onprem, "checkpoints", to_p), 1);

    abort_quietly(onprem, "checkpoints", other_key, other);
    sw_free(ours);
    sw_s3_delete_sync(usw2, "checkpoints", key, &err);
    sw_s3_delete_sync(onprem, "checkpoints", back, &err);
    journal_drop(rule1, "onprem");
    journal_drop(rule2, "onprem");
}

/* copy.c: an upload whose id the caller cannot record is aborted before
 * any part is sent, and the copy fails with the caller's code. */
struct copy_wait {
    int done;
    int rc;
    int aborted;
    int calls;
    char upload_id[256];
    char msg[SW_ERROR_MSG_MAX];
};

static int refuse_upload(const char *upload_id, void *ctx)
{
    struct copy_wait *w = ctx;
    w->calls++;
    snprintf(w->upload_id, sizeof(w->upload_id), "%s", upload_id);
    return SW_EIO;
}

static void on_copy(const struct sw_copy_result *res, void *ctx)
{
    struct copy_wait *w = ctx;
    w->done = 1;
    w->rc = res->rc;
    w->aborted = res->aborted;
    snprintf(w->msg, sizeof(w->msg), "%s", res->err.msg);
}

static void test_unjournaled_upload_is_aborted_unused(void **state)
{
    (void)state;
    char src_key[256], dst_key[256];
    snprintf(src_key, sizeof(src_key), "%s/nojournal/big.bin", id);
    snprintf(dst_key, sizeof(dst_key), "%s/nojournal-dst/big.bin", id);
    put(onprem, "datasets", src_key, 6 * MiB, 3);
    struct copy_wait w = {0};
    struct sw_copy_spec spec = {.src = onprem,
                                .src_bucket = "datasets",
                                .src_key = src_key,
                                .dst = use1,
                                .dst_bucket = "datasets",
                                .dst_key = dst_key,
                                .size = (int64_t)(6 * MiB),
                                .part_size = 5 * MiB,
                                .concurrency = 2,
                                .on_upload = refuse_upload,
                                .ctx = &w};
    struct sw_error err;
    assert_int_equal(sw_copy_start(&spec, on_copy, &w, &err), 0);
    for (int i = 0; i < 6000 && !w.done; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(w.done);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.rc, SW_EIO);
    assert_true(w.aborted);
    assert_non_null(strstr(w.msg, "could not be journaled"));
    assert_non_null(strstr(w.msg, dst_key));
    assert_false(upload_open(use1, "datasets", dst_key, w.upload_id));
    struct sw_s3_head h;
    assert_int_equal(sw_s3_head_sync(use1, "datasets", dst_key, &h, &err), SW_ENOENT);
    sw_s3_delete_sync(onprem, "datasets", src_key, &err);
}

/* Whatever a failed test left under this run's own prefix (objects, open
 * uploads, journal keys) goes, so a failure leaves nothing behind. */
static int teardown(void **state)
{
    (void)state;
    struct sw_s3 *all[3] = {onprem, use1, usw2};
    const char *buckets[2] = {"datasets", "checkpoints"};
    char prefix[80];
    snprintf(prefix, sizeof(prefix), "%s/", id);
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < 2; b++) {
            struct sw_s3_uploads u;
            struct sw_error err;
            if (sw_s3_list_uploads_sync(all[s], buckets[b], prefix, &u, &err) == 0) {
                for (size_t i = 0; i < u.n; i++)
                    sw_copy_abort_sync(all[s], buckets[b], u.uploads[i].key, u.uploads[i].upload_id,
                                       &err);
                sw_s3_uploads_free(&u);
            }
            struct sw_s3_list l;
            if (sw_s3_list_sync(all[s], buckets[b], prefix, NULL, &l, &err) == 0) {
                for (size_t i = 0; i < l.n; i++)
                    sw_s3_delete_sync(all[s], buckets[b], l.objects[i].key, &err);
                sw_s3_list_free(&l);
            }
        }
    char rule[300];
    snprintf(rule, sizeof(rule), "%s-run", id);
    journal_drop(rule, "us-east-1");
    for (int a = 1; a <= 2; a++) {
        snprintf(rule, sizeof(rule), "gate-team-a.%s-out-out-a%d-0", id, a);
        journal_drop(rule, "onprem");
    }
    return 0;
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
    const char *regions[3] = {getenv("SW_LAB_S3_REGION_ONPREM"),
                              getenv("SW_LAB_S3_REGION_US_EAST_1"),
                              getenv("SW_LAB_S3_REGION_US_WEST_2")};
    for (int i = 0; i < 3; i++)
        stores[i].cfg =
            (struct sw_s3_config){.name = names[i],
                                  .endpoint = eps[i],
                                  .region = regions[i] && *regions[i] ? regions[i] : names[i],
                                  .access_key = ak,
                                  .secret_key = sk};
    struct sw_error err;
    if (sw_redis_sync_connect(need("SW_LAB_REDIS_URL"), 5000, &redis, &err) != 0) {
        fprintf(stderr, "test_recover_live: %s\n", err.msg);
        return 1;
    }
    uv_loop_init(&loop);
    if (sw_http_new(&loop, &http) != 0)
        return 1;
    onprem = client(&stores[0].cfg);
    use1 = client(&stores[1].cfg);
    usw2 = client(&stores[2].cfg);
    snprintf(id, sizeof(id), "recover-e2e-%d-%ld", (int)getpid(), (long)time(NULL));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_aborts_only_journaled_uploads),
        cmocka_unit_test(test_outputs_round_leaves_foreign_uploads),
        cmocka_unit_test(test_unjournaled_upload_is_aborted_unused),
        cmocka_unit_test(test_journal_in_batches),
    };
    int failed = cmocka_run_group_tests(tests, NULL, teardown);
    sw_s3_free(onprem);
    sw_s3_free(use1);
    sw_s3_free(usw2);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    sw_redis_sync_free(redis);
    return failed ? 1 : 0;
}
