/*
 * Tests for clusters/exec.c: ExecCredential parsing, RFC 3339 times, and
 * running real plugin scripts (env, args, KUBERNETES_EXEC_INFO, the exact
 * environment a plugin sees, failures, interactiveMode Always refused).
 */
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

#include "clusters/exec.h"
#include "clusters/kubeconfig.h"
#include "common/alloc.h"

#define V1 "client.authentication.k8s.io/v1"

static void test_rfc3339(void **state)
{
    (void)state;
    int64_t ms;
    const char *why = NULL;
    assert_int_equal(sw_parse_rfc3339("1970-01-01T00:00:00Z", &ms, &why), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(sw_parse_rfc3339("2026-11-21T10:00:00.250Z", &ms, &why), 0);
    assert_int_equal(ms, 1795255200250LL);
    assert_int_equal(sw_parse_rfc3339("2026-11-21T12:00:00+02:00", &ms, &why), 0);
    assert_int_equal(ms, 1795255200000LL);
    assert_int_equal(sw_parse_rfc3339("2026-11-21 10:00:00", &ms, NULL), SW_EPARSE);
    assert_int_equal(sw_parse_rfc3339("2026-13-21T10:00:00Z", &ms, NULL), SW_EPARSE);
    assert_int_equal(sw_parse_rfc3339("2026-11-21T10:00:00Zjunk", &ms, NULL), SW_EPARSE);
}

/*
 * Out-of-range fields are refused, never normalised into another date
 * (timegm turns Feb 30 into Mar 2). The accepted and refused sets, and the
 * instants, are what Go's time.Parse(time.RFC3339, ...) gives (client-go
 * decodes expirationTimestamp with it), except that offsets of +24:00 or
 * with minute 60, which Go tolerates, are refused as RFC 3339 says.
 */
static void test_rfc3339_ranges(void **state)
{
    (void)state;
    struct {
        const char *s;
        int64_t ms;
    } good[] = {
        {"2024-02-29T00:00:00Z", 1709164800000LL}, /* divisible by 4 */
        {"2000-02-29T00:00:00Z", 951782400000LL},  /* divisible by 400 */
        {"2026-04-30T00:00:00Z", 1777507200000LL},
        {"2026-12-31T23:59:59Z", 1798761599000LL},
        {"2026-01-01T23:59:59-00:00", 1767311999000LL},
        {"2026-01-01T23:59:59+23:59", 1767225659000LL},
        {"2026-01-01T00:00:00-23:59", 1767311940000LL},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int64_t ms = -1;
        const char *why = "unset";
        int rc = sw_parse_rfc3339(good[i].s, &ms, &why);
        if (rc != 0 || ms != good[i].ms)
            fail_msg("%s: rc=%d ms=%lld (want %lld) why=%s", good[i].s, rc, (long long)ms,
                     (long long)good[i].ms, why ? why : "(null)");
    }
    struct {
        const char *s;
        const char *why;
    } bad[] = {
        {"2023-02-29T00:00:00Z", "day out of range"}, /* not a leap year */
        {"1900-02-29T00:00:00Z", "day out of range"}, /* divisible by 100, not 400 */
        {"2026-02-30T00:00:00Z", "day out of range"},
        {"2026-04-31T00:00:00Z", "day out of range"},
        {"2026-01-32T00:00:00Z", "day out of range"},
        {"2026-01-00T00:00:00Z", "day out of range"},
        {"2026-00-10T00:00:00Z", "month out of range"},
        {"2026-13-10T00:00:00Z", "month out of range"},
        {"2026-01-01T24:00:00Z", "hour out of range"},
        {"2026-01-01T23:60:00Z", "minute out of range"},
        {"2026-01-01T23:59:60Z", "second out of range"}, /* Go refuses leap seconds */
        {"2016-12-31T23:59:60Z", "second out of range"}, /* even a real one */
        {"2026-01-01T23:59:59+24:00", "time zone offset hour out of range"},
        {"2026-01-01T23:59:59+25:00", "time zone offset hour out of range"},
        {"2026-01-01T23:59:59+23:60", "time zone offset minute out of range"},
        {"2026-01-01T23:59:59+0200", "expected a time zone Z or +hh:mm or -hh:mm"},
        {"2026-01-01T23:59:59+02", "expected a time zone Z or +hh:mm or -hh:mm"},
        {"2026-01-01T23:59:59", "expected a time zone Z or +hh:mm or -hh:mm"},
        {"2026-01-01T23:59:59z", "expected a time zone Z or +hh:mm or -hh:mm"},
        {"2026-01-01T23:59:59.Z", "expected digits after the decimal point"},
        {"2026-01-01T23:59:59+02:00 ", "unexpected text after the time zone"},
        {"2026-01-01t23:59:59Z", "expected YYYY-MM-DDTHH:MM:SS"},
        {"2026-01-01 23:59:59Z", "expected YYYY-MM-DDTHH:MM:SS"},
        {"26-01-01T23:59:59Z", "expected YYYY-MM-DDTHH:MM:SS"},
        {"", "expected YYYY-MM-DDTHH:MM:SS"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = 42;
        const char *why = NULL;
        int rc = sw_parse_rfc3339(bad[i].s, &ms, &why);
        if (rc != SW_EPARSE || why == NULL || strcmp(why, bad[i].why) != 0 || ms != 42)
            fail_msg("\"%s\": rc=%d ms=%lld why=%s (want %s)", bad[i].s, rc, (long long)ms,
                     why ? why : "(null)", bad[i].why);
    }

    /* The reason reaches the person reading the error. */
    struct sw_exec_cred c;
    struct sw_error err;
    const char *out = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
                      "{\"token\":\"tok\",\"expirationTimestamp\":\"2023-02-29T10:00:00Z\"}}";
    assert_int_equal(sw_exec_cred_parse(out, strlen(out), V1,
                                        "kubeconfig \"lab.kubeconfig\": user \"u\": exec plugin "
                                        "\"./plugin.sh\"",
                                        &c, &err),
                     SW_EPARSE);
    assert_string_equal(err.msg, "kubeconfig \"lab.kubeconfig\": user \"u\": exec plugin "
                                 "\"./plugin.sh\": output: field \"status.expirationTimestamp\": "
                                 "expected an RFC 3339 time, got \"2023-02-29T10:00:00Z\" (day "
                                 "out of range)");
    assert_null(c.token);
}

static void test_parse_cred(void **state)
{
    (void)state;
    struct sw_exec_cred c;
    struct sw_error err;
    const char *ok = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
                     "{\"token\":\"tok-123\",\"expirationTimestamp\":\"2026-11-21T10:00:00Z\"}}";
    assert_int_equal(sw_exec_cred_parse(ok, strlen(ok), V1, "plugin p", &c, &err), 0);
    assert_string_equal(c.token, "tok-123");
    assert_int_equal(c.expiry_ms, 1795255200000LL);
    sw_exec_cred_clear(&c);
    const char *cert = "{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
                       "{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\n\","
                       "\"clientKeyData\":\"-----BEGIN PRIVATE KEY-----\\n\"}}";
    assert_int_equal(sw_exec_cred_parse(cert, strlen(cert), V1, "plugin p", &c, &err), 0);
    assert_null(c.token);
    assert_string_equal((char *)c.cert, "-----BEGIN CERTIFICATE-----\n");
    assert_int_equal(c.expiry_ms, 0);
    sw_exec_cred_clear(&c);

    struct {
        const char *out;
        const char *needle;
    } bad[] = {
        {"not json", "plugin p: output"},
        {"{\"kind\":\"Pod\",\"apiVersion\":\"" V1 "\"}", "expected ExecCredential"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
         "\"status\":{\"token\":\"x\"}}",
         "expected " V1 " as in the kubeconfig"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\"}", "field \"status\""},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{}}",
         "expected a token or a client certificate"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":{\"token\":\"secret-"
         "tok\",\"expirationTimestamp\":\"soon\"}}",
         "status.expirationTimestamp"},
        {"{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
         "{\"clientCertificateData\":\"x\"}}",
         "clientKeyData"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sw_error_clear(&err);
        int rc = sw_exec_cred_parse(bad[i].out, strlen(bad[i].out), V1, "plugin p", &c, &err);
        if (rc == 0 || strstr(err.msg, bad[i].needle) == NULL)
            fail_msg("case %zu: rc=%d msg=%s", i, rc, err.msg);
        assert_null(strstr(err.msg, "secret-tok"));
        assert_null(c.token);
    }
}

static char dir[64];

/* A kubeconfig running `script` as its plugin, with `env` as the exec
 * env list (YAML flow sequence). */
static struct sw_kube_target *target_with_env(const char *script, const char *mode, const char *env)
{
    char path[128], cfg[8192];
    snprintf(path, sizeof(path), "%s/plugin.sh", dir);
    FILE *f = fopen(path, "w");
    fputs(script, f);
    fclose(f);
    chmod(path, 0755);
    snprintf(cfg, sizeof(cfg),
             "current-context: a\n"
             "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
             "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
             "users: [{name: u, user: {exec: {apiVersion: " V1 ", command: ./plugin.sh, "
             "args: [one, 'two words'], env: %s, "
             "interactiveMode: %s, provideClusterInfo: true}}}]\n",
             env, mode);
    char kpath[128];
    snprintf(kpath, sizeof(kpath), "%s/config", dir);
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    if (sw_kubeconfig_parse(cfg, strlen(cfg), kpath, NULL, &t, &err) != 0)
        fail_msg("%s", err.msg);
    return t;
}

static struct sw_kube_target *target_with_script(const char *script, const char *mode)
{
    return target_with_env(script, mode, "[{name: PLUGIN_ENV, value: hello}]");
}

static void test_run_plugin(void **state)
{
    (void)state;
    /* The plugin checks what it was given and answers with a token made of
     * it, so the test sees args, env and the exec info arrived. */
    const char *script =
        "#!/bin/sh\n"
        "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*'\"server\":\"https://"
        "127.0.0.1:1\"'*) ;; *) echo \"bad info $KUBERNETES_EXEC_INFO\" >&2; exit 3;; esac\n"
        "[ -t 0 ] && { echo 'stdin is a tty' >&2; exit 4; }\n"
        "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"
        "{\"token\":\"%s-%s-%s\",\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}' "
        "\"$1\" \"$2\" \"$PLUGIN_ENV\"\n";
    struct sw_kube_target *t = target_with_script(script, "Never");
    struct sw_exec_cred c;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = sw_exec_run_sync(t, &c, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(c.token, "one-two words-hello");
    assert_int_equal(c.expiry_ms, 1893456000000LL);
    sw_exec_cred_clear(&c);
    sw_kube_target_free(t);
}

/* The plugin copies the environment it was started with (its shell's
 * /proc/$$/environ, before the shell adds anything of its own) to a file,
 * and the test reads it back: NUL-separated NAME=value entries. */
#define ENV_DUMP_SCRIPT                                                                            \
    "#!/bin/sh\n"                                                                                  \
    "cp /proc/$$/environ \"${0%/*}/env.out\" || exit 5\n"                                          \
    "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"" V1 "\",\"status\":"                   \
    "{\"token\":\"t\"}}'\n"

static size_t read_env_dump(char ***out)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/env.out", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char data[65536];
    size_t n = fread(data, 1, sizeof(data) - 1, f);
    fclose(f);
    unlink(path);
    assert_true(n < sizeof(data) - 1);
    data[n] = '\0';
    static char *vars[256];
    size_t count = 0;
    for (size_t i = 0; i < n; i += strlen(data + i) + 1) {
        assert_true(count < sizeof(vars) / sizeof(vars[0]));
        vars[count++] = data + i;
    }
    *out = vars;
    return count;
}

static const char *find_var(char **vars, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (strncmp(vars[i], name, len) == 0 && vars[i][len] == '=')
            return vars[i] + len + 1;
    return NULL;
}

static void run_ok(struct sw_kube_target *t)
{
    struct sw_exec_cred c;
    struct sw_error err;
    sw_error_clear(&err);
    if (sw_exec_run_sync(t, &c, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(c.token, "t");
    sw_exec_cred_clear(&c);
}

/*
 * A plugin sees the kubeconfig's env, PATH and HOME, and
 * KUBERNETES_EXEC_INFO, and nothing else of the hub's environment: not the
 * Redis password, not the sealing key.
 */
static void test_plugin_environment(void **state)
{
    (void)state;
    char home[96], old_home[1024] = "";
    snprintf(home, sizeof(home), "%s/home", dir);
    if (getenv("HOME") != NULL)
        snprintf(old_home, sizeof(old_home), "%s", getenv("HOME"));
    assert_int_equal(setenv("SPILLWAY_REDIS_PASSWORD", "redis-secret-35", 1), 0);
    assert_int_equal(setenv("SPILLWAY_SECRET_KEY", "seal-secret-35", 1), 0);
    assert_int_equal(setenv("HOME", home, 1), 0);
    char path[2048];
    assert_non_null(getenv("PATH"));
    snprintf(path, sizeof(path), "%s", getenv("PATH"));

    struct sw_kube_target *t = target_with_script(ENV_DUMP_SCRIPT, "Never");
    run_ok(t);
    sw_kube_target_free(t);
    char **vars;
    size_t n = read_env_dump(&vars);
    if (find_var(vars, n, "SPILLWAY_REDIS_PASSWORD") != NULL)
        fail_msg("the plugin saw SPILLWAY_REDIS_PASSWORD (%zu variables in all)", n);
    assert_null(find_var(vars, n, "SPILLWAY_SECRET_KEY"));
    assert_non_null(find_var(vars, n, "PATH"));
    assert_string_equal(find_var(vars, n, "PATH"), path);
    assert_non_null(find_var(vars, n, "HOME"));
    assert_string_equal(find_var(vars, n, "HOME"), home);
    assert_non_null(find_var(vars, n, "PLUGIN_ENV"));
    assert_string_equal(find_var(vars, n, "PLUGIN_ENV"), "hello");
    assert_non_null(find_var(vars, n, "KUBERNETES_EXEC_INFO"));
    assert_string_equal(find_var(vars, n, "KUBERNETES_EXEC_INFO"),
                        "{\"spec\":{\"interactive\":false,\"cluster\":{\"server\":\"https://"
                        "127.0.0.1:1\",\"insecure-skip-tls-verify\":false}},\"kind\":"
                        "\"ExecCredential\",\"apiVersion\":\"" V1 "\"}");
    /* Those four and nothing else. */
    for (size_t i = 0; i < n; i++)
        if (strncmp(vars[i], "PATH=", 5) != 0 && strncmp(vars[i], "HOME=", 5) != 0 &&
            strncmp(vars[i], "PLUGIN_ENV=", 11) != 0 &&
            strncmp(vars[i], "KUBERNETES_EXEC_INFO=", 21) != 0)
            fail_msg("the plugin saw %.*s", (int)strcspn(vars[i], "="), vars[i]);
    assert_int_equal(n, 4);

    /* The kubeconfig's env wins over the fixed set, the last of a repeated
     * name wins (Go's os/exec keeps the last, so kubectl's plugins see that
     * one), and KUBERNETES_EXEC_INFO is always the hub's own. Without HOME
     * in the hub's environment, the plugin gets none. */
    assert_int_equal(unsetenv("HOME"), 0);
    char env[4096];
    snprintf(env, sizeof(env),
             "[{name: PATH, value: '/plugin/bin:%s'}, {name: A, value: first}, "
             "{name: KUBERNETES_EXEC_INFO, value: forged}, {name: A, value: last}]",
             path);
    t = target_with_env(ENV_DUMP_SCRIPT, "Never", env);
    run_ok(t);
    sw_kube_target_free(t);
    n = read_env_dump(&vars);
    char want_path[4096];
    snprintf(want_path, sizeof(want_path), "/plugin/bin:%s", path);
    assert_string_equal(find_var(vars, n, "PATH"), want_path);
    assert_string_equal(find_var(vars, n, "A"), "last");
    assert_null(find_var(vars, n, "HOME"));
    assert_non_null(find_var(vars, n, "KUBERNETES_EXEC_INFO"));
    assert_non_null(
        strstr(find_var(vars, n, "KUBERNETES_EXEC_INFO"), "\"kind\":\"ExecCredential\""));
    assert_int_equal(n, 3);

    unsetenv("SPILLWAY_REDIS_PASSWORD");
    unsetenv("SPILLWAY_SECRET_KEY");
    if (old_home[0] != '\0')
        setenv("HOME", old_home, 1);
}

static void test_plugin_failures(void **state)
{
    (void)state;
    struct sw_exec_cred c;
    struct sw_error err;
    struct sw_kube_target *t = target_with_script(
        "#!/bin/sh\necho 'first'>&2\necho 'login required' >&2\nexit 7\n", "IfAvailable");
    assert_int_equal(sw_exec_run_sync(t, &c, &err), SW_EAUTH);
    assert_non_null(strstr(err.msg, "exited with status 7: login required"));
    assert_non_null(strstr(err.msg, "plugin.sh"));
    sw_kube_target_free(t);

    t = target_with_script("#!/bin/sh\necho garbage\n", "Never");
    assert_int_equal(sw_exec_run_sync(t, &c, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "exec plugin"));
    sw_kube_target_free(t);

    t = target_with_script("#!/bin/sh\nexit 0\n", "Always");
    assert_int_equal(sw_exec_run_sync(t, &c, &err), SW_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "interactiveMode is Always"));
    sw_kube_target_free(t);

    t = target_with_script("#!/bin/sh\n", "Never");
    sw_free(t->exec->command);
    t->exec->command = sw_strdup("/nonexistent/plugin");
    assert_int_equal(sw_exec_run_sync(t, &c, &err), SW_EAUTH);
    assert_non_null(strstr(err.msg, "cannot start"));
    sw_kube_target_free(t);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sw-exec-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char p[128];
    snprintf(p, sizeof(p), "%s/plugin.sh", dir);
    unlink(p);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3339),         cmocka_unit_test(test_rfc3339_ranges),
        cmocka_unit_test(test_parse_cred),      cmocka_unit_test(test_run_plugin),
        cmocka_unit_test(test_plugin_failures), cmocka_unit_test(test_plugin_environment),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
