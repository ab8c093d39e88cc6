/*
 * kueue.c - Kueue's Workloads, ClusterQueues and ResourceFlavors read into
 * the facts the hub uses (kueue.h). The conditions and their reasons are
 * Kueue v0.17's (pkg/workload, pkg/scheduler/flavorassigner): a Workload
 * waiting for quota has QuotaReserved=False with reason Pending and a
 * message naming the flavour and "insufficient unused quota", or, requeued
 * after a preemption evicted it, reason Pending with Evicted=True, reason
 * Preempted.
 */
#include "clusters/kueue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/capacity.h"
#include "common/json.h"

static const cJSON *child(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = child(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *condition(const cJSON *status, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, child(status, "conditions"))
    {
        const char *t = str(c, "type");
        if (t != NULL && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

static bool cond_true(const cJSON *status, const char *type)
{
    const char *s = str(condition(status, type), "status");
    return s != NULL && strcmp(s, "True") == 0;
}

/* A whole-number quantity ("8", 8, "2k"); a GPU count is never fractional. */
static int whole(const cJSON *v, const char *what, const char *field, int64_t *out,
                 struct sw_error *err)
{
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
        v->valuedouble == (double)(int64_t)v->valuedouble) {
        *out = (int64_t)v->valuedouble;
        return 0;
    }
    if (cJSON_IsString(v)) {
        char *end = NULL;
        long long n = strtoll(v->valuestring, &end, 10);
        if (end != v->valuestring && n >= 0 && n < (1LL << 40)) {
            if (*end == 'k' && end[1] == '\0')
                n *= 1000;
            if (*end == '\0' || (*end == 'k' && end[1] == '\0')) {
                *out = n;
                return 0;
            }
        }
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"%s\": expected a whole number, got \"%.40s\"", what, field,
                            v->valuestring);
    }
    return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected a whole number, got %s", what,
                        field, sw_json_type_name(v));
}

static void copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

const char *sw_workload_state_name(enum sw_workload_state s)
{
    switch (s) {
    case SW_WL_PENDING_QUOTA:
        return "pending-quota";
    case SW_WL_PENDING_OTHER:
        return "pending";
    case SW_WL_NEW:
        return "new";
    case SW_WL_RESERVED:
        return "reserved";
    case SW_WL_ADMITTED:
        return "admitted";
    case SW_WL_INACTIVE:
        return "inactive";
    case SW_WL_FINISHED:
        return "finished";
    case SW_WL_INADMISSIBLE:
        return "inadmissible";
    }
    return "?";
}

int sw_workload_facts_from_json(const cJSON *wl, struct sw_workload_facts *out,
                                struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const cJSON *md = child(wl, "metadata"), *spec = child(wl, "spec"),
                *status = child(wl, "status");
    const char *name = str(md, "name"), *ns = str(md, "namespace");
    if (name == NULL || ns == NULL)
        return sw_error_set(err, SW_EPARSE, "Workload: field \"metadata.%s\": expected a string",
                            name == NULL ? "name" : "namespace");
    char what[340];
    snprintf(what, sizeof(what), "Workload %.63s/%.253s", ns, name);
    if (strlen(name) >= sizeof(out->name) || strlen(ns) >= sizeof(out->ns))
        return sw_error_set(err, SW_EPARSE, "%s: name or namespace too long", what);
    copy(out->name, sizeof(out->name), name);
    copy(out->ns, sizeof(out->ns), ns);
    copy(out->job_uid, sizeof(out->job_uid), str(child(md, "labels"), SW_KUEUE_JOB_UID_LABEL));
    copy(out->created, sizeof(out->created), str(md, "creationTimestamp"));
    out->owned = cJSON_GetArraySize(child(md, "ownerReferences")) > 0;
    const cJSON *ref;
    cJSON_ArrayForEach(ref, child(md, "ownerReferences"))
    {
        const char *kind = str(ref, "kind"), *owner = str(ref, "name");
        if (kind != NULL && strcmp(kind, "Job") == 0 && owner != NULL &&
            strlen(owner) < sizeof(out->owner_job)) {
            copy(out->owner_job, sizeof(out->owner_job), owner);
            break;
        }
    }
    const char *q = str(spec, "queueName");
    if (q == NULL || q[0] == '\0')
        return sw_error_set(err, SW_EPARSE, "%s: field \"spec.queueName\": expected a string",
                            what);
    copy(out->queue, sizeof(out->queue), q);
    const cJSON *prio = child(spec, "priority");
    out->priority = cJSON_IsNumber(prio) ? (int64_t)prio->valuedouble : 0;
    const cJSON *mx = child(spec, "maximumExecutionTimeSeconds");
    if (mx != NULL) {
        int rc = whole(mx, what, "spec.maximumExecutionTimeSeconds", &out->max_exec_s, err);
        if (rc != 0)
            return rc;
    }
    const cJSON *active = child(spec, "active");
    out->active = !cJSON_IsBool(active) || cJSON_IsTrue(active);

    const cJSON *sets = child(spec, "podSets");
    if (!cJSON_IsArray(sets) || cJSON_GetArraySize(sets) == 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"spec.podSets\": expected a non-empty array", what);
    const cJSON *ps;
    int i = 0;
    cJSON_ArrayForEach(ps, sets)
    {
        char field[64];
        snprintf(field, sizeof(field), "spec.podSets[%d].count", i);
        int64_t count = 0, gpus = 0;
        int rc = whole(child(ps, "count"), what, field, &count, err);
        if (rc != 0)
            return rc;
        if ((rc = sw_pod_spec_gpus(sw_json_path(ps, "template.spec"), what, &gpus, err)) != 0)
            return rc;
        out->gpus += count * gpus;
        i++;
    }

    copy(out->cluster_queue, sizeof(out->cluster_queue),
         str(child(status, "admission"), "clusterQueue"));
    const cJSON *qr = condition(status, "QuotaReserved");
    copy(out->reason, sizeof(out->reason), str(qr, "reason"));
    copy(out->message, sizeof(out->message), str(qr, "message"));
    out->evicted = cond_true(status, "Evicted");
    /* Evicted by a higher-priority Workload's preemption: Kueue's Job
     * reconciler (jobframework/reconciler.go, step 6) suspends the Job,
     * then clears the admission with QuotaReserved=False, reason Pending
     * and the preemption's message ("Preempted to accommodate a workload
     * ..."); the Workload is requeued and Evicted stays True, reason
     * Preempted, until quota is reserved again. It waits for quota as
     * much as a Workload the scheduler found no room for. */
    const cJSON *ev = condition(status, "Evicted");
    const char *ev_reason = str(ev, "reason");
    out->preempted = out->evicted && ev_reason != NULL && strcmp(ev_reason, "Preempted") == 0;
    if (out->evicted) {
        copy(out->evicted_reason, sizeof(out->evicted_reason), ev_reason);
        copy(out->evicted_message, sizeof(out->evicted_message), str(ev, "message"));
        copy(out->evicted_at, sizeof(out->evicted_at), str(ev, "lastTransitionTime"));
    }
    if (cond_true(status, "Finished"))
        out->state = SW_WL_FINISHED;
    else if (!out->active)
        out->state = SW_WL_INACTIVE;
    else if (cond_true(status, "Admitted"))
        out->state = SW_WL_ADMITTED;
    else if (cond_true(status, "QuotaReserved"))
        out->state = SW_WL_RESERVED;
    else if (strcmp(out->reason, "Pending") == 0 &&
             (strstr(out->message, "insufficient unused quota") != NULL || out->preempted))
        out->state = SW_WL_PENDING_QUOTA;
    else if (qr == NULL && !out->evicted)
        out->state = SW_WL_NEW;
    /* Kueue's Workload reconciler writes reason Inadmissible while the
     * Workload's LocalQueue does not exist ("LocalQueue gpu doesn't
     * exist"), its ClusterQueue does not ("ClusterQueue gpu doesn't
     * exist") or is inactive ("ClusterQueue gpu is inactive": stopped, or
     * a flavour it names missing); the scheduler's no-room-now is Pending. */
    else if (strcmp(out->reason, "Inadmissible") == 0)
        out->state = SW_WL_INADMISSIBLE;
    else
        out->state = SW_WL_PENDING_OTHER;
    return 0;
}

bool sw_workload_taken_back(const struct sw_workload_facts *f)
{
    /* Kueue's own reasons for a deactivation (InactiveWorkload; in later
     * versions Deactivated...): the Workload's owner paused it, and once
     * reactivated it keeps Evicted=True until quota is reserved again. */
    const char *r = f->evicted_reason;
    if (strncmp(r, "InactiveWorkload", 16) == 0 || strncmp(r, "Deactivated", 11) == 0)
        return false;
    return f->evicted && f->active && f->state != SW_WL_FINISHED;
}

/* The GPUs of one resource entry list ({name, <field>}) of a flavour. */
static int gpu_entry(const cJSON *resources, const char *field, const char *what, const char *path,
                     int64_t *out, bool *found, struct sw_error *err)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, resources)
    {
        const char *n = str(r, "name");
        if (n == NULL || strcmp(n, SW_GPU_RESOURCE) != 0)
            continue;
        const cJSON *v = child(r, field);
        if (v == NULL)
            return 0;
        char f[128];
        snprintf(f, sizeof(f), "%s.%s", path, field);
        int64_t n64 = 0;
        int rc = whole(v, what, f, &n64, err);
        if (rc != 0)
            return rc;
        *out += n64;
        *found = true;
        return 0;
    }
    return 0;
}

