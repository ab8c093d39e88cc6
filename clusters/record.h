/*
 * record.h - the compact records the hub's cache keeps of Jobs, Pods and
 * Nodes, in place of whole JSON trees.
 *
 * A record holds the fields the hub and the placement engine read, and
 * nothing else: about a tenth of the memory of the object it comes from.
 * Strings that repeat across objects (namespaces, label keys and values,
 * node names, phases, condition types, reasons and messages) are interned
 * in the cache's table (intern.h); strings unique to an object (name, UID,
 * resourceVersion, timestamps) live in the record's own allocation, which
 * also holds its arrays: a record is one allocation plus references.
 *
 * What is kept:
 *   Job   name, namespace, uid, resourceVersion, creationTimestamp,
 *         deletionTimestamp, finalizers, labels and annotations under
 *         "spillway.io/" (and app.kubernetes.io/managed-by, kueue.x-k8s.io/queue-name),
 * spec.suspend, spec.managedBy, spec.parallelism and completions, the template's GPUs per pod,
 * nodeSelector and SPILLWAY_REGION env, status counts, startTime, completionTime,
 * completed/failedIndexes, conditions Pod   name, namespace, resourceVersion, owner Job (job-name
 * label or controller ownerReference), spec.nodeName, nodeSelector, status.phase, GPU request,
 * conditions (without timestamps) Node  name, resourceVersion, all labels (with GPU feature
 * discovery's time-slicing ones), taints, allocatable GPUs and MIG slices
 *         (nvidia.com/mig-<profile>), unschedulable, Ready
 * Whatever needs more (the pod template, to build a mirror) GETs the
 * object. Conversion is lenient with fields of the wrong type (they read as
 * absent, as the JSON readers did) and fails only on a missing name or when
 * out of memory; a bad GPU quantity is kept as such and reported when read.
 */
#ifndef SW_CLUSTERS_RECORD_H
#define SW_CLUSTERS_RECORD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clusters/capacity.h"
#include "clusters/intern.h"
#include "common/error.h"

/** A status condition; all strings interned (timestamps in the record for Jobs, NULL for Pods). */
struct sw_condition {
    const char *type, *status, *reason, *message;
    const char *last_transition, *last_probe;
};

/** A Node's taint, interned. */
struct sw_taint {
    const char *key, *value, *effect;
};

#define SW_REC_ABSENT  (-1)
#define SW_REC_INVALID (-2) /* present but not a whole number */

struct sw_job_record {
    const char *name, *uid, *rv, *created; /* own */
    const char *deleting;                  /* own; deletionTimestamp or NULL */
    const char *ns;                        /* interned */
    const char *managed_by;                /* interned or NULL */
    const char *region_env;                /* interned or NULL: SPILLWAY_REGION of the template */
    const char *start_time, *completion_time;       /* own or NULL */
    const char *completed_indexes, *failed_indexes; /* own or NULL */
    int64_t parallelism, completions;               /* or SW_REC_ABSENT / SW_REC_INVALID */
    int64_t generation; /* metadata.generation (the spec's version), or SW_REC_ABSENT */
    /* The template's GPUs per pod, as the scheduler sums them; SW_REC_ABSENT
     * without a template or containers, SW_REC_INVALID for a bad quantity. */
    int64_t gpus_per_pod;
    int32_t active, ready, terminating, succeeded, failed; /* SW_REC_ABSENT when absent */
    int8_t suspend;                                        /* SW_REC_ABSENT, 0 or 1 */
    uint16_t nlabels, nannotations, nfinalizers, nconditions, nselector;
    const struct sw_kv *labels;        /* interned */
    const struct sw_kv *annotations;   /* interned */
    const struct sw_kv *node_selector; /* the template's, interned */
    const char *const *finalizers;     /* interned */
    const struct sw_condition *conditions;
    /* The whole spec as JSON text (own, a separate allocation, cJSON_free),
     * kept only for an unfinished Job carrying the annotation the cache was
     * asked to keep specs for (sw_job_record_from_json_spec); else NULL. */
    char *spec_text;
};

