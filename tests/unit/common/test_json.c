/* Tests for common/json.c: typed accessors and their error messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"

static const char doc[] = "{\"metadata\":{\"name\":\"train-1\",\"generation\":3},"
                          "\"spec\":{\"parallelism\":2,\"suspend\":true,\"ratio\":0.5}}";

static void test_typed_accessors(void **state)
{
    (void)state;
    struct sw_error err;
    cJSON *root;
    assert_int_equal(sw_json_parse(doc, strlen(doc), "Job a/b", &root, &err), 0);
    const char *name = NULL;
    assert_int_equal(sw_json_string(root, "metadata.name", true, "Job a/b", &name, &err), 0);
    assert_string_equal(name, "train-1");
    int64_t gen = 0;
    assert_int_equal(sw_json_int64(root, "metadata.generation", true, "Job a/b", &gen, &err), 0);
    assert_int_equal(gen, 3);
    bool suspend = false;
    assert_int_equal(sw_json_bool(root, "spec.suspend", true, "Job a/b", &suspend, &err), 0);
    assert_true(suspend);
    double ratio = 0;
    assert_int_equal(sw_json_number(root, "spec.ratio", true, "Job a/b", &ratio, &err), 0);
    assert_true(ratio == 0.5);
    /* An optional missing field leaves the default in place. */
    int64_t completions = 1;
    assert_int_equal(sw_json_int64(root, "spec.completions", false, "Job a/b", &completions, &err),
                     0);
    assert_int_equal(completions, 1);
    cJSON_Delete(root);
}

static void test_errors_name_object_and_field(void **state)
{
    (void)state;
    struct sw_error err;
    cJSON *root;
    assert_int_equal(sw_json_parse(doc, strlen(doc), "Job a/b", &root, &err), 0);
    int64_t n;
    assert_int_equal(sw_json_int64(root, "metadata.name", true, "Job a/b", &n, &err), SW_EPARSE);
    assert_string_equal(err.msg,
                        "Job a/b: field \"metadata.name\": expected an integer, got a string");
    assert_int_equal(sw_json_int64(root, "spec.ratio", true, "Job a/b", &n, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "expected an integer, got 0.5"));
    const char *s;
    assert_int_equal(sw_json_string(root, "spec.completions", true, "Job a/b", &s, &err),
                     SW_ENOENT);
    assert_string_equal(err.msg, "Job a/b: field \"spec.completions\" is missing");
    cJSON_Delete(root);
}

static void test_malformed_and_trailing_garbage(void **state)
{
    (void)state;
    struct sw_error err;
    cJSON *root = (cJSON *)1;
    const char bad[] = "{\"a\": [1, 2,}";
    assert_int_equal(sw_json_parse(bad, strlen(bad), "watch event", &root, &err), SW_EPARSE);
    assert_null(root);
    assert_non_null(strstr(err.msg, "watch event: malformed JSON near byte"));
    const char trailing[] = "{\"a\":1} x";
    assert_int_equal(sw_json_parse(trailing, strlen(trailing), "reply", &root, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "unexpected data after the JSON value at byte 8"));
}

static void test_parse_survives_every_allocation_failure(void **state)
{
    (void)state;
    /* Fail the Nth allocation for every N until parsing needs no more. */
    for (uint64_t n = 1; n < 200; n++) {
        struct sw_error err;
        cJSON *root = NULL;
        sw_alloc_fail_at(n);
        int rc = sw_json_parse(doc, strlen(doc), "Job a/b", &root, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            cJSON_Delete(root);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_null(root);
    }
    fail_msg("parsing never completed within 200 allocations");
}

/* A Secret's tree printed without cJSON's growing buffer (which frees its
 * old copies unwiped) reads the same as cJSON's own print, from the
 * smallest first buffer up; and a wiped delete of a subtree leaves its
 * siblings alone. */
static void test_print_and_delete_wiped(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    cJSON *data = cJSON_AddObjectToObject(o, "data");
    char big[9000];
    memset(big, 'A', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cJSON_AddStringToObject(data, "token", big);
    cJSON_AddStringToObject(o, "kind", "Secret");
    char *want = cJSON_PrintUnformatted(o);
    size_t len = 0;
    char *got = sw_json_print_wiped(o, 0, &len);
    assert_non_null(got);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    sw_free_wiped(got);
    cJSON_free(want);
    sw_json_delete_wiped(cJSON_DetachItemFromObject(o, "data"));
    assert_string_equal(sw_json_str(o, "kind"), "Secret");
    sw_json_delete_wiped(o);
    sw_json_delete_wiped(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_accessors),
        cmocka_unit_test(test_errors_name_object_and_field),
        cmocka_unit_test(test_malformed_and_trailing_garbage),
        cmocka_unit_test(test_parse_survives_every_allocation_failure),
        cmocka_unit_test(test_print_and_delete_wiped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
