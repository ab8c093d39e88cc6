/*
 * rule.c - rule and store definitions: parsing, validation, JSON, Redis,
 * and binding a rule to S3 clients.
 */
#include "replication/rule.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/alloc.h"
#include "common/json.h"
#include "store/redis.h"

static int valid_name(const char *s)
{
    if (s[0] == '\0' || strlen(s) >= SW_REPL_NAME_MAX)
        return 0;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
            return 0;
    return 1;
}

static int valid_bucket(const char *s)
{
    size_t n = strlen(s);
    if (n < 3 || n > 63)
        return 0;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

int sw_rule_loc_parse(const char *s, struct sw_rule_loc *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    const char *colon = strchr(s, ':');
    if (colon == NULL || colon == s)
        return sw_error_set(err, SW_EINVAL, "\"%s\": expected STORE:BUCKET/PREFIX", s);
    size_t sl = (size_t)(colon - s);
    if (sl >= sizeof(out->store))
        return sw_error_set(err, SW_EINVAL, "\"%s\": store name too long", s);
    memcpy(out->store, s, sl);
    const char *rest = colon + 1;
    if (strncmp(rest, "s3://", 5) == 0)
        rest += 5;
    size_t bl = strcspn(rest, "/");
    if (bl == 0 || bl >= sizeof(out->bucket))
        return sw_error_set(err, SW_EINVAL, "\"%s\": expected a bucket after \"%s:\"", s,
                            out->store);
    memcpy(out->bucket, rest, bl);
    const char *prefix = rest[bl] == '/' ? rest + bl + 1 : "";
    if (strlen(prefix) >= sizeof(out->prefix))
        return sw_error_set(err, SW_EINVAL, "\"%s\": prefix too long", s);
    snprintf(out->prefix, sizeof(out->prefix), "%s", prefix);
    if (!valid_name(out->store))
        return sw_error_set(err, SW_EINVAL,
                            "\"%s\": store name \"%s\" must be letters, digits, '-', '_' or '.'", s,
                            out->store);
    if (!valid_bucket(out->bucket))
        return sw_error_set(err, SW_EINVAL, "\"%s\": bucket \"%s\" is not a valid S3 bucket name",
                            s, out->bucket);
    return 0;
}

int sw_rule_validate(const struct sw_rule_spec *r, struct sw_error *err)
{
    if (!valid_name(r->name))
        return sw_error_set(err, SW_EINVAL,
                            "rule name \"%s\" must be 1-63 letters, digits, '-', '_' or '.'",
                            r->name);
    if (r->ntargets == 0 || r->ntargets > SW_REPL_MAX_TARGETS)
        return sw_error_set(err, SW_EINVAL, "rule %s: 1 to %d targets expected, got %zu", r->name,
                            SW_REPL_MAX_TARGETS, r->ntargets);
    for (size_t i = 0; i < r->ntargets; i++) {
        const struct sw_rule_loc *t = &r->targets[i];
        if (strcmp(t->store, r->source.store) == 0 && strcmp(t->bucket, r->source.bucket) == 0 &&
            strncmp(t->prefix, r->source.prefix, strlen(r->source.prefix)) == 0)
            return sw_error_set(err, SW_EINVAL,
                                "rule %s: target %zu (%s:%s/%s) lies inside the source", r->name, i,
                                t->store, t->bucket, t->prefix);
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->targets[j].store, t->store) == 0)
                return sw_error_set(err, SW_EINVAL,
                                    "rule %s: store %s is a target twice (one target per store)",
                                    r->name, t->store);
    }
    if (r->model_registry && strncmp(r->source.prefix, "models/", 7) != 0 &&
        strcmp(r->source.prefix, "") != 0)
        return sw_error_set(err, SW_EINVAL,
                            "rule %s: a model-registry rule covers models/NAME/VERSION/ prefixes; "
                            "source prefix \"%s\" does not start with models/",
                            r->name, r->source.prefix);
    if (r->concurrency < 0 || r->concurrency > 256)
        return sw_error_set(err, SW_EINVAL, "rule %s: concurrency %d outside 0..256", r->name,
                            r->concurrency);
    if (r->part_concurrency < 0 || r->part_concurrency > 64)
        return sw_error_set(err, SW_EINVAL, "rule %s: part concurrency %d outside 0..64", r->name,
                            r->part_concurrency);
    if (r->part_size != 0 && (r->part_size < (5 << 20) || r->part_size > ((int64_t)5 << 30)))
        return sw_error_set(err, SW_EINVAL, "rule %s: part size must be 5 MiB to 5 GiB", r->name);
    if (r->bytes_per_s < 0)
        return sw_error_set(err, SW_EINVAL, "rule %s: bandwidth must not be negative", r->name);
    return 0;
}

