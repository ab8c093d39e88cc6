/*
 * rest.c - the Kubernetes REST client over net/http.
 *
 * A request (struct sw_kube_op) goes through: the rate limiter (a timer
 * when it must wait), the credential (an exec plugin run when the cached
 * one is missing or expired; requests wait in a list meanwhile), the HTTP
 * call, then retry or completion. Every op owns a uv timer, so it is freed
 * from the timer's close callback, after the user's callback has run.
 */
#include "clusters/rest.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/exec.h"
#include "clusters/listsplit.h"
#include "clusters/ratelimit.h"
#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"

struct sw_kube_client {
    uv_loop_t *loop;
    struct sw_http *http;
    struct sw_kube_target *t;
    char *name;
    struct sw_kube_opts opts;
    struct sw_ratelimit rl;
    char *base;                    /* server URL without trailing '/', host per tls-server-name */
    struct curl_slist *connect_to; /* for tls-server-name */
    char auth_header[8192];        /* "Authorization: Bearer ..." or "" */
    /* exec plugin credential */
    struct sw_exec_cred cred;
    int have_cred;
    int exec_running;
    struct sw_kube_op *waiting; /* ops waiting for the credential */
    /* tokenFile: when it was last read (monotonic ms; -1 never), the file's
     * stamp then, and when it was last stat'ed. */
    int64_t token_read_ms;
    struct sw_file_stamp token_stamp;
    int64_t token_checked_ms;
    int token_warned;
    struct sw_kube_op *ops; /* all live ops */
    size_t nops;
    uint64_t sent;
    struct sw_kube_code_count codes[SW_KUBE_MAX_CODES]; /* responses by status */
    size_t ncodes;
    uint64_t rl_wait_ms; /* waited for the rate limit, in all */
    uint64_t rl_delayed; /* requests that waited */
    int freeing;
    uint64_t rng;
    char blocked[200]; /* "" or why no request may be sent (sw_kube_client_block) */
};

enum op_state { OP_DELAY, OP_WAIT_CRED, OP_HTTP, OP_DONE };

struct sw_kube_op {
    struct sw_kube_client *c;
    struct sw_kube_req req; /* strings point into owned copies below */
    char *path;
    char *method;
    char *content_type;
    char *body;
    sw_kube_cb cb;
    void *ctx;
    uv_timer_t timer;
    struct sw_http_call *call;
    enum op_state state;
    int attempt;
    int auth_retried;
    int canceled;
    int blocked; /* cut off by sw_kube_client_block */
    struct sw_kube_result res;
    sw_http_data_cb user_on_data;
    void *user_on_data_ctx;
    /* on_item: the List split as it arrives, or a non-2xx answer's body */
    struct sw_list_splitter *split;
    struct sw_buf errbody;
    size_t delivered; /* items handed over (no retry after the first) */
    int split_rc;     /* the splitter or an item's parser stopped the transfer */
    struct sw_error split_err;
    struct sw_kube_op *next, *prev; /* in c->ops */
    struct sw_kube_op *wnext;       /* in c->waiting */
};

static const struct sw_clock *clock_of(const struct sw_kube_client *c)
{
    return c->opts.clock ? c->opts.clock : sw_clock_system();
}

void sw_kube_opts_default(struct sw_kube_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->name = "cluster";
    o->qps = SW_REST_DEFAULT_QPS;
    o->burst = SW_REST_DEFAULT_BURST;
    o->max_retries = SW_REST_DEFAULT_RETRIES;
    o->backoff_ms = SW_REST_DEFAULT_BACKOFF_MS;
    o->backoff_cap_ms = SW_REST_DEFAULT_BACKOFF_CAP;
    o->max_body = SW_KUBE_DEFAULT_MAX_BODY;
    o->timeout_ms = SW_KUBE_DEFAULT_TIMEOUT_MS;
}

const char *sw_kube_client_name(const struct sw_kube_client *c)
{
    return c->name;
}

const struct sw_kube_target *sw_kube_client_target(const struct sw_kube_client *c)
{
    return c->t;
}

uv_loop_t *sw__kube_client_loop(struct sw_kube_client *c)
{
    return c->loop;
}

uint64_t sw_kube_client_sent(const struct sw_kube_client *c)
{
    return c->sent;
}

size_t sw_kube_client_responses(const struct sw_kube_client *c, struct sw_kube_code_count *out,
                                size_t cap)
{
    size_t n = c->ncodes < cap ? c->ncodes : cap;
    memcpy(out, c->codes, n * sizeof(*out));
    return n;
}

void sw_kube_client_ratelimit_wait(const struct sw_kube_client *c, uint64_t *wait_ms,
                                   uint64_t *delayed)
{
    *wait_ms = c->rl_wait_ms;
    *delayed = c->rl_delayed;
}

bool sw_kube_client_spare(const struct sw_kube_client *c)
{
    double t = sw_ratelimit_tokens(&c->rl, sw_mono_ms(clock_of(c)));
    return t >= 1 && t >= c->rl.burst - c->rl.burst / 10;
}

/* Counts a response by status; the last slot takes every status once the
 * others are used (code -1). */
static void count_response(struct sw_kube_client *c, long status)
{
    int code = status > 0 && status < 1000 ? (int)status : 0;
    size_t i;
    for (i = 0; i < c->ncodes; i++)
        if (c->codes[i].code == code)
            break;
    if (i == c->ncodes) {
        if (c->ncodes >= SW_KUBE_MAX_CODES - 1) {
            for (i = 0; i < c->ncodes && c->codes[i].code != -1; i++)
                ;
            if (i == c->ncodes)
                c->codes[c->ncodes++].code = -1;
        } else {
            c->codes[c->ncodes++].code = code;
        }
    }
    c->codes[i].n++;
}

/* ---- setup -------------------------------------------------------------- */

/* Splits "https://host:port/prefix" into its parts; host may be [v6]. */
static int split_server(const char *url, const char **scheme_end, const char **host,
                        size_t *host_len, long *port, const char **rest)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return -1;
    *scheme_end = p + 3;
    const char *h = p + 3;
    const char *e;
    if (*h == '[') {
        e = strchr(h, ']');
        if (e == NULL)
            return -1;
        e++;
    } else {
        e = h + strcspn(h, ":/");
    }
    *host = h;
    *host_len = (size_t)(e - h);
    *port = strncmp(url, "https", 5) == 0 ? 443 : 80;
    if (*e == ':') {
        char *end;
        *port = strtol(e + 1, &end, 10);
        if (end == e + 1 || *port <= 0 || *port > 65535)
            return -1;
        e = end;
    }
    *rest = e;
    return *host_len > 0 ? 0 : -1;
}

