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
#include "common/json.h"
#include "controller/hub/adopt.h"
#include "controller/hub/mirror.h"

#define UID "0b7c6c1e-1111-4a4a-9c9c-0123456789ab"

/* The hub's proof key (derived from its sealing key in the daemon). */
static const unsigned char KEY[SW_MIRROR_PROOF_KEY_LEN] = {0x42, 0x07, 0xc3, 0x11, 0x9e};

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
    m.proven = true; /* as read from a mirror this hub made (test_forged_mirror has the others) */
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
    cJSON *m = sw_mirror_build(origin, &r, name, NULL, 9, true, NULL, NULL, NULL, KEY);
    assert_non_null(m);
    struct sw_adopt_mirror am;
    assert_int_equal(sw_adopt_mirror_read(m, "cloud-spot", KEY, &am), 0);
    assert_true(am.proven);
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
    assert_int_equal(sw_adopt_mirror_read(m, "cloud-spot", KEY, &am), 0);
    assert_false(am.proven); /* its placement is part of the proof */
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
        assert_int_equal(sw_adopt_mirror_read(j, "c", KEY, &am), SW_ENOENT);
        cJSON_Delete(j);
    }
    /* A bad placement annotation is ignored, not trusted. */
    cJSON *j = cJSON_Parse("{\"metadata\":{\"name\":\"m\",\"labels\":{\"spillway.io/origin-uid\":"
                           "\"u\",\"spillway.io/attempt\":\"3\"},\"annotations\":{"
                           "\"spillway.io/placement\":\"{not json\"}}}");
    assert_int_equal(sw_adopt_mirror_read(j, "c", KEY, &am), 0);
    assert_false(am.proven);
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

/* The record of the attack: Job train-7 of team-a on onprem, its attempt 1
 * mirrored in cloud-spot, both as the hub made them. */
static struct sw_job_rec attacked(void)
{
    struct sw_job_rec r = rec(SW_JS_RUNNING, 1, "cloud-spot");
    snprintf(r.target_pool, sizeof(r.target_pool), "spot-h100");
    snprintf(r.target_region, sizeof(r.target_region), "us-east-1");
    snprintf(r.capacity, sizeof(r.capacity), "spot");
    snprintf(r.team, sizeof(r.team), "team-a");
    snprintf(r.summary, sizeof(r.summary), "burst to cloud-spot (spot)");
    r.gpus = 4;
    r.price_gpu_h = 2.5;
    return r;
}

static cJSON *origin_job(void)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"train-7\",\"namespace\":\"team-a\"},"
                           "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
                           "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
    assert_non_null(o);
    return o;
}

/* The forged mirror of the attack: in team-a on onprem (the origin's own
 * cluster), named as the next attempt's mirror, with the origin's labels
 * and a placement charging team-b 512 GPUs at $90,000/h; `proof` is its
 * spillway.io/proof annotation (NULL: none). */
