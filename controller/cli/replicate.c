/*
 * replicate.c - `spillctl replicate`: object stores, replication rules,
 * runs, status (RPO), verification and estimates.
 *
 *   spillctl replicate store add NAME --endpoint URL --region R [--virtual-host]
 *                                     [--ca-file F] [--insecure-tls]
 *   spillctl replicate store list | store remove NAME
 *   spillctl replicate add RULE --from STORE:BUCKET/PREFIX --to STORE:BUCKET/PREFIX...
 *                         [--model-registry] [--server-copy] [--concurrency N]
 *                         [--part-concurrency N] [--part-size-mib N] [--bandwidth-mbps N]
 *   spillctl replicate list | remove RULE
 *   spillctl replicate status [RULE] [--metrics]
 *   spillctl replicate run RULE (--once | --watch DURATION) [--progress auto|bar|plain|none]
 *                              [--force]   (a rule the hub runs is refused without it)
 *   spillctl replicate verify RULE
 *   spillctl replicate estimate RULE [--bandwidth-mbps N]
 *
 * The options are read by the one parser (controller/cli/args.c) from the
 * tables at the end of this file. Store credentials come from the
 * environment (SW_S3_ACCESS_KEY and SW_S3_SECRET_KEY, else
 * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), never from the command
 * line where `ps` shows them;
 * they are sealed before they reach Redis and never printed. Redis and the
 * sealing key come from the global options (controller/cli/globals.h);
 * `store list`, `list` and `status` print with -o table, wide, json or yaml.
 */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "controller/cli/commands.h"
#include "controller/hub/jobrec.h"
#include "controller/cli/output.h"
#include "replication/rpo.h"
#include "replication/rule.h"
#include "store/redis.h"
#include "store/seal.h"

/* Keys of the options read as durations (the others are found by name). */
enum { OPT_WATCH = 1, OPT_RPO };

struct ctx {
    const struct sw_cli_globals *g;
    const struct sw_cli_args *a; /* the command line, parsed */
    redisContext *redis;
    struct sw_seal_key *key;
    uv_loop_t loop;
    struct sw_http *http;
    int loop_open;
};

/* The command running ("replicate list"), for messages, and whether its
 * failure is that no Redis was given (a usage error, as for every command). */
static const char *running = "replicate";
static int no_redis_given;

static int fail(const struct sw_error *e)
{
    fprintf(stderr, "spillctl %s: %s\n", running, e->msg[0] ? e->msg : sw_strerror(e->code));
    return no_redis_given ? SW_EXIT_USAGE : SW_EXIT_FAIL;
}

static int open_redis(struct ctx *c, struct sw_error *err)
{
    if (c->redis != NULL)
        return 0;
    char url[SW_CLI_REDIS_URL_MAX];
    int rc = sw_cli_redis_url(c->g, url, sizeof(url), err);
    no_redis_given = rc != 0 && c->g->redis_url == NULL;
    if (rc == 0)
        rc = sw_redis_sync_connect(url, 5000, &c->redis, err);
    memset(url, 0, sizeof(url)); /* it may hold the password */
    return rc;
}

static int open_key(struct ctx *c, struct sw_error *err)
{
    if (c->key != NULL)
        return 0;
    return sw_cli_secret_key(c->g, &c->key, err);
}

static int open_loop(struct ctx *c, struct sw_error *err)
{
    if (c->loop_open)
        return 0;
    if (uv_loop_init(&c->loop) != 0)
        return sw_error_set(err, SW_EIO, "cannot create an event loop");
    c->loop_open = 1;
    int rc = sw_http_new(&c->loop, &c->http);
    return rc ? sw_error_set(err, rc, "cannot start HTTP: %s", sw_strerror(rc)) : 0;
}

static void close_ctx(struct ctx *c)
{
    if (c->http != NULL)
        sw_http_free(c->http);
    if (c->loop_open) {
        uv_run(&c->loop, UV_RUN_DEFAULT);
        uv_loop_close(&c->loop);
    }
    if (c->redis != NULL)
        sw_redis_sync_free(c->redis);
    sw_seal_key_free(c->key);
}

/* The last value given for option --name, "" for a flag, or NULL. */
static const char *opt(const struct ctx *c, const char *name)
{
    for (size_t i = c->a->n; i-- > 0;)
        if (strcmp(c->a->item[i].opt->name, name) == 0)
            return c->a->item[i].value;
    return NULL;
}

static int flag(const struct ctx *c, const char *name)
{
    return opt(c, name) != NULL;
}

/* A bad value on the command line: a usage error. */
static int bad_usage(const struct sw_error *e)
{
    fprintf(stderr, "spillctl replicate: %s\n", e->msg);
    return SW_EXIT_USAGE;
}

static int num(const char *s, const char *what, double lo, double hi, double *out,
               struct sw_error *err)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || v < lo || v > hi)
        return sw_error_set(err, SW_EINVAL, "%s: \"%s\" is not a number in %g..%g", what, s, lo,
                            hi);
    *out = v;
    return 0;
}

/* Prints a listing with the -o format; takes ownership of items and rows. */
static int print_items(struct ctx *c, const char *what, cJSON *items, cJSON *rows,
                       const struct sw_cli_column *cols, size_t ncols)
{
    int rc =
        items != NULL ? sw_cli_print(stdout, c->g->output, items, rows, cols, ncols) : SW_ENOMEM;
    cJSON_Delete(items);
    cJSON_Delete(rows);
    if (rc != 0) {
        fprintf(stderr, "spillctl replicate %s: cannot print the list: %s\n", what,
                sw_strerror(rc));
        return SW_EXIT_FAIL;
    }
    return SW_EXIT_OK;
}

/* "STORE:BUCKET/PREFIX" */
static void loc_text(const struct sw_rule_loc *l, char *out, size_t len)
{
    snprintf(out, len, "%s:%s/%s", l->store, l->bucket, l->prefix);
}

/* ---- stores ---------------------------------------------------------------- */

static const struct sw_cli_column store_columns[] = {
    {"STORE", "name", 0},        {"REGION", "region", 0},
    {"ENDPOINT", "endpoint", 0}, {"ADDRESSING", "addressing", 1},
    {"CA FILE", "caFile", 1},    {"INSECURE TLS", "insecureTls", 1},
};

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/*
 * The credentials `store add` seals: spillway's own variables when set,
 * else AWS's standard ones. Temporary credentials (AWS_SESSION_TOKEN) are
 * refused: the hub would keep using them after they expire.
 */
