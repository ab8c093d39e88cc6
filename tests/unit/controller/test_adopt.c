/* Tests for controller/hub/adopt.c: a mirror read from its labels, the
 * decision to re-derive a record from it, and the record rewritten. Pure:
 * no cluster, no Redis. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "controller/hub/adopt.h"
#include "controller/hub/mirror.h"

#define UID "0b7c6c1e-1111-4a4a-9c9c-0123456789ab"

static struct sw_job_rec rec(enum sw_job_state s, int attempt, const char *target)
{
    struct sw_job_rec r;
    memset(&r, 0, sizeof(r));
    snprintf(r.key, sizeof(r.key), "onprem/team-a/train-7");
    snprintf(r.cluster, sizeof(r.cluster), "onprem");
    snprintf(r.ns, sizeof(r.ns), "team-a");
    snprintf(r.name, sizeof(r.name), "train-7");
    snprintf(r.uid, sizeof(r.uid), UID);
    r.state = s;
    r.attempt = attempt;
    snprintf(r.target_cluster, sizeof(r.target_cluster), "%s", target);
    return r;
}

static struct sw_adopt_mirror mir(const char *cluster, int attempt, bool deleting)
{
    struct sw_adopt_mirror m;
    memset(&m, 0, sizeof(m));
    snprintf(m.cluster, sizeof(m.cluster), "%s", cluster);
    snprintf(m.name, sizeof(m.name), "sw-%s-%d", UID, attempt);
    snprintf(m.ns, sizeof(m.ns), "team-a");
    snprintf(m.origin_uid, sizeof(m.origin_uid), UID);
    snprintf(m.origin_cluster, sizeof(m.origin_cluster), "onprem");
    snprintf(m.origin_ns, sizeof(m.origin_ns), "team-a");
    m.attempt = attempt;
    m.deleting = deleting;
    return m;
}

/* The mirror as mirror.c builds it, read back by adoption. */
static void test_read_what_mirror_writes(void **state)
{
    (void)state;
    struct sw_job_rec r = rec(SW_JS_DISPATCHING, 2, "cloud-spot");
    snprintf(r.target_pool, sizeof(r.target_pool), "spot-h100");
    snprintf(r.target_region, sizeof(r.target_region), "us-east-1");
    snprintf(r.capacity, sizeof(r.capacity), "spot");
    snprintf(r.team, sizeof(r.team), "vision");
    snprintf(r.summary, sizeof(r.summary), "burst to cloud-spot (spot): $8.82 expected");
    r.gpus = 4;
    r.price_gpu_h = 2.5;
    cJSON *origin = cJSON_Parse("{\"metadata\":{\"name\":\"train-7\",\"namespace\":\"team-a\"},"
                                "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
                                "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
    assert_non_null(origin);
    char name[64];
    sw_mirror_name(r.uid, r.attempt, name, sizeof(name));
    cJSON *m = sw_mirror_build(origin, &r, name, NULL, 9, true, NULL, NULL, NULL);
    assert_non_null(m);
    struct sw_adopt_mirror am;
    assert_int_equal(sw_adopt_mirror_read(m, "cloud-spot", &am), 0);
    assert_string_equal(am.cluster, "cloud-spot");
    assert_string_equal(am.name, name);
    assert_string_equal(am.origin_uid, UID);
    assert_string_equal(am.ns, "team-a");
    assert_string_equal(am.origin_cluster, "onprem");
    assert_string_equal(am.origin_ns, "team-a");
    assert_int_equal(am.attempt, 2);
    assert_false(am.deleting);
    assert_string_equal(am.pool, "spot-h100");
    assert_string_equal(am.region, "us-east-1");
    assert_string_equal(am.capacity, "spot");
    assert_string_equal(am.team, "vision");
    assert_int_equal(am.gpus, 4);
    assert_true(am.price_gpu_h == 2.5);
    assert_string_equal(am.summary, "burst to cloud-spot (spot): $8.82 expected");

    /* Without the placement annotation (a mirror of an older hub): the
     * region from its environment, the capacity from its node selector. */
    cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "metadata"), "annotations");
    cJSON_DeleteItemFromObject(ann, SW_ANN_PLACEMENT);
    cJSON_AddStringToObject(cJSON_GetObjectItem(m, "metadata"), "deletionTimestamp",
                            "2026-01-01T00:00:00Z");
    assert_int_equal(sw_adopt_mirror_read(m, "cloud-spot", &am), 0);
    assert_string_equal(am.pool, "");
    assert_string_equal(am.region, "us-east-1");
    assert_string_equal(am.capacity, "spot");
    assert_true(am.deleting);
    cJSON_Delete(m);
    cJSON_Delete(origin);
}

