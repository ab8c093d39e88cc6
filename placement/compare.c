/*
 * compare.c - Job-by-Job comparison of simulation runs (see compare.h).
 */
#include "placement/compare.h"

bool sw_sim_job_met(const struct sw_sim_job *j)
{
    return j->deadline > 0 && j->done && j->end <= j->deadline + 1e-6;
}

static bool is_baseline(const struct sw_sim_run_view *r)
{
    return r->kind != SW_POLICY_COST_AWARE && r->kind != SW_POLICY_LOCAL_ONLY;
}

void sw_sim_compare(struct sw_sim_run_view *runs, size_t n, size_t njobs,
                    struct sw_sim_comparison *out)
{
    *out = (struct sw_sim_comparison){0, 0, -1, -1, -1};
    for (size_t i = 0; i < n; i++) {
        runs[i].misses = runs[i].lost_best = runs[i].lost_burst = 0;
        runs[i].frontier = runs[i].dominates_cost_aware = false;
    }
    if (n == 0)
        return;
    /* Deadlines no run meets are reported apart: the synthetic rule made
     * them, no policy could help them. The rest count. */
    for (size_t j = 0; j < njobs; j++) {
        if (runs[0].jobs[j].deadline <= 0)
            continue;
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = sw_sim_job_met(&runs[i].jobs[j]);
        if (!any) {
            out->infeasible++;
            continue;
        }
        out->feasible++;
        for (size_t i = 0; i < n; i++)
            if (!sw_sim_job_met(&runs[i].jobs[j]))
                runs[i].misses++;
    }
    for (size_t i = 0; i < n; i++) {
        if (runs[i].kind == SW_POLICY_BURST_NOW && out->burst_now < 0)
            out->burst_now = (int)i;
        if (runs[i].kind == SW_POLICY_COST_AWARE && out->cost_aware < 0)
            out->cost_aware = (int)i;
        if (!is_baseline(&runs[i]))
            continue;
        int b = out->best;
        if (b < 0 || runs[i].misses < runs[b].misses ||
            (runs[i].misses == runs[b].misses && runs[i].cloud_cost < runs[b].cloud_cost))
            out->best = (int)i;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < njobs; j++) {
            bool mine = sw_sim_job_met(&runs[i].jobs[j]);
            if (out->best >= 0 && !mine && sw_sim_job_met(&runs[out->best].jobs[j]))
                runs[i].lost_best++;
            if (out->burst_now >= 0 && !mine && sw_sim_job_met(&runs[out->burst_now].jobs[j]))
                runs[i].lost_burst++;
        }
    /* The frontier in (cloud cost, mean JCT, deadline misses). */
    for (size_t i = 0; i < n; i++) {
        const struct sw_sim_run_view *b = &runs[i];
        bool dominated = false;
        for (size_t k = 0; k < n && !dominated; k++) {
            const struct sw_sim_run_view *a = &runs[k];
            if (k == i)
                continue;
            bool le = a->cloud_cost <= b->cloud_cost && a->jct_mean <= b->jct_mean &&
                      a->misses <= b->misses;
            bool lt =
                a->cloud_cost < b->cloud_cost || a->jct_mean < b->jct_mean || a->misses < b->misses;
            dominated = le && lt;
        }
        runs[i].frontier = !dominated;
        int ca = out->cost_aware;
        if (ca >= 0 && runs[i].kind != SW_POLICY_COST_AWARE)
            runs[i].dominates_cost_aware = b->cloud_cost < runs[ca].cloud_cost &&
                                           b->jct_mean <= runs[ca].jct_mean &&
                                           b->misses <= runs[ca].misses;
    }
}
