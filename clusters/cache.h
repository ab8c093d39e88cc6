/*
 * cache.h - the hub's per-cluster cache: Jobs, GPU-requesting Pods, Nodes.
 *
 * Three informers on one cluster's client. Pods are watched without the
 * terminal ones (field selector status.phase!=Succeeded,Failed) and only
 * those requesting nvidia.com/gpu are kept. Every change calls `on_change`
 * with the kind and the object's key, which the controller puts on its
 * work queue (level-triggered: the reconciler re-reads the cache).
 */
#ifndef SW_CLUSTERS_CACHE_H
#define SW_CLUSTERS_CACHE_H

#include <stdbool.h>

#include "clusters/capacity.h"
#include "clusters/informer.h"
#include "clusters/nodepool.h"

struct sw_cluster_cache;

/** A change to enqueue: kind and "namespace/name" (borrowed). */
typedef void (*sw_cache_change_cb)(struct sw_cluster_cache *cc, enum sw_kube_kind kind,
                                   const char *key, void *ctx);

/** Creates and starts the cache on `c` (borrowed; must outlive it). */
int sw_cluster_cache_start(struct sw_kube_client *c, sw_cache_change_cb on_change, void *ctx,
                           struct sw_cluster_cache **out);

/** Stops and frees (run the loop to finish). */
void sw_cluster_cache_free(struct sw_cluster_cache *cc);

/**
 * Keeps the whole spec of every unfinished Job carrying `annotation`
 * (borrowed; a string that outlives the cache), for a controller that
 * builds from it (the hub's mirrors) without reading such a Job again.
 * Call right after sw_cluster_cache_start, before the loop runs. Other
 * Jobs stay compact.
 */
void sw_cluster_cache_keep_specs(struct sw_cluster_cache *cc, const char *annotation);

/** Whether all three informers have listed once. */
bool sw_cluster_cache_synced(const struct sw_cluster_cache *cc);

/**
 * The informer of a kind (SW_KIND_JOB, SW_KIND_POD, SW_KIND_NODE, and once
 * started SW_KIND_WORKLOAD, SW_KIND_CLUSTERQUEUE and SW_KIND_RESOURCEFLAVOR),
 * borrowed, or NULL.
 */
struct sw_informer *sw_cluster_cache_informer(struct sw_cluster_cache *cc, enum sw_kube_kind k);

/**
 * The last state (borrowed; valid until the cache changes again) of a Job,
 * "namespace/name", that was deleted from the cluster after it had finished
 * (a Complete or Failed condition), or NULL. The last 512 such Jobs are
 * kept: a mirror that completed and was deleted (a cleanup script,
 * ttlSecondsAfterFinished, a person) before its hub recorded the outcome
 * is then still known to have completed, and is never taken for lost.
 */
const cJSON *sw_cluster_cache_job_tombstone(const struct sw_cluster_cache *cc, const char *key);

/**
 * Whether the node `name` is gone: the cache saw it deleted (the last 256
 * such nodes are remembered) and has not seen it since. A node the cache
 * does not hold and never saw deleted is not gone: it may be new (a node
 * just provisioned, bound to before its watch event arrived) or the node
 * list may lag; a pod bound to it is not taken for lost. (A node deleted
 * while no hub watched is found by the pod garbage collector, whose
 * DisruptionTarget condition ends the mirror's pod the same way.)
 */
bool sw_cluster_cache_node_gone(const struct sw_cluster_cache *cc, const char *name);

/**
 * The node label (and its value) that makes a cached node's capacity type
 * `type` ("spot", ...; see sw_capacity_type_label), from the first such
 * node: what a pod's nodeSelector names to land on one. Borrowed from the
 * cache until its next change. SW_ENOENT when no cached node has that type.
 */
int sw_cluster_cache_capacity_label(struct sw_cluster_cache *cc, const char *type,
                                    const char **label, const char **value);

/**
 * Starts informers of Kueue's Workloads, ClusterQueues and ResourceFlavors
 * (kueue.x-k8s.io/v1beta2, whole objects cached), once; later calls do
 * nothing. The hub calls it for a member where it sees a Job in a Kueue
 * queue. They are not part of sw_cluster_cache_synced: a member whose Kueue
 * does not answer keeps its plain Jobs going.
 */
