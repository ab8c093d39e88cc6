/*
 * Tests for store/seal.c: AES-256-GCM known answers (McGrew & Viega test
 * cases 13, 14 and 16), the envelope format, tamper detection, wrong keys
 * and contexts, and key loading from text, files and the environment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "store/base64.h"
#include "store/seal.h"

static void unhex(const char *h, unsigned char *out)
{
    for (size_t i = 0; h[2 * i] != '\0'; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

static void tohex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

static const char tc16_key[] = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308";
static const char tc16_nonce[] = "cafebabefacedbaddecaf888";

static void test_gcm_known_answers(void **state)
{
    (void)state;
    unsigned char key[32] = {0}, nonce[12] = {0}, tag[16], ct[64];
    char hex[256];
    /* Test case 13: zero key, zero nonce, empty plaintext. */
    assert_int_equal(sw__seal_gcm_encrypt(key, nonce, NULL, 0, NULL, 0, ct, tag), 0);
    tohex(tag, 16, hex);
    assert_string_equal(hex, "530f8afbc74536b9a963b4f1c4cb738b");
    /* Test case 14: 16 zero bytes. */
    unsigned char zeros[16] = {0};
    assert_int_equal(sw__seal_gcm_encrypt(key, nonce, NULL, 0, zeros, 16, ct, tag), 0);
    tohex(ct, 16, hex);
    assert_string_equal(hex, "cea7403d4d606b6e074ec5d3baf39d18");
    tohex(tag, 16, hex);
    assert_string_equal(hex, "d0d1c8a799996bf0265b98b5d48ab919");
    /* Test case 16: 60 bytes with 20 bytes of associated data. */
    unsigned char pt[60], aad[20];
    unhex(tc16_key, key);
    unhex(tc16_nonce, nonce);
    unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
          "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
          pt);
    unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad);
    assert_int_equal(sw__seal_gcm_encrypt(key, nonce, aad, 20, pt, 60, ct, tag), 0);
    tohex(ct, 60, hex);
    assert_string_equal(hex, "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                             "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662");
    tohex(tag, 16, hex);
    assert_string_equal(hex, "76fc6ece0f4e1768cddf8853bb2d551b");
}

/* The envelope below was computed independently of this code, from the
 * format in seal.h: base64(01 | SHA-256(key)[0..4] | nonce | ct | tag) with
 * the header plus the context as associated data. */
static const char known_envelope[] =
    "swseal:v1:AX9w39jK/rq++s7brd7K+Ij/c5iwD+hbkWJFTFXxg6zFG8vQoTv6zsQffpB3Xw==";

static struct sw_seal_key *tc16(void)
{
    unsigned char key[32];
    unhex(tc16_key, key);
    struct sw_seal_key *k = NULL;
    assert_int_equal(sw_seal_key_from_bytes(key, 32, &k), 0);
    return k;
}

static void test_envelope_known_answer(void **state)
{
    (void)state;
    struct sw_seal_key *k = tc16();
    assert_int_equal(sw_seal_key_id(k), 0x7f70dfd8u);
    unsigned char nonce[12];
    unhex(tc16_nonce, nonce);
    char *env = NULL;
    struct sw_error err;
    assert_int_equal(sw__seal_with_nonce(k, nonce, "cluster/onprem/credentials", "token: s3cr3t",
                                         13, &env, &err),
                     0);
    assert_string_equal(env, known_envelope);
    unsigned char *plain = NULL;
    size_t n = 0;
    assert_int_equal(
        sw_seal_open(k, "cluster/onprem/credentials", env, strlen(env), &plain, &n, &err), 0);
    assert_int_equal(n, 13);
    assert_memory_equal(plain, "token: s3cr3t", 13);
    sw_seal_wipe_free(plain, n);
    sw_free(env);
    sw_seal_key_free(k);
}

