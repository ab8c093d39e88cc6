/*
 * nodepool.h - a pool's GPU capacity when it comes from a Karpenter NodePool.
 *
 * Pure: NodePool, NodeClaim, node and pod facts in, figures out; no I/O, no
 * clock. A NodePool's nodes exist only while work needs them, so what a pool
 * can take is not the GPUs of its nodes but what it may still provision:
 *
 *   limit        spec.limits["nvidia.com/gpu"] of the NodePool (its ceiling)
 *   provisioned  GPUs of its NodeClaims (label karpenter.sh/nodepool), the
 *                launching ones included: status.capacity or allocatable
 *                (the larger), else what the claim asked for
 *                (spec.resources.requests)
 *   launching    GPUs of its NodeClaims whose node is not Ready yet
 *   idle         allocatable GPUs of its Ready, schedulable nodes (label
 *                karpenter.sh/nodepool) less what pods bound there ask,
 *                less on_idle (below)
 *   pending      GPUs asked by unscheduled pods that select the NodePool
 *                (nodeSelector karpenter.sh/nodepool, or its capacity type
 *                and GPU product); they take idle GPUs first (the
 *                scheduler binds them there before a new node is up):
 *                on_idle = min(pending, idle)
 *   waiting      what of pending neither idle GPUs nor launching claims
 *                cover: max(0, pending - on_idle - launching)
 *   room         max(0, limit - provisioned - waiting): what it may still
 *                provision for new work
 *   free         idle + room
 *
 * A launching claim's GPUs are counted once: in provisioned (so not in
 * room), never as idle (its node is not Ready). A claim being deleted still
 * counts until it is gone, as Karpenter's own limit check counts it.
 */
#ifndef SW_CLUSTERS_NODEPOOL_H
#define SW_CLUSTERS_NODEPOOL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clusters/capacity.h"
#include "common/error.h"

#define SW_NODEPOOL_LABEL "karpenter.sh/nodepool"

/** What capacity needs to know of a NodePool. Strings borrowed from the object. */
struct sw_nodepool_facts {
    const char *name;
    int64_t gpu_limit;         /* spec.limits["nvidia.com/gpu"]; -1 when it has none */
    const char *capacity_type; /* a single karpenter.sh/capacity-type, or NULL (any) */
    const char *gpu_product;   /* the template's nvidia.com/gpu.product, or NULL */
    bool ready;                /* condition Ready=True */
};

/** What capacity needs to know of a NodeClaim. Strings borrowed from the object. */
struct sw_nodeclaim_facts {
    const char *name;
    const char *nodepool;  /* label karpenter.sh/nodepool, or NULL */
    const char *node_name; /* status.nodeName, or NULL before registration */
    int64_t gpus;          /* max(status.capacity, status.allocatable), else requests */
    int64_t requested;     /* spec.resources.requests: what the pods it was made for ask; 0 none */
    int64_t created_ms;    /* metadata.creationTimestamp */
    int64_t launched_ms;   /* condition Launched=True: its transition time; 0 not yet */
    int64_t ready_ms;      /* condition Initialized=True: its transition time; 0 not yet */
    bool deleting;         /* metadata.deletionTimestamp set */
    int64_t deleted_ms;    /* metadata.deletionTimestamp; 0 when not set */
};

/** A NodePool's figures (definitions above). */
struct sw_nodepool_capacity {
    int64_t limit;
    int nodes;
    int64_t node_gpus;
    int64_t idle;
    int claims;
    int claims_launching;
    int64_t provisioned;
    int64_t launching;
    int64_t pending;
    int64_t waiting;
    int64_t room;
    int64_t free;
};

/**
 * Reads a NodePool (borrowed; the facts borrow from it). A NodePool without
 * a GPU limit is read (gpu_limit -1): callers decide whether that is an
 * error. Errors name the NodePool and the field.
 */
int sw_nodepool_facts_from_json(const cJSON *np, struct sw_nodepool_facts *out,
                                struct sw_error *err);

/** Reads a NodeClaim (borrowed; the facts borrow from it). Errors name it and the field. */
int sw_nodeclaim_facts_from_json(const cJSON *nc, struct sw_nodeclaim_facts *out,
                                 struct sw_error *err);

/**
 * Computes the figures of NodePool `np` from every claim, node and pod of
 * its cluster (all borrowed; only the NodePool's own are counted). Cannot
 * fail.
 */
void sw_nodepool_capacity(const struct sw_nodepool_facts *np,
                          const struct sw_nodeclaim_facts *claims, size_t nclaims,
                          const struct sw_node_facts *nodes, size_t nnodes,
                          const struct sw_pod_facts *pods, size_t npods,
                          struct sw_nodepool_capacity *out);

/**
 * Whether pods wait for the NodePool that it ought to be adding a node for:
 * GPUs waiting that neither idle GPUs nor launching claims cover, with room
 * under its limit (limit > provisioned). While that lasts, Karpenter makes
 * no NodeClaim for them: none of its offerings is available (a spot
 * shortage, as Karpenter shows one), or it cannot launch for another
 * reason. A NodePool at its limit is full, not stalled.
 */
bool sw_nodepool_stalled(const struct sw_nodepool_capacity *c);

/**
 * Whether pods wait for the NodePool past what it may provision: GPUs
 * waiting (as above) while it is at its limit (provisioned >= limit). They
 * get a node only when others' pods end; it cannot grow for them.
 */
bool sw_nodepool_full(const struct sw_nodepool_capacity *c);

/**
 * Whether a NodePool serves a registered pool of this capacity type and GPU
 * product (for discovery): its capacity type is that one and its product
 * is that one (a NodePool that names none matches any).
 */
bool sw_nodepool_serves(const struct sw_nodepool_facts *np, const char *capacity_type,
                        const char *gpu_product);

/** A launching NodeClaim a mirror waiting for a node may be waiting for. */
struct sw_claim_candidate {
    char name[64];
    int64_t created_ms;
    int64_t room; /* GPUs it was made for, less those of mirrors already said to wait for it */
};

/**
 * Which of `n` launching claims (borrowed) a mirror asking `gpus` GPUs
 * waits for: Karpenter makes a claim for the pods it packs onto it, so the
 * earliest claim whose room is exactly `gpus`, else the earliest with the
 * least room that still holds `gpus` (two mirrors burst at once are told
 * apart by what they ask), else, for a mirror whose pods need more than
 * one node, the one with the most room. -1 when no claim has room left.
 */
int sw_nodeclaim_pick(const struct sw_claim_candidate *c, size_t n, int64_t gpus);

#endif
