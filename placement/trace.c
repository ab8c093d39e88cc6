/*
 * trace.c - job traces (CSV, Alibaba 2023 pod list) and spot traces (JSON).
 *
 * The CSV dialect is the plain one both formats use: comma-separated, no
 * quoting, optional \r before \n, no NUL bytes. Numbers must be the whole
 * field: "12x" is an error, not 12.
 */
#include "placement/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"

#define MAX_COLS          32
#define MAX_FIELD         256
#define TRACE_MAX_SECONDS 1e12

struct row {
    int n;
    const char *f[MAX_COLS];
    size_t len[MAX_COLS];
};

/* Splits one line [p, end) into fields. Returns -1 if there are too many. */
static int split(const char *p, const char *end, struct row *r)
{
    r->n = 0;
    for (;;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *fe = c ? c : end;
        if (r->n == MAX_COLS)
            return -1;
        r->f[r->n] = p;
        r->len[r->n] = (size_t)(fe - p);
        r->n++;
        if (c == NULL)
            return 0;
        p = c + 1;
    }
}

static bool field_is(const struct row *r, int i, const char *s)
{
    return r->len[i] == strlen(s) && memcmp(r->f[i], s, r->len[i]) == 0;
}

static int find_col(const struct row *hdr, const char *name)
{
    for (int i = 0; i < hdr->n; i++)
        if (field_is(hdr, i, name))
            return i;
    return -1;
}

static void field_copy(const struct row *r, int i, char *dst, size_t cap)
{
    size_t n = r->len[i] < cap - 1 ? r->len[i] : cap - 1;
    memcpy(dst, r->f[i], n);
    dst[n] = '\0';
}

static int parse_num(const struct row *r, int col, const char *what, size_t line, const char *field,
                     bool allow_empty, double *out, struct sw_error *err)
{
    char tmp[MAX_FIELD];
    if (col < 0 || col >= r->n)
        return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"%s\" is missing", what, line, field);
    if (r->len[col] >= sizeof(tmp))
        return sw_error_set(err, SW_EPARSE,
                            "%s:%zu: field \"%s\": expected a number, got %zu characters", what,
                            line, field, r->len[col]);
    field_copy(r, col, tmp, sizeof(tmp));
    if (tmp[0] == '\0') {
        if (allow_empty) {
            *out = NAN;
            return 0;
        }
        return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"%s\" is empty", what, line, field);
    }
    char *end;
    double v = strtod(tmp, &end);
    if (*end != '\0' || !isfinite(v) || v < 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s:%zu: field \"%s\": expected a non-negative number, got \"%s\"",
                            what, line, field, tmp);
    /* Times and counts alike, a thousand times below the engine's bound,
     * so that a simulation adding them up stays within it. */
    if (v > TRACE_MAX_SECONDS)
        return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"%s\": %s is beyond any real value",
                            what, line, field, tmp);
    *out = v;
    return 0;
}

static int parse_int(const struct row *r, int col, const char *what, size_t line, const char *field,
                     int *out, struct sw_error *err)
{
    double v;
    int rc = parse_num(r, col, what, line, field, false, &v, err);
    if (rc != 0)
        return rc;
    if (v != floor(v) || v > 1e6) {
        char tmp[MAX_FIELD];
        field_copy(r, col, tmp, sizeof(tmp));
        return sw_error_set(err, SW_EPARSE,
                            "%s:%zu: field \"%s\": expected a non-negative integer, got \"%s\"",
                            what, line, field, tmp);
    }
    *out = (int)v;
    return 0;
}

static int push(struct sw_trace *t, const struct sw_trace_job *j)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct sw_trace_job *p = sw_realloc(t->jobs, cap * sizeof(*p));
        if (p == NULL)
            return SW_ENOMEM;
        t->jobs = p;
        t->cap = cap;
    }
    t->jobs[t->n++] = *j;
    return 0;
}

static int cmp_job(const void *a, const void *b)
{
    const struct sw_trace_job *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return strcmp(x->name, y->name);
}

static const char *const alibaba_cols[] = {
    "name", "cpu_milli", "memory_mib",    "num_gpu",       "gpu_milli",     "gpu_spec",
    "qos",  "pod_phase", "creation_time", "deletion_time", "scheduled_time"};

