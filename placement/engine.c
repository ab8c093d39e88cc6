/*
 * engine.c - the placement engine: evaluates every pool for every pending
 * workload, highest priority first, and lets the policy choose.
 *
 * The work per decision is kept small enough to decide 10,000 workloads
 * over 100 pools in a few milliseconds: names are interned once per call
 * into small integers (clusters, regions, products, teams), the quota of
 * every team on every pool is a table lookup, and the local queue of every
 * owned pool is a min-heap of GPU releases that answers "when could N GPUs
 * start" by popping at most N entries.
 */
#include "placement/engine.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "placement/quota.h"
#include "placement/runtime.h"

/* ---- Policies --------------------------------------------------------- */

static const char *const policy_names[SW_POLICY__COUNT] = {
    "cost-aware", "local-only", "burst-now", "const-wait", "starburst", "spot-only", "greedy",
};

const char *sw_policy_name(enum sw_policy_kind kind)
{
    return (unsigned)kind < SW_POLICY__COUNT ? policy_names[kind] : "unknown";
}

void sw_policy_default(enum sw_policy_kind kind, struct sw_policy *p)
{
    p->kind = kind;
    /* A GPU-hour of delay is valued at a few times the on-demand price: the
     * platform would rather pay for cloud GPUs than make people wait long,
     * but not for a wait that is short next to the run. */
    p->delay_value_gpu_h = 16.0;
    p->wait_s = 3600.0;
    /* Starburst (ATC'24) lets a job wait in proportion to its size. */
    p->starburst_k = 0.25;
}

int sw_policy_parse(const char *s, struct sw_policy *p, struct sw_error *err)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);
    for (int k = 0; k < SW_POLICY__COUNT; k++) {
        if (strlen(policy_names[k]) != n || strncmp(s, policy_names[k], n) != 0)
            continue;
        sw_policy_default((enum sw_policy_kind)k, p);
        if (colon == NULL)
            return 0;
        char *end;
        double v = strtod(colon + 1, &end);
        if (end == colon + 1 || *end != '\0' || !isfinite(v) || v < 0)
            return sw_error_set(err, SW_EINVAL,
                                "policy \"%s\": parameter \"%s\": expected a non-negative number",
                                policy_names[k], colon + 1);
        switch (p->kind) {
        case SW_POLICY_COST_AWARE:
            p->delay_value_gpu_h = v;
            return 0;
        case SW_POLICY_CONST_WAIT:
            p->wait_s = v;
            return 0;
        case SW_POLICY_STARBURST:
            p->starburst_k = v;
            return 0;
        default:
            return sw_error_set(err, SW_EINVAL, "policy \"%s\" takes no parameter",
                                policy_names[k]);
        }
    }
    return sw_error_set(err, SW_EINVAL,
                        "unknown policy \"%.*s\" (expected cost-aware, local-only, burst-now, "
                        "const-wait, starburst, spot-only or greedy)",
                        (int)n, s);
}

/* ---- Texts ------------------------------------------------------------ */

static const char *const ex_text[SW_EX__COUNT] = {
    "eligible",
    "GPU product not accepted",
    "GPU memory below the minimum",
    "required interconnect missing",
    "burst mode is never",
    "production never goes to spot",
    "price above the workload's maximum",
    "needs more GPUs than the pool can ever have",
    "no free or autoscalable GPUs",
    "team quota exceeded",
    "team budget exceeded",
    "an input cannot reach the region",
    "not considered by the policy",
};
static const char *const ex_token[SW_EX__COUNT] = {
    "none",      "product",    "gpu-memory", "interconnect", "burst-never", "production-spot",
    "max-price", "never-fits", "capacity",   "quota",        "budget",      "no-route",
    "policy",
};
static const char *const why_text[SW_WHY__COUNT] = {
    "lowest expected cost including the value of delay",
    "fits on the local cluster now",
    "still inside its waiting budget",
    "waiting budget used up; bursting",
    "cheapest eligible option for the policy",
    "the policy never bursts",
    "the workload's burst mode is never",
    "the workload prefers the cloud",
    "the policy would burst but no cloud option is eligible",
    "no option meets the deadline; earliest completion chosen",
    "no eligible option",
    "runtime unknown and no finished run to learn it from",
};
static const char *const why_token[SW_WHY__COUNT] = {
    "lowest-score",          "fits-now",    "within-wait-budget",
    "wait-budget-exhausted", "cheapest",    "local-only",
    "burst-never",           "cloud-first", "no-cloud-option",
    "deadline-best-effort",  "no-option",   "no-runtime",
};

