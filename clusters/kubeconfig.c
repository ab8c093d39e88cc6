/*
 * kubeconfig.c - kubeconfig parsing with libyaml's document API.
 *
 * The document is loaded into libyaml's node graph and only the fields
 * kubectl reads are visited, never walked recursively, so aliases cannot
 * blow up the work. Unknown fields are ignored (kubectl ignores them too);
 * known fields of the wrong shape are errors naming the field. A mapping
 * key that is not a string is an error wherever it is, and a repeated key
 * takes the last value, both as in kubectl.
 */
#include "clusters/kubeconfig.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "common/alloc.h"
#include "common/yamlnode.h"
#include "store/base64.h"

/* Largest referenced file (CA bundle, certificate, key, token). */
#define REF_FILE_MAX ((size_t)1 << 20)

struct ctx {
    yaml_document_t *doc;
    const char *path;
    char prefix[400]; /* "kubeconfig \"p\": context \"c\": user \"u\"" */
    struct sw_error *err;
};

static int fail(struct ctx *c, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct ctx *c, int code, const char *field, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (field != NULL)
        return sw_error_set(c->err, code, "%s: field \"%s\": %s", c->prefix, field, what);
    return sw_error_set(c->err, code, "%s: %s", c->prefix, what);
}

/* A plain scalar spelled as YAML's null. */
static int is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *v = (const char *)n->data.scalar.value;
    size_t l = n->data.scalar.length;
    return l == 0 || (l == 1 && v[0] == '~') || (l == 4 && strncasecmp(v, "null", 4) == 0);
}

/*
 * kubectl turns the whole document into JSON before it reads a field, and
 * fails on a mapping key that is a list or a mapping ("yaml: invalid map
 * key") or null ("unsupported map key"), wherever it is. get() compares
 * scalar keys only, so such a key would be skipped silently; look for one
 * first. The walk is over libyaml's flat node table, so an alias costs
 * nothing extra. A repeated key is not an error: kubectl's YAML decoding
 * (sigs.k8s.io/yaml, not strict) lets the last one win, and get() does too.
 */
static int check_map_keys(struct ctx *c)
{
    for (yaml_node_t *n = c->doc->nodes.start; n < c->doc->nodes.top; n++) {
        if (n->type != YAML_MAPPING_NODE)
            continue;
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
            if (k != NULL && k->type == YAML_SCALAR_NODE && !is_null(k))
                continue;
            return fail(c, SW_EPARSE, NULL,
                        "line %zu column %zu: expected a string as a key, got %s",
                        k ? k->start_mark.line + 1 : 0, k ? k->start_mark.column + 1 : 0,
                        k == NULL                     ? "nothing"
                        : k->type == YAML_SCALAR_NODE ? "null"
                                                      : sw_yaml_kind(k));
        }
    }
    return 0;
}

/* Looks `key` up in mapping `map`; NULL when absent or null. */
static yaml_node_t *get(struct ctx *c, yaml_node_t *map, const char *key)
{
    if (map == NULL || map->type != YAML_MAPPING_NODE)
        return NULL;
    size_t klen = strlen(key);
    yaml_node_t *found = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        if (k == NULL || k->type != YAML_SCALAR_NODE)
            continue;
        if (k->data.scalar.length == klen && memcmp(k->data.scalar.value, key, klen) == 0)
            found = yaml_document_get_node(c->doc, p->value); /* last one wins, as in YAML 1.1 */
    }
    if (found != NULL && is_null(found))
        return NULL;
    return found;
}

/* Reads an optional string field into *out (new copy). */
static int get_str(struct ctx *c, yaml_node_t *map, const char *key, const char *field, char **out)
{
    yaml_node_t *n = get(c, map, key);
    if (n == NULL)
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, SW_EPARSE, field, "expected a string, got %s", sw_yaml_kind(n));
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
        return fail(c, SW_EPARSE, field, "the string contains a NUL character");
    char *s = sw_strndup((const char *)n->data.scalar.value, n->data.scalar.length);
    if (s == NULL)
        return fail(c, SW_ENOMEM, field, "out of memory");
    sw_free(*out);
    *out = s;
    return 0;
}

static int get_bool(struct ctx *c, yaml_node_t *map, const char *key, const char *field, int *out)
{
    yaml_node_t *n = get(c, map, key);
    if (n == NULL)
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, SW_EPARSE, field, "expected true or false, got %s", sw_yaml_kind(n));
    static const char *yes[] = {"true", "yes", "on", "y"};
    static const char *no[] = {"false", "no", "off", "n"};
    const char *v = (const char *)n->data.scalar.value;
    size_t l = n->data.scalar.length;
    for (size_t i = 0; i < 4; i++) {
        if (l == strlen(yes[i]) && strncasecmp(v, yes[i], l) == 0) {
            *out = 1;
            return 0;
        }
        if (l == strlen(no[i]) && strncasecmp(v, no[i], l) == 0) {
            *out = 0;
            return 0;
        }
    }
    return fail(c, SW_EPARSE, field, "expected true or false, got \"%.*s\"", l > 40 ? 40 : (int)l,
                v);
}

