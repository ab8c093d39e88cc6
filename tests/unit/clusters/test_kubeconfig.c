/*
 * Tests for clusters/kubeconfig.c: every auth kind, context selection,
 * relative path resolution, and errors that name the file, the context and
 * the field for malformed input; plus an allocation-failure loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusters/kubeconfig.h"
#include "common/alloc.h"

/* "-----BEGIN CERTIFICATE-----\nMIIB\n" in base64, standing in for a PEM. */
#define CA_B64 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIK"

static const char full[] = "apiVersion: v1\n"
                           "kind: Config\n"
                           "current-context: prod\n"
                           "clusters:\n"
                           "- name: c1\n"
                           "  cluster:\n"
                           "    server: https://10.0.0.1:6443\n"
                           "    certificate-authority-data: " CA_B64 "\n"
                           "    tls-server-name: api.internal\n"
                           "    proxy-url: http://proxy:3128\n"
                           "- name: c2\n"
                           "  cluster:\n"
                           "    server: https://10.0.0.2:6443\n"
                           "    certificate-authority: certs/ca.pem\n"
                           "- name: c3\n"
                           "  cluster:\n"
                           "    server: https://10.0.0.3\n"
                           "    insecure-skip-tls-verify: true\n"
                           "contexts:\n"
                           "- name: prod\n"
                           "  context: {cluster: c1, user: certuser, namespace: batch}\n"
                           "- name: tok\n"
                           "  context: {cluster: c2, user: tokuser}\n"
                           "- name: ex\n"
                           "  context: {cluster: c3, user: execuser}\n"
                           "- name: basic\n"
                           "  context: {cluster: c3, user: basicuser}\n"
                           "- name: tokfile\n"
                           "  context: {cluster: c2, user: tokfileuser}\n"
                           "users:\n"
                           "- name: certuser\n"
                           "  user:\n"
                           "    client-certificate-data: " CA_B64 "\n"
                           "    client-key: ../keys/client.key\n"
                           "- name: tokuser\n"
                           "  user:\n"
                           "    token: abc.def\n"
                           "- name: tokfileuser\n"
                           "  user:\n"
                           "    tokenFile: /var/run/token\n"
                           "- name: basicuser\n"
                           "  user: {username: admin, password: pw}\n"
                           "- name: execuser\n"
                           "  user:\n"
                           "    exec:\n"
                           "      apiVersion: client.authentication.k8s.io/v1\n"
                           "      command: ./bin/get-token\n"
                           "      args: [--cluster, c3]\n"
                           "      env:\n"
                           "      - {name: REGION, value: us-east-1}\n"
                           "      interactiveMode: Never\n"
                           "      provideClusterInfo: true\n";

static struct sw_kube_target *parse_ok(const char *text, const char *path, const char *ctx)
{
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = sw_kubeconfig_parse(text, strlen(text), path, ctx, &t, &err);
    if (rc != 0)
        fail_msg("parse failed: %s", err.msg);
    return t;
}

static void test_current_context_cert(void **state)
{
    (void)state;
    struct sw_kube_target *t = parse_ok(full, "/etc/kube/config", NULL);
    assert_string_equal(t->context, "prod");
    assert_string_equal(t->cluster, "c1");
    assert_string_equal(t->namespace, "batch");
    assert_string_equal(t->server, "https://10.0.0.1:6443");
    assert_int_equal(t->ca_len, 33);
    assert_memory_equal(t->ca_data, "-----BEGIN CERTIFICATE-----\nMIIB\n", 33);
    assert_string_equal(t->tls_server_name, "api.internal");
    assert_string_equal(t->proxy_url, "http://proxy:3128");
    assert_non_null(t->client_cert_data);
    /* Relative to the kubeconfig's folder. */
    assert_string_equal(t->client_key_file, "/etc/kube/../keys/client.key");
    assert_string_equal(sw_kube_target_auth_kind(t), "client-certificate");
    assert_false(t->insecure);
    sw_kube_target_free(t);
}

