/*
 * bench_placement.c - how fast the placement engine decides a big queue.
 *
 * Builds a synthetic snapshot of 10,000 pending workloads over 100 pools
 * (a few owned pools with local queues, the rest spot and on-demand across
 * regions, with products, memory, interconnect, inputs, quotas and
 * budgets), then decides the whole queue repeatedly with a warm engine and
 * reports, for the cost-aware policy and for the greedy baseline side by
 * side: whole-queue latency (p50, p99) in wall-clock and in CPU time (the
 * machine may be shared: CPU time is the engine's own work, wall time what a
 * caller waits), per-decision latency (p50, p99, timing each workload's
 * decision inside a queue of one), allocations per decision, and a digest
 * of the decisions (equal digests: equal decisions, so two builds of the
 * engine can be compared). The figures are printed; this is not a test.
 *
 *   bench_placement [--whole-only] [--runs N] [--policy NAME] [--shares] [--mig]
 *
 * --shares makes two of the four owned pools time-sliced (counts in
 * milli-GPUs), gives every fourth single-GPU workload a share of a GPU
 * (0.1 to 0.9) and tightens the quotas until they bind (400 GPUs nominal
 * per team and flavour, 200 borrowed: a third of the queue is rejected).
 * --mig makes the two other owned pools offer MIG slices (1g.10gb, 7 per
 * GPU, and 3g.40gb, 2 per GPU, half of them busy with running Jobs), and
 * every fifth cloud pool one of those profiles on the GPUs it rents, and
 * gives every fourth workload not given a share 1 to 4 slices of one of
 * the two profiles or of a third that no pool offers (1 in 5 of them).
 * --whole-only skips the per-decision loop and the explained runs, --runs
 * sets the number of whole-queue runs (default 101; the first is cold),
 * --policy runs one policy: together they make a small, repeatable profile
 * (callgrind).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "placement/engine.h"

#define N_POOLS     100
#define N_WORKLOADS 10000
#define N_RUNS_MAX  1000

static const char *const products[] = {"A100", "H100", "L4", "V100"};
static const char *const regions[] = {"onprem", "us-east-1", "us-west-2", "eu-west-1",
                                      "ap-south-1"};

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static double cpu_s(void)
{
    return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* FNV-1a over what the decisions say (money in cents, times in ms). */
static uint64_t digest_add(uint64_t h, int64_t v)
{
    for (int i = 0; i < 8; i++)
        h = (h ^ (uint64_t)((v >> (8 * i)) & 0xff)) * 1099511628211ull;
    return h;
}

static uint64_t digest(const struct sw_decision *d, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        const struct sw_option *o = &d[i].chosen;
        h = digest_add(h, d[i].verdict * 1000 + d[i].why * 10 + d[i].runtime_learned);
        h = digest_add(h, d[i].pool * 100 + (int64_t)d[i].main_exclusion);
        h = digest_add(h, (int64_t)d[i].rank);
        if (d[i].verdict == SW_VERDICT_REJECT)
            continue;
        h = digest_add(h, sw_cents(o->cost.total));
        h = digest_add(h, llround(o->start * 1000) * 3 + llround(o->completion * 1000));
        h = digest_add(h, llround(o->score * 100));
    }
    return h;
}

static uint64_t rng_state = 42;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double q)
{
    qsort(v, n, sizeof(double), cmp_double);
    size_t k = (size_t)(q * (double)n + 0.999999);
    return v[k == 0 ? 0 : k - 1];
}

static struct sw_pool pools[N_POOLS];
static struct sw_link links[64];
static struct sw_quota quotas[20 * 8];
static struct sw_budget budgets[20];
static struct sw_running running[4][64];
static struct sw_local_queue queues[4];
static struct sw_workload work[N_WORKLOADS];
static struct sw_decision dec[N_WORKLOADS];

