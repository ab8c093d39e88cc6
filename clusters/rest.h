/*
 * rest.h - the asynchronous Kubernetes REST client, one per member cluster.
 *
 * Built on net/http (libcurl multi on the hub's libuv loop): connections
 * are reused and HTTP/2 is used where the API server offers it. The client
 * authenticates as the kubeconfig says (client certificate, bearer token or
 * token file, basic, or an exec plugin whose credential is cached until its
 * expirationTimestamp and refreshed on 401), verifies TLS against the
 * kubeconfig's CA unless it says insecure-skip-tls-verify, and honours
 * tls-server-name and proxy-url.
 *
 * Every request passes a per-cluster token bucket (QPS and burst), is
 * retried with capped exponential backoff on 429 and 5xx (honouring
 * Retry-After) and on transport errors for GETs, and its response body is
 * capped. Callbacks always run from the loop, never from inside a call.
 */
#ifndef SW_CLUSTERS_REST_H
#define SW_CLUSTERS_REST_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clusters/kubeconfig.h"
#include "common/clock.h"
#include "common/error.h"
#include "net/http.h"

/** Default cap on one response body (lists are paged well below it). */
#define SW_KUBE_DEFAULT_MAX_BODY ((size_t)64 << 20)
/** Default whole-request timeout for non-watch requests. */
#define SW_KUBE_DEFAULT_TIMEOUT_MS 30000
/** Default page size of list calls. */
#define SW_KUBE_DEFAULT_PAGE 500

/** Per-cluster settings; start from sw_kube_opts_default. */
struct sw_kube_opts {
    const char *name; /* cluster name in logs and errors (copied) */
    double qps;       /* <= 0: no client-side limit */
    int burst;
    int max_retries;
    int64_t backoff_ms;
    int64_t backoff_cap_ms;
    size_t max_body;
    long timeout_ms;
    const struct sw_clock *clock; /* NULL: the system clock */
    const char *user_agent;       /* NULL: "spillway/VERSION" */
};

/** Fills the documented defaults (QPS 50, burst 100, 5 retries, ...). */
void sw_kube_opts_default(struct sw_kube_opts *o);

struct sw_kube_client;
struct sw_kube_op;

/** The outcome of a request, valid during the callback. */
struct sw_kube_result {
    int rc;      /* 0 for a 2xx status, else SW_E* */
    long status; /* HTTP status or 0 */
    /** The parsed JSON body, or NULL. The callback may take it by setting NULL. */
    cJSON *body;
    /** The body as received, for requests sent with `raw` (borrowed). */
    const char *raw;
    size_t raw_len;
    /** Status.reason on failures ("NotFound", "AlreadyExists", ...) or "". */
    const char *reason;
    /** On failure: "cluster NAME: METHOD PATH: ..." with the server's message. */
    struct sw_error err;
    /** The HTTP version of the last response (CURL_HTTP_VERSION_2_0, ...), or 0. */
    long http_version;
    /** New connections opened for this request, summed over its attempts. */
    long new_connects;
};

typedef void (*sw_kube_cb)(struct sw_kube_result *res, void *ctx);

/** A raw request; strings and body are copied by sw_kube_send. */
struct sw_kube_req {
    const char *method;       /* NULL: GET */
    const char *path;         /* "/api/v1/nodes?limit=10", required */
    const char *content_type; /* NULL: application/json when there is a body */
    const char *body;
    size_t body_len;
    int no_retry;
    int raw; /* do not parse the body as JSON; hand it over in res->raw */
    /** Streaming (watch): each chunk goes here and the body is not kept. */
    sw_http_data_cb on_data;
    void *on_data_ctx;
    /**
     * Or, for a List: each item (a new reference, ownership passed) as soon
     * as it has arrived, while the rest is still on the wire, without its
     * metadata.managedFields (dropped unparsed); res->body is then the List
     * without items. A request is retried (as any) only as
     * long as no item was handed over.
     */
    void (*on_item)(cJSON *item, void *ctx);
    void *on_item_ctx;
    long timeout_ms;       /* 0: the client's default; -1: none (watches) */
    long low_speed_time_s; /* abort when idle this long; 0: off */
    /**
     * The request or its answer holds a Secret's data: the client's copy of
     * the body, the answer's buffer and the parsed res->body are wiped
     * (sw_wipe) before they are freed. Not for streams or lists.
     */
    int sensitive;
};

/**
 * Creates a client for `target` (ownership taken, even on failure) on
 * `loop` using `http` (borrowed; both must outlive the client).
 */
