/*
 * fuzz_clusters.c - libFuzzer target for the simulator's clusters file
 * (sw_clusters_parse), and for the engine on whatever pools it accepts.
 *
 * A clusters file that parses is a snapshot the engine must take: a few
 * Jobs shaped by the file's job defaults are decided by every policy, with
 * and without explanations (the two must agree), the chosen options must
 * be sane, and every explanation must render.
 */
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "fuzz.h"
#include "placement/clusters.h"
#include "placement/engine.h"
#include "placement/explain.h"

#define N_JOBS 5

static void check_parsed(const struct sw_clusters *c)
{
    FUZZ_CHECK(c->n_pools > 0);
    bool origin_known = false;
    for (size_t i = 0; i < c->n_pools; i++) {
        const struct sw_pool *p = &c->pools[i];
        FUZZ_CHECK(p->name[0] != '\0' && p->cluster[0] != '\0');
        FUZZ_CHECK(p->free_gpus >= 0 && p->free_gpus <= p->total_gpus);
        FUZZ_CHECK(p->total_gpus <= p->max_gpus);
        FUZZ_CHECK(isfinite(p->price_gpu_h) && p->price_gpu_h >= 0);
        origin_known |= strcmp(p->cluster, c->origin) == 0;
    }
    FUZZ_CHECK(origin_known);
}

static void jobs(const struct sw_clusters *c, struct sw_workload *w)
{
    static const int gpus[N_JOBS] = {1, 8, 4, 2, 64};
    static const enum sw_priority_class prio[N_JOBS] = {SW_PRIO_TRAINING, SW_PRIO_PRODUCTION,
                                                        SW_PRIO_BEST_EFFORT, SW_PRIO_DEVELOPMENT,
                                                        SW_PRIO_TRAINING};
    const struct sw_job_defaults *d = &c->defaults;
    for (int i = 0; i < N_JOBS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        snprintf(w[i].name, sizeof(w[i].name), "job-%d", i);
        snprintf(w[i].team, sizeof(w[i].team), "%s",
                 c->n_quotas > 0 && i % 2 ? c->quotas[0].team : "team");
        memcpy(w[i].origin, c->origin, sizeof(w[i].origin));
        w[i].prio = prio[i];
        w[i].pods = 1;
        w[i].gpus_per_pod = gpus[i];
        w[i].runtime_s = 600.0 * (i + 1) * (i + 1);
        w[i].checkpoint_s = d->checkpoint_s;
        w[i].restart_s = d->restart_s;
        w[i].submit_time = 10.0 * i;
        w[i].burst = i == 3 ? SW_BURST_NEVER : d->burst;
        if (i == 2) {
            /* As the simulator makes them, within the engine's bound. */
            w[i].deadline = 100 + d->deadline_allowance_s + d->deadline_slack * w[i].runtime_s;
            if (w[i].deadline > SW_MAX_SECONDS)
                w[i].deadline = SW_MAX_SECONDS;
        }
        if (d->input_gb > 0 && d->input_region[0] != '\0') {
            w[i].n_inputs = 1;
            w[i].inputs[0].size_gb = d->input_gb;
            w[i].inputs[0].n_regions = 1;
            memcpy(w[i].inputs[0].regions[0], d->input_region, SW_NAME_MAX);
        }
    }
}

static void check_decision(const struct sw_snapshot *s, const struct sw_decision *d)
{
    FUZZ_CHECK((unsigned)d->verdict <= SW_VERDICT_REJECT);
    FUZZ_CHECK((unsigned)d->why < SW_WHY__COUNT);
    if (d->verdict == SW_VERDICT_REJECT) {
        FUZZ_CHECK(d->pool == -1);
        return;
    }
    FUZZ_CHECK(d->pool >= 0 && (size_t)d->pool < s->n_pools && d->chosen.pool == d->pool);
    FUZZ_CHECK(d->chosen.excluded == SW_EX_NONE);
    /* The SW_MAX_* bounds keep every figure finite. */
    FUZZ_CHECK(isfinite(d->chosen.cost.total) && d->chosen.cost.total >= 0);
    FUZZ_CHECK(isfinite(d->chosen.score) && isfinite(d->chosen.completion));
    FUZZ_CHECK(d->chosen.start >= s->now && d->chosen.completion >= d->chosen.start);
}