static int setup_base(struct sw_kube_client *c, struct sw_error *err)
{
    const char *se, *host, *rest;
    size_t hl;
    long port;
    if (split_server(c->t->server, &se, &host, &hl, &port, &rest) != 0)
        return sw_error_set(err, SW_EINVAL,
                            "kubeconfig \"%s\": context \"%s\": field \"server\": "
                            "expected scheme://host[:port][/path], got \"%.100s\"",
                            c->t->source, c->t->context, c->t->server);
    size_t rl = strlen(rest);
    while (rl > 0 && rest[rl - 1] == '/')
        rl--;
    const char *use_host = host;
    size_t use_hl = hl;
    if (c->t->tls_server_name != NULL && c->t->tls_server_name[0] != '\0') {
        /* Ask curl for the TLS name and connect to the real address: the
         * certificate is checked against tls-server-name, as client-go does. */
        use_host = c->t->tls_server_name;
        use_hl = strlen(use_host);
        char map[600];
        snprintf(map, sizeof(map), "%s:%ld:%.*s:%ld", c->t->tls_server_name, port, (int)hl, host,
                 port);
        c->connect_to = curl_slist_append(NULL, map);
        if (c->connect_to == NULL)
            return sw_error_set(err, SW_ENOMEM, "cluster %s: out of memory", c->name);
    }
    size_t n = (size_t)(se - c->t->server) + use_hl + 16 + rl + 1;
    c->base = sw_malloc(n);
    if (c->base == NULL)
        return sw_error_set(err, SW_ENOMEM, "cluster %s: out of memory", c->name);
    snprintf(c->base, n, "%.*s%.*s:%ld%.*s", (int)(se - c->t->server), c->t->server, (int)use_hl,
             use_host, port, (int)rl, rest);
    return 0;
}

static void set_bearer(struct sw_kube_client *c, const char *token)
{
    if (token == NULL || token[0] == '\0') {
        c->auth_header[0] = '\0';
        return;
    }
    snprintf(c->auth_header, sizeof(c->auth_header), "Authorization: Bearer %s", token);
}

/*
 * A tokenFile is read when the client starts, again when its stamp changes (stat'ed at most once a
 * second, before a request), at least every SW_TOKEN_FILE_MAX_AGE_MS, and
 * at once after a 401 (`force`). The last token read wins over one the
 * kubeconfig held inline, as in client-go. A file that cannot be read
 * leaves the current token in place; the failure is logged once until a
 * read succeeds again, naming the file, never the token.
 */
static void refresh_token_file(struct sw_kube_client *c, int force)
{
    if (c->t->token_file == NULL || c->t->exec != NULL)
        return;
    int64_t now = sw_mono_ms(clock_of(c));
    if (!force && c->token_read_ms >= 0 && now - c->token_checked_ms < 1000)
        return;
    c->token_checked_ms = now;
    struct sw_file_stamp st;
    int have = sw_file_stamp_get(c->t->token_file, &st) == 0;
    if (!force && !sw_token_file_due(&c->token_stamp, c->token_read_ms, have ? &st : NULL, now))
        return;
    char *tok = NULL;
    size_t n = 0;
    struct sw_error e;
    if (sw_read_file(c->t->token_file, 16384, "tokenFile", &tok, &n, &e) != 0 ||
        n + 32 > sizeof(c->auth_header)) {
        if (!c->token_warned)
            SW_LOG(SW_LOG_WARN, "cannot read the token file; keeping the current token",
                   "cluster=%s file=%s err=%s", sw_log_q(c->name), sw_log_q(c->t->token_file),
                   sw_log_q(tok == NULL ? e.msg : "too long"));
        c->token_warned = 1;
        if (tok != NULL) {
            memset(tok, 0, n);
            sw_free(tok);
        }
        c->token_read_ms = now; /* try again after the file changes or a while */
        if (have)
            c->token_stamp = st;
        return;
    }
    while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
        tok[--n] = '\0';
    if (n > 0)
        set_bearer(c, tok);
    memset(tok, 0, n);
    sw_free(tok);
    if (c->token_read_ms >= 0)
        SW_LOG(SW_LOG_DEBUG, "token file read again", "cluster=%s file=%s", sw_log_q(c->name),
               sw_log_q(c->t->token_file));
    c->token_warned = 0;
    c->token_read_ms = now;
    if (have)
        c->token_stamp = st;
}

int sw_kube_client_new(uv_loop_t *loop, struct sw_http *http, struct sw_kube_target *target,
                       const struct sw_kube_opts *opts, struct sw_kube_client **out,
                       struct sw_error *err)
{
    struct sw_kube_client *c = sw_calloc(1, sizeof(*c));
    if (c == NULL) {
        sw_kube_target_free(target);
        return sw_error_set(err, SW_ENOMEM, "kube client: out of memory");
    }
    c->loop = loop;
    c->http = http;
    c->t = target;
    if (opts != NULL)
        c->opts = *opts;
    else
        sw_kube_opts_default(&c->opts);
    c->name = sw_strdup(c->opts.name ? c->opts.name : "cluster");
    c->opts.name = c->name;
    c->opts.user_agent = NULL;
    if (c->opts.max_body == 0)
        c->opts.max_body = SW_KUBE_DEFAULT_MAX_BODY;
    int rc = c->name ? setup_base(c, err) : sw_error_set(err, SW_ENOMEM, "out of memory");
    if (target->token != NULL && strlen(target->token) > sizeof(c->auth_header) - 32)
        rc = sw_error_set(err, SW_ETOOBIG,
                          "kubeconfig \"%s\": user \"%s\": field \"token\": "
                          "longer than %zu bytes",
                          target->source, target->user, sizeof(c->auth_header) - 32);
    if (rc != 0) {
        curl_slist_free_all(c->connect_to);
        sw_free(c->base);
        sw_free(c->name);
        sw_kube_target_free(target);
        sw_free(c);
        return rc;
    }
    set_bearer(c, target->token);
    c->token_read_ms = -1;
    refresh_token_file(c, 0);
    sw_ratelimit_init(&c->rl, c->opts.qps, c->opts.burst, sw_mono_ms(clock_of(c)));
    c->rng = (uint64_t)sw_mono_ms(sw_clock_system()) * 6364136223846793005ULL + 1;
    *out = c;
    return 0;
}