static void build(struct sw_snapshot *s)
{
    size_t nl = 0;
    for (int i = 0; i < N_POOLS; i++) {
        struct sw_pool *p = &pools[i];
        bool owned = i < 4;
        snprintf(p->name, sizeof(p->name), "pool-%03d", i);
        snprintf(p->cluster, sizeof(p->cluster), owned ? "onprem" : "cloud-%d", i % 12);
        snprintf(p->region, sizeof(p->region), "%s", owned ? "onprem" : regions[1 + i % 4]);
        snprintf(p->flavour, sizeof(p->flavour), "flavour-%d", i % 8);
        snprintf(p->product, sizeof(p->product), "%s", products[i % 4]);
        p->capacity = owned ? SW_CAP_OWNED : (i % 2 ? SW_CAP_SPOT : SW_CAP_ON_DEMAND);
        p->gpu_mem_gb = (i % 4 == 1) ? 80 : (i % 3 ? 40 : 24);
        p->interconnect = i % 3 ? SW_IC_NVLINK : SW_IC_NVLINK | SW_IC_INFINIBAND;
        p->total_gpus = owned ? 256 : (int)(rnd() % 64);
        p->free_gpus = owned ? 0 : p->total_gpus / 2;
        p->max_gpus = owned ? 256 : p->total_gpus + 256;
        p->provision_s = owned ? 0 : 120 + rnd() % 300;
        p->price_gpu_h =
            owned ? 1.0 : (p->capacity == SW_CAP_SPOT ? 1.2 : 3.0) + (rnd() % 200) / 100.0;
        p->interrupt_per_h = p->capacity == SW_CAP_SPOT ? 0.05 + (rnd() % 20) / 100.0 : 0;
    }
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            if (a == b)
                continue;
            snprintf(links[nl].from, SW_NAME_MAX, "%s", regions[a]);
            snprintf(links[nl].to, SW_NAME_MAX, "%s", regions[b]);
            links[nl].price_per_gb = 0.01 + (rnd() % 10) / 100.0;
            links[nl].bandwidth_gbps = 1 + rnd() % 25;
            nl++;
        }
    size_t nq = 0;
    for (int t = 0; t < 20; t++) {
        snprintf(budgets[t].team, SW_NAME_MAX, "team-%02d", t);
        budgets[t].cap = 1e9;
        for (int f = 0; f < 8; f++) {
            struct sw_quota *q = &quotas[nq++];
            snprintf(q->team, SW_NAME_MAX, "team-%02d", t);
            snprintf(q->flavour, SW_NAME_MAX, "flavour-%d", f);
            snprintf(q->cohort, SW_NAME_MAX, "cohort-%d", t % 4);
            q->nominal = 2000;
            q->borrowing_limit = 1000;
        }
    }
    for (int q = 0; q < 4; q++) {
        for (int k = 0; k < 64; k++)
            running[q][k] = (struct sw_running){.gpus = 4, .remaining_s = 600.0 + rnd() % 36000};
        snprintf(queues[q].pool, SW_NAME_MAX, "pool-%03d", q);
        queues[q].running = running[q];
        queues[q].n_running = 64;
    }
    for (int i = 0; i < N_WORKLOADS; i++) {
        struct sw_workload *w = &work[i];
        memset(w, 0, sizeof(*w));
        snprintf(w->name, sizeof(w->name), "job-%05d", i);
        snprintf(w->team, sizeof(w->team), "team-%02d", (int)(rnd() % 20));
        snprintf(w->origin, sizeof(w->origin), "onprem");
        w->prio = (enum sw_priority_class)(rnd() % 4);
        w->pods = 1 + (int)(rnd() % 2);
        w->gpus_per_pod = 1 << (rnd() % 4);
        w->runtime_s = 300 + rnd() % 36000;
        w->checkpoint_s = 1800;
        w->restart_s = 300;
        w->submit_time = rnd() % 100000;
        w->burst = rnd() % 10 ? SW_BURST_AUTO : SW_BURST_NEVER;
        if (rnd() % 3 == 0) {
            w->n_products = 2;
            snprintf(w->products[0], SW_PRODUCT_MAX, "%s", products[rnd() % 4]);
            snprintf(w->products[1], SW_PRODUCT_MAX, "%s", products[rnd() % 4]);
        }
        if (rnd() % 4 == 0)
            w->min_gpu_mem_gb = 40;
        if (rnd() % 10 == 0)
            w->interconnect = SW_IC_INFINIBAND;
        if (rnd() % 5 == 0)
            w->deadline = 200000 + rnd() % 100000;
        w->n_inputs = 1;
        w->inputs[0].size_gb = rnd() % 500;
        w->inputs[0].n_regions = 1;
        snprintf(w->inputs[0].regions[0], SW_NAME_MAX, "%s", regions[rnd() % 5]);
    }
    memset(s, 0, sizeof(*s));
    s->now = 100000;
    s->pools = pools;
    s->n_pools = N_POOLS;
    s->links = links;
    s->n_links = nl;
    s->quotas = quotas;
    s->n_quotas = nq;
    s->budgets = budgets;
    s->n_budgets = 20;
    s->queues = queues;
    s->n_queues = 4;
    s->pending = work;
    s->n_pending = N_WORKLOADS;
}

