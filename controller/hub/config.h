/*
 * config.h - the configuration file of the hub daemon, spillwayd.
 *
 * One YAML document (docs/hub.md, "Configuration"):
 *
 *   redis:
 *     url: redis://127.0.0.1:6379/0       # required; no password in it
 *     passwordFile: /etc/spillway/redis-password
 *     passwordEnv: SPILLWAY_REDIS_PASSWORD  # instead of passwordFile
 *     # with url: redis+sentinel://h1:26379,h2:26379,h3:26379/MASTER/0
 *     sentinelPasswordFile: /etc/spillway/sentinel-password
 *     sentinelPasswordEnv: SPILLWAY_SENTINEL_PASSWORD  # instead of the file
 *   secretKeyFile: /etc/spillway/secret.key  # required
 *   listen: 127.0.0.1:9464                # metrics and health
 *   placement:
 *     policy: cost-aware                  # NAME or NAME:VALUE
 *     recheckSeconds: 5
 *     deadlineGuard: true                 # cost-aware's deadline guard (docs/cost-model.md)
 *   leader:
 *     id: hub-a                           # default: hostname-pid
 *     leaseTTLSeconds: 10
 *   outputs:
 *     syncSeconds: 30
 *   maxAttempts: 3
 *   members:
 *     probeIntervalSeconds: 10            # each member's /readyz
 *     lostAfterSeconds: 60                # toleration before a member is lost
 *     rtoTargetSeconds: 600               # objective for recovering from a loss (drills)
 *     qps: 50                             # requests per second to each member's API server
 *     burst: 100                          # and the token bucket's size
 *   replication:
 *     intervalSeconds: 60                 # every replication rule, run by the leader
 *     modelRegistrySeconds: 5             # model-registry rules: each new version
 *     rpoObjectiveSeconds: 300            # for rules that name none
 *   buckets:                              # a bucket's name in each region's store
 *     datasets:                           # as the Jobs' annotations name it
 *       us-east-1: datasets-use1          # what it is called in us-east-1
 *   logLevel: info                        # debug, info, warn or error
 *   kueue:
 *     mirrorAdmissionSeconds: 300         # a mirror unadmitted in its target's queue this
 *                                         # long is withdrawn and the Job decided again
 *     multiKueueDispatcher: false         # MultiKueue's external dispatcher (docs/kueue.md)
 *     multiKueueWorkers: 1                # workers nominated per Workload, cheapest first
 *   records:
 *     retireAfterSeconds: 86400           # a finished Job's record this long after its end
 *                                         # leaves the live set for the archive
 *     archiveDays: 400                    # ended records kept this long (chargeback)
 *     deletedOriginSeconds: 300           # a deleted origin keeps spillway's finalizer at
 *                                         # most this long while its mirror and copies go
 *   karpenter:
 *     shortageWithdrawSeconds: 120        # a mirror whose pods wait this long on a NodePool
 *                                         # short of capacity is withdrawn, decided again
 *   namespaceSelector: "spillway.io/hub=a"  # the origin namespaces this hub serves
 *                                         # (nsselect.h); default every namespace
 *   tenancy:
 *     grants:                             # what each origin namespace may do (tenancy.h)
 *     - cluster: onprem                   # the origin cluster and namespace, both required
 *       namespace: team-cv
 *       teams: [cv]                       # default: the namespace's name
 *       priorities: [training, production]  # default: best-effort, development, training
 *       read: ["s3://datasets/team-cv/"]  # prefixes its inputs may name; default none
 *       write: ["s3://checkpoints/team-cv/"]  # its outputs; default none
 *       useExistingNamespace: false       # mirrors into a same-named namespace spillway
 *                                         # did not create; default false
 *   budgets:                              # cloud spend per team and period (budget.h)
 *   - team: ml-research                   # a granted team, or an ungranted namespace's name
 *     amount: 5000                        # US dollars per period, 0 to 1e9
 *     period: month                       # month (default), week or day (UTC)
 *
 * The file is spillway's own format, so it is read strictly: an unknown or
 * repeated key at any level, a value of the wrong shape or null, a number
 * out of range and a second document are errors naming the file, the line
 * and the field. Relative paths (passwordFile, secretKeyFile) are taken
 * relative to the folder of the config file. Parsing is pure; loading and
 * the password lookup read the file system and the environment.
 */