int sw_kube_client_new(uv_loop_t *loop, struct sw_http *http, struct sw_kube_target *target,
                       const struct sw_kube_opts *opts, struct sw_kube_client **out,
                       struct sw_error *err);

/**
 * Cancels every request (callbacks run with SW_ECANCELED) and frees the
 * client once they and any running exec plugin are done; run the loop.
 */
void sw_kube_client_free(struct sw_kube_client *c);

/**
 * Cuts the client off from its server (a fenced cluster, a drill): while
 * `why` is set, no request is sent (each fails at once with SW_EUNAVAIL
 * and a message holding `why`), and requests on the wire, watches among
 * them, are aborted the same way. NULL or "" lets requests through again.
 */
void sw_kube_client_block(struct sw_kube_client *c, const char *why);
/** Whether the client is cut off (sw_kube_client_block). */
bool sw_kube_client_blocked(const struct sw_kube_client *c);

/** The cluster name given in the options (borrowed). */
const char *sw_kube_client_name(const struct sw_kube_client *c);

/** The target (borrowed). */
const struct sw_kube_target *sw_kube_client_target(const struct sw_kube_client *c);

/** The loop the client runs on (for modules built on the client). */
uv_loop_t *sw__kube_client_loop(struct sw_kube_client *c);

/** Requests sent on the wire so far, retries included (for tests and metrics). */
uint64_t sw_kube_client_sent(const struct sw_kube_client *c);

/** How many responses had one HTTP status (0: no response, a transport error). */
struct sw_kube_code_count {
    int code;
    uint64_t n;
};
#define SW_KUBE_MAX_CODES 24

/**
 * Copies the client's response counts by status, retries included, in the
 * order the statuses were first seen, into out (capacity `cap`); returns
 * how many were copied. Once SW_KUBE_MAX_CODES - 1 distinct statuses are
 * held, any other is counted under code -1 (other), so the table is bounded.
 */
size_t sw_kube_client_responses(const struct sw_kube_client *c, struct sw_kube_code_count *out,
                                size_t cap);

/**
 * Milliseconds requests have waited for the client-side rate limit in all
 * (each request's delay before it was sent), and how many waited at all.
 */
void sw_kube_client_ratelimit_wait(const struct sw_kube_client *c, uint64_t *wait_ms,
                                   uint64_t *delayed);

/**
 * Whether the client's rate-limit bucket is nearly full now: at most a
 * tenth of its burst spent (at least one token left). Requests that can
 * wait (Events, a status that only informs) are sent only then, so that
 * they spend budget that would otherwise go unused, never the budget of a
 * request that cannot (client-go has one queue; this is the hub's second,
 * lower lane).
 */
bool sw_kube_client_spare(const struct sw_kube_client *c);

/**
 * Sends a request. Returns 0 and, if `out` is not NULL, a handle valid until
 * the callback returns; `cb` then runs exactly once.
 */
int sw_kube_send(struct sw_kube_client *c, const struct sw_kube_req *req, sw_kube_cb cb, void *ctx,
                 struct sw_kube_op **out);

/** Cancels a request; its callback runs with SW_ECANCELED from the loop. */
void sw_kube_cancel(struct sw_kube_op *op);

/* ---- typed helpers ------------------------------------------------------ */

enum sw_kube_kind {
    SW_KIND_POD = 0,
    SW_KIND_NODE,
    SW_KIND_NAMESPACE,
    SW_KIND_EVENT,
    SW_KIND_JOB,
    SW_KIND_LEASE,
    SW_KIND_WORKLOAD,         /* kueue.x-k8s.io/v1beta2 */
    SW_KIND_CLUSTERQUEUE,     /* kueue.x-k8s.io/v1beta2, cluster-scoped */
    SW_KIND_LOCALQUEUE,       /* kueue.x-k8s.io/v1beta2 */
    SW_KIND_NODEPOOL,         /* karpenter.sh/v1, cluster-scoped */
    SW_KIND_NODECLAIM,        /* karpenter.sh/v1, cluster-scoped */
    SW_KIND_ADMISSIONCHECK,   /* kueue.x-k8s.io/v1beta2, cluster-scoped */
    SW_KIND_MULTIKUEUECONFIG, /* kueue.x-k8s.io/v1beta2, cluster-scoped */
    SW_KIND_RESOURCEFLAVOR,   /* kueue.x-k8s.io/v1beta2, cluster-scoped */
    SW_KIND_COUNT
};

/** "Pod", "Job", ... */
const char *sw_kube_kind_name(enum sw_kube_kind k);
/** "v1", "batch/v1", "coordination.k8s.io/v1". */
const char *sw_kube_kind_api_version(enum sw_kube_kind k);

