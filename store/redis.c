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
#include <strings.h>
#include <time.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/thread.h"
#include "store/redis_tls.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000
/* With Sentinel a failover is over in seconds: look again sooner. */
#define SENTINEL_BACKOFF_MAX_MS 2000
/*
 * How often a connected client asks the Sentinels whether the master moved.
 * A manual or forced failover leaves the old master up, answering writes,
 * until the Sentinels get round to demoting it (seconds later): those
 * writes are lost with it. Asking keeps that window short.
 */
#define SENTINEL_CHECK_MS 1000

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
    for (size_t i = 0; i < u->nsentinels; i++)
        sw_free(u->sentinel_host[i]);
    sw_free(u->master);
    if (u->sentinel_password != NULL) {
        memset(u->sentinel_password, 0, strlen(u->sentinel_password));
        sw_free(u->sentinel_password);
    }
    sw_free(u->tls_ca_file);
    sw_free(u->tls_cert_file);
    sw_free(u->tls_key_file);
    memset(u, 0, sizeof(*u));
}

/* The length of the URL's scheme and "://", or 0 for an unknown scheme. */
static size_t scheme_len(const char *url)
{
    if (strncmp(url, SW_REDIS_SENTINEL_TLS_SCHEME, strlen(SW_REDIS_SENTINEL_TLS_SCHEME)) == 0)
        return strlen(SW_REDIS_SENTINEL_TLS_SCHEME);
    if (strncmp(url, "rediss://", 9) == 0)
        return 9;
    if (strncmp(url, SW_REDIS_SENTINEL_SCHEME, strlen(SW_REDIS_SENTINEL_SCHEME)) == 0)
        return strlen(SW_REDIS_SENTINEL_SCHEME);
    if (strncmp(url, "redis://", 8) == 0)
        return 8;
    if (strncmp(url, "unix://", 7) == 0)
        return 7;
    return 0;
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

/*
 * Reads "[user][:password]@" at *p, if there is one (it ends at the last '@'
 * before the path; a unix socket's path may hold '/'), and moves *p past it.
 */
static int parse_credentials(const char **pp, int is_unix, struct sw_redis_url *out,
                             struct sw_error *err)
{
    const char *p = *pp;
    const char *at = NULL;
    for (const char *q = p; *q != '\0' && (is_unix || *q != '/'); q++)
        if (*q == '@')
            at = q;
    if (at == NULL)
        return 0;
    int bad = 0;
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
    if ((out->password == NULL && (colon == NULL || at > colon + 1)) ||
        (colon != NULL && colon > p && out->user == NULL)) {
        sw_redis_url_free(out);
        return sw_error_set(err, SW_ENOMEM, "redis URL: out of memory");
    }
    *pp = at + 1;
    return 0;
}

/*
 * One "host[:port]" or "[v6][:port]" in [s, e); the port defaults to
 * `defport`. Returns 0, or SW_EPARSE / SW_ENOMEM with a message that names
 * `what` (the caller frees *out's other strings).
 */
static int parse_hostport(const char *s, const char *e, int defport, const char *what, char **host,
                          int *port, struct sw_error *err)
{
    const char *pstart = NULL;
    *port = defport;
    if (s < e && *s == '[') {
        const char *rb = memchr(s, ']', (size_t)(e - s));
        if (rb == NULL)
            return sw_error_set(err, SW_EPARSE, "redis URL: unterminated '[' in %s", what);
        if (rb + 1 < e) {
            if (rb[1] != ':')
                return sw_error_set(err, SW_EPARSE, "redis URL: expected ':' after ']' in %s",
                                    what);
            pstart = rb + 2;
        }
        *host = sw_strndup(s + 1, (size_t)(rb - s - 1));
    } else {
        const char *colon = memchr(s, ':', (size_t)(e - s));
        if (colon != NULL)
            pstart = colon + 1;
        *host = sw_strndup(s, (size_t)((colon ? colon : e) - s));
    }
    if (*host == NULL)
        return sw_error_set(err, SW_ENOMEM, "redis URL: out of memory");
    if ((*host)[0] == '\0')
        return sw_error_set(err, SW_EPARSE, "redis URL: the host of %s is empty", what);
    if (pstart != NULL && parse_int(pstart, (size_t)(e - pstart), 1, 65535, port) != 0)
        return sw_error_set(err, SW_EPARSE, "redis URL: expected a port number 1-65535 in %s",
                            what);
    return 0;
}

/* Sets *dst to the decoded value [v, e) of query parameter `key`, once. */
static int query_value(const char *key, const char *v, const char *e, char **dst,
                       struct sw_error *err)
{
    if (*dst != NULL)
        return sw_error_set(err, SW_EPARSE, "redis URL: query parameter \"%s\" is given twice",
                            key);
    int bad = 0;
    *dst = pct_decode(v, (size_t)(e - v), &bad);
    if (*dst == NULL)
        return sw_error_set(err, bad ? SW_EPARSE : SW_ENOMEM, "redis URL: %s%s%s",
                            bad ? "bad %-escape in query parameter \"" : "out of memory",
                            bad ? key : "", bad ? "\"" : "");
    return 0;
}

/*
 * Reads the query "key=value[&key=value...]" of a URL (q just past the
 * '?'). Each key is known for one form only: db for unix://,
 * sentinelPassword for the Sentinel forms, tls_* for rediss forms. The
 * caller frees *out on error. Values are never echoed (one may be a
 * password).
 */
static int parse_query(const char *q, struct sw_redis_url *out, struct sw_error *err)
{
    static const char known[] =
        "the only query parameters known are db (unix://), " SW_REDIS_SENTINEL_PASSWORD_PARAM
        " (Sentinel URLs), tls_ca_file, tls_cert_file and tls_key_file (rediss URLs)";
    while (*q != '\0') {
        const char *e = q + strcspn(q, "&");
        const char *eq = memchr(q, '=', (size_t)(e - q));
        if (eq == NULL)
            return sw_error_set(err, SW_EPARSE,
                                "redis URL: expected key=value in the query (percent-encode "
                                "'&' and '=' in a value)");
        size_t klen = (size_t)(eq - q);
        const char *v = eq + 1;
        int rc;
#define KEY_IS(k) (klen == strlen(k) && strncmp(q, k, klen) == 0)
        if (KEY_IS("db") && out->path != NULL) {
            if (parse_int(v, (size_t)(e - v), 0, 1 << 20, &out->db) != 0)
                return sw_error_set(err, SW_EPARSE,
                                    "redis URL: expected a database number 0-1048576 in \"db\"");
        } else if (KEY_IS(SW_REDIS_SENTINEL_PASSWORD_PARAM) && out->sentinel) {
            rc = query_value(SW_REDIS_SENTINEL_PASSWORD_PARAM, v, e, &out->sentinel_password, err);
            if (rc != 0)
                return rc;
            if (out->sentinel_password[0] == '\0') {
                sw_free(out->sentinel_password);
                out->sentinel_password = NULL;
            }
        } else if ((KEY_IS("tls_ca_file") || KEY_IS("tls_cert_file") || KEY_IS("tls_key_file")) &&
                   !out->tls) {
            return sw_error_set(err, SW_EPARSE,
                                "redis URL: query parameter \"%.*s\" is for rediss:// and "
                                "rediss+sentinel:// URLs only",
                                (int)klen, q);
        } else if (KEY_IS("tls_ca_file") || KEY_IS("tls_cert_file") || KEY_IS("tls_key_file")) {
            char **dst = KEY_IS("tls_ca_file")     ? &out->tls_ca_file
                         : KEY_IS("tls_cert_file") ? &out->tls_cert_file
                                                   : &out->tls_key_file;
            char key[16];
            snprintf(key, sizeof(key), "%.*s", (int)klen, q);
            rc = query_value(key, v, e, dst, err);
            if (rc != 0)
                return rc;
            if ((*dst)[0] != '/' || strlen(*dst) >= 4096)
                return sw_error_set(err, SW_EPARSE,
                                    "redis URL: expected an absolute file path (under 4096 bytes) "
                                    "in \"%s\"",
                                    key);
        } else {
            return sw_error_set(err, SW_EPARSE, "redis URL: unknown query parameter \"%.*s\"; %s",
                                klen > 32 ? 32 : (int)klen, q, known);
        }
#undef KEY_IS
        q = *e == '&' ? e + 1 : e;
    }
    if ((out->tls_cert_file == NULL) != (out->tls_key_file == NULL))
        return sw_error_set(err, SW_EPARSE,
                            "redis URL: tls_cert_file and tls_key_file go together; give both or "
                            "neither");
    return 0;
}

static int sentinel_fail(struct sw_redis_url *out, int rc)
{
    sw_redis_url_free(out);
    return rc;
}

/*
 * redis+sentinel://[user[:password]@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]
 * [?sentinelPassword=PW], p just past the scheme.
 */
static int parse_sentinel(const char *p, struct sw_redis_url *out, struct sw_error *err)
{
    int rc = parse_credentials(&p, 0, out, err);
    if (rc != 0)
        return rc;
    out->sentinel = 1;
    const char *slash = strchr(p, '/');
    const char *hend = slash ? slash : p + strlen(p);
    if (hend == p)
        return sentinel_fail(out, sw_error_set(err, SW_EPARSE,
                                               "redis URL: expected at least one Sentinel "
                                               "host[:port] after " SW_REDIS_SENTINEL_SCHEME));
    for (const char *s = p; s <= hend;) {
        const char *comma = memchr(s, ',', (size_t)(hend - s));
        const char *e = comma ? comma : hend;
        char what[48];
        snprintf(what, sizeof(what), "Sentinel %zu", out->nsentinels + 1);
        if (e == s)
            return sentinel_fail(
                out, sw_error_set(err, SW_EPARSE, "redis URL: %s of the list is empty", what));
        if (out->nsentinels == SW_REDIS_MAX_SENTINELS)
            return sentinel_fail(out,
                                 sw_error_set(err, SW_EPARSE, "redis URL: more than %d Sentinels",
                                              SW_REDIS_MAX_SENTINELS));
        size_t k = out->nsentinels++;
        rc = parse_hostport(s, e, SW_REDIS_SENTINEL_PORT, what, &out->sentinel_host[k],
                            &out->sentinel_port[k], err);
        if (rc != 0)
            return sentinel_fail(out, rc);
        /* One Sentinel listed twice would vote twice in the quorum. */
        for (size_t i = 0; i < k; i++)
            if (out->sentinel_port[i] == out->sentinel_port[k] &&
                strcasecmp(out->sentinel_host[i], out->sentinel_host[k]) == 0)
                return sentinel_fail(
                    out, sw_error_set(err, SW_EPARSE,
                                      "redis URL: %s is Sentinel %zu again (%.100s:%d); each "
                                      "Sentinel is listed once, as each has one vote",
                                      what, i + 1, out->sentinel_host[k], out->sentinel_port[k]));
        s = e + 1;
    }
    if (slash == NULL)
        return sentinel_fail(out, sw_error_set(err, SW_EPARSE,
                                               "redis URL: expected /MASTERNAME after the "
                                               "Sentinels (the name they monitor the master by)"));
    const char *m = slash + 1;
    size_t mlen = strcspn(m, "/?");
    if (mlen == 0)
        return sentinel_fail(out, sw_error_set(err, SW_EPARSE,
                                               "redis URL: expected /MASTERNAME after the "
                                               "Sentinels (the name they monitor the master by)"));
    for (size_t i = 0; i < mlen; i++)
        if (!isalnum((unsigned char)m[i]) && m[i] != '.' && m[i] != '_' && m[i] != '-')
            return sentinel_fail(out, sw_error_set(err, SW_EPARSE,
                                                   "redis URL: the master name may hold letters, "
                                                   "digits, '.', '_' and '-' only"));
    out->master = sw_strndup(m, mlen);
    if (out->master == NULL)
        return sentinel_fail(out, sw_error_set(err, SW_ENOMEM, "redis URL: out of memory"));
    const char *q = m + mlen;
    if (*q == '/') {
        size_t dlen = strcspn(q + 1, "?");
        if (dlen > 0 && parse_int(q + 1, dlen, 0, 1 << 20, &out->db) != 0)
            return sentinel_fail(out, sw_error_set(err, SW_EPARSE,
                                                   "redis URL: expected a database number "
                                                   "after the master name's '/'"));
        q += 1 + dlen;
    }
    if (*q == '?' && (rc = parse_query(q + 1, out, err)) != 0)
        return sentinel_fail(out, rc);
    if (*q != '\0' && *q != '?')
        return sentinel_fail(out, sw_error_set(err, SW_EPARSE,
                                               "redis URL: expected '?' or the end after the "
                                               "database number"));
    return 0;
}

int sw_redis_url_parse(const char *url, struct sw_redis_url *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->port = 6379;
    int is_unix = 0;
    const char *p;
    if (strncmp(url, SW_REDIS_SENTINEL_SCHEME, strlen(SW_REDIS_SENTINEL_SCHEME)) == 0 ||
        strncmp(url, SW_REDIS_SENTINEL_TLS_SCHEME, strlen(SW_REDIS_SENTINEL_TLS_SCHEME)) == 0) {
        out->port = 0;
        out->sentinel = 1;
        out->tls = url[5] == 's';
        return parse_sentinel(url + scheme_len(url), out, err);
    } else if (strncmp(url, "redis://", 8) == 0) {
        p = url + 8;
    } else if (strncmp(url, "rediss://", 9) == 0) {
        p = url + 9;
        out->tls = 1;
    } else if (strncmp(url, "unix://", 7) == 0) {
        p = url + 7;
        is_unix = 1;
    } else {
        return sw_error_set(
            err, SW_EPARSE,
            "redis URL: expected it to start with redis://, rediss://, " SW_REDIS_SENTINEL_SCHEME
            ", " SW_REDIS_SENTINEL_TLS_SCHEME " or unix://");
    }
    int rc = parse_credentials(&p, is_unix, out, err);
    if (rc != 0)
        return rc;
    if (is_unix) {
        const char *q = strchr(p, '?');
        size_t plen = q ? (size_t)(q - p) : strlen(p);
        if (plen == 0 || p[0] != '/') {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_EPARSE, "redis URL: expected an absolute socket path");
        }
        out->path = sw_strndup(p, plen);
        if (out->path == NULL) {
            sw_redis_url_free(out);
            return sw_error_set(err, SW_ENOMEM, "redis URL: out of memory");
        }
        if (q != NULL && (rc = parse_query(q + 1, out, err)) != 0) {
            sw_redis_url_free(out);
            return rc;
        }
        return 0;
    }
    const char *query = strchr(p, '?');
    const char *end = query ? query : p + strlen(p);
    const char *slash = memchr(p, '/', (size_t)(end - p));
    const char *hend = slash ? slash : end;
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
    if (slash != NULL && slash + 1 < end &&
        parse_int(slash + 1, (size_t)(end - slash - 1), 0, 1 << 20, &out->db) != 0) {
        sw_redis_url_free(out);
        return sw_error_set(err, SW_EPARSE, "redis URL: expected a database number after the '/'");
    }
    if (query != NULL && (rc = parse_query(query + 1, out, err)) != 0) {
        sw_redis_url_free(out);
        return rc;
    }
    return 0;
}

