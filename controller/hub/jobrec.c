/*
 * jobrec.c - the hub's per-Job record and its JSON form (jobrec.h).
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "controller/hub/jobrec.h"

static const char *state_names[SW_JS__COUNT] = {
    "observed", "decided",   "data-ready", "dispatching", "dispatched",
    "running",  "succeeded", "failed",     "blocked",     "requeued",
};

const char *sw_job_state_name(enum sw_job_state s)
{
    return (unsigned)s < SW_JS__COUNT ? state_names[s] : "unknown";
}

int sw_job_state_parse(const char *s, enum sw_job_state *out)
{
    for (int i = 0; i < SW_JS__COUNT; i++)
        if (strcmp(s, state_names[i]) == 0) {
            *out = (enum sw_job_state)i;
            return 0;
        }
    return SW_EINVAL;
}

static const char *form_name(enum sw_job_form f)
{
    return f == SW_FORM_DELEGATED ? "delegated" : "annotation";
}

cJSON *sw_job_rec_to_json(const struct sw_job_rec *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "key", r->key);
    cJSON_AddStringToObject(o, "cluster", r->cluster);
    cJSON_AddStringToObject(o, "namespace", r->ns);
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "uid", r->uid);
    cJSON_AddStringToObject(o, "form", form_name(r->form));
    cJSON_AddStringToObject(o, "state", sw_job_state_name(r->state));
    cJSON_AddNumberToObject(o, "attempt", r->attempt);
    cJSON_AddNumberToObject(o, "preemptions", r->preemptions);
    cJSON_AddNumberToObject(o, "withdrawals", r->withdrawals);
    cJSON_AddStringToObject(o, "targetCluster", r->target_cluster);
    cJSON_AddStringToObject(o, "targetPool", r->target_pool);
    cJSON_AddStringToObject(o, "targetRegion", r->target_region);
    cJSON_AddStringToObject(o, "capacity", r->capacity);
    cJSON_AddStringToObject(o, "mirror", r->mirror);
    cJSON_AddStringToObject(o, "team", r->team);
    if (r->outputs[0] != '\0')
        cJSON_AddStringToObject(o, "outputs", r->outputs);
    cJSON_AddNumberToObject(o, "gpus", r->gpus);
    cJSON_AddNumberToObject(o, "billedGpus", r->billed_gpus);
    cJSON_AddNumberToObject(o, "pricePerGpuHour", r->price_gpu_h);
    cJSON_AddNumberToObject(o, "expectedCost", r->expected_cost);
    if (r->reserved_cost > 0)
        cJSON_AddNumberToObject(o, "reservedCost", r->reserved_cost);
    cJSON_AddNumberToObject(o, "homeWaitSeconds", r->home_wait_s);
    cJSON_AddNumberToObject(o, "burstNowCost", r->burst_now_cost);
    cJSON_AddStringToObject(o, "summary", r->summary);
    cJSON_AddStringToObject(o, "reason", r->reason);
    cJSON_AddNumberToObject(o, "inputBytes", (double)r->input_bytes);
    cJSON_AddNumberToObject(o, "created", r->created);
    cJSON_AddNumberToObject(o, "observedMs", (double)r->observed_ms);
    cJSON_AddNumberToObject(o, "decidedMs", (double)r->decided_ms);
    cJSON_AddNumberToObject(o, "dataReadyMs", (double)r->data_ready_ms);
    cJSON_AddNumberToObject(o, "dispatchedMs", (double)r->dispatched_ms);
    cJSON_AddNumberToObject(o, "startedMs", (double)r->started_ms);
    cJSON_AddNumberToObject(o, "finishedMs", (double)r->finished_ms);
    cJSON_AddNumberToObject(o, "mirrorCompletedMs", (double)r->mirror_completed_ms);
    cJSON_AddNumberToObject(o, "nodeWaitMs", (double)r->node_wait_ms);
    cJSON_AddStringToObject(o, "nodePool", r->node_pool);
    cJSON_AddStringToObject(o, "nodeClaim", r->node_claim);
    cJSON_AddNumberToObject(o, "nodeWaitExpectedSeconds", r->node_wait_expected_s);
    cJSON_AddNumberToObject(o, "nodeWaitSeconds", r->node_wait_s);
    cJSON_AddNumberToObject(o, "epoch", (double)r->epoch);
    cJSON_AddStringToObject(o, "onClusterLoss", r->wait_on_loss ? "wait" : "requeue");
    cJSON *st = cJSON_AddArrayToObject(o, "staleMirrors");
    for (int i = 0; i < r->nstale; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "cluster", r->stale[i].cluster);
        cJSON_AddStringToObject(m, "name", r->stale[i].name);
        cJSON_AddNumberToObject(m, "attempt", r->stale[i].attempt);
        cJSON_AddItemToArray(st, m);
    }
    cJSON *ct = cJSON_AddArrayToObject(o, "copiedTo");
    for (int i = 0; i < r->ncopied; i++)
        cJSON_AddItemToArray(ct, cJSON_CreateString(r->copied_to[i]));
    if (r->has_kueue) {
        cJSON *k = cJSON_AddObjectToObject(o, "kueue");
        cJSON_AddStringToObject(k, "clusterQueue", r->kueue.cluster_queue);
        cJSON_AddStringToObject(k, "localQueue", r->kueue.local_queue);
        cJSON_AddNumberToObject(k, "reservedGpus", (double)r->kueue.reserved_gpus);
        cJSON_AddNumberToObject(k, "nominalGpus", (double)r->kueue.nominal_gpus);
        cJSON_AddNumberToObject(k, "ahead", (double)r->kueue.ahead);
        if (r->kueue.preempted)
            cJSON_AddBoolToObject(k, "preempted", 1);
    }
    if (r->belief_set) {
        cJSON *b = cJSON_AddObjectToObject(o, "runtimeBelief");
        cJSON_AddNumberToObject(b, "medianSeconds", r->belief.median_s);
        cJSON_AddNumberToObject(b, "sigma", r->belief.sigma);
        cJSON_AddStringToObject(b, "source", sw_estimate_source_name(r->belief.source));
        cJSON_AddNumberToObject(b, "runs", (double)r->belief.runs);
        cJSON_AddNumberToObject(b, "level", r->belief.level);
        cJSON_AddNumberToObject(b, "annotatedSeconds", r->annotated_s);
        cJSON_AddStringToObject(b, "priority", sw_priority_name(r->prio));
        cJSON_AddStringToObject(b, "label", r->label);
    }
    cJSON_AddBoolToObject(o, "runtimeCounted", r->runtime_counted);
    return o;
}

static int get_str(const cJSON *o, const char *k, char *dst, size_t cap, const char *what,
                   struct sw_error *err)
{
    const char *s = NULL;
    int rc = sw_json_string(o, k, false, what, &s, err);
    if (rc != 0)
        return rc;
    if (s == NULL)
        s = "";
    if (strlen(s) >= cap)
        return sw_error_set(err, SW_ETOOBIG, "%s: field \"%s\": longer than %zu bytes", what, k,
                            cap - 1);
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int get_num(const cJSON *o, const char *k, double *out, const char *what,
                   struct sw_error *err)
{
    *out = 0;
    return sw_json_number(o, k, false, what, out, err);
}

/* The record's "kueue" (absent in records of Jobs no Kueue queue held, and
 * in every record written before it existed). Each field is required once
 * the object is there, and named when it is wrong. */
