/*
 * End-to-end: every auth kind of the lab's kubeconfigs (client
 * certificate, bearer token, exec plugin, and each cluster's default)
 * reaches its API server through clusters/rest, reads /version, and lists
 * the nodes the lab configured. The exec plugin runs once and its
 * credential is reused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "lab.h"

struct cluster {
    const char *name;
    int nodes;
};

/* The lab's sizes, from tests/testbed/lab.conf. */
static int lab_nodes(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/testbed/lab.conf", lab_env("SW_SOURCE_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int nodes = -1;
    while (fgets(line, sizeof(line), f)) {
        char n[64], ip[64], role[32], cap[32], region[64], zone[64];
        int k, g;
        if (line[0] != '#' &&
            sscanf(line, "%63s %63s %31s %31s %63s %63s %d %d", n, ip, role, cap, region, zone, &k,
                   &g) == 8 &&
            strcmp(n, name) == 0)
            nodes = k;
    }
    fclose(f);
    return nodes;
}

static void check(const char *cluster, const char *variant, const char *kind)
{
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *c = lab_client(&l, cluster, variant, 0);
    if (c == NULL)
        fail_msg("%s%s: no client", cluster, variant);
    if (kind != NULL)
        assert_string_equal(sw_kube_target_auth_kind(sw_kube_client_target(c)), kind);
    struct lab_wait v = {0};
    struct sw_kube_req r = {.method = "GET", .path = "/version"};
    assert_int_equal(sw_kube_send(c, &r, lab_on_result, &v, NULL), 0);
    if (lab_wait(&l, &v) != 0)
        fail_msg("%s%s: /version: %s", cluster, variant, v.msg);
    const cJSON *gv = cJSON_GetObjectItem(v.body, "gitVersion");
    assert_true(cJSON_IsString(gv));
    assert_string_equal(gv->valuestring, "v1.34.4");
    cJSON_Delete(v.body);
    struct lab_wait w = {0};
    struct sw_kube_list_opts lo = {.limit = 3}; /* several pages */
    assert_int_equal(sw_kube_list(c, SW_KIND_NODE, NULL, &lo, lab_on_result, &w), 0);
    if (lab_wait(&l, &w) != 0)
        fail_msg("%s%s: list nodes: %s", cluster, variant, w.msg);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(w.body, "items"));
    assert_int_equal(n, lab_nodes(cluster));
    cJSON_Delete(w.body);
    printf("  %s%s: %s auth, %d nodes, %llu requests\n", cluster, variant,
           sw_kube_target_auth_kind(sw_kube_client_target(c)), n,
           (unsigned long long)sw_kube_client_sent(c));
    sw_kube_client_free(c);
    lab_close(&l);
}

static void test_every_auth_kind(void **state)
{
    (void)state;
    static const char *clusters[] = {"onprem", "cloud-spot", "cloud-ondemand"};
    for (size_t i = 0; i < 3; i++) {
        check(clusters[i], "", NULL);
        check(clusters[i], "-cert", "client-certificate");
        check(clusters[i], "-token", "token");
        check(clusters[i], "-exec", "exec");
    }
}

