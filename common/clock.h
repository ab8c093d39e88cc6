/*
 * clock.h - an injectable clock.
 *
 * Modules that need the time take a `const struct sw_clock *` so that tests
 * drive time by hand. placement/ never reads a clock: time is a parameter.
 */
#ifndef SW_COMMON_CLOCK_H
#define SW_COMMON_CLOCK_H

#include <stdint.h>

struct sw_clock {
    /** Milliseconds since the Unix epoch (wall clock). */
    int64_t (*now_ms)(void *ctx);
    /** Monotonic milliseconds, for timeouts and rates. */
    int64_t (*mono_ms)(void *ctx);
    void *ctx;
};

/** The process's real clock (static storage; never freed). */
const struct sw_clock *sw_clock_system(void);

/** A clock that only moves when told to; for tests. */
struct sw_fake_clock {
    struct sw_clock clock;
    int64_t now_ms;
};

/** Initialises a fake clock at `start_ms` (both wall and monotonic). */
void sw_fake_clock_init(struct sw_fake_clock *fc, int64_t start_ms);
/** Moves a fake clock forward by `delta_ms`. */
void sw_fake_clock_advance(struct sw_fake_clock *fc, int64_t delta_ms);

static inline int64_t sw_now_ms(const struct sw_clock *c)
{
    return c->now_ms(c->ctx);
}

static inline int64_t sw_mono_ms(const struct sw_clock *c)
{
    return c->mono_ms(c->ctx);
}

#endif
