/* Tests for controller/hub/annotations.c: every annotation good and bad
 * with its exact message, durations, s3:// locations, GPU shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/record.h"
#include "controller/hub/annotations.h"

#define CREATED 1767225600.0 /* 2026-01-01T00:00:00Z */

/* Parses JSON written with ' for " (easier to read in C strings). */
static cJSON *json(const char *text)
{
    char *s = strdup(text);
    assert_non_null(s);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    cJSON *j = cJSON_Parse(s);
    if (j == NULL)
        fail_msg("bad test JSON: %s", s);
    free(s);
    return j;
}

static int parse(const char *text, struct sw_burst_spec *b, struct sw_error *err)
{
    cJSON *j = json(text);
    sw_error_clear(err);
    int rc = sw_burst_spec_parse(j, CREATED, b, err);
    cJSON_Delete(j);
    return rc;
}

static void test_not_managed(void **state)
{
    (void)state;
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(sw_burst_spec_parse(NULL, CREATED, &b, &err), 0);
    assert_false(b.managed);
    assert_int_equal(b.burst, SW_BURST_NEVER);
    assert_int_equal(b.prio, SW_PRIO_TRAINING);
    assert_true(b.requeue_on_loss);
    assert_int_equal(parse("{}", &b, &err), 0);
    assert_false(b.managed);
    assert_int_equal(parse("null", &b, &err), 0);
    assert_false(b.managed);
    /* Without spillway.io/burst nothing else is read, bad values included. */
    assert_int_equal(parse("{'spillway.io/team': 'Not A Label', 'app': 'x'}", &b, &err), 0);
    assert_false(b.managed);
    assert_string_equal(b.team, "");
    /* "never" is not managed, but its Job asked, so values are checked. */
    assert_int_equal(parse("{'spillway.io/burst': 'never'}", &b, &err), 0);
    assert_false(b.managed);
    assert_int_equal(b.burst, SW_BURST_NEVER);
    assert_int_equal(parse("{'spillway.io/burst': 'never', 'spillway.io/team': 'X'}", &b, &err),
                     SW_EINVAL);
    assert_string_equal(err.msg, "annotation \"spillway.io/team\": value \"X\": expected a "
                                 "DNS-1123 label: 1-63 lowercase letters, digits and '-', "
                                 "starting and ending with a letter or digit");
}

static void test_full(void **state)
{
    (void)state;
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(parse("{'spillway.io/burst': 'cloud-first',"
                           " 'spillway.io/inputs': 's3://datasets/imagenet/train, s3://models',"
                           " 'spillway.io/outputs': 's3://results/run-7/',"
                           " 'spillway.io/deadline': '2026-07-01T18:00:00Z',"
                           " 'spillway.io/max-price': '3.50',"
                           " 'spillway.io/expected-runtime': '2h30m',"
                           " 'spillway.io/checkpoint-interval': '15m',"
                           " 'spillway.io/team': 'vision',"
                           " 'spillway.io/priority': 'production',"
                           " 'spillway.io/on-cluster-loss': 'wait',"
                           " 'spillway.io/future-key': 'ignored',"
                           " 'kubectl.kubernetes.io/last-applied-configuration': '{}'}",
                           &b, &err),
                     0);
    assert_true(b.managed);
    assert_int_equal(b.burst, SW_BURST_CLOUD_FIRST);
    assert_int_equal(b.n_inputs, 2);
    assert_string_equal(b.inputs[0].bucket, "datasets");
    assert_string_equal(b.inputs[0].prefix, "imagenet/train");
    assert_string_equal(b.inputs[1].bucket, "models");
    assert_string_equal(b.inputs[1].prefix, "");
    assert_true(b.has_outputs);
    assert_string_equal(b.outputs.bucket, "results");
    assert_string_equal(b.outputs.prefix, "run-7/");
    assert_true(b.deadline == 1782928800.0);
    assert_true(b.max_price == 3.5);
    assert_true(b.runtime_s == 9000);
    assert_true(b.checkpoint_s == 900);
    assert_string_equal(b.team, "vision");
    assert_int_equal(b.prio, SW_PRIO_PRODUCTION);
    assert_false(b.requeue_on_loss);
}

static void test_defaults(void **state)
{
    (void)state;
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(parse("{'spillway.io/burst': 'auto'}", &b, &err), 0);
    assert_true(b.managed);
    assert_int_equal(b.burst, SW_BURST_AUTO);
    assert_int_equal(b.n_inputs, 0);
    assert_false(b.has_outputs);
    assert_true(b.deadline == 0);
    assert_true(b.max_price == 0);
    assert_true(b.runtime_s == 0);
    assert_true(b.checkpoint_s == 0);
    assert_string_equal(b.team, "");
    assert_int_equal(b.prio, SW_PRIO_TRAINING);
    assert_true(b.requeue_on_loss);
    assert_int_equal(parse("{'spillway.io/burst': 'auto', 'spillway.io/priority': 'best-effort',"
                           " 'spillway.io/on-cluster-loss': 'requeue'}",
                           &b, &err),
                     0);
    assert_int_equal(b.prio, SW_PRIO_BEST_EFFORT);
    assert_true(b.requeue_on_loss);
}

