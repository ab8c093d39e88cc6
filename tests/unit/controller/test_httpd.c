/*
 * Tests for controller/hub/httpd.c: the server runs on a libuv loop on
 * 127.0.0.1 (a free port), its clients are real sockets on the same loop,
 * and a timer every 10 ms stands in for the hub's ticks, which share that
 * loop. The limits are set short so that each test is over in about a
 * second: idle clients, a client dribbling its request a byte at a time, a
 * client that never reads its answer, more connections than the cap and
 * oversized requests, while /metrics goes on being answered and the ticks
 * go on firing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/hub/httpd.h"

/* Past what the kernel buffers for a client that does not read (the
 * server's send buffer grows to 4 MiB; the client's is set small). */
#define BIG_BODY ((size_t)6 << 20)

static char big[BIG_BODY];

struct fixture;

/* One client: what it sends, whether it reads, and what it saw when. */
struct client {
    uv_tcp_t tcp;
    uv_connect_t conn;
    uv_timer_t drip; /* the slow client's: a byte at a time */
    uv_write_t wr;
    struct fixture *fx;
    const char *req; /* sent whole once connected (NULL: nothing) */
    size_t req_len;
    bool slow;      /* dribbles a request that never ends instead */
    bool no_read;   /* never reads (until told to) */
    double eof_at;  /* ms since the start the server's close was seen; -1 */
    double conn_at; /* ms since the start it was started */
    size_t got;     /* bytes received */
    char head[256]; /* their start */
    bool closing;
    int handles; /* open handles */
    char rbuf[65536];
};

struct fixture {
    uv_loop_t loop;
    struct sw_httpd *srv;
    int port;
    uint64_t t0;
    uv_timer_t tick;
    uint64_t ticks;
    double last_tick, max_gap;
    struct client *clients[64];
    size_t nclients;
};

static double now_ms(struct fixture *fx)
{
    return (double)(uv_hrtime() - fx->t0) / 1e6;
}

/* The test's handler: a small /metrics, a large /big, 404 otherwise. */
static void handler(const char *method, const char *path, struct sw_httpd_answer *a, void *ctx)
{
    (void)ctx;
    (void)method;
    if (strcmp(path, "/metrics") == 0) {
        a->ctype = "text/plain; version=0.0.4";
        sw_buf_adds(&a->body, "spillway_leader 1\n");
    } else if (strcmp(path, "/big") == 0) {
        sw_buf_add(&a->body, big, BIG_BODY);
    } else {
        a->code = 404;
        sw_buf_adds(&a->body, "not found\n");
    }
}

static void on_tick(uv_timer_t *t)
{
    struct fixture *fx = t->data;
    double now = now_ms(fx);
    if (now - fx->last_tick > fx->max_gap)
        fx->max_gap = now - fx->last_tick;
    fx->last_tick = now;
    fx->ticks++;
}

static void fixture_start(struct fixture *fx, const struct sw_httpd_limits *lim)
{
    memset(fx, 0, sizeof(*fx));
    assert_int_equal(uv_loop_init(&fx->loop), 0);
    struct sw_error err = {0};
    assert_int_equal(sw_httpd_start(&fx->loop, "127.0.0.1:0", lim, handler, fx, &fx->srv, &err), 0);
    fx->port = sw_httpd_port(fx->srv);
    assert_true(fx->port > 0);
    fx->t0 = uv_hrtime();
    uv_timer_init(&fx->loop, &fx->tick);
    fx->tick.data = fx;
    uv_timer_start(&fx->tick, on_tick, 10, 10);
}

static void on_client_closed(uv_handle_t *hd)
{
    struct client *c = hd->data;
    c->handles--;
}

static void client_close(struct client *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_timer_stop(&c->drip);
    uv_close((uv_handle_t *)&c->drip, on_client_closed);
    uv_close((uv_handle_t *)&c->tcp, on_client_closed);
}

static void on_client_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct client *c = hd->data;
    *buf = uv_buf_init(c->rbuf, sizeof(c->rbuf));
}

