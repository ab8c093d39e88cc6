/*
 * multikueue.c - spillway as MultiKueue's external dispatcher
 * (kueue.multiKueueDispatcher; docs/kueue.md).
 *
 * On a member whose Kueue is a MultiKueue manager configured with
 * multiKueue.dispatcherName set to an external dispatcher, Kueue creates a
 * manager Workload's copies only in the workers named in its
 * status.nominatedClusterNames, and the first worker to admit its copy
 * wins; without a nomination nothing is dispatched. Each round:
 *
 *   find     the member's MultiKueue AdmissionChecks and their
 *            MultiKueueConfigs (listed again every CHECKS_REFRESH_MS), and
 *            its Workloads waiting for dispatch (clusters/multikueue.h)
 *   rank     the engine, on the round's snapshot cut to the pools of the
 *            workers that are registered members (decide.c), ranks each
 *            Workload's workers, cheapest first
 *   nominate the first kueue.multiKueueWorkers of them, written with a
 *            server-side apply of the status subresource (field manager
 *            spillway-dispatcher) carrying the resourceVersion read: a
 *            Workload changed meanwhile is left for the next round; nothing
 *            is written when the list is already right
 *   hand over once exactly one nominated worker's copy is Admitted there
 *            (Kueue's test of the winner): the same apply with
 *            status.clusterName the winner and nominatedClusterNames [].
 *            Kueue cannot finish this itself: its own write (field manager
 *            kueue-admission) sets clusterName and drops the list, but a
 *            server-side apply only removes fields its manager owns alone,
 *            the CRD refuses clusterName beside a non-empty list, and
 *            Kueue's webhook refuses a clusterName the old list did not
 *            name (both seen on the lab). The empty list passes the first,
 *            the old list the second; Kueue's write then marks the check
 *            Ready and copies the Job there
 *   release  once the check is no longer Pending (Kueue's write, which
 *            names clusterName too), an apply with no status: the hub owns
 *            nothing on the Workload again, the empty list goes, and Kueue
 *            alone decides when clusterName is reset (an eviction)
 *
 * A Workload none of whose workers is a registered member, or none can take
 * now, is left alone (Kueue keeps waiting) with a log line and a Warning
 * Event, once per Workload version. When the setting is off this file does
 * nothing: no informer, no list, no write.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"

#define FIELD_MANAGER     "spillway-dispatcher"
#define CHECKS_REFRESH_MS 10000
#define MK_MAX_MEMBERS    SW_HUB_MAX_MEMBERS
#define MK_MAX_ACS        16
#define MK_MAX_CONFIGS    16
#define MK_MAX_WORKERS    64
#define MK_DONE_RING      4096

/* What the hub read of one member's MultiKueue objects. */
struct mk_member {
    char name[SW_CLUSTER_NAME_MAX];
    struct sw_mk_admission_check ac[MK_MAX_ACS];
    size_t nac;
    struct sw_mk_config cfg[MK_MAX_CONFIGS];
    size_t ncfg;
    int64_t next_ms;
    int inflight;
};

static struct mk_member *mks[MK_MAX_MEMBERS];
static size_t nmks;

/* Writes and warnings already made for a Workload version: "uid@rv/what". */
static char done_ring[MK_DONE_RING][112];
static size_t done_at;

static bool done_has(const char *k)
{
    for (size_t i = 0; i < MK_DONE_RING; i++)
        if (strcmp(done_ring[i], k) == 0)
            return true;
    return false;
}

static void done_add(const char *k)
{
    snprintf(done_ring[done_at], sizeof(done_ring[0]), "%s", k);
    done_at = (done_at + 1) % MK_DONE_RING;
}

static struct mk_member *mk_of(const char *name)
{
    for (size_t i = 0; i < nmks; i++)
        if (strcmp(mks[i]->name, name) == 0)
            return mks[i];
    if (nmks == MK_MAX_MEMBERS)
        return NULL;
    struct mk_member *s = sw_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    snprintf(s->name, sizeof(s->name), "%s", name);
    mks[nmks++] = s;
    return s;
}

/* ---- the member's MultiKueue AdmissionChecks and MultiKueueConfigs ------ */

