/*
 * s3.h - an S3 client on the hub's libuv loop, over net/http (libcurl
 * multi), signed with SigV4 (replication/sigv4.c).
 *
 * One struct sw_s3 describes one store: endpoint (HTTP or HTTPS, custom
 * endpoints welcome), region, credentials, path-style or virtual-host
 * addressing. Requests are retried with capped exponential backoff and full
 * jitter on connection errors, 500, 502, 503 (SlowDown), 504 and
 * RequestTimeout, honouring Retry-After. Every failure carries a message
 * for people naming the store, the method, s3://bucket/key and S3's error
 * code; credentials never appear in messages or logs.
 *
 * The operations of S3 that replication needs (GET with ranges, PUT, HEAD,
 * DELETE, ListObjectsV2, multipart, CopyObject and UploadPartCopy) are all
 * sw_s3_send with the right method, query and headers; helpers below build
 * the common ones.
 */
#ifndef SW_REPLICATION_S3_H
#define SW_REPLICATION_S3_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/clock.h"
#include "common/error.h"
#include "net/http.h"
#include "replication/s3xml.h"
#include "replication/sigv4.h"

/** Longest object key S3 accepts, in bytes; a longer one is never sent. */
#define SW_S3_KEY_MAX 1024
/** Longest bucket name accepted (S3's legacy limit; new buckets stop at 63). */
#define SW_S3_BUCKET_MAX 255

/** The metadata header that carries an object's SHA-256 (hex). */
#define SW_S3_META_SHA256 "x-amz-meta-sw-sha256"
/** The metadata header that names the source version a copy was made from. */
#define SW_S3_META_SOURCE_ETAG "x-amz-meta-sw-source-etag"

/** How to reach one store. Strings are copied by sw_s3_new. */
struct sw_s3_config {
    const char *name;          /* store name for messages ("onprem"); optional */
    const char *endpoint;      /* "http://127.0.0.1:7070", "https://s3.us-east-1.amazonaws.com" */
    const char *region;        /* "us-east-1" */
    const char *access_key;    /* required */
    const char *secret_key;    /* required; never logged */
    const char *session_token; /* optional */
    int virtual_host;      /* 1: https://bucket.host/key; 0: path-style https://host/bucket/key */
    const char *ca_file;   /* optional CA bundle for HTTPS */
    int insecure_tls;      /* skip TLS verification (explicit opt-in only) */
    int max_attempts;      /* per request; 0 = 8 */
    long backoff_base_ms;  /* first retry delay cap; 0 = 50 */
    long backoff_max_ms;   /* 0 = 5000 */
    long low_speed_time_s; /* abort a transfer stalled this long; 0 = 60 */
    const struct sw_clock *clock; /* for signing; NULL = system clock */
};

struct sw_s3;

/**
 * Creates a client for one store on `http` (borrowed; must outlive it),
 * which runs on `loop` (borrowed), where the retry timers run too. Returns 0 and *out (owned; free
 * with sw_s3_free once no request is in flight), or SW_EINVAL naming the bad field, or SW_ENOMEM.
 */
int sw_s3_new(uv_loop_t *loop, struct sw_http *http, const struct sw_s3_config *cfg,
              struct sw_s3 **out, struct sw_error *err);

/** Frees a client; no request may be in flight. NULL is fine. */
void sw_s3_free(struct sw_s3 *s3);

/** The store's name ("" when unnamed); borrowed. */
const char *sw_s3_name(const struct sw_s3 *s3);

/** Whether two clients reach the same endpoint with the same credentials,
 * so that a server-side copy from one to the other is possible. */
int sw_s3_same_endpoint(const struct sw_s3 *a, const struct sw_s3 *b);

/** The loop the client runs on (borrowed). */
uv_loop_t *sw_s3_loop(const struct sw_s3 *s3);

/**
 * Why `key` cannot be sent as an object key, or NULL; static text. Every
 * key is sent as a path: each byte but RFC 3986's unreserved ones and '/'
 * is percent-encoded (so '%', '?', '#', spaces, control and non-ASCII
 * bytes never reach the wire as themselves), and the same encoded path is
 * the canonical URI SigV4 signs. Empty segments ("a//b", a leading or
 * trailing '/') are S3 names and are kept: they cannot climb. What
 * encoding cannot make safe is refused: an empty key (the request would
 * name the bucket itself), one longer than SW_S3_KEY_MAX, and a "." or ".."
 * segment, which HTTP servers, proxies and stores that keep objects as
 * files may resolve (RFC 3986 section 5.2.4); "%2E" would not help, since
 * RFC 3986 makes it the same as ".".
 */
const char *sw_s3_key_problem(const char *key);

/**
 * Why `bucket` cannot be named in a request, or NULL; static text. A bucket
 * is a host label (virtual-host addressing) or a path segment: 1 to
 * SW_S3_BUCKET_MAX of [A-Za-z0-9._-], and not "." or "..". Looser than the
 * hub's check of names a Job gives (sw_s3_bucket_problem, annotations.c):
 * this one only keeps a request's host and path what they are meant to be.
 */
const char *sw_s3_path_bucket_problem(const char *bucket);

/**
 * Appends to `out` the path of a request, which is also the canonical URI
 * SigV4 signs: "/BUCKET/KEY" path-style, "/KEY" with virtual-host
 * addressing (the bucket is then in the host), "/BUCKET" or "/" when `key`
 * is NULL (a bucket-level request). Both are checked first
 * (sw_s3_path_bucket_problem, sw_s3_key_problem). Pure. Returns 0, SW_EINVAL with
 * err naming the bucket or key and why (nothing appended), or the buffer's
 * SW_ETOOBIG / SW_ENOMEM.
 */
