/*
 * engine_internal.h - what the engine's files share and nothing else sees:
 * the workspace (struct sw_engine), the local queues, the per-workload
 * context, and the functions each file gives the decision loop
 * (placement/engine.c):
 *
 *   policy.c      policies, their parameters and the texts of reasons
 *   prepare.c     the tables of one call: pools, regions, links, quotas,
 *                 budgets, local queues, pool sets, the decision order
 *   order.c       the decision order (priority, then first come)
 *   localq.c      the local-queue forecast: when N GPUs could start
 *   candidates.c  the pools worth pricing for a workload
 *   options.c     pricing an option: capacity, quota, egress, times, cost
 *   choose.c      what each policy picks among the priced options
 *
 * Internal to placement/: names are sw__, no contract beyond this module.
 */
#ifndef SW_PLACEMENT_ENGINE_INTERNAL_H
#define SW_PLACEMENT_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "placement/engine.h"
#include "placement/index.h"
#include "placement/quota.h"

/* For the few small functions of the option loop that must inline whatever
 * the compiler thinks of their size: each is called with constant
 * arguments that fold away. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Starburst's k: waiting budget = k x runtime x GPUs. */
#define POLICY_MAX_K 1e6

/* ---- Local queues ------------------------------------------------------ */

struct release {
    double t;
    int gpus;
    int run; /* a running Job of the snapshot's queue (its index), -1 otherwise */
};

/* The FIFO queue of one pool: GPUs free at `cursor`, releases after it.
 * Backfilling: `idle` GPUs are idle now and taken by no Job started now;
 * `head` is the start of the first Job that queued (INFINITY while none
 * has). A Job may take idle GPUs now, ahead of the queue, if it holds them
 * no later than `head`: the queued Jobs' starts are then unchanged. */
#define PEEK_CACHE 33

struct lq {
    struct release *h; /* min-heap on t */
    size_t n, cap;
    double cursor;
    int free;
    int total;
    int idle;
    double head;
    /* Dollars per billed GPU-hour added to the score of a Job that would
     * wait here: what the Jobs it keeps from these GPUs pay elsewhere
     * (prepare.c, queue_congestion). */
    double congestion;
    /* Start times already answered since the last commit, per GPU count:
     * most workloads ask the same few sizes of an unchanged queue. */
    unsigned version;
    unsigned cache_v[PEEK_CACHE];
    double cache_t[PEEK_CACHE];
};

/* A node of the release heap, for peeking at its smallest entries. */
struct peek_node {
    double t;
    size_t i;
};

/* ---- The engine ------------------------------------------------------- */

/* A workload's place in the decision order: priority class (highest
 * first, so stored as 3 - class), then submit time as an unsigned integer
 * that sorts like the double, then name, then index. */
struct order_key {
    uint64_t submit;
    size_t idx;
    unsigned prio;
};

/* Radix sort passes: the 8 bytes of the submit time, then the priority. */
#define RADIX_PASSES 9

/* What the option loop reads of a pool, packed: the snapshot's struct
 * sw_pool is mostly names, and scanning it for a few numbers a million
 * times per call costs cache misses. */
struct pool_rt {
    double price;       /* per GPU-hour */
    double rate;        /* interruptions per hour (0 for owned capacity) */
    double provision_s; /* delay to add capacity */
    double provision_h;
    double mem; /* GPU memory, GB */
    int cluster, region, product, flavour;
    int queue; /* local queue index, -1 none */
    int total, max;
    int free, room;    /* idle GPUs now, and GPUs autoscaling may still add */
    double cap_wait_s; /* > 0: no GPU can be added before this many seconds */
    unsigned ic;
    enum sw_capacity cap;
    bool milli;      /* time-sliced: counts in milli-GPUs (struct sw_pool) */
    bool queue_only; /* only for the workloads naming it in their queue_pools */
    int mig0, n_mig; /* its MIG offers: e->migs[mig0 .. mig0 + n_mig) */
};

/* One MIG profile a pool offers, for this call (struct sw_mig_offer). */
struct mig_rt {
    int profile; /* id in e->mig_names */
    int per_gpu;
    int max;  /* the most slices it can ever have: now and what autoscaling adds */
    int free; /* idle slices now (the pool's room adds per_gpu per GPU) */
    int lq;   /* its local queue in e->lqs (pools with a local queue), -1 none */
};