static void maybe_release(struct sw_kube_client *c)
{
    if (!c->freeing || c->nops > 0 || c->exec_running)
        return;
    sw_exec_cred_clear(&c->cred);
    memset(c->auth_header, 0, sizeof(c->auth_header));
    curl_slist_free_all(c->connect_to);
    sw_free(c->base);
    sw_free(c->name);
    sw_kube_target_free(c->t);
    sw_free(c);
}

/* ---- op lifetime -------------------------------------------------------- */

static void op_closed(uv_handle_t *h)
{
    struct sw_kube_op *op = h->data;
    struct sw_kube_client *c = op->c;
    if (op->prev)
        op->prev->next = op->next;
    else
        c->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    c->nops--;
    if (op->req.sensitive) {
        sw_json_delete_wiped(op->res.body);
        sw_wipe(op->body, op->req.body_len);
    } else {
        cJSON_Delete(op->res.body);
    }
    sw_free(op->path);
    sw_free(op->method);
    sw_free(op->content_type);
    sw_free(op->body);
    sw_list_splitter_free(op->split);
    sw_buf_free(&op->errbody);
    sw_free(op);
    maybe_release(c);
}

/* Reports the result and starts freeing the op. */
static void op_finish(struct sw_kube_op *op)
{
    op->state = OP_DONE;
    op->call = NULL;
    uv_timer_stop(&op->timer);
    if (op->cb != NULL)
        op->cb(&op->res, op->ctx);
    uv_close((uv_handle_t *)&op->timer, op_closed);
}

