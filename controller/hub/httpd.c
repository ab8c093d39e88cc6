/*
 * httpd.c - the hub's small HTTP/1.0-style server (httpd.h).
 *
 * One request per connection: the request line and headers are read, the
 * handler answers, the answer is written with "Connection: close" and the
 * connection is closed. Every connection is on a list so that
 * sw_httpd_close can close them all.
 *
 * The server shares its loop with the hub, so no client may hold it: each
 * connection has one deadline for its whole request and another for its
 * answer to be written (a timer each), the request is read into a buffer
 * of the limit's size and answered 431 when it does not end there, and past
 * the cap a connection is accepted and closed at once (httpd.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "controller/hub/httpd.h"

struct conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* the request's, then the write's, deadline */
    uv_write_t wr;
    uv_shutdown_t sd;
    struct sw_httpd *s;
    struct conn *prev, *next;
    int handles; /* open: tcp and timer */
    bool answered;
    bool linger; /* after a 431: read and drop until the client closes */
    bool closing;
    char *out;
    size_t n;
    char in[]; /* lim.max_request + 1 */
};

/* A connection past the cap: accepted only to be closed. */
struct reject {
    uv_tcp_t tcp;
};

struct sw_httpd {
    uv_tcp_t tcp;
    struct sw_httpd_limits lim;
    sw_httpd_handler fn;
    void *ctx;
    struct conn *conns;
    size_t nconns;
    struct sw_httpd_stats stats;
    bool closing;
    bool listener_closed;
};

static void maybe_free(struct sw_httpd *s)
{
    if (s->closing && s->listener_closed && s->conns == NULL)
        sw_free(s);
}

static void on_closed(uv_handle_t *hd)
{
    struct conn *c = hd->data;
    if (--c->handles > 0)
        return;
    struct sw_httpd *s = c->s;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    sw_free(c->out);
    sw_free(c);
    maybe_free(s);
}

static void close_conn(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    /* A write in flight is cancelled (on_written sees UV_ECANCELED). */
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* The request did not end in time, or the answer was not taken in time. */
static void on_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    c->s->stats.timed_out++;
    close_conn(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status; /* the client's close, or the timer, ends the connection */
}

static void on_written(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    if (c->closing)
        return;
    /* After a 431 the client may still be sending: closing with its bytes
     * unread would reset the connection and could lose the answer. Send
     * our FIN and read until the client closes (or the timer fires). */
    if (status == 0 && c->linger && uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) == 0)
        return;
    close_conn(c);
}

static const char *reason(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 404:
        return "Not Found";
    case 431:
        return "Request Header Fields Too Large";
    default:
        return "Service Unavailable";
    }
}

static void respond(struct conn *c, int code, const char *ctype, const char *body, size_t len)
{
    struct sw_buf b;
    sw_buf_init(&b, len + 512);
    sw_buf_addf(&b,
                "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                "Connection: close\r\n\r\n",
                code, reason(code), ctype, len);
    sw_buf_add(&b, body, len);
    size_t n = 0;
    c->out = sw_buf_take(&b, &n);
    c->answered = true;
    if (c->out == NULL) {
        close_conn(c);
        return;
    }
    uv_timer_start(&c->timer, on_timeout, c->s->lim.write_timeout_ms, 0);
    uv_buf_t ub = uv_buf_init(c->out, (unsigned)n);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &ub, 1, on_written) != 0)
        close_conn(c);
}

static void handle(struct conn *c)
{
    char method[8] = {0}, path[256] = {0};
    if (sscanf(c->in, "%7s %255s", method, path) != 2) {
        close_conn(c);
        return;
    }
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    struct sw_httpd_answer a = {.code = 200, .ctype = "text/plain"};
    sw_buf_init(&a.body, SW_HTTPD_MAX_BODY);
    c->s->fn(method, path, &a, c->s->ctx);
    size_t n = 0;
    char *text = sw_buf_take(&a.body, &n);
    respond(c, a.code, a.ctype, text ? text : "", text ? n : 0);
    sw_free(text);
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct conn *c = hd->data;
    size_t max = c->s->lim.max_request;
    if (c->answered) /* lingering: what comes is dropped */
        *buf = uv_buf_init(c->in, (unsigned)max);
    else
        *buf = uv_buf_init(c->in + c->n, (unsigned)(max - c->n));
}

/* Whether the headers have ended; `from` is where the new bytes start. */
static bool ended(const char *in, size_t from, size_t n)
{
    size_t back = from < 3 ? from : 3;
    return memmem(in + from - back, n - from + back, "\r\n\r\n", 4) != NULL ||
           memmem(in + from - back, n - from + back, "\n\n", 2) != NULL;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    struct conn *c = st->data;
    if (c->closing)
        return;
    if (nread < 0) {
        close_conn(c); /* the client closed, or the connection failed */
        return;
    }
    if (c->answered || nread == 0)
        return;
    size_t from = c->n;
    c->n += (size_t)nread;
    c->in[c->n] = '\0';
    if (ended(c->in, from, c->n)) {
        uv_read_stop(st);
        handle(c);
    } else if (c->n >= c->s->lim.max_request) {
        c->s->stats.too_large++;
        c->linger = true;
        static const char msg[] = "request headers too large\n";
        respond(c, 431, "text/plain", msg, sizeof(msg) - 1);
    }
}

