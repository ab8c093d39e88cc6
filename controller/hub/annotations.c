/*
 * annotations.c - a Job's spillway.io/ annotations, Go-style durations,
 * s3:// locations and the Job's GPU shape.
 *
 * Everything here reads text a user wrote on a Job, so every refusal says
 * which annotation, which value and what was expected: the hub turns the
 * message into a Warning Event on the Job as it is.
 */
#include "controller/hub/annotations.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/exec.h"
#include "common/json.h"

/* ---- durations ---------------------------------------------------------- */

/* Units largest first; a duration names each at most once, in this order. */
static const struct {
    const char *name;
    double seconds;
} units[] = {{"h", 3600}, {"m", 60}, {"s", 1}, {"ms", 0.001}};

int sw_duration_parse(const char *s, double *seconds)
{
    if (s == NULL || *s == '\0')
        return SW_EINVAL;
    const char *p = s;
    double total = 0;
    int last = -1, too_long = 0;
    while (*p != '\0') {
        if (!isdigit((unsigned char)*p))
            return SW_EINVAL;
        /* The number as mantissa / 10^scale, exact for what people write;
         * digits past the 15th significant one are dropped from fractions
         * and make a whole part too long. */
        double mant = 0, scale = 1;
        int sig = 0;
        while (isdigit((unsigned char)*p)) {
            if (mant > 0 || *p != '0')
                sig++;
            if (sig > 15)
                too_long = 1;
            else
                mant = mant * 10 + (*p - '0');
            p++;
        }
        if (*p == '.') {
            p++;
            if (!isdigit((unsigned char)*p))
                return SW_EINVAL;
            while (isdigit((unsigned char)*p)) {
                if (mant > 0 || *p != '0')
                    sig++;
                if (sig <= 15) {
                    mant = mant * 10 + (*p - '0');
                    scale *= 10;
                }
                p++;
            }
        }
        int u;
        if (p[0] == 'm' && p[1] == 's')
            u = 3;
        else if (p[0] == 'h')
            u = 0;
        else if (p[0] == 'm')
            u = 1;
        else if (p[0] == 's')
            u = 2;
        else
            return SW_EINVAL;
        if (u <= last)
            return SW_EINVAL; /* repeated or out of order: "1h1h", "30m1h" */
        last = u;
        p += strlen(units[u].name);
        total += mant / scale * units[u].seconds;
    }
    if (too_long || total > SW_DURATION_MAX_S)
        return SW_ERANGE;
    if (!(total > 0))
        return SW_EINVAL;
    *seconds = total;
    return 0;
}

/* ---- s3:// locations ---------------------------------------------------- */

static int all_digits_and_dots_ip(const char *b)
{
    /* Four dot-separated runs of 1-3 digits: an IPv4 address. */
    int parts = 0, digits = 0;
    for (const char *p = b;; p++) {
        if (isdigit((unsigned char)*p)) {
            if (++digits > 3)
                return 0;
        } else if (*p == '.' || *p == '\0') {
            if (digits == 0)
                return 0;
            parts++;
            digits = 0;
            if (*p == '\0')
                break;
        } else {
            return 0;
        }
    }
    return parts == 4;
}

const char *sw_s3_bucket_problem(const char *b, size_t n)
{
    if (n < 3 || n > 63)
        return "bucket name: expected 3 to 63 characters";
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '.' ||
              b[i] == '-'))
            return "bucket name: expected lowercase letters, digits, '.' and '-'";
    if (!isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1]))
        return "bucket name: expected a letter or digit at the start and at the end";
    if (strstr(b, "..") != NULL)
        return "bucket name: \"..\" is not allowed";
    if (all_digits_and_dots_ip(b))
        return "bucket name: an IP address is not allowed";
    if (strncmp(b, "xn--", 4) == 0 || (n >= 8 && strcmp(b + n - 8, "-s3alias") == 0) ||
        (n >= 7 && strcmp(b + n - 7, "--ol-s3") == 0))
        return "bucket name: the prefix \"xn--\" and the suffixes \"-s3alias\" and \"--ol-s3\" "
               "are reserved";
    return NULL;
}

