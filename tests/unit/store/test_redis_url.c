/* Tests for store/redis.c's URL parsing, redaction and password insertion
 * (no server needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
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

static void test_sentinel_url(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    assert_int_equal(sw_redis_url_parse("redis+sentinel://hub:p%40ss@10.0.0.1:26380,sentinel-b,"
                                        "[::1]:26381/my-master.1/7",
                                        &u, &err),
                     0);
    assert_true(u.sentinel);
    assert_null(u.host);
    assert_int_equal(u.nsentinels, 3);
    assert_string_equal(u.sentinel_host[0], "10.0.0.1");
    assert_int_equal(u.sentinel_port[0], 26380);
    assert_string_equal(u.sentinel_host[1], "sentinel-b");
    assert_int_equal(u.sentinel_port[1], SW_REDIS_SENTINEL_PORT);
    assert_string_equal(u.sentinel_host[2], "::1");
    assert_int_equal(u.sentinel_port[2], 26381);
    assert_string_equal(u.master, "my-master.1");
    assert_int_equal(u.db, 7);
    assert_string_equal(u.user, "hub");
    assert_string_equal(u.password, "p@ss");
    assert_null(u.sentinel_password);
    char red[256];
    sw_redis_url_redacted(&u, red, sizeof(red));
    assert_string_equal(
        red, "redis+sentinel://hub:***@10.0.0.1:26380,sentinel-b:26379,[::1]:26381/my-master.1/7");
    sw_redis_url_free(&u);

    /* One Sentinel, no database: db 0; the Sentinel password as a parameter. */
    assert_int_equal(sw_redis_url_parse("redis+sentinel://h/m?sentinelPassword=s%2F1", &u, &err),
                     0);
    assert_int_equal(u.nsentinels, 1);
    assert_int_equal(u.db, 0);
    assert_null(u.password);
    assert_string_equal(u.sentinel_password, "s/1");
    sw_redis_url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "redis+sentinel://h:26379/m/0?sentinelPassword=***");
    sw_redis_url_free(&u);
    assert_int_equal(sw_redis_url_parse("redis+sentinel://h/m/", &u, &err), 0);
    assert_int_equal(u.db, 0);
    sw_redis_url_free(&u);
}

