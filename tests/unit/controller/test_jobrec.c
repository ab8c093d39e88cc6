/* Tests for controller/hub/jobrec.c: the hub's per-Job record round-trips
 * through JSON field by field, bad records name the field, costs so far. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "controller/hub/jobrec.h"

static void fill(struct sw_job_rec *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->key, sizeof(r->key), "onprem/team-a/train-7");
    snprintf(r->cluster, sizeof(r->cluster), "onprem");
    snprintf(r->ns, sizeof(r->ns), "team-a");
    snprintf(r->name, sizeof(r->name), "train-7");
    snprintf(r->uid, sizeof(r->uid), "0fea0c22-c6d8-4b05-8689-ec9f9296d687");
    r->form = SW_FORM_DELEGATED;
    r->state = SW_JS_RUNNING;
    r->attempt = 2;
    r->preemptions = 1;
    snprintf(r->target_cluster, sizeof(r->target_cluster), "cloud-spot");
    snprintf(r->target_pool, sizeof(r->target_pool), "spot-h100");
    snprintf(r->target_region, sizeof(r->target_region), "us-east-1");
    snprintf(r->capacity, sizeof(r->capacity), "spot");
    snprintf(r->mirror, sizeof(r->mirror), "sw-0fea0c22-c6d8-4b05-8689-ec9f9296d687-2");
    snprintf(r->team, sizeof(r->team), "vision");
    r->gpus = 8;
    r->billed_gpus = 8.0 / 7.0;
    r->price_gpu_h = 2.1;
    r->expected_cost = 41.2;
    r->reserved_cost = 164.8;
    r->home_wait_s = 2820;
    r->burst_now_cost = 111.68;
    snprintf(r->summary, sizeof(r->summary),
             "burst to cloud-spot (spot): $41.20 expected vs 47 min wait at home");
    snprintf(r->reason, sizeof(r->reason), "its node cloud-spot-gpu-5 was lost");
    r->input_bytes = 1114113;
    r->created = 1795416356;
    r->observed_ms = 1795416356149;
    r->decided_ms = 1795416356253;
    r->data_ready_ms = 1795416356377;
    r->dispatched_ms = 1795416356848;
    r->started_ms = 1795416356879;
    r->finished_ms = 0;
    r->epoch = 7;
}

static void test_round_trip(void **state)
{
    (void)state;
    struct sw_job_rec a, b;
    fill(&a);
    a.node_wait_ms = 1795416356850;
    snprintf(a.node_pool, sizeof(a.node_pool), "gpu-spot");
    snprintf(a.node_claim, sizeof(a.node_claim), "gpu-spot-x7k2p");
    a.node_wait_expected_s = 60;
    a.node_wait_s = 21.5;
    cJSON *o = sw_job_rec_to_json(&a);
    assert_non_null(o);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON *p = cJSON_Parse(text);
    cJSON_free(text);
    struct sw_error err = {0};
    assert_int_equal(sw_job_rec_from_json(p, &b, &err), 0);
    cJSON_Delete(p);
    /* Field by field (padding makes memcmp of the structs meaningless). */
    assert_string_equal(a.key, b.key);
    assert_string_equal(a.uid, b.uid);
    assert_int_equal(b.form, SW_FORM_DELEGATED);
    assert_int_equal(b.state, SW_JS_RUNNING);
    assert_int_equal(b.attempt, 2);
    assert_int_equal(b.preemptions, 1);
    assert_string_equal(b.target_cluster, "cloud-spot");
    assert_string_equal(b.mirror, a.mirror);
    assert_string_equal(b.summary, a.summary);
    assert_string_equal(b.reason, a.reason);
    assert_int_equal(b.gpus, 8);
    assert_true(b.billed_gpus == 8.0 / 7.0);
    assert_true(sw_job_rec_billed_gpus(&b) == 8.0 / 7.0);
    b.billed_gpus = 0; /* a record from before: its GPUs */
    assert_true(sw_job_rec_billed_gpus(&b) == 8.0);
    b.billed_gpus = a.billed_gpus;
    assert_true(b.price_gpu_h == 2.1 && b.expected_cost == 41.2 && b.burst_now_cost == 111.68);
    assert_true(b.reserved_cost == 164.8);
    assert_int_equal(b.input_bytes, 1114113);
    assert_int_equal(b.observed_ms, 1795416356149);
    assert_int_equal(b.dispatched_ms, 1795416356848);
    assert_int_equal(b.started_ms, 1795416356879);
    assert_int_equal(b.node_wait_ms, 1795416356850);
    assert_string_equal(b.node_pool, "gpu-spot");
    assert_string_equal(b.node_claim, "gpu-spot-x7k2p");
    assert_float_equal(b.node_wait_expected_s, 60, 0);
    assert_float_equal(b.node_wait_s, 21.5, 0);
    assert_int_equal(b.epoch, 7);
}

