/*
 * seal.c - AES-256-GCM envelopes over OpenSSL's EVP interface.
 *
 * The associated data is the 5-byte header (version and key id) followed by
 * the caller's context string, so both the envelope's framing and the record
 * it belongs to are authenticated.
 */
#include "store/seal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "store/base64.h"

#define SEAL_VERSION 1
#define HDR_LEN      5
#define NONCE_LEN    12
#define TAG_LEN      16
/* A key file is tiny; anything larger is certainly not a key. */
#define KEY_FILE_MAX 4096

struct sw_seal_key {
    unsigned char bytes[SW_SEAL_KEY_LEN];
    uint32_t id;
};

int sw_seal_key_from_bytes(const void *bytes, size_t len, struct sw_seal_key **out)
{
    if (len != SW_SEAL_KEY_LEN)
        return SW_EINVAL;
    struct sw_seal_key *k = sw_calloc(1, sizeof(*k));
    if (k == NULL)
        return SW_ENOMEM;
    memcpy(k->bytes, bytes, SW_SEAL_KEY_LEN);
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(k->bytes, SW_SEAL_KEY_LEN, digest);
    k->id = (uint32_t)digest[0] << 24 | (uint32_t)digest[1] << 16 | (uint32_t)digest[2] << 8 |
            digest[3];
    OPENSSL_cleanse(digest, sizeof(digest));
    *out = k;
    return 0;
}

void sw_seal_key_free(struct sw_seal_key *key)
{
    if (key == NULL)
        return;
    OPENSSL_cleanse(key, sizeof(*key));
    sw_free(key);
}

uint32_t sw_seal_key_id(const struct sw_seal_key *key)
{
    return key->id;
}

int sw_seal_key_derive(const struct sw_seal_key *key, const char *label,
                       unsigned char out[SW_SEAL_KEY_LEN])
{
    unsigned int n = 0;
    if (HMAC(EVP_sha256(), key->bytes, SW_SEAL_KEY_LEN, (const unsigned char *)label, strlen(label),
             out, &n) == NULL ||
        n != SW_SEAL_KEY_LEN) {
        OPENSSL_cleanse(out, SW_SEAL_KEY_LEN);
        return SW_ECRYPTO;
    }
    return 0;
}

static int hexval(char c);

/* The MAC input: the label, then kind, name and body, each preceded by its
 * length (8 bytes, big-endian), so that no two different records give the
 * same bytes. */
static int record_hmac(const struct sw_seal_key *key, const char *kind, const char *name,
                       const char *body, size_t len, unsigned char out[SHA256_DIGEST_LENGTH])
{
    unsigned char k[SW_SEAL_KEY_LEN];
    if (sw_seal_key_derive(key, SW_RECORD_MAC_LABEL, k) != 0)
        return SW_ECRYPTO;
    const void *parts[] = {kind, name, body};
    size_t lens[] = {strlen(kind), strlen(name), len};
    size_t total = 3 * 8 + lens[0] + lens[1] + lens[2], o = 0;
    unsigned char *buf = sw_malloc(total);
    if (buf == NULL) {
        OPENSSL_cleanse(k, sizeof(k));
        return SW_ENOMEM;
    }
    for (size_t i = 0; i < 3; i++) {
        for (int b = 0; b < 8; b++)
            buf[o++] = (unsigned char)((uint64_t)lens[i] >> (56 - 8 * b));
        memcpy(buf + o, parts[i], lens[i]);
        o += lens[i];
    }
    unsigned int n = 0;
    int rc =
        HMAC(EVP_sha256(), k, sizeof(k), buf, total, out, &n) != NULL && n == SHA256_DIGEST_LENGTH
            ? 0
            : SW_ECRYPTO;
    sw_free(buf);
    OPENSSL_cleanse(k, sizeof(k));
    return rc;
}

