/*
 * kueue.h - what the hub reads of Kueue's objects (kueue.x-k8s.io/v1beta2):
 * a Workload's state and a ClusterQueue's GPU quota and usage.
 *
 * Pure: JSON in, facts out, no I/O. A Job is Kueue's when it carries the
 * label kueue.x-k8s.io/queue-name (Kueue's default, manageJobsWithoutQueueName
 * off, manages no other); its Workload carries the label
 * kueue.x-k8s.io/job-uid with the Job's UID. Fields are read as Kueue
 * v0.17 writes them; one the hub relies on that is missing or of the wrong
 * shape is an error naming the object and the field, so that a Kueue whose
 * API the hub does not know leaves the Job alone rather than guessed at.
 */
#ifndef SW_CLUSTERS_KUEUE_H
#define SW_CLUSTERS_KUEUE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/** The label that puts a Job in a LocalQueue. */
#define SW_KUEUE_QUEUE_LABEL "kueue.x-k8s.io/queue-name"
/** The label a Workload carries with its Job's UID. */
#define SW_KUEUE_JOB_UID_LABEL "kueue.x-k8s.io/job-uid"
/** The API group and version the hub reads. */
#define SW_KUEUE_API     "kueue.x-k8s.io/v1beta2"
#define SW_KUEUE_GROUP   "kueue.x-k8s.io"
#define SW_KUEUE_VERSION "v1beta2"

/** A Workload's state, as far as bursting goes. */
enum sw_workload_state {
    SW_WL_PENDING_QUOTA = 0, /* QuotaReserved=False, reason Pending: no quota now (the
                                scheduler found none, or a preemption evicted it) */
    SW_WL_PENDING_OTHER,     /* waiting for something else (inadmissible, no queue, ...) */
    SW_WL_NEW,               /* no QuotaReserved condition yet: Kueue's scheduler has not
                                reached it (the hub weighs its quota itself: queue.c) */
    SW_WL_RESERVED,          /* quota reserved, admission checks pending */
    SW_WL_ADMITTED,          /* Admitted=True: the Job may start */
    SW_WL_INACTIVE,          /* spec.active=false */
    SW_WL_FINISHED,          /* Finished=True */
    SW_WL_INADMISSIBLE       /* QuotaReserved=False, reason Inadmissible: Kueue cannot admit
                                it as queued (its LocalQueue, or that LocalQueue's
                                ClusterQueue, missing or inactive; the message says which) */
};

/** What the hub reads of one Workload. */
struct sw_workload_facts {
    char ns[64];
    char name[254];
    char job_uid[64];       /* label kueue.x-k8s.io/job-uid, "" when absent */
    char queue[64];         /* spec.queueName (the LocalQueue) */
    char cluster_queue[64]; /* status.admission.clusterQueue, "" when not reserved */
    enum sw_workload_state state;
    bool active;       /* spec.active, true when absent (Kueue's default) */
    bool owned;        /* metadata.ownerReferences not empty (its Job's, Kueue reconciles it) */
    bool evicted;      /* Evicted=True (preempted, deactivated, ...) */
    bool preempted;    /* Evicted=True with reason Preempted: requeued by a preemption */
    char reason[64];   /* the QuotaReserved condition's reason */
    char message[256]; /* and its message */
    int64_t priority;  /* spec.priority, 0 when absent */
    char created[40];  /* metadata.creationTimestamp (Kueue's queue order) */
    int64_t gpus;      /* nvidia.com/gpu over its pod sets (requests x count) */
    /* spec.maximumExecutionTimeSeconds (Kueue deactivates it after running
     * that long), 0 when absent */
    int64_t max_exec_s;
    char owner_job[254]; /* the name of its owner of kind Job, "" when none */
    /* The Evicted condition while True: its reason (ClusterQueueStopped,
     * LocalQueueStopped, Preempted, PodsReadyTimeout, ...), message and
     * lastTransitionTime (RFC 3339); "" otherwise */
    char evicted_reason[64];
    char evicted_message[256];
    char evicted_at[40];
};

/**
 * Reads a Workload. Fails (SW_EPARSE) with a message naming the Workload and
 * the field when metadata.name or namespace, spec.queueName or
 * spec.podSets is missing or of the wrong shape.
 */
int sw_workload_facts_from_json(const cJSON *wl, struct sw_workload_facts *out,
                                struct sw_error *err);

/**
 * Whether Kueue took back the Workload `f` of a Job it had started, and
 * keeps the Job suspended: Evicted=True (Kueue sets it False again when it
 * reserves quota anew) while the Workload is active and not finished, for
 * whatever reason Kueue gives (its ClusterQueue or LocalQueue stopped with
 * HoldAndDrain, a preemption, a pods-ready timeout). An inactive Workload
 * (spec.active=false), or one evicted for its deactivation (reason
 * InactiveWorkload, which stays while a reactivated Workload waits for
 * quota again), is not: that eviction is its owner's pause. Its
 * reason and message are f->evicted_reason and f->evicted_message. Pure.
 */
bool sw_workload_taken_back(const struct sw_workload_facts *f);

/** "pending-quota", "pending", "new", "reserved", "admitted", "inactive", "finished",
 *  "inadmissible". */
const char *sw_workload_state_name(enum sw_workload_state s);

/** The GPU quota of one of a ClusterQueue's flavours. */
struct sw_cq_flavor {
    char name[64];    /* the ResourceFlavor's name */
    int64_t nominal;  /* nvidia.com/gpu nominalQuota */
    int64_t borrow;   /* borrowingLimit; -1 no limit */
    int64_t lend;     /* lendingLimit; -1 all */
    int64_t reserved; /* status.flavorsReservation for this flavour */
};

