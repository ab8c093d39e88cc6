/* Tests for controller/hub/config.c: the full example, defaults, every
 * refusal with its exact message, files and the Redis password. */
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

#include "common/alloc.h"
#include "common/log.h"
#include "controller/hub/config.h"

/* The example of docs/hub.md, "Configuration". */
static const char full[] = "redis:\n"                                       /* 1 */
                           "  url: redis://10.0.0.5:6380/2\n"               /* 2 */
                           "  passwordFile: /etc/spillway/redis-password\n" /* 3 */
                           "secretKeyFile: /etc/spillway/secret.key\n"      /* 4 */
                           "listen: 0.0.0.0:9464\n"                         /* 5 */
                           "placement:\n"                                   /* 6 */
                           "  policy: cost-aware:2.5\n"                     /* 7 */
                           "  recheckSeconds: 2.5\n"                        /* 8 */
                           "leader:\n"                                      /* 9 */
                           "  id: hub-a\n"                                  /* 10 */
                           "  leaseTTLSeconds: 15\n"                        /* 11 */
                           "outputs:\n"                                     /* 12 */
                           "  syncSeconds: 60\n"                            /* 13 */
                           "maxAttempts: 5\n"                               /* 14 */
                           "logLevel: debug\n"                              /* 15 */
                           "members:\n"                                     /* 16 */
                           "  probeIntervalSeconds: 2\n"                    /* 17 */
                           "  lostAfterSeconds: 20\n"                       /* 18 */
                           "  qps: 200\n"                                   /* 19 */
                           "  burst: 400\n";                                /* 20 */

static void test_full_example(void **state)
{
    (void)state;
    struct sw_hub_config c;
    struct sw_error err;
    sw_error_clear(&err);
    assert_int_equal(sw_hub_config_parse(full, strlen(full), "hub.yaml", &c, &err), 0);
    assert_string_equal(c.redis_url, "redis://10.0.0.5:6380/2");
    assert_string_equal(c.redis_password_file, "/etc/spillway/redis-password");
    assert_string_equal(c.redis_password_env, "SPILLWAY_REDIS_PASSWORD");
    assert_string_equal(c.secret_key_file, "/etc/spillway/secret.key");
    assert_string_equal(c.listen, "0.0.0.0:9464");
    assert_string_equal(c.policy, "cost-aware:2.5");
    assert_true(c.recheck_s == 2.5);
    assert_string_equal(c.hub_id, "hub-a");
    assert_true(c.lease_ttl_s == 15);
    assert_true(c.output_sync_s == 60);
    assert_int_equal(c.max_attempts, 5);
    assert_string_equal(c.log_level, "debug");
    assert_true(c.probe_interval_s == 2);
    assert_true(c.lost_after_s == 20);
    assert_true(c.member_qps == 200);
    assert_int_equal(c.member_burst, 400);
}

/* An ACL user in the URL as USER:@, its password apart; USER@ is a password. */
static void test_acl_user(void **state)
{
    (void)state;
    struct sw_hub_config c;
    struct sw_error err;
    const char *y = "redis:\n  url: rediss://spillway:@redis.example:6380/0?tls_ca_file=/ca.pem\n"
                    "  passwordFile: pw\nsecretKeyFile: k\n";
    sw_error_clear(&err);
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_string_equal(c.redis_url, "rediss://spillway:@redis.example:6380/0?tls_ca_file=/ca.pem");
    sw_hub_config_free(&c);
    y = "redis:\n  url: redis://spillway@r:6379/0\nsecretKeyFile: k\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "a password in the URL is refused"));
}

