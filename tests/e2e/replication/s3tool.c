/*
 * s3tool.c - a small helper for the replication e2e scripts, on the
 * project's own S3 client: put generated objects, count open multipart
 * uploads, delete a prefix. Credentials come from SW_S3_ACCESS_KEY and
 * SW_S3_SECRET_KEY.
 *
 *   s3tool ENDPOINT REGION put BUCKET KEY SIZE SEED   (prints the SHA-256)
 *   s3tool ENDPOINT REGION uploads BUCKET PREFIX      (prints the count)
 *   s3tool ENDPOINT REGION rm BUCKET PREFIX
 *   s3tool ENDPOINT REGION mb BUCKET
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "replication/s3.h"
#include "tests/support/fill.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: s3tool ENDPOINT REGION put|uploads|rm|mb BUCKET [ARGS]\n");
        return 2;
    }
    const char *ak = getenv("SW_S3_ACCESS_KEY"), *sk = getenv("SW_S3_SECRET_KEY");
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct sw_http *http;
    if (sw_http_new(&loop, &http) != 0)
        return 1;
    struct sw_s3_config cfg = {.name = "s3tool",
                               .endpoint = argv[1],
                               .region = argv[2],
                               .access_key = ak,
                               .secret_key = sk};
    struct sw_s3 *s3;
    struct sw_error err;
    if (sw_s3_new(&loop, http, &cfg, &s3, &err) != 0) {
        fprintf(stderr, "s3tool: %s\n", err.msg);
        return 1;
    }
    const char *op = argv[3], *bucket = argv[4];
    int rc = 0;
    if (strcmp(op, "put") == 0 && argc == 8) {
        size_t n = (size_t)strtoull(argv[6], NULL, 10);
        char *buf = sw_malloc(n ? n : 1);
        sw_test_fill(buf, n, strtoull(argv[7], NULL, 10));
        char sha[65];
        sw_sha256_hex(buf, n, sha);
        rc = sw_s3_put_sync(s3, bucket, argv[5], buf, n, NULL, 0, &err);
        sw_free(buf);
        if (rc == 0)
            printf("%s\n", sha);
    } else if (strcmp(op, "uploads") == 0 && argc == 6) {
        struct sw_s3_uploads u;
        rc = sw_s3_list_uploads_sync(s3, bucket, argv[5], &u, &err);
        if (rc == 0) {
            printf("%zu\n", u.n);
            sw_s3_uploads_free(&u);
        }
    } else if (strcmp(op, "rm") == 0 && argc == 6) {
        for (;;) {
            struct sw_s3_list l;
            rc = sw_s3_list_sync(s3, bucket, argv[5], NULL, &l, &err);
            if (rc != 0)
                break;
            for (size_t i = 0; i < l.n && rc == 0; i++)
                rc = sw_s3_delete_sync(s3, bucket, l.objects[i].key, &err);
            int more = l.truncated && l.n > 0;
            sw_s3_list_free(&l);
            if (!more || rc != 0)
                break;
        }
    } else if (strcmp(op, "mb") == 0) {
        rc = sw_s3_create_bucket_sync(s3, bucket, &err);
    } else {
        fprintf(stderr, "s3tool: bad arguments\n");
        rc = 2;
    }
    if (rc != 0 && rc != 2)
        fprintf(stderr, "s3tool: %s\n", err.msg);
    sw_s3_free(s3);
    sw_http_free(http);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc == 0 ? 0 : 1;
}
