/*
 * redis.c - hiredis on the libuv loop, plus a blocking helper.
 *
 * The async client owns one redisAsyncContext at a time. hiredis frees a
 * context itself after its disconnect (or failed connect) callback, so the
 * client only forgets its pointer there and, unless it is being freed,
 * arms a timer to connect again.
 */
#include "store/redis.h"

#include <ctype.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

/* ---- URLs --------------------------------------------------------------- */

void sw_redis_url_free(struct sw_redis_url *u)
{
    if (u == NULL)
        return;
    sw_free(u->host);
    sw_free(u->path);
    sw_free(u->user);
    if (u->password != NULL) {
        memset(u->password, 0, strlen(u->password));
        sw_free(u->password);
    }
    memset(u, 0, sizeof(*u));
}

/* Percent-decodes [s, s+n) into a new string; NULL on a bad escape or OOM. */
static char *pct_decode(const char *s, size_t n, int *bad)
{
    char *o = sw_malloc(n + 1);
    if (o == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
                !isxdigit((unsigned char)s[i + 2])) {
                *bad = 1;
                sw_free(o);
                return NULL;
            }
            char hex[3] = {s[i + 1], s[i + 2], 0};
            o[k++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            o[k++] = s[i];
        }
    }
    o[k] = '\0';
    return o;
}

static int parse_int(const char *s, size_t n, long lo, long hi, int *out)
{
    if (n == 0 || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int sw_redis_url_parse(const char *url, struct sw_redis_url *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->port = 6379;
    int is_unix = 0;
    const char *p;
    if (strncmp(url, "redis://", 8) == 0) {
        p = url + 8;
    } else if (strncmp(url, "unix://", 7) == 0) {
        p = url + 7;
        is_unix = 1;
    } else {
        return sw_error_set(err, SW_EPARSE,
                            "redis URL: expected it to start with redis:// or unix://");
    }
    /* Credentials end at the last '@' before the path. */
    const char *at = NULL;
    for (const char *q = p; *q != '\0' && (is_unix || *q != '/'); q++)
        if (*q == '@')
            at = q;
    int bad = 0;
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon == NULL) {
            /* redis://password@host is a common mistake; Redis has no
             * password-less users in URLs, so read it as the password. */
            out->password = pct_decode(p, (size_t)(at - p), &bad);
        } else {
            if (colon > p)
                out->user = pct_decode(p, (size_t)(colon - p), &bad);
            if (!bad)
                out->password = pct_decode(colon + 1, (size_t)(at - colon - 1), &bad);
        }
        if (bad) {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_EPARSE, "redis URL: bad %%-escape in the credentials");
        }
        if (out->password == NULL && (colon == NULL || at > colon + 1)) {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_ENOMEM, "redis URL: out of memory");
        }
        p = at + 1;
    }
    if (is_unix) {
        const char *q = strchr(p, '?');
        size_t plen = q ? (size_t)(q - p) : strlen(p);
        if (plen == 0 || p[0] != '/') {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_EPARSE, "redis URL: expected an absolute socket path");
        }
        out->path = sw_strndup(p, plen);
        if (q != NULL) {
            if (strncmp(q, "?db=", 4) != 0 ||
                parse_int(q + 4, strlen(q + 4), 0, 1 << 20, &out->db) != 0) {
                sw_redis_url_free(out);
                return sw_error_set(err, SW_EPARSE,
                                    "redis URL: expected \"?db=N\" after the socket path");
            }
        }
        if (out->path == NULL) {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_ENOMEM, "redis URL: out of memory");
        }
        return 0;
    }
    const char *slash = strchr(p, '/');
    const char *hend = slash ? slash : p + strlen(p);
    const char *hstart = p;
    const char *port = NULL;
    if (*p == '[') { /* [v6]:port */
        const char *rb = memchr(p, ']', (size_t)(hend - p));
        if (rb == NULL) {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_EPARSE, "redis URL: unterminated '[' in the host");
        }
        hstart = p + 1;
        if (rb + 1 < hend) {
            if (rb[1] != ':') {
                sw_redis_url_free(out);
                return sw_error_set(err, SW_EPARSE, "redis URL: expected ':' after ']'");
            }
            port = rb + 2;
        }
        out->host = sw_strndup(hstart, (size_t)(rb - hstart));
    } else {
        const char *colon = memchr(p, ':', (size_t)(hend - p));
        if (colon != NULL)
            port = colon + 1;
        out->host = sw_strndup(p, (size_t)((colon ? colon : hend) - p));
    }
    if (out->host == NULL) {
        sw_redis_url_free(out);
        return sw_error_set(err, SW_ENOMEM, "redis URL: out of memory");
    }
    if (out->host[0] == '\0') {
        sw_redis_url_free(out);
        return sw_error_set(err, SW_EPARSE, "redis URL: the host is empty");
    }
    if (port != NULL && parse_int(port, (size_t)(hend - port), 1, 65535, &out->port) != 0) {
        sw_redis_url_free(out);
        return sw_error_set(err, SW_EPARSE, "redis URL: expected a port number 1-65535");
    }
    if (slash != NULL && slash[1] != '\0' &&
        parse_int(slash + 1, strlen(slash + 1), 0, 1 << 20, &out->db) != 0) {
        sw_redis_url_free(out);
        return sw_error_set(err, SW_EPARSE, "redis URL: expected a database number after the '/'");
    }
    return 0;
}

