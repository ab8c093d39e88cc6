/*
 * replicator.h - replication rules: copy s3://bucket/prefix of a source
 * store to one or more targets (one per region), incrementally, verified,
 * resumable from a journal in Redis, with bounded concurrency and
 * bandwidth, progress, and the RPO of every target.
 *
 * Journal (Redis, all keys under sw:repl:RULE:):
 *   uploads        hash "TARGET\nKEY" -> multipart upload id, written (and
 *                  answered) before the first part is sent, else the
 *                  upload is aborted unused; removed once the upload is
 *                  completed or aborted. A run starts by aborting what a
 *                  crashed run left there, and only that: an upload open
 *                  under the target prefix that the journal does not name
 *                  is someone else's (the prefix is shared) and is left
 *                  alone.
 *   done:TARGET    hash KEY -> "SOURCE-ETAG SIZE SHA256" of each verified
 *                  copy; a rerun skips objects whose source ETag and size
 *                  match and whose target is still there with that size.
 *   rpo:TARGET     "OLDEST-PENDING-MS LAST-RUN-MS" after each run.
 * Without Redis the same run works from HEAD requests alone (objects whose
 * sw-sha256 metadata match on both sides are skipped), and nothing is
 * aborted at start: an upload a crash left open stays until the bucket's
 * lifecycle rule (AbortIncompleteMultipartUpload) removes it.
 */
#ifndef SW_REPLICATION_REPLICATOR_H
#define SW_REPLICATION_REPLICATOR_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "replication/copy.h"
#include "replication/s3.h"

#define SW_REPL_MAX_TARGETS 8

/** One target of a rule. Borrowed. */
struct sw_repl_target {
    const char *name; /* store name, e.g. "us-east-1" */
    struct sw_s3 *s3;
    const char *bucket;
    const char *prefix; /* source prefix is replaced by this one */
};

/** A rule. Borrowed for the duration of a run. */
struct sw_repl_rule {
    const char *name;
    const char *src_name;
    struct sw_s3 *src;
    const char *bucket;
    const char *prefix;
    struct sw_repl_target targets[SW_REPL_MAX_TARGETS];
    size_t ntargets;
    int immutable;         /* model registry: never overwrite a differing object */
    int concurrency;       /* objects in flight; 0 = 16 */
    int part_concurrency;  /* parts in flight per object; 0 = 4 */
    size_t part_size;      /* 0 = 16 MiB */
    double bytes_per_s;    /* 0 = unlimited */
    int allow_server_copy; /* server-side copy when the endpoints match */
};

/** Progress, reported as it happens. */
struct sw_repl_progress {
    int64_t objects_total; /* object x target pairs to copy this run */
    int64_t objects_done;
    int64_t bytes_total;
    int64_t bytes_done;
};

/** What a run did. */
struct sw_repl_stats {
    int64_t listed;       /* source objects */
    int64_t bytes_listed; /* their total size */
    int64_t copied;       /* object x target copies made and verified */
    int64_t skipped;      /* already identical */
    int64_t failed;
    int64_t bytes_copied;
    int64_t aborted_uploads; /* journaled uploads of a crashed run, aborted at start */
    int64_t elapsed_ms;
    int64_t rpo_ms[SW_REPL_MAX_TARGETS]; /* age of the oldest unreplicated object, 0 if none */
    struct sw_error first_error;
};

typedef void (*sw_repl_progress_cb)(const struct sw_repl_progress *p, void *ctx);

/**
 * Aborts the multipart uploads the journal of `rule` names (a crashed
 * run's) on the rule's targets, removing each entry once its upload is
 * gone, and counts them in *aborted (may be NULL). Never lists the
 * targets: an upload the journal does not name is not aborted. An entry
 * whose abort fails stays for the next call. `journal` NULL does nothing.
 * Blocking. Returns 0, or the error of reading the journal.
 */
int sw_repl_recover(const struct sw_repl_rule *rule, redisContext *journal, int64_t *aborted,
                    struct sw_error *err);