static int s3_credentials(const char **ak, const char **sk)
{
    *ak = env("SW_S3_ACCESS_KEY");
    *sk = env("SW_S3_SECRET_KEY");
    if (*ak != NULL || *sk != NULL) {
        if (*ak != NULL && *sk != NULL)
            return 0;
        fprintf(stderr, "spillctl replicate store add: %s is set but %s is not; set both\n",
                *ak ? "SW_S3_ACCESS_KEY" : "SW_S3_SECRET_KEY",
                *ak ? "SW_S3_SECRET_KEY" : "SW_S3_ACCESS_KEY");
        return -1;
    }
    *ak = env("AWS_ACCESS_KEY_ID");
    *sk = env("AWS_SECRET_ACCESS_KEY");
    if (*ak == NULL || *sk == NULL) {
        fprintf(stderr, "spillctl replicate store add: set SW_S3_ACCESS_KEY and SW_S3_SECRET_KEY "
                        "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) in the environment "
                        "(they are sealed, never shown)\n");
        return -1;
    }
    if (env("AWS_SESSION_TOKEN") != NULL) {
        fprintf(stderr, "spillctl replicate store add: AWS_SESSION_TOKEN is set: these are "
                        "temporary credentials, which the hub would keep using after they "
                        "expire; give long-lived keys (unset AWS_SESSION_TOKEN)\n");
        return -1;
    }
    return 0;
}

static int cmd_store(struct ctx *c, char **argv)
{
    struct sw_error err;
    sw_error_clear(&err);
    if (open_redis(c, &err) != 0)
        return fail(&err);
    if (strcmp(argv[1], "list") == 0) {
        char **names;
        size_t n;
        if (sw_names_list(c->redis, "sw:stores", &names, &n, &err) != 0)
            return fail(&err);
        if (open_key(c, &err) != 0) {
            sw_names_free(names, n);
            return fail(&err);
        }
        cJSON *items = cJSON_CreateArray();
        int rc = SW_EXIT_OK;
        for (size_t i = 0; items != NULL && i < n; i++) {
            struct sw_store_spec s;
            char *ak, *sk;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(items, o);
            if (sw_store_load(c->redis, c->key, names[i], &s, &ak, &sk, &err) != 0) {
                /* Listed with its error, and said on stderr too. */
                fprintf(stderr, "spillctl replicate store list: store %s: %s\n", names[i], err.msg);
                cJSON_AddStringToObject(o, "name", names[i]);
                cJSON_AddStringToObject(o, "error", err.msg);
                rc = SW_EXIT_FAIL;
                continue;
            }
            sw_seal_wipe_free(ak, strlen(ak));
            sw_seal_wipe_free(sk, strlen(sk));
            cJSON_AddStringToObject(o, "name", s.name);
            cJSON_AddStringToObject(o, "region", s.region);
            cJSON_AddStringToObject(o, "endpoint", s.endpoint);
            cJSON_AddStringToObject(o, "addressing", s.virtual_host ? "virtual-host" : "path");
            if (s.ca_file[0] != '\0')
                cJSON_AddStringToObject(o, "caFile", s.ca_file);
            else
                cJSON_AddNullToObject(o, "caFile");
            cJSON_AddBoolToObject(o, "insecureTls", s.insecure_tls);
        }
        sw_names_free(names, n);
        int prc = print_items(c, "store list", items, NULL, store_columns,
                              sizeof(store_columns) / sizeof(store_columns[0]));
        return prc != SW_EXIT_OK ? prc : rc;
    }
    if (strcmp(argv[1], "remove") == 0)
        return sw_store_remove(c->redis, argv[2], &err) ? fail(&err) : SW_EXIT_OK;
    struct sw_store_spec s;
    memset(&s, 0, sizeof(s));
    snprintf(s.name, sizeof(s.name), "%s", argv[2]);
    const char *ep = opt(c, "endpoint"), *region = opt(c, "region");
    const char *ca = opt(c, "ca-file");
    if (ep == NULL || region == NULL) {
        fprintf(stderr, "spillctl replicate store add: --endpoint and --region are required\n");
        return SW_EXIT_USAGE;
    }
    snprintf(s.endpoint, sizeof(s.endpoint), "%s", ep);
    snprintf(s.region, sizeof(s.region), "%s", region);
    snprintf(s.ca_file, sizeof(s.ca_file), "%s", ca ? ca : "");
    s.virtual_host = flag(c, "virtual-host");
    s.insecure_tls = flag(c, "insecure-tls");
    const char *ak, *sk;
    if (s3_credentials(&ak, &sk) != 0)
        return SW_EXIT_USAGE;
    if (open_key(c, &err) != 0 || sw_store_save(c->redis, c->key, &s, ak, sk, &err) != 0)
        return fail(&err);
    printf("store %s saved (credentials sealed)\n", s.name);
    return SW_EXIT_OK;
}

/* ---- rules ----------------------------------------------------------------- */