void sw_redis_url_redacted(const struct sw_redis_url *u, char *out, size_t outlen)
{
    const char *cred = u->password ? ":***@" : "";
    if (u->path != NULL)
        snprintf(out, outlen, "unix://%s%s%s?db=%d", u->user ? u->user : "", cred, u->path, u->db);
    else
        snprintf(out, outlen, "redis://%s%s%s:%d/%d", u->user ? u->user : "", cred, u->host,
                 u->port, u->db);
}

int sw_redis_url_with_password(const char *url, const char *password, char *out, size_t outlen,
                               struct sw_error *err)
{
    struct sw_redis_url u;
    int rc = sw_redis_url_parse(url, &u, err);
    if (rc != 0)
        return rc;
    int has_password = u.password != NULL && u.password[0] != '\0';
    sw_redis_url_free(&u);
    if (outlen > 0)
        out[0] = '\0';
    if (password == NULL) {
        if (strlen(url) >= outlen)
            return sw_error_set(err, SW_ETOOBIG, "redis URL: longer than %zu bytes", outlen - 1);
        memcpy(out, url, strlen(url) + 1);
        return 0;
    }
    if (has_password)
        return sw_error_set(err, SW_EINVAL,
                            "redis URL: it already holds a password, and another was given "
                            "separately; give the password one way only");
    /* Parsed above, so the scheme is one of the two and '@', when present,
     * ends the credentials (the same scan as the parser's). */
    const char *p = url + (strncmp(url, "unix://", 7) == 0 ? 7 : 8);
    int is_unix = p == url + 7;
    const char *at = NULL;
    for (const char *q = p; *q != '\0' && (is_unix || *q != '/'); q++)
        if (*q == '@')
            at = q;
    /* The user part as written: "user" of "user@", "user" of "user:@". */
    size_t ulen = 0;
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        ulen = colon ? (size_t)(colon - p) : 0;
    }
    const char *rest = at ? at + 1 : p;
    size_t k = 0;
    int fits = 1;
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (k + 1 < outlen)                                                                        \
            out[k++] = (c);                                                                        \
        else                                                                                       \
            fits = 0;                                                                              \
    } while (0)
    for (const char *q = url; q < p + ulen; q++)
        PUT(*q);
    PUT(':');
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *q = (const unsigned char *)password; *q; q++) {
        if (isalnum(*q) || *q == '-' || *q == '.' || *q == '_' || *q == '~') {
            PUT((char)*q);
        } else {
            PUT('%');
            PUT(hex[*q >> 4]);
            PUT(hex[*q & 15]);
        }
    }
    PUT('@');
    for (const char *q = rest; *q; q++)
        PUT(*q);
#undef PUT
    if (!fits) {
        /* Do not leave part of the password in the caller's buffer. */
        memset(out, 0, outlen);
        return sw_error_set(err, SW_ETOOBIG,
                            "redis URL: longer than %zu bytes once the password is added",
                            outlen ? outlen - 1 : 0);
    }
    out[k] = '\0';
    return 0;
}

/* ---- hiredis on libuv ----------------------------------------------------- */

/*
 * hiredis's own adapter (adapters/libuv.h) in the 0.14 series, which Debian
 * 12 ships, returns from its poll callback when libuv reports an error, and
 * a refused connect is reported that way: the connect callback then never
 * runs and the client waits forever instead of trying again. hiredis 1.0
 * fixed it by handing such an event on as the events being waited for, so
 * that hiredis reads the socket error and reports it; this adapter does the
 * same and works with either series.
 */
