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

/** One simulation's inputs, all borrowed. */
struct sw_sim_params {
    const struct sw_clusters *clusters;
    const struct sw_trace *trace;
    /* Optional: when set, spot preemptions follow this trace (each spot
     * instance starts at a random offset into it) instead of the pools'
     * interruptions_per_hour. */
    const struct sw_spot_trace *preemptions;
    struct sw_policy policy;
    uint64_t seed;
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
    double wait_mean, wait_p99;
    size_t deadlines, deadline_misses;
    size_t preemptions;
    double lost_gpu_h;
    size_t rounds; /* engine calls */
};

/**
 * Runs one simulation. `job_end` (optional, trace->n entries, caller-owned)
 * receives each job's completion time (INFINITY if it never completed), in
 * trace order, so that policies can be compared job by job. `job_deadline`
 * (optional, likewise) receives each job's deadline (0: none). Returns 0,
 * SW_ENOMEM, or the engine's error for bad input (named in `err`).
 */
int sw_sim_run(const struct sw_sim_params *p, struct sw_sim_result *out, double *job_end,
               double *job_deadline, struct sw_error *err);

#endif
