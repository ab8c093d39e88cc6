/*
 * test_s3.c - the S3 client's pure helpers: ETags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replication/s3.h"

static void test_etag_bare(void **state)
{
    (void)state;
    char out[64];
    sw_s3_etag_bare("\"9e107d9d372bb6826bd81d3542a419d6\"", out, sizeof(out));
    assert_string_equal(out, "9e107d9d372bb6826bd81d3542a419d6");
    sw_s3_etag_bare("abc", out, sizeof(out));
    assert_string_equal(out, "abc");
    /* A lone quote is not a quoted ETag. */
    sw_s3_etag_bare("\"", out, sizeof(out));
    assert_string_equal(out, "\"");
    sw_s3_etag_bare("\"0123456789\"", out, 5);
    assert_string_equal(out, "0123");
}

static void test_etag_is_md5(void **state)
{
    (void)state;
    assert_true(sw_s3_etag_is_md5("9e107d9d372bb6826bd81d3542a419d6"));
    assert_true(sw_s3_etag_is_md5("9E107D9D372BB6826BD81D3542A419D6"));
    assert_true(sw_s3_etag_is_md5("d41d8cd98f00b204e9800998ecf8427e")); /* empty object */
    /* Multipart: MD5 of the parts' MD5s, dash, part count. */
    assert_false(sw_s3_etag_is_md5("9e107d9d372bb6826bd81d3542a419d6-3"));
    assert_false(sw_s3_etag_is_md5("\"9e107d9d372bb6826bd81d3542a419d6\"")); /* not bare */
    assert_false(sw_s3_etag_is_md5("9e107d9d372bb6826bd81d3542a419d"));      /* 31 */
    assert_false(sw_s3_etag_is_md5("9e107d9d372bb6826bd81d3542a419d6a"));    /* 33 */
    assert_false(sw_s3_etag_is_md5("9e107d9d372bb6826bd81d3542a419g6"));     /* not hex */
    assert_false(sw_s3_etag_is_md5(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_etag_bare),
        cmocka_unit_test(test_etag_is_md5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
