/*
 * drill.c - `spillctl drill`: disaster-recovery drills against a running hub.
 *
 *   cluster-loss --cluster NAME   fences the member in spillway's view (the
 *                                 spillway:fence hash): the hub sends it
 *                                 nothing, finds it lost after its
 *                                 members.lostAfterSeconds, and places its
 *                                 Jobs again (or holds those that say
 *                                 spillway.io/on-cluster-loss: wait). Then
 *                                 the fence is lifted and the drill waits
 *                                 for the stale mirrors to be deleted.
 *   hub-loss [--signal KILL|STOP] kills (or stops) the leading spillwayd, a
 *                                 process of this host, and times the
 *                                 standby's takeover; a stopped leader is
 *                                 resumed and must exit on finding its
 *                                 lease gone.
 *
 * --dry-run says what would move, the expected RTO and RPO and the cost of
 * the work redone, and touches nothing. A drill prints its progress on
 * stderr while it runs, restores, and reports (text, or -o json|yaml, and
 * --report FILE as Markdown for *.md, JSON for *.json): the timeline, the
 * RTO (until every affected Job runs elsewhere, or the standby leads), the
 * RPO (the age of each Job's newest outputs at home at the moment of loss),
 * every Job affected, and pass or fail against the objectives. Exit status
 * 0 pass, 1 fail, 2 bad usage. Every drill that ran (not a dry run) is kept
 * in Redis, the newest 200; `spillctl drill history` lists them.
 *
 * Everything the drill knows comes from Redis, as the hub writes it: the
 * records, the health key (with the hub's lostAfter, probe and lease
 * settings and its RTO target), and the outputs' sync times.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/json.h"
#include "controller/cli/commands.h"
#include "controller/cli/output.h"
#include "controller/hub/annotations.h"
#include "controller/hub/jobrec.h"
#include "net/http.h"
#include "replication/replicator.h"
#include "replication/rule.h"
#include "store/redis.h"
#include "store/seal.h"

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void iso(int64_t ms, char *out, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    out[0] = '\0';
    if (gmtime_r(&s, &tm))
        strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- what the hub wrote ------------------------------------------------------ */

struct hub_view {
    cJSON *top; /* the health key, parsed; NULL when absent */
    double lost_after_s, probe_s, lease_ttl_s, rto_target_s;
    int64_t updated_ms;
};

static double ms_or(const cJSON *o, const char *k, double def)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static int read_view(redisContext *c, struct hub_view *v, struct sw_error *err)
{
    redisReply *rep = NULL;
    cJSON_Delete(v->top);
    memset(v, 0, sizeof(*v));
    if (sw_redis_sync_command(c, &rep, err, "GET %s", SW_KEY_HEALTH) != 0)
        return err->code ? err->code : SW_EIO;
    if (rep->type == REDIS_REPLY_STRING)
        v->top = cJSON_Parse(rep->str);
    freeReplyObject(rep);
    if (v->top == NULL)
        return sw_error_set(err, SW_ENOENT,
                            "no hub has written its view to this Redis (%s): is spillwayd running "
                            "and leading? (spillctl hub status)",
                            SW_KEY_HEALTH);
    /* A hub that does not publish a setting runs on its documented default. */
    v->lost_after_s = ms_or(v->top, "lostAfterMs", 60000) / 1000.0;
    v->probe_s = ms_or(v->top, "probeIntervalMs", 10000) / 1000.0;
    v->lease_ttl_s = ms_or(v->top, "leaseTTLMs", 10000) / 1000.0;
    v->rto_target_s = ms_or(v->top, "rtoTargetMs", 600000) / 1000.0;
    v->updated_ms = (int64_t)ms_or(v->top, "updatedMs", 0);
    return 0;
}

static const cJSON *view_member(const struct hub_view *v, const char *name)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(v->top, "members"))
    {
        const char *n = sw_json_str(m, "name");
        if (n && strcmp(n, name) == 0)
            return m;
    }
    return NULL;
}

/* The member clusters a drill loses: one (cluster-loss) or a region's. */
#define MAX_SET 16
struct cset {
    char names[MAX_SET][64];
    size_t n;
    char label[200]; /* "cloud-spot", "region us-east-1 (cloud-spot)" */
};

static bool cset_has(const struct cset *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return true;
    return false;
}

/* Whether every member of the set is lost (when) in the hub's view; *since: the latest loss. */
static bool all_lost(const struct hub_view *v, const struct cset *s, int64_t *since)
{
    *since = 0;
    for (size_t i = 0; i < s->n; i++) {
        const cJSON *m = view_member(v, s->names[i]);
        if (m == NULL || !cJSON_IsTrue(cJSON_GetObjectItem(m, "lost")))
            return false;
        int64_t t = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "lostSinceMs"));
        if (t > *since)
            *since = t;
    }
    return true;
}

static bool all_back(const struct hub_view *v, const struct cset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        const cJSON *m = view_member(v, s->names[i]);
        if (m == NULL || cJSON_IsTrue(cJSON_GetObjectItem(m, "lost")) ||
            cJSON_IsTrue(cJSON_GetObjectItem(m, "fenced")))
            return false;
    }
    return true;
}

struct djob {
    struct sw_job_rec r;
    bool gone;          /* the record went away during the drill */
    int64_t synced_ms;  /* outputs last all home, at the start; 0 never */
    int64_t moved_ms;   /* seen placed again (0 not yet) */
    int64_t running_ms; /* seen running (or done) elsewhere */
    int64_t held_ms;    /* seen holding for the cluster (wait) */
    char to[64];
};

static int get_record(redisContext *c, const char *key, struct sw_job_rec *r, bool *found,
                      struct sw_error *err)
{
    redisReply *rep = NULL;
    *found = false;
    if (sw_redis_sync_command(c, &rep, err, "GET %s%s", SW_KEY_JOB, key) != 0)
        return err->code ? err->code : SW_EIO;
    int rc = 0;
    if (rep->type == REDIS_REPLY_STRING) {
        cJSON *o = cJSON_Parse(rep->str);
        rc = o ? sw_job_rec_from_json(o, r, err)
               : sw_error_set(err, SW_EPARSE, "record %s: not JSON", key);
        cJSON_Delete(o);
        *found = rc == 0;
    }
    freeReplyObject(rep);
    return rc;
}

static bool in_flight(enum sw_job_state s)
{
    return s == SW_JS_DECIDED || s == SW_JS_DATA_READY || s == SW_JS_DISPATCHING ||
           s == SW_JS_DISPATCHED || s == SW_JS_RUNNING || s == SW_JS_REQUEUED;
}

/* The Jobs whose current attempt is on a cluster of `set` (all Jobs when NULL). */
static int load_jobs(redisContext *c, const struct cset *set, struct djob **out, size_t *n,
                     struct sw_error *err)
{
    redisReply *keys = NULL, *synced = NULL;
    *out = NULL;
    *n = 0;
    if (sw_redis_sync_command(c, &keys, err, "SMEMBERS %s", SW_KEY_JOBS) != 0)
        return err->code ? err->code : SW_EIO;
    if (sw_redis_sync_command(c, &synced, err, "HGETALL %s", SW_KEY_OUTPUTS_SYNCED) != 0) {
        freeReplyObject(keys);
        return err->code ? err->code : SW_EIO;
    }
    struct djob *v = sw_calloc(keys->elements + 1, sizeof(*v));
    int rc = v ? 0 : SW_ENOMEM;
    for (size_t i = 0; rc == 0 && i < keys->elements; i++) {
        bool found;
        struct djob *d = &v[*n];
        rc = get_record(c, keys->element[i]->str, &d->r, &found, err);
        if (rc != 0 || !found)
            continue;
        if (set && (!cset_has(set, d->r.target_cluster) || !in_flight(d->r.state) ||
                    strcmp(d->r.target_cluster, d->r.cluster) == 0))
            continue;
        for (size_t k = 0; k + 1 < synced->elements; k += 2)
            if (strcmp(synced->element[k]->str, d->r.key) == 0)
                d->synced_ms = atoll(synced->element[k + 1]->str);
        (*n)++;
    }
    freeReplyObject(keys);
    freeReplyObject(synced);
    if (rc != 0) {
        sw_free(v);
        *n = 0;
        return rc;
    }
    *out = v;
    return 0;
}

/* ---- the report ---------------------------------------------------------------- */

struct report {
    cJSON *o;
    cJSON *timeline;
    cJSON *jobs;
    int64_t t0;
};