static int get_data(struct ctx *c, yaml_node_t *map, const char *key, const char *field,
                    unsigned char **out, size_t *out_len)
{
    char *s = NULL;
    int rc = get_str(c, map, key, field, &s);
    if (rc != 0 || s == NULL)
        return rc;
    rc = sw_base64_decode(s, strlen(s), out, out_len);
    sw_free(s);
    if (rc == SW_ENOMEM)
        return fail(c, rc, field, "out of memory");
    if (rc != 0)
        return fail(c, SW_EPARSE, field, "expected base64 data");
    return 0;
}

/* Makes `p` absolute against the kubeconfig's folder, as kubectl does. */
static int resolve(struct ctx *c, char **p, const char *field)
{
    if (*p == NULL || (*p)[0] == '/' || (*p)[0] == '\0')
        return 0;
    const char *slash = strrchr(c->path, '/');
    size_t dlen = slash ? (size_t)(slash - c->path) : 1;
    const char *dir = slash ? c->path : ".";
    if (slash == c->path)
        dlen = 0; /* "/cfg": the folder is the root */
    size_t n = dlen + 1 + strlen(*p) + 1;
    char *abs = sw_malloc(n);
    if (abs == NULL)
        return fail(c, SW_ENOMEM, field, "out of memory");
    snprintf(abs, n, "%.*s/%s", (int)dlen, dir, *p);
    sw_free(*p);
    *p = abs;
    return 0;
}

/* Finds the entry named `name` in the top-level list `list` ("clusters"),
 * whose payload is under `inner` ("cluster"). Duplicate names are errors,
 * as in client-go. */
static int find_named(struct ctx *c, yaml_node_t *root, const char *list, const char *inner,
                      const char *name, yaml_node_t **out)
{
    *out = NULL;
    yaml_node_t *l = get(c, root, list);
    if (l == NULL)
        return 0;
    if (l->type != YAML_SEQUENCE_NODE)
        return fail(c, SW_EPARSE, list, "expected a list, got %s", sw_yaml_kind(l));
    size_t idx = 0;
    for (yaml_node_item_t *it = l->data.sequence.items.start; it < l->data.sequence.items.top;
         it++, idx++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, *it);
        char field[64];
        snprintf(field, sizeof(field), "%s[%zu]", list, idx);
        if (e == NULL || e->type != YAML_MAPPING_NODE)
            return fail(c, SW_EPARSE, field, "expected a mapping with name and %s, got %s", inner,
                        e ? sw_yaml_kind(e) : "nothing");
        yaml_node_t *n = get(c, e, "name");
        if (n == NULL || n->type != YAML_SCALAR_NODE) {
            snprintf(field, sizeof(field), "%s[%zu].name", list, idx);
            return fail(c, SW_EPARSE, field, "expected a name");
        }
        if (n->data.scalar.length != strlen(name) ||
            memcmp(n->data.scalar.value, name, n->data.scalar.length) != 0)
            continue;
        if (*out != NULL) {
            snprintf(field, sizeof(field), "%s[%zu].name", list, idx);
            return fail(c, SW_EPARSE, field, "duplicate name \"%s\"", name);
        }
        yaml_node_t *payload = get(c, e, inner);
        snprintf(field, sizeof(field), "%s[%zu].%s", list, idx, inner);
        if (payload == NULL)
            return fail(c, SW_EPARSE, field, "missing");
        if (payload->type != YAML_MAPPING_NODE)
            return fail(c, SW_EPARSE, field, "expected a mapping, got %s", sw_yaml_kind(payload));
        *out = payload;
    }
    return 0;
}

static int parse_cluster(struct ctx *c, yaml_node_t *m, struct sw_kube_target *t)
{
    int rc;
    if ((rc = get_str(c, m, "server", "server", &t->server)) != 0 ||
        (rc = get_str(c, m, "certificate-authority", "certificate-authority", &t->ca_file)) != 0 ||
        (rc = get_data(c, m, "certificate-authority-data", "certificate-authority-data",
                       &t->ca_data, &t->ca_len)) != 0 ||
        (rc = get_bool(c, m, "insecure-skip-tls-verify", "insecure-skip-tls-verify",
                       &t->insecure)) != 0 ||
        (rc = get_str(c, m, "tls-server-name", "tls-server-name", &t->tls_server_name)) != 0 ||
        (rc = get_str(c, m, "proxy-url", "proxy-url", &t->proxy_url)) != 0)
        return rc;
    if (t->server == NULL || t->server[0] == '\0')
        return fail(c, SW_EINVAL, "server", "missing: every cluster needs a server URL");
    if (strncmp(t->server, "https://", 8) != 0 && strncmp(t->server, "http://", 7) != 0)
        return fail(c, SW_EINVAL, "server", "expected an http:// or https:// URL, got \"%.80s\"",
                    t->server);
    if (t->proxy_url != NULL && strncmp(t->proxy_url, "http://", 7) != 0 &&
        strncmp(t->proxy_url, "https://", 8) != 0 && strncmp(t->proxy_url, "socks5://", 9) != 0)
        return fail(c, SW_EINVAL, "proxy-url",
                    "expected an http, https or socks5 URL, got \"%.80s\"", t->proxy_url);
    /* client-go refuses a root CA together with insecure mode. */
    if (t->insecure && (t->ca_file != NULL || t->ca_data != NULL))
        return fail(c, SW_EINVAL, "insecure-skip-tls-verify",
                    "cannot be true when certificate-authority or certificate-authority-data "
                    "is set");
    return resolve(c, &t->ca_file, "certificate-authority");
}