static void test_token_and_relative_ca(void **state)
{
    (void)state;
    struct sw_kube_target *t = parse_ok(full, "conf/kc.yaml", "tok");
    assert_string_equal(t->token, "abc.def");
    assert_string_equal(t->ca_file, "conf/certs/ca.pem");
    assert_null(t->namespace);
    assert_string_equal(sw_kube_target_auth_kind(t), "token");
    sw_kube_target_free(t);
    t = parse_ok(full, "kc", "tokfile");
    assert_string_equal(t->token_file, "/var/run/token");
    assert_string_equal(t->ca_file, "./certs/ca.pem");
    sw_kube_target_free(t);
    t = parse_ok(full, "kc", "basic");
    assert_string_equal(t->username, "admin");
    assert_string_equal(t->password, "pw");
    assert_true(t->insecure);
    assert_string_equal(sw_kube_target_auth_kind(t), "basic");
    sw_kube_target_free(t);
}

static void test_exec_plugin(void **state)
{
    (void)state;
    struct sw_kube_target *t = parse_ok(full, "/home/u/.kube/config", "ex");
    struct sw_kube_exec *e = t->exec;
    assert_non_null(e);
    assert_string_equal(e->api_version, "client.authentication.k8s.io/v1");
    assert_string_equal(e->command, "/home/u/.kube/./bin/get-token");
    assert_int_equal(e->nargs, 2);
    assert_string_equal(e->args[0], "--cluster");
    assert_string_equal(e->args[1], "c3");
    assert_int_equal(e->nenv, 1);
    assert_string_equal(e->env_names[0], "REGION");
    assert_string_equal(e->env_values[0], "us-east-1");
    assert_int_equal(e->interactive, SW_KUBE_INTERACTIVE_NEVER);
    assert_true(e->provide_cluster_info);
    assert_string_equal(sw_kube_target_auth_kind(t), "exec");
    sw_kube_target_free(t);

    /* v1beta1 defaults interactiveMode to IfAvailable; a bare command is
     * looked up on PATH, not resolved. */
    const char *beta = "current-context: a\n"
                       "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                       "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
                       "users: [{name: u, user: {exec: {apiVersion: "
                       "client.authentication.k8s.io/v1beta1, command: aws}}}]\n";
    t = parse_ok(beta, "x/y", NULL);
    assert_string_equal(t->exec->command, "aws");
    assert_int_equal(t->exec->interactive, SW_KUBE_INTERACTIVE_IF_AVAILABLE);
    sw_kube_target_free(t);
}

struct bad_case {
    const char *text;
    const char *context;
    int code;
    const char *needle; /* must appear in the message */
};

#define HEAD                                                                                       \
    "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"                                      \
    "contexts: [{name: a, context: {cluster: c, user: u}}]\n"

