/*
 * choose.c - what each policy picks among a workload's priced options.
 */
#include "placement/engine_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether option a beats b on `key` (lower), ties to staying, then pool order. */
ALWAYS_INLINE bool better(const struct sw_option *a, double ka, const struct sw_option *b,
                          double kb)
{
    if (ka != kb)
        return ka < kb;
    if (a->stay != b->stay)
        return a->stay;
    return a->pool < b->pool;
}

enum pick_key { KEY_SCORE, KEY_COST, KEY_COMPLETION, KEY_LIST_PRICE };

ALWAYS_INLINE double key_of(const struct sw_snapshot *s, const struct sw_option *o, enum pick_key k)
{
    switch (k) {
    case KEY_SCORE:
        return o->score;
    case KEY_COST:
        return o->cost.total;
    case KEY_COMPLETION:
        return o->completion;
    case KEY_LIST_PRICE:
        return s->pools[o->pool].price_gpu_h;
    }
    return 0;
}

/* Filters for pick(). */
enum pick_filter {
    F_ANY,
    F_STAY,
    F_STAY_NOW,        /* local and starts now */
    F_CLOUD,           /* not local */
    F_ON_DEMAND,       /* not local, not spot */
    F_SPOT,            /* not local, spot */
    F_NOW,             /* starts now: no queue, no wait for spot capacity */
    F_DEADLINE,        /* meets the deadline */
    F_DEADLINE_MEDIAN, /* meets the deadline at the runtime's median */
    F_CLOUD_DEADLINE,
};

ALWAYS_INLINE bool passes(const struct sw_snapshot *s, const struct sw_option *o,
                          enum pick_filter f)
{
    enum sw_capacity cap = s->pools[o->pool].capacity;
    switch (f) {
    case F_ANY:
        return true;
    case F_STAY:
        return o->stay;
    case F_STAY_NOW:
        return o->stay && o->wait_s <= 0;
    case F_CLOUD:
        return !o->stay;
    case F_ON_DEMAND:
        return !o->stay && cap != SW_CAP_SPOT;
    case F_SPOT:
        return !o->stay && cap == SW_CAP_SPOT;
    case F_NOW:
        return o->wait_s <= 0;
    case F_DEADLINE:
        return o->deadline_ok;
    case F_DEADLINE_MEDIAN:
        return o->deadline_median_ok;
    case F_CLOUD_DEADLINE:
        return !o->stay && o->deadline_ok;
    }
    return false;
}

ALWAYS_INLINE int pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n,
                       enum pick_filter f, enum pick_key k)
{
    int best = -1;
    double bk = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_option *o = &opts[i];
        if (o->excluded != SW_EX_NONE || !passes(s, o, f))
            continue;
        double ki = key_of(s, o, k);
        if (best < 0 || better(o, ki, &opts[best], bk)) {
            best = (int)i;
            bk = ki;
        }
    }
    return best;
}

/* Marks eligible options a policy never looks at, for the explanation. */
static void exclude_unless(const struct sw_snapshot *s, struct sw_option *opts, size_t n,
                           enum pick_filter f)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].excluded == SW_EX_NONE && !passes(s, &opts[i], f))
            opts[i].excluded = SW_EX_POLICY;
}

/* Waiting-budget policies: stay while within the budget, then on-demand. */
static int choose_wait_then_burst(const struct sw_snapshot *s, struct sw_option *opts, size_t n,
                                  const struct sw_workload *w, double budget_s,
                                  struct sw_decision *d)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].excluded == SW_EX_NONE && passes(s, &opts[i], F_SPOT))
            opts[i].excluded = SW_EX_POLICY;
    int c = pick(s, opts, n, F_STAY_NOW, KEY_COST);
    if (c >= 0) {
        d->why = SW_WHY_FITS_NOW;
        return c;
    }
    double deadline = w->submit_time + budget_s;
    if (s->now < deadline) {
        c = pick(s, opts, n, F_STAY, KEY_COMPLETION);
        if (c >= 0) {
            d->why = SW_WHY_WITHIN_WAIT;
            d->recheck_at = deadline;
            return c;
        }
    }
    c = pick(s, opts, n, F_ON_DEMAND, KEY_COST);
    if (c >= 0) {
        d->why = SW_WHY_WAIT_EXHAUSTED;
        return c;
    }
    d->why = SW_WHY_NO_CLOUD;
    return pick(s, opts, n, F_STAY, KEY_COMPLETION);
}

/* Uniform Progress' test: a Job without a deadline always keeps up; one
 * with a deadline keeps up on spot option `o` while it would finish by the
 * deadline at the runtime's deadline quantile after the pessimistic number
 * of interruptions plus `margin` more. */
