/* Tests for controller/hub/tenancy.c and the config's tenancy.grants: what
 * an origin namespace may do, and the defaults for one nobody granted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "controller/hub/config.h"
#include "controller/hub/tenancy.h"

static const char cfg_text[] = "redis: {url: \"redis://127.0.0.1:6379/0\"}\n" /* 1 */
                               "secretKeyFile: k\n"                           /* 2 */
                               "tenancy:\n"                                   /* 3 */
                               "  grants:\n"                                  /* 4 */
                               "  - cluster: onprem\n"                        /* 5 */
                               "    namespace: team-a\n"                      /* 6 */
                               "    teams: [vision, shared]\n"                /* 7 */
                               "    priorities: [training, production]\n"     /* 8 */
                               "    read: [\"s3://datasets/team-a/\", \"s3://models/\"]\n"
                               "    write: [\"s3://checkpoints/team-a/\"]\n"
                               "    useExistingNamespace: true\n"
                               "  - cluster: onprem\n"
                               "    namespace: team-dev\n"
                               "    priorities: [development]\n";

static void load(struct sw_hub_config *c)
{
    struct sw_error err = {0};
    int rc = sw_hub_config_parse(cfg_text, strlen(cfg_text), "hub.yaml", c, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
}

static void spec_with(struct sw_burst_spec *s, const char *inputs, const char *outputs,
                      const char *team, const char *prio)
{
    char ann[1024];
    snprintf(ann, sizeof(ann), "{\"spillway.io/burst\": \"auto\"%s%s%s%s%s%s%s%s%s%s%s%s}",
             inputs ? ", \"spillway.io/inputs\": \"" : "", inputs ? inputs : "", inputs ? "\"" : "",
             outputs ? ", \"spillway.io/outputs\": \"" : "", outputs ? outputs : "",
             outputs ? "\"" : "", team ? ", \"spillway.io/team\": \"" : "", team ? team : "",
             team ? "\"" : "", prio ? ", \"spillway.io/priority\": \"" : "", prio ? prio : "",
             prio ? "\"" : "");
    cJSON *a = cJSON_Parse(ann);
    assert_non_null(a);
    struct sw_error err = {0};
    assert_int_equal(sw_burst_spec_parse(a, 0, s, &err), 0);
    cJSON_Delete(a);
}

/* A granted namespace: its team, its priorities, its prefixes. */
static void test_granted(void **state)
{
    (void)state;
    struct sw_hub_config c;
    load(&c);
    assert_int_equal(c.tenancy.n, 2);
    const struct sw_grant *g = sw_tenancy_find(&c.tenancy, "onprem", "team-a");
    assert_non_null(g);
    assert_true(g->existing_ns);
    assert_null(sw_tenancy_find(&c.tenancy, "onprem2", "team-a"));
    assert_null(sw_tenancy_find(&c.tenancy, "onprem", "team-b"));
    assert_true(sw_tenancy_existing_ns(&c.tenancy, "onprem", "team-a"));
    assert_false(sw_tenancy_existing_ns(&c.tenancy, "onprem", "team-dev"));
    assert_false(sw_tenancy_existing_ns(&c.tenancy, "onprem", "nobody"));

    struct sw_burst_spec s;
    struct sw_error err = {0};
    spec_with(&s, "s3://datasets/team-a/imagenet/, s3://models/bert", "s3://checkpoints/team-a/r1/",
              NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), 0);
    assert_string_equal(s.team, "vision"); /* the grant's first team */
    assert_int_equal(s.prio, SW_PRIO_TRAINING);

    /* Another of its teams, and a priority it is granted. */
    spec_with(&s, NULL, NULL, "shared", "production");
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), 0);
    assert_string_equal(s.team, "shared");
    assert_int_equal(s.prio, SW_PRIO_PRODUCTION);
    sw_hub_config_free(&c);
}

