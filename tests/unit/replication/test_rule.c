/*
 * test_rule.c - rule locations, validation, JSON round trip,
 * model-registry keys, and the MACs of store and rule records (pure parts
 * of replication/rule.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "replication/rule.h"

static void expect_loc_error(const char *s, const char *needle)
{
    struct sw_rule_loc l;
    struct sw_error err;
    assert_int_equal(sw_rule_loc_parse(s, &l, &err), SW_EINVAL);
    if (strstr(err.msg, needle) == NULL)
        fail_msg("\"%s\": message \"%s\" lacks \"%s\"", s, err.msg, needle);
}

static void test_loc(void **state)
{
    (void)state;
    struct sw_rule_loc l;
    assert_int_equal(sw_rule_loc_parse("onprem:datasets/imagenet/", &l, NULL), 0);
    assert_string_equal(l.store, "onprem");
    assert_string_equal(l.bucket, "datasets");
    assert_string_equal(l.prefix, "imagenet/");
    assert_int_equal(sw_rule_loc_parse("us-east-1:s3://models", &l, NULL), 0);
    assert_string_equal(l.bucket, "models");
    assert_string_equal(l.prefix, "");
    expect_loc_error("datasets/x", "expected STORE:BUCKET/PREFIX");
    expect_loc_error("onprem:", "expected a bucket");
    expect_loc_error("onprem:Bad_Bucket/x", "bucket \"Bad_Bucket\"");
    expect_loc_error("on prem:datasets/x", "store name \"on prem\"");
}

static struct sw_rule_spec sample(void)
{
    struct sw_rule_spec r;
    memset(&r, 0, sizeof(r));
    strcpy(r.name, "models-dr");
    sw_rule_loc_parse("onprem:models/models/", &r.source, NULL);
    sw_rule_loc_parse("us-west-2:models/models/", &r.targets[0], NULL);
    sw_rule_loc_parse("us-east-1:models/models/", &r.targets[1], NULL);
    r.ntargets = 2;
    r.model_registry = 1;
    r.concurrency = 8;
    r.part_size = 16 << 20;
    r.bytes_per_s = 50e6;
    return r;
}

static void test_json_round_trip(void **state)
{
    (void)state;
    struct sw_rule_spec r = sample(), back;
    char *json;
    assert_int_equal(sw_rule_to_json(&r, &json), 0);
    struct sw_error err;
    assert_int_equal(sw_rule_from_json(json, strlen(json), &back, &err), 0);
    sw_free(json);
    assert_string_equal(back.name, "models-dr");
    assert_int_equal(back.ntargets, 2);
    assert_string_equal(back.targets[1].store, "us-east-1");
    assert_string_equal(back.source.prefix, "models/");
    assert_true(back.model_registry);
    assert_int_equal(back.concurrency, 8);
    assert_int_equal(back.part_size, 16 << 20);
    assert_true(back.bytes_per_s == 50e6);

    const char *bad =
        "{\"name\":\"x\",\"source\":{\"store\":\"a\",\"bucket\":\"bb\"},\"targets\":[]}";
    assert_int_equal(sw_rule_from_json(bad, strlen(bad), &back, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "bucket \"bb\""));
    const char *bad2 = "{\"name\":\"x\",\"source\":{\"store\":\"a\",\"bucket\":\"bbb\"},"
                       "\"targets\":[{\"store\":\"b\"}]}";
    assert_int_not_equal(sw_rule_from_json(bad2, strlen(bad2), &back, &err), 0);
    assert_non_null(strstr(err.msg, "bucket"));
}

static void test_validate(void **state)
{
    (void)state;
    struct sw_rule_spec r = sample();
    struct sw_error err;
    assert_int_equal(sw_rule_validate(&r, &err), 0);
    r.targets[1] = r.targets[0];
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "store us-west-2 is a target twice"));
    r = sample();
    strcpy(r.source.prefix, "checkpoints/");
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "does not start with models/"));
    r = sample();
    r.targets[0] = r.source;
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "lies inside the source"));
    r = sample();
    r.part_size = 1 << 20;
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "part size"));
}

static void test_model_keys(void **state)
{
    (void)state;
    char n[64], v[64];
    assert_int_equal(sw_model_key_parse("models/", "models/llama/v3/weights-00001.safetensors", n,
                                        sizeof(n), v, sizeof(v)),
                     0);
    assert_string_equal(n, "llama");
    assert_string_equal(v, "v3");
    assert_int_equal(sw_model_key_parse("models/", "models/llama/v3/", n, sizeof(n), v, sizeof(v)),
                     SW_EPARSE);
    assert_int_equal(sw_model_key_parse("models/", "models/llama", n, sizeof(n), v, sizeof(v)),
                     SW_EPARSE);
    assert_int_equal(sw_model_key_parse("models/", "other/llama/v3/x", n, sizeof(n), v, sizeof(v)),
                     SW_EPARSE);
}

/* ---- signed records ---------------------------------------------------------- */

