/*
 * capacity.h - GPU capacity per pool, from nodes and pods.
 *
 * Pure: node and pod facts in, pools out; no I/O, no clock. A pool is the
 * set of nodes that share capacity type (see sw_capacity_type_of: Karpenter's,
 * EKS', GKE's or AKS' label, or "owned" when none is set), GPU product (nvidia.com/gpu.product),
 * GPU memory (nvidia.com/gpu.memory, MiB), region and zone (topology.kubernetes.io/region and
 * /zone).
 *
 * For each pool:
 *   total     = allocatable nvidia.com/gpu of its schedulable nodes
 *   used      = GPUs requested by non-terminal pods bound to those nodes
 *   free      = total - used (never below zero)
 *   excluded  = allocatable GPUs on cordoned or NotReady nodes
 *   pending   = GPUs requested by unscheduled, non-terminal pods whose
 *               nodeSelector the pool's nodes satisfy
 * A pod's GPU request is computed as the scheduler does: the larger of the
 * sum over its containers and the largest init container; a container's
 * request falls back to its limit, as Kubernetes defaults it for extended
 * resources. Terminal pods (Succeeded, Failed) request nothing, as in
 * `kubectl describe node`.
 *
 * Shared and partitioned GPUs, as NVIDIA's device plugin and GPU feature
 * discovery advertise them:
 *   time-slicing  label nvidia.com/gpu.sharing-strategy=time-slicing with
 *                 nvidia.com/gpu.replicas=R: allocatable nvidia.com/gpu
 *                 counts replicas, R per physical GPU. A pool with such
 *                 nodes is time-sliced, and also counts in milli-GPUs
 *                 (milli_*): a replica is 1000 / R of a GPU, a whole GPU
 *                 of an unshared node 1000.
 *   MIG (mixed)   allocatable nvidia.com/mig-<profile>: N, slices of that
 *                 profile; pods ask for them by the same resource name. A
 *                 pool sums each profile's slices (mig[]); slices are apart
 *                 from whole GPUs.
 */
#ifndef SW_CLUSTERS_CAPACITY_H
#define SW_CLUSTERS_CAPACITY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SW_GPU_RESOURCE "nvidia.com/gpu"
/* A MIG slice's resource is this prefix and the profile ("1g.10gb"). */
#define SW_MIG_RESOURCE_PREFIX "nvidia.com/mig-"
/* The most MIG profiles a node or a pool keeps (a node has a few). */
#define SW_NODE_MIG_MAX 8

/** Allocatable MIG slices of one profile on a node. */
struct sw_node_mig {
    const char *profile; /* "1g.10gb" of nvidia.com/mig-1g.10gb; borrowed or interned */
    int64_t count;       /* or SW_REC_INVALID in a record (record.h) */
};

/** A key and its value (a label, a selector term), borrowed. */
struct sw_kv {
    const char *key;
    const char *value;
};

/** What capacity needs to know of a node. Strings borrowed or owned by the caller. */
struct sw_node_facts {
    const char *name;
    const char *capacity_type; /* "spot", "on-demand", "owned", ... */
    /* The label that gave it and that label's value ("eks.amazonaws.com/
     * capacityType", "SPOT"), what a pod's nodeSelector must name to land
     * on such a node; NULL for owned. */
    const char *capacity_label;
    const char *capacity_value;
    const char *gpu_product;
    const char *gpu_memory; /* MiB, as labelled */
    const char *region;
    const char *zone;
    int64_t gpu_allocatable;
    bool ready;
    bool unschedulable;
    /* GPU feature discovery's nvidia.com/gpu.sharing-strategy is
     * "time-slicing"; gpu_replicas is nvidia.com/gpu.replicas (1 when
     * absent or not time-sliced). */
    bool time_sliced;
    int64_t gpu_replicas;
    /* Allocatable MIG slices per profile (the first SW_NODE_MIG_MAX). */
    size_t nmig;
    struct sw_node_mig mig[SW_NODE_MIG_MAX];
    /* All labels, for matching pending pods' nodeSelector (borrowed): the
     * JSON object, or when that is NULL the array (a cache record's). */
    const cJSON *labels;
    const struct sw_kv *labelv;
    size_t nlabelv;
};

/** What capacity needs to know of a pod. */
struct sw_pod_facts {
    const char *namespace;
    const char *name;
    const char *node_name; /* NULL or "" when unscheduled */
    int64_t gpu_request;
    /* MIG slices the pod asks for: the first nvidia.com/mig-<profile> its
     * containers name (borrowed; NULL: none), summed as gpu_request is. */
    const char *mig_profile;
    int64_t mig_request;
    bool terminal;
    const cJSON *node_selector; /* borrowed; NULL when absent */
    /* Or, when node_selector is NULL, as an array (a cache record's). */
    const struct sw_kv *selectorv;
    size_t nselectorv;
};

/** A pool's slices of one MIG profile. */
struct sw_pool_mig {
    char *profile; /* owned */
    /* Slices of it one GPU is partitioned into: 7 / the profile's compute
     * slices ("<n>g": 1g -> 7, 2g -> 3, 3g -> 2, 4g and 7g -> 1), as on
     * NVIDIA's A100 and H100 (7 compute slices a GPU). */
    int per_gpu;
    int64_t total, used, free;
};

