/*
 * intern.c - name tables: FNV-1a hashing with linear probing.
 */
#include "placement/intern.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/error.h"

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int sw__intern_reset(struct sw__intern *t, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 1)
        cap *= 2;
    if (cap > t->cap) {
        const char **k = sw_calloc(cap, sizeof(*k));
        int *v = sw_calloc(cap, sizeof(*v));
        if (k == NULL || v == NULL) {
            sw_free(k);
            sw_free(v);
            if (t->keys != NULL)
                memset(t->keys, 0, t->cap * sizeof(*t->keys));
            t->n = 0;
            return SW_ENOMEM;
        }
        sw_free(t->keys);
        sw_free(t->vals);
        t->keys = k;
        t->vals = v;
        t->cap = cap;
    } else {
        memset(t->keys, 0, t->cap * sizeof(*t->keys));
    }
    t->n = 0;
    return 0;
}

/* strcmp(a, b) == 0 for the short names of a snapshot, inline: the
 * library's strcmp is built for long strings and costs a call. */
static bool same(const char *a, const char *b)
{
    for (; *a == *b; a++, b++)
        if (*a == '\0')
            return true;
    return false;
}

int sw__intern_find(const struct sw__intern *t, const char *s)
{
    if (t->cap == 0)
        return -1;
    size_t mask = t->cap - 1;
    for (size_t i = fnv1a(s) & mask;; i = (i + 1) & mask) {
        if (t->keys[i] == NULL)
            return -1;
        if (same(t->keys[i], s))
            return t->vals[i];
    }
}

int sw__intern_add(struct sw__intern *t, const char *s)
{
    /* The reset sized the table for every key: it is never full. */
    sw_assert(t->n * 2 < t->cap);
    size_t mask = t->cap - 1;
    for (size_t i = fnv1a(s) & mask;; i = (i + 1) & mask) {
        if (t->keys[i] == NULL) {
            t->keys[i] = s;
            t->vals[i] = (int)t->n;
            return (int)t->n++;
        }
        if (same(t->keys[i], s))
            return t->vals[i];
    }
}

void sw__intern_free(struct sw__intern *t)
{
    sw_free(t->keys);
    sw_free(t->vals);
    memset(t, 0, sizeof(*t));
}
