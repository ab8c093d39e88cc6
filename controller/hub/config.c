/*
 * config.c - spillwayd's config file: strict YAML on libyaml, file loading
 * and the Redis password lookup.
 *
 * The schema is a table of fields; one walk over the YAML document checks
 * every mapping's keys against it (unknown, repeated, not a name) and hands
 * each scalar to the setter of its field, so an error always knows the file,
 * the line and the dotted field name.
 */
#include "controller/hub/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "clusters/ratelimit.h"
#include "common/dns1123.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/yamlnode.h"
#include "controller/hub/annotations.h"
#include "common/log.h"
#include "placement/engine.h"
#include "store/redis.h"

void sw_hub_config_default(struct sw_hub_config *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->redis_password_env, sizeof(c->redis_password_env), "SPILLWAY_REDIS_PASSWORD");
    snprintf(c->sentinel_password_env, sizeof(c->sentinel_password_env),
             "SPILLWAY_SENTINEL_PASSWORD");
    snprintf(c->listen, sizeof(c->listen), "127.0.0.1:9464");
    snprintf(c->policy, sizeof(c->policy), "cost-aware");
    c->recheck_s = 5;
    c->deadline_guard = 1;
    c->mk_workers = 1;
    c->lease_ttl_s = 10;
    snprintf(c->log_level, sizeof(c->log_level), "info");
    c->output_sync_s = 30;
    c->max_attempts = 3;
    c->probe_interval_s = 10;
    c->lost_after_s = 60;
    c->rto_target_s = 600;
    c->member_qps = SW_REST_DEFAULT_QPS;
    c->member_burst = SW_REST_DEFAULT_BURST;
    c->repl_interval_s = 60;
    c->repl_model_s = 5;
    c->repl_rpo_objective_s = 300;
    c->gate_workers = 4;
    c->mirror_admission_s = 300;
    c->retire_after_s = 86400;
    c->deleted_origin_s = 300;
    c->archive_days = 400;
    c->shortage_withdraw_s = 120;
}

/* ---- the schema --------------------------------------------------------- */

enum field_id {
    F_REDIS,
    F_REDIS_URL,
    F_REDIS_PASSWORD_FILE,
    F_REDIS_PASSWORD_ENV,
    F_SENTINEL_PASSWORD_FILE,
    F_SENTINEL_PASSWORD_ENV,
    F_SECRET_KEY_FILE,
    F_LISTEN,
    F_PLACEMENT,
    F_POLICY,
    F_RECHECK,
    F_DEADLINE_GUARD,
    F_LEADER,
    F_LEADER_ID,
    F_LEASE_TTL,
    F_OUTPUTS,
    F_OUTPUT_SYNC,
    F_MAX_ATTEMPTS,
    F_LOG_LEVEL,
    F_MEMBERS,
    F_PROBE_INTERVAL,
    F_LOST_AFTER,
    F_RTO_TARGET,
    F_MEMBER_QPS,
    F_MEMBER_BURST,
    F_REPLICATION,
    F_REPL_INTERVAL,
    F_REPL_MODEL,
    F_REPL_RPO,
    F_REPL_WORKERS,
    F_BUCKETS,
    F_KUEUE,
    F_MIRROR_ADMISSION,
    F_MK_DISPATCHER,
    F_MK_WORKERS,
    F_RECORDS,
    F_RETIRE_AFTER,
    F_DELETED_ORIGIN,
    F_ARCHIVE_DAYS,
    F_KARPENTER,
    F_SHORTAGE_WITHDRAW,
    F_TENANCY,
    F_NS_SELECTOR,
    F_GRANTS,
    F_BUDGETS,
    F__COUNT
};

/*
 * A field: its key, what its value must be (for "expected X, got Y"), and
 * for a mapping its own fields. Numbers carry their range.
 */
struct field {
    const char *key;
    enum field_id id;
    const char *expect;
    const struct field *sub; /* a mapping's fields, NULL for a scalar */
    size_t nsub;
    double min, max; /* numbers only */
};

#define NUM_SECONDS "a number of seconds"

static const struct field redis_fields[] = {
    {"url", F_REDIS_URL,
     "a Redis URL such as \"redis://127.0.0.1:6379/0\", "
     "\"rediss://redis.example:6380/0?tls_ca_file=/etc/spillway/redis-ca.pem\" or "
     "\"redis+sentinel://h1:26379,h2:26379,h3:26379/MASTER/0\"",
     NULL, 0, 0, 0},
    {"passwordFile", F_REDIS_PASSWORD_FILE, "a file name", NULL, 0, 0, 0},
    {"passwordEnv", F_REDIS_PASSWORD_ENV,
     "an environment variable name (letters, digits and '_', not starting with a digit)", NULL, 0,
     0, 0},
    {"sentinelPasswordFile", F_SENTINEL_PASSWORD_FILE, "a file name", NULL, 0, 0, 0},
    {"sentinelPasswordEnv", F_SENTINEL_PASSWORD_ENV,
     "an environment variable name (letters, digits and '_', not starting with a digit)", NULL, 0,
     0, 0},
};
static const struct field placement_fields[] = {
    {"policy", F_POLICY, "a policy NAME or NAME:VALUE such as \"cost-aware\"", NULL, 0, 0, 0},
    {"recheckSeconds", F_RECHECK, NUM_SECONDS, NULL, 0, 0.1, 3600},
    {"deadlineGuard", F_DEADLINE_GUARD, "true or false", NULL, 0, 0, 0},
};
static const struct field leader_fields[] = {
    {"id", F_LEADER_ID, "an id of 1-63 letters, digits, '.', '_' and '-'", NULL, 0, 0, 0},
    {"leaseTTLSeconds", F_LEASE_TTL, NUM_SECONDS, NULL, 0, 1, 3600},
};
static const struct field outputs_fields[] = {
    {"syncSeconds", F_OUTPUT_SYNC, NUM_SECONDS, NULL, 0, 1, 86400},
};
static const struct field members_fields[] = {
    {"probeIntervalSeconds", F_PROBE_INTERVAL, NUM_SECONDS, NULL, 0, 0.5, 600},
    {"lostAfterSeconds", F_LOST_AFTER, NUM_SECONDS, NULL, 0, 1, 86400},
    {"rtoTargetSeconds", F_RTO_TARGET, NUM_SECONDS, NULL, 0, 1, 604800},
    {"qps", F_MEMBER_QPS, "a number of requests per second", NULL, 0, 1, 100000},
    {"burst", F_MEMBER_BURST, "a whole number of requests", NULL, 0, 1, 100000},
};
static const struct field replication_fields[] = {
    {"intervalSeconds", F_REPL_INTERVAL, NUM_SECONDS, NULL, 0, 1, 86400},
    {"modelRegistrySeconds", F_REPL_MODEL, NUM_SECONDS, NULL, 0, 1, 86400},
    {"rpoObjectiveSeconds", F_REPL_RPO, NUM_SECONDS, NULL, 0, 1, 31536000},
    {"workers", F_REPL_WORKERS, "a whole number of worker threads", NULL, 0, 1, 64},
};
static const struct field kueue_fields[] = {
    {"mirrorAdmissionSeconds", F_MIRROR_ADMISSION, NUM_SECONDS, NULL, 0, 1, 86400},
    {"multiKueueDispatcher", F_MK_DISPATCHER, "true or false", NULL, 0, 0, 0},
    {"multiKueueWorkers", F_MK_WORKERS, "a whole number of worker clusters", NULL, 0, 1, 20},
};
static const struct field records_fields[] = {
    {"retireAfterSeconds", F_RETIRE_AFTER, NUM_SECONDS, NULL, 0, 1, 31536000},
    {"deletedOriginSeconds", F_DELETED_ORIGIN, NUM_SECONDS, NULL, 0, 1, 86400},
    {"archiveDays", F_ARCHIVE_DAYS, "a whole number of days", NULL, 0, 1, 3650},
};
static const struct field karpenter_fields[] = {
    {"shortageWithdrawSeconds", F_SHORTAGE_WITHDRAW, NUM_SECONDS, NULL, 0, 1, 86400},
};
static const struct field tenancy_fields[] = {
    {"grants", F_GRANTS,
     "a list of grants (cluster, namespace, teams, priorities, read, write, "
     "useExistingNamespace)",
     NULL, 0, 0, 0},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))