int sw_record_mac(const struct sw_seal_key *key, const char *kind, const char *name,
                  const char *body, size_t len, char out[SW_RECORD_MAC_TEXT_MAX])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    out[0] = '\0';
    int rc = record_hmac(key, kind, name, body, len, d);
    if (rc != 0)
        return rc;
    int o = snprintf(out, SW_RECORD_MAC_TEXT_MAX, "v1:%08x:", (unsigned)key->id);
    for (size_t i = 0; i < sizeof(d); i++)
        o += snprintf(out + o, SW_RECORD_MAC_TEXT_MAX - (size_t)o, "%02x", d[i]);
    return 0;
}

int sw_record_mac_verify(const struct sw_seal_key *key, const char *kind, const char *name,
                         const char *body, size_t len, const char *mac, struct sw_error *err)
{
    unsigned char want[SHA256_DIGEST_LENGTH], got[SHA256_DIGEST_LENGTH];
    unsigned id = 0;
    if (strlen(mac) != 3 + 8 + 1 + 2 * sizeof(got) || strncmp(mac, "v1:", 3) != 0 || mac[11] != ':')
        return sw_error_set(err, SW_ECRYPTO,
                            "%s %s: field \"mac\": expected v1:KEYID:HMAC as spillctl writes it",
                            kind, name);
    for (size_t i = 0; i < 8; i++) {
        int v = hexval(mac[3 + i]);
        if (v < 0)
            return sw_error_set(err, SW_ECRYPTO, "%s %s: field \"mac\": key id is not hex", kind,
                                name);
        id = id << 4 | (unsigned)v;
    }
    for (size_t i = 0; i < sizeof(got); i++) {
        int hi = hexval(mac[12 + 2 * i]), lo = hexval(mac[13 + 2 * i]);
        if (hi < 0 || lo < 0)
            return sw_error_set(err, SW_ECRYPTO, "%s %s: field \"mac\": expected hex digits", kind,
                                name);
        got[i] = (unsigned char)(hi << 4 | lo);
    }
    if (id != key->id)
        return sw_error_set(err, SW_ECRYPTO,
                            "%s %s: signed with key %08x, not the hub's key %08x (a record from "
                            "before a key rotation that was not re-sealed, or from another hub)",
                            kind, name, id, (unsigned)key->id);
    int rc = record_hmac(key, kind, name, body, len, want);
    if (rc != 0)
        return sw_error_set(err, rc, "%s %s: cannot compute the MAC: %s", kind, name,
                            sw_strerror(rc));
    int same = CRYPTO_memcmp(want, got, sizeof(got)) == 0;
    OPENSSL_cleanse(want, sizeof(want));
    if (!same)
        return sw_error_set(err, SW_ECRYPTO,
                            "%s %s: the MAC does not verify: the record was changed outside "
                            "spillctl or copied from another name",
                            kind, name);
    return 0;
}

