/*
 * hub.h - the inside of spillwayd, shared by its files and nothing else.
 *
 * One libuv loop runs everything. The parts, one file each:
 *   leader.c    the lease in Redis and the fencing epoch
 *   record.c    one Redis record per origin Job, written under the epoch
 *   members.c   member clusters from the registry: clients, caches, stores
 *   capacity.c  where a pool's capacity comes from: fixed nodes or a NodePool
 *   observe.c   which Jobs spillway manages, and what the engine is told
 *   queue.c     how a member queues Jobs (plain, Kueue): waiting, taking, releasing
 *   decide.c    the placement engine over the whole pending queue
 *   data.c      inputs made present and verified in the target region
 *   admission.c home's admission judges a burst's pods (a dry-run Pod) before its mirror
 *   dispatch.c  the mirror Job, created exactly once
 *   nsguard.c   the target namespace: spillway's for its origin, or granted; home's Pod Security
 *   follow.c    the mirror's progress and outcome on the origin Job
 *   loss.c      member clusters lost: Jobs placed again or held, stale mirrors deleted
 *   rules.c     every replication rule run by the leader, its RPO for /metrics
 *   metrics.c   /metrics, /healthz and /readyz, served by httpd.c
 *   hub.c       the loop: lease, ticks, the per-Job step machine
 *
 * Reconcilers are level-triggered: each looks at one Job's record and what
 * the caches say now, and takes one step toward the goal; a step's outcome
 * is written to the record, and the next tick looks again. The only state
 * shared between them is the record (in Redis, mirrored here) and the
 * clusters' caches.
 */
#ifndef SW_CONTROLLER_HUB_HUB_H
#define SW_CONTROLLER_HUB_HUB_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "clusters/cache.h"
#include "clusters/health.h"
#include "clusters/kueue.h"
#include "clusters/multikueue.h"
#include "clusters/registry.h"
#include "clusters/rest.h"
#include "common/failpoint.h"
#include "controller/hub/annotations.h"
#include "controller/hub/budget.h"
#include "controller/hub/config.h"
#include "controller/hub/jobrec.h"
#include "controller/hub/learn.h"
#include "controller/hub/mirror.h"
#include "controller/hub/runtimes.h"
#include "net/http.h"
#include "placement/engine.h"
#include "replication/gate.h"
#include "store/redis.h"
#include "store/seal.h"

struct sw_hub;
struct sw_member;
struct sw_httpd;          /* httpd.h */
struct sw_queue_wl;       /* queue.c */
struct sw_job_record;     /* clusters/record.h */
struct sw_copies_release; /* copies.c */

/** A Job the hub is following: its record plus what is in flight for it. */
struct sw_job {
    struct sw_job_rec rec;
    struct sw_job_rec saved; /* as last written to Redis: rec goes back to it when a write fails */
    struct sw_job *next;     /* hash chain */
    bool busy;               /* a step is in flight; the next tick skips it */
    /* A long transfer is in flight (an input copy, a final outputs round):
     * the tick skips the Job as when busy, but a re-take of the lease after
     * a Redis failover does not wait for it; its result is used only if the
     * record still asks for it when it lands (data.c). */
    bool transfer;
    bool persisted;  /* rec is as in Redis */
    int64_t next_ms; /* do not step before (backoff, polling) */
    int backoff;     /* consecutive failures */
    struct sw_gate_outputs *outputs;
    void *outputs_ctx;     /* data.c's context for the periodic rounds */
    int outputs_done;      /* the last round: 0 not yet, 1 copied, -1 failed */
    int output_stops;      /* given-up attempts' output rounds not yet ended (data.c) */
    bool outputs_wanted;   /* periodic rounds to start once output_stops is 0 */
    int output_failures;   /* final output rounds failed in a row */
    bool decided_now;      /* decided in this round (for the engine's output) */
    char *explain;         /* the decision's explanation (JSON), to be written */
    bool warned;           /* a Warning Event about a bad annotation was sent */
    bool queue_warned;     /* a Warning Event about its queue (an unreadable Workload) was sent */
    bool queue_released;   /* its Workload was deactivated (queue.c) */
    bool queue_blocked;    /* blocked: Kueue cannot admit it as queued (queue.c) */
    char mirror_queue[64]; /* the target's LocalQueue its mirror goes into (dispatch.c); "" none */
    bool refs_ok;          /* this attempt's ConfigMaps and Secrets are copied */
    bool copies_released;  /* spillway's copies of Secrets let go of at the end (copies.c) */
    /* The Secrets its pod template references, NUL-separated, read once
     * (a Job's pod template does not change; copies.c): what its copies
     * are, and what it uses of another Job's. */
    char *secrets;
    uint8_t nsecrets;
    bool secrets_known;
    /* The release under way (copies.c): record.copied_to entries done
     * (bit i), names of the one in hand done (bit k), failures in a row
     * of the name in hand. */
    uint32_t copies_targets_done;
    uint64_t copies_names_done;
    uint8_t copies_tries;
    uint8_t copies_hand; /* the copiedTo entry in hand, plus 1; 0 none */
    bool copies_waited;  /* its dispatch waited for a release (said once) */
    /* A deleted origin let go before its mirror and copies were cleaned
     * up (follow.c): said once. */
    bool let_go;
    bool admitted;      /* home's admission admitted this attempt's pods (admission.c) */
    bool status_synced; /* delegated: the origin's status shows the outcome */
    int spend_counted;  /* the attempt whose cost this hub added to the spend counter */
    struct sw_hub *hub; /* for Kubernetes callbacks, whose context is the job */
    /* The origin Job whole (the cache's spec of a burstable Job, or
     * dispatch's patch answer), without status and managedFields, kept while
     * the Job is unfinished, so that it can still be placed when its home is
     * lost (loss.c). One per managed Job, not per cached Job. */
    cJSON *kept;
    bool kueue_hold_cleared; /* a delegated origin's suspend from Kueue cleared (dispatch.c) */
    /* The origin's resourceVersion dispatch's patch was made against, and
     * when it was answered: until the cache shows a newer one, the cache
     * still holds the origin from before the patch (dispatch.c). "" none. */
    char patched_from_rv[32];
    int64_t patched_ms;
};

/** What the hub found and learned of one of a member's NodePools (capacity.c). */
struct sw_nodepool_state {
    char name[SW_CLUSTER_NAME_MAX];
    struct sw_learned seen; /* what its figures are learned from (kept in Redis) */
    /* Claims Initialized at or before this (wall ms) were counted by an
     * earlier leader: the figures loaded from Redis include them. */
    int64_t loaded_mark_ms;
    bool dirty;                      /* seen changed since it was last written to Redis */
    bool writing;                    /* a write is in flight */
    struct sw_nodepool_capacity cap; /* the last figures */
    bool have_cap;
    char problem[200]; /* why it gave none (no such NodePool, no GPU limit); "" */
    /* Spot capacity (capacity.c): since when pods have waited for it with
     * room under its limit and no NodeClaim made for them (0: not), when
     * the last shortage ended (a failure seen from before then does not
     * begin another), mirrors withdrawn while it was short. */
    int64_t stuck_since_ms;
    int64_t short_ended_ms;
    /* Since when pods have waited for it beyond its GPU limit (0: not). */
    int64_t full_since_ms;
    uint64_t withdrawals;
};

#define SW_HUB_COUNTED_CLAIMS 128