static int parse_alibaba_row(const struct row *r, const int *col, const char *what, size_t line,
                             struct sw_trace *out, struct sw_error *err)
{
    int gpus;
    int rc = parse_int(r, col[3], what, line, "num_gpu", &gpus, err);
    if (rc != 0)
        return rc;
    double created, deleted, scheduled;
    if ((rc = parse_num(r, col[8], what, line, "creation_time", false, &created, err)) != 0 ||
        (rc = parse_num(r, col[9], what, line, "deletion_time", true, &deleted, err)) != 0 ||
        (rc = parse_num(r, col[10], what, line, "scheduled_time", true, &scheduled, err)) != 0)
        return rc;
    if (gpus == 0 || isnan(scheduled) || isnan(deleted) || deleted <= scheduled) {
        out->skipped++;
        return 0;
    }
    struct sw_trace_job j = {0};
    field_copy(r, col[0], j.name, sizeof(j.name));
    strcpy(j.team, "alibaba");
    j.prio = SW_PRIO_TRAINING;
    if (field_is(r, col[6], "Guaranteed"))
        j.prio = SW_PRIO_PRODUCTION;
    else if (field_is(r, col[6], "Burstable"))
        j.prio = SW_PRIO_DEVELOPMENT;
    else if (field_is(r, col[6], "BE"))
        j.prio = SW_PRIO_BEST_EFFORT;
    j.submit = created;
    j.duration = deleted - scheduled;
    j.gpus = gpus;
    j.input_gb = -1;
    j.gpu_share = 1;
    /* The resource shape is what a pod's template fixes: pods of one job
     * share it, so it groups runs for learning as an image name would. */
    int cpu = 0, mem = 0, milli = 0;
    if ((col[1] >= 0 && (rc = parse_int(r, col[1], what, line, "cpu_milli", &cpu, err)) != 0) ||
        (col[2] >= 0 && (rc = parse_int(r, col[2], what, line, "memory_mib", &mem, err)) != 0) ||
        (col[4] >= 0 && (rc = parse_int(r, col[4], what, line, "gpu_milli", &milli, err)) != 0))
        return rc;
    if (milli > 1000)
        return sw_error_set(err, SW_EPARSE,
                            "%s:%zu: field \"gpu_milli\": expected 0 to 1000, got %d", what, line,
                            milli);
    if (gpus == 1 && milli > 0)
        j.gpu_share = milli / 1000.0;
    snprintf(j.label, sizeof(j.label), "c%d-m%d-g%d", cpu, mem, milli);
    return push(out, &j);
}

