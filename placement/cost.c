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
    sw_cost_option_lost(gpus, price_gpu_h, runtime_h, provision_h, interrupts_per_h,
                        sw_cost_lost_hours(checkpoint_h, restart_h, runtime_h), egress_cost, out);
}
