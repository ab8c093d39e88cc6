/*
 * nodepool.c - a NodePool's ceiling, room and free GPUs (nodepool.h).
 *
 * NodePools and their claims are few (a node per claim, tens to hundreds),
 * so every count is a plain scan.
 */
#include "clusters/nodepool.h"

#include <stdio.h>
#include <string.h>

#include "clusters/exec.h"
#include "common/json.h"

/* The single value of an In requirement on `key`, or NULL. */
static const char *single_in(const cJSON *reqs, const char *key)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs)
    {
        const char *k = sw_json_str(r, "key"), *op = sw_json_str(r, "operator");
        const cJSON *vals = sw_json_child(r, "values");
        if (k && op && strcmp(k, key) == 0 && strcmp(op, "In") == 0 &&
            cJSON_GetArraySize(vals) == 1 && cJSON_IsString(cJSON_GetArrayItem(vals, 0)))
            return cJSON_GetArrayItem(vals, 0)->valuestring;
    }
    return NULL;
}

/* The transition time of condition `type` when it is True, else 0. */
static int cond_true_ms(const cJSON *obj, const char *type, const char *what, int64_t *out,
                        struct sw_error *err)
{
    *out = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, sw_json_path(obj, "status.conditions"))
    {
        const char *t = sw_json_str(c, "type"), *s = sw_json_str(c, "status");
        if (t == NULL || strcmp(t, type) != 0 || s == NULL || strcmp(s, "True") != 0)
            continue;
        const char *when = sw_json_str(c, "lastTransitionTime");
        const char *why = NULL;
        if (when == NULL || sw_parse_rfc3339(when, out, &why) != 0)
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"status.conditions[%s].lastTransitionTime\": expected "
                                "an RFC 3339 time%s%s",
                                what, type, why ? ", " : "", why ? why : "");
        if (*out == 0)
            *out = 1; /* the epoch itself still means "seen" */
    }
    return 0;
}

int sw_nodepool_facts_from_json(const cJSON *np, struct sw_nodepool_facts *out,
                                struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->gpu_limit = -1;
    const char *name = NULL;
    int rc = sw_json_string(np, "metadata.name", true, "NodePool", &name, err);
    if (rc != 0)
        return rc;
    char what[300];
    snprintf(what, sizeof(what), "NodePool %s", name);
    out->name = name;
    const cJSON *lim =
        cJSON_GetObjectItemCaseSensitive(sw_json_path(np, "spec.limits"), SW_GPU_RESOURCE);
    if (lim != NULL &&
        (rc = sw_gpu_quantity(lim, what, "spec.limits.nvidia.com/gpu", &out->gpu_limit, err)) != 0)
        return rc;
    const cJSON *reqs = sw_json_path(np, "spec.template.spec.requirements");
    const cJSON *labels = sw_json_path(np, "spec.template.metadata.labels");
    out->capacity_type = single_in(reqs, "karpenter.sh/capacity-type");
    if (out->capacity_type == NULL)
        out->capacity_type = sw_json_str(labels, "karpenter.sh/capacity-type");
    out->gpu_product = sw_json_str(labels, "nvidia.com/gpu.product");
    if (out->gpu_product == NULL)
        out->gpu_product = single_in(reqs, "nvidia.com/gpu.product");
    const cJSON *c;
    cJSON_ArrayForEach(c, sw_json_path(np, "status.conditions"))
    {
        const char *t = sw_json_str(c, "type"), *s = sw_json_str(c, "status");
        if (t && strcmp(t, "Ready") == 0)
            out->ready = s && strcmp(s, "True") == 0;
    }
    return 0;
}

