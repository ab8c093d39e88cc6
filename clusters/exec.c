/*
 * exec.c - exec credential plugins as child processes on the loop.
 *
 * The child gets the kubeconfig's env, PATH and HOME, and
 * KUBERNETES_EXEC_INFO, never the rest of the hub's environment (which
 * holds its secrets). Its stdout goes to a bounded buffer, its stderr (for
 * error messages) to a small one. The run ends when the process has exited
 * and both pipes are closed; then the output is parsed.
 */
#include "clusters/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/json.h"
#include "store/base64.h"

static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    for (size_t i = 0; p != NULL && i < n; i++)
        v[i] = 0;
}

void sw_exec_cred_clear(struct sw_exec_cred *c)
{
    if (c->token != NULL) {
        wipe(c->token, strlen(c->token));
        sw_free(c->token);
    }
    sw_free(c->cert);
    wipe(c->key, c->key_len);
    sw_free(c->key);
    memset(c, 0, sizeof(*c));
}

static int two(const char *s, int *v)
{
    if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
        return -1;
    *v = (s[0] - '0') * 10 + (s[1] - '0');
    return 0;
}

static int days_in_month(int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

static int bad_time(const char **why, const char *reason)
{
    if (why != NULL)
        *why = reason;
    return SW_EPARSE;
}

/*
 * Accepts what Go's time.Parse(time.RFC3339, ...) accepts, since that is
 * how client-go reads the same field, and nothing it refuses: an upper-case
 * 'T' and 'Z', each field within its range for that month and year (timegm
 * would otherwise turn Feb 30 into Mar 2), no leap second. Range errors
 * use Go's wording. Two things Go tolerates beyond RFC 3339 are refused:
 * a ',' before the fraction and offsets of +24:00 or with minute 60.
 */
int sw_parse_rfc3339(const char *s, int64_t *ms, const char **why)
{
    int y1, y2, mo, d, h, mi, se;
    if (strlen(s) < 19 || two(s, &y1) || two(s + 2, &y2) || s[4] != '-' || two(s + 5, &mo) ||
        s[7] != '-' || two(s + 8, &d) || s[10] != 'T' || two(s + 11, &h) || s[13] != ':' ||
        two(s + 14, &mi) || s[16] != ':' || two(s + 17, &se))
        return bad_time(why, "expected YYYY-MM-DDTHH:MM:SS");
    int year = y1 * 100 + y2;
    if (mo < 1 || mo > 12)
        return bad_time(why, "month out of range");
    if (d < 1 || d > days_in_month(year, mo))
        return bad_time(why, "day out of range");
    if (h > 23)
        return bad_time(why, "hour out of range");
    if (mi > 59)
        return bad_time(why, "minute out of range");
    if (se > 59)
        return bad_time(why, "second out of range");
    const char *p = s + 19;
    int64_t frac_ms = 0;
    if (*p == '.') {
        p++;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (digits < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
            digits++;
            p++;
        }
        if (digits == 0)
            return bad_time(why, "expected digits after the decimal point");
        for (int i = digits; i < 3; i++)
            frac_ms *= 10;
    }
    int offset_s = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (two(p + 1, &oh) || p[3] != ':' || two(p + 4, &om))
            return bad_time(why, "expected a time zone Z or +hh:mm or -hh:mm");
        if (oh > 23)
            return bad_time(why, "time zone offset hour out of range");
        if (om > 59)
            return bad_time(why, "time zone offset minute out of range");
        offset_s = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return bad_time(why, "expected a time zone Z or +hh:mm or -hh:mm");
    }
    if (*p != '\0')
        return bad_time(why, "unexpected text after the time zone");
    struct tm tm = {0};
    tm.tm_year = year - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    time_t t = timegm(&tm);
    *ms = ((int64_t)t - offset_s) * 1000 + frac_ms;
    return 0;
}

