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

/** The mirror's name for attempt n: "sw-" + origin UID + "-" + n (fits 63). */
void sw_mirror_name(const char *uid, int attempt, char *buf, size_t len);
/**
 * Builds the mirror of `origin` (borrowed) for the record's attempt and
 * target: returns a new object (the caller deletes it), or NULL when the
 * origin has no pod template. `s3_endpoint` (or NULL) is the target
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
                       const char *cap_value, const struct sw_hub_config *buckets);
/**
 * Puts a mirror (borrowed, changed) into the target's Kueue LocalQueue
 * `local_queue` (label kueue.x-k8s.io/queue-name), created suspended: the
 * target's Kueue starts it once admitted, with its flavour's node labels
 * and tolerations.
 */
void sw_mirror_queue(cJSON *mirror, const char *local_queue);

#endif