static int parse_exec(struct ctx *c, yaml_node_t *m, struct sw_kube_exec *e)
{
    int rc;
    if ((rc = get_str(c, m, "apiVersion", "exec.apiVersion", &e->api_version)) != 0 ||
        (rc = get_str(c, m, "command", "exec.command", &e->command)) != 0 ||
        (rc = get_str(c, m, "installHint", "exec.installHint", &e->install_hint)) != 0 ||
        (rc = get_bool(c, m, "provideClusterInfo", "exec.provideClusterInfo",
                       &e->provide_cluster_info)) != 0)
        return rc;
    if (e->api_version == NULL)
        return fail(c, SW_EINVAL, "exec.apiVersion", "missing");
    int v1 = strcmp(e->api_version, "client.authentication.k8s.io/v1") == 0;
    int v1beta1 = strcmp(e->api_version, "client.authentication.k8s.io/v1beta1") == 0;
    if (!v1 && !v1beta1)
        return fail(c, SW_EUNSUPPORTED, "exec.apiVersion",
                    "expected client.authentication.k8s.io/v1 or /v1beta1, got \"%.80s\"",
                    e->api_version);
    if (e->command == NULL || e->command[0] == '\0')
        return fail(c, SW_EINVAL, "exec.command", "missing");
    /* Like client-go, only a command with a path separator is a path. */
    if (strchr(e->command, '/') != NULL && (rc = resolve(c, &e->command, "exec.command")) != 0)
        return rc;

    yaml_node_t *args = get(c, m, "args");
    if (args != NULL) {
        if (args->type != YAML_SEQUENCE_NODE)
            return fail(c, SW_EPARSE, "exec.args", "expected a list of strings, got %s",
                        sw_yaml_kind(args));
        size_t n = (size_t)(args->data.sequence.items.top - args->data.sequence.items.start);
        e->args = sw_calloc(n + 1, sizeof(char *));
        if (e->args == NULL)
            return fail(c, SW_ENOMEM, "exec.args", "out of memory");
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *a = yaml_document_get_node(c->doc, args->data.sequence.items.start[i]);
            char field[48];
            snprintf(field, sizeof(field), "exec.args[%zu]", i);
            if (a == NULL || a->type != YAML_SCALAR_NODE)
                return fail(c, SW_EPARSE, field, "expected a string, got %s",
                            a ? sw_yaml_kind(a) : "nothing");
            e->args[i] = sw_strndup((const char *)a->data.scalar.value, a->data.scalar.length);
            if (e->args[i] == NULL)
                return fail(c, SW_ENOMEM, field, "out of memory");
            e->nargs = i + 1;
        }
    }
    yaml_node_t *env = get(c, m, "env");
    if (env != NULL) {
        if (env->type != YAML_SEQUENCE_NODE)
            return fail(c, SW_EPARSE, "exec.env", "expected a list of {name, value}, got %s",
                        sw_yaml_kind(env));
        size_t n = (size_t)(env->data.sequence.items.top - env->data.sequence.items.start);
        e->env_names = sw_calloc(n + 1, sizeof(char *));
        e->env_values = sw_calloc(n + 1, sizeof(char *));
        if (e->env_names == NULL || e->env_values == NULL)
            return fail(c, SW_ENOMEM, "exec.env", "out of memory");
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *a = yaml_document_get_node(c->doc, env->data.sequence.items.start[i]);
            char field[48];
            snprintf(field, sizeof(field), "exec.env[%zu]", i);
            if (a == NULL || a->type != YAML_MAPPING_NODE)
                return fail(c, SW_EPARSE, field, "expected {name, value}, got %s",
                            a ? sw_yaml_kind(a) : "nothing");
            e->nenv = i + 1;
            snprintf(field, sizeof(field), "exec.env[%zu].name", i);
            if ((rc = get_str(c, a, "name", field, &e->env_names[i])) != 0)
                return rc;
            if (e->env_names[i] == NULL || e->env_names[i][0] == '\0' ||
                strchr(e->env_names[i], '=') != NULL)
                return fail(c, SW_EINVAL, field, "expected a variable name without '='");
            snprintf(field, sizeof(field), "exec.env[%zu].value", i);
            if ((rc = get_str(c, a, "value", field, &e->env_values[i])) != 0)
                return rc;
            if (e->env_values[i] == NULL && (e->env_values[i] = sw_strdup("")) == NULL)
                return fail(c, SW_ENOMEM, field, "out of memory");
        }
    }
    char *mode = NULL;
    if ((rc = get_str(c, m, "interactiveMode", "exec.interactiveMode", &mode)) != 0)
        return rc;
    if (mode == NULL) {
        /* v1 requires the field; v1beta1 defaults to IfAvailable. */
        if (v1)
            return fail(c, SW_EINVAL, "exec.interactiveMode",
                        "missing: client.authentication.k8s.io/v1 requires Never, IfAvailable "
                        "or Always");
        e->interactive = SW_KUBE_INTERACTIVE_IF_AVAILABLE;
    } else if (strcmp(mode, "Never") == 0) {
        e->interactive = SW_KUBE_INTERACTIVE_NEVER;
    } else if (strcmp(mode, "IfAvailable") == 0) {
        e->interactive = SW_KUBE_INTERACTIVE_IF_AVAILABLE;
    } else if (strcmp(mode, "Always") == 0) {
        e->interactive = SW_KUBE_INTERACTIVE_ALWAYS;
    } else {
        rc = fail(c, SW_EINVAL, "exec.interactiveMode",
                  "expected Never, IfAvailable or Always, got \"%.40s\"", mode);
        sw_free(mode);
        return rc;
    }
    sw_free(mode);
    return 0;
}