/**
 * Runs a rule once to completion on the stores' loop (blocking: for the
 * CLI, tests and a worker thread). `journal` is a connected Redis context
 * or NULL. Returns 0 when every object is replicated and verified, else the
 * first error (stats->first_error says which object and why).
 *
 * Each target is merged with the source page by page and planned in
 * batches (sw_repl_batches; the done records of a batch read by one
 * HMGET), the copies of a batch running while the next is listed and
 * planned: memory is a page of each side, two batches and the copies in
 * flight, whatever the prefix holds. A listing refused partway (see
 * sw_repl_compare) fails the run after the copies already started have
 * ended (verified and journaled); nothing queued is started.
 */
int sw_repl_run_once(const struct sw_repl_rule *rule, redisContext *journal,
                     sw_repl_progress_cb progress, void *ctx, struct sw_repl_stats *stats,
                     struct sw_error *err);

/**
 * Estimates what replicating `rule` would move now: the objects and bytes
 * missing or different on its slowest target, and the seconds that takes
 * at `bytes_per_s` (measured or configured). Blocking; merges both
 * listings page by page and reads the journal batch by batch, as a run.
 */
int sw_repl_estimate(const struct sw_repl_rule *rule, redisContext *journal, double bytes_per_s,
                     int64_t *objects, int64_t *bytes, double *seconds, struct sw_error *err);

/**
 * Why a listed `key` cannot be copied under `prefix`, or NULL: it must start
 * with the prefix asked for (anything else is a malformed answer: the rest
 * of the key is taken after the prefix's length), and be a key the S3
 * client sends (sw_s3_key_problem: not empty, at most 1,024 bytes, no "."
 * or ".." segment). A key such as "out/attempt-1/../../team-b/x", which a
 * Job's pod can write in the cloud, would otherwise be copied home outside
 * its prefix by a store that keeps objects as files. Every listing a run
 * lists (source and targets) is checked; the run fails with SW_EPARSE
 * naming the key. Static text.
 */
const char *sw_repl_key_problem(const char *prefix, const char *key);

/**
 * The key a listed source `key` under `src_prefix` is copied to under
 * `dst_prefix`: the destination prefix and the rest of the key. Both are
 * checked: the source key by sw_repl_key_problem, and the joined key by
 * sw_s3_key_problem, since prefixes that differ in their trailing '/' can
 * join a clean key into a dot segment ("in/a" and "out/" make "in/a../x"
 * into "out/../x"). Pure. Returns 0 and *out (new; sw_free), or SW_EPARSE
 * naming the key and why, or SW_ENOMEM.
 */
int sw_repl_dst_key(const char *src_prefix, const char *dst_prefix, const char *key, char **out,
                    struct sw_error *err);

/**
 * A page source for sw_repl_compare: fills *page with the next page of a
 * listing (new: the comparison frees it with sw_s3_list_free before asking
 * for the next), with page->truncated 0 on the last one. Returns 0 or an
 * error, which ends the comparison.
 */
typedef int (*sw_repl_page_fn)(void *ctx, struct sw_s3_list *page, struct sw_error *err);

/**
 * Called by sw_repl_compare in key order: for each source object, with its
 * destination key and the target's object of that key or NULL; and for
 * each target object no source object is copied to, with `src` NULL,
 * `dst_key` its key and `there` the object. All borrowed for the call. A
 * non-zero return stops the comparison.
 */
typedef int (*sw_repl_compare_cb)(const struct sw_s3_object *src, const char *dst_key,
                                  const struct sw_s3_object *there, void *ctx);

