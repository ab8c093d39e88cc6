/*
 * copies.c - spillway's copies of Secrets in a target let go of once no
 * mirror of their origin namespace there uses them (hub.h,
 * sw_copies_release).
 *
 * dispatch.c copies every Secret a mirror's pod template references into
 * the mirror's namespace in the target, under its name at home, labelled
 * app.kubernetes.io/managed-by=spillway and spillway.io/origin-cluster.
 * One copy serves every mirror of that origin namespace in that target.
 * When a Job's mirror is gone (retired, or its origin deleted), each Secret
 * its pod template references is deleted from the target unless the pod
 * template of another record of the same origin namespace and target
 * references it too (a record that has been through this step itself has
 * no mirror left and does not count); a record whose template the hub
 * cannot read now counts as using them all. Each is read first (get, the member role's
 * own verb: no list of Secrets is needed), checked to carry both of
 * spillway's labels for this origin cluster (the answer is untrusted), and
 * deleted with the uid and resourceVersion read as preconditions, so a copy
 * that a new dispatch brought up to date meanwhile is kept. A Secret
 * spillway did not make is never deleted. Every request here carries the
 * Secret's data in its answer and is marked sensitive (wiped).
 */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"
#include "controller/hub/mirror.h"
#include "controller/hub/podrefs.h"

struct release {
    struct sw_hub *h;
    struct sw_job *j;
    struct sw_pod_refs refs; /* the Secrets of j's template; refs.refs[at] in hand */
    size_t at;
};

/* The pod template of a record's origin: the cache's whole Job, or the copy
 * the hub kept; NULL when neither is there. */
static const cJSON *template_of(struct sw_hub *h, const struct sw_job *j)
{
    const cJSON *o = sw_observe_origin_whole(h, &j->rec);
    if (o == NULL)
        o = j->kept;
    return o ? sw_json_path(o, "spec.template.spec") : NULL;
}

/* Whether the Secret `name` is referenced by `j`'s template; true when the
 * template cannot be read (the safe answer). */
static bool uses(struct sw_hub *h, const struct sw_job *j, const char *name)
{
    const cJSON *t = template_of(h, j);
    if (t == NULL)
        return true;
    struct sw_pod_refs *refs = sw_calloc(1, sizeof(*refs));
    if (refs == NULL)
        return true;
    struct sw_error err;
    bool used = sw_pod_refs_collect(t, "spec.template.spec", refs, &err) != 0;
    for (size_t i = 0; !used && i < refs->n; i++)
        used = refs->refs[i].kind == SW_POD_REF_SECRET && strcmp(refs->refs[i].name, name) == 0;
    sw_free(refs);
    return used;
}

struct peer {
    const struct sw_job *j;
    const char *name;
    bool used;
};

static void find_user(struct sw_hub *h, struct sw_job *o, void *ctx)
{
    struct peer *p = ctx;
    const struct sw_job_rec *a = &p->j->rec, *b = &o->rec;
    /* A record past its own release has no mirror left that could use
     * the copy: without this, two Jobs ending together would each keep the
     * copy for the other, and it would stay. */
    if (p->used || o == p->j || o->copies_released || strcmp(a->cluster, b->cluster) != 0 ||
        strcmp(a->ns, b->ns) != 0 || strcmp(a->target_cluster, b->target_cluster) != 0)
        return;
    p->used = uses(h, o, p->name);
}

/* Whether another record of the same origin namespace and target uses the
 * copy `name`: its mirror runs with it, or will (a record exists from the
 * decision on, before dispatch copies anything). */
static bool used_elsewhere(struct sw_hub *h, const struct sw_job *j, const char *name)
{
    struct peer p = {j, name, false};
    sw_hub_jobs_foreach(h, find_user, &p);
    return p.used;
}

static void done(struct release *rl, int rc)
{
    struct sw_hub *h = rl->h;
    struct sw_job *j = rl->j;
    if (rc == 0)
        j->copies_released = true;
    sw_free(rl);
    sw_hub_step_done(h, j, rc);
}

static const char *cur(const struct release *rl)
{
    return rl->refs.refs[rl->at].name;
}

static int secret_path(const struct release *rl, char *path, size_t len)
{
    snprintf(path, len, "/api/v1/namespaces");
    int rc = sw_kube_path_segment(path, len, rl->j->rec.ns);
    if (rc == 0)
        rc = sw_kube_path_segment(path, len, "secrets");
    if (rc == 0)
        rc = sw_kube_path_segment(path, len, cur(rl));
    return rc;
}

static void next(struct release *rl);

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

static bool refused(struct release *rl, const struct sw_kube_result *res, const char *what)
{
    if (res->status != 403)
        return false;
    const struct sw_job_rec *r = &rl->j->rec;
    /* An older member role (no delete on secrets): the copy stays, and the
     * Job's retirement does not wait for a permission it may never get. */
    SW_LOG(SW_LOG_WARN,
           "spillway's copy of a Secret is left: the member role does not allow it (apply "
           "deploy/rbac/member-clusterrole.yaml again)",
           "job=%s target=%s ns=%s name=%s verb=%s", sw_log_q(r->key), sw_log_q(r->target_cluster),
           sw_log_q(r->ns), sw_log_q(cur(rl)), what);
    done(rl, 0);
    return true;
}