static const struct field top_fields[] = {
    {"redis", F_REDIS, "a mapping", redis_fields, N(redis_fields), 0, 0},
    {"secretKeyFile", F_SECRET_KEY_FILE, "a file name", NULL, 0, 0, 0},
    {"listen", F_LISTEN, "host:port, e.g. \"127.0.0.1:9464\"", NULL, 0, 0, 0},
    {"placement", F_PLACEMENT, "a mapping", placement_fields, N(placement_fields), 0, 0},
    {"leader", F_LEADER, "a mapping", leader_fields, N(leader_fields), 0, 0},
    {"outputs", F_OUTPUTS, "a mapping", outputs_fields, N(outputs_fields), 0, 0},
    {"maxAttempts", F_MAX_ATTEMPTS, "a whole number", NULL, 0, 1, 100},
    {"members", F_MEMBERS, "a mapping", members_fields, N(members_fields), 0, 0},
    {"replication", F_REPLICATION, "a mapping", replication_fields, N(replication_fields), 0, 0},
    {"buckets", F_BUCKETS, "a mapping of bucket names to mappings of region to bucket name", NULL,
     0, 0, 0},
    {"logLevel", F_LOG_LEVEL, "debug, info, warn or error", NULL, 0, 0, 0},
    {"kueue", F_KUEUE, "a mapping", kueue_fields, N(kueue_fields), 0, 0},
    {"records", F_RECORDS, "a mapping", records_fields, N(records_fields), 0, 0},
    {"karpenter", F_KARPENTER, "a mapping", karpenter_fields, N(karpenter_fields), 0, 0},
    {"tenancy", F_TENANCY, "a mapping", tenancy_fields, N(tenancy_fields), 0, 0},
    {"budgets", F_BUDGETS, "a list of budgets (team, amount, period)", NULL, 0, 0, 0},
    {"namespaceSelector", F_NS_SELECTOR,
     "a label selector over the members' namespaces, such as \"spillway.io/hub=a\" or "
     "\"team in (cv,nlp)\"",
     NULL, 0, 0, 0},
};

/* ---- YAML helpers ------------------------------------------------------- */

struct cfg_doc {
    yaml_document_t *doc;
    const char *path;
    struct sw_hub_config *out;
    struct sw_error *err;
    size_t line[F__COUNT];                  /* where each field was given; 0 = not given */
    size_t budget_line[SW_HUB_MAX_BUDGETS]; /* where each budget was given */
};

/* "url, passwordFile, passwordEnv": the keys a mapping accepts. */
static void key_list(const struct field *fields, size_t n, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < cap; i++) {
        int w = snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", fields[i].key);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* ---- setters ------------------------------------------------------------ */

static int bad_value(struct cfg_doc *cd, size_t line, const char *name, const char *expect,
                     const char *v)
{
    return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected %s, got \"%.60s\"",
                        cd->path, line, name, expect, v);
}

/* A decimal number as YAML writes one: -?digits[.digits][e[+-]digits]. */
static int parse_decimal(const char *s, double *out)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p != '\0')
        return -1;
    double d = strtod(s, NULL);
    if (!isfinite(d))
        return -1;
    *out = d;
    return 0;
}

/* A number in [f->min, f->max]; whole when `whole`. */
static int number_field(struct cfg_doc *cd, size_t line, const char *name, const struct field *f,
                        const char *v, int whole, double *out)
{
    double d;
    char expect[96];
    if (parse_decimal(v, &d) != 0 || d < f->min || (whole && d != floor(d))) {
        snprintf(expect, sizeof(expect), "%s >= %g", f->expect, f->min);
        return bad_value(cd, line, name, expect, v);
    }
    if (d > f->max) {
        snprintf(expect, sizeof(expect), "%s <= %g", f->expect, f->max);
        return bad_value(cd, line, name, expect, v);
    }
    *out = d;
    return 0;
}

/* Copies a file name, relative ones taken from the config file's folder. */
static int path_field(struct cfg_doc *cd, size_t line, const char *name, const char *v, char *dst,
                      size_t cap)
{
    if (v[0] == '\0')
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": expected a file name, got \"\"", cd->path, line,
                            name);
    const char *slash = strrchr(cd->path, '/');
    int n;
    if (v[0] == '/' || slash == NULL)
        n = snprintf(dst, cap, "%s", v);
    else
        n = snprintf(dst, cap, "%.*s/%s", (int)(slash - cd->path), cd->path, v);
    if (n < 0 || (size_t)n >= cap)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": expected a file name of less than %zu bytes",
                            cd->path, line, name, cap);
    return 0;
}

/* A bounded copy of text that has been checked. */
static int copy_text(struct cfg_doc *cd, size_t line, const char *name, const char *expect,
                     const char *v, char *dst, size_t cap)
{
    if (strlen(v) >= cap)
        return bad_value(cd, line, name, expect, v);
    snprintf(dst, cap, "%s", v);
    return 0;
}

static int valid_env_name(const char *s)
{
    if (!isalpha((unsigned char)s[0]) && s[0] != '_')
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return 0;
    return 1;
}

static int valid_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
            return 0;
    return 1;
}

/* "host:port" or "[v6]:port", port 1-65535. */
static int valid_listen(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s)
        return 0;
    if (s[0] == '[') {
        if (colon[-1] != ']' || colon - s < 3)
            return 0;
    } else if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
        return 0; /* a bare IPv6 address needs brackets */
    }
    for (const char *p = s; p < colon; p++)
        if (isspace((unsigned char)*p) || !isprint((unsigned char)*p))
            return 0;
    const char *port = colon + 1;
    size_t n = strlen(port);
    if (n == 0 || n > 5 || strspn(port, "0123456789") != n)
        return 0;
    long v = strtol(port, NULL, 10);
    return v >= 1 && v <= 65535;
}

