/*
 * sim.h - the trace-driven simulator: replays a job trace against the pools
 * of a clusters file under one policy, and measures cost, completion times,
 * deadline misses and spot preemptions.
 *
 * It is the placement engine in a loop over simulated time: at every
 * arrival, completion, preemption or requested recheck, the pending queue is
 * decided as a whole. Jobs that stay wait in the origin's FIFO queue; jobs
 * that burst move their inputs, wait for provisioning and run; spot jobs may
 * be preempted (at a rate, or as a preemption trace says), lose the work
 * since their last checkpoint and are decided again. Pure: trace records
 * in, figures out; randomness comes from the seed only.
 */
#ifndef SW_PLACEMENT_SIM_H
#define SW_PLACEMENT_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "placement/clusters.h"
#include "placement/engine.h"
#include "placement/trace.h"

/** What the engine is told of runtimes. */
enum sw_runtime_knowledge {
    /* What a hub can know: the annotation, else a runtime learned from
     * finished Jobs with the same features, else the prior (estimate.h). */
    SW_RUNTIME_LEARNED = 0,
    /* The true runtime, times exp(noise x N(0,1)) per Job when noise > 0,
     * with the noise as the estimate's spread: the oracle, for comparison. */
    SW_RUNTIME_ORACLE,
};

/** One simulation's inputs, all borrowed. */
struct sw_sim_params {
    const struct sw_clusters *clusters;
    const struct sw_trace *trace;
    /* Optional: when set, spot preemptions follow this trace (each spot
     * instance starts at a random offset into it) instead of the pools'
     * interruptions_per_hour. */
    const struct sw_spot_trace *preemptions;
    /* Optional: when set, a spot pool can add GPUs only while this trace
     * has instances available: alive x gpus_per_instance GPUs (the pool's
     * ceiling when gpus_per_instance is 0), at most its ceiling. The trace
     * starts at time 0 and loops. */
    const struct sw_spot_trace *availability;
    struct sw_policy policy;
    enum sw_runtime_knowledge runtime;
    double runtime_noise; /* oracle only: log-space noise, 0..SW_MAX_SIGMA */
    uint64_t seed;
    /* When set, a Job running on on-demand is reconsidered at each of its
     * checkpoints and moves to spot or home when the policy, deciding it
     * with the pending queue, would start it there now for less than the
     * rest of its run costs where it is. */
    bool migrate;
    /* When set, a running home Job without a deadline (not production)
     * may be stopped for a Job with a deadline that no option meets
     * otherwise, when starting that one at home now completes it first
     * (the engine decides it: docs/cost-model.md, "Making room at home");
     * the stopped Job keeps its work to its last checkpoint and is decided
     * again with the queue. The hub does not stop running Jobs. */
    bool make_room;
    /* Optional: GPUs in use sampled every `usage_step_s` seconds from time
     * 0 into `usage` (caller-owned, `usage_cap` entries); the result says
     * how many were written. */
    double usage_step_s;
    struct sw_sim_usage *usage;
    size_t usage_cap;
};

/** GPUs in use at one time, by enum sw_capacity (home is owned). */
struct sw_sim_usage {
    double t;
    int gpus[3];
};

/** What happened to one Job (for --jobs-csv and the chargeback report). */
struct sw_sim_job {
    char name[SW_NAME_MAX];
    char team[SW_NAME_MAX];
    char pool[SW_NAME_MAX]; /* where it ran last ("" if it never ran) */
    enum sw_capacity capacity;
    bool done;
    double submit, start, end; /* end: INFINITY if it never completed */
    double wait_s, jct_s;
    double deadline; /* 0: none */
    int gpus;
    unsigned preemptions;
    bool fell_back;  /* reached the preemption cap */
    double gpu_h[3]; /* by enum sw_capacity */
    double cost[3];  /* by enum sw_capacity */
    double egress_cost;
    double lost_gpu_h;
    double input_gb, output_gb;
    enum sw_estimate_source estimate;
    double estimate_mean_s, duration_s;
};

/** One simulation's figures. Money in dollars, times in seconds. */
struct sw_sim_result {
    char policy[32];
    size_t jobs, completed, rejected, bursts;
    double cost_onprem, cost_spot, cost_ondemand, cost_egress;
    double cost_total, cost_cloud; /* cloud = spot + on-demand + egress */
    double gpu_h_onprem, gpu_h_spot, gpu_h_ondemand;
    double cloud_gpu_fraction; /* of billed GPU-hours */
    double jct_mean, jct_p50, jct_p95, jct_p99;
    double wait_mean, wait_p99, wait_max;
    size_t deadlines, deadline_misses;
    size_t preemptions;
    size_t fallbacks;  /* Jobs that reached the preemption cap */
    size_t migrations; /* on-demand Jobs moved to spot or home at a checkpoint */
    size_t home_stops; /* running home Jobs stopped to make room for a deadline (make_room) */
    double lost_gpu_h;
    size_t estimates[4];       /* first estimates by enum sw_estimate_source */
    double estimate_log_error; /* mean |log(estimated mean / true runtime)| */
    size_t rounds;             /* engine calls */
    size_t usage_n;            /* samples written to params->usage */
};

/**
 * Runs one simulation. `jobs` (optional, trace->n entries, caller-owned)
 * receives what happened to each Job, in trace order, so that policies can
 * be compared job by job. Returns 0, SW_ENOMEM, SW_EINVAL for a noise out
 * of range, or the engine's error for bad input (named in `err`).
 */
int sw_sim_run(const struct sw_sim_params *p, struct sw_sim_result *out, struct sw_sim_job *jobs,
               struct sw_error *err);

/**
 * The synthetic deadline of trace Job `j` under `c`'s job defaults: the
 * trace's own when it has one, else, for a `deadline_fraction` of Jobs
 * (chosen by a hash of the name), submit + allowance + slack x duration;
 * 0 for none.
 */
double sw_sim_deadline(const struct sw_clusters *c, const struct sw_trace_job *j);

#endif