static struct sw_seal_key *key_of(unsigned char fill)
{
    unsigned char b[SW_SEAL_KEY_LEN];
    memset(b, fill, sizeof(b));
    struct sw_seal_key *k = NULL;
    assert_int_equal(sw_seal_key_from_bytes(b, sizeof(b), &k), 0);
    return k;
}

/* `json` with the first `from` replaced by `to` (new; sw_free). The
 * test fails when `from` is not there, so a tampering test cannot pass by
 * tampering with nothing. */
static char *replaced(const char *json, const char *from, const char *to)
{
    const char *at = strstr(json, from);
    if (at == NULL)
        fail_msg("\"%s\" not in %s", from, json);
    size_t n = strlen(json) - strlen(from) + strlen(to) + 1;
    char *out = sw_malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - json), json, to, at + strlen(from));
    return out;
}

static struct sw_store_spec sample_store(void)
{
    struct sw_store_spec s;
    memset(&s, 0, sizeof(s));
    strcpy(s.name, "aws-east");
    strcpy(s.endpoint, "https://s3.us-east-1.amazonaws.com");
    strcpy(s.region, "us-east-1");
    strcpy(s.ca_file, "/etc/ssl/certs/aws.pem");
    return s;
}

#define SEALED "swseal:v1:AAAA"

static void expect_store_refused(const struct sw_seal_key *k, const char *name, const char *json,
                                 const char *why)
{
    struct sw_store_spec back;
    char *sealed = (char *)"untouched";
    struct sw_error err;
    sw_error_clear(&err);
    int rc = sw_store_record_from_json(k, name, json, strlen(json), NULL, &back, &sealed, &err);
    if (rc == 0)
        fail_msg("store record accepted: %s", json);
    assert_null(sealed);
    assert_string_equal(back.endpoint, ""); /* nothing of the record is handed out */
    char head[96];
    snprintf(head, sizeof(head), "store %s:", name);
    if (strstr(err.msg, head) == NULL || strstr(err.msg, why) == NULL)
        fail_msg("message \"%s\" lacks \"%s\" or \"%s\"", err.msg, head, why);
}

