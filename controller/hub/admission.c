/*
 * admission.c - home's Pod Security and admission judge a burst's pods.
 *
 * A delegated Job never makes pods at home, and a burst Job's pods exist
 * only in the cluster it went to, so without this step the home cluster's
 * Pod Security admission and its webhooks (Kyverno, Gatekeeper) would never
 * see them: a privileged pod from a namespace that enforces `restricted`
 * would run in the cloud. So before the first mirror of an attempt is
 * created in another cluster, dispatch asks the origin's API server to
 * create, as a server-side dry run (POST .../pods?dryRun=All, which stores
 * nothing), a Pod built from the origin Job's pod template in the origin
 * namespace (admission_pod.c). Admitted: dispatch goes on. Refused by
 * admission or validation: the burst is refused with admission's own
 * message, as a missing reference is (the Job blocked, the attempt given
 * back, a BurstRefused Event). Home's ResourceQuota counts as admitted
 * only when the quota is full now and the Pod would fit once it frees up;
 * a quota smaller than the Pod's request is policy (sw_admission_classify).
 * Admitted, but home's mutating admission changed what confines the pods
 * (securityContext, host namespaces, images, profile annotations;
 * sw_admission_changed): refused too, and kept as a refusal, since a
 * mirror is built from the template, not from home's Pod, and would run
 * in the cloud without home's changes. (A Pod refused only for a full
 * quota comes back as a Status, not as the Pod: its mutations cannot be
 * seen.) No answer, or a 429 or 5xx: the step is retried with backoff. A
 * mirror in the origin's own cluster is not judged here: home's admission
 * sees its pods anyway.
 *
 * Verdicts are kept for ten minutes per (cluster, namespace, SHA-256 of
 * the Pod), refusals too, so that a thousand Jobs of one template cost the
 * origin one request; Jobs that ask while that request is on the wire wait
 * for its answer rather than send their own.
 *
 * The home cluster lost (members.c): nothing can be asked. A verdict kept
 * for the Pod, of any age, is the last word home gave and is used. Without
 * one, the Job goes on only if the last view of home's cache shows pods
 * made from this very template there (pending or running, not terminal):
 * an annotation-only Job, not suspended (a template changes only while
 * its Job is suspended, and a suspended Job's pods are deleted), of the
 * UID and generation of the copy judged, with pods of it in the view that
 * home's Job controller counts active (a pod exists only once admission
 * admitted it; sw_admission_ran_at_home). Old status counts, or a mirror
 * that ran at home, do not show what the template is now. Otherwise it
 * waits, retried with backoff, until home answers again.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "clusters/record.h"
#include "controller/hub/admission_pod.h"
#include "controller/hub/hub.h"

/* One loop runs the hub: this state needs no lock. */
static struct sw_admission_cache *verdicts;

struct waiter {
    struct sw_job *j;
    struct waiter *next;
};

/* A dry run on the wire, and the Jobs that wait for its answer. */
struct asking {
    struct sw_hub *h;
    struct sw_admission_key k; /* zero-filled by sw_admission_key: compared whole */
    cJSON *pod;                /* own: the Pod asked about, to compare with the answer */
    struct waiter *waiters;
    struct asking *next;
};
static struct asking *askings;

/*
 * The burst refused before anything changed at home, as dispatch's
 * reference check refuses one: the Job is not burst and stays as it is,
 * blocked with the reason (decided again later), and the attempt the
 * intent took is given back (no mirror of it was made, so its name is
 * free).
 */
static void refuse(struct sw_hub *h, struct sw_job *j, const char *why)
{
    struct sw_job_rec *r = &j->rec;
    sw_follow_block(h, j, "BurstRefused", why);
    if (r->attempt > 0)
        r->attempt--;
    r->mirror[0] = '\0';
    sw_rec_step(h, j, SW_FP_NONE);
}

static void refuse_for(struct sw_hub *h, struct sw_job *j, const char *message)
{
    /* Whole here (the Event says it all); the record's reason is cut. */
    char why[sizeof(j->rec.cluster) + SW_ADMISSION_MSG_MAX + 64];
    snprintf(why, sizeof(why), "home cluster %s would not admit the Job's pods: %s", j->rec.cluster,
             message);
    refuse(h, j, why);
}

/* Home's admission changed the pods: what dispatch cannot carry. */
static void refuse_changed(struct sw_hub *h, struct sw_job *j, const char *field)
{
    char why[sizeof(j->rec.cluster) + SW_ADMISSION_MSG_MAX + 200];
    snprintf(why, sizeof(why),
             "home cluster %s's admission changes the Job's pods (%s): spillway does not carry "
             "home's mutations to the cloud; set the field in the Job's pod template as home "
             "would",
             j->rec.cluster, field);
    refuse(h, j, why);
}

