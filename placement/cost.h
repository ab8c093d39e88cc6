/*
 * cost.h - the cost model: what a workload is expected to cost on a pool,
 * and the small formulas behind it (spot maths, checkpoint maths).
 *
 * docs/cost-model.md writes the same formulas down; the unit tests check
 * them against the worked examples of the seeds to the cent.
 */
#ifndef SW_PLACEMENT_COST_H
#define SW_PLACEMENT_COST_H

#include <stdint.h>

/** Rounds dollars to whole cents (half away from zero). */
int64_t sw_cents(double dollars);

/** gpus x price per GPU-hour x hours. */
double sw_cost_gpu_hours(double gpus, double price_gpu_h, double hours);

/**
 * Work lost per interruption, in hours: half the checkpoint interval (an
 * interruption is equally likely anywhere inside it) plus the restart
 * overhead. Without checkpoints (`checkpoint_h` == 0) the whole run so far
 * is lost, which on average is half of `runtime_h`.
 */
double sw_cost_lost_hours(double checkpoint_h, double restart_h, double runtime_h);

/**
 * Effective price per GPU-hour on spot once lost work is paid for:
 * price x (1 + rate x lost hours per interruption).
 * $12/h, one interruption every 3 hours, 30-minute checkpoints: $13/h.
 */
double sw_cost_spot_effective(double price_gpu_h, double interrupts_per_h, double checkpoint_h,
                              double restart_h);

/** Fraction saved by paying `price` instead of `reference` (0.59 for 13 vs 32). */
double sw_cost_savings_fraction(double price, double reference);

/** What an option would cost and how long it would take. */
struct sw_cost_breakdown {
    double run_cost;          /* GPUs x price x runtime */
    double provision_cost;    /* GPUs x price x provisioning delay */
    double interruption_cost; /* GPUs x price x interruptions x lost hours each */
    double egress_cost;       /* inputs moved into the pool's region */
    double total;
    double interruptions; /* expected number over the run */
    double billed_hours;  /* hours each GPU is paid for */
};

/**
 * The expected cost of running `gpus` GPUs for `runtime_h` hours on a pool:
 * gpus x price x (runtime + provisioning + interruptions x (restart +
 * checkpoint / 2)), interruptions = rate x runtime, plus `egress_cost`.
 * Fills `out` (borrowed, caller-owned).
 */
void sw_cost_option(double gpus, double price_gpu_h, double runtime_h, double provision_h,
                    double interrupts_per_h, double checkpoint_h, double restart_h,
                    double egress_cost, struct sw_cost_breakdown *out);

/**
 * sw_cost_option with the work lost per interruption already known
 * (`lost_h` = sw_cost_lost_hours(checkpoint_h, restart_h, runtime_h)), for
 * callers that price one workload on many pools. Gives bit for bit the
 * same figures. Fills `out` (borrowed, caller-owned).
 */
static inline void sw_cost_option_lost(double gpus, double price_gpu_h, double runtime_h,
                                       double provision_h, double interrupts_per_h, double lost_h,
                                       double egress_cost, struct sw_cost_breakdown *out)
{
    double rate = gpus * price_gpu_h;
    out->interruptions = interrupts_per_h * runtime_h;
    double lost_total_h = out->interruptions > 0 ? out->interruptions * lost_h : 0;
    out->run_cost = rate * runtime_h;
    out->provision_cost = rate * provision_h;
    out->interruption_cost = rate * lost_total_h;
    out->egress_cost = egress_cost;
    out->billed_hours = runtime_h + provision_h + lost_total_h;
    out->total = out->run_cost + out->provision_cost + out->interruption_cost + egress_cost;
}

#endif
