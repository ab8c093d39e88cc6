/*
 * lint.c - spillctl lint -f FILE: a Job's spillway settings checked
 * offline, before it is submitted, by the code the hub runs on it.
 *
 * The file is YAML (one or more documents, "---" apart) or JSON, as
 * kubectl takes it; a document may be a Job or a List of objects, and what
 * is not a batch/v1 Job is named and skipped. Each document is turned into
 * the JSON object the API server would hand the hub, then read with the
 * hub's own parsers (controller/hub/annotations.h): sw_burst_spec_parse
 * for the spillway.io/ annotations, once per annotation so that every bad
 * one is said (and then all together, for what only their combination
 * gets wrong: one given twice), and sw_job_gpu_ask for what the pods ask
 * of GPUs. On top of them, what makes the hub leave a Job alone in
 * silence: a Job opted in that asks for no GPU, a Job carrying the
 * mirror's label spillway.io/origin-uid, and spec.managedBy spillway.io/hub
 * (the delegated form) without spillway.io/burst, which no controller
 * would then run. The tenancy grants of the hub's configuration are not
 * checked: they are the hub's, not the file's.
 *
 * Every problem is one line on stdout, "FILE:LINE: Job NS/NAME: what",
 * with the field named; exit 1 when there is one, 0 when there is none,
 * 2 when a file cannot be read or is not YAML.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <yaml.h>

#include "clusters/exec.h"
#include "common/alloc.h"
#include "common/json.h"
#include "common/yamlnode.h"
#include "controller/cli/commands.h"
#include "controller/hub/annotations.h"
#include "controller/hub/mirror.h"

/* The largest file read, and the most nodes one document may turn into
 * (aliases make a small file a large graph). */
#define LINT_FILE_MAX  ((size_t)16 << 20)
#define LINT_NODES_MAX 200000
#define LINT_DEPTH_MAX 64

enum { OPT_FILE = 'f' };

/* One file's run. */
struct lint {
    const char *path; /* as given; "-" is stdin */
    const char *shown;
    yaml_document_t *doc;
    size_t nodes; /* converted so far, for LINT_NODES_MAX */
    size_t jobs, bad_jobs, problems, skipped, not_managed;
};

/* ---- YAML to JSON ----------------------------------------------------------- */

static int plain_is(const char *v, size_t n, const char *const *words)
{
    for (size_t i = 0; words[i] != NULL; i++)
        if (strlen(words[i]) == n && memcmp(words[i], v, n) == 0)
            return 1;
    return 0;
}

/* A plain scalar as the API server's YAML reader types it (YAML 1.2's core
 * schema): null, a boolean, an integer or a float; anything else (and any
 * quoted scalar) a string. */
static cJSON *scalar_json(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (memchr(v, '\0', len) != NULL)
        return NULL;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
        static const char *const trues[] = {"true", "True", "TRUE", NULL};
        static const char *const falses[] = {"false", "False", "FALSE", NULL};
        if (plain_is(v, len, nulls))
            return cJSON_CreateNull();
        if (plain_is(v, len, trues))
            return cJSON_CreateTrue();
        if (plain_is(v, len, falses))
            return cJSON_CreateFalse();
        size_t i = 0, digits = 0;
        if (i < len && (v[i] == '-' || v[i] == '+'))
            i++;
        while (i < len && v[i] >= '0' && v[i] <= '9')
            i++, digits++;
        int number = digits > 0 && i == len;
        if (!number && len < 64) {
            char buf[64], *end;
            memcpy(buf, v, len);
            buf[len] = '\0';
            /* a float: digits, an optional fraction and exponent; not hex,
             * inf or nan, which strtod would take */
            int plain = strspn(buf, "+-0123456789.eE") == len && strpbrk(buf, "0123456789");
            double d = plain ? strtod(buf, &end) : 0;
            if (plain && *end == '\0' && isfinite(d))
                return cJSON_CreateNumber(d);
        }
        if (number && len < 20) {
            char buf[24];
            memcpy(buf, v, len);
            buf[len] = '\0';
            return cJSON_CreateNumber(strtod(buf, NULL));
        }
    }
    char *s = sw_malloc(len + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, v, len);
    s[len] = '\0';
    cJSON *o = cJSON_CreateString(s);
    sw_free(s);
    return o;
}

