/*
 * http.c - libcurl multi driven by libuv.
 *
 * curl tells us which sockets to watch (socket callback) and when to wake
 * (timer callback); libuv tells curl when a socket is ready or the timer
 * fired, through curl_multi_socket_action. Finished transfers are collected
 * with curl_multi_info_read and reported to their callers.
 */
#include "net/http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/assert.h"

struct sw_http {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;    /* curl's timeout */
    uv_timer_t deferred; /* reports canceled calls from the loop */
    struct sw_http_call *calls;
    size_t pending;
    int open_handles; /* uv handles not yet closed */
    int freeing;
};

struct sw_http_call {
    struct sw_http *h;
    CURL *easy;
    struct curl_slist *headers;
    struct sw_http_request req;
    sw_http_done_cb done;
    void *ctx;
    size_t upload_off;
    int too_big;
    int aborted_by_reader;
    int canceled;
    int in_multi;
    struct sw_http_response resp;
    struct sw_http_call *prev, *next;
};

struct sock_ctx {
    uv_poll_t poll;
    curl_socket_t fd;
    struct sw_http *h;
};

int sw_http_curl_error(CURLcode code)
{
    switch (code) {
    case CURLE_OK:
        return 0;
    case CURLE_OUT_OF_MEMORY:
        return SW_ENOMEM;
    case CURLE_OPERATION_TIMEDOUT:
        return SW_ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SEND_FAIL_REWIND:
        return SW_ENET;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED:
        return SW_ETLS;
    case CURLE_ABORTED_BY_CALLBACK:
        return SW_ECANCELED;
    case CURLE_FILESIZE_EXCEEDED:
        return SW_ETOOBIG;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_BAD_FUNCTION_ARGUMENT:
        return SW_EINVAL;
    default:
        return SW_EIO;
    }
}

/* ---- handle lifetime ---------------------------------------------------- */

static void maybe_release(struct sw_http *h)
{
    if (h->freeing && h->open_handles == 0)
        sw_free(h);
}

static void on_handle_closed(uv_handle_t *handle)
{
    struct sw_http *h = handle->data;
    h->open_handles--;
    maybe_release(h);
}

static void on_sock_closed(uv_handle_t *handle)
{
    struct sock_ctx *sc = handle->data;
    struct sw_http *h = sc->h;
    sw_free(sc);
    h->open_handles--;
    maybe_release(h);
}

/* ---- call bookkeeping --------------------------------------------------- */

static void link_call(struct sw_http *h, struct sw_http_call *c)
{
    c->prev = NULL;
    c->next = h->calls;
    if (h->calls)
        h->calls->prev = c;
    h->calls = c;
    h->pending++;
}

static void unlink_call(struct sw_http *h, struct sw_http_call *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        h->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->pending--;
}

static void parse_retry_after(struct sw_http_response *r)
{
    char v[64];
    r->retry_after_s = -1;
    if (sw_http_header(r, "Retry-After", v, sizeof(v)) != 0)
        return;
    char *end = NULL;
    long s = strtol(v, &end, 10);
    if (end != v && s >= 0)
        r->retry_after_s = s;
}

/* Reports the end of a call and frees it. */
static void finish_call(struct sw_http_call *c, CURLcode code)
{
    struct sw_http *h = c->h;
    if (c->in_multi) {
        curl_multi_remove_handle(h->multi, c->easy);
        c->in_multi = 0;
    }
    unlink_call(h, c);
    struct sw_http_response *r = &c->resp;
    if (c->canceled || c->aborted_by_reader) {
        r->rc = SW_ECANCELED;
        if (r->error[0] == '\0')
            strcpy(r->error, "canceled");
    } else if (c->too_big) {
        r->rc = SW_ETOOBIG;
        snprintf(r->error, sizeof(r->error), "response body exceeds its limit of %zu bytes",
                 c->req.max_body);
    } else {
        r->rc = sw_http_curl_error(code);
        if (code != CURLE_OK && r->error[0] == '\0')
            snprintf(r->error, sizeof(r->error), "%s", curl_easy_strerror(code));
    }
    if (code == CURLE_OK || r->status == 0)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (curl_easy_getinfo(c->easy, CURLINFO_HTTP_VERSION, &r->http_version) != CURLE_OK)
        r->http_version = 0;
    if (curl_easy_getinfo(c->easy, CURLINFO_NUM_CONNECTS, &r->new_connects) != CURLE_OK)
        r->new_connects = 0;
    parse_retry_after(r);
    c->done(c, r, c->ctx);
    curl_easy_cleanup(c->easy);
    curl_slist_free_all(c->headers);
    sw_buf_free(&r->body);
    sw_buf_free(&r->headers);
    sw_free(c);
}

