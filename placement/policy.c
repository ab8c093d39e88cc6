/*
 * policy.c - the policies, their parameters, and the texts of exclusions, reasons
 * and verdicts.
 */
#include "placement/engine_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Policies --------------------------------------------------------- */

static const char *const policy_names[SW_POLICY__COUNT] = {
    "cost-aware", "local-only", "burst-now", "const-wait",
    "starburst",  "spot-only",  "greedy",    "uniform-progress",
};

const char *sw_policy_name(enum sw_policy_kind kind)
{
    return (unsigned)kind < SW_POLICY__COUNT ? policy_names[kind] : "unknown";
}

void sw_policy_default(enum sw_policy_kind kind, struct sw_policy *p)
{
    p->kind = kind;
    /* Derived from each snapshot's prices (sw_policy_delay_value). */
    p->delay_value_gpu_h = -1.0;
    p->wait_s = 3600.0;
    /* Starburst (ATC'24) lets a job wait in proportion to its size. */
    p->starburst_k = 0.25;
    /* One interruption in reserve: the deadline survives one more than
     * the pessimistic count before on-demand is needed. */
    p->up_margin = 1.0;
    /* A promise a platform states, not a cost: a day is far above the
     * waits the value of delay gives, so it binds only where the runtime
     * belief is so long that waiting looks free. */
    p->max_wait_s = 86400.0;
    p->no_deadline_guard = false;
}

double sw_policy_delay_value(const struct sw_policy *p, const struct sw_snapshot *s)
{
    if (p->delay_value_gpu_h >= 0)
        return p->delay_value_gpu_h;
    double od = INFINITY, other = 0;
    for (size_t i = 0; s != NULL && i < s->n_pools; i++) {
        const struct sw_pool *pool = &s->pools[i];
        if (pool->capacity == SW_CAP_ON_DEMAND && pool->price_gpu_h < od)
            od = pool->price_gpu_h;
        if (pool->capacity != SW_CAP_OWNED && pool->price_gpu_h > other)
            other = pool->price_gpu_h;
    }
    return isfinite(od) ? od : other;
}

/* The policy's parameters within the bounds that keep scores finite. */
bool sw__policy_params_ok(const struct sw_policy *p)
{
    return (p->delay_value_gpu_h == -1.0 ||
            (p->delay_value_gpu_h >= 0 && p->delay_value_gpu_h <= SW_MAX_PRICE)) &&
           p->wait_s >= 0 && p->wait_s <= SW_MAX_SECONDS && p->starburst_k >= 0 &&
           p->starburst_k <= POLICY_MAX_K && p->up_margin >= 0 && p->up_margin <= POLICY_MAX_K &&
           p->max_wait_s >= 0 && (p->max_wait_s <= SW_MAX_SECONDS || p->max_wait_s == INFINITY);
}

int sw_policy_parse(const char *s, struct sw_policy *p, struct sw_error *err)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    for (int k = 0; k < SW_POLICY__COUNT; k++) {
        if (strlen(policy_names[k]) != n || strncmp(s, policy_names[k], n) != 0)
            continue;
        sw_policy_default((enum sw_policy_kind)k, p);
        if (colon == NULL)
            return 0;
        char *end;
        double v = strtod(colon + 1, &end);
        if (end == colon + 1 || *end != '\0' || !isfinite(v) || v < 0)
            return sw_error_set(err, SW_EINVAL,
                                "policy \"%s\": parameter \"%s\": expected a non-negative number",
                                policy_names[k], colon + 1);
        struct sw_policy q = *p;
        q.delay_value_gpu_h = q.wait_s = q.starburst_k = q.up_margin = v;
        if (!sw__policy_params_ok(&q))
            return sw_error_set(err, SW_EINVAL,
                                "policy \"%s\": parameter \"%s\": beyond any real value",
                                policy_names[k], colon + 1);
        switch (p->kind) {
        case SW_POLICY_COST_AWARE:
            p->delay_value_gpu_h = v;
            return 0;
        case SW_POLICY_CONST_WAIT:
            p->wait_s = v;
            return 0;
        case SW_POLICY_STARBURST:
            p->starburst_k = v;
            return 0;
        case SW_POLICY_UNIFORM_PROGRESS:
            p->up_margin = v;
            return 0;
        default:
            return sw_error_set(err, SW_EINVAL, "policy \"%s\" takes no parameter",
                                policy_names[k]);
        }
    }
    return sw_error_set(err, SW_EINVAL,
                        "unknown policy \"%.*s\" (expected cost-aware, local-only, burst-now, "
                        "const-wait, starburst, spot-only, greedy or uniform-progress)",
                        (int)n, s);
}

