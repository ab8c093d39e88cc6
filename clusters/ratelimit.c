/*
 * ratelimit.c - token bucket and capped exponential backoff.
 */
#include "clusters/ratelimit.h"

#include <string.h>

#include "common/error.h"

void sw_ratelimit_init(struct sw_ratelimit *rl, double qps, int burst, int64_t now_ms)
{
    rl->qps = qps;
    rl->burst = burst > 0 ? burst : 1;
    rl->tokens = rl->burst;
    rl->last_ms = now_ms;
}

int64_t sw_ratelimit_reserve(struct sw_ratelimit *rl, int64_t now_ms)
{
    if (rl->qps <= 0)
        return 0;
    if (now_ms > rl->last_ms) {
        rl->tokens += (double)(now_ms - rl->last_ms) * rl->qps / 1000.0;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last_ms = now_ms;
    }
    rl->tokens -= 1.0;
    if (rl->tokens >= 0)
        return 0;
    /* Wait until the deficit is paid back; round up to whole ms. */
    double wait = -rl->tokens * 1000.0 / rl->qps;
    int64_t w = (int64_t)wait;
    return (double)w < wait ? w + 1 : w;
}

double sw_ratelimit_tokens(const struct sw_ratelimit *rl, int64_t now_ms)
{
    if (rl->qps <= 0)
        return rl->burst;
    double t = rl->tokens;
    if (now_ms > rl->last_ms)
        t += (double)(now_ms - rl->last_ms) * rl->qps / 1000.0;
    return t > rl->burst ? rl->burst : t;
}

int64_t sw_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, long retry_after_s,
                      double jitter)
{
    if (retry_after_s >= 0) {
        int64_t ms = (int64_t)retry_after_s * 1000;
        return ms > SW_REST_MAX_RETRY_AFTER_MS ? SW_REST_MAX_RETRY_AFTER_MS : ms;
    }
    int64_t d = base_ms;
    for (int i = 0; i < attempt && d < cap_ms; i++)
        d *= 2;
    if (d > cap_ms)
        d = cap_ms;
    if (jitter < 0)
        jitter = 0;
    if (jitter >= 1)
        jitter = 0.999999;
    return (int64_t)((double)d * (0.5 + jitter / 2));
}

int sw_should_retry(const char *method, int rc, long status)
{
    if (status == 429 || (status >= 500 && status <= 599 && status != 501))
        return 1;
    /* A certificate that does not verify (or a TLS setup the server
     * refuses) will not on a retry; client-go does not retry those either. */
    if (rc < 0 && status == 0 && rc != SW_ETLS)
        return method == NULL || strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    return 0;
}
