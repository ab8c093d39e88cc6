/*
 * explain.c - text and JSON renderings of a placement decision.
 */
#include "placement/explain.h"

#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"

static int option_text(const struct sw_snapshot *s, const struct sw_option *o, bool chosen,
                       struct sw_buf *out)
{
    const struct sw_pool *p = &s->pools[o->pool];
    int rc = sw_buf_addf(out, "  %s %-16s %-9s %-12s ", chosen ? "*" : " ", p->name,
                         sw_capacity_name(p->capacity), p->region);
    if (rc != 0)
        return rc;
    if (o->excluded != SW_EX_NONE && o->excluded != SW_EX_POLICY)
        return sw_buf_addf(out, "excluded: %s\n", sw_exclusion_text(o->excluded));
    rc = sw_buf_addf(out,
                     "$%.2f = run %.2f + provisioning %.2f + interruptions %.2f (%.2f expected) "
                     "+ egress %.2f; wait %.2f h, provisioning %.2f h, transfer %.2f h, done in "
                     "%.2f h%s; score %.2f",
                     o->cost.total, o->cost.run_cost, o->cost.provision_cost,
                     o->cost.interruption_cost, o->cost.interruptions, o->cost.egress_cost,
                     o->wait_s / 3600.0, o->provision_s / 3600.0, o->transfer_s / 3600.0,
                     (o->completion - s->now) / 3600.0, o->deadline_ok ? "" : ", misses deadline",
                     o->score);
    if (rc == 0 && o->congestion > 0)
        rc = sw_buf_addf(out, " (with %.2f for the home queue's congestion)", o->congestion);
    if (rc == 0 && o->borrowed > 0)
        rc = sw_buf_addf(out, "; borrows %d GPUs", o->borrowed);
    if (rc == 0 && o->excluded == SW_EX_POLICY)
        rc = sw_buf_adds(out, "; not considered by the policy");
    if (rc == 0)
        rc = sw_buf_adds(out, chosen ? "  <- chosen\n" : "\n");
    return rc;
}

int sw_explain_text(const struct sw_snapshot *s, const struct sw_policy *policy,
                    const struct sw_decision *d, struct sw_buf *out)
{
    const struct sw_workload *w = &s->pending[d->workload];
    int rc =
        sw_buf_addf(out, "workload \"%s\" (team %s, %s, %d x %d GPUs, runtime %.2f h%s", w->name,
                    w->team[0] ? w->team : "-", sw_priority_name(w->prio), w->pods, w->gpus_per_pod,
                    d->runtime_s / 3600.0, d->runtime_learned ? " learned" : "");
    /* An uncertain runtime is priced at its mean; say so, and its spread. */
    if (rc == 0 && w->runtime_sigma > 0)
        rc = sw_buf_addf(out, " expected, belief sigma %.2f", w->runtime_sigma);
    if (rc == 0 && w->deadline > 0)
        rc = sw_buf_addf(out, ", deadline in %.2f h", (w->deadline - s->now) / 3600.0);
    if (rc == 0)
        rc = sw_buf_addf(out, ", burst %s): %s", sw_burst_mode_name(w->burst),
                         sw_verdict_name(d->verdict));
    if (rc == 0 && d->verdict != SW_VERDICT_REJECT)
        rc = sw_buf_addf(out, " on pool \"%s\"", s->pools[d->pool].name);
    if (rc == 0)
        rc = sw_buf_addf(out, "\n  policy %s: %s", sw_policy_name(policy->kind),
                         sw_why_text(d->why));
    if (rc == 0 && d->verdict == SW_VERDICT_REJECT && d->main_exclusion != SW_EX_NONE)
        rc = sw_buf_addf(out, " (mostly: %s)", sw_exclusion_text(d->main_exclusion));
    if (rc == 0 && d->n_preempt > 0) {
        /* Which Jobs it stops, and the work they lose. */
        const struct sw_local_queue *q = &s->queues[d->preempt_queue];
        double lost = 0;
        for (size_t i = 0; i < d->n_preempt; i++)
            lost += q->running[d->preempt[i]].lost_s;
        rc = sw_buf_addf(out, " (stops %zu running Job%s of queue \"%s\", losing %.2f h of work)",
                         d->n_preempt, d->n_preempt == 1 ? "" : "s", q->pool, lost / 3600.0);
    }
    if (rc == 0 && policy->kind == SW_POLICY_COST_AWARE)
        rc = sw_buf_addf(out, "; delay valued at $%.2f per GPU-hour",
                         sw_policy_delay_value(policy, s));
    if (rc == 0)
        rc = sw_buf_adds(out, "\n");
    if (rc != 0)
        return rc;
    if (d->n_options > 0) {
        for (size_t i = 0; i < d->n_options && rc == 0; i++)
            rc = option_text(s, &d->options[i], (int)i == d->pool, out);
    } else if (d->verdict != SW_VERDICT_REJECT) {
        rc = option_text(s, &d->chosen, true, out);
    }
    return rc;
}

static double cents(double v)
{
    return round(v * 100.0) / 100.0;
}

static double millis(double v)
{
    return round(v * 1000.0) / 1000.0;
}

