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

/** Whether all three informers have listed once. */
bool sw_cluster_cache_synced(const struct sw_cluster_cache *cc);

/** The informer of a kind (SW_KIND_JOB, SW_KIND_POD or SW_KIND_NODE), borrowed. */
struct sw_informer *sw_cluster_cache_informer(struct sw_cluster_cache *cc, enum sw_kube_kind k);

/**
 * Also watches Karpenter's NodePools and NodeClaims (idempotent): for a
 * cluster with a pool bound to a NodePool. From then on the cache is synced
 * only once they are listed too (a cluster without Karpenter's CRDs never
 * is: the informers retry, and the member is not used).
 */
int sw_cluster_cache_watch_karpenter(struct sw_cluster_cache *cc);

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
