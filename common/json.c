/*
 * json.c - cJSON helpers.
 */
#include "json.h"

#include "alloc.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static void *hook_malloc(size_t n)
{
    return sw_malloc(n);
}

static void hook_free(void *p)
{
    sw_free(p);
}

void sw_json_init_hooks(void)
{
    static int done;
    if (done)
        return;
    cJSON_Hooks hooks = {hook_malloc, hook_free};
    cJSON_InitHooks(&hooks);
    done = 1;
}

int sw_json_parse(const char *text, size_t len, const char *what, cJSON **out, struct sw_error *err)
{
    sw_json_init_hooks();
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (root == NULL) {
        if (sw_alloc_injected())
            return sw_error_set(err, SW_ENOMEM, "%s: out of memory while parsing JSON", what);
        size_t off = end != NULL && end >= text ? (size_t)(end - text) : 0;
        return sw_error_set(err, SW_EPARSE, "%s: malformed JSON near byte %zu", what, off);
    }
    /* Allow trailing white space only. */
    size_t off = (size_t)(end - text);
    while (off < len && (text[off] == ' ' || text[off] == '\n' || text[off] == '\r' ||
                         text[off] == '\t' || text[off] == '\0'))
        off++;
    if (off < len) {
        cJSON_Delete(root);
        return sw_error_set(err, SW_EPARSE, "%s: unexpected data after the JSON value at byte %zu",
                            what, off);
    }
    *out = root;
    return 0;
}

const char *sw_json_type_name(const cJSON *item)
{
    if (item == NULL)
        return "nothing";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsObject(item))
        return "an object";
    return "an invalid value";
}

const cJSON *sw_json_path(const cJSON *obj, const char *path)
{
    const cJSON *cur = obj;
    const char *p = path;
    char key[256];
    while (cur != NULL && *p != '\0') {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key) || !cJSON_IsObject(cur))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        cur = cJSON_GetObjectItemCaseSensitive(cur, key);
        p += n;
        if (*p == '.')
            p++;
    }
    return cur;
}

static int lookup(const cJSON *obj, const char *path, bool required, const char *what,
                  const cJSON **item, struct sw_error *err)
{
    *item = sw_json_path(obj, path);
    if (*item == NULL || cJSON_IsNull(*item)) {
        *item = NULL;
        if (required)
            return sw_error_set(err, SW_ENOENT, "%s: field \"%s\" is missing", what, path);
    }
    return 0;
}

static int wrong_type(const cJSON *item, const char *path, const char *what, const char *expected,
                      struct sw_error *err)
{
    return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected %s, got %s", what, path,
                        expected, sw_json_type_name(item));
}

int sw_json_string(const cJSON *obj, const char *path, bool required, const char *what,
                   const char **out, struct sw_error *err)
{
    const cJSON *item;
    int rc = lookup(obj, path, required, what, &item, err);
    if (rc != 0 || item == NULL)
        return rc;
    if (!cJSON_IsString(item))
        return wrong_type(item, path, what, "a string", err);
    *out = item->valuestring;
    return 0;
}

int sw_json_number(const cJSON *obj, const char *path, bool required, const char *what, double *out,
                   struct sw_error *err)
{
    const cJSON *item;
    int rc = lookup(obj, path, required, what, &item, err);
    if (rc != 0 || item == NULL)
        return rc;
    if (!cJSON_IsNumber(item))
        return wrong_type(item, path, what, "a number", err);
    if (!isfinite(item->valuedouble))
        return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected a finite number", what,
                            path);
    *out = item->valuedouble;
    return 0;
}

int sw_json_int64(const cJSON *obj, const char *path, bool required, const char *what, int64_t *out,
                  struct sw_error *err)
{
    double d = 0;
    const cJSON *item;
    int rc = lookup(obj, path, required, what, &item, err);
    if (rc != 0 || item == NULL)
        return rc;
    if (!cJSON_IsNumber(item))
        return wrong_type(item, path, what, "an integer", err);
    d = item->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < -9007199254740992.0 || d > 9007199254740992.0)
        return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected an integer, got %g", what,
                            path, d);
    *out = (int64_t)d;
    return 0;
}

int sw_json_bool(const cJSON *obj, const char *path, bool required, const char *what, bool *out,
                 struct sw_error *err)
{
    const cJSON *item;
    int rc = lookup(obj, path, required, what, &item, err);
    if (rc != 0 || item == NULL)
        return rc;
    if (!cJSON_IsBool(item))
        return wrong_type(item, path, what, "a boolean", err);
    *out = cJSON_IsTrue(item);
    return 0;
}

static void wipe_tree(cJSON *o)
{
    for (; o != NULL; o = o->next) {
        if (o->string != NULL)
            sw_wipe(o->string, strlen(o->string));
        if (o->valuestring != NULL)
            sw_wipe(o->valuestring, strlen(o->valuestring));
        wipe_tree(o->child);
    }
}

void sw_json_delete_wiped(cJSON *o)
{
    if (o == NULL)
        return;
    /* Only this item and its children: its siblings are not being deleted. */
    if (o->string != NULL)
        sw_wipe(o->string, strlen(o->string));
    if (o->valuestring != NULL)
        sw_wipe(o->valuestring, strlen(o->valuestring));
    wipe_tree(o->child);
    cJSON_Delete(o);
}

char *sw_json_print_wiped(const cJSON *o, size_t hint, size_t *len)
{
    size_t cap = hint + 4096;
    for (int i = 0; i < 16 && cap <= (size_t)INT32_MAX; i++, cap *= 2) {
        char *buf = sw_malloc(cap);
        if (buf == NULL)
            return NULL;
        if (cJSON_PrintPreallocated((cJSON *)o, buf, (int)cap, 0)) {
            if (len != NULL)
                *len = strlen(buf);
            return buf;
        }
        sw_wipe(buf, cap);
        sw_free(buf);
    }
    return NULL;
}