static void op_fail(struct sw_kube_op *op, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void op_fail(struct sw_kube_op *op, int rc, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    op->res.rc = rc;
    op->res.reason = "";
    sw_error_set(&op->res.err, rc, "cluster %s: %s %s: %s", op->c->name, op->method, op->path, msg);
    op_finish(op);
}

/* ---- sending ------------------------------------------------------------ */

static void dispatch(struct sw_kube_op *op);
static void on_timer(uv_timer_t *t);

static int configure(CURL *e, void *ctx)
{
    struct sw_kube_op *op = ctx;
    struct sw_kube_client *c = op->c;
    const struct sw_kube_target *t = c->t;
    if (t->ca_data != NULL) {
        struct curl_blob b = {t->ca_data, t->ca_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    }
    if (t->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    const unsigned char *cert = t->client_cert_data, *key = t->client_key_data;
    size_t cert_len = t->client_cert_len, key_len = t->client_key_len;
    if (c->have_cred && c->cred.cert != NULL) {
        cert = c->cred.cert;
        cert_len = c->cred.cert_len;
        key = c->cred.key;
        key_len = c->cred.key_len;
    }
    if (cert != NULL && key != NULL) {
        struct curl_blob cb = {(void *)cert, cert_len, CURL_BLOB_COPY};
        struct curl_blob kb = {(void *)key, key_len, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (t->username != NULL && c->auth_header[0] == '\0') {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, t->username);
        curl_easy_setopt(e, CURLOPT_PASSWORD, t->password ? t->password : "");
    }
    if (t->proxy_url != NULL) {
        curl_easy_setopt(e, CURLOPT_PROXY, t->proxy_url);
        /* The kubeconfig's proxy applies to its server whatever NO_PROXY
         * says, as in client-go (http.ProxyURL); without proxy-url, curl
         * reads HTTPS_PROXY and NO_PROXY as client-go's
         * ProxyFromEnvironment does. */
        curl_easy_setopt(e, CURLOPT_NOPROXY, "");
    }
    if (c->connect_to != NULL)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "spillway/0.1");
    /* Kubernetes speaks gzip to clients that ask. */
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "gzip");
    return 0;
}

static const char *status_rc_reason(long status, int *rc)
{
    switch (status) {
    case 400:
        *rc = SW_EINVAL;
        return "BadRequest";
    case 401:
        *rc = SW_EAUTH;
        return "Unauthorized";
    case 403:
        *rc = SW_EFORBIDDEN;
        return "Forbidden";
    case 404:
        *rc = SW_ENOENT;
        return "NotFound";
    case 409:
        *rc = SW_ECONFLICT;
        return "Conflict";
    case 410:
        *rc = SW_EGONE;
        return "Gone";
    case 413:
        *rc = SW_ETOOBIG;
        return "RequestEntityTooLarge";
    case 422:
        *rc = SW_EINVAL;
        return "Invalid";
    case 429:
        *rc = SW_EUNAVAIL;
        return "TooManyRequests";
    case 503:
        *rc = SW_EUNAVAIL;
        return "ServiceUnavailable";
    case 504:
        *rc = SW_ETIMEDOUT;
        return "Timeout";
    default:
        *rc = SW_EHTTP;
        return "";
    }
}

static double next_jitter(struct sw_kube_client *c)
{
    c->rng = c->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(c->rng >> 11) / 9007199254740992.0;
}

static void on_done(struct sw_http_call *call, struct sw_http_response *resp, void *ctx)
{
    (void)call;
    struct sw_kube_op *op = ctx;
    struct sw_kube_client *c = op->c;
    op->call = NULL;
    op->res.http_version = resp->http_version;
    op->res.new_connects += resp->new_connects;
    if (!op->blocked && !op->canceled && resp->rc != SW_ECANCELED)
        count_response(c, resp->status);
    if (op->blocked) {
        op_fail(op, SW_EUNAVAIL, "cut off: %s", c->blocked[0] ? c->blocked : "blocked");
        return;
    }
    if (op->split_rc != 0 && !op->canceled) {
        op->res.status = resp->status;
        op->res.rc = op->split_rc;
        op->res.err = op->split_err;
        op_finish(op);
        return;
    }
    if (op->canceled || resp->rc == SW_ECANCELED) {
        op_fail(op, SW_ECANCELED, "canceled");
        return;
    }
    int splitting = op->req.on_item != NULL;
    /* A split List streams, but can be sent again while nothing was handed over. */
    int streaming = op->req.on_data != NULL && (!splitting || op->delivered > 0);
    /* A 401 with a refreshable credential: refresh once and resend. */
    if (resp->status == 401 && !op->auth_retried && (c->t->exec != NULL || c->t->token_file)) {
        op->auth_retried = 1;
        if (c->t->exec != NULL) {
            sw_exec_cred_clear(&c->cred);
            c->have_cred = 0;
        }
        SW_LOG(SW_LOG_INFO, "credential refused, refreshing", "cluster=%s", sw_log_q(c->name));
        op->state = OP_DELAY;
        uv_timer_start(&op->timer, on_timer, 0, 0);
        return;
    }
    if (!op->req.no_retry && !streaming && op->attempt < c->opts.max_retries &&
        sw_should_retry(op->method, resp->rc, resp->status)) {
        int64_t d = sw_backoff_ms(op->attempt, c->opts.backoff_ms, c->opts.backoff_cap_ms,
                                  resp->retry_after_s, next_jitter(c));
        SW_LOG(SW_LOG_WARN, "retrying request",
               "cluster=%s method=%s status=%ld attempt=%d "
               "delay_ms=%lld",
               sw_log_q(c->name), op->method, resp->status, op->attempt + 1, (long long)d);
        op->attempt++;
        op->state = OP_DELAY;
        uv_timer_start(&op->timer, on_timer, (uint64_t)d, 0);
        return;
    }
    op->res.status = resp->status;
    op->res.reason = "";
    if (resp->rc != 0) {
        /* Transport failures name the server (and the TLS name it was
         * checked against): curl's text names only the host it verified. */
        const char *tsn = c->t->tls_server_name;
        int has_tsn = tsn != NULL && tsn[0] != '\0';
        op_fail(op, resp->rc, "server %s%s%s%s: %s", c->t->server,
                has_tsn ? " (tls-server-name " : "", has_tsn ? tsn : "", has_tsn ? ")" : "",
                resp->error[0] ? resp->error : sw_strerror(resp->rc));
        return;
    }
    const char *bdata = resp->body.data;
    size_t blen = resp->body.len;
    if (splitting && resp->status >= 200 && resp->status < 300) {
        /* The List without its items, which went to on_item. */
        struct sw_error serr;
        if (op->split == NULL || sw_list_splitter_finish(op->split, &bdata, &blen, &serr) != 0) {
            op->res.rc = op->split ? serr.code : SW_EPARSE;
            if (op->split)
                op->res.err = serr;
            else
                sw_error_set(&op->res.err, SW_EPARSE, "cluster %s: %s %s: empty response", c->name,
                             op->method, op->path);
            op_finish(op);
            return;
        }
    } else if (splitting) {
        bdata = op->errbody.data;
        blen = op->errbody.len;
    }
    op->res.raw = bdata ? bdata : "";
    op->res.raw_len = blen;
    if (blen > 0 && !op->req.raw) {
        struct sw_error perr;
        char what[300];
        snprintf(what, sizeof(what), "cluster %s: %s %s: response", c->name, op->method, op->path);
        if (sw_json_parse(bdata, blen, what, &op->res.body, &perr) != 0) {
            op->res.body = NULL;
            if (resp->status >= 200 && resp->status < 300) {
                op->res.rc = perr.code;
                op->res.err = perr;
                op_finish(op);
                return;
            }
        }
    }
    if (resp->status >= 200 && resp->status < 300) {
        op->res.rc = 0;
        op_finish(op);
        return;
    }
    int rc;
    const char *reason = status_rc_reason(resp->status, &rc);
    const char *msg = "";
    if (op->res.body != NULL) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(op->res.body, "reason");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(op->res.body, "message");
        if (cJSON_IsString(r) && r->valuestring[0] != '\0')
            reason = r->valuestring;
        if (cJSON_IsString(m))
            msg = m->valuestring;
    }
    if (strcmp(reason, "AlreadyExists") == 0)
        rc = SW_EEXIST;
    op->res.rc = rc;
    op->res.reason = reason;
    sw_error_set(&op->res.err, rc, "cluster %s: %s %s: %ld %s%s%.300s", c->name, op->method,
                 op->path, resp->status, reason, msg[0] ? ": " : "", msg);
    op_finish(op);
}

static int split_item(const char *item, size_t len, void *ctx, struct sw_error *err);

static void dispatch(struct sw_kube_op *op)
{
    struct sw_kube_client *c = op->c;
    refresh_token_file(c, 0);
    size_t ulen = strlen(c->base) + strlen(op->path) + 1;
    char *url = sw_malloc(ulen);
    if (url == NULL) {
        op_fail(op, SW_ENOMEM, "out of memory");
        return;
    }
    snprintf(url, ulen, "%s%s", c->base, op->path);
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    char ct[200];
    if (op->body != NULL && h != NULL) {
        snprintf(ct, sizeof(ct), "Content-Type: %s",
                 op->content_type ? op->content_type : "application/json");
        struct curl_slist *n = curl_slist_append(h, ct);
        h = n ? n : (curl_slist_free_all(h), NULL);
    }
    if (c->auth_header[0] != '\0' && h != NULL) {
        struct curl_slist *n = curl_slist_append(h, c->auth_header);
        h = n ? n : (curl_slist_free_all(h), NULL);
    }
    if (h == NULL) {
        sw_free(url);
        op_fail(op, SW_ENOMEM, "out of memory");
        return;
    }
    if (op->req.on_item != NULL) {
        /* Each attempt splits its own answer. */
        char what[300];
        snprintf(what, sizeof(what), "cluster %s: %s %s: response", c->name, op->method, op->path);
        sw_list_splitter_free(op->split);
        op->split = NULL;
        sw_buf_reset(&op->errbody);
        op->split_rc = 0;
        if (sw_list_splitter_new(what, 0, split_item, op, &op->split) != 0) {
            curl_slist_free_all(h);
            sw_free(url);
            op_fail(op, SW_ENOMEM, "out of memory");
            return;
        }
    }
    struct sw_http_request r = {0};
    r.method = op->method;
    r.url = url;
    r.headers = h;
    r.body = op->body;
    r.body_len = op->req.body_len;
    r.on_data = op->req.on_data;
    r.max_body = c->opts.max_body;
    r.timeout_ms = op->req.timeout_ms < 0   ? 0
                   : op->req.timeout_ms > 0 ? op->req.timeout_ms
                                            : c->opts.timeout_ms;
    r.low_speed_time_s = op->req.low_speed_time_s;
    r.configure = configure;
    r.configure_ctx = op;
    r.sensitive = op->req.sensitive;
    op->state = OP_HTTP;
    c->sent++;
    /* net/http hands on_data the call's ctx, which is the op; the op
     * forwards to the caller's streaming callback. */
    int rc = sw_http_send(c->http, &r, on_done, op, &op->call);
    /* The headers are copied by sw_http_send; the URL is copied by curl. */
    curl_slist_free_all(h);
    sw_free(url);
    if (rc != 0)
        op_fail(op, rc, "cannot start the request: %s", sw_strerror(rc));
}

/* ---- exec credentials --------------------------------------------------- */

static void resume_waiting(struct sw_kube_client *c, int rc, const struct sw_error *err)
{
    struct sw_kube_op *list = c->waiting;
    c->waiting = NULL;
    while (list != NULL) {
        struct sw_kube_op *op = list;
        list = op->wnext;
        op->wnext = NULL;
        if (op->canceled)
            op_fail(op, SW_ECANCELED, "canceled");
        else if (rc != 0) {
            op->res.rc = rc;
            op->res.reason = "";
            op->res.err = *err;
            sw_error_wrap(&op->res.err, "cluster %s", c->name);
            op_finish(op);
        } else
            dispatch(op);
    }
}

static void on_cred(int rc, struct sw_exec_cred *cred, const struct sw_error *err, void *ctx)
{
    struct sw_kube_client *c = ctx;
    c->exec_running = 0;
    if (rc == 0) {
        sw_exec_cred_clear(&c->cred);
        c->cred = *cred;
        memset(cred, 0, sizeof(*cred));
        c->have_cred = 1;
        set_bearer(c, c->cred.token);
        SW_LOG(SW_LOG_INFO, "exec credential obtained", "cluster=%s expires_ms=%lld",
               sw_log_q(c->name), (long long)c->cred.expiry_ms);
    } else {
        SW_LOG(SW_LOG_ERROR, "exec credential failed", "cluster=%s error=%s", sw_log_q(c->name),
               sw_log_q(err->msg));
    }
    resume_waiting(c, rc, err);
    maybe_release(c);
}

static int cred_valid(struct sw_kube_client *c)
{
    if (!c->have_cred)
        return 0;
    /* Refresh a little early so a request does not race the expiry. */
    return c->cred.expiry_ms == 0 || sw_now_ms(clock_of(c)) + 10000 < c->cred.expiry_ms;
}

static void on_timer(uv_timer_t *t)
{
    struct sw_kube_op *op = t->data;
    struct sw_kube_client *c = op->c;
    if (op->canceled) {
        op_fail(op, SW_ECANCELED, "canceled");
        return;
    }
    if (c->blocked[0]) {
        op_fail(op, SW_EUNAVAIL, "not sent: %s", c->blocked);
        return;
    }
    /* A 401: the token file may have been rotated (projected ServiceAccount
     * tokens); read it again before the one retry. */
    if (op->auth_retried == 1) {
        refresh_token_file(c, 1);
        op->auth_retried = 2;
    }
    if (c->t->exec != NULL && !cred_valid(c)) {
        op->state = OP_WAIT_CRED;
        op->wnext = c->waiting;
        c->waiting = op;
        if (!c->exec_running) {
            struct sw_error err;
            int rc = sw_exec_run(c->loop, c->t, on_cred, c, &err);
            if (rc != 0) {
                resume_waiting(c, rc, &err);
                return;
            }
            c->exec_running = 1;
        }
        return;
    }
    dispatch(op);
}

/* ---- public request API ------------------------------------------------- */

/* An item of a split List: parsed and handed over. */
static int split_item(const char *item, size_t len, void *ctx, struct sw_error *err)
{
    struct sw_kube_op *op = ctx;
    cJSON *obj = NULL;
    char what[300];
    snprintf(what, sizeof(what), "cluster %s: %s %s: item %zu", op->c->name, op->method, op->path,
             op->delivered);
    int rc = sw_json_parse(item, len, what, &obj, err);
    if (rc != 0)
        return rc;
    op->delivered++;
    op->req.on_item(obj, op->req.on_item_ctx);
    return 0;
}

static int split_data(const char *data, size_t len, void *ctx)
{
    struct sw_kube_op *op = ctx;
    if (op->canceled)
        return 1;
    long status = op->call ? sw_http_call_status(op->call) : 0;
    if (status < 200 || status >= 300) {
        /* A Status object saying why: kept for the error (bounded). */
        if (op->errbody.len < 65536)
            sw_buf_add(&op->errbody, data, len < 65536 ? len : 65536);
        return 0;
    }
    int rc = sw_list_splitter_feed(op->split, data, len, &op->split_err);
    if (rc != 0) {
        op->split_rc = rc;
        return 1;
    }
    return 0;
}

static int streaming_data(const char *data, size_t len, void *ctx);

int sw_kube_send(struct sw_kube_client *c, const struct sw_kube_req *req, sw_kube_cb cb, void *ctx,
                 struct sw_kube_op **out)
{
    if (c->freeing || req->path == NULL || req->path[0] != '/')
        return SW_EINVAL;
    struct sw_kube_op *op = sw_calloc(1, sizeof(*op));
    if (op == NULL)
        return SW_ENOMEM;
    op->c = c;
    op->req = *req;
    op->path = sw_strdup(req->path);
    op->method = sw_strdup(req->method ? req->method : "GET");
    op->content_type = req->content_type ? sw_strdup(req->content_type) : NULL;
    if (req->body != NULL) {
        op->body = sw_malloc(req->body_len + 1);
        if (op->body != NULL) {
            memcpy(op->body, req->body, req->body_len);
            op->body[req->body_len] = '\0';
        }
    }
    if (op->path == NULL || op->method == NULL || (req->content_type && !op->content_type) ||
        (req->body && !op->body)) {
        sw_free(op->path);
        sw_free(op->method);
        sw_free(op->content_type);
        sw_free(op->body);
        sw_free(op);
        return SW_ENOMEM;
    }
    op->cb = cb;
    op->ctx = ctx;
    sw_buf_init(&op->errbody, 65536);
    if (req->sensitive)
        sw_buf_set_wipe(&op->errbody);
    if (req->on_item != NULL)
        op->req.on_data = split_data;
    else if (req->on_data != NULL)
        op->req.on_data = streaming_data;
    op->user_on_data = req->on_data;
    op->user_on_data_ctx = req->on_data_ctx;
    uv_timer_init(c->loop, &op->timer);
    op->timer.data = op;
    op->next = c->ops;
    if (c->ops)
        c->ops->prev = op;
    c->ops = op;
    c->nops++;
    op->state = OP_DELAY;
    int64_t delay = sw_ratelimit_reserve(&c->rl, sw_mono_ms(clock_of(c)));
    if (delay > 0) {
        c->rl_wait_ms += (uint64_t)delay;
        c->rl_delayed++;
    }
    uv_timer_start(&op->timer, on_timer, (uint64_t)(delay > 0 ? delay : 0), 0);
    if (out != NULL)
        *out = op;
    return 0;
}

static int streaming_data(const char *data, size_t len, void *ctx)
{
    struct sw_kube_op *op = ctx;
    if (op->canceled)
        return 1;
    return op->user_on_data(data, len, op->user_on_data_ctx);
}

void sw_kube_cancel(struct sw_kube_op *op)
{
    if (op->canceled || op->state == OP_DONE)
        return;
    op->canceled = 1;
    switch (op->state) {
    case OP_HTTP:
        if (op->call != NULL)
            sw_http_cancel(op->call);
        break;
    case OP_DELAY:
        uv_timer_start(&op->timer, on_timer, 0, 0);
        break;
    case OP_WAIT_CRED:
        /* It leaves the waiting list when the plugin returns. */
        break;
    case OP_DONE:
        break;
    }
}

void sw_kube_client_block(struct sw_kube_client *c, const char *why)
{
    if (why == NULL || why[0] == '\0') {
        c->blocked[0] = '\0';
        return;
    }
    snprintf(c->blocked, sizeof(c->blocked), "%s", why);
    for (struct sw_kube_op *op = c->ops; op != NULL; op = op->next) {
        if (op->canceled || op->state == OP_DONE)
            continue;
        if (op->state == OP_HTTP && op->call != NULL) {
            op->blocked = 1;
            sw_http_cancel(op->call);
        } else if (op->state == OP_DELAY) {
            uv_timer_start(&op->timer, on_timer, 0, 0);
        }
    }
}

bool sw_kube_client_blocked(const struct sw_kube_client *c)
{
    return c->blocked[0] != '\0';
}

void sw_kube_client_free(struct sw_kube_client *c)
{
    if (c == NULL || c->freeing)
        return;
    c->freeing = 1;
    for (struct sw_kube_op *op = c->ops; op != NULL; op = op->next)
        sw_kube_cancel(op);
    maybe_release(c);
}

void sw_kube_run_until(uv_loop_t *loop, const int *done)
{
    while (!*done && uv_run(loop, UV_RUN_ONCE) != 0)
        ;
}

/* ---- typed helpers ------------------------------------------------------ */

static const struct {
    const char *kind;
    const char *api_version;
    const char *prefix; /* "/api/v1" or "/apis/GROUP/VERSION" */
    const char *plural;
    int namespaced;
} kinds[SW_KIND_COUNT] = {
    [SW_KIND_POD] = {"Pod", "v1", "/api/v1", "pods", 1},
    [SW_KIND_NODE] = {"Node", "v1", "/api/v1", "nodes", 0},
    [SW_KIND_NAMESPACE] = {"Namespace", "v1", "/api/v1", "namespaces", 0},
    [SW_KIND_EVENT] = {"Event", "v1", "/api/v1", "events", 1},
    [SW_KIND_JOB] = {"Job", "batch/v1", "/apis/batch/v1", "jobs", 1},
    [SW_KIND_LEASE] = {"Lease", "coordination.k8s.io/v1", "/apis/coordination.k8s.io/v1", "leases",
                       1},
    [SW_KIND_WORKLOAD] = {"Workload", "kueue.x-k8s.io/v1beta2", "/apis/kueue.x-k8s.io/v1beta2",
                          "workloads", 1},
    [SW_KIND_CLUSTERQUEUE] = {"ClusterQueue", "kueue.x-k8s.io/v1beta2",
                              "/apis/kueue.x-k8s.io/v1beta2", "clusterqueues", 0},
    [SW_KIND_LOCALQUEUE] = {"LocalQueue", "kueue.x-k8s.io/v1beta2", "/apis/kueue.x-k8s.io/v1beta2",
                            "localqueues", 1},
    [SW_KIND_NODEPOOL] = {"NodePool", "karpenter.sh/v1", "/apis/karpenter.sh/v1", "nodepools", 0},
    [SW_KIND_NODECLAIM] = {"NodeClaim", "karpenter.sh/v1", "/apis/karpenter.sh/v1", "nodeclaims",
                           0},
    [SW_KIND_ADMISSIONCHECK] = {"AdmissionCheck", "kueue.x-k8s.io/v1beta2",
                                "/apis/kueue.x-k8s.io/v1beta2", "admissionchecks", 0},
    [SW_KIND_MULTIKUEUECONFIG] = {"MultiKueueConfig", "kueue.x-k8s.io/v1beta2",
                                  "/apis/kueue.x-k8s.io/v1beta2", "multikueueconfigs", 0},
    [SW_KIND_RESOURCEFLAVOR] = {"ResourceFlavor", "kueue.x-k8s.io/v1beta2",
                                "/apis/kueue.x-k8s.io/v1beta2", "resourceflavors", 0},
};

const char *sw_kube_kind_name(enum sw_kube_kind k)
{
    return k < SW_KIND_COUNT ? kinds[k].kind : "?";
}

const char *sw_kube_kind_api_version(enum sw_kube_kind k)
{
    return k < SW_KIND_COUNT ? kinds[k].api_version : "?";
}

/* Kubernetes names are DNS subdomains or labels: this keeps paths safe. */
static int name_ok(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > 253)
        return 0;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

static int unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

int sw_kube_path_segment(char *buf, size_t len, const char *seg)
{
    if (buf == NULL || len == 0)
        return SW_ETOOBIG;
    /* The API server decodes the path before it splits and routes it, so
     * %2F would still be read as a separator and %2E%2E as "..": those
     * are refused, not encoded. */
    if (seg == NULL || seg[0] == '\0' || strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0 ||
        strchr(seg, '/') != NULL)
        return SW_EINVAL;
    static const char hex[] = "0123456789ABCDEF";
    size_t start = strnlen(buf, len);
    if (start >= len)
        return SW_ETOOBIG;
    size_t n = start;
    if (n + 1 >= len)
        return SW_ETOOBIG;
    buf[n++] = '/';
    for (const unsigned char *p = (const unsigned char *)seg; *p; p++) {
        size_t need = unreserved(*p) ? 1 : 3;
        if (n + need >= len) {
            buf[start] = '\0';
            return SW_ETOOBIG;
        }
        if (need == 1) {
            buf[n++] = (char)*p;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[*p >> 4];
            buf[n++] = hex[*p & 15];
        }
    }
    buf[n] = '\0';
    return 0;
}

int sw_kube_path(enum sw_kube_kind k, const char *ns, const char *name, char *buf, size_t len)
{
    if (k >= SW_KIND_COUNT || buf == NULL || len == 0)
        return SW_EINVAL;
    int has_ns = kinds[k].namespaced && ns != NULL && ns[0] != '\0';
    if ((has_ns && !name_ok(ns)) || (name != NULL && !name_ok(name)))
        return SW_EINVAL;
    if (kinds[k].namespaced && name != NULL && !has_ns)
        return SW_EINVAL;
    int n = snprintf(buf, len, "%s%s", kinds[k].prefix, has_ns ? "/namespaces" : "");
    if (n < 0 || (size_t)n >= len)
        return SW_ETOOBIG;
    int rc = has_ns ? sw_kube_path_segment(buf, len, ns) : 0;
    if (rc == 0)
        rc = sw_kube_path_segment(buf, len, kinds[k].plural);
    if (rc == 0 && name != NULL)
        rc = sw_kube_path_segment(buf, len, name);
    return rc;
}

int sw_kube_path_query(char *buf, size_t len, const char *key, const char *value)
{
    size_t n = strlen(buf);
    int w = snprintf(buf + n, len - n, "%c%s=", strchr(buf, '?') ? '&' : '?', key);
    if (w < 0 || n + (size_t)w >= len)
        return SW_ETOOBIG;
    n += (size_t)w;
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            if (n + 1 >= len)
                return SW_ETOOBIG;
            buf[n++] = (char)*p;
        } else {
            if (n + 3 >= len)
                return SW_ETOOBIG;
            buf[n++] = '%';
            buf[n++] = hex[*p >> 4];
            buf[n++] = hex[*p & 15];
        }
    }
    buf[n] = '\0';
    return 0;
}