#define BURST "{'spillway.io/burst': 'auto', "
#define DL_EXPECT                                                                                  \
    "expected an RFC 3339 time such as \"2026-07-01T18:00:00Z\" or a duration after the Job's "    \
    "creation such as \"2h30m\""
#define IN_EXPECT  "expected 1 to 4 comma-separated s3://bucket/prefix URIs"
#define DUR_EXPECT "expected a duration such as \"2h30m\", \"45m\" or \"90s\""

static void test_errors_exact(void **state)
{
    (void)state;
    struct {
        const char *j;
        const char *msg;
    } bad[] = {
        {"{'spillway.io/burst': 'sometimes'}",
         "annotation \"spillway.io/burst\": value \"sometimes\": expected auto, never or "
         "cloud-first"},
        {"{'spillway.io/burst': ''}",
         "annotation \"spillway.io/burst\": value \"\": expected auto, never or cloud-first"},
        {"{'spillway.io/burst': true}",
         "annotation \"spillway.io/burst\": expected a string, got a boolean"},
        {"{'spillway.io/burst': 'auto', 'spillway.io/burst': 'never'}",
         "annotation \"spillway.io/burst\": given twice"},
        {"[]", "field \"metadata.annotations\": expected an object, got an array"},
        /* inputs */
        {BURST "'spillway.io/inputs': 's3://ab/x'}",
         "annotation \"spillway.io/inputs\": value \"s3://ab/x\": " IN_EXPECT
         " (input 1: bucket name: expected 3 to 63 characters)"},
        {BURST "'spillway.io/inputs': 's3://a-1/x,'}",
         "annotation \"spillway.io/inputs\": value \"s3://a-1/x,\": " IN_EXPECT
         " (input 2 is empty)"},
        {BURST "'spillway.io/inputs': ''}",
         "annotation \"spillway.io/inputs\": value \"\": " IN_EXPECT " (input 1 is empty)"},
        {BURST "'spillway.io/inputs': 's3://aaa,s3://bbb,s3://ccc,s3://ddd,s3://eee'}",
         "annotation \"spillway.io/inputs\": value \"s3://aaa,s3://bbb,s3://ccc,s3://ddd,"
         "s3://eee\": " IN_EXPECT " (more than 4)"},
        {BURST "'spillway.io/inputs': 's3://data/x, s3://data/x'}",
         "annotation \"spillway.io/inputs\": value \"s3://data/x, s3://data/x\": " IN_EXPECT
         " (input 2 repeats input 1)"},
        {BURST "'spillway.io/inputs': 's3://minio:9000/data'}",
         "annotation \"spillway.io/inputs\": value \"s3://minio:9000/data\": " IN_EXPECT
         " (input 1: a host, port or user is not allowed: the store is the origin region's)"},
        {BURST "'spillway.io/inputs': 'https://data/x'}",
         "annotation \"spillway.io/inputs\": value \"https://data/x\": " IN_EXPECT
         " (input 1: expected it to start with s3://)"},
        {BURST "'spillway.io/inputs': 's3://data/x,s3:///y'}",
         "annotation \"spillway.io/inputs\": value \"s3://data/x,s3:///y\": " IN_EXPECT
         " (input 2: expected a bucket name after s3://)"},
        /* outputs */
        {BURST "'spillway.io/outputs': 's3://Bad_Bucket/x'}",
         "annotation \"spillway.io/outputs\": value \"s3://Bad_Bucket/x\": expected one "
         "s3://bucket/prefix URI (bucket name: expected lowercase letters, digits, '.' and '-')"},
        {BURST "'spillway.io/outputs': 's3://a/x,s3://b/y'}",
         "annotation \"spillway.io/outputs\": value \"s3://a/x,s3://b/y\": expected one "
         "s3://bucket/prefix URI (bucket name: expected 3 to 63 characters)"},
        /* deadline */
        {BURST "'spillway.io/deadline': 'tomorrow'}",
         "annotation \"spillway.io/deadline\": value \"tomorrow\": " DL_EXPECT},
        {BURST "'spillway.io/deadline': '2026-02-30T00:00:00Z'}",
         "annotation \"spillway.io/deadline\": value \"2026-02-30T00:00:00Z\": " DL_EXPECT
         " (day out of range)"},
        {BURST "'spillway.io/deadline': '2026-07-01 18:00'}",
         "annotation \"spillway.io/deadline\": value \"2026-07-01 18:00\": " DL_EXPECT
         " (expected YYYY-MM-DDTHH:MM:SS)"},
        {BURST "'spillway.io/deadline': '2026-07-01T18:00:00'}",
         "annotation \"spillway.io/deadline\": value \"2026-07-01T18:00:00\": " DL_EXPECT
         " (expected a time zone Z or +hh:mm or -hh:mm)"},
        {BURST "'spillway.io/deadline': '1969-12-31T23:59:59Z'}",
         "annotation \"spillway.io/deadline\": value \"1969-12-31T23:59:59Z\": " DL_EXPECT
         " (before 1970)"},
        {BURST "'spillway.io/deadline': '0s'}",
         "annotation \"spillway.io/deadline\": value \"0s\": " DL_EXPECT},
        {BURST "'spillway.io/deadline': '3000000h'}",
         "annotation \"spillway.io/deadline\": value \"3000000h\": " DL_EXPECT
         " (longer than 292 years)"},
        /* max-price */
        {BURST "'spillway.io/max-price': 'abc'}",
         "annotation \"spillway.io/max-price\": value \"abc\": expected a price in dollars per "
         "GPU-hour, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': '$3.50'}",
         "annotation \"spillway.io/max-price\": value \"$3.50\": expected a price in dollars per "
         "GPU-hour, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': '-1'}",
         "annotation \"spillway.io/max-price\": value \"-1\": expected a price in dollars per "
         "GPU-hour, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': '1e3'}",
         "annotation \"spillway.io/max-price\": value \"1e3\": expected a price in dollars per "
         "GPU-hour, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': '3.'}",
         "annotation \"spillway.io/max-price\": value \"3.\": expected a price in dollars per "
         "GPU-hour, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': '0.00'}",
         "annotation \"spillway.io/max-price\": value \"0.00\": expected a price in dollars per "
         "GPU-hour above 0 and at most 10000, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': '10000.01'}",
         "annotation \"spillway.io/max-price\": value \"10000.01\": expected a price in dollars "
         "per GPU-hour above 0 and at most 10000, e.g. \"3.50\""},
        {BURST "'spillway.io/max-price': 3.5}",
         "annotation \"spillway.io/max-price\": expected a string, got a number"},
        /* durations */
        {BURST "'spillway.io/expected-runtime': 'forever'}",
         "annotation \"spillway.io/expected-runtime\": value \"forever\": " DUR_EXPECT},
        {BURST "'spillway.io/expected-runtime': '2d'}",
         "annotation \"spillway.io/expected-runtime\": value \"2d\": " DUR_EXPECT},
        {BURST "'spillway.io/expected-runtime': '9999999999999999h'}",
         "annotation \"spillway.io/expected-runtime\": value \"9999999999999999h\": " DUR_EXPECT
         " (longer than 292 years)"},
        {BURST "'spillway.io/checkpoint-interval': '0s'}",
         "annotation \"spillway.io/checkpoint-interval\": value \"0s\": " DUR_EXPECT},
        {BURST "'spillway.io/checkpoint-interval': '10m10m'}",
         "annotation \"spillway.io/checkpoint-interval\": value \"10m10m\": " DUR_EXPECT},
        /* team, priority, on-cluster-loss */
        {BURST "'spillway.io/team': 'ML_Team'}",
         "annotation \"spillway.io/team\": value \"ML_Team\": expected a DNS-1123 label: 1-63 "
         "lowercase letters, digits and '-', starting and ending with a letter or digit"},
        {BURST "'spillway.io/team': '-ml'}",
         "annotation \"spillway.io/team\": value \"-ml\": expected a DNS-1123 label: 1-63 "
         "lowercase letters, digits and '-', starting and ending with a letter or digit"},
        {BURST "'spillway.io/priority': 'urgent'}",
         "annotation \"spillway.io/priority\": value \"urgent\": expected best-effort, "
         "development, training or production"},
        {BURST "'spillway.io/on-cluster-loss': 'retry'}",
         "annotation \"spillway.io/on-cluster-loss\": value \"retry\": expected requeue or wait"},
        /* the value is quoted safely */
        {BURST "'spillway.io/on-cluster-loss': 'a\\'b\\\\c\\nd'}",
         "annotation \"spillway.io/on-cluster-loss\": value \"a\\\"b\\\\c\\x0ad\": expected "
         "requeue or wait"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_burst_spec b;
        struct sw_error err;
        int rc = parse(bad[i].j, &b, &err);
        if (rc != SW_EINVAL || strcmp(err.msg, bad[i].msg) != 0)
            fail_msg("case %zu: rc %d, message\n  %s\nexpected\n  %s", i, rc, err.msg, bad[i].msg);
    }
}

static void test_long_value_cut(void **state)
{
    (void)state;
    char j[600], want[600], v[300];
    memset(v, 'x', 150);
    v[150] = '\0';
    snprintf(j, sizeof(j), BURST "'spillway.io/team': '%s'}", v);
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(parse(j, &b, &err), SW_EINVAL);
    snprintf(want, sizeof(want), "annotation \"spillway.io/team\": value \"%.100s...\": expected",
             v);
    assert_memory_equal(err.msg, want, strlen(want));
    /* A cut never splits a UTF-8 character: 99 x then "é" (2 bytes). */
    memset(v, 'x', 99);
    memcpy(v + 99, "\xc3\xa9yyyy", 7);
    snprintf(j, sizeof(j), BURST "'spillway.io/team': '%s'}", v);
    assert_int_equal(parse(j, &b, &err), SW_EINVAL);
    snprintf(want, sizeof(want), "annotation \"spillway.io/team\": value \"%.99s...\": expected",
             v);
    assert_memory_equal(err.msg, want, strlen(want));
}

static void test_duration(void **state)
{
    (void)state;
    struct {
        const char *s;
        double want;
    } good[] = {
        {"2h30m", 9000},
        {"45m", 2700},
        {"90s", 90},
        {"1.5h", 5400},
        {"500ms", 0.5},
        {"1h30m15s500ms", 5415.5},
        {"1m30.5s", 90.5},
        {"1h0m0s", 3600},
        {"0.5s", 0.5},
        {"0h1s", 1},
        {"007s", 7},
        {"2562047h", 9223369200.0},
        {"9223372036s", 9223372036.0},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        double d = -1;
        if (sw_duration_parse(good[i].s, &d) != 0 || d != good[i].want)
            fail_msg("\"%s\": got %.17g, want %.17g", good[i].s, d, good[i].want);
    }
    /* Refused: empty, zero, repeated or unordered units (unlike Go), no
     * unit, unknown units, signs, spaces, bare fractions, exponents. */
    const char *bad[] = {"",       "0",    "0s",  "0h0m", "1h1h", "30m1h",      "1s1ms1s",
                         "1",      "h",    "1.h", ".5h",  "1.5",  "-1s",        "+1s",
                         " 1s",    "1s ",  "1d",  "1us",  "1ns",  "1\xc2\xb5s", "1H",
                         "1h 30m", "1e3s", "ms",  "1mss", "1sm",  "1.5.5s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double d = 42;
        if (sw_duration_parse(bad[i], &d) != SW_EINVAL || d != 42)
            fail_msg("\"%s\" was not refused with SW_EINVAL", bad[i]);
    }
    const char *too_long[] = {"2562048h", "9223372037s", "99999999999999999999h",
                              "2562047h47m16.855s"};
    for (size_t i = 0; i < sizeof(too_long) / sizeof(too_long[0]); i++) {
        double d = 42;
        if (sw_duration_parse(too_long[i], &d) != SW_ERANGE || d != 42)
            fail_msg("\"%s\" was not refused with SW_ERANGE", too_long[i]);
    }
    double d;
    assert_int_equal(sw_duration_parse(NULL, &d), SW_EINVAL);
}

static void test_deadline(void **state)
{
    (void)state;
    struct {
        const char *v;
        double want;
    } good[] = {
        {"2026-07-01T18:00:00Z", 1782928800.0},
        {"2026-07-01T20:00:00+02:00", 1782928800.0},
        {"2026-07-01T17:30:00-00:30", 1782928800.0},
        {"2026-07-01T18:00:00.5Z", 1782928800.5},
        {"2h30m", CREATED + 9000},
        {"90s", CREATED + 90},
        {"1.5h", CREATED + 5400},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char j[200];
        snprintf(j, sizeof(j), BURST "'spillway.io/deadline': '%s'}", good[i].v);
        struct sw_burst_spec b;
        struct sw_error err;
        if (parse(j, &b, &err) != 0 || b.deadline != good[i].want)
            fail_msg("\"%s\": got %.17g (%s), want %.17g", good[i].v, b.deadline, err.msg,
                     good[i].want);
    }
    /* A relative deadline needs the Job's creation time. */
    cJSON *j = json(BURST "'spillway.io/deadline': '2h'}");
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(sw_burst_spec_parse(j, 0, &b, &err), SW_EINVAL);
    assert_string_equal(err.msg, "annotation \"spillway.io/deadline\": value \"2h\": " DL_EXPECT
                                 " (the Job's creation time is unknown)");
    /* An absolute one does not. */
    cJSON_Delete(j);
    j = json(BURST "'spillway.io/deadline': '2026-07-01T18:00:00Z'}");
    assert_int_equal(sw_burst_spec_parse(j, 0, &b, &err), 0);
    assert_true(b.deadline == 1782928800.0);
    cJSON_Delete(j);
}

static void test_prices(void **state)
{
    (void)state;
    struct {
        const char *v;
        double want;
    } good[] = {{"3.50", 3.5}, {"3", 3}, {"0.01", 0.01}, {"10000", 10000}, {"007.5", 7.5}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char j[200];
        snprintf(j, sizeof(j), BURST "'spillway.io/max-price': '%s'}", good[i].v);
        struct sw_burst_spec b;
        struct sw_error err;
        if (parse(j, &b, &err) != 0 || b.max_price != good[i].want)
            fail_msg("\"%s\": got %.17g (%s)", good[i].v, b.max_price, err.msg);
    }
}

static void test_inputs(void **state)
{
    (void)state;
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(parse(BURST "'spillway.io/inputs': 's3://aaa/1,s3://bbb/2 ,  s3://ccc, "
                                 "s3://d.d-d/deep/er/'}",
                           &b, &err),
                     0);
    assert_int_equal(b.n_inputs, 4);
    assert_string_equal(b.inputs[0].bucket, "aaa");
    assert_string_equal(b.inputs[0].prefix, "1");
    assert_string_equal(b.inputs[1].bucket, "bbb");
    assert_string_equal(b.inputs[1].prefix, "2");
    assert_string_equal(b.inputs[2].bucket, "ccc");
    assert_string_equal(b.inputs[2].prefix, "");
    assert_string_equal(b.inputs[3].bucket, "d.d-d");
    assert_string_equal(b.inputs[3].prefix, "deep/er/");
    /* The same bucket with different prefixes is two inputs. */
    assert_int_equal(parse(BURST "'spillway.io/inputs': 's3://aaa/x,s3://aaa/y'}", &b, &err), 0);
    assert_int_equal(b.n_inputs, 2);

    /* Items longer than any location name the part that is too long. */
    char j[1024], big[800];
    memset(big, 'p', 700);
    big[700] = '\0';
    snprintf(j, sizeof(j), BURST "'spillway.io/inputs': 's3://aaa/x,s3://abc/%s'}", big);
    assert_int_equal(parse(j, &b, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "...\": " IN_EXPECT " (input 2: prefix: expected at most "
                                    "511 bytes)"));
    snprintf(j, sizeof(j), BURST "'spillway.io/inputs': 's3://%s'}", big);
    assert_int_equal(parse(j, &b, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "...\": " IN_EXPECT " (input 1: bucket name: expected 3 to 63 "
                                    "characters)"));
}

static void test_s3_uri(void **state)
{
    (void)state;
    struct sw_s3_uri u;
    const char *why = NULL;
    char buf[700];
    assert_int_equal(sw_s3_uri_parse("s3://my-bucket.v2/a b/c", &u, &why), 0);
    assert_string_equal(u.bucket, "my-bucket.v2");
    assert_string_equal(u.prefix, "a b/c");
    assert_int_equal(sw_s3_uri_format(&u, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "s3://my-bucket.v2/a b/c");
    assert_int_equal(sw_s3_uri_parse("s3://abc", &u, &why), 0);
    assert_int_equal(sw_s3_uri_format(&u, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "s3://abc/");
    assert_int_equal(sw_s3_uri_format(&u, buf, 6), SW_ETOOBIG);
    assert_string_equal(buf, "s3://");

    char b63[80], p511[600];
    memset(b63, 'b', 63);
    b63[63] = '\0';
    snprintf(buf, sizeof(buf), "s3://%s/x", b63);
    assert_int_equal(sw_s3_uri_parse(buf, &u, &why), 0);
    assert_string_equal(u.bucket, b63);
    memset(p511, 'p', 511);
    p511[511] = '\0';
    snprintf(buf, sizeof(buf), "s3://abc/%s", p511);
    assert_int_equal(sw_s3_uri_parse(buf, &u, &why), 0);
    assert_int_equal(strlen(u.prefix), 511);

    struct {
        const char *s;
        const char *why;
    } bad[] = {
        {"S3://abc/x", "expected it to start with s3://"},
        {"s3://ab", "bucket name: expected 3 to 63 characters"},
        {"s3://abC", "bucket name: expected lowercase letters, digits, '.' and '-'"},
        {"s3://-abc", "bucket name: expected a letter or digit at the start and at the end"},
        {"s3://abc./x", "bucket name: expected a letter or digit at the start and at the end"},
        {"s3://a..b", "bucket name: \"..\" is not allowed"},
        {"s3://192.168.5.4/x", "bucket name: an IP address is not allowed"},
        {"s3://xn--abc", "bucket name: the prefix \"xn--\" and the suffixes \"-s3alias\" and "
                         "\"--ol-s3\" are reserved"},
        {"s3://abc-s3alias", "bucket name: the prefix \"xn--\" and the suffixes \"-s3alias\" "
                             "and \"--ol-s3\" are reserved"},
        {"s3://user@abc/x", "a host, port or user is not allowed: the store is the origin "
                            "region's"},
        {"s3://abc//x", "prefix: expected no '/' at its start"},
        {"s3://abc/x\ty", "prefix: control characters are not allowed"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        if (sw_s3_uri_parse(bad[i].s, &u, &why) != SW_EINVAL || why == NULL ||
            strcmp(why, bad[i].why) != 0)
            fail_msg("\"%s\": why \"%s\", expected \"%s\"", bad[i].s, why ? why : "(none)",
                     bad[i].why);
        assert_string_equal(u.bucket, "");
    }
    memcpy(buf, "s3://", 5);
    memset(buf + 5, 'b', 64);
    buf[69] = '\0';
    assert_int_equal(sw_s3_uri_parse(buf, &u, &why), SW_EINVAL);
    assert_string_equal(why, "bucket name: expected 3 to 63 characters");
    snprintf(buf, sizeof(buf), "s3://abc/%sp", p511);
    assert_int_equal(sw_s3_uri_parse(buf, &u, NULL), SW_EINVAL);
    /* 1.2.3 is not an address: a valid (odd) bucket name. */
    assert_int_equal(sw_s3_uri_parse("s3://1.2.3", &u, &why), 0);
}

/* A Job with the given spec body (without the braces). */
static cJSON *job(const char *spec)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': {'name': 'train', "
             "'namespace': 'default'}, 'spec': {%s}}",
             spec);
    return json(buf);
}

#define GPU(n)  "'resources': {'requests': {'nvidia.com/gpu': " n "}}"
#define LIM(n)  "'resources': {'limits': {'nvidia.com/gpu': " n "}}"
#define CTRS(c) "'template': {'spec': {'containers': [" c "]}}"

/* The shape read from the cache's view of the Job (clusters/record.h). */
static int shape_of_view(const cJSON *j, int *pods, int *gpus, struct sw_error *err)
{
    struct sw_intern *t = sw_intern_new();
    struct sw_job_record *r = NULL;
    int rc = sw_job_record_from_json(t, j, &r, err);
    if (rc == 0) {
        cJSON *v = sw_job_record_json(r);
        rc = sw_job_gpu_shape(v, pods, gpus, err);
        cJSON_Delete(v);
    }
    sw_job_record_free(t, r);
    sw_intern_free(t);
    return rc;
}

static void test_gpu_shape(void **state)
{
    (void)state;
    struct {
        const char *spec;
        int pods, gpus;
    } good[] = {
        /* containers add up; a limit stands for a missing request */
        {"'parallelism': 4, " CTRS("{'name': 'a', " GPU("'2'") "}, {'name': 'b', " LIM("1") "}"), 4,
         3},
        /* parallelism defaults to 1; completions caps it */
        {CTRS("{" GPU("8") "}"), 1, 8},
        {"'parallelism': 5, 'completions': 2, " CTRS("{" GPU("1") "}"), 2, 1},
        {"'parallelism': 2, 'completions': 10, " CTRS("{" GPU("1") "}"), 2, 1},
        {"'parallelism': null, 'completions': null, " CTRS("{" GPU("1") "}"), 1, 1},
        {"'parallelism': 0, " CTRS("{" GPU("1") "}"), 0, 1},
        /* no GPU is not an error; other resources are ignored */
        {CTRS("{'resources': {'requests': {'cpu': '4'}}}"), 1, 0},
        {CTRS("{'name': 'x'}"), 1, 0},
        /* a request wins over a limit */
        {CTRS("{'resources': {'requests': {'nvidia.com/gpu': 2}, 'limits': {'nvidia.com/gpu': "
              "4}}}"),
         1, 2},
        /* a plain init container runs alone: the larger of it and the sum */
        {"'template': {'spec': {'initContainers': [{" GPU("8") "}], 'containers': [{" GPU(
             "2") "}]}}",
         1, 8},
        {"'template': {'spec': {'initContainers': [{" GPU("1") "}], 'containers': [{" GPU(
             "2") "}, {" GPU("2") "}]}}",
         1, 4},
        /* a sidecar runs with what starts after it */
        {"'template': {'spec': {'initContainers': [{'restartPolicy': 'Always', " GPU(
             "1") "}, {" GPU("4") "}], 'containers': [{" GPU("2") "}]}}",
         1, 5},
        {"'template': {'spec': {'initContainers': [{" GPU(
             "2") "}, {'restartPolicy': 'Always', " GPU("1") "}], 'containers': [{" GPU("2") "}]}}",
         1, 3},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cJSON *j = job(good[i].spec);
        int pods = -1, gpus = -1;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_job_gpu_shape(j, &pods, &gpus, &err);
        if (rc != 0 || pods != good[i].pods || gpus != good[i].gpus)
            fail_msg("case %zu: rc %d (%s), pods %d gpus %d, want %d x %d", i, rc, err.msg, pods,
                     gpus, good[i].pods, good[i].gpus);
        pods = gpus = -1;
        rc = shape_of_view(j, &pods, &gpus, &err);
        cJSON_Delete(j);
        if (rc != 0 || pods != good[i].pods || gpus != good[i].gpus)
            fail_msg("case %zu, cached: rc %d (%s), pods %d gpus %d, want %d x %d", i, rc, err.msg,
                     pods, gpus, good[i].pods, good[i].gpus);
    }

    struct {
        const char *spec;
        const char *msg;
    } bad[] = {
        {"'parallelism': 1",
         "Job default/train: field \"spec.template\": expected a pod template, got nothing"},
        {"'template': []",
         "Job default/train: field \"spec.template\": expected a pod template, got an array"},
        {"'template': {}",
         "Job default/train: field \"spec.template.spec\": expected a pod spec, got nothing"},
        {"'template': {'spec': {}}",
         "Job default/train: field \"spec.template.spec.containers\": expected a list of at least "
         "one container, got nothing"},
        {"'template': {'spec': {'containers': []}}",
         "Job default/train: field \"spec.template.spec.containers\": expected a list of at least "
         "one container, got an empty list"},
        {"'template': {'spec': {'containers': [{}], 'initContainers': {}}}",
         "Job default/train: field \"spec.template.spec.initContainers\": expected a list, got "
         "an object"},
        {CTRS("{}, 7"),
         "Job default/train: field \"spec.template.spec.containers[1]\": expected an object, got "
         "a number"},
        {CTRS("{}, {" GPU("'1.5'") "}"),
         "Job default/train: field \"spec.template.spec.containers[1].resources.requests."
         "nvidia.com/gpu\": expected a whole number of GPUs from 0 to 1024, got \"1.5\""},
        {CTRS("{" LIM("-1") "}"),
         "Job default/train: field \"spec.template.spec.containers[0].resources.limits."
         "nvidia.com/gpu\": expected a whole number of GPUs from 0 to 1024, got -1"},
        {CTRS("{" GPU("'1k'") "}"),
         "Job default/train: field \"spec.template.spec.containers[0].resources.requests."
         "nvidia.com/gpu\": expected a whole number of GPUs from 0 to 1024, got \"1k\""},
        {"'template': {'spec': {'initContainers': [{" GPU("true") "}], 'containers': [{}]}}",
         "Job default/train: field \"spec.template.spec.initContainers[0].resources.requests."
         "nvidia.com/gpu\": expected a whole number of GPUs from 0 to 1024, got a boolean"},
        {CTRS("{" GPU("1000") "}, {" GPU("1000") "}"),
         "Job default/train: field \"spec.template.spec\": expected at most 1024 GPUs per pod, "
         "got 2000"},
        {"'parallelism': '4', " CTRS("{}"),
         "Job default/train: field \"spec.parallelism\": expected a whole number from 0 to "
         "2147483647, got \"4\""},
        {"'parallelism': -1, " CTRS("{}"),
         "Job default/train: field \"spec.parallelism\": expected a whole number from 0 to "
         "2147483647, got -1"},
        {"'completions': 1.5, " CTRS("{}"),
         "Job default/train: field \"spec.completions\": expected a whole number from 0 to "
         "2147483647, got 1.5"},
        {"'parallelism': 2000000, " CTRS("{}"),
         "Job default/train: field \"spec.parallelism\": expected at most 1000000 pods, got "
         "2000000"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *j = job(bad[i].spec);
        int pods = -1, gpus = -1;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_job_gpu_shape(j, &pods, &gpus, &err);
        if (rc != SW_EINVAL || strcmp(err.msg, bad[i].msg) != 0)
            fail_msg("case %zu: rc %d, message\n  %s\nexpected\n  %s", i, rc, err.msg, bad[i].msg);
        assert_int_equal(pods, -1); /* untouched on error */
        /* The cache's view is refused too (its message names the field). */
        rc = shape_of_view(j, &pods, &gpus, &err);
        cJSON_Delete(j);
        if (rc != SW_EINVAL)
            fail_msg("case %zu, cached: rc %d, pods %d gpus %d", i, rc, pods, gpus);
    }

    /* A Job without a name or namespace is still named. */
    cJSON *j = json("{'spec': {}}");
    int pods, gpus;
    struct sw_error err;
    assert_int_equal(sw_job_gpu_shape(j, &pods, &gpus, &err), SW_EINVAL);
    assert_string_equal(err.msg, "Job (no name): field \"spec.template\": expected a pod "
                                 "template, got nothing");
    cJSON_Delete(j);
    j = json("[1]");
    assert_int_equal(sw_job_gpu_shape(j, &pods, &gpus, &err), SW_EINVAL);
    assert_string_equal(err.msg, "Job: expected an object, got an array");
    cJSON_Delete(j);
}

#define MIG(p, n) "'resources': {'limits': {'nvidia.com/mig-" p "': " n "}}"

static int ask_of(const char *spec, int share_milli, struct sw_gpu_ask *a, struct sw_error *err)
{
    cJSON *j = job(spec);
    struct sw_burst_spec b;
    memset(&b, 0, sizeof(b));
    b.gpu_milli = share_milli;
    sw_error_clear(err);
    int rc = sw_job_gpu_ask(j, &b, a, err);
    cJSON_Delete(j);
    return rc;
}

/* MIG slices and shares of a GPU: what the engine is given, and bad
 * requests named by Job and field. */
static void test_gpu_ask(void **state)
{
    (void)state;
    struct sw_gpu_ask a;
    struct sw_error err;
    /* Slices of one profile, summed as the scheduler sums a pod's request. */
    assert_int_equal(
        ask_of("'parallelism': 2, " CTRS("{" MIG("1g.10gb", "'2'") "}, {" MIG("1g.10gb", "1") "}"),
               0, &a, &err),
        0);
    assert_int_equal(a.pods, 2);
    assert_int_equal(a.gpus_per_pod, 3);
    assert_string_equal(a.mig_profile, "1g.10gb");
    assert_int_equal(a.gpu_milli, 0);
    /* A share of the one GPU of each pod. */
    assert_int_equal(ask_of(CTRS("{" GPU("1") "}"), 250, &a, &err), 0);
    assert_int_equal(a.gpus_per_pod, 1);
    assert_int_equal(a.gpu_milli, 250);
    assert_string_equal(a.mig_profile, "");
    /* A share of 1 is a whole GPU. */
    assert_int_equal(ask_of(CTRS("{" GPU("1") "}"), 1000, &a, &err), 0);
    assert_int_equal(a.gpu_milli, 0);
    /* Whole GPUs as before. */
    assert_int_equal(ask_of(CTRS("{" GPU("4") "}"), 0, &a, &err), 0);
    assert_int_equal(a.gpus_per_pod, 4);
    assert_string_equal(a.mig_profile, "");

    assert_int_equal(ask_of(CTRS("{'name': 'a'}, {" MIG("big", "1") "}"), 0, &a, &err), SW_EINVAL);
    assert_string_equal(err.msg,
                        "Job default/train: field \"spec.template.spec.containers[1].resources."
                        "limits\": resource \"nvidia.com/mig-big\": expected a MIG profile as "
                        "NVIDIA's device plugin names it, e.g. \"nvidia.com/mig-1g.10gb\"");
    assert_int_equal(
        ask_of(CTRS("{" MIG("1g.10gb", "1") "}, {" MIG("3g.40gb", "1") "}"), 0, &a, &err),
        SW_EINVAL);
    assert_string_equal(err.msg,
                        "Job default/train: field \"spec.template.spec.containers[1].resources."
                        "limits\": resource \"nvidia.com/mig-3g.40gb\": expected one MIG profile "
                        "per pod, got 1g.10gb too");
    assert_int_equal(ask_of(CTRS("{" MIG("1g.10gb", "1") "}, {" GPU("1") "}"), 0, &a, &err),
                     SW_EINVAL);
    assert_string_equal(err.msg, "Job default/train: field \"spec.template.spec\": expected MIG "
                                 "slices (nvidia.com/mig-1g.10gb) or nvidia.com/gpu, got both");
    assert_int_equal(ask_of(CTRS("{" MIG("1g.10gb", "'x'") "}"), 0, &a, &err), SW_EINVAL);
    assert_string_equal(err.msg,
                        "Job default/train: field \"spec.template.spec.containers[0].resources."
                        "limits.nvidia.com/mig-1g.10gb\": expected a whole number of MIG slices "
                        "from 0 to 1024, got \"x\"");
    assert_int_equal(ask_of(CTRS("{" MIG("1g.10gb", "1") "}"), 500, &a, &err), SW_EINVAL);
    assert_string_equal(err.msg, "Job default/train: annotation \"spillway.io/gpu-share\": a "
                                 "share of a GPU cannot be given with MIG slices "
                                 "(nvidia.com/mig-1g.10gb)");
    assert_int_equal(ask_of(CTRS("{" GPU("2") "}"), 500, &a, &err), SW_EINVAL);
    assert_string_equal(err.msg, "Job default/train: annotation \"spillway.io/gpu-share\": a "
                                 "share of a GPU is for pods asking nvidia.com/gpu: 1, got 2 per "
                                 "pod");
}

/* spillway.io/gpu-share: above 0, at most 1, to the thousandth. */
static void test_gpu_share(void **state)
{
    (void)state;
    struct sw_burst_spec b;
    struct sw_error err;
    assert_int_equal(
        parse("{'spillway.io/burst': 'auto', 'spillway.io/gpu-share': '0.25'}", &b, &err), 0);
    assert_int_equal(b.gpu_milli, 250);
    assert_int_equal(parse("{'spillway.io/burst': 'auto', 'spillway.io/gpu-share': '1'}", &b, &err),
                     0);
    assert_int_equal(b.gpu_milli, 1000);
    assert_int_equal(parse("{'spillway.io/burst': 'auto'}", &b, &err), 0);
    assert_int_equal(b.gpu_milli, 0);
    static const char expect[] = "expected a share of one GPU above 0 and at most 1, e.g. \"0.25\"";
    struct {
        const char *v, *why;
    } bad[] = {
        {"0", " (outside (0, 1])"},
        {"1.5", " (outside (0, 1])"},
        {"0.0005", " (finer than a thousandth)"},
        {"-0.5", ""},
        {"1/4", ""},
        {"25%", ""},
        {".5", ""},
        {"0.", ""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[200], want[300];
        snprintf(text, sizeof(text), "{'spillway.io/burst': 'auto', 'spillway.io/gpu-share': '%s'}",
                 bad[i].v);
        assert_int_equal(parse(text, &b, &err), SW_EINVAL);
        snprintf(want, sizeof(want), "annotation \"spillway.io/gpu-share\": value \"%s\": %s%s",
                 bad[i].v, expect, bad[i].why);
        assert_string_equal(err.msg, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_managed),    cmocka_unit_test(test_full),
        cmocka_unit_test(test_defaults),       cmocka_unit_test(test_errors_exact),
        cmocka_unit_test(test_long_value_cut), cmocka_unit_test(test_duration),
        cmocka_unit_test(test_deadline),       cmocka_unit_test(test_prices),
        cmocka_unit_test(test_inputs),         cmocka_unit_test(test_s3_uri),
        cmocka_unit_test(test_gpu_shape),      cmocka_unit_test(test_gpu_ask),
        cmocka_unit_test(test_gpu_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
