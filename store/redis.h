/*
 * redis.h - Redis connections for the hub (async, on the libuv loop) and
 * for command-line tools (blocking).
 *
 * A connection is described by a URL:
 *
 *   redis://[[user]:password@]host[:port][/db]     (port 6379, db 0 by default)
 *   rediss://[[user]:password@]host[:port][/db][?TLS]
 *   unix://[[user]:password@]/path/to/socket[?db=N]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/MASTER[/db]
 *                   [?sentinelPassword=PW]         (Sentinel port 26379 by default)
 *   rediss+sentinel://...as above...[?TLS][&sentinelPassword=PW]
 *
 * rediss forms speak TLS to every node and Sentinel (redis_tls.h), TLS
 * being any of tls_ca_file=/ca.pem (the CAs the server's certificate must
 * chain to; the system's by default), tls_cert_file=/c.pem and
 * tls_key_file=/k.pem (a client certificate and its key, together),
 * joined with '&', absolute paths, percent-encoded. The server's
 * certificate must name the host as written in the URL (for a Sentinel
 * URL, as the Sentinels announce the master): a name, checked with SNI
 * sent, or an IP address. With user:password, AUTH user password is sent
 * (Redis 6+ ACL users); with a password alone, AUTH password.
 *
 * The Sentinel form names the Sentinels and the name they monitor the master
 * by. The client asks every Sentinel (SENTINEL get-master-addr-by-name),
 * follows only an address a majority of the configured Sentinels name
 * (sw_redis_sentinel_agree; a disagreement is logged, naming which
 * Sentinel named what, and no majority is an error and a retry), connects
 * to it, authenticates with the data nodes' password (the credentials
 * part), and checks with ROLE that the node is the master before any
 * command of the caller runs. The Sentinels' own password, when
 * they have one (their requirepass), is the sentinelPassword parameter; the
 * two passwords are kept apart because Sentinels and data nodes have their
 * own. A lost connection, or a READONLY, LOADING or MASTERDOWN error reply
 * (the node is no longer, or not yet, a usable master), makes the client
 * ask the Sentinels again and reconnect: a failover is followed without a
 * restart. The async client also asks the Sentinels every second while
 * connected, and moves when they name another master: after a failover
 * the old master goes on answering writes until the Sentinels demote it,
 * seconds later, and whatever it took then is lost.
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

#define SW_REDIS_SENTINEL_SCHEME         "redis+sentinel://"
#define SW_REDIS_SENTINEL_TLS_SCHEME     "rediss+sentinel://"
#define SW_REDIS_SENTINEL_PORT           26379
#define SW_REDIS_SENTINEL_PASSWORD_PARAM "sentinelPassword"
#define SW_REDIS_MAX_SENTINELS           16

/** A parsed Redis URL. The strings are owned; free with sw_redis_url_free. */
struct sw_redis_url {
    char *host;     /* host name or address; NULL for a unix socket or a Sentinel URL */
    int port;       /* TCP port (0 for a Sentinel URL) */
    char *path;     /* unix socket path, or NULL */
    char *user;     /* ACL user (Redis 6+), or NULL */
    char *password; /* or NULL; never log it */
    int db;         /* database number */
    /* The Sentinel form: the master is found through these. */
    int sentinel;                                /* 1 for redis+sentinel:// */
    size_t nsentinels;                           /* 1..SW_REDIS_MAX_SENTINELS */
    char *sentinel_host[SW_REDIS_MAX_SENTINELS]; /* in the order given */
    int sentinel_port[SW_REDIS_MAX_SENTINELS];   /* 26379 unless given */
    char *master;                                /* the name the Sentinels know it by */
    char *sentinel_password;                     /* or NULL; never log it */
    /* TLS (rediss:// and rediss+sentinel://): to every node and Sentinel. */
    int tls;
    char *tls_ca_file;   /* or NULL: the system's CAs */
    char *tls_cert_file; /* client certificate, or NULL; given with tls_key_file */
    char *tls_key_file;
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

/**
 * As sw_redis_url_with_password for the Sentinels' password: writes `url`
 * with "?sentinelPassword=" and the percent-encoded password appended.
 * With a NULL password the URL is copied unchanged. SW_EINVAL when a
 * password is given and the URL is not a Sentinel one, or already holds a
 * Sentinel password; SW_ETOOBIG when out is too small (out is then wiped).
 */
int sw_redis_url_with_sentinel_password(const char *url, const char *password, char *out,
                                        size_t outlen, struct sw_error *err);

/** What one Sentinel said when asked where the master is. */
enum sw_redis_sentinel_said {
    SW_SENTINEL_SILENT,  /* no answer: cannot connect, refused our password, lost */
    SW_SENTINEL_UNKNOWN, /* answered, but named no address (no master of that name) */
    SW_SENTINEL_NAMED,   /* named host:port */
};

struct sw_redis_sentinel_answer {
    char sentinel[300]; /* the Sentinel, "host:port" */
    enum sw_redis_sentinel_said said;
    char host[256]; /* SW_SENTINEL_NAMED: the address it named */
    int port;
    char why[220]; /* otherwise: what went wrong (never a password) */
};

/**
 * The quorum rule (pure): the master is the address named by a strict
 * majority of the n Sentinels CONFIGURED (n / 2 + 1 of them: 2 of 3, 3 of
 * 4 or 5), whatever the others said or whether they answered at all
 * (`master` is the name they monitor it by, for messages). A
 * Sentinel that does not answer counts against agreement, never for an
 * address: a lone voice (one Sentinel reachable, or one naming another
 * node) is never followed, and two groups cannot both reach the quorum.
 *
 * Returns 0 with *agreed the index of an answer naming the master, or
 * SW_ENET when no Sentinel answered, SW_ENOENT when some answered but
 * none named an address, SW_EUNAVAIL when addresses were named but none by
 * a majority; err's message then names the master, every Sentinel and what
 * it said. `dissent` (dlen bytes; NULL for none) receives "" when the
 * Sentinels that answered all named the same address (one that did not
 * answer is no dissent), else each Sentinel and what it said
 * ("127.0.0.1:26379 names 10.0.0.1:6379; 127.0.0.1:26380 names
 * 10.0.0.2:6379; 127.0.0.1:26381: connection refused"), for the log.
 */
int sw_redis_sentinel_agree(const char *master, const struct sw_redis_sentinel_answer *a, size_t n,
                            size_t *agreed, char *dissent, size_t dlen, struct sw_error *err);

/**
 * Asks every Sentinel of `u` (a Sentinel URL) where the master is, each
 * with `timeout_ms` to answer, and applies sw_redis_sentinel_agree. Returns
 * 0 with the agreed master's address in host (hostlen bytes) and *port,
 * or what sw_redis_sentinel_agree returns (the message names each Sentinel
 * and what it said, never a password). `dissent` as there (may be NULL).
 * Blocking: for command-line tools and threads other than the loop's.
 */
int sw_redis_sentinel_discover(const struct sw_redis_url *u, long timeout_ms, char *host,
                               size_t hostlen, int *port, char *dissent, size_t dlen,
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

/** Whether the connection is up (authenticated; with Sentinel, to a node that says it is master).
 */
int sw_redis_is_up(const struct sw_redis *r);

/** Whether the client finds its master through Sentinel. */
int sw_redis_is_sentinel(const struct sw_redis *r);

/**
 * The address ("host:port") of the node the client is, or was last,
 * connected to (borrowed; "" before the first connection). With Sentinel
 * it changes when the client follows a failover.
 */
const char *sw_redis_node(const struct sw_redis *r);

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
 * `timeout_ms` for each network step. Returns 0 and *out, a hiredis context
 * owned by the caller (free with sw_redis_sync_free), or SW_ENET / SW_EAUTH
 * / SW_ETIMEDOUT with a message naming the redacted URL.
 *
 * With a Sentinel URL the master is found first (and checked with ROLE),
 * trying again with a bounded backoff for up to SW_REDIS_SENTINEL_WAIT_MS
 * while the Sentinels name a node that is not (yet) a master. The context
 * remembers the Sentinels, on the thread that made it: when a command of
 * sw_redis_sync_command on that thread is answered READONLY, LOADING or
 * MASTERDOWN, the client asks the Sentinels again, reconnects the same
 * context to the master and runs the command again (it did not run), for
 * up to SW_REDIS_SENTINEL_WAIT_MS; when the connection is lost, it
 * reconnects the context so that the next command works, and returns the
 * error (the command may or may not have run: never run twice).
 */
#define SW_REDIS_SENTINEL_WAIT_MS 30000
int sw_redis_sync_connect(const char *url, long timeout_ms, redisContext **out,
                          struct sw_error *err);

/**
 * Opens a blocking connection to host:port the way `u` says (TCP, or TLS
 * for a rediss URL, verified as redis_tls.h says), waiting at most
 * `timeout_ms` for each step, and sends nothing on it (no AUTH): for tools
 * that talk to one Sentinel or data node of their own choice. Returns 0
 * and *out (free with redisFree), or SW_ENET / SW_ETLS / SW_ETIMEDOUT /
 * SW_EIO with a message naming host:port and the reason.
 */
int sw_redis_sync_open(const struct sw_redis_url *u, const char *host, int port, long timeout_ms,
                       redisContext **out, struct sw_error *err);

/**
 * Frees a context of sw_redis_sync_connect (NULL is ignored) and what it
 * remembers of its Sentinels. redisFree works too, but leaves that memory
 * until the thread connects again.
 */
void sw_redis_sync_free(redisContext *c);

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
