/*
 * nsguard.c - the namespace a mirror goes into in another member: spillway's
 * own for that origin, or one the platform granted, and never weaker than
 * home's Pod Security (docs/security.md, "Namespaces").
 *
 * A mirror of namespace NS of cluster C goes into namespace NS of the
 * target member. The first time this hub sends one there:
 *   1. it reads namespace NS at home (its Pod Security labels);
 *   2. it creates NS in the target with those labels and the annotation
 *      spillway.io/made-for: C/NS;
 *   3. when NS exists there already, it is used only if it carries that
 *      annotation (spillway made it for this origin) or the origin's grant
 *      says useExistingNamespace, and only if its enforced Pod Security
 *      level is at least home's; otherwise the burst is refused, named.
 * The outcome is kept per member ("C/NS") while the hub runs; a refusal is
 * not kept (the next try looks again). Jobs of one origin namespace for one
 * target that come while a look is under way wait for it and get its
 * answer, so a namespace costs one read at home, not one per Job. With home lost, step 1 cannot be
 * done: the namespace must be there already, spillway's or granted.
 *
 * A target registered with namespaces (`spillctl cluster add --namespaces`:
 * the narrow member role, deploy/rbac/narrow) grants spillway only those:
 * a mirror of another namespace is refused, named, before anything is
 * read; step 2 is never done there (the role cannot create namespaces), so
 * a listed namespace must exist, and being listed by the platform is its
 * grant to be used (step 3's Pod Security check still holds).
 */
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"

#define PSA_PREFIX "pod-security.kubernetes.io/"

/* A Job waiting on a look already under way for its namespace. */
struct nsg_waiter {
    struct sw_job *j;
    sw_nsguard_fn done;
    void *ctx;
    struct nsg_waiter *next;
};

struct nsg {
    struct sw_hub *h;
    struct sw_job *j;
    bool home_lost;
    bool narrow;   /* the target lists its namespaces: none is created there */
    char key[140]; /* "C/NS": the origin */
    char target[64];
    cJSON *psa; /* home's Pod Security labels (an object), or NULL when unknown */
    sw_nsguard_fn done;
    void *ctx;
    struct nsg_waiter *waiters; /* Jobs of the same origin and target, answered with this one */
    struct nsg *next;           /* in `looking` */
};

/* The looks under way: the Jobs of one namespace dispatched together share
 * one (one read at home and one in the target, not one per Job). */
static struct nsg *looking;

/* privileged 0 < baseline 1 < restricted 2; absent: privileged. */
static int psa_level(const cJSON *labels)
{
    const char *v = sw_json_str(labels, PSA_PREFIX "enforce");
    if (v == NULL)
        return 0;
    if (strcmp(v, "restricted") == 0)
        return 2;
    if (strcmp(v, "baseline") == 0)
        return 1;
    return 0;
}

static void finish(struct nsg *g, int rc, const char *why)
{
    struct sw_hub *h = g->h;
    struct sw_job *j = g->j;
    sw_nsguard_fn done = g->done;
    void *ctx = g->ctx;
    if (rc == 0) {
        struct sw_member *tm = sw_member_find(h, j->rec.target_cluster);
        if (tm)
            sw_member_add_namespace(tm, g->key);
    }
    for (struct nsg **p = &looking; *p != NULL; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            break;
        }
    }
    struct nsg_waiter *w = g->waiters;
    cJSON_Delete(g->psa);
    sw_free(g);
    done(h, j, rc, why, ctx);
    while (w != NULL) {
        struct nsg_waiter *next = w->next;
        w->done(h, w->j, rc, why, w->ctx);
        sw_free(w);
        w = next;
    }
}

