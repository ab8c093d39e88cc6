/*
 * rbac.c - a ClusterRole's rules expanded into permissions, with libyaml's
 * document API (the same habits as kubeconfig.c: only the fields read are
 * visited; a field of the wrong shape is an error naming it).
 */
#include "clusters/rbac.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "common/alloc.h"

struct ctx {
    yaml_document_t *doc;
    const char *what;
    struct sw_error *err;
    struct sw_rbac_perm *perms;
    size_t n;
};

static yaml_node_t *get(struct ctx *c, yaml_node_t *map, const char *key)
{
    if (map == NULL || map->type != YAML_MAPPING_NODE)
        return NULL;
    size_t kl = strlen(key);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        if (k != NULL && k->type == YAML_SCALAR_NODE && k->data.scalar.length == kl &&
            memcmp(k->data.scalar.value, key, kl) == 0)
            return yaml_document_get_node(c->doc, p->value);
    }
    return NULL;
}

static const char *scalar(yaml_node_t *n)
{
    return n != NULL && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The strings of list field `key` of rule `i`; NULL list is an error. */
static int list(struct ctx *c, yaml_node_t *rule, size_t i, const char *key, yaml_node_t **out)
{
    yaml_node_t *l = get(c, rule, key);
    if (l == NULL || l->type != YAML_SEQUENCE_NODE ||
        l->data.sequence.items.top == l->data.sequence.items.start)
        return sw_error_set(c->err, SW_EINVAL, "%s: rules[%zu]: field \"%s\": expected a list",
                            c->what, i, key);
    for (yaml_node_item_t *it = l->data.sequence.items.start; it < l->data.sequence.items.top;
         it++) {
        const char *s = scalar(yaml_document_get_node(c->doc, *it));
        if (s == NULL)
            return sw_error_set(c->err, SW_EPARSE, "%s: rules[%zu]: field \"%s\": expected strings",
                                c->what, i, key);
        if (strchr(s, '*') != NULL)
            return sw_error_set(c->err, SW_EINVAL,
                                "%s: rules[%zu]: field \"%s\": wildcard \"%s\" refused: name "
                                "what is granted",
                                c->what, i, key, s);
    }
    *out = l;
    return 0;
}

static int add(struct ctx *c, size_t i, const char *g, const char *r, const char *v)
{
    struct sw_rbac_perm p;
    memset(&p, 0, sizeof(p));
    const char *slash = strchr(r, '/');
    size_t rl = slash ? (size_t)(slash - r) : strlen(r);
    if (strlen(g) >= sizeof(p.group) || rl >= sizeof(p.resource) || rl == 0 ||
        (slash && (strlen(slash + 1) >= sizeof(p.subresource) || slash[1] == '\0')) ||
        strlen(v) >= sizeof(p.verb) || v[0] == '\0')
        return sw_error_set(c->err, SW_EINVAL,
                            "%s: rules[%zu]: \"%s\" \"%s\" \"%s\": a name is empty or too long",
                            c->what, i, g, r, v);
    snprintf(p.group, sizeof(p.group), "%s", g);
    snprintf(p.resource, sizeof(p.resource), "%.*s", (int)rl, r);
    snprintf(p.subresource, sizeof(p.subresource), "%s", slash ? slash + 1 : "");
    snprintf(p.verb, sizeof(p.verb), "%s", v);
    for (size_t k = 0; k < c->n; k++)
        if (memcmp(&c->perms[k], &p, sizeof(p)) == 0)
            return 0;
    if (c->n >= SW_RBAC_MAX_PERMS)
        return sw_error_set(c->err, SW_ETOOBIG, "%s: more than %d permissions", c->what,
                            SW_RBAC_MAX_PERMS);
    c->perms[c->n++] = p;
    return 0;
}

static int parse_doc(struct ctx *c)
{
    yaml_node_t *root = yaml_document_get_root_node(c->doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE)
        return sw_error_set(c->err, SW_EPARSE, "%s: expected a ClusterRole or Role", c->what);
    const char *kind = scalar(get(c, root, "kind"));
    if (kind == NULL || (strcmp(kind, "ClusterRole") != 0 && strcmp(kind, "Role") != 0))
        return sw_error_set(c->err, SW_EINVAL,
                            "%s: field \"kind\": expected ClusterRole or Role, got \"%.40s\"",
                            c->what, kind ? kind : "");
    yaml_node_t *rules = get(c, root, "rules");
    if (rules == NULL || rules->type != YAML_SEQUENCE_NODE)
        return sw_error_set(c->err, SW_EPARSE, "%s: field \"rules\": expected a list", c->what);
    size_t i = 0;
    for (yaml_node_item_t *it = rules->data.sequence.items.start;
         it < rules->data.sequence.items.top; it++, i++) {
        yaml_node_t *rule = yaml_document_get_node(c->doc, *it);
        if (rule == NULL || rule->type != YAML_MAPPING_NODE)
            return sw_error_set(c->err, SW_EPARSE, "%s: rules[%zu]: expected a mapping", c->what,
                                i);
        if (get(c, rule, "resourceNames") != NULL || get(c, rule, "nonResourceURLs") != NULL)
            return sw_error_set(c->err, SW_EINVAL,
                                "%s: rules[%zu]: resourceNames and nonResourceURLs are not "
                                "supported",
                                c->what, i);
        yaml_node_t *groups, *res, *verbs;
        int rc;
        if ((rc = list(c, rule, i, "apiGroups", &groups)) != 0 ||
            (rc = list(c, rule, i, "resources", &res)) != 0 ||
            (rc = list(c, rule, i, "verbs", &verbs)) != 0)
            return rc;
        for (yaml_node_item_t *g = groups->data.sequence.items.start;
             g < groups->data.sequence.items.top; g++)
            for (yaml_node_item_t *r = res->data.sequence.items.start;
                 r < res->data.sequence.items.top; r++)
                for (yaml_node_item_t *v = verbs->data.sequence.items.start;
                     v < verbs->data.sequence.items.top; v++)
                    if ((rc = add(c, i, scalar(yaml_document_get_node(c->doc, *g)),
                                  scalar(yaml_document_get_node(c->doc, *r)),
                                  scalar(yaml_document_get_node(c->doc, *v)))) != 0)
                        return rc;
    }
    if (c->n == 0)
        return sw_error_set(c->err, SW_EINVAL, "%s: the role grants nothing", c->what);
    return 0;
}

int sw_rbac_parse(const char *text, size_t len, const char *what, struct sw_rbac_perm **out,
                  size_t *n, struct sw_error *err)
{
    *out = NULL;
    *n = 0;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = sw_error_set(err, parser.error == YAML_MEMORY_ERROR ? SW_ENOMEM : SW_EPARSE,
                              "%s: line %zu: %s", what, parser.problem_mark.line + 1,
                              parser.problem ? parser.problem : "malformed YAML");
        yaml_parser_delete(&parser);
        return rc;
    }
    struct ctx c = {.doc = &doc, .what = what, .err = err};
    int rc = SW_ENOMEM;
    c.perms = sw_calloc(SW_RBAC_MAX_PERMS, sizeof(*c.perms));
    if (c.perms == NULL)
        sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
    else
        rc = parse_doc(&c);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc != 0) {
        sw_free(c.perms);
        return rc;
    }
    *out = c.perms;
    *n = c.n;
    return 0;
}