/* The example of docs/hub.md, word for word. */
static void test_docs_example(void **state)
{
    (void)state;
    const char *y = "redis:\n"
                    "  url: redis://127.0.0.1:6379/0\n"
                    "  passwordFile: /etc/spillway/redis-password   # or passwordEnv, not both\n"
                    "secretKeyFile: /etc/spillway/secret.key\n"
                    "listen: 127.0.0.1:9464\n"
                    "placement:\n"
                    "  policy: cost-aware            # or cost-aware:2.5 (the policy's parameter)\n"
                    "  recheckSeconds: 5\n"
                    "leader:\n"
                    "  id: hub-a\n"
                    "  leaseTTLSeconds: 10\n"
                    "outputs:\n"
                    "  syncSeconds: 30\n"
                    "maxAttempts: 3\n"
                    "members:\n"
                    "  probeIntervalSeconds: 10\n"
                    "  lostAfterSeconds: 60\n"
                    "  rtoTargetSeconds: 600\n"
                    "  qps: 50\n"
                    "  burst: 100\n"
                    "replication:\n"
                    "  intervalSeconds: 60\n"
                    "  modelRegistrySeconds: 5\n"
                    "  rpoObjectiveSeconds: 300\n"
                    "  workers: 2\n"
                    "buckets:                        # a bucket's name in each region's store\n"
                    "  datasets:\n"
                    "    us-east-1: acme-datasets-use1\n"
                    "    us-west-2: acme-datasets-usw2\n"
                    "logLevel: info\n"
                    "kueue:\n"
                    "  mirrorAdmissionSeconds: 600\n"
                    "records:\n"
                    "  retireAfterSeconds: 3600\n"
                    "  archiveDays: 30\n"
                    "  deletedOriginSeconds: 15\n"
                    "karpenter:\n"
                    "  shortageWithdrawSeconds: 45\n";
    struct sw_hub_config c;
    struct sw_error err;
    sw_error_clear(&err);
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_string_equal(c.redis_url, "redis://127.0.0.1:6379/0");
    assert_string_equal(c.redis_password_file, "/etc/spillway/redis-password");
    assert_string_equal(c.policy, "cost-aware");
    assert_string_equal(c.hub_id, "hub-a");
    assert_true(c.recheck_s == 5 && c.lease_ttl_s == 10 && c.output_sync_s == 30);
    assert_int_equal(c.max_attempts, 3);
    assert_string_equal(c.log_level, "info");
    assert_true(c.mirror_admission_s == 600);
    assert_true(c.retire_after_s == 3600);
    assert_int_equal(c.archive_days, 30);
    assert_true(c.deleted_origin_s == 15);
    assert_true(c.shortage_withdraw_s == 45);
    assert_int_equal(c.gate_workers, 2);
    assert_int_equal(c.nbucket_maps, 2);
    assert_string_equal(sw_hub_config_bucket(&c, "datasets", "us-west-2", "onprem"),
                        "acme-datasets-usw2");
}

static void test_defaults(void **state)
{
    (void)state;
    const char *y = "redis: {url: \"redis://127.0.0.1\"}\nsecretKeyFile: key\n";
    struct sw_hub_config c;
    struct sw_error err;
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_string_equal(c.redis_url, "redis://127.0.0.1");
    assert_string_equal(c.redis_password_file, "");
    assert_string_equal(c.redis_password_env, "SPILLWAY_REDIS_PASSWORD");
    assert_string_equal(c.secret_key_file, "key");
    assert_string_equal(c.listen, "127.0.0.1:9464");
    assert_string_equal(c.policy, "cost-aware");
    assert_true(c.recheck_s == 5);
    assert_true(c.lease_ttl_s == 10);
    assert_int_equal(c.ns_selector.nterms, 0); /* every namespace */
    /* The deadline guard is on unless turned off. */
    assert_int_equal(c.deadline_guard, 1);
    const char *ng = "redis: {url: \"redis://r\"}\nsecretKeyFile: key\n"
                     "placement:\n  deadlineGuard: false\n";
    assert_int_equal(sw_hub_config_parse(ng, strlen(ng), "hub.yaml", &c, &err), 0);
    assert_int_equal(c.deadline_guard, 0);
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    /* The MultiKueue dispatcher is off unless asked for. */
    assert_int_equal(c.mk_dispatcher, 0);
    assert_int_equal(c.mk_workers, 1);
    const char *mk = "redis: {url: \"redis://r\"}\nsecretKeyFile: key\n"
                     "kueue:\n  multiKueueDispatcher: true\n  multiKueueWorkers: 20\n";
    assert_int_equal(sw_hub_config_parse(mk, strlen(mk), "hub.yaml", &c, &err), 0);
    assert_int_equal(c.mk_dispatcher, 1);
    assert_int_equal(c.mk_workers, 20);
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_true(c.probe_interval_s == 10 && c.lost_after_s == 60 && c.rto_target_s == 600);
    assert_true(c.member_qps == 50);
    assert_int_equal(c.member_burst, 100);
    assert_true(c.mirror_admission_s == 300);
    /* A finished Job's record ends a day after, archived 400 days. */
    assert_true(c.retire_after_s == 86400);
    assert_int_equal(c.archive_days, 400);
    assert_true(c.deleted_origin_s == 300);
    assert_true(c.shortage_withdraw_s == 120);
    assert_true(c.repl_interval_s == 60 && c.repl_model_s == 5 && c.repl_rpo_objective_s == 300);
    assert_int_equal(c.gate_workers, 4);
    assert_string_equal(c.hub_id, "");
    assert_string_equal(c.log_level, "info");
    assert_true(c.output_sync_s == 30);
    assert_int_equal(c.max_attempts, 3);

    /* sw_hub_config_default gives the same, with the required fields empty. */
    struct sw_hub_config d;
    sw_hub_config_default(&d);
    assert_string_equal(d.redis_url, "");
    assert_string_equal(d.secret_key_file, "");
    assert_string_equal(d.policy, c.policy);
    assert_true(d.lease_ttl_s == c.lease_ttl_s);

    /* Empty sub-mappings are fine; an env var name replaces the default. */
    y = "redis:\n  url: redis://r:6379/0\n  passwordEnv: MY_PW\nsecretKeyFile: k\n"
        "placement: {}\nleader: {}\noutputs: {}\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_string_equal(c.redis_password_env, "MY_PW");
}

