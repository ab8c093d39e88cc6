/*
 * cache.c - three informers of compact records, and capacity from them,
 * and the last state of finished Jobs deleted from the cluster; on demand,
 * three more of Kueue's Workloads, ClusterQueues and ResourceFlavors, and
 * Karpenter's NodePools and NodeClaims on clusters with a pool bound to a
 * NodePool (whole objects: a cluster has few of them next to its Jobs and
 * Pods).
 */
#include "clusters/cache.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "clusters/nodepool.h"
#include "clusters/record.h"
#include "common/alloc.h"
#include "common/json.h"

/* Finished Jobs deleted from the cluster whose last state is kept. */
#define TOMBSTONES 512

struct tombstone {
    char *key;  /* "namespace/name", own */
    cJSON *job; /* the last state, as sw_job_record_json makes it, own */
};

/* Nodes seen deleted (names), for telling a node that is gone from one the
 * node informer has not delivered yet. */
#define GONE_NODES 256

struct sw_cluster_cache {
    char *gone_nodes[GONE_NODES]; /* a ring: the oldest is replaced */
    size_t next_gone;
    struct sw_informer *jobs, *pods, *nodes;
    /* NULL until sw_cluster_cache_start_kueue */
    struct sw_informer *workloads, *cqueues, *rflavors;
    struct sw_informer *nodepools, *nodeclaims; /* NULL until watched */
    /* Karpenter's leader-election Lease, by name in SW_KARPENTER_LEASE_NS
     * only (a tenant's Lease of that name elsewhere is not seen): what
     * tells a controller that answers from one that does not. Not part of
     * being synced: credentials that may not read Leases still place. */
    struct sw_informer *ctl_leases;
    struct sw_kube_client *client;
    struct sw_intern *strings; /* shared by the three informers' records */
    sw_cache_change_cb on_change;
    void *ctx;
    const char *spec_annotation;        /* Jobs carrying it keep their spec (borrowed), or NULL */
    struct tombstone tombs[TOMBSTONES]; /* a ring: the oldest is replaced */
    size_t next_tomb;
};

static bool finished(const struct sw_job_record *r)
{
    for (uint16_t i = 0; i < r->nconditions; i++) {
        const struct sw_condition *c = &r->conditions[i];
        if (c->type && c->status && strcmp(c->status, "True") == 0 &&
            (strcmp(c->type, "Complete") == 0 || strcmp(c->type, "Failed") == 0))
            return true;
    }
    return false;
}

static void tomb_clear(struct tombstone *t)
{
    sw_free(t->key);
    cJSON_Delete(t->job);
    t->key = NULL;
    t->job = NULL;
}

/* Keeps the last state of a finished Job that was deleted (best effort: a
 * failed allocation keeps nothing, which reads as "never seen finished"). */
static void bury(struct sw_cluster_cache *cc, const char *key, const struct sw_job_record *r)
{
    for (size_t i = 0; i < TOMBSTONES; i++)
        if (cc->tombs[i].key && strcmp(cc->tombs[i].key, key) == 0)
            tomb_clear(&cc->tombs[i]);
    struct tombstone *t = &cc->tombs[cc->next_tomb];
    cc->next_tomb = (cc->next_tomb + 1) % TOMBSTONES;
    tomb_clear(t);
    size_t n = strlen(key) + 1;
    t->key = sw_malloc(n);
    t->job = sw_job_record_json(r);
    if (t->key == NULL || t->job == NULL) {
        tomb_clear(t);
        return;
    }
    memcpy(t->key, key, n);
}

/* A node deleted goes on the ring of gone nodes; one added (again) leaves it. */
static void node_seen(struct sw_cluster_cache *cc, const char *name, bool deleted)
{
    for (size_t i = 0; i < GONE_NODES; i++)
        if (cc->gone_nodes[i] && strcmp(cc->gone_nodes[i], name) == 0) {
            sw_free(cc->gone_nodes[i]);
            cc->gone_nodes[i] = NULL;
        }
    if (!deleted)
        return;
    size_t n = strlen(name) + 1;
    char *copy = sw_malloc(n);
    if (copy == NULL)
        return; /* not remembered: read as "not known gone", the safe side */
    memcpy(copy, name, n);
    sw_free(cc->gone_nodes[cc->next_gone]);
    cc->gone_nodes[cc->next_gone] = copy;
    cc->next_gone = (cc->next_gone + 1) % GONE_NODES;
}