static void test_round_trip_random_nonce(void **state)
{
    (void)state;
    struct sw_seal_key *k = tc16();
    struct sw_error err;
    char *a = NULL, *b = NULL;
    assert_int_equal(sw_seal(k, "ctx", "secret", 6, &a, &err), 0);
    assert_int_equal(sw_seal(k, "ctx", "secret", 6, &b, &err), 0);
    assert_true(sw_seal_is_envelope(a));
    /* A fresh nonce each time: the same secret never seals the same way. */
    assert_string_not_equal(a, b);
    assert_null(strstr(a, "secret"));
    unsigned char *p = NULL;
    size_t n = 0;
    assert_int_equal(sw_seal_open(k, "ctx", b, strlen(b), &p, &n, &err), 0);
    assert_int_equal(n, 6);
    assert_string_equal((char *)p, "secret");
    sw_seal_wipe_free(p, n);
    /* An empty secret is allowed too. */
    char *e = NULL;
    assert_int_equal(sw_seal(k, "", "", 0, &e, &err), 0);
    assert_int_equal(sw_seal_open(k, "", e, strlen(e), &p, &n, &err), 0);
    assert_int_equal(n, 0);
    sw_seal_wipe_free(p, 1);
    sw_free(e);
    sw_free(a);
    sw_free(b);
    sw_seal_key_free(k);
}

static void test_tamper_detected(void **state)
{
    (void)state;
    struct sw_seal_key *k = tc16();
    struct sw_error err;
    /* Flip one bit in every byte of the binary envelope in turn: the header,
     * the nonce, the ciphertext and the tag are all covered. */
    unsigned char *bin = NULL;
    size_t blen = 0;
    size_t plen = strlen(SW_SEAL_PREFIX);
    assert_int_equal(
        sw_base64_decode(known_envelope + plen, strlen(known_envelope) - plen, &bin, &blen), 0);
    for (size_t i = 0; i < blen; i++) {
        bin[i] ^= 0x01;
        char text[256];
        memcpy(text, SW_SEAL_PREFIX, plen);
        sw_base64_encode(bin, blen, text + plen);
        unsigned char *p = NULL;
        size_t n = 0;
        int rc = sw_seal_open(k, "cluster/onprem/credentials", text, strlen(text), &p, &n, &err);
        /* Byte 0 is the version: a changed version is a parse error. */
        assert_int_equal(rc, i == 0 ? SW_EPARSE : SW_ECRYPTO);
        assert_null(p);
        bin[i] ^= 0x01;
    }
    sw_free(bin);
    /* Truncated and malformed envelopes. */
    unsigned char *p = NULL;
    size_t n = 0;
    assert_int_equal(sw_seal_open(k, "x", "swseal:v1:AAAA", 14, &p, &n, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "truncated"));
    assert_int_equal(sw_seal_open(k, "x", "swseal:v1:!!!", 13, &p, &n, &err), SW_EPARSE);
    assert_int_equal(sw_seal_open(k, "x", "swseal:v2:AAAA", 14, &p, &n, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "version"));
    assert_int_equal(sw_seal_open(k, "x", "plaintext", 9, &p, &n, &err), SW_EPARSE);
    sw_seal_key_free(k);
}

static void test_wrong_key_and_context(void **state)
{
    (void)state;
    struct sw_seal_key *k = tc16();
    unsigned char other[32] = {1};
    struct sw_seal_key *k2 = NULL;
    assert_int_equal(sw_seal_key_from_bytes(other, 32, &k2), 0);
    struct sw_error err;
    unsigned char *p = NULL;
    size_t n = 0;
    assert_int_equal(sw_seal_open(k2, "cluster/onprem/credentials", known_envelope,
                                  strlen(known_envelope), &p, &n, &err),
                     SW_ECRYPTO);
    assert_non_null(strstr(err.msg, "another key"));
    assert_non_null(strstr(err.msg, "7f70dfd8"));
    /* The right key but another record's context. */
    assert_int_equal(sw_seal_open(k, "cluster/cloud/credentials", known_envelope,
                                  strlen(known_envelope), &p, &n, &err),
                     SW_ECRYPTO);
    assert_non_null(strstr(err.msg, "authentication failed"));
    assert_null(p);
    sw_seal_key_free(k);
    sw_seal_key_free(k2);
}

