/*
 * s3xml.c - S3 XML replies through libxml2.
 *
 * Documents are read with XML_PARSE_NONET and without XML_PARSE_NOENT, so
 * a hostile server can neither make us fetch anything nor expand entities.
 * Elements are matched by local name; unknown elements are ignored, as S3
 * adds fields over time.
 */
#include "replication/s3xml.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/alloc.h"

#define PARSE_OPTS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)
/* S3 replies are small; a listing page of 1,000 keys is a few hundred KiB. */
#define MAX_DOC ((size_t)16 << 20)

static int is(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static const xmlNode *child(const xmlNode *n, const char *name)
{
    for (const xmlNode *c = n->children; c != NULL; c = c->next)
        if (is(c, name))
            return c;
    return NULL;
}

/* The text of an element as a new string (libxml2's allocator: xmlFree). */
static xmlChar *text(const xmlNode *n)
{
    return xmlNodeGetContent(n);
}

static int read_doc(const char *xml, size_t len, const char *what, xmlDoc **doc,
                    struct sw_error *err)
{
    if (len == 0)
        return sw_error_set(err, SW_EPARSE, "%s: empty body, expected an XML document", what);
    if (len > MAX_DOC)
        return sw_error_set(err, SW_ETOOBIG, "%s: %zu bytes is larger than %zu", what, len,
                            MAX_DOC);
    xmlInitParser();
    *doc = xmlReadMemory(xml, (int)len, NULL, NULL, PARSE_OPTS);
    if (*doc == NULL) {
        const xmlError *e = xmlGetLastError();
        return sw_error_set(err, SW_EPARSE, "%s: not well-formed XML%s%s", what,
                            e && e->message ? ": " : "", e && e->message ? e->message : "");
    }
    return 0;
}

static int expect_root(xmlDoc *doc, const char *root, const char *what, const xmlNode **out,
                       struct sw_error *err)
{
    const xmlNode *r = xmlDocGetRootElement(doc);
    if (r == NULL || !is(r, root))
        return sw_error_set(err, SW_EPARSE, "%s: root element is <%s>, expected <%s>", what,
                            r ? (const char *)r->name : "(none)", root);
    *out = r;
    return 0;
}

/* Copies the text of the child `name` into a new string; absent -> NULL
 * with rc 0 unless `required`. */
static int dup_child(const xmlNode *n, const char *name, int required, char **out, const char *path,
                     struct sw_error *err)
{
    *out = NULL;
    const xmlNode *c = child(n, name);
    if (c == NULL) {
        if (required)
            return sw_error_set(err, SW_EPARSE, "%s/%s: missing", path, name);
        return 0;
    }
    xmlChar *t = text(c);
    if (t == NULL)
        return sw_error_set(err, SW_ENOMEM, "%s/%s: out of memory", path, name);
    *out = sw_strdup((const char *)t);
    xmlFree(t);
    if (*out == NULL)
        return sw_error_set(err, SW_ENOMEM, "%s/%s: out of memory", path, name);
    return 0;
}

static int copy_child(const xmlNode *n, const char *name, int required, char *out, size_t outlen,
                      const char *path, struct sw_error *err)
{
    out[0] = '\0';
    const xmlNode *c = child(n, name);
    if (c == NULL)
        return required ? sw_error_set(err, SW_EPARSE, "%s/%s: missing", path, name) : 0;
    xmlChar *t = text(c);
    if (t == NULL)
        return sw_error_set(err, SW_ENOMEM, "%s/%s: out of memory", path, name);
    size_t l = strlen((const char *)t);
    int rc = 0;
    if (l >= outlen)
        rc = sw_error_set(err, SW_EPARSE, "%s/%s: %zu characters, at most %zu expected", path, name,
                          l, outlen - 1);
    else
        memcpy(out, t, l + 1);
    xmlFree(t);
    return rc;
}

/* 5 TiB, the largest object S3 stores. */
#define SW_S3XML_MAX_OBJECT_SIZE ((int64_t)5 << 40)

static int int_child(const xmlNode *n, const char *name, int required, int64_t *out,
                     const char *path, struct sw_error *err)
{
    char buf[32];
    *out = 0;
    int rc = copy_child(n, name, required, buf, sizeof(buf), path, err);
    if (rc != 0 || buf[0] == '\0') {
        if (rc == 0 && required && child(n, name) != NULL)
            return sw_error_set(err, SW_EPARSE, "%s/%s: empty, expected an integer", path, name);
        return rc;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || end == buf || *end != '\0' || v < 0)
        return sw_error_set(err, SW_EPARSE, "%s/%s: expected a non-negative integer, got \"%s\"",
                            path, name, buf);
    *out = v;
    return 0;
}

static int bool_child(const xmlNode *n, const char *name, int *out, const char *path,
                      struct sw_error *err)
{
    char buf[16];
    *out = 0;
    int rc = copy_child(n, name, 0, buf, sizeof(buf), path, err);
    if (rc != 0)
        return rc;
    if (buf[0] == '\0' || strcmp(buf, "false") == 0)
        return 0;
    if (strcmp(buf, "true") == 0) {
        *out = 1;
        return 0;
    }
    return sw_error_set(err, SW_EPARSE, "%s/%s: expected true or false, got \"%s\"", path, name,
                        buf);
}

int sw_s3_parse_time(const char *s, int64_t *ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int millis = 0;
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (end != NULL) {
        if (*end == '.') {
            end++;
            int digits = 0;
            while (*end >= '0' && *end <= '9') {
                if (digits < 3)
                    millis = millis * 10 + (*end - '0');
                digits++;
                end++;
            }
            for (; digits < 3; digits++)
                millis *= 10;
        }
        if (strcmp(end, "Z") != 0 && strcmp(end, "+00:00") != 0)
            return SW_EPARSE;
    } else {
        memset(&tm, 0, sizeof(tm));
        end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        if (end == NULL || *end != '\0')
            return SW_EPARSE;
    }
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return SW_EPARSE;
    *ms = (int64_t)t * 1000 + millis;
    return 0;
}

/* ---- ListObjectsV2 ------------------------------------------------------ */

void sw_s3_list_free(struct sw_s3_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        sw_free(l->objects[i].key);
    sw_free(l->objects);
    sw_free(l->next_token);
    memset(l, 0, sizeof(*l));
}

int sw_s3xml_parse_list(const char *xml, size_t len, struct sw_s3_list *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    xmlDoc *doc = NULL;
    const xmlNode *root;
    int rc = read_doc(xml, len, "ListBucketResult", &doc, err);
    if (rc != 0)
        return rc;
    if ((rc = expect_root(doc, "ListBucketResult", "ListBucketResult", &root, err)) != 0)
        goto out;
    if ((rc = bool_child(root, "IsTruncated", &out->truncated, "ListBucketResult", err)) != 0)
        goto out;
    if ((rc = dup_child(root, "NextContinuationToken", 0, &out->next_token, "ListBucketResult",
                        err)) != 0)
        goto out;
    if (out->truncated && (out->next_token == NULL || out->next_token[0] == '\0')) {
        rc = sw_error_set(err, SW_EPARSE,
                          "ListBucketResult/NextContinuationToken: missing while IsTruncated "
                          "is true");
        goto out;
    }
    size_t count = 0;
    for (const xmlNode *c = root->children; c != NULL; c = c->next)
        count += is(c, "Contents");
    if (count > 0) {
        out->objects = sw_calloc(count, sizeof(*out->objects));
        if (out->objects == NULL) {
            rc = sw_error_set(err, SW_ENOMEM, "ListBucketResult: out of memory");
            goto out;
        }
    }
    for (const xmlNode *c = root->children; c != NULL; c = c->next) {
        if (!is(c, "Contents"))
            continue;
        char path[64];
        snprintf(path, sizeof(path), "ListBucketResult/Contents[%zu]", out->n);
        struct sw_s3_object *o = &out->objects[out->n++];
        if ((rc = dup_child(c, "Key", 1, &o->key, path, err)) != 0)
            goto out;
        if ((rc = int_child(c, "Size", 1, &o->size, path, err)) != 0)
            goto out;
        /* S3's limit: a million objects of it still sum within int64. */
        if (o->size > SW_S3XML_MAX_OBJECT_SIZE) {
            rc =
                sw_error_set(err, SW_EPARSE, "%s/Size: %" PRId64 " is over S3's 5 TiB object limit",
                             path, o->size);
            goto out;
        }
        if ((rc = copy_child(c, "ETag", 0, o->etag, sizeof(o->etag), path, err)) != 0)
            goto out;
        char lm[64];
        if ((rc = copy_child(c, "LastModified", 0, lm, sizeof(lm), path, err)) != 0)
            goto out;
        if (lm[0] != '\0' && sw_s3_parse_time(lm, &o->last_modified_ms) != 0) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s/LastModified: expected an ISO 8601 time, got "
                              "\"%s\"",
                              path, lm);
            goto out;
        }
    }