/* redis.url: parsed as the store will parse it, but never with a password. */
static int redis_url_field(struct cfg_doc *cd, size_t line, const char *name, const char *v)
{
    struct sw_redis_url u;
    struct sw_error e;
    sw_error_clear(&e);
    int rc = sw_redis_url_parse(v, &u, &e);
    if (rc == SW_ENOMEM)
        return sw_error_set(cd->err, SW_ENOMEM, "%s:%zu: field \"%s\": out of memory", cd->path,
                            line, name);
    if (rc != 0) /* the store's messages never echo the URL */
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": %s", cd->path, line, name,
                            e.msg);
    /* "USER:@host" names an ACL user whose password comes apart (passwordFile
     * or the environment): an empty password is no secret. "NAME@host" is
     * a password, as the store reads it (store/redis.h). */
    int has_password = u.password != NULL && u.password[0] != '\0';
    int has_sentinel_password = u.sentinel_password != NULL;
    cd->out->redis_sentinel = u.sentinel;
    sw_redis_url_free(&u);
    if (has_password)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": a password in the URL is refused; put it in "
                            "redis.passwordFile or in the environment (redis.passwordEnv)",
                            cd->path, line, name);
    if (has_sentinel_password)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": a Sentinel password in the URL is refused; put "
                            "it in redis.sentinelPasswordFile or in the environment "
                            "(redis.sentinelPasswordEnv)",
                            cd->path, line, name);
    if (strlen(v) >= sizeof(cd->out->redis_url))
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": expected a URL of less than %zu bytes", cd->path,
                            line, name, sizeof(cd->out->redis_url));
    snprintf(cd->out->redis_url, sizeof(cd->out->redis_url), "%s", v);
    return 0;
}

static int set_field(struct cfg_doc *cd, const struct field *f, size_t line, const char *name,
                     const char *v)
{
    struct sw_hub_config *c = cd->out;
    double d;
    int rc;
    switch (f->id) {
    case F_REDIS_URL:
        return redis_url_field(cd, line, name, v);
    case F_REDIS_PASSWORD_FILE:
        return path_field(cd, line, name, v, c->redis_password_file,
                          sizeof(c->redis_password_file));
    case F_REDIS_PASSWORD_ENV:
        if (!valid_env_name(v))
            return bad_value(cd, line, name, f->expect, v);
        return copy_text(cd, line, name, f->expect, v, c->redis_password_env,
                         sizeof(c->redis_password_env));
    case F_SENTINEL_PASSWORD_FILE:
        return path_field(cd, line, name, v, c->sentinel_password_file,
                          sizeof(c->sentinel_password_file));
    case F_SENTINEL_PASSWORD_ENV:
        if (!valid_env_name(v))
            return bad_value(cd, line, name, f->expect, v);
        return copy_text(cd, line, name, f->expect, v, c->sentinel_password_env,
                         sizeof(c->sentinel_password_env));
    case F_SECRET_KEY_FILE:
        return path_field(cd, line, name, v, c->secret_key_file, sizeof(c->secret_key_file));
    case F_LISTEN:
        if (!valid_listen(v))
            return bad_value(cd, line, name, f->expect, v);
        return copy_text(cd, line, name, f->expect, v, c->listen, sizeof(c->listen));
    case F_POLICY: {
        struct sw_policy pol;
        struct sw_error e;
        sw_error_clear(&e);
        if (strlen(v) >= sizeof(c->policy))
            return bad_value(cd, line, name, f->expect, v);
        if (sw_policy_parse(v, &pol, &e) != 0)
            return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": %s", cd->path, line,
                                name, e.msg);
        snprintf(c->policy, sizeof(c->policy), "%s", v);
        return 0;
    }
    case F_RECHECK:
        return number_field(cd, line, name, f, v, 0, &c->recheck_s);
    case F_LEADER_ID:
        if (!valid_id(v))
            return bad_value(cd, line, name, f->expect, v);
        return copy_text(cd, line, name, f->expect, v, c->hub_id, sizeof(c->hub_id));
    case F_LEASE_TTL:
        return number_field(cd, line, name, f, v, 0, &c->lease_ttl_s);
    case F_OUTPUT_SYNC:
        return number_field(cd, line, name, f, v, 0, &c->output_sync_s);
    case F_PROBE_INTERVAL:
        return number_field(cd, line, name, f, v, 0, &c->probe_interval_s);
    case F_LOST_AFTER:
        return number_field(cd, line, name, f, v, 0, &c->lost_after_s);
    case F_RTO_TARGET:
        return number_field(cd, line, name, f, v, 0, &c->rto_target_s);
    case F_MEMBER_QPS:
        return number_field(cd, line, name, f, v, 0, &c->member_qps);
    case F_MEMBER_BURST:
        if ((rc = number_field(cd, line, name, f, v, 1, &d)) != 0)
            return rc;
        c->member_burst = (int)d;
        return 0;
    case F_REPL_INTERVAL:
        return number_field(cd, line, name, f, v, 0, &c->repl_interval_s);
    case F_REPL_MODEL:
        return number_field(cd, line, name, f, v, 0, &c->repl_model_s);
    case F_REPL_RPO:
        return number_field(cd, line, name, f, v, 0, &c->repl_rpo_objective_s);
    case F_REPL_WORKERS:
        if ((rc = number_field(cd, line, name, f, v, 1, &d)) != 0)
            return rc;
        c->gate_workers = (int)d;
        return 0;
    case F_MIRROR_ADMISSION:
        return number_field(cd, line, name, f, v, 0, &c->mirror_admission_s);
    case F_SHORTAGE_WITHDRAW:
        return number_field(cd, line, name, f, v, 0, &c->shortage_withdraw_s);
    case F_MAX_ATTEMPTS:
        if ((rc = number_field(cd, line, name, f, v, 1, &d)) != 0)
            return rc;
        c->max_attempts = (int)d;
        return 0;
    case F_DEADLINE_GUARD:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return bad_value(cd, line, name, f->expect, v);
        c->deadline_guard = strcmp(v, "true") == 0;
        return 0;
    case F_MK_DISPATCHER:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return bad_value(cd, line, name, f->expect, v);
        c->mk_dispatcher = strcmp(v, "true") == 0;
        return 0;
    case F_MK_WORKERS:
        if ((rc = number_field(cd, line, name, f, v, 1, &d)) != 0)
            return rc;
        c->mk_workers = (int)d;
        return 0;
    case F_RETIRE_AFTER:
        return number_field(cd, line, name, f, v, 0, &c->retire_after_s);
    case F_DELETED_ORIGIN:
        return number_field(cd, line, name, f, v, 0, &c->deleted_origin_s);
    case F_ARCHIVE_DAYS:
        if ((rc = number_field(cd, line, name, f, v, 1, &d)) != 0)
            return rc;
        c->archive_days = (int)d;
        return 0;
    case F_NS_SELECTOR: {
        struct sw_error e;
        sw_error_clear(&e);
        if (sw_nssel_parse(v, &c->ns_selector, &e) != 0)
            return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected %s: %s",
                                cd->path, line, name, f->expect, e.msg);
        return 0;
    }
    case F_LOG_LEVEL:
        if (strcmp(v, "debug") != 0 && strcmp(v, "info") != 0 && strcmp(v, "warn") != 0 &&
            strcmp(v, "error") != 0)
            return bad_value(cd, line, name, f->expect, v);
        return copy_text(cd, line, name, f->expect, v, c->log_level, sizeof(c->log_level));
    default:
        sw_assert(0); /* mappings are walked, not set */
        return SW_EINVAL;
    }
}