static int cmd_add(struct ctx *c, char **argv)
{
    struct sw_error err;
    sw_error_clear(&err);
    struct sw_rule_spec r;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", argv[1]);
    const char *from = opt(c, "from");
    if (from == NULL) {
        fprintf(stderr, "spillctl replicate add: --from STORE:BUCKET/PREFIX is required\n");
        return SW_EXIT_USAGE;
    }
    if (sw_rule_loc_parse(from, &r.source, &err) != 0)
        return bad_usage(&err);
    for (size_t i = 0; i < c->a->n; i++) {
        if (strcmp(c->a->item[i].opt->name, "to") != 0)
            continue;
        if (r.ntargets == SW_REPL_MAX_TARGETS) {
            fprintf(stderr, "spillctl replicate add: at most %d targets\n", SW_REPL_MAX_TARGETS);
            return SW_EXIT_USAGE;
        }
        if (sw_rule_loc_parse(c->a->item[i].value, &r.targets[r.ntargets], &err) != 0)
            return bad_usage(&err);
        r.ntargets++;
    }
    r.model_registry = flag(c, "model-registry");
    r.server_copy = flag(c, "server-copy");
    double v;
    const char *s;
    if ((s = opt(c, "concurrency")) != NULL) {
        if (num(s, "--concurrency", 1, 256, &v, &err) != 0)
            return bad_usage(&err);
        r.concurrency = (int)v;
    }
    if ((s = opt(c, "part-concurrency")) != NULL) {
        if (num(s, "--part-concurrency", 1, 64, &v, &err) != 0)
            return bad_usage(&err);
        r.part_concurrency = (int)v;
    }
    if ((s = opt(c, "part-size-mib")) != NULL) {
        if (num(s, "--part-size-mib", 5, 5120, &v, &err) != 0)
            return bad_usage(&err);
        r.part_size = (int64_t)v << 20;
    }
    if ((s = opt(c, "bandwidth-mbps")) != NULL) {
        if (num(s, "--bandwidth-mbps", 0, 1e6, &v, &err) != 0)
            return bad_usage(&err);
        r.bytes_per_s = v * 1e6;
    }
    const char *rpo_flag = opt(c, "rpo-objective") ? "rpo-objective" : "rpo-objective-seconds";
    if (opt(c, rpo_flag) != NULL) {
        v = sw_cli_arg_seconds(c->a, OPT_RPO, 0);
        if (v < 1 || v > 31536000) {
            fprintf(stderr, "spillctl replicate add: --%s: expected 1s to 365 days, got \"%s\"\n",
                    rpo_flag, opt(c, rpo_flag));
            return SW_EXIT_USAGE;
        }
        r.rpo_objective_s = v;
    }
    if (open_redis(c, &err) != 0 || open_key(c, &err) != 0 ||
        sw_rule_save(c->redis, c->key, &r, &err) != 0)
        return fail(&err);
    printf("rule %s saved: %s:%s/%s -> %zu target(s)\n", r.name, r.source.store, r.source.bucket,
           r.source.prefix, r.ntargets);
    return SW_EXIT_OK;
}

static const struct sw_cli_column rule_columns[] = {
    {"RULE", "name", 0},
    {"SOURCE", "source", 0},
    {"TARGETS", "targets", 0},
    {"MODEL REGISTRY", "modelRegistry", 0},
    {"SERVER COPY", "serverCopy", 1},
    {"CONCURRENCY", "concurrency", 1},
    {"PART CONCURRENCY", "partConcurrency", 1},
    {"PART SIZE", "partSizeBytes", 1},
    {"BANDWIDTH", "bandwidthBytesPerSecond", 1},
};

static int cmd_list(struct ctx *c)
{
    struct sw_error err;
    char **names;
    size_t n;
    if (open_redis(c, &err) != 0 || open_key(c, &err) != 0 ||
        sw_names_list(c->redis, "sw:repl:rules", &names, &n, &err))
        return fail(&err);
    cJSON *items = cJSON_CreateArray();
    int rc = SW_EXIT_OK;
    for (size_t i = 0; items != NULL && i < n; i++) {
        struct sw_rule_spec r;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(items, o);
        if (sw_rule_load(c->redis, c->key, names[i], &r, &err) != 0) {
            fprintf(stderr, "spillctl replicate list: rule %s: %s\n", names[i], err.msg);
            cJSON_AddStringToObject(o, "name", names[i]);
            cJSON_AddStringToObject(o, "error", err.msg);
            rc = SW_EXIT_FAIL;
            continue;
        }
        char loc[1200];
        loc_text(&r.source, loc, sizeof(loc));
        cJSON_AddStringToObject(o, "name", r.name);
        cJSON_AddStringToObject(o, "source", loc);
        cJSON *targets = cJSON_AddArrayToObject(o, "targets");
        for (size_t t = 0; targets != NULL && t < r.ntargets; t++) {
            loc_text(&r.targets[t], loc, sizeof(loc));
            cJSON_AddItemToArray(targets, cJSON_CreateString(loc));
        }
        cJSON_AddBoolToObject(o, "modelRegistry", r.model_registry);
        cJSON_AddBoolToObject(o, "serverCopy", r.server_copy);
        cJSON_AddNumberToObject(o, "concurrency", r.concurrency);
        cJSON_AddNumberToObject(o, "partConcurrency", r.part_concurrency);
        cJSON_AddNumberToObject(o, "partSizeBytes", (double)r.part_size);
        cJSON_AddNumberToObject(o, "bandwidthBytesPerSecond", r.bytes_per_s);
    }
    sw_names_free(names, n);
    int prc = print_items(c, "list", items, NULL, rule_columns,
                          sizeof(rule_columns) / sizeof(rule_columns[0]));
    return prc != SW_EXIT_OK ? prc : rc;
}

static int load_bound(struct ctx *c, const char *name, struct sw_rule_bound **b,
                      struct sw_error *err)
{
    struct sw_rule_spec spec;
    int rc = open_redis(c, err);
    if (rc == 0)
        rc = open_key(c, err);
    if (rc == 0)
        rc = sw_rule_load(c->redis, c->key, name, &spec, err);
    if (rc == 0)
        rc = open_loop(c, err);
    if (rc == 0)
        rc = sw_rule_bind(c->redis, c->key, &spec, &c->loop, c->http, b, err);
    return rc;
}

static int64_t get_int_pair(redisContext *r, const char *key, int64_t *second)
{
    redisReply *rep = redisCommand(r, "GET %s", key);
    int64_t a = 0, b = 0;
    if (rep != NULL && rep->type == REDIS_REPLY_STRING)
        sscanf(rep->str, "%" SCNd64 " %" SCNd64, &a, &b);
    if (rep)
        freeReplyObject(rep);
    *second = b;
    return a;
}

static int64_t hlen(redisContext *r, const char *key)
{
    redisReply *rep = redisCommand(r, "HLEN %s", key);
    int64_t n = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    if (rep)
        freeReplyObject(rep);
    return n;
}

static const struct sw_cli_column status_columns[] = {
    {"RULE", "rule", 0},
    {"TARGET", "target", 0},
    {"RPO", "rpo", 0},
    {"LAST RUN", "lastRun", 0},
    {"OPEN UPLOADS", "openUploads", 0},
    {"VERIFIED OBJECTS", "verifiedObjects", 0},
    {"LAST RUN AT", "lastRunAt", 1},
};

