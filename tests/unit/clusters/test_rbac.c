/*
 * test_rbac.c - clusters/rbac.c: a role's rules expanded into permissions;
 * the member role as built into spillctl holds exactly the 29 permissions
 * the hub's code uses (docs/deploy.md names the code for each); bad roles
 * are refused, named; allocation failures. The narrow member role's two
 * parts (deploy/rbac/narrow) grant the wide role's permissions but
 * namespaces create, the cluster-wide part only reads, and the reviews
 * `spillctl cluster add --namespaces` asks name each namespace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "clusters/rbac.h"
#include "common/alloc.h"

extern const char sw_member_role_yaml[];
extern const unsigned long sw_member_role_yaml_len;
extern const char sw_member_cluster_role_yaml[];
extern const unsigned long sw_member_cluster_role_yaml_len;
extern const char sw_member_namespace_role_yaml[];
extern const unsigned long sw_member_namespace_role_yaml_len;

static int has(const struct sw_rbac_perm *p, size_t n, const char *g, const char *r, const char *s,
               const char *v)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].group, g) && !strcmp(p[i].resource, r) && !strcmp(p[i].subresource, s) &&
            !strcmp(p[i].verb, v))
            return 1;
    return 0;
}

static void test_member_role(void **state)
{
    (void)state;
    static const char *want[][4] = {
        {"batch", "jobs", "", "list"},
        {"batch", "jobs", "", "watch"},
        {"batch", "jobs", "", "create"},
        {"batch", "jobs", "", "patch"},
        {"batch", "jobs", "", "delete"},
        {"batch", "jobs", "status", "patch"},
        {"", "pods", "", "list"},
        {"", "pods", "", "watch"},
        {"", "pods", "", "create"},
        {"", "nodes", "", "list"},
        {"", "nodes", "", "watch"},
        {"", "namespaces", "", "get"},
        {"", "namespaces", "", "create"},
        {"", "events", "", "create"},
        {"", "configmaps", "", "get"},
        {"", "configmaps", "", "create"},
        {"", "configmaps", "", "update"},
        {"", "secrets", "", "get"},
        {"", "secrets", "", "create"},
        {"", "secrets", "", "update"},
        {"", "secrets", "", "delete"},
        {"kueue.x-k8s.io", "workloads", "", "list"},
        {"kueue.x-k8s.io", "workloads", "", "watch"},
        {"kueue.x-k8s.io", "workloads", "", "patch"},
        {"kueue.x-k8s.io", "clusterqueues", "", "list"},
        {"kueue.x-k8s.io", "clusterqueues", "", "watch"},
        {"kueue.x-k8s.io", "resourceflavors", "", "list"},
        {"kueue.x-k8s.io", "resourceflavors", "", "watch"},
        {"kueue.x-k8s.io", "localqueues", "", "get"},
    };
    struct sw_rbac_perm *p = NULL;
    size_t n = 0;
    struct sw_error err;
    assert_int_equal(
        sw_rbac_parse(sw_member_role_yaml, sw_member_role_yaml_len, "member", &p, &n, &err), 0);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++)
        if (!has(p, n, want[i][0], want[i][1], want[i][2], want[i][3]))
            fail_msg("the member role lacks %s %s/%s %s", want[i][0], want[i][1], want[i][2],
                     want[i][3]);
    sw_free(p);
}

/* The narrow role's parts, together, are the wide role without namespaces
 * create: a verb the wide role gains (or loses) that the narrow one does
 * not follow fails here. */
