/*
 * capacity.c - where a pool's capacity comes from: fixed nodes or a NodePool.
 *
 * The one seam between a registered pool and the engine's figures (total,
 * free, ceiling, provisioning delay, interruption rate). Two sources:
 *
 *   nodes     the pool is the nodes that exist: total and free from the
 *             nodes whose labels match the pool (capacity.h), its ceiling
 *             is what they hold (capped by maxGpus), a cloud pool's
 *             provisioning delay and a spot pool's interruption rate are
 *             the documented priors; what the nodes advertise of MIG
 *             slices per profile and time-slicing (then the figures are
 *             milli-GPUs, as the engine counts a time-sliced pool);
 *   nodepool  the pool is a Karpenter NodePool (nodepool.h): total is what
 *             its NodeClaims hold or will (launching ones once) plus the
 *             GPUs pods already wait for, free the idle GPUs on its Ready
 *             nodes, the ceiling its GPU limit, and the provisioning delay
 *             the mean NodeClaim created -> Initialized seen so far (the
 *             prior until one is seen); a spot NodePool's interruption
 *             rate is learned from the mirrors lost there per hour its
 *             mirrors ran, weighed with the prior (sw_capacity_interrupt_rate).
 *             A NodePool's GPUs are whole: its MIG partitioning is not read.
 *
 * decide.c asks the source of each pool and never looks at which one it is.
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "controller/hub/hub.h"
#include "controller/hub/learn.h"

static void common_figures(const struct sw_pool_spec *ps, struct sw_pool_figures *out)
{
    if (out->milli_per_unit == 0)
        out->milli_per_unit = 1000;
    if (out->replicas == 0)
        out->replicas = 1;
    bool spot = strcmp(ps->capacity_type, "spot") == 0;
    out->interrupt_per_h = spot ? SW_PRIOR_SPOT_INTERRUPT : 0;
}

/* Adds a node pool's MIG slices to the figures, by profile; profiles the
 * engine cannot name (sw_mig_profile_valid) or price (no slices per GPU)
 * and those past SW_MAX_MIG are left out. */
static void add_mig(struct sw_pool_figures *out, const struct sw_gpu_pool *cp)
{
    for (size_t i = 0; i < cp->nmig; i++) {
        const struct sw_pool_mig *pm = &cp->mig[i];
        if (!sw_mig_profile_valid(pm->profile) || pm->per_gpu < 1)
            continue;
        int k = 0;
        while (k < out->nmig && strcmp(out->mig[k].profile, pm->profile) != 0)
            k++;
        if (k == out->nmig) {
            if (out->nmig == SW_MAX_MIG)
                continue;
            out->nmig++;
            snprintf(out->mig[k].profile, sizeof(out->mig[k].profile), "%s", pm->profile);
            out->mig[k].per_gpu = pm->per_gpu;
        }
        out->mig[k].total += pm->total;
        out->mig[k].free += pm->free;
    }
}

static int nodes_figures(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                         const struct sw_gpu_capacity *cap, struct sw_pool_figures *out)
{
    (void)h;
    (void)m;
    int64_t total = 0, free_ = 0, mtotal = 0, mfree = 0, replicas = 1;
    int nodes = 0;
    bool sliced = false;
    for (size_t k = 0; k < cap->npools; k++) {
        const struct sw_gpu_pool *cp = &cap->pools[k];
        if (strcmp(cp->capacity_type, ps->capacity_type) != 0)
            continue;
        if (ps->gpu_product[0] && strcmp(cp->gpu_product, ps->gpu_product) != 0)
            continue;
        total += cp->total;
        free_ += cp->free;
        mtotal += cp->milli_total;
        mfree += cp->milli_free;
        nodes += cp->nodes;
        if (cp->time_sliced) {
            sliced = true;
            if (cp->replicas > replicas)
                replicas = cp->replicas;
        }
        add_mig(out, cp);
    }
    out->time_sliced = sliced;
    out->replicas = replicas;
    out->milli_per_unit = 1000 / replicas;
    if (sliced) {
        /* In thousandths of a GPU; maxGpus counts whole GPUs. */
        total = mtotal;
        free_ = mfree;
        if (ps->max_gpus > 0 && total > ps->max_gpus * 1000)
            total = ps->max_gpus * 1000;
    } else if (ps->max_gpus > 0 && total > ps->max_gpus)
        total = ps->max_gpus;
    if (free_ > total)
        free_ = total;
    out->total = total;
    out->free = free_;
    out->ceiling = total;
    out->nodes = nodes;
    out->provision_s = strcmp(ps->capacity_type, "owned") == 0 ? 0 : SW_PRIOR_PROVISION_S;
    common_figures(ps, out);
    return 0;
}

/* The learned state of a member's NodePool, added when missing (NULL when full). */
struct sw_nodepool_state *sw_capacity_nodepool_state(struct sw_member *m, const char *nodepool)
{
    for (size_t i = 0; i < m->nnodepools; i++)
        if (strcmp(m->nodepools[i].name, nodepool) == 0)
            return &m->nodepools[i];
    if (m->nnodepools >= SW_MAX_POOLS)
        return NULL;
    struct sw_nodepool_state *s = &m->nodepools[m->nnodepools++];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", nodepool);
    return s;
}

double sw_capacity_provision_s(const struct sw_nodepool_state *s)
{
    return s != NULL ? sw_learn_provision_s(s->provisions, s->provision_sum_s)
                     : SW_PRIOR_PROVISION_S;
}