static int decode_pem(const cJSON *status, const char *field, const char *what, unsigned char **out,
                      size_t *out_len, struct sw_error *err)
{
    const char *s = NULL;
    int rc = sw_json_string(status, field, false, what, &s, err);
    if (rc != 0 || s == NULL)
        return rc;
    /* ExecCredential carries PEM text as a JSON string, not base64. */
    *out_len = strlen(s);
    *out = (unsigned char *)sw_strdup(s);
    return *out ? 0 : sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
}

int sw_exec_cred_parse(const char *out, size_t len, const char *api_version, const char *what,
                       struct sw_exec_cred *cred, struct sw_error *err)
{
    memset(cred, 0, sizeof(*cred));
    cJSON *root = NULL;
    char w[400];
    snprintf(w, sizeof(w), "%s: output", what);
    int rc = sw_json_parse(out, len, w, &root, err);
    if (rc != 0)
        return rc;
    const char *kind = NULL, *av = NULL, *tok = NULL, *exp = NULL;
    if ((rc = sw_json_string(root, "kind", true, w, &kind, err)) != 0 ||
        (rc = sw_json_string(root, "apiVersion", true, w, &av, err)) != 0)
        goto out;
    if (strcmp(kind, "ExecCredential") != 0) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"kind\": expected ExecCredential, got "
                          "\"%.40s\"",
                          w, kind);
        goto out;
    }
    if (strcmp(av, api_version) != 0) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"apiVersion\": expected %s as in the kubeconfig, got "
                          "\"%.60s\"",
                          w, api_version, av);
        goto out;
    }
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!cJSON_IsObject(status)) {
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"status\": expected an object", w);
        goto out;
    }
    if ((rc = sw_json_string(status, "token", false, w, &tok, err)) != 0 ||
        (rc = sw_json_string(status, "expirationTimestamp", false, w, &exp, err)) != 0)
        goto out;
    if ((rc = decode_pem(status, "clientCertificateData", w, &cred->cert, &cred->cert_len, err)) !=
            0 ||
        (rc = decode_pem(status, "clientKeyData", w, &cred->key, &cred->key_len, err)) != 0)
        goto out;
    if ((cred->cert == NULL) != (cred->key == NULL)) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"status.%s\": missing (clientCertificateData and "
                          "clientKeyData go together)",
                          w, cred->cert ? "clientKeyData" : "clientCertificateData");
        goto out;
    }
    if ((tok == NULL || tok[0] == '\0') && cred->cert == NULL) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"status\": expected a token or a client certificate", w);
        goto out;
    }
    if (tok != NULL && tok[0] != '\0' && (cred->token = sw_strdup(tok)) == NULL) {
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", w);
        goto out;
    }
    const char *why = NULL;
    if (exp != NULL && sw_parse_rfc3339(exp, &cred->expiry_ms, &why) != 0) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"status.expirationTimestamp\": expected an RFC 3339 time, "
                          "got \"%.40s\" (%s)",
                          w, exp, why);
        goto out;
    }
out:
    cJSON_Delete(root);
    if (rc != 0)
        sw_exec_cred_clear(cred);
    return rc;
}

/* ---- running the plugin ------------------------------------------------- */

struct run {
    uv_process_t proc;
    uv_pipe_t out, errp;
    uv_timer_t timer;
    struct sw_buf obuf, ebuf;
    int open; /* handles still open */
    int exited;
    int64_t exit_status;
    int term_signal;
    int timed_out;
    int too_big;
    int silent; /* spawn failed: free without calling back */
    const struct sw_kube_target *t;
    char what[400];
    sw_exec_done_cb cb;
    void *ctx;
    char **env;
    size_t nenv;
};

static void free_env(char **env, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (env[i] != NULL) {
            wipe(env[i], strlen(env[i]));
            sw_free(env[i]);
        }
    }
    sw_free(env);
}