static void test_sentinel(void **state)
{
    (void)state;
    struct sw_hub_config c;
    struct sw_error err;
    const char *y = "redis:\n  url: redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/hub-redis/7\n"
                    "  passwordFile: /etc/pw\n  sentinelPasswordFile: sentinel-pw\n"
                    "secretKeyFile: /k\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "/etc/spillway/hub.yaml", &c, &err), 0);
    assert_true(c.redis_sentinel);
    assert_string_equal(c.redis_url, "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/hub-redis/7");
    assert_string_equal(c.sentinel_password_file, "/etc/spillway/sentinel-pw");
    assert_string_equal(c.sentinel_password_env, "SPILLWAY_SENTINEL_PASSWORD");

    /* The Sentinel password: the default variable, or the one named. */
    y = "redis:\n  url: redis+sentinel://a/m\n  sentinelPasswordEnv: SW_TEST_SENTINEL_PW\n"
        "secretKeyFile: /k\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    char pw[32];
    setenv("SW_TEST_SENTINEL_PW", "sentinel-secret", 1);
    setenv("SPILLWAY_SENTINEL_PASSWORD", "the-default", 1);
    assert_int_equal(sw_hub_config_sentinel_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "sentinel-secret");
    y = "redis: {url: \"redis+sentinel://a/m\"}\nsecretKeyFile: /k\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_int_equal(sw_hub_config_sentinel_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "the-default");
    /* Not a Sentinel URL: no Sentinel password, whatever the environment. */
    y = "redis: {url: \"redis://a\"}\nsecretKeyFile: /k\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_false(c.redis_sentinel);
    assert_int_equal(sw_hub_config_sentinel_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "");
    /* A missing file is named, with what it was for. */
    y = "redis: {url: \"redis+sentinel://a/m\", sentinelPasswordFile: /nonexistent/sp}\n"
        "secretKeyFile: /k\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_int_equal(sw_hub_config_sentinel_password(&c, pw, sizeof(pw), &err), SW_ENOENT);
    assert_non_null(strstr(err.msg, "/nonexistent/sp"));
    assert_non_null(strstr(err.msg, "Sentinel password file"));
    unsetenv("SW_TEST_SENTINEL_PW");
    unsetenv("SPILLWAY_SENTINEL_PASSWORD");
}

static void test_relative_paths(void **state)
{
    (void)state;
    const char *y = "redis: {url: \"redis://r\", passwordFile: pw}\nsecretKeyFile: keys/secret\n";
    struct sw_hub_config c;
    struct sw_error err;
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "etc/spillway/hub.yaml", &c, &err), 0);
    assert_string_equal(c.redis_password_file, "etc/spillway/pw");
    assert_string_equal(c.secret_key_file, "etc/spillway/keys/secret");
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "/srv/hub.yaml", &c, &err), 0);
    assert_string_equal(c.secret_key_file, "/srv/keys/secret");
    y = "redis: {url: \"redis://r\"}\nsecretKeyFile: /abs/key\n";
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "etc/hub.yaml", &c, &err), 0);
    assert_string_equal(c.secret_key_file, "/abs/key");
}

#define BASE "redis:\n  url: redis://r:6379/0\nsecretKeyFile: k\n" /* lines 1-3 */