int sw_nodeclaim_facts_from_json(const cJSON *nc, struct sw_nodeclaim_facts *out,
                                 struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = NULL, *created = NULL;
    int rc = sw_json_string(nc, "metadata.name", true, "NodeClaim", &name, err);
    if (rc != 0)
        return rc;
    char what[300];
    snprintf(what, sizeof(what), "NodeClaim %s", name);
    out->name = name;
    out->nodepool = sw_json_str(sw_json_path(nc, "metadata.labels"), SW_NODEPOOL_LABEL);
    if ((rc = sw_json_string(nc, "status.nodeName", false, what, &out->node_name, err)) != 0 ||
        (rc = sw_json_string(nc, "metadata.creationTimestamp", true, what, &created, err)) != 0)
        return rc;
    const char *why = NULL;
    if (sw_parse_rfc3339(created, &out->created_ms, &why) != 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"metadata.creationTimestamp\": expected an RFC 3339 "
                            "time, %s",
                            what, why ? why : "unreadable");
    const cJSON *del = sw_json_path(nc, "metadata.deletionTimestamp");
    out->deleting = del != NULL;
    if (cJSON_IsString(del) && sw_parse_rfc3339(del->valuestring, &out->deleted_ms, &why) != 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"metadata.deletionTimestamp\": expected an RFC 3339 "
                            "time, %s",
                            what, why ? why : "unreadable");
    /* Karpenter writes the requests of the pods it made the claim for
     * (and daemon sets'), the capacity once launched. */
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(sw_json_path(nc, "spec.resources.requests"),
                                                        SW_GPU_RESOURCE);
    if (req != NULL && (rc = sw_gpu_quantity(req, what, "spec.resources.requests.nvidia.com/gpu",
                                             &out->requested, err)) != 0)
        return rc;
    /* The instance's GPUs once launched: its capacity, or its allocatable
     * when that says more (Karpenter's kwok provider writes the pods'
     * requests as capacity and the instance type's GPUs as allocatable). */
    const cJSON *g =
        cJSON_GetObjectItemCaseSensitive(sw_json_path(nc, "status.capacity"), SW_GPU_RESOURCE);
    const cJSON *a =
        cJSON_GetObjectItemCaseSensitive(sw_json_path(nc, "status.allocatable"), SW_GPU_RESOURCE);
    int64_t alloc = 0;
    if (g != NULL &&
        (rc = sw_gpu_quantity(g, what, "status.capacity.nvidia.com/gpu", &out->gpus, err)) != 0)
        return rc;
    if (a != NULL &&
        (rc = sw_gpu_quantity(a, what, "status.allocatable.nvidia.com/gpu", &alloc, err)) != 0)
        return rc;
    if (alloc > out->gpus)
        out->gpus = alloc;
    if (g == NULL && a == NULL)
        out->gpus = out->requested;
    /* Launched: the cloud provider made the instance. A claim deleted
     * before it (Karpenter deletes one whose launch failed for lack of
     * capacity) never launched. */
    if ((rc = cond_true_ms(nc, "Launched", what, &out->launched_ms, err)) != 0)
        return rc;
    return cond_true_ms(nc, "Initialized", what, &out->ready_ms, err);
}

bool sw_nodepool_stalled(const struct sw_nodepool_capacity *c)
{
    return c->waiting > 0 && c->limit > c->provisioned;
}

bool sw_nodepool_full(const struct sw_nodepool_capacity *c)
{
    return c->waiting > 0 && c->limit >= 0 && c->provisioned >= c->limit;
}

bool sw_nodepool_serves(const struct sw_nodepool_facts *np, const char *capacity_type,
                        const char *gpu_product)
{
    if (np->capacity_type == NULL || strcmp(np->capacity_type, capacity_type) != 0)
        return false;
    return np->gpu_product == NULL || gpu_product == NULL || gpu_product[0] == '\0' ||
           strcmp(np->gpu_product, gpu_product) == 0;
}

/* A pod's nodeSelector value for `key`, or NULL. */
static const char *selector_get(const struct sw_pod_facts *p, const char *key)
{
    if (p->node_selector != NULL)
        return sw_json_str(p->node_selector, key);
    for (size_t i = 0; i < p->nselectorv; i++)
        if (strcmp(p->selectorv[i].key, key) == 0)
            return p->selectorv[i].value;
    return NULL;
}

/*
 * Whether an unscheduled pod waits for this NodePool: it names it, or
 * it selects its capacity type (and, when it names one, its GPU product).
 */
