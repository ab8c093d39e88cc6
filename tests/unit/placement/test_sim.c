/* Tests for placement/sim.c: small traces with figures known to the cent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement/cost.h"
#include "placement/sim.h"

#define assert_cents(dollars, expected_cents) assert_int_equal(sw_cents(dollars), (expected_cents))

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

/* The lab's clusters and a CSV trace, parsed into *c and *t, and params
 * for `policy` on them (seed 7, true runtimes); free c and t after. */
static void setup(const char *trace_csv, const char *policy, struct sw_clusters *c,
                  struct sw_trace *t, struct sw_sim_params *p)
{
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(clusters_json, strlen(clusters_json), "c", c, &err), 0);
    assert_int_equal(sw_trace_parse(trace_csv, strlen(trace_csv), SW_TRACE_CSV, "t", t, &err), 0);
    *p = (struct sw_sim_params){.clusters = c, .trace = t, .seed = 7, .runtime = SW_RUNTIME_ORACLE};
    assert_int_equal(sw_policy_parse(policy, &p->policy, &err), 0);
}

static void run(const char *trace_csv, const char *policy, struct sw_sim_result *r, double *ends)
{
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(clusters_json, strlen(clusters_json), "c", &c, &err), 0);
    assert_int_equal(sw_trace_parse(trace_csv, strlen(trace_csv), SW_TRACE_CSV, "t", &t, &err), 0);
    /* These figures are known to the cent with the true runtimes. */
    struct sw_sim_params p = {.clusters = &c, .trace = &t, .seed = 7, .runtime = SW_RUNTIME_ORACLE};
    assert_int_equal(sw_policy_parse(policy, &p.policy, &err), 0);
    struct sw_sim_job *jobs = calloc(t.n, sizeof(*jobs));
    assert_non_null(jobs);
    assert_int_equal(sw_sim_run(&p, r, jobs, &err), 0);
    for (size_t j = 0; ends != NULL && j < t.n; j++)
        ends[j] = jobs[j].end;
    free(jobs);
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

static const char spot_json[] =
    "{\"pools\":["
    "{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\",\"gpus\":8,"
    "\"price_per_gpu_hour\":1.0},"
    "{\"name\":\"cloud-spot\",\"region\":\"us-east-1\",\"capacity\":\"spot\",\"gpus\":64,"
    "\"provision_seconds\":180,\"price_per_gpu_hour\":1.5625,\"interruptions_per_hour\":%s},"
    "{\"name\":\"cloud-ondemand\",\"region\":\"us-west-2\",\"capacity\":\"on-demand\","
    "\"gpus\":32,\"provision_seconds\":180,\"price_per_gpu_hour\":4.10}],"
    "\"job_defaults\":{\"max_preemptions\":%d}}";

/* Runs `trace_csv` under `policy` with the spot rate `rate`, the cap
 * `cap`, the availability trace `avail` (JSON or NULL) and what the engine
 * is told of runtimes; fills `jobs`. */
static void run_full(const char *trace_csv, const char *policy, const char *rate, int cap,
                     const char *avail, enum sw_runtime_knowledge k, struct sw_sim_result *r,
                     struct sw_sim_job *jobs)
{
    char json[2048];
    snprintf(json, sizeof(json), spot_json, rate, cap);
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_spot_trace a = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(json, strlen(json), "c", &c, &err), 0);
    assert_int_equal(sw_trace_parse(trace_csv, strlen(trace_csv), SW_TRACE_CSV, "t", &t, &err), 0);
    if (avail != NULL)
        assert_int_equal(sw_spot_trace_parse(avail, strlen(avail), "a", &a, &err), 0);
    struct sw_sim_params p = {.clusters = &c,
                              .trace = &t,
                              .seed = 7,
                              .runtime = k,
                              .availability = avail != NULL ? &a : NULL};
    assert_int_equal(sw_policy_parse(policy, &p.policy, &err), 0);
    assert_int_equal(sw_sim_run(&p, r, jobs, &err), 0);
    sw_spot_trace_free(&a);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* Without an oracle the engine sees the prior first, then what finished
 * Jobs of the same features took: never a Job's own runtime. */
