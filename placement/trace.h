/*
 * trace.h - parsers for the simulator's input traces, from memory buffers.
 *
 * Three formats: a plain CSV of jobs (submit, gpus, duration, team and an
 * optional deadline), the Alibaba GPU 2023 pod list, and the skypilot
 * spot-traces JSON used for spot preemptions. The parsers take a buffer
 * and a name for it (the file name, for errors); reading files is the
 * caller's business. Errors name the input, the line and the field, e.g.
 *   jobs.csv:12: field "gpus": expected a non-negative integer, got "x"
 */
#ifndef SW_PLACEMENT_TRACE_H
#define SW_PLACEMENT_TRACE_H

#include <stddef.h>

#include "common/error.h"
#include "placement/model.h"

/** One job of a trace. Times are seconds from the trace's start. */
struct sw_trace_job {
    char name[SW_NAME_MAX];
    char team[SW_NAME_MAX];
    enum sw_priority_class prio;
    double submit;
    double duration;
    int gpus;
    double deadline; /* absolute; 0 when none */
    /* Features a hub could learn runtimes by: an image, name prefix or
     * resource shape (Alibaba: "c<cpu_milli>-m<memory_mib>-g<gpu_milli>"). */
    char label[SW_NAME_MAX];
    double expected_runtime; /* the Job's runtime annotation; 0 when none */
    double input_gb;         /* input size; < 0 when the trace does not say */
    double gpu_share;        /* Alibaba gpu_milli / 1000 for a fractional GPU, else 1 */
    /* A MIG profile ("1g.10gb"; empty: whole GPUs or a share): `gpus` are
     * then slices of it. */
    char mig_profile[SW_MIG_PROFILE_MAX];
};

/** A parsed job trace; free with sw_trace_free. */
struct sw_trace {
    struct sw_trace_job *jobs; /* owned, sorted by submit time */
    size_t n;
    size_t cap;
    size_t skipped; /* rows that were not GPU jobs or never ran */
};

/** The formats sw_trace_parse understands. */
enum sw_trace_format { SW_TRACE_AUTO = 0, SW_TRACE_CSV, SW_TRACE_ALIBABA };

/**
 * Parses `len` bytes of `buf` (borrowed) in `format` (AUTO looks at the
 * header) into `out`, which the caller zero-initialises and later frees with
 * sw_trace_free (also after a failure). `what` names the input in errors.
 *
 * CSV: a header naming at least `submit`, `gpus`, `duration`, `team`, and
 * optionally `deadline`, `name`, `priority`, `label`, `expected_runtime`
 * (the runtime annotation), `input_gb` and `mig_profile` (a MIG profile such
 * as 1g.10gb: `gpus` then counts its slices); one job per line.
 * Alibaba: the header `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,
 * qos,pod_phase,creation_time,deletion_time,scheduled_time`; pods without
 * GPUs or never scheduled are skipped (counted in `skipped`); the runtime is
 * deletion - scheduled time; a fractional GPU counts as a whole one (its
 * share is kept in `gpu_share`); the label is the pod's resource shape; QoS maps
 * to priority: Guaranteed production, LS training, Burstable development,
 * BE best-effort.
 */
int sw_trace_parse(const char *buf, size_t len, enum sw_trace_format format, const char *what,
                   struct sw_trace *out, struct sw_error *err);

/** Frees the jobs of `t` and zeroes it. */
void sw_trace_free(struct sw_trace *t);

/** A spot availability or preemption trace: instances alive at each tick. */
struct sw_spot_trace {
    double gap_s;
    int *alive; /* owned */
    size_t n;
};

/**
 * Parses skypilot spot-traces JSON `{"metadata":{"gap_seconds":N},"data":[...]}`
 * into `out` (caller zero-initialises, frees with sw_spot_trace_free).
 */
int sw_spot_trace_parse(const char *buf, size_t len, const char *what, struct sw_spot_trace *out,
                        struct sw_error *err);

/** Frees `t` and zeroes it. */
void sw_spot_trace_free(struct sw_spot_trace *t);

/**
 * The first preemption strictly after `t` seconds for an instance whose
 * life started at offset `offset` seconds into the trace (the trace loops).
 * A preemption is a tick where the alive count drops. Returns INFINITY when
 * the trace has no preemption at all.
 */
double sw_spot_trace_next_preemption(const struct sw_spot_trace *tr, double offset, double t);

#endif
