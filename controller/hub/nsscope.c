/*
 * nsscope.c - which origin namespaces this hub serves: every one, or, with
 * namespaceSelector in its config, those of each member whose labels match
 * it (nsselect.h; docs/hub.md, "Serving some namespaces").
 *
 * The hub learns a namespace's labels the first time it sees a burstable
 * Job there that it holds no record of (observe.c asks only then), with
 * one GET of the namespace at that member (the permission nsguard.c
 * already needs: the narrow member role grants it in the burst
 * namespaces), and again every NSSCOPE_REFRESH_MS while such Jobs are
 * seen, so a label added or removed takes effect within that time. Until
 * the first answer the namespace is not served: a Job there is not
 * touched, annotated or counted, and is taken at the first scan after the
 * answer says it is in. An answer that is not that namespace (another name,
 * labels that are not an object of strings) serves nothing; a namespace
 * that is not found, or may not be read, is not served. A namespace that
 * leaves the selector ends no burst under way: the Jobs that have a record,
 * or a mirror carrying this hub's proof (a record Redis lost), are followed
 * to their end; only new ones are not taken.
 *
 * One hub per process, on one loop: the table is this file's.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"

#define NSSCOPE_REFRESH_MS 30000
#define NSSCOPE_RETRY_MS   5000
/* A namespace not asked about this long is forgotten (its Jobs are gone). */
#define NSSCOPE_FORGET_MS (10 * 60 * 1000)
#define NSSCOPE_BUCKETS   1024

struct nsentry {
    char cluster[64];
    char ns[64];
    bool known;    /* an answer came */
    bool selected; /* the last answer's verdict */
    bool pending;  /* a GET is under way */
    bool warned;   /* the last failure was logged */
    int64_t next_ms;
    int64_t asked_ms;
    struct nsentry *next;
};

static struct nsentry *table[NSSCOPE_BUCKETS];
static int64_t next_sweep_ms;

static unsigned ns_hash(const char *cluster, const char *ns)
{
    unsigned h = 2166136261u;
    for (const char *s = cluster; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ '/') * 16777619u;
    for (const char *s = ns; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % NSSCOPE_BUCKETS;
}

static struct nsentry *find(const char *cluster, const char *ns)
{
    for (struct nsentry *e = table[ns_hash(cluster, ns)]; e; e = e->next)
        if (strcmp(e->cluster, cluster) == 0 && strcmp(e->ns, ns) == 0)
            return e;
    return NULL;
}

/* Entries not asked about for NSSCOPE_FORGET_MS, and with no GET under
 * way (its callback finds the entry by name, so one freed is only
 * missed), are freed. */
static void sweep(int64_t now)
{
    if (now < next_sweep_ms)
        return;
    next_sweep_ms = now + 60000;
    for (size_t b = 0; b < NSSCOPE_BUCKETS; b++) {
        struct nsentry **pp = &table[b];
        while (*pp) {
            struct nsentry *e = *pp;
            if (!e->pending && now - e->asked_ms > NSSCOPE_FORGET_MS) {
                *pp = e->next;
                sw_free(e);
            } else {
                pp = &e->next;
            }
        }
    }
}

struct nsget {
    struct sw_hub *h;
    char cluster[64];
    char ns[64];
};

static void set_verdict(struct sw_hub *h, struct nsentry *e, bool selected, const char *why)
{
    bool changed = !e->known || e->selected != selected;
    e->known = true;
    e->selected = selected;
    e->warned = false;
    e->next_ms = sw_hub_mono_ms() + NSSCOPE_REFRESH_MS;
    if (changed)
        SW_LOG(SW_LOG_INFO, selected ? "namespace served" : "namespace not served",
               "cluster=%s namespace=%s selector=%s why=%s", sw_log_q(e->cluster), sw_log_q(e->ns),
               sw_log_q(h->cfg.ns_selector.text), sw_log_q(why));
    if (changed && selected)
        sw_hub_kick(h);
}

static void on_namespace(struct sw_kube_result *res, void *ctx)
{
    struct nsget *g = ctx;
    struct nsentry *e = find(g->cluster, g->ns);
    if (e == NULL) { /* forgotten meanwhile: nothing waits for it */
        sw_free(g);
        return;
    }
    e->pending = false;
    const char *why = NULL;
    enum sw_nssel_verdict v =
        sw_nssel_answer(&g->h->cfg.ns_selector, g->ns, res->rc, res->status, res->body, &why);
    if (v != SW_NSSEL_NO_ANSWER) {
        /* 404 or 403: gone, or not ours to read: not served (a Job there is
         * not ours either: the narrow member role grants every burst
         * namespace). */
        set_verdict(g->h, e, v == SW_NSSEL_SERVED, res->rc == 0 ? why : res->err.msg);
    } else {
        /* No answer: the last verdict stands, asked again soon. */
        e->next_ms = sw_hub_mono_ms() + NSSCOPE_RETRY_MS;
        if (!e->warned)
            SW_LOG(SW_LOG_WARN, "cannot read a namespace's labels for namespaceSelector",
                   "cluster=%s namespace=%s err=%s", sw_log_q(e->cluster), sw_log_q(e->ns),
                   sw_log_q(res->err.msg));
        e->warned = true;
    }
    sw_free(g);
}

bool sw_nsscope_serves(struct sw_hub *h, const struct sw_member *m, const char *ns)
{
    if (h->cfg.ns_selector.nterms == 0)
        return true;
    const char *cluster = m->rec.name;
    if (strlen(cluster) >= sizeof(((struct nsentry *)0)->cluster) ||
        strlen(ns) >= sizeof(((struct nsentry *)0)->ns))
        return false; /* longer than any name Kubernetes or a registration allows */
    int64_t now = sw_hub_mono_ms();
    sweep(now);
    struct nsentry *e = find(cluster, ns);
    if (e == NULL) {
        if ((e = sw_calloc(1, sizeof(*e))) == NULL)
            return false;
        snprintf(e->cluster, sizeof(e->cluster), "%s", cluster);
        snprintf(e->ns, sizeof(e->ns), "%s", ns);
        unsigned b = ns_hash(cluster, ns);
        e->next = table[b];
        table[b] = e;
    }
    e->asked_ms = now;
    if (!e->pending && now >= e->next_ms && m->client != NULL) {
        struct nsget *g = sw_calloc(1, sizeof(*g));
        if (g != NULL) {
            g->h = h;
            snprintf(g->cluster, sizeof(g->cluster), "%s", cluster);
            snprintf(g->ns, sizeof(g->ns), "%s", ns);
            e->pending = true;
            if (sw_kube_get(m->client, SW_KIND_NAMESPACE, NULL, ns, on_namespace, g) != 0) {
                e->pending = false;
                e->next_ms = now + NSSCOPE_RETRY_MS;
                sw_free(g);
            }
        }
    }
    return e->known && e->selected;
}