#ifndef SW_CONTROLLER_HUB_CONFIG_H
#define SW_CONTROLLER_HUB_CONFIG_H

#include <stddef.h>

#include "common/error.h"
#include "controller/hub/budget.h"
#include "controller/hub/nsselect.h"
#include "controller/hub/tenancy.h"

#define SW_HUB_PATH_MAX 1024
/** The largest config file sw_hub_config_load reads. */
#define SW_HUB_CONFIG_MAX (1024 * 1024)

/** At most this many (bucket, region) names in `buckets`. */
#define SW_HUB_MAX_BUCKET_MAPS 64

/** A bucket's name in one region's store. */
struct sw_bucket_map {
    char bucket[64]; /* as a Job's annotation names it */
    char region[64];
    char name[64]; /* what it is called in that region's store */
};

/** The hub's settings, defaults filled by sw_hub_config_default. */
struct sw_hub_config {
    char redis_url[512];                          /* "redis://host:port/db"; never a password */
    char redis_password_file[SW_HUB_PATH_MAX];    /* "" = none */
    char redis_password_env[64];                  /* default "SPILLWAY_REDIS_PASSWORD" */
    int redis_sentinel;                           /* redis_url is a redis+sentinel:// URL */
    char sentinel_password_file[SW_HUB_PATH_MAX]; /* the Sentinels' own password; "" = none */
    char sentinel_password_env[64];               /* default "SPILLWAY_SENTINEL_PASSWORD" */
    char secret_key_file[SW_HUB_PATH_MAX];        /* sealing key file; required */
    char listen[128];                             /* metrics/health "host:port" */
    char policy[64];                              /* "NAME" or "NAME:VALUE" (sw_policy_parse) */
    double recheck_s;                             /* default 5 */
    int deadline_guard;                           /* placement.deadlineGuard; default 1 */
    double lease_ttl_s;                           /* default 10; >= 1 */
    char hub_id[64];                              /* "" = hostname-pid chosen at run time */
    char log_level[16];                           /* debug|info|warn|error; default info */
    double output_sync_s;                         /* outputs copied back every N s; default 30 */
    int max_attempts;                             /* re-placements of one Job; default 3 */
    double probe_interval_s; /* members' /readyz probed every N s; default 10 */
    double lost_after_s; /* a member not answering (or not Ready) this long is lost; default 60 */
    double rto_target_s; /* the objective a member's loss is recovered in (drills); default 600 */
    double member_qps;   /* client-side rate limit per member API server; default 50 */
    int member_burst;    /* its token bucket's size; default 100 */
    double repl_interval_s;      /* replication rules run every N s; default 60 */
    double repl_model_s;         /* model-registry rules every N s; default 5 */
    double repl_rpo_objective_s; /* a rule's RPO objective when it names none; default 300 */
    /* replication.workers: the data gate's worker threads (and Redis
     * connections), shared by every gated Job; default 4. */
    int gate_workers;
    double mirror_admission_s; /* a queued mirror unadmitted this long is withdrawn; default 300 */
    /* A mirror whose pods wait this long on a NodePool short of capacity is
     * withdrawn; default 120. */
    double shortage_withdraw_s;
    struct sw_bucket_map bucket_maps[SW_HUB_MAX_BUCKET_MAPS]; /* buckets: none by default */
    size_t nbucket_maps;
    int mk_dispatcher;     /* kueue.multiKueueDispatcher: MultiKueue's external dispatcher; 0 */
    int mk_workers;        /* kueue.multiKueueWorkers: workers nominated per Workload; default 1 */
    double retire_after_s; /* records.retireAfterSeconds: a settled record ends; default 86400 */
    int archive_days;      /* records.archiveDays: ended records kept for reports; default 400 */
    /* records.deletedOriginSeconds: the longest a deleted origin keeps
     * spillway's finalizer while its mirror and copies are cleaned; 300 */
    double deleted_origin_s;
    /* namespaceSelector: the origin Jobs this hub serves are those in the
     * members' namespaces whose labels match it (nsselect.h); empty (no
     * term) by default, every namespace. */
    struct sw_nssel ns_selector;
    /* tenancy.grants: what each origin namespace may do (tenancy.h); none
     * by default. Heap: sw_hub_config_free. */
    struct sw_tenancy tenancy;
    /* budgets: each team's cloud spend per period (budget.h); none by
     * default, and a team without one is not limited. */
    struct sw_team_budget budgets[SW_HUB_MAX_BUDGETS];
    size_t nbudgets;
};

