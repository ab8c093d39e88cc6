/*
 * Tests for controller/hub/runtimes.c: beliefs from the history are what
 * placement/estimate.c gives for the same runs (the prior, learned per
 * feature key, the annotation corrected); learning is per team (a team's
 * beliefs from its own Jobs only, a new team the prior); the history is
 * bounded, the oldest of the team holding the most dropped and that
 * team's beliefs rebuilt without it; estimators held are bounded; a Job is counted once
 * (by id, and by its record's state); observations read from Redis are
 * checked field by field and a bad one names the field; labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "controller/hub/runtimes.h"

static struct sw_runtime_obs obs(const char *id, const char *team, const char *label, int gpus,
                                 double annotated_s, double runtime_s, int64_t finished_ms)
{
    struct sw_runtime_obs o;
    memset(&o, 0, sizeof(o));
    snprintf(o.id, sizeof(o.id), "%s", id);
    snprintf(o.team, sizeof(o.team), "%s", team);
    snprintf(o.label, sizeof(o.label), "%s", label);
    o.prio = SW_PRIO_TRAINING;
    o.gpus = gpus;
    o.annotated_s = annotated_s;
    o.runtime_s = runtime_s;
    o.predicted_s = 3600;
    o.sigma = 2.0;
    o.source = SW_EST_PRIOR;
    o.finished_ms = finished_ms;
    return o;
}

static void test_prior_then_learned(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 64, NULL), 0);
    struct sw_job_features f = {
        .team = "vision", .label = "train", .prio = SW_PRIO_TRAINING, .gpus = 8};
    struct sw_estimate e;
    /* Nothing finished: the prior, 1 h and sigma 2. */
    assert_int_equal(sw_runtimes_belief(&r, &f, 0, &e), 0);
    assert_int_equal(e.source, SW_EST_PRIOR);
    assert_float_equal(e.median_s, 3600, 1e-9);
    assert_float_equal(e.sigma, 2.0, 1e-12);
    /* An annotation before any annotated Job finished: as declared, 0.5. */
    assert_int_equal(sw_runtimes_belief(&r, &f, 600, &e), 0);
    assert_int_equal(e.source, SW_EST_ANNOTATION);
    assert_float_equal(e.median_s, 600, 1e-9);
    assert_float_equal(e.sigma, 0.5, 1e-12);
    /* Five runs of the kind, 100 to 1600 s: the geometric mean, the
     * predictive spread; and exactly what the simulator's estimator says. */
    struct sw_estimator *ref;
    struct sw_estimator_params p;
    sw_estimator_params_default(&p);
    assert_int_equal(sw_estimator_new(&p, &ref), 0);
    const double rt[] = {100, 200, 400, 800, 1600};
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "uid-%d", i);
        struct sw_runtime_obs o = obs(id, "vision", "train", 8, 0, rt[i], 1000 + i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
        struct sw_job_features of = {
            .team = "vision", .label = "train", .prio = SW_PRIO_TRAINING, .gpus = 8};
        assert_int_equal(sw_estimator_observe(ref, &of, 0, rt[i]), 0);
    }
    assert_int_equal(sw_runtimes_belief(&r, &f, 0, &e), 0);
    assert_int_equal(e.source, SW_EST_LEARNED);
    assert_int_equal(e.level, 0);
    assert_int_equal(e.runs, 5);
    assert_float_equal(e.median_s, 400, 1e-6);
    /* log-spacing ln 2: sample sd of {0,1,2,3,4} ln 2 = ln 2 x sqrt(2.5). */
    assert_float_equal(e.sigma, log(2) * sqrt(2.5) * sqrt(1.2), 1e-9);
    struct sw_estimate want;
    sw_estimator_estimate(ref, &f, 0, &want);
    assert_float_equal(e.median_s, want.median_s, 0);
    assert_float_equal(e.sigma, want.sigma, 0);
    /* Another team's Job learns nothing from them: the prior. */
    struct sw_job_features g = {.team = "nlp", .label = "x", .prio = SW_PRIO_TRAINING, .gpus = 1};
    assert_int_equal(sw_runtimes_belief(&r, &g, 0, &e), 0);
    assert_int_equal(e.source, SW_EST_PRIOR);
    assert_float_equal(e.median_s, 3600, 1e-9);
    /* A Job of the same team with another label: its team's runs (level 3). */
    struct sw_job_features h = {
        .team = "vision", .label = "x", .prio = SW_PRIO_DEVELOPMENT, .gpus = 1};
    assert_int_equal(sw_runtimes_belief(&r, &h, 0, &e), 0);
    assert_int_equal(e.source, SW_EST_LEARNED);
    assert_int_equal(e.level, 3);
    sw_estimator_free(ref);
    sw_runtimes_free(&r);
}

