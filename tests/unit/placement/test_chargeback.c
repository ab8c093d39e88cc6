/* Tests for placement/chargeback.c: seed 001's monthly team report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "placement/chargeback.h"
#include "placement/cost.h"

#define assert_cents(dollars, expected_cents) assert_int_equal(sw_cents(dollars), (expected_cents))

static void test_ml_research_report(void **state)
{
    (void)state;
    const struct sw_usage_line lines[] = {
        {"A100 on-demand", SW_CAP_ON_DEMAND, 312, 3.06},
        {"A100 spot", SW_CAP_SPOT, 1935, 1.17},
        {"T4 spot", SW_CAP_SPOT, 600, 0.35},
    };
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&lines[0])), 95472);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&lines[1])), 226395);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&lines[2])), 21000);
    struct sw_chargeback r;
    sw_chargeback_sum(lines, 3, 423, &r);
    assert_int_equal(sw_cents(r.cost), 342867);
    assert_int_equal((int)lround(r.gpu_hours), 2847);
    /* "Idle GPU-hours: 423 hrs (14.9%)", "Efficiency score: 85.1%". */
    assert_int_equal((int)lround(r.idle_fraction * 1000), 149);
    assert_int_equal((int)lround(r.efficiency * 1000), 851);
    /* The seed prints a spot ratio of 89.1%; its own lines give
     * 2,535 / 2,847 = 89.04%, which is what the report computes. */
    assert_int_equal((int)lround(r.spot_ratio * 10000), 8904);
}

static void test_top_consumers(void **state)
{
    (void)state;
    const struct sw_usage_line llama = {"training-llama-ft-v3", SW_CAP_SPOT, 1200, 1.17};
    const struct sw_usage_line sweep = {"hyperparameter-sweep", SW_CAP_SPOT, 800, 0.35};
    const struct sw_usage_line alice = {"jupyter-alice", SW_CAP_SPOT, 400, 0.35};
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&llama)), 140400);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&sweep)), 28000);
    assert_int_equal(sw_cents(sw_chargeback_line_cost(&alice)), 14000);
}

static void test_empty_report(void **state)
{
    (void)state;
    struct sw_chargeback r;
    sw_chargeback_sum(NULL, 0, 0, &r);
    assert_int_equal(sw_cents(r.cost), 0);
    assert_true(r.spot_ratio == 0 && r.efficiency == 1.0);
}

/* The simulator's per-Job CSV: two runs, two teams, one Job that never
 * completed (jct inf: it counts at its submission). */
static const char jobs_csv[] =
    "policy,job,team,gpus,pool,capacity,submit,wait_s,jct_s,duration_s,estimate_s,"
    "estimate_source,cost,cost_onprem,cost_spot,cost_ondemand,egress,gpu_h_onprem,gpu_h_spot,"
    "gpu_h_ondemand,preemptions,fell_back,lost_gpu_h,input_gb,output_gb,deadline,"
    "deadline_outcome\n"
    "ca,j1,ml,8,spot,spot,0,0,3600,3600,3600,learned,14.5,0,12.5,0,2,0,8,0,1,0,0.5,1,1,0,none\n"
    "ca,j2,ml,8,od,on-demand,100,0,7200,7100,3600,prior,65.6,0,0,65.6,0,0,0,16,0,0,0,1,1,0,none\n"
    "ca,j3,cv,1,onprem,owned,200,0,1800,1800,900,learned,0.5,0.5,0,0,0,0.5,0,0,0,0,0,1,1,0,none\n"
    "ca,j4,cv,1,,,86000,inf,inf,60,60,prior,0,0,0,0,0,0,0,0,0,0,0,1,1,0,none\n"
    "bn,j1,ml,8,od,on-demand,0,0,3600,3600,3600,learned,32.8,0,0,32.8,0,0,0,8,0,0,0,1,1,0,none\n";