static int get_kueue(const cJSON *o, struct sw_job_rec *r, struct sw_error *err)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kueue");
    if (k == NULL || cJSON_IsNull(k))
        return 0;
    char what[300];
    snprintf(what, sizeof(what), "job record %s", r->key);
    if (!cJSON_IsObject(k))
        return sw_error_set(err, SW_EPARSE, "%s: field \"kueue\": expected an object, got %s", what,
                            sw_json_type_name(k));
    struct sw_job_kueue *q = &r->kueue;
    static const struct {
        const char *path;
        size_t off;
    } names[] = {
        {"kueue.clusterQueue", offsetof(struct sw_job_kueue, cluster_queue)},
        {"kueue.localQueue", offsetof(struct sw_job_kueue, local_queue)},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *s = NULL;
        int rc = sw_json_string(o, names[i].path, true, what, &s, err);
        if (rc == SW_ENOENT)
            return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": missing", what, names[i].path);
        if (rc != 0)
            return rc;
        char *dst = (char *)q + names[i].off;
        if (strlen(s) >= sizeof(q->cluster_queue))
            return sw_error_set(err, SW_ETOOBIG, "%s: field \"%s\": longer than %zu bytes", what,
                                names[i].path, sizeof(q->cluster_queue) - 1);
        memcpy(dst, s, strlen(s) + 1);
    }
    static const struct {
        const char *path;
        size_t off;
    } counts[] = {
        {"kueue.reservedGpus", offsetof(struct sw_job_kueue, reserved_gpus)},
        {"kueue.nominalGpus", offsetof(struct sw_job_kueue, nominal_gpus)},
        {"kueue.ahead", offsetof(struct sw_job_kueue, ahead)},
    };
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        int64_t v = 0;
        int rc = sw_json_int64(o, counts[i].path, true, what, &v, err);
        if (rc == SW_ENOENT)
            return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": missing", what, counts[i].path);
        if (rc != 0)
            return rc;
        if (v < 0)
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"%s\": expected a count of 0 or more, got %lld", what,
                                counts[i].path, (long long)v);
        memcpy((char *)q + counts[i].off, &v, sizeof(v));
    }
    /* Absent in records written before it, and whenever false. */
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(k, "preempted");
    if (pre != NULL && !cJSON_IsBool(pre))
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"kueue.preempted\": expected a boolean, got %s", what,
                            sw_json_type_name(pre));
    q->preempted = cJSON_IsTrue(pre);
    if (q->local_queue[0] == '\0')
        return sw_error_set(err, SW_EPARSE, "%s: field \"kueue.localQueue\": empty", what);
    r->has_kueue = true;
    return 0;
}

