/*
 * options.c - pricing a workload's options: capacity, quota, egress, start,
 * completion, cost, deadline, budget and score; and the cutoff that stops
 * pricing once the remaining pools cannot matter.
 */
#include "placement/engine_internal.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Egress cost and transfer seconds of the workload's inputs into region `r`. */
ALWAYS_INLINE void egress_to(struct sw_engine *e, struct wctx *c, int r, double *cost, double *secs)
{
    const struct sw_workload *w = c->w;
    if (w->n_inputs == 0 || r < 0) {
        *cost = 0;
        *secs = 0;
        return;
    }
    if (e->eg_stamp[r] == e->stamp) {
        *cost = e->eg_cost[r];
        *secs = e->eg_time[r];
        return;
    }
    if (!c->src_resolved) {
        for (int k = 0; k < w->n_inputs; k++)
            for (int h = 0; h < w->inputs[k].n_regions; h++)
                c->src[k][h] = sw__intern_find(&e->regions, w->inputs[k].regions[h]);
        c->src_resolved = true;
    }
    size_t R = e->regions.n;
    double cs = 0, t = 0;
    for (int k = 0; k < w->n_inputs; k++) {
        const struct sw_input *in = &w->inputs[k];
        if (in->n_regions == 0 || in->size_gb == 0)
            continue; /* nothing to move */
        double best = INFINITY, best_t = INFINITY;
        for (int h = 0; h < in->n_regions; h++) {
            int src = c->src[k][h];
            if (src < 0)
                continue;
            double price = e->link_price[(size_t)src * R + (size_t)r];
            double spg = e->link_spg[(size_t)src * R + (size_t)r];
            if (price < best || (price == best && spg < best_t)) {
                best = price;
                best_t = spg;
            }
        }
        cs += best * in->size_gb;
        t += best_t * in->size_gb;
    }
    e->eg_cost[r] = cs;
    e->eg_time[r] = t;
    e->eg_stamp[r] = e->stamp;
    *cost = cs;
    *secs = t;
}

/* Only the fields an excluded option shows are set up front: clearing the
 * whole struct for a million options costs more than evaluating them. */
static inline void option_init(const struct sw_engine *e, const struct wctx *c, size_t pi,
                               struct sw_option *o)
{
    o->pool = (int)pi;
    o->stay = e->pools[pi].cluster == c->origin;
    o->deadline_ok = true;
    o->deadline_median_ok = true;
    o->detail = 0;
    o->borrowed = 0;
    o->wait_s = 0;
    o->provision_s = 0;
    o->transfer_s = 0;
    o->score = 0;
    o->congestion = 0;
    o->excluded = SW_EX_NONE;
}

/* The exclusions that depend only on the workload and the pool's fixed
 * attributes. The pool sets of sw__workload_candidates() are exactly the pools
 * that pass these. */
static inline enum sw_exclusion fixed_exclusion(const struct sw_engine *e, const struct wctx *c,
                                                size_t pi, bool stay)
{
    const struct pool_rt *p = &e->pools[pi];
    const struct sw_workload *w = c->w;
    /* One queue's view of a cluster is an option only for the workloads
     * naming it, and those have no other pool in that cluster. */
    if (p->queue_only || c->nqp > 0) {
        bool named = false, cluster_named = false;
        for (int k = 0; k < c->nqp && !named; k++) {
            named = c->qp[k] == (int)pi;
            cluster_named = cluster_named || e->pools[c->qp[k]].cluster == p->cluster;
        }
        if (!named && (p->queue_only || cluster_named))
            return SW_EX_OTHER_QUEUE;
    }
    if (stay && w->home_unqueued)
        return SW_EX_HOME_QUEUE;
    if (c->product_unknown || (c->product_mask && !(c->product_mask >> p->product & 1u)))
        return SW_EX_PRODUCT;
    if (p->mem < w->min_gpu_mem_gb)
        return SW_EX_GPU_MEMORY;
    if ((p->ic & w->interconnect) != w->interconnect)
        return SW_EX_INTERCONNECT;
    if (!stay && w->burst == SW_BURST_NEVER)
        return SW_EX_BURST_NEVER;
    if (w->prio == SW_PRIO_PRODUCTION && p->cap == SW_CAP_SPOT)
        return SW_EX_PRODUCTION_SPOT;
    if (w->no_spot && p->cap == SW_CAP_SPOT)
        return SW_EX_PREEMPTED;
    if (w->max_price > 0 && p->price > w->max_price)
        return SW_EX_MAX_PRICE;
    if (c->mig_unknown)
        return SW_EX_MIG_PROFILE; /* no pool offers its profile */
    return SW_EX_NONE;
}

