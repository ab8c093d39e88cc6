/*
 * runtimes.h - what the hub learns of Jobs' runtimes: the finished Jobs it
 * has seen (their features, the runtime they declared and the one they
 * took), kept in Redis and bounded, and the belief it gives the placement
 * engine about a Job still to run. The beliefs are placement/estimate.c's,
 * the code the simulator learns with; this file only keeps its history.
 * Pure: records in, observations and beliefs out (no clock, no I/O).
 */
#ifndef SW_CONTROLLER_HUB_RUNTIMES_H
#define SW_CONTROLLER_HUB_RUNTIMES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/limits.h"
#include "controller/hub/jobrec.h"
#include "placement/estimate.h"

/* Finished Jobs kept, learned from per team: a team's beliefs (every level
 * of the estimator's fallback, the annotation correction, the prior when
 * it has no history) come only from its own finished Jobs. When the
 * history is full, the entry dropped is the oldest of the team holding the
 * most (the same rule in Redis), so a team that floods it drops its own.
 * Memory: the history 248 bytes a Job (1 MB) and a team table of at most
 * SW_RUNTIMES_MAX teams (96 bytes each, 0.4 MB); estimators for at most
 * SW_RUNTIMES_TEAMS_EST teams at once (the least recently asked freed and
 * rebuilt from its team's history when asked again), each 12 KB empty
 * (64 slots of 192 bytes) and growing with its own team's feature keys: a
 * team's Jobs give at most 2 keys each (its label, its GPU count) and 6
 * more, so at most the larger of 64 and 8 x its Jobs + 44 slots. All of
 * them together at most 256 x 64 + 8 x 4,096 + 44 x 256 slots, 11.6 MB;
 * and half the largest estimator more while it grows (a rebuild frees
 * the team's old one first). Measured: 4,096 teams with a label per Job, 4.6 MB in all; one
 * team holding the whole history with a label and GPU count per Job,
 * 7.7 MB in all (6.3 MB its estimator). In Redis about 500 bytes a Job (a
 * hash entry of JSON, its place in two sorted sets), 2 MB in all. */
#define SW_RUNTIMES_MAX       4096
#define SW_RUNTIMES_TEAMS_EST 256

/** One finished Job, as the estimator learns from it. */
struct sw_runtime_obs {
    char id[64]; /* the origin Job's UID: counted once */
    char team[SW_NAME_MAX];
    char label[SW_NAME_MAX];
    enum sw_priority_class prio;
    int gpus;
    double annotated_s; /* spillway.io/expected-runtime; 0 none */
    double runtime_s;   /* what it took (> 0) */
    /* The belief it was decided with, for the belief's error (/metrics). */
    double predicted_s; /* its median */
    double sigma;
    enum sw_estimate_source source;
    int64_t finished_ms; /* wall ms: orders observations, oldest dropped first */
};

/** A team in the history: its count and its estimator (NULL: built on demand). */
struct sw_runtime_team {
    char name[SW_NAME_MAX];
    size_t n;                 /* its observations kept */
    struct sw_estimator *est; /* from its observations only; NULL: not held */
    bool stale;               /* est no longer matches (one was dropped) */
    uint64_t used;            /* when its estimator was last asked (LRU) */
};

/**
 * The history (plain struct; the caller owns it, sw_runtimes_init and
 * sw_runtimes_free): up to `cap` observations (in no order) and, per team
 * that has any, an estimator built from that team's observations only.
 */
struct sw_runtimes {
    struct sw_runtime_obs *obs; /* cap + 1 entries (one in before a drop), n used */
    size_t cap, n;
    struct sw_runtime_team *teams; /* cap + 1 entries (a team has >= 1 observation) */
    size_t nteams, nest;           /* teams; estimators held (<= max_est) */
    size_t max_est;                /* SW_RUNTIMES_TEAMS_EST */
    uint64_t tick;
    struct sw_estimator_params params;
    struct sw_estimator *empty; /* a team without history: the prior, annotations as declared */
};

/**
 * Makes an empty history of at most `cap` (>= 1) observations learning
 * with `p` (copied; NULL: the estimator's defaults). Returns 0, SW_EINVAL
 * or SW_ENOMEM.
 */
int sw_runtimes_init(struct sw_runtimes *r, size_t cap, const struct sw_estimator_params *p);
/** Frees what the history holds (it may be initialised again). */
void sw_runtimes_free(struct sw_runtimes *r);
/** Forgets every observation (a new leader loads them again). */
int sw_runtimes_clear(struct sw_runtimes *r);

/** Whether an observation of `id` is kept. */
bool sw_runtimes_has(const struct sw_runtimes *r, const char *id);

/**
 * Adds `o` (copied): 1 when added (when full, the oldest observation of
 * the team holding the most is dropped, ties to the greatest team name by
 * bytes, as in Redis; that team's estimator rebuilt at its next belief), 0 when an observation of
 * the same id is kept already (nothing changes: a Job is counted once), or SW_EINVAL for an
 * observation sw_runtime_obs_valid refuses, SW_ENOMEM.
 */
