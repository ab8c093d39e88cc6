/*
 * cost.c - the cost model's formulas (see docs/cost-model.md).
 */
#include "placement/cost.h"

#include <math.h>

int64_t sw_cents(double dollars)
{
    return (int64_t)llround(dollars * 100.0);
}

double sw_cost_gpu_hours(double gpus, double price_gpu_h, double hours)
{
    return gpus * price_gpu_h * hours;
}

double sw_cost_lost_hours(double checkpoint_h, double restart_h, double runtime_h)
{
    double interval = checkpoint_h > 0 ? checkpoint_h : runtime_h;
    return restart_h + interval / 2.0;
}

double sw_cost_spot_effective(double price_gpu_h, double interrupts_per_h, double checkpoint_h,
                              double restart_h)
{
    return price_gpu_h * (1.0 + interrupts_per_h * sw_cost_lost_hours(checkpoint_h, restart_h, 0));
}

double sw_cost_savings_fraction(double price, double reference)
{
    if (reference <= 0)
        return 0;
    return (reference - price) / reference;
}

void sw_cost_option(double gpus, double price_gpu_h, double runtime_h, double provision_h,
                    double interrupts_per_h, double checkpoint_h, double restart_h,
                    double egress_cost, struct sw_cost_breakdown *out)
{
    double rate = gpus * price_gpu_h;
    out->interruptions = interrupts_per_h * runtime_h;
    double lost_h =
        out->interruptions > 0
            ? out->interruptions * sw_cost_lost_hours(checkpoint_h, restart_h, runtime_h)
            : 0;
    out->run_cost = rate * runtime_h;
    out->provision_cost = rate * provision_h;
    out->interruption_cost = rate * lost_h;
    out->egress_cost = egress_cost;
    out->billed_hours = runtime_h + provision_h + lost_h;
    out->total = out->run_cost + out->provision_cost + out->interruption_cost + egress_cost;
}
