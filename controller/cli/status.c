/*
 * status.c - what the hub is doing, read from its records in Redis:
 *
 *   spillctl status [-o wide|json|yaml]          every managed Job
 *   spillctl explain CLUSTER/NAMESPACE/JOB       the stored decision, every option costed
 *   spillctl hub status [-o wide|json|yaml]      leader, epoch, members' health
 *
 * Read-only: these commands never write to Redis.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common/json.h"
#include "controller/cli/commands.h"
#include "controller/cli/globals.h"
#include "controller/cli/output.h"
#include "controller/hub/jobrec.h"
#include "store/redis.h"

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void age(int64_t from_ms, char *buf, size_t len)
{
    int64_t s = (now_ms() - from_ms) / 1000;
    if (from_ms <= 0 || s < 0)
        snprintf(buf, len, "-");
    else if (s < 120)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else if (s < 172800)
        snprintf(buf, len, "%lldh", (long long)(s / 3600));
    else
        snprintf(buf, len, "%lldd", (long long)(s / 86400));
}

/* ---- status --------------------------------------------------------------- */

static const struct sw_cli_column status_columns[] = {
    {"JOB", "job", 0},
    {"FORM", "form", 1},
    {"STATE", "state", 0},
    {"WHERE", "where", 0},
    {"CAPACITY", "capacity", 0},
    {"ATTEMPT", "attempt", 1},
    {"AGE", "age", 0},
    {"COST", "cost", 0},
    {"EXPECTED", "expected", 1},
    {"MIRROR", "mirror", 1},
    {"PREEMPTIONS", "preemptions", 1},
    {"DETAIL", "detail", 0},
};

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void status_usage(FILE *out)
{
    fprintf(out, "usage: spillctl status [-o table|wide|json|yaml]\n\n"
                 "The Jobs the hub manages: where each was submitted and runs, its state in\n"
                 "the burst lifecycle, its age, what it has cost so far, and why (the\n"
                 "decision, or the reason it is blocked or failed).\n\n"
                 "Global options (--redis, -o, ...): see spillctl --help.\n");
}

int sw_cli_status(const struct sw_cli_globals *g, int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        status_usage(stdout);
        return SW_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "spillctl status: unexpected argument \"%s\"\n\n", argv[1]);
        status_usage(stderr);
        return SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    int rc = sw_cli_redis_open(g, "status", &c);
    if (rc != 0)
        return rc;
    struct sw_error err = {0};
    redisReply *keys = NULL;
    if (sw_redis_sync_command(c, &keys, &err, "SMEMBERS %s", SW_KEY_JOBS) != 0 ||
        keys->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "spillctl status: %s\n",
                err.msg[0] ? err.msg : "redis: spillway:jobs is not a set");
        if (keys)
            freeReplyObject(keys);
        sw_redis_sync_free(c);
        return SW_EXIT_FAIL;
    }
    size_t n = keys->elements;
    char **names = calloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = keys->element[i]->str;
    qsort(names, n, sizeof(*names), cmp_keys);
    cJSON *items = cJSON_CreateArray(), *rows = cJSON_CreateArray();
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *v = NULL;
        if (sw_redis_sync_command(c, &v, &err, "GET %s%s", SW_KEY_JOB, names[i]) != 0) {
            fprintf(stderr, "spillctl status: %s\n", err.msg);
            failed = 1;
            break;
        }
        cJSON *o = NULL;
        sw_error_clear(&err);
        struct sw_job_rec r;
        if (v->type != REDIS_REPLY_STRING ||
            sw_json_parse(v->str, v->len, names[i], &o, &err) != 0 ||
            sw_job_rec_from_json(o, &r, &err) != 0) {
            fprintf(stderr, "spillctl status: skipping record %s: %s\n", names[i],
                    err.msg[0] ? err.msg : "not a string");
            cJSON_Delete(o);
            freeReplyObject(v);
            continue;
        }
        freeReplyObject(v);
        double cost = sw_job_rec_cost(&r, now_ms());
        cJSON_AddNumberToObject(o, "costSoFar", cost);
        cJSON_AddItemToArray(items, o);
        cJSON *row = cJSON_CreateObject();
        char buf[64];
        cJSON_AddStringToObject(row, "job", r.key);
        cJSON_AddStringToObject(row, "form",
                                r.form == SW_FORM_DELEGATED ? "delegated" : "annotation");
        cJSON_AddStringToObject(row, "state", sw_job_state_name(r.state));
        cJSON_AddStringToObject(row, "where", r.target_cluster[0] ? r.target_cluster : "-");
        cJSON_AddStringToObject(row, "capacity", r.capacity[0] ? r.capacity : "-");
        snprintf(buf, sizeof(buf), "%d", r.attempt);
        cJSON_AddStringToObject(row, "attempt", buf);
        age(r.observed_ms, buf, sizeof(buf));
        cJSON_AddStringToObject(row, "age", buf);
        snprintf(buf, sizeof(buf), "$%.2f", cost);
        cJSON_AddStringToObject(row, "cost", buf);
        snprintf(buf, sizeof(buf), "$%.2f", r.expected_cost);
        cJSON_AddStringToObject(row, "expected", buf);
        cJSON_AddStringToObject(row, "mirror", r.mirror[0] ? r.mirror : "-");
        snprintf(buf, sizeof(buf), "%d", r.preemptions);
        cJSON_AddStringToObject(row, "preemptions", buf);
        cJSON_AddStringToObject(row, "detail", r.reason[0] ? r.reason : r.summary);
        cJSON_AddItemToArray(rows, row);
    }
    rc = sw_cli_print(stdout, g->output, items, rows, status_columns,
                      sizeof(status_columns) / sizeof(status_columns[0]));
    if (failed)
        rc = SW_EIO;
    cJSON_Delete(items);
    cJSON_Delete(rows);
    free(names);
    freeReplyObject(keys);
    sw_redis_sync_free(c);
    return rc == 0 ? SW_EXIT_OK : SW_EXIT_FAIL;
}

