/*
 * admission_pod.h - what home's admission is asked about a burst's pods,
 * what its answer means, and the verdicts kept (pure; admission_pod.c).
 *
 * Before the first mirror of an attempt is created in another cluster, the
 * hub asks the origin's own API server to create, as a server-side dry run,
 * a Pod built from the origin Job's pod template in the origin namespace
 * (admission.c). This file builds that Pod, names a verdict by what was
 * judged (cluster, namespace, SHA-256 of the Pod), reads the API server's
 * answer, and keeps verdicts in a bounded cache, so that a thousand Jobs of
 * one template cost one request.
 */
#ifndef SW_CONTROLLER_HUB_ADMISSION_POD_H
#define SW_CONTROLLER_HUB_ADMISSION_POD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/** How many verdicts the hub keeps, and for how long one is used. */
#define SW_ADMISSION_CACHE_MAX 1024
#define SW_ADMISSION_TTL_MS    (10 * 60 * 1000)
/** The most bytes of admission's message kept, its NUL included; a longer
 * one ends in "..." (Pod Security's for a pod breaking every rule of
 * restricted runs near 600). */
#define SW_ADMISSION_MSG_MAX 1024
/** The longest generateName the Pod gets (Kubernetes keeps 58, then adds 5). */
#define SW_ADMISSION_GENERATE_MAX 58

/** What a verdict is about: one Pod body in one namespace of one cluster. */
struct sw_admission_key {
    char cluster[64];
    char ns[64];
    unsigned char sha[32]; /* SHA-256 of the Pod as sent, without generateName */
};

/**
 * The Pod home's admission judges for `job` (borrowed; the origin Job
 * whole): apiVersion v1, kind Pod, metadata.generateName the Job's name
 * (cut to fit) and "-", metadata.namespace `ns`, the template's labels and
 * annotations, and the template's spec as it is. The four labels the Job
 * controller writes into every template (controller-uid and job-name, with
 * and without batch.kubernetes.io/) are left out: their values are the
 * Job's own UID and name, which would make every Job's Pod a different
 * one to judge, and the pods a mirror makes carry the mirror's values
 * anyway. Returns a new object (the caller deletes it); NULL with
 * SW_EINVAL in `err` when the Job has no pod template (spec.template not
 * an object), or SW_ENOMEM.
 */
cJSON *sw_admission_pod(const cJSON *job, const char *ns, struct sw_error *err);

/**
 * The verdict's key for `pod` (borrowed; sw_admission_pod's) judged in
 * namespace `ns` of cluster `cluster`: the SHA-256 of the Pod printed
 * without metadata.generateName. 0, SW_EINVAL for a name longer than the
 * key holds, or SW_ENOMEM.
 */
int sw_admission_key(const cJSON *pod, const char *cluster, const char *ns,
                     struct sw_admission_key *out);

/** What the API server's answer to the dry-run create means. */
enum sw_admission_outcome {
    SW_ADMISSION_ADMITTED = 0, /* 2xx, or refused only because home's quota is full now */
    SW_ADMISSION_REFUSED,      /* refused by admission or validation: the burst is refused */
    SW_ADMISSION_REFUSED_ONCE, /* refused for a ServiceAccount not found (yet): not kept */
    SW_ADMISSION_NO_RIGHT,     /* RBAC refused the hub's own create: the member role lacks it */
    SW_ADMISSION_TRANSIENT,    /* anything else (no answer, 401, 404, 409, 429, 5xx): retried */
    /* admitted, but home's admission changed what confines the pods
     * (sw_admission_changed): the burst is refused, and that is kept */
    SW_ADMISSION_CHANGED,
};

/**
 * Reads an answer: HTTP `status` (0 for none) and the Status's `message`
 * (or NULL). 400, 403 and 422 are refusals, except a 403 of RBAC (the
 * hub's identity may not create pods there: NO_RIGHT), of the
 * ServiceAccount admission plugin (REFUSED_ONCE), and of ResourceQuota
 * for a quota that is full now: quota is checked after every other
 * admission plugin and webhook (Kubernetes' plugin order), so such a Pod
 * passed Pod Security and every policy, and a full home quota is what a
 * burst leaves behind: ADMITTED, but only when its message
 * (`exceeded quota: NAME, requested: R, used: U, limited: L`) shows, for
 * every resource it lists, the Pod's request at most the quota's limit (it
 * would fit once the quota frees up). A quota smaller than the request,
 * or of 0, is policy (the Pod could never run at home): REFUSED, as is
 * any quota message that does not read so, `failed quota: ` (the Pod
 * lacks a request or limit the quota requires) and `insufficient quota
 * to ` (limitedResources or scopes the platform configured), whatever
 * the status of the latter (500 for scopes). `status unknown for quota: `
 * (its usage not counted yet) is TRANSIENT.
 */
enum sw_admission_outcome sw_admission_classify(long status, const char *message);