static void check_multi_info(struct sw_http *h)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct sw_http_call *c = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
        sw_assert(c != NULL);
        finish_call(c, msg->data.result);
    }
}

/* ---- libuv <-> curl glue ------------------------------------------------ */

static void on_poll(uv_poll_t *poll, int status, int events)
{
    struct sock_ctx *sc = poll->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    struct sw_http *h = sc->h;
    curl_multi_socket_action(h->multi, sc->fd, flags, &running);
    check_multi_info(h);
}

static void on_timer(uv_timer_t *t)
{
    struct sw_http *h = t->data;
    int running;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info(h);
}

static int start_timeout(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct sw_http *h = userp;
    if (timeout_ms < 0) {
        uv_timer_stop(&h->timer);
        return 0;
    }
    /* A zero timeout still goes through the loop, so that no transfer and
     * no callback ever runs from inside sw_http_send. */
    uv_timer_start(&h->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

static int handle_socket(CURL *easy, curl_socket_t s, int action, void *userp, void *socketp)
{
    (void)easy;
    struct sw_http *h = userp;
    struct sock_ctx *sc = socketp;
    if (action == CURL_POLL_REMOVE) {
        if (sc != NULL) {
            uv_poll_stop(&sc->poll);
            curl_multi_assign(h->multi, s, NULL);
            uv_close((uv_handle_t *)&sc->poll, on_sock_closed);
        }
        return 0;
    }
    if (sc == NULL) {
        sc = sw_calloc(1, sizeof(*sc));
        if (sc == NULL)
            return -1;
        sc->fd = s;
        sc->h = h;
        if (uv_poll_init_socket(h->loop, &sc->poll, s) != 0) {
            sw_free(sc);
            return -1;
        }
        sc->poll.data = sc;
        h->open_handles++;
        curl_multi_assign(h->multi, s, sc);
    }
    int events = 0;
    if (action != CURL_POLL_OUT)
        events |= UV_READABLE;
    if (action != CURL_POLL_IN)
        events |= UV_WRITABLE;
    uv_poll_start(&sc->poll, events, on_poll);
    return 0;
}

/* ---- per-transfer callbacks --------------------------------------------- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userp)
{
    struct sw_http_call *c = userp;
    size_t n = size * nmemb;
    if (c->canceled)
        return 0;
    if (c->req.on_data != NULL) {
        if (c->req.on_data(ptr, n, c->ctx) != 0) {
            c->aborted_by_reader = 1;
            return 0;
        }
        return n;
    }
    int rc = sw_buf_add(&c->resp.body, ptr, n);
    if (rc == SW_ETOOBIG) {
        c->too_big = 1;
        return 0;
    }
    return rc == 0 ? n : 0;
}

long sw_http_call_status(const struct sw_http_call *call)
{
    long status = 0;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userp)
{
    struct sw_http_call *c = userp;
    size_t n = size * nmemb;
    /* A new status line (after a 100 Continue or a redirect) starts over. */
    if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
        sw_buf_reset(&c->resp.headers);
        return n;
    }
    size_t len = n;
    while (len > 0 && (ptr[len - 1] == '\r' || ptr[len - 1] == '\n'))
        len--;
    if (len == 0)
        return n;
    if (sw_buf_add(&c->resp.headers, ptr, len) != 0 || sw_buf_add(&c->resp.headers, "\n", 1) != 0)
        return 0;
    return n;
}

static size_t on_read(char *dst, size_t size, size_t nmemb, void *userp)
{
    struct sw_http_call *c = userp;
    size_t room = size * nmemb;
    if (c->canceled)
        return CURL_READFUNC_ABORT;
    if (c->req.body != NULL) {
        size_t left = c->req.body_len - c->upload_off;
        size_t n = left < room ? left : room;
        memcpy(dst, (const char *)c->req.body + c->upload_off, n);
        c->upload_off += n;
        return n;
    }
    return c->req.on_read(dst, room, c->ctx);
}