int sw_rbac_reviews(const struct sw_rbac_perm *cluster, size_t n_cluster,
                    const struct sw_rbac_perm *per_ns, size_t n_per_ns, const char (*nss)[64],
                    size_t n_ns, struct sw_rbac_review **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t total = n_cluster + n_per_ns * n_ns;
    struct sw_rbac_review *r = sw_calloc(total ? total : 1, sizeof(*r));
    if (r == NULL)
        return SW_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n_cluster; i++)
        r[k++].perm = cluster[i];
    for (size_t s = 0; s < n_ns; s++) {
        if (strnlen(nss[s], 64) >= 64) {
            sw_free(r);
            return SW_EINVAL;
        }
        for (size_t i = 0; i < n_per_ns; i++, k++) {
            r[k].perm = per_ns[i];
            snprintf(r[k].ns, sizeof(r[k].ns), "%s", nss[s]);
        }
    }
    *out = r;
    *n = k;
    return 0;
}

int sw_rbac_review_body(const struct sw_rbac_review *r, char *buf, size_t len)
{
    const struct sw_rbac_perm *p = &r->perm;
    int k = snprintf(buf, len,
                     "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":"
                     "\"SelfSubjectAccessReview\",\"spec\":{\"resourceAttributes\":{%s%s%s"
                     "\"group\":\"%s\",\"resource\":\"%s\",\"subresource\":\"%s\",\"verb\":"
                     "\"%s\"}}}",
                     r->ns[0] ? "\"namespace\":\"" : "", r->ns, r->ns[0] ? "\"," : "", p->group,
                     p->resource, p->subresource, p->verb);
    return k < 0 || (size_t)k >= len ? SW_ETOOBIG : 0;
}

void sw_rbac_review_str(const struct sw_rbac_review *r, char *buf, size_t len)
{
    const struct sw_rbac_perm *p = &r->perm;
    snprintf(buf, len, "%s %s%s%s%s%s %s%s", p->verb, p->resource, p->subresource[0] ? "/" : "",
             p->subresource, p->group[0] ? "." : "", p->group,
             r->ns[0] ? "in namespace " : "(in all namespaces)", r->ns);
}