static void test_key_text_forms(void **state)
{
    (void)state;
    struct sw_seal_key *k = NULL;
    struct sw_error err;
    assert_int_equal(sw_seal_key_from_text(tc16_key, strlen(tc16_key), "test", &k, &err), 0);
    assert_int_equal(sw_seal_key_id(k), 0x7f70dfd8u);
    sw_seal_key_free(k);
    const char *b64 = "  /v/pkoZlcxxtao+UZzCDCP7/6ZKGZXMcbWqPlGcwgwg=\n";
    assert_int_equal(sw_seal_key_from_text(b64, strlen(b64), "test", &k, &err), 0);
    assert_int_equal(sw_seal_key_id(k), 0x7f70dfd8u);
    sw_seal_key_free(k);
    /* 16 bytes of base64 is not a 32-byte key; the error never quotes it. */
    const char *short_key = "AAECAwQFBgcICQoLDA0ODw==";
    assert_int_equal(sw_seal_key_from_text(short_key, strlen(short_key), "env X", &k, &err),
                     SW_EPARSE);
    assert_non_null(strstr(err.msg, "env X"));
    assert_null(strstr(err.msg, short_key));
    assert_int_equal(sw_seal_key_from_text("", 0, "env X", &k, &err), SW_EPARSE);
    assert_int_equal(sw_seal_key_from_bytes("short", 5, &k), SW_EINVAL);
}

static void write_file(const char *path, const void *data, size_t n, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file_mode_and_env(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-seal-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/key", dir);
    struct sw_seal_key *k = NULL;
    struct sw_error err;

    write_file(path, tc16_key, strlen(tc16_key), 0644);
    assert_int_equal(sw_seal_key_from_file(path, &k, &err), SW_EFORBIDDEN);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "0644"));
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(sw_seal_key_from_file(path, &k, &err), SW_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "0640"));

    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(sw_seal_key_from_file(path, &k, &err), 0);
    assert_int_equal(sw_seal_key_id(k), 0x7f70dfd8u);
    sw_seal_key_free(k);

    /* 32 raw bytes. */
    unsigned char raw[32];
    unhex(tc16_key, raw);
    write_file(path, raw, 32, 0400);
    assert_int_equal(sw_seal_key_from_file(path, &k, &err), 0);
    assert_int_equal(sw_seal_key_id(k), 0x7f70dfd8u);
    sw_seal_key_free(k);

    write_file(path, "not a key\n", 10, 0600);
    assert_int_equal(sw_seal_key_from_file(path, &k, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, path));

    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none", dir);
    assert_int_equal(sw_seal_key_from_file(missing, &k, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, missing));

    /* The environment, used when no file is given. */
    unsetenv(SW_SEAL_KEY_ENV);
    assert_int_equal(sw_seal_key_load(NULL, &k, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, SW_SEAL_KEY_ENV));
    setenv(SW_SEAL_KEY_ENV, "/v/pkoZlcxxtao+UZzCDCP7/6ZKGZXMcbWqPlGcwgwg=", 1);
    assert_int_equal(sw_seal_key_load(NULL, &k, &err), 0);
    assert_int_equal(sw_seal_key_id(k), 0x7f70dfd8u);
    sw_seal_key_free(k);
    unsetenv(SW_SEAL_KEY_ENV);

    unlink(path);
    rmdir(dir);
}

/* A key for another purpose: HMAC-SHA256(sealing key, label), known
 * answers from Python's hmac module; another label, another key, and
 * never the sealing key itself. */
static void test_derive(void **state)
{
    (void)state;
    unsigned char raw[32], out[32];
    for (int i = 0; i < 32; i++)
        raw[i] = (unsigned char)i;
    struct sw_seal_key *k = NULL;
    assert_int_equal(sw_seal_key_from_bytes(raw, 32, &k), 0);
    char hex[65];
    assert_int_equal(sw_seal_key_derive(k, "spillway mirror proof v1", out), 0);
    tohex(out, 32, hex);
    assert_string_equal(hex, "dd705c742819f2ff13000e216166f3c8c4d961cf5b95d68fc7a8a868b56ae6a2");
    assert_int_equal(sw_seal_key_derive(k, "other", out), 0);
    tohex(out, 32, hex);
    assert_string_equal(hex, "cb58d869828e0e55637d8adf34e91ca5d1ef130074bdf4e040f812bb96f05d5e");
    assert_memory_not_equal(out, raw, 32);
    sw_seal_key_free(k);
}

