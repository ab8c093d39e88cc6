/*
 * engine.c - the placement engine: evaluates the pools for every pending
 * workload, highest priority first, and lets the policy choose.
 *
 * The work per decision is kept small enough to decide 10,000 workloads
 * over 100 pools in a few milliseconds: validation interns the names once
 * per call into small integers (clusters, flavours, teams; the engine adds
 * regions and products), the quota of every team on every pool is a table
 * lookup, and the local queue of every owned pool is a min-heap of GPU
 * releases that answers "when could N GPUs start" by popping at most N
 * entries.
 *
 * Without explanations the engine does not look at pools a workload cannot
 * use: bit sets of pools per product, cluster, team and capacity level
 * (kept up to date as capacity is taken) give the candidates in a few word
 * operations, and only those are priced. With explanations every pool is
 * weighed and every exclusion recorded; both paths share the code that
 * prices an option, and the tests check that they decide the same.
 */
#include "placement/engine.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "placement/index.h"
#include "placement/quota.h"
#include "placement/runtime.h"

/* For the few small functions of the option loop that must inline whatever
 * the compiler thinks of their size: each is called with constant
 * arguments that fold away. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---- Policies --------------------------------------------------------- */

static const char *const policy_names[SW_POLICY__COUNT] = {
    "cost-aware", "local-only", "burst-now", "const-wait",
    "starburst",  "spot-only",  "greedy",    "uniform-progress",
};

const char *sw_policy_name(enum sw_policy_kind kind)
{
    return (unsigned)kind < SW_POLICY__COUNT ? policy_names[kind] : "unknown";
}

void sw_policy_default(enum sw_policy_kind kind, struct sw_policy *p)
{
    p->kind = kind;
    /* Derived from each snapshot's prices (sw_policy_delay_value). */
    p->delay_value_gpu_h = -1.0;
    p->wait_s = 3600.0;
    /* Starburst (ATC'24) lets a job wait in proportion to its size. */
    p->starburst_k = 0.25;
    /* One interruption in reserve: the deadline survives one more than
     * the pessimistic count before on-demand is needed. */
    p->up_margin = 1.0;
    /* A promise a platform states, not a cost: a day is far above the
     * waits the value of delay gives, so it binds only where the runtime
     * belief is so long that waiting looks free. */
    p->max_wait_s = 86400.0;
}

double sw_policy_delay_value(const struct sw_policy *p, const struct sw_snapshot *s)
{
    if (p->delay_value_gpu_h >= 0)
        return p->delay_value_gpu_h;
    double od = INFINITY, other = 0;
    for (size_t i = 0; s != NULL && i < s->n_pools; i++) {
        const struct sw_pool *pool = &s->pools[i];
        if (pool->capacity == SW_CAP_ON_DEMAND && pool->price_gpu_h < od)
            od = pool->price_gpu_h;
        if (pool->capacity != SW_CAP_OWNED && pool->price_gpu_h > other)
            other = pool->price_gpu_h;
    }
    return isfinite(od) ? od : other;
}

/* Starburst's k: waiting budget = k x runtime x GPUs. */
#define POLICY_MAX_K 1e6

