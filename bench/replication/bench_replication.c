/*
 * bench_replication.c - spillway's real replication path against rclone,
 * defaults and tuned, and against the S3 servers' own ceiling, in one run,
 * copying the same object sets between the same two S3 endpoints.
 *
 *   bench_replication [--big-count N] [--big-mib M] [--small-count N]
 *                     [--small-kib K] [--rounds R] [--sets big,small]
 *                     [--tools ceiling,rclone-default,rclone-tuned,ours,ours-tuned]
 *                     [--no-tuned] [--keep]
 *
 * Endpoints, credentials and Redis come from the lab's environment
 * (eval "$(tests/testbed/testbed env)"): SW_LAB_S3_ENDPOINT_ONPREM ->
 * SW_LAB_S3_ENDPOINT_US_EAST_1, SW_LAB_S3_ACCESS_KEY, SW_LAB_S3_SECRET_KEY,
 * SW_LAB_REDIS_URL (the journal goes to database SW_BENCH_REDIS_DB, 9 by
 * default, the lab's benchmark database). spillctl is the one built beside
 * this program (SW_BENCH_SPILLCTL overrides it); rclone is the one on PATH
 * (Debian's package, installed by scripts/install-deps.sh).
 *
 * The object sets (2 x 1 GiB and 2,000 x 64 KiB by default) are written to
 * the source once. Each round copies every set into fresh target prefixes
 * with each contender, in forward order in odd rounds and reverse order in
 * even ones, so no contender always runs on a warm or a cold server:
 *
 *   ceiling          each piece (an object up to 16 MiB, else a 16 MiB
 *                    part of a multipart upload) one GET, then one PUT of
 *                    the same bytes, UNSIGNED-PAYLOAD, 32 objects or 8 parts
 *                    in flight, by our S3 client in this process: no
 *                    hashing, checks, journal, listing or process start
 *   rclone default   rclone copy with no flags
 *   rclone tuned     rclone copy as its docs advise for many and for large
 *                    objects, part size and multipart threshold matched to
 *                    ours (RCLONE_TUNED below)
 *   spillway         spillctl replicate run RULE --once, a rule at its
 *                    defaults, Redis journal and verification on
 *   spillway tuned   the same with --concurrency 32 --part-concurrency 8
 *
 * Every process is timed from start to exit; every copy is checked by
 * listing the target (object count and bytes), and spillway's journal by
 * the count of verified copies it recorded. The result is the median over
 * rounds of each contender's MB/s and of the per-round ratios, with their
 * spread (min..max). Exit status: 0, 1 on a failure, 3 when spillway's
 * median falls below tuned rclone's for a set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"
#include "replication/copy.h"
#include "replication/s3.h"
#include "store/redis.h"
#include "tests/support/fill.h"

#ifndef SW_BENCH_SPILLCTL_PATH
#define SW_BENCH_SPILLCTL_PATH "spillctl"
#endif

#define MAX_ROUNDS 15
#define PART       ((size_t)16 << 20)

/* rclone as its docs advise for many objects (--transfers, --checkers) and
 * for large ones (--s3-upload-concurrency, --s3-chunk-size), without the
 * HEAD after each upload and the bucket check; 16 MiB parts and the
 * multipart threshold at one part, as spillway. */
static const char *const RCLONE_TUNED[] = {"--transfers",
                                           "32",
                                           "--checkers",
                                           "32",
                                           "--s3-upload-concurrency",
                                           "8",
                                           "--s3-chunk-size",
                                           "16M",
                                           "--s3-upload-cutoff",
                                           "16M",
                                           "--s3-no-head",
                                           "--s3-no-check-bucket",
                                           NULL};

enum { T_CEILING, T_RCLONE_DEFAULT, T_RCLONE_TUNED, T_OURS, T_OURS_TUNED, NTOOLS };
static const char *const TOOL_NAME[NTOOLS] = {"ceiling", "rclone default", "rclone tuned",
                                              "spillway", "spillway tuned"};
static const char *const TOOL_SLUG[NTOOLS] = {"ceiling", "rclone-default", "rclone-tuned", "ours",
                                              "ours-tuned"};

static uv_loop_t loop;
static struct sw_http *http;
static const char *spillctl;
static const char *bucket = "datasets";
static char tag[48];  /* bench-PID-TIME: names the stores and rules */
static char base[64]; /* tag + "/": the object prefix of this run */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *env(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    if ((v == NULL || *v == '\0') && dflt == NULL) {
        fprintf(stderr,
                "bench_replication: %s is not set (eval \"$(tests/testbed/testbed env)\")\n", name);
        exit(1);
    }
    return v && *v ? v : dflt;
}

/* ---- processes ---------------------------------------------------------- */

/* Runs argv to its exit with stdout to /dev/null (stderr kept); returns
 * its wall seconds and fills *cpu with its user + system seconds. Exits
 * the benchmark when it fails. */