/* ---- the walk ----------------------------------------------------------- */

/* A region's name, as members and stores are registered with: 1-63 of
 * a-z, 0-9 and '-'. */
static bool valid_region(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

/* One bucket name of `buckets`, at `n` (a key or a value): valid, or an
 * error naming the field and why. */
static int bucket_name(struct cfg_doc *cd, yaml_node_t *n, const char *field, const char *v)
{
    const char *why = sw_s3_bucket_problem(v, strlen(v));
    if (why != NULL)
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": %s, got \"%.70s\"", cd->path,
                            sw_yaml_line(n), field, why, v);
    return 0;
}

/*
 * buckets: BUCKET: {REGION: NAME, ...}, ...: what a bucket a Job's
 * annotation names is called in each region's store (bucket names are
 * global in AWS, so "datasets" cannot be one bucket in every region).
 */
static int buckets_field(struct cfg_doc *cd, yaml_node_t *k, yaml_node_t *v)
{
    struct sw_hub_config *c = cd->out;
    if (v == NULL || v->type != YAML_MAPPING_NODE)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"buckets\": expected a mapping of bucket names to "
                            "mappings of region to bucket name, got %s",
                            cd->path, sw_yaml_line(k),
                            sw_yaml_is_null(v) ? "null" : sw_yaml_kind(v));
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *bk = yaml_document_get_node(cd->doc, p->key);
        yaml_node_t *bv = yaml_document_get_node(cd->doc, p->value);
        if (!sw_yaml_is_text(bk))
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: a key of \"buckets\": expected a bucket name, got %s",
                                cd->path, sw_yaml_line(bk), sw_yaml_not_text(bk));
        const char *b = (const char *)bk->data.scalar.value;
        char field[160];
        snprintf(field, sizeof(field), "buckets.%.70s", b);
        int rc = bucket_name(cd, bk, field, b);
        if (rc != 0)
            return rc;
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < p; q++)
            if (sw_yaml_key_eq(yaml_document_get_node(cd->doc, q->key), b))
                return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": given twice",
                                    cd->path, sw_yaml_line(bk), field);
        if (bv == NULL || bv->type != YAML_MAPPING_NODE)
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: field \"%s\": expected a mapping of region to bucket "
                                "name, got %s",
                                cd->path, sw_yaml_line(bk), field,
                                sw_yaml_is_null(bv) ? "null" : sw_yaml_kind(bv));
        for (yaml_node_pair_t *r = bv->data.mapping.pairs.start; r < bv->data.mapping.pairs.top;
             r++) {
            yaml_node_t *rk = yaml_document_get_node(cd->doc, r->key);
            yaml_node_t *rv = yaml_document_get_node(cd->doc, r->value);
            if (!sw_yaml_is_text(rk) || !valid_region((const char *)rk->data.scalar.value))
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: a key of \"%s\": expected a region (1-63 of a-z, "
                                    "0-9 and '-'), got %s%.70s%s",
                                    cd->path, sw_yaml_line(rk), field,
                                    sw_yaml_is_text(rk) ? "\"" : "",
                                    sw_yaml_is_text(rk) ? (const char *)rk->data.scalar.value
                                                        : sw_yaml_not_text(rk),
                                    sw_yaml_is_text(rk) ? "\"" : "");
            const char *region = (const char *)rk->data.scalar.value;
            char rfield[240];
            snprintf(rfield, sizeof(rfield), "%s.%s", field, region);
            for (yaml_node_pair_t *q = bv->data.mapping.pairs.start; q < r; q++)
                if (sw_yaml_key_eq(yaml_document_get_node(cd->doc, q->key), region))
                    return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": given twice",
                                        cd->path, sw_yaml_line(rk), rfield);
            if (!sw_yaml_is_text(rv))
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s\": expected a bucket name, got %s",
                                    cd->path, sw_yaml_line(rk), rfield, sw_yaml_not_text(rv));
            const char *name = (const char *)rv->data.scalar.value;
            if ((rc = bucket_name(cd, rk, rfield, name)) != 0)
                return rc;
            if (c->nbucket_maps == SW_HUB_MAX_BUCKET_MAPS)
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s\": more than %d bucket names in all",
                                    cd->path, sw_yaml_line(rk), rfield, SW_HUB_MAX_BUCKET_MAPS);
            struct sw_bucket_map *m = &c->bucket_maps[c->nbucket_maps++];
            snprintf(m->bucket, sizeof(m->bucket), "%s", b);
            snprintf(m->region, sizeof(m->region), "%s", region);
            snprintf(m->name, sizeof(m->name), "%s", name);
        }
    }
    return 0;
}

const char *sw_hub_config_bucket(const struct sw_hub_config *c, const char *bucket,
                                 const char *region, const char *home)
{
    for (size_t i = 0; c != NULL && region != NULL && i < c->nbucket_maps; i++)
        if (strcmp(c->bucket_maps[i].bucket, bucket) == 0 &&
            strcmp(c->bucket_maps[i].region, region) == 0)
            return c->bucket_maps[i].name;
    return region != NULL && home != NULL && strcmp(region, home) == 0 ? bucket : NULL;
}

/* ---- tenancy.grants ------------------------------------------------------- */

/* A sequence of text items at `v` for grant field `field`: each handed to
 * `item` with its index; a scalar alone is refused (a list is expected). */
typedef int (*seq_item_fn)(struct cfg_doc *cd, yaml_node_t *n, const char *field, size_t i,
                           const char *v, struct sw_grant *g);