static void test_team_report(void **state)
{
    (void)state;
    struct sw_job_usage *r;
    size_t n;
    struct sw_error err = {0};
    assert_int_equal(
        sw_job_usage_parse_csv(jobs_csv, strlen(jobs_csv), "jobs.csv", "ca", &r, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_true(r[0].at == 3600 && r[1].at == 7300 && r[3].at == 86000);
    struct sw_team_report *t;
    size_t nt;
    /* The first day: j4 (submitted at 86,000 s, never completed) is in. */
    assert_int_equal(sw_chargeback_report(r, n, 0, 86400, 4.10, &t, &nt), 0);
    assert_int_equal(nt, 2);
    assert_string_equal(t[0].team, "cv"); /* teams in name order */
    assert_int_equal(t[0].jobs, 2);
    const struct sw_team_report *ml = &t[1];
    assert_int_equal(ml->jobs, 2);
    assert_true(ml->gpu_h[SW_CAP_SPOT] == 8 && ml->gpu_h[SW_CAP_ON_DEMAND] == 16);
    assert_cents(ml->total, 1250 + 6560 + 200);
    /* 24 GPU-hours at $4.10 = $98.40; saved $98.40 - $80.10 = $18.30. */
    assert_cents(ml->all_ondemand, 9840);
    assert_cents(ml->savings, 1830);
    assert_true(fabs(ml->spot_ratio - 1.0 / 3) < 1e-12);
    assert_int_equal(ml->preemptions, 1);
    assert_int_equal(ml->n_top, 2);
    assert_string_equal(r[ml->top[0]].name, "j2"); /* dearest first */
    sw_free(t);
    /* A period after everything: no team. */
    assert_int_equal(sw_chargeback_report(r, n, 1e6, 2e6, 4.10, &t, &nt), 0);
    assert_int_equal(nt, 0);
    assert_null(t);
    sw_free(r);
    /* Without --policy a file of two runs is an error naming the line. */
    assert_int_equal(
        sw_job_usage_parse_csv(jobs_csv, strlen(jobs_csv), "jobs.csv", NULL, &r, &n, &err),
        SW_EPARSE);
    assert_non_null(strstr(err.msg, "jobs.csv:6: field \"policy\""));
}

/* Jobs as dear as each other list by name, whatever order the records
 * come in (the hub's live records and its archive come in different
 * orders, and the bill must not change when records retire). */
static void test_top_ties_by_name(void **state)
{
    (void)state;
    struct sw_job_usage r[4] = {0};
    static const char *const names[4] = {"d", "b", "a", "c"};
    for (int i = 0; i < 4; i++) {
        snprintf(r[i].name, sizeof(r[i].name), "%s", names[i]);
        snprintf(r[i].team, sizeof(r[i].team), "ml");
        r[i].at = 10;
        r[i].cost[SW_CAP_SPOT] = 0.01;
    }
    struct sw_job_usage rev[4];
    for (int i = 0; i < 4; i++)
        rev[i] = r[3 - i];
    struct sw_team_report *t, *u;
    size_t nt, nu;
    assert_int_equal(sw_chargeback_report(r, 4, 0, 100, 4.10, &t, &nt), 0);
    assert_int_equal(sw_chargeback_report(rev, 4, 0, 100, 4.10, &u, &nu), 0);
    assert_int_equal(t[0].n_top, SW_CHARGEBACK_TOP);
    static const char *const want[SW_CHARGEBACK_TOP] = {"a", "b", "c"};
    for (size_t k = 0; k < SW_CHARGEBACK_TOP; k++) {
        assert_string_equal(r[t[0].top[k]].name, want[k]);
        assert_string_equal(rev[u[0].top[k]].name, want[k]);
    }
    sw_free(t);
    sw_free(u);
}

static void test_job_usage_bad_input(void **state)
{
    (void)state;
    static const struct {
        const char *in, *msg;
    } cases[] = {
        {"", "x.csv:1: expected a header line"},
        {"policy,job\n", "x.csv:1: header lacks column \"team\""},
        {"policy,job,team,submit,jct_s,cost_onprem,cost_spot,cost_ondemand,egress,gpu_h_onprem,"
         "gpu_h_spot,gpu_h_ondemand,preemptions,lost_gpu_h\n"
         "ca,j,ml,0,10,1,x,0,0,0,0,0,0,0\n",
         "x.csv:2: field \"cost_spot\": expected a non-negative number, got \"x\""},
        {"policy,job,team,submit,jct_s,cost_onprem,cost_spot,cost_ondemand,egress,gpu_h_onprem,"
         "gpu_h_spot,gpu_h_ondemand,preemptions,lost_gpu_h\n"
         "ca,j,ml,0,10,1,0,0,0,0,0,0,1.5,0\n",
         "x.csv:2: field \"preemptions\": expected a whole number"},
        {"policy,job,team,submit,jct_s,cost_onprem,cost_spot,cost_ondemand,egress,gpu_h_onprem,"
         "gpu_h_spot,gpu_h_ondemand,preemptions,lost_gpu_h\n"
         "ca,j,ml,inf,10,1,0,0,0,0,0,0,1,0\n",
         "x.csv:2: field \"submit\""},
        {"policy,job,team,submit,jct_s,cost_onprem,cost_spot,cost_ondemand,egress,gpu_h_onprem,"
         "gpu_h_spot,gpu_h_ondemand,preemptions,lost_gpu_h\n"
         "ca,j,ml,0\n",
         "x.csv:2: expected at least 14 fields, got 4"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sw_job_usage *r = (void *)1;
        size_t n = 9;
        struct sw_error err = {0};
        assert_int_equal(
            sw_job_usage_parse_csv(cases[i].in, strlen(cases[i].in), "x.csv", NULL, &r, &n, &err),
            SW_EPARSE);
        assert_null(r);
        assert_int_equal(n, 0);
        if (strstr(err.msg, cases[i].msg) == NULL)
            fail_msg("case %zu: got \"%s\", expected \"%s\"", i, err.msg, cases[i].msg);
    }
}

/* Fail the Nth allocation for N = 1.. until parsing and the report succeed. */
static void test_allocation_failures(void **state)
{
    (void)state;
    for (uint64_t k = 1; k < 50; k++) {
        sw_alloc_fail_at(sw_alloc_count() + k);
        struct sw_job_usage *r = NULL;
        size_t n = 0;
        struct sw_error err = {0};
        int rc = sw_job_usage_parse_csv(jobs_csv, strlen(jobs_csv), "jobs.csv", "ca", &r, &n, &err);
        struct sw_team_report *t = NULL;
        size_t nt = 0;
        if (rc == 0)
            rc = sw_chargeback_report(r, n, 0, 1e9, 4.10, &t, &nt);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        sw_free(t);
        sw_free(r);
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_int_equal(nt, 2);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
    }
    fail_msg("never completed within 50 allocations");
}

/*
 * Node-hours per NodePool, to the cent: a day [0, 86400), reported the next
 * morning (now 25:00), one pool of 8-GPU nodes at $2.10 per GPU-hour:
 *   n1  02:00-03:00                      1 h    8 GPU-h  $16.80
 *   n2  23:30-00:30 the next day         0.5 h  4 GPU-h   $8.40 (within the day)
 *   n3  20:00, not deleted               4 h   32 GPU-h  $67.20 (to the day's end)
 *   one deleted before the day           nothing
 * 5.5 node-hours, 44 GPU-h, $92.40. Jobs there: 8 GPUs 02:05-02:50 (6
 * GPU-h) and 4 GPUs 23:40-00:10 (20 min within the day: 1.333 GPU-h),
 * $15.40; idle 36.667 GPU-h, $77.00. One on-demand node, 30 min fully
 * used: $27.92, nothing idle. A Job elsewhere (on-prem) is no pool's.
 */
static void test_nodepool_bill(void **state)
{
    (void)state;
    const double D = 1795564800; /* 2026-11-25T00:00:00Z */
    const struct sw_node_life nodes[] = {
        {"cloud-spot/spot-h100", "gpu-spot", 8, 2.10, D + 7200, D + 10800},
        {"cloud-spot/spot-h100", "gpu-spot", 8, 2.10, D + 84600, D + 88200},
        {"cloud-spot/spot-h100", "gpu-spot", 8, 2.10, D + 72000, 0},
        {"cloud-spot/spot-h100", "gpu-spot", 8, 2.10, D - 7200, D - 3600},
        {"cloud-ondemand/od-h100", "gpu-on-demand", 8, 6.98, D + 3600, D + 5400},
    };
    const struct sw_pool_run runs[] = {
        {"cloud-spot/spot-h100", 8, D + 7500, D + 10200},
        {"cloud-spot/spot-h100", 4, D + 85200, D + 87000},
        {"cloud-ondemand/od-h100", 8, D + 3600, D + 5400},
        {"onprem/a100", 8, D, D + 3600},
    };
    struct sw_nodepool_bill *b = NULL;
    size_t n = 0;
    assert_int_equal(sw_chargeback_nodepools(nodes, 5, runs, 4, D, D + 86400, D + 90000, &b, &n),
                     0);
    assert_int_equal(n, 2);
    /* Pool order: cloud-ondemand first. */
    assert_string_equal(b[0].pool, "cloud-ondemand/od-h100");
    assert_int_equal(b[0].nodes, 1);
    assert_cents(b[0].cost, 2792);
    assert_cents(b[0].idle_cost, 0);
    const struct sw_nodepool_bill *x = &b[1];
    assert_string_equal(x->nodepool, "gpu-spot");
    assert_int_equal(x->nodes, 3);
    assert_float_equal(x->node_hours, 5.5, 1e-9);
    assert_float_equal(x->gpu_hours, 44, 1e-9);
    assert_cents(x->cost, 9240);
    assert_float_equal(x->job_gpu_hours, 6 + 4.0 / 3.0, 1e-9);
    assert_cents(x->job_cost, 1540);
    assert_float_equal(x->idle_gpu_hours, 44 - 6 - 4.0 / 3.0, 1e-9);
    assert_cents(x->idle_cost, 7700);
    assert_float_equal(x->idle_fraction, (44 - 6 - 4.0 / 3.0) / 44, 1e-9);
    sw_free(b);
    /* No node lived in the period (the deleted ones): no bill. */
    assert_int_equal(
        sw_chargeback_nodepools(nodes, 2, runs, 4, D + 200000, D + 300000, D + 400000, &b, &n), 0);
    assert_int_equal(n, 0);
    assert_null(b);
    /* Jobs' hours beyond the nodes' (clocks apart) leave no negative idle. */
    const struct sw_pool_run big[] = {{"cloud-spot/spot-h100", 64, D, D + 86400}};
    assert_int_equal(sw_chargeback_nodepools(nodes, 1, big, 1, D, D + 86400, D + 86400, &b, &n), 0);
    assert_float_equal(b[0].idle_gpu_hours, 0, 0);
    assert_cents(b[0].job_cost, 1680);
    sw_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ml_research_report),  cmocka_unit_test(test_top_consumers),
        cmocka_unit_test(test_empty_report),        cmocka_unit_test(test_team_report),
        cmocka_unit_test(test_top_ties_by_name),    cmocka_unit_test(test_job_usage_bad_input),
        cmocka_unit_test(test_allocation_failures), cmocka_unit_test(test_nodepool_bill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
