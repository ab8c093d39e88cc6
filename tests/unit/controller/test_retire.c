/* Tests for controller/hub/retire.c: when a finished Job's record may end,
 * and which Jobs without a record need none. Pure: the Jobs are the
 * cache's compact records made from JSON, as the informers make them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/intern.h"
#include "clusters/record.h"
#include "controller/hub/retire.h"

#define UID   "0b7c6c1e-1111-4a4a-9c9c-0123456789ab"
#define OTHER "9f00aa11-2222-4b4b-8d8d-ba9876543210"
#define HOUR  3600000LL

static struct sw_intern *tbl;

/* A compact record of a Job with this uid, annotations (a JSON object's
 * members, or ""), conditions (a JSON array's items, or "") and suspend. */
static struct sw_job_record *job(const char *uid, const char *ann, const char *conds, bool suspend)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"train-7\",\"namespace\":\"team-a\",\"uid\":\"%s\","
             "\"resourceVersion\":\"7\",\"annotations\":{\"spillway.io/burst\":\"auto\"%s%s}},"
             "\"spec\":{\"suspend\":%s},\"status\":{\"conditions\":[%s]}}",
             uid, ann[0] ? "," : "", ann, suspend ? "true" : "false", conds);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    struct sw_job_record *r = NULL;
    struct sw_error err = {0};
    assert_int_equal(sw_job_record_from_json(tbl, o, &r, &err), 0);
    cJSON_Delete(o);
    return r;
}

static const char BURST_DONE[] = "\"spillway.io/state\":\"succeeded\","
                                 "\"spillway.io/mirror\":\"sw-" UID "-2\"";

static struct sw_job_rec rec(enum sw_job_state s, int64_t finished_ms)
{
    struct sw_job_rec r;
    memset(&r, 0, sizeof(r));
    snprintf(r.key, sizeof(r.key), "onprem/team-a/train-7");
    snprintf(r.uid, sizeof(r.uid), UID);
    snprintf(r.mirror, sizeof(r.mirror), "sw-%s-2", UID);
    r.state = s;
    r.finished_ms = finished_ms;
    return r;
}

static int setup(void **state)
{
    (void)state;
    tbl = sw_intern_new();
    return tbl ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sw_intern_free(tbl);
    return 0;
}

/* Kubernetes' own word: a Complete or Failed condition, True. */
static void test_done_by_condition(void **state)
{
    (void)state;
    struct sw_job_record *c = job(UID, "", "{\"type\":\"Complete\",\"status\":\"True\"}", false);
    struct sw_job_record *f = job(UID, "", "{\"type\":\"Failed\",\"status\":\"True\"}", false);
    struct sw_job_record *no = job(UID, "",
                                   "{\"type\":\"Complete\",\"status\":\"False\"},"
                                   "{\"type\":\"Suspended\",\"status\":\"True\"}",
                                   true);
    assert_true(sw_retire_origin_done(c));
    assert_true(sw_retire_origin_done(f));
    assert_false(sw_retire_origin_done(no));
    assert_false(sw_retire_origin_done(NULL));
    sw_job_record_free(tbl, c);
    sw_job_record_free(tbl, f);
    sw_job_record_free(tbl, no);
}

/* A burst origin: suspended for good, its outcome and its own mirror in its
 * annotations. */
static void test_done_by_burst_annotations(void **state)
{
    (void)state;
    struct sw_job_record *ok = job(UID, BURST_DONE, "", true);
    assert_true(sw_retire_origin_done(ok));
    sw_job_record_free(tbl, ok);

    struct sw_job_record *failed = job(
        UID, "\"spillway.io/state\":\"failed\",\"spillway.io/mirror\":\"sw-" UID "-13\"", "", true);
    assert_true(sw_retire_origin_done(failed));
    sw_job_record_free(tbl, failed);

    /* Not finished: running, or blocked. */
    struct sw_job_record *running = job(
        UID, "\"spillway.io/state\":\"running\",\"spillway.io/mirror\":\"sw-" UID "-1\"", "", true);
    assert_false(sw_retire_origin_done(running));
    sw_job_record_free(tbl, running);

    /* No mirror named, or a mirror of another Job: a copy of a finished
     * Job's YAML under a new UID still bursts. */
    struct sw_job_record *nomirror = job(UID, "\"spillway.io/state\":\"succeeded\"", "", true);
    assert_false(sw_retire_origin_done(nomirror));
    sw_job_record_free(tbl, nomirror);
    struct sw_job_record *copy = job(OTHER, BURST_DONE, "", true);
    assert_false(sw_retire_origin_done(copy));
    sw_job_record_free(tbl, copy);

    /* Names that only look like a mirror's. */
    const char *bad[] = {"sw-" UID "-", "sw-" UID "-0", "sw-" UID "-2x", "sw-" UID "2",
                         "xsw-" UID "-2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char ann[256];
        snprintf(ann, sizeof(ann),
                 "\"spillway.io/state\":\"succeeded\",\"spillway.io/mirror\":\"%s\"", bad[i]);
        struct sw_job_record *b = job(UID, ann, "", true);
        assert_false(sw_retire_origin_done(b));
        sw_job_record_free(tbl, b);
    }
}

