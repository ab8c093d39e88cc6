/*
 * compare.h - comparing simulation runs Job by Job: which deadlines count
 * (those at least one run met), how many each run missed, how many it lost
 * against the best baseline and against burst-now, which runs are on the
 * frontier, and which baseline points dominate cost-aware.
 */
#ifndef SW_PLACEMENT_COMPARE_H
#define SW_PLACEMENT_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "placement/engine.h"
#include "placement/sim.h"

/** One run as the comparison sees it: inputs, then what it fills in. */
struct sw_sim_run_view {
    enum sw_policy_kind kind;
    double cloud_cost, jct_mean;
    const struct sw_sim_job *jobs; /* borrowed, njobs entries in trace order */
    size_t misses;                 /* deadlines some run met and this one missed */
    size_t lost_best;              /* deadlines the best baseline met and this run missed */
    size_t lost_burst;             /* the same against the first burst-now run */
    bool frontier; /* no run at once no dearer, no slower, missing no more, and better in one */
    bool dominates_cost_aware; /* a baseline cheaper, no slower, missing no more */
};

/** What holds for the comparison as a whole. */
struct sw_sim_comparison {
    size_t feasible;           /* deadlines at least one run met */
    size_t infeasible;         /* deadlines no run met: reported apart */
    int best;                  /* the baseline (not cost-aware, not local-only) with the
                                * fewest misses, then the cheapest cloud; -1 none */
    int burst_now, cost_aware; /* the first such run; -1 none */
};

/** Whether Job record `j` had a deadline and completed by it. */
bool sw_sim_job_met(const struct sw_sim_job *j);

/**
 * Compares the `n` runs of `runs` (each with `njobs` records of the same
 * trace), filling each run's outputs and `out`.
 */
void sw_sim_compare(struct sw_sim_run_view *runs, size_t n, size_t njobs,
                    struct sw_sim_comparison *out);

#endif