int sw_model_key_parse(const char *prefix, const char *key, char *name, size_t name_len,
                       char *version, size_t version_len)
{
    size_t pl = strlen(prefix);
    if (strncmp(key, prefix, pl) != 0)
        return SW_EPARSE;
    const char *n = key + pl;
    const char *s1 = strchr(n, '/');
    if (s1 == NULL || s1 == n)
        return SW_EPARSE;
    const char *v = s1 + 1;
    const char *s2 = strchr(v, '/');
    if (s2 == NULL || s2 == v || s2[1] == '\0')
        return SW_EPARSE;
    if ((size_t)(s1 - n) >= name_len || (size_t)(s2 - v) >= version_len)
        return SW_EPARSE;
    memcpy(name, n, (size_t)(s1 - n));
    name[s1 - n] = '\0';
    memcpy(version, v, (size_t)(s2 - v));
    version[s2 - v] = '\0';
    return 0;
}

static cJSON *loc_json(const struct sw_rule_loc *l)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    if (!cJSON_AddStringToObject(o, "store", l->store) ||
        !cJSON_AddStringToObject(o, "bucket", l->bucket) ||
        !cJSON_AddStringToObject(o, "prefix", l->prefix)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int sw_rule_to_json(const struct sw_rule_spec *r, char **out)
{
    sw_json_init_hooks();
    *out = NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON *src = loc_json(&r->source);
    cJSON *ts = cJSON_CreateArray();
    int ok = o && src && ts;
    /* Adding an item copies its key, which may fail: the item is then
     * still ours to delete. */
    if (ok && (ok = cJSON_AddItemToObject(o, "source", src)) != 0)
        src = NULL;
    if (ok && (ok = cJSON_AddItemToObject(o, "targets", ts)) != 0) {
        for (size_t i = 0; ok && i < r->ntargets; i++) {
            cJSON *t = loc_json(&r->targets[i]);
            ok = t != NULL && cJSON_AddItemToArray(ts, t);
            if (!ok)
                cJSON_Delete(t);
        }
        ts = NULL;
    }
    if (ok) {
        ok = ok && cJSON_AddStringToObject(o, "name", r->name) &&
             cJSON_AddBoolToObject(o, "model_registry", r->model_registry) &&
             cJSON_AddNumberToObject(o, "concurrency", r->concurrency) &&
             cJSON_AddNumberToObject(o, "part_concurrency", r->part_concurrency) &&
             cJSON_AddNumberToObject(o, "part_size", (double)r->part_size) &&
             cJSON_AddNumberToObject(o, "bytes_per_s", r->bytes_per_s) &&
             cJSON_AddBoolToObject(o, "server_copy", r->server_copy) &&
             cJSON_AddNumberToObject(o, "rpo_objective_s", r->rpo_objective_s);
    }
    if (ok)
        *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    cJSON_Delete(src);
    cJSON_Delete(ts);
    return *out ? 0 : SW_ENOMEM;
}

static int loc_from(const cJSON *o, const char *what, struct sw_rule_loc *l, struct sw_error *err)
{
    const char *s = NULL, *b = NULL, *p = "";
    int rc;
    char w[96];
    snprintf(w, sizeof(w), "%s", what);
    if ((rc = sw_json_string(o, "store", true, w, &s, err)) != 0 ||
        (rc = sw_json_string(o, "bucket", true, w, &b, err)) != 0 ||
        (rc = sw_json_string(o, "prefix", false, w, &p, err)) != 0)
        return rc;
    char text[1200];
    snprintf(text, sizeof(text), "%s:%s/%s", s, b, p);
    rc = sw_rule_loc_parse(text, l, err);
    return rc ? sw_error_wrap(err, "%s", what) : 0;
}

int sw_rule_from_json(const char *json, size_t len, struct sw_rule_spec *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    cJSON *o = NULL;
    int rc = sw_json_parse(json, len, "rule", &o, err);
    if (rc != 0)
        return rc;
    const char *name = NULL;
    bool mr = false, sc = false;
    double conc = 0, pconc = 0, bw = 0, rpo = 0;
    int64_t ps = 0;
    if ((rc = sw_json_string(o, "name", true, "rule", &name, err)) != 0)
        goto out;
    snprintf(out->name, sizeof(out->name), "%s", name);
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "source");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "targets");
    if (!cJSON_IsObject(src)) {
        rc = sw_error_set(err, SW_EPARSE, "rule %s: source: expected an object", out->name);
        goto out;
    }
    if (!cJSON_IsArray(ts)) {
        rc = sw_error_set(err, SW_EPARSE, "rule %s: targets: expected an array", out->name);
        goto out;
    }
    if ((rc = loc_from(src, "rule source", &out->source, err)) != 0)
        goto out;
    const cJSON *t;
    cJSON_ArrayForEach(t, ts)
    {
        if (out->ntargets == SW_REPL_MAX_TARGETS) {
            rc = sw_error_set(err, SW_EPARSE, "rule %s: more than %d targets", out->name,
                              SW_REPL_MAX_TARGETS);
            goto out;
        }
        char what[64];
        snprintf(what, sizeof(what), "rule targets[%zu]", out->ntargets);
        if ((rc = loc_from(t, what, &out->targets[out->ntargets], err)) != 0)
            goto out;
        out->ntargets++;
    }
    if ((rc = sw_json_bool(o, "model_registry", false, "rule", &mr, err)) != 0 ||
        (rc = sw_json_bool(o, "server_copy", false, "rule", &sc, err)) != 0 ||
        (rc = sw_json_number(o, "concurrency", false, "rule", &conc, err)) != 0 ||
        (rc = sw_json_number(o, "part_concurrency", false, "rule", &pconc, err)) != 0 ||
        (rc = sw_json_int64(o, "part_size", false, "rule", &ps, err)) != 0 ||
        (rc = sw_json_number(o, "bytes_per_s", false, "rule", &bw, err)) != 0 ||
        (rc = sw_json_number(o, "rpo_objective_s", false, "rule", &rpo, err)) != 0)
        goto out;
    if (rpo < 0) {
        rc = sw_error_set(err, SW_EPARSE, "rule %s: rpo_objective_s: expected seconds >= 0, got %g",
                          out->name, rpo);
        goto out;
    }
    out->rpo_objective_s = rpo;
    out->model_registry = mr;
    out->server_copy = sc;
    out->concurrency = (int)conc;
    out->part_concurrency = (int)pconc;
    out->part_size = ps;
    out->bytes_per_s = bw;
    rc = sw_rule_validate(out, err);
