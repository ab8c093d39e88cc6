/*
 * mirror.c - the mirror Job built from its origin (pure): the origin's
 * spec without the fields the API or the Job controller own, back-reference
 * labels and annotations, the pool's node selector and the spot toleration,
 * where the data is in the mirror's region, and a pod failure policy that
 * tells a lost node apart from a failing workload.
 */
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/error.h"
#include "common/json.h"
#include "controller/hub/mirror.h"

#include "controller/hub/adopt.h"
#include "controller/hub/annotations.h"

void sw_mirror_name(const char *uid, int attempt, char *buf, size_t len)
{
    snprintf(buf, len, "sw-%.36s-%d", uid, attempt);
}

/* ---- the proof ------------------------------------------------------------ */

/* One field of the proof's message: its length, ':', its bytes, '\n'. */
static int mac_field(EVP_MAC_CTX *c, const char *v)
{
    char len[24];
    int n = snprintf(len, sizeof(len), "%zu:", strlen(v));
    return EVP_MAC_update(c, (const unsigned char *)len, (size_t)n) == 1 &&
                   EVP_MAC_update(c, (const unsigned char *)v, strlen(v)) == 1 &&
                   EVP_MAC_update(c, (const unsigned char *)"\n", 1) == 1
               ? 0
               : SW_ECRYPTO;
}

int sw_mirror_proof(const unsigned char key[SW_MIRROR_PROOF_KEY_LEN],
                    const struct sw_mirror_proof_fields *f, char out[SW_MIRROR_PROOF_HEX])
{
    out[0] = '\0';
    char attempt[16];
    snprintf(attempt, sizeof(attempt), "%d", f->attempt);
    const char *fields[] = {f->origin_uid, f->origin_cluster, f->origin_ns, f->ns,      f->name,
                            attempt,       f->target_cluster, f->placement, f->decision};
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *c = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    int rc = c && EVP_MAC_init(c, key, SW_MIRROR_PROOF_KEY_LEN, params) == 1 &&
                     EVP_MAC_update(c, (const unsigned char *)"v1\n", 3) == 1
                 ? 0
                 : SW_ECRYPTO;
    for (size_t i = 0; rc == 0 && i < sizeof(fields) / sizeof(fields[0]); i++)
        rc = mac_field(c, fields[i] ? fields[i] : "");
    unsigned char md[32];
    size_t mdlen = 0;
    if (rc == 0 && (EVP_MAC_final(c, md, &mdlen, sizeof(md)) != 1 || mdlen != sizeof(md)))
        rc = SW_ECRYPTO;
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    if (rc != 0)
        return rc;
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(md); i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * sizeof(md)] = '\0';
    return 0;
}

bool sw_mirror_proof_ok(const cJSON *job, const char *cluster,
                        const unsigned char key[SW_MIRROR_PROOF_KEY_LEN])
{
    const cJSON *md = sw_json_child(job, "metadata");
    const cJSON *labels = sw_json_child(md, "labels");
    const cJSON *ann = sw_json_child(md, "annotations");
    const char *given = sw_json_str(ann, SW_ANN_PROOF);
    const char *att = sw_json_str(labels, SW_LBL_ATTEMPT);
    struct sw_mirror_proof_fields f = {
        .origin_uid = sw_json_str(labels, SW_LBL_ORIGIN_UID),
        .origin_cluster = sw_json_str(labels, SW_LBL_ORIGIN_CL),
        .origin_ns = sw_json_str(labels, SW_LBL_ORIGIN_NS),
        .ns = sw_json_str(md, "namespace"),
        .name = sw_json_str(md, "name"),
        .target_cluster = cluster,
        .placement = sw_json_str(ann, SW_ANN_PLACEMENT),
        .decision = sw_json_str(ann, SW_ANN_DECISION),
    };
    if (given == NULL || strlen(given) != SW_MIRROR_PROOF_HEX - 1 || att == NULL ||
        f.origin_uid == NULL || f.origin_cluster == NULL || f.origin_ns == NULL || f.ns == NULL ||
        f.name == NULL || cluster == NULL || f.placement == NULL || f.decision == NULL)
        return false;
    /* The attempt exactly as sw_mirror_build writes it ("%d", from 1). */
    char *end = NULL;
    long a = strtol(att, &end, 10);
    char canon[16];
    if (end == att || *end != '\0' || a < 1 || a > 1000000)
        return false;
    snprintf(canon, sizeof(canon), "%ld", a);
    if (strcmp(canon, att) != 0)
        return false;
    f.attempt = (int)a;
    char want[SW_MIRROR_PROOF_HEX];
    if (sw_mirror_proof(key, &f, want) != 0)
        return false;
    bool ok = CRYPTO_memcmp(want, given, SW_MIRROR_PROOF_HEX - 1) == 0;
    OPENSSL_cleanse(want, sizeof(want));
    return ok;
}