/* The policy's parameters within the bounds that keep scores finite. */
static bool policy_params_ok(const struct sw_policy *p)
{
    return (p->delay_value_gpu_h == -1.0 ||
            (p->delay_value_gpu_h >= 0 && p->delay_value_gpu_h <= SW_MAX_PRICE)) &&
           p->wait_s >= 0 &&
           p->wait_s <= SW_MAX_SECONDS && p->starburst_k >= 0 && p->starburst_k <= POLICY_MAX_K &&
           p->up_margin >= 0 && p->up_margin <= POLICY_MAX_K && p->max_wait_s >= 0 &&
           (p->max_wait_s <= SW_MAX_SECONDS || p->max_wait_s == INFINITY);
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
        struct sw_policy q = *p;
        q.delay_value_gpu_h = q.wait_s = q.starburst_k = q.up_margin = v;
        if (!policy_params_ok(&q))
            return sw_error_set(err, SW_EINVAL,
                                "policy \"%s\": parameter \"%s\": beyond any real value",
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
        case SW_POLICY_UNIFORM_PROGRESS:
            p->up_margin = v;
            return 0;
        default:
            return sw_error_set(err, SW_EINVAL, "policy \"%s\" takes no parameter",
                                policy_names[k]);
        }
    }
    return sw_error_set(err, SW_EINVAL,
                        "unknown policy \"%.*s\" (expected cost-aware, local-only, burst-now, "
                        "const-wait, starburst, spot-only, greedy or uniform-progress)",
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
    "preempted too often; spot no longer considered",
};
static const char *const ex_token[SW_EX__COUNT] = {
    "none",      "product",    "gpu-memory", "interconnect", "burst-never", "production-spot",
    "max-price", "never-fits", "capacity",   "quota",        "budget",      "no-route",
    "policy",    "preempted",
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

/* A node of the release heap, for peeking at its smallest entries. */
struct peek_node {
    double t;
    size_t i;
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

/* A workload's place in the decision order: priority class (highest
 * first, so stored as 3 - class), then submit time as an unsigned integer
 * that sorts like the double, then name, then index. */
struct order_key {
    uint64_t submit;
    size_t idx;
    unsigned prio;
};

/* Radix sort passes: the 8 bytes of the submit time, then the priority. */
#define RADIX_PASSES 9

/* What the option loop reads of a pool, packed: the snapshot's struct
 * sw_pool is mostly names, and scanning it for a few numbers a million
 * times per call costs cache misses. */
struct pool_rt {
    double price;       /* per GPU-hour */
    double rate;        /* interruptions per hour (0 for owned capacity) */
    double provision_s; /* delay to add capacity */
    double provision_h;
    double mem; /* GPU memory, GB */
    int cluster, region, product, flavour;
    int queue; /* local queue index, -1 none */
    int total, max;
    int free, room; /* idle GPUs now, and GPUs autoscaling may still add */
    double cap_wait_s; /* > 0: no GPU can be added before this many seconds */
    unsigned ic;
    enum sw_capacity cap;
};

/* Capacity levels: a pool is in level b of the capacity sets when it may
 * still take 2^b GPUs, so a workload of g GPUs need look only at level
 * floor(log2 g). */
#define CAP_LEVELS 32

/* A small cache of pool sets computed for one attribute value. */
#define SET_CACHE 4
struct set_cache {
    double key[SET_CACHE];
    bool used[SET_CACHE];
    unsigned next;
};

struct sw_engine {
    struct order_key *order, *order_tmp;
    size_t order_cap, order_tmp_cap;
    size_t radix[RADIX_PASSES][256];
    struct pool_rt *pools;
    size_t pool_cap;
    struct lq *lqs;
    size_t lq_cap, n_lqs;
    struct release *scratch;
    size_t scratch_cap;
    struct peek_node *peek; /* lq_peek's frontier */
    size_t peek_cap;
    struct sw__index idx; /* pools, clusters, flavours and teams as ids */
    struct sw__intern regions, products;
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
    /* Pool sets: one bit per pool, `words` 64-bit words per set. Bit r
     * stands for the pool of rank r in list price order (ties by index),
     * so that candidates come out cheapest first. */
    size_t np, words;
    size_t *rank_pool, *pool_rank;
    size_t rank_pool_cap, pool_rank_cap;
    uint64_t *sets;
    size_t sets_cap;
    uint64_t *set_all, *set_spot, *set_cap, *set_prod, *set_cluster, *set_team;
    uint64_t *set_mem, *set_ic, *set_price, *set_cand;
    struct set_cache mem_cache, ic_cache, price_cache;
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
    sw_free(e->order_tmp);
    sw_free(e->pools);
    for (size_t i = 0; i < e->lq_cap; i++)
        sw_free(e->lqs[i].h);
    sw_free(e->lqs);
    sw_free(e->scratch);
    sw_free(e->peek);
    sw__index_free(&e->idx);
    sw__intern_free(&e->regions);
    sw__intern_free(&e->products);
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
    sw_free(e->sets);
    sw_free(e->rank_pool);
    sw_free(e->pool_rank);
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

/* The bits of a finite double as an unsigned integer in the same order
 * (-0 and +0 are equal, as they compare). */
static uint64_t order_bits(double d)
{
    d += 0.0; /* -0 becomes +0 */
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

static unsigned radix_digit(const struct order_key *k, int pass)
{
    return pass < 8 ? (unsigned)(k->submit >> (8 * pass)) & 0xff : k->prio;
}

/* Whether x goes before y among keys of equal priority and submit time. */
static bool name_before(const struct sw_workload *pending, const struct order_key *x,
                        const struct order_key *y)
{
    int c = strcmp(pending[x->idx].name, pending[y->idx].name);
    return c != 0 ? c < 0 : x->idx < y->idx;
}

/* Sorts the decision order: highest priority first, then first come first
 * served, then by name and index. A stable LSD radix sort of the keys
 * (built in index order) on submit time and priority, skipping the passes
 * whose byte is the same everywhere, then the rare runs of equal time by
 * name. `tmp` has n entries. */
static void sort_order(struct sw_engine *e, struct order_key *a, struct order_key *tmp, size_t n,
                       const struct sw_workload *pending)
{
    if (n < 2)
        return;
    memset(e->radix, 0, sizeof(e->radix));
    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < RADIX_PASSES; p++)
            e->radix[p][radix_digit(&a[i], p)]++;
    struct order_key *src = a, *dst = tmp;
    for (int p = 0; p < RADIX_PASSES; p++) {
        size_t *count = e->radix[p];
        if (count[radix_digit(&src[0], p)] == n)
            continue; /* one bucket: nothing moves */
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[radix_digit(&src[i], p)]++] = src[i];
        struct order_key *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(*a));
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j].prio == a[i].prio && a[j].submit == a[i].submit)
            j++;
        for (size_t k = i + 1; k < j; k++) {
            struct order_key key = a[k];
            size_t m = k;
            for (; m > i && name_before(pending, &key, &a[m - 1]); m--)
                a[m] = a[m - 1];
            a[m] = key;
        }
        i = j;
    }
}

static inline void set_bit(uint64_t *set, size_t i)
{
    set[i / 64] |= (uint64_t)1 << (i % 64);
}

