/*
 * httpd.c - the hub's small HTTP/1.0-style server (httpd.h).
 *
 * One request per connection: the request line and headers are read, the
 * handler answers, the answer is written with "Connection: close" and the
 * connection is closed. Every connection is on a list so that
 * sw_httpd_close can close them all.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "controller/hub/httpd.h"

struct conn {
    uv_tcp_t tcp;
    struct sw_httpd *s;
    struct conn *prev, *next;
    char in[2048];
    size_t n;
    uv_write_t wr;
    char *out;
    bool answered;
    bool closing;
};

struct sw_httpd {
    uv_tcp_t tcp;
    sw_httpd_handler fn;
    void *ctx;
    struct conn *conns;
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
    struct sw_httpd *s = c->s;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    sw_free(c->out);
    sw_free(c);
    maybe_free(s);
}

static void close_conn(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_written(uv_write_t *req, int status)
{
    (void)status;
    close_conn(req->data);
}

static const char *reason(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 404:
        return "Not Found";
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
    size_t room = sizeof(c->in) - 1 - c->n;
    *buf = uv_buf_init(c->in + c->n, (unsigned)room);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    struct conn *c = st->data;
    if (c->answered || c->closing)
        return;
    if (nread < 0 || (nread == 0 && c->n >= sizeof(c->in) - 1)) {
        close_conn(c);
        return;
    }
    c->n += (size_t)nread;
    c->in[c->n] = '\0';
    if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n") || c->n >= sizeof(c->in) - 1) {
        uv_read_stop(st);
        handle(c);
    }
}

static void on_conn(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    struct sw_httpd *s = server->data;
    struct conn *c = sw_calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->s = s;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        close_conn(c);
}

int sw_httpd_start(uv_loop_t *loop, const char *listen, sw_httpd_handler fn, void *ctx,
                   struct sw_httpd **out, struct sw_error *err)
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