static bool spot_keeps_up(const struct sw_snapshot *s, const struct wctx *c,
                          const struct sw_option *o, double margin)
{
    if (c->w->deadline <= 0)
        return true;
    double n = o->cost.interruptions;
    double pessimistic = (n > 0 ? n + 2.0 * sqrt(n) + 1.0 : 0) + margin;
    const struct sw_pool *p = &s->pools[o->pool];
    double lost_s = p->interrupt_per_h > 0 ? c->lost_s + p->provision_s : c->lost_s;
    return o->start + c->runtime_dl_s + pessimistic * lost_s <= c->w->deadline;
}

/*
 * Waiting for spot capacity, weighed over the wait's distribution. An
 * option that waits for a pool's capacity is priced at the mean wait the
 * hub expects; but waits are heavy-tailed (the AWS V100 trace's outages:
 * median 29 min, mean 94 min), and waiting is not a commitment: a Job can
 * wait up to some tau and, if the capacity is still out, take the best
 * option that starts then. With the wait's points w_1..w_K (equally
 * likely), that strategy's expected score is
 *
 *   E(tau) = 1/K x sum over w_i <= tau of score(w_i)
 *          + (#{w_i > tau} / K) x min over the other options a of
 *              (score_a + V x G x max(0, tau - wait_a))
 *
 * where score(w) is the option's score with w in place of the mean. The
 * option gets the lowest E(tau) over tau in {w_i} when it is below its
 * score at the mean (tau = infinity), and its wait becomes tau: the Job is
 * decided again then, or when the capacity returns. Only for a Job without
 * a deadline: the fallback after tau is not checked against one.
 */
static void weigh_capacity_waits(const struct sw_snapshot *s, const struct wctx *c,
                                 struct sw_option *opts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct sw_option *o = &opts[i];
        const struct sw_pool *p = &s->pools[o->pool];
        int K = p->n_capacity_wait_points;
        if (o->excluded != SW_EX_NONE || o->stay || o->wait_s <= 0 || K <= 0)
            continue;
        /* The waiting option's delay is max(transfer, wait) + provisioning. */
        double base = fmax(o->transfer_s, o->wait_s);
        double best = o->score, best_tau = o->wait_s, spot_sum = 0;
        int below = 0;
        for (int k = 0; k < K; k++) {
            double tau = p->capacity_wait_points[k];
            double sk = o->score + c->delay_per_h * (fmax(o->transfer_s, tau) - base) / 3600.0;
            spot_sum += sk;
            below++;
            if (k + 1 < K && p->capacity_wait_points[k + 1] <= tau)
                continue; /* equal points fall on the same side of tau */
            if (tau <= 0 || below == K)
                continue;
            double fb = INFINITY;
            for (size_t a = 0; a < n; a++) {
                const struct sw_option *alt = &opts[a];
                if (a == i || alt->excluded != SW_EX_NONE)
                    continue;
                if (!alt->stay && alt->wait_s > 0 && s->pools[alt->pool].n_capacity_wait_points > 0)
                    continue; /* another waiting option is no fallback */
                double later = fmax(0, tau - alt->wait_s);
                double sa = alt->score + c->delay_per_h * later / 3600.0;
                if (sa < fb)
                    fb = sa;
            }
            if (!isfinite(fb))
                break;
            double e = (spot_sum + (double)(K - below) * fb) / (double)K;
            if (e < best) {
                best = e;
                best_tau = tau;
            }
        }
        o->score = best;
        o->wait_s = best_tau;
    }
}