/* --shares: time-sliced pools, shares of a GPU and binding quotas. */
static void add_shares(void)
{
    for (int q = 0; q < 2; q++) {
        pools[q].time_sliced = true;
        pools[q].total_gpus *= 1000;
        pools[q].max_gpus *= 1000;
        pools[q].free_gpus *= 1000;
        for (int k = 0; k < 64; k++)
            running[q][k].gpus *= 1000;
    }
    for (int i = 0; i < N_WORKLOADS; i += 4)
        if (work[i].pods == 1 && work[i].gpus_per_pod == 1)
            work[i].gpu_milli = 100 + 100 * (i / 4 % 9);
    for (size_t q = 0; q < sizeof(quotas) / sizeof(quotas[0]); q++) {
        quotas[q].nominal = 400;
        quotas[q].borrowing_limit = 200;
    }
}

/* --mig: MIG offers and workloads asking for slices. */
static struct sw_running mig_running[2][2][32];
static void add_mig(void)
{
    static const char *const prof[] = {"1g.10gb", "3g.40gb", "2g.20gb"};
    static const int per_gpu[] = {7, 2};
    for (int q = 2; q < 4; q++) {
        struct sw_pool *p = &pools[q];
        p->n_mig = 2;
        for (int k = 0; k < 2; k++) {
            struct sw_mig_offer *m = &p->mig[k];
            snprintf(m->profile, sizeof(m->profile), "%s", prof[k]);
            m->per_gpu = per_gpu[k];
            m->total = 16 * per_gpu[k];
            m->free = m->total / 2;
            for (int r = 0; r < 32; r++)
                mig_running[q - 2][k][r] =
                    (struct sw_running){.gpus = 1, .remaining_s = 600.0 + rnd() % 36000};
            m->running = mig_running[q - 2][k];
            m->n_running = (size_t)(m->total - m->free);
        }
    }
    for (int i = 4; i < N_POOLS; i += 5) {
        struct sw_pool *p = &pools[i];
        int k = i / 5 % 2;
        p->n_mig = 1;
        snprintf(p->mig[0].profile, sizeof(p->mig[0].profile), "%s", prof[k]);
        p->mig[0].per_gpu = per_gpu[k];
    }
    for (int i = 2; i < N_WORKLOADS; i += 4) {
        struct sw_workload *w = &work[i];
        if (w->gpu_milli > 0)
            continue;
        int k = i / 4 % 5 == 4 ? 2 : i / 4 % 2;
        snprintf(w->mig_profile, sizeof(w->mig_profile), "%s", prof[k]);
        w->pods = 1;
        w->gpus_per_pod = 1 + i / 4 % 4;
    }
}

static int whole_only;
/* 101 runs: 100 warm ones, so that p99 is the second worst run (with 40,
 * p99 is the worst: one descheduling on a shared machine). The worst is
 * printed too. */
static int n_runs = 101;

