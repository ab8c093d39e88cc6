/*
 * chargeback.c - sums usage lines into a team's cost report.
 */
#include "placement/chargeback.h"

double sw_chargeback_line_cost(const struct sw_usage_line *line)
{
    return line->gpu_hours * line->price_gpu_h;
}

void sw_chargeback_sum(const struct sw_usage_line *lines, size_t n, double idle_gpu_hours,
                       struct sw_chargeback *out)
{
    out->gpu_hours = 0;
    out->cost = 0;
    out->spot_gpu_hours = 0;
    for (size_t i = 0; i < n; i++) {
        out->gpu_hours += lines[i].gpu_hours;
        out->cost += sw_chargeback_line_cost(&lines[i]);
        if (lines[i].capacity == SW_CAP_SPOT)
            out->spot_gpu_hours += lines[i].gpu_hours;
    }
    out->idle_gpu_hours = idle_gpu_hours;
    out->spot_ratio = out->gpu_hours > 0 ? out->spot_gpu_hours / out->gpu_hours : 0;
    out->idle_fraction = out->gpu_hours > 0 ? idle_gpu_hours / out->gpu_hours : 0;
    out->efficiency = 1.0 - out->idle_fraction;
}
