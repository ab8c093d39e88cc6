/* Tests for controller/hub/mirror.c: the mirror Job built from an origin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "controller/hub/mirror.h"

static const char ORIGIN[] =
    "{\"apiVersion\":\"batch/"
    "v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train-7\",\"namespace\":"
    "\"team-a\",\"uid\":\"0fea0c22-c6d8-4b05-8689-ec9f9296d687\",\"annotations\":{\"spillway.io/"
    "burst\":\"auto\",\"spillway.io/inputs\":\"s3://datasets/imagenet/\",\"spillway.io/outputs\":"
    "\"s3://checkpoints/train-7\"}},\"spec\":{\"parallelism\":2,\"completions\":2,\"suspend\":true,"
    "\"managedBy\":\"spillway.io/hub\",\"ttlSecondsAfterFinished\":60,\"podReplacementPolicy\":"
    "\"TerminatingOrFailed\",\"selector\":{\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":"
    "\"0fea\"}},\"template\":{\"metadata\":{\"labels\":{\"batch.kubernetes.io/controller-uid\":"
    "\"0fea\",\"job-name\":\"train-7\",\"app\":\"trainer\"}},\"spec\":{\"restartPolicy\":\"Never\","
    "\"containers\":[{\"name\":\"train\",\"image\":\"registry.example/train:1\",\"env\":[{\"name\":"
    "\"SPILLWAY_REGION\",\"value\":\"mine\"}]}]}}}}";

/* A proof key, as the hub derives it from its sealing key. */
static const unsigned char KEY[SW_MIRROR_PROOF_KEY_LEN] = {0x5a, 0x17, 0x33, 0x90, 0x01, 0xfe};

static void rec(struct sw_job_rec *r, const char *capacity)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->cluster, sizeof(r->cluster), "onprem");
    snprintf(r->ns, sizeof(r->ns), "team-a");
    snprintf(r->name, sizeof(r->name), "train-7");
    snprintf(r->uid, sizeof(r->uid), "0fea0c22-c6d8-4b05-8689-ec9f9296d687");
    snprintf(r->target_region, sizeof(r->target_region), "us-east-1");
    snprintf(r->capacity, sizeof(r->capacity), "%s", capacity);
    snprintf(r->summary, sizeof(r->summary), "burst to cloud-spot");
    r->attempt = 3;
}

static const char *s(const cJSON *m, const char *path)
{
    const cJSON *v = sw_json_path(m, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *env(const cJSON *m, const char *name)
{
    const cJSON *e;
    const cJSON *c0 = cJSON_GetArrayItem(sw_json_path(m, "spec.template.spec.containers"), 0);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(c0, "env"))
    {
        if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) == 0)
            return cJSON_GetObjectItem(e, "value")->valuestring;
    }
    return NULL;
}

static void test_name(void **state)
{
    (void)state;
    char buf[64];
    sw_mirror_name("0fea0c22-c6d8-4b05-8689-ec9f9296d687", 12, buf, sizeof(buf));
    assert_string_equal(buf, "sw-0fea0c22-c6d8-4b05-8689-ec9f9296d687-12");
    assert_true(strlen(buf) <= 63); /* a DNS label, as Job names must be */
}

