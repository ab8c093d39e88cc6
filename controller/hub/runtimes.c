/*
 * runtimes.c - finished Jobs' runtimes kept for learning, the belief the
 * engine is given, and their JSON form in Redis (runtimes.h).
 */
#include "controller/hub/runtimes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

#define MAX_GPUS 1048576.0

int sw_runtimes_init(struct sw_runtimes *r, size_t cap, const struct sw_estimator_params *p)
{
    memset(r, 0, sizeof(*r));
    if (cap == 0)
        return SW_EINVAL;
    if (p != NULL)
        r->params = *p;
    else
        sw_estimator_params_default(&r->params);
    int rc = sw_estimator_new(&r->params, &r->empty);
    if (rc != 0)
        return rc;
    /* One more than the cap: a new one goes in before the drop, as in Redis. */
    r->obs = sw_calloc(cap + 1, sizeof(*r->obs));
    r->teams = sw_calloc(cap + 1, sizeof(*r->teams));
    if (r->obs == NULL || r->teams == NULL) {
        sw_free(r->obs);
        sw_free(r->teams);
        sw_estimator_free(r->empty);
        memset(r, 0, sizeof(*r));
        return SW_ENOMEM;
    }
    r->cap = cap;
    r->max_est = SW_RUNTIMES_TEAMS_EST;
    return 0;
}

static void drop_teams(struct sw_runtimes *r)
{
    for (size_t i = 0; i < r->nteams; i++)
        sw_estimator_free(r->teams[i].est);
    r->nteams = r->nest = 0;
}

void sw_runtimes_free(struct sw_runtimes *r)
{
    if (r->teams != NULL)
        drop_teams(r);
    sw_free(r->obs);
    sw_free(r->teams);
    sw_estimator_free(r->empty);
    memset(r, 0, sizeof(*r));
}

int sw_runtimes_clear(struct sw_runtimes *r)
{
    drop_teams(r);
    r->n = 0;
    return 0;
}

bool sw_runtimes_has(const struct sw_runtimes *r, const char *id)
{
    /* A linear look: at most SW_RUNTIMES_MAX short strings, once per Job
     * that finishes. */
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->obs[i].id, id) == 0)
            return true;
    return false;
}

static struct sw_runtime_team *team_find(struct sw_runtimes *r, const char *name)
{
    /* Linear: at most SW_RUNTIMES_MAX names, once per belief or Job. */
    for (size_t i = 0; i < r->nteams; i++)
        if (strcmp(r->teams[i].name, name) == 0)
            return &r->teams[i];
    return NULL;
}

static void team_drop_est(struct sw_runtimes *r, struct sw_runtime_team *t)
{
    if (t->est != NULL) {
        sw_estimator_free(t->est);
        t->est = NULL;
        r->nest--;
    }
    t->stale = false;
}

static void features_of(const struct sw_runtime_obs *o, struct sw_job_features *f)
{
    *f = (struct sw_job_features){
        .team = o->team, .label = o->label, .prio = o->prio, .gpus = o->gpus};
}

static bool finite_in(double v, double lo, double hi)
{
    return isfinite(v) && v >= lo && v <= hi;
}

