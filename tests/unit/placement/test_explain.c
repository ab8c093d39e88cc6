/* Tests for placement/explain.c: text and JSON explanations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
#include "lab.h"
#include "placement/explain.h"

static void explain_once(struct lab *l, char **json, char **text)
{
    struct sw_engine *e;
    assert_int_equal(sw_engine_new(&e), 0);
    struct sw_policy pol;
    sw_policy_default(SW_POLICY_COST_AWARE, &pol);
    struct sw_decision d[2];
    assert_int_equal(sw_engine_decide(e, &l->snap, &pol, SW_DECIDE_EXPLAIN, d, NULL), 0);
    assert_int_equal(sw_explain_json_string(&l->snap, &pol, &d[1], json), 0);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    assert_int_equal(sw_explain_text(&l->snap, &pol, &d[1], &b), 0);
    *text = sw_buf_take(&b, NULL);
    sw_engine_free(e);
}

static void test_deterministic_explanation(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    lab_workload(&l.pending[0], "train-1", "ml", SW_PRIO_TRAINING, 1, 8, 7200);
    lab_workload(&l.pending[1], "serve-1", "ml", SW_PRIO_PRODUCTION, 1, 8, 7200);
    l.snap.n_pending = 2;
    char *j1, *t1, *j2, *t2;
    explain_once(&l, &j1, &t1);
    explain_once(&l, &j2, &t2);
    assert_string_equal(j1, j2);
    assert_string_equal(t1, t2);
    /* A known runtime has no spread to show. */
    assert_null(strstr(t1, "belief sigma"));
    assert_non_null(strstr(j1, "\"runtime_sigma\":0"));
    /* The production Job: on-demand, with spot excluded and why. */
    assert_non_null(strstr(j1, "\"workload\":\"serve-1\""));
    assert_non_null(strstr(j1, "\"verdict\":\"burst\",\"reason\":\"lowest-score\""));
    assert_non_null(strstr(j1, "\"pool\":\"cloud-ondemand\""));
    assert_non_null(strstr(j1, "\"excluded\":\"production-spot\",\"why\":\"production never "
                               "goes to spot\""));
    assert_non_null(strstr(j1, "\"cost\":{\"run\":65.6,\"provisioning\":2.73,\"interruptions\":0,"
                               "\"egress\":0,\"total\":68.33}"));
    assert_non_null(strstr(t1, "workload \"serve-1\" (team ml, production, 1 x 8 GPUs, runtime "
                               "2.00 h, burst auto): burst on pool \"cloud-ondemand\"\n"));
    assert_non_null(strstr(t1, "cloud-spot       spot      us-east-1    excluded: production "
                               "never goes to spot\n"));
    assert_non_null(strstr(t1, "$68.33 = run 65.60 + provisioning 2.73"));
    assert_non_null(strstr(t1, "<- chosen\n"));
    /* Staying was weighed too: train-1 went to spot, so serve-1 would wait
     * the 4 hours the running Job holds onprem's 8 GPUs. */
    assert_non_null(strstr(t1, "wait 4.00 h"));
    sw_free(j1);
    sw_free(j2);
    sw_free(t1);
    sw_free(t2);
}

static void test_json_survives_allocation_failures(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    lab_workload(&l.pending[0], "train-1", "ml", SW_PRIO_TRAINING, 1, 8, 7200);
    l.snap.n_pending = 1;
    struct sw_engine *e;
    assert_int_equal(sw_engine_new(&e), 0);
    struct sw_policy pol;
    sw_policy_default(SW_POLICY_COST_AWARE, &pol);
    struct sw_decision d;
    assert_int_equal(sw_engine_decide(e, &l.snap, &pol, SW_DECIDE_EXPLAIN, &d, NULL), 0);
    for (uint64_t n = 1; n < 500; n++) {
        char *s = NULL;
        sw_alloc_fail_at(sw_alloc_count() + n);
        int rc = sw_explain_json_string(&l.snap, &pol, &d, &s);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_non_null(strstr(s, "\"pool\":\"cloud-spot\""));
            sw_free(s);
            sw_engine_free(e);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_null(s);
    }
    fail_msg("never completed");
}

/* An uncertain runtime: the text says it is the expected one, with the
 * belief's spread, and the JSON carries the spread. */
static void test_uncertain_runtime(void **state)
{
    (void)state;
    struct lab l;
    lab_init(&l);
    lab_workload(&l.pending[0], "train-1", "ml", SW_PRIO_TRAINING, 1, 8, 7200);
    lab_workload(&l.pending[1], "train-2", "ml", SW_PRIO_TRAINING, 1, 8, 3600);
    l.pending[1].runtime_sigma = 1.0;
    l.snap.n_pending = 2;
    char *j, *t;
    explain_once(&l, &j, &t);
    /* Median 1 h, sigma 1: the mean is e^0.5 h, 1.65 h. */
    assert_non_null(strstr(t, "runtime 1.65 h expected, belief sigma 1.00"));
    assert_non_null(strstr(j, "\"runtime_sigma\":1"));
    sw_free(j);
    sw_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_explanation),
        cmocka_unit_test(test_uncertain_runtime),
        cmocka_unit_test(test_json_survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
