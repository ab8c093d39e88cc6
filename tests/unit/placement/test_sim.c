/* Tests for placement/sim.c: small traces with figures known to the cent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "placement/cost.h"
#include "placement/sim.h"

static const char clusters_json[] =
    "{\"pools\":["
    "{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\",\"gpus\":8,"
    "\"price_per_gpu_hour\":1.0},"
    "{\"name\":\"cloud-spot\",\"region\":\"us-east-1\",\"capacity\":\"spot\",\"gpus\":64,"
    "\"provision_seconds\":180,\"price_per_gpu_hour\":1.5625,\"interruptions_per_hour\":0.5},"
    "{\"name\":\"cloud-ondemand\",\"region\":\"us-west-2\",\"capacity\":\"on-demand\","
    "\"gpus\":32,\"provision_seconds\":180,\"price_per_gpu_hour\":4.10}],"
    "\"links\":[{\"from\":\"onprem\",\"to\":\"us-east-1\",\"price_per_gb\":0.02,"
    "\"bandwidth_gbps\":10},{\"from\":\"onprem\",\"to\":\"us-west-2\",\"price_per_gb\":0.02,"
    "\"bandwidth_gbps\":10}]}";

/* Two 8-GPU one-hour jobs ten seconds apart on an 8-GPU on-prem pool. */
static const char two_jobs[] = "submit,gpus,duration,team,deadline\n"
                               "0,8,3600,ml,\n"
                               "10,8,3600,ml,4000\n";

static void run(const char *trace_csv, const char *policy, struct sw_sim_result *r, double *ends)
{
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(clusters_json, strlen(clusters_json), "c", &c, &err), 0);
    assert_int_equal(sw_trace_parse(trace_csv, strlen(trace_csv), SW_TRACE_CSV, "t", &t, &err), 0);
    struct sw_sim_params p = {.clusters = &c, .trace = &t, .seed = 7};
    assert_int_equal(sw_policy_parse(policy, &p.policy, &err), 0);
    assert_int_equal(sw_sim_run(&p, r, ends, NULL, &err), 0);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

static void test_burst_now_versus_local(void **state)
{
    (void)state;
    struct sw_sim_result r;
    double ends[2];
    run(two_jobs, "burst-now", &r, ends);
    /* Job 1 on-prem: 8 x $1 x 1 h. Job 2 on on-demand, billed from dispatch
     * through provisioning: 8 x $4.10 x 3780 s = $34.44. */
    assert_int_equal(sw_cents(r.cost_onprem), 800);
    assert_int_equal(sw_cents(r.cost_ondemand), 3444);
    assert_int_equal(sw_cents(r.cost_total), 4244);
    assert_true(ends[0] == 3600 && ends[1] == 10 + 180 + 3600);
    assert_true(r.jct_mean == (3600 + 3780) / 2.0);
    assert_int_equal(r.deadlines, 1);
    assert_int_equal(r.deadline_misses, 0);
    assert_int_equal(r.bursts, 1);
    run(two_jobs, "local-only", &r, ends);
    assert_int_equal(sw_cents(r.cost_total), 1600);
    assert_true(ends[1] == 7200);
    assert_int_equal(r.deadline_misses, 1);
    assert_true(r.wait_mean == (0 + 3590) / 2.0);
    /* Cost-aware: waiting 59 min for a 1-hour job is worth less than the
     * cloud, and the deadline rules out waiting anyway; spot is cheaper but
     * cannot promise the deadline, so on-demand. */
    run(two_jobs, "cost-aware", &r, ends);
    assert_int_equal(sw_cents(r.cost_ondemand), 3444);
    assert_int_equal(r.deadline_misses, 0);
}

/* Spot jobs are preempted at the pool's rate, lose work since their last
 * checkpoint, and still complete; the same seed gives the same figures. */
static void test_spot_preemptions_deterministic(void **state)
{
    (void)state;
    static const char many[] = "submit,gpus,duration,team\n"
                               "0,8,36000,ml\n0,8,36000,ml\n0,8,36000,ml\n0,8,36000,ml\n";
    struct sw_sim_result a, b;
    double ea[4], eb[4];
    run(many, "spot-only", &a, ea);
    run(many, "spot-only", &b, eb);
    assert_int_equal(a.completed, 4);
    assert_true(a.preemptions > 0);
    assert_true(a.lost_gpu_h > 0);
    assert_true(memcmp(&a, &b, sizeof(a)) == 0);
    assert_true(memcmp(ea, eb, sizeof(ea)) == 0);
    /* Preempted jobs finish later than they would uninterrupted. */
    for (int i = 1; i < 4; i++)
        assert_true(ea[i] >= 180 + 36000);
    assert_true(a.cost_spot > 3 * 8 * 1.5625 * 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_now_versus_local),
        cmocka_unit_test(test_spot_preemptions_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