static void on_event(struct sw_informer *inf, enum sw_watch_type type, const char *key,
                     const void *old, const void *obj, void *ctx)
{
    (void)old;
    struct sw_cluster_cache *cc = ctx;
    if (inf == cc->jobs && type == SW_WATCH_DELETED && obj != NULL && finished(obj))
        bury(cc, key, obj);
    if (inf == cc->nodes)
        node_seen(cc, key, type == SW_WATCH_DELETED);
    enum sw_kube_kind k = inf == cc->jobs         ? SW_KIND_JOB
                          : inf == cc->pods       ? SW_KIND_POD
                          : inf == cc->workloads  ? SW_KIND_WORKLOAD
                          : inf == cc->cqueues    ? SW_KIND_CLUSTERQUEUE
                          : inf == cc->rflavors   ? SW_KIND_RESOURCEFLAVOR
                          : inf == cc->nodepools  ? SW_KIND_NODEPOOL
                          : inf == cc->nodeclaims ? SW_KIND_NODECLAIM
                          : inf == cc->ctl_leases ? SW_KIND_LEASE
                                                  : SW_KIND_NODE;
    if (cc->on_change)
        cc->on_change(cc, k, key, cc->ctx);
}

static bool wants_gpus(const cJSON *pod, void *ctx)
{
    (void)ctx;
    struct sw_pod_facts f;
    return sw_pod_facts_from_json(pod, &f, NULL) == 0 && (f.gpu_request > 0 || f.mig_request > 0);
}

/* ---- records ---- */

static int compact_job(const cJSON *obj, void *ctx, void **rec, struct sw_error *err)
{
    struct sw_cluster_cache *cc = ctx;
    return sw_job_record_from_json_spec(cc->strings, obj, cc->spec_annotation,
                                        (struct sw_job_record **)rec, err);
}

static void release_job(void *rec, void *ctx)
{
    struct sw_cluster_cache *cc = ctx;
    sw_job_record_free(cc->strings, rec);
}

static const char *job_rv(const void *rec)
{
    return ((const struct sw_job_record *)rec)->rv;
}

static int compact_pod(const cJSON *obj, void *ctx, void **rec, struct sw_error *err)
{
    struct sw_cluster_cache *cc = ctx;
    return sw_pod_record_from_json(cc->strings, obj, (struct sw_pod_record **)rec, err);
}

static void release_pod(void *rec, void *ctx)
{
    struct sw_cluster_cache *cc = ctx;
    sw_pod_record_free(cc->strings, rec);
}

static const char *pod_rv(const void *rec)
{
    return ((const struct sw_pod_record *)rec)->rv;
}

static int compact_node(const cJSON *obj, void *ctx, void **rec, struct sw_error *err)
{
    struct sw_cluster_cache *cc = ctx;
    return sw_node_record_from_json(cc->strings, obj, (struct sw_node_record **)rec, err);
}

static void release_node(void *rec, void *ctx)
{
    struct sw_cluster_cache *cc = ctx;
    sw_node_record_free(cc->strings, rec);
}

static const char *node_rv(const void *rec)
{
    return ((const struct sw_node_record *)rec)->rv;
}

int sw_cluster_cache_start(struct sw_kube_client *c, sw_cache_change_cb on_change, void *ctx,
                           struct sw_cluster_cache **out)
{
    struct sw_cluster_cache *cc = sw_calloc(1, sizeof(*cc));
    if (cc == NULL)
        return SW_ENOMEM;
    cc->client = c;
    cc->on_change = on_change;
    cc->ctx = ctx;
    cc->client = c;
    cc->strings = sw_intern_new();
    if (cc->strings == NULL) {
        sw_free(cc);
        return SW_ENOMEM;
    }
    struct sw_informer_opts o = {.handler = on_event, .ctx = cc};
    o.kind = SW_KIND_JOB;
    o.compact = compact_job;
    o.release = release_job;
    o.record_rv = job_rv;
    int rc = sw_informer_new(c, &o, &cc->jobs);
    o.kind = SW_KIND_NODE;
    o.compact = compact_node;
    o.release = release_node;
    o.record_rv = node_rv;
    if (rc == 0)
        rc = sw_informer_new(c, &o, &cc->nodes);
    o.kind = SW_KIND_POD;
    o.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
    o.filter = wants_gpus;
    o.compact = compact_pod;
    o.release = release_pod;
    o.record_rv = pod_rv;
    if (rc == 0)
        rc = sw_informer_new(c, &o, &cc->pods);
    if (rc != 0) {
        sw_cluster_cache_free(cc);
        return rc;
    }
    sw_informer_start(cc->jobs);
    sw_informer_start(cc->nodes);
    sw_informer_start(cc->pods);
    *out = cc;
    return 0;
}