struct list_ctx {
    char member[SW_CLUSTER_NAME_MAX];
    enum sw_kube_kind kind;
};

static void on_listed(struct sw_kube_result *res, void *ctx)
{
    struct list_ctx *lc = ctx;
    struct mk_member *s = mk_of(lc->member);
    if (s != NULL)
        s->inflight--;
    if (s == NULL || res->rc != 0) {
        /* No such kinds (no Kueue, an older one): not a manager. */
        if (res->status != 404 && res->rc != 0)
            SW_LOG(SW_LOG_WARN, "cannot list MultiKueue objects", "cluster=%s kind=%s err=%s",
                   sw_log_q(lc->member), sw_kube_kind_name(lc->kind), sw_log_q(res->err.msg));
        if (s != NULL && res->status == 404) {
            if (lc->kind == SW_KIND_ADMISSIONCHECK)
                s->nac = 0;
            else
                s->ncfg = 0;
        }
        sw_free(lc);
        return;
    }
    const cJSON *it;
    size_t n = 0;
    cJSON_ArrayForEach(it, sw_json_child(res->body, "items"))
    {
        struct sw_error err = {0};
        if (lc->kind == SW_KIND_ADMISSIONCHECK) {
            if (n == MK_MAX_ACS)
                break;
            if (sw_mk_admission_check_from_json(it, &s->ac[n], &err) == 0 && s->ac[n].multikueue)
                n++;
            else if (err.msg[0])
                SW_LOG(SW_LOG_WARN, "an AdmissionCheck the hub cannot read", "cluster=%s err=%s",
                       sw_log_q(lc->member), sw_log_q(err.msg));
        } else {
            if (n == MK_MAX_CONFIGS)
                break;
            if (sw_mk_config_from_json(it, &s->cfg[n], &err) == 0)
                n++;
            else
                SW_LOG(SW_LOG_WARN, "a MultiKueueConfig the hub cannot read", "cluster=%s err=%s",
                       sw_log_q(lc->member), sw_log_q(err.msg));
        }
    }
    if (lc->kind == SW_KIND_ADMISSIONCHECK)
        s->nac = n;
    else
        s->ncfg = n;
    sw_free(lc);
}

static void refresh(struct sw_member *m, struct mk_member *s, int64_t now)
{
    if (s->inflight > 0 || now < s->next_ms)
        return;
    s->next_ms = now + CHECKS_REFRESH_MS;
    const enum sw_kube_kind kinds[2] = {SW_KIND_ADMISSIONCHECK, SW_KIND_MULTIKUEUECONFIG};
    for (int k = 0; k < 2; k++) {
        struct list_ctx *lc = sw_calloc(1, sizeof(*lc));
        if (lc == NULL)
            return;
        snprintf(lc->member, sizeof(lc->member), "%s", m->rec.name);
        lc->kind = kinds[k];
        struct sw_kube_list_opts o = {.limit = -1};
        s->inflight++;
        if (sw_kube_list(m->client, kinds[k], NULL, &o, on_listed, lc) != 0) {
            s->inflight--;
            sw_free(lc);
        }
    }
}

static const struct sw_mk_config *config_of(const struct mk_member *s, const char *check)
{
    for (size_t i = 0; i < s->nac; i++) {
        if (strcmp(s->ac[i].name, check) != 0)
            continue;
        for (size_t c = 0; c < s->ncfg; c++)
            if (strcmp(s->cfg[c].name, s->ac[i].config) == 0)
                return &s->cfg[c];
    }
    return NULL;
}

/* ---- writes ------------------------------------------------------------- */