static void test_learned_estimates(void **state)
{
    (void)state;
    /* Six one-GPU Jobs of label "a", one after the other on an idle
     * cluster, each 1000 s; then a seventh long after. */
    static const char tr[] = "submit,gpus,duration,team,label\n"
                             "0,1,1000,ml,a\n2000,1,1000,ml,a\n4000,1,1000,ml,a\n"
                             "6000,1,1000,ml,a\n8000,1,1000,ml,a\n10000,1,1000,ml,a\n"
                             "20000,1,7000,ml,a\n";
    struct sw_sim_result r;
    struct sw_sim_job jobs[7];
    run_full(tr, "cost-aware", "0.1", -1, NULL, SW_RUNTIME_LEARNED, &r, jobs);
    assert_int_equal(r.completed, 7);
    /* The first five see the prior: one hour, sigma 2, so a mean of
     * 3600 e^2 s. */
    for (int j = 0; j < 5; j++) {
        assert_int_equal(jobs[j].estimate, SW_EST_PRIOR);
        assert_float_equal(jobs[j].estimate_mean_s, 3600.0 * exp(2.0), 1e-6);
    }
    /* Then five runs of 1000 s: a median of 1000 s with no spread. */
    assert_int_equal(jobs[5].estimate, SW_EST_LEARNED);
    assert_float_equal(jobs[5].estimate_mean_s, 1000.0, 1e-6);
    /* The seventh runs 7000 s but is believed to run about 1000: the
     * engine never sees the truth. */
    assert_int_equal(jobs[6].estimate, SW_EST_LEARNED);
    assert_float_equal(jobs[6].estimate_mean_s, 1000.0, 1e-6);
    assert_true(jobs[6].jct_s == 7000);
    assert_int_equal(r.estimates[SW_EST_PRIOR], 5);
    assert_int_equal(r.estimates[SW_EST_LEARNED], 2);
}

/* A spot burst gets GPUs only while the availability trace has instances:
 * none for the first 500 s, then one (standing for the pool's ceiling). */
static void test_spot_availability(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team\n0,8,3600,ml\n10,8,3600,ml\n";
    static const char avail[] = "{\"metadata\":{\"gap_seconds\":100},"
                                "\"data\":[0,0,0,0,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}";
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    run_full(tr, "spot-only", "0", -1, avail, SW_RUNTIME_ORACLE, &r, jobs);
    assert_int_equal(jobs[1].capacity, SW_CAP_SPOT);
    /* It waits at home until spot is obtainable at 500 s, then provisions. */
    assert_true(jobs[1].start == 500 + 180);
    assert_true(jobs[1].end == 500 + 180 + 3600);
    /* Without the trace it bursts at once. */
    run_full(tr, "spot-only", "0", -1, NULL, SW_RUNTIME_ORACLE, &r, jobs);
    assert_true(jobs[1].start == 10 + 180);
}

/* Cost-aware waits for spot over the outages' distribution. The hub first
 * watches twelve outages of 100 s and four of 20,000 s end (availability
 * ticks of 100 s), while Job 0 holds home for days. Job 1 (8 GPUs, 2 h, no
 * deadline) arrives 10 s into a new outage: the mean residual wait is about
 * 5,000 s, at which spot scores above on-demand ($27 + $32.80 x 1.4 h
 * against $70); six of the eight quantile points are 90 s, so waiting up
 * to them, then on-demand, is expected at about $40 (test_engine.c's
 * test_capacity_wait_distribution has the same rule to the cent). It
 * waits, the capacity returns at the next tick, and it runs on spot. */
