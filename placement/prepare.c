/*
 * prepare.c - the tables of one engine call: the workspace sized, pools packed,
 * regions and links as matrices, quotas and budgets by team, local queues
 * loaded, the pool sets built, and the decision order sorted.
 */
#include "placement/engine_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* Grows *p to hold `need` elements of `size` bytes; keeps the contents. */
static int grow(void *pp, size_t *cap, size_t need, size_t size)
{
    void **p = pp;
    if (need <= *cap && *p != NULL)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = sw_realloc(*p, n * size);
    if (q == NULL)
        return SW_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

/*
 * The congestion of a local queue, in dollars per billed GPU-hour. A Job
 * that waits in a saturated queue takes GPUs as they free, ahead of the
 * Jobs that would have started on them the moment they arrive; those go
 * elsewhere, at the cheapest cloud price, for as many whole GPUs as they
 * need there. A Job that fits a running Job's share of a time-sliced pool
 * rents a whole GPU in the cloud, so each GPU-hour it would have held at
 * home costs `r` GPU-hours there, with `r` the whole GPUs over the
 * GPU-share of the Jobs running now (1 on a pool of whole GPUs or MIG
 * slices, which the cloud bills alike; for MIG slices the cheapest cloud
 * price is that of the pools offering the profile). The queue's
 * congestion is what those displaced GPU-hours cost beyond the home's own
 * price:
 *
 *   congestion = max(0, r x cheapest cloud price - home price)
 *
 * docs/cost-model.md, "The home queue's congestion".
 */
static double queue_congestion(double cloud_price, double home_price, bool milli,
                               const struct sw_running *running, size_t n_running)
{
    if (!isfinite(cloud_price))
        return 0; /* no cloud to be displaced to */
    double r = 1;
    if (milli) {
        double whole = 0, share = 0;
        for (size_t j = 0; j < n_running; j++) {
            if (running[j].gpus <= 0)
                continue;
            whole += ceil((double)running[j].gpus / 1000.0);
            share += (double)running[j].gpus / 1000.0;
        }
        if (share > 0)
            r = whole / share;
    }
    double c = r * cloud_price - home_price;
    return c > 0 ? c : 0;
}

/* Sorts pool indices by list price, ties by index (insertion sort: pools
 * are few, and often listed nearly in price order). */
static void sort_by_price(const struct pool_rt *pools, size_t *idx, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t k = idx[i], m = i;
        for (; m > 0 && (pools[idx[m - 1]].price > pools[k].price ||
                         (pools[idx[m - 1]].price == pools[k].price && idx[m - 1] > k));
             m--)
            idx[m] = idx[m - 1];
        idx[m] = k;
    }
}

/* Sizes the workspace, takes the ids of the snapshot's names from its
 * validation, and builds the tables and pool sets of this call. */
