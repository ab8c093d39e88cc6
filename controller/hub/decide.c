/*
 * decide.c - the placement engine over the whole pending queue.
 *
 * Each round builds one snapshot from what the hub knows now, never from
 * what it cannot know:
 *   pools     every member's pools (spillctl cluster add), with total,
 *             free and ceiling GPUs and the provisioning delay from where
 *             the pool's capacity comes from (capacity.c: fixed nodes, or
 *             a Karpenter NodePool), the registered price, and for spot a
 *             default interruption rate; a member whose Kueue left a
 *             mirror unadmitted past kueue.mirrorAdmissionSeconds has no
 *             room for as long again (follow.c)
 *   links     between every two regions, at the default egress price
 *   queues    the GPU pods running at home, each expected to free its GPUs
 *             after the running-Job prior; on a member whose Kueue is read,
 *             its ClusterQueues' headroom (cohort lending included) caps
 *             what is free, and the Workloads pending for quota that
 *             spillway does not manage queue ahead (queue.c); a member
 *             with several ClusterQueues also has a view of each pool per
 *             ClusterQueue, which only the Jobs admitted through that
 *             queue may use (add_queue_pools)
 *   pending   every managed Job that waits for a decision: a delegated Job
 *             not yet dispatched, an annotation-only Job whose pods are
 *             Unschedulable for lack of GPUs with none running, and a Job
 *             put back after a lost mirror
 * and decides them as one queue (placement/engine.h). A burst, or for a
 * delegated Job any placement, moves the record to "decided" with the
 * explanation of every option; an annotation-only Job that should stay is
 * left to its own cluster and looked at again next round.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/json.h"
#include "clusters/exec.h"
#include "clusters/record.h"
#include "controller/hub/annotations.h"
#include "controller/hub/hub.h"
#include "controller/hub/learn.h"
#include "placement/explain.h"

/* Defaults a hub cannot observe; docs/hub.md lists them. */
/* The runtime MultiKueue's Workloads are ranked with (exact), and of a
 * Workload ahead in a Kueue queue with no expected-runtime annotation. */
#define PRIOR_RUNTIME_S  3600.0
#define EGRESS_PER_GB    0.02
#define LINK_GBPS        10.0
#define BLOCKED_RETRY_MS 30000

/* One ClusterQueue's share of an owned pool: its name and the GPUs it has
 * reserved (those its admitted Jobs give back as they end). */
struct pool_queue {
    char cq[64];
    int64_t reserved;
};

/* A pending workload's Kueue queue at home, when one holds it. */
struct pending_queue {
    bool set;
    struct sw_job_kueue k;
};

struct round {
    struct sw_hub *h;
    struct sw_pool *pools;
    size_t npools, cap_pools;
    struct sw_link *links;
    size_t nlinks;
    struct sw_workload *work;
    struct sw_job **jobs;
    bool *requeued; /* per pending workload: put back after a lost mirror */
    size_t nwork, cap_work, cap_jobs, cap_requeued;
    const struct sw_pool_spec **specs; /* per pool: the registered pool it came from */
    size_t cap_specs;
    struct sw_pool_figures *figs; /* per pool: its figures and what they rest on */
    size_t cap_figs;
    struct sw_running *running;
    size_t nrunning, cap_running;
    struct sw_running *mig_running; /* per pool, SW_MAX_MIG each */
    struct sw_local_queue *queues;
    size_t nqueues;
    /* per pool: Workloads Kueue queues ahead of every burstable Job (owned
     * pools of a member whose Kueue is read), and how many */
    struct sw_queued **aheads;
    size_t *naheads;
    size_t cap_aheads, cap_naheads;
    /* per pool: the ClusterQueue whose view of a member's pool it is (a
     * queue_only pool of a member with several), "" for any other pool */
    struct pool_queue *pool_cq;
    size_t cap_pool_cq;
    /* per member whose Kueue is read: its home queue (owned here), for
     * what a decision says of a Kueue Job's queue */
    struct sw_queue_home *homes;
    const struct sw_member **home_of;
    size_t nhomes, cap_homes, cap_home_of;
    struct pending_queue *kq; /* per pending workload */
    size_t cap_kq;
    /* every team budget: what is left of it, for the engine (spend.c) */
    struct sw_budget budgets[SW_HUB_MAX_BUDGETS];
    size_t nbudgets;
    /* MultiKueue dispatch (sw_decide_workers): only these members' pools */
    bool only_set;
    const char (*only)[SW_MK_NAME_MAX];
    size_t nonly;
};

