/*
 * base64.c - strict base64 encode and decode.
 */
#include "store/base64.h"

#include "common/alloc.h"
#include "common/error.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t sw_base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

void sw_base64_encode(const void *in, size_t n, char *out)
{
    const unsigned char *p = in;
    size_t o = 0;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = '=';
    }
    out[o] = '\0';
}

static int value_of(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int sw_base64_decode(const char *in, size_t n, unsigned char **out, size_t *out_len)
{
    unsigned char *buf = sw_malloc(n / 4 * 3 + 4);
    if (buf == NULL)
        return SW_ENOMEM;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    size_t digits = 0;
    size_t pad = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = value_of(c);
        if (v < 0 || pad > 0) /* nothing but padding may follow padding */
            goto bad;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        digits++;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    /* A lone trailing digit carries fewer than 8 bits: not a valid encoding.
     * Padding, when present, must complete the last quantum exactly. */
    if (digits % 4 == 1)
        goto bad;
    if (pad > 0 && (digits + pad) % 4 != 0)
        goto bad;
    if (pad > 2)
        goto bad;
    /* The unused low bits of the last digit must be zero (canonical form). */
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        goto bad;
    buf[o] = '\0';
    *out = buf;
    *out_len = o;
    return 0;
bad:
    sw_free(buf);
    return SW_EPARSE;
}
