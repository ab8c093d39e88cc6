/*
 * capacity.c - pools and their free GPUs.
 *
 * Nodes are grouped by their pool key; pods are then charged to the pool of
 * the node they are bound to. Pools are few (tens) and nodes are at most
 * thousands, so a sorted array and binary search are enough.
 */
#include "clusters/capacity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"

static const char *label(const cJSON *labels, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, key);
    return cJSON_IsString(v) && v->valuestring[0] != '\0' ? v->valuestring : dflt;
}

/*
 * The managed node groups of EKS, GKE and AKS label spot nodes their own way
 * and carry no Karpenter label; without these a spot node there would count
 * as owned capacity, free of charge and never interrupted.
 */
static const struct {
    const char *key;
    const char *value; /* as the provider writes it */
    const char *type;  /* what it means here */
} provider_labels[] = {
    {"eks.amazonaws.com/capacityType", "SPOT", "spot"},
    {"eks.amazonaws.com/capacityType", "ON_DEMAND", "on-demand"},
    {"cloud.google.com/gke-spot", "true", "spot"},
    {"cloud.google.com/gke-preemptible", "true", "spot"},
    {"cloud.google.com/gke-provisioning", "spot", "spot"},
    {"cloud.google.com/gke-provisioning", "standard", "on-demand"},
    {"kubernetes.azure.com/scalesetpriority", "spot", "spot"},
    {"kubernetes.azure.com/scalesetpriority", "regular", "on-demand"},
};

const char *sw_capacity_type_label(const char *(*get)(const void *ctx, const char *key),
                                   const void *ctx, const char **label, const char **value)
{
    const char *k = "karpenter.sh/capacity-type", *type = "owned";
    const char *v = get(ctx, k);
    if (v != NULL && v[0] != '\0') {
        type = v;
    } else {
        k = v = NULL;
        for (size_t i = 0; i < sizeof(provider_labels) / sizeof(provider_labels[0]); i++) {
            const char *pv = get(ctx, provider_labels[i].key);
            if (pv != NULL && strcmp(pv, provider_labels[i].value) == 0) {
                k = provider_labels[i].key;
                v = pv;
                type = provider_labels[i].type;
                break;
            }
        }
    }
    if (label != NULL)
        *label = k;
    if (value != NULL)
        *value = v;
    return type;
}

const char *sw_capacity_type_of(const char *(*get)(const void *ctx, const char *key),
                                const void *ctx)
{
    return sw_capacity_type_label(get, ctx, NULL, NULL);
}

static const char *json_label(const void *ctx, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive((const cJSON *)ctx, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* nvidia.com/gpu.replicas: 1 to 1024, or false. */
static bool parse_replicas(const char *rp, long long *out)
{
    char *end = NULL;
    long long v = strtoll(rp, &end, 10);
    if (end == rp || *end != '\0' || v < 1 || v > 1024)
        return false;
    *out = v;
    return true;
}

int64_t sw_gpu_replicas_of(const char *(*get)(const void *ctx, const char *key), const void *ctx)
{
    const char *strategy = get(ctx, "nvidia.com/gpu.sharing-strategy");
    const char *rp = get(ctx, "nvidia.com/gpu.replicas");
    long long v = 1;
    if (strategy == NULL || strcmp(strategy, "time-slicing") != 0 || rp == NULL ||
        !parse_replicas(rp, &v))
        return 1;
    return v;
}

/* Parses an integer quantity of an extended resource ("4"). */
int sw_gpu_quantity(const cJSON *v, const char *what, const char *field, int64_t *out,
                    struct sw_error *err)
{
    if (cJSON_IsNumber(v)) {
        if (v->valuedouble < 0 || v->valuedouble != (double)(int64_t)v->valuedouble)
            return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected a whole number", what,
                                field);
        *out = (int64_t)v->valuedouble;
        return 0;
    }
    if (!cJSON_IsString(v))
        return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected a quantity, got %s", what,
                            field, sw_json_type_name(v));
    const char *s = v->valuestring;
    char *end = NULL;
    long long n = strtoll(s, &end, 10);
    if (end == s || n < 0 || n > (1LL << 40))
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"%s\": expected a whole number of GPUs, got \"%.40s\"",
                            what, field, s);
    if (*end == 'k' && end[1] == '\0')
        n *= 1000;
    else if (*end != '\0')
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"%s\": expected a whole number of GPUs, got \"%.40s\"",
                            what, field, s);
    *out = n;
    return 0;
}