/** A NodeClaim of a bound NodePool, its life kept for the bill (capacity.c). */
struct sw_claim_life {
    char name[SW_CLUSTER_NAME_MAX + 32];
    char nodepool[SW_CLUSTER_NAME_MAX];
    char pool[SW_CLUSTER_NAME_MAX]; /* the registered pool bound to it */
    int64_t gpus;
    double price_gpu_h;
    int64_t created_ms, deleted_ms; /* deleted 0: not yet */
    bool dirty, writing;
};

/** A member cluster, as the registry has it, with its live client and cache. */
struct sw_member {
    struct sw_cluster_record rec; /* sealed stays owned here */
    struct sw_kube_client *client;
    struct sw_cluster_cache *cache;
    struct sw_health_prober *health;
    bool seen;         /* in the latest registry listing */
    char **namespaces; /* created (or found) here by this hub: not asked again */
    size_t nnamespaces;
    /* loss (members.c): lost once not answering, or not Ready, for
     * members.lostAfterSeconds; fenced while spillway:fence names it */
    int64_t lost_since_ms; /* wall ms it was found lost; 0 when not lost */
    bool fenced;           /* cut off on purpose (a drill): no request is sent */
    char fence_why[160];
    size_t stale; /* records with a stale mirror here (counted each tick) */
    /* Its Kueue left a mirror unadmitted past kueue.mirrorAdmissionSeconds
     * (queue.c): its pools count no room until then (wall ms; 0 none). */
    int64_t queue_aside_until_ms;
    /* Its ResourceFlavors could not be listed (said once: queue.c). */
    bool flavors_warned;
    /* When its NodePools were last looked at for a shortage (wall ms). */
    int64_t shortage_checked_ms;
    /* Its Karpenter's leader-election Lease as seen (capacity.c): while it
     * is down its NodePools add no node and are not taken as short. */
    struct sw_ctl_seen karp;
    char karp_lease[160];       /* the Lease's "namespace/name", "" never seen */
    bool karp_reading;          /* a read of the Lease confirming a silence is under way */
    bool karp_forbidden_said;   /* the Lease's 403 logged */
    int64_t karp_read_after_ms; /* no new read before (mono ms) */
    /* NodePools of its pools (capacity.c), and the NodeClaims whose
     * provisioning delay was counted already (a ring of names). */
    struct sw_nodepool_state nodepools[SW_MAX_POOLS];
    size_t nnodepools;
    char counted[SW_HUB_COUNTED_CLAIMS][SW_CLUSTER_NAME_MAX + 32];
    size_t counted_at;
    /* Its bound NodePools' claims, until their end is in Redis. */
    struct sw_claim_life *lives;
    size_t nlives, cap_lives;
};

/** A region's object store, loaded from the replication stores. */
struct sw_hub_store {
    char name[64];
    char region[64];
    char endpoint[512];
    char access[256];
    char secret[256];
    int virtual_host;
};

/** A replication rule the leader runs (rules.c). */
#define SW_HUB_MAX_RULES 64
struct sw_hub_rule {
    char name[64];
    bool busy;
    bool model_registry;
    double objective_s; /* RPO objective (the rule's, else replication.rpoObjectiveSeconds) */
    int64_t started_ms, last_run_ms;
    uint64_t runs_ok, runs_failed;
    /* Its last run was refused (a record does not verify): logged at error
     * once, then at debug until a run gets past the records. */
    bool refused;
    size_t ntargets;
    char targets[8][64];
    int64_t oldest_pending_ms[8]; /* per target, after the last run; 0 none */
};

#define SW_HUB_MAX_MEMBERS 64
#define SW_HUB_MAX_STORES  16
#define SW_HUB_JOB_BUCKETS 4096

/** Counters and gauges for /metrics. */
#define SW_HUB_MAX_DECISION_POOLS 64
#define SW_HUB_MAX_SPEND_SERIES   256
#define SW_HUB_MAX_KUEUE_SERIES   256
struct sw_hub_metrics {
    uint64_t decisions[SW_VERDICT_REJECT + 1];
    /* decisions by outcome and pool ("" for rejects) */
    struct {
        char pool[64];
        uint64_t n[SW_VERDICT_REJECT + 1];
    } by_pool[SW_HUB_MAX_DECISION_POOLS];
    size_t nby_pool;
    uint64_t dispatches;
    uint64_t preemptions;
    uint64_t fenced;
    uint64_t cluster_requeues; /* Jobs placed again because their cluster was lost */
    uint64_t stale_deleted;    /* stale mirrors deleted from returned clusters */
    uint64_t copies_deleted;   /* spillway's copies of Secrets deleted from targets */
    uint64_t copies_left;      /* copies the hub gave up deleting (each logged, an Event) */
    uint64_t origins_let_go;   /* deleted origins let go before their cleanup ended */
    uint64_t rederived;        /* records re-derived from their mirrors (adopt.h) */
    uint64_t replication_bytes;
    /* dispatch latency (origin created to mirror created) histogram */
    uint64_t lat_buckets[12];
    double lat_sum;
    uint64_t lat_count;
    /* cloud spend by team, cluster, pool and capacity: each attempt's cost
     * added once, when it ends (sw_metrics_spend) */
    struct sw_spend_series {
        char team[64];
        char cluster[64];
        char pool[64];
        char capacity[16];
        double dollars;
    } spend[SW_HUB_MAX_SPEND_SERIES];
    size_t nspend;
    /* bursts taken from a Kueue queue, by origin cluster and ClusterQueue */
    struct sw_kueue_burst_series {
        char cluster[64];
        char cq[64];
        uint64_t n;
    } kueue_bursts[SW_HUB_MAX_KUEUE_SERIES];
    size_t nkueue_bursts;
    /* finished Jobs' runtimes counted, and the error of the belief each was
     * decided with, |actual - predicted| / predicted, by the belief's
     * source (annotation, learned, prior) */
    uint64_t rt_err_buckets[3][8];
    double rt_err_sum[3];
    uint64_t rt_count[3];
};

struct sw_hub {
    uv_loop_t *loop;
    struct sw_hub_config cfg;
    char id[128];
    char redis_url[1024]; /* with the password: never logged */
    struct sw_redis *redis;
    struct sw_http *http;
    struct sw_seal_key *key;
    /* The key of the mirrors' proofs (mirror.h), derived from `key`. */
    unsigned char proof_key[SW_MIRROR_PROOF_KEY_LEN];
    struct sw_engine *engine;
    struct sw_policy policy;

    /* leadership */
    bool leader;
    int64_t epoch;
    int64_t lease_until_mono; /* acting only before this */
    bool loading;             /* reading the records after taking the lease */
    bool loaded;
    /* Redis Sentinel (leader.c): the node the lease was last renewed on, a
     * re-take wanted or under way after a failover to another node, and
     * whether a replica has acknowledged the epoch. */
    char redis_node[300];
    bool retake_wanted;
    bool retaking;
    bool epoch_replicated;
    uint64_t failovers;
    uv_timer_t lease_timer;
    /* When Redis last answered a campaign that another hub holds the lease
     * (monotonic ms; 0 since a campaign failed): a standby's part of /readyz. */
    int64_t standby_mono;

    /* members and stores */
    struct sw_member *members[SW_HUB_MAX_MEMBERS];
    size_t nmembers;
    bool registry_busy;
    bool registry_read; /* the registry has been listed once: a name it lacks is unknown */
    struct sw_hub_store stores[SW_HUB_MAX_STORES];
    size_t nstores;
    /* Stores refused at the last read (their record does not verify):
     * logged when a name joins the list, not at every read. */
    char stores_refused[SW_HUB_MAX_STORES][64];
    size_t nstores_refused;
    struct sw_hub_rule rules[SW_HUB_MAX_RULES];
    size_t nrules;
    size_t rule_runs; /* runs under way (rules.c, each on a thread of its own) */
    bool stores_busy;
    uv_timer_t registry_timer;
    bool fences_busy;
    int64_t fences_read_ms;