/* The rest of an option, for a pool that passed fixed_exclusion: capacity,
 * quota, egress, start, cost, deadline, budget and score. Works on locals
 * and stores the option once at the end: stores through `o` would
 * otherwise make the compiler reload every workload field after them. */
ALWAYS_INLINE void evaluate_rest(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                                 size_t pi, struct sw_option *o)
{
    const struct pool_rt *p = &e->pools[pi];
    const int team = c->team;
    const double now = s->now, runtime_s = c->runtime_s, deadline = c->w->deadline;
    int queue = o->stay ? p->queue : -1;
    /* What it takes of the pool: GPUs, milli-GPUs, or slices of its MIG
     * profile, which only a pool offering the profile has. */
    int gpus = demand(c, p), total = p->total, max = p->max, free = p->free, room = p->room;
    double billed = billed_gpus(c, p);
    if (c->mig >= 0) {
        const struct mig_rt *m = mig_offer(e, c, p);
        if (m == NULL) {
            o->excluded = SW_EX_MIG_PROFILE;
            return;
        }
        gpus = c->gpus;
        queue = o->stay ? m->lq : -1;
        total = queue >= 0 ? e->lqs[queue].total : m->max;
        max = m->max;
        free = m->free;
        /* free + room stays an int: slices autoscaling may still add. */
        long long slices = (long long)m->per_gpu * p->room;
        room = slices < INT_MAX - free ? (int)slices : INT_MAX - free;
        billed = mig_billed(c, m);
    }
    if (gpus > (queue >= 0 ? total : max)) {
        o->excluded = SW_EX_NEVER_FITS;
        return;
    }
    /* Capacity first: late in a long queue most pools are full, and this
     * check is cheaper than quotas, egress and costs. */
    bool needs_provision = false;
    double cap_wait = 0;
    if (queue < 0 && gpus > free) {
        if (gpus > free + room) {
            o->excluded = SW_EX_CAPACITY;
            return;
        }
        needs_provision = true;
        /* Short spot capacity: the GPUs can be added only once it returns. */
        cap_wait = p->cap_wait_s;
    }
    int borrowed = 0;
    if (team >= 0 && e->team_has_quota[team]) {
        int qi = e->team_quota[(size_t)team * e->idx.flavours.n + (size_t)p->flavour];
        if (qi < 0) {
            o->excluded = SW_EX_QUOTA;
            o->detail = SW_QUOTA_NOMINAL;
            return;
        }
        /* Quotas count GPUs, a share or a MIG slice as one (commit). */
        enum sw_quota_verdict v = sw_quota_check(&e->qs[qi], e->qg, c->gpus, &borrowed);
        if (v != SW_QUOTA_OK) {
            o->excluded = SW_EX_QUOTA;
            o->detail = (int)v;
            return;
        }
    }
    double egress, transfer;
    egress_to(e, c, p->region, &egress, &transfer);
    if (!isfinite(egress)) {
        o->excluded = SW_EX_NO_ROUTE;
        o->borrowed = borrowed;
        return;
    }
    double start, wait_s = 0, provision_s = 0, provision_h = 0;
    bool queued = false; /* it waits in the home queue for GPUs to free */
    if (queue >= 0) {
        /* Ahead of the queue on idle GPUs (backfill) only if it gives
         * them back by the queue's head at the runtime's deadline
         * quantile, nine runs in ten of its kind (localq.c). */
        double t = sw__lq_start(e, &e->lqs[queue], gpus, now, false, 0, c->runtime_dl_s);
        if (!isfinite(t)) {
            o->excluded = SW_EX_NEVER_FITS;
            o->borrowed = borrowed;
            o->transfer_s = transfer;
            return;
        }
        start = t > now + transfer ? t : now + transfer;
        wait_s = start - now;
        queued = t > now;
    } else if (needs_provision) {
        provision_s = p->provision_s;
        provision_h = p->provision_h;
        wait_s = cap_wait;
        start = now + (transfer > cap_wait ? transfer : cap_wait) + p->provision_s;
    } else {
        start = now + transfer;
    }
    /* Outputs return to their region after the run: their egress is paid
     * and their transfer is part of the completion time. */
    double out_s = 0;
    if (c->w->output_gb > 0 && c->w->output_region[0] != '\0') {
        size_t R = e->regions.n;
        double price = c->out_region >= 0 && p->region >= 0
                           ? e->link_price[(size_t)p->region * R + (size_t)c->out_region]
                           : INFINITY;
        if (!isfinite(price)) {
            o->excluded = SW_EX_NO_ROUTE;
            o->borrowed = borrowed;
            return;
        }
        egress += price * c->w->output_gb;
        out_s = e->link_spg[(size_t)p->region * R + (size_t)c->out_region] * c->w->output_gb;
    }
    /* An interrupted Job loses half a checkpoint interval and its restart,
     * and waits for a replacement instance: the pool's provisioning. */
    double lost_s = lost_per_interruption(c, p);
    struct sw_cost_breakdown cost;
    sw_cost_option_lost(billed, p->price, c->rt_h, provision_h, p->rate, lost_s / 3600.0, egress,
                        &cost);
    double completion = start + runtime_s + cost.interruptions * lost_s + out_s;
    bool deadline_ok = true, deadline_median_ok = true;
    if (deadline > 0) {
        /* A deadline-bound Job does not bet on luck: spot must meet the
         * deadline even with two standard deviations more interruptions
         * than expected, plus one, each at its worst moment (just before a
         * checkpoint), which is what burst-now, renting on-demand, never
         * risks: so an option cost-aware counts as keeping a deadline
         * keeps it whenever burst-now's would under the same belief
         * (docs/cost-model.md). The median test is the weaker promise
         * cost-aware falls back to when no option keeps the first
         * (choose.c); it bets no more on interruptions. */
        double n = cost.interruptions;
        double pessimistic = n > 0 ? n + 2.0 * sqrt(n) + 1.0 : 0;
        double fixed = start + pessimistic * worst_lost_per_interruption(c, p) + out_s;
        deadline_ok = fixed + c->runtime_dl_s <= deadline;
        deadline_median_ok = fixed + c->runtime_med_s <= deadline;
    }
    o->borrowed = borrowed;
    o->transfer_s = transfer;
    o->wait_s = wait_s;
    o->provision_s = provision_s;
    o->start = start;
    o->cost = cost;
    o->completion = completion;
    o->deadline_ok = deadline_ok;
    o->deadline_median_ok = deadline_median_ok;
    if (team >= 0) {
        double charge = p->cap == SW_CAP_OWNED ? egress : sw__budget_charge(c->w, cost.total);
        if (charge > e->budget_left[team]) {
            o->excluded = SW_EX_BUDGET;
            return;
        }
    }
    double delay_h = (completion - now - runtime_s) / 3600.0;
    /* Waiting in a saturated home queue, it holds GPUs the next arrivals
     * would have started on: their cloud price, beyond home's, counts in
     * its score (prepare.c, queue_congestion). Not in its cost: nobody
     * pays it. */
    double congestion = 0;
    if (queued)
        congestion = e->lqs[queue].congestion * billed * c->rt_h;
    o->congestion = congestion;
    o->score = cost.total + c->delay_per_h * delay_h + congestion;
}

