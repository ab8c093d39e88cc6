/*
 * Tests for clusters/multikueue.c: a manager's Workload waiting for its
 * dispatcher (quota reserved, the MultiKueue check Pending, no clusterName)
 * and every way it does not; its nominated clusters and pod shape; errors
 * naming the Workload and the field; an AdmissionCheck's controller and
 * MultiKueueConfig; a MultiKueueConfig's clusters, at Kueue's limit of 20;
 * when a worker's copy has won the Workload (Admitted, as Kueue judges);
 * the dispatcher's hand-over (clusterName with an empty list).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/multikueue.h"

/* A manager's Workload as Kueue v0.17 writes it for a Job of 1 pod x 4
 * GPUs in a ClusterQueue with the MultiKueue check "multikueue". */
#define WL_HEAD                                                                                    \
    "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\",\"metadata\":{"              \
    "\"name\":\"job-train-1a2b3\",\"namespace\":\"team-cv\",\"uid\":\"wl-uid-1\","                 \
    "\"resourceVersion\":\"812\",\"creationTimestamp\":\"2026-11-25T12:00:00Z\"},"                 \
    "\"spec\":{\"queueName\":\"multikueue\",%s\"podSets\":[{\"name\":\"main\","                    \
    "\"count\":1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"          \
    "\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}}]},\"status\":{%s}}"

#define RESERVED                                                                                   \
    "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":"                  \
    "\"QuotaReserved\","                                                                           \
    "\"message\":\"Quota reserved in ClusterQueue multikueue\"}],"                                 \
    "\"admission\":{\"clusterQueue\":\"multikueue\"}"
#define CHECK(state)                                                                               \
    "\"admissionChecks\":[{\"name\":\"multikueue\",\"state\":\"" state "\",\"message\":\"\"}]"

