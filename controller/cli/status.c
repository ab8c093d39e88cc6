/*
 * status.c - what the hub is doing, read from its records in Redis:
 *
 *   spillctl status [-n NS] [-l SEL] [-w]        every managed Job
 *   spillctl explain CLUSTER/NAMESPACE/JOB       the stored decision, every option costed
 *   spillctl hub status [-o wide|json|yaml]      leader, epoch, members' health
 *
 * Read-only: these commands never write to Redis.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

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
    {"NODE WAIT", "nodeWait", 1},
    {"QUEUE", "queue", 1},
    {"DETAIL", "detail", 0},
};

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys -l may name: fields of the hub's record. */
static const char *const selector_keys[] = {"team",     "cluster", "namespace", "state",
                                            "capacity", "where",   "form"};
#define NSELECTOR_KEYS (sizeof(selector_keys) / sizeof(selector_keys[0]))
#define SELECTOR_MAX   512 /* bytes of -l */
#define TERMS_MAX      32  /* terms of -l */
#define VALUES_MAX     32  /* values of one "in (...)" */

/* -l, parsed as kubectl reads a label selector: comma-separated terms,
 * all of which must hold. */
struct selector {
    size_t n;
    struct term {
        size_t key; /* index into selector_keys */
        enum { SEL_EQ, SEL_NE, SEL_IN, SEL_NOTIN, SEL_EXISTS, SEL_ABSENT } op;
        size_t nvalues;
        const char *values[VALUES_MAX]; /* into text */
    } term[TERMS_MAX];
    char text[SELECTOR_MAX + 1]; /* -l, cut up in place */
};

/* The record's value of selector_keys[key]; "" when it has none. */
static const char *field_of(const struct sw_job_rec *r, size_t key)
{
    switch (key) {
    case 0:
        return r->team;
    case 1:
        return r->cluster;
    case 2:
        return r->ns;
    case 3:
        return sw_job_state_name(r->state);
    case 4:
        return r->capacity;
    case 5:
        return r->target_cluster;
    default:
        return r->form == SW_FORM_DELEGATED ? "delegated" : "annotation";
    }
}

