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
 */
#ifndef SW_CLUSTERS_CAPACITY_H
#define SW_CLUSTERS_CAPACITY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SW_GPU_RESOURCE "nvidia.com/gpu"

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
    bool terminal;
    const cJSON *node_selector; /* borrowed; NULL when absent */
    /* Or, when node_selector is NULL, as an array (a cache record's). */
    const struct sw_kv *selectorv;
    size_t nselectorv;
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

/** Frees what sw_capacity_compute filled. */
void sw_capacity_free(struct sw_gpu_capacity *c);

/**
 * Parses a whole-number quantity of an extended resource ("4", 4 or "2k")
 * from `v` (borrowed) into *out. Errors name `what` and `field`.
 */
int sw_resource_quantity(const cJSON *v, const char *what, const char *field, int64_t *out,
                         struct sw_error *err);

#endif