static void test_spot_wait_distribution(void **state)
{
    (void)state;
    char avail[8192];
    size_t n = 0;
    n += (size_t)snprintf(avail + n, sizeof(avail) - n,
                          "{\"metadata\":{\"gap_seconds\":100},\"data\":[");
    int tick = 0;
    for (int k = 0; k < 12; k++, tick += 2)
        n += (size_t)snprintf(avail + n, sizeof(avail) - n, "1,0,");
    for (int k = 0; k < 4; k++) {
        n += (size_t)snprintf(avail + n, sizeof(avail) - n, "1,");
        tick++;
        for (int z = 0; z < 200; z++, tick++)
            n += (size_t)snprintf(avail + n, sizeof(avail) - n, "0,");
    }
    n += (size_t)snprintf(avail + n, sizeof(avail) - n, "1,1,");
    tick += 2;
    int outage = tick; /* Job 1 arrives 10 s into this tick */
    n += (size_t)snprintf(avail + n, sizeof(avail) - n, "0");
    for (int k = 0; k < 300; k++)
        n += (size_t)snprintf(avail + n, sizeof(avail) - n, ",1");
    n += (size_t)snprintf(avail + n, sizeof(avail) - n, "]}");
    assert_true(n < sizeof(avail) - 1);
    char tr[256];
    double arrive = outage * 100.0 + 10;
    snprintf(tr, sizeof(tr), "submit,gpus,duration,team\n0,8,1000000,ml\n%.0f,8,7200,ml\n", arrive);
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    run_full(tr, "cost-aware", "0.1", -1, avail, SW_RUNTIME_ORACLE, &r, jobs);
    assert_int_equal(jobs[0].capacity, SW_CAP_OWNED);
    assert_int_equal(jobs[1].capacity, SW_CAP_SPOT);
    assert_float_equal(jobs[1].gpu_h[SW_CAP_ON_DEMAND], 0, 1e-9);
    /* Capacity is back at the next tick; then provisioning. */
    assert_float_equal(jobs[1].start, (outage + 1) * 100.0 + 180, 1e-6);
}

/* After the cap, a Job no longer goes to spot: spot-only falls back to
 * on-demand. At 360 interruptions an hour a spot run lasts seconds. */
static void test_preemption_cap(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team\n0,8,3600,ml\n10,8,3600,ml\n";
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    run_full(tr, "spot-only", "360", 2, NULL, SW_RUNTIME_ORACLE, &r, jobs);
    assert_int_equal(jobs[1].preemptions, 2);
    assert_true(jobs[1].fell_back);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_true(jobs[1].done);
    assert_int_equal(r.fallbacks, 1);
    assert_true(jobs[1].gpu_h[SW_CAP_SPOT] > 0 && jobs[1].gpu_h[SW_CAP_ON_DEMAND] > 1.0);
    /* The derived cap: at 360 an hour, many preemptions are plausible
     * before the rate is in doubt; the Job still falls back in the end. */
    run_full(tr, "spot-only", "360", -1, NULL, SW_RUNTIME_ORACLE, &r, jobs);
    assert_true(jobs[1].preemptions >= 2);
    assert_true(jobs[1].done);
}

/* Inputs move before the run and outputs after it: both are part of the
 * JCT, and the outputs' egress is paid at the link's price. 125 GB in at
 * 10 Gbit/s is 100 s; 12.5 GB out is 10 s at $0.09/GB, $1.125. */
static void test_transfers_in_jct_and_egress(void **state)
{
    (void)state;
    static const char json[] =
        "{\"pools\":["
        "{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\",\"gpus\":8,"
        "\"price_per_gpu_hour\":1.0},"
        "{\"name\":\"od\",\"region\":\"us-west-2\",\"capacity\":\"on-demand\","
        "\"gpus\":32,\"provision_seconds\":180,\"price_per_gpu_hour\":4.10}],"
        "\"links\":[{\"from\":\"onprem\",\"to\":\"us-west-2\",\"price_per_gb\":0,"
        "\"bandwidth_gbps\":10},{\"from\":\"us-west-2\",\"to\":\"onprem\","
        "\"price_per_gb\":0.09,\"bandwidth_gbps\":10}],"
        "\"job_defaults\":{\"input_gb\":125,\"input_region\":\"onprem\",\"output_gb\":12.5}}";
    static const char tr[] = "submit,gpus,duration,team\n0,8,3600,ml\n10,8,3600,ml\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(json, strlen(json), "c", &c, &err), 0);
    assert_string_equal(c.defaults.output_region, "onprem"); /* defaults to the input's */
    assert_int_equal(sw_trace_parse(tr, strlen(tr), SW_TRACE_CSV, "t", &t, &err), 0);
    struct sw_sim_params p = {.clusters = &c, .trace = &t, .seed = 7, .runtime = SW_RUNTIME_ORACLE};
    assert_int_equal(sw_policy_parse("burst-now", &p.policy, &err), 0);
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    /* At home nothing moves. */
    assert_true(jobs[0].jct_s == 3600 && jobs[0].egress_cost == 0);
    /* In the cloud: inputs, provisioning, the run, the outputs. */
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_float_equal(jobs[1].jct_s, 100 + 180 + 3600 + 10, 1e-6);
    assert_cents(jobs[1].egress_cost, 113);
    assert_cents(r.cost_egress, 113);
    /* Billed from the end of the input transfer to the end of the run. */
    assert_float_equal(jobs[1].gpu_h[SW_CAP_ON_DEMAND], 8 * (180 + 3600) / 3600.0, 1e-9);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* Outputs leave once, when the run ends: a Job preempted twice on spot,
 * then run to its end on on-demand, pays the outputs' egress once ($1.125
 * for 12.5 GB at $0.09/GB), not at each of its three dispatches. */
