/*
 * members.c - the member clusters and object stores the hub works with.
 *
 * Every 10 s (and when the hub takes the lease) the registry is read again
 * (spillctl cluster add/remove write it): a new cluster gets a client, a
 * cache of its Jobs, GPU Pods and Nodes, and a /readyz prober; a cluster
 * whose connection changed is reconnected; a removed one is dropped. So a
 * cluster added, changed or removed while the hub runs is picked up without
 * a restart. The stores (spillctl replicate store add) are read the same
 * way, on the thread pool, since their client library is blocking.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/thread.h"
#include "controller/hub/hub.h"
#include "replication/rule.h"

struct sw_member *sw_member_find(struct sw_hub *h, const char *name)
{
    for (size_t i = 0; i < h->nmembers; i++)
        if (strcmp(h->members[i]->rec.name, name) == 0)
            return h->members[i];
    return NULL;
}

bool sw_member_has_namespace(const struct sw_member *m, const char *ns)
{
    for (size_t i = 0; i < m->nnamespaces; i++)
        if (strcmp(m->namespaces[i], ns) == 0)
            return true;
    return false;
}

void sw_member_add_namespace(struct sw_member *m, const char *ns)
{
    if (sw_member_has_namespace(m, ns))
        return;
    char **n = sw_realloc(m->namespaces, (m->nnamespaces + 1) * sizeof(*n));
    if (n == NULL)
        return;
    m->namespaces = n;
    if ((n[m->nnamespaces] = sw_strdup(ns)) != NULL)
        m->nnamespaces++;
}

bool sw_members_synced(const struct sw_hub *h)
{
    for (size_t i = 0; i < h->nmembers; i++) {
        const struct sw_member *m = h->members[i];
        if (m->fenced || sw_member_lost(m))
            continue; /* it may never sync again; the others go on */
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            return false;
    }
    return h->nmembers > 0;
}

bool sw_member_reachable(const struct sw_member *m)
{
    if (m->client == NULL || m->cache == NULL || !sw_cluster_cache_synced(m->cache) || m->fenced ||
        sw_member_lost(m))
        return false;
    const struct sw_health *hs = m->health ? sw_health_prober_health(m->health) : NULL;
    return hs == NULL || hs->bad_since_ms == 0; /* no probe yet counts as answering */
}

bool sw_member_usable(const struct sw_member *m)
{
    return sw_member_reachable(m) && m->stale == 0;
}

const struct sw_hub_store *sw_store_for_region(const struct sw_hub *h, const char *region)
{
    for (size_t i = 0; i < h->nstores; i++)
        if (strcmp(h->stores[i].region, region) == 0)
            return &h->stores[i];
    return NULL;
}

size_t sw_gate_stores(const struct sw_hub *h, struct sw_gate_store *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < h->nstores && n < cap; i++, n++) {
        const struct sw_hub_store *s = &h->stores[i];
        memset(&out[n], 0, sizeof(out[n]));
        out[n].cfg.name = s->name;
        out[n].cfg.endpoint = s->endpoint;
        out[n].cfg.region = s->region;
        out[n].cfg.access_key = s->access;
        out[n].cfg.secret_key = s->secret;
        out[n].cfg.virtual_host = s->virtual_host;
    }
    return n;
}

static void member_free(struct sw_member *m)
{
    if (m->cache)
        sw_cluster_cache_free(m->cache);
    if (m->health)
        sw_health_prober_free(m->health);
    if (m->client)
        sw_kube_client_free(m->client);
    for (size_t i = 0; i < m->nnamespaces; i++)
        sw_free(m->namespaces[i]);
    sw_free(m->namespaces);
    sw_free(m->lives);
    sw_cluster_record_clear(&m->rec);
    sw_free(m);
}