static void test_narrow_role(void **state)
{
    (void)state;
    struct sw_rbac_perm *w = NULL, *c = NULL, *ns = NULL;
    size_t nw = 0, nc = 0, nn = 0;
    struct sw_error err;
    assert_int_equal(
        sw_rbac_parse(sw_member_role_yaml, sw_member_role_yaml_len, "wide", &w, &nw, &err), 0);
    assert_int_equal(sw_rbac_parse(sw_member_cluster_role_yaml, sw_member_cluster_role_yaml_len,
                                   "cluster", &c, &nc, &err),
                     0);
    assert_int_equal(sw_rbac_parse(sw_member_namespace_role_yaml, sw_member_namespace_role_yaml_len,
                                   "namespace", &ns, &nn, &err),
                     0);
    for (size_t i = 0; i < nc; i++) {
        const struct sw_rbac_perm *p = &c[i];
        if (strcmp(p->verb, "list") != 0 && strcmp(p->verb, "watch") != 0)
            fail_msg("the cluster-wide part grants %s %s: it may only read", p->verb, p->resource);
        if (!strcmp(p->resource, "secrets") || !strcmp(p->resource, "configmaps"))
            fail_msg("the cluster-wide part reads %s", p->resource);
        if (has(ns, nn, p->group, p->resource, p->subresource, p->verb))
            fail_msg("%s %s is in both parts", p->verb, p->resource);
        if (!has(w, nw, p->group, p->resource, p->subresource, p->verb))
            fail_msg("the cluster-wide part grants %s %s, which the wide role does not", p->verb,
                     p->resource);
    }
    for (size_t i = 0; i < nn; i++)
        if (!has(w, nw, ns[i].group, ns[i].resource, ns[i].subresource, ns[i].verb))
            fail_msg("the namespace part grants %s %s, which the wide role does not", ns[i].verb,
                     ns[i].resource);
    assert_false(has(ns, nn, "", "namespaces", "", "create"));
    assert_false(has(c, nc, "", "namespaces", "", "create"));
    for (size_t i = 0; i < nw; i++) {
        const struct sw_rbac_perm *p = &w[i];
        bool in = has(c, nc, p->group, p->resource, p->subresource, p->verb) ||
                  has(ns, nn, p->group, p->resource, p->subresource, p->verb);
        bool ns_create = !strcmp(p->resource, "namespaces") && !strcmp(p->verb, "create");
        if (!in && !ns_create)
            fail_msg("the narrow role lacks %s %s/%s.%s of the wide role", p->verb, p->resource,
                     p->subresource, p->group);
    }
    assert_int_equal(nc + nn, nw - 1);
    sw_free(w);
    sw_free(c);
    sw_free(ns);
}

