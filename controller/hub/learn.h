/*
 * learn.h - what the hub learns of a cloud pool from what it saw, and the
 * priors it uses until then. Pure: counts in, figures out.
 */
#ifndef SW_CONTROLLER_HUB_LEARN_H
#define SW_CONTROLLER_HUB_LEARN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* Priors: what the hub assumes until it has seen better (docs/hub.md). */
#define SW_PRIOR_PROVISION_S     60.0   /* a cloud node added */
#define SW_PRIOR_SPOT_INTERRUPT  0.1    /* spot interruptions per hour of running */
#define SW_PRIOR_INTERRUPT_HOURS 10.0   /* the hours of running that prior weighs as */
#define SW_PRIOR_HOME_REMAINING  1800.0 /* a GPU pod at home whose Job declares no runtime */
/* The spread (sigma of log runtime) of a runtime a Job declares, as the
 * engine's estimator has it before any annotated run has finished
 * (placement/estimate.h's default). */
#define SW_DECLARED_RUNTIME_SIGMA 0.5

/**
 * The expected remaining time of a Job running at home, for the home
 * queue's forecast: with its declared runtime `declared_s` (> 0, the
 * `spillway.io/expected-runtime` annotation) and its start `start_ms` (wall
 * ms, > 0), E[T - a | T > a] for a log-normal T of median `declared_s` and
 * spread SW_DECLARED_RUNTIME_SIGMA, a the time it has run at `now_ms`
 * (placement's sw_estimate_remaining: a Job past its declared runtime is
 * still expected to take a while, not to end at once); else (no runtime
 * or no start) SW_PRIOR_HOME_REMAINING.
 */
double sw_learn_home_remaining(double declared_s, int64_t start_ms, int64_t now_ms);
/**
 * `remaining_s` of a Job running since `start_ms` that can run at most
 * `max_s` in all (Kueue's maximumExecutionTimeSeconds: its Workload is
 * deactivated then, its pods stopped): never more than what is left of
 * `max_s` at `now_ms` (0 once past it). `max_s` <= 0 or no start: as is.
 */
double sw_learn_capped_remaining(double remaining_s, double max_s, int64_t start_ms,
                                 int64_t now_ms);
/**
 * The runtime to expect of a Job waiting in a queue: the runtime it
 * declares (`declared_s` > 0), else `prior_s`; never more than the most
 * its Workload may run (`max_s` > 0).
 */
double sw_learn_queued_runtime(double declared_s, double max_s, double prior_s);
#define SW_PRIOR_SHORTAGE_S 1800.0 /* a spot shortage's length until one was seen end */
/* Pods waiting for a NodePool with room under its limit and no NodeClaim
 * made for them this long: Karpenter cannot launch there (short). */
#define SW_SHORTAGE_GRACE_S 30.0
/* The least capacity wait given while a pool is short (> 0 means short). */
#define SW_SHORTAGE_MIN_WAIT_S 5.0
/* Shortage durations kept per NodePool (the latest), and the points of the
 * wait's distribution given to the engine (placement's SW_WAIT_POINTS). */
#define SW_LEARN_SHORTAGES   32
#define SW_LEARN_WAIT_POINTS 8

/**
 * The provisioning delay to give the engine: the mean of the `n` delays seen
 * (their sum `sum_s`, seconds), or the prior when none was seen.
 */
double sw_learn_provision_s(uint64_t n, double sum_s);

/**
 * A spot pool's interruption rate per hour of running: (interruptions +
 * prior x H) / (hours + H), H = SW_PRIOR_INTERRUPT_HOURS, so the prior
 * rules while little was seen and what was seen takes over as hours add up.
 */
double sw_learn_interrupt_rate(uint64_t interruptions, double hours);

/**
 * What the hub has seen of one NodePool: the counts its figures are learned
 * from. The leader keeps it in Redis (spillway:learned, one JSON per
 * "cluster/nodepool"), so that a new leader starts from it, not the prior.
 */
