/*
 * model.c - names of the model's enums and validation of a snapshot.
 *
 * Validation happens once at the engine's door so that the decision loop
 * can trust every number: a NaN price would otherwise compare false against
 * everything and silently win or lose every comparison. Names are checked
 * through the hash tables of placement/index.h, so a snapshot of n objects
 * validates in O(n), not O(n^2).
 */
#include "placement/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "placement/index.h"

static const char *const capacity_names[] = {"owned", "on-demand", "spot"};
static const char *const burst_names[] = {"never", "auto", "cloud-first"};
static const char *const prio_names[] = {"best-effort", "development", "training", "production"};

const char *sw_capacity_name(enum sw_capacity c)
{
    return (unsigned)c < 3 ? capacity_names[c] : "unknown";
}

const char *sw_burst_mode_name(enum sw_burst_mode m)
{
    return (unsigned)m < 3 ? burst_names[m] : "unknown";
}

const char *sw_priority_name(enum sw_priority_class p)
{
    return (unsigned)p < 4 ? prio_names[p] : "unknown";
}

static int parse_name(const char *s, const char *const *names, int n)
{
    if (s == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int sw_capacity_parse(const char *s, enum sw_capacity *out)
{
    int i = parse_name(s, capacity_names, 3);
    if (i < 0)
        return SW_EINVAL;
    *out = (enum sw_capacity)i;
    return 0;
}

int sw_burst_mode_parse(const char *s, enum sw_burst_mode *out)
{
    int i = parse_name(s, burst_names, 3);
    if (i < 0)
        return SW_EINVAL;
    *out = (enum sw_burst_mode)i;
    return 0;
}

int sw_priority_parse(const char *s, enum sw_priority_class *out)
{
    int i = parse_name(s, prio_names, 4);
    if (i < 0)
        return SW_EINVAL;
    *out = (enum sw_priority_class)i;
    return 0;
}

int sw_name_set(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) {
        memcpy(dst, src, cap - 1);
        dst[cap - 1] = '\0';
        return SW_ETOOBIG;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

/* A number a person can read in an error, including nan and inf. */
static int bad_number(struct sw_error *err, const char *kind, const char *name, const char *field,
                      double v)
{
    return sw_error_set(err, SW_EINVAL,
                        "%s \"%s\": field \"%s\": expected a finite non-negative number, got %g",
                        kind, name, field, v);
}

/* A number past its SW_MAX_* bound. */
static int too_big(struct sw_error *err, const char *kind, const char *name, const char *field,
                   double v, double max)
{
    return sw_error_set(err, SW_ERANGE, "%s \"%s\": field \"%s\": %g is out of range (at most %g)",
                        kind, name, field, v, max);
}

static __attribute__((noinline, cold)) int num_error(struct sw_error *err, const char *kind,
                                                     const char *name, const char *field, double v,
                                                     double max)
{
    if (!isfinite(v) || v < 0)
        return bad_number(err, kind, name, field, v);
    return too_big(err, kind, name, field, v, max);
}

/* The checks are inline and their errors out of line: a snapshot checks
 * ten numbers per workload before every decision. */
static inline int check_num(struct sw_error *err, const char *kind, const char *name,
                            const char *field, double v, double max)
{
    if (isfinite(v) && v >= 0 && v <= max)
        return 0;
    return num_error(err, kind, name, field, v, max);
}

static __attribute__((noinline, cold)) int time_error(struct sw_error *err, const char *kind,
                                                      const char *name, const char *field, double v)
{
    if (!isfinite(v))
        return bad_number(err, kind, name, field, v);
    return too_big(err, kind, name, field, v, SW_MAX_SECONDS);
}

/* A time that may be negative (an axis the caller chose) but is bounded. */
static inline int check_time(struct sw_error *err, const char *kind, const char *name,
                             const char *field, double v)
{
    if (isfinite(v) && fabs(v) <= SW_MAX_SECONDS)
        return 0;
    return time_error(err, kind, name, field, v);
}

static int check_pos_int(struct sw_error *err, const char *kind, const char *name,
                         const char *field, int v)
{
    if (v <= 0)
        return sw_error_set(err, SW_EINVAL,
                            "%s \"%s\": field \"%s\": expected a positive integer, got %d", kind,
                            name, field, v);
    return 0;
}

static int check_nonneg_int(struct sw_error *err, const char *kind, const char *name,
                            const char *field, int v)
{
    if (v < 0)
        return sw_error_set(err, SW_EINVAL,
                            "%s \"%s\": field \"%s\": expected a non-negative integer, got %d",
                            kind, name, field, v);
    return 0;
}

static int check_named(struct sw_error *err, const char *kind, size_t index, const char *name)
{
    if (name[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "%s #%zu: field \"name\" is empty", kind, index);
    return 0;
}

bool sw_mig_profile_valid(const char *profile)
{
    /* <compute slices>g.<memory>gb, then optional "+" attributes ("+me"):
     * lowercase letters, digits, '.', '+' and '-'. */
    size_t n = strnlen(profile, SW_MIG_PROFILE_MAX);
    if (n == 0 || n >= SW_MIG_PROFILE_MAX || profile[0] < '1' || profile[0] > '9')
        return false;
    const char *g = strchr(profile, 'g');
    if (g == NULL || g[1] != '.')
        return false;
    for (const char *c = profile; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '+' ||
              *c == '-'))
            return false;
    return true;
}

/* A pool's MIG offers: known-shape profiles, each once, with sane counts. */
static int validate_mig(const struct sw_pool *p, struct sw_error *err)
{
    if (p->n_mig < 0 || p->n_mig > SW_MAX_MIG)
        return sw_error_set(err, SW_EINVAL,
                            "pool \"%s\": field \"mig\": %d profiles, expected 0 to %d", p->name,
                            p->n_mig, SW_MAX_MIG);
    for (int k = 0; k < p->n_mig; k++) {
        const struct sw_mig_offer *m = &p->mig[k];
        if (!sw_mig_profile_valid(m->profile))
            return sw_error_set(err, SW_EINVAL,
                                "pool \"%s\": field \"mig\": profile \"%.*s\" is not a MIG "
                                "profile (expected e.g. 1g.10gb)",
                                p->name, SW_MIG_PROFILE_MAX, m->profile);
        for (int j = 0; j < k; j++)
            if (strcmp(p->mig[j].profile, m->profile) == 0)
                return sw_error_set(err, SW_EINVAL,
                                    "pool \"%s\": field \"mig\": profile \"%s\" listed twice",
                                    p->name, m->profile);
        if (m->per_gpu < 1 || m->per_gpu > SW_MIG_MAX_PER_GPU)
            return sw_error_set(err, SW_EINVAL,
                                "pool \"%s\": MIG profile \"%s\": field \"per_gpu\": expected 1 "
                                "to %d, got %d",
                                p->name, m->profile, SW_MIG_MAX_PER_GPU, m->per_gpu);
        if (m->total < 0 || m->free < 0 || m->free > m->total)
            return sw_error_set(err, SW_EINVAL,
                                "pool \"%s\": MIG profile \"%s\": %d free of %d slices, expected "
                                "0 <= free <= total",
                                p->name, m->profile, m->free, m->total);
        if (m->n_running > 0 && m->running == NULL)
            return sw_error_set(err, SW_EINVAL,
                                "pool \"%s\": MIG profile \"%s\": %zu running Jobs, none given",
                                p->name, m->profile, m->n_running);
        for (size_t r = 0; r < m->n_running; r++) {
            int rc =
                check_nonneg_int(err, "pool", p->name, "mig running slices", m->running[r].gpus);
            if (rc == 0)
                rc = check_num(err, "pool", p->name, "mig running remaining_s",
                               m->running[r].remaining_s, SW_MAX_SECONDS);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

static int validate_pool(const struct sw_snapshot *s, size_t i, struct sw__index *idx,
                         struct sw_error *err)
{
    const struct sw_pool *p = &s->pools[i];
    int rc;
    if ((rc = check_named(err, "pool", i, p->name)) != 0)
        return rc;
    if ((unsigned)p->capacity > SW_CAP_SPOT)
        return sw_error_set(err, SW_EINVAL, "pool \"%s\": field \"capacity\": unknown value %d",
                            p->name, (int)p->capacity);
    if ((rc = check_nonneg_int(err, "pool", p->name, "total_gpus", p->total_gpus)) != 0 ||
        (rc = check_nonneg_int(err, "pool", p->name, "free_gpus", p->free_gpus)) != 0 ||
        (rc = check_nonneg_int(err, "pool", p->name, "max_gpus", p->max_gpus)) != 0)
        return rc;
    if (p->free_gpus > p->total_gpus)
        return sw_error_set(err, SW_EINVAL,
                            "pool \"%s\": field \"free_gpus\": %d exceeds total_gpus %d", p->name,
                            p->free_gpus, p->total_gpus);
    if (p->max_gpus < p->total_gpus)
        return sw_error_set(err, SW_EINVAL,
                            "pool \"%s\": field \"max_gpus\": %d is below total_gpus %d", p->name,
                            p->max_gpus, p->total_gpus);
    if ((rc = check_num(err, "pool", p->name, "price_per_gpu_hour", p->price_gpu_h,
                        SW_MAX_PRICE)) != 0 ||
        (rc = check_num(err, "pool", p->name, "provision_seconds", p->provision_s,
                        SW_MAX_SECONDS)) != 0 ||
        (rc = check_num(err, "pool", p->name, "interruptions_per_hour", p->interrupt_per_h,
                        SW_MAX_INTERRUPTIONS)) != 0 ||
        (rc = check_num(err, "pool", p->name, "gpu_memory_gb", p->gpu_mem_gb, SW_MAX_GB)) != 0 ||
        (rc = check_num(err, "pool", p->name, "capacity_wait_seconds", p->capacity_wait_s,
                        SW_MAX_SECONDS)) != 0)
        return rc;
    if (p->n_capacity_wait_points < 0 || p->n_capacity_wait_points > SW_WAIT_POINTS)
        return sw_error_set(
            err, SW_EINVAL,
            "pool \"%s\": field \"capacity_wait_points\": %d points, expected 0 to %d", p->name,
            p->n_capacity_wait_points, SW_WAIT_POINTS);
    for (int k = 0; k < p->n_capacity_wait_points; k++) {
        double v = p->capacity_wait_points[k];
        if ((rc = check_num(err, "pool", p->name, "capacity_wait_points", v, SW_MAX_SECONDS)) != 0)
            return rc;
        if (k > 0 && v < p->capacity_wait_points[k - 1])
            return sw_error_set(err, SW_EINVAL,
                                "pool \"%s\": field \"capacity_wait_points\": not ascending at %d",
                                p->name, k);
    }
    if ((rc = validate_mig(p, err)) != 0)
        return rc;
    int j = sw__intern_add(&idx->pools, p->name);
    if ((size_t)j != i)
        return sw_error_set(err, SW_EINVAL, "pool \"%s\": duplicate name (pools #%d and #%zu)",
                            p->name, j, i);
    idx->pool_cluster[i] = sw__intern_add(&idx->clusters, p->cluster);
    idx->pool_flavour[i] = sw__intern_add(&idx->flavours, sw__pool_flavour(p));
    return 0;
}

static int validate_workload(const struct sw_snapshot *s, size_t i, struct sw__index *idx,
                             struct sw_error *err)
{
    const struct sw_workload *w = &s->pending[i];
    int rc;
    if ((rc = check_named(err, "workload", i, w->name)) != 0)
        return rc;
    if ((rc = check_pos_int(err, "workload", w->name, "pods", w->pods)) != 0 ||
        (rc = check_pos_int(err, "workload", w->name, "gpus_per_pod", w->gpus_per_pod)) != 0)
        return rc;
    if (w->pods > 100000 || w->gpus_per_pod > 1024)
        return sw_error_set(err, SW_ERANGE, "workload \"%s\": %d pods x %d GPUs is beyond any pool",
                            w->name, w->pods, w->gpus_per_pod);
    if (w->gpu_milli < 0 || w->gpu_milli > 1000)
        return sw_error_set(err, SW_EINVAL,
                            "workload \"%s\": field \"gpu_milli\": expected 0 to 1000, got %d",
                            w->name, w->gpu_milli);
    if (w->mig_profile[0] != '\0') {
        if (!sw_mig_profile_valid(w->mig_profile))
            return sw_error_set(err, SW_EINVAL,
                                "workload \"%s\": field \"mig_profile\": \"%.*s\" is not a MIG "
                                "profile (expected e.g. 1g.10gb)",
                                w->name, SW_MIG_PROFILE_MAX, w->mig_profile);
        if (w->gpu_milli != 0 && w->gpu_milli != 1000)
            return sw_error_set(err, SW_EINVAL,
                                "workload \"%s\": field \"gpu_milli\": a MIG slice (%s) is not "
                                "time-sliced, got %d",
                                w->name, w->mig_profile, w->gpu_milli);
    }
    if (w->gpu_milli > 0 && w->gpu_milli < 1000 && w->gpus_per_pod != 1)
        return sw_error_set(err, SW_EINVAL,
                            "workload \"%s\": field \"gpu_milli\": a share of a GPU (%d) needs "
                            "gpus_per_pod 1, got %d",
                            w->name, w->gpu_milli, w->gpus_per_pod);
    if ((unsigned)w->prio > SW_PRIO_PRODUCTION)
        return sw_error_set(err, SW_EINVAL, "workload \"%s\": field \"priority\": unknown value %d",
                            w->name, (int)w->prio);
    if ((unsigned)w->burst > SW_BURST_CLOUD_FIRST)
        return sw_error_set(err, SW_EINVAL, "workload \"%s\": field \"burst\": unknown value %d",
                            w->name, (int)w->burst);
    if (!isfinite(w->runtime_s))
        return bad_number(err, "workload", w->name, "runtime_seconds", w->runtime_s);
    if (w->runtime_s > SW_MAX_SECONDS)
        return too_big(err, "workload", w->name, "runtime_seconds", w->runtime_s, SW_MAX_SECONDS);
    if ((rc = check_num(err, "workload", w->name, "runtime_sigma", w->runtime_sigma,
                        SW_MAX_SIGMA)) != 0 ||
        (rc = check_num(err, "workload", w->name, "output_gb", w->output_gb, SW_MAX_GB)) != 0)
        return rc;
    if ((rc = check_num(err, "workload", w->name, "checkpoint_seconds", w->checkpoint_s,
                        SW_MAX_SECONDS)) != 0 ||
        (rc = check_num(err, "workload", w->name, "restart_seconds", w->restart_s,
                        SW_MAX_SECONDS)) != 0 ||
        (rc = check_time(err, "workload", w->name, "deadline", w->deadline)) != 0 ||
        (rc = check_num(err, "workload", w->name, "max_price_per_gpu_hour", w->max_price,
                        SW_MAX_PRICE)) != 0 ||
        (rc = check_num(err, "workload", w->name, "budget_reserve", w->budget_reserve,
                        SW_MAX_BUDGET_RESERVE)) != 0 ||
        (rc = check_num(err, "workload", w->name, "min_gpu_memory_gb", w->min_gpu_mem_gb,
                        SW_MAX_GB)) != 0)
        return rc;
    if ((rc = check_time(err, "workload", w->name, "pending_since", w->pending_since)) != 0)
        return rc;
    if ((rc = check_time(err, "workload", w->name, "submit_time", w->submit_time)) != 0)
        return rc;
    if (w->n_products < 0 || w->n_products > SW_MAX_PRODUCTS)
        return sw_error_set(err, SW_EINVAL,
                            "workload \"%s\": field \"products\": expected 0 to %d, got %d",
                            w->name, SW_MAX_PRODUCTS, w->n_products);
    if (w->n_inputs < 0 || w->n_inputs > SW_MAX_INPUTS)
        return sw_error_set(err, SW_EINVAL,
                            "workload \"%s\": field \"inputs\": expected 0 to %d, got %d", w->name,
                            SW_MAX_INPUTS, w->n_inputs);
    for (int k = 0; k < w->n_inputs; k++) {
        const struct sw_input *in = &w->inputs[k];
        if (!isfinite(in->size_gb) || in->size_gb < 0 || in->size_gb > SW_MAX_GB)
            return sw_error_set(err, SW_EINVAL,
                                "workload \"%s\": field \"inputs[%d].size_gb\": expected a number "
                                "from 0 to %g, got %g",
                                w->name, k, SW_MAX_GB, in->size_gb);
        if (in->n_regions < 0 || in->n_regions > SW_MAX_INPUT_REGIONS)
            return sw_error_set(err, SW_EINVAL,
                                "workload \"%s\": field \"inputs[%d].regions\": expected 0 to %d "
                                "regions, got %d",
                                w->name, k, SW_MAX_INPUT_REGIONS, in->n_regions);
    }
    /* The engine decides with these ids; finding them here saves it a
     * lookup per workload. */
    idx->work_team[i] = sw__intern_find(&idx->teams, w->team);
    /* An origin with no pool in the snapshot (its cluster is lost, say):
     * -1, no home option. */
    idx->work_origin[i] = sw__intern_find(&idx->clusters, w->origin);
    if (w->n_queue_pools < 0 || w->n_queue_pools > SW_MAX_QUEUE_POOLS)
        return sw_error_set(err, SW_EINVAL,
                            "workload \"%s\": field \"queue_pools\": expected 0 to %d, got %d",
                            w->name, SW_MAX_QUEUE_POOLS, w->n_queue_pools);
    for (int k = 0; k < w->n_queue_pools; k++) {
        int qp = sw__intern_find(&idx->pools, w->queue_pools[k]);
        if (qp < 0)
            return sw_error_set(
                err, SW_EINVAL,
                "workload \"%s\": field \"queue_pools[%d]\": no pool named \"%.*s\"", w->name, k,
                SW_NAME_MAX, w->queue_pools[k]);
        if (!s->pools[qp].queue_only)
            return sw_error_set(err, SW_EINVAL,
                                "workload \"%s\": field \"queue_pools[%d]\": pool \"%s\" is not "
                                "a queue's (queue_only)",
                                w->name, k, s->pools[qp].name);
        idx->work_queues[i * SW_MAX_QUEUE_POOLS + (size_t)k] = qp;
    }
    return 0;
}

/* (team, flavour) pairs: open addressing over 64-bit keys, UINT64_MAX empty. */
static bool pair_insert(struct sw__index *idx, uint64_t key)
{
    size_t mask = idx->pair_cap - 1;
    for (size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & mask;; i = (i + 1) & mask) {
        if (idx->pairs[i] == UINT64_MAX) {
            idx->pairs[i] = key;
            return true;
        }
        if (idx->pairs[i] == key)
            return false;
    }
}

/* Grows *pp to at least `need` elements of `size` bytes (doubling, so that
 * a queue that grows a little at a time reallocates rarely). */
static int grow(void *pp, size_t *cap, size_t need, size_t size)
{
    void **p = pp;
    if (need <= *cap)
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

/* Sizes the tables of `idx` for `s`. */
static int index_reset(const struct sw_snapshot *s, struct sw__index *idx)
{
    size_t np = s->n_pools;
    if (sw__intern_reset(&idx->pools, np) != 0 || sw__intern_reset(&idx->clusters, np) != 0 ||
        sw__intern_reset(&idx->flavours, np) != 0 ||
        sw__intern_reset(&idx->teams, s->n_quotas + s->n_budgets) != 0)
        return SW_ENOMEM;
    if (grow(&idx->pool_cluster, &idx->pool_cluster_cap, np + 1, sizeof(int)) != 0 ||
        grow(&idx->pool_flavour, &idx->pool_flavour_cap, np + 1, sizeof(int)) != 0 ||
        grow(&idx->queue_pool, &idx->queue_cap, s->n_queues + 1, sizeof(size_t)) != 0 ||
        grow(&idx->work_origin, &idx->work_origin_cap, s->n_pending + 1, sizeof(int)) != 0 ||
        grow(&idx->work_team, &idx->work_team_cap, s->n_pending + 1, sizeof(int)) != 0 ||
        grow(&idx->work_queues, &idx->work_queues_cap, (s->n_pending + 1) * SW_MAX_QUEUE_POOLS,
             sizeof(int)) != 0)
        return SW_ENOMEM;
    size_t cap = 16;
    while (cap < s->n_quotas * 2 + 1)
        cap *= 2;
    if (cap > idx->pair_cap) {
        uint64_t *p = sw_malloc(cap * sizeof(uint64_t));
        if (p == NULL)
            return SW_ENOMEM;
        sw_free(idx->pairs);
        idx->pairs = p;
        idx->pair_cap = cap;
    }
    memset(idx->pairs, 0xff, idx->pair_cap * sizeof(uint64_t));
    return 0;
}

void sw__index_free(struct sw__index *idx)
{
    sw__intern_free(&idx->pools);
    sw__intern_free(&idx->clusters);
    sw__intern_free(&idx->flavours);
    sw__intern_free(&idx->teams);
    sw_free(idx->pool_cluster);
    sw_free(idx->pool_flavour);
    sw_free(idx->queue_pool);
    sw_free(idx->pairs);
    sw_free(idx->work_origin);
    sw_free(idx->work_queues);
    sw_free(idx->work_team);
    memset(idx, 0, sizeof(*idx));
}

int sw__snapshot_validate_index(const struct sw_snapshot *s, struct sw__index *idx,
                                struct sw_error *err)
{
    int rc;
    if (s == NULL || (s->n_pools > 0 && s->pools == NULL) ||
        (s->n_pending > 0 && s->pending == NULL) || (s->n_links > 0 && s->links == NULL) ||
        (s->n_quotas > 0 && s->quotas == NULL) || (s->n_budgets > 0 && s->budgets == NULL) ||
        (s->n_queues > 0 && s->queues == NULL) || (s->n_history > 0 && s->history == NULL))
        return sw_error_set(err, SW_EINVAL, "snapshot: an array is NULL but its count is not 0");
    if (!(s->decide_every_s >= 0 && s->decide_every_s <= SW_MAX_SECONDS))
        return sw_error_set(err, SW_EINVAL,
                            "snapshot: field \"decide_every_s\": expected seconds from 0 to %g",
                            SW_MAX_SECONDS);
    if (!isfinite(s->now) || fabs(s->now) > SW_MAX_SECONDS)
        return sw_error_set(err, SW_EINVAL,
                            "snapshot: field \"now\": expected a finite time within %g s of 0",
                            SW_MAX_SECONDS);
    if (index_reset(s, idx) != 0)
        return sw_error_set(err, SW_ENOMEM, "snapshot: out of memory for %zu pools", s->n_pools);
    for (size_t i = 0; i < s->n_pools; i++)
        if ((rc = validate_pool(s, i, idx, err)) != 0)
            return rc;
    for (size_t i = 0; i < s->n_links; i++) {
        const struct sw_link *l = &s->links[i];
        char name[2 * SW_NAME_MAX + 4];
        snprintf(name, sizeof(name), "%s->%s", l->from, l->to);
        if ((rc = check_num(err, "link", name, "price_per_gb", l->price_per_gb, SW_MAX_PRICE)) != 0)
            return rc;
        if (!isfinite(l->bandwidth_gbps) || l->bandwidth_gbps <= 0)
            return sw_error_set(err, SW_EINVAL,
                                "link \"%s\": field \"bandwidth_gbps\": expected a positive "
                                "number, got %g",
                                name, l->bandwidth_gbps);
        if (l->bandwidth_gbps < SW_MIN_GBPS || l->bandwidth_gbps > SW_MAX_GBPS)
            return sw_error_set(err, SW_ERANGE,
                                "link \"%s\": field \"bandwidth_gbps\": expected %g to %g, got %g",
                                name, SW_MIN_GBPS, SW_MAX_GBPS, l->bandwidth_gbps);
    }
    for (size_t i = 0; i < s->n_quotas; i++) {
        const struct sw_quota *q = &s->quotas[i];
        char name[2 * SW_NAME_MAX + 4];
        snprintf(name, sizeof(name), "%s/%s", q->team, q->flavour);
        if ((rc = check_nonneg_int(err, "quota", name, "nominal", q->nominal)) != 0 ||
            (rc = check_nonneg_int(err, "quota", name, "used", q->used)) != 0)
            return rc;
        int f = sw__intern_find(&idx->flavours, q->flavour);
        if (f < 0)
            return sw_error_set(err, SW_ENOENT,
                                "quota \"%s\": field \"flavour\": no pool has flavour \"%s\"", name,
                                q->flavour);
        int t = sw__intern_add(&idx->teams, q->team);
        if (!pair_insert(idx, (uint64_t)t << 32 | (uint32_t)f))
            return sw_error_set(err, SW_EINVAL, "quota \"%s\": duplicate team and flavour", name);
    }
    for (size_t i = 0; i < s->n_budgets; i++) {
        const struct sw_budget *b = &s->budgets[i];
        if ((rc = check_num(err, "budget", b->team, "cap", b->cap, INFINITY)) != 0 ||
            (rc = check_num(err, "budget", b->team, "spent", b->spent, INFINITY)) != 0)
            return rc;
        sw__intern_add(&idx->teams, b->team);
    }
    for (size_t i = 0; i < s->n_queues; i++) {
        const struct sw_local_queue *q = &s->queues[i];
        int p = sw__intern_find(&idx->pools, q->pool);
        if (p < 0)
            return sw_error_set(err, SW_ENOENT,
                                "local queue #%zu: field \"pool\": unknown pool \"%s\"", i,
                                q->pool);
        idx->queue_pool[i] = (size_t)p;
        if ((q->n_running > 0 && q->running == NULL) || (q->n_ahead > 0 && q->ahead == NULL))
            return sw_error_set(err, SW_EINVAL, "local queue \"%s\": NULL array", q->pool);
        for (size_t j = 0; j < q->n_running; j++) {
            if (q->running[j].gpus <= 0 || !isfinite(q->running[j].remaining_s) ||
                q->running[j].remaining_s < 0 || q->running[j].remaining_s > SW_MAX_SECONDS)
                return sw_error_set(err, SW_EINVAL,
                                    "local queue \"%s\": running[%zu]: expected positive gpus and "
                                    "a remaining_seconds from 0 to %g",
                                    q->pool, j, SW_MAX_SECONDS);
            if (!isfinite(q->running[j].lost_s) || q->running[j].lost_s < 0 ||
                q->running[j].lost_s > SW_MAX_SECONDS)
                return sw_error_set(err, SW_EINVAL,
                                    "local queue \"%s\": running[%zu]: field \"lost_s\": expected "
                                    "a number of seconds from 0 to %g, got %g",
                                    q->pool, j, SW_MAX_SECONDS, q->running[j].lost_s);
        }
        for (size_t j = 0; j < q->n_ahead; j++)
            if (q->ahead[j].gpus <= 0 || !isfinite(q->ahead[j].runtime_s) ||
                q->ahead[j].runtime_s < 0 || q->ahead[j].runtime_s > SW_MAX_SECONDS)
                return sw_error_set(err, SW_EINVAL,
                                    "local queue \"%s\": ahead[%zu]: expected positive gpus and a "
                                    "runtime_seconds from 0 to %g",
                                    q->pool, j, SW_MAX_SECONDS);
    }
    for (size_t i = 0; i < s->n_history; i++)
        if (!isfinite(s->history[i].runtime_s) || s->history[i].runtime_s <= 0 ||
            s->history[i].runtime_s > SW_MAX_SECONDS)
            return sw_error_set(err, SW_EINVAL,
                                "finished run #%zu: field \"runtime_seconds\": expected a positive "
                                "number up to %g, got %g",
                                i, SW_MAX_SECONDS, s->history[i].runtime_s);
    for (size_t i = 0; i < s->n_pending; i++) {
        /* A workload is a kilobyte: the hardware prefetcher stops at every
         * page boundary, so ask for the next ones' lines ahead. */
        if (i + 2 < s->n_pending)
            sw__prefetch_workload(&s->pending[i + 2]);
        if ((rc = validate_workload(s, i, idx, err)) != 0)
            return rc;
    }
    return 0;
}

int sw_snapshot_validate(const struct sw_snapshot *s, struct sw_error *err)
{
    struct sw__index idx = {0};
    int rc = sw__snapshot_validate_index(s, &idx, err);
    sw__index_free(&idx);
    return rc;
}
