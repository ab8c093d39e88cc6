/*
 * httpd.h - the hub's small HTTP server, for /metrics, /healthz and /readyz.
 *
 * It runs on the loop it is given (the hub's, which also runs the lease,
 * the ticks and every member's watches): it reads one request, asks the
 * handler for the answer, writes it and closes the connection. It knows
 * nothing of the hub; metrics.c gives it the handler.
 */
#ifndef SW_CONTROLLER_HUB_HTTPD_H
#define SW_CONTROLLER_HUB_HTTPD_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/error.h"

/** The largest answer body a handler may write (a /metrics page). */
#define SW_HTTPD_MAX_BODY ((size_t)16 << 20)

/* The limits' defaults (sw_httpd_limits). */
#define SW_HTTPD_MAX_CONNS          64
#define SW_HTTPD_MAX_REQUEST        4096
#define SW_HTTPD_REQUEST_TIMEOUT_MS 10000
#define SW_HTTPD_WRITE_TIMEOUT_MS   30000

struct sw_httpd;

/**
 * What one server lets its clients hold, so that slow or idle clients
 * cannot take the descriptors, memory or time of the loop they share with
 * the hub. A zero field takes its default.
 */
struct sw_httpd_limits {
    /* Connections open at once; one more is accepted and closed at once,
     * unanswered, so that the listen backlog never fills. */
    size_t max_conns;
    /* Bytes of request line and headers; a request that has not ended
     * within them is answered 431 and closed. */
    size_t max_request;
    /* From accept to the end of the headers, however slowly they come:
     * past it the connection is closed. */
    uint64_t request_timeout_ms;
    /* From the answer to its last byte written: past it the connection is
     * closed (a client that does not read). */
    uint64_t write_timeout_ms;
};

/** Connections closed by the limits since the start. */
struct sw_httpd_stats {
    uint64_t over_cap;  /* accepted past max_conns and closed */
    uint64_t timed_out; /* request or write timeout */
    uint64_t too_large; /* answered 431 */
};

/** A request's answer, filled in by the handler. */
struct sw_httpd_answer {
    int code;           /* 200 unless the handler sets another */
    const char *ctype;  /* static; "text/plain" unless the handler sets another */
    struct sw_buf body; /* initialised, capped at SW_HTTPD_MAX_BODY */
};

/**
 * Answers one request: `method` and `path` (the query string cut off) are
 * borrowed for the call. Runs on the loop.
 */
typedef void (*sw_httpd_handler)(const char *method, const char *path, struct sw_httpd_answer *a,
                                 void *ctx);

/**
 * Listens on `listen` ("IPV4:PORT" or "[IPV6]:PORT"; port 0 picks a free
 * one) on `loop` (borrowed; must outlive the server), calling `fn` with
 * `ctx` for each request, within `lim` (copied; NULL: the defaults). Returns 0 and *out (owned by
 * the caller; close with sw_httpd_close), or SW_EINVAL for a bad address, SW_EIO when the address
 * cannot be bound, SW_ENOMEM; `err` says which, naming `listen`.
 */
int sw_httpd_start(uv_loop_t *loop, const char *listen, const struct sw_httpd_limits *lim,
                   sw_httpd_handler fn, void *ctx, struct sw_httpd **out, struct sw_error *err);

/** Connections open now. */
size_t sw_httpd_conns(const struct sw_httpd *s);

/** Copies the counts of connections the limits closed into *out. */
void sw_httpd_stats(const struct sw_httpd *s, struct sw_httpd_stats *out);

/** The port the server listens on (useful after port 0), or -1. */
int sw_httpd_port(const struct sw_httpd *s);

/**
 * Stops listening and closes every connection; the server is freed once
 * its handles are closed (run the loop). NULL is fine.
 */
void sw_httpd_close(struct sw_httpd *s);

#endif