static void test_read_not_a_mirror(void **state)
{
    (void)state;
    struct sw_adopt_mirror am;
    static const char *jobs[] = {
        "{\"metadata\":{\"name\":\"plain\"}}",
        "{\"metadata\":{\"name\":\"m\",\"labels\":{\"spillway.io/origin-uid\":\"u\"}}}",
        "{\"metadata\":{\"name\":\"m\",\"labels\":{\"spillway.io/origin-uid\":\"u\","
        "\"spillway.io/attempt\":\"0\"}}}",
        "{\"metadata\":{\"name\":\"m\",\"labels\":{\"spillway.io/origin-uid\":\"u\","
        "\"spillway.io/attempt\":\"2x\"}}}",
        "{\"metadata\":{\"name\":\"m\",\"labels\":{\"spillway.io/origin-uid\":\"\","
        "\"spillway.io/attempt\":\"1\"}}}",
    };
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        cJSON *j = cJSON_Parse(jobs[i]);
        assert_non_null(j);
        assert_int_equal(sw_adopt_mirror_read(j, "c", &am), SW_ENOENT);
        cJSON_Delete(j);
    }
    /* A bad placement annotation is ignored, not trusted. */
    cJSON *j = cJSON_Parse("{\"metadata\":{\"name\":\"m\",\"labels\":{\"spillway.io/origin-uid\":"
                           "\"u\",\"spillway.io/attempt\":\"3\"},\"annotations\":{"
                           "\"spillway.io/placement\":\"{not json\"}}}");
    assert_int_equal(sw_adopt_mirror_read(j, "c", &am), 0);
    assert_int_equal(am.attempt, 3);
    assert_string_equal(am.capacity, "owned");
    cJSON_Delete(j);
}

static void test_decide(void **state)
{
    (void)state;
    size_t at = 99;
    int floor = 0;
    struct sw_adopt_mirror one[] = {mir("cloud-spot", 1, false)};

    /* A record lost altogether: the scan makes a fresh one (observed, attempt 0). */
    struct sw_job_rec r = rec(SW_JS_OBSERVED, 0, "");
    assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_MIRROR);
    assert_int_equal(at, 0);
    /* Writes lost back to a state before the mirror, same attempt. */
    static const enum sw_job_state before[] = {SW_JS_OBSERVED, SW_JS_BLOCKED, SW_JS_DECIDED,
                                               SW_JS_DATA_READY};
    for (size_t i = 0; i < 4; i++) {
        r = rec(before[i], 1, "cloud-ondemand");
        assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_MIRROR);
    }
    /* The intent was kept: dispatch finds its own mirror by name; nothing to adopt. */
    r = rec(SW_JS_DISPATCHING, 1, "cloud-spot");
    assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_NONE);
    r = rec(SW_JS_RUNNING, 1, "cloud-spot");
    assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_NONE);
    /* The same attempt recorded for another cluster: the mirror is what exists. */
    r = rec(SW_JS_DISPATCHING, 1, "cloud-ondemand");
    assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_MIRROR);
    /* Terminal records are left alone. */
    r = rec(SW_JS_SUCCEEDED, 0, "");
    assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_NONE);
    r = rec(SW_JS_FAILED, 0, "");
    assert_int_equal(sw_adopt_decide(&r, one, 1, &at, &floor), SW_ADOPT_NONE);
    /* Another origin's mirror (same name of Job, other UID) proves nothing. */
    r = rec(SW_JS_OBSERVED, 0, "");
    struct sw_adopt_mirror other = mir("cloud-spot", 1, false);
    snprintf(other.origin_uid, sizeof(other.origin_uid), "another-uid");
    assert_int_equal(sw_adopt_decide(&r, &other, 1, &at, &floor), SW_ADOPT_NONE);
    assert_int_equal(sw_adopt_decide(&r, NULL, 0, &at, &floor), SW_ADOPT_NONE);
}