struct uv_events {
    redisAsyncContext *ac; /* NULL once hiredis has cleaned up */
    uv_poll_t poll;
    int events;
};

static void ev_on_poll(uv_poll_t *h, int status, int events)
{
    struct uv_events *p = h->data;
    int ev = status < 0 ? p->events : events;
    /* Handling a read may free the context (cleanup sets p->ac to NULL);
     * p itself lives until its poll handle is closed. */
    if (p->ac != NULL && (ev & UV_READABLE))
        redisAsyncHandleRead(p->ac);
    if (p->ac != NULL && (ev & UV_WRITABLE))
        redisAsyncHandleWrite(p->ac);
}

static void ev_update(struct uv_events *p)
{
    if (p->events != 0)
        uv_poll_start(&p->poll, p->events, ev_on_poll);
    else
        uv_poll_stop(&p->poll);
}

static void ev_add_read(void *privdata)
{
    struct uv_events *p = privdata;
    p->events |= UV_READABLE;
    ev_update(p);
}

static void ev_del_read(void *privdata)
{
    struct uv_events *p = privdata;
    p->events &= ~UV_READABLE;
    ev_update(p);
}

static void ev_add_write(void *privdata)
{
    struct uv_events *p = privdata;
    p->events |= UV_WRITABLE;
    ev_update(p);
}

static void ev_del_write(void *privdata)
{
    struct uv_events *p = privdata;
    p->events &= ~UV_WRITABLE;
    ev_update(p);
}

static void ev_on_closed(uv_handle_t *h)
{
    sw_free(h->data);
}

static void ev_cleanup(void *privdata)
{
    struct uv_events *p = privdata;
    p->ac = NULL;
    uv_close((uv_handle_t *)&p->poll, ev_on_closed);
}

/* Attaches `ac` to `loop`; 0, or -1 with nothing attached. */
static int ev_attach(redisAsyncContext *ac, uv_loop_t *loop)
{
    if (ac->ev.data != NULL)
        return -1;
    struct uv_events *p = sw_calloc(1, sizeof(*p));
    if (p == NULL)
        return -1;
    if (uv_poll_init_socket(loop, &p->poll, ac->c.fd) != 0) {
        sw_free(p);
        return -1;
    }
    p->ac = ac;
    p->poll.data = p;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    ac->ev.data = p;
    return 0;
}

/* ---- async client ------------------------------------------------------- */

struct sw_redis {
    uv_loop_t *loop;
    struct sw_redis_url url;
    char redacted[300];
    redisAsyncContext *ac;
    uv_timer_t retry;
    int backoff_ms;
    int up;
    int closing;
    sw_redis_state_cb on_state;
    void *ctx;
};

struct pending {
    struct sw_redis *r;
    sw_redis_reply_cb cb;
    void *ctx;
};

static void start_connect(struct sw_redis *r);

static void on_retry(uv_timer_t *t)
{
    start_connect(t->data);
}

static void schedule_retry(struct sw_redis *r, const char *why)
{
    if (r->closing)
        return;
    SW_LOG(SW_LOG_WARN, "redis connection lost", "redis=%s reason=%s retry_ms=%d",
           sw_log_q(r->redacted), sw_log_q(why), r->backoff_ms);
    uv_timer_start(&r->retry, on_retry, (uint64_t)r->backoff_ms, 0);
    r->backoff_ms = r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2;
}

static void set_down(struct sw_redis *r, const char *why)
{
    int was_up = r->up;
    r->up = 0;
    if (was_up && r->on_state != NULL)
        r->on_state(r, 0, why, r->ctx);
}

static void on_timer_closed(uv_handle_t *h)
{
    struct sw_redis *r = h->data;
    sw_redis_url_free(&r->url);
    sw_free(r);
}

static void finish_close(struct sw_redis *r)
{
    uv_timer_stop(&r->retry);
    uv_close((uv_handle_t *)&r->retry, on_timer_closed);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct sw_redis *r = ac->data;
    if (status == REDIS_OK)
        return;
    /* hiredis frees the context after this callback. */
    char why[160];
    snprintf(why, sizeof(why), "connect failed: %s", ac->errstr);
    r->ac = NULL;
    set_down(r, why);
    if (r->closing)
        finish_close(r);
    else
        schedule_retry(r, why);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct sw_redis *r = ac->data;
    char why[160];
    snprintf(why, sizeof(why), "%s", status == REDIS_OK ? "closed" : ac->errstr);
    r->ac = NULL;
    set_down(r, why);
    if (r->closing)
        finish_close(r);
    else
        schedule_retry(r, why);
}