static double run_proc(char *const argv[], double *cpu)
{
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench_replication: fork");
        exit(1);
    }
    if (pid == 0) {
        if (freopen("/dev/null", "w", stdout) == NULL)
            _exit(126);
        execvp(argv[0], argv);
        fprintf(stderr, "bench_replication: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            perror("bench_replication: wait4");
            exit(1);
        }
    double t = now_s() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_replication: failed (status %d):", status);
        for (int i = 0; argv[i]; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, "\n");
        exit(1);
    }
    if (cpu)
        *cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    return t;
}

static double cpu_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double run_rclone(int tuned, const char *from, const char *to, double *cpu)
{
    char src[512], dst[512];
    snprintf(src, sizeof(src), "swbsrc:%s/%s", bucket, from);
    snprintf(dst, sizeof(dst), "swbdst:%s/%s", bucket, to);
    char *argv[32];
    int n = 0;
    argv[n++] = "rclone";
    argv[n++] = "copy";
    argv[n++] = "--quiet";
    for (int i = 0; tuned && RCLONE_TUNED[i]; i++)
        argv[n++] = (char *)RCLONE_TUNED[i];
    argv[n++] = src;
    argv[n++] = dst;
    argv[n] = NULL;
    return run_proc(argv, cpu);
}

static void spillctl_quiet(char **argv)
{
    run_proc(argv, NULL);
}

static void rule_name(char *out, size_t n, int tool, int set, int round)
{
    snprintf(out, n, "%s-%s-%d-%d", tag, TOOL_SLUG[tool], set, round);
}

/* Adds the rule that copies `from` to `to` (not timed). */
static void add_rule(const char *rule, int tuned, const char *from, const char *to)
{
    char f[512], t[512], s[96], d[96];
    snprintf(s, sizeof(s), "%s-src", tag);
    snprintf(d, sizeof(d), "%s-dst", tag);
    snprintf(f, sizeof(f), "%s:%s/%s", s, bucket, from);
    snprintf(t, sizeof(t), "%s:%s/%s", d, bucket, to);
    char *argv[] = {(char *)spillctl,
                    "replicate",
                    "add",
                    (char *)rule,
                    "--from",
                    f,
                    "--to",
                    t,
                    tuned ? "--concurrency" : NULL,
                    "32",
                    "--part-concurrency",
                    "8",
                    NULL};
    spillctl_quiet(argv);
}

static double run_ours(const char *rule, double *cpu)
{
    char *argv[] = {(char *)spillctl, "replicate",  "run",  (char *)rule,
                    "--once",         "--progress", "none", NULL};
    return run_proc(argv, cpu);
}

/* The verified copies the journal holds for a rule's target. A connection
 * per check: the lab's Redis may be restarted by a test meanwhile (it keeps
 * its data). */
static const char *journal_url;