static bool pool_member_wanted(const struct round *rd, const char *member)
{
    if (!rd->only_set)
        return true;
    for (size_t i = 0; i < rd->nonly; i++)
        if (strcmp(rd->only[i], member) == 0)
            return true;
    return false;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *q = sw_realloc(*p, n * size);
    if (q == NULL)
        return SW_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

struct reserve {
    const char *cluster, *capacity;
    int gpus;   /* promised, not on a node yet */
    int queued; /* of those, not yet reserved by the target's Kueue */
};

static void reserve_one(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    struct reserve *rv = ctx;
    const struct sw_job_rec *r = &j->rec;
    enum sw_job_state s = r->state;
    if (strcmp(r->target_cluster, rv->cluster) != 0 || strcmp(r->capacity, rv->capacity) != 0)
        return;
    /* A mirror just created has no pod yet (the target's Job controller
     * makes them, at its own pace): its GPUs are neither used on a node
     * nor pending there, so they are still promised here. */
    bool mirror = s == SW_JS_DISPATCHED;
    if (!(s == SW_JS_DECIDED || s == SW_JS_DATA_READY || s == SW_JS_DISPATCHING ||
          (mirror && sw_observe_pods(h, r->target_cluster, r->ns, r->mirror, NULL) == 0)))
        return;
    rv->gpus += r->gpus;
    /* Once the target's Kueue has reserved quota for the mirror's Workload,
     * its ClusterQueue counts those GPUs among its own reserved ones: not
     * promised against its headroom as well. */
    const struct sw_job_record *mr = mirror ? sw_observe_mirror_record(h, r) : NULL;
    if (mr == NULL || sw_queue_admitted_by(r->target_cluster, mr->uid) == NULL)
        rv->queued += r->gpus;
}

/* GPUs of Jobs decided for a pool whose mirrors do not exist yet, or have
 * no pod yet; `*queued`: those of them the target's Kueue has not reserved
 * quota for. */
static int reserved_gpus(struct sw_hub *h, const char *cluster, const char *capacity, int *queued)
{
    struct reserve rv = {cluster, capacity, 0, 0};
    sw_hub_jobs_foreach(h, reserve_one, &rv);
    *queued = rv.queued;
    return rv.gpus;
}

/* Room in every per-pool array for one more pool; its queue fields cleared. */
static int room_for_pool(struct round *rd)
{
    size_t n = rd->npools + 1;
    if (grow((void **)&rd->pools, &rd->cap_pools, n, sizeof(*rd->pools)) != 0 ||
        grow((void **)&rd->specs, &rd->cap_specs, n, sizeof(*rd->specs)) != 0 ||
        grow((void **)&rd->aheads, &rd->cap_aheads, n, sizeof(*rd->aheads)) != 0 ||
        grow((void **)&rd->naheads, &rd->cap_naheads, n, sizeof(*rd->naheads)) != 0 ||
        grow((void **)&rd->figs, &rd->cap_figs, n, sizeof(*rd->figs)) != 0 ||
        grow((void **)&rd->pool_cq, &rd->cap_pool_cq, n, sizeof(*rd->pool_cq)) != 0)
        return SW_ENOMEM;
    rd->aheads[rd->npools] = NULL;
    rd->naheads[rd->npools] = 0;
    memset(&rd->pool_cq[rd->npools], 0, sizeof(rd->pool_cq[rd->npools]));
    return 0;
}

/* Names cut to fit may collide; the engine wants them unique. */
static void unique_name(struct round *rd, struct sw_pool *o, const char *member)
{
    for (size_t k = 0; k < rd->npools; k++)
        if (strcmp(rd->pools[k].name, o->name) == 0) {
            snprintf(o->name, sizeof(o->name), "%.30s#%u", member, (unsigned)(rd->npools % 100000));
            return;
        }
}

/* A cloud pool whose Kueue may still reserve `room` GPUs: free GPUs and
 * the room to grow alike are bounded by it. */
static void cap_by_room(struct sw_pool *o, int64_t room)
{
    if (room < 0)
        room = 0;
    int used = o->total_gpus - o->free_gpus;
    if (o->free_gpus > room)
        o->free_gpus = (int)room;
    if ((int64_t)o->max_gpus > used + room)
        o->max_gpus = used + (int)room;
    if (o->total_gpus > o->max_gpus)
        o->total_gpus = o->max_gpus;
}

/*
 * A member with several ClusterQueues: each gets its own view of the pool
 * just added (`pre`: as it was before Kueue's caps; `res`: the GPUs
 * promised there that its Kueue has not reserved), a queue_only pool only
 * the Jobs that would be admitted through that queue may use, so that a
 * Job is told what its own ClusterQueue may still reserve (its cohort's
 * lending included), not what all of them may between them (docs/kueue.md,
 * "The home option's wait" and "Into the cloud's queue"). At home, the
 * Workloads waiting ahead in that queue and the GPUs it reserved, which its
 * Jobs give back.
 */
static void add_queue_pools(struct round *rd, const struct sw_member *m,
                            const struct sw_queue_home *qh, const struct sw_pool *pre, int res,
                            int64_t milli_per_unit)
{
    size_t base = rd->npools - 1;
    for (size_t i = 0; i < qh->ncq; i++) {
        if (room_for_pool(rd) != 0)
            return;
        size_t n = rd->npools;
        rd->pools[n] = *pre;
        struct sw_pool *o = &rd->pools[n];
        const char *cq = qh->cq[i].name;
        int64_t unit = o->time_sliced ? milli_per_unit : 1;
        o->queue_only = true;
        snprintf(o->name, sizeof(o->name), "%.31s/%.31s", pre->name, cq);
        unique_name(rd, o, m->rec.name);
        /* A cloud pool's mirror is admitted only to the flavours that
         * take its capacity type (queue.c). */
        int64_t room =
            (o->capacity != SW_CAP_OWNED
                 ? sw_queue_home_pool_headroom(qh, rd->specs[base]->capacity_type, (long)i)
                 : sw_queue_home_cq_headroom(qh, i)) *
            unit;
        snprintf(rd->pool_cq[n].cq, sizeof(rd->pool_cq[n].cq), "%s", cq);
        rd->pool_cq[n].reserved = qh->cq[i].reserved_gpus * unit;
        rd->specs[n] = rd->specs[base];
        rd->figs[n] = rd->figs[base];
        rd->npools++;
        if (o->capacity != SW_CAP_OWNED) {
            cap_by_room(o, room - res);
            continue;
        }
        if (o->free_gpus > room)
            o->free_gpus = (int)room;
        size_t na = 0;
        struct sw_queued *a = qh->nahead ? sw_calloc(qh->nahead, sizeof(*a)) : NULL;
        for (size_t k = 0; a != NULL && k < qh->nahead; k++) {
            /* One whose queue is not known yet waits ahead in each. */
            const char *of = sw_queue_home_ahead_cq(qh, k);
            if (of == NULL || strcmp(of, cq) == 0)
                a[na++] = (struct sw_queued){
                    .gpus = (int)sw_queue_home_ahead_gpus(qh, k),
                    .runtime_s = sw_queue_home_ahead_runtime(qh, k, PRIOR_RUNTIME_S)};
        }
        rd->aheads[n] = a;
        rd->naheads[n] = na;
    }
}

static void add_pools(struct round *rd)
{
    struct sw_hub *h = rd->h;
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        /* Not a member that is lost, fenced, not answering, or still has a
         * stale mirror to delete. */
        if (!sw_member_usable(m) || !pool_member_wanted(rd, m->rec.name))
            continue;
        struct sw_gpu_capacity cap = {0};
        if (sw_cluster_cache_capacity(m->cache, &cap) != 0)
            continue;
        /* Kueue's quota says what is free at home, not idle nodes: a GPU the
         * quota does not allow is not free (queue.c). */
        struct sw_queue_home qh;
        bool kueue = sw_queue_home(h, m, &qh) == 0;
        /* A member that queues mirrors in its Kueue (--local-queue) whose
         * Kueue the hub does not read (yet, or ever: queue.c says why):
         * a mirror would wait in a queue the hub cannot see, so there is
         * no room there until it can. */
        bool blind = !kueue && m->rec.spec.local_queue[0] != '\0';
        if (blind) {
            const char *why = sw_queue_kueue_unreadable(m);
            if (why[0] != '\0')
                SW_LOG(SW_LOG_DEBUG, "no room on a member whose Kueue the hub cannot read",
                       "cluster=%s why=%s", sw_log_q(m->rec.name), sw_log_q(why));
        }
        for (size_t p = 0; p < m->rec.spec.npools; p++) {
            const struct sw_pool_spec *ps = &m->rec.spec.pools[p];
            if (room_for_pool(rd) != 0)
                break;
            struct sw_pool *o = &rd->pools[rd->npools];
            memset(o, 0, sizeof(*o));
            if (m->rec.spec.npools == 1)
                snprintf(o->name, sizeof(o->name), "%.*s", (int)sizeof(o->name) - 1, m->rec.name);
            else
                snprintf(o->name, sizeof(o->name), "%.23s/%.23s", m->rec.name, ps->name);
            snprintf(o->cluster, sizeof(o->cluster), "%.*s", (int)sizeof(o->cluster) - 1,
                     m->rec.name);
            snprintf(o->region, sizeof(o->region), "%.*s", (int)sizeof(o->region) - 1,
                     m->rec.spec.region);
            if (sw_capacity_parse(ps->capacity_type, &o->capacity) != 0)
                continue;
            snprintf(o->product, sizeof(o->product), "%.*s", (int)sizeof(o->product) - 1,
                     ps->gpu_product);
            o->gpu_mem_gb = (double)ps->gpu_memory_mib / 1024.0;
            /* Its figures from where its capacity comes from (capacity.c). */
            struct sw_pool_figures fig = {0};
            if (sw_capacity_source_of(ps)->figures(h, m, ps, &cap, &fig) != 0)
                continue;
            o->total_gpus = (int)fig.total;
            o->free_gpus = (int)fig.free;
            o->max_gpus = (int)fig.ceiling;
            o->provision_s = fig.provision_s;
            /* Its NodePool short of capacity: when it can add GPUs again,
             * and that wait's distribution (capacity.c). */
            o->capacity_wait_s = fig.capacity_wait_s;
            o->n_capacity_wait_points = fig.n_capacity_wait_points < SW_WAIT_POINTS
                                            ? fig.n_capacity_wait_points
                                            : SW_WAIT_POINTS;
            for (int k = 0; k < o->n_capacity_wait_points; k++)
                o->capacity_wait_points[k] = fig.capacity_wait_points[k];
            o->price_gpu_h = ps->price_per_gpu_hour;
            o->interrupt_per_h = fig.interrupt_per_h;
            /* Shared and partitioned GPUs its nodes advertise. */
            o->time_sliced = fig.time_sliced;
            o->n_mig = fig.nmig;
            for (int k = 0; k < fig.nmig; k++) {
                struct sw_mig_offer *mo = &o->mig[k];
                memcpy(mo->profile, fig.mig[k].profile, sizeof(mo->profile));
                mo->per_gpu = fig.mig[k].per_gpu;
                mo->total = (int)fig.mig[k].total;
                mo->free = (int)fig.mig[k].free;
            }
            unique_name(rd, o, m->rec.name);
            /* GPUs promised to Jobs on their way there are not free: idle
             * ones first, then room to provision (a NodePool's). */
            int res_q = 0;
            int res = reserved_gpus(h, m->rec.name, ps->capacity_type, &res_q);
            if (o->time_sliced) {
                res *= 1000; /* a GPU promised, in thousandths */
                res_q *= 1000;
            }
            int take = res < o->free_gpus ? res : o->free_gpus;
            o->free_gpus -= take;
            o->total_gpus += res - take;
            if (o->total_gpus > o->max_gpus)
                o->total_gpus = o->max_gpus;
            /* Its Kueue left a mirror unadmitted past the bound (follow.c):
             * no room there for as long again. */
            /* Or its Kueue is not read (blind, above). */
            if (m->queue_aside_until_ms > sw_hub_wall_ms() ||
                (blind && o->capacity != SW_CAP_OWNED)) {
                o->free_gpus = 0;
                o->max_gpus = o->total_gpus;
            }
            struct sw_pool pre = *o;
            if (kueue && o->capacity != SW_CAP_OWNED) {
                /* A cloud member that queues mirrors in Kueue: what its
                 * ClusterQueues may still reserve in the flavours that
                 * take the pool's capacity type bounds the pool, less the
                 * GPUs promised there that Kueue has not reserved yet
                 * (those it has are in its figures already). */
                int64_t room = sw_queue_home_pool_headroom(&qh, ps->capacity_type, -1);
                cap_by_room(o, (o->time_sliced ? room * fig.milli_per_unit : room) - res_q);
            }
            if (kueue && o->capacity == SW_CAP_OWNED) {
                /* Kueue counts units of nvidia.com/gpu (replicas when
                 * time-sliced). */
                int64_t room = o->time_sliced ? qh.headroom * fig.milli_per_unit : qh.headroom;
                if (o->free_gpus > room)
                    o->free_gpus = (int)room;
                struct sw_queued *a = qh.nahead ? sw_calloc(qh.nahead, sizeof(*a)) : NULL;
                for (size_t k = 0; a != NULL && k < qh.nahead; k++)
                    a[k] = (struct sw_queued){
                        .gpus = (int)sw_queue_home_ahead_gpus(&qh, k),
                        .runtime_s = sw_queue_home_ahead_runtime(&qh, k, PRIOR_RUNTIME_S)};
                rd->aheads[rd->npools] = a;
                rd->naheads[rd->npools] = a ? qh.nahead : 0;
            }
            rd->specs[rd->npools] = ps;
            rd->figs[rd->npools] = fig;
            rd->npools++;
            /* Jobs outside Kueue, and those whose ClusterQueue there is not
             * known yet, use the pool above; a Kueue Job at home, its
             * queue's own view; a mirror into the member's LocalQueue, the
             * view of that LocalQueue's ClusterQueue. */
            if (kueue && qh.ncq > 1)
                add_queue_pools(rd, m, &qh, &pre, res_q, fig.milli_per_unit);
        }
        sw_capacity_free(&cap);
        /* Kept for the round: a Kueue Job's decision names its queue. */
        if (!kueue)
            continue;
        if (grow((void **)&rd->homes, &rd->cap_homes, rd->nhomes + 1, sizeof(*rd->homes)) == 0 &&
            grow((void **)&rd->home_of, &rd->cap_home_of, rd->nhomes + 1, sizeof(*rd->home_of)) ==
                0) {
            rd->homes[rd->nhomes] = qh;
            rd->home_of[rd->nhomes++] = m;
        } else {
            sw_queue_home_free(&qh);
        }
    }
    /* Every ordered pair of distinct regions. */
    size_t n = rd->npools;
    rd->links = sw_calloc(n * n + 1, sizeof(*rd->links));
    if (rd->links == NULL)
        return;
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++) {
            if (strcmp(rd->pools[a].region, rd->pools[b].region) == 0)
                continue;
            bool dup = false;
            for (size_t k = 0; k < rd->nlinks && !dup; k++)
                dup = strcmp(rd->links[k].from, rd->pools[a].region) == 0 &&
                      strcmp(rd->links[k].to, rd->pools[b].region) == 0;
            if (dup)
                continue;
            struct sw_link *l = &rd->links[rd->nlinks++];
            memcpy(l->from, rd->pools[a].region, sizeof(l->from));
            memcpy(l->to, rd->pools[b].region, sizeof(l->to));
            l->price_per_gb = EGRESS_PER_GB;
            l->bandwidth_gbps = LINK_GBPS;
        }
}

