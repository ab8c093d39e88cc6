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
        if (ok && l->child != NULL && cJSON_AddItemToObject(md, "labels", l))
            l = NULL;
        else if (ok && l->child != NULL)
            ok = false;
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

/* ---- home's ResourceQuota ------------------------------------------------ */

/*
 * A Kubernetes quantity as an exact decimal number: QTY_DIGITS digits, of
 * which the lowest QTY_FRAC are after the point (d[0] weighs 10^-QTY_FRAC).
 * Exact, so that 1Gi equals 1073741824 and 1500m equals 1.5: a quota of
 * exactly the Pod's request must read as "fits".
 */
#define QTY_FRAC   30
#define QTY_DIGITS 100
struct qty {
    unsigned char d[QTY_DIGITS];
};

/*
 * Parses s[0..n) as Kubernetes writes a quantity (resource.Quantity):
 * an optional '+', digits with at most one '.', then nothing, a decimal
 * suffix (n u m k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei), or an
 * exponent (e or E, an optional sign, up to three digits). False for
 * anything else, a negative value, or one beyond what struct qty holds.
 */
static bool qty_parse(const char *s, size_t n, struct qty *q)
{
    memset(q, 0, sizeof(*q));
    size_t i = 0;
    if (i < n && s[i] == '+')
        i++;
    size_t start = i, ndigits = 0, intdigits = 0;
    bool point = false;
    for (; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            ndigits++;
            if (!point)
                intdigits++;
        } else if (s[i] == '.' && !point) {
            point = true;
        } else {
            break;
        }
    }
    if (ndigits == 0)
        return false;
    size_t end = i;
    int exp10 = 0, kibi = 0;
    const char *suf = s + i;
    size_t sl = n - i;
    static const char dec[] = "numkMGTPE";
    static const int dec_exp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    static const char bin[] = "KMGTPE";
    const char *p;
    if (sl == 0) {
        /* a plain number */
    } else if (sl == 2 && suf[1] == 'i' && suf[0] != '\0' && (p = strchr(bin, suf[0])) != NULL) {
        kibi = (int)(p - bin) + 1;
    } else if (sl == 1 && suf[0] != '\0' && (p = strchr(dec, suf[0])) != NULL) {
        exp10 = dec_exp[p - dec];
    } else if (sl >= 2 && (suf[0] == 'e' || suf[0] == 'E')) {
        size_t j = 1;
        bool neg = false;
        if (suf[j] == '+' || suf[j] == '-')
            neg = suf[j++] == '-';
        if (j == sl || sl - j > 3)
            return false;
        for (; j < sl; j++) {
            if (suf[j] < '0' || suf[j] > '9')
                return false;
            exp10 = exp10 * 10 + (suf[j] - '0');
        }
        if (neg)
            exp10 = -exp10;
    } else {
        return false;
    }
    /* Each digit to its place: the k-th left of the point weighs 10^k. */
    long k = (long)intdigits - 1;
    for (i = start; i < end; i++) {
        if (s[i] == '.')
            continue;
        long at = QTY_FRAC + k + exp10;
        k--;
        if (s[i] == '0')
            continue;
        if (at < 0 || at >= QTY_DIGITS)
            return false;
        q->d[at] = (unsigned char)(s[i] - '0');
    }
    for (int b = 0; b < kibi; b++) {
        unsigned carry = 0;
        for (size_t d = 0; d < QTY_DIGITS; d++) {
            unsigned v = q->d[d] * 1024u + carry;
            q->d[d] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        if (carry != 0)
            return false;
    }
    return true;
}

static int qty_cmp(const struct qty *a, const struct qty *b)
{
    for (size_t d = QTY_DIGITS; d-- > 0;)
        if (a->d[d] != b->d[d])
            return a->d[d] < b->d[d] ? -1 : 1;
    return 0;
}

