/*
 * mirror.h - the mirror Job of an origin Job (pure; mirror.c).
 */
#ifndef SW_CONTROLLER_HUB_MIRROR_H
#define SW_CONTROLLER_HUB_MIRROR_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/hub/config.h"
#include "controller/hub/jobrec.h"

/* The names spillway writes on Kubernetes objects. */
#define SW_MANAGED_BY      "spillway.io/hub"
#define SW_FINALIZER       "spillway.io/mirror"
#define SW_LBL_ORIGIN_CL   "spillway.io/origin-cluster"
#define SW_LBL_ORIGIN_NS   "spillway.io/origin-namespace"
#define SW_LBL_ORIGIN_NAME "spillway.io/origin-name"
#define SW_LBL_ORIGIN_UID  "spillway.io/origin-uid"
#define SW_LBL_ATTEMPT     "spillway.io/attempt"
#define SW_LBL_EPOCH       "spillway.io/epoch"
#define SW_LBL_MANAGED     "app.kubernetes.io/managed-by"
#define SW_ANN_STATE       "spillway.io/state"
#define SW_ANN_PLACED      "spillway.io/placed-in"
#define SW_ANN_MIRROR      "spillway.io/mirror"
#define SW_ANN_DECISION    "spillway.io/decision"
#define SW_ANN_COST        "spillway.io/cost"
#define SW_ANN_REASON      "spillway.io/reason"
/* On a namespace spillway created in a member: "CLUSTER/NAMESPACE", the
 * origin namespace it was made for (nsguard.c). */
#define SW_ANN_MADE_FOR "spillway.io/made-for"
/* The delegated origin's condition while its burst is blocked. */
#define SW_COND_BLOCKED "SpillwayBlocked"
#define SW_SPOT_TAINT   "spillway.io/spot"

/*
 * The hub's proof that a mirror is its own (annotation spillway.io/proof):
 * hex HMAC-SHA256, under a key derived from the sealing key
 * (sw_seal_key_derive with SW_MIRROR_PROOF_LABEL), of every field of the
 * mirror that adoption (adopt.h) and dispatch's "already created" check
 * trust. Labels and names alone prove nothing: a tenant can write them on
 * any Job in a namespace of theirs, in any member the hub watches.
 */
#define SW_ANN_PROOF            "spillway.io/proof"
#define SW_MIRROR_PROOF_LABEL   "spillway mirror proof v1"
#define SW_MIRROR_PROOF_KEY_LEN 32
/** Hex digits of a proof plus the NUL. */
#define SW_MIRROR_PROOF_HEX 65

/** What a mirror's proof binds (all borrowed, NUL-terminated). */
struct sw_mirror_proof_fields {
    const char *origin_uid;     /* label spillway.io/origin-uid */
    const char *origin_cluster; /* label spillway.io/origin-cluster */
    const char *origin_ns;      /* label spillway.io/origin-namespace */
    const char *ns;             /* the mirror's namespace */
    const char *name;           /* the mirror's name */
    int attempt;                /* label spillway.io/attempt */
    const char *target_cluster; /* the member the mirror is created in */
    const char *placement;      /* annotation spillway.io/placement, exactly */
    const char *decision;       /* annotation spillway.io/decision, exactly */
};

/**
 * Computes the proof of `f` under `key` into `out` (64 lowercase hex
 * digits and a NUL). The message is "v1\n" and then each field, in the
 * struct's order, as its length in decimal, ':', its bytes and '\n' (the
 * attempt in decimal), so no two field lists give the same message.
 * Returns 0, or SW_ECRYPTO when OpenSSL fails. Pure.
 */
int sw_mirror_proof(const unsigned char key[SW_MIRROR_PROOF_KEY_LEN],
                    const struct sw_mirror_proof_fields *f, char out[SW_MIRROR_PROOF_HEX]);

/**
 * Whether the Job `job` (borrowed), found in member `cluster`, carries a
 * proof under `key` of its own labels, name, namespace and annotations as
 * sw_mirror_build wrote them. False for a Job without a proof (made by an
 * older hub, or by anyone else), with a field missing, or with any bound
 * field changed. Compares in constant time. Pure.
 */
bool sw_mirror_proof_ok(const cJSON *job, const char *cluster,
                        const unsigned char key[SW_MIRROR_PROOF_KEY_LEN]);

/** The mirror's name for attempt n: "sw-" + origin UID + "-" + n (fits 63). */
void sw_mirror_name(const char *uid, int attempt, char *buf, size_t len);
/**
 * Builds the mirror of `origin` (borrowed) for the record's attempt and
 * target: returns a new object (the caller deletes it), or NULL when the
 * origin has no pod template. `proof_key` (borrowed, not NULL) signs the
 * mirror (SW_ANN_PROOF) for the record's target cluster. `s3_endpoint` (or NULL) is the target
 * region's store; `spot` adds the spot toleration. On cloud capacity the
 * pod template's nodeSelector gets `cap_label: cap_value`, the label the
 * target pool's nodes carry (sw_cluster_cache_capacity_label), or when
 * `cap_label` is NULL Karpenter's karpenter.sh/capacity-type: the record's
 * capacity (a NodePool that has no node yet). `buckets` (borrowed, or
 * NULL) names each bucket in the target region's store
 * (sw_hub_config_bucket): SPILLWAY_INPUTS and SPILLWAY_OUTPUTS name the
 * buckets as the mirror's region calls them.
 */
cJSON *sw_mirror_build(const cJSON *origin, const struct sw_job_rec *r, const char *mirror_name,
                       const char *s3_endpoint, int64_t epoch, bool spot, const char *cap_label,
                       const char *cap_value, const struct sw_hub_config *buckets,
                       const unsigned char proof_key[SW_MIRROR_PROOF_KEY_LEN]);
/**
 * Puts a mirror (borrowed, changed) into the target's Kueue LocalQueue
 * `local_queue` (label kueue.x-k8s.io/queue-name), created suspended: the
 * target's Kueue starts it once admitted, with its flavour's node labels
 * and tolerations.
 */
void sw_mirror_queue(cJSON *mirror, const char *local_queue);

#endif