/* Capacity levels: a pool is in level b of the capacity sets when it may
 * still take 2^b GPUs, so a workload of g GPUs need look only at level
 * floor(log2 g). */
#define CAP_LEVELS 32

/* A small cache of pool sets computed for one attribute value. */
#define SET_CACHE 4
struct set_cache {
    double key[SET_CACHE];
    bool used[SET_CACHE];
    unsigned next;
};

struct sw_engine {
    struct order_key *order, *order_tmp;
    size_t order_cap, order_tmp_cap;
    size_t radix[RADIX_PASSES][256];
    struct pool_rt *pools;
    size_t pool_cap;
    struct lq *lqs;
    size_t lq_cap, n_lqs;
    struct release *scratch;
    size_t scratch_cap;
    struct peek_node *peek; /* lq_peek's frontier */
    size_t peek_cap;
    /* The running Jobs each decision stops (SW_WHY_DEADLINE_PREEMPT), one
     * list after another: a Job is stopped once per call, so all of them
     * fit; and the candidates one decision weighs, at most a queue's heap
     * (sized as the scratch). */
    int *preempt;
    size_t preempt_n, preempt_cap;
    struct release *pre_cand;
    size_t pre_cand_cap;
    struct sw__index idx; /* pools, clusters, flavours and teams as ids */
    struct sw__intern regions, products;
    struct sw__intern mig_names; /* MIG profiles offered */
    struct mig_rt *migs;
    size_t mig_cap;
    /* Region x region: egress price per GB and seconds per GB. */
    double *link_price, *link_spg;
    size_t mat_cap;
    /* Per region for the current workload, with a stamp for laziness. */
    double *eg_cost, *eg_time;
    unsigned *eg_stamp;
    size_t eg_cap;
    unsigned stamp;
    /* Quotas. */
    struct sw_quota_state *qs;
    struct sw_quota_group *qg;
    size_t q_cap;
    int *team_quota; /* team x flavour -> quota index, -1 none */
    bool *team_has_quota;
    double *budget_left;
    size_t team_cap, tq_cap;
    double *hist;
    size_t hist_cap;
    /* Options: one row per workload when explaining, else one row. */
    struct sw_option *opts;
    size_t opts_cap;
    /* Pool sets: one bit per pool, `words` 64-bit words per set. Bit r
     * stands for the pool of rank r in list price order (ties by index),
     * so that candidates come out cheapest first. */
    size_t np, words;
    size_t *rank_pool, *pool_rank;
    size_t rank_pool_cap, pool_rank_cap;
    uint64_t *sets;
    size_t sets_cap;
    uint64_t *set_all, *set_spot, *set_cap, *set_prod, *set_cluster, *set_team;
    uint64_t *set_mem, *set_ic, *set_price, *set_cand;
    uint64_t *set_mig;        /* per MIG profile id: the pools offering it */
    uint64_t *set_queue_only; /* the pools only their own workloads may use (queue_only) */
    struct set_cache mem_cache, ic_cache, price_cache;
};

/* Everything about one workload the option loop needs, resolved once. */
struct wctx {
    const struct sw_workload *w;
    int gpus;             /* whole GPUs: a share takes one on a pool that is not time-sliced */
    int milli;            /* what it takes of a time-sliced pool, in milli-GPUs (capped) */
    double share_h;       /* the fewest GPUs it may be billed anywhere (a share, or slices) */
    int mig;              /* its MIG profile's id in e->mig_names; -1 whole GPUs or shares */
    bool mig_unknown;     /* asked for a MIG profile no pool offers */
    double runtime_s;     /* expected runtime over the estimate's distribution */
    double runtime_dl_s;  /* its SW_DEADLINE_QUANTILE quantile, for deadlines */
    double runtime_med_s; /* its median: the weaker promise when no option keeps that one */
    int out_region;       /* where outputs return (-1: none or unknown) */
    int origin;
    const int *qp; /* its queue_pools' indexes, nqp of them */
    int nqp;
    int team;
    uint64_t product_mask; /* 0: any product */
    bool product_unknown;  /* asked only for products no pool has */
    /* Hours, as the cost model takes them, and the work lost per
     * interruption (the same for every pool). */
    double rt_h, lost_h, lost_s;
    /* The work one interruption loses at its worst moment, just before a
     * checkpoint: the whole interval (the whole run without checkpoints)
     * and the restart. Deadlines are tested with it (options.c). */
    double worst_lost_s;
    double delay_per_h; /* the policy's value of an hour of delay, for all GPUs */
    /* Region ids of the inputs' copies (-1: unknown), resolved on first use. */
    bool src_resolved;
    int src[SW_MAX_INPUTS][SW_MAX_INPUT_REGIONS];
};