/**
 * Writes the path of a kind's collection (name NULL) or object into buf.
 * `ns` NULL or "" means all namespaces (collections) and is ignored for
 * cluster-scoped kinds. Names are checked to be DNS-safe (lowercase
 * letters, digits, '-' and '.'; never "." or "..") and each goes in as one
 * segment (sw_kube_path_segment). Returns 0, SW_EINVAL or SW_ETOOBIG.
 */
int sw_kube_path(enum sw_kube_kind k, const char *ns, const char *name, char *buf, size_t len);

/**
 * Appends "/" and one path segment, percent-encoded, to the path in buf
 * (a NUL-terminated string, len bytes in all): RFC 3986's unreserved
 * characters are kept, every other byte becomes %XX, so that no proxy or
 * client library reads more than one segment into it. A segment that the
 * API server would still read as a step or as more than one segment
 * (it routes on the decoded path) is refused with SW_EINVAL: NULL, "",
 * ".", ".." and anything holding '/'. SW_ETOOBIG when it does not fit.
 * On failure buf is left as it was. Every path built from a name goes
 * through this (sw_kube_path does), callers of sw_kube_send too.
 */
int sw_kube_path_segment(char *buf, size_t len, const char *seg);

/** Appends "?k=v" or "&k=v" (value percent-encoded) to a path in buf. */
int sw_kube_path_query(char *buf, size_t len, const char *key, const char *value);

/** GET one object. */
int sw_kube_get(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                sw_kube_cb cb, void *ctx);

/** Selectors and paging of a list. */
struct sw_kube_list_opts {
    const char *label_selector; /* or NULL */
    const char *field_selector; /* or NULL */
    int limit;                  /* page size; 0: SW_KUBE_DEFAULT_PAGE; < 0: no paging */
    /* The first page's resourceVersion, or NULL: "0" lets the API server
     * answer from its watch cache, as client-go's first list does. */
    const char *resource_version;
    /* Or NULL. Called with each item (ownership passed) as it arrives
     * (sw_kube_req.on_item), so that a long list is never held whole; the
     * final List then has no items. After a restart (below) items come
     * again from the first. */
    void (*on_item)(cJSON *item, void *ctx);
};

/**
 * Lists all pages (limit/continue) and calls back once with one List object
 * whose "items" hold every page's items (none with on_item) and whose
 * metadata.resourceVersion is the list's. If a continue token expires (410)
 * mid-way, the list restarts from the beginning once.
 */
int sw_kube_list(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                 const struct sw_kube_list_opts *o, sw_kube_cb cb, void *ctx);

/** POST `obj` (borrowed) into the collection. */
int sw_kube_create(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const cJSON *obj,
                   sw_kube_cb cb, void *ctx);

/** PUT `obj` (borrowed) over an object (optimistic concurrency via its resourceVersion). */
int sw_kube_replace(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                    const cJSON *obj, sw_kube_cb cb, void *ctx);

/** PATCH with application/merge-patch+json (RFC 7386). */
int sw_kube_merge_patch(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                        const char *name, const cJSON *patch, const char *subresource,
                        sw_kube_cb cb, void *ctx);

/** Server-side apply (application/apply-patch+yaml; JSON is YAML). */
int sw_kube_apply(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                  const cJSON *obj, const char *field_manager, int force, sw_kube_cb cb, void *ctx);

/**
 * Server-side apply to a subresource ("status") of an object, or to the
 * object itself when `subresource` is NULL. A metadata.resourceVersion in
 * `obj` (borrowed) makes it conditional: 409 when the object changed.
 */
int sw_kube_apply_sub(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns,
                      const char *name, const cJSON *obj, const char *subresource,
                      const char *field_manager, int force, sw_kube_cb cb, void *ctx);

/** Options of a delete. */
struct sw_kube_delete_opts {
    const char *precondition_uid;              /* or NULL */
    const char *precondition_resource_version; /* or NULL */
    const char *propagation;                   /* "Foreground", "Background", "Orphan" or NULL */
    int64_t grace_period_s;                    /* < 0: server default */
};

/** DELETE with preconditions and propagation policy. */
int sw_kube_delete(struct sw_kube_client *c, enum sw_kube_kind k, const char *ns, const char *name,
                   const struct sw_kube_delete_opts *o, sw_kube_cb cb, void *ctx);

/**
 * Runs `loop` until every request of a blocking-style caller is done: a
 * helper for the CLI. Returns when `*done` becomes non-zero.
 */
void sw_kube_run_until(uv_loop_t *loop, const int *done);

#endif