static bool pod_selects(const struct sw_pod_facts *p, const struct sw_nodepool_facts *np)
{
    const char *v = selector_get(p, SW_NODEPOOL_LABEL);
    if (v != NULL)
        return strcmp(v, np->name) == 0;
    v = selector_get(p, "karpenter.sh/capacity-type");
    if (v == NULL || np->capacity_type == NULL || strcmp(v, np->capacity_type) != 0)
        return false;
    v = selector_get(p, "nvidia.com/gpu.product");
    return v == NULL || np->gpu_product == NULL || strcmp(v, np->gpu_product) == 0;
}

static bool is_own(const struct sw_node_facts *n, const char *nodepool)
{
    const char *l = sw_node_label(n, SW_NODEPOOL_LABEL);
    return l != NULL && strcmp(l, nodepool) == 0;
}

void sw_nodepool_capacity(const struct sw_nodepool_facts *np,
                          const struct sw_nodeclaim_facts *claims, size_t nclaims,
                          const struct sw_node_facts *nodes, size_t nnodes,
                          const struct sw_pod_facts *pods, size_t npods,
                          struct sw_nodepool_capacity *out)
{
    memset(out, 0, sizeof(*out));
    out->limit = np->gpu_limit > 0 ? np->gpu_limit : 0;
    for (size_t i = 0; i < nnodes; i++) {
        const struct sw_node_facts *n = &nodes[i];
        if (!is_own(n, np->name) || !n->ready || n->unschedulable)
            continue;
        out->nodes++;
        out->node_gpus += n->gpu_allocatable;
    }
    int64_t used = 0;
    for (size_t i = 0; i < npods; i++) {
        const struct sw_pod_facts *p = &pods[i];
        if (p->terminal || p->gpu_request <= 0)
            continue;
        if (p->node_name == NULL || p->node_name[0] == '\0') {
            if (pod_selects(p, np))
                out->pending += p->gpu_request;
            continue;
        }
        for (size_t k = 0; k < nnodes; k++)
            if (strcmp(nodes[k].name, p->node_name) == 0) {
                if (is_own(&nodes[k], np->name) && nodes[k].ready && !nodes[k].unschedulable)
                    used += p->gpu_request;
                break;
            }
    }
    out->idle = out->node_gpus > used ? out->node_gpus - used : 0;
    for (size_t i = 0; i < nclaims; i++) {
        const struct sw_nodeclaim_facts *c = &claims[i];
        if (c->nodepool == NULL || strcmp(c->nodepool, np->name) != 0)
            continue;
        out->claims++;
        out->provisioned += c->gpus;
        /* Launching until its node is Ready and schedulable. */
        bool up = false;
        for (size_t k = 0; c->node_name && !up && k < nnodes; k++)
            up = strcmp(nodes[k].name, c->node_name) == 0 && nodes[k].ready &&
                 !nodes[k].unschedulable;
        if (!up) {
            out->claims_launching++;
            out->launching += c->gpus;
        }
    }
    /* Pods waiting to be scheduled take idle GPUs on its nodes first (the
     * scheduler binds them there before any new node is up), then what
     * launching claims bring, then the room. */
    int64_t on_idle = out->pending < out->idle ? out->pending : out->idle;
    out->idle -= on_idle;
    int64_t rest = out->pending - on_idle;
    out->waiting = rest > out->launching ? rest - out->launching : 0;
    int64_t room = out->limit - out->provisioned - out->waiting;
    out->room = room > 0 ? room : 0;
    out->free = out->idle + out->room;
}

int sw_nodeclaim_pick(const struct sw_claim_candidate *c, size_t n, int64_t gpus)
{
    int exact = -1, fit = -1, most = -1;
    for (size_t i = 0; i < n; i++) {
        if (c[i].room > 0 && (most < 0 || c[i].room > c[most].room ||
                              (c[i].room == c[most].room && c[i].created_ms < c[most].created_ms)))
            most = (int)i;
        if (c[i].room < gpus)
            continue;
        if (c[i].room == gpus && (exact < 0 || c[i].created_ms < c[exact].created_ms))
            exact = (int)i;
        if (fit < 0 || c[i].room < c[fit].room ||
            (c[i].room == c[fit].room && c[i].created_ms < c[fit].created_ms))
            fit = (int)i;
    }
    return exact >= 0 ? exact : fit >= 0 ? fit : most;
}
