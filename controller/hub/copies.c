/*
 * copies.c - spillway's copies of Secrets in a target let go of once no
 * mirror of their origin namespace there uses them (hub.h,
 * sw_copies_release).
 *
 * dispatch.c copies every Secret a mirror's pod template references into
 * the mirror's namespace in the target, under its name at home, labelled
 * app.kubernetes.io/managed-by=spillway and spillway.io/origin-cluster.
 * One copy serves every mirror of that origin namespace in that target.
 * Each attempt's intent adds its target to the record's copiedTo, before
 * anything is copied, so every cluster a Job's Secrets went to is known,
 * earlier targets included (a Job placed again after a lost attempt).
 *
 * When a Job's mirror is gone (retired, or its origin deleted), each Secret
 * its pod template references is deleted from each of those clusters
 * unless another record of the same origin namespace whose target is that
 * cluster references it (a record that has been through this step itself
 * has no mirror left and does not count; one whose template the hub
 * cannot read counts as using them all). The names each record uses are
 * read from its template once and kept (j->secrets): a Job's pod template
 * does not change, so the check is one pass over the records per target,
 * comparing names, with no template parsed again.
 *
 * Each copy is read first (get, the member role's own verb: no list of
 * Secrets is needed), checked to carry both of spillway's labels for this
 * origin cluster (the answer is untrusted), and deleted with the uid and
 * resourceVersion read as preconditions. A Secret spillway did not make is
 * never deleted. Every request here carries the Secret's data in its answer
 * and is marked sensitive (wiped).
 *
 * A new mirror never loses its copy to a release: the users are counted
 * when a target's release begins, and while it is under way (h->releasing)
 * dispatch copies nothing to that target for that origin namespace
 * (sw_copies_releasing); a record decided meanwhile copies the Secret
 * again once the release is over. The version precondition alone would
 * not do: a dispatch's update of a copy that has not changed at home
 * writes nothing, so the version stays what the release read.
 *
 * Nothing here waits for ever: a target that does not answer is waited
 * for (retirement is not urgent; a deleted origin is let go meanwhile,
 * follow.c), but a delete that fails SW_COPIES_TRIES times in a row (the
 * hub's backoff between) or is refused, a target no longer registered and
 * a template no longer known leave the copy, logged and with an Event
 * naming it, and counted, so that an operator can delete it.
 */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"
#include "controller/hub/mirror.h"
#include "controller/hub/podrefs.h"

struct sw_copies_release {
    struct sw_hub *h;
    struct sw_job *j;
    struct sw_copies_release *next; /* h->releasing */
    char target[64];
    int ti;           /* the target's index (targets()) */
    size_t at;        /* the name in hand (its bit in j->copies_names_done) */
    const char *name; /* in j->secrets */
    char uid[65];     /* as read, for the DELETE's preconditions */
    char rv[65];
};

/* ---- the names a record uses ----------------------------------------------- */

/* The pod template of a record's origin: the cache's whole Job, or the copy
 * the hub kept; NULL when neither is there. */
static const cJSON *template_of(struct sw_hub *h, const struct sw_job *j)
{
    const cJSON *o = sw_observe_origin_whole(h, &j->rec);
    if (o == NULL)
        o = j->kept;
    return o ? sw_json_path(o, "spec.template.spec") : NULL;
}

void sw_copies_note(struct sw_job *j, const cJSON *pod_spec)
{
    if (j->secrets_known || pod_spec == NULL)
        return;
    struct sw_pod_refs *refs = sw_calloc(1, sizeof(*refs));
    if (refs == NULL)
        return;
    struct sw_error err;
    int rc = sw_pod_refs_collect(pod_spec, "spec.template.spec", refs, &err);
    if (rc == SW_ENOMEM) {
        sw_free(refs);
        return;
    }
    /* A template dispatch refused (rc != 0) copied nothing: no names. */
    size_t len = 0, n = 0;
    for (size_t i = 0; i < refs->n; i++)
        if (refs->refs[i].kind == SW_POD_REF_SECRET) {
            len += strlen(refs->refs[i].name) + 1;
            n++;
        }
    char *buf = n > 0 ? sw_malloc(len) : NULL;
    if (n > 0 && buf == NULL) {
        sw_free(refs);
        return;
    }
    char *p = buf;
    for (size_t i = 0; i < refs->n; i++)
        if (refs->refs[i].kind == SW_POD_REF_SECRET) {
            size_t l = strlen(refs->refs[i].name) + 1;
            memcpy(p, refs->refs[i].name, l);
            p += l;
        }
    sw_free(refs);
    sw_free(j->secrets);
    j->secrets = buf;
    j->nsecrets = (uint8_t)n;
    j->secrets_known = true;
}