/* Whether record `r` matches -n and every term of the -l selector. */
static int selected(const struct sw_job_rec *r, const char *ns, const struct selector *sel)
{
    if (ns != NULL && strcmp(r->ns, ns) != 0)
        return 0;
    for (size_t i = 0; sel != NULL && i < sel->n; i++) {
        const struct term *t = &sel->term[i];
        const char *have = field_of(r, t->key);
        int in = 0;
        for (size_t k = 0; k < t->nvalues; k++)
            in |= strcmp(have, t->values[k]) == 0;
        int ok = t->op == SEL_EQ || t->op == SEL_IN      ? in
                 : t->op == SEL_NE || t->op == SEL_NOTIN ? !in
                 : t->op == SEL_EXISTS                   ? have[0] != '\0'
                                                         : have[0] == '\0';
        if (!ok)
            return 0;
    }
    return 1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* A word of a selector: a key or value, as kubectl allows ("" not). */
static int selector_word(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.' || *s == '/'))
            return 0;
    return 1;
}

#define SELECTOR_GRAMMAR                                                                           \
    "expected KEY=VALUE, KEY==VALUE, KEY!=VALUE, KEY in (V1,V2,...), KEY notin (V1,...), KEY "     \
    "(set) or !KEY (not set), with KEY one of team, cluster, namespace, state, capacity, where, "  \
    "form"

static int selector_key(const char *k, const char *term, size_t *key, struct sw_error *err)
{
    for (size_t i = 0; i < NSELECTOR_KEYS; i++)
        if (strcmp(selector_keys[i], k) == 0) {
            *key = i;
            return 0;
        }
    return sw_error_set(err, SW_EINVAL, "-l: \"%s\": " SELECTOR_GRAMMAR " (the record's fields)",
                        term);
}

/* Parses one term (trimmed, NUL-terminated inside sel->text) into *t. */
static int parse_term(char *s, struct term *t, struct sw_error *err)
{
    char shown[SELECTOR_MAX + 1];
    snprintf(shown, sizeof(shown), "%s", s);
    memset(t, 0, sizeof(*t));
    char *op = strpbrk(s, "=!");
    if (s[0] == '!') { /* !KEY */
        t->op = SEL_ABSENT;
        return selector_key(trim(s + 1), shown, &t->key, err);
    }
    if (op != NULL) { /* KEY=V, KEY==V, KEY!=V */
        int ne = op[0] == '!';
        if (ne && op[1] != '=')
            return sw_error_set(err, SW_EINVAL, "-l: \"%s\": " SELECTOR_GRAMMAR, shown);
        char *v = op + (ne ? 2 : op[1] == '=' ? 2 : 1);
        *op = '\0';
        t->op = ne ? SEL_NE : SEL_EQ;
        v = trim(v);
        if (*v != '\0' && !selector_word(v))
            return sw_error_set(err, SW_EINVAL,
                                "-l: \"%s\": value \"%s\": expected letters, digits, '-', '_', "
                                "'.' or '/'",
                                shown, v);
        t->values[t->nvalues++] = v;
        return selector_key(trim(s), shown, &t->key, err);
    }
    /* KEY in (...), KEY notin (...), or KEY */
    char *sp = s + strcspn(s, " \t(");
    if (*sp == '\0') {
        t->op = SEL_EXISTS;
        return selector_key(s, shown, &t->key, err);
    }
    char *rest = sp;
    char saved = *sp;
    *sp = '\0';
    int rc = selector_key(s, shown, &t->key, err);
    if (rc != 0)
        return rc;
    *sp = saved;
    rest = trim(rest);
    if (strncmp(rest, "notin", 5) == 0)
        t->op = SEL_NOTIN, rest += 5;
    else if (strncmp(rest, "in", 2) == 0)
        t->op = SEL_IN, rest += 2;
    else
        return sw_error_set(err, SW_EINVAL, "-l: \"%s\": " SELECTOR_GRAMMAR, shown);
    rest = trim(rest);
    size_t len = strlen(rest);
    if (len < 2 || rest[0] != '(' || rest[len - 1] != ')')
        return sw_error_set(err, SW_EINVAL,
                            "-l: \"%s\": expected the values in parentheses: KEY %s (V1,V2,...)",
                            shown, t->op == SEL_IN ? "in" : "notin");
    rest[len - 1] = '\0';
    rest++;
    char *save = NULL;
    for (char *v = strtok_r(rest, ",", &save); v != NULL; v = strtok_r(NULL, ",", &save)) {
        v = trim(v);
        if (!selector_word(v))
            return sw_error_set(err, SW_EINVAL,
                                "-l: \"%s\": value \"%s\": expected letters, digits, '-', '_', "
                                "'.' or '/'",
                                shown, v);
        if (t->nvalues >= VALUES_MAX)
            return sw_error_set(err, SW_EINVAL, "-l: \"%s\": more than %d values", shown,
                                VALUES_MAX);
        t->values[t->nvalues++] = v;
    }
    if (t->nvalues == 0)
        return sw_error_set(err, SW_EINVAL, "-l: \"%s\": expected at least one value in (...)",
                            shown);
    return 0;
}

/* Parses -l into *sel: terms split at the commas outside parentheses. */
static int selector_parse(const char *selector, struct selector *sel, struct sw_error *err)
{
    memset(sel, 0, sizeof(*sel));
    if (snprintf(sel->text, sizeof(sel->text), "%s", selector) >= (int)sizeof(sel->text))
        return sw_error_set(err, SW_EINVAL, "-l: longer than %d bytes", SELECTOR_MAX);
    char *p = sel->text;
    for (;;) {
        char *start = p;
        int depth = 0;
        while (*p != '\0' && !(*p == ',' && depth == 0)) {
            depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
            p++;
        }
        int last = *p == '\0';
        *p = '\0';
        char *t = trim(start);
        if (*t == '\0')
            return sw_error_set(err, SW_EINVAL, "-l: \"%s\": an empty term", selector);
        if (depth != 0)
            return sw_error_set(err, SW_EINVAL, "-l: \"%s\": unbalanced parentheses", t);
        if (sel->n >= TERMS_MAX)
            return sw_error_set(err, SW_EINVAL, "-l: more than %d terms", TERMS_MAX);
        int rc = parse_term(t, &sel->term[sel->n], err);
        if (rc != 0)
            return rc;
        sel->n++;
        if (last)
            return 0;
        p++;
    }
}

enum { OPT_NS = 'n', OPT_ALL = 'A', OPT_SELECTOR = 'l', OPT_WATCH = 'w', OPT_INTERVAL = 'i' };

/* One listing of the managed Jobs, printed to out. */
static int status_once(const struct sw_cli_globals *g, redisContext *c, const char *ns,
                       const struct selector *selector, FILE *out)
{
    struct sw_error err = {0};
    redisReply *keys = NULL;
    int rc;
    if (sw_redis_sync_command(c, &keys, &err, "SMEMBERS %s", SW_KEY_JOBS) != 0 ||
        keys->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "spillctl status: %s\n",
                err.msg[0] ? err.msg : "redis: spillway:jobs is not a set");
        if (keys)
            freeReplyObject(keys);
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
        if (!selected(&r, ns, selector)) {
            cJSON_Delete(o);
            continue;
        }
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
        /* A node provisioned for the mirror: the wait, or how long so far. */
        if (r.node_wait_s > 0)
            snprintf(buf, sizeof(buf), "%.0fs", r.node_wait_s);
        else if (r.node_wait_ms > 0 && r.dispatched_ms > 0)
            snprintf(buf, sizeof(buf), "%llds so far",
                     (long long)((now_ms() - r.dispatched_ms) / 1000));
        else
            snprintf(buf, sizeof(buf), "-");
        cJSON_AddStringToObject(row, "nodeWait", buf);
        /* The Kueue queue it was burst from: ClusterQueue, reserved of
         * nominal GPUs, Workloads ahead, as decided. */
        char q[160] = "-";
        if (r.has_kueue)
            sw_job_kueue_short(&r.kueue, q, sizeof(q));
        cJSON_AddStringToObject(row, "queue", q);
        cJSON_AddStringToObject(row, "detail", r.reason[0] ? r.reason : r.summary);
        cJSON_AddItemToArray(rows, row);
    }
    rc = sw_cli_print(out, g->output, items, rows, status_columns,
                      sizeof(status_columns) / sizeof(status_columns[0]));
    if (rc != 0 && rc != SW_EIO)
        fprintf(stderr, "spillctl status: %s\n", sw_strerror(rc));
    if (failed)
        rc = SW_EIO;
    cJSON_Delete(items);
    cJSON_Delete(rows);
    free(names);
    freeReplyObject(keys);
    return rc == 0 ? SW_EXIT_OK : SW_EXIT_FAIL;
}