static void now_rfc3339(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void ignore(struct sw_kube_result *res, void *ctx)
{
    (void)ctx;
    if (res->rc != 0)
        SW_LOG(SW_LOG_DEBUG, "an Event on a Workload was not created", "err=%s",
               sw_log_q(res->err.msg));
}

/* An Event on the manager's Workload (best effort). */
static void wl_event(struct sw_member *m, const struct sw_mk_workload *w, const char *type,
                     const char *reason, const char *msg)
{
    static unsigned seq;
    char name[128], ts[32];
    snprintf(name, sizeof(name), "%.60s.swmk%llx%04x", w->f.name,
             (unsigned long long)sw_hub_wall_ms(), ++seq & 0xffff);
    now_rfc3339(ts, sizeof(ts));
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "apiVersion", "v1");
    cJSON_AddStringToObject(e, "kind", "Event");
    cJSON *md = cJSON_AddObjectToObject(e, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", w->f.ns);
    cJSON *io = cJSON_AddObjectToObject(e, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", SW_KUEUE_API);
    cJSON_AddStringToObject(io, "kind", "Workload");
    cJSON_AddStringToObject(io, "name", w->f.name);
    cJSON_AddStringToObject(io, "namespace", w->f.ns);
    if (w->uid[0])
        cJSON_AddStringToObject(io, "uid", w->uid);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddStringToObject(e, "reason", reason);
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "firstTimestamp", ts);
    cJSON_AddStringToObject(e, "lastTimestamp", ts);
    cJSON_AddNumberToObject(e, "count", 1);
    cJSON_AddObjectToObject(e, "source");
    cJSON_AddStringToObject(sw_json_child(e, "source"), "component", "spillway-dispatcher");
    sw_kube_create(m->client, SW_KIND_EVENT, w->f.ns, e, ignore, NULL);
    cJSON_Delete(e);
}

/* What a status apply of the dispatcher says (docs/kueue.md, "How it is
 * written"). */
enum mk_write {
    MK_NOMINATE, /* status.nominatedClusterNames: the names */
    MK_HANDOVER, /* status.clusterName: the winner, status.nominatedClusterNames: [] */
    MK_RELEASE,  /* nothing: the hub's ownership of both given up */
};

static const char *const mk_write_done[] = {
    [MK_NOMINATE] = "nominated MultiKueue workers",
    [MK_HANDOVER] = "handed the Workload over to the worker that admitted it",
    [MK_RELEASE] = "released the Workload's status fields (Kueue owns them)",
};

struct write_ctx {
    char member[SW_CLUSTER_NAME_MAX];
    char key[320];
    enum mk_write what;
};

static void on_written(struct sw_kube_result *res, void *ctx)
{
    struct write_ctx *wc = ctx;
    if (res->rc == 0)
        SW_LOG(SW_LOG_INFO, mk_write_done[wc->what], "cluster=%s workload=%s", sw_log_q(wc->member),
               sw_log_q(wc->key));
    else if (res->status == 409)
        SW_LOG(SW_LOG_INFO, "the Workload changed before the dispatcher's write; next round",
               "cluster=%s workload=%s", sw_log_q(wc->member), sw_log_q(wc->key));
    else
        SW_LOG(SW_LOG_WARN, "cannot write the Workload's status", "cluster=%s workload=%s err=%s",
               sw_log_q(wc->member), sw_log_q(wc->key), sw_log_q(res->err.msg));
    sw_free(wc);
}

/* The status apply of `what`: MK_NOMINATE with `names` (n of them),
 * MK_HANDOVER with names[0] the winner. */
static void apply_status(struct sw_member *m, const struct sw_mk_workload *w, enum mk_write what,
                         const char (*names)[SW_MK_NAME_MAX], size_t n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", SW_KUEUE_API);
    cJSON_AddStringToObject(o, "kind", "Workload");
    cJSON *md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", w->f.name);
    cJSON_AddStringToObject(md, "namespace", w->f.ns);
    cJSON_AddStringToObject(md, "resourceVersion", w->rv);
    if (what != MK_RELEASE) {
        cJSON *st = cJSON_AddObjectToObject(o, "status");
        if (what == MK_HANDOVER)
            cJSON_AddStringToObject(st, "clusterName", names[0]);
        cJSON *arr = cJSON_AddArrayToObject(st, "nominatedClusterNames");
        for (size_t i = 0; what == MK_NOMINATE && i < n; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateString(names[i]));
    }
    struct write_ctx *wc = sw_calloc(1, sizeof(*wc));
    if (wc != NULL) {
        snprintf(wc->member, sizeof(wc->member), "%s", m->rec.name);
        snprintf(wc->key, sizeof(wc->key), "%s/%s", w->f.ns, w->f.name);
        wc->what = what;
        if (sw_kube_apply_sub(m->client, SW_KIND_WORKLOAD, w->f.ns, w->f.name, o, "status",
                              FIELD_MANAGER, 1, on_written, wc) != 0)
            sw_free(wc);
    }
    cJSON_Delete(o);
}

/* A status write made once per Workload version. */
static bool once(const struct sw_mk_workload *w, const char *what)
{
    char k[112];
    snprintf(k, sizeof(k), "%.63s@%.31s/%s", w->uid, w->rv, what);
    if (done_has(k))
        return false;
    done_add(k);
    return true;
}

/* ---- the round ------------------------------------------------------------ */

struct item {
    struct sw_member *m;
    const struct sw_mk_config *cfg;
    struct sw_mk_workload w;
    char key[320];
};

struct scan {
    struct sw_hub *h;
    struct sw_member *m;
    struct mk_member *s;
    struct item *items;
    size_t n, cap;
};

/* Whether the copy of `w` on worker `name` has won it (sw_mk_copy_won:
 * Admitted there, Kueue's own test). */
static bool copy_won_on(struct sw_hub *h, const struct sw_mk_workload *w, const char *name)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", w->f.ns, w->f.name);
    struct sw_member *wm = sw_member_find(h, name);
    if (wm == NULL || wm->cache == NULL)
        return false;
    const cJSON *copy =
        sw_informer_get(sw_cluster_cache_informer(wm->cache, SW_KIND_WORKLOAD), key);
    struct sw_workload_facts f;
    struct sw_error err = {0};
    return copy != NULL && sw_workload_facts_from_json(copy, &f, &err) == 0 && sw_mk_copy_won(&f);
}