static cJSON *wl(const char *spec_extra, const char *status)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), WL_HEAD, spec_extra, status);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static void read_ok(const char *spec_extra, const char *status, struct sw_mk_workload *out)
{
    cJSON *o = wl(spec_extra, status);
    struct sw_error err = {0};
    int rc = sw_mk_workload_from_json(o, out, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    cJSON_Delete(o);
}

static void waiting_for_dispatch(void **state)
{
    (void)state;
    struct sw_mk_workload w;
    read_ok("", RESERVED "," CHECK("Pending"), &w);
    assert_true(sw_mk_waits_for_dispatch(&w, "multikueue"));
    assert_false(sw_mk_waits_for_dispatch(&w, "other-check"));
    assert_string_equal(w.uid, "wl-uid-1");
    assert_string_equal(w.rv, "812");
    assert_int_equal(w.pods, 1);
    assert_int_equal(w.gpus_per_pod, 4);
    assert_int_equal(w.f.gpus, 4);
    assert_int_equal(w.nnominated, 0);

    /* Nominated already: still waiting (the dispatcher may change them). */
    read_ok("", RESERVED "," CHECK("Pending") ",\"nominatedClusterNames\":[\"cloud-spot\",\"b\"]",
            &w);
    assert_true(sw_mk_waits_for_dispatch(&w, "multikueue"));
    assert_int_equal(w.nnominated, 2);
    assert_string_equal(w.nominated[0], "cloud-spot");
    assert_string_equal(w.nominated[1], "b");
}

static void not_waiting(void **state)
{
    (void)state;
    struct sw_mk_workload w;
    /* A worker reserved it: clusterName set, the check Ready. */
    read_ok("", RESERVED "," CHECK("Ready") ",\"clusterName\":\"cloud-spot\"", &w);
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
    assert_string_equal(w.cluster_name, "cloud-spot");
    /* The check Pending but a clusterName (set in the same write in Kueue). */
    read_ok("", RESERVED "," CHECK("Pending") ",\"clusterName\":\"cloud-spot\"", &w);
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
    /* No quota reserved at the manager yet. */
    read_ok("", CHECK("Pending"), &w);
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
    /* Retry (a worker evicted it): Kueue itself puts it back in the queue. */
    read_ok("", RESERVED "," CHECK("Retry"), &w);
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
    /* Deactivated. */
    read_ok("\"active\":false,", RESERVED "," CHECK("Pending"), &w);
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
    /* No admission checks at all. */
    read_ok("", RESERVED, &w);
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
}

/* The dispatcher's hand-over (clusterName and an empty list) told apart
 * from Kueue's own states: no list, a list, clusterName alone. */
static void handed_over(void **state)
{
    (void)state;
    struct sw_mk_workload w;
    read_ok("",
            RESERVED "," CHECK("Pending") ",\"clusterName\":\"cloud-spot\","
                                          "\"nominatedClusterNames\":[]",
            &w);
    assert_true(w.nominated_set);
    assert_true(sw_mk_handed_over(&w));
    assert_false(sw_mk_waits_for_dispatch(&w, "multikueue"));
    assert_string_equal(sw_mk_check_state(&w, "multikueue"), "Pending");
    assert_string_equal(sw_mk_check_state(&w, "other"), "");
    /* Kueue's write after it: the check Ready, the list kept by the hub. */
    read_ok("",
            RESERVED "," CHECK("Ready") ",\"clusterName\":\"cloud-spot\","
                                        "\"nominatedClusterNames\":[]",
            &w);
    assert_true(sw_mk_handed_over(&w));
    assert_string_equal(sw_mk_check_state(&w, "multikueue"), "Ready");
    /* Released: clusterName alone (Kueue's). */
    read_ok("", RESERVED "," CHECK("Ready") ",\"clusterName\":\"cloud-spot\"", &w);
    assert_false(w.nominated_set);
    assert_false(sw_mk_handed_over(&w));
    /* Nominated, not handed over; an empty list without clusterName neither. */
    read_ok("", RESERVED "," CHECK("Pending") ",\"nominatedClusterNames\":[\"cloud-spot\"]", &w);
    assert_true(w.nominated_set);
    assert_false(sw_mk_handed_over(&w));
    read_ok("", RESERVED "," CHECK("Pending") ",\"nominatedClusterNames\":[]", &w);
    assert_false(sw_mk_handed_over(&w));
    assert_true(sw_mk_waits_for_dispatch(&w, "multikueue"));
}

/* A worker's copy as Kueue v0.17 writes it on the worker (no checks there):
 * QuotaReserved first, then Admitted, then Finished. */
static void copy_won(void **state)
{
    (void)state;
    struct sw_mk_workload w;
    /* Created, no quota yet. */
    read_ok("", "\"conditions\":[]", &w);
    assert_false(sw_mk_copy_won(&w.f));
    /* Quota reserved but not Admitted (a check on the worker, say): Kueue
     * does not pick it yet and would delete it without a nomination. */
    read_ok("", RESERVED, &w);
    assert_false(sw_mk_copy_won(&w.f));
    read_ok("",
            "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\"},"
            "{\"type\":\"Admitted\",\"status\":\"True\"}]",
            &w);
    assert_true(sw_mk_copy_won(&w.f));
    read_ok("",
            "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"False\"},"
            "{\"type\":\"Finished\",\"status\":\"True\"}]",
            &w);
    assert_true(sw_mk_copy_won(&w.f));
    /* Admitted=False (evicted on the worker). */
    read_ok("",
            "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\"},"
            "{\"type\":\"Admitted\",\"status\":\"False\"}]",
            &w);
    assert_false(sw_mk_copy_won(&w.f));
}

static void errors_name_the_field(void **state)
{
    (void)state;
    struct sw_mk_workload w;
    struct sw_error err = {0};
    cJSON *o = wl("", RESERVED ",\"nominatedClusterNames\":\"cloud-spot\"");
    assert_int_equal(sw_mk_workload_from_json(o, &w, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Workload team-cv/job-train-1a2b3"));
    assert_non_null(strstr(err.msg, "status.nominatedClusterNames"));
    cJSON_Delete(o);

    o = wl("", RESERVED ",\"admissionChecks\":[{\"name\":\"multikueue\"}]");
    assert_int_equal(sw_mk_workload_from_json(o, &w, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "status.admissionChecks[0]"));
    cJSON_Delete(o);

    /* 21 names: one more than Kueue allows. */
    char list[1024] = "";
    for (int i = 0; i < 21; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"w%d\"", i ? "," : "", i);
    char status[1400];
    snprintf(status, sizeof(status), RESERVED ",\"nominatedClusterNames\":[%s]", list);
    o = wl("", status);
    assert_int_equal(sw_mk_workload_from_json(o, &w, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "more than 20"));
    cJSON_Delete(o);

    /* What the Kueue reader refuses is refused here too (no queue name). */
    o = cJSON_Parse("{\"metadata\":{\"name\":\"w\",\"namespace\":\"n\"},\"spec\":{}}");
    assert_int_equal(sw_mk_workload_from_json(o, &w, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "spec.queueName"));
    cJSON_Delete(o);
}

static void admission_check(void **state)
{
    (void)state;
    struct sw_mk_admission_check ac;
    struct sw_error err = {0};
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"multikueue\"},\"spec\":{\"controllerName\":"
                           "\"kueue.x-k8s.io/multikueue\",\"parameters\":{\"apiGroup\":"
                           "\"kueue.x-k8s.io\",\"kind\":\"MultiKueueConfig\",\"name\":\"mk\"}}}");
    assert_int_equal(sw_mk_admission_check_from_json(o, &ac, &err), 0);
    assert_true(ac.multikueue);
    assert_string_equal(ac.name, "multikueue");
    assert_string_equal(ac.config, "mk");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"prov\"},\"spec\":{\"controllerName\":"
                    "\"kueue.x-k8s.io/provisioning-request\"}}");
    assert_int_equal(sw_mk_admission_check_from_json(o, &ac, &err), 0);
    assert_false(ac.multikueue);
    assert_string_equal(ac.config, "");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"spec\":{}}");
    assert_int_equal(sw_mk_admission_check_from_json(o, &ac, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "AdmissionCheck: field \"metadata.name\""));
    cJSON_Delete(o);
}