void sw_redis_url_redacted(const struct sw_redis_url *u, char *out, size_t outlen)
{
    const char *cred = u->password ? ":***@" : (u->user ? "@" : "");
    if (u->sentinel) {
        size_t k = (size_t)snprintf(
            out, outlen, "%s%s%s", u->tls ? SW_REDIS_SENTINEL_TLS_SCHEME : SW_REDIS_SENTINEL_SCHEME,
            u->user ? u->user : "", cred);
        for (size_t i = 0; i < u->nsentinels && k < outlen; i++) {
            const char *h = u->sentinel_host[i];
            int v6 = strchr(h, ':') != NULL;
            k += (size_t)snprintf(out + k, outlen - k, "%s%s%s%s:%d", i ? "," : "", v6 ? "[" : "",
                                  h, v6 ? "]" : "", u->sentinel_port[i]);
        }
        if (k < outlen)
            snprintf(out + k, outlen - k, "/%s/%d%s", u->master ? u->master : "", u->db,
                     u->sentinel_password ? "?" SW_REDIS_SENTINEL_PASSWORD_PARAM "=***" : "");
        return;
    }
    if (u->path != NULL)
        snprintf(out, outlen, "unix://%s%s%s?db=%d", u->user ? u->user : "", cred, u->path, u->db);
    else
        snprintf(out, outlen, "%s%s%s%s:%d/%d", u->tls ? "rediss://" : "redis://",
                 u->user ? u->user : "", cred, u->host, u->port, u->db);
}

