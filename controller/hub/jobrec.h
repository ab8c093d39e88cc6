/*
 * jobrec.h - the hub's record of one origin Job, as kept in Redis, and its
 * JSON form. Pure: spillwayd writes it, spillctl (status, explain) reads it.
 */
#ifndef SW_CONTROLLER_HUB_JOBREC_H
#define SW_CONTROLLER_HUB_JOBREC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "placement/estimate.h"

/* Redis keys. */
#define SW_KEY_LEASE   "spillway:hub:leader"
#define SW_KEY_EPOCH   "spillway:hub:epoch"
#define SW_KEY_HEALTH  "spillway:hub:members"
#define SW_KEY_JOBS    "spillway:jobs"
#define SW_KEY_JOB     "spillway:job:"
#define SW_KEY_EXPLAIN "spillway:explain:"
/* a hash: Job key -> wall ms its outputs last came home (a full round) */
#define SW_KEY_OUTPUTS_SYNCED "spillway:outputs-synced"
/* "HUB-ID epoch E, every N s" while the leading hub runs the replication
 * rule (with a TTL): spillctl replicate run refuses the rule without --force */
#define SW_KEY_RULE_OWNER "spillway:rule-owner:"
/* member clusters cut off on purpose (spillctl drill): a hash, name -> why */
#define SW_KEY_FENCE "spillway:fence"
/* a hash: "cluster/nodepool" -> what the hub learned there (learn.h), JSON */
#define SW_KEY_LEARNED "spillway:learned"
/* a hash: origin Job UID -> a finished Job's runtime and features (JSON,
 * runtimes.h), what the hub learns runtimes from; and a sorted set of the
 * same UIDs scored by when each finished (wall ms), by which the oldest
 * beyond SW_RUNTIMES_MAX are dropped */
#define SW_KEY_RUNTIMES       "spillway:runtimes"
#define SW_KEY_RUNTIMES_ORDER "spillway:runtimes:order"
/* Per team: members "TEAM\0FINISHEDMS(16 digits)\0UID" (score 0, by bytes),
 * and each team's count (a sorted set scored by it), for the per-team drop. */
#define SW_KEY_RUNTIMES_BYTEAM "spillway:runtimes:byteam"
#define SW_KEY_RUNTIMES_TEAMS  "spillway:runtimes:teams"
/* a hash: "cluster/nodeclaim" -> a bound NodePool's NodeClaim's life (JSON:
 * cluster, pool, nodePool, gpus, pricePerGpuHour, createdMs, deletedMs),
 * what spillctl report chargeback --from-hub bills as node-hours */
#define SW_KEY_NODE_HOURS "spillway:node-hours"
/* a sorted set: records that ended (their Job retired, or its origin and
 * mirror gone), as JSON without their explanation, scored by when the Job
 * finished (wall ms; when the record ended for a Job that never did), kept
 * records.archiveDays; spillctl report chargeback --from-hub reads it
 * beside the live records */
#define SW_KEY_ENDED "spillway:ended"
/* the leading hub's team budgets (JSON: {"budgets": [{team, amount,
 * period}], "epoch", "writtenMs"}), written when it reads the ended
 * records; what spillctl report budget tallies against */
#define SW_KEY_BUDGETS "spillway:budgets"
/* a sorted set: the runs on cloud capacity of records that ended, each a
 * compact JSON entry (sw_budget_spend_entry: uid, cluster, namespace,
 * team, capacity, billedGpus, pricePerGpuHour, startedMs, finishedMs),
 * scored by when the run ended (wall ms), added as the record is archived
 * and kept SW_SPEND_KEEP_MS; what the budgets read, page by page, from the
 * earliest budget's period start (the hub and spillctl report budget) */
#define SW_KEY_SPEND "spillway:spend"

/** A Job's place in the burst lifecycle (the record's "state"). */
enum sw_job_state {
    SW_JS_OBSERVED = 0, /* managed; waiting for saturation or a decision to move */
    SW_JS_DECIDED,      /* a pool is chosen; its data is next */
    SW_JS_DATA_READY,   /* inputs verified in the target region */
    SW_JS_DISPATCHING,  /* intent written: attempt N goes to the target */
    SW_JS_DISPATCHED,   /* the mirror exists */
    SW_JS_RUNNING,      /* the mirror has active pods */
    SW_JS_SUCCEEDED,
    SW_JS_FAILED,
    SW_JS_BLOCKED,  /* cannot burst now (a missing input, a bad reference): reason says why */
    SW_JS_REQUEUED, /* the mirror was lost: it is being deleted; then decided again */
    SW_JS__COUNT
};