static void test_spot_mirror(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    struct sw_job_rec r;
    rec(&r, "spot");
    cJSON *m =
        sw_mirror_build(o, &r, "sw-x-3", "http://127.0.0.1:7071", 9, true, NULL, NULL, NULL, KEY);
    assert_non_null(m);
    assert_string_equal(s(m, "metadata.name"), "sw-x-3");
    assert_string_equal(s(m, "metadata.namespace"), "team-a");
    const cJSON *l = sw_json_path(m, "metadata.labels");
    assert_string_equal(cJSON_GetObjectItem(l, "spillway.io/origin-uid")->valuestring, r.uid);
    assert_string_equal(cJSON_GetObjectItem(l, "spillway.io/origin-cluster")->valuestring,
                        "onprem");
    assert_string_equal(cJSON_GetObjectItem(l, "spillway.io/attempt")->valuestring, "3");
    assert_string_equal(cJSON_GetObjectItem(l, "spillway.io/epoch")->valuestring, "9");
    /* What the API or the Job controller own is gone; the rest is kept. */
    const cJSON *spec = cJSON_GetObjectItem(m, "spec");
    assert_null(cJSON_GetObjectItem(spec, "selector"));
    assert_null(cJSON_GetObjectItem(spec, "managedBy"));
    assert_null(cJSON_GetObjectItem(spec, "suspend"));
    assert_null(cJSON_GetObjectItem(spec, "ttlSecondsAfterFinished"));
    assert_int_equal(cJSON_GetObjectItem(spec, "parallelism")->valueint, 2);
    const cJSON *tl = sw_json_path(m, "spec.template.metadata.labels");
    assert_null(cJSON_GetObjectItem(tl, "job-name"));
    assert_null(cJSON_GetObjectItem(tl, "batch.kubernetes.io/controller-uid"));
    assert_string_equal(cJSON_GetObjectItem(tl, "app")->valuestring, "trainer");
    /* The pool and spot's taint. */
    const cJSON *sel = sw_json_path(m, "spec.template.spec.nodeSelector");
    assert_string_equal(cJSON_GetObjectItem(sel, "karpenter.sh/capacity-type")->valuestring,
                        "spot");
    const cJSON *t = cJSON_GetArrayItem(sw_json_path(m, "spec.template.spec.tolerations"), 0);
    assert_string_equal(cJSON_GetObjectItem(t, "key")->valuestring, "spillway.io/spot");
    /* The data, in the mirror's region; the user's own variable wins. */
    assert_string_equal(env(m, "SPILLWAY_S3_ENDPOINT"), "http://127.0.0.1:7071");
    /* No config: a bucket has no name in another region, and none is
     * guessed (test_buckets_per_region has the named ones). */
    assert_null(env(m, "SPILLWAY_INPUTS"));
    assert_null(env(m, "SPILLWAY_OUTPUTS"));
    assert_string_equal(env(m, "SPILLWAY_ATTEMPT"), "3");
    assert_string_equal(env(m, "SPILLWAY_REGION"), "mine");
    /* A lost node fails the mirror at once, with a reason the hub knows. */
    const cJSON *rule = cJSON_GetArrayItem(sw_json_path(m, "spec.podFailurePolicy.rules"), 0);
    assert_string_equal(cJSON_GetObjectItem(rule, "action")->valuestring, "FailJob");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "onPodConditions"), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "type")->valuestring, "DisruptionTarget");
    assert_string_equal(s(m, "spec.podReplacementPolicy"), "Failed");
    cJSON_Delete(m);
    cJSON_Delete(o);
}

static void test_home_mirror(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    struct sw_job_rec r;
    rec(&r, "owned");
    cJSON *tpl = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"), "template");
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(tpl, "spec"), "restartPolicy",
                              cJSON_CreateString("OnFailure"));
    cJSON *m = sw_mirror_build(o, &r, "sw-x-1", NULL, 1, false, NULL, NULL, NULL, KEY);
    assert_non_null(m);
    assert_null(sw_json_path(m, "spec.template.spec.nodeSelector"));
    assert_null(sw_json_path(m, "spec.template.spec.tolerations"));
    assert_null(env(m, "SPILLWAY_S3_ENDPOINT"));
    /* No pod failure policy with OnFailure (the API refuses it). */
    assert_null(sw_json_path(m, "spec.podFailurePolicy"));
    cJSON_Delete(m);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
    assert_null(sw_mirror_build(o, &r, "sw-x-1", NULL, 1, false, NULL, NULL, NULL, KEY));
    cJSON_Delete(o);
}

/* A pool of EKS managed spot nodes: the selector names EKS' label. */
static void test_provider_capacity_label(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    struct sw_job_rec r;
    rec(&r, "spot");
    cJSON *m = sw_mirror_build(o, &r, "sw-x-3", NULL, 9, true, "eks.amazonaws.com/capacityType",
                               "SPOT", NULL, KEY);
    const cJSON *sel = sw_json_path(m, "spec.template.spec.nodeSelector");
    assert_string_equal(cJSON_GetObjectItem(sel, "eks.amazonaws.com/capacityType")->valuestring,
                        "SPOT");
    assert_null(cJSON_GetObjectItem(sel, "karpenter.sh/capacity-type"));
    cJSON_Delete(m);
    cJSON_Delete(o);
}

/* With the config's buckets, the mirror is told the buckets as its region
 * calls them; the prefixes and the attempt stay. */