static void test_wrong_token_is_refused(void **state)
{
    (void)state;
    struct lab l;
    lab_open(&l);
    /* A garbage token: a 401, reported as SW_EAUTH, without the token in the message. */
    struct sw_kube_client *c = NULL;
    char path[1024];
    snprintf(path, sizeof(path), "%s/onprem-token.kubeconfig", lab_env("SW_LAB_KUBECONFIG_DIR"));
    struct sw_kube_target *bad = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(path, NULL, &bad, &err), 0);
    sw_free(bad->token);
    bad->token = sw_strdup("not-a-valid-token-123");
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = "onprem";
    assert_int_equal(sw_kube_client_new(&l.loop, l.http, bad, &o, &c, &err), 0);
    struct lab_wait w = {0};
    assert_int_equal(sw_kube_get(c, SW_KIND_NAMESPACE, NULL, "default", lab_on_result, &w), 0);
    assert_int_equal(lab_wait(&l, &w), SW_EAUTH);
    assert_int_equal(w.status, 401);
    assert_non_null(strstr(w.msg, "cluster onprem: GET /api/v1/namespaces/default: 401"));
    assert_null(strstr(w.msg, "not-a-valid-token-123"));
    cJSON_Delete(w.body);
    sw_kube_client_free(c);
    lab_close(&l);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static void write_expiry(const char *path, int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char buf[64];
    gmtime_r(&secs, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(buf, f);
    fclose(f);
}

static void get_version(struct lab *l, struct sw_kube_client *c)
{
    struct lab_wait w = {0};
    struct sw_kube_req r = {.method = "GET", .path = "/version"};
    assert_int_equal(sw_kube_send(c, &r, lab_on_result, &w, NULL), 0);
    if (lab_wait(l, &w) != 0)
        fail_msg("/version: %s", w.msg);
    cJSON_Delete(w.body);
}

static void test_exec_credential_cached_until_expiry(void **state)
{
    (void)state;
    /* Wrap the lab's plugin in a script that counts its runs. */
    char path[1024], wrapper[256], counter[256], expiry[256];
    snprintf(path, sizeof(path), "%s/cloud-spot-exec.kubeconfig", lab_env("SW_LAB_KUBECONFIG_DIR"));
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(path, NULL, &t, &err), 0);
    assert_non_null(t->exec);
    snprintf(wrapper, sizeof(wrapper), "/tmp/sw-e2e-plugin-%d.sh", (int)getpid());
    snprintf(counter, sizeof(counter), "/tmp/sw-e2e-plugin-%d.count", (int)getpid());
    snprintf(expiry, sizeof(expiry), "/tmp/sw-e2e-plugin-%d.expiry", (int)getpid());
    /* The wrapper also sets the credential's expirationTimestamp from a
     * file, so that the test controls it along with the clock. */
    FILE *f = fopen(wrapper, "w");
    assert_non_null(f);
    fprintf(
        f,
        "#!/bin/sh\necho run >> '%s'\n'%s' \"$@\" | sed -E "
        "'s/\"expirationTimestamp\": *\"[^\"]*\"/\"expirationTimestamp\":\"'\"$(cat '%s')\"'\"/'\n",
        counter, t->exec->command, expiry);
    fclose(f);
    chmod(wrapper, 0700);
    unlink(counter);
    sw_free(t->exec->command);
    t->exec->command = sw_strdup(wrapper);

    /* A fake clock decides when the credential has expired. */
    struct sw_fake_clock fc;
    int64_t t0 = sw_now_ms(sw_clock_system());
    sw_fake_clock_init(&fc, t0);
    write_expiry(expiry, t0 + 3600 * 1000); /* in an hour */
    struct lab l;
    lab_open(&l);
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = "cloud-spot";
    o.clock = &fc.clock;
    struct sw_kube_client *c = NULL;
    assert_int_equal(sw_kube_client_new(&l.loop, l.http, t, &o, &c, &err), 0);
    for (int i = 0; i < 5; i++)
        get_version(&l, c);
    assert_int_equal(count_lines(counter), 1); /* one run serves every request */
    /* Two hours later the credential has expired: the plugin runs again,
     * once, and its new credential (valid for three hours) is kept. */
    write_expiry(expiry, t0 + 3 * 3600 * 1000);
    sw_fake_clock_advance(&fc, 2 * 3600 * 1000);
    get_version(&l, c);
    get_version(&l, c);
    assert_int_equal(count_lines(counter), 2);
    sw_kube_client_free(c);
    lab_close(&l);
    unlink(wrapper);
    unlink(counter);
    unlink(expiry);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_auth_kind),
        cmocka_unit_test(test_wrong_token_is_refused),
        cmocka_unit_test(test_exec_credential_cached_until_expiry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