/* Stale mirrors (left on a lost cluster) survive the round trip, are
 * remembered once, and are forgotten one by one. */
static void test_stale_mirrors(void **state)
{
    (void)state;
    struct sw_job_rec a, b;
    fill(&a);
    assert_int_equal(sw_job_rec_add_stale(&a, "cloud-spot", "sw-u1-1", 1), 0);
    assert_int_equal(sw_job_rec_add_stale(&a, "cloud-spot", "sw-u1-1", 1), 0);
    assert_int_equal(sw_job_rec_add_stale(&a, "cloud-ondemand", "sw-u1-2", 2), 0);
    assert_int_equal(a.nstale, 2);
    assert_true(sw_job_rec_stale_on(&a, "cloud-spot"));
    assert_false(sw_job_rec_stale_on(&a, "onprem"));
    cJSON *o = sw_job_rec_to_json(&a);
    struct sw_error err = {0};
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(b.nstale, 2);
    assert_string_equal(b.stale[1].cluster, "cloud-ondemand");
    assert_string_equal(b.stale[1].name, "sw-u1-2");
    assert_int_equal(b.stale[1].attempt, 2);
    sw_job_rec_remove_stale(&b, 0);
    assert_int_equal(b.nstale, 1);
    assert_string_equal(b.stale[0].name, "sw-u1-2");
    assert_false(sw_job_rec_stale_on(&b, "cloud-spot"));
    for (int i = 0; i < SW_REC_MAX_STALE - 1; i++) {
        char n[32];
        snprintf(n, sizeof(n), "sw-u1-%d", 10 + i);
        assert_int_equal(sw_job_rec_add_stale(&b, "cloud-spot", n, 10 + i), 0);
    }
    assert_int_equal(sw_job_rec_add_stale(&b, "cloud-spot", "one-more", 99), SW_ETOOBIG);
    /* A malformed list names the field. */
    o = cJSON_Parse(
        "{\"key\":\"a/b/c\",\"state\":\"observed\",\"staleMirrors\":[{\"cluster\":\"x\"}]}");
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), SW_EINVAL);
    assert_string_equal(
        err.msg, "job record a/b/c: field \"staleMirrors\": an entry without cluster or name");
    cJSON_Delete(o);
}

/* The clusters Secrets were copied to (every target, earlier ones too)
 * survive the round trip, once each, bounded; a record without the field
 * (written before it existed) has none; a malformed one is named. */
static void test_copied_to(void **state)
{
    (void)state;
    struct sw_job_rec a, b;
    fill(&a);
    assert_int_equal(sw_job_rec_add_copied(&a, "cloud-spot"), 0);
    assert_int_equal(sw_job_rec_add_copied(&a, "cloud-ondemand"), 0);
    assert_int_equal(sw_job_rec_add_copied(&a, "cloud-spot"), 0);
    assert_int_equal(a.ncopied, 2);
    cJSON *o = sw_job_rec_to_json(&a);
    struct sw_error err = {0};
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    cJSON_Delete(o);
    assert_int_equal(b.ncopied, 2);
    assert_string_equal(b.copied_to[0], "cloud-spot");
    assert_string_equal(b.copied_to[1], "cloud-ondemand");
    for (int i = 2; i < SW_REC_MAX_COPIED; i++) {
        char n[32];
        snprintf(n, sizeof(n), "c-%d", i);
        assert_int_equal(sw_job_rec_add_copied(&b, n), 0);
    }
    assert_int_equal(sw_job_rec_add_copied(&b, "one-more"), SW_ETOOBIG);
    o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"observed\"}");
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    assert_int_equal(b.ncopied, 0);
    cJSON_Delete(o);
    o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"observed\",\"copiedTo\":[\"x\",7]}");
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), SW_EINVAL);
    assert_string_equal(err.msg,
                        "job record a/b/c: field \"copiedTo\": expected cluster names of 1 "
                        "to 63 bytes");
    cJSON_Delete(o);
}

