/*
 * http.h - asynchronous HTTP on the hub's libuv loop, over libcurl multi.
 *
 * One struct sw_http per loop drives a curl multi handle with
 * curl_multi_socket_action from uv_poll and uv_timer callbacks (the shape of
 * curl's docs/examples/multi-uv.c). Connections are reused across requests
 * and HTTP/2 is negotiated over TLS where the server offers it.
 *
 * The Kubernetes REST client (clusters/) and the S3 client (replication/)
 * are built on this; neither talks to curl multi directly. Callers set
 * per-request options curl has (TLS material, SigV4, proxies) through the
 * `configure` hook, which runs on the easy handle before it is added.
 */
#ifndef SW_NET_HTTP_H
#define SW_NET_HTTP_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/error.h"

struct sw_http;
struct sw_http_call;

/** Default cap on a buffered response body: 64 MiB. */
#define SW_HTTP_DEFAULT_MAX_BODY ((size_t)64 << 20)

/** A response, owned by the library and valid only during the callback. */
struct sw_http_response {
    /** 0 when the transfer completed (whatever its status), else SW_E*. */
    int rc;
    /** HTTP status, or 0 when no response arrived. */
    long status;
    /** The buffered body (empty when the request streamed it to on_data). */
    struct sw_buf body;
    /** Response headers as received, "Name: value" lines joined by "\n". */
    struct sw_buf headers;
    /** libcurl's description of a transport failure (empty when rc == 0). */
    char error[CURL_ERROR_SIZE];
    /** Seconds asked for by a Retry-After header, or -1. */
    long retry_after_s;
    /**
     * The HTTP version the response came in (CURLINFO_HTTP_VERSION):
     * CURL_HTTP_VERSION_1_0, _1_1, _2_0 or _3; 0 when no response arrived.
     */
    long http_version;
    /** New connections this call opened (CURLINFO_NUM_CONNECTS); 0 when it reused one. */
    long new_connects;
};

/**
 * Looks up a response header by name (case-insensitive) and copies its value
 * into out (NUL-terminated, truncated to outlen - 1). Returns 0 when found,
 * SW_ENOENT otherwise. For repeated headers the last one wins.
 */
int sw_http_header(const struct sw_http_response *resp, const char *name, char *out, size_t outlen);

/**
 * Called when a call ends: completed, failed, or canceled (rc ==
 * SW_ECANCELED). The call handle is freed right after the callback returns.
 */
typedef void (*sw_http_done_cb)(struct sw_http_call *call, struct sw_http_response *resp,
                                void *ctx);

/**
 * Called with each chunk of the body when on_data is set (the body is then
 * not buffered). Return 0 to continue, non-zero to abort the transfer (the
 * call then ends with rc == SW_ECANCELED).
 */
typedef int (*sw_http_data_cb)(const char *data, size_t len, void *ctx);

/**
 * Called to fill an upload body when body == NULL and on_read is set.
 * Returns the number of bytes written (0 at the end), or
 * CURL_READFUNC_ABORT.
 */
typedef size_t (*sw_http_read_cb)(char *dst, size_t len, void *ctx);

/** Extra per-request setup; return 0 or a SW_E* code to refuse the request. */
typedef int (*sw_http_configure_cb)(CURL *easy, void *ctx);

/**
 * A request. Everything here is borrowed: the strings and the body must stay
 * valid until the call ends (the headers list is copied by sw_http_send).
 */
struct sw_http_request {
    const char *method;             /* "GET", "PUT", ...; NULL means GET */
    const char *url;                /* required */
    struct curl_slist *headers;     /* optional; copied */
    const void *body;               /* optional request body */
    size_t body_len;                /* length of body */
    sw_http_read_cb on_read;        /* streaming upload when body == NULL */
    int64_t upload_len;             /* length for on_read, -1 if unknown */
    sw_http_data_cb on_data;        /* streaming download; NULL buffers the body */
    size_t max_body;                /* cap on the buffered body; 0 = default */
    long timeout_ms;                /* whole-transfer timeout; 0 = none */
    long connect_timeout_ms;        /* 0 = 10 s */
    long low_speed_time_s;          /* abort when below 1 byte/s this long; 0 = off */
    sw_http_configure_cb configure; /* optional extra curl options */
    void *configure_ctx;
    int sensitive; /* the answer holds a secret: its buffer is wiped (sw_buf_set_wipe) */
};

/**
 * Creates the HTTP engine for `loop` (borrowed; must outlive it). Returns 0
 * and *out (owned by the caller; free with sw_http_free) or SW_ENOMEM.
 */
int sw_http_new(uv_loop_t *loop, struct sw_http **out);

/**
 * Cancels every call in flight (their callbacks run with SW_ECANCELED),
 * then closes the engine's libuv handles and frees it once they are closed.
 * The loop must be run afterwards for the close to complete.
 */
void sw_http_free(struct sw_http *h);

/**
 * Starts a request. On success returns 0 and, if `out` is not NULL, the call
 * handle (borrowed; valid until `done` has returned). `done` always runs
 * exactly once for a started call, from the loop, never from inside
 * sw_http_send.
 */
int sw_http_send(struct sw_http *h, const struct sw_http_request *req, sw_http_done_cb done,
                 void *ctx, struct sw_http_call **out);

/** Cancels a call; its callback runs with SW_ECANCELED from the loop. */
void sw_http_cancel(struct sw_http_call *call);

/** The response's status code so far (0 before the headers), e.g. from on_data. */
long sw_http_call_status(const struct sw_http_call *call);

/** The number of calls in flight. */
size_t sw_http_pending(const struct sw_http *h);

/**
 * Runs one request to completion on a private loop, for command-line tools.
 * `resp` is filled and owned by the caller afterwards (free its buffers with
 * sw_http_response_free). Returns resp->rc.
 */
int sw_http_do(const struct sw_http_request *req, struct sw_http_response *resp);

/** Frees the buffers of a response that sw_http_do filled. */
void sw_http_response_free(struct sw_http_response *resp);

/** Translates a CURLcode into the SW_E* space. */
int sw_http_curl_error(CURLcode code);

#endif
