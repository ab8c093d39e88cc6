/*
 * record.c - JSON objects into compact records, and back for readers.
 *
 * Each conversion runs its fill function twice over the object: once to
 * size the record's allocation (arrays and own strings), once to fill it.
 * Interning happens in the second pass only. The allocation is zeroed, so a
 * record left half-filled when memory ran out frees like a full one.
 */
#include "clusters/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/json.h"

#define KEEP_PREFIX "spillway.io/"
#define MAX_ITEMS   1024 /* per array: more is not an object we care for */

/* ---- the record's allocation ---------------------------------------------- */

struct blob {
    char *p; /* NULL while sizing */
    size_t used;
    struct sw_intern *t;
    bool oom;
};

static void *b_alloc(struct blob *b, size_t n)
{
    size_t off = (b->used + 7) & ~(size_t)7;
    b->used = off + n;
    return b->p && n ? b->p + off : NULL;
}

static const char *b_str(struct blob *b, const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1, off = b->used;
    b->used += n;
    if (b->p == NULL)
        return NULL;
    memcpy(b->p + off, s, n);
    return b->p + off;
}

static const char *b_intern(struct blob *b, const char *s)
{
    if (s == NULL || b->p == NULL)
        return NULL;
    const char *r = sw_intern_str(b->t, s);
    if (r == NULL)
        b->oom = true;
    return r;
}

static const char *str_at(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *child(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static uint16_t count_items(const cJSON *a, bool (*keep)(const cJSON *))
{
    size_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (n < MAX_ITEMS && (keep == NULL || keep(it)))
            n++;
    }
    return (uint16_t)n;
}

static bool is_string(const cJSON *v)
{
    return cJSON_IsString(v);
}

static bool kept_key(const cJSON *v)
{
    return cJSON_IsString(v) && v->string != NULL &&
           (strncmp(v->string, KEEP_PREFIX, sizeof(KEEP_PREFIX) - 1) == 0 ||
            strcmp(v->string, "app.kubernetes.io/managed-by") == 0 ||
            strcmp(v->string, "kueue.x-k8s.io/queue-name") == 0);
}

/* Copies an object's string members (those `keep` accepts) as interned pairs. */
static const struct sw_kv *b_kvs(struct blob *b, const cJSON *o, bool (*keep)(const cJSON *),
                                 uint16_t *n)
{
    *n = cJSON_IsObject(o) ? count_items(o, keep) : 0;
    struct sw_kv *kv = b_alloc(b, *n * sizeof(*kv));
    if (kv == NULL)
        return NULL;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        if (i == *n)
            break;
        if (keep(it)) {
            kv[i].key = b_intern(b, it->string);
            kv[i].value = b_intern(b, it->valuestring);
            i++;
        }
    }
    return kv;
}

static bool any_condition(const cJSON *c)
{
    return cJSON_IsObject(c) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "type"));
}

/* Conditions; with timestamps (own strings) when `times`. */
static const struct sw_condition *b_conds(struct blob *b, const cJSON *a, bool times, uint16_t *n)
{
    *n = cJSON_IsArray(a) ? count_items(a, any_condition) : 0;
    struct sw_condition *cs = b_alloc(b, *n * sizeof(*cs));
    size_t i = 0;
    const cJSON *c, *list = cJSON_IsArray(a) ? a : NULL;
    cJSON_ArrayForEach(c, list)
    {
        if (i == *n)
            break;
        if (!any_condition(c))
            continue;
        const char *lt = times ? b_str(b, str_at(c, "lastTransitionTime")) : NULL;
        const char *lp = times ? b_str(b, str_at(c, "lastProbeTime")) : NULL;
        if (cs != NULL) {
            cs[i].type = b_intern(b, str_at(c, "type"));
            cs[i].status = b_intern(b, str_at(c, "status"));
            cs[i].reason = b_intern(b, str_at(c, "reason"));
            cs[i].message = b_intern(b, str_at(c, "message"));
            cs[i].last_transition = lt;
            cs[i].last_probe = lp;
        }
        i++;
    }
    return cs;
}