static void test_output_egress_once(void **state)
{
    (void)state;
    static const char json[] =
        "{\"pools\":["
        "{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\",\"gpus\":8,"
        "\"price_per_gpu_hour\":1.0},"
        "{\"name\":\"spot\",\"region\":\"us-east-1\",\"capacity\":\"spot\",\"gpus\":64,"
        "\"provision_seconds\":180,\"price_per_gpu_hour\":1.5625,\"interruptions_per_hour\":360},"
        "{\"name\":\"od\",\"region\":\"us-west-2\",\"capacity\":\"on-demand\","
        "\"gpus\":32,\"provision_seconds\":180,\"price_per_gpu_hour\":4.10}],"
        "\"links\":[{\"from\":\"onprem\",\"to\":\"us-west-2\",\"price_per_gb\":0,"
        "\"bandwidth_gbps\":10},{\"from\":\"onprem\",\"to\":\"us-east-1\",\"price_per_gb\":0,"
        "\"bandwidth_gbps\":10},{\"from\":\"us-west-2\",\"to\":\"onprem\","
        "\"price_per_gb\":0.09,\"bandwidth_gbps\":10},{\"from\":\"us-east-1\",\"to\":\"onprem\","
        "\"price_per_gb\":0.09,\"bandwidth_gbps\":10}],"
        "\"job_defaults\":{\"max_preemptions\":2,\"input_gb\":125,\"input_region\":\"onprem\","
        "\"output_gb\":12.5}}";
    static const char tr[] = "submit,gpus,duration,team\n0,8,3600,ml\n10,8,3600,ml\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(json, strlen(json), "c", &c, &err), 0);
    assert_int_equal(sw_trace_parse(tr, strlen(tr), SW_TRACE_CSV, "t", &t, &err), 0);
    struct sw_sim_params p = {.clusters = &c, .trace = &t, .seed = 7, .runtime = SW_RUNTIME_ORACLE};
    assert_int_equal(sw_policy_parse("spot-only", &p.policy, &err), 0);
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(jobs[1].preemptions, 2);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_true(jobs[1].done);
    assert_cents(jobs[1].egress_cost, 113);
    assert_cents(r.cost_egress, 113);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* With migration, a Job that went to on-demand while spot was out moves
 * to spot at its first checkpoint after spot returns, losing no work (only
 * the restart); without, it stays on on-demand. */
static void test_migration(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team\n0,8,36000,ml\n10,8,36000,ml\n";
    static const char avail[] = "{\"metadata\":{\"gap_seconds\":100},"
                                "\"data\":[0,0,0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1,1]}";
    char json[2048];
    snprintf(json, sizeof(json), spot_json, "0", -1);
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_spot_trace a = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(json, strlen(json), "c", &c, &err), 0);
    assert_int_equal(sw_trace_parse(tr, strlen(tr), SW_TRACE_CSV, "t", &t, &err), 0);
    assert_int_equal(sw_spot_trace_parse(avail, strlen(avail), "a", &a, &err), 0);
    struct sw_sim_params p = {
        .clusters = &c, .trace = &t, .seed = 7, .runtime = SW_RUNTIME_ORACLE, .availability = &a};
    assert_int_equal(sw_policy_parse("greedy", &p.policy, &err), 0);
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_int_equal(r.migrations, 0);
    p.migrate = true;
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.migrations, 1);
    assert_int_equal(jobs[1].capacity, SW_CAP_SPOT);
    /* On-demand from dispatch (10 s) to the first checkpoint, 30 minutes
     * after provisioning: 10 + 180 + 1800. */
    assert_float_equal(jobs[1].gpu_h[SW_CAP_ON_DEMAND], 8 * (180 + 1800) / 3600.0, 1e-9);
    /* No work lost but the restart; it ends restart and provisioning later. */
    assert_float_equal(jobs[1].lost_gpu_h, 8 * 300 / 3600.0, 1e-9);
    assert_float_equal(jobs[1].end, 10 + 180 + 1800 + 180 + 300 + (36000 - 1800), 1e-6);
    sw_spot_trace_free(&a);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* Making room at home (--make-room). A (8 GPUs, 10 h, no deadline) holds
 * onprem when B (8 GPUs, 10 min) arrives at 4,000 s due 700 s later: the
 * cloud's 180 s provisioning makes it 780 s, so no option meets it.
 * Without the flag B goes to on-demand and misses; with it cost-aware
 * stops A, which keeps the work to its second checkpoint (3,600 s) and
 * loses 400 s, B runs at home and is on time, and A runs to its end once. */