/* curl rewinds an upload when it must send it again (a reused connection
 * that turned out dead, a redirect, an auth retry). In-memory bodies can
 * always rewind; streamed ones cannot. */
static int on_seek(void *userp, curl_off_t offset, int origin)
{
    struct sw_http_call *c = userp;
    if (c->req.body == NULL || origin != SEEK_SET || offset < 0 || (size_t)offset > c->req.body_len)
        return CURL_SEEKFUNC_CANTSEEK;
    c->upload_off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* ---- public API --------------------------------------------------------- */

int sw_http_header(const struct sw_http_response *resp, const char *name, char *out, size_t outlen)
{
    int found = SW_ENOENT;
    size_t nlen = strlen(name);
    const char *p = resp->headers.data;
    if (p == NULL || outlen == 0)
        return SW_ENOENT;
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t llen = eol ? (size_t)(eol - p) : strlen(p);
        if (llen > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen + 1;
            const char *end = p + llen;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            size_t vlen = (size_t)(end - v);
            if (vlen >= outlen)
                vlen = outlen - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            found = 0;
        }
        p += llen;
        if (*p == '\n')
            p++;
    }
    return found;
}

int sw_http_new(uv_loop_t *loop, struct sw_http **out)
{
    static int global_done;
    if (!global_done) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return SW_EIO;
        global_done = 1;
    }
    struct sw_http *h = sw_calloc(1, sizeof(*h));
    if (h == NULL)
        return SW_ENOMEM;
    h->loop = loop;
    h->multi = curl_multi_init();
    if (h->multi == NULL) {
        sw_free(h);
        return SW_ENOMEM;
    }
    uv_timer_init(loop, &h->timer);
    h->timer.data = h;
    uv_timer_init(loop, &h->deferred);
    h->deferred.data = h;
    h->open_handles = 2;
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, handle_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, start_timeout);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    *out = h;
    return 0;
}

size_t sw_http_pending(const struct sw_http *h)
{
    return h->pending;
}

static int has_header(const struct curl_slist *l, const char *name)
{
    size_t n = strlen(name);
    for (; l != NULL; l = l->next)
        if (strncasecmp(l->data, name, n) == 0 && l->data[n] == ':')
            return 1;
    return 0;
}

static int setup_easy(struct sw_http_call *c)
{
    const struct sw_http_request *req = &c->req;
    CURL *e = c->easy;
    const char *method = req->method ? req->method : "GET";
    int upload = req->body != NULL || req->on_read != NULL;

    for (const struct curl_slist *l = req->headers; l != NULL; l = l->next) {
        struct curl_slist *n = curl_slist_append(c->headers, l->data);
        if (n == NULL)
            return SW_ENOMEM;
        c->headers = n;
    }
    /* Uploads go out at once instead of waiting up to a second for a
     * "100 Continue" that many servers never send. */
    if (upload && !has_header(c->headers, "Expect")) {
        struct curl_slist *n = curl_slist_append(c->headers, "Expect:");
        if (n == NULL)
            return SW_ENOMEM;
        c->headers = n;
    }

    curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, c);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->resp.error);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 10000L);
    if (req->timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    if (req->low_speed_time_s > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, req->low_speed_time_s);
    }
    /* Keep the protocol to what spillway speaks. */
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");

    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (upload) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, c);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, c);
        curl_off_t len = req->body != NULL ? (curl_off_t)req->body_len : req->upload_len;
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, len);
        if (strcmp(method, "PUT") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
            strcmp(method, "PATCH") == 0) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        }
    }
    if (req->configure != NULL)
        return req->configure(e, req->configure_ctx);
    return 0;
}

static void on_deferred(uv_timer_t *t)
{
    struct sw_http *h = t->data;
    struct sw_http_call *c = h->calls;
    while (c != NULL) {
        struct sw_http_call *next = c->next;
        if (c->canceled)
            finish_call(c, CURLE_ABORTED_BY_CALLBACK);
        c = next;
    }
}