void sw_cluster_cache_free(struct sw_cluster_cache *cc)
{
    if (cc == NULL)
        return;
    /* The informers drop their records now (they may finish later). */
    sw_informer_free(cc->jobs);
    sw_informer_free(cc->pods);
    sw_informer_free(cc->nodes);
    sw_informer_free(cc->workloads);
    sw_informer_free(cc->cqueues);
    sw_informer_free(cc->rflavors);
    sw_informer_free(cc->nodepools);
    sw_informer_free(cc->nodeclaims);
    sw_informer_free(cc->ctl_leases);
    if (cc->strings != NULL)
        sw_intern_free(cc->strings);
    for (size_t i = 0; i < TOMBSTONES; i++)
        tomb_clear(&cc->tombs[i]);
    for (size_t i = 0; i < GONE_NODES; i++)
        sw_free(cc->gone_nodes[i]);
    sw_free(cc);
}

void sw_cluster_cache_keep_specs(struct sw_cluster_cache *cc, const char *annotation)
{
    cc->spec_annotation = annotation;
}

bool sw_cluster_cache_node_gone(const struct sw_cluster_cache *cc, const char *name)
{
    if (sw_informer_get(cc->nodes, name) != NULL)
        return false;
    for (size_t i = 0; i < GONE_NODES; i++)
        if (cc->gone_nodes[i] && strcmp(cc->gone_nodes[i], name) == 0)
            return true;
    return false;
}

const cJSON *sw_cluster_cache_job_tombstone(const struct sw_cluster_cache *cc, const char *key)
{
    for (size_t i = 0; i < TOMBSTONES; i++)
        if (cc->tombs[i].key && strcmp(cc->tombs[i].key, key) == 0)
            return cc->tombs[i].job;
    return NULL;
}

bool sw_cluster_cache_synced(const struct sw_cluster_cache *cc)
{
    return sw_informer_synced(cc->jobs) && sw_informer_synced(cc->pods) &&
           sw_informer_synced(cc->nodes) &&
           (cc->nodepools == NULL ||
            (sw_informer_synced(cc->nodepools) && sw_informer_synced(cc->nodeclaims)));
}

int sw_cluster_cache_watch_karpenter(struct sw_cluster_cache *cc)
{
    if (cc->nodepools != NULL)
        return 0;
    struct sw_informer_opts o = {.handler = on_event, .ctx = cc, .kind = SW_KIND_NODEPOOL};
    int rc = sw_informer_new(cc->client, &o, &cc->nodepools);
    o.kind = SW_KIND_NODECLAIM;
    if (rc == 0)
        rc = sw_informer_new(cc->client, &o, &cc->nodeclaims);
    o.kind = SW_KIND_LEASE;
    o.ns = SW_KARPENTER_LEASE_NS;
    o.field_selector = "metadata.name=" SW_KARPENTER_LEASE;
    if (rc == 0)
        rc = sw_informer_new(cc->client, &o, &cc->ctl_leases);
    if (rc != 0) {
        sw_informer_free(cc->nodepools);
        sw_informer_free(cc->nodeclaims);
        sw_informer_free(cc->ctl_leases);
        cc->nodepools = cc->nodeclaims = cc->ctl_leases = NULL;
        return rc;
    }
    sw_informer_start(cc->nodepools);
    sw_informer_start(cc->nodeclaims);
    sw_informer_start(cc->ctl_leases);
    return 0;
}

struct lease_pick {
    struct sw_ctl_lease *out;
    bool found;
};

/* The one Lease of that name in that namespace (the watch asks for no
 * other; anything else the answer holds is ignored). */
static void pick_lease(const char *key, const void *obj, void *ctx)
{
    struct lease_pick *lp = ctx;
    if (lp->found || strcmp(key, SW_KARPENTER_LEASE_NS "/" SW_KARPENTER_LEASE) != 0)
        return;
    const cJSON *spec = sw_json_child(obj, "spec");
    const char *renew = sw_json_str(spec, "renewTime");
    const char *holder = sw_json_str(spec, "holderIdentity");
    const cJSON *dur = sw_json_child(spec, "leaseDurationSeconds");
    memset(lp->out, 0, sizeof(*lp->out));
    snprintf(lp->out->key, sizeof(lp->out->key), "%.*s", (int)sizeof(lp->out->key) - 1, key);
    snprintf(lp->out->renew, sizeof(lp->out->renew), "%.*s", (int)sizeof(lp->out->renew) - 1,
             renew ? renew : "");
    snprintf(lp->out->holder, sizeof(lp->out->holder), "%.*s", (int)sizeof(lp->out->holder) - 1,
             holder ? holder : "");
    lp->out->duration_s = cJSON_IsNumber(dur) ? dur->valuedouble : 0;
    lp->found = true;
}