static void test_decide_attempts(void **state)
{
    (void)state;
    size_t at = 99;
    int floor = 0;
    /* Attempt 1 lost (being deleted), attempt 2 running: the record, lost
     * back to requeued attempt 1, takes attempt 2. */
    struct sw_adopt_mirror two[] = {mir("cloud-spot", 1, true), mir("cloud-ondemand", 2, false)};
    struct sw_job_rec r = rec(SW_JS_REQUEUED, 1, "cloud-spot");
    assert_int_equal(sw_adopt_decide(&r, two, 2, &at, &floor), SW_ADOPT_MIRROR);
    assert_int_equal(at, 1);
    /* A requeued record whose only mirror is being deleted: nothing. */
    assert_int_equal(sw_adopt_decide(&r, two, 1, &at, &floor), SW_ADOPT_NONE);
    /* A fresh record whose only mirror is being deleted: never adopted,
     * but the next attempt must not reuse its name. */
    r = rec(SW_JS_OBSERVED, 0, "");
    assert_int_equal(sw_adopt_decide(&r, two, 1, &at, &floor), SW_ADOPT_ATTEMPT);
    assert_int_equal(floor, 1);
    r = rec(SW_JS_OBSERVED, 1, "");
    assert_int_equal(sw_adopt_decide(&r, two, 1, &at, &floor), SW_ADOPT_NONE);
    /* A mirror the record left on a lost cluster (stale) is never taken
     * back: the Job was placed again; it waits to be deleted there. */
    struct sw_adopt_mirror lost[] = {mir("cloud-spot", 1, false)};
    r = rec(SW_JS_OBSERVED, 1, "cloud-spot");
    assert_int_equal(sw_adopt_decide(&r, lost, 1, &at, &floor), SW_ADOPT_MIRROR);
    assert_int_equal(sw_job_rec_add_stale(&r, "cloud-spot", lost[0].name, 1), 0);
    assert_int_equal(sw_adopt_decide(&r, lost, 1, &at, &floor), SW_ADOPT_NONE);
    /* Two mirrors of one attempt (should never be): the record's target wins. */
    struct sw_adopt_mirror same[] = {mir("cloud-ondemand", 2, false), mir("cloud-spot", 2, false)};
    r = rec(SW_JS_DATA_READY, 2, "cloud-spot");
    assert_int_equal(sw_adopt_decide(&r, same, 2, &at, &floor), SW_ADOPT_MIRROR);
    assert_int_equal(at, 1);
}

/* A Job that only carries spillway's labels (copied onto it by a person or
 * a tool) is never adopted, however high its attempt: only the name, the
 * namespace and the origin cluster the hub would have used count. */
