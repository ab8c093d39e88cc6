/*
 * registry.c - cluster records: JSON, sealing and Redis.
 */
#include "clusters/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json.h"
#include "store/base64.h"

void sw_cluster_record_clear(struct sw_cluster_record *rec)
{
    sw_free(rec->sealed);
    rec->sealed = NULL;
}

/* ---- target <-> JSON ---------------------------------------------------- */

static int add_str(cJSON *o, const char *k, const char *v)
{
    return v == NULL || cJSON_AddStringToObject(o, k, v) != NULL ? 0 : SW_ENOMEM;
}

static int add_b64(cJSON *o, const char *k, const unsigned char *v, size_t n)
{
    if (v == NULL)
        return 0;
    char *b = sw_malloc(sw_base64_encoded_len(n) + 1);
    if (b == NULL)
        return SW_ENOMEM;
    sw_base64_encode(v, n, b);
    int rc = cJSON_AddStringToObject(o, k, b) ? 0 : SW_ENOMEM;
    sw_seal_wipe_free(b, strlen(b));
    return rc;
}

int sw_target_to_json(const struct sw_kube_target *t, char **out)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return SW_ENOMEM;
    int rc = 0;
    rc |= add_str(o, "source", t->source);
    rc |= add_str(o, "context", t->context);
    rc |= add_str(o, "cluster", t->cluster);
    rc |= add_str(o, "user", t->user);
    rc |= add_str(o, "namespace", t->namespace);
    rc |= add_str(o, "server", t->server);
    rc |= add_b64(o, "caData", t->ca_data, t->ca_len);
    if (t->insecure && !cJSON_AddTrueToObject(o, "insecure"))
        rc = SW_ENOMEM;
    rc |= add_str(o, "tlsServerName", t->tls_server_name);
    rc |= add_str(o, "proxyUrl", t->proxy_url);
    rc |= add_b64(o, "clientCertData", t->client_cert_data, t->client_cert_len);
    rc |= add_b64(o, "clientKeyData", t->client_key_data, t->client_key_len);
    rc |= add_str(o, "token", t->token);
    rc |= add_str(o, "tokenFile", t->token_file);
    rc |= add_str(o, "username", t->username);
    rc |= add_str(o, "password", t->password);
    if (t->exec != NULL) {
        const struct sw_kube_exec *e = t->exec;
        cJSON *x = cJSON_AddObjectToObject(o, "exec");
        cJSON *args = x ? cJSON_AddArrayToObject(x, "args") : NULL;
        cJSON *env = x ? cJSON_AddArrayToObject(x, "env") : NULL;
        if (env == NULL)
            rc = SW_ENOMEM;
        else {
            rc |= add_str(x, "apiVersion", e->api_version);
            rc |= add_str(x, "command", e->command);
            rc |= add_str(x, "installHint", e->install_hint);
            static const char *modes[] = {"Never", "IfAvailable", "Always"};
            rc |= add_str(x, "interactiveMode", modes[e->interactive]);
            if (e->provide_cluster_info && !cJSON_AddTrueToObject(x, "provideClusterInfo"))
                rc = SW_ENOMEM;
            for (size_t i = 0; i < e->nargs; i++) {
                cJSON *s = cJSON_CreateString(e->args[i]);
                if (s == NULL || !cJSON_AddItemToArray(args, s))
                    rc = SW_ENOMEM;
            }
            for (size_t i = 0; i < e->nenv; i++) {
                cJSON *kv = cJSON_CreateObject();
                if (kv == NULL || !cJSON_AddItemToArray(env, kv))
                    rc = SW_ENOMEM;
                else {
                    rc |= add_str(kv, "name", e->env_names[i]);
                    rc |= add_str(kv, "value", e->env_values[i]);
                }
            }
        }
    }
    char *s = rc == 0 ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o); /* cJSON does not wipe: the tree held secrets only briefly */
    if (s == NULL)
        return SW_ENOMEM;
    *out = s;
    return 0;
}