/* Converts node `n` to JSON, or NULL with *why set (static text). */
static cJSON *node_json(struct lint *l, const yaml_node_t *n, int depth, const char **why,
                        size_t *why_line)
{
    if (n == NULL) {
        *why = "a node the document does not hold";
        return NULL;
    }
    if (++l->nodes > LINT_NODES_MAX || depth > LINT_DEPTH_MAX) {
        *why = "too many nodes or too deep (aliases?)";
        *why_line = sw_yaml_line(n);
        return NULL;
    }
    if (n->type == YAML_SCALAR_NODE) {
        cJSON *o = scalar_json(n);
        if (o == NULL) {
            *why = "a scalar holding a NUL byte";
            *why_line = sw_yaml_line(n);
        }
        return o;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        cJSON *a = cJSON_CreateArray();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             a != NULL && it < n->data.sequence.items.top; it++) {
            cJSON *e = node_json(l, yaml_document_get_node(l->doc, *it), depth + 1, why, why_line);
            if (e == NULL) {
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, e);
        }
        return a;
    }
    if (n->type == YAML_MAPPING_NODE) {
        cJSON *o = cJSON_CreateObject();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
             o != NULL && p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(l->doc, p->key);
            if (k == NULL || !sw_yaml_is_text(k)) {
                *why = "a mapping key that is not text";
                *why_line = sw_yaml_line(k ? k : n);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON *v =
                node_json(l, yaml_document_get_node(l->doc, p->value), depth + 1, why, why_line);
            if (v == NULL) {
                cJSON_Delete(o);
                return NULL;
            }
            /* Kept twice when given twice: the annotation parser says so. */
            char *key = sw_malloc(k->data.scalar.length + 1);
            if (key == NULL) {
                cJSON_Delete(v);
                cJSON_Delete(o);
                return NULL;
            }
            memcpy(key, k->data.scalar.value, k->data.scalar.length);
            key[k->data.scalar.length] = '\0';
            cJSON_AddItemToObject(o, key, v);
            sw_free(key);
        }
        return o;
    }
    *why = "an empty node";
    *why_line = sw_yaml_line(n);
    return NULL;
}

/* The node at `key` of mapping `m`, or NULL. */
static yaml_node_t *child(yaml_document_t *doc, const yaml_node_t *m, const char *key)
{
    if (m == NULL || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++)
        if (sw_yaml_key_eq(yaml_document_get_node(doc, p->key), key))
            return yaml_document_get_node(doc, p->value);
    return NULL;
}

/* ---- one Job -------------------------------------------------------------- */

static void problem(struct lint *l, size_t line, const char *job, const char *msg)
{
    printf("%s:%zu: %s: %s\n", l->shown, line, job, msg);
    l->problems++;
}

/* The line of annotation `key` of the Job at node `jn`, else the Job's. */
static size_t annotation_line(struct lint *l, const yaml_node_t *jn, const char *key)
{
    yaml_node_t *ann = child(l->doc, child(l->doc, jn, "metadata"), "annotations");
    if (ann != NULL && ann->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = ann->data.mapping.pairs.start; p < ann->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(l->doc, p->key);
            if (sw_yaml_key_eq(k, key))
                return sw_yaml_line(k);
        }
    return sw_yaml_line(jn);
}

/* The annotation a parser's message is about ("annotation \"K\": ..."), into key. */
static void message_annotation(const char *msg, char *key, size_t len)
{
    key[0] = '\0';
    const char *p = strstr(msg, "annotation \"");
    if (p == NULL)
        return;
    p += strlen("annotation \"");
    const char *q = strchr(p, '"');
    if (q != NULL && (size_t)(q - p) < len)
        snprintf(key, len, "%.*s", (int)(q - p), p);
}