static void test_annotation_corrected(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 64, NULL), 0);
    /* Annotated Jobs take twice what they declare. */
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a-%d", i);
        double ann = 300.0 * (i + 1);
        struct sw_runtime_obs o = obs(id, "t", "", 1, ann, 2 * ann * (i % 2 ? 1.1 : 1 / 1.1), i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
    }
    struct sw_job_features f = {.team = "t", .label = "", .prio = SW_PRIO_TRAINING, .gpus = 1};
    struct sw_estimate e;
    assert_int_equal(sw_runtimes_belief(&r, &f, 1000, &e), 0);
    assert_int_equal(e.source, SW_EST_ANNOTATION);
    assert_int_equal(e.runs, 6);
    assert_float_equal(e.median_s, 2000, 1e-6);
    assert_true(e.sigma > 0.05 && e.sigma < 0.2);
    sw_runtimes_free(&r);
}

static void test_bounded(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 8, NULL), 0);
    /* Twelve: the first four, 10 000 s each, fall out; the last eight took
     * 100 s each, so the belief is 100 s, not pulled up by the dropped. */
    for (int i = 0; i < 12; i++) {
        char id[16];
        snprintf(id, sizeof(id), "j-%02d", i);
        struct sw_runtime_obs o = obs(id, "t", "l", 1, 0, i < 4 ? 10000 : 100, 1000 + i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
    }
    assert_int_equal(r.n, 8);
    assert_false(sw_runtimes_has(&r, "j-03"));
    assert_true(sw_runtimes_has(&r, "j-04"));
    assert_true(sw_runtimes_has(&r, "j-11"));
    struct sw_job_features f = {.team = "t", .label = "l", .prio = SW_PRIO_TRAINING, .gpus = 1};
    struct sw_estimate e;
    assert_int_equal(sw_runtimes_belief(&r, &f, 0, &e), 0);
    assert_int_equal(e.runs, 8);
    assert_float_equal(e.median_s, 100, 1e-6);
    assert_float_equal(e.sigma, 0, 1e-12);
    assert_int_equal(r.nteams, 1);
    assert_false(r.teams[0].stale);
    sw_runtimes_free(&r);
}

static void test_counted_once(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 8, NULL), 0);
    struct sw_runtime_obs o = obs("uid-1", "t", "l", 1, 0, 100, 1);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    o.runtime_s = 5000; /* the same Job seen again: not counted */
    assert_int_equal(sw_runtimes_add(&r, &o), 0);
    assert_int_equal(r.n, 1);
    /* Invalid: refused, nothing kept. */
    struct sw_runtime_obs bad = obs("uid-2", "t", "l", 1, 0, 0, 1);
    assert_int_equal(sw_runtimes_add(&r, &bad), SW_EINVAL);
    bad = obs("uid-2", "t", "l", 1, 0, NAN, 1);
    assert_int_equal(sw_runtimes_add(&r, &bad), SW_EINVAL);
    bad = obs("", "t", "l", 1, 0, 10, 1);
    assert_int_equal(sw_runtimes_add(&r, &bad), SW_EINVAL);
    assert_int_equal(r.n, 1);
    sw_runtimes_free(&r);
}

static void rec_fill(struct sw_job_rec *rec)
{
    memset(rec, 0, sizeof(*rec));
    snprintf(rec->key, sizeof(rec->key), "onprem/ns/train-7");
    snprintf(rec->uid, sizeof(rec->uid), "0fea0c22");
    snprintf(rec->team, sizeof(rec->team), "vision");
    snprintf(rec->label, sizeof(rec->label), "train");
    rec->prio = SW_PRIO_PRODUCTION;
    rec->gpus = 4;
    rec->state = SW_JS_SUCCEEDED;
    snprintf(rec->mirror, sizeof(rec->mirror), "sw-0fea0c22-1");
    rec->dispatched_ms = 1000000;
    rec->started_ms = 1002000;
    rec->mirror_completed_ms = 1062000;
    rec->finished_ms = 1065000;
    rec->belief_set = true;
    rec->belief = (struct sw_estimate){.median_s = 40, .sigma = 0.5, .source = SW_EST_ANNOTATION};
    rec->annotated_s = 40;
}

