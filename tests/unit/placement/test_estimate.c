/* Tests for placement/estimate.c: prior, learned and annotated beliefs,
 * their fallback order, and the expected remaining runtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>

#include "common/alloc.h"
#include "placement/estimate.h"

static struct sw_estimator *new_est(void)
{
    struct sw_estimator_params p;
    sw_estimator_params_default(&p);
    struct sw_estimator *e;
    assert_int_equal(sw_estimator_new(&p, &e), 0);
    return e;
}

static void test_prior_then_learned(void **state)
{
    (void)state;
    struct sw_estimator *e = new_est();
    struct sw_job_features f = {.team = "ml", .label = "bert", .prio = SW_PRIO_TRAINING, .gpus = 1};
    struct sw_estimate est;
    sw_estimator_estimate(e, &f, 0, &est);
    assert_int_equal(est.source, SW_EST_PRIOR);
    assert_true(est.median_s == 3600 && est.sigma == 2.0);
    /* Four runs are not enough for a key (five are needed). */
    static const double rt[] = {100, 200, 400, 800, 1600};
    for (int i = 0; i < 4; i++)
        assert_int_equal(sw_estimator_observe(e, &f, 0, rt[i]), 0);
    sw_estimator_estimate(e, &f, 0, &est);
    assert_int_equal(est.source, SW_EST_PRIOR);
    assert_int_equal(sw_estimator_observe(e, &f, 0, rt[4]), 0);
    sw_estimator_estimate(e, &f, 0, &est);
    assert_int_equal(est.source, SW_EST_LEARNED);
    assert_int_equal(est.level, 0);
    assert_int_equal(est.runs, 5);
    /* The geometric mean, 400 s; log runtimes ln 100 + k ln 2, k = 0..4:
     * sample variance 2.5 (ln 2)^2, times (1 + 1/5). */
    assert_float_equal(est.median_s, 400.0, 1e-9);
    assert_float_equal(est.sigma, sqrt(2.5 * 1.2) * log(2.0), 1e-12);
    /* Another label of the same team, priority and GPUs falls back a level;
     * another GPU count, two; another team, to every Job. */
    struct sw_job_features g = f;
    g.label = "gpt";
    sw_estimator_estimate(e, &g, 0, &est);
    assert_int_equal(est.source, SW_EST_LEARNED);
    assert_int_equal(est.level, 1);
    g.gpus = 8;
    sw_estimator_estimate(e, &g, 0, &est);
    assert_int_equal(est.level, 2);
    g.team = "vision";
    sw_estimator_estimate(e, &g, 0, &est);
    assert_int_equal(est.level, 4);
    assert_float_equal(est.median_s, 400.0, 1e-9);
    sw_estimator_free(e);
}

static void test_annotation(void **state)
{
    (void)state;
    struct sw_estimator *e = new_est();
    struct sw_job_features f = {.team = "ml", .label = "", .prio = SW_PRIO_TRAINING, .gpus = 1};
    struct sw_estimate est;
    /* Before any annotated Job finished: the annotation, sigma 0.5. */
    sw_estimator_estimate(e, &f, 1000, &est);
    assert_int_equal(est.source, SW_EST_ANNOTATION);
    assert_true(est.median_s == 1000 && est.sigma == 0.5);
    /* Annotated Jobs that all ran twice as long: the annotation is
     * corrected by that ratio, and the spread is what the ratios show. */
    for (int i = 1; i <= 5; i++)
        assert_int_equal(sw_estimator_observe(e, &f, 100.0 * i, 200.0 * i), 0);
    sw_estimator_estimate(e, &f, 1000, &est);
    assert_float_equal(est.median_s, 2000.0, 1e-6);
    assert_float_equal(est.sigma, 0.0, 1e-12);
    sw_estimator_free(e);
}

static void test_remaining(void **state)
{
    (void)state;
    struct sw_estimate exact = {.median_s = 1000, .sigma = 0};
    assert_true(sw_estimate_remaining(&exact, 0) == 1000);
    assert_true(sw_estimate_remaining(&exact, 400) == 600);
    assert_true(sw_estimate_remaining(&exact, 1500) == 0);
    /* mu = 0, sigma = 1, a = 1 (z = 0): E[T | T > 1] = e^0.5 Phi(1) / Phi(0). */
    struct sw_estimate ln = {.median_s = 1, .sigma = 1};
    double phi1 = 0.5 * erfc(-1.0 / sqrt(2.0));
    assert_float_equal(sw_estimate_remaining(&ln, 1), exp(0.5) * phi1 / 0.5 - 1, 1e-12);
    assert_float_equal(sw_estimate_remaining(&ln, 0), exp(0.5), 1e-12);
    /* A Job that has run long is expected to run longer still (heavy
     * tail), and far in the tail the answer stays finite. */
    assert_true(sw_estimate_remaining(&ln, 10) > sw_estimate_remaining(&ln, 1));
    double far = sw_estimate_remaining(&ln, 1e12);
    assert_true(isfinite(far) && far > 0);
}

static void test_rejects_bad_params(void **state)
{
    (void)state;
    struct sw_estimator_params p;
    sw_estimator_params_default(&p);
    struct sw_estimator *e = NULL;
    p.prior_median_s = 0;
    assert_int_equal(sw_estimator_new(&p, &e), SW_EINVAL);
    sw_estimator_params_default(&p);
    p.prior_sigma = SW_MAX_SIGMA + 1;
    assert_int_equal(sw_estimator_new(&p, &e), SW_EINVAL);
    sw_estimator_params_default(&p);
    p.min_runs = 0;
    assert_int_equal(sw_estimator_new(&p, &e), SW_EINVAL);
    assert_null(e);
}

/* Fail the Nth allocation for N = 1.. until learning a hundred keys
 * succeeds: a failure is SW_ENOMEM and leaves what was learned intact. */
static void test_allocation_failures(void **state)
{
    (void)state;
    for (uint64_t n = 1; n < 100; n++) {
        struct sw_estimator_params p;
        sw_estimator_params_default(&p);
        sw_alloc_fail_at(sw_alloc_count() + n);
        struct sw_estimator *e = NULL;
        int rc = sw_estimator_new(&p, &e);
        size_t learned = 0;
        for (int i = 0; rc == 0 && i < 100; i++) {
            char label[16];
            snprintf(label, sizeof(label), "l%d", i);
            struct sw_job_features f = {.team = "t", .label = label, .gpus = 1};
            rc = sw_estimator_observe(e, &f, 0, 60);
            if (rc == 0)
                learned++;
        }
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (e != NULL) {
            /* Every run learned is counted at the all-Jobs level. */
            struct sw_job_features f = {.team = "other", .label = "", .gpus = 3};
            struct sw_estimate est;
            sw_estimator_estimate(e, &f, 0, &est);
            if (learned >= 5)
                assert_int_equal(est.runs, learned);
        }
        sw_estimator_free(e);
        if (!injected) {
            assert_int_equal(rc, 0);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
    }
    fail_msg("never completed within 100 allocations");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prior_then_learned),  cmocka_unit_test(test_annotation),
        cmocka_unit_test(test_remaining),           cmocka_unit_test(test_rejects_bad_params),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
