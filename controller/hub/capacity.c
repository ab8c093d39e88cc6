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
 *             While the NodePool is short of capacity (a NodeClaim deleted
 *             before it launched, as Karpenter deletes one whose launch
 *             failed for lack of capacity; or pods waiting for it with room
 *             under its limit and no claim made for them, which is what
 *             Karpenter shows when none of its offerings is available) the
 *             engine is told how much longer it is expected to last
 *             (sw_learn_capacity_wait), until a claim of it launches.
 *             Karpenter's own silence is told apart: while its
 *             leader-election Lease is not renewed (sw_learn_ctl_observe)
 *             its NodePools offer no room past their idle GPUs, mirrors
 *             waiting there are withdrawn, and no shortage begins (nor is
 *             learned) from pods it left waiting; once a renewal is seen
 *             the pools offer their room again.
 *
 * decide.c asks the source of each pool and never looks at which one it is.
 */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
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
    out->nodepool = "";
    out->seen = NULL;
    return 0;
}

/* What the leader loaded for "cluster/nodepool", or NULL. */
static const struct sw_learned *loaded(const struct sw_hub *h, const char *cluster,
                                       const char *nodepool)
{
    size_t cl = strlen(cluster);
    for (size_t i = 0; i < h->nlearned; i++) {
        const char *k = h->learned[i].key;
        if (strncmp(k, cluster, cl) == 0 && k[cl] == '/' && strcmp(k + cl + 1, nodepool) == 0)
            return &h->learned[i].seen;
    }
    return NULL;
}

/* The learned state of a member's NodePool, added when missing (NULL when full). */
struct sw_nodepool_state *sw_capacity_nodepool_state(struct sw_hub *h, struct sw_member *m,
                                                     const char *nodepool)
{
    for (size_t i = 0; i < m->nnodepools; i++)
        if (strcmp(m->nodepools[i].name, nodepool) == 0)
            return &m->nodepools[i];
    if (m->nnodepools >= SW_MAX_POOLS)
        return NULL;
    struct sw_nodepool_state *s = &m->nodepools[m->nnodepools++];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", nodepool);
    const struct sw_learned *l = loaded(h, m->rec.name, nodepool);
    if (l != NULL) {
        s->seen = *l;
        s->loaded_mark_ms = l->last_ready_ms;
    }
    return s;
}

double sw_capacity_provision_s(const struct sw_nodepool_state *s)
{
    return s != NULL ? sw_learn_provision_s(s->seen.provisions, s->seen.provision_sum_s)
                     : SW_PRIOR_PROVISION_S;
}

static int nodepool_figures(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                            const struct sw_gpu_capacity *cap, struct sw_pool_figures *out)
{
    (void)cap;
    struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, ps->nodepool);
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
    out->nodepool = s->name;
    out->seen = &s->seen;
    out->capacity_wait_s = sw_learn_capacity_wait(
        &s->seen, sw_hub_wall_ms(), out->capacity_wait_points, &out->n_capacity_wait_points);
    /* Its Karpenter does not answer: no node is added for anyone until it
     * does; its idle GPUs still take pods (the scheduler binds them). */
    if (m->karp.down_since_ms > 0) {
        out->ceiling = out->total;
        out->controller_down_s = sw_learn_ctl_silent_s(&m->karp, sw_hub_mono_ms());
        out->controller_lease = m->karp_lease;
    }
    return 0;
}

double sw_capacity_interrupt_rate(const struct sw_nodepool_state *s)
{
    return s != NULL ? sw_learn_interrupt_rate(s->seen.interruptions, s->seen.run_hours)
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
        struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, ps->nodepool);
        if (s == NULL)
            return;
        s->dirty = true;
        int64_t now = sw_hub_wall_ms();
        if (r->started_ms > 0 && now > r->started_ms)
            s->seen.run_hours += (double)(now - r->started_ms) / 3600000.0;
        if (interrupted) {
            s->seen.interruptions++;
            SW_LOG(SW_LOG_INFO, "interruption counted", "cluster=%s nodepool=%s job=%s rate=%.3f",
                   sw_log_q(m->rec.name), sw_log_q(s->name), sw_log_q(r->key),
                   sw_capacity_interrupt_rate(s));
        }
        return;
    }
}

/* Fixed nodes are there or not: nothing is provisioned for a mirror. */
static bool nodes_node_wait(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                            const struct sw_job_rec *r, struct sw_node_wait *out)
{
    (void)h;
    (void)m;
    (void)ps;
    (void)r;
    (void)out;
    return false;
}

#define MAX_CANDIDATES 64

struct claim_scan {
    const char *nodepool;
    int64_t since_ms;
    struct sw_claim_candidate c[MAX_CANDIDATES];
    size_t n;
};