/** "observed", "decided", ... */
const char *sw_job_state_name(enum sw_job_state s);
/** Parses a state name; SW_EINVAL when unknown. */
int sw_job_state_parse(const char *s, enum sw_job_state *out);
static inline bool sw_job_state_terminal(enum sw_job_state s)
{
    return s == SW_JS_SUCCEEDED || s == SW_JS_FAILED;
}

/** The two ways a Job opts in. */
enum sw_job_form { SW_FORM_ANNOTATION = 0, SW_FORM_DELEGATED };

/** The most mirrors a record remembers to delete from lost clusters. */
#define SW_REC_MAX_STALE 16

/** The most member clusters a record remembers copying Secrets to. */
#define SW_REC_MAX_COPIED 16

/**
 * A mirror left on a member cluster that was lost while it ran: the Job was
 * placed again elsewhere, and this one is deleted when the cluster returns,
 * before anything else is sent there.
 */
struct sw_stale_mirror {
    char cluster[64];
    char name[64];
    int attempt;
};

/**
 * The Kueue queue a Job was burst from, as the decision found it (the
 * record's "kueue"; absent for a Job no Kueue queue held). What the origin's
 * decision text and spillctl status and explain say of its queue.
 */
struct sw_job_kueue {
    /* The ClusterQueue it waited in; "" when its cluster has several and
     * the Job's was not known (the figures are then its cluster's totals). */
    char cluster_queue[64];
    char local_queue[64];  /* the LocalQueue it was submitted to */
    int64_t reserved_gpus; /* nvidia.com/gpu reserved in that ClusterQueue */
    int64_t nominal_gpus;  /* of its nominal quota */
    /* Workloads pending for quota there that spillway does not manage,
     * which the engine queued ahead of the Job */
    int64_t ahead;
    /* Kueue preempted it at home (its Workload evicted, reason Preempted,
     * and queued again): said first, before the queue's figures */
    bool preempted;
};

/** The most bytes of a record's summary, its terminating NUL included. */
#define SW_REC_SUMMARY_MAX 384