static inline void clear_bit(uint64_t *set, size_t i)
{
    set[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* The capacity a pool shows the sets: what a burst may take (idle plus
 * autoscaling room), or for a queued pool at least its size, since its own
 * cluster's Jobs queue for it. */
static int cap_hint(const struct pool_rt *p)
{
    int burst = p->free + p->room;
    return p->queue >= 0 && p->total > burst ? p->total : burst;
}

/* Moves pool `pi` down the capacity levels after its hint fell from `old`. */
static void cap_levels_update(struct sw_engine *e, size_t pi, int old)
{
    int now = cap_hint(&e->pools[pi]);
    for (int b = 0; b < CAP_LEVELS && ((int64_t)1 << b) <= old; b++)
        if (((int64_t)1 << b) > now)
            clear_bit(e->set_cap + (size_t)b * e->words, e->pool_rank[pi]);
}

/* Sorts pool indices by list price, ties by index (insertion sort: pools
 * are few, and often listed nearly in price order). */
static void sort_by_price(const struct pool_rt *pools, size_t *idx, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t k = idx[i], m = i;
        for (; m > 0 && (pools[idx[m - 1]].price > pools[k].price ||
                         (pools[idx[m - 1]].price == pools[k].price && idx[m - 1] > k));
             m--)
            idx[m] = idx[m - 1];
        idx[m] = k;
    }
}

/* Sizes the workspace, takes the ids of the snapshot's names from its
 * validation, and builds the tables and pool sets of this call. */
static int prepare(struct sw_engine *e, const struct sw_snapshot *s, bool explain,
                   struct sw_error *err)
{
    size_t np = s->n_pools, nw = s->n_pending;
    const struct sw__index *idx = &e->idx;
    if (grow(&e->order, &e->order_cap, nw + 1, sizeof(*e->order)) ||
        grow(&e->order_tmp, &e->order_tmp_cap, nw + 1, sizeof(*e->order_tmp)) ||
        grow(&e->pools, &e->pool_cap, np + 1, sizeof(*e->pools)))
        goto nomem;
    size_t lc = e->lq_cap;
    if (s->n_queues + 1 > e->lq_cap) {
        if (grow(&e->lqs, &lc, s->n_queues + 1, sizeof(*e->lqs)))
            goto nomem;
        memset(e->lqs + e->lq_cap, 0, (lc - e->lq_cap) * sizeof(*e->lqs));
        e->lq_cap = lc;
    }
    size_t nregions = np + 2 * s->n_links;
    if (sw__intern_reset(&e->regions, nregions) || sw__intern_reset(&e->products, np))
        goto nomem;
    for (size_t i = 0; i < np; i++) {
        const struct sw_pool *p = &s->pools[i];
        struct pool_rt *r = &e->pools[i];
        r->price = p->price_gpu_h;
        r->rate = p->capacity == SW_CAP_OWNED ? 0 : p->interrupt_per_h;
        r->provision_s = p->provision_s;
        r->provision_h = p->provision_s / 3600.0;
        r->mem = p->gpu_mem_gb;
        r->cluster = idx->pool_cluster[i];
        r->region = sw__intern_add(&e->regions, p->region);
        r->product = sw__intern_add(&e->products, p->product);
        r->flavour = idx->pool_flavour[i];
        r->queue = -1;
        r->total = p->total_gpus;
        r->max = p->max_gpus;
        r->free = p->free_gpus;
        r->room = p->max_gpus - p->total_gpus;
        r->cap_wait_s = p->capacity_wait_s;
        r->ic = p->interconnect;
        r->cap = p->capacity;
    }
    if (e->products.n > 64)
        return sw_error_set(err, SW_EUNSUPPORTED,
                            "snapshot: %zu distinct GPU products; at most 64 are supported",
                            e->products.n);
    for (size_t i = 0; i < s->n_links; i++) {
        sw__intern_add(&e->regions, s->links[i].from);
        sw__intern_add(&e->regions, s->links[i].to);
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
        size_t a = (size_t)sw__intern_find(&e->regions, l->from);
        size_t b = (size_t)sw__intern_find(&e->regions, l->to);
        if (a == b)
            continue;
        /* Several links for one pair: keep the cheapest. */
        if (l->price_per_gb < e->link_price[a * R + b]) {
            e->link_price[a * R + b] = l->price_per_gb;
            e->link_spg[a * R + b] = 8.0 / l->bandwidth_gbps;
        }
    }
    /* Teams, quotas and budgets: validation interned the teams. */
    size_t T = idx->teams.n, F = idx->flavours.n;
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
        size_t t = (size_t)sw__intern_find(&idx->teams, s->quotas[i].team);
        int f = sw__intern_find(&idx->flavours, s->quotas[i].flavour);
        e->team_has_quota[t] = true;
        if (f >= 0)
            e->team_quota[t * F + (size_t)f] = (int)i;
    }
    for (size_t i = 0; i < s->n_budgets; i++) {
        size_t t = (size_t)sw__intern_find(&idx->teams, s->budgets[i].team);
        double left = s->budgets[i].cap - s->budgets[i].spent;
        e->budget_left[t] = left > 0 ? left : 0;
    }
    /* Local queues: running Jobs become releases, Jobs ahead are queued. */
    size_t scratch_need = 1;
    e->n_lqs = s->n_queues;
    for (size_t i = 0; i < s->n_queues; i++) {
        const struct sw_local_queue *lq = &s->queues[i];
        size_t pool = idx->queue_pool[i];
        struct lq *q = &e->lqs[i];
        size_t need = lq->n_running + lq->n_ahead + nw + 1;
        if (grow(&q->h, &q->cap, need, sizeof(*q->h)))
            goto nomem;
        q->n = 0;
        q->version++;
        q->cursor = s->now;
        q->free = s->pools[pool].free_gpus;
        q->total = s->pools[pool].total_gpus;
        e->pools[pool].queue = (int)i;
        for (size_t j = 0; j < lq->n_running; j++)
            heap_push(q,
                      (struct release){s->now + lq->running[j].remaining_s, lq->running[j].gpus});
        if (need > scratch_need)
            scratch_need = need;
    }
    if (grow(&e->scratch, &e->scratch_cap, scratch_need, sizeof(*e->scratch)) ||
        grow(&e->peek, &e->peek_cap, scratch_need + 2, sizeof(*e->peek)) ||
        grow(&e->hist, &e->hist_cap, s->n_history + 1, sizeof(double)))
        goto nomem;
    size_t rows = explain ? nw : 1;
    if (rows * np + 1 > e->opts_cap &&
        grow(&e->opts, &e->opts_cap, rows * np + 1, sizeof(*e->opts)))
        goto nomem;
    /* Pool sets: all, spot, capacity levels, per product, per cluster, per
     * team with quotas, and scratch sets for one workload. */
    size_t W = (np + 63) / 64, P = e->products.n, C = idx->clusters.n;
    size_t nsets = 2 + CAP_LEVELS + P + C + T + 4 + 3 * SET_CACHE;
    if (grow(&e->sets, &e->sets_cap, nsets * W + 1, sizeof(*e->sets)))
        goto nomem;
    e->np = np;
    e->words = W;
    memset(e->sets, 0, nsets * W * sizeof(*e->sets));
    uint64_t *next = e->sets;
    e->set_all = next, next += W;
    e->set_spot = next, next += W;
    e->set_cap = next, next += CAP_LEVELS * W;
    e->set_prod = next, next += P * W;
    e->set_cluster = next, next += C * W;
    e->set_team = next, next += T * W;
    e->set_cand = next, next += 4 * W;
    e->set_mem = next, next += SET_CACHE * W;
    e->set_ic = next, next += SET_CACHE * W;
    e->set_price = next;
    memset(&e->mem_cache, 0, sizeof(e->mem_cache));
    memset(&e->ic_cache, 0, sizeof(e->ic_cache));
    memset(&e->price_cache, 0, sizeof(e->price_cache));
    if (grow(&e->rank_pool, &e->rank_pool_cap, np + 1, sizeof(size_t)) ||
        grow(&e->pool_rank, &e->pool_rank_cap, np + 1, sizeof(size_t)))
        goto nomem;
    for (size_t i = 0; i < np; i++)
        e->rank_pool[i] = i;
    sort_by_price(e->pools, e->rank_pool, np);
    for (size_t r = 0; r < np; r++)
        e->pool_rank[e->rank_pool[r]] = r;
    for (size_t i = 0; i < np; i++) {
        const struct pool_rt *r = &e->pools[i];
        size_t bit = e->pool_rank[i];
        set_bit(e->set_all, bit);
        if (r->cap == SW_CAP_SPOT)
            set_bit(e->set_spot, bit);
        int hint = cap_hint(r);
        for (int b = 0; b < CAP_LEVELS && ((int64_t)1 << b) <= hint; b++)
            set_bit(e->set_cap + (size_t)b * W, bit);
        set_bit(e->set_prod + (size_t)r->product * W, bit);
        set_bit(e->set_cluster + (size_t)r->cluster * W, bit);
        for (size_t t = 0; t < T; t++)
            if (e->team_has_quota[t] && e->team_quota[t * F + (size_t)r->flavour] >= 0)
                set_bit(e->set_team + t * W, bit);
    }
    /* The decision order. */
    for (size_t i = 0; i < nw; i++) {
        if (i + 8 < nw) {
            __builtin_prefetch(&s->pending[i + 8].prio);
            __builtin_prefetch(&s->pending[i + 8].submit_time);
        }
        e->order[i].prio = SW_PRIO_PRODUCTION - (unsigned)s->pending[i].prio;
        e->order[i].submit = order_bits(s->pending[i].submit_time);
        e->order[i].idx = i;
    }
    sort_order(e, e->order, e->order_tmp, nw, s->pending);
    return 0;
nomem:
    return sw_error_set(err, SW_ENOMEM,
                        "placement engine: out of memory for %zu workloads x %zu pools", nw, np);
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

/* When `gpus` GPUs could start on queue `q`, at the earliest `now`.
 * With `commit`, the Job is queued and holds the GPUs until `start + hold`. */
static double lq_start(struct sw_engine *e, struct lq *q, int gpus, double now, bool commit,
                       double hold)
{
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
            heap_push(q, e->scratch[i]);
        return t;
    }
    q->version++;
    q->cursor = t;
    q->free = free - gpus;
    heap_push(q, (struct release){t + hold, gpus});
    return t;
}

