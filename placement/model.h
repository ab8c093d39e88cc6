/*
 * model.h - the placement engine's input: workloads, pools, quotas, budgets
 * and the local queues, as one immutable snapshot.
 *
 * Everything here is plain data with fixed-size names, so that a snapshot
 * can be built on the stack or in one array and copied without pointer
 * chasing. Times are seconds on one caller-chosen axis (the controller uses
 * Unix time, the simulator seconds since the trace started); durations are
 * seconds; prices are dollars per GPU-hour and dollars per GB. The engine
 * never reads a clock: `now` is a field of the snapshot.
 */
#ifndef SW_PLACEMENT_MODEL_H
#define SW_PLACEMENT_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/limits.h"

#define SW_PRODUCT_MAX  SW_GPU_PRODUCT_MAX
#define SW_MAX_PRODUCTS 4
/* A MIG profile's name as the device plugin's resource carries it after
 * "nvidia.com/mig-" ("1g.10gb", "3g.40gb", "1g.10gb+me"), and how many
 * profiles one pool may offer. */
#define SW_MIG_PROFILE_MAX 24
#define SW_MAX_MIG         4
/* The most slices of one profile a GPU is partitioned into (A100, H100). */
#define SW_MIG_MAX_PER_GPU 7
#define SW_MAX_INPUTS      4
/* Queue pools one workload may name (struct sw_workload). */
#define SW_MAX_QUEUE_POOLS   8
#define SW_MAX_INPUT_REGIONS 4

/*
 * Bounds on the snapshot's numbers, far past any real value, that keep the
 * cost model's arithmetic finite: GPUs (at most 1e8 per workload) x price x
 * hours x interruptions, with every factor at its bound, stays below 1e45.
 * A NaN would otherwise win or lose every comparison silently.
 */
#define SW_MAX_SECONDS        1e15 /* any time or duration: 31 million years */
#define SW_MAX_BUDGET_RESERVE 1e6  /* sw_workload.budget_reserve */
#define SW_MAX_PRICE          1e6  /* dollars per GPU-hour or per GB */
#define SW_MAX_INTERRUPTIONS  3600 /* spot interruptions per hour */
#define SW_MAX_GB             1e12 /* data sizes and GPU memory */
#define SW_MIN_GBPS           1e-6 /* link bandwidth, gigabits per second */
#define SW_MAX_GBPS           1e9
#define SW_MAX_SIGMA          4.0 /* log-space spread of a runtime estimate */

/* Points of a pool's capacity-wait distribution a snapshot may carry. */
#define SW_WAIT_POINTS 8

/*
 * Deadlines are checked against this quantile of the runtime belief (z is
 * its standard normal score): a deadline-bound Job is placed where it would
 * still finish if it ran as long as nine runs in ten of its kind do.
 */
#define SW_DEADLINE_QUANTILE 0.9
#define SW_DEADLINE_Z        1.2815515655446004

/** How a pool's GPUs are paid for. Owned capacity carries its amortised cost. */
enum sw_capacity { SW_CAP_OWNED = 0, SW_CAP_ON_DEMAND, SW_CAP_SPOT };

/** The workload's `spillway.io/burst` annotation. */
enum sw_burst_mode { SW_BURST_NEVER = 0, SW_BURST_AUTO, SW_BURST_CLOUD_FIRST };

/**
 * Priority classes, lowest first; the queue is decided highest first.
 * Production never goes to spot.
 */
enum sw_priority_class {
    SW_PRIO_BEST_EFFORT = 0,
    SW_PRIO_DEVELOPMENT,
    SW_PRIO_TRAINING,
    SW_PRIO_PRODUCTION,
};

/** Interconnect attributes, as flags: a workload needs all the flags it sets. */
enum { SW_IC_NVLINK = 1u << 0, SW_IC_INFINIBAND = 1u << 1 };

/** One input data set: its size and the regions that already hold a copy. */
struct sw_input {
    double size_gb;
    int n_regions;
    char regions[SW_MAX_INPUT_REGIONS][SW_NAME_MAX];
};

