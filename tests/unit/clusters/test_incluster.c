/*
 * test_incluster.c - the in-cluster target (clusters/kubeconfig.c) built
 * from a pod's environment values, the ServiceAccount folder override, and
 * when a tokenFile is due to be read again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clusters/kubeconfig.h"
#include "common/alloc.h"

static void test_target_from_values(void **state)
{
    (void)state;
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(
        sw_kube_incluster_target("10.96.0.1", "443", "/sa/dir/", " team-a\n", &t, &err), 0);
    assert_string_equal(t->server, "https://10.96.0.1:443");
    assert_string_equal(t->ca_file, "/sa/dir/ca.crt");
    assert_string_equal(t->token_file, "/sa/dir/token");
    assert_null(t->token); /* read by the REST client, as it rotates */
    assert_string_equal(t->namespace, "team-a");
    assert_string_equal(t->context, "in-cluster");
    assert_string_equal(t->source, "in-cluster (/sa/dir/)");
    assert_false(t->insecure);
    assert_string_equal(sw_kube_target_auth_kind(t), "token");
    sw_kube_target_free(t);

    /* IPv6 in brackets (net.JoinHostPort); no namespace file. */
    assert_int_equal(sw_kube_incluster_target("fd00::1", "6443", "/d", NULL, &t, &err), 0);
    assert_string_equal(t->server, "https://[fd00::1]:6443");
    assert_null(t->namespace);
    sw_kube_target_free(t);
    assert_int_equal(sw_kube_incluster_target("h", "1", "/d", "  \n", &t, &err), 0);
    assert_null(t->namespace);
    sw_kube_target_free(t);
}