/*
 * The GPU pods running at home in one owned pool, each freeing its GPUs
 * when its Job is expected to end: from the runtime the Job declares
 * (spillway.io/expected-runtime) and its start, as the engine reckons a
 * running Job's remaining time (learn.h), never past its Workload's
 * maximum execution time, when Kueue's admission has one. GPUs of pods
 * whose Job declares neither, and GPUs in use that no running pod accounts
 * for (pods still binding, Jobs on their way home), keep the prior. On a
 * time-sliced pool each pod is an entry of its own, in thousandths, even
 * at the prior: the engine reads the shares running there (how many whole
 * GPUs the cloud would rent for them) for the home queue's congestion.
 */
struct home_scan {
    struct round *rd;
    struct sw_member *m;
    const struct sw_pool_spec *ps;
    const char *cq; /* a ClusterQueue's share: only its admitted Jobs' pods */
    int64_t now_ms;
    int left;    /* GPUs in use not yet given a remaining time */
    bool sliced; /* a time-sliced pool: counts in thousandths of a GPU */
};

static const char *node_label(const void *ctx, const char *key)
{
    const struct sw_node_record *n = ctx;
    for (uint16_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

static void home_pod(const char *key, const void *obj, void *ctx)
{
    (void)key;
    struct home_scan *hs = ctx;
    const struct sw_pod_record *p = obj;
    if (hs->left <= 0 || p->gpu_request <= 0 || p->node == NULL || p->owner == NULL ||
        p->phase == NULL || strcmp(p->phase, "Running") != 0)
        return;
    const struct sw_node_record *n =
        sw_informer_get(sw_cluster_cache_informer(hs->m->cache, SW_KIND_NODE), p->node);
    if (n == NULL || strcmp(sw_capacity_type_of(node_label, n), hs->ps->capacity_type) != 0)
        return;
    const char *product = node_label(n, "nvidia.com/gpu.product");
    if (hs->ps->gpu_product[0] && (product == NULL || strcmp(product, hs->ps->gpu_product) != 0))
        return;
    char jk[200];
    snprintf(jk, sizeof(jk), "%s/%s", p->ns, p->owner);
    const struct sw_job_record *j =
        sw_informer_get(sw_cluster_cache_informer(hs->m->cache, SW_KIND_JOB), jk);
    if (hs->cq != NULL) {
        const char *by = j != NULL ? sw_queue_admitted_by(hs->m->rec.name, j->uid) : NULL;
        if (by == NULL || strcmp(by, hs->cq) != 0)
            return; /* another queue's, or no queue's */
    }
    const char *declared = j ? sw_job_record_annotation(j, SW_ANN_RUNTIME) : NULL;
    int64_t max_s = j ? sw_queue_max_exec_s(hs->m->rec.name, j->uid) : 0;
    double declared_s = 0;
    int64_t start_ms = 0;
    const char *why = NULL;
    if (declared != NULL && sw_duration_parse(declared, &declared_s) != 0)
        declared_s = 0;
    bool prior = (declared_s <= 0 && max_s <= 0) || j->start_time == NULL ||
                 sw_parse_rfc3339(j->start_time, &start_ms, &why) != 0;
    if (prior && !hs->sliced)
        return; /* the prior, with the rest */
    struct round *rd = hs->rd;
    if (grow((void **)&rd->running, &rd->cap_running, rd->nrunning + 1, sizeof(*rd->running)) != 0)
        return;
    int64_t want =
        hs->sliced ? p->gpu_request * (1000 / sw_gpu_replicas_of(node_label, n)) : p->gpu_request;
    int gpus = want < hs->left ? (int)want : hs->left;
    /* Declared or not, Kueue stops it at its maximum execution time. */
    double remaining =
        prior ? SW_PRIOR_HOME_REMAINING
              : sw_learn_capped_remaining(sw_learn_home_remaining(declared_s, start_ms, hs->now_ms),
                                          (double)max_s, start_ms, hs->now_ms);
    rd->running[rd->nrunning++] = (struct sw_running){.gpus = gpus, .remaining_s = remaining};
    hs->left -= gpus;
}

static void add_queues(struct round *rd)
{
    struct sw_hub *h = rd->h;
    rd->queues = sw_calloc(rd->npools + 1, sizeof(*rd->queues));
    if (rd->queues == NULL)
        return;
    for (size_t p = 0; p < rd->npools; p++) {
        if (rd->pools[p].capacity != SW_CAP_OWNED)
            continue;
        int used = rd->pools[p].total_gpus - rd->pools[p].free_gpus;
        /* A ClusterQueue's share: what it reserved comes back to it as its
         * Jobs end; the rest of the pool's GPUs in use never do. */
        const char *cq = rd->pools[p].queue_only ? rd->pool_cq[p].cq : NULL;
        if (cq != NULL && rd->pool_cq[p].reserved < used)
            used = rd->pool_cq[p].reserved < 0 ? 0 : (int)rd->pool_cq[p].reserved;
        size_t first = rd->nrunning;
        /* On a time-sliced pool, in thousandths: each pod's share. */
        struct sw_member *m = sw_member_find(h, rd->pools[p].cluster);
        struct home_scan hs = {
            rd, m, rd->specs[p], cq, sw_hub_wall_ms(), used, rd->pools[p].time_sliced};
        if (used > 0 && m && m->cache)
            sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_POD), home_pod, &hs);
        if (hs.left > 0) {
            if (grow((void **)&rd->running, &rd->cap_running, rd->nrunning + 1,
                     sizeof(*rd->running)) != 0)
                return;
            rd->running[rd->nrunning++] =
                (struct sw_running){.gpus = hs.left, .remaining_s = SW_PRIOR_HOME_REMAINING};
        }
        struct sw_local_queue *q = &rd->queues[rd->nqueues++];
        memcpy(q->pool, rd->pools[p].name, sizeof(q->pool));
        q->n_running = rd->nrunning - first;
        q->running = NULL; /* set after the array stops moving */
        q->ahead = rd->aheads[p];
        q->n_ahead = rd->naheads[p];
        (void)first;
    }
    /* Fix up the borrowed pointers now that rd->running is final. */
    size_t at = 0;
    for (size_t k = 0; k < rd->nqueues; k++) {
        rd->queues[k].running = rd->queues[k].n_running ? &rd->running[at] : NULL;
        at += rd->queues[k].n_running;
    }
    /* MIG slices in use on owned pools, each expected to return after the
     * prior as whole GPUs are (the engine waits for them per profile). */
    rd->mig_running = sw_calloc(rd->npools * SW_MAX_MIG + 1, sizeof(*rd->mig_running));
    for (size_t p = 0; rd->mig_running != NULL && p < rd->npools; p++) {
        struct sw_pool *o = &rd->pools[p];
        for (int k = 0; o->capacity == SW_CAP_OWNED && k < o->n_mig; k++) {
            struct sw_mig_offer *mo = &o->mig[k];
            if (mo->total <= mo->free)
                continue;
            struct sw_running *e = &rd->mig_running[p * SW_MAX_MIG + (size_t)k];
            *e = (struct sw_running){.gpus = mo->total - mo->free,
                                     .remaining_s = SW_PRIOR_HOME_REMAINING};
            mo->running = e;
            mo->n_running = 1;
        }
    }
    (void)h;
}

