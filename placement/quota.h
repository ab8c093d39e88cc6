/*
 * quota.h - Kueue-style team quotas: nominal quota per flavour, borrowing
 * from the cohort's unused nominal quota up to a borrowing limit.
 *
 * The ledger is plain arrays the caller owns, so the engine can check and
 * charge quotas inside its decision loop without allocating.
 */
#ifndef SW_PLACEMENT_QUOTA_H
#define SW_PLACEMENT_QUOTA_H

#include <stddef.h>

#include "placement/model.h"

/** Why a quota refused GPUs (0 means admitted). */
enum sw_quota_verdict {
    SW_QUOTA_OK = 0,
    SW_QUOTA_NOMINAL,      /* over nominal quota and not in a cohort */
    SW_QUOTA_BORROW_LIMIT, /* would borrow more than the borrowing limit */
    SW_QUOTA_COHORT,       /* the cohort has no unused nominal quota left */
};

/** One quota's live state; `group` indexes the (cohort, flavour) group or is -1. */
struct sw_quota_state {
    int nominal;
    int limit; /* borrowing limit; negative = unlimited */
    int used;
    int group;
};

/** The sums over one (cohort, flavour) group. */
struct sw_quota_group {
    int nominal;
    int used;
    size_t rep; /* index of the group's first quota */
};

/**
 * Builds the ledger from `n` quotas: `states` (n entries) and `groups` (at
 * most n entries, the count in *n_groups), both caller-owned. Quotas group
 * by cohort and flavour; quotas without a cohort get group -1.
 */
void sw_quota_build(const struct sw_quota *quotas, size_t n, struct sw_quota_state *states,
                    struct sw_quota_group *groups, size_t *n_groups);

/**
 * Whether `gpus` more GPUs fit the quota. When they do and the team goes past
 * its nominal quota, *borrowed (may be NULL) is the number of GPUs it would
 * then borrow in total from the cohort.
 */
static inline enum sw_quota_verdict sw_quota_check(const struct sw_quota_state *q,
                                                   const struct sw_quota_group *groups, int gpus,
                                                   int *borrowed)
{
    /* Inline: the engine asks this for every option it prices. */
    int after = q->used + gpus;
    if (borrowed != NULL)
        *borrowed = 0;
    if (after <= q->nominal)
        return SW_QUOTA_OK;
    if (q->group < 0)
        return SW_QUOTA_NOMINAL;
    int borrow = after - q->nominal;
    if (q->limit >= 0 && borrow > q->limit)
        return SW_QUOTA_BORROW_LIMIT;
    const struct sw_quota_group *g = &groups[q->group];
    if (g->used + gpus > g->nominal)
        return SW_QUOTA_COHORT;
    if (borrowed != NULL)
        *borrowed = borrow;
    return SW_QUOTA_OK;
}

/** Charges `gpus` to the quota and its group (after a successful check). */
void sw_quota_charge(struct sw_quota_state *q, struct sw_quota_group *groups, int gpus);

/** A short reason for a verdict, e.g. "borrowing limit reached". */
const char *sw_quota_verdict_name(enum sw_quota_verdict v);

#endif