static int cmd_status(struct ctx *c, char **argv)
{
    struct sw_error err;
    if (open_redis(c, &err) != 0 || open_key(c, &err) != 0)
        return fail(&err);
    char **names = NULL;
    size_t n = 0;
    if (argv[1] != NULL) {
        names = sw_calloc(1, sizeof(char *));
        names[0] = sw_strdup(argv[1]);
        n = 1;
    } else if (sw_names_list(c->redis, "sw:repl:rules", &names, &n, &err) != 0) {
        return fail(&err);
    }
    int metrics = flag(c, "metrics");
    if (metrics && c->g->output_given) {
        fprintf(stderr, "spillctl replicate status: --metrics prints Prometheus text; it "
                        "takes no -o\n");
        sw_names_free(names, n);
        return SW_EXIT_USAGE;
    }
    cJSON *items = cJSON_CreateArray(), *rows = cJSON_CreateArray();
    struct sw_rpo_entry entries[256];
    char targets[256][SW_REPL_NAME_MAX];
    size_t ne = 0;
    int64_t now = sw_now_ms(sw_clock_system());
    int rc = SW_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        struct sw_rule_spec r;
        if (sw_rule_load(c->redis, c->key, names[i], &r, &err) != 0) {
            fprintf(stderr, "spillctl replicate: %s\n", err.msg);
            rc = SW_EXIT_FAIL;
            continue;
        }
        char k[256];
        snprintf(k, sizeof(k), "sw:repl:%s:uploads", r.name);
        int64_t open_uploads = hlen(c->redis, k);
        for (size_t t = 0; t < r.ntargets && ne < 256; t++) {
            snprintf(k, sizeof(k), "sw:repl:%s:rpo:%s", r.name, r.targets[t].store);
            int64_t last = 0;
            int64_t oldest = get_int_pair(c->redis, k, &last);
            snprintf(targets[ne], sizeof(targets[ne]), "%s", r.targets[t].store);
            entries[ne] = (struct sw_rpo_entry){names[i], targets[ne], oldest, last};
            double rpo = sw_rpo_seconds(&entries[ne], now);
            snprintf(k, sizeof(k), "sw:repl:%s:done:%s", r.name, r.targets[t].store);
            if (!metrics && items != NULL && rows != NULL) {
                char rs[32], ls[32], at[32] = "-";
                if (rpo < 0)
                    snprintf(rs, sizeof(rs), "never run");
                else
                    snprintf(rs, sizeof(rs), "%.0fs", rpo);
                if (last > 0) {
                    snprintf(ls, sizeof(ls), "%" PRId64 "s ago", (now - last) / 1000);
                    time_t secs = (time_t)(last / 1000);
                    struct tm tm;
                    if (gmtime_r(&secs, &tm))
                        strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
                } else {
                    snprintf(ls, sizeof(ls), "-");
                }
                int64_t verified = hlen(c->redis, k);
                cJSON *o = cJSON_CreateObject(), *row = cJSON_CreateObject();
                cJSON_AddItemToArray(items, o);
                cJSON_AddItemToArray(rows, row);
                cJSON_AddStringToObject(o, "rule", r.name);
                cJSON_AddStringToObject(o, "target", r.targets[t].store);
                if (rpo < 0)
                    cJSON_AddNullToObject(o, "rpoSeconds");
                else
                    cJSON_AddNumberToObject(o, "rpoSeconds", floor(rpo));
                if (last > 0)
                    cJSON_AddStringToObject(o, "lastRunAt", at);
                else
                    cJSON_AddNullToObject(o, "lastRunAt");
                cJSON_AddNumberToObject(o, "openUploads", (double)open_uploads);
                cJSON_AddNumberToObject(o, "verifiedObjects", (double)verified);
                cJSON_AddStringToObject(row, "rule", r.name);
                cJSON_AddStringToObject(row, "target", r.targets[t].store);
                cJSON_AddStringToObject(row, "rpo", rs);
                cJSON_AddStringToObject(row, "lastRun", ls);
                cJSON_AddNumberToObject(row, "openUploads", (double)open_uploads);
                cJSON_AddNumberToObject(row, "verifiedObjects", (double)verified);
                cJSON_AddStringToObject(row, "lastRunAt", at);
            }
            ne++;
        }
    }
    if (metrics) {
        struct sw_buf b;
        sw_buf_init(&b, 1 << 20);
        if (sw_rpo_metrics(entries, ne, now, &b) == 0)
            fputs(b.data, stdout);
        sw_buf_free(&b);
        cJSON_Delete(items);
        cJSON_Delete(rows);
    } else {
        int prc = print_items(c, "status", items, rows, status_columns,
                              sizeof(status_columns) / sizeof(status_columns[0]));
        if (prc != SW_EXIT_OK)
            rc = prc;
    }
    sw_names_free(names, n);
    return rc;
}

/* ---- run ------------------------------------------------------------------- */

static volatile sig_atomic_t stop_watch;

static void on_signal(int sig)
{
    (void)sig;
    stop_watch = 1;
}

enum progress_mode { PROGRESS_NONE, PROGRESS_PLAIN, PROGRESS_BAR };

struct progress_ctx {
    enum progress_mode mode;
    int64_t start_ms;
    int64_t last_plain_ms;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_progress(const struct sw_repl_progress *p, void *ctx)
{
    struct progress_ctx *pc = ctx;
    int64_t now = mono_ms();
    double secs = (double)(now - pc->start_ms) / 1000.0;
    double mbps = secs > 0 ? (double)p->bytes_done / 1e6 / secs : 0;
    double frac = p->bytes_total > 0     ? (double)p->bytes_done / (double)p->bytes_total
                  : p->objects_total > 0 ? (double)p->objects_done / (double)p->objects_total
                                         : 1.0;
    if (frac > 1)
        frac = 1;
    if (pc->mode == PROGRESS_BAR) {
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %5.1f%%  %" PRId64 "/%" PRId64 " objects  %.1f/%.1f MB  %.1f MB/s ",
                bar, frac * 100, p->objects_done, p->objects_total, (double)p->bytes_done / 1e6,
                (double)p->bytes_total / 1e6, mbps);
        fflush(stderr);
    } else if (pc->mode == PROGRESS_PLAIN &&
               (now - pc->last_plain_ms >= 1000 || p->objects_done == p->objects_total)) {
        pc->last_plain_ms = now;
        fprintf(stderr,
                "progress objects=%" PRId64 "/%" PRId64 " bytes=%" PRId64 "/%" PRId64
                " mbps=%.1f\n",
                p->objects_done, p->objects_total, p->bytes_done, p->bytes_total, mbps);
    }
}