static cJSON *forged(const char *proof)
{
    char name[64];
    sw_mirror_name(UID, 2, name, sizeof(name));
    cJSON *j = cJSON_CreateObject();
    cJSON *md = cJSON_AddObjectToObject(j, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", "team-a");
    cJSON *l = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddStringToObject(l, SW_LBL_ORIGIN_UID, UID);
    cJSON_AddStringToObject(l, SW_LBL_ORIGIN_CL, "onprem");
    cJSON_AddStringToObject(l, SW_LBL_ORIGIN_NS, "team-a");
    cJSON_AddStringToObject(l, SW_LBL_ATTEMPT, "2");
    cJSON *a = cJSON_AddObjectToObject(md, "annotations");
    cJSON_AddStringToObject(a, SW_ANN_PLACEMENT,
                            "{\"team\":\"team-b\",\"gpus\":512,\"priceGpuHour\":90000,"
                            "\"capacity\":\"on-demand\"}");
    cJSON_AddStringToObject(a, SW_ANN_DECISION, "");
    if (proof)
        cJSON_AddStringToObject(a, SW_ANN_PROOF, proof);
    return j;
}

/* The attack of the security review: a tenant's Job with a mirror's name,
 * labels and a placement of its own choosing takes no record over, with no
 * proof, a made-up one, one copied from the real mirror, or one under
 * another key; the real mirror, with the hub's proof, still is adopted. */
static void test_forged_mirror(void **state)
{
    (void)state;
    struct sw_job_rec r = attacked();
    cJSON *origin = origin_job();
    char real_name[64];
    sw_mirror_name(UID, 1, real_name, sizeof(real_name));
    cJSON *real = sw_mirror_build(origin, &r, real_name, NULL, 9, true, NULL, NULL, NULL, KEY);
    assert_non_null(real);
    struct sw_adopt_mirror ms[2];
    assert_int_equal(sw_adopt_mirror_read(real, "cloud-spot", KEY, &ms[0]), 0);
    assert_true(ms[0].proven);
    const char *real_proof =
        cJSON_GetObjectItem(sw_json_path(real, "metadata.annotations"), SW_ANN_PROOF)->valuestring;

    /* The same forgery signed under another key (another hub's, or a guess). */
    unsigned char other[SW_MIRROR_PROOF_KEY_LEN] = {0x42, 0x07, 0xc3, 0x11, 0x9f};
    cJSON *unsigned_forgery = forged(NULL);
    char name2[64];
    sw_mirror_name(UID, 2, name2, sizeof(name2));
    struct sw_mirror_proof_fields f = {
        .origin_uid = UID,
        .origin_cluster = "onprem",
        .origin_ns = "team-a",
        .ns = "team-a",
        .name = name2,
        .attempt = 2,
        .target_cluster = "onprem",
        .placement = cJSON_GetObjectItem(sw_json_path(unsigned_forgery, "metadata.annotations"),
                                         SW_ANN_PLACEMENT)
                         ->valuestring,
        .decision = "",
    };
    char other_proof[SW_MIRROR_PROOF_HEX];
    assert_int_equal(sw_mirror_proof(other, &f, other_proof), 0);
    cJSON_Delete(unsigned_forgery);

    const char *proofs[] = {
        NULL, "",         "0000000000000000000000000000000000000000000000000000000000000000",
        "zz", real_proof, other_proof};
    for (size_t i = 0; i < sizeof(proofs) / sizeof(proofs[0]); i++) {
        cJSON *j = forged(proofs[i]);
        assert_int_equal(sw_adopt_mirror_read(j, "onprem", KEY, &ms[1]), 0);
        assert_false(ms[1].proven);
        assert_string_equal(ms[1].team, "team-b"); /* read, but never trusted */
        size_t at = 99;
        int floor = 0;
        /* Running or dispatched: the forgery takes nothing. */
        static const enum sw_job_state states[] = {SW_JS_RUNNING, SW_JS_DISPATCHED, SW_JS_BLOCKED};
        for (size_t k = 0; k < 3; k++) {
            struct sw_job_rec rr = attacked();
            rr.state = states[k];
            assert_int_equal(sw_adopt_decide(&rr, &ms[1], 1, &at, &floor), SW_ADOPT_NONE);
            if (k < 2)
                assert_int_equal(sw_adopt_decide(&rr, ms, 2, &at, &floor), SW_ADOPT_NONE);
        }
        /* Blocked (its writes lost back to before the mirror): the real
         * mirror of attempt 1 is adopted, never the forged attempt 2. */
        struct sw_job_rec blocked = attacked();
        blocked.state = SW_JS_BLOCKED;
        at = 99;
        assert_int_equal(sw_adopt_decide(&blocked, ms, 2, &at, &floor), SW_ADOPT_MIRROR);
        assert_int_equal(at, 0);
        struct sw_job_rec fresh = rec(SW_JS_OBSERVED, 0, "");
        assert_int_equal(sw_adopt_decide(&fresh, ms, 2, &at, &floor), SW_ADOPT_MIRROR);
        assert_int_equal(at, 0); /* the real mirror */
        sw_adopt_apply(&fresh, &ms[at], 1);
        assert_string_equal(fresh.team, "team-a");
        assert_int_equal(fresh.gpus, 4);
        assert_true(fresh.price_gpu_h == 2.5);
        assert_string_equal(fresh.target_cluster, "cloud-spot");
        /* A forgery being deleted does not raise the attempt floor. */
        ms[1].deleting = true;
        assert_int_equal(sw_adopt_decide(&fresh, &ms[1], 1, &at, &floor), SW_ADOPT_NONE);
        cJSON_Delete(j);
    }
    /* A copy of the real mirror, proof and all, found in another cluster
     * than the one it was made for: not adopted either. */
    struct sw_adopt_mirror moved;
    assert_int_equal(sw_adopt_mirror_read(real, "onprem", KEY, &moved), 0);
    assert_false(moved.proven);
    /* Without the key (none given), nothing is proven. */
    assert_int_equal(sw_adopt_mirror_read(real, "cloud-spot", NULL, &moved), 0);
    assert_false(moved.proven);
    cJSON_Delete(real);
    cJSON_Delete(origin);
}

/* Each field adoption trusts is bound by the proof: changing any one of
 * them on a mirror the hub made (a tenant editing their mirror in the
 * target, say) makes it unproven, hence never adopted. */
static void test_proof_binds_fields(void **state)
{
    (void)state;
    struct sw_job_rec r = attacked();
    r.attempt = 2;
    cJSON *origin = origin_job();
    char name[64];
    sw_mirror_name(UID, 2, name, sizeof(name));
    cJSON *m = sw_mirror_build(origin, &r, name, NULL, 9, true, NULL, NULL, NULL, KEY);
    assert_true(sw_mirror_proof_ok(m, "cloud-spot", KEY));
    static const struct {
        const char *obj; /* "metadata", "metadata.labels" or "metadata.annotations" */
        const char *key;
        const char *value; /* NULL: removed */
    } edits[] = {
        {"metadata", "name", "sw-0b7c6c1e-1111-4a4a-9c9c-0123456789ab-3"},
        {"metadata", "namespace", "team-b"},
        {"metadata.labels", SW_LBL_ORIGIN_UID, "0b7c6c1e-1111-4a4a-9c9c-0123456789ac"},
        {"metadata.labels", SW_LBL_ORIGIN_CL, "cloud-spot"},
        {"metadata.labels", SW_LBL_ORIGIN_NS, "team-b"},
        {"metadata.labels", SW_LBL_ATTEMPT, "3"},
        {"metadata.labels", SW_LBL_ATTEMPT, "02"},
        {"metadata.labels", SW_LBL_ATTEMPT, NULL},
        {"metadata.annotations", SW_ANN_PLACEMENT,
         "{\"pool\":\"spot-h100\",\"region\":\"us-east-1\",\"capacity\":\"spot\",\"team\":"
         "\"team-b\",\"gpus\":4,\"priceGpuHour\":2.5}"},
        {"metadata.annotations", SW_ANN_PLACEMENT, NULL},
        {"metadata.annotations", SW_ANN_DECISION, "burst to cloud-spot (spot), team-b pays"},
        {"metadata.annotations", SW_ANN_DECISION, NULL},
        {"metadata.annotations", SW_ANN_PROOF, NULL},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        cJSON *c = cJSON_Duplicate(m, 1);
        cJSON *o = (cJSON *)sw_json_path(c, edits[i].obj);
        assert_non_null(o);
        cJSON_DeleteItemFromObjectCaseSensitive(o, edits[i].key);
        if (edits[i].value)
            cJSON_AddStringToObject(o, edits[i].key, edits[i].value);
        assert_false(sw_mirror_proof_ok(c, "cloud-spot", KEY));
        cJSON_Delete(c);
    }
    /* The target cluster is bound too, and each hex digit of the proof. */
    assert_false(sw_mirror_proof_ok(m, "cloud-ondemand", KEY));
    cJSON *p = cJSON_GetObjectItem(sw_json_path(m, "metadata.annotations"), SW_ANN_PROOF);
    char good[SW_MIRROR_PROOF_HEX];
    snprintf(good, sizeof(good), "%s", p->valuestring);
    for (size_t i = 0; i < 64; i++) {
        char bad[SW_MIRROR_PROOF_HEX];
        snprintf(bad, sizeof(bad), "%s", good);
        bad[i] = bad[i] == '0' ? '1' : '0';
        cJSON_SetValuestring(p, bad);
        assert_false(sw_mirror_proof_ok(m, "cloud-spot", KEY));
    }
    /* Upper case is not what the hub writes. */
    for (size_t i = 0; i < 64; i++)
        if (good[i] >= 'a') {
            char up[SW_MIRROR_PROOF_HEX];
            snprintf(up, sizeof(up), "%s", good);
            up[i] = (char)(up[i] - 'a' + 'A');
            cJSON_SetValuestring(p, up);
            assert_false(sw_mirror_proof_ok(m, "cloud-spot", KEY));
            break;
        }
    cJSON_SetValuestring(p, good);
    assert_true(sw_mirror_proof_ok(m, "cloud-spot", KEY));
    cJSON_Delete(m);
    cJSON_Delete(origin);
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
        cmocka_unit_test(test_forged_mirror),
        cmocka_unit_test(test_proof_binds_fields),
        cmocka_unit_test(test_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