/* One option, with every exclusion in order (for explanations). */
void sw__evaluate(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c, size_t pi,
                  struct sw_option *o)
{
    option_init(e, c, pi, o);
    o->excluded = fixed_exclusion(e, c, pi, o->stay);
    if (o->excluded == SW_EX_NONE)
        evaluate_rest(e, s, c, pi, o);
}

/* Every pool for a rejection's reason, as an explanation would weigh it:
 * the eligible options are packed into `opts` (returned: how many) and
 * every other pool's exclusion is counted in `count`. The exclusions fixed
 * by the pools' attributes are counted on pool sets, a word at a time;
 * only the pools passing them are priced. */
size_t sw__evaluate_all_counted(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                                struct sw_option *opts, int count[SW_EX__COUNT])
{
    const uint64_t *pass = sw__fixed_pass_counted(e, c, count);
    size_t n = 0;
    for (size_t k = 0; k < e->words; k++)
        for (uint64_t m = pass[k]; m; m &= m - 1) {
            size_t pi = e->rank_pool[k * 64 + (size_t)__builtin_ctzll(m)];
            struct sw_option *o = &opts[n];
            option_init(e, c, pi, o);
            evaluate_rest(e, s, c, pi, o);
            if (o->excluded == SW_EX_NONE)
                n++;
            else
                count[o->excluded]++;
        }
    return n;
}

/* When the rest of the candidates cannot matter. Candidates come cheapest
 * list price first, and no option costs less than its GPUs at list price
 * for the runtime (provisioning, interruptions, egress and the value of
 * delay only add), so once that floor is above what the policy would pick
 * already, every later pool is worse:
 *   cost-aware: the lowest score among options that meet the deadline;
 *   greedy: the lowest list price among options that start now.
 * Other policies, and cloud-first workloads, weigh every candidate. */
struct cutoff {
    enum { CUT_NONE, CUT_SCORE, CUT_PRICE } kind;
    double best;   /* what the policy would pick so far (INFINITY: nothing) */
    double margin; /* rounding slack, so that a pool is cut only when it is
                    * strictly worse, never on a tie */
};

