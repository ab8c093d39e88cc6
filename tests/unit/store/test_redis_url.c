/* Tests for store/redis.c's URL parsing and redaction (no server needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "store/redis.h"

static void test_full_url(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    assert_int_equal(sw_redis_url_parse("redis://:p%40ss@127.0.0.1:6380/3", &u, &err), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 3);
    assert_null(u.user);
    assert_string_equal(u.password, "p@ss");
    char red[128];
    sw_redis_url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "redis://:***@127.0.0.1:6380/3");
    sw_redis_url_free(&u);
}

static void test_defaults_user_v6_unix(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    assert_int_equal(sw_redis_url_parse("redis://localhost", &u, &err), 0);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_null(u.password);
    sw_redis_url_free(&u);

    assert_int_equal(sw_redis_url_parse("redis://hub:pw@[::1]:7000/0", &u, &err), 0);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 7000);
    assert_string_equal(u.user, "hub");
    assert_string_equal(u.password, "pw");
    sw_redis_url_free(&u);

    assert_int_equal(sw_redis_url_parse("unix://:pw@/tmp/r.sock?db=2", &u, &err), 0);
    assert_string_equal(u.path, "/tmp/r.sock");
    assert_int_equal(u.db, 2);
    assert_string_equal(u.password, "pw");
    char red[128];
    sw_redis_url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "unix://:***@/tmp/r.sock?db=2");
    sw_redis_url_free(&u);
}

static void test_errors_never_echo_password(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    static const char *bad[] = {"http://:hunter2@h:1/0",   "redis://:hunter2@h:99999/0",
                                "redis://:hunter2@h:1/x",  "redis://:hunter2@:1/0",
                                "redis://:hunter2%zz@h/0", "redis://:hunter2@[::1/0",
                                "unix://:hunter2@rel.sock"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sw_redis_url_parse(bad[i], &u, &err), SW_EPARSE);
        assert_non_null(strstr(err.msg, "redis URL"));
        assert_null(strstr(err.msg, "hunter2"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_url),
        cmocka_unit_test(test_defaults_user_v6_unix),
        cmocka_unit_test(test_errors_never_echo_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