/*
 * Evidence, with home lost, that home's admission admitted pods made from
 * `origin`'s template (the copy judged): the last view of home's cache
 * shows pods of this Job, made by home's Job controller from this
 * template (sw_admission_ran_at_home says when it does). A delegated
 * origin makes no pods at home, and its status is the hub's copy of its
 * mirror's: never evidence.
 */
static bool admitted_before(struct sw_hub *h, const struct sw_job_rec *r, const cJSON *origin)
{
    const struct sw_job_record *o = sw_observe_origin_record(h, r);
    struct sw_admission_home_view v = {.seen = o != NULL,
                                       .annotation = r->form == SW_FORM_ANNOTATION};
    if (o != NULL) {
        v.uid = o->uid;
        v.generation = o->generation;
        v.suspend = o->suspend;
        v.deleting = o->deleting != NULL;
        v.active = o->active;
    }
    v.pods = sw_observe_pods(h, r->cluster, r->ns, r->name, NULL);
    return sw_admission_ran_at_home(&v, origin);
}

static void on_answer(struct sw_kube_result *res, void *ctx)
{
    struct asking *a = ctx;
    for (struct asking **p = &askings; *p != NULL; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            break;
        }
    struct sw_hub *h = a->h;
    const char *message = sw_json_str(res->body, "message");
    enum sw_admission_outcome out = sw_admission_classify(res->status, message);
    char text[SW_ADMISSION_MSG_MAX];
    sw_admission_message(message ? message : res->err.msg, text, sizeof(text));
    char why[512] = "";
    /* Admitted as home's Pod: what home's mutating admission made of it. */
    if (out == SW_ADMISSION_ADMITTED && res->status >= 200 && res->status < 300) {
        bool changed = false;
        int rc = cJSON_IsObject(res->body)
                     ? sw_admission_changed(a->pod, res->body, &changed, text, sizeof(text))
                     : SW_EPARSE;
        if (rc != 0) {
            SW_LOG(SW_LOG_WARN, "cannot read the Pod home's admission answered; retrying",
                   "cluster=%s namespace=%s err=%s", sw_log_q(a->k.cluster), sw_log_q(a->k.ns),
                   sw_strerror(rc));
            out = SW_ADMISSION_TRANSIENT;
        } else if (changed) {
            out = SW_ADMISSION_CHANGED;
        }
    }
    switch (out) {
    case SW_ADMISSION_CHANGED:
        sw_admission_cache_put_changed(verdicts, &a->k, text, sw_hub_mono_ms());
        SW_LOG(SW_LOG_INFO, "home's admission changes the pods; burst refused",
               "cluster=%s namespace=%s field=%s", sw_log_q(a->k.cluster), sw_log_q(a->k.ns),
               sw_log_q(text));
        break;
    case SW_ADMISSION_ADMITTED:
        sw_admission_cache_put(verdicts, &a->k, true, NULL, sw_hub_mono_ms());
        if (res->status == 403)
            SW_LOG(SW_LOG_INFO, "pods admitted at home but for its ResourceQuota",
                   "cluster=%s namespace=%s message=%s", sw_log_q(a->k.cluster), sw_log_q(a->k.ns),
                   sw_log_q(text));
        break;
    case SW_ADMISSION_REFUSED:
        sw_admission_cache_put(verdicts, &a->k, false, text, sw_hub_mono_ms());
        break;
    case SW_ADMISSION_REFUSED_ONCE:
        break; /* not kept: the ServiceAccount may be there in a moment */
    case SW_ADMISSION_NO_RIGHT:
        /* Not kept: the role may be granted in a moment. The Job shows why. */
        SW_LOG(SW_LOG_ERROR, "the member role lacks create on pods (dry runs only)",
               "cluster=%s err=%s", sw_log_q(a->k.cluster), sw_log_q(res->err.msg));
        snprintf(why, sizeof(why),
                 "spillway may not ask cluster %s's admission about the Job's pods: its "
                 "identity there lacks create on pods (used only with dryRun=All; "
                 "deploy/rbac/member-clusterrole.yaml)",
                 a->k.cluster);
        break;
    case SW_ADMISSION_TRANSIENT:
        SW_LOG(SW_LOG_WARN, "cannot ask home's admission about a Job's pods; retrying",
               "cluster=%s namespace=%s err=%s", sw_log_q(a->k.cluster), sw_log_q(a->k.ns),
               sw_log_q(res->err.msg));
        break;
    }
    while (a->waiters != NULL) {
        struct waiter *w = a->waiters;
        a->waiters = w->next;
        struct sw_job *j = w->j;
        sw_free(w);
        switch (out) {
        case SW_ADMISSION_ADMITTED:
            j->admitted = true;
            sw_hub_step_done(h, j, 0);
            break;
        case SW_ADMISSION_REFUSED:
        case SW_ADMISSION_REFUSED_ONCE:
            refuse_for(h, j, text);
            break;
        case SW_ADMISSION_CHANGED:
            refuse_changed(h, j, text);
            break;
        case SW_ADMISSION_NO_RIGHT:
            refuse(h, j, why);
            break;
        case SW_ADMISSION_TRANSIENT:
            sw_hub_step_done(h, j, res->rc != 0 ? res->rc : SW_EUNAVAIL);
            break;
        }
    }
    cJSON_Delete(a->pod);
    sw_free(a);
}

