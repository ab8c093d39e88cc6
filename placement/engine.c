/*
 * engine.c - the placement engine's decision loop: validate the snapshot,
 * build the call's tables, then decide every pending workload in order
 * (resolve its context, price its options, let the policy choose, commit
 * what the choice takes). The parts it calls each have a file
 * (placement/engine_internal.h lists them).
 *
 * The work per decision is kept small enough to decide 10,000 workloads
 * over 100 pools in a few milliseconds: validation interns the names once
 * per call into small integers (clusters, flavours, teams; the engine adds
 * regions and products), the quota of every team on every pool is a table
 * lookup, and the local queue of every owned pool is a min-heap of GPU
 * releases that answers "when could N GPUs start" by popping at most N
 * entries.
 *
 * Without explanations the engine does not look at pools a workload cannot
 * use: bit sets of pools per product, cluster, team and capacity level
 * (kept up to date as capacity is taken) give the candidates in a few word
 * operations, and only those are priced. With explanations every pool is
 * weighed and every exclusion recorded; both paths share the code that
 * prices an option, and the tests check that they decide the same.
 */
#include "placement/engine.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "placement/engine_internal.h"
#include "placement/runtime.h"

int sw_engine_new(struct sw_engine **out)
{
    struct sw_engine *e = sw_calloc(1, sizeof(*e));
    if (e == NULL)
        return SW_ENOMEM;
    *out = e;
    return 0;
}

void sw_engine_free(struct sw_engine *e)
{
    if (e == NULL)
        return;
    sw_free(e->order);
    sw_free(e->order_tmp);
    sw_free(e->pools);
    for (size_t i = 0; i < e->lq_cap; i++)
        sw_free(e->lqs[i].h);
    sw_free(e->lqs);
    sw_free(e->scratch);
    sw_free(e->peek);
    sw_free(e->preempt);
    sw_free(e->pre_cand);
    sw__index_free(&e->idx);
    sw__intern_free(&e->regions);
    sw__intern_free(&e->products);
    sw__intern_free(&e->mig_names);
    sw_free(e->migs);
    sw_free(e->link_price);
    sw_free(e->link_spg);
    sw_free(e->eg_cost);
    sw_free(e->eg_time);
    sw_free(e->eg_stamp);
    sw_free(e->qs);
    sw_free(e->qg);
    sw_free(e->team_quota);
    sw_free(e->team_has_quota);
    sw_free(e->budget_left);
    sw_free(e->hist);
    sw_free(e->opts);
    sw_free(e->sets);
    sw_free(e->rank_pool);
    sw_free(e->pool_rank);
    sw_free(e);
}

/* Takes the slices of a MIG option: from its local queue at home, else
 * from the idle slices, then from whole GPUs autoscaling adds (each gives
 * per_gpu slices; what the Job leaves of the last stays idle). */
static void commit_mig(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                       const struct sw_option *o, size_t pi)
{
    struct pool_rt *p = &e->pools[pi];
    struct mig_rt *m = mig_offer(e, c, p);
    sw_assert(m != NULL);
    if (o->stay && m->lq >= 0) {
        sw__lq_start(e, &e->lqs[m->lq], c->gpus, s->now, true, o->completion - o->start,
                     c->runtime_dl_s);
        return;
    }
    if (c->gpus <= m->free) {
        m->free -= c->gpus;
        return;
    }
    int short_by = c->gpus - m->free, added = (short_by + m->per_gpu - 1) / m->per_gpu;
    int old = cap_hint(p);
    p->room -= added;
    m->free = added * m->per_gpu - short_by;
    cap_levels_update(e, pi, old);
}

/* Takes the chosen option's quota and budget. */
static void charge(struct sw_engine *e, const struct wctx *c, const struct sw_option *o)
{
    const struct pool_rt *p = &e->pools[o->pool];
    if (c->team >= 0) {
        if (e->team_has_quota[c->team]) {
            int qi = e->team_quota[(size_t)c->team * e->idx.flavours.n + (size_t)p->flavour];
            sw_quota_charge(&e->qs[qi], e->qg, c->gpus);
        }
        e->budget_left[c->team] -=
            p->cap == SW_CAP_OWNED ? o->cost.egress_cost : sw__budget_charge(c->w, o->cost.total);
    }
}

/* Takes the chosen option's capacity, quota and budget. */
static void commit(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                   const struct sw_option *o)
{
    size_t pi = (size_t)o->pool;
    struct pool_rt *p = &e->pools[pi];
    int queue = o->stay ? p->queue : -1;
    if (c->mig >= 0) {
        commit_mig(e, s, c, o, pi);
    } else if (queue >= 0) {
        double hold = o->completion - o->start;
        sw__lq_start(e, &e->lqs[queue], demand(c, p), s->now, true, hold, c->runtime_dl_s);
    } else {
        int old = cap_hint(p), need = demand(c, p);
        if (need <= p->free) {
            p->free -= need;
        } else {
            p->room -= need - p->free;
            p->free = 0;
        }
        cap_levels_update(e, pi, old);
    }
    charge(e, c, o);
}