const char *sw_exclusion_text(enum sw_exclusion ex)
{
    return (unsigned)ex < SW_EX__COUNT ? ex_text[ex] : "unknown";
}
const char *sw_exclusion_token(enum sw_exclusion ex)
{
    return (unsigned)ex < SW_EX__COUNT ? ex_token[ex] : "unknown";
}
const char *sw_why_text(enum sw_why why)
{
    return (unsigned)why < SW_WHY__COUNT ? why_text[why] : "unknown";
}
const char *sw_why_token(enum sw_why why)
{
    return (unsigned)why < SW_WHY__COUNT ? why_token[why] : "unknown";
}
const char *sw_verdict_name(enum sw_verdict v)
{
    switch (v) {
    case SW_VERDICT_STAY:
        return "stay";
    case SW_VERDICT_BURST:
        return "burst";
    case SW_VERDICT_REJECT:
        return "reject";
    }
    return "unknown";
}

/* ---- Interning -------------------------------------------------------- */

/* Open addressing over borrowed keys; reset at every call. */
struct intern {
    const char **keys;
    int *vals;
    size_t cap; /* power of two */
    size_t n;
};

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int intern_reset(struct intern *t, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 1)
        cap *= 2;
    if (cap > t->cap) {
        const char **k = sw_calloc(cap, sizeof(*k));
        int *v = sw_calloc(cap, sizeof(*v));
        if (k == NULL || v == NULL) {
            sw_free(k);
            sw_free(v);
            return SW_ENOMEM;
        }
        sw_free(t->keys);
        sw_free(t->vals);
        t->keys = k;
        t->vals = v;
        t->cap = cap;
    } else {
        memset(t->keys, 0, t->cap * sizeof(*t->keys));
    }
    t->n = 0;
    return 0;
}

/* Returns the id of `s`, or -1. */
static int intern_find(const struct intern *t, const char *s)
{
    size_t mask = t->cap - 1;
    for (size_t i = fnv1a(s) & mask;; i = (i + 1) & mask) {
        if (t->keys[i] == NULL)
            return -1;
        if (strcmp(t->keys[i], s) == 0)
            return t->vals[i];
    }
}

/* Returns the id of `s`, adding it if new. The table was sized by reset. */
static int intern_add(struct intern *t, const char *s)
{
    size_t mask = t->cap - 1;
    for (size_t i = fnv1a(s) & mask;; i = (i + 1) & mask) {
        if (t->keys[i] == NULL) {
            t->keys[i] = s;
            t->vals[i] = (int)t->n;
            return (int)t->n++;
        }
        if (strcmp(t->keys[i], s) == 0)
            return t->vals[i];
    }
}

static void intern_free(struct intern *t)
{
    sw_free(t->keys);
    sw_free(t->vals);
}

/* ---- Local queues ------------------------------------------------------ */

struct release {
    double t;
    int gpus;
};

/* The FIFO queue of one pool: GPUs free at `cursor`, releases after it. */
#define PEEK_CACHE 33

struct lq {
    struct release *h; /* min-heap on t */
    size_t n, cap;
    double cursor;
    int free;
    int total;
    /* Start times already answered since the last commit, per GPU count:
     * most workloads ask the same few sizes of an unchanged queue. */
    unsigned version;
    unsigned cache_v[PEEK_CACHE];
    double cache_t[PEEK_CACHE];
};

static void heap_push(struct lq *q, struct release r)
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

/* ---- The engine ------------------------------------------------------- */

struct order_key {
    int prio;
    double submit;
    const char *name;
    size_t idx;
};

struct sw_engine {
    struct order_key *order;
    size_t order_cap;
    /* Per pool. */
    int *pfree, *proom, *pcluster, *pregion, *pproduct, *pqueue, *pflavour;
    size_t pool_cap;
    struct lq *lqs;
    size_t lq_cap, n_lqs;
    struct release *scratch;
    size_t scratch_cap;
    struct intern clusters, regions, products, teams, flavours;
    /* Region x region: egress price per GB and seconds per GB. */
    double *link_price, *link_spg;
    size_t mat_cap;
    /* Per region for the current workload, with a stamp for laziness. */
    double *eg_cost, *eg_time;
    unsigned *eg_stamp;
    size_t eg_cap;
    unsigned stamp;
    /* Quotas. */
    struct sw_quota_state *qs;
    struct sw_quota_group *qg;
    size_t q_cap;
    int *team_quota; /* team x flavour -> quota index, -1 none */
    bool *team_has_quota;
    double *budget_left;
    size_t team_cap, tq_cap;
    double *hist;
    size_t hist_cap;
    /* Options: one row per workload when explaining, else one row. */
    struct sw_option *opts;
    size_t opts_cap;
};

int sw_engine_new(struct sw_engine **out)
{
    struct sw_engine *e = sw_calloc(1, sizeof(*e));
    if (e == NULL)
        return SW_ENOMEM;
    *out = e;
    return 0;
}