static void test_decide_copied_labels(void **state)
{
    (void)state;
    size_t at = 99;
    int floor = 0;
    struct sw_adopt_mirror real = mir("cloud-spot", 1, false);
    struct sw_job_rec r = rec(SW_JS_RUNNING, 1, "cloud-spot");
    struct sw_adopt_mirror copies[4];
    for (size_t i = 0; i < 4; i++)
        copies[i] = mir("cloud-ondemand", 5, false);
    snprintf(copies[0].name, sizeof(copies[0].name), "my-copy"); /* another name */
    snprintf(copies[1].ns, sizeof(copies[1].ns), "elsewhere");   /* another namespace */
    snprintf(copies[2].origin_cluster, sizeof(copies[2].origin_cluster), "cloud-spot");
    snprintf(copies[3].origin_ns, sizeof(copies[3].origin_ns), "team-b"); /* label differs */
    for (size_t i = 0; i < 4; i++) {
        struct sw_adopt_mirror both[] = {real, copies[i]};
        assert_int_equal(sw_adopt_decide(&r, both, 2, &at, &floor), SW_ADOPT_NONE);
        /* A record lost altogether takes the real mirror, never the copy. */
        struct sw_job_rec fresh = rec(SW_JS_OBSERVED, 0, "");
        at = 99;
        assert_int_equal(sw_adopt_decide(&fresh, both, 2, &at, &floor), SW_ADOPT_MIRROR);
        assert_int_equal(at, 0);
        /* A copy being deleted does not raise the attempt floor either. */
        copies[i].deleting = true;
        struct sw_adopt_mirror alone[] = {copies[i]};
        assert_int_equal(sw_adopt_decide(&fresh, alone, 1, &at, &floor), SW_ADOPT_NONE);
    }
    /* The same labels on the right name and namespace: that is the mirror. */
    struct sw_adopt_mirror right = mir("cloud-ondemand", 5, false);
    struct sw_adopt_mirror both[] = {real, right};
    assert_int_equal(sw_adopt_decide(&r, both, 2, &at, &floor), SW_ADOPT_MIRROR);
    assert_int_equal(at, 1);
}

static void test_apply(void **state)
{
    (void)state;
    struct sw_job_rec r = rec(SW_JS_OBSERVED, 0, "");
    r.form = SW_FORM_DELEGATED;
    r.created = 1700000000;
    r.observed_ms = 5;
    struct sw_adopt_mirror m = mir("cloud-spot", 2, false);
    snprintf(m.pool, sizeof(m.pool), "spot-h100");
    snprintf(m.region, sizeof(m.region), "us-east-1");
    snprintf(m.capacity, sizeof(m.capacity), "spot");
    snprintf(m.summary, sizeof(m.summary), "burst to cloud-spot");
    m.gpus = 8;
    m.price_gpu_h = 1.25;
    sw_adopt_apply(&r, &m, 123456);
    assert_int_equal(r.state, SW_JS_DISPATCHED);
    assert_int_equal(r.attempt, 2);
    assert_string_equal(r.target_cluster, "cloud-spot");
    assert_string_equal(r.mirror, m.name);
    assert_string_equal(r.target_pool, "spot-h100");
    assert_string_equal(r.target_region, "us-east-1");
    assert_string_equal(r.capacity, "spot");
    assert_string_equal(r.summary, "burst to cloud-spot");
    assert_int_equal(r.gpus, 8);
    assert_true(r.price_gpu_h == 1.25);
    assert_int_equal(r.dispatched_ms, 123456);
    assert_non_null(strstr(r.reason, "re-derived from mirror cloud-spot/team-a/sw-"));
    /* Identity kept. */
    assert_string_equal(r.key, "onprem/team-a/train-7");
    assert_string_equal(r.uid, UID);
    assert_int_equal(r.form, SW_FORM_DELEGATED);
    assert_int_equal(r.observed_ms, 5);
    /* A known dispatch time is kept. */
    r.dispatched_ms = 42;
    sw_adopt_apply(&r, &m, 999);
    assert_int_equal(r.dispatched_ms, 42);
    /* The rewritten record is a valid record (round trip through JSON). */
    cJSON *o = sw_job_rec_to_json(&r);
    struct sw_job_rec back;
    struct sw_error err;
    assert_int_equal(sw_job_rec_from_json(o, &back, &err), 0);
    assert_int_equal(back.state, SW_JS_DISPATCHED);
    assert_string_equal(back.mirror, m.name);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_what_mirror_writes),
        cmocka_unit_test(test_read_not_a_mirror),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_decide_attempts),
        cmocka_unit_test(test_decide_copied_labels),
        cmocka_unit_test(test_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