static int grant_seq(struct cfg_doc *cd, yaml_node_t *k, yaml_node_t *v, const char *field,
                     const char *expect, seq_item_fn item, struct sw_grant *g)
{
    if (v == NULL || v->type != YAML_SEQUENCE_NODE)
        return sw_error_set(
            cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected a list of %s, got %s", cd->path,
            sw_yaml_line(k), field, expect, sw_yaml_is_null(v) ? "null" : sw_yaml_kind(v));
    size_t i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, i++) {
        yaml_node_t *n = yaml_document_get_node(cd->doc, *it);
        char f[160];
        snprintf(f, sizeof(f), "%s[%zu]", field, i);
        if (!sw_yaml_is_text(n))
            return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected %s, got %s",
                                cd->path, sw_yaml_line(n), f, expect, sw_yaml_not_text(n));
        int rc = item(cd, n, f, i, (const char *)n->data.scalar.value, g);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int team_item(struct cfg_doc *cd, yaml_node_t *n, const char *field, size_t i, const char *v,
                     struct sw_grant *g)
{
    (void)i;
    if (!sw_dns1123_label(v))
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": expected a team name (a DNS-1123 label: 1-63 "
                            "of a-z, 0-9 and '-'), got \"%.70s\"",
                            cd->path, sw_yaml_line(n), field, v);
    if (g->nteams == SW_GRANT_MAX_TEAMS)
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": more than %d teams",
                            cd->path, sw_yaml_line(n), field, SW_GRANT_MAX_TEAMS);
    snprintf(g->teams[g->nteams++], sizeof(g->teams[0]), "%s", v);
    return 0;
}

static int prio_item(struct cfg_doc *cd, yaml_node_t *n, const char *field, size_t i, const char *v,
                     struct sw_grant *g)
{
    (void)i;
    enum sw_priority_class p;
    if (sw_priority_parse(v, &p) != 0)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": expected best-effort, development, training "
                            "or production, got \"%.70s\"",
                            cd->path, sw_yaml_line(n), field, v);
    g->prio_mask |= 1u << p;
    return 0;
}

static int prefix_item(struct cfg_doc *cd, yaml_node_t *n, const char *field, bool write,
                       const char *v, struct sw_grant *g)
{
    struct sw_s3_uri *list = write ? g->write : g->read;
    size_t *cnt = write ? &g->nwrite : &g->nread;
    if (*cnt == SW_GRANT_MAX_PREFIXES)
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": more than %d prefixes",
                            cd->path, sw_yaml_line(n), field, SW_GRANT_MAX_PREFIXES);
    const char *why = NULL;
    if (sw_grant_prefix_parse(v, &list[*cnt], &why) != 0)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"%s\": expected an object-store prefix such as "
                            "\"s3://datasets/team-a/\" (%s), got \"%.100s\"",
                            cd->path, sw_yaml_line(n), field, why, v);
    (*cnt)++;
    return 0;
}

static int read_item(struct cfg_doc *cd, yaml_node_t *n, const char *field, size_t i, const char *v,
                     struct sw_grant *g)
{
    (void)i;
    return prefix_item(cd, n, field, false, v, g);
}

static int write_item(struct cfg_doc *cd, yaml_node_t *n, const char *field, size_t i,
                      const char *v, struct sw_grant *g)
{
    (void)i;
    return prefix_item(cd, n, field, true, v, g);
}

static const char *const grant_keys[] = {
    "cluster", "namespace", "teams", "priorities", "read", "write", "useExistingNamespace"};

static int one_grant(struct cfg_doc *cd, yaml_node_t *gn, const char *gf, struct sw_grant *g)
{
    if (gn == NULL || gn->type != YAML_MAPPING_NODE)
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected a mapping, got %s",
                            cd->path, sw_yaml_line(gn), gf,
                            sw_yaml_is_null(gn) ? "null" : sw_yaml_kind(gn));
    for (yaml_node_pair_t *p = gn->data.mapping.pairs.start; p < gn->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(cd->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(cd->doc, p->value);
        if (!sw_yaml_is_text(k))
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: a key of \"%s\": expected a field name, got %s", cd->path,
                                sw_yaml_line(k), gf, sw_yaml_not_text(k));
        const char *key = (const char *)k->data.scalar.value;
        size_t which = 0;
        while (which < N(grant_keys) && strcmp(grant_keys[which], key) != 0)
            which++;
        if (which == N(grant_keys))
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: field \"%s.%.60s\": unknown (expected cluster, namespace, "
                                "teams, priorities, read, write, useExistingNamespace)",
                                cd->path, sw_yaml_line(k), gf, key);
        for (yaml_node_pair_t *q = gn->data.mapping.pairs.start; q < p; q++)
            if (sw_yaml_key_eq(yaml_document_get_node(cd->doc, q->key), key))
                return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s.%s\": given twice",
                                    cd->path, sw_yaml_line(k), gf, key);
        char f[160];
        snprintf(f, sizeof(f), "%s.%s", gf, key);
        int rc = 0;
        switch (which) {
        case 0:
        case 1: {
            char *dst = which == 0 ? g->cluster : g->ns;
            if (!sw_yaml_is_text(v) || !sw_dns1123_label((const char *)v->data.scalar.value))
                return sw_error_set(
                    cd->err, SW_EINVAL,
                    "%s:%zu: field \"%s\": expected a %s name (a DNS-1123 label), "
                    "got %s%.70s%s",
                    cd->path, sw_yaml_line(k), f, which == 0 ? "member cluster" : "namespace",
                    sw_yaml_is_text(v) ? "\"" : "",
                    sw_yaml_is_text(v) ? (const char *)v->data.scalar.value : sw_yaml_not_text(v),
                    sw_yaml_is_text(v) ? "\"" : "");
            snprintf(dst, 64, "%s", (const char *)v->data.scalar.value);
            break;
        }
        case 2:
            rc = grant_seq(cd, k, v, f, "team names", team_item, g);
            if (rc == 0 && g->nteams == 0)
                rc = sw_error_set(cd->err, SW_EINVAL,
                                  "%s:%zu: field \"%s\": expected at least one team (leave the "
                                  "field out for the namespace's own name)",
                                  cd->path, sw_yaml_line(k), f);
            break;
        case 3:
            rc = grant_seq(cd, k, v, f, "priorities", prio_item, g);
            if (rc == 0 && g->prio_mask == 0)
                rc = sw_error_set(cd->err, SW_EINVAL,
                                  "%s:%zu: field \"%s\": expected at least one priority (leave "
                                  "the field out for best-effort, development and training)",
                                  cd->path, sw_yaml_line(k), f);
            break;
        case 4:
            rc = grant_seq(cd, k, v, f, "object-store prefixes", read_item, g);
            break;
        case 5:
            rc = grant_seq(cd, k, v, f, "object-store prefixes", write_item, g);
            break;
        default: {
            const char *b = sw_yaml_is_text(v) ? (const char *)v->data.scalar.value : NULL;
            if (b != NULL && strcmp(b, "true") == 0)
                g->existing_ns = true;
            else if (b != NULL && strcmp(b, "false") == 0)
                g->existing_ns = false;
            else
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s\": expected true or false, got %s%.20s%s",
                                    cd->path, sw_yaml_line(k), f, b ? "\"" : "",
                                    b ? b : sw_yaml_not_text(v), b ? "\"" : "");
        }
        }
        if (rc != 0)
            return rc;
    }
    if (g->cluster[0] == '\0' || g->ns[0] == '\0')
        return sw_error_set(
            cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected both cluster and namespace, got %s",
            cd->path, sw_yaml_line(gn), gf, g->cluster[0] ? "no namespace" : "no cluster");
    return 0;
}

