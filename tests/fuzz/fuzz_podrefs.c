/*
 * libFuzzer target for controller/hub/podrefs.c: the input is read as
 * JSON, a Job's pod template spec (an author's, untrusted).
 * sw_pod_refs_collect must never crash, and on success the list holds at
 * most SW_POD_REFS_MAX entries, no (kind, name) twice, every name a
 * DNS-1123 subdomain that goes into an API path as exactly itself, and
 * every field path under the pod spec's. A refusal is SW_EINVAL or
 * SW_ETOOBIG with a message naming a field under the pod spec, and an
 * empty list. The raw bytes are also one path segment for
 * sw_kube_path_segment: refused exactly when empty, "." or ".." or holding
 * '/', else escaped to unreserved characters and %XX only.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/rest.h"
#include "controller/hub/podrefs.h"
#include "fuzz.h"

#define WHERE "spec.template.spec"

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

static void check_refs(const struct sw_pod_refs *r)
{
    FUZZ_CHECK(r->n <= SW_POD_REFS_MAX);
    for (size_t i = 0; i < r->n; i++) {
        const struct sw_pod_ref *a = &r->refs[i];
        FUZZ_CHECK(a->kind == SW_POD_REF_SECRET || a->kind == SW_POD_REF_CONFIGMAP);
        FUZZ_CHECK(terminated(a->name, sizeof(a->name)));
        FUZZ_CHECK(terminated(a->field, sizeof(a->field)));
        FUZZ_CHECK(sw_dns1123_subdomain(a->name));
        FUZZ_CHECK(strncmp(a->field, WHERE ".", sizeof(WHERE)) == 0);
        for (size_t k = 0; k < i; k++)
            FUZZ_CHECK(r->refs[k].kind != a->kind || strcmp(r->refs[k].name, a->name) != 0);
        /* The path the hub builds from it is the name, as one segment. */
        char path[600] = "/api/v1/namespaces/ns/secrets";
        FUZZ_CHECK(sw_kube_path_segment(path, sizeof(path), a->name) == 0);
        FUZZ_CHECK(strcmp(path + strlen("/api/v1/namespaces/ns/secrets/"), a->name) == 0);
    }
}

static int unreserved(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void check_segment(const char *seg)
{
    char buf[256] = "/api";
    int rc = sw_kube_path_segment(buf, sizeof(buf), seg);
    int refused = seg[0] == '\0' || strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0 ||
                  strchr(seg, '/') != NULL;
    if (refused) {
        FUZZ_CHECK(rc == SW_EINVAL && strcmp(buf, "/api") == 0);
        return;
    }
    if (rc == SW_ETOOBIG) {
        FUZZ_CHECK(strcmp(buf, "/api") == 0 && strlen(seg) >= sizeof(buf) / 3 - 5);
        return;
    }
    FUZZ_CHECK(rc == 0 && strncmp(buf, "/api/", 5) == 0);
    for (const char *p = buf + 5; *p; p++) {
        if (*p == '%') {
            FUZZ_CHECK(p[1] && p[2] && strchr("0123456789ABCDEF", p[1]) &&
                       strchr("0123456789ABCDEF", p[2]));
            p += 2;
        } else {
            FUZZ_CHECK(unreserved(*p));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (j != NULL) {
        struct sw_pod_refs *r = calloc(1, sizeof(*r));
        if (r == NULL) {
            cJSON_Delete(j);
            return 0;
        }
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_pod_refs_collect(j, WHERE, r, &err);
        if (rc == 0) {
            check_refs(r);
        } else {
            FUZZ_CHECK(rc == SW_EINVAL || rc == SW_ETOOBIG);
            FUZZ_CHECK(r->n == 0);
            FUZZ_CHECK(strncmp(err.msg, "field \"" WHERE, strlen("field \"" WHERE)) == 0);
            if (rc == SW_ETOOBIG)
                FUZZ_CHECK(strstr(err.msg, "distinct Secrets and ConfigMaps, more than the 64") !=
                           NULL);
        }
        free(r);
        cJSON_Delete(j);
    }

    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    check_segment(s);
    free(s);
    return 0;
}