static void test_sentinel_url_errors(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    static const struct {
        const char *url;
        const char *says;
    } bad[] = {
        {"redis+sentinel://", "at least one Sentinel"},
        {"redis+sentinel://:hunter2@/m", "at least one Sentinel"},
        {"redis+sentinel://a:1,,b:2/m", "Sentinel 2 of the list is empty"},
        {"redis+sentinel://a:1,/m", "Sentinel 2 of the list is empty"},
        {"redis+sentinel://a:1,b:0/m", "port number 1-65535 in Sentinel 2"},
        {"redis+sentinel://a:1,:5/m", "host of Sentinel 2 is empty"},
        {"redis+sentinel://[::1:5/m", "unterminated '[' in Sentinel 1"},
        {"redis+sentinel://:hunter2@a:1", "expected /MASTERNAME"},
        {"redis+sentinel://a:1/", "expected /MASTERNAME"},
        {"redis+sentinel://a:1//0", "expected /MASTERNAME"},
        {"redis+sentinel://a:1/my master", "master name may hold"},
        {"redis+sentinel://a:1/m/x", "database number"},
        {"redis+sentinel://a:1/m/0?password=hunter2", "only query parameter"},
        {"redis+sentinel://a:1/m?sentinelPassword=hunter2%z", "bad %-escape"},
        {"redis+sentinel://a:1,b:2,A:1/m", "Sentinel 3 is Sentinel 1 again (A:1)"},
        {"redis+sentinel://a,a:26379/m", "Sentinel 2 is Sentinel 1 again"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sw_redis_url_parse(bad[i].url, &u, &err), SW_EPARSE);
        if (strstr(err.msg, bad[i].says) == NULL)
            fail_msg("%s: got \"%s\", expected it to say \"%s\"", bad[i].url, err.msg, bad[i].says);
        assert_null(strstr(err.msg, "hunter2"));
    }
    /* Seventeen Sentinels are too many. */
    char many[512] = "redis+sentinel://";
    for (int i = 0; i < SW_REDIS_MAX_SENTINELS + 1; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sh%d", i ? "," : "", i);
    strcat(many, "/m");
    assert_int_equal(sw_redis_url_parse(many, &u, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "more than 16 Sentinels"));
}

static void test_sentinel_passwords(void **state)
{
    (void)state;
    char a[256], b[256];
    struct sw_error err;
    const char *url = "redis+sentinel://127.0.0.1:26391,127.0.0.1:26392/spillway/7";
    assert_int_equal(sw_redis_url_with_password(url, "d@ta", a, sizeof(a), &err), 0);
    assert_string_equal(a, "redis+sentinel://:d%40ta@127.0.0.1:26391,127.0.0.1:26392/spillway/7");
    assert_int_equal(sw_redis_url_with_sentinel_password(a, "s&=?", b, sizeof(b), &err), 0);
    assert_string_equal(b, "redis+sentinel://:d%40ta@127.0.0.1:26391,127.0.0.1:26392/spillway/7"
                           "?sentinelPassword=s%26%3D%3F");
    struct sw_redis_url u;
    assert_int_equal(sw_redis_url_parse(b, &u, &err), 0);
    assert_string_equal(u.password, "d@ta");
    assert_string_equal(u.sentinel_password, "s&=?");
    assert_string_equal(u.master, "spillway");
    assert_int_equal(u.db, 7);
    sw_redis_url_free(&u);
    /* NULL: unchanged. */
    assert_int_equal(sw_redis_url_with_sentinel_password(url, NULL, b, sizeof(b), &err), 0);
    assert_string_equal(b, url);
    /* Refused: not a Sentinel URL; given twice; too long (nothing left behind). */
    assert_int_equal(
        sw_redis_url_with_sentinel_password("redis://h/0", "hunter2", b, sizeof(b), &err),
        SW_EINVAL);
    assert_non_null(strstr(err.msg, "not a Sentinel one"));
    assert_null(strstr(err.msg, "hunter2"));
    assert_int_equal(sw_redis_url_with_sentinel_password("redis+sentinel://h/m?sentinelPassword=x",
                                                         "hunter2", b, sizeof(b), &err),
                     SW_EINVAL);
    assert_non_null(strstr(err.msg, "already holds a Sentinel password"));
    char small[40];
    assert_int_equal(sw_redis_url_with_sentinel_password("redis+sentinel://h/m",
                                                         "hunter2hunter2hunter2", small,
                                                         sizeof(small), &err),
                     SW_ETOOBIG);
    assert_null(memchr(small, 'h', sizeof(small)));
    /* The data password goes in the credentials, never after the master. */
    assert_int_equal(
        sw_redis_url_with_password("redis+sentinel://hub:@h:1,g/m", "pw", a, sizeof(a), &err), 0);
    assert_string_equal(a, "redis+sentinel://hub:pw@h:1,g/m");
}

/* Every allocation of the parser may fail: an error, never a leak or a crash. */
/*
 * Parses url with the n-th allocation failing, n = 1, 2, ... until a parse
 * succeeds: each failure is SW_ENOMEM saying so, and the success (with no
 * failure injected) passes check.
 */
static void parse_under_alloc_failures(const char *url, void (*check)(const struct sw_redis_url *))
{
    int ok = 0;
    for (uint64_t n = 1; n < 64 && !ok; n++) {
        struct sw_redis_url u;
        struct sw_error err;
        sw_alloc_fail_at(n);
        int rc = sw_redis_url_parse(url, &u, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (rc == 0) {
            assert_false(injected);
            check(&u);
            sw_redis_url_free(&u);
            ok = 1;
        } else {
            assert_int_equal(rc, SW_ENOMEM);
            assert_non_null(strstr(err.msg, "out of memory"));
        }
    }
    assert_true(ok);
}

static void check_sentinel_password(const struct sw_redis_url *u)
{
    assert_string_equal(u->sentinel_password, "sp");
}

static void check_tls_key_file(const struct sw_redis_url *u)
{
    assert_string_equal(u->tls_key_file, "/k");
}

static void test_sentinel_url_alloc_failures(void **state)
{
    (void)state;
    const char *url = "redis+sentinel://hub:pw@a:1,b:2,[::1]:3/master/2?sentinelPassword=sp";
    parse_under_alloc_failures(url, check_sentinel_password);
}

/* rediss:// and rediss+sentinel://: TLS, its files, and ACL users. */
static void test_tls_urls(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    char red[300];
    assert_int_equal(sw_redis_url_parse("rediss://hub:p%40ss@redis.example:6380/3"
                                        "?tls_ca_file=/etc/ca%20dir/ca.pem"
                                        "&tls_cert_file=/c.pem&tls_key_file=/k.pem",
                                        &u, &err),
                     0);
    assert_true(u.tls);
    assert_false(u.sentinel);
    assert_string_equal(u.host, "redis.example");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 3);
    assert_string_equal(u.user, "hub");
    assert_string_equal(u.password, "p@ss");
    assert_string_equal(u.tls_ca_file, "/etc/ca dir/ca.pem");
    assert_string_equal(u.tls_cert_file, "/c.pem");
    assert_string_equal(u.tls_key_file, "/k.pem");
    sw_redis_url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "rediss://hub:***@redis.example:6380/3");
    sw_redis_url_free(&u);
    /* No database, no files: the system's CAs, port 6379. */
    assert_int_equal(sw_redis_url_parse("rediss://:pw@h?tls_ca_file=/ca", &u, &err), 0);
    assert_true(u.tls);
    assert_string_equal(u.host, "h");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_string_equal(u.tls_ca_file, "/ca");
    sw_redis_url_free(&u);
    assert_int_equal(sw_redis_url_parse("rediss://h", &u, &err), 0);
    assert_true(u.tls);
    assert_null(u.tls_ca_file);
    sw_redis_url_free(&u);
    /* redis:// stays plain. */
    assert_int_equal(sw_redis_url_parse("redis://h/0", &u, &err), 0);
    assert_false(u.tls);
    sw_redis_url_free(&u);
    /* Sentinel with TLS, beside the Sentinels' password, in any order. */
    assert_int_equal(sw_redis_url_parse("rediss+sentinel://u:pw@a:1,b/m/2?tls_ca_file=/ca"
                                        "&sentinelPassword=s%26p",
                                        &u, &err),
                     0);
    assert_true(u.tls);
    assert_true(u.sentinel);
    assert_int_equal(u.nsentinels, 2);
    assert_string_equal(u.master, "m");
    assert_int_equal(u.db, 2);
    assert_string_equal(u.user, "u");
    assert_string_equal(u.sentinel_password, "s&p");
    assert_string_equal(u.tls_ca_file, "/ca");
    sw_redis_url_redacted(&u, red, sizeof(red));
    assert_string_equal(red, "rediss+sentinel://u:***@a:1,b:26379/m/2?sentinelPassword=***");
    sw_redis_url_free(&u);
    /* The unix form keeps its ?db=N. */
    assert_int_equal(sw_redis_url_parse("unix:///run/r.sock?db=4", &u, &err), 0);
    assert_int_equal(u.db, 4);
    sw_redis_url_free(&u);
    /* Passwords given apart land in the right places of a rediss URL. */
    char a[512], b[512];
    assert_int_equal(
        sw_redis_url_with_password("rediss://h:1/0?tls_ca_file=/ca", "p?w", a, sizeof(a), &err), 0);
    assert_string_equal(a, "rediss://:p%3Fw@h:1/0?tls_ca_file=/ca");
    assert_int_equal(sw_redis_url_with_sentinel_password("rediss+sentinel://h/m?tls_ca_file=/ca",
                                                         "s?", b, sizeof(b), &err),
                     0);
    assert_string_equal(b, "rediss+sentinel://h/m?tls_ca_file=/ca&sentinelPassword=s%3F");
    assert_int_equal(sw_redis_url_parse(b, &u, &err), 0);
    assert_string_equal(u.sentinel_password, "s?");
    assert_string_equal(u.tls_ca_file, "/ca");
    sw_redis_url_free(&u);
}