/** A pending Job as the engine sees it. The fields every decision reads
 * come first, numbers then names, so that a workload's first eight cache
 * lines hold them (placement/index.h prefetches those); the rest is read
 * only when it is set. */
struct sw_workload {
    enum sw_priority_class prio;
    int pods;
    int gpus_per_pod;
    /* A share of one GPU per pod, in thousandths (1 to 999; 0 or 1000: whole
     * GPUs), as time-slicing gives it (the Alibaba trace's gpu_milli). Only
     * with gpus_per_pod 1. A time-sliced pool packs shares; any other pool
     * gives each pod a whole GPU and bills it (docs/cost-model.md). */
    int gpu_milli;
    int n_products;        /* how many of `products` are set (below) */
    unsigned interconnect; /* GPU constraint: SW_IC_* flags, all needed */
    enum sw_burst_mode burst;
    /* Set once the Job has been preempted its allowed number of times:
     * spot is no longer an option for it (the fallback is on-demand or home). */
    bool no_spot;
    /* Its queue at home cannot admit it (a Kueue LocalQueue, or that
     * LocalQueue's ClusterQueue, that does not exist or is stopped): its
     * home cluster is not an option; it can only go elsewhere. */
    bool home_unqueued;
    int n_inputs;
    int n_queue_pools;     /* how many of `queue_pools` are set (below) */
    double min_gpu_mem_gb; /* GPU constraint: memory per GPU */
    double runtime_s;      /* runtime estimate (median); <= 0 means "learn it" */
    /* The estimate's uncertainty: the standard deviation of log(runtime)
     * around log(runtime_s), a log-normal belief (0: known exactly). The
     * engine prices the expected runtime, runtime_s x exp(sigma^2 / 2), and
     * checks deadlines against the SW_DEADLINE_QUANTILE quantile. */
    double runtime_sigma;
    /* What a burst of it takes from its team's budget: the option's cost x
     * this (a pessimistic runtime over the expected one, set by the hub
     * for a team with a budget); 1 or less (0 included): the cost
     * itself. From 0 to SW_MAX_BUDGET_RESERVE. Owned options are charged their egress. */
    double budget_reserve;
    double checkpoint_s; /* checkpoint interval; 0 means none */
    double restart_s;    /* restart overhead after an interruption */
    double deadline;     /* absolute time; 0 means none */
    double max_price;    /* per GPU-hour; 0 means no cap */
    double submit_time;  /* orders equal priorities, first come first served */
    /* Pending since (after a preemption, since it was requeued); a time
     * before submit_time means since submit_time. Bounds the wait. */
    double pending_since;
    /* Outputs (results, final checkpoint) copied back to `output_region`
     * after the run; 0 GB or an empty region: none. */
    double output_gb;
    char name[SW_NAME_MAX];
    char team[SW_NAME_MAX];
    /* The cluster it was submitted to. When no pool of the snapshot is in
     * it (the hub leaves out a lost cluster), the workload has no home
     * option: it can only go elsewhere, and never if burst is NEVER. */
    char origin[SW_NAME_MAX];
    char output_region[SW_NAME_MAX];
    /* A MIG profile ("1g.10gb": the resource nvidia.com/mig-1g.10gb); empty:
     * whole GPUs. When set, gpus_per_pod counts slices of that profile per
     * pod, gpu_milli is 0, and only pools offering the profile can take it
     * (docs/cost-model.md, "MIG slices"). */
    char mig_profile[SW_MIG_PROFILE_MAX];
    struct sw_input inputs[SW_MAX_INPUTS];
    char label[SW_NAME_MAX]; /* optional; groups runs for runtime learning */
    /* GPU constraint: any of `products` (none = any). */
    char products[SW_MAX_PRODUCTS][SW_PRODUCT_MAX];
    /* The pools that stand for the queues it would be admitted through
     * (the hub gives each of a member's Kueue ClusterQueues a view of the
     * member's pools of its own, queue_only): in a cluster where it names
     * any, those are its only options there; at home, the queue it waits
     * in; elsewhere, the queue its mirror would go into. None: any pool
     * that is not queue_only. */
    char queue_pools[SW_MAX_QUEUE_POOLS][SW_NAME_MAX];
};