/* The claims of the NodePool launching (not Initialized, not being
 * deleted) created since the mirror, allowing a second of clock skew
 * between the hub and the member's API server. */
static void launching_claim(const struct sw_nodeclaim_facts *f, void *ctx)
{
    struct claim_scan *cs = ctx;
    if (f->nodepool == NULL || strcmp(f->nodepool, cs->nodepool) != 0 || f->ready_ms != 0 ||
        f->deleting || f->created_ms < cs->since_ms - 1000 || cs->n >= MAX_CANDIDATES)
        return;
    struct sw_claim_candidate *c = &cs->c[cs->n++];
    snprintf(c->name, sizeof(c->name), "%.*s", (int)sizeof(c->name) - 1, f->name);
    c->created_ms = f->created_ms;
    c->room = f->requested > 0 ? f->requested : f->gpus;
}

struct named {
    struct claim_scan *cs;
    const struct sw_job_rec *self;
};

/* A claim another mirror was said to wait for has that mirror's GPUs less room. */
static void named_claim(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)h;
    struct named *nm = ctx;
    const struct sw_job_rec *r = &j->rec;
    if (r == nm->self || r->state != SW_JS_DISPATCHED || r->node_wait_ms == 0 ||
        strcmp(r->target_cluster, nm->self->target_cluster) != 0)
        return;
    for (size_t i = 0; i < nm->cs->n; i++)
        if (strcmp(nm->cs->c[i].name, r->node_claim) == 0)
            nm->cs->c[i].room -= r->gpus;
}

static bool nodepool_node_wait(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                               const struct sw_job_rec *r, struct sw_node_wait *out)
{
    if (m->cache == NULL || !sw_cluster_cache_karpenter(m->cache))
        return false;
    struct claim_scan *cs = sw_calloc(1, sizeof(*cs));
    if (cs == NULL)
        return false;
    cs->nodepool = ps->nodepool;
    cs->since_ms = r->dispatched_ms;
    sw_cluster_cache_nodeclaims_foreach(m->cache, launching_claim, cs);
    struct named nm = {cs, r};
    sw_hub_jobs_foreach(h, named_claim, &nm);
    int k = sw_nodeclaim_pick(cs->c, cs->n, r->gpus);
    if (k >= 0) {
        snprintf(out->nodepool, sizeof(out->nodepool), "%.*s", (int)sizeof(out->nodepool) - 1,
                 ps->nodepool);
        snprintf(out->nodeclaim, sizeof(out->nodeclaim), "%s", cs->c[k].name);
        out->expected_s = sw_capacity_provision_s(sw_capacity_nodepool_state(h, m, ps->nodepool));
    }
    sw_free(cs);
    return k >= 0;
}

static const struct sw_capacity_source sources[] = {
    {"nodes", nodes_figures, nodes_node_wait},
    {"nodepool", nodepool_figures, nodepool_node_wait},
};

struct claim_of {
    const char *node;
    char *claim;
    size_t len;
    bool found;
};

static void claim_of(const struct sw_nodeclaim_facts *f, void *ctx)
{
    struct claim_of *co = ctx;
    if (!co->found && f->node_name != NULL && strcmp(f->node_name, co->node) == 0) {
        snprintf(co->claim, co->len, "%s", f->name);
        co->found = true;
    }
}

bool sw_capacity_claim_of_node(struct sw_hub *h, const char *cluster, const char *node, char *claim,
                               size_t len)
{
    struct sw_member *m = sw_member_find(h, cluster);
    if (m == NULL || m->cache == NULL || !sw_cluster_cache_karpenter(m->cache))
        return false;
    struct claim_of co = {node, claim, len, false};
    sw_cluster_cache_nodeclaims_foreach(m->cache, claim_of, &co);
    return co.found;
}

bool sw_capacity_node_wait(struct sw_hub *h, const struct sw_job_rec *r, struct sw_node_wait *out)
{
    struct sw_member *m = sw_member_find(h, r->target_cluster);
    for (size_t i = 0; m != NULL && i < m->rec.spec.npools; i++) {
        const struct sw_pool_spec *ps = &m->rec.spec.pools[i];
        if (strcmp(ps->name, r->target_pool) == 0)
            return sw_capacity_source_of(ps)->node_wait(h, m, ps, r, out);
    }
    return false;
}

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

/* Counts a claim's provisioning delay once it is Initialized (once per
 * claim, and never one an earlier leader counted). */
