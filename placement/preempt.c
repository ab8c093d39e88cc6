/*
 * preempt.c - a deadline's guard and making room at home. The guard keeps
 * cost-aware from losing a deadline bursting at once would keep: a Job
 * that does not start for sure waits only while bursting is still in time,
 * or while its home start is certain. Making room: when no option meets a
 * Job's deadline, stopping running Jobs without one so that it starts at
 * home now, if that completes before every other option.
 */
#include "placement/engine_internal.h"

#include "common/assert.h"

#include <math.h>
#include <stdlib.h>

/* Candidates: t holds the work stopping them loses (GPU-seconds), run
 * their place in the heap. Least lost first, then heap order. */
static int by_loss(const void *a, const void *b)
{
    const struct release *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->run > y->run) - (x->run < y->run);
}

/* The GPUs of home queue `qi` to take for `need` beyond the `avail` free
 * now: first those released already (an earlier stop's spare GPUs, idle
 * now though the queue's cursor is later), then the preemptible running
 * Jobs', least work lost first. Into e->pre_cand (t: the work lost, run:
 * the heap position), *m of them. Returns whether they are enough. */
static bool plan(struct sw_engine *e, const struct sw_snapshot *s, size_t qi, int need, int avail,
                 size_t *m)
{
    const struct lq *q = &e->lqs[qi];
    const struct sw_local_queue *sq = &s->queues[qi];
    size_t n = 0;
    for (size_t h = 0; h < q->n; h++) {
        struct release r = q->h[h];
        if (r.gpus <= 0)
            continue;
        if (r.run < 0 && r.t <= s->now)
            e->pre_cand[n++] = (struct release){0, r.gpus, (int)h};
        else if (r.run >= 0 && r.t > s->now && sq->running[r.run].preemptible)
            e->pre_cand[n++] =
                (struct release){sq->running[r.run].lost_s * (double)r.gpus, r.gpus, (int)h};
    }
    qsort(e->pre_cand, n, sizeof(*e->pre_cand), by_loss);
    long long got = avail;
    size_t k = 0;
    while (got < need && k < n)
        got += e->pre_cand[k++].gpus;
    *m = k;
    return got >= need;
}

int sw__make_room(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                  struct sw_option *opts, size_t n, int k, struct sw_decision *d)
{
    const double now = s->now;
    if (c->mig >= 0 || c->w->deadline <= 0)
        return k;
    /* The home option that, started now, completes first, and before the
     * option chosen; ties to the lower pool index, as options come in
     * pool order only when explained. An option that waits for nothing
     * but its inputs has nothing to gain. */
    double best = opts[k].completion;
    int pick = -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_option *o = &opts[i];
        if (o->excluded != SW_EX_NONE || !o->stay || !(o->start > now + o->transfer_s))
            continue;
        const struct pool_rt *p = &e->pools[o->pool];
        if (p->queue < 0 || (size_t)p->queue >= s->n_queues)
            continue;
        double done = o->completion - (o->start - (now + o->transfer_s));
        if (!(done < opts[k].completion) ||
            (pick >= 0 && !(done < best || (done == best && o->pool < opts[pick].pool))))
            continue;
        const struct lq *q = &e->lqs[p->queue];
        if (!plan(e, s, (size_t)p->queue, demand(c, p), q->cursor <= now ? q->free : 0, &m) ||
            m == 0)
            continue;
        best = done;
        pick = (int)i;
    }
    if (pick < 0)
        return k;
    struct sw_option *o = &opts[pick];
    const struct pool_rt *p = &e->pools[o->pool];
    size_t qi = (size_t)p->queue;
    struct lq *q = &e->lqs[qi];
    int need = demand(c, p), avail = q->cursor <= now ? q->free : 0;
    bool ok = plan(e, s, qi, need, avail, &m);
    sw_assert(ok);
    /* Stop them: their GPUs are free now, and their releases free none. */
    d->preempt = e->preempt + e->preempt_n;
    d->preempt_queue = (int)qi;
    int freed = 0;
    size_t stopped = 0;
    for (size_t i = 0; i < m; i++) {
        struct release *r = &q->h[e->pre_cand[i].run];
        if (r->run >= 0) {
            e->preempt[e->preempt_n++] = r->run;
            stopped++;
        }
        freed += r->gpus;
        r->gpus = 0;
    }
    d->n_preempt = stopped;
    /* The Job takes what is free now first, then what they free; the rest
     * is free now too. */
    int take = avail < need ? avail : need, surplus = take + freed - need;
    q->free -= take;
    q->idle -= take < q->idle ? take : q->idle;
    if (surplus > 0) {
        if (q->cursor <= now) {
            q->free += surplus;
            q->idle += surplus;
        } else {
            sw__lq_push(q, (struct release){now, surplus, -1});
        }
    }
    double out_s = o->completion - o->start - c->runtime_s;
    o->wait_s = 0;
    o->start = now + o->transfer_s;
    o->completion = best;
    o->congestion = 0;
    if (c->w->deadline > 0) {
        o->deadline_ok = o->start + c->runtime_dl_s + out_s <= c->w->deadline;
        o->deadline_median_ok = o->start + c->runtime_med_s + out_s <= c->w->deadline;
    }
    o->score = o->cost.total + c->delay_per_h * (best - now - c->runtime_s) / 3600.0;
    sw__lq_push(q, (struct release){best, need, -1});
    q->version++;
    d->why = SW_WHY_DEADLINE_PREEMPT;
    return pick;
}