static long long journal_done(const char *rule)
{
    char d[96];
    snprintf(d, sizeof(d), "%s-dst", tag);
    redisContext *c = NULL;
    redisReply *r = NULL;
    struct sw_error err;
    char key[512];
    snprintf(key, sizeof(key), "sw:repl:%s:done:%s", rule, d);
    if (sw_redis_sync_connect(journal_url, 5000, &c, &err) != 0 ||
        sw_redis_sync_command(c, &r, &err, "HLEN %s", key) != 0) {
        fprintf(stderr, "bench_replication: %s\n", err.msg);
        exit(1);
    }
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* ---- objects on the stores ---------------------------------------------- */

struct bulk {
    int inflight, failed;
};

static void on_put(struct sw_s3_response *r, void *ctx)
{
    struct bulk *b = ctx;
    b->inflight--;
    if (r->rc != 0) {
        b->failed++;
        fprintf(stderr, "%s\n", r->err.msg);
    }
}

static int put_set(struct sw_s3 *s3, const char *prefix, int count, size_t size)
{
    char *buf = sw_malloc(size ? size : 1);
    if (buf == NULL)
        return -1;
    struct bulk b = {0, 0};
    char(*keys)[256] = sw_calloc(64, 256);
    for (int i = 0; i < count; i++) {
        while (b.inflight >= (size > (8u << 20) ? 1 : 32))
            uv_run(&loop, UV_RUN_ONCE);
        if (size > (8u << 20) || i == 0)
            sw_test_fill(buf, size, (uint64_t)i + 1);
        snprintf(keys[i % 64], 256, "%sobj-%05d", prefix, i);
        struct sw_s3_request req = {
            .method = "PUT", .bucket = bucket, .key = keys[i % 64], .body = buf, .body_len = size};
        struct sw_error err;
        if (sw_s3_send(s3, &req, on_put, &b, &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            b.failed++;
            break;
        }
        b.inflight++;
        if (size > (8u << 20))
            while (b.inflight > 0)
                uv_run(&loop, UV_RUN_ONCE);
    }
    while (b.inflight > 0)
        uv_run(&loop, UV_RUN_ONCE);
    sw_free(keys);
    sw_free(buf);
    return b.failed ? -1 : 0;
}

/* Counts the objects and bytes under a prefix. */
static int count_prefix(struct sw_s3 *s3, const char *prefix, int64_t *n, int64_t *bytes)
{
    *n = 0;
    *bytes = 0;
    char *token = NULL;
    for (;;) {
        struct sw_s3_list l;
        struct sw_error err;
        int rc = sw_s3_list_sync(s3, bucket, prefix, token, &l, &err);
        sw_free(token);
        token = NULL;
        if (rc != 0) {
            fprintf(stderr, "bench_replication: %s\n", err.msg);
            return rc;
        }
        for (size_t i = 0; i < l.n; i++) {
            (*n)++;
            *bytes += l.objects[i].size;
        }
        if (l.truncated)
            token = l.next_token, l.next_token = NULL;
        sw_s3_list_free(&l);
        if (token == NULL)
            return 0;
    }
}

static void on_deleted(struct sw_s3_response *r, void *ctx)
{
    (void)r;
    ((struct bulk *)ctx)->inflight--;
}

static void rm_prefix(struct sw_s3 *s3, const char *prefix)
{
    for (int round = 0; round < 1000; round++) {
        struct sw_s3_list l;
        struct sw_error err;
        if (sw_s3_list_sync(s3, bucket, prefix, NULL, &l, &err) != 0)
            return;
        int empty = l.n == 0;
        struct bulk b = {0, 0};
        for (size_t i = 0; i < l.n; i++) {
            while (b.inflight >= 16)
                uv_run(&loop, UV_RUN_ONCE);
            struct sw_s3_request req = {
                .method = "DELETE", .bucket = bucket, .key = l.objects[i].key};
            if (sw_s3_send(s3, &req, on_deleted, &b, &err) == 0)
                b.inflight++;
        }
        while (b.inflight > 0)
            uv_run(&loop, UV_RUN_ONCE);
        sw_s3_list_free(&l);
        if (empty)
            return;
    }
}

/* ---- where the CPU goes ------------------------------------------------- */

/* The lab's source and target S3 servers and Redis, from their pid files
 * ($SW_LAB_DIR/run/NAME.pid); 0 when unknown (their CPU is not shown). */
static const char *const SERVER_PIDFILE[3] = {"s3-onprem", "s3-us-east-1", "redis"};
static int server_pid[3];

static void find_servers(void)
{
    const char *dir = getenv("SW_LAB_DIR");
    memset(server_pid, 0, sizeof(server_pid));
    for (int i = 0; dir && i < 3; i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/run/%s.pid", dir, SERVER_PIDFILE[i]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fscanf(f, "%d", &server_pid[i]) != 1)
            server_pid[i] = 0;
        fclose(f);
    }
}

/* User + system seconds of a process so far; -1 if unknown. */
static double proc_cpu(int pid)
{
    if (pid <= 0)
        return -1;
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields after the command name, which is in parentheses. */
    const char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- the ceiling: GET then PUT, nothing else ---------------------------- */

/* The ceiling is the copy with nothing but the transfers: each piece (a
 * whole object up to 16 MiB, else a 16 MiB part of a multipart upload) is
 * fetched with one GET and sent with one PUT, UNSIGNED-PAYLOAD, 32 whole
 * objects or 8 parts in flight over all objects (8 parts beat 16 and 32 on
 * the lab's servers; SW_BENCH_CEILING_INFLIGHT and _PARTS change them); no
 * hashing, no checks, no journal, no process start or listing. */
struct cobj {
    char key_src[256], key_dst[256];
    char upload_id[256];
    int nparts, parts_done;
    char (*etags)[SW_S3_ETAG_MAX];
    struct sw_buf complete;
};

struct cpiece {
    struct cobj *o;
    int part; /* 0-based; -1 for a whole object */
    size_t off, len;
    char *data;
};

struct ceiling {
    struct sw_s3 *src, *dst;
    int inflight, failed;
};

static struct ceiling ceil_run;
static int ceil_inflight = 32;      /* whole small objects */
static int ceil_inflight_parts = 8; /* 16 MiB parts: 8 beat 16 and 32 on the lab */

static void on_ceiling_complete(struct sw_s3_response *r, void *ctx)
{
    struct cobj *o = ctx;
    ceil_run.inflight--;
    if (r->rc != 0) {
        fprintf(stderr, "bench_replication: ceiling complete %s: %s\n", o->key_dst, r->err.msg);
        ceil_run.failed++;
    }
}

static void ceiling_complete(struct cobj *o)
{
    sw_buf_init(&o->complete, (size_t)o->nparts * 160 + 128);
    sw_buf_adds(&o->complete, "<CompleteMultipartUpload>");
    for (int i = 0; i < o->nparts; i++) {
        sw_buf_addf(&o->complete, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1);
        for (const char *c = o->etags[i]; *c; c++)
            *c == '"' ? sw_buf_adds(&o->complete, "&quot;") : sw_buf_add(&o->complete, c, 1);
        sw_buf_adds(&o->complete, "</ETag></Part>");
    }
    sw_buf_adds(&o->complete, "</CompleteMultipartUpload>");
    struct sw_sigv4_pair q[] = {{"uploadId", o->upload_id}};
    struct sw_s3_request req = {.method = "POST",
                                .bucket = bucket,
                                .key = o->key_dst,
                                .query = q,
                                .nquery = 1,
                                .body = o->complete.data,
                                .body_len = o->complete.len,
                                .body_sha256 = "UNSIGNED-PAYLOAD"};
    struct sw_error err;
    if (sw_s3_send(ceil_run.dst, &req, on_ceiling_complete, o, &err) != 0) {
        fprintf(stderr, "bench_replication: %s\n", err.msg);
        ceil_run.failed++;
        return;
    }
    ceil_run.inflight++;
}

static void on_ceiling_put(struct sw_s3_response *r, void *ctx)
{
    struct cpiece *p = ctx;
    struct cobj *o = p->o;
    ceil_run.inflight--;
    if (r->rc != 0 ||
        (p->part >= 0 && sw_http_header(r->http, "ETag", o->etags[p->part], SW_S3_ETAG_MAX))) {
        fprintf(stderr, "bench_replication: ceiling PUT %s: %s\n", o->key_dst,
                r->rc ? r->err.msg : "no ETag");
        ceil_run.failed++;
    } else if (p->part >= 0 && ++o->parts_done == o->nparts) {
        ceiling_complete(o);
    }
    sw_free(p->data);
    sw_free(p);
}

static void on_ceiling_get(struct sw_s3_response *r, void *ctx)
{
    struct cpiece *p = ctx;
    ceil_run.inflight--;
    if (r->rc != 0 || r->http->body.len != p->len) {
        fprintf(stderr, "bench_replication: ceiling GET %s: %s\n", p->o->key_src,
                r->rc ? r->err.msg : "short body");
        ceil_run.failed++;
        sw_free(p);
        return;
    }
    p->data = sw_buf_take(&r->http->body, NULL);
    char num[16];
    snprintf(num, sizeof(num), "%d", p->part + 1);
    struct sw_sigv4_pair q[] = {{"partNumber", num}, {"uploadId", p->o->upload_id}};
    struct sw_s3_request req = {.method = "PUT",
                                .bucket = bucket,
                                .key = p->o->key_dst,
                                .query = q,
                                .nquery = p->part >= 0 ? 2 : 0,
                                .body = p->data ? p->data : "",
                                .body_len = p->len,
                                .body_sha256 = "UNSIGNED-PAYLOAD"};
    struct sw_error err;
    if (sw_s3_send(ceil_run.dst, &req, on_ceiling_put, p, &err) != 0) {
        fprintf(stderr, "bench_replication: %s\n", err.msg);
        ceil_run.failed++;
        sw_free(p->data);
        sw_free(p);
        return;
    }
    ceil_run.inflight++;
}

static int run_ceiling(struct sw_s3 *src, struct sw_s3 *dst, const char *from, const char *to,
                       int count, size_t size)
{
    struct cobj *objs = sw_calloc((size_t)count, sizeof(*objs));
    if (objs == NULL)
        return -1;
    ceil_run = (struct ceiling){src, dst, 0, 0};
    int multipart = size > PART, rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        struct cobj *o = &objs[i];
        snprintf(o->key_src, sizeof(o->key_src), "%sobj-%05d", from, i);
        snprintf(o->key_dst, sizeof(o->key_dst), "%sobj-%05d", to, i);
        o->nparts = multipart ? (int)((size + PART - 1) / PART) : 0;
        if (!multipart)
            continue;
        o->etags = sw_calloc((size_t)o->nparts, SW_S3_ETAG_MAX);
        struct sw_sigv4_pair q[] = {{"uploads", ""}};
        struct sw_s3_request req = {
            .method = "POST", .bucket = bucket, .key = o->key_dst, .query = q, .nquery = 1};
        struct sw_s3_result res;
        struct sw_error err;
        char *id = NULL;
        if (o->etags == NULL || sw_s3_do(dst, &req, &res) != 0 ||
            sw_s3xml_parse_initiate(res.body.data, res.body.len, &id, &err) != 0) {
            fprintf(stderr, "bench_replication: ceiling create: %s\n",
                    res.rc ? res.err.msg : err.msg);
            rc = -1;
        } else {
            snprintf(o->upload_id, sizeof(o->upload_id), "%s", id);
        }
        sw_free(id);
        sw_s3_result_free(&res);
    }
    for (int i = 0; i < count && rc == 0 && ceil_run.failed == 0; i++) {
        for (size_t off = 0; off < size && ceil_run.failed == 0; off += PART) {
            while (ceil_run.inflight >= (multipart ? ceil_inflight_parts : ceil_inflight))
                uv_run(&loop, UV_RUN_ONCE);
            struct cpiece *p = sw_calloc(1, sizeof(*p));
            p->o = &objs[i];
            p->part = multipart ? (int)(off / PART) : -1;
            p->off = off;
            p->len = size - off < PART ? size - off : PART;
            char range[80];
            snprintf(range, sizeof(range), "bytes=%zu-%zu", off, off + p->len - 1);
            struct sw_sigv4_pair h[] = {{"Range", range}};
            struct sw_s3_request req = {.method = "GET",
                                        .bucket = bucket,
                                        .key = p->o->key_src,
                                        .headers = h,
                                        .nheaders = multipart ? 1 : 0,
                                        .max_body = p->len + 1};
            struct sw_error err;
            if (sw_s3_send(src, &req, on_ceiling_get, p, &err) != 0) {
                fprintf(stderr, "bench_replication: %s\n", err.msg);
                sw_free(p);
                rc = -1;
                break;
            }
            ceil_run.inflight++;
        }
    }
    while (ceil_run.inflight > 0)
        uv_run(&loop, UV_RUN_ONCE);
    /* A failed run leaves no multipart upload open on the target. */
    for (int i = 0; i < count && (rc != 0 || ceil_run.failed); i++) {
        struct sw_error err;
        if (objs[i].upload_id[0] != '\0' &&
            sw_copy_abort_sync(dst, bucket, objs[i].key_dst, objs[i].upload_id, &err) != 0)
            fprintf(stderr, "bench_replication: %s\n", err.msg);
    }
    for (int i = 0; i < count; i++) {
        sw_free(objs[i].etags);
        sw_buf_free(&objs[i].complete);
    }
    sw_free(objs);
    return rc != 0 || ceil_run.failed ? -1 : 0;
}

/* ---- statistics --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct spread {
    double median, min, max;
};

static struct spread spread_of(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof(*v));
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    struct spread r = {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[0], s[n - 1]};
    return r;
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: bench_replication [--big-count N] [--big-mib M] [--small-count N] "
                    "[--small-kib K] [--rounds R] [--sets big,small] [--tools LIST] [--no-tuned] "
                    "[--keep]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int big_count = 2, big_mib = 1024, small_count = 2000, small_kib = 64, rounds = 3, keep = 0;
    int want_tuned = 1, want_set[2] = {1, 1}, want_tool[NTOOLS] = {1, 1, 1, 1, 1};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--big-count") == 0 && i + 1 < argc)
            big_count = atoi(argv[++i]);
        else if (strcmp(argv[i], "--big-mib") == 0 && i + 1 < argc)
            big_mib = atoi(argv[++i]);
        else if (strcmp(argv[i], "--small-count") == 0 && i + 1 < argc)
            small_count = atoi(argv[++i]);
        else if (strcmp(argv[i], "--small-kib") == 0 && i + 1 < argc)
            small_kib = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--sets") == 0 && i + 1 < argc) {
            const char *s = argv[++i];
            want_set[0] = strstr(s, "big") != NULL;
            want_set[1] = strstr(s, "small") != NULL;
            if (!want_set[0] && !want_set[1])
                usage();
        } else if (strcmp(argv[i], "--tools") == 0 && i + 1 < argc) {
            /* A comma-separated subset of the slugs, for profiling. */
            const char *list = argv[++i];
            for (int t = 0; t < NTOOLS; t++) {
                size_t n = strlen(TOOL_SLUG[t]);
                const char *p = list;
                want_tool[t] = 0;
                while ((p = strstr(p, TOOL_SLUG[t])) != NULL) {
                    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
                        want_tool[t] = 1;
                    p += n;
                }
            }
        } else if (strcmp(argv[i], "--no-tuned") == 0)
            want_tuned = 0;
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else
            usage();
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || big_count < 1 || big_mib < 1 || small_count < 1 ||
        small_kib < 1) {
        fprintf(stderr, "bench_replication: counts and sizes >= 1, rounds 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    sw_log_set_level(SW_LOG_ERROR);
    const char *ep_src = env("SW_LAB_S3_ENDPOINT_ONPREM", NULL);
    const char *ep_dst = env("SW_LAB_S3_ENDPOINT_US_EAST_1", NULL);
    const char *ak = env("SW_LAB_S3_ACCESS_KEY", NULL), *sk = env("SW_LAB_S3_SECRET_KEY", NULL);
    const char *rg_src = env("SW_LAB_S3_REGION_ONPREM", "onprem");
    const char *rg_dst = env("SW_LAB_S3_REGION_US_EAST_1", "us-east-1");
    const char *lab_redis = env("SW_LAB_REDIS_URL", NULL);
    int db = atoi(env("SW_BENCH_REDIS_DB", "9"));
    spillctl = env("SW_BENCH_SPILLCTL", SW_BENCH_SPILLCTL_PATH);
    ceil_inflight = atoi(env("SW_BENCH_CEILING_INFLIGHT", "32"));
    ceil_inflight_parts = atoi(env("SW_BENCH_CEILING_INFLIGHT_PARTS", "8"));
    if (ceil_inflight < 1 || ceil_inflight_parts < 1) {
        fprintf(stderr, "bench_replication: SW_BENCH_CEILING_INFLIGHT(_PARTS) must be >= 1\n");
        return 2;
    }
    if (access(spillctl, X_OK) != 0) {
        fprintf(stderr, "bench_replication: no spillctl at %s (make build, or SW_BENCH_SPILLCTL)\n",
                spillctl);
        return 1;
    }

    /* The journal's Redis: the lab's server, the benchmark database.
     * redis://:PASSWORD@HOST:PORT/DB; spillctl takes the password apart. */
    const char *rest = strncmp(lab_redis, "redis://", 8) == 0 ? lab_redis + 8 : NULL;
    const char *at = rest ? strrchr(rest, '@') : NULL;
    if (rest == NULL) {
        fprintf(stderr, "bench_replication: SW_LAB_REDIS_URL is not redis://...\n");
        return 1;
    }
    char hostport[256], pass[256] = "", url[600];
    const char *hp = at ? at + 1 : rest;
    snprintf(hostport, sizeof(hostport), "%.*s", (int)strcspn(hp, "/"), hp);
    if (at != NULL) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        if (colon != NULL)
            snprintf(pass, sizeof(pass), "%.*s", (int)(at - colon - 1), colon + 1);
    }
    snprintf(url, sizeof(url), "redis://%s/%d", hostport, db);
    setenv("SPILLWAY_REDIS_URL", url, 1);
    if (pass[0])
        setenv("SPILLWAY_REDIS_PASSWORD", pass, 1);
    snprintf(url, sizeof(url), "redis://%s%s%s%s/%d", pass[0] ? ":" : "", pass, pass[0] ? "@" : "",
             hostport, db);
    struct sw_error err;
    journal_url = url;
    (void)journal_done("bench-connect-check");
    memset(pass, 0, sizeof(pass));
    /* A sealing key for this run's store credentials. */
    unsigned char rnd[32];
    FILE *ur = fopen("/dev/urandom", "rb");
    if (ur == NULL || fread(rnd, 1, sizeof(rnd), ur) != sizeof(rnd)) {
        fprintf(stderr, "bench_replication: cannot read /dev/urandom\n");
        return 1;
    }
    fclose(ur);
    char hexkey[65];
    for (int i = 0; i < 32; i++)
        snprintf(hexkey + 2 * i, 3, "%02x", rnd[i]);
    setenv("SPILLWAY_SECRET_KEY", hexkey, 1);
    setenv("SW_S3_ACCESS_KEY", ak, 1);
    setenv("SW_S3_SECRET_KEY", sk, 1);

    /* rclone's remotes, from the environment (no config file). */
    setenv("RCLONE_CONFIG_SWBSRC_TYPE", "s3", 1);
    setenv("RCLONE_CONFIG_SWBSRC_PROVIDER", "Other", 1);
    setenv("RCLONE_CONFIG_SWBSRC_ENDPOINT", ep_src, 1);
    setenv("RCLONE_CONFIG_SWBSRC_REGION", rg_src, 1);
    setenv("RCLONE_CONFIG_SWBSRC_ACCESS_KEY_ID", ak, 1);
    setenv("RCLONE_CONFIG_SWBSRC_SECRET_ACCESS_KEY", sk, 1);
    setenv("RCLONE_CONFIG_SWBDST_TYPE", "s3", 1);
    setenv("RCLONE_CONFIG_SWBDST_PROVIDER", "Other", 1);
    setenv("RCLONE_CONFIG_SWBDST_ENDPOINT", ep_dst, 1);
    setenv("RCLONE_CONFIG_SWBDST_REGION", rg_dst, 1);
    setenv("RCLONE_CONFIG_SWBDST_ACCESS_KEY_ID", ak, 1);
    setenv("RCLONE_CONFIG_SWBDST_SECRET_ACCESS_KEY", sk, 1);
    /* A CA bundle variable makes rclone's S3 client refuse plain HTTP. */
    unsetenv("AWS_CA_BUNDLE");

    uv_loop_init(&loop);
    sw_http_new(&loop, &http);
    struct sw_s3_config cs = {
        .name = "onprem", .endpoint = ep_src, .region = rg_src, .access_key = ak, .secret_key = sk};
    struct sw_s3_config cd = {.name = "us-east-1",
                              .endpoint = ep_dst,
                              .region = rg_dst,
                              .access_key = ak,
                              .secret_key = sk};
    struct sw_s3 *src, *dst;
    if (sw_s3_new(&loop, http, &cs, &src, &err) != 0 || sw_s3_new(&loop, http, &cd, &dst, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    snprintf(tag, sizeof(tag), "bench-%d-%ld", (int)getpid(), (long)time(NULL));
    snprintf(base, sizeof(base), "%s/", tag);

    /* The stores, named after the run. */
    char sname[96], dname[96];
    snprintf(sname, sizeof(sname), "%s-src", tag);
    snprintf(dname, sizeof(dname), "%s-dst", tag);
    {
        char *a1[] = {(char *)spillctl, "replicate",    "store",    "add",          sname,
                      "--endpoint",     (char *)ep_src, "--region", (char *)rg_src, NULL};
        char *a2[] = {(char *)spillctl, "replicate",    "store",    "add",          dname,
                      "--endpoint",     (char *)ep_dst, "--region", (char *)rg_dst, NULL};
        spillctl_quiet(a1);
        spillctl_quiet(a2);
    }

    struct set {
        const char *name;
        int count;
        size_t size;
        double mbs[NTOOLS][MAX_ROUNDS];
        double secs[NTOOLS][MAX_ROUNDS];
    } sets[2];
    memset(sets, 0, sizeof(sets));
    sets[0].name = big_mib == 1024 ? "1 GiB objects" : "big objects";
    sets[0].count = big_count;
    sets[0].size = (size_t)big_mib << 20;
    sets[1].name = small_kib == 64 ? "64 KiB objects" : "small objects";
    sets[1].count = small_count;
    sets[1].size = (size_t)small_kib << 10;
    int tools[NTOOLS], ntools = 0;
    for (int t = 0; t < NTOOLS; t++)
        if ((t != T_OURS_TUNED || want_tuned) && want_tool[t])
            tools[ntools++] = t;
    if (ntools == 0)
        usage();
    find_servers();

    printf("bench_replication: %s -> %s, %d x %d MiB and %d x %d KiB, %d round(s), journal in "
           "redis db %d\n",
           ep_src, ep_dst, big_count, big_mib, small_count, small_kib, rounds, db);
    printf("  rclone default: rclone copy SRC DST   (%s)\n", "4 transfers, 8 checkers, 5 MiB "
                                                             "chunks, 4 at a time, multipart above "
                                                             "200 MiB, HEAD after upload");
    printf("  rclone tuned:   rclone copy");
    for (int i = 0; RCLONE_TUNED[i]; i++)
        printf(" %s", RCLONE_TUNED[i]);
    printf(" SRC DST\n");
    printf("  spillway:       spillctl replicate add RULE --from S --to D; spillctl replicate run "
           "RULE --once --progress none   (16 objects, 4 parts of 16 MiB each)\n");
    if (want_tuned)
        printf("  spillway tuned: spillctl replicate add RULE --from S --to D --concurrency 32 "
               "--part-concurrency 8; run as above\n");
    printf("  ceiling:        our S3 client in this process: each piece (an object up to 16 MiB, "
           "else a 16 MiB part) one GET then one PUT of the same bytes, UNSIGNED-PAYLOAD, 32 "
           "objects or 8 parts in flight; nothing else\n");
    for (int s = 0; s < 2; s++) {
        if (!want_set[s])
            continue;
        char p[128];
        snprintf(p, sizeof(p), "%ssrc-%d/", base, s);
        double t0 = now_s();
        if (put_set(src, p, sets[s].count, sets[s].size) != 0)
            return 1;
        printf("  generated %d x %zu bytes in the source in %.1f s\n", sets[s].count, sets[s].size,
               now_s() - t0);
    }
    fflush(stdout);

    for (int round = 0; round < rounds; round++) {
        for (int s = 0; s < 2; s++) {
            if (!want_set[s])
                continue;
            char from[128];
            snprintf(from, sizeof(from), "%ssrc-%d/", base, s);
            double bytes = (double)sets[s].count * (double)sets[s].size;
            printf("  round %d %s:\n", round + 1, sets[s].name);
            for (int k = 0; k < ntools; k++) {
                /* Forward in odd rounds, reverse in even ones. */
                int t = tools[round % 2 == 0 ? k : ntools - 1 - k];
                char to[128], rule[160];
                snprintf(to, sizeof(to), "%s%s-%d-%d/", base, TOOL_SLUG[t], s, round);
                rule_name(rule, sizeof(rule), t, s, round);
                double secs = 0, cpu = 0, srv0[3], srv1[3];
                find_servers(); /* a test may have restarted one */
                for (int i = 0; i < 3; i++)
                    srv0[i] = proc_cpu(server_pid[i]);
                if (t == T_OURS || t == T_OURS_TUNED)
                    add_rule(rule, t == T_OURS_TUNED, from, to);
                switch (t) {
                case T_CEILING: {
                    double t0 = now_s(), c0 = cpu_self();
                    if (run_ceiling(src, dst, from, to, sets[s].count, sets[s].size) != 0)
                        return 1;
                    secs = now_s() - t0;
                    cpu = cpu_self() - c0;
                    break;
                }
                case T_RCLONE_DEFAULT:
                case T_RCLONE_TUNED:
                    secs = run_rclone(t == T_RCLONE_TUNED, from, to, &cpu);
                    break;
                default:
                    secs = run_ours(rule, &cpu);
                    break;
                }
                for (int i = 0; i < 3; i++)
                    srv1[i] = proc_cpu(server_pid[i]);
                int64_t n, got;
                if (count_prefix(dst, to, &n, &got) != 0)
                    return 1;
                if (n != sets[s].count || (double)got != bytes) {
                    fprintf(stderr,
                            "bench_replication: %s left %" PRId64 " objects, %" PRId64
                            " bytes in the target, expected %d, %.0f\n",
                            TOOL_NAME[t], n, got, sets[s].count, bytes);
                    return 1;
                }
                if (t == T_OURS || t == T_OURS_TUNED) {
                    long long done = journal_done(rule);
                    if (done != sets[s].count) {
                        fprintf(stderr,
                                "bench_replication: the journal holds %lld verified copies, "
                                "expected %d\n",
                                done, sets[s].count);
                        return 1;
                    }
                    char *argv_rm[] = {(char *)spillctl, "replicate", "remove", rule, NULL};
                    spillctl_quiet(argv_rm);
                }
                sets[s].secs[t][round] = secs;
                sets[s].mbs[t][round] = bytes / 1e6 / secs;
                printf("    %-15s %8.1f MB/s (%6.2f s, %.2f s CPU", TOOL_NAME[t],
                       bytes / 1e6 / secs, secs, cpu);
                if (srv0[0] >= 0 && srv1[0] >= 0 && srv0[1] >= 0 && srv1[1] >= 0)
                    printf("; servers: source %.2f s, target %.2f s", srv1[0] - srv0[0],
                           srv1[1] - srv0[1]);
                if (srv0[2] >= 0 && srv1[2] >= 0)
                    printf(", redis %.2f s", srv1[2] - srv0[2]);
                printf(")\n");
                fflush(stdout);
                /* Big targets go at once (disk space); small ones at the end,
                 * as deleting thousands of files slows the next file
                 * creations on the server's file system (ext4 skips
                 * recently deleted inodes), which would tax whoever runs
                 * next. */
                if (!keep && sets[s].size > PART)
                    rm_prefix(dst, to);
            }
        }
    }

    printf("\nresult (median over %d rounds, [min..max]):\n", rounds);
    int below = 0;
    for (int s = 0; s < 2; s++) {
        if (!want_set[s])
            continue;
        printf("  %s (%d objects):\n", sets[s].name, sets[s].count);
        for (int k = 0; k < ntools; k++) {
            int t = tools[k];
            struct spread m = spread_of(sets[s].mbs[t], rounds);
            printf("    %-15s %8.1f MB/s  [%.1f..%.1f]\n", TOOL_NAME[t], m.median, m.min, m.max);
        }
        struct {
            int a, b;
        } pairs[] = {{T_OURS, T_RCLONE_TUNED},
                     {T_OURS, T_RCLONE_DEFAULT},
                     {T_OURS, T_CEILING},
                     {T_OURS_TUNED, T_RCLONE_TUNED},
                     {T_OURS_TUNED, T_CEILING}};
        for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
            int ran_a = 0, ran_b = 0;
            for (int k = 0; k < ntools; k++) {
                ran_a |= tools[k] == pairs[i].a;
                ran_b |= tools[k] == pairs[i].b;
            }
            if (!ran_a || !ran_b)
                continue;
            double r[MAX_ROUNDS];
            for (int round = 0; round < rounds; round++)
                r[round] = sets[s].mbs[pairs[i].a][round] / sets[s].mbs[pairs[i].b][round];
            struct spread m = spread_of(r, rounds);
            printf("    %s / %s: %.2fx  [%.2f..%.2f]\n", TOOL_NAME[pairs[i].a],
                   TOOL_NAME[pairs[i].b], m.median, m.min, m.max);
            if (pairs[i].a == T_OURS && pairs[i].b == T_RCLONE_TUNED && m.median < 1.0)
                below = 1;
        }
    }
    if (!keep) {
        for (int s = 0; s < 2; s++) {
            char p[128];
            snprintf(p, sizeof(p), "%ssrc-%d/", base, s);
            rm_prefix(src, p);
        }
        rm_prefix(dst, base);
    }
    {
        char *a1[] = {(char *)spillctl, "replicate", "store", "remove", sname, NULL};
        char *a2[] = {(char *)spillctl, "replicate", "store", "remove", dname, NULL};
        spillctl_quiet(a1);
        spillctl_quiet(a2);
    }
    memset(url, 0, sizeof(url));
    sw_s3_free(src);
    sw_s3_free(dst);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    if (below)
        printf("spillway's median is below tuned rclone's for a set\n");
    return below ? 3 : 0;
}
