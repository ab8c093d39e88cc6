/*
 * informer.c - reflector (list, watch, resume, relist) and its store.
 *
 * The store is a chained hash table keyed by "namespace/name". The
 * informer is driven entirely by callbacks on the loop: list done -> watch;
 * watch chunks -> decoder -> events; watch done -> watch again (after a
 * backoff when it failed), or list again after 410.
 */
#include "clusters/informer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/ratelimit.h"
#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"

/* One allocation per cached object: the key follows the header. */
struct entry {
    struct entry *next;
    void *obj;    /* cJSON, or the record `compact` made */
    uint32_t gen; /* the list that last saw it (relist diff) */
    char key[];
};

struct sw_informer {
    struct sw_kube_client *c;
    struct sw_informer_opts o;
    char *ns, *label_selector, *field_selector;
    char what[160];
    struct entry **buckets;
    size_t nbuckets;
    size_t count;
    uint32_t gen; /* lists started */
    char rv[64];
    bool synced;
    bool stopping;
    struct sw_kube_op *watch_op;
    int list_pending;
    struct sw_watch_decoder *dec;
    int dec_failed;
    int gone;       /* a 410 arrived on the watch */
    char raw[2048]; /* the first bytes of a watch body, for errors */
    size_t raw_len;
    uv_timer_t retry;
    int retry_open;
    int failures;     /* consecutive, for backoff */
    long list_failed; /* the last list's HTTP status when it failed (-1: no answer), else 0 */
    struct sw_informer_stats st;
};

/* ---- store -------------------------------------------------------------- */

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct entry **slot_h(const struct sw_informer *inf, const char *key, uint64_t h)
{
    struct entry **p = &inf->buckets[h & (inf->nbuckets - 1)];
    while (*p != NULL && strcmp((*p)->key, key) != 0)
        p = &(*p)->next;
    return p;
}

static struct entry **slot(const struct sw_informer *inf, const char *key)
{
    return slot_h(inf, key, hash(key));
}