int sw_node_facts_from_json(const cJSON *node, struct sw_node_facts *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = NULL;
    int rc = sw_json_string(node, "metadata.name", true, "Node", &name, err);
    if (rc != 0)
        return rc;
    char what[300];
    snprintf(what, sizeof(what), "Node %s", name);
    out->name = name;
    const cJSON *labels = sw_json_path(node, "metadata.labels");
    out->labels = labels;
    out->capacity_type =
        sw_capacity_type_label(json_label, labels, &out->capacity_label, &out->capacity_value);
    out->gpu_product = label(labels, "nvidia.com/gpu.product", "none");
    out->gpu_memory = label(labels, "nvidia.com/gpu.memory", "0");
    out->region = label(labels, "topology.kubernetes.io/region", "");
    out->zone = label(labels, "topology.kubernetes.io/zone", "");
    const cJSON *alloc = sw_json_path(node, "status.allocatable");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(alloc, SW_GPU_RESOURCE);
    if (gpu != NULL && (rc = sw_gpu_quantity(gpu, what, "status.allocatable.nvidia.com/gpu",
                                             &out->gpu_allocatable, err)) != 0)
        return rc;
    /* Time-slicing and MIG slices, as the device plugin and GPU feature
     * discovery advertise them. */
    const char *strategy = label(labels, "nvidia.com/gpu.sharing-strategy", "none");
    const char *rp = label(labels, "nvidia.com/gpu.replicas", NULL);
    long long v;
    if (rp != NULL && !parse_replicas(rp, &v))
        return sw_error_set(err, SW_EPARSE,
                            "%s: label \"nvidia.com/gpu.replicas\": expected a whole number "
                            "from 1 to 1024, got \"%.40s\"",
                            what, rp);
    out->gpu_replicas = sw_gpu_replicas_of(json_label, labels);
    out->time_sliced = strcmp(strategy, "time-slicing") == 0;
    const cJSON *it, *allocs = cJSON_IsObject(alloc) ? alloc : NULL;
    cJSON_ArrayForEach(it, allocs)
    {
        size_t pl = sizeof(SW_MIG_RESOURCE_PREFIX) - 1;
        if (it->string == NULL || strncmp(it->string, SW_MIG_RESOURCE_PREFIX, pl) != 0 ||
            it->string[pl] == '\0' || out->nmig == SW_NODE_MIG_MAX)
            continue;
        char field[160];
        snprintf(field, sizeof(field), "status.allocatable.%.120s", it->string);
        struct sw_node_mig *m = &out->mig[out->nmig];
        if ((rc = sw_gpu_quantity(it, what, field, &m->count, err)) != 0)
            return rc;
        m->profile = it->string + pl;
        out->nmig++;
    }
    bool unsched = false;
    if ((rc = sw_json_bool(node, "spec.unschedulable", false, what, &unsched, err)) != 0)
        return rc;
    out->unschedulable = unsched;
    const cJSON *conds = sw_json_path(node, "status.conditions");
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "Ready") == 0)
            out->ready = cJSON_IsString(s) && strcmp(s->valuestring, "True") == 0;
    }
    return 0;
}

/* A container's request of `res`: requests, else limits. */
static int container_res(const cJSON *ctr, const char *res, const char *what, int64_t *out,
                         struct sw_error *err)
{
    *out = 0;
    const cJSON *req = sw_json_path(ctr, "resources.requests");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, res);
    const char *kind = "requests";
    if (v == NULL) {
        v = cJSON_GetObjectItemCaseSensitive(sw_json_path(ctr, "resources.limits"), res);
        kind = "limits";
    }
    char field[200];
    snprintf(field, sizeof(field), "resources.%s.%.160s", kind, res);
    return v ? sw_gpu_quantity(v, what, field, out, err) : 0;
}

/* The first nvidia.com/mig-<profile> a container of the pod spec names in
 * its requests or limits (borrowed), or NULL. */
