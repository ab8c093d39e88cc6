/*
 * spec.c - cluster spec files and --pool flags.
 */
#include "clusters/spec.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <yaml.h>

#include "common/assert.h"
#include "common/yamlnode.h"

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

/*
 * A pool's fields: the spec file spells them as in the documentation, a
 * --pool flag also takes the short form. Each field may be given once.
 */
enum pool_field {
    PF_NAME,
    PF_CAPACITY,
    PF_PRODUCT,
    PF_MEMORY,
    PF_ZONE,
    PF_PRICE,
    PF_MAX,
    PF_NODEPOOL,
    PF_N
};

static const struct {
    const char *file;   /* spec file key */
    const char *flag;   /* short --pool key */
    const char *expect; /* what a value must be, for errors */
} pool_fields[PF_N] = {
    [PF_NAME] = {"name", "name", "a pool name"},
    [PF_CAPACITY] = {"capacityType", "capacity", "owned, on-demand or spot"},
    [PF_PRODUCT] = {"gpuProduct", "product", "a GPU product name"},
    [PF_MEMORY] = {"gpuMemoryMiB", "memory", "a whole number of MiB"},
    [PF_ZONE] = {"zone", "zone", "a zone name"},
    [PF_PRICE] = {"pricePerGpuHour", "price", "a price in USD per GPU-hour"},
    [PF_MAX] = {"maxGpus", "max", "a whole number of GPUs"},
    [PF_NODEPOOL] = {"nodePool", "nodepool", "a Karpenter NodePool name"},
};

/* Sets one pool field from text; `what` and `field` name it in errors. */
static int set_pool_field(struct sw_pool_spec *p, enum pool_field f, const char *v,
                          const char *what, const char *field, struct sw_error *err)
{
    char *end = NULL;
    switch (f) {
    case PF_NAME:
        if (!sw_name_valid(v))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a name of 1-63 lowercase letters, "
                                "digits and '-', got \"%.64s\"",
                                what, field, v);
        snprintf(p->name, sizeof(p->name), "%s", v);
        break;
    case PF_CAPACITY:
        if (!capacity_ok(v))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected owned, on-demand or spot, got "
                                "\"%.40s\"",
                                what, field, v);
        snprintf(p->capacity_type, sizeof(p->capacity_type), "%s", v);
        break;
    case PF_PRODUCT:
        if (v[0] == '\0' || strlen(v) >= sizeof(p->gpu_product))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a GPU product name of 1-%d characters",
                                what, field, SW_GPU_PRODUCT_MAX - 1);
        snprintf(p->gpu_product, sizeof(p->gpu_product), "%s", v);
        break;
    case PF_MEMORY: {
        long long m = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || m <= 0 || m > (1LL << 30))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a whole number of MiB, got \"%.40s\"",
                                what, field, v);
        p->gpu_memory_mib = m;
        break;
    }
    case PF_ZONE:
        if (strlen(v) >= sizeof(p->zone))
            return sw_error_set(err, SW_EINVAL, "%s: field \"%s\": too long", what, field);
        snprintf(p->zone, sizeof(p->zone), "%s", v);
        break;
    case PF_PRICE: {
        double d = strtod(v, &end);
        if (end == v || *end != '\0' || !isfinite(d) || d < 0 || d > 10000)
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a price in USD per GPU-hour (0 to "
                                "10000), got \"%.40s\"",
                                what, field, v);
        p->price_per_gpu_hour = d;
        break;
    }
    case PF_MAX: {
        long long m = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || m < 0 || m > 1000000)
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a whole number of GPUs, got \"%.40s\"",
                                what, field, v);
        p->max_gpus = m;
        break;
    }
    case PF_NODEPOOL:
        /* A NodePool is an object name: the same rule as ours (DNS label). */
        if (!sw_name_valid(v))
            return sw_error_set(err, SW_EINVAL,
                                "%s: field \"%s\": expected a NodePool name of 1-63 lowercase "
                                "letters, digits and '-', got \"%.64s\"",
                                what, field, v);
        snprintf(p->nodepool, sizeof(p->nodepool), "%s", v);
        break;
    case PF_N:
        sw_assert(0);
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
    char what[300];
    snprintf(what, sizeof(what), "--pool \"%.200s\"", value);
    const char *given[PF_N] = {NULL}; /* the key each field was given as */
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv != NULL; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq == NULL)
            return sw_error_set(err, SW_EINVAL,
                                "--pool \"%.200s\": expected key=value, got "
                                "\"%.60s\"",
                                value, kv);
        *eq = '\0';
        enum pool_field f = PF_N;
        for (int i = 0; i < PF_N; i++)
            if (strcmp(kv, pool_fields[i].flag) == 0 || strcmp(kv, pool_fields[i].file) == 0)
                f = (enum pool_field)i;
        if (f == PF_N)
            return sw_error_set(err, SW_EINVAL,
                                "%s: key \"%.60s\": unknown (expected name, capacity, product, "
                                "memory, zone, price, max)",
                                what, kv);
        if (given[f] != NULL)
            return sw_error_set(err, SW_EINVAL, "%s: key \"%.60s\": given twice (as \"%s\" before)",
                                what, kv, given[f]);
        given[f] = strcmp(kv, pool_fields[f].flag) == 0 ? pool_fields[f].flag : pool_fields[f].file;
        int rc = set_pool_field(&p, f, eq + 1, what, kv, err);
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
        if (p->nodepool[0] && strcmp(p->capacity_type, "owned") == 0)
            return sw_error_set(err, SW_EINVAL,
                                "%s: pool \"%s\": field \"nodePool\": owned capacity is fixed "
                                "nodes, not a Karpenter NodePool (spot or on-demand)",
                                what, p->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->pools[j].name, p->name) == 0)
                return sw_error_set(err, SW_EINVAL, "%s: pool \"%s\" is defined twice", what,
                                    p->name);
    }
    return 0;
}