/* The quantity of resource name[0..nl) in the list [l, lend), "N=Q,N=Q". */
static bool list_find(const char *l, const char *lend, const char *name, size_t nl, struct qty *q)
{
    while (l < lend) {
        const char *e = memchr(l, ',', (size_t)(lend - l));
        if (e == NULL)
            e = lend;
        const char *eq = memchr(l, '=', (size_t)(e - l));
        if (eq != NULL && (size_t)(eq - l) == nl && memcmp(l, name, nl) == 0)
            return qty_parse(eq + 1, (size_t)(e - eq - 1), q);
        l = e < lend ? e + 1 : lend;
    }
    return false;
}

/*
 * Whether ResourceQuota's refusal `x` says the Pod fits the quota once it
 * frees up. Kubernetes writes it (staging/src/k8s.io/apiserver/pkg/
 * admission/plugin/resourcequota/controller.go, CheckRequest) as
 *     fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
 *         resourceQuota.Name, prettyPrint(failedRequestedUsage),
 *         prettyPrint(failedUsed), prettyPrint(failedHard))
 * where each list holds only the resources exceeded, and prettyPrint
 * joins "name=" + Quantity.String() with ',' (no space), sorted by name.
 * A quota's name (a DNS subdomain) and a resource's name hold neither ','
 * nor ' ', so the ", requested: ", ", used: " and ", limited: " found first
 * are the markers. True only when every resource requested is in the
 * limited list and its request is at most the limit; anything that does
 * not read so is false.
 */
static bool quota_fits(const char *x)
{
    const char *r = strstr(x, ", requested: ");
    const char *u = r ? strstr(r, ", used: ") : NULL;
    const char *l = u ? strstr(u, ", limited: ") : NULL;
    if (l == NULL)
        return false;
    r += strlen(", requested: ");
    l += strlen(", limited: ");
    const char *lend = l + strlen(l);
    if (r == u)
        return false;
    while (r < u) {
        const char *e = memchr(r, ',', (size_t)(u - r));
        if (e == NULL)
            e = u;
        const char *eq = memchr(r, '=', (size_t)(e - r));
        struct qty req, lim;
        if (eq == NULL || eq == r || !qty_parse(eq + 1, (size_t)(e - eq - 1), &req) ||
            !list_find(l, lend, r, (size_t)(eq - r), &lim) || qty_cmp(&req, &lim) > 0)
            return false;
        if (e + 1 == u)
            return false; /* a trailing ',' */
        r = e < u ? e + 1 : u;
    }
    return true;
}