void sw_seal_wipe_free(void *p, size_t len)
{
    if (p == NULL)
        return;
    OPENSSL_cleanse(p, len);
    sw_free(p);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int sw_seal_key_from_text(const char *text, size_t len, const char *what, struct sw_seal_key **out,
                          struct sw_error *err)
{
    while (len > 0 && is_space(text[0])) {
        text++;
        len--;
    }
    while (len > 0 && is_space(text[len - 1]))
        len--;
    if (len == 0)
        return sw_error_set(err, SW_EPARSE, "%s: the secret key is empty", what);
    unsigned char raw[SW_SEAL_KEY_LEN];
    int rc;
    if (len == 2 * SW_SEAL_KEY_LEN) {
        int ok = 1;
        for (size_t i = 0; i < SW_SEAL_KEY_LEN && ok; i++) {
            int hi = hexval(text[2 * i]), lo = hexval(text[2 * i + 1]);
            if (hi < 0 || lo < 0)
                ok = 0;
            else
                raw[i] = (unsigned char)(hi << 4 | lo);
        }
        if (ok) {
            rc = sw_seal_key_from_bytes(raw, sizeof(raw), out);
            OPENSSL_cleanse(raw, sizeof(raw));
            return rc == 0 ? 0 : sw_error_set(err, rc, "%s: %s", what, sw_strerror(rc));
        }
    }
    unsigned char *dec = NULL;
    size_t dlen = 0;
    rc = sw_base64_decode(text, len, &dec, &dlen);
    if (rc == SW_ENOMEM)
        return sw_error_set(err, rc, "%s: out of memory", what);
    if (rc != 0 || dlen != SW_SEAL_KEY_LEN) {
        size_t l = dec ? dlen : 0;
        sw_seal_wipe_free(dec, l);
        return sw_error_set(err, SW_EPARSE,
                            "%s: expected a 32-byte key written as 64 hex digits or as base64 "
                            "(44 characters), got %zu characters that are neither",
                            what, len);
    }
    rc = sw_seal_key_from_bytes(dec, dlen, out);
    sw_seal_wipe_free(dec, dlen);
    return rc == 0 ? 0 : sw_error_set(err, rc, "%s: %s", what, sw_strerror(rc));
}

int sw_seal_key_from_file(const char *path, struct sw_seal_key **out, struct sw_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ELOOP) /* a symlink: follow it, but check the target */
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_error_set(err, errno == ENOENT ? SW_ENOENT : SW_EIO,
                            "secret key file \"%s\": cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sw_error_set(err, SW_EIO, "secret key file \"%s\": cannot stat: %s", path,
                            strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sw_error_set(err, SW_EINVAL, "secret key file \"%s\": not a regular file", path);
    }
    if ((st.st_mode & 077) != 0) {
        close(fd);
        return sw_error_set(err, SW_EFORBIDDEN,
                            "secret key file \"%s\": mode %04o lets group or others read it; "
                            "expected 0600 (run: chmod 600 %s)",
                            path, (unsigned)(st.st_mode & 07777), path);
    }
    if (st.st_size > KEY_FILE_MAX) {
        close(fd);
        return sw_error_set(err, SW_ETOOBIG,
                            "secret key file \"%s\": %lld bytes is too large for a key", path,
                            (long long)st.st_size);
    }
    char buf[KEY_FILE_MAX + 1];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            OPENSSL_cleanse(buf, sizeof(buf));
            return sw_error_set(err, SW_EIO, "secret key file \"%s\": read failed: %s", path,
                                strerror(e));
        }
        if (r == 0 || n + (size_t)r >= sizeof(buf) - 1) {
            n += (size_t)r;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    char what[600];
    snprintf(what, sizeof(what), "secret key file \"%s\"", path);
    int rc;
    if (n == SW_SEAL_KEY_LEN) {
        /* 32 bytes could be raw or (never) text; 32 characters of text are
         * not a valid hex or base64 key, so raw is the only reading. */
        rc = sw_seal_key_from_bytes(buf, n, out);
        if (rc != 0)
            sw_error_set(err, rc, "%s: %s", what, sw_strerror(rc));
    } else {
        rc = sw_seal_key_from_text(buf, n, what, out, err);
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

int sw_seal_key_load(const char *path, struct sw_seal_key **out, struct sw_error *err)
{
    if (path != NULL && path[0] != '\0')
        return sw_seal_key_from_file(path, out, err);
    const char *env = getenv(SW_SEAL_KEY_ENV);
    if (env != NULL && env[0] != '\0')
        return sw_seal_key_from_text(env, strlen(env), "environment variable " SW_SEAL_KEY_ENV, out,
                                     err);
    return sw_error_set(err, SW_ENOENT,
                        "no secret key: give a key file (mode 0600) or set " SW_SEAL_KEY_ENV
                        " to 32 bytes as 64 hex digits or base64");
}

int sw__seal_gcm_encrypt(const unsigned char key[SW_SEAL_KEY_LEN], const unsigned char nonce[12],
                         const void *aad, size_t aad_len, const void *plain, size_t len,
                         unsigned char *ct, unsigned char tag[16])
{
    if (len > INT32_MAX || aad_len > INT32_MAX)
        return SW_ETOOBIG;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return SW_ENOMEM;
    int ok = 0, n = 0;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
        EVP_EncryptInit_ex(ctx, NULL, NULL, key, nonce) != 1)
        goto out;
    if (aad_len > 0 && EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1)
        goto out;
    if (len > 0 && EVP_EncryptUpdate(ctx, ct, &n, plain, (int)len) != 1)
        goto out;
    if (EVP_EncryptFinal_ex(ctx, ct + n, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) != 1)
        goto out;
    ok = 1;
out:
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : SW_ECRYPTO;
}

static int gcm_decrypt(const unsigned char key[SW_SEAL_KEY_LEN], const unsigned char *nonce,
                       const unsigned char *aad, size_t aad_len, const unsigned char *ct,
                       size_t len, const unsigned char *tag, unsigned char *plain)
{
    if (len > INT32_MAX || aad_len > INT32_MAX)
        return SW_ETOOBIG;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return SW_ENOMEM;
    int ok = 0, n = 0;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
        EVP_DecryptInit_ex(ctx, NULL, NULL, key, nonce) != 1)
        goto out;
    if (aad_len > 0 && EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1)
        goto out;
    if (len > 0 && EVP_DecryptUpdate(ctx, plain, &n, ct, (int)len) != 1)
        goto out;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, (void *)tag) != 1)
        goto out;
    /* The tag check happens here; a mismatch means wrong key or tampering. */
    if (EVP_DecryptFinal_ex(ctx, plain + n, &n) != 1)
        goto out;
    ok = 1;