static int grow(struct sw_informer *inf)
{
    size_t n = inf->nbuckets * 2;
    struct entry **b = sw_calloc(n, sizeof(*b));
    if (b == NULL)
        return SW_ENOMEM;
    for (size_t i = 0; i < inf->nbuckets; i++) {
        struct entry *e = inf->buckets[i];
        while (e != NULL) {
            struct entry *next = e->next;
            size_t j = hash(e->key) & (n - 1);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    sw_free(inf->buckets);
    inf->buckets = b;
    inf->nbuckets = n;
    return 0;
}

static void obj_free(struct sw_informer *inf, void *obj)
{
    if (inf->o.compact != NULL)
        inf->o.release(obj, inf->o.ctx);
    else
        cJSON_Delete(obj);
}

int sw_object_key(const cJSON *obj, char *buf, size_t len)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    if (!cJSON_IsString(name))
        return SW_EPARSE;
    int n = cJSON_IsString(ns) && ns->valuestring[0]
                ? snprintf(buf, len, "%s/%s", ns->valuestring, name->valuestring)
                : snprintf(buf, len, "%s", name->valuestring);
    return n < 0 || (size_t)n >= len ? SW_ETOOBIG : 0;
}

static const char *json_rv(const cJSON *obj)
{
    const cJSON *v = sw_json_path(obj, "metadata.resourceVersion");
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A cached object's resourceVersion. */
static const char *cached_rv(const struct sw_informer *inf, const void *obj)
{
    return inf->o.compact != NULL ? inf->o.record_rv(obj) : json_rv(obj);
}

/* Drops what no reconciler reads and costs the most memory. */
static void strip(cJSON *obj)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
    cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    cJSON_DeleteItemFromObjectCaseSensitive(ann,
                                            "kubectl.kubernetes.io/last-applied-configuration");
}

/* Puts `obj` (ownership taken; freed once converted) in the store and
 * tells the handler. */
static int upsert(struct sw_informer *inf, cJSON *obj)
{
    char key[512];
    if (sw_object_key(obj, key, sizeof(key)) != 0) {
        cJSON_Delete(obj);
        return SW_EPARSE;
    }
    uint64_t h = hash(key);
    struct entry **p = slot_h(inf, key, h);
    if (inf->o.filter != NULL && !inf->o.filter(obj, inf->o.ctx)) {
        /* It no longer qualifies: to the cache, that is a deletion. */
        if (*p != NULL) {
            struct entry *e = *p;
            *p = e->next;
            inf->count--;
            if (inf->o.handler)
                inf->o.handler(inf, SW_WATCH_DELETED, key, NULL, e->obj, inf->o.ctx);
            obj_free(inf, e->obj);
            sw_free(e);
        }
        cJSON_Delete(obj);
        return 0;
    }
    if (*p != NULL) {
        (*p)->gen = inf->gen;
        if (strcmp(cached_rv(inf, (*p)->obj), json_rv(obj)) == 0) {
            cJSON_Delete(obj); /* the same version again: not a change */
            return 0;
        }
    }
    void *rec = obj;
    if (inf->o.compact != NULL) {
        struct sw_error err = {0};
        int rc = inf->o.compact(obj, inf->o.ctx, &rec, &err);
        cJSON_Delete(obj);
        if (rc != 0) {
            inf->st.rejected++;
            SW_LOG(SW_LOG_WARN, "object not cached", "informer=%s key=%s error=%s",
                   sw_log_q(inf->what), sw_log_q(key), sw_log_q(err.msg));
            return rc;
        }
    } else {
        strip(obj);
    }
    if (*p != NULL) {
        struct entry *e = *p;
        void *old = e->obj;
        e->obj = rec;
        if (inf->o.handler)
            inf->o.handler(inf, SW_WATCH_MODIFIED, key, old, rec, inf->o.ctx);
        obj_free(inf, old);
        return 0;
    }
    size_t klen = strlen(key) + 1;
    struct entry *e = sw_malloc(sizeof(*e) + klen);
    if (e == NULL) {
        obj_free(inf, rec);
        return SW_ENOMEM;
    }
    memcpy(e->key, key, klen);
    e->obj = rec;
    e->gen = inf->gen;
    e->next = NULL;
    *p = e;
    inf->count++;
    if (inf->o.handler)
        inf->o.handler(inf, SW_WATCH_ADDED, key, NULL, rec, inf->o.ctx);
    if (inf->count > inf->nbuckets)
        grow(inf); /* best effort: a full table is slower, not wrong */
    return 0;
}

static void remove_key(struct sw_informer *inf, const char *key, const cJSON *last)
{
    struct entry **p = slot(inf, key);
    if (*p == NULL)
        return;
    struct entry *e = *p;
    *p = e->next;
    inf->count--;
    if (inf->o.handler) {
        /* The last state as the watch told it, when the cache keeps JSON. */
        const void *obj = last && inf->o.compact == NULL ? (const void *)last : e->obj;
        inf->o.handler(inf, SW_WATCH_DELETED, key, e->obj, obj, inf->o.ctx);
    }
    obj_free(inf, e->obj);
    sw_free(e);
}

static void clear_store(struct sw_informer *inf)
{
    for (size_t i = 0; i < inf->nbuckets; i++) {
        struct entry *e = inf->buckets[i];
        while (e != NULL) {
            struct entry *next = e->next;
            obj_free(inf, e->obj);
            sw_free(e);
            e = next;
        }
        inf->buckets[i] = NULL;
    }
    inf->count = 0;
}

size_t sw_informer_count(const struct sw_informer *inf)
{
    return inf->count;
}

const void *sw_informer_get(const struct sw_informer *inf, const char *key)
{
    struct entry **p = slot(inf, key);
    return *p ? (*p)->obj : NULL;
}

void sw_informer_foreach(const struct sw_informer *inf,
                         void (*fn)(const char *key, const void *obj, void *ctx), void *ctx)
{
    for (size_t i = 0; i < inf->nbuckets; i++)
        for (struct entry *e = inf->buckets[i]; e != NULL; e = e->next)
            fn(e->key, e->obj, ctx);
}

bool sw_informer_synced(const struct sw_informer *inf)
{
    return inf->synced;
}

bool sw_informer_watching(const struct sw_informer *inf)
{
    return inf->synced && inf->watch_op != NULL && inf->list_pending == 0;
}

long sw_informer_list_failed(const struct sw_informer *inf)
{
    return inf->list_failed;
}

const char *sw_informer_resource_version(const struct sw_informer *inf)
{
    return inf->rv;
}

void sw_informer_stats(const struct sw_informer *inf, struct sw_informer_stats *out)
{
    *out = inf->st;
}

const char *sw_informer_what(const struct sw_informer *inf)
{
    return inf->what;
}

/* ---- reflector ---------------------------------------------------------- */

static void start_list(struct sw_informer *inf);
static void start_watch(struct sw_informer *inf);
static void maybe_free(struct sw_informer *inf);

static void on_retry(uv_timer_t *t)
{
    struct sw_informer *inf = t->data;
    if (inf->stopping)
        return;
    if (inf->rv[0] == '\0' || !inf->synced)
        start_list(inf);
    else
        start_watch(inf);
}

static void retry_later(struct sw_informer *inf)
{
    if (inf->stopping)
        return;
    int64_t d =
        sw_backoff_ms(inf->failures, 500, 30000, -1, 0.5 + (double)(inf->failures % 7) / 14);
    inf->failures++;
    uv_timer_start(&inf->retry, on_retry, (uint64_t)d, 0);
}

/* An item of a list, as it arrives: into the store, marked with this
 * list's generation; what the list lacks is deleted when it ends (on_list). */
static void on_item(cJSON *it, void *ctx)
{
    struct sw_informer *inf = ctx;
    if (inf->stopping) {
        cJSON_Delete(it);
        return;
    }
    /* List items carry no kind; give them one as watch events do. */
    if (inf->o.compact == NULL && !cJSON_HasObjectItem(it, "kind")) {
        cJSON_AddStringToObject(it, "kind", sw_kube_kind_name(inf->o.kind));
        cJSON_AddStringToObject(it, "apiVersion", sw_kube_kind_api_version(inf->o.kind));
    }
    upsert(inf, it);
}

/* The keys of entries the last list did not see. */
struct stale {
    char **keys;
    size_t n, cap;
};

static void on_list(struct sw_kube_result *res, void *ctx)
{
    struct sw_informer *inf = ctx;
    inf->list_pending = 0;
    if (inf->stopping) {
        maybe_free(inf);
        return;
    }
    if (res->rc != 0) {
        inf->st.errors++;
        inf->list_failed = res->status > 0 ? res->status : -1;
        SW_LOG(SW_LOG_WARN, "list failed", "informer=%s error=%s", sw_log_q(inf->what),
               sw_log_q(res->err.msg));
        retry_later(inf);
        return;
    }
    const char *rv = NULL;
    struct sw_error err;
    if (sw_json_string(res->body, "metadata.resourceVersion", true, inf->what, &rv, &err) != 0 ||
        strlen(rv) >= sizeof(inf->rv)) {
        inf->st.errors++;
        SW_LOG(SW_LOG_WARN, "list without resourceVersion", "informer=%s", sw_log_q(inf->what));
        retry_later(inf);
        return;
    }
    inf->st.lists++;
    /* Items still in the body (none when they were split on arrival). */
    cJSON *items = cJSON_GetObjectItemCaseSensitive(res->body, "items"), *it;
    while (cJSON_IsArray(items) && (it = cJSON_DetachItemFromArray(items, 0)) != NULL)
        on_item(it, inf);
    /* What this list did not see was deleted meanwhile. */
    struct stale st = {NULL, 0, 0};
    for (size_t i = 0; i < inf->nbuckets; i++)
        for (struct entry *e = inf->buckets[i]; e != NULL; e = e->next) {
            if (e->gen == inf->gen)
                continue;
            if (st.n == st.cap) {
                size_t cap = st.cap ? st.cap * 2 : 64;
                char **k = sw_realloc(st.keys, cap * sizeof(char *));
                if (k == NULL)
                    continue; /* found again by the next relist */
                st.keys = k;
                st.cap = cap;
            }
            if ((st.keys[st.n] = sw_strdup(e->key)) != NULL)
                st.n++;
        }
    for (size_t i = 0; i < st.n; i++) {
        remove_key(inf, st.keys[i], NULL);
        sw_free(st.keys[i]);
    }
    sw_free(st.keys);
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
    inf->synced = true;
    inf->failures = 0;
    inf->list_failed = 0;
    SW_LOG(SW_LOG_INFO, "listed", "informer=%s objects=%zu resource_version=%s",
           sw_log_q(inf->what), inf->count, sw_log_q(inf->rv));
    start_watch(inf);
}

static void start_list(struct sw_informer *inf)
{
    /* The first list may come from the API server's watch cache ("0"), as
     * client-go's does; a relist after 410 Gone reads the latest. */
    struct sw_kube_list_opts lo = {inf->label_selector, inf->field_selector, inf->o.page,
                                   inf->st.lists == 0 ? "0" : NULL, on_item};
    inf->gen++;
    int rc = sw_kube_list(inf->c, inf->o.kind, inf->ns, &lo, on_list, inf);
    if (rc != 0) {
        inf->st.errors++;
        retry_later(inf);
        return;
    }
    inf->list_pending = 1;
}

static int on_event(struct sw_watch_event *ev, void *ctx)
{
    struct sw_informer *inf = ctx;
    if (inf->stopping)
        return SW_ECANCELED;
    /* The version points into the object, which upsert frees once converted. */
    char rv[sizeof(inf->rv)] = "";
    if (strlen(ev->resource_version) < sizeof(rv))
        snprintf(rv, sizeof(rv), "%s", ev->resource_version);
    switch (ev->type) {
    case SW_WATCH_ERROR:
        if (ev->code == 410) {
            inf->gone = 1;
            return SW_EGONE;
        }
        SW_LOG(SW_LOG_WARN, "watch error event", "informer=%s code=%d message=%s",
               sw_log_q(inf->what), ev->code, sw_log_q(ev->message));
        return SW_EHTTP;
    case SW_WATCH_BOOKMARK:
        inf->st.bookmarks++;
        break;
    case SW_WATCH_ADDED:
    case SW_WATCH_MODIFIED: {
        cJSON *obj = ev->object;
        ev->object = NULL;
        inf->st.events++;
        upsert(inf, obj);
        break;
    }
    case SW_WATCH_DELETED: {
        char key[512];
        inf->st.events++;
        if (sw_object_key(ev->object, key, sizeof(key)) == 0)
            remove_key(inf, key, ev->object);
        break;
    }
    }
    if (rv[0] != '\0')
        snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
    return 0;
}

static int on_watch_data(const char *data, size_t len, void *ctx)
{
    struct sw_informer *inf = ctx;
    if (inf->raw_len < sizeof(inf->raw) - 1) {
        size_t n =
            len < sizeof(inf->raw) - 1 - inf->raw_len ? len : sizeof(inf->raw) - 1 - inf->raw_len;
        memcpy(inf->raw + inf->raw_len, data, n);
        inf->raw_len += n;
        inf->raw[inf->raw_len] = '\0';
    }
    if (inf->dec_failed)
        return 0;
    struct sw_error err;
    int rc = sw_watch_decoder_feed(inf->dec, data, len, &err);
    if (rc != 0) {
        inf->dec_failed = rc;
        if (rc != SW_EGONE)
            SW_LOG(SW_LOG_DEBUG, "watch stream stopped", "informer=%s error=%s",
                   sw_log_q(inf->what), sw_log_q(err.msg));
        /* End the stream: a 410 needs a relist, other errors a new watch. */
        return 1;
    }
    return 0;
}

static void on_watch_done(struct sw_kube_result *res, void *ctx)
{
    struct sw_informer *inf = ctx;
    inf->watch_op = NULL;
    sw_watch_decoder_free(inf->dec);
    inf->dec = NULL;
    if (inf->stopping) {
        maybe_free(inf);
        return;
    }
    if (inf->gone || res->status == 410) {
        /* Our resourceVersion is too old: list again from scratch. */
        inf->st.relists++;
        SW_LOG(SW_LOG_INFO, "resource version too old, relisting",
               "informer=%s resource_version=%s", sw_log_q(inf->what), sw_log_q(inf->rv));
        inf->synced = true; /* the cache stays readable while relisting */
        start_list(inf);
        return;
    }
    if (res->status == 200 && (res->rc == 0 || res->rc == SW_ECANCELED) && !inf->dec_failed) {
        /* The server ended the watch (timeoutSeconds): resume at once. */
        inf->failures = 0;
        start_watch(inf);
        return;
    }
    inf->st.errors++;
    SW_LOG(SW_LOG_WARN, "watch interrupted, resuming",
           "informer=%s status=%ld resource_version=%s error=%s", sw_log_q(inf->what), res->status,
           sw_log_q(inf->rv), sw_log_q(res->rc ? res->err.msg : "malformed stream"));
    retry_later(inf);
}

static void start_watch(struct sw_informer *inf)
{
    char path[4096];
    int rc = sw_kube_path(inf->o.kind, inf->ns, NULL, path, sizeof(path));
    char to[16];
    snprintf(to, sizeof(to), "%d", inf->o.watch_timeout_s > 0 ? inf->o.watch_timeout_s : 300);
    if (rc == 0)
        rc = sw_kube_path_query(path, sizeof(path), "watch", "1");
    if (rc == 0)
        rc = sw_kube_path_query(path, sizeof(path), "resourceVersion", inf->rv);
    if (rc == 0)
        rc = sw_kube_path_query(path, sizeof(path), "allowWatchBookmarks", "true");
    if (rc == 0)
        rc = sw_kube_path_query(path, sizeof(path), "timeoutSeconds", to);
    if (rc == 0 && inf->label_selector)
        rc = sw_kube_path_query(path, sizeof(path), "labelSelector", inf->label_selector);
    if (rc == 0 && inf->field_selector)
        rc = sw_kube_path_query(path, sizeof(path), "fieldSelector", inf->field_selector);
    if (rc == 0)
        rc = sw_watch_decoder_new(inf->what, 0, on_event, inf, &inf->dec);
    if (rc != 0) {
        inf->st.errors++;
        retry_later(inf);
        return;
    }
    inf->dec_failed = 0;
    inf->gone = 0;
    inf->raw_len = 0;
    struct sw_kube_req r = {.method = "GET",
                            .path = path,
                            .on_data = on_watch_data,
                            .on_data_ctx = inf,
                            .timeout_ms = -1,
                            .low_speed_time_s = 0};
    inf->st.watches++;
    rc = sw_kube_send(inf->c, &r, on_watch_done, inf, &inf->watch_op);
    if (rc != 0) {
        sw_watch_decoder_free(inf->dec);
        inf->dec = NULL;
        inf->st.errors++;
        retry_later(inf);
    }
}

/* ---- lifetime ----------------------------------------------------------- */

int sw_informer_new(struct sw_kube_client *c, const struct sw_informer_opts *o,
                    struct sw_informer **out)
{
    struct sw_informer *inf = sw_calloc(1, sizeof(*inf));
    if (inf == NULL)
        return SW_ENOMEM;
    inf->c = c;
    inf->o = *o;
    inf->nbuckets = 256;
    inf->buckets = sw_calloc(inf->nbuckets, sizeof(*inf->buckets));
    inf->ns = o->ns && o->ns[0] ? sw_strdup(o->ns) : NULL;
    inf->label_selector =
        o->label_selector && o->label_selector[0] ? sw_strdup(o->label_selector) : NULL;
    inf->field_selector =
        o->field_selector && o->field_selector[0] ? sw_strdup(o->field_selector) : NULL;
    if (inf->buckets == NULL || (o->ns && o->ns[0] && !inf->ns) ||
        (o->label_selector && o->label_selector[0] && !inf->label_selector) ||
        (o->field_selector && o->field_selector[0] && !inf->field_selector)) {
        sw_free(inf->buckets);
        sw_free(inf->ns);
        sw_free(inf->label_selector);
        sw_free(inf->field_selector);
        sw_free(inf);
        return SW_ENOMEM;
    }
    snprintf(inf->what, sizeof(inf->what), "%ss on %s", sw_kube_kind_name(o->kind),
             sw_kube_client_name(c));
    *out = inf;
    return 0;
}

int sw_informer_start(struct sw_informer *inf)
{
    /* The retry timer lives on the client's loop. */
    uv_timer_init(sw__kube_client_loop(inf->c), &inf->retry);
    inf->retry.data = inf;
    inf->retry_open = 1;
    start_list(inf);
    return 0;
}

/* Frees the informer once nothing can call back into it any more. */
static void maybe_free(struct sw_informer *inf)
{
    if (!inf->stopping || inf->retry_open || inf->watch_op != NULL || inf->list_pending)
        return;
    sw_watch_decoder_free(inf->dec);
    clear_store(inf);
    sw_free(inf->buckets);
    sw_free(inf->ns);
    sw_free(inf->label_selector);
    sw_free(inf->field_selector);
    sw_free(inf);
}

static void on_retry_closed(uv_handle_t *h)
{
    struct sw_informer *inf = h->data;
    inf->retry_open = 0;
    maybe_free(inf);
}

void sw_informer_free(struct sw_informer *inf)
{
    if (inf == NULL || inf->stopping)
        return;
    inf->stopping = true;
    /* Nothing reads the store any more: its records go now, while what
     * they reference (a cache's string table) is still there. */
    clear_store(inf);
    if (inf->watch_op != NULL)
        sw_kube_cancel(inf->watch_op);
    if (inf->retry_open) {
        uv_timer_stop(&inf->retry);
        uv_close((uv_handle_t *)&inf->retry, on_retry_closed);
        inf->retry_open = 2; /* closing */
    }
    maybe_free(inf);
}

void sw__informer_force_rewatch(struct sw_informer *inf, const char *rv)
{
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
    if (inf->watch_op != NULL)
        sw_kube_cancel(inf->watch_op);
}