/* The nominated workers whose copies have won `w`: how many, the first in
 * *winner. */
static size_t winners(struct sw_hub *h, const struct sw_mk_workload *w, const char **winner)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nnominated; i++)
        if (copy_won_on(h, w, w->nominated[i]) && n++ == 0)
            *winner = w->nominated[i];
    return n;
}

static void scan_one(const char *key, const void *obj, void *ctx)
{
    struct scan *sc = ctx;
    struct item it = {.m = sc->m};
    struct sw_error err = {0};
    if (sw_mk_workload_from_json(obj, &it.w, &err) != 0)
        return; /* not one the dispatcher can read: Kueue's own (queue.c warns for Jobs) */
    snprintf(it.key, sizeof(it.key), "%s", key);
    for (size_t c = 0; c < it.w.nchecks; c++) {
        const struct sw_mk_config *cfg = config_of(sc->s, it.w.checks[c].name);
        if (cfg == NULL)
            continue;
        if (sw_mk_handed_over(&it.w)) {
            /* Released once Kueue has written the check's outcome (its write
             * names clusterName too, so the field stays), or at once when
             * the winner's copy is gone or lost its admission before that:
             * the Workload then waits for a nomination again. */
            if ((strcmp(sw_mk_check_state(&it.w, it.w.checks[c].name), "Pending") != 0 ||
                 !copy_won_on(sc->h, &it.w, it.w.cluster_name)) &&
                once(&it.w, "release"))
                apply_status(sc->m, &it.w, MK_RELEASE, NULL, 0);
            return;
        }
        if (sw_mk_waits_for_dispatch(&it.w, it.w.checks[c].name)) {
            const char *winner = NULL;
            size_t nwon = it.w.nnominated > 0 ? winners(sc->h, &it.w, &winner) : 0;
            /* One copy admitted: handed over. Several: Kueue keeps the one
             * admitted first and deletes the others in its next reconcile
             * (reconcileGroup, step 6); the hand-over waits for that, so
             * that it names Kueue's choice. */
            if (nwon == 1 && once(&it.w, "handover")) {
                char name[1][SW_MK_NAME_MAX];
                snprintf(name[0], sizeof(name[0]), "%s", winner);
                SW_LOG(SW_LOG_INFO, "a nominated worker admitted the Workload; handing it over",
                       "cluster=%s workload=%s worker=%s", sw_log_q(sc->m->rec.name),
                       sw_log_q(it.key), sw_log_q(winner));
                apply_status(sc->m, &it.w, MK_HANDOVER, (const char(*)[SW_MK_NAME_MAX])name, 1);
            }
            if (nwon > 0)
                return;
            /* A Workload in a namespace this hub does not serve
             * (namespaceSelector, nsscope.c) is another hub's to nominate,
             * or nobody's. One already nominated is handed over (above) and
             * released (handed-over branch) whatever its namespace's labels
             * now say: Kueue's choice, the same from any hub. */
            if (!sw_nsscope_serves(sc->h, sc->m, it.w.f.ns))
                return;
            if (sc->n == sc->cap) {
                size_t nc = sc->cap ? sc->cap * 2 : 16;
                void *p = sw_realloc(sc->items, nc * sizeof(*sc->items));
                if (p == NULL)
                    return;
                sc->items = p;
                sc->cap = nc;
            }
            it.cfg = cfg;
            sc->items[sc->n++] = it;
        }
        return;
    }
}

