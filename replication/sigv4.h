/*
 * sigv4.h - AWS Signature Version 4 on OpenSSL, as a pure function.
 *
 * The signer takes everything it needs as input (time included) and
 * returns the Authorization header, so it is proven against AWS's published
 * test-suite vectors without a server or a clock. The S3 client calls it
 * for every request, with the hex SHA-256 of the payload (or the literal
 * UNSIGNED-PAYLOAD) that it also sends as x-amz-content-sha256.
 */
#ifndef SW_REPLICATION_SIGV4_H
#define SW_REPLICATION_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

/** The hex SHA-256 of the empty string, the payload hash of bodiless requests. */
#define SW_SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/** A header or query parameter, borrowed. Query pairs are *not* encoded. */
struct sw_sigv4_pair {
    const char *name;
    const char *value;
};

/** Everything a signature covers. All strings are borrowed. */
struct sw_sigv4_input {
    const char *method; /* "GET", ... */
    const char *host;   /* the Host header: "host" or "host:port" */
    const char *path;   /* canonical URI, already percent-encoded ("/bucket/a%20b") */
    const struct sw_sigv4_pair *query; /* raw (unencoded) names and values */
    size_t nquery;
    const struct sw_sigv4_pair *headers; /* extra headers to sign (not host, x-amz-date) */
    size_t nheaders;
    const char *payload_hash; /* hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
    const char *access_key;
    const char *secret_key;
    const char *session_token; /* optional; signed as x-amz-security-token */
    const char *region;
    const char *service; /* "s3" */
    int64_t time_s;      /* seconds since the epoch, UTC */
};

/** What the signer returns; fixed-size, owned by the caller. */
struct sw_sigv4_output {
    char amz_date[17];        /* x-amz-date value, "20150830T123600Z" */
    char signature[65];       /* hex */
    char canonical_hash[65];  /* hex SHA-256 of the canonical request */
    char authorization[2048]; /* the Authorization header value */
};

/**
 * Signs `in`. When `canonical` is not NULL the canonical request is appended
 * to it (for tests and debugging; it holds no secret). Returns 0, SW_EINVAL
 * (a missing field, named in err), SW_ETOOBIG (too many or too long headers)
 * or SW_ENOMEM / SW_ECRYPTO.
 */
int sw_sigv4_sign(const struct sw_sigv4_input *in, struct sw_sigv4_output *out,
                  struct sw_buf *canonical, struct sw_error *err);

/**
 * Appends `s` percent-encoded as SigV4 wants (RFC 3986 unreserved kept,
 * everything else %XX upper-case); '/' is kept when keep_slash is set, as
 * for S3 object keys in a path.
 */
int sw_sigv4_uri_encode(struct sw_buf *out, const char *s, size_t len, int keep_slash);

/** Writes the lower-case hex SHA-256 of `len` bytes into hex (65 bytes). */
void sw_sha256_hex(const void *data, size_t len, char hex[65]);

/** Writes lower-case hex of `n` bytes into out (2n + 1 bytes). */
void sw_hex(const unsigned char *in, size_t n, char *out);

#endif
