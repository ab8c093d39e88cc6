/*
 * learn.c - learned provisioning delays and interruption rates (learn.h):
 * the figures, their JSON form in Redis, and what explain shows of them.
 */
#include "controller/hub/learn.h"
#include "placement/estimate.h"

#include <math.h>

double sw_learn_provision_s(uint64_t n, double sum_s)
{
    return n > 0 ? sum_s / (double)n : SW_PRIOR_PROVISION_S;
}

double sw_learn_interrupt_rate(uint64_t interruptions, double hours)
{
    if (hours < 0)
        hours = 0;
    return ((double)interruptions + SW_PRIOR_SPOT_INTERRUPT * SW_PRIOR_INTERRUPT_HOURS) /
           (hours + SW_PRIOR_INTERRUPT_HOURS);
}

cJSON *sw_learned_to_json(const struct sw_learned *l)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    if (!cJSON_AddNumberToObject(o, "provisions", (double)l->provisions) ||
        !cJSON_AddNumberToObject(o, "provisionSumSeconds", l->provision_sum_s) ||
        !cJSON_AddNumberToObject(o, "provisionLastSeconds", l->provision_last_s) ||
        !cJSON_AddNumberToObject(o, "lastReadyMs", (double)l->last_ready_ms) ||
        !cJSON_AddNumberToObject(o, "interruptions", (double)l->interruptions) ||
        !cJSON_AddNumberToObject(o, "runHours", l->run_hours)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int field(const cJSON *o, const char *what, const char *name, double *out,
                 struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v))
        return sw_error_set(err, SW_EPARSE, "learned figures %s: field \"%s\": %s", what, name,
                            v == NULL ? "missing, expected a number" : "expected a number");
    if (!(v->valuedouble >= 0) || v->valuedouble > 9.0e15)
        return sw_error_set(err, SW_EPARSE,
                            "learned figures %s: field \"%s\": %g, expected a number from 0 "
                            "to 9e15",
                            what, name, v->valuedouble);
    *out = v->valuedouble;
    return 0;
}

int sw_learned_from_json(const cJSON *o, const char *what, struct sw_learned *out,
                         struct sw_error *err)
{
    if (!cJSON_IsObject(o))
        return sw_error_set(err, SW_EPARSE, "learned figures %s: expected a JSON object", what);
    double v[6];
    static const char *const names[] = {"provisions",           "provisionSumSeconds",
                                        "provisionLastSeconds", "lastReadyMs",
                                        "interruptions",        "runHours"};
    for (size_t i = 0; i < 6; i++) {
        int rc = field(o, what, names[i], &v[i], err);
        if (rc != 0)
            return rc;
    }
    *out = (struct sw_learned){
        .provisions = (uint64_t)v[0],
        .provision_sum_s = v[1],
        .provision_last_s = v[2],
        .last_ready_ms = (int64_t)v[3],
        .interruptions = (uint64_t)v[4],
        .run_hours = v[5],
    };
    return 0;
}

cJSON *sw_learn_basis_json(const char *nodepool, const struct sw_learned *seen, double provision_s,
                           double interrupt_per_h)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    bool np = nodepool != NULL && nodepool[0] != '\0';
    const char *pfrom = provision_s <= 0                       ? "none"
                        : seen != NULL && seen->provisions > 0 ? "learned"
                                                               : "prior";
    const char *ifrom = interrupt_per_h <= 0 ? "none"
                        : seen != NULL && (seen->interruptions > 0 || seen->run_hours > 0)
                            ? "learned"
                            : "prior";
    bool ok =
        cJSON_AddStringToObject(o, "source", np ? "nodepool" : "nodes") &&
        (!np || cJSON_AddStringToObject(o, "nodePool", nodepool)) &&
        cJSON_AddNumberToObject(o, "provisionSeconds", round(provision_s * 1000) / 1000) &&
        cJSON_AddStringToObject(o, "provisionFrom", pfrom) &&
        cJSON_AddNumberToObject(o, "provisionsSeen", seen ? (double)seen->provisions : 0) &&
        cJSON_AddNumberToObject(o, "interruptPerHour", round(interrupt_per_h * 1e6) / 1e6) &&
        cJSON_AddStringToObject(o, "interruptFrom", ifrom) &&
        cJSON_AddNumberToObject(o, "interruptionsSeen", seen ? (double)seen->interruptions : 0) &&
        cJSON_AddNumberToObject(o, "runHoursSeen", seen ? round(seen->run_hours * 1e4) / 1e4 : 0);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

double sw_learn_home_remaining(double declared_s, int64_t start_ms, int64_t now_ms)
{
    if (!(declared_s > 0) || start_ms <= 0)
        return SW_PRIOR_HOME_REMAINING;
    struct sw_estimate est = {
        .median_s = declared_s, .sigma = SW_DECLARED_RUNTIME_SIGMA, .source = SW_EST_ANNOTATION};
    double ran = now_ms > start_ms ? (double)(now_ms - start_ms) / 1000.0 : 0;
    return sw_estimate_remaining(&est, ran);
}