/* A number of the belief, finite and within [lo, hi] (a record is untrusted). */
static int belief_num(const cJSON *b, const char *k, double lo, double hi, const char *key,
                      double *out, struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return sw_error_set(err, SW_EPARSE,
                            "job record %s: field \"runtimeBelief.%s\": %s, expected a number "
                            "from %g to %g",
                            key, k, v == NULL ? "missing" : "not one in range", lo, hi);
    *out = v->valuedouble;
    return 0;
}

/* The record's "runtimeBelief" (absent in records written before it): every
 * field required and checked once the object is there. */
static int get_belief(const cJSON *o, struct sw_job_rec *r, struct sw_error *err)
{
    const cJSON *rc_ = cJSON_GetObjectItemCaseSensitive(o, "runtimeCounted");
    if (rc_ != NULL && !cJSON_IsBool(rc_))
        return sw_error_set(err, SW_EPARSE,
                            "job record %s: field \"runtimeCounted\": expected true or false",
                            r->key);
    r->runtime_counted = cJSON_IsTrue(rc_);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "runtimeBelief");
    if (b == NULL || cJSON_IsNull(b))
        return 0;
    if (!cJSON_IsObject(b))
        return sw_error_set(err, SW_EPARSE,
                            "job record %s: field \"runtimeBelief\": expected an object", r->key);
    double med, sg, runs, level, ann;
    int rc;
    if ((rc = belief_num(b, "medianSeconds", 1e-3, SW_MAX_SECONDS, r->key, &med, err)) != 0 ||
        (rc = belief_num(b, "sigma", 0, SW_MAX_SIGMA, r->key, &sg, err)) != 0 ||
        (rc = belief_num(b, "runs", 0, 9e15, r->key, &runs, err)) != 0 ||
        (rc = belief_num(b, "level", 0, 4, r->key, &level, err)) != 0 ||
        (rc = belief_num(b, "annotatedSeconds", 0, SW_MAX_SECONDS, r->key, &ann, err)) != 0)
        return rc;
    const char *src = sw_json_str(b, "source"), *prio = sw_json_str(b, "priority");
    const char *label = sw_json_str(b, "label");
    enum sw_estimate_source es;
    if (src != NULL && strcmp(src, "annotation") == 0)
        es = SW_EST_ANNOTATION;
    else if (src != NULL && strcmp(src, "learned") == 0)
        es = SW_EST_LEARNED;
    else if (src != NULL && strcmp(src, "prior") == 0)
        es = SW_EST_PRIOR;
    else
        return sw_error_set(err, SW_EPARSE,
                            "job record %s: field \"runtimeBelief.source\": expected "
                            "\"annotation\", \"learned\" or \"prior\"",
                            r->key);
    if (prio == NULL || sw_priority_parse(prio, &r->prio) != 0)
        return sw_error_set(err, SW_EPARSE,
                            "job record %s: field \"runtimeBelief.priority\": expected a "
                            "priority class (best-effort, development, training, production)",
                            r->key);
    if (label == NULL || strlen(label) >= sizeof(r->label))
        return sw_error_set(err, SW_EPARSE,
                            "job record %s: field \"runtimeBelief.label\": expected a string of "
                            "at most %zu bytes",
                            r->key, sizeof(r->label) - 1);
    snprintf(r->label, sizeof(r->label), "%s", label);
    r->belief = (struct sw_estimate){
        .median_s = med, .sigma = sg, .source = es, .runs = (size_t)runs, .level = (int)level};
    r->annotated_s = ann;
    r->belief_set = true;
    return 0;
}