/* ---- explain --------------------------------------------------------------- */

static void explain_usage(FILE *out)
{
    fprintf(out, "usage: spillctl explain CLUSTER/NAMESPACE/JOB [-o json|yaml]\n\n"
                 "The hub's stored decision for one Job: the verdict and why, then every\n"
                 "pool it weighed with its expected cost (run, provisioning, interruptions,\n"
                 "egress), wait, completion and, when excluded, the reason.\n\n"
                 "Global options (--redis, -o, ...): see spillctl --help.\n");
}

static double num(const cJSON *o, const char *path)
{
    const cJSON *v = sw_json_path(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *text(const cJSON *o, const char *path)
{
    const cJSON *v = sw_json_path(o, path);
    return cJSON_IsString(v) ? v->valuestring : "";
}

int sw_cli_explain(const struct sw_cli_globals *g, int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        explain_usage(argc == 2 ? stdout : stderr);
        return argc == 2 ? SW_EXIT_OK : SW_EXIT_USAGE;
    }
    const char *key = argv[1];
    if (strchr(key, '/') == NULL || strchr(strchr(key, '/') + 1, '/') == NULL) {
        fprintf(stderr, "spillctl explain: \"%s\": expected CLUSTER/NAMESPACE/JOB\n", key);
        return SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    int rc = sw_cli_redis_open(g, "explain", &c);
    if (rc != 0)
        return rc;
    struct sw_error err = {0};
    redisReply *rec = NULL, *ex = NULL;
    if (sw_redis_sync_command(c, &rec, &err, "GET %s%s", SW_KEY_JOB, key) != 0 ||
        sw_redis_sync_command(c, &ex, &err, "GET %s%s", SW_KEY_EXPLAIN, key) != 0) {
        fprintf(stderr, "spillctl explain: %s\n", err.msg);
        sw_redis_sync_free(c);
        return SW_EXIT_FAIL;
    }
    rc = SW_EXIT_OK;
    cJSON *ro = NULL, *eo = NULL;
    if (rec->type != REDIS_REPLY_STRING) {
        fprintf(stderr,
                "spillctl explain: no Job %s is managed by the hub (spillctl status lists them)\n",
                key);
        rc = SW_EXIT_FAIL;
        goto out;
    }
    if (sw_json_parse(rec->str, rec->len, key, &ro, &err) != 0) {
        fprintf(stderr, "spillctl explain: %s\n", err.msg);
        rc = SW_EXIT_FAIL;
        goto out;
    }
    if (ex->type == REDIS_REPLY_STRING)
        sw_json_parse(ex->str, ex->len, key, &eo, &err);
    if (g->output == SW_CLI_JSON || g->output == SW_CLI_YAML) {
        cJSON *both = cJSON_CreateObject();
        cJSON_AddItemToObject(both, "record", ro);
        cJSON_AddItemToObject(both, "decision", eo ? eo : cJSON_CreateNull());
        ro = eo = NULL;
        if (g->output == SW_CLI_JSON)
            sw_cli_write_json(stdout, both, 0);
        else
            sw_cli_write_yaml(stdout, both);
        cJSON_Delete(both);
        goto out;
    }
    printf("Job:       %s (%s)\n", key, text(ro, "form"));
    printf("State:     %s (attempt %d, %d preemptions)\n", text(ro, "state"),
           (int)num(ro, "attempt"), (int)num(ro, "preemptions"));
    printf("Decision:  %s\n", text(ro, "summary")[0] ? text(ro, "summary") : "(none yet)");
    if (text(ro, "reason")[0])
        printf("Reason:    %s\n", text(ro, "reason"));
    if (eo == NULL) {
        printf("\nNo decision is stored yet: the hub decides a Job once it waits for GPUs\n"
               "(annotation-only) or as soon as it sees it (delegated).\n");
        goto out;
    }
    printf("Policy:    %s (value of delay $%.2f per GPU-hour)\n", text(eo, "policy"),
           num(eo, "delay_value_per_gpu_hour"));
    printf("Workload:  %d GPUs, runtime %.0f s (%s), priority %s, team %s\n", (int)num(eo, "gpus"),
           num(eo, "runtime_seconds"),
           cJSON_IsTrue(sw_json_path(eo, "runtime_learned")) ? "learned" : "given or prior",
           text(eo, "priority"), text(eo, "team"));
    printf("Verdict:   %s: %s\n\n", text(eo, "verdict"), text(eo, "reason_text"));
    printf("%-16s %-10s %-10s %9s %9s %9s %9s %9s %9s %s\n", "POOL", "CAPACITY", "REGION", "RUN",
           "PROVISION", "INTERRUPT", "EGRESS", "TOTAL", "WAIT", "NOTE");
    const cJSON *o;
    cJSON_ArrayForEach(o, sw_json_path(eo, "options"))
    {
        char wait[32];
        snprintf(wait, sizeof(wait), "%.0fs", num(o, "wait_seconds"));
        const char *ex_reason = text(o, "excluded");
        bool chosen = strcmp(text(o, "pool"), text(eo, "pool")) == 0;
        printf("%-16s %-10s %-10s %9.2f %9.2f %9.2f %9.2f %9.2f %9s %s\n", text(o, "pool"),
               text(o, "capacity"), text(o, "region"), num(o, "cost.run"),
               num(o, "cost.provisioning"), num(o, "cost.interruptions"), num(o, "cost.egress"),
               num(o, "cost.total"), wait,
               chosen                           ? "<- chosen"
               : strcmp(ex_reason, "none") != 0 ? ex_reason
                                                : "");
    }
out:
    cJSON_Delete(ro);
    cJSON_Delete(eo);
    freeReplyObject(rec);
    freeReplyObject(ex);
    sw_redis_sync_free(c);
    return rc;
}

/* ---- hub status -------------------------------------------------------------- */

static const struct sw_cli_column member_columns[] = {
    {"CLUSTER", "name", 0},  {"ROLE", "role", 0},     {"REGION", "region", 0},
    {"HEALTH", "health", 0}, {"SYNCED", "synced", 0}, {"API REQUESTS", "apiRequests", 1},
    {"REASON", "reason", 0},
};

static void hub_usage(FILE *out)
{
    fprintf(out, "usage: spillctl hub status [-o table|wide|json|yaml]\n\n"
                 "The hub's leader (the process holding the lease in Redis), its fencing\n"
                 "epoch, and the health of each member cluster as the leader sees it.\n\n"
                 "Global options (--redis, -o, ...): see spillctl --help.\n");
}

int sw_cli_hub(const struct sw_cli_globals *g, int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "status") != 0) {
        bool help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
        hub_usage(help ? stdout : stderr);
        return help ? SW_EXIT_OK : SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    int rc = sw_cli_redis_open(g, "hub status", &c);
    if (rc != 0)
        return rc;
    struct sw_error err = {0};
    redisReply *lease = NULL, *epoch = NULL, *ttl = NULL, *health = NULL;
    if (sw_redis_sync_command(c, &lease, &err, "GET %s", SW_KEY_LEASE) != 0 ||
        sw_redis_sync_command(c, &epoch, &err, "GET %s", SW_KEY_EPOCH) != 0 ||
        sw_redis_sync_command(c, &ttl, &err, "PTTL %s", SW_KEY_LEASE) != 0 ||
        sw_redis_sync_command(c, &health, &err, "GET %s", SW_KEY_HEALTH) != 0) {
        fprintf(stderr, "spillctl hub status: %s\n", err.msg);
        sw_redis_sync_free(c);
        return SW_EXIT_FAIL;
    }
    const char *leader = lease->type == REDIS_REPLY_STRING ? lease->str : "";
    const char *ep = epoch->type == REDIS_REPLY_STRING ? epoch->str : "0";
    cJSON *h = NULL;
    if (health->type == REDIS_REPLY_STRING)
        sw_json_parse(health->str, health->len, "hub health", &h, &err);
    cJSON *members = h ? cJSON_DetachItemFromObjectCaseSensitive(h, "members") : NULL;
    if (members == NULL)
        members = cJSON_CreateArray();
    if (g->output == SW_CLI_JSON || g->output == SW_CLI_YAML) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "leader", leader);
        cJSON_AddNumberToObject(o, "epoch", atof(ep));
        cJSON_AddNumberToObject(o, "leaseMillisecondsLeft",
                                ttl->type == REDIS_REPLY_INTEGER ? (double)ttl->integer : -1);
        cJSON_AddItemToObject(o, "members", members);
        if (g->output == SW_CLI_JSON)
            sw_cli_write_json(stdout, o, 0);
        else
            sw_cli_write_yaml(stdout, o);
        cJSON_Delete(o);
    } else {
        printf("Leader:  %s\n", leader[0] ? leader : "(none: no hub holds the lease)");
        printf("Epoch:   %s\n", ep);
        if (ttl->type == REDIS_REPLY_INTEGER && ttl->integer > 0)
            printf("Lease:   %.1f s left\n", (double)ttl->integer / 1000.0);
        if (h)
            printf("Members: as of %.0f s ago\n\n",
                   (double)(now_ms() -
                            (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(h, "updatedMs"))) /
                       1000.0);
        cJSON *rows = cJSON_CreateArray();
        const cJSON *m;
        cJSON_ArrayForEach(m, members)
        {
            cJSON *r = cJSON_Duplicate(m, 1);
            cJSON_ReplaceItemInObject(
                r, "synced",
                cJSON_CreateString(cJSON_IsTrue(cJSON_GetObjectItem(m, "synced")) ? "yes" : "no"));
            cJSON_AddItemToArray(rows, r);
        }
        rc = sw_cli_print(stdout, g->output, members, rows, member_columns,
                          sizeof(member_columns) / sizeof(member_columns[0]));
        cJSON_Delete(rows);
        cJSON_Delete(members);
    }
    cJSON_Delete(h);
    freeReplyObject(lease);
    freeReplyObject(epoch);
    freeReplyObject(ttl);
    freeReplyObject(health);
    sw_redis_sync_free(c);
    return rc == 0 ? SW_EXIT_OK : SW_EXIT_FAIL;
}
