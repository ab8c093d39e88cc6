/*
 * seal.h - sealing secrets at rest with AES-256-GCM.
 *
 * Everything spillway keeps in Redis that would let someone act as it
 * (cluster credentials, S3 keys) is sealed with one 32-byte key that never
 * leaves the hub. A sealed value is a text envelope:
 *
 *   swseal:v1:<base64 of  version(1) | key id(4) | nonce(12) | ciphertext | tag(16)>
 *
 * The version byte and key id are authenticated together with a caller's
 * context string (say "cluster/onprem/credentials"), so a ciphertext cannot
 * be moved to another record, and opening with the wrong key or a tampered
 * envelope fails with SW_ECRYPTO instead of returning garbage. The nonce is
 * 96 random bits from OpenSSL's CSPRNG for every seal.
 *
 * The key comes from a file that only its owner may read (mode 0600 or
 * 0400; anything with group or other bits is refused), or from the
 * environment variable SPILLWAY_SECRET_KEY. Both hold the key as 64 hex
 * digits or as base64 of 32 bytes; a file may also hold the 32 raw bytes.
 */
#ifndef SW_STORE_SEAL_H
#define SW_STORE_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/** The environment variable read by sw_seal_key_load. */
#define SW_SEAL_KEY_ENV "SPILLWAY_SECRET_KEY"
/** The key length in bytes. */
#define SW_SEAL_KEY_LEN 32
/** The prefix every envelope starts with. */
#define SW_SEAL_PREFIX "swseal:v1:"

/** A loaded key (opaque; its bytes are wiped when freed). */
struct sw_seal_key;

/**
 * Makes a key from 32 raw bytes (copied). Returns 0 and *out (owned by the
 * caller, freed with sw_seal_key_free), SW_EINVAL for a wrong length, or
 * SW_ENOMEM.
 */
int sw_seal_key_from_bytes(const void *bytes, size_t len, struct sw_seal_key **out);

/**
 * Parses a key written as 64 hex digits or as base64 of 32 bytes (leading
 * and trailing whitespace ignored). `what` names the source in errors, which
 * never quote the key itself.
 */
int sw_seal_key_from_text(const char *text, size_t len, const char *what, struct sw_seal_key **out,
                          struct sw_error *err);

/**
 * Reads a key file. The file must be a regular file without group or other
 * permissions; otherwise SW_EFORBIDDEN with a message naming the file and
 * its mode. Its content is hex, base64, or exactly 32 raw bytes.
 */
int sw_seal_key_from_file(const char *path, struct sw_seal_key **out, struct sw_error *err);

/**
 * Loads the key the way the hub and the CLI do: from `path` when it is not
 * NULL, else from SPILLWAY_SECRET_KEY, else SW_ENOENT with a message saying
 * how to provide one.
 */
int sw_seal_key_load(const char *path, struct sw_seal_key **out, struct sw_error *err);

/** Wipes and frees a key; NULL is fine. */
void sw_seal_key_free(struct sw_seal_key *key);

/** The key id: the first 4 bytes of SHA-256(key), as a number. */
uint32_t sw_seal_key_id(const struct sw_seal_key *key);

/**
 * Derives a key for another purpose from the sealing key:
 * HMAC-SHA256(sealing key, `label`), 32 bytes into `out`. The sealing key
 * itself only ever seals; each other use of it (say the mirrors' proof,
 * label "spillway mirror proof v1") has its own label, hence its own key.
 * Returns 0 or SW_ECRYPTO.
 */
int sw_seal_key_derive(const struct sw_seal_key *key, const char *label,
                       unsigned char out[SW_SEAL_KEY_LEN]);

/** The label of the key that signs records (sw_record_mac). */
#define SW_RECORD_MAC_LABEL "spillway record mac v1"
/** A record MAC as text: "v1:" 8 hex digits of key id ":" 64 hex digits, NUL. */
#define SW_RECORD_MAC_TEXT_MAX 80

/**
 * Signs a record that directs the hub's credentials (an object store, a
 * replication rule): HMAC-SHA256 under the key derived from `key` with
 * SW_RECORD_MAC_LABEL, over the record's `kind` ("store", "rule"), its
 * `name` (the name it is kept under) and `body` (its fields in the
 * canonical form the caller prints). A record copied under another name or
 * kind, or with any field changed, no longer verifies. Writes the MAC as
 * text into `out` ("v1:KEYID:HEX"). Returns 0, SW_ENOMEM or SW_ECRYPTO.
 */
int sw_record_mac(const struct sw_seal_key *key, const char *kind, const char *name,
                  const char *body, size_t len, char out[SW_RECORD_MAC_TEXT_MAX]);

/**
 * Checks `mac` (text from sw_record_mac) against the record. Returns 0,
 * or SW_ECRYPTO, the message saying why: `mac` is not of the form
 * sw_record_mac writes, was made with another key (naming both key ids),
 * or does not match (the record was changed, or copied from another name);
 * SW_ENOMEM when it could not be computed.
 * Messages name `kind` and `name`, never the key.
 */
int sw_record_mac_verify(const struct sw_seal_key *key, const char *kind, const char *name,
                         const char *body, size_t len, const char *mac, struct sw_error *err);

/**
 * Seals `len` bytes of `plain` under `key`, bound to `context` (a
 * NUL-terminated string, may be ""). Returns 0 and *out, a new
 * NUL-terminated envelope owned by the caller (free with sw_free).
 */
int sw_seal(const struct sw_seal_key *key, const char *context, const void *plain, size_t len,
            char **out, struct sw_error *err);

/**
 * Opens an envelope made by sw_seal with the same key and context. Returns
 * 0 and *out, a new buffer of *out_len bytes plus a NUL (owned by the
 * caller; wipe and free it with sw_seal_wipe_free). SW_EPARSE for a
 * malformed envelope or unknown version, SW_ECRYPTO for a wrong key, a wrong
 * context or a tampered envelope.
 */
int sw_seal_open(const struct sw_seal_key *key, const char *context, const char *envelope,
                 size_t envelope_len, unsigned char **out, size_t *out_len, struct sw_error *err);

/** Whether `s` looks like an envelope (starts with SW_SEAL_PREFIX). */
int sw_seal_is_envelope(const char *s);

/** Overwrites `len` bytes at `p` with zeros, then frees it; NULL is fine. */
void sw_seal_wipe_free(void *p, size_t len);

/**
 * The raw primitive, exposed for known-answer tests: AES-256-GCM of
 * `len` bytes with a 12-byte nonce and `aad`, writing `len` bytes to `ct`
 * and 16 bytes to `tag`. Returns 0 or SW_ECRYPTO.
 */
int sw__seal_gcm_encrypt(const unsigned char key[SW_SEAL_KEY_LEN], const unsigned char nonce[12],
                         const void *aad, size_t aad_len, const void *plain, size_t len,
                         unsigned char *ct, unsigned char tag[16]);

/**
 * Test hook: seals with a given nonce instead of a random one, so that an
 * envelope can be compared with a known answer. Never use it elsewhere.
 */
int sw__seal_with_nonce(const struct sw_seal_key *key, const unsigned char nonce[12],
                        const char *context, const void *plain, size_t len, char **out,
                        struct sw_error *err);

#endif