/** One origin Job's record: what is written to Redis (record.c). */
struct sw_job_rec {
    char key[256]; /* "cluster/namespace/name" */
    char cluster[64];
    char ns[64];
    char name[64];
    char uid[64];
    enum sw_job_form form;
    enum sw_job_state state;
    int attempt;     /* 0 before the first dispatch */
    int preemptions; /* mirrors lost to spot interruptions or node loss */
    int withdrawals; /* mirrors withdrawn unadmitted from a target's Kueue queue */
    char target_cluster[64];
    char target_pool[64];
    char target_region[64];
    char capacity[16]; /* owned, spot, on-demand */
    char mirror[64];   /* the current attempt's mirror Job */
    char team[64];
    /* The outputs prefix, "s3://bucket/prefix", fixed when the Job is
     * decided (checked against its namespace's grant, tenancy.h): what the
     * outputs rounds write home, whatever the annotation says later; ""
     * none (or a record written before: the annotation, checked again). */
    char outputs[600];
    int gpus;
    /* GPUs the run is billed for at price_gpu_h: gpus, or less for MIG
     * slices (slices / per GPU) and shares packed on a time-sliced pool
     * (docs/cost-model.md); 0 in a record written before: gpus. */
    double billed_gpus;
    double price_gpu_h;
    double expected_cost; /* the chosen option's expected total */
    /* What a budgeted burst reserves of its team's budget (the expected
     * cost x its budget_reserve); 0 (a team without a budget, or a record
     * written before): its expected cost. */
    double reserved_cost;
    double home_wait_s;    /* the stay option's expected wait */
    double burst_now_cost; /* what burst-immediately (on-demand now) would cost */
    /* "burst to cloud-spot (spot): $41.20 expected vs 47 min wait at home",
     * after "queued in ClusterQueue gpu: ...; " for a Job burst from Kueue */
    char summary[SW_REC_SUMMARY_MAX];
    char reason[512]; /* blocked or failed: why */
    int64_t input_bytes;
    double created; /* origin creationTimestamp, unix s */
    int64_t observed_ms, decided_ms, data_ready_ms, dispatched_ms, started_ms, finished_ms;
    /* When the hub first saw the current attempt's mirror Complete (wall
     * ms; 0 not seen): a mirror deleted after that completed, whatever a
     * later look at the cluster finds. */
    int64_t mirror_completed_ms;
    /* The current attempt's wait for a node being provisioned (a pool bound
     * to a NodePool, capacity.c): when the hub saw the mirror wait for one
     * (wall ms, the WaitingForNode Event sent; 0 none), the NodePool and
     * NodeClaim, the delay the engine expected, and once the mirror runs
     * the wait itself (mirror created to running, seconds; 0 not yet). */
    int64_t node_wait_ms;
    char node_pool[64];
    char node_claim[64];
    double node_wait_expected_s;
    double node_wait_s;
    int64_t epoch;     /* of the last write */
    bool wait_on_loss; /* spillway.io/on-cluster-loss: wait (as of the last decision) */
    int nstale;        /* mirrors to delete from clusters that were lost */
    struct sw_stale_mirror stale[SW_REC_MAX_STALE];
    /* Every member cluster, other than its own, that an attempt copied (or
     * began to copy) the pod template's Secrets to, written with the
     * attempt's intent: where spillway's copies are released at the end
     * (copies.c), earlier targets included. */
    int ncopied;
    char copied_to[SW_REC_MAX_COPIED][64];
    bool has_kueue; /* the last decision took it from a Kueue queue: kueue says which */
    struct sw_job_kueue kueue;
    /* The runtime belief it was last decided with (runtimes.h; the record's
     * "runtimeBelief") and what it is learned by once it finishes; absent
     * (belief_set false) in records written before it, which teach
     * nothing. */
    bool belief_set;
    struct sw_estimate belief;
    double annotated_s; /* spillway.io/expected-runtime when decided; 0 none */
    enum sw_priority_class prio;
    char label[64]; /* sw_runtime_label */
    /* Its runtime was counted (written with the observation, in one script):
     * a record read again is never counted twice. */
    bool runtime_counted;
};

/** The record as JSON (new; the caller deletes it). */
cJSON *sw_job_rec_to_json(const struct sw_job_rec *r);
/** Parses a record (borrowed); errors name the record and the field. */
int sw_job_rec_from_json(const cJSON *o, struct sw_job_rec *r, struct sw_error *err);
/**
 * Remembers a stale mirror (once). SW_ETOOBIG when SW_REC_MAX_STALE are
 * remembered already: the caller must then not place the Job again.
 */
int sw_job_rec_add_stale(struct sw_job_rec *r, const char *cluster, const char *name, int attempt);
/** Forgets stale mirror i (its deletion is done). */
void sw_job_rec_remove_stale(struct sw_job_rec *r, int i);
/**
 * Remembers that Secrets are copied to `cluster` (once). SW_ETOOBIG when
 * SW_REC_MAX_COPIED are remembered already.
 */
int sw_job_rec_add_copied(struct sw_job_rec *r, const char *cluster);
/** Whether a stale mirror of the record is on `cluster`. */
bool sw_job_rec_stale_on(const struct sw_job_rec *r, const char *cluster);

/**
 * What a Job's Kueue queue looked like, for people: "queued in ClusterQueue
 * gpu: 8/8 GPUs reserved, 5 Workloads ahead" ("queued in LocalQueue gpu:
 * 16/24 GPUs reserved in its cluster's ClusterQueues, ..." when the
 * ClusterQueue is not known). Always NUL-terminated, cut to fit `len`.
 */
void sw_job_kueue_text(const struct sw_job_kueue *k, char *buf, size_t len);

/**
 * The same, short, for a table's column: "gpu 8/8, 5 ahead" ("LocalQueue
 * gpu 16/24, 5 ahead" when the ClusterQueue is not known).
 */
void sw_job_kueue_short(const struct sw_job_kueue *k, char *buf, size_t len);

/** The GPUs a record's run is billed for: billed_gpus, or gpus when that is 0. */
double sw_job_rec_billed_gpus(const struct sw_job_rec *r);

/** What the record's Job has cost so far (GPUs x price x hours run), at `now_ms`. */
double sw_job_rec_cost(const struct sw_job_rec *r, int64_t now_ms);

#endif