/**
 * The comparison of one target with the source a plan starts from (pure:
 * the pages come from the sources given; no I/O of its own). A merge-join
 * of the source listing under `src_prefix` and the target's under
 * `dst_prefix`, one page of each side in memory at a time: ListObjectsV2
 * lists keys in UTF-8 binary order, and replacing the source prefix by the
 * target's keeps that order. Every key of a page is checked when the page
 * arrives (sw_repl_key_problem, and after the key before it, across pages
 * too: a listing that goes backwards or repeats a key is refused, never
 * miscompared); each source object's destination key is built
 * (sw_repl_dst_key) and matched. A side that lists more than 1,000,000
 * objects is refused (SW_ETOOBIG, as a copy refuses such a prefix), and
 * one that answers more than 16 empty pages in a row, each saying more
 * follow, is malformed (SW_EPARSE): a hostile store bounds nothing itself.
 * Returns 0, the first refusal (SW_EPARSE naming the side and the key),
 * SW_ENOMEM, a page source's error, or what `cb` returned.
 */
int sw_repl_compare(const char *src_prefix, sw_repl_page_fn src_pages, void *src_ctx,
                    const char *dst_prefix, sw_repl_page_fn dst_pages, void *dst_ctx,
                    sw_repl_compare_cb cb, void *ctx, struct sw_error *err);

/**
 * One source object of a batch (sw_repl_batches), with what the target
 * lists at its destination key: copies of what the pages held, so that a
 * batch outlives them. A batch function may take `src_key` and `dst_key`
 * (setting them NULL); the rest are freed after it returns.
 */
struct sw_repl_item {
    char *src_key; /* owned */
    char *dst_key; /* owned */
    char etag[SW_S3_ETAG_MAX];
    int64_t size;
    int64_t last_modified_ms;
    int there;          /* the target lists dst_key */
    int64_t there_size; /* its size there */
};

/** Handed each batch in key order; a non-zero return stops the merge. */
typedef int (*sw_repl_batch_fn)(struct sw_repl_item *items, size_t n, void *ctx,
                                struct sw_error *err);

/**
 * The source objects of sw_repl_compare's merge, in batches of at most
 * `batch` (at least 1), in key order: `fn` gets each batch as soon as it is
 * full, and the last, shorter one when the source ends (none when the
 * source is empty). Target objects no source object is copied to are
 * skipped. What it holds at once is a page of each side and one batch,
 * whatever the listings hold; the merge's refusals are sw_repl_compare's,
 * and a refusal on a later page comes after the batches before it were
 * handed on. Pure, as sw_repl_compare. Returns 0, the merge's error, or
 * what `fn` returned.
 */
int sw_repl_batches(const char *src_prefix, sw_repl_page_fn src_pages, void *src_ctx,
                    const char *dst_prefix, sw_repl_page_fn dst_pages, void *dst_ctx, size_t batch,
                    sw_repl_batch_fn fn, void *ctx, struct sw_error *err);

/** A record of the journal's done:TARGET hash: "SOURCE-ETAG SIZE SHA256". */
struct sw_repl_done {
    char etag[SW_S3_ETAG_MAX]; /* "-" for a source without an ETag */
    int64_t size;
    char sha[65];
};

/**
 * Reads a done record (`v` may be NULL: none). Returns 0, or -1 when there
 * is none or it is unreadable (which only costs a check on the target).
 * Pure.
 */
int sw_repl_done_parse(const char *v, struct sw_repl_done *out);

/** What a run does with one object x target pair (sw_repl_plan). */
enum sw_repl_plan {
    SW_REPL_COPY,  /* not on the target: copy it */
    SW_REPL_SKIP,  /* copied and verified earlier from this source version, still there */
    SW_REPL_CHECK, /* on the target: compare the checksums by HEAD */
};

/**
 * The decision a run makes from the listings and the journal alone: `rec`
 * is the item's done record (NULL: none). When the record names the
 * item's source version (its ETag, or "-" without one, and size),
 * `known_sha` gets its SHA-256 (the copy is verified against it), else
 * "". Pure.
 */
enum sw_repl_plan sw_repl_plan(const struct sw_repl_item *it, const struct sw_repl_done *rec,
                               char known_sha[65]);

#endif
