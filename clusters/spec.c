/*
 * spec.c - cluster spec files and --pool flags.
 */
#include "clusters/spec.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

const char *sw_cluster_role_name(enum sw_cluster_role r)
{
    return r == SW_ROLE_ONPREM ? "onprem" : r == SW_ROLE_CLOUD ? "cloud" : "";
}

int sw_cluster_role_parse(const char *s, enum sw_cluster_role *out)
{
    if (strcmp(s, "onprem") == 0)
        *out = SW_ROLE_ONPREM;
    else if (strcmp(s, "cloud") == 0)
        *out = SW_ROLE_CLOUD;
    else
        return SW_EINVAL;
    return 0;
}

int sw_name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !islower((unsigned char)s[0]) || s[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
            return 0;
    return 1;
}

static int capacity_ok(const char *s)
{
    return strcmp(s, "owned") == 0 || strcmp(s, "on-demand") == 0 || strcmp(s, "spot") == 0;
}

/* Sets one pool field from text; `what` and `field` name it in errors. */
static int set_pool_field(struct sw_pool_spec *p, const char *key, const char *v, const char *what,
                          const char *field, struct sw_error *err)
{
    char *end = NULL;
    if (strcmp(key, "name") == 0) {
        if (!sw_name_valid(v))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a name of 1-63 lowercase letters, "
                                "digits and '-', got \"%.64s\"",
                                what, field, v);
        snprintf(p->name, sizeof(p->name), "%s", v);
    } else if (strcmp(key, "capacityType") == 0 || strcmp(key, "capacity") == 0) {
        if (!capacity_ok(v))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected owned, on-demand or spot, got "
                                "\"%.40s\"",
                                what, field, v);
        snprintf(p->capacity_type, sizeof(p->capacity_type), "%s", v);
    } else if (strcmp(key, "gpuProduct") == 0 || strcmp(key, "product") == 0) {
        if (v[0] == '\0' || strlen(v) >= sizeof(p->gpu_product))
            return sw_error_set(err, SW_EINVAL, "%s: field \"%s\": expected a GPU product name",
                                what, field);
        snprintf(p->gpu_product, sizeof(p->gpu_product), "%s", v);
    } else if (strcmp(key, "gpuMemoryMiB") == 0 || strcmp(key, "memory") == 0) {
        long long m = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || m <= 0 || m > (1LL << 30))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a whole number of MiB, got \"%.40s\"",
                                what, field, v);
        p->gpu_memory_mib = m;
    } else if (strcmp(key, "zone") == 0) {
        if (strlen(v) >= sizeof(p->zone))
            return sw_error_set(err, SW_EINVAL, "%s: field \"%s\": too long", what, field);
        snprintf(p->zone, sizeof(p->zone), "%s", v);
    } else if (strcmp(key, "pricePerGpuHour") == 0 || strcmp(key, "price") == 0) {
        double d = strtod(v, &end);
        if (end == v || *end != '\0' || !isfinite(d) || d < 0 || d > 10000)
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a price in USD per GPU-hour (0 to "
                                "10000), got \"%.40s\"",
                                what, field, v);
        p->price_per_gpu_hour = d;
    } else if (strcmp(key, "maxGpus") == 0 || strcmp(key, "max") == 0) {
        long long m = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || m < 0 || m > 1000000)
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a whole number of GPUs, got \"%.40s\"",
                                what, field, v);
        p->max_gpus = m;
    } else {
        return sw_error_set(err, SW_EINVAL,
                            "%s: field \"%s\": unknown (expected name, capacityType, gpuProduct, "
                            "gpuMemoryMiB, zone, pricePerGpuHour, maxGpus)",
                            what, field);
    }
    return 0;
}

int sw_pool_flag_parse(const char *value, struct sw_cluster_spec *out, struct sw_error *err)
{
    if (out->npools >= SW_MAX_POOLS)
        return sw_error_set(err, SW_ERANGE, "--pool: at most %d pools", SW_MAX_POOLS);
    struct sw_pool_spec p = {0};
    char buf[1024];
    if (strlen(value) >= sizeof(buf))
        return sw_error_set(err, SW_ETOOBIG, "--pool: the value is too long");
    snprintf(buf, sizeof(buf), "%s", value);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv != NULL; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq == NULL)
            return sw_error_set(err, SW_EINVAL,
                                "--pool \"%.200s\": expected key=value, got "
                                "\"%.60s\"",
                                value, kv);
        *eq = '\0';
        char what[300];
        snprintf(what, sizeof(what), "--pool \"%.200s\"", value);
        int rc = set_pool_field(&p, kv, eq + 1, what, kv, err);
        if (rc != 0)
            return rc;
    }
    out->pools[out->npools++] = p;
    return 0;
}