/* The JSON maps 1:1 onto the target: copy field by field. */
static int get_dup(const cJSON *o, const char *k, const char *what, char **out,
                   struct sw_error *err)
{
    const char *s = NULL;
    int rc = sw_json_string(o, k, false, what, &s, err);
    if (rc != 0 || s == NULL)
        return rc;
    *out = sw_strdup(s);
    return *out ? 0 : sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
}

static int get_b64(const cJSON *o, const char *k, const char *what, unsigned char **out, size_t *n,
                   struct sw_error *err)
{
    const char *s = NULL;
    int rc = sw_json_string(o, k, false, what, &s, err);
    if (rc != 0 || s == NULL)
        return rc;
    rc = sw_base64_decode(s, strlen(s), out, n);
    if (rc != 0)
        return sw_error_set(err, rc, "%s: field \"%s\": expected base64", what, k);
    return 0;
}

int sw_target_from_json(const char *text, size_t len, const char *what, struct sw_kube_target **out,
                        struct sw_error *err)
{
    cJSON *o = NULL;
    int rc = sw_json_parse(text, len, what, &o, err);
    if (rc != 0)
        return rc;
    struct sw_kube_target *t = sw_calloc(1, sizeof(*t));
    if (t == NULL) {
        cJSON_Delete(o);
        return sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
    }
    bool insecure = false;
    if ((rc = get_dup(o, "source", what, &t->source, err)) != 0 ||
        (rc = get_dup(o, "context", what, &t->context, err)) != 0 ||
        (rc = get_dup(o, "cluster", what, &t->cluster, err)) != 0 ||
        (rc = get_dup(o, "user", what, &t->user, err)) != 0 ||
        (rc = get_dup(o, "namespace", what, &t->namespace, err)) != 0 ||
        (rc = get_dup(o, "server", what, &t->server, err)) != 0 ||
        (rc = get_b64(o, "caData", what, &t->ca_data, &t->ca_len, err)) != 0 ||
        (rc = sw_json_bool(o, "insecure", false, what, &insecure, err)) != 0 ||
        (rc = get_dup(o, "tlsServerName", what, &t->tls_server_name, err)) != 0 ||
        (rc = get_dup(o, "proxyUrl", what, &t->proxy_url, err)) != 0 ||
        (rc = get_b64(o, "clientCertData", what, &t->client_cert_data, &t->client_cert_len, err)) !=
            0 ||
        (rc = get_b64(o, "clientKeyData", what, &t->client_key_data, &t->client_key_len, err)) !=
            0 ||
        (rc = get_dup(o, "token", what, &t->token, err)) != 0 ||
        (rc = get_dup(o, "tokenFile", what, &t->token_file, err)) != 0 ||
        (rc = get_dup(o, "username", what, &t->username, err)) != 0 ||
        (rc = get_dup(o, "password", what, &t->password, err)) != 0)
        goto out;
    t->insecure = insecure;
    if (t->server == NULL) {
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"server\" is missing", what);
        goto out;
    }
    if (t->source == NULL && (t->source = sw_strdup("(registry)")) == NULL) {
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
        goto out;
    }
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "exec");
    if (x != NULL) {
        struct sw_kube_exec *e = t->exec = sw_calloc(1, sizeof(*e));
        if (e == NULL) {
            rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
            goto out;
        }
        char *mode = NULL;
        bool pci = false;
        if ((rc = get_dup(x, "apiVersion", what, &e->api_version, err)) != 0 ||
            (rc = get_dup(x, "command", what, &e->command, err)) != 0 ||
            (rc = get_dup(x, "installHint", what, &e->install_hint, err)) != 0 ||
            (rc = get_dup(x, "interactiveMode", what, &mode, err)) != 0 ||
            (rc = sw_json_bool(x, "provideClusterInfo", false, what, &pci, err)) != 0)
            goto out;
        e->provide_cluster_info = pci;
        e->interactive = mode && strcmp(mode, "Always") == 0 ? SW_KUBE_INTERACTIVE_ALWAYS
                         : mode && strcmp(mode, "IfAvailable") == 0
                             ? SW_KUBE_INTERACTIVE_IF_AVAILABLE
                             : SW_KUBE_INTERACTIVE_NEVER;
        sw_free(mode);
        if (e->api_version == NULL || e->command == NULL) {
            rc = sw_error_set(err, SW_EPARSE,
                              "%s: field \"exec\": apiVersion and command are "
                              "required",
                              what);
            goto out;
        }
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(x, "args");
        const cJSON *env = cJSON_GetObjectItemCaseSensitive(x, "env");
        int na = cJSON_GetArraySize(args), ne = cJSON_GetArraySize(env);
        e->args = sw_calloc((size_t)na + 1, sizeof(char *));
        e->env_names = sw_calloc((size_t)ne + 1, sizeof(char *));
        e->env_values = sw_calloc((size_t)ne + 1, sizeof(char *));
        if (e->args == NULL || e->env_names == NULL || e->env_values == NULL) {
            rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
            goto out;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, args)
        {
            if (!cJSON_IsString(it) || (e->args[e->nargs] = sw_strdup(it->valuestring)) == NULL) {
                rc =
                    sw_error_set(err, SW_EPARSE, "%s: field \"exec.args\": expected strings", what);
                goto out;
            }
            e->nargs++;
        }
        cJSON_ArrayForEach(it, env)
        {
            e->nenv++;
            if ((rc = get_dup(it, "name", what, &e->env_names[e->nenv - 1], err)) != 0 ||
                (rc = get_dup(it, "value", what, &e->env_values[e->nenv - 1], err)) != 0)
                goto out;
            if (e->env_names[e->nenv - 1] == NULL || e->env_values[e->nenv - 1] == NULL) {
                rc = sw_error_set(err, SW_EPARSE,
                                  "%s: field \"exec.env\": expected name and "
                                  "value",
                                  what);
                goto out;
            }
        }
    }