static void test_store_record_mac(void **state)
{
    (void)state;
    struct sw_seal_key *k = key_of(7), *other = key_of(9);
    struct sw_store_spec s = sample_store(), back;
    char *json = NULL, *sealed = NULL;
    struct sw_error err;
    assert_int_equal(sw_store_record_to_json(k, &s, SEALED, &json), 0);
    assert_non_null(strstr(json, "\"mac\":\"v1:"));

    /* A good record verifies and reads back whole. */
    int was_unsigned = -1;
    assert_int_equal(sw_store_record_from_json(k, "aws-east", json, strlen(json), &was_unsigned,
                                               &back, &sealed, &err),
                     0);
    assert_int_equal(was_unsigned, 0);
    assert_string_equal(back.endpoint, s.endpoint);
    assert_string_equal(back.ca_file, s.ca_file);
    assert_int_equal(back.insecure_tls, 0);
    assert_string_equal(sealed, SEALED);
    sw_free(sealed);

    /* Each field that directs the credentials, changed by hand. */
    static const char *const tamper[][2] = {
        {"https://s3.us-east-1.amazonaws.com", "http://127.0.0.1:9"},
        {"\"ca_file\":\"/etc/ssl/certs/aws.pem\"", "\"ca_file\":\"/tmp/mine.pem\""},
        {"\"insecure_tls\":false", "\"insecure_tls\":true"},
        {"\"virtual_host\":false", "\"virtual_host\":true"},
        {"\"region\":\"us-east-1\"", "\"region\":\"us-west-2\""},
        {SEALED, "swseal:v1:BBBB"},
    };
    for (size_t i = 0; i < sizeof(tamper) / sizeof(tamper[0]); i++) {
        char *bad = replaced(json, tamper[i][0], tamper[i][1]);
        expect_store_refused(k, "aws-east", bad, "the MAC does not verify");
        sw_free(bad);
    }
    /* The same record copied under another name. */
    expect_store_refused(k, "rogue", json, "the MAC does not verify");
    /* A field the record did not have before, with a value that matters. */
    char *added = replaced(json, "{", "{\"insecure_tls\":true,");
    expect_store_refused(k, "aws-east", added, "the MAC does not verify");
    sw_free(added);
    /* Another key (a rotation that skipped this record). */
    expect_store_refused(other, "aws-east", json, "signed with key");
    /* A MAC that is not one. */
    char *garbled = replaced(json, "\"mac\":\"v1:", "\"mac\":\"v2:");
    expect_store_refused(k, "aws-east", garbled, "field \"mac\"");
    sw_free(garbled);

    /* A record from before records were signed: refused with the command
     * that signs it, read only when the caller asks (replicate sign). */
    char *old = NULL;
    {
        const char *m = strstr(json, ",\"mac\":");
        assert_non_null(m);
        size_t n = (size_t)(m - json);
        old = sw_malloc(n + 2);
        assert_non_null(old);
        memcpy(old, json, n);
        memcpy(old + n, "}", 2);
    }
    expect_store_refused(k, "aws-east", old, "spillctl replicate sign");
    was_unsigned = -1;
    assert_int_equal(sw_store_record_from_json(k, "aws-east", old, strlen(old), &was_unsigned,
                                               &back, &sealed, &err),
                     0);
    assert_int_equal(was_unsigned, 1);
    assert_string_equal(back.endpoint, s.endpoint);
    sw_free(sealed);
    sw_free(old);
    sw_free(json);
    sw_seal_key_free(k);
    sw_seal_key_free(other);
}

static void expect_rule_refused(const struct sw_seal_key *k, const char *name, const char *json,
                                const char *why)
{
    struct sw_rule_spec back;
    struct sw_error err;
    sw_error_clear(&err);
    if (sw_rule_record_from_json(k, name, json, strlen(json), NULL, &back, &err) == 0)
        fail_msg("rule record accepted: %s", json);
    assert_int_equal(back.ntargets, 0);
    char head[96];
    snprintf(head, sizeof(head), "rule %s:", name);
    if (strstr(err.msg, head) == NULL || strstr(err.msg, why) == NULL)
        fail_msg("message \"%s\" lacks \"%s\" or \"%s\"", err.msg, head, why);
}