static int status_run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    const char *ns = sw_cli_arg(a, OPT_NS), *l = sw_cli_arg(a, OPT_SELECTOR);
    struct sw_error err = {0};
    if (ns != NULL && sw_cli_arg(a, OPT_ALL) != NULL) {
        fprintf(stderr, "spillctl status: -n and -A (--all-namespaces) exclude each other\n");
        return SW_EXIT_USAGE;
    }
    static struct selector sel;
    const struct selector *selector = NULL;
    if (l != NULL) {
        if (selector_parse(l, &sel, &err) != 0) {
            fprintf(stderr, "spillctl status: %s\n", err.msg);
            return SW_EXIT_USAGE;
        }
        selector = &sel;
    }
    double every = sw_cli_arg_seconds(a, OPT_INTERVAL, 2);
    if (every < 0.1 || every > 3600) {
        fprintf(stderr, "spillctl status: --interval: expected 100ms to 1h, got \"%s\"\n",
                sw_cli_arg(a, OPT_INTERVAL));
        return SW_EXIT_USAGE;
    }
    redisContext *c = NULL;
    int rc = sw_cli_redis_open(g, "status", &c);
    if (rc != 0)
        return rc;
    if (sw_cli_arg(a, OPT_WATCH) == NULL) {
        rc = status_once(g, c, ns, selector, stdout);
        sw_redis_sync_free(c);
        return rc;
    }
    /* -w: print, then again whenever the listing changes, until Ctrl-C. */
    char *last = NULL;
    size_t last_len = 0;
    for (;;) {
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem == NULL) {
            rc = SW_EXIT_FAIL;
            break;
        }
        rc = status_once(g, c, ns, selector, mem);
        fclose(mem);
        if (rc != SW_EXIT_OK) {
            free(buf);
            break;
        }
        if (last == NULL || len != last_len || memcmp(buf, last, len) != 0) {
            if (last != NULL)
                fputc('\n', stdout);
            fwrite(buf, 1, len, stdout);
            fflush(stdout);
            free(last);
            last = buf;
            last_len = len;
        } else {
            free(buf);
        }
        struct timespec ts = {(time_t)every, (long)((every - (double)(time_t)every) * 1e9)};
        nanosleep(&ts, NULL);
    }
    free(last);
    sw_redis_sync_free(c);
    return rc;
}