int sw_job_rec_from_json(const cJSON *o, struct sw_job_rec *r, struct sw_error *err)
{
    memset(r, 0, sizeof(*r));
    const char *what = "job record";
    char tmp[32];
    double d;
    int rc;
#define S(k, f)                                                                                    \
    if ((rc = get_str(o, k, r->f, sizeof(r->f), what, err)) != 0)                                  \
        return rc;
#define N(k, f, T)                                                                                 \
    if ((rc = get_num(o, k, &d, what, err)) != 0)                                                  \
        return rc;                                                                                 \
    r->f = (T)d;
/* An integer field: range-checked before the cast (a double out of the
 * type's range is undefined behaviour to convert). */
#define NI(k, f, T, lo, hi)                                                                        \
    if ((rc = get_num(o, k, &d, what, err)) != 0)                                                  \
        return rc;                                                                                 \
    if (!(d >= (lo) && d <= (hi)))                                                                 \
        return sw_error_set(err, SW_EPARSE,                                                        \
                            "%s %s: field \"%s\": expected a number from %.0f to %.0f", what,      \
                            r->key, k, (double)(lo), (double)(hi));                                \
    r->f = (T)d;
    S("key", key);
    S("cluster", cluster);
    S("namespace", ns);
    S("name", name);
    S("uid", uid);
    if ((rc = get_str(o, "form", tmp, sizeof(tmp), what, err)) != 0)
        return rc;
    r->form = strcmp(tmp, "delegated") == 0 ? SW_FORM_DELEGATED : SW_FORM_ANNOTATION;
    if ((rc = get_str(o, "state", tmp, sizeof(tmp), what, err)) != 0)
        return rc;
    if (sw_job_state_parse(tmp, &r->state) != 0)
        return sw_error_set(err, SW_EINVAL, "%s %s: field \"state\": unknown state \"%s\"", what,
                            r->key, tmp);
    NI("attempt", attempt, int, INT_MIN, INT_MAX);
    NI("preemptions", preemptions, int, INT_MIN, INT_MAX);
    NI("withdrawals", withdrawals, int, INT_MIN, INT_MAX);
    S("targetCluster", target_cluster);
    S("targetPool", target_pool);
    S("targetRegion", target_region);
    S("capacity", capacity);
    S("mirror", mirror);
    S("team", team);
    S("outputs", outputs);
    NI("gpus", gpus, int, INT_MIN, INT_MAX);
    N("billedGpus", billed_gpus, double);
    N("pricePerGpuHour", price_gpu_h, double);
    N("expectedCost", expected_cost, double);
    N("reservedCost", reserved_cost, double);
    N("homeWaitSeconds", home_wait_s, double);
    N("burstNowCost", burst_now_cost, double);
    S("summary", summary);
    S("reason", reason);
    NI("inputBytes", input_bytes, int64_t, -9.2e18, 9.2e18);
    N("created", created, double);
    NI("observedMs", observed_ms, int64_t, -9.2e18, 9.2e18);
    NI("decidedMs", decided_ms, int64_t, -9.2e18, 9.2e18);
    NI("dataReadyMs", data_ready_ms, int64_t, -9.2e18, 9.2e18);
    NI("dispatchedMs", dispatched_ms, int64_t, -9.2e18, 9.2e18);
    NI("startedMs", started_ms, int64_t, -9.2e18, 9.2e18);
    NI("finishedMs", finished_ms, int64_t, -9.2e18, 9.2e18);
    NI("mirrorCompletedMs", mirror_completed_ms, int64_t, -9.2e18, 9.2e18);
    NI("nodeWaitMs", node_wait_ms, int64_t, -9.2e18, 9.2e18);
    S("nodePool", node_pool);
    S("nodeClaim", node_claim);
    N("nodeWaitExpectedSeconds", node_wait_expected_s, double);
    N("nodeWaitSeconds", node_wait_s, double);
    NI("epoch", epoch, int64_t, -9.2e18, 9.2e18);
#undef S
#undef N
#undef NI
    if ((rc = get_str(o, "onClusterLoss", tmp, sizeof(tmp), what, err)) != 0)
        return rc;
    r->wait_on_loss = strcmp(tmp, "wait") == 0;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "staleMirrors");
    if (st != NULL && !cJSON_IsArray(st))
        return sw_error_set(err, SW_EINVAL, "%s %s: field \"staleMirrors\": expected a list", what,
                            r->key);
    const cJSON *m;
    cJSON_ArrayForEach(m, st)
    {
        if (r->nstale >= SW_REC_MAX_STALE)
            return sw_error_set(err, SW_ETOOBIG,
                                "%s %s: field \"staleMirrors\": more than %d entries", what, r->key,
                                SW_REC_MAX_STALE);
        struct sw_stale_mirror *sm = &r->stale[r->nstale];
        if ((rc = get_str(m, "cluster", sm->cluster, sizeof(sm->cluster), what, err)) != 0 ||
            (rc = get_str(m, "name", sm->name, sizeof(sm->name), what, err)) != 0 ||
            (rc = get_num(m, "attempt", &d, what, err)) != 0)
            return rc;
        if (sm->cluster[0] == '\0' || sm->name[0] == '\0')
            return sw_error_set(err, SW_EINVAL,
                                "%s %s: field \"staleMirrors\": an entry without cluster or name",
                                what, r->key);
        if (!(d >= 0 && d <= INT_MAX))
            return sw_error_set(err, SW_EPARSE,
                                "%s %s: field \"staleMirrors\": attempt: expected a number from 0 "
                                "to %d",
                                what, r->key, INT_MAX);
        sm->attempt = (int)d;
        r->nstale++;
    }
    /* Absent in records written before it existed. */
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(o, "copiedTo");
    if (ct != NULL && !cJSON_IsArray(ct))
        return sw_error_set(err, SW_EINVAL, "%s %s: field \"copiedTo\": expected a list", what,
                            r->key);
    cJSON_ArrayForEach(m, ct)
    {
        if (!cJSON_IsString(m) || m->valuestring[0] == '\0' ||
            strlen(m->valuestring) >= sizeof(r->copied_to[0]))
            return sw_error_set(err, SW_EINVAL,
                                "%s %s: field \"copiedTo\": expected cluster names of 1 to %zu "
                                "bytes",
                                what, r->key, sizeof(r->copied_to[0]) - 1);
        if (sw_job_rec_add_copied(r, m->valuestring) != 0)
            return sw_error_set(err, SW_ETOOBIG, "%s %s: field \"copiedTo\": more than %d entries",
                                what, r->key, SW_REC_MAX_COPIED);
    }
    if (r->key[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "%s: field \"key\": missing", what);
    if ((rc = get_belief(o, r, err)) != 0)
        return rc;
    return get_kueue(o, r, err);
}

