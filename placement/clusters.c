/*
 * clusters.c - parses the simulator's clusters file (JSON).
 */
#include "placement/clusters.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"

/* Synthetic deadlines are submit + allowance + slack x duration. */
#define DEADLINE_MAX_SLACK 1e6

/* Reads a string field into a fixed-size name. */
static int get_name(const cJSON *obj, const char *field, bool required, const char *what,
                    const char *path, char *dst, struct sw_error *err)
{
    const char *s = NULL;
    char ctx[160];
    snprintf(ctx, sizeof(ctx), "%s: %s", what, path);
    int rc = sw_json_string(obj, field, required, ctx, &s, err);
    if (rc != 0)
        return rc;
    if (s == NULL)
        return 0;
    if (sw_name_set(dst, SW_NAME_MAX, s) != 0)
        return sw_error_set(err, SW_EPARSE, "%s: %s: field \"%s\": longer than %d characters", what,
                            path, field, SW_NAME_MAX - 1);
    return 0;
}

/* Reads a number from 0 to `max` (the SW_MAX_* bound of what it means). */
static int get_num(const cJSON *obj, const char *field, bool required, const char *what,
                   const char *path, double max, double *out, struct sw_error *err)
{
    char ctx[160];
    snprintf(ctx, sizeof(ctx), "%s: %s", what, path);
    int rc = sw_json_number(obj, field, required, ctx, out, err);
    if (rc != 0)
        return rc;
    if (!isfinite(*out) || *out < 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s: %s: field \"%s\": expected a non-negative number, got %g", what,
                            path, field, *out);
    if (*out > max)
        return sw_error_set(err, SW_EPARSE, "%s: %s: field \"%s\": %g is out of range (at most %g)",
                            what, path, field, *out, max);
    return 0;
}

static int get_int(const cJSON *obj, const char *field, bool required, const char *what,
                   const char *path, int *out, bool allow_negative, struct sw_error *err)
{
    int64_t v = *out;
    char ctx[160];
    snprintf(ctx, sizeof(ctx), "%s: %s", what, path);
    int rc = sw_json_int64(obj, field, required, ctx, &v, err);
    if (rc != 0)
        return rc;
    if ((!allow_negative && v < 0) || v > 1000000 || v < -1)
        return sw_error_set(
            err, SW_EPARSE,
            "%s: %s: field \"%s\": expected an integer from %d to 1000000, got %lld", what, path,
            field, allow_negative ? -1 : 0, (long long)v);
    *out = (int)v;
    return 0;
}

static const cJSON *get_array(const cJSON *root, const char *field, bool required, const char *what,
                              size_t *n, struct sw_error *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, field);
    *n = 0;
    if (a == NULL) {
        if (required)
            sw_error_set(err, SW_EPARSE, "%s: field \"%s\" is missing", what, field);
        return NULL;
    }
    if (!cJSON_IsArray(a)) {
        sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected an array, got %s", what, field,
                     sw_json_type_name(a));
        return NULL;
    }
    *n = (size_t)cJSON_GetArraySize(a);
    return a;
}

/* The fields each object of the file may have: anything else is refused,
 * naming it (a misspelt "qoutas" would otherwise be ignored in silence). */
static const char *const top_fields[] = {"pools",        "links",  "quotas", "budgets",
                                         "job_defaults", "origin", NULL};
static const char *const pool_fields[] = {"name",
                                          "cluster",
                                          "region",
                                          "flavour",
                                          "capacity",
                                          "product",
                                          "gpus",
                                          "max_gpus",
                                          "gpu_memory_gb",
                                          "provision_seconds",
                                          "price_per_gpu_hour",
                                          "interruptions_per_hour",
                                          "gpus_per_instance",
                                          "gpu_sharing",
                                          "mig",
                                          "interconnect",
                                          NULL};
static const char *const mig_fields[] = {"profile", "per_gpu", "gpus", NULL};
static const char *const link_fields[] = {"from", "to", "price_per_gb", "bandwidth_gbps", NULL};
static const char *const quota_fields[] = {"team",    "flavour",         "cohort",
                                           "nominal", "borrowing_limit", NULL};