static void finish(struct run *r)
{
    struct sw_error err;
    sw_error_clear(&err);
    struct sw_exec_cred cred = {0};
    int rc;
    /* The last line of stderr says why a plugin failed; it is the plugin's
     * own message, not its output, so it may be shown. */
    char hint[240] = "";
    if (r->ebuf.len > 0) {
        size_t n = r->ebuf.len;
        while (n > 0 && (r->ebuf.data[n - 1] == '\n' || r->ebuf.data[n - 1] == '\r'))
            n--;
        size_t s = n;
        while (s > 0 && r->ebuf.data[s - 1] != '\n')
            s--;
        snprintf(hint, sizeof(hint), ": %.*s", (int)(n - s > 200 ? 200 : n - s), r->ebuf.data + s);
    }
    if (r->timed_out)
        rc = sw_error_set(&err, SW_ETIMEDOUT, "%s: did not finish within %d s", r->what,
                          SW_EXEC_TIMEOUT_MS / 1000);
    else if (r->too_big)
        rc = sw_error_set(&err, SW_ETOOBIG, "%s: printed more than %zu bytes", r->what,
                          SW_EXEC_MAX_OUTPUT);
    else if (r->term_signal != 0)
        rc = sw_error_set(&err, SW_EAUTH, "%s: killed by signal %d%s", r->what, r->term_signal,
                          hint);
    else if (r->exit_status != 0)
        rc = sw_error_set(&err, SW_EAUTH, "%s: exited with status %lld%s%s%s", r->what,
                          (long long)r->exit_status, hint, r->t->exec->install_hint ? "; " : "",
                          r->t->exec->install_hint ? r->t->exec->install_hint : "");
    else
        rc = sw_exec_cred_parse(r->obuf.data ? r->obuf.data : "", r->obuf.len,
                                r->t->exec->api_version, r->what, &cred, &err);
    if (!r->silent)
        r->cb(rc, rc == 0 ? &cred : NULL, &err, r->ctx);
    sw_exec_cred_clear(&cred);
    wipe(r->obuf.data, r->obuf.len);
    sw_buf_free(&r->obuf);
    sw_buf_free(&r->ebuf);
    free_env(r->env, r->nenv);
    sw_free(r);
}

static void on_closed(uv_handle_t *h)
{
    struct run *r = h->data;
    if (--r->open == 0)
        finish(r);
}