int sw_cluster_cache_start_kueue(struct sw_cluster_cache *cc);

/**
 * Whether the Kueue informers are started and have listed once (the
 * ResourceFlavors': or failed to, see sw_cluster_cache_flavors_list_failed).
 */
bool sw_cluster_cache_kueue_synced(const struct sw_cluster_cache *cc);

/**
 * The HTTP status with which the ResourceFlavor informer's list failed
 * (-1: no answer) while it has never listed, else 0. Reading them is
 * optional: a role without `resourceflavors` leaves the hub counting every
 * flavour of a ClusterQueue for every pool, as before it read them.
 */
long sw_cluster_cache_flavors_list_failed(const struct sw_cluster_cache *cc);

/**
 * The HTTP status with which a Kueue informer's last list failed (the
 * Workloads', else the ClusterQueues'; -1: no answer), 0 when neither
 * failed or they are not started (sw_informer_list_failed).
 */
long sw_cluster_cache_kueue_list_failed(const struct sw_cluster_cache *cc);

/**
 * Also watches Karpenter's NodePools and NodeClaims (idempotent): for a
 * cluster with a pool bound to a NodePool, and its leader-election Lease
 * (sw_cluster_cache_karpenter_lease). From then on the cache is synced
 * only once the first two are listed too (a cluster without Karpenter's CRDs never
 * is: the informers retry, and the member is not used).
 */
int sw_cluster_cache_watch_karpenter(struct sw_cluster_cache *cc);

/* The name of Karpenter's leader-election Lease (its default,
 * LEADER_ELECTION_NAME) and the namespace where it is watched, with the
 * NodePools: Karpenter's own (the chart's default); no other is read. */
#define SW_KARPENTER_LEASE    "karpenter-leader-election"
#define SW_KARPENTER_LEASE_NS "kube-system"

/** A capacity controller's leader-election Lease, as cached (copied). */
struct sw_ctl_lease {
    char key[160];     /* "namespace/name" */
    char renew[48];    /* spec.renewTime, "" when unset */
    char holder[160];  /* spec.holderIdentity, "" when released */
    double duration_s; /* spec.leaseDurationSeconds, 0 when unset */
};

/**
 * Karpenter's Lease (SW_KARPENTER_LEASE in SW_KARPENTER_LEASE_NS) into *out: 0; SW_ENOENT when
 * there is none (Karpenter runs without leader election, or under another name); SW_ESTATE when
 * Leases are not watched or not listed yet (credentials that may not read them).
 */
int sw_cluster_cache_karpenter_lease(struct sw_cluster_cache *cc, struct sw_ctl_lease *out);

/**
 * Whether the Lease's informer is synced and its watch open now: only then
 * does a Lease not renewed in the cache say Karpenter is silent.
 */
bool sw_cluster_cache_karpenter_lease_watched(const struct sw_cluster_cache *cc);

/** The HTTP status of the Lease's last list if it failed (sw_informer_list_failed), else 0. */
long sw_cluster_cache_karpenter_lease_failed(const struct sw_cluster_cache *cc);

/** Whether the cache watches NodePools and NodeClaims. */
bool sw_cluster_cache_karpenter(const struct sw_cluster_cache *cc);

/**
 * The figures of NodePool `name` (nodepool.h) from the cached NodePools,
 * NodeClaims, nodes and pods. SW_ESTATE when they are not watched or not
 * listed yet, SW_ENOENT when the NodePool does not exist, SW_EINVAL when it
 * has no GPU limit, SW_EPARSE when it cannot be read; err says which.
 */
int sw_cluster_cache_nodepool(struct sw_cluster_cache *cc, const char *name,
                              struct sw_nodepool_capacity *out, struct sw_error *err);

/** Calls fn with the facts of every cached NodeClaim (borrowed during the call). */
void sw_cluster_cache_nodeclaims_foreach(struct sw_cluster_cache *cc,
                                         void (*fn)(const struct sw_nodeclaim_facts *claim,
                                                    void *ctx),
                                         void *ctx);

/** Computes GPU capacity per pool from the cached nodes and pods. */
int sw_cluster_cache_capacity(struct sw_cluster_cache *cc, struct sw_gpu_capacity *out);

#endif