out:
    cJSON_Delete(o);
    if (rc != 0) {
        sw_kube_target_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

static void seal_context(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "spillway/cluster/%s/connection", name);
}

int sw_cluster_record_seal(struct sw_cluster_record *rec, const struct sw_kube_target *t,
                           const struct sw_seal_key *key, struct sw_error *err)
{
    char *json = NULL;
    int rc = sw_target_to_json(t, &json);
    if (rc != 0)
        return sw_error_set(err, rc, "cluster %s: cannot serialise the connection", rec->name);
    char ctx[128];
    seal_context(rec->name, ctx, sizeof(ctx));
    char *env = NULL;
    rc = sw_seal(key, ctx, json, strlen(json), &env, err);
    sw_seal_wipe_free(json, strlen(json));
    if (rc != 0)
        return sw_error_wrap(err, "cluster %s", rec->name);
    sw_free(rec->sealed);
    rec->sealed = env;
    return 0;
}

int sw_cluster_record_open(const struct sw_cluster_record *rec, const struct sw_seal_key *key,
                           struct sw_kube_target **out, struct sw_error *err)
{
    if (rec->sealed == NULL)
        return sw_error_set(err, SW_ENOENT, "cluster %s: the record has no connection", rec->name);
    char ctx[128];
    seal_context(rec->name, ctx, sizeof(ctx));
    unsigned char *plain = NULL;
    size_t n = 0;
    int rc = sw_seal_open(key, ctx, rec->sealed, strlen(rec->sealed), &plain, &n, err);
    if (rc != 0)
        return sw_error_wrap(err, "cluster %s: connection", rec->name);
    char what[128];
    snprintf(what, sizeof(what), "cluster %s: connection", rec->name);
    rc = sw_target_from_json((const char *)plain, n, what, out, err);
    sw_seal_wipe_free(plain, n);
    return rc;
}

/* ---- record <-> JSON ---------------------------------------------------- */