static void on_reject_closed(uv_handle_t *hd)
{
    sw_free(hd->data);
}

/* Takes the pending connection off the backlog and closes it: libuv stops
 * accepting while one is left there, and the backlog would fill. */
static void reject(uv_stream_t *server)
{
    struct reject *r = sw_calloc(1, sizeof(*r));
    if (r == NULL)
        return;
    uv_tcp_init(server->loop, &r->tcp);
    r->tcp.data = r;
    (void)uv_accept(server, (uv_stream_t *)&r->tcp);
    uv_close((uv_handle_t *)&r->tcp, on_reject_closed);
}

static void on_conn(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    struct sw_httpd *s = server->data;
    if (s->nconns >= s->lim.max_conns) {
        s->stats.over_cap++;
        reject(server);
        return;
    }
    struct conn *c = sw_calloc(1, sizeof(*c) + s->lim.max_request + 1);
    if (c == NULL) {
        reject(server);
        return;
    }
    c->s = s;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    uv_tcp_init(server->loop, &c->tcp);
    uv_timer_init(server->loop, &c->timer);
    c->handles = 2;
    c->tcp.data = c;
    c->timer.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        close_conn(c);
        return;
    }
    /* The whole request within the timeout, however slowly it comes: a
     * client sending a byte now and then does not hold the connection. */
    uv_timer_start(&c->timer, on_timeout, s->lim.request_timeout_ms, 0);
}

int sw_httpd_start(uv_loop_t *loop, const char *listen, const struct sw_httpd_limits *lim,
                   sw_httpd_handler fn, void *ctx, struct sw_httpd **out, struct sw_error *err)
{
    *out = NULL;
    char host[128];
    snprintf(host, sizeof(host), "%s", listen);
    char *colon = strrchr(host, ':');
    if (colon == NULL)
        return sw_error_set(err, SW_EINVAL, "listen \"%s\": expected HOST:PORT", listen);
    *colon = '\0';
    int port = atoi(colon + 1);
    struct sockaddr_storage addr;
    size_t hl = strlen(host);
    int bad;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        bad = uv_ip6_addr(host + 1, port, (struct sockaddr_in6 *)&addr);
    } else {
        bad = uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
    }
    if (bad != 0)
        return sw_error_set(err, SW_EINVAL, "listen \"%s\": expected IPV4:PORT or [IPV6]:PORT",
                            listen);
    struct sw_httpd *s = sw_calloc(1, sizeof(*s));
    if (s == NULL)
        return sw_error_set(err, SW_ENOMEM, "listen %s: out of memory", listen);
    if (lim != NULL)
        s->lim = *lim;
    if (s->lim.max_conns == 0)
        s->lim.max_conns = SW_HTTPD_MAX_CONNS;
    if (s->lim.max_request == 0)
        s->lim.max_request = SW_HTTPD_MAX_REQUEST;
    if (s->lim.request_timeout_ms == 0)
        s->lim.request_timeout_ms = SW_HTTPD_REQUEST_TIMEOUT_MS;
    if (s->lim.write_timeout_ms == 0)
        s->lim.write_timeout_ms = SW_HTTPD_WRITE_TIMEOUT_MS;
    s->fn = fn;
    s->ctx = ctx;
    uv_tcp_init(loop, &s->tcp);
    s->tcp.data = s;
    int rc = uv_tcp_bind(&s->tcp, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->tcp, 64, on_conn);
    if (rc != 0) {
        sw_httpd_close(s);
        return sw_error_set(err, SW_EIO, "listen %s: %s", listen, uv_strerror(rc));
    }
    *out = s;
    return 0;
}

int sw_httpd_port(const struct sw_httpd *s)
{
    struct sockaddr_storage a;
    int len = sizeof(a);
    if (uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&a, &len) != 0)
        return -1;
    if (a.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&a)->sin_port);
    if (a.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return -1;
}

static void on_listener_closed(uv_handle_t *hd)
{
    struct sw_httpd *s = hd->data;
    s->listener_closed = true;
    maybe_free(s);
}

void sw_httpd_close(struct sw_httpd *s)
{
    if (s == NULL || s->closing)
        return;
    s->closing = true;
    for (struct conn *c = s->conns; c != NULL; c = c->next)
        close_conn(c);
    uv_close((uv_handle_t *)&s->tcp, on_listener_closed);
}

size_t sw_httpd_conns(const struct sw_httpd *s)
{
    return s->nconns;
}

void sw_httpd_stats(const struct sw_httpd *s, struct sw_httpd_stats *out)
{
    *out = s->stats;
}
