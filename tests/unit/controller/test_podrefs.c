/* Tests for controller/hub/podrefs.c: every Secret and ConfigMap a pod
 * spec references, de-duplicated, bounded, and every name checked before
 * the hub builds an API path from it. Pure: no cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "controller/hub/podrefs.h"

#define WHERE "spec.template.spec"

/* JSON written with ' for " (the tests read better). */
static cJSON *parse(const char *text)
{
    char *s = strdup(text);
    assert_non_null(s);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    return j;
}

static int collect(const char *text, struct sw_pod_refs *out, struct sw_error *err)
{
    cJSON *j = parse(text);
    memset(out, 0, sizeof(*out));
    sw_error_clear(err);
    int rc = sw_pod_refs_collect(j, WHERE, out, err);
    cJSON_Delete(j);
    return rc;
}

static const struct sw_pod_ref *find(const struct sw_pod_refs *r, enum sw_pod_ref_kind k,
                                     const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->refs[i].kind == k && strcmp(r->refs[i].name, name) == 0)
            return &r->refs[i];
    return NULL;
}

static void expect(const struct sw_pod_refs *r, enum sw_pod_ref_kind k, const char *name,
                   bool optional, const char *field)
{
    const struct sw_pod_ref *f = find(r, k, name);
    if (f == NULL)
        fail_msg("%s %s not collected", sw_pod_ref_kind_name(k), name);
    assert_int_equal(f->optional, optional);
    assert_string_equal(f->field, field);
}