static void count_claim(struct sw_hub *h, struct sw_member *m, const struct sw_nodeclaim_facts *f)
{
    if (f->nodepool == NULL || f->ready_ms == 0 || f->ready_ms < f->created_ms ||
        strlen(f->name) >= sizeof(m->counted[0]))
        return;
    struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, f->nodepool);
    if (s == NULL || f->ready_ms <= s->loaded_mark_ms)
        return;
    if (counted(m, f->name))
        return;
    double d = (double)(f->ready_ms - f->created_ms) / 1000.0;
    s->seen.provisions++;
    s->seen.provision_sum_s += d;
    s->seen.provision_last_s = d;
    if (f->ready_ms > s->seen.last_ready_ms)
        s->seen.last_ready_ms = f->ready_ms;
    s->dirty = true;
    SW_LOG(SW_LOG_INFO, "node provisioned",
           "cluster=%s nodepool=%s nodeclaim=%s seconds=%.0f "
           "mean=%.1f n=%llu",
           sw_log_q(m->rec.name), sw_log_q(f->nodepool), sw_log_q(f->name), d,
           sw_capacity_provision_s(s), (unsigned long long)s->seen.provisions);
}

/* ---- spot capacity shortages ----------------------------------------------- */

/* The registered pool bound to NodePool `np` of member m, or NULL. */
static const struct sw_pool_spec *bound_pool(const struct sw_member *m, const char *np)
{
    for (size_t i = 0; i < m->rec.spec.npools; i++)
        if (strcmp(m->rec.spec.pools[i].nodepool, np) == 0)
            return &m->rec.spec.pools[i];
    return NULL;
}

static void shortage_begins(struct sw_member *m, struct sw_nodepool_state *s, int64_t at_ms,
                            const char *why)
{
    if (at_ms <= s->short_ended_ms || !sw_learn_shortage_begin(&s->seen, at_ms))
        return;
    s->dirty = true;
    SW_LOG(SW_LOG_WARN, "NodePool short of capacity", "cluster=%s nodepool=%s why=%s wait=%.0f",
           sw_log_q(m->rec.name), sw_log_q(s->name), sw_log_q(why),
           sw_learn_capacity_wait(&s->seen, sw_hub_wall_ms(), NULL, &(int){0}));
}

/* A claim of a bound NodePool: deleted before it launched, a launch that
 * failed (Karpenter deletes a claim whose launch failed for lack of
 * capacity at once, with an InsufficientCapacityError Event); launched,
 * made since a shortage began, the shortage's end. */
static void shortage_claim(struct sw_hub *h, struct sw_member *m,
                           const struct sw_nodeclaim_facts *f)
{
    if (f->nodepool == NULL || bound_pool(m, f->nodepool) == NULL)
        return;
    struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, f->nodepool);
    if (s == NULL)
        return;
    if (f->deleting && f->launched_ms == 0) {
        char why[160];
        snprintf(why, sizeof(why), "NodeClaim %.100s deleted before it launched", f->name);
        shortage_begins(m, s, f->deleted_ms > 0 ? f->deleted_ms : sw_hub_wall_ms(), why);
        return;
    }
    int64_t since = s->seen.short_since_ms;
    if (f->launched_ms == 0 || since <= 0 || f->created_ms < since - 1000)
        return;
    int64_t at = f->launched_ms > since ? f->launched_ms : since;
    double d = sw_learn_shortage_end(&s->seen, at);
    if (d < 0)
        return;
    s->short_ended_ms = at;
    s->stuck_since_ms = 0;
    s->dirty = true;
    SW_LOG(SW_LOG_INFO, "NodePool capacity back",
           "cluster=%s nodepool=%s nodeclaim=%s seconds=%.1f n=%llu", sw_log_q(m->rec.name),
           sw_log_q(s->name), sw_log_q(f->name), d, (unsigned long long)s->seen.shortages);
}

/* One read of a member's Karpenter Lease, to confirm a silence before the
 * hub takes it as down (the member looked up again by name: it may be gone). */
struct lease_read {
    struct sw_hub *h;
    char cluster[128];
};

static void on_lease_read(struct sw_kube_result *res, void *ctx)
{
    struct lease_read *lr = ctx;
    /* Canceled: the member's client is being freed (the hub may be too). */
    struct sw_member *m = res->rc == SW_ECANCELED ? NULL : sw_member_find(lr->h, lr->cluster);
    if (m != NULL) {
        m->karp_reading = false;
        bool ok = res->rc == 0 || res->status == 404;
        const cJSON *spec = res->rc == 0 ? sw_json_child(res->body, "spec") : NULL;
        if (!ok)
            SW_LOG(SW_LOG_WARN, "cannot read Karpenter's Lease; not taken as down",
                   "cluster=%s err=%s", sw_log_q(lr->cluster), sw_log_q(res->err.msg));
        sw_learn_ctl_confirm(&m->karp, ok, res->rc == 0, sw_json_str(spec, "renewTime"),
                             sw_json_str(spec, "holderIdentity"), sw_hub_mono_ms());
    }
    sw_free(lr);
}