int sw_cluster_record_to_json(const struct sw_cluster_record *rec, char **out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pools = o ? cJSON_AddArrayToObject(o, "pools") : NULL;
    if (pools == NULL) {
        cJSON_Delete(o);
        return SW_ENOMEM;
    }
    int rc = 0;
    rc |= add_str(o, "name", rec->name);
    rc |= add_str(o, "role", sw_cluster_role_name(rec->spec.role));
    rc |= add_str(o, "region", rec->spec.region);
    if (rec->spec.local_queue[0] != '\0')
        rc |= add_str(o, "localQueue", rec->spec.local_queue);
    if (rec->spec.nnamespaces > 0) {
        cJSON *nss = cJSON_AddArrayToObject(o, "namespaces");
        for (size_t i = 0; nss != NULL && i < rec->spec.nnamespaces; i++)
            if (!cJSON_AddItemToArray(nss, cJSON_CreateString(rec->spec.namespaces[i])))
                nss = NULL;
        if (nss == NULL)
            rc = SW_ENOMEM;
    }
    rc |= add_str(o, "server", rec->server);
    rc |= add_str(o, "context", rec->context);
    rc |= add_str(o, "authKind", rec->auth_kind);
    rc |= add_str(o, "serverVersion", rec->server_version);
    if (!cJSON_AddNumberToObject(o, "createdMs", (double)rec->created_ms))
        rc = SW_ENOMEM;
    rc |= add_str(o, "connection", rec->sealed);
    for (size_t i = 0; i < rec->spec.npools; i++) {
        const struct sw_pool_spec *p = &rec->spec.pools[i];
        cJSON *j = cJSON_CreateObject();
        if (j == NULL || !cJSON_AddItemToArray(pools, j)) {
            cJSON_Delete(j);
            rc = SW_ENOMEM;
            break;
        }
        rc |= add_str(j, "name", p->name);
        rc |= add_str(j, "capacityType", p->capacity_type);
        rc |= add_str(j, "gpuProduct", p->gpu_product);
        rc |= add_str(j, "zone", p->zone[0] ? p->zone : NULL);
        if (p->nodepool[0])
            rc |= add_str(j, "nodePool", p->nodepool);
        if (!cJSON_AddNumberToObject(j, "gpuMemoryMiB", (double)p->gpu_memory_mib) ||
            !cJSON_AddNumberToObject(j, "pricePerGpuHour", p->price_per_gpu_hour) ||
            !cJSON_AddNumberToObject(j, "maxGpus", (double)p->max_gpus))
            rc = SW_ENOMEM;
    }
    char *s = rc == 0 ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (s == NULL)
        return SW_ENOMEM;
    *out = s;
    return 0;
}

static int copy_field(const cJSON *o, const char *k, bool required, const char *what, char *dst,
                      size_t n, struct sw_error *err)
{
    const char *s = NULL;
    int rc = sw_json_string(o, k, required, what, &s, err);
    if (rc != 0)
        return rc;
    if (s == NULL)
        return 0;
    if (strlen(s) >= n)
        return sw_error_set(err, SW_EPARSE, "%s: field \"%s\": longer than %zu bytes", what, k,
                            n - 1);
    snprintf(dst, n, "%s", s);
    return 0;
}

