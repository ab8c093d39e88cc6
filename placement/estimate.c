/*
 * estimate.c - runtime beliefs from annotations, finished Jobs and a prior
 * (see estimate.h for the rules).
 */
#include "placement/estimate.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

#define LEVELS  5
#define KEY_MAX (2 * SW_NAME_MAX + 40)
#define SQRT2   1.4142135623730951

/* Running count, mean and sum of squared deviations of log runtimes. */
struct stats {
    size_t n;
    double mean, m2;
};

struct slot {
    char key[KEY_MAX];
    struct stats st;
};

struct sw_estimator {
    struct sw_estimator_params p;
    struct slot *slots; /* open addressing, linear probing; key[0] == 0: free */
    size_t cap, used;
    struct stats annotation; /* log(actual / annotated) */
};

void sw_estimator_params_default(struct sw_estimator_params *p)
{
    /* One hour, and a spread that puts 95% of the prior's mass between
     * about a minute and two days: the range of batch GPU Jobs, with no
     * preference inside it. An annotation is trusted to within a factor of
     * about 1.6 (one sigma) until annotated Jobs show how good they are. A
     * key needs five runs: fewer give a variance too noisy to act on. */
    p->prior_median_s = 3600.0;
    p->prior_sigma = 2.0;
    p->annotation_sigma = 0.5;
    p->min_runs = 5;
}

int sw_estimator_new(const struct sw_estimator_params *p, struct sw_estimator **out)
{
    *out = NULL;
    if (!(p->prior_median_s > 0 && p->prior_median_s <= SW_MAX_SECONDS) ||
        !(p->prior_sigma >= 0 && p->prior_sigma <= SW_MAX_SIGMA) ||
        !(p->annotation_sigma >= 0 && p->annotation_sigma <= SW_MAX_SIGMA) || p->min_runs == 0)
        return SW_EINVAL;
    struct sw_estimator *e = sw_calloc(1, sizeof(*e));
    if (e == NULL)
        return SW_ENOMEM;
    e->p = *p;
    e->cap = 64;
    e->slots = sw_calloc(e->cap, sizeof(*e->slots));
    if (e->slots == NULL) {
        sw_free(e);
        return SW_ENOMEM;
    }
    *out = e;
    return 0;
}