static void read_lease(struct sw_hub *h, struct sw_member *m, int64_t mono)
{
    if (m->karp_reading || mono < m->karp_read_after_ms || m->client == NULL)
        return;
    struct lease_read *lr = sw_calloc(1, sizeof(*lr));
    if (lr == NULL)
        return;
    lr->h = h;
    snprintf(lr->cluster, sizeof(lr->cluster), "%s", m->rec.name);
    /* One read per transition; a failed one is tried again 5 s later. */
    m->karp_read_after_ms = mono + 5000;
    m->karp_reading = true;
    if (sw_kube_get(m->client, SW_KIND_LEASE, SW_KARPENTER_LEASE_NS, SW_KARPENTER_LEASE,
                    on_lease_read, lr) != 0) {
        m->karp_reading = false;
        sw_free(lr);
    }
}

void sw_capacity_shortage_tick(struct sw_hub *h)
{
    int64_t now = sw_hub_wall_ms();
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        /* Once a second is enough: the grace is 30 s, and each look
         * scans the member's pods. */
        if (m->cache == NULL || !sw_cluster_cache_karpenter(m->cache) ||
            now - m->shortage_checked_ms < 1000)
            continue;
        m->shortage_checked_ms = now;
        /* Its Karpenter first: pods left waiting with no NodeClaim while it
         * does not answer are its silence, not a shortage. */
        struct sw_ctl_lease l;
        bool have = sw_cluster_cache_karpenter_lease(m->cache, &l) == 0;
        if (have)
            snprintf(m->karp_lease, sizeof(m->karp_lease), "%s", l.key);
        /* Its times are monotonic: a step of the wall clock neither
         * makes it down nor hides a crash. */
        int64_t mono = sw_hub_mono_ms();
        /* Silence counts only while the Lease's watch is open and the
         * member reachable; a read of the Lease confirms it first. */
        bool trusted = sw_member_reachable(m) && sw_cluster_cache_karpenter_lease_watched(m->cache);
        /* Credentials that may not read it: said once per member. */
        if (sw_cluster_cache_karpenter_lease_failed(m->cache) == 403 && !m->karp_forbidden_said) {
            m->karp_forbidden_said = true;
            SW_LOG(SW_LOG_WARN,
                   "Karpenter's Lease may not be read: a Karpenter that does not answer is taken "
                   "as a shortage (grant deploy/rbac/member-karpenter-clusterrole.yaml)",
                   "cluster=%s lease=%s", sw_log_q(m->rec.name),
                   sw_log_q(SW_KARPENTER_LEASE_NS "/" SW_KARPENTER_LEASE));
        }
        int turned =
            sw_learn_ctl_observe(&m->karp, have, have ? l.renew : NULL, have ? l.holder : NULL,
                                 have ? l.duration_s : 0, mono, trusted);
        if (turned == SW_CTL_CONFIRM) {
            read_lease(h, m, mono);
            turned = 0;
        }
        if (turned > 0)
            SW_LOG(SW_LOG_WARN,
                   "Karpenter does not answer; its NodePools add no node and are not taken as "
                   "short until it does",
                   "cluster=%s lease=%s silent=%.0f", sw_log_q(m->rec.name),
                   sw_log_q(m->karp_lease), sw_learn_ctl_silent_s(&m->karp, mono));
        else if (turned < 0)
            SW_LOG(SW_LOG_INFO, "Karpenter answers again", "cluster=%s lease=%s",
                   sw_log_q(m->rec.name), sw_log_q(m->karp_lease));
        /* Its NodePools' room changed: the Jobs are decided again now. */
        if (turned != 0)
            sw_hub_want_decide(h);
        bool down = m->karp.down_since_ms > 0;
        for (size_t p = 0; p < m->rec.spec.npools; p++) {
            const struct sw_pool_spec *ps = &m->rec.spec.pools[p];
            if (!ps->nodepool[0])
                continue;
            struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, ps->nodepool);
            struct sw_nodepool_capacity c;
            if (s == NULL || sw_cluster_cache_nodepool(m->cache, ps->nodepool, &c, NULL) != 0)
                continue;
            s->cap = c;
            s->have_cap = true;
            /* At its limit with pods waiting beyond it: full (it cannot
             * grow for them either; mirrors there are withdrawn past the
             * bound too, but nothing is learned). */
            if (!sw_nodepool_full(&c))
                s->full_since_ms = 0;
            else if (s->full_since_ms == 0)
                s->full_since_ms = now;
            /* Pods no idle GPU or launching claim covers, and room for
             * them under the limit: Karpenter would have made a claim. */
            /* Not while its Karpenter is down (the grace counts again
             * from when it answers). */
            if (down || !sw_nodepool_stalled(&c)) {
                s->stuck_since_ms = 0;
                continue;
            }
            if (s->stuck_since_ms == 0) {
                s->stuck_since_ms = now;
                continue;
            }
            if (s->seen.short_since_ms == 0 &&
                (double)(now - s->stuck_since_ms) / 1000.0 >= SW_SHORTAGE_GRACE_S) {
                char why[160];
                snprintf(why, sizeof(why),
                         "%lld GPUs of pods waited %.0f s with room under its limit and no "
                         "NodeClaim made for them",
                         (long long)c.waiting, (double)(now - s->stuck_since_ms) / 1000.0);
                shortage_begins(m, s, s->stuck_since_ms, why);
            }
        }
    }
}