/* tenancy.grants: a list of grants, one per origin cluster and namespace. */
static int grants_field(struct cfg_doc *cd, yaml_node_t *k, yaml_node_t *v)
{
    struct sw_tenancy *t = &cd->out->tenancy;
    if (v == NULL || v->type != YAML_SEQUENCE_NODE)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"tenancy.grants\": expected a list of grants, got %s",
                            cd->path, sw_yaml_line(k),
                            sw_yaml_is_null(v) ? "null" : sw_yaml_kind(v));
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n > SW_TENANCY_MAX_GRANTS)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"tenancy.grants\": %zu grants, expected at most %d",
                            cd->path, sw_yaml_line(k), n, SW_TENANCY_MAX_GRANTS);
    sw_tenancy_free(t);
    if (n == 0)
        return 0;
    t->grants = sw_calloc(n, sizeof(*t->grants));
    if (t->grants == NULL)
        return sw_error_set(cd->err, SW_ENOMEM, "%s: out of memory", cd->path);
    size_t i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, i++) {
        yaml_node_t *gn = yaml_document_get_node(cd->doc, *it);
        char gf[64];
        snprintf(gf, sizeof(gf), "tenancy.grants[%zu]", i);
        int rc = one_grant(cd, gn, gf, &t->grants[i]);
        if (rc != 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->grants[j].cluster, t->grants[i].cluster) == 0 &&
                strcmp(t->grants[j].ns, t->grants[i].ns) == 0)
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s\": a second grant for namespace %s of "
                                    "cluster %s (first: tenancy.grants[%zu])",
                                    cd->path, sw_yaml_line(gn), gf, t->grants[i].ns,
                                    t->grants[i].cluster, j);
        t->n = i + 1;
    }
    return 0;
}

/* ---- budgets -------------------------------------------------------------- */

static int one_budget(struct cfg_doc *cd, yaml_node_t *bn, const char *bf, struct sw_team_budget *b)
{
    if (bn == NULL || bn->type != YAML_MAPPING_NODE)
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected a mapping, got %s",
                            cd->path, sw_yaml_line(bn), bf,
                            sw_yaml_is_null(bn) ? "null" : sw_yaml_kind(bn));
    static const char *const keys[] = {"team", "amount", "period"};
    bool have[3] = {false, false, false};
    b->period = SW_PERIOD_MONTH;
    for (yaml_node_pair_t *p = bn->data.mapping.pairs.start; p < bn->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(cd->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(cd->doc, p->value);
        if (!sw_yaml_is_text(k))
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: a key of \"%s\": expected a field name, got %s", cd->path,
                                sw_yaml_line(k), bf, sw_yaml_not_text(k));
        const char *key = (const char *)k->data.scalar.value;
        size_t which = 0;
        while (which < N(keys) && strcmp(keys[which], key) != 0)
            which++;
        if (which == N(keys))
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: field \"%s.%.60s\": unknown (expected team, amount, "
                                "period)",
                                cd->path, sw_yaml_line(k), bf, key);
        if (have[which])
            return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s.%s\": given twice",
                                cd->path, sw_yaml_line(k), bf, key);
        have[which] = true;
        const char *t = sw_yaml_is_text(v) ? (const char *)v->data.scalar.value : NULL;
        double d;
        switch (which) {
        case 0:
            if (t == NULL || !sw_dns1123_label(t))
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s.team\": expected a team name (a DNS-1123 "
                                    "label: 1-63 of a-z, 0-9 and '-'), got %s%.70s%s",
                                    cd->path, sw_yaml_line(k), bf, t ? "\"" : "",
                                    t ? t : sw_yaml_not_text(v), t ? "\"" : "");
            snprintf(b->team, sizeof(b->team), "%s", t);
            break;
        case 1:
            if (t == NULL || parse_decimal(t, &d) != 0 || d < 0 || d > SW_BUDGET_MAX_AMOUNT)
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s.amount\": expected US dollars per period, "
                                    "a number from 0 to %g, got %s%.40s%s",
                                    cd->path, sw_yaml_line(k), bf, SW_BUDGET_MAX_AMOUNT,
                                    t ? "\"" : "", t ? t : sw_yaml_not_text(v), t ? "\"" : "");
            b->amount = d;
            break;
        default:
            if (t == NULL || sw_budget_period_parse(t, &b->period) != 0)
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s.period\": expected month, week or day, "
                                    "got %s%.40s%s",
                                    cd->path, sw_yaml_line(k), bf, t ? "\"" : "",
                                    t ? t : sw_yaml_not_text(v), t ? "\"" : "");
        }
    }
    if (!have[0] || !have[1])
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected %s, got none",
                            cd->path, sw_yaml_line(bn), bf, !have[0] ? "a team" : "an amount");
    return 0;
}

/* budgets: a list of team budgets, one per team. */
static int budgets_field(struct cfg_doc *cd, yaml_node_t *k, yaml_node_t *v)
{
    struct sw_hub_config *c = cd->out;
    if (v == NULL || v->type != YAML_SEQUENCE_NODE)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"budgets\": expected a list of budgets (team, amount, "
                            "period), got %s",
                            cd->path, sw_yaml_line(k),
                            sw_yaml_is_null(v) ? "null" : sw_yaml_kind(v));
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n > SW_HUB_MAX_BUDGETS)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: field \"budgets\": %zu budgets, expected at most %d", cd->path,
                            sw_yaml_line(k), n, SW_HUB_MAX_BUDGETS);
    c->nbudgets = 0;
    size_t i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, i++) {
        yaml_node_t *bn = yaml_document_get_node(cd->doc, *it);
        char bf[32];
        snprintf(bf, sizeof(bf), "budgets[%zu]", i);
        struct sw_team_budget *b = &c->budgets[i];
        memset(b, 0, sizeof(*b));
        int rc = one_budget(cd, bn, bf, b);
        if (rc != 0)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->budgets[j].team, b->team) == 0)
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: field \"%s.team\": a second budget for team %s "
                                    "(first: budgets[%zu])",
                                    cd->path, sw_yaml_line(bn), bf, b->team, j);
        cd->budget_line[i] = sw_yaml_line(bn);
        c->nbudgets = i + 1;
    }
    return 0;
}

/* Every budget's team is one a grant names (tenancy.grants[].teams): a
 * budget no Job can count against would limit nothing. */
