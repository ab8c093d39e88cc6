/*
 * health.h - member cluster health from periodic /readyz probes.
 *
 * The state machine is pure (observations and times in, state out); the
 * prober runs it from a timer on the loop. States:
 *   Ready        the last `success_threshold` probes answered 200 in time
 *   Degraded     /readyz answered but not 200 (a check failing), or slowly,
 *                or fewer than `failure_threshold` probes in a row failed
 *   Unreachable  `failure_threshold` probes in a row got no answer
 * Each state carries the reason and the time it was entered.
 */
#ifndef SW_CLUSTERS_HEALTH_H
#define SW_CLUSTERS_HEALTH_H

#include <stdint.h>

#include "clusters/rest.h"

enum sw_health_state {
    SW_HEALTH_UNKNOWN = 0,
    SW_HEALTH_READY,
    SW_HEALTH_DEGRADED,
    SW_HEALTH_UNREACHABLE,
};

/** "Unknown", "Ready", "Degraded", "Unreachable". */
const char *sw_health_state_name(enum sw_health_state s);

/** Thresholds; start from sw_health_policy_default. */
struct sw_health_policy {
    int64_t interval_ms;   /* between probes: 10 s */
    int64_t timeout_ms;    /* per probe: 5 s */
    int64_t slow_ms;       /* an answer slower than this is Degraded: 2 s */
    int failure_threshold; /* failed probes in a row for Unreachable: 3 */
    int success_threshold; /* good probes in a row to return to Ready: 2 */
};

void sw_health_policy_default(struct sw_health_policy *p);

struct sw_health {
    enum sw_health_state state;
    char reason[256];
    int64_t since_ms; /* wall-clock ms when the state was entered */
    int ok_streak;
    int fail_streak;
    int64_t last_probe_ms;
    int64_t last_latency_ms;
    /* wall-clock ms of the first probe of the current run of probes that
     * got no answer or not 200 (a slow 200 is an answer); 0 after a 200 */
    int64_t bad_since_ms;
};

/**
 * Feeds one probe's outcome: `rc` (0 when an HTTP answer arrived), the
 * HTTP status, the latency and a detail (the failing checks, or the
 * transport error). Returns 1 when the state changed, else 0.
 */
int sw_health_observe(struct sw_health *h, const struct sw_health_policy *p, int64_t now_ms, int rc,
                      long status, int64_t latency_ms, const char *detail);

struct sw_health_prober;

/** Called when a cluster's state changes (h borrowed). */
typedef void (*sw_health_cb)(struct sw_health_prober *pr, const struct sw_health *h, void *ctx);

/** Starts probing through `c` (borrowed; must outlive the prober). */
int sw_health_prober_start(struct sw_kube_client *c, const struct sw_health_policy *p,
                           sw_health_cb cb, void *ctx, struct sw_health_prober **out);

/** The current health (borrowed). */
const struct sw_health *sw_health_prober_health(const struct sw_health_prober *pr);

/** Stops and frees (run the loop to finish). */
void sw_health_prober_free(struct sw_health_prober *pr);

#endif