int sw__choose(const struct sw_snapshot *s, const struct sw_policy *pol, const struct wctx *c,
               struct sw_option *opts, size_t n, struct sw_decision *d)
{
    const struct sw_workload *w = c->w;
    int k;
    if (w->burst == SW_BURST_NEVER) {
        d->why = SW_WHY_BURST_NEVER;
        if (pol->kind == SW_POLICY_COST_AWARE) {
            k = pick(s, opts, n, F_DEADLINE, KEY_SCORE);
            return k >= 0 ? k : pick(s, opts, n, F_ANY, KEY_COMPLETION);
        }
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    }
    switch (pol->kind) {
    case SW_POLICY_COST_AWARE:
        if (w->burst == SW_BURST_CLOUD_FIRST) {
            k = pick(s, opts, n, F_CLOUD_DEADLINE, KEY_SCORE);
            if (k >= 0) {
                d->why = SW_WHY_CLOUD_FIRST;
                return k;
            }
        }
        /* A Job that has waited its bound completes first, whatever the cost. */
        if (s->now - pending_since(w) >= pol->max_wait_s) {
            d->why = SW_WHY_WAIT_EXHAUSTED;
            return pick(s, opts, n, F_ANY, KEY_COMPLETION);
        }
        d->why = SW_WHY_LOWEST_SCORE;
        if (w->deadline <= 0)
            weigh_capacity_waits(s, c, opts, n);
        k = pick(s, opts, n, F_DEADLINE, KEY_SCORE);
        if (k >= 0) {
            /* Staying is decided again when the bound is reached. */
            if (opts[k].wait_s > 0 && isfinite(pol->max_wait_s))
                d->recheck_at = pending_since(w) + pol->max_wait_s;
            return k;
        }
        /* No option keeps the deadline at the belief's 90th percentile
         * (with a learned spread of 2, that is 13 times the median). Then
         * the weaker promise: the lowest score among options that would
         * meet it at the median, the deadline as likely met as not. Only
         * when none would, the earliest completion, whatever it costs.
         * (The earliest completion first, as before, bought on-demand for
         * every such Job: 1,324 of the Alibaba evaluation's, $9,348, half
         * of them missed anyway; docs/cost-model.md.) */
        k = pick(s, opts, n, F_DEADLINE_MEDIAN, KEY_SCORE);
        if (k >= 0) {
            d->why = SW_WHY_DEADLINE_MEDIAN;
            return k;
        }
        d->why = SW_WHY_DEADLINE_BEST;
        return pick(s, opts, n, F_ANY, KEY_COMPLETION);
    case SW_POLICY_LOCAL_ONLY:
        exclude_unless(s, opts, n, F_STAY);
        d->why = SW_WHY_LOCAL_ONLY;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_BURST_NOW:
        for (size_t i = 0; i < n; i++)
            if (opts[i].excluded == SW_EX_NONE && passes(s, &opts[i], F_SPOT))
                opts[i].excluded = SW_EX_POLICY;
        k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_FITS_NOW;
            return k;
        }
        k = pick(s, opts, n, F_ON_DEMAND, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_CONST_WAIT:
        return choose_wait_then_burst(s, opts, n, w, pol->wait_s, d);
    case SW_POLICY_STARBURST:
        return choose_wait_then_burst(s, opts, n, w,
                                      pol->starburst_k * c->runtime_s * (double)c->gpus, d);
    case SW_POLICY_SPOT_ONLY:
        k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_FITS_NOW;
            return k;
        }
        /* Production may not use spot, nor a Job preempted too often; they
         * fall back to on-demand. */
        k = pick(s, opts, n, w->prio == SW_PRIO_PRODUCTION || w->no_spot ? F_ON_DEMAND : F_SPOT,
                 KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_UNIFORM_PROGRESS:
        k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_FITS_NOW;
            return k;
        }
        if (w->prio != SW_PRIO_PRODUCTION) {
            k = pick(s, opts, n, F_SPOT, KEY_COST);
            if (k >= 0 && spot_keeps_up(s, c, &opts[k], pol->up_margin)) {
                d->why = SW_WHY_CHEAPEST;
                return k;
            }
        }
        k = pick(s, opts, n, F_ON_DEMAND, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_GREEDY:
        exclude_unless(s, opts, n, F_NOW);
        k = pick(s, opts, n, F_NOW, KEY_LIST_PRICE);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    default:
        return -1;
    }
}

int sw__burst_now_pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n)
{
    int k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
    return k >= 0 ? k : pick(s, opts, n, F_ON_DEMAND, KEY_COST);
}

int sw__earliest_pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n)
{
    return pick(s, opts, n, F_ANY, KEY_COMPLETION);
}

/* The commonest exclusion among `n` options (for a rejection's reason). */
enum sw_exclusion sw__main_exclusion(const struct sw_option *opts, size_t n)
{
    int count[SW_EX__COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        count[opts[i].excluded]++;
    return sw__main_exclusion_of(count);
}

enum sw_exclusion sw__main_exclusion_of(const int count[SW_EX__COUNT])
{
    /* Other queues' views of a cluster say nothing of why the workload's
     * own options failed: named only when nothing else is. */
    int best = SW_EX_NONE;
    for (int k = 1; k < SW_EX__COUNT; k++)
        if (k != SW_EX_OTHER_QUEUE && (count[k] > count[best] || best == SW_EX_NONE))
            if (count[k] > 0)
                best = k;
    if (best == SW_EX_NONE && count[SW_EX_OTHER_QUEUE] > 0)
        best = SW_EX_OTHER_QUEUE;
    return (enum sw_exclusion)best;
}
