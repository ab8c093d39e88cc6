/*
 * order.c - the decision order: highest priority class first, then first come
 * first served, then by name; a radix sort of packed keys.
 */
#include "placement/engine_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The bits of a finite double as an unsigned integer in the same order
 * (-0 and +0 are equal, as they compare). */
uint64_t sw__order_bits(double d)
{
    d += 0.0; /* -0 becomes +0 */
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

static unsigned radix_digit(const struct order_key *k, int pass)
{
    return pass < 8 ? (unsigned)(k->submit >> (8 * pass)) & 0xff : k->prio;
}

/* Whether x goes before y among keys of equal priority and submit time. */
static bool name_before(const struct sw_workload *pending, const struct order_key *x,
                        const struct order_key *y)
{
    int c = strcmp(pending[x->idx].name, pending[y->idx].name);
    return c != 0 ? c < 0 : x->idx < y->idx;
}

/* Sorts the decision order: highest priority first, then first come first
 * served, then by name and index. A stable LSD radix sort of the keys
 * (built in index order) on submit time and priority, skipping the passes
 * whose byte is the same everywhere, then the rare runs of equal time by
 * name. `tmp` has n entries. */
void sw__sort_order(struct sw_engine *e, struct order_key *a, struct order_key *tmp, size_t n,
                    const struct sw_workload *pending)
{
    if (n < 2)
        return;
    memset(e->radix, 0, sizeof(e->radix));
    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < RADIX_PASSES; p++)
            e->radix[p][radix_digit(&a[i], p)]++;
    struct order_key *src = a, *dst = tmp;
    for (int p = 0; p < RADIX_PASSES; p++) {
        size_t *count = e->radix[p];
        if (count[radix_digit(&src[0], p)] == n)
            continue; /* one bucket: nothing moves */
        size_t sum = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[radix_digit(&src[i], p)]++] = src[i];
        struct order_key *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(*a));
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j].prio == a[i].prio && a[j].submit == a[i].submit)
            j++;
        for (size_t k = i + 1; k < j; k++) {
            struct order_key key = a[k];
            size_t m = k;
            for (; m > i && name_before(pending, &key, &a[m - 1]); m--)
                a[m] = a[m - 1];
            a[m] = key;
        }
        i = j;
    }
}
