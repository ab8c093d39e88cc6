/*
 * fuzz_s3xml.c - libFuzzer target for every S3 XML parser in
 * replication/s3xml.c. The first byte picks the parser, the rest is the
 * reply body. Seeds: tests/fuzz/corpus/fuzz_s3xml/.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"
#include "replication/s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *xml = (const char *)data + 1;
    size_t len = size - 1;
    struct sw_error err;
    switch (data[0] % 6) {
    case 0: {
        struct sw_s3_list l;
        if (sw_s3xml_parse_list(xml, len, &l, &err) == 0)
            sw_s3_list_free(&l);
        break;
    }
    case 1: {
        char *id = NULL;
        if (sw_s3xml_parse_initiate(xml, len, &id, &err) == 0)
            sw_free(id);
        break;
    }
    case 2: {
        char etag[SW_S3_ETAG_MAX];
        struct sw_s3_error_reply r;
        sw_s3xml_parse_etag_result(xml, len, "CompleteMultipartUploadResult", etag, &r, &err);
        break;
    }
    case 3: {
        struct sw_s3_uploads u;
        if (sw_s3xml_parse_uploads(xml, len, &u, &err) == 0)
            sw_s3_uploads_free(&u);
        break;
    }
    case 4: {
        struct sw_s3_parts p;
        if (sw_s3xml_parse_parts(xml, len, &p, &err) == 0)
            sw_s3_parts_free(&p);
        break;
    }
    default: {
        struct sw_s3_error_reply r;
        sw_s3xml_parse_error(xml, len, &r, &err);
        break;
    }
    }
    return 0;
}