/* Everything about one workload the option loop needs, resolved once. */
struct wctx {
    const struct sw_workload *w;
    int gpus;
    double runtime_s;    /* expected runtime over the estimate's distribution */
    double runtime_dl_s; /* its SW_DEADLINE_QUANTILE quantile, for deadlines */
    int out_region;      /* where outputs return (-1: none or unknown) */
    int origin;
    int team;
    uint64_t product_mask; /* 0: any product */
    bool product_unknown;  /* asked only for products no pool has */
    /* Hours, as the cost model takes them, and the work lost per
     * interruption (the same for every pool). */
    double rt_h, lost_h, lost_s;
    double delay_per_h; /* the policy's value of an hour of delay, for all GPUs */
    /* Region ids of the inputs' copies (-1: unknown), resolved on first use. */
    bool src_resolved;
    int src[SW_MAX_INPUTS][SW_MAX_INPUT_REGIONS];
};

/* Egress cost and transfer seconds of the workload's inputs into region `r`. */
ALWAYS_INLINE void egress_to(struct sw_engine *e, struct wctx *c, int r, double *cost, double *secs)
{
    const struct sw_workload *w = c->w;
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
    if (!c->src_resolved) {
        for (int k = 0; k < w->n_inputs; k++)
            for (int h = 0; h < w->inputs[k].n_regions; h++)
                c->src[k][h] = sw__intern_find(&e->regions, w->inputs[k].regions[h]);
        c->src_resolved = true;
    }
    size_t R = e->regions.n;
    double cs = 0, t = 0;
    for (int k = 0; k < w->n_inputs; k++) {
        const struct sw_input *in = &w->inputs[k];
        if (in->n_regions == 0 || in->size_gb == 0)
            continue; /* nothing to move */
        double best = INFINITY, best_t = INFINITY;
        for (int h = 0; h < in->n_regions; h++) {
            int src = c->src[k][h];
            if (src < 0)
                continue;
            double price = e->link_price[(size_t)src * R + (size_t)r];
            double spg = e->link_spg[(size_t)src * R + (size_t)r];
            if (price < best || (price == best && spg < best_t)) {
                best = price;
                best_t = spg;
            }
        }
        cs += best * in->size_gb;
        t += best_t * in->size_gb;
    }
    e->eg_cost[r] = cs;
    e->eg_time[r] = t;
    e->eg_stamp[r] = e->stamp;
    *cost = cs;
    *secs = t;
}

/* Only the fields an excluded option shows are set up front: clearing the
 * whole struct for a million options costs more than evaluating them. */
static inline void option_init(const struct sw_engine *e, const struct wctx *c, size_t pi,
                               struct sw_option *o)
{
    o->pool = (int)pi;
    o->stay = e->pools[pi].cluster == c->origin;
    o->deadline_ok = true;
    o->detail = 0;
    o->borrowed = 0;
    o->wait_s = 0;
    o->provision_s = 0;
    o->transfer_s = 0;
    o->score = 0;
    o->excluded = SW_EX_NONE;
}

/* The exclusions that depend only on the workload and the pool's fixed
 * attributes. The pool sets of workload_candidates() are exactly the pools
 * that pass these. */