static void run(const struct sw_snapshot *s, enum sw_policy_kind kind)
{
    struct sw_engine *e;
    struct sw_policy pol;
    struct sw_error err = {0};
    sw_policy_default(kind, &pol);
    if (sw_engine_new(&e) != 0)
        exit(1);
    static double whole[N_RUNS_MAX], whole_cpu[N_RUNS_MAX];
    uint64_t a0 = 0, a1 = 0;
    size_t counts[3] = {0};
    for (int r = 0; r < n_runs; r++) {
        if (r == 1)
            a0 = sw_alloc_count();
        double t0 = now_s(), c0 = cpu_s();
        if (sw_engine_decide(e, s, &pol, 0, dec, &err) != 0) {
            fprintf(stderr, "bench: %s\n", err.msg);
            exit(1);
        }
        whole_cpu[r] = cpu_s() - c0;
        whole[r] = now_s() - t0;
    }
    a1 = sw_alloc_count();
    for (int i = 0; i < N_WORKLOADS; i++)
        counts[dec[i].verdict]++;
    uint64_t h = digest(dec, N_WORKLOADS);
    /* Cold: the first call grows the workspace. */
    double cold = whole[0];
    int warm = n_runs > 1 ? n_runs - 1 : 1;
    double *w = n_runs > 1 ? whole + 1 : whole, *wc = n_runs > 1 ? whole_cpu + 1 : whole_cpu;
    double allocs = n_runs > 1 ? (double)(a1 - a0) / ((double)warm * N_WORKLOADS) : 0;
    printf("%-11s whole queue p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (cpu p50 %6.2f ms  p99 "
           "%6.2f ms; cold %6.2f ms) | allocations per decision %.4f | stay %zu burst %zu reject "
           "%zu | digest %016llx\n",
           sw_policy_name(kind), pct(w, (size_t)warm, 0.50) * 1e3, pct(w, (size_t)warm, 0.99) * 1e3,
           pct(w, (size_t)warm, 1.0) * 1e3, pct(wc, (size_t)warm, 0.50) * 1e3,
           pct(wc, (size_t)warm, 0.99) * 1e3, cold * 1e3, allocs, counts[0], counts[1], counts[2],
           (unsigned long long)h);
    size_t mig[3] = {0};
    for (int i = 0; i < N_WORKLOADS; i++)
        if (work[i].mig_profile[0] != '\0')
            mig[dec[i].verdict]++;
    if (mig[0] + mig[1] + mig[2] > 0)
        printf("%-11s of which MIG slices: stay %zu burst %zu reject %zu\n", sw_policy_name(kind),
               mig[0], mig[1], mig[2]);
    if (whole_only) {
        sw_engine_free(e);
        return;
    }
    /* Per decision: each workload decided alone against the same snapshot. */
    static double one[N_WORKLOADS];
    struct sw_snapshot single = *s;
    single.n_pending = 1;
    for (int i = 0; i < N_WORKLOADS; i++) {
        single.pending = &work[i];
        double t0 = now_s();
        sw_engine_decide(e, &single, &pol, 0, dec, &err);
        one[i] = now_s() - t0;
    }
    printf("%-11s per decision (a queue of one) p50 %6.2f us  p99 %6.2f us\n", sw_policy_name(kind),
           pct(one, N_WORKLOADS, 0.50) * 1e6, pct(one, N_WORKLOADS, 0.99) * 1e6);
    /* With explanations: every option of every workload is kept. */
    double t0 = now_s();
    uint64_t b0 = sw_alloc_count();
    sw_engine_decide(e, s, &pol, SW_DECIDE_EXPLAIN, dec, &err);
    double t1 = now_s();
    sw_engine_decide(e, s, &pol, SW_DECIDE_EXPLAIN, dec, &err);
    double t2 = now_s();
    printf("%-11s with explanations: first %7.2f ms, warm %7.2f ms, allocations per decision "
           "%.4f (cold) | digest %016llx\n",
           sw_policy_name(kind), (t1 - t0) * 1e3, (t2 - t1) * 1e3,
           (double)(sw_alloc_count() - b0) / N_WORKLOADS,
           (unsigned long long)digest(dec, N_WORKLOADS));
    sw_engine_free(e);
}

int main(int argc, char **argv)
{
    int only = -1, shares = 0, mig = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--whole-only") == 0) {
            whole_only = 1;
        } else if (strcmp(argv[i], "--shares") == 0) {
            shares = 1;
        } else if (strcmp(argv[i], "--mig") == 0) {
            mig = 1;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            n_runs = atoi(argv[++i]);
            if (n_runs < 1 || n_runs > N_RUNS_MAX) {
                fprintf(stderr, "bench_placement: --runs: expected 1 to %d\n", N_RUNS_MAX);
                return 2;
            }
        } else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
            struct sw_policy p;
            struct sw_error err = {0};
            if (sw_policy_parse(argv[++i], &p, &err) != 0) {
                fprintf(stderr, "bench_placement: %s\n", err.msg);
                return 2;
            }
            only = (int)p.kind;
        } else {
            fprintf(stderr, "usage: bench_placement [--whole-only] [--runs N] [--policy NAME] "
                            "[--shares] [--mig]\n");
            return 2;
        }
    }
    struct sw_snapshot s;
    build(&s);
    if (shares)
        add_shares();
    if (mig)
        add_mig();
    printf("placement engine: %d pending workloads x %d pools, %d runs each (first is cold)%s%s\n",
           N_WORKLOADS, N_POOLS, n_runs,
           shares ? "; time-sliced pools, shares, binding quotas" : "", mig ? "; MIG slices" : "");
    static const enum sw_policy_kind kinds[] = {SW_POLICY_COST_AWARE, SW_POLICY_GREEDY,
                                                SW_POLICY_BURST_NOW};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (only < 0 || only == (int)kinds[k])
            run(&s, kinds[k]);
    if (only >= 0 && only != SW_POLICY_COST_AWARE && only != SW_POLICY_GREEDY &&
        only != SW_POLICY_BURST_NOW)
        run(&s, (enum sw_policy_kind)only);
    return 0;
}