static void on_client_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct client *c = st->data;
    if (n < 0) {
        /* EOF, or a reset when the server closed with our bytes unread:
         * either way the server closed the connection. */
        if (c->eof_at < 0)
            c->eof_at = now_ms(c->fx);
        client_close(c);
        return;
    }
    if (c->got < sizeof(c->head) - 1) {
        size_t room = sizeof(c->head) - 1 - c->got;
        memcpy(c->head + c->got, buf->base, (size_t)n < room ? (size_t)n : room);
    }
    c->got += (size_t)n;
}

static void on_client_written(uv_write_t *w, int status)
{
    (void)w;
    (void)status;
}

static void on_drip(uv_timer_t *t)
{
    static const char start[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
    struct client *c = t->data;
    size_t i = c->req_len++;
    uv_buf_t b = uv_buf_init((char *)(i < sizeof(start) - 1 ? &start[i] : "a"), 1);
    /* A byte at a time: uv_try_write never queues. */
    (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
}

static void on_connected(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    if (status != 0) {
        c->eof_at = now_ms(c->fx);
        client_close(c);
        return;
    }
    if (!c->no_read)
        uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read);
    if (c->slow) {
        uv_timer_start(&c->drip, on_drip, 0, 10);
    } else if (c->req != NULL) {
        uv_buf_t b = uv_buf_init((char *)c->req, (unsigned)c->req_len);
        c->wr.data = c;
        uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_client_written);
    }
}

/* Starts a client sending `req` (NULL: an idle one). */
static struct client *client_start(struct fixture *fx, const char *req, size_t len)
{
    struct client *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_true(fx->nclients < sizeof(fx->clients) / sizeof(fx->clients[0]));
    fx->clients[fx->nclients++] = c;
    c->fx = fx;
    c->req = req;
    c->req_len = len;
    c->eof_at = -1;
    c->conn_at = now_ms(fx);
    uv_tcp_init(&fx->loop, &c->tcp);
    uv_timer_init(&fx->loop, &c->drip);
    c->handles = 2;
    c->tcp.data = c;
    c->drip.data = c;
    c->conn.data = c;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&c->tcp, (const struct sockaddr *)&a, 0), 0);
    /* A small receive buffer, so that a client that does not read stops
     * the server's writes soon (the kernel would otherwise take megabytes). */
    int rcv = 4096;
    uv_recv_buffer_size((uv_handle_t *)&c->tcp, &rcv);
    uv_ip4_addr("127.0.0.1", fx->port, &a);
    assert_int_equal(uv_tcp_connect(&c->conn, &c->tcp, (const struct sockaddr *)&a, on_connected),
                     0);
    return c;
}