static int parse_user(struct ctx *c, yaml_node_t *m, struct sw_kube_target *t)
{
    int rc;
    if ((rc = get_str(c, m, "client-certificate", "client-certificate", &t->client_cert_file)) !=
            0 ||
        (rc = get_data(c, m, "client-certificate-data", "client-certificate-data",
                       &t->client_cert_data, &t->client_cert_len)) != 0 ||
        (rc = get_str(c, m, "client-key", "client-key", &t->client_key_file)) != 0 ||
        (rc = get_data(c, m, "client-key-data", "client-key-data", &t->client_key_data,
                       &t->client_key_len)) != 0 ||
        (rc = get_str(c, m, "token", "token", &t->token)) != 0 ||
        (rc = get_str(c, m, "tokenFile", "tokenFile", &t->token_file)) != 0 ||
        (rc = get_str(c, m, "username", "username", &t->username)) != 0 ||
        (rc = get_str(c, m, "password", "password", &t->password)) != 0)
        return rc;
    if (get(c, m, "auth-provider") != NULL)
        return fail(c, SW_EUNSUPPORTED, "auth-provider",
                    "auth-provider plugins were removed from kubectl; use an exec plugin "
                    "(e.g. gke-gcloud-auth-plugin, kubelogin)");
    int has_cert = t->client_cert_file != NULL || t->client_cert_data != NULL;
    int has_key = t->client_key_file != NULL || t->client_key_data != NULL;
    if (has_cert != has_key)
        return fail(c, SW_EINVAL, has_cert ? "client-key" : "client-certificate",
                    "missing: client-certificate and client-key go together");
    int has_token = t->token != NULL || t->token_file != NULL;
    int has_basic = t->username != NULL || t->password != NULL;
    if (has_token && has_basic)
        return fail(c, SW_EINVAL, "username",
                    "username/password and a bearer token may not both be set");
    yaml_node_t *exec = get(c, m, "exec");
    if (exec != NULL) {
        if (exec->type != YAML_MAPPING_NODE)
            return fail(c, SW_EPARSE, "exec", "expected a mapping, got %s", sw_yaml_kind(exec));
        t->exec = sw_calloc(1, sizeof(*t->exec));
        if (t->exec == NULL)
            return fail(c, SW_ENOMEM, "exec", "out of memory");
        if ((rc = parse_exec(c, exec, t->exec)) != 0)
            return rc;
    }
    if ((rc = resolve(c, &t->client_cert_file, "client-certificate")) != 0 ||
        (rc = resolve(c, &t->client_key_file, "client-key")) != 0 ||
        (rc = resolve(c, &t->token_file, "tokenFile")) != 0)
        return rc;
    return 0;
}

static void set_prefix(struct ctx *c, const char *kind, const char *name, const char *kind2,
                       const char *name2)
{
    int n = snprintf(c->prefix, sizeof(c->prefix), "kubeconfig \"%.200s\"", c->path);
    if (kind != NULL && n > 0 && (size_t)n < sizeof(c->prefix))
        n += snprintf(c->prefix + n, sizeof(c->prefix) - (size_t)n, ": %s \"%.60s\"", kind, name);
    if (kind2 != NULL && n > 0 && (size_t)n < sizeof(c->prefix))
        snprintf(c->prefix + n, sizeof(c->prefix) - (size_t)n, ": %s \"%.60s\"", kind2, name2);
}

/*
 * Resolves the context `want` (or the current-context) over the documents
 * cs[0..n-1], merged as kubectl merges the files of $KUBECONFIG: the first
 * file to set current-context sets it, and the context, its cluster and its
 * user are each taken from the first file that has an entry of that name
 * (relative paths resolved against that file's folder). A document that
 * is empty is an error alone and skipped in a list. `all` names the files
 * together for what is in none of them.
 */
