/*
 * adopt_hub.c - the hub's side of re-deriving records from mirrors
 * (adopt.h): an index of every member's mirrors by origin UID, rebuilt at
 * each scan, and two hooks. A Job seen without a record gets it from its
 * mirror when there is one (observe.c), and a record that says less than
 * its mirrors prove is rewritten from them (hub.c's tick, before the
 * decisions), so a record lost in a Redis failover never leads to a
 * second dispatch.
 */
#include <string.h>

#include "clusters/record.h"
#include "common/alloc.h"
#include "common/log.h"
#include "controller/hub/adopt.h"
#include "controller/hub/hub.h"

#define INDEX_BUCKETS 4096

struct entry {
    struct sw_adopt_mirror m;
    struct entry *next;
};

/* One scan's mirrors (the hub has one loop: no lock). */
static struct entry *index_[INDEX_BUCKETS];

static unsigned uid_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % INDEX_BUCKETS;
}

static void index_clear(void)
{
    for (size_t b = 0; b < INDEX_BUCKETS; b++) {
        struct entry *e = index_[b];
        while (e) {
            struct entry *n = e->next;
            sw_free(e);
            e = n;
        }
        index_[b] = NULL;
    }
}

static void index_job(const char *key, const void *obj, void *ctx)
{
    (void)key;
    const struct sw_member *m = ctx;
    const struct sw_job_record *rec = obj;
    /* Only mirrors: most Jobs are not, and need no JSON view. */
    if (sw_job_record_label(rec, SW_LBL_ORIGIN_UID) == NULL)
        return;
    cJSON *job = sw_job_record_json(rec);
    struct sw_adopt_mirror am;
    int rc = job ? sw_adopt_mirror_read(job, m->rec.name, &am) : SW_ENOMEM;
    cJSON_Delete(job);
    if (rc != 0)
        return;
    struct entry *e = sw_calloc(1, sizeof(*e));
    if (e == NULL)
        return;
    e->m = am;
    unsigned b = uid_hash(am.origin_uid);
    e->next = index_[b];
    index_[b] = e;
}

void sw_adopt_index(struct sw_hub *h)
{
    index_clear();
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            continue;
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), index_job, m);
    }
}

/* The mirrors of one origin UID, copied into out (at most cap). */
static size_t mirrors_of(const char *uid, struct sw_adopt_mirror *out, size_t cap)
{
    size_t n = 0;
    for (struct entry *e = index_[uid_hash(uid)]; e && n < cap; e = e->next)
        if (strcmp(e->m.origin_uid, uid) == 0)
            out[n++] = e->m;
    return n;
}

/* Whether every member's cache has synced: a mirror not seen yet is not proof of none. */
static bool all_synced(const struct sw_hub *h)
{
    for (size_t i = 0; i < h->nmembers; i++)
        if (h->members[i]->cache == NULL || !sw_cluster_cache_synced(h->members[i]->cache))
            return false;
    return true;
}

#define MAX_MIRRORS 16

/* Applies the decision to j->rec; true when the record changed. */
static bool adopt(struct sw_hub *h, struct sw_job *j)
{
    struct sw_adopt_mirror ms[MAX_MIRRORS];
    size_t n = mirrors_of(j->rec.uid, ms, MAX_MIRRORS);
    if (n == 0)
        return false;
    size_t at = 0;
    int floor = 0;
    switch (sw_adopt_decide(&j->rec, ms, n, &at, &floor)) {
    case SW_ADOPT_MIRROR:
        SW_LOG(SW_LOG_WARN, "record re-derived from its mirror: Redis had lost it",
               "job=%s was_state=%s was_attempt=%d mirror=%s cluster=%s attempt=%d epoch=%lld",
               sw_log_q(j->rec.key), sw_log_q(sw_job_state_name(j->rec.state)), j->rec.attempt,
               sw_log_q(ms[at].name), sw_log_q(ms[at].cluster), ms[at].attempt,
               (long long)h->epoch);
        sw_adopt_apply(&j->rec, &ms[at], sw_hub_wall_ms());
        h->m.rederived++;
        return true;
    case SW_ADOPT_ATTEMPT:
        SW_LOG(SW_LOG_INFO, "record's attempt raised past a mirror being deleted",
               "job=%s attempt=%d", sw_log_q(j->rec.key), floor);
        j->rec.attempt = floor;
        return true;
    case SW_ADOPT_NONE:
        break;
    }
    return false;
}

bool sw_adopt_new_record(struct sw_hub *h, struct sw_job *j)
{
    return adopt(h, j);
}

static void round_one(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)ctx;
    if (j->busy || !j->persisted || sw_job_state_terminal(j->rec.state))
        return;
    if (!adopt(h, j))
        return;
    j->busy = true;
    sw_rec_step(h, j, NULL);
}

void sw_adopt_round(struct sw_hub *h)
{
    if (!all_synced(h))
        return;
    sw_hub_jobs_foreach(h, round_one, NULL);
}