static struct client *client_get(struct fixture *fx, const char *path)
{
    static char reqs[16][128];
    static size_t next;
    char *r = reqs[next++ % 16];
    int n = snprintf(r, 128, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    return client_start(fx, r, (size_t)n);
}

/* Runs the loop until `ms` since the start. */
static void run_until(struct fixture *fx, double ms)
{
    while (now_ms(fx) < ms)
        uv_run(&fx->loop, UV_RUN_ONCE);
}

/* Runs until the client has seen the server close (at most `ms` more). */
static void run_until_closed(struct fixture *fx, struct client *c, double ms)
{
    double end = now_ms(fx) + ms;
    while (c->eof_at < 0 && now_ms(fx) < end)
        uv_run(&fx->loop, UV_RUN_NOWAIT);
}

/* Runs until the server has no connection open (at most `ms` more). */
static void run_until_no_conns(struct fixture *fx, double ms)
{
    double end = now_ms(fx) + ms;
    while (sw_httpd_conns(fx->srv) > 0 && now_ms(fx) < end)
        uv_run(&fx->loop, UV_RUN_NOWAIT);
}

static void fixture_end(struct fixture *fx)
{
    for (size_t i = 0; i < fx->nclients; i++)
        client_close(fx->clients[i]);
    sw_httpd_close(fx->srv);
    uv_close((uv_handle_t *)&fx->tick, NULL);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    for (size_t i = 0; i < fx->nclients; i++) {
        assert_int_equal(fx->clients[i]->handles, 0);
        free(fx->clients[i]);
    }
    assert_int_equal(uv_loop_close(&fx->loop), 0);
}

/* The ticks went on: none late by more than `gap` ms. */
static void assert_ticks(struct fixture *fx, double gap)
{
    assert_true(fx->ticks > 0);
    if (fx->max_gap > gap)
        fail_msg("a tick came %.0f ms after the one before (at most %.0f)", fx->max_gap, gap);
}

static void assert_answered(struct client *c, const char *status)
{
    if (c->eof_at < 0)
        fail_msg("no answer (%zu bytes) to the request sent at %.0f ms", c->got, c->conn_at);
    if (strncmp(c->head, status, strlen(status)) != 0)
        fail_msg("answered \"%.40s\", expected \"%s\"", c->head, status);
}

/* The server closed the client at `lo` ms or later, by `hi` ms. */
static void assert_closed_between(struct client *c, double lo, double hi)
{
    if (c->eof_at < 0)
        fail_msg("the client started at %.0f ms was never closed (%zu bytes received)", c->conn_at,
                 c->got);
    if (c->eof_at < lo || c->eof_at > hi)
        fail_msg("the client started at %.0f ms was closed at %.0f ms, expected %.0f to %.0f",
                 c->conn_at, c->eof_at, lo, hi);
}

static void test_answers(void **state)
{
    (void)state;
    struct fixture fx;
    fixture_start(&fx, NULL);
    struct client *m = client_get(&fx, "/metrics?x=1");
    struct client *n = client_get(&fx, "/nope");
    run_until_closed(&fx, m, 2000);
    run_until_closed(&fx, n, 2000);
    assert_answered(m, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n");
    assert_non_null(strstr(m->head, "\r\n\r\nspillway_leader 1\n"));
    assert_answered(n, "HTTP/1.1 404 Not Found\r\n");
    assert_int_equal(sw_httpd_conns(fx.srv), 0);
    fixture_end(&fx);
}

/* Idle clients, a client dribbling its headers forever and one that never
 * reads its answer hold no connection past their timeout; meanwhile
 * /metrics is answered at once and the ticks keep their pace. */
static void test_idle_and_slow_clients_closed(void **state)
{
    (void)state;
    struct sw_httpd_limits lim = {.request_timeout_ms = 300, .write_timeout_ms = 300};
    struct fixture fx;
    fixture_start(&fx, &lim);
    struct client *idle[8], *slow, *noread;
    for (size_t i = 0; i < 8; i++)
        idle[i] = client_start(&fx, NULL, 0);
    slow = client_start(&fx, NULL, 0);
    slow->slow = true;
    noread = client_get(&fx, "/big");
    noread->no_read = true;
    struct client *m[3];
    static const double at[3] = {100, 450, 800};
    for (size_t i = 0; i < 3; i++) {
        run_until(&fx, at[i]);
        m[i] = client_get(&fx, "/metrics");
        run_until_closed(&fx, m[i], 2000);
        assert_answered(m[i], "HTTP/1.1 200 OK\r\n");
        if (m[i]->eof_at - m[i]->conn_at > 150)
            fail_msg("/metrics took %.0f ms", m[i]->eof_at - m[i]->conn_at);
    }
    run_until(&fx, 1000);
    for (size_t i = 0; i < 8; i++)
        assert_closed_between(idle[i], 290, 900);
    assert_closed_between(slow, 290, 900);
    assert_true(slow->req_len >= 5); /* it was sending all along */
    /* The server is done with the reader: nothing is open. */
    assert_int_equal(sw_httpd_conns(fx.srv), 0);
    /* It reads now: what the kernel had buffered, then the close, short of
     * the whole answer. */
    noread->no_read = false;
    uv_read_start((uv_stream_t *)&noread->tcp, on_client_alloc, on_client_read);
    run_until_closed(&fx, noread, 3000);
    assert_true(noread->eof_at > 0);
    assert_true(noread->got < BIG_BODY);
    struct sw_httpd_stats st;
    sw_httpd_stats(fx.srv, &st);
    assert_int_equal(st.timed_out, 10);
    assert_ticks(&fx, 250);
    fixture_end(&fx);
}

/* Past the cap a connection is accepted and closed at once, unanswered;
 * once the idle ones time out, /metrics is answered again. */
static void test_connections_past_the_cap(void **state)
{
    (void)state;
    struct sw_httpd_limits lim = {
        .max_conns = 4, .request_timeout_ms = 400, .write_timeout_ms = 400};
    struct fixture fx;
    fixture_start(&fx, &lim);
    struct client *idle[4], *extra[3];
    for (size_t i = 0; i < 4; i++)
        idle[i] = client_start(&fx, NULL, 0);
    run_until(&fx, 100);
    assert_int_equal(sw_httpd_conns(fx.srv), 4);
    for (size_t i = 0; i < 3; i++)
        extra[i] = client_start(&fx, NULL, 0);
    struct client *m1 = client_get(&fx, "/metrics");
    run_until(&fx, 250);
    for (size_t i = 0; i < 3; i++) {
        assert_closed_between(extra[i], 100, 250);
        assert_int_equal(extra[i]->got, 0);
    }
    assert_closed_between(m1, 100, 250);
    assert_int_equal(m1->got, 0);
    assert_int_equal(sw_httpd_conns(fx.srv), 4);
    run_until(&fx, 600);
    for (size_t i = 0; i < 4; i++)
        assert_closed_between(idle[i], 390, 600);
    struct client *m2 = client_get(&fx, "/metrics");
    run_until_closed(&fx, m2, 2000);
    assert_answered(m2, "HTTP/1.1 200 OK\r\n");
    struct sw_httpd_stats st;
    sw_httpd_stats(fx.srv, &st);
    assert_int_equal(st.over_cap, 4);
    assert_int_equal(st.timed_out, 4);
    assert_ticks(&fx, 250);
    fixture_end(&fx);
}

/* A request of max_request bytes is answered; one byte more, or a request
 * that never ends, is answered 431 and closed. */
static void test_request_size_cap(void **state)
{
    (void)state;
    struct sw_httpd_limits lim = {.max_request = 1024};
    struct fixture fx;
    fixture_start(&fx, &lim);
    static char at[1024], over[1025], endless[3000];
    static const char head[] = "GET /metrics HTTP/1.1\r\nX-Pad: ";
    memset(at, 'a', sizeof(at));
    memcpy(at, head, sizeof(head) - 1);
    memcpy(at + sizeof(at) - 4, "\r\n\r\n", 4);
    memset(over, 'a', sizeof(over));
    memcpy(over, head, sizeof(head) - 1);
    memcpy(over + sizeof(over) - 4, "\r\n\r\n", 4);
    memset(endless, 'a', sizeof(endless));
    memcpy(endless, head, sizeof(head) - 1);
    struct client *a = client_start(&fx, at, sizeof(at));
    struct client *o = client_start(&fx, over, sizeof(over));
    struct client *e = client_start(&fx, endless, sizeof(endless));
    run_until_closed(&fx, a, 2000);
    run_until_closed(&fx, o, 2000);
    run_until_closed(&fx, e, 2000);
    assert_answered(a, "HTTP/1.1 200 OK\r\n");
    assert_answered(o, "HTTP/1.1 431 Request Header Fields Too Large\r\n");
    assert_answered(e, "HTTP/1.1 431 Request Header Fields Too Large\r\n");
    struct sw_httpd_stats st;
    sw_httpd_stats(fx.srv, &st);
    assert_int_equal(st.too_large, 2);
    /* The 431s' connections end when their clients close. */
    run_until_no_conns(&fx, 1000);
    assert_int_equal(sw_httpd_conns(fx.srv), 0);
    assert_int_equal(st.timed_out, 0);
    fixture_end(&fx);
}

static void test_bad_listen(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct sw_httpd *s = (struct sw_httpd *)&loop;
    struct sw_error err = {0};
    assert_int_equal(sw_httpd_start(&loop, "localhost", NULL, handler, NULL, &s, &err), SW_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.msg, "listen \"localhost\""));
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    memset(big, 'x', sizeof(big));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_idle_and_slow_clients_closed),
        cmocka_unit_test(test_connections_past_the_cap),
        cmocka_unit_test(test_request_size_cap),
        cmocka_unit_test(test_bad_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
