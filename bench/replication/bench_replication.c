/*
 * bench_replication.c - spillway's replicator against rclone, side by side
 * in one run, copying the same object sets between the same two S3
 * endpoints.
 *
 *   bench_replication [--big-count N] [--big-mib M] [--small-count N]
 *                     [--small-kib K] [--rounds R] [--keep]
 *
 * Endpoints and credentials come from the lab's environment
 * (SW_LAB_S3_ENDPOINT_ONPREM -> SW_LAB_S3_ENDPOINT_US_EAST_1,
 * SW_LAB_S3_ACCESS_KEY, SW_LAB_S3_SECRET_KEY; regions from
 * SW_LAB_S3_REGION_* or the lab's names). The object sets are generated
 * into the source once (2 x 1 GiB and 2,000 x 64 KiB by default); each
 * round copies every set with rclone (Debian's package, default settings)
 * and with spillway into fresh target prefixes, and the best round of each
 * is reported: MB/s for both and ours / rclone.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"
#include "replication/replicator.h"
#include "replication/s3.h"
#include "tests/support/fill.h"

static uv_loop_t loop;
static struct sw_http *http;

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
        exit(2);
    }
    return v && *v ? v : dflt;
}

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

static int put_set(struct sw_s3 *s3, const char *bucket, const char *prefix, int count, size_t size)
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

static void rm_prefix(struct sw_s3 *s3, const char *bucket, const char *prefix)
{
    for (int round = 0; round < 1000; round++) {
        struct sw_s3_list l;
        struct sw_error err;
        if (sw_s3_list_sync(s3, bucket, prefix, NULL, &l, &err) != 0)
            return;
        int empty = l.n == 0;
        for (size_t i = 0; i < l.n; i++)
            sw_s3_delete_sync(s3, bucket, l.objects[i].key, &err);
        sw_s3_list_free(&l);
        if (empty)
            return;
    }
}

static double run_rclone(const char *bucket, const char *from, const char *to)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "rclone copy --quiet swbsrc:%s/%s swbdst:%s/%s", bucket, from,
             bucket, to);
    double t0 = now_s();
    int rc = system(cmd);
    double t = now_s() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_replication: rclone failed (%d): %s\n", rc, cmd);
        exit(1);
    }
    return t;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double last_cpu;

static double run_ours(struct sw_s3 *src, struct sw_s3 *dst, const char *bucket, const char *from,
                       const char *to, int64_t *bytes)
{
    struct sw_repl_rule r = {.name = "bench",
                             .src_name = "onprem",
                             .src = src,
                             .bucket = bucket,
                             .prefix = from,
                             .ntargets = 1,
                             .concurrency = 32,
                             .part_concurrency = 8,
                             .allow_server_copy = 0,
                             .part_size = 16u << 20};
    r.targets[0] = (struct sw_repl_target){"us-east-1", dst, bucket, to};
    const char *c = getenv("SW_BENCH_CONCURRENCY");
    if (c != NULL && atoi(c) > 0)
        r.concurrency = atoi(c);
    struct sw_repl_stats st;
    struct sw_error err;
    double t0 = now_s(), c0 = cpu_s();
    int rc = sw_repl_run_once(&r, NULL, NULL, NULL, &st, &err);
    double t = now_s() - t0;
    last_cpu = cpu_s() - c0;
    if (rc != 0) {
        fprintf(stderr, "bench_replication: spillway failed: %s\n", err.msg);
        exit(1);
    }
    *bytes = st.bytes_copied;
    return t;
}

int main(int argc, char **argv)
{
    int big_count = 2, big_mib = 1024, small_count = 2000, small_kib = 64, rounds = 2, keep = 0;
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
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else {
            fprintf(stderr, "usage: bench_replication [--big-count N] [--big-mib M] "
                            "[--small-count N] [--small-kib K] [--rounds R] [--keep]\n");
            return 2;
        }
    }
    sw_log_set_level(SW_LOG_ERROR);
    const char *ep_src = env("SW_LAB_S3_ENDPOINT_ONPREM", NULL);
    const char *ep_dst = env("SW_LAB_S3_ENDPOINT_US_EAST_1", NULL);
    const char *ak = env("SW_LAB_S3_ACCESS_KEY", NULL), *sk = env("SW_LAB_S3_SECRET_KEY", NULL);
    const char *rg_src = env("SW_LAB_S3_REGION_ONPREM", "onprem");
    const char *rg_dst = env("SW_LAB_S3_REGION_US_EAST_1", "us-east-1");
    const char *bucket = "datasets";

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
    struct sw_error err;
    if (sw_s3_new(&loop, http, &cs, &src, &err) != 0 || sw_s3_new(&loop, http, &cd, &dst, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char base[64];
    snprintf(base, sizeof(base), "bench-%d-%ld/", (int)getpid(), (long)time(NULL));
    struct {
        const char *name;
        int count;
        size_t size;
        double best_ours, best_rclone;
        int64_t bytes;
    } sets[2] = {{"1 GiB objects", big_count, (size_t)big_mib << 20, 0, 0, 0},
                 {"64 KiB objects", small_count, (size_t)small_kib << 10, 0, 0, 0}};
    if (big_mib != 1024)
        sets[0].name = "big objects";
    if (small_kib != 64)
        sets[1].name = "small objects";

    printf("bench_replication: %s -> %s, %d x %d MiB and %d x %d KiB, %d round(s)\n", ep_src,
           ep_dst, big_count, big_mib, small_count, small_kib, rounds);
    for (int s = 0; s < 2; s++) {
        char p[128];
        snprintf(p, sizeof(p), "%ssrc-%d/", base, s);
        double t0 = now_s();
        if (put_set(src, bucket, p, sets[s].count, sets[s].size) != 0)
            return 1;
        printf("  generated %d x %zu bytes in the source in %.1f s\n", sets[s].count, sets[s].size,
               now_s() - t0);
        fflush(stdout);
    }
    for (int round = 0; round < rounds; round++) {
        for (int s = 0; s < 2; s++) {
            char from[128], to_r[128], to_o[128];
            snprintf(from, sizeof(from), "%ssrc-%d/", base, s);
            snprintf(to_r, sizeof(to_r), "%srclone-%d-%d/", base, s, round);
            snprintf(to_o, sizeof(to_o), "%sours-%d-%d/", base, s, round);
            double bytes = (double)sets[s].count * (double)sets[s].size;
            /* Alternate who goes first, so neither always finds warm caches. */
            double tr, to;
            int64_t copied = 0;
            if (round % 2 == 0) {
                tr = run_rclone(bucket, from, to_r);
                to = run_ours(src, dst, bucket, from, to_o, &copied);
            } else {
                to = run_ours(src, dst, bucket, from, to_o, &copied);
                tr = run_rclone(bucket, from, to_r);
            }
            if ((double)copied != bytes) {
                fprintf(stderr,
                        "bench_replication: spillway copied %" PRId64 " bytes, expected %.0f\n",
                        copied, bytes);
                return 1;
            }
            double mr = bytes / 1e6 / tr, mo = bytes / 1e6 / to;
            printf("  round %d %-15s rclone %8.1f MB/s (%6.2f s)   spillway %8.1f MB/s (%6.2f s, "
                   "%.2f s CPU)\n",
                   round + 1, sets[s].name, mr, tr, mo, to, last_cpu);
            fflush(stdout);
            if (mr > sets[s].best_rclone)
                sets[s].best_rclone = mr;
            if (mo > sets[s].best_ours)
                sets[s].best_ours = mo;
            if (!keep) {
                rm_prefix(dst, bucket, to_r);
                rm_prefix(dst, bucket, to_o);
            }
        }
    }
    printf("\nresult (best of %d):\n", rounds);
    int ok = 1;
    for (int s = 0; s < 2; s++) {
        double ratio = sets[s].best_ours / sets[s].best_rclone;
        printf("  %-15s %5d objects  rclone %8.1f MB/s  spillway %8.1f MB/s  ratio %.2f %s\n",
               sets[s].name, sets[s].count, sets[s].best_rclone, sets[s].best_ours, ratio,
               ratio >= 1.0 ? "(>= 1.0)" : "(BELOW 1.0)");
        ok &= ratio >= 1.0;
    }
    if (!keep) {
        char p[128];
        for (int s = 0; s < 2; s++) {
            snprintf(p, sizeof(p), "%ssrc-%d/", base, s);
            rm_prefix(src, bucket, p);
        }
    }
    sw_s3_free(src);
    sw_s3_free(dst);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return ok ? 0 : 1;
}