/* Judges an existing namespace of the target (its object `ns`). */
static void judge(struct nsg *g, const cJSON *ns)
{
    struct sw_job *j = g->j;
    const cJSON *md = sw_json_child((cJSON *)ns, "metadata");
    const char *made_for = sw_json_str(sw_json_child((cJSON *)md, "annotations"), SW_ANN_MADE_FOR);
    bool ours = made_for != NULL && strcmp(made_for, g->key) == 0;
    /* Listed in a narrow registration is no grant: the list is per target,
     * not per origin, and sits in Redis unsealed. The namespace must still
     * be made for this origin (the platform annotates it) or granted. */
    bool granted = sw_tenancy_existing_ns(&g->h->cfg.tenancy, j->rec.cluster, j->rec.ns);
    char why[600];
    if (!ours && !granted) {
        snprintf(why, sizeof(why),
                 "namespace %s exists in cluster %s and spillway did not create it for namespace "
                 "%s of cluster %s%s%s; mirrors go only into a namespace spillway made for their "
                 "origin, or one the origin's grant allows (tenancy.grants useExistingNamespace)",
                 j->rec.ns, j->rec.target_cluster, j->rec.ns, j->rec.cluster,
                 made_for ? ": it was made for " : "", made_for ? made_for : "");
        finish(g, SW_EFORBIDDEN, why);
        return;
    }
    const cJSON *labels = sw_json_child((cJSON *)md, "labels");
    if (g->psa != NULL && psa_level(labels) < psa_level(g->psa)) {
        const char *home = sw_json_str(g->psa, PSA_PREFIX "enforce");
        const char *there = sw_json_str(labels, PSA_PREFIX "enforce");
        snprintf(why, sizeof(why),
                 "namespace %s in cluster %s enforces Pod Security \"%s\", weaker than \"%s\" "
                 "that namespace %s of cluster %s enforces",
                 j->rec.ns, j->rec.target_cluster, there ? there : "privileged (no label)",
                 home ? home : "privileged", j->rec.ns, j->rec.cluster);
        finish(g, SW_EFORBIDDEN, why);
        return;
    }
    finish(g, 0, NULL);
}

static void on_target_ns(struct sw_kube_result *res, void *ctx)
{
    struct nsg *g = ctx;
    if (res->rc != 0) {
        if (res->status == 404 && g->home_lost) {
            char why[400];
            snprintf(why, sizeof(why),
                     "namespace %s is not in cluster %s, and cluster %s, whose Pod Security it "
                     "would copy, is lost",
                     g->j->rec.ns, g->j->rec.target_cluster, g->j->rec.cluster);
            finish(g, SW_EFORBIDDEN, why);
            return;
        }
        if (res->status == 404 && g->narrow) {
            char why[500];
            snprintf(why, sizeof(why),
                     "namespace %s is not in cluster %s: its registration lists it (the narrow "
                     "member role), and spillway creates no namespace there; the platform "
                     "creates it, binds spillway-member-namespace in it and annotates "
                     "it " SW_ANN_MADE_FOR "=%s/%s",
                     g->j->rec.ns, g->j->rec.target_cluster, g->j->rec.cluster, g->j->rec.ns);
            finish(g, SW_EFORBIDDEN, why);
            return;
        }
        finish(g, res->rc, NULL);
        return;
    }
    judge(g, res->body);
}

static void get_target(struct nsg *g)
{
    struct sw_member *tm = sw_member_find(g->h, g->j->rec.target_cluster);
    int rc = tm ? sw_kube_get(tm->client, SW_KIND_NAMESPACE, NULL, g->j->rec.ns, on_target_ns, g)
                : SW_ENOENT;
    if (rc != 0)
        finish(g, rc, NULL);
}

static void on_created(struct sw_kube_result *res, void *ctx)
{
    struct nsg *g = ctx;
    if (res->rc == 0) {
        SW_LOG(SW_LOG_INFO, "target namespace created", "job=%s cluster=%s namespace=%s",
               sw_log_q(g->j->rec.key), sw_log_q(g->j->rec.target_cluster), sw_log_q(g->j->rec.ns));
        finish(g, 0, NULL);
    } else if (strcmp(res->reason, "AlreadyExists") == 0) {
        get_target(g);
    } else {
        SW_LOG(SW_LOG_WARN, "cannot create the target namespace", "job=%s err=%s",
               sw_log_q(g->j->rec.key), sw_log_q(res->err.msg));
        finish(g, res->rc, NULL);
    }
}