static void on_auth(redisAsyncContext *ac, void *reply_, void *privdata)
{
    struct sw_redis *r = privdata;
    redisReply *reply = reply_;
    if (reply == NULL)
        return; /* the connection went away; on_disconnect handles it */
    if (reply->type == REDIS_REPLY_ERROR) {
        /* The server's text says NOAUTH/WRONGPASS; it never contains the password. */
        SW_LOG(SW_LOG_ERROR, "redis authentication failed", "redis=%s reason=%s",
               sw_log_q(r->redacted), sw_log_q(reply->str));
        redisAsyncDisconnect(ac);
        return;
    }
}

static void on_ready(redisAsyncContext *ac, void *reply_, void *privdata)
{
    struct sw_redis *r = privdata;
    redisReply *reply = reply_;
    (void)ac;
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        if (reply != NULL) {
            SW_LOG(SW_LOG_ERROR, "redis setup failed", "redis=%s reason=%s", sw_log_q(r->redacted),
                   sw_log_q(reply->str));
            redisAsyncDisconnect(ac);
        }
        return;
    }
    r->up = 1;
    r->backoff_ms = BACKOFF_MIN_MS;
    SW_LOG(SW_LOG_INFO, "redis connected", "redis=%s", sw_log_q(r->redacted));
    if (r->on_state != NULL)
        r->on_state(r, 1, "connected", r->ctx);
}

static void start_connect(struct sw_redis *r)
{
    redisAsyncContext *ac = r->url.path ? redisAsyncConnectUnix(r->url.path)
                                        : redisAsyncConnect(r->url.host, r->url.port);
    if (ac == NULL) {
        schedule_retry(r, "out of memory");
        return;
    }
    if (ac->err) {
        char why[160];
        snprintf(why, sizeof(why), "connect failed: %s", ac->errstr);
        redisAsyncFree(ac);
        schedule_retry(r, why);
        return;
    }
    if (ev_attach(ac, r->loop) != 0) {
        redisAsyncFree(ac);
        schedule_retry(r, "cannot attach to the loop");
        return;
    }
    ac->data = r;
    r->ac = ac;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (r->url.password != NULL) {
        if (r->url.user != NULL)
            redisAsyncCommand(ac, on_auth, r, "AUTH %s %s", r->url.user, r->url.password);
        else
            redisAsyncCommand(ac, on_auth, r, "AUTH %s", r->url.password);
    }
    if (r->url.db != 0)
        redisAsyncCommand(ac, on_ready, r, "SELECT %d", r->url.db);
    else
        redisAsyncCommand(ac, on_ready, r, "PING");
}

int sw_redis_connect(uv_loop_t *loop, const char *url, sw_redis_state_cb on_state, void *ctx,
                     struct sw_redis **out, struct sw_error *err)
{
    struct sw_redis *r = sw_calloc(1, sizeof(*r));
    if (r == NULL)
        return sw_error_set(err, SW_ENOMEM, "redis: out of memory");
    int rc = sw_redis_url_parse(url, &r->url, err);
    if (rc != 0) {
        sw_free(r);
        return rc;
    }
    sw_redis_url_redacted(&r->url, r->redacted, sizeof(r->redacted));
    r->loop = loop;
    r->on_state = on_state;
    r->ctx = ctx;
    r->backoff_ms = BACKOFF_MIN_MS;
    uv_timer_init(loop, &r->retry);
    r->retry.data = r;
    start_connect(r);
    *out = r;
    return 0;
}

int sw_redis_is_up(const struct sw_redis *r)
{
    return r->up;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct pending *p = privdata;
    const char *why = NULL;
    if (reply == NULL)
        why = ac->errstr[0] ? ac->errstr : "connection closed";
    if (p->cb != NULL)
        p->cb(p->r, reply, why, p->ctx);
    sw_free(p);
}

int sw_redis_command_argv(struct sw_redis *r, sw_redis_reply_cb cb, void *ctx, int argc,
                          const char **argv, const size_t *argvlen)
{
    if (r->ac == NULL || r->closing)
        return SW_EUNAVAIL;
    struct pending *p = sw_malloc(sizeof(*p));
    if (p == NULL)
        return SW_ENOMEM;
    p->r = r;
    p->cb = cb;
    p->ctx = ctx;
    if (redisAsyncCommandArgv(r->ac, on_reply, p, argc, argv, argvlen) != REDIS_OK) {
        sw_free(p);
        return SW_EUNAVAIL;
    }
    return 0;
}