/** The flavours of a ClusterQueue the hub keeps (with nvidia.com/gpu). */
#define SW_CQ_MAX_FLAVORS 8

/** What the hub reads of one ClusterQueue: GPUs only. */
struct sw_cluster_queue_facts {
    char name[64];
    char cohort[64];       /* spec.cohortName, "" when none */
    int64_t nominal_gpus;  /* nvidia.com/gpu nominalQuota over its flavours */
    int64_t borrow_gpus;   /* what it may borrow from the cohort; -1 no limit */
    int64_t lend_gpus;     /* what it lends to the cohort when unused; -1 all */
    int64_t reserved_gpus; /* status.flavorsReservation, nvidia.com/gpu */
    int64_t pending;       /* status.pendingWorkloads */
    int64_t reserving;     /* status.reservingWorkloads */
    int64_t admitted;      /* status.admittedWorkloads */
    bool held;             /* spec.stopPolicy Hold or HoldAndDrain: admits nothing new */
    /* The same per flavour that quotes nvidia.com/gpu, in the queue's
     * order (the first SW_CQ_MAX_FLAVORS; the totals above count all). */
    struct sw_cq_flavor flavors[SW_CQ_MAX_FLAVORS];
    size_t nflavors;
    bool flavors_truncated; /* more than SW_CQ_MAX_FLAVORS: not narrowed by capacity type */
};

/**
 * Reads a ClusterQueue. Fails (SW_EPARSE), naming the ClusterQueue and the
 * field, when the name or spec.resourceGroups is missing or a quantity is
 * not a whole number. Status fields that are absent read as 0.
 */
int sw_cluster_queue_facts_from_json(const cJSON *cq, struct sw_cluster_queue_facts *out,
                                     struct sw_error *err);

/**
 * GPUs a Workload queued in `cq` could still reserve: its own unused quota
 * plus what the cohort's other ClusterQueues (`peers`, borrowed) lend
 * unused, within `cq`'s borrowing limit and never more than the cohort
 * has unused (what its queues borrow is used). Never negative; 0 for a held
 * ClusterQueue (a stopPolicy set), which admits nothing new.
 */
int64_t sw_cluster_queue_headroom(const struct sw_cluster_queue_facts *cq,
                                  const struct sw_cluster_queue_facts *peers, size_t npeers);

/** What the hub reads of one ResourceFlavor: the capacity type its nodes have. */
struct sw_resource_flavor_facts {
    char name[64];
    /* "spot", "on-demand", ... from spec.nodeLabels (Karpenter's
     * karpenter.sh/capacity-type or a provider's label, read as
     * sw_capacity_type_label reads a node's); "" when its nodeLabels name
     * none: a Workload of any capacity type may be admitted to it. */
    char capacity_type[16];
};

/**
 * Reads a ResourceFlavor. Fails (SW_EPARSE), naming the flavour and the
 * field, when metadata.name is missing or spec.nodeLabels is not an object
 * of strings.
 */
int sw_resource_flavor_facts_from_json(const cJSON *rf, struct sw_resource_flavor_facts *out,
                                       struct sw_error *err);

/**
 * `in` as seen by a Workload whose pods select nodes of capacity type
 * `capacity_type` ("spot", "on-demand"): Kueue admits such a Workload
 * only to a flavour whose nodeLabels do not contradict its node selector
 * (pkg/scheduler/flavorassigner), so only the flavours whose
 * ResourceFlavor (among the `nrf` of `rf`) has no capacity type or that
 * one count; nominal, limits and reserved GPUs become theirs. A flavour
 * whose ResourceFlavor is not among `rf` counts (as before flavours were
 * read), and so does every flavour of a queue with more than
 * SW_CQ_MAX_FLAVORS. Reserved GPUs given back to the queue (its
 * reserved_gpus below the flavours' sum) come off the kept flavours only
 * beyond what the left-out ones reserve: the room is never overstated.
 * Returns whether any flavour was left out (`out` equals `in` otherwise).
 */
bool sw_cluster_queue_for_capacity(const struct sw_cluster_queue_facts *in,
                                   const char *capacity_type,
                                   const struct sw_resource_flavor_facts *rf, size_t nrf,
                                   struct sw_cluster_queue_facts *out);

/**
 * GPUs the `n` ClusterQueues `cq` (borrowed) may still reserve between
 * them: a queue in no cohort, its own headroom; a cohort, once, its
 * nominal quota less what all its queues reserved (what one borrows is
 * used), never more than its queues' headrooms add up to (lending limits,
 * held queues). Unlike the sum of every queue's headroom, a cohort's unused
 * quota, which each of its queues may borrow, is counted once.
 */
int64_t sw_cluster_queues_free(const struct sw_cluster_queue_facts *cq, size_t n);

/**
 * Whether discovery's APIGroup `group` (the body of GET /apis/NAME) lists
 * `version` among the versions it serves. Writes those versions to
 * `served` ("v1beta1, v1beta2"; "" when it lists none).
 */
bool sw_api_group_serves(const cJSON *group, const char *version, char *served, size_t len);

/**
 * Why the hub cannot read the Kueue of cluster `cluster`, once a Kueue
 * informer's list failed with HTTP status `list_status`, from the answer
 * to GET /apis/kueue.x-k8s.io (`status`, and the body `group` or NULL).
 * Returns SW_EUNSUPPORTED with the reason in `msg` when it is one the hub
 * cannot get past by retrying: no such API group (Kueue not installed), a
 * group without v1beta2 (a Kueue before v0.15), the list refused (403).
 * Returns 0 for any other failure (a transient one, retried).
 */
int sw_kueue_api_verdict(const char *cluster, long status, const cJSON *group, long list_status,
                         char *msg, size_t len);

#endif