static void test_reviews(void **state)
{
    (void)state;
    const struct sw_rbac_perm cl[] = {{"", "nodes", "", "list"}};
    const struct sw_rbac_perm pn[] = {{"batch", "jobs", "", "create"},
                                      {"batch", "jobs", "status", "patch"}};
    const char nss[2][64] = {"team-a", "team-b"};
    struct sw_rbac_review *r = NULL;
    size_t n = 0;
    assert_int_equal(sw_rbac_reviews(cl, 1, pn, 2, nss, 2, &r, &n), 0);
    assert_int_equal(n, 5);
    char buf[640];
    static const char *want[] = {
        "list nodes (in all namespaces)",
        "create jobs.batch in namespace team-a",
        "patch jobs/status.batch in namespace team-a",
        "create jobs.batch in namespace team-b",
        "patch jobs/status.batch in namespace team-b",
    };
    for (size_t i = 0; i < n; i++) {
        sw_rbac_review_str(&r[i], buf, sizeof(buf));
        assert_string_equal(buf, want[i]);
    }
    assert_int_equal(sw_rbac_review_body(&r[0], buf, sizeof(buf)), 0);
    assert_null(strstr(buf, "namespace"));
    assert_non_null(strstr(buf, "\"resource\":\"nodes\",\"subresource\":\"\",\"verb\":\"list\""));
    assert_int_equal(sw_rbac_review_body(&r[4], buf, sizeof(buf)), 0);
    assert_non_null(strstr(buf, "{\"namespace\":\"team-b\",\"group\":\"batch\",\"resource\":"
                                "\"jobs\",\"subresource\":\"status\",\"verb\":\"patch\"}"));
    assert_int_equal(sw_rbac_review_body(&r[4], buf, 40), SW_ETOOBIG);
    sw_free(r);
    /* The wide role: no namespace part, no namespace. */
    assert_int_equal(sw_rbac_reviews(pn, 2, NULL, 0, NULL, 0, &r, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(r[1].ns, "");
    sw_free(r);
    char longns[1][64];
    memset(longns[0], 'a', 64);
    assert_int_equal(sw_rbac_reviews(cl, 1, pn, 2, (const char(*)[64])longns, 1, &r, &n),
                     SW_EINVAL);
    assert_null(r);
    sw_alloc_fail_at(1);
    assert_int_equal(sw_rbac_reviews(cl, 1, pn, 2, nss, 2, &r, &n), SW_ENOMEM);
    sw_alloc_reset();
}

static void test_expansion_and_dedup(void **state)
{
    (void)state;
    const char *y = "kind: Role\nrules:\n"
                    "- {apiGroups: [\"\", apps], resources: [pods, pods/log], verbs: [get]}\n"
                    "- {apiGroups: [\"\"], resources: [pods], verbs: [get, list]}\n";
    struct sw_rbac_perm *p = NULL;
    size_t n = 0;
    struct sw_error err;
    assert_int_equal(sw_rbac_parse(y, strlen(y), "r", &p, &n, &err), 0);
    assert_int_equal(n, 5); /* 2x2 gets, then list; the repeated get once */
    assert_string_equal(p[1].resource, "pods");
    assert_string_equal(p[1].subresource, "log");
    assert_string_equal(p[2].group, "apps");
    assert_string_equal(p[4].verb, "list");
    sw_free(p);
}

static void test_bad_roles_named(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {"kind: Pod\nrules: []\n", "field \"kind\": expected ClusterRole or Role, got \"Pod\""},
        {"kind: Role\n", "field \"rules\": expected a list"},
        {"kind: Role\nrules: []\n", "the role grants nothing"},
        {"kind: Role\nrules: [{apiGroups: [\"\"], resources: [pods]}]\n",
         "rules[0]: field \"verbs\": expected a list"},
        {"kind: Role\nrules: [{apiGroups: [\"\"], resources: [\"*\"], verbs: [get]}]\n",
         "rules[0]: field \"resources\": wildcard \"*\" refused"},
        {"kind: Role\nrules: [{apiGroups: [\"\"], resources: [pods], verbs: [[get]]}]\n",
         "rules[0]: field \"verbs\": expected strings"},
        {"kind: Role\nrules: [{apiGroups: [\"\"], resources: [pods], resourceNames: [a], verbs: "
         "[get]}]\n",
         "rules[0]: resourceNames and nonResourceURLs are not supported"},
        {"kind: Role\nrules: [{apiGroups: [\"\"], resources: [pods/], verbs: [get]}]\n",
         "a name is empty or too long"},
        {"kind: [\n", "line"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_rbac_perm *p = (void *)1;
        size_t n = 9;
        struct sw_error err;
        assert_int_not_equal(
            sw_rbac_parse(bad[i].yaml, strlen(bad[i].yaml), "role.yaml", &p, &n, &err), 0);
        assert_null(p);
        assert_int_equal(n, 0);
        if (strstr(err.msg, bad[i].want) == NULL || strncmp(err.msg, "role.yaml: ", 11) != 0)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i].want);
    }
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (uint64_t nth = 1; nth < 500; nth++) {
        struct sw_rbac_perm *p = NULL;
        size_t n = 0;
        struct sw_error err;
        sw_alloc_fail_at(nth);
        int rc = sw_rbac_parse(sw_member_role_yaml, sw_member_role_yaml_len, "m", &p, &n, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            sw_free(p);
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_null(p);
    }
    fail_msg("allocated more than expected");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_member_role),     cmocka_unit_test(test_narrow_role),
        cmocka_unit_test(test_reviews),         cmocka_unit_test(test_expansion_and_dedup),
        cmocka_unit_test(test_bad_roles_named), cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