static void release_kvs(struct sw_intern *t, const struct sw_kv *kv, size_t n)
{
    for (size_t i = 0; kv != NULL && i < n; i++) {
        sw_intern_release(t, kv[i].key);
        sw_intern_release(t, kv[i].value);
    }
}

static void release_conds(struct sw_intern *t, const struct sw_condition *c, size_t n)
{
    for (size_t i = 0; c != NULL && i < n; i++) {
        sw_intern_release(t, c[i].type);
        sw_intern_release(t, c[i].status);
        sw_intern_release(t, c[i].reason);
        sw_intern_release(t, c[i].message);
    }
}

/* Runs `fill` to size, allocates, runs it again to fill. */
static int build(struct sw_intern *t, const cJSON *obj, size_t head,
                 void (*fill)(struct blob *, const cJSON *, void *), void **out)
{
    struct blob b = {NULL, head, t, false};
    char scratch[512];
    sw_assert(head <= sizeof(scratch));
    memset(scratch, 0, sizeof(scratch));
    fill(&b, obj, scratch);
    size_t size = b.used;
    b.p = sw_calloc(1, size);
    if (b.p == NULL)
        return SW_ENOMEM;
    b.used = head;
    fill(&b, obj, b.p);
    sw_assert(b.used == size);
    *out = b.p;
    return b.oom ? SW_ENOMEM : 0;
}

static int named(const cJSON *obj, const char *kind, struct sw_error *err)
{
    const cJSON *md = child(obj, "metadata");
    if (!cJSON_IsObject(obj) || !cJSON_IsObject(md))
        return sw_error_set(err, SW_EPARSE, "%s: field \"metadata\": expected an object", kind);
    if (!cJSON_IsString(child(md, "name")) || child(md, "name")->valuestring[0] == '\0')
        return sw_error_set(err, SW_EPARSE, "%s: field \"metadata.name\": expected a string", kind);
    return 0;
}

static int32_t count_or_absent(const cJSON *o, const char *k)
{
    const cJSON *v = child(o, k);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= INT32_MAX
               ? (int32_t)v->valuedouble
               : SW_REC_ABSENT;
}

/* ---- Jobs ------------------------------------------------------------------- */

/* spec.parallelism or completions: a JSON number only (as the API has it). */
static int64_t count_field(const cJSON *v)
{
    if (v == NULL || cJSON_IsNull(v))
        return SW_REC_ABSENT;
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    return d >= 0 && d <= 9e15 && d == floor(d) ? (int64_t)d : SW_REC_INVALID;
}

static int64_t whole_or(const cJSON *v)
{
    if (v == NULL || cJSON_IsNull(v))
        return SW_REC_ABSENT;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        return d >= 0 && d <= 9e15 && d == floor(d) ? (int64_t)d : SW_REC_INVALID;
    }
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        size_t n = strlen(s);
        if (n == 0 || n > 15 || strspn(s, "0123456789") != n)
            return SW_REC_INVALID;
        return strtoll(s, NULL, 10);
    }
    return SW_REC_INVALID;
}

/* A container's GPUs: resources.requests, else resources.limits; 0 when neither. */
static int64_t ctr_gpus(const cJSON *c)
{
    const cJSON *res = child(c, "resources");
    const cJSON *v = child(child(res, "requests"), SW_GPU_RESOURCE);
    if (v == NULL)
        v = child(child(res, "limits"), SW_GPU_RESOURCE);
    if (!cJSON_IsObject(c))
        return SW_REC_INVALID;
    int64_t g = whole_or(v);
    return g == SW_REC_ABSENT ? 0 : g;
}

/* GPUs per pod of a pod spec, as the scheduler sums requests (sidecars run
 * alongside what starts after them); see sw_job_gpu_shape. */
