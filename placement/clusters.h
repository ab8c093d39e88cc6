/*
 * clusters.h - the simulator's clusters file: pools, prices, egress links,
 * quotas, budgets and the defaults applied to trace jobs.
 *
 * The format is JSON and is documented in docs/simulator.md; an example
 * matching the lab is docs/examples/lab-clusters.json. The parser takes a
 * buffer; reading the file is the caller's business.
 */
#ifndef SW_PLACEMENT_CLUSTERS_H
#define SW_PLACEMENT_CLUSTERS_H

#include <stddef.h>

#include "common/error.h"
#include "placement/estimate.h"
#include "placement/model.h"

/** What a trace job does not say, applied to every job. */
struct sw_job_defaults {
    double checkpoint_s;
    double restart_s;
    /* Inputs the trace does not size: log-normal with median `input_gb` and
     * log-space spread `input_gb_sigma` (0: every Job the same), drawn per
     * Job from the simulation's seed, held in `input_region`. */
    double input_gb;
    double input_gb_sigma;
    char input_region[SW_NAME_MAX];
    /* Outputs copied back to `output_region` (default: input_region) after
     * the run, sized like the inputs. */
    double output_gb;
    double output_gb_sigma;
    char output_region[SW_NAME_MAX];
    /* Spot preemptions a Job takes before it falls back to on-demand or
     * home; -1 (the default): more than the pool's rate makes plausible
     * over the Job's hours on spot (mean + 3 standard deviations + 1). */
    int max_preemptions;
    /* What the hub knows before any Job finished. */
    struct sw_estimator_params estimator;
    enum sw_burst_mode burst;
    /* When > 0, jobs without a deadline get
     * submit + allowance + slack x duration. */
    double deadline_slack;
    double deadline_allowance_s;
    /* Fraction (0..1) of jobs that get the slack deadline, chosen by name hash. */
    double deadline_fraction;
};

/** A parsed clusters file; free with sw_clusters_free. */
struct sw_clusters {
    char origin[SW_NAME_MAX]; /* cluster the trace's jobs are submitted to */
    struct sw_pool *pools;
    size_t n_pools;
    struct sw_link *links;
    size_t n_links;
    struct sw_quota *quotas;
    size_t n_quotas;
    struct sw_budget *budgets;
    size_t n_budgets;
    struct sw_job_defaults defaults;
};

/**
 * Parses `len` bytes of JSON into `out` (caller zero-initialises, frees with
 * sw_clusters_free, also after a failure). `what` names the file in errors,
 * which name the field: `lab.json: field "pools[1].price_per_gpu_hour":
 * expected a number, got a string`. A field the format does not have is
 * refused, naming it and the fields expected there (`lab.json: field
 * "qoutas": unknown (expected pools, links, ...)`).
 */
int sw_clusters_parse(const char *buf, size_t len, const char *what, struct sw_clusters *out,
                      struct sw_error *err);

/** Frees the arrays of `c` and zeroes it. */
void sw_clusters_free(struct sw_clusters *c);

#endif
