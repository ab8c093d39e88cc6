/*
 * random_snapshot.h - a seeded random snapshot for the placement tests that
 * compare decisions made two ways (with and without explanations, before
 * and after an optimisation).
 *
 * It is built to reach every branch of the engine: two owned clusters (one
 * with a local queue holding running Jobs and Jobs ahead, one without),
 * spot and on-demand pools in four regions (one region has no link in, so
 * inputs cannot reach it), products including one no pool has, memory and
 * interconnect constraints, burst never and cloud-first, production Jobs,
 * price caps, tight quotas with cohorts and borrowing limits, tight
 * budgets, deadlines, and runtimes to learn (with and without history).
 */
#ifndef SW_TEST_PLACEMENT_RANDOM_SNAPSHOT_H
#define SW_TEST_PLACEMENT_RANDOM_SNAPSHOT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "placement/engine.h"

#define RS_POOLS     40
#define RS_WORKLOADS 400

struct rsnap {
    struct sw_pool pools[RS_POOLS];
    struct sw_link links[16];
    struct sw_quota quotas[6 * 8];
    struct sw_budget budgets[6];
    struct sw_running running[2][24];
    struct sw_queued ahead[2][6];
    struct sw_local_queue queues[2];
    struct sw_finished_run history[8];
    struct sw_workload work[RS_WORKLOADS];
    struct sw_snapshot snap;
    uint64_t rng;
};

static inline uint32_t rs_rand(struct rsnap *r)
{
    r->rng = r->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->rng >> 33);
}