static const struct bad_case bad[] = {
    {"", NULL, SW_EPARSE, "kubeconfig \"bad.yaml\": the file is empty"},
    {"- a\n- b\n", NULL, SW_EPARSE, "expected a mapping at the top, got a list"},
    {"a: [b\n", NULL, SW_EPARSE, "kubeconfig \"bad.yaml\": line "},
    {"kind: Pod\n", NULL, SW_EINVAL, "field \"kind\": expected Config"},
    {HEAD "users: []\n", NULL, SW_EINVAL, "field \"current-context\": not set"},
    {HEAD "users: []\n", "zz", SW_ENOENT, "context \"zz\": no such context"},
    {HEAD "users: []\n", "a", SW_ENOENT, "context \"a\": user \"u\": no such user"},
    {"contexts: [{name: a, context: {cluster: nope}}]\nclusters: []\n", "a", SW_ENOENT,
     "cluster \"nope\": no such cluster"},
    {"contexts: [{name: a, context: {user: u}}]\n", "a", SW_EINVAL,
     "context \"a\": field \"cluster\": missing"},
    {"contexts: {a: b}\n", "a", SW_EPARSE, "field \"contexts\": expected a list, got a mapping"},
    {"contexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c, cluster: {}}]\n", "a",
     SW_EINVAL, "cluster \"c\": field \"server\": missing"},
    {"contexts: [{name: a, context: {cluster: c}}]\n"
     "clusters: [{name: c, cluster: {server: ftp://x}}]\n",
     "a", SW_EINVAL, "field \"server\": expected an http:// or https:// URL"},
    {"contexts: [{name: a, context: {cluster: c}}]\n"
     "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority-data: '@@'}}]\n",
     "a", SW_EPARSE, "field \"certificate-authority-data\": expected base64"},
    {"contexts: [{name: a, context: {cluster: c}}]\n"
     "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: maybe}}]\n",
     "a", SW_EPARSE, "field \"insecure-skip-tls-verify\": expected true or false, got \"maybe\""},
    {"contexts: [{name: a, context: {cluster: c}}]\n"
     "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: true, "
     "certificate-authority: ca}}]\n",
     "a", SW_EINVAL, "field \"insecure-skip-tls-verify\": cannot be true"},
    {"contexts: [{name: a, context: {cluster: c}}, {name: a, context: {cluster: c}}]\n", "a",
     SW_EPARSE, "field \"contexts[1].name\": duplicate name \"a\""},
    {HEAD "users: [{name: u, user: {token: t, username: x}}]\n", "a", SW_EINVAL,
     "user \"u\": field \"username\": username/password and a bearer token"},
    {HEAD "users: [{name: u, user: {client-certificate: c.pem}}]\n", "a", SW_EINVAL,
     "field \"client-key\": missing"},
    {HEAD "users: [{name: u, user: {token: [a]}}]\n", "a", SW_EPARSE,
     "field \"token\": expected a string, got a list"},
    {HEAD "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n", "a", SW_EUNSUPPORTED,
     "field \"auth-provider\""},
    {HEAD "users: [{name: u, user: {exec: {command: x}}}]\n", "a", SW_EINVAL,
     "field \"exec.apiVersion\": missing"},
    {HEAD "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
          "command: x}}}]\n",
     "a", SW_EUNSUPPORTED, "field \"exec.apiVersion\": expected"},
    {HEAD "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
          "command: x}}}]\n",
     "a", SW_EINVAL, "field \"exec.interactiveMode\": missing"},
    {HEAD "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
          "command: x, interactiveMode: Sometimes}}}]\n",
     "a", SW_EINVAL, "expected Never, IfAvailable or Always, got \"Sometimes\""},
    {HEAD "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
          "command: x, interactiveMode: Never, args: [a, [b]]}}}]\n",
     "a", SW_EPARSE, "field \"exec.args[1]\": expected a string, got a list"},
    {HEAD "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
          "command: x, interactiveMode: Never, env: [{value: v}]}}}]\n",
     "a", SW_EINVAL, "field \"exec.env[0].name\""},
};

static void test_malformed_inputs_named(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_kube_target *t = (void *)1;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_kubeconfig_parse(bad[i].text, strlen(bad[i].text), "bad.yaml", bad[i].context,
                                     &t, &err);
        if (rc != bad[i].code || strstr(err.msg, bad[i].needle) == NULL ||
            strstr(err.msg, "kubeconfig \"bad.yaml\"") == NULL)
            fail_msg("case %zu: rc=%d msg=%s (wanted %d and \"%s\")", i, rc, err.msg, bad[i].code,
                     bad[i].needle);
        assert_null(t);
    }
}

/*
 * Mapping keys, checked against kubectl v1.32 with the same files
 * ("kubectl config view --minify"): a key that is a list, a mapping or null
 * fails the whole file wherever it is, even in an entry no context uses; a
 * repeated key is no error and the last one wins.
 */
