/*
 * chargeback.h - per-team GPU cost reports (showback/chargeback).
 *
 * The simulator and the controller account GPU-hours per team and pool; this
 * turns those lines into the figures a monthly report shows: cost per line,
 * total, idle cost, efficiency and spot ratio.
 */
#ifndef SW_PLACEMENT_CHARGEBACK_H
#define SW_PLACEMENT_CHARGEBACK_H

#include <stddef.h>

#include "placement/model.h"

/** GPU-hours a team used on one kind of capacity at one price. */
struct sw_usage_line {
    char what[SW_NAME_MAX]; /* e.g. "A100 spot" */
    enum sw_capacity capacity;
    double gpu_hours;
    double price_gpu_h;
};

/** The report's figures. */
struct sw_chargeback {
    double gpu_hours;
    double cost;
    double spot_gpu_hours;
    double spot_ratio; /* spot GPU-hours / GPU-hours */
    double idle_gpu_hours;
    double idle_fraction;
    double efficiency; /* 1 - idle fraction */
};

/** Cost of one line: GPU-hours x price. */
double sw_chargeback_line_cost(const struct sw_usage_line *line);

/**
 * Sums `n` lines (borrowed) into `out`. `idle_gpu_hours` is the part of the
 * GPU-hours during which the GPUs did no work.
 */
void sw_chargeback_sum(const struct sw_usage_line *lines, size_t n, double idle_gpu_hours,
                       struct sw_chargeback *out);

#endif