int sw_s3_uri_parse(const char *s, struct sw_s3_uri *out, const char **why)
{
    const char *w = NULL;
    memset(out, 0, sizeof(*out));
    if (strncmp(s, "s3://", 5) != 0) {
        w = "expected it to start with s3://";
        goto bad;
    }
    const char *b = s + 5;
    size_t bl = strcspn(b, "/");
    if (bl == 0) {
        w = "expected a bucket name after s3://";
        goto bad;
    }
    if (memchr(b, ':', bl) != NULL || memchr(b, '@', bl) != NULL) {
        w = "a host, port or user is not allowed: the store is the origin region's";
        goto bad;
    }
    if (bl < sizeof(out->bucket))
        memcpy(out->bucket, b, bl);
    if ((w = sw_s3_bucket_problem(out->bucket, bl)) != NULL)
        goto bad;
    const char *prefix = b[bl] == '/' ? b + bl + 1 : "";
    size_t pl = strlen(prefix);
    if (pl >= sizeof(out->prefix)) {
        w = "prefix: expected at most 511 bytes";
        goto bad;
    }
    if (prefix[0] == '/') {
        w = "prefix: expected no '/' at its start";
        goto bad;
    }
    for (size_t i = 0; i < pl; i++)
        if ((unsigned char)prefix[i] < 0x20 || prefix[i] == 0x7f) {
            w = "prefix: control characters are not allowed";
            goto bad;
        }
    memcpy(out->prefix, prefix, pl + 1);
    return 0;
bad:
    memset(out, 0, sizeof(*out));
    if (why != NULL)
        *why = w;
    return SW_EINVAL;
}

int sw_s3_uri_format(const struct sw_s3_uri *u, char *buf, size_t len)
{
    int n = snprintf(buf, len, "s3://%s/%s", u->bucket, u->prefix);
    return n < 0 || (size_t)n >= len ? SW_ETOOBIG : 0;
}

/* ---- annotations -------------------------------------------------------- */

enum ann {
    A_BURST,
    A_INPUTS,
    A_OUTPUTS,
    A_DEADLINE,
    A_MAX_PRICE,
    A_RUNTIME,
    A_CHECKPOINT,
    A_TEAM,
    A_PRIORITY,
    A_ON_LOSS,
    A_GPU_SHARE,
    A__COUNT
};

static const char *const ann_keys[A__COUNT] = {
    [A_BURST] = SW_ANN_BURST,           [A_INPUTS] = SW_ANN_INPUTS,
    [A_OUTPUTS] = SW_ANN_OUTPUTS,       [A_DEADLINE] = SW_ANN_DEADLINE,
    [A_MAX_PRICE] = SW_ANN_MAX_PRICE,   [A_RUNTIME] = SW_ANN_RUNTIME,
    [A_CHECKPOINT] = SW_ANN_CHECKPOINT, [A_TEAM] = SW_ANN_TEAM,
    [A_PRIORITY] = SW_ANN_PRIORITY,     [A_ON_LOSS] = SW_ANN_ON_LOSS,
    [A_GPU_SHARE] = SW_ANN_GPU_SHARE,
};

#define DURATION_EXPECT "a duration such as \"2h30m\", \"45m\" or \"90s\""
#define PRICE_EXPECT    "a price in dollars per GPU-hour"
#define INPUTS_EXPECT   "1 to 4 comma-separated s3://bucket/prefix URIs"
#define OUTPUTS_EXPECT  "one s3://bucket/prefix URI"
#define DEADLINE_EXPECT                                                                            \
    "an RFC 3339 time such as \"2026-07-01T18:00:00Z\" or a duration after the Job's creation "    \
    "such as \"2h30m\""
#define VALUE_SHOWN 100

/*
 * Writes `v` quoted for a message: '"', '\' and control characters
 * escaped, cut after VALUE_SHOWN bytes (at a UTF-8 character boundary)
 * with "..." after it. `dst` holds at least 4 * VALUE_SHOWN + 4 bytes.
 */
static void quote_value(const char *v, char *dst)
{
    size_t len = strnlen(v, VALUE_SHOWN + 1), cut = len;
    if (len > VALUE_SHOWN) {
        /* Do not end in the middle of a UTF-8 sequence. */
        cut = VALUE_SHOWN;
        while (cut > 0 && ((unsigned char)v[cut] & 0xc0) == 0x80)
            cut--;
    }
    size_t o = 0;
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(dst + o, 5, "\\x%02x", c);
        } else {
            dst[o++] = (char)c;
        }
    }
    if (cut < len) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
}