out:
    xmlFreeDoc(doc);
    if (rc != 0)
        sw_s3_list_free(out);
    return rc;
}

/* ---- multipart ----------------------------------------------------------- */

int sw_s3xml_parse_initiate(const char *xml, size_t len, char **upload_id, struct sw_error *err)
{
    *upload_id = NULL;
    xmlDoc *doc = NULL;
    const xmlNode *root;
    const char *what = "InitiateMultipartUploadResult";
    int rc = read_doc(xml, len, what, &doc, err);
    if (rc == 0)
        rc = expect_root(doc, what, what, &root, err);
    if (rc == 0)
        rc = dup_child(root, "UploadId", 1, upload_id, what, err);
    if (rc == 0 && (*upload_id)[0] == '\0')
        rc = sw_error_set(err, SW_EPARSE, "%s/UploadId: empty", what);
    if (rc != 0) {
        sw_free(*upload_id);
        *upload_id = NULL;
    }
    xmlFreeDoc(doc);
    return rc;
}

static void error_fields(const xmlNode *root, struct sw_s3_error_reply *out)
{
    /* Over-long fields are cut rather than refused: this is already the
     * error path, and the code is what matters. */
    static const struct {
        const char *name;
        size_t off, len;
    } f[] = {
        {"Code", offsetof(struct sw_s3_error_reply, code), SW_S3_CODE_MAX},
        {"Message", offsetof(struct sw_s3_error_reply, message), 256},
        {"RequestId", offsetof(struct sw_s3_error_reply, request_id), 128},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        char *dst = (char *)out + f[i].off;
        dst[0] = '\0';
        const xmlNode *c = child(root, f[i].name);
        if (c == NULL)
            continue;
        xmlChar *t = text(c);
        if (t == NULL)
            continue;
        snprintf(dst, f[i].len, "%s", (const char *)t);
        xmlFree(t);
    }
}

