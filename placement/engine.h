/*
 * engine.h - the placement engine: a snapshot in, one decision per pending
 * workload out, each with the options it weighed.
 *
 * The queue is decided as a whole, highest priority first (then first come,
 * first served): each decision consumes the capacity, quota and budget it
 * takes before the next workload is considered, so a later Job can never
 * take what an earlier, higher-priority one was given. The engine is pure:
 * it reads no clock (the snapshot carries `now`), does no I/O and keeps no
 * global state. It reuses its workspace between calls, so a warm engine
 * decides a queue without allocating unless explanations are asked for.
 */
#ifndef SW_PLACEMENT_ENGINE_H
#define SW_PLACEMENT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "placement/cost.h"
#include "placement/model.h"

/** The policies the engine can follow; the baselines exist for comparison. */
enum sw_policy_kind {
    SW_POLICY_COST_AWARE = 0, /* lowest expected cost, value of delay and home congestion */
    SW_POLICY_LOCAL_ONLY,     /* never burst */
    SW_POLICY_BURST_NOW,      /* burst to on-demand as soon as it does not fit */
    SW_POLICY_CONST_WAIT,     /* wait a constant time, then burst to on-demand */
    SW_POLICY_STARBURST,      /* wait k x runtime x GPUs, then burst to on-demand */
    SW_POLICY_SPOT_ONLY,      /* burst to spot only, restarting after interruptions */
    SW_POLICY_GREEDY,         /* cheapest listed price now, ignoring egress */
    /* Deadline-aware spot in the spirit of Uniform Progress (Can't Be Late,
     * NSDI'24): spot while it would still meet the deadline after `margin`
     * more interruptions than the pessimistic count, else on-demand. */
    SW_POLICY_UNIFORM_PROGRESS,
    SW_POLICY__COUNT
};

/** A policy and its one parameter. */
struct sw_policy {
    enum sw_policy_kind kind;
    /* cost-aware: dollars one GPU-hour of delay is worth to the platform;
     * negative (the default): derived from the snapshot, see
     * sw_policy_delay_value. */
    double delay_value_gpu_h;
    /* const-wait: seconds to wait before bursting. */
    double wait_s;
    /* starburst: waiting budget = k x runtime x GPUs. */
    double starburst_k;
    /* uniform-progress: interruptions of slack kept in reserve. */
    double up_margin;
    /* cost-aware: the longest a Job waits before it takes the option that
     * completes first, whatever it costs (the platform's promise that no
     * Job starves; default 24 h). */
    double max_wait_s;
    /* cost-aware: without the deadline guard (docs/cost-model.md, "The
     * deadline guard"), to measure what it costs; default false. */
    bool no_deadline_guard;
};

/**
 * The value of a GPU-hour of delay that cost-aware uses on snapshot `s`:
 * the policy's own when it sets one, else the cheapest on-demand list price
 * among the pools (ending any wait by renting on-demand GPUs is always on
 * offer, so the platform's price for not waiting is that price; see
 * docs/cost-model.md), else the dearest non-owned price, else 0.
 */
double sw_policy_delay_value(const struct sw_policy *p, const struct sw_snapshot *s);

/** Fills `p` with `kind` and its default parameter. */
void sw_policy_default(enum sw_policy_kind kind, struct sw_policy *p);
/** Returns the policy's name ("cost-aware", "local-only", "burst-now", ...). */
const char *sw_policy_name(enum sw_policy_kind kind);
/**
 * Parses "NAME" or "NAME:VALUE" (the policy's parameter) into `p`.
 * Returns 0, or SW_EINVAL with a message naming the policy in `err`.
 */
int sw_policy_parse(const char *s, struct sw_policy *p, struct sw_error *err);

/** Why an option was not eligible. */
enum sw_exclusion {
    SW_EX_NONE = 0,
    SW_EX_PRODUCT,         /* GPU product not among the accepted ones */
    SW_EX_GPU_MEMORY,      /* GPU memory below the minimum */
    SW_EX_INTERCONNECT,    /* missing a required interconnect */
    SW_EX_BURST_NEVER,     /* workload may not leave its cluster */
    SW_EX_PRODUCTION_SPOT, /* production never goes to spot */
    SW_EX_MAX_PRICE,       /* price above the workload's cap */
    SW_EX_NEVER_FITS,      /* more GPUs than the pool can ever have */
    SW_EX_CAPACITY,        /* no free or autoscalable GPUs left now */
    SW_EX_QUOTA,           /* team quota (nominal, borrowing, cohort) */
    SW_EX_BUDGET,          /* team budget would be exceeded */
    SW_EX_NO_ROUTE,        /* an input cannot reach the pool's region */
    SW_EX_POLICY,          /* the policy does not consider this option */
    SW_EX_PREEMPTED,       /* preempted its allowed number of times: no more spot */
    SW_EX_MIG_PROFILE,     /* the pool does not offer the workload's MIG profile */
    SW_EX_OTHER_QUEUE,     /* another queue's view of the cluster (struct sw_pool, queue_only) */
    SW_EX_HOME_QUEUE,      /* its queue at home cannot admit it (sw_workload, home_unqueued) */
    SW_EX__COUNT
};