int sw_cluster_spec_validate(const struct sw_cluster_spec *s, const char *what,
                             struct sw_error *err)
{
    if (s->role == SW_ROLE_NONE)
        return sw_error_set(err, SW_EINVAL, "%s: role is missing (onprem or cloud)", what);
    if (s->region[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "%s: region is missing", what);
    for (size_t i = 0; i < s->npools; i++) {
        const struct sw_pool_spec *p = &s->pools[i];
        if (p->name[0] == '\0')
            return sw_error_set(err, SW_EINVAL, "%s: pools[%zu]: field \"name\" is missing", what,
                                i);
        if (p->capacity_type[0] == '\0')
            return sw_error_set(err, SW_EINVAL,
                                "%s: pool \"%s\": field \"capacityType\" is missing", what,
                                p->name);
        if (p->gpu_product[0] == '\0')
            return sw_error_set(err, SW_EINVAL, "%s: pool \"%s\": field \"gpuProduct\" is missing",
                                what, p->name);
        if (s->role == SW_ROLE_ONPREM && strcmp(p->capacity_type, "owned") != 0)
            return sw_error_set(err, SW_EINVAL,
                                "%s: pool \"%s\": an onprem cluster's pools are owned, not %s",
                                what, p->name, p->capacity_type);
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->pools[j].name, p->name) == 0)
                return sw_error_set(err, SW_EINVAL, "%s: pool \"%s\" is defined twice", what,
                                    p->name);
    }
    return 0;
}

/* ---- spec files --------------------------------------------------------- */

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int sw_cluster_spec_parse(const char *text, size_t len, const char *path,
                          struct sw_cluster_spec *out, struct sw_error *err)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return sw_error_set(err, SW_ENOMEM, "cluster spec \"%s\": out of memory", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = sw_error_set(err, SW_EPARSE, "cluster spec \"%s\": line %zu: %s", path,
                              parser.problem_mark.line + 1,
                              parser.problem ? parser.problem : "malformed YAML");
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = 0;
    char what[300];
    snprintf(what, sizeof(what), "cluster spec \"%.250s\"", path);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE) {
        rc = sw_error_set(err, SW_EPARSE, "%s: expected a mapping at the top", what);
        goto out;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(&doc, p->key));
        yaml_node_t *v = yaml_document_get_node(&doc, p->value);
        if (k == NULL)
            continue;
        if (strcmp(k, "role") == 0) {
            if (scalar(v) == NULL || sw_cluster_role_parse(scalar(v), &out->role) != 0) {
                rc = sw_error_set(err, SW_EINVAL, "%s: field \"role\": expected onprem or cloud",
                                  what);
                goto out;
            }
        } else if (strcmp(k, "region") == 0) {
            if (scalar(v) == NULL || scalar(v)[0] == '\0' ||
                strlen(scalar(v)) >= sizeof(out->region)) {
                rc = sw_error_set(err, SW_EINVAL, "%s: field \"region\": expected a region name",
                                  what);
                goto out;
            }
            snprintf(out->region, sizeof(out->region), "%s", scalar(v));
        } else if (strcmp(k, "name") == 0) {
            /* The cluster's name comes from the command line; allowed here
             * for readability only. */
        } else if (strcmp(k, "pools") == 0) {
            if (v == NULL || v->type != YAML_SEQUENCE_NODE) {
                rc = sw_error_set(err, SW_EPARSE, "%s: field \"pools\": expected a list", what);
                goto out;
            }
            size_t idx = 0;
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++, idx++) {
                yaml_node_t *pn = yaml_document_get_node(&doc, *it);
                if (out->npools >= SW_MAX_POOLS) {
                    rc = sw_error_set(err, SW_ERANGE, "%s: at most %d pools", what, SW_MAX_POOLS);
                    goto out;
                }
                if (pn == NULL || pn->type != YAML_MAPPING_NODE) {
                    rc = sw_error_set(err, SW_EPARSE,
                                      "%s: field \"pools[%zu]\": expected a "
                                      "mapping",
                                      what, idx);
                    goto out;
                }
                struct sw_pool_spec pool = {0};
                for (yaml_node_pair_t *q = pn->data.mapping.pairs.start;
                     q < pn->data.mapping.pairs.top; q++) {
                    const char *pk = scalar(yaml_document_get_node(&doc, q->key));
                    const char *pv = scalar(yaml_document_get_node(&doc, q->value));
                    char field[96];
                    snprintf(field, sizeof(field), "pools[%zu].%.60s", idx, pk ? pk : "?");
                    if (pk == NULL || pv == NULL) {
                        rc = sw_error_set(err, SW_EPARSE, "%s: field \"%s\": expected a scalar",
                                          what, field);
                        goto out;
                    }
                    if ((rc = set_pool_field(&pool, pk, pv, what, field, err)) != 0)
                        goto out;
                }
                out->pools[out->npools++] = pool;
            }
        } else {
            rc = sw_error_set(err, SW_EINVAL,
                              "%s: field \"%.60s\": unknown (expected role, region, pools)", what,
                              k);
            goto out;
        }
    }
out:
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}