#define PATH_MAX_LEN 2048

int sw_kube_get(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                sw_kube_cb cb, void *ctx)
{
    char path[PATH_MAX_LEN];
    int rc = sw_kube_path(k, ns, name, path, sizeof(path));
    if (rc != 0)
        return rc;
    struct sw_kube_req r = {.method = "GET", .path = path};
    return sw_kube_send(c, &r, cb, ctx, NULL);
}

static int send_json(struct sw_kube_client *c, const char *method, const char *path,
                     const char *ctype, const cJSON *obj, sw_kube_cb cb, void *ctx)
{
    char *body = cJSON_PrintUnformatted(obj);
    if (body == NULL)
        return SW_ENOMEM;
    struct sw_kube_req r = {.method = method,
                            .path = path,
                            .content_type = ctype,
                            .body = body,
                            .body_len = strlen(body)};
    int rc = sw_kube_send(c, &r, cb, ctx, NULL);
    cJSON_free(body);
    return rc;
}

int sw_kube_create(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const cJSON *obj,
                   sw_kube_cb cb, void *ctx)
{
    char path[PATH_MAX_LEN];
    int rc = sw_kube_path(k, ns, NULL, path, sizeof(path));
    if (rc != 0)
        return rc;
    return send_json(c, "POST", path, "application/json", obj, cb, ctx);
}

