/*
 * test_s3xml.c - S3 XML replies: the documented shapes, with and without
 * the S3 namespace, and malformed replies whose errors name the element.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "replication/s3xml.h"

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static const char LIST[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult " NS "><Name>datasets</Name><Prefix>imagenet/</Prefix>"
    "<KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
    "<NextContinuationToken>tok/+=</NextContinuationToken>"
    "<Contents><Key>imagenet/a b.bin</Key><LastModified>2026-01-02T03:04:05.123Z</LastModified>"
    "<ETag>&quot;9bb58f26192e4ba00f01e2e7b136bbd8&quot;</ETag><Size>0</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>imagenet/\xc3\xa9t\xc3\xa9 &amp; co</Key><Size>5242881</Size></Contents>"
    "</ListBucketResult>";

static void test_list(void **state)
{
    (void)state;
    struct sw_s3_list l;
    struct sw_error err;
    assert_int_equal(sw_s3xml_parse_list(LIST, sizeof(LIST) - 1, &l, &err), 0);
    assert_int_equal(l.n, 2);
    assert_true(l.truncated);
    assert_string_equal(l.next_token, "tok/+=");
    assert_string_equal(l.objects[0].key, "imagenet/a b.bin");
    assert_int_equal(l.objects[0].size, 0);
    assert_string_equal(l.objects[0].etag, "\"9bb58f26192e4ba00f01e2e7b136bbd8\"");
    assert_int_equal(l.objects[0].last_modified_ms, 1767323045123LL);
    assert_string_equal(l.objects[1].key, "imagenet/\xc3\xa9t\xc3\xa9 & co");
    assert_int_equal(l.objects[1].size, 5242881);
    sw_s3_list_free(&l);

    const char empty[] = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
    assert_int_equal(sw_s3xml_parse_list(empty, sizeof(empty) - 1, &l, &err), 0);
    assert_int_equal(l.n, 0);
    assert_false(l.truncated);
    assert_null(l.next_token);
    sw_s3_list_free(&l);
}

static void expect_list_error(const char *xml, int code, const char *needle)
{
    struct sw_s3_list l;
    struct sw_error err;
    sw_error_clear(&err);
    assert_int_equal(sw_s3xml_parse_list(xml, strlen(xml), &l, &err), code);
    if (strstr(err.msg, needle) == NULL)
        fail_msg("message \"%s\" does not name \"%s\"", err.msg, needle);
    assert_null(l.objects);
    assert_null(l.next_token);
}

static void test_list_malformed(void **state)
{
    (void)state;
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents>"
                      "<Contents><Key>b</Key><Size>x</Size></Contents></ListBucketResult>",
                      SW_EPARSE, "ListBucketResult/Contents[1]/Size: expected a non-negative");
    expect_list_error("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
                      SW_EPARSE, "ListBucketResult/Contents[0]/Key: missing");
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><Size>-4</Size></Contents>"
                      "</ListBucketResult>",
                      SW_EPARSE, "Contents[0]/Size");
    expect_list_error("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                      SW_EPARSE, "NextContinuationToken: missing while IsTruncated");
    expect_list_error("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
                      SW_EPARSE, "IsTruncated: expected true or false");
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><Size>1</Size>"
                      "<LastModified>yesterday</LastModified></Contents></ListBucketResult>",
                      SW_EPARSE, "Contents[0]/LastModified");
    /* Sizes over S3's 5 TiB limit would let a hostile listing overflow
     * the byte totals; the limit itself is accepted. */
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><Size>5497558138881</Size>"
                      "</Contents></ListBucketResult>",
                      SW_EPARSE, "Contents[0]/Size: 5497558138881 is over S3's 5 TiB");
    expect_list_error("<ListBucketResult><Contents><Key>a</Key><Size>9223372036854775807</Size>"
                      "</Contents></ListBucketResult>",
                      SW_EPARSE, "5 TiB object limit");
    {
        static const char at_limit[] = "<ListBucketResult><Contents><Key>a</Key>"
                                       "<Size>5497558138880</Size></Contents></ListBucketResult>";
        struct sw_s3_list l;
        struct sw_error err;
        sw_error_clear(&err);
        assert_int_equal(sw_s3xml_parse_list(at_limit, sizeof(at_limit) - 1, &l, &err), 0);
        assert_int_equal(l.n, 1);
        assert_true(l.objects[0].size == (int64_t)5 << 40);
        sw_s3_list_free(&l);
    }
    expect_list_error("<ListAllMyBucketsResult/>", SW_EPARSE,
                      "root element is <ListAllMyBucketsResult>, expected <ListBucketResult>");
    expect_list_error("<ListBucketResult><Contents>", SW_EPARSE, "not well-formed XML");
    expect_list_error("", SW_EPARSE, "empty body");
    expect_list_error("<html><body>502 Bad Gateway</body></html>", SW_EPARSE, "root element");
}

