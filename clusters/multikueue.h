/*
 * multikueue.h - what the hub reads of Kueue's MultiKueue objects
 * (kueue.x-k8s.io/v1beta2) to act as MultiKueue's external dispatcher
 * (docs/kueue.md, "spillway as MultiKueue's dispatcher").
 *
 * Pure: JSON in, facts out, no I/O. A manager's Workload waits for its
 * dispatcher when Kueue has reserved quota for it in the manager's
 * ClusterQueue, its MultiKueue admission check is Pending and no worker has
 * it yet (status.clusterName unset): Kueue's MultiKueue then creates a copy
 * of it in every worker named in status.nominatedClusterNames, and the
 * first worker to admit its copy wins (Kueue v0.17,
 * pkg/controller/admissionchecks/multikueue/workload.go, reconcileGroup and
 * nominateAndSynchronizeWorkers).
 */
#ifndef SW_CLUSTERS_MULTIKUEUE_H
#define SW_CLUSTERS_MULTIKUEUE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "clusters/kueue.h"
#include "common/error.h"

/**
 * The dispatcher name the docs and the lab give spillway in Kueue's
 * multiKueue.dispatcherName. Kueue treats any name other than its two
 * built-in ones as an external dispatcher; the hub does not read Kueue's
 * configuration, so this is a convention, logged when the dispatcher starts.
 */
#define SW_MK_DISPATCHER_NAME "spillway.io/dispatcher"
/** The AdmissionCheck controller name of MultiKueue. */
#define SW_MK_CONTROLLER "kueue.x-k8s.io/multikueue"
/** Kueue's bound on nominatedClusterNames and on a MultiKueueConfig's clusters. */
#define SW_MK_MAX_CLUSTERS 20
/** A MultiKueueCluster's name as the hub keeps it (Kubernetes names: 253). */
#define SW_MK_NAME_MAX 254
/** Admission checks read per Workload. */
#define SW_MK_MAX_CHECKS 16

/** One entry of a Workload's status.admissionChecks. */
struct sw_mk_check_state {
    char name[64];
    char state[16]; /* Pending, Ready, Retry, Rejected */
};

/** What the hub reads of a Workload on a MultiKueue manager or worker. */
struct sw_mk_workload {
    struct sw_workload_facts f; /* name, queue, GPUs, state ... (kueue.h) */
    char uid[64];
    char rv[32];
    bool reserved;                     /* QuotaReserved=True */
    char cluster_name[SW_MK_NAME_MAX]; /* status.clusterName, "" when unset */
    char nominated[SW_MK_MAX_CLUSTERS][SW_MK_NAME_MAX];
    size_t nnominated;
    bool nominated_set; /* status.nominatedClusterNames present, even as [] */
    struct sw_mk_check_state checks[SW_MK_MAX_CHECKS];
    size_t nchecks;
    int pods;             /* the pods of its first pod set asking GPUs (or its first) */
    int64_t gpus_per_pod; /* nvidia.com/gpu each of them asks */
};

/**
 * Reads a Workload. Fails (SW_EPARSE) naming the Workload and the field
 * for what sw_workload_facts_from_json refuses, a status.nominatedClusterNames
 * or status.admissionChecks that is not an array of the expected shape, or
 * more entries than Kueue allows.
 */
int sw_mk_workload_from_json(const cJSON *wl, struct sw_mk_workload *out, struct sw_error *err);

/**
 * Whether `wl` waits for its dispatcher under the MultiKueue admission check
 * named `check`: quota reserved, active, not finished, the check Pending,
 * status.clusterName unset.
 */
bool sw_mk_waits_for_dispatch(const struct sw_mk_workload *wl, const char *check);

/**
 * Whether a worker's copy of a Workload has won it, as Kueue v0.17 judges:
 * Admitted (or already Finished). With the MultiKueueWaitForWorkloadAdmitted
 * gate (beta, on by default since 0.16) Kueue picks the worker whose copy is
 * Admitted, not merely QuotaReserved (reconcileGroup, step 6); until then it
 * keeps synchronizing the nominated workers, so a nomination given up when a
 * copy had only reserved quota would have Kueue delete that copy. `copy`
 * borrowed.
 */
bool sw_mk_copy_won(const struct sw_workload_facts *copy);

/**
 * Whether `wl` is as the dispatcher's hand-over left it: status.clusterName
 * set and status.nominatedClusterNames an empty list. Kueue itself never
 * leaves an empty list (it clears the field), so this is the dispatcher's
 * own mark that it still owns both fields (docs/kueue.md, "How it is
 * written").
 */
bool sw_mk_handed_over(const struct sw_mk_workload *wl);

/** The state of the check named `check` on `wl` ("" when it has none). */
const char *sw_mk_check_state(const struct sw_mk_workload *wl, const char *check);

/** An AdmissionCheck: whether it is MultiKueue's and the MultiKueueConfig it names. */
struct sw_mk_admission_check {
    char name[64];
    bool multikueue;             /* spec.controllerName is SW_MK_CONTROLLER */
    char config[SW_MK_NAME_MAX]; /* spec.parameters.name when kind MultiKueueConfig */
};

/** Reads an AdmissionCheck. SW_EPARSE naming it when metadata.name is missing. */
int sw_mk_admission_check_from_json(const cJSON *ac, struct sw_mk_admission_check *out,
                                    struct sw_error *err);

/** A MultiKueueConfig: the MultiKueueClusters a check sends Workloads to. */
struct sw_mk_config {
    char name[SW_MK_NAME_MAX];
    char clusters[SW_MK_MAX_CLUSTERS][SW_MK_NAME_MAX];
    size_t nclusters;
};

/**
 * Reads a MultiKueueConfig. SW_EPARSE naming it and the field when the name
 * or spec.clusters is missing, not an array of strings, or too long.
 */
int sw_mk_config_from_json(const cJSON *cfg, struct sw_mk_config *out, struct sw_error *err);

#endif