int sw_cluster_queue_facts_from_json(const cJSON *cq, struct sw_cluster_queue_facts *out,
                                     struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = str(child(cq, "metadata"), "name");
    if (name == NULL)
        return sw_error_set(err, SW_EPARSE,
                            "ClusterQueue: field \"metadata.name\": expected a string");
    char what[100];
    snprintf(what, sizeof(what), "ClusterQueue %.63s", name);
    if (strlen(name) >= sizeof(out->name))
        return sw_error_set(err, SW_EPARSE, "%s: name too long", what);
    copy(out->name, sizeof(out->name), name);
    const cJSON *spec = child(cq, "spec"), *status = child(cq, "status");
    copy(out->cohort, sizeof(out->cohort), str(spec, "cohortName"));
    const cJSON *groups = child(spec, "resourceGroups");
    if (!cJSON_IsArray(groups))
        return sw_error_set(err, SW_EPARSE, "%s: field \"spec.resourceGroups\": expected an array",
                            what);
    int64_t borrow = 0, lend = 0;
    bool any_borrow_unlimited = false, any_lend_unlimited = false;
    const cJSON *g, *f;
    cJSON_ArrayForEach(g, groups)
    {
        cJSON_ArrayForEach(f, child(g, "flavors"))
        {
            bool found = false, b = false, l = false;
            int64_t nom = 0, fb = 0, fl = 0;
            int rc = gpu_entry(child(f, "resources"), "nominalQuota", what,
                               "spec.resourceGroups[].flavors[].resources[nvidia.com/gpu]", &nom,
                               &found, err);
            if (rc == 0)
                rc = gpu_entry(child(f, "resources"), "borrowingLimit", what,
                               "spec.resourceGroups[].flavors[].resources[nvidia.com/gpu]", &fb, &b,
                               err);
            if (rc == 0)
                rc = gpu_entry(child(f, "resources"), "lendingLimit", what,
                               "spec.resourceGroups[].flavors[].resources[nvidia.com/gpu]", &fl, &l,
                               err);
            if (rc != 0)
                return rc;
            out->nominal_gpus += nom;
            borrow += fb;
            lend += fl;
            any_borrow_unlimited = any_borrow_unlimited || (found && !b);
            any_lend_unlimited = any_lend_unlimited || (found && !l);
            const char *fname = str(f, "name");
            out->flavors_truncated =
                out->flavors_truncated || (found && out->nflavors == SW_CQ_MAX_FLAVORS);
            if (found && fname != NULL && out->nflavors < SW_CQ_MAX_FLAVORS) {
                struct sw_cq_flavor *cf = &out->flavors[out->nflavors++];
                copy(cf->name, sizeof(cf->name), fname);
                cf->nominal = nom;
                cf->borrow = b ? fb : -1;
                cf->lend = l ? fl : -1;
            }
        }
    }
    const char *stop = str(spec, "stopPolicy");
    out->held = stop != NULL && (strcmp(stop, "Hold") == 0 || strcmp(stop, "HoldAndDrain") == 0);
    out->borrow_gpus = any_borrow_unlimited ? -1 : borrow;
    out->lend_gpus = any_lend_unlimited ? -1 : lend;
    cJSON_ArrayForEach(f, child(status, "flavorsReservation"))
    {
        bool found = false;
        int64_t r = 0;
        int rc =
            gpu_entry(child(f, "resources"), "total", what,
                      "status.flavorsReservation[].resources[nvidia.com/gpu]", &r, &found, err);
        if (rc != 0)
            return rc;
        out->reserved_gpus += r;
        const char *fname = str(f, "name");
        for (size_t k = 0; fname != NULL && k < out->nflavors; k++)
            if (strcmp(out->flavors[k].name, fname) == 0)
                out->flavors[k].reserved += r;
    }
    const cJSON *v;
    if (cJSON_IsNumber(v = child(status, "pendingWorkloads")))
        out->pending = (int64_t)v->valuedouble;
    if (cJSON_IsNumber(v = child(status, "reservingWorkloads")))
        out->reserving = (int64_t)v->valuedouble;
    if (cJSON_IsNumber(v = child(status, "admittedWorkloads")))
        out->admitted = (int64_t)v->valuedouble;
    return 0;
}