static int64_t template_gpus(const cJSON *pspec)
{
    const cJSON *ctrs = child(pspec, "containers"), *inits = child(pspec, "initContainers");
    if (!cJSON_IsObject(pspec) || !cJSON_IsArray(ctrs) || cJSON_GetArraySize(ctrs) == 0)
        return SW_REC_ABSENT;
    if (inits != NULL && !cJSON_IsNull(inits) && !cJSON_IsArray(inits))
        return SW_REC_INVALID;
    int64_t sum = 0, sidecars = 0, init_max = 0, g;
    const cJSON *c;
    cJSON_ArrayForEach(c, ctrs)
    {
        if ((g = ctr_gpus(c)) < 0)
            return SW_REC_INVALID;
        sum += g;
    }
    const cJSON *init_list = cJSON_IsArray(inits) ? inits : NULL;
    cJSON_ArrayForEach(c, init_list)
    {
        if ((g = ctr_gpus(c)) < 0)
            return SW_REC_INVALID;
        const char *rp = str_at(c, "restartPolicy");
        int64_t at_start;
        if (rp && strcmp(rp, "Always") == 0) {
            sidecars += g;
            at_start = sidecars;
        } else {
            at_start = g + sidecars;
        }
        if (at_start > init_max)
            init_max = at_start;
    }
    return sum + sidecars > init_max ? sum + sidecars : init_max;
}

/* SPILLWAY_REGION in the first container that sets it. */
static const char *region_env(const cJSON *pspec)
{
    const cJSON *c, *e;
    cJSON_ArrayForEach(c, child(pspec, "containers"))
    {
        cJSON_ArrayForEach(e, child(c, "env"))
        {
            const char *n = str_at(e, "name");
            if (n && strcmp(n, "SPILLWAY_REGION") == 0)
                return str_at(e, "value");
        }
    }
    return NULL;
}

static void fill_job(struct blob *b, const cJSON *job, void *out)
{
    struct sw_job_record *r = out;
    const cJSON *md = child(job, "metadata"), *spec = child(job, "spec"),
                *st = child(job, "status");
    const cJSON *pspec = child(child(spec, "template"), "spec");
    r->name = b_str(b, str_at(md, "name"));
    r->uid = b_str(b, str_at(md, "uid") ? str_at(md, "uid") : "");
    r->rv = b_str(b, str_at(md, "resourceVersion") ? str_at(md, "resourceVersion") : "");
    r->created = b_str(b, str_at(md, "creationTimestamp"));
    r->deleting = b_str(b, str_at(md, "deletionTimestamp"));
    r->start_time = b_str(b, str_at(st, "startTime"));
    r->completion_time = b_str(b, str_at(st, "completionTime"));
    r->completed_indexes = b_str(b, str_at(st, "completedIndexes"));
    r->failed_indexes = b_str(b, str_at(st, "failedIndexes"));
    r->ns = b_intern(b, str_at(md, "namespace"));
    r->managed_by = b_intern(b, str_at(spec, "managedBy"));
    r->region_env = b_intern(b, region_env(pspec));
    r->generation = count_field(child(md, "generation"));
    r->parallelism = count_field(child(spec, "parallelism"));
    r->completions = count_field(child(spec, "completions"));
    r->gpus_per_pod = template_gpus(pspec);
    r->active = count_or_absent(st, "active");
    r->ready = count_or_absent(st, "ready");
    r->terminating = count_or_absent(st, "terminating");
    r->succeeded = count_or_absent(st, "succeeded");
    r->failed = count_or_absent(st, "failed");
    const cJSON *susp = child(spec, "suspend");
    r->suspend = cJSON_IsBool(susp) ? (int8_t)cJSON_IsTrue(susp) : SW_REC_ABSENT;
    r->labels = b_kvs(b, child(md, "labels"), kept_key, &r->nlabels);
    r->annotations = b_kvs(b, child(md, "annotations"), kept_key, &r->nannotations);
    r->node_selector = b_kvs(b, child(pspec, "nodeSelector"), is_string, &r->nselector);
    const cJSON *fins = child(md, "finalizers");
    r->nfinalizers = cJSON_IsArray(fins) ? count_items(fins, is_string) : 0;
    const char **f = b_alloc(b, r->nfinalizers * sizeof(*f));
    size_t i = 0;
    const cJSON *it, *flist = f ? fins : NULL;
    cJSON_ArrayForEach(it, flist)
    {
        if (i < r->nfinalizers && cJSON_IsString(it))
            f[i++] = b_intern(b, it->valuestring);
    }
    r->finalizers = f;
    r->conditions = b_conds(b, child(st, "conditions"), true, &r->nconditions);
}

