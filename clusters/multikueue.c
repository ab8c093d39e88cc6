/*
 * multikueue.c - MultiKueue's Workload status, AdmissionCheck and
 * MultiKueueConfig read into facts for the hub's dispatcher (multikueue.h).
 * Fields as Kueue v0.17 writes them (apis/kueue/v1beta2/workload_types.go,
 * multikueue_types.go, admissioncheck_types.go).
 */
#include "clusters/multikueue.h"

#include <stdio.h>
#include <string.h>

#include "clusters/capacity.h"
#include "common/json.h"

static const cJSON *child(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = child(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool cond_true(const cJSON *status, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, child(status, "conditions"))
    {
        const char *t = str(c, "type"), *s = str(c, "status");
        if (t && s && strcmp(t, type) == 0)
            return strcmp(s, "True") == 0;
    }
    return false;
}

/* A list of names into `dst` (at most SW_MK_MAX_CLUSTERS, each shorter than
 * SW_MK_NAME_MAX); absent reads as empty. */
static int names(const cJSON *arr, const char *what, const char *field, char (*dst)[SW_MK_NAME_MAX],
                 size_t *n, struct sw_error *err)
{
    *n = 0;
    if (arr == NULL || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr))
        return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected an array of names, got %s",
                            what, field, sw_json_type_name(arr));
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
    {
        if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
            strlen(v->valuestring) >= SW_MK_NAME_MAX)
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"%s[%zu]\": expected a name of 1-%d characters", what,
                                field, *n, SW_MK_NAME_MAX - 1);
        if (*n == SW_MK_MAX_CLUSTERS)
            return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": more than %d names", what, field,
                                SW_MK_MAX_CLUSTERS);
        snprintf(dst[(*n)++], SW_MK_NAME_MAX, "%s", v->valuestring);
    }
    return 0;
}

int sw_mk_workload_from_json(const cJSON *wl, struct sw_mk_workload *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = sw_workload_facts_from_json(wl, &out->f, err);
    if (rc != 0)
        return rc;
    char what[340];
    snprintf(what, sizeof(what), "Workload %.63s/%.253s", out->f.ns, out->f.name);
    const cJSON *md = child(wl, "metadata"), *status = child(wl, "status");
    snprintf(out->uid, sizeof(out->uid), "%s", str(md, "uid") ? str(md, "uid") : "");
    snprintf(out->rv, sizeof(out->rv), "%s",
             str(md, "resourceVersion") ? str(md, "resourceVersion") : "");
    out->reserved = cond_true(status, "QuotaReserved");
    const cJSON *cn = child(status, "clusterName");
    if (cn != NULL && !cJSON_IsNull(cn)) {
        if (!cJSON_IsString(cn) || strlen(cn->valuestring) >= sizeof(out->cluster_name))
            return sw_error_set(err, SW_EPARSE, "%s: field \"status.clusterName\": expected a name",
                                what);
        snprintf(out->cluster_name, sizeof(out->cluster_name), "%s", cn->valuestring);
    }
    const cJSON *nom = child(status, "nominatedClusterNames");
    if ((rc = names(nom, what, "status.nominatedClusterNames", out->nominated, &out->nnominated,
                    err)) != 0)
        return rc;
    out->nominated_set = cJSON_IsArray(nom);
    const cJSON *acs = child(status, "admissionChecks"), *a;
    if (acs != NULL && !cJSON_IsArray(acs))
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"status.admissionChecks\": expected an array", what);
    cJSON_ArrayForEach(a, acs)
    {
        const char *n = str(a, "name"), *s = str(a, "state");
        if (n == NULL || s == NULL || strlen(n) >= sizeof(out->checks[0].name) ||
            strlen(s) >= sizeof(out->checks[0].state))
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"status.admissionChecks[%zu]\": expected a name and "
                                "a state",
                                what, out->nchecks);
        if (out->nchecks == SW_MK_MAX_CHECKS)
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"status.admissionChecks\": more than %d checks", what,
                                SW_MK_MAX_CHECKS);
        struct sw_mk_check_state *cs = &out->checks[out->nchecks++];
        snprintf(cs->name, sizeof(cs->name), "%s", n);
        snprintf(cs->state, sizeof(cs->state), "%s", s);
    }
    /* The shape the engine is given: the first pod set that asks GPUs (the
     * Workload's GPUs were checked whole by sw_workload_facts_from_json). */
    const cJSON *ps;
    cJSON_ArrayForEach(ps, sw_json_path(wl, "spec.podSets"))
    {
        int64_t g = 0;
        struct sw_error e2 = {0};
        if (sw_pod_spec_gpus(sw_json_path(ps, "template.spec"), what, &g, &e2) != 0)
            continue;
        const cJSON *c = child(ps, "count");
        int count = cJSON_IsNumber(c) ? (int)c->valuedouble : 1;
        if (out->pods == 0 || (out->gpus_per_pod == 0 && g > 0)) {
            out->pods = count;
            out->gpus_per_pod = g;
        }
    }
    return 0;
}