/* ---- explain --------------------------------------------------------------- */

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

/* One option's line of "what the figures rest on" (its "basis", written by
 * the hub: a pool's provisioning delay and interruption rate, learned or
 * the prior). Nothing when the decision predates it. */
static void print_basis(const cJSON *o)
{
    const cJSON *b = sw_json_path(o, "basis");
    if (!cJSON_IsObject(b))
        return;
    const char *np = text(b, "nodePool");
    const char *pfrom = text(b, "provisionFrom"), *ifrom = text(b, "interruptFrom");
    char where[96] = "";
    if (np[0])
        snprintf(where, sizeof(where), " of NodePool %s", np);
    printf("  %-16s provisioning ", text(o, "pool"));
    if (strcmp(pfrom, "none") == 0)
        printf("none (no node is added)");
    else if (strcmp(pfrom, "learned") == 0)
        printf("%.0f s, learned from %.0f NodeClaim%s%s", num(b, "provisionSeconds"),
               num(b, "provisionsSeen"), num(b, "provisionsSeen") == 1 ? "" : "s", where);
    else
        printf("%.0f s, the prior (%s)", num(b, "provisionSeconds"),
               np[0] ? "no NodeClaim of its NodePool seen yet" : "fixed nodes");
    printf("; interruptions ");
    if (strcmp(ifrom, "none") == 0)
        printf("none");
    else if (strcmp(ifrom, "learned") == 0)
        printf("%.3f/h, learned (%.0f in %.2f h of running, weighed with the prior)",
               num(b, "interruptPerHour"), num(b, "interruptionsSeen"), num(b, "runHoursSeen"));
    else
        printf("%.3f/h, the prior", num(b, "interruptPerHour"));
    /* Its NodePool short of capacity when decided: the wait it was given. */
    const char *cfrom = text(b, "capacityWaitFrom");
    if (strcmp(cfrom, "learned") == 0)
        printf("; capacity short for %.0f s, back in %.0f s expected, learned from %.0f "
               "shortage%s seen end",
               num(b, "shortForSeconds"), num(b, "capacityWaitSeconds"), num(b, "shortagesSeen"),
               num(b, "shortagesSeen") == 1 ? "" : "s");
    else if (strcmp(cfrom, "prior") == 0)
        printf("; capacity short for %.0f s, back in %.0f s expected, the prior (no shortage of "
               "its NodePool seen end yet)",
               num(b, "shortForSeconds"), num(b, "capacityWaitSeconds"));
    /* Its Karpenter did not answer when decided: no room past idle GPUs. */
    if (num(b, "controllerDownSeconds") > 0)
        printf("; its Karpenter does not answer (Lease %s not renewed for %.0f s): no node added",
               text(b, "controllerLease"), num(b, "controllerDownSeconds"));
    printf("\n");
}