static const char *json_label_of(const void *ctx, const char *key)
{
    return str((const cJSON *)ctx, key);
}

int sw_resource_flavor_facts_from_json(const cJSON *rf, struct sw_resource_flavor_facts *out,
                                       struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = str(child(rf, "metadata"), "name");
    if (name == NULL)
        return sw_error_set(err, SW_EPARSE,
                            "ResourceFlavor: field \"metadata.name\": expected a string");
    if (strlen(name) >= sizeof(out->name))
        return sw_error_set(err, SW_EPARSE, "ResourceFlavor %.63s: name too long", name);
    copy(out->name, sizeof(out->name), name);
    const cJSON *labels = child(child(rf, "spec"), "nodeLabels"), *l;
    if (labels == NULL)
        return 0;
    if (!cJSON_IsObject(labels))
        return sw_error_set(err, SW_EPARSE,
                            "ResourceFlavor %s: field \"spec.nodeLabels\": expected an object",
                            name);
    cJSON_ArrayForEach(l, labels)
    {
        if (!cJSON_IsString(l))
            return sw_error_set(
                err, SW_EPARSE,
                "ResourceFlavor %s: field \"spec.nodeLabels.%.100s\": expected a string", name,
                l->string);
    }
    const char *label = NULL;
    const char *type = sw_capacity_type_label(json_label_of, labels, &label, NULL);
    if (label != NULL)
        copy(out->capacity_type, sizeof(out->capacity_type), type);
    return 0;
}