/* ---- spec files --------------------------------------------------------- */

/*
 * The spec file is spillway's own format, so it is read strictly: every
 * mapping key must be a known field name, given once; a field is a scalar
 * or a list or a mapping as documented, and never YAML's null (leave the
 * field out instead). Every error names the file, the line and the field.
 */
struct spec_doc {
    yaml_document_t *doc;
    char what[300]; /* cluster spec "path" */
    struct sw_error *err;
};

/*
 * Checks the keys of mapping `m`: each a field name (text), one of `known`
 * and not given before. `in` names the mapping in errors ("" for the top,
 * "pools[0]."). O(n^2) in the keys, but an unknown or repeated key ends the
 * walk, so n is at most the number of known fields.
 */
static int check_keys(struct spec_doc *sd, yaml_node_t *m, const char *in, const char *const *known,
                      size_t nknown, const char *expected)
{
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(sd->doc, p->key);
        if (!sw_yaml_is_text(k)) {
            if (in[0] == '\0')
                return sw_error_set(sd->err, SW_EPARSE,
                                    "%s: line %zu: a key of the top-level mapping: expected a "
                                    "field name, got %s",
                                    sd->what, sw_yaml_line(k), sw_yaml_not_text(k));
            return sw_error_set(sd->err, SW_EPARSE,
                                "%s: line %zu: a key of \"%.*s\": expected a field name, got %s",
                                sd->what, sw_yaml_line(k), (int)strlen(in) - 1, in,
                                sw_yaml_not_text(k));
        }
        const char *name = (const char *)k->data.scalar.value;
        size_t i = 0;
        while (i < nknown && !sw_yaml_key_eq(k, known[i]))
            i++;
        if (i == nknown)
            return sw_error_set(sd->err, SW_EINVAL,
                                "%s: line %zu: field \"%s%.60s\": unknown (expected %s)", sd->what,
                                sw_yaml_line(k), in, name, expected);
        for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *prev = yaml_document_get_node(sd->doc, q->key);
            if (sw_yaml_key_eq(prev, known[i]))
                return sw_error_set(sd->err, SW_EPARSE,
                                    "%s: line %zu: field \"%s%s\": given twice (first on line "
                                    "%zu)",
                                    sd->what, sw_yaml_line(k), in, known[i], sw_yaml_line(prev));
        }
    }
    return 0;
}

/* The text of a scalar field, or an error saying what was expected. */
static int text_field(struct spec_doc *sd, const yaml_node_t *k, const yaml_node_t *v,
                      const char *field, const char *expected, const char **out)
{
    if (!sw_yaml_is_text(v))
        return sw_error_set(sd->err, SW_EPARSE, "%s: line %zu: field \"%s\": expected %s, got %s",
                            sd->what, sw_yaml_line(k), field, expected, sw_yaml_not_text(v));
    *out = (const char *)v->data.scalar.value;
    return 0;
}