/* A duration for people: seconds, minutes or hours. */
static void fmt_dur(double s, char *buf, size_t len)
{
    if (s < 90)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 5400)
        snprintf(buf, len, "%.0f min", s / 60);
    else
        snprintf(buf, len, "%.1f h", s / 3600);
}

/* The runtime belief the Job was decided with (the explanation's
 * "runtime_belief", written by the hub): its median, 90th percentile and
 * spread, and what it rests on. Nothing when the decision predates it. */
static void print_belief(const cJSON *eo)
{
    const cJSON *b = sw_json_path(eo, "runtime_belief");
    if (!cJSON_IsObject(b))
        return;
    char med[32], p90[32], ann[32];
    fmt_dur(num(b, "median_seconds"), med, sizeof(med));
    fmt_dur(num(b, "p90_seconds"), p90, sizeof(p90));
    fmt_dur(num(b, "annotated_seconds"), ann, sizeof(ann));
    const char *src = text(b, "source");
    double runs = num(b, "runs");
    printf("Runtime:   median %s, 90th percentile %s (sigma %.2f): ", med, p90, num(b, "sigma"));
    if (strcmp(src, "annotation") == 0 && runs >= 5)
        printf("annotation (%s), corrected by what %.0f annotated Jobs took\n", ann, runs);
    else if (strcmp(src, "annotation") == 0)
        printf("annotation (%s) as given (%.0f annotated Job%s finished; 5 correct it)\n", ann,
               runs, runs == 1 ? "" : "s");
    else if (strcmp(src, "learned") == 0) {
        static const char *const keys[] = {"team, priority, GPUs and label",
                                           "team, priority and GPUs", "team and priority", "team",
                                           "team, any Job of it"};
        /* (A record's number: range-checked before it becomes an int.) */
        double lv = num(b, "level");
        int level = lv >= 0 && lv < 5 ? (int)lv : 4;
        printf("learned from %.0f finished Jobs of the same %s\n", runs,
               keys[level >= 0 && level < 5 ? level : 4]);
    } else
        printf("prior (no annotation, and fewer than 5 finished Jobs to learn from)\n");
}