static void test_make_room(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team,deadline\n"
                             "0,8,36000,ml,\n"
                             "4000,8,600,ml,4700\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    struct sw_sim_params p;
    setup(tr, "cost-aware", &c, &t, &p);
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_true(jobs[1].end > 4700);
    assert_int_equal(r.deadline_misses, 1);
    assert_int_equal(r.home_stops, 0);
    p.make_room = true;
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.home_stops, 1);
    assert_int_equal(r.deadline_misses, 0);
    assert_int_equal(jobs[1].capacity, SW_CAP_OWNED);
    assert_float_equal(jobs[1].end, 4600, 1e-6);
    assert_true(jobs[0].done && jobs[1].done);
    assert_int_equal(r.completed, 2);
    /* A loses 400 s since its checkpoint and its 300 s restart, 8 GPUs. */
    assert_float_equal(jobs[0].lost_gpu_h, 8 * (400 + 300) / 3600.0, 1e-9);
    /* Other policies never stop a running Job. */
    assert_int_equal(sw_policy_parse("burst-now", &p.policy, &err), 0);
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.home_stops, 0);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* The deadline guard, with what a hub believes: A (8 GPUs) is annotated
 * 600 s but runs 5,000 s; B (8 GPUs, 600 s, annotated so) arrives at 200 s
 * due at 1,300 s. Burst-now sends B to on-demand at once (done at 980 s).
 * Believing A nearly done, cost-aware would queue B at home, the deadline
 * met at the median: it meets no option at the 90th percentile; B would
 * start when A ends, at 5,000 s. The guard sends B to on-demand at once,
 * as burst-now does, since no home start is certain; with --make-room A is
 * preemptible, so B waits until bursting would have started it (380 s),
 * then A is stopped and B starts at home. */
static void test_deadline_guard_keeps_burst_now_deadline(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team,deadline,name,priority,x,expected_runtime\n"
                             "0,8,5000,ml,,a,,,600\n"
                             "200,8,600,ml,1300,b,,,600\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    struct sw_sim_params p;
    setup(tr, "burst-now", &c, &t, &p);
    p.runtime = SW_RUNTIME_LEARNED;
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_float_equal(jobs[1].end, 980, 1e-6);
    assert_int_equal(sw_policy_parse("cost-aware", &p.policy, &err), 0);
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_float_equal(jobs[1].end, 980, 1e-6);
    assert_int_equal(r.deadline_misses, 0);
    p.make_room = true;
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.home_stops, 1);
    assert_int_equal(jobs[1].capacity, SW_CAP_OWNED);
    assert_float_equal(jobs[1].start, 380, 1e-6);
    assert_float_equal(jobs[1].end, 980, 1e-6);
    assert_int_equal(r.deadline_misses, 0);
    assert_true(jobs[0].done && jobs[1].done);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* A Job on on-demand that cost-aware would rather queue at home keeps its
 * place there: when the home GPUs free between its checkpoints, it is
 * decided again at once, ahead of a Job queued after it, and moves,
 * losing the work since its last checkpoint. A (38,000 s) holds home; B
 * (production, 40,000 s, submitted at 10 s) goes to on-demand, where the
 * wait for home costs more than on-demand; C (production, 100,000 s)
 * queues at home. Near A's end home is worth waiting for: B keeps its
 * place, and when A ends it moves home, not C, 10 s after its checkpoint
 * at 190 + 21 x 1800 = 37,990 s. */