void sw_engine_free(struct sw_engine *e)
{
    if (e == NULL)
        return;
    sw_free(e->order);
    sw_free(e->pfree);
    sw_free(e->proom);
    sw_free(e->pcluster);
    sw_free(e->pregion);
    sw_free(e->pproduct);
    sw_free(e->pqueue);
    sw_free(e->pflavour);
    for (size_t i = 0; i < e->lq_cap; i++)
        sw_free(e->lqs[i].h);
    sw_free(e->lqs);
    sw_free(e->scratch);
    intern_free(&e->clusters);
    intern_free(&e->regions);
    intern_free(&e->products);
    intern_free(&e->teams);
    intern_free(&e->flavours);
    sw_free(e->link_price);
    sw_free(e->link_spg);
    sw_free(e->eg_cost);
    sw_free(e->eg_time);
    sw_free(e->eg_stamp);
    sw_free(e->qs);
    sw_free(e->qg);
    sw_free(e->team_quota);
    sw_free(e->team_has_quota);
    sw_free(e->budget_left);
    sw_free(e->hist);
    sw_free(e->opts);
    sw_free(e);
}

/* Grows *p to hold `need` elements of `size` bytes; keeps the contents. */
static int grow(void *pp, size_t *cap, size_t need, size_t size)
{
    void **p = pp;
    if (need <= *cap && *p != NULL)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = sw_realloc(*p, n * size);
    if (q == NULL)
        return SW_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static int cmp_order(const void *a, const void *b)
{
    const struct order_key *x = a, *y = b;
    if (x->prio != y->prio)
        return y->prio - x->prio;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static const char *flavour_of(const struct sw_pool *p)
{
    return p->flavour[0] ? p->flavour : p->name;
}

/* Sizes the workspace and interns the snapshot's names. */
static int prepare(struct sw_engine *e, const struct sw_snapshot *s, bool explain,
                   struct sw_error *err)
{
    size_t np = s->n_pools, nw = s->n_pending;
    size_t pc = e->pool_cap, lc = e->lq_cap;
    if (grow(&e->order, &e->order_cap, nw + 1, sizeof(*e->order)) ||
        grow(&e->pfree, &pc, np + 1, sizeof(int)) ||
        (pc = e->pool_cap, grow(&e->proom, &pc, np + 1, sizeof(int))) ||
        (pc = e->pool_cap, grow(&e->pcluster, &pc, np + 1, sizeof(int))) ||
        (pc = e->pool_cap, grow(&e->pregion, &pc, np + 1, sizeof(int))) ||
        (pc = e->pool_cap, grow(&e->pproduct, &pc, np + 1, sizeof(int))) ||
        (pc = e->pool_cap, grow(&e->pqueue, &pc, np + 1, sizeof(int))) ||
        (pc = e->pool_cap, grow(&e->pflavour, &pc, np + 1, sizeof(int))))
        goto nomem;
    e->pool_cap = pc;
    if (s->n_queues + 1 > e->lq_cap) {
        if (grow(&e->lqs, &lc, s->n_queues + 1, sizeof(*e->lqs)))
            goto nomem;
        memset(e->lqs + e->lq_cap, 0, (lc - e->lq_cap) * sizeof(*e->lqs));
        e->lq_cap = lc;
    }
    size_t nregions = np + 2 * s->n_links;
    if (intern_reset(&e->clusters, np) || intern_reset(&e->regions, nregions) ||
        intern_reset(&e->products, np) || intern_reset(&e->flavours, np) ||
        intern_reset(&e->teams, s->n_quotas + s->n_budgets))
        goto nomem;
    for (size_t i = 0; i < np; i++) {
        const struct sw_pool *p = &s->pools[i];
        e->pcluster[i] = intern_add(&e->clusters, p->cluster);
        e->pregion[i] = intern_add(&e->regions, p->region);
        e->pproduct[i] = intern_add(&e->products, p->product);
        e->pflavour[i] = intern_add(&e->flavours, flavour_of(p));
        e->pfree[i] = p->free_gpus;
        e->proom[i] = p->max_gpus - p->total_gpus;
        e->pqueue[i] = -1;
    }
    if (e->products.n > 64)
        return sw_error_set(err, SW_EUNSUPPORTED,
                            "snapshot: %zu distinct GPU products; at most 64 are supported",
                            e->products.n);
    for (size_t i = 0; i < s->n_links; i++) {
        intern_add(&e->regions, s->links[i].from);
        intern_add(&e->regions, s->links[i].to);
    }
    size_t R = e->regions.n;
    size_t mc = e->mat_cap;
    if (grow(&e->link_price, &mc, R * R + 1, sizeof(double)) ||
        (mc = e->mat_cap, grow(&e->link_spg, &mc, R * R + 1, sizeof(double))))
        goto nomem;
    e->mat_cap = mc;
    size_t ec = e->eg_cap;
    if (grow(&e->eg_cost, &ec, R + 1, sizeof(double)) ||
        (ec = e->eg_cap, grow(&e->eg_time, &ec, R + 1, sizeof(double))) ||
        (ec = e->eg_cap, grow(&e->eg_stamp, &ec, R + 1, sizeof(unsigned))))
        goto nomem;
    if (ec > e->eg_cap)
        memset(e->eg_stamp, 0, ec * sizeof(unsigned));
    e->eg_cap = ec;
    e->stamp = 0;
    memset(e->eg_stamp, 0, e->eg_cap * sizeof(unsigned));
    for (size_t i = 0; i < R * R; i++) {
        e->link_price[i] = INFINITY;
        e->link_spg[i] = INFINITY;
    }
    for (size_t r = 0; r < R; r++) {
        e->link_price[r * R + r] = 0;
        e->link_spg[r * R + r] = 0;
    }
    for (size_t i = 0; i < s->n_links; i++) {
        const struct sw_link *l = &s->links[i];
        size_t a = (size_t)intern_find(&e->regions, l->from);
        size_t b = (size_t)intern_find(&e->regions, l->to);
        if (a == b)
            continue;
        /* Several links for one pair: keep the cheapest. */
        if (l->price_per_gb < e->link_price[a * R + b]) {
            e->link_price[a * R + b] = l->price_per_gb;
            e->link_spg[a * R + b] = 8.0 / l->bandwidth_gbps;
        }
    }
    /* Teams, quotas and budgets. */
    for (size_t i = 0; i < s->n_quotas; i++)
        intern_add(&e->teams, s->quotas[i].team);
    for (size_t i = 0; i < s->n_budgets; i++)
        intern_add(&e->teams, s->budgets[i].team);
    size_t T = e->teams.n, F = e->flavours.n;
    size_t qc = e->q_cap, tc = e->team_cap, tqc = e->tq_cap;
    if (grow(&e->qs, &qc, s->n_quotas + 1, sizeof(*e->qs)) ||
        (qc = e->q_cap, grow(&e->qg, &qc, s->n_quotas + 1, sizeof(*e->qg))) ||
        grow(&e->team_has_quota, &tc, T + 1, sizeof(bool)) ||
        (tc = e->team_cap, grow(&e->budget_left, &tc, T + 1, sizeof(double))) ||
        grow(&e->team_quota, &tqc, T * F + 1, sizeof(int)))
        goto nomem;
    e->q_cap = qc;
    e->team_cap = tc;
    e->tq_cap = tqc;
    size_t ng;
    sw_quota_build(s->quotas, s->n_quotas, e->qs, e->qg, &ng);
    for (size_t t = 0; t < T; t++) {
        e->team_has_quota[t] = false;
        e->budget_left[t] = INFINITY;
    }
    for (size_t i = 0; i < T * F; i++)
        e->team_quota[i] = -1;
    for (size_t i = 0; i < s->n_quotas; i++) {
        size_t t = (size_t)intern_find(&e->teams, s->quotas[i].team);
        int f = intern_find(&e->flavours, s->quotas[i].flavour);
        e->team_has_quota[t] = true;
        if (f >= 0)
            e->team_quota[t * F + (size_t)f] = (int)i;
    }
    for (size_t i = 0; i < s->n_budgets; i++) {
        size_t t = (size_t)intern_find(&e->teams, s->budgets[i].team);
        double left = s->budgets[i].cap - s->budgets[i].spent;
        e->budget_left[t] = left > 0 ? left : 0;
    }
    /* Local queues: running Jobs become releases, Jobs ahead are queued. */
    size_t scratch_need = 1;
    e->n_lqs = s->n_queues;
    for (size_t i = 0; i < s->n_queues; i++) {
        const struct sw_local_queue *lq = &s->queues[i];
        size_t pool = 0;
        while (strcmp(s->pools[pool].name, lq->pool) != 0)
            pool++; /* validated: the pool exists */
        struct lq *q = &e->lqs[i];
        size_t need = lq->n_running + lq->n_ahead + nw + 1;
        if (grow(&q->h, &q->cap, need, sizeof(*q->h)))
            goto nomem;
        q->n = 0;
        q->version++;
        q->cursor = s->now;
        q->free = s->pools[pool].free_gpus;
        q->total = s->pools[pool].total_gpus;
        e->pqueue[pool] = (int)i;
        for (size_t j = 0; j < lq->n_running; j++)
            heap_push(q,
                      (struct release){s->now + lq->running[j].remaining_s, lq->running[j].gpus});
        if (need > scratch_need)
            scratch_need = need;
    }
    if (grow(&e->scratch, &e->scratch_cap, scratch_need, sizeof(*e->scratch)) ||
        grow(&e->hist, &e->hist_cap, s->n_history + 1, sizeof(double)))
        goto nomem;
    size_t rows = explain ? nw : 1;
    if (rows * np + 1 > e->opts_cap &&
        grow(&e->opts, &e->opts_cap, rows * np + 1, sizeof(*e->opts)))
        goto nomem;
    /* The decision order. */
    for (size_t i = 0; i < nw; i++) {
        e->order[i].prio = (int)s->pending[i].prio;
        e->order[i].submit = s->pending[i].submit_time;
        e->order[i].name = s->pending[i].name;
        e->order[i].idx = i;
    }
    qsort(e->order, nw, sizeof(*e->order), cmp_order);
    return 0;
nomem:
    return sw_error_set(err, SW_ENOMEM,
                        "placement engine: out of memory for %zu workloads x %zu pools", nw, np);
}

/* When `gpus` GPUs could start on queue `q`, at the earliest `now`.
 * With `commit`, the Job is queued and holds the GPUs until `start + hold`. */
static double lq_start(struct sw_engine *e, struct lq *q, int gpus, double now, bool commit,
                       double hold)
{
    if (!commit && gpus < PEEK_CACHE && q->cache_v[gpus] == q->version)
        return q->cache_t[gpus];
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
    if (!commit || !isfinite(t)) {
        for (size_t i = 0; i < popped; i++)
            heap_push(q, e->scratch[i]);
        if (!commit && gpus < PEEK_CACHE) {
            q->cache_v[gpus] = q->version;
            q->cache_t[gpus] = t;
        }
        return t;
    }
    q->version++;
    q->cursor = t;
    q->free = free - gpus;
    heap_push(q, (struct release){t + hold, gpus});
    return t;
}

/* Egress cost and transfer seconds of `w`'s inputs into region `r`. */
static void egress_to(struct sw_engine *e, const struct sw_workload *w, int r, double *cost,
                      double *secs)
{
    if (w->n_inputs == 0 || r < 0) {
        *cost = 0;
        *secs = 0;
        return;
    }
    if (e->eg_stamp[r] == e->stamp) {
        *cost = e->eg_cost[r];
        *secs = e->eg_time[r];
        return;
    }
    size_t R = e->regions.n;
    double c = 0, t = 0;
    for (int k = 0; k < w->n_inputs; k++) {
        const struct sw_input *in = &w->inputs[k];
        if (in->n_regions == 0 || in->size_gb == 0)
            continue; /* nothing to move */
        double best = INFINITY, best_t = INFINITY;
        for (int h = 0; h < in->n_regions; h++) {
            int src = intern_find(&e->regions, in->regions[h]);
            if (src < 0)
                continue;
            double price = e->link_price[(size_t)src * R + (size_t)r];
            double spg = e->link_spg[(size_t)src * R + (size_t)r];
            if (price < best || (price == best && spg < best_t)) {
                best = price;
                best_t = spg;
            }
        }
        c += best * in->size_gb;
        t += best_t * in->size_gb;
    }
    e->eg_cost[r] = c;
    e->eg_time[r] = t;
    e->eg_stamp[r] = e->stamp;
    *cost = c;
    *secs = t;
}

/* Everything about one workload the option loop needs, resolved once. */
struct wctx {
    const struct sw_workload *w;
    int gpus;
    double runtime_s;
    int origin;
    int team;
    uint64_t product_mask; /* 0: any product */
    bool product_unknown;  /* asked only for products no pool has */
};

static void evaluate(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                     const struct sw_policy *pol, size_t pi, struct sw_option *o)
{
    const struct sw_pool *p = &s->pools[pi];
    const struct sw_workload *w = c->w;
    /* Only the fields an excluded option shows are set up front: clearing
     * the whole struct for a million options costs more than evaluating. */
    o->pool = (int)pi;
    o->stay = e->pcluster[pi] == c->origin;
    o->deadline_ok = true;
    o->detail = 0;
    o->borrowed = 0;
    o->wait_s = 0;
    o->provision_s = 0;
    o->transfer_s = 0;
    o->score = 0;
    o->excluded = SW_EX_NONE;
    if (c->product_unknown || (c->product_mask && !(c->product_mask >> e->pproduct[pi] & 1u))) {
        o->excluded = SW_EX_PRODUCT;
        return;
    }
    if (p->gpu_mem_gb < w->min_gpu_mem_gb) {
        o->excluded = SW_EX_GPU_MEMORY;
        return;
    }
    if ((p->interconnect & w->interconnect) != w->interconnect) {
        o->excluded = SW_EX_INTERCONNECT;
        return;
    }
    if (!o->stay && w->burst == SW_BURST_NEVER) {
        o->excluded = SW_EX_BURST_NEVER;
        return;
    }
    if (w->prio == SW_PRIO_PRODUCTION && p->capacity == SW_CAP_SPOT) {
        o->excluded = SW_EX_PRODUCTION_SPOT;
        return;
    }
    if (w->max_price > 0 && p->price_gpu_h > w->max_price) {
        o->excluded = SW_EX_MAX_PRICE;
        return;
    }
    int queue = o->stay ? e->pqueue[pi] : -1;
    if (c->gpus > (queue >= 0 ? p->total_gpus : p->max_gpus)) {
        o->excluded = SW_EX_NEVER_FITS;
        return;
    }
    /* Capacity first: late in a long queue most pools are full, and this
     * check is cheaper than quotas, egress and costs. */
    bool needs_provision = false;
    if (queue < 0 && c->gpus > e->pfree[pi]) {
        if (c->gpus > e->pfree[pi] + e->proom[pi]) {
            o->excluded = SW_EX_CAPACITY;
            return;
        }
        needs_provision = true;
    }
    if (c->team >= 0 && e->team_has_quota[c->team]) {
        int qi = e->team_quota[(size_t)c->team * e->flavours.n + (size_t)e->pflavour[pi]];
        if (qi < 0) {
            o->excluded = SW_EX_QUOTA;
            o->detail = SW_QUOTA_NOMINAL;
            return;
        }
        enum sw_quota_verdict v = sw_quota_check(&e->qs[qi], e->qg, c->gpus, &o->borrowed);
        if (v != SW_QUOTA_OK) {
            o->excluded = SW_EX_QUOTA;
            o->detail = (int)v;
            return;
        }
    }
    double egress, transfer;
    egress_to(e, w, e->pregion[pi], &egress, &transfer);
    if (!isfinite(egress)) {
        o->excluded = SW_EX_NO_ROUTE;
        return;
    }
    o->transfer_s = transfer;
    double now = s->now;
    if (queue >= 0) {
        double t = lq_start(e, &e->lqs[queue], c->gpus, now, false, 0);
        if (!isfinite(t)) {
            o->excluded = SW_EX_NEVER_FITS;
            return;
        }
        o->start = t > now + transfer ? t : now + transfer;
        o->wait_s = o->start - now;
    } else if (needs_provision) {
        o->provision_s = p->provision_s;
        o->start = now + transfer + p->provision_s;
    } else {
        o->start = now + transfer;
    }
    double rt_h = c->runtime_s / 3600.0;
    double rate = p->capacity == SW_CAP_OWNED ? 0 : p->interrupt_per_h;
    sw_cost_option(c->gpus, p->price_gpu_h, rt_h, o->provision_s / 3600.0, rate,
                   w->checkpoint_s / 3600.0, w->restart_s / 3600.0, egress, &o->cost);
    double lost_s =
        sw_cost_lost_hours(w->checkpoint_s / 3600.0, w->restart_s / 3600.0, rt_h) * 3600.0;
    o->completion = o->start + c->runtime_s + o->cost.interruptions * lost_s;
    if (w->deadline > 0) {
        /* A deadline-bound Job does not bet on luck: spot must meet the
         * deadline even with two standard deviations more interruptions
         * than expected, plus one. */
        double n = o->cost.interruptions;
        double pessimistic = n > 0 ? n + 2.0 * sqrt(n) + 1.0 : 0;
        o->deadline_ok = o->start + c->runtime_s + pessimistic * lost_s <= w->deadline;
    }
    if (c->team >= 0) {
        double charge = p->capacity == SW_CAP_OWNED ? egress : o->cost.total;
        if (charge > e->budget_left[c->team]) {
            o->excluded = SW_EX_BUDGET;
            return;
        }
    }
    double delay_h = (o->completion - now - c->runtime_s) / 3600.0;
    o->score = o->cost.total + pol->delay_value_gpu_h * c->gpus * delay_h;
}

/* Whether option a beats b on `key` (lower), ties to staying, then pool order. */
static bool better(const struct sw_option *a, double ka, const struct sw_option *b, double kb)
{
    if (ka != kb)
        return ka < kb;
    if (a->stay != b->stay)
        return a->stay;
    return a->pool < b->pool;
}

enum pick_key { KEY_SCORE, KEY_COST, KEY_COMPLETION, KEY_LIST_PRICE };

static double key_of(const struct sw_snapshot *s, const struct sw_option *o, enum pick_key k)
{
    switch (k) {
    case KEY_SCORE:
        return o->score;
    case KEY_COST:
        return o->cost.total;
    case KEY_COMPLETION:
        return o->completion;
    case KEY_LIST_PRICE:
        return s->pools[o->pool].price_gpu_h;
    }
    return 0;
}

/* Filters for pick(). */
enum pick_filter {
    F_ANY,
    F_STAY,
    F_STAY_NOW,  /* local and starts now */
    F_CLOUD,     /* not local */
    F_ON_DEMAND, /* not local, not spot */
    F_SPOT,      /* not local, spot */
    F_NOW,       /* starts now (locally) or bursts */
    F_DEADLINE,  /* meets the deadline */
    F_CLOUD_DEADLINE,
};

static bool passes(const struct sw_snapshot *s, const struct sw_option *o, enum pick_filter f)
{
    enum sw_capacity cap = s->pools[o->pool].capacity;
    switch (f) {
    case F_ANY:
        return true;
    case F_STAY:
        return o->stay;
    case F_STAY_NOW:
        return o->stay && o->wait_s <= 0;
    case F_CLOUD:
        return !o->stay;
    case F_ON_DEMAND:
        return !o->stay && cap != SW_CAP_SPOT;
    case F_SPOT:
        return !o->stay && cap == SW_CAP_SPOT;
    case F_NOW:
        return !o->stay || o->wait_s <= 0;
    case F_DEADLINE:
        return o->deadline_ok;
    case F_CLOUD_DEADLINE:
        return !o->stay && o->deadline_ok;
    }
    return false;
}

static int pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n,
                enum pick_filter f, enum pick_key k)
{
    int best = -1;
    double bk = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_option *o = &opts[i];
        if (o->excluded != SW_EX_NONE || !passes(s, o, f))
            continue;
        double ki = key_of(s, o, k);
        if (best < 0 || better(o, ki, &opts[best], bk)) {
            best = (int)i;
            bk = ki;
        }
    }
    return best;
}

