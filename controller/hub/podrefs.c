/*
 * podrefs.c - every Secret and ConfigMap a pod spec references (see
 * podrefs.h for the list of fields read and why it must be complete).
 *
 * The walk keeps the field path it is at in a buffer, so that what it
 * finds and what it refuses both name the exact field. Nothing is cut
 * silently: past SW_POD_REFS_MAX the walk goes on, only to count the
 * distinct references for the refusal's message, and then fails.
 */
#include "controller/hub/podrefs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"

/* How much of a refused value a message shows. */
#define VALUE_SHOWN 48

#define NAME_EXPECT                                                                                \
    "a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', starting and "      \
    "ending with a letter or digit)"

/* A reference past the limit: only counted (its name borrowed from the tree). */
struct over {
    enum sw_pod_ref_kind kind;
    const char *name;
};

struct walk {
    struct sw_pod_refs *out;
    struct sw_error *err;
    const char *where;
    char path[SW_POD_REF_FIELD_MAX];
    size_t len;
    struct over *over;
    size_t n_over, cap_over;
    char first_over[SW_POD_REF_FIELD_MAX];
};

const char *sw_pod_ref_kind_name(enum sw_pod_ref_kind k)
{
    return k == SW_POD_REF_SECRET ? "Secret" : "ConfigMap";
}

const char *sw_pod_ref_resource(enum sw_pod_ref_kind k)
{
    return k == SW_POD_REF_SECRET ? "secrets" : "configmaps";
}

/* Appends to the field path; returns the length to go back to (pop). A
 * path longer than the buffer is cut, never overrun. */
__attribute__((format(printf, 2, 3))) static size_t push(struct walk *w, const char *fmt, ...)
{
    size_t old = w->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->path + w->len, sizeof(w->path) - w->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        w->len += (size_t)n;
    if (w->len >= sizeof(w->path))
        w->len = sizeof(w->path) - 1;
    return old;
}

static void pop(struct walk *w, size_t old)
{
    w->len = old;
    w->path[old] = '\0';
}

/* `v` quoted for a message: '"', '\' and control characters escaped, cut
 * after VALUE_SHOWN bytes (at a UTF-8 boundary) with "..." after it.
 * `dst` holds at least 4 * VALUE_SHOWN + 4 bytes. */