static void report_init(struct report *rp, const char *scenario, const char *target, bool dry)
{
    rp->t0 = wall_ms();
    rp->o = cJSON_CreateObject();
    cJSON_AddStringToObject(rp->o, "scenario", scenario);
    cJSON_AddStringToObject(rp->o, "target", target);
    cJSON_AddBoolToObject(rp->o, "dryRun", dry);
    char at[64];
    iso(rp->t0, at, sizeof(at));
    cJSON_AddStringToObject(rp->o, "startedAt", at);
    rp->timeline = cJSON_AddArrayToObject(rp->o, "timeline");
    rp->jobs = cJSON_AddArrayToObject(rp->o, "jobs");
}

/* One timeline event at `ms` (wall), also shown as progress. */
static void event(struct report *rp, int64_t ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void event(struct report *rp, int64_t ms, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "seconds", (double)(ms - rp->t0) / 1000.0);
    char at[64];
    iso(ms, at, sizeof(at));
    cJSON_AddStringToObject(e, "at", at);
    cJSON_AddStringToObject(e, "event", text);
    cJSON_AddItemToArray(rp->timeline, e);
    fprintf(stderr, "drill: +%6.1f s  %s\n", (double)(ms - rp->t0) / 1000.0, text);
}

static void verdict(struct report *rp, bool pass, double rto_s, double target_s, const char *why)
{
    cJSON_AddNumberToObject(rp->o, "rtoSeconds", rto_s);
    cJSON_AddNumberToObject(rp->o, "rtoTargetSeconds", target_s);
    cJSON_AddBoolToObject(rp->o, "pass", pass);
    cJSON_AddStringToObject(rp->o, "verdict", why);
}

static double num(const cJSON *o, const char *k)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItem(o, k));
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = sw_json_str(o, k);
    return s ? s : "";
}

static void fmt_s(double s, char *out, size_t len)
{
    if (s < 0 || s != s)
        snprintf(out, len, "-");
    else
        snprintf(out, len, "%.1f s", s);
}

static void write_text(FILE *f, const cJSON *o, bool md)
{
    const char *h1 = md ? "# " : "", *h2 = md ? "\n## " : "\n";
    char rto[32], tgt[32];
    fmt_s(num(o, "rtoSeconds"), rto, sizeof(rto));
    fmt_s(num(o, "rtoTargetSeconds"), tgt, sizeof(tgt));
    fprintf(f, "%sDrill %s %s%s\n", h1, str(o, "scenario"), str(o, "target"),
            cJSON_IsTrue(cJSON_GetObjectItem(o, "dryRun")) ? " (dry run: nothing touched)" : "");
    fprintf(f, "%sStarted %s. %s\n", md ? "\n" : "", str(o, "startedAt"), str(o, "summary"));
    if (!cJSON_IsTrue(cJSON_GetObjectItem(o, "dryRun")) || cJSON_GetObjectItem(o, "pass")) {
        fprintf(f, "%s%s: RTO %s (objective %s). %s\n", md ? "\n**" : "",
                cJSON_IsTrue(cJSON_GetObjectItem(o, "pass")) ? "PASS" : "FAIL", rto, tgt,
                str(o, "verdict"));
        if (md)
            fprintf(f, "\n");
    }
    fprintf(f, "%sJobs affected: %d\n", h2, cJSON_GetArraySize(cJSON_GetObjectItem(o, "jobs")));
    if (md)
        fprintf(f, "\n| Job | on loss | from | to | attempt | RPO | rework cost | placed again | "
                   "running |\n|---|---|---|---|---|---|---|---|---|\n");
    const cJSON *j;
    cJSON_ArrayForEach(j, cJSON_GetObjectItem(o, "jobs"))
    {
        char rpo[32], moved[32], run[32];
        fmt_s(num(j, "rpoSeconds"), rpo, sizeof(rpo));
        fmt_s(num(j, "placedAgainAfterSeconds"), moved, sizeof(moved));
        fmt_s(num(j, "runningElsewhereAfterSeconds"), run, sizeof(run));
        if (md)
            fprintf(f, "| %s | %s | %s | %s | %.0f | %s | $%.2f | %s | %s |\n", str(j, "job"),
                    str(j, "onClusterLoss"), str(j, "from"), str(j, "to"), num(j, "attempt"), rpo,
                    num(j, "reworkCost"), moved, run);
        else
            fprintf(f,
                    "  %s  on-loss=%s from=%s to=%s attempt=%.0f RPO=%s rework=$%.2f "
                    "placed-again=%s running=%s\n",
                    str(j, "job"), str(j, "onClusterLoss"), str(j, "from"), str(j, "to"),
                    num(j, "attempt"), rpo, num(j, "reworkCost"), moved, run);
    }
    fprintf(f, "%sTimeline\n", h2);
    if (md)
        fprintf(f, "\n| +s | at | event |\n|---|---|---|\n");
    cJSON_ArrayForEach(j, cJSON_GetObjectItem(o, "timeline"))
    {
        if (md)
            fprintf(f, "| %.1f | %s | %s |\n", num(j, "seconds"), str(j, "at"), str(j, "event"));
        else
            fprintf(f, "  +%6.1f s  %s  %s\n", num(j, "seconds"), str(j, "at"), str(j, "event"));
    }
}

/* The drills kept in Redis, newest first (`spillctl drill history`). */
#define SW_KEY_DRILLS     "spillway:drills"
#define SW_KEY_DRILLS_SEQ "spillway:drills:seq"
#define DRILLS_KEPT       200

/*
 * Keeps the report of a drill that ran (a dry run touches nothing, Redis
 * included) in SW_KEY_DRILLS under the next id, the newest DRILLS_KEPT of
 * them. A report without a verdict (the drill could not run to its end) is
 * kept as failed. A failure to keep it is said, not fatal: the drill ran.
 */
static void keep(redisContext *c, cJSON *o)
{
    if (cJSON_IsTrue(cJSON_GetObjectItem(o, "dryRun")))
        return;
    if (!cJSON_GetObjectItem(o, "pass")) {
        cJSON_AddBoolToObject(o, "pass", false);
        if (!cJSON_GetObjectItem(o, "verdict"))
            cJSON_AddStringToObject(o, "verdict", "the drill could not run to its end");
    }
    struct sw_error err = {0};
    redisReply *rep = NULL;
    long long id = 0;
    if (c != NULL && sw_redis_sync_command(c, &rep, &err, "INCR %s", SW_KEY_DRILLS_SEQ) == 0) {
        id = rep->integer;
        freeReplyObject(rep);
        rep = NULL;
        cJSON_DeleteItemFromObject(o, "id");
        cJSON_AddNumberToObject(o, "id", (double)id);
        char *js = cJSON_PrintUnformatted(o);
        if (js != NULL &&
            sw_redis_sync_command(c, &rep, &err, "LPUSH %s %s", SW_KEY_DRILLS, js) == 0) {
            freeReplyObject(rep);
            rep = NULL;
            if (sw_redis_sync_command(c, &rep, &err, "LTRIM %s 0 %d", SW_KEY_DRILLS,
                                      DRILLS_KEPT - 1) == 0)
                freeReplyObject(rep);
            cJSON_free(js);
            return;
        }
        cJSON_free(js);
    }
    fprintf(stderr, "spillctl drill: the report is not kept in Redis (%s)\n",
            err.msg[0]  ? err.msg
            : c == NULL ? "no connection to the master"
                        : "out of memory");
}

