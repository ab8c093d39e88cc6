/*
 * s3.c - the S3 client: URL building, signing, retries, error messages.
 *
 * A request (struct op) owns copies of everything but its body, so that it
 * can be signed again for every attempt (the date changes) after a backoff
 * timer on the loop. The HTTP transfer itself is net/http's business.
 */
#include "replication/s3.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/log.h"

#define DEFAULT_MAX_BODY ((size_t)16 << 20)
#define MAX_PAIRS        32

struct sw_s3 {
    uv_loop_t *loop;
    struct sw_http *http;
    char *name;
    char *scheme; /* "http" or "https" */
    char *host;   /* host[:port] */
    char *region;
    char *access_key;
    char *secret_key;
    char *session_token;
    char *ca_file;
    int virtual_host;
    int insecure_tls;
    int max_attempts;
    long backoff_base_ms;
    long backoff_max_ms;
    long low_speed_time_s;
    const struct sw_clock *clock;
    uint64_t rng;
    size_t pending;
};

struct op {
    struct sw_s3 *s3;
    char *method;
    char *bucket;
    char *key;
    struct sw_sigv4_pair query[MAX_PAIRS]; /* owned strings */
    size_t nquery;
    struct sw_sigv4_pair headers[MAX_PAIRS]; /* owned strings */
    size_t nheaders;
    const void *body;
    size_t body_len;
    int has_body;
    char body_sha256[65];
    size_t max_body;
    int no_retry;
    int attempts;
    sw_s3_cb cb;
    void *ctx;
    uv_timer_t timer;
    struct sw_buf url;
};

/* ---- configuration ------------------------------------------------------- */

static void free_fields(struct sw_s3 *s)
{
    sw_free(s->name);
    sw_free(s->scheme);
    sw_free(s->host);
    sw_free(s->region);
    sw_free(s->access_key);
    if (s->secret_key != NULL) {
        memset(s->secret_key, 0, strlen(s->secret_key));
        sw_free(s->secret_key);
    }
    sw_free(s->session_token);
    sw_free(s->ca_file);
}