static int run_once(struct ctx *c, struct sw_rule_bound *b, enum progress_mode mode)
{
    struct progress_ctx pc = {mode, mono_ms(), 0};
    struct sw_repl_stats st;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = sw_repl_run_once(&b->rule, c->redis, mode == PROGRESS_NONE ? NULL : on_progress, &pc,
                              &st, &err);
    if (mode == PROGRESS_BAR)
        fprintf(stderr, "\n");
    double secs = (double)st.elapsed_ms / 1000.0;
    printf("rule %s: listed %" PRId64 ", copied %" PRId64 ", skipped %" PRId64 ", failed %" PRId64
           ", %.1f MB in %.1f s (%.1f MB/s), aborted %" PRId64 " stale upload(s)\n",
           b->rule.name, st.listed, st.copied, st.skipped, st.failed, (double)st.bytes_copied / 1e6,
           secs, secs > 0 ? (double)st.bytes_copied / 1e6 / secs : 0.0, st.aborted_uploads);
    for (size_t t = 0; t < b->rule.ntargets; t++)
        printf("  target %s: RPO %.0f s\n", b->rule.targets[t].name, (double)st.rpo_ms[t] / 1000.0);
    if (rc != 0)
        return fail(&err);
    return SW_EXIT_OK;
}

static int cmd_run(struct ctx *c, char **argv)
{
    struct sw_error err;
    int once = flag(c, "once");
    const char *watch = opt(c, "watch");
    if (!once && watch == NULL) {
        fprintf(stderr, "spillctl replicate run: --once or --watch DURATION is required\n");
        return SW_EXIT_USAGE;
    }
    const char *pm = opt(c, "progress");
    enum progress_mode mode = isatty(2) ? PROGRESS_BAR : PROGRESS_PLAIN;
    if (pm != NULL) {
        if (strcmp(pm, "bar") == 0)
            mode = PROGRESS_BAR;
        else if (strcmp(pm, "plain") == 0)
            mode = PROGRESS_PLAIN;
        else if (strcmp(pm, "none") == 0)
            mode = PROGRESS_NONE;
        else if (strcmp(pm, "auto") != 0) {
            fprintf(stderr, "spillctl replicate run: --progress auto|bar|plain|none\n");
            return SW_EXIT_USAGE;
        }
    }
    struct sw_rule_bound *b;
    if (load_bound(c, argv[1], &b, &err) != 0)
        return fail(&err);
    /* The leading hub runs every rule (controller/hub/rules.c) and says so
     * in Redis while it does: a second runner is refused unless forced. */
    redisReply *owner = redisCommand(c->redis, "GET %s%s", SW_KEY_RULE_OWNER, argv[1]);
    if (owner != NULL && owner->type == REDIS_REPLY_STRING && !flag(c, "force")) {
        fprintf(stderr,
                "spillctl replicate run: rule %s is run by the hub (%s); running it here too "
                "would race it: stop here, or pass --force\n",
                argv[1], owner->str);
        freeReplyObject(owner);
        sw_rule_bound_free(b);
        return SW_EXIT_FAIL;
    }
    if (owner)
        freeReplyObject(owner);
    int rc;
    if (once) {
        rc = run_once(c, b, mode);
    } else {
        double every = sw_cli_arg_seconds(c->a, OPT_WATCH, 0);
        if (every < 1 || every > 86400) {
            fprintf(stderr, "spillctl replicate run: --watch: expected 1s to 24h, got \"%s\"\n",
                    watch);
            sw_rule_bound_free(b);
            return SW_EXIT_USAGE;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        /* Model registries and checkpoints: replicate continuously; a failed
         * run is reported and retried at the next tick. */
        rc = SW_EXIT_OK;
        while (!stop_watch) {
            rc = run_once(c, b, mode == PROGRESS_BAR ? PROGRESS_NONE : mode);
            fflush(stdout);
            for (int i = 0; i < (int)(every * 10) && !stop_watch; i++)
                usleep(100000);
        }
    }
    sw_rule_bound_free(b);
    return rc;
}

/* Re-reads every object the rule covers on every target and checks that
 * its bytes hash to the sw-sha256 it carries and to the source's. */
static int cmd_verify(struct ctx *c, char **argv)
{
    struct sw_error err;
    struct sw_rule_bound *b;
    if (load_bound(c, argv[1], &b, &err) != 0)
        return fail(&err);
    const struct sw_repl_rule *r = &b->rule;
    int64_t checked = 0, bad = 0, missing = 0, open_up = 0;
    char *token = NULL;
    for (;;) {
        struct sw_s3_list l;
        if (sw_s3_list_sync(r->src, r->bucket, r->prefix, token, &l, &err) != 0) {
            sw_free(token);
            sw_rule_bound_free(b);
            return fail(&err);
        }
        sw_free(token);
        token = NULL;
        for (size_t i = 0; i < l.n; i++) {
            char *sdata;
            size_t slen;
            size_t cap = (size_t)l.objects[i].size + 1;
            if (sw_s3_get_sync(r->src, r->bucket, l.objects[i].key, cap, &sdata, &slen, &err)) {
                fprintf(stderr, "verify: %s\n", err.msg);
                bad++;
                continue;
            }
            char ssha[65];
            sw_sha256_hex(sdata, slen, ssha);
            sw_free(sdata);
            for (size_t t = 0; t < r->ntargets; t++) {
                const struct sw_repl_target *tg = &r->targets[t];
                char dk[2048];
                snprintf(dk, sizeof(dk), "%s%s", tg->prefix, l.objects[i].key + strlen(r->prefix));
                char *d;
                size_t dl;
                struct sw_s3_head h;
                if (sw_s3_head_sync(tg->s3, tg->bucket, dk, &h, &err) != 0 ||
                    sw_s3_get_sync(tg->s3, tg->bucket, dk, cap, &d, &dl, &err) != 0) {
                    printf("MISSING %s:%s/%s (%s)\n", tg->name, tg->bucket, dk, err.msg);
                    missing++;
                    continue;
                }
                char dsha[65];
                sw_sha256_hex(d, dl, dsha);
                sw_free(d);
                checked++;
                if (strcmp(dsha, ssha) != 0 || strcmp(h.sha256, dsha) != 0) {
                    printf("MISMATCH %s:%s/%s bytes=%s metadata=%s source=%s\n", tg->name,
                           tg->bucket, dk, dsha, h.sha256[0] ? h.sha256 : "(none)", ssha);
                    bad++;
                }
            }
        }
        if (l.truncated) {
            token = l.next_token;
            l.next_token = NULL;
        }
        sw_s3_list_free(&l);
        if (token == NULL)
            break;
    }
    for (size_t t = 0; t < r->ntargets; t++) {
        struct sw_s3_uploads ups;
        if (sw_s3_list_uploads_sync(r->targets[t].s3, r->targets[t].bucket, r->targets[t].prefix,
                                    &ups, &err) == 0) {
            for (size_t i = 0; i < ups.n; i++)
                printf("OPEN-UPLOAD %s:%s/%s upload=%s\n", r->targets[t].name, r->targets[t].bucket,
                       ups.uploads[i].key, ups.uploads[i].upload_id);
            open_up += (int64_t)ups.n;
            sw_s3_uploads_free(&ups);
        }
    }
    printf("verify %s: %" PRId64 " object copies checked byte for byte, %" PRId64
           " mismatched, %" PRId64 " missing, %" PRId64 " open multipart uploads\n",
           r->name, checked, bad, missing, open_up);
    sw_rule_bound_free(b);
    return bad || missing || open_up ? SW_EXIT_FAIL : SW_EXIT_OK;
}

static int cmd_estimate(struct ctx *c, char **argv)
{
    struct sw_error err;
    double bw = 100e6;
    const char *s = opt(c, "bandwidth-mbps");
    if (s != NULL) {
        if (num(s, "--bandwidth-mbps", 0.001, 1e6, &bw, &err) != 0)
            return bad_usage(&err);
        bw *= 1e6;
    }
    struct sw_rule_bound *b;
    if (load_bound(c, argv[1], &b, &err) != 0)
        return fail(&err);
    if (b->rule.bytes_per_s > 0 && b->rule.bytes_per_s < bw)
        bw = b->rule.bytes_per_s;
    int64_t objs, bytes;
    double secs;
    int rc = sw_repl_estimate(&b->rule, c->redis, bw, &objs, &bytes, &secs, &err);
    sw_rule_bound_free(b);
    if (rc != 0)
        return fail(&err);
    printf("rule %s: %" PRId64 " objects, %" PRId64 " bytes to copy, about %.1f s at %.1f MB/s\n",
           argv[1], objs, bytes, secs, bw / 1e6);
    return SW_EXIT_OK;
}

/*
 * Runs `replicate WORDS...`: `words` are the command's own words after
 * "replicate" ("store", "add"), then its positional arguments follow, as
 * the cmd_* functions read them (argv[0] the last word).
 */
static int run(const struct sw_cli_globals *g, const struct sw_cli_args *a, const char *what,
               int (*cmd)(struct ctx *c, char **argv), const char *w0, const char *w1, int listing)
{
    struct ctx c;
    memset(&c, 0, sizeof(c));
    c.g = g;
    c.a = a;
    struct sw_error err;
    char name[64];
    snprintf(name, sizeof(name), "spillctl replicate %s", what);
    running = a->spec->path;
    /* -o applies to the listings only. */
    if (!listing && sw_cli_no_output_format(g, name, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    char *argv[SW_CLI_ARGS_MAX + 2];
    int argc = 0;
    argv[argc++] = (char *)w0;
    if (w1 != NULL)
        argv[argc++] = (char *)w1;
    for (int i = 0; i < a->npos; i++)
        argv[argc++] = (char *)a->pos[i];
    argv[argc] = NULL;
    int rc = cmd(&c, argv);
    close_ctx(&c);
    return rc;
}

static int cmd_remove(struct ctx *c, char **argv)
{
    struct sw_error err;
    return open_redis(c, &err) || sw_rule_remove(c->redis, argv[1], &err) ? fail(&err) : SW_EXIT_OK;
}

/* ---- signing records written before records were signed ------------------ */

/*
 * `replicate sign`: every store and rule record without a MAC is printed
 * (what it directs the hub's credentials to) and signed with the current
 * key. A record that carries a MAC which does not verify is never signed:
 * it was changed outside spillctl, or comes from another key, and is
 * written again with `replicate store add` or `replicate add` instead.
 */
static int cmd_sign(struct ctx *c, char **argv)
{
    (void)argv;
    struct sw_error err;
    sw_error_clear(&err);
    int dry = flag(c, "dry-run");
    char **snames = NULL, **rnames = NULL;
    size_t ns = 0, nr = 0;
    if (open_redis(c, &err) != 0 || open_key(c, &err) != 0 ||
        sw_names_list(c->redis, "sw:stores", &snames, &ns, &err) != 0 ||
        sw_names_list(c->redis, "sw:repl:rules", &rnames, &nr, &err) != 0) {
        sw_names_free(snames, ns);
        return fail(&err);
    }
    size_t signed_now = 0, already = 0, bad = 0;
    const char *verb = dry ? "would be signed" : "signed";
    for (size_t i = 0; i < ns; i++) {
        struct sw_store_spec s;
        char *ak = NULL, *sk = NULL;
        int was_unsigned = 0;
        if (sw_store_read(c->redis, c->key, snames[i], &was_unsigned, &s, &ak, &sk, &err) != 0) {
            fprintf(stderr,
                    "spillctl replicate sign: %s (not signed: write it again with "
                    "`spillctl replicate store add`)\n",
                    err.msg);
            bad++;
            continue;
        }
        if (!was_unsigned) {
            printf("store %s: already signed\n", s.name);
            already++;
        } else {
            int rc = dry ? 0 : sw_store_save(c->redis, c->key, &s, ak, sk, &err);
            if (rc != 0) {
                fprintf(stderr, "spillctl replicate sign: store %s: %s\n", s.name, err.msg);
                bad++;
            } else {
                printf("store %s: %s: endpoint %s, region %s, ca_file %s, insecure_tls %s, %s "
                       "addressing\n",
                       s.name, verb, s.endpoint, s.region, s.ca_file[0] ? s.ca_file : "(none)",
                       s.insecure_tls ? "true" : "false", s.virtual_host ? "virtual-host" : "path");
                signed_now++;
            }
        }
        sw_seal_wipe_free(ak, strlen(ak));
        sw_seal_wipe_free(sk, strlen(sk));
    }
    for (size_t i = 0; i < nr; i++) {
        struct sw_rule_spec r;
        int was_unsigned = 0;
        if (sw_rule_read(c->redis, c->key, rnames[i], &was_unsigned, &r, &err) != 0) {
            fprintf(stderr,
                    "spillctl replicate sign: %s (not signed: write it again with "
                    "`spillctl replicate add`)\n",
                    err.msg);
            bad++;
            continue;
        }
        if (!was_unsigned) {
            printf("rule %s: already signed\n", r.name);
            already++;
            continue;
        }
        if (!dry && sw_rule_save(c->redis, c->key, &r, &err) != 0) {
            fprintf(stderr, "spillctl replicate sign: rule %s: %s\n", r.name, err.msg);
            bad++;
            continue;
        }
        char loc[1200];
        loc_text(&r.source, loc, sizeof(loc));
        printf("rule %s: %s: %s ->", r.name, verb, loc);
        for (size_t t = 0; t < r.ntargets; t++) {
            loc_text(&r.targets[t], loc, sizeof(loc));
            printf(" %s", loc);
        }
        printf("\n");
        signed_now++;
    }
    sw_names_free(snames, ns);
    sw_names_free(rnames, nr);
    printf("%zu record%s %s, %zu already signed, %zu refused\n", signed_now,
           signed_now == 1 ? "" : "s", verb, already, bad);
    return bad > 0 ? SW_EXIT_FAIL : SW_EXIT_OK;
}

static int run_sign(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "sign", cmd_sign, "sign", NULL, 0);
}

static int cmd_list_rules(struct ctx *c, char **argv)
{
    (void)argv;
    return cmd_list(c);
}

static int run_store_add(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "store add", cmd_store, "store", "add", 0);
}

static int run_store_list(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "store list", cmd_store, "store", "list", 1);
}

