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

#include "common/error.h"
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

/**
 * What one Job used, the input of the per-team report: from a simulation
 * (`spillctl simulate --jobs-csv`) today, from the hub's records later.
 * Money in dollars; GPU-hours and costs by enum sw_capacity (owned is home).
 */
struct sw_job_usage {
    char name[SW_NAME_MAX];
    char team[SW_NAME_MAX];
    double at; /* when the usage counts: completion, or submission if it never completed */
    double gpu_h[3];
    double cost[3];
    double egress;
    unsigned preemptions;
    double lost_gpu_h;
};

#define SW_CHARGEBACK_TOP 3

/** One team's figures over a period. */
struct sw_team_report {
    char team[SW_NAME_MAX];
    size_t jobs;
    double gpu_h[3], cost[3];
    double gpu_hours; /* all capacities */
    double egress;
    double total;        /* GPU costs plus egress */
    double all_ondemand; /* the same GPU-hours at the on-demand price */
    double savings;      /* all_ondemand - total */
    double savings_fraction;
    double spot_ratio; /* spot GPU-hours / cloud GPU-hours */
    unsigned preemptions;
    double lost_gpu_h;
    /* The team's costliest Jobs, dearest first: indices into the records. */
    size_t top[SW_CHARGEBACK_TOP];
    size_t n_top;
};

/**
 * The per-team report of the `n` records of `recs` (borrowed) whose `at`
 * is in [from, to), teams in name order, priced against `ondemand_price`
 * per GPU-hour. `*out` (a new array of `*n_out` entries, owned by the
 * caller, freed with sw_free) is NULL when no record is in the period.
 * Returns 0, or SW_ENOMEM.
 */
int sw_chargeback_report(const struct sw_job_usage *recs, size_t n, double from, double to,
                         double ondemand_price, struct sw_team_report **out, size_t *n_out);

/**
 * Parses the per-Job CSV of `spillctl simulate --jobs-csv` (`len` bytes of
 * `buf`, borrowed; `what` names it in errors) into a new array `*out` of
 * `*n_out` records (owned by the caller, freed with sw_free), keeping the
 * rows of run `policy` (NULL: the file must hold one run only). Errors name
 * the file, the line and the field, e.g.
 * `jobs.csv:7: field "cost_spot": expected a non-negative number, got "x"`.
 * Returns 0, SW_EPARSE or SW_ENOMEM.
 */
int sw_job_usage_parse_csv(const char *buf, size_t len, const char *what, const char *policy,
                           struct sw_job_usage **out, size_t *n_out, struct sw_error *err);

/* ---- node-hours per NodePool (what the cloud bill shows) ------------------ */

/**
 * One cloud node's life in a pool whose capacity is a Karpenter NodePool:
 * its NodeClaim from created to deleted (the hub's records), its GPUs, the
 * pool's price. Times in Unix seconds; `deleted` 0 while it exists.
 */
struct sw_node_life {
    char pool[SW_NAME_MAX];     /* "cluster/pool" */
    char nodepool[SW_NAME_MAX]; /* the NodePool, for people */
    double gpus;
    double price_gpu_h;
    double created, deleted;
};

/** A Job's run in such a pool: its GPUs from start to end (Unix seconds). */
struct sw_pool_run {
    char pool[SW_NAME_MAX]; /* "cluster/pool" */
    double gpus;
    double start, end;
};

/** One NodePool-bound pool's node-hours over a period, reconciled with its Jobs. */
struct sw_nodepool_bill {
    char pool[SW_NAME_MAX];
    char nodepool[SW_NAME_MAX];
    size_t nodes;          /* nodes alive at some time in the period */
    double node_hours;     /* their lives within the period */
    double gpu_hours;      /* node-hours x each node's GPUs */
    double cost;           /* GPU-hours x the pool's price: the bill */
    double job_gpu_hours;  /* Jobs' GPUs x hours they ran there, within the period */
    double job_cost;       /* the Jobs' share */
    double idle_gpu_hours; /* the rest: provisioning, partly used nodes, consolidation */
    double idle_cost;
    double idle_fraction; /* idle GPU-hours / GPU-hours (0 without any) */
};

/**
 * The bill of every pool with nodes in [from, to): each node's life within
 * the period (a node not deleted lives until min(to, now)) at its GPUs and
 * price; the Jobs' runs there within the same window attributed by their
 * GPUs; the idle remainder (never below 0: Jobs' hours beyond the nodes'
 * are the Jobs' and cost nothing more). `*out` is a new array of `*n_out`
 * bills in pool order (sw_free), NULL when no node lived in the period.
 * Returns 0 or SW_ENOMEM.
 */
int sw_chargeback_nodepools(const struct sw_node_life *nodes, size_t n,
                            const struct sw_pool_run *runs, size_t nruns, double from, double to,
                            double now, struct sw_nodepool_bill **out, size_t *n_out);

#endif
