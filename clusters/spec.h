/*
 * spec.h - a member cluster's description: role, region, GPU pools, prices.
 *
 * Given on the command line (--role, --region, --pool ...) or in a cluster
 * spec file (YAML; the format is in docs/clusters.md):
 *
 *   role: cloud
 *   region: us-east-1
 *   pools:
 *   - name: spot-h100
 *     capacityType: spot          # owned | on-demand | spot
 *     gpuProduct: NVIDIA-H100-80GB-HBM3
 *     gpuMemoryMiB: 81559
 *     zone: us-east-1a            # optional
 *     pricePerGpuHour: 2.10       # USD; 0 for owned capacity
 *     maxGpus: 64                 # optional cap on what spillway may use
 *     nodePool: gpu-spot          # optional: capacity from this Karpenter NodePool
 *   localQueue: gpu               # optional: Kueue LocalQueue mirrors enter
 *   namespaces: [team-a, team-b]  # optional: the narrow member role's namespaces
 *
 * A pool matches the nodes whose labels carry the same capacity type, GPU
 * product and memory (and zone when given) in the cluster's region; see
 * capacity.h; a pool bound to a NodePool takes its ceiling and room from the
 * NodePool instead (nodepool.h). Parsing is pure and every error names the file (or flag) and
 * the field.
 */
#ifndef SW_CLUSTERS_SPEC_H
#define SW_CLUSTERS_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/limits.h"

#define SW_CLUSTER_NAME_MAX SW_NAME_MAX

enum sw_cluster_role { SW_ROLE_NONE = 0, SW_ROLE_ONPREM, SW_ROLE_CLOUD };

/** "onprem" / "cloud" / "". */
const char *sw_cluster_role_name(enum sw_cluster_role r);

struct sw_pool_spec {
    char name[SW_CLUSTER_NAME_MAX];
    char capacity_type[16]; /* owned, on-demand, spot */
    char gpu_product[SW_GPU_PRODUCT_MAX];
    int64_t gpu_memory_mib;
    char zone[SW_CLUSTER_NAME_MAX];
    double price_per_gpu_hour;
    int64_t max_gpus; /* 0: no cap */
    /* The Karpenter NodePool the pool's capacity comes from, or "": its
     * nodes (see nodepool.h). */
    char nodepool[SW_CLUSTER_NAME_MAX];
};

#define SW_MAX_POOLS 32
/** The most namespaces a registration lists (the narrow member role). */
#define SW_MAX_BURST_NAMESPACES 32

struct sw_cluster_spec {
    enum sw_cluster_role role;
    char region[SW_CLUSTER_NAME_MAX];
    struct sw_pool_spec pools[SW_MAX_POOLS];
    size_t npools;
    /* The Kueue LocalQueue that mirrors sent here enter (in their
     * namespace), "" when mirrors are not queued: a DNS label. */
    char local_queue[SW_CLUSTER_NAME_MAX];
    /* The namespaces the member grants spillway with the narrow member
     * role (deploy/rbac/narrow), each a DNS label; none: the wide role
     * (deploy/rbac/member-clusterrole.yaml), every namespace. */
    char namespaces[SW_MAX_BURST_NAMESPACES][64];
    size_t nnamespaces;
};

/**
 * Adds namespace `ns` to s->namespaces: a DNS label (1-63 of a-z, 0-9 and
 * '-', starting and ending with a letter or digit), listed once, at most
 * SW_MAX_BURST_NAMESPACES; `what` names the flag or field in errors.
 */
int sw_cluster_namespace_add(struct sw_cluster_spec *s, const char *ns, const char *what,
                             struct sw_error *err);

/** Parses a --namespaces value ("a,b,c") with sw_cluster_namespace_add. */
int sw_cluster_namespaces_flag(struct sw_cluster_spec *s, const char *value, const char *what,
                               struct sw_error *err);

/**
 * Whether the member lets spillway act in namespace `ns`: every namespace
 * under the wide role (no namespaces listed), else only a listed one.
 */
bool sw_cluster_spec_grants(const struct sw_cluster_spec *s, const char *ns);

/** "a, b, c" into buf (cut to fit). */
void sw_cluster_namespaces_str(const struct sw_cluster_spec *s, char *buf, size_t len);

/**
 * Checks a LocalQueue name (a DNS label: 1-63 of a-z, 0-9, '-', starting
 * and ending with a letter or digit); `what` names the flag or field.
 */
int sw_cluster_local_queue_check(const char *name, const char *what, struct sw_error *err);

/**
 * Parses a spec file's bytes into *out (fields already set are kept unless
 * the file sets them). `path` names the file in errors. Strict: an unknown
 * or repeated field at any level, a key that is not a field name, a value
 * of the wrong shape or null, and a second YAML document are errors naming
 * the file, the line and the field. On error *out may hold part of the file.
 */
int sw_cluster_spec_parse(const char *text, size_t len, const char *path,
                          struct sw_cluster_spec *out, struct sw_error *err);

/**
 * Parses one --pool flag value (each field once, short or long key):
 *   name=spot-h100,capacity=spot,product=NVIDIA-H100,memory=81559,zone=z,price=2.1,max=64,
 *   nodepool=gpu-spot
 * and appends it to `out`.
 */
int sw_pool_flag_parse(const char *value, struct sw_cluster_spec *out, struct sw_error *err);

/** Parses "onprem" or "cloud". */
int sw_cluster_role_parse(const char *s, enum sw_cluster_role *out);

/** Checks a cluster or pool name: 1-63 of [a-z0-9-], starting with a letter. */
int sw_name_valid(const char *s);

/** Final checks (role and region set, pools valid and uniquely named). */
int sw_cluster_spec_validate(const struct sw_cluster_spec *s, const char *what,
                             struct sw_error *err);

#endif