enum sw_admission_outcome sw_admission_classify(long status, const char *message)
{
    if (status >= 200 && status < 300)
        return SW_ADMISSION_ADMITTED;
    const char *m = message ? message : "";
    /* Only at the start of admission's own text: a webhook's message
     * (which may quote the Pod) begins "admission webhook". */
    const char *x = after_name(m, "pods", "forbidden");
    if (x == NULL && starts(m, "pods is forbidden: "))
        x = m + strlen("pods is forbidden: ");
    /* ResourceQuota's refusals for what the platform configured as
     * limitedResources or scopes (controller.go, CheckRequest):
     * "insufficient quota to consume: %v", wrapped as Forbidden (403), and
     * "insufficient quota to match these scopes: %v", returned bare, which
     * the API server answers as 500 with that message. Policy, at any
     * status (else a 500 would be retried for ever). */
    if (starts(m, "insufficient quota to ") || (x != NULL && starts(x, "insufficient quota to ")))
        return SW_ADMISSION_REFUSED;
    if (status != 400 && status != 403 && status != 422)
        return SW_ADMISSION_TRANSIENT;
    if (status == 403) {
        /* RBAC's refusal names no object: the authorizer ran before any. */
        if (starts(m, "pods is forbidden: User \"") &&
            strstr(m, "\" cannot create resource \"pods\"") != NULL)
            return SW_ADMISSION_NO_RIGHT;
        if (x != NULL) {
            /* A full quota is why a Job bursts; a quota it could never fit
             * in is policy (quota_fits). "failed quota: " (a request or
             * limit the quota requires is missing) is policy too. */
            if (starts(x, "exceeded quota: "))
                return quota_fits(x) ? SW_ADMISSION_ADMITTED : SW_ADMISSION_REFUSED;
            /* The quota's usage not counted yet: asked again later. */
            if (starts(x, "status unknown for quota: "))
                return SW_ADMISSION_TRANSIENT;
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
    int n;
    if ((x = after_name(m, "pods", "forbidden")) != NULL)
        n = snprintf(out, len, "%s", x);
    else if ((x = after_name(m, "Pod", "invalid")) != NULL)
        n = snprintf(out, len, "invalid: %s", x);
    else
        n = snprintf(out, len, "%s", m);
    /* Cut: said so, never passed off as the whole message. */
    if (n >= 0 && (size_t)n >= len && len > 3)
        memcpy(out + len - 4, "...", 4);
}

/* ---- what home's admission changed --------------------------------------- */

/* What the API server drops or writes as nothing: absent, null, "", [],
 * and an object of only such members. */
static bool blank(const cJSON *v)
{
    if (v == NULL || cJSON_IsNull(v))
        return true;
    if (cJSON_IsString(v))
        return v->valuestring == NULL || v->valuestring[0] == '\0';
    if (cJSON_IsArray(v))
        return v->child == NULL;
    if (cJSON_IsObject(v)) {
        for (const cJSON *c = v->child; c != NULL; c = c->next)
            if (!blank(c))
                return false;
        return true;
    }
    return false;
}

/* Equal as Kubernetes reads them: blanks alike, members in any order. */
static bool alike(const cJSON *a, const cJSON *b)
{
    bool ba = blank(a), bb = blank(b);
    if (ba || bb)
        return ba && bb;
    if (cJSON_IsBool(a) || cJSON_IsBool(b))
        return cJSON_IsBool(a) && cJSON_IsBool(b) && cJSON_IsTrue(a) == cJSON_IsTrue(b);
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    if (cJSON_IsNumber(a))
        return a->valuedouble == b->valuedouble;
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsArray(a)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x != NULL && y != NULL; x = x->next, y = y->next)
            if (!alike(x, y))
                return false;
        return x == NULL && y == NULL;
    }
    if (cJSON_IsObject(a)) {
        for (const cJSON *c = a->child; c != NULL; c = c->next)
            if (c->string == NULL || !alike(c, cJSON_GetObjectItemCaseSensitive(b, c->string)))
                return false;
        for (const cJSON *c = b->child; c != NULL; c = c->next)
            if (c->string == NULL || !alike(cJSON_GetObjectItemCaseSensitive(a, c->string), c))
                return false;
        return true;
    }
    return cJSON_Compare(a, b, 1);
}

/* A boolean of the pod spec: absent or null is Kubernetes' default. */
static bool flag_alike(const cJSON *a, const cJSON *b, bool dflt)
{
    bool ua = a == NULL || cJSON_IsNull(a), ub = b == NULL || cJSON_IsNull(b);
    if ((!ua && !cJSON_IsBool(a)) || (!ub && !cJSON_IsBool(b)))
        return alike(a, b);
    return (ua ? dflt : cJSON_IsTrue(a)) == (ub ? dflt : cJSON_IsTrue(b));
}

#define APPARMOR_PREFIX    "container.apparmor.security.beta.kubernetes.io/"
#define SECCOMP_POD_KEY    "seccomp.security.alpha.kubernetes.io/pod"
#define SECCOMP_CTR_PREFIX "container.seccomp.security.alpha.kubernetes.io/"
#define SECCOMP_PREFIX     "seccomp.security.alpha.kubernetes.io/"

static const char *const profile_prefixes[] = {APPARMOR_PREFIX, SECCOMP_PREFIX, SECCOMP_CTR_PREFIX};
static const char *const container_lists[] = {"containers", "initContainers",
                                              "ephemeralContainers"};

static bool present(const cJSON *v)
{
    return v != NULL && !cJSON_IsNull(v);
}

