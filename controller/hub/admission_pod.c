/*
 * admission_pod.c - the Pod home's admission judges for a burst, what its
 * answer means, and the verdicts kept (pure: no I/O, time is a parameter).
 * admission.c sends the Pod and acts on the verdict.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "controller/hub/admission_pod.h"

/* ---- the Pod -------------------------------------------------------------- */

/* The labels the Job controller writes into every Job's template, valued
 * with that Job's UID and name (sw_admission_pod says why they are left
 * out). */
static const char *const job_labels[] = {
    "batch.kubernetes.io/controller-uid",
    "batch.kubernetes.io/job-name",
    "controller-uid",
    "job-name",
};

/* "NAME-", NAME cut so that Kubernetes keeps all of it (it cuts a longer
 * generateName itself), without a trailing '-' or '.' (a name "a.-xyz12"
 * is not a valid DNS subdomain). */
static void generate_name(const char *name, char *out, size_t len)
{
    size_t n = name ? strlen(name) : 0;
    if (n > SW_ADMISSION_GENERATE_MAX - 1)
        n = SW_ADMISSION_GENERATE_MAX - 1;
    while (n > 0 && (name[n - 1] == '-' || name[n - 1] == '.'))
        n--;
    if (n == 0)
        snprintf(out, len, "spillway-admission-");
    else
        snprintf(out, len, "%.*s-", (int)n, name);
}

cJSON *sw_admission_pod(const cJSON *job, const char *ns, struct sw_error *err)
{
    const cJSON *jmd = sw_json_child(job, "metadata");
    const char *name = sw_json_str(jmd, "name");
    const cJSON *tpl = sw_json_child(sw_json_child(job, "spec"), "template");
    if (!cJSON_IsObject(tpl)) {
        sw_error_set(err, SW_EINVAL,
                     "Job %s/%s: field \"spec.template\": expected an object, got %s", ns ? ns : "",
                     name ? name : "", tpl ? sw_json_type_name(tpl) : "nothing");
        return NULL;
    }
    const cJSON *tmd = sw_json_child(tpl, "metadata");
    const cJSON *labels = sw_json_child(tmd, "labels");
    const cJSON *annotations = sw_json_child(tmd, "annotations");
    const cJSON *spec = sw_json_child(tpl, "spec");
    char gen[SW_ADMISSION_GENERATE_MAX + 1];
    generate_name(name, gen, sizeof(gen));

    cJSON *pod = cJSON_CreateObject();
    cJSON *md = NULL;
    bool ok = pod != NULL && cJSON_AddStringToObject(pod, "apiVersion", "v1") != NULL &&
              cJSON_AddStringToObject(pod, "kind", "Pod") != NULL &&
              (md = cJSON_AddObjectToObject(pod, "metadata")) != NULL &&
              cJSON_AddStringToObject(md, "generateName", gen) != NULL &&
              cJSON_AddStringToObject(md, "namespace", ns ? ns : "") != NULL;
    if (ok && cJSON_IsObject(labels)) {
        cJSON *l = cJSON_Duplicate(labels, 1);
        ok = l != NULL;
        for (size_t i = 0; ok && i < sizeof(job_labels) / sizeof(job_labels[0]); i++)
            cJSON_DeleteItemFromObjectCaseSensitive(l, job_labels[i]);
        if (ok && l->child != NULL)
            ok = cJSON_AddItemToObject(md, "labels", l);
        else
            cJSON_Delete(l);
    }
    if (ok && cJSON_IsObject(annotations)) {
        cJSON *a = cJSON_Duplicate(annotations, 1);
        ok = a != NULL && cJSON_AddItemToObject(md, "annotations", a);
        if (!ok)
            cJSON_Delete(a);
    }
    /* The spec as it is: a template without one is the API server's to
     * refuse (422), as it would refuse the Job's own pods. */
    if (ok && spec != NULL) {
        cJSON *s = cJSON_Duplicate(spec, 1);
        ok = s != NULL && cJSON_AddItemToObject(pod, "spec", s);
        if (!ok)
            cJSON_Delete(s);
    }
    if (!ok) {
        cJSON_Delete(pod);
        sw_error_set(err, SW_ENOMEM, "Job %s/%s: the Pod to judge: out of memory", ns ? ns : "",
                     name ? name : "");
        return NULL;
    }
    return pod;
}

int sw_admission_key(const cJSON *pod, const char *cluster, const char *ns,
                     struct sw_admission_key *out)
{
    memset(out, 0, sizeof(*out));
    if (cluster == NULL || ns == NULL || strlen(cluster) >= sizeof(out->cluster) ||
        strlen(ns) >= sizeof(out->ns))
        return SW_EINVAL;
    memcpy(out->cluster, cluster, strlen(cluster) + 1);
    memcpy(out->ns, ns, strlen(ns) + 1);
    cJSON *copy = cJSON_Duplicate(pod, 1);
    if (copy == NULL)
        return SW_ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(sw_json_child(copy, "metadata"), "generateName");
    char *text = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (text == NULL)
        return SW_ENOMEM;
    SHA256((const unsigned char *)text, strlen(text), out->sha);
    cJSON_free(text);
    return 0;
}