/* Every source of the documented list, each found at its field. */
static void test_every_source(void **state)
{
    (void)state;
    struct sw_pod_refs r;
    struct sw_error err;
    int rc = collect(
        "{'containers':[{'name':'main',"
        "  'env':[{'name':'A','value':'x'},"
        "         {'name':'B','valueFrom':{'configMapKeyRef':{'name':'env-cm','key':'k'}}},"
        "         {'name':'C','valueFrom':{'secretKeyRef':{'name':'env-sec','key':'k',"
        "                                                   'optional':true}}},"
        "         {'name':'D','valueFrom':{'fieldRef':{'fieldPath':'metadata.name'}}}],"
        "  'envFrom':[{'configMapRef':{'name':'from-cm'}},{'secretRef':{'name':'from-sec'}}]}],"
        " 'initContainers':[{'name':'init','envFrom':[{'secretRef':{'name':'init-sec'}}]}],"
        " 'ephemeralContainers':[{'name':'debug','env':[{'name':'E','valueFrom':"
        "   {'secretKeyRef':{'name':'eph-sec','key':'k'}}}]}],"
        " 'volumes':["
        "  {'name':'v0','configMap':{'name':'vol-cm','optional':true}},"
        "  {'name':'v1','secret':{'secretName':'vol-sec'}},"
        "  {'name':'v2','projected':{'sources':[{'serviceAccountToken':{'path':'t'}},"
        "     {'configMap':{'name':'proj-cm'}},{'secret':{'name':'proj-sec'}}]}},"
        "  {'name':'v3','csi':{'driver':'d','nodePublishSecretRef':{'name':'csi-sec'}}},"
        "  {'name':'v4','cephfs':{'monitors':['m'],'secretRef':{'name':'cephfs-sec'}}},"
        "  {'name':'v5','rbd':{'image':'i','secretRef':{'name':'rbd-sec'}}},"
        "  {'name':'v6','flexVolume':{'driver':'d','secretRef':{'name':'flex-sec'}}},"
        "  {'name':'v7','iscsi':{'iqn':'q','secretRef':{'name':'iscsi-sec'}}},"
        "  {'name':'v8','scaleIO':{'system':'s','secretRef':{'name':'scaleio-sec'}}},"
        "  {'name':'v9','storageos':{'volumeName':'v','secretRef':{'name':'storageos-sec'}}},"
        "  {'name':'v10','cinder':{'volumeID':'v','secretRef':{'name':'cinder-sec'}}},"
        "  {'name':'v11','azureFile':{'shareName':'s','secretName':'azure-sec'}},"
        "  {'name':'v12','emptyDir':{}},{'name':'v13','hostPath':{'path':'/x'}}],"
        " 'imagePullSecrets':[{'name':'pull-sec'}]}",
        &r, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(r.n, 20);
    const enum sw_pod_ref_kind S = SW_POD_REF_SECRET, C = SW_POD_REF_CONFIGMAP;
    expect(&r, C, "env-cm", false, WHERE ".containers[0].env[1].valueFrom.configMapKeyRef.name");
    expect(&r, S, "env-sec", true, WHERE ".containers[0].env[2].valueFrom.secretKeyRef.name");
    expect(&r, C, "from-cm", false, WHERE ".containers[0].envFrom[0].configMapRef.name");
    expect(&r, S, "from-sec", false, WHERE ".containers[0].envFrom[1].secretRef.name");
    expect(&r, S, "init-sec", false, WHERE ".initContainers[0].envFrom[0].secretRef.name");
    expect(&r, S, "eph-sec", false,
           WHERE ".ephemeralContainers[0].env[0].valueFrom.secretKeyRef.name");
    expect(&r, C, "vol-cm", true, WHERE ".volumes[0].configMap.name");
    expect(&r, S, "vol-sec", false, WHERE ".volumes[1].secret.secretName");
    expect(&r, C, "proj-cm", false, WHERE ".volumes[2].projected.sources[1].configMap.name");
    expect(&r, S, "proj-sec", false, WHERE ".volumes[2].projected.sources[2].secret.name");
    expect(&r, S, "csi-sec", false, WHERE ".volumes[3].csi.nodePublishSecretRef.name");
    expect(&r, S, "cephfs-sec", false, WHERE ".volumes[4].cephfs.secretRef.name");
    expect(&r, S, "rbd-sec", false, WHERE ".volumes[5].rbd.secretRef.name");
    expect(&r, S, "flex-sec", false, WHERE ".volumes[6].flexVolume.secretRef.name");
    expect(&r, S, "iscsi-sec", false, WHERE ".volumes[7].iscsi.secretRef.name");
    expect(&r, S, "scaleio-sec", false, WHERE ".volumes[8].scaleIO.secretRef.name");
    expect(&r, S, "storageos-sec", false, WHERE ".volumes[9].storageos.secretRef.name");
    expect(&r, S, "cinder-sec", false, WHERE ".volumes[10].cinder.secretRef.name");
    expect(&r, S, "azure-sec", false, WHERE ".volumes[11].azureFile.secretName");
    expect(&r, S, "pull-sec", false, WHERE ".imagePullSecrets[0].name");
    assert_string_equal(sw_pod_ref_resource(S), "secrets");
    assert_string_equal(sw_pod_ref_resource(C), "configmaps");
}

/* One entry per (kind, name), at the field where it was first found;
 * optional only when every reference says so. */
static void test_dedup_and_optional(void **state)
{
    (void)state;
    struct sw_pod_refs r;
    struct sw_error err;
    int rc =
        collect("{'containers':[{'envFrom':[{'secretRef':{'name':'tok','optional':true}},"
                "                           {'configMapRef':{'name':'cfg','optional':true}},"
                "                           {'configMapRef':{'name':'tok'}}]},"
                "               {'envFrom':[{'configMapRef':{'name':'cfg','optional':true}}]}],"
                " 'volumes':[{'name':'a','secret':{'secretName':'tok'}},"
                "            {'name':'b','projected':{'sources':[{'secret':{'name':'tok',"
                "                                                 'optional':true}}]}}],"
                " 'imagePullSecrets':[{'name':'tok'},{'name':'tok'}]}",
                &r, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(r.n, 3);
    /* The Secret "tok": optional in env, required in a volume: required. */
    expect(&r, SW_POD_REF_SECRET, "tok", false, WHERE ".containers[0].envFrom[0].secretRef.name");
    /* Optional everywhere: optional. */
    expect(&r, SW_POD_REF_CONFIGMAP, "cfg", true,
           WHERE ".containers[0].envFrom[1].configMapRef.name");
    /* The same name as a ConfigMap is another object. */
    expect(&r, SW_POD_REF_CONFIGMAP, "tok", false,
           WHERE ".containers[0].envFrom[2].configMapRef.name");
    /* The order first found. */
    assert_string_equal(r.refs[0].name, "tok");
    assert_string_equal(r.refs[1].name, "cfg");
    assert_int_equal(r.refs[2].kind, SW_POD_REF_CONFIGMAP);
}

/* A pod spec with `n` distinct Secrets in volumes, then `again` of them
 * referenced a second time (imagePullSecrets), then `extra` new ones each
 * twice. */
static char *many(int n, int again, int extra)
{
    size_t cap = 128 + (size_t)(n + again + 2 * extra) * 80;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t o = (size_t)snprintf(s, cap, "{\"volumes\":[");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(s + o, cap - o,
                              "%s{\"name\":\"v%d\",\"secret\":{\"secretName\":\"s-%d\"}}",
                              i ? "," : "", i, i);
    o += (size_t)snprintf(s + o, cap - o, "],\"imagePullSecrets\":[");
    int k = 0;
    for (int i = 0; i < again; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s{\"name\":\"s-%d\"}", k++ ? "," : "", i);
    for (int i = 0; i < 2 * extra; i++)
        o += (size_t)snprintf(s + o, cap - o, "%s{\"name\":\"x-%d\"}", k++ ? "," : "", i / 2);
    snprintf(s + o, cap - o, "]}");
    return s;
}

static int collect_many(int n, int again, int extra, struct sw_pod_refs *r, struct sw_error *err)
{
    char *s = many(n, again, extra);
    int rc = collect(s, r, err);
    free(s);
    return rc;
}

/* At the limit: every one kept. Past it: refused, with how many (distinct)
 * and the limit, never cut. */
static void test_limit(void **state)
{
    (void)state;
    struct sw_pod_refs r;
    struct sw_error err;
    assert_int_equal(SW_POD_REFS_MAX, 64);
    assert_int_equal(collect_many(64, 64, 0, &r, &err), 0);
    assert_int_equal(r.n, 64);
    assert_string_equal(r.refs[63].name, "s-63");

    assert_int_equal(collect_many(65, 0, 0, &r, &err), SW_ETOOBIG);
    assert_int_equal(r.n, 0);
    assert_string_equal(err.msg, "field \"" WHERE "\": references 65 distinct Secrets and "
                                 "ConfigMaps, more than the 64 spillway copies for a burst (the "
                                 "first past the limit at field \"" WHERE
                                 ".volumes[64].secret.secretName\")");

    /* Duplicates past the limit count once; those of the first 64 not at all. */
    assert_int_equal(collect_many(64, 10, 3, &r, &err), SW_ETOOBIG);
    assert_non_null(strstr(err.msg, "references 67 distinct"));
    assert_non_null(strstr(err.msg, "imagePullSecrets[10].name"));

    /* Many more: the count is still exact. */
    assert_int_equal(collect_many(1000, 0, 0, &r, &err), SW_ETOOBIG);
    assert_non_null(strstr(err.msg, "references 1000 distinct"));
}

/* Counting past the limit allocates: an allocation failure is SW_ENOMEM,
 * never a success or a wrong count. */
static void test_limit_alloc_failure(void **state)
{
    (void)state;
    char *s = many(200, 0, 0);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    for (uint64_t n = 1; n <= 8; n++) {
        struct sw_pod_refs r;
        struct sw_error err;
        memset(&r, 0, sizeof(r));
        sw_error_clear(&err);
        sw_alloc_fail_at(n);
        int rc = sw_pod_refs_collect(j, WHERE, &r, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (injected)
            assert_int_equal(rc, SW_ENOMEM);
        else
            assert_int_equal(rc, SW_ETOOBIG);
        assert_int_equal(r.n, 0);
    }
    cJSON_Delete(j);
}

static void bad(const char *text, const char *msg)
{
    struct sw_pod_refs r;
    struct sw_error err;
    int rc = collect(text, &r, &err);
    assert_int_equal(rc, SW_EINVAL);
    assert_int_equal(r.n, 0);
    assert_string_equal(err.msg, msg);
}

#define EXPECT_NAME                                                                                \
    "a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', starting and "      \
    "ending with a letter or digit)"

/* A name that is not a DNS-1123 subdomain never reaches a path: refused,
 * naming the field and quoting the value. */
static void test_bad_names(void **state)
{
    (void)state;
    bad("{'volumes':[{'name':'a','secret':{'secretName':'../../kube-system/secrets/x'}}]}",
        "field \"" WHERE ".volumes[0].secret.secretName\": value \"../../kube-system/secrets/x\": "
        "expected a Secret name: " EXPECT_NAME);
    bad("{'containers':[{'env':[{'valueFrom':{'configMapKeyRef':{'name':'Train_Config'}}}]}]}",
        "field \"" WHERE ".containers[0].env[0].valueFrom.configMapKeyRef.name\": value "
        "\"Train_Config\": expected a ConfigMap name: " EXPECT_NAME);
    bad("{'imagePullSecrets':[{'name':'ok'},{'name':'..'}]}",
        "field \"" WHERE
        ".imagePullSecrets[1].name\": value \"..\": expected a Secret name: " EXPECT_NAME);
    bad("{'volumes':[{'name':'a','csi':{'nodePublishSecretRef':{'name':'a/b'}}}]}",
        "field \"" WHERE ".volumes[0].csi.nodePublishSecretRef.name\": value \"a/b\": expected a "
        "Secret name: " EXPECT_NAME);
    /* Quoted and escaped: a quote, a backslash, a newline. */
    bad("{'volumes':[{'name':'a','azureFile':{'secretName':'a\\\\\\\"b\\nc'}}]}",
        "field \"" WHERE ".volumes[0].azureFile.secretName\": value \"a\\\\\\\"b\\x0ac\": expected "
        "a Secret name: " EXPECT_NAME);

    /* Every shape the API server refuses. */
    const char *names[] = {"-a", "a-", "a..b", "a.-b", ".a", "a.", "a b", "A", "a_b", "%2e%2e"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        char text[200];
        snprintf(text, sizeof(text), "{'imagePullSecrets':[{'name':'%s'}]}", names[i]);
        struct sw_pod_refs r;
        struct sw_error err;
        if (collect(text, &r, &err) != SW_EINVAL)
            fail_msg("name \"%s\" accepted", names[i]);
        assert_non_null(strstr(err.msg, ".imagePullSecrets[0].name\": value \""));
    }

    /* At 253 characters it is a name; at 254 not, and the value shown is cut. */
    char name[300], text[400];
    memset(name, 'a', 253);
    name[253] = '\0';
    snprintf(text, sizeof(text), "{'imagePullSecrets':[{'name':'%s'}]}", name);
    struct sw_pod_refs r;
    struct sw_error err;
    assert_int_equal(collect(text, &r, &err), 0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.refs[0].name, name);
    name[253] = 'a';
    name[254] = '\0';
    snprintf(text, sizeof(text), "{'imagePullSecrets':[{'name':'%s'}]}", name);
    assert_int_equal(collect(text, &r, &err), SW_EINVAL);
    char shown[64];
    memset(shown, 'a', 48);
    memcpy(shown + 48, "...\"", 5);
    assert_non_null(strstr(err.msg, shown));
    /* Dotted names are names. */
    assert_int_equal(
        collect("{'imagePullSecrets':[{'name':'registry.example.com-pull.v2'}]}", &r, &err), 0);
}

/* Wrong JSON types and missing names: refused, naming the field. */
static void test_wrong_types(void **state)
{
    (void)state;
    bad("{'volumes':[{'name':'a','secret':{'secretName':7}}]}",
        "field \"" WHERE ".volumes[0].secret.secretName\": expected a string (the Secret's name), "
        "got a number");
    bad("{'volumes':[{'name':'a','secret':{'optional':true}}]}",
        "field \"" WHERE
        ".volumes[0].secret.secretName\": expected the Secret's name, got nothing");
    bad("{'containers':[{'envFrom':[{'configMapRef':{'name':''}}]}]}",
        "field \"" WHERE ".containers[0].envFrom[0].configMapRef.name\": expected the ConfigMap's "
        "name, got an empty string");
    bad("{'containers':[{'envFrom':[{'configMapRef':{'name':'a','optional':'yes'}}]}]}",
        "field \"" WHERE ".containers[0].envFrom[0].configMapRef.optional\": expected a boolean, "
        "got a string");
    bad("{'volumes':{'name':'a'}}",
        "field \"" WHERE ".volumes\": expected an array, got an object");
    bad("{'containers':[{'env':[{'valueFrom':'x'}]}]}",
        "field \"" WHERE ".containers[0].env[0].valueFrom\": expected an object, got a string");
    bad("{'volumes':[{'name':'a','projected':{'sources':[3]}}]}",
        "field \"" WHERE ".volumes[0].projected.sources[0]\": expected an object, got a number");
    bad("{'volumes':[{'name':'a','rbd':{'secretRef':['x']}}]}",
        "field \"" WHERE ".volumes[0].rbd.secretRef\": expected an object, got an array");
    bad("{'volumes':[{'name':'a','cinder':{'secretRef':{}}}]}",
        "field \"" WHERE ".volumes[0].cinder.secretRef.name\": expected the Secret's name, got "
        "nothing");
    bad("{'imagePullSecrets':[{'name':true}]}",
        "field \"" WHERE ".imagePullSecrets[0].name\": expected a string (the Secret's name), got "
        "a boolean");
    bad("[]", "field \"" WHERE "\": expected an object, got an array");
}

/* What names nothing: an imagePullSecrets entry without a name (the API
 * server admits it with a warning), nulls, no spec at all. */
static void test_nothing_named(void **state)
{
    (void)state;
    struct sw_pod_refs r;
    struct sw_error err;
    assert_int_equal(collect("{'imagePullSecrets':[{},{'name':''},{'name':null},{'name':'p'}],"
                             " 'volumes':null,'containers':[null,{'env':null}]}",
                             &r, &err),
                     0);
    assert_int_equal(r.n, 1);
    expect(&r, SW_POD_REF_SECRET, "p", false, WHERE ".imagePullSecrets[3].name");
    memset(&r, 0, sizeof(r));
    assert_int_equal(sw_pod_refs_collect(NULL, NULL, &r, &err), 0);
    assert_int_equal(r.n, 0);
    /* `where` NULL: the paths start at "spec". */
    cJSON *j = parse("{'volumes':[{'name':'a','secret':{'secretName':'s'}}]}");
    assert_int_equal(sw_pod_refs_collect(j, NULL, &r, &err), 0);
    assert_string_equal(r.refs[0].field, "spec.volumes[0].secret.secretName");
    cJSON_Delete(j);
}

/* Two pod specs into one list (a workload with several templates). */
static void test_accumulates(void **state)
{
    (void)state;
    struct sw_pod_refs r;
    struct sw_error err;
    memset(&r, 0, sizeof(r));
    cJSON *a = parse("{'imagePullSecrets':[{'name':'p'}]}");
    cJSON *b = parse("{'imagePullSecrets':[{'name':'p'},{'name':'q'}]}");
    assert_int_equal(sw_pod_refs_collect(a, "spec.a", &r, &err), 0);
    assert_int_equal(sw_pod_refs_collect(b, "spec.b", &r, &err), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.refs[0].field, "spec.a.imagePullSecrets[0].name");
    assert_string_equal(r.refs[1].field, "spec.b.imagePullSecrets[1].name");
    cJSON_Delete(a);
    cJSON_Delete(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_source),  cmocka_unit_test(test_dedup_and_optional),
        cmocka_unit_test(test_limit),         cmocka_unit_test(test_limit_alloc_failure),
        cmocka_unit_test(test_bad_names),     cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_nothing_named), cmocka_unit_test(test_accumulates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
