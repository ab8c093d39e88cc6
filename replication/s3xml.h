/*
 * s3xml.h - parsers of S3's XML replies, pure functions from a buffer.
 *
 * Each parser takes the body as received and fills a result the caller
 * owns. A malformed reply is SW_EPARSE with a message naming the element
 * that is wrong ("ListBucketResult/Contents[2]/Size: expected a
 * non-negative integer, got \"x\""). The documents are parsed by libxml2
 * without network access and without entity expansion, and matched by local
 * name, so the S3 namespace may be present or not.
 */
#ifndef SW_REPLICATION_S3XML_H
#define SW_REPLICATION_S3XML_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/** Longest ETag kept (quotes included); S3's are 34 or ~40 characters. */
#define SW_S3_ETAG_MAX 128
/** Longest S3 error code kept, e.g. "SignatureDoesNotMatch". */
#define SW_S3_CODE_MAX 64

/** One object of a listing. */
struct sw_s3_object {
    char *key;                 /* owned */
    int64_t size;              /* bytes */
    int64_t last_modified_ms;  /* ms since the epoch, or 0 when absent */
    char etag[SW_S3_ETAG_MAX]; /* as sent, quotes included */
};

/** A page of ListObjectsV2 (ListBucketResult). Owned by the caller. */
struct sw_s3_list {
    struct sw_s3_object *objects;
    size_t n;
    int truncated;
    char *next_token; /* NextContinuationToken, or NULL */
};

/** One in-progress multipart upload (ListMultipartUploadsResult/Upload). */
struct sw_s3_upload {
    char *key;       /* owned */
    char *upload_id; /* owned */
    int64_t initiated_ms;
};

/** A page of ListMultipartUploads. Owned by the caller. */
struct sw_s3_uploads {
    struct sw_s3_upload *uploads;
    size_t n;
    int truncated;
    char *next_key_marker;       /* or NULL */
    char *next_upload_id_marker; /* or NULL */
};

/** One uploaded part (ListPartsResult/Part). */
struct sw_s3_part {
    int number;
    int64_t size;
    char etag[SW_S3_ETAG_MAX];
};

/** A page of ListParts. Owned by the caller. */
struct sw_s3_parts {
    struct sw_s3_part *parts;
    size_t n;
    int truncated;
    int next_marker;
};

/** An S3 <Error> document. */
struct sw_s3_error_reply {
    char code[SW_S3_CODE_MAX];
    char message[256];
    char request_id[128];
};

/** Parses a ListBucketResult (ListObjectsV2). */
int sw_s3xml_parse_list(const char *xml, size_t len, struct sw_s3_list *out, struct sw_error *err);
/** Frees what sw_s3xml_parse_list filled (the struct itself is the caller's). */
void sw_s3_list_free(struct sw_s3_list *l);

/** Parses InitiateMultipartUploadResult; *upload_id is new (sw_free). */
int sw_s3xml_parse_initiate(const char *xml, size_t len, char **upload_id, struct sw_error *err);

/**
 * Parses CompleteMultipartUploadResult, CopyObjectResult or CopyPartResult:
 * all three answer 200 and carry an ETag, but S3 may also answer 200 with an
 * <Error> body once the work failed; that is SW_EHTTP with the code copied
 * into `reply` (when not NULL) and named in err.
 */
int sw_s3xml_parse_etag_result(const char *xml, size_t len, const char *root,
                               char etag[SW_S3_ETAG_MAX], struct sw_s3_error_reply *reply,
                               struct sw_error *err);

/** Parses ListMultipartUploadsResult. */
int sw_s3xml_parse_uploads(const char *xml, size_t len, struct sw_s3_uploads *out,
                           struct sw_error *err);
/** Frees what sw_s3xml_parse_uploads filled. */
void sw_s3_uploads_free(struct sw_s3_uploads *u);

/** Parses ListPartsResult. */
int sw_s3xml_parse_parts(const char *xml, size_t len, struct sw_s3_parts *out,
                         struct sw_error *err);
/** Frees what sw_s3xml_parse_parts filled. */
void sw_s3_parts_free(struct sw_s3_parts *p);

/**
 * Parses an <Error> document. An empty or non-XML body (HEAD replies have
 * none) is SW_EPARSE and leaves `out` zeroed.
 */
int sw_s3xml_parse_error(const char *xml, size_t len, struct sw_s3_error_reply *out,
                         struct sw_error *err);

/**
 * Parses an ISO 8601 time as S3 writes it ("2026-01-02T03:04:05.000Z") or
 * an RFC 7231 date ("Fri, 02 Jan 2026 03:04:05 GMT"); SW_EPARSE otherwise.
 */
int sw_s3_parse_time(const char *s, int64_t *ms);

#endif