    /* jobs */
    struct sw_job *buckets[SW_HUB_JOB_BUCKETS];
    /* Releases of copies of Secrets under way (copies.c): a dispatch to
     * the same target and origin namespace waits for them. */
    struct sw_copies_release *releasing;
    size_t njobs;
    uv_timer_t tick_timer;
    bool kick_pending;
    int64_t next_decide_ms;
    bool decide_wanted;

    /* Jobs on their way to a mirror (decided, data-ready, dispatching): while
     * there are any, Events and a running Job's status wait, so that the
     * dispatch path has the members' request budgets first. */
    size_t dispatch_backlog;
    struct sw_pending_event *events_head, *events_tail;
    size_t nevents;

    /* NodePools' learned figures as the leader loaded them from Redis
     * (capacity.c): a NodePool's state starts from its entry */
    struct sw_learned_entry {
        char key[2 * SW_CLUSTER_NAME_MAX + 2]; /* "cluster/nodepool" */
        struct sw_learned seen;
    } * learned;
    size_t nlearned;
    /* Finished Jobs' runtimes (runtimes.h), loaded from Redis by the
     * leader and added to as Jobs succeed: the beliefs decide.c gives the
     * engine. */
    struct sw_runtimes runtimes;
    /* Team budgets (spend.c, budget.h): the runs on cloud capacity of
     * ended records (SW_KEY_SPEND) that finished since the earliest
     * budget's period began, read whole, page by page, by the
     * leader before it decides and again every minute, and added to as
     * this hub ends records; and every budget's status at the last round. */
    struct sw_budget_run *budget_ended;
    size_t nbudget_ended, cap_budget_ended;
    bool budget_loaded;                /* the ended runs are in: budgets can be decided */
    bool budget_loading;               /* a read is under way */
    struct sw_spend_read *budget_read; /* that read (spend.c) */
    int64_t budget_read_ms;            /* monotonic ms of the last read sent */
    size_t budget_bad; /* live records out of bounds at the last tally (said once) */
    struct sw_budget_status budget_status[SW_HUB_MAX_BUDGETS];
    size_t nbudget_status;

    /* metrics and health */
    struct sw_hub_metrics m;
    struct sw_httpd *httpd; /* never closed: the hub stops by exiting */
    int64_t started_ms;
};

/* ---- hub.c ---------------------------------------------------------------- */

/** Milliseconds on the monotonic and wall clocks. */
int64_t sw_hub_mono_ms(void);
int64_t sw_hub_wall_ms(void);
/** Whether this hub holds the lease now (and has loaded the records). */
bool sw_hub_acting(const struct sw_hub *h);
/** Asks for a reconcile round soon (coalesced). */
void sw_hub_kick(struct sw_hub *h);
/** Asks for a decision round at the next tick. */
void sw_hub_want_decide(struct sw_hub *h);
/** Finds a job by key, or NULL. */
struct sw_job *sw_hub_job_find(struct sw_hub *h, const char *key);
/** Finds or adds a job for key (a new one starts as observed). */
struct sw_job *sw_hub_job_get(struct sw_hub *h, const char *key);
/** Calls fn for every job. */
void sw_hub_jobs_foreach(struct sw_hub *h, void (*fn)(struct sw_hub *, struct sw_job *, void *),
                         void *ctx);
/** A step finished: clears busy; on failure backs off (capped), else steps again soon. */
void sw_hub_step_done(struct sw_hub *h, struct sw_job *j, int rc);

/* ---- leader.c ------------------------------------------------------------- */

/** Starts campaigning for the lease (renewing it while held). */
int sw_leader_start(struct sw_hub *h);
/** Redis connection state (sw_redis_connect's callback): renews on reconnect. */
void sw_leader_redis_state(struct sw_redis *r, int up, const char *why, void *ctx);
/** Leadership is lost (a fenced write refused, or the lease not renewed): exits. */
void sw_leader_lost(struct sw_hub *h, const char *why);

/* ---- record.c ------------------------------------------------------------- */

typedef void (*sw_rec_cb)(struct sw_hub *h, struct sw_job *j, int rc, void *ctx);
/**
 * Writes j->rec (and j->explain when set) under the hub's epoch, checked
 * inside Redis by a Lua script. rc 0 on success; SW_ECONFLICT when the epoch
 * moved on (the hub then gives up leadership); SW_EUNAVAIL/SW_EIO otherwise.
 * On any failure j->rec is put back as it was last written, so no step ever
 * acts on a state that is not in Redis.
 */
int sw_rec_write(struct sw_hub *h, struct sw_job *j, sw_rec_cb cb, void *ctx);
/**
 * One step's record write: sw_rec_write, then the step is done (backing off
 * on failure) and, once written, the crash point `fp` (SW_FP_NONE: none;
 * common/failpoint.h) is passed. The caller has set j->busy.
 */
void sw_rec_step(struct sw_hub *h, struct sw_job *j, enum sw_failpoint fp);
/**
 * Ends j's record under the hub's epoch: a record of a Job that ran is
 * moved to the archive (SW_KEY_ENDED, for chargeback; trimmed to
 * records.archiveDays), its explanation deleted; then j is removed from the
 * table and freed, and the log says `why` (static). On failure clears busy
 * and backs off. The caller sets j->busy first and must not touch j
 * afterwards.
 */
int sw_rec_end(struct sw_hub *h, struct sw_job *j, const char *why);
/** Removes a job from the table and frees it (no step may be in flight). */
void sw_hub_job_drop(struct sw_hub *h, struct sw_job *j);
/** Loads every record into the hub's table, then calls done. */
int sw_rec_load_all(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc));
/**
 * Loads the finished Jobs' runtimes (SW_KEY_RUNTIMES) into h->runtimes,
 * replacing what it held: the latest SW_RUNTIMES_MAX ids of
 * SW_KEY_RUNTIMES_ORDER (ZREVRANGE), then their values (HMGET), never
 * more whatever Redis holds; each entry checked (runtimes.h), a bad one
 * skipped and logged; then calls done (rc SW_EUNAVAIL when Redis did not
 * answer, the history then unchanged).
 */
int sw_rec_runtimes_load(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc));

/* ---- members.c ------------------------------------------------------------ */

/** Starts reading the registry and the stores now and every 10 s. */
int sw_members_start(struct sw_hub *h);
/** A member by name, or NULL. */
struct sw_member *sw_member_find(struct sw_hub *h, const char *name);
/** Whether this hub has created (or found) namespace `ns` in the member. */
bool sw_member_has_namespace(const struct sw_member *m, const char *ns);
/** Notes that namespace `ns` exists in the member. */
void sw_member_add_namespace(struct sw_member *m, const char *ns);
/** Whether every member's cache has synced (lost and fenced ones aside). */
bool sw_members_synced(const struct sw_hub *h);
/**
 * Whether the member is up and answering now: connected, synced, not
 * fenced, not lost, its last probe answered 200. Only such a member is
 * sent new work or has stale mirrors deleted.
 */
bool sw_member_reachable(const struct sw_member *m);
/** Reachable, and no stale mirror waits to be deleted there: new work may go there. */
bool sw_member_usable(const struct sw_member *m);
/** Whether the member is lost (members.lostAfterSeconds without an answer or Ready). */
static inline bool sw_member_lost(const struct sw_member *m)
{
    return m->lost_since_ms != 0;
}
/**
 * Writes the hub's view (spillway:hub:members: this hub, its epoch, each
 * member's health, loss and fence, the loss and lease settings) to Redis.
 */
