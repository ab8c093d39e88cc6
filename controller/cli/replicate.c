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
 *   spillctl replicate run RULE (--once | --watch SECONDS) [--progress auto|bar|plain|none]
 *                              [--force]   (a rule the hub runs is refused without it)
 *   spillctl replicate verify RULE
 *   spillctl replicate estimate RULE [--bandwidth-mbps N]
 *
 * Store credentials come from the environment (SW_S3_ACCESS_KEY,
 * SW_S3_SECRET_KEY), never from the command line where `ps` shows them;
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

struct ctx {
    const struct sw_cli_globals *g;
    redisContext *redis;
    struct sw_seal_key *key;
    uv_loop_t loop;
    struct sw_http *http;
    int loop_open;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: spillctl replicate SUBCOMMAND [ARGS]\n\n"
            "  store add NAME --endpoint URL --region R [--virtual-host] [--ca-file F]\n"
            "                 [--insecure-tls]     (credentials from SW_S3_ACCESS_KEY and\n"
            "                                       SW_S3_SECRET_KEY; stored sealed)\n"
            "  store list | store remove NAME      (list: -o table|wide|json|yaml)\n"
            "  add RULE --from STORE:BUCKET/PREFIX --to STORE:BUCKET/PREFIX [--to ...]\n"
            "      [--model-registry] [--server-copy] [--concurrency N] [--part-concurrency N]\n"
            "      [--part-size-mib N] [--bandwidth-mbps N] [--rpo-objective-seconds N]\n"
            "  list | remove RULE                  (list: -o table|wide|json|yaml)\n"
            "  status [RULE] [--metrics]           RPO per target, open uploads (-o ...);\n"
            "                                      --metrics: Prometheus text instead\n"
            "  run RULE --once | --watch SECONDS [--progress auto|bar|plain|none] [--force]\n"
            "                                      (--force: even when the hub runs the rule)\n"
            "  verify RULE                          re-read every target object, check SHA-256\n"
            "  estimate RULE [--bandwidth-mbps N]   bytes and seconds still to copy\n\n"
            "Redis (--redis) and the sealing key (--secret-key-file; --key-file is a\n"
            "deprecated alias) are global options.\n" SW_CLI_GLOBAL_HELP);
}

static int fail(const struct sw_error *e)
{
    fprintf(stderr, "spillctl replicate: %s\n", e->msg[0] ? e->msg : sw_strerror(e->code));
    return SW_EXIT_FAIL;
}

static int open_redis(struct ctx *c, struct sw_error *err)
{
    if (c->redis != NULL)
        return 0;
    char url[SW_CLI_REDIS_URL_MAX];
    int rc = sw_cli_redis_url(c->g, url, sizeof(url), err);
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

/* Finds "--name VALUE" in argv; returns the value or NULL. */
static const char *opt(int argc, char **argv, const char *name)
{
    for (int i = 0; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return NULL;
}

static int flag(int argc, char **argv, const char *name)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
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

static int cmd_store(struct ctx *c, int argc, char **argv)
{
    struct sw_error err;
    sw_error_clear(&err);
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
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
    if (argc < 3) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "remove") == 0)
        return sw_store_remove(c->redis, argv[2], &err) ? fail(&err) : SW_EXIT_OK;
    if (strcmp(argv[1], "add") != 0) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    struct sw_store_spec s;
    memset(&s, 0, sizeof(s));
    snprintf(s.name, sizeof(s.name), "%s", argv[2]);
    const char *ep = opt(argc, argv, "--endpoint"), *region = opt(argc, argv, "--region");
    const char *ca = opt(argc, argv, "--ca-file");
    if (ep == NULL || region == NULL) {
        fprintf(stderr, "spillctl replicate store add: --endpoint and --region are required\n");
        return SW_EXIT_USAGE;
    }
    snprintf(s.endpoint, sizeof(s.endpoint), "%s", ep);
    snprintf(s.region, sizeof(s.region), "%s", region);
    snprintf(s.ca_file, sizeof(s.ca_file), "%s", ca ? ca : "");
    s.virtual_host = flag(argc, argv, "--virtual-host");
    s.insecure_tls = flag(argc, argv, "--insecure-tls");
    const char *ak = getenv("SW_S3_ACCESS_KEY"), *sk = getenv("SW_S3_SECRET_KEY");
    if (ak == NULL || sk == NULL || !*ak || !*sk) {
        fprintf(stderr, "spillctl replicate store add: set SW_S3_ACCESS_KEY and "
                        "SW_S3_SECRET_KEY in the environment (they are sealed, never shown)\n");
        return SW_EXIT_USAGE;
    }
    if (open_key(c, &err) != 0 || sw_store_save(c->redis, c->key, &s, ak, sk, &err) != 0)
        return fail(&err);
    printf("store %s saved (credentials sealed)\n", s.name);
    return SW_EXIT_OK;
}