/* annotation "K": value "V": expected E[ (WHY)] */
static int ann_error(struct sw_error *err, enum ann a, const char *v, const char *expect,
                     const char *why)
{
    char q[4 * VALUE_SHOWN + 4];
    quote_value(v, q);
    if (why != NULL)
        return sw_error_set(err, SW_EINVAL, "annotation \"%s\": value \"%s\": expected %s (%s)",
                            ann_keys[a], q, expect, why);
    return sw_error_set(err, SW_EINVAL, "annotation \"%s\": value \"%s\": expected %s", ann_keys[a],
                        q, expect);
}

static int duration_ann(enum ann a, const char *v, double *out, struct sw_error *err)
{
    int rc = sw_duration_parse(v, out);
    if (rc == SW_ERANGE)
        return ann_error(err, a, v, DURATION_EXPECT, "longer than 292 years");
    if (rc != 0)
        return ann_error(err, a, v, DURATION_EXPECT, NULL);
    return 0;
}

/* "3.50": digits with an optional fraction, nothing else. */
static int price_ann(const char *v, double *out, struct sw_error *err)
{
    const char *p = v;
    size_t digits = 0;
    while (isdigit((unsigned char)*p))
        p++, digits++;
    if (digits > 0 && *p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            digits = 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (digits == 0 || *p != '\0' || (size_t)(p - v) > 32)
        return ann_error(err, A_MAX_PRICE, v, PRICE_EXPECT ", e.g. \"3.50\"", NULL);
    double d = strtod(v, NULL);
    if (!(d > 0) || d > SW_ANN_PRICE_CAP)
        return ann_error(err, A_MAX_PRICE, v,
                         PRICE_EXPECT " above 0 and at most 10000, e.g. \"3.50\"", NULL);
    *out = d;
    return 0;
}

/* "0.25": a share of one GPU above 0 and at most 1, to the thousandth. */
static int share_ann(const char *v, int *milli, struct sw_error *err)
{
    static const char expect[] = "a share of one GPU above 0 and at most 1, e.g. \"0.25\"";
    const char *p = v;
    size_t digits = 0, frac = 0;
    while (isdigit((unsigned char)*p))
        p++, digits++;
    if (digits > 0 && *p == '.') {
        p++;
        while (isdigit((unsigned char)*p))
            p++, frac++;
        if (frac == 0)
            digits = 0;
    }
    if (digits == 0 || *p != '\0' || (size_t)(p - v) > 32)
        return ann_error(err, A_GPU_SHARE, v, expect, NULL);
    double d = strtod(v, NULL);
    if (!(d > 0) || d > 1)
        return ann_error(err, A_GPU_SHARE, v, expect, "outside (0, 1]");
    long m = lround(d * 1000);
    if (m < 1 || fabs(d * 1000 - (double)m) > 1e-6)
        return ann_error(err, A_GPU_SHARE, v, expect, "finer than a thousandth");
    *milli = (int)m;
    return 0;
}

static int deadline_ann(const char *v, double created, double *out, struct sw_error *err)
{
    /* A time starts "YYYY-"; a duration never has a '-'. */
    if (strlen(v) >= 5 && isdigit((unsigned char)v[0]) && v[4] == '-') {
        int64_t ms;
        const char *why = NULL;
        if (sw_parse_rfc3339(v, &ms, &why) != 0)
            return ann_error(err, A_DEADLINE, v, DEADLINE_EXPECT, why);
        if (ms <= 0)
            return ann_error(err, A_DEADLINE, v, DEADLINE_EXPECT, "before 1970");
        *out = (double)ms / 1000.0;
        return 0;
    }
    double d;
    int rc = sw_duration_parse(v, &d);
    if (rc == SW_ERANGE)
        return ann_error(err, A_DEADLINE, v, DEADLINE_EXPECT, "longer than 292 years");
    if (rc != 0)
        return ann_error(err, A_DEADLINE, v, DEADLINE_EXPECT, NULL);
    if (!isfinite(created) || created <= 0)
        return ann_error(err, A_DEADLINE, v, DEADLINE_EXPECT, "the Job's creation time is unknown");
    *out = created + d;
    return 0;
}

static int dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
            return 0;
    return 1;
}

