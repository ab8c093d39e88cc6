/* Tests for placement/trace.c: CSV, Alibaba and spot-trace parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "placement/trace.h"

static const char csv[] = "submit,gpus,duration,team,deadline\n"
                          "60,8,7200,ml,20000\r\n"
                          "0,4,3600,cv,\n"
                          "\n"
                          "120,2,600,ml,\n";

static const char alibaba[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
    "openb-pod-0001,6000,12288,0,0,,BE,Running,5,100,5\n"
    "openb-pod-0002,6000,12288,1,460,,BE,Pending,10,,\n"
    "openb-pod-0003,88000,327680,8,1000,,Guaranteed,Succeeded,100,1100,160\n";

static void test_csv(void **state)
{
    (void)state;
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_trace_parse(csv, strlen(csv), SW_TRACE_AUTO, "jobs.csv", &t, &err), 0);
    assert_int_equal(t.n, 3);
    /* Sorted by submit time. */
    assert_string_equal(t.jobs[0].team, "cv");
    assert_int_equal(t.jobs[0].gpus, 4);
    assert_true(t.jobs[0].deadline == 0);
    assert_true(t.jobs[1].submit == 60 && t.jobs[1].deadline == 20000);
    assert_string_equal(t.jobs[1].name, "job-2");
    assert_true(t.jobs[2].duration == 600);
    sw_trace_free(&t);
}

static void test_alibaba(void **state)
{
    (void)state;
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_trace_parse(alibaba, strlen(alibaba), SW_TRACE_AUTO, "pods.csv", &t, &err),
                     0);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.skipped, 2);
    assert_string_equal(t.jobs[0].name, "openb-pod-0000");
    assert_int_equal(t.jobs[0].prio, SW_PRIO_TRAINING);
    assert_true(t.jobs[0].duration == 12537496);
    assert_int_equal(t.jobs[1].gpus, 8);
    assert_int_equal(t.jobs[1].prio, SW_PRIO_PRODUCTION);
    assert_true(t.jobs[1].submit == 100 && t.jobs[1].duration == 940);
    sw_trace_free(&t);
}

static void expect(const char *text, const char *msg)
{
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_trace_parse(text, strlen(text), SW_TRACE_AUTO, "jobs.csv", &t, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, msg);
    sw_trace_free(&t);
}

static void test_bad_input(void **state)
{
    (void)state;
    expect("submit,gpus,duration,team\n0,-1,60,ml\n",
           "jobs.csv:2: field \"gpus\": expected a non-negative number, got \"-1\"");
    expect("submit,gpus,duration,team\n0,1.5,60,ml\n",
           "jobs.csv:2: field \"gpus\": expected a non-negative integer, got \"1.5\"");
    expect("submit,gpus,duration,team\n0,1,60,ml\n5,x,60,ml\n",
           "jobs.csv:3: field \"gpus\": expected a non-negative number, got \"x\"");
    expect("submit,gpus,duration,team\n0,1,nan,ml\n",
           "jobs.csv:2: field \"duration\": expected a non-negative number, got \"nan\"");
    expect("submit,gpus,duration,team\n0,1,60\n",
           "jobs.csv:2: expected 4 fields like the header, got 3");
    expect("submit,gpus,team\n", "jobs.csv:1: header lacks column \"duration\" (expected "
                                 "submit,gpus,duration,team[,deadline][,name][,priority])");
    expect("submit,gpus,duration,team,deadline\n100,1,60,ml,50\n",
           "jobs.csv:2: field \"deadline\": 50 is before submit 100");
    expect("", "jobs.csv:1: expected a header line");
    expect("name,num_gpu,qos,creation_time,deletion_time\n",
           "jobs.csv:1: header lacks column \"scheduled_time\"");
}