/** One option weighed for a workload: a pool, what it costs, when it ends. */
struct sw_option {
    int pool;  /* index into the snapshot's pools */
    bool stay; /* the pool is in the workload's own cluster */
    enum sw_exclusion excluded;
    int detail; /* SW_EX_QUOTA: an enum sw_quota_verdict */
    struct sw_cost_breakdown cost;
    double wait_s;           /* queueing before it can start */
    double provision_s;      /* autoscaling delay (0 when GPUs are free) */
    double transfer_s;       /* moving inputs into the region */
    double start;            /* absolute time the GPUs start */
    double completion;       /* absolute expected completion time */
    double score;            /* what the policy minimised (cost-aware: $) */
    double congestion;       /* of which the home queue's congestion ($; 0 unless it waits) */
    bool deadline_ok;        /* meets it at the runtime's SW_DEADLINE_QUANTILE */
    bool deadline_median_ok; /* meets it at the runtime's median (the fallback promise) */
    int borrowed;            /* GPUs borrowed from the cohort */
};

/** What happens to a workload. */
enum sw_verdict { SW_VERDICT_STAY = 0, SW_VERDICT_BURST, SW_VERDICT_REJECT };

/** Why the verdict. */
enum sw_why {
    SW_WHY_LOWEST_SCORE = 0, /* lowest expected cost plus delay */
    SW_WHY_FITS_NOW,         /* fits locally now */
    SW_WHY_WITHIN_WAIT,      /* still inside its waiting budget */
    SW_WHY_WAIT_EXHAUSTED,   /* waited its budget; bursting */
    SW_WHY_CHEAPEST,         /* cheapest eligible option for the policy */
    SW_WHY_LOCAL_ONLY,       /* policy never bursts */
    SW_WHY_BURST_NEVER,      /* workload may not burst */
    SW_WHY_CLOUD_FIRST,      /* workload prefers the cloud */
    SW_WHY_NO_CLOUD,         /* policy wanted to burst; nothing eligible, so it stays */
    SW_WHY_DEADLINE_BEST,    /* no option meets the deadline: earliest completion */
    SW_WHY_NO_OPTION,        /* rejected: no eligible option */
    SW_WHY_NO_RUNTIME,       /* rejected: runtime unknown and nothing to learn from */
    SW_WHY_DEADLINE_MEDIAN,  /* no option meets the deadline at the quantile; lowest score at the
                                median */
    SW_WHY_DEADLINE_PREEMPT, /* no option meets the deadline: starting at home now, ahead of the
                                queue, stopping running Jobs without one if need be, completes
                                first */
    SW_WHY_DEADLINE_GUARD,   /* waiting could lose a deadline burst-now keeps: burst-now's
                                option, now (docs/cost-model.md, "The deadline guard") */
    SW_WHY__COUNT
};

/** The engine's answer for one pending workload. */
struct sw_decision {
    size_t workload; /* index into the snapshot's pending array */
    size_t rank;     /* position in the decision order (0 first) */
    enum sw_verdict verdict;
    enum sw_why why;
    int pool;                /* chosen pool, -1 when rejected */
    struct sw_option chosen; /* valid unless rejected */
    double runtime_s;        /* the runtime used (given or learned) */
    bool runtime_learned;
    enum sw_exclusion main_exclusion; /* when rejected: the commonest reason */
    double recheck_at;                /* when a stay should be decided again; 0: on change */
    /* With SW_DECIDE_EXPLAIN: every pool considered, in pool order. Borrowed
     * from the engine, valid until its next sw_engine_decide or free. */
    const struct sw_option *options;
    size_t n_options;
    /* SW_WHY_DEADLINE_PREEMPT: the running Jobs it stops, as indexes into
     * the `running` array of local queue `preempt_queue` (an index into the
     * snapshot's queues). Borrowed like `options`; n_preempt 0 otherwise. */
    const int *preempt;
    size_t n_preempt;
    int preempt_queue;
};

/** Flags for sw_engine_decide. */
enum { SW_DECIDE_EXPLAIN = 1u << 0 };

struct sw_engine;

/** Creates an engine (opaque, owned by the caller; free with sw_engine_free). */
int sw_engine_new(struct sw_engine **out);
/** Frees an engine and every option it handed out. NULL is fine. */
void sw_engine_free(struct sw_engine *e);

/**
 * Decides every pending workload of `s` (borrowed) under `policy`.
 * `out` (caller-owned, s->n_pending entries) receives decision i for
 * workload i. The snapshot is validated first; bad input returns SW_EINVAL
 * or SW_ENOENT with a message naming the object and field, and nothing is
 * decided. SW_ENOMEM if the workspace cannot grow.
 */
int sw_engine_decide(struct sw_engine *e, const struct sw_snapshot *s,
                     const struct sw_policy *policy, unsigned flags, struct sw_decision *out,
                     struct sw_error *err);

/** Short text for an exclusion, e.g. "production never goes to spot". */
const char *sw_exclusion_text(enum sw_exclusion ex);
/** Short stable token for an exclusion, e.g. "production-spot" (for JSON). */
const char *sw_exclusion_token(enum sw_exclusion ex);
/** Short text for a reason. */
const char *sw_why_text(enum sw_why why);
/** Short stable token for a reason (for JSON). */
const char *sw_why_token(enum sw_why why);
/** "stay", "burst" or "reject". */
const char *sw_verdict_name(enum sw_verdict v);

#endif
