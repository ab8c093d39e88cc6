/*
 * retire.h - when a finished Job's record may end, and why a Job no record
 * follows may need none (pure; in sw_hub_pure).
 *
 * An annotation-only origin stays on its cluster, suspended, after its
 * burst: nothing in Kubernetes ever deletes it. Its record would then live
 * as long as the origin, in Redis and in the leader's memory. A record
 * ends instead once the Job is settled (outcome recorded and shown, outputs
 * home, no stale mirror) for records.retireAfterSeconds, provided the
 * origin itself carries the proof of its outcome, so that a hub that later
 * finds it without a record never bursts it again (absence is not an
 * event: the proof is on the object, not in the missing record). The
 * record is then moved to the archive (record.c) that chargeback reads.
 */
#ifndef SW_CONTROLLER_HUB_RETIRE_H
#define SW_CONTROLLER_HUB_RETIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "clusters/record.h"
#include "controller/hub/jobrec.h"

/** What to do with a settled record (sw_retire_check). */
enum sw_retire_verdict {
    SW_RETIRE_NOT_YET = 0, /* keep it: not finished long enough, or not finished */
    SW_RETIRE_SHOW,        /* due, but the origin does not prove its outcome: show it first */
    SW_RETIRE_NOW,         /* end it */
};

/**
 * Whether a Job that no record follows needs none, from the cache's compact
 * record `o` (borrowed): it has a `Complete` or `Failed` condition with
 * status True (Kubernetes never runs a finished Job again), or its
 * annotations say spillway finished it by a burst: `spillway.io/state`
 * `succeeded` or `failed` and `spillway.io/mirror` naming a mirror of this
 * Job's own UID (`sw-UID-N`), so that a copy of the Job created under a new
 * UID, annotations and all, is not taken for finished. NULL is false.
 */
bool sw_retire_origin_done(const struct sw_job_record *o);
/**
 * Whether a hub placed this Job, from the cache's compact record `o`
 * (borrowed): its `spillway.io/mirror` annotation names a mirror of its own
 * UID (`sw-UID-N`, written with spillway's finalizer when a hub dispatches
 * it). A copy of a Job created under a new UID, annotations and all, is not
 * claimed. observe.c leaves a claimed Job alone when this hub holds no
 * record of it and no mirror with its proof. NULL is false.
 */
bool sw_retire_origin_claimed(const struct sw_job_record *o);

/**
 * What to do at `now_ms` (wall) with the record `r` of a settled Job whose
 * origin the cache holds as `o` (borrowed; NULL: NOT_YET): NOT_YET unless
 * `r` is finished (succeeded or failed, finished_ms set) for `after_ms` or
 * more; then NOW when sw_retire_origin_done(o) and `o` is the record's Job
 * (same UID), else SHOW (the hub writes the outcome onto the origin again
 * and looks later).
 */
enum sw_retire_verdict sw_retire_check(const struct sw_job_rec *r, const struct sw_job_record *o,
                                       int64_t now_ms, int64_t after_ms);

#endif
