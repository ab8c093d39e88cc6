/*
 * Tests for clusters/kueue.c: a Workload's state (pending for quota,
 * requeued after a preemption, inadmissible as queued, pending for something
 * else, reserved, admitted, inactive, finished),
 * its GPUs over pod sets, errors naming the Workload and the field; a ClusterQueue's GPU quota and
 * usage, and its headroom with a cohort's lending and a borrowing limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/kueue.h"

/* A Workload as Kueue v0.17 writes it for a Job of 2 pods x 4 GPUs, waiting
 * for quota (status as the lab's Kueue showed it). */
#define WL_HEAD                                                                                    \
    "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\",\"metadata\":{"              \
    "\"name\":\"job-train-1a2b3\",\"namespace\":\"team-cv\","                                      \
    "\"creationTimestamp\":\"2026-11-25T12:00:00Z\","                                              \
    "\"labels\":{\"kueue.x-k8s.io/job-uid\":\"uid-7\"}},"                                          \
    "\"spec\":{\"queueName\":\"gpu\",\"priority\":5,%s\"podSets\":[{\"name\":\"main\","            \
    "\"count\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"          \
    "\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}}]},\"status\":{%s}}"

static cJSON *wl(const char *spec_extra, const char *status)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), WL_HEAD, spec_extra, status);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

#define PENDING_QUOTA                                                                              \
    "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"False\",\"reason\":\"Pending\","     \
    "\"message\":\"couldn't assign flavors to pod set main: insufficient unused quota for "        \
    "nvidia.com/gpu in flavor owned, 4 more needed\"}]"

static void workload_pending_for_quota(void **state)
{
    (void)state;
    cJSON *o = wl("", PENDING_QUOTA);
    struct sw_workload_facts f;
    struct sw_error err = {0};
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_PENDING_QUOTA);
    assert_string_equal(sw_workload_state_name(f.state), "pending-quota");
    assert_string_equal(f.ns, "team-cv");
    assert_string_equal(f.name, "job-train-1a2b3");
    assert_string_equal(f.job_uid, "uid-7");
    assert_string_equal(f.queue, "gpu");
    assert_string_equal(f.cluster_queue, "");
    assert_string_equal(f.reason, "Pending");
    assert_true(f.active);
    assert_int_equal(f.priority, 5);
    assert_int_equal(f.gpus, 8);
    assert_string_equal(f.created, "2026-11-25T12:00:00Z");
    assert_false(f.owned); /* no ownerReferences in WL_HEAD */
    assert_string_equal(f.owner_job, "");
    assert_int_equal(f.max_exec_s, 0);
    cJSON_Delete(o);
    /* Kueue's bound on how long it may run once admitted. */
    o = wl("\"maximumExecutionTimeSeconds\":600,", PENDING_QUOTA);
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.max_exec_s, 600);
    cJSON_Delete(o);
    o = wl("\"maximumExecutionTimeSeconds\":\"soon\",", PENDING_QUOTA);
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "Workload team-cv/job-train-1a2b3"));
    assert_non_null(strstr(err.msg, "spec.maximumExecutionTimeSeconds"));
    cJSON_Delete(o);
}