static cJSON *option_json(const struct sw_snapshot *s, const struct sw_option *o)
{
    const struct sw_pool *p = &s->pools[o->pool];
    cJSON *j = cJSON_CreateObject();
    if (j == NULL)
        return NULL;
    bool ok = cJSON_AddStringToObject(j, "pool", p->name) &&
              cJSON_AddStringToObject(j, "capacity", sw_capacity_name(p->capacity)) &&
              cJSON_AddStringToObject(j, "region", p->region) &&
              cJSON_AddBoolToObject(j, "stay", o->stay) &&
              cJSON_AddBoolToObject(j, "eligible", o->excluded == SW_EX_NONE) &&
              cJSON_AddStringToObject(j, "excluded", sw_exclusion_token(o->excluded));
    bool priced = o->excluded == SW_EX_NONE || o->excluded == SW_EX_POLICY;
    if (ok && o->excluded != SW_EX_NONE)
        ok = cJSON_AddStringToObject(j, "why", sw_exclusion_text(o->excluded)) != NULL;
    if (ok && priced) {
        cJSON *c = cJSON_AddObjectToObject(j, "cost");
        ok = c && cJSON_AddNumberToObject(c, "run", cents(o->cost.run_cost)) &&
             cJSON_AddNumberToObject(c, "provisioning", cents(o->cost.provision_cost)) &&
             cJSON_AddNumberToObject(c, "interruptions", cents(o->cost.interruption_cost)) &&
             cJSON_AddNumberToObject(c, "egress", cents(o->cost.egress_cost)) &&
             cJSON_AddNumberToObject(c, "total", cents(o->cost.total)) &&
             cJSON_AddNumberToObject(j, "expected_interruptions", millis(o->cost.interruptions)) &&
             cJSON_AddNumberToObject(j, "wait_seconds", millis(o->wait_s)) &&
             cJSON_AddNumberToObject(j, "provisioning_seconds", millis(o->provision_s)) &&
             cJSON_AddNumberToObject(j, "transfer_seconds", millis(o->transfer_s)) &&
             cJSON_AddNumberToObject(j, "completion_seconds", millis(o->completion - s->now)) &&
             cJSON_AddBoolToObject(j, "deadline_ok", o->deadline_ok) &&
             cJSON_AddBoolToObject(j, "deadline_median_ok", o->deadline_median_ok) &&
             cJSON_AddNumberToObject(j, "score", cents(o->score)) &&
             cJSON_AddNumberToObject(j, "congestion", cents(o->congestion)) &&
             cJSON_AddNumberToObject(j, "borrowed_gpus", o->borrowed);
    }
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int sw_explain_json(const struct sw_snapshot *s, const struct sw_policy *policy,
                    const struct sw_decision *d, cJSON **out)
{
    sw_json_init_hooks();
    const struct sw_workload *w = &s->pending[d->workload];
    *out = NULL;
    cJSON *j = cJSON_CreateObject();
    if (j == NULL)
        return SW_ENOMEM;
    bool ok = cJSON_AddStringToObject(j, "workload", w->name) &&
              cJSON_AddStringToObject(j, "team", w->team) &&
              cJSON_AddStringToObject(j, "priority", sw_priority_name(w->prio)) &&
              cJSON_AddNumberToObject(j, "gpus", sw_workload_gpus(w)) &&
              cJSON_AddStringToObject(j, "policy", sw_policy_name(policy->kind)) &&
              cJSON_AddStringToObject(j, "verdict", sw_verdict_name(d->verdict)) &&
              cJSON_AddStringToObject(j, "reason", sw_why_token(d->why)) &&
              cJSON_AddStringToObject(j, "reason_text", sw_why_text(d->why)) &&
              cJSON_AddNumberToObject(j, "runtime_seconds", millis(d->runtime_s)) &&
              cJSON_AddBoolToObject(j, "runtime_learned", d->runtime_learned) &&
              cJSON_AddNumberToObject(j, "runtime_sigma", s->pending[d->workload].runtime_sigma) &&
              cJSON_AddNumberToObject(j, "rank", (double)d->rank);
    if (ok && d->verdict != SW_VERDICT_REJECT) {
        cJSON *c = option_json(s, &d->chosen);
        ok = cJSON_AddStringToObject(j, "pool", s->pools[d->pool].name) && c &&
             cJSON_AddItemToObject(j, "chosen", c);
        if (!ok && c && !cJSON_GetObjectItemCaseSensitive(j, "chosen"))
            cJSON_Delete(c);
    }
    if (ok && d->verdict == SW_VERDICT_REJECT)
        ok = cJSON_AddStringToObject(j, "main_exclusion", sw_exclusion_token(d->main_exclusion));
    if (ok && d->n_preempt > 0) {
        /* The running Jobs it stops: indexes into the queue's running list. */
        cJSON *pre = cJSON_AddObjectToObject(j, "preempt");
        cJSON *runs = pre ? cJSON_AddArrayToObject(pre, "running") : NULL;
        ok = runs != NULL &&
             cJSON_AddStringToObject(pre, "queue", s->queues[d->preempt_queue].pool) != NULL;
        for (size_t i = 0; ok && i < d->n_preempt; i++) {
            cJSON *n = cJSON_CreateNumber(d->preempt[i]);
            ok = n != NULL && cJSON_AddItemToArray(runs, n);
        }
    }
    if (ok && policy->kind == SW_POLICY_COST_AWARE)
        ok = cJSON_AddNumberToObject(j, "delay_value_per_gpu_hour",
                                     sw_policy_delay_value(policy, s));
    if (ok && d->n_options > 0) {
        cJSON *arr = cJSON_AddArrayToObject(j, "options");
        ok = arr != NULL;
        for (size_t i = 0; ok && i < d->n_options; i++) {
            cJSON *o = option_json(s, &d->options[i]);
            ok = o != NULL && cJSON_AddItemToArray(arr, o);
        }
    }
    if (!ok) {
        cJSON_Delete(j);
        return SW_ENOMEM;
    }
    *out = j;
    return 0;
}

int sw_explain_json_string(const struct sw_snapshot *s, const struct sw_policy *policy,
                           const struct sw_decision *d, char **out)
{
    cJSON *j;
    *out = NULL;
    int rc = sw_explain_json(s, policy, d, &j);
    if (rc != 0)
        return rc;
    *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return *out ? 0 : SW_ENOMEM;
}