static bool name_ok(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

bool sw_runtime_obs_valid(const struct sw_runtime_obs *o)
{
    return name_ok(o->id, sizeof(o->id)) && o->id[0] != '\0' && name_ok(o->team, sizeof(o->team)) &&
           name_ok(o->label, sizeof(o->label)) && (unsigned)o->prio <= SW_PRIO_PRODUCTION &&
           o->gpus >= 1 && o->gpus <= MAX_GPUS && finite_in(o->runtime_s, 0, SW_MAX_SECONDS) &&
           o->runtime_s > 0 && finite_in(o->annotated_s, 0, SW_MAX_SECONDS) &&
           finite_in(o->predicted_s, 0, SW_MAX_SECONDS) && finite_in(o->sigma, 0, SW_MAX_SIGMA) &&
           (o->source == SW_EST_ANNOTATION || o->source == SW_EST_LEARNED ||
            o->source == SW_EST_PRIOR) &&
           o->finished_ms >= 0 && (double)o->finished_ms <= 9e15;
}

static int cmp_obs(const void *a, const void *b)
{
    const struct sw_runtime_obs *x = a, *y = b;
    if (x->finished_ms != y->finished_ms)
        return x->finished_ms < y->finished_ms ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* When full: the oldest (by finished_ms, then id: Redis's order) of the
 * team holding the most, ties to the greatest name by bytes (ZREVRANGE's
 * order in Redis), so a team flooding the history drops its own. */
static void drop_one(struct sw_runtimes *r)
{
    struct sw_runtime_team *top = NULL;
    for (size_t i = 0; i < r->nteams; i++) {
        struct sw_runtime_team *t = &r->teams[i];
        if (top == NULL || t->n > top->n || (t->n == top->n && strcmp(t->name, top->name) > 0))
            top = t;
    }
    size_t old = r->n;
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->obs[i].team, top->name) == 0 &&
            (old == r->n || cmp_obs(&r->obs[i], &r->obs[old]) < 0))
            old = i;
    r->obs[old] = r->obs[--r->n];
    /* Welford's sums cannot forget one: that team's estimator is built
     * again, once, before its next belief. */
    if (--top->n == 0) {
        team_drop_est(r, top);
        *top = r->teams[--r->nteams];
    } else if (top->est != NULL) {
        top->stale = true;
    }
}

static int add(struct sw_runtimes *r, const struct sw_runtime_obs *o, bool check)
{
    if (!sw_runtime_obs_valid(o))
        return SW_EINVAL;
    if (check && sw_runtimes_has(r, o->id))
        return 0;
    struct sw_runtime_team *t = team_find(r, o->team);
    if (t == NULL) {
        /* Teams <= observations <= cap + 1: there is room. */
        t = &r->teams[r->nteams++];
        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof(t->name), "%s", o->team);
    }
    r->obs[r->n++] = *o;
    t->n++;
    if (t->est != NULL && !t->stale) {
        struct sw_job_features f;
        features_of(o, &f);
        if (sw_estimator_observe(t->est, &f, o->annotated_s, o->runtime_s) != 0)
            t->stale = true; /* rebuilt at its next belief */
    }
    /* Counted first, then the drop (the same order as the Lua script): a
     * team that floods the history holds the most and drops its own. */
    if (r->n > r->cap)
        drop_one(r);
    return 1;
}

int sw_runtimes_add(struct sw_runtimes *r, const struct sw_runtime_obs *o)
{
    return add(r, o, true);
}

int sw_runtimes_load(struct sw_runtimes *r, struct sw_runtime_obs *o, size_t n)
{
    if (n > 1)
        qsort(o, n, sizeof(*o), cmp_obs);
    /* Only the latest cap can stay: the others are not added at all. */
    size_t from = n > r->cap ? n - r->cap : 0;
    int added = 0;
    /* Ids are unique among them (a hash's fields): only those kept
     * already are looked for, not each against the others (4,096^2). */
    bool check = r->n > 0;
    for (size_t i = from; i < n; i++) {
        int rc = add(r, &o[i], check);
        if (rc == SW_ENOMEM)
            return rc;
        added += rc == 1;
    }
    return added;
}

/* A team whose estimator is cheap to build again: few observations. At
 * most cap / SW_RUNTIMES_SMALL_TEAM teams (64 of 4,096) are not, fewer
 * than the estimators held, so the costly ones stay held. */
#define SW_RUNTIMES_SMALL_TEAM 64

/* The team's estimator from its own observations: the old one freed
 * first (never two of a team at once), and when max_est are held the
 * least recently used of another team freed, a small team's first: the
 * decisions of one round may ask for more teams than are held, and must
 * not rebuild a large team's estimator Job after Job on the hub's loop. */
static int team_build(struct sw_runtimes *r, struct sw_runtime_team *t)
{
    team_drop_est(r, t);
    if (r->nest >= r->max_est) {
        struct sw_runtime_team *lru = NULL;
        for (int pass = 0; pass < 2 && lru == NULL; pass++)
            for (size_t i = 0; i < r->nteams; i++) {
                const struct sw_runtime_team *c = &r->teams[i];
                if (c->est == NULL || (pass == 0 && c->n > SW_RUNTIMES_SMALL_TEAM))
                    continue;
                if (lru == NULL || c->used < lru->used)
                    lru = &r->teams[i];
            }
        if (lru != NULL)
            team_drop_est(r, lru);
    }
    struct sw_estimator *e = NULL;
    int rc = sw_estimator_new(&r->params, &e);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < r->n; i++) {
        const struct sw_runtime_obs *o = &r->obs[i];
        if (strcmp(o->team, t->name) != 0)
            continue;
        struct sw_job_features f;
        features_of(o, &f);
        if ((rc = sw_estimator_observe(e, &f, o->annotated_s, o->runtime_s)) != 0) {
            sw_estimator_free(e);
            return rc;
        }
    }
    t->est = e;
    t->stale = false;
    r->nest++;
    return 0;
}

int sw_runtimes_belief(struct sw_runtimes *r, const struct sw_job_features *f, double annotated_s,
                       struct sw_estimate *out)
{
    struct sw_runtime_team *t = team_find(r, f->team != NULL ? f->team : "");
    if (t == NULL) {
        /* No history of its own: the prior (never another team's). */
        sw_estimator_estimate(r->empty, f, annotated_s, out);
        return 0;
    }
    t->used = ++r->tick;
    int rc = t->est == NULL || t->stale ? team_build(r, t) : 0;
    if (rc != 0) {
        /* No history to trust now: what is known without it. */
        sw_estimator_estimate(r->empty, f, annotated_s, out);
        return rc;
    }
    sw_estimator_estimate(t->est, f, annotated_s, out);
    return 0;
}