int sw_job_rec_add_stale(struct sw_job_rec *r, const char *cluster, const char *name, int attempt)
{
    for (int i = 0; i < r->nstale; i++)
        if (strcmp(r->stale[i].cluster, cluster) == 0 && strcmp(r->stale[i].name, name) == 0)
            return 0;
    if (r->nstale >= SW_REC_MAX_STALE)
        return SW_ETOOBIG;
    struct sw_stale_mirror *sm = &r->stale[r->nstale++];
    snprintf(sm->cluster, sizeof(sm->cluster), "%s", cluster);
    snprintf(sm->name, sizeof(sm->name), "%s", name);
    sm->attempt = attempt;
    return 0;
}

int sw_job_rec_add_copied(struct sw_job_rec *r, const char *cluster)
{
    for (int i = 0; i < r->ncopied; i++)
        if (strcmp(r->copied_to[i], cluster) == 0)
            return 0;
    if (r->ncopied >= SW_REC_MAX_COPIED)
        return SW_ETOOBIG;
    snprintf(r->copied_to[r->ncopied++], sizeof(r->copied_to[0]), "%s", cluster);
    return 0;
}

void sw_job_rec_remove_stale(struct sw_job_rec *r, int i)
{
    if (i < 0 || i >= r->nstale)
        return;
    memmove(&r->stale[i], &r->stale[i + 1], (size_t)(r->nstale - i - 1) * sizeof(r->stale[0]));
    r->nstale--;
}

