/*
 * Tests for net/http.c: the curl-multi-on-libuv engine, against a small
 * HTTP/1.1 server that runs on the same loop inside the test. The server is
 * a fixture for the engine's own behaviour (reuse, caps, streaming,
 * cancellation, Retry-After); the Kubernetes and S3 clients are tested
 * against the real servers of the lab.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "net/http.h"

/* ---- fixture server ------------------------------------------------------ */

struct server {
    uv_tcp_t tcp;
    int port;
    int accepted;
    int requests;
};

struct conn {
    uv_tcp_t tcp;
    struct server *srv;
    char buf[1 << 16];
    size_t len;
};

static void on_conn_closed(uv_handle_t *h)
{
    free(h->data);
}

static void on_written(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

static void send_raw(struct conn *c, const char *data, size_t len)
{
    uv_write_t *w = malloc(sizeof(*w));
    char *copy = malloc(len);
    memcpy(copy, data, len);
    w->data = copy;
    uv_buf_t b = uv_buf_init(copy, (unsigned)len);
    uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_written);
}

static void respond(struct conn *c, int status, const char *extra, const char *body, size_t blen)
{
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: keep-alive\r\n%s\r\n",
                     status, blen, extra);
    send_raw(c, head, (size_t)n);
    if (blen > 0)
        send_raw(c, body, blen);
}

/* Handles every complete request in the connection's buffer. */
static void handle_requests(struct conn *c)
{
    for (;;) {
        char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (end == NULL)
            return;
        size_t head_len = (size_t)(end - c->buf) + 4;
        size_t body_len = 0;
        char *cl = memmem(c->buf, head_len, "Content-Length: ", 16);
        if (cl != NULL)
            body_len = strtoul(cl + 16, NULL, 10);
        if (c->len < head_len + body_len)
            return;
        char path[128] = "";
        sscanf(c->buf, "%*s %127s", path);
        c->srv->requests++;
        if (strcmp(path, "/hello") == 0) {
            respond(c, 200, "", "hello world", 11);
        } else if (strcmp(path, "/retry") == 0) {
            respond(c, 429, "Retry-After: 7\r\nX-Reason: busy\r\n", "slow down", 9);
        } else if (strcmp(path, "/big") == 0) {
            size_t n = 1 << 20;
            char *body = malloc(n);
            memset(body, 'b', n);
            respond(c, 200, "", body, n);
            free(body);
        } else if (strcmp(path, "/echo") == 0) {
            respond(c, 200, "", c->buf + head_len, body_len);
        } else if (strcmp(path, "/hang") == 0) {
            /* never answers */
        } else {
            respond(c, 404, "", "", 0);
        }
        memmove(c->buf, c->buf + head_len + body_len, c->len - head_len - body_len);
        c->len -= head_len + body_len;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)suggested;
    struct conn *c = h->data;
    b->base = c->buf + c->len;
    b->len = sizeof(c->buf) - c->len;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    struct conn *c = s->data;
    if (n < 0) {
        uv_close((uv_handle_t *)s, on_conn_closed);
        return;
    }
    c->len += (size_t)n;
    handle_requests(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    assert_int_equal(status, 0);
    struct server *srv = server->data;
    struct conn *c = calloc(1, sizeof(*c));
    c->srv = srv;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
    srv->accepted++;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void server_start(uv_loop_t *loop, struct server *srv)
{
    memset(srv, 0, sizeof(*srv));
    uv_tcp_init(loop, &srv->tcp);
    srv->tcp.data = srv;
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    assert_int_equal(uv_tcp_bind(&srv->tcp, (const struct sockaddr *)&addr, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&srv->tcp, 16, on_connection), 0);
    struct sockaddr_in bound;
    int len = sizeof(bound);
    uv_tcp_getsockname(&srv->tcp, (struct sockaddr *)&bound, &len);
    srv->port = ntohs(bound.sin_port);
}

/* Closes what is left on the loop: the server socket and its connections. */
static void close_walk(uv_handle_t *h, void *arg)
{
    if (uv_is_closing(h))
        return;
    uv_close(h, h == arg ? NULL : on_conn_closed);
}

/* ---- harness ------------------------------------------------------------- */

struct result {
    int done;
    int rc;
    long status;
    long retry_after;
    char body[64];
    size_t body_len;
    char reason[32];
    size_t streamed;
    int stop_after;
    long http_version;
    long new_connects;
};

static void on_done(struct sw_http_call *call, struct sw_http_response *resp, void *ctx)
{
    (void)call;
    struct result *r = ctx;
    r->done++;
    r->rc = resp->rc;
    r->status = resp->status;
    r->retry_after = resp->retry_after_s;
    r->http_version = resp->http_version;
    r->new_connects = resp->new_connects;
    r->body_len = resp->body.len;
    if (resp->body.data != NULL)
        snprintf(r->body, sizeof(r->body), "%.*s", (int)(resp->body.len < 63 ? resp->body.len : 63),
                 resp->body.data);
    sw_http_header(resp, "X-Reason", r->reason, sizeof(r->reason));
}

static int on_data(const char *data, size_t len, void *ctx)
{
    (void)data;
    struct result *r = ctx;
    r->streamed += len;
    return r->stop_after > 0 && r->streamed >= (size_t)r->stop_after;
}

struct fixture {
    uv_loop_t loop;
    struct server srv;
    struct sw_http *http;
    char url[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    uv_loop_init(&f->loop);
    server_start(&f->loop, &f->srv);
    assert_int_equal(sw_http_new(&f->loop, &f->http), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    sw_http_free(f->http);
    uv_walk(&f->loop, close_walk, &f->srv.tcp);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    uv_loop_close(&f->loop);
    free(f);
    return 0;
}

static const char *url(struct fixture *f, const char *path)
{
    snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d%s", f->srv.port, path);
    return f->url;
}

static void run_until(struct fixture *f, const struct result *r, int n)
{
    while (r->done < n)
        uv_run(&f->loop, UV_RUN_ONCE);
}

/* ---- tests --------------------------------------------------------------- */

static void test_get_and_connection_reuse(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < 5; i++) {
        struct result r = {0};
        struct sw_http_request req = {.url = url(f, "/hello")};
        assert_int_equal(sw_http_send(f->http, &req, on_done, &r, NULL), 0);
        /* The callback never runs from inside send. */
        assert_int_equal(r.done, 0);
        run_until(f, &r, 1);
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "hello world");
        /* The fixture speaks HTTP/1.1 (no TLS, so no ALPN for h2). */
        assert_int_equal(r.http_version, CURL_HTTP_VERSION_1_1);
        /* Only the first call opens a connection; the rest reuse it. */
        assert_int_equal(r.new_connects, i == 0 ? 1 : 0);
    }
    assert_int_equal(f->srv.requests, 5);
    /* Five sequential requests share one kept-alive connection. */
    assert_int_equal(f->srv.accepted, 1);
    assert_int_equal(sw_http_pending(f->http), 0);
}

static void test_retry_after_and_headers(void **state)
{
    struct fixture *f = *state;
    struct result r = {0};
    struct sw_http_request req = {.url = url(f, "/retry")};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r, NULL), 0);
    run_until(f, &r, 1);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retry_after, 7);
    assert_string_equal(r.reason, "busy");
}