static int parse_csv_row(const struct row *r, const int *col, const char *what, size_t line,
                         struct sw_trace *out, struct sw_error *err)
{
    struct sw_trace_job j = {0};
    int rc;
    double deadline = NAN;
    if ((rc = parse_num(r, col[0], what, line, "submit", false, &j.submit, err)) != 0 ||
        (rc = parse_int(r, col[1], what, line, "gpus", &j.gpus, err)) != 0 ||
        (rc = parse_num(r, col[2], what, line, "duration", false, &j.duration, err)) != 0)
        return rc;
    if (col[3] >= r->n)
        return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"team\" is missing", what, line);
    field_copy(r, col[3], j.team, sizeof(j.team));
    if (col[4] >= 0 &&
        (rc = parse_num(r, col[4], what, line, "deadline", true, &deadline, err)) != 0)
        return rc;
    j.deadline = isnan(deadline) ? 0 : deadline;
    j.input_gb = -1;
    j.gpu_share = 1;
    double v = NAN;
    if (col[8] >= 0 &&
        (rc = parse_num(r, col[8], what, line, "expected_runtime", true, &v, err)) != 0)
        return rc;
    j.expected_runtime = isnan(v) ? 0 : v;
    v = NAN;
    if (col[9] >= 0 && (rc = parse_num(r, col[9], what, line, "input_gb", true, &v, err)) != 0)
        return rc;
    if (!isnan(v)) {
        if (v > SW_MAX_GB)
            return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"input_gb\": %g is above %g", what,
                                line, v, SW_MAX_GB);
        j.input_gb = v;
    }
    if (col[7] >= 0 && col[7] < r->n)
        field_copy(r, col[7], j.label, sizeof(j.label));
    /* A MIG profile: `gpus` then counts its slices. */
    if (col[10] >= 0 && col[10] < r->n && r->len[col[10]] > 0) {
        char tmp[SW_MIG_PROFILE_MAX + 1];
        field_copy(r, col[10], tmp, sizeof(tmp));
        if (!sw_mig_profile_valid(tmp))
            return sw_error_set(err, SW_EPARSE,
                                "%s:%zu: field \"mig_profile\": expected a MIG profile such as "
                                "1g.10gb, got \"%.*s\"",
                                what, line, SW_MIG_PROFILE_MAX, tmp);
        memcpy(j.mig_profile, tmp, sizeof(j.mig_profile));
    }
    if (j.gpus == 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s:%zu: field \"gpus\": expected a positive integer, got \"0\"", what,
                            line);
    if (j.deadline > 0 && j.deadline < j.submit)
        return sw_error_set(err, SW_EPARSE, "%s:%zu: field \"deadline\": %g is before submit %g",
                            what, line, j.deadline, j.submit);
    if (col[5] >= 0 && col[5] < r->n && r->len[col[5]] > 0)
        field_copy(r, col[5], j.name, sizeof(j.name));
    else
        snprintf(j.name, sizeof(j.name), "job-%zu", line);
    j.prio = SW_PRIO_TRAINING;
    if (col[6] >= 0 && col[6] < r->n && r->len[col[6]] > 0) {
        char tmp[SW_NAME_MAX];
        field_copy(r, col[6], tmp, sizeof(tmp));
        if (sw_priority_parse(tmp, &j.prio) != 0)
            return sw_error_set(err, SW_EPARSE,
                                "%s:%zu: field \"priority\": expected best-effort, development, "
                                "training or production, got \"%s\"",
                                what, line, tmp);
    }
    return push(out, &j);
}

int sw_trace_parse(const char *buf, size_t len, enum sw_trace_format format, const char *what,
                   struct sw_trace *out, struct sw_error *err)
{
    const char *p = buf, *end = buf + len;
    size_t line = 0;
    struct row hdr;
    int col[MAX_COLS];
    const char *nl;
    /* The header. */
    nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (le > p && le[-1] == '\r')
        le--;
    line = 1;
    if (memchr(p, '\0', (size_t)(le - p)) != NULL)
        return sw_error_set(err, SW_EPARSE, "%s:1: a NUL byte in the header", what);
    if (le == p || split(p, le, &hdr) != 0)
        return sw_error_set(err, SW_EPARSE, "%s:1: expected a header line", what);
    if (format == SW_TRACE_AUTO)
        format = find_col(&hdr, "num_gpu") >= 0 ? SW_TRACE_ALIBABA : SW_TRACE_CSV;
    if (format == SW_TRACE_ALIBABA) {
        for (int i = 0; i < 11; i++)
            if ((col[i] = find_col(&hdr, alibaba_cols[i])) < 0 && i != 1 && i != 2 && i != 4 &&
                i != 5 && i != 7)
                return sw_error_set(err, SW_EPARSE, "%s:1: header lacks column \"%s\"", what,
                                    alibaba_cols[i]);
    } else {
        static const char *const need[] = {"submit", "gpus", "duration", "team"};
        for (int i = 0; i < 4; i++)
            if ((col[i] = find_col(&hdr, need[i])) < 0)
                return sw_error_set(err, SW_EPARSE,
                                    "%s:1: header lacks column \"%s\" (expected "
                                    "submit,gpus,duration,team[,deadline][,name][,priority])",
                                    what, need[i]);
        col[4] = find_col(&hdr, "deadline");
        col[5] = find_col(&hdr, "name");
        col[6] = find_col(&hdr, "priority");
        col[7] = find_col(&hdr, "label");
        col[8] = find_col(&hdr, "expected_runtime");
        col[9] = find_col(&hdr, "input_gb");
        col[10] = find_col(&hdr, "mig_profile");
    }
    p = nl ? nl + 1 : end;
    while (p < end) {
        line++;
        nl = memchr(p, '\n', (size_t)(end - p));
        le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        if (le == p) {
            p = next;
            continue;
        }
        /* Fields become C strings: a NUL inside one would cut a name short
         * (or empty it) without a word. */
        if (memchr(p, '\0', (size_t)(le - p)) != NULL)
            return sw_error_set(err, SW_EPARSE, "%s:%zu: a NUL byte in the line", what, line);
        struct row r;
        if (split(p, le, &r) != 0)
            return sw_error_set(err, SW_EPARSE, "%s:%zu: more than %d fields", what, line,
                                MAX_COLS);
        if (r.n != hdr.n)
            return sw_error_set(err, SW_EPARSE,
                                "%s:%zu: expected %d fields like the header, got %d", what, line,
                                hdr.n, r.n);
        int rc = format == SW_TRACE_ALIBABA ? parse_alibaba_row(&r, col, what, line, out, err)
                                            : parse_csv_row(&r, col, what, line, out, err);
        if (rc == SW_ENOMEM)
            return sw_error_set(err, SW_ENOMEM, "%s:%zu: out of memory", what, line);
        if (rc != 0)
            return rc;
        p = next;
    }
    /* A trace of no jobs has no array to sort (qsort takes no NULL). */
    if (out->n > 1)
        qsort(out->jobs, out->n, sizeof(*out->jobs), cmp_job);
    return 0;
}