static inline enum sw_exclusion fixed_exclusion(const struct sw_engine *e, const struct wctx *c,
                                                size_t pi, bool stay)
{
    const struct pool_rt *p = &e->pools[pi];
    const struct sw_workload *w = c->w;
    if (c->product_unknown || (c->product_mask && !(c->product_mask >> p->product & 1u)))
        return SW_EX_PRODUCT;
    if (p->mem < w->min_gpu_mem_gb)
        return SW_EX_GPU_MEMORY;
    if ((p->ic & w->interconnect) != w->interconnect)
        return SW_EX_INTERCONNECT;
    if (!stay && w->burst == SW_BURST_NEVER)
        return SW_EX_BURST_NEVER;
    if (w->prio == SW_PRIO_PRODUCTION && p->cap == SW_CAP_SPOT)
        return SW_EX_PRODUCTION_SPOT;
    if (w->no_spot && p->cap == SW_CAP_SPOT)
        return SW_EX_PREEMPTED;
    if (w->max_price > 0 && p->price > w->max_price)
        return SW_EX_MAX_PRICE;
    return SW_EX_NONE;
}

/* The rest of an option, for a pool that passed fixed_exclusion: capacity,
 * quota, egress, start, cost, deadline, budget and score. Works on locals
 * and stores the option once at the end: stores through `o` would
 * otherwise make the compiler reload every workload field after them. */
ALWAYS_INLINE void evaluate_rest(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                                 size_t pi, struct sw_option *o)
{
    const struct pool_rt *p = &e->pools[pi];
    const int gpus = c->gpus, team = c->team;
    const double now = s->now, runtime_s = c->runtime_s, deadline = c->w->deadline;
    int queue = o->stay ? p->queue : -1;
    if (gpus > (queue >= 0 ? p->total : p->max)) {
        o->excluded = SW_EX_NEVER_FITS;
        return;
    }
    /* Capacity first: late in a long queue most pools are full, and this
     * check is cheaper than quotas, egress and costs. */
    bool needs_provision = false;
    double cap_wait = 0;
    if (queue < 0 && gpus > p->free) {
        if (gpus > p->free + p->room) {
            o->excluded = SW_EX_CAPACITY;
            return;
        }
        needs_provision = true;
        /* Short spot capacity: the GPUs can be added only once it returns. */
        cap_wait = p->cap_wait_s;
    }
    int borrowed = 0;
    if (team >= 0 && e->team_has_quota[team]) {
        int qi = e->team_quota[(size_t)team * e->idx.flavours.n + (size_t)p->flavour];
        if (qi < 0) {
            o->excluded = SW_EX_QUOTA;
            o->detail = SW_QUOTA_NOMINAL;
            return;
        }
        enum sw_quota_verdict v = sw_quota_check(&e->qs[qi], e->qg, gpus, &borrowed);
        if (v != SW_QUOTA_OK) {
            o->excluded = SW_EX_QUOTA;
            o->detail = (int)v;
            return;
        }
    }
    double egress, transfer;
    egress_to(e, c, p->region, &egress, &transfer);
    if (!isfinite(egress)) {
        o->excluded = SW_EX_NO_ROUTE;
        o->borrowed = borrowed;
        return;
    }
    double start, wait_s = 0, provision_s = 0, provision_h = 0;
    if (queue >= 0) {
        double t = lq_start(e, &e->lqs[queue], gpus, now, false, 0);
        if (!isfinite(t)) {
            o->excluded = SW_EX_NEVER_FITS;
            o->borrowed = borrowed;
            o->transfer_s = transfer;
            return;
        }
        start = t > now + transfer ? t : now + transfer;
        wait_s = start - now;
    } else if (needs_provision) {
        provision_s = p->provision_s;
        provision_h = p->provision_h;
        wait_s = cap_wait;
        start = now + (transfer > cap_wait ? transfer : cap_wait) + p->provision_s;
    } else {
        start = now + transfer;
    }
    /* Outputs return to their region after the run: their egress is paid
     * and their transfer is part of the completion time. */
    double out_s = 0;
    if (c->w->output_gb > 0 && c->w->output_region[0] != '\0') {
        size_t R = e->regions.n;
        double price = c->out_region >= 0 && p->region >= 0
                           ? e->link_price[(size_t)p->region * R + (size_t)c->out_region]
                           : INFINITY;
        if (!isfinite(price)) {
            o->excluded = SW_EX_NO_ROUTE;
            o->borrowed = borrowed;
            return;
        }
        egress += price * c->w->output_gb;
        out_s = e->link_spg[(size_t)p->region * R + (size_t)c->out_region] * c->w->output_gb;
    }
    struct sw_cost_breakdown cost;
    sw_cost_option_lost(gpus, p->price, c->rt_h, provision_h, p->rate, c->lost_h, egress, &cost);
    double completion = start + runtime_s + cost.interruptions * c->lost_s + out_s;
    bool deadline_ok = true;
    if (deadline > 0) {
        /* A deadline-bound Job does not bet on luck: spot must meet the
         * deadline even with two standard deviations more interruptions
         * than expected, plus one. */
        double n = cost.interruptions;
        double pessimistic = n > 0 ? n + 2.0 * sqrt(n) + 1.0 : 0;
        deadline_ok = start + c->runtime_dl_s + pessimistic * c->lost_s + out_s <= deadline;
    }
    o->borrowed = borrowed;
    o->transfer_s = transfer;
    o->wait_s = wait_s;
    o->provision_s = provision_s;
    o->start = start;
    o->cost = cost;
    o->completion = completion;
    o->deadline_ok = deadline_ok;
    if (team >= 0) {
        double charge = p->cap == SW_CAP_OWNED ? egress : cost.total;
        if (charge > e->budget_left[team]) {
            o->excluded = SW_EX_BUDGET;
            return;
        }
    }
    double delay_h = (completion - now - runtime_s) / 3600.0;
    o->score = cost.total + c->delay_per_h * delay_h;
}

