/*
 * error.h - spillway's single error space.
 *
 * Every function that can fail returns an int: 0 on success, a negative
 * SW_E* code on failure. The codes come from one X-macro table so that the
 * enum, the names and the messages can never drift apart (libuv's
 * UV_ERRNO_MAP habit). Errors from libcurl, hiredis, OpenSSL and the OS are
 * translated into this space at the module boundary.
 *
 * For errors a person reads, struct sw_error carries a code plus a message
 * that names the input, the field and what was expected.
 */
#ifndef SW_COMMON_ERROR_H
#define SW_COMMON_ERROR_H

#include <stddef.h>

/* X(name, value, message) */
#define SW_ERRNO_MAP(X)                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(ENOENT, -3, "no such object")                                                                \
    X(EEXIST, -4, "object already exists")                                                         \
    X(EPARSE, -5, "malformed input")                                                               \
    X(ETOOBIG, -6, "input exceeds its size limit")                                                 \
    X(EIO, -7, "input/output error")                                                               \
    X(ENET, -8, "network error")                                                                   \
    X(ETIMEDOUT, -9, "timed out")                                                                  \
    X(ETLS, -10, "TLS error")                                                                      \
    X(EAUTH, -11, "authentication failed")                                                         \
    X(EFORBIDDEN, -12, "permission denied")                                                        \
    X(ECONFLICT, -13, "conflict")                                                                  \
    X(EGONE, -14, "resource version too old")                                                      \
    X(EUNAVAIL, -15, "service unavailable")                                                        \
    X(EHTTP, -16, "unexpected HTTP status")                                                        \
    X(ECRYPTO, -17, "cryptographic failure")                                                       \
    X(ERANGE, -18, "value out of range")                                                           \
    X(EUNSUPPORTED, -19, "not supported")                                                          \
    X(ESTATE, -20, "operation not valid in this state")                                            \
    X(ECANCELED, -21, "operation canceled")                                                        \
    X(EINFEASIBLE, -22, "no feasible option")

enum sw_errno {
    SW_OK = 0,
#define SW__ERR_ENUM(name, value, msg) SW_##name = (value),
    SW_ERRNO_MAP(SW__ERR_ENUM)
#undef SW__ERR_ENUM
};

/** Returns a static, human-readable description of `code` (never NULL). */
const char *sw_strerror(int code);

/** Returns the symbolic name of `code`, e.g. "SW_EPARSE" (never NULL). */
const char *sw_err_name(int code);

#define SW_ERROR_MSG_MAX 512

/**
 * A code plus a message for people. Callers own the struct (usually on the
 * stack); functions that take a `struct sw_error *` accept NULL when the
 * caller does not want the message.
 */
struct sw_error {
    int code;
    char msg[SW_ERROR_MSG_MAX];
};

/**
 * Records `code` and a printf-style message in `err` (which may be NULL) and
 * returns `code`, so that a failing path reads `return sw_error_set(...)`.
 * The message is truncated to SW_ERROR_MSG_MAX - 1 bytes.
 */
int sw_error_set(struct sw_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Prepends "prefix: " to the message already in `err`, so that an outer
 * layer can name the file or object the inner layer did not know about.
 * Returns err->code (or SW_EINVAL when err is NULL).
 */
int sw_error_wrap(struct sw_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Clears `err` to SW_OK with an empty message. */
void sw_error_clear(struct sw_error *err);

#endif