int sw_kube_replace(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                    const cJSON *obj, sw_kube_cb cb, void *ctx)
{
    char path[PATH_MAX_LEN];
    int rc = sw_kube_path(k, ns, name, path, sizeof(path));
    if (rc != 0)
        return rc;
    return send_json(c, "PUT", path, "application/json", obj, cb, ctx);
}

int sw_kube_merge_patch(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                        const char *name, const cJSON *patch, const char *subresource,
                        sw_kube_cb cb, void *ctx)
{
    char path[PATH_MAX_LEN];
    int rc = sw_kube_path(k, ns, name, path, sizeof(path));
    if (rc != 0)
        return rc;
    if (subresource != NULL) {
        if (!name_ok(subresource))
            return SW_EINVAL;
        rc = sw_kube_path_segment(path, sizeof(path), subresource);
        if (rc != 0)
            return rc;
    }
    return send_json(c, "PATCH", path, "application/merge-patch+json", patch, cb, ctx);
}

int sw_kube_apply(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                  const cJSON *obj, const char *field_manager, int force, sw_kube_cb cb, void *ctx)
{
    return sw_kube_apply_sub(c, k, ns, name, obj, NULL, field_manager, force, cb, ctx);
}

int sw_kube_apply_sub(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                      const char *name, const cJSON *obj, const char *subresource,
                      const char *field_manager, int force, sw_kube_cb cb, void *ctx)
{
    char path[PATH_MAX_LEN];
    int rc = sw_kube_path(k, ns, name, path, sizeof(path));
    if (rc == 0 && subresource != NULL)
        rc = name == NULL || !name_ok(subresource)
                 ? SW_EINVAL
                 : sw_kube_path_segment(path, sizeof(path), subresource);
    if (rc == 0)
        rc = sw_kube_path_query(path, sizeof(path), "fieldManager",
                                field_manager ? field_manager : "spillway");
    if (rc == 0 && force)
        rc = sw_kube_path_query(path, sizeof(path), "force", "true");
    if (rc != 0)
        return rc;
    return send_json(c, "PATCH", path, "application/apply-patch+yaml", obj, cb, ctx);
}