int sw_s3xml_parse_etag_result(const char *xml, size_t len, const char *root_name,
                               char etag[SW_S3_ETAG_MAX], struct sw_s3_error_reply *reply,
                               struct sw_error *err)
{
    etag[0] = '\0';
    xmlDoc *doc = NULL;
    int rc = read_doc(xml, len, root_name, &doc, err);
    if (rc != 0)
        return rc;
    const xmlNode *root = xmlDocGetRootElement(doc);
    if (root != NULL && is(root, "Error")) {
        struct sw_s3_error_reply r;
        memset(&r, 0, sizeof(r));
        error_fields(root, &r);
        if (reply != NULL)
            *reply = r;
        rc = sw_error_set(err, SW_EHTTP, "%s: the server answered 200 with error %s: %s", root_name,
                          r.code[0] ? r.code : "(no code)", r.message);
    } else if ((rc = expect_root(doc, root_name, root_name, &root, err)) == 0) {
        rc = copy_child(root, "ETag", 1, etag, SW_S3_ETAG_MAX, root_name, err);
        if (rc == 0 && etag[0] == '\0')
            rc = sw_error_set(err, SW_EPARSE, "%s/ETag: empty", root_name);
    }
    xmlFreeDoc(doc);
    return rc;
}

void sw_s3_uploads_free(struct sw_s3_uploads *u)
{
    if (u == NULL)
        return;
    for (size_t i = 0; i < u->n; i++) {
        sw_free(u->uploads[i].key);
        sw_free(u->uploads[i].upload_id);
    }
    sw_free(u->uploads);
    sw_free(u->next_key_marker);
    sw_free(u->next_upload_id_marker);
    memset(u, 0, sizeof(*u));
}

