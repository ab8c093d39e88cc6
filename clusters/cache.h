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

/**
 * The informer of a kind (SW_KIND_JOB, SW_KIND_POD, SW_KIND_NODE, and once
 * started SW_KIND_WORKLOAD and SW_KIND_CLUSTERQUEUE), borrowed, or NULL.
 */
struct sw_informer *sw_cluster_cache_informer(struct sw_cluster_cache *cc, enum sw_kube_kind k);

/**
 * Starts informers of Kueue's Workloads and ClusterQueues
 * (kueue.x-k8s.io/v1beta2, whole objects cached), once; later calls do
 * nothing. The hub calls it for a member where it sees a Job in a Kueue
 * queue. They are not part of sw_cluster_cache_synced: a member whose Kueue
 * does not answer keeps its plain Jobs going.
 */
int sw_cluster_cache_start_kueue(struct sw_cluster_cache *cc);

/** Whether the Kueue informers are started and have listed once. */
bool sw_cluster_cache_kueue_synced(const struct sw_cluster_cache *cc);

/** Computes GPU capacity per pool from the cached nodes and pods. */
int sw_cluster_cache_capacity(struct sw_cluster_cache *cc, struct sw_gpu_capacity *out);

#endif