static int inputs_ann(const char *v, struct sw_burst_spec *out, struct sw_error *err)
{
    char why[160];
    const char *p = v;
    int n = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        /* Spaces around a comma are allowed: "s3://a/x, s3://b/y". */
        while (l > 0 && *p == ' ')
            p++, l--;
        while (l > 0 && p[l - 1] == ' ')
            l--;
        if (n == SW_ANN_MAX_INPUTS) {
            snprintf(why, sizeof(why), "more than %d", SW_ANN_MAX_INPUTS);
            return ann_error(err, A_INPUTS, v, INPUTS_EXPECT, why);
        }
        if (l == 0) {
            snprintf(why, sizeof(why), "input %d is empty", n + 1);
            return ann_error(err, A_INPUTS, v, INPUTS_EXPECT, why);
        }
        /* An item longer than `item` is longer than any valid location:
         * its first 599 bytes already fail, naming the part too long. */
        char item[600];
        const char *w = NULL;
        size_t il = l < sizeof(item) ? l : sizeof(item) - 1;
        memcpy(item, p, il);
        item[il] = '\0';
        if (sw_s3_uri_parse(item, &out->inputs[n], &w) == 0) {
            for (int j = 0; j < n; j++)
                if (strcmp(out->inputs[j].bucket, out->inputs[n].bucket) == 0 &&
                    strcmp(out->inputs[j].prefix, out->inputs[n].prefix) == 0) {
                    snprintf(why, sizeof(why), "input %d repeats input %d", n + 1, j + 1);
                    return ann_error(err, A_INPUTS, v, INPUTS_EXPECT, why);
                }
        }
        if (w != NULL) {
            snprintf(why, sizeof(why), "input %d: %s", n + 1, w);
            return ann_error(err, A_INPUTS, v, INPUTS_EXPECT, why);
        }
        out->n_inputs = ++n;
        if (end == NULL)
            return 0;
        p = end + 1;
    }
}

static int parse_one(enum ann a, const char *v, double created, struct sw_burst_spec *out,
                     struct sw_error *err)
{
    const char *why = NULL;
    switch (a) {
    case A_BURST:
        if (sw_burst_mode_parse(v, &out->burst) != 0)
            return ann_error(err, a, v, "auto, never or cloud-first", NULL);
        out->managed = out->burst != SW_BURST_NEVER;
        return 0;
    case A_INPUTS:
        return inputs_ann(v, out, err);
    case A_OUTPUTS:
        if (sw_s3_uri_parse(v, &out->outputs, &why) != 0)
            return ann_error(err, a, v, OUTPUTS_EXPECT, why);
        out->has_outputs = true;
        return 0;
    case A_DEADLINE:
        return deadline_ann(v, created, &out->deadline, err);
    case A_MAX_PRICE:
        return price_ann(v, &out->max_price, err);
    case A_RUNTIME:
        return duration_ann(a, v, &out->runtime_s, err);
    case A_CHECKPOINT:
        return duration_ann(a, v, &out->checkpoint_s, err);
    case A_TEAM:
        if (!dns_label(v))
            return ann_error(err, a, v,
                             "a DNS-1123 label: 1-63 lowercase letters, digits and '-', starting "
                             "and ending with a letter or digit",
                             NULL);
        snprintf(out->team, sizeof(out->team), "%s", v);
        return 0;
    case A_PRIORITY:
        if (sw_priority_parse(v, &out->prio) != 0)
            return ann_error(err, a, v, "best-effort, development, training or production", NULL);
        out->prio_set = true;
        return 0;
    case A_ON_LOSS:
        if (strcmp(v, "requeue") == 0)
            out->requeue_on_loss = true;
        else if (strcmp(v, "wait") == 0)
            out->requeue_on_loss = false;
        else
            return ann_error(err, a, v, "requeue or wait", NULL);
        return 0;
    case A_GPU_SHARE:
        return share_ann(v, &out->gpu_milli, err);
    case A__COUNT:
        break;
    }
    return SW_EINVAL;
}