int sw_kube_delete(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                   const struct sw_kube_delete_opts *o, sw_kube_cb cb, void *ctx)
{
    char path[PATH_MAX_LEN];
    int rc = sw_kube_path(k, ns, name, path, sizeof(path));
    if (rc != 0)
        return rc;
    cJSON *body = cJSON_CreateObject();
    if (body == NULL || !cJSON_AddStringToObject(body, "kind", "DeleteOptions") ||
        !cJSON_AddStringToObject(body, "apiVersion", "v1")) {
        cJSON_Delete(body);
        return SW_ENOMEM;
    }
    if (o != NULL) {
        if (o->precondition_uid || o->precondition_resource_version) {
            cJSON *pre = cJSON_AddObjectToObject(body, "preconditions");
            if (pre == NULL ||
                (o->precondition_uid &&
                 !cJSON_AddStringToObject(pre, "uid", o->precondition_uid)) ||
                (o->precondition_resource_version &&
                 !cJSON_AddStringToObject(pre, "resourceVersion",
                                          o->precondition_resource_version))) {
                cJSON_Delete(body);
                return SW_ENOMEM;
            }
        }
        if (o->propagation && !cJSON_AddStringToObject(body, "propagationPolicy", o->propagation)) {
            cJSON_Delete(body);
            return SW_ENOMEM;
        }
        if (o->grace_period_s >= 0 &&
            !cJSON_AddNumberToObject(body, "gracePeriodSeconds", (double)o->grace_period_s)) {
            cJSON_Delete(body);
            return SW_ENOMEM;
        }
    }
    rc = send_json(c, "DELETE", path, "application/json", body, cb, ctx);
    cJSON_Delete(body);
    return rc;
}

