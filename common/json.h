/*
 * json.h - cJSON helpers whose errors name the object and the field.
 *
 * Every accessor takes `what`, a short description of the object being read
 * (e.g. "Job default/train-1"), so that a failure reads
 *   Job default/train-1: field "spec.parallelism": expected a number, got a string
 */
#ifndef SW_COMMON_JSON_H
#define SW_COMMON_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/** Routes cJSON's allocations through sw_malloc/sw_free (idempotent). */
void sw_json_init_hooks(void);

/**
 * Parses `len` bytes of JSON into a new tree (*out, owned by the caller,
 * freed with cJSON_Delete). Trailing garbage is an error.
 */
int sw_json_parse(const char *text, size_t len, const char *what, cJSON **out,
                  struct sw_error *err);

/** The member `k` of object `o`, or NULL (also when `o` is NULL or not an object). */
static inline cJSON *sw_json_child(const cJSON *o, const char *k)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

/** The string member `k` of `o`, or NULL when absent or not a string. */
static inline const char *sw_json_str(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(sw_json_child(o, k));
}

/**
 * Deletes `o` (NULL is fine) after wiping every string in it, names and
 * values (sw_wipe): for trees that held a Secret's data.
 */
void sw_json_delete_wiped(cJSON *o);

/**
 * Prints `o` unformatted into a new buffer (sw_free_wiped), for trees that
 * hold a secret: cJSON's own printer grows its buffer by copying and frees
 * the old copies unwiped, so this one prints into a buffer of the whole
 * size (first `hint` + 4 KiB, doubled until it fits), wiping each one too
 * small. Returns NULL when out of memory; *len (optional) is the length.
 */
char *sw_json_print_wiped(const cJSON *o, size_t hint, size_t *len);

/** Returns a short name for the JSON type of `item` ("string", "number", ...). */
const char *sw_json_type_name(const cJSON *item);

/**
 * Looks up a dotted path ("spec.template.metadata") in `obj`. Returns the
 * item (borrowed) or NULL when any step is missing or not an object.
 */
const cJSON *sw_json_path(const cJSON *obj, const char *path);

/**
 * The typed accessors below read `path` under `obj`. When the field is
 * missing they return SW_ENOENT if `required`, else 0 leaving *out as it
 * was (so callers set defaults first). A field of the wrong type or value is
 * SW_EPARSE. Strings are borrowed from the tree.
 */
int sw_json_string(const cJSON *obj, const char *path, bool required, const char *what,
                   const char **out, struct sw_error *err);
int sw_json_number(const cJSON *obj, const char *path, bool required, const char *what, double *out,
                   struct sw_error *err);
int sw_json_int64(const cJSON *obj, const char *path, bool required, const char *what, int64_t *out,
                  struct sw_error *err);
int sw_json_bool(const cJSON *obj, const char *path, bool required, const char *what, bool *out,
                 struct sw_error *err);

#endif