int sw_s3xml_parse_uploads(const char *xml, size_t len, struct sw_s3_uploads *out,
                           struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *what = "ListMultipartUploadsResult";
    xmlDoc *doc = NULL;
    const xmlNode *root;
    int rc = read_doc(xml, len, what, &doc, err);
    if (rc != 0)
        return rc;
    if ((rc = expect_root(doc, what, what, &root, err)) != 0)
        goto out;
    if ((rc = bool_child(root, "IsTruncated", &out->truncated, what, err)) != 0 ||
        (rc = dup_child(root, "NextKeyMarker", 0, &out->next_key_marker, what, err)) != 0 ||
        (rc = dup_child(root, "NextUploadIdMarker", 0, &out->next_upload_id_marker, what, err)) !=
            0)
        goto out;
    size_t count = 0;
    for (const xmlNode *c = root->children; c != NULL; c = c->next)
        count += is(c, "Upload");
    if (count > 0 && (out->uploads = sw_calloc(count, sizeof(*out->uploads))) == NULL) {
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
        goto out;
    }
    for (const xmlNode *c = root->children; c != NULL; c = c->next) {
        if (!is(c, "Upload"))
            continue;
        char path[80];
        snprintf(path, sizeof(path), "%s/Upload[%zu]", what, out->n);
        struct sw_s3_upload *u = &out->uploads[out->n++];
        if ((rc = dup_child(c, "Key", 1, &u->key, path, err)) != 0 ||
            (rc = dup_child(c, "UploadId", 1, &u->upload_id, path, err)) != 0)
            goto out;
        char t[64];
        if ((rc = copy_child(c, "Initiated", 0, t, sizeof(t), path, err)) != 0)
            goto out;
        if (t[0] != '\0' && sw_s3_parse_time(t, &u->initiated_ms) != 0) {
            rc = sw_error_set(err, SW_EPARSE, "%s/Initiated: expected an ISO 8601 time", path);
            goto out;
        }
    }
out:
    xmlFreeDoc(doc);
    if (rc != 0)
        sw_s3_uploads_free(out);
    return rc;
}

void sw_s3_parts_free(struct sw_s3_parts *p)
{
    if (p == NULL)
        return;
    sw_free(p->parts);
    memset(p, 0, sizeof(*p));
}

int sw_s3xml_parse_parts(const char *xml, size_t len, struct sw_s3_parts *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *what = "ListPartsResult";
    xmlDoc *doc = NULL;
    const xmlNode *root;
    int rc = read_doc(xml, len, what, &doc, err);
    if (rc != 0)
        return rc;
    if ((rc = expect_root(doc, what, what, &root, err)) != 0)
        goto out;
    int64_t marker = 0;
    if ((rc = bool_child(root, "IsTruncated", &out->truncated, what, err)) != 0 ||
        (rc = int_child(root, "NextPartNumberMarker", 0, &marker, what, err)) != 0)
        goto out;
    out->next_marker = (int)marker;
    size_t count = 0;
    for (const xmlNode *c = root->children; c != NULL; c = c->next)
        count += is(c, "Part");
    if (count > 0 && (out->parts = sw_calloc(count, sizeof(*out->parts))) == NULL) {
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
        goto out;
    }
    for (const xmlNode *c = root->children; c != NULL; c = c->next) {
        if (!is(c, "Part"))
            continue;
        char path[64];
        snprintf(path, sizeof(path), "%s/Part[%zu]", what, out->n);
        struct sw_s3_part *p = &out->parts[out->n++];
        int64_t num;
        if ((rc = int_child(c, "PartNumber", 1, &num, path, err)) != 0 ||
            (rc = int_child(c, "Size", 1, &p->size, path, err)) != 0 ||
            (rc = copy_child(c, "ETag", 1, p->etag, sizeof(p->etag), path, err)) != 0)
            goto out;
        if (p->size > SW_S3XML_MAX_OBJECT_SIZE) {
            rc =
                sw_error_set(err, SW_EPARSE, "%s/Size: %" PRId64 " is over S3's 5 TiB object limit",
                             path, p->size);
            goto out;
        }
        if (num < 1 || num > 10000) {
            rc = sw_error_set(err, SW_EPARSE, "%s/PartNumber: %" PRId64 " is outside 1..10000",
                              path, num);
            goto out;
        }
        p->number = (int)num;
    }
out:
    xmlFreeDoc(doc);
    if (rc != 0)
        sw_s3_parts_free(out);
    return rc;
}

int sw_s3xml_parse_error(const char *xml, size_t len, struct sw_s3_error_reply *out,
                         struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    xmlDoc *doc = NULL;
    const xmlNode *root;
    int rc = read_doc(xml, len, "Error", &doc, err);
    if (rc != 0)
        return rc;
    if ((rc = expect_root(doc, "Error", "Error", &root, err)) == 0) {
        error_fields(root, out);
        if (out->code[0] == '\0')
            rc = sw_error_set(err, SW_EPARSE, "Error/Code: missing");
    }
    xmlFreeDoc(doc);
    return rc;
}