int sw_http_send(struct sw_http *h, const struct sw_http_request *req, sw_http_done_cb done,
                 void *ctx, struct sw_http_call **out)
{
    if (req == NULL || req->url == NULL || done == NULL || h->freeing)
        return SW_EINVAL;
    struct sw_http_call *c = sw_calloc(1, sizeof(*c));
    if (c == NULL)
        return SW_ENOMEM;
    c->h = h;
    c->req = *req;
    c->req.headers = NULL;
    if (c->req.max_body == 0)
        c->req.max_body = SW_HTTP_DEFAULT_MAX_BODY;
    c->done = done;
    c->ctx = ctx;
    c->resp.retry_after_s = -1;
    sw_buf_init(&c->resp.body, c->req.max_body);
    if (req->sensitive)
        sw_buf_set_wipe(&c->resp.body);
    sw_buf_init(&c->resp.headers, 256 * 1024);
    c->easy = curl_easy_init();
    if (c->easy == NULL) {
        sw_free(c);
        return SW_ENOMEM;
    }
    c->req.headers = req->headers; /* for setup_easy to copy */
    int rc = setup_easy(c);
    c->req.headers = NULL;
    if (rc == 0 && curl_multi_add_handle(h->multi, c->easy) != CURLM_OK)
        rc = SW_ENOMEM;
    if (rc != 0) {
        curl_easy_cleanup(c->easy);
        curl_slist_free_all(c->headers);
        sw_buf_free(&c->resp.body);
        sw_buf_free(&c->resp.headers);
        sw_free(c);
        return rc;
    }
    c->in_multi = 1;
    link_call(h, c);
    if (out != NULL)
        *out = c;
    return 0;
}

void sw_http_cancel(struct sw_http_call *call)
{
    if (call->canceled)
        return;
    call->canceled = 1;
    if (call->in_multi) {
        curl_multi_remove_handle(call->h->multi, call->easy);
        call->in_multi = 0;
    }
    uv_timer_start(&call->h->deferred, on_deferred, 0, 0);
}

void sw_http_free(struct sw_http *h)
{
    if (h == NULL)
        return;
    while (h->calls != NULL) {
        h->calls->canceled = 1;
        finish_call(h->calls, CURLE_ABORTED_BY_CALLBACK);
    }
    h->freeing = 1;
    /* Cleaning up the multi handle makes curl close its sockets, which
     * closes our poll handles through handle_socket. */
    curl_multi_cleanup(h->multi);
    h->multi = NULL;
    uv_timer_stop(&h->timer);
    uv_timer_stop(&h->deferred);
    uv_close((uv_handle_t *)&h->timer, on_handle_closed);
    uv_close((uv_handle_t *)&h->deferred, on_handle_closed);
}

/* ---- blocking convenience ----------------------------------------------- */

struct sync_ctx {
    struct sw_http_response *out;
};

static void on_sync_done(struct sw_http_call *call, struct sw_http_response *resp, void *ctx)
{
    (void)call;
    struct sync_ctx *s = ctx;
    struct sw_http_response *o = s->out;
    o->rc = resp->rc;
    o->status = resp->status;
    o->retry_after_s = resp->retry_after_s;
    o->http_version = resp->http_version;
    o->new_connects = resp->new_connects;
    memcpy(o->error, resp->error, sizeof(o->error));
    /* Take the buffers; the library frees the (now empty) originals. */
    o->body = resp->body;
    o->headers = resp->headers;
    sw_buf_init(&resp->body, 0);
    sw_buf_init(&resp->headers, 0);
}

int sw_http_do(const struct sw_http_request *req, struct sw_http_response *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->retry_after_s = -1;
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return resp->rc = SW_EIO;
    struct sw_http *h;
    int rc = sw_http_new(&loop, &h);
    if (rc != 0) {
        uv_loop_close(&loop);
        return resp->rc = rc;
    }
    struct sync_ctx s = {resp};
    rc = sw_http_send(h, req, on_sync_done, &s, NULL);
    if (rc != 0)
        resp->rc = rc;
    else
        uv_run(&loop, UV_RUN_DEFAULT);
    sw_http_free(h);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return resp->rc;
}

void sw_http_response_free(struct sw_http_response *resp)
{
    sw_buf_free(&resp->body);
    sw_buf_free(&resp->headers);
}