static void test_bad_values_named(void **state)
{
    (void)state;
    static const struct {
        const char *host, *port, *dir, *want;
    } bad[] = {
        {NULL, "443", "/d", "KUBERNETES_SERVICE_HOST is not set"},
        {"", "443", "/d", "KUBERNETES_SERVICE_HOST is not set"},
        {"h", NULL, "/d", "KUBERNETES_SERVICE_PORT is not set"},
        {"h", "https", "/d",
         "KUBERNETES_SERVICE_PORT: expected a port number 1-65535, got \"https\""},
        {"h", "0", "/d", "KUBERNETES_SERVICE_PORT: expected"},
        {"h", "65536", "/d", "KUBERNETES_SERVICE_PORT: expected"},
        {"h", "-1", "/d", "KUBERNETES_SERVICE_PORT: expected"},
        {"h", "443x", "/d", "KUBERNETES_SERVICE_PORT: expected"},
        {"h/x", "443", "/d",
         "KUBERNETES_SERVICE_HOST: expected a host name or an IP address, got \"h/x\""},
        {"u@h", "443", "/d", "KUBERNETES_SERVICE_HOST: expected"},
        {"h", "443", "", "no ServiceAccount folder"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_kube_target *t = (void *)1;
        struct sw_error err;
        assert_int_equal(
            sw_kube_incluster_target(bad[i].host, bad[i].port, bad[i].dir, NULL, &t, &err),
            SW_EINVAL);
        assert_null(t);
        if (strstr(err.msg, bad[i].want) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i].want);
        assert_non_null(strstr(err.msg, "in-cluster configuration: "));
    }
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth < 100; nth++) {
        struct sw_kube_target *t = NULL;
        struct sw_error err;
        sw_alloc_fail_at(nth);
        int rc = sw_kube_incluster_target("10.96.0.1", "443", "/d", "ns", &t, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            sw_kube_target_free(t);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_null(t);
    }
    fail_msg("allocated more than expected");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The environment's part: availability, the folder override, the files. */
static void test_load_from_environment(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-sa-XXXXXX", p[300];
    assert_non_null(mkdtemp(dir));
    setenv(SW_SERVICEACCOUNT_DIR_ENV, dir, 1);
    assert_string_equal(sw_kube_serviceaccount_dir(), dir);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.11", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    /* No token file: not in a cluster, and the message says what is needed. */
    assert_false(sw_kube_incluster_available());
    assert_int_equal(sw_kube_incluster_load(&t, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, dir));
    assert_non_null(strstr(err.msg, SW_SERVICEACCOUNT_DIR_ENV));
    snprintf(p, sizeof(p), "%s/token", dir);
    write_file(p, "tok\n");
    assert_true(sw_kube_incluster_available());
    /* No CA bundle: named. */
    assert_int_equal(sw_kube_incluster_load(&t, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "certificate-authority"));
    assert_non_null(strstr(err.msg, "ca.crt"));
    snprintf(p, sizeof(p), "%s/ca.crt", dir);
    write_file(p, "-----BEGIN CERTIFICATE-----\n");
    snprintf(p, sizeof(p), "%s/namespace", dir);
    write_file(p, "spillway");
    assert_int_equal(sw_kube_incluster_load(&t, &err), 0);
    assert_string_equal(t->server, "https://127.0.0.11:6443");
    assert_string_equal(t->namespace, "spillway");
    assert_memory_equal(t->ca_data, "-----BEGIN CERTIFICATE-----\n", 28);
    assert_null(t->token);
    snprintf(p, sizeof(p), "%s/token", dir);
    assert_string_equal(t->token_file, p);
    sw_kube_target_free(t);
    /* Without the variables: not in a cluster. */
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_false(sw_kube_incluster_available());
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv(SW_SERVICEACCOUNT_DIR_ENV);
    assert_string_equal(sw_kube_serviceaccount_dir(), SW_SERVICEACCOUNT_DIR);
    setenv(SW_SERVICEACCOUNT_DIR_ENV, "", 1);
    assert_string_equal(sw_kube_serviceaccount_dir(), SW_SERVICEACCOUNT_DIR);
    unsetenv(SW_SERVICEACCOUNT_DIR_ENV);
    const char *names[] = {"token", "ca.crt", "namespace"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void test_token_file_due(void **state)
{
    (void)state;
    struct sw_file_stamp a = {.mtime_ns = 1000, .dev = 1, .ino = 7, .size = 900};
    struct sw_file_stamp b = a;
    /* Never read. */
    assert_true(sw_token_file_due(&a, -1, &b, 0));
    /* Unchanged and young: not due; at the maximum age: due. */
    assert_false(sw_token_file_due(&a, 5000, &b, 5000));
    assert_false(sw_token_file_due(&a, 5000, &b, 5000 + SW_TOKEN_FILE_MAX_AGE_MS - 1));
    assert_true(sw_token_file_due(&a, 5000, &b, 5000 + SW_TOKEN_FILE_MAX_AGE_MS));
    /* Any part of the stamp changed: due at once. */
    b.mtime_ns++;
    assert_true(sw_token_file_due(&a, 5000, &b, 5001));
    b = a;
    b.ino = 8; /* the kubelet's atomic swap: a new file */
    assert_true(sw_token_file_due(&a, 5000, &b, 5001));
    b = a;
    b.size = 901;
    assert_true(sw_token_file_due(&a, 5000, &b, 5001));
    b = a;
    b.dev = 2;
    assert_true(sw_token_file_due(&a, 5000, &b, 5001));
    /* The file cannot be stat'ed now: only its age counts. */
    assert_false(sw_token_file_due(&a, 5000, NULL, 6000));
    assert_true(sw_token_file_due(&a, 5000, NULL, 5000 + SW_TOKEN_FILE_MAX_AGE_MS));
}

static void test_file_stamp(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-st-XXXXXX", p[300], q[300];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof(p), "%s/token", dir);
    snprintf(q, sizeof(q), "%s/token.new", dir);
    struct sw_file_stamp s1, s2;
    assert_int_equal(sw_file_stamp_get(p, &s1), SW_ENOENT);
    write_file(p, "one");
    assert_int_equal(sw_file_stamp_get(p, &s1), 0);
    assert_int_equal(s1.size, 3);
    /* Replaced by rename, as a rotation does: the stamp differs even within
     * the same second, by inode. */
    write_file(q, "two");
    assert_int_equal(rename(q, p), 0);
    assert_int_equal(sw_file_stamp_get(p, &s2), 0);
    assert_true(sw_token_file_due(&s1, 0, &s2, 1));
    unlink(p);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_from_values), cmocka_unit_test(test_bad_values_named),
        cmocka_unit_test(test_alloc_failures),     cmocka_unit_test(test_load_from_environment),
        cmocka_unit_test(test_token_file_due),     cmocka_unit_test(test_file_stamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