static int wait_for(struct asking *a, struct sw_job *j)
{
    struct waiter *w = sw_calloc(1, sizeof(*w));
    if (w == NULL)
        return SW_ENOMEM;
    w->j = j;
    w->next = a->waiters;
    a->waiters = w;
    return 0;
}

/* Sends the dry run for `pod` (takes it) with j its first waiter. */
static int ask(struct sw_hub *h, struct sw_job *j, struct sw_member *om, cJSON *pod,
               const struct sw_admission_key *k)
{
    struct asking *a = sw_calloc(1, sizeof(*a));
    if (a == NULL) {
        cJSON_Delete(pod);
        return SW_ENOMEM;
    }
    a->h = h;
    a->k = *k;
    a->pod = pod;
    char path[256];
    int rc = sw_kube_path(SW_KIND_POD, j->rec.ns, NULL, path, sizeof(path));
    if (rc == 0)
        rc = sw_kube_path_query(path, sizeof(path), "dryRun", "All");
    char *body = rc == 0 ? cJSON_PrintUnformatted(pod) : NULL;
    if (rc == 0 && body == NULL)
        rc = SW_ENOMEM;
    if (rc == 0)
        rc = wait_for(a, j);
    if (rc == 0) {
        struct sw_kube_req req = {
            .method = "POST", .path = path, .body = body, .body_len = strlen(body)};
        rc = sw_kube_send(om->client, &req, on_answer, a, NULL);
    }
    cJSON_free(body);
    if (rc != 0) {
        sw_free(a->waiters);
        cJSON_Delete(a->pod);
        sw_free(a);
        return rc;
    }
    a->next = askings;
    askings = a;
    return 0;
}

bool sw_admission_check(struct sw_hub *h, struct sw_job *j, struct sw_member *om,
                        const cJSON *origin)
{
    struct sw_job_rec *r = &j->rec;
    if (verdicts == NULL &&
        (verdicts = sw_admission_cache_new(SW_ADMISSION_CACHE_MAX, SW_ADMISSION_TTL_MS)) == NULL) {
        sw_hub_step_done(h, j, SW_ENOMEM);
        return false;
    }
    struct sw_error err = {0};
    cJSON *pod = sw_admission_pod(origin, r->ns, &err);
    if (pod == NULL && err.code == SW_EINVAL) {
        /* No pod template: nothing can run; building the mirror fails the
         * Job with that reason (dispatch.c). */
        j->admitted = true;
        return true;
    }
    struct sw_admission_key k;
    int rc = pod == NULL ? SW_ENOMEM : sw_admission_key(pod, r->cluster, r->ns, &k);
    if (rc != 0) {
        cJSON_Delete(pod);
        sw_hub_step_done(h, j, rc);
        return false;
    }
    bool lost = sw_member_lost(om);
    struct sw_admission_verdict v;
    if (sw_admission_cache_get(verdicts, &k, sw_hub_mono_ms(), lost, &v)) {
        cJSON_Delete(pod);
        if (v.admitted) {
            j->admitted = true;
            return true;
        }
        if (v.changed)
            refuse_changed(h, j, v.message);
        else
            refuse_for(h, j, v.message);
        return false;
    }
    if (lost) {
        cJSON_Delete(pod);
        if (admitted_before(h, r, origin)) {
            SW_LOG(SW_LOG_INFO, "home lost; its admission admitted the Job's pods before",
                   "job=%s cluster=%s", sw_log_q(r->key), sw_log_q(r->cluster));
            j->admitted = true;
            return true;
        }
        SW_LOG(SW_LOG_WARN, "home lost before its admission judged the Job's pods; waiting for it",
               "job=%s cluster=%s", sw_log_q(r->key), sw_log_q(r->cluster));
        sw_hub_step_done(h, j, SW_EUNAVAIL);
        return false;
    }
    /* The same Pod asked about already: its answer is this Job's too. */
    for (struct asking *a = askings; a != NULL; a = a->next)
        if (memcmp(&a->k, &k, sizeof(k)) == 0) {
            cJSON_Delete(pod);
            rc = wait_for(a, j);
            if (rc != 0)
                sw_hub_step_done(h, j, rc);
            return false;
        }
    rc = ask(h, j, om, pod, &k);
    if (rc != 0)
        sw_hub_step_done(h, j, rc);
    return false;
}
