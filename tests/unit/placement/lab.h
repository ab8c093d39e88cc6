/*
 * lab.h - a small snapshot shaped like the lab for the placement tests:
 * onprem (2 nodes x 4 owned A100-40GB, NVLink), cloud-spot (8 x 8 A100-80GB
 * spot in us-east-1) and cloud-ondemand (4 x 8 A100-80GB on-demand in
 * us-west-2), with egress from onprem to both regions.
 */
#ifndef SW_TEST_PLACEMENT_LAB_H
#define SW_TEST_PLACEMENT_LAB_H

#include <string.h>

#include "placement/engine.h"

struct lab {
    struct sw_pool pools[4];
    struct sw_link links[4];
    struct sw_quota quotas[4];
    struct sw_budget budgets[2];
    struct sw_running running[4];
    struct sw_local_queue queues[1];
    struct sw_workload pending[8];
    struct sw_finished_run history[4];
    struct sw_snapshot snap;
};

static inline void lab_pool(struct sw_pool *p, const char *name, const char *cluster,
                            const char *region, enum sw_capacity cap, double mem, int total,
                            int free_gpus, int max, double prov, double price, double rate)
{
    memset(p, 0, sizeof(*p));
    strcpy(p->name, name);
    strcpy(p->cluster, cluster);
    strcpy(p->region, region);
    strcpy(p->product, "A100");
    p->capacity = cap;
    p->gpu_mem_gb = mem;
    p->interconnect = SW_IC_NVLINK;
    p->total_gpus = total;
    p->free_gpus = free_gpus;
    p->max_gpus = max;
    p->provision_s = prov;
    p->price_gpu_h = price;
    p->interrupt_per_h = rate;
}

static inline void lab_workload(struct sw_workload *w, const char *name, const char *team,
                                enum sw_priority_class prio, int pods, int gpus, double runtime_s)
{
    memset(w, 0, sizeof(*w));
    strcpy(w->name, name);
    strcpy(w->team, team);
    strcpy(w->origin, "onprem");
    w->prio = prio;
    w->pods = pods;
    w->gpus_per_pod = gpus;
    w->runtime_s = runtime_s;
    w->checkpoint_s = 1800;
    w->restart_s = 300;
    w->burst = SW_BURST_AUTO;
}

/* The lab with onprem full: 8 GPUs running for 4 more hours. */
static inline void lab_init(struct lab *l)
{
    memset(l, 0, sizeof(*l));
    lab_pool(&l->pools[0], "onprem", "onprem", "onprem", SW_CAP_OWNED, 40, 8, 0, 8, 0, 1.00, 0);
    lab_pool(&l->pools[1], "cloud-spot", "cloud", "us-east-1", SW_CAP_SPOT, 80, 0, 0, 64, 300,
             1.5625, 0.1);
    lab_pool(&l->pools[2], "cloud-ondemand", "cloud", "us-west-2", SW_CAP_ON_DEMAND, 80, 0, 0, 32,
             300, 4.10, 0);
    strcpy(l->links[0].from, "onprem");
    strcpy(l->links[0].to, "us-east-1");
    l->links[0].price_per_gb = 0.02;
    l->links[0].bandwidth_gbps = 10;
    strcpy(l->links[1].from, "onprem");
    strcpy(l->links[1].to, "us-west-2");
    l->links[1].price_per_gb = 0.02;
    l->links[1].bandwidth_gbps = 10;
    l->running[0] = (struct sw_running){.gpus = 8, .remaining_s = 4 * 3600.0};
    strcpy(l->queues[0].pool, "onprem");
    l->queues[0].running = l->running;
    l->queues[0].n_running = 1;
    l->snap.now = 1000;
    l->snap.pools = l->pools;
    l->snap.n_pools = 3;
    l->snap.links = l->links;
    l->snap.n_links = 2;
    l->snap.queues = l->queues;
    l->snap.n_queues = 1;
    l->snap.pending = l->pending;
    l->snap.quotas = l->quotas;
    l->snap.budgets = l->budgets;
    l->snap.history = l->history;
}

#endif