bool sw_capacity_mirror_short(struct sw_hub *h, const struct sw_job_rec *r, char *why, size_t len)
{
    struct sw_member *m = sw_member_find(h, r->target_cluster);
    const struct sw_pool_spec *ps = NULL;
    for (size_t i = 0; m != NULL && i < m->rec.spec.npools && ps == NULL; i++)
        if (strcmp(m->rec.spec.pools[i].name, r->target_pool) == 0)
            ps = &m->rec.spec.pools[i];
    if (ps == NULL || !ps->nodepool[0] || r->state != SW_JS_DISPATCHED || r->dispatched_ms <= 0)
        return false;
    struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, ps->nodepool);
    if (s == NULL)
        return false;
    /* Its Karpenter down (since its last renewal seen), else short of
     * capacity, else at its limit: since when it cannot grow. */
    bool down = m->karp.down_since_ms > 0;
    bool is_short = !down && s->seen.short_since_ms > 0;
    int64_t now = sw_hub_wall_ms();
    /* The last renewal seen is a monotonic time: as wall time, now less
     * the silence. */
    int64_t since =
        down       ? now - (int64_t)(sw_learn_ctl_silent_s(&m->karp, sw_hub_mono_ms()) * 1000.0)
        : is_short ? s->seen.short_since_ms
                   : s->full_since_ms;
    if (since <= 0)
        return false;
    int bound = 0;
    int pods = sw_observe_pods(h, r->target_cluster, r->ns, r->mirror, &bound);
    if (pods <= bound)
        return false; /* no pod waits for a node */
    int64_t from = r->dispatched_ms > since ? r->dispatched_ms : since;
    double waited = (double)(now - from) / 1000.0;
    if (waited < h->cfg.shortage_withdraw_s)
        return false;
    double for_s = (double)(now - since) / 1000.0;
    if (down)
        snprintf(why, len,
                 "%s %s: mirror %s's pods waited %.0f s for NodePool %s, whose Karpenter does not "
                 "answer (its Lease %s not renewed for %.0f s), past "
                 "karpenter.shortageWithdrawSeconds (%.0f s)",
                 SW_QUEUE_WITHDRAWN, r->target_cluster, r->mirror, waited, s->name, m->karp_lease,
                 for_s, h->cfg.shortage_withdraw_s);
    else if (is_short)
        snprintf(why, len,
                 "%s %s: mirror %s's pods waited %.0f s for NodePool %s, short of capacity for "
                 "%.0f s (no NodeClaim of it launched since), past "
                 "karpenter.shortageWithdrawSeconds (%.0f s)",
                 SW_QUEUE_WITHDRAWN, r->target_cluster, r->mirror, waited, s->name, for_s,
                 h->cfg.shortage_withdraw_s);
    else
        snprintf(why, len,
                 "%s %s: mirror %s's pods waited %.0f s for NodePool %s, at its GPU limit (%lld) "
                 "with pods waiting beyond it for %.0f s, past karpenter.shortageWithdrawSeconds "
                 "(%.0f s)",
                 SW_QUEUE_WITHDRAWN, r->target_cluster, r->mirror, waited, s->name,
                 (long long)s->cap.limit, for_s, h->cfg.shortage_withdraw_s);
    return true;
}

void sw_capacity_withdrawn(struct sw_hub *h, const struct sw_job_rec *r)
{
    struct sw_member *m = sw_member_find(h, r->target_cluster);
    for (size_t i = 0; m != NULL && i < m->rec.spec.npools; i++) {
        const struct sw_pool_spec *ps = &m->rec.spec.pools[i];
        if (strcmp(ps->name, r->target_pool) != 0 || !ps->nodepool[0])
            continue;
        struct sw_nodepool_state *s = sw_capacity_nodepool_state(h, m, ps->nodepool);
        if (s != NULL)
            s->withdrawals++;
        return;
    }
}

/* ---- node-hours: the lives of bound NodePools' claims ---------------------- */