/* Whether the record's names are known (read now from its template, once,
 * if they were not). */
static bool known(struct sw_hub *h, struct sw_job *j)
{
    if (!j->secrets_known)
        sw_copies_note(j, template_of(h, j));
    return j->secrets_known;
}

/* The record's name k (k < nsecrets). */
static const char *name_at(const struct sw_job *j, size_t k)
{
    const char *p = j->secrets;
    for (; k > 0; k--)
        p += strlen(p) + 1;
    return p;
}

static bool has_name(const struct sw_job *j, const char *name)
{
    const char *p = j->secrets;
    for (size_t k = 0; k < j->nsecrets; k++, p += strlen(p) + 1)
        if (strcmp(p, name) == 0)
            return true;
    return false;
}

static uint64_t all_names(const struct sw_job *j)
{
    return j->nsecrets >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << j->nsecrets) - 1;
}

/* ---- the targets ------------------------------------------------------------ */

/* The clusters the record's Secrets were copied to: copiedTo, and its
 * current target when the list lacks it (a record written before the list
 * existed). */
static int ntargets(const struct sw_job_rec *r)
{
    int n = r->ncopied;
    bool current = r->target_cluster[0] != '\0' && strcmp(r->target_cluster, r->cluster) != 0 &&
                   r->attempt > 0;
    for (int i = 0; current && i < r->ncopied; i++)
        current = strcmp(r->copied_to[i], r->target_cluster) != 0;
    return n + (current ? 1 : 0);
}

static const char *target_at(const struct sw_job_rec *r, int i)
{
    return i < r->ncopied ? r->copied_to[i] : r->target_cluster;
}

/* ---- who else uses a copy --------------------------------------------------- */

struct users {
    struct sw_job *j;
    const char *target;
    uint64_t used; /* j's names another record there references */
};

static void find_users(struct sw_hub *h, struct sw_job *o, void *ctx)
{
    struct users *u = ctx;
    const struct sw_job_rec *a = &u->j->rec, *b = &o->rec;
    /* A record past its own release has no mirror left that could use the
     * copy: without this, two Jobs ending together would each keep the
     * copy for the other, and it would stay. A record whose target moved
     * elsewhere has no mirror there (a stale one is deleted, not used). */
    if (u->used == all_names(u->j) || o == u->j || o->copies_released ||
        strcmp(b->target_cluster, u->target) != 0 || strcmp(a->ns, b->ns) != 0 ||
        strcmp(a->cluster, b->cluster) != 0)
        return;
    if (!known(h, o)) {
        u->used = all_names(u->j); /* the safe answer */
        return;
    }
    for (size_t k = 0; k < u->j->nsecrets; k++)
        if (has_name(o, name_at(u->j, k)))
            u->used |= (uint64_t)1 << k;
}

/* j's names that another record of its origin namespace in `target` uses:
 * its mirror runs with them, or will (a record exists from the decision
 * on, before dispatch copies anything). One pass over the records. */
static uint64_t used_elsewhere(struct sw_hub *h, struct sw_job *j, const char *target)
{
    struct users u = {j, target, 0};
    sw_hub_jobs_foreach(h, find_users, &u);
    return u.used;
}

bool sw_copies_releasing(const struct sw_hub *h, const struct sw_job *j)
{
    for (const struct sw_copies_release *rl = h->releasing; rl; rl = rl->next)
        if (strcmp(rl->target, j->rec.target_cluster) == 0 &&
            strcmp(rl->j->rec.ns, j->rec.ns) == 0 &&
            strcmp(rl->j->rec.cluster, j->rec.cluster) == 0)
            return true;
    return false;
}