/* Whether option `o` starts when it says: at home on GPUs free now (its
 * wait then holds only its inputs' transfer), or in the cloud after
 * nothing but its lead (provisioning and inputs). Spot's interruptions
 * are weighed by the deadline test (options.c). */
static bool starts_for_sure(const struct sw_snapshot *s, const struct sw_option *o)
{
    return o->stay ? !(o->start > s->now + o->transfer_s) : o->wait_s <= 0;
}

/* Whether making room could start `c` now at home on one of its options. */
static bool home_start_sure(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                            const struct sw_option *opts, size_t n)
{
    if (c->mig >= 0)
        return false; /* MIG slices are not made room for */
    size_t m;
    for (size_t i = 0; i < n; i++) {
        const struct sw_option *o = &opts[i];
        if (o->excluded != SW_EX_NONE || !o->stay)
            continue;
        const struct pool_rt *p = &e->pools[o->pool];
        if (p->queue < 0 || (size_t)p->queue >= s->n_queues)
            continue;
        const struct lq *q = &e->lqs[p->queue];
        if (plan(e, s, (size_t)p->queue, demand(c, p), q->cursor <= s->now ? q->free : 0, &m))
            return true;
    }
    return false;
}

/* Prices the candidate pools of `cand` that `opts` lacks, spot aside (the
 * cutoff passes over pools that cannot beat the choice): the guard weighs
 * burst-now's choice, a certain start at home and the earliest completion
 * among them, as an explained decision, which prices every pool, does.
 * Appends the eligible ones. */
static void price_fallbacks(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                            const uint64_t *cand, struct sw_option *opts, size_t *n)
{
    for (size_t wi = 0; wi < e->words; wi++)
        for (uint64_t m = cand[wi]; m; m &= m - 1) {
            size_t pi = e->rank_pool[wi * 64 + (size_t)__builtin_ctzll(m)];
            if (e->pools[pi].cap == SW_CAP_SPOT)
                continue;
            bool have = false;
            for (size_t i = 0; i < *n && !have; i++)
                have = opts[i].pool == (int)pi;
            if (have)
                continue;
            sw__evaluate(e, s, c, pi, &opts[*n]);
            if (opts[*n].excluded == SW_EX_NONE)
                (*n)++;
        }
}

static void recheck_by(struct sw_decision *d, double t)
{
    if (!(d->recheck_at > 0) || t < d->recheck_at)
        d->recheck_at = t;
}

/* Slack on "its start is due": a decision this close before the moment
 * bursting would have started the Job acts as at that moment. */
#define START_DUE_SLACK_S 1.0

int sw__keep_deadline(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                      const uint64_t *cand, struct sw_option *opts, size_t *n, int k,
                      struct sw_decision *d)
{
    const struct sw_workload *w = c->w;
    const double now = s->now;
    if (w->deadline <= 0 || w->burst == SW_BURST_NEVER)
        return k;
    /* The next decision may come this late: what must happen before a
     * moment that comes sooner happens now. */
    const double next = now + s->decide_every_s;
    /* Kept as chosen: a start at home now, or a start for sure that keeps
     * the deadline at the quantile (spot after its pessimistic
     * interruptions). */
    bool sure = starts_for_sure(s, &opts[k]);
    if (sure && (opts[k].stay || opts[k].deadline_ok))
        return k;
    if (cand != NULL)
        price_fallbacks(e, s, c, cand, opts, n); /* appends: opts[k] stays */
    int b = sw__burst_now_pick(s, opts, *n);
    if (b < 0)
        return k; /* burst-now would wait at home too */
    const struct sw_option *o = &opts[b];
    /* Burst-now's option, taken at `t`, starts at t + lead and completes
     * by the deadline at the quantile when t <= last; taken when the Job
     * was queued, it would have started at `start_by`. */
    double lead = o->start - now;
    double out_s = o->completion - o->start - c->runtime_s;
    double last = w->deadline - c->runtime_dl_s - out_s - lead;
    double start_by = fmax(pending_since(w), last) + lead;
    bool interruptible = s->pools[opts[k].pool].capacity == SW_CAP_SPOT;
    if (sure && !interruptible && opts[k].start <= start_by + START_DUE_SLACK_S)
        return k; /* on-demand, started no later than bursting would */
    if (next < last) {
        if (!sure) {
            recheck_by(d, last); /* bursting is still in time: decided again then */
            return k;
        }
        /* Spot short of the promise; burst-now's option keeps it. */
        d->why = SW_WHY_DEADLINE_GUARD;
        d->recheck_at = 0;
        return b;
    }
    if (next + START_DUE_SLACK_S < start_by) {
        /* Waiting at home is kept while a start there is certain by then
         * (decided again at that moment); with none certain, burst-now's
         * option now; another choice with one certain makes room now. */
        bool home_sure = home_start_sure(e, s, c, opts, *n);
        if (home_sure && opts[k].stay) {
            recheck_by(d, start_by);
            return k;
        }
        /* Burst-now's option, when it is likely to keep the deadline
         * (at the median); when it is not, burst-now would likely lose it
         * too, and the policy's choice stands. */
        if (!home_sure) {
            if (!o->deadline_median_ok)
                return k;
            d->why = SW_WHY_DEADLINE_GUARD;
            d->recheck_at = 0;
            return b;
        }
    }
    /* Its start is due: the earliest completion, room made if need be. */
    d->why = SW_WHY_DEADLINE_BEST;
    d->recheck_at = 0;
    int f = sw__earliest_pick(s, opts, *n);
    return f >= 0 ? f : k;
}