/**
 * Whether home's admission changed, in `returned` (borrowed: the Pod the
 * dry run answered with), what confines the pods of `sent` (borrowed: the
 * Pod asked about): spec.securityContext, hostNetwork, hostPID, hostIPC,
 * hostUsers, every container's, initContainer's and ephemeralContainer's
 * name (by position), image and securityContext, and the annotations
 * under container.apparmor.security.beta.kubernetes.io/,
 * seccomp.security.alpha.kubernetes.io/ and
 * container.seccomp.security.alpha.kubernetes.io/. A mirror is built from
 * the template, not from home's Pod, so such a change is not carried to
 * the cloud. What the API server itself does is not a change: absent
 * equals null, "", [] and {} (it defaults spec.securityContext to {} and
 * drops empty values); absent booleans are Kubernetes' defaults; the
 * deprecated profile annotations and the fields it copies them to and
 * from (its version-skew handling) are read as one. Every other field
 * (defaults, the service-account token volume, tolerations) is not
 * compared. Sets *changed, and the first field changed into `field`
 * (e.g. "spec.containers[0].securityContext"; cut to `len`). 0, or
 * SW_ENOMEM.
 */
int sw_admission_changed(const cJSON *sent, const cJSON *returned, bool *changed, char *field,
                         size_t len);

/**
 * What the hub's last view of the home cluster holds of an origin Job,
 * for sw_admission_ran_at_home (admission.c fills it from the caches).
 */
struct sw_admission_home_view {
    bool seen;          /* the Job is in the view */
    bool annotation;    /* an annotation-only Job: home's Job controller makes its pods */
    const char *uid;    /* its metadata.uid (borrowed), or NULL */
    int64_t generation; /* its metadata.generation, negative when unknown */
    int suspend;        /* spec.suspend: 1, 0, or negative when absent */
    bool deleting;      /* it has a deletionTimestamp */
    int32_t active;     /* status.active, negative when absent */
    int pods;           /* its pods (not terminal) in the view */
};

/**
 * With home lost and no verdict kept for the Pod: whether the view proves
 * that home's admission admitted pods made from the template of `origin`
 * (borrowed: the copy that is judged and mirrored). True only for an
 * annotation-only Job seen, not being deleted, not suspended (a Job's
 * template can change only while it is suspended, and its pods are
 * deleted when it is), of the same UID and metadata.generation as
 * `origin` (so the same template), with pods of it in the view and
 * counted active by home's Job controller (so made by it, not a pod that
 * only carries the Job's label). A status count alone, or a mirror that
 * ran at home, proves nothing about the template as it is now.
 */
bool sw_admission_ran_at_home(const struct sw_admission_home_view *v, const cJSON *origin);

/**
 * Admission's message for people, without the dry-run Pod's generated
 * name: `pods "NAME" is forbidden: X` becomes `X`, `Pod "NAME" is
 * invalid: X` becomes `invalid: X`, anything else is kept. Cut to fit
 * `len` (always NUL-terminated).
 */
void sw_admission_message(const char *message, char *out, size_t len);

/** A verdict kept. */
struct sw_admission_verdict {
    bool admitted;
    bool changed; /* refused as SW_ADMISSION_CHANGED: message is the field changed */
    char message[SW_ADMISSION_MSG_MAX]; /* a refusal's, as sw_admission_message gives it */
    int64_t at_ms;                      /* when it was given */
};

struct sw_admission_cache;

/** A cache of at most `cap` verdicts, each used for `ttl_ms`. NULL on no memory. */
struct sw_admission_cache *sw_admission_cache_new(size_t cap, int64_t ttl_ms);
void sw_admission_cache_free(struct sw_admission_cache *c);

/**
 * The verdict kept for `k`, into *out: true when there is one given less
 * than the cache's ttl before `now_ms`, or of any age when `any_age` (a
 * home that is lost gives no fresher one). Expired verdicts stay until
 * their place is needed.
 */
bool sw_admission_cache_get(const struct sw_admission_cache *c, const struct sw_admission_key *k,
                            int64_t now_ms, bool any_age, struct sw_admission_verdict *out);

/**
 * Keeps a verdict for `k` given at `now_ms` (replacing the one kept for
 * `k`); when the cache is full, the oldest verdict goes. `message` (or
 * NULL) is cut to fit.
 */
void sw_admission_cache_put(struct sw_admission_cache *c, const struct sw_admission_key *k,
                            bool admitted, const char *message, int64_t now_ms);

/**
 * Keeps, as sw_admission_cache_put, a refusal for a Pod home's admission
 * changed (SW_ADMISSION_CHANGED), with the first field changed.
 */
void sw_admission_cache_put_changed(struct sw_admission_cache *c, const struct sw_admission_key *k,
                                    const char *field, int64_t now_ms);

/** How many verdicts are kept. */
size_t sw_admission_cache_len(const struct sw_admission_cache *c);

#endif
