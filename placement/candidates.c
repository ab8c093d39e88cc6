/*
 * candidates.c - the pools worth pricing for a workload, from bit sets of pools by
 * product, memory, interconnect, price, cluster, team and capacity level.
 */
#include "placement/engine_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The pools whose attributes satisfy `pred` for value `key`, from a small
 * cache of sets: most queues ask a handful of distinct values. */
static const uint64_t *cached_set(struct sw_engine *e, struct set_cache *cache, uint64_t *sets,
                                  double key, bool (*pred)(const struct pool_rt *, double))
{
    size_t W = e->words;
    for (unsigned k = 0; k < SET_CACHE; k++)
        if (cache->used[k] && cache->key[k] == key)
            return sets + k * W;
    unsigned k = cache->next++ % SET_CACHE;
    uint64_t *set = sets + k * W;
    memset(set, 0, W * sizeof(*set));
    for (size_t i = 0; i < e->np; i++)
        if (pred(&e->pools[i], key))
            set_bit(set, e->pool_rank[i]);
    cache->key[k] = key;
    cache->used[k] = true;
    return set;
}

static bool has_memory(const struct pool_rt *p, double min)
{
    return !(p->mem < min);
}

static bool has_interconnect(const struct pool_rt *p, double flags)
{
    unsigned f = (unsigned)flags;
    return (p->ic & f) == f;
}

static bool within_price(const struct pool_rt *p, double max)
{
    return !(p->price > max);
}

/* The pools worth evaluating for a workload: exactly those that pass
 * fixed_exclusion and have a quota flavour for its team, narrowed by the
 * capacity level of its size (a superset of those with room), or for MIG
 * slices to the pools offering its profile. Returns the set (e->words
 * words). */
const uint64_t *sw__workload_candidates(struct sw_engine *e, const struct wctx *c)
{
    const struct sw_workload *w = c->w;
    size_t W = e->words;
    uint64_t *cand = e->set_cand;
    if (c->product_unknown || c->mig_unknown || (w->burst == SW_BURST_NEVER && c->origin < 0)) {
        memset(cand, 0, W * sizeof(*cand));
        return cand;
    }
    int level = 0;
    while (level + 1 < CAP_LEVELS && ((int64_t)1 << (level + 1)) <= c->gpus)
        level++;
    /* MIG slices are apart from the whole GPUs the capacity levels count:
     * the candidates are the pools offering the profile. */
    memcpy(cand, c->mig >= 0 ? e->set_mig + (size_t)c->mig * W : e->set_cap + (size_t)level * W,
           W * sizeof(*cand));
    if (c->product_mask) {
        uint64_t *any = e->set_cand + W;
        memset(any, 0, W * sizeof(*any));
        for (uint64_t m = c->product_mask; m; m &= m - 1) {
            const uint64_t *ps = e->set_prod + (size_t)__builtin_ctzll(m) * W;
            for (size_t k = 0; k < W; k++)
                any[k] |= ps[k];
        }
        for (size_t k = 0; k < W; k++)
            cand[k] &= any[k];
    }
    const uint64_t *narrow[6];
    int nn = 0;
    if (w->min_gpu_mem_gb > 0)
        narrow[nn++] = cached_set(e, &e->mem_cache, e->set_mem, w->min_gpu_mem_gb, has_memory);
    if (w->interconnect != 0)
        narrow[nn++] =
            cached_set(e, &e->ic_cache, e->set_ic, (double)w->interconnect, has_interconnect);
    if (w->max_price > 0)
        narrow[nn++] = cached_set(e, &e->price_cache, e->set_price, w->max_price, within_price);
    if (w->burst == SW_BURST_NEVER)
        narrow[nn++] = e->set_cluster + (size_t)c->origin * W;
    if (c->team >= 0 && e->team_has_quota[c->team])
        narrow[nn++] = e->set_team + (size_t)c->team * W;
    for (int j = 0; j < nn; j++)
        for (size_t k = 0; k < W; k++)
            cand[k] &= narrow[j][k];
    if (w->prio == SW_PRIO_PRODUCTION || w->no_spot)
        for (size_t k = 0; k < W; k++)
            cand[k] &= ~e->set_spot[k];
    /* A queue_only pool is an option only for the workloads naming it; a
     * workload naming some has no other pool in their clusters. */
    uint64_t named[SW_MAX_QUEUE_POOLS];
    for (int q = 0; q < c->nqp; q++) {
        size_t bit = e->pool_rank[c->qp[q]];
        named[q] = cand[bit / 64] & ((uint64_t)1 << (bit % 64));
    }
    for (int q = 0; q < c->nqp; q++) {
        const uint64_t *cl = e->set_cluster + (size_t)e->pools[c->qp[q]].cluster * W;
        for (size_t k = 0; k < W; k++)
            cand[k] &= ~cl[k];
    }
    for (size_t k = 0; k < W; k++)
        cand[k] &= ~e->set_queue_only[k];
    for (int q = 0; q < c->nqp; q++)
        cand[e->pool_rank[c->qp[q]] / 64] |= named[q];
    return cand;
}