static void test_observation_rule(void **state)
{
    (void)state;
    struct sw_job_rec rec;
    struct sw_runtime_obs o;
    rec_fill(&rec);
    /* Succeeded, not yet counted: from the start seen to the completion seen. */
    assert_true(sw_runtime_observation(&rec, &o));
    assert_string_equal(o.id, "0fea0c22");
    assert_string_equal(o.team, "vision");
    assert_string_equal(o.label, "train");
    assert_int_equal(o.prio, SW_PRIO_PRODUCTION);
    assert_int_equal(o.gpus, 4);
    assert_float_equal(o.runtime_s, 60, 1e-9);
    assert_float_equal(o.annotated_s, 40, 0);
    assert_float_equal(o.predicted_s, 40, 0);
    assert_int_equal(o.source, SW_EST_ANNOTATION);
    assert_int_equal(o.finished_ms, 1065000);
    assert_float_equal(sw_runtime_obs_error(&o), 0.5, 1e-12);
    /* Counted already (a record read again by a new leader): never again. */
    rec.runtime_counted = true;
    assert_false(sw_runtime_observation(&rec, &o));
    rec.runtime_counted = false;
    /* Not a success, or no belief (a record from before), or no id. */
    enum sw_job_state others[] = {SW_JS_FAILED, SW_JS_RUNNING, SW_JS_REQUEUED, SW_JS_OBSERVED};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        rec.state = others[i];
        assert_false(sw_runtime_observation(&rec, &o));
    }
    rec.state = SW_JS_SUCCEEDED;
    rec.belief_set = false;
    assert_false(sw_runtime_observation(&rec, &o));
    rec.belief_set = true;
    rec.uid[0] = '\0';
    assert_false(sw_runtime_observation(&rec, &o));
    rec_fill(&rec);
    /* Finished at home before any burst (follow.c clears the mirror): no run
     * the hub followed, whatever times the record holds. */
    rec.mirror[0] = '\0';
    assert_false(sw_runtime_observation(&rec, &o));
    rec_fill(&rec);
    /* Never seen running: from its dispatch; completion not seen: the finish. */
    rec.started_ms = 0;
    rec.mirror_completed_ms = 0;
    assert_true(sw_runtime_observation(&rec, &o));
    assert_float_equal(o.runtime_s, 65, 1e-9);
    /* No time passed, or clocks backwards: nothing to learn. */
    rec.finished_ms = rec.dispatched_ms;
    assert_false(sw_runtime_observation(&rec, &o));
    rec.dispatched_ms = 0;
    assert_false(sw_runtime_observation(&rec, &o));
}

static void test_codec(void **state)
{
    (void)state;
    struct sw_runtime_obs a =
        obs("0fea0c22", "vision", "train-llama", 8, 1800, 2400.5, 1795416356879);
    a.prio = SW_PRIO_DEVELOPMENT;
    a.predicted_s = 2037.4;
    a.sigma = 0.31;
    a.source = SW_EST_LEARNED;
    cJSON *j = sw_runtime_obs_to_json(&a);
    assert_non_null(j);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    cJSON *p = cJSON_Parse(text);
    cJSON_free(text);
    struct sw_runtime_obs b;
    struct sw_error err = {0};
    assert_int_equal(sw_runtime_obs_from_json(p, "0fea0c22", &b, &err), 0);
    cJSON_Delete(p);
    assert_string_equal(b.id, a.id);
    assert_string_equal(b.team, "vision");
    assert_string_equal(b.label, "train-llama");
    assert_int_equal(b.prio, SW_PRIO_DEVELOPMENT);
    assert_int_equal(b.gpus, 8);
    assert_true(b.annotated_s == 1800 && b.runtime_s == 2400.5 && b.predicted_s == 2037.4);
    assert_true(b.sigma == 0.31);
    assert_int_equal(b.source, SW_EST_LEARNED);
    assert_int_equal(b.finished_ms, 1795416356879);
    assert_true(sw_runtime_obs_valid(&b));
}