/* Seconds of work and waiting one interruption costs on pool `p`: the
 * workload's lost work and restart, plus the replacement's provisioning
 * (only pools with interruptions have any). */
static inline double lost_per_interruption(const struct wctx *c, const struct pool_rt *p)
{
    return p->rate > 0 ? c->lost_s + p->provision_s : c->lost_s;
}

static inline void set_bit(uint64_t *set, size_t i)
{
    set[i / 64] |= (uint64_t)1 << (i % 64);
}

static inline void clear_bit(uint64_t *set, size_t i)
{
    set[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* The offer of pool `p` for workload `c`'s MIG profile; NULL when it has
 * none (or `c` asks for no MIG profile). */
static inline struct mig_rt *mig_offer(const struct sw_engine *e, const struct wctx *c,
                                       const struct pool_rt *p)
{
    for (int k = 0; k < p->n_mig; k++)
        if (e->migs[p->mig0 + k].profile == c->mig)
            return &e->migs[p->mig0 + k];
    return NULL;
}

/* The GPUs `c`'s slices bill on offer `m`: each 1 / per_gpu of a GPU. */
static inline double mig_billed(const struct wctx *c, const struct mig_rt *m)
{
    return (double)c->gpus / (double)m->per_gpu;
}

/* The capacity workload `c` takes of pool `p`, in the pool's units. */
static inline int demand(const struct wctx *c, const struct pool_rt *p)
{
    return p->milli ? c->milli : c->gpus;
}

/* The GPUs workload `c` is billed for on pool `p`: a share on a
 * time-sliced pool, else whole GPUs (a cloud pool renting whole GPUs bills
 * a share as one: packing burst Jobs together is not modelled). */
static inline double billed_gpus(const struct wctx *c, const struct pool_rt *p)
{
    return p->milli ? c->share_h : (double)c->gpus;
}

/* The same at an interruption's worst moment, for deadline tests. */
static inline double worst_lost_per_interruption(const struct wctx *c, const struct pool_rt *p)
{
    return p->rate > 0 ? c->worst_lost_s + p->provision_s : c->worst_lost_s;
}

/* The capacity a pool shows the sets: what a burst may take (idle plus
 * autoscaling room), or for a queued pool at least its size, since its own
 * cluster's Jobs queue for it. */
static inline int cap_hint(const struct pool_rt *p)
{
    int burst = p->free + p->room;
    return p->queue >= 0 && p->total > burst ? p->total : burst;
}

/* Moves pool `pi` down the capacity levels after its hint fell from `old`. */
static inline void cap_levels_update(struct sw_engine *e, size_t pi, int old)
{
    int now = cap_hint(&e->pools[pi]);
    for (int b = 0; b < CAP_LEVELS && ((int64_t)1 << b) <= old; b++)
        if (((int64_t)1 << b) > now)
            clear_bit(e->set_cap + (size_t)b * e->words, e->pool_rank[pi]);
}

/* When the workload was last queued: its wait is bounded from then. */
/* What a burst of `w` costing `total` takes from its team's budget. */
static inline double sw__budget_charge(const struct sw_workload *w, double total)
{
    return w->budget_reserve > 1 ? total * w->budget_reserve : total;
}

static inline double pending_since(const struct sw_workload *w)
{
    return w->pending_since > w->submit_time ? w->pending_since : w->submit_time;
}

/** Whether a policy's parameters are within the bounds that keep scores finite. */
bool sw__policy_params_ok(const struct sw_policy *p);

/** Sizes the workspace and builds the tables of one call (prepare.c). */
int sw__prepare(struct sw_engine *e, const struct sw_snapshot *s, bool explain,
                struct sw_error *err);

/** A double's bits as an unsigned integer in the same order (order.c). */
uint64_t sw__order_bits(double d);

/** Sorts the decision order; `tmp` has n entries (order.c). */
void sw__sort_order(struct sw_engine *e, struct order_key *a, struct order_key *tmp, size_t n,
                    const struct sw_workload *pending);

/** Adds a release to queue `q`'s heap; the heap has room (localq.c). */
void sw__lq_push(struct lq *q, struct release r);

/**
 * When `gpus` GPUs could start on queue `q`, at the earliest `now`; with
 * `commit` the Job is queued and holds them until start + `hold`. A Job
 * that would hold idle GPUs for at most `bf_hold` seconds starts now, ahead
 * of the queue, when that ends by the first queued Job's start (backfill;
 * `bf_hold` < 0: never) (localq.c).
 */
double sw__lq_start(struct sw_engine *e, struct lq *q, int gpus, double now, bool commit,
                    double hold, double bf_hold);

/** The candidate pools of workload `c`, as a set of e->words words (candidates.c). */
const uint64_t *sw__workload_candidates(struct sw_engine *e, const struct wctx *c);

/**
 * The pools that pass the exclusions fixed by the workload and the pool's
 * attributes (options.c, fixed_exclusion), with how many pools each of
 * those exclusions takes out added to `count` (candidates.c).
 */
const uint64_t *sw__fixed_pass_counted(struct sw_engine *e, const struct wctx *c,
                                       int count[SW_EX__COUNT]);

/** Prices pool `pi` for `c` into `o`, every exclusion in order (options.c). */
void sw__evaluate(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c, size_t pi,
                  struct sw_option *o);

/**
 * Prices the candidate pools `cand` cheapest first into `opts`, keeping the
 * eligible ones, stopping when the rest cannot matter; returns how many
 * (options.c).
 */
size_t sw__evaluate_candidates(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                               const struct sw_policy *pol, const uint64_t *cand,
                               struct sw_option *opts);

/**
 * Prices every pool for a rejection's reason: packs the eligible options
 * into `opts` and returns how many, and adds each other pool's exclusion to
 * `count` (options.c).
 */
size_t sw__evaluate_all_counted(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                                struct sw_option *opts, int count[SW_EX__COUNT]);

/** The option policy `pol` picks among `n` (-1: none), with d->why set (choose.c). */
int sw__choose(const struct sw_snapshot *s, const struct sw_policy *pol, const struct wctx *c,
               struct sw_option *opts, size_t n, struct sw_decision *d);

/**
 * Cost-aware's last resort for a deadline no option meets (d->why is
 * SW_WHY_DEADLINE_BEST, option `k` chosen): when stopping preemptible
 * running Jobs at home starts the workload there now and so completes it
 * before option `k`, stops them (their GPUs taken from the home queue, the
 * list in d->preempt) and returns that home option, rewritten to start
 * now; else returns `k` (preempt.c).
 */
int sw__make_room(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                  struct sw_option *opts, size_t n, int k, struct sw_decision *d);

/**
 * What burst-now would pick among `n` options: at home if it starts now,
 * else the cheapest on-demand option (-1: neither) (choose.c).
 */
int sw__burst_now_pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n);

/** The eligible option that completes first (-1: none) (choose.c). */
int sw__earliest_pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n);

