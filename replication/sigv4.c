/*
 * sigv4.c - AWS Signature Version 4: canonical request, string to sign,
 * derived key, signature. Pure: no clock, no I/O, no globals.
 *
 * Follows AWS's description step by step; every step is checked by
 * tests/unit/replication/test_sigv4.c against the published suite.
 */
#include "replication/sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "common/alloc.h"

/* A signed request rarely carries more than a dozen headers; the cap keeps
 * the sort on the stack. */
#define MAX_HEADERS 64
#define MAX_QUERY   64

void sw_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void sw_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, len, md);
    sw_hex(md, sizeof(md), hex);
}

/* RFC 3986's unreserved set, spelled out: isalnum() follows the locale, and
 * in a single-byte locale it would let bytes above 0x7f through unencoded. */
static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

int sw_sigv4_uri_encode(struct sw_buf *out, const char *s, size_t len, int keep_slash)
{
    static const char digits[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int rc;
        if (unreserved(c) || (keep_slash && c == '/')) {
            rc = sw_buf_add(out, &s[i], 1);
        } else {
            char enc[3] = {'%', digits[c >> 4], digits[c & 15]};
            rc = sw_buf_add(out, enc, 3);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

struct hdr {
    char *name;  /* lower-case, owned */
    char *value; /* trimmed, spaces collapsed, owned */
    size_t order;
};

static int cmp_hdr(const void *a, const void *b)
{
    const struct hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

struct qp {
    char *name; /* encoded, owned */
    char *value;
};

static int cmp_qp(const void *a, const void *b)
{
    const struct qp *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : strcmp(x->value, y->value);
}

/* Trims and collapses runs of spaces, as the canonical header form wants. */
static char *canon_value(const char *v)
{
    size_t n = strlen(v);
    char *out = sw_malloc(n + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    int space = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == ' ' || c == '\t') {
            space = 1;
            continue;
        }
        if (space && o > 0)
            out[o++] = ' ';
        space = 0;
        out[o++] = c;
    }
    out[o] = '\0';
    return out;
}

static char *lower_dup(const char *s)
{
    char *d = sw_strdup(s);
    if (d != NULL)
        for (char *p = d; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    return d;
}

static char *encode_dup(const char *s)
{
    struct sw_buf b;
    sw_buf_init(&b, 64 * 1024);
    if (sw_buf_add(&b, "", 0) != 0 || sw_sigv4_uri_encode(&b, s, strlen(s), 0) != 0) {
        sw_buf_free(&b);
        return NULL;
    }
    return sw_buf_take(&b, NULL);
}

static int hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int len = 32;
    if (HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len) ==
        NULL)
        return SW_ECRYPTO;
    return 0;
}

int sw_sigv4_sign(const struct sw_sigv4_input *in, struct sw_sigv4_output *out,
                  struct sw_buf *canonical, struct sw_error *err)
{
    const char *missing = NULL;
    if (in->method == NULL)
        missing = "method";
    else if (in->host == NULL)
        missing = "host";
    else if (in->path == NULL)
        missing = "path";
    else if (in->payload_hash == NULL)
        missing = "payload_hash";
    else if (in->access_key == NULL || in->access_key[0] == '\0')
        missing = "access key";
    else if (in->secret_key == NULL || in->secret_key[0] == '\0')
        missing = "secret key";
    else if (in->region == NULL || in->region[0] == '\0')
        missing = "region";
    else if (in->service == NULL)
        missing = "service";
    if (missing != NULL)
        return sw_error_set(err, SW_EINVAL, "sigv4: %s is required", missing);
    if (in->nheaders + 3 > MAX_HEADERS || in->nquery > MAX_QUERY)
        return sw_error_set(err, SW_ETOOBIG, "sigv4: more than %d headers or %d query parameters",
                            MAX_HEADERS - 3, MAX_QUERY);

    time_t t = (time_t)in->time_s;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL)
        return sw_error_set(err, SW_ERANGE, "sigv4: time out of range");
    strftime(out->amz_date, sizeof(out->amz_date), "%Y%m%dT%H%M%SZ", &tm);
    char day[9];
    memcpy(day, out->amz_date, 8);
    day[8] = '\0';

    int rc = SW_ENOMEM;
    struct hdr h[MAX_HEADERS];
    struct qp q[MAX_QUERY];
    size_t nh = 0, nq = 0;
    struct sw_buf cr, signed_names;
    sw_buf_init(&cr, 1 << 20);
    sw_buf_init(&signed_names, 16 * 1024);

    /* Headers: the caller's, plus host, x-amz-date and the session token. */
    struct sw_sigv4_pair extra[3] = {{"host", in->host},
                                     {"x-amz-date", out->amz_date},
                                     {"x-amz-security-token", in->session_token}};
    size_t nextra = in->session_token != NULL ? 3 : 2;
    for (size_t i = 0; i < in->nheaders + nextra; i++) {
        const struct sw_sigv4_pair *p =
            i < in->nheaders ? &in->headers[i] : &extra[i - in->nheaders];
        h[nh].name = lower_dup(p->name);
        h[nh].value = canon_value(p->value ? p->value : "");
        h[nh].order = i;
        nh++;
        if (h[nh - 1].name == NULL || h[nh - 1].value == NULL)
            goto out;
    }
    qsort(h, nh, sizeof(h[0]), cmp_hdr);

    for (size_t i = 0; i < in->nquery; i++) {
        q[nq].name = encode_dup(in->query[i].name);
        q[nq].value = encode_dup(in->query[i].value ? in->query[i].value : "");
        nq++;
        if (q[nq - 1].name == NULL || q[nq - 1].value == NULL)
            goto out;
    }
    qsort(q, nq, sizeof(q[0]), cmp_qp);

    if (sw_buf_addf(&cr, "%s\n%s\n", in->method, in->path) != 0)
        goto out;
    for (size_t i = 0; i < nq; i++)
        if (sw_buf_addf(&cr, "%s%s=%s", i ? "&" : "", q[i].name, q[i].value) != 0)
            goto out;
    if (sw_buf_add(&cr, "\n", 1) != 0)
        goto out;
    /* Repeated names are joined with commas in the order given. */
    for (size_t i = 0; i < nh; i++) {
        int first = i == 0 || strcmp(h[i - 1].name, h[i].name) != 0;
        int last = i + 1 == nh || strcmp(h[i + 1].name, h[i].name) != 0;
        if (first) {
            if (sw_buf_addf(&cr, "%s:", h[i].name) != 0 ||
                sw_buf_addf(&signed_names, "%s%s", signed_names.len ? ";" : "", h[i].name) != 0)
                goto out;
        }
        if (sw_buf_addf(&cr, "%s%s", first ? "" : ",", h[i].value) != 0)
            goto out;
        if (last && sw_buf_add(&cr, "\n", 1) != 0)
            goto out;
    }
    if (sw_buf_addf(&cr, "\n%s\n%s", signed_names.data, in->payload_hash) != 0)
        goto out;

    sw_sha256_hex(cr.data, cr.len, out->canonical_hash);
    if (canonical != NULL && (rc = sw_buf_add(canonical, cr.data, cr.len)) != 0)
        goto out;

    char sts[512];
    snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", out->amz_date,
             day, in->region, in->service, out->canonical_hash);

    /* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), service), "aws4_request") */
    size_t slen = strlen(in->secret_key);
    char *k0 = sw_malloc(slen + 5);
    if (k0 == NULL)
        goto out;
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, in->secret_key, slen + 1);
    unsigned char k[32], sig[32];
    rc = hmac(k0, slen + 4, day, k);
    OPENSSL_cleanse(k0, slen + 4);
    sw_free(k0);
    if (rc == 0)
        rc = hmac(k, 32, in->region, k);
    if (rc == 0)
        rc = hmac(k, 32, in->service, k);
    if (rc == 0)
        rc = hmac(k, 32, "aws4_request", k);
    if (rc == 0)
        rc = hmac(k, 32, sts, sig);
    OPENSSL_cleanse(k, sizeof(k));
    if (rc != 0) {
        sw_error_set(err, rc, "sigv4: HMAC-SHA256 failed");
        goto out;
    }
    sw_hex(sig, 32, out->signature);
    int n =
        snprintf(out->authorization, sizeof(out->authorization),
                 "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                 "Signature=%s",
                 in->access_key, day, in->region, in->service, signed_names.data, out->signature);
    rc = n < 0 || (size_t)n >= sizeof(out->authorization) ? SW_ETOOBIG : 0;
    if (rc != 0)
        sw_error_set(err, rc, "sigv4: Authorization header too long");
out:
    if (rc == SW_ENOMEM)
        sw_error_set(err, rc, "sigv4: out of memory");
    for (size_t i = 0; i < nh; i++) {
        sw_free(h[i].name);
        sw_free(h[i].value);
    }
    for (size_t i = 0; i < nq; i++) {
        sw_free(q[i].name);
        sw_free(q[i].value);
    }
    sw_buf_free(&cr);
    sw_buf_free(&signed_names);
    return rc;
}