static int parse_pool(struct spec_doc *sd, yaml_node_t *pn, size_t idx, struct sw_pool_spec *pool)
{
    char in[32];
    snprintf(in, sizeof(in), "pools[%zu].", idx);
    if (pn == NULL || pn->type != YAML_MAPPING_NODE)
        return sw_error_set(sd->err, SW_EPARSE,
                            "%s: line %zu: field \"pools[%zu]\": expected a mapping, got %s",
                            sd->what, sw_yaml_line(pn), idx, sw_yaml_kind(pn));
    const char *known[PF_N];
    for (int i = 0; i < PF_N; i++)
        known[i] = pool_fields[i].file;
    int rc = check_keys(sd, pn, in, known, PF_N,
                        "name, capacityType, gpuProduct, gpuMemoryMiB, zone, pricePerGpuHour, "
                        "maxGpus, nodePool");
    if (rc != 0)
        return rc;
    for (yaml_node_pair_t *q = pn->data.mapping.pairs.start; q < pn->data.mapping.pairs.top; q++) {
        yaml_node_t *k = yaml_document_get_node(sd->doc, q->key);
        yaml_node_t *v = yaml_document_get_node(sd->doc, q->value);
        int f = 0;
        while (f < PF_N && !sw_yaml_key_eq(k, pool_fields[f].file))
            f++;
        sw_assert(f < PF_N); /* check_keys let only known keys through */
        char field[48], what[340];
        const char *text = NULL;
        snprintf(field, sizeof(field), "%s%s", in, pool_fields[f].file);
        snprintf(what, sizeof(what), "%s: line %zu", sd->what, sw_yaml_line(k));
        if ((rc = text_field(sd, k, v, field, pool_fields[f].expect, &text)) != 0 ||
            (rc = set_pool_field(pool, (enum pool_field)f, text, what, field, sd->err)) != 0)
            return rc;
    }
    return 0;
}