/* Marks eligible options a policy never looks at, for the explanation. */
static void exclude_unless(const struct sw_snapshot *s, struct sw_option *opts, size_t n,
                           enum pick_filter f)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].excluded == SW_EX_NONE && !passes(s, &opts[i], f))
            opts[i].excluded = SW_EX_POLICY;
}

/* Waiting-budget policies: stay while within the budget, then on-demand. */
static int choose_wait_then_burst(const struct sw_snapshot *s, struct sw_option *opts, size_t n,
                                  const struct sw_workload *w, double budget_s,
                                  struct sw_decision *d)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].excluded == SW_EX_NONE && passes(s, &opts[i], F_SPOT))
            opts[i].excluded = SW_EX_POLICY;
    int c = pick(s, opts, n, F_STAY_NOW, KEY_COST);
    if (c >= 0) {
        d->why = SW_WHY_FITS_NOW;
        return c;
    }
    double deadline = w->submit_time + budget_s;
    if (s->now < deadline) {
        c = pick(s, opts, n, F_STAY, KEY_COMPLETION);
        if (c >= 0) {
            d->why = SW_WHY_WITHIN_WAIT;
            d->recheck_at = deadline;
            return c;
        }
    }
    c = pick(s, opts, n, F_ON_DEMAND, KEY_COST);
    if (c >= 0) {
        d->why = SW_WHY_WAIT_EXHAUSTED;
        return c;
    }
    d->why = SW_WHY_NO_CLOUD;
    return pick(s, opts, n, F_STAY, KEY_COMPLETION);
}

