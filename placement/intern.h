/*
 * intern.h - small tables that turn the snapshot's names into dense
 * integer ids, so that the engine and validation compare integers instead
 * of strings.
 *
 * Internal to placement/ (hence sw__). Open addressing over borrowed keys:
 * the strings stay in the snapshot and must outlive the table's use. A
 * table is sized by sw__intern_reset for the number of keys it will hold,
 * reuses its memory between resets, and never grows while keys are added,
 * so that a warm engine interns without allocating.
 */
#ifndef SW_PLACEMENT_INTERN_H
#define SW_PLACEMENT_INTERN_H

#include <stddef.h>

/** A name table; zero-initialise, then sw__intern_reset before use. */
struct sw__intern {
    const char **keys; /* borrowed; NULL marks an empty slot */
    int *vals;
    size_t cap; /* power of two, at least twice the expected keys */
    size_t n;   /* ids handed out: 0 .. n-1 */
};

/**
 * Empties `t` and makes room for `expect` keys (allocating only when it
 * has never held that many). Returns 0 or SW_ENOMEM (then `t` is empty but
 * keeps its old memory).
 */
int sw__intern_reset(struct sw__intern *t, size_t expect);

/** Returns the id of `s`, or -1 when it is not in `t`. */
int sw__intern_find(const struct sw__intern *t, const char *s);

/**
 * Returns the id of `s` (borrowed), adding it with the next id if new.
 * At most the `expect` keys of the last reset may be added.
 */
int sw__intern_add(struct sw__intern *t, const char *s);

/** Frees the memory of `t` (not the keys) and zeroes it. */
void sw__intern_free(struct sw__intern *t);

#endif