static void cutoff_init(const struct sw_snapshot *s, const struct sw_policy *pol,
                        const struct wctx *c, struct cutoff *cut)
{
    cut->kind = CUT_NONE;
    cut->best = INFINITY;
    cut->margin = 0;
    if (c->w->burst == SW_BURST_CLOUD_FIRST)
        return;
    if (pol->kind == SW_POLICY_COST_AWARE && s->now - pending_since(c->w) >= pol->max_wait_s)
        return; /* it takes the earliest completion: every candidate counts */
    if (pol->kind == SW_POLICY_COST_AWARE && isfinite(c->delay_per_h)) {
        /* The delay of an option is completion - now - runtime, computed
         * with a few roundings of now + runtime; the floors, with a few
         * roundings of their own size. The margin (this, plus a billionth of
         * the figures compared) is a million times wider than both. */
        cut->kind = CUT_SCORE;
        cut->margin = c->delay_per_h * (fabs(s->now) + c->runtime_s + 1.0) * 1e-9 / 3600.0;
    } else if (pol->kind == SW_POLICY_GREEDY && c->w->burst != SW_BURST_NEVER) {
        cut->kind = CUT_PRICE;
    }
}

/* A floor under the score of workload `c` on pool `p`, whose run costs
 * `run`: the score adds provisioning, interruptions and egress to the run,
 * and the value of a delay at least as long as moving the inputs (and
 * provisioning, when the pool has too few idle GPUs). The sums are made in
 * the order evaluate_rest makes them, so the floor never exceeds the score
 * but by rounding in the delay, which the cutoff's margin covers. */
static double score_floor(struct sw_engine *e, struct wctx *c, const struct pool_rt *p, double run)
{
    double egress, transfer;
    egress_to(e, c, p->region, &egress, &transfer);
    if (!isfinite(egress))
        return INFINITY; /* no route: the option is excluded anyway */
    bool queued = p->queue >= 0 && p->cluster == c->origin;
    int need = demand(c, p), free = p->free;
    double billed = billed_gpus(c, p);
    if (c->mig >= 0) {
        const struct mig_rt *m = mig_offer(e, c, p);
        if (m == NULL)
            return INFINITY; /* the option is excluded anyway */
        queued = queued && m->lq >= 0;
        need = c->gpus;
        free = m->free;
        billed = mig_billed(c, m);
        run = billed * p->price * c->rt_h;
    }
    double provision = 0, provision_s = 0;
    if (!queued && need > free) {
        provision = billed * p->price * p->provision_h;
        provision_s = p->provision_s;
    }
    double delay_h = (transfer + provision_s) / 3600.0;
    return run + provision + egress + c->delay_per_h * delay_h;
}

/* Evaluates the candidate pools of `cand` into `opts`, cheapest first, and
 * keeps the eligible ones. Returns how many. */
size_t sw__evaluate_candidates(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                               const struct sw_policy *pol, const uint64_t *cand,
                               struct sw_option *opts)
{
    struct cutoff cut;
    cutoff_init(s, pol, c, &cut);
    size_t n = 0;
    for (size_t k = 0; k < e->words; k++)
        for (uint64_t m = cand[k]; m; m &= m - 1) {
            size_t pi = e->rank_pool[k * 64 + (size_t)__builtin_ctzll(m)];
            const struct pool_rt *p = &e->pools[pi];
            double price = p->price;
            if (cut.kind == CUT_SCORE && isfinite(cut.best)) {
                /* The least any pool from here on can bill: a share, on a
                 * time-sliced pool, or MIG slices at 1 / 7 of a GPU each
                 * (for whole GPUs the same as anywhere). */
                double least = c->share_h * price * c->rt_h;
                if (least > cut.best + cut.margin + 1e-9 * (least + fabs(cut.best)))
                    return n; /* and every later pool */
                double run = billed_gpus(c, p) * price * c->rt_h;
                double floor = score_floor(e, c, p, run);
                if (floor > cut.best + cut.margin + 1e-9 * (floor + fabs(cut.best)))
                    continue;
            }
            if (cut.kind == CUT_PRICE && price > cut.best)
                return n;
            struct sw_option *o = &opts[n];
            option_init(e, c, pi, o);
            evaluate_rest(e, s, c, pi, o);
            if (o->excluded != SW_EX_NONE)
                continue;
            n++;
            /* An option waiting for capacity whose wait has a distribution
             * is scored again against the options that start (choose.c),
             * so it does not set the bar they are cut by. */
            bool rescored = o->wait_s > 0 && !o->stay && s->pools[pi].n_capacity_wait_points > 0;
            if (cut.kind == CUT_SCORE && o->deadline_ok && o->score < cut.best && !rescored)
                cut.best = o->score;
            if (cut.kind == CUT_PRICE && o->wait_s <= 0 && price < cut.best)
                cut.best = price;
        }
    return n;
}
