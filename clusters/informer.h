/*
 * informer.h - list+watch of one kind on one cluster, with a local cache.
 *
 * client-go's reflector and store in one: the informer lists the objects
 * (paged), then watches from the list's resourceVersion with
 * allowWatchBookmarks, applying each event to its cache and telling a
 * handler. When the watch ends or the connection drops (an API server
 * restart, say) it watches again from the last resourceVersion it saw, so
 * no event is missed or seen twice; when that version is too old (410 Gone)
 * it lists again and reports the differences as events.
 *
 * Cached objects are stripped of metadata.managedFields (as client-go's
 * TransformStripManagedFields) and may be filtered by a predicate. With a
 * `compact` callback (client-go's SetTransform) the cache keeps what it
 * returns, a record of the fields its readers use (clusters/record.h),
 * and each listed or watched object's JSON is freed as soon as it is
 * converted; the cached "objects" below are then those records.
 */
#ifndef SW_CLUSTERS_INFORMER_H
#define SW_CLUSTERS_INFORMER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clusters/rest.h"
#include "clusters/watch.h"

struct sw_informer;

/**
 * A change to the cache: ADDED (old NULL), MODIFIED (old and obj), DELETED
 * (obj is the last known state; with `compact`, the cached record). `key` is
 * "namespace/name" or "name". old and obj are cJSON objects, or records with
 * `compact`. All borrowed, valid during the call. Handlers should only
 * enqueue the key.
 */
typedef void (*sw_informer_handler)(struct sw_informer *inf, enum sw_watch_type type,
                                    const char *key, const void *old, const void *obj, void *ctx);

/** Keeps only the objects for which this returns true (NULL keeps all). */
typedef bool (*sw_informer_filter)(const cJSON *obj, void *ctx);

struct sw_informer_opts {
    enum sw_kube_kind kind;
    const char *ns; /* NULL or "": all namespaces */
    const char *label_selector;
    const char *field_selector;
    int page; /* list page size; 0: default */
    sw_informer_handler handler;
    sw_informer_filter filter;
    void *ctx;
    /** Server-side timeout of each watch (s); 0: 300 (client-go picks 5-10 min). */
    int watch_timeout_s;
    /**
     * Or NULL. Makes the record to cache from an object (borrowed, after
     * `filter`): 0 and *rec, or an error naming the object and field (the
     * object is then not cached; a cached older version stays). `release`
     * frees a record, `record_rv` returns its resourceVersion (borrowed).
     */
    int (*compact)(const cJSON *obj, void *ctx, void **rec, struct sw_error *err);
    void (*release)(void *rec, void *ctx);
    const char *(*record_rv)(const void *rec);
};

/** Creates an informer on `c` (borrowed; must outlive it). Not started. */
int sw_informer_new(struct sw_kube_client *c, const struct sw_informer_opts *o,
                    struct sw_informer **out);

/** Starts listing and watching. */
int sw_informer_start(struct sw_informer *inf);

/** Stops and frees (in-flight requests are canceled; run the loop). */
void sw_informer_free(struct sw_informer *inf);

/** Whether the first list has completed. */
bool sw_informer_synced(const struct sw_informer *inf);

/** Whether it is synced and its watch open now (not listing, not waiting to retry). */
bool sw_informer_watching(const struct sw_informer *inf);

/**
 * The HTTP status of the informer's last list if it failed (404 when the
 * API server does not serve the kind, 403 when the credentials may not list
 * it), -1 when it got no answer; 0 when the last list succeeded or none
 * has ended yet.
 */
long sw_informer_list_failed(const struct sw_informer *inf);

/** The resourceVersion the informer is at ("" before the first list). */
const char *sw_informer_resource_version(const struct sw_informer *inf);

/** The number of cached objects. */
size_t sw_informer_count(const struct sw_informer *inf);

/**
 * Looks an object up by key: a cJSON object, or the record with `compact`
 * (borrowed; valid until the next loop turn).
 */
const void *sw_informer_get(const struct sw_informer *inf, const char *key);

/** Calls `fn` for every cached object (cJSON, or records with `compact`). */
void sw_informer_foreach(const struct sw_informer *inf,
                         void (*fn)(const char *key, const void *obj, void *ctx), void *ctx);

/** Counters for tests and metrics. */
struct sw_informer_stats {
    uint64_t lists;     /* full lists, the first included */
    uint64_t relists;   /* lists caused by 410 Gone */
    uint64_t watches;   /* watch requests started */
    uint64_t events;    /* watch events applied */
    uint64_t bookmarks; /* bookmarks received */
    uint64_t errors;    /* failed lists or watches */
    uint64_t rejected;  /* objects `compact` refused */
};

/** Reads the counters. */
void sw_informer_stats(const struct sw_informer *inf, struct sw_informer_stats *out);

/** The kind's name and the cluster's, for messages. */
const char *sw_informer_what(const struct sw_informer *inf);

/**
 * Test hook: sets the resourceVersion the next watch starts from and ends
 * the current watch, so that tests can provoke a 410 Gone.
 */
void sw__informer_force_rewatch(struct sw_informer *inf, const char *rv);

/** Whether cJSON object `obj`'s key ("ns/name") fits in buf; writes it. */
int sw_object_key(const cJSON *obj, char *buf, size_t len);

#endif
