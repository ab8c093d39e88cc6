/*
 * fuzz_trace_csv.c - libFuzzer target for the plain CSV job trace
 * (sw_trace_parse with SW_TRACE_CSV), the `--trace` of spillctl simulate.
 *
 * On success every job must be what the simulator relies on: a named job
 * with at least one GPU, finite non-negative times, a deadline that is none
 * or not before its submission, in submit order. On failure the error must
 * name the input.
 */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "placement/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_trace t = {0};
    struct sw_error err = {0};
    int rc = sw_trace_parse((const char *)data, size, SW_TRACE_CSV, "fuzz.csv", &t, &err);
    if (rc != 0) {
        FUZZ_CHECK(rc == SW_EPARSE || rc == SW_ENOMEM);
        FUZZ_CHECK(strncmp(err.msg, "fuzz.csv:", 9) == 0);
    } else {
        for (size_t i = 0; i < t.n; i++) {
            const struct sw_trace_job *j = &t.jobs[i];
            FUZZ_CHECK(memchr(j->name, '\0', sizeof(j->name)) != NULL && j->name[0] != '\0');
            FUZZ_CHECK(memchr(j->team, '\0', sizeof(j->team)) != NULL);
            FUZZ_CHECK(j->gpus > 0);
            FUZZ_CHECK(isfinite(j->submit) && j->submit >= 0);
            FUZZ_CHECK(isfinite(j->duration) && j->duration >= 0);
            FUZZ_CHECK(j->deadline == 0 || (isfinite(j->deadline) && j->deadline >= j->submit));
            FUZZ_CHECK((unsigned)j->prio <= SW_PRIO_PRODUCTION);
            if (i > 0)
                FUZZ_CHECK(t.jobs[i - 1].submit <= j->submit);
        }
    }
    sw_trace_free(&t);
    return 0;
}