static void test_alloc_failures_unwind(void **state)
{
    (void)state;
    struct sw_seal_key *k = tc16();
    struct sw_error err;
    /* Fail the Nth allocation for every N until sealing and opening succeed. */
    for (uint64_t nth = 1; nth < 50; nth++) {
        sw_alloc_fail_at(nth);
        char *env = NULL;
        int rc = sw_seal(k, "ctx", "secret", 6, &env, &err);
        unsigned char *p = NULL;
        size_t n = 0;
        int rc2 = rc == 0 ? sw_seal_open(k, "ctx", env, strlen(env), &p, &n, &err) : rc;
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (rc == 0)
            sw_free(env);
        if (rc2 == 0) {
            assert_string_equal((char *)p, "secret");
            sw_seal_wipe_free(p, n);
        } else {
            assert_int_equal(rc2, SW_ENOMEM);
        }
        if (!injected)
            break;
    }
    sw_seal_key_free(k);
}

/* A record's MAC binds its kind, its name and its body, framed so that
 * moving bytes between them changes it; another key is named as such. */
static void test_record_mac(void **state)
{
    (void)state;
    unsigned char b[32];
    memset(b, 3, sizeof(b));
    struct sw_seal_key *k = NULL, *k2 = NULL;
    assert_int_equal(sw_seal_key_from_bytes(b, 32, &k), 0);
    b[0] ^= 1;
    assert_int_equal(sw_seal_key_from_bytes(b, 32, &k2), 0);
    char mac[SW_RECORD_MAC_TEXT_MAX];
    const char *body = "{\"endpoint\":\"https://s3\"}";
    assert_int_equal(sw_record_mac(k, "store", "aws", body, strlen(body), mac), 0);
    assert_int_equal(strlen(mac), 3 + 8 + 1 + 64);
    struct sw_error err;
    assert_int_equal(sw_record_mac_verify(k, "store", "aws", body, strlen(body), mac, &err), 0);
    assert_int_equal(sw_record_mac_verify(k, "rule", "aws", body, strlen(body), mac, &err),
                     SW_ECRYPTO);
    assert_non_null(strstr(err.msg, "rule aws: the MAC does not verify"));
    assert_int_equal(sw_record_mac_verify(k, "store", "aws2", body, strlen(body), mac, &err),
                     SW_ECRYPTO);
    assert_int_equal(sw_record_mac_verify(k, "store", "aws", body, strlen(body) - 1, mac, &err),
                     SW_ECRYPTO);
    /* "store"+"aws" and "stor"+"eaws" are different records. */
    char m2[SW_RECORD_MAC_TEXT_MAX];
    assert_int_equal(sw_record_mac(k, "stor", "eaws", body, strlen(body), m2), 0);
    assert_string_not_equal(mac, m2);
    /* Another key: said so, with both ids. */
    assert_int_equal(sw_record_mac_verify(k2, "store", "aws", body, strlen(body), mac, &err),
                     SW_ECRYPTO);
    assert_non_null(strstr(err.msg, "signed with key"));
    /* The key id is the sealing key's; one changed digit of the MAC does not verify. */
    char idhex[16];
    snprintf(idhex, sizeof(idhex), "%08x", (unsigned)sw_seal_key_id(k));
    assert_memory_equal(mac + 3, idhex, 8);
    mac[20] = mac[20] == '0' ? '1' : '0';
    assert_int_equal(sw_record_mac_verify(k, "store", "aws", body, strlen(body), mac, &err),
                     SW_ECRYPTO);
    assert_int_equal(sw_record_mac_verify(k, "store", "aws", body, strlen(body), "v1:zz", &err),
                     SW_ECRYPTO);
    assert_non_null(strstr(err.msg, "store aws: field \"mac\": expected"));
    sw_seal_key_free(k);
    sw_seal_key_free(k2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcm_known_answers),
        cmocka_unit_test(test_envelope_known_answer),
        cmocka_unit_test(test_round_trip_random_nonce),
        cmocka_unit_test(test_tamper_detected),
        cmocka_unit_test(test_wrong_key_and_context),
        cmocka_unit_test(test_key_text_forms),
        cmocka_unit_test(test_key_file_mode_and_env),
        cmocka_unit_test(test_derive),
        cmocka_unit_test(test_alloc_failures_unwind),
        cmocka_unit_test(test_record_mac),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