bool sw_job_rec_stale_on(const struct sw_job_rec *r, const char *cluster)
{
    for (int i = 0; i < r->nstale; i++)
        if (strcmp(r->stale[i].cluster, cluster) == 0)
            return true;
    return false;
}

/* "1 Workload", "5 Workloads". */
static const char *workloads(int64_t n)
{
    return n == 1 ? "Workload" : "Workloads";
}

void sw_job_kueue_text(const struct sw_job_kueue *k, char *buf, size_t len)
{
    const char *queued = k->preempted ? "preempted by Kueue, queued again" : "queued";
    if (k->cluster_queue[0] != '\0')
        snprintf(buf, len, "%s in ClusterQueue %s: %lld/%lld GPUs reserved, %lld %s ahead", queued,
                 k->cluster_queue, (long long)k->reserved_gpus, (long long)k->nominal_gpus,
                 (long long)k->ahead, workloads(k->ahead));
    else
        snprintf(buf, len,
                 "%s in LocalQueue %s: %lld/%lld GPUs reserved in its cluster's "
                 "ClusterQueues, %lld %s ahead",
                 queued, k->local_queue, (long long)k->reserved_gpus, (long long)k->nominal_gpus,
                 (long long)k->ahead, workloads(k->ahead));
}

void sw_job_kueue_short(const struct sw_job_kueue *k, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s %lld/%lld, %lld ahead", k->cluster_queue[0] ? "" : "LocalQueue ",
             k->cluster_queue[0] ? k->cluster_queue : k->local_queue, (long long)k->reserved_gpus,
             (long long)k->nominal_gpus, (long long)k->ahead);
}

double sw_job_rec_billed_gpus(const struct sw_job_rec *r)
{
    return r->billed_gpus > 0 ? r->billed_gpus : (double)r->gpus;
}

double sw_job_rec_cost(const struct sw_job_rec *r, int64_t now_ms)
{
    if (r->started_ms == 0)
        return 0;
    int64_t end = r->finished_ms ? r->finished_ms : now_ms;
    if (end < r->started_ms)
        return 0;
    return sw_job_rec_billed_gpus(r) * r->price_gpu_h * (double)(end - r->started_ms) / 3.6e6;
}
