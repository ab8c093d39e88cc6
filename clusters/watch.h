/*
 * watch.h - framing of Kubernetes watch streams.
 *
 * A watch response body is a sequence of JSON objects, one per line:
 *   {"type":"ADDED","object":{...}}\n
 * with type ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (whose object is a
 * Status; code 410 means the resourceVersion is too old). The decoder takes
 * the body in arbitrary chunks, as the network delivers it, and calls back
 * once per complete event. It is pure (no I/O) so it can be fuzzed.
 *
 * Every event is capped in size; a line longer than the cap, malformed
 * JSON or an unknown type stops the stream with an error naming the watch
 * and the byte offset.
 */
#ifndef SW_CLUSTERS_WATCH_H
#define SW_CLUSTERS_WATCH_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/** Default cap on one event: 16 MiB (the API server's own limit is lower). */
#define SW_WATCH_DEFAULT_MAX_EVENT ((size_t)16 << 20)

enum sw_watch_type {
    SW_WATCH_ADDED = 1,
    SW_WATCH_MODIFIED,
    SW_WATCH_DELETED,
    SW_WATCH_BOOKMARK,
    SW_WATCH_ERROR,
};

/** Returns "ADDED", "MODIFIED", ... for a type. */
const char *sw_watch_type_name(enum sw_watch_type t);

/** One decoded event, valid during the callback only. */
struct sw_watch_event {
    enum sw_watch_type type;
    /**
     * The object (borrowed). The callback may take ownership by setting
     * this field to NULL; the decoder then does not free it.
     */
    cJSON *object;
    /** metadata.resourceVersion of the object, or "" (borrowed). */
    const char *resource_version;
    /** For ERROR: the Status code (e.g. 410) and message; 0 / "" otherwise. */
    int code;
    const char *message;
};

/**
 * Called per event. Return 0 to go on, or a SW_E* code to stop: feed then
 * returns that code.
 */
typedef int (*sw_watch_event_cb)(struct sw_watch_event *ev, void *ctx);

struct sw_watch_decoder;

/**
 * Creates a decoder. `what` (copied) names the watch in errors, e.g.
 * "watch of Pods on onprem". `max_event` 0 means the default.
 */
int sw_watch_decoder_new(const char *what, size_t max_event, sw_watch_event_cb cb, void *ctx,
                         struct sw_watch_decoder **out);

/**
 * Feeds `len` bytes. Returns 0, the callback's non-zero code, or SW_EPARSE /
 * SW_ETOOBIG / SW_ENOMEM with a message in err. After an error the decoder
 * refuses further input.
 */
int sw_watch_decoder_feed(struct sw_watch_decoder *d, const char *data, size_t len,
                          struct sw_error *err);

/**
 * Ends the stream: SW_EPARSE if it stopped in the middle of an event
 * (whitespace excepted), else 0.
 */
int sw_watch_decoder_finish(struct sw_watch_decoder *d, struct sw_error *err);

/** Number of events decoded so far. */
uint64_t sw_watch_decoder_events(const struct sw_watch_decoder *d);

/** Frees a decoder; NULL is fine. */
void sw_watch_decoder_free(struct sw_watch_decoder *d);

#endif
