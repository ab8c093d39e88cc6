/*
 * annotations.h - what a Job asks of spillway: its spillway.io/ annotations
 * and its GPU shape, read from the Job object. Pure: no I/O, no clock (the
 * Job's creation time is a parameter).
 *
 * The annotations (docs/annotations.md has the full reference):
 *
 *   spillway.io/burst                auto | never | cloud-first (opts the Job in)
 *   spillway.io/inputs               s3://bucket/prefix[,s3://bucket/prefix...] (1 to 4)
 *   spillway.io/outputs              s3://bucket/prefix
 *   spillway.io/deadline             RFC 3339 time, or a duration after creation
 *   spillway.io/max-price            dollars per GPU-hour, e.g. 3.50
 *   spillway.io/expected-runtime     duration
 *   spillway.io/checkpoint-interval  duration
 *   spillway.io/team                 DNS-1123 label
 *   spillway.io/priority             best-effort | development | training | production
 *   spillway.io/on-cluster-loss      requeue | wait
 *   spillway.io/gpu-share            a share of one GPU per pod, above 0 and at most 1 ("0.25")
 *
 * Durations are Go's time.ParseDuration spelling restricted to what a
 * person writes: "2h30m", "45m", "90s", "1.5h", "500ms" (sw_duration_parse).
 */
#ifndef SW_CONTROLLER_HUB_ANNOTATIONS_H
#define SW_CONTROLLER_HUB_ANNOTATIONS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "placement/model.h"

#define SW_ANN_PREFIX     "spillway.io/"
#define SW_ANN_BURST      "spillway.io/burst"
#define SW_ANN_INPUTS     "spillway.io/inputs"
#define SW_ANN_OUTPUTS    "spillway.io/outputs"
#define SW_ANN_DEADLINE   "spillway.io/deadline"
#define SW_ANN_MAX_PRICE  "spillway.io/max-price"
#define SW_ANN_RUNTIME    "spillway.io/expected-runtime"
#define SW_ANN_CHECKPOINT "spillway.io/checkpoint-interval"
#define SW_ANN_TEAM       "spillway.io/team"
#define SW_ANN_PRIORITY   "spillway.io/priority"
#define SW_ANN_ON_LOSS    "spillway.io/on-cluster-loss"
#define SW_ANN_GPU_SHARE  "spillway.io/gpu-share"

#define SW_ANN_MAX_INPUTS 4
/** The highest price spillway.io/max-price accepts, dollars per GPU-hour. */
#define SW_ANN_PRICE_CAP 10000.0
/** The longest duration, Go's: (2^63 - 1) ns, about 292 years. */
#define SW_DURATION_MAX_S 9223372036.854775807

/** An S3 location in the Job's origin region: no host, no port. */
struct sw_s3_uri {
    char bucket[64];  /* a valid S3 bucket name, 3-63 characters */
    char prefix[512]; /* may be "" */
};

/** A Job's spillway settings, defaults filled in. */
struct sw_burst_spec {
    enum sw_burst_mode burst; /* SW_BURST_NEVER when the annotation is absent */
    bool managed;             /* spillway.io/burst is present and not "never" */
    int n_inputs;
    struct sw_s3_uri inputs[SW_ANN_MAX_INPUTS];
    bool has_outputs;
    struct sw_s3_uri outputs;
    double deadline;             /* unix seconds; 0 none */
    double max_price;            /* dollars per GPU-hour; 0 none */
    double runtime_s;            /* 0 unknown */
    double checkpoint_s;         /* 0 none */
    char team[64];               /* "" unknown: the caller uses the namespace's */
    enum sw_priority_class prio; /* default training */
    bool prio_set;               /* spillway.io/priority was given */
    bool requeue_on_loss;        /* default true */
    /* spillway.io/gpu-share in thousandths of a GPU (1 to 1000); 0 when
     * absent. 1000 asks a whole GPU, as without the annotation. */
    int gpu_milli;
};

/**
 * Parses a Job's metadata.annotations (borrowed; NULL when the Job has
 * none) into *out. `created` is the Job's creationTimestamp in unix seconds,
 * the origin of a relative deadline.
 *
 * Without spillway.io/burst the Job is not spillway's: returns 0 with
 * managed false and the other annotations unread, so that no Event is ever
 * raised about a Job that did not opt in. With it (even "never"), every
 * spillway.io/ annotation below is checked; on the first bad one returns
 * SW_EINVAL with a message of exactly this form:
 *   annotation "spillway.io/max-price": value "abc": expected a price in dollars per GPU-hour, e.g.
 * "3.50" sometimes with the reason in parentheses at the end. The value is quoted with '"', '\' and
 * control characters escaped and cut at 100 bytes. Unknown spillway.io/ keys are ignored (forward
 * compatibility); an annotation given twice in the object is an error. On error *out may hold part
 * of the annotations.
 */