static int emit(const struct sw_cli_globals *g, const cJSON *o, const char *file)
{
    if (g->output == SW_CLI_JSON) {
        sw_cli_write_json(stdout, o, 0);
        fputc('\n', stdout);
    } else if (g->output == SW_CLI_YAML) {
        sw_cli_write_yaml(stdout, o);
    } else {
        write_text(stdout, o, false);
    }
    if (file == NULL)
        return 0;
    FILE *f = fopen(file, "w");
    if (f == NULL) {
        fprintf(stderr, "spillctl drill: --report %s: %s\n", file, strerror(errno));
        return -1;
    }
    size_t n = strlen(file);
    if (n > 3 && strcmp(file + n - 3, ".md") == 0)
        write_text(f, o, true);
    else if (n > 5 && strcmp(file + n - 5, ".json") == 0) {
        sw_cli_write_json(f, o, 0);
        fputc('\n', f);
    } else
        write_text(f, o, false);
    if (fclose(f) != 0) {
        fprintf(stderr, "spillctl drill: --report %s: %s\n", file, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- cluster-loss --------------------------------------------------------------- */

struct opts {
    bool dry;
    const char *cluster;
    const char *region;
    int sig;
    double timeout_s;
    double rto_target_s; /* 0: the hub's */
    const char *report;
};

static void add_job(struct report *rp, const struct djob *d, int64_t t_loss)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "job", d->r.key);
    cJSON_AddStringToObject(j, "onClusterLoss", d->r.wait_on_loss ? "wait" : "requeue");
    cJSON_AddStringToObject(j, "state", sw_job_state_name(d->r.state));
    cJSON_AddStringToObject(j, "from", d->r.target_cluster);
    cJSON_AddStringToObject(j, "to", d->to);
    cJSON_AddNumberToObject(j, "attempt", d->r.attempt);
    cJSON_AddNumberToObject(j, "gpus", d->r.gpus);
    /* RPO: the age of the newest outputs at home when the cluster was lost;
     * a Job that has not started has lost nothing. */
    double rpo = d->r.started_ms == 0 ? 0
                 : d->synced_ms > 0   ? (double)(t_loss - d->synced_ms) / 1000.0
                                      : (double)(t_loss - d->r.started_ms) / 1000.0;
    if (rpo < 0)
        rpo = 0;
    cJSON_AddNumberToObject(j, "rpoSeconds", rpo);
    cJSON_AddStringToObject(j, "rpoFrom",
                            d->r.started_ms == 0 ? "not started"
                            : d->synced_ms > 0   ? "outputs last home"
                                                 : "no outputs home: since it started");
    /* The work redone: GPU-hours since the newest outputs at home, at the
     * price of the pool it ran in. */
    cJSON_AddNumberToObject(j, "reworkCost",
                            d->r.wait_on_loss ? 0 : d->r.gpus * d->r.price_gpu_h * rpo / 3600.0);
    cJSON_AddNumberToObject(j, "placedAgainAfterSeconds",
                            d->moved_ms ? (double)(d->moved_ms - rp->t0) / 1000.0 : -1);
    cJSON_AddNumberToObject(j, "runningElsewhereAfterSeconds",
                            d->running_ms ? (double)(d->running_ms - rp->t0) / 1000.0 : -1);
    cJSON_AddItemToArray(rp->jobs, j);
}

/* The median time from a decision to running, over the records that have
 * both: what placing a Job again takes here, as measured. */
static double median_placement_s(redisContext *c)
{
    struct djob *all = NULL;
    size_t n = 0;
    struct sw_error err = {0};
    if (load_jobs(c, NULL, &all, &n, &err) != 0)
        return -1;
    double *v = sw_calloc(n + 1, sizeof(*v));
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++)
        if (all[i].r.started_ms > all[i].r.decided_ms && all[i].r.decided_ms > 0)
            v[k++] = (double)(all[i].r.started_ms - all[i].r.decided_ms) / 1000.0;
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    double m = k ? v[k / 2] : -1;
    sw_free(v);
    sw_free(all);
    return m;
}

static bool job_done(const struct djob *d)
{
    return d->gone || (d->r.wait_on_loss ? d->held_ms != 0 : d->running_ms != 0) ||
           sw_job_state_terminal(d->r.state);
}

/* What a region-loss drill found of the model registries (region_check). */
struct registry_check {
    cJSON *rules; /* [{rule, source, targets, missingObjects, missingBytes, rpoSeconds, ...}] */
    bool pass;
    char verdict[200];
};

/*
 * Loses the members of `set` (fenced in spillway's view), follows their
 * Jobs until each runs elsewhere or holds, restores, and reports. `reg`
 * (region-loss) adds the model registries' state to the report and to the
 * verdict.
 */
static int members_loss(const struct sw_cli_globals *g, redisContext *c, const struct opts *o,
                        const char *scenario, const struct cset *set, struct registry_check *reg)
{
    struct sw_error err = {0};
    struct hub_view v = {0};
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "spillctl drill %s", scenario);
    if (read_view(c, &v, &err) != 0) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return SW_EXIT_FAIL;
    }
    for (size_t i = 0; i < set->n; i++) {
        const cJSON *m = view_member(&v, set->names[i]);
        if (m == NULL) {
            fprintf(stderr, "%s: the hub has no member %s (spillctl cluster list)\n", cmd,
                    set->names[i]);
            cJSON_Delete(v.top);
            return SW_EXIT_USAGE;
        }
        if (!o->dry && (cJSON_IsTrue(cJSON_GetObjectItem(m, "lost")) ||
                        cJSON_IsTrue(cJSON_GetObjectItem(m, "fenced")))) {
            fprintf(stderr, "%s: %s is already lost or fenced\n", cmd, set->names[i]);
            cJSON_Delete(v.top);
            return SW_EXIT_FAIL;
        }
    }
    if (wall_ms() - v.updated_ms > 60000 && !o->dry) {
        fprintf(stderr,
                "%s: the hub's view is %.0f s old: no hub leads now (spillctl hub status)\n", cmd,
                (double)(wall_ms() - v.updated_ms) / 1000.0);
        cJSON_Delete(v.top);
        return SW_EXIT_FAIL;
    }
    struct djob *jobs = NULL;
    size_t n = 0;
    if (load_jobs(c, set, &jobs, &n, &err) != 0) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        cJSON_Delete(v.top);
        return SW_EXIT_FAIL;
    }
    double target = o->rto_target_s > 0 ? o->rto_target_s : v.rto_target_s;
    double place = median_placement_s(c);
    double expect = v.lost_after_s + v.probe_s + (place >= 0 ? place : 60);
    struct report rp;
    report_init(&rp, scenario, set->label, o->dry);
    size_t nwait = 0;
    for (size_t i = 0; i < n; i++)
        nwait += jobs[i].r.wait_on_loss;
    char sum[700];
    snprintf(sum, sizeof(sum),
             "%zu Jobs run on %s: %zu would be placed again, %zu would wait. Expected RTO %.0f s: "
             "lost after %.0f s without an answer (probe every %.0f s), then placement %.0f s "
             "(%s).",
             n, set->label, n - nwait, nwait, expect, v.lost_after_s, v.probe_s,
             place >= 0 ? place : 60,
             place >= 0 ? "the median from decision to running here" : "a prior: no Job ran yet");
    if (reg) {
        cJSON_AddItemToObject(rp.o, "modelRegistries", reg->rules);
        reg->rules = NULL;
        snprintf(sum + strlen(sum), sizeof(sum) - strlen(sum), " Model registries: %s.",
                 reg->verdict);
    }
    cJSON_AddStringToObject(rp.o, "summary", sum);
    int rc = SW_EXIT_OK;
    if (o->dry) {
        int64_t now = wall_ms();
        double rework = 0;
        for (size_t i = 0; i < n; i++) {
            add_job(&rp, &jobs[i], now);
            rework += num(cJSON_GetArrayItem(rp.jobs, (int)i), "reworkCost");
        }
        cJSON_AddNumberToObject(rp.o, "expectedRtoSeconds", expect);
        cJSON_AddNumberToObject(rp.o, "expectedReworkCost", rework);
        snprintf(sum + strlen(sum), sizeof(sum) - strlen(sum), " Work redone if lost now: $%.2f.",
                 rework);
        cJSON_ReplaceItemInObject(rp.o, "summary", cJSON_CreateString(sum));
        goto out;
    }

    /* ---- the loss ---- */
    char why[200], at[64];
    iso(rp.t0, at, sizeof(at));
    snprintf(why, sizeof(why), "drill %s by spillctl at %s", scenario, at);
    redisReply *rep = NULL;
    int64_t t_loss = 0, t_lost = 0, t_done = 0, deadline = 0, last_progress = 0;
    double rto = -1;
    for (size_t i = 0; i < set->n; i++) {
        if (sw_redis_sync_command(c, &rep, &err, "HSET %s %s %s", SW_KEY_FENCE, set->names[i],
                                  why) != 0) {
            fprintf(stderr, "%s: cannot set the fence on %s: %s\n", cmd, set->names[i], err.msg);
            rc = SW_EXIT_FAIL;
            goto restore;
        }
        freeReplyObject(rep);
    }
    t_loss = wall_ms();
    event(&rp, t_loss, "fence set on %s: the hub sends it nothing from now on (%zu Jobs run there)",
          set->label, n);
    deadline = t_loss + (int64_t)(o->timeout_s * 1000);
    for (;;) {
        int64_t now = wall_ms();
        if (t_lost == 0 && read_view(c, &v, &err) == 0 && all_lost(&v, set, &t_lost))
            event(&rp, t_lost, "the hub found %s lost", set->label);
        size_t done = 0;
        for (size_t i = 0; i < n; i++) {
            struct djob *d = &jobs[i];
            bool found = false;
            if (!d->gone && get_record(c, d->r.key, &d->r, &found, &err) == 0 && !found) {
                d->gone = true;
                event(&rp, now, "%s: record gone (origin deleted)", d->r.key);
            }
            if (d->gone) {
                done++;
                continue;
            }
            bool away = d->r.target_cluster[0] && !cset_has(set, d->r.target_cluster);
            if (d->moved_ms == 0 && (away || d->r.state == SW_JS_OBSERVED)) {
                d->moved_ms = now;
                event(&rp, now, "%s placed again: attempt %d, %s", d->r.key, d->r.attempt + 1,
                      away ? d->r.target_cluster : "deciding");
            }
            if (d->moved_ms && d->to[0] == '\0' && away)
                snprintf(d->to, sizeof(d->to), "%s", d->r.target_cluster);
            if (d->moved_ms && d->running_ms == 0 && away &&
                (d->r.state == SW_JS_RUNNING || d->r.state == SW_JS_SUCCEEDED)) {
                d->running_ms = now;
                event(&rp, now, "%s running in %s (attempt %d)", d->r.key, d->r.target_cluster,
                      d->r.attempt);
            }
            if (d->r.wait_on_loss && d->held_ms == 0 &&
                strncmp(d->r.reason, "waiting for cluster", 19) == 0) {
                d->held_ms = now;
                event(&rp, now, "%s holds for %s (on-cluster-loss: wait)", d->r.key,
                      d->r.target_cluster);
            }
            if (job_done(d))
                done++;
        }
        if (t_lost && done == n) {
            t_done = now;
            break;
        }
        if (now > deadline)
            break;
        if (now - last_progress >= 5000) {
            last_progress = now;
            fprintf(stderr, "drill: +%6.1f s  waiting: lost %s, %zu of %zu Jobs recovered\n",
                    (double)(now - rp.t0) / 1000.0, t_lost ? "yes" : "not yet", done, n);
        }
        usleep(250 * 1000);
    }
    if (t_done) {
        int64_t last = t_lost;
        for (size_t i = 0; i < n; i++) {
            if (jobs[i].running_ms > last)
                last = jobs[i].running_ms;
            if (jobs[i].held_ms > last)
                last = jobs[i].held_ms;
        }
        rto = (double)(last - t_loss) / 1000.0;
    }
    for (size_t i = 0; i < n; i++)
        add_job(&rp, &jobs[i], t_loss);