/* The queue is decided in priority order, which jumps around the pending
 * array: each workload is a kilobyte (mostly fixed-size names), so without
 * help every decision starts with a string of cache misses. Asking for the
 * lines a decision reads a few workloads ahead hides them. */
#define PREFETCH_AHEAD 4

/* Resolves what the option loop needs of workload `wi` into `c`. Returns
 * false when its runtime is unknown and nothing finished to learn it from. */
static bool workload_context(struct sw_engine *e, const struct sw_snapshot *s, size_t wi,
                             double delay_value, struct wctx *c, struct sw_decision *d)
{
    const struct sw_workload *w = &s->pending[wi];
    *c = (struct wctx){.w = w, .gpus = sw_workload_gpus(w), .runtime_s = w->runtime_s};
    /* At most 10^5 pods x 1024 GPUs (validated): in milli-GPUs that can
     * pass an int, so it is capped far above any pool. */
    long long milli =
        (long long)w->pods *
        (w->gpu_milli > 0 && w->gpu_milli < 1000 ? w->gpu_milli : 1000LL * w->gpus_per_pod);
    c->milli = milli < INT_MAX ? (int)milli : INT_MAX;
    c->share_h = (double)milli / 1000.0;
    c->mig = -1;
    if (w->mig_profile[0] != '\0') {
        /* Slices bill 1 / per_gpu of a GPU each: at least 1 / 7. */
        c->mig = sw__intern_find(&e->mig_names, w->mig_profile);
        c->mig_unknown = c->mig < 0;
        c->share_h = (double)c->gpus / SW_MIG_MAX_PER_GPU;
    }
    if (c->runtime_s <= 0) {
        if (sw_runtime_learn(s->history, s->n_history, w->team, w->label, e->hist, &c->runtime_s) !=
            0)
            return false;
        d->runtime_learned = true;
    }
    /* The estimate is a log-normal belief around its median: costs and
     * completion use its mean (the expected cost, as cost is linear in
     * runtime), deadlines a high quantile. */
    double median = c->runtime_s, sg = w->runtime_sigma;
    c->runtime_s = fmin(median * exp(sg * sg / 2.0), SW_MAX_SECONDS);
    c->runtime_dl_s = fmin(median * exp(SW_DEADLINE_Z * sg), SW_MAX_SECONDS);
    c->runtime_med_s = fmin(median, SW_MAX_SECONDS);
    c->out_region = w->output_region[0] ? sw__intern_find(&e->regions, w->output_region) : -1;
    d->runtime_s = c->runtime_s;
    c->origin = e->idx.work_origin[wi];
    c->qp = e->idx.work_queues + wi * SW_MAX_QUEUE_POOLS;
    c->nqp = w->n_queue_pools;
    c->team = e->idx.work_team[wi];
    for (int k = 0; k < w->n_products; k++) {
        int id = sw__intern_find(&e->products, w->products[k]);
        if (id >= 0)
            c->product_mask |= (uint64_t)1 << id;
    }
    c->product_unknown = w->n_products > 0 && c->product_mask == 0;
    c->rt_h = c->runtime_s / 3600.0;
    c->lost_h = sw_cost_lost_hours(w->checkpoint_s / 3600.0, w->restart_s / 3600.0, c->rt_h);
    c->lost_s = c->lost_h * 3600.0;
    c->worst_lost_s = fmin((w->checkpoint_s > 0 ? w->checkpoint_s : c->runtime_dl_s) + w->restart_s,
                           SW_MAX_SECONDS);
    c->delay_per_h = delay_value * c->gpus;
    return true;
}

/* Decides workload `wi`, the `rank`th in the order: prices its options,
 * lets the policy choose, and takes what the choice uses. */