void sw_copies_pending(const struct sw_job *j, char *buf, size_t len)
{
    const struct sw_job_rec *r = &j->rec;
    size_t n = 0;
    buf[0] = '\0';
    if (j->copies_released || ntargets(r) == 0)
        return;
    if (!j->secrets_known) {
        snprintf(buf, len, "its Secrets' copies (names not known)");
        return;
    }
    if (j->nsecrets == 0)
        return;
    n += (size_t)snprintf(buf + n, len - n, "Secret%s", j->nsecrets > 1 ? "s" : "");
    for (size_t k = 0; k < j->nsecrets && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? ", " : " ", name_at(j, k));
    for (int i = 0; i < ntargets(r) && n < len; i++)
        if (!(j->copies_targets_done & (1u << i)))
            n += (size_t)snprintf(buf + n, len - n, " in %s", target_at(r, i));
}

/* ---- one target's release --------------------------------------------------- */

/* A copy the hub gives up deleting: said in the log and an Event on the
 * origin, counted. `name` NULL: the names are not known. */
static void left(struct sw_hub *h, struct sw_job *j, const char *target, const char *name,
                 const char *why)
{
    const struct sw_job_rec *r = &j->rec;
    h->m.copies_left++;
    SW_LOG(SW_LOG_WARN, "spillway's copy of a Secret left in the target; delete it there by hand",
           "job=%s target=%s ns=%s name=%s why=%s", sw_log_q(r->key), sw_log_q(target),
           sw_log_q(r->ns), sw_log_q(name ? name : "(not known)"), sw_log_q(why));
    char msg[700];
    snprintf(msg, sizeof(msg),
             "spillway's copy of Secret %s/%s is left in cluster %s (%s); delete it there once no "
             "Job of namespace %s uses it",
             r->ns, name ? name : "(the names are not known)", target, why, r->ns);
    sw_follow_event(h, r, "Warning", "SecretCopyLeft", msg);
}

static void unlink_release(struct sw_copies_release *rl)
{
    struct sw_copies_release **pp = &rl->h->releasing;
    while (*pp && *pp != rl)
        pp = &(*pp)->next;
    if (*pp)
        *pp = rl->next;
}

static void finish(struct sw_copies_release *rl, int rc)
{
    struct sw_hub *h = rl->h;
    struct sw_job *j = rl->j;
    unlink_release(rl);
    sw_free(rl);
    sw_hub_step_done(h, j, rc);
}

static void next(struct sw_copies_release *rl);

/* The name in hand is done with (deleted, gone, kept, or left). */
static void name_done(struct sw_copies_release *rl)
{
    rl->j->copies_names_done |= (uint64_t)1 << rl->at;
    rl->j->copies_tries = 0;
    next(rl);
}

/* The name in hand failed (`rc`, `msg`): again after the hub's backoff, or,
 * the SW_COPIES_TRIES-th time in a row, left. */
static void failed(struct sw_copies_release *rl, int rc, const char *msg)
{
    struct sw_job *j = rl->j;
    const struct sw_job_rec *r = &j->rec;
    if (++j->copies_tries >= SW_COPIES_TRIES) {
        char why[400];
        snprintf(why, sizeof(why), "its delete failed %d times in a row: %s", SW_COPIES_TRIES,
                 msg && msg[0] ? msg : sw_strerror(rc));
        left(rl->h, j, rl->target, rl->name, why);
        name_done(rl);
        return;
    }
    SW_LOG(SW_LOG_INFO, "deleting spillway's copy of a Secret failed; trying again",
           "job=%s target=%s ns=%s name=%s try=%d err=%s", sw_log_q(r->key), sw_log_q(rl->target),
           sw_log_q(r->ns), sw_log_q(rl->name), j->copies_tries,
           sw_log_q(msg && msg[0] ? msg : sw_strerror(rc)));
    finish(rl, rc);
}

/* A 403: the member role lacks the verb (an older role). The copy stays;
 * the Job's end does not wait for a permission it may never get. */
