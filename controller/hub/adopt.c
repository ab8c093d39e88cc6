/*
 * adopt.c - the pure part of re-deriving a record from its mirror
 * (adopt.h): reading a mirror Job, the decision, and the record rewritten.
 * No loop, no network: unit-tested on its own (tests/unit/controller/
 * test_adopt.c); the hub's hooks are in adopt_hub.c.
 */
#include "controller/hub/adopt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/json.h"
#include "controller/hub/mirror.h"

static void copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

/* The value of env var `name` in the first container that sets it, or NULL. */
static const char *container_env(const cJSON *job, const char *name)
{
    const cJSON *ps = sw_json_child(sw_json_child(sw_json_child(job, "spec"), "template"), "spec");
    const cJSON *c, *e;
    cJSON_ArrayForEach(c, sw_json_child(ps, "containers"))
    {
        cJSON_ArrayForEach(e, sw_json_child(c, "env"))
        {
            const char *n = sw_json_str(e, "name");
            if (n && strcmp(n, name) == 0)
                return sw_json_str(e, "value");
        }
    }
    return NULL;
}

int sw_adopt_mirror_read(const cJSON *job, const char *cluster, const unsigned char *proof_key,
                         struct sw_adopt_mirror *out)
{
    memset(out, 0, sizeof(*out));
    const cJSON *md = sw_json_child(job, "metadata");
    const cJSON *labels = sw_json_child(md, "labels");
    const char *uid = sw_json_str(labels, SW_LBL_ORIGIN_UID);
    const char *att = sw_json_str(labels, SW_LBL_ATTEMPT);
    const char *name = sw_json_str(md, "name");
    if (uid == NULL || uid[0] == '\0' || att == NULL || name == NULL)
        return SW_ENOENT;
    char *end = NULL;
    long a = strtol(att, &end, 10);
    if (end == att || *end != '\0' || a < 1 || a > 1000000)
        return SW_ENOENT;
    out->attempt = (int)a;
    copy(out->origin_uid, sizeof(out->origin_uid), uid);
    copy(out->cluster, sizeof(out->cluster), cluster);
    copy(out->name, sizeof(out->name), name);
    copy(out->ns, sizeof(out->ns), sw_json_str(md, "namespace"));
    copy(out->origin_cluster, sizeof(out->origin_cluster), sw_json_str(labels, SW_LBL_ORIGIN_CL));
    copy(out->origin_ns, sizeof(out->origin_ns), sw_json_str(labels, SW_LBL_ORIGIN_NS));
    out->deleting = sw_json_child(md, "deletionTimestamp") != NULL;
    out->proven = proof_key != NULL && sw_mirror_proof_ok(job, cluster, proof_key);
    const cJSON *ann = sw_json_child(md, "annotations");
    copy(out->summary, sizeof(out->summary), sw_json_str(ann, SW_ANN_DECISION));
    /* The placement, as the hub wrote it when it created the mirror. */
    const char *pl = sw_json_str(ann, SW_ANN_PLACEMENT);
    cJSON *p = pl ? cJSON_Parse(pl) : NULL;
    if (cJSON_IsObject(p)) {
        copy(out->pool, sizeof(out->pool), sw_json_str(p, "pool"));
        copy(out->region, sizeof(out->region), sw_json_str(p, "region"));
        copy(out->capacity, sizeof(out->capacity), sw_json_str(p, "capacity"));
        copy(out->team, sizeof(out->team), sw_json_str(p, "team"));
        const cJSON *g = sw_json_child(p, "gpus"), *pr = sw_json_child(p, "priceGpuHour");
        if (cJSON_IsNumber(g) && g->valuedouble >= 0 && g->valuedouble < 1e6)
            out->gpus = (int)g->valuedouble;
        if (cJSON_IsNumber(pr) && pr->valuedouble >= 0)
            out->price_gpu_h = pr->valuedouble;
    }
    cJSON_Delete(p);
    /* A mirror of an older hub, without the annotation: what its spec says. */
    if (out->region[0] == '\0')
        copy(out->region, sizeof(out->region), container_env(job, "SPILLWAY_REGION"));
    if (out->capacity[0] == '\0') {
        const cJSON *sel = sw_json_child(
            sw_json_child(sw_json_child(sw_json_child(job, "spec"), "template"), "spec"),
            "nodeSelector");
        const char *ct = sw_json_str(sel, "karpenter.sh/capacity-type");
        copy(out->capacity, sizeof(out->capacity), ct ? ct : "owned");
    }
    return 0;
}

static bool before_mirror(enum sw_job_state s)
{
    return s == SW_JS_OBSERVED || s == SW_JS_BLOCKED || s == SW_JS_DECIDED || s == SW_JS_DATA_READY;
}