static void quote_value(const char *v, char *dst)
{
    size_t len = strnlen(v, VALUE_SHOWN + 1), cut = len;
    if (len > VALUE_SHOWN) {
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

/* The member `key` of the object `parent` when it is of `type` (cJSON_Object
 * or cJSON_Array); NULL when absent or null; an error when of another type. */
static int member(struct walk *w, const cJSON *parent, const char *key, int type, const cJSON **out)
{
    const cJSON *item = sw_json_child(parent, key);
    *out = NULL;
    if (item == NULL || cJSON_IsNull(item))
        return 0;
    if ((item->type & 0xff) == type) {
        *out = item;
        return 0;
    }
    return sw_error_set(w->err, SW_EINVAL, "field \"%s.%s\": expected %s, got %s", w->path, key,
                        type == cJSON_Array ? "an array" : "an object", sw_json_type_name(item));
}

/* An element of an array (the path ends in "[i]") must be an object; a null
 * one is skipped (*skip). */
static int element(struct walk *w, const cJSON *item, bool *skip)
{
    *skip = cJSON_IsNull(item);
    if (*skip || cJSON_IsObject(item))
        return 0;
    return sw_error_set(w->err, SW_EINVAL, "field \"%s\": expected an object, got %s", w->path,
                        sw_json_type_name(item));
}

/* dst = "PATH.KEY", cut (never overrun) when longer than the buffer. */
static void field_of(const struct walk *w, const char *key, char *dst, size_t cap)
{
    size_t a = strlen(w->path), b = strlen(key), o = 0;
    if (cap == 0)
        return;
    if (a > cap - 1)
        a = cap - 1;
    memcpy(dst, w->path, a);
    o = a;
    if (o < cap - 1)
        dst[o++] = '.';
    if (b > cap - 1 - o)
        b = cap - 1 - o;
    memcpy(dst + o, key, b);
    dst[o + b] = '\0';
}

static int add(struct walk *w, enum sw_pod_ref_kind kind, const char *name, bool optional,
               const char *name_key)
{
    struct sw_pod_refs *o = w->out;
    for (size_t i = 0; i < o->n; i++)
        if (o->refs[i].kind == kind && strcmp(o->refs[i].name, name) == 0) {
            /* Optional only if every reference says so: one that does not
             * needs the object. */
            o->refs[i].optional = o->refs[i].optional && optional;
            return 0;
        }
    if (o->n < SW_POD_REFS_MAX) {
        struct sw_pod_ref *r = &o->refs[o->n++];
        r->kind = kind;
        r->optional = optional;
        snprintf(r->name, sizeof(r->name), "%s", name);
        field_of(w, name_key, r->field, sizeof(r->field));
        return 0;
    }
    if (w->n_over == w->cap_over) {
        size_t cap = w->cap_over ? 2 * w->cap_over : 16;
        struct over *nw = sw_realloc(w->over, cap * sizeof(*nw));
        if (nw == NULL)
            return sw_error_set(w->err, SW_ENOMEM,
                                "field \"%s\": out of memory counting its references", w->where);
        w->over = nw;
        w->cap_over = cap;
    }
    if (w->n_over == 0)
        field_of(w, name_key, w->first_over, sizeof(w->first_over));
    w->over[w->n_over].kind = kind;
    w->over[w->n_over].name = name;
    w->n_over++;
    return 0;
}

/* One reference: the object at the current path, its name in `name_key`,
 * an `optional` member when the API has one. */
static int ref(struct walk *w, const cJSON *obj, const char *name_key, enum sw_pod_ref_kind kind,
               bool has_optional, bool skip_unnamed)
{
    const char *what = sw_pod_ref_kind_name(kind);
    const cJSON *n = sw_json_child(obj, name_key);
    if (n != NULL && !cJSON_IsNull(n) && !cJSON_IsString(n))
        return sw_error_set(w->err, SW_EINVAL,
                            "field \"%s.%s\": expected a string (the %s's name), got %s", w->path,
                            name_key, what, sw_json_type_name(n));
    const char *name = cJSON_GetStringValue(n);
    if (name == NULL || name[0] == '\0') {
        if (skip_unnamed)
            return 0;
        return sw_error_set(w->err, SW_EINVAL, "field \"%s.%s\": expected the %s's name, got %s",
                            w->path, name_key, what, name == NULL ? "nothing" : "an empty string");
    }
    if (!sw_dns1123_subdomain(name)) {
        char q[4 * VALUE_SHOWN + 4];
        quote_value(name, q);
        return sw_error_set(w->err, SW_EINVAL,
                            "field \"%s.%s\": value \"%s\": expected a %s name: " NAME_EXPECT,
                            w->path, name_key, q, what);
    }
    bool optional = false;
    if (has_optional) {
        const cJSON *opt = sw_json_child(obj, "optional");
        if (opt != NULL && !cJSON_IsNull(opt) && !cJSON_IsBool(opt))
            return sw_error_set(w->err, SW_EINVAL,
                                "field \"%s.optional\": expected a boolean, got %s", w->path,
                                sw_json_type_name(opt));
        optional = cJSON_IsTrue(opt);
    }
    return add(w, kind, name, optional, name_key);
}

/* parent.key, an object holding a reference (absent: none). */
static int ref_in(struct walk *w, const cJSON *parent, const char *key, const char *name_key,
                  enum sw_pod_ref_kind kind, bool has_optional)
{
    const cJSON *o;
    int rc = member(w, parent, key, cJSON_Object, &o);
    if (rc != 0 || o == NULL)
        return rc;
    size_t b = push(w, ".%s", key);
    rc = ref(w, o, name_key, kind, has_optional, false);
    pop(w, b);
    return rc;
}

/* Calls `fn` on every object of the array parent.key, the path at "[i]". */
static int each(struct walk *w, const cJSON *parent, const char *key,
                int (*fn)(struct walk *w, const cJSON *item))
{
    const cJSON *arr, *item;
    int rc = member(w, parent, key, cJSON_Array, &arr);
    if (rc != 0 || arr == NULL)
        return rc;
    size_t b = push(w, ".%s", key);
    int i = 0;
    cJSON_ArrayForEach(item, arr)
    {
        size_t bi = push(w, "[%d]", i++);
        bool skip;
        rc = element(w, item, &skip);
        if (rc == 0 && !skip)
            rc = fn(w, item);
        pop(w, bi);
        if (rc != 0)
            break;
    }
    pop(w, b);
    return rc;
}

static int env_var(struct walk *w, const cJSON *e)
{
    const cJSON *vf;
    int rc = member(w, e, "valueFrom", cJSON_Object, &vf);
    if (rc != 0 || vf == NULL)
        return rc;
    size_t b = push(w, ".valueFrom");
    rc = ref_in(w, vf, "configMapKeyRef", "name", SW_POD_REF_CONFIGMAP, true);
    if (rc == 0)
        rc = ref_in(w, vf, "secretKeyRef", "name", SW_POD_REF_SECRET, true);
    pop(w, b);
    return rc;
}

static int env_from(struct walk *w, const cJSON *e)
{
    int rc = ref_in(w, e, "configMapRef", "name", SW_POD_REF_CONFIGMAP, true);
    if (rc == 0)
        rc = ref_in(w, e, "secretRef", "name", SW_POD_REF_SECRET, true);
    return rc;
}

static int container(struct walk *w, const cJSON *c)
{
    int rc = each(w, c, "env", env_var);
    if (rc == 0)
        rc = each(w, c, "envFrom", env_from);
    return rc;
}

static int projection(struct walk *w, const cJSON *src)
{
    int rc = ref_in(w, src, "configMap", "name", SW_POD_REF_CONFIGMAP, true);
    if (rc == 0)
        rc = ref_in(w, src, "secret", "name", SW_POD_REF_SECRET, true);
    return rc;
}

/* In-tree volume kinds whose `secretRef` names a Secret in the pod's own
 * namespace (a PersistentVolume's may name another namespace, but a pod's
 * inline volume cannot). */
static const char *const secret_ref_volumes[] = {
    "cephfs", "rbd", "flexVolume", "iscsi", "scaleIO", "storageos", "cinder",
};

static int volume(struct walk *w, const cJSON *v)
{
    int rc = ref_in(w, v, "configMap", "name", SW_POD_REF_CONFIGMAP, true);
    if (rc == 0)
        rc = ref_in(w, v, "secret", "secretName", SW_POD_REF_SECRET, true);
    const cJSON *o;
    if (rc == 0)
        rc = member(w, v, "projected", cJSON_Object, &o);
    if (rc == 0 && o != NULL) {
        size_t b = push(w, ".projected");
        rc = each(w, o, "sources", projection);
        pop(w, b);
    }
    if (rc == 0)
        rc = member(w, v, "csi", cJSON_Object, &o);
    if (rc == 0 && o != NULL) {
        size_t b = push(w, ".csi");
        rc = ref_in(w, o, "nodePublishSecretRef", "name", SW_POD_REF_SECRET, false);
        pop(w, b);
    }
    for (size_t i = 0; rc == 0 && i < sizeof(secret_ref_volumes) / sizeof(*secret_ref_volumes);
         i++) {
        rc = member(w, v, secret_ref_volumes[i], cJSON_Object, &o);
        if (rc == 0 && o != NULL) {
            size_t b = push(w, ".%s", secret_ref_volumes[i]);
            rc = ref_in(w, o, "secretRef", "name", SW_POD_REF_SECRET, false);
            pop(w, b);
        }
    }
    if (rc == 0)
        rc = ref_in(w, v, "azureFile", "secretName", SW_POD_REF_SECRET, false);
    return rc;
}

static int pull_secret(struct walk *w, const cJSON *s)
{
    return ref(w, s, "name", SW_POD_REF_SECRET, false, true);
}

static int over_cmp(const void *a, const void *b)
{
    const struct over *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* More than the limit: how many distinct, for the message. */
static int too_many(struct walk *w)
{
    qsort(w->over, w->n_over, sizeof(*w->over), over_cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < w->n_over; i++)
        if (i == 0 || over_cmp(&w->over[i - 1], &w->over[i]) != 0)
            distinct++;
    return sw_error_set(w->err, SW_ETOOBIG,
                        "field \"%s\": references %zu distinct Secrets and ConfigMaps, more than "
                        "the %d spillway copies for a burst (the first past the limit at field "
                        "\"%s\")",
                        w->where, w->out->n + distinct, SW_POD_REFS_MAX, w->first_over);
}

int sw_pod_refs_collect(const cJSON *pod_spec, const char *where, struct sw_pod_refs *out,
                        struct sw_error *err)
{
    struct walk w;
    memset(&w, 0, sizeof(w));
    w.out = out;
    w.err = err;
    w.where = where != NULL ? where : "spec";
    push(&w, "%s", w.where);
    int rc = 0;
    if (pod_spec != NULL && !cJSON_IsNull(pod_spec) && !cJSON_IsObject(pod_spec))
        rc = sw_error_set(err, SW_EINVAL, "field \"%s\": expected an object, got %s", w.path,
                          sw_json_type_name(pod_spec));
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    for (size_t i = 0; rc == 0 && i < sizeof(lists) / sizeof(*lists); i++)
        rc = each(&w, pod_spec, lists[i], container);
    if (rc == 0)
        rc = each(&w, pod_spec, "volumes", volume);
    if (rc == 0)
        rc = each(&w, pod_spec, "imagePullSecrets", pull_secret);
    if (rc == 0 && w.n_over > 0)
        rc = too_many(&w);
    sw_free(w.over);
    if (rc != 0)
        out->n = 0;
    return rc;
}