static const char *first_mig(const cJSON *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const kinds[] = {"resources.requests", "resources.limits"};
    size_t pl = sizeof(SW_MIG_RESOURCE_PREFIX) - 1;
    for (size_t l = 0; l < 2; l++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[l]))
        {
            for (size_t k = 0; k < 2; k++) {
                const cJSON *r = sw_json_path(c, kinds[k]), *it;
                if (!cJSON_IsObject(r))
                    continue;
                cJSON_ArrayForEach(
                    it, r) if (it->string && strncmp(it->string, SW_MIG_RESOURCE_PREFIX, pl) == 0 &&
                               it->string[pl] != '\0') return it->string;
            }
        }
    }
    return NULL;
}

static int spec_res(const cJSON *spec, const char *res, const char *what, int64_t *out,
                    struct sw_error *err);

int sw_pod_facts_from_json(const cJSON *pod, struct sw_pod_facts *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = NULL, *ns = "";
    int rc = sw_json_string(pod, "metadata.name", true, "Pod", &name, err);
    if (rc != 0)
        return rc;
    if ((rc = sw_json_string(pod, "metadata.namespace", false, "Pod", &ns, err)) != 0)
        return rc;
    char what[300];
    snprintf(what, sizeof(what), "Pod %s/%s", ns, name);
    out->name = name;
    out->namespace = ns;
    const char *node = NULL, *phase = "";
    if ((rc = sw_json_string(pod, "spec.nodeName", false, what, &node, err)) != 0 ||
        (rc = sw_json_string(pod, "status.phase", false, what, &phase, err)) != 0)
        return rc;
    out->node_name = node;
    out->terminal = strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
    out->node_selector = sw_json_path(pod, "spec.nodeSelector");
    const cJSON *spec = sw_json_path(pod, "spec");
    if ((rc = sw_pod_spec_gpus(spec, what, &out->gpu_request, err)) != 0)
        return rc;
    const char *mig = first_mig(spec);
    if (mig != NULL) {
        if ((rc = spec_res(spec, mig, what, &out->mig_request, err)) != 0)
            return rc;
        out->mig_profile = mig + sizeof(SW_MIG_RESOURCE_PREFIX) - 1;
    }
    return 0;
}

int sw_pod_spec_gpus(const cJSON *spec, const char *what, int64_t *out, struct sw_error *err)
{
    return spec_res(spec, SW_GPU_RESOURCE, what, out, err);
}

static int spec_res(const cJSON *spec, const char *res, const char *what, int64_t *out,
                    struct sw_error *err)
{
    int64_t sum = 0, init_max = 0;
    const cJSON *c;
    int rc;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers"))
    {
        int64_t g;
        if ((rc = container_res(c, res, what, &g, err)) != 0)
            return rc;
        sum += g;
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "initContainers"))
    {
        int64_t g;
        if ((rc = container_res(c, res, what, &g, err)) != 0)
            return rc;
        /* A restartable init container (sidecar) keeps running with the
         * others; its request adds up. Plain ones run alone, before. */
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(c, "restartPolicy");
        if (cJSON_IsString(rp) && strcmp(rp->valuestring, "Always") == 0)
            sum += g;
        else if (g > init_max)
            init_max = g;
    }
    *out = sum > init_max ? sum : init_max;
    return 0;
}

static char *pool_key(const struct sw_node_facts *n)
{
    size_t len = strlen(n->capacity_type) + strlen(n->gpu_product) + strlen(n->gpu_memory) +
                 strlen(n->region) + strlen(n->zone) + 5;
    char *k = sw_malloc(len);
    if (k != NULL)
        snprintf(k, len, "%s/%s/%s/%s/%s", n->capacity_type, n->gpu_product, n->gpu_memory,
                 n->region, n->zone);
    return k;
}

static int cmp_pool(const void *a, const void *b)
{
    return strcmp(((const struct sw_gpu_pool *)a)->key, ((const struct sw_gpu_pool *)b)->key);
}

static struct sw_gpu_pool *find_pool(struct sw_gpu_capacity *c, const char *key)
{
    struct sw_gpu_pool probe = {.key = (char *)key};
    return bsearch(&probe, c->pools, c->npools, sizeof(struct sw_gpu_pool), cmp_pool);
}

/* Node name -> pool index and inclusion, sorted by name for lookup. */
struct node_slot {
    const char *name;
    struct sw_gpu_pool *pool;
    bool included;
    int64_t milli; /* thousandths of a GPU one unit of nvidia.com/gpu is there */
};

static int cmp_slot(const void *a, const void *b)
{
    return strcmp(((const struct node_slot *)a)->name, ((const struct node_slot *)b)->name);
}