/* ---- Texts ------------------------------------------------------------ */

static const char *const ex_text[SW_EX__COUNT] = {
    "eligible",
    "GPU product not accepted",
    "GPU memory below the minimum",
    "required interconnect missing",
    "burst mode is never",
    "production never goes to spot",
    "price above the workload's maximum",
    "needs more GPUs than the pool can ever have",
    "no free or autoscalable GPUs",
    "team quota exceeded",
    "team budget exceeded",
    "an input cannot reach the region",
    "not considered by the policy",
    "preempted too often; spot no longer considered",
    "does not offer the workload's MIG profile (renting whole GPUs cannot take a slice)",
    "another Kueue queue's view of the cluster (the Job's queue there has its own)",
    "its Kueue queue at home cannot admit it (LocalQueue or ClusterQueue missing or stopped)",
};
static const char *const ex_token[SW_EX__COUNT] = {
    "none",      "product",    "gpu-memory",  "interconnect", "burst-never", "production-spot",
    "max-price", "never-fits", "capacity",    "quota",        "budget",      "no-route",
    "policy",    "preempted",  "mig-profile", "other-queue",  "home-queue",
};
static const char *const why_text[SW_WHY__COUNT] = {
    "lowest expected cost including the value of delay",
    "fits on the local cluster now",
    "still inside its waiting budget",
    "waiting budget used up; bursting",
    "cheapest eligible option for the policy",
    "the policy never bursts",
    "the workload's burst mode is never",
    "the workload prefers the cloud",
    "the policy would burst but no cloud option is eligible",
    "no option meets the deadline; earliest completion chosen",
    "no eligible option",
    "runtime unknown and no finished run to learn it from",
    "no option meets the deadline at the 90th percentile; lowest score at the median",
    ("no option meets the deadline; starting at home now, ahead of the queue (stopping running "
     "Jobs without a deadline if need be), completes first"),
    ("waiting could lose a deadline that burst-now keeps (no home start is certain before "
     "burst-now's option would have started it): burst-now's option, now"),
};
static const char *const why_token[SW_WHY__COUNT] = {
    "lowest-score",          "fits-now",         "within-wait-budget",
    "wait-budget-exhausted", "cheapest",         "local-only",
    "burst-never",           "cloud-first",      "no-cloud-option",
    "deadline-best-effort",  "no-option",        "no-runtime",
    "deadline-median",       "deadline-preempt", "deadline-guard",
};

const char *sw_exclusion_text(enum sw_exclusion ex)
{
    return (unsigned)ex < SW_EX__COUNT ? ex_text[ex] : "unknown";
}
const char *sw_exclusion_token(enum sw_exclusion ex)
{
    return (unsigned)ex < SW_EX__COUNT ? ex_token[ex] : "unknown";
}
const char *sw_why_text(enum sw_why why)
{
    return (unsigned)why < SW_WHY__COUNT ? why_text[why] : "unknown";
}
const char *sw_why_token(enum sw_why why)
{
    return (unsigned)why < SW_WHY__COUNT ? why_token[why] : "unknown";
}
const char *sw_verdict_name(enum sw_verdict v)
{
    switch (v) {
    case SW_VERDICT_STAY:
        return "stay";
    case SW_VERDICT_BURST:
        return "burst";
    case SW_VERDICT_REJECT:
        return "reject";
    }
    return "unknown";
}
