/*
 * learn.c - learned provisioning delays and interruption rates (learn.h):
 * the figures, their JSON form in Redis, and what explain shows of them.
 */
#include "controller/hub/learn.h"
#include "placement/estimate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool sw_learn_shortage_begin(struct sw_learned *l, int64_t at_ms)
{
    if (l->short_since_ms > 0 || at_ms <= 0)
        return false;
    l->short_since_ms = at_ms;
    return true;
}

double sw_learn_shortage_end(struct sw_learned *l, int64_t at_ms)
{
    if (l->short_since_ms <= 0 || at_ms < l->short_since_ms)
        return -1;
    double d = (double)(at_ms - l->short_since_ms) / 1000.0;
    if (l->nshortage_s == SW_LEARN_SHORTAGES) {
        memmove(l->shortage_s, l->shortage_s + 1, (SW_LEARN_SHORTAGES - 1) * sizeof(double));
        l->nshortage_s--;
    }
    l->shortage_s[l->nshortage_s++] = d;
    l->shortages++;
    l->shortage_sum_s += d;
    l->short_since_ms = 0;
    return d;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sw_learn_capacity_wait(const struct sw_learned *l, int64_t now_ms, double *points,
                              int *npoints)
{
    *npoints = 0;
    if (l->short_since_ms <= 0)
        return 0;
    double e = now_ms > l->short_since_ms ? (double)(now_ms - l->short_since_ms) / 1000.0 : 0;
    double r[SW_LEARN_SHORTAGES], sum = 0, w;
    int k = 0;
    for (int i = 0; i < l->nshortage_s; i++)
        if (l->shortage_s[i] > e) {
            r[k] = l->shortage_s[i] - e;
            sum += r[k++];
        }
    if (k > 0) {
        w = sum / k;
        qsort(r, (size_t)k, sizeof(double), cmp_double);
        int n = k < SW_LEARN_WAIT_POINTS ? k : SW_LEARN_WAIT_POINTS;
        for (int q = 0; q < n; q++) {
            /* Equally likely points: each residual when they are few, the
             * middle of each of n equal slices otherwise (as sim.c). */
            int at = k < SW_LEARN_WAIT_POINTS ? q : (int)(((double)q + 0.5) * k / n);
            double v = r[at] < SW_SHORTAGE_MIN_WAIT_S ? SW_SHORTAGE_MIN_WAIT_S : r[at];
            if (points != NULL)
                points[q] = v;
        }
        *npoints = points != NULL ? n : 0;
    } else if (l->nshortage_s == 0) {
        w = e > SW_PRIOR_SHORTAGE_S ? e : SW_PRIOR_SHORTAGE_S;
    } else {
        w = e;
    }
    return w < SW_SHORTAGE_MIN_WAIT_S ? SW_SHORTAGE_MIN_WAIT_S : w;
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
        !cJSON_AddNumberToObject(o, "runHours", l->run_hours) ||
        !cJSON_AddNumberToObject(o, "shortages", (double)l->shortages) ||
        !cJSON_AddNumberToObject(o, "shortageSumSeconds", l->shortage_sum_s) ||
        !cJSON_AddNumberToObject(o, "shortSinceMs", (double)l->short_since_ms)) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON *a = cJSON_AddArrayToObject(o, "shortageSeconds");
    for (int i = 0; a != NULL && i < l->nshortage_s; i++) {
        cJSON *v = cJSON_CreateNumber(l->shortage_s[i]);
        if (v == NULL || !cJSON_AddItemToArray(a, v)) {
            cJSON_Delete(v);
            a = NULL;
        }
    }
    if (a == NULL) {
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
    /* Shortages: entries written before they were learned have none. */
    double sv[3] = {0, 0, 0};
    static const char *const snames[] = {"shortages", "shortageSumSeconds", "shortSinceMs"};
    for (size_t i = 0; i < 3; i++) {
        int rc = cJSON_GetObjectItemCaseSensitive(o, snames[i]) == NULL
                     ? 0
                     : field(o, what, snames[i], &sv[i], err);
        if (rc != 0)
            return rc;
    }
    double d[SW_LEARN_SHORTAGES];
    int nd = 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "shortageSeconds");
    if (arr != NULL && !cJSON_IsArray(arr))
        return sw_error_set(err, SW_EPARSE,
                            "learned figures %s: field \"shortageSeconds\": expected an array of "
                            "seconds",
                            what);
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
    {
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || x->valuedouble > 9.0e15)
            return sw_error_set(err, SW_EPARSE,
                                "learned figures %s: field \"shortageSeconds\": item %d: "
                                "expected a number of seconds from 0 to 9e15",
                                what, nd + 1);
        /* The latest are kept when a longer list was written. */
        if (nd == SW_LEARN_SHORTAGES) {
            memmove(d, d + 1, (SW_LEARN_SHORTAGES - 1) * sizeof(double));
            nd--;
        }
        d[nd++] = x->valuedouble;
    }
    *out = (struct sw_learned){
        .provisions = (uint64_t)v[0],
        .provision_sum_s = v[1],
        .provision_last_s = v[2],
        .last_ready_ms = (int64_t)v[3],
        .interruptions = (uint64_t)v[4],
        .run_hours = v[5],
        .shortages = (uint64_t)sv[0],
        .shortage_sum_s = sv[1],
        .short_since_ms = (int64_t)sv[2],
        .nshortage_s = nd,
    };
    memcpy(out->shortage_s, d, (size_t)nd * sizeof(double));
    return 0;
}