const char *sw_node_label(const struct sw_node_facts *n, const char *key)
{
    if (n->labels != NULL) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(n->labels, key);
        return cJSON_IsString(l) ? l->valuestring : NULL;
    }
    for (size_t i = 0; i < n->nlabelv; i++)
        if (strcmp(n->labelv[i].key, key) == 0)
            return n->labelv[i].value;
    return NULL;
}

static bool selector_matches(const struct sw_pod_facts *pod, const struct sw_node_facts *n)
{
    if (pod->node_selector != NULL) {
        const cJSON *kv;
        cJSON_ArrayForEach(kv, pod->node_selector)
        {
            const char *l = sw_node_label(n, kv->string);
            if (!cJSON_IsString(kv) || l == NULL || strcmp(kv->valuestring, l) != 0)
                return false;
        }
        return true;
    }
    for (size_t i = 0; i < pod->nselectorv; i++) {
        const char *l = sw_node_label(n, pod->selectorv[i].key);
        if (l == NULL || strcmp(pod->selectorv[i].value, l) != 0)
            return false;
    }
    return true;
}

int sw_mig_per_gpu(const char *profile)
{
    if (profile == NULL || profile[0] < '1' || profile[0] > '7' || profile[1] != 'g')
        return 0;
    int per = 7 / (profile[0] - '0');
    return per > 0 ? per : 1;
}

/* Adds a node's slices of a profile to its pool (a pool keeps the first
 * SW_NODE_MIG_MAX profiles it meets). */
static int add_mig(struct sw_gpu_pool *p, const char *profile, int64_t count)
{
    for (size_t k = 0; k < p->nmig; k++)
        if (strcmp(p->mig[k].profile, profile) == 0) {
            p->mig[k].total += count;
            return 0;
        }
    if (p->nmig == SW_NODE_MIG_MAX)
        return 0;
    struct sw_pool_mig *m = &p->mig[p->nmig];
    if ((m->profile = sw_strdup(profile)) == NULL)
        return SW_ENOMEM;
    m->per_gpu = sw_mig_per_gpu(profile);
    m->total = count;
    p->nmig++;
    return 0;
}

static int cmp_mig(const void *a, const void *b)
{
    return strcmp(((const struct sw_pool_mig *)a)->profile,
                  ((const struct sw_pool_mig *)b)->profile);
}

void sw_capacity_free(struct sw_gpu_capacity *c)
{
    for (size_t i = 0; i < c->npools; i++) {
        struct sw_gpu_pool *p = &c->pools[i];
        sw_free(p->key);
        sw_free(p->capacity_type);
        sw_free(p->gpu_product);
        sw_free(p->gpu_memory);
        sw_free(p->region);
        sw_free(p->zone);
        for (size_t k = 0; k < p->nmig; k++)
            sw_free(p->mig[k].profile);
    }
    sw_free(c->pools);
    memset(c, 0, sizeof(*c));
}

