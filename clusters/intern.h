/*
 * intern.h - a table of shared, reference-counted strings.
 *
 * The cache's records hold many copies of the same few strings: namespaces,
 * label keys and values, node names, phases, condition types and reasons,
 * the scheduler's "Insufficient nvidia.com/gpu" message. Interned, each is
 * stored once and a record holds a pointer to it; the last release frees
 * it. One table per cluster cache, used on the loop only (no lock).
 */
#ifndef SW_CLUSTERS_INTERN_H
#define SW_CLUSTERS_INTERN_H

#include <stddef.h>

struct sw_intern;

/** Creates an empty table, or NULL when out of memory. */
struct sw_intern *sw_intern_new(void);

/**
 * Frees the table. Every string it returned must have been released
 * (asserted): a leak in a record is a bug, not a memory cost.
 */
void sw_intern_free(struct sw_intern *t);

/**
 * Returns the table's copy of s[0..len) (one more reference to it), or NULL
 * when out of memory. `s` is borrowed and need not be NUL-terminated.
 */
const char *sw_intern(struct sw_intern *t, const char *s, size_t len);

/** Like sw_intern for a NUL-terminated string; NULL for NULL. */
const char *sw_intern_str(struct sw_intern *t, const char *s);

/** Drops one reference to `s`, which sw_intern returned (NULL is ignored). */
void sw_intern_release(struct sw_intern *t, const char *s);

/** The number of distinct strings held, and the bytes they and the table use. */
size_t sw_intern_count(const struct sw_intern *t);
size_t sw_intern_bytes(const struct sw_intern *t);

#endif
