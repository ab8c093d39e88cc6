/*
 * adopt.h - a record re-derived from the clusters: the pure part (adopt.c
 * in sw_hub_pure) and the hooks the hub calls (adopt_hub.c).
 *
 * Redis replication is asynchronous, so a failover can lose a record's
 * newest writes, or the whole record. The clusters still hold what was
 * done: every mirror carries labels naming its origin (cluster, namespace,
 * name, UID) and its attempt, an annotation with its placement, and the
 * hub's proof that it made the mirror (mirror.h, SW_ANN_PROOF): a Job
 * without a valid proof is never adopted. The hub indexes the mirrors it
 * sees by origin UID; a Job whose record is
 * missing, or says less than the mirror proves (an older attempt, a state
 * before dispatch, another target for the same attempt), gets its record
 * back from the mirror, in state "dispatched", and the follow step takes it
 * from there. Nothing is created: no second dispatch.
 */
#ifndef SW_CONTROLLER_HUB_ADOPT_H
#define SW_CONTROLLER_HUB_ADOPT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/hub/jobrec.h"

/** The annotation on a mirror holding its placement (JSON; mirror.c writes it). */
#define SW_ANN_PLACEMENT "spillway.io/placement"

/** A mirror Job as adoption needs it (copied out of a cache). */
struct sw_adopt_mirror {
    char cluster[64]; /* the member it is in */
    char name[64];    /* its name */
    char ns[64];      /* its namespace */
    char origin_uid[64];
    char origin_cluster[64]; /* its spillway.io/origin-cluster label */
    char origin_ns[64];      /* its spillway.io/origin-namespace label */
    int attempt;             /* its spillway.io/attempt label */
    bool deleting;           /* it has a deletionTimestamp */
    bool proven;             /* it carries this hub's proof for `cluster` (sw_mirror_proof_ok) */
    char pool[64];           /* from its placement annotation ("" when unknown) */
    char region[64];         /* the placement, else its SPILLWAY_REGION */
    char capacity[16];       /* the placement, else its capacity-type selector, else "owned" */
    char team[64];
    int gpus;
    double price_gpu_h;
    char summary[SW_REC_SUMMARY_MAX]; /* its spillway.io/decision annotation */
};

/**
 * Reads a mirror Job (borrowed) found in `cluster`. Returns 0 and fills
 * *out, or SW_ENOENT when the Job is not a mirror (no origin UID label, or
 * no valid attempt label). out->proven says whether it carries a valid
 * proof (mirror.h) under `proof_key` (borrowed) for `cluster`; only a
 * proven mirror is ever adopted.
 */
int sw_adopt_mirror_read(const cJSON *job, const char *cluster, const unsigned char *proof_key,
                         struct sw_adopt_mirror *out);

/** What to do with a record, given the mirrors of its origin. */
enum sw_adopt_action {
    SW_ADOPT_NONE = 0, /* the record already says as much as the mirrors */
    SW_ADOPT_MIRROR,   /* take the record from mirrors[*index] */
    SW_ADOPT_ATTEMPT, /* only raise the record's attempt to *floor (a mirror of it is being deleted)
                       */
};

/**
 * Decides for the record `r` (its attempt and state; a record just created
 * for a Job seen without one is "observed", attempt 0) and the `n` mirrors
 * of its origin UID. Only a mirror this hub made counts: proven (its
 * spillway.io/proof verifies for the cluster it was found in), named
 * as sw_mirror_name names the origin UID's attempt, in the origin's
 * namespace, with the origin's cluster and namespace as labels; any other
 * Job carrying spillway's labels (a copy, a forgery, a mirror of a hub
 * without proofs) is ignored. A mirror being deleted is never adopted (a
 * lost or finished attempt being cleaned up), but its attempt is a floor: a new dispatch must not
 * reuse its name. Among the others the highest attempt is adopted when the record is not terminal
 * and either names an older attempt, or the same attempt in a state before the mirror exists
 * (observed, blocked, decided, data-ready), or another target cluster.
 * Pure.
 */
enum sw_adopt_action sw_adopt_decide(const struct sw_job_rec *r, const struct sw_adopt_mirror *m,
                                     size_t n, size_t *index, int *floor);

/**
 * Rewrites `r` from the mirror: state "dispatched", its attempt, target
 * cluster, mirror name, placement; `now_ms` stands for dispatched_ms when
 * the record had none. Identity fields (key, cluster, ns, name, uid, form)
 * are kept. Pure.
 */
void sw_adopt_apply(struct sw_job_rec *r, const struct sw_adopt_mirror *m, int64_t now_ms);

/**
 * The placement annotation's value for a record (new string, the caller
 * frees it with cJSON_free), or NULL on out of memory.
 */
char *sw_adopt_placement_json(const struct sw_job_rec *r);

/* ---- the hub's hooks (adopt_hub.c) ---------------------------------------- */

struct sw_hub;
struct sw_job;

/** Indexes every member's mirrors by origin UID (called at the start of each scan). */
void sw_adopt_index(struct sw_hub *h);
/** Whether every member's cache has synced: a mirror not seen yet is not proof of none. */
bool sw_adopt_all_synced(const struct sw_hub *h);
/**
 * Whether the index (as of the last sw_adopt_index) holds a mirror of the
 * origin `origin_uid` carrying this hub's proof: a Job this hub placed
 * before, whether or not its record still exists (observe.c serves it
 * wherever its namespace went, and takes it back after Redis lost it).
 */
bool sw_adopt_proven(const char *origin_uid);
/**
 * Whether the index (as of the last sw_adopt_index) holds any mirror of the
 * origin `origin_uid`, with this hub's proof or without (another hub's, a
 * copy): observe.c leaves alone a Job with such a mirror and no record.
 */
bool sw_adopt_any(const char *origin_uid);
/**
 * For a record being created for a Job seen without one (observe.c): when
 * a mirror of its origin exists, fills the record from it. Returns true
 * when it did.
 */
bool sw_adopt_new_record(struct sw_hub *h, struct sw_job *j);
/**
 * For every persisted Job not busy: when its mirrors prove more than its
 * record says, writes the record re-derived from the mirror (under the
 * epoch, as any step). Called each tick after the scan, before decisions.
 */
void sw_adopt_round(struct sw_hub *h);

#endif