/* ---- paged lists -------------------------------------------------------- */

struct list_ctx {
    struct sw_kube_client *c;
    char base[PATH_MAX_LEN]; /* path with selectors, without limit/continue */
    int limit;
    char *cont;
    char rv[64]; /* the first page's resourceVersion, or "" */
    void (*on_item)(cJSON *item, void *ctx);
    cJSON *acc; /* the list being built */
    int restarted;
    sw_kube_cb cb;
    void *ctx;
};

static int list_next(struct list_ctx *l);

static void list_done(struct list_ctx *l, struct sw_kube_result *res)
{
    l->cb(res, l->ctx);
    cJSON_Delete(l->acc);
    sw_free(l->cont);
    sw_free(l);
}

static void on_page(struct sw_kube_result *res, void *ctx)
{
    struct list_ctx *l = ctx;
    if (res->rc == SW_EGONE && l->cont != NULL && !l->restarted) {
        /* The continue token expired: start over, once, as client-go does. */
        l->restarted = 1;
        sw_free(l->cont);
        l->cont = NULL;
        cJSON_Delete(l->acc);
        l->acc = NULL;
        if (list_next(l) != 0) {
            list_done(l, res);
        }
        return;
    }
    if (res->rc != 0 || res->body == NULL) {
        if (res->rc == 0) {
            res->rc = SW_EPARSE;
            sw_error_set(&res->err, SW_EPARSE, "cluster %s: list %s: empty response", l->c->name,
                         l->base);
        }
        list_done(l, res);
        return;
    }
    cJSON *items = cJSON_GetObjectItemCaseSensitive(res->body, "items");
    if (items != NULL && !cJSON_IsArray(items) && !cJSON_IsNull(items)) {
        res->rc = sw_error_set(&res->err, SW_EPARSE,
                               "cluster %s: list %s: field \"items\": expected a list", l->c->name,
                               l->base);
        list_done(l, res);
        return;
    }
    const char *cont = NULL;
    sw_json_string(res->body, "metadata.continue", false, "list", &cont, NULL);
    if (l->acc == NULL) {
        /* The first page becomes the result; later pages' items join it. */
        l->acc = res->body;
        res->body = NULL;
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(l->acc, "items"))) {
            cJSON_DeleteItemFromObjectCaseSensitive(l->acc, "items");
            cJSON_AddItemToObject(l->acc, "items", cJSON_CreateArray());
        }
    } else {
        cJSON *dst = cJSON_GetObjectItemCaseSensitive(l->acc, "items");
        cJSON *it;
        while (cJSON_IsArray(items) && (it = cJSON_DetachItemFromArray(items, 0)) != NULL)
            cJSON_AddItemToArray(dst, it);
        /* The last page's metadata carries the same snapshot's resourceVersion. */
        cJSON *md = cJSON_DetachItemFromObjectCaseSensitive(res->body, "metadata");
        if (md != NULL)
            cJSON_ReplaceItemInObjectCaseSensitive(l->acc, "metadata", md);
    }
    sw_free(l->cont);
    l->cont = NULL;
    if (cont != NULL && cont[0] != '\0') {
        l->cont = sw_strdup(cont);
        if (l->cont == NULL || list_next(l) != 0) {
            res->rc =
                sw_error_set(&res->err, SW_ENOMEM, "cluster %s: list: out of memory", l->c->name);
            list_done(l, res);
        }
        return;
    }
    cJSON *md = cJSON_GetObjectItemCaseSensitive(l->acc, "metadata");
    if (md != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(md, "continue");
    cJSON_Delete(res->body);
    res->body = l->acc;
    l->acc = NULL;
    l->cb(res, l->ctx);
    if (res->body != NULL)
        cJSON_Delete(res->body);
    res->body = NULL;
    sw_free(l->cont);
    sw_free(l);
}

static int list_next(struct list_ctx *l)
{
    char path[PATH_MAX_LEN + 1024];
    snprintf(path, sizeof(path), "%s", l->base);
    int rc = 0;
    if (l->limit > 0) {
        char lim[32];
        snprintf(lim, sizeof(lim), "%d", l->limit);
        rc = sw_kube_path_query(path, sizeof(path), "limit", lim);
    }
    if (rc == 0 && l->cont != NULL)
        rc = sw_kube_path_query(path, sizeof(path), "continue", l->cont);
    else if (rc == 0 && l->rv[0] != '\0')
        rc = sw_kube_path_query(path, sizeof(path), "resourceVersion", l->rv);
    if (rc != 0)
        return rc;
    struct sw_kube_req r = {
        .method = "GET", .path = path, .on_item = l->on_item, .on_item_ctx = l->ctx};
    return sw_kube_send(l->c, &r, on_page, l, NULL);
}

int sw_kube_list(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                 const struct sw_kube_list_opts *o, sw_kube_cb cb, void *ctx)
{
    struct list_ctx *l = sw_calloc(1, sizeof(*l));
    if (l == NULL)
        return SW_ENOMEM;
    l->c = c;
    l->cb = cb;
    l->ctx = ctx;
    l->limit = o && o->limit != 0 ? o->limit : SW_KUBE_DEFAULT_PAGE;
    l->on_item = o ? o->on_item : NULL;
    if (o && o->resource_version && strlen(o->resource_version) < sizeof(l->rv))
        snprintf(l->rv, sizeof(l->rv), "%s", o->resource_version);
    int rc = sw_kube_path(k, ns, NULL, l->base, sizeof(l->base));
    if (rc == 0 && o && o->label_selector && o->label_selector[0])
        rc = sw_kube_path_query(l->base, sizeof(l->base), "labelSelector", o->label_selector);
    if (rc == 0 && o && o->field_selector && o->field_selector[0])
        rc = sw_kube_path_query(l->base, sizeof(l->base), "fieldSelector", o->field_selector);
    if (rc == 0)
        rc = list_next(l);
    if (rc != 0)
        sw_free(l);
    return rc;
}
