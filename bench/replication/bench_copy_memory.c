/*
 * bench_copy_memory.c - the memory a replication run (the copy path:
 * sw_repl_run_once, as a gated Job's copy, an outputs round and a rule's
 * run call it) takes on a large prefix.
 *
 * bench/replication/bench_gate_memory.sh builds this same file against two
 * trees (main before the copy path was planned batch by batch, and this
 * one) and runs both on the same prefixes. It uses only API both trees
 * have, and measures its own process: the peak resident set (VmHWM in
 * /proc/self/status).
 *
 *   bench_copy_memory seed BUCKET SRC_PREFIX DST_PREFIX RULE
 *   bench_copy_memory run BUCKET SRC_PREFIX DST_PREFIX RULE SECONDS
 *   bench_copy_memory clean RULE
 *
 * The store is the lab's onprem (SW_LAB_S3_*), source and target alike
 * (the target under its own prefix); the journal is the lab's Redis
 * (SW_LAB_REDIS_URL). `seed` writes the journal record of a verified copy
 * (done:onprem) for every source object, as an earlier run would have:
 * every object is one byte "x", and the record holds its listed ETag, size
 * and real SHA-256. `run` runs the rule once: what the target lists is
 * skipped from the journal, what it lacks is copied (and verified). It
 * prints one line of key=value figures; after SECONDS it stops, printing
 * what it measured so far with done=0. `clean` removes the rule's journal.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "net/http.h"
#include "replication/replicator.h"
#include "replication/s3.h"
#include "store/redis.h"

/* SHA-256 of the one byte "x" every benchmark object holds. */
#define SHA_X "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"

static long status_field(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static const char *need(const char *n)
{
    const char *v = getenv(n);
    if (v == NULL || *v == '\0') {
        fprintf(stderr,
                "bench_copy_memory: %s is not set (eval \"$(tests/testbed/testbed env)\")\n", n);
        exit(2);
    }
    return v;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t0, seconds_max;

/* Stops a side that runs past its time, with what it held by then. */
static void *deadline(void *arg)
{
    (void)arg;
    struct timespec ts = {(time_t)seconds_max, 0};
    nanosleep(&ts, NULL);
    printf("done=0 seconds=%.1f peak_rss_kib=%ld stopped_at_deadline=1\n", mono_s() - t0,
           status_field("VmHWM"));
    fflush(stdout);
    _exit(0);
}

static void journal_del(redisContext *j, const char *rule)
{
    const char *what[] = {"done:onprem", "uploads", "rpo:onprem"};
    for (int i = 0; i < 3; i++) {
        redisReply *r = redisCommand(j, "DEL sw:repl:%s:%s", rule, what[i]);
        if (r != NULL)
            freeReplyObject(r);
    }
}

/* The done record of every source object, pipelined, page by page. */
static int seed(struct sw_s3 *s3, redisContext *j, const char *bucket, const char *sp,
                const char *dp, const char *rule)
{
    char *token = NULL;
    int64_t n = 0;
    for (;;) {
        struct sw_s3_list page;
        struct sw_error err;
        if (sw_s3_list_sync(s3, bucket, sp, token, &page, &err) != 0) {
            fprintf(stderr, "bench_copy_memory: listing: %s\n", err.msg);
            return 1;
        }
        free(token);
        token = NULL;
        for (size_t i = 0; i < page.n; i++) {
            const struct sw_s3_object *o = &page.objects[i];
            char dk[2048], v[256];
            snprintf(dk, sizeof(dk), "%s%s", dp, o->key + strlen(sp));
            snprintf(v, sizeof(v), "%s %" PRId64 " %s", o->etag[0] ? o->etag : "-", o->size, SHA_X);
            redisAppendCommand(j, "HSET sw:repl:%s:done:onprem %s %s", rule, dk, v);
        }
        for (size_t i = 0; i < page.n; i++) {
            void *rep = NULL;
            if (redisGetReply(j, &rep) != REDIS_OK) {
                fprintf(stderr, "bench_copy_memory: journal: %s\n", j->errstr);
                return 1;
            }
            freeReplyObject(rep);
        }
        n += (int64_t)page.n;
        int more = page.truncated && page.next_token != NULL;
        if (more)
            token = strdup(page.next_token);
        sw_s3_list_free(&page);
        if (!more)
            break;
    }
    printf("seeded=%" PRId64 "\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    sw_log_set_level(SW_LOG_ERROR);
    int is_seed = argc == 6 && strcmp(argv[1], "seed") == 0;
    int is_run = argc == 7 && strcmp(argv[1], "run") == 0;
    int is_clean = argc == 3 && strcmp(argv[1], "clean") == 0;
    if (!is_seed && !is_run && !is_clean) {
        fprintf(stderr, "usage: bench_copy_memory seed BUCKET SRC_PREFIX DST_PREFIX RULE\n"
                        "       bench_copy_memory run BUCKET SRC_PREFIX DST_PREFIX RULE SECONDS\n"
                        "       bench_copy_memory clean RULE\n");
        return 2;
    }
    redisContext *j = NULL;
    struct sw_error err;
    if (sw_redis_sync_connect(need("SW_LAB_REDIS_URL"), 5000, &j, &err) != 0) {
        fprintf(stderr, "bench_copy_memory: %s\n", err.msg);
        return 1;
    }
    if (is_clean) {
        journal_del(j, argv[2]);
        return 0;
    }
    const char *bucket = argv[2], *sp = argv[3], *dp = argv[4], *rule = argv[5];
    uv_loop_t *loop = uv_default_loop();
    struct sw_s3_config cfg = {.name = "onprem",
                               .endpoint = need("SW_LAB_S3_ENDPOINT_ONPREM"),
                               .region = "onprem",
                               .access_key = need("SW_LAB_S3_ACCESS_KEY"),
                               .secret_key = need("SW_LAB_S3_SECRET_KEY")};
    struct sw_http *http = NULL;
    struct sw_s3 *s3 = NULL;
    if (sw_http_new(loop, &http) != 0) {
        fprintf(stderr, "bench_copy_memory: no HTTP client\n");
        return 1;
    }
    if (sw_s3_new(loop, http, &cfg, &s3, &err) != 0) {
        fprintf(stderr, "bench_copy_memory: %s\n", err.msg);
        return 1;
    }
    if (is_seed)
        return seed(s3, j, bucket, sp, dp, rule);
    seconds_max = atof(argv[6]);
    if (seconds_max <= 0) {
        fprintf(stderr, "bench_copy_memory: SECONDS > 0 expected\n");
        return 2;
    }
    struct sw_repl_rule r = {.name = rule,
                             .src_name = "onprem",
                             .src = s3,
                             .bucket = bucket,
                             .prefix = sp,
                             .ntargets = 1};
    r.targets[0] = (struct sw_repl_target){"onprem", s3, bucket, dp};
    long rss0 = status_field("VmRSS");
    t0 = mono_s();
    pthread_t th;
    pthread_create(&th, NULL, deadline, NULL);
    struct sw_repl_stats st;
    int rc = sw_repl_run_once(&r, j, NULL, NULL, &st, &err);
    printf("done=1 rc=%d listed=%" PRId64 " copied=%" PRId64 " skipped=%" PRId64 " failed=%" PRId64
           " seconds=%.1f rss_at_start_kib=%ld peak_rss_kib=%ld%s%s\n",
           rc, st.listed, st.copied, st.skipped, st.failed, mono_s() - t0, rss0,
           status_field("VmHWM"), rc ? " error=" : "", rc ? err.msg : "");
    fflush(stdout);
    _exit(rc ? 1 : 0);
}