int sw_job_record_from_json(struct sw_intern *t, const cJSON *job, struct sw_job_record **out,
                            struct sw_error *err)
{
    *out = NULL;
    int rc = named(job, "Job", err);
    if (rc != 0)
        return rc;
    void *p = NULL;
    rc = build(t, job, sizeof(struct sw_job_record), fill_job, &p);
    if (rc != 0) {
        sw_job_record_free(t, p);
        return sw_error_set(err, rc, "Job %s: out of memory",
                            cJSON_GetStringValue(sw_json_path(job, "metadata.name")));
    }
    *out = p;
    return 0;
}

static bool job_finished(const cJSON *job)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, child(child(job, "status"), "conditions"))
    {
        const char *type = str_at(c, "type"), *status = str_at(c, "status");
        if (type && status && strcmp(status, "True") == 0 &&
            (strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0))
            return true;
    }
    return false;
}

int sw_job_record_from_json_spec(struct sw_intern *t, const cJSON *job, const char *annotation,
                                 struct sw_job_record **out, struct sw_error *err)
{
    int rc = sw_job_record_from_json(t, job, out, err);
    if (rc != 0 || annotation == NULL)
        return rc;
    const cJSON *spec = child(job, "spec");
    if (str_at(child(child(job, "metadata"), "annotations"), annotation) == NULL ||
        !cJSON_IsObject(spec) || job_finished(job))
        return 0;
    (*out)->spec_text = cJSON_PrintUnformatted(spec);
    return 0;
}

void sw_job_record_free(struct sw_intern *t, struct sw_job_record *r)
{
    if (r == NULL)
        return;
    cJSON_free(r->spec_text);
    sw_intern_release(t, r->ns);
    sw_intern_release(t, r->managed_by);
    sw_intern_release(t, r->region_env);
    release_kvs(t, r->labels, r->nlabels);
    release_kvs(t, r->annotations, r->nannotations);
    release_kvs(t, r->node_selector, r->nselector);
    for (size_t i = 0; r->finalizers != NULL && i < r->nfinalizers; i++)
        sw_intern_release(t, r->finalizers[i]);
    release_conds(t, r->conditions, r->nconditions);
    sw_free(r);
}

static const char *kv_find(const struct sw_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (kv[i].key != NULL && strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NULL;
}

const char *sw_job_record_label(const struct sw_job_record *r, const char *key)
{
    return kv_find(r->labels, r->nlabels, key);
}

const char *sw_job_record_annotation(const struct sw_job_record *r, const char *key)
{
    return kv_find(r->annotations, r->nannotations, key);
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v != NULL)
        cJSON_AddStringToObject(o, k, v);
}

static void add_count(cJSON *o, const char *k, int64_t v)
{
    if (v >= 0)
        cJSON_AddNumberToObject(o, k, (double)v);
    else if (v == SW_REC_INVALID)
        cJSON_AddStringToObject(o, k, "invalid");
}

static cJSON *kvs_json(const struct sw_kv *kv, size_t n)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o != NULL && i < n; i++)
        add_str(o, kv[i].key, kv[i].value);
    return o;
}