static int nodepool_figures(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                            const struct sw_gpu_capacity *cap, struct sw_pool_figures *out)
{
    (void)h;
    (void)cap;
    struct sw_nodepool_state *s = sw_capacity_nodepool_state(m, ps->nodepool);
    if (s == NULL)
        return SW_ENOMEM;
    struct sw_error err = {0};
    struct sw_nodepool_capacity c;
    int rc = sw_cluster_cache_nodepool(m->cache, ps->nodepool, &c, &err);
    if (rc != 0) {
        /* Said once per change, and kept for the hub's status. */
        if (strncmp(s->problem, err.msg, sizeof(s->problem) - 1) != 0)
            SW_LOG(SW_LOG_WARN, "a pool's NodePool gives no figures; the pool is not offered",
                   "cluster=%s pool=%s nodepool=%s err=%s", sw_log_q(m->rec.name),
                   sw_log_q(ps->name), sw_log_q(ps->nodepool), sw_log_q(err.msg));
        snprintf(s->problem, sizeof(s->problem), "%.*s", (int)sizeof(s->problem) - 1, err.msg);
        s->have_cap = false;
        return rc;
    }
    s->problem[0] = '\0';
    s->cap = c;
    s->have_cap = true;
    int64_t ceiling = c.limit;
    if (ps->max_gpus > 0 && ceiling > ps->max_gpus)
        ceiling = ps->max_gpus;
    /* On their way: what claims hold or will, and what pods already wait
     * for beyond them; the engine's room is the ceiling less that. */
    int64_t total = c.provisioned + c.waiting;
    if (total > ceiling)
        ceiling = total; /* over the limit for a moment: no room */
    out->total = total;
    out->free = c.idle < total ? c.idle : total;
    out->ceiling = ceiling;
    out->nodes = c.nodes;
    out->provision_s = sw_capacity_provision_s(s);
    common_figures(ps, out);
    if (out->interrupt_per_h > 0)
        out->interrupt_per_h = sw_capacity_interrupt_rate(s);
    return 0;
}

double sw_capacity_interrupt_rate(const struct sw_nodepool_state *s)
{
    return s != NULL ? sw_learn_interrupt_rate(s->interruptions, s->run_hours)
                     : SW_PRIOR_SPOT_INTERRUPT;
}

void sw_capacity_mirror_ended(struct sw_hub *h, const struct sw_job_rec *r, bool interrupted)
{
    struct sw_member *m = sw_member_find(h, r->target_cluster);
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->rec.spec.npools; i++) {
        const struct sw_pool_spec *ps = &m->rec.spec.pools[i];
        if (strcmp(ps->name, r->target_pool) != 0 || !ps->nodepool[0])
            continue;
        struct sw_nodepool_state *s = sw_capacity_nodepool_state(m, ps->nodepool);
        if (s == NULL)
            return;
        int64_t now = sw_hub_wall_ms();
        if (r->started_ms > 0 && now > r->started_ms)
            s->run_hours += (double)(now - r->started_ms) / 3600000.0;
        if (interrupted) {
            s->interruptions++;
            SW_LOG(SW_LOG_INFO, "interruption counted", "cluster=%s nodepool=%s job=%s rate=%.3f",
                   sw_log_q(m->rec.name), sw_log_q(s->name), sw_log_q(r->key),
                   sw_capacity_interrupt_rate(s));
        }
        return;
    }
}

static const struct sw_capacity_source sources[] = {
    {"nodes", nodes_figures},
    {"nodepool", nodepool_figures},
};

const struct sw_capacity_source *sw_capacity_source_of(const struct sw_pool_spec *ps)
{
    return ps->nodepool[0] ? &sources[1] : &sources[0];
}

bool sw_capacity_wants_karpenter(const struct sw_cluster_spec *spec)
{
    for (size_t i = 0; i < spec->npools; i++)
        if (spec->pools[i].nodepool[0])
            return true;
    return false;
}

/* Whether the claim was counted already (a ring of the latest names). */
static bool counted(struct sw_member *m, const char *name)
{
    for (size_t i = 0; i < SW_HUB_COUNTED_CLAIMS; i++)
        if (strcmp(m->counted[i], name) == 0)
            return true;
    snprintf(m->counted[m->counted_at], sizeof(m->counted[0]), "%s", name);
    m->counted_at = (m->counted_at + 1) % SW_HUB_COUNTED_CLAIMS;
    return false;
}

void sw_capacity_claim_changed(struct sw_hub *h, struct sw_member *m, const char *key)
{
    (void)h;
    struct sw_informer *inf = sw_cluster_cache_informer(m->cache, SW_KIND_NODECLAIM);
    const cJSON *obj = inf ? sw_informer_get(inf, key) : NULL;
    struct sw_nodeclaim_facts f;
    if (obj == NULL || sw_nodeclaim_facts_from_json(obj, &f, NULL) != 0 || f.nodepool == NULL ||
        f.ready_ms == 0 || f.ready_ms < f.created_ms || strlen(f.name) >= sizeof(m->counted[0]))
        return;
    if (counted(m, f.name))
        return;
    struct sw_nodepool_state *s = sw_capacity_nodepool_state(m, f.nodepool);
    if (s == NULL)
        return;
    double d = (double)(f.ready_ms - f.created_ms) / 1000.0;
    s->provisions++;
    s->provision_sum_s += d;
    s->provision_last_s = d;
    SW_LOG(SW_LOG_INFO, "node provisioned",
           "cluster=%s nodepool=%s nodeclaim=%s seconds=%.0f "
           "mean=%.1f n=%llu",
           sw_log_q(m->rec.name), sw_log_q(f.nodepool), sw_log_q(f.name), d,
           sw_capacity_provision_s(s), (unsigned long long)s->provisions);
}