static void test_tls_url_errors(void **state)
{
    (void)state;
    struct sw_redis_url u;
    struct sw_error err;
    static const struct {
        const char *url;
        const char *says;
    } bad[] = {
        {"redis://:hunter2@h/0?tls_ca_file=/ca", "\"tls_ca_file\" is for rediss://"},
        {"redis+sentinel://:hunter2@h/m?tls_cert_file=/c", "\"tls_cert_file\" is for rediss://"},
        {"rediss://:hunter2@h/0?tls_cert_file=/c", "tls_cert_file and tls_key_file go together"},
        {"rediss://:hunter2@h/0?tls_key_file=/k", "tls_cert_file and tls_key_file go together"},
        {"rediss://:hunter2@h/0?tls_ca_file=ca.pem", "absolute file path (under 4096 bytes) in "
                                                     "\"tls_ca_file\""},
        {"rediss://:hunter2@h/0?tls_ca_file=", "absolute file path"},
        {"rediss://:hunter2@h/0?tls_ca_file=/a&tls_ca_file=/b", "\"tls_ca_file\" is given twice"},
        {"rediss://:hunter2@h/0?tls_ca_file=/a%zz", "bad %-escape in query parameter"},
        {"rediss://:hunter2@h/0?tls_ca_file", "expected key=value"},
        {"rediss://:hunter2@h/0?tls_ca_file=/a&hunter2", "expected key=value"},
        {"rediss://:hunter2@h/0?sentinelPassword=hunter2", "unknown query parameter"},
        {"rediss://:hunter2@h/0?db=1", "unknown query parameter \"db\""},
        {"rediss://:hunter2@h/x?tls_ca_file=/a", "database number"},
        {"rediss://:hunter2@/0", "host is empty"},
        {"rediss+sentinel://:hunter2@a:1/m/0x", "database number"},
        {"redis+ssl://:hunter2@h", "rediss://"},
        {"unix:///s?db=x", "database number"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sw_redis_url_parse(bad[i].url, &u, &err), SW_EPARSE);
        if (strstr(err.msg, bad[i].says) == NULL)
            fail_msg("%s: got \"%s\", expected it to say \"%s\"", bad[i].url, err.msg, bad[i].says);
        assert_null(strstr(err.msg, "hunter2"));
    }
}

static void test_tls_url_alloc_failures(void **state)
{
    (void)state;
    const char *url = "rediss+sentinel://hub:pw@a:1,b:2/master/2?tls_ca_file=/ca"
                      "&tls_cert_file=/c&tls_key_file=/k&sentinelPassword=sp";
    parse_under_alloc_failures(url, check_tls_key_file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_url),
        cmocka_unit_test(test_defaults_user_v6_unix),
        cmocka_unit_test(test_errors_never_echo_password),
        cmocka_unit_test(test_with_password),
        cmocka_unit_test(test_with_password_refused),
        cmocka_unit_test(test_sentinel_url),
        cmocka_unit_test(test_sentinel_url_errors),
        cmocka_unit_test(test_sentinel_passwords),
        cmocka_unit_test(test_tls_urls),
        cmocka_unit_test(test_tls_url_errors),
        cmocka_unit_test(test_tls_url_alloc_failures),
        cmocka_unit_test(test_sentinel_url_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