static void close_all(struct run *r)
{
    uv_timer_stop(&r->timer);
    if (!uv_is_closing((uv_handle_t *)&r->timer))
        uv_close((uv_handle_t *)&r->timer, on_closed);
    if (!uv_is_closing((uv_handle_t *)&r->proc))
        uv_close((uv_handle_t *)&r->proc, on_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    static char scratch[65536];
    (void)suggested;
    /* Read into a scratch buffer and copy into the bounded buffers. The loop
     * is single-threaded, so one scratch buffer serves every child. */
    buf->base = scratch;
    buf->len = sizeof(scratch);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct run *r = s->data;
    if (n > 0) {
        struct sw_buf *b = s == (uv_stream_t *)&r->out ? &r->obuf : &r->ebuf;
        int rc = sw_buf_add(b, buf->base, (size_t)n);
        if (rc != 0 && b == &r->obuf && !r->exited && !r->too_big) {
            r->too_big = 1;
            uv_process_kill(&r->proc, SIGKILL);
        }
        wipe(buf->base, (size_t)n);
        return;
    }
    if (n < 0) /* EOF or error: this pipe is done */
        uv_close((uv_handle_t *)s, on_closed);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct run *r = p->data;
    r->exited = 1;
    r->exit_status = status;
    r->term_signal = r->timed_out || r->too_big ? 0 : sig;
    close_all(r);
}

static void on_timeout(uv_timer_t *t)
{
    struct run *r = t->data;
    r->timed_out = 1;
    if (!r->exited)
        uv_process_kill(&r->proc, SIGKILL);
}

static char *env_pair(const char *k, const char *v)
{
    size_t n = strlen(k) + strlen(v) + 2;
    char *s = sw_malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s=%s", k, v);
    return s;
}

/*
 * What a plugin may have of the hub's own environment, which otherwise
 * holds the hub's secrets (the Redis password, the sealing key) and is no
 * business of third-party code. PATH, because the command and whatever it
 * runs are looked up on the child's PATH; HOME, because plugins keep their
 * configuration and caches there (~/.aws, ~/.config/gcloud,
 * ~/.kube/cache). Nothing else: TMPDIR unset means /tmp, which the hub's
 * Deployment mounts writable; the locale does not matter for JSON on a
 * pipe; anything a plugin needs beyond these (AWS_PROFILE, a proxy) is
 * given in the kubeconfig's env. docs/clusters.md lists the same.
 */
static const char *const inherited[] = {"PATH", "HOME"};

/* Whether `name` is named again in the kubeconfig's env from index `from`
 * on (a later entry wins, as Go's os/exec keeps the last of a name). */
static int named_from(const struct sw_kube_exec *e, size_t from, const char *name)
{
    for (size_t j = from; j < e->nenv; j++)
        if (strcmp(e->env_names[j], name) == 0)
            return 1;
    return 0;
}

/* The environment: PATH and HOME from ours unless the kubeconfig's env
 * names them, the kubeconfig's env, and KUBERNETES_EXEC_INFO, always our
 * own (client-go appends it last, so it wins there too). */
static int build_env(struct run *r, struct sw_error *err)
{
    const struct sw_kube_exec *e = r->t->exec;
    size_t ninherited = sizeof(inherited) / sizeof(inherited[0]);
    r->env = sw_calloc(ninherited + e->nenv + 2, sizeof(char *));
    if (r->env == NULL)
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    for (size_t i = 0; i < ninherited; i++) {
        const char *v = getenv(inherited[i]);
        if (v == NULL || named_from(e, 0, inherited[i]))
            continue;
        if ((r->env[r->nenv++] = env_pair(inherited[i], v)) == NULL)
            return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    }
    for (size_t j = 0; j < e->nenv; j++) {
        if (strcmp(e->env_names[j], "KUBERNETES_EXEC_INFO") == 0 ||
            named_from(e, j + 1, e->env_names[j]))
            continue;
        if ((r->env[r->nenv++] = env_pair(e->env_names[j], e->env_values[j])) == NULL)
            return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    }
    /* spec.interactive is always false: the hub has no terminal. */
    cJSON *info = cJSON_CreateObject();
    cJSON *spec = info ? cJSON_AddObjectToObject(info, "spec") : NULL;
    if (spec == NULL || !cJSON_AddStringToObject(info, "kind", "ExecCredential") ||
        !cJSON_AddStringToObject(info, "apiVersion", e->api_version) ||
        !cJSON_AddBoolToObject(spec, "interactive", 0)) {
        cJSON_Delete(info);
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    }
    if (e->provide_cluster_info) {
        cJSON *cl = cJSON_AddObjectToObject(spec, "cluster");
        if (cl == NULL || !cJSON_AddStringToObject(cl, "server", r->t->server)) {
            cJSON_Delete(info);
            return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
        }
        if (r->t->tls_server_name)
            cJSON_AddStringToObject(cl, "tls-server-name", r->t->tls_server_name);
        cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify", r->t->insecure);
        if (r->t->ca_data != NULL) {
            char *b64 = sw_malloc(r->t->ca_len / 3 * 4 + 8);
            if (b64 != NULL) {
                sw_base64_encode(r->t->ca_data, r->t->ca_len, b64);
                cJSON_AddStringToObject(cl, "certificate-authority-data", b64);
                sw_free(b64);
            }
        }
        if (r->t->proxy_url)
            cJSON_AddStringToObject(cl, "proxy-url", r->t->proxy_url);
    }
    char *json = cJSON_PrintUnformatted(info);
    cJSON_Delete(info);
    if (json == NULL)
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    r->env[r->nenv++] = env_pair("KUBERNETES_EXEC_INFO", json);
    cJSON_free(json);
    if (r->env[r->nenv - 1] == NULL)
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    return 0;
}

int sw_exec_run(uv_loop_t *loop, const struct sw_kube_target *t, sw_exec_done_cb cb, void *ctx,
                struct sw_error *err)
{
    const struct sw_kube_exec *e = t->exec;
    if (e == NULL)
        return sw_error_set(err, SW_EINVAL, "kubeconfig \"%s\": user \"%s\": no exec plugin",
                            t->source, t->user ? t->user : "");
    struct run *r = sw_calloc(1, sizeof(*r));
    if (r == NULL)
        return sw_error_set(err, SW_ENOMEM, "exec plugin: out of memory");
    r->t = t;
    r->cb = cb;
    r->ctx = ctx;
    snprintf(r->what, sizeof(r->what),
             "kubeconfig \"%.150s\": user \"%.60s\": exec plugin \"%.100s\"", t->source,
             t->user ? t->user : "", e->command);
    if (e->interactive == SW_KUBE_INTERACTIVE_ALWAYS) {
        int rc = sw_error_set(err, SW_EUNSUPPORTED,
                              "%s: interactiveMode is Always, but spillway runs plugins without "
                              "a terminal; use a plugin mode that needs no user input",
                              r->what);
        sw_free(r);
        return rc;
    }
    sw_buf_init(&r->obuf, SW_EXEC_MAX_OUTPUT);
    sw_buf_init(&r->ebuf, 8192);
    int rc = build_env(r, err);
    char **argv = rc == 0 ? sw_calloc(e->nargs + 2, sizeof(char *)) : NULL;
    if (rc == 0 && argv == NULL)
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", r->what);
    if (rc != 0) {
        free_env(r->env, r->nenv);
        sw_free(r);
        return rc;
    }
    argv[0] = e->command;
    for (size_t i = 0; i < e->nargs; i++)
        argv[i + 1] = e->args[i];
    uv_pipe_init(loop, &r->out, 0);
    uv_pipe_init(loop, &r->errp, 0);
    r->out.data = r->errp.data = r->proc.data = r;
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&r->out;
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&r->errp;
    uv_process_options_t opts = {0};
    opts.file = e->command;
    opts.args = argv;
    opts.env = r->env;
    opts.exit_cb = on_exit_cb;
    opts.stdio = stdio;
    opts.stdio_count = 3;
    int urc = uv_spawn(loop, &r->proc, &opts);
    sw_free(argv);
    if (urc != 0) {
        rc = sw_error_set(err, SW_EAUTH, "%s: cannot start: %s%s%s", r->what, uv_strerror(urc),
                          e->install_hint ? "; " : "", e->install_hint ? e->install_hint : "");
        /* The handles were initialised, so they must be closed; the run is
         * freed once they are, without calling back (we return the error). */
        r->silent = 1;
        r->open = 3;
        uv_close((uv_handle_t *)&r->proc, on_closed);
        uv_close((uv_handle_t *)&r->out, on_closed);
        uv_close((uv_handle_t *)&r->errp, on_closed);
        return rc;
    }
    r->open = 4; /* proc, timer, out, err */
    uv_timer_init(loop, &r->timer);
    r->timer.data = r;
    uv_timer_start(&r->timer, on_timeout, SW_EXEC_TIMEOUT_MS, 0);
    uv_read_start((uv_stream_t *)&r->out, on_alloc, on_read);
    uv_read_start((uv_stream_t *)&r->errp, on_alloc, on_read);
    return 0;
}

struct sync_ctx {
    int rc;
    struct sw_exec_cred *cred;
    struct sw_error *err;
};

static void on_sync(int rc, struct sw_exec_cred *cred, const struct sw_error *err, void *ctx)
{
    struct sync_ctx *s = ctx;
    s->rc = rc;
    if (rc == 0) {
        *s->cred = *cred;
        memset(cred, 0, sizeof(*cred));
    } else if (s->err != NULL) {
        *s->err = *err;
    }
}

int sw_exec_run_sync(const struct sw_kube_target *t, struct sw_exec_cred *cred,
                     struct sw_error *err)
{
    memset(cred, 0, sizeof(*cred));
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0)
        return sw_error_set(err, SW_EIO, "exec plugin: cannot create a loop");
    struct sync_ctx s = {SW_EIO, cred, err};
    int rc = sw_exec_run(&loop, t, on_sync, &s, err);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc != 0 ? rc : s.rc;
}