int sw__prepare(struct sw_engine *e, const struct sw_snapshot *s, bool explain,
                struct sw_error *err)
{
    size_t np = s->n_pools, nw = s->n_pending;
    const struct sw__index *idx = &e->idx;
    if (grow(&e->order, &e->order_cap, nw + 1, sizeof(*e->order)) ||
        grow(&e->order_tmp, &e->order_tmp_cap, nw + 1, sizeof(*e->order_tmp)) ||
        grow(&e->pools, &e->pool_cap, np + 1, sizeof(*e->pools)))
        goto nomem;
    size_t n_mig = 0;
    for (size_t i = 0; i < np; i++)
        n_mig += (size_t)s->pools[i].n_mig;
    if (grow(&e->migs, &e->mig_cap, n_mig + 1, sizeof(*e->migs)) ||
        sw__intern_reset(&e->mig_names, n_mig + 1))
        goto nomem;
    /* A local queue per pool queue, then one per MIG offer of such a pool. */
    size_t lc = e->lq_cap;
    if (s->n_queues + n_mig + 1 > e->lq_cap) {
        if (grow(&e->lqs, &lc, s->n_queues + n_mig + 1, sizeof(*e->lqs)))
            goto nomem;
        memset(e->lqs + e->lq_cap, 0, (lc - e->lq_cap) * sizeof(*e->lqs));
        e->lq_cap = lc;
    }
    size_t nregions = np + 2 * s->n_links;
    if (sw__intern_reset(&e->regions, nregions) || sw__intern_reset(&e->products, np))
        goto nomem;
    size_t m0 = 0;
    for (size_t i = 0; i < np; i++) {
        const struct sw_pool *p = &s->pools[i];
        struct pool_rt *r = &e->pools[i];
        r->price = p->price_gpu_h;
        r->rate = p->capacity == SW_CAP_OWNED ? 0 : p->interrupt_per_h;
        r->provision_s = p->provision_s;
        r->provision_h = p->provision_s / 3600.0;
        r->mem = p->gpu_mem_gb;
        r->cluster = idx->pool_cluster[i];
        r->region = sw__intern_add(&e->regions, p->region);
        r->product = sw__intern_add(&e->products, p->product);
        r->flavour = idx->pool_flavour[i];
        r->queue = -1;
        r->total = p->total_gpus;
        r->max = p->max_gpus;
        r->free = p->free_gpus;
        r->room = p->max_gpus - p->total_gpus;
        r->cap_wait_s = p->capacity_wait_s;
        r->ic = p->interconnect;
        r->cap = p->capacity;
        r->milli = p->time_sliced;
        r->queue_only = p->queue_only;
        r->mig0 = (int)m0;
        r->n_mig = p->n_mig;
        for (int k = 0; k < p->n_mig; k++) {
            const struct sw_mig_offer *o = &p->mig[k];
            struct mig_rt *m = &e->migs[m0++];
            m->profile = sw__intern_add(&e->mig_names, o->profile);
            m->per_gpu = o->per_gpu;
            long long max = (long long)o->total + (long long)o->per_gpu * r->room;
            m->max = max < INT32_MAX ? (int)max : INT32_MAX;
            m->free = o->free;
            m->lq = -1;
        }
    }
    if (e->products.n > 64)
        return sw_error_set(err, SW_EUNSUPPORTED,
                            "snapshot: %zu distinct GPU products; at most 64 are supported",
                            e->products.n);
    for (size_t i = 0; i < s->n_links; i++) {
        sw__intern_add(&e->regions, s->links[i].from);
        sw__intern_add(&e->regions, s->links[i].to);
    }
    size_t R = e->regions.n;
    size_t mc = e->mat_cap;
    if (grow(&e->link_price, &mc, R * R + 1, sizeof(double)) ||
        (mc = e->mat_cap, grow(&e->link_spg, &mc, R * R + 1, sizeof(double))))
        goto nomem;
    e->mat_cap = mc;
    size_t ec = e->eg_cap;
    if (grow(&e->eg_cost, &ec, R + 1, sizeof(double)) ||
        (ec = e->eg_cap, grow(&e->eg_time, &ec, R + 1, sizeof(double))) ||
        (ec = e->eg_cap, grow(&e->eg_stamp, &ec, R + 1, sizeof(unsigned))))
        goto nomem;
    e->eg_cap = ec;
    e->stamp = 0;
    e->preempt_n = 0;
    memset(e->eg_stamp, 0, e->eg_cap * sizeof(unsigned));
    for (size_t i = 0; i < R * R; i++) {
        e->link_price[i] = INFINITY;
        e->link_spg[i] = INFINITY;
    }
    for (size_t r = 0; r < R; r++) {
        e->link_price[r * R + r] = 0;
        e->link_spg[r * R + r] = 0;
    }
    for (size_t i = 0; i < s->n_links; i++) {
        const struct sw_link *l = &s->links[i];
        size_t a = (size_t)sw__intern_find(&e->regions, l->from);
        size_t b = (size_t)sw__intern_find(&e->regions, l->to);
        if (a == b)
            continue;
        /* Several links for one pair: keep the cheapest. */
        if (l->price_per_gb < e->link_price[a * R + b]) {
            e->link_price[a * R + b] = l->price_per_gb;
            e->link_spg[a * R + b] = 8.0 / l->bandwidth_gbps;
        }
    }
    /* Teams, quotas and budgets: validation interned the teams. */
    size_t T = idx->teams.n, F = idx->flavours.n;
    size_t qc = e->q_cap, tc = e->team_cap, tqc = e->tq_cap;
    if (grow(&e->qs, &qc, s->n_quotas + 1, sizeof(*e->qs)) ||
        (qc = e->q_cap, grow(&e->qg, &qc, s->n_quotas + 1, sizeof(*e->qg))) ||
        grow(&e->team_has_quota, &tc, T + 1, sizeof(bool)) ||
        (tc = e->team_cap, grow(&e->budget_left, &tc, T + 1, sizeof(double))) ||
        grow(&e->team_quota, &tqc, T * F + 1, sizeof(int)))
        goto nomem;
    e->q_cap = qc;
    e->team_cap = tc;
    e->tq_cap = tqc;
    size_t ng;
    sw_quota_build(s->quotas, s->n_quotas, e->qs, e->qg, &ng);
    for (size_t t = 0; t < T; t++) {
        e->team_has_quota[t] = false;
        e->budget_left[t] = INFINITY;
    }
    for (size_t i = 0; i < T * F; i++)
        e->team_quota[i] = -1;
    for (size_t i = 0; i < s->n_quotas; i++) {
        size_t t = (size_t)sw__intern_find(&idx->teams, s->quotas[i].team);
        int f = sw__intern_find(&idx->flavours, s->quotas[i].flavour);
        e->team_has_quota[t] = true;
        if (f >= 0)
            e->team_quota[t * F + (size_t)f] = (int)i;
    }
    for (size_t i = 0; i < s->n_budgets; i++) {
        size_t t = (size_t)sw__intern_find(&idx->teams, s->budgets[i].team);
        double left = s->budgets[i].cap - s->budgets[i].spent;
        e->budget_left[t] = left > 0 ? left : 0;
    }
    /* Local queues: running Jobs become releases, Jobs ahead are queued. */
    double cloud_price = INFINITY;
    for (size_t pi = 0; pi < s->n_pools; pi++)
        if (s->pools[pi].capacity != SW_CAP_OWNED && s->pools[pi].price_gpu_h < cloud_price)
            cloud_price = s->pools[pi].price_gpu_h;
    size_t scratch_need = 1, preempt_need = 1;
    e->n_lqs = s->n_queues;
    for (size_t i = 0; i < s->n_queues; i++) {
        const struct sw_local_queue *lq = &s->queues[i];
        size_t pool = idx->queue_pool[i];
        struct lq *q = &e->lqs[i];
        /* A release per running Job, per Job ahead, and up to two per
         * decision (making room pushes the Job's and the spare GPUs'). */
        size_t need = lq->n_running + lq->n_ahead + 2 * nw + 1;
        if (grow(&q->h, &q->cap, need, sizeof(*q->h)))
            goto nomem;
        q->n = 0;
        q->version++;
        q->cursor = s->now;
        q->free = s->pools[pool].free_gpus;
        q->idle = q->free;
        q->head = INFINITY;
        q->total = s->pools[pool].total_gpus;
        q->congestion = queue_congestion(cloud_price, s->pools[pool].price_gpu_h,
                                         s->pools[pool].time_sliced, lq->running, lq->n_running);
        e->pools[pool].queue = (int)i;
        for (size_t j = 0; j < lq->n_running; j++)
            sw__lq_push(q, (struct release){s->now + lq->running[j].remaining_s,
                                            lq->running[j].gpus, (int)j});
        preempt_need += lq->n_running;
        if (need > scratch_need)
            scratch_need = need;
    }
    /* The MIG offers of pools with a local queue queue their slices the
     * same way, apart from the pool's whole GPUs. */
    for (size_t i = 0; i < s->n_queues; i++) {
        size_t pool = idx->queue_pool[i];
        const struct sw_pool *sp = &s->pools[pool];
        for (int k = 0; k < sp->n_mig; k++) {
            const struct sw_mig_offer *o = &sp->mig[k];
            size_t li = e->n_lqs++;
            struct lq *q = &e->lqs[li];
            size_t need = o->n_running + nw + 1;
            if (grow(&q->h, &q->cap, need, sizeof(*q->h)))
                goto nomem;
            q->n = 0;
            q->version++;
            q->cursor = s->now;
            q->free = o->free;
            q->idle = q->free;
            q->head = INFINITY;
            q->total = o->total;
            /* A MIG Job goes only to a cloud pool offering its profile. */
            double mig_price = INFINITY;
            for (size_t pi = 0; pi < s->n_pools; pi++)
                for (int x = 0; x < s->pools[pi].n_mig; x++)
                    if (s->pools[pi].capacity != SW_CAP_OWNED &&
                        strcmp(s->pools[pi].mig[x].profile, o->profile) == 0 &&
                        s->pools[pi].price_gpu_h < mig_price)
                        mig_price = s->pools[pi].price_gpu_h;
            q->congestion = queue_congestion(mig_price, sp->price_gpu_h, false, NULL, 0);
            e->migs[e->pools[pool].mig0 + k].lq = (int)li;
            for (size_t j = 0; j < o->n_running; j++)
                sw__lq_push(q, (struct release){s->now + o->running[j].remaining_s,
                                                o->running[j].gpus, -1});
            if (need > scratch_need)
                scratch_need = need;
        }
    }
    if (grow(&e->scratch, &e->scratch_cap, scratch_need, sizeof(*e->scratch)) ||
        grow(&e->peek, &e->peek_cap, scratch_need + 2, sizeof(*e->peek)) ||
        grow(&e->preempt, &e->preempt_cap, preempt_need, sizeof(*e->preempt)) ||
        grow(&e->pre_cand, &e->pre_cand_cap, scratch_need, sizeof(*e->pre_cand)) ||
        grow(&e->hist, &e->hist_cap, s->n_history + 1, sizeof(double)))
        goto nomem;
    size_t rows = explain ? nw : 1;
    if (rows * np + 1 > e->opts_cap &&
        grow(&e->opts, &e->opts_cap, rows * np + 1, sizeof(*e->opts)))
        goto nomem;
    /* Pool sets: all, spot, capacity levels, per product, per cluster, per
     * team with quotas, per MIG profile offered, and scratch sets for one
     * workload. */
    size_t W = (np + 63) / 64, P = e->products.n, C = idx->clusters.n, M = e->mig_names.n;
    size_t nsets = 3 + CAP_LEVELS + P + C + T + M + 4 + 3 * SET_CACHE;
    if (grow(&e->sets, &e->sets_cap, nsets * W + 1, sizeof(*e->sets)))
        goto nomem;
    e->np = np;
    e->words = W;
    memset(e->sets, 0, nsets * W * sizeof(*e->sets));
    uint64_t *next = e->sets;
    e->set_all = next, next += W;
    e->set_spot = next, next += W;
    e->set_cap = next, next += CAP_LEVELS * W;
    e->set_prod = next, next += P * W;
    e->set_cluster = next, next += C * W;
    e->set_team = next, next += T * W;
    e->set_mig = next, next += M * W;
    e->set_queue_only = next, next += W;
    e->set_cand = next, next += 4 * W;
    e->set_mem = next, next += SET_CACHE * W;
    e->set_ic = next, next += SET_CACHE * W;
    e->set_price = next;
    memset(&e->mem_cache, 0, sizeof(e->mem_cache));
    memset(&e->ic_cache, 0, sizeof(e->ic_cache));
    memset(&e->price_cache, 0, sizeof(e->price_cache));
    if (grow(&e->rank_pool, &e->rank_pool_cap, np + 1, sizeof(size_t)) ||
        grow(&e->pool_rank, &e->pool_rank_cap, np + 1, sizeof(size_t)))
        goto nomem;
    for (size_t i = 0; i < np; i++)
        e->rank_pool[i] = i;
    sort_by_price(e->pools, e->rank_pool, np);
    for (size_t r = 0; r < np; r++)
        e->pool_rank[e->rank_pool[r]] = r;
    for (size_t i = 0; i < np; i++) {
        const struct pool_rt *r = &e->pools[i];
        size_t bit = e->pool_rank[i];
        set_bit(e->set_all, bit);
        if (r->cap == SW_CAP_SPOT)
            set_bit(e->set_spot, bit);
        int hint = cap_hint(r);
        for (int b = 0; b < CAP_LEVELS && ((int64_t)1 << b) <= hint; b++)
            set_bit(e->set_cap + (size_t)b * W, bit);
        set_bit(e->set_prod + (size_t)r->product * W, bit);
        set_bit(e->set_cluster + (size_t)r->cluster * W, bit);
        if (r->queue_only)
            set_bit(e->set_queue_only, bit);
        for (int k = 0; k < r->n_mig; k++)
            set_bit(e->set_mig + (size_t)e->migs[r->mig0 + k].profile * W, bit);
        for (size_t t = 0; t < T; t++)
            if (e->team_has_quota[t] && e->team_quota[t * F + (size_t)r->flavour] >= 0)
                set_bit(e->set_team + t * W, bit);
    }
    /* The decision order. */
    for (size_t i = 0; i < nw; i++) {
        if (i + 8 < nw) {
            __builtin_prefetch(&s->pending[i + 8].prio);
            __builtin_prefetch(&s->pending[i + 8].submit_time);
        }
        e->order[i].prio = SW_PRIO_PRODUCTION - (unsigned)s->pending[i].prio;
        e->order[i].submit = sw__order_bits(s->pending[i].submit_time);
        e->order[i].idx = i;
    }
    sw__sort_order(e, e->order, e->order_tmp, nw, s->pending);
    return 0;
nomem:
    return sw_error_set(err, SW_ENOMEM,
                        "placement engine: out of memory for %zu workloads x %zu pools", nw, np);
}