/* A hash field set under the writer's epoch, checked inside Redis as the
 * records are (record.c). */
static const char HSET_LUA[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"
    "  return redis.error_reply('FENCED epoch ' .. ARGV[1] .. ' is not the current one')\n"
    "end\n"
    "redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])\n"
    "return 1\n";

static struct sw_claim_life *life_find(struct sw_member *m, const char *name)
{
    for (size_t i = 0; i < m->nlives; i++)
        if (strcmp(m->lives[i].name, name) == 0)
            return &m->lives[i];
    return NULL;
}

/* A claim of a bound NodePool seen: its life starts (or its end is seen). */
static void life_seen(struct sw_member *m, const struct sw_nodeclaim_facts *f)
{
    if (f->nodepool == NULL || strlen(f->name) >= sizeof(m->lives[0].name))
        return;
    const struct sw_pool_spec *ps = NULL;
    for (size_t i = 0; i < m->rec.spec.npools && ps == NULL; i++)
        if (strcmp(m->rec.spec.pools[i].nodepool, f->nodepool) == 0)
            ps = &m->rec.spec.pools[i];
    if (ps == NULL)
        return; /* not a NodePool spillway places into */
    struct sw_claim_life *l = life_find(m, f->name);
    if (l == NULL) {
        if (m->nlives == m->cap_lives) {
            size_t cap = m->cap_lives ? 2 * m->cap_lives : 16;
            struct sw_claim_life *g = sw_realloc(m->lives, cap * sizeof(*g));
            if (g == NULL)
                return;
            m->lives = g;
            m->cap_lives = cap;
        }
        l = &m->lives[m->nlives++];
        memset(l, 0, sizeof(*l));
        snprintf(l->name, sizeof(l->name), "%s", f->name);
        snprintf(l->nodepool, sizeof(l->nodepool), "%s", f->nodepool);
        snprintf(l->pool, sizeof(l->pool), "%s", ps->name);
        l->price_gpu_h = ps->price_per_gpu_hour;
        l->created_ms = f->created_ms;
        l->dirty = true;
    }
    if (f->gpus != l->gpus) {
        l->gpus = f->gpus;
        l->dirty = true;
    }
    if (f->deleted_ms != 0 && l->deleted_ms == 0) {
        l->deleted_ms = f->deleted_ms;
        l->dirty = true;
    }
}

/* A claim gone from the cache (a watch's DELETED, or gone in a relist):
 * its life ends when its deletion started, or when it was seen gone. */
static void life_gone(struct sw_member *m, const char *key)
{
    const char *slash = strrchr(key, '/');
    struct sw_claim_life *l = life_find(m, slash ? slash + 1 : key);
    if (l != NULL && l->deleted_ms == 0) {
        l->deleted_ms = sw_hub_wall_ms();
        l->dirty = true;
    }
}

/* A hub that does not lead forgets ended lives: the leader wrote them. */
static void lives_trim(struct sw_hub *h, struct sw_member *m)
{
    if (sw_hub_acting(h))
        return;
    for (size_t i = m->nlives; i-- > 0;)
        if (m->lives[i].deleted_ms != 0 && !m->lives[i].writing)
            m->lives[i] = m->lives[--m->nlives];
}

void sw_capacity_claim_changed(struct sw_hub *h, struct sw_member *m, const char *key)
{
    struct sw_informer *inf = sw_cluster_cache_informer(m->cache, SW_KIND_NODECLAIM);
    const cJSON *obj = inf ? sw_informer_get(inf, key) : NULL;
    struct sw_nodeclaim_facts f;
    if (obj == NULL && inf != NULL)
        life_gone(m, key);
    else if (obj != NULL && sw_nodeclaim_facts_from_json(obj, &f, NULL) == 0) {
        count_claim(h, m, &f);
        life_seen(m, &f);
        shortage_claim(h, m, &f);
    }
    lives_trim(h, m);
}

struct life_write {
    struct sw_hub *h;
    char cluster[SW_CLUSTER_NAME_MAX];
    char name[SW_CLUSTER_NAME_MAX + 32];
};

static void on_life_written(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct life_write *w = ctx;
    struct sw_hub *h = w->h;
    struct sw_member *m = sw_member_find(h, w->cluster);
    struct sw_claim_life *l = m ? life_find(m, w->name) : NULL;
    bool ok = reply != NULL && reply->type != REDIS_REPLY_ERROR;
    if (l != NULL) {
        l->writing = false;
        if (!ok)
            l->dirty = true;
        else if (!l->dirty && l->deleted_ms != 0) /* its end is in Redis: forgotten here */
            *l = m->lives[--m->nlives];
    }
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && strstr(reply->str, "FENCED")) {
        h->m.fenced++;
        if (!h->retake_wanted)
            sw_leader_lost(h, "a fenced write was refused: another hub has a newer epoch");
    } else if (!ok) {
        SW_LOG(SW_LOG_WARN, "cannot write a NodeClaim's life; trying again",
               "cluster=%s nodeclaim=%s err=%s", sw_log_q(w->cluster), sw_log_q(w->name),
               sw_log_q(reply  ? reply->str
                        : errs ? errs
                               : "no reply"));
    }
    sw_free(w);
}