static int choose(const struct sw_snapshot *s, const struct sw_policy *pol, const struct wctx *c,
                  struct sw_option *opts, size_t n, struct sw_decision *d)
{
    const struct sw_workload *w = c->w;
    int k;
    if (w->burst == SW_BURST_NEVER) {
        d->why = SW_WHY_BURST_NEVER;
        if (pol->kind == SW_POLICY_COST_AWARE) {
            k = pick(s, opts, n, F_DEADLINE, KEY_SCORE);
            return k >= 0 ? k : pick(s, opts, n, F_ANY, KEY_COMPLETION);
        }
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    }
    switch (pol->kind) {
    case SW_POLICY_COST_AWARE:
        if (w->burst == SW_BURST_CLOUD_FIRST) {
            k = pick(s, opts, n, F_CLOUD_DEADLINE, KEY_SCORE);
            if (k >= 0) {
                d->why = SW_WHY_CLOUD_FIRST;
                return k;
            }
        }
        d->why = SW_WHY_LOWEST_SCORE;
        k = pick(s, opts, n, F_DEADLINE, KEY_SCORE);
        if (k >= 0)
            return k;
        d->why = SW_WHY_DEADLINE_BEST;
        return pick(s, opts, n, F_ANY, KEY_COMPLETION);
    case SW_POLICY_LOCAL_ONLY:
        exclude_unless(s, opts, n, F_STAY);
        d->why = SW_WHY_LOCAL_ONLY;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_BURST_NOW:
        for (size_t i = 0; i < n; i++)
            if (opts[i].excluded == SW_EX_NONE && passes(s, &opts[i], F_SPOT))
                opts[i].excluded = SW_EX_POLICY;
        k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_FITS_NOW;
            return k;
        }
        k = pick(s, opts, n, F_ON_DEMAND, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_CONST_WAIT:
        return choose_wait_then_burst(s, opts, n, w, pol->wait_s, d);
    case SW_POLICY_STARBURST:
        return choose_wait_then_burst(s, opts, n, w,
                                      pol->starburst_k * c->runtime_s * (double)c->gpus, d);
    case SW_POLICY_SPOT_ONLY:
        k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_FITS_NOW;
            return k;
        }
        /* Production may not use spot; it falls back to on-demand. */
        k = pick(s, opts, n, w->prio == SW_PRIO_PRODUCTION ? F_ON_DEMAND : F_SPOT, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_GREEDY:
        exclude_unless(s, opts, n, F_NOW);
        k = pick(s, opts, n, F_NOW, KEY_LIST_PRICE);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    default:
        return -1;
    }
}