static bool wants_decision(struct sw_hub *h, struct sw_job *j, const cJSON *origin)
{
    if (j->busy || !j->persisted)
        return false;
    struct sw_job_rec *r = &j->rec;
    /* Blocked by its queue (Kueue cannot admit it as queued): the queue
     * says every round whether that is over (queue.c). */
    if (sw_queue_blocked(j))
        return sw_queue_of(origin)->waits(h, j, origin);
    if (r->state == SW_JS_BLOCKED && sw_hub_wall_ms() - r->decided_ms < BLOCKED_RETRY_MS)
        return false;
    if (r->state != SW_JS_OBSERVED && r->state != SW_JS_BLOCKED)
        return false;
    if (r->form == SW_FORM_DELEGATED || sw_follow_requeued(r, origin) || sw_loss_origin_fenced(r))
        return true;
    /* Annotation only: it waits for GPUs in its queue at home, none of its
     * pods runs (queue.c: plain or Kueue). */
    return sw_queue_of(origin)->waits(h, j, origin);
}

/*
 * The views of ClusterQueues (add_queue_pools) a Job would be admitted
 * through: at home, the one it waits in; elsewhere, the ClusterQueue of the
 * LocalQueue its mirror would go into there (dispatch.c: the member's
 * registered one, else the origin's own LocalQueue name) in the Job's
 * namespace. Where the queue is not known, none: the member's summed
 * view. False while a LocalQueue is being read: the Job is decided once it
 * is (a round later).
 */
static bool name_queue_pools(struct round *rd, const struct sw_job *j,
                             const struct pending_queue *pq, const cJSON *origin,
                             struct sw_workload *w)
{
    /* The origin's LocalQueue: its label, or the take's annotation once
     * taken (as dispatch reads it). */
    const char *oq = sw_queue_origin_queue(origin);
    int first = 0; /* where the current cluster's names begin */
    bool full = false;
    for (size_t p = 0; p < rd->npools; p++) {
        if (p > 0 && strcmp(rd->pools[p].cluster, rd->pools[p - 1].cluster) != 0) {
            first = w->n_queue_pools;
            full = false;
        }
        if (!rd->pools[p].queue_only || full)
            continue;
        struct sw_member *m = sw_member_find(rd->h, rd->pools[p].cluster);
        const char *cq = NULL, *lq = NULL;
        bool home = strcmp(rd->pools[p].cluster, j->rec.cluster) == 0, asking = false;
        if (home && pq->set && pq->k.cluster_queue[0] != '\0')
            cq = pq->k.cluster_queue;
        else if (home)
            lq = oq;
        else if (m != NULL)
            lq = m->rec.spec.local_queue[0] != '\0' ? m->rec.spec.local_queue : oq;
        if (lq != NULL)
            cq = sw_queue_local_queue_cq(m, j->rec.ns, lq, &asking);
        if (asking)
            return false;
        if (cq == NULL || strcmp(rd->pool_cq[p].cq, cq) != 0)
            continue;
        if (w->n_queue_pools == SW_MAX_QUEUE_POOLS) {
            /* No room to name every view of this cluster: none, its
             * summed view instead (a member's pools are added together). */
            w->n_queue_pools = first;
            full = true;
            continue;
        }
        memcpy(w->queue_pools[w->n_queue_pools++], rd->pools[p].name, sizeof(w->queue_pools[0]));
    }
    return true;
}

/*
 * A Job queued in Kueue at home gets its mirror in the origin's LocalQueue
 * name on a cloud member that has one (dispatch.c). Such a member's Kueue
 * is read before a mirror is sent there, so that what its ClusterQueue may
 * still reserve bounds the pool from the first decision, not from the first
 * mirror on (docs/kueue.md, "Into the cloud's queue"). False while that is
 * under way (the LocalQueue's GET, then the Kueue informers' first list):
 * the Job is decided a round later. A member registered with a LocalQueue
 * reads its Kueue from the start (no room until then, add_pools); one whose
 * Kueue cannot be listed is not waited for.
 */
static bool target_queues_read(struct round *rd, const struct sw_job *j, const cJSON *origin)
{
    const char *oq = sw_queue_origin_queue(origin);
    if (oq == NULL)
        return true;
    for (size_t p = 0; p < rd->npools; p++) {
        const struct sw_pool *o = &rd->pools[p];
        if (o->capacity == SW_CAP_OWNED || o->queue_only || strcmp(o->cluster, j->rec.cluster) == 0)
            continue;
        struct sw_member *m = sw_member_find(rd->h, o->cluster);
        if (m == NULL || m->cache == NULL || m->rec.spec.local_queue[0] != '\0' ||
            sw_cluster_cache_kueue_synced(m->cache) || sw_cluster_cache_kueue_list_failed(m->cache))
            continue;
        bool asking = false;
        const char *cq = sw_queue_local_queue_cq(m, j->rec.ns, oq, &asking);
        if (asking)
            return false;
        if (cq == NULL)
            continue; /* no such LocalQueue there: the mirror is not queued */
        sw_cluster_cache_start_kueue(m->cache);
        return false;
    }
    return true;
}