cJSON *sw_job_record_json(const struct sw_job_record *r)
{
    cJSON *j = cJSON_CreateObject();
    if (j == NULL)
        return NULL;
    cJSON_AddStringToObject(j, "apiVersion", "batch/v1");
    cJSON_AddStringToObject(j, "kind", "Job");
    cJSON *md = cJSON_AddObjectToObject(j, "metadata");
    add_str(md, "name", r->name);
    add_str(md, "namespace", r->ns);
    add_str(md, "uid", r->uid);
    add_str(md, "resourceVersion", r->rv);
    if (r->generation >= 0)
        cJSON_AddNumberToObject(md, "generation", (double)r->generation);
    add_str(md, "creationTimestamp", r->created);
    add_str(md, "deletionTimestamp", r->deleting);
    if (r->nlabels)
        cJSON_AddItemToObject(md, "labels", kvs_json(r->labels, r->nlabels));
    if (r->nannotations)
        cJSON_AddItemToObject(md, "annotations", kvs_json(r->annotations, r->nannotations));
    if (r->nfinalizers) {
        cJSON *f = cJSON_AddArrayToObject(md, "finalizers");
        for (size_t i = 0; i < r->nfinalizers; i++)
            cJSON_AddItemToArray(f, cJSON_CreateString(r->finalizers[i]));
    }
    cJSON *spec = cJSON_AddObjectToObject(j, "spec");
    add_count(spec, "parallelism", r->parallelism);
    add_count(spec, "completions", r->completions);
    if (r->suspend >= 0)
        cJSON_AddBoolToObject(spec, "suspend", r->suspend);
    add_str(spec, "managedBy", r->managed_by);
    if (r->gpus_per_pod != SW_REC_ABSENT) {
        cJSON *ps = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "template"), "spec");
        if (r->nselector)
            cJSON_AddItemToObject(ps, "nodeSelector", kvs_json(r->node_selector, r->nselector));
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "containers"), c);
        cJSON_AddStringToObject(c, "name", "main");
        add_count(cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "resources"), "requests"),
                  SW_GPU_RESOURCE, r->gpus_per_pod);
        if (r->region_env) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "env"), e);
            cJSON_AddStringToObject(e, "name", "SPILLWAY_REGION");
            cJSON_AddStringToObject(e, "value", r->region_env);
        }
    }
    cJSON *whole = r->spec_text ? cJSON_Parse(r->spec_text) : NULL;
    if (cJSON_IsObject(whole))
        cJSON_ReplaceItemInObjectCaseSensitive(j, "spec", whole);
    else
        cJSON_Delete(whole);
    cJSON *st = cJSON_AddObjectToObject(j, "status");
    add_count(st, "active", r->active);
    add_count(st, "ready", r->ready);
    add_count(st, "terminating", r->terminating);
    add_count(st, "succeeded", r->succeeded);
    add_count(st, "failed", r->failed);
    add_str(st, "startTime", r->start_time);
    add_str(st, "completionTime", r->completion_time);
    add_str(st, "completedIndexes", r->completed_indexes);
    add_str(st, "failedIndexes", r->failed_indexes);
    if (r->nconditions) {
        cJSON *cs = cJSON_AddArrayToObject(st, "conditions");
        for (size_t i = 0; i < r->nconditions; i++) {
            const struct sw_condition *c = &r->conditions[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(cs, o);
            add_str(o, "type", c->type);
            add_str(o, "status", c->status);
            add_str(o, "reason", c->reason);
            add_str(o, "message", c->message);
            add_str(o, "lastProbeTime", c->last_probe);
            add_str(o, "lastTransitionTime", c->last_transition);
        }
    }
    return j;
}

/* ---- Pods ------------------------------------------------------------------- */