void sw_trace_free(struct sw_trace *t)
{
    sw_free(t->jobs);
    memset(t, 0, sizeof(*t));
}

int sw_spot_trace_parse(const char *buf, size_t len, const char *what, struct sw_spot_trace *out,
                        struct sw_error *err)
{
    cJSON *root;
    sw_json_init_hooks();
    int rc = sw_json_parse(buf, len, what, &root, err);
    if (rc != 0)
        return rc;
    double gap = 0;
    if ((rc = sw_json_number(root, "metadata.gap_seconds", true, what, &gap, err)) != 0)
        goto out;
    if (!(gap > 0) || gap > SW_MAX_SECONDS) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"metadata.gap_seconds\": expected a positive number up to "
                          "%g, got %g",
                          what, SW_MAX_SECONDS, gap);
        goto out;
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (!cJSON_IsArray(data)) {
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"data\": expected an array, got %s", what,
                          data ? sw_json_type_name(data) : "nothing");
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(data);
    out->alive = sw_calloc(n ? n : 1, sizeof(int));
    if (out->alive == NULL) {
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory for %zu ticks", what, n);
        goto out;
    }
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, data)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (v < 0 || v != floor(v) || v > 1e9) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s: field \"data[%zu]\": expected a non-negative integer", what, i);
            goto out;
        }
        out->alive[i++] = (int)v;
    }
    out->n = n;
    out->gap_s = gap;
out:
    cJSON_Delete(root);
    return rc;
}

void sw_spot_trace_free(struct sw_spot_trace *t)
{
    sw_free(t->alive);
    memset(t, 0, sizeof(*t));
}

double sw_spot_trace_next_preemption(const struct sw_spot_trace *tr, double offset, double t)
{
    if (tr->n < 2)
        return INFINITY;
    double gap = tr->gap_s, period = gap * (double)tr->n; /* finite: checked by the parser */
    double x = offset + t;
    if (!isfinite(x) || !isfinite(period))
        return INFINITY;
    double pos = fmod(x, period);
    if (pos < 0)
        pos += period;
    /* The first tick strictly after `pos`. pos / gap may round either way
     * across a tick, so the index is corrected against the tick times the
     * answer is computed from. */
    double q = floor(pos / gap);
    size_t start = (q < (double)tr->n ? (size_t)q : tr->n) + 1;
    while (start > 1 && (double)(start - 1) * gap > pos)
        start--;
    while ((double)start * gap <= pos)
        start++;
    /* Walk at most one full loop from there. */
    for (size_t k = 0; k < tr->n; k++) {
        size_t i = (start + k) % tr->n;
        size_t prev = (i + tr->n - 1) % tr->n;
        if (i != 0 && tr->alive[i] < tr->alive[prev]) {
            double tick = (double)(start + k) * gap; /* unwrapped */
            double next = t + (tick - pos);
            /* Past a large t, a short step rounds away: the next
             * representable time is the closest one strictly after. */
            return next > t ? next : nextafter(t, INFINITY);
        }
    }
    return INFINITY;
}