/* Each refusal names the annotation, the value and what the namespace may use. */
static void test_refusals(void **state)
{
    (void)state;
    struct sw_hub_config c;
    load(&c);
    struct sw_burst_spec s;
    struct sw_error err = {0};

    /* Another team's data: refused before anything is listed. */
    spec_with(&s, "s3://datasets/team-b/private/", NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    assert_string_equal(err.msg, "annotation \"spillway.io/inputs\": input 1 "
                                 "\"s3://datasets/team-b/private/\": namespace team-a of cluster "
                                 "onprem is granted reading s3://datasets/team-a/, s3://models/");
    /* A sibling prefix that only shares the first letters. */
    spec_with(&s, "s3://datasets/team-ab/x/", NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    /* The prefix without its '/': it would list team-ab/ too. */
    spec_with(&s, "s3://datasets/team-a", NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    /* Dot segments never climb out. */
    spec_with(&s, "s3://datasets/team-a/../team-b/", NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    spec_with(&s, "s3://datasets/team-a//x/", NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    /* Read is not write. */
    spec_with(&s, NULL, "s3://datasets/team-a/out/", NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    assert_string_equal(err.msg, "annotation \"spillway.io/outputs\": "
                                 "\"s3://datasets/team-a/out/\": namespace team-a of cluster "
                                 "onprem is granted writing s3://checkpoints/team-a/");
    /* Another team's name for the bill. */
    spec_with(&s, NULL, NULL, "team-b", NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    assert_string_equal(err.msg, "annotation \"spillway.io/team\": value \"team-b\": namespace "
                                 "team-a of cluster onprem is granted team vision, shared");
    /* A priority the grant does not give. */
    spec_with(&s, NULL, NULL, NULL, "development");
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-a", &s, &err), SW_EFORBIDDEN);
    assert_string_equal(err.msg, "annotation \"spillway.io/priority\": value \"development\": "
                                 "namespace team-a of cluster onprem is granted the priorities "
                                 "training, production");
    sw_hub_config_free(&c);
}

/* Nobody granted anything: no data, its own team, no production; and a
 * grant of development only gives development to a Job that names none. */
static void test_defaults(void **state)
{
    (void)state;
    struct sw_hub_config c;
    load(&c);
    struct sw_burst_spec s;
    struct sw_error err = {0};
    spec_with(&s, NULL, NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "ml", &s, &err), 0);
    assert_string_equal(s.team, "ml");
    assert_int_equal(s.prio, SW_PRIO_TRAINING);
    spec_with(&s, NULL, NULL, "ml", "best-effort");
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "ml", &s, &err), 0);

    spec_with(&s, "s3://datasets/ml/", NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "ml", &s, &err), SW_EFORBIDDEN);
    assert_string_equal(err.msg,
                        "annotation \"spillway.io/inputs\": input 1 \"s3://datasets/ml/\": "
                        "namespace ml of cluster onprem has no grant (tenancy.grants) "
                        "and so may use reading none");
    spec_with(&s, NULL, "s3://checkpoints/ml/", NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "ml", &s, &err), SW_EFORBIDDEN);
    spec_with(&s, NULL, NULL, NULL, "production");
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "ml", &s, &err), SW_EFORBIDDEN);
    spec_with(&s, NULL, NULL, "other", NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "ml", &s, &err), SW_EFORBIDDEN);
    /* No config at all: the same defaults. */
    spec_with(&s, NULL, NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(NULL, "onprem", "ml", &s, &err), 0);
    assert_string_equal(s.team, "ml");

    spec_with(&s, NULL, NULL, NULL, NULL);
    assert_int_equal(sw_tenancy_apply(&c.tenancy, "onprem", "team-dev", &s, &err), 0);
    assert_int_equal(s.prio, SW_PRIO_DEVELOPMENT);
    assert_string_equal(s.team, "team-dev");
    sw_hub_config_free(&c);
}

