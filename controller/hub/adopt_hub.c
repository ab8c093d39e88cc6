/*
 * adopt_hub.c - the hub's side of re-deriving records from mirrors
 * (adopt.h): an index of every member's mirrors by origin UID, brought up
 * to date at each scan, and two hooks. A Job seen without a record gets it from its
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

/*
 * What one cached mirror record says (sw_adopt_mirror_read), kept across
 * scans while the record is as it was: the same record, resourceVersion
 * and UID. Each scan re-reads only the mirrors that changed, drops the ones
 * it did not see, and links the rest by origin UID.
 */
struct entry {
    const struct sw_job_record *rec;
    char rv[32];
    char uid[64];
    unsigned scan;  /* the scan that last saw it */
    bool is_mirror; /* the read found a mirror */
    struct sw_adopt_mirror m;
    struct entry *next_rec; /* by record */
    struct entry *next_uid; /* by origin UID, this scan's mirrors */
};

/* The hub has one loop: no lock. */
static struct entry *by_rec[INDEX_BUCKETS];
static struct entry *by_uid[INDEX_BUCKETS];
static unsigned scan_no;

static unsigned uid_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % INDEX_BUCKETS;
}

static unsigned rec_hash(const struct sw_job_record *rec)
{
    return (unsigned)(((uintptr_t)rec >> 4) % INDEX_BUCKETS);
}

/*
 * Mirrors without a valid proof already named in a WARN line: each is named
 * once per process (a tenant who edits a forged Job again and again must not
 * fill the log). A set of hashes of "cluster/namespace/name"; when full it
 * starts again, so it stays bounded and at worst a name is logged again.
 */
#define WARNED_MAX 4096
static uint64_t warned[WARNED_MAX];
static size_t nwarned;

static uint64_t name_hash(const struct sw_adopt_mirror *m)
{
    uint64_t h = 1469598103934665603ull;
    const char *parts[] = {m->cluster, "/", m->ns, "/", m->name};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        for (const char *s = parts[i]; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | 1; /* 0 marks a free slot */
}

static void warn_unproven(const struct sw_adopt_mirror *m)
{
    uint64_t k = name_hash(m);
    size_t i = (size_t)(k % WARNED_MAX);
    for (; warned[i] != 0; i = (i + 1) % WARNED_MAX)
        if (warned[i] == k)
            return;
    if (nwarned >= WARNED_MAX / 2) {
        memset(warned, 0, sizeof(warned));
        nwarned = 0;
        i = (size_t)(k % WARNED_MAX);
    }
    warned[i] = k;
    nwarned++;
    SW_LOG(SW_LOG_WARN,
           "Job with a mirror's labels but without the hub's proof: never adopted (a copy, a "
           "forgery, or a mirror of a hub without proofs)",
           "cluster=%s namespace=%s job=%s origin_uid=%s attempt=%d", sw_log_q(m->cluster),
           sw_log_q(m->ns), sw_log_q(m->name), sw_log_q(m->origin_uid), m->attempt);
}

static bool entry_current(const struct entry *e, const struct sw_job_record *rec)
{
    return e->rec == rec && rec->rv && rec->uid && strcmp(e->rv, rec->rv) == 0 &&
           strcmp(e->uid, rec->uid) == 0;
}

struct index_scan {
    struct sw_hub *h;
    const struct sw_member *m;
};

static void index_job(const char *key, const void *obj, void *ctx)
{
    (void)key;
    const struct index_scan *is = ctx;
    const struct sw_job_record *rec = obj;
    /* Only mirrors: most Jobs are not, and need no JSON view. */
    if (sw_job_record_label(rec, SW_LBL_ORIGIN_UID) == NULL)
        return;
    unsigned b = rec_hash(rec);
    struct entry *e = by_rec[b];
    while (e && e->rec != rec)
        e = e->next_rec;
    if (e && entry_current(e, rec)) {
        e->scan = scan_no;
        return;
    }
    if (e == NULL) {
        if ((e = sw_calloc(1, sizeof(*e))) == NULL)
            return;
        e->rec = rec;
        e->next_rec = by_rec[b];
        by_rec[b] = e;
    }
    e->scan = scan_no;
    /* Kept for the next scan only when its version fits. */
    bool keepable =
        rec->rv && rec->uid && strlen(rec->rv) < sizeof(e->rv) && strlen(rec->uid) < sizeof(e->uid);
    snprintf(e->rv, sizeof(e->rv), "%s", keepable ? rec->rv : "");
    snprintf(e->uid, sizeof(e->uid), "%s", keepable ? rec->uid : "");
    const cJSON *job = sw_observe_view(is->h, rec);
    e->is_mirror = job && sw_adopt_mirror_read(job, is->m->rec.name, is->h->proof_key, &e->m) == 0;
    if (e->is_mirror && !e->m.proven)
        warn_unproven(&e->m);
}

void sw_adopt_index(struct sw_hub *h)
{
    scan_no++;
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_synced(m->cache))
            continue;
        struct index_scan is = {h, m};
        sw_informer_foreach(sw_cluster_cache_informer(m->cache, SW_KIND_JOB), index_job, &is);
    }
    /* Mirrors not seen in this scan are gone (or in a member not synced:
     * read again once it is); the rest linked by origin UID. */
    memset(by_uid, 0, sizeof(by_uid));
    for (size_t b = 0; b < INDEX_BUCKETS; b++) {
        struct entry **pp = &by_rec[b];
        while (*pp) {
            struct entry *e = *pp;
            if (e->scan != scan_no) {
                *pp = e->next_rec;
                sw_free(e);
                continue;
            }
            if (e->is_mirror) {
                unsigned u = uid_hash(e->m.origin_uid);
                e->next_uid = by_uid[u];
                by_uid[u] = e;
            }
            pp = &e->next_rec;
        }
    }
}

/* The mirrors of one origin UID, copied into out (at most cap). */
static size_t mirrors_of(const char *uid, struct sw_adopt_mirror *out, size_t cap)
{
    size_t n = 0;
    for (struct entry *e = by_uid[uid_hash(uid)]; e && n < cap; e = e->next_uid)
        if (strcmp(e->m.origin_uid, uid) == 0)
            out[n++] = e->m;
    return n;
}

/* Whether every member's cache has synced: a mirror not seen yet is not proof of none. */
bool sw_adopt_all_synced(const struct sw_hub *h)
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

bool sw_adopt_proven(const char *origin_uid)
{
    if (origin_uid == NULL || origin_uid[0] == '\0')
        return false;
    for (const struct entry *e = by_uid[uid_hash(origin_uid)]; e; e = e->next_uid)
        if (e->m.proven && strcmp(e->m.origin_uid, origin_uid) == 0)
            return true;
    return false;
}

bool sw_adopt_any(const char *origin_uid)
{
    if (origin_uid == NULL || origin_uid[0] == '\0')
        return false;
    for (const struct entry *e = by_uid[uid_hash(origin_uid)]; e; e = e->next_uid)
        if (strcmp(e->m.origin_uid, origin_uid) == 0)
            return true;
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
    sw_rec_step(h, j, SW_FP_NONE);
}

void sw_adopt_round(struct sw_hub *h)
{
    if (!sw_adopt_all_synced(h))
        return;
    sw_hub_jobs_foreach(h, round_one, NULL);
}
