/*
 * test_sigv4.c - the signer against AWS's published SigV4 test suite
 * (credentials AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, "service") and
 * the S3 GET example of the S3 API reference. The expected values were
 * written in by hand from the suite.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "replication/sigv4.h"

#define SUITE_TIME 1440938160 /* 2015-08-30T12:36:00Z */
#define SUITE_SCOPE                                                                                \
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "

static struct sw_sigv4_input suite_input(const char *method, const char *path)
{
    struct sw_sigv4_input in = {0};
    in.method = method;
    in.host = "example.amazonaws.com";
    in.path = path;
    in.payload_hash = SW_SIGV4_EMPTY_SHA256;
    in.access_key = "AKIDEXAMPLE";
    in.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    in.region = "us-east-1";
    in.service = "service";
    in.time_s = SUITE_TIME;
    return in;
}

static void expect_sig(const struct sw_sigv4_input *in, const char *signed_headers, const char *sig)
{
    struct sw_sigv4_output out;
    struct sw_error err;
    assert_int_equal(sw_sigv4_sign(in, &out, NULL, &err), 0);
    assert_string_equal(out.amz_date, "20150830T123600Z");
    assert_string_equal(out.signature, sig);
    char want[512];
    snprintf(want, sizeof(want), SUITE_SCOPE "SignedHeaders=%s, Signature=%s", signed_headers, sig);
    assert_string_equal(out.authorization, want);
}