static void test_buckets_per_region(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "annotations");
    cJSON_ReplaceItemInObject(ann, "spillway.io/inputs",
                              cJSON_CreateString("s3://datasets/imagenet/, s3://models"));
    struct sw_hub_config cfg;
    sw_hub_config_default(&cfg);
    const char *y = "redis: {url: \"redis://r\"}\nsecretKeyFile: k\nbuckets:\n"
                    "  datasets: {us-east-1: datasets-use1, us-west-2: datasets-usw2}\n"
                    "  checkpoints: {us-east-1: ckpt-use1}\n"
                    "tenancy:\n  grants:\n  - cluster: onprem\n    namespace: team-a\n"
                    "    read: [\"s3://datasets/\", \"s3://models/\"]\n"
                    "    write: [\"s3://checkpoints/\"]\n";
    struct sw_error err;
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &cfg, &err), 0);
    struct sw_job_rec r;
    rec(&r, "spot");
    cJSON *m =
        sw_mirror_build(o, &r, "sw-x-3", "http://127.0.0.1:7071", 9, true, NULL, NULL, &cfg, KEY);
    assert_non_null(m);
    assert_string_equal(env(m, "SPILLWAY_INPUTS"), "s3://datasets-use1/imagenet/");
    assert_string_equal(env(m, "SPILLWAY_OUTPUTS"), "s3://ckpt-use1/train-7/attempt-3/");
    cJSON_Delete(m);
    /* Another region: its own name; a bucket with none there is never
     * passed on under the annotation's name (on AWS it may be another's). */
    snprintf(r.target_region, sizeof(r.target_region), "us-west-2");
    m = sw_mirror_build(o, &r, "sw-x-3", NULL, 9, false, NULL, NULL, &cfg, KEY);
    assert_string_equal(env(m, "SPILLWAY_INPUTS"), "s3://datasets-usw2/imagenet/");
    cJSON_Delete(m);
    /* The outputs fixed in the record win over the annotation's. */
    snprintf(r.target_region, sizeof(r.target_region), "us-east-1");
    snprintf(r.outputs, sizeof(r.outputs), "s3://checkpoints/fixed/");
    m = sw_mirror_build(o, &r, "sw-x-3", NULL, 9, false, NULL, NULL, &cfg, KEY);
    assert_string_equal(env(m, "SPILLWAY_OUTPUTS"), "s3://ckpt-use1/fixed/attempt-3/");
    cJSON_Delete(m);
    /* Nothing the grant does not cover, even when the annotation names it
     * after the decision: another namespace's grant covers nothing here. */
    snprintf(r.ns, sizeof(r.ns), "team-b");
    m = sw_mirror_build(o, &r, "sw-x-3", NULL, 9, false, NULL, NULL, &cfg, KEY);
    assert_null(env(m, "SPILLWAY_INPUTS"));
    assert_null(env(m, "SPILLWAY_OUTPUTS"));
    cJSON_Delete(m);
    sw_hub_config_free(&cfg);
    cJSON_Delete(o);
}

/* Into the target's Kueue LocalQueue: the label, created suspended. */
static void test_queued_mirror(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    struct sw_job_rec r;
    rec(&r, "spot");
    cJSON *m = sw_mirror_build(o, &r, "sw-x-1", NULL, 1, true, NULL, NULL, NULL, KEY);
    assert_non_null(m);
    assert_null(sw_json_path(m, "spec.suspend"));
    sw_mirror_queue(m, "gpu");
    const cJSON *l = sw_json_child(sw_json_child(m, "metadata"), "labels");
    assert_string_equal(sw_json_str(l, "kueue.x-k8s.io/queue-name"), "gpu");
    assert_true(cJSON_IsTrue(sw_json_path(m, "spec.suspend")));
    cJSON_Delete(m);
    cJSON_Delete(o);
}

/* A mirror keeps what its pods ask of MIG slices and GPU shares, by the
 * device plugin's resource names, so the target's scheduler places it. */
static void test_mig_resources_kept(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    cJSON *c0 = cJSON_GetArrayItem(sw_json_path(o, "spec.template.spec.containers"), 0);
    cJSON *res = cJSON_AddObjectToObject(c0, "resources");
    cJSON *lim = cJSON_AddObjectToObject(res, "limits");
    cJSON_AddStringToObject(lim, "nvidia.com/mig-1g.10gb", "2");
    struct sw_job_rec r;
    rec(&r, "spot");
    cJSON *m = sw_mirror_build(o, &r, "sw-x-3", NULL, 9, true, NULL, NULL, NULL, KEY);
    assert_non_null(m);
    const cJSON *mc0 = cJSON_GetArrayItem(sw_json_path(m, "spec.template.spec.containers"), 0);
    const cJSON *ml = sw_json_path(mc0, "resources.limits");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(ml, "nvidia.com/mig-1g.10gb")),
                        "2");
    assert_null(cJSON_GetObjectItem(ml, "nvidia.com/gpu"));
    cJSON_Delete(m);
    cJSON_Delete(o);
}

