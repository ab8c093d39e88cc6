/*
 * fuzz_spot_trace.c - libFuzzer target for the skypilot spot-traces JSON
 * (sw_spot_trace_parse), the `--preemption-trace` of spillctl simulate.
 *
 * On success the trace must be usable as the simulator uses it: for
 * instances starting anywhere in the trace, the next preemption after a
 * time t is strictly after t, or never (INFINITY), and never NaN.
 */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "placement/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_spot_trace t = {0};
    struct sw_error err = {0};
    int rc = sw_spot_trace_parse((const char *)data, size, "spot.json", &t, &err);
    if (rc != 0) {
        FUZZ_CHECK(rc == SW_EPARSE || rc == SW_ENOMEM || rc == SW_ENOENT);
        FUZZ_CHECK(strncmp(err.msg, "spot.json", 9) == 0);
    } else {
        FUZZ_CHECK(t.gap_s > 0 && isfinite(t.gap_s));
        for (size_t i = 0; i < t.n; i++)
            FUZZ_CHECK(t.alive[i] >= 0);
        /* The simulator starts each instance at u x the trace's length. */
        static const double starts[] = {0.0, 1e-9, 0.25, 0.5, 0.999999};
        static const double times[] = {0.0, 1.0, 3600.0, 1e7};
        for (size_t a = 0; a < sizeof(starts) / sizeof(starts[0]); a++)
            for (size_t b = 0; b < sizeof(times) / sizeof(times[0]); b++) {
                double offset = starts[a] * t.gap_s * (double)t.n;
                double next = sw_spot_trace_next_preemption(&t, offset, times[b]);
                FUZZ_CHECK(!isnan(next));
                FUZZ_CHECK(next > times[b]);
            }
    }
    sw_spot_trace_free(&t);
    return 0;
}