/* Appends the percent-encoding of s at out[*k] (bounded; clears *fits when short). */
static void put_encoded(char *out, size_t outlen, size_t *k, const char *s, int *fits)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        char enc[3] = {(char)*q, 0, 0};
        size_t n = 1;
        if (!(isalnum(*q) || *q == '-' || *q == '.' || *q == '_' || *q == '~')) {
            enc[0] = '%';
            enc[1] = hex[*q >> 4];
            enc[2] = hex[*q & 15];
            n = 3;
        }
        for (size_t i = 0; i < n; i++) {
            if (*k + 1 < outlen)
                out[(*k)++] = enc[i];
            else
                *fits = 0;
        }
    }
}

int sw_redis_url_with_sentinel_password(const char *url, const char *password, char *out,
                                        size_t outlen, struct sw_error *err)
{
    struct sw_redis_url u;
    int rc = sw_redis_url_parse(url, &u, err);
    if (rc != 0)
        return rc;
    int sentinel = u.sentinel, has = u.sentinel_password != NULL;
    sw_redis_url_free(&u);
    if (outlen > 0)
        out[0] = '\0';
    if (password != NULL && !sentinel)
        return sw_error_set(err, SW_EINVAL,
                            "redis URL: a Sentinel password was given, but the URL is not a "
                            "Sentinel one (" SW_REDIS_SENTINEL_SCHEME "...)");
    if (password != NULL && has)
        return sw_error_set(err, SW_EINVAL,
                            "redis URL: it already holds a Sentinel password, and another was "
                            "given separately; give it one way only");
    size_t k = strlen(url);
    if (k >= outlen)
        return sw_error_set(err, SW_ETOOBIG, "redis URL: longer than %zu bytes",
                            outlen ? outlen - 1 : 0);
    memcpy(out, url, k + 1);
    if (password == NULL)
        return 0;
    int fits = 1;
    /* After the TLS parameters, say, when the URL has a query already (a
     * '?' in the credentials is not one). */
    const char *h = url + scheme_len(url);
    const char *at = NULL;
    for (const char *q = h; *q != '\0' && *q != '/'; q++)
        if (*q == '@')
            at = q;
    const char *key = strchr(at ? at : h, '?') != NULL ? "&" SW_REDIS_SENTINEL_PASSWORD_PARAM "="
                                                       : "?" SW_REDIS_SENTINEL_PASSWORD_PARAM "=";
    for (const char *q = key; *q; q++) {
        if (k + 1 < outlen)
            out[k++] = *q;
        else
            fits = 0;
    }
    put_encoded(out, outlen, &k, password, &fits);
    if (!fits) {
        memset(out, 0, outlen);
        return sw_error_set(err, SW_ETOOBIG,
                            "redis URL: longer than %zu bytes once the Sentinel password is added",
                            outlen ? outlen - 1 : 0);
    }
    out[k] = '\0';
    return 0;
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
    const char *p = url + scheme_len(url);
    int is_unix = strncmp(url, "unix://", 7) == 0;
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
    put_encoded(out, outlen, &k, password, &fits);
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

/* Whether an error reply says the node is not, or not yet, a usable master. */
static int failover_error(const char *s)
{
    return s != NULL && (strncmp(s, "READONLY", 8) == 0 || strncmp(s, "LOADING", 7) == 0 ||
                         strncmp(s, "MASTERDOWN", 10) == 0);
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
    char node[300]; /* host:port of the node connected to, or last connected to */
    /* Sentinel: the master is looked up on a thread of its own (blocking
     * calls, up to 2 s per Sentinel): never on libuv's pool, where a lookup
     * would wait behind, or hold up, other work (common/thread.h). */
    struct sw_thread_job work;
    int discovering;
    _Atomic int
        checking; /* the lookup is a check of a live connection; the lookup thread reads it */
    uv_timer_t check;
    int disc_rc;
    char disc_host[256];
    int disc_port;
    char disc_path[128]; /* rediss: the relay's socket for disc_host:disc_port, or "" */
    struct sw_error disc_err;
    char disc_dissent[1024]; /* who named what, when the Sentinels disagreed ("" when not) */
    char dissent[1024];      /* the disagreement last logged, so that one is logged once */
    /* Commands issued while a connect runs on its thread (Sentinel lookup,
     * TLS handshake): sent behind AUTH once connected, or failed. */
    struct queued *qhead, *qtail;
};

struct pending {
    struct sw_redis *r;
    sw_redis_reply_cb cb;
    void *ctx;
};

struct queued {
    struct queued *next;
    char *cmd; /* formatted by hiredis; redisFreeCommand */
    size_t len;
    struct pending *p;
};

/* Whether a connect is under way on its thread, with no context yet. */
static int connecting(const struct sw_redis *r)
{
    return r->ac == NULL && r->discovering && !r->checking && !r->closing;
}

/* Sends the queued commands on the new context, or fails them with `why` when ac is NULL. */
static void on_reply(redisAsyncContext *ac, void *reply, void *privdata);
static void flush_queue(struct sw_redis *r, redisAsyncContext *ac, const char *why)
{
    while (r->qhead != NULL) {
        struct queued *q = r->qhead;
        r->qhead = q->next;
        if (ac == NULL ||
            redisAsyncFormattedCommand(ac, on_reply, q->p, q->cmd, q->len) != REDIS_OK) {
            if (q->p->cb != NULL)
                q->p->cb(r, NULL, ac == NULL ? why : "cannot queue the command", q->p->ctx);
            sw_free(q->p);
        }
        redisFreeCommand(q->cmd);
        sw_free(q);
    }
    r->qtail = NULL;
}

/* Queues a formatted command (taking cmd) behind the connect under way. */
static int enqueue(struct sw_redis *r, char *cmd, long long len, struct pending *p)
{
    struct queued *q = len < 0 ? NULL : sw_calloc(1, sizeof(*q));
    if (q == NULL) {
        if (len >= 0)
            redisFreeCommand(cmd);
        sw_free(p);
        return SW_ENOMEM;
    }
    q->cmd = cmd;
    q->len = (size_t)len;
    q->p = p;
    if (r->qtail != NULL)
        r->qtail->next = q;
    else
        r->qhead = q;
    r->qtail = q;
    return 0;
}

static void start_connect(struct sw_redis *r);

static void on_retry(uv_timer_t *t)
{
    start_connect(t->data);
}

static void schedule_retry(struct sw_redis *r, const char *why)
{
    flush_queue(r, NULL, why);
    if (r->closing)
        return;
    SW_LOG(SW_LOG_WARN, "redis connection lost", "redis=%s reason=%s retry_ms=%d",
           sw_log_q(r->redacted), sw_log_q(why), r->backoff_ms);
    uv_timer_start(&r->retry, on_retry, (uint64_t)r->backoff_ms, 0);
    int cap = r->url.sentinel ? SENTINEL_BACKOFF_MAX_MS : BACKOFF_MAX_MS;
    r->backoff_ms = r->backoff_ms * 2 > cap ? cap : r->backoff_ms * 2;
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

static void on_check_closed(uv_handle_t *h)
{
    struct sw_redis *r = h->data;
    uv_close((uv_handle_t *)&r->retry, on_timer_closed);
}

static void finish_close(struct sw_redis *r)
{
    flush_queue(r, NULL, "connection closed");
    uv_timer_stop(&r->retry);
    uv_timer_stop(&r->check);
    uv_close((uv_handle_t *)&r->check, on_check_closed);
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
        SW_LOG(SW_LOG_ERROR, "redis authentication failed", "redis=%s node=%s reason=%s",
               sw_log_q(r->redacted), sw_log_q(r->node), sw_log_q(reply->str));
        redisAsyncDisconnect(ac);
        return;
    }
}

/* SELECT (or PING) before the ROLE check of a Sentinel URL's node. */
static void on_setup(redisAsyncContext *ac, void *reply_, void *privdata)
{
    struct sw_redis *r = privdata;
    redisReply *reply = reply_;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        SW_LOG(SW_LOG_ERROR, "redis setup failed", "redis=%s node=%s reason=%s",
               sw_log_q(r->redacted), sw_log_q(r->node), sw_log_q(reply->str));
        redisAsyncDisconnect(ac);
    }
}