int sw_burst_spec_parse(const cJSON *annotations, double created, struct sw_burst_spec *out,
                        struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->burst = SW_BURST_NEVER;
    out->prio = SW_PRIO_TRAINING;
    out->requeue_on_loss = true;
    if (annotations == NULL || cJSON_IsNull(annotations))
        return 0;
    if (!cJSON_IsObject(annotations))
        return sw_error_set(err, SW_EINVAL,
                            "field \"metadata.annotations\": expected an object, got %s",
                            sw_json_type_name(annotations));
    /* One pass collects the known keys, in a fixed order of checks after. */
    const cJSON *given[A__COUNT] = {NULL};
    const cJSON *item;
    cJSON_ArrayForEach(item, annotations)
    {
        if (item->string == NULL || strncmp(item->string, SW_ANN_PREFIX, 12) != 0)
            continue;
        for (int a = 0; a < A__COUNT; a++) {
            if (strcmp(item->string, ann_keys[a]) != 0)
                continue;
            if (given[a] != NULL)
                return sw_error_set(err, SW_EINVAL, "annotation \"%s\": given twice", ann_keys[a]);
            given[a] = item;
        }
    }
    if (given[A_BURST] == NULL)
        return 0; /* not spillway's Job: nothing else is read */
    for (int a = 0; a < A__COUNT; a++) {
        if (given[a] == NULL)
            continue;
        if (!cJSON_IsString(given[a]) || given[a]->valuestring == NULL)
            return sw_error_set(err, SW_EINVAL, "annotation \"%s\": expected a string, got %s",
                                ann_keys[a], sw_json_type_name(given[a]));
        int rc = parse_one((enum ann)a, given[a]->valuestring, created, out, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- GPU shape ---------------------------------------------------------- */

#define MAX_PODS         1000000
#define MAX_GPUS_PER_POD 1024

/* A whole number in [0, max] from a JSON number or a string of digits. */
static int whole(const cJSON *v, int64_t max, int64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d >= 0) || d > (double)max || d != floor(d))
            return -1;
        *out = (int64_t)d;
        return 0;
    }
    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return -1;
    const char *s = v->valuestring;
    size_t n = strlen(s);
    if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
        return -1;
    long long x = strtoll(s, NULL, 10);
    if (x > max)
        return -1;
    *out = x;
    return 0;
}

/* "{\"a\": 1}"-free description of a JSON value, for "got ...". */
static void got(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v) && v->valuestring != NULL) {
        char q[4 * VALUE_SHOWN + 4];
        quote_value(v->valuestring, q);
        snprintf(buf, cap, "\"%s\"", q);
    } else if (cJSON_IsNumber(v)) {
        snprintf(buf, cap, "%.17g", v->valuedouble);
    } else {
        snprintf(buf, cap, "%s", sw_json_type_name(v));
    }
}

/* A container's request of `res` (nvidia.com/gpu or a MIG slice):
 * resources.requests, else resources.limits. */
static int container_res(const cJSON *c, const char *res, const char *what, const char *list,
                         int idx, int64_t *out, struct sw_error *err)
{
    *out = 0;
    if (!cJSON_IsObject(c))
        return sw_error_set(err, SW_EINVAL, "%s: field \"%s[%d]\": expected an object, got %s",
                            what, list, idx, sw_json_type_name(c));
    const char *kind = "requests";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(sw_json_path(c, "resources.requests"), res);
    if (v == NULL) {
        kind = "limits";
        v = cJSON_GetObjectItemCaseSensitive(sw_json_path(c, "resources.limits"), res);
    }
    if (v == NULL)
        return 0;
    if (whole(v, MAX_GPUS_PER_POD, out) != 0) {
        char g[4 * VALUE_SHOWN + 8];
        got(v, g, sizeof(g));
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"%s[%d].resources.%s.%.100s\": expected a whole "
                            "number of %s from 0 to %d, got %s",
                            what, list, idx, kind, res,
                            strcmp(res, "nvidia.com/gpu") == 0 ? "GPUs" : "MIG slices",
                            MAX_GPUS_PER_POD, g);
    }
    return 0;
}

/*
 * A pod's request of `res` as the scheduler computes it (k8s resourcehelper
 * PodRequests): sidecars run alongside everything started after them.
 * The containers lists are checked by the caller.
 */