out:
    cJSON_Delete(o);
    return rc;
}

/* ---- Redis ------------------------------------------------------------------ */

static int cmd(redisContext *c, redisReply **r, struct sw_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (rep == NULL)
        return sw_error_set(err, SW_ENET, "redis: %s", c->errstr);
    if (rep->type == REDIS_REPLY_ERROR) {
        int rc = sw_error_set(err, SW_EIO, "redis: %s", rep->str);
        freeReplyObject(rep);
        return rc;
    }
    if (r != NULL)
        *r = rep;
    else
        freeReplyObject(rep);
    return 0;
}

/* The store's fields as JSON, in the order sw_store_save writes them: the
 * canonical form the MAC covers (with `mac` NULL), and the record as kept
 * (with the MAC last). */
static char *store_json(const char *name, const struct sw_store_spec *s, const char *sealed,
                        const char *mac)
{
    sw_json_init_hooks();
    cJSON *o = cJSON_CreateObject();
    char *json = NULL;
    if (o && cJSON_AddStringToObject(o, "name", name) &&
        cJSON_AddStringToObject(o, "endpoint", s->endpoint) &&
        cJSON_AddStringToObject(o, "region", s->region) &&
        cJSON_AddBoolToObject(o, "virtual_host", s->virtual_host) &&
        cJSON_AddBoolToObject(o, "insecure_tls", s->insecure_tls) &&
        cJSON_AddStringToObject(o, "ca_file", s->ca_file) &&
        cJSON_AddStringToObject(o, "credentials", sealed) &&
        (mac == NULL || cJSON_AddStringToObject(o, "mac", mac)))
        json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

/* Signs `canon` (the record's canonical form) and returns the record with
 * the MAC: `canon` itself with ,"mac":"..." before its closing brace. */
static int with_mac(const struct sw_seal_key *key, const char *kind, const char *name,
                    const char *canon, char **out)
{
    char mac[SW_RECORD_MAC_TEXT_MAX];
    *out = NULL;
    size_t n = strlen(canon);
    if (n < 2 || canon[n - 1] != '}')
        return SW_EINVAL;
    int rc = sw_record_mac(key, kind, name, canon, n, mac);
    if (rc != 0)
        return rc;
    size_t len = n - 1 + strlen(",\"mac\":\"\"}") + strlen(mac) + 1;
    *out = sw_malloc(len);
    if (*out == NULL)
        return SW_ENOMEM;
    snprintf(*out, len, "%.*s,\"mac\":\"%s\"}", (int)(n - 1), canon, mac);
    return 0;
}

/* Checks the record's "mac" field against `canon`. A record without one
 * (written before records were signed) is refused unless `was_unsigned`
 * is given, which is then set. */
static int check_mac(const struct sw_seal_key *key, const char *kind, const char *name,
                     const cJSON *o, const char *canon, int *was_unsigned, struct sw_error *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "mac");
    if (was_unsigned != NULL)
        *was_unsigned = 0;
    if (m == NULL) {
        if (was_unsigned != NULL) {
            *was_unsigned = 1;
            return 0;
        }
        return sw_error_set(err, SW_ECRYPTO,
                            "%s %s: the record carries no MAC (written before spillway signed "
                            "records, or by hand); check it and sign it with `spillctl replicate "
                            "sign`, or write it again with `spillctl replicate %s`",
                            kind, name, strcmp(kind, "store") == 0 ? "store add" : "add");
    }
    if (!cJSON_IsString(m))
        return sw_error_set(err, SW_ECRYPTO, "%s %s: field \"mac\": expected a string", kind, name);
    return sw_record_mac_verify(key, kind, name, canon, strlen(canon), m->valuestring, err);
}