int sw_runtimes_add(struct sw_runtimes *r, const struct sw_runtime_obs *o);

/**
 * Adds `n` observations read from Redis in any order, their ids unique (a
 * hash's fields): the oldest first (by finished_ms, then id), so that when
 * more than the cap are given the latest are kept; one whose id is kept
 * already is not added (checked only when the history is not empty). `o` is sorted in place.
 * Returns the number added or SW_ENOMEM.
 */
int sw_runtimes_load(struct sw_runtimes *r, struct sw_runtime_obs *o, size_t n);

/**
 * The belief about a Job of features `f` (borrowed) declaring `annotated_s`
 * (<= 0: none), from the observations of f->team kept (sw_estimator_estimate
 * on that team's estimator; a team without any: the prior). Returns
 * 0, or SW_ENOMEM when a rebuild of the estimator failed (`out` is then
 * the prior, or the annotation with the estimator's first spread).
 */
int sw_runtimes_belief(struct sw_runtimes *r, const struct sw_job_features *f, double annotated_s,
                       struct sw_estimate *out);

/** Whether `o` holds what an observation must (the same checks as the JSON reader). */
bool sw_runtime_obs_valid(const struct sw_runtime_obs *o);

/**
 * The observation record `rec` gives when it is written now, into *out:
 * true only the first time it is written succeeded (state succeeded,
 * runtime_counted not yet set) of a run in a mirror (`mirror` set: not a
 * Job that finished at home before any burst), with the belief it was
 * decided with and a runtime it can tell: from the mirror's start (started_ms, seen running;
 * else dispatched) to its completion (mirror_completed_ms, else
 * finished_ms), positive. The caller sets runtime_counted in the same
 * write as the observation, so a record read again (a new leader, a
 * retried write) is never counted twice.
 */
bool sw_runtime_observation(const struct sw_job_rec *rec, struct sw_runtime_obs *out);

/**
 * A Job's label for learning (the estimator's finest key): its
 * metadata.generateName when it has one, else its name, without trailing
 * '-' and '.' and numbers after them ("train-llama-0042", "train-llama-3-1"
 * and generateName "train-llama-" -> "train-llama"; "resnet50" stays), cut
 * to SW_NAME_MAX - 1 bytes.
 * `generate_name` may be NULL.
 */
void sw_runtime_label(const char *name, const char *generate_name, char out[SW_NAME_MAX]);

/**
 * Whom a Job learns with and from (the features' team): its team when a
 * grant names the grant's teams (the platform chose to group those
 * namespaces), else its own namespace of its cluster, "CLUSTER/NS", which
 * no team name can equal (a team is a DNS label): an ungranted namespace
 * whose implicit team is its bare name never shares beliefs with a granted
 * team of that name, nor with a namespace of that name in another cluster.
 * Returns false (out "") when the key does not fit: such a Job learns
 * nothing and is given the prior. Pure.
 */
bool sw_runtime_learner(bool team_granted, const char *team, const char *cluster, const char *ns,
                        char out[SW_NAME_MAX]);

/**
 * |actual - predicted| / predicted of an observation (the belief's error
 * once the Job finished); -1 when it carries no prediction.
 */
double sw_runtime_obs_error(const struct sw_runtime_obs *o);

/**
 * A belief for spillctl explain (new JSON object; NULL on ENOMEM):
 *   {"source": "annotation"|"learned"|"prior", "median_seconds": M,
 *    "sigma": S, "p90_seconds": M x exp(1.2816 S), "mean_seconds":
 *    M x exp(S^2 / 2), "runs": N, "level": L (learned: 0 the finest key),
 *    "annotated_seconds": A (0 none)}
 */
cJSON *sw_runtime_belief_json(const struct sw_estimate *b, double annotated_s);

/** The observation as JSON (new; the caller deletes it), NULL on ENOMEM. */
cJSON *sw_runtime_obs_to_json(const struct sw_runtime_obs *o);

/**
 * Reads an observation (borrowed, a Redis hash value: untrusted) into *out.
 * `what` names it in errors (its hash field, the id). Every field is
 * required: id (1 to 63 bytes, equal to `what` when `what` is not NULL),
 * team and label (at most SW_NAME_MAX - 1 bytes), priority (a priority
 * class name), gpus (1 to 1,048,576), runtimeSeconds (finite, above 0, at
 * most 1e15), annotatedSeconds and predictedSeconds (0, or as
 * runtimeSeconds), sigma (0 to 4), source ("annotation", "learned" or
 * "prior"), finishedMs (0 to 9e15). *out is untouched on error.
 */
int sw_runtime_obs_from_json(const cJSON *o, const char *what, struct sw_runtime_obs *out,
                             struct sw_error *err);

#endif