struct sw_learned {
    uint64_t provisions;     /* NodeClaims seen from created to Initialized */
    double provision_sum_s;  /* their delays added up */
    double provision_last_s; /* the latest one */
    int64_t last_ready_ms;   /* the latest Initialized time counted (wall ms; 0 none) */
    uint64_t interruptions;  /* mirrors lost here (a NodeClaim or node gone under them) */
    double run_hours;        /* hours mirrors ran here, to the end of each */
    /* Spot capacity shortages: from the first launch that failed for lack of
     * capacity (or pods left waiting with no NodeClaim made for them) to the
     * first NodeClaim launched after it. */
    uint64_t shortages;                    /* shortages seen end */
    double shortage_sum_s;                 /* their durations added up */
    double shortage_s[SW_LEARN_SHORTAGES]; /* the latest durations, oldest first */
    int nshortage_s;
    int64_t short_since_ms; /* the shortage going on began then (wall ms); 0 none */
};

/**
 * A shortage begins at `at_ms` (wall ms): kept if one is going on already
 * (its start stays the first failure). Returns whether it began now.
 */
bool sw_learn_shortage_begin(struct sw_learned *l, int64_t at_ms);

/**
 * The shortage going on ends at `at_ms` (a NodeClaim launched): its
 * duration is counted and kept (the oldest of SW_LEARN_SHORTAGES dropped).
 * Returns the duration in seconds, or -1 when none was going on or it
 * began after `at_ms` (nothing changes then).
 */
double sw_learn_shortage_end(struct sw_learned *l, int64_t at_ms);

/**
 * The capacity wait to give the engine at `now_ms` (seconds; 0 when no
 * shortage is going on): how much longer the shortage is expected to last
 * given that it has lasted e = now - short_since seconds, as the simulator
 * weighs an availability trace's outages (placement/sim.c):
 *
 *   - the kept durations longer than e: the mean of what they lasted past
 *     e; `points` gets up to SW_LEARN_WAIT_POINTS of those residuals,
 *     ascending, equally likely (quantiles when there are more), *npoints
 *     their number;
 *   - none kept at all: the prior, SW_PRIOR_SHORTAGE_S, or e when it has
 *     lasted longer (as long again); no points;
 *   - durations kept, none as long as e: e (as long again); no points.
 *
 * Never below SW_SHORTAGE_MIN_WAIT_S while short. `points` may be NULL.
 */
double sw_learn_capacity_wait(const struct sw_learned *l, int64_t now_ms, double *points,
                              int *npoints);

/* A capacity controller (Karpenter) whose leader-election Lease the hub has
 * seen no renewal of for its lease duration and this much more does not
 * answer: its pools cannot grow until a renewal is seen again. A process
 * restarted at once takes a Lease its predecessor did not release after a
 * lease duration from its own first look, plus its start and one retry
 * (2 s, with jitter): 17-19 s on the lab with 15 s leases, which this
 * grace keeps from reading as down. */
#define SW_CTL_GRACE_S 15.0
/* The lease duration assumed when a Lease gives none (controller-runtime's). */
#define SW_CTL_LEASE_S 15.0
/* The longest lease duration taken from a Lease (a member's answer is
 * input: a huge one must not hide a controller that is down). */
#define SW_CTL_LEASE_MAX_S 300.0

/**
 * What the hub has seen of a capacity controller's leader-election Lease.
 * Times are the hub's own monotonic clock (when it saw a change), never the
 * Lease's, so neither a member's clock nor a step of the hub's wall clock
 * matters.
 */
struct sw_ctl_seen {
    bool seen;             /* a Lease was seen once */
    char renew[48];        /* its renewTime as last seen */
    double lease_s;        /* its leaseDurationSeconds as last seen */
    int64_t renewed_ms;    /* when a renewal by a holder was last seen (or the Lease first seen);
                              moved on by the time the hub could not see (not trusted) */
    int64_t down_since_ms; /* when the hub took it as down; 0: it answers, or is not known */
    int64_t looked_ms;     /* the last observation, 0 none */
    bool confirmed;        /* a read of the Lease itself found the silence (sw_learn_ctl_confirm) */
};

