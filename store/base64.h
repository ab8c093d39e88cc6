/*
 * base64.h - strict base64 (RFC 4648) for keys, envelopes and the *-data
 * fields of kubeconfigs.
 *
 * Decoding accepts the standard alphabet with or without padding and skips
 * ASCII whitespace (kubeconfigs wrap long values); any other byte is an
 * error, so a mangled key or certificate is reported rather than silently
 * shortened.
 */
#ifndef SW_STORE_BASE64_H
#define SW_STORE_BASE64_H

#include <stddef.h>

/** The length of the encoding of `n` bytes, without the NUL. */
size_t sw_base64_encoded_len(size_t n);

/**
 * Encodes `n` bytes of `in` into `out`, which must hold
 * sw_base64_encoded_len(n) + 1 bytes; the result is NUL-terminated.
 */
void sw_base64_encode(const void *in, size_t n, char *out);

/**
 * Decodes `n` characters of `in`. Returns 0 and a new buffer in *out (owned
 * by the caller, freed with sw_free, NUL-terminated for convenience) with
 * its length in *out_len; SW_EPARSE on a character outside the alphabet or
 * bad padding, SW_ENOMEM on allocation failure.
 */
int sw_base64_decode(const char *in, size_t n, unsigned char **out, size_t *out_len);

#endif