static const char *const budget_fields[] = {"team", "cap", NULL};
static const char *const defaults_fields[] = {"checkpoint_seconds",
                                              "restart_seconds",
                                              "input_gb",
                                              "input_region",
                                              "burst",
                                              "deadline_slack",
                                              "deadline_allowance_seconds",
                                              "deadline_fraction",
                                              "input_gb_sigma",
                                              "output_gb",
                                              "output_gb_sigma",
                                              "output_region",
                                              "max_preemptions",
                                              "runtime_prior_seconds",
                                              "runtime_prior_sigma",
                                              "annotation_sigma",
                                              "runtime_min_runs",
                                              NULL};

/* Refuses a member of `o` not in `fields`: "FILE: PATH: field "k": unknown
 * (expected a, b, ...)" (no PATH at the top). Not an object: left to the
 * readers of its fields, which say so. */
static int check_fields(const cJSON *o, const char *const *fields, const char *what,
                        const char *path, struct sw_error *err)
{
    if (!cJSON_IsObject(o))
        return 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, o)
    {
        size_t i = 0;
        while (fields[i] != NULL && strcmp(fields[i], m->string) != 0)
            i++;
        if (fields[i] != NULL)
            continue;
        char expected[512] = "";
        size_t used = 0;
        for (i = 0; fields[i] != NULL && used < sizeof(expected); i++) {
            int w = snprintf(expected + used, sizeof(expected) - used, "%s%s", i ? ", " : "",
                             fields[i]);
            if (w < 0)
                break;
            used += (size_t)w;
        }
        return sw_error_set(err, SW_EPARSE, "%s: %s%sfield \"%.60s\": unknown (expected %s)", what,
                            path ? path : "", path ? ": " : "", m->string, expected);
    }
    return 0;
}

/* MIG profiles ("mig": [{"profile": "1g.10gb", "per_gpu": 7, "gpus": 2}]):
 * an owned pool has `gpus` of its GPUs partitioned into per_gpu slices of
 * the profile (no longer whole GPUs); a cloud pool partitions every GPU it
 * rents for a Job asking the profile (no "gpus"). */
static int parse_mig(const cJSON *o, const char *what, const char *path, struct sw_pool *p,
                     int *gpus, struct sw_error *err)
{
    size_t n;
    const cJSON *a = get_array(o, "mig", false, what, &n, err);
    if (a == NULL) /* absent, or not an array (said in err) */
        return cJSON_GetObjectItemCaseSensitive(o, "mig") == NULL ? 0 : SW_EPARSE;
    if (n > SW_MAX_MIG)
        return sw_error_set(err, SW_EPARSE, "%s: %s: field \"mig\": %zu profiles, at most %d", what,
                            path, n, SW_MAX_MIG);
    if (p->time_sliced)
        return sw_error_set(err, SW_EPARSE,
                            "%s: %s: field \"mig\": a time-sliced pool's GPUs are not "
                            "partitioned (list MIG slices in a pool of their own)",
                            what, path);
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        struct sw_mig_offer *m = &p->mig[p->n_mig];
        char mpath[112], ctx[384];
        snprintf(mpath, sizeof(mpath), "%s: mig[%d]", path, p->n_mig);
        snprintf(ctx, sizeof(ctx), "%s: %s", what, mpath);
        const char *profile = "";
        int rc, part = 0;
        if (!cJSON_IsObject(it))
            return sw_error_set(err, SW_EPARSE, "%s: expected an object, got %s", ctx,
                                sw_json_type_name(it));
        if ((rc = check_fields(it, mig_fields, what, mpath, err)) != 0)
            return rc;
        if ((rc = sw_json_string(it, "profile", true, ctx, &profile, err)) != 0)
            return rc;
        if (!sw_mig_profile_valid(profile))
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"profile\": expected a MIG profile such as 1g.10gb, "
                                "got \"%.40s\"",
                                ctx, profile);
        snprintf(m->profile, sizeof(m->profile), "%s", profile);
        if ((rc = get_int(it, "per_gpu", true, what, mpath, &m->per_gpu, false, err)) != 0 ||
            (rc = get_int(it, "gpus", p->capacity == SW_CAP_OWNED, what, mpath, &part, false,
                          err)) != 0)
            return rc;
        if (m->per_gpu < 1 || m->per_gpu > SW_MIG_MAX_PER_GPU)
            return sw_error_set(err, SW_EPARSE, "%s: field \"per_gpu\": expected 1 to %d, got %d",
                                ctx, SW_MIG_MAX_PER_GPU, m->per_gpu);
        if (p->capacity != SW_CAP_OWNED && part != 0)
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"gpus\": a cloud pool partitions the GPUs it rents; "
                                "expected none",
                                ctx);
        if (part > *gpus)
            return sw_error_set(err, SW_EPARSE,
                                "%s: field \"gpus\": %d partitioned, but the pool has %d GPUs "
                                "left",
                                ctx, part, *gpus);
        for (int k = 0; k < p->n_mig; k++)
            if (strcmp(p->mig[k].profile, m->profile) == 0)
                return sw_error_set(err, SW_EPARSE, "%s: profile \"%s\" listed twice", ctx,
                                    m->profile);
        *gpus -= part;
        m->total = m->free = part * m->per_gpu;
        p->n_mig++;
    }
    return 0;
}