static void lint_job(struct lint *l, const yaml_node_t *jn, const cJSON *job)
{
    l->jobs++;
    size_t before = l->problems;
    const cJSON *md = sw_json_child(job, "metadata");
    const char *name = sw_json_str(md, "name"), *ns = sw_json_str(md, "namespace");
    if (name == NULL)
        name = sw_json_str(md, "generateName");
    char who[300];
    snprintf(who, sizeof(who), "Job %s%s%.200s", ns ? ns : "", ns ? "/" : "",
             name ? name : "(no name)");
    size_t line = sw_yaml_line(jn);
    const cJSON *ann = sw_json_child(md, "annotations");
    const cJSON *labels = sw_json_child(md, "labels");
    if (ann != NULL && !cJSON_IsObject(ann) && !cJSON_IsNull(ann)) {
        problem(l, line, who, "field \"metadata.annotations\": expected a mapping of strings");
        ann = NULL;
    }
    if (cJSON_IsObject(labels) && sw_json_child(labels, SW_LBL_ORIGIN_UID) != NULL)
        problem(l, line, who,
                "label \"" SW_LBL_ORIGIN_UID "\": the mark of a mirror spillway made; the hub "
                "takes this Job for one and leaves it alone (remove the label)");
    /* The Job's creation time is the origin of a relative deadline: now,
     * for a Job not yet submitted. */
    double created = (double)time(NULL);
    const char *ts = sw_json_str(md, "creationTimestamp");
    int64_t ms;
    const char *why = NULL;
    if (ts != NULL && sw_parse_rfc3339(ts, &ms, &why) == 0)
        created = (double)ms / 1000.0;

    const char *burst = NULL;
    if (cJSON_IsObject(ann)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(ann, SW_ANN_BURST);
        burst = b != NULL ? (cJSON_IsString(b) ? b->valuestring : "") : NULL;
    }
    const char *mb = sw_json_str(sw_json_child(job, "spec"), "managedBy");
    if (burst == NULL) {
        if (mb != NULL && strcmp(mb, SW_MANAGED_BY) == 0)
            problem(l, sw_yaml_line(child(l->doc, child(l->doc, jn, "spec"), "managedBy")), who,
                    "field \"spec.managedBy\": \"" SW_MANAGED_BY "\" hands the Job to spillway, "
                    "but without the annotation \"" SW_ANN_BURST "\" the hub does not take it "
                    "and no controller would run it (add " SW_ANN_BURST ")");
        else
            l->not_managed++;
        if (l->problems == before)
            printf("%s:%zu: %s: not spillway's (no " SW_ANN_BURST " annotation)\n", l->shown, line,
                   who);
        else
            l->bad_jobs++;
        return;
    }
    /* Each spillway.io/ annotation alone (with spillway.io/burst), so that
     * every bad one is said, not only the first. */
    cJSON *good = cJSON_CreateObject();
    const cJSON *a;
    struct sw_error err;
    cJSON_ArrayForEach(a, ann)
    {
        if (a->string == NULL || strncmp(a->string, SW_ANN_PREFIX, strlen(SW_ANN_PREFIX)) != 0)
            continue;
        cJSON *one = cJSON_CreateObject();
        if (one == NULL || good == NULL)
            break;
        if (strcmp(a->string, SW_ANN_BURST) != 0)
            cJSON_AddStringToObject(one, SW_ANN_BURST, "auto");
        cJSON_AddItemToObject(one, a->string, cJSON_Duplicate(a, 1));
        struct sw_burst_spec spec;
        sw_error_clear(&err);
        if (sw_burst_spec_parse(one, created, &spec, &err) != 0)
            problem(l, annotation_line(l, jn, a->string), who, err.msg);
        else if (cJSON_GetObjectItemCaseSensitive(good, a->string) == NULL)
            cJSON_AddItemToObject(good, a->string, cJSON_Duplicate(a, 1));
        cJSON_Delete(one);
    }
    struct sw_burst_spec spec;
    int spec_ok = 0;
    if (l->problems == before) {
        /* Together: what only their combination gets wrong. */
        sw_error_clear(&err);
        if (sw_burst_spec_parse(ann, created, &spec, &err) != 0) {
            char key[128];
            message_annotation(err.msg, key, sizeof(key));
            problem(l, key[0] ? annotation_line(l, jn, key) : line, who, err.msg);
        } else {
            spec_ok = 1;
        }
    } else if (good != NULL && cJSON_GetObjectItemCaseSensitive(good, SW_ANN_BURST) != NULL) {
        /* The good ones, for what the pods ask below. */
        sw_error_clear(&err);
        spec_ok = sw_burst_spec_parse(good, created, &spec, &err) == 0;
    }
    cJSON_Delete(good);
    if (spec_ok && spec.managed) {
        struct sw_gpu_ask ask;
        sw_error_clear(&err);
        if (sw_job_gpu_ask(job, &spec, &ask, &err) != 0)
            problem(l, line, who, err.msg);
        else if (ask.pods * ask.gpus_per_pod <= 0)
            problem(l, line, who,
                    "field \"spec.template.spec.containers[].resources\": asks for no GPU "
                    "(nvidia.com/gpu or nvidia.com/mig-PROFILE), so the hub never places it: "
                    "spillway bursts GPU Jobs");
    }
    if (l->problems > before) {
        l->bad_jobs++;
    } else if (spec_ok && !spec.managed) {
        l->not_managed++;
        printf("%s:%zu: %s: ok; %s=never: the hub leaves it home\n", l->shown, line, who,
               SW_ANN_BURST);
    } else {
        printf("%s:%zu: %s: ok (%s=%s)\n", l->shown, line, who, SW_ANN_BURST, burst);
    }
}