static void write_life(struct sw_hub *h, struct sw_member *m, struct sw_claim_life *l)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return;
    cJSON_AddStringToObject(o, "cluster", m->rec.name);
    cJSON_AddStringToObject(o, "pool", l->pool);
    cJSON_AddStringToObject(o, "nodePool", l->nodepool);
    cJSON_AddNumberToObject(o, "gpus", (double)l->gpus);
    cJSON_AddNumberToObject(o, "pricePerGpuHour", l->price_gpu_h);
    cJSON_AddNumberToObject(o, "createdMs", (double)l->created_ms);
    cJSON_AddNumberToObject(o, "deletedMs", (double)l->deleted_ms);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    struct life_write *w = text ? sw_calloc(1, sizeof(*w)) : NULL;
    if (w == NULL) {
        cJSON_free(text);
        return;
    }
    w->h = h;
    snprintf(w->cluster, sizeof(w->cluster), "%s", m->rec.name);
    snprintf(w->name, sizeof(w->name), "%s", l->name);
    char epoch[32], field[2 * SW_CLUSTER_NAME_MAX + 34];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)h->epoch);
    snprintf(field, sizeof(field), "%s/%s", m->rec.name, l->name);
    const char *argv[] = {"EVAL", HSET_LUA, "2", SW_KEY_EPOCH, SW_KEY_NODE_HOURS,
                          epoch,  field,    text};
    l->dirty = false;
    l->writing = true;
    if (sw_redis_command_argv(h->redis, on_life_written, w, 8, argv, NULL) != 0) {
        l->dirty = true;
        l->writing = false;
        sw_free(w);
    }
    cJSON_free(text);
}

/* ---- learned figures in Redis ------------------------------------------------ */

/*
 * spillway:learned is a hash, "cluster/nodepool" -> sw_learned_to_json.
 * The leader writes an entry when it changed (each tick, one write in
 * flight per entry), under its epoch checked inside Redis as the records
 * are; a new leader reads them all before it acts.
 */
struct learned_write {
    struct sw_hub *h;
    char cluster[SW_CLUSTER_NAME_MAX];
    char nodepool[SW_CLUSTER_NAME_MAX];
};

static struct sw_nodepool_state *find_state(struct sw_hub *h, const char *cluster,
                                            const char *nodepool)
{
    struct sw_member *m = sw_member_find(h, cluster);
    for (size_t i = 0; m != NULL && i < m->nnodepools; i++)
        if (strcmp(m->nodepools[i].name, nodepool) == 0)
            return &m->nodepools[i];
    return NULL;
}

static void on_learned_written(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct learned_write *w = ctx;
    struct sw_hub *h = w->h;
    struct sw_nodepool_state *s = find_state(h, w->cluster, w->nodepool);
    if (s != NULL)
        s->writing = false;
    bool ok = reply != NULL && reply->type != REDIS_REPLY_ERROR;
    if (!ok && s != NULL)
        s->dirty = true; /* the next tick tries again */
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR && strstr(reply->str, "FENCED")) {
        h->m.fenced++;
        if (!h->retake_wanted)
            sw_leader_lost(h, "a fenced write was refused: another hub has a newer epoch");
    } else if (!ok) {
        SW_LOG(SW_LOG_WARN, "cannot write a NodePool's learned figures; trying again",
               "cluster=%s nodepool=%s err=%s", sw_log_q(w->cluster), sw_log_q(w->nodepool),
               sw_log_q(reply  ? reply->str
                        : errs ? errs
                               : "no reply"));
    }
    sw_free(w);
}

static void write_learned(struct sw_hub *h, struct sw_member *m, struct sw_nodepool_state *s)
{
    cJSON *o = sw_learned_to_json(&s->seen);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    struct learned_write *w = text ? sw_calloc(1, sizeof(*w)) : NULL;
    if (w == NULL) {
        cJSON_free(text);
        return;
    }
    w->h = h;
    snprintf(w->cluster, sizeof(w->cluster), "%s", m->rec.name);
    snprintf(w->nodepool, sizeof(w->nodepool), "%s", s->name);
    char epoch[32], field[2 * SW_CLUSTER_NAME_MAX + 2];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)h->epoch);
    snprintf(field, sizeof(field), "%s/%s", m->rec.name, s->name);
    const char *argv[] = {"EVAL", HSET_LUA, "2", SW_KEY_EPOCH, SW_KEY_LEARNED, epoch, field, text};
    s->dirty = false;
    s->writing = true;
    if (sw_redis_command_argv(h->redis, on_learned_written, w, 8, argv, NULL) != 0) {
        s->dirty = true;
        s->writing = false;
        sw_free(w);
    }
    cJSON_free(text);
}