static void test_state_names(void **state)
{
    (void)state;
    static const char *names[] = {"observed",   "decided", "data-ready", "dispatching",
                                  "dispatched", "running", "succeeded",  "failed",
                                  "blocked",    "requeued"};
    for (int i = 0; i < SW_JS__COUNT; i++) {
        enum sw_job_state s;
        assert_string_equal(sw_job_state_name((enum sw_job_state)i), names[i]);
        assert_int_equal(sw_job_state_parse(names[i], &s), 0);
        assert_int_equal(s, i);
    }
    enum sw_job_state s;
    assert_int_equal(sw_job_state_parse("retrying", &s), SW_EINVAL);
    assert_true(sw_job_state_terminal(SW_JS_SUCCEEDED) && sw_job_state_terminal(SW_JS_FAILED));
    assert_false(sw_job_state_terminal(SW_JS_BLOCKED));
}

static void test_bad_records(void **state)
{
    (void)state;
    struct sw_job_rec r;
    struct sw_error err = {0};
    cJSON *o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"sleeping\"}");
    assert_int_equal(sw_job_rec_from_json(o, &r, &err), SW_EINVAL);
    assert_string_equal(err.msg, "job record a/b/c: field \"state\": unknown state \"sleeping\"");
    cJSON_Delete(o);
    o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"observed\",\"attempt\":\"two\"}");
    assert_int_not_equal(sw_job_rec_from_json(o, &r, &err), 0);
    assert_non_null(strstr(err.msg, "attempt"));
    cJSON_Delete(o);
    /* Out of an integer field's range: refused before any cast (review of
     * budgets, finding 3), the field named. */
    o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"observed\",\"gpus\":1e300}");
    assert_int_equal(sw_job_rec_from_json(o, &r, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "job record a/b/c: field \"gpus\": expected a number"));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"observed\",\"startedMs\":-1e19}");
    assert_int_equal(sw_job_rec_from_json(o, &r, &err), SW_EPARSE);
    assert_non_null(strstr(err.msg, "field \"startedMs\""));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"state\":\"observed\"}");
    assert_int_equal(sw_job_rec_from_json(o, &r, &err), SW_EINVAL);
    assert_string_equal(err.msg, "job record: field \"key\": missing");
    cJSON_Delete(o);
}

static void test_cost(void **state)
{
    (void)state;
    struct sw_job_rec r;
    fill(&r);
    r.started_ms = 1000;
    r.finished_ms = 0;
    r.billed_gpus = 0; /* billed as its GPUs */
    /* 8 GPUs x $2.10 x 30 min, still running. */
    assert_true(sw_job_rec_cost(&r, 1000 + 1800 * 1000) > 8.3999 &&
                sw_job_rec_cost(&r, 1000 + 1800 * 1000) < 8.4001);
    r.finished_ms = 1000 + 3600 * 1000; /* finished after an hour: the clock no longer counts */
    assert_true(sw_job_rec_cost(&r, 999999999) > 16.7999 &&
                sw_job_rec_cost(&r, 999999999) < 16.8001);
    /* 8 slices of a profile 7 to a GPU bill 8/7 of a GPU: $2.40 the hour. */
    r.billed_gpus = 8.0 / 7.0;
    assert_true(sw_job_rec_cost(&r, 999999999) > 2.3999 && sw_job_rec_cost(&r, 999999999) < 2.4001);
    r.started_ms = 0;
    assert_true(sw_job_rec_cost(&r, 5000) == 0);
}

static void kueue_fill(struct sw_job_kueue *k, const char *cq, int64_t reserved, int64_t nominal,
                       int64_t ahead)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->cluster_queue, sizeof(k->cluster_queue), "%s", cq);
    snprintf(k->local_queue, sizeof(k->local_queue), "gpu-lq");
    k->reserved_gpus = reserved;
    k->nominal_gpus = nominal;
    k->ahead = ahead;
}