cJSON *sw_learn_basis_json(const char *nodepool, const struct sw_learned *seen, double provision_s,
                           double interrupt_per_h, double capacity_wait_s, int64_t now_ms)
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
    const char *cfrom = capacity_wait_s <= 0                    ? "none"
                        : seen != NULL && seen->nshortage_s > 0 ? "learned"
                                                                : "prior";
    double short_for = seen != NULL && seen->short_since_ms > 0 && now_ms > seen->short_since_ms
                           ? (double)(now_ms - seen->short_since_ms) / 1000.0
                           : 0;
    bool ok =
        cJSON_AddStringToObject(o, "source", np ? "nodepool" : "nodes") &&
        (!np || cJSON_AddStringToObject(o, "nodePool", nodepool)) &&
        cJSON_AddNumberToObject(o, "provisionSeconds", round(provision_s * 1000) / 1000) &&
        cJSON_AddStringToObject(o, "provisionFrom", pfrom) &&
        cJSON_AddNumberToObject(o, "provisionsSeen", seen ? (double)seen->provisions : 0) &&
        cJSON_AddNumberToObject(o, "interruptPerHour", round(interrupt_per_h * 1e6) / 1e6) &&
        cJSON_AddStringToObject(o, "interruptFrom", ifrom) &&
        cJSON_AddNumberToObject(o, "interruptionsSeen", seen ? (double)seen->interruptions : 0) &&
        cJSON_AddNumberToObject(o, "runHoursSeen", seen ? round(seen->run_hours * 1e4) / 1e4 : 0) &&
        cJSON_AddNumberToObject(o, "capacityWaitSeconds", round(capacity_wait_s * 1000) / 1000) &&
        cJSON_AddStringToObject(o, "capacityWaitFrom", cfrom) &&
        cJSON_AddNumberToObject(o, "shortForSeconds", round(short_for * 1000) / 1000) &&
        cJSON_AddNumberToObject(o, "shortagesSeen", seen ? (double)seen->shortages : 0);
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

double sw_learn_capped_remaining(double remaining_s, double max_s, int64_t start_ms, int64_t now_ms)
{
    if (!(max_s > 0) || start_ms <= 0)
        return remaining_s;
    double ran = now_ms > start_ms ? (double)(now_ms - start_ms) / 1000.0 : 0;
    double left = max_s > ran ? max_s - ran : 0;
    return left < remaining_s ? left : remaining_s;
}

double sw_learn_queued_runtime(double declared_s, double max_s, double prior_s)
{
    double r = declared_s > 0 ? declared_s : prior_s;
    return max_s > 0 && max_s < r ? max_s : r;
}

/* A renewTime changed with a holder: a renewal (dated now). */
static bool renewed(struct sw_ctl_seen *s, const char *renew, const char *holder, int64_t now_ms)
{
    if (renew == NULL)
        renew = "";
    bool held = holder != NULL && holder[0] != '\0';
    bool r = !s->seen || (held && strncmp(renew, s->renew, sizeof(s->renew) - 1) != 0);
    if (r) {
        s->renewed_ms = now_ms;
        s->confirmed = false;
    }
    s->seen = true;
    snprintf(s->renew, sizeof(s->renew), "%.*s", (int)sizeof(s->renew) - 1, renew);
    return r;
}

int sw_learn_ctl_observe(struct sw_ctl_seen *s, bool present, const char *renew, const char *holder,
                         double lease_s, int64_t now_ms, bool trusted)
{
    int64_t looked = s->looked_ms;
    s->looked_ms = now_ms;
    if (present) {
        renewed(s, renew, holder, now_ms);
        s->lease_s = lease_s > 0 ? (lease_s < SW_CTL_LEASE_MAX_S ? lease_s : SW_CTL_LEASE_MAX_S)
                                 : SW_CTL_LEASE_S;
    }
    if (!s->seen)
        return 0;
    /* What the hub could not see is no silence: the last renewal moves on. */
    if (!trusted) {
        if (s->down_since_ms == 0 && looked > 0 && now_ms > looked) {
            s->renewed_ms += now_ms - looked;
            if (s->renewed_ms > now_ms)
                s->renewed_ms = now_ms;
        }
        return 0;
    }
    bool down = (double)(now_ms - s->renewed_ms) / 1000.0 > s->lease_s + SW_CTL_GRACE_S;
    if (down && s->down_since_ms == 0) {
        if (!s->confirmed)
            return SW_CTL_CONFIRM;
        s->down_since_ms = now_ms;
        return 1;
    }
    if (!down && s->down_since_ms != 0) {
        s->down_since_ms = 0;
        return -1;
    }
    return 0;
}

void sw_learn_ctl_confirm(struct sw_ctl_seen *s, bool ok, bool present, const char *renew,
                          const char *holder, int64_t now_ms)
{
    if (!ok || !s->seen)
        return;
    if (present && renewed(s, renew, holder, now_ms))
        return;
    s->confirmed = true;
}

double sw_learn_ctl_silent_s(const struct sw_ctl_seen *s, int64_t now_ms)
{
    return s->seen && now_ms > s->renewed_ms ? (double)(now_ms - s->renewed_ms) / 1000.0 : 0;
}