static void on_deleted(struct sw_kube_result *res, void *ctx)
{
    struct release *rl = ctx;
    const struct sw_job_rec *r = &rl->j->rec;
    if (refused(rl, res, "delete"))
        return;
    /* 404: gone already; 409: changed since it was read (a new dispatch
     * brought it up to date, so it is in use again): kept. */
    if (res->rc != 0 && res->status != 404 && res->status != 409) {
        done(rl, res->rc);
        return;
    }
    SW_LOG(SW_LOG_INFO,
           res->status == 409 ? "spillway's copy of a Secret changed since it was read; kept"
                              : "deleted spillway's copy of a Secret",
           "job=%s target=%s ns=%s name=%s", sw_log_q(r->key), sw_log_q(r->target_cluster),
           sw_log_q(r->ns), sw_log_q(cur(rl)));
    rl->at++;
    next(rl);
}

static void on_read(struct sw_kube_result *res, void *ctx)
{
    struct release *rl = ctx;
    const struct sw_job_rec *r = &rl->j->rec;
    if (refused(rl, res, "get"))
        return;
    if (res->rc != 0) {
        if (res->status == 404) {
            rl->at++;
            next(rl);
        } else {
            done(rl, res->rc);
        }
        return;
    }
    const cJSON *md = sw_json_child(res->body, "metadata");
    const cJSON *labels = sw_json_child(md, "labels");
    const char *by = sw_json_str(labels, SW_LBL_MANAGED);
    const char *from = sw_json_str(labels, SW_LBL_ORIGIN_CL);
    const char *uid = sw_json_str(md, "uid");
    const char *rv = sw_json_str(md, "resourceVersion");
    struct sw_member *tm = sw_member_find(rl->h, r->target_cluster);
    /* Only spillway's copy from this origin cluster is ours to delete; and
     * not while another mirror of the namespace there uses it (checked
     * again: a record may have come since this began). */
    if (by == NULL || from == NULL || strcmp(by, "spillway") != 0 ||
        strcmp(from, r->cluster) != 0 || !plain(uid) || !plain(rv) || tm == NULL ||
        used_elsewhere(rl->h, rl->j, cur(rl))) {
        rl->at++;
        next(rl);
        return;
    }
    char path[600], body[256];
    int rc = secret_path(rl, path, sizeof(path));
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
             "{\"uid\":\"%s\",\"resourceVersion\":\"%s\"}}",
             uid, rv);
    /* The answer to a DELETE of a Secret is the Secret, data and all. */
    struct sw_kube_req req = {
        .method = "DELETE", .path = path, .body = body, .body_len = strlen(body), .sensitive = 1};
    if (rc == 0)
        rc = sw_kube_send(tm->client, &req, on_deleted, rl, NULL);
    if (rc != 0)
        done(rl, rc);
}

static void next(struct release *rl)
{
    while (rl->at < rl->refs.n && (rl->refs.refs[rl->at].kind != SW_POD_REF_SECRET ||
                                   used_elsewhere(rl->h, rl->j, cur(rl))))
        rl->at++;
    if (rl->at >= rl->refs.n) {
        done(rl, 0);
        return;
    }
    struct sw_member *tm = sw_member_find(rl->h, rl->j->rec.target_cluster);
    char path[600];
    int rc = tm == NULL ? SW_EUNAVAIL : secret_path(rl, path, sizeof(path));
    struct sw_kube_req req = {.path = path, .sensitive = 1};
    if (rc == 0)
        rc = sw_kube_send(tm->client, &req, on_read, rl, NULL);
    if (rc != 0)
        done(rl, rc);
}

bool sw_copies_release(struct sw_hub *h, struct sw_job *j)
{
    const struct sw_job_rec *r = &j->rec;
    if (j->copies_released)
        return false;
    struct sw_member *tm = r->target_cluster[0] ? sw_member_find(h, r->target_cluster) : NULL;
    const cJSON *t = template_of(h, j);
    /* Nothing was copied (it ran at home), the target is no longer
     * registered, or the template is not known (nothing to name). */
    if (tm == NULL || strcmp(r->target_cluster, r->cluster) == 0 || t == NULL) {
        if (tm != NULL && t == NULL && strcmp(r->target_cluster, r->cluster) != 0)
            SW_LOG(SW_LOG_INFO, "copies of Secrets not released: the pod template is not known",
                   "job=%s target=%s", sw_log_q(r->key), sw_log_q(r->target_cluster));
        j->copies_released = true;
        return false;
    }
    struct release *rl = sw_calloc(1, sizeof(*rl));
    if (rl == NULL) {
        j->busy = true;
        sw_hub_step_done(h, j, SW_ENOMEM);
        return true;
    }
    struct sw_error err;
    int rc = sw_pod_refs_collect(t, "spec.template.spec", &rl->refs, &err);
    if (rc != 0) {
        /* A template dispatch refused copies nothing. */
        sw_free(rl);
        j->copies_released = rc != SW_ENOMEM;
        if (rc == SW_ENOMEM) {
            j->busy = true;
            sw_hub_step_done(h, j, rc);
            return true;
        }
        return false;
    }
    rl->h = h;
    rl->j = j;
    j->hub = h;
    j->busy = true;
    next(rl);
    return true;
}