/* The Job that owns a pod: its job-name label, else its controller reference. */
static const char *pod_owner(const cJSON *md)
{
    const cJSON *labels = child(md, "labels");
    const char *j = str_at(labels, "batch.kubernetes.io/job-name");
    if (j == NULL)
        j = str_at(labels, "job-name");
    if (j != NULL)
        return j;
    const cJSON *o;
    cJSON_ArrayForEach(o, child(md, "ownerReferences"))
    {
        const char *k = str_at(o, "kind");
        if (cJSON_IsTrue(child(o, "controller")) && k && strcmp(k, "Job") == 0)
            return str_at(o, "name");
    }
    return NULL;
}

static void fill_pod(struct blob *b, const cJSON *pod, void *out)
{
    struct sw_pod_record *r = out;
    const cJSON *md = child(pod, "metadata"), *spec = child(pod, "spec"),
                *st = child(pod, "status");
    r->name = b_str(b, str_at(md, "name"));
    r->rv = b_str(b, str_at(md, "resourceVersion") ? str_at(md, "resourceVersion") : "");
    r->ns = b_intern(b, str_at(md, "namespace"));
    r->owner = b_intern(b, pod_owner(md));
    r->node = b_intern(b, str_at(spec, "nodeName"));
    r->phase = b_intern(b, str_at(st, "phase"));
    struct sw_pod_facts f;
    if (b->p != NULL) { /* not needed to size the record */
        bool ok = sw_pod_facts_from_json(pod, &f, NULL) == 0;
        r->gpu_request = ok ? f.gpu_request : SW_REC_INVALID;
        if (ok && f.mig_profile != NULL) {
            r->mig_profile = b_intern(b, f.mig_profile);
            r->mig_request = f.mig_request;
        }
    }
    r->node_selector = b_kvs(b, child(spec, "nodeSelector"), is_string, &r->nselector);
    r->conditions = b_conds(b, child(st, "conditions"), false, &r->nconditions);
}

int sw_pod_record_from_json(struct sw_intern *t, const cJSON *pod, struct sw_pod_record **out,
                            struct sw_error *err)
{
    *out = NULL;
    int rc = named(pod, "Pod", err);
    if (rc != 0)
        return rc;
    void *p = NULL;
    if ((rc = build(t, pod, sizeof(struct sw_pod_record), fill_pod, &p)) != 0) {
        sw_pod_record_free(t, p);
        return sw_error_set(err, rc, "Pod %s: out of memory",
                            cJSON_GetStringValue(sw_json_path(pod, "metadata.name")));
    }
    *out = p;
    return 0;
}

void sw_pod_record_free(struct sw_intern *t, struct sw_pod_record *r)
{
    if (r == NULL)
        return;
    sw_intern_release(t, r->ns);
    sw_intern_release(t, r->owner);
    sw_intern_release(t, r->node);
    sw_intern_release(t, r->phase);
    sw_intern_release(t, r->mig_profile);
    release_kvs(t, r->node_selector, r->nselector);
    release_conds(t, r->conditions, r->nconditions);
    sw_free(r);
}

int sw_pod_facts_from_record(const struct sw_pod_record *r, struct sw_pod_facts *out,
                             struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    if (r->gpu_request == SW_REC_INVALID)
        return sw_error_set(err, SW_EPARSE,
                            "Pod %s/%s: field \"spec.containers[].resources\": expected a whole "
                            "number of nvidia.com/gpu",
                            r->ns ? r->ns : "", r->name);
    out->namespace = r->ns ? r->ns : "";
    out->name = r->name;
    out->node_name = r->node;
    out->gpu_request = r->gpu_request;
    out->mig_profile = r->mig_profile;
    out->mig_request = r->mig_request;
    out->terminal =
        r->phase && (strcmp(r->phase, "Succeeded") == 0 || strcmp(r->phase, "Failed") == 0);
    out->selectorv = r->node_selector;
    out->nselectorv = r->nselector;
    return 0;
}

/* ---- Nodes ------------------------------------------------------------------ */

static bool any_taint(const cJSON *t)
{
    return cJSON_IsObject(t) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "key"));
}