static int template_res(const cJSON *pspec, const char *res, const char *what, int64_t *out,
                        struct sw_error *err)
{
    const cJSON *ctrs = cJSON_GetObjectItemCaseSensitive(pspec, "containers");
    const cJSON *inits = cJSON_GetObjectItemCaseSensitive(pspec, "initContainers");
    int64_t sum = 0, sidecars = 0, init_max = 0, g;
    const cJSON *c;
    int i = 0, rc;
    cJSON_ArrayForEach(c, ctrs)
    {
        if ((rc = container_res(c, res, what, "spec.template.spec.containers", i++, &g, err)) != 0)
            return rc;
        sum += g;
    }
    i = 0;
    const cJSON *init_list = cJSON_IsArray(inits) ? inits : NULL;
    cJSON_ArrayForEach(c, init_list)
    {
        if ((rc = container_res(c, res, what, "spec.template.spec.initContainers", i++, &g, err)) !=
            0)
            return rc;
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(c, "restartPolicy");
        int64_t at_start;
        if (cJSON_IsString(rp) && strcmp(rp->valuestring, "Always") == 0) {
            sidecars += g;
            at_start = sidecars;
        } else {
            at_start = g + sidecars;
        }
        if (at_start > init_max)
            init_max = at_start;
    }
    *out = sum + sidecars > init_max ? sum + sidecars : init_max;
    return 0;
}

/* spec.parallelism or spec.completions: absent (or null) leaves *out. */
static int count_field(const cJSON *job, const char *name, const char *what, int64_t *out,
                       struct sw_error *err)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "spec"), name);
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || whole(v, INT32_MAX, out) != 0) {
        char g[4 * VALUE_SHOWN + 8];
        got(v, g, sizeof(g));
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.%s\": expected a whole number from 0 to %d, got %s",
                            what, name, INT32_MAX, g);
    }
    return 0;
}

int sw_job_gpu_shape(const cJSON *job, int *pods, int *gpus_per_pod, struct sw_error *err)
{
    char what[300];
    const cJSON *name = sw_json_path(job, "metadata.name");
    const cJSON *ns = sw_json_path(job, "metadata.namespace");
    snprintf(what, sizeof(what), "Job %.100s%s%.120s",
             cJSON_IsString(ns) && ns->valuestring ? ns->valuestring : "",
             cJSON_IsString(ns) && ns->valuestring ? "/" : "",
             cJSON_IsString(name) && name->valuestring ? name->valuestring : "(no name)");
    if (!cJSON_IsObject(job))
        return sw_error_set(err, SW_EINVAL, "Job: expected an object, got %s",
                            sw_json_type_name(job));
    int64_t par = 1, comp = -1;
    int rc;
    if ((rc = count_field(job, "parallelism", what, &par, err)) != 0 ||
        (rc = count_field(job, "completions", what, &comp, err)) != 0)
        return rc;
    if (comp >= 0 && comp < par)
        par = comp;
    if (par > MAX_PODS)
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.parallelism\": expected at most %d pods, got %lld",
                            what, MAX_PODS, (long long)par);

    const cJSON *tmpl = sw_json_path(job, "spec.template");
    if (!cJSON_IsObject(tmpl))
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.template\": expected a pod "
                            "template, got %s",
                            what, tmpl ? sw_json_type_name(tmpl) : "nothing");
    const cJSON *pspec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
    if (!cJSON_IsObject(pspec))
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.template.spec\": expected a pod "
                            "spec, got %s",
                            what, pspec ? sw_json_type_name(pspec) : "nothing");
    const cJSON *ctrs = cJSON_GetObjectItemCaseSensitive(pspec, "containers");
    if (!cJSON_IsArray(ctrs) || cJSON_GetArraySize(ctrs) == 0)
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.template.spec.containers\": expected a list of at "
                            "least one container, got %s",
                            what,
                            !ctrs                 ? "nothing"
                            : cJSON_IsArray(ctrs) ? "an empty list"
                                                  : sw_json_type_name(ctrs));
    const cJSON *inits = cJSON_GetObjectItemCaseSensitive(pspec, "initContainers");
    if (inits != NULL && !cJSON_IsNull(inits) && !cJSON_IsArray(inits))
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.template.spec.initContainers\": expected a list, "
                            "got %s",
                            what, sw_json_type_name(inits));

    int64_t per_pod;
    if ((rc = template_res(pspec, "nvidia.com/gpu", what, &per_pod, err)) != 0)
        return rc;
    if (per_pod > MAX_GPUS_PER_POD)
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"spec.template.spec\": expected at most %d GPUs per pod, "
                            "got %lld",
                            what, MAX_GPUS_PER_POD, (long long)per_pod);
    *pods = (int)par;
    *gpus_per_pod = (int)per_pod;
    return 0;
}