/* What the origin and spillctl say of a Kueue Job's queue, to the byte. */
static void test_kueue_text(void **state)
{
    (void)state;
    struct sw_job_kueue k;
    char buf[256];
    kueue_fill(&k, "gpu", 8, 8, 5);
    sw_job_kueue_text(&k, buf, sizeof(buf));
    assert_string_equal(buf, "queued in ClusterQueue gpu: 8/8 GPUs reserved, 5 Workloads ahead");
    sw_job_kueue_short(&k, buf, sizeof(buf));
    assert_string_equal(buf, "gpu 8/8, 5 ahead");
    kueue_fill(&k, "gpu", 6, 8, 1);
    sw_job_kueue_text(&k, buf, sizeof(buf));
    assert_string_equal(buf, "queued in ClusterQueue gpu: 6/8 GPUs reserved, 1 Workload ahead");
    kueue_fill(&k, "gpu", 8, 8, 0);
    sw_job_kueue_text(&k, buf, sizeof(buf));
    assert_string_equal(buf, "queued in ClusterQueue gpu: 8/8 GPUs reserved, 0 Workloads ahead");
    /* Preempted at home and queued again: said first. */
    k.preempted = true;
    sw_job_kueue_text(&k, buf, sizeof(buf));
    assert_string_equal(buf, "preempted by Kueue, queued again in ClusterQueue gpu: 8/8 GPUs "
                             "reserved, 0 Workloads ahead");
    sw_job_kueue_short(&k, buf, sizeof(buf));
    assert_string_equal(buf, "gpu 8/8, 0 ahead");
    /* Several ClusterQueues, the Job's not known: its LocalQueue, the totals. */
    kueue_fill(&k, "", 16, 24, 3);
    sw_job_kueue_text(&k, buf, sizeof(buf));
    assert_string_equal(buf, "queued in LocalQueue gpu-lq: 16/24 GPUs reserved in its cluster's "
                             "ClusterQueues, 3 Workloads ahead");
    sw_job_kueue_short(&k, buf, sizeof(buf));
    assert_string_equal(buf, "LocalQueue gpu-lq 16/24, 3 ahead");
    /* Cut to fit, always terminated. */
    kueue_fill(&k, "gpu", 8, 8, 5);
    sw_job_kueue_text(&k, buf, 20);
    assert_string_equal(buf, "queued in ClusterQu");
    /* The longest name a ClusterQueue field holds (63) fits the summary
     * with the burst text after it. */
    char cq[64];
    memset(cq, 'q', 63);
    cq[63] = '\0';
    kueue_fill(&k, cq, 9007199254740992, 9007199254740992, 9007199254740992);
    sw_job_kueue_text(&k, buf, sizeof(buf));
    assert_true(strlen(buf) < SW_REC_SUMMARY_MAX - 200);
    assert_non_null(strstr(buf, cq));
}

/* The record's "kueue" round-trips; a record without it (a plain Job, or
 * one written before it existed) loads with none. */
static void test_kueue_round_trip(void **state)
{
    (void)state;
    struct sw_job_rec a, b;
    struct sw_error err = {0};
    fill(&a);
    cJSON *o = sw_job_rec_to_json(&a);
    assert_null(cJSON_GetObjectItemCaseSensitive(o, "kueue"));
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    assert_false(b.has_kueue);
    cJSON_Delete(o);
    a.has_kueue = true;
    kueue_fill(&a.kueue, "gpu", 8, 8, 5);
    o = sw_job_rec_to_json(&a);
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "kueue"));
    assert_string_equal(text, "{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu-lq\","
                              "\"reservedGpus\":8,\"nominalGpus\":8,\"ahead\":5}");
    cJSON_free(text);
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    cJSON_Delete(o);
    assert_true(b.has_kueue);
    assert_string_equal(b.kueue.cluster_queue, "gpu");
    assert_string_equal(b.kueue.local_queue, "gpu-lq");
    assert_int_equal(b.kueue.reserved_gpus, 8);
    assert_int_equal(b.kueue.nominal_gpus, 8);
    assert_int_equal(b.kueue.ahead, 5);
    assert_false(b.kueue.preempted);
    /* Preempted: written only when true, read back. */
    a.kueue.preempted = true;
    o = sw_job_rec_to_json(&a);
    text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "kueue"));
    assert_string_equal(text,
                        "{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu-lq\","
                        "\"reservedGpus\":8,\"nominalGpus\":8,\"ahead\":5,\"preempted\":true}");
    cJSON_free(text);
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    cJSON_Delete(o);
    assert_true(b.kueue.preempted);
    /* The ClusterQueue may be unknown (""). */
    kueue_fill(&a.kueue, "", 16, 24, 0);
    o = sw_job_rec_to_json(&a);
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    cJSON_Delete(o);
    assert_true(b.has_kueue);
    assert_string_equal(b.kueue.cluster_queue, "");
    assert_int_equal(b.kueue.nominal_gpus, 24);
    /* null is absent. */
    o = cJSON_Parse("{\"key\":\"a/b/c\",\"state\":\"observed\",\"kueue\":null}");
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    assert_false(b.has_kueue);
    cJSON_Delete(o);
}

