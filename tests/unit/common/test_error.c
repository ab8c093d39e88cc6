/* Tests for common/error.c: the code table and struct sw_error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/error.h"

static void test_strerror_names_every_code(void **state)
{
    (void)state;
    assert_string_equal(sw_strerror(SW_OK), "success");
    assert_string_equal(sw_strerror(SW_EPARSE), "malformed input");
    assert_string_equal(sw_err_name(SW_ETOOBIG), "SW_ETOOBIG");
    assert_string_equal(sw_strerror(12345), "unknown error");
    /* Every code in the table has its own message and name. */
#define CHECK(name, value, msg)                                                                    \
    assert_string_equal(sw_strerror(value), msg);                                                  \
    assert_string_equal(sw_err_name(value), "SW_" #name);
    SW_ERRNO_MAP(CHECK)
#undef CHECK
}

static void test_error_set_and_wrap(void **state)
{
    (void)state;
    struct sw_error err;
    sw_error_clear(&err);
    assert_int_equal(err.code, SW_OK);
    int rc = sw_error_set(&err, SW_EPARSE, "field \"%s\": expected %s", "server", "a URL");
    assert_int_equal(rc, SW_EPARSE);
    assert_string_equal(err.msg, "field \"server\": expected a URL");
    rc = sw_error_wrap(&err, "kubeconfig %s, context %s", "a.yaml", "prod");
    assert_int_equal(rc, SW_EPARSE);
    assert_string_equal(err.msg,
                        "kubeconfig a.yaml, context prod: field \"server\": expected a URL");
    /* A NULL error is allowed and only returns the code. */
    assert_int_equal(sw_error_set(NULL, SW_ENOENT, "x"), SW_ENOENT);
}

static void test_error_truncates_long_messages(void **state)
{
    (void)state;
    struct sw_error err;
    char big[2000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    sw_error_set(&err, SW_EINVAL, "%s", big);
    assert_int_equal(strlen(err.msg), SW_ERROR_MSG_MAX - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_names_every_code),
        cmocka_unit_test(test_error_set_and_wrap),
        cmocka_unit_test(test_error_truncates_long_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