static int parse_docs(struct ctx *cs, size_t n, const char *all, const char *want,
                      struct sw_kube_target *t)
{
    int rc;
    yaml_node_t *roots[SW_KUBECONFIG_FILES_MAX] = {0};
    for (size_t i = 0; i < n; i++) {
        struct ctx *c = &cs[i];
        yaml_node_t *root = yaml_document_get_root_node(c->doc);
        if (root == NULL) {
            if (n == 1)
                return fail(c, SW_EPARSE, NULL, "the file is empty");
            continue;
        }
        if (root->type != YAML_MAPPING_NODE)
            return fail(c, SW_EPARSE, NULL, "expected a mapping at the top, got %s",
                        sw_yaml_kind(root));
        if ((rc = check_map_keys(c)) != 0)
            return rc;
        char *kind = NULL;
        if ((rc = get_str(c, root, "kind", "kind", &kind)) != 0)
            return rc;
        if (kind != NULL && strcmp(kind, "Config") != 0) {
            rc = fail(c, SW_EINVAL, "kind", "expected Config, got \"%.40s\"", kind);
            sw_free(kind);
            return rc;
        }
        sw_free(kind);
        roots[i] = root;
    }
    if (want != NULL) {
        t->context = sw_strdup(want);
        if (t->context == NULL)
            return fail(&cs[0], SW_ENOMEM, NULL, "out of memory");
    } else {
        for (size_t i = 0; i < n && (t->context == NULL || t->context[0] == '\0'); i++) {
            sw_free(t->context);
            t->context = NULL;
            if (roots[i] != NULL && (rc = get_str(&cs[i], roots[i], "current-context",
                                                  "current-context", &t->context)) != 0)
                return rc;
        }
        if (t->context == NULL || t->context[0] == '\0') {
            if (n == 1)
                return fail(&cs[0], SW_EINVAL, "current-context",
                            "not set: choose a context with --context");
            return sw_error_set(cs[0].err, SW_EINVAL,
                                "kubeconfig \"%.300s\": no file sets current-context: choose a "
                                "context with --context",
                                all);
        }
    }
    /* The context: the first file with it. */
    yaml_node_t *cm = NULL;
    struct ctx *cc = &cs[0];
    for (size_t i = 0; i < n && cm == NULL; i++) {
        if (roots[i] == NULL)
            continue;
        set_prefix(&cs[i], NULL, NULL, NULL, NULL);
        if ((rc = find_named(&cs[i], roots[i], "contexts", "context", t->context, &cm)) != 0)
            return rc;
        if (cm != NULL)
            cc = &cs[i];
    }
    set_prefix(cc, "context", t->context, NULL, NULL);
    if (cm == NULL) {
        if (n == 1)
            return fail(cc, SW_ENOENT, NULL, "no such context in \"contexts\"");
        return sw_error_set(cs[0].err, SW_ENOENT,
                            "kubeconfig \"%.300s\": context \"%.60s\": in the \"contexts\" of no "
                            "file",
                            all, t->context);
    }
    sw_free(t->source);
    if ((t->source = sw_strdup(cc->path)) == NULL)
        return fail(cc, SW_ENOMEM, NULL, "out of memory");
    if ((rc = get_str(cc, cm, "cluster", "cluster", &t->cluster)) != 0 ||
        (rc = get_str(cc, cm, "user", "user", &t->user)) != 0 ||
        (rc = get_str(cc, cm, "namespace", "namespace", &t->namespace)) != 0)
        return rc;
    if (t->cluster == NULL || t->cluster[0] == '\0')
        return fail(cc, SW_EINVAL, "cluster", "missing: the context names no cluster");

    /* Its cluster and its user: each from the first file with it. */
    yaml_node_t *clm = NULL, *um = NULL;
    struct ctx *clc = cc, *uc = cc;
    for (size_t i = 0; i < n && clm == NULL; i++) {
        if (roots[i] == NULL)
            continue;
        set_prefix(&cs[i], NULL, NULL, NULL, NULL);
        if ((rc = find_named(&cs[i], roots[i], "clusters", "cluster", t->cluster, &clm)) != 0)
            return rc;
        if (clm != NULL)
            clc = &cs[i];
    }
    set_prefix(clc, "context", t->context, "cluster", t->cluster);
    if (clm == NULL) {
        if (n == 1)
            return fail(clc, SW_ENOENT, NULL, "no such cluster in \"clusters\"");
        return sw_error_set(cs[0].err, SW_ENOENT,
                            "kubeconfig \"%.300s\": context \"%.60s\": cluster \"%.60s\": in the "
                            "\"clusters\" of no file",
                            all, t->context, t->cluster);
    }
    if ((rc = parse_cluster(clc, clm, t)) != 0)
        return rc;
    if (t->user != NULL && t->user[0] != '\0') {
        for (size_t i = 0; i < n && um == NULL; i++) {
            if (roots[i] == NULL)
                continue;
            set_prefix(&cs[i], NULL, NULL, NULL, NULL);
            if ((rc = find_named(&cs[i], roots[i], "users", "user", t->user, &um)) != 0)
                return rc;
            if (um != NULL)
                uc = &cs[i];
        }
        set_prefix(uc, "context", t->context, "user", t->user);
        if (um == NULL) {
            if (n == 1)
                return fail(uc, SW_ENOENT, NULL, "no such user in \"users\"");
            return sw_error_set(cs[0].err, SW_ENOENT,
                                "kubeconfig \"%.300s\": context \"%.60s\": user \"%.60s\": in the "
                                "\"users\" of no file",
                                all, t->context, t->user);
        }
        if ((rc = parse_user(uc, um, t)) != 0)
            return rc;
    }
    return 0;
}