/* One object of a document: a Job, a List of objects, or something skipped. */
static void lint_object(struct lint *l, const yaml_node_t *n, const cJSON *o, int depth)
{
    const char *kind = sw_json_str(o, "kind"), *api = sw_json_str(o, "apiVersion");
    size_t line = sw_yaml_line(n);
    if (kind != NULL && strcmp(kind, "List") == 0 && depth == 0) {
        yaml_node_t *items = child(l->doc, n, "items");
        const cJSON *it;
        size_t i = 0;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "items"))
        {
            yaml_node_t *in = NULL;
            if (items != NULL && items->type == YAML_SEQUENCE_NODE &&
                items->data.sequence.items.start + i < items->data.sequence.items.top)
                in = yaml_document_get_node(l->doc, items->data.sequence.items.start[i]);
            lint_object(l, in ? in : n, it, depth + 1);
            i++;
        }
        return;
    }
    if (kind != NULL && strcmp(kind, "Job") == 0 && api != NULL && strcmp(api, "batch/v1") == 0) {
        lint_job(l, n, o);
        return;
    }
    if (kind != NULL && strcmp(kind, "Job") == 0) {
        printf("%s:%zu: Job: field \"apiVersion\": expected batch/v1, got \"%.60s\"\n", l->shown,
               line, api ? api : "");
        l->problems++;
        l->bad_jobs++;
        l->jobs++;
        return;
    }
    printf("%s:%zu: skipped: %s%s%.60s is not a Job\n", l->shown, line, kind ? "a " : "",
           kind ? "" : "an object without a kind", kind ? kind : "");
    l->skipped++;
}

/* Reads `path` ("-": stdin) whole. */
static int read_input(const char *path, char **buf, size_t *len)
{
    if (strcmp(path, "-") != 0)
        return sw__cli_read_file("lint", path, buf, len) == 0 ? 0 : -1;
    size_t cap = 1 << 16, n = 0;
    char *p = sw_malloc(cap + 1);
    while (p != NULL) {
        size_t r = fread(p + n, 1, cap - n, stdin);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            if (cap >= LINT_FILE_MAX) {
                fprintf(stderr, "spillctl lint: standard input: larger than %zu bytes\n",
                        LINT_FILE_MAX);
                sw_free(p);
                return -1;
            }
            char *q = sw_realloc(p, cap * 2 + 1);
            if (q == NULL) {
                sw_free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    if (p == NULL || ferror(stdin)) {
        fprintf(stderr, "spillctl lint: standard input: %s\n",
                p == NULL ? "out of memory" : "read error");
        sw_free(p);
        return -1;
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
}

/* Lints one file; returns SW_EXIT_USAGE when it cannot be read or parsed. */
static int lint_file(struct lint *l)
{
    char *buf = NULL;
    size_t len = 0;
    if (read_input(l->path, &buf, &len) != 0)
        return SW_EXIT_USAGE;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        sw_free(buf);
        fprintf(stderr, "spillctl lint: out of memory\n");
        return SW_EXIT_FAIL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    int rc = 0;
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc)) {
            fprintf(stderr, "spillctl lint: %s: line %zu column %zu: %s%s%s\n", l->shown,
                    parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                    parser.problem ? parser.problem : "malformed YAML", parser.context ? " " : "",
                    parser.context ? parser.context : "");
            rc = SW_EXIT_USAGE;
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root == NULL) { /* the end of the stream */
            yaml_document_delete(&doc);
            break;
        }
        l->doc = &doc;
        l->nodes = 0;
        const char *why = NULL;
        size_t why_line = sw_yaml_line(root);
        cJSON *o = sw_yaml_is_null(root) ? NULL : node_json(l, root, 0, &why, &why_line);
        if (o == NULL && why != NULL) {
            fprintf(stderr, "spillctl lint: %s: line %zu: %s\n", l->shown, why_line, why);
            rc = SW_EXIT_USAGE;
        } else if (cJSON_IsObject(o)) {
            lint_object(l, root, o, 0);
        } else if (o != NULL) {
            printf("%s:%zu: skipped: a document that is not an object\n", l->shown,
                   sw_yaml_line(root));
            l->skipped++;
        }
        cJSON_Delete(o);
        l->doc = NULL;
        yaml_document_delete(&doc);
        if (rc != 0)
            break;
    }
    yaml_parser_delete(&parser);
    sw_free(buf);
    return rc;
}