restore:
    for (size_t i = 0; i < set->n; i++) {
        if (sw_redis_sync_command(c, &rep, &err, "HDEL %s %s", SW_KEY_FENCE, set->names[i]) != 0) {
            fprintf(stderr, "%s: cannot lift the fence (do it by hand: redis-cli HDEL %s %s): %s\n",
                    cmd, SW_KEY_FENCE, set->names[i], err.msg);
            rc = SW_EXIT_FAIL;
        } else {
            freeReplyObject(rep);
        }
    }
    if (rc != SW_EXIT_OK)
        goto out;
    int64_t t_lift = wall_ms();
    event(&rp, t_lift, "fence lifted from %s", set->label);
    deadline = t_lift + (int64_t)(o->timeout_s * 1000);
    bool back = false, clean = false;
    while (wall_ms() < deadline && !(back && clean)) {
        if (!back && read_view(c, &v, &err) == 0 && all_back(&v, set)) {
            back = true;
            event(&rp, wall_ms(), "the hub found %s back", set->label);
        }
        if (back && !clean) {
            size_t stale = 0;
            for (size_t i = 0; i < n; i++) {
                bool found = false;
                struct sw_job_rec r;
                if (get_record(c, jobs[i].r.key, &r, &found, &err) == 0 && found)
                    for (size_t k = 0; k < set->n; k++)
                        stale += sw_job_rec_stale_on(&r, set->names[k]);
            }
            if (stale == 0) {
                clean = true;
                event(&rp, wall_ms(), "no stale mirror left on %s", set->label);
            }
        }
        usleep(250 * 1000);
    }
    char text[700];
    bool pass = t_done && back && clean && rto <= target && (reg == NULL || reg->pass);
    if (!t_done)
        snprintf(text, sizeof(text), "not every affected Job recovered within %.0f s",
                 o->timeout_s);
    else if (!back || !clean)
        snprintf(text, sizeof(text),
                 "%s did not come back clean within %.0f s (stale mirrors left)", set->label,
                 o->timeout_s);
    else if (rto > target)
        snprintf(text, sizeof(text), "recovery took longer than the objective");
    else if (reg && !reg->pass)
        snprintf(text, sizeof(text), "model registries: %s", reg->verdict);
    else
        snprintf(text, sizeof(text),
                 "every affected Job ran elsewhere or held; %s back with no stale mirror%s%s",
                 set->label, reg ? "; model registries: " : "", reg ? reg->verdict : "");
    verdict(&rp, pass, rto, target, text);
    rc = pass ? SW_EXIT_OK : SW_EXIT_FAIL;
out:
    keep(c, rp.o);
    if (emit(g, rp.o, o->report) != 0)
        rc = SW_EXIT_FAIL;
    cJSON_Delete(rp.o);
    cJSON_Delete(v.top);
    sw_free(jobs);
    return rc;
}

static int cluster_loss(const struct sw_cli_globals *g, redisContext *c, const struct opts *o)
{
    struct cset set = {.n = 1};
    snprintf(set.names[0], sizeof(set.names[0]), "%s", o->cluster);
    snprintf(set.label, sizeof(set.label), "%s", o->cluster);
    return members_loss(g, c, o, "cluster-loss", &set, NULL);
}

/* ---- region-loss ------------------------------------------------------------------ */

/*
 * The model registries whose source is in `region`: is every version in
 * the other regions? For each model-registry rule reading a store of the
 * region, what is missing on its slowest target now (sw_repl_estimate), and
 * the journal's RPO of its last run. Complete, or behind by less than the
 * rule's objective (else `default_objective_s`), passes.
 */
static int region_check(const struct sw_cli_globals *g, redisContext *c, const char *region,
                        double default_objective_s, struct registry_check *out)
{
    struct sw_error err = {0};
    struct sw_seal_key *key = NULL;
    out->rules = cJSON_CreateArray();
    out->pass = true;
    if (sw_cli_secret_key(g, &key, &err) != 0) {
        fprintf(stderr, "spillctl drill region-loss: %s (the stores' credentials are sealed)\n",
                err.msg);
        return SW_EXIT_FAIL;
    }
    char **names = NULL;
    size_t nn = 0;
    if (sw_names_list(c, "sw:repl:rules", &names, &nn, &err) != 0) {
        fprintf(stderr, "spillctl drill region-loss: %s\n", err.msg);
        sw_seal_key_free(key);
        return SW_EXIT_FAIL;
    }
    uv_loop_t loop;
    struct sw_http *http = NULL;
    int rc = uv_loop_init(&loop) == 0 && sw_http_new(&loop, &http) == 0 ? 0 : SW_ENOMEM;
    size_t checked = 0, behind = 0;
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        struct sw_rule_spec spec;
        struct sw_store_spec src;
        char *ak = NULL, *sk = NULL;
        if (sw_rule_load(c, key, names[i], &spec, &err) != 0 || !spec.model_registry ||
            sw_store_load(c, key, spec.source.store, &src, &ak, &sk, &err) != 0)
            continue;
        sw_seal_wipe_free(ak, strlen(ak));
        sw_seal_wipe_free(sk, strlen(sk));
        if (strcmp(src.region, region) != 0)
            continue;
        checked++;
        struct sw_rule_bound *b = NULL;
        int64_t objects = 0, bytes = 0;
        double secs = 0;
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "rule", spec.name);
        cJSON_AddStringToObject(r, "source", spec.source.store);
        double objective = spec.rpo_objective_s > 0 ? spec.rpo_objective_s : default_objective_s;
        cJSON_AddNumberToObject(r, "rpoObjectiveSeconds", objective);
        if (sw_rule_bind(c, key, &spec, &loop, http, &b, &err) != 0 ||
            sw_repl_estimate(&b->rule, c, 0, &objects, &bytes, &secs, &err) != 0) {
            cJSON_AddStringToObject(r, "error", err.msg);
            out->pass = false;
            behind++;
        } else {
            /* Behind: the journal's RPO of the last run, or that run's age
             * when it left nothing behind (newer objects are not known). */
            double rpo = 0;
            for (size_t t = 0; objects > 0 && t < spec.ntargets; t++) {
                redisReply *rep = NULL;
                if (sw_redis_sync_command(c, &rep, &err, "GET sw:repl:%s:rpo:%s", spec.name,
                                          spec.targets[t].store) == 0) {
                    long long oldest = 0, last = 0;
                    if (rep->type == REDIS_REPLY_STRING)
                        sscanf(rep->str, "%lld %lld", &oldest, &last);
                    double age = (double)(wall_ms() - (oldest > 0 ? oldest : last)) / 1000.0;
                    if (last == 0)
                        age = 1e9; /* never run */
                    if (age > rpo)
                        rpo = age;
                    freeReplyObject(rep);
                }
            }
            cJSON_AddNumberToObject(r, "missingObjects", (double)objects);
            cJSON_AddNumberToObject(r, "missingBytes", (double)bytes);
            cJSON_AddNumberToObject(r, "rpoSeconds", rpo);
            bool ok = objects == 0 || rpo <= objective;
            cJSON_AddBoolToObject(r, "pass", ok);
            if (!ok) {
                out->pass = false;
                behind++;
            }
        }
        if (b)
            sw_rule_bound_free(b);
        cJSON_AddItemToArray(out->rules, r);
    }
    if (http)
        sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    if (names)
        sw_names_free(names, nn);
    sw_seal_key_free(key);
    if (rc != 0) {
        fprintf(stderr, "spillctl drill region-loss: out of memory\n");
        return SW_EXIT_FAIL;
    }
    if (checked == 0)
        snprintf(out->verdict, sizeof(out->verdict), "no model-registry rule reads region %s",
                 region);
    else if (behind == 0)
        snprintf(out->verdict, sizeof(out->verdict),
                 "%zu rule(s) from %s complete in the other regions (or within their RPO)", checked,
                 region);
    else
        snprintf(out->verdict, sizeof(out->verdict),
                 "%zu of %zu rule(s) from %s behind their RPO objective in another region", behind,
                 checked, region);
    return SW_EXIT_OK;
}