static void add_job(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    struct round *rd = ctx;
    j->decided_now = false;
    const cJSON *origin = sw_observe_origin(h, &j->rec);
    if (origin == NULL || !wants_decision(h, j, origin))
        return;
    /* A namespace its home's registration does not list (the narrow member
     * role, nsguard.c): spillway may change nothing there, not even say
     * why, so the Job is left alone. */
    struct sw_member *home = sw_member_find(h, j->rec.cluster);
    if (home != NULL && !sw_cluster_spec_grants(&home->rec.spec, j->rec.ns))
        return;
    struct sw_burst_spec spec;
    struct sw_error err = {0};
    /* What its namespace may ask (tenancy.h), before anything is listed or
     * decided: a refusal blocks it with the reason, on the origin too. */
    int src = sw_observe_spec(h, &j->rec, origin, &spec, &err);
    if (src == SW_EFORBIDDEN) {
        j->busy = true;
        sw_follow_block(h, j, "NotGranted", err.msg);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    if (src != 0 || !spec.managed)
        return;
    struct sw_gpu_ask ask;
    if (sw_job_gpu_ask(origin, &spec, &ask, &err) != 0 || ask.pods * ask.gpus_per_pod <= 0)
        return;
    int pods = ask.pods, gpp = ask.gpus_per_pod;
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    /* A "wait" Job waits for its lost home (loss.c); and while home does
     * not answer, not yet lost, nothing is decided from its absence. */
    if (om == NULL || (sw_member_lost(om) && !spec.requeue_on_loss) ||
        (!sw_member_lost(om) && !sw_member_usable(om)))
        return;
    if (spec.n_inputs > 0 && j->rec.input_bytes == 0) {
        sw_data_estimate(h, j, &spec);
        return;
    }
    if (grow((void **)&rd->work, &rd->cap_work, rd->nwork + 1, sizeof(*rd->work)) != 0 ||
        grow((void **)&rd->jobs, &rd->cap_jobs, rd->nwork + 1, sizeof(*rd->jobs)) != 0 ||
        grow((void **)&rd->requeued, &rd->cap_requeued, rd->nwork + 1, sizeof(*rd->requeued)) !=
            0 ||
        grow((void **)&rd->kq, &rd->cap_kq, rd->nwork + 1, sizeof(*rd->kq)) != 0)
        return;
    /* Held by Kueue at home: what its queue looks like, for the decision's
     * text and the record. */
    struct pending_queue *pq = &rd->kq[rd->nwork];
    pq->set = false;
    for (size_t i = 0; i < rd->nhomes && !pq->set; i++)
        if (rd->home_of[i] == om)
            pq->set = sw_queue_job_kueue(j, origin, &rd->homes[i], &pq->k) == 0;
    struct sw_workload *w = &rd->work[rd->nwork];
    memset(w, 0, sizeof(*w));
    snprintf(w->name, sizeof(w->name), "%.*s", (int)sizeof(w->name) - 1, j->rec.name);
    /* The team its grant gives (sw_tenancy_apply), and the outputs fixed
     * with the decision: the annotation cannot move them after it. */
    const char *team = spec.team;
    snprintf(w->team, sizeof(w->team), "%.*s", (int)sizeof(w->team) - 1, team);
    snprintf(j->rec.team, sizeof(j->rec.team), "%s", team);
    j->rec.outputs[0] = '\0';
    if (spec.has_outputs &&
        sw_s3_uri_format(&spec.outputs, j->rec.outputs, sizeof(j->rec.outputs)) != 0)
        j->rec.outputs[0] = '\0';
    snprintf(w->origin, sizeof(w->origin), "%.*s", (int)sizeof(w->origin) - 1, j->rec.cluster);
    if (!target_queues_read(rd, j, origin) || !name_queue_pools(rd, j, pq, origin, w))
        return;
    /* A mirror placed at home goes into the origin's LocalQueue there:
     * checked first, as a cloud target's is (dispatch.c), so that a queue
     * that cannot admit it leaves home out rather than holding a mirror
     * there for kueue.mirrorAdmissionSeconds. */
    char hq[256];
    int unq = sw_queue_home_unqueued(h, j, origin, hq, sizeof(hq));
    if (unq < 0)
        return;
    w->home_unqueued = unq > 0;
    w->prio = spec.prio;
    w->pods = pods;
    w->gpus_per_pod = gpp;
    /* A share of a time-sliced GPU, or slices of a MIG profile. */
    w->gpu_milli = ask.gpu_milli;
    memcpy(w->mig_profile, ask.mig_profile, sizeof(w->mig_profile));
    /* Its runtime as a belief (runtimes.h, placement/estimate.c): the
     * annotation corrected by what annotated Jobs took, else what finished
     * Jobs like it took, else the prior; kept with the record, which a
     * success teaches the next beliefs from. */
    struct sw_job_rec *r = &j->rec;
    sw_runtime_label(j->rec.name, sw_json_str(sw_json_child(origin, "metadata"), "generateName"),
                     r->label);
    const struct sw_grant *lg = sw_tenancy_find(&h->cfg.tenancy, j->rec.cluster, j->rec.ns);
    char learner[SW_NAME_MAX];
    sw_runtime_learner(lg != NULL && lg->nteams > 0, team, j->rec.cluster, j->rec.ns, learner);
    struct sw_job_features f = {
        .team = learner, .label = r->label, .prio = spec.prio, .gpus = sw_workload_gpus(w)};
    sw_runtimes_belief(&h->runtimes, &f, spec.runtime_s, &r->belief);
    r->belief_set = true;
    r->annotated_s = spec.runtime_s > 0 ? spec.runtime_s : 0;
    r->prio = spec.prio;
    w->runtime_s = r->belief.median_s;
    w->runtime_sigma = r->belief.sigma;
    /* The budget it counts against (budget.h): its granted team's, else
     * CLUSTER/NS, which no budget names. A burst of a team with a budget
     * reserves its cost from a pessimistic runtime, not the expected one
     * (sw_budget_reserve_s: the belief's 90th percentile, and while an
     * annotation is unlearned never below what the team's Jobs take
     * without one), so that an annotation that understates the runtime
     * cannot start more than the budget covers. */
    sw_budget_key_of(&h->cfg.tenancy, r, w->team);
    w->budget_reserve = 0;
    for (size_t b = 0; b < h->cfg.nbudgets; b++) {
        if (strcmp(h->cfg.budgets[b].team, w->team) != 0)
            continue;
        struct sw_estimate prior;
        sw_runtimes_belief(&h->runtimes, &f, 0, &prior);
        double mean = sw_estimate_mean(&r->belief);
        double res =
            sw_budget_reserve_s(&r->belief, h->runtimes.params.min_runs, sw_estimate_mean(&prior));
        double k = mean > 0 ? res / mean : 1;
        w->budget_reserve = isfinite(k) && k > 1 ? fmin(k, SW_MAX_BUDGET_RESERVE) : 1;
        break;
    }
    snprintf(w->label, sizeof(w->label), "%s", r->label);
    w->checkpoint_s = spec.checkpoint_s;
    w->deadline = spec.deadline;
    w->max_price = spec.max_price;
    w->submit_time = j->rec.created;
    w->burst = spec.burst;
    j->rec.wait_on_loss = !spec.requeue_on_loss; /* written with the decision */
    /* A Job put back after its mirror was lost is suspended at home: it
     * runs in a mirror wherever it goes, home included. */
    if (spec.n_inputs > 0) {
        w->n_inputs = 1;
        w->inputs[0].size_gb = (double)j->rec.input_bytes / 1e9;
        w->inputs[0].n_regions = 1;
        snprintf(w->inputs[0].regions[0], sizeof(w->inputs[0].regions[0]), "%.*s",
                 (int)sizeof(w->inputs[0].regions[0]) - 1, om->rec.spec.region);
    }
    rd->requeued[rd->nwork] = sw_follow_requeued(&j->rec, origin) || sw_loss_origin_fenced(&j->rec);
    rd->jobs[rd->nwork++] = j;
}

static void on_decided_written(struct sw_hub *h, struct sw_job *j, int rc, void *ctx)
{
    (void)ctx;
    sw_hub_step_done(h, j, rc);
    if (rc == 0 && j->rec.state == SW_JS_DECIDED)
        SW_FAILPOINT_CRASH(SW_FP_AFTER_DECIDE);
}

static void fmt_wait(double s, char *buf, size_t len)
{
    if (s < 90)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 5400)
        snprintf(buf, len, "%.0f min", s / 60);
    else
        snprintf(buf, len, "%.1f h", s / 3600);
}

/* The GPUs a run of `w` on `p` is billed for (docs/cost-model.md): slices
 * of a MIG profile at 1 / per_gpu each, a share packed on a time-sliced
 * pool at its thousandths, whole GPUs otherwise. */