bool sw_runtime_observation(const struct sw_job_rec *rec, struct sw_runtime_obs *out)
{
    /* Only a run the hub followed: a mirror (an annotation-only Job that
     * finished at home before any burst has none, and no start seen). */
    if (rec->state != SW_JS_SUCCEEDED || rec->runtime_counted || !rec->belief_set ||
        rec->uid[0] == '\0' || rec->mirror[0] == '\0')
        return false;
    int64_t start = rec->started_ms > 0 ? rec->started_ms : rec->dispatched_ms;
    int64_t end = rec->mirror_completed_ms > 0 ? rec->mirror_completed_ms : rec->finished_ms;
    if (start <= 0 || end <= start)
        return false;
    memset(out, 0, sizeof(*out));
    snprintf(out->id, sizeof(out->id), "%s", rec->uid);
    snprintf(out->team, sizeof(out->team), "%s", rec->team);
    snprintf(out->label, sizeof(out->label), "%s", rec->label);
    out->prio = rec->prio;
    out->gpus = rec->gpus > 0 ? rec->gpus : 1;
    out->annotated_s = rec->annotated_s;
    out->runtime_s = (double)(end - start) / 1000.0;
    out->predicted_s = rec->belief.median_s;
    out->sigma = rec->belief.sigma;
    out->source = rec->belief.source;
    out->finished_ms = rec->finished_ms > 0 ? rec->finished_ms : end;
    return sw_runtime_obs_valid(out);
}

void sw_runtime_label(const char *name, const char *generate_name, char out[SW_NAME_MAX])
{
    const char *s = generate_name != NULL && generate_name[0] != '\0' ? generate_name : name;
    size_t n = s != NULL ? strlen(s) : 0;
    /* "train-llama-0042", "eval.7", "train-" (a generateName): the run's
     * number is not its kind; "resnet50" keeps its digits. */
    for (;;) {
        while (n > 0 && (s[n - 1] == '-' || s[n - 1] == '.'))
            n--;
        size_t d = n;
        while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
            d--;
        if (d == n || d == 0 || (s[d - 1] != '-' && s[d - 1] != '.'))
            break;
        n = d;
    }
    if (n >= SW_NAME_MAX)
        n = SW_NAME_MAX - 1;
    if (n > 0)
        memcpy(out, s, n);
    out[n] = '\0';
}

double sw_runtime_obs_error(const struct sw_runtime_obs *o)
{
    if (!(o->predicted_s > 0))
        return -1;
    return fabs(o->runtime_s - o->predicted_s) / o->predicted_s;
}

static double ms3(double s)
{
    return round(s * 1000) / 1000;
}

cJSON *sw_runtime_belief_json(const struct sw_estimate *b, double annotated_s)
{
    cJSON *j = cJSON_CreateObject();
    if (j == NULL)
        return NULL;
    double p90 = fmin(b->median_s * exp(SW_DEADLINE_Z * b->sigma), SW_MAX_SECONDS);
    bool ok = cJSON_AddStringToObject(j, "source", sw_estimate_source_name(b->source)) &&
              cJSON_AddNumberToObject(j, "median_seconds", ms3(b->median_s)) &&
              cJSON_AddNumberToObject(j, "sigma", round(b->sigma * 1e4) / 1e4) &&
              cJSON_AddNumberToObject(j, "p90_seconds", ms3(p90)) &&
              cJSON_AddNumberToObject(j, "mean_seconds", ms3(sw_estimate_mean(b))) &&
              cJSON_AddNumberToObject(j, "runs", (double)b->runs) &&
              cJSON_AddNumberToObject(j, "level", b->level) &&
              cJSON_AddNumberToObject(j, "annotated_seconds", annotated_s > 0 ? annotated_s : 0);
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

cJSON *sw_runtime_obs_to_json(const struct sw_runtime_obs *o)
{
    cJSON *j = cJSON_CreateObject();
    if (j == NULL)
        return NULL;
    bool ok = cJSON_AddStringToObject(j, "id", o->id) &&
              cJSON_AddStringToObject(j, "team", o->team) &&
              cJSON_AddStringToObject(j, "label", o->label) &&
              cJSON_AddStringToObject(j, "priority", sw_priority_name(o->prio)) &&
              cJSON_AddNumberToObject(j, "gpus", o->gpus) &&
              cJSON_AddNumberToObject(j, "runtimeSeconds", o->runtime_s) &&
              cJSON_AddNumberToObject(j, "annotatedSeconds", o->annotated_s) &&
              cJSON_AddNumberToObject(j, "predictedSeconds", o->predicted_s) &&
              cJSON_AddNumberToObject(j, "sigma", o->sigma) &&
              cJSON_AddStringToObject(j, "source", sw_estimate_source_name(o->source)) &&
              cJSON_AddNumberToObject(j, "finishedMs", (double)o->finished_ms);
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int num(const cJSON *o, const char *what, const char *k, double lo, double hi, double *out,
               struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        return sw_error_set(err, SW_EPARSE, "runtime observation %s: field \"%s\": %s", what, k,
                            v == NULL ? "missing, expected a number" : "expected a number");
    if (!finite_in(v->valuedouble, lo, hi))
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"%s\": %g, expected a number from %g "
                            "to %g",
                            what, k, v->valuedouble, lo, hi);
    *out = v->valuedouble;
    return 0;
}

static int str(const cJSON *o, const char *what, const char *k, char *dst, size_t cap,
               bool nonempty, struct sw_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v))
        return sw_error_set(err, SW_EPARSE, "runtime observation %s: field \"%s\": %s", what, k,
                            v == NULL ? "missing, expected a string" : "expected a string");
    size_t n = strlen(v->valuestring);
    if (n >= cap || (nonempty && n == 0))
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"%s\": expected %s to %zu bytes", what,
                            k, nonempty ? "1" : "0", cap - 1);
    memcpy(dst, v->valuestring, n + 1);
    return 0;
}