int sw_cluster_cache_karpenter_lease(struct sw_cluster_cache *cc, struct sw_ctl_lease *out)
{
    if (cc->ctl_leases == NULL || !sw_informer_synced(cc->ctl_leases))
        return SW_ESTATE;
    struct lease_pick lp = {out, false};
    sw_informer_foreach(cc->ctl_leases, pick_lease, &lp);
    return lp.found ? 0 : SW_ENOENT;
}

long sw_cluster_cache_karpenter_lease_failed(const struct sw_cluster_cache *cc)
{
    return cc->ctl_leases != NULL ? sw_informer_list_failed(cc->ctl_leases) : 0;
}

bool sw_cluster_cache_karpenter_lease_watched(const struct sw_cluster_cache *cc)
{
    return cc->ctl_leases != NULL && sw_informer_watching(cc->ctl_leases);
}

bool sw_cluster_cache_karpenter(const struct sw_cluster_cache *cc)
{
    return cc->nodepools != NULL;
}

struct sw_informer *sw_cluster_cache_informer(struct sw_cluster_cache *cc, enum sw_kube_kind k)
{
    return k == SW_KIND_JOB              ? cc->jobs
           : k == SW_KIND_POD            ? cc->pods
           : k == SW_KIND_NODE           ? cc->nodes
           : k == SW_KIND_WORKLOAD       ? cc->workloads
           : k == SW_KIND_CLUSTERQUEUE   ? cc->cqueues
           : k == SW_KIND_RESOURCEFLAVOR ? cc->rflavors
           : k == SW_KIND_NODEPOOL       ? cc->nodepools
           : k == SW_KIND_NODECLAIM      ? cc->nodeclaims
                                         : NULL;
}

int sw_cluster_cache_start_kueue(struct sw_cluster_cache *cc)
{
    if (cc->workloads != NULL)
        return 0;
    struct sw_informer_opts o = {.handler = on_event, .ctx = cc, .kind = SW_KIND_WORKLOAD};
    int rc = sw_informer_new(cc->client, &o, &cc->workloads);
    o.kind = SW_KIND_CLUSTERQUEUE;
    if (rc == 0)
        rc = sw_informer_new(cc->client, &o, &cc->cqueues);
    o.kind = SW_KIND_RESOURCEFLAVOR;
    if (rc == 0)
        rc = sw_informer_new(cc->client, &o, &cc->rflavors);
    if (rc != 0) {
        sw_informer_free(cc->workloads);
        sw_informer_free(cc->cqueues);
        cc->workloads = cc->cqueues = NULL;
        return rc;
    }
    sw_informer_start(cc->workloads);
    sw_informer_start(cc->cqueues);
    sw_informer_start(cc->rflavors);
    return 0;
}

bool sw_cluster_cache_kueue_synced(const struct sw_cluster_cache *cc)
{
    /* ResourceFlavors listed, or their list failed: without them every
     * flavour counts for every pool (sw_cluster_cache_flavors_list_failed). */
    return cc->workloads != NULL && sw_informer_synced(cc->workloads) &&
           sw_informer_synced(cc->cqueues) &&
           (sw_informer_synced(cc->rflavors) || sw_informer_list_failed(cc->rflavors) != 0);
}

long sw_cluster_cache_kueue_list_failed(const struct sw_cluster_cache *cc)
{
    if (cc->workloads == NULL)
        return 0;
    long s = sw_informer_list_failed(cc->workloads);
    return s != 0 ? s : sw_informer_list_failed(cc->cqueues);
}

long sw_cluster_cache_flavors_list_failed(const struct sw_cluster_cache *cc)
{
    return cc->rflavors != NULL && !sw_informer_synced(cc->rflavors)
               ? sw_informer_list_failed(cc->rflavors)
               : 0;
}

struct collect {
    struct sw_node_facts *nodes;
    struct sw_pod_facts *pods;
    size_t n;
};

struct collect_claims {
    struct sw_nodeclaim_facts *claims;
    size_t n;
};

static void add_node(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct collect *c = ctx;
    if (sw_node_facts_from_record(obj, &c->nodes[c->n], NULL) == 0)
        c->n++;
}

static void add_pod(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct collect *c = ctx;
    if (sw_pod_facts_from_record(obj, &c->pods[c->n], NULL) == 0)
        c->n++;
}

struct find_label {
    const char *type;
    const char *label, *value;
};

