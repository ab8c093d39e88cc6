/*
 * log.h - leveled logging in logfmt.
 *
 * SW_LOG checks the threshold before it evaluates its arguments (Redis'
 * serverLog habit), so debug lines cost nothing when they are off. Lines
 * are logfmt:
 *   ts=2026-11-21T10:00:00.123Z level=info msg="cluster ready" cluster=onprem
 * (every field a key=value pair, so Loki, Vector and `logfmt` parsers read
 * the time as the field ts).
 * msg is always quoted and escaped. A field value that may hold a space,
 * '=', '"', a backslash or a control character (an error message, a name
 * read from outside, a path) goes through sw_log_q, which quotes and
 * escapes it the way logfmt requires:
 *   SW_LOG(SW_LOG_WARN, "exec failed", "cluster=%s error=%s", sw_log_q(name),
 *          sw_log_q(err.msg));
 * Never pass a credential, token or key to these macros.
 */
#ifndef SW_COMMON_LOG_H
#define SW_COMMON_LOG_H

#include <stddef.h>
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

/** How many sw_log_q results one thread may hold at once (one log line). */
#define SW_LOG_Q_SLOTS 8
/** The size of one sw_log_q slot, terminating NUL included. */
#define SW_LOG_Q_MAX 1024

/**
 * Returns `v` as a logfmt value, for a "%s" in SW_LOG's fields: unchanged
 * when it holds only printable characters other than space, '=' and '"';
 * otherwise wrapped in '"' with '"' and '\' escaped as \" and \\, newline,
 * carriage return and tab as \n, \r, \t and other control bytes as \xHH.
 * The empty string and NULL give "". A value longer than a slot allows is
 * cut at a character boundary and ends in "..." inside the quotes.
 *
 * The result points into a per-thread ring of SW_LOG_Q_SLOTS buffers: it
 * stays valid until the same thread has called sw_log_q SW_LOG_Q_SLOTS
 * more times, which is enough for every field of one line. Do not keep it.
 */
const char *sw_log_q(const char *v);

/**
 * Writes the logfmt form of `v` (as sw_log_q does) into out, at most
 * outlen bytes with the NUL; returns the length written. For callers that
 * need more than SW_LOG_Q_MAX bytes or their own buffer.
 */
size_t sw_log_escape(const char *v, char *out, size_t outlen);

/** Writes one line; use the SW_LOG macro instead. `fields` is "k=v k=v". */
void sw__log(enum sw_log_level level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * SW_LOG(SW_LOG_INFO, "cluster ready", "cluster=%s gpus=%d", sw_log_q(name), n);
 * The third argument formats the key=value fields; wrap every string value
 * that did not come from a fixed set of words in sw_log_q.
 */
#define SW_LOG(level, msg, ...)                                                                    \
    do {                                                                                           \
        if ((level) >= sw_log_threshold)                                                           \
            sw__log((level), (msg), __VA_ARGS__);                                                  \
    } while (0)

#endif