int sw_cluster_record_from_json(const char *text, size_t len, const char *what,
                                struct sw_cluster_record *rec, struct sw_error *err)
{
    memset(rec, 0, sizeof(*rec));
    cJSON *o = NULL;
    int rc = sw_json_parse(text, len, what, &o, err);
    if (rc != 0)
        return rc;
    char role[16] = "";
    const char *sealed = NULL;
    double created = 0;
    if ((rc = copy_field(o, "name", true, what, rec->name, sizeof(rec->name), err)) != 0 ||
        (rc = copy_field(o, "role", true, what, role, sizeof(role), err)) != 0 ||
        (rc = copy_field(o, "region", true, what, rec->spec.region, sizeof(rec->spec.region),
                         err)) != 0 ||
        (rc = copy_field(o, "localQueue", false, what, rec->spec.local_queue,
                         sizeof(rec->spec.local_queue), err)) != 0 ||
        (rc = copy_field(o, "server", false, what, rec->server, sizeof(rec->server), err)) != 0 ||
        (rc = copy_field(o, "context", false, what, rec->context, sizeof(rec->context), err)) !=
            0 ||
        (rc = copy_field(o, "authKind", false, what, rec->auth_kind, sizeof(rec->auth_kind),
                         err)) != 0 ||
        (rc = copy_field(o, "serverVersion", false, what, rec->server_version,
                         sizeof(rec->server_version), err)) != 0 ||
        (rc = sw_json_number(o, "createdMs", false, what, &created, err)) != 0 ||
        (rc = sw_json_string(o, "connection", false, what, &sealed, err)) != 0)
        goto out;
    rec->created_ms = (int64_t)created;
    if (sw_cluster_role_parse(role, &rec->spec.role) != 0) {
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"role\": expected onprem or cloud", what);
        goto out;
    }
    /* The narrow role's namespaces: each checked as `cluster add` checked
     * it (the record is read from Redis, which anyone with its password can
     * write). */
    const cJSON *nss = cJSON_GetObjectItemCaseSensitive(o, "namespaces"), *ns;
    if (nss != NULL && !cJSON_IsArray(nss)) {
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"namespaces\": expected a list", what);
        goto out;
    }
    cJSON_ArrayForEach(ns, nss)
    {
        char w[200];
        snprintf(w, sizeof(w), "%.150s: field \"namespaces\"", what);
        if (!cJSON_IsString(ns)) {
            rc = sw_error_set(err, SW_EPARSE, "%s: expected strings", w);
            goto out;
        }
        if ((rc = sw_cluster_namespace_add(&rec->spec, ns->valuestring, w, err)) != 0)
            goto out;
    }
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(o, "pools"), *p;
    cJSON_ArrayForEach(p, pools)
    {
        if (rec->spec.npools >= SW_MAX_POOLS)
            break;
        struct sw_pool_spec *ps = &rec->spec.pools[rec->spec.npools++];
        double mem = 0, max = 0;
        if ((rc = copy_field(p, "name", true, what, ps->name, sizeof(ps->name), err)) != 0 ||
            (rc = copy_field(p, "capacityType", true, what, ps->capacity_type,
                             sizeof(ps->capacity_type), err)) != 0 ||
            (rc = copy_field(p, "gpuProduct", true, what, ps->gpu_product, sizeof(ps->gpu_product),
                             err)) != 0 ||
            (rc = copy_field(p, "zone", false, what, ps->zone, sizeof(ps->zone), err)) != 0 ||
            (rc = copy_field(p, "nodePool", false, what, ps->nodepool, sizeof(ps->nodepool),
                             err)) != 0 ||
            (rc = sw_json_number(p, "gpuMemoryMiB", false, what, &mem, err)) != 0 ||
            (rc = sw_json_number(p, "pricePerGpuHour", false, what, &ps->price_per_gpu_hour,
                                 err)) != 0 ||
            (rc = sw_json_number(p, "maxGpus", false, what, &max, err)) != 0)
            goto out;
        ps->gpu_memory_mib = (int64_t)mem;
        ps->max_gpus = (int64_t)max;
    }
    if (sealed != NULL && (rec->sealed = sw_strdup(sealed)) == NULL)
        rc = sw_error_set(err, SW_ENOMEM, "%s: out of memory", what);
out:
    cJSON_Delete(o);
    if (rc != 0)
        sw_cluster_record_clear(rec);
    return rc;
}

/* ---- Redis -------------------------------------------------------------- */

struct op {
    struct sw_redis *r;
    char name[SW_CLUSTER_NAME_MAX];
    sw_registry_cb cb;
    sw_registry_get_cb get_cb;
    sw_registry_list_cb list_cb;
    void *ctx;
    int replace;
    /* list state */
    char **names;
    size_t nnames;
};

