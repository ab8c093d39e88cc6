/*
 * health.c - the health state machine and its /readyz prober.
 */
#include "clusters/health.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"

const char *sw_health_state_name(enum sw_health_state s)
{
    switch (s) {
    case SW_HEALTH_READY:
        return "Ready";
    case SW_HEALTH_DEGRADED:
        return "Degraded";
    case SW_HEALTH_UNREACHABLE:
        return "Unreachable";
    default:
        return "Unknown";
    }
}

void sw_health_policy_default(struct sw_health_policy *p)
{
    p->interval_ms = 10000;
    p->timeout_ms = 5000;
    p->slow_ms = 2000;
    p->failure_threshold = 3;
    p->success_threshold = 2;
}

static int enter(struct sw_health *h, enum sw_health_state s, int64_t now_ms, const char *reason)
{
    int changed = h->state != s;
    if (changed)
        h->since_ms = now_ms;
    h->state = s;
    snprintf(h->reason, sizeof(h->reason), "%s", reason);
    return changed;
}

int sw_health_observe(struct sw_health *h, const struct sw_health_policy *p, int64_t now_ms, int rc,
                      long status, int64_t latency_ms, const char *detail)
{
    char why[256];
    h->last_probe_ms = now_ms;
    h->last_latency_ms = latency_ms;
    if (rc != 0 || status != 200) {
        if (h->bad_since_ms == 0)
            h->bad_since_ms = now_ms;
    } else {
        h->bad_since_ms = 0; /* answered 200, even slowly */
    }
    if (rc != 0 || status == 0) {
        h->ok_streak = 0;
        h->fail_streak++;
        if (h->fail_streak >= p->failure_threshold) {
            snprintf(why, sizeof(why), "%d probes in a row failed: %.200s", h->fail_streak,
                     detail ? detail : "no answer");
            return enter(h, SW_HEALTH_UNREACHABLE, now_ms, why);
        }
        if (h->state == SW_HEALTH_UNREACHABLE)
            return 0; /* stays down until enough good probes */
        snprintf(why, sizeof(why), "probe failed (%d of %d before Unreachable): %.180s",
                 h->fail_streak, p->failure_threshold, detail ? detail : "no answer");
        return enter(h, SW_HEALTH_DEGRADED, now_ms, why);
    }
    h->fail_streak = 0;
    if (status != 200) {
        h->ok_streak = 0;
        snprintf(why, sizeof(why), "/readyz answered %ld: %.200s", status,
                 detail && detail[0] ? detail : "not ready");
        return enter(h, SW_HEALTH_DEGRADED, now_ms, why);
    }
    if (latency_ms > p->slow_ms) {
        h->ok_streak = 0;
        snprintf(why, sizeof(why), "/readyz took %lld ms (limit %lld ms)", (long long)latency_ms,
                 (long long)p->slow_ms);
        return enter(h, SW_HEALTH_DEGRADED, now_ms, why);
    }
    h->ok_streak++;
    if (h->state == SW_HEALTH_UNKNOWN || h->ok_streak >= p->success_threshold)
        return enter(h, SW_HEALTH_READY, now_ms, "/readyz ok");
    return 0;
}

/* ---- prober ------------------------------------------------------------- */

struct sw_health_prober {
    struct sw_kube_client *c;
    struct sw_health_policy p;
    struct sw_health h;
    sw_health_cb cb;
    void *ctx;
    uv_timer_t timer;
    int64_t started_ms;
    int in_flight;
    int stopping;
    int timer_closed;
};

static void maybe_free(struct sw_health_prober *pr)
{
    if (pr->stopping && pr->timer_closed && !pr->in_flight)
        sw_free(pr);
}

/* Keeps the "[-]check failed" lines of a verbose /readyz answer. */
static void failing_checks(const char *body, size_t len, char *out, size_t outlen)
{
    size_t o = 0;
    out[0] = '\0';
    const char *p = body, *end = body + len;
    while (p < end && o + 2 < outlen) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (l > 3 && strncmp(p, "[-]", 3) == 0) {
            int n = snprintf(out + o, outlen - o, "%s%.*s", o ? "; " : "", (int)(l - 3), p + 3);
            if (n < 0)
                break;
            o += (size_t)n < outlen - o ? (size_t)n : outlen - o - 1;
        }
        p += l + 1;
    }
}

static void probe(uv_timer_t *t);

static void on_probe(struct sw_kube_result *res, void *ctx)
{
    struct sw_health_prober *pr = ctx;
    pr->in_flight = 0;
    if (pr->stopping) {
        maybe_free(pr);
        return;
    }
    const struct sw_clock *clk = sw_clock_system();
    int64_t latency = sw_mono_ms(clk) - pr->started_ms;
    char detail[200] = "";
    int transport = res->status == 0 ? (res->rc ? res->rc : SW_ENET) : 0;
    if (transport)
        snprintf(detail, sizeof(detail), "%.199s", res->err.msg);
    else if (res->status != 200)
        failing_checks(res->raw ? res->raw : "", res->raw_len, detail, sizeof(detail));
    if (sw_health_observe(&pr->h, &pr->p, sw_now_ms(clk), transport, res->status, latency,
                          detail)) {
        SW_LOG(SW_LOG_INFO, "cluster health changed", "cluster=%s state=%s reason=%s",
               sw_log_q(sw_kube_client_name(pr->c)), sw_health_state_name(pr->h.state),
               sw_log_q(pr->h.reason));
        if (pr->cb)
            pr->cb(pr, &pr->h, pr->ctx);
    }
    uv_timer_start(&pr->timer, probe, (uint64_t)pr->p.interval_ms, 0);
}

static void probe(uv_timer_t *t)
{
    struct sw_health_prober *pr = t->data;
    struct sw_kube_req r = {.method = "GET",
                            .path = "/readyz?verbose",
                            .no_retry = 1,
                            .raw = 1,
                            .timeout_ms = (long)pr->p.timeout_ms};
    pr->started_ms = sw_mono_ms(sw_clock_system());
    if (sw_kube_send(pr->c, &r, on_probe, pr, NULL) == 0)
        pr->in_flight = 1;
    else
        uv_timer_start(&pr->timer, probe, (uint64_t)pr->p.interval_ms, 0);
}

int sw_health_prober_start(struct sw_kube_client *c, const struct sw_health_policy *p,
                           sw_health_cb cb, void *ctx, struct sw_health_prober **out)
{
    struct sw_health_prober *pr = sw_calloc(1, sizeof(*pr));
    if (pr == NULL)
        return SW_ENOMEM;
    pr->c = c;
    if (p != NULL)
        pr->p = *p;
    else
        sw_health_policy_default(&pr->p);
    pr->cb = cb;
    pr->ctx = ctx;
    pr->h.since_ms = sw_now_ms(sw_clock_system());
    snprintf(pr->h.reason, sizeof(pr->h.reason), "not probed yet");
    uv_timer_init(sw__kube_client_loop(c), &pr->timer);
    pr->timer.data = pr;
    uv_timer_start(&pr->timer, probe, 0, 0);
    *out = pr;
    return 0;
}

const struct sw_health *sw_health_prober_health(const struct sw_health_prober *pr)
{
    return &pr->h;
}

static void on_timer_closed(uv_handle_t *h)
{
    struct sw_health_prober *pr = h->data;
    pr->timer_closed = 1;
    maybe_free(pr);
}

void sw_health_prober_free(struct sw_health_prober *pr)
{
    if (pr == NULL || pr->stopping)
        return;
    pr->stopping = 1;
    uv_timer_stop(&pr->timer);
    uv_close((uv_handle_t *)&pr->timer, on_timer_closed);
}