int sw_runtime_obs_from_json(const cJSON *o, const char *what, struct sw_runtime_obs *out,
                             struct sw_error *err)
{
    const char *w = what != NULL ? what : "";
    if (!cJSON_IsObject(o))
        return sw_error_set(err, SW_EPARSE, "runtime observation %s: expected a JSON object", w);
    struct sw_runtime_obs t;
    memset(&t, 0, sizeof(t));
    char prio[32], src[32];
    double gpus, fin;
    int rc;
    if ((rc = str(o, w, "id", t.id, sizeof(t.id), true, err)) != 0 ||
        (rc = str(o, w, "team", t.team, sizeof(t.team), false, err)) != 0 ||
        (rc = str(o, w, "label", t.label, sizeof(t.label), false, err)) != 0 ||
        (rc = str(o, w, "priority", prio, sizeof(prio), true, err)) != 0 ||
        (rc = str(o, w, "source", src, sizeof(src), true, err)) != 0 ||
        (rc = num(o, w, "gpus", 1, MAX_GPUS, &gpus, err)) != 0 ||
        (rc = num(o, w, "runtimeSeconds", 0, SW_MAX_SECONDS, &t.runtime_s, err)) != 0 ||
        (rc = num(o, w, "annotatedSeconds", 0, SW_MAX_SECONDS, &t.annotated_s, err)) != 0 ||
        (rc = num(o, w, "predictedSeconds", 0, SW_MAX_SECONDS, &t.predicted_s, err)) != 0 ||
        (rc = num(o, w, "sigma", 0, SW_MAX_SIGMA, &t.sigma, err)) != 0 ||
        (rc = num(o, w, "finishedMs", 0, 9e15, &fin, err)) != 0)
        return rc;
    if (what != NULL && strcmp(t.id, what) != 0)
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"id\": \"%s\", expected the entry's "
                            "own id",
                            w, t.id);
    if (!(t.runtime_s > 0))
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"runtimeSeconds\": expected a "
                            "runtime above 0",
                            w);
    if (gpus != floor(gpus))
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"gpus\": expected a whole number", w);
    if (sw_priority_parse(prio, &t.prio) != 0)
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"priority\": \"%s\", expected "
                            "best-effort, development, training or production",
                            w, prio);
    if (strcmp(src, "annotation") == 0)
        t.source = SW_EST_ANNOTATION;
    else if (strcmp(src, "learned") == 0)
        t.source = SW_EST_LEARNED;
    else if (strcmp(src, "prior") == 0)
        t.source = SW_EST_PRIOR;
    else
        return sw_error_set(err, SW_EPARSE,
                            "runtime observation %s: field \"source\": \"%s\", expected "
                            "annotation, learned or prior",
                            w, src);
    t.gpus = (int)gpus;
    t.finished_ms = (int64_t)fin;
    *out = t;
    return 0;
}

bool sw_runtime_learner(bool team_granted, const char *team, const char *cluster, const char *ns,
                        char out[SW_NAME_MAX])
{
    int n = team_granted
                ? snprintf(out, SW_NAME_MAX, "%s", team ? team : "")
                : snprintf(out, SW_NAME_MAX, "%s/%s", cluster ? cluster : "", ns ? ns : "");
    if (n <= 0 || n >= SW_NAME_MAX) {
        out[0] = '\0';
        return false;
    }
    return true;
}