static void workload_other_states(void **state)
{
    (void)state;
    struct sw_workload_facts f;
    struct sw_error err = {0};
    /* Inadmissible as queued: a LocalQueue that does not exist, or its
     * ClusterQueue missing or inactive (Kueue's message kept). */
    static const char *const inadmissible[] = {"LocalQueue gpu doesn't exist",
                                               "ClusterQueue gpu doesn't exist",
                                               "ClusterQueue gpu is inactive"};
    cJSON *o;
    for (size_t i = 0; i < sizeof(inadmissible) / sizeof(inadmissible[0]); i++) {
        char st[256];
        snprintf(st, sizeof(st),
                 "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"False\","
                 "\"reason\":\"Inadmissible\",\"message\":\"%s\"}]",
                 inadmissible[i]);
        o = wl("", st);
        assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
        assert_int_equal(f.state, SW_WL_INADMISSIBLE);
        assert_string_equal(sw_workload_state_name(f.state), "inadmissible");
        assert_string_equal(f.message, inadmissible[i]);
        cJSON_Delete(o);
    }
    /* Pending for another reason Kueue gives: neither quota nor queue. */
    o = wl("", "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"False\","
               "\"reason\":\"Pending\",\"message\":\"couldn't assign flavors to pod set main: "
               "flavor owned doesn't match node affinity\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_PENDING_OTHER);
    cJSON_Delete(o);
    /* Deactivated while inadmissible: inactive wins. */
    o = wl("\"active\":false,", "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":"
                                "\"False\",\"reason\":\"Inadmissible\",\"message\":\"x\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_INACTIVE);
    cJSON_Delete(o);
    /* No status yet: new, Kueue's scheduler has not reached it. */
    o = wl("", "");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_NEW);
    assert_string_equal(sw_workload_state_name(f.state), "new");
    cJSON_Delete(o);
    o = wl("", "\"admission\":{\"clusterQueue\":\"gpu\",\"podSetAssignments\":[]},"
               "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":"
               "\"QuotaReserved\",\"message\":\"Quota reserved in ClusterQueue gpu\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_RESERVED);
    assert_string_equal(f.cluster_queue, "gpu");
    cJSON_Delete(o);
    o = wl("", "\"admission\":{\"clusterQueue\":\"gpu\",\"podSetAssignments\":[]},"
               "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\"},"
               "{\"type\":\"Admitted\",\"status\":\"True\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_ADMITTED);
    cJSON_Delete(o);
    /* Deactivated, even while pending for quota: inactive wins. */
    o = wl("\"active\":false,", PENDING_QUOTA);
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_INACTIVE);
    assert_false(f.active);
    cJSON_Delete(o);
    o = wl("", "\"conditions\":[{\"type\":\"Finished\",\"status\":\"True\"},"
               "{\"type\":\"Evicted\",\"status\":\"True\",\"reason\":\"Preempted\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_FINISHED);
    assert_true(f.evicted);
    cJSON_Delete(o);
}

/* Evicted by a higher-priority Workload and requeued, as Kueue v0.17's Job
 * reconciler leaves it: a candidate again. Evicted for another reason
 * (deactivated, PodsReady timeout) with the same Pending is not. */
#define PREEMPTED(ev_reason)                                                                       \
    "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"False\",\"reason\":\"Pending\","     \
    "\"message\":\"Preempted to accommodate a workload (UID: u-9, JobUID: j-9) due to "            \
    "prioritization in the ClusterQueue\"},{\"type\":\"Evicted\",\"status\":\"True\","             \
    "\"reason\":\"" ev_reason "\"},{\"type\":\"Requeued\",\"status\":\"True\","                    \
    "\"reason\":\"" ev_reason "\"}]"

static void workload_preempted_waits_for_quota(void **state)
{
    (void)state;
    struct sw_workload_facts f;
    struct sw_error err = {0};
    cJSON *o = wl("", PREEMPTED("Preempted"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_PENDING_QUOTA);
    assert_true(f.evicted);
    assert_true(f.preempted);
    assert_string_equal(f.reason, "Pending");
    cJSON_Delete(o);
    o = wl("", PREEMPTED("PodsReadyTimeout"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_PENDING_OTHER);
    assert_true(f.evicted);
    assert_false(f.preempted);
    cJSON_Delete(o);
    /* Preempted and then deactivated (the hub's take): inactive wins. */
    o = wl("\"active\":false,", PREEMPTED("Preempted"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_int_equal(f.state, SW_WL_INACTIVE);
    cJSON_Delete(o);
}

/* Taken back by Kueue after it ran: a queue stopped with HoldAndDrain
 * (Kueue v0.17 evicts with reason ClusterQueueStopped or LocalQueueStopped,
 * suspends the Job and gives the quota back), a preemption; never the
 * owner's own deactivation, a finished Workload or one readmitted. */
#define EVICTED(ev_reason, qr)                                                                     \
    "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"" qr "\",\"reason\":\"Pending\","    \
    "\"message\":\"ClusterQueue gpu is inactive\"},{\"type\":\"Evicted\",\"status\":\"True\","     \
    "\"reason\":\"" ev_reason "\",\"message\":\"The ClusterQueue is stopped\","                    \
    "\"lastTransitionTime\":\"2026-11-29T12:00:05Z\"}]"

static void workload_taken_back(void **state)
{
    (void)state;
    struct sw_workload_facts f;
    struct sw_error err = {0};
    cJSON *o = wl("", EVICTED("ClusterQueueStopped", "False"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_true(f.evicted);
    assert_string_equal(f.evicted_reason, "ClusterQueueStopped");
    assert_string_equal(f.evicted_message, "The ClusterQueue is stopped");
    assert_string_equal(f.evicted_at, "2026-11-29T12:00:05Z");
    assert_true(sw_workload_taken_back(&f));
    cJSON_Delete(o);
    /* Evicted, the quota not given back yet: taken back all the same. */
    o = wl("", EVICTED("LocalQueueStopped", "True"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_true(sw_workload_taken_back(&f));
    assert_string_equal(f.evicted_reason, "LocalQueueStopped");
    cJSON_Delete(o);
    o = wl("", PREEMPTED("Preempted"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_true(sw_workload_taken_back(&f));
    assert_string_equal(f.evicted_reason, "Preempted");
    assert_string_equal(f.evicted_message, ""); /* none of its own */
    assert_string_equal(f.evicted_at, "");
    cJSON_Delete(o);
    /* Deactivated by its owner (the hub's pause of a delegated origin). */
    o = wl("\"active\":false,", EVICTED("InactiveWorkload", "False"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_false(sw_workload_taken_back(&f));
    cJSON_Delete(o);
    /* Reactivated after that pause: Evicted stays True, reason
     * InactiveWorkload, until quota is reserved again: still the owner's. */
    o = wl("\"active\":true,", EVICTED("InactiveWorkload", "False"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_true(f.evicted && f.active);
    assert_false(sw_workload_taken_back(&f));
    cJSON_Delete(o);
    o = wl("", EVICTED("DeactivatedDueToRequeuingLimitExceeded", "False"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_false(sw_workload_taken_back(&f));
    cJSON_Delete(o);
    o = wl("", EVICTED("PodsReadyTimeout", "False"));
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_true(sw_workload_taken_back(&f));
    cJSON_Delete(o);
    /* Finished: its outcome is the Job's, not an eviction. */
    o = wl("", "\"conditions\":[{\"type\":\"Finished\",\"status\":\"True\"},"
               "{\"type\":\"Evicted\",\"status\":\"True\",\"reason\":\"ClusterQueueStopped\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_false(sw_workload_taken_back(&f));
    cJSON_Delete(o);
    /* Readmitted: Kueue sets Evicted False again. */
    o = wl("", "\"admission\":{\"clusterQueue\":\"gpu\",\"podSetAssignments\":[]},"
               "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\"},"
               "{\"type\":\"Admitted\",\"status\":\"True\"},{\"type\":\"Evicted\","
               "\"status\":\"False\",\"reason\":\"QuotaReserved\"}]");
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), 0);
    assert_false(f.evicted);
    assert_string_equal(f.evicted_reason, "");
    assert_false(sw_workload_taken_back(&f));
    cJSON_Delete(o);
}

static void expect_error(const char *json, const char *want)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    struct sw_workload_facts f;
    struct sw_error err = {0};
    assert_int_equal(sw_workload_facts_from_json(o, &f, &err), SW_EPARSE);
    if (strstr(err.msg, want) == NULL)
        fail_msg("error \"%s\" does not contain \"%s\"", err.msg, want);
    cJSON_Delete(o);
}

static void workload_errors_name_the_field(void **state)
{
    (void)state;
    expect_error("{\"metadata\":{\"namespace\":\"a\"}}",
                 "Workload: field \"metadata.name\": expected a string");
    expect_error("{\"metadata\":{\"name\":\"w\",\"namespace\":\"a\"},\"spec\":{\"podSets\":[]}}",
                 "Workload a/w: field \"spec.queueName\": expected a string");
    expect_error(
        "{\"metadata\":{\"name\":\"w\",\"namespace\":\"a\"},\"spec\":{\"queueName\":\"q\"}}",
        "Workload a/w: field \"spec.podSets\": expected a non-empty array");
    expect_error("{\"metadata\":{\"name\":\"w\",\"namespace\":\"a\"},\"spec\":{\"queueName\":\"q\","
                 "\"podSets\":[{\"name\":\"main\",\"count\":\"two\"}]}}",
                 "Workload a/w: field \"spec.podSets[0].count\": expected a whole number, got "
                 "\"two\"");
    expect_error("{\"metadata\":{\"name\":\"w\",\"namespace\":\"a\"},\"spec\":{\"queueName\":\"q\","
                 "\"podSets\":[{\"name\":\"main\",\"count\":1,\"template\":{\"spec\":{"
                 "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"0.5\"}}}]}}}]}}",
                 "Workload a/w: field \"resources.limits.nvidia.com/gpu\"");
}

static const char CQ[] =
    "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ClusterQueue\",\"metadata\":{"
    "\"name\":\"gpu\"},\"spec\":{\"cohortName\":\"onprem\",\"resourceGroups\":[{"
    "\"coveredResources\":[\"cpu\",\"nvidia.com/gpu\"],\"flavors\":[{\"name\":\"owned\","
    "\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"100k\"},{\"name\":\"nvidia.com/gpu\","
    "\"nominalQuota\":8}]}]}]},\"status\":{\"flavorsReservation\":[{\"name\":\"owned\","
    "\"resources\":[{\"name\":\"cpu\",\"total\":\"0\"},{\"name\":\"nvidia.com/gpu\",\"total\":"
    "\"8\"}]}],\"pendingWorkloads\":5,\"reservingWorkloads\":2,\"admittedWorkloads\":2}}";

static void cluster_queue_facts(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(CQ);
    struct sw_cluster_queue_facts f;
    struct sw_error err = {0};
    assert_int_equal(sw_cluster_queue_facts_from_json(o, &f, &err), 0);
    assert_string_equal(f.name, "gpu");
    assert_string_equal(f.cohort, "onprem");
    assert_int_equal(f.nominal_gpus, 8);
    assert_int_equal(f.reserved_gpus, 8);
    assert_int_equal(f.borrow_gpus, -1);
    assert_int_equal(f.lend_gpus, -1);
    assert_int_equal(f.pending, 5);
    assert_int_equal(f.reserving, 2);
    assert_int_equal(f.admitted, 2);
    assert_int_equal(sw_cluster_queue_headroom(&f, NULL, 0), 0);
    assert_false(f.held);
    cJSON_Delete(o);

    /* A held ClusterQueue (stopPolicy) admits nothing new: no headroom,
     * whatever its quota. */
    const char *stops[] = {"Hold", "HoldAndDrain", "None"};
    for (int i = 0; i < 3; i++) {
        char buf[512];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"h\"},\"spec\":{\"stopPolicy\":\"%s\","
                 "\"resourceGroups\":[{\"flavors\":[{\"resources\":[{\"name\":"
                 "\"nvidia.com/gpu\",\"nominalQuota\":16}]}]}]}}",
                 stops[i]);
        o = cJSON_Parse(buf);
        assert_int_equal(sw_cluster_queue_facts_from_json(o, &f, &err), 0);
        assert_int_equal(f.held, i < 2);
        assert_int_equal(sw_cluster_queue_headroom(&f, NULL, 0), i < 2 ? 0 : 16);
        cJSON_Delete(o);
    }

    o = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
    assert_int_equal(sw_cluster_queue_facts_from_json(o, &f, &err), SW_EPARSE);
    assert_string_equal(err.msg,
                        "ClusterQueue x: field \"spec.resourceGroups\": expected an array");
    cJSON_Delete(o);
    o = cJSON_Parse(
        "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"resourceGroups\":[{\"flavors\":["
        "{\"resources\":[{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"1.5\"}]}]}]}}");
    assert_int_equal(sw_cluster_queue_facts_from_json(o, &f, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "ClusterQueue x: field \"spec.resourceGroups[].flavors[]"
                                    ".resources[nvidia.com/gpu].nominalQuota\": expected a whole "
                                    "number, got \"1.5\""));
    cJSON_Delete(o);
}

/* A ClusterQueue of two flavours: on-demand first (60 GPUs, borrowing
 * limited to 4), spot second (2 GPUs, both reserved), in a cohort. */
static const char CQ2[] =
    "{\"metadata\":{\"name\":\"mixed\"},\"spec\":{\"cohortName\":\"c\",\"resourceGroups\":[{"
    "\"coveredResources\":[\"nvidia.com/gpu\"],\"flavors\":["
    "{\"name\":\"od\",\"resources\":[{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":60,"
    "\"borrowingLimit\":4}]},"
    "{\"name\":\"spot\",\"resources\":[{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"2\"}]}]}]},"
    "\"status\":{\"flavorsReservation\":[{\"name\":\"spot\",\"resources\":[{\"name\":"
    "\"nvidia.com/gpu\",\"total\":\"2\"}]},{\"name\":\"od\",\"resources\":[{\"name\":"
    "\"nvidia.com/gpu\",\"total\":\"0\"}]}]}}";

static void flavours_by_capacity_type(void **state)
{
    (void)state;
    struct sw_error err = {0};
    cJSON *o = cJSON_Parse(CQ2);
    struct sw_cluster_queue_facts f, v;
    assert_int_equal(sw_cluster_queue_facts_from_json(o, &f, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(f.nominal_gpus, 62);
    assert_int_equal(f.reserved_gpus, 2);
    assert_int_equal(f.borrow_gpus, -1); /* spot's is unlimited */
    assert_int_equal(f.nflavors, 2);
    assert_string_equal(f.flavors[0].name, "od");
    assert_int_equal(f.flavors[0].nominal, 60);
    assert_int_equal(f.flavors[0].borrow, 4);
    assert_int_equal(f.flavors[0].lend, -1);
    assert_int_equal(f.flavors[0].reserved, 0);
    assert_string_equal(f.flavors[1].name, "spot");
    assert_int_equal(f.flavors[1].nominal, 2);
    assert_int_equal(f.flavors[1].reserved, 2);

    /* The ResourceFlavors: spot by Karpenter's label, on-demand by EKS'
     * own, and one with no capacity type. */
    const char *rfs[] = {
        "{\"metadata\":{\"name\":\"spot\"},\"spec\":{\"nodeLabels\":{"
        "\"karpenter.sh/capacity-type\":\"spot\",\"nvidia.com/gpu.product\":\"H100\"}}}",
        "{\"metadata\":{\"name\":\"od\"},\"spec\":{\"nodeLabels\":{"
        "\"eks.amazonaws.com/capacityType\":\"ON_DEMAND\"}}}",
        "{\"metadata\":{\"name\":\"any\"},\"spec\":{}}",
    };
    struct sw_resource_flavor_facts rf[3];
    for (int i = 0; i < 3; i++) {
        o = cJSON_Parse(rfs[i]);
        assert_int_equal(sw_resource_flavor_facts_from_json(o, &rf[i], &err), 0);
        cJSON_Delete(o);
    }
    assert_string_equal(rf[0].capacity_type, "spot");
    assert_string_equal(rf[1].capacity_type, "on-demand");
    assert_string_equal(rf[2].capacity_type, "");

    /* A spot mirror may be admitted only to flavour spot: 2 GPUs, both
     * reserved, nothing left; it borrows without limit there. */
    assert_true(sw_cluster_queue_for_capacity(&f, "spot", rf, 3, &v));
    assert_int_equal(v.nominal_gpus, 2);
    assert_int_equal(v.reserved_gpus, 2);
    assert_int_equal(v.borrow_gpus, -1);
    assert_int_equal(v.nflavors, 1);
    assert_int_equal(sw_cluster_queue_headroom(&v, &v, 1), 0);
    /* An on-demand one only to od: 60 free, borrowing limited to 4. */
    assert_true(sw_cluster_queue_for_capacity(&f, "on-demand", rf, 3, &v));
    assert_int_equal(v.nominal_gpus, 60);
    assert_int_equal(v.reserved_gpus, 0);
    assert_int_equal(v.borrow_gpus, 4);
    assert_int_equal(sw_cluster_queue_headroom(&v, &v, 1), 60);
    /* Summed, as before flavours were read: 60 of 62 free. */
    assert_int_equal(sw_cluster_queue_headroom(&f, &f, 1), 60);

    /* A flavour of no capacity type takes every mirror; one whose
     * ResourceFlavor is not known counts too: nothing left out. */
    snprintf(rf[0].capacity_type, sizeof(rf[0].capacity_type), "%s", "");
    assert_false(sw_cluster_queue_for_capacity(&f, "on-demand", rf, 3, &v));
    assert_int_equal(v.nominal_gpus, 62);
    assert_false(sw_cluster_queue_for_capacity(&f, "spot", rf + 1, 0, &v));
    assert_int_equal(v.nominal_gpus, 62);
    assert_int_equal(v.reserved_gpus, 2);

    /* Reserved GPUs given back to the queue (a delegated Job's own) come
     * off the flavours kept. */
    snprintf(rf[0].capacity_type, sizeof(rf[0].capacity_type), "%s", "spot");
    f.reserved_gpus = 1;
    assert_true(sw_cluster_queue_for_capacity(&f, "spot", rf, 3, &v));
    assert_int_equal(v.reserved_gpus, 1);
    /* Which flavour they were in is not known: the left-out ones' first,
     * so the room kept is never overstated. od holds 3, spot 2, 2 of the
     * 5 given back: they may all be od's (spot keeps 2) or all spot's (od
     * keeps 3). */
    f.flavors[0].reserved = 3;
    f.reserved_gpus = 3;
    assert_true(sw_cluster_queue_for_capacity(&f, "spot", rf, 3, &v));
    assert_int_equal(v.reserved_gpus, 2);
    assert_true(sw_cluster_queue_for_capacity(&f, "on-demand", rf, 3, &v));
    assert_int_equal(v.reserved_gpus, 3);
    f.flavors[0].reserved = 0;
    f.reserved_gpus = 2;

    /* More GPU flavours than are kept: not narrowed (one not kept might
     * take the mirror). */
    char many[2048] = "{\"metadata\":{\"name\":\"many\"},\"spec\":{\"resourceGroups\":[{"
                      "\"flavors\":[";
    for (int i = 0; i <= SW_CQ_MAX_FLAVORS; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many),
                 "%s{\"name\":\"f%d\",\"resources\":[{\"name\":\"nvidia.com/gpu\","
                 "\"nominalQuota\":1}]}",
                 i ? "," : "", i);
    snprintf(many + strlen(many), sizeof(many) - strlen(many), "]}]}}");
    o = cJSON_Parse(many);
    assert_non_null(o);
    assert_int_equal(sw_cluster_queue_facts_from_json(o, &f, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(f.nominal_gpus, SW_CQ_MAX_FLAVORS + 1);
    assert_int_equal(f.nflavors, SW_CQ_MAX_FLAVORS);
    assert_true(f.flavors_truncated);
    /* f0 is on-demand: left out for spot, were the list whole. */
    snprintf(rf[1].name, sizeof(rf[1].name), "%s", "f0");
    f.flavors_truncated = false;
    assert_true(sw_cluster_queue_for_capacity(&f, "spot", rf, 3, &v));
    assert_int_equal(v.nominal_gpus, SW_CQ_MAX_FLAVORS - 1);
    f.flavors_truncated = true;
    assert_false(sw_cluster_queue_for_capacity(&f, "spot", rf, 3, &v));
    assert_int_equal(v.nominal_gpus, SW_CQ_MAX_FLAVORS + 1);

    /* Bad input names the flavour and the field. */
    o = cJSON_Parse("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"nodeLabels\":{\"a\":1}}}");
    assert_int_equal(sw_resource_flavor_facts_from_json(o, &rf[0], &err), SW_EPARSE);
    assert_string_equal(err.msg,
                        "ResourceFlavor bad: field \"spec.nodeLabels.a\": expected a string");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"nodeLabels\":[]}}");
    assert_int_equal(sw_resource_flavor_facts_from_json(o, &rf[0], &err), SW_EPARSE);
    assert_string_equal(err.msg,
                        "ResourceFlavor bad: field \"spec.nodeLabels\": expected an object");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"spec\":{}}");
    assert_int_equal(sw_resource_flavor_facts_from_json(o, &rf[0], &err), SW_EPARSE);
    assert_string_equal(err.msg, "ResourceFlavor: field \"metadata.name\": expected a string");
    cJSON_Delete(o);
}

static void headroom_with_cohort(void **state)
{
    (void)state;
    struct sw_cluster_queue_facts q[3] = {
        {.name = "cv",
         .cohort = "onprem",
         .nominal_gpus = 8,
         .reserved_gpus = 6,
         .borrow_gpus = -1,
         .lend_gpus = -1},
        {.name = "nlp",
         .cohort = "onprem",
         .nominal_gpus = 8,
         .reserved_gpus = 2,
         .borrow_gpus = -1,
         .lend_gpus = 4},
        {.name = "other",
         .cohort = "elsewhere",
         .nominal_gpus = 16,
         .reserved_gpus = 0,
         .borrow_gpus = -1,
         .lend_gpus = -1},
    };
    /* cv: 2 of its own + nlp lends 4 of its 6 unused (its lending limit);
     * the other cohort lends nothing. */
    assert_int_equal(sw_cluster_queue_headroom(&q[0], q, 3), 6);
    /* A borrowing limit of 3 caps what cv takes from the cohort. */
    q[0].borrow_gpus = 3;
    assert_int_equal(sw_cluster_queue_headroom(&q[0], q, 3), 5);
    /* Already borrowing 2 over its nominal: 1 more may be borrowed. */
    q[0].reserved_gpus = 10;
    assert_int_equal(sw_cluster_queue_headroom(&q[0], q, 3), 1);
    /* What a peer borrows is the cohort's no longer, even out of cv's own
     * unused quota: nlp holds 10 of its 8, cv 6 of its 8, the cohort's 16
     * are all reserved. */
    q[0].borrow_gpus = -1;
    q[0].reserved_gpus = 6;
    q[1].reserved_gpus = 10;
    assert_int_equal(sw_cluster_queue_headroom(&q[0], q, 3), 0);
    q[1].reserved_gpus = 9;
    assert_int_equal(sw_cluster_queue_headroom(&q[0], q, 3), 1);
    q[1].reserved_gpus = 2;
    /* Without a cohort: its own unused quota only. */
    q[0].cohort[0] = '\0';
    q[0].reserved_gpus = 5;
    assert_int_equal(sw_cluster_queue_headroom(&q[0], q, 3), 3);
}

static void free_between_queues(void **state)
{
    (void)state;
    struct sw_cluster_queue_facts q[4] = {
        {.name = "cv",
         .cohort = "onprem",
         .nominal_gpus = 8,
         .reserved_gpus = 8,
         .borrow_gpus = -1,
         .lend_gpus = -1},
        {.name = "nlp",
         .cohort = "onprem",
         .nominal_gpus = 4,
         .reserved_gpus = 0,
         .borrow_gpus = -1,
         .lend_gpus = -1},
        {.name = "alone",
         .nominal_gpus = 2,
         .reserved_gpus = 1,
         .borrow_gpus = -1,
         .lend_gpus = -1},
        {.name = "held",
         .nominal_gpus = 8,
         .reserved_gpus = 0,
         .borrow_gpus = -1,
         .lend_gpus = -1,
         .held = true},
    };
    /* cv may borrow nlp's 4 and nlp has them: 4 once, not 8; alone 1; a
     * held queue admits nothing. */
    assert_int_equal(sw_cluster_queues_free(q, 4), 5);
    /* cv borrows 2 of them already. */
    q[0].reserved_gpus = 10;
    assert_int_equal(sw_cluster_queues_free(q, 4), 3);
    /* A lending limit of 1 on nlp: cv may take 1 of its 4, nlp the rest:
     * still 4 between them. */
    q[0].reserved_gpus = 8;
    q[1].lend_gpus = 1;
    assert_int_equal(sw_cluster_queues_free(q, 4), 5);
    /* nlp held: only what cv may borrow of it (1). */
    q[1].held = true;
    assert_int_equal(sw_cluster_queues_free(q, 4), 2);
}

/* GET /apis/kueue.x-k8s.io as kube-apiserver v1.34 answers it with Kueue
 * v0.17's CRDs (the lab), and as a Kueue v0.14's would. */
static const char GROUP_V017[] =
    "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"kueue.x-k8s.io\",\"versions\":["
    "{\"groupVersion\":\"kueue.x-k8s.io/v1beta2\",\"version\":\"v1beta2\"},"
    "{\"groupVersion\":\"kueue.x-k8s.io/v1beta1\",\"version\":\"v1beta1\"},"
    "{\"groupVersion\":\"kueue.x-k8s.io/v1alpha1\",\"version\":\"v1alpha1\"}],"
    "\"preferredVersion\":{\"groupVersion\":\"kueue.x-k8s.io/v1beta2\",\"version\":\"v1beta2\"}}";
static const char GROUP_V014[] =
    "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"kueue.x-k8s.io\",\"versions\":["
    "{\"groupVersion\":\"kueue.x-k8s.io/v1beta1\",\"version\":\"v1beta1\"},"
    "{\"groupVersion\":\"kueue.x-k8s.io/v1alpha1\",\"version\":\"v1alpha1\"}],"
    "\"preferredVersion\":{\"groupVersion\":\"kueue.x-k8s.io/v1beta1\",\"version\":\"v1beta1\"}}";

static void api_group_versions(void **state)
{
    (void)state;
    char served[64];
    cJSON *g = cJSON_Parse(GROUP_V017);
    assert_true(sw_api_group_serves(g, "v1beta2", served, sizeof(served)));
    assert_string_equal(served, "v1beta2, v1beta1, v1alpha1");
    assert_false(sw_api_group_serves(g, "v1", served, sizeof(served)));
    /* Cut to fit, still terminated. */
    char small[10];
    assert_true(sw_api_group_serves(g, "v1alpha1", small, sizeof(small)));
    assert_int_equal(strlen(small), sizeof(small) - 1);
    cJSON_Delete(g);
    /* Not a group: nothing served. */
    g = cJSON_Parse("{\"kind\":\"Status\"}");
    assert_false(sw_api_group_serves(g, "v1beta2", served, sizeof(served)));
    assert_string_equal(served, "");
    cJSON_Delete(g);
}

static void kueue_api_verdicts(void **state)
{
    (void)state;
    char msg[400];
    cJSON *g17 = cJSON_Parse(GROUP_V017), *g14 = cJSON_Parse(GROUP_V014);
    /* No such group: Kueue not installed. */
    assert_int_equal(sw_kueue_api_verdict("onprem", 404, NULL, 404, msg, sizeof(msg)),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(msg, "cluster onprem serves no kueue.x-k8s.io API group"));
    assert_non_null(strstr(msg, "Kueue v0.15 and later"));
    /* A Kueue before v1beta2: the versions it serves are named. */
    assert_int_equal(sw_kueue_api_verdict("onprem", 200, g14, 404, msg, sizeof(msg)),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(msg, "serves kueue.x-k8s.io v1beta1, v1alpha1 only, not v1beta2"));
    /* v1beta2 served but the list refused: the role is named. */
    assert_int_equal(sw_kueue_api_verdict("cloud-spot", 200, g17, 403, msg, sizeof(msg)),
                     SW_EUNSUPPORTED);
    assert_non_null(strstr(msg, "cluster cloud-spot refuses"));
    assert_non_null(strstr(msg, "member-clusterrole.yaml"));
    /* v1beta2 served and the list failed otherwise (a timeout, a 500):
     * transient, retried, no verdict. */
    assert_int_equal(sw_kueue_api_verdict("onprem", 200, g17, 500, msg, sizeof(msg)), 0);
    assert_string_equal(msg, "");
    assert_int_equal(sw_kueue_api_verdict("onprem", 200, g17, -1, msg, sizeof(msg)), 0);
    /* Discovery itself failing says nothing either. */
    assert_int_equal(sw_kueue_api_verdict("onprem", 503, NULL, 404, msg, sizeof(msg)), 0);
    cJSON_Delete(g17);
    cJSON_Delete(g14);
}

static void workload_owned(void **state)
{
    (void)state;
    cJSON *o = wl("", PENDING_QUOTA);
    cJSON *refs = cJSON_AddArrayToObject(cJSON_GetObjectItem(o, "metadata"), "ownerReferences");
    cJSON *ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "kind", "Job");
    cJSON_AddStringToObject(ref, "name", "train");
    cJSON_AddItemToArray(refs, ref);
    struct sw_workload_facts f;
    assert_int_equal(sw_workload_facts_from_json(o, &f, NULL), 0);
    assert_true(f.owned);
    assert_string_equal(f.owner_job, "train");
    /* The release's patch drops them ("ownerReferences": null, then absent). */
    cJSON_DeleteItemFromArray(refs, 0);
    assert_int_equal(sw_workload_facts_from_json(o, &f, NULL), 0);
    assert_false(f.owned);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workload_pending_for_quota),
        cmocka_unit_test(workload_other_states),
        cmocka_unit_test(workload_preempted_waits_for_quota),
        cmocka_unit_test(workload_taken_back),
        cmocka_unit_test(workload_errors_name_the_field),
        cmocka_unit_test(cluster_queue_facts),
        cmocka_unit_test(flavours_by_capacity_type),
        cmocka_unit_test(headroom_with_cohort),
        cmocka_unit_test(free_between_queues),
        cmocka_unit_test(workload_owned),
        cmocka_unit_test(api_group_versions),
        cmocka_unit_test(kueue_api_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