/* Whether a Workload selecting nodes of `capacity_type` may be admitted to
 * flavour `name`: its ResourceFlavor names no capacity type, or that one,
 * or is not known. */
static bool flavor_takes(const char *name, const char *capacity_type,
                         const struct sw_resource_flavor_facts *rf, size_t nrf)
{
    for (size_t i = 0; i < nrf; i++)
        if (strcmp(rf[i].name, name) == 0)
            return rf[i].capacity_type[0] == '\0' ||
                   strcmp(rf[i].capacity_type, capacity_type) == 0;
    return true;
}

bool sw_cluster_queue_for_capacity(const struct sw_cluster_queue_facts *in,
                                   const char *capacity_type,
                                   const struct sw_resource_flavor_facts *rf, size_t nrf,
                                   struct sw_cluster_queue_facts *out)
{
    *out = *in;
    bool left_out = false;
    int64_t all_reserved = 0, out_reserved = 0;
    for (size_t i = 0; i < in->nflavors; i++) {
        bool takes = flavor_takes(in->flavors[i].name, capacity_type, rf, nrf);
        all_reserved += in->flavors[i].reserved;
        out_reserved += takes ? 0 : in->flavors[i].reserved;
        left_out = left_out || !takes;
    }
    if (!left_out || in->flavors_truncated)
        return false;
    out->nflavors = 0;
    out->nominal_gpus = out->reserved_gpus = 0;
    out->borrow_gpus = out->lend_gpus = 0;
    for (size_t i = 0; i < in->nflavors; i++) {
        const struct sw_cq_flavor *f = &in->flavors[i];
        if (!flavor_takes(f->name, capacity_type, rf, nrf))
            continue;
        out->flavors[out->nflavors++] = *f;
        out->nominal_gpus += f->nominal;
        out->reserved_gpus += f->reserved;
        if (out->borrow_gpus >= 0)
            out->borrow_gpus = f->borrow < 0 ? -1 : out->borrow_gpus + f->borrow;
        if (out->lend_gpus >= 0)
            out->lend_gpus = f->lend < 0 ? -1 : out->lend_gpus + f->lend;
    }
    /* Reserved GPUs the hub gave back to the queue (a delegated Job's own
     * reservation, queue.c), in flavours not known: taken to be the
     * left-out ones' first. */
    int64_t given_back = all_reserved - in->reserved_gpus - out_reserved;
    if (given_back > 0)
        out->reserved_gpus = out->reserved_gpus > given_back ? out->reserved_gpus - given_back : 0;
    return true;
}