static double created_s(const char *ts)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (ts == NULL || strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm) == NULL)
        return 0;
    return (double)timegm(&tm);
}

static void nominate(struct sw_hub *h, struct item *it, const struct sw_mk_rank *r, bool any_member)
{
    const struct sw_mk_workload *w = &it->w;
    if (r->n == 0) {
        if (!once(w, "none"))
            return;
        char list[400] = "", msg[600];
        for (size_t i = 0; i < it->cfg->nclusters; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%.60s", i ? ", " : "",
                     it->cfg->clusters[i]);
        if (!any_member)
            snprintf(msg, sizeof(msg),
                     "spillway's dispatcher: no worker of MultiKueueConfig %.100s (%s) is a "
                     "registered spillway member with pools; the Workload is not dispatched",
                     it->cfg->name, list);
        else
            snprintf(msg, sizeof(msg),
                     "spillway's dispatcher: no worker of MultiKueueConfig %.100s (%s) can take "
                     "it: %s; decided again next round",
                     it->cfg->name, list, sw_exclusion_text(r->main_exclusion));
        SW_LOG(SW_LOG_WARN, "a MultiKueue Workload with no worker to nominate",
               "cluster=%s workload=%s why=%s", sw_log_q(it->m->rec.name), sw_log_q(it->key),
               sw_log_q(msg));
        wl_event(it->m, w, "Warning", "NoWorkerToNominate", msg);
        return;
    }
    size_t n = r->n < (size_t)h->cfg.mk_workers ? r->n : (size_t)h->cfg.mk_workers;
    bool same = n == w->nnominated;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(w->nominated[i], r->choice[i].cluster) == 0;
    if (same)
        return;
    if (!once(w, "nominate"))
        return; /* written for this version; the cache has not seen it yet */
    char names[SW_MK_MAX_CLUSTERS][SW_MK_NAME_MAX];
    char msg[900] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(names[i], sizeof(names[i]), "%s", r->choice[i].cluster);
    /* "nominated cloud-spot (spot) $41.20 expected; not nominated: cloud-ondemand (on-demand)
     * $97.72" */
    size_t off = (size_t)snprintf(msg, sizeof(msg), "spillway's dispatcher nominated");
    for (size_t i = 0; i < r->n && off < sizeof(msg); i++)
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s %.60s (%s) $%.2f expected",
                                i == 0   ? ""
                                : i == n ? "; not nominated:"
                                         : ",",
                                r->choice[i].cluster, sw_capacity_name(r->choice[i].capacity),
                                r->choice[i].cost);
    for (size_t i = 0; i < r->nexcluded && off < sizeof(msg); i++)
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s %.60s (%s): %s",
                                i == 0 ? "; excluded:" : ",", r->excluded[i].cluster,
                                sw_capacity_name(r->excluded[i].capacity),
                                sw_exclusion_text(r->excluded[i].why));
    SW_LOG(SW_LOG_INFO, "nominating MultiKueue workers", "cluster=%s workload=%s rv=%s msg=%s",
           sw_log_q(it->m->rec.name), sw_log_q(it->key), sw_log_q(w->rv), sw_log_q(msg));
    apply_status(it->m, w, MK_NOMINATE, (const char(*)[SW_MK_NAME_MAX])names, n);
    wl_event(it->m, w, "Normal", "Nominated", msg);
}