int sw_capacity_compute(const struct sw_node_facts *nodes, size_t nnodes,
                        const struct sw_pod_facts *pods, size_t npods, struct sw_gpu_capacity *out)
{
    memset(out, 0, sizeof(*out));
    struct node_slot *slots = sw_calloc(nnodes + 1, sizeof(*slots));
    out->pools = sw_calloc(nnodes + 1, sizeof(struct sw_gpu_pool));
    /* The first node of each pool, to match pending pods against labels. */
    const struct sw_node_facts **rep = sw_calloc(nnodes + 1, sizeof(*rep));
    if (slots == NULL || out->pools == NULL || rep == NULL)
        goto oom;
    /* Pass 1: the distinct pools. */
    for (size_t i = 0; i < nnodes; i++) {
        char *key = pool_key(&nodes[i]);
        if (key == NULL)
            goto oom;
        struct sw_gpu_pool *p = NULL;
        for (size_t j = 0; j < out->npools; j++)
            if (strcmp(out->pools[j].key, key) == 0)
                p = &out->pools[j];
        if (p != NULL) {
            sw_free(key);
            continue;
        }
        p = &out->pools[out->npools];
        p->key = key;
        out->npools++;
        if ((p->capacity_type = sw_strdup(nodes[i].capacity_type)) == NULL ||
            (p->gpu_product = sw_strdup(nodes[i].gpu_product)) == NULL ||
            (p->gpu_memory = sw_strdup(nodes[i].gpu_memory)) == NULL ||
            (p->region = sw_strdup(nodes[i].region)) == NULL ||
            (p->zone = sw_strdup(nodes[i].zone)) == NULL)
            goto oom;
    }
    qsort(out->pools, out->npools, sizeof(struct sw_gpu_pool), cmp_pool);
    /* Pass 2: nodes into pools. */
    for (size_t i = 0; i < nnodes; i++) {
        char *key = pool_key(&nodes[i]);
        if (key == NULL)
            goto oom;
        struct sw_gpu_pool *p = find_pool(out, key);
        sw_free(key);
        const struct sw_node_facts *n = &nodes[i];
        bool included = n->ready && !n->unschedulable;
        int64_t r = n->time_sliced && n->gpu_replicas > 1 ? n->gpu_replicas : 1;
        slots[i] = (struct node_slot){n->name, p, included, 1000 / r};
        if (rep[p - out->pools] == NULL)
            rep[p - out->pools] = n;
        if (included) {
            p->nodes++;
            p->total += n->gpu_allocatable;
            p->milli_total += n->gpu_allocatable * (1000 / r);
            if (n->time_sliced) {
                p->time_sliced = true;
                if (r > p->replicas)
                    p->replicas = r;
            }
            for (size_t k = 0; k < n->nmig; k++)
                if (add_mig(p, n->mig[k].profile, n->mig[k].count) != 0)
                    goto oom;
        } else {
            p->nodes_excluded++;
            p->excluded += n->gpu_allocatable;
        }
    }
    qsort(slots, nnodes, sizeof(*slots), cmp_slot);
    /* Pass 3: pods. */
    for (size_t i = 0; i < npods; i++) {
        const struct sw_pod_facts *pod = &pods[i];
        if (pod->terminal || pod->gpu_request <= 0)
            continue;
        if (pod->node_name == NULL || pod->node_name[0] == '\0') {
            out->pending_total += pod->gpu_request;
            out->pending_pods++;
            for (size_t j = 0; j < out->npools; j++)
                if (rep[j] != NULL && out->pools[j].nodes > 0 && selector_matches(pod, rep[j]))
                    out->pools[j].pending += pod->gpu_request;
            continue;
        }
        struct node_slot probe = {.name = pod->node_name};
        struct node_slot *s = bsearch(&probe, slots, nnodes, sizeof(*slots), cmp_slot);
        if (s != NULL && s->included) {
            s->pool->used += pod->gpu_request;
            s->pool->milli_used += pod->gpu_request * s->milli;
        }
    }
    /* MIG slices in use: pods asking for them (they may ask no whole GPU). */
    for (size_t i = 0; i < npods; i++) {
        const struct sw_pod_facts *pod = &pods[i];
        if (pod->terminal || pod->mig_profile == NULL || pod->mig_request <= 0 ||
            pod->node_name == NULL || pod->node_name[0] == '\0')
            continue;
        struct node_slot probe = {.name = pod->node_name};
        struct node_slot *s = bsearch(&probe, slots, nnodes, sizeof(*slots), cmp_slot);
        if (s == NULL || !s->included)
            continue;
        for (size_t k = 0; k < s->pool->nmig; k++)
            if (strcmp(s->pool->mig[k].profile, pod->mig_profile) == 0)
                s->pool->mig[k].used += pod->mig_request;
    }
    for (size_t j = 0; j < out->npools; j++) {
        struct sw_gpu_pool *p = &out->pools[j];
        p->free = p->total > p->used ? p->total - p->used : 0;
        p->milli_free = p->milli_total > p->milli_used ? p->milli_total - p->milli_used : 0;
        if (!p->time_sliced)
            p->replicas = 1;
        for (size_t k = 0; k < p->nmig; k++) {
            struct sw_pool_mig *m = &p->mig[k];
            m->free = m->total > m->used ? m->total - m->used : 0;
        }
        qsort(p->mig, p->nmig, sizeof(p->mig[0]), cmp_mig);
    }
    sw_free(slots);
    sw_free(rep);
    return 0;
oom:
    sw_free(slots);
    sw_free(rep);
    sw_capacity_free(out);
    return SW_ENOMEM;
}

int sw_resource_quantity(const cJSON *v, const char *what, const char *field, int64_t *out,
                         struct sw_error *err)
{
    return sw_gpu_quantity(v, what, field, out, err);
}