/* ---- the mirror object ---------------------------------------------------- */

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v);
}

static cJSON *obj(cJSON *o, const char *k)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsObject(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
        c = cJSON_AddObjectToObject(o, k);
    }
    return c;
}

static cJSON *arr(cJSON *o, const char *k)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsArray(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
        c = cJSON_AddArrayToObject(o, k);
    }
    return c;
}

static void add_env(cJSON *containers, const char *name, const char *value)
{
    cJSON *c;
    cJSON_ArrayForEach(c, containers)
    {
        cJSON *env = arr(c, "env");
        cJSON *e;
        bool found = false;
        cJSON_ArrayForEach(e, env)
        {
            const char *n = sw_json_str(e, "name");
            if (n && strcmp(n, name) == 0)
                found = true;
        }
        if (found)
            continue;
        cJSON *ne = cJSON_CreateObject();
        cJSON_AddStringToObject(ne, "name", name);
        cJSON_AddStringToObject(ne, "value", value);
        cJSON_AddItemToArray(env, ne);
    }
}

/*
 * Appends the `n` bytes of URI `uri` ("s3://BUCKET/PREFIX", spaces around
 * it trimmed) to `out` with BUCKET as `region` calls it, when `grant`
 * covers it (its read prefixes, or with `write` its write prefixes); a URI
 * that does not parse, is not covered or has no name there is left out.
 */
static void map_uri(const char *uri, size_t n, const struct sw_hub_config *cfg, const char *region,
                    const char *home, const struct sw_grant *grant, bool write, char *out,
                    size_t cap)
{
    while (n > 0 && *uri == ' ')
        uri++, n--;
    while (n > 0 && uri[n - 1] == ' ')
        n--;
    char one[700];
    snprintf(one, sizeof(one), "%.*s", (int)n, uri);
    struct sw_s3_uri u;
    const char *why = NULL;
    size_t used = strlen(out);
    if (sw_s3_uri_parse(one, &u, &why) != 0)
        return;
    /* Only what the origin namespace's grant covers (tenancy.h): the data
     * step copied nothing else, and the mirror is told nothing else, even
     * when the annotation changed since. */
    if (grant == NULL || !sw_grant_covers(write ? grant->write : grant->read,
                                          write ? grant->nwrite : grant->nread, &u))
        return;
    /* "s3://" BUCKET REST: only the bucket changes. */
    const char *rest = one + 5 + strlen(u.bucket);
    /* No name in that region: the data step refused the burst before any
     * mirror (data.c); the URI is then left out rather than guessed. */
    const char *name = sw_hub_config_bucket(cfg, u.bucket, region, home);
    if (name != NULL)
        snprintf(out + used, cap - used, "s3://%s%s", name, rest);
}