/**
 * Cost-aware's promise to a workload with a deadline: none lost that
 * bursting at once would keep, to the runtime's SW_DEADLINE_QUANTILE
 * (docs/cost-model.md, "The deadline guard"). Option `k` stands when it
 * starts at home now, starts for sure and keeps the deadline at the
 * quantile, or is on-demand started no later than burst-now's option
 * would have. Else, while bursting stays in time, a waiting `k` stands
 * (d->recheck_at: that moment) and spot short of the quantile gives way
 * to burst-now's option (SW_WHY_DEADLINE_GUARD); after it, waiting at home
 * stands while a start there is certain (GPUs free now, or preemptible
 * running Jobs), else burst-now's option when it keeps the deadline at
 * the median; once the start is due, the earliest completion
 * (SW_WHY_DEADLINE_BEST, for sw__make_room). Moments are taken
 * s->decide_every_s early. `cand` (NULL when every pool is priced in
 * `opts`) names the candidate pools: those the cutoff passed over, spot
 * aside, are priced and appended to `opts` (*n grows; opts[k] stays).
 * Returns the option to take (preempt.c).
 */
int sw__keep_deadline(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                      const uint64_t *cand, struct sw_option *opts, size_t *n, int k,
                      struct sw_decision *d);

/** The commonest exclusion among `n` options (choose.c). */
enum sw_exclusion sw__main_exclusion(const struct sw_option *opts, size_t n);

/** The commonest exclusion of `count`, options per exclusion (choose.c). */
enum sw_exclusion sw__main_exclusion_of(const int count[SW_EX__COUNT]);

#endif