int sw_burst_spec_parse(const cJSON *annotations, double created, struct sw_burst_spec *out,
                        struct sw_error *err);

/**
 * Parses a Go-style duration into *seconds: one or more NUMBER UNIT, units
 * h, m, s, ms, each at most once and largest first ("1h30m", "45m", "90s",
 * "1.5h", "1m30.5s", "500ms"). A NUMBER is digits with an optional
 * fraction (".5h" and "5.h" are refused). No sign, no spaces. The total
 * must be above 0 and at most SW_DURATION_MAX_S. Unlike Go, "0", "1h1h"
 * and "30m1h" are refused. Returns 0, SW_EINVAL (bad spelling or 0) or
 * SW_ERANGE (too long); *seconds is set only on success.
 */
int sw_duration_parse(const char *s, double *seconds);

/**
 * Parses "s3://bucket" or "s3://bucket/prefix": the bucket a valid S3
 * bucket name (3-63 of a-z, 0-9, '.', '-'; starting and ending with a
 * letter or digit; no "..", not an IP address, not starting with "xn--"
 * nor ending with "-s3alias" or "--ol-s3"), the prefix at most 511 bytes
 * of printable text, not starting with '/'. Returns 0 or SW_EINVAL with
 * the reason in *why (static text; `why` may be NULL).
 */
int sw_s3_uri_parse(const char *s, struct sw_s3_uri *out, const char **why);

/**
 * Why the `n` bytes at `b` (NUL-terminated at n) are not a valid S3 bucket
 * name ("bucket name: expected 3 to 63 characters", ...), or NULL when
 * they are.
 */
const char *sw_s3_bucket_problem(const char *b, size_t n);

/**
 * Formats `u` as "s3://bucket/prefix" ("s3://bucket/" for an empty
 * prefix) into `buf` (capacity `len`). Returns 0, or SW_ETOOBIG when it
 * does not fit (buf then holds a cut, NUL-terminated string).
 */
int sw_s3_uri_format(const struct sw_s3_uri *u, char *buf, size_t len);

/**
 * The GPU shape of a batch/v1 Job object (borrowed). *pods: spec.parallelism
 * (default 1), or spec.completions when that is set and smaller.
 * *gpus_per_pod: the nvidia.com/gpu request of spec.template.spec computed
 * as the scheduler computes a pod's request: the larger of the sum over
 * the containers plus the restartable init containers (sidecars), and each
 * plain init container's request plus the sidecars started before it; a
 * container's request falls back to its limit. A Job requesting no GPU
 * gives 0 (not an error). A missing template or containers list, or a
 * value of the wrong type or range, is SW_EINVAL naming the Job
 * ("Job NAMESPACE/NAME") and the field.
 */
int sw_job_gpu_shape(const cJSON *job, int *pods, int *gpus_per_pod, struct sw_error *err);

/** What a Job's pods ask of GPUs, as the engine takes it (placement/model.h). */
struct sw_gpu_ask {
    int pods;
    /* nvidia.com/gpu per pod, or with mig_profile set, slices of it */
    int gpus_per_pod;
    /* "1g.10gb" when the pods ask nvidia.com/mig-1g.10gb; "" otherwise */
    char mig_profile[SW_MIG_PROFILE_MAX];
    /* a share of one GPU per pod in thousandths (1 to 999); 0: whole GPUs */
    int gpu_milli;
};

/**
 * The GPU ask of a Job (borrowed) whose annotations gave `spec`: its shape
 * (sw_job_gpu_shape), or when its pod template asks for MIG slices
 * (nvidia.com/mig-<profile>, summed as the scheduler sums a pod's
 * request) the profile and slices per pod; and spillway.io/gpu-share as a
 * share of its one GPU per pod. SW_EINVAL naming the Job and the field
 * when a resource "nvidia.com/mig-..." names no MIG profile (expected
 * "<n>g.<m>gb", e.g. nvidia.com/mig-1g.10gb), when pods ask for two
 * profiles or for MIG slices and nvidia.com/gpu at once, or when a share
 * is given with MIG slices or with other than one nvidia.com/gpu per pod.
 */
int sw_job_gpu_ask(const cJSON *job, const struct sw_burst_spec *spec, struct sw_gpu_ask *out,
                   struct sw_error *err);

#endif