/* The proof's message, pinned: HMAC-SHA256 of "v1\n" and each field as
 * LEN:BYTES\n, computed apart from this code (Python's hmac module). A
 * change of the format is a change of every mirror's proof: it must be
 * deliberate (a new version, SW_MIRROR_PROOF_LABEL too). */
static void test_proof_known_answer(void **state)
{
    (void)state;
    struct sw_mirror_proof_fields f = {
        .origin_uid = "0fea0c22-c6d8-4b05-8689-ec9f9296d687",
        .origin_cluster = "onprem",
        .origin_ns = "team-a",
        .ns = "team-a",
        .name = "sw-0fea0c22-c6d8-4b05-8689-ec9f9296d687-3",
        .attempt = 3,
        .target_cluster = "cloud-spot",
        .placement = "{\"pool\":\"spot-h100\",\"team\":\"vision\"}",
        .decision = "burst to cloud-spot\nline two",
    };
    char out[SW_MIRROR_PROOF_HEX];
    assert_int_equal(sw_mirror_proof(KEY, &f, out), 0);
    assert_string_equal(out, "d9614489371b25da2e13c80b9864e2167f821ebda71f066719142efae8ae3da0");
    /* Fields are framed by their length: moving bytes from one field to
     * the next changes the proof. */
    f.origin_cluster = "onpremt";
    f.origin_ns = "eam-a";
    char moved[SW_MIRROR_PROOF_HEX];
    assert_int_equal(sw_mirror_proof(KEY, &f, moved), 0);
    assert_string_not_equal(moved, out);
}

/* The mirror carries the hub's proof of what adoption trusts, for the
 * target cluster; it verifies there and nowhere else, and only under the
 * hub's key. */
static void test_proof_written(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(ORIGIN);
    struct sw_job_rec r;
    rec(&r, "spot");
    snprintf(r.target_cluster, sizeof(r.target_cluster), "cloud-spot");
    snprintf(r.team, sizeof(r.team), "vision");
    char name[64];
    sw_mirror_name(r.uid, r.attempt, name, sizeof(name));
    cJSON *m = sw_mirror_build(o, &r, name, NULL, 9, true, NULL, NULL, NULL, KEY);
    assert_non_null(m);
    const cJSON *ann = sw_json_path(m, "metadata.annotations");
    const cJSON *p = cJSON_GetObjectItem(ann, SW_ANN_PROOF);
    assert_true(cJSON_IsString(p));
    assert_int_equal(strlen(p->valuestring), 64);
    assert_int_equal(strspn(p->valuestring, "0123456789abcdef"), 64);
    /* Exactly the proof of the fields as written. */
    struct sw_mirror_proof_fields f = {
        .origin_uid = r.uid,
        .origin_cluster = "onprem",
        .origin_ns = "team-a",
        .ns = "team-a",
        .name = name,
        .attempt = 3,
        .target_cluster = "cloud-spot",
        .placement = cJSON_GetObjectItem(ann, "spillway.io/placement")->valuestring,
        .decision = "burst to cloud-spot",
    };
    char want[SW_MIRROR_PROOF_HEX];
    assert_int_equal(sw_mirror_proof(KEY, &f, want), 0);
    assert_string_equal(p->valuestring, want);
    assert_true(sw_mirror_proof_ok(m, "cloud-spot", KEY));
    /* Found in another member, or checked under another key: not ours. */
    assert_false(sw_mirror_proof_ok(m, "onprem", KEY));
    unsigned char other[SW_MIRROR_PROOF_KEY_LEN] = {0x5a, 0x17, 0x33, 0x90, 0x01, 0xff};
    assert_false(sw_mirror_proof_ok(m, "cloud-spot", other));
    /* Another key, another proof. */
    cJSON *m2 = sw_mirror_build(o, &r, name, NULL, 9, true, NULL, NULL, NULL, other);
    assert_string_not_equal(
        cJSON_GetObjectItem(sw_json_path(m2, "metadata.annotations"), SW_ANN_PROOF)->valuestring,
        p->valuestring);
    cJSON_Delete(m2);
    cJSON_Delete(m);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_spot_mirror),
        cmocka_unit_test(test_home_mirror),
        cmocka_unit_test(test_buckets_per_region),
        cmocka_unit_test(test_provider_capacity_label),
        cmocka_unit_test(test_queued_mirror),
        cmocka_unit_test(test_mig_resources_kept),
        cmocka_unit_test(test_proof_known_answer),
        cmocka_unit_test(test_proof_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