static int redis_fail(struct sw_error *err, redisReply *reply, const char *why, const char *what)
{
    if (reply == NULL)
        return sw_error_set(err, SW_ENET, "redis: %s: %s", what, why ? why : "no answer");
    return sw_error_set(err, SW_EIO, "redis: %s: %s", what,
                        reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
}

static void on_put_sadd(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = 0;
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        rc = redis_fail(&err, reply, why, "SADD " SW_REGISTRY_SET);
    op->cb(rc, &err, op->ctx);
    sw_free(op);
}

static void on_put_set(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    int rc;
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        rc = redis_fail(&err, reply, why, "SET");
    else if (reply->type == REDIS_REPLY_NIL)
        rc = sw_error_set(&err, SW_EEXIST,
                          "cluster \"%s\" is already registered (remove it first, or use "
                          "--replace)",
                          op->name);
    else if ((rc = sw_redis_command(r, on_put_sadd, op, "SADD %s %s", SW_REGISTRY_SET, op->name)) ==
             0)
        return;
    else
        sw_error_set(&err, rc, "redis: connection lost");
    op->cb(rc, &err, op->ctx);
    sw_free(op);
}

int sw_registry_put(struct sw_redis *r, const struct sw_cluster_record *rec, int replace,
                    sw_registry_cb cb, void *ctx)
{
    char *json = NULL;
    int rc = sw_cluster_record_to_json(rec, &json);
    if (rc != 0)
        return rc;
    struct op *op = sw_calloc(1, sizeof(*op));
    if (op == NULL) {
        sw_free(json);
        return SW_ENOMEM;
    }
    op->r = r;
    op->cb = cb;
    op->ctx = ctx;
    snprintf(op->name, sizeof(op->name), "%s", rec->name);
    char key[128];
    snprintf(key, sizeof(key), SW_REGISTRY_PREFIX "%s", rec->name);
    if (replace)
        rc = sw_redis_command(r, on_put_set, op, "SET %s %s", key, json);
    else
        rc = sw_redis_command(r, on_put_set, op, "SET %s %s NX", key, json);
    sw_free(json);
    if (rc != 0)
        sw_free(op);
    return rc;
}

static void on_get(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    struct sw_cluster_record rec = {0};
    int rc;
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        rc = redis_fail(&err, reply, why, "GET");
    else if (reply->type != REDIS_REPLY_STRING)
        rc = sw_error_set(&err, SW_ENOENT, "cluster \"%s\" is not registered", op->name);
    else {
        char what[128];
        snprintf(what, sizeof(what), "registry record " SW_REGISTRY_PREFIX "%s", op->name);
        rc = sw_cluster_record_from_json(reply->str, reply->len, what, &rec, &err);
    }
    op->get_cb(rc, rc == 0 ? &rec : NULL, &err, op->ctx);
    sw_cluster_record_clear(&rec);
    sw_free(op);
}

int sw_registry_get(struct sw_redis *r, const char *name, sw_registry_get_cb cb, void *ctx)
{
    if (!sw_name_valid(name))
        return SW_EINVAL;
    struct op *op = sw_calloc(1, sizeof(*op));
    if (op == NULL)
        return SW_ENOMEM;
    op->get_cb = cb;
    op->ctx = ctx;
    snprintf(op->name, sizeof(op->name), "%s", name);
    int rc = sw_redis_command(r, on_get, op, "GET " SW_REGISTRY_PREFIX "%s", name);
    if (rc != 0)
        sw_free(op);
    return rc;
}

static int cmp_rec(const void *a, const void *b)
{
    return strcmp(((const struct sw_cluster_record *)a)->name,
                  ((const struct sw_cluster_record *)b)->name);
}

static void on_list_mget(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = 0;
    struct sw_cluster_record *recs = NULL;
    size_t n = 0;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY)
        rc = redis_fail(&err, reply, why, "MGET");
    else {
        recs = sw_calloc(reply->elements + 1, sizeof(*recs));
        if (recs == NULL)
            rc = sw_error_set(&err, SW_ENOMEM, "registry: out of memory");
        for (size_t i = 0; rc == 0 && i < reply->elements; i++) {
            redisReply *e = reply->element[i];
            if (e->type != REDIS_REPLY_STRING)
                continue; /* removed meanwhile */
            char what[128];
            snprintf(what, sizeof(what), "registry record " SW_REGISTRY_PREFIX "%s", op->names[i]);
            rc = sw_cluster_record_from_json(e->str, e->len, what, &recs[n], &err);
            if (rc == 0)
                n++;
        }
    }
    if (rc == 0)
        qsort(recs, n, sizeof(*recs), cmp_rec);
    op->list_cb(rc, recs, n, &err, op->ctx);
    for (size_t i = 0; i < n; i++)
        sw_cluster_record_clear(&recs[i]);
    sw_free(recs);
    for (size_t i = 0; i < op->nnames; i++)
        sw_free(op->names[i]);
    sw_free(op->names);
    sw_free(op);
}