static void test_map_keys(void **state)
{
    (void)state;
    static const char tail[] = "contexts:\n"
                               "- name: a\n"
                               "  context: {cluster: c1, user: u}\n"
                               "users:\n"
                               "- name: u\n"
                               "  user: {token: x}\n";
    struct {
        const char *head;
        const char *msg;
    } keys[] = {
        {"current-context: a\n? [a, b]\n: whatever\n"
         "clusters: [{name: c1, cluster: {server: https://one:6443}}]\n",
         "kubeconfig \"dir/k.yaml\": line 2 column 3: expected a string as a key, got a list"},
        {"current-context: a\n? {a: b}\n: whatever\n"
         "clusters: [{name: c1, cluster: {server: https://one:6443}}]\n",
         "kubeconfig \"dir/k.yaml\": line 2 column 3: expected a string as a key, got a mapping"},
        {"current-context: a\n~: whatever\n"
         "clusters: [{name: c1, cluster: {server: https://one:6443}}]\n",
         "kubeconfig \"dir/k.yaml\": line 2 column 1: expected a string as a key, got null"},
        /* In a cluster no context names. */
        {"current-context: a\nclusters:\n- name: c1\n  cluster: {server: https://one:6443}\n"
         "- name: other\n  cluster: {server: https://two:6443, ? [x] : y}\n",
         "kubeconfig \"dir/k.yaml\": line 6 column 41: expected a string as a key, got a list"},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char cfg[1024];
        snprintf(cfg, sizeof(cfg), "%s%s", keys[i].head, tail);
        struct sw_kube_target *t = NULL;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_kubeconfig_parse(cfg, strlen(cfg), "dir/k.yaml", NULL, &t, &err);
        if (rc != SW_EPARSE || t != NULL || strcmp(err.msg, keys[i].msg) != 0)
            fail_msg("case %zu: rc=%d\n  got:  %s\n  want: %s", i, rc, err.msg, keys[i].msg);
    }

    char cfg[1024];
    snprintf(cfg, sizeof(cfg), "%s%s",
             "current-context: a\ncurrent-context: b\n"
             "clusters:\n- name: c1\n  cluster:\n"
             "    server: https://one.example:6443\n    server: https://two.example:6443\n",
             "contexts:\n- name: a\n  context: {cluster: nowhere}\n"
             "- name: b\n  context: {cluster: c1, user: u, user: v}\n"
             "users:\n- name: v\n  user: {token: x}\n");
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    if (sw_kubeconfig_parse(cfg, strlen(cfg), "dir/k.yaml", NULL, &t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(t->context, "b");
    assert_string_equal(t->server, "https://two.example:6443");
    assert_string_equal(t->user, "v");
    sw_kube_target_free(t);
}

static void test_load_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-kc-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof(p), "%s/token", dir);
    FILE *f = fopen(p, "w");
    fputs("file-token\n", f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/config", dir);
    f = fopen(p, "w");
    fputs(HEAD "users: [{name: u, user: {tokenFile: token, client-certificate: missing.pem, "
               "client-key: missing.key}}]\ncurrent-context: a\n",
          f);
    fclose(f);
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    /* The certificate file is missing: the error names it and the kubeconfig. */
    assert_int_equal(sw_kubeconfig_load(p, NULL, &t, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "client-certificate"));
    assert_non_null(strstr(err.msg, "missing.pem"));
    assert_non_null(strstr(err.msg, p));
    f = fopen(p, "w");
    fputs(HEAD "users: [{name: u, user: {tokenFile: token}}]\ncurrent-context: a\n", f);
    fclose(f);
    assert_int_equal(sw_kubeconfig_load(p, NULL, &t, &err), 0);
    assert_string_equal(t->token, "file-token");
    sw_kube_target_free(t);
    unlink(p);
    snprintf(p, sizeof(p), "%s/token", dir);
    unlink(p);
    rmdir(dir);
}

/* $KUBECONFIG's list, merged as kubectl merges it. */
static void test_load_list(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-kcl-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[256], b[256], list[1024];
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    FILE *f = fopen(a, "w");
    /* a: the contexts and current-context; a cluster c2 that b has too. */
    fputs("kind: Config\ncurrent-context: one\ncontexts:\n"
          "- {name: one, context: {cluster: c1, user: u}}\n"
          "- {name: two, context: {cluster: c2, user: u}}\n"
          "clusters:\n- {name: c2, cluster: {server: \"https://a.example\"}}\n",
          f);
    fclose(f);
    f = fopen(b, "w");
    fputs("kind: Config\ncurrent-context: two\nclusters:\n"
          "- {name: c1, cluster: {server: \"https://b.example\", certificate-authority: ca.pem}}\n"
          "- {name: c2, cluster: {server: \"https://b2.example\"}}\n"
          "users:\n- {name: u, user: {token: t}}\n",
          f);
    fclose(f);
    struct sw_kube_target *t = NULL;
    struct sw_error err = {0};
    /* Missing files and empty entries skipped; a's current-context; c1 from
     * b, its CA resolved against b's folder (and missing: named). */
    snprintf(list, sizeof(list), "%s/none::%s:%s", dir, a, b);
    assert_int_equal(sw_kubeconfig_load_list(list, NULL, &t, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "ca.pem"));
    assert_non_null(strstr(err.msg, dir));
    f = fopen(b, "w");
    fputs("kind: Config\ncurrent-context: two\nclusters:\n"
          "- {name: c1, cluster: {server: \"https://b.example\"}}\n"
          "- {name: c2, cluster: {server: \"https://b2.example\"}}\n"
          "users:\n- {name: u, user: {token: t}}\n",
          f);
    fclose(f);
    assert_int_equal(sw_kubeconfig_load_list(list, NULL, &t, &err), 0);
    assert_string_equal(t->context, "one");
    assert_string_equal(t->server, "https://b.example");
    assert_string_equal(t->token, "t");
    assert_string_equal(t->source, a);
    sw_kube_target_free(t);
    /* The first file with a cluster of that name wins: c2 from a. */
    assert_int_equal(sw_kubeconfig_load_list(list, "two", &t, &err), 0);
    assert_string_equal(t->server, "https://a.example");
    sw_kube_target_free(t);
    /* b first: its current-context. */
    snprintf(list, sizeof(list), "%s:%s", b, a);
    assert_int_equal(sw_kubeconfig_load_list(list, NULL, &t, &err), 0);
    assert_string_equal(t->context, "two");
    assert_string_equal(t->server, "https://b2.example");
    sw_kube_target_free(t);
    /* What no file has is named with the whole list. */
    char want[1200];
    assert_int_equal(sw_kubeconfig_load_list(list, "three", &t, &err), SW_ENOENT);
    snprintf(want, sizeof(want),
             "kubeconfig \"%s\": context \"three\": in the \"contexts\" of no file", list);
    assert_string_equal(err.msg, want);
    snprintf(list, sizeof(list), "%s/none:%s/none2", dir, dir);
    assert_int_equal(sw_kubeconfig_load_list(list, NULL, &t, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "none of its files exists"));
    /* One file: read as sw_kubeconfig_load reads it. */
    assert_int_equal(sw_kubeconfig_load_list(a, NULL, &t, &err), SW_ENOENT);
    snprintf(want, sizeof(want),
             "kubeconfig \"%s\": context \"one\": cluster \"c1\": no such cluster in "
             "\"clusters\"",
             a);
    assert_string_equal(err.msg, want);
    unlink(a);
    unlink(b);
    rmdir(dir);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth < 2000; nth++) {
        struct sw_kube_target *t = NULL;
        struct sw_error err;
        sw_alloc_fail_at(nth);
        int rc = sw_kubeconfig_parse(full, strlen(full), "/k/config", "ex", &t, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (rc == 0) {
            assert_non_null(t);
            sw_kube_target_free(t);
        } else {
            assert_int_equal(rc, SW_ENOMEM);
            assert_null(t);
        }
        if (!injected) {
            assert_int_equal(rc, 0);
            return;
        }
    }
    fail_msg("the parser allocated more than expected");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_context_cert),
        cmocka_unit_test(test_token_and_relative_ca),
        cmocka_unit_test(test_exec_plugin),
        cmocka_unit_test(test_malformed_inputs_named),
        cmocka_unit_test(test_map_keys),
        cmocka_unit_test(test_load_files),
        cmocka_unit_test(test_load_list),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
