/*
 * fuzz_jobs_csv.c - libFuzzer target for the simulator's per-Job CSV
 * (sw_job_usage_parse_csv), the `--from-simulation` of spillctl report
 * chargeback, and the report built on what it accepts.
 *
 * On success every record must be what the report relies on: a named team,
 * finite non-negative GPU-hours, costs and lost hours, a finite time; and
 * the report's teams must add up to the records in its period. On failure
 * the error must name the input.
 */
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "fuzz.h"
#include "placement/chargeback.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_job_usage *r = NULL;
    size_t n = 0;
    struct sw_error err = {0};
    /* The first byte picks a run to keep, or none (the file must hold one). */
    const char *policy = size > 0 && data[0] % 2 ? "ca" : NULL;
    int rc = sw_job_usage_parse_csv((const char *)data, size, "fuzz.csv", policy, &r, &n, &err);
    if (rc != 0) {
        FUZZ_CHECK(rc == SW_EPARSE || rc == SW_ENOMEM);
        FUZZ_CHECK(strncmp(err.msg, "fuzz.csv:", 9) == 0);
        FUZZ_CHECK(r == NULL && n == 0);
        return 0;
    }
    double gh = 0;
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(memchr(r[i].team, '\0', sizeof(r[i].team)) != NULL && r[i].team[0] != '\0');
        FUZZ_CHECK(memchr(r[i].name, '\0', sizeof(r[i].name)) != NULL);
        FUZZ_CHECK(isfinite(r[i].at) && r[i].at >= 0);
        for (int c = 0; c < 3; c++) {
            FUZZ_CHECK(isfinite(r[i].gpu_h[c]) && r[i].gpu_h[c] >= 0);
            FUZZ_CHECK(isfinite(r[i].cost[c]) && r[i].cost[c] >= 0);
            gh += r[i].gpu_h[c];
        }
        FUZZ_CHECK(isfinite(r[i].egress) && r[i].egress >= 0);
        FUZZ_CHECK(isfinite(r[i].lost_gpu_h) && r[i].lost_gpu_h >= 0);
    }
    struct sw_team_report *t = NULL;
    size_t nt = 0;
    rc = sw_chargeback_report(r, n, 0, INFINITY, 4.10, &t, &nt);
    FUZZ_CHECK(rc == 0 || rc == SW_ENOMEM);
    if (rc == 0) {
        size_t jobs = 0;
        double tgh = 0;
        for (size_t k = 0; k < nt; k++) {
            jobs += t[k].jobs;
            tgh += t[k].gpu_hours;
            FUZZ_CHECK(t[k].n_top <= SW_CHARGEBACK_TOP && t[k].n_top <= t[k].jobs);
            if (k > 0)
                FUZZ_CHECK(strcmp(t[k - 1].team, t[k].team) < 0);
        }
        FUZZ_CHECK(jobs == n);
        FUZZ_CHECK(fabs(tgh - gh) <= 1e-9 * (gh + 1));
    }
    sw_free(t);
    sw_free(r);
    return 0;
}