/* buckets: a bucket's name per region; the others keep their own name. */
static void test_buckets(void **state)
{
    (void)state;
    const char *y = "redis: {url: \"redis://r\"}\nsecretKeyFile: k\n"
                    "buckets:\n"
                    "  datasets:\n"
                    "    us-east-1: datasets-use1\n"
                    "    us-west-2: datasets-usw2\n"
                    "  results:\n"
                    "    onprem: results-home\n";
    struct sw_hub_config c;
    struct sw_error err;
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_int_equal(c.nbucket_maps, 3);
    assert_string_equal(sw_hub_config_bucket(&c, "datasets", "us-east-1", "onprem"),
                        "datasets-use1");
    assert_string_equal(sw_hub_config_bucket(&c, "datasets", "us-west-2", "onprem"),
                        "datasets-usw2");
    assert_string_equal(sw_hub_config_bucket(&c, "datasets", "onprem", "onprem"), "datasets");
    assert_string_equal(sw_hub_config_bucket(&c, "results", "onprem", "onprem"), "results-home");
    /* Unmapped in another region: no name, never the annotation's. */
    assert_null(sw_hub_config_bucket(&c, "models", "us-east-1", "onprem"));
    assert_null(sw_hub_config_bucket(NULL, "models", "us-east-1", "onprem"));
    assert_string_equal(sw_hub_config_bucket(NULL, "models", "onprem", "onprem"), "models");
    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"buckets: x\n", "hub.yaml:3: field \"buckets\": expected a mapping of bucket names to "
                         "mappings of region to bucket name, got a scalar"},
        {"buckets:\n  Data: {us-east-1: d-use1}\n",
         "hub.yaml:4: field \"buckets.Data\": bucket name: expected lowercase letters, digits, "
         "'.' and '-', got \"Data\""},
        {"buckets:\n  data: us-east-1\n",
         "hub.yaml:4: field \"buckets.data\": expected a mapping of region to bucket name, got a "
         "scalar"},
        {"buckets:\n  data: {US: d-use1}\n",
         "hub.yaml:4: a key of \"buckets.data\": expected a region (1-63 of a-z, 0-9 and '-'), "
         "got \"US\""},
        {"buckets:\n  data: {us-east-1: d}\n",
         "hub.yaml:4: field \"buckets.data.us-east-1\": bucket name: expected 3 to 63 characters, "
         "got \"d\""},
        {"buckets:\n  data: {us-east-1: d-use1, us-east-1: d-use2}\n",
         "hub.yaml:4: field \"buckets.data.us-east-1\": given twice"},
        {"buckets:\n  data: {us-east-1: d-use1}\n  data: {us-west-2: d-usw2}\n",
         "hub.yaml:5: field \"buckets.data\": given twice"},
        {"buckets:\n  data: {us-east-1: [a]}\n",
         "hub.yaml:4: field \"buckets.data.us-east-1\": expected a bucket name, got a list"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char doc[512];
        snprintf(doc, sizeof(doc), "redis: {url: \"redis://r\"}\nsecretKeyFile: k\n%s",
                 bad[i].yaml);
        sw_error_clear(&err);
        assert_int_equal(sw_hub_config_parse(doc, strlen(doc), "hub.yaml", &c, &err), SW_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
    }
    /* The limit: SW_HUB_MAX_BUCKET_MAPS names parse, one more does not. */
    char big[8192];
    size_t off = (size_t)snprintf(big, sizeof(big),
                                  "redis: {url: \"redis://r\"}\nsecretKeyFile: k\nbuckets:\n");
    for (int i = 0; i <= SW_HUB_MAX_BUCKET_MAPS; i++)
        off += (size_t)snprintf(big + off, sizeof(big) - off, "  b%03d: {r1: n%03d}\n", i, i);
    assert_int_equal(sw_hub_config_parse(big, off, "hub.yaml", &c, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "more than 64 bucket names in all"));
    big[off - strlen("  b064: {r1: n064}\n")] = '\0';
    assert_int_equal(sw_hub_config_parse(big, strlen(big), "hub.yaml", &c, &err), 0);
    assert_int_equal(c.nbucket_maps, SW_HUB_MAX_BUCKET_MAPS);
}

static void test_namespace_selector(void **state)
{
    (void)state;
    const char *y = BASE "namespaceSelector: \"spillway.io/test=burst, team notin (x)\"\n";
    struct sw_hub_config c;
    struct sw_error err;
    sw_error_clear(&err);
    assert_int_equal(sw_hub_config_parse(y, strlen(y), "hub.yaml", &c, &err), 0);
    assert_int_equal(c.ns_selector.nterms, 2);
    assert_string_equal(c.ns_selector.text, "spillway.io/test=burst, team notin (x)");
    assert_string_equal(c.ns_selector.terms[0].key, "spillway.io/test");
    assert_int_equal(c.ns_selector.terms[1].op, SW_NSSEL_NOTIN);
    sw_hub_config_free(&c);
}

