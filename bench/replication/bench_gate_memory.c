/*
 * bench_gate_memory.c - the memory and threads the data gate takes for ten
 * gated Jobs naming a large prefix, as the hub's data step calls it
 * (controller/hub/data.c: one sw_gate_estimate per Job, from the loop).
 *
 * bench/replication/bench_gate_memory.sh builds this same file against two
 * trees (the tree before the gate's pool and page-by-page merge, and this
 * one) and runs both on the same prefix. It uses only the gating API both
 * trees have, and measures its own process: the peak resident set
 * (VmHWM in /proc/self/status) and the most threads seen (sampled every
 * 20 ms on the loop).
 *
 *   bench_gate_memory BUCKET PREFIX JOBS SECONDS
 *
 * The stores come from the lab's environment (SW_LAB_S3_*, testbed env):
 * the inputs are on onprem, and every Job is estimated for us-west-2,
 * where nothing of the prefix is, so each estimate lists all of it on one
 * side. Prints one line of key=value figures; after SECONDS it stops,
 * printing what it measured so far with done=N of JOBS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "replication/gate.h"

struct state {
    int done, failed, jobs;
    long max_threads;
    int64_t objects;
    char first_error[SW_ERROR_MSG_MAX];
};

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

static void on_estimate(const struct sw_gate_result *r, void *ctx)
{
    struct state *s = ctx;
    s->done++;
    if (r->rc != 0) {
        s->failed++;
        if (s->first_error[0] == '\0')
            snprintf(s->first_error, sizeof(s->first_error), "%s", r->err.msg);
    } else {
        s->objects = r->objects_to_copy;
    }
}

static struct state st;
static uv_loop_t *loop;

static void on_sample(uv_timer_t *t)
{
    long n = status_field("Threads");
    if (n > st.max_threads)
        st.max_threads = n;
    if (st.done == st.jobs)
        uv_stop(loop);
    (void)t;
}

static void on_deadline(uv_timer_t *t)
{
    (void)t;
    uv_stop(loop);
}

static const char *need(const char *n)
{
    const char *v = getenv(n);
    if (v == NULL || *v == '\0') {
        fprintf(stderr,
                "bench_gate_memory: %s is not set (eval \"$(tests/testbed/testbed env)\")\n", n);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_gate_memory BUCKET PREFIX JOBS SECONDS\n");
        return 2;
    }
    sw_log_set_level(SW_LOG_ERROR);
    const char *bucket = argv[1], *prefix = argv[2];
    st.jobs = atoi(argv[3]);
    double seconds = atof(argv[4]);
    if (st.jobs < 1 || st.jobs > 100 || seconds <= 0) {
        fprintf(stderr, "bench_gate_memory: JOBS 1-100 and SECONDS > 0 expected\n");
        return 2;
    }
    const char *ak = need("SW_LAB_S3_ACCESS_KEY"), *sk = need("SW_LAB_S3_SECRET_KEY");
    struct sw_gate_store stores[2];
    stores[0].cfg = (struct sw_s3_config){.name = "onprem",
                                          .endpoint = need("SW_LAB_S3_ENDPOINT_ONPREM"),
                                          .region = "onprem",
                                          .access_key = ak,
                                          .secret_key = sk};
    stores[1].cfg = (struct sw_s3_config){.name = "us-west-2",
                                          .endpoint = need("SW_LAB_S3_ENDPOINT_US_WEST_2"),
                                          .region = "us-west-2",
                                          .access_key = ak,
                                          .secret_key = sk};
    loop = uv_default_loop();
    long threads0 = status_field("Threads");
    long rss0 = status_field("VmRSS");
    uint64_t t0 = uv_hrtime();
    for (int i = 0; i < st.jobs; i++) {
        char job[64];
        snprintf(job, sizeof(job), "bench/gate-memory-%d", i);
        struct sw_gate_input in = {"onprem", bucket, prefix, NULL};
        struct sw_gate_request req = {.job = job,
                                      .region = "us-west-2",
                                      .stores = stores,
                                      .nstores = 2,
                                      .inputs = &in,
                                      .ninputs = 1};
        struct sw_error err;
        if (sw_gate_estimate(loop, &req, on_estimate, &st, &err) != 0) {
            fprintf(stderr, "bench_gate_memory: %s\n", err.msg);
            return 1;
        }
    }
    uv_timer_t sample, deadline;
    uv_timer_init(loop, &sample);
    uv_timer_init(loop, &deadline);
    uv_timer_start(&sample, on_sample, 0, 20);
    uv_timer_start(&deadline, on_deadline, (uint64_t)(seconds * 1000), 0);
    uv_run(loop, UV_RUN_DEFAULT);
    on_sample(&sample);
    printf("jobs=%d done=%d failed=%d objects_per_job=%lld seconds=%.1f threads_at_start=%ld "
           "max_threads=%ld rss_at_start_kib=%ld peak_rss_kib=%ld%s%s\n",
           st.jobs, st.done, st.failed, (long long)st.objects, (double)(uv_hrtime() - t0) / 1e9,
           threads0, st.max_threads, rss0, status_field("VmHWM"),
           st.first_error[0] ? " first_error=" : "", st.first_error);
    fflush(stdout);
    /* The gate's threads may still be listing: leave without waiting. */
    _exit(st.failed ? 1 : 0);
}
