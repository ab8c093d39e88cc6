/*
 * plot.h - the simulator's pictures, as SVG written by hand: the cost/JCT
 * frontier of a comparison and the GPUs in use over time of one run.
 */
#ifndef SW_CONTROLLER_CLI_PLOT_H
#define SW_CONTROLLER_CLI_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "placement/sim.h"

/** One run of a comparison, as the frontier picture shows it. */
struct sw_plot_point {
    const char *label; /* borrowed, e.g. "starburst:0.25" */
    const char *kind;  /* borrowed: the policy's name, which picks the colour */
    double cloud_cost;
    double jct_mean_s, jct_p95_s;
    bool frontier; /* on the (cloud cost, mean JCT, misses) frontier */
};

/**
 * Writes to `out` two panels, cloud cost against mean JCT and against p95
 * JCT, one mark per point of `pts` (borrowed, `n` entries): filled when on
 * the frontier, hollow otherwise, the policies in colours named in a
 * legend, and in each panel the lower-left staircase of the points.
 * `title` (borrowed) heads the picture. Returns 0, or -1 if writing failed.
 */
int sw_plot_frontier(FILE *out, const struct sw_plot_point *pts, size_t n, const char *title);

/**
 * Writes to `out` the GPUs in use over time, stacked: home (owned), spot,
 * on-demand, from the `n` samples of `u` (borrowed). Returns 0, or -1 if
 * writing failed or there are fewer than two samples.
 */
int sw_plot_usage(FILE *out, const struct sw_sim_usage *u, size_t n, const char *title);

#endif