bool sw_mk_waits_for_dispatch(const struct sw_mk_workload *wl, const char *check)
{
    if (!wl->reserved || !wl->f.active || wl->f.state == SW_WL_FINISHED ||
        wl->cluster_name[0] != '\0')
        return false;
    for (size_t i = 0; i < wl->nchecks; i++)
        if (strcmp(wl->checks[i].name, check) == 0)
            return strcmp(wl->checks[i].state, "Pending") == 0;
    return false;
}

bool sw_mk_handed_over(const struct sw_mk_workload *wl)
{
    return wl->cluster_name[0] != '\0' && wl->nominated_set && wl->nnominated == 0;
}

const char *sw_mk_check_state(const struct sw_mk_workload *wl, const char *check)
{
    for (size_t i = 0; i < wl->nchecks; i++)
        if (strcmp(wl->checks[i].name, check) == 0)
            return wl->checks[i].state;
    return "";
}

bool sw_mk_copy_won(const struct sw_workload_facts *copy)
{
    return copy->state == SW_WL_ADMITTED || copy->state == SW_WL_FINISHED;
}

int sw_mk_admission_check_from_json(const cJSON *ac, struct sw_mk_admission_check *out,
                                    struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = str(child(ac, "metadata"), "name");
    if (name == NULL || strlen(name) >= sizeof(out->name))
        return sw_error_set(err, SW_EPARSE,
                            "AdmissionCheck: field \"metadata.name\": expected a name of 1-%zu "
                            "characters",
                            sizeof(out->name) - 1);
    snprintf(out->name, sizeof(out->name), "%s", name);
    const cJSON *spec = child(ac, "spec");
    const char *ctl = str(spec, "controllerName");
    out->multikueue = ctl != NULL && strcmp(ctl, SW_MK_CONTROLLER) == 0;
    const cJSON *p = child(spec, "parameters");
    const char *kind = str(p, "kind"), *pn = str(p, "name");
    if (out->multikueue && kind != NULL && strcmp(kind, "MultiKueueConfig") == 0 && pn != NULL) {
        if (strlen(pn) >= sizeof(out->config))
            return sw_error_set(err, SW_EPARSE,
                                "AdmissionCheck %s: field \"spec.parameters.name\": too long",
                                out->name);
        snprintf(out->config, sizeof(out->config), "%s", pn);
    }
    return 0;
}

int sw_mk_config_from_json(const cJSON *cfg, struct sw_mk_config *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *name = str(child(cfg, "metadata"), "name");
    if (name == NULL || strlen(name) >= sizeof(out->name))
        return sw_error_set(err, SW_EPARSE,
                            "MultiKueueConfig: field \"metadata.name\": expected a name");
    snprintf(out->name, sizeof(out->name), "%s", name);
    char what[300];
    snprintf(what, sizeof(what), "MultiKueueConfig %s", out->name);
    const cJSON *cl = child(child(cfg, "spec"), "clusters");
    if (!cJSON_IsArray(cl))
        return sw_error_set(err, SW_EPARSE,
                            "%s: field \"spec.clusters\": expected an array of names", what);
    return names(cl, what, "spec.clusters", out->clusters, &out->nclusters, err);
}