static void test_codec_bad(void **state)
{
    (void)state;
    static const char good[] =
        "\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
        "\"annotatedSeconds\":0,\"predictedSeconds\":3600,\"sigma\":2,\"source\":\"prior\","
        "\"finishedMs\":5";
    static const struct {
        const char *extra; /* runtimeSeconds and any field replaced */
        const char *msg;
    } cases[] = {
        {"", "runtime observation u1: field \"runtimeSeconds\": missing, expected a number"},
        {",\"runtimeSeconds\":\"60\"",
         "runtime observation u1: field \"runtimeSeconds\": expected a number"},
        {",\"runtimeSeconds\":0",
         "runtime observation u1: field \"runtimeSeconds\": expected a runtime above 0"},
        {",\"runtimeSeconds\":-3",
         "runtime observation u1: field \"runtimeSeconds\": -3, expected a number from 0 to "
         "1e+15"},
        {",\"runtimeSeconds\":1e999",
         "runtime observation u1: field \"runtimeSeconds\": inf, expected a number from 0 to "
         "1e+15"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), "{%s%s}", good, cases[i].extra);
        cJSON *o = cJSON_Parse(text);
        assert_non_null(o);
        struct sw_runtime_obs out;
        memset(&out, 0x5a, sizeof(out));
        struct sw_error err = {0};
        assert_int_equal(sw_runtime_obs_from_json(o, "u1", &out, &err), SW_EPARSE);
        assert_string_equal(err.msg, cases[i].msg);
        assert_int_equal((unsigned char)out.id[0], 0x5a); /* untouched */
        cJSON_Delete(o);
    }
    /* One field at a time made bad, the rest sound. */
    static const struct {
        const char *text;
        const char *msg;
    } whole[] = {
        {"[]", "runtime observation u1: expected a JSON object"},
        {"{\"id\":\"u2\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"id\": \"u2\", expected the entry's own id"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"urgent\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"priority\": \"urgent\", expected best-effort, "
         "development, training or production"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":0,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"gpus\": 0, expected a number from 1 to 1.04858e+06"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1.5,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"gpus\": expected a whole number"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":4.5,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"sigma\": 4.5, expected a number from 0 to 4"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"oracle\",\"finishedMs\":5}",
         "runtime observation u1: field \"source\": \"oracle\", expected annotation, learned or "
         "prior"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":-1,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"annotatedSeconds\": -1, expected a number from 0 to "
         "1e+15"},
        {"{\"id\":\"u1\",\"team\":7,\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":5}",
         "runtime observation u1: field \"team\": expected a string"},
        {"{\"id\":\"u1\",\"team\":\"t\",\"label\":\"l\",\"priority\":\"training\",\"gpus\":1,"
         "\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,\"sigma\":0,"
         "\"source\":\"prior\",\"finishedMs\":-5}",
         "runtime observation u1: field \"finishedMs\": -5, expected a number from 0 to 9e+15"},
    };
    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
        cJSON *o = cJSON_Parse(whole[i].text);
        assert_non_null(o);
        struct sw_runtime_obs out;
        struct sw_error err = {0};
        assert_int_equal(sw_runtime_obs_from_json(o, "u1", &out, &err), SW_EPARSE);
        assert_string_equal(err.msg, whole[i].msg);
        cJSON_Delete(o);
    }
    /* A label at the limit reads; one byte more does not. */
    char label[SW_NAME_MAX + 1], text[1024];
    for (int over = 0; over < 2; over++) {
        memset(label, 'l', SW_NAME_MAX);
        label[SW_NAME_MAX - 1 + over] = '\0'; /* 63 bytes, then 64 */
        snprintf(text, sizeof(text),
                 "{\"id\":\"u1\",\"team\":\"t\",\"label\":\"%s\",\"priority\":\"training\","
                 "\"gpus\":1,\"runtimeSeconds\":5,\"annotatedSeconds\":0,\"predictedSeconds\":0,"
                 "\"sigma\":0,\"source\":\"prior\",\"finishedMs\":5}",
                 label);
        cJSON *o = cJSON_Parse(text);
        struct sw_runtime_obs out;
        struct sw_error err = {0};
        assert_int_equal(sw_runtime_obs_from_json(o, "u1", &out, &err), over ? SW_EPARSE : 0);
        if (over)
            assert_string_equal(err.msg,
                                "runtime observation u1: field \"label\": expected 0 to 63 bytes");
        cJSON_Delete(o);
    }
}