out:
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : SW_ECRYPTO;
}

static void put_header(unsigned char *hdr, uint32_t id)
{
    hdr[0] = SEAL_VERSION;
    hdr[1] = (unsigned char)(id >> 24);
    hdr[2] = (unsigned char)(id >> 16);
    hdr[3] = (unsigned char)(id >> 8);
    hdr[4] = (unsigned char)id;
}

/* The associated data: header then context. */
static unsigned char *make_aad(const unsigned char *hdr, const char *context, size_t *aad_len)
{
    size_t clen = context ? strlen(context) : 0;
    unsigned char *aad = sw_malloc(HDR_LEN + clen);
    if (aad == NULL)
        return NULL;
    memcpy(aad, hdr, HDR_LEN);
    if (clen > 0)
        memcpy(aad + HDR_LEN, context, clen);
    *aad_len = HDR_LEN + clen;
    return aad;
}

int sw__seal_with_nonce(const struct sw_seal_key *key, const unsigned char nonce[12],
                        const char *context, const void *plain, size_t len, char **out,
                        struct sw_error *err)
{
    if (len > (size_t)INT32_MAX)
        return sw_error_set(err, SW_ETOOBIG, "seal: %zu bytes is too large to seal", len);
    size_t blen = HDR_LEN + NONCE_LEN + len + TAG_LEN;
    unsigned char *bin = sw_malloc(blen);
    size_t aad_len = 0;
    unsigned char *aad = NULL;
    char *text = NULL;
    int rc = SW_ENOMEM;
    if (bin == NULL)
        goto fail;
    put_header(bin, key->id);
    memcpy(bin + HDR_LEN, nonce, NONCE_LEN);
    aad = make_aad(bin, context, &aad_len);
    if (aad == NULL)
        goto fail;
    rc = sw__seal_gcm_encrypt(key->bytes, nonce, aad, aad_len, plain, len,
                              bin + HDR_LEN + NONCE_LEN, bin + HDR_LEN + NONCE_LEN + len);
    if (rc != 0)
        goto fail;
    size_t plen = strlen(SW_SEAL_PREFIX);
    text = sw_malloc(plen + sw_base64_encoded_len(blen) + 1);
    if (text == NULL) {
        rc = SW_ENOMEM;
        goto fail;
    }
    memcpy(text, SW_SEAL_PREFIX, plen);
    sw_base64_encode(bin, blen, text + plen);
    sw_free(aad);
    sw_free(bin);
    *out = text;
    return 0;
fail:
    sw_free(aad);
    sw_seal_wipe_free(bin, blen);
    return sw_error_set(err, rc, "seal: %s", sw_strerror(rc));
}

