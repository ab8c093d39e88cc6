/*
 * copy.h - copying one object between stores, verified.
 *
 * The bytes stream from the source into the target through memory, one
 * part at a time (a whole-object PUT below the multipart threshold,
 * otherwise a multipart upload with concurrent parts), or are copied by
 * the server (CopyObject, UploadPartCopy above 5 GiB) when both ends are the
 * same endpoint. Every part is sent with its SHA-256 as the signed payload
 * hash, so the server refuses bytes that changed on the way; the SHA-256 of
 * the whole object is computed on the way, compared with the source's own
 * sw-sha256 metadata when it has some, and kept in the target's
 * x-amz-meta-sw-sha256. At the end a whole-object PUT is verified by the
 * ETag it returns, when that equals the source's MD5 ETag or the MD5 of the
 * bytes sent; every other copy by a HEAD of the target (size, sw-sha256).
 * A multipart upload that fails is aborted; its id is reported through
 * on_upload before any part is sent, so a journal can abort it after a
 * crash, and when on_upload cannot record it the copy fails and the upload
 * is aborted at once, no part sent.
 */
#ifndef SW_REPLICATION_COPY_H
#define SW_REPLICATION_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "replication/s3.h"

/** Default part size: 16 MiB. */
#define SW_COPY_DEFAULT_PART ((size_t)16 << 20)
/** Largest object one CopyObject may copy (5 GiB). */
#define SW_COPY_MAX_SINGLE_COPY ((int64_t)5 << 30)

/** A shared bandwidth limit (token bucket on the loop clock). */
struct sw_throttle {
    double bytes_per_s; /* 0 = unlimited */
    int64_t next_free_ms;
};

/**
 * Reserves `n` bytes of bandwidth and returns how many milliseconds the
 * caller must wait before sending them (0 when unlimited or free now).
 */
int64_t sw_throttle_reserve(struct sw_throttle *t, int64_t now_ms, size_t n);

/** One transfer's place in a throttle (zeroed = nothing reserved yet). */
struct sw_throttle_slot {
    int reserved;
    int64_t start_ms; /* the loop time it may start at */
};

/**
 * How many milliseconds the transfer of `n` bytes in slot `s` must still
 * wait at `now_ms`. The first call reserves its bandwidth; every later call
 * returns the time left until the reserved start (0 once it has come), so
 * a caller asked again early, by another event than its timer, still waits
 * for the rest. Borrows both; pure (time is an input).
 */
int64_t sw_throttle_wait(struct sw_throttle *t, struct sw_throttle_slot *s, int64_t now_ms,
                         size_t n);

/** What to copy, and how. Strings are copied; stores are borrowed. */
struct sw_copy_spec {
    struct sw_s3 *src;
    const char *src_bucket;
    const char *src_key;
    struct sw_s3 *dst;
    const char *dst_bucket;
    const char *dst_key;
    int64_t size;                 /* from the listing; the GET is authoritative */
    const char *known_sha256;     /* the source's SHA-256 if known (cache), or NULL */
    size_t part_size;             /* 0 = SW_COPY_DEFAULT_PART (min 5 MiB) */
    int concurrency;              /* parts in flight; 0 = 4 */
    int allow_server_copy;        /* use CopyObject when src and dst share an endpoint */
    struct sw_throttle *throttle; /* optional, borrowed */
    /**
     * A multipart upload was created: record it before any part is sent.
     * Returns 0 to go on; anything else (the record could not be made)
     * fails the copy with that code, and the upload is aborted unused.
     */
    int (*on_upload)(const char *upload_id, void *ctx);
    /** Bytes written to the target so far grew by `n` (progress). */
    void (*on_bytes)(int64_t n, void *ctx);
    void *ctx;
};

/** The outcome; borrowed during the callback. */
struct sw_copy_result {
    int rc;
    struct sw_error err;
    char sha256[65]; /* of the bytes copied */
    int64_t size;
    char upload_id[256]; /* the multipart upload used ("" if none); aborted on failure */
    int aborted;         /* the upload was aborted */
    int server_side;     /* copied by the server */
};

typedef void (*sw_copy_cb)(const struct sw_copy_result *res, void *ctx);

/**
 * Starts a copy on the stores' loop. Returns 0 (the callback runs exactly
 * once, from the loop) or an error (no callback).
 */
int sw_copy_start(const struct sw_copy_spec *spec, sw_copy_cb done, void *ctx,
                  struct sw_error *err);

/**
 * Aborts a multipart upload by id (for journals recovering after a crash);
 * blocking; a missing upload (already gone) is success.
 */
int sw_copy_abort_sync(struct sw_s3 *dst, const char *bucket, const char *key,
                       const char *upload_id, struct sw_error *err);

#endif