void sw_members_publish(struct sw_hub *h);
/** Each tick: loss and return of members, fences from Redis, stale counts. */
void sw_members_tick(struct sw_hub *h);
/** The store of a region, or NULL. */
const struct sw_hub_store *sw_store_for_region(const struct sw_hub *h, const char *region);
/** Fills gate stores (borrowing the hub's strings) for every store; returns the count. */
size_t sw_gate_stores(const struct sw_hub *h, struct sw_gate_store *out, size_t cap);

/* ---- capacity.c ----------------------------------------------------------- */

/** A pool's figures for the engine, from its capacity source. */
struct sw_pool_figures {
    int64_t total;          /* provisioned now (or on its way) */
    int64_t free;           /* provisioned and idle now */
    int64_t ceiling;        /* the most it may hold (>= total) */
    int nodes;              /* Ready, schedulable nodes */
    double provision_s;     /* delay to add capacity past free */
    double interrupt_per_h; /* spot interruptions per hour of running */
    /* Time-sliced nodes (clusters/capacity.h): total, free and ceiling are
     * then in milli-GPUs, as the engine counts a time-sliced pool, and one
     * unit of nvidia.com/gpu there (a replica) is milli_per_unit of them. */
    bool time_sliced;
    int64_t milli_per_unit; /* 1000 when not time-sliced */
    int64_t replicas;       /* replicas per GPU (1 when not time-sliced) */
    /* MIG profiles its nodes offer, slices in total and idle. */
    int nmig;
    struct sw_pool_figures_mig {
        char profile[SW_MIG_PROFILE_MAX];
        int per_gpu;
        int64_t total, free;
    } mig[SW_MAX_MIG];
    /* What the last two rest on, for explain (sw_learn_basis_json): the
     * NodePool ("" on fixed nodes) and what was seen there (NULL: the
     * priors). Borrowed from the member for the round. */
    const char *nodepool;
    const struct sw_learned *seen;
    /* Its NodePool is short of capacity: the wait until it can add GPUs
     * again, and that wait's distribution (sw_learn_capacity_wait); 0 when
     * it is not short. */
    double capacity_wait_s;
    double capacity_wait_points[SW_LEARN_WAIT_POINTS];
    int n_capacity_wait_points;
    /* Its capacity controller does not answer (a NodePool's Karpenter whose
     * Lease is not renewed): for how long no renewal was seen (0: it
     * answers), and the Lease ("namespace/name", borrowed for the round).
     * No room is offered past its idle GPUs then. */
    double controller_down_s;
    const char *controller_lease;
};

/** A mirror waiting for a node its pool is provisioning (sw_capacity_node_wait). */
struct sw_node_wait {
    char nodepool[64];
    char nodeclaim[64];
    double expected_s; /* the provisioning delay the engine was given */
};

/** Where a pool's capacity comes from: one implementation per kind. */
struct sw_capacity_source {
    const char *name; /* "nodes" or "nodepool" */
    /**
     * Fills *out for pool `ps` of member `m` (cap: the member's node pools,
     * borrowed). Non-zero when the pool has no figures now (a NodePool
     * missing or without a GPU limit: logged once, kept for the status);
     * the pool is then not offered this round.
     */
    int (*figures)(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                   const struct sw_gpu_capacity *cap, struct sw_pool_figures *out);
    /**
     * Whether pool `ps` is adding a node that the mirror of record `r`
     * (dispatched, no pod ready) waits for, filling *out; false when its
     * capacity is not provisioned on demand (fixed nodes) or nothing
     * launching since the mirror was created holds its GPUs.
     */
    bool (*node_wait)(struct sw_hub *h, struct sw_member *m, const struct sw_pool_spec *ps,
                      const struct sw_job_rec *r, struct sw_node_wait *out);
};

/** The capacity source of a registered pool. */
const struct sw_capacity_source *sw_capacity_source_of(const struct sw_pool_spec *ps);
/** Whether any pool of the spec is bound to a NodePool (its cache then watches them). */
bool sw_capacity_wants_karpenter(const struct sw_cluster_spec *spec);
/**
 * A member's state for a NodePool, added when missing (starting from what
 * the leader loaded from Redis for it, if anything); NULL when the table is
 * full.
 */
struct sw_nodepool_state *sw_capacity_nodepool_state(struct sw_hub *h, struct sw_member *m,
                                                     const char *nodepool);
/** The provisioning delay the engine is given: the mean seen, or the prior. */
double sw_capacity_provision_s(const struct sw_nodepool_state *s);
/**
 * The interruption rate the engine is given for a spot NodePool: (mirrors
 * lost + 0.1 x 10) / (hours run + 10), the 0.1/h prior weighing as 10 hours.
 */
double sw_capacity_interrupt_rate(const struct sw_nodepool_state *s);
/**
 * Whether the record's mirror (dispatched, no pod ready) waits for a node
 * its target pool is provisioning: the pool's capacity source says (a
 * NodePool's NodeClaim launching since the mirror was created, made for
 * the mirror's GPUs: sw_nodeclaim_pick).
 */
bool sw_capacity_node_wait(struct sw_hub *h, const struct sw_job_rec *r, struct sw_node_wait *out);
/**
 * The NodeClaim of node `node` in cluster `cluster` (status.nodeName), into
 * claim; false when no cached claim has that node.
 */
bool sw_capacity_claim_of_node(struct sw_hub *h, const char *cluster, const char *node, char *claim,
                               size_t len);
/** A mirror ended (interrupted: lost and requeued): counted for its NodePool, if any. */
void sw_capacity_mirror_ended(struct sw_hub *h, const struct sw_job_rec *r, bool interrupted);
/** A NodeClaim of the member changed: learns its provisioning delay once Initialized. */
void sw_capacity_claim_changed(struct sw_hub *h, struct sw_member *m, const char *key);
/**
 * Loads every NodePool's learned figures from Redis (spillway:learned), as
 * a new leader does before it acts, then calls done (rc 0, or why not).
 * Members known already start again from what was loaded, and their
 * cached NodeClaims Initialized since are counted once.
 */
int sw_capacity_load(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc));
/** Each tick of the leader: writes changed learned figures, under the epoch. */
void sw_capacity_flush(struct sw_hub *h);
/**
 * Each tick of the leader: a bound NodePool whose pods have waited
 * SW_SHORTAGE_GRACE_S with room under its limit and no NodeClaim made for
 * them is short of capacity from when they began to wait (what Karpenter
 * shows when no offering of the NodePool is available: no claim at all);
 * one at its limit with pods waiting beyond it is noted full from then.
 */
void sw_capacity_shortage_tick(struct sw_hub *h);
/**
 * Whether the record's mirror (dispatched, a pod not bound to a node) waits
 * on a pool whose NodePool cannot grow for it: its Karpenter does not
 * answer (its Lease not renewed: sw_learn_ctl_observe), short of capacity,
 * or else at its GPU limit with pods waiting beyond it (sw_nodepool_full), while
 * the mirror existed, for karpenter.shortageWithdrawSeconds or longer.
 * Fills `why` (beginning with SW_QUEUE_WITHDRAWN: where, which NodePool,
 * why and how long) when it does.
 */
bool sw_capacity_mirror_short(struct sw_hub *h, const struct sw_job_rec *r, char *why, size_t len);
/** A mirror was withdrawn from a pool that could not grow: counted for its NodePool. */
void sw_capacity_withdrawn(struct sw_hub *h, const struct sw_job_rec *r);