int sw_seal(const struct sw_seal_key *key, const char *context, const void *plain, size_t len,
            char **out, struct sw_error *err)
{
    unsigned char nonce[NONCE_LEN];
    if (RAND_bytes(nonce, sizeof(nonce)) != 1)
        return sw_error_set(err, SW_ECRYPTO, "seal: the random generator failed");
    return sw__seal_with_nonce(key, nonce, context, plain, len, out, err);
}

int sw_seal_is_envelope(const char *s)
{
    return s != NULL && strncmp(s, SW_SEAL_PREFIX, strlen(SW_SEAL_PREFIX)) == 0;
}

int sw_seal_open(const struct sw_seal_key *key, const char *context, const char *envelope,
                 size_t envelope_len, unsigned char **out, size_t *out_len, struct sw_error *err)
{
    size_t plen = strlen(SW_SEAL_PREFIX);
    if (envelope_len < plen || memcmp(envelope, SW_SEAL_PREFIX, plen) != 0) {
        if (envelope_len >= 7 && memcmp(envelope, "swseal:", 7) == 0)
            return sw_error_set(err, SW_EPARSE,
                                "sealed value: unknown envelope version (expected \"%s\")",
                                SW_SEAL_PREFIX);
        return sw_error_set(err, SW_EPARSE, "sealed value: expected a \"%s\" envelope",
                            SW_SEAL_PREFIX);
    }
    unsigned char *bin = NULL;
    size_t blen = 0;
    int rc = sw_base64_decode(envelope + plen, envelope_len - plen, &bin, &blen);
    if (rc == SW_ENOMEM)
        return sw_error_set(err, rc, "sealed value: out of memory");
    if (rc != 0)
        return sw_error_set(err, SW_EPARSE, "sealed value: the envelope is not valid base64");
    if (blen < HDR_LEN + NONCE_LEN + TAG_LEN) {
        sw_free(bin);
        return sw_error_set(err, SW_EPARSE, "sealed value: the envelope is truncated (%zu bytes)",
                            blen);
    }
    if (bin[0] != SEAL_VERSION) {
        int v = bin[0];
        sw_free(bin);
        return sw_error_set(err, SW_EPARSE, "sealed value: unknown envelope version %d", v);
    }
    uint32_t id = (uint32_t)bin[1] << 24 | (uint32_t)bin[2] << 16 | (uint32_t)bin[3] << 8 | bin[4];
    size_t clen = blen - HDR_LEN - NONCE_LEN - TAG_LEN;
    unsigned char *plain = sw_malloc(clen + 1);
    size_t aad_len = 0;
    unsigned char *aad = plain ? make_aad(bin, context, &aad_len) : NULL;
    if (plain == NULL || aad == NULL) {
        sw_free(plain);
        sw_free(bin);
        return sw_error_set(err, SW_ENOMEM, "sealed value: out of memory");
    }
    rc = gcm_decrypt(key->bytes, bin + HDR_LEN, aad, aad_len, bin + HDR_LEN + NONCE_LEN, clen,
                     bin + HDR_LEN + NONCE_LEN + clen, plain);
    sw_free(aad);
    sw_free(bin);
    if (rc != 0) {
        sw_seal_wipe_free(plain, clen + 1);
        if (id != key->id)
            return sw_error_set(err, SW_ECRYPTO,
                                "sealed value: sealed with another key (key id %08x, this key "
                                "is %08x)",
                                (unsigned)id, (unsigned)key->id);
        return sw_error_set(err, SW_ECRYPTO,
                            "sealed value: authentication failed (tampered with, or sealed "
                            "for another record)");
    }
    plain[clen] = '\0';
    *out = plain;
    *out_len = clen;
    return 0;
}
