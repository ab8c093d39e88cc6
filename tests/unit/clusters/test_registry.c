/*
 * Tests for clusters/registry.c without Redis: record JSON round trip, the
 * sealed connection round trip (every auth field), and that the record's
 * JSON holds no credential in clear.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/kubeconfig.h"
#include "clusters/registry.h"
#include "common/alloc.h"

static const char cfg[] =
    "current-context: a\n"
    "clusters: [{name: c, cluster: {server: 'https://10.1.2.3:6443', "
    "certificate-authority-data: Q0EtREFUQQ==, tls-server-name: api.x}}]\n"
    "contexts: [{name: a, context: {cluster: c, user: u, namespace: ml}}]\n"
    "users: [{name: u, user: {token: SECRET-TOKEN-42, client-certificate-data: Q0VSVA==, "
    "client-key-data: UFJJVkFURS1LRVktUEVN, exec: {apiVersion: "
    "client.authentication.k8s.io/v1, command: aws, args: [eks, get-token], "
    "env: [{name: AWS_SECRET, value: ENV-SECRET-7}], interactiveMode: Never}}}]\n";

static void test_seal_round_trip(void **state)
{
    (void)state;
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_parse(cfg, strlen(cfg), "k", NULL, &t, &err), 0);
    unsigned char kb[32] = {7};
    struct sw_seal_key *key = NULL;
    assert_int_equal(sw_seal_key_from_bytes(kb, 32, &key), 0);
    struct sw_cluster_record rec = {0};
    snprintf(rec.name, sizeof(rec.name), "cloud-spot");
    rec.spec.role = SW_ROLE_CLOUD;
    snprintf(rec.spec.region, sizeof(rec.spec.region), "us-east-1");
    rec.spec.npools = 1;
    snprintf(rec.spec.pools[0].name, sizeof(rec.spec.pools[0].name), "spot");
    snprintf(rec.spec.pools[0].capacity_type, 16, "spot");
    snprintf(rec.spec.pools[0].gpu_product, 128, "H100");
    rec.spec.pools[0].price_per_gpu_hour = 2.5;
    snprintf(rec.spec.pools[0].nodepool, sizeof(rec.spec.pools[0].nodepool), "gpu-spot");
    assert_int_equal(sw_cluster_namespaces_flag(&rec.spec, "team-a,team-b", "f", &err), 0);
    snprintf(rec.server, sizeof(rec.server), "%s", t->server);
    snprintf(rec.auth_kind, sizeof(rec.auth_kind), "%s", sw_kube_target_auth_kind(t));
    assert_int_equal(sw_cluster_record_seal(&rec, t, key, &err), 0);
    char *json = NULL;
    assert_int_equal(sw_cluster_record_to_json(&rec, &json), 0);
    /* No credential in clear, in any encoding the kubeconfig had. */
    assert_null(strstr(json, "SECRET-TOKEN-42"));
    assert_null(strstr(json, "ENV-SECRET-7"));
    assert_null(strstr(json, "UFJJVkFURS1LRVktUEVN"));
    assert_null(strstr(json, "PRIVATE-KEY-PEM"));
    assert_non_null(strstr(json, "swseal:v1:"));

    struct sw_cluster_record back;
    assert_int_equal(sw_cluster_record_from_json(json, strlen(json), "rec", &back, &err), 0);
    assert_string_equal(back.name, "cloud-spot");
    assert_int_equal(back.spec.role, SW_ROLE_CLOUD);
    assert_int_equal(back.spec.npools, 1);
    assert_true(back.spec.pools[0].price_per_gpu_hour == 2.5);
    assert_string_equal(back.spec.pools[0].nodepool, "gpu-spot");
    assert_int_equal(back.spec.nnamespaces, 2);
    assert_string_equal(back.spec.namespaces[1], "team-b");
    struct sw_kube_target *t2 = NULL;
    assert_int_equal(sw_cluster_record_open(&back, key, &t2, &err), 0);
    assert_string_equal(t2->server, "https://10.1.2.3:6443");
    assert_string_equal(t2->token, "SECRET-TOKEN-42");
    assert_string_equal(t2->tls_server_name, "api.x");
    assert_string_equal(t2->namespace, "ml");
    assert_int_equal(t2->ca_len, 7);
    assert_memory_equal(t2->ca_data, "CA-DATA", 7);
    assert_memory_equal(t2->client_key_data, "PRIVATE-KEY-PEM", 15);
    assert_string_equal(t2->exec->command, "aws");
    assert_int_equal(t2->exec->nargs, 2);
    assert_string_equal(t2->exec->env_values[0], "ENV-SECRET-7");
    assert_int_equal(t2->exec->interactive, SW_KUBE_INTERACTIVE_NEVER);
    sw_kube_target_free(t2);

    /* The record moved to another name does not open. */
    snprintf(back.name, sizeof(back.name), "stolen");
    assert_int_equal(sw_cluster_record_open(&back, key, &t2, &err), SW_ECRYPTO);
    assert_non_null(strstr(err.msg, "cluster stolen"));
    sw_cluster_record_clear(&back);
    sw_free(json);
    sw_cluster_record_clear(&rec);
    sw_seal_key_free(key);
    sw_kube_target_free(t);
}

static void test_bad_record_named(void **state)
{
    (void)state;
    struct sw_cluster_record rec;
    struct sw_error err;
    const char *j = "{\"name\":\"x\",\"role\":\"moon\",\"region\":\"r\"}";
    assert_int_equal(sw_cluster_record_from_json(j, strlen(j), "record x", &rec, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "record x: field \"role\""));
    j = "{\"name\":\"x\",\"role\":\"cloud\"}";
    assert_int_equal(sw_cluster_record_from_json(j, strlen(j), "record x", &rec, &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "\"region\""));
    /* The narrow role's namespaces, as written in Redis by hand. */
    static const char *const bad_ns[][2] = {
        {"\"team-a\"", "record x: field \"namespaces\": expected a list"},
        {"[1]", "record x: field \"namespaces\": expected strings"},
        {"[\"../x\"]", "record x: field \"namespaces\": expected a namespace name"},
        {"[\"a\",\"a\"]", "record x: field \"namespaces\": namespace \"a\" is listed twice"},
    };
    for (size_t i = 0; i < sizeof(bad_ns) / sizeof(bad_ns[0]); i++) {
        char jj[200];
        snprintf(jj, sizeof(jj),
                 "{\"name\":\"x\",\"role\":\"cloud\",\"region\":\"r\",\"namespaces\":%s}",
                 bad_ns[i][0]);
        assert_int_not_equal(sw_cluster_record_from_json(jj, strlen(jj), "record x", &rec, &err),
                             0);
        if (strstr(err.msg, bad_ns[i][1]) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad_ns[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal_round_trip),
        cmocka_unit_test(test_bad_record_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