static void on_cache_change(struct sw_cluster_cache *cc, enum sw_kube_kind kind, const char *key,
                            void *ctx)
{
    struct sw_hub *h = ctx;
    /* A Karpenter Lease renewed (every 2 s) changes nothing by itself: the
     * capacity poll of the regular tick looks at it once a second. */
    if (kind == SW_KIND_LEASE)
        return;
    /* A pod turning Unschedulable, a node going away, a Job added, a
     * Workload's admission or a NodePool's room changing may change a
     * decision; everything else only needs the next step. */
    if (kind == SW_KIND_WORKLOAD || kind == SW_KIND_CLUSTERQUEUE || kind == SW_KIND_RESOURCEFLAVOR)
        sw_queue_changed();
    if (kind == SW_KIND_POD || kind == SW_KIND_NODE || kind == SW_KIND_JOB ||
        kind == SW_KIND_WORKLOAD || kind == SW_KIND_NODEPOOL || kind == SW_KIND_NODECLAIM)
        h->decide_wanted = true;
    if (kind == SW_KIND_NODECLAIM)
        for (size_t i = 0; i < h->nmembers; i++)
            if (h->members[i]->cache == cc)
                sw_capacity_claim_changed(h, h->members[i], key);
    sw_hub_kick(h);
}

static void on_health(struct sw_health_prober *pr, const struct sw_health *hs, void *ctx)
{
    (void)pr;
    struct sw_member *m = ctx;
    SW_LOG(SW_LOG_INFO, "member health changed", "cluster=%s state=%s reason=%s",
           sw_log_q(m->rec.name), sw_log_q(sw_health_state_name(hs->state)), sw_log_q(hs->reason));
}

static int member_connect(struct sw_hub *h, struct sw_member *m)
{
    struct sw_error err = {0};
    struct sw_kube_target *t = NULL;
    if (sw_cluster_record_open(&m->rec, h->key, &t, &err) != 0) {
        SW_LOG(SW_LOG_ERROR, "cannot open a member's connection", "cluster=%s err=%s",
               sw_log_q(m->rec.name), sw_log_q(err.msg));
        return err.code ? err.code : SW_ECRYPTO;
    }
    /* The server connected to is the sealed one; the record's clear
     * "server" is for display, and anyone who can write to Redis can change
     * it: log the one used, and say when the two differ. */
    char server[sizeof(m->rec.server)];
    snprintf(server, sizeof(server), "%s", t->server ? t->server : "");
    if (strcmp(server, m->rec.server) != 0)
        SW_LOG(SW_LOG_WARN, "member record's clear server differs from its sealed connection",
               "cluster=%s server=%s clear_server=%s", sw_log_q(m->rec.name), sw_log_q(server),
               sw_log_q(m->rec.server));
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = m->rec.name;
    o.qps = h->cfg.member_qps;
    o.burst = h->cfg.member_burst;
    if (sw_kube_client_new(h->loop, h->http, t, &o, &m->client, &err) != 0) {
        SW_LOG(SW_LOG_ERROR, "cannot make a client for a member", "cluster=%s err=%s",
               sw_log_q(m->rec.name), sw_log_q(err.msg));
        return err.code ? err.code : SW_EINVAL;
    }
    if (sw_cluster_cache_start(m->client, on_cache_change, h, &m->cache) != 0)
        return SW_ENOMEM;
    /* Burstable Jobs keep their spec in the cache: dispatch builds the
     * mirror from it, with no GET on the origin's cluster. */
    sw_cluster_cache_keep_specs(m->cache, SW_ANN_BURST);
    /* A member that queues mirrors in a LocalQueue: its ClusterQueues'
     * headroom bounds its pools (decide.c). */
    if (m->rec.spec.local_queue[0] != '\0' && sw_cluster_cache_start_kueue(m->cache) != 0)
        return SW_ENOMEM;
    if (sw_capacity_wants_karpenter(&m->rec.spec) &&
        sw_cluster_cache_watch_karpenter(m->cache) != 0)
        return SW_ENOMEM;
    struct sw_health_policy hp;
    sw_health_policy_default(&hp);
    hp.interval_ms = (int64_t)(h->cfg.probe_interval_s * 1000);
    if (hp.timeout_ms > hp.interval_ms)
        hp.timeout_ms = hp.interval_ms;
    if (hp.slow_ms > hp.timeout_ms)
        hp.slow_ms = hp.timeout_ms;
    if (m->fenced)
        sw_kube_client_block(m->client, m->fence_why);
    sw_health_prober_start(m->client, &hp, on_health, m, &m->health);
    SW_LOG(SW_LOG_INFO, "member added", "cluster=%s role=%s region=%s server=%s",
           sw_log_q(m->rec.name), sw_log_q(sw_cluster_role_name(m->rec.spec.role)),
           sw_log_q(m->rec.spec.region), sw_log_q(server));
    return 0;
}