static int region_loss(const struct sw_cli_globals *g, redisContext *c, const struct opts *o)
{
    struct sw_error err = {0};
    struct hub_view v = {0};
    if (read_view(c, &v, &err) != 0) {
        fprintf(stderr, "spillctl drill region-loss: %s\n", err.msg);
        return SW_EXIT_FAIL;
    }
    struct cset set = {0};
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(v.top, "members"))
    {
        if (strcmp(str(m, "region"), o->region) == 0 && set.n < MAX_SET)
            snprintf(set.names[set.n++], sizeof(set.names[0]), "%s", str(m, "name"));
    }
    double objective =
        cJSON_GetNumberValue(cJSON_GetObjectItem(v.top, "replicationRpoObjectiveMs"));
    cJSON_Delete(v.top);
    if (set.n == 0) {
        fprintf(stderr,
                "spillctl drill region-loss: --region %s: no member cluster of the hub is in that "
                "region (spillctl cluster list)\n",
                o->region);
        return SW_EXIT_USAGE;
    }
    int len = snprintf(set.label, sizeof(set.label), "region %s (", o->region);
    for (size_t i = 0; i < set.n && len > 0 && (size_t)len < sizeof(set.label); i++)
        len += snprintf(set.label + len, sizeof(set.label) - (size_t)len, "%s%s", i ? ", " : "",
                        set.names[i]);
    if (len > 0 && (size_t)len < sizeof(set.label) - 1)
        snprintf(set.label + len, sizeof(set.label) - (size_t)len, ")");
    struct registry_check reg = {0};
    int rc = region_check(g, c, o->region, objective / 1000.0, &reg);
    if (rc == SW_EXIT_OK)
        rc = members_loss(g, c, o, "region-loss", &set, &reg);
    cJSON_Delete(reg.rules);
    return rc;
}

/* ---- hub-loss -------------------------------------------------------------------- */

/* The leader's pid from the lease ("ID/PID-RANDOM"), when it is a spillwayd of this host. */
static int leader_pid(const char *holder, pid_t *pid, char *why, size_t len)
{
    const char *slash = strrchr(holder, '/');
    long p = slash ? strtol(slash + 1, NULL, 10) : 0;
    if (p <= 1) {
        snprintf(why, len, "the lease holder \"%.160s\" names no process", holder);
        return -1;
    }
    char path[64], comm[64] = "";
    snprintf(path, sizeof(path), "/proc/%ld/comm", p);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(comm, sizeof(comm), f) == NULL)
            comm[0] = '\0';
        fclose(f);
    }
    comm[strcspn(comm, "\n")] = '\0';
    if (strcmp(comm, "spillwayd") != 0) {
        snprintf(why, len,
                 "the leader \"%.160s\" is not a spillwayd process of this host (pid %ld): lose it "
                 "where it runs (kubectl delete pod --grace-period=0 ...) and watch spillctl hub "
                 "status",
                 holder, p);
        return -1;
    }
    *pid = (pid_t)p;
    return 0;
}

static int get_str_key(redisContext *c, const char *key, char *out, size_t len)
{
    redisReply *rep = NULL;
    struct sw_error err = {0};
    out[0] = '\0';
    if (sw_redis_sync_command(c, &rep, &err, "GET %s", key) != 0)
        return -1;
    if (rep->type == REDIS_REPLY_STRING)
        snprintf(out, len, "%s", rep->str);
    freeReplyObject(rep);
    return 0;
}