static void test_allocation_failures(void **state)
{
    (void)state;
    for (uint64_t n = 1; n < 100; n++) {
        struct sw_trace t = {0};
        struct sw_error err = {0};
        sw_alloc_fail_at(n);
        int rc = sw_trace_parse(csv, strlen(csv), SW_TRACE_CSV, "jobs.csv", &t, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_int_equal(t.n, 3);
            sw_trace_free(&t);
            break;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_string_equal(err.msg, "jobs.csv:2: out of memory");
        sw_trace_free(&t);
    }
    static const char spot[] = "{\"metadata\":{\"gap_seconds\":60},\"data\":[1,1,0,1,1,1,0,1]}";
    for (uint64_t n = 1; n < 100; n++) {
        struct sw_spot_trace t = {0};
        struct sw_error err = {0};
        sw_alloc_fail_at(n);
        int rc = sw_spot_trace_parse(spot, strlen(spot), "spot.json", &t, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        sw_spot_trace_free(&t);
        if (!injected) {
            assert_int_equal(rc, 0);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
    }
    fail_msg("never completed");
}

static void test_spot_trace(void **state)
{
    (void)state;
    static const char spot[] = "{\"metadata\":{\"gap_seconds\":60},\"data\":[1,1,0,1,1,1,0,1]}";
    struct sw_spot_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_spot_trace_parse(spot, strlen(spot), "spot.json", &t, &err), 0);
    assert_int_equal(t.n, 8);
    assert_true(t.gap_s == 60);
    /* Drops at ticks 2 and 6 (120 s and 360 s into the trace). */
    assert_true(sw_spot_trace_next_preemption(&t, 0, 0) == 120);
    assert_true(sw_spot_trace_next_preemption(&t, 130, 0) == 230);
    /* From offset 400 the trace loops: the next drop is tick 2 of the next loop. */
    assert_true(sw_spot_trace_next_preemption(&t, 400, 0) == 480 + 120 - 400);
    sw_spot_trace_free(&t);
    static const char bad[] = "{\"metadata\":{\"gap_seconds\":60},\"data\":[1,-1]}";
    assert_int_equal(sw_spot_trace_parse(bad, strlen(bad), "spot.json", &t, &err), SW_EPARSE);
    assert_string_equal(err.msg, "spot.json: field \"data[1]\": expected a non-negative integer");
    sw_spot_trace_free(&t);
    static const char nogap[] = "{\"metadata\":{},\"data\":[]}";
    assert_int_equal(sw_spot_trace_parse(nogap, strlen(nogap), "spot.json", &t, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "metadata.gap_seconds"));
    sw_spot_trace_free(&t);
    static const char flat[] = "{\"metadata\":{\"gap_seconds\":5},\"data\":[1,1,1]}";
    assert_int_equal(sw_spot_trace_parse(flat, strlen(flat), "spot.json", &t, &err), 0);
    assert_true(isinf(sw_spot_trace_next_preemption(&t, 0, 0)));
    sw_spot_trace_free(&t);
}

/* Fuzzing findings (tests/fuzz), one test each. */

/* fuzz_trace_csv, fuzz_trace_alibaba: a trace of no jobs was sorted with
 * qsort(NULL, 0, ...), which UBSan reports (qsort takes no NULL). */
static void test_fuzz_empty_trace(void **state)
{
    (void)state;
    static const char *const headers[] = {
        "submit,gpus,duration,team\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n",
    };
    for (int i = 0; i < 2; i++) {
        struct sw_trace t = {0};
        struct sw_error err = {0};
        assert_int_equal(
            sw_trace_parse(headers[i], strlen(headers[i]), SW_TRACE_AUTO, "t.csv", &t, &err), 0);
        assert_int_equal(t.n, 0);
        assert_null(t.jobs);
        sw_trace_free(&t);
    }
}

/* A number longer than the parser's field buffer was cut to its first 255
 * characters and read as another number; it is an error. */
static void test_long_number_field(void **state)
{
    (void)state;
    char text[600] = "submit,gpus,duration,team\n1";
    size_t n = strlen(text);
    memset(text + n, '0', 300); /* 1 followed by 300 zeros: not finite either */
    memcpy(text + n + 300, "0,1,10,ml\n", 11);
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_trace_parse(text, strlen(text), SW_TRACE_CSV, "t.csv", &t, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg,
                        "t.csv:2: field \"submit\": expected a number, got 302 characters");
    sw_trace_free(&t);
}

/* fuzz_spot_trace: {"metadata":{"gap_seconds":0.001},"data":[1,0]} from
 * offset 0.001 at t = 1e7 gave 1e7 itself: the step to the next tick
 * rounded away. The next preemption is strictly after t, always. */
static void test_fuzz_spot_next_preemption_after_t(void **state)
{
    (void)state;
    static const char spot[] = "{\"metadata\":{\"gap_seconds\":0.001},\"data\":[1,0]}";
    struct sw_spot_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_spot_trace_parse(spot, strlen(spot), "spot.json", &t, &err), 0);
    assert_true(sw_spot_trace_next_preemption(&t, 0.001, 1e7) > 1e7);
    for (int k = 0; k < 1000; k++) {
        double offset = k * 0.002 / 1000, now = k * 12345.678;
        double next = sw_spot_trace_next_preemption(&t, offset, now);
        assert_true(next > now && next <= now + 0.002 + 1e-9 * now);
    }
    /* Small times keep their exact answers: tick 1 is the drop. */
    assert_true(sw_spot_trace_next_preemption(&t, 0, 0) == 0.001);
    sw_spot_trace_free(&t);
}

/* A gap so long that the trace's length (ticks x gap) overflows a double
 * cannot place an instance in it (its offsets are infinite): the parser
 * bounds the gap, and every time it reads. */
static void test_spot_trace_too_long(void **state)
{
    (void)state;
    static const char spot[] = "{\"metadata\":{\"gap_seconds\":1e308},\"data\":[1,0]}";
    struct sw_spot_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_spot_trace_parse(spot, strlen(spot), "spot.json", &t, &err), SW_EPARSE);
    assert_string_equal(err.msg, "spot.json: field \"metadata.gap_seconds\": expected a positive "
                                 "number up to 1e+15, got 1e+308");
    sw_spot_trace_free(&t);
    static const char csv_text[] = "submit,gpus,duration,team\n0,1,2e12,ml\n";
    struct sw_trace tr = {0};
    assert_int_equal(sw_trace_parse(csv_text, strlen(csv_text), SW_TRACE_CSV, "t.csv", &tr, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, "t.csv:2: field \"duration\": 2e12 is beyond any real value");
    sw_trace_free(&tr);
}

/* fuzz_trace_csv: a NUL byte inside the name field gave a job named "",
 * which the engine then refuses ("field name is empty") far from the
 * trace. The parser refuses it, naming the line. */
static void test_fuzz_nul_in_field(void **state)
{
    (void)state;
    static const char text[] = "name,submit,gpus,duration,team\n"
                               "a,0,1,10,ml\n"
                               "\0eep-c,5,2,0.5,research\n";
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_trace_parse(text, sizeof(text) - 1, SW_TRACE_CSV, "t.csv", &t, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, "t.csv:3: a NUL byte in the line");
    sw_trace_free(&t);
    static const char header[] = "submit,gpus,dura\0tion,team\n0,1,1,a\n";
    assert_int_equal(sw_trace_parse(header, sizeof(header) - 1, SW_TRACE_CSV, "t.csv", &t, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, "t.csv:1: a NUL byte in the header");
    sw_trace_free(&t);
}

/* What a hub learns runtimes by, the runtime annotation and input sizes;
 * the Alibaba pod's resource shape as its label and its GPU share. */
static void test_features(void **state)
{
    (void)state;
    static const char in[] = "submit,gpus,duration,team,label,expected_runtime,input_gb\n"
                             "0,1,600,ml,bert,500,12.5\n"
                             "5,2,60,ml,,,\n";
    struct sw_trace t = {0};
    struct sw_error err = {0};
    assert_int_equal(sw_trace_parse(in, strlen(in), SW_TRACE_AUTO, "f.csv", &t, &err), 0);
    assert_string_equal(t.jobs[0].label, "bert");
    assert_true(t.jobs[0].expected_runtime == 500 && t.jobs[0].input_gb == 12.5);
    assert_true(t.jobs[1].expected_runtime == 0 && t.jobs[1].input_gb < 0);
    sw_trace_free(&t);
    assert_int_equal(sw_trace_parse(alibaba, strlen(alibaba), SW_TRACE_AUTO, "pods.csv", &t, &err),
                     0);
    assert_string_equal(t.jobs[0].label, "c12000-m16384-g1000");
    assert_true(t.jobs[0].gpu_share == 1.0 && t.jobs[0].input_gb < 0);
    sw_trace_free(&t);
    static const char frac[] =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p,6000,12288,1,460,,LS,Running,0,100,0\n";
    assert_int_equal(sw_trace_parse(frac, strlen(frac), SW_TRACE_AUTO, "pods.csv", &t, &err), 0);
    assert_true(t.jobs[0].gpu_share == 0.46 && t.jobs[0].gpus == 1);
    sw_trace_free(&t);
    /* Bad values name the file, the line and the field. */
    static const char bad[] = "submit,gpus,duration,team,expected_runtime\n0,1,60,ml,soon\n";
    assert_int_equal(sw_trace_parse(bad, strlen(bad), SW_TRACE_AUTO, "b.csv", &t, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "b.csv:2: field \"expected_runtime\""));
    sw_trace_free(&t);
    static const char badm[] =
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p,6000,12288,1,1460,,LS,Running,0,100,0\n";
    assert_int_equal(sw_trace_parse(badm, strlen(badm), SW_TRACE_AUTO, "p.csv", &t, &err),
                     SW_EPARSE);
    assert_non_null(strstr(err.msg, "p.csv:2: field \"gpu_milli\""));
    sw_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_alibaba),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_spot_trace),
        cmocka_unit_test(test_fuzz_empty_trace),
        cmocka_unit_test(test_long_number_field),
        cmocka_unit_test(test_fuzz_spot_next_preemption_after_t),
        cmocka_unit_test(test_spot_trace_too_long),
        cmocka_unit_test(test_fuzz_nul_in_field),
        cmocka_unit_test(test_features),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