/* The config refuses what it cannot mean, naming the field. */
static void test_config_errors(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *msg;
    } cases[] = {
        {"tenancy: {grants: x}\n",
         "hub.yaml:3: field \"tenancy.grants\": expected a list of grants, got a scalar"},
        {"tenancy: {grants: [{namespace: a}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0]\": expected both cluster and namespace, got no "
         "cluster"},
        {"tenancy: {grants: [{cluster: c, namespace: a, reed: []}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].reed\": unknown (expected cluster, namespace, "
         "teams, priorities, read, write, useExistingNamespace)"},
        {"tenancy: {grants: [{cluster: c, namespace: a, read: [\"s3://ddd/x\"]}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].read[0]\": expected an object-store prefix such "
         "as \"s3://datasets/team-a/\" (expected the whole bucket (s3://BUCKET/) or a prefix "
         "ending in '/'), got \"s3://ddd/x\""},
        {"tenancy: {grants: [{cluster: c, namespace: a, read: \"s3://ddd/\"}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].read\": expected a list of object-store "
         "prefixes, got a scalar"},
        {"tenancy: {grants: [{cluster: c, namespace: a, priorities: [urgent]}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].priorities[0]\": expected best-effort, "
         "development, training or production, got \"urgent\""},
        {"tenancy: {grants: [{cluster: c, namespace: A}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].namespace\": expected a namespace name (a "
         "DNS-1123 label), got \"A\""},
        {"tenancy: {grants: [{cluster: c, namespace: a}, {cluster: c, namespace: a}]}\n",
         "hub.yaml:3: field \"tenancy.grants[1]\": a second grant for namespace a of cluster c "
         "(first: tenancy.grants[0])"},
        {"tenancy: {grants: [{cluster: c, namespace: a, priorities: []}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].priorities\": expected at least one priority "
         "(leave the field out for best-effort, development and training)"},
        {"tenancy: {grants: [{cluster: c, namespace: a, teams: []}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].teams\": expected at least one team (leave the "
         "field out for the namespace's own name)"},
        {"tenancy: {grants: [{cluster: c, namespace: a, useExistingNamespace: yes}]}\n",
         "hub.yaml:3: field \"tenancy.grants[0].useExistingNamespace\": expected true or false, "
         "got \"yes\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char y[1024];
        snprintf(y, sizeof(y), "redis: {url: \"redis://r\"}\nsecretKeyFile: k\n%s", cases[i].yaml);
        struct sw_hub_config c;
        struct sw_error err = {0};
        assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), SW_EINVAL);
        assert_string_equal(err.msg, cases[i].msg);
        assert_null(c.tenancy.grants); /* nothing half-kept */
    }
}

static void test_prefix_parse(void **state)
{
    (void)state;
    struct sw_s3_uri u;
    const char *why = NULL;
    assert_int_equal(sw_grant_prefix_parse("s3://datasets/", &u, &why), 0);
    assert_string_equal(u.prefix, "");
    assert_int_equal(sw_grant_prefix_parse("s3://datasets", &u, &why), 0);
    assert_int_equal(sw_grant_prefix_parse("s3://datasets/a/b/", &u, &why), 0);
    assert_int_equal(sw_grant_prefix_parse("s3://datasets/a/./", &u, &why), SW_EINVAL);
    assert_int_equal(sw_grant_prefix_parse("s3://datasets/a/../", &u, &why), SW_EINVAL);
    assert_int_equal(sw_grant_prefix_parse("s3://datasets/a//", &u, &why), SW_EINVAL);
    assert_int_equal(sw_grant_prefix_parse("http://datasets/a/", &u, &why), SW_EINVAL);
    struct sw_s3_uri whole;
    assert_int_equal(sw_grant_prefix_parse("s3://models/", &whole, &why), 0);
    struct sw_s3_uri job = {.bucket = "models", .prefix = "bert/v1"};
    assert_true(sw_grant_covers(&whole, 1, &job));
    struct sw_s3_uri other = {.bucket = "models2", .prefix = ""};
    assert_false(sw_grant_covers(&whole, 1, &other));
    assert_false(sw_grant_covers(&whole, 0, &job));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_granted),      cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_prefix_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