int sw_s3_new(uv_loop_t *loop, struct sw_http *http, const struct sw_s3_config *cfg,
              struct sw_s3 **out, struct sw_error *err)
{
    *out = NULL;
    const char *name = cfg->name ? cfg->name : "";
    if (cfg->endpoint == NULL || cfg->endpoint[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "store %s: endpoint is required", name);
    const char *sep = strstr(cfg->endpoint, "://");
    if (sep == NULL)
        return sw_error_set(err, SW_EINVAL,
                            "store %s: endpoint \"%s\" has no scheme, expected http:// or https://",
                            name, cfg->endpoint);
    size_t slen = (size_t)(sep - cfg->endpoint);
    if (!((slen == 4 && strncasecmp(cfg->endpoint, "http", 4) == 0) ||
          (slen == 5 && strncasecmp(cfg->endpoint, "https", 5) == 0)))
        return sw_error_set(err, SW_EINVAL,
                            "store %s: endpoint \"%s\": scheme must be http or https", name,
                            cfg->endpoint);
    const char *host = sep + 3;
    size_t hlen = strcspn(host, "/?#");
    if (hlen == 0)
        return sw_error_set(err, SW_EINVAL, "store %s: endpoint \"%s\" has no host", name,
                            cfg->endpoint);
    if (host[hlen] != '\0' && strcmp(host + hlen, "/") != 0)
        return sw_error_set(err, SW_EINVAL,
                            "store %s: endpoint \"%s\" must not have a path (use the bucket)", name,
                            cfg->endpoint);
    if (cfg->region == NULL || cfg->region[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "store %s: region is required", name);
    if (cfg->access_key == NULL || cfg->access_key[0] == '\0' || cfg->secret_key == NULL ||
        cfg->secret_key[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "store %s: access key and secret key are required",
                            name);
    struct sw_s3 *s = sw_calloc(1, sizeof(*s));
    if (s == NULL)
        return sw_error_set(err, SW_ENOMEM, "store %s: out of memory", name);
    s->loop = loop;
    s->http = http;
    s->name = sw_strdup(name);
    s->scheme = sw_strndup(cfg->endpoint, slen);
    s->host = sw_strndup(host, hlen);
    s->region = sw_strdup(cfg->region);
    s->access_key = sw_strdup(cfg->access_key);
    s->secret_key = sw_strdup(cfg->secret_key);
    s->session_token = cfg->session_token ? sw_strdup(cfg->session_token) : NULL;
    s->ca_file = cfg->ca_file ? sw_strdup(cfg->ca_file) : NULL;
    if (!s->name || !s->scheme || !s->host || !s->region || !s->access_key || !s->secret_key ||
        (cfg->session_token && !s->session_token) || (cfg->ca_file && !s->ca_file)) {
        free_fields(s);
        sw_free(s);
        return sw_error_set(err, SW_ENOMEM, "store %s: out of memory", name);
    }
    for (char *p = s->scheme; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    s->virtual_host = cfg->virtual_host;
    s->insecure_tls = cfg->insecure_tls;
    s->max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts : 8;
    s->backoff_base_ms = cfg->backoff_base_ms > 0 ? cfg->backoff_base_ms : 50;
    s->backoff_max_ms = cfg->backoff_max_ms > 0 ? cfg->backoff_max_ms : 5000;
    s->low_speed_time_s = cfg->low_speed_time_s > 0 ? cfg->low_speed_time_s : 60;
    s->clock = cfg->clock ? cfg->clock : sw_clock_system();
    s->rng = (uint64_t)sw_mono_ms(s->clock) * 0x9E3779B97F4A7C15ULL + (uintptr_t)s;
    if (s->rng == 0)
        s->rng = 1;
    *out = s;
    return 0;
}

void sw_s3_free(struct sw_s3 *s3)
{
    if (s3 == NULL)
        return;
    sw_assert(s3->pending == 0);
    free_fields(s3);
    sw_free(s3);
}

const char *sw_s3_name(const struct sw_s3 *s3)
{
    return s3->name;
}

int sw_s3_same_endpoint(const struct sw_s3 *a, const struct sw_s3 *b)
{
    return strcmp(a->scheme, b->scheme) == 0 && strcasecmp(a->host, b->host) == 0 &&
           strcmp(a->access_key, b->access_key) == 0 && strcmp(a->region, b->region) == 0;
}

uv_loop_t *sw_s3_loop(const struct sw_s3 *s3)
{
    return s3->loop;
}

size_t sw_s3_pending(const struct sw_s3 *s3)
{
    return s3->pending;
}

/* ---- requests ------------------------------------------------------------ */

static uint64_t next_rand(struct sw_s3 *s)
{
    /* xorshift64*: jitter only, not security. */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 2685821657736338717ULL;
}

static void free_op(struct op *o)
{
    sw_free(o->method);
    sw_free(o->bucket);
    sw_free(o->key);
    for (size_t i = 0; i < o->nquery; i++) {
        sw_free((char *)o->query[i].name);
        sw_free((char *)o->query[i].value);
    }
    for (size_t i = 0; i < o->nheaders; i++) {
        sw_free((char *)o->headers[i].name);
        sw_free((char *)o->headers[i].value);
    }
    sw_buf_free(&o->url);
    sw_free(o);
}

static void on_op_closed(uv_handle_t *h)
{
    free_op(h->data);
}

static void finish(struct op *o, struct sw_s3_response *resp)
{
    o->s3->pending--;
    o->cb(resp, o->ctx);
    uv_close((uv_handle_t *)&o->timer, on_op_closed);
}

/* s3://bucket/key, for messages (the key is printed as is; it is the
 * user's own name for the object). */
static void describe(const struct op *o, char *out, size_t n)
{
    snprintf(out, n, "store %s: %s s3://%s/%s", o->s3->name[0] ? o->s3->name : o->s3->host,
             o->method, o->bucket, o->key ? o->key : "");
}

const char *sw_s3_key_problem(const char *key)
{
    if (key[0] == '\0')
        return "an empty key (the request would name the bucket itself)";
    if (strlen(key) > SW_S3_KEY_MAX)
        return "longer than S3's 1,024 bytes";
    for (const char *s = key;;) {
        size_t n = strcspn(s, "/");
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return "a \".\" or \"..\" segment (servers and stores that keep files may resolve it, "
                   "and %2E is the same as \".\")";
        if (s[n] == '\0')
            return NULL;
        s += n + 1;
    }
}

const char *sw_s3_path_bucket_problem(const char *bucket)
{
    size_t n = strlen(bucket);
    if (n == 0)
        return "empty";
    if (n > SW_S3_BUCKET_MAX)
        return "longer than 255 characters";
    if (strcmp(bucket, ".") == 0 || strcmp(bucket, "..") == 0)
        return "\".\" or \"..\"";
    for (size_t i = 0; i < n; i++) {
        char c = bucket[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return "a character other than letters, digits, '.', '-' and '_'";
    }
    return NULL;
}

int sw_s3_path(struct sw_buf *out, int virtual_host, const char *bucket, const char *key,
               struct sw_error *err)
{
    const char *why = sw_s3_path_bucket_problem(bucket);
    if (why != NULL)
        return sw_error_set(err, SW_EINVAL, "bucket \"%.64s\": %s", bucket, why);
    if (key != NULL && (why = sw_s3_key_problem(key)) != NULL)
        return sw_error_set(err, SW_EINVAL, "key \"%.200s\": %s", key, why);
    size_t was = out->len;
    int rc = sw_buf_add(out, "/", 1);
    if (rc == 0 && !virtual_host) {
        rc = sw_sigv4_uri_encode(out, bucket, strlen(bucket), 0);
        if (rc == 0 && key != NULL)
            rc = sw_buf_add(out, "/", 1);
    }
    if (rc == 0 && key != NULL)
        rc = sw_sigv4_uri_encode(out, key, strlen(key), 1);
    if (rc != 0) {
        out->len = was;
        if (out->data != NULL)
            out->data[was] = '\0';
        return sw_error_set(err, rc, "s3://%.64s/%.200s: cannot build the path: %s", bucket,
                            key ? key : "", sw_strerror(rc));
    }
    return 0;
}

static int build_url(struct op *o, char *hostbuf, size_t hostlen, struct sw_buf *path,
                     struct sw_error *err)
{
    struct sw_s3 *s = o->s3;
    if (s->virtual_host)
        snprintf(hostbuf, hostlen, "%s.%s", o->bucket, s->host);
    else
        snprintf(hostbuf, hostlen, "%s", s->host);
    sw_buf_reset(path);
    int rc = sw_s3_path(path, s->virtual_host, o->bucket, o->key, err);
    if (rc != 0)
        return rc;
    sw_buf_reset(&o->url);
    rc = sw_buf_addf(&o->url, "%s://%s%s", s->scheme, hostbuf, path->data);
    for (size_t i = 0; rc == 0 && i < o->nquery; i++) {
        rc = sw_buf_add(&o->url, i == 0 ? "?" : "&", 1);
        if (rc == 0)
            rc = sw_sigv4_uri_encode(&o->url, o->query[i].name, strlen(o->query[i].name), 0);
        if (rc == 0 && o->query[i].value != NULL && o->query[i].value[0] != '\0') {
            rc = sw_buf_add(&o->url, "=", 1);
            if (rc == 0)
                rc = sw_sigv4_uri_encode(&o->url, o->query[i].value, strlen(o->query[i].value), 0);
        } else if (rc == 0) {
            rc = sw_buf_add(&o->url, "=", 1);
        }
    }
    if (rc != 0)
        return sw_error_set(err, rc, "cannot build the URL: %s", sw_strerror(rc));
    return 0;
}

static int configure_easy(CURL *easy, void *ctx)
{
    struct op *o = ctx;
    /* The path is sent as built: empty segments are S3 names (dot segments
     * never get here, sw_s3_key_problem refuses them). */
    curl_easy_setopt(easy, CURLOPT_PATH_AS_IS, 1L);
    if (o->s3->ca_file != NULL)
        curl_easy_setopt(easy, CURLOPT_CAINFO, o->s3->ca_file);
    if (o->s3->insecure_tls) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return 0;
}

static void on_http_done(struct sw_http_call *call, struct sw_http_response *resp, void *ctx);

static int attempt(struct op *o, struct sw_error *err)
{
    struct sw_s3 *s = o->s3;
    char host[512];
    struct sw_buf path;
    sw_buf_init(&path, 64 * 1024);
    char where[768];
    describe(o, where, sizeof(where));
    int rc = build_url(o, host, sizeof(host), &path, err);
    if (rc != 0) {
        sw_buf_free(&path);
        return sw_error_wrap(err, "%s", where);
    }
    struct sw_sigv4_pair signed_h[MAX_PAIRS + 1];
    memcpy(signed_h, o->headers, o->nheaders * sizeof(signed_h[0]));
    signed_h[o->nheaders].name = "x-amz-content-sha256";
    signed_h[o->nheaders].value = o->body_sha256;
    struct sw_sigv4_input in = {
        .method = o->method,
        .host = host,
        .path = path.data,
        .query = o->query,
        .nquery = o->nquery,
        .headers = signed_h,
        .nheaders = o->nheaders + 1,
        .payload_hash = o->body_sha256,
        .access_key = s->access_key,
        .secret_key = s->secret_key,
        .session_token = s->session_token,
        .region = s->region,
        .service = "s3",
        .time_s = sw_now_ms(s->clock) / 1000,
    };
    struct sw_sigv4_output sig;
    rc = sw_sigv4_sign(&in, &sig, NULL, err);
    sw_buf_free(&path);
    if (rc != 0)
        return sw_error_wrap(err, "%s", where);

    struct curl_slist *hl = NULL;
    char line[4096];
    int bad = 0;
#define ADDH(...)                                                                                  \
    do {                                                                                           \
        snprintf(line, sizeof(line), __VA_ARGS__);                                                 \
        struct curl_slist *n_ = curl_slist_append(hl, line);                                       \
        if (n_ == NULL)                                                                            \
            bad = 1;                                                                               \
        else                                                                                       \
            hl = n_;                                                                               \
    } while (0)
    ADDH("Authorization: %s", sig.authorization);
    ADDH("x-amz-date: %s", sig.amz_date);
    ADDH("x-amz-content-sha256: %s", o->body_sha256);
    if (s->session_token != NULL)
        ADDH("x-amz-security-token: %s", s->session_token);
    for (size_t i = 0; i < o->nheaders; i++)
        ADDH("%s: %s", o->headers[i].name, o->headers[i].value);
    /* Let no default Content-Type become part of an object. */
    ADDH("Content-Type:");
#undef ADDH
    memset(&sig, 0, sizeof(sig));
    if (bad) {
        curl_slist_free_all(hl);
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", where);
    }
    struct sw_http_request req = {
        .method = o->method,
        .url = o->url.data,
        .headers = hl,
        .body = o->has_body ? (o->body ? o->body : "") : NULL,
        .body_len = o->body_len,
        .max_body = o->max_body,
        .low_speed_time_s = s->low_speed_time_s,
        .connect_timeout_ms = 10000,
        .configure = configure_easy,
        .configure_ctx = o,
    };
    o->attempts++;
    rc = sw_http_send(s->http, &req, on_http_done, o, NULL);
    curl_slist_free_all(hl);
    if (rc != 0)
        return sw_error_set(err, rc, "%s: cannot start the request: %s", where, sw_strerror(rc));
    return 0;
}

static void on_retry_timer(uv_timer_t *t)
{
    struct op *o = t->data;
    struct sw_s3_response resp;
    memset(&resp, 0, sizeof(resp));
    if (attempt(o, &resp.err) != 0) {
        resp.rc = resp.err.code;
        resp.attempts = o->attempts;
        finish(o, &resp);
    }
}

static int retryable(const struct sw_http_response *h, const struct sw_s3_error_reply *e)
{
    if (h->rc == SW_ENET || h->rc == SW_ETIMEDOUT)
        return 1;
    if (h->rc != 0)
        return 0;
    if (h->status == 500 || h->status == 502 || h->status == 503 || h->status == 504)
        return 1;
    return strcmp(e->code, "SlowDown") == 0 || strcmp(e->code, "RequestTimeout") == 0 ||
           strcmp(e->code, "InternalError") == 0 || strcmp(e->code, "ServiceUnavailable") == 0;
}

static int status_code(long status, const char *s3code)
{
    if (strcmp(s3code, "InvalidAccessKeyId") == 0 || strcmp(s3code, "SignatureDoesNotMatch") == 0 ||
        strcmp(s3code, "InvalidToken") == 0 || strcmp(s3code, "ExpiredToken") == 0 ||
        /* versitygw's answer for an unknown access key. */
        strcmp(s3code, "XAdminUserNotFound") == 0)
        return SW_EAUTH;
    switch (status) {
    case 401:
        return SW_EAUTH;
    case 403:
        return SW_EFORBIDDEN;
    case 404:
        return SW_ENOENT;
    case 409:
    case 412:
        return SW_ECONFLICT;
    case 500:
    case 502:
    case 503:
    case 504:
        return SW_EUNAVAIL;
    default:
        return SW_EHTTP;
    }
}

static const char *default_code(long status)
{
    switch (status) {
    case 400:
        return "BadRequest";
    case 403:
        return "Forbidden";
    case 404:
        return "NotFound";
    case 409:
        return "Conflict";
    case 412:
        return "PreconditionFailed";
    case 503:
        return "ServiceUnavailable";
    default:
        return "";
    }
}

static void on_http_done(struct sw_http_call *call, struct sw_http_response *h, void *ctx)
{
    (void)call;
    struct op *o = ctx;
    struct sw_s3_response resp;
    memset(&resp, 0, sizeof(resp));
    resp.http = h;
    resp.status = h->status;
    resp.attempts = o->attempts;
    int ok = h->rc == 0 && h->status >= 200 && h->status < 300;
    if (!ok && h->rc == 0) {
        if (sw_s3xml_parse_error(h->body.data, h->body.len, &resp.s3err, NULL) != 0)
            snprintf(resp.s3err.code, sizeof(resp.s3err.code), "%s", default_code(h->status));
    }
    if (!ok && !o->no_retry && o->attempts < o->s3->max_attempts && retryable(h, &resp.s3err)) {
        long cap = o->s3->backoff_base_ms << (o->attempts < 16 ? o->attempts - 1 : 15);
        if (cap > o->s3->backoff_max_ms || cap <= 0)
            cap = o->s3->backoff_max_ms;
        long delay = (long)(next_rand(o->s3) % (uint64_t)(cap + 1));
        if (h->retry_after_s >= 0 && h->retry_after_s * 1000 > delay)
            delay = h->retry_after_s * 1000 < o->s3->backoff_max_ms ? h->retry_after_s * 1000
                                                                    : o->s3->backoff_max_ms;
        char where[768];
        describe(o, where, sizeof(where));
        SW_LOG(SW_LOG_DEBUG, "s3 retry",
               "store=%s method=%s bucket=%s status=%ld code=%s "
               "attempt=%d delay_ms=%ld",
               sw_log_q(o->s3->name), o->method, sw_log_q(o->bucket), h->status,
               sw_log_q(h->rc != 0 ? sw_err_name(h->rc) : resp.s3err.code), o->attempts, delay);
        uv_timer_start(&o->timer, on_retry_timer, (uint64_t)delay, 0);
        return;
    }
    if (!ok) {
        char where[768];
        describe(o, where, sizeof(where));
        char tries[48] = "";
        if (o->attempts > 1)
            snprintf(tries, sizeof(tries), " (after %d attempts)", o->attempts);
        if (h->rc != 0) {
            resp.rc = h->rc;
            sw_error_set(&resp.err, h->rc, "%s: %s: %s%s", where, sw_strerror(h->rc), h->error,
                         tries);
        } else {
            resp.rc = status_code(h->status, resp.s3err.code);
            sw_error_set(&resp.err, resp.rc, "%s: HTTP %ld %s%s%s%s", where, h->status,
                         resp.s3err.code[0] ? resp.s3err.code : "(no S3 error code)",
                         resp.s3err.message[0] ? ": " : "", resp.s3err.message, tries);
        }
    }
    finish(o, &resp);
}

static char *dup_or_null(const char *s, int *bad)
{
    if (s == NULL)
        return NULL;
    char *d = sw_strdup(s);
    if (d == NULL)
        *bad = 1;
    return d;
}

int sw_s3_send(struct sw_s3 *s3, const struct sw_s3_request *req, sw_s3_cb cb, void *ctx,
               struct sw_error *err)
{
    if (req->bucket == NULL || req->bucket[0] == '\0' || cb == NULL)
        return sw_error_set(err, SW_EINVAL, "store %s: a request needs a bucket", s3->name);
    if (req->nquery > MAX_PAIRS || req->nheaders + 1 > MAX_PAIRS)
        return sw_error_set(err, SW_ETOOBIG, "store %s: too many headers or query parameters",
                            s3->name);
    struct op *o = sw_calloc(1, sizeof(*o));
    if (o == NULL)
        return sw_error_set(err, SW_ENOMEM, "store %s: out of memory", s3->name);
    int bad = 0;
    o->s3 = s3;
    o->method = dup_or_null(req->method ? req->method : "GET", &bad);
    o->bucket = dup_or_null(req->bucket, &bad);
    o->key = dup_or_null(req->key, &bad);
    for (size_t i = 0; i < req->nquery; i++, o->nquery++) {
        o->query[i].name = dup_or_null(req->query[i].name, &bad);
        o->query[i].value = dup_or_null(req->query[i].value ? req->query[i].value : "", &bad);
    }
    for (size_t i = 0; i < req->nheaders; i++, o->nheaders++) {
        o->headers[i].name = dup_or_null(req->headers[i].name, &bad);
        o->headers[i].value = dup_or_null(req->headers[i].value, &bad);
    }
    sw_buf_init(&o->url, 64 * 1024);
    if (bad) {
        free_op(o);
        return sw_error_set(err, SW_ENOMEM, "store %s: out of memory", s3->name);
    }
    o->body = req->body;
    o->body_len = req->body_len;
    /* PUT and POST always carry a body, if empty, so curl sends no form
     * content type and a Content-Length of 0. */
    o->has_body =
        req->body != NULL || strcmp(o->method, "PUT") == 0 || strcmp(o->method, "POST") == 0;
    if (req->body_sha256 != NULL)
        snprintf(o->body_sha256, sizeof(o->body_sha256), "%s", req->body_sha256);
    else if (req->body != NULL && req->body_len > 0)
        sw_sha256_hex(req->body, req->body_len, o->body_sha256);
    else
        snprintf(o->body_sha256, sizeof(o->body_sha256), "%s", SW_SIGV4_EMPTY_SHA256);
    o->max_body = req->max_body ? req->max_body : DEFAULT_MAX_BODY;
    o->no_retry = req->no_retry;
    o->cb = cb;
    o->ctx = ctx;
    int rc = attempt(o, err);
    if (rc != 0) {
        free_op(o);
        return rc;
    }
    uv_timer_init(s3->loop, &o->timer);
    o->timer.data = o;
    s3->pending++;
    return 0;
}

/* ---- blocking helpers ---------------------------------------------------- */

struct sync_ctx {
    struct sw_s3_result *out;
    int done;
};

static void on_sync(struct sw_s3_response *resp, void *ctx)
{
    struct sync_ctx *s = ctx;
    struct sw_s3_result *r = s->out;
    r->rc = resp->rc;
    r->status = resp->status;
    r->attempts = resp->attempts;
    r->s3err = resp->s3err;
    r->err = resp->err;
    if (resp->http != NULL) {
        /* Take the buffers; net/http frees the emptied originals. */
        r->body = resp->http->body;
        r->headers = resp->http->headers;
        sw_buf_init(&resp->http->body, 0);
        sw_buf_init(&resp->http->headers, 0);
    }
    s->done = 1;
}

int sw_s3_do(struct sw_s3 *s3, const struct sw_s3_request *req, struct sw_s3_result *out)
{
    memset(out, 0, sizeof(*out));
    sw_buf_init(&out->body, 0);
    sw_buf_init(&out->headers, 0);
    struct sync_ctx s = {out, 0};
    int rc = sw_s3_send(s3, req, on_sync, &s, &out->err);
    if (rc != 0)
        return out->rc = rc;
    while (!s.done)
        uv_run(s3->loop, UV_RUN_ONCE);
    return out->rc;
}

void sw_s3_result_free(struct sw_s3_result *r)
{
    sw_buf_free(&r->body);
    sw_buf_free(&r->headers);
}

int sw_s3_result_header(const struct sw_s3_result *r, const char *name, char *out, size_t outlen)
{
    struct sw_http_response h;
    memset(&h, 0, sizeof(h));
    h.headers = r->headers;
    return sw_http_header(&h, name, out, outlen);
}

static int finish_sync(struct sw_s3_result *r, struct sw_error *err)
{
    int rc = r->rc;
    if (rc != 0 && err != NULL)
        *err = r->err;
    return rc;
}

int sw_s3_put_sync(struct sw_s3 *s3, const char *bucket, const char *key, const void *data,
                   size_t len, const struct sw_sigv4_pair *meta, size_t nmeta, struct sw_error *err)
{
    struct sw_s3_request req = {.method = "PUT",
                                .bucket = bucket,
                                .key = key,
                                .headers = meta,
                                .nheaders = nmeta,
                                .body = data != NULL ? data : "",
                                .body_len = len};
    struct sw_s3_result r;
    sw_s3_do(s3, &req, &r);
    sw_s3_result_free(&r);
    return finish_sync(&r, err);
}

void sw_s3_head_from_headers(const struct sw_http_response *resp, struct sw_s3_head *out)
{
    memset(out, 0, sizeof(*out));
    char v[128];
    if (sw_http_header(resp, "Content-Length", v, sizeof(v)) == 0)
        out->size = strtoll(v, NULL, 10);
    if (sw_http_header(resp, "Content-Range", v, sizeof(v)) == 0) {
        const char *slash = strrchr(v, '/');
        if (slash != NULL && slash[1] != '*')
            out->size = strtoll(slash + 1, NULL, 10);
    }
    sw_http_header(resp, "ETag", out->etag, sizeof(out->etag));
    if (sw_http_header(resp, "Last-Modified", v, sizeof(v)) == 0)
        sw_s3_parse_time(v, &out->last_modified_ms);
    if (sw_http_header(resp, SW_S3_META_SHA256, v, sizeof(v)) == 0 && strlen(v) == 64)
        memcpy(out->sha256, v, 65);
    sw_http_header(resp, SW_S3_META_SOURCE_ETAG, out->source_etag, sizeof(out->source_etag));
}

int sw_s3_etag_is_md5(const char *bare)
{
    size_t n = 0;
    for (; bare[n] != '\0'; n++)
        if (!isxdigit((unsigned char)bare[n]))
            return 0;
    return n == 32;
}

void sw_s3_etag_bare(const char *etag, char *out, size_t outlen)
{
    size_t n = strlen(etag);
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
        etag++;
        n -= 2;
    }
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, etag, n);
    out[n] = '\0';
}

int sw_s3_head_sync(struct sw_s3 *s3, const char *bucket, const char *key, struct sw_s3_head *out,
                    struct sw_error *err)
{
    struct sw_s3_request req = {.method = "HEAD", .bucket = bucket, .key = key};
    struct sw_s3_result r;
    memset(out, 0, sizeof(*out));
    if (sw_s3_do(s3, &req, &r) == 0) {
        struct sw_http_response h;
        memset(&h, 0, sizeof(h));
        h.headers = r.headers;
        sw_s3_head_from_headers(&h, out);
    }
    sw_s3_result_free(&r);
    return finish_sync(&r, err);
}

int sw_s3_get_sync(struct sw_s3 *s3, const char *bucket, const char *key, size_t max, char **data,
                   size_t *len, struct sw_error *err)
{
    *data = NULL;
    *len = 0;
    struct sw_s3_request req = {.method = "GET", .bucket = bucket, .key = key, .max_body = max};
    struct sw_s3_result r;
    if (sw_s3_do(s3, &req, &r) == 0)
        *data = sw_buf_take(&r.body, len);
    sw_s3_result_free(&r);
    return finish_sync(&r, err);
}

int sw_s3_delete_sync(struct sw_s3 *s3, const char *bucket, const char *key, struct sw_error *err)
{
    struct sw_s3_request req = {.method = "DELETE", .bucket = bucket, .key = key};
    struct sw_s3_result r;
    sw_s3_do(s3, &req, &r);
    sw_s3_result_free(&r);
    if (r.rc == SW_ENOENT)
        r.rc = 0;
    return finish_sync(&r, err);
}

int sw_s3_list_sync(struct sw_s3 *s3, const char *bucket, const char *prefix, const char *token,
                    struct sw_s3_list *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    struct sw_sigv4_pair q[3] = {{"list-type", "2"}, {"prefix", prefix ? prefix : ""}};
    size_t nq = 2;
    if (token != NULL)
        q[nq++] = (struct sw_sigv4_pair){"continuation-token", token};
    struct sw_s3_request req = {.method = "GET", .bucket = bucket, .query = q, .nquery = nq};
    struct sw_s3_result r;
    int rc = sw_s3_do(s3, &req, &r);
    if (rc == 0) {
        rc = sw_s3xml_parse_list(r.body.data, r.body.len, out, err);
        if (rc != 0)
            sw_error_wrap(err, "store %s: list s3://%s/%s", s3->name, bucket, prefix ? prefix : "");
    } else if (err != NULL) {
        *err = r.err;
    }
    sw_s3_result_free(&r);
    return rc;
}

int sw_s3_list_uploads_sync(struct sw_s3 *s3, const char *bucket, const char *prefix,
                            struct sw_s3_uploads *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    struct sw_sigv4_pair q[2] = {{"uploads", ""}, {"prefix", prefix ? prefix : ""}};
    struct sw_s3_request req = {.method = "GET", .bucket = bucket, .query = q, .nquery = 2};
    struct sw_s3_result r;
    int rc = sw_s3_do(s3, &req, &r);
    if (rc == 0) {
        rc = sw_s3xml_parse_uploads(r.body.data, r.body.len, out, err);
        if (rc != 0)
            sw_error_wrap(err, "store %s: list uploads s3://%s/%s", s3->name, bucket,
                          prefix ? prefix : "");
    } else if (err != NULL) {
        *err = r.err;
    }
    sw_s3_result_free(&r);
    return rc;
}

int sw_s3_create_bucket_sync(struct sw_s3 *s3, const char *bucket, struct sw_error *err)
{
    struct sw_s3_request req = {.method = "PUT", .bucket = bucket};
    struct sw_s3_result r;
    sw_s3_do(s3, &req, &r);
    sw_s3_result_free(&r);
    if (r.rc != 0 && (strcmp(r.s3err.code, "BucketAlreadyOwnedByYou") == 0 ||
                      strcmp(r.s3err.code, "BucketAlreadyExists") == 0))
        r.rc = 0;
    return finish_sync(&r, err);
}