#define MIG_PREFIX "nvidia.com/mig-"

/* "Job NAMESPACE/NAME" of a Job object, for messages. */
static void job_what(const cJSON *job, char *what, size_t cap)
{
    const cJSON *name = sw_json_path(job, "metadata.name");
    const cJSON *ns = sw_json_path(job, "metadata.namespace");
    snprintf(what, cap, "Job %.100s%s%.120s",
             cJSON_IsString(ns) && ns->valuestring ? ns->valuestring : "",
             cJSON_IsString(ns) && ns->valuestring ? "/" : "",
             cJSON_IsString(name) && name->valuestring ? name->valuestring : "(no name)");
}

int sw_job_gpu_ask(const cJSON *job, const struct sw_burst_spec *spec, struct sw_gpu_ask *out,
                   struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = sw_job_gpu_shape(job, &out->pods, &out->gpus_per_pod, err);
    if (rc != 0)
        return rc;
    char what[300];
    job_what(job, what, sizeof(what));
    /* The one MIG profile the pods ask for, if any: every container's
     * requests and limits (the shape above checked the lists). */
    const cJSON *pspec = sw_json_path(job, "spec.template.spec");
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const kinds[] = {"requests", "limits"};
    const char *profile = NULL;
    for (size_t l = 0; l < 2; l++) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(pspec, lists[l]), *c;
        if (!cJSON_IsArray(list))
            continue;
        int idx = 0;
        cJSON_ArrayForEach(c, list)
        {
            for (size_t k = 0; k < 2; k++) {
                const cJSON *r = sw_json_path(sw_json_child(c, "resources"), kinds[k]), *it;
                if (!cJSON_IsObject(r))
                    continue;
                cJSON_ArrayForEach(it, r)
                {
                    if (it->string == NULL ||
                        strncmp(it->string, MIG_PREFIX, sizeof(MIG_PREFIX) - 1) != 0)
                        continue;
                    const char *p = it->string + sizeof(MIG_PREFIX) - 1;
                    char q[4 * VALUE_SHOWN + 4];
                    quote_value(it->string, q);
                    if (!sw_mig_profile_valid(p))
                        return sw_error_set(
                            err, SW_EINVAL,
                            "%s: field \"spec.template.spec.%s[%d].resources.%s\": resource "
                            "\"%s\": expected a MIG profile as NVIDIA's device plugin names it, "
                            "e.g. \"nvidia.com/mig-1g.10gb\"",
                            what, lists[l], idx, kinds[k], q);
                    if (profile != NULL && strcmp(profile, p) != 0)
                        return sw_error_set(
                            err, SW_EINVAL,
                            "%s: field \"spec.template.spec.%s[%d].resources.%s\": resource "
                            "\"%s\": expected one MIG profile per pod, got %.40s too",
                            what, lists[l], idx, kinds[k], q, profile);
                    profile = p;
                }
            }
            idx++;
        }
    }
    if (profile != NULL) {
        char res[80];
        snprintf(res, sizeof(res), "%s%s", MIG_PREFIX, profile);
        int64_t slices = 0;
        if ((rc = template_res(pspec, res, what, &slices, err)) != 0)
            return rc;
        if (out->gpus_per_pod > 0)
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"spec.template.spec\": expected MIG slices (%s) or "
                                "nvidia.com/gpu, got both",
                                what, res);
        if (spec->gpu_milli > 0)
            return sw_error_set(err, SW_EINVAL,
                                "%s: annotation \"" SW_ANN_GPU_SHARE "\": a share of a GPU "
                                "cannot be given with MIG slices (%s)",
                                what, res);
        out->gpus_per_pod = (int)slices;
        snprintf(out->mig_profile, sizeof(out->mig_profile), "%s", profile);
        return 0;
    }
    if (spec->gpu_milli > 0 && spec->gpu_milli < 1000) {
        if (out->gpus_per_pod != 1)
            return sw_error_set(err, SW_EINVAL,
                                "%s: annotation \"" SW_ANN_GPU_SHARE "\": a share of a GPU is "
                                "for pods asking nvidia.com/gpu: 1, got %d per pod",
                                what, out->gpus_per_pod);
        out->gpu_milli = spec->gpu_milli;
    }
    return 0;
}