static void test_load(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 3, NULL), 0);
    /* Read in hash order; five for three places: the latest three stay. */
    struct sw_runtime_obs in[5] = {
        obs("c", "t", "l", 1, 0, 30, 300), obs("a", "t", "l", 1, 0, 10, 100),
        obs("e", "t", "l", 1, 0, 50, 500), obs("b", "t", "l", 1, 0, 20, 200),
        obs("d", "t", "l", 1, 0, 40, 400),
    };
    assert_int_equal(sw_runtimes_load(&r, in, 5), 3);
    assert_false(sw_runtimes_has(&r, "a"));
    assert_false(sw_runtimes_has(&r, "b"));
    assert_true(sw_runtimes_has(&r, "c") && sw_runtimes_has(&r, "d") && sw_runtimes_has(&r, "e"));
    /* A new leader loads again: cleared first, the same three. */
    assert_int_equal(sw_runtimes_clear(&r), 0);
    assert_int_equal(r.n, 0);
    assert_int_equal(sw_runtimes_load(&r, in, 5), 3);
    assert_int_equal(r.n, 3);
    /* Loaded again over what is kept: nothing counted twice. */
    assert_int_equal(sw_runtimes_load(&r, in, 5), 0);
    assert_int_equal(r.n, 3);
    sw_runtimes_free(&r);
}

static void test_label(void **state)
{
    (void)state;
    char out[SW_NAME_MAX];
    sw_runtime_label("train-llama-0042", NULL, out);
    assert_string_equal(out, "train-llama");
    sw_runtime_label("train-llama-x7k2p", "train-llama-", out);
    assert_string_equal(out, "train-llama");
    sw_runtime_label("eval.7", "", out);
    assert_string_equal(out, "eval");
    sw_runtime_label("train-llama-3-1", NULL, out);
    assert_string_equal(out, "train-llama");
    sw_runtime_label("1234", NULL, out);
    assert_string_equal(out, "1234");
    sw_runtime_label("resnet50", NULL, out);
    assert_string_equal(out, "resnet50");
    char longname[100];
    memset(longname, 'n', 99);
    longname[99] = '\0';
    sw_runtime_label(longname, NULL, out);
    assert_int_equal(strlen(out), SW_NAME_MAX - 1);
}

/* The belief of team `team` compared with an estimator fed only `team`'s
 * observations among `o`: the same figures, exactly. */
static void same_as_own(struct sw_runtimes *r, const struct sw_runtime_obs *o, size_t n,
                        const struct sw_job_features *f, double annotated_s)
{
    struct sw_estimator_params p;
    sw_estimator_params_default(&p);
    struct sw_estimator *ref;
    assert_int_equal(sw_estimator_new(&p, &ref), 0);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(o[i].team, f->team) != 0)
            continue;
        struct sw_job_features of = {
            .team = o[i].team, .label = o[i].label, .prio = o[i].prio, .gpus = o[i].gpus};
        assert_int_equal(sw_estimator_observe(ref, &of, o[i].annotated_s, o[i].runtime_s), 0);
    }
    struct sw_estimate want, got;
    sw_estimator_estimate(ref, f, annotated_s, &want);
    assert_int_equal(sw_runtimes_belief(r, f, annotated_s, &got), 0);
    assert_int_equal(got.source, want.source);
    assert_int_equal(got.level, want.level);
    assert_int_equal(got.runs, want.runs);
    assert_float_equal(got.median_s, want.median_s, 0);
    assert_float_equal(got.sigma, want.sigma, 0);
    sw_estimator_free(ref);
}