void sw_capacity_flush(struct sw_hub *h)
{
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        for (size_t k = 0; k < m->nnodepools; k++)
            if (m->nodepools[k].dirty && !m->nodepools[k].writing)
                write_learned(h, m, &m->nodepools[k]);
        /* Backwards: a write's reply may drop an entry by moving the last. */
        for (size_t k = m->nlives; k-- > 0;)
            if (m->lives[k].dirty && !m->lives[k].writing)
                write_life(h, m, &m->lives[k]);
    }
}

static void recount(const struct sw_nodeclaim_facts *claim, void *ctx)
{
    void **hm = ctx;
    count_claim(hm[0], hm[1], claim);
    shortage_claim(hm[0], hm[1], claim);
}

struct load_ctx {
    struct sw_hub *h;
    void (*done)(struct sw_hub *h, int rc);
};

static void on_learned(struct sw_redis *r, redisReply *reply, const char *errs, void *ctx)
{
    (void)r;
    struct load_ctx *l = ctx;
    struct sw_hub *h = l->h;
    void (*done)(struct sw_hub *, int) = l->done;
    sw_free(l);
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        SW_LOG(SW_LOG_WARN, "cannot read the NodePools' learned figures", "err=%s",
               sw_log_q(reply && reply->type == REDIS_REPLY_ERROR ? reply->str
                        : errs                                    ? errs
                                                                  : "no reply"));
        done(h, SW_EUNAVAIL);
        return;
    }
    size_t n = reply->elements / 2, got = 0;
    struct sw_learned_entry *t = n ? sw_calloc(n, sizeof(*t)) : NULL;
    if (n > 0 && t == NULL) {
        done(h, SW_ENOMEM);
        return;
    }
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *k = reply->element[i], *v = reply->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            k->len >= sizeof(t[0].key))
            continue;
        struct sw_error err = {0};
        cJSON *o = NULL;
        struct sw_learned seen;
        if (sw_json_parse(v->str, v->len, k->str, &o, &err) != 0 ||
            sw_learned_from_json(o, k->str, &seen, &err) != 0) {
            /* One bad entry costs that NodePool its history, nothing else. */
            SW_LOG(SW_LOG_WARN, "unreadable learned figures; that NodePool starts from the prior",
                   "key=%s err=%s", sw_log_q(k->str), sw_log_q(err.msg));
            cJSON_Delete(o);
            continue;
        }
        cJSON_Delete(o);
        snprintf(t[got].key, sizeof(t[got].key), "%s", k->str);
        t[got++].seen = seen;
    }
    sw_free(h->learned);
    h->learned = t;
    h->nlearned = got;
    /* Members known already start again from what was stored: what this
     * hub counted while it stood by is counted again from its cache, past
     * what the stored figures include. */
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        for (size_t k = 0; k < m->nnodepools; k++) {
            struct sw_nodepool_state *s = &m->nodepools[k];
            const struct sw_learned *ld = loaded(h, m->rec.name, s->name);
            s->seen = ld ? *ld : (struct sw_learned){0};
            s->loaded_mark_ms = ld ? ld->last_ready_ms : 0;
            s->dirty = false;
            s->stuck_since_ms = 0;
            s->full_since_ms = 0;
        }
        memset(m->counted, 0, sizeof(m->counted));
        m->counted_at = 0;
        /* What a standby saw of claims' lives is written now (idempotent:
         * the times are the claims' own). */
        for (size_t k = 0; k < m->nlives; k++)
            m->lives[k].dirty = true;
        if (m->cache && sw_cluster_cache_karpenter(m->cache)) {
            void *hm[2] = {h, m};
            sw_cluster_cache_nodeclaims_foreach(m->cache, recount, hm);
        }
    }
    SW_LOG(SW_LOG_INFO, "NodePools' learned figures loaded", "entries=%zu", got);
    done(h, 0);
}

int sw_capacity_load(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc))
{
    struct load_ctx *l = sw_calloc(1, sizeof(*l));
    if (l == NULL)
        return SW_ENOMEM;
    *l = (struct load_ctx){h, done};
    int rc = sw_redis_command(h->redis, on_learned, l, "HGETALL %s", SW_KEY_LEARNED);
    if (rc != 0)
        sw_free(l);
    return rc;
}