/* One option, with every exclusion in order (for explanations). */
static void evaluate(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c, size_t pi,
                     struct sw_option *o)
{
    option_init(e, c, pi, o);
    o->excluded = fixed_exclusion(e, c, pi, o->stay);
    if (o->excluded == SW_EX_NONE)
        evaluate_rest(e, s, c, pi, o);
}

/* The pools whose attributes satisfy `pred` for value `key`, from a small
 * cache of sets: most queues ask a handful of distinct values. */
static const uint64_t *cached_set(struct sw_engine *e, struct set_cache *cache, uint64_t *sets,
                                  double key, bool (*pred)(const struct pool_rt *, double))
{
    size_t W = e->words;
    for (unsigned k = 0; k < SET_CACHE; k++)
        if (cache->used[k] && cache->key[k] == key)
            return sets + k * W;
    unsigned k = cache->next++ % SET_CACHE;
    uint64_t *set = sets + k * W;
    memset(set, 0, W * sizeof(*set));
    for (size_t i = 0; i < e->np; i++)
        if (pred(&e->pools[i], key))
            set_bit(set, e->pool_rank[i]);
    cache->key[k] = key;
    cache->used[k] = true;
    return set;
}

static bool has_memory(const struct pool_rt *p, double min)
{
    return !(p->mem < min);
}

static bool has_interconnect(const struct pool_rt *p, double flags)
{
    unsigned f = (unsigned)flags;
    return (p->ic & f) == f;
}

static bool within_price(const struct pool_rt *p, double max)
{
    return !(p->price > max);
}

/* The pools worth evaluating for a workload: exactly those that pass
 * fixed_exclusion and have a quota flavour for its team, narrowed by the
 * capacity level of its size (a superset of those with room). Returns the
 * set (e->words words). */
static const uint64_t *workload_candidates(struct sw_engine *e, const struct wctx *c)
{
    const struct sw_workload *w = c->w;
    size_t W = e->words;
    uint64_t *cand = e->set_cand;
    if (c->product_unknown) {
        memset(cand, 0, W * sizeof(*cand));
        return cand;
    }
    int level = 0;
    while (level + 1 < CAP_LEVELS && ((int64_t)1 << (level + 1)) <= c->gpus)
        level++;
    memcpy(cand, e->set_cap + (size_t)level * W, W * sizeof(*cand));
    if (c->product_mask) {
        uint64_t *any = e->set_cand + W;
        memset(any, 0, W * sizeof(*any));
        for (uint64_t m = c->product_mask; m; m &= m - 1) {
            const uint64_t *ps = e->set_prod + (size_t)__builtin_ctzll(m) * W;
            for (size_t k = 0; k < W; k++)
                any[k] |= ps[k];
        }
        for (size_t k = 0; k < W; k++)
            cand[k] &= any[k];
    }
    const uint64_t *narrow[6];
    int nn = 0;
    if (w->min_gpu_mem_gb > 0)
        narrow[nn++] = cached_set(e, &e->mem_cache, e->set_mem, w->min_gpu_mem_gb, has_memory);
    if (w->interconnect != 0)
        narrow[nn++] =
            cached_set(e, &e->ic_cache, e->set_ic, (double)w->interconnect, has_interconnect);
    if (w->max_price > 0)
        narrow[nn++] = cached_set(e, &e->price_cache, e->set_price, w->max_price, within_price);
    if (w->burst == SW_BURST_NEVER)
        narrow[nn++] = e->set_cluster + (size_t)c->origin * W;
    if (c->team >= 0 && e->team_has_quota[c->team])
        narrow[nn++] = e->set_team + (size_t)c->team * W;
    for (int j = 0; j < nn; j++)
        for (size_t k = 0; k < W; k++)
            cand[k] &= narrow[j][k];
    if (w->prio == SW_PRIO_PRODUCTION || w->no_spot)
        for (size_t k = 0; k < W; k++)
            cand[k] &= ~e->set_spot[k];
    return cand;
}

/* Whether option a beats b on `key` (lower), ties to staying, then pool order. */
ALWAYS_INLINE bool better(const struct sw_option *a, double ka, const struct sw_option *b,
                          double kb)
{
    if (ka != kb)
        return ka < kb;
    if (a->stay != b->stay)
        return a->stay;
    return a->pool < b->pool;
}

enum pick_key { KEY_SCORE, KEY_COST, KEY_COMPLETION, KEY_LIST_PRICE };

ALWAYS_INLINE double key_of(const struct sw_snapshot *s, const struct sw_option *o, enum pick_key k)
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
    F_NOW,       /* starts now: no queue, no wait for spot capacity */
    F_DEADLINE,  /* meets the deadline */
    F_CLOUD_DEADLINE,
};

ALWAYS_INLINE bool passes(const struct sw_snapshot *s, const struct sw_option *o,
                          enum pick_filter f)
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
        return o->wait_s <= 0;
    case F_DEADLINE:
        return o->deadline_ok;
    case F_CLOUD_DEADLINE:
        return !o->stay && o->deadline_ok;
    }
    return false;
}

