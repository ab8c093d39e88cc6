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

/* Keeps in `r` the pools of `keep` (or, `drop`, those not in it); with
 * `count`, adds the pools it takes out to count[x]. */
ALWAYS_INLINE void narrow(uint64_t *r, const uint64_t *keep, bool drop, size_t W, int *count,
                          enum sw_exclusion x)
{
    for (size_t k = 0; k < W; k++) {
        uint64_t kept = drop ? r[k] & ~keep[k] : r[k] & keep[k];
        if (count != NULL)
            count[x] += __builtin_popcountll(r[k] & ~kept);
        r[k] = kept;
    }
}

/* The pools that pass fixed_exclusion (options.c) for `c`, into `r` (`tmp`
 * is scratch, W words each); with `count`, how many pools each of its
 * exclusions takes out, tested in its order. */
ALWAYS_INLINE void fixed_pass(struct sw_engine *e, const struct wctx *c, uint64_t *r, uint64_t *tmp,
                              int *count)
{
    const struct sw_workload *w = c->w;
    size_t W = e->words;
    memcpy(r, e->set_all, W * sizeof(*r));
    /* A queue_only pool is an option only for the workloads naming it; a
     * workload naming some has no other pool in their clusters. */
    memcpy(tmp, e->set_queue_only, W * sizeof(*tmp));
    for (int q = 0; q < c->nqp; q++) {
        const uint64_t *cl = e->set_cluster + (size_t)e->pools[c->qp[q]].cluster * W;
        for (size_t k = 0; k < W; k++)
            tmp[k] |= cl[k];
    }
    for (int q = 0; q < c->nqp; q++) {
        size_t bit = e->pool_rank[c->qp[q]];
        tmp[bit / 64] &= ~((uint64_t)1 << (bit % 64));
    }
    narrow(r, tmp, true, W, count, SW_EX_OTHER_QUEUE);
    if (w->home_unqueued && c->origin >= 0)
        narrow(r, e->set_cluster + (size_t)c->origin * W, true, W, count, SW_EX_HOME_QUEUE);
    if (c->product_unknown) {
        narrow(r, r, true, W, count, SW_EX_PRODUCT);
    } else if (c->product_mask) {
        memset(tmp, 0, W * sizeof(*tmp));
        for (uint64_t m = c->product_mask; m; m &= m - 1) {
            const uint64_t *ps = e->set_prod + (size_t)__builtin_ctzll(m) * W;
            for (size_t k = 0; k < W; k++)
                tmp[k] |= ps[k];
        }
        narrow(r, tmp, false, W, count, SW_EX_PRODUCT);
    }
    if (w->min_gpu_mem_gb > 0)
        narrow(r, cached_set(e, &e->mem_cache, e->set_mem, w->min_gpu_mem_gb, has_memory), false, W,
               count, SW_EX_GPU_MEMORY);
    if (w->interconnect != 0)
        narrow(r, cached_set(e, &e->ic_cache, e->set_ic, (double)w->interconnect, has_interconnect),
               false, W, count, SW_EX_INTERCONNECT);
    if (w->burst == SW_BURST_NEVER) {
        if (c->origin < 0)
            narrow(r, r, true, W, count, SW_EX_BURST_NEVER);
        else
            narrow(r, e->set_cluster + (size_t)c->origin * W, false, W, count, SW_EX_BURST_NEVER);
    }
    if (w->prio == SW_PRIO_PRODUCTION)
        narrow(r, e->set_spot, true, W, count, SW_EX_PRODUCTION_SPOT);
    if (w->no_spot)
        narrow(r, e->set_spot, true, W, count, SW_EX_PREEMPTED);
    if (w->max_price > 0)
        narrow(r, cached_set(e, &e->price_cache, e->set_price, w->max_price, within_price), false,
               W, count, SW_EX_MAX_PRICE);
    if (c->mig_unknown)
        narrow(r, r, true, W, count, SW_EX_MIG_PROFILE);
}

/* The pools worth evaluating for a workload: exactly those that pass
 * fixed_exclusion and have a quota flavour for its team, narrowed by the
 * capacity level of its size (a superset of those with room), or for MIG
 * slices to the pools offering its profile. Returns the set (e->words
 * words). */
const uint64_t *sw__workload_candidates(struct sw_engine *e, const struct wctx *c)
{
    size_t W = e->words;
    uint64_t *cand = e->set_cand;
    fixed_pass(e, c, cand, e->set_cand + W, NULL);
    int level = 0;
    while (level + 1 < CAP_LEVELS && ((int64_t)1 << (level + 1)) <= c->gpus)
        level++;
    /* MIG slices are apart from the whole GPUs the capacity levels count:
     * the candidates are the pools offering the profile. */
    const uint64_t *fits =
        c->mig >= 0 ? e->set_mig + (size_t)c->mig * W : e->set_cap + (size_t)level * W;
    for (size_t k = 0; k < W; k++)
        cand[k] &= fits[k];
    if (c->team >= 0 && e->team_has_quota[c->team]) {
        const uint64_t *team = e->set_team + (size_t)c->team * W;
        for (size_t k = 0; k < W; k++)
            cand[k] &= team[k];
    }
    return cand;
}

const uint64_t *sw__fixed_pass_counted(struct sw_engine *e, const struct wctx *c,
                                       int count[SW_EX__COUNT])
{
    fixed_pass(e, c, e->set_cand, e->set_cand + e->words, count);
    return e->set_cand;
}
