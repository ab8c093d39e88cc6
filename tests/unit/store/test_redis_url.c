/* Tests for store/redis.c's URL parsing, redaction and password insertion
 * (no server needed). */
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

static void test_with_password(void **state)
{
    (void)state;
    char out[128];
    struct sw_error err;
    assert_int_equal(sw_redis_url_with_password("redis://127.0.0.1:6380/3", "p@ss w:rd/%", out,
                                                sizeof(out), &err),
                     0);
    assert_string_equal(out, "redis://:p%40ss%20w%3Ard%2F%25@127.0.0.1:6380/3");
    /* It parses back to the same password. */
    struct sw_redis_url u;
    assert_int_equal(sw_redis_url_parse(out, &u, &err), 0);
    assert_string_equal(u.password, "p@ss w:rd/%");
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.db, 3);
    sw_redis_url_free(&u);

    assert_int_equal(sw_redis_url_with_password("redis://h", "A-z_0.9~", out, sizeof(out), &err),
                     0);
    assert_string_equal(out, "redis://:A-z_0.9~@h");
    assert_int_equal(
        sw_redis_url_with_password("redis://hub:@[::1]:7000", "pw", out, sizeof(out), &err), 0);
    assert_string_equal(out, "redis://hub:pw@[::1]:7000");
    assert_int_equal(sw_redis_url_with_password("redis://@h/1", "pw", out, sizeof(out), &err), 0);
    assert_string_equal(out, "redis://:pw@h/1");
    assert_int_equal(
        sw_redis_url_with_password("unix:///run/redis.sock?db=2", "pw", out, sizeof(out), &err), 0);
    assert_string_equal(out, "unix://:pw@/run/redis.sock?db=2");
    /* Without a password, the URL as it is, its own password included. */
    assert_int_equal(sw_redis_url_with_password("redis://:own@h/0", NULL, out, sizeof(out), &err),
                     0);
    assert_string_equal(out, "redis://:own@h/0");
}

static void test_with_password_refused(void **state)
{
    (void)state;
    char out[32];
    struct sw_error err;
    static const char *has[] = {"redis://:hunter2@h/0", "redis://hub:hunter2@h/0",
                                "redis://hunter2@h/0", "unix://:hunter2@/r.sock"};
    for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++) {
        memset(out, 'x', sizeof(out));
        assert_int_equal(sw_redis_url_with_password(has[i], "s3cret", out, sizeof(out), &err),
                         SW_EINVAL);
        assert_string_equal(err.msg, "redis URL: it already holds a password, and another was "
                                     "given separately; give the password one way only");
        assert_string_equal(out, "");
    }
    assert_int_equal(sw_redis_url_with_password("http://h", "s3cret", out, sizeof(out), &err),
                     SW_EPARSE);
    assert_null(strstr(err.msg, "s3cret"));
    /* Too small: refused, and no part of the password left behind. */
    assert_int_equal(sw_redis_url_with_password("redis://a-rather-long-host:6379/0", "s3cret", out,
                                                sizeof(out), &err),
                     SW_ETOOBIG);
    assert_null(strstr(err.msg, "s3cret"));
    assert_null(memchr(out, 's', sizeof(out)));
    assert_int_equal(sw_redis_url_with_password("redis://a-rather-long-host-name:6379/0", NULL, out,
                                                sizeof(out), &err),
                     SW_ETOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_url),
        cmocka_unit_test(test_defaults_user_v6_unix),
        cmocka_unit_test(test_errors_never_echo_password),
        cmocka_unit_test(test_with_password),
        cmocka_unit_test(test_with_password_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