/*
 * The annotation value the API server writes for a profile field (the
 * vocabulary seccomp and AppArmor share: podutil.SeccompAnnotationForField
 * and the AppArmor one), into a new string (*out, sw_free), or NULL when
 * the field has none. 0 or SW_ENOMEM.
 */
static int profile_annotation(const cJSON *field, char **out)
{
    *out = NULL;
    const char *type = sw_json_str(field, "type");
    const char *lp = sw_json_str(field, "localhostProfile");
    const char *v = NULL;
    if (type != NULL && strcmp(type, "RuntimeDefault") == 0)
        v = "runtime/default";
    else if (type != NULL && strcmp(type, "Unconfined") == 0)
        v = "unconfined";
    else if (type != NULL && strcmp(type, "Localhost") == 0 && lp != NULL)
        v = "localhost/";
    if (v == NULL)
        return 0;
    size_t n = strlen(v) + (lp && v[0] == 'l' ? strlen(lp) : 0) + 1;
    *out = sw_malloc(n);
    if (*out == NULL)
        return SW_ENOMEM;
    snprintf(*out, n, "%s%s", v, v[0] == 'l' ? lp : "");
    return 0;
}

/*
 * The profile field the API server writes for an annotation value
 * (podutil.SeccompFieldForAnnotation, ApparmorFieldForAnnotation; seccomp
 * also reads "docker/default"), as a new object (*out), or NULL when the
 * value has none. 0 or SW_ENOMEM.
 */
static int profile_field(const char *a, bool seccomp, cJSON **out)
{
    *out = NULL;
    const char *type = NULL, *lp = NULL;
    if (strcmp(a, "unconfined") == 0)
        type = "Unconfined";
    else if (strcmp(a, "runtime/default") == 0 || (seccomp && strcmp(a, "docker/default") == 0))
        type = "RuntimeDefault";
    else if (starts(a, "localhost/") && a[strlen("localhost/")] != '\0') {
        type = "Localhost";
        lp = a + strlen("localhost/");
    }
    if (type == NULL)
        return 0;
    cJSON *f = cJSON_CreateObject();
    if (f == NULL || cJSON_AddStringToObject(f, "type", type) == NULL ||
        (lp != NULL && cJSON_AddStringToObject(f, "localhostProfile", lp) == NULL)) {
        cJSON_Delete(f);
        return SW_ENOMEM;
    }
    *out = f;
    return 0;
}