static void test_errors_exact(void **state)
{
    (void)state;
    struct {
        const char *y;
        int code;
        const char *msg;
    } bad[] = {
        /* unknown keys, top-level and nested */
        {BASE "lisen: 1.2.3.4:80\n", SW_EINVAL,
         "hub.yaml:4: field \"lisen\": unknown (expected redis, secretKeyFile, listen, placement, "
         "leader, outputs, maxAttempts, members, replication, buckets, logLevel, kueue, records, "
         "karpenter, tenancy, budgets, namespaceSelector)"},
        /* namespaceSelector: a label selector, the term that is wrong named */
        {BASE "namespaceSelector: \"hub=a, team in cv\"\n", SW_EINVAL,
         "hub.yaml:4: field \"namespaceSelector\": expected a label selector over the members' "
         "namespaces, such as \"spillway.io/hub=a\" or \"team in (cv,nlp)\": term 2 (\"team in "
         "cv\"): expected \"(\" after \"in\""},
        {BASE "namespaceSelector: [a]\n", SW_EINVAL,
         "hub.yaml:4: field \"namespaceSelector\": expected a label selector over the members' "
         "namespaces, such as \"spillway.io/hub=a\" or \"team in (cv,nlp)\", got a list"},
        {BASE "records:\n  retireAfterSeconds: 0\n", SW_EINVAL,
         "hub.yaml:5: field \"records.retireAfterSeconds\": expected a number of seconds >= 1, "
         "got \"0\""},
        {BASE "records:\n  archiveDays: 1.5\n", SW_EINVAL,
         "hub.yaml:5: field \"records.archiveDays\": expected a whole number of days >= 1, got "
         "\"1.5\""},
        {BASE "records:\n  retainDays: 3\n", SW_EINVAL,
         "hub.yaml:5: field \"records.retainDays\": unknown (expected retireAfterSeconds, "
         "deletedOriginSeconds, archiveDays)"},
        {BASE "karpenter:\n  shortageWithdrawSeconds: 0\n", SW_EINVAL,
         "hub.yaml:5: field \"karpenter.shortageWithdrawSeconds\": expected a number of seconds "
         ">= 1, got \"0\""},
        {BASE "karpenter:\n  withdrawSeconds: 5\n", SW_EINVAL,
         "hub.yaml:5: field \"karpenter.withdrawSeconds\": unknown (expected "
         "shortageWithdrawSeconds)"},
        {BASE "kueue:\n  mirrorAdmissionSeconds: 0\n", SW_EINVAL,
         "hub.yaml:5: field \"kueue.mirrorAdmissionSeconds\": expected a number of seconds >= 1, "
         "got \"0\""},
        {BASE "leader:\n  id: a\n  ttl: 5\n", SW_EINVAL,
         "hub.yaml:6: field \"leader.ttl\": unknown (expected id, leaseTTLSeconds)"},
        {"redis:\n  uri: redis://r\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.uri\": unknown (expected url, passwordFile, passwordEnv, "
         "sentinelPasswordFile, sentinelPasswordEnv)"},
        /* repeated keys */
        {BASE "listen: a:1\nlisten: b:2\n", SW_EINVAL,
         "hub.yaml:5: field \"listen\": given twice (first on line 4)"},
        {"redis:\n  url: redis://a\n  url: redis://b\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:3: field \"redis.url\": given twice (first on line 2)"},
        /* wrong shapes and null */
        {"redis: redis://r\n", SW_EINVAL,
         "hub.yaml:1: field \"redis\": expected a mapping, got a scalar"},
        {BASE "leader:\n", SW_EINVAL, "hub.yaml:4: field \"leader\": expected a mapping, got null"},
        {BASE "listen: [a, b]\n", SW_EINVAL,
         "hub.yaml:4: field \"listen\": expected host:port, e.g. \"127.0.0.1:9464\", got a list"},
        {BASE "maxAttempts: ~\n", SW_EINVAL,
         "hub.yaml:4: field \"maxAttempts\": expected a whole number >= 1, got null"},
        {BASE "? [a]\n: b\n", SW_EINVAL,
         "hub.yaml:4: a key of the top-level mapping: expected a field name, got a list"},
        {"- a\n", SW_EINVAL, "hub.yaml:1: expected a mapping at the top, got a list"},
        {"", SW_EINVAL, "hub.yaml: expected a mapping at the top, got an empty file"},
        /* numbers */
        {BASE "leader:\n  leaseTTLSeconds: abc\n", SW_EINVAL,
         "hub.yaml:5: field \"leader.leaseTTLSeconds\": expected a number of seconds >= 1, got "
         "\"abc\""},
        {BASE "leader:\n  leaseTTLSeconds: -10\n", SW_EINVAL,
         "hub.yaml:5: field \"leader.leaseTTLSeconds\": expected a number of seconds >= 1, got "
         "\"-10\""},
        {BASE "leader:\n  leaseTTLSeconds: 0.5\n", SW_EINVAL,
         "hub.yaml:5: field \"leader.leaseTTLSeconds\": expected a number of seconds >= 1, got "
         "\"0.5\""},
        {BASE "leader:\n  leaseTTLSeconds: 7200\n", SW_EINVAL,
         "hub.yaml:5: field \"leader.leaseTTLSeconds\": expected a number of seconds <= 3600, got "
         "\"7200\""},
        {BASE "placement:\n  recheckSeconds: .nan\n", SW_EINVAL,
         "hub.yaml:5: field \"placement.recheckSeconds\": expected a number of seconds >= 0.1, "
         "got \".nan\""},
        {BASE "placement:\n  recheckSeconds: 0x10\n", SW_EINVAL,
         "hub.yaml:5: field \"placement.recheckSeconds\": expected a number of seconds >= 0.1, "
         "got \"0x10\""},
        {BASE "maxAttempts: 2.5\n", SW_EINVAL,
         "hub.yaml:4: field \"maxAttempts\": expected a whole number >= 1, got \"2.5\""},
        {BASE "maxAttempts: 101\n", SW_EINVAL,
         "hub.yaml:4: field \"maxAttempts\": expected a whole number <= 100, got \"101\""},
        {BASE "members:\n  lostAfterSeconds: 0\n", SW_EINVAL,
         "hub.yaml:5: field \"members.lostAfterSeconds\": expected a number of seconds >= 1, got "
         "\"0\""},
        {BASE "members:\n  probeIntervalSeconds: 0.1\n", SW_EINVAL,
         "hub.yaml:5: field \"members.probeIntervalSeconds\": expected a number of seconds >= "
         "0.5, got \"0.1\""},
        {BASE "members:\n  lostAfter: 60\n", SW_EINVAL,
         "hub.yaml:5: field \"members.lostAfter\": unknown (expected probeIntervalSeconds, "
         "lostAfterSeconds, rtoTargetSeconds, qps, burst)"},
        {BASE "members:\n  qps: 0.5\n", SW_EINVAL,
         "hub.yaml:5: field \"members.qps\": expected a number of requests per second >= 1, got "
         "\"0.5\""},
        {BASE "members:\n  burst: 1.5\n", SW_EINVAL,
         "hub.yaml:5: field \"members.burst\": expected a whole number of requests >= 1, got "
         "\"1.5\""},
        {BASE "outputs: {syncSeconds: 0}\n", SW_EINVAL,
         "hub.yaml:4: field \"outputs.syncSeconds\": expected a number of seconds >= 1, got "
         "\"0\""},
        /* the password never reaches the message */
        {"redis:\n  url: redis://:s3cret@r:6379/0\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": a password in the URL is refused; put it in "
         "redis.passwordFile or in the environment (redis.passwordEnv)"},
        {"redis:\n  url: redis://admin:s3cret@r\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": a password in the URL is refused; put it in "
         "redis.passwordFile or in the environment (redis.passwordEnv)"},
        {"redis:\n  url: http://r\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": redis URL: expected it to start with redis://, "
         "rediss://, redis+sentinel://, rediss+sentinel:// or unix://"},
        /* Sentinel: the URL names the field; passwords never in it */
        {"redis:\n  url: redis+sentinel://a:1,,c:3/m\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": redis URL: Sentinel 2 of the list is empty"},
        {"redis:\n  url: redis+sentinel://a:1,b:2\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": redis URL: expected /MASTERNAME after the Sentinels "
         "(the name they monitor the master by)"},
        {"redis:\n  url: redis+sentinel://:s3cret@a:1/m\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": a password in the URL is refused; put it in "
         "redis.passwordFile or in the environment (redis.passwordEnv)"},
        {"redis:\n  url: redis+sentinel://a:1/m?sentinelPassword=s3cret\nsecretKeyFile: k\n",
         SW_EINVAL,
         "hub.yaml:2: field \"redis.url\": a Sentinel password in the URL is refused; put it in "
         "redis.sentinelPasswordFile or in the environment (redis.sentinelPasswordEnv)"},
        {"redis:\n  url: redis://r\n  sentinelPasswordFile: f\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:3: field \"redis.sentinelPasswordFile\": given, but redis.url is not a "
         "Sentinel URL (expected redis+sentinel://HOST:PORT,.../MASTER)"},
        {"redis:\n  url: redis://r\n  sentinelPasswordEnv: SP\nsecretKeyFile: k\n", SW_EINVAL,
         "hub.yaml:3: field \"redis.sentinelPasswordEnv\": given, but redis.url is not a "
         "Sentinel URL (expected redis+sentinel://HOST:PORT,.../MASTER)"},
        {"redis:\n  url: redis+sentinel://a/m\n  sentinelPasswordFile: f\n"
         "  sentinelPasswordEnv: E\nsecretKeyFile: k\n",
         SW_EINVAL,
         "hub.yaml:4: fields \"redis.sentinelPasswordFile\" and \"redis.sentinelPasswordEnv\": "
         "expected one of them, not both"},
        {"redis:\n  url: redis+sentinel://a/m\n  sentinelPasswordEnv: 9X\n", SW_EINVAL,
         "hub.yaml:3: field \"redis.sentinelPasswordEnv\": expected an environment variable "
         "name (letters, digits and '_', not starting with a digit), got \"9X\""},
        {"redis:\n  url: redis://r\n  passwordFile: f\n  passwordEnv: E\nsecretKeyFile: k\n",
         SW_EINVAL,
         "hub.yaml:4: fields \"redis.passwordFile\" and \"redis.passwordEnv\": expected one of "
         "them, not both"},
        {"redis:\n  url: redis://r\n  passwordEnv: 1X\n", SW_EINVAL,
         "hub.yaml:3: field \"redis.passwordEnv\": expected an environment variable name "
         "(letters, digits and '_', not starting with a digit), got \"1X\""},
        /* policy: sw_policy_parse's own words */
        {BASE "placement:\n  policy: cheapest\n", SW_EINVAL,
         "hub.yaml:5: field \"placement.policy\": unknown policy \"cheapest\" (expected "
         "cost-aware, local-only, burst-now, const-wait, starburst, spot-only, greedy or "
         "uniform-progress)"},
        {BASE "placement:\n  policy: greedy:3\n", SW_EINVAL,
         "hub.yaml:5: field \"placement.policy\": policy \"greedy\" takes no parameter"},
        /* other values */
        {BASE "listen: 9464\n", SW_EINVAL,
         "hub.yaml:4: field \"listen\": expected host:port, e.g. \"127.0.0.1:9464\", got "
         "\"9464\""},
        {BASE "listen: \"host:70000\"\n", SW_EINVAL,
         "hub.yaml:4: field \"listen\": expected host:port, e.g. \"127.0.0.1:9464\", got "
         "\"host:70000\""},
        {BASE "placement:\n  deadlineGuard: on\n", SW_EINVAL,
         "hub.yaml:5: field \"placement.deadlineGuard\": expected true or false, got \"on\""},
        {BASE "kueue:\n  multiKueueDispatcher: yes\n", SW_EINVAL,
         "hub.yaml:5: field \"kueue.multiKueueDispatcher\": expected true or false, got \"yes\""},
        {BASE "kueue:\n  multiKueueWorkers: 21\n", SW_EINVAL,
         "hub.yaml:5: field \"kueue.multiKueueWorkers\": expected a whole number of worker "
         "clusters <= 20, got \"21\""},
        {BASE "kueue:\n  multiKueueWorkers: 0\n", SW_EINVAL,
         "hub.yaml:5: field \"kueue.multiKueueWorkers\": expected a whole number of worker "
         "clusters >= 1, got \"0\""},
        {BASE "replication:\n  workers: 0\n", SW_EINVAL,
         "hub.yaml:5: field \"replication.workers\": expected a whole number of worker threads "
         ">= 1, got \"0\""},
        {BASE "replication:\n  workers: 65\n", SW_EINVAL,
         "hub.yaml:5: field \"replication.workers\": expected a whole number of worker threads "
         "<= 64, got \"65\""},
        {BASE "replication:\n  workers: 2.5\n", SW_EINVAL,
         "hub.yaml:5: field \"replication.workers\": expected a whole number of worker threads "
         ">= 1, got \"2.5\""},
        {BASE "logLevel: verbose\n", SW_EINVAL,
         "hub.yaml:4: field \"logLevel\": expected debug, info, warn or error, got \"verbose\""},
        {BASE "leader: {id: \"hub a\"}\n", SW_EINVAL,
         "hub.yaml:4: field \"leader.id\": expected an id of 1-63 letters, digits, '.', '_' and "
         "'-', got \"hub a\""},
        {BASE "secretKeyFile: k2\n", SW_EINVAL,
         "hub.yaml:4: field \"secretKeyFile\": given twice (first on line 3)"},
        /* required fields */
        {"secretKeyFile: k\n", SW_EINVAL,
         "hub.yaml: field \"redis.url\": required, not given (e.g. \"redis://127.0.0.1:6379/0\")"},
        {"redis: {url: \"redis://r\"}\n", SW_EINVAL,
         "hub.yaml: field \"secretKeyFile\": required, not given (the file of the key that seals "
         "cluster credentials)"},
        /* documents */
        {BASE "---\nlisten: a:1\n", SW_EINVAL,
         "hub.yaml:4: a second YAML document; a config file holds one"},
        {"redis: [\n", SW_EPARSE, "hub.yaml:2: did not find expected node content"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_hub_config c;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_hub_config_parse(bad[i].y, strlen(bad[i].y), "hub.yaml", &c, &err);
        if (rc != bad[i].code || strcmp(err.msg, bad[i].msg) != 0)
            fail_msg("case %zu: rc %d, message\n  %s\nexpected\n  %s", i, rc, err.msg, bad[i].msg);
        assert_null(strstr(err.msg, "s3cret"));
    }
}

static void test_alloc_failures(void **state)
{
    (void)state;
    /* The Redis URL check allocates (sw_malloc); libyaml uses its own. */
    for (uint64_t nth = 1; nth < 100; nth++) {
        struct sw_hub_config c;
        struct sw_error err;
        sw_error_clear(&err);
        sw_alloc_fail_at(nth);
        int rc = sw_hub_config_parse(full, strlen(full), "hub.yaml", &c, &err);
        int injected = sw_alloc_injected();
        sw_alloc_reset();
        if (!injected) {
            assert_int_equal(rc, 0);
            assert_int_equal(c.max_attempts, 5);
            assert_true(nth > 1); /* at least one allocation was refused once */
            return;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_string_equal(err.msg, "hub.yaml:2: field \"redis.url\": out of memory");
    }
    fail_msg("the parser allocated more than expected");
}

/* Writes `data` to a new file in the temporary directory `dir`. */
static void write_file(const char *path, const char *data, size_t n, mode_t mode)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_load(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-hub-config-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], msg[512];
    struct sw_hub_config c;
    struct sw_error err;

    snprintf(path, sizeof(path), "%s/hub.yaml", dir);
    write_file(path, full, strlen(full), 0600);
    assert_int_equal(sw_hub_config_load(path, &c, &err), 0);
    assert_string_equal(c.hub_id, "hub-a");

    /* Errors of the parser carry the path given. */
    const char *bad = "redis: {url: \"redis://r\"}\nsecretKeyFile: k\nmaxAttempts: 0\n";
    write_file(path, bad, strlen(bad), 0600);
    assert_int_equal(sw_hub_config_load(path, &c, &err), SW_EINVAL);
    snprintf(msg, sizeof(msg),
             "%s:3: field \"maxAttempts\": expected a whole number >= 1, got \"0\"", path);
    assert_string_equal(err.msg, msg);

    snprintf(path, sizeof(path), "%s/missing.yaml", dir);
    assert_int_equal(sw_hub_config_load(path, &c, &err), SW_ENOENT);
    snprintf(msg, sizeof(msg), "%s: config file not found", path);
    assert_string_equal(err.msg, msg);

    assert_int_equal(sw_hub_config_load(dir, &c, &err), SW_EIO);
    snprintf(msg, sizeof(msg), "%s: the config file is not a regular file", dir);
    assert_string_equal(err.msg, msg);

    /* 1 MiB + 1 byte of comment is too big. */
    snprintf(path, sizeof(path), "%s/big.yaml", dir);
    size_t n = SW_HUB_CONFIG_MAX + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = '#';
    write_file(path, big, n, 0600);
    free(big);
    assert_int_equal(sw_hub_config_load(path, &c, &err), SW_ETOOBIG);
    snprintf(msg, sizeof(msg), "%s: the config file is larger than 1048576 bytes", path);
    assert_string_equal(err.msg, msg);
    unlink(path);

    if (geteuid() != 0) { /* root reads anything */
        snprintf(path, sizeof(path), "%s/locked.yaml", dir);
        write_file(path, full, strlen(full), 0000);
        assert_int_equal(sw_hub_config_load(path, &c, &err), SW_EFORBIDDEN);
        snprintf(msg, sizeof(msg), "%s: cannot read the config file: Permission denied", path);
        assert_string_equal(err.msg, msg);
        unlink(path);
    }
    snprintf(path, sizeof(path), "%s/hub.yaml", dir);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

static void test_password(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-hub-pw-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], msg[512], pw[32];
    struct sw_hub_config c;
    struct sw_error err;
    sw_hub_config_default(&c);
    snprintf(c.redis_password_env, sizeof(c.redis_password_env), "SW_TEST_HUB_PW");

    /* None: no file, variable unset or empty. */
    unsetenv("SW_TEST_HUB_PW");
    snprintf(pw, sizeof(pw), "junk");
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "");
    setenv("SW_TEST_HUB_PW", "", 1);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "");

    /* The environment. */
    setenv("SW_TEST_HUB_PW", "from-env", 1);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "from-env");
    setenv("SW_TEST_HUB_PW", "0123456789012345678901234567890123456789", 1);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), SW_ETOOBIG);
    assert_string_equal(err.msg, "environment variable SW_TEST_HUB_PW: the Redis password is "
                                 "longer than 31 bytes");

    /* The file wins over the environment; its newline is not the password's. */
    snprintf(path, sizeof(path), "%s/pw", dir);
    write_file(path, "from-file\r\n", 11, 0600);
    snprintf(c.redis_password_file, sizeof(c.redis_password_file), "%s", path);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), 0);
    assert_string_equal(pw, "from-file");
    /* Readable by others: used, with a warning in the log that names the
     * file and not the password. */
    write_file(path, "world", 5, 0644);
    FILE *log = tmpfile();
    assert_non_null(log);
    sw_log_set_stream(log);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), 0);
    sw_log_set_stream(stderr);
    assert_string_equal(pw, "world");
    char line[1024] = "";
    rewind(log);
    assert_non_null(fgets(line, sizeof(line), log));
    fclose(log);
    snprintf(msg, sizeof(msg),
             "level=warn msg=\"the Redis password file is readable by group or others\" "
             "file=%s mode=0644\n",
             path);
    assert_non_null(strstr(line, msg));
    assert_null(strstr(line, "world"));

    write_file(path, "\n", 1, 0600);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), SW_EINVAL);
    snprintf(msg, sizeof(msg), "%s: the Redis password file is empty", path);
    assert_string_equal(err.msg, msg);

    write_file(path, "a\0b", 3, 0600);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), SW_EINVAL);
    snprintf(msg, sizeof(msg),
             "%s: the Redis password file holds a NUL byte; expected the password as text", path);
    assert_string_equal(err.msg, msg);

    const char *secret = "0123456789012345678901234567890123456789"; /* 40 bytes */
    write_file(path, secret, strlen(secret), 0600);
    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), SW_ETOOBIG);
    snprintf(msg, sizeof(msg), "%s: the Redis password file holds more than 31 bytes", path);
    assert_string_equal(err.msg, msg);
    assert_null(strstr(err.msg, "0123456789"));
    unlink(path);

    assert_int_equal(sw_hub_config_redis_password(&c, pw, sizeof(pw), &err), SW_ENOENT);
    snprintf(msg, sizeof(msg), "%s: Redis password file not found", path);
    assert_string_equal(err.msg, msg);
    unsetenv("SW_TEST_HUB_PW");
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_example),   cmocka_unit_test(test_docs_example),
        cmocka_unit_test(test_acl_user),       cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_relative_paths), cmocka_unit_test(test_errors_exact),
        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_load),
        cmocka_unit_test(test_password),       cmocka_unit_test(test_sentinel),
        cmocka_unit_test(test_buckets),        cmocka_unit_test(test_namespace_selector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