/* The commonest exclusion among `n` options (for a rejection's reason). */
static enum sw_exclusion main_exclusion(const struct sw_option *opts, size_t n)
{
    int count[SW_EX__COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        count[opts[i].excluded]++;
    int best = SW_EX_NONE;
    for (int k = 1; k < SW_EX__COUNT; k++)
        if (count[k] > count[best] || best == SW_EX_NONE)
            if (count[k] > 0)
                best = k;
    return (enum sw_exclusion)best;
}

/* Takes the chosen option's capacity, quota and budget. */
static void commit(struct sw_engine *e, const struct sw_snapshot *s, const struct wctx *c,
                   const struct sw_option *o)
{
    size_t pi = (size_t)o->pool;
    const struct sw_pool *p = &s->pools[pi];
    int queue = o->stay ? e->pqueue[pi] : -1;
    if (queue >= 0) {
        double hold = o->completion - o->start;
        lq_start(e, &e->lqs[queue], c->gpus, s->now, true, hold);
    } else if (c->gpus <= e->pfree[pi]) {
        e->pfree[pi] -= c->gpus;
    } else {
        e->proom[pi] -= c->gpus - e->pfree[pi];
        e->pfree[pi] = 0;
    }
    if (c->team >= 0) {
        if (e->team_has_quota[c->team]) {
            int qi = e->team_quota[(size_t)c->team * e->flavours.n + (size_t)e->pflavour[pi]];
            sw_quota_charge(&e->qs[qi], e->qg, c->gpus);
        }
        e->budget_left[c->team] -=
            p->capacity == SW_CAP_OWNED ? o->cost.egress_cost : o->cost.total;
    }
}

int sw_engine_decide(struct sw_engine *e, const struct sw_snapshot *s,
                     const struct sw_policy *policy, unsigned flags, struct sw_decision *out,
                     struct sw_error *err)
{
    if (e == NULL || policy == NULL || (s != NULL && s->n_pending > 0 && out == NULL))
        return sw_error_set(err, SW_EINVAL, "placement engine: NULL argument");
    if ((unsigned)policy->kind >= SW_POLICY__COUNT)
        return sw_error_set(err, SW_EINVAL, "policy: unknown kind %d", (int)policy->kind);
    int rc = sw_snapshot_validate(s, err);
    if (rc != 0)
        return rc;
    bool explain = flags & SW_DECIDE_EXPLAIN;
    if ((rc = prepare(e, s, explain, err)) != 0)
        return rc;
    size_t np = s->n_pools;
    /* Jobs already queued ahead take their place first. */
    for (size_t i = 0; i < s->n_queues; i++) {
        const struct sw_local_queue *lq = &s->queues[i];
        for (size_t j = 0; j < lq->n_ahead; j++) {
            struct lq *q = &e->lqs[i];
            if (lq->ahead[j].gpus > q->total)
                continue; /* can never start; it blocks nobody in this model */
            lq_start(e, q, lq->ahead[j].gpus, s->now, true, lq->ahead[j].runtime_s);
        }
    }
    for (size_t rank = 0; rank < s->n_pending; rank++) {
        size_t wi = e->order[rank].idx;
        const struct sw_workload *w = &s->pending[wi];
        struct sw_decision *d = &out[wi];
        memset(d, 0, sizeof(*d));
        d->workload = wi;
        d->rank = rank;
        d->pool = -1;
        struct sw_option *opts = e->opts + (explain ? rank * np : 0);
        if (explain) {
            d->options = opts;
            d->n_options = np;
        }
        struct wctx c = {.w = w, .gpus = sw_workload_gpus(w), .runtime_s = w->runtime_s};
        if (c.runtime_s <= 0) {
            if (sw_runtime_learn(s->history, s->n_history, w->team, w->label, e->hist,
                                 &c.runtime_s) != 0) {
                d->verdict = SW_VERDICT_REJECT;
                d->why = SW_WHY_NO_RUNTIME;
                d->n_options = 0;
                continue;
            }
            d->runtime_learned = true;
        }
        d->runtime_s = c.runtime_s;
        c.origin = intern_find(&e->clusters, w->origin);
        c.team = intern_find(&e->teams, w->team);
        for (int k = 0; k < w->n_products; k++) {
            int id = intern_find(&e->products, w->products[k]);
            if (id >= 0)
                c.product_mask |= (uint64_t)1 << id;
        }
        c.product_unknown = w->n_products > 0 && c.product_mask == 0;
        e->stamp++;
        for (size_t pi = 0; pi < np; pi++)
            evaluate(e, s, &c, policy, pi, &opts[pi]);
        int k = choose(s, policy, &c, opts, np, d);
        if (k < 0) {
            d->verdict = SW_VERDICT_REJECT;
            d->why = SW_WHY_NO_OPTION;
            d->main_exclusion = main_exclusion(opts, np);
            continue;
        }
        d->chosen = opts[k];
        d->pool = k;
        d->verdict = opts[k].stay ? SW_VERDICT_STAY : SW_VERDICT_BURST;
        commit(e, s, &c, &opts[k]);
        /* A workload that needs only the evaluated row keeps no pointer. */
    }
    return 0;
}