static int hub_loss(const struct sw_cli_globals *g, redisContext *c, const struct opts *o)
{
    struct sw_error err = {0};
    struct hub_view v = {0};
    char holder[256], epoch[32], why[600];
    if (read_view(c, &v, &err) != 0 || get_str_key(c, SW_KEY_LEASE, holder, sizeof(holder)) != 0 ||
        get_str_key(c, SW_KEY_EPOCH, epoch, sizeof(epoch)) != 0) {
        fprintf(stderr, "spillctl drill hub-loss: %s\n",
                err.msg[0] ? err.msg : "cannot read Redis");
        cJSON_Delete(v.top);
        return SW_EXIT_FAIL;
    }
    if (holder[0] == '\0') {
        fprintf(stderr, "spillctl drill hub-loss: no hub holds the lease now\n");
        cJSON_Delete(v.top);
        return SW_EXIT_FAIL;
    }
    pid_t pid = 0;
    int pid_rc = leader_pid(holder, &pid, why, sizeof(why));
    double target = o->rto_target_s > 0 ? o->rto_target_s : v.lease_ttl_s * 4.0 / 3.0;
    struct report rp;
    report_init(&rp, "hub-loss", holder, o->dry);
    struct djob *jobs = NULL;
    size_t n = 0, inflight = 0;
    if (load_jobs(c, NULL, &jobs, &n, &err) == 0)
        for (size_t i = 0; i < n; i++)
            inflight += in_flight(jobs[i].r.state);
    sw_free(jobs);
    char sum[600];
    snprintf(sum, sizeof(sum),
             "Leader %s (epoch %s), %s with SIG%s; %zu Jobs in flight resume from their records. "
             "Expected takeover within the lease TTL %.0f s plus one renewal period %.1f s = "
             "%.1f s, if a standby runs.",
             holder, epoch[0] ? epoch : "0", o->dry ? "would be stopped" : "stopped",
             o->sig == SIGSTOP ? "STOP" : "KILL", inflight, v.lease_ttl_s, v.lease_ttl_s / 3.0,
             v.lease_ttl_s * 4.0 / 3.0);
    cJSON_AddStringToObject(rp.o, "summary", sum);
    int rc = SW_EXIT_OK;
    if (o->dry) {
        if (pid_rc != 0)
            fprintf(stderr, "spillctl drill hub-loss: note: %s\n", why);
        cJSON_AddNumberToObject(rp.o, "expectedRtoSeconds", v.lease_ttl_s * 4.0 / 3.0);
        goto out;
    }
    if (pid_rc != 0) {
        fprintf(stderr, "spillctl drill hub-loss: %s\n", why);
        rc = SW_EXIT_FAIL;
        goto out_nodrill;
    }
    int64_t t0 = wall_ms();
    if (kill(pid, o->sig) != 0) {
        fprintf(stderr, "spillctl drill hub-loss: kill %d: %s\n", (int)pid, strerror(errno));
        rc = SW_EXIT_FAIL;
        goto out_nodrill;
    }
    event(&rp, t0, "leader %s sent SIG%s (epoch %s)", holder, o->sig == SIGSTOP ? "STOP" : "KILL",
          epoch);
    int64_t deadline = t0 + (int64_t)(o->timeout_s * 1000), t_take = 0, t_acting = 0;
    char now_holder[256], now_epoch[32];
    while (wall_ms() < deadline) {
        if (get_str_key(c, SW_KEY_LEASE, now_holder, sizeof(now_holder)) == 0 && now_holder[0] &&
            strcmp(now_holder, holder) != 0) {
            t_take = wall_ms();
            get_str_key(c, SW_KEY_EPOCH, now_epoch, sizeof(now_epoch));
            event(&rp, t_take, "%s took the lease (epoch %s)", now_holder, now_epoch);
            break;
        }
        usleep(50 * 1000);
    }
    while (t_take && wall_ms() < deadline) {
        if (read_view(c, &v, &err) == 0 && v.updated_ms >= t_take &&
            strcmp(str(v.top, "hub"), now_holder) == 0) {
            t_acting = wall_ms();
            event(&rp, t_acting, "%s acting: members read, records loaded", now_holder);
            break;
        }
        usleep(100 * 1000);
    }
    bool old_exited = o->sig == SIGKILL;
    if (o->sig == SIGSTOP) {
        kill(pid, SIGCONT);
        event(&rp, wall_ms(), "old leader resumed (SIGCONT)");
        int64_t until = wall_ms() + (int64_t)(v.lease_ttl_s * 1000) + 10000;
        while (wall_ms() < until && !old_exited) {
            old_exited = kill(pid, 0) != 0 && errno == ESRCH;
            usleep(100 * 1000);
        }
        /* A zombie child of another parent still answers kill(0): read its state. */
        if (!old_exited) {
            char path[64], st[256] = "";
            snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
            FILE *f = fopen(path, "r");
            if (f) {
                if (fgets(st, sizeof(st), f) == NULL)
                    st[0] = '\0';
                fclose(f);
            }
            const char *p = strrchr(st, ')');
            old_exited = f == NULL || (p && p[1] == ' ' && p[2] == 'Z');
        }
        if (old_exited)
            event(&rp, wall_ms(), "old leader exited on finding its lease gone");
        else
            event(&rp, wall_ms(), "old leader still running after its lease ended");
    }
    double rto = t_take ? (double)(t_take - t0) / 1000.0 : -1;
    bool pass = t_take && t_acting && old_exited && rto <= target;
    snprintf(why, sizeof(why), "%s",
             !t_take        ? "no standby took the lease"
             : !t_acting    ? "the new leader did not start acting"
             : !old_exited  ? "the old leader kept running after losing its lease"
             : rto > target ? "the takeover took longer than the objective"
                            : "a standby took over and acts; the old leader is gone");
    verdict(&rp, pass, rto, target, why);
    cJSON_AddNumberToObject(rp.o, "actingAfterSeconds",
                            t_acting ? (double)(t_acting - t0) / 1000.0 : -1);
    rc = pass ? SW_EXIT_OK : SW_EXIT_FAIL;
out:
    keep(c, rp.o);
    if (emit(g, rp.o, o->report) != 0)
        rc = SW_EXIT_FAIL;
out_nodrill:
    cJSON_Delete(rp.o);
    cJSON_Delete(v.top);
    return rc;
}

/* ---- redis-failover ---------------------------------------------------------------- */

/*
 * Asks the Sentinels (of the --redis redis+sentinel:// URL) to fail the
 * master over, and times what the hub does: the Sentinels name a new
 * master, the hub re-takes its lease there under a higher epoch, and acts
 * again (its view written after that). Nothing is restored: the old master
 * comes back as a replica, which is how Sentinel leaves it.
 */
/* A plain connection to one data node (the new master), with the URL's
 * user, password and database: the Sentinel-aware client may still talk
 * to the old master until it is demoted. */
static redisContext *connect_node(const struct sw_redis_url *u, const char *host, int port)
{
    redisContext *n = NULL;
    if (sw_redis_sync_open(u, host, port, 2000, &n, NULL) != 0)
        return NULL;
    redisReply *rep = NULL;
    if (u->password)
        rep = u->user ? redisCommand(n, "AUTH %s %s", u->user, u->password)
                      : redisCommand(n, "AUTH %s", u->password);
    bool ok = u->password == NULL || (rep && rep->type != REDIS_REPLY_ERROR);
    if (rep)
        freeReplyObject(rep);
    rep = ok ? redisCommand(n, "SELECT %d", u->db) : NULL;
    ok = ok && rep && rep->type != REDIS_REPLY_ERROR;
    if (rep)
        freeReplyObject(rep);
    if (!ok) {
        redisFree(n);
        return NULL;
    }
    return n;
}

static int redis_failover(const struct sw_cli_globals *g, redisContext *c, const struct opts *o)
{
    struct sw_error err = {0};
    char url[SW_CLI_REDIS_URL_MAX];
    struct sw_redis_url u;
    memset(&u, 0, sizeof(u));
    if (sw_cli_redis_url(g, url, sizeof(url), &err) != 0 ||
        sw_redis_url_parse(url, &u, &err) != 0) {
        fprintf(stderr, "spillctl drill redis-failover: %s\n", err.msg);
        memset(url, 0, sizeof(url));
        return SW_EXIT_FAIL;
    }
    memset(url, 0, sizeof(url));
    if (!u.sentinel) {
        fprintf(stderr, "spillctl drill redis-failover: --redis is not a Sentinel URL "
                        "(redis+sentinel://HOST:PORT[,...]/MASTER[/db]): there is nothing to fail "
                        "over\n");
        sw_redis_url_free(&u);
        return SW_EXIT_USAGE;
    }
    struct hub_view v = {0};
    char holder[256], epoch[32], host0[256], host[256], why[400] = "";
    int port0 = 0, port = 0;
    if (read_view(c, &v, &err) != 0 || get_str_key(c, SW_KEY_LEASE, holder, sizeof(holder)) != 0 ||
        get_str_key(c, SW_KEY_EPOCH, epoch, sizeof(epoch)) != 0 ||
        sw_redis_sentinel_discover(&u, 2000, host0, sizeof(host0), &port0, NULL, 0, &err) != 0) {
        fprintf(stderr, "spillctl drill redis-failover: %s\n",
                err.msg[0] ? err.msg : "cannot read Redis");
        cJSON_Delete(v.top);
        sw_redis_url_free(&u);
        return SW_EXIT_FAIL;
    }
    double target = o->rto_target_s > 0 ? o->rto_target_s : v.lease_ttl_s;
    struct report rp;
    report_init(&rp, "redis-failover", u.master, o->dry);
    char sum[1400];
    snprintf(sum, sizeof(sum),
             "Master %s:%d of \"%s\" %s to a replica; leader %s (epoch %s) follows it, re-takes "
             "its lease there under a higher epoch and acts again, within its lease TTL %.0f s "
             "or a standby takes over. Lost in the window: writes the replica had not received "
             "(records are re-derived from the mirrors, docs/dr.md).",
             host0, port0, u.master, o->dry ? "would be failed over" : "failed over",
             holder[0] ? holder : "(none)", epoch[0] ? epoch : "0", v.lease_ttl_s);
    cJSON_AddStringToObject(rp.o, "summary", sum);
    int rc = SW_EXIT_OK;
    redisContext *nm = NULL; /* the new master */
    if (o->dry) {
        cJSON_AddNumberToObject(rp.o, "expectedRtoSeconds", v.lease_ttl_s);
        goto out;
    }
    /* Ask the Sentinels in order until one accepts. */
    int asked = 0;
    for (size_t i = 0; i < u.nsentinels && !asked; i++) {
        redisContext *sc = NULL;
        struct sw_error oe = {0};
        if (sw_redis_sync_open(&u, u.sentinel_host[i], u.sentinel_port[i], 2000, &sc, &oe) != 0) {
            snprintf(why, sizeof(why), "%.300s", oe.msg);
            continue;
        }
        redisReply *rep = NULL;
        if (u.sentinel_password) {
            rep = redisCommand(sc, "AUTH %s", u.sentinel_password);
            if (rep)
                freeReplyObject(rep);
        }
        rep = redisCommand(sc, "SENTINEL FAILOVER %s", u.master);
        if (rep && rep->type == REDIS_REPLY_STATUS)
            asked = 1;
        else if (rep && rep->type == REDIS_REPLY_ERROR)
            snprintf(why, sizeof(why), "Sentinel %s:%d: %s", u.sentinel_host[i], u.sentinel_port[i],
                     rep->str);
        if (rep)
            freeReplyObject(rep);
        redisFree(sc);
    }
    int64_t t0 = wall_ms();
    if (!asked) {
        fprintf(stderr, "spillctl drill redis-failover: no Sentinel accepted the failover%s%s\n",
                why[0] ? ": " : "", why);
        rc = SW_EXIT_FAIL;
        goto out;
    }
    event(&rp, t0, "SENTINEL FAILOVER %s (master %s:%d, leader %s, epoch %s)", u.master, host0,
          port0, holder, epoch);
    int64_t deadline = t0 + (int64_t)(o->timeout_s * 1000), t_new = 0, t_lease = 0, t_act = 0;
    long long e0 = atoll(epoch), e1 = 0;
    char now_holder[256] = "";
    while (wall_ms() < deadline && !t_act) {
        int64_t now = wall_ms();
        if (!t_new &&
            sw_redis_sentinel_discover(&u, 1000, host, sizeof(host), &port, NULL, 0, &err) == 0 &&
            (strcmp(host, host0) != 0 || port != port0)) {
            t_new = now;
            event(&rp, now, "the Sentinels name %s:%d the master", host, port);
        }
        if (t_new && nm == NULL && (nm = connect_node(&u, host, port)) == NULL) {
            usleep(100 * 1000);
            continue;
        }
        char ep[32];
        if (t_new && !t_lease && get_str_key(nm, SW_KEY_EPOCH, ep, sizeof(ep)) == 0 &&
            atoll(ep) > e0 && get_str_key(nm, SW_KEY_LEASE, now_holder, sizeof(now_holder)) == 0 &&
            now_holder[0]) {
            t_lease = now;
            e1 = atoll(ep);
            event(&rp, now, "%s holds the lease under epoch %lld%s", now_holder, e1,
                  strcmp(now_holder, holder) == 0 ? " (the same hub: no takeover)" : "");
        }
        if (t_lease && read_view(nm, &v, &err) == 0 &&
            (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(v.top, "epoch")) >= e1) {
            t_act = wall_ms();
            event(&rp, t_act, "%s acting again on the new master", now_holder);
        }
        usleep(100 * 1000);
    }
    double rto = t_act ? (double)(t_act - t0) / 1000.0 : -1;
    bool pass = t_act && rto <= target;
    snprintf(why, sizeof(why), "%s",
             !t_new         ? "the Sentinels named no new master"
             : !t_lease     ? "no hub re-took the lease under a higher epoch"
             : !t_act       ? "the hub did not act again"
             : rto > target ? "the hub took longer than its lease TTL to act again"
                            : "the hub followed the new master under a higher epoch");
    verdict(&rp, pass, rto, target, why);
    cJSON_AddNumberToObject(rp.o, "epochBefore", (double)e0);
    cJSON_AddNumberToObject(rp.o, "epochAfter", (double)e1);
    rc = pass ? SW_EXIT_OK : SW_EXIT_FAIL;
out:
    /* After a failover, the drill's own connection is to the old master. */
    keep(nm ? nm : c, rp.o);
    if (nm)
        redisFree(nm);
    if (emit(g, rp.o, o->report) != 0)
        rc = SW_EXIT_FAIL;
    cJSON_Delete(rp.o);
    cJSON_Delete(v.top);
    sw_redis_url_free(&u);
    return rc;
}

