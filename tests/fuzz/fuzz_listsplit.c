/*
 * libFuzzer target for clusters/listsplit.c and clusters/record.c: the
 * input, a List response, is split in chunks whose size comes from the
 * input itself; the items and the envelope must not depend on the
 * chunking; each item that parses is converted into a Job, a Pod and a
 * Node record (which must keep its name), viewed as JSON and freed, and
 * the string table must then be empty.
 */
#include <string.h>

#include "clusters/listsplit.h"
#include "clusters/record.h"
#include "common/json.h"
#include "fuzz.h"

struct tally {
    uint64_t sum;
    size_t n;
    struct sw_intern *t;
};

static int on_item(const char *item, size_t len, void *ctx, struct sw_error *err)
{
    (void)err;
    struct tally *ta = ctx;
    ta->n++;
    for (size_t i = 0; i < len; i++)
        ta->sum = ta->sum * 31 + (unsigned char)item[i];
    cJSON *o = NULL;
    struct sw_error perr;
    if (ta->t == NULL || sw_json_parse(item, len, "item", &o, &perr) != 0)
        return 0;
    const char *name = cJSON_GetStringValue(sw_json_path(o, "metadata.name"));
    struct sw_job_record *j = NULL;
    struct sw_pod_record *p = NULL;
    struct sw_node_record *n = NULL;
    struct sw_error e;
    if (sw_job_record_from_json(ta->t, o, &j, &e) == 0) {
        FUZZ_CHECK(name != NULL && strcmp(j->name, name) == 0);
        cJSON *v = sw_job_record_json(j);
        FUZZ_CHECK(v != NULL);
        cJSON_Delete(v);
    } else {
        FUZZ_CHECK(e.msg[0] != '\0');
    }
    if (sw_pod_record_from_json(ta->t, o, &p, &e) == 0) {
        struct sw_pod_facts f;
        sw_pod_facts_from_record(p, &f, &e);
    }
    if (sw_node_record_from_json(ta->t, o, &n, &e) == 0) {
        struct sw_node_facts f;
        sw_node_facts_from_record(n, &f, &e);
    }
    sw_job_record_free(ta->t, j);
    sw_pod_record_free(ta->t, p);
    sw_node_record_free(ta->t, n);
    cJSON_Delete(o);
    return 0;
}

static int run(const char *p, size_t n, size_t chunk, struct tally *t)
{
    struct sw_list_splitter *s;
    struct sw_error err;
    if (sw_list_splitter_new("fuzz list", 4096, on_item, t, &s) != 0)
        return -1000;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        rc = sw_list_splitter_feed(s, p + i, k, &err);
    }
    const char *env = NULL;
    size_t elen = 0;
    if (rc == 0)
        rc = sw_list_splitter_finish(s, &env, &elen, &err);
    if (rc == 0) {
        FUZZ_CHECK(strlen(env) == elen);
        for (size_t i = 0; i < elen; i++)
            t->sum = t->sum * 31 + (unsigned char)env[i];
    } else {
        FUZZ_CHECK(err.msg[0] != '\0');
    }
    sw_list_splitter_free(s);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    sw_json_init_hooks();
    size_t chunk = (size_t)data[0] % 17 + 1;
    struct tally a = {0, 0, sw_intern_new()}, b = {0, 0, NULL};
    int ra = run((const char *)data + 1, size - 1, chunk, &a);
    int rb = run((const char *)data + 1, size - 1, size, &b);
    FUZZ_CHECK(ra == rb && a.sum == b.sum && a.n == b.n);
    FUZZ_CHECK(sw_intern_count(a.t) == 0);
    sw_intern_free(a.t);
    return 0;
}
