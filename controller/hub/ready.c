/*
 * ready.c - /readyz's decision (ready.h).
 */
#include <stddef.h>

#include "controller/hub/ready.h"

const char *sw_readiness_check(const struct sw_readiness *r)
{
    if (!r->redis_up)
        return "not ready: Redis not connected\n";
    if (r->leader) {
        /* Not acting: the records are being read, or the lease was not
         * renewed in time (the hub exits at its next look). */
        if (!r->acting)
            return "not ready: leading, not acting yet (reading the records)\n";
        if (!r->members_synced)
            return "not ready: leading, member caches syncing\n";
        return NULL;
    }
    /* Standing by: Redis said, within the lease's TTL, that another hub
     * holds the lease. Campaigns run every TTL/3, so a working standby
     * always has a recent answer. */
    if (r->standby_ms <= 0 || r->now_ms - r->standby_ms > r->lease_ttl_ms)
        return "not ready: no recent answer from Redis to the campaign for the lease\n";
    return NULL;
}