static void find_label(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct find_label *f = ctx;
    struct sw_node_facts nf;
    if (f->label == NULL && sw_node_facts_from_record(obj, &nf, NULL) == 0 &&
        nf.capacity_label != NULL && strcmp(nf.capacity_type, f->type) == 0) {
        f->label = nf.capacity_label;
        f->value = nf.capacity_value;
    }
}

int sw_cluster_cache_capacity_label(struct sw_cluster_cache *cc, const char *type,
                                    const char **label, const char **value)
{
    struct find_label f = {type, NULL, NULL};
    sw_informer_foreach(cc->nodes, find_label, &f);
    if (f.label == NULL)
        return SW_ENOENT;
    *label = f.label;
    *value = f.value;
    return 0;
}

int sw_cluster_cache_capacity(struct sw_cluster_cache *cc, struct sw_gpu_capacity *out)
{
    size_t nn = sw_informer_count(cc->nodes), np = sw_informer_count(cc->pods);
    struct collect n = {sw_calloc(nn + 1, sizeof(struct sw_node_facts)), NULL, 0};
    struct collect p = {NULL, sw_calloc(np + 1, sizeof(struct sw_pod_facts)), 0};
    int rc = SW_ENOMEM;
    if (n.nodes != NULL && p.pods != NULL) {
        sw_informer_foreach(cc->nodes, add_node, &n);
        sw_informer_foreach(cc->pods, add_pod, &p);
        rc = sw_capacity_compute(n.nodes, n.n, p.pods, p.n, out);
    }
    sw_free(n.nodes);
    sw_free(p.pods);
    return rc;
}

static void add_claim(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct collect_claims *c = ctx;
    if (sw_nodeclaim_facts_from_json(obj, &c->claims[c->n], NULL) == 0)
        c->n++;
}

int sw_cluster_cache_nodepool(struct sw_cluster_cache *cc, const char *name,
                              struct sw_nodepool_capacity *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    if (cc->nodepools == NULL || !sw_informer_synced(cc->nodepools) ||
        !sw_informer_synced(cc->nodeclaims))
        return sw_error_set(err, SW_ESTATE, "NodePools are not watched or not listed yet");
    const cJSON *np = sw_informer_get(cc->nodepools, name);
    if (np == NULL)
        return sw_error_set(err, SW_ENOENT, "NodePool %s does not exist", name);
    struct sw_nodepool_facts f;
    int rc = sw_nodepool_facts_from_json(np, &f, err);
    if (rc != 0)
        return rc;
    if (f.gpu_limit < 0)
        return sw_error_set(err, SW_EINVAL,
                            "NodePool %s has no GPU limit (spec.limits.nvidia.com/gpu)", name);
    size_t nn = sw_informer_count(cc->nodes), np_ = sw_informer_count(cc->pods),
           nc = sw_informer_count(cc->nodeclaims);
    struct collect n = {sw_calloc(nn + 1, sizeof(struct sw_node_facts)), NULL, 0};
    struct collect p = {NULL, sw_calloc(np_ + 1, sizeof(struct sw_pod_facts)), 0};
    struct collect_claims c = {sw_calloc(nc + 1, sizeof(struct sw_nodeclaim_facts)), 0};
    rc = SW_ENOMEM;
    if (n.nodes != NULL && p.pods != NULL && c.claims != NULL) {
        sw_informer_foreach(cc->nodes, add_node, &n);
        sw_informer_foreach(cc->pods, add_pod, &p);
        sw_informer_foreach(cc->nodeclaims, add_claim, &c);
        sw_nodepool_capacity(&f, c.claims, c.n, n.nodes, n.n, p.pods, p.n, out);
        rc = 0;
    } else {
        sw_error_set(err, SW_ENOMEM, "out of memory");
    }
    sw_free(n.nodes);
    sw_free(p.pods);
    sw_free(c.claims);
    return rc;
}

struct claim_walk {
    void (*fn)(const struct sw_nodeclaim_facts *claim, void *ctx);
    void *ctx;
};

static void walk_claim(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct claim_walk *w = ctx;
    struct sw_nodeclaim_facts f;
    if (sw_nodeclaim_facts_from_json(obj, &f, NULL) == 0)
        w->fn(&f, w->ctx);
}

void sw_cluster_cache_nodeclaims_foreach(struct sw_cluster_cache *cc,
                                         void (*fn)(const struct sw_nodeclaim_facts *claim,
                                                    void *ctx),
                                         void *ctx)
{
    if (cc->nodeclaims == NULL)
        return;
    struct claim_walk w = {fn, ctx};
    sw_informer_foreach(cc->nodeclaims, walk_claim, &w);
}
