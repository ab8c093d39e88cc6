/*
 * alloc.h - allocation hooks.
 *
 * All of spillway allocates through these wrappers so that tests can make
 * the Nth allocation fail (curl's torture mode) and prove that every parser
 * unwinds cleanly, and so that benchmarks can count allocations.
 */
#ifndef SW_COMMON_ALLOC_H
#define SW_COMMON_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/** malloc(3) through the hooks; returns NULL on failure (real or injected). */
void *sw_malloc(size_t n);
/** calloc(3) through the hooks; checks nmemb * size for overflow. */
void *sw_calloc(size_t nmemb, size_t size);
/** realloc(3) through the hooks; on failure `p` is left untouched. */
void *sw_realloc(void *p, size_t n);
/** free(3); NULL is fine. */
void sw_free(void *p);
/**
 * Overwrites `n` bytes at `p` with zeros in a way the compiler may not
 * remove (OPENSSL_cleanse), for memory that held a secret. NULL is fine.
 */
void sw_wipe(void *p, size_t n);
/** Wipes a NUL-terminated string (sw_wipe) and frees it; NULL is fine. */
void sw_free_wiped(char *s);
/** Returns a new copy of `s` (NULL in, NULL out), owned by the caller. */
char *sw_strdup(const char *s);
/** Returns a new NUL-terminated copy of the first `n` bytes of `s`. */
char *sw_strndup(const char *s, size_t n);

/**
 * Test hook: the calling thread's next `n - 1` allocations succeed and the
 * nth fails, and every one after it too, until sw_alloc_reset(). Restarts
 * the thread's count at 0. n == 0 disables injection. Other threads'
 * allocations are never refused.
 */
void sw_alloc_fail_at(uint64_t n);
/** Test hook: disables failure injection on the calling thread. */
void sw_alloc_reset(void);
/** Allocations (malloc, calloc, realloc) the calling thread has made since
 * its start or its last sw_alloc_fail_at. */
uint64_t sw_alloc_count(void);
/** Whether an allocation of the calling thread has been refused by
 * injection since its last fail_at. */
int sw_alloc_injected(void);

#endif