static int run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    (void)g;
    sw_json_init_hooks();
    size_t it = 0;
    const char *v;
    int key, nfiles = 0;
    while ((key = sw_cli_next(a, &it, &v)) != -1)
        nfiles += key == OPT_FILE;
    if (nfiles == 0) {
        fprintf(stderr, "spillctl lint: -f FILE is required (\"-f -\" reads standard input; see "
                        "spillctl lint --help)\n");
        return SW_EXIT_USAGE;
    }
    size_t jobs = 0, bad = 0, problems = 0, not_managed = 0, skipped = 0;
    int rc = SW_EXIT_OK;
    it = 0;
    while ((key = sw_cli_next(a, &it, &v)) != -1) {
        if (key != OPT_FILE)
            continue;
        struct lint l = {.path = v, .shown = strcmp(v, "-") == 0 ? "(stdin)" : v};
        int frc = lint_file(&l);
        if (frc != 0)
            rc = frc;
        jobs += l.jobs;
        bad += l.bad_jobs;
        problems += l.problems;
        not_managed += l.not_managed;
        skipped += l.skipped;
    }
    if (rc != 0)
        return rc;
    printf("%zu Job%s checked: %zu with problems (%zu problem%s), %zu not spillway's; %zu "
           "other object%s skipped\n",
           jobs, jobs == 1 ? "" : "s", bad, problems, problems == 1 ? "" : "s", not_managed,
           skipped, skipped == 1 ? "" : "s");
    if (jobs == 0) {
        fprintf(stderr, "spillctl lint: no batch/v1 Job in the input\n");
        return SW_EXIT_FAIL;
    }
    return problems > 0 ? SW_EXIT_FAIL : SW_EXIT_OK;
}

static const struct sw_cli_opt opts[] = {
    {"filename", 'f', SW_CLI_VALUE, OPT_FILE, "FILE"},
};

const struct sw_cli_spec sw_cli_lint_specs[] = {
    {.path = "lint",
     .summary = "check a Job's spillway annotations offline, before submitting it",
     .help = "Usage: spillctl lint -f FILE [-f FILE]...\n"
             "\n"
             "Checks the spillway.io/ annotations and the GPU request of each batch/v1 Job\n"
             "in FILE with the parsers the hub runs on it, without Redis or a cluster.\n"
             "FILE is YAML (several documents, \"---\" apart) or JSON; a List's items are\n"
             "read; other kinds are named and skipped. Every bad annotation is said,\n"
             "one line each (FILE:LINE: Job NAMESPACE/NAME: annotation \"...\": ...),\n"
             "and so is what would make the hub leave the Job alone without a word: a Job\n"
             "opted in that asks for no GPU, the mirror's label spillway.io/origin-uid, or\n"
             "spec.managedBy spillway.io/hub without spillway.io/burst. A relative\n"
             "spillway.io/deadline counts from the Job's creationTimestamp, else from now.\n"
             "Exit 0 when no Job has a problem, 1 when one has (or no Job was found), 2\n"
             "when a file cannot be read or is not YAML.\n"
             "\n"
             "Options:\n"
             "  -f, --filename FILE   the file to check; \"-\" reads standard input\n",
     .examples = "  spillctl lint -f train-llama.yaml\n"
                 "  kubectl get job train-llama -o yaml | spillctl lint -f -\n",
     .opts = opts,
     .nopts = sizeof(opts) / sizeof(opts[0]),
     .run = run},
};
const size_t sw_cli_lint_nspecs = 1;