void sw_members_publish(struct sw_hub *h)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m->rec.name);
        cJSON_AddStringToObject(o, "role", sw_cluster_role_name(m->rec.spec.role));
        cJSON_AddStringToObject(o, "region", m->rec.spec.region);
        const struct sw_health *hs = m->health ? sw_health_prober_health(m->health) : NULL;
        cJSON_AddStringToObject(o, "health", hs ? sw_health_state_name(hs->state) : "Unknown");
        cJSON_AddStringToObject(o, "reason", hs ? hs->reason : "");
        cJSON_AddNumberToObject(o, "sinceMs", hs ? (double)hs->since_ms : 0);
        cJSON_AddNumberToObject(o, "notAnsweringSinceMs", hs ? (double)hs->bad_since_ms : 0);
        cJSON_AddBoolToObject(o, "lost", sw_member_lost(m));
        cJSON_AddNumberToObject(o, "lostSinceMs", (double)m->lost_since_ms);
        cJSON_AddBoolToObject(o, "fenced", m->fenced);
        cJSON_AddStringToObject(o, "fenceReason", m->fence_why);
        cJSON_AddNumberToObject(o, "staleMirrorJobs", (double)m->stale);
        /* Pools bound to a NodePool: their figures, or why there are none. */
        cJSON *nps = cJSON_AddArrayToObject(o, "nodePools");
        for (size_t k = 0; nps && k < m->nnodepools; k++) {
            const struct sw_nodepool_state *s = &m->nodepools[k];
            cJSON *no = cJSON_CreateObject();
            cJSON_AddItemToArray(nps, no);
            cJSON_AddStringToObject(no, "name", s->name);
            cJSON_AddStringToObject(no, "problem", s->problem);
            cJSON_AddNumberToObject(no, "limit", s->have_cap ? (double)s->cap.limit : -1);
            cJSON_AddNumberToObject(no, "provisioned", (double)s->cap.provisioned);
            cJSON_AddNumberToObject(no, "room", (double)s->cap.room);
            cJSON_AddNumberToObject(no, "nodes", s->cap.nodes);
            cJSON_AddNumberToObject(no, "provisionSeconds", sw_capacity_provision_s(s));
            cJSON_AddNumberToObject(no, "provisionsSeen", (double)s->seen.provisions);
        }
        cJSON_AddBoolToObject(o, "synced", m->cache && sw_cluster_cache_synced(m->cache));
        cJSON_AddNumberToObject(o, "apiRequests",
                                m->client ? (double)sw_kube_client_sent(m->client) : 0);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON *top = cJSON_CreateObject();
    cJSON_AddStringToObject(top, "hub", h->id);
    cJSON_AddNumberToObject(top, "epoch", (double)h->epoch);
    cJSON_AddNumberToObject(top, "updatedMs", (double)sw_hub_wall_ms());
    cJSON_AddNumberToObject(top, "lostAfterMs", h->cfg.lost_after_s * 1000);
    cJSON_AddNumberToObject(top, "probeIntervalMs", h->cfg.probe_interval_s * 1000);
    cJSON_AddNumberToObject(top, "leaseTTLMs", h->cfg.lease_ttl_s * 1000);
    cJSON_AddNumberToObject(top, "rtoTargetMs", h->cfg.rto_target_s * 1000);
    cJSON_AddNumberToObject(top, "replicationRpoObjectiveMs", h->cfg.repl_rpo_objective_s * 1000);
    cJSON_AddItemToObject(top, "members", arr);
    char *text = cJSON_PrintUnformatted(top);
    cJSON_Delete(top);
    if (text) {
        const char *argv[] = {"SET", SW_KEY_HEALTH, text};
        sw_redis_command_argv(h->redis, NULL, NULL, 3, argv, NULL);
        cJSON_free(text);
    }
}