/*
 * Whether `m` is a mirror this hub made for `r`: its proof verifies (the
 * hub's MAC over its labels, name, namespace, placement and target
 * cluster), and it has the name that sw_mirror_name gives the origin's UID
 * and the mirror's attempt, in the origin's namespace, labelled with the
 * origin's cluster and namespace. Labels and names alone prove nothing: a
 * tenant may write them on a Job in any member the hub watches, and such a
 * Job with a higher attempt would otherwise take the record over (its
 * placement naming another team, GPUs and price), orphan the real mirror
 * and fail the origin.
 */
static bool genuine(const struct sw_job_rec *r, const struct sw_adopt_mirror *m)
{
    char want[64];
    sw_mirror_name(r->uid, m->attempt, want, sizeof(want));
    return m->proven && strcmp(m->origin_uid, r->uid) == 0 && strcmp(m->name, want) == 0 &&
           strcmp(m->ns, r->ns) == 0 && strcmp(m->origin_cluster, r->cluster) == 0 &&
           strcmp(m->origin_ns, r->ns) == 0;
}

enum sw_adopt_action sw_adopt_decide(const struct sw_job_rec *r, const struct sw_adopt_mirror *m,
                                     size_t n, size_t *index, int *floor)
{
    int best = -1, deleted_max = 0;
    for (size_t i = 0; i < n; i++) {
        if (!genuine(r, &m[i]))
            continue;
        /* A mirror the record gave up (left on a lost cluster, to be
         * deleted when it returns) counts as one being deleted. */
        bool stale = false;
        for (int k = 0; k < r->nstale; k++)
            stale = stale || (strcmp(r->stale[k].cluster, m[i].cluster) == 0 &&
                              strcmp(r->stale[k].name, m[i].name) == 0);
        if (m[i].deleting || stale) {
            if (m[i].attempt > deleted_max)
                deleted_max = m[i].attempt;
            continue;
        }
        /* The highest attempt; for two of the same, the record's target. */
        if (best < 0 || m[i].attempt > m[best].attempt ||
            (m[i].attempt == m[best].attempt && strcmp(m[i].cluster, r->target_cluster) == 0))
            best = (int)i;
    }
    if (sw_job_state_terminal(r->state))
        return SW_ADOPT_NONE;
    if (best >= 0) {
        const struct sw_adopt_mirror *b = &m[best];
        bool adopt = b->attempt > r->attempt ||
                     (b->attempt == r->attempt &&
                      (before_mirror(r->state) || strcmp(b->cluster, r->target_cluster) != 0));
        if (adopt) {
            *index = (size_t)best;
            return SW_ADOPT_MIRROR;
        }
        return SW_ADOPT_NONE;
    }
    /* Only mirrors being deleted: the next dispatch must take a new name. */
    if (deleted_max > r->attempt && before_mirror(r->state)) {
        *floor = deleted_max;
        return SW_ADOPT_ATTEMPT;
    }
    return SW_ADOPT_NONE;
}

void sw_adopt_apply(struct sw_job_rec *r, const struct sw_adopt_mirror *m, int64_t now_ms)
{
    r->state = SW_JS_DISPATCHED;
    r->attempt = m->attempt;
    copy(r->target_cluster, sizeof(r->target_cluster), m->cluster);
    copy(r->mirror, sizeof(r->mirror), m->name);
    if (m->pool[0])
        copy(r->target_pool, sizeof(r->target_pool), m->pool);
    if (m->region[0])
        copy(r->target_region, sizeof(r->target_region), m->region);
    if (m->capacity[0])
        copy(r->capacity, sizeof(r->capacity), m->capacity);
    if (m->team[0])
        copy(r->team, sizeof(r->team), m->team);
    if (m->gpus > 0)
        r->gpus = m->gpus;
    if (m->price_gpu_h > 0)
        r->price_gpu_h = m->price_gpu_h;
    if (m->summary[0])
        copy(r->summary, sizeof(r->summary), m->summary);
    if (r->dispatched_ms == 0)
        r->dispatched_ms = now_ms;
    r->started_ms = 0;
    r->finished_ms = 0;
    r->mirror_completed_ms = 0;
    snprintf(r->reason, sizeof(r->reason),
             "record re-derived from mirror %s/%s/%s (attempt %d): Redis had lost it", m->cluster,
             r->ns, m->name, m->attempt);
}

char *sw_adopt_placement_json(const struct sw_job_rec *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "pool", r->target_pool);
    cJSON_AddStringToObject(o, "region", r->target_region);
    cJSON_AddStringToObject(o, "capacity", r->capacity);
    cJSON_AddStringToObject(o, "team", r->team);
    cJSON_AddNumberToObject(o, "gpus", r->gpus);
    cJSON_AddNumberToObject(o, "priceGpuHour", r->price_gpu_h);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
