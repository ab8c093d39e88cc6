/* Tests for controller/cli/globals.c: global options anywhere in argv,
 * flags over environment, the Redis password kept off the command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/cli/globals.h"

static void clear_env(void)
{
    unsetenv(SW_CLI_REDIS_URL_ENV);
    unsetenv(SW_CLI_REDIS_PASSWORD_FILE_ENV);
    unsetenv(SW_CLI_REDIS_PASSWORD_ENV);
    unsetenv(SW_CLI_SECRET_KEY_FILE_ENV);
    unsetenv(SW_SEAL_KEY_ENV);
    unsetenv(SW_CLI_LOG_ENV);
}

static int setup(void **state)
{
    (void)state;
    clear_env();
    return 0;
}

/* Parses a NULL-terminated list; warnings go to warn_out (may be NULL). */
static int parse(char **argv, int *argc, struct sw_cli_globals *g, char *warn_out, size_t wlen,
                 struct sw_error *err)
{
    int n = 0;
    while (argv[n] != NULL)
        n++;
    *argc = n;
    char *buf = NULL;
    size_t len = 0;
    FILE *w = open_memstream(&buf, &len);
    int rc = sw_cli_globals_parse(argc, argv, g, w, err);
    fclose(w);
    if (warn_out != NULL)
        snprintf(warn_out, wlen, "%s", buf ? buf : "");
    free(buf);
    return rc;
}