static bool is_mig_resource(const cJSON *v)
{
    return v->string != NULL &&
           strncmp(v->string, SW_MIG_RESOURCE_PREFIX, sizeof(SW_MIG_RESOURCE_PREFIX) - 1) == 0 &&
           v->string[sizeof(SW_MIG_RESOURCE_PREFIX) - 1] != '\0';
}

/* Keeps the node's allocatable MIG slices per profile (the first
 * SW_NODE_MIG_MAX); a bad quantity is kept as SW_REC_INVALID. */
static void node_mig(struct blob *b, const cJSON *node, struct sw_node_record *r)
{
    const cJSON *alloc = child(child(node, "status"), "allocatable");
    uint16_t n = cJSON_IsObject(alloc) ? count_items(alloc, is_mig_resource) : 0;
    r->nmig = n < SW_NODE_MIG_MAX ? n : SW_NODE_MIG_MAX;
    struct sw_node_mig *m = b_alloc(b, r->nmig * sizeof(*m));
    r->mig = m;
    if (m == NULL)
        return;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, alloc)
    {
        if (i == r->nmig)
            break;
        if (!is_mig_resource(it))
            continue;
        m[i].profile = b_intern(b, it->string + sizeof(SW_MIG_RESOURCE_PREFIX) - 1);
        if (sw_resource_quantity(it, "Node", it->string, &m[i].count, NULL) != 0)
            m[i].count = SW_REC_INVALID;
        i++;
    }
}

static void fill_node(struct blob *b, const cJSON *node, void *out)
{
    struct sw_node_record *r = out;
    const cJSON *md = child(node, "metadata");
    r->name = b_str(b, str_at(md, "name"));
    r->rv = b_str(b, str_at(md, "resourceVersion") ? str_at(md, "resourceVersion") : "");
    struct sw_node_facts f;
    if (b->p == NULL) {
        /* sizing: the facts take no room */
    } else if (sw_node_facts_from_json(node, &f, NULL) == 0) {
        r->gpu_allocatable = f.gpu_allocatable;
        r->ready = f.ready;
        r->unschedulable = f.unschedulable;
    } else {
        r->gpu_allocatable = SW_REC_INVALID;
    }
    r->labels = b_kvs(b, child(md, "labels"), is_string, &r->nlabels);
    node_mig(b, node, r);
    const cJSON *taints = child(child(node, "spec"), "taints");
    r->ntaints = cJSON_IsArray(taints) ? count_items(taints, any_taint) : 0;
    struct sw_taint *ts = b_alloc(b, r->ntaints * sizeof(*ts));
    size_t i = 0;
    const cJSON *t, *tlist = ts ? taints : NULL;
    cJSON_ArrayForEach(t, tlist)
    {
        if (i < r->ntaints && any_taint(t)) {
            ts[i].key = b_intern(b, str_at(t, "key"));
            ts[i].value = b_intern(b, str_at(t, "value"));
            ts[i].effect = b_intern(b, str_at(t, "effect"));
            i++;
        }
    }
    r->taints = ts;
}

int sw_node_record_from_json(struct sw_intern *t, const cJSON *node, struct sw_node_record **out,
                             struct sw_error *err)
{
    *out = NULL;
    int rc = named(node, "Node", err);
    if (rc != 0)
        return rc;
    void *p = NULL;
    if ((rc = build(t, node, sizeof(struct sw_node_record), fill_node, &p)) != 0) {
        sw_node_record_free(t, p);
        return sw_error_set(err, rc, "Node %s: out of memory",
                            cJSON_GetStringValue(sw_json_path(node, "metadata.name")));
    }
    *out = p;
    return 0;
}

void sw_node_record_free(struct sw_intern *t, struct sw_node_record *r)
{
    if (r == NULL)
        return;
    release_kvs(t, r->labels, r->nlabels);
    for (size_t i = 0; r->mig != NULL && i < r->nmig; i++)
        sw_intern_release(t, r->mig[i].profile);
    for (size_t i = 0; r->taints != NULL && i < r->ntaints; i++) {
        sw_intern_release(t, r->taints[i].key);
        sw_intern_release(t, r->taints[i].value);
        sw_intern_release(t, r->taints[i].effect);
    }
    sw_free(r);
}