cJSON *sw_mirror_build(const cJSON *origin, const struct sw_job_rec *r, const char *mirror_name,
                       const char *s3_endpoint, int64_t epoch, bool spot, const char *cap_label,
                       const char *cap_value, const struct sw_hub_config *buckets,
                       const unsigned char proof_key[SW_MIRROR_PROOF_KEY_LEN])
{
    sw_assert(proof_key != NULL);
    const cJSON *ospec = sw_json_child((cJSON *)origin, "spec");
    if (!cJSON_IsObject(ospec) || !cJSON_IsObject(sw_json_child((cJSON *)ospec, "template")))
        return NULL;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "apiVersion", "batch/v1");
    cJSON_AddStringToObject(m, "kind", "Job");
    cJSON *md = cJSON_AddObjectToObject(m, "metadata");
    cJSON_AddStringToObject(md, "name", mirror_name);
    cJSON_AddStringToObject(md, "namespace", r->ns);
    cJSON *labels = cJSON_AddObjectToObject(md, "labels");
    char attempt[16], ep[32];
    snprintf(attempt, sizeof(attempt), "%d", r->attempt);
    snprintf(ep, sizeof(ep), "%lld", (long long)epoch);
    cJSON_AddStringToObject(labels, SW_LBL_MANAGED, "spillway");
    cJSON_AddStringToObject(labels, SW_LBL_ORIGIN_CL, r->cluster);
    cJSON_AddStringToObject(labels, SW_LBL_ORIGIN_NS, r->ns);
    cJSON_AddStringToObject(labels, SW_LBL_ORIGIN_NAME, r->name);
    cJSON_AddStringToObject(labels, SW_LBL_ORIGIN_UID, r->uid);
    cJSON_AddStringToObject(labels, SW_LBL_ATTEMPT, attempt);
    cJSON_AddStringToObject(labels, SW_LBL_EPOCH, ep);
    cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
    char origin_ref[256];
    snprintf(origin_ref, sizeof(origin_ref), "%s/%s/%s", r->cluster, r->ns, r->name);
    cJSON_AddStringToObject(ann, "spillway.io/origin", origin_ref);
    cJSON_AddStringToObject(ann, SW_ANN_DECISION, r->summary);
    /* Enough to re-derive the record from the mirror if Redis loses it (adopt.h). */
    char *placement = sw_adopt_placement_json(r);
    if (placement != NULL) {
        cJSON_AddStringToObject(ann, SW_ANN_PLACEMENT, placement);
        /* The hub's signature over what adoption will trust: without it
         * (out of memory) the mirror runs, but no record is ever re-derived
         * from it. */
        struct sw_mirror_proof_fields f = {
            .origin_uid = r->uid,
            .origin_cluster = r->cluster,
            .origin_ns = r->ns,
            .ns = r->ns,
            .name = mirror_name,
            .attempt = r->attempt,
            .target_cluster = r->target_cluster,
            .placement = placement,
            .decision = r->summary,
        };
        char proof[SW_MIRROR_PROOF_HEX];
        if (sw_mirror_proof(proof_key, &f, proof) == 0)
            cJSON_AddStringToObject(ann, SW_ANN_PROOF, proof);
        cJSON_free(placement);
    }

    cJSON *spec = cJSON_Duplicate(ospec, 1);
    cJSON_AddItemToObject(m, "spec", spec);
    static const char *drop[] = {"selector", "manualSelector", "managedBy", "suspend",
                                 "ttlSecondsAfterFinished"};
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(spec, drop[i]);
    cJSON *tpl = sw_json_child(spec, "template");
    cJSON *tmd = obj(tpl, "metadata");
    cJSON *tl = sw_json_child(tmd, "labels");
    static const char *gen[] = {"controller-uid", "job-name", "batch.kubernetes.io/controller-uid",
                                "batch.kubernetes.io/job-name"};
    for (size_t i = 0; tl && i < sizeof(gen) / sizeof(gen[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(tl, gen[i]);
    cJSON *tlab = obj(tmd, "labels");
    cJSON_AddStringToObject(tlab, SW_LBL_ORIGIN_UID, r->uid);
    cJSON *ps = obj(tpl, "spec");

    /* The pool's capacity type, as its nodes are labelled (Karpenter's,
     * or EKS', GKE's, AKS' own), and spot's taint. */
    cJSON *sel = obj(ps, "nodeSelector");
    if (strcmp(r->capacity, "owned") != 0) {
        if (cap_label != NULL && cap_value != NULL)
            set_str(sel, cap_label, cap_value);
        else
            set_str(sel, "karpenter.sh/capacity-type", r->capacity);
    }
    if (spot) {
        cJSON *tol = arr(ps, "tolerations");
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "key", SW_SPOT_TAINT);
        cJSON_AddStringToObject(t, "operator", "Exists");
        cJSON_AddStringToObject(t, "effect", "NoSchedule");
        cJSON_AddItemToArray(tol, t);
    }
    if (cJSON_GetArraySize(sel) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(ps, "nodeSelector");

    /* Where the data is, in the mirror's region. */
    add_env(sw_json_child(ps, "containers"), "SPILLWAY_ATTEMPT", attempt);
    add_env(sw_json_child(ps, "containers"), "SPILLWAY_REGION", r->target_region);
    if (s3_endpoint)
        add_env(sw_json_child(ps, "containers"), "SPILLWAY_S3_ENDPOINT", s3_endpoint);
    const char *in =
        sw_json_str(sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "annotations"),
                    "spillway.io/inputs");
    /* The origin's region, where a bucket keeps its own name: known here
     * only for a mirror at home. */
    const char *home = strcmp(r->target_cluster, r->cluster) == 0 ? r->target_region : NULL;
    const struct sw_grant *grant =
        buckets ? sw_tenancy_find(&buckets->tenancy, r->cluster, r->ns) : NULL;
    if (in) {
        char ins[4 * 720] = "";
        for (const char *p = in;;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            char one[720] = "";
            map_uri(p, n, buckets, r->target_region, home, grant, false, one, sizeof(one));
            size_t used = strlen(ins);
            if (one[0] != '\0')
                snprintf(ins + used, sizeof(ins) - used, "%s%s", used ? "," : "", one);
            if (comma == NULL)
                break;
            p = comma + 1;
        }
        if (ins[0] != '\0')
            add_env(sw_json_child(ps, "containers"), "SPILLWAY_INPUTS", ins);
    }
    /* The outputs fixed in the record at decision (tenancy.h), else (a
     * record written before) the annotation's. */
    const char *out =
        r->outputs[0] != '\0'
            ? r->outputs
            : sw_json_str(sw_json_child(sw_json_child((cJSON *)origin, "metadata"), "annotations"),
                          "spillway.io/outputs");
    if (out) {
        char mapped[700] = "", o[760];
        map_uri(out, strlen(out), buckets, r->target_region, home, grant, true, mapped,
                sizeof(mapped));
        size_t n = strlen(mapped);
        snprintf(o, sizeof(o), "%s%sattempt-%d/", mapped, n && mapped[n - 1] == '/' ? "" : "/",
                 r->attempt);
        if (n > 0)
            add_env(sw_json_child(ps, "containers"), "SPILLWAY_OUTPUTS", o);
    }

    /* A pod lost with its node (spot reclaimed, node deleted) fails the
     * mirror at once with a reason the hub can tell apart, so that the hub
     * decides again instead of the Job controller retrying in place. Only
     * possible with restartPolicy Never (the API's rule). */
    const char *rp = sw_json_str(ps, "restartPolicy");
    if (rp && strcmp(rp, "Never") == 0) {
        cJSON *pfp = obj(spec, "podFailurePolicy");
        cJSON *rules = arr(pfp, "rules");
        cJSON *rule = cJSON_CreateObject();
        cJSON_AddStringToObject(rule, "action", "FailJob");
        cJSON *conds = cJSON_AddArrayToObject(rule, "onPodConditions");
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", "DisruptionTarget");
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddItemToArray(conds, c);
        cJSON_InsertItemInArray(rules, 0, rule);
        /* The API allows only "Failed" with a pod failure policy. */
        set_str(spec, "podReplacementPolicy", "Failed");
    }
    return m;
}

void sw_mirror_queue(cJSON *mirror, const char *local_queue)
{
    cJSON *labels = sw_json_child(sw_json_child(mirror, "metadata"), "labels");
    set_str(labels, "kueue.x-k8s.io/queue-name", local_queue);
    cJSON *spec = sw_json_child(mirror, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "suspend");
    cJSON_AddBoolToObject(spec, "suspend", 1);
}