static double billed_gpus(const struct sw_workload *w, const struct sw_pool *p)
{
    if (w->mig_profile[0] != '\0') {
        for (int k = 0; k < p->n_mig; k++)
            if (strcmp(p->mig[k].profile, w->mig_profile) == 0 && p->mig[k].per_gpu > 0)
                return (double)sw_workload_gpus(w) / p->mig[k].per_gpu;
    } else if (w->gpu_milli > 0 && w->gpu_milli < 1000 && p->time_sliced) {
        return (double)w->pods * w->gpu_milli / 1000.0;
    }
    return (double)sw_workload_gpus(w);
}

/* Adds to an option of the explanation what its pool's provisioning delay
 * and interruption rate rest on (learned, or the prior). */
static bool add_basis(const struct round *rd, const struct sw_snapshot *snap, cJSON *o)
{
    const char *pool = sw_json_str(o, "pool");
    for (size_t p = 0; pool != NULL && p < snap->n_pools; p++) {
        if (strcmp(snap->pools[p].name, pool) != 0)
            continue;
        const struct sw_pool_figures *f = &rd->figs[p];
        cJSON *b = sw_learn_basis_json(f->nodepool, f->seen, snap->pools[p].provision_s,
                                       snap->pools[p].interrupt_per_h,
                                       snap->pools[p].capacity_wait_s, (int64_t)(snap->now * 1000));
        /* Its capacity controller did not answer: no node added. */
        if (b != NULL && f->controller_down_s > 0 &&
            (!cJSON_AddNumberToObject(b, "controllerDownSeconds",
                                      round(f->controller_down_s * 1000) / 1000) ||
             !cJSON_AddStringToObject(b, "controllerLease",
                                      f->controller_lease ? f->controller_lease : ""))) {
            cJSON_Delete(b);
            return false;
        }
        return b != NULL && cJSON_AddItemToObject(o, "basis", b);
    }
    return true;
}

static bool budget_json(const struct round *rd, const struct sw_snapshot *snap,
                        const struct sw_decision *d, cJSON *e);

/* The decision's explanation (placement/explain.h) with, for every option,
 * what its pool's figures rest on; compact JSON (sw_free), NULL on ENOMEM. */
static char *explain(const struct round *rd, const struct sw_snapshot *snap,
                     const struct sw_decision *d)
{
    cJSON *e = NULL;
    if (sw_explain_json(snap, &rd->h->policy, d, &e) != 0)
        return NULL;
    bool ok = true;
    cJSON *chosen = cJSON_GetObjectItemCaseSensitive(e, "chosen"), *o;
    if (chosen)
        ok = add_basis(rd, snap, chosen);
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(e, "options")) ok =
        ok && add_basis(rd, snap, o);
    /* The runtime belief it was decided with, and where it came from. */
    const struct sw_job_rec *r = &rd->jobs[d->workload]->rec;
    if (ok && r->belief_set) {
        cJSON *b = sw_runtime_belief_json(&r->belief, r->annotated_s);
        ok = b != NULL && cJSON_AddItemToObject(e, "runtime_belief", b);
        if (!ok)
            cJSON_Delete(b);
    }
    if (ok)
        ok = budget_json(rd, snap, d, e);
    /* cJSON allocates through sw_malloc (sw_json_init_hooks): sw_free frees it. */
    char *text = ok ? cJSON_PrintUnformatted(e) : NULL;
    cJSON_Delete(e);
    return text;
}

/*
 * The option a team's budget kept a Job from, or NULL: the cheapest cloud
 * option excluded by the budget alone (SW_EX_BUDGET comes after every
 * other check) when the Job does not burst and that option would have
 * completed before the one chosen (or nothing was chosen).
 */
static const struct sw_option *budget_held(const struct sw_decision *d)
{
    if (d->verdict == SW_VERDICT_BURST)
        return NULL;
    const struct sw_option *held = NULL;
    for (size_t k = 0; k < d->n_options; k++) {
        const struct sw_option *o = &d->options[k];
        if (o->stay || o->excluded != SW_EX_BUDGET)
            continue;
        if (d->verdict != SW_VERDICT_REJECT && !(o->completion < d->chosen.completion))
            continue;
        if (held == NULL || o->cost.total < held->cost.total)
            held = o;
    }
    return held;
}

/* BudgetExhausted's message: "the cloud budget of team ml (a month's)
 * cannot cover a burst; it stays at home (spillctl report budget)". The
 * same text while the team and its period stay, so that a Job held round
 * after round is one block, not a new message (and Event, and origin
 * patch) each time; the figures are in its explanation (budget_json). */
#define BUDGET_REASON_HEAD "the cloud budget of team "
static void budget_text(const struct sw_hub *h, const char *team, char *buf, size_t len)
{
    for (size_t i = 0; i < h->nbudget_status; i++) {
        const struct sw_budget_status *s = &h->budget_status[i];
        if (strcmp(s->team, team) != 0)
            continue;
        snprintf(buf, len,
                 BUDGET_REASON_HEAD "%s (a %s's) cannot cover a burst; it stays at home "
                                    "(spillctl report budget)",
                 team, sw_budget_period_name(s->period));
        return;
    }
    snprintf(buf, len,
             BUDGET_REASON_HEAD "%s cannot cover a burst; it stays at home "
                                "(spillctl report budget)",
             team);
}

/* The explanation's "budget" (a Job of a team with a budget): the team,
 * its budget and spend as the round began, what a burst reserves (x the
 * expected cost), and when the budget held it, the figures in words. */
static bool budget_json(const struct round *rd, const struct sw_snapshot *snap,
                        const struct sw_decision *d, cJSON *e)
{
    const struct sw_workload *w = &snap->pending[d->workload];
    const struct sw_hub *h = rd->h;
    for (size_t i = 0; i < h->nbudget_status; i++) {
        const struct sw_budget_status *s = &h->budget_status[i];
        if (strcmp(s->team, w->team) != 0)
            continue;
        cJSON *b = cJSON_CreateObject();
        if (b == NULL || !cJSON_AddItemToObject(e, "budget", b)) {
            cJSON_Delete(b);
            return false;
        }
        double k = w->budget_reserve > 1 ? w->budget_reserve : 1;
        bool ok = cJSON_AddStringToObject(b, "team", s->team) &&
                  cJSON_AddStringToObject(b, "period", sw_budget_period_name(s->period)) &&
                  cJSON_AddNumberToObject(b, "amount", s->amount) &&
                  cJSON_AddNumberToObject(b, "committed", s->committed) &&
                  cJSON_AddNumberToObject(b, "inFlight", s->in_flight) &&
                  cJSON_AddNumberToObject(b, "left", sw_budget_left(s)) &&
                  cJSON_AddNumberToObject(b, "reserveFactor", k);
        const struct sw_option *held = budget_held(d);
        if (ok && held != NULL) {
            char text[400];
            snprintf(text, sizeof(text),
                     BUDGET_REASON_HEAD "%s ($%.2f a %s, $%.2f left as the round began) cannot "
                                        "cover a burst that reserves $%.2f ($%.2f expected)",
                     s->team, s->amount, sw_budget_period_name(s->period), sw_budget_left(s),
                     held->cost.total * k, held->cost.total);
            ok = cJSON_AddStringToObject(b, "held", text) != NULL;
        }
        return ok;
    }
    return true;
}

