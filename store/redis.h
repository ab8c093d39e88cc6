/*
 * redis.h - Redis connections for the hub (async, on the libuv loop) and
 * for command-line tools (blocking).
 *
 * A connection is described by a URL:
 *
 *   redis://[[user]:password@]host[:port][/db]     (port 6379, db 0 by default)
 *   unix://[[user]:password@]/path/to/socket[?db=N]
 *
 * The password may be percent-encoded. AUTH (and SELECT when db != 0) are
 * sent first on every connection, before any command of the caller; hiredis
 * answers in order, so a command never runs unauthenticated. The password
 * is never logged and never appears in an error message.
 *
 * The async client reconnects by itself after a lost connection, with a
 * capped exponential backoff (100 ms doubling to 10 s), sending AUTH and
 * SELECT again. Commands in flight when the connection is lost get a NULL
 * reply; commands issued while it is disconnected are refused at once
 * (SW_EUNAVAIL), or, while a connect attempt is under way, queue behind it
 * and get a NULL reply if it fails; callers retry at their level.
 */
#ifndef SW_STORE_REDIS_H
#define SW_STORE_REDIS_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stddef.h>
#include <uv.h>

#include "common/error.h"

/** A parsed Redis URL. The strings are owned; free with sw_redis_url_free. */
struct sw_redis_url {
    char *host;     /* host name or address; NULL for a unix socket */
    int port;       /* TCP port */
    char *path;     /* unix socket path, or NULL */
    char *user;     /* ACL user (Redis 6+), or NULL */
    char *password; /* or NULL; never log it */
    int db;         /* database number */
};

/**
 * Parses `url`. Errors name the part that is wrong but never echo the
 * password. On success the caller frees *out's strings with
 * sw_redis_url_free.
 */
int sw_redis_url_parse(const char *url, struct sw_redis_url *out, struct sw_error *err);

/** Frees the strings of a parsed URL (the struct itself is the caller's). */
void sw_redis_url_free(struct sw_redis_url *u);

/**
 * Writes the URL with its password replaced by "***" into out (bounded),
 * for messages and logs.
 */
void sw_redis_url_redacted(const struct sw_redis_url *u, char *out, size_t outlen);

/**
 * Writes into out (outlen bytes with the NUL) the URL `url` with `password`
 * inserted as its password, percent-encoded: "redis://h:6379/0" and "pw"
 * give "redis://:pw@h:6379/0", "redis://hub:@h" gives "redis://hub:pw@h"
 * (a bare "redis://hub@h" means password "hub", as sw_redis_url_parse reads it).
 * The rest of the URL is copied as written. With a NULL password the URL is
 * copied unchanged. `url` must parse (sw_redis_url_parse). Returns 0, or
 * SW_EPARSE for a bad URL, SW_EINVAL when password is not NULL and the URL
 * already holds a non-empty password (the message says so, never quoting
 * either), SW_ETOOBIG when out is too small. Lets the password come from a
 * file or the environment rather than a command line where `ps` shows it.
 */
int sw_redis_url_with_password(const char *url, const char *password, char *out, size_t outlen,
                               struct sw_error *err);

/* ---- async, on the loop ------------------------------------------------- */

struct sw_redis;

/**
 * A command's reply: borrowed, valid only during the callback (hiredis frees
 * it afterwards). `reply` is NULL when the connection was lost or closed
 * before an answer, and `err` then says why. An error reply from Redis is a
 * reply of type REDIS_REPLY_ERROR, not a NULL.
 */
typedef void (*sw_redis_reply_cb)(struct sw_redis *r, redisReply *reply, const char *err,
                                  void *ctx);

/** Connection state changes: up != 0 once AUTH/SELECT succeeded, 0 when lost. */
typedef void (*sw_redis_state_cb)(struct sw_redis *r, int up, const char *why, void *ctx);

/**
 * Starts connecting to `url` on `loop` (borrowed; must outlive the client).
 * Returns 0 and *out (owned by the caller; free with sw_redis_free) at once;
 * the connection completes on the loop and `on_state` (optional) reports it.
 * Commands may be issued right away: they queue behind AUTH.
 */
int sw_redis_connect(uv_loop_t *loop, const char *url, sw_redis_state_cb on_state, void *ctx,
                     struct sw_redis **out, struct sw_error *err);

/** Whether the connection is up (authenticated). */
int sw_redis_is_up(const struct sw_redis *r);

/**
 * Sends a command with hiredis's printf-like format ("SET %s %b", ...).
 * `cb` may be NULL to ignore the reply. Returns 0 when queued, SW_EUNAVAIL
 * when disconnected (the callback is then not called).
 */
int sw_redis_command(struct sw_redis *r, sw_redis_reply_cb cb, void *ctx, const char *fmt, ...);

/** As sw_redis_command with an argument vector (binary-safe). */
int sw_redis_command_argv(struct sw_redis *r, sw_redis_reply_cb cb, void *ctx, int argc,
                          const char **argv, const size_t *argvlen);

/**
 * Closes the connection: pending callbacks run with a NULL reply, then the
 * client is freed once its libuv handles are closed (run the loop).
 */
void sw_redis_free(struct sw_redis *r);

/* ---- blocking, for command-line tools ----------------------------------- */

/**
 * Connects, authenticates and selects the database, waiting at most
 * `timeout_ms`. Returns 0 and *out, a hiredis context owned by the caller
 * (free with redisFree), or SW_ENET / SW_EAUTH / SW_ETIMEDOUT with a message
 * naming the redacted URL.
 */
int sw_redis_sync_connect(const char *url, long timeout_ms, redisContext **out,
                          struct sw_error *err);

/**
 * Runs one command on a blocking context. Returns 0 and *reply (owned by
 * the caller; freeReplyObject), or SW_ENET when the connection failed, or
 * SW_EIO when Redis answered with an error (its text in err, *reply freed).
 */
int sw_redis_sync_command(redisContext *c, redisReply **reply, struct sw_error *err,
                          const char *fmt, ...);

/** As sw_redis_sync_command with an argument vector (binary-safe). */
int sw_redis_sync_command_argv(redisContext *c, redisReply **reply, struct sw_error *err, int argc,
                               const char **argv, const size_t *argvlen);

#endif