static void multikueue_config(void **state)
{
    (void)state;
    struct sw_mk_config c;
    struct sw_error err = {0};
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"mk\"},\"spec\":{\"clusters\":"
                           "[\"cloud-spot\",\"cloud-ondemand\"]}}");
    assert_int_equal(sw_mk_config_from_json(o, &c, &err), 0);
    assert_int_equal(c.nclusters, 2);
    assert_string_equal(c.clusters[1], "cloud-ondemand");
    cJSON_Delete(o);
    /* At the limit: 20 names are read, a 21st is an error. */
    char buf[2048];
    int off =
        snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"mk\"},\"spec\":{\"clusters\":[");
    for (int i = 0; i < 20; i++)
        off += snprintf(buf + off, sizeof(buf) - (size_t)off, "%s\"w%d\"", i ? "," : "", i);
    snprintf(buf + off, sizeof(buf) - (size_t)off, "]}}");
    o = cJSON_Parse(buf);
    assert_int_equal(sw_mk_config_from_json(o, &c, &err), 0);
    assert_int_equal(c.nclusters, 20);
    cJSON_Delete(o);
    buf[strlen(buf) - 3] = '\0';
    strcat(buf, ",\"w20\"]}}");
    o = cJSON_Parse(buf);
    assert_int_equal(sw_mk_config_from_json(o, &c, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "MultiKueueConfig mk: field \"spec.clusters\": more than 20"));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"mk\"},\"spec\":{}}");
    assert_int_equal(sw_mk_config_from_json(o, &c, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "spec.clusters"));
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waiting_for_dispatch),  cmocka_unit_test(not_waiting),
        cmocka_unit_test(errors_name_the_field), cmocka_unit_test(admission_check),
        cmocka_unit_test(multikueue_config),     cmocka_unit_test(copy_won),
        cmocka_unit_test(handed_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