static void test_per_team(void **state)
{
    (void)state;
    enum { N = 6 + 5 + 400 };
    static struct sw_runtime_obs o[N];
    size_t n = 0;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 4096, NULL), 0);
    /* Team vision: annotated Jobs that take twice what they declare, and
     * five runs of "train". */
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "v-a-%d", i);
        double ann = 300.0 * (i + 1);
        o[n] = obs(id, "vision", "eval", 1, ann, 2 * ann * (i % 2 ? 1.1 : 1 / 1.1), 1000 + i);
        assert_int_equal(sw_runtimes_add(&r, &o[n++]), 1);
    }
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof(id), "v-t-%d", i);
        o[n] = obs(id, "vision", "train", 8, 0, 100.0 * (1 << i), 2000 + i);
        assert_int_equal(sw_runtimes_add(&r, &o[n++]), 1);
    }
    struct sw_job_features vt = {
        .team = "vision", .label = "train", .prio = SW_PRIO_TRAINING, .gpus = 8};
    struct sw_job_features vn = {
        .team = "vision", .label = "new", .prio = SW_PRIO_PRODUCTION, .gpus = 2};
    struct sw_estimate before[3], after[3];
    assert_int_equal(sw_runtimes_belief(&r, &vt, 0, &before[0]), 0);
    assert_int_equal(sw_runtimes_belief(&r, &vt, 1000, &before[1]), 0);
    assert_int_equal(sw_runtimes_belief(&r, &vn, 0, &before[2]), 0);
    assert_int_equal(before[1].source, SW_EST_ANNOTATION);
    assert_float_equal(before[1].median_s, 2000, 1e-6);
    /* Another tenant floods: 200 Jobs declaring 720 h that exit after 1 s,
     * and 200 of vision's label and shape taking 1 s. */
    for (int i = 0; i < 400; i++) {
        char id[16];
        snprintf(id, sizeof(id), "x-%d", i);
        o[n] = i < 200 ? obs(id, "mallory", "train", 8, 720 * 3600.0, 1, 3000 + i)
                       : obs(id, "mallory", "train", 8, 0, 1, 3000 + i);
        assert_int_equal(sw_runtimes_add(&r, &o[n++]), 1);
    }
    assert_int_equal(sw_runtimes_belief(&r, &vt, 0, &after[0]), 0);
    assert_int_equal(sw_runtimes_belief(&r, &vt, 1000, &after[1]), 0);
    assert_int_equal(sw_runtimes_belief(&r, &vn, 0, &after[2]), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(after[i].source, before[i].source);
        assert_int_equal(after[i].level, before[i].level);
        assert_int_equal(after[i].runs, before[i].runs);
        assert_float_equal(after[i].median_s, before[i].median_s, 0);
        assert_float_equal(after[i].sigma, before[i].sigma, 0);
    }
    /* Every level and the annotation from vision's own Jobs only. */
    same_as_own(&r, o, n, &vt, 0);
    same_as_own(&r, o, n, &vt, 1000);
    same_as_own(&r, o, n, &vn, 0);
    same_as_own(&r, o, n, &vn, 3600);
    /* The flood corrects mallory's own annotations (1 s for 720 h). */
    struct sw_job_features m = {
        .team = "mallory", .label = "train", .prio = SW_PRIO_TRAINING, .gpus = 8};
    struct sw_estimate e;
    assert_int_equal(sw_runtimes_belief(&r, &m, 720 * 3600.0, &e), 0);
    assert_int_equal(e.source, SW_EST_ANNOTATION);
    assert_float_equal(e.median_s, 1, 1e-6);
    same_as_own(&r, o, n, &m, 720 * 3600.0);
    sw_runtimes_free(&r);
}

static void test_new_team_prior(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 64, NULL), 0);
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof(id), "j-%d", i);
        struct sw_runtime_obs o = obs(id, i % 2 ? "a" : "b", "", 1, 100, 5, i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
    }
    /* A team with no history: the prior, and an annotation as declared
     * with its first spread; nothing of teams a and b. */
    struct sw_job_features f = {.team = "new", .label = "", .prio = SW_PRIO_TRAINING, .gpus = 1};
    struct sw_estimate e;
    assert_int_equal(sw_runtimes_belief(&r, &f, 0, &e), 0);
    assert_int_equal(e.source, SW_EST_PRIOR);
    assert_float_equal(e.median_s, 3600, 1e-9);
    assert_float_equal(e.sigma, 2.0, 1e-12);
    assert_int_equal(e.runs, 0);
    assert_int_equal(sw_runtimes_belief(&r, &f, 100, &e), 0);
    assert_int_equal(e.source, SW_EST_ANNOTATION);
    assert_float_equal(e.median_s, 100, 1e-9);
    assert_float_equal(e.sigma, 0.5, 1e-12);
    assert_int_equal(e.runs, 0);
    /* Team a's annotations are corrected by its own (5 s for 100 s). */
    f.team = "a";
    assert_int_equal(sw_runtimes_belief(&r, &f, 100, &e), 0);
    assert_int_equal(e.runs, 10);
    assert_float_equal(e.median_s, 5, 1e-9);
    sw_runtimes_free(&r);
}