static void on_list(int rc, struct sw_cluster_record *recs, size_t n, const struct sw_error *err,
                    void *ctx)
{
    struct sw_hub *h = ctx;
    h->registry_busy = false;
    if (rc != 0) {
        SW_LOG(SW_LOG_WARN, "cannot read the cluster registry", "err=%s",
               sw_log_q(err ? err->msg : sw_strerror(rc)));
        return;
    }
    h->registry_read = true;
    for (size_t i = 0; i < h->nmembers; i++)
        h->members[i]->seen = false;
    for (size_t i = 0; i < n; i++) {
        struct sw_member *m = sw_member_find(h, recs[i].name);
        if (m && m->rec.sealed && recs[i].sealed && strcmp(m->rec.sealed, recs[i].sealed) == 0 &&
            strcmp(m->rec.server, recs[i].server) == 0) {
            m->seen = true;
            m->rec.spec = recs[i].spec; /* pools and prices may change in place */
            if (sw_capacity_wants_karpenter(&m->rec.spec) && m->cache)
                sw_cluster_cache_watch_karpenter(m->cache);
            continue;
        }
        if (m) {
            SW_LOG(SW_LOG_INFO, "member changed; reconnecting", "cluster=%s",
                   sw_log_q(m->rec.name));
            m->seen = false; /* dropped below, then added anew */
        }
        if (h->nmembers >= SW_HUB_MAX_MEMBERS) {
            SW_LOG(SW_LOG_ERROR, "too many member clusters; ignoring one", "cluster=%s max=%d",
                   sw_log_q(recs[i].name), SW_HUB_MAX_MEMBERS);
            continue;
        }
        struct sw_member *nm = sw_calloc(1, sizeof(*nm));
        if (nm == NULL)
            continue;
        nm->rec = recs[i];
        recs[i].sealed = NULL; /* moved */
        nm->seen = true;
        if (m) {
            /* Replace in place so that lookups by name find the new one. */
            for (size_t k = 0; k < h->nmembers; k++)
                if (h->members[k] == m)
                    h->members[k] = nm;
            member_free(m);
        } else {
            h->members[h->nmembers++] = nm;
        }
        if (member_connect(h, nm) != 0)
            nm->seen = true; /* kept (and reported) so that its Jobs are not taken for deleted */
    }
    for (size_t i = 0; i < h->nmembers;) {
        if (!h->members[i]->seen) {
            SW_LOG(SW_LOG_INFO, "member removed", "cluster=%s", sw_log_q(h->members[i]->rec.name));
            member_free(h->members[i]);
            h->members[i] = h->members[--h->nmembers];
            continue;
        }
        i++;
    }
    sw_members_publish(h);
}

/* ---- loss, return and fences --------------------------------------------- */

/* Counts, per member, the records with a stale mirror there (once each). */
static void count_stale(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < j->rec.nstale; i++) {
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen = seen || strcmp(j->rec.stale[k].cluster, j->rec.stale[i].cluster) == 0;
        struct sw_member *m = seen ? NULL : sw_member_find(h, j->rec.stale[i].cluster);
        if (m)
            m->stale++;
    }
}

