/*
 * ready.h - what the hub's /readyz answers, decided from a few facts the
 * caller gathers. Pure: no hub, no I/O, the clock a parameter.
 *
 * A replica is ready when it can do its part, and that needs Redis: it is
 * connected to Redis, and either it leads (holds the lease, acts under it,
 * and every member's cache has synced) or it stands by (Redis answered its
 * latest campaign for the lease, within the lease's TTL, that another hub
 * holds it: it would take over). A replica that has never reached Redis is
 * not ready, so a rollout does not go on over replicas that could not
 * lead.
 */
#ifndef SW_CONTROLLER_HUB_READY_H
#define SW_CONTROLLER_HUB_READY_H

#include <stdbool.h>
#include <stdint.h>

/** What the decision reads, gathered by the caller. */
struct sw_readiness {
    bool redis_up;       /* the Redis connection is up (sw_redis_is_up) */
    bool leader;         /* this hub holds the lease */
    bool acting;         /* it holds it and acts under it (sw_hub_acting) */
    bool members_synced; /* every member's cache has synced (sw_members_synced) */
    /* Monotonic ms when Redis last answered a campaign that another hub
     * holds the lease; 0 when it has not since the last failed campaign. */
    int64_t standby_ms;
    int64_t now_ms;       /* monotonic ms, now */
    int64_t lease_ttl_ms; /* the lease's TTL (leader.leaseTTLSeconds) */
};

/**
 * Returns NULL when the replica is ready, else why not: a static string
 * for the 503's body, "not ready: ..." and a newline.
 */
const char *sw_readiness_check(const struct sw_readiness *r);

#endif