/* A bad "kueue" names the field. */
static void test_kueue_bad(void **state)
{
    (void)state;
    static const struct {
        const char *kueue;
        const char *msg;
    } cases[] = {
        {"[]", "job record a/b/c: field \"kueue\": expected an object, got an array"},
        {"{\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8,\"ahead\":0}",
         "job record a/b/c: field \"kueue.clusterQueue\": missing"},
        {"{\"clusterQueue\":7,\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8,"
         "\"ahead\":0}",
         "job record a/b/c: field \"kueue.clusterQueue\": expected a string, got a number"},
        {"{\"clusterQueue\":\"gpu\",\"localQueue\":\"\",\"reservedGpus\":8,\"nominalGpus\":8,"
         "\"ahead\":0}",
         "job record a/b/c: field \"kueue.localQueue\": empty"},
        {"{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu\",\"reservedGpus\":8.5,\"nominalGpus\":8,"
         "\"ahead\":0}",
         "job record a/b/c: field \"kueue.reservedGpus\": expected an integer, got 8.5"},
        {"{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":"
         "\"8\","
         "\"ahead\":0}",
         "job record a/b/c: field \"kueue.nominalGpus\": expected an integer, got a string"},
        {"{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8,"
         "\"ahead\":-1}",
         "job record a/b/c: field \"kueue.ahead\": expected a count of 0 or more, got -1"},
        {"{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8}",
         "job record a/b/c: field \"kueue.ahead\": missing"},
        {"{\"clusterQueue\":\"gpu\",\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8,"
         "\"ahead\":0,\"preempted\":\"yes\"}",
         "job record a/b/c: field \"kueue.preempted\": expected a boolean, got a string"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "{\"key\":\"a/b/c\",\"state\":\"dispatched\",\"kueue\":%s}",
                 cases[i].kueue);
        cJSON *o = cJSON_Parse(text);
        assert_non_null(o);
        struct sw_job_rec r;
        struct sw_error err = {0};
        assert_int_not_equal(sw_job_rec_from_json(o, &r, &err), 0);
        assert_string_equal(err.msg, cases[i].msg);
        cJSON_Delete(o);
    }
    /* A name longer than a ClusterQueue's field holds (63 bytes). */
    char text[512], name[65];
    memset(name, 'q', 64);
    name[64] = '\0';
    snprintf(text, sizeof(text),
             "{\"key\":\"a/b/c\",\"state\":\"dispatched\",\"kueue\":{\"clusterQueue\":\"%s\","
             "\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8,\"ahead\":0}}",
             name);
    cJSON *o = cJSON_Parse(text);
    struct sw_job_rec r;
    struct sw_error err = {0};
    assert_int_equal(sw_job_rec_from_json(o, &r, &err), SW_ETOOBIG);
    assert_string_equal(err.msg,
                        "job record a/b/c: field \"kueue.clusterQueue\": longer than 63 bytes");
    cJSON_Delete(o);
    /* 63 bytes fit. */
    name[63] = '\0';
    snprintf(text, sizeof(text),
             "{\"key\":\"a/b/c\",\"state\":\"dispatched\",\"kueue\":{\"clusterQueue\":\"%s\","
             "\"localQueue\":\"gpu\",\"reservedGpus\":8,\"nominalGpus\":8,\"ahead\":0}}",
             name);
    o = cJSON_Parse(text);
    assert_int_equal(sw_job_rec_from_json(o, &r, &err), 0);
    assert_string_equal(r.kueue.cluster_queue, name);
    cJSON_Delete(o);
}