static void on_fences(struct sw_redis *r, redisReply *reply, const char *err, void *ctx)
{
    (void)r;
    (void)err;
    struct sw_hub *h = ctx;
    h->fences_busy = false;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY)
        return; /* Redis away: fences stay as they were */
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        const char *why = NULL;
        for (size_t k = 0; k + 1 < reply->elements; k += 2)
            if (reply->element[k]->type == REDIS_REPLY_STRING &&
                strcmp(reply->element[k]->str, m->rec.name) == 0)
                why = reply->element[k + 1]->type == REDIS_REPLY_STRING ? reply->element[k + 1]->str
                                                                        : "fenced";
        if ((why != NULL) == m->fenced)
            continue;
        m->fenced = why != NULL;
        if (why) {
            snprintf(m->fence_why, sizeof(m->fence_why), "fenced by spillway: %s", why);
            SW_LOG(SW_LOG_WARN, "member fenced: no request is sent to it", "cluster=%s why=%s",
                   sw_log_q(m->rec.name), sw_log_q(why));
        } else {
            m->fence_why[0] = '\0';
            SW_LOG(SW_LOG_INFO, "member fence lifted", "cluster=%s", sw_log_q(m->rec.name));
        }
        if (m->client)
            sw_kube_client_block(m->client, m->fenced ? m->fence_why : NULL);
        sw_members_publish(h);
        sw_hub_want_decide(h);
    }
}

void sw_members_tick(struct sw_hub *h)
{
    int64_t now = sw_hub_wall_ms();
    if (!h->fences_busy && now - h->fences_read_ms >= 2000) {
        h->fences_read_ms = now;
        h->fences_busy = true;
        const char *argv[] = {"HGETALL", SW_KEY_FENCE};
        if (sw_redis_command_argv(h->redis, on_fences, h, 2, argv, NULL) != 0)
            h->fences_busy = false;
    }
    bool changed = false;
    for (size_t i = 0; i < h->nmembers; i++)
        h->members[i]->stale = 0;
    sw_hub_jobs_foreach(h, count_stale, NULL);
    int64_t tol = (int64_t)(h->cfg.lost_after_s * 1000);
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        const struct sw_health *hs = m->health ? sw_health_prober_health(m->health) : NULL;
        if (hs == NULL)
            continue;
        if (!sw_member_lost(m) && hs->bad_since_ms != 0 && now - hs->bad_since_ms >= tol) {
            m->lost_since_ms = now;
            changed = true;
            SW_LOG(SW_LOG_WARN, "member lost", "cluster=%s not_answering_s=%.1f reason=%s",
                   sw_log_q(m->rec.name), (double)(now - hs->bad_since_ms) / 1000.0,
                   sw_log_q(hs->reason));
        } else if (sw_member_lost(m) && hs->bad_since_ms == 0 && hs->state == SW_HEALTH_READY &&
                   !m->fenced) {
            SW_LOG(SW_LOG_INFO, "member returned", "cluster=%s lost_for_s=%.1f stale_jobs=%zu",
                   sw_log_q(m->rec.name), (double)(now - m->lost_since_ms) / 1000.0, m->stale);
            m->lost_since_ms = 0;
            changed = true;
        }
    }
    if (changed) {
        sw_members_publish(h);
        sw_hub_want_decide(h);
    }
}

/* ---- stores, on a thread of their own -------------------------------------- */

/* The stores and rules are read over a blocking Redis connection (up to its
 * 5 s connect timeout): not on libuv's pool, which the copies' hashing
 * needs (common/thread.h). One read at a time (stores_busy). */
struct stores_work {
    struct sw_thread_job req;
    struct sw_hub *h;
    char url[1024];
    struct sw_hub_store out[SW_HUB_MAX_STORES];
    size_t n;
    /* Stores whose record was refused, and why (never a credential). */
    struct {
        char name[64];
        struct sw_error err;
    } refused[SW_HUB_MAX_STORES];
    size_t nrefused;
    char **rules; /* the replication rules' names */
    size_t nrules;
    int rules_rc;
    int rc;
    struct sw_error err;
};