static int run_store_remove(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "store remove", cmd_store, "store", "remove", 0);
}

static int run_add(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "add", cmd_add, "add", NULL, 0);
}

static int run_list(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "list", cmd_list_rules, "list", NULL, 1);
}

static int run_remove(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "remove", cmd_remove, "remove", NULL, 0);
}

static int run_status(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "status", cmd_status, "status", NULL, 1);
}

static int run_run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "run", cmd_run, "run", NULL, 0);
}

static int run_verify(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "verify", cmd_verify, "verify", NULL, 0);
}

static int run_estimate(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "estimate", cmd_estimate, "estimate", NULL, 0);
}

static const struct sw_cli_opt store_add_opts[] = {
    {"endpoint", 0, SW_CLI_VALUE, 0, "URL"},   {"region", 0, SW_CLI_VALUE, 0, "REGION"},
    {"virtual-host", 0, SW_CLI_FLAG, 0, NULL}, {"ca-file", 0, SW_CLI_VALUE, 0, "FILE"},
    {"insecure-tls", 0, SW_CLI_FLAG, 0, NULL},
};
static const struct sw_cli_opt add_opts[] = {
    {"from", 0, SW_CLI_VALUE, 0, "STORE:BUCKET/PREFIX"},
    {"to", 0, SW_CLI_VALUE, 0, "STORE:BUCKET/PREFIX"},
    {"model-registry", 0, SW_CLI_FLAG, 0, NULL},
    {"server-copy", 0, SW_CLI_FLAG, 0, NULL},
    {"concurrency", 0, SW_CLI_VALUE, 0, "N"},
    {"part-concurrency", 0, SW_CLI_VALUE, 0, "N"},
    {"part-size-mib", 0, SW_CLI_VALUE, 0, "N"},
    {"bandwidth-mbps", 0, SW_CLI_VALUE, 0, "N"},
    {"rpo-objective", 0, SW_CLI_DURATION, OPT_RPO, "DURATION"},
    {"rpo-objective-seconds", 0, SW_CLI_DURATION, OPT_RPO, "DURATION"},
};
static const struct sw_cli_opt status_opts[] = {
    {"metrics", 0, SW_CLI_FLAG, 0, NULL},
};
static const struct sw_cli_opt run_opts[] = {
    {"once", 0, SW_CLI_FLAG, 0, NULL},
    {"watch", 0, SW_CLI_DURATION, OPT_WATCH, "DURATION"},
    {"progress", 0, SW_CLI_VALUE, 0, "auto|bar|plain|none"},
    {"force", 0, SW_CLI_FLAG, 0, NULL},
};
static const struct sw_cli_opt sign_opts[] = {
    {"dry-run", 0, SW_CLI_FLAG, 0, NULL},
};
static const struct sw_cli_opt estimate_opts[] = {
    {"bandwidth-mbps", 0, SW_CLI_VALUE, 0, "N"},
};
#define NOPTS(t) (sizeof(t) / sizeof(t[0]))
#define CREDS_HELP                                                                                 \
    "Credentials come from the environment, never the command line: SW_S3_ACCESS_KEY\n"            \
    "and SW_S3_SECRET_KEY when set, else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.\n"           \
    "Temporary credentials (AWS_SESSION_TOKEN set) are refused: the hub would keep\n"              \
    "using them after they expire. They are sealed with the global --secret-key-file\n"            \
    "before they reach Redis, and never printed.\n"