static void on_ready(redisAsyncContext *ac, void *reply_, void *privdata)
{
    struct sw_redis *r = privdata;
    redisReply *reply = reply_;
    if (reply == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        SW_LOG(SW_LOG_ERROR, "redis setup failed", "redis=%s node=%s reason=%s",
               sw_log_q(r->redacted), sw_log_q(r->node), sw_log_q(reply->str));
        redisAsyncDisconnect(ac);
        return;
    }
    if (r->url.sentinel) {
        /* The Sentinels may name a node that is not master yet (or any more):
         * ask again rather than write to a replica. */
        int master = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                     reply->element[0]->type == REDIS_REPLY_STRING &&
                     strcmp(reply->element[0]->str, "master") == 0;
        if (!master) {
            SW_LOG(SW_LOG_WARN, "redis node named by the Sentinels is not a master; asking again",
                   "redis=%s node=%s", sw_log_q(r->redacted), sw_log_q(r->node));
            redisAsyncDisconnect(ac);
            return;
        }
    }
    r->up = 1;
    r->backoff_ms = BACKOFF_MIN_MS;
    SW_LOG(SW_LOG_INFO, "redis connected", "redis=%s node=%s", sw_log_q(r->redacted),
           sw_log_q(r->node));
    if (r->on_state != NULL)
        r->on_state(r, 1, "connected", r->ctx);
}

/*
 * Connects to one node: host:port, or the URL's socket when host is NULL.
 * With TLS, `relay` is the socket of the relay already connected to
 * host:port (redis_tls.h).
 */
