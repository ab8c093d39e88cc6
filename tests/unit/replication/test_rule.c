/*
 * test_rule.c - rule locations, validation, JSON round trip and
 * model-registry keys (pure parts of replication/rule.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "replication/rule.h"

static void expect_loc_error(const char *s, const char *needle)
{
    struct sw_rule_loc l;
    struct sw_error err;
    assert_int_equal(sw_rule_loc_parse(s, &l, &err), SW_EINVAL);
    if (strstr(err.msg, needle) == NULL)
        fail_msg("\"%s\": message \"%s\" lacks \"%s\"", s, err.msg, needle);
}

static void test_loc(void **state)
{
    (void)state;
    struct sw_rule_loc l;
    assert_int_equal(sw_rule_loc_parse("onprem:datasets/imagenet/", &l, NULL), 0);
    assert_string_equal(l.store, "onprem");
    assert_string_equal(l.bucket, "datasets");
    assert_string_equal(l.prefix, "imagenet/");
    assert_int_equal(sw_rule_loc_parse("us-east-1:s3://models", &l, NULL), 0);
    assert_string_equal(l.bucket, "models");
    assert_string_equal(l.prefix, "");
    expect_loc_error("datasets/x", "expected STORE:BUCKET/PREFIX");
    expect_loc_error("onprem:", "expected a bucket");
    expect_loc_error("onprem:Bad_Bucket/x", "bucket \"Bad_Bucket\"");
    expect_loc_error("on prem:datasets/x", "store name \"on prem\"");
}

static struct sw_rule_spec sample(void)
{
    struct sw_rule_spec r;
    memset(&r, 0, sizeof(r));
    strcpy(r.name, "models-dr");
    sw_rule_loc_parse("onprem:models/models/", &r.source, NULL);
    sw_rule_loc_parse("us-west-2:models/models/", &r.targets[0], NULL);
    sw_rule_loc_parse("us-east-1:models/models/", &r.targets[1], NULL);
    r.ntargets = 2;
    r.model_registry = 1;
    r.concurrency = 8;
    r.part_size = 16 << 20;
    r.bytes_per_s = 50e6;
    return r;
}

static void test_json_round_trip(void **state)
{
    (void)state;
    struct sw_rule_spec r = sample(), back;
    char *json;
    assert_int_equal(sw_rule_to_json(&r, &json), 0);
    struct sw_error err;
    assert_int_equal(sw_rule_from_json(json, strlen(json), &back, &err), 0);
    sw_free(json);
    assert_string_equal(back.name, "models-dr");
    assert_int_equal(back.ntargets, 2);
    assert_string_equal(back.targets[1].store, "us-east-1");
    assert_string_equal(back.source.prefix, "models/");
    assert_true(back.model_registry);
    assert_int_equal(back.concurrency, 8);
    assert_int_equal(back.part_size, 16 << 20);
    assert_true(back.bytes_per_s == 50e6);

    const char *bad =
        "{\"name\":\"x\",\"source\":{\"store\":\"a\",\"bucket\":\"bb\"},\"targets\":[]}";
    assert_int_equal(sw_rule_from_json(bad, strlen(bad), &back, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "bucket \"bb\""));
    const char *bad2 = "{\"name\":\"x\",\"source\":{\"store\":\"a\",\"bucket\":\"bbb\"},"
                       "\"targets\":[{\"store\":\"b\"}]}";
    assert_int_not_equal(sw_rule_from_json(bad2, strlen(bad2), &back, &err), 0);
    assert_non_null(strstr(err.msg, "bucket"));
}

static void test_validate(void **state)
{
    (void)state;
    struct sw_rule_spec r = sample();
    struct sw_error err;
    assert_int_equal(sw_rule_validate(&r, &err), 0);
    r.targets[1] = r.targets[0];
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "store us-west-2 is a target twice"));
    r = sample();
    strcpy(r.source.prefix, "checkpoints/");
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "does not start with models/"));
    r = sample();
    r.targets[0] = r.source;
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "lies inside the source"));
    r = sample();
    r.part_size = 1 << 20;
    assert_int_equal(sw_rule_validate(&r, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "part size"));
}

static void test_model_keys(void **state)
{
    (void)state;
    char n[64], v[64];
    assert_int_equal(sw_model_key_parse("models/", "models/llama/v3/weights-00001.safetensors", n,
                                        sizeof(n), v, sizeof(v)),
                     0);
    assert_string_equal(n, "llama");
    assert_string_equal(v, "v3");
    assert_int_equal(sw_model_key_parse("models/", "models/llama/v3/", n, sizeof(n), v, sizeof(v)),
                     SW_EPARSE);
    assert_int_equal(sw_model_key_parse("models/", "models/llama", n, sizeof(n), v, sizeof(v)),
                     SW_EPARSE);
    assert_int_equal(sw_model_key_parse("models/", "other/llama/v3/x", n, sizeof(n), v, sizeof(v)),
                     SW_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loc),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_model_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
