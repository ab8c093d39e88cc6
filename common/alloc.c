/*
 * alloc.c - allocation wrappers with failure injection and counting.
 *
 * The counters are per thread: a test arms failure injection on its own
 * thread and a benchmark counts the allocations of the code it runs there,
 * while the hub's other threads (the uv pool, replication's rule threads,
 * exec plugins' readers) allocate through the same wrappers without a data
 * race and without ever seeing a test's injection. Production code never
 * arms injection; a thread-local counter costs no lock or shared cache line
 * on the allocation path.
 */
#include "alloc.h"

#include <openssl/crypto.h>

#include <stdlib.h>
#include <string.h>

static _Thread_local uint64_t alloc_count;
static _Thread_local uint64_t fail_at;
static _Thread_local int injected;

static int should_fail(void)
{
    alloc_count++;
    if (fail_at != 0 && alloc_count >= fail_at) {
        injected = 1;
        return 1;
    }
    return 0;
}

void *sw_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n == 0 ? 1 : n);
}

void *sw_calloc(size_t nmemb, size_t size)
{
    if (size != 0 && nmemb > SIZE_MAX / size)
        return NULL;
    if (should_fail())
        return NULL;
    return calloc(nmemb == 0 ? 1 : nmemb, size == 0 ? 1 : size);
}

void *sw_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n == 0 ? 1 : n);
}

void sw_free(void *p)
{
    free(p);
}

char *sw_strndup(const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    char *d = sw_malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *sw_strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    return sw_strndup(s, strlen(s));
}

void sw_alloc_fail_at(uint64_t n)
{
    alloc_count = 0;
    injected = 0;
    fail_at = n;
}

void sw_alloc_reset(void)
{
    fail_at = 0;
    injected = 0;
}

uint64_t sw_alloc_count(void)
{
    return alloc_count;
}

int sw_alloc_injected(void)
{
    return injected;
}

void sw_wipe(void *p, size_t n)
{
    if (p != NULL && n > 0)
        OPENSSL_cleanse(p, n);
}

void sw_free_wiped(char *s)
{
    if (s == NULL)
        return;
    sw_wipe(s, strlen(s));
    sw_free(s);
}