static void decide_one(struct sw_engine *e, const struct sw_snapshot *s,
                       const struct sw_policy *policy, bool explain, double delay_value, size_t wi,
                       size_t rank, struct sw_decision *d)
{
    size_t np = s->n_pools;
    memset(d, 0, sizeof(*d));
    d->workload = wi;
    d->rank = rank;
    d->pool = -1;
    struct sw_option *opts = e->opts + (explain ? rank * np : 0);
    if (explain) {
        d->options = opts;
        d->n_options = np;
    }
    struct wctx c;
    if (!workload_context(e, s, wi, delay_value, &c, d)) {
        d->verdict = SW_VERDICT_REJECT;
        d->why = SW_WHY_NO_RUNTIME;
        d->n_options = 0;
        return;
    }
    e->stamp++;
    size_t n = np;
    const uint64_t *cand = NULL;
    if (explain) {
        for (size_t pi = 0; pi < np; pi++)
            sw__evaluate(e, s, &c, pi, &opts[pi]);
    } else {
        /* Without explanations only eligible options matter: evaluate
         * the candidate pools and choose among those that pass. */
        cand = sw__workload_candidates(e, &c);
        n = sw__evaluate_candidates(e, s, &c, policy, cand, opts);
    }
    int k = sw__choose(s, policy, &c, opts, n, d);
    bool preempted = false;
    if (k >= 0 && policy->kind == SW_POLICY_COST_AWARE) {
        /* A deadline bursting now would keep is not waited away; past
         * the moment it is due, the earliest completion, room made. */
        if (!policy->no_deadline_guard)
            k = sw__keep_deadline(e, s, &c, cand, opts, &n, k, d);
        if (d->why == SW_WHY_DEADLINE_BEST) {
            k = sw__make_room(e, s, &c, opts, n, k, d);
            /* Its GPUs are taken already (the option may be the one chosen). */
            preempted = d->why == SW_WHY_DEADLINE_PREEMPT;
        }
    }
    if (k < 0) {
        if (explain) {
            d->main_exclusion = sw__main_exclusion(opts, n);
        } else {
            /* A rejection names its commonest exclusion: weigh every
             * pool as an explanation would (and let the policy mark the
             * eligible ones it passes over), which changes nothing else. */
            int count[SW_EX__COUNT] = {0};
            size_t m = sw__evaluate_all_counted(e, s, &c, opts, count);
            struct sw_decision again = *d;
            int k2 = sw__choose(s, policy, &c, opts, m, &again);
            sw_assert(k2 < 0);
            for (size_t i = 0; i < m; i++)
                count[opts[i].excluded]++;
            d->main_exclusion = sw__main_exclusion_of(count);
        }
        d->verdict = SW_VERDICT_REJECT;
        d->why = SW_WHY_NO_OPTION;
        return;
    }
    d->chosen = opts[k];
    d->pool = opts[k].pool;
    d->verdict = opts[k].stay ? SW_VERDICT_STAY : SW_VERDICT_BURST;
    if (preempted)
        charge(e, &c, &opts[k]); /* its GPUs were taken making room */
    else
        commit(e, s, &c, &opts[k]);
}

int sw_engine_decide(struct sw_engine *e, const struct sw_snapshot *s,
                     const struct sw_policy *policy, unsigned flags, struct sw_decision *out,
                     struct sw_error *err)
{
    if (e == NULL || policy == NULL || (s != NULL && s->n_pending > 0 && out == NULL))
        return sw_error_set(err, SW_EINVAL, "placement engine: NULL argument");
    if ((unsigned)policy->kind >= SW_POLICY__COUNT)
        return sw_error_set(err, SW_EINVAL, "policy: unknown kind %d", (int)policy->kind);
    if (!sw__policy_params_ok(policy))
        return sw_error_set(err, SW_ERANGE,
                            "policy \"%s\": parameters must be finite and non-negative, delay "
                            "value up to %g, wait up to %g s, k up to %g",
                            sw_policy_name(policy->kind), SW_MAX_PRICE, SW_MAX_SECONDS,
                            POLICY_MAX_K);
    /* 1. Validate the snapshot and build this call's tables. */
    int rc = sw__snapshot_validate_index(s, &e->idx, err);
    if (rc != 0)
        return rc;
    bool explain = flags & SW_DECIDE_EXPLAIN;
    if ((rc = sw__prepare(e, s, explain, err)) != 0)
        return rc;
    const double delay_value = sw_policy_delay_value(policy, s);
    /* 2. Jobs already queued ahead take their place first. */
    for (size_t i = 0; i < s->n_queues; i++) {
        const struct sw_local_queue *lq = &s->queues[i];
        for (size_t j = 0; j < lq->n_ahead; j++) {
            struct lq *q = &e->lqs[i];
            if (lq->ahead[j].gpus > q->total)
                continue; /* can never start; it blocks nobody in this model */
            sw__lq_start(e, q, lq->ahead[j].gpus, s->now, true, lq->ahead[j].runtime_s, -1);
        }
    }
    /* 3. Every pending workload in the decision order, each taking what it
     * is given before the next is looked at. */
    for (size_t rank = 0; rank < s->n_pending; rank++) {
        if (rank + PREFETCH_AHEAD < s->n_pending) {
            size_t ahead = e->order[rank + PREFETCH_AHEAD].idx;
            sw__prefetch_workload(&s->pending[ahead]);
            for (size_t off = 0; off < sizeof(*out); off += 64)
                __builtin_prefetch((const char *)&out[ahead] + off, 1);
        }
        size_t wi = e->order[rank].idx;
        decide_one(e, s, policy, explain, delay_value, wi, rank, &out[wi]);
    }
    return 0;
}