static inline void rsnap_init(struct rsnap *r, uint64_t seed)
{
    static const char *const products[] = {"A100", "H100", "L4", "V100", "TPU"};
    static const char *const regions[] = {"onprem", "us-east-1", "us-west-2", "eu-west-1",
                                          "ap-south-1"};
    memset(r, 0, sizeof(*r));
    r->rng = seed * 2654435761u + 1;
    for (int i = 0; i < RS_POOLS; i++) {
        struct sw_pool *p = &r->pools[i];
        /* Pools 0-2: cluster "onprem" (0 and 1 queued, 2 not); 3: "lab". */
        bool owned = i < 4;
        snprintf(p->name, sizeof(p->name), "pool-%02d", i);
        if (owned)
            snprintf(p->cluster, sizeof(p->cluster), "%s", i < 3 ? "onprem" : "lab");
        else
            snprintf(p->cluster, sizeof(p->cluster), "cloud-%d", i % 5);
        snprintf(p->region, sizeof(p->region), "%s", owned ? "onprem" : regions[1 + i % 4]);
        if (i % 3)
            snprintf(p->flavour, sizeof(p->flavour), "flavour-%d", i % 8);
        snprintf(p->product, sizeof(p->product), "%s", products[i % 4]);
        p->capacity = owned ? SW_CAP_OWNED : (i % 2 ? SW_CAP_SPOT : SW_CAP_ON_DEMAND);
        p->gpu_mem_gb = (i % 4 == 1) ? 80 : (i % 3 ? 40 : 24);
        p->interconnect = i % 3 ? SW_IC_NVLINK : SW_IC_NVLINK | SW_IC_INFINIBAND;
        p->total_gpus = owned ? 32 : (int)(rs_rand(r) % 16);
        p->free_gpus = owned ? (i >= 2 ? 8 : 0) : p->total_gpus / 2;
        p->max_gpus = owned ? 32 : p->total_gpus + (int)(rs_rand(r) % 48);
        p->provision_s = owned ? 0 : 120 + rs_rand(r) % 300;
        p->price_gpu_h =
            owned ? 1.0 : (p->capacity == SW_CAP_SPOT ? 1.2 : 3.0) + (rs_rand(r) % 200) / 100.0;
        p->interrupt_per_h = p->capacity == SW_CAP_SPOT ? 0.05 + (rs_rand(r) % 20) / 100.0 : 0;
    }
    /* Links among the first four regions only: ap-south-1 cannot be reached. */
    size_t nl = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            if (a == b)
                continue;
            struct sw_link *l = &r->links[nl++];
            snprintf(l->from, sizeof(l->from), "%s", regions[a]);
            snprintf(l->to, sizeof(l->to), "%s", regions[b]);
            l->price_per_gb = 0.01 + (rs_rand(r) % 10) / 100.0;
            l->bandwidth_gbps = 1 + rs_rand(r) % 25;
        }
    /* Teams 0-3 have quotas (not on every flavour) and budgets; 4-5 neither. */
    size_t nq = 0;
    for (int t = 0; t < 4; t++) {
        snprintf(r->budgets[t].team, SW_NAME_MAX, "team-%d", t);
        r->budgets[t].cap = 400 + 400.0 * t;
        r->budgets[t].spent = 50;
        for (int f = 0; f < 8; f++) {
            if ((t + f) % 5 == 0)
                continue;
            struct sw_quota *q = &r->quotas[nq++];
            snprintf(q->team, SW_NAME_MAX, "team-%d", t);
            snprintf(q->flavour, SW_NAME_MAX, "flavour-%d", f);
            if (t != 3)
                snprintf(q->cohort, SW_NAME_MAX, "cohort-%d", t % 2);
            q->nominal = 8 + (int)(rs_rand(r) % 24);
            q->borrowing_limit = t == 0 ? -1 : (int)(rs_rand(r) % 16);
            q->used = (int)(rs_rand(r) % 8);
        }
    }
    for (int q = 0; q < 2; q++) {
        for (int k = 0; k < 24; k++)
            r->running[q][k] = (struct sw_running){.gpus = 1 + (int)(rs_rand(r) % 2),
                                                   .remaining_s = 60.0 + rs_rand(r) % 20000};
        for (int k = 0; k < 6; k++)
            r->ahead[q][k] =
                (struct sw_queued){1 + (int)(rs_rand(r) % 8), 600.0 + rs_rand(r) % 7200};
        r->ahead[q][5].gpus = 64; /* can never start */
        snprintf(r->queues[q].pool, SW_NAME_MAX, "pool-%02d", q);
        r->queues[q].running = r->running[q];
        r->queues[q].n_running = 24;
        r->queues[q].ahead = r->ahead[q];
        r->queues[q].n_ahead = 6;
    }
    for (int h = 0; h < 8; h++) {
        snprintf(r->history[h].team, SW_NAME_MAX, "team-%d", h % 3);
        snprintf(r->history[h].label, SW_NAME_MAX, "%s", h % 2 ? "bert" : "");
        r->history[h].runtime_s = 600.0 * (h + 1);
    }
    for (int i = 0; i < RS_WORKLOADS; i++) {
        struct sw_workload *w = &r->work[i];
        snprintf(w->name, sizeof(w->name), "job-%04d", (int)(rs_rand(r) % 1000));
        snprintf(w->team, sizeof(w->team), "team-%d", (int)(rs_rand(r) % 6));
        snprintf(w->origin, sizeof(w->origin), "%s", rs_rand(r) % 5 ? "onprem" : "lab");
        w->prio = (enum sw_priority_class)(rs_rand(r) % 4);
        w->pods = 1 + (int)(rs_rand(r) % 3);
        w->gpus_per_pod = 1 + (int)(rs_rand(r) % 8);
        uint32_t rt = rs_rand(r) % 40;
        w->runtime_s = rt == 0 ? 0 : 300 + rs_rand(r) % 36000;
        if (rt == 1)
            snprintf(w->label, sizeof(w->label), "bert");
        w->checkpoint_s = rs_rand(r) % 4 ? 1800 : 0;
        w->restart_s = 300;
        w->submit_time = rs_rand(r) % 20000;
        uint32_t b = rs_rand(r) % 10;
        w->burst = b == 0 ? SW_BURST_NEVER : b == 1 ? SW_BURST_CLOUD_FIRST : SW_BURST_AUTO;
        if (rs_rand(r) % 3 == 0) {
            w->n_products = 1 + (int)(rs_rand(r) % 2);
            for (int k = 0; k < w->n_products; k++)
                snprintf(w->products[k], SW_PRODUCT_MAX, "%s", products[rs_rand(r) % 5]);
        }
        if (rs_rand(r) % 4 == 0)
            w->min_gpu_mem_gb = rs_rand(r) % 2 ? 40 : 80;
        if (rs_rand(r) % 8 == 0)
            w->interconnect = rs_rand(r) % 2 ? SW_IC_INFINIBAND : SW_IC_NVLINK;
        if (rs_rand(r) % 3 == 0)
            w->deadline = 20000 + rs_rand(r) % 60000;
        if (rs_rand(r) % 10 == 0)
            w->max_price = 1.0 + (rs_rand(r) % 300) / 100.0;
        w->n_inputs = (int)(rs_rand(r) % 3);
        for (int k = 0; k < w->n_inputs; k++) {
            w->inputs[k].size_gb = rs_rand(r) % 500;
            w->inputs[k].n_regions = 1 + (int)(rs_rand(r) % 2);
            for (int h = 0; h < w->inputs[k].n_regions; h++)
                snprintf(w->inputs[k].regions[h], SW_NAME_MAX, "%s", regions[rs_rand(r) % 5]);
        }
    }
    struct sw_snapshot *s = &r->snap;
    s->now = 15000;
    s->pools = r->pools;
    s->n_pools = RS_POOLS;
    s->links = r->links;
    s->n_links = nl;
    s->quotas = r->quotas;
    s->n_quotas = nq;
    s->budgets = r->budgets;
    s->n_budgets = 4;
    s->queues = r->queues;
    s->n_queues = 2;
    s->history = r->history;
    s->n_history = 8;
    s->pending = r->work;
    s->n_pending = RS_WORKLOADS;
}

#endif
