/*
 * libFuzzer target for controller/hub/annotations.c: the input is read as
 * JSON, the metadata.annotations of a Job. sw_burst_spec_parse must never
 * crash, and on success every value is in its documented range (burst and
 * priority known, managed only when burst is not never, at most 4 inputs,
 * buckets valid and strings terminated, deadline and durations finite and
 * not negative, price 0 or in (0, 10000], team a DNS-1123 label or "").
 * A refusal is SW_EINVAL with a message naming the annotation or the
 * field. The same JSON is read as a Job for sw_job_gpu_shape, and the raw
 * bytes as a duration.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/hub/annotations.h"
#include "fuzz.h"

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

static void check_uri(const struct sw_s3_uri *u)
{
    FUZZ_CHECK(terminated(u->bucket, sizeof(u->bucket)));
    FUZZ_CHECK(terminated(u->prefix, sizeof(u->prefix)));
    size_t n = strlen(u->bucket);
    FUZZ_CHECK(n >= 3 && n <= 63);
    /* What was accepted reads back the same. */
    char buf[600];
    struct sw_s3_uri again;
    FUZZ_CHECK(sw_s3_uri_format(u, buf, sizeof(buf)) == 0);
    FUZZ_CHECK(sw_s3_uri_parse(buf, &again, NULL) == 0);
    FUZZ_CHECK(strcmp(again.bucket, u->bucket) == 0 && strcmp(again.prefix, u->prefix) == 0);
}

static int duration_ok(double d)
{
    return isfinite(d) && d >= 0 && d <= SW_DURATION_MAX_S;
}

static void check_spec(const struct sw_burst_spec *b)
{
    FUZZ_CHECK(b->burst == SW_BURST_NEVER || b->burst == SW_BURST_AUTO ||
               b->burst == SW_BURST_CLOUD_FIRST);
    FUZZ_CHECK(b->managed == (b->burst != SW_BURST_NEVER));
    FUZZ_CHECK(b->n_inputs >= 0 && b->n_inputs <= SW_ANN_MAX_INPUTS);
    for (int i = 0; i < b->n_inputs; i++)
        check_uri(&b->inputs[i]);
    if (b->has_outputs)
        check_uri(&b->outputs);
    FUZZ_CHECK(isfinite(b->deadline) && b->deadline >= 0);
    FUZZ_CHECK(b->max_price == 0 || (b->max_price > 0 && b->max_price <= SW_ANN_PRICE_CAP));
    FUZZ_CHECK(duration_ok(b->runtime_s) && duration_ok(b->checkpoint_s));
    FUZZ_CHECK(terminated(b->team, sizeof(b->team)));
    for (const char *p = b->team; *p; p++)
        FUZZ_CHECK((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-');
    FUZZ_CHECK(b->prio >= SW_PRIO_BEST_EFFORT && b->prio <= SW_PRIO_PRODUCTION);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (j != NULL) {
        struct sw_burst_spec b;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_burst_spec_parse(j, 1767225600.0, &b, &err);
        if (rc == 0) {
            check_spec(&b);
        } else {
            FUZZ_CHECK(rc == SW_EINVAL);
            FUZZ_CHECK(strncmp(err.msg, "annotation \"spillway.io/", 24) == 0 ||
                       strncmp(err.msg, "field \"metadata.annotations\"", 28) == 0);
        }

        int pods = -1, gpus = -1;
        sw_error_clear(&err);
        rc = sw_job_gpu_shape(j, &pods, &gpus, &err);
        if (rc == 0)
            FUZZ_CHECK(pods >= 0 && pods <= 1000000 && gpus >= 0 && gpus <= 1024);
        else
            FUZZ_CHECK(rc == SW_EINVAL && strncmp(err.msg, "Job", 3) == 0 && pods == -1);
        cJSON_Delete(j);
    }

    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    double d = -1;
    int rc = sw_duration_parse(s, &d);
    if (rc == 0)
        FUZZ_CHECK(d > 0 && d <= SW_DURATION_MAX_S);
    else
        FUZZ_CHECK((rc == SW_EINVAL || rc == SW_ERANGE) && d == -1);
    free(s);
    return 0;
}