struct sw_running;

/** One MIG profile a pool offers: its GPUs partitioned into slices. */
struct sw_mig_offer {
    char profile[SW_MIG_PROFILE_MAX]; /* "1g.10gb": nvidia.com/mig-1g.10gb */
    /* Slices of this profile one GPU is partitioned into (1 to
     * SW_MIG_MAX_PER_GPU): a slice bills 1 / per_gpu of the GPU-hour. */
    int per_gpu;
    int total; /* slices of the profile the pool has now */
    int free;  /* of which idle now */
    /* Running on those slices (local queue pools only; slices, seconds
     * left): when slices return. Borrowed. */
    const struct sw_running *running;
    size_t n_running;
};

/** A GPU pool in some cluster. */
struct sw_pool {
    char name[SW_NAME_MAX];
    char cluster[SW_NAME_MAX];
    char region[SW_NAME_MAX];
    char flavour[SW_NAME_MAX]; /* quota flavour; empty means the pool's name */
    enum sw_capacity capacity;
    char product[SW_PRODUCT_MAX];
    double gpu_mem_gb;
    unsigned interconnect;
    int total_gpus;         /* provisioned now */
    int free_gpus;          /* provisioned and idle now */
    int max_gpus;           /* autoscaling ceiling (>= total_gpus) */
    double provision_s;     /* delay to add capacity past free_gpus */
    double price_gpu_h;     /* dollars per GPU-hour */
    double interrupt_per_h; /* spot interruptions per hour of running */
    /* When > 0, the pool cannot add GPUs now (spot capacity is short) and is
     * expected to be able to in this many seconds; max_gpus is its ceiling
     * then. 0: it can add up to max_gpus now. */
    double capacity_wait_s;
    /* What the hub knows of that wait's distribution, when it knows more
     * than the mean: n_capacity_wait_points equally likely waits, seconds,
     * ascending (0 points: the mean alone). Cost-aware weighs waiting for
     * the pool up to one of them and then taking the best option that
     * starts (docs/cost-model.md, "Waiting for spot capacity"). */
    double capacity_wait_points[SW_WAIT_POINTS];
    int n_capacity_wait_points;
    /* Simulator only: GPUs one instance of an availability trace stands for
     * (0: the pool's whole ceiling, for a trace of one instance). */
    int gpus_per_instance;
    /* Its GPUs are time-sliced: a workload asking for a share of a GPU
     * (gpu_milli) takes that share, packed with others, and pays for it.
     * The pool's counts (total_gpus, free_gpus, max_gpus) and those of its
     * local queue's running and queued Jobs are then in milli-GPUs. */
    bool time_sliced;
    /* MIG profiles it offers. The slices are apart from total_gpus (those
     * are whole GPUs); a cloud pool adds per_gpu slices of a profile for
     * each GPU it provisions out of max_gpus - total_gpus. */
    int n_mig;
    struct sw_mig_offer mig[SW_MAX_MIG];
    /* An option only for the workloads naming it in their queue_pools (one
     * Kueue ClusterQueue's view of a member's pool), never for any other. */
    bool queue_only;
};

/** Egress between two regions (directional). */
struct sw_link {
    char from[SW_NAME_MAX];
    char to[SW_NAME_MAX];
    double price_per_gb;
    double bandwidth_gbps; /* gigabits per second */
};

/**
 * A Kueue-style quota: `nominal` GPUs of one flavour for one team, which
 * may borrow up to `borrowing_limit` more (negative: no limit) from unused
 * nominal quota of the same flavour in its `cohort` (empty: cannot borrow).
 * `used` is what the team holds already.
 */
struct sw_quota {
    char team[SW_NAME_MAX];
    char flavour[SW_NAME_MAX];
    char cohort[SW_NAME_MAX];
    int nominal;
    int borrowing_limit;
    int used;
};

/** A team's spending cap for burst (non-owned) capacity and what it has spent. */
struct sw_budget {
    char team[SW_NAME_MAX];
    double cap;
    double spent;
};

