/*
 * gate.h - data gating for bursts, and outputs flowing back.
 *
 * "Make these inputs present and verified in region R, then call me back
 * with where they are, or with why not" (sw_gate_ensure), with an estimate
 * of the bytes and seconds that needs (sw_gate_estimate), which placement
 * weighs. And for a running Job, its outputs and checkpoints replicated
 * back to the origin store continuously, and once more at the end
 * (sw_gate_outputs_start / sw_gate_outputs_finish).
 *
 * The hub calls these from its loop. The copying runs on the gate's small
 * shared pool of worker threads (sw_gate_set_workers), each piece of work
 * with a private loop (it blocks on listings and the journal); work beyond
 * the pool's size waits its turn (sw_gate_pool_stats), taken fairly across
 * tenants (sw_gate_fair_pick). The result comes
 * back to the hub's loop through a uv_async, immutable: the callback
 * receives it and it is freed when the callback returns.
 */
#ifndef SW_REPLICATION_GATE_H
#define SW_REPLICATION_GATE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/error.h"
#include "replication/s3.h"

/** A store the gate may use; `cfg.name` names it, `cfg.region` places it. */
struct sw_gate_store {
    struct sw_s3_config cfg;
};

/**
 * One input of a Job: s3://bucket/prefix on a named store, and the bucket
 * it goes to in the target region's store (NULL: the same name; bucket
 * names are global in AWS, so the same name is often another's bucket).
 */
struct sw_gate_input {
    const char *store;
    const char *bucket;
    const char *prefix;
    const char *target_bucket;
};

/**
 * A gating request. Everything is copied by sw_gate_ensure / estimate.
 * The inputs are mirrored to the store of `region` under the same prefix,
 * in each input's target_bucket (or the same bucket).
 */
struct sw_gate_request {
    const char *job;    /* "namespace/name", for names and messages */
    const char *region; /* where the Job will run */
    const struct sw_gate_store *stores;
    size_t nstores;
    const struct sw_gate_input *inputs;
    size_t ninputs;
    const char *redis_url;      /* journal; NULL runs without one */
    double bytes_per_s;         /* bandwidth cap for this Job's copies; 0 = none */
    double assumed_bytes_per_s; /* for estimates; 0 = 100 MB/s */
};

/** Where one input is, in region R. */
struct sw_gate_location {
    char store[64];
    char endpoint[512];
    char url[1200]; /* s3://bucket/prefix */
    int64_t objects;
    int64_t bytes;
};

/** The answer; borrowed during the callback. */
struct sw_gate_result {
    int rc;              /* 0: every input is present and verified in the region */
    struct sw_error err; /* why not, naming the input, bucket, key and S3 code */
    const struct sw_gate_location *locations; /* one per input, when rc == 0 */
    size_t nlocations;
    int64_t bytes_to_copy; /* estimate: bytes missing in the region (all inputs) */
    int64_t objects_to_copy;
    double seconds; /* estimate: seconds at the assumed rate; or time taken */
};

typedef void (*sw_gate_cb)(const struct sw_gate_result *res, void *ctx);

/**
 * Starts making the inputs present and verified in req->region. `cb` runs
 * once on `loop` (borrowed). Returns 0, or SW_EINVAL naming what is wrong
 * with the request (no store in the region, unknown store), or SW_ENOMEM.
 */
int sw_gate_ensure(uv_loop_t *loop, const struct sw_gate_request *req, sw_gate_cb cb, void *ctx,
                   struct sw_error *err);

/** As sw_gate_ensure, but only estimates (nothing is copied). */
int sw_gate_estimate(uv_loop_t *loop, const struct sw_gate_request *req, sw_gate_cb cb, void *ctx,
                     struct sw_error *err);

struct sw_gate_outputs;

/**
 * Replicates a running Job's outputs back to its origin: `from` (on the
 * remote store) to `to` (the origin store), every `interval_s` seconds,
 * until sw_gate_outputs_finish or sw_gate_outputs_stop. Each round's
 * outcome is reported through `on_round` (may be NULL) on `loop`; a round
 * that could not start (no journal connection) is reported there with its
 * error, and the next round tries again. Each round is one piece of work
 * for the pool, queued again once the interval has passed. Each
 * `attempt` of a Job has a journal of its own (gate-NS.NAME-out-aN), so
 * one attempt's rounds never abort another's journaled uploads while they
 * run; before its first round, attempt N aborts what the journals of
 * attempts 1..N-1 still name (their rounds will not run again), so the
 * caller runs one attempt's rounds at a time. No round aborts an upload
 * the journals do not name, whatever is open under the target prefix.
 */
int sw_gate_outputs_start(uv_loop_t *loop, const struct sw_gate_store *stores, size_t nstores,
                          const char *job, int attempt, const struct sw_gate_input *from,
                          const struct sw_gate_input *to, const char *redis_url, double interval_s,
                          sw_gate_cb on_round, void *ctx, struct sw_gate_outputs **out,
                          struct sw_error *err);

/**
 * Stops the periodic rounds, runs a last one (the Job has ended: its final
 * outputs must reach the origin), and reports it through `done` on the
 * loop; the handle is freed after `done` returns.
 */
void sw_gate_outputs_finish(struct sw_gate_outputs *o, sw_gate_cb done, void *ctx);

/**
 * Stops the rounds of an attempt given up: no round starts any more, not
 * even a last one, so nothing the attempt writes after this call is copied
 * on its account. A round already under way runs to its end (what it
 * listed was written before); a round still waiting for a worker never
 * starts. `done` runs on the loop once no round of the attempt runs, with
 * that round's result, or rc 0 and nothing copied when none was under way;
 * the handle is freed after `done` returns.
 */
void sw_gate_outputs_stop(struct sw_gate_outputs *o, sw_gate_cb done, void *ctx);

/**
 * Sets how many worker threads the gate's pool has (1 to 64; 4 when never
 * set), before its first use: every estimate, ensure and outputs round of
 * every Job shares them, and each holds at most one Redis connection.
 * Returns 0, SW_EINVAL out of range, or SW_ESTATE when the pool already
 * runs with another size.
 */
int sw_gate_set_workers(int n);

/** The pool, as seen now. */
struct sw_gate_pool_stats {
    int workers;    /* threads */
    size_t running; /* pieces of work on a thread */
    size_t queued;  /* pieces of work waiting for a free thread */
};

/** Fills *st (any thread). */
void sw_gate_pool_stats(struct sw_gate_pool_stats *st);

/** One tenant of the gate's pool, as the fair pick sees it. */
struct sw_gate_tenant_load {
    size_t running; /* its pieces of work on a worker */
    size_t waiting; /* its pieces of work queued */
};

/**
 * Which tenant's queue a free worker takes from. A tenant is the Jobs of
 * one namespace of one cluster (a Job key "cluster/namespace/name" without
 * its name); each has its own queue, oldest first. Of the `n` tenants, in
 * the order they became known, the one with work waiting and the fewest
 * pieces running is taken, looking from `cursor` on (the tenant after the
 * one served last) and wrapping, so among equals the tenant served longest
 * ago goes first: one namespace's many Jobs never hold every worker, nor,
 * with a single worker, every turn, while another namespace's Job waits.
 * Returns an index below n, or n when no tenant has work waiting. Pure;
 * O(n).
 */
size_t sw_gate_fair_pick(const struct sw_gate_tenant_load *t, size_t n, size_t cursor);

#endif