int sw_store_record_to_json(const struct sw_seal_key *key, const struct sw_store_spec *s,
                            const char *sealed, char **out)
{
    *out = NULL;
    char *canon = store_json(s->name, s, sealed, NULL);
    if (canon == NULL)
        return SW_ENOMEM;
    int rc = with_mac(key, "store", s->name, canon, out);
    sw_free(canon);
    return rc;
}

int sw_store_record_from_json(const struct sw_seal_key *key, const char *name, const char *json,
                              size_t len, int *was_unsigned, struct sw_store_spec *out,
                              char **sealed, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    *sealed = NULL;
    cJSON *o = NULL;
    int rc = sw_json_parse(json, len, "store", &o, err);
    if (rc != 0)
        return sw_error_wrap(err, "store %s", name);
    const char *ep = NULL, *region = NULL, *ca = "", *env = NULL;
    bool vh = false, insecure = false;
    if ((rc = sw_json_string(o, "endpoint", true, "store", &ep, err)) != 0 ||
        (rc = sw_json_string(o, "region", true, "store", &region, err)) != 0 ||
        (rc = sw_json_string(o, "ca_file", false, "store", &ca, err)) != 0 ||
        (rc = sw_json_string(o, "credentials", true, "store", &env, err)) != 0 ||
        (rc = sw_json_bool(o, "virtual_host", false, "store", &vh, err)) != 0 ||
        (rc = sw_json_bool(o, "insecure_tls", false, "store", &insecure, err)) != 0) {
        cJSON_Delete(o);
        return sw_error_wrap(err, "store %s", name);
    }
    if (strlen(name) >= sizeof(out->name) || strlen(ep) >= sizeof(out->endpoint) ||
        strlen(region) >= sizeof(out->region) || strlen(ca) >= sizeof(out->ca_file)) {
        cJSON_Delete(o);
        return sw_error_set(err, SW_EPARSE,
                            "store %s: name, endpoint, region or ca_file longer than its limit "
                            "(%zu, %zu, %zu, %zu bytes)",
                            name, sizeof(out->name) - 1, sizeof(out->endpoint) - 1,
                            sizeof(out->region) - 1, sizeof(out->ca_file) - 1);
    }
    snprintf(out->name, sizeof(out->name), "%s", name);
    snprintf(out->endpoint, sizeof(out->endpoint), "%s", ep);
    snprintf(out->region, sizeof(out->region), "%s", region);
    snprintf(out->ca_file, sizeof(out->ca_file), "%s", ca);
    out->virtual_host = vh;
    out->insecure_tls = insecure;
    /* The MAC covers the fields as read, rebuilt in canonical form. */
    char *canon = store_json(name, out, env, NULL);
    if (canon == NULL) {
        cJSON_Delete(o);
        return sw_error_set(err, SW_ENOMEM, "store %s: out of memory", name);
    }
    rc = check_mac(key, "store", name, o, canon, was_unsigned, err);
    sw_free(canon);
    if (rc == 0 && (*sealed = sw_strdup(env)) == NULL)
        rc = sw_error_set(err, SW_ENOMEM, "store %s: out of memory", name);
    cJSON_Delete(o);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int sw_store_save(redisContext *c, const struct sw_seal_key *key, const struct sw_store_spec *s,
                  const char *access_key, const char *secret_key, struct sw_error *err)
{
    if (!valid_name(s->name))
        return sw_error_set(err, SW_EINVAL,
                            "store name \"%s\" must be letters, digits, '-', '_' "
                            "or '.'",
                            s->name);
    if (strncmp(s->endpoint, "http://", 7) != 0 && strncmp(s->endpoint, "https://", 8) != 0)
        return sw_error_set(err, SW_EINVAL,
                            "store %s: endpoint \"%s\" must start with http:// or "
                            "https://",
                            s->name, s->endpoint);
    if (s->region[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "store %s: region is required", s->name);
    if (access_key == NULL || access_key[0] == '\0' || secret_key == NULL || secret_key[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "store %s: credentials are required", s->name);
    size_t al = strlen(access_key), sl = strlen(secret_key);
    char *plain = sw_malloc(al + sl + 2);
    if (plain == NULL)
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    memcpy(plain, access_key, al);
    plain[al] = '\n';
    memcpy(plain + al + 1, secret_key, sl + 1);
    char ctx[128];
    snprintf(ctx, sizeof(ctx), "store/%s/credentials", s->name);
    char *env = NULL;
    int rc = sw_seal(key, ctx, plain, al + sl + 1, &env, err);
    sw_seal_wipe_free(plain, al + sl + 2);
    if (rc != 0)
        return rc;
    char *json = NULL;
    rc = sw_store_record_to_json(key, s, env, &json);
    sw_free(env);
    if (rc != 0)
        return sw_error_set(err, rc, "store %s: cannot sign the record", s->name);
    rc = cmd(c, NULL, err, "SET sw:store:%s %s", s->name, json);
    if (rc == 0)
        rc = cmd(c, NULL, err, "SADD sw:stores %s", s->name);
    sw_free(json);
    return rc;
}

int sw_store_read(redisContext *c, const struct sw_seal_key *key, const char *name,
                  int *was_unsigned, struct sw_store_spec *out, char **access_key,
                  char **secret_key, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    *access_key = *secret_key = NULL;
    redisReply *r;
    int rc = cmd(c, &r, err, "GET sw:store:%s", name);
    if (rc != 0)
        return rc;
    if (r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return sw_error_set(err, SW_ENOENT, "store %s: not defined (spillctl replicate store add)",
                            name);
    }
    char *env = NULL;
    rc = sw_store_record_from_json(key, name, r->str, r->len, was_unsigned, out, &env, err);
    freeReplyObject(r);
    if (rc != 0)
        return rc;
    char ctx[128];
    snprintf(ctx, sizeof(ctx), "store/%s/credentials", name);
    unsigned char *plain = NULL;
    size_t plen = 0;
    rc = sw_seal_open(key, ctx, env, strlen(env), &plain, &plen, err);
    sw_free(env);
    if (rc != 0)
        return sw_error_wrap(err, "store %s: credentials", name);
    char *nl = memchr(plain, '\n', plen);
    if (nl == NULL) {
        sw_seal_wipe_free(plain, plen);
        return sw_error_set(err, SW_EPARSE, "store %s: credentials: malformed", name);
    }
    *access_key = sw_strndup((const char *)plain, (size_t)(nl - (char *)plain));
    *secret_key = sw_strndup(nl + 1, plen - (size_t)(nl + 1 - (char *)plain));
    sw_seal_wipe_free(plain, plen);
    if (*access_key == NULL || *secret_key == NULL) {
        sw_free(*access_key);
        sw_free(*secret_key);
        *access_key = *secret_key = NULL;
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    }
    return 0;
}

int sw_store_load(redisContext *c, const struct sw_seal_key *key, const char *name,
                  struct sw_store_spec *out, char **access_key, char **secret_key,
                  struct sw_error *err)
{
    return sw_store_read(c, key, name, NULL, out, access_key, secret_key, err);
}

int sw_store_remove(redisContext *c, const char *name, struct sw_error *err)
{
    redisReply *r;
    int rc = cmd(c, &r, err, "DEL sw:store:%s", name);
    if (rc != 0)
        return rc;
    long long n = r->integer;
    freeReplyObject(r);
    if (n == 0)
        return sw_error_set(err, SW_ENOENT, "store %s: not defined", name);
    return cmd(c, NULL, err, "SREM sw:stores %s", name);
}

int sw_rule_record_to_json(const struct sw_seal_key *key, const struct sw_rule_spec *r, char **out)
{
    *out = NULL;
    char *canon = NULL;
    if (sw_rule_to_json(r, &canon) != 0)
        return SW_ENOMEM;
    int rc = with_mac(key, "rule", r->name, canon, out);
    sw_free(canon);
    return rc;
}

int sw_rule_record_from_json(const struct sw_seal_key *key, const char *name, const char *json,
                             size_t len, int *was_unsigned, struct sw_rule_spec *out,
                             struct sw_error *err)
{
    int rc = sw_rule_from_json(json, len, out, err);
    if (rc != 0) {
        char head[SW_REPL_NAME_MAX + 8];
        snprintf(head, sizeof(head), "rule %s:", name);
        memset(out, 0, sizeof(*out));
        return err != NULL && strncmp(err->msg, head, strlen(head)) == 0
                   ? rc
                   : sw_error_wrap(err, "rule %s", name);
    }
    if (strcmp(out->name, name) != 0) {
        rc = sw_error_set(err, SW_ECRYPTO,
                          "rule %s: the record is rule %s's (copied from another name)", name,
                          out->name);
        memset(out, 0, sizeof(*out));
        return rc;
    }
    /* The MAC covers the rule as parsed, printed again in canonical form:
     * what the hub will act on, not the bytes it was read from. */
    char *canon = NULL;
    cJSON *o = NULL;
    if (sw_rule_to_json(out, &canon) != 0)
        rc = sw_error_set(err, SW_ENOMEM, "rule %s: out of memory", name);
    else if ((rc = sw_json_parse(json, len, "rule", &o, err)) == 0)
        rc = check_mac(key, "rule", name, o, canon, was_unsigned, err);
    cJSON_Delete(o);
    sw_free(canon);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int sw_rule_save(redisContext *c, const struct sw_seal_key *key, const struct sw_rule_spec *r,
                 struct sw_error *err)
{
    int rc = sw_rule_validate(r, err);
    if (rc != 0)
        return rc;
    char *json;
    if ((rc = sw_rule_record_to_json(key, r, &json)) != 0)
        return sw_error_set(err, rc, "rule %s: cannot sign the record", r->name);
    rc = cmd(c, NULL, err, "SET sw:repl:rule:%s %s", r->name, json);
    sw_free(json);
    if (rc == 0)
        rc = cmd(c, NULL, err, "SADD sw:repl:rules %s", r->name);
    return rc;
}

int sw_rule_read(redisContext *c, const struct sw_seal_key *key, const char *name,
                 int *was_unsigned, struct sw_rule_spec *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    redisReply *r;
    int rc = cmd(c, &r, err, "GET sw:repl:rule:%s", name);
    if (rc != 0)
        return rc;
    if (r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return sw_error_set(err, SW_ENOENT, "rule %s: not defined", name);
    }
    rc = sw_rule_record_from_json(key, name, r->str, r->len, was_unsigned, out, err);
    freeReplyObject(r);
    return rc;
}

int sw_rule_load(redisContext *c, const struct sw_seal_key *key, const char *name,
                 struct sw_rule_spec *out, struct sw_error *err)
{
    return sw_rule_read(c, key, name, NULL, out, err);
}

int sw_rule_remove(redisContext *c, const char *name, struct sw_error *err)
{
    redisReply *r;
    int rc = cmd(c, &r, err, "DEL sw:repl:rule:%s", name);
    if (rc != 0)
        return rc;
    long long n = r->integer;
    freeReplyObject(r);
    if (n == 0)
        return sw_error_set(err, SW_ENOENT, "rule %s: not defined", name);
    rc = cmd(c, NULL, err, "SREM sw:repl:rules %s", name);
    /* The journal goes with the rule. */
    char pat[128];
    snprintf(pat, sizeof(pat), "sw:repl:%s:*", name);
    redisReply *keys;
    if (rc == 0 && cmd(c, &keys, err, "KEYS %s", pat) == 0) {
        for (size_t i = 0; keys->type == REDIS_REPLY_ARRAY && i < keys->elements; i++)
            cmd(c, NULL, NULL, "DEL %s", keys->element[i]->str);
        freeReplyObject(keys);
    }
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sw_names_list(redisContext *c, const char *set, char ***names, size_t *n, struct sw_error *err)
{
    *names = NULL;
    *n = 0;
    redisReply *r;
    int rc = cmd(c, &r, err, "SMEMBERS %s", set);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
        *names = sw_calloc(r->elements, sizeof(char *));
        if (*names == NULL) {
            freeReplyObject(r);
            return sw_error_set(err, SW_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < r->elements; i++) {
            (*names)[i] = sw_strdup(r->element[i]->str);
            if ((*names)[i] == NULL) {
                sw_names_free(*names, i);
                *names = NULL;
                freeReplyObject(r);
                return sw_error_set(err, SW_ENOMEM, "out of memory");
            }
        }
        *n = r->elements;
        qsort(*names, *n, sizeof(char *), cmp_str);
    }
    freeReplyObject(r);
    return 0;
}

void sw_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sw_free(names[i]);
    sw_free(names);
}

static int bind_store(struct sw_rule_bound *b, redisContext *c, const struct sw_seal_key *key,
                      const char *name, uv_loop_t *loop, struct sw_http *http, struct sw_s3 **out,
                      struct sw_error *err)
{
    struct sw_store_spec s;
    char *ak = NULL, *sk = NULL;
    int rc = sw_store_load(c, key, name, &s, &ak, &sk, err);
    if (rc != 0)
        return rc;
    struct sw_s3_config cfg = {
        .name = s.name,
        .endpoint = s.endpoint,
        .region = s.region,
        .access_key = ak,
        .secret_key = sk,
        .virtual_host = s.virtual_host,
        .insecure_tls = s.insecure_tls,
        .ca_file = s.ca_file[0] ? s.ca_file : NULL,
    };
    rc = sw_s3_new(loop, http, &cfg, out, err);
    sw_seal_wipe_free(ak, strlen(ak));
    sw_seal_wipe_free(sk, strlen(sk));
    if (rc == 0)
        b->clients[b->nclients++] = *out;
    return rc;
}

int sw_rule_bind(redisContext *c, const struct sw_seal_key *key, const struct sw_rule_spec *spec,
                 uv_loop_t *loop, struct sw_http *http, struct sw_rule_bound **out,
                 struct sw_error *err)
{
    *out = NULL;
    struct sw_rule_bound *b = sw_calloc(1, sizeof(*b));
    if (b == NULL)
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    b->spec = *spec;
    struct sw_repl_rule *r = &b->rule;
    r->name = b->spec.name;
    r->src_name = b->spec.source.store;
    r->bucket = b->spec.source.bucket;
    r->prefix = b->spec.source.prefix;
    r->immutable = spec->model_registry;
    r->concurrency = spec->concurrency;
    r->part_concurrency = spec->part_concurrency;
    r->part_size = (size_t)spec->part_size;
    r->bytes_per_s = spec->bytes_per_s;
    r->allow_server_copy = spec->server_copy;
    int rc = bind_store(b, c, key, spec->source.store, loop, http, &r->src, err);
    for (size_t i = 0; rc == 0 && i < spec->ntargets; i++) {
        struct sw_repl_target *t = &r->targets[i];
        t->name = b->spec.targets[i].store;
        t->bucket = b->spec.targets[i].bucket;
        t->prefix = b->spec.targets[i].prefix;
        rc = bind_store(b, c, key, t->name, loop, http, &t->s3, err);
        r->ntargets++;
    }
    if (rc != 0) {
        sw_rule_bound_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

void sw_rule_bound_free(struct sw_rule_bound *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->nclients; i++)
        sw_s3_free(b->clients[i]);
    sw_free(b);
}
