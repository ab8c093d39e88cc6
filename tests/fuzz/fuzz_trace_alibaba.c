/*
 * fuzz_trace_alibaba.c - libFuzzer target for the Alibaba GPU 2023 pod
 * list (sw_trace_parse with SW_TRACE_ALIBABA, and AUTO, which must detect
 * the same format from the header).
 *
 * On success every job is a pod that ran on GPUs: at least one GPU, a
 * positive finite runtime, a finite submission time, in submit order; rows
 * skipped are counted. On failure the error names the input.
 */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "placement/trace.h"

static void check(const struct sw_trace *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct sw_trace_job *j = &t->jobs[i];
        FUZZ_CHECK(memchr(j->name, '\0', sizeof(j->name)) != NULL);
        FUZZ_CHECK(strcmp(j->team, "alibaba") == 0);
        FUZZ_CHECK(j->gpus > 0);
        FUZZ_CHECK(isfinite(j->submit) && j->submit >= 0);
        FUZZ_CHECK(isfinite(j->duration) && j->duration > 0);
        FUZZ_CHECK(j->deadline == 0);
        FUZZ_CHECK((unsigned)j->prio <= SW_PRIO_PRODUCTION);
        if (i > 0)
            FUZZ_CHECK(t->jobs[i - 1].submit <= j->submit);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_trace t = {0}, a = {0};
    struct sw_error err = {0};
    int rc = sw_trace_parse((const char *)data, size, SW_TRACE_ALIBABA, "pods.csv", &t, &err);
    if (rc != 0) {
        FUZZ_CHECK(rc == SW_EPARSE || rc == SW_ENOMEM);
        FUZZ_CHECK(strncmp(err.msg, "pods.csv:", 9) == 0);
    } else {
        check(&t);
        /* The header has num_gpu, so AUTO reads the same trace. */
        FUZZ_CHECK(sw_trace_parse((const char *)data, size, SW_TRACE_AUTO, "pods.csv", &a, &err) ==
                   0);
        FUZZ_CHECK(a.n == t.n && a.skipped == t.skipped);
    }
    sw_trace_free(&t);
    sw_trace_free(&a);
    return 0;
}