void sw_mk_dispatch_round(struct sw_hub *h)
{
    if (!h->cfg.mk_dispatcher)
        return;
    static int64_t next_ms;
    static bool said;
    if (!said) {
        said = true;
        SW_LOG(SW_LOG_INFO, "acting as MultiKueue's external dispatcher", "dispatcherName=%s",
               SW_MK_DISPATCHER_NAME);
    }
    int64_t now = sw_hub_mono_ms();
    if (now < next_ms)
        return;
    next_ms = now + (int64_t)(h->cfg.recheck_s * 1000);
    /* Workloads of every member: a manager's, and the workers' copies. */
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_member_usable(m))
            continue;
        sw_cluster_cache_start_kueue(m->cache);
        struct mk_member *s = mk_of(m->rec.name);
        if (s != NULL)
            refresh(m, s, now);
    }
    struct scan sc = {.h = h};
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        struct mk_member *s = mk_of(m->rec.name);
        if (s == NULL || s->nac == 0 || m->cache == NULL || !sw_member_usable(m) ||
            !sw_cluster_cache_kueue_synced(m->cache))
            continue;
        sc.m = m;
        sc.s = s;
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_WORKLOAD), scan_one, &sc);
    }
    if (sc.n == 0) {
        sw_free(sc.items);
        return;
    }
    /* The workers that are registered members, over every Workload's list. */
    char(*workers)[SW_MK_NAME_MAX] = sw_calloc(MK_MAX_WORKERS, sizeof(*workers));
    struct sw_mk_ask *asks = sw_calloc(sc.n, sizeof(*asks));
    struct sw_mk_rank *ranks = sw_calloc(sc.n, sizeof(*ranks));
    bool *any_member = sw_calloc(sc.n, sizeof(*any_member));
    size_t nworkers = 0;
    if (workers == NULL || asks == NULL || ranks == NULL || any_member == NULL)
        goto out;
    for (size_t k = 0; k < sc.n; k++) {
        struct item *it = &sc.items[k];
        for (size_t c = 0; c < it->cfg->nclusters; c++) {
            const char *wn = it->cfg->clusters[c];
            struct sw_member *wm = sw_member_find(h, wn);
            if (wm == NULL || wm->rec.spec.npools == 0 || strcmp(wn, it->m->rec.name) == 0)
                continue;
            any_member[k] = true;
            bool seen = false;
            for (size_t x = 0; x < nworkers && !seen; x++)
                seen = strcmp(workers[x], wn) == 0;
            if (!seen && nworkers < MK_MAX_WORKERS)
                snprintf(workers[nworkers++], SW_MK_NAME_MAX, "%s", wn);
        }
        /* The team its namespace's grant gives (tenancy.h), else the namespace. */
        const struct sw_grant *g = sw_tenancy_find(&h->cfg.tenancy, it->m->rec.name, it->w.f.ns);
        asks[k] = (struct sw_mk_ask){.name = it->key,
                                     .team = g && g->nteams > 0 ? g->teams[0] : it->w.f.ns,
                                     .origin = it->m->rec.name,
                                     .pods = it->w.pods > 0 ? it->w.pods : 1,
                                     .gpus_per_pod = (int)it->w.gpus_per_pod,
                                     .submit_time = created_s(it->w.f.created),
                                     .workers = (const char(*)[SW_MK_NAME_MAX])it->cfg->clusters,
                                     .nworkers = it->cfg->nclusters};
    }
    if (nworkers > 0 && sw_decide_workers(h, asks, sc.n, (const char(*)[SW_MK_NAME_MAX])workers,
                                          nworkers, ranks) != 0)
        goto out;
    for (size_t k = 0; k < sc.n; k++)
        nominate(h, &sc.items[k], &ranks[k], any_member[k]);
out:
    sw_free(workers);
    sw_free(asks);
    sw_free(ranks);
    sw_free(any_member);
    sw_free(sc.items);
}
