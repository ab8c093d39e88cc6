/*
 * localq.c - the local-queue forecast: each owned pool's FIFO queue as a
 * min-heap of GPU releases, answering "when could N GPUs start".
 */
#include "placement/engine_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void sw__lq_push(struct lq *q, struct release r)
{
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (q->h[parent].t <= r.t)
            break;
        q->h[i] = q->h[parent];
        i = parent;
    }
    q->h[i] = r;
}

static struct release heap_pop(struct lq *q)
{
    struct release top = q->h[0];
    struct release last = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && q->h[c + 1].t < q->h[c].t)
            c++;
        if (last.t <= q->h[c].t)
            break;
        q->h[i] = q->h[c];
        i = c;
    }
    if (q->n > 0)
        q->h[i] = last;
    return top;
}

/* When `gpus` GPUs could start on queue `q` without taking them: the time
 * of the release that first brings the free GPUs to `gpus`. Walks the heap
 * best first (a small heap of the frontier's nodes) instead of popping and
 * pushing back, so a peek costs O(k log k) for the k releases it needs,
 * not O(k log n). Ties in time give the same answer in any order. */
static double lq_peek(struct sw_engine *e, const struct lq *q, int gpus, double now)
{
    int free = q->free;
    double t = q->cursor > now ? q->cursor : now;
    if (free >= gpus)
        return t;
    struct peek_node *f = e->peek;
    size_t nf = 0;
    if (q->n > 0)
        f[nf++] = (struct peek_node){q->h[0].t, 0};
    while (free < gpus) {
        if (nf == 0)
            return INFINITY;
        struct peek_node top = f[0];
        /* Pop the frontier's minimum. */
        struct peek_node last = f[--nf];
        size_t i = 0;
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= nf)
                break;
            if (c + 1 < nf && f[c + 1].t < f[c].t)
                c++;
            if (last.t <= f[c].t)
                break;
            f[i] = f[c];
            i = c;
        }
        if (nf > 0)
            f[i] = last;
        free += q->h[top.i].gpus;
        if (top.t > t)
            t = top.t;
        /* The node's children join the frontier. */
        for (size_t c = 2 * top.i + 1; c <= 2 * top.i + 2 && c < q->n; c++) {
            struct peek_node node = {q->h[c].t, c};
            size_t j = nf++;
            while (j > 0) {
                size_t parent = (j - 1) / 2;
                if (f[parent].t <= node.t)
                    break;
                f[j] = f[parent];
                j = parent;
            }
            f[j] = node;
        }
    }
    return t;
}

/* Whether a Job of `gpus` holding them `bf_hold` seconds may start now on
 * idle GPUs ahead of the queue: some Job queued (before that, the queue's
 * own answer is now whenever the GPUs are idle), they are idle now, and
 * the Job gives them back by the first queued Job's start, which counted
 * them; so no queued Job starts later, as forecast. */
static bool lq_backfill(const struct lq *q, int gpus, double now, double bf_hold)
{
    return bf_hold >= 0 && isfinite(q->head) && gpus <= q->idle && now + bf_hold <= q->head;
}

/* When `gpus` GPUs could start on queue `q`, at the earliest `now`.
 * With `commit`, the Job is queued and holds the GPUs until `start + hold`. */
double sw__lq_start(struct sw_engine *e, struct lq *q, int gpus, double now, bool commit,
                    double hold, double bf_hold)
{
    if (lq_backfill(q, gpus, now, bf_hold)) {
        /* The GPUs are the queue's again before its head starts: its
         * releases and cursor stay as they are. */
        if (commit)
            q->idle -= gpus;
        return now;
    }
    if (!commit) {
        if (gpus < PEEK_CACHE && q->cache_v[gpus] == q->version)
            return q->cache_t[gpus];
        double t = lq_peek(e, q, gpus, now);
        if (gpus < PEEK_CACHE) {
            q->cache_v[gpus] = q->version;
            q->cache_t[gpus] = t;
        }
        return t;
    }
    int free = q->free;
    double t = q->cursor > now ? q->cursor : now;
    size_t popped = 0;
    while (free < gpus) {
        if (q->n == 0) {
            t = INFINITY;
            break;
        }
        struct release r = heap_pop(q);
        e->scratch[popped++] = r;
        free += r.gpus;
        if (r.t > t)
            t = r.t;
    }
    if (!isfinite(t)) {
        for (size_t i = 0; i < popped; i++)
            sw__lq_push(q, e->scratch[i]);
        return t;
    }
    q->version++;
    if (t <= now)
        q->idle = free - gpus; /* none queued yet: what is idle now is free */
    else if (!isfinite(q->head))
        q->head = t;
    q->cursor = t;
    q->free = free - gpus;
    sw__lq_push(q, (struct release){t + hold, gpus, -1});
    return t;
}