static void stores_work(struct sw_thread_job *req)
{
    struct stores_work *w = req->data;
    redisContext *c = NULL;
    w->rc = sw_redis_sync_connect(w->url, 5000, &c, &w->err);
    if (w->rc != 0)
        return;
    char **names = NULL;
    size_t n = 0;
    w->rc = sw_names_list(c, "sw:stores", &names, &n, &w->err);
    for (size_t i = 0; w->rc == 0 && i < n && w->n < SW_HUB_MAX_STORES; i++) {
        struct sw_store_spec s;
        char *ak = NULL, *sk = NULL;
        /* A store whose record does not verify is left out: no request goes
         * to the endpoint it names, and Jobs needing it wait (data.c). */
        if (sw_store_load(c, w->h->key, names[i], &s, &ak, &sk, &w->err) != 0) {
            if (w->nrefused < SW_HUB_MAX_STORES) {
                snprintf(w->refused[w->nrefused].name, sizeof(w->refused[0].name), "%s", names[i]);
                w->refused[w->nrefused++].err = w->err;
            }
            sw_error_clear(&w->err);
            continue;
        }
        struct sw_hub_store *o = &w->out[w->n++];
        snprintf(o->name, sizeof(o->name), "%s", s.name);
        snprintf(o->region, sizeof(o->region), "%s", s.region);
        snprintf(o->endpoint, sizeof(o->endpoint), "%s", s.endpoint);
        snprintf(o->access, sizeof(o->access), "%s", ak);
        snprintf(o->secret, sizeof(o->secret), "%s", sk);
        o->virtual_host = s.virtual_host;
        sw_seal_wipe_free(ak, strlen(ak));
        sw_seal_wipe_free(sk, strlen(sk));
    }
    if (names)
        sw_names_free(names, n);
    struct sw_error rerr = {0};
    w->rules_rc = sw_names_list(c, "sw:repl:rules", &w->rules, &w->nrules, &rerr);
    redisFree(c);
}

static void stores_done(struct sw_thread_job *req, int status)
{
    struct stores_work *w = req->data;
    struct sw_hub *h = w->h;
    h->stores_busy = false;
    if (status == 0 && w->rc == 0) {
        memcpy(h->stores, w->out, sizeof(h->stores));
        h->nstores = w->n;
        for (size_t i = 0; i < w->nrefused; i++) {
            bool known = false;
            for (size_t k = 0; k < h->nstores_refused; k++)
                known = known || strcmp(h->stores_refused[k], w->refused[i].name) == 0;
            if (!known && w->refused[i].err.code == SW_ECRYPTO)
                SW_LOG(SW_LOG_ERROR, "object store refused: its record does not verify",
                       "kind=store store=%s err=%s", sw_log_q(w->refused[i].name),
                       sw_log_q(w->refused[i].err.msg));
            else if (!known)
                SW_LOG(SW_LOG_ERROR, "object store refused: its record cannot be read",
                       "kind=store store=%s err=%s", sw_log_q(w->refused[i].name),
                       sw_log_q(w->refused[i].err.msg));
        }
        for (size_t i = 0; i < w->nrefused; i++)
            snprintf(h->stores_refused[i], sizeof(h->stores_refused[i]), "%s", w->refused[i].name);
        h->nstores_refused = w->nrefused;
    } else {
        SW_LOG(SW_LOG_WARN, "cannot read the object stores", "err=%s", sw_log_q(w->err.msg));
    }
    if (status == 0 && w->rc == 0 && w->rules_rc == 0)
        sw_rules_set(h, w->rules, w->nrules);
    if (w->rules)
        sw_names_free(w->rules, w->nrules);
    sw_seal_wipe_free(w, sizeof(*w));
}

static void refresh(uv_timer_t *t)
{
    struct sw_hub *h = t->data;
    if (!h->registry_busy) {
        h->registry_busy = true;
        if (sw_registry_list(h->redis, on_list, h) != 0)
            h->registry_busy = false;
    }
    if (!h->stores_busy) {
        struct stores_work *w = sw_calloc(1, sizeof(*w));
        if (w == NULL)
            return;
        w->req.data = w;
        w->h = h;
        snprintf(w->url, sizeof(w->url), "%s", h->redis_url);
        h->stores_busy = true;
        if (sw_thread_job_start(h->loop, &w->req, stores_work, stores_done) != 0) {
            h->stores_busy = false;
            sw_free(w);
        }
    }
}

int sw_members_start(struct sw_hub *h)
{
    uv_timer_init(h->loop, &h->registry_timer);
    h->registry_timer.data = h;
    return uv_timer_start(&h->registry_timer, refresh, 0, 10000);
}
