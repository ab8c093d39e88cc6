/*
 * log.h - leveled logging with key=value fields.
 *
 * SW_LOG checks the threshold before it evaluates its arguments (Redis'
 * serverLog habit), so debug lines cost nothing when they are off. Lines
 * look like:
 *   2026-11-21T10:00:00.123Z level=info msg="cluster ready" cluster=onprem
 * Never pass a credential, token or key to these macros.
 */
#ifndef SW_COMMON_LOG_H
#define SW_COMMON_LOG_H

#include <stdio.h>

enum sw_log_level { SW_LOG_DEBUG = 0, SW_LOG_INFO, SW_LOG_WARN, SW_LOG_ERROR, SW_LOG_OFF };

/** The current threshold; lines below it are not formatted at all. */
extern enum sw_log_level sw_log_threshold;

/** Sets the threshold. */
void sw_log_set_level(enum sw_log_level level);
/** Parses "debug", "info", "warn", "error" or "off"; returns -1 if unknown. */
int sw_log_level_parse(const char *s);
/** Sends log lines to `f` (borrowed; stderr by default). */
void sw_log_set_stream(FILE *f);

/** Writes one line; use the SW_LOG macro instead. `fields` is "k=v k=v". */
void sw__log(enum sw_log_level level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * SW_LOG(SW_LOG_INFO, "cluster ready", "cluster=%s gpus=%d", name, n);
 * The third argument formats the key=value fields.
 */
#define SW_LOG(level, msg, ...)                                                                    \
    do {                                                                                           \
        if ((level) >= sw_log_threshold)                                                           \
            sw__log((level), (msg), __VA_ARGS__);                                                  \
    } while (0)

#endif
