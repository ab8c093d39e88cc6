/*
 * estimate.h - what a hub can know of a Job's runtime before it ends: the
 * Job's expected-runtime annotation when given, else what finished Jobs
 * with the same features took, else a prior; each with its uncertainty.
 *
 * Beliefs are log-normal: a median and the standard deviation of
 * log(runtime) around it. Runtimes of batch Jobs spread over orders of
 * magnitude (the Alibaba 2023 pods run from seconds to months), so the
 * spread is multiplicative and the log is where it is symmetric.
 *
 * The estimator learns online, from finished Jobs only (what a hub sees):
 * per feature key it keeps the count, mean and variance of log(runtime)
 * (Welford's update), and answers from the finest key with enough runs:
 *   team, priority, GPUs and label; then team, priority and GPUs; then
 *   team and priority; then team; then every Job.
 * Its spread is the predictive one: the sample variance times (1 + 1/n),
 * so that a key with few runs is less sure. Annotations are corrected by
 * what annotated Jobs actually took: the median ratio of actual to
 * annotated runtime and its spread, learned the same way.
 *
 * Pure: no clock, no I/O, no globals; the caller owns the estimator.
 */
#ifndef SW_PLACEMENT_ESTIMATE_H
#define SW_PLACEMENT_ESTIMATE_H

#include <stddef.h>

#include "common/error.h"
#include "placement/model.h"

/** Where an estimate came from. */
enum sw_estimate_source { SW_EST_ANNOTATION = 0, SW_EST_LEARNED, SW_EST_PRIOR, SW_EST_ORACLE };

/** A log-normal belief about a runtime. */
struct sw_estimate {
    double median_s; /* exp(mean of log runtime) */
    double sigma;    /* standard deviation of log runtime (0: exact) */
    enum sw_estimate_source source;
    size_t runs; /* finished runs it rests on (learned, annotation) */
    int level;   /* learned: 0 the finest feature key .. 4 every Job */
};

/** The features a Job is recognised by; strings are borrowed. */
struct sw_job_features {
    const char *team;
    const char *label; /* image, name prefix or resource shape; may be "" */
    enum sw_priority_class prio;
    int gpus;
};

/** The estimator's fixed choices (see docs/cost-model.md for the defaults). */
struct sw_estimator_params {
    double prior_median_s;   /* before anything is known */
    double prior_sigma;      /* the prior's spread */
    double annotation_sigma; /* an annotation's spread before any is checked */
    size_t min_runs;         /* runs a key needs before it is used */
};

/** Fills `p` with the documented defaults: 1 h, sigma 2.0, 0.5, 5 runs. */
void sw_estimator_params_default(struct sw_estimator_params *p);

struct sw_estimator;

/**
 * Creates an estimator (opaque, owned by the caller, freed with
 * sw_estimator_free). `p` is copied. Returns 0, SW_EINVAL for parameters
 * out of range (prior median not positive, a sigma outside 0..SW_MAX_SIGMA,
 * min_runs 0), or SW_ENOMEM.
 */
int sw_estimator_new(const struct sw_estimator_params *p, struct sw_estimator **out);

/** Frees an estimator. NULL is fine. */
void sw_estimator_free(struct sw_estimator *e);

/**
 * Learns from a finished Job: its features `f` (borrowed), its annotation
 * `annotated_s` (<= 0: none) and the runtime it took, `runtime_s` (> 0).
 * Returns 0 or SW_ENOMEM (the estimator is unchanged then).
 */
int sw_estimator_observe(struct sw_estimator *e, const struct sw_job_features *f,
                         double annotated_s, double runtime_s);

/**
 * The belief about a Job with features `f` and annotation `annotated_s`
 * (<= 0: none), into `out`.
 */
void sw_estimator_estimate(const struct sw_estimator *e, const struct sw_job_features *f,
                           double annotated_s, struct sw_estimate *out);

/**
 * Expected remaining runtime of a Job believed to run `est` in all, once it
 * has run `done_s` seconds without finishing: E[T - a | T > a] for T
 * log-normal. For an exact belief (sigma 0) it is max(median - a, 0); far in
 * the tail, where the normal tail underflows, the asymptote a x sigma / z.
 */
double sw_estimate_remaining(const struct sw_estimate *est, double done_s);

/** The mean of the belief: median x exp(sigma^2 / 2). */
double sw_estimate_mean(const struct sw_estimate *est);

/** "annotation", "learned", "prior" or "oracle". */
const char *sw_estimate_source_name(enum sw_estimate_source s);

#endif