/* The runtime belief a Job was decided with, and whether its runtime was
 * counted: round-trip; absent in records from before; checked when there. */
static void test_belief(void **state)
{
    (void)state;
    struct sw_job_rec a, b;
    fill(&a);
    a.belief_set = true;
    a.belief = (struct sw_estimate){
        .median_s = 2037.5, .sigma = 0.31, .source = SW_EST_LEARNED, .runs = 12, .level = 1};
    a.annotated_s = 0;
    a.prio = SW_PRIO_PRODUCTION;
    snprintf(a.label, sizeof(a.label), "train-llama");
    a.runtime_counted = true;
    cJSON *o = sw_job_rec_to_json(&a);
    struct sw_error err = {0};
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    assert_true(b.belief_set && b.runtime_counted);
    assert_true(b.belief.median_s == 2037.5 && b.belief.sigma == 0.31);
    assert_int_equal(b.belief.source, SW_EST_LEARNED);
    assert_int_equal(b.belief.runs, 12);
    assert_int_equal(b.belief.level, 1);
    assert_int_equal(b.prio, SW_PRIO_PRODUCTION);
    assert_string_equal(b.label, "train-llama");
    /* A record from before: no belief, not counted. */
    cJSON_DeleteItemFromObjectCaseSensitive(o, "runtimeBelief");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "runtimeCounted");
    assert_int_equal(sw_job_rec_from_json(o, &b, &err), 0);
    assert_false(b.belief_set || b.runtime_counted);
    cJSON_Delete(o);
    static const struct {
        const char *belief;
        const char *msg;
    } cases[] = {
        {"\"runtimeBelief\":7", "job record a/b/c: field \"runtimeBelief\": expected an object"},
        {"\"runtimeBelief\":{\"medianSeconds\":0,\"sigma\":0,\"runs\":0,\"level\":0,"
         "\"annotatedSeconds\":0,\"source\":\"prior\",\"priority\":\"training\",\"label\":\"\"}",
         "job record a/b/c: field \"runtimeBelief.medianSeconds\": not one in range, expected a "
         "number from 0.001 to 1e+15"},
        {"\"runtimeBelief\":{\"medianSeconds\":60,\"sigma\":1e999,\"runs\":0,\"level\":0,"
         "\"annotatedSeconds\":0,\"source\":\"prior\",\"priority\":\"training\",\"label\":\"\"}",
         "job record a/b/c: field \"runtimeBelief.sigma\": not one in range, expected a number "
         "from 0 to 4"},
        {"\"runtimeBelief\":{\"medianSeconds\":60,\"sigma\":0,\"runs\":0,\"level\":0,"
         "\"annotatedSeconds\":0,\"source\":\"oracle\",\"priority\":\"training\",\"label\":\"\"}",
         "job record a/b/c: field \"runtimeBelief.source\": expected \"annotation\", \"learned\" "
         "or \"prior\""},
        {"\"runtimeBelief\":{\"medianSeconds\":60,\"sigma\":0,\"runs\":0,\"level\":0,"
         "\"annotatedSeconds\":0,\"source\":\"prior\",\"priority\":\"urgent\",\"label\":\"\"}",
         "job record a/b/c: field \"runtimeBelief.priority\": expected a priority class "
         "(best-effort, development, training, production)"},
        {"\"runtimeCounted\":1",
         "job record a/b/c: field \"runtimeCounted\": expected true or false"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), "{\"key\":\"a/b/c\",\"state\":\"succeeded\",%s}",
                 cases[i].belief);
        cJSON *p = cJSON_Parse(text);
        assert_non_null(p);
        assert_int_equal(sw_job_rec_from_json(p, &b, &err), SW_EPARSE);
        assert_string_equal(err.msg, cases[i].msg);
        cJSON_Delete(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_stale_mirrors),
        cmocka_unit_test(test_copied_to),   cmocka_unit_test(test_state_names),
        cmocka_unit_test(test_bad_records), cmocka_unit_test(test_cost),
        cmocka_unit_test(test_kueue_text),  cmocka_unit_test(test_kueue_round_trip),
        cmocka_unit_test(test_kueue_bad),   cmocka_unit_test(test_belief),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