/* ---- the answer ----------------------------------------------------------- */

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * The X of `KIND "NAME" is VERB: X` (the API server's message for an
 * object refused by name, kind "pods" for admission's refusals and "Pod"
 * for validation's), or NULL when `m` is not of that shape. A pod's name
 * holds no '"'.
 */
static const char *after_name(const char *m, const char *kind, const char *verb)
{
    size_t k = strlen(kind);
    if (strncmp(m, kind, k) != 0 || strncmp(m + k, " \"", 2) != 0)
        return NULL;
    const char *q = strchr(m + k + 2, '"');
    if (q == NULL || strncmp(q + 1, " is ", 4) != 0)
        return NULL;
    q += 5;
    size_t v = strlen(verb);
    if (strncmp(q, verb, v) != 0 || strncmp(q + v, ": ", 2) != 0)
        return NULL;
    return q + v + 2;
}

enum sw_admission_outcome sw_admission_classify(long status, const char *message)
{
    if (status >= 200 && status < 300)
        return SW_ADMISSION_ADMITTED;
    if (status != 400 && status != 403 && status != 422)
        return SW_ADMISSION_TRANSIENT;
    const char *m = message ? message : "";
    if (status == 403) {
        /* RBAC's refusal names no object: the authorizer ran before any. */
        if (starts(m, "pods is forbidden: User \"") &&
            strstr(m, "\" cannot create resource \"pods\"") != NULL)
            return SW_ADMISSION_NO_RIGHT;
        /* Only at the start of admission's own text: a webhook's message
         * (which may quote the Pod) begins "admission webhook". */
        const char *x = after_name(m, "pods", "forbidden");
        if (x == NULL && starts(m, "pods is forbidden: "))
            x = m + strlen("pods is forbidden: ");
        if (x != NULL) {
            static const char *const quota[] = {
                "exceeded quota: ", "failed quota: ", "status unknown for quota: ",
                "insufficient quota "};
            for (size_t i = 0; i < sizeof(quota) / sizeof(quota[0]); i++)
                if (starts(x, quota[i]))
                    return SW_ADMISSION_ADMITTED;
            if (starts(x, "error looking up service account "))
                return SW_ADMISSION_REFUSED_ONCE;
        }
    }
    return SW_ADMISSION_REFUSED;
}

void sw_admission_message(const char *message, char *out, size_t len)
{
    if (len == 0)
        return;
    const char *m = message ? message : "";
    const char *x;
    if ((x = after_name(m, "pods", "forbidden")) != NULL)
        snprintf(out, len, "%s", x);
    else if ((x = after_name(m, "Pod", "invalid")) != NULL)
        snprintf(out, len, "invalid: %s", x);
    else
        snprintf(out, len, "%s", m);
}

/* ---- the verdicts kept ---------------------------------------------------- */

struct entry {
    struct sw_admission_key k;
    struct sw_admission_verdict v;
};

struct sw_admission_cache {
    struct entry *e; /* grown up to cap */
    size_t n, alloc, cap;
    int64_t ttl_ms;
};

struct sw_admission_cache *sw_admission_cache_new(size_t cap, int64_t ttl_ms)
{
    struct sw_admission_cache *c = sw_calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->cap = cap > 0 ? cap : 1;
    c->ttl_ms = ttl_ms;
    return c;
}

void sw_admission_cache_free(struct sw_admission_cache *c)
{
    if (c == NULL)
        return;
    sw_free(c->e);
    sw_free(c);
}

static bool same(const struct sw_admission_key *a, const struct sw_admission_key *b)
{
    return memcmp(a->sha, b->sha, sizeof(a->sha)) == 0 && strcmp(a->ns, b->ns) == 0 &&
           strcmp(a->cluster, b->cluster) == 0;
}

static struct entry *find(const struct sw_admission_cache *c, const struct sw_admission_key *k)
{
    for (size_t i = 0; i < c->n; i++)
        if (same(&c->e[i].k, k))
            return &c->e[i];
    return NULL;
}

bool sw_admission_cache_get(const struct sw_admission_cache *c, const struct sw_admission_key *k,
                            int64_t now_ms, bool any_age, struct sw_admission_verdict *out)
{
    const struct entry *e = c ? find(c, k) : NULL;
    if (e == NULL || (!any_age && now_ms - e->v.at_ms >= c->ttl_ms))
        return false;
    *out = e->v;
    return true;
}

void sw_admission_cache_put(struct sw_admission_cache *c, const struct sw_admission_key *k,
                            bool admitted, const char *message, int64_t now_ms)
{
    if (c == NULL)
        return;
    struct entry *e = find(c, k);
    if (e == NULL && c->n < c->alloc) {
        e = &c->e[c->n++];
    } else if (e == NULL && c->n < c->cap) {
        size_t alloc = c->alloc ? c->alloc * 2 : 16;
        if (alloc > c->cap)
            alloc = c->cap;
        struct entry *grown = sw_malloc(alloc * sizeof(*grown));
        if (grown != NULL) {
            if (c->n > 0)
                memcpy(grown, c->e, c->n * sizeof(*grown));
            sw_free(c->e);
            c->e = grown;
            c->alloc = alloc;
            e = &c->e[c->n++];
        }
    }
    if (e == NULL) {
        /* Full (or no memory to grow): the oldest verdict goes. */
        for (size_t i = 0; i < c->n; i++)
            if (e == NULL || c->e[i].v.at_ms < e->v.at_ms)
                e = &c->e[i];
        if (e == NULL)
            return;
    }
    e->k = *k;
    e->v.admitted = admitted;
    e->v.at_ms = now_ms;
    snprintf(e->v.message, sizeof(e->v.message), "%s", message ? message : "");
}

size_t sw_admission_cache_len(const struct sw_admission_cache *c)
{
    return c ? c->n : 0;
}
