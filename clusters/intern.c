/*
 * intern.c - a chained hash table of refcounted strings.
 *
 * An entry is one allocation: header then the bytes, so the string a caller
 * holds leads back to its entry without a lookup (release subtracts the
 * header's offset). The table doubles when it holds more entries than
 * buckets; it never shrinks (a cache's vocabulary is small).
 */
#include "clusters/intern.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"

struct ientry {
    struct ientry *next;
    uint32_t hash;
    uint32_t refs;
    size_t len;
    char s[];
};

struct sw_intern {
    struct ientry **buckets;
    size_t nbuckets;
    size_t count;
    size_t bytes;
};

static uint32_t ihash(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

struct sw_intern *sw_intern_new(void)
{
    struct sw_intern *t = sw_calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->nbuckets = 256;
    t->buckets = sw_calloc(t->nbuckets, sizeof(*t->buckets));
    if (t->buckets == NULL) {
        sw_free(t);
        return NULL;
    }
    return t;
}

void sw_intern_free(struct sw_intern *t)
{
    if (t == NULL)
        return;
    sw_assert(t->count == 0);
    sw_free(t->buckets);
    sw_free(t);
}

static void grow(struct sw_intern *t)
{
    size_t n = t->nbuckets * 2;
    struct ientry **b = sw_calloc(n, sizeof(*b));
    if (b == NULL)
        return; /* longer chains: slower, not wrong */
    for (size_t i = 0; i < t->nbuckets; i++) {
        struct ientry *e = t->buckets[i];
        while (e != NULL) {
            struct ientry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    sw_free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

const char *sw_intern(struct sw_intern *t, const char *s, size_t len)
{
    uint32_t h = ihash(s, len);
    for (struct ientry *e = t->buckets[h & (t->nbuckets - 1)]; e != NULL; e = e->next)
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0) {
            e->refs++;
            return e->s;
        }
    struct ientry *e = sw_malloc(sizeof(*e) + len + 1);
    if (e == NULL)
        return NULL;
    e->hash = h;
    e->refs = 1;
    e->len = len;
    memcpy(e->s, s, len);
    e->s[len] = '\0';
    struct ientry **b = &t->buckets[h & (t->nbuckets - 1)];
    e->next = *b;
    *b = e;
    t->count++;
    t->bytes += sizeof(*e) + len + 1;
    if (t->count > t->nbuckets)
        grow(t);
    return e->s;
}

const char *sw_intern_str(struct sw_intern *t, const char *s)
{
    return s ? sw_intern(t, s, strlen(s)) : NULL;
}

void sw_intern_release(struct sw_intern *t, const char *s)
{
    if (s == NULL)
        return;
    struct ientry *e = (struct ientry *)(void *)(s - offsetof(struct ientry, s));
    sw_assert(e->refs > 0);
    if (--e->refs > 0)
        return;
    struct ientry **p = &t->buckets[e->hash & (t->nbuckets - 1)];
    while (*p != e) {
        sw_assert(*p != NULL);
        p = &(*p)->next;
    }
    *p = e->next;
    t->count--;
    t->bytes -= sizeof(*e) + e->len + 1;
    sw_free(e);
}

size_t sw_intern_count(const struct sw_intern *t)
{
    return t->count;
}

size_t sw_intern_bytes(const struct sw_intern *t)
{
    return t->bytes + t->nbuckets * sizeof(struct ientry *);
}