static void test_body_cap(void **state)
{
    struct fixture *f = *state;
    struct result r = {0};
    struct sw_http_request req = {.url = url(f, "/big"), .max_body = 4096};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r, NULL), 0);
    run_until(f, &r, 1);
    assert_int_equal(r.rc, SW_ETOOBIG);
    /* Under the default cap the same body arrives whole. */
    struct result r2 = {0};
    req.max_body = 0;
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r2, NULL), 0);
    run_until(f, &r2, 1);
    assert_int_equal(r2.rc, 0);
    assert_int_equal(r2.body_len, 1 << 20);
}

static void test_streaming_and_abort(void **state)
{
    struct fixture *f = *state;
    struct result r = {0};
    struct sw_http_request req = {.url = url(f, "/big"), .on_data = on_data};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r, NULL), 0);
    run_until(f, &r, 1);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.streamed, 1 << 20);
    assert_int_equal(r.body_len, 0);

    struct result a = {.stop_after = 1000};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &a, NULL), 0);
    run_until(f, &a, 1);
    assert_int_equal(a.rc, SW_ECANCELED);
    assert_true(a.streamed < (1 << 20));
}

static void test_upload_body(void **state)
{
    struct fixture *f = *state;
    struct result r = {0};
    const char payload[] = "{\"spec\":{\"suspend\":true}}";
    struct sw_http_request req = {
        .method = "PATCH", .url = url(f, "/echo"), .body = payload, .body_len = strlen(payload)};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r, NULL), 0);
    run_until(f, &r, 1);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, payload);
}

static void test_cancel(void **state)
{
    struct fixture *f = *state;
    struct result r = {0};
    struct sw_http_call *call = NULL;
    struct sw_http_request req = {.url = url(f, "/hang")};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r, &call), 0);
    /* Let the request reach the server, then cancel it. */
    while (f->srv.requests == 0)
        uv_run(&f->loop, UV_RUN_ONCE);
    sw_http_cancel(call);
    assert_int_equal(r.done, 0);
    run_until(f, &r, 1);
    assert_int_equal(r.done, 1);
    assert_int_equal(r.rc, SW_ECANCELED);
    assert_int_equal(sw_http_pending(f->http), 0);
}

static void test_timeout_and_refused(void **state)
{
    struct fixture *f = *state;
    struct result r = {0};
    struct sw_http_request req = {.url = url(f, "/hang"), .timeout_ms = 200};
    assert_int_equal(sw_http_send(f->http, &req, on_done, &r, NULL), 0);
    run_until(f, &r, 1);
    assert_int_equal(r.rc, SW_ETIMEDOUT);

    /* A port nobody listens on: bind one, close it, connect to it. */
    struct result r2 = {0};
    struct sw_http_request req2 = {.url = "http://127.0.0.1:1/nothing"};
    assert_int_equal(sw_http_send(f->http, &req2, on_done, &r2, NULL), 0);
    run_until(f, &r2, 1);
    assert_int_equal(r2.rc, SW_ENET);
    assert_int_equal(r2.status, 0);
    /* No response arrived, so there is no version. */
    assert_int_equal(r2.http_version, 0);
}

static void test_blocking_helper(void **state)
{
    struct fixture *f = *state;
    (void)f;
    struct sw_http_response resp;
    struct sw_http_request req = {.url = "http://127.0.0.1:1/"};
    assert_int_equal(sw_http_do(&req, &resp), SW_ENET);
    assert_true(strlen(resp.error) > 0);
    sw_http_response_free(&resp);
    struct sw_http_request bad = {.url = NULL};
    assert_int_equal(sw_http_do(&bad, &resp), SW_EINVAL);
    sw_http_response_free(&resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_and_connection_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_and_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streaming_and_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upload_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_and_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_helper, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