/* Entities are not expanded and nothing is fetched: an external entity
 * stays an unresolved reference instead of the content of a local file. */
static void test_no_entity_expansion(void **state)
{
    (void)state;
    const char xxe[] = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM "
                       "\"file:///etc/passwd\">]><InitiateMultipartUploadResult>"
                       "<UploadId>&x;</UploadId></InitiateMultipartUploadResult>";
    char *id = NULL;
    struct sw_error err;
    int rc = sw_s3xml_parse_initiate(xxe, sizeof(xxe) - 1, &id, &err);
    if (rc == 0) {
        assert_null(strstr(id, "root:"));
        sw_free(id);
    } else {
        assert_int_equal(rc, SW_EPARSE);
        assert_null(id);
    }
}

static void test_initiate(void **state)
{
    (void)state;
    const char ok[] = "<InitiateMultipartUploadResult " NS "><Bucket>b</Bucket><Key>k</Key>"
                      "<UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>";
    char *id;
    struct sw_error err;
    assert_int_equal(sw_s3xml_parse_initiate(ok, sizeof(ok) - 1, &id, &err), 0);
    assert_string_equal(id, "VXBsb2FkIElE");
    sw_free(id);
    const char bad[] = "<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                       "</InitiateMultipartUploadResult>";
    assert_int_equal(sw_s3xml_parse_initiate(bad, sizeof(bad) - 1, &id, &err), SW_EPARSE);
    assert_string_equal(err.msg, "InitiateMultipartUploadResult/UploadId: missing");
    assert_null(id);
}