/* ---- observe.c ------------------------------------------------------------ */

/** Scans every member's Jobs: new managed ones get a record, gone ones are noted. */
void sw_observe_scan(struct sw_hub *h);
/** The origin Job of a record from its cluster's cache (borrowed), or NULL. */
const cJSON *sw_observe_origin(struct sw_hub *h, const struct sw_job_rec *r);
/** The mirror Job of a record from the target's cache (borrowed), or NULL. */
const cJSON *sw_observe_mirror(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * A JSON view of a cached Job record, made once and kept while the record
 * stays as it is (its resourceVersion and UID) and it is used (observe.c);
 * NULL on no memory. Borrowed: valid until the end of this loop turn.
 */
const cJSON *sw_observe_view(struct sw_hub *h, const struct sw_job_record *rec);
/**
 * The origin's compact record in the cache (no JSON view is made), or NULL
 * when it is gone or another Job now has its name. Borrowed.
 */
const struct sw_job_record *sw_observe_origin_record(struct sw_hub *h, const struct sw_job_rec *r);
/** The current attempt's mirror's compact record in the target's cache, or NULL. Borrowed. */
const struct sw_job_record *sw_observe_mirror_record(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * The origin with its whole spec, pod template included, as the cache keeps
 * it for burstable Jobs (clusters/cache.h, sw_cluster_cache_keep_specs); NULL
 * when the cache holds only its compact record. Borrowed, this loop turn.
 */
const cJSON *sw_observe_origin_whole(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * The current attempt's mirror as it last was, when it finished (Complete
 * or Failed) and was then deleted from its cluster while this hub watched
 * (clusters/cache.h, tombstones); NULL otherwise. Borrowed.
 */
const cJSON *sw_observe_mirror_final(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * Whether the origin Job waits for GPUs at home: some pod of it is
 * Unschedulable for lack of nvidia.com/gpu and none is bound to a node.
 */
bool sw_observe_starved(struct sw_hub *h, const struct sw_job_rec *r, bool *any_bound);
/** A node one of the Job's pods is bound to, into node; false when none is. */
bool sw_observe_pod_node(struct sw_hub *h, const char *cluster, const char *ns,
                         const char *job_name, char *node, size_t len);
/** Pods of the Job bound to a node the cluster no longer has; names one. */
int sw_observe_lost(struct sw_hub *h, const char *cluster, const char *ns, const char *job_name,
                    char *node, size_t len);
/** Number of the Job's pods (non-terminal) in the cluster's cache. */
int sw_observe_pods(struct sw_hub *h, const char *cluster, const char *ns, const char *job_name,
                    int *bound);
/**
 * What a managed Job asks, as its namespace may ask it: its annotations
 * parsed from `origin` (sw_burst_spec_parse), then its namespace's grant
 * applied (sw_tenancy_apply: team, priority, every input and output
 * prefix), then the outputs prefix fixed in its record, when it has one,
 * in place of the annotation's. Every step that acts on a Job's data with
 * the hub's credentials reads the spec through this. Returns 0, the
 * parser's error, or SW_EFORBIDDEN (the grant refuses; err says why).
 */
int sw_observe_spec(struct sw_hub *h, const struct sw_job_rec *r, const cJSON *origin,
                    struct sw_burst_spec *spec, struct sw_error *err);

/* ---- queue.c -------------------------------------------------------------- */

/**
 * How a member queues a Job (queue.c). One per kind of queue, chosen by the
 * origin Job: `waits` is the saturation signal (the Job waits for GPUs at
 * home and none of its pods is bound); `holds` says the queue still holds
 * the origin, so dispatch must take it (sw_queue_take) even when it is
 * already suspended.
 */
struct sw_queue {
    const char *name;
    bool (*waits)(struct sw_hub *h, struct sw_job *j, const cJSON *origin);
    bool (*holds)(const cJSON *origin);
};
/** The queue that holds an origin Job (borrowed): Kueue's when it has a queue-name label, else
 * plain. */
const struct sw_queue *sw_queue_of(const cJSON *origin);
/** Each scan: indexes the members' Workloads by Job UID when they changed. */
void sw_queue_scan(struct sw_hub *h);
/**
 * A burstable Job seen in member m's cache (observe.c): when it sits in a
 * Kueue queue, the member's Kueue informers are started (once).
 */
void sw_queue_seen(struct sw_member *m, const struct sw_job_record *rec);
/**
 * Why member m's Kueue cannot be read, when its Kueue informers' list
 * failed in a way retrying will not mend (sw_kueue_api_verdict: Kueue not
 * installed, a Kueue without v1beta2, the list refused); "" otherwise, and
 * until discovery has answered (asked then, at most once a minute).
 * Borrowed, valid until the next call for the same member.
 */
const char *sw_queue_kueue_unreadable(struct sw_member *m);
/**
 * Whether `j` is blocked by its queue itself (Kueue cannot admit its
 * Workload as queued: a LocalQueue or ClusterQueue missing or inactive).
 * Such a block is the queue's to clear: its waits() is asked every round,
 * not only after the retry delay of other blocks, so that the Job is
 * unblocked as soon as Kueue proceeds.
 */
bool sw_queue_blocked(const struct sw_job *j);
/**
 * Whether the origin's Kueue queue at home cannot admit `j`, so that a
 * mirror placed at home (in the origin's LocalQueue) would wait there for
 * nothing: its own Workload Inadmissible, its LocalQueue not found, or
 * that LocalQueue's ClusterQueue missing or stopped. 1 with `why` (naming
 * the queue; Kueue's message quoted), 0 when it can or the hub does not
 * know (not in a Kueue queue, Kueue not read yet), -1 while the
 * LocalQueue is being read (decide a round later).
 */
int sw_queue_home_unqueued(struct sw_hub *h, const struct sw_job *j, const cJSON *origin, char *why,
                           size_t len);
/** A member's Workloads, ClusterQueues or ResourceFlavors changed (the index is made again). */
void sw_queue_changed(void);
/**
 * Adds to dispatch's origin patch (borrowed) what takes the Job (origin,
 * borrowed) from its queue: the queue-name label removed, its value kept
 * in the annotation SW_ANN_KUEUE_QUEUE, spec.suspend=true (Kueue's webhook
 * lets the label go only from a suspended Job).
 */
void sw_queue_take(cJSON *patch, const cJSON *origin);
/**
 * Before a delegated origin (borrowed) is taken from Kueue: if Kueue
 * reserved quota for it or started it (unsuspended, its pod template given
 * the flavour's node labels and Kueue's own annotations, which a mirror
 * must not carry), its Workload is deactivated first and the take waits
 * until Kueue has stopped the Job, restoring its template. Nothing runs
 * meanwhile: the Job controller leaves a delegated Job alone. Returns 1
 * while that is under way (j busy, or looked at again shortly), 0 when the
 * take may go.
 */
int sw_queue_stop_delegated(struct sw_hub *h, struct sw_job *j, const cJSON *origin);
/** Whether origin (borrowed) was taken from a Kueue queue (the take's annotation, no label). */
bool sw_queue_taken(const cJSON *origin);
/**
 * After the origin (borrowed) is taken: for a delegated origin taken from
 * Kueue, clears the suspend Kueue's webhook set (once, attempt 1: its
 * suspend is its owner's pause of the mirror); then deactivates its
 * Workload (spec.active=false) when one is active, or drops the owner
 * reference of one already inactive. Returns 1 when it started either (j
 * busy), or when the origin was taken from Kueue and its member's Kueue
 * informers have not listed yet (j not busy, looked at again in 0.5 s);
 * else 0.
 */
int sw_queue_release(struct sw_hub *h, struct sw_job *j, const cJSON *origin);
/**
 * The annotation the take writes on an origin Job with the LocalQueue it
 * took it from (its queue-name label, removed by the same patch).
 */
#define SW_ANN_KUEUE_QUEUE "spillway.io/kueue-queue"
/**
 * The LocalQueue an origin Job (borrowed) is or was in: its queue-name
 * label, else the annotation the take left; NULL for neither. Borrows.
 */
const char *sw_queue_origin_queue(const cJSON *origin);
/**
 * A delegated origin's pause (`paused`: its spec.suspend) for its mirror
 * (borrowed) queued in the target's Kueue: the mirror's Workload
 * deactivated, or activated again on resume (Kueue's own pause: it evicts
 * and suspends the Job, and queues it again), never the mirror's suspend,
 * which is Kueue's there. Returns 1 when it started a patch (j busy), else
 * 0 (nothing to change, or the Workload not known yet).
 */
int sw_queue_mirror_pause(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, bool paused);
/** How the reason of a mirror withdrawn from a target's queue begins. */
#define SW_QUEUE_WITHDRAWN "withdrawn from"
/**
 * Whether j's mirror (borrowed), queued in its target's Kueue LocalQueue,
 * is to be withdrawn: still suspended, never seen running, no pod counted,
 * its Workload without quota (or not made yet), for longer than
 * kueue.mirrorAdmissionSeconds since it was dispatched. Fills `why` (who,
 * where, how long) when it is. Starts the target's Kueue informers; false
 * until they have listed.
 */
bool sw_queue_mirror_unadmitted(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, char *why,
                                size_t len);

/** How the reason of a mirror Kueue evicted after it started begins. */
#define SW_QUEUE_EVICTED "evicted from"
/**
 * Whether j's mirror (borrowed), queued in its target's Kueue LocalQueue and
 * seen running, was taken back by that Kueue: suspended, its Workload
 * evicted while active (sw_workload_taken_back: its ClusterQueue or
 * LocalQueue stopped with HoldAndDrain, a preemption there, ...). Such an
 * attempt is lost as one on a reclaimed node is (follow.c): Kueue would
 * start it again only when it pleases, and its suspended time is no run.
 * Fills `why` (who, where, Kueue's reason and message), `evicted_ms`
 * (when Kueue evicted it, wall ms, within the attempt's start and now) and
 * `set_aside` (whether the target's pools should count no room for a
 * while: an eviction other than a preemption, which Kueue's figures show
 * already) when it is. Starts the target's Kueue informers; false until
 * they have listed.
 */
bool sw_queue_mirror_evicted(struct sw_hub *h, struct sw_job *j, const cJSON *mirror, char *why,
                             size_t len, int64_t *evicted_ms, bool *set_aside);

/* ---- MultiKueue's external dispatcher (multikueue.c, decide.c) ---------- */

/** A manager's Workload waiting for its dispatcher, as the engine is asked about it. */
struct sw_mk_ask {
    const char *name;   /* "namespace/name" (borrowed) */
    const char *team;   /* its namespace */
    const char *origin; /* the manager member */
    int pods, gpus_per_pod;
    double submit_time;
    const char (*workers)[SW_MK_NAME_MAX]; /* its MultiKueueConfig's clusters (borrowed) */
    size_t nworkers;
};

/** One worker of a ranking: its best pool's figures. */
struct sw_mk_choice {
    char cluster[SW_MK_NAME_MAX];
    double score; /* what the policy minimised (cost-aware: $ with the value of delay) */
    double cost;  /* expected cost, $ */
    double wait_s;
    enum sw_capacity capacity;
};

/** A worker the engine excluded for a Workload, and why (its first pool's reason). */
struct sw_mk_excluded {
    char cluster[SW_MK_NAME_MAX];
    enum sw_capacity capacity;
    enum sw_exclusion why;
};

/** The workers of one Workload, cheapest first (only eligible ones), then
 * the excluded ones with the engine's reason. */
struct sw_mk_rank {
    struct sw_mk_choice choice[SW_MK_MAX_CLUSTERS];
    size_t n;
    struct sw_mk_excluded excluded[SW_MK_MAX_CLUSTERS];
    size_t nexcluded;
    enum sw_verdict verdict;
    enum sw_exclusion main_exclusion;
};

/**
 * Asks the placement engine, on the same snapshot a round builds but with
 * only the pools of the members named in `workers`, where each of `asks`
 * should go; fills out[i] (n of them) with the workers of asks[i]'s own
 * list, ranked. Returns 0 or SW_ENOMEM / the engine's error.
 */
int sw_decide_workers(struct sw_hub *h, const struct sw_mk_ask *asks, size_t n,
                      const char (*workers)[SW_MK_NAME_MAX], size_t nworkers,
                      struct sw_mk_rank *out);

/**
 * MultiKueue's external dispatcher (kueue.multiKueueDispatcher): nominates
 * the cheapest workers of every manager Workload waiting for dispatch, hands
 * the Workload over once a worker admitted it, then releases its fields.
 * Does nothing when the setting is off.
 */
void sw_mk_dispatch_round(struct sw_hub *h);

/** A member's home queue as Kueue has it (sw_queue_home). */
#define SW_QUEUE_MAX_CQ 32
#define SW_QUEUE_MAX_RF 64
struct sw_queue_home {
    struct sw_cluster_queue_facts cq[SW_QUEUE_MAX_CQ];
    size_t ncq;
    struct sw_member *m; /* whose queue it is */
    /* GPUs its ClusterQueues may still reserve between them, a cohort's
     * unused quota counted once (sw_cluster_queues_free) */
    int64_t headroom;
    int64_t own_extra; /* of it, a delegated Job's own reservation in a queue not read */
    int64_t reserved, nominal;
    /* Its ResourceFlavors that name a capacity type (one that names none,
     * or is not here, takes every pool's mirrors). */
    struct sw_resource_flavor_facts rf[SW_QUEUE_MAX_RF];
    size_t nrf;
    /* Workloads pending for quota that spillway does not manage, in Kueue's
     * order (queue.c's index entries, borrowed until the next scan). */
    struct sw_queue_wl **ahead_e;
    size_t nahead, cap_ahead;
};
/**
 * A member's ClusterQueues and the Workloads queued ahead of every burstable
 * Job there. SW_ENOENT when the member's Kueue is not read (or has no
 * ClusterQueue): the nodes say what is free, as for a plain member.
 * sw_queue_home_free frees it.
 */
int sw_queue_home(struct sw_hub *h, struct sw_member *m, struct sw_queue_home *out);
/** The GPUs of the i-th Workload ahead. */
int64_t sw_queue_home_ahead_gpus(const struct sw_queue_home *qh, size_t i);
/**
 * The runtime to expect of the i-th Workload ahead: its Job's
 * spillway.io/expected-runtime, else `prior_s`, never more than its
 * Workload's maximumExecutionTimeSeconds (learn.h).
 */
double sw_queue_home_ahead_runtime(const struct sw_queue_home *qh, size_t i, double prior_s);
/**
 * The ClusterQueue the i-th Workload ahead waits in: the member's only one,
 * else its LocalQueue's (read once, asked for meanwhile); NULL while not
 * known.
 */
const char *sw_queue_home_ahead_cq(const struct sw_queue_home *qh, size_t i);
/**
 * The ClusterQueue of LocalQueue `lq` in namespace `ns` of member `m`, or
 * NULL while not known (read once, with a GET, and kept; asked for again a
 * minute after a failed read) or when `lq` is empty. `*asking`: NULL
 * because the read is under way (not because it failed).
 */
const char *sw_queue_local_queue_cq(struct sw_member *m, const char *ns, const char *lq,
                                    bool *asking);
/** What the i-th ClusterQueue of `qh` may still reserve, its cohort's lending included. */
int64_t sw_queue_home_cq_headroom(const struct sw_queue_home *qh, size_t i);
/**
 * What a mirror whose pods select nodes of capacity type `capacity_type`
 * could still be admitted to: as qh->headroom (`cq` < 0) or as the
 * cq-th ClusterQueue's headroom, counting only the flavours whose
 * ResourceFlavor's nodeLabels name no capacity type or that one
 * (sw_cluster_queue_for_capacity); the same figures when every flavour
 * does.
 */
int64_t sw_queue_home_pool_headroom(const struct sw_queue_home *qh, const char *capacity_type,
                                    long cq);
/**
 * The ClusterQueue that reserved quota for the Job `uid` of `cluster`
 * (its Workload reserved or admitted), or NULL. Borrowed until the next
 * Workload scan.
 */
const char *sw_queue_admitted_by(const char *cluster, const char *uid);
/**
 * The most the Job `uid` of `cluster` may run once admitted, in seconds:
 * its Workload's maximumExecutionTimeSeconds (from the Job's label
 * kueue.x-k8s.io/max-exec-time-seconds), after which Kueue deactivates it;
 * 0 when none or not known.
 */
int64_t sw_queue_max_exec_s(const char *cluster, const char *uid);
/**
 * What the decision of a Job in a Kueue queue at home says of that queue
 * (jobrec.h): its ClusterQueue (its cluster's only one, else the one its
 * Workload was admitted by, else its LocalQueue's once read; "" and the
 * totals of `qh` while unknown),
 * that queue's reserved and nominal GPUs, and the Workloads the engine
 * queued ahead of it. `qh` is the Job's home cluster's (sw_queue_home),
 * borrowed. SW_ENOENT when no Kueue queue holds `origin` (borrowed).
 */
int sw_queue_job_kueue(const struct sw_job *j, const cJSON *origin, const struct sw_queue_home *qh,
                       struct sw_job_kueue *out);
void sw_queue_home_free(struct sw_queue_home *qh);

/* ---- decide.c ------------------------------------------------------------- */

/** Decides every Job waiting for a decision, as one queue. */
void sw_decide_round(struct sw_hub *h);

/* ---- data.c --------------------------------------------------------------- */

/** Estimates the bytes of a Job's inputs (once); a missing input blocks the Job. */
void sw_data_estimate(struct sw_hub *h, struct sw_job *j, const struct sw_burst_spec *spec);
/** Makes a decided Job's inputs present in its target region. */
void sw_data_step(struct sw_hub *h, struct sw_job *j);
/** Stops a given-up attempt's output rounds (one last round, no step follows). */
void sw_data_outputs_stop(struct sw_hub *h, struct sw_job *j);
/** Starts (or finishes, when the mirror ended) the outputs' flow back. */
void sw_data_outputs(struct sw_hub *h, struct sw_job *j, bool final);

/* ---- admission.c ---------------------------------------------------------- */

/**
 * Home's admission judges j's pods before the first mirror of its attempt
 * is created in another cluster: a Pod built from `origin`'s pod template
 * (borrowed: the origin whole, as dispatch reads it), created in the origin
 * namespace on the origin's cluster `om` as a server-side dry run, its
 * verdict kept per (cluster, namespace, Pod) for ten minutes. Returns true
 * when they are admitted now (a verdict kept; with home lost, pods home
 * made from this template seen there) and dispatch goes on in the same
 * step, with j->admitted set. Otherwise it has taken the step (j busy):
 * the dry run is on the wire (j->admitted set once admitted, then stepped
 * again), or the burst is refused with admission's message, or naming
 * the field home's mutating admission changes (blocked, the attempt given
 * back), or it waits (backed off: no answer, or home lost with nothing
 * known).
 */
bool sw_admission_check(struct sw_hub *h, struct sw_job *j, struct sw_member *om,
                        const cJSON *origin);

/* ---- dispatch.c ----------------------------------------------------------- */

/** One dispatch step: intent, suspend, wait for pods, copy refs, create the mirror. */
void sw_dispatch_step(struct sw_hub *h, struct sw_job *j);
/**
 * Keeps a copy of an unfinished Job's whole origin (j->kept) while its
 * cluster answers, for dispatch if that cluster is lost; drops it once the
 * Job is finished. Returns true when it started a GET (the Job is busy).
 */
bool sw_dispatch_keep_origin(struct sw_hub *h, struct sw_job *j);
/**
 * The merge patch that hands an origin to spillway (new; the caller deletes
 * it): its finalizers with spillway's added, where the Job went, and
 * spec.suspend=true when `suspend`. `dispatching`: dispatch's own patch,
 * conditional on the origin's resourceVersion, with the state and decision
 * annotations; else the late one for an origin fenced when its lost cluster
 * returns (loss.c).
 */
cJSON *sw_dispatch_origin_patch(const cJSON *origin, const struct sw_job_rec *r, bool dispatching,
                                bool suspend);

/* ---- nsscope.c ------------------------------------------------------------ */

/**
 * Whether this hub serves origin namespace `ns` of member `m`: always
 * without namespaceSelector; with one, once the namespace's labels, read
 * from the member (and read again every 30 s while asked), match it.
 * Asking starts that read when it is due; until its answer the namespace
 * is not served. A Job in a namespace not served is never touched.
 */
bool sw_nsscope_serves(struct sw_hub *h, const struct sw_member *m, const char *ns);

/* ---- nsguard.c ------------------------------------------------------------ */

/**
 * The end of sw_nsguard_ensure: rc 0 (the namespace is there and may be
 * used), SW_EFORBIDDEN with `why` (the burst is refused: the namespace is
 * not spillway's for this origin nor granted, or weaker than home's Pod
 * Security), or another SW_E* (try again later).
 */
typedef void (*sw_nsguard_fn)(struct sw_hub *h, struct sw_job *j, int rc, const char *why,
                              void *ctx);
/**
 * Makes sure j's mirror may go into namespace j->rec.ns of its target
 * member (nsguard.c): created there with home's Pod Security labels and
 * marked spillway.io/made-for, or an existing one that is spillway's for
 * this origin or granted (useExistingNamespace), never weaker than home's
 * Pod Security. `done` may run before this returns 0; on an error return
 * it never runs.
 */
int sw_nsguard_ensure(struct sw_hub *h, struct sw_job *j, bool home_lost, sw_nsguard_fn done,
                      void *ctx);

/* ---- follow.c ------------------------------------------------------------- */

/** One follow step for a dispatched or running Job. */
void sw_follow_step(struct sw_hub *h, struct sw_job *j);
/** The origin was deleted (or is being): delete mirrors, drop the finalizer. */
void sw_follow_origin_gone(struct sw_hub *h, struct sw_job *j, const cJSON *origin);
/**
 * One step of ending a settled Job's record (retire.h says when): its
 * finished mirror deleted and waited for, spillway's copies of Secrets
 * released (sw_copies_release), spillway's finalizer removed from the
 * origin, then the record moved to the archive (sw_rec_end).
 */
void sw_follow_retire(struct sw_hub *h, struct sw_job *j);

/**
 * One step of releasing the copies of Secrets dispatch made for `j`'s
 * mirrors (copies.c), once its mirror is gone, in every cluster the record
 * says it copied to (earlier targets too): each Secret its pod template
 * references is deleted unless another record of the same origin cluster,
 * namespace and target, not yet through this step itself, references it
 * (or its template cannot be read), and only when it carries both of
 * spillway's labels for that origin cluster, conditional on the uid and
 * version read. A target that does not answer is waited for; one no longer
 * registered, a name whose delete failed SW_COPIES_TRIES times in a row
 * (with the hub's backoff) or was refused (403), and a template no longer
 * known (a hub restarted after the origin went) leave the copy, logged
 * with an Event and counted (spillway_secret_copies_left_total). Returns
 * true while not done (a request in flight, j busy; or a target waited
 * for, j->next_ms), false once there is nothing more to do. Never touches
 * a Secret spillway did not make. In memory only (j->copies_released): a
 * hub that restarts looks again.
 */
bool sw_copies_release(struct sw_hub *h, struct sw_job *j);
/** Consecutive failures after which a copy's delete is given up. */
#define SW_COPIES_TRIES 8
/**
 * Reads the Secrets of `j`'s pod template once, from `pod_spec` (its
 * spec.template.spec), if not read already (dispatch.c, as it copies them).
 */
void sw_copies_note(struct sw_job *j, const cJSON *pod_spec);
/**
 * Whether a release of copies is under way in `j`'s target for `j`'s origin
 * cluster and namespace: dispatch copies nothing there until it is over,
 * so that a delete never removes a copy a new mirror has just come to
 * rely on (copies.c).
 */
bool sw_copies_releasing(const struct sw_hub *h, const struct sw_job *j);
/** What `j`'s release has left to do, for people: "Secrets a, b in cluster x". */
void sw_copies_pending(const struct sw_job *j, char *buf, size_t len);
/**
 * For an annotation-only Job not yet suspended by the hub: when its origin
 * has finished at home (Complete or Failed), records that it ran at home
 * and returns true (a step is then in flight); else false.
 */
bool sw_follow_finished_at_home(struct sw_hub *h, struct sw_job *j, const cJSON *origin);
/** Whether a Job was put back after a lost mirror (its origin is then suspended by the hub). */
bool sw_follow_requeued(const struct sw_job_rec *r, const cJSON *origin);
/** Sends an Event about the origin Job (best effort). */
void sw_follow_event(struct sw_hub *h, const struct sw_job_rec *r, const char *type,
                     const char *reason, const char *message);
/** Sends queued Events, up to `max` of them (hub.c calls it when no dispatch waits). */
void sw_follow_flush_events(struct sw_hub *h, size_t max);
/** Patches annotations on the origin Job (best effort, no callback). */
void sw_follow_annotate(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * Shows on the origin Job that its mirror was withdrawn: spillway.io/state
 * back to observed with spillway.io/reason the record's reason, and
 * spillway.io/placed-in and spillway.io/mirror removed (best effort).
 */
void sw_follow_show_unplaced(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * Shows on the origin Job that its burst is blocked (`blocked`, with the
 * record's reason) or no longer is: spillway.io/state and spillway.io/reason
 * for both forms, and for a delegated Job the condition SpillwayBlocked, so
 * that `kubectl get` and `kubectl wait` users see it. Best effort.
 */
void sw_follow_show_blocked(struct sw_hub *h, const struct sw_job_rec *r, bool blocked);
/**
 * Blocks a Job that cannot burst now: state blocked with `why` as its
 * reason, and, unless it was blocked for the same reason already, a
 * Warning Event `event` and sw_follow_show_blocked. The caller writes the
 * record (sw_rec_step).
 */
void sw_follow_block(struct sw_hub *h, struct sw_job *j, const char *event, const char *why);

/* ---- loss.c --------------------------------------------------------------- */

/**
 * One step for a Job touched by a member's loss, before its lifecycle step:
 * stale mirrors deleted from clusters that are back; a Job whose mirror's
 * cluster is lost placed again (spillway.io/on-cluster-loss: requeue, the
 * default) or held (wait); a Job decided for a lost cluster decided again.
 * Returns true when it took the step (or the Job must wait), false when
 * the lifecycle step should run.
 */
bool sw_loss_step(struct sw_hub *h, struct sw_job *j);
/**
 * Whether the record names its own origin as stale (attempt 0): the origin's
 * cluster was lost when the Job was placed elsewhere, and the origin is
 * suspended there when it returns.
 */
bool sw_loss_origin_fenced(const struct sw_job_rec *r);
/**
 * Dispatch, with the origin's cluster lost and the origin not yet fenced: a
 * requeue Job records its origin as stale and goes on without suspending it
 * (done on return); a wait Job goes back to waiting. Returns 1 when it took
 * the step (the record is being written), 0 when dispatch goes on as usual.
 */
int sw_loss_fence_origin(struct sw_hub *h, struct sw_job *j);

/* ---- rules.c -------------------------------------------------------------- */

/** The rules as just listed (names borrowed): new ones added, removed ones dropped. */
void sw_rules_set(struct sw_hub *h, char **names, size_t n);
/** Each tick on the leader: starts the runs that are due. */
void sw_rules_tick(struct sw_hub *h);

/* ---- spend.c -------------------------------------------------------------- */

/**
 * Reads the runs of ended records that count against the budgets (the
 * spend entries, SW_KEY_SPEND, of runs that ended since the earliest
 * budget's period began, all of them, page by page) and keeps those of
 * teams with a budget, replacing what was kept once the whole read is in;
 * then calls `done`
 * (0, or an error: nothing kept is changed, the read is tried again in
 * 5 s). With no budget configured it reads nothing.
 */
int sw_spend_load(struct sw_hub *h, void (*done)(struct sw_hub *h, int rc));
/** Reads them again every minute while leading (no read overlaps another). */
void sw_spend_tick(struct sw_hub *h);
/** Keeps the run of a record this hub has just ended (archived). */
void sw_spend_ended(struct sw_hub *h, const struct sw_job_rec *r);
/**
 * Every budget's status now (h->budget_status), from the live records and
 * the ended runs kept. SW_ENOMEM leaves the previous statuses.
 */
int sw_spend_tally(struct sw_hub *h);

/* ---- metrics.c ------------------------------------------------------------ */

/** Listens on cfg.listen for /metrics, /healthz and /readyz. */
int sw_metrics_start(struct sw_hub *h, struct sw_error *err);
/** Counts one decision by outcome and pool. */
void sw_metrics_decision(struct sw_hub *h, enum sw_verdict v, const char *pool);
/** Counts a finished Job's runtime and its belief's error (spillway_runtime_*). */
void sw_metrics_runtime(struct sw_hub *h, const struct sw_runtime_obs *o);
/** Records one dispatch's latency in seconds. */
void sw_metrics_dispatch_latency(struct sw_hub *h, double s);
/**
 * Adds the cost of the job's current attempt (GPUs x price x hours from its
 * start to its end, or to now when it ended without an end time) to
 * spillway_cloud_spend_dollars_total, once per attempt and only for cloud
 * capacity. Called where an attempt ends: finished, failed, lost or
 * preempted, before the record forgets its start. A counter, so the spend
 * stays counted when the record is removed; each hub counts the attempts
 * that ended while it led, so the fleet's spend is the sum over replicas.
 */
void sw_metrics_spend(struct sw_hub *h, struct sw_job *j);
/**
 * Counts one burst taken from a Kueue queue (a mirror created in another
 * cluster for a Job whose decision took it from ClusterQueue `cq` of
 * cluster `cluster`, "" when not known), in spillway_kueue_bursts_total.
 */
void sw_metrics_kueue_burst(struct sw_hub *h, const char *cluster, const char *cq);

#endif