static bool refused(struct sw_copies_release *rl, const struct sw_kube_result *res,
                    const char *verb)
{
    if (res->status != 403)
        return false;
    char why[200];
    snprintf(why, sizeof(why),
             "the member role does not allow secrets %s (apply deploy/rbac/member-clusterrole.yaml "
             "again)",
             verb);
    left(rl->h, rl->j, rl->target, rl->name, why);
    name_done(rl);
    return true;
}

static int secret_path(const struct sw_copies_release *rl, char *path, size_t len)
{
    snprintf(path, len, "/api/v1/namespaces");
    int rc = sw_kube_path_segment(path, len, rl->j->rec.ns);
    if (rc == 0)
        rc = sw_kube_path_segment(path, len, "secrets");
    if (rc == 0)
        rc = sw_kube_path_segment(path, len, rl->name);
    return rc;
}

static void on_deleted(struct sw_kube_result *res, void *ctx)
{
    struct sw_copies_release *rl = ctx;
    const struct sw_job_rec *r = &rl->j->rec;
    if (refused(rl, res, "delete"))
        return;
    /* 404: gone already; 409: changed since it was read: kept. */
    if (res->rc != 0 && res->status != 404 && res->status != 409) {
        failed(rl, res->rc, res->err.msg);
        return;
    }
    if (res->rc == 0)
        rl->h->m.copies_deleted++;
    SW_LOG(SW_LOG_INFO,
           res->status == 409 ? "spillway's copy of a Secret changed since it was read; kept"
                              : "deleted spillway's copy of a Secret",
           "job=%s target=%s ns=%s name=%s", sw_log_q(r->key), sw_log_q(rl->target),
           sw_log_q(r->ns), sw_log_q(rl->name));
    name_done(rl);
}

/* Sends the DELETE (a hold point may send it late: the release stays
 * registered meanwhile, so no dispatch copies to the target). */
static void send_delete(void *arg)
{
    struct sw_copies_release *rl = *(struct sw_copies_release **)arg;
    /* No longer the leader (its lease lapsed while the read was under way,
     * or while held): the next leader counts the copy's users itself, with
     * dispatches this hub cannot see. Nothing is sent; it is not a try. */
    if (!sw_hub_acting(rl->h)) {
        finish(rl, SW_EUNAVAIL);
        return;
    }
    struct sw_member *tm = sw_member_find(rl->h, rl->target);
    char path[600], body[256];
    int rc = tm == NULL ? SW_EUNAVAIL : secret_path(rl, path, sizeof(path));
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
             "{\"uid\":\"%s\",\"resourceVersion\":\"%s\"}}",
             rl->uid, rl->rv);
    /* The answer to a DELETE of a Secret is the Secret, data and all. */
    struct sw_kube_req req = {
        .method = "DELETE", .path = path, .body = body, .body_len = strlen(body), .sensitive = 1};
    if (rc == 0)
        rc = sw_kube_send(tm->client, &req, on_deleted, rl, NULL);
    if (rc != 0)
        failed(rl, rc, NULL);
}

/* A uid or resourceVersion goes into the DELETE's JSON as it is: only
 * letters, digits and '-' (what API servers give) are taken. */
static bool plain(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-'))
            return false;
    return true;
}

static void on_read(struct sw_kube_result *res, void *ctx)
{
    struct sw_copies_release *rl = ctx;
    const struct sw_job_rec *r = &rl->j->rec;
    if (!sw_hub_acting(rl->h)) { /* as in send_delete */
        finish(rl, SW_EUNAVAIL);
        return;
    }
    if (refused(rl, res, "get"))
        return;
    if (res->rc != 0) {
        if (res->status == 404)
            name_done(rl);
        else
            failed(rl, res->rc, res->err.msg);
        return;
    }
    const cJSON *md = sw_json_child(res->body, "metadata");
    const cJSON *labels = sw_json_child(md, "labels");
    const char *by = sw_json_str(labels, SW_LBL_MANAGED);
    const char *from = sw_json_str(labels, SW_LBL_ORIGIN_CL);
    const char *uid = sw_json_str(md, "uid");
    const char *rv = sw_json_str(md, "resourceVersion");
    /* Only spillway's copy from this origin cluster is ours to delete. */
    if (by == NULL || from == NULL || strcmp(by, "spillway") != 0 ||
        strcmp(from, r->cluster) != 0 || !plain(uid) || !plain(rv)) {
        name_done(rl);
        return;
    }
    snprintf(rl->uid, sizeof(rl->uid), "%s", uid);
    snprintf(rl->rv, sizeof(rl->rv), "%s", rv);
    SW_FAILPOINT_HOLD(rl->h->loop, SW_FP_HOLD_COPY_DELETE, r->key, send_delete, &rl);
}