static void test_etag_results(void **state)
{
    (void)state;
    char etag[SW_S3_ETAG_MAX];
    struct sw_s3_error_reply reply;
    struct sw_error err;
    const char done[] = "<CompleteMultipartUploadResult " NS "><Location>x</Location>"
                        "<Bucket>b</Bucket><Key>k</Key><ETag>\"3858f62230ac3c915f300c664312c11f-9"
                        "\"</ETag></CompleteMultipartUploadResult>";
    assert_int_equal(sw_s3xml_parse_etag_result(done, sizeof(done) - 1,
                                                "CompleteMultipartUploadResult", etag, &reply,
                                                &err),
                     0);
    assert_string_equal(etag, "\"3858f62230ac3c915f300c664312c11f-9\"");

    /* S3 may answer 200 and then fail the completion with an <Error>. */
    const char late[] = "<Error><Code>InternalError</Code><Message>We encountered an internal "
                        "error. Please try again.</Message><RequestId>R1</RequestId></Error>";
    assert_int_equal(sw_s3xml_parse_etag_result(late, sizeof(late) - 1,
                                                "CompleteMultipartUploadResult", etag, &reply,
                                                &err),
                     SW_EHTTP);
    assert_string_equal(reply.code, "InternalError");
    assert_string_equal(reply.request_id, "R1");
    assert_non_null(strstr(err.msg, "InternalError"));

    const char copy[] = "<CopyPartResult><LastModified>2026-01-02T03:04:05Z</LastModified>"
                        "<ETag>\"abc\"</ETag></CopyPartResult>";
    assert_int_equal(
        sw_s3xml_parse_etag_result(copy, sizeof(copy) - 1, "CopyPartResult", etag, NULL, &err), 0);
    assert_string_equal(etag, "\"abc\"");
    const char noetag[] = "<CopyObjectResult><LastModified>x</LastModified></CopyObjectResult>";
    assert_int_equal(sw_s3xml_parse_etag_result(noetag, sizeof(noetag) - 1, "CopyObjectResult",
                                                etag, NULL, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, "CopyObjectResult/ETag: missing");
}

static void test_uploads_and_parts(void **state)
{
    (void)state;
    const char up[] = "<ListMultipartUploadsResult " NS "><Bucket>b</Bucket>"
                      "<IsTruncated>false</IsTruncated><Upload><Key>models/m/1/w.bin</Key>"
                      "<UploadId>u1</UploadId><Initiated>2026-01-02T03:04:05.000Z</Initiated>"
                      "</Upload><Upload><Key>k2</Key><UploadId>u2</UploadId></Upload>"
                      "</ListMultipartUploadsResult>";
    struct sw_s3_uploads u;
    struct sw_error err;
    assert_int_equal(sw_s3xml_parse_uploads(up, sizeof(up) - 1, &u, &err), 0);
    assert_int_equal(u.n, 2);
    assert_string_equal(u.uploads[0].key, "models/m/1/w.bin");
    assert_string_equal(u.uploads[1].upload_id, "u2");
    assert_int_equal(u.uploads[0].initiated_ms, 1767323045000LL);
    sw_s3_uploads_free(&u);

    const char parts[] = "<ListPartsResult><IsTruncated>true</IsTruncated>"
                         "<NextPartNumberMarker>2</NextPartNumberMarker>"
                         "<Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag><Size>5242880</Size>"
                         "</Part><Part><PartNumber>2</PartNumber><ETag>\"e2\"</ETag><Size>1</Size>"
                         "</Part></ListPartsResult>";
    struct sw_s3_parts p;
    assert_int_equal(sw_s3xml_parse_parts(parts, sizeof(parts) - 1, &p, &err), 0);
    assert_int_equal(p.n, 2);
    assert_true(p.truncated);
    assert_int_equal(p.next_marker, 2);
    assert_int_equal(p.parts[1].number, 2);
    assert_int_equal(p.parts[0].size, 5242880);
    assert_string_equal(p.parts[1].etag, "\"e2\"");
    sw_s3_parts_free(&p);

    const char badpart[] = "<ListPartsResult><Part><PartNumber>0</PartNumber><ETag>e</ETag>"
                           "<Size>1</Size></Part></ListPartsResult>";
    assert_int_equal(sw_s3xml_parse_parts(badpart, sizeof(badpart) - 1, &p, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "ListPartsResult/Part[0]/PartNumber"));
}

static void test_error_doc(void **state)
{
    (void)state;
    const char doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
                       "SignatureDoesNotMatch</Code><Message>The request signature we calculated "
                       "does not match</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>";
    struct sw_s3_error_reply r;
    struct sw_error err;
    assert_int_equal(sw_s3xml_parse_error(doc, sizeof(doc) - 1, &r, &err), 0);
    assert_string_equal(r.code, "SignatureDoesNotMatch");
    assert_string_equal(r.request_id, "4442587FB7D0A2F9");
    assert_int_equal(sw_s3xml_parse_error("", 0, &r, &err), SW_EPARSE);
    assert_string_equal(r.code, "");
    assert_int_equal(sw_s3xml_parse_error("<Error/>", 8, &r, &err), SW_EPARSE);
    assert_string_equal(err.msg, "Error/Code: missing");
}

static void test_time(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(sw_s3_parse_time("2026-01-02T03:04:05Z", &ms), 0);
    assert_int_equal(ms, 1767323045000LL);
    assert_int_equal(sw_s3_parse_time("Fri, 02 Jan 2026 03:04:05 GMT", &ms), 0);
    assert_int_equal(ms, 1767323045000LL);
    assert_int_equal(sw_s3_parse_time("2026-01-02T03:04:05+02:00", &ms), SW_EPARSE);
    assert_int_equal(sw_s3_parse_time("soon", &ms), SW_EPARSE);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    int ok = 0;
    for (uint64_t n = 1; n < 100 && !ok; n++) {
        struct sw_s3_list l;
        sw_alloc_fail_at(n);
        int rc = sw_s3xml_parse_list(LIST, sizeof(LIST) - 1, &l, NULL);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (injected) {
            assert_int_equal(rc, SW_ENOMEM);
            assert_null(l.objects);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(l.n, 2);
            sw_s3_list_free(&l);
            ok = 1;
        }
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_list_malformed),
        cmocka_unit_test(test_no_entity_expansion),
        cmocka_unit_test(test_initiate),
        cmocka_unit_test(test_etag_results),
        cmocka_unit_test(test_uploads_and_parts),
        cmocka_unit_test(test_error_doc),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