static int explain_run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    const char *key = a->pos[0];
    if (g->output_given && g->output != SW_CLI_TABLE && g->output != SW_CLI_JSON &&
        g->output != SW_CLI_YAML) {
        fprintf(stderr, "spillctl explain: -o %s: expected json or yaml (or no -o)\n",
                sw_cli_format_name(g->output));
        return SW_EXIT_USAGE;
    }
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
    /* The Kueue queue it was taken from, as the decision found it. */
    struct sw_job_rec rr;
    struct sw_error rerr = {0};
    if (sw_job_rec_from_json(ro, &rr, &rerr) != 0) {
        if (sw_json_path(ro, "kueue") != NULL)
            printf("Queue:     (unreadable: %s)\n", rerr.msg);
    } else if (rr.has_kueue) {
        char q[256];
        sw_job_kueue_text(&rr.kueue, q, sizeof(q));
        printf("Queue:     %s (LocalQueue %s), when decided\n", q, rr.kueue.local_queue);
    }
    if (num(ro, "nodeWaitSeconds") > 0)
        printf("Node:      waited %.0f s for NodeClaim %s of NodePool %s (expected %.0f s)\n",
               num(ro, "nodeWaitSeconds"), text(ro, "nodeClaim"), text(ro, "nodePool"),
               num(ro, "nodeWaitExpectedSeconds"));
    else if (num(ro, "nodeWaitMs") > 0)
        printf("Node:      waiting for NodeClaim %s of NodePool %s, %.0f s so far (expected %.0f "
               "s)\n",
               text(ro, "nodeClaim"), text(ro, "nodePool"),
               (double)(now_ms() - (int64_t)num(ro, "dispatchedMs")) / 1000.0,
               num(ro, "nodeWaitExpectedSeconds"));
    if (eo == NULL) {
        printf("\nNo decision is stored yet: the hub decides a Job once it waits for GPUs\n"
               "(annotation-only) or as soon as it sees it (delegated).\n");
        goto out;
    }
    printf("Policy:    %s (value of delay $%.2f per GPU-hour)\n", text(eo, "policy"),
           num(eo, "delay_value_per_gpu_hour"));
    if (cJSON_IsObject(sw_json_path(eo, "runtime_belief")))
        printf("Workload:  %d GPUs, expected runtime %.0f s (the belief's mean), priority %s, "
               "team %s\n",
               (int)num(eo, "gpus"), num(eo, "runtime_seconds"), text(eo, "priority"),
               text(eo, "team"));
    else
        printf("Workload:  %d GPUs, runtime %.0f s (%s), priority %s, team %s\n",
               (int)num(eo, "gpus"), num(eo, "runtime_seconds"),
               cJSON_IsTrue(sw_json_path(eo, "runtime_learned")) ? "learned" : "given or prior",
               text(eo, "priority"), text(eo, "team"));
    print_belief(eo);
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
        /* Waiting in a full home queue, its score carried the queue's
         * congestion (docs/cost-model.md). */
        char note[96] = "";
        if (num(o, "congestion") > 0)
            snprintf(note, sizeof(note), "congestion %.2f; ", num(o, "congestion"));
        printf("%-16s %-10s %-10s %9.2f %9.2f %9.2f %9.2f %9.2f %9s %s%s\n", text(o, "pool"),
               text(o, "capacity"), text(o, "region"), num(o, "cost.run"),
               num(o, "cost.provisioning"), num(o, "cost.interruptions"), num(o, "cost.egress"),
               num(o, "cost.total"), wait, note,
               chosen                           ? "<- chosen"
               : strcmp(ex_reason, "none") != 0 ? ex_reason
                                                : "");
    }
    if (cJSON_IsObject(sw_json_path(cJSON_GetArrayItem(sw_json_path(eo, "options"), 0), "basis"))) {
        printf("\nWhat the engine was given:\n");
        cJSON_ArrayForEach(o, sw_json_path(eo, "options")) print_basis(o);
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

static int hub_run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    (void)a;
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

/* ---- the commands -------------------------------------------------------------- */

static const struct sw_cli_opt status_opts[] = {
    {"namespace", 'n', SW_CLI_VALUE, OPT_NS, "NAMESPACE"},
    {"all-namespaces", 'A', SW_CLI_FLAG, OPT_ALL, NULL},
    {"selector", 'l', SW_CLI_VALUE, OPT_SELECTOR, "SELECTOR"},
    {"watch", 'w', SW_CLI_FLAG, OPT_WATCH, NULL},
    {"interval", 0, SW_CLI_DURATION, OPT_INTERVAL, "DURATION"},
};

const struct sw_cli_spec sw_cli_status_specs[] = {
    {.path = "status",
     .formats = SW_CLI_FMT_LIST,
     .summary = "the Jobs the hub manages: where they run, state, cost",
     .help =
         "Usage: spillctl status [-n NAMESPACE | -A] [-l SELECTOR] [-w [--interval DURATION]]\n"
         "                       [-o table|wide|json|yaml|name|jsonpath=TEMPLATE] [--no-headers]\n"
         "\n"
         "The Jobs the hub manages: where each was submitted and runs, its state in\n"
         "the burst lifecycle, its age, what it has cost so far, and why (the\n"
         "decision, or the reason it is blocked or failed). -o wide adds, among\n"
         "others, QUEUE: for a Job taken from a Kueue queue, its ClusterQueue, the\n"
         "GPUs reserved of its nominal quota and the Workloads ahead, as decided.\n"
         "\n"
         "Options:\n"
         "  -n, --namespace NAMESPACE  only Jobs submitted in this namespace\n"
         "  -A, --all-namespaces       Jobs of every namespace (the default; not with -n)\n"
         "  -l, --selector SELECTOR    only Jobs whose record matches every comma-separated\n"
         "                             term, as kubectl's selectors: KEY=VALUE, KEY==VALUE,\n"
         "                             KEY!=VALUE, KEY in (V1,V2), KEY notin (V1,V2), KEY\n"
         "                             (has a value), !KEY (has none); KEY is one of team,\n"
         "                             cluster, namespace, state, capacity, where, form (the\n"
         "                             record's fields, not the Job's labels)\n"
         "  -w, --watch                print again whenever the listing changes, until Ctrl-C\n"
         "  --interval DURATION        with -w, how often to look (default 2s)\n",
     .examples = "  spillctl status\n"
                 "  spillctl status -n research -l state=running,capacity=spot -o wide\n"
                 "  spillctl status -l 'state in (running,pending),team notin (ml)'\n"
                 "  spillctl -n research status -w\n"
                 "  spillctl status -o jsonpath='{.items[*].key}'\n",
     .opts = status_opts,
     .nopts = sizeof(status_opts) / sizeof(status_opts[0]),
     .run = status_run},
    {.path = "explain",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "the hub's decision for one Job, every option costed",
     .help = "Usage: spillctl explain CLUSTER/NAMESPACE/JOB [-o json|yaml]\n"
             "\n"
             "The hub's stored decision for one Job: the verdict and why, then every\n"
             "pool it weighed with its expected cost (run, provisioning, interruptions,\n"
             "egress), wait, completion and, when excluded, the reason (an option\n"
             "waiting in a full home queue notes the queue's congestion its score\n"
             "carried, in dollars); then, per pool,\n"
             "the provisioning delay and interruption rate the engine was given and what\n"
             "they rest on: learned from a NodePool's NodeClaims and interruptions (how\n"
             "many), or the prior; for a NodePool short of capacity when decided, how\n"
             "long it had been short and the wait for capacity the engine was given,\n"
             "learned from the shortages seen end (how many), or the prior. For a Job\n"
             "taken from a Kueue queue, a Queue line: its ClusterQueue and LocalQueue,\n"
             "the GPUs reserved of the nominal quota and the Workloads ahead of it when\n"
             "it was decided. A Runtime line: the runtime belief it was decided with\n"
             "(median, 90th percentile, sigma) and its source: the expected-runtime\n"
             "annotation (as given, or corrected by what annotated Jobs took), learned\n"
             "from finished Jobs like it (how many, by which features), or the prior.\n",
     .examples = "  spillctl explain onprem/research/train-llama\n"
                 "  spillctl explain onprem/research/train-llama -o json\n",
     .min_pos = 1,
     .max_pos = 1,
     .run = explain_run},
    {.path = "hub status",
     .formats = SW_CLI_FMT_OBJECT | SW_CLI_FMT(SW_CLI_WIDE),
     .summary = "leader, fencing epoch and members' health",
     .help = "Usage: spillctl hub status [-o table|wide|json|yaml]\n"
             "\n"
             "The hub's leader (the process holding the lease in Redis), its fencing\n"
             "epoch, and the health of each member cluster as the leader sees it.\n",
     .examples = "  spillctl hub status\n"
                 "  spillctl hub status -o json\n",
     .run = hub_run},
};
const size_t sw_cli_status_nspecs = sizeof(sw_cli_status_specs) / sizeof(sw_cli_status_specs[0]);