/* ---- history ---------------------------------------------------------------- */

static const struct sw_cli_column history_columns[] = {
    {"id", "id", 0},
    {"started", "startedAt", 0},
    {"scenario", "scenario", 0},
    {"target", "target", 0},
    {"result", "result", 0},
    {"rto", "rto", 0},
    {"objective", "objective", 0},
    {"jobs", "jobs", 0},
    {"verdict", "verdict", 1},
};

static int history(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    long limit = 20;
    const char *file = NULL, *id = a->npos > 0 ? a->pos[0] : NULL;
    size_t it = 0;
    const char *optv;
    int ch;
    while ((ch = sw_cli_next(a, &it, &optv)) != -1) {
        switch (ch) {
        case 'l': {
            char *end = NULL;
            limit = strtol(optv, &end, 10);
            if (end == optv || *end != '\0' || limit < 1 || limit > DRILLS_KEPT) {
                fprintf(stderr,
                        "spillctl drill history: --limit: expected a number from 1 to %d, got "
                        "\"%s\"\n",
                        DRILLS_KEPT, optv);
                return SW_EXIT_USAGE;
            }
            break;
        }
        case 'f':
            file = optv;
            break;
        }
    }
    if (file != NULL && id == NULL) {
        fprintf(stderr, "spillctl drill history: --report needs a drill ID\n");
        return SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    int rc = sw_cli_redis_open(g, "drill history", &c);
    if (rc != 0)
        return rc;
    struct sw_error err = {0};
    redisReply *rep = NULL;
    if (sw_redis_sync_command(c, &rep, &err, "LRANGE %s 0 %d", SW_KEY_DRILLS, DRILLS_KEPT - 1) !=
        0) {
        fprintf(stderr, "spillctl drill history: %s\n", err.msg);
        redisFree(c);
        return SW_EXIT_FAIL;
    }
    cJSON *items = cJSON_CreateArray();
    cJSON *found = NULL;
    for (size_t i = 0; i < rep->elements && items != NULL; i++) {
        const redisReply *e = rep->element[i];
        cJSON *o = e->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(e->str, e->len) : NULL;
        if (!cJSON_IsObject(o)) {
            fprintf(stderr,
                    "spillctl drill history: entry %zu of %s is not a drill report; "
                    "skipped\n",
                    i, SW_KEY_DRILLS);
            cJSON_Delete(o);
            continue;
        }
        if (id != NULL) {
            char mine[32];
            snprintf(mine, sizeof(mine), "%.0f", num(o, "id"));
            if (strcmp(mine, id) == 0 && found == NULL)
                found = o;
            else
                cJSON_Delete(o);
            continue;
        }
        if ((long)cJSON_GetArraySize(items) >= limit) {
            cJSON_Delete(o);
            break;
        }
        cJSON *row = cJSON_CreateObject();
        char rto[32], tgt[32];
        fmt_s(num(o, "rtoSeconds"), rto, sizeof(rto));
        fmt_s(num(o, "rtoTargetSeconds"), tgt, sizeof(tgt));
        cJSON_AddNumberToObject(row, "id", num(o, "id"));
        cJSON_AddStringToObject(row, "startedAt", str(o, "startedAt"));
        cJSON_AddStringToObject(row, "scenario", str(o, "scenario"));
        cJSON_AddStringToObject(row, "target", str(o, "target"));
        cJSON_AddStringToObject(row, "result",
                                cJSON_IsTrue(cJSON_GetObjectItem(o, "pass")) ? "PASS" : "FAIL");
        cJSON_AddStringToObject(row, "rto", rto);
        cJSON_AddStringToObject(row, "objective", tgt);
        cJSON_AddNumberToObject(row, "jobs", cJSON_GetArraySize(cJSON_GetObjectItem(o, "jobs")));
        cJSON_AddStringToObject(row, "verdict", str(o, "verdict"));
        /* -o json|yaml: the whole reports; the table: one line each. */
        if (g->output == SW_CLI_JSON || g->output == SW_CLI_YAML) {
            cJSON_AddItemToArray(items, o);
            cJSON_Delete(row);
        } else {
            cJSON_AddItemToArray(items, row);
            cJSON_Delete(o);
        }
    }
    freeReplyObject(rep);
    redisFree(c);
    if (id != NULL) {
        cJSON_Delete(items);
        if (found == NULL) {
            fprintf(stderr,
                    "spillctl drill history: no drill %s is kept (see spillctl drill history)\n",
                    id);
            return SW_EXIT_FAIL;
        }
        rc = emit(g, found, file) == 0 ? SW_EXIT_OK : SW_EXIT_FAIL;
        cJSON_Delete(found);
        return rc;
    }
    if (items == NULL)
        return SW_EXIT_FAIL;
    rc = sw_cli_print(stdout, g->output, items, NULL, history_columns,
                      sizeof(history_columns) / sizeof(history_columns[0])) == 0
             ? SW_EXIT_OK
             : SW_EXIT_FAIL;
    cJSON_Delete(items);
    return rc;
}

/* ---- the command ---------------------------------------------------------------- */

/* Runs drill `scenario` with the parsed arguments. */
static int drill(const struct sw_cli_globals *g, const struct sw_cli_args *a, const char *scenario)
{
    struct opts o = {.sig = SIGKILL, .timeout_s = 900};
    size_t it = 0;
    const char *optv;
    int ch;
    while ((ch = sw_cli_next(a, &it, &optv)) != -1) {
        switch (ch) {
        case 'n':
            o.dry = true;
            break;
        case 'c':
            o.cluster = optv;
            break;
        case 'g':
            o.region = optv;
            break;
        case 's':
            if (strcmp(optv, "KILL") == 0 || strcmp(optv, "SIGKILL") == 0)
                o.sig = SIGKILL;
            else if (strcmp(optv, "STOP") == 0 || strcmp(optv, "SIGSTOP") == 0)
                o.sig = SIGSTOP;
            else {
                fprintf(stderr, "spillctl drill: --signal: expected KILL or STOP, got \"%s\"\n",
                        optv);
                return SW_EXIT_USAGE;
            }
            break;
        case 'f':
            o.report = optv;
            break;
        }
    }
    o.timeout_s = sw_cli_arg_seconds(a, 't', o.timeout_s);
    o.rto_target_s = sw_cli_arg_seconds(a, 'r', o.rto_target_s);
    bool cl = strcmp(scenario, "cluster-loss") == 0;
    bool rl = strcmp(scenario, "region-loss") == 0, rf = strcmp(scenario, "redis-failover") == 0;
    if (rl && (o.region == NULL || o.region[0] == '\0')) {
        fprintf(stderr, "spillctl drill region-loss: --region R is required\n");
        return SW_EXIT_USAGE;
    }
    if (cl && (o.cluster == NULL || o.cluster[0] == '\0')) {
        fprintf(stderr, "spillctl drill cluster-loss: --cluster NAME is required\n");
        return SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    char what[64];
    snprintf(what, sizeof(what), "drill %s", scenario);
    int rc = sw_cli_redis_open(g, what, &c);
    if (rc != 0)
        return rc;
    rc = cl   ? cluster_loss(g, c, &o)
         : rl ? region_loss(g, c, &o)
         : rf ? redis_failover(g, c, &o)
              : hub_loss(g, c, &o);
    redisFree(c);
    return rc;
}

static int run_cluster_loss(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return drill(g, a, "cluster-loss");
}

static int run_region_loss(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return drill(g, a, "region-loss");
}

static int run_hub_loss(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return drill(g, a, "hub-loss");
}

static int run_redis_failover(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return drill(g, a, "redis-failover");
}

/* The options every scenario takes, then each one's own. */
#define COMMON_OPTS                                                                                \
    {"dry-run", 0, SW_CLI_FLAG, 'n', NULL}, {"timeout", 0, SW_CLI_DURATION, 't', "DURATION"},      \
        {"rto-target", 0, SW_CLI_DURATION, 'r', "DURATION"},                                       \
    {                                                                                              \
        "report", 0, SW_CLI_VALUE, 'f', "FILE"                                                     \
    }
static const struct sw_cli_opt cluster_opts[] = {COMMON_OPTS,
                                                 {"cluster", 0, SW_CLI_VALUE, 'c', "NAME"}};
static const struct sw_cli_opt region_opts[] = {COMMON_OPTS,
                                                {"region", 0, SW_CLI_VALUE, 'g', "REGION"}};
static const struct sw_cli_opt hub_opts[] = {COMMON_OPTS,
                                             {"signal", 0, SW_CLI_VALUE, 's', "KILL|STOP"}};
static const struct sw_cli_opt redis_opts[] = {COMMON_OPTS};
static const struct sw_cli_opt history_opts[] = {
    {"limit", 0, SW_CLI_VALUE, 'l', "N"},
    {"report", 0, SW_CLI_VALUE, 'f', "FILE"},
};
#define NOPTS(t) (sizeof(t) / sizeof(t[0]))

#define COMMON_HELP                                                                                \
    "  --dry-run              say what would move, the expected RTO, RPO and cost; touch\n"        \
    "                         nothing\n"                                                           \
    "  --timeout DURATION     give up waiting for recovery or restore after this long\n"           \
    "                         (default 15m)\n"                                                     \
    "  --rto-target DURATION  the objective (default: the hub's members.rtoTargetSeconds\n"        \
    "                         for cluster-loss; lease TTL + TTL/3 for hub-loss)\n"                 \
    "  --report FILE          also write the report: Markdown for *.md, JSON for *.json,\n"        \
    "                         else text\n"
#define EXIT_HELP                                                                                  \
    "\nExit status: 0 the drill passed, 1 it failed (or could not run), 2 bad usage.\n"

const struct sw_cli_spec sw_cli_drill_specs[] = {
    {.path = "drill cluster-loss",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "fence a member cluster; the hub places its Jobs again",
     .help = "Usage: spillctl drill cluster-loss --cluster NAME [options]\n"
             "\n"
             "Fences a member cluster: the hub sends it nothing, finds it lost, and places\n"
             "its Jobs again. Reports the timeline, RTO and RPO, and restores.\n"
             "\n"
             "Options:\n"
             "  --cluster NAME         the member to lose\n" COMMON_HELP EXIT_HELP,
     .examples =
         "  spillctl drill cluster-loss --cluster aws-east --dry-run\n"
         "  spillctl drill cluster-loss --cluster aws-east --timeout 10m --report drill.md\n",
     .opts = cluster_opts,
     .nopts = NOPTS(cluster_opts),
     .run = run_cluster_loss},
    {.path = "drill region-loss",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "fence every member in a region; check the registries read there",
     .help = "Usage: spillctl drill region-loss --region R [options]\n"
             "\n"
             "Fences every member in region R, and checks that the model registries read\n"
             "there are complete elsewhere (needs --secret-key-file: the stores'\n"
             "credentials).\n"
             "\n"
             "Options:\n"
             "  --region REGION        the region to lose\n" COMMON_HELP EXIT_HELP,
     .examples = "  spillctl drill region-loss --region us-east-1 --dry-run\n",
     .opts = region_opts,
     .nopts = NOPTS(region_opts),
     .run = run_region_loss},
    {.path = "drill hub-loss",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "kill the leading spillwayd and time the standby's takeover",
     .help = "Usage: spillctl drill hub-loss [--signal KILL|STOP] [options]\n"
             "\n"
             "Kills the leading spillwayd (a process of this host) and times the\n"
             "standby's takeover.\n"
             "\n"
             "Options:\n"
             "  --signal KILL|STOP     how the leader is lost (default KILL; a stopped\n"
             "                         leader is resumed after the takeover and must "
             "exit)\n" COMMON_HELP EXIT_HELP,
     .examples = "  spillctl drill hub-loss\n"
                 "  spillctl drill hub-loss --signal STOP --rto-target 30s\n",
     .opts = hub_opts,
     .nopts = NOPTS(hub_opts),
     .run = run_hub_loss},
    {.path = "drill redis-failover",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "fail the Redis master over through Sentinel; time the hub's re-take",
     .help = "Usage: spillctl drill redis-failover [options]\n"
             "\n"
             "Asks the Sentinels (--redis redis+sentinel://...) to fail the master over, and\n"
             "times the hub's re-take.\n"
             "\n"
             "Options:\n" COMMON_HELP EXIT_HELP,
     .examples =
         "  spillctl drill redis-failover --redis redis+sentinel://s1:26379,s2:26379/mymaster\n",
     .opts = redis_opts,
     .nopts = NOPTS(redis_opts),
     .run = run_redis_failover},
    {.path = "drill history",
     .formats = SW_CLI_FMT_LIST,
     .summary = "the drills that ran, or one drill's whole report",
     .help = "Usage: spillctl drill history [ID] [--limit N] [--report FILE]\n"
             "\n"
             "Lists the drills that ran (newest first; dry runs are not kept), or shows the\n"
             "whole report of drill ID, as the drill printed it.\n"
             "\n"
             "Options:\n"
             "  --limit N      list at most N drills (default 20; the newest 200 are kept)\n"
             "  --report FILE  with ID: also write the report (Markdown for *.md, JSON for\n"
             "                 *.json, else text)\n",
     .examples = "  spillctl drill history\n"
                 "  spillctl drill history 3 --report drill-3.md\n",
     .opts = history_opts,
     .nopts = NOPTS(history_opts),
     .max_pos = 1,
     .run = history},
};
const size_t sw_cli_drill_nspecs = NOPTS(sw_cli_drill_specs);
