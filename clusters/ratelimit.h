/*
 * ratelimit.h - the per-cluster client-side rate limit and retry backoff.
 *
 * Pure arithmetic on times passed in, so that tests drive time by hand.
 * The token bucket is client-go's: `qps` tokens per second up to `burst`;
 * each request takes one token, and a request that finds none is delayed
 * until one accrues (reservations are honoured in order).
 */
#ifndef SW_CLUSTERS_RATELIMIT_H
#define SW_CLUSTERS_RATELIMIT_H

#include <stdint.h>

/** Defaults for each member cluster (docs/clusters.md). */
#define SW_REST_DEFAULT_QPS         50.0
#define SW_REST_DEFAULT_BURST       100
#define SW_REST_DEFAULT_RETRIES     5
#define SW_REST_DEFAULT_BACKOFF_MS  200
#define SW_REST_DEFAULT_BACKOFF_CAP 10000
#define SW_REST_MAX_RETRY_AFTER_MS  60000

struct sw_ratelimit {
    double qps;    /* <= 0 means unlimited */
    double burst;  /* bucket size */
    double tokens; /* may go negative: reserved ahead */
    int64_t last_ms;
};

/** Starts a full bucket at `now_ms`. */
void sw_ratelimit_init(struct sw_ratelimit *rl, double qps, int burst, int64_t now_ms);

/**
 * Takes a token at `now_ms` and returns how many milliseconds the caller
 * must wait before sending (0 when a token was available).
 */
int64_t sw_ratelimit_reserve(struct sw_ratelimit *rl, int64_t now_ms);

/**
 * The tokens the bucket would hold at `now_ms` (capped at `burst`; negative
 * while reservations are still being paid back), without taking one.
 * An unlimited bucket (qps <= 0) always holds `burst`.
 */
double sw_ratelimit_tokens(const struct sw_ratelimit *rl, int64_t now_ms);

/**
 * The delay before retry number `attempt` (0 for the first retry):
 * base * 2^attempt capped at `cap_ms`, scaled by a jitter factor in
 * [0.5, 1.0] from `jitter` (in [0,1)). A Retry-After of `retry_after_s`
 * seconds (>= 0) from the server takes precedence, capped at
 * SW_REST_MAX_RETRY_AFTER_MS.
 */
int64_t sw_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, long retry_after_s,
                      double jitter);

/**
 * Whether a request should be retried: 429 and 5xx always (the API server
 * sends them before acting, or for idempotent failures), transport errors
 * (rc < 0, no status) only for methods without side effects (GET, HEAD),
 * and never TLS failures (SW_ETLS: a certificate that does not verify, a
 * client certificate the server refuses), which a retry does not change.
 */
int sw_should_retry(const char *method, int rc, long status);

#endif