int64_t sw_cluster_queue_headroom(const struct sw_cluster_queue_facts *cq,
                                  const struct sw_cluster_queue_facts *peers, size_t npeers)
{
    if (cq->held)
        return 0;
    int64_t own = cq->nominal_gpus - cq->reserved_gpus;
    if (own < 0)
        own = 0;
    int64_t lent = 0, cohort_free = cq->nominal_gpus - cq->reserved_gpus;
    if (cq->cohort[0] != '\0') {
        for (size_t i = 0; i < npeers; i++) {
            const struct sw_cluster_queue_facts *p = &peers[i];
            if (p == cq || strcmp(p->name, cq->name) == 0 || strcmp(p->cohort, cq->cohort) != 0)
                continue;
            int64_t unused = p->nominal_gpus - p->reserved_gpus;
            if (unused < 0)
                unused = 0;
            /* A lending limit caps what the peer lends of its nominal quota. */
            if (p->lend_gpus >= 0 && unused > p->lend_gpus)
                unused = p->lend_gpus;
            lent += unused;
            cohort_free += p->nominal_gpus - p->reserved_gpus;
        }
        /* What cq already borrows counts against its limit. */
        int64_t borrowed =
            cq->reserved_gpus > cq->nominal_gpus ? cq->reserved_gpus - cq->nominal_gpus : 0;
        if (cq->borrow_gpus >= 0 && lent > cq->borrow_gpus - borrowed)
            lent = cq->borrow_gpus - borrowed > 0 ? cq->borrow_gpus - borrowed : 0;
        /* Never more than the cohort has unused: what one queue borrows
         * (even from cq's own nominal quota) is used. */
        if (own + lent > cohort_free)
            return cohort_free > 0 ? cohort_free : 0;
    }
    return own + lent;
}

int64_t sw_cluster_queues_free(const struct sw_cluster_queue_facts *cq, size_t n)
{
    int64_t free = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_cluster_queue_facts *c = &cq[i];
        if (c->cohort[0] == '\0') {
            free += sw_cluster_queue_headroom(c, cq, n);
            continue;
        }
        /* Each cohort once, at its first queue. */
        bool first = true;
        for (size_t k = 0; k < i && first; k++)
            first = strcmp(cq[k].cohort, c->cohort) != 0;
        if (!first)
            continue;
        int64_t unused = 0, sum_h = 0;
        for (size_t k = i; k < n; k++) {
            if (strcmp(cq[k].cohort, c->cohort) != 0)
                continue;
            unused += cq[k].nominal_gpus - cq[k].reserved_gpus;
            sum_h += sw_cluster_queue_headroom(&cq[k], cq, n);
        }
        if (unused > sum_h)
            unused = sum_h;
        free += unused > 0 ? unused : 0;
    }
    return free;
}

bool sw_api_group_serves(const cJSON *group, const char *version, char *served, size_t len)
{
    bool found = false;
    size_t used = 0;
    if (len > 0)
        served[0] = '\0';
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(group, "versions"), *v;
    cJSON_ArrayForEach(v, vs)
    {
        const char *name = sw_json_str(v, "version");
        if (name == NULL)
            continue;
        if (strcmp(name, version) == 0)
            found = true;
        if (len > used) {
            int n = snprintf(served + used, len - used, "%s%s", used ? ", " : "", name);
            used += n > 0 ? (size_t)n : 0;
            if (used >= len)
                used = len - 1;
        }
    }
    return found;
}

int sw_kueue_api_verdict(const char *cluster, long status, const cJSON *group, long list_status,
                         char *msg, size_t len)
{
    if (status == 404) {
        snprintf(msg, len,
                 "cluster %s serves no %s API group: Kueue is not installed there "
                 "(spillway reads %s, served by Kueue v0.15 and later)",
                 cluster, SW_KUEUE_GROUP, SW_KUEUE_API);
        return SW_EUNSUPPORTED;
    }
    if (status == 200 && cJSON_IsObject(group)) {
        char served[160];
        if (!sw_api_group_serves(group, SW_KUEUE_VERSION, served, sizeof(served))) {
            snprintf(msg, len,
                     "cluster %s serves %s %s only, not %s: its Kueue is older than v0.15 "
                     "(spillway reads %s)",
                     cluster, SW_KUEUE_GROUP, served[0] ? served : "(no version)", SW_KUEUE_VERSION,
                     SW_KUEUE_API);
            return SW_EUNSUPPORTED;
        }
    }
    if (list_status == 403) {
        snprintf(msg, len,
                 "cluster %s refuses the hub's list of Kueue Workloads or ClusterQueues (403): "
                 "its credentials need the member role's Kueue rules "
                 "(deploy/rbac/member-clusterrole.yaml)",
                 cluster);
        return SW_EUNSUPPORTED;
    }
    if (len > 0)
        msg[0] = '\0';
    return 0;
}