static void decide_all(const struct sw_snapshot *s)
{
    struct sw_engine *e;
    if (sw_engine_new(&e) != 0)
        return;
    struct sw_decision plain[N_JOBS], explained[N_JOBS];
    for (int k = 0; k < SW_POLICY__COUNT; k++) {
        struct sw_policy pol;
        struct sw_error err = {0};
        sw_policy_default((enum sw_policy_kind)k, &pol);
        int rc = sw_engine_decide(e, s, &pol, 0, plain, &err);
        if (rc != 0) {
            /* The parser validated the file: only the engine's own limits. */
            FUZZ_CHECK(rc == SW_EUNSUPPORTED || rc == SW_ENOMEM);
            break;
        }
        FUZZ_CHECK(sw_engine_decide(e, s, &pol, SW_DECIDE_EXPLAIN, explained, &err) == 0);
        for (size_t i = 0; i < s->n_pending; i++) {
            check_decision(s, &plain[i]);
            FUZZ_CHECK(plain[i].verdict == explained[i].verdict);
            FUZZ_CHECK(plain[i].why == explained[i].why && plain[i].pool == explained[i].pool);
            FUZZ_CHECK(plain[i].rank == explained[i].rank);
            FUZZ_CHECK(plain[i].main_exclusion == explained[i].main_exclusion);
            FUZZ_CHECK(memcmp(&plain[i].chosen.cost, &explained[i].chosen.cost,
                              sizeof(plain[i].chosen.cost)) == 0);
            struct sw_buf b;
            sw_buf_init(&b, 1 << 20);
            int trc = sw_explain_text(s, &pol, &explained[i], &b);
            FUZZ_CHECK(trc == 0 || trc == SW_ENOMEM);
            sw_buf_free(&b);
            char *json = NULL;
            int jrc = sw_explain_json_string(s, &pol, &explained[i], &json);
            FUZZ_CHECK(jrc == 0 || jrc == SW_ENOMEM);
            sw_free(json);
        }
    }
    sw_engine_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_clusters c = {0};
    struct sw_error err = {0};
    int rc = sw_clusters_parse((const char *)data, size, "clusters.json", &c, &err);
    if (rc != 0) {
        FUZZ_CHECK(rc == SW_EPARSE || rc == SW_ENOMEM || rc == SW_ENOENT || rc == SW_EINVAL ||
                   rc == SW_ERANGE);
        FUZZ_CHECK(strstr(err.msg, "clusters.json") != NULL);
        sw_clusters_free(&c);
        return 0;
    }
    check_parsed(&c);
    struct sw_workload w[N_JOBS];
    jobs(&c, w);
    /* The origin's first owned pool queues, with one Job running on it. */
    struct sw_running running = {.gpus = 1, .remaining_s = 1800};
    struct sw_local_queue queue = {.running = &running, .n_running = 1};
    size_t n_queues = 0;
    for (size_t i = 0; i < c.n_pools && n_queues == 0; i++)
        if (c.pools[i].capacity == SW_CAP_OWNED && strcmp(c.pools[i].cluster, c.origin) == 0) {
            memcpy(queue.pool, c.pools[i].name, sizeof(queue.pool));
            n_queues = 1;
        }
    struct sw_snapshot s = {.now = 0,
                            .queues = &queue,
                            .n_queues = n_queues,
                            .pools = c.pools,
                            .n_pools = c.n_pools,
                            .links = c.links,
                            .n_links = c.n_links,
                            .quotas = c.quotas,
                            .n_quotas = c.n_quotas,
                            .budgets = c.budgets,
                            .n_budgets = c.n_budgets,
                            .pending = w,
                            .n_pending = N_JOBS};
    decide_all(&s);
    sw_clusters_free(&c);
    return 0;
}