static void connect_node(struct sw_redis *r, const char *host, int port, const char *relay)
{
    if (host != NULL)
        snprintf(r->node, sizeof(r->node), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    else
        snprintf(r->node, sizeof(r->node), "%s", r->url.path);
    redisAsyncContext *ac = relay != NULL  ? redisAsyncConnectUnix(relay)
                            : host == NULL ? redisAsyncConnectUnix(r->url.path)
                                           : redisAsyncConnect(host, port);
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
    if (relay != NULL && !sw_redis_tls_peer_is_us(ac->c.fd)) {
        redisAsyncFree(ac); /* nothing sent: the password goes only to our own relay */
        schedule_retry(r, "the TLS relay's socket is not this process's");
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
    redisCallbackFn *before_role = r->url.sentinel ? on_setup : on_ready;
    if (r->url.db != 0)
        redisAsyncCommand(ac, before_role, r, "SELECT %d", r->url.db);
    else
        redisAsyncCommand(ac, before_role, r, "PING");
    if (r->url.sentinel)
        redisAsyncCommand(ac, on_ready, r, "ROLE");
    flush_queue(r, ac, NULL);
}

/*
 * On a thread of its own: the blocking Sentinel lookup, and for TLS the
 * connect and handshake of the relay (reads r->url only).
 */
static void discover_work(struct sw_thread_job *w)
{
    struct sw_redis *r = w->data;
    memset(&r->disc_err, 0, sizeof(r->disc_err));
    r->disc_path[0] = '\0';
    r->disc_dissent[0] = '\0';
    if (r->url.sentinel) {
        r->disc_rc = sw_redis_sentinel_discover(&r->url, 2000, r->disc_host, sizeof(r->disc_host),
                                                &r->disc_port, r->disc_dissent,
                                                sizeof(r->disc_dissent), &r->disc_err);
    } else {
        snprintf(r->disc_host, sizeof(r->disc_host), "%s", r->url.host);
        r->disc_port = r->url.port;
        r->disc_rc = 0;
    }
    if (r->disc_rc == 0 && r->url.tls && !r->checking) {
        struct sw_redis_tls_opts o = {r->url.tls_ca_file, r->url.tls_cert_file,
                                      r->url.tls_key_file};
        r->disc_rc = sw_redis_tls_open(r->disc_host, r->disc_port, &o, 2000, r->disc_path,
                                       sizeof(r->disc_path), &r->disc_err);
    }
}

/* Logs a disagreement of the Sentinels once, and its end. */
static void log_dissent(struct sw_redis *r)
{
    if (strcmp(r->disc_dissent, r->dissent) == 0)
        return;
    if (r->disc_dissent[0] != '\0')
        SW_LOG(SW_LOG_WARN, "the Sentinels disagree on the master",
               "redis=%s quorum=%zu sentinels=%s", sw_log_q(r->redacted), r->url.nsentinels / 2 + 1,
               sw_log_q(r->disc_dissent));
    else
        SW_LOG(SW_LOG_INFO, "the Sentinels agree on the master again", "redis=%s",
               sw_log_q(r->redacted));
    snprintf(r->dissent, sizeof(r->dissent), "%s", r->disc_dissent);
}

static void discover_done(struct sw_thread_job *w, int status)
{
    struct sw_redis *r = w->data;
    r->discovering = 0;
    if (r->closing) {
        finish_close(r);
        return;
    }
    if (status == 0 && r->url.sentinel)
        log_dissent(r);
    if (r->checking) {
        /* A live connection: follow the master when the Sentinels name
         * another node (the old one may still take writes, to be lost). */
        r->checking = 0;
        char now[300];
        snprintf(now, sizeof(now), strchr(r->disc_host, ':') ? "[%s]:%d" : "%s:%d", r->disc_host,
                 r->disc_port);
        if (status == 0 && r->disc_rc == 0 && r->ac != NULL && strcmp(now, r->node) != 0 &&
            !(r->ac->c.flags & REDIS_DISCONNECTING)) {
            SW_LOG(SW_LOG_WARN, "the Sentinels name another master; following it",
                   "redis=%s node=%s master=%s", sw_log_q(r->redacted), sw_log_q(r->node),
                   sw_log_q(now));
            set_down(r, "the master moved");
            redisAsyncDisconnect(r->ac);
        }
        return;
    }
    if (status != 0 || r->disc_rc != 0) {
        schedule_retry(r, status != 0 ? "cannot start the Sentinel lookup" : r->disc_err.msg);
        return;
    }
    if (r->url.tls && r->disc_path[0] == '\0') {
        /* The lookup began as a check and has no relay: start over. */
        start_connect(r);
        return;
    }
    connect_node(r, r->disc_host, r->disc_port, r->url.tls ? r->disc_path : NULL);
}

static void on_check(uv_timer_t *t)
{
    struct sw_redis *r = t->data;
    if (!r->up || r->discovering || r->closing || r->ac == NULL)
        return;
    r->discovering = 1;
    r->checking = 1;
    r->work.data = r;
    if (sw_thread_job_start(r->loop, &r->work, discover_work, discover_done) != 0) {
        r->discovering = 0;
        r->checking = 0;
    }
}

static void start_connect(struct sw_redis *r)
{
    if (!r->url.sentinel && !r->url.tls) {
        connect_node(r, r->url.path ? NULL : r->url.host, r->url.port, NULL);
        return;
    }
    if (r->discovering) {
        r->checking = 0; /* the lookup under way is for connecting now */
        return;
    }
    r->discovering = 1;
    r->work.data = r;
    if (sw_thread_job_start(r->loop, &r->work, discover_work, discover_done) != 0) {
        r->discovering = 0;
        schedule_retry(r, r->url.tls ? "cannot start the TLS connect"
                                     : "cannot queue the Sentinel lookup");
    }
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
    uv_timer_init(loop, &r->check);
    r->check.data = r;
    if (r->url.sentinel)
        uv_timer_start(&r->check, on_check, SENTINEL_CHECK_MS, SENTINEL_CHECK_MS);
    start_connect(r);
    *out = r;
    return 0;
}

int sw_redis_is_up(const struct sw_redis *r)
{
    return r->up;
}

int sw_redis_is_sentinel(const struct sw_redis *r)
{
    return r->url.sentinel;
}

const char *sw_redis_node(const struct sw_redis *r)
{
    return r->node;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct pending *p = privdata;
    struct sw_redis *r = p->r;
    const char *why = NULL;
    if (reply == NULL)
        why = ac->errstr[0] ? ac->errstr : "connection closed";
    redisReply *rr = reply;
    if (rr != NULL && r->url.sentinel && rr->type == REDIS_REPLY_ERROR && failover_error(rr->str) &&
        !r->closing && r->ac == ac && !(ac->c.flags & REDIS_DISCONNECTING)) {
        /* The node was demoted (READONLY), or is loading: find the master
         * again. The disconnect completes once the replies in flight are read. */
        SW_LOG(SW_LOG_WARN, "redis node is not a usable master; asking the Sentinels again",
               "redis=%s node=%s reason=%s", sw_log_q(r->redacted), sw_log_q(r->node),
               sw_log_q(rr->str));
        set_down(r, rr->str);
        redisAsyncDisconnect(ac);
    }
    if (p->cb != NULL)
        p->cb(p->r, reply, why, p->ctx);
    sw_free(p);
}

int sw_redis_command_argv(struct sw_redis *r, sw_redis_reply_cb cb, void *ctx, int argc,
                          const char **argv, const size_t *argvlen)
{
    if ((r->ac == NULL && !connecting(r)) || r->closing)
        return SW_EUNAVAIL;
    struct pending *p = sw_malloc(sizeof(*p));
    if (p == NULL)
        return SW_ENOMEM;
    p->r = r;
    p->cb = cb;
    p->ctx = ctx;
    if (r->ac == NULL) {
        char *cmd = NULL;
        return enqueue(r, cmd, redisFormatCommandArgv(&cmd, argc, argv, argvlen), p);
    }
    if (redisAsyncCommandArgv(r->ac, on_reply, p, argc, argv, argvlen) != REDIS_OK) {
        sw_free(p);
        return SW_EUNAVAIL;
    }
    return 0;
}

int sw_redis_command(struct sw_redis *r, sw_redis_reply_cb cb, void *ctx, const char *fmt, ...)
{
    if ((r->ac == NULL && !connecting(r)) || r->closing)
        return SW_EUNAVAIL;
    struct pending *p = sw_malloc(sizeof(*p));
    if (p == NULL)
        return SW_ENOMEM;
    p->r = r;
    p->cb = cb;
    p->ctx = ctx;
    va_list ap;
    va_start(ap, fmt);
    if (r->ac == NULL) {
        char *cmd = NULL;
        int len = redisvFormatCommand(&cmd, fmt, ap);
        va_end(ap);
        return enqueue(r, cmd, len, p);
    }
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
    else if (!r->discovering)
        finish_close(r); /* else discover_done does */
}

/* ---- blocking ----------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

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

/* One command on a context, without the Sentinel slots (for setting one up). */
static int raw_command(redisContext *c, redisReply **reply, struct sw_error *err, const char *fmt,
                       ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = sync_reply_rc(c, r, err);
    if (rc != 0 && r != NULL)
        freeReplyObject(r);
    *reply = rc == 0 ? r : NULL;
    return rc;
}

static redisContext *tcp_connect(const char *host, int port, long timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c != NULL && c->err == 0)
        redisSetTimeout(c, tv);
    return c;
}

int sw_redis_sync_open(const struct sw_redis_url *u, const char *host, int port, long timeout_ms,
                       redisContext **out, struct sw_error *err)
{
    redisContext *c;
    *out = NULL;
    if (!u->tls) {
        c = tcp_connect(host, port, timeout_ms);
    } else {
        char path[128];
        struct sw_redis_tls_opts o = {u->tls_ca_file, u->tls_cert_file, u->tls_key_file};
        int rc = sw_redis_tls_open(host, port, &o, timeout_ms, path, sizeof(path), err);
        if (rc != 0)
            return rc;
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        c = redisConnectUnixWithTimeout(path, tv);
        if (c != NULL && c->err == 0 && !sw_redis_tls_peer_is_us(c->fd)) {
            redisFree(c); /* nothing sent: the password goes only to our own relay */
            return sw_error_set(err, SW_ENET,
                                "cannot connect to %s%s%s:%d: the TLS relay's socket "
                                "is not this process's",
                                strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
                                port);
        }
        if (c != NULL && c->err == 0)
            redisSetTimeout(c, tv);
    }
    if (c == NULL || c->err) {
        int v6 = strchr(host, ':') != NULL;
        int rc =
            sw_error_set(err, c ? SW_ENET : SW_ENOMEM, "cannot connect to %s%s%s:%d: %s",
                         v6 ? "[" : "", host, v6 ? "]" : "", port, c ? c->errstr : "out of memory");
        if (c != NULL)
            redisFree(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* Appends "; " and printf output to a bounded message. */
static void note(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *buf, size_t len, const char *fmt, ...)
{
    size_t k = strlen(buf);
    if (k + 2 >= len)
        return;
    if (k > 0) {
        memcpy(buf + k, "; ", 3);
        k += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, len - k, fmt, ap);
    va_end(ap);
}

static int same_address(const struct sw_redis_sentinel_answer *x,
                        const struct sw_redis_sentinel_answer *y)
{
    return x->said == SW_SENTINEL_NAMED && y->said == SW_SENTINEL_NAMED && x->port == y->port &&
           strcasecmp(x->host, y->host) == 0;
}

int sw_redis_sentinel_agree(const char *master, const struct sw_redis_sentinel_answer *a, size_t n,
                            size_t *agreed, char *dissent, size_t dlen, struct sw_error *err)
{
    size_t need = n / 2 + 1, best = 0, best_votes = 0, named = 0, answered = 0;
    int split = 0;
    char said[1024] = "";
    for (size_t i = 0; i < n; i++) {
        if (a[i].said == SW_SENTINEL_NAMED) {
            size_t votes = 0;
            for (size_t j = 0; j < n; j++)
                votes += (size_t)same_address(&a[i], &a[j]);
            if (votes > best_votes) {
                best_votes = votes;
                best = i;
            }
            named++;
            int v6 = strchr(a[i].host, ':') != NULL;
            note(said, sizeof(said), "%s names %s%s%s:%d", a[i].sentinel, v6 ? "[" : "", a[i].host,
                 v6 ? "]" : "", a[i].port);
        } else {
            note(said, sizeof(said), "%s: %s", a[i].sentinel, a[i].why);
        }
        if (a[i].said != SW_SENTINEL_SILENT)
            answered++;
    }
    /* Dissent: those that answered did not all name one address. */
    for (size_t i = 0; i < n; i++)
        if ((a[i].said == SW_SENTINEL_NAMED && !same_address(&a[i], &a[best])) ||
            (a[i].said == SW_SENTINEL_UNKNOWN && named > 0))
            split = 1;
    if (dissent != NULL && dlen > 0)
        snprintf(dissent, dlen, "%s", split ? said : "");
    if (n > 0 && best_votes >= need) {
        *agreed = best;
        return 0;
    }
    if (named > 0)
        return sw_error_set(err, SW_EUNAVAIL,
                            "no majority of the %zu Sentinels (%zu needed) names one master for "
                            "\"%s\": %s",
                            n, need, master, said);
    return sw_error_set(err, answered > 0 ? SW_ENOENT : SW_ENET,
                        "no Sentinel named the master \"%s\": %s", master, said);
}

/* Asks one Sentinel where the master is; fills *out. */
static void sentinel_ask(const struct sw_redis_url *u, size_t i, long timeout_ms,
                         struct sw_redis_sentinel_answer *out)
{
    const char *h = u->sentinel_host[i];
    int p = u->sentinel_port[i];
    memset(out, 0, sizeof(*out));
    snprintf(out->sentinel, sizeof(out->sentinel), strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, p);
    out->said = SW_SENTINEL_SILENT;
    struct sw_error oerr = {0};
    redisContext *c = NULL;
    redisReply *r = NULL;
    if (sw_redis_sync_open(u, h, p, timeout_ms, &c, &oerr) != 0) {
        snprintf(out->why, sizeof(out->why), "%.200s", oerr.msg);
        return;
    }
    if (u->sentinel_password != NULL) {
        r = redisCommand(c, "AUTH %s", u->sentinel_password);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            /* The server's text (WRONGPASS, ...) never holds the password. */
            snprintf(out->why, sizeof(out->why), "%.200s", r ? r->str : c->errstr);
            goto done;
        }
        freeReplyObject(r);
    }
    r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", u->master);
    if (r == NULL) {
        snprintf(out->why, sizeof(out->why), "%.200s", c->errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(out->why, sizeof(out->why), "%.200s", r->str);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[0]->type == REDIS_REPLY_STRING &&
               r->element[1]->type == REDIS_REPLY_STRING &&
               parse_int(r->element[1]->str, r->element[1]->len, 1, 65535, &out->port) == 0 &&
               r->element[0]->len > 0 && r->element[0]->len < sizeof(out->host) &&
               memchr(r->element[0]->str, '\0', r->element[0]->len) == NULL) {
        memcpy(out->host, r->element[0]->str, r->element[0]->len);
        out->host[r->element[0]->len] = '\0';
        out->said = SW_SENTINEL_NAMED;
    } else {
        out->said = SW_SENTINEL_UNKNOWN;
        snprintf(out->why, sizeof(out->why), "%s",
                 r->type == REDIS_REPLY_NIL ? "does not monitor a master of that name"
                                            : "answered something other than an address");
    }
done:
    if (r != NULL)
        freeReplyObject(r);
    redisFree(c);
}

struct ask_arg {
    const struct sw_redis_url *u;
    size_t i;
    long timeout_ms;
    struct sw_redis_sentinel_answer *out;
};

static void ask_thread(void *p)
{
    struct ask_arg *x = p;
    sentinel_ask(x->u, x->i, x->timeout_ms, x->out);
}

/* Asks every Sentinel at once, each on a thread of its own, so that
 * silent Sentinels cost one timeout in all, not one each; a Sentinel whose
 * thread cannot start is asked on this one. */
static void ask_all(const struct sw_redis_url *u, long timeout_ms,
                    struct sw_redis_sentinel_answer *a)
{
    struct ask_arg args[SW_REDIS_MAX_SENTINELS];
    uv_thread_t t[SW_REDIS_MAX_SENTINELS];
    int started[SW_REDIS_MAX_SENTINELS] = {0};
    size_t n = u->nsentinels < SW_REDIS_MAX_SENTINELS ? u->nsentinels : SW_REDIS_MAX_SENTINELS;
    for (size_t i = 0; i < n; i++) {
        args[i] = (struct ask_arg){u, i, timeout_ms, &a[i]};
        started[i] = n > 1 && uv_thread_create(&t[i], ask_thread, &args[i]) == 0;
        if (!started[i])
            sentinel_ask(u, i, timeout_ms, &a[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (started[i])
            uv_thread_join(&t[i]);
}

int sw_redis_sentinel_discover(const struct sw_redis_url *u, long timeout_ms, char *host,
                               size_t hostlen, int *port, char *dissent, size_t dlen,
                               struct sw_error *err)
{
    if (dissent != NULL && dlen > 0)
        dissent[0] = '\0';
    struct sw_redis_sentinel_answer *a = sw_calloc(u->nsentinels ? u->nsentinels : 1, sizeof(*a));
    if (a == NULL)
        return sw_error_set(err, SW_ENOMEM, "redis Sentinel lookup: out of memory");
    ask_all(u, timeout_ms, a);
    size_t k = 0;
    int rc = sw_redis_sentinel_agree(u->master, a, u->nsentinels, &k, dissent, dlen, err);
    if (rc == 0) {
        if (strlen(a[k].host) >= hostlen)
            rc = sw_error_set(err, SW_ETOOBIG,
                              "the master named by the Sentinels, %.200s, is too long", a[k].host);
        else {
            snprintf(host, hostlen, "%s", a[k].host);
            *port = a[k].port;
        }
    }
    sw_free(a);
    return rc;
}

/*
 * Connects to one node (host:port, or u's socket path), authenticates,
 * selects the database and, for a Sentinel URL, checks that the node says
 * it is the master (SW_EUNAVAIL when not). `red` names the URL in messages.
 */
static int node_connect(const struct sw_redis_url *u, const char *host, int port, long timeout_ms,
                        const char *red, redisContext **out, struct sw_error *err)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int rc;
    redisContext *c;
    if (u->path != NULL) {
        c = redisConnectUnixWithTimeout(u->path, tv);
        if (c == NULL || c->err) {
            rc = sw_error_set(err, SW_ENET, "redis %s: cannot connect to %s: %s", red, u->path,
                              c ? c->errstr : "out of memory");
            if (c)
                redisFree(c);
            return rc;
        }
    } else {
        struct sw_error oe = {0};
        rc = sw_redis_sync_open(u, host, port, timeout_ms, &c, &oe);
        if (rc != 0)
            return sw_error_set(err, rc, "redis %s: %s", red, oe.msg);
    }
    redisSetTimeout(c, tv);
    redisReply *reply = NULL;
    if (u->password != NULL) {
        if (u->user != NULL)
            rc = raw_command(c, &reply, err, "AUTH %s %s", u->user, u->password);
        else
            rc = raw_command(c, &reply, err, "AUTH %s", u->password);
        if (rc != 0) {
            if (rc == SW_EIO && strstr(err ? err->msg : "", "LOADING") == NULL) {
                rc = SW_EAUTH;
                if (err != NULL)
                    err->code = rc;
            }
            if (rc != SW_EAUTH && u->tls && u->tls_cert_file == NULL && err != NULL)
                /* With TLS 1.3 a server's refusal of the client comes after
                 * the handshake, as the connection closed here. */
                sw_error_wrap(err,
                              "redis %s: authentication (a server that requires a client "
                              "certificate closes the connection here: is tls_cert_file needed?)",
                              red);
            else
                sw_error_wrap(err, "redis %s: authentication", red);
            goto fail;
        }
        freeReplyObject(reply);
    }
    if (u->db != 0) {
        rc = raw_command(c, &reply, err, "SELECT %d", u->db);
        if (rc != 0) {
            sw_error_wrap(err, "redis %s: SELECT %d", red, u->db);
            goto fail;
        }
        freeReplyObject(reply);
    }
    if (u->sentinel) {
        rc = raw_command(c, &reply, err, "ROLE");
        if (rc != 0) {
            sw_error_wrap(err, "redis %s: ROLE", red);
            goto fail;
        }
        int master = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                     reply->element[0]->type == REDIS_REPLY_STRING &&
                     strcmp(reply->element[0]->str, "master") == 0;
        freeReplyObject(reply);
        if (!master) {
            rc = sw_error_set(err, SW_EUNAVAIL,
                              "redis %s: %s:%d, named by the Sentinels, is not a master (yet)", red,
                              host, port);
            goto fail;
        }
    }
    *out = c;
    return 0;
fail:
    redisFree(c);
    return rc;
}

/*
 * Finds the master through the Sentinels and connects to it, trying again
 * with a backoff (100 ms doubling to 2 s) for up to SW_REDIS_SENTINEL_WAIT_MS
 * while a failover is under way: the Sentinels have no majority for one
 * address, the named node refuses, is not yet master, or is loading. No
 * Sentinel answering, a master name they do not know, and a refused
 * password fail at once.
 */
static int sentinel_connect(const struct sw_redis_url *u, long timeout_ms, const char *red,
                            redisContext **out, struct sw_error *err)
{
    int64_t deadline = mono_ms() + SW_REDIS_SENTINEL_WAIT_MS;
    int backoff = BACKOFF_MIN_MS;
    for (;;) {
        char host[256];
        int port = 0;
        char dissent[1024] = "";
        int rc = sw_redis_sentinel_discover(u, timeout_ms, host, sizeof(host), &port, dissent,
                                            sizeof(dissent), err);
        if (dissent[0] != '\0')
            SW_LOG(SW_LOG_WARN, "the Sentinels disagree on the master",
                   "redis=%s quorum=%zu sentinels=%s", sw_log_q(red), u->nsentinels / 2 + 1,
                   sw_log_q(dissent));
        if (rc == SW_EUNAVAIL && mono_ms() + backoff <= deadline) {
            /* Split (a failover under way, or a Sentinel naming another
             * node): never follow a minority; ask again. */
            sleep_ms(backoff);
            backoff = backoff * 2 > SENTINEL_BACKOFF_MAX_MS ? SENTINEL_BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        if (rc != 0) {
            sw_error_wrap(err, "redis %s", red);
            return rc;
        }
        rc = node_connect(u, host, port, timeout_ms, red, out, err);
        if (rc == 0 || rc == SW_EAUTH || rc == SW_ENOMEM || mono_ms() + backoff > deadline)
            return rc;
        sleep_ms(backoff);
        backoff = backoff * 2 > SENTINEL_BACKOFF_MAX_MS ? SENTINEL_BACKOFF_MAX_MS : backoff * 2;
    }
}

/*
 * What a context of a Sentinel URL remembers, per thread (hiredis 0.14's
 * context has no user pointer): a few slots, the oldest reused. A context
 * that is not found here is used as it is, without following a failover.
 */
#define SYNC_SLOTS 8
struct sync_slot {
    redisContext *c;
    struct sw_redis_url url;
    long timeout_ms;
    char red[300];
};
static _Thread_local struct sync_slot sync_slots[SYNC_SLOTS];
static _Thread_local unsigned sync_next;

static struct sync_slot *slot_find(const redisContext *c)
{
    for (size_t i = 0; c != NULL && i < SYNC_SLOTS; i++)
        if (sync_slots[i].c == c)
            return &sync_slots[i];
    return NULL;
}

static void slot_clear(struct sync_slot *s)
{
    sw_redis_url_free(&s->url);
    memset(s, 0, sizeof(*s));
}

/* Puts the contents of `fresh` into c (same pointer for the caller), freeing c's old ones. */
static void context_replace(redisContext *c, redisContext *fresh)
{
    redisContext old = *c;
    *c = *fresh;
    *fresh = old;
    redisFree(fresh);
}

static int slot_reconnect(redisContext *c, struct sync_slot *s, struct sw_error *err)
{
    redisContext *fresh = NULL;
    int rc = sentinel_connect(&s->url, s->timeout_ms, s->red, &fresh, err);
    if (rc != 0)
        return rc;
    SW_LOG(SW_LOG_INFO, "redis: reconnected to the master named by the Sentinels", "redis=%s",
           sw_log_q(s->red));
    context_replace(c, fresh);
    return 0;
}

/* Runs one formatted command, following a failover for a Sentinel context. */
static int sync_run(redisContext *c, const char *cmd, long len, redisReply **reply,
                    struct sw_error *err)
{
    struct sync_slot *s = slot_find(c);
    int64_t deadline = mono_ms() + SW_REDIS_SENTINEL_WAIT_MS;
    int backoff = BACKOFF_MIN_MS;
    *reply = NULL;
    for (;;) {
        redisReply *r = NULL;
        if (redisAppendFormattedCommand(c, cmd, (size_t)len) == REDIS_OK)
            redisGetReply(c, (void **)&r);
        if (r == NULL) {
            int rc = sync_reply_rc(c, NULL, err);
            /* It may have run: report it, but leave the context usable. */
            if (s != NULL && slot_reconnect(c, s, NULL) != 0)
                SW_LOG(SW_LOG_WARN, "redis: no master to reconnect to yet", "redis=%s",
                       sw_log_q(s->red));
            return rc;
        }
        if (s != NULL && r->type == REDIS_REPLY_ERROR && failover_error(r->str) &&
            mono_ms() + backoff <= deadline) {
            SW_LOG(SW_LOG_INFO, "redis: the node is not a usable master; asking the Sentinels",
                   "redis=%s reason=%s", sw_log_q(s->red), sw_log_q(r->str));
            freeReplyObject(r);
            sleep_ms(backoff);
            backoff = backoff * 2 > SENTINEL_BACKOFF_MAX_MS ? SENTINEL_BACKOFF_MAX_MS : backoff * 2;
            int rc = slot_reconnect(c, s, err);
            if (rc != 0)
                return rc;
            continue;
        }
        int rc = sync_reply_rc(c, r, err);
        if (rc != 0) {
            freeReplyObject(r);
            return rc;
        }
        *reply = r;
        return 0;
    }
}

int sw_redis_sync_command_argv(redisContext *c, redisReply **reply, struct sw_error *err, int argc,
                               const char **argv, const size_t *argvlen)
{
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0) {
        *reply = NULL;
        return sw_error_set(err, SW_ENOMEM, "redis: out of memory");
    }
    int rc = sync_run(c, cmd, (long)len, reply, err);
    redisFreeCommand(cmd);
    return rc;
}

int sw_redis_sync_command(redisContext *c, redisReply **reply, struct sw_error *err,
                          const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0) {
        *reply = NULL;
        return sw_error_set(err, SW_ENOMEM, "redis: out of memory (or a bad format)");
    }
    int rc = sync_run(c, cmd, len, reply, err);
    redisFreeCommand(cmd);
    return rc;
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
    redisContext *c = NULL;
    int sentinel = u.sentinel;
    if (!sentinel) {
        rc = node_connect(&u, u.host, u.port, timeout_ms, red, &c, err);
        sw_redis_url_free(&u);
    } else {
        rc = sentinel_connect(&u, timeout_ms, red, &c, err);
        if (rc == 0) {
            struct sync_slot *s = slot_find(c);
            if (s == NULL) {
                s = &sync_slots[sync_next++ % SYNC_SLOTS];
            }
            slot_clear(s);
            s->c = c;
            s->url = u; /* the slot owns it now */
            s->timeout_ms = timeout_ms;
            snprintf(s->red, sizeof(s->red), "%s", red);
        } else {
            sw_redis_url_free(&u);
        }
    }
    if (rc != 0)
        return rc;
    /* A context freed with redisFree may leave a slot naming this address. */
    if (!sentinel) {
        struct sync_slot *stale = slot_find(c);
        if (stale != NULL)
            slot_clear(stale);
    }
    *out = c;
    return 0;
}

void sw_redis_sync_free(redisContext *c)
{
    if (c == NULL)
        return;
    struct sync_slot *s = slot_find(c);
    if (s != NULL)
        slot_clear(s);
    redisFree(c);
}
