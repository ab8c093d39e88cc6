/*
 * clock.c - the system clock and a fake one for tests.
 */
#define _POSIX_C_SOURCE 200809L
#include "clock.h"

#include <time.h>

static int64_t sys_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t sys_mono(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const struct sw_clock system_clock = {sys_now, sys_mono, NULL};

const struct sw_clock *sw_clock_system(void)
{
    return &system_clock;
}

static int64_t fake_now(void *ctx)
{
    return ((struct sw_fake_clock *)ctx)->now_ms;
}

void sw_fake_clock_init(struct sw_fake_clock *fc, int64_t start_ms)
{
    fc->clock.now_ms = fake_now;
    fc->clock.mono_ms = fake_now;
    fc->clock.ctx = fc;
    fc->now_ms = start_ms;
}

void sw_fake_clock_advance(struct sw_fake_clock *fc, int64_t delta_ms)
{
    fc->now_ms += delta_ms;
}