int sw_kubeconfig_parse(const char *text, size_t len, const char *path, const char *context,
                        struct sw_kube_target **out, struct sw_error *err)
{
    *out = NULL;
    if (path == NULL)
        path = "(kubeconfig)";
    if (len > SW_KUBECONFIG_MAX)
        return sw_error_set(err, SW_ETOOBIG,
                            "kubeconfig \"%.200s\": %zu bytes exceeds the limit "
                            "of %zu",
                            path, len, SW_KUBECONFIG_MAX);
    struct sw_kube_target *t = sw_calloc(1, sizeof(*t));
    if (t == NULL || (t->source = sw_strdup(path)) == NULL) {
        sw_free(t);
        return sw_error_set(err, SW_ENOMEM, "kubeconfig \"%.200s\": out of memory", path);
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        sw_kube_target_free(t);
        return sw_error_set(err, SW_ENOMEM, "kubeconfig \"%.200s\": out of memory", path);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = sw_error_set(err, parser.error == YAML_MEMORY_ERROR ? SW_ENOMEM : SW_EPARSE,
                              "kubeconfig \"%.200s\": line %zu column %zu: %s%s%s", path,
                              parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                              parser.problem ? parser.problem : "malformed YAML",
                              parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        sw_kube_target_free(t);
        return rc;
    }
    struct ctx c = {.doc = &doc, .path = path, .err = err};
    set_prefix(&c, NULL, NULL, NULL, NULL);
    int rc = parse_docs(&c, 1, path, context, t);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc != 0) {
        sw_kube_target_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int sw_read_file(const char *path, size_t max, const char *what, char **out, size_t *out_len,
                 struct sw_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_error_set(err, errno == ENOENT ? SW_ENOENT : SW_EIO, "%s \"%s\": cannot open: %s",
                            what, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sw_error_set(err, SW_EINVAL, "%s \"%s\": not a regular file", what, path);
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        return sw_error_set(err, SW_ETOOBIG, "%s \"%s\": %lld bytes exceeds the limit of %zu", what,
                            path, (long long)st.st_size, max);
    }
    char *buf = sw_malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        close(fd);
        return sw_error_set(err, SW_ENOMEM, "%s \"%s\": out of memory", what, path);
    }
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

static int load_one(const char *file, const char *what, const char *source, unsigned char **data,
                    size_t *len, struct sw_error *err)
{
    if (file == NULL || *data != NULL)
        return 0;
    char *buf;
    size_t n;
    int rc = sw_read_file(file, REF_FILE_MAX, what, &buf, &n, err);
    if (rc != 0)
        return sw_error_wrap(err, "kubeconfig \"%.200s\"", source);
    *data = (unsigned char *)buf;
    *len = n;
    return 0;
}

int sw_kube_target_load_files(struct sw_kube_target *t, struct sw_error *err)
{
    int rc;
    if ((rc = load_one(t->ca_file, "certificate-authority", t->source, &t->ca_data, &t->ca_len,
                       err)) != 0 ||
        (rc = load_one(t->client_cert_file, "client-certificate", t->source, &t->client_cert_data,
                       &t->client_cert_len, err)) != 0 ||
        (rc = load_one(t->client_key_file, "client-key", t->source, &t->client_key_data,
                       &t->client_key_len, err)) != 0)
        return rc;
    if (t->token == NULL && t->token_file != NULL) {
        unsigned char *tok = NULL;
        size_t n = 0;
        if ((rc = load_one(t->token_file, "tokenFile", t->source, &tok, &n, err)) != 0)
            return rc;
        while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
            tok[--n] = '\0';
        t->token = (char *)tok;
    }
    return 0;
}

int sw_kubeconfig_load(const char *path, const char *context, struct sw_kube_target **out,
                       struct sw_error *err)
{
    char *text;
    size_t len;
    int rc = sw_read_file(path, SW_KUBECONFIG_MAX, "kubeconfig", &text, &len, err);
    if (rc != 0)
        return rc;
    rc = sw_kubeconfig_parse(text, len, path, context, out, err);
    sw_free(text);
    if (rc != 0)
        return rc;
    rc = sw_kube_target_load_files(*out, err);
    if (rc != 0) {
        sw_kube_target_free(*out);
        *out = NULL;
    }
    return rc;
}

int sw_kubeconfig_load_list(const char *list, const char *context, struct sw_kube_target **out,
                            struct sw_error *err)
{
    *out = NULL;
    char *paths[SW_KUBECONFIG_FILES_MAX];
    char *texts[SW_KUBECONFIG_FILES_MAX] = {0};
    yaml_parser_t parsers[SW_KUBECONFIG_FILES_MAX];
    yaml_document_t docs[SW_KUBECONFIG_FILES_MAX];
    struct ctx cs[SW_KUBECONFIG_FILES_MAX];
    size_t n = 0, loaded = 0, total = 0;
    int rc = 0;
    char *copy = sw_strdup(list);
    if (copy == NULL)
        return sw_error_set(err, SW_ENOMEM, "KUBECONFIG: out of memory");
    /* kubectl skips empty entries and files that do not exist. */
    char *save = NULL;
    for (char *p = strtok_r(copy, ":", &save); p != NULL; p = strtok_r(NULL, ":", &save)) {
        total++;
        if (access(p, F_OK) != 0 && errno == ENOENT)
            continue;
        if (n >= SW_KUBECONFIG_FILES_MAX) {
            sw_free(copy);
            return sw_error_set(err, SW_EINVAL, "kubeconfig \"%.300s\": more than %d files", list,
                                SW_KUBECONFIG_FILES_MAX);
        }
        paths[n++] = p;
    }
    if (n == 0) {
        rc = sw_error_set(err, SW_ENOENT,
                          total == 0 ? "kubeconfig \"%.300s\": no file named"
                                     : "kubeconfig \"%.300s\": none of its files exists",
                          list);
        sw_free(copy);
        return rc;
    }
    if (n == 1) {
        rc = sw_kubeconfig_load(paths[0], context, out, err);
        sw_free(copy);
        return rc;
    }
    struct sw_kube_target *t = sw_calloc(1, sizeof(*t));
    if (t == NULL || (t->source = sw_strdup(paths[0])) == NULL) {
        sw_free(t);
        sw_free(copy);
        return sw_error_set(err, SW_ENOMEM, "KUBECONFIG: out of memory");
    }
    for (; loaded < n; loaded++) {
        size_t len;
        if ((rc = sw_read_file(paths[loaded], SW_KUBECONFIG_MAX, "kubeconfig", &texts[loaded], &len,
                               err)) != 0)
            break;
        if (!yaml_parser_initialize(&parsers[loaded])) {
            rc =
                sw_error_set(err, SW_ENOMEM, "kubeconfig \"%.200s\": out of memory", paths[loaded]);
            break;
        }
        yaml_parser_set_input_string(&parsers[loaded], (const unsigned char *)texts[loaded], len);
        if (!yaml_parser_load(&parsers[loaded], &docs[loaded])) {
            yaml_parser_t *pp = &parsers[loaded];
            rc = sw_error_set(err, pp->error == YAML_MEMORY_ERROR ? SW_ENOMEM : SW_EPARSE,
                              "kubeconfig \"%.200s\": line %zu column %zu: %s%s%s", paths[loaded],
                              pp->problem_mark.line + 1, pp->problem_mark.column + 1,
                              pp->problem ? pp->problem : "malformed YAML", pp->context ? " " : "",
                              pp->context ? pp->context : "");
            yaml_parser_delete(pp);
            break;
        }
        cs[loaded] = (struct ctx){.doc = &docs[loaded], .path = paths[loaded], .err = err};
        set_prefix(&cs[loaded], NULL, NULL, NULL, NULL);
    }
    if (rc == 0)
        rc = parse_docs(cs, n, list, context, t);
    for (size_t i = 0; i < loaded; i++) {
        yaml_document_delete(&docs[i]);
        yaml_parser_delete(&parsers[i]);
    }
    for (size_t i = 0; i < n; i++)
        sw_free(texts[i]);
    if (rc == 0)
        rc = sw_kube_target_load_files(t, err);
    sw_free(copy);
    if (rc != 0) {
        sw_kube_target_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

static void wipe_free(void *p, size_t n)
{
    if (p == NULL)
        return;
    volatile unsigned char *v = p;
    for (size_t i = 0; i < n; i++)
        v[i] = 0;
    sw_free(p);
}

static void wipe_str(char *s)
{
    if (s != NULL)
        wipe_free(s, strlen(s));
}

void sw_kube_target_free(struct sw_kube_target *t)
{
    if (t == NULL)
        return;
    sw_free(t->source);
    sw_free(t->context);
    sw_free(t->cluster);
    sw_free(t->user);
    sw_free(t->namespace);
    sw_free(t->server);
    sw_free(t->ca_file);
    sw_free(t->ca_data);
    sw_free(t->tls_server_name);
    sw_free(t->proxy_url);
    sw_free(t->client_cert_file);
    sw_free(t->client_cert_data);
    sw_free(t->client_key_file);
    wipe_free(t->client_key_data, t->client_key_len);
    wipe_str(t->token);
    sw_free(t->token_file);
    sw_free(t->username);
    wipe_str(t->password);
    if (t->exec != NULL) {
        struct sw_kube_exec *e = t->exec;
        sw_free(e->api_version);
        sw_free(e->command);
        for (size_t i = 0; i < e->nargs; i++)
            sw_free(e->args[i]);
        sw_free(e->args);
        for (size_t i = 0; i < e->nenv; i++) {
            sw_free(e->env_names[i]);
            wipe_str(e->env_values[i]);
        }
        sw_free(e->env_names);
        sw_free(e->env_values);
        sw_free(e->install_hint);
        sw_free(e);
    }
    sw_free(t);
}

const char *sw_kube_target_auth_kind(const struct sw_kube_target *t)
{
    if (t->exec != NULL)
        return "exec";
    if (t->client_cert_file != NULL || t->client_cert_data != NULL)
        return "client-certificate";
    if (t->token != NULL || t->token_file != NULL)
        return "token";
    if (t->username != NULL)
        return "basic";
    return "none";
}

/* ---- in-cluster configuration -------------------------------------------- */

static int join_path(const char *dir, const char *file, char **out)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    size_t n = dl + 1 + strlen(file) + 1;
    if ((*out = sw_malloc(n)) == NULL)
        return SW_ENOMEM;
    snprintf(*out, n, "%.*s/%s", (int)dl, dir, file);
    return 0;
}

int sw_kube_incluster_target(const char *host, const char *port, const char *dir,
                             const char *ns_text, struct sw_kube_target **out, struct sw_error *err)
{
    *out = NULL;
    if (host == NULL || host[0] == '\0')
        return sw_error_set(err, SW_EINVAL,
                            "in-cluster configuration: KUBERNETES_SERVICE_HOST is not set");
    if (port == NULL || port[0] == '\0')
        return sw_error_set(err, SW_EINVAL,
                            "in-cluster configuration: KUBERNETES_SERVICE_PORT is not set");
    if (strlen(host) > 253 || strpbrk(host, "/@?#[] \t\r\n") != NULL)
        return sw_error_set(err, SW_EINVAL,
                            "in-cluster configuration: KUBERNETES_SERVICE_HOST: expected a "
                            "host name or an IP address, got \"%.80s\"",
                            host);
    char *end = NULL;
    long p = strtol(port, &end, 10);
    if (!isdigit((unsigned char)port[0]) || *end != '\0' || p < 1 || p > 65535)
        return sw_error_set(err, SW_EINVAL,
                            "in-cluster configuration: KUBERNETES_SERVICE_PORT: expected a "
                            "port number 1-65535, got \"%.20s\"",
                            port);
    if (dir == NULL || dir[0] == '\0')
        return sw_error_set(err, SW_EINVAL,
                            "in-cluster configuration: no ServiceAccount folder given");
    struct sw_kube_target *t = sw_calloc(1, sizeof(*t));
    if (t == NULL)
        return sw_error_set(err, SW_ENOMEM, "in-cluster configuration: out of memory");
    int v6 = strchr(host, ':') != NULL; /* client-go: net.JoinHostPort */
    size_t sn = strlen(host) + strlen(port) + 16;
    size_t srcn = strlen(dir) + 32;
    int rc = 0;
    if ((t->server = sw_malloc(sn)) == NULL || (t->source = sw_malloc(srcn)) == NULL ||
        (t->context = sw_strdup("in-cluster")) == NULL ||
        (t->cluster = sw_strdup("in-cluster")) == NULL ||
        (t->user = sw_strdup("in-cluster")) == NULL || join_path(dir, "ca.crt", &t->ca_file) ||
        join_path(dir, "token", &t->token_file)) {
        rc = SW_ENOMEM;
    } else {
        snprintf(t->server, sn, v6 ? "https://[%s]:%ld" : "https://%s:%ld", host, p);
        snprintf(t->source, srcn, "in-cluster (%s)", dir);
        if (ns_text != NULL) {
            size_t b = 0, e = strlen(ns_text);
            while (b < e && isspace((unsigned char)ns_text[b]))
                b++;
            while (e > b && isspace((unsigned char)ns_text[e - 1]))
                e--;
            if (e > b && (t->namespace = sw_strndup(ns_text + b, e - b)) == NULL)
                rc = SW_ENOMEM;
        }
    }
    if (rc != 0) {
        sw_kube_target_free(t);
        return sw_error_set(err, rc, "in-cluster configuration: out of memory");
    }
    *out = t;
    return 0;
}

const char *sw_kube_serviceaccount_dir(void)
{
    const char *d = getenv(SW_SERVICEACCOUNT_DIR_ENV);
    return d != NULL && d[0] != '\0' ? d : SW_SERVICEACCOUNT_DIR;
}

bool sw_kube_incluster_available(void)
{
    const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
    if (h == NULL || h[0] == '\0' || p == NULL || p[0] == '\0')
        return false;
    char *tok = NULL;
    if (join_path(sw_kube_serviceaccount_dir(), "token", &tok) != 0)
        return false;
    bool ok = access(tok, R_OK) == 0;
    sw_free(tok);
    return ok;
}

int sw_kube_incluster_load(struct sw_kube_target **out, struct sw_error *err)
{
    *out = NULL;
    const char *dir = sw_kube_serviceaccount_dir();
    if (!sw_kube_incluster_available())
        return sw_error_set(err, SW_ENOENT,
                            "in-cluster configuration: not in a cluster (needs "
                            "KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and a token in "
                            "\"%s\"; %s overrides the folder)",
                            dir, SW_SERVICEACCOUNT_DIR_ENV);
    char *nspath = NULL, *ns = NULL;
    size_t nslen = 0;
    if (join_path(dir, "namespace", &nspath) != 0)
        return sw_error_set(err, SW_ENOMEM, "in-cluster configuration: out of memory");
    struct sw_error ignored;
    if (sw_read_file(nspath, 4096, "namespace", &ns, &nslen, &ignored) != 0)
        ns = NULL; /* optional, as in client-go */
    sw_free(nspath);
    int rc = sw_kube_incluster_target(getenv("KUBERNETES_SERVICE_HOST"),
                                      getenv("KUBERNETES_SERVICE_PORT"), dir, ns, out, err);
    sw_free(ns);
    if (rc != 0)
        return rc;
    /* The CA bundle now; the token is left to its reader (see the header). */
    rc = load_one((*out)->ca_file, "certificate-authority", (*out)->source, &(*out)->ca_data,
                  &(*out)->ca_len, err);
    if (rc != 0) {
        sw_kube_target_free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- tokenFile rotation ------------------------------------------------- */

int sw_file_stamp_get(const char *path, struct sw_file_stamp *out)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? SW_ENOENT : SW_EIO;
    out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (int64_t)st.st_size;
    return 0;
}

bool sw_token_file_due(const struct sw_file_stamp *read_stamp, int64_t read_ms,
                       const struct sw_file_stamp *now_stamp, int64_t now_ms)
{
    if (read_ms < 0)
        return true;
    if (now_ms - read_ms >= SW_TOKEN_FILE_MAX_AGE_MS)
        return true;
    if (now_stamp == NULL || read_stamp == NULL)
        return false;
    return now_stamp->mtime_ns != read_stamp->mtime_ns || now_stamp->ino != read_stamp->ino ||
           now_stamp->dev != read_stamp->dev || now_stamp->size != read_stamp->size;
}