void sw_estimator_free(struct sw_estimator *e)
{
    if (e == NULL)
        return;
    sw_free(e->slots);
    sw_free(e);
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The key of features `f` at `level` (0 finest). Names are at most
 * SW_NAME_MAX - 1 bytes, so the key always fits. */
static void make_key(const struct sw_job_features *f, int level, char *key)
{
    const char *team = f->team ? f->team : "";
    const char *label = f->label ? f->label : "";
    switch (level) {
    case 0:
        snprintf(key, KEY_MAX, "0|%s|%d|%d|%s", team, (int)f->prio, f->gpus, label);
        break;
    case 1:
        snprintf(key, KEY_MAX, "1|%s|%d|%d", team, (int)f->prio, f->gpus);
        break;
    case 2:
        snprintf(key, KEY_MAX, "2|%s|%d", team, (int)f->prio);
        break;
    case 3:
        snprintf(key, KEY_MAX, "3|%s", team);
        break;
    default:
        snprintf(key, KEY_MAX, "4");
        break;
    }
}

static struct slot *find(const struct slot *slots, size_t cap, const char *key)
{
    size_t i = (size_t)hash(key) & (cap - 1);
    while (slots[i].key[0] != '\0' && strcmp(slots[i].key, key) != 0)
        i = (i + 1) & (cap - 1);
    return (struct slot *)&slots[i];
}

static int grow(struct sw_estimator *e)
{
    size_t cap = e->cap * 2;
    struct slot *s = sw_calloc(cap, sizeof(*s));
    if (s == NULL)
        return SW_ENOMEM;
    for (size_t i = 0; i < e->cap; i++)
        if (e->slots[i].key[0] != '\0')
            *find(s, cap, e->slots[i].key) = e->slots[i];
    sw_free(e->slots);
    e->slots = s;
    e->cap = cap;
    return 0;
}

static void stats_add(struct stats *st, double x)
{
    st->n++;
    double d = x - st->mean;
    st->mean += d / (double)st->n;
    st->m2 += d * (x - st->mean);
}

/* The predictive spread of the next value: sample deviation x sqrt(1 + 1/n). */
static double stats_sigma(const struct stats *st)
{
    if (st->n < 2)
        return 0;
    double var = st->m2 / (double)(st->n - 1) * (1.0 + 1.0 / (double)st->n);
    double s = sqrt(var > 0 ? var : 0);
    return s < SW_MAX_SIGMA ? s : SW_MAX_SIGMA;
}

int sw_estimator_observe(struct sw_estimator *e, const struct sw_job_features *f,
                         double annotated_s, double runtime_s)
{
    if (!(runtime_s > 0) || !isfinite(runtime_s))
        return 0; /* nothing to learn from */
    /* Make room for every key first, so that a failure changes nothing. */
    while ((e->used + LEVELS) * 2 > e->cap)
        if (grow(e) != 0)
            return SW_ENOMEM;
    double x = log(runtime_s);
    char key[KEY_MAX];
    for (int level = 0; level < LEVELS; level++) {
        make_key(f, level, key);
        struct slot *s = find(e->slots, e->cap, key);
        if (s->key[0] == '\0') {
            memcpy(s->key, key, sizeof(key));
            e->used++;
        }
        stats_add(&s->st, x);
    }
    if (annotated_s > 0 && isfinite(annotated_s))
        stats_add(&e->annotation, x - log(annotated_s));
    return 0;
}

static double clamp_median(double m)
{
    if (!(m > 1e-3))
        return 1e-3;
    return m < SW_MAX_SECONDS ? m : SW_MAX_SECONDS;
}

void sw_estimator_estimate(const struct sw_estimator *e, const struct sw_job_features *f,
                           double annotated_s, struct sw_estimate *out)
{
    memset(out, 0, sizeof(*out));
    if (annotated_s > 0 && isfinite(annotated_s)) {
        out->source = SW_EST_ANNOTATION;
        out->runs = e->annotation.n;
        if (e->annotation.n >= e->p.min_runs) {
            out->median_s = clamp_median(annotated_s * exp(e->annotation.mean));
            out->sigma = stats_sigma(&e->annotation);
        } else {
            out->median_s = clamp_median(annotated_s);
            out->sigma = e->p.annotation_sigma;
        }
        return;
    }
    char key[KEY_MAX];
    for (int level = 0; level < LEVELS; level++) {
        make_key(f, level, key);
        const struct slot *s = find(e->slots, e->cap, key);
        if (s->key[0] != '\0' && s->st.n >= e->p.min_runs) {
            out->source = SW_EST_LEARNED;
            out->median_s = clamp_median(exp(s->st.mean));
            out->sigma = stats_sigma(&s->st);
            out->runs = s->st.n;
            out->level = level;
            return;
        }
    }
    out->source = SW_EST_PRIOR;
    out->median_s = e->p.prior_median_s;
    out->sigma = e->p.prior_sigma;
}

double sw_estimate_mean(const struct sw_estimate *est)
{
    double m = est->median_s * exp(est->sigma * est->sigma / 2.0);
    return m < SW_MAX_SECONDS ? m : SW_MAX_SECONDS;
}

double sw_estimate_remaining(const struct sw_estimate *est, double done_s)
{
    double m = est->median_s, sg = est->sigma;
    if (done_s <= 0)
        return sw_estimate_mean(est);
    if (sg <= 0)
        return m > done_s ? m - done_s : 0;
    /* E[T | T > a] = exp(mu + sigma^2/2) Phi(sigma - z) / (1 - Phi(z)),
     * z = (ln a - mu) / sigma, with Phi(x) = erfc(-x / sqrt 2) / 2. */
    double z = (log(done_s) - log(m)) / sg;
    double num = 0.5 * erfc((z - sg) / SQRT2);
    double den = 0.5 * erfc(z / SQRT2);
    double r;
    if (den < 1e-250 || num <= 0)
        r = done_s * sg / (z > 1 ? z : 1); /* mean residual life far in the tail */
    else
        r = sw_estimate_mean(est) * num / den - done_s;
    if (!(r > 0))
        r = 0;
    return r < SW_MAX_SECONDS ? r : SW_MAX_SECONDS;
}

const char *sw_estimate_source_name(enum sw_estimate_source s)
{
    static const char *const names[] = {"annotation", "learned", "prior", "oracle"};
    return (unsigned)s < 4 ? names[s] : "unknown";
}