static int parse_pool(const cJSON *o, const char *what, const char *path, struct sw_pool *p,
                      struct sw_error *err)
{
    int rc;
    char cap[SW_NAME_MAX] = "";
    if ((rc = check_fields(o, pool_fields, what, path, err)) != 0)
        return rc;
    if ((rc = get_name(o, "name", true, what, path, p->name, err)) != 0 ||
        (rc = get_name(o, "cluster", false, what, path, p->cluster, err)) != 0 ||
        (rc = get_name(o, "region", true, what, path, p->region, err)) != 0 ||
        (rc = get_name(o, "flavour", false, what, path, p->flavour, err)) != 0 ||
        (rc = get_name(o, "capacity", true, what, path, cap, err)) != 0)
        return rc;
    if (p->cluster[0] == '\0')
        memcpy(p->cluster, p->name, sizeof(p->cluster));
    if (sw_capacity_parse(cap, &p->capacity) != 0)
        return sw_error_set(err, SW_EPARSE,
                            "%s: %s: field \"capacity\": expected owned, on-demand or spot, got "
                            "\"%s\"",
                            what, path, cap);
    const char *product = "any";
    char ctx[160];
    snprintf(ctx, sizeof(ctx), "%s: %s", what, path);
    if ((rc = sw_json_string(o, "product", false, ctx, &product, err)) != 0)
        return rc;
    if (sw_name_set(p->product, sizeof(p->product), product) != 0)
        return sw_error_set(err, SW_EPARSE, "%s: %s: field \"product\": too long", what, path);
    int gpus = 0;
    p->max_gpus = -1;
    if ((rc = get_int(o, "gpus", true, what, path, &gpus, false, err)) != 0 ||
        (rc = get_int(o, "max_gpus", false, what, path, &p->max_gpus, true, err)) != 0 ||
        (rc = get_num(o, "gpu_memory_gb", false, what, path, SW_MAX_GB, &p->gpu_mem_gb, err)) !=
            0 ||
        (rc = get_num(o, "provision_seconds", false, what, path, SW_MAX_SECONDS, &p->provision_s,
                      err)) != 0 ||
        (rc = get_num(o, "price_per_gpu_hour", true, what, path, SW_MAX_PRICE, &p->price_gpu_h,
                      err)) != 0 ||
        (rc = get_num(o, "interruptions_per_hour", false, what, path, SW_MAX_INTERRUPTIONS,
                      &p->interrupt_per_h, err)) != 0 ||
        (rc = get_int(o, "gpus_per_instance", false, what, path, &p->gpus_per_instance, false,
                      err)) != 0)
        return rc;
    /* Time-slicing ("gpu_sharing": "time-slicing"): shares of a GPU pack
     * on the pool's GPUs, and its counts are in milli-GPUs (struct
     * sw_pool). Only owned pools here: the simulator's cloud pools rent
     * whole GPUs, so a share bursting pays for one. */
    const char *sharing = "none";
    if ((rc = sw_json_string(o, "gpu_sharing", false, ctx, &sharing, err)) != 0)
        return rc;
    if (strcmp(sharing, "time-slicing") == 0) {
        if (p->capacity != SW_CAP_OWNED)
            return sw_error_set(err, SW_EPARSE,
                                "%s: %s: field \"gpu_sharing\": time-slicing is modelled for "
                                "owned pools only (a cloud pool rents whole GPUs)",
                                what, path);
        p->time_sliced = true;
        gpus *= 1000;
        if (p->max_gpus > 0)
            p->max_gpus *= 1000;
    } else if (strcmp(sharing, "none") != 0) {
        return sw_error_set(err, SW_EPARSE,
                            "%s: %s: field \"gpu_sharing\": expected none or time-slicing, got "
                            "\"%.40s\"",
                            what, path, sharing);
    }
    if ((rc = parse_mig(o, what, path, p, &gpus, err)) != 0)
        return rc;
    /* Owned pools have `gpus` GPUs; cloud pools start empty and autoscale
     * up to `gpus` (or max_gpus). */
    if (p->capacity == SW_CAP_OWNED) {
        p->total_gpus = gpus;
        p->free_gpus = gpus;
        if (p->max_gpus < gpus || p->n_mig > 0) /* partitioned GPUs are not whole ones */
            p->max_gpus = gpus;
    } else {
        p->total_gpus = 0;
        p->free_gpus = 0;
        if (p->max_gpus < 0)
            p->max_gpus = gpus;
    }
    const cJSON *ic = cJSON_GetObjectItemCaseSensitive(o, "interconnect");
    if (ic != NULL) {
        if (!cJSON_IsArray(ic))
            return sw_error_set(err, SW_EPARSE,
                                "%s: %s: field \"interconnect\": expected an array of strings",
                                what, path);
        const cJSON *it;
        cJSON_ArrayForEach(it, ic)
        {
            if (cJSON_IsString(it) && strcmp(it->valuestring, "nvlink") == 0)
                p->interconnect |= SW_IC_NVLINK;
            else if (cJSON_IsString(it) && strcmp(it->valuestring, "infiniband") == 0)
                p->interconnect |= SW_IC_INFINIBAND;
            else
                return sw_error_set(err, SW_EPARSE,
                                    "%s: %s: field \"interconnect\": expected \"nvlink\" or "
                                    "\"infiniband\"",
                                    what, path);
        }
    }
    return 0;
}