/* ---- rules ----------------------------------------------------------------- */

static int cmd_add(struct ctx *c, int argc, char **argv)
{
    struct sw_error err;
    sw_error_clear(&err);
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    struct sw_rule_spec r;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", argv[1]);
    const char *from = opt(argc, argv, "--from");
    if (from == NULL) {
        fprintf(stderr, "spillctl replicate add: --from STORE:BUCKET/PREFIX is required\n");
        return SW_EXIT_USAGE;
    }
    if (sw_rule_loc_parse(from, &r.source, &err) != 0)
        return fail(&err);
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--to") != 0)
            continue;
        if (r.ntargets == SW_REPL_MAX_TARGETS) {
            fprintf(stderr, "spillctl replicate add: at most %d targets\n", SW_REPL_MAX_TARGETS);
            return SW_EXIT_USAGE;
        }
        if (sw_rule_loc_parse(argv[i + 1], &r.targets[r.ntargets], &err) != 0)
            return fail(&err);
        r.ntargets++;
    }
    r.model_registry = flag(argc, argv, "--model-registry");
    r.server_copy = flag(argc, argv, "--server-copy");
    double v;
    const char *s;
    if ((s = opt(argc, argv, "--concurrency")) != NULL) {
        if (num(s, "--concurrency", 1, 256, &v, &err) != 0)
            return fail(&err);
        r.concurrency = (int)v;
    }
    if ((s = opt(argc, argv, "--part-concurrency")) != NULL) {
        if (num(s, "--part-concurrency", 1, 64, &v, &err) != 0)
            return fail(&err);
        r.part_concurrency = (int)v;
    }
    if ((s = opt(argc, argv, "--part-size-mib")) != NULL) {
        if (num(s, "--part-size-mib", 5, 5120, &v, &err) != 0)
            return fail(&err);
        r.part_size = (int64_t)v << 20;
    }
    if ((s = opt(argc, argv, "--bandwidth-mbps")) != NULL) {
        if (num(s, "--bandwidth-mbps", 0, 1e6, &v, &err) != 0)
            return fail(&err);
        r.bytes_per_s = v * 1e6;
    }
    if ((s = opt(argc, argv, "--rpo-objective-seconds")) != NULL) {
        if (num(s, "--rpo-objective-seconds", 1, 31536000, &v, &err) != 0)
            return fail(&err);
        r.rpo_objective_s = v;
    }
    if (open_redis(c, &err) != 0 || sw_rule_save(c->redis, &r, &err) != 0)
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
    if (open_redis(c, &err) != 0 || sw_names_list(c->redis, "sw:repl:rules", &names, &n, &err))
        return fail(&err);
    cJSON *items = cJSON_CreateArray();
    int rc = SW_EXIT_OK;
    for (size_t i = 0; items != NULL && i < n; i++) {
        struct sw_rule_spec r;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(items, o);
        if (sw_rule_load(c->redis, names[i], &r, &err) != 0) {
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
        rc = sw_rule_load(c->redis, name, &spec, err);
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

static int cmd_status(struct ctx *c, int argc, char **argv)
{
    struct sw_error err;
    if (open_redis(c, &err) != 0)
        return fail(&err);
    char **names = NULL;
    size_t n = 0;
    if (argc > 1 && argv[1][0] != '-') {
        names = sw_calloc(1, sizeof(char *));
        names[0] = sw_strdup(argv[1]);
        n = 1;
    } else if (sw_names_list(c->redis, "sw:repl:rules", &names, &n, &err) != 0) {
        return fail(&err);
    }
    int metrics = flag(argc, argv, "--metrics");
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
        if (sw_rule_load(c->redis, names[i], &r, &err) != 0) {
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

static int cmd_run(struct ctx *c, int argc, char **argv)
{
    struct sw_error err;
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    int once = flag(argc, argv, "--once");
    const char *watch = opt(argc, argv, "--watch");
    if (!once && watch == NULL) {
        fprintf(stderr, "spillctl replicate run: --once or --watch SECONDS is required\n");
        return SW_EXIT_USAGE;
    }
    const char *pm = opt(argc, argv, "--progress");
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
    if (owner != NULL && owner->type == REDIS_REPLY_STRING && !flag(argc, argv, "--force")) {
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
        double every;
        if (num(watch, "--watch", 1, 86400, &every, &err) != 0) {
            sw_rule_bound_free(b);
            return fail(&err);
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
static int cmd_verify(struct ctx *c, int argc, char **argv)
{
    struct sw_error err;
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
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

static int cmd_estimate(struct ctx *c, int argc, char **argv)
{
    struct sw_error err;
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    double bw = 100e6;
    const char *s = opt(argc, argv, "--bandwidth-mbps");
    if (s != NULL) {
        if (num(s, "--bandwidth-mbps", 0.001, 1e6, &bw, &err) != 0)
            return fail(&err);
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

int sw_cli_replicate(const struct sw_cli_globals *g, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? SW_EXIT_USAGE : SW_EXIT_OK;
    }
    struct ctx c;
    memset(&c, 0, sizeof(c));
    c.g = g;
    const char *sub = argv[1];
    int sargc = argc - 1;
    char **sargv = argv + 1;
    int rc;
    struct sw_error err;
    /* -o applies to the listings only. */
    int listing = strcmp(sub, "list") == 0 || strcmp(sub, "status") == 0 ||
                  (strcmp(sub, "store") == 0 && sargc >= 2 && strcmp(sargv[1], "list") == 0);
    char what[64];
    snprintf(what, sizeof(what), "spillctl replicate %s", sub);
    if (!listing && sw_cli_no_output_format(g, what, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    if (strcmp(sub, "store") == 0)
        rc = cmd_store(&c, sargc, sargv);
    else if (strcmp(sub, "add") == 0)
        rc = cmd_add(&c, sargc, sargv);
    else if (strcmp(sub, "list") == 0)
        rc = cmd_list(&c);
    else if (strcmp(sub, "remove") == 0 && sargc >= 2)
        rc = open_redis(&c, &err) || sw_rule_remove(c.redis, sargv[1], &err) ? fail(&err)
                                                                             : SW_EXIT_OK;
    else if (strcmp(sub, "status") == 0)
        rc = cmd_status(&c, sargc, sargv);
    else if (strcmp(sub, "run") == 0)
        rc = cmd_run(&c, sargc, sargv);
    else if (strcmp(sub, "verify") == 0)
        rc = cmd_verify(&c, sargc, sargv);
    else if (strcmp(sub, "estimate") == 0)
        rc = cmd_estimate(&c, sargc, sargv);
    else {
        usage(stderr);
        rc = SW_EXIT_USAGE;
    }
    close_ctx(&c);
    return rc;
}