int sw_redis_command(struct sw_redis *r, sw_redis_reply_cb cb, void *ctx, const char *fmt, ...)
{
    if (r->ac == NULL || r->closing)
        return SW_EUNAVAIL;
    struct pending *p = sw_malloc(sizeof(*p));
    if (p == NULL)
        return SW_ENOMEM;
    p->r = r;
    p->cb = cb;
    p->ctx = ctx;
    va_list ap;
    va_start(ap, fmt);
    int rc = redisvAsyncCommand(r->ac, on_reply, p, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK) {
        sw_free(p);
        return SW_EUNAVAIL;
    }
    return 0;
}

void sw_redis_free(struct sw_redis *r)
{
    if (r == NULL || r->closing)
        return;
    r->closing = 1;
    r->on_state = NULL;
    if (r->ac != NULL)
        redisAsyncDisconnect(r->ac); /* on_disconnect finishes the close */
    else
        finish_close(r);
}

/* ---- blocking ----------------------------------------------------------- */

static int sync_reply_rc(redisContext *c, redisReply *reply, struct sw_error *err)
{
    if (reply == NULL)
        return sw_error_set(err,
                            c->err == REDIS_ERR_IO && c->errstr[0] == 'R' ? SW_ETIMEDOUT : SW_ENET,
                            "redis: %s", c->errstr[0] ? c->errstr : "connection failed");
    if (reply->type == REDIS_REPLY_ERROR) {
        sw_error_set(err, SW_EIO, "redis: %s", reply->str);
        return SW_EIO;
    }
    return 0;
}

int sw_redis_sync_command_argv(redisContext *c, redisReply **reply, struct sw_error *err, int argc,
                               const char **argv, const size_t *argvlen)
{
    redisReply *r = redisCommandArgv(c, argc, argv, argvlen);
    int rc = sync_reply_rc(c, r, err);
    if (rc != 0) {
        if (r != NULL)
            freeReplyObject(r);
        *reply = NULL;
        return rc;
    }
    *reply = r;
    return 0;
}

int sw_redis_sync_command(redisContext *c, redisReply **reply, struct sw_error *err,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = sync_reply_rc(c, r, err);
    if (rc != 0) {
        if (r != NULL)
            freeReplyObject(r);
        *reply = NULL;
        return rc;
    }
    *reply = r;
    return 0;
}

int sw_redis_sync_connect(const char *url, long timeout_ms, redisContext **out,
                          struct sw_error *err)
{
    struct sw_redis_url u;
    int rc = sw_redis_url_parse(url, &u, err);
    if (rc != 0)
        return rc;
    char red[300];
    sw_redis_url_redacted(&u, red, sizeof(red));
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = u.path ? redisConnectUnixWithTimeout(u.path, tv)
                             : redisConnectWithTimeout(u.host, u.port, tv);
    if (c == NULL || c->err) {
        rc = sw_error_set(err, SW_ENET, "redis %s: cannot connect: %s", red,
                          c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        sw_redis_url_free(&u);
        return rc;
    }
    redisSetTimeout(c, tv);
    redisReply *reply = NULL;
    if (u.password != NULL) {
        if (u.user != NULL)
            rc = sw_redis_sync_command(c, &reply, err, "AUTH %s %s", u.user, u.password);
        else
            rc = sw_redis_sync_command(c, &reply, err, "AUTH %s", u.password);
        if (rc != 0) {
            if (rc == SW_EIO) {
                rc = SW_EAUTH;
                if (err != NULL)
                    err->code = rc;
            }
            sw_error_wrap(err, "redis %s: authentication", red);
            goto fail;
        }
        freeReplyObject(reply);
    }
    if (u.db != 0) {
        rc = sw_redis_sync_command(c, &reply, err, "SELECT %d", u.db);
        if (rc != 0) {
            sw_error_wrap(err, "redis %s: SELECT %d", red, u.db);
            goto fail;
        }
        freeReplyObject(reply);
    }
    sw_redis_url_free(&u);
    *out = c;
    return 0;
fail:
    redisFree(c);
    sw_redis_url_free(&u);
    return rc;
}