/* sw_learn_ctl_observe: silent long enough, but not confirmed by a read of
 * the Lease itself yet. */
#define SW_CTL_CONFIRM 2

/**
 * The Lease as seen at `now_ms` (`present` false: none cached; else its
 * renewTime, holderIdentity ("" when released) and leaseDurationSeconds,
 * <= 0 for SW_CTL_LEASE_S, capped at SW_CTL_LEASE_MAX_S). A renewTime that changed with a holder is
 * a renewal; the first sight counts as one (the hub gives a controller it has just met a lease
 * duration). The controller is down once no renewal has been seen for lease_s + SW_CTL_GRACE_S (a
 * Lease released and not taken again, one deleted, one whose holder stopped renewing), and answers
 * again at the next renewal seen. A controller never seen is not known: never down. Silence is
 * counted only while `trusted` (the Lease's watch open, its member reachable): the time the hub
 * could not see moves the last renewal on, and a renewal seen counts even then. Once silent long
 * enough it is down only after a read of the Lease confirmed it (sw_learn_ctl_confirm). Returns 1
 * when it went down now, -1 when it came back now, SW_CTL_CONFIRM when silent long enough but not
 * confirmed (read the Lease), 0 otherwise.
 */
int sw_learn_ctl_observe(struct sw_ctl_seen *s, bool present, const char *renew, const char *holder,
                         double lease_s, int64_t now_ms, bool trusted);

/**
 * The answer of one read of the Lease itself (`ok` false: no answer; else
 * `present` false: none): a renewTime changed with a holder is a renewal
 * seen now (the watch was behind); the same, or no Lease, confirms the
 * silence. No answer confirms nothing.
 */
void sw_learn_ctl_confirm(struct sw_ctl_seen *s, bool ok, bool present, const char *renew,
                          const char *holder, int64_t now_ms);

/** How long no renewal has been seen, at `now_ms` (seconds; 0 never seen). */
double sw_learn_ctl_silent_s(const struct sw_ctl_seen *s, int64_t now_ms);

/** The learned figures as JSON (new; the caller deletes it), NULL on ENOMEM. */
cJSON *sw_learned_to_json(const struct sw_learned *l);

/**
 * Reads learned figures (borrowed) into *out. `what` names them in errors
 * (the Redis hash field); every field is required, counts and hours are
 * non-negative, except the shortage fields (shortages, shortageSumSeconds,
 * shortageSeconds, shortSinceMs), which entries written before them lack:
 * absent, they read as none seen. *out is untouched on error.
 */
int sw_learned_from_json(const cJSON *o, const char *what, struct sw_learned *out,
                         struct sw_error *err);

/**
 * What a pool's provisioning delay and interruption rate rest on, for
 * `spillctl explain` (new JSON object; NULL on ENOMEM):
 *
 *   {"source": "nodes"|"nodepool", "nodePool": NAME (nodepool only),
 *    "provisionSeconds": S, "provisionFrom": "learned"|"prior"|"none",
 *    "provisionsSeen": N,
 *    "interruptPerHour": R, "interruptFrom": "learned"|"prior"|"none",
 *    "interruptionsSeen": K, "runHoursSeen": H,
 *    "capacityWaitSeconds": W, "capacityWaitFrom": "learned"|"prior"|"none",
 *    "shortForSeconds": E, "shortagesSeen": S}
 *
 * `seen` is NULL for a pool on fixed nodes (its figures are the priors);
 * "none" is a figure that does not apply (an owned pool adds no node, an
 * on-demand pool is not interrupted). An interruption rate is "learned"
 * once anything ran or was interrupted there: it is then what was seen
 * weighed with the prior (sw_learn_interrupt_rate). The capacity wait W
 * is what the engine was given (0 and "none" while the pool is not short;
 * "learned" when shortages were seen end there, else "prior"), E how long
 * the shortage going on had lasted at `now_ms`.
 */
cJSON *sw_learn_basis_json(const char *nodepool, const struct sw_learned *seen, double provision_s,
                           double interrupt_per_h, double capacity_wait_s, int64_t now_ms);

#endif