static void test_before_and_after_the_command(void **state)
{
    (void)state;
    struct sw_cli_globals g;
    struct sw_error err;
    char warn[512];
    int argc;
    char *a1[] = {"spillctl", "--redis", "redis://h:1/0", "cluster", "list", "-o", "json", NULL};
    assert_int_equal(parse(a1, &argc, &g, warn, sizeof(warn), &err), 0);
    assert_int_equal(argc, 3);
    assert_string_equal(a1[1], "cluster");
    assert_string_equal(a1[2], "list");
    assert_null(a1[3]);
    assert_string_equal(g.redis_url, "redis://h:1/0");
    assert_int_equal(g.output, SW_CLI_JSON);
    assert_int_equal(g.output_given, 1);
    assert_int_equal(g.log_level, SW_LOG_WARN);
    assert_string_equal(warn, "");

    char *a2[] = {"spillctl",   "cluster",
                  "list",       "--redis=redis://h:1/0",
                  "-oyaml",     "--log-level=debug",
                  "--no-probe", "--secret-key-file",
                  "k",          NULL};
    assert_int_equal(parse(a2, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(argc, 4);
    assert_string_equal(a2[3], "--no-probe");
    assert_string_equal(g.redis_url, "redis://h:1/0");
    assert_int_equal(g.output, SW_CLI_YAML);
    assert_int_equal(g.log_level, SW_LOG_DEBUG);
    assert_string_equal(g.secret_key_file, "k");

    /* After "--" nothing is taken. */
    char *a3[] = {"spillctl", "x", "--", "-o", "json", NULL};
    assert_int_equal(parse(a3, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(argc, 5);
    assert_int_equal(g.output, SW_CLI_TABLE);
    assert_int_equal(g.output_given, 0);
}

static void test_flag_wins_over_environment(void **state)
{
    (void)state;
    struct sw_cli_globals g;
    struct sw_error err;
    int argc;
    setenv(SW_CLI_REDIS_URL_ENV, "redis://env:1/0", 1);
    setenv(SW_CLI_SECRET_KEY_FILE_ENV, "env.key", 1);
    setenv(SW_CLI_LOG_ENV, "error", 1);
    char *a1[] = {"spillctl", "version", NULL};
    assert_int_equal(parse(a1, &argc, &g, NULL, 0, &err), 0);
    assert_string_equal(g.redis_url, "redis://env:1/0");
    assert_int_equal(g.redis_url_given, 0);
    assert_string_equal(g.secret_key_file, "env.key");
    assert_int_equal(g.log_level, SW_LOG_ERROR);
    char *a2[] = {"spillctl",
                  "--redis",
                  "redis://flag:1/0",
                  "--secret-key-file",
                  "f.key",
                  "--log-level",
                  "info",
                  "version",
                  NULL};
    assert_int_equal(parse(a2, &argc, &g, NULL, 0, &err), 0);
    assert_string_equal(g.redis_url, "redis://flag:1/0");
    assert_int_equal(g.redis_url_given, 1);
    assert_string_equal(g.secret_key_file, "f.key");
    assert_int_equal(g.log_level, SW_LOG_INFO);
    clear_env();
}

static void test_bad_values(void **state)
{
    (void)state;
    struct sw_cli_globals g;
    struct sw_error err;
    int argc;
    char *a1[] = {"spillctl", "cluster", "list", "-o", "xml", NULL};
    assert_int_equal(parse(a1, &argc, &g, NULL, 0, &err), SW_EINVAL);
    assert_string_equal(err.msg, "-o/--output: expected table, wide, json, yaml, csv, name or "
                                 "jsonpath=TEMPLATE, got \"xml\"");
    char *a2[] = {"spillctl", "cluster", "list", "--redis", NULL};
    assert_int_equal(parse(a2, &argc, &g, NULL, 0, &err), SW_EINVAL);
    assert_string_equal(err.msg, "--redis: expected a value after it");
    char *a3[] = {"spillctl", "--log-level", "loud", "version", NULL};
    assert_int_equal(parse(a3, &argc, &g, NULL, 0, &err), SW_EINVAL);
    assert_string_equal(err.msg,
                        "--log-level: expected debug, info, warn, error or off, got \"loud\"");
    char *a4[] = {"spillctl", "--redis", "http://:hunter2@h", "version", NULL};
    assert_int_equal(parse(a4, &argc, &g, NULL, 0, &err), SW_EINVAL);
    assert_string_equal(err.msg, "--redis: redis URL: expected it to start with redis://, "
                                 "rediss://, redis+sentinel://, rediss+sentinel:// or unix://");
    setenv(SW_CLI_LOG_ENV, "chatty", 1);
    char *a5[] = {"spillctl", "version", NULL};
    assert_int_equal(parse(a5, &argc, &g, NULL, 0, &err), SW_EINVAL);
    assert_string_equal(err.msg,
                        "SPILLWAY_LOG: expected debug, info, warn, error or off, got \"chatty\"");
    clear_env();
}

static void test_warnings(void **state)
{
    (void)state;
    struct sw_cli_globals g;
    struct sw_error err;
    char warn[512];
    int argc;
    char *a1[] = {"spillctl", "cluster", "list", "--redis", "redis://:hunter2@h:1/0", NULL};
    assert_int_equal(parse(a1, &argc, &g, warn, sizeof(warn), &err), 0);
    assert_string_equal(warn,
                        "spillctl: warning: the Redis password is on the command line, where "
                        "ps shows it; use --redis-password-file or SPILLWAY_REDIS_PASSWORD\n");
    /* The same URL from the environment is fine. */
    setenv(SW_CLI_REDIS_URL_ENV, "redis://:hunter2@h:1/0", 1);
    char *a2[] = {"spillctl", "cluster", "list", NULL};
    assert_int_equal(parse(a2, &argc, &g, warn, sizeof(warn), &err), 0);
    assert_string_equal(warn, "");
    clear_env();
    char *a3[] = {"spillctl", "replicate", "list", "--key-file", "old.key", NULL};
    assert_int_equal(parse(a3, &argc, &g, warn, sizeof(warn), &err), 0);
    assert_string_equal(g.secret_key_file, "old.key");
    assert_int_equal(argc, 3);
    assert_string_equal(warn, "spillctl: warning: --key-file is deprecated; use --secret-key-file "
                              "FILE or SPILLWAY_SECRET_KEY_FILE\n");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_redis_url_with_password(void **state)
{
    (void)state;
    struct sw_cli_globals g;
    struct sw_error err;
    char url[SW_CLI_REDIS_URL_MAX];
    int argc;
    char dir[256];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/sw-globals-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    assert_non_null(mkdtemp(dir));
    char pwfile[300], envfile[300];
    snprintf(pwfile, sizeof(pwfile), "%s/pw", dir);
    snprintf(envfile, sizeof(envfile), "%s/envpw", dir);
    write_file(pwfile, "s3 cr@t\n");
    write_file(envfile, "from-env-file\r\n");

    /* None given. */
    char *a0[] = {"spillctl", "cluster", "list", NULL};
    assert_int_equal(parse(a0, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), SW_ENOENT);
    assert_string_equal(err.msg, "no Redis: give --redis URL or set SPILLWAY_REDIS_URL (the "
                                 "password in --redis-password-file or SPILLWAY_REDIS_PASSWORD)");

    /* The flag's file wins over both variables. */
    setenv(SW_CLI_REDIS_PASSWORD_FILE_ENV, envfile, 1);
    setenv(SW_CLI_REDIS_PASSWORD_ENV, "from-env", 1);
    char *a1[] = {"spillctl", "--redis", "redis://h:1/2", "--redis-password-file", pwfile, NULL};
    assert_int_equal(parse(a1, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), 0);
    assert_string_equal(url, "redis://:s3%20cr%40t@h:1/2");
    /* Then the variable's file, then the password variable. */
    char *a2[] = {"spillctl", "--redis", "redis://h:1/2", NULL};
    assert_int_equal(parse(a2, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), 0);
    assert_string_equal(url, "redis://:from-env-file@h:1/2");
    unsetenv(SW_CLI_REDIS_PASSWORD_FILE_ENV);
    char *a3[] = {"spillctl", "--redis", "redis://h:1/2", NULL};
    assert_int_equal(parse(a3, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), 0);
    assert_string_equal(url, "redis://:from-env@h:1/2");

    /* Two passwords: refused, neither shown. */
    setenv(SW_CLI_REDIS_URL_ENV, "redis://:inurl@h:1/2", 1);
    char *a4[] = {"spillctl", NULL};
    assert_int_equal(parse(a4, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), SW_EINVAL);
    assert_string_equal(err.msg,
                        "SPILLWAY_REDIS_URL: redis URL: it already holds a password, and another "
                        "was given separately; give the password one way only");
    unsetenv(SW_CLI_REDIS_PASSWORD_ENV);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), 0);
    assert_string_equal(url, "redis://:inurl@h:1/2");

    /* A missing or empty password file is named. */
    char missing[300];
    snprintf(missing, sizeof(missing), "%s/none", dir);
    char *a5[] = {"spillctl", "--redis", "redis://h", "--redis-password-file", missing, NULL};
    assert_int_equal(parse(a5, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), SW_ENOENT);
    char want[512];
    snprintf(want, sizeof(want),
             "Redis password file \"%s\": cannot open: No such file or directory", missing);
    assert_string_equal(err.msg, want);
    write_file(pwfile, "\n");
    char *a6[] = {"spillctl", "--redis", "redis://h", "--redis-password-file", pwfile, NULL};
    assert_int_equal(parse(a6, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), SW_EINVAL);
    snprintf(want, sizeof(want), "Redis password file \"%s\": expected a password, found none",
             pwfile);
    assert_string_equal(err.msg, want);
    write_file(pwfile, "one\ntwo\n");
    assert_int_equal(sw_cli_redis_url(&g, url, sizeof(url), &err), SW_EINVAL);
    snprintf(want, sizeof(want), "Redis password file \"%s\": expected the password on one line",
             pwfile);
    assert_string_equal(err.msg, want);
    unlink(pwfile);
    unlink(envfile);
    rmdir(dir);
    clear_env();
}

static void test_secret_key_and_no_output(void **state)
{
    (void)state;
    struct sw_cli_globals g;
    struct sw_error err;
    struct sw_seal_key *key;
    int argc;
    char *a1[] = {"spillctl", "cluster", "add", NULL};
    assert_int_equal(parse(a1, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_secret_key(&g, &key, &err), SW_ENOENT);
    assert_string_equal(err.msg, "no secret key: give --secret-key-file FILE (mode 0600) or set "
                                 "SPILLWAY_SECRET_KEY_FILE, or set SPILLWAY_SECRET_KEY to the key "
                                 "(64 hex digits or base64 of 32 bytes)");
    setenv(SW_SEAL_KEY_ENV, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", 1);
    assert_int_equal(sw_cli_secret_key(&g, &key, &err), 0);
    assert_non_null(key);
    sw_seal_key_free(key);
    assert_int_equal(sw_cli_no_output_format(&g, "cluster add", &err), 0);
    char *a2[] = {"spillctl", "cluster", "add", "-o", "json", NULL};
    assert_int_equal(parse(a2, &argc, &g, NULL, 0, &err), 0);
    assert_int_equal(sw_cli_no_output_format(&g, "cluster add", &err), SW_EINVAL);
    assert_string_equal(err.msg, "cluster add: -o json: this command prints no list; -o applies "
                                 "to listing commands (see spillctl --help)");
    clear_env();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_before_and_after_the_command, setup),
        cmocka_unit_test_setup(test_flag_wins_over_environment, setup),
        cmocka_unit_test_setup(test_bad_values, setup),
        cmocka_unit_test_setup(test_warnings, setup),
        cmocka_unit_test_setup(test_redis_url_with_password, setup),
        cmocka_unit_test_setup(test_secret_key_and_no_output, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
