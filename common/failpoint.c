/*
 * failpoint.c - the failpoints of a test build: their names, what arms
 * them, and what each remembers.
 *
 * Compiled only with SW_FAILPOINTS (common/CMakeLists.txt): a release
 * build has neither this file's code nor its strings. One point at most
 * of each kind is armed, for the whole process, from the environment read
 * once at start (tests start a hub per point).
 */
#include "failpoint.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"

/* Each point's name, and what has happened when it is reached. */
#define SW_FP_NAME(id, name, what) [SW_FP_##id] = name,
#define SW_FP_WHAT(id, name, what) [SW_FP_##id] = what,
static const char *const names[SW_FP__COUNT] = {[SW_FP_NONE] = "", SW_FAILPOINT_MAP(SW_FP_NAME)};
static const char *const whats[SW_FP__COUNT] = {[SW_FP_NONE] = "", SW_FAILPOINT_MAP(SW_FP_WHAT)};
#undef SW_FP_NAME
#undef SW_FP_WHAT

static enum sw_failpoint crash_at; /* SW_FP_NONE: none armed */
static long crash_nth = 1;         /* crash the Nth time it is reached */
static atomic_long crash_hits;     /* times crash_at was reached so far */
static enum sw_failpoint hold_at;  /* SW_FP_NONE: none armed */
static int64_t hold_ms;

/* The point named by the first `n` bytes of `s`, or SW_FP_NONE. */
static enum sw_failpoint lookup(const char *s, size_t n)
{
    for (int i = 1; i < SW_FP__COUNT; i++)
        if (strlen(names[i]) == n && strncmp(names[i], s, n) == 0)
            return (enum sw_failpoint)i;
    return SW_FP_NONE;
}

/* "NAME" or "NAME:NUMBER" from variable `var`: the point, and the number
 * (dflt without one). SW_FP_NONE when unset, unknown or malformed. */
static enum sw_failpoint parse(const char *var, long long dflt, long long *num)
{
    const char *v = getenv(var);
    *num = dflt;
    if (v == NULL || v[0] == '\0')
        return SW_FP_NONE;
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    enum sw_failpoint fp = lookup(v, n);
    if (colon != NULL) {
        char *end = NULL;
        long long x = strtoll(colon + 1, &end, 10);
        if (end == colon + 1 || *end != '\0' || x <= 0)
            fp = SW_FP_NONE;
        else
            *num = x;
    } else if (dflt == 0) {
        fp = SW_FP_NONE; /* a hold needs its milliseconds */
    }
    if (fp == SW_FP_NONE)
        SW_LOG(SW_LOG_ERROR, "failpoint not armed: unknown point or malformed value",
               "var=%s value=%s", var, sw_log_q(v));
    return fp;
}

void sw__failpoint_init(void)
{
    long long n;
    crash_at = parse("SPILLWAY_CRASH_AT", 1, &n);
    crash_nth = crash_at != SW_FP_NONE ? (long)n : 1;
    atomic_store(&crash_hits, 0);
    hold_at = parse("SPILLWAY_TEST_HOLD", 0, &n);
    hold_ms = hold_at != SW_FP_NONE ? (int64_t)n : 0;
    SW_LOG(SW_LOG_WARN, "a test build: failpoints compiled in",
           "crash_at=%s nth=%ld hold=%s ms=%lld", sw_log_q(names[crash_at]), crash_nth,
           sw_log_q(names[hold_at]), (long long)hold_ms);
}

void sw__failpoint_crash(enum sw_failpoint fp)
{
    if (fp == SW_FP_NONE || fp != crash_at)
        return;
    if (atomic_fetch_add(&crash_hits, 1) + 1 < crash_nth)
        return;
    SW_LOG(SW_LOG_WARN, "crash point reached: killing the hub", "point=%s what=%s",
           sw_log_q(names[fp]), sw_log_q(whats[fp]));
    fflush(NULL);
    raise(SIGKILL);
}

/* A request held: its continuation and the copy of its argument. */
struct hold {
    uv_timer_t timer;
    enum sw_failpoint fp;
    sw_failpoint_fn fn;
    void *arg;
    char key[256];
};

static void on_hold_closed(uv_handle_t *t)
{
    struct hold *hd = t->data;
    sw_free(hd->arg);
    sw_free(hd);
}

static void on_hold_over(uv_timer_t *t)
{
    struct hold *hd = t->data;
    SW_LOG(SW_LOG_WARN, "hold point passed: the held request goes on", "point=%s key=%s",
           sw_log_q(names[hd->fp]), sw_log_q(hd->key));
    hd->fn(hd->arg);
    uv_close((uv_handle_t *)&hd->timer, on_hold_closed);
}

bool sw__failpoint_hold(uv_loop_t *loop, enum sw_failpoint fp, const char *key, sw_failpoint_fn fn,
                        const void *arg, size_t len)
{
    if (fp == SW_FP_NONE || fp != hold_at || hold_ms <= 0)
        return false;
    struct hold *hd = sw_calloc(1, sizeof(*hd));
    void *copy = sw_malloc(len);
    if (hd == NULL || copy == NULL) {
        sw_free(hd);
        sw_free(copy);
        return false;
    }
    memcpy(copy, arg, len);
    hd->fp = fp;
    hd->fn = fn;
    hd->arg = copy;
    snprintf(hd->key, sizeof(hd->key), "%s", key ? key : "");
    uv_timer_init(loop, &hd->timer);
    hd->timer.data = hd;
    uv_timer_start(&hd->timer, on_hold_over, (uint64_t)hold_ms, 0);
    SW_LOG(SW_LOG_WARN, "hold point reached: the request held", "point=%s key=%s ms=%lld what=%s",
           sw_log_q(names[fp]), sw_log_q(hd->key), (long long)hold_ms, sw_log_q(whats[fp]));
    return true;
}