static void test_migration_home_queue(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team,name,priority\n"
                             "0,8,38000,ml,a,production\n"
                             "10,8,40000,ml,b,production\n"
                             "20,8,100000,ml,c,production\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    struct sw_sim_params p;
    setup(tr, "cost-aware", &c, &t, &p);
    p.migrate = true;
    struct sw_sim_result r;
    struct sw_sim_job jobs[3];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.migrations, 1);
    assert_string_equal(jobs[1].pool, "onprem");
    /* On-demand from dispatch to A's end; lost: 10 s and the restart. */
    assert_float_equal(jobs[1].gpu_h[SW_CAP_ON_DEMAND], 8 * (38000 - 10) / 3600.0, 1e-9);
    assert_float_equal(jobs[1].lost_gpu_h, 8 * (10 + 300) / 3600.0, 1e-9);
    assert_float_equal(jobs[1].end, 38000 + 300 + (40000 - 37800), 1e-6);
    /* C starts when B ends. */
    assert_string_equal(jobs[2].pool, "onprem");
    assert_float_equal(jobs[2].start, 40500, 1e-6);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* With migration, a Job sent to on-demand because the home GPUs were busy
 * moves home at its first checkpoint after they are free (billed $1, not
 * $4.10, per GPU-hour for the rest); without, it stays on on-demand. */
static void test_migration_home(void **state)
{
    (void)state;
    static const char tr[] = "submit,gpus,duration,team\n0,8,3600,ml\n10,8,36000,ml\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    struct sw_sim_params p;
    setup(tr, "burst-now", &c, &t, &p);
    struct sw_sim_result r;
    struct sw_sim_job jobs[2];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(jobs[1].capacity, SW_CAP_ON_DEMAND);
    assert_int_equal(r.migrations, 0);
    p.migrate = true;
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.migrations, 1);
    assert_int_equal(jobs[1].capacity, SW_CAP_OWNED);
    /* Computing from 190 s; its checkpoint at 1990 s finds home busy (the
     * first Job runs to 3600 s), the one at 3790 s finds it free: on-demand
     * from dispatch (10 s) to 3790 s. */
    assert_float_equal(jobs[1].gpu_h[SW_CAP_ON_DEMAND], 8 * 3780 / 3600.0, 1e-9);
    /* Home has no provisioning: the rest, with the restart, from 3790 s. */
    assert_float_equal(jobs[1].gpu_h[SW_CAP_OWNED], 8 * (300 + 36000 - 3600) / 3600.0, 1e-9);
    assert_float_equal(jobs[1].end, 3790 + 300 + (36000 - 3600), 1e-6);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

/* Shares of a GPU (the Alibaba pod list's gpu_milli): four pods of a
 * quarter GPU for an hour on an on-prem pool of one GPU. Time-sliced, they
 * pack on it and each is billed a quarter GPU-hour (so the chargeback
 * bills shares); in whole GPUs, one runs at home and three burst to
 * on-demand, each billed a whole GPU. */
static void run_shares(const char *sharing, struct sw_sim_result *r, struct sw_sim_job *jobs)
{
    char json[600];
    snprintf(json, sizeof(json),
             "{\"pools\":[{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\","
             "\"gpus\":1,\"price_per_gpu_hour\":1.0,\"gpu_sharing\":\"%s\"},"
             "{\"name\":\"od\",\"region\":\"onprem\",\"capacity\":\"on-demand\","
             "\"gpus\":8,\"provision_seconds\":180,\"price_per_gpu_hour\":4.10}]}",
             sharing);
    static const char pods[] =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,1000,1024,1,250,,LS,Running,0,3600,0\n"
        "p1,1000,1024,1,250,,LS,Running,1,3601,1\n"
        "p2,1000,1024,1,250,,LS,Running,2,3602,2\n"
        "p3,1000,1024,1,250,,LS,Running,3,3603,3\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(json, strlen(json), "c", &c, &err), 0);
    assert_int_equal(sw_trace_parse(pods, strlen(pods), SW_TRACE_ALIBABA, "t", &t, &err), 0);
    struct sw_sim_params p = {.clusters = &c, .trace = &t, .seed = 7, .runtime = SW_RUNTIME_ORACLE};
    assert_int_equal(sw_policy_parse("burst-now", &p.policy, &err), 0);
    assert_int_equal(sw_sim_run(&p, r, jobs, &err), 0);
    sw_trace_free(&t);
    sw_clusters_free(&c);
}

