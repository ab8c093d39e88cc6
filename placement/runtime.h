/*
 * runtime.h - learning a workload's expected runtime from finished runs.
 *
 * When a Job does not say how long it runs, the engine uses the median
 * runtime of finished runs with the same label, or else of the same team.
 * The median, not the mean, because a few runaway runs should not move it.
 */
#ifndef SW_PLACEMENT_RUNTIME_H
#define SW_PLACEMENT_RUNTIME_H

#include <stddef.h>

#include "placement/model.h"

/**
 * Median runtime of the `n` runs in `history` (borrowed) with label `label`
 * (when not empty), else with team `team`. `scratch` (caller-owned, n
 * doubles) is overwritten. Returns 0 with *out set, or SW_ENOENT when no run
 * matches.
 */
int sw_runtime_learn(const struct sw_finished_run *history, size_t n, const char *team,
                     const char *label, double *scratch, double *out);

#endif