struct kv_list {
    const struct sw_kv *kv;
    size_t n;
};

static const char *kv_list_get(const void *ctx, const char *key)
{
    const struct kv_list *l = ctx;
    return kv_find(l->kv, l->n, key);
}

int sw_node_facts_from_record(const struct sw_node_record *r, struct sw_node_facts *out,
                              struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    /* A bad sharing label or MIG quantity first: it also fails the node's
     * other facts when the record is made, and is the one to name. */
    struct sw_node_gpu_sharing g;
    int rc = sw_node_gpu_sharing_from_record(r, &g, err);
    if (rc != 0)
        return rc;
    if (r->gpu_allocatable == SW_REC_INVALID)
        return sw_error_set(err, SW_EPARSE,
                            "Node %s: field \"status.allocatable.nvidia.com/gpu\" or "
                            "\"spec.unschedulable\": expected a whole number and a boolean",
                            r->name);
    out->name = r->name;
    out->labelv = r->labels;
    out->nlabelv = r->nlabels;
    const struct kv_list labels = {r->labels, r->nlabels};
    const char *gp = kv_find(r->labels, r->nlabels, "nvidia.com/gpu.product");
    const char *gm = kv_find(r->labels, r->nlabels, "nvidia.com/gpu.memory");
    const char *rg = kv_find(r->labels, r->nlabels, "topology.kubernetes.io/region");
    const char *zn = kv_find(r->labels, r->nlabels, "topology.kubernetes.io/zone");
    out->capacity_type =
        sw_capacity_type_label(kv_list_get, &labels, &out->capacity_label, &out->capacity_value);
    out->gpu_product = gp && gp[0] ? gp : "none";
    out->gpu_memory = gm && gm[0] ? gm : "0";
    out->region = rg ? rg : "";
    out->zone = zn ? zn : "";
    out->gpu_allocatable = r->gpu_allocatable;
    out->ready = r->ready;
    out->unschedulable = r->unschedulable;
    out->time_sliced = strcmp(g.strategy, "time-slicing") == 0;
    out->gpu_replicas = out->time_sliced ? g.replicas : 1;
    out->nmig = g.nmig < SW_NODE_MIG_MAX ? g.nmig : SW_NODE_MIG_MAX;
    for (size_t i = 0; i < out->nmig; i++)
        out->mig[i] = g.mig[i];
    return 0;
}

int sw_node_gpu_sharing_from_record(const struct sw_node_record *r, struct sw_node_gpu_sharing *out,
                                    struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *st = kv_find(r->labels, r->nlabels, "nvidia.com/gpu.sharing-strategy");
    const char *rp = kv_find(r->labels, r->nlabels, "nvidia.com/gpu.replicas");
    out->strategy = st && st[0] ? st : "none";
    out->replicas = 1;
    if (rp != NULL) {
        char *end = NULL;
        long long v = strtoll(rp, &end, 10);
        if (end == rp || *end != '\0' || v < 1 || v > 1024)
            return sw_error_set(err, SW_EPARSE,
                                "Node %s: label \"nvidia.com/gpu.replicas\": expected a whole "
                                "number from 1 to 1024, got \"%.40s\"",
                                r->name, rp);
        out->replicas = v;
    }
    for (size_t i = 0; i < r->nmig; i++)
        if (r->mig[i].count == SW_REC_INVALID)
            return sw_error_set(err, SW_EPARSE,
                                "Node %s: field \"status.allocatable." SW_MIG_RESOURCE_PREFIX
                                "%s\": expected a whole number of MIG slices",
                                r->name, r->mig[i].profile ? r->mig[i].profile : "");
    out->nmig = r->nmig;
    out->mig = r->mig;
    return 0;
}