static void test_rule_record_mac(void **state)
{
    (void)state;
    struct sw_seal_key *k = key_of(7);
    struct sw_rule_spec r = sample(), back;
    char *json = NULL;
    struct sw_error err;
    assert_int_equal(sw_rule_record_to_json(k, &r, &json), 0);
    int was_unsigned = -1;
    assert_int_equal(
        sw_rule_record_from_json(k, "models-dr", json, strlen(json), &was_unsigned, &back, &err),
        0);
    assert_int_equal(was_unsigned, 0);
    assert_string_equal(back.targets[1].store, "us-east-1");

    static const char *const tamper[][2] = {
        {"\"source\":{\"store\":\"onprem\"", "\"source\":{\"store\":\"archive\""},
        {"\"source\":{\"store\":\"onprem\",\"bucket\":\"models\"",
         "\"source\":{\"store\":\"onprem\",\"bucket\":\"payroll\""},
        {"\"store\":\"us-west-2\"", "\"store\":\"rogue-s3\""},
        {"\"store\":\"us-east-1\",\"bucket\":\"models\"",
         "\"store\":\"us-east-1\",\"bucket\":\"exfil\""},
        {"\"prefix\":\"models/\"}]", "\"prefix\":\"models/x/\"}]"},
        {"\"concurrency\":8", "\"concurrency\":9"},
    };
    for (size_t i = 0; i < sizeof(tamper) / sizeof(tamper[0]); i++) {
        char *bad = replaced(json, tamper[i][0], tamper[i][1]);
        expect_rule_refused(k, "models-dr", bad, "the MAC does not verify");
        sw_free(bad);
    }
    /* A target added to the list. */
    char *more =
        replaced(json, "\"targets\":[",
                 "\"targets\":[{\"store\":\"rogue\",\"bucket\":\"exfil\",\"prefix\":\"\"},");
    expect_rule_refused(k, "models-dr", more, "the MAC does not verify");
    sw_free(more);
    /* Copied under another name, as is and with its name rewritten. */
    expect_rule_refused(k, "copy", json, "copied from another name");
    char *renamed = replaced(json, "\"name\":\"models-dr\"", "\"name\":\"copy\"");
    expect_rule_refused(k, "copy", renamed, "the MAC does not verify");
    sw_free(renamed);

    /* Written before rules were signed (sw_rule_to_json is that format). */
    char *old = NULL;
    assert_int_equal(sw_rule_to_json(&r, &old), 0);
    expect_rule_refused(k, "models-dr", old, "spillctl replicate sign");
    was_unsigned = -1;
    assert_int_equal(
        sw_rule_record_from_json(k, "models-dr", old, strlen(old), &was_unsigned, &back, &err), 0);
    assert_int_equal(was_unsigned, 1);
    assert_string_equal(back.source.store, "onprem");
    sw_free(old);
    sw_free(json);
    sw_seal_key_free(k);
}

/* Fail the Nth allocation for every N: signing and reading a record either
 * succeed whole or fail with SW_ENOMEM, never accept a record they could
 * not check, and free what they took (the ASan build sees leaks). */
static void test_record_alloc_failures(void **state)
{
    (void)state;
    struct sw_seal_key *k = key_of(7);
    struct sw_store_spec s = sample_store(), back;
    struct sw_rule_spec r = sample(), rback;
    struct sw_error err;
    uint64_t nth;
    for (nth = 1; nth < 400; nth++) {
        sw_alloc_fail_at(nth);
        char *sj = NULL, *rj = NULL, *sealed = NULL;
        int rc1 = sw_store_record_to_json(k, &s, SEALED, &sj);
        int rc2 = rc1 == 0 ? sw_store_record_from_json(k, "aws-east", sj, strlen(sj), NULL, &back,
                                                       &sealed, &err)
                           : rc1;
        int rc3 = sw_rule_record_to_json(k, &r, &rj);
        int rc4 = rc3 == 0
                      ? sw_rule_record_from_json(k, "models-dr", rj, strlen(rj), NULL, &rback, &err)
                      : rc3;
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (rc2 == 0) {
            assert_string_equal(back.endpoint, s.endpoint);
            assert_string_equal(sealed, SEALED);
        } else {
            assert_int_equal(rc2, SW_ENOMEM);
            assert_null(sealed);
        }
        if (rc4 == 0)
            assert_string_equal(rback.targets[0].store, "us-west-2");
        else
            assert_int_equal(rc4, SW_ENOMEM);
        sw_free(sj);
        sw_free(rj);
        sw_free(sealed);
        if (!injected) {
            assert_int_equal(rc2, 0); /* with no failure left to inject, all succeed */
            assert_int_equal(rc4, 0);
            break;
        }
    }
    assert_true(nth > 3 && nth < 400); /* failures were injected, and the loop got through */
    sw_seal_key_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loc),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_model_keys),
        cmocka_unit_test(test_store_record_mac),
        cmocka_unit_test(test_rule_record_mac),
        cmocka_unit_test(test_record_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