static void test_gpu_shares(void **state)
{
    (void)state;
    struct sw_sim_result r;
    struct sw_sim_job jobs[4];
    run_shares("time-slicing", &r, jobs);
    assert_int_equal(r.bursts, 0);
    assert_cents(r.cost_onprem, 100);
    assert_true(fabs(r.gpu_h_onprem - 1.0) < 1e-9);
    for (int j = 0; j < 4; j++) {
        assert_true(fabs(jobs[j].gpu_h[SW_CAP_OWNED] - 0.25) < 1e-9);
        assert_true(jobs[j].wait_s == 0);
    }
    run_shares("none", &r, jobs);
    assert_int_equal(r.bursts, 3);
    assert_cents(r.cost_onprem, 100);
    /* 3 x 1 GPU x $4.10 x (3600 + 180) s = $12.915. */
    assert_cents(r.cost_ondemand, 1292);
    /* Bad input names the file, the pool and the field. */
    struct sw_clusters c = {0};
    struct sw_error err = {0};
    static const char bad[] =
        "{\"pools\":[{\"name\":\"s\",\"region\":\"r\",\"capacity\":\"spot\","
        "\"gpus\":8,\"price_per_gpu_hour\":1,\"gpu_sharing\":\"time-slicing\"}]}";
    assert_int_equal(sw_clusters_parse(bad, strlen(bad), "c.json", &c, &err), SW_EPARSE);
    sw_clusters_free(&c);
    assert_non_null(strstr(err.msg, "field \"gpu_sharing\": time-slicing is modelled for owned "
                                    "pools only"));
    static const char bad2[] =
        "{\"pools\":[{\"name\":\"o\",\"region\":\"r\",\"capacity\":\"owned\","
        "\"gpus\":8,\"price_per_gpu_hour\":1,\"gpu_sharing\":\"mps\"}]}";
    assert_int_equal(sw_clusters_parse(bad2, strlen(bad2), "c.json", &c, &err), SW_EPARSE);
    sw_clusters_free(&c);
    assert_non_null(strstr(err.msg, "field \"gpu_sharing\": expected none or time-slicing, got "
                                    "\"mps\""));
}

/* MIG slices: onprem has one whole GPU and one partitioned into seven
 * 1g.10gb slices; on-demand partitions the GPUs it rents the same way.
 * Burst-now: a (3 slices) and b (4) fill the home slices, w (a whole GPU)
 * takes the whole one; c (2) bursts and rents a GPU, whose idle slices
 * take d (2) with no provisioning. Each pays its slices' share. */