static void create_target(struct nsg *g)
{
    struct sw_member *tm = sw_member_find(g->h, g->j->rec.target_cluster);
    if (tm == NULL) {
        finish(g, SW_ENOENT, NULL);
        return;
    }
    cJSON *ns = cJSON_CreateObject();
    cJSON_AddStringToObject(ns, "apiVersion", "v1");
    cJSON_AddStringToObject(ns, "kind", "Namespace");
    cJSON *md = cJSON_AddObjectToObject(ns, "metadata");
    cJSON_AddStringToObject(md, "name", g->j->rec.ns);
    cJSON *labels = g->psa ? cJSON_Duplicate(g->psa, 1) : cJSON_CreateObject();
    if (labels != NULL)
        cJSON_AddStringToObject(labels, SW_LBL_MANAGED, "spillway");
    cJSON_AddItemToObject(md, "labels", labels);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "annotations"), SW_ANN_MADE_FOR, g->key);
    int rc = sw_kube_create(tm->client, SW_KIND_NAMESPACE, NULL, ns, on_created, g);
    cJSON_Delete(ns);
    if (rc != 0)
        finish(g, rc, NULL);
}

static void on_home_ns(struct sw_kube_result *res, void *ctx)
{
    struct nsg *g = ctx;
    if (res->rc != 0) {
        finish(g, res->rc, NULL);
        return;
    }
    g->psa = cJSON_CreateObject();
    const cJSON *l;
    cJSON_ArrayForEach(l, sw_json_path(res->body, "metadata.labels"))
    {
        if (cJSON_IsString(l) && l->string != NULL &&
            strncmp(l->string, PSA_PREFIX, strlen(PSA_PREFIX)) == 0)
            cJSON_AddStringToObject(g->psa, l->string, l->valuestring);
    }
    if (g->narrow)
        get_target(g);
    else
        create_target(g);
}

int sw_nsguard_ensure(struct sw_hub *h, struct sw_job *j, bool home_lost, sw_nsguard_fn done,
                      void *ctx)
{
    char key[140];
    snprintf(key, sizeof(key), "%s/%s", j->rec.cluster, j->rec.ns);
    struct sw_member *tm = sw_member_find(h, j->rec.target_cluster);
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    if (tm == NULL || om == NULL)
        return SW_ENOENT;
    if (!sw_cluster_spec_grants(&tm->rec.spec, j->rec.ns)) {
        char nss[SW_MAX_BURST_NAMESPACES * 66], why[700];
        sw_cluster_namespaces_str(&tm->rec.spec, nss, sizeof(nss));
        snprintf(why, sizeof(why),
                 "namespace %s has no grant in cluster %s: its registration (the narrow member "
                 "role) lets spillway into namespaces %.400s only",
                 j->rec.ns, j->rec.target_cluster, nss);
        done(h, j, SW_EFORBIDDEN, why, ctx);
        return 0;
    }
    if (sw_member_has_namespace(tm, key)) {
        done(h, j, 0, NULL, ctx);
        return 0;
    }
    for (struct nsg *o = looking; o != NULL; o = o->next) {
        if (o->h == h && o->home_lost == home_lost && strcmp(o->key, key) == 0 &&
            strcmp(o->target, j->rec.target_cluster) == 0) {
            struct nsg_waiter *w = sw_calloc(1, sizeof(*w));
            if (w == NULL)
                return SW_ENOMEM;
            *w = (struct nsg_waiter){.j = j, .done = done, .ctx = ctx, .next = o->waiters};
            o->waiters = w;
            return 0;
        }
    }
    struct nsg *g = sw_calloc(1, sizeof(*g));
    if (g == NULL)
        return SW_ENOMEM;
    *g = (struct nsg){.h = h,
                      .j = j,
                      .home_lost = home_lost,
                      .narrow = tm->rec.spec.nnamespaces > 0,
                      .done = done,
                      .ctx = ctx};
    memcpy(g->key, key, sizeof(key));
    snprintf(g->target, sizeof(g->target), "%s", j->rec.target_cluster);
    g->next = looking;
    looking = g;
    if (home_lost) {
        get_target(g);
        return 0;
    }
    int rc = sw_kube_get(om->client, SW_KIND_NAMESPACE, NULL, j->rec.ns, on_home_ns, g);
    if (rc != 0) {
        looking = g->next; /* just pushed, and no waiter yet: nothing ran in between */
        sw_free(g);
    }
    return rc;
}