/* obj's member `k`, made an empty object when it is absent or not one. */
static cJSON *object_at(cJSON *obj, const char *k)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, k);
    if (cJSON_IsObject(v))
        return v;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    if (v != NULL ? !cJSON_ReplaceItemInObjectCaseSensitive(obj, k, o)
                  : !cJSON_AddItemToObject(obj, k, o)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/*
 * One deprecated profile annotation `key` of `pod` and the field `name` of
 * `holder`'s securityContext it stands for, each filled from the other
 * when absent (the field from the annotation; the annotation from the
 * field, or from `fallback`, the pod's field, for AppArmor). The API
 * server copies one way or the other depending on its version
 * (pkg/registry/core/pod/strategy.go: applySeccompVersionSkew before
 * 1.27 both ways; applyAppArmorVersionSkew field to annotation in 1.30,
 * annotation to field since): filled the same on both sides, the Pod sent
 * and the Pod answered read alike whichever it did. 0 or SW_ENOMEM.
 */
static int skew_one(cJSON *pod, cJSON *holder, const char *name, const char *key, bool seccomp,
                    const cJSON *fallback)
{
    cJSON *ann = sw_json_child(sw_json_child(pod, "metadata"), "annotations");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(ann, key);
    const cJSON *f = sw_json_child(sw_json_child(holder, "securityContext"), name);
    if (!present(a)) {
        const cJSON *from = present(f) ? f : fallback;
        char *v = NULL;
        if (present(from) && profile_annotation(from, &v) != 0)
            return SW_ENOMEM;
        if (v != NULL) {
            cJSON *md = object_at(pod, "metadata");
            ann = md ? object_at(md, "annotations") : NULL;
            cJSON *sv = ann ? cJSON_CreateString(v) : NULL;
            sw_free(v);
            if (sv == NULL)
                return SW_ENOMEM;
            cJSON_DeleteItemFromObjectCaseSensitive(ann, key);
            if (!cJSON_AddItemToObject(ann, key, sv)) {
                cJSON_Delete(sv);
                return SW_ENOMEM;
            }
            a = sv;
        }
    }
    if (cJSON_IsString(a) && !present(f)) {
        cJSON *nf = NULL;
        if (profile_field(a->valuestring, seccomp, &nf) != 0)
            return SW_ENOMEM;
        if (nf != NULL) {
            cJSON *sc = object_at(holder, "securityContext");
            if (sc == NULL) {
                cJSON_Delete(nf);
                return SW_ENOMEM;
            }
            cJSON_DeleteItemFromObjectCaseSensitive(sc, name);
            if (!cJSON_AddItemToObject(sc, name, nf)) {
                cJSON_Delete(nf);
                return SW_ENOMEM;
            }
        }
    }
    return 0;
}

/* Both sides of every deprecated profile annotation filled (skew_one). */
static int skew(cJSON *pod)
{
    cJSON *spec = sw_json_child(pod, "spec");
    if (!cJSON_IsObject(spec))
        return 0;
    int rc = skew_one(pod, spec, "seccompProfile", SECCOMP_POD_KEY, true, NULL);
    const cJSON *pod_aa = sw_json_child(sw_json_child(spec, "securityContext"), "appArmorProfile");
    for (size_t l = 0; rc == 0 && l < sizeof(container_lists) / sizeof(container_lists[0]); l++) {
        cJSON *c;
        cJSON_ArrayForEach(c, sw_json_child(spec, container_lists[l]))
        {
            const char *cname = sw_json_str(c, "name");
            char key[128];
            /* A longer name is not a container name: the API server refuses it. */
            if (!cJSON_IsObject(c) || cname == NULL || strlen(cname) > 63)
                continue;
            snprintf(key, sizeof(key), "%s%s", SECCOMP_CTR_PREFIX, cname);
            if ((rc = skew_one(pod, c, "seccompProfile", key, true, NULL)) != 0)
                break;
            snprintf(key, sizeof(key), "%s%s", APPARMOR_PREFIX, cname);
            if ((rc = skew_one(pod, c, "appArmorProfile", key, false, pod_aa)) != 0)
                break;
        }
    }
    return rc;
}

static bool profile_key(const char *k)
{
    for (size_t i = 0; i < sizeof(profile_prefixes) / sizeof(profile_prefixes[0]); i++)
        if (k != NULL && starts(k, profile_prefixes[i]))
            return true;
    return false;
}

/* The first field of the list where a and b differ, into field; false when none. */
static bool containers_differ(const cJSON *a, const cJSON *b, const char *list, char *field,
                              size_t len)
{
    if ((present(a) && !cJSON_IsArray(a)) || (present(b) && !cJSON_IsArray(b))) {
        if (alike(a, b))
            return false;
        snprintf(field, len, "spec.%s", list);
        return true;
    }
    int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
    for (int i = 0; i < na || i < nb; i++) {
        const cJSON *x = cJSON_GetArrayItem(a, i), *y = cJSON_GetArrayItem(b, i);
        const char *what = NULL;
        if (x == NULL || y == NULL || !alike(sw_json_child(x, "name"), sw_json_child(y, "name")))
            what = "";
        else if (!alike(sw_json_child(x, "image"), sw_json_child(y, "image")))
            what = ".image";
        else if (!alike(sw_json_child(x, "securityContext"), sw_json_child(y, "securityContext")))
            what = ".securityContext";
        if (what != NULL) {
            snprintf(field, len, "spec.%s[%d]%s", list, i, what);
            return true;
        }
    }
    return false;
}

/* The first profile annotation of `a` that `b` lacks or holds otherwise. */
static bool annotations_differ(const cJSON *a, const cJSON *b, char *field, size_t len)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, a)
    {
        if (profile_key(c->string) && !alike(c, cJSON_GetObjectItemCaseSensitive(b, c->string))) {
            snprintf(field, len, "metadata.annotations[\"%s\"]", c->string);
            return true;
        }
    }
    return false;
}