static void *alloc_array(size_t n, size_t size)
{
    return sw_calloc(n ? n : 1, size);
}

int sw_clusters_parse(const char *buf, size_t len, const char *what, struct sw_clusters *out,
                      struct sw_error *err)
{
    cJSON *root;
    sw_json_init_hooks();
    int rc = sw_json_parse(buf, len, what, &root, err);
    if (rc != 0)
        return rc;
    char path[96];
    size_t n;
    const cJSON *a, *it;
    size_t i;
    if (!cJSON_IsObject(root)) {
        rc = sw_error_set(err, SW_EPARSE, "%s: expected a JSON object", what);
        goto out;
    }
    if ((rc = check_fields(root, top_fields, what, NULL, err)) != 0)
        goto out;
    a = get_array(root, "pools", true, what, &n, err);
    if (a == NULL || n == 0) {
        rc = a == NULL ? SW_EPARSE
                       : sw_error_set(err, SW_EPARSE, "%s: field \"pools\" is empty", what);
        goto out;
    }
    if ((out->pools = alloc_array(n, sizeof(*out->pools))) == NULL)
        goto nomem;
    i = 0;
    cJSON_ArrayForEach(it, a)
    {
        snprintf(path, sizeof(path), "pools[%zu]", i);
        if ((rc = parse_pool(it, what, path, &out->pools[i], err)) != 0)
            goto out;
        out->n_pools = ++i;
    }
    a = get_array(root, "links", false, what, &n, err);
    if (a == NULL && cJSON_GetObjectItemCaseSensitive(root, "links")) {
        rc = SW_EPARSE;
        goto out;
    }
    if ((out->links = alloc_array(n, sizeof(*out->links))) == NULL)
        goto nomem;
    i = 0;
    cJSON_ArrayForEach(it, a)
    {
        struct sw_link *l = &out->links[i];
        snprintf(path, sizeof(path), "links[%zu]", i);
        if ((rc = check_fields(it, link_fields, what, path, err)) != 0 ||
            (rc = get_name(it, "from", true, what, path, l->from, err)) != 0 ||
            (rc = get_name(it, "to", true, what, path, l->to, err)) != 0 ||
            (rc = get_num(it, "price_per_gb", true, what, path, SW_MAX_PRICE, &l->price_per_gb,
                          err)) != 0 ||
            (rc = get_num(it, "bandwidth_gbps", true, what, path, SW_MAX_GBPS, &l->bandwidth_gbps,
                          err)) != 0)
            goto out;
        out->n_links = ++i;
    }
    a = get_array(root, "quotas", false, what, &n, err);
    if (a == NULL && cJSON_GetObjectItemCaseSensitive(root, "quotas")) {
        rc = SW_EPARSE;
        goto out;
    }
    if ((out->quotas = alloc_array(n, sizeof(*out->quotas))) == NULL)
        goto nomem;
    i = 0;
    cJSON_ArrayForEach(it, a)
    {
        struct sw_quota *q = &out->quotas[i];
        snprintf(path, sizeof(path), "quotas[%zu]", i);
        q->borrowing_limit = -1;
        if ((rc = check_fields(it, quota_fields, what, path, err)) != 0 ||
            (rc = get_name(it, "team", true, what, path, q->team, err)) != 0 ||
            (rc = get_name(it, "flavour", true, what, path, q->flavour, err)) != 0 ||
            (rc = get_name(it, "cohort", false, what, path, q->cohort, err)) != 0 ||
            (rc = get_int(it, "nominal", true, what, path, &q->nominal, false, err)) != 0 ||
            (rc = get_int(it, "borrowing_limit", false, what, path, &q->borrowing_limit, true,
                          err)) != 0)
            goto out;
        out->n_quotas = ++i;
    }
    a = get_array(root, "budgets", false, what, &n, err);
    if (a == NULL && cJSON_GetObjectItemCaseSensitive(root, "budgets")) {
        rc = SW_EPARSE;
        goto out;
    }
    if ((out->budgets = alloc_array(n, sizeof(*out->budgets))) == NULL)
        goto nomem;
    i = 0;
    cJSON_ArrayForEach(it, a)
    {
        struct sw_budget *b = &out->budgets[i];
        snprintf(path, sizeof(path), "budgets[%zu]", i);
        if ((rc = check_fields(it, budget_fields, what, path, err)) != 0 ||
            (rc = get_name(it, "team", true, what, path, b->team, err)) != 0 ||
            (rc = get_num(it, "cap", true, what, path, INFINITY, &b->cap, err)) != 0)
            goto out;
        out->n_budgets = ++i;
    }
    /* Job defaults. */
    struct sw_job_defaults *d = &out->defaults;
    d->checkpoint_s = 1800;
    d->restart_s = 300;
    d->burst = SW_BURST_AUTO;
    d->deadline_fraction = 1.0;
    d->max_preemptions = -1;
    sw_estimator_params_default(&d->estimator);
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(root, "job_defaults");
    if (jd != NULL) {
        char burst[SW_NAME_MAX] = "auto";
        const char *p = "job_defaults";
        if ((rc = check_fields(jd, defaults_fields, what, p, err)) != 0 ||
            (rc = get_num(jd, "checkpoint_seconds", false, what, p, SW_MAX_SECONDS,
                          &d->checkpoint_s, err)) != 0 ||
            (rc = get_num(jd, "restart_seconds", false, what, p, SW_MAX_SECONDS, &d->restart_s,
                          err)) != 0 ||
            (rc = get_num(jd, "input_gb", false, what, p, SW_MAX_GB, &d->input_gb, err)) != 0 ||
            (rc = get_name(jd, "input_region", false, what, p, d->input_region, err)) != 0 ||
            (rc = get_name(jd, "burst", false, what, p, burst, err)) != 0 ||
            (rc = get_num(jd, "deadline_slack", false, what, p, DEADLINE_MAX_SLACK,
                          &d->deadline_slack, err)) != 0 ||
            (rc = get_num(jd, "deadline_allowance_seconds", false, what, p, SW_MAX_SECONDS,
                          &d->deadline_allowance_s, err)) != 0 ||
            (rc = get_num(jd, "deadline_fraction", false, what, p, 1.0, &d->deadline_fraction,
                          err)) != 0 ||
            (rc = get_num(jd, "input_gb_sigma", false, what, p, SW_MAX_SIGMA, &d->input_gb_sigma,
                          err)) != 0 ||
            (rc = get_num(jd, "output_gb", false, what, p, SW_MAX_GB, &d->output_gb, err)) != 0 ||
            (rc = get_num(jd, "output_gb_sigma", false, what, p, SW_MAX_SIGMA, &d->output_gb_sigma,
                          err)) != 0 ||
            (rc = get_name(jd, "output_region", false, what, p, d->output_region, err)) != 0 ||
            (rc = get_int(jd, "max_preemptions", false, what, p, &d->max_preemptions, true, err)) !=
                0 ||
            (rc = get_num(jd, "runtime_prior_seconds", false, what, p, SW_MAX_SECONDS,
                          &d->estimator.prior_median_s, err)) != 0 ||
            (rc = get_num(jd, "runtime_prior_sigma", false, what, p, SW_MAX_SIGMA,
                          &d->estimator.prior_sigma, err)) != 0 ||
            (rc = get_num(jd, "annotation_sigma", false, what, p, SW_MAX_SIGMA,
                          &d->estimator.annotation_sigma, err)) != 0)
            goto out;
        int min_runs = (int)d->estimator.min_runs;
        if ((rc = get_int(jd, "runtime_min_runs", false, what, p, &min_runs, false, err)) != 0)
            goto out;
        if (min_runs < 1 || d->estimator.prior_median_s <= 0) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s: job_defaults: field \"%s\": expected a positive number", what,
                              min_runs < 1 ? "runtime_min_runs" : "runtime_prior_seconds");
            goto out;
        }
        d->estimator.min_runs = (size_t)min_runs;
        if (sw_burst_mode_parse(burst, &d->burst) != 0) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s: field \"job_defaults.burst\": expected never, auto or "
                              "cloud-first, got \"%s\"",
                              what, burst);
            goto out;
        }
    }
    if (d->output_region[0] == '\0')
        memcpy(d->output_region, d->input_region, sizeof(d->output_region));
    if ((rc = get_name(root, "origin", false, what, "top level", out->origin, err)) != 0)
        goto out;
    if (out->origin[0] == '\0') {
        for (i = 0; i < out->n_pools && out->origin[0] == '\0'; i++)
            if (out->pools[i].capacity == SW_CAP_OWNED)
                memcpy(out->origin, out->pools[i].cluster, sizeof(out->origin));
        if (out->origin[0] == '\0') {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s: field \"origin\" is missing and no pool is owned", what);
            goto out;
        }
    }
    /* Cross-checks the engine would also make, reported against the file. */
    struct sw_snapshot s = {.pools = out->pools,
                            .n_pools = out->n_pools,
                            .links = out->links,
                            .n_links = out->n_links,
                            .quotas = out->quotas,
                            .n_quotas = out->n_quotas,
                            .budgets = out->budgets,
                            .n_budgets = out->n_budgets};
    if ((rc = sw_snapshot_validate(&s, err)) != 0) {
        sw_error_wrap(err, "%s", what);
        goto out;
    }
    bool origin_known = false;
    for (i = 0; i < out->n_pools; i++)
        origin_known |= strcmp(out->pools[i].cluster, out->origin) == 0;
    if (!origin_known)
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"origin\": no pool is in cluster \"%s\"",
                          what, out->origin);
    goto out;
nomem:
    rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
out:
    cJSON_Delete(root);
    return rc;
}

void sw_clusters_free(struct sw_clusters *c)
{
    sw_free(c->pools);
    sw_free(c->links);
    sw_free(c->quotas);
    sw_free(c->budgets);
    memset(c, 0, sizeof(*c));
}