static void test_mig_profiles(void **state)
{
    (void)state;
    static const char json[] =
        "{\"pools\":[{\"name\":\"onprem\",\"region\":\"onprem\",\"capacity\":\"owned\","
        "\"gpus\":2,\"price_per_gpu_hour\":1.0,"
        "\"mig\":[{\"profile\":\"1g.10gb\",\"per_gpu\":7,\"gpus\":1}]},"
        "{\"name\":\"od\",\"region\":\"onprem\",\"capacity\":\"on-demand\","
        "\"gpus\":8,\"provision_seconds\":180,\"price_per_gpu_hour\":4.10,"
        "\"mig\":[{\"profile\":\"1g.10gb\",\"per_gpu\":7}]}]}";
    static const char jobs_csv[] = "name,submit,gpus,duration,team,mig_profile\n"
                                   "a,0,3,3600,ml,1g.10gb\n"
                                   "b,1,4,3600,ml,1g.10gb\n"
                                   "c,2,2,3600,ml,1g.10gb\n"
                                   "d,3,2,3600,ml,1g.10gb\n"
                                   "w,4,1,3600,ml,\n";
    struct sw_clusters c = {0};
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_clusters_parse(json, strlen(json), "c", &c, &err), 0);
    assert_int_equal(c.pools[0].total_gpus, 1);
    assert_int_equal(c.pools[0].mig[0].total, 7);
    assert_int_equal(sw_trace_parse(jobs_csv, strlen(jobs_csv), SW_TRACE_CSV, "t", &t, &err), 0);
    assert_string_equal(t.jobs[0].mig_profile, "1g.10gb");
    struct sw_sim_params p = {.clusters = &c, .trace = &t, .seed = 7, .runtime = SW_RUNTIME_ORACLE};
    assert_int_equal(sw_policy_parse("burst-now", &p.policy, &err), 0);
    struct sw_sim_result r;
    struct sw_sim_job jobs[5];
    assert_int_equal(sw_sim_run(&p, &r, jobs, &err), 0);
    assert_int_equal(r.bursts, 2);
    /* Home: 3/7 + 4/7 + 1 GPU-hours at $1.00. */
    assert_cents(r.cost_onprem, 200);
    assert_true(fabs(jobs[0].gpu_h[SW_CAP_OWNED] - 3.0 / 7.0) < 1e-9);
    assert_true(fabs(jobs[4].gpu_h[SW_CAP_OWNED] - 1.0) < 1e-9);
    assert_true(jobs[4].wait_s == 0);
    /* c: 2/7 x $4.10 x (3600 + 180) s = $1.23; d: 2/7 x $4.10 x 1 h =
     * $1.17, started with no provisioning. */
    assert_cents(r.cost_ondemand, 240);
    assert_true(fabs(jobs[3].gpu_h[SW_CAP_ON_DEMAND] - 2.0 / 7.0) < 1e-9);
    /* The per-Job records the chargeback report is built from bill slices. */
    assert_cents(jobs[2].cost[SW_CAP_ON_DEMAND], 123);
    assert_cents(jobs[3].cost[SW_CAP_ON_DEMAND], 117);
    sw_trace_free(&t);
    sw_clusters_free(&c);
    /* Bad input names the file, the pool or line, and the field. */
    static const char bad[] = "{\"pools\":[{\"name\":\"o\",\"region\":\"r\",\"capacity\":\"owned\","
                              "\"gpus\":1,\"price_per_gpu_hour\":1,"
                              "\"mig\":[{\"profile\":\"1g.10gb\",\"per_gpu\":7,\"gpus\":2}]}]}";
    assert_int_equal(sw_clusters_parse(bad, strlen(bad), "c.json", &c, &err), SW_EPARSE);
    sw_clusters_free(&c);
    assert_non_null(strstr(err.msg, "c.json: pools[0]: mig[0]: field \"gpus\": 2 partitioned, "
                                    "but the pool has 1 GPUs left"));
    static const char bad2[] = "{\"pools\":[{\"name\":\"s\",\"region\":\"r\",\"capacity\":\"spot\","
                               "\"gpus\":8,\"price_per_gpu_hour\":1,"
                               "\"mig\":[{\"profile\":\"7x\",\"per_gpu\":1}]}]}";
    assert_int_equal(sw_clusters_parse(bad2, strlen(bad2), "c.json", &c, &err), SW_EPARSE);
    sw_clusters_free(&c);
    assert_non_null(strstr(err.msg, "field \"profile\": expected a MIG profile such as 1g.10gb, "
                                    "got \"7x\""));
    static const char bad3[] = "submit,gpus,duration,team,mig_profile\n0,1,60,ml,mig-1g\n";
    assert_int_equal(sw_trace_parse(bad3, strlen(bad3), SW_TRACE_CSV, "j.csv", &t, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, "j.csv:2: field \"mig_profile\": expected a MIG profile such as "
                                 "1g.10gb, got \"mig-1g\"");
    sw_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_now_versus_local),
        cmocka_unit_test(test_spot_preemptions_deterministic),
        cmocka_unit_test(test_learned_estimates),
        cmocka_unit_test(test_spot_availability),
        cmocka_unit_test(test_spot_wait_distribution),
        cmocka_unit_test(test_preemption_cap),
        cmocka_unit_test(test_transfers_in_jct_and_egress),
        cmocka_unit_test(test_output_egress_once),
        cmocka_unit_test(test_migration_home_queue),
        cmocka_unit_test(test_migration),
        cmocka_unit_test(test_make_room),
        cmocka_unit_test(test_deadline_guard_keeps_burst_now_deadline),
        cmocka_unit_test(test_migration_home),
        cmocka_unit_test(test_gpu_shares),
        cmocka_unit_test(test_mig_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