static bool differ(const cJSON *s, const cJSON *r, char *field, size_t len)
{
    const cJSON *ss = sw_json_child(s, "spec"), *rs = sw_json_child(r, "spec");
    static const struct {
        const char *name;
        bool dflt;
    } flags[] = {
        {"hostNetwork", false}, {"hostPID", false}, {"hostIPC", false}, {"hostUsers", true}};
    if (!alike(sw_json_child(ss, "securityContext"), sw_json_child(rs, "securityContext"))) {
        snprintf(field, len, "spec.securityContext");
        return true;
    }
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (!flag_alike(sw_json_child(ss, flags[i].name), sw_json_child(rs, flags[i].name),
                        flags[i].dflt)) {
            snprintf(field, len, "spec.%s", flags[i].name);
            return true;
        }
    for (size_t l = 0; l < sizeof(container_lists) / sizeof(container_lists[0]); l++)
        if (containers_differ(sw_json_child(ss, container_lists[l]),
                              sw_json_child(rs, container_lists[l]), container_lists[l], field,
                              len))
            return true;
    const cJSON *sa = sw_json_child(sw_json_child(s, "metadata"), "annotations");
    const cJSON *ra = sw_json_child(sw_json_child(r, "metadata"), "annotations");
    return annotations_differ(sa, ra, field, len) || annotations_differ(ra, sa, field, len);
}

int sw_admission_changed(const cJSON *sent, const cJSON *returned, bool *changed, char *field,
                         size_t len)
{
    *changed = false;
    char scratch[1];
    if (field == NULL || len == 0) {
        field = scratch;
        len = sizeof(scratch);
    }
    field[0] = '\0';
    cJSON *s = sent ? cJSON_Duplicate(sent, 1) : cJSON_CreateObject();
    cJSON *r = returned ? cJSON_Duplicate(returned, 1) : cJSON_CreateObject();
    int rc = s != NULL && r != NULL ? 0 : SW_ENOMEM;
    if (rc == 0)
        rc = skew(s);
    if (rc == 0)
        rc = skew(r);
    if (rc == 0)
        *changed = differ(s, r, field, len);
    cJSON_Delete(s);
    cJSON_Delete(r);
    return rc;
}

/* ---- with home lost -------------------------------------------------------- */

bool sw_admission_ran_at_home(const struct sw_admission_home_view *v, const cJSON *origin)
{
    const cJSON *md = sw_json_child(origin, "metadata");
    const char *uid = sw_json_str(md, "uid");
    const cJSON *gen = sw_json_child(md, "generation");
    if (v == NULL || !v->seen || !v->annotation || v->deleting || v->suspend == 1)
        return false;
    if (uid == NULL || v->uid == NULL || strcmp(uid, v->uid) != 0)
        return false;
    if (!cJSON_IsNumber(gen) || v->generation < 0 || (int64_t)gen->valuedouble != v->generation)
        return false;
    return v->pods > 0 && v->active > 0;
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

static void put(struct sw_admission_cache *c, const struct sw_admission_key *k, bool admitted,
                bool changed, const char *message, int64_t now_ms)
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
    e->v.changed = changed;
    e->v.at_ms = now_ms;
    snprintf(e->v.message, sizeof(e->v.message), "%s", message ? message : "");
}

void sw_admission_cache_put(struct sw_admission_cache *c, const struct sw_admission_key *k,
                            bool admitted, const char *message, int64_t now_ms)
{
    put(c, k, admitted, false, message, now_ms);
}

void sw_admission_cache_put_changed(struct sw_admission_cache *c, const struct sw_admission_key *k,
                                    const char *field, int64_t now_ms)
{
    put(c, k, false, true, field, now_ms);
}

size_t sw_admission_cache_len(const struct sw_admission_cache *c)
{
    return c ? c->n : 0;
}