static int budgets_granted(struct cfg_doc *cd)
{
    const struct sw_hub_config *c = cd->out;
    const struct sw_tenancy *t = &c->tenancy;
    for (size_t i = 0; i < c->nbudgets; i++) {
        bool named = false;
        for (size_t g = 0; g < t->n && !named; g++)
            for (size_t k = 0; k < t->grants[g].nteams && !named; k++)
                named = strcmp(t->grants[g].teams[k], c->budgets[i].team) == 0;
        if (!named)
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: field \"budgets[%zu].team\": team %s is named by no "
                                "grant (tenancy.grants[].teams), so its budget would limit "
                                "nothing; expected a team a grant names",
                                cd->path, cd->budget_line[i], i, c->budgets[i].team);
    }
    return 0;
}

void sw_hub_config_free(struct sw_hub_config *c)
{
    if (c != NULL)
        sw_tenancy_free(&c->tenancy);
}

/*
 * Walks mapping `m` whose fields are `fields`; `in` is the dotted prefix of
 * its keys ("" at the top, "redis." below). Keys are checked before any
 * value, so the first error of a mapping is about its keys.
 */
static int walk(struct cfg_doc *cd, yaml_node_t *m, const char *in, const struct field *fields,
                size_t nfields)
{
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(cd->doc, p->key);
        if (!sw_yaml_is_text(k)) {
            if (in[0] == '\0')
                return sw_error_set(cd->err, SW_EINVAL,
                                    "%s:%zu: a key of the top-level mapping: expected a field "
                                    "name, got %s",
                                    cd->path, sw_yaml_line(k), sw_yaml_not_text(k));
            return sw_error_set(
                cd->err, SW_EINVAL, "%s:%zu: a key of \"%.*s\": expected a field name, got %s",
                cd->path, sw_yaml_line(k), (int)strlen(in) - 1, in, sw_yaml_not_text(k));
        }
        size_t i = 0;
        while (i < nfields && !sw_yaml_key_eq(k, fields[i].key))
            i++;
        if (i == nfields) {
            char keys[256];
            key_list(fields, nfields, keys, sizeof(keys));
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: field \"%s%.60s\": unknown (expected %s)", cd->path,
                                sw_yaml_line(k), in, (const char *)k->data.scalar.value, keys);
        }
        for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *prev = yaml_document_get_node(cd->doc, q->key);
            if (sw_yaml_key_eq(prev, fields[i].key))
                return sw_error_set(
                    cd->err, SW_EINVAL, "%s:%zu: field \"%s%s\": given twice (first on line %zu)",
                    cd->path, sw_yaml_line(k), in, fields[i].key, sw_yaml_line(prev));
        }
    }
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(cd->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(cd->doc, p->value);
        size_t i = 0;
        while (i < nfields && !sw_yaml_key_eq(k, fields[i].key))
            i++;
        sw_assert(i < nfields); /* the loop above let only known keys through */
        const struct field *f = &fields[i];
        char name[64];
        snprintf(name, sizeof(name), "%s%s", in, f->key);
        cd->line[f->id] = sw_yaml_line(k);
        int rc;
        if (f->id == F_BUCKETS) {
            rc = buckets_field(cd, k, v);
        } else if (f->id == F_GRANTS) {
            rc = grants_field(cd, k, v);
        } else if (f->id == F_BUDGETS) {
            rc = budgets_field(cd, k, v);
        } else if (f->sub != NULL) {
            if (v == NULL || v->type != YAML_MAPPING_NODE)
                return sw_error_set(
                    cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected a mapping, got %s",
                    cd->path, sw_yaml_line(k), name, sw_yaml_is_null(v) ? "null" : sw_yaml_kind(v));
            char sub_in[72];
            snprintf(sub_in, sizeof(sub_in), "%s.", name);
            rc = walk(cd, v, sub_in, f->sub, f->nsub);
        } else if (!sw_yaml_is_text(v)) {
            char expect[160];
            if (f->max > 0) /* a number */
                snprintf(expect, sizeof(expect), "%s >= %g", f->expect, f->min);
            else
                snprintf(expect, sizeof(expect), "%s", f->expect);
            rc = sw_error_set(cd->err, SW_EINVAL, "%s:%zu: field \"%s\": expected %s, got %s",
                              cd->path, sw_yaml_line(k), name, expect, sw_yaml_not_text(v));
        } else {
            rc = set_field(cd, f, sw_yaml_line(k), name, (const char *)v->data.scalar.value);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int parse_root(struct cfg_doc *cd, yaml_node_t *root)
{
    if (root == NULL)
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s: expected a mapping at the top, got an empty file", cd->path);
    if (root->type != YAML_MAPPING_NODE)
        return sw_error_set(cd->err, SW_EINVAL, "%s:%zu: expected a mapping at the top, got %s",
                            cd->path, sw_yaml_line(root),
                            sw_yaml_is_null(root) ? "null" : sw_yaml_kind(root));
    int rc = walk(cd, root, "", top_fields, N(top_fields));
    if (rc != 0)
        return rc;
    if ((rc = budgets_granted(cd)) != 0)
        return rc;
    if (cd->line[F_REDIS_PASSWORD_FILE] != 0 && cd->line[F_REDIS_PASSWORD_ENV] != 0) {
        size_t l = cd->line[F_REDIS_PASSWORD_FILE] > cd->line[F_REDIS_PASSWORD_ENV]
                       ? cd->line[F_REDIS_PASSWORD_FILE]
                       : cd->line[F_REDIS_PASSWORD_ENV];
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: fields \"redis.passwordFile\" and \"redis.passwordEnv\": "
                            "expected one of them, not both",
                            cd->path, l);
    }
    if (cd->line[F_SENTINEL_PASSWORD_FILE] != 0 && cd->line[F_SENTINEL_PASSWORD_ENV] != 0) {
        size_t l = cd->line[F_SENTINEL_PASSWORD_FILE] > cd->line[F_SENTINEL_PASSWORD_ENV]
                       ? cd->line[F_SENTINEL_PASSWORD_FILE]
                       : cd->line[F_SENTINEL_PASSWORD_ENV];
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s:%zu: fields \"redis.sentinelPasswordFile\" and "
                            "\"redis.sentinelPasswordEnv\": expected one of them, not both",
                            cd->path, l);
    }
    static const struct {
        enum field_id id;
        const char *name;
    } sentinel_only[] = {{F_SENTINEL_PASSWORD_FILE, "redis.sentinelPasswordFile"},
                         {F_SENTINEL_PASSWORD_ENV, "redis.sentinelPasswordEnv"}};
    for (size_t i = 0; i < N(sentinel_only); i++)
        if (cd->line[sentinel_only[i].id] != 0 && cd->out->redis_url[0] != '\0' &&
            !cd->out->redis_sentinel)
            return sw_error_set(cd->err, SW_EINVAL,
                                "%s:%zu: field \"%s\": given, but redis.url is not a Sentinel URL "
                                "(expected " SW_REDIS_SENTINEL_SCHEME "HOST:PORT,.../MASTER)",
                                cd->path, cd->line[sentinel_only[i].id], sentinel_only[i].name);
    if (cd->out->redis_url[0] == '\0')
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s: field \"redis.url\": required, not given (e.g. "
                            "\"redis://127.0.0.1:6379/0\")",
                            cd->path);
    if (cd->out->secret_key_file[0] == '\0')
        return sw_error_set(cd->err, SW_EINVAL,
                            "%s: field \"secretKeyFile\": required, not given (the file of the "
                            "key that seals cluster credentials)",
                            cd->path);
    return 0;
}