ALWAYS_INLINE int pick(const struct sw_snapshot *s, const struct sw_option *opts, size_t n,
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

static double pending_since(const struct sw_workload *w)
{
    return w->pending_since > w->submit_time ? w->pending_since : w->submit_time;
}

/* Uniform Progress' test: a Job without a deadline always keeps up; one
 * with a deadline keeps up on spot option `o` while it would finish by the
 * deadline at the runtime's deadline quantile after the pessimistic number
 * of interruptions plus `margin` more. */
static bool spot_keeps_up(const struct wctx *c, const struct sw_option *o, double margin)
{
    if (c->w->deadline <= 0)
        return true;
    double n = o->cost.interruptions;
    double pessimistic = (n > 0 ? n + 2.0 * sqrt(n) + 1.0 : 0) + margin;
    return o->start + c->runtime_dl_s + pessimistic * c->lost_s <= c->w->deadline;
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
        /* A Job that has waited its bound completes first, whatever the cost. */
        if (s->now - pending_since(w) >= pol->max_wait_s) {
            d->why = SW_WHY_WAIT_EXHAUSTED;
            return pick(s, opts, n, F_ANY, KEY_COMPLETION);
        }
        d->why = SW_WHY_LOWEST_SCORE;
        k = pick(s, opts, n, F_DEADLINE, KEY_SCORE);
        if (k >= 0) {
            /* Staying is decided again when the bound is reached. */
            if (opts[k].wait_s > 0 && isfinite(pol->max_wait_s))
                d->recheck_at = pending_since(w) + pol->max_wait_s;
            return k;
        }
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
        /* Production may not use spot, nor a Job preempted too often; they
         * fall back to on-demand. */
        k = pick(s, opts, n, w->prio == SW_PRIO_PRODUCTION || w->no_spot ? F_ON_DEMAND : F_SPOT,
                 KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_CHEAPEST;
            return k;
        }
        d->why = SW_WHY_NO_CLOUD;
        return pick(s, opts, n, F_STAY, KEY_COMPLETION);
    case SW_POLICY_UNIFORM_PROGRESS:
        k = pick(s, opts, n, F_STAY_NOW, KEY_COST);
        if (k >= 0) {
            d->why = SW_WHY_FITS_NOW;
            return k;
        }
        if (w->prio != SW_PRIO_PRODUCTION) {
            k = pick(s, opts, n, F_SPOT, KEY_COST);
            if (k >= 0 && spot_keeps_up(c, &opts[k], pol->up_margin)) {
                d->why = SW_WHY_CHEAPEST;
                return k;
            }
        }
        k = pick(s, opts, n, F_ON_DEMAND, KEY_COST);
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
    struct pool_rt *p = &e->pools[pi];
    int queue = o->stay ? p->queue : -1;
    if (queue >= 0) {
        double hold = o->completion - o->start;
        lq_start(e, &e->lqs[queue], c->gpus, s->now, true, hold);
    } else {
        int old = cap_hint(p);
        if (c->gpus <= p->free) {
            p->free -= c->gpus;
        } else {
            p->room -= c->gpus - p->free;
            p->free = 0;
        }
        cap_levels_update(e, pi, old);
    }
    if (c->team >= 0) {
        if (e->team_has_quota[c->team]) {
            int qi = e->team_quota[(size_t)c->team * e->idx.flavours.n + (size_t)p->flavour];
            sw_quota_charge(&e->qs[qi], e->qg, c->gpus);
        }
        e->budget_left[c->team] -= p->cap == SW_CAP_OWNED ? o->cost.egress_cost : o->cost.total;
    }
}

/* When the rest of the candidates cannot matter. Candidates come cheapest
 * list price first, and no option costs less than its GPUs at list price
 * for the runtime (provisioning, interruptions, egress and the value of
 * delay only add), so once that floor is above what the policy would pick
 * already, every later pool is worse:
 *   cost-aware: the lowest score among options that meet the deadline;
 *   greedy: the lowest list price among options that start now.
 * Other policies, and cloud-first workloads, weigh every candidate. */
struct cutoff {
    enum { CUT_NONE, CUT_SCORE, CUT_PRICE } kind;
    double best;   /* what the policy would pick so far (INFINITY: nothing) */
    double margin; /* rounding slack, so that a pool is cut only when it is
                    * strictly worse, never on a tie */
};

static void cutoff_init(const struct sw_snapshot *s, const struct sw_policy *pol,
                        const struct wctx *c, struct cutoff *cut)
{
    cut->kind = CUT_NONE;
    cut->best = INFINITY;
    cut->margin = 0;
    if (c->w->burst == SW_BURST_CLOUD_FIRST)
        return;
    if (pol->kind == SW_POLICY_COST_AWARE && s->now - pending_since(c->w) >= pol->max_wait_s)
        return; /* it takes the earliest completion: every candidate counts */
    if (pol->kind == SW_POLICY_COST_AWARE && isfinite(c->delay_per_h)) {
        /* The delay of an option is completion - now - runtime, computed
         * with a few roundings of now + runtime; the floors, with a few
         * roundings of their own size. The margin (this, plus a billionth of
         * the figures compared) is a million times wider than both. */
        cut->kind = CUT_SCORE;
        cut->margin = c->delay_per_h * (fabs(s->now) + c->runtime_s + 1.0) * 1e-9 / 3600.0;
    } else if (pol->kind == SW_POLICY_GREEDY && c->w->burst != SW_BURST_NEVER) {
        cut->kind = CUT_PRICE;
    }
}

/* A floor under the score of workload `c` on pool `p`, whose run costs
 * `run`: the score adds provisioning, interruptions and egress to the run,
 * and the value of a delay at least as long as moving the inputs (and
 * provisioning, when the pool has too few idle GPUs). The sums are made in
 * the order evaluate_rest makes them, so the floor never exceeds the score
 * but by rounding in the delay, which the cutoff's margin covers. */
static double score_floor(struct sw_engine *e, struct wctx *c, const struct pool_rt *p, double run)
{
    double egress, transfer;
    egress_to(e, c, p->region, &egress, &transfer);
    if (!isfinite(egress))
        return INFINITY; /* no route: the option is excluded anyway */
    bool queued = p->queue >= 0 && p->cluster == c->origin;
    double provision = 0, provision_s = 0;
    if (!queued && c->gpus > p->free) {
        provision = (double)c->gpus * p->price * p->provision_h;
        provision_s = p->provision_s;
    }
    double delay_h = (transfer + provision_s) / 3600.0;
    return run + provision + egress + c->delay_per_h * delay_h;
}

/* Evaluates the candidate pools of `cand` into `opts`, cheapest first, and
 * keeps the eligible ones. Returns how many. */
static size_t evaluate_candidates(struct sw_engine *e, const struct sw_snapshot *s, struct wctx *c,
                                  const struct sw_policy *pol, const uint64_t *cand,
                                  struct sw_option *opts)
{
    struct cutoff cut;
    cutoff_init(s, pol, c, &cut);
    size_t n = 0;
    for (size_t k = 0; k < e->words; k++)
        for (uint64_t m = cand[k]; m; m &= m - 1) {
            size_t pi = e->rank_pool[k * 64 + (size_t)__builtin_ctzll(m)];
            const struct pool_rt *p = &e->pools[pi];
            double price = p->price;
            if (cut.kind == CUT_SCORE && isfinite(cut.best)) {
                double run = (double)c->gpus * price * c->rt_h;
                if (run > cut.best + cut.margin + 1e-9 * (run + fabs(cut.best)))
                    return n; /* and every later pool */
                double floor = score_floor(e, c, p, run);
                if (floor > cut.best + cut.margin + 1e-9 * (floor + fabs(cut.best)))
                    continue;
            }
            if (cut.kind == CUT_PRICE && price > cut.best)
                return n;
            struct sw_option *o = &opts[n];
            option_init(e, c, pi, o);
            evaluate_rest(e, s, c, pi, o);
            if (o->excluded != SW_EX_NONE)
                continue;
            n++;
            if (cut.kind == CUT_SCORE && o->deadline_ok && o->score < cut.best)
                cut.best = o->score;
            if (cut.kind == CUT_PRICE && o->wait_s <= 0 && price < cut.best)
                cut.best = price;
        }
    return n;
}

/* The queue is decided in priority order, which jumps around the pending
 * array: each workload is a kilobyte (mostly fixed-size names), so without
 * help every decision starts with a string of cache misses. Asking for the
 * lines a decision reads a few workloads ahead hides them. */
#define PREFETCH_AHEAD 4

int sw_engine_decide(struct sw_engine *e, const struct sw_snapshot *s,
                     const struct sw_policy *policy, unsigned flags, struct sw_decision *out,
                     struct sw_error *err)
{
    if (e == NULL || policy == NULL || (s != NULL && s->n_pending > 0 && out == NULL))
        return sw_error_set(err, SW_EINVAL, "placement engine: NULL argument");
    if ((unsigned)policy->kind >= SW_POLICY__COUNT)
        return sw_error_set(err, SW_EINVAL, "policy: unknown kind %d", (int)policy->kind);
    if (!policy_params_ok(policy))
        return sw_error_set(err, SW_ERANGE,
                            "policy \"%s\": parameters must be finite and non-negative, delay "
                            "value up to %g, wait up to %g s, k up to %g",
                            sw_policy_name(policy->kind), SW_MAX_PRICE, SW_MAX_SECONDS,
                            POLICY_MAX_K);
    int rc = sw__snapshot_validate_index(s, &e->idx, err);
    if (rc != 0)
        return rc;
    bool explain = flags & SW_DECIDE_EXPLAIN;
    if ((rc = prepare(e, s, explain, err)) != 0)
        return rc;
    const double delay_value = sw_policy_delay_value(policy, s);
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
        if (rank + PREFETCH_AHEAD < s->n_pending) {
            size_t ahead = e->order[rank + PREFETCH_AHEAD].idx;
            sw__prefetch_workload(&s->pending[ahead]);
            for (size_t off = 0; off < sizeof(*out); off += 64)
                __builtin_prefetch((const char *)&out[ahead] + off, 1);
        }
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
        /* The estimate is a log-normal belief around its median: costs and
         * completion use its mean (the expected cost, as cost is linear in
         * runtime), deadlines a high quantile. */
        double median = c.runtime_s, sg = w->runtime_sigma;
        c.runtime_s = fmin(median * exp(sg * sg / 2.0), SW_MAX_SECONDS);
        c.runtime_dl_s = fmin(median * exp(SW_DEADLINE_Z * sg), SW_MAX_SECONDS);
        c.out_region = w->output_region[0] ? sw__intern_find(&e->regions, w->output_region) : -1;
        d->runtime_s = c.runtime_s;
        c.origin = e->idx.work_origin[wi];
        c.team = e->idx.work_team[wi];
        for (int k = 0; k < w->n_products; k++) {
            int id = sw__intern_find(&e->products, w->products[k]);
            if (id >= 0)
                c.product_mask |= (uint64_t)1 << id;
        }
        c.product_unknown = w->n_products > 0 && c.product_mask == 0;
        c.rt_h = c.runtime_s / 3600.0;
        c.lost_h = sw_cost_lost_hours(w->checkpoint_s / 3600.0, w->restart_s / 3600.0, c.rt_h);
        c.lost_s = c.lost_h * 3600.0;
        c.delay_per_h = delay_value * c.gpus;
        e->stamp++;
        size_t n = np;
        if (explain) {
            for (size_t pi = 0; pi < np; pi++)
                evaluate(e, s, &c, pi, &opts[pi]);
        } else {
            /* Without explanations only eligible options matter: evaluate
             * the candidate pools and choose among those that pass. */
            n = evaluate_candidates(e, s, &c, policy, workload_candidates(e, &c), opts);
        }
        int k = choose(s, policy, &c, opts, n, d);
        if (k < 0) {
            if (!explain) {
                /* A rejection names its commonest exclusion: weigh every
                 * pool as an explanation would (and as the policy would
                 * mark them), which changes nothing else. */
                for (size_t pi = 0; pi < np; pi++)
                    evaluate(e, s, &c, pi, &opts[pi]);
                struct sw_decision again = *d;
                int k2 = choose(s, policy, &c, opts, np, &again);
                sw_assert(k2 < 0);
                n = np;
            }
            d->verdict = SW_VERDICT_REJECT;
            d->why = SW_WHY_NO_OPTION;
            d->main_exclusion = main_exclusion(opts, n);
            continue;
        }
        d->chosen = opts[k];
        d->pool = opts[k].pool;
        d->verdict = opts[k].stay ? SW_VERDICT_STAY : SW_VERDICT_BURST;
        commit(e, s, &c, &opts[k]);
    }
    return 0;
}