static void test_flood_evicts_own(void **state)
{
    (void)state;
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 16, NULL), 0);
    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a-%d", i);
        struct sw_runtime_obs o = obs(id, "a", "l", 1, 0, 100, i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
        snprintf(id, sizeof(id), "b-%d", i);
        o = obs(id, "b", "l", 1, 0, 200, i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
    }
    struct sw_job_features fa = {.team = "a", .label = "l", .prio = SW_PRIO_TRAINING, .gpus = 1};
    struct sw_estimate e0, e;
    assert_int_equal(sw_runtimes_belief(&r, &fa, 0, &e0), 0);
    /* A team finishes 100 Jobs, far more than the history holds: it drops
     * its own oldest, never a's or b's. */
    for (int i = 0; i < 100; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z-%03d", i);
        struct sw_runtime_obs o = obs(id, "z", "l", 1, 0, 1, 1000 + i);
        assert_int_equal(sw_runtimes_add(&r, &o), 1);
        assert_true(r.n <= 16);
    }
    assert_int_equal(r.n, 16);
    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a-%d", i);
        assert_true(sw_runtimes_has(&r, id));
        snprintf(id, sizeof(id), "b-%d", i);
        assert_true(sw_runtimes_has(&r, id));
    }
    assert_false(sw_runtimes_has(&r, "z-091"));
    for (int i = 92; i < 100; i++) {
        char id[16];
        snprintf(id, sizeof(id), "z-%03d", i);
        assert_true(sw_runtimes_has(&r, id));
    }
    assert_int_equal(sw_runtimes_belief(&r, &fa, 0, &e), 0);
    assert_int_equal(e.runs, e0.runs);
    assert_float_equal(e.median_s, e0.median_s, 0);
    /* a 4, b 4, z 8. Jobs of a: z, the largest, drops its oldest until a
     * holds as many as z... */
    struct sw_runtime_obs o = obs("a-4", "a", "l", 1, 0, 100, 10);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    assert_false(sw_runtimes_has(&r, "z-092"));
    o = obs("a-5", "a", "l", 1, 0, 100, 11);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    assert_false(sw_runtimes_has(&r, "z-093"));
    /* ...then a holds the most (7 to 6): a drops its own oldest. */
    o = obs("a-6", "a", "l", 1, 0, 100, 12);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    assert_false(sw_runtimes_has(&r, "a-0"));
    assert_true(sw_runtimes_has(&r, "z-094"));
    /* A tie (a 6, z 6, b 5): the greatest name drops, as the Lua script's
     * ZREVRANGE orders equal counts. */
    o = obs("b-4", "b", "l", 1, 0, 200, 13);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    assert_false(sw_runtimes_has(&r, "z-094"));
    assert_true(sw_runtimes_has(&r, "z-095") && sw_runtimes_has(&r, "a-1") &&
                sw_runtimes_has(&r, "b-0") && sw_runtimes_has(&r, "b-4"));
    assert_int_equal(r.n, 16);
    assert_int_equal(r.nteams, 3);
    sw_runtimes_free(&r);
    /* A team whose only observation is dropped leaves the team table. */
    assert_int_equal(sw_runtimes_init(&r, 1, NULL), 0);
    o = obs("a-0", "a", "l", 1, 0, 100, 1);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    o = obs("y-0", "y", "l", 1, 0, 100, 2);
    assert_int_equal(sw_runtimes_add(&r, &o), 1);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.nteams, 1);
    assert_true(sw_runtimes_has(&r, "a-0"));
    assert_false(sw_runtimes_has(&r, "y-0"));
    sw_runtimes_free(&r);
}