const struct sw_cli_spec sw_cli_replicate_specs[] = {
    {.path = "replicate store add",
     .summary = "register an S3 object store (credentials sealed)",
     .help =
         "Usage: spillctl replicate store add NAME --endpoint URL --region R [--virtual-host]\n"
         "                                    [--ca-file FILE] [--insecure-tls]\n"
         "\n" CREDS_HELP "\n"
         "Options:\n"
         "  --endpoint URL     the store's S3 endpoint, e.g. https://s3.us-east-1.amazonaws.com\n"
         "  --region REGION    the region requests are signed for (SigV4)\n"
         "  --virtual-host     bucket.host addressing instead of host/bucket\n"
         "  --ca-file FILE     trust this CA bundle for the endpoint's TLS\n"
         "  --insecure-tls     do not verify the endpoint's certificate (tests only)\n",
     .examples =
         "  AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... spillctl replicate store add \\\n"
         "      aws-east --endpoint https://s3.us-east-1.amazonaws.com --region us-east-1\n",
     .opts = store_add_opts,
     .nopts = NOPTS(store_add_opts),
     .min_pos = 1,
     .max_pos = 1,
     .run = run_store_add},
    {.path = "replicate store list",
     .formats = SW_CLI_FMT_LIST,
     .summary = "registered object stores",
     .help = "Usage: spillctl replicate store list [-o table|wide|json|yaml|name]\n"
             "\n"
             "The registered object stores: name, region, endpoint (never credentials).\n",
     .examples = "  spillctl replicate store list -o wide\n",
     .run = run_store_list},
    {.path = "replicate store remove",
     .summary = "unregister an object store",
     .help = "Usage: spillctl replicate store remove NAME\n",
     .examples = "  spillctl replicate store remove aws-east\n",
     .min_pos = 1,
     .max_pos = 1,
     .run = run_store_remove},
    {.path = "replicate add",
     .summary = "add or replace a replication rule",
     .help =
         "Usage: spillctl replicate add RULE --from STORE:BUCKET/PREFIX --to STORE:BUCKET/PREFIX\n"
         "                              [--to ...] [options]\n"
         "\n"
         "Options:\n"
         "  --from STORE:BUCKET/PREFIX  the source\n"
         "  --to STORE:BUCKET/PREFIX    a target, repeatable\n"
         "  --model-registry            copy a model registry's versions whole, in order\n"
         "  --server-copy               copy inside one store server-side (CopyObject)\n"
         "  --concurrency N             objects copied at once (1-256)\n"
         "  --part-concurrency N        parts of one object copied at once (1-64)\n"
         "  --part-size-mib N           multipart part size in MiB (5-5120)\n"
         "  --bandwidth-mbps N          cap on the rule's bandwidth, in MB/s (0: none)\n"
         "  --rpo-objective DURATION    the RPO objective the rule is held to (1s-365 days)\n"
         "  --rpo-objective-seconds DURATION  the same, its older name\n",
     .examples = "  spillctl replicate add models --from onprem:models/ --to aws-east:models/ \\\n"
                 "      --model-registry --rpo-objective 15m\n",
     .opts = add_opts,
     .nopts = NOPTS(add_opts),
     .min_pos = 1,
     .max_pos = 1,
     .run = run_add},
    {.path = "replicate list",
     .formats = SW_CLI_FMT_LIST,
     .summary = "the replication rules",
     .help = "Usage: spillctl replicate list [-o table|wide|json|yaml|name]\n",
     .examples = "  spillctl replicate list -o wide\n",
     .run = run_list},
    {.path = "replicate remove",
     .summary = "remove a replication rule",
     .help = "Usage: spillctl replicate remove RULE\n",
     .examples = "  spillctl replicate remove models\n",
     .min_pos = 1,
     .max_pos = 1,
     .run = run_remove},
    {.path = "replicate status",
     .formats = SW_CLI_FMT_LIST,
     .summary = "RPO per target and open uploads",
     .help = "Usage: spillctl replicate status [RULE] [--metrics] [-o table|wide|json|yaml]\n"
             "\n"
             "Each rule's RPO per target, when it last ran, what is verified, open multipart\n"
             "uploads.\n"
             "\n"
             "Options:\n"
             "  --metrics          print Prometheus text instead (takes no -o)\n",
     .examples = "  spillctl replicate status\n"
                 "  spillctl replicate status models --metrics\n",
     .opts = status_opts,
     .nopts = NOPTS(status_opts),
     .max_pos = 1,
     .run = run_status},
    {.path = "replicate run",
     .summary = "run a rule once, or again and again",
     .help = "Usage: spillctl replicate run RULE (--once | --watch DURATION)\n"
             "                              [--progress auto|bar|plain|none] [--force]\n"
             "\n"
             "Options:\n"
             "  --once                      one pass, then exit\n"
             "  --watch DURATION            a pass every DURATION (1s-24h) until Ctrl-C\n"
             "  --progress auto|bar|plain|none  how progress is shown (auto: a bar on a\n"
             "                              terminal)\n"
             "  --force                     run even when the hub runs the rule\n",
     .examples = "  spillctl replicate run models --once\n"
                 "  spillctl replicate run checkpoints --watch 5m --progress plain\n",
     .opts = run_opts,
     .nopts = NOPTS(run_opts),
     .min_pos = 1,
     .max_pos = 1,
     .run = run_run},
    {.path = "replicate verify",
     .summary = "re-read every target object and check its SHA-256",
     .help = "Usage: spillctl replicate verify RULE\n"
             "\n"
             "Re-reads every object the rule covers on every target and checks that its\n"
             "bytes hash to the sw-sha256 it carries and to the source's. Exit 1 when any\n"
             "is mismatched or missing.\n",
     .examples = "  spillctl replicate verify models\n",
     .min_pos = 1,
     .max_pos = 1,
     .run = run_verify},
    {.path = "replicate estimate",
     .summary = "bytes and seconds still to copy",
     .help = "Usage: spillctl replicate estimate RULE [--bandwidth-mbps N]\n"
             "\n"
             "Options:\n"
             "  --bandwidth-mbps N  the bandwidth to estimate with, in MB/s (default 100)\n",
     .examples = "  spillctl replicate estimate models --bandwidth-mbps 250\n",
     .opts = estimate_opts,
     .nopts = NOPTS(estimate_opts),
     .min_pos = 1,
     .max_pos = 1,
     .run = run_estimate},
    {.path = "replicate sign",
     .summary = "sign store and rule records written before records were signed",
     .help = "Usage: spillctl replicate sign [--dry-run]\n"
             "\n"
             "Store and rule records direct the hub's S3 credentials (where its signed\n"
             "requests go, what it copies with them), so each carries a MAC under the\n"
             "sealing key, bound to its name; the hub refuses one without a MAC or whose\n"
             "MAC does not verify. Records written before spillway signed them have none:\n"
             "this prints each such record (endpoint, ca_file, insecure_tls; a rule's\n"
             "source and targets) and signs it with the current key. Check the list with\n"
             "--dry-run first: signing vouches for what the record says now. A record whose\n"
             "MAC does not verify is never signed here (it was changed outside spillctl or\n"
             "comes from another key): write it again with `replicate store add` or\n"
             "`replicate add`. Exit 1 when any record was refused.\n"
             "\n"
             "Options:\n"
             "  --dry-run          print what would be signed, write nothing\n",
     .examples = "  spillctl replicate sign --dry-run\n"
                 "  spillctl replicate sign\n",
     .opts = sign_opts,
     .nopts = NOPTS(sign_opts),
     .run = run_sign},
};
const size_t sw_cli_replicate_nspecs = NOPTS(sw_cli_replicate_specs);