static void on_list_members(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    int rc;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY) {
        rc = redis_fail(&err, reply, why, "SMEMBERS " SW_REGISTRY_SET);
        goto fail;
    }
    if (reply->elements == 0) {
        op->list_cb(0, NULL, 0, &err, op->ctx);
        sw_free(op);
        return;
    }
    size_t n = reply->elements;
    op->names = sw_calloc(n, sizeof(char *));
    const char **argv = sw_calloc(n + 1, sizeof(char *));
    char **keys = sw_calloc(n + 1, sizeof(char *));
    rc = op->names && argv && keys ? 0 : SW_ENOMEM;
    if (argv != NULL)
        argv[0] = "MGET";
    for (size_t i = 0; rc == 0 && i < n; i++) {
        redisReply *e = reply->element[i];
        size_t kl = strlen(SW_REGISTRY_PREFIX) + e->len + 1;
        op->names[i] = sw_strndup(e->str, e->len);
        keys[i] = sw_malloc(kl);
        if (op->names[i] == NULL || keys[i] == NULL) {
            rc = SW_ENOMEM;
            break;
        }
        op->nnames = i + 1;
        snprintf(keys[i], kl, SW_REGISTRY_PREFIX "%s", op->names[i]);
        argv[i + 1] = keys[i];
    }
    if (rc == 0)
        rc = sw_redis_command_argv(r, on_list_mget, op, (int)n + 1, argv, NULL);
    for (size_t i = 0; keys && i < n; i++)
        sw_free(keys[i]);
    sw_free(keys);
    sw_free(argv);
    if (rc == 0)
        return;
    sw_error_set(&err, rc, "registry: %s", sw_strerror(rc));
fail:
    op->list_cb(rc, NULL, 0, &err, op->ctx);
    for (size_t i = 0; i < op->nnames; i++)
        sw_free(op->names[i]);
    sw_free(op->names);
    sw_free(op);
}

int sw_registry_list(struct sw_redis *r, sw_registry_list_cb cb, void *ctx)
{
    struct op *op = sw_calloc(1, sizeof(*op));
    if (op == NULL)
        return SW_ENOMEM;
    op->list_cb = cb;
    op->ctx = ctx;
    int rc = sw_redis_command(r, on_list_members, op, "SMEMBERS " SW_REGISTRY_SET);
    if (rc != 0)
        sw_free(op);
    return rc;
}

static void on_remove_srem(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    (void)r;
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = 0;
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR)
        rc = redis_fail(&err, reply, why, "SREM");
    else if (op->replace == -1)
        rc = sw_error_set(&err, SW_ENOENT, "cluster \"%s\" is not registered", op->name);
    op->cb(rc, &err, op->ctx);
    sw_free(op);
}

static void on_remove_del(struct sw_redis *r, redisReply *reply, const char *why, void *ctx)
{
    struct op *op = ctx;
    struct sw_error err;
    sw_error_clear(&err);
    int rc;
    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER)
        rc = redis_fail(&err, reply, why, "DEL");
    else if ((rc = sw_redis_command(r, on_remove_srem, op, "SREM %s %s", SW_REGISTRY_SET,
                                    op->name)) == 0) {
        if (reply->integer == 0)
            op->replace = -1; /* nothing was there; SREM still tidies the set */
        return;
    } else
        sw_error_set(&err, rc, "redis: connection lost");
    op->cb(rc, &err, op->ctx);
    sw_free(op);
}

int sw_registry_remove(struct sw_redis *r, const char *name, sw_registry_cb cb, void *ctx)
{
    if (!sw_name_valid(name))
        return SW_EINVAL;
    struct op *op = sw_calloc(1, sizeof(*op));
    if (op == NULL)
        return SW_ENOMEM;
    op->cb = cb;
    op->ctx = ctx;
    snprintf(op->name, sizeof(op->name), "%s", name);
    int rc = sw_redis_command(r, on_remove_del, op, "DEL " SW_REGISTRY_PREFIX "%s", name);
    if (rc != 0)
        sw_free(op);
    return rc;
}