static void test_estimators_bounded(void **state)
{
    (void)state;
    static struct sw_runtime_obs o[60];
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 64, NULL), 0);
    r.max_est = 2;
    const char *teams[] = {"t0", "t1", "t2", "t3", "t4", "t5"};
    for (int i = 0; i < 60; i++) {
        char id[16];
        snprintf(id, sizeof(id), "j-%d", i);
        o[i] = obs(id, teams[i % 6], "l", 1, i % 3 ? 0 : 50, 10.0 + i, i);
        assert_int_equal(sw_runtimes_add(&r, &o[i]), 1);
    }
    /* Six teams asked in turn with two estimators held: each freed and
     * rebuilt from its own team's runs, the same figures. */
    for (int round = 0; round < 3; round++)
        for (int t = 0; t < 6; t++) {
            struct sw_job_features f = {
                .team = teams[t], .label = "l", .prio = SW_PRIO_TRAINING, .gpus = 1};
            same_as_own(&r, o, 60, &f, 0);
            same_as_own(&r, o, 60, &f, 40);
            assert_true(r.nest <= 2);
        }
    sw_runtimes_free(&r);
}

/* More teams asked in a round than estimators held: the small teams'
 * estimators are freed and rebuilt (cheap), a large team's stays held, so
 * its thousands of runs are not observed again Job after Job. */
static void test_large_team_stays_held(void **state)
{
    (void)state;
    static struct sw_runtime_obs o[80];
    struct sw_runtimes r;
    assert_int_equal(sw_runtimes_init(&r, 128, NULL), 0);
    r.max_est = 2;
    const char *small[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};
    int n = 0;
    for (int i = 0; i < 70; i++, n++) {
        char id[16];
        snprintf(id, sizeof(id), "big-%d", i);
        o[n] = obs(id, "big", "l", 1, 0, 10.0 + i, i);
        assert_int_equal(sw_runtimes_add(&r, &o[n]), 1);
    }
    for (int i = 0; i < 8; i++, n++) {
        char id[16];
        snprintf(id, sizeof(id), "small-%d", i);
        o[n] = obs(id, small[i], "l", 1, 0, 20.0 + i, 100 + i);
        assert_int_equal(sw_runtimes_add(&r, &o[n]), 1);
    }
    /* Each round: the large team asked, then two small ones (least
     * recently used: the large one, which plain LRU would free). */
    for (int t = 0; t + 1 < 8; t += 2) {
        struct sw_job_features fb = {
            .team = "big", .label = "l", .prio = SW_PRIO_TRAINING, .gpus = 1};
        same_as_own(&r, o, (size_t)n, &fb, 0);
        const struct sw_estimator *held = NULL;
        for (size_t k = 0; k < r.nteams; k++)
            if (strcmp(r.teams[k].name, "big") == 0)
                held = r.teams[k].est;
        assert_non_null(held);
        for (int u = t; u < t + 2; u++) {
            struct sw_job_features fs = {
                .team = small[u], .label = "l", .prio = SW_PRIO_TRAINING, .gpus = 1};
            same_as_own(&r, o, (size_t)n, &fs, 0);
            assert_true(r.nest <= 2);
        }
        for (size_t k = 0; k < r.nteams; k++)
            if (strcmp(r.teams[k].name, "big") == 0)
                assert_ptr_equal(r.teams[k].est, held);
    }
    sw_runtimes_free(&r);
}

/* Whom a Job learns with: a granted team, else its own namespace of its
 * cluster, which no team (a DNS label) can equal. */
static void test_learner(void **state)
{
    (void)state;
    char k[SW_NAME_MAX];
    assert_true(sw_runtime_learner(true, "cv", "onprem", "team-a", k));
    assert_string_equal(k, "cv");
    /* Ungranted namespace "cv": not the granted team "cv". */
    assert_true(sw_runtime_learner(false, "cv", "onprem", "cv", k));
    assert_string_equal(k, "onprem/cv");
    /* The same namespace name on another cluster: another learner. */
    char k2[SW_NAME_MAX];
    assert_true(sw_runtime_learner(false, "cv", "edge", "cv", k2));
    assert_string_not_equal(k, k2);
    /* Too long to key: learns nothing, given the prior. */
    char longns[64];
    memset(longns, 'n', 63);
    longns[63] = '\0';
    assert_false(sw_runtime_learner(false, longns, "onprem", longns, k));
    assert_string_equal(k, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prior_then_learned),
        cmocka_unit_test(test_annotation_corrected),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_counted_once),
        cmocka_unit_test(test_observation_rule),
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_codec_bad),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_label),
        cmocka_unit_test(test_per_team),
        cmocka_unit_test(test_learner),
        cmocka_unit_test(test_large_team_stays_held),
        cmocka_unit_test(test_new_team_prior),
        cmocka_unit_test(test_flood_evicts_own),
        cmocka_unit_test(test_estimators_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