static int parse_root(struct spec_doc *sd, yaml_node_t *root, struct sw_cluster_spec *out)
{
    if (root == NULL || root->type != YAML_MAPPING_NODE)
        return sw_error_set(sd->err, SW_EPARSE, "%s: expected a mapping at the top, got %s",
                            sd->what, root == NULL ? "an empty file" : sw_yaml_kind(root));
    static const char *const known[] = {"role",  "region",     "name",
                                        "pools", "localQueue", "namespaces"};
    int rc =
        check_keys(sd, root, "", known, 6, "role, region, name, pools, localQueue, namespaces");
    if (rc != 0)
        return rc;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(sd->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(sd->doc, p->value);
        const char *text = NULL;
        if (sw_yaml_key_eq(k, "role")) {
            if ((rc = text_field(sd, k, v, "role", "onprem or cloud", &text)) != 0)
                return rc;
            if (sw_cluster_role_parse(text, &out->role) != 0)
                return sw_error_set(sd->err, SW_EINVAL,
                                    "%s: line %zu: field \"role\": expected onprem or cloud, got "
                                    "\"%.40s\"",
                                    sd->what, sw_yaml_line(k), text);
        } else if (sw_yaml_key_eq(k, "region")) {
            if ((rc = text_field(sd, k, v, "region", "a region name", &text)) != 0)
                return rc;
            if (text[0] == '\0' || strlen(text) >= sizeof(out->region))
                return sw_error_set(sd->err, SW_EINVAL,
                                    "%s: line %zu: field \"region\": expected a region name of 1 "
                                    "to %zu characters",
                                    sd->what, sw_yaml_line(k), sizeof(out->region) - 1);
            snprintf(out->region, sizeof(out->region), "%s", text);
        } else if (sw_yaml_key_eq(k, "localQueue")) {
            char what[360];
            snprintf(what, sizeof(what), "%s: line %zu: field \"localQueue\"", sd->what,
                     sw_yaml_line(k));
            if ((rc = text_field(sd, k, v, "localQueue", "a LocalQueue name", &text)) != 0 ||
                (rc = sw_cluster_local_queue_check(text, what, sd->err)) != 0)
                return rc;
            snprintf(out->local_queue, sizeof(out->local_queue), "%s", text);
        } else if (sw_yaml_key_eq(k, "namespaces")) {
            if (v == NULL || v->type != YAML_SEQUENCE_NODE ||
                v->data.sequence.items.top == v->data.sequence.items.start)
                return sw_error_set(sd->err, SW_EPARSE,
                                    "%s: line %zu: field \"namespaces\": expected a list of "
                                    "namespace names, got %s",
                                    sd->what, sw_yaml_line(k),
                                    sw_yaml_is_null(v)              ? "null"
                                    : v->type == YAML_SEQUENCE_NODE ? "an empty list"
                                                                    : sw_yaml_kind(v));
            out->nnamespaces = 0; /* the file's list replaces one set before */
            size_t idx = 0;
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++, idx++) {
                char field[32], what[360];
                snprintf(field, sizeof(field), "namespaces[%zu]", idx);
                snprintf(what, sizeof(what), "%s: line %zu: field \"%s\"", sd->what,
                         sw_yaml_line(k), field);
                if ((rc = text_field(sd, k, yaml_document_get_node(sd->doc, *it), field,
                                     "a namespace name", &text)) != 0 ||
                    (rc = sw_cluster_namespace_add(out, text, what, sd->err)) != 0)
                    return rc;
            }
        } else if (sw_yaml_key_eq(k, "name")) {
            /* The cluster's name comes from the command line; allowed here
             * for readability only, but it must still be a name. */
            if ((rc = text_field(sd, k, v, "name", "a cluster name", &text)) != 0)
                return rc;
        } else { /* pools */
            if (v == NULL || v->type != YAML_SEQUENCE_NODE)
                return sw_error_set(sd->err, SW_EPARSE,
                                    "%s: line %zu: field \"pools\": expected a list of pools, got "
                                    "%s",
                                    sd->what, sw_yaml_line(k),
                                    sw_yaml_is_null(v) ? "null" : sw_yaml_kind(v));
            size_t idx = 0;
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++, idx++) {
                if (out->npools >= SW_MAX_POOLS)
                    return sw_error_set(sd->err, SW_ERANGE, "%s: line %zu: at most %d pools",
                                        sd->what, sw_yaml_line(k), SW_MAX_POOLS);
                struct sw_pool_spec pool = {0};
                if ((rc = parse_pool(sd, yaml_document_get_node(sd->doc, *it), idx, &pool)) != 0)
                    return rc;
                out->pools[out->npools++] = pool;
            }
        }
    }
    return 0;
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
    struct spec_doc sd = {.doc = &doc, .err = err};
    snprintf(sd.what, sizeof(sd.what), "cluster spec \"%.250s\"", path);
    int rc = parse_root(&sd, yaml_document_get_root_node(&doc), out);
    yaml_document_delete(&doc);
    if (rc == 0) {
        /* libyaml loads one document at a time; one more would be ignored. */
        if (!yaml_parser_load(&parser, &doc)) {
            rc = sw_error_set(err, SW_EPARSE, "%s: line %zu: %s", sd.what,
                              parser.problem_mark.line + 1,
                              parser.problem ? parser.problem : "malformed YAML");
        } else {
            if (yaml_document_get_root_node(&doc) != NULL)
                rc = sw_error_set(err, SW_EPARSE,
                                  "%s: line %zu: a second YAML document; a spec file holds one",
                                  sd.what, doc.start_mark.line + 1);
            yaml_document_delete(&doc);
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* Whether `name` is a DNS label: 1-63 of a-z, 0-9 and '-', starting and
 * ending with a letter or digit. */
static bool dns_label(const char *name)
{
    size_t n = strlen(name);
    bool ok = n >= 1 && n <= 63 && name[0] != '-' && name[n - 1] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
             name[i] == '-';
    return ok;
}

int sw_cluster_local_queue_check(const char *name, const char *what, struct sw_error *err)
{
    if (!dns_label(name))
        return sw_error_set(err, SW_EINVAL,
                            "%s: expected a LocalQueue name (1 to 63 of a-z, 0-9 and '-', "
                            "starting and ending with a letter or digit), got \"%.70s\"",
                            what, name);
    return 0;
}

int sw_cluster_namespace_add(struct sw_cluster_spec *s, const char *ns, const char *what,
                             struct sw_error *err)
{
    if (!dns_label(ns))
        return sw_error_set(err, SW_EINVAL,
                            "%s: expected a namespace name (1 to 63 of a-z, 0-9 and '-', "
                            "starting and ending with a letter or digit), got \"%.70s\"",
                            what, ns);
    for (size_t i = 0; i < s->nnamespaces; i++)
        if (strcmp(s->namespaces[i], ns) == 0)
            return sw_error_set(err, SW_EINVAL, "%s: namespace \"%s\" is listed twice", what, ns);
    if (s->nnamespaces >= SW_MAX_BURST_NAMESPACES)
        return sw_error_set(err, SW_ERANGE, "%s: at most %d namespaces", what,
                            SW_MAX_BURST_NAMESPACES);
    snprintf(s->namespaces[s->nnamespaces++], sizeof(s->namespaces[0]), "%s", ns);
    return 0;
}

int sw_cluster_namespaces_flag(struct sw_cluster_spec *s, const char *value, const char *what,
                               struct sw_error *err)
{
    const char *p = value;
    for (;;) {
        size_t n = strcspn(p, ",");
        char ns[80];
        snprintf(ns, sizeof(ns), "%.*s", n < sizeof(ns) - 1 ? (int)n : (int)sizeof(ns) - 1, p);
        int rc = sw_cluster_namespace_add(s, ns, what, err);
        if (rc != 0)
            return rc;
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

bool sw_cluster_spec_grants(const struct sw_cluster_spec *s, const char *ns)
{
    if (s->nnamespaces == 0)
        return true;
    for (size_t i = 0; i < s->nnamespaces; i++)
        if (strcmp(s->namespaces[i], ns) == 0)
            return true;
    return false;
}

void sw_cluster_namespaces_str(const struct sw_cluster_spec *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->nnamespaces; i++) {
        int k = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s->namespaces[i]);
        if (k < 0 || (size_t)k >= len - used) {
            buf[used] = '\0'; /* whole names only */
            return;
        }
        used += (size_t)k;
    }
}