int sw_hub_config_parse(const char *text, size_t len, const char *path, struct sw_hub_config *out,
                        struct sw_error *err)
{
    sw_hub_config_default(out);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = sw_error_set(err, SW_EPARSE, "%s:%zu: %s", path, parser.problem_mark.line + 1,
                              parser.problem ? parser.problem : "malformed YAML");
        yaml_parser_delete(&parser);
        return rc;
    }
    struct cfg_doc cd = {.doc = &doc, .path = path, .out = out, .err = err};
    int rc = parse_root(&cd, yaml_document_get_root_node(&doc));
    yaml_document_delete(&doc);
    if (rc == 0) {
        /* libyaml loads one document at a time; one more would be ignored. */
        if (!yaml_parser_load(&parser, &doc)) {
            rc = sw_error_set(err, SW_EPARSE, "%s:%zu: %s", path, parser.problem_mark.line + 1,
                              parser.problem ? parser.problem : "malformed YAML");
        } else {
            if (yaml_document_get_root_node(&doc) != NULL)
                rc = sw_error_set(err, SW_EINVAL,
                                  "%s:%zu: a second YAML document; a config file holds one", path,
                                  doc.start_mark.line + 1);
            yaml_document_delete(&doc);
        }
    }
    yaml_parser_delete(&parser);
    if (rc != 0)
        sw_hub_config_free(out);
    return rc;
}

/* ---- files -------------------------------------------------------------- */

static int open_error(const char *path, const char *what, int e, struct sw_error *err)
{
    int code = e == ENOENT || e == ENOTDIR ? SW_ENOENT
               : e == EACCES || e == EPERM ? SW_EFORBIDDEN
                                           : SW_EIO;
    if (code == SW_ENOENT)
        return sw_error_set(err, code, "%s: %s not found", path, what);
    return sw_error_set(err, code, "%s: cannot read the %s: %s", path, what, strerror(e));
}

/*
 * Reads a whole regular file of at most `max` bytes into a new buffer
 * (NUL-terminated, sw_free). *mode gets its permission bits.
 */
static int read_file(const char *path, const char *what, size_t max, char **out, size_t *len,
                     mode_t *mode, struct sw_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return open_error(path, what, errno, err);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = open_error(path, what, errno, err);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sw_error_set(err, SW_EIO, "%s: the %s is not a regular file", path, what);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return sw_error_set(err, SW_ETOOBIG, "%s: the %s is larger than %zu bytes", path, what,
                            max);
    }
    /* One byte more than the limit, to see a file that grew since fstat. */
    char *buf = sw_malloc(max + 2);
    if (buf == NULL) {
        close(fd);
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory reading the %s", path, what);
    }
    size_t n = 0;
    while (n < max + 1) {
        ssize_t r = read(fd, buf + n, max + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int rc = open_error(path, what, errno, err);
            close(fd);
            sw_free(buf);
            return rc;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max) {
        sw_free(buf);
        return sw_error_set(err, SW_ETOOBIG, "%s: the %s is larger than %zu bytes", path, what,
                            max);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    *mode = st.st_mode & 07777;
    return 0;
}

int sw_hub_config_load(const char *path, struct sw_hub_config *out, struct sw_error *err)
{
    char *text = NULL;
    size_t len = 0;
    mode_t mode;
    int rc = read_file(path, "config file", SW_HUB_CONFIG_MAX, &text, &len, &mode, err);
    if (rc != 0)
        return rc;
    rc = sw_hub_config_parse(text, len, path, out, err);
    sw_free(text);
    return rc;
}

/* A secret from a file (trailing CR/LF stripped) or else an environment variable. */
static int secret_lookup(const char *file, const char *env, const char *what, char *buf, size_t len,
                         struct sw_error *err)
{
    sw_assert(len > 0);
    buf[0] = '\0';
    if (file[0] != '\0') {
        const char *path = file;
        char *text = NULL;
        size_t n = 0;
        mode_t mode;
        char label[64];
        snprintf(label, sizeof(label), "%s file", what);
        /* Read a little past `len` so that a too long password is seen
         * whatever trails it. */
        int rc = read_file(path, label, len + 64, &text, &n, &mode, err);
        if (rc == SW_ETOOBIG)
            return sw_error_set(err, SW_ETOOBIG, "%s: the %s file holds more than %zu bytes", path,
                                what, len - 1);
        if (rc != 0)
            return rc;
        size_t read_n = n;
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
            n--;
        if (n == 0)
            rc = sw_error_set(err, SW_EINVAL, "%s: the %s file is empty", path, what);
        else if (memchr(text, '\0', n) != NULL)
            rc = sw_error_set(err, SW_EINVAL,
                              "%s: the %s file holds a NUL byte; expected the password as text",
                              path, what);
        else if (n >= len)
            rc = sw_error_set(err, SW_ETOOBIG, "%s: the %s file holds more than %zu bytes", path,
                              what, len - 1);
        if (rc == 0) {
            memcpy(buf, text, n);
            buf[n] = '\0';
            if ((mode & 077) != 0 && strcmp(what, "Redis password") == 0)
                SW_LOG(SW_LOG_WARN, "the Redis password file is readable by group or others",
                       "file=%s mode=%04o", sw_log_q(path), (unsigned)mode);
            else if ((mode & 077) != 0)
                SW_LOG(SW_LOG_WARN, "the Sentinel password file is readable by group or others",
                       "file=%s mode=%04o", sw_log_q(path), (unsigned)mode);
        }
        explicit_bzero(text, read_n);
        sw_free(text);
        return rc;
    }
    if (env[0] == '\0')
        return 0;
    const char *v = getenv(env);
    if (v == NULL || v[0] == '\0')
        return 0;
    size_t n = strlen(v);
    if (n >= len)
        return sw_error_set(err, SW_ETOOBIG,
                            "environment variable %s: the %s is longer than %zu bytes", env, what,
                            len - 1);
    memcpy(buf, v, n + 1);
    return 0;
}

int sw_hub_config_redis_password(const struct sw_hub_config *c, char *buf, size_t len,
                                 struct sw_error *err)
{
    return secret_lookup(c->redis_password_file, c->redis_password_env, "Redis password", buf, len,
                         err);
}

int sw_hub_config_sentinel_password(const struct sw_hub_config *c, char *buf, size_t len,
                                    struct sw_error *err)
{
    if (!c->redis_sentinel) {
        sw_assert(len > 0);
        buf[0] = '\0';
        return 0;
    }
    return secret_lookup(c->sentinel_password_file, c->sentinel_password_env, "Sentinel password",
                         buf, len, err);
}