static void test_get_vanilla(void **state)
{
    (void)state;
    struct sw_sigv4_input in = suite_input("GET", "/");
    struct sw_sigv4_output out;
    struct sw_buf cr;
    sw_buf_init(&cr, 4096);
    assert_int_equal(sw_sigv4_sign(&in, &out, &cr, NULL), 0);
    assert_string_equal(cr.data,
                        "GET\n/\n\nhost:example.amazonaws.com\n"
                        "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" SW_SIGV4_EMPTY_SHA256);
    assert_string_equal(out.canonical_hash,
                        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
    sw_buf_free(&cr);
    expect_sig(&in, "host;x-amz-date",
               "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

static void test_post_vanilla(void **state)
{
    (void)state;
    struct sw_sigv4_input in = suite_input("POST", "/");
    expect_sig(&in, "host;x-amz-date",
               "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

static void test_query_order_key_case(void **state)
{
    (void)state;
    struct sw_sigv4_pair q[] = {{"Param2", "value2"}, {"Param1", "value1"}};
    struct sw_sigv4_input in = suite_input("GET", "/");
    in.query = q;
    in.nquery = 2;
    expect_sig(&in, "host;x-amz-date",
               "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

static void test_query_order_encoded(void **state)
{
    (void)state;
    struct sw_sigv4_pair q[] = {
        {"Param-3", "Value3"}, {"Param", "Value2"}, {"\xe1\x88\xb4", "Value1"}};
    struct sw_sigv4_input in = suite_input("GET", "/");
    in.query = q;
    in.nquery = 3;
    struct sw_sigv4_output out;
    struct sw_buf cr;
    sw_buf_init(&cr, 4096);
    assert_int_equal(sw_sigv4_sign(&in, &out, &cr, NULL), 0);
    assert_non_null(strstr(cr.data, "\n%E1%88%B4=Value1&Param=Value2&Param-3=Value3\n"));
    sw_buf_free(&cr);
    expect_sig(&in, "host;x-amz-date",
               "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac");
}

static void test_query_unreserved_and_utf8(void **state)
{
    (void)state;
    const char *u = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    struct sw_sigv4_pair q1[] = {{u, u}};
    struct sw_sigv4_input in = suite_input("GET", "/");
    in.query = q1;
    in.nquery = 1;
    expect_sig(&in, "host;x-amz-date",
               "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197");
    struct sw_sigv4_pair q2[] = {{"\xe1\x88\xb4", "bar"}};
    in.query = q2;
    expect_sig(&in, "host;x-amz-date",
               "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04");
}

static void test_unreserved_path(void **state)
{
    (void)state;
    struct sw_sigv4_input in =
        suite_input("GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
    expect_sig(&in, "host;x-amz-date",
               "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f");
}

static void test_headers(void **state)
{
    (void)state;
    struct sw_sigv4_input in = suite_input("GET", "/");
    struct sw_sigv4_pair dup[] = {
        {"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}};
    in.headers = dup;
    in.nheaders = 3;
    expect_sig(&in, "host;my-header1;x-amz-date",
               "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea");
    struct sw_sigv4_pair order[] = {{"My-Header1", "value4"},
                                    {"My-Header1", "value1"},
                                    {"My-Header1", "value3"},
                                    {"My-Header1", "value2"}};
    in.headers = order;
    in.nheaders = 4;
    expect_sig(&in, "host;my-header1;x-amz-date",
               "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01");
    struct sw_sigv4_pair trim[] = {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}};
    in.headers = trim;
    in.nheaders = 2;
    expect_sig(&in, "host;my-header1;my-header2;x-amz-date",
               "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
    struct sw_sigv4_input post = suite_input("POST", "/");
    struct sw_sigv4_pair vcase[] = {{"My-Header1", "VALUE1"}};
    post.headers = vcase;
    post.nheaders = 1;
    expect_sig(&post, "host;my-header1;x-amz-date",
               "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d");
}

static void test_post_form_and_session_token(void **state)
{
    (void)state;
    struct sw_sigv4_input in = suite_input("POST", "/");
    const char *ph = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e";
    char hex[65];
    sw_sha256_hex("Param1=value1", 13, hex);
    assert_string_equal(hex, ph);
    struct sw_sigv4_pair hs[] = {{"Content-Type", "application/x-www-form-urlencoded"},
                                 {"Content-Length", "13"},
                                 {"x-amz-content-sha256", ph}};
    in.headers = hs;
    in.nheaders = 3;
    in.payload_hash = ph;
    expect_sig(&in, "content-length;content-type;host;x-amz-content-sha256;x-amz-date",
               "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b");

    struct sw_sigv4_input tok = suite_input("GET", "/");
    tok.session_token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
    expect_sig(&tok, "host;x-amz-date;x-amz-security-token",
               "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8");
}

/* The S3 API reference's GET Object example (bytes 0-9 of test.txt). */
static void test_s3_get_object_example(void **state)
{
    (void)state;
    struct sw_sigv4_pair hs[] = {{"Range", "bytes=0-9"},
                                 {"x-amz-content-sha256", SW_SIGV4_EMPTY_SHA256}};
    struct sw_sigv4_input in = {0};
    in.method = "GET";
    in.host = "examplebucket.s3.amazonaws.com";
    in.path = "/test.txt";
    in.headers = hs;
    in.nheaders = 2;
    in.payload_hash = SW_SIGV4_EMPTY_SHA256;
    in.access_key = "AKIAIOSFODNN7EXAMPLE";
    in.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    in.region = "us-east-1";
    in.service = "s3";
    in.time_s = 1369353600; /* 2013-05-24T00:00:00Z */
    struct sw_sigv4_output out;
    assert_int_equal(sw_sigv4_sign(&in, &out, NULL, NULL), 0);
    assert_string_equal(out.canonical_hash,
                        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    assert_string_equal(out.signature,
                        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    assert_string_equal(
        out.authorization,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
        "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_uri_encode(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1024);
    const char *key = "models/llama 3/v1/\xc3\xa9t\xc3\xa9+x=y&z";
    assert_int_equal(sw_sigv4_uri_encode(&b, key, strlen(key), 1), 0);
    assert_string_equal(b.data, "models/llama%203/v1/%C3%A9t%C3%A9%2Bx%3Dy%26z");
    sw_buf_reset(&b);
    assert_int_equal(sw_sigv4_uri_encode(&b, "a/b", 3, 0), 0);
    assert_string_equal(b.data, "a%2Fb");
    sw_buf_free(&b);
}

static void test_missing_fields_named(void **state)
{
    (void)state;
    struct sw_sigv4_input in = suite_input("GET", "/");
    in.secret_key = "";
    struct sw_sigv4_output out;
    struct sw_error err;
    assert_int_equal(sw_sigv4_sign(&in, &out, NULL, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "secret key"));
    in = suite_input("GET", "/");
    in.region = NULL;
    assert_int_equal(sw_sigv4_sign(&in, &out, NULL, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "region"));
}

static void test_alloc_failures(void **state)
{
    (void)state;
    struct sw_sigv4_pair q[] = {{"Param2", "value2"}, {"Param1", "value1"}};
    struct sw_sigv4_pair hs[] = {{"My-Header1", "a"}};
    struct sw_sigv4_input in = suite_input("GET", "/");
    in.query = q;
    in.nquery = 2;
    in.headers = hs;
    in.nheaders = 1;
    int ok = 0;
    for (uint64_t n = 1; n < 200 && !ok; n++) {
        struct sw_sigv4_output out;
        sw_alloc_fail_at(n);
        int rc = sw_sigv4_sign(&in, &out, NULL, NULL);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (injected)
            assert_int_equal(rc, SW_ENOMEM);
        else {
            assert_int_equal(rc, 0);
            ok = 1;
        }
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_vanilla),
        cmocka_unit_test(test_post_vanilla),
        cmocka_unit_test(test_query_order_key_case),
        cmocka_unit_test(test_query_order_encoded),
        cmocka_unit_test(test_query_unreserved_and_utf8),
        cmocka_unit_test(test_unreserved_path),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_post_form_and_session_token),
        cmocka_unit_test(test_s3_get_object_example),
        cmocka_unit_test(test_uri_encode),
        cmocka_unit_test(test_missing_fields_named),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