struct sw_pod_record {
    const char *name, *rv;    /* own */
    const char *ns, *owner;   /* interned; owner is the Job's name or NULL */
    const char *node, *phase; /* interned or NULL */
    int64_t gpu_request;      /* or SW_REC_INVALID */
    const char *mig_profile;  /* interned or NULL: the MIG profile it asks slices of */
    int64_t mig_request;      /* slices of it */
    uint16_t nconditions, nselector;
    const struct sw_condition *conditions;
    const struct sw_kv *node_selector;
};

struct sw_node_record {
    const char *name, *rv;   /* own */
    int64_t gpu_allocatable; /* 0 when absent, or SW_REC_INVALID */
    bool ready, unschedulable;
    uint16_t nlabels, ntaints, nmig;
    const struct sw_node_mig *mig; /* allocatable nvidia.com/mig-* resources */
    const struct sw_kv *labels;    /* interned, all of them */
    const struct sw_taint *taints;
};

/**
 * Converts a Job (borrowed) into a new record (free with
 * sw_job_record_free on the same table). Errors name the object and field.
 */
int sw_job_record_from_json(struct sw_intern *t, const cJSON *job, struct sw_job_record **out,
                            struct sw_error *err);
void sw_job_record_free(struct sw_intern *t, struct sw_job_record *r);
/**
 * As sw_job_record_from_json, and when the Job carries the annotation
 * `annotation` (not NULL) and has not finished (no Complete or Failed
 * condition), the record also keeps its whole spec (spec_text), so that a
 * controller can build from it without reading the Job again. Out of
 * memory for the spec alone, the record is made without it.
 */
int sw_job_record_from_json_spec(struct sw_intern *t, const cJSON *job, const char *annotation,
                                 struct sw_job_record **out, struct sw_error *err);

/**
 * A Job object holding what the record keeps, in the API's field names (a
 * new reference); with spec_text, the spec is the whole one it holds. The template has one
 * container carrying the GPUs per pod (and SPILLWAY_REGION), so sw_job_gpu_shape reads the same
 * shape from it. NULL when out of memory.
 */
cJSON *sw_job_record_json(const struct sw_job_record *r);

/** The value of a kept label or annotation, or NULL. */
const char *sw_job_record_label(const struct sw_job_record *r, const char *key);
const char *sw_job_record_annotation(const struct sw_job_record *r, const char *key);

/** Converts a Pod; see sw_job_record_from_json. */
int sw_pod_record_from_json(struct sw_intern *t, const cJSON *pod, struct sw_pod_record **out,
                            struct sw_error *err);
void sw_pod_record_free(struct sw_intern *t, struct sw_pod_record *r);

/** Converts a Node; see sw_job_record_from_json. */
int sw_node_record_from_json(struct sw_intern *t, const cJSON *node, struct sw_node_record **out,
                             struct sw_error *err);
void sw_node_record_free(struct sw_intern *t, struct sw_node_record *r);

/**
 * How a node shares its GPUs, as NVIDIA's device plugin and GPU feature
 * discovery advertise it: the sharing strategy and replicas per GPU
 * (labels nvidia.com/gpu.sharing-strategy, "none" when absent, and
 * nvidia.com/gpu.replicas, 1 when absent: with time-slicing, allocatable
 * nvidia.com/gpu counts replicas), and its MIG slices per profile.
 * Borrows from the record.
 */
struct sw_node_gpu_sharing {
    const char *strategy; /* "none", "time-slicing", "mps", ... */
    int64_t replicas;     /* replicas per physical GPU, >= 1 */
    size_t nmig;
    const struct sw_node_mig *mig;
};

/**
 * Reads a node record's GPU sharing. Errors name the node and the label or
 * field: a replicas label that is not a whole number from 1 to 1024, or a
 * MIG quantity that is not a whole number.
 */
int sw_node_gpu_sharing_from_record(const struct sw_node_record *r, struct sw_node_gpu_sharing *out,
                                    struct sw_error *err);

/** Capacity's facts from records (borrowing from them); errors name the field. */
int sw_pod_facts_from_record(const struct sw_pod_record *r, struct sw_pod_facts *out,
                             struct sw_error *err);
int sw_node_facts_from_record(const struct sw_node_record *r, struct sw_node_facts *out,
                              struct sw_error *err);

#endif