static void apply(struct round *rd, const struct sw_snapshot *snap, const struct sw_decision *d)
{
    struct sw_hub *h = rd->h;
    struct sw_job *j = rd->jobs[d->workload];
    struct sw_job_rec *r = &j->rec;
    const struct sw_workload *w = &snap->pending[d->workload];
    h->m.decisions[d->verdict]++;
    sw_metrics_decision(h, d->verdict,
                        d->verdict == SW_VERDICT_REJECT ? "" : snap->pools[d->pool].name);
    double home_wait = -1, burst_now = 0;
    for (size_t k = 0; k < d->n_options; k++) {
        const struct sw_option *o = &d->options[k];
        const struct sw_pool *p = &snap->pools[o->pool];
        /* Another queue's view of home is not its home (queue_only). */
        if (o->stay && o->excluded != SW_EX_OTHER_QUEUE && o->excluded != SW_EX_HOME_QUEUE &&
            (home_wait < 0 || o->wait_s < home_wait))
            home_wait = o->wait_s;
        if (p->capacity == SW_CAP_ON_DEMAND && o->excluded != SW_EX_NEVER_FITS &&
            o->excluded != SW_EX_OTHER_QUEUE && (burst_now == 0 || o->cost.total < burst_now))
            burst_now = o->cost.total;
    }
    char summary[SW_REC_SUMMARY_MAX], wait[32], queued[256] = "", hq[256];
    const struct pending_queue *pq = &rd->kq[d->workload];
    /* A Job Kueue holds at home: why it left its queue, in the queue's own
     * figures, before the engine's. */
    if (pq->set) {
        sw_job_kueue_text(&pq->k, queued, sizeof(queued) - 2);
        strcat(queued, "; ");
    }
    fmt_wait(home_wait < 0 ? 0 : home_wait, wait, sizeof(wait));
    bool move = d->verdict == SW_VERDICT_BURST ||
                (d->verdict == SW_VERDICT_STAY &&
                 (r->form == SW_FORM_DELEGATED || rd->requeued[d->workload]));
    /* The best option waits for spot capacity to return to a pool that
     * cannot add GPUs now: the Job waits here, decided again each round,
     * rather than as a pod pending against a NodePool that cannot grow. */
    bool short_wait = d->verdict != SW_VERDICT_REJECT && snap->pools[d->pool].capacity_wait_s > 0 &&
                      !d->chosen.stay && sw_workload_gpus(w) > snap->pools[d->pool].free_gpus;
    if (short_wait)
        move = false;
    if (short_wait) {
        const struct sw_pool *p = &snap->pools[d->pool];
        char cw[32];
        fmt_wait(d->chosen.wait_s > 0 ? d->chosen.wait_s : p->capacity_wait_s, cw, sizeof(cw));
        snprintf(summary, sizeof(summary),
                 "wait for %s capacity in %s: $%.2f expected after about %s (its NodePool is "
                 "short); %s wait at home",
                 sw_capacity_name(p->capacity), p->cluster, d->chosen.cost.total, cw, wait);
    } else if (d->verdict == SW_VERDICT_REJECT) {
        snprintf(summary, sizeof(summary), "no placement: %s",
                 sw_exclusion_text(d->main_exclusion));
    } else {
        const struct sw_pool *p = &snap->pools[d->pool];
        const struct sw_member *om = sw_member_find(h, r->cluster);
        if (d->verdict == SW_VERDICT_BURST && home_wait < 0 && om && sw_member_lost(om))
            snprintf(summary, sizeof(summary),
                     "burst to %s (%s): $%.2f expected; home cluster %s lost", p->cluster,
                     sw_capacity_name(p->capacity), d->chosen.cost.total, r->cluster);
        else if (d->verdict == SW_VERDICT_BURST && w->home_unqueued &&
                 sw_queue_home_unqueued(h, j, sw_observe_origin(h, r), hq, sizeof(hq)) > 0)
            snprintf(summary, sizeof(summary), "burst to %s (%s): $%.2f expected; not at home: %s",
                     p->cluster, sw_capacity_name(p->capacity), d->chosen.cost.total, hq);
        else if (d->verdict == SW_VERDICT_BURST)
            snprintf(summary, sizeof(summary),
                     "%sburst to %s (%s): $%.2f expected vs %s wait at home", queued, p->cluster,
                     sw_capacity_name(p->capacity), d->chosen.cost.total, wait);
        else
            snprintf(summary, sizeof(summary), "stay at home (%s): $%.2f expected, %s wait; %s",
                     p->cluster, d->chosen.cost.total, wait, sw_why_text(d->why));
    }
    /* Decided again after its target's Kueue evicted its mirror (queue.c):
     * the eviction first, in the words of the Requeued Event ("evicted
     * from onprem (Preempted)"). */
    const char *ev_end = strstr(r->reason, "): ");
    if (r->preemptions > 0 && ev_end != NULL &&
        strncmp(r->reason, SW_QUEUE_EVICTED, strlen(SW_QUEUE_EVICTED)) == 0 &&
        ev_end - r->reason < 160) {
        char head[200];
        int n =
            snprintf(head, sizeof(head), "mirror %.*s); ", (int)(ev_end - r->reason), r->reason);
        size_t hl = n > 0 && (size_t)n < sizeof(head) ? (size_t)n : 0;
        size_t sl = strnlen(summary, sizeof(summary) - 1 - hl);
        memmove(summary + hl, summary, sl);
        memcpy(summary, head, hl);
        summary[hl + sl] = '\0';
    }
    /* Held by its team's budget: it stays home (or goes nowhere) while a
     * cloud option only the budget excluded would have finished sooner. */
    const struct sw_option *held = budget_held(d);
    char held_why[sizeof(r->reason)];
    if (held != NULL) {
        budget_text(h, snap->pending[d->workload].team, held_why, sizeof(held_why));
        /* An annotation-only Job waits at home, its pods pending there:
         * blocked with the reason (Event, annotation, explain), decided
         * again every 30 s like any block, so that it bursts once the
         * budget has room (the next period, or bursts that cost less
         * than expected). */
        if (!move && r->form == SW_FORM_ANNOTATION) {
            snprintf(r->summary, sizeof(r->summary), "%s", summary);
            sw_free(j->explain);
            j->explain = explain(rd, snap, d);
            j->busy = true;
            sw_follow_block(h, j, "BudgetExhausted", held_why);
            sw_rec_step(h, j, SW_FP_NONE);
            return;
        }
        /* A Job that runs at home in a mirror (delegated, or put back
         * after a lost mirror) is placed there; the Event says why not in
         * the cloud. */
        if (strcmp(summary, r->summary) != 0)
            sw_follow_event(h, r, "Warning", "BudgetExhausted", held_why);
    }
    bool changed = strcmp(summary, r->summary) != 0;
    if (!move && !changed && r->state == SW_JS_OBSERVED)
        return; /* nothing new to record */
    snprintf(r->summary, sizeof(r->summary), "%s", summary);
    r->home_wait_s = home_wait < 0 ? 0 : home_wait;
    r->burst_now_cost = burst_now;
    r->gpus = sw_workload_gpus(w);
    r->decided_ms = sw_hub_wall_ms();
    if (move) {
        const struct sw_pool *p = &snap->pools[d->pool];
        const struct sw_pool_spec *ps = rd->specs[d->pool];
        snprintf(r->target_cluster, sizeof(r->target_cluster), "%s", p->cluster);
        snprintf(r->target_pool, sizeof(r->target_pool), "%s", ps ? ps->name : p->name);
        snprintf(r->target_region, sizeof(r->target_region), "%s", p->region);
        snprintf(r->capacity, sizeof(r->capacity), "%s", sw_capacity_name(p->capacity));
        r->price_gpu_h = p->price_gpu_h;
        r->billed_gpus = billed_gpus(w, p);
        /* The chosen option's cost; for a team with a budget, what the
         * burst reserves of it apart (money in flight, not an expectation). */
        r->expected_cost = d->chosen.cost.total;
        r->reserved_cost = w->budget_reserve > 1 ? d->chosen.cost.total * w->budget_reserve : 0;
        r->reason[0] = '\0';
        r->has_kueue = pq->set && d->verdict == SW_VERDICT_BURST;
        if (r->has_kueue)
            r->kueue = pq->k;
        else
            memset(&r->kueue, 0, sizeof(r->kueue));
        r->state = SW_JS_DECIDED;
        SW_LOG(SW_LOG_INFO, "decided", "job=%s target=%s capacity=%s summary=%s", sw_log_q(r->key),
               sw_log_q(p->cluster), sw_log_q(r->capacity), sw_log_q(summary));
    } else if (r->state == SW_JS_BLOCKED) {
        r->state = SW_JS_OBSERVED;
        /* Its budget held it and no longer does: the origin stops saying so. */
        if (strncmp(r->reason, BUDGET_REASON_HEAD, strlen(BUDGET_REASON_HEAD)) == 0) {
            r->reason[0] = '\0';
            sw_follow_show_blocked(h, r, false);
        }
    }
    sw_free(j->explain);
    j->explain = explain(rd, snap, d);
    j->busy = true;
    if (sw_rec_write(h, j, on_decided_written, NULL) != 0)
        sw_hub_step_done(h, j, SW_EUNAVAIL);
}