/** Frees what a parsed config holds on the heap (its grants). */
void sw_hub_config_free(struct sw_hub_config *c);

/**
 * The name of `bucket` (as a Job's annotation names it, in the store of
 * its origin's region `home`) in the store of `region`: the config's
 * `buckets` entry for that bucket and region; else `bucket` itself in
 * `home`; else NULL: a bucket no entry maps is never guessed in another
 * region (bucket names are global on AWS: the same name there may be
 * someone else's). Borrows from `c` or returns `bucket`. `c` may be NULL.
 */
const char *sw_hub_config_bucket(const struct sw_hub_config *c, const char *bucket,
                                 const char *region, const char *home);

/** Fills `c` with the defaults; the required fields (redis.url, secretKeyFile) are "". */
void sw_hub_config_default(struct sw_hub_config *c);

/**
 * Parses the `len` bytes of a config file (borrowed; need not end in NUL)
 * into *out, which is first reset to the defaults. `path` names the file in
 * errors and anchors relative paths. Errors are SW_EINVAL with a message such as
 *   hub.yaml:9: field "leader.leaseTTLSeconds": expected a number of seconds >= 1, got "abc"
 * (SW_EPARSE for YAML that is not well formed, SW_ENOMEM). A password
 * inside redis.url is refused and never copied into the message. On error
 * *out may hold part of the file.
 */
int sw_hub_config_parse(const char *text, size_t len, const char *path, struct sw_hub_config *out,
                        struct sw_error *err);

/**
 * Reads the file at `path` (at most SW_HUB_CONFIG_MAX bytes) and parses it.
 * Errors name the file: SW_ENOENT not found, SW_EFORBIDDEN or SW_EIO
 * unreadable, SW_ETOOBIG too big, or those of sw_hub_config_parse.
 */
int sw_hub_config_load(const char *path, struct sw_hub_config *out, struct sw_error *err);

/**
 * Resolves the Redis password into `buf` (capacity `len`): the content of
 * redis.passwordFile when set (trailing CR/LF stripped; an empty file, a
 * NUL byte or a password of `len` bytes or more is an error naming the
 * file; a file readable by group or others is used with a warning in the
 * log), else the environment variable named by redis.passwordEnv when set
 * and not empty, else none (buf ""). Returns 0 or SW_E* with `err` naming
 * the file or the variable; the password never appears in `err` or a log.
 */
int sw_hub_config_redis_password(const struct sw_hub_config *c, char *buf, size_t len,
                                 struct sw_error *err);

/**
 * As sw_hub_config_redis_password for the Sentinels' own password, from
 * redis.sentinelPasswordFile, else redis.sentinelPasswordEnv (default
 * SPILLWAY_SENTINEL_PASSWORD). With a redis.url that is not a Sentinel URL
 * there is none: buf "" and 0 (the parser refuses the two fields then).
 */
int sw_hub_config_sentinel_password(const struct sw_hub_config *c, char *buf, size_t len,
                                    struct sw_error *err);

#endif