/* Claimed by a hub (observe.c leaves it alone without a record or proven
 * mirror): its spillway.io/mirror names a mirror of its own UID, whatever
 * its state; a copy under a new UID, or a name that only looks like a
 * mirror's, is not claimed. */
static void test_claimed(void **state)
{
    (void)state;
    const char *states[] = {"dispatching", "running", "succeeded"};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        char ann[256];
        snprintf(ann, sizeof(ann),
                 "\"spillway.io/state\":\"%s\",\"spillway.io/mirror\":\"sw-" UID "-1\"", states[i]);
        struct sw_job_record *r = job(UID, ann, "", true);
        assert_true(sw_retire_origin_claimed(r));
        sw_job_record_free(tbl, r);
    }
    struct sw_job_record *bare = job(UID, "\"spillway.io/mirror\":\"sw-" UID "-3\"", "", false);
    assert_true(sw_retire_origin_claimed(bare));
    sw_job_record_free(tbl, bare);

    struct sw_job_record *none = job(UID, "\"spillway.io/state\":\"blocked\"", "", false);
    assert_false(sw_retire_origin_claimed(none));
    sw_job_record_free(tbl, none);
    struct sw_job_record *copy = job(OTHER, BURST_DONE, "", false);
    assert_false(sw_retire_origin_claimed(copy));
    sw_job_record_free(tbl, copy);
    const char *bad[] = {"sw-" UID "-", "sw-" UID "-0", "sw-" UID "-2x", "xsw-" UID "-2", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char ann[256];
        snprintf(ann, sizeof(ann), "\"spillway.io/mirror\":\"%s\"", bad[i]);
        struct sw_job_record *b = job(UID, ann, "", false);
        assert_false(sw_retire_origin_claimed(b));
        sw_job_record_free(tbl, b);
    }
    assert_false(sw_retire_origin_claimed(NULL));
}

/* Due only after the wait, and only for the record's own Job. */
static void test_check(void **state)
{
    (void)state;
    int64_t fin = 1000 * HOUR, after = 24 * HOUR;
    struct sw_job_rec r = rec(SW_JS_SUCCEEDED, fin);
    struct sw_job_record *o = job(UID, BURST_DONE, "", true);
    assert_int_equal(sw_retire_check(&r, o, fin + after - 1, after), SW_RETIRE_NOT_YET);
    assert_int_equal(sw_retire_check(&r, o, fin + after, after), SW_RETIRE_NOW);
    assert_int_equal(sw_retire_check(&r, NULL, fin + after, after), SW_RETIRE_NOT_YET);

    /* Not finished, or no finish time: never. */
    struct sw_job_rec running = rec(SW_JS_RUNNING, fin);
    assert_int_equal(sw_retire_check(&running, o, fin + 10 * after, after), SW_RETIRE_NOT_YET);
    struct sw_job_rec notime = rec(SW_JS_SUCCEEDED, 0);
    assert_int_equal(sw_retire_check(&notime, o, fin + 10 * after, after), SW_RETIRE_NOT_YET);
    sw_job_record_free(tbl, o);

    /* The origin does not show the outcome (its annotation write was lost):
     * show it first. */
    struct sw_job_record *bare = job(
        UID, "\"spillway.io/state\":\"running\",\"spillway.io/mirror\":\"sw-" UID "-2\"", "", true);
    assert_int_equal(sw_retire_check(&r, bare, fin + after, after), SW_RETIRE_SHOW);
    sw_job_record_free(tbl, bare);

    /* Another Job of the same name: not this record's to end. */
    struct sw_job_record *other =
        job(OTHER, "", "{\"type\":\"Complete\",\"status\":\"True\"}", false);
    assert_int_equal(sw_retire_check(&r, other, fin + after, after), SW_RETIRE_NOT_YET);
    sw_job_record_free(tbl, other);

    /* A delegated or ran-at-home Job: its Complete condition is the proof. */
    struct sw_job_rec home = rec(SW_JS_FAILED, fin);
    home.mirror[0] = '\0';
    struct sw_job_record *failed = job(UID, "", "{\"type\":\"Failed\",\"status\":\"True\"}", false);
    assert_int_equal(sw_retire_check(&home, failed, fin + after, after), SW_RETIRE_NOW);
    sw_job_record_free(tbl, failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_done_by_condition),
        cmocka_unit_test(test_done_by_burst_annotations),
        cmocka_unit_test(test_claimed),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
