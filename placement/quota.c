/*
 * quota.c - Kueue-style quota checks (nominal, borrowing limit, cohort).
 */
#include "placement/quota.h"

#include <string.h>

void sw_quota_build(const struct sw_quota *quotas, size_t n, struct sw_quota_state *states,
                    struct sw_quota_group *groups, size_t *n_groups)
{
    /* Group representatives: the first quota of each (cohort, flavour). The
     * number of groups is small (cohorts x flavours), so a linear scan over
     * representatives is cheaper than hashing. */
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_quota *q = &quotas[i];
        states[i].nominal = q->nominal;
        states[i].limit = q->borrowing_limit;
        states[i].used = q->used;
        states[i].group = -1;
        if (q->cohort[0] == '\0')
            continue;
        size_t g = 0;
        for (; g < ng; g++) {
            const struct sw_quota *r = &quotas[groups[g].rep];
            if (strcmp(r->cohort, q->cohort) == 0 && strcmp(r->flavour, q->flavour) == 0)
                break;
        }
        if (g == ng) {
            groups[ng].rep = i;
            groups[ng].nominal = 0;
            groups[ng].used = 0;
            ng++;
        }
        states[i].group = (int)g;
        groups[g].nominal += q->nominal;
        groups[g].used += q->used;
    }
    *n_groups = ng;
}

void sw_quota_charge(struct sw_quota_state *q, struct sw_quota_group *groups, int gpus)
{
    q->used += gpus;
    if (q->group >= 0)
        groups[q->group].used += gpus;
}

const char *sw_quota_verdict_name(enum sw_quota_verdict v)
{
    switch (v) {
    case SW_QUOTA_OK:
        return "within quota";
    case SW_QUOTA_NOMINAL:
        return "nominal quota exhausted and no cohort to borrow from";
    case SW_QUOTA_BORROW_LIMIT:
        return "borrowing limit reached";
    case SW_QUOTA_COHORT:
        return "cohort has no unused quota to lend";
    }
    return "unknown";
}
