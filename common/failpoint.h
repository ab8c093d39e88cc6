/*
 * failpoint.h - named points where a test build can stop or slow the hub.
 *
 * A failpoint is a place in a step where the end-to-end tests make the
 * hub do what only a fault would: die (SIGKILL) just after a write, or
 * send a request late, as over a slow link. They exist only in test
 * builds (CMake option SW_FAILPOINTS, which `make build`, `make asan`
 * and `make test` turn on). In a build without it every macro below
 * compiles to nothing or to its plain path, and neither the points' names
 * nor the environment variables that arm them are in the binary (etcd's
 * gofail, libfiu's fiu_do_on; tests/checks/release_no_failpoints.sh
 * checks it).
 *
 * The steps name a point by its enum; only failpoint.c, compiled in test
 * builds alone, holds the names. What a point remembers (how often it was
 * reached) lives in the module, never in the objects the hub manages.
 *
 * Armed from the environment, read once by SW_FAILPOINT_INIT():
 *   SPILLWAY_CRASH_AT=NAME[:N]  a crash point: SIGKILL the Nth time it is
 *                               reached (default the first)
 *   SPILLWAY_TEST_HOLD=NAME:MS  a hold point: the step's request sent MS
 *                               milliseconds late
 */
#ifndef SW_COMMON_FAILPOINT_H
#define SW_COMMON_FAILPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

/*
 * Every failpoint: XX(ID, name, what has happened when it is reached). Crash
 * points are passed once the step's record write (or its request) has
 * succeeded; hold points delay the request that follows them.
 */
#define SW_FAILPOINT_MAP(XX)                                                                       \
    XX(AFTER_DECIDE, "after-decide", "crash: the decision recorded")                               \
    XX(AFTER_DATA, "after-data", "crash: the inputs' copy recorded")                               \
    XX(AFTER_INTENT, "after-intent", "crash: the dispatch's intent recorded")                      \
    XX(AFTER_SUSPEND, "after-suspend", "crash: the origin patched (finalizer, suspend, take)")     \
    XX(AFTER_MIRROR_CREATE, "after-mirror-create", "crash: the mirror created, not recorded")      \
    XX(AFTER_DISPATCHED, "after-dispatched", "crash: the dispatch recorded")                       \
    XX(AFTER_RUNNING, "after-running", "crash: the mirror's start recorded")                       \
    XX(AFTER_FINISH, "after-finish", "crash: the outcome recorded, the origin not yet told")       \
    XX(HOLD_TAKE, "hold-take", "hold: the take's patch, built before the hold, sent late")         \
    XX(HOLD_RELEASE, "hold-release", "hold: the Workload's deactivation after the take sent late") \
    XX(HOLD_COPY_DELETE, "hold-copy-delete", "hold: the delete of a Secret's copy, read, sent late")

/** The failpoints; SW_FP_NONE names none (a step with no crash point). */
enum sw_failpoint {
    SW_FP_NONE = 0,
#define SW_FP_ENUM(id, name, what) SW_FP_##id,
    SW_FAILPOINT_MAP(SW_FP_ENUM)
#undef SW_FP_ENUM
        SW_FP__COUNT
};

/** A hold point's continuation: called with the caller's copy of its argument. */
typedef void (*sw_failpoint_fn)(void *arg);

#ifdef SW_FAILPOINTS

/**
 * Reads SPILLWAY_CRASH_AT and SPILLWAY_TEST_HOLD, and logs that this is a
 * test build and what is armed. Call once, from main, before the loop
 * runs; an unknown point's name is logged and ignored.
 */
void sw__failpoint_init(void);
/**
 * A crash point: when `fp` is the armed one and reached for the Nth time,
 * logs it and kills the process with SIGKILL. Any thread.
 */
void sw__failpoint_crash(enum sw_failpoint fp);
/**
 * A hold point: when `fp` is armed with MS, copies `len` bytes of `arg`,
 * logs the hold naming `key` (a Job's key), and calls `fn` with the copy
 * from `loop` MS milliseconds later (the copy is freed after it returns);
 * returns true. Not armed (or out of memory): returns false and calls
 * nothing. On the loop's thread.
 */
bool sw__failpoint_hold(uv_loop_t *loop, enum sw_failpoint fp, const char *key, sw_failpoint_fn fn,
                        const void *arg, size_t len);
#define SW_FAILPOINT_INIT()    sw__failpoint_init()
#define SW_FAILPOINT_CRASH(fp) sw__failpoint_crash(fp)
/**
 * Runs fn(arg) now, or, when the hold point `fp` is armed, MS later from
 * `loop` with a copy of *arg (`arg` points to a struct the caller owns;
 * whatever it points to must stay valid until fn runs).
 */
#define SW_FAILPOINT_HOLD(loop, fp, key, fn, arg)                                                  \
    do {                                                                                           \
        if (!sw__failpoint_hold((loop), (fp), (key), (fn), (arg), sizeof(*(arg))))                 \
            (fn)(arg);                                                                             \
    } while (0)

#else

#define SW_FAILPOINT_INIT()    ((void)0)
#define SW_FAILPOINT_CRASH(fp) ((void)(fp))
#define SW_FAILPOINT_HOLD(loop, fp, key, fn, arg)                                                  \
    do {                                                                                           \
        (void)sizeof(loop);                                                                        \
        (void)sizeof(key);                                                                         \
        (void)(fp);                                                                                \
        (fn)(arg);                                                                                 \
    } while (0)

#endif

#endif
