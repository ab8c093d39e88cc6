/*
 * fill.h - deterministic test data for the replication tests, tools and
 * benchmark: the same seed always gives the same bytes (xorshift64), so a
 * copy can be checked against a regenerated original without keeping it.
 */
#ifndef SW_TESTS_SUPPORT_FILL_H
#define SW_TESTS_SUPPORT_FILL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** Fills p[0..n) with the byte stream of `seed`. */
static inline void sw_test_fill(char *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++)
        p[i] = (char)(x >> (i % 8));
}

#endif