/* The engine's view of a round: its pools, links, queues and Jobs, now. */
static struct sw_snapshot snapshot_of(const struct round *rd)
{
    return (struct sw_snapshot){
        .now = (double)sw_hub_wall_ms() / 1000.0,
        .decide_every_s = rd->h->cfg.recheck_s,
        .pools = rd->pools,
        .n_pools = rd->npools,
        .links = rd->links,
        .n_links = rd->nlinks,
        .queues = rd->queues,
        .n_queues = rd->nqueues,
        .pending = rd->work,
        .n_pending = rd->nwork,
        .budgets = rd->nbudgets > 0 ? rd->budgets : NULL,
        .n_budgets = rd->nbudgets,
    };
}

static void round_free(struct round *rd)
{
    sw_free(rd->pools);
    sw_free(rd->links);
    sw_free(rd->work);
    sw_free(rd->jobs);
    sw_free(rd->requeued);
    sw_free(rd->specs);
    sw_free(rd->figs);
    sw_free(rd->running);
    sw_free(rd->mig_running);
    sw_free(rd->queues);
    for (size_t p = 0; p < rd->npools; p++)
        sw_free(rd->aheads[p]);
    sw_free(rd->aheads);
    sw_free(rd->naheads);
    sw_free(rd->pool_cq);
    for (size_t i = 0; i < rd->nhomes; i++)
        sw_queue_home_free(&rd->homes[i]);
    sw_free(rd->homes);
    sw_free(rd->home_of);
    sw_free(rd->kq);
}

/* Ranks by the engine's score (what cost-aware minimises: expected cost
 * plus the value of the delay), then by expected cost, then by name. */
static int rank_cmp(const void *a, const void *b)
{
    const struct sw_mk_choice *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return strcmp(x->cluster, y->cluster);
}

int sw_decide_workers(struct sw_hub *h, const struct sw_mk_ask *asks, size_t n,
                      const char (*workers)[SW_MK_NAME_MAX], size_t nworkers,
                      struct sw_mk_rank *out)
{
    memset(out, 0, n * sizeof(*out));
    struct round rd = {.h = h, .only_set = true, .only = workers, .nonly = nworkers};
    int rc = 0;
    add_pools(&rd);
    if (rd.npools == 0)
        goto done;
    /* The same snapshot as a round's, cut to the workers' pools: the manager
     * is not among them, so every option is a burst to one worker, and the
     * queue is decided as a whole, each Workload taking the capacity it is
     * given before the next is weighed. */
    rd.work = sw_calloc(n + 1, sizeof(*rd.work));
    if (rd.work == NULL) {
        rc = SW_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        struct sw_workload *w = &rd.work[i];
        snprintf(w->name, sizeof(w->name), "%.*s", (int)sizeof(w->name) - 1, asks[i].name);
        snprintf(w->team, sizeof(w->team), "%.*s", (int)sizeof(w->team) - 1, asks[i].team);
        snprintf(w->origin, sizeof(w->origin), "%.*s", (int)sizeof(w->origin) - 1, asks[i].origin);
        w->prio = SW_PRIO_TRAINING;
        w->pods = asks[i].pods;
        w->gpus_per_pod = asks[i].gpus_per_pod;
        w->runtime_s = PRIOR_RUNTIME_S;
        w->submit_time = asks[i].submit_time;
        w->burst = SW_BURST_AUTO;
    }
    rd.nwork = n;
    add_queues(&rd);
    struct sw_snapshot snap = snapshot_of(&rd);
    struct sw_decision *d = sw_calloc(n, sizeof(*d));
    struct sw_error err = {0};
    if (d == NULL) {
        rc = SW_ENOMEM;
        goto done;
    }
    if ((rc = sw_engine_decide(h->engine, &snap, &h->policy, SW_DECIDE_EXPLAIN, d, &err)) != 0) {
        SW_LOG(SW_LOG_ERROR, "the placement engine refused the MultiKueue snapshot", "err=%s",
               sw_log_q(err.msg));
        sw_free(d);
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        const struct sw_decision *dc = &d[k];
        const struct sw_mk_ask *a = &asks[dc->workload];
        struct sw_mk_rank *r = &out[dc->workload];
        for (size_t o = 0; o < dc->n_options; o++) {
            const struct sw_option *op = &dc->options[o];
            const struct sw_pool *p = &snap.pools[op->pool];
            if (op->excluded != SW_EX_NONE)
                continue;
            bool named = false;
            for (size_t w = 0; w < a->nworkers && !named; w++)
                named = strcmp(a->workers[w], p->cluster) == 0;
            if (!named)
                continue;
            /* One entry per worker: its best pool. */
            size_t at = r->n;
            for (size_t e = 0; e < r->n; e++)
                if (strcmp(r->choice[e].cluster, p->cluster) == 0)
                    at = e;
            if (at == r->n) {
                if (r->n == SW_MK_MAX_CLUSTERS)
                    continue;
                r->n++;
            } else if (r->choice[at].score <= op->score) {
                continue;
            }
            struct sw_mk_choice *c = &r->choice[at];
            snprintf(c->cluster, sizeof(c->cluster), "%s", p->cluster);
            c->score = op->score;
            c->cost = op->cost.total;
            c->wait_s = op->wait_s;
            c->capacity = p->capacity;
        }
        if (r->n > 1)
            qsort(r->choice, r->n, sizeof(r->choice[0]), rank_cmp);
        /* The named workers left out, each with the engine's reason for its
         * first pool: what the Event says of them. */
        for (size_t o = 0; o < dc->n_options; o++) {
            const struct sw_option *op = &dc->options[o];
            const struct sw_pool *p = &snap.pools[op->pool];
            if (op->excluded == SW_EX_NONE || r->nexcluded == SW_MK_MAX_CLUSTERS)
                continue;
            bool named = false, listed = false;
            for (size_t w = 0; w < a->nworkers && !named; w++)
                named = strcmp(a->workers[w], p->cluster) == 0;
            for (size_t e = 0; e < r->n && !listed; e++)
                listed = strcmp(r->choice[e].cluster, p->cluster) == 0;
            for (size_t e = 0; e < r->nexcluded && !listed; e++)
                listed = strcmp(r->excluded[e].cluster, p->cluster) == 0;
            if (!named || listed)
                continue;
            struct sw_mk_excluded *x = &r->excluded[r->nexcluded++];
            snprintf(x->cluster, sizeof(x->cluster), "%s", p->cluster);
            x->capacity = p->capacity;
            x->why = op->excluded;
        }
        r->verdict = dc->verdict;
        r->main_exclusion = dc->main_exclusion;
    }
    sw_free(d);
done:
    round_free(&rd);
    return rc;
}

void sw_decide_round(struct sw_hub *h)
{
    struct round rd = {.h = h};
    add_pools(&rd);
    if (rd.npools == 0)
        goto out;
    /* Budgets are decided only from a complete spend: until the ended
     * records are read (spend.c), no round. */
    if (h->cfg.nbudgets > 0 && !h->budget_loaded)
        goto out;
    sw_hub_jobs_foreach(h, add_job, &rd);
    if (h->cfg.nbudgets > 0 && sw_spend_tally(h) == 0) {
        for (size_t i = 0; i < h->nbudget_status; i++)
            sw_budget_engine(&h->budget_status[i], &rd.budgets[i]);
        rd.nbudgets = h->nbudget_status;
    }
    if (rd.nwork == 0)
        goto out;
    if (h->cfg.nbudgets > 0 && rd.nbudgets == 0) {
        SW_LOG(SW_LOG_WARN, "no decision this round: the budgets' spend could not be counted",
               "jobs=%zu", rd.nwork);
        goto out;
    }
    add_queues(&rd);
    struct sw_snapshot snap = snapshot_of(&rd);
    struct sw_decision *out = sw_calloc(rd.nwork, sizeof(*out));
    struct sw_error err = {0};
    if (out == NULL)
        goto out;
    if (sw_engine_decide(h->engine, &snap, &h->policy, SW_DECIDE_EXPLAIN, out, &err) != 0) {
        SW_LOG(SW_LOG_ERROR, "the placement engine refused the snapshot", "err=%s",
               sw_log_q(err.msg));
    } else {
        for (size_t i = 0; i < rd.nwork; i++)
            apply(&rd, &snap, &out[i]);
    }
    sw_free(out);
out:
    round_free(&rd);
}