/** A Job running on a pool, freeing its GPUs after `remaining_s`. */
struct sw_running {
    int gpus;
    double remaining_s;
    /* May be stopped to start a Job with a deadline at home now, when no
     * option meets that deadline otherwise (docs/cost-model.md, "Making
     * room at home"): a Job with no deadline of its own, not production.
     * The simulator marks them with --preempt; the hub marks none. */
    bool preemptible;
    double lost_s; /* the work it loses if stopped now: since its last checkpoint */
};

/** A Job already queued on a pool ahead of every pending workload. */
struct sw_queued {
    int gpus;
    double runtime_s;
};

/** The local queue of one owned pool. */
struct sw_local_queue {
    char pool[SW_NAME_MAX];
    size_t n_running;
    const struct sw_running *running; /* borrowed */
    size_t n_ahead;
    const struct sw_queued *ahead; /* borrowed, in queue order */
};

/** A finished run, for learning runtimes per label or team. */
struct sw_finished_run {
    char team[SW_NAME_MAX];
    char label[SW_NAME_MAX];
    double runtime_s;
};

/**
 * The whole input of one decision round. Every array is borrowed; the
 * engine never writes to it.
 */
struct sw_snapshot {
    double now;
    /* The longest the caller may take to decide again (the hub: its
     * placement.recheckSeconds); 0: at each decision's recheck_at, as the
     * simulator does. The deadline guard acts this much early. */
    double decide_every_s;
    const struct sw_pool *pools;
    size_t n_pools;
    const struct sw_link *links;
    size_t n_links;
    const struct sw_quota *quotas;
    size_t n_quotas;
    const struct sw_budget *budgets;
    size_t n_budgets;
    const struct sw_local_queue *queues;
    size_t n_queues;
    const struct sw_finished_run *history;
    size_t n_history;
    const struct sw_workload *pending;
    size_t n_pending;
};

/** Returns "owned", "on-demand" or "spot". */
const char *sw_capacity_name(enum sw_capacity c);
/** Parses a capacity name; returns 0 or SW_EINVAL. */
int sw_capacity_parse(const char *s, enum sw_capacity *out);
/** Returns "never", "auto" or "cloud-first". */
const char *sw_burst_mode_name(enum sw_burst_mode m);
/** Parses a burst mode; returns 0 or SW_EINVAL. */
int sw_burst_mode_parse(const char *s, enum sw_burst_mode *out);
/** Returns "best-effort", "development", "training" or "production". */
const char *sw_priority_name(enum sw_priority_class p);
/** Parses a priority class name; returns 0 or SW_EINVAL. */
int sw_priority_parse(const char *s, enum sw_priority_class *out);

/**
 * Whether `profile` has the shape of a MIG profile as the NVIDIA device
 * plugin names its resources after "nvidia.com/mig-": "<n>g.<m>gb" with
 * optional "+" attributes, shorter than SW_MIG_PROFILE_MAX. Borrows it.
 */
bool sw_mig_profile_valid(const char *profile);

/** Total GPUs of a workload (pods x GPUs per pod). */
static inline int sw_workload_gpus(const struct sw_workload *w)
{
    return w->pods * w->gpus_per_pod;
}

/**
 * Checks every field of `s` the engine relies on: positive GPU counts,
 * finite non-negative prices and times within the SW_MAX_* bounds, known
 * pool, cluster and team names, unique pool names. On failure returns
 * SW_EINVAL (SW_ENOENT for an unknown name, SW_ERANGE for a number past its
 * bound) with a message in `err` naming the object and the field,
 * e.g. `workload "train-1": field "gpus_per_pod": expected a positive
 * integer, got -2`. Runs in time linear in the size of `s`; it allocates
 * its name tables, so it may also return SW_ENOMEM.
 */
int sw_snapshot_validate(const struct sw_snapshot *s, struct sw_error *err);

/**
 * Copies `src` into the fixed-size field `dst` of `cap` bytes. Returns 0, or
 * SW_ETOOBIG when it does not fit (dst then holds a truncated copy).
 */
int sw_name_set(char *dst, size_t cap, const char *src);

#endif