int sw_s3_path(struct sw_buf *out, int virtual_host, const char *bucket, const char *key,
               struct sw_error *err);

/**
 * A request. All of it is copied except `body`, which must stay valid until
 * the callback has run. `query` names and values are unencoded; `headers`
 * are sent and signed.
 */
struct sw_s3_request {
    const char *method; /* "GET", "PUT", "HEAD", "DELETE", "POST" */
    const char *bucket; /* required */
    const char *key;    /* NULL for bucket-level requests */
    const struct sw_sigv4_pair *query;
    size_t nquery;
    const struct sw_sigv4_pair *headers;
    size_t nheaders;
    const void *body; /* request body, or NULL */
    size_t body_len;
    const char *body_sha256; /* hex SHA-256 of body if known; NULL = computed */
    size_t max_body;         /* cap on the buffered response; 0 = 16 MiB */
    int no_retry;            /* one attempt only */
};

/** The outcome of a request; borrowed, valid during the callback only. */
struct sw_s3_response {
    int rc;                         /* 0 for a 2xx answer, else SW_E* */
    long status;                    /* HTTP status, 0 when none arrived */
    int attempts;                   /* how many times it was sent */
    struct sw_s3_error_reply s3err; /* S3's error code and message, when any */
    struct sw_error err;            /* the message for people, when rc != 0 */
    struct sw_http_response *http;  /* body and headers of the last attempt */
};

/** Called once per request, from the loop. */
typedef void (*sw_s3_cb)(struct sw_s3_response *resp, void *ctx);

/**
 * Starts a request. Returns 0 (the callback will run exactly once, from the
 * loop) or SW_EINVAL / SW_ENOMEM with err set (the callback will not run).
 */
int sw_s3_send(struct sw_s3 *s3, const struct sw_s3_request *req, sw_s3_cb cb, void *ctx,
               struct sw_error *err);

/** Requests in flight (including those waiting to be retried). */
size_t sw_s3_pending(const struct sw_s3 *s3);

/**
 * A finished request for blocking callers: the body and headers are owned
 * (free with sw_s3_result_free).
 */
struct sw_s3_result {
    int rc;
    long status;
    int attempts;
    struct sw_s3_error_reply s3err;
    struct sw_error err;
    struct sw_buf body;
    struct sw_buf headers;
};

/**
 * Runs one request to completion by running the client's loop; for the
 * CLI and tests only (never from a loop callback). Returns out->rc.
 */
int sw_s3_do(struct sw_s3 *s3, const struct sw_s3_request *req, struct sw_s3_result *out);

/** Frees the buffers of a result. */
void sw_s3_result_free(struct sw_s3_result *r);

/** Looks up a header of a blocking result (case-insensitive); 0 or SW_ENOENT. */
int sw_s3_result_header(const struct sw_s3_result *r, const char *name, char *out, size_t outlen);

/* ---- blocking helpers for tools and tests ------------------------------- */

/** PUT a whole object from memory, with optional metadata headers. */
int sw_s3_put_sync(struct sw_s3 *s3, const char *bucket, const char *key, const void *data,
                   size_t len, const struct sw_sigv4_pair *meta, size_t nmeta,
                   struct sw_error *err);

/** HEAD: size, ETag and (if present) the sw-sha256 metadata. SW_ENOENT if missing. */
struct sw_s3_head {
    int64_t size;
    int64_t last_modified_ms;
    char etag[SW_S3_ETAG_MAX];
    char sha256[65];                  /* "" when the object has no sw-sha256 metadata */
    char source_etag[SW_S3_ETAG_MAX]; /* sw-source-etag metadata, "" if none */
};

/** Copies an ETag without its quotes (bounded). */
void sw_s3_etag_bare(const char *etag, char *out, size_t outlen);

/**
 * Whether a bare ETag has the shape of an MD5 (32 hex digits): what S3
 * gives an object written by one PUT without KMS encryption. A multipart
 * ETag ("HEX-N") or any other form is not. The shape does not prove that
 * it is the MD5 of the bytes (KMS ETags have it too), so it may only be
 * used where a false "yes" costs a slower path, never a wrong answer.
 */
int sw_s3_etag_is_md5(const char *bare);
int sw_s3_head_sync(struct sw_s3 *s3, const char *bucket, const char *key, struct sw_s3_head *out,
                    struct sw_error *err);

/** Fills `out` from a response's headers (HEAD or GET). */
void sw_s3_head_from_headers(const struct sw_http_response *resp, struct sw_s3_head *out);

/** GET a whole object into *data (new; sw_free), at most `max` bytes. */
int sw_s3_get_sync(struct sw_s3 *s3, const char *bucket, const char *key, size_t max, char **data,
                   size_t *len, struct sw_error *err);

/** DELETE one object (a missing object is success, as in S3). */
int sw_s3_delete_sync(struct sw_s3 *s3, const char *bucket, const char *key, struct sw_error *err);

/** One page of ListObjectsV2 (token NULL for the first). */
int sw_s3_list_sync(struct sw_s3 *s3, const char *bucket, const char *prefix, const char *token,
                    struct sw_s3_list *out, struct sw_error *err);

/** Lists in-progress multipart uploads under `prefix` (first page, up to 1,000). */
int sw_s3_list_uploads_sync(struct sw_s3 *s3, const char *bucket, const char *prefix,
                            struct sw_s3_uploads *out, struct sw_error *err);

/** Creates a bucket (an existing bucket owned by us is success). */
int sw_s3_create_bucket_sync(struct sw_s3 *s3, const char *bucket, struct sw_error *err);

#endif