/** A pool's figures. `key` and the attribute strings are owned by the result. */
struct sw_gpu_pool {
    char *key; /* "capacity_type/product/memory/region/zone" */
    char *capacity_type;
    char *gpu_product;
    char *gpu_memory;
    char *region;
    char *zone;
    int nodes;          /* schedulable nodes */
    int nodes_excluded; /* cordoned or NotReady */
    int64_t total;
    int64_t used;
    int64_t free;
    int64_t excluded;
    int64_t pending;
    /* Time-sliced: one of its schedulable nodes is. Then milli_* are its
     * GPUs in thousandths (a replica 1000 / R), and replicas the largest
     * R of its nodes. */
    bool time_sliced;
    int64_t replicas;
    int64_t milli_total, milli_used, milli_free;
    /* MIG slices of its schedulable nodes per profile, sorted by profile. */
    size_t nmig;
    struct sw_pool_mig mig[SW_NODE_MIG_MAX];
};

/** The result of sw_capacity_compute. */
struct sw_gpu_capacity {
    struct sw_gpu_pool *pools; /* sorted by key */
    size_t npools;
    int64_t pending_total; /* pending GPU demand, each pod counted once */
    int64_t pending_pods;
};

/**
 * The capacity type a node's labels give, read with get(ctx, key) (which
 * returns the label's value or NULL). The first of these that is set with a
 * known value wins:
 *   karpenter.sh/capacity-type               its value as is ("spot", "on-demand", ...)
 *   eks.amazonaws.com/capacityType           SPOT -> "spot", ON_DEMAND -> "on-demand"
 *   cloud.google.com/gke-spot                "true" -> "spot"
 *   cloud.google.com/gke-preemptible         "true" -> "spot"
 *   cloud.google.com/gke-provisioning        spot -> "spot", standard -> "on-demand"
 *   kubernetes.azure.com/scalesetpriority    spot -> "spot", regular -> "on-demand"
 * and "owned" when none is. Returns a static string or one of get's values.
 */
const char *sw_capacity_type_of(const char *(*get)(const void *ctx, const char *key),
                                const void *ctx);

/**
 * As sw_capacity_type_of, and sets *label and *value (when not NULL) to the
 * label that decided it and its value as the node has it (NULL for owned).
 */
const char *sw_capacity_type_label(const char *(*get)(const void *ctx, const char *key),
                                   const void *ctx, const char **label, const char **value);

/**
 * The time-slicing replicas of a node's GPUs, from its labels through `get`
 * (as for sw_capacity_type_of): nvidia.com/gpu.replicas, a whole number
 * from 1 to 1024, when nvidia.com/gpu.sharing-strategy is "time-slicing";
 * else 1 (a missing or malformed label included: sw_node_facts_from_json
 * refuses the latter). One unit of nvidia.com/gpu there is 1000 / replicas
 * thousandths of a GPU.
 */
int64_t sw_gpu_replicas_of(const char *(*get)(const void *ctx, const char *key), const void *ctx);

/**
 * Reads node facts from a Node object (borrowed; the facts borrow from it).
 * Errors name the node and the field (e.g. a non-integer allocatable).
 */
int sw_node_facts_from_json(const cJSON *node, struct sw_node_facts *out, struct sw_error *err);

/**
 * Reads pod facts from a Pod object (borrowed; the facts borrow from it).
 * Errors name the pod and the field.
 */
int sw_pod_facts_from_json(const cJSON *pod, struct sw_pod_facts *out, struct sw_error *err);

/**
 * The nvidia.com/gpu one pod of `spec` (a PodSpec, borrowed) takes, as the
 * scheduler sums it (containers, sidecars, the largest plain init
 * container; requests, else limits). `what` names the object in errors.
 */
int sw_pod_spec_gpus(const cJSON *spec, const char *what, int64_t *out, struct sw_error *err);

/**
 * Computes the pools. Returns 0 and fills *out (free with
 * sw_capacity_free), or SW_ENOMEM.
 */
int sw_capacity_compute(const struct sw_node_facts *nodes, size_t nnodes,
                        const struct sw_pod_facts *pods, size_t npods, struct sw_gpu_capacity *out);

/**
 * Parses a whole quantity of an extended resource ("4", 4, "2k") into *out.
 * Errors name `what` and `field`.
 */
int sw_gpu_quantity(const cJSON *v, const char *what, const char *field, int64_t *out,
                    struct sw_error *err);

/** A node's label (borrowed from the facts' labels), or NULL when it has none. */
const char *sw_node_label(const struct sw_node_facts *n, const char *key);

/**
 * Slices of MIG profile `profile` ("3g.40gb") one GPU holds: 7 / n for a
 * profile "<n>g..." with n from 1 to 7 (at least 1), or 0 when the profile
 * does not start that way.
 */
int sw_mig_per_gpu(const char *profile);

/** Frees what sw_capacity_compute filled. */
void sw_capacity_free(struct sw_gpu_capacity *c);

/**
 * Parses a whole-number quantity of an extended resource ("4", 4 or "2k")
 * from `v` (borrowed) into *out. Errors name `what` and `field`.
 */
int sw_resource_quantity(const cJSON *v, const char *what, const char *field, int64_t *out,
                         struct sw_error *err);

#endif