static void next(struct sw_copies_release *rl)
{
    struct sw_job *j = rl->j;
    uint64_t todo = all_names(j) & ~j->copies_names_done;
    if (todo == 0) {
        /* This target is done. */
        j->copies_targets_done |= 1u << rl->ti;
        j->copies_names_done = 0;
        j->copies_hand = 0;
        finish(rl, 0);
        return;
    }
    rl->at = 0;
    while (!(todo & ((uint64_t)1 << rl->at)))
        rl->at++;
    rl->name = name_at(j, rl->at);
    struct sw_member *tm = sw_member_find(rl->h, rl->target);
    char path[600];
    int rc = tm == NULL ? SW_EUNAVAIL : secret_path(rl, path, sizeof(path));
    struct sw_kube_req req = {.path = path, .sensitive = 1};
    if (rc == 0)
        rc = sw_kube_send(tm->client, &req, on_read, rl, NULL);
    if (rc != 0)
        failed(rl, rc, NULL);
}

/* Starts target i's release: false when nothing is to be deleted there. */
static bool start(struct sw_hub *h, struct sw_job *j, int i)
{
    const char *target = target_at(&j->rec, i);
    if (j->copies_hand != i + 1) {
        j->copies_hand = (uint8_t)(i + 1);
        j->copies_names_done = 0;
        j->copies_tries = 0;
    }
    /* Another record's use keeps a copy (counted now; none can start
     * copying there until this release is over: sw_copies_releasing). */
    j->copies_names_done |= used_elsewhere(h, j, target);
    if ((all_names(j) & ~j->copies_names_done) == 0) {
        j->copies_targets_done |= 1u << i;
        j->copies_hand = 0;
        j->copies_names_done = 0;
        return false;
    }
    struct sw_copies_release *rl = sw_calloc(1, sizeof(*rl));
    if (rl == NULL) {
        j->busy = true;
        sw_hub_step_done(h, j, SW_ENOMEM);
        return true;
    }
    rl->h = h;
    rl->j = j;
    rl->ti = i;
    snprintf(rl->target, sizeof(rl->target), "%s", target);
    rl->next = h->releasing;
    h->releasing = rl;
    j->busy = true;
    next(rl);
    return true;
}

bool sw_copies_release(struct sw_hub *h, struct sw_job *j)
{
    const struct sw_job_rec *r = &j->rec;
    if (j->copies_released)
        return false;
    j->hub = h;
    int nt = ntargets(r);
    if (nt > 0 && !known(h, j)) {
        /* Its origin gone and the hub restarted since: nothing to name. */
        for (int i = 0; i < nt; i++)
            if (!(j->copies_targets_done & (1u << i)))
                left(h, j, target_at(r, i), NULL,
                     "the pod template is no longer known: its origin went while no hub kept it");
        j->copies_released = true;
        return false;
    }
    bool waiting = false;
    for (int i = 0; i < nt && j->nsecrets > 0; i++) {
        if (j->copies_targets_done & (1u << i))
            continue;
        struct sw_member *tm = sw_member_find(h, target_at(r, i));
        if (tm == NULL) {
            /* No longer registered: nothing can be sent there. */
            for (size_t k = 0; k < j->nsecrets; k++)
                left(h, j, target_at(r, i), name_at(j, k), "the cluster is no longer registered");
            j->copies_targets_done |= 1u << i;
            continue;
        }
        if (!sw_member_reachable(tm)) {
            waiting = true; /* the others first; this one once it answers */
            continue;
        }
        if (start(h, j, i))
            return true;
    }
    if (waiting) {
        j->next_ms = sw_hub_mono_ms() + 1000;
        return true;
    }
    j->copies_released = true;
    return false;
}
