/*
 * rule.h - replication rules and object stores as the platform team
 * defines them, and where they are kept.
 *
 * A store is an endpoint, a region, addressing and TLS options, plus
 * credentials that are kept sealed (store/seal.h, context
 * "store/NAME/credentials") and never logged. A rule copies
 * STORE:BUCKET/PREFIX to one or more STORE:BUCKET/PREFIX targets. Both are
 * kept in Redis as JSON:
 *   sw:stores (set of names)      sw:store:NAME    (JSON, credentials sealed, signed)
 *   sw:repl:rules (set of names)  sw:repl:rule:NAME (JSON, signed)
 * Both direct the hub's credentials (where its signed S3 requests go, what
 * it copies with them), so each record carries a MAC (sw_record_mac, kind
 * "store" or "rule", bound to NAME) over all its fields, and a record whose
 * MAC is missing or does not verify is refused before anything it names is
 * contacted (docs/security.md, "Records that direct the hub's credentials").
 * Parsing and printing are pure and unit-tested; the Redis helpers block
 * (CLI and worker use).
 */
#ifndef SW_REPLICATION_RULE_H
#define SW_REPLICATION_RULE_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "net/http.h"
#include "replication/replicator.h"
#include "store/seal.h"

#define SW_REPL_NAME_MAX 64

/** An object store, without its credentials. */
struct sw_store_spec {
    char name[SW_REPL_NAME_MAX];
    char endpoint[512];
    char region[SW_REPL_NAME_MAX];
    int virtual_host;
    int insecure_tls;
    char ca_file[512];
};

/** STORE:BUCKET/PREFIX. */
struct sw_rule_loc {
    char store[SW_REPL_NAME_MAX];
    char bucket[SW_REPL_NAME_MAX];
    char prefix[1024];
};

/** A rule as stored. */
struct sw_rule_spec {
    char name[SW_REPL_NAME_MAX];
    struct sw_rule_loc source;
    struct sw_rule_loc targets[SW_REPL_MAX_TARGETS];
    size_t ntargets;
    int model_registry; /* models/NAME/VERSION/ prefixes, immutable, replicated continuously */
    int concurrency;
    int part_concurrency;
    int64_t part_size;
    double bytes_per_s;
    int server_copy;
    double rpo_objective_s; /* the rule's RPO objective; 0: the hub's default */
};

/**
 * Parses "STORE:BUCKET/PREFIX" or "STORE:s3://BUCKET/PREFIX" (prefix may be
 * empty). Errors name the part that is wrong.
 */
int sw_rule_loc_parse(const char *s, struct sw_rule_loc *out, struct sw_error *err);

/** Checks names and limits; errors name the field. */
int sw_rule_validate(const struct sw_rule_spec *r, struct sw_error *err);

/** Serialises to JSON; *out is new (sw_free). */
int sw_rule_to_json(const struct sw_rule_spec *r, char **out);

/** Parses JSON written by sw_rule_to_json; errors name the field. */
int sw_rule_from_json(const char *json, size_t len, struct sw_rule_spec *out, struct sw_error *err);

/**
 * Splits a model-registry key "models/NAME/VERSION/FILE" below `prefix`
 * (e.g. "models/") into NAME and VERSION. Returns 0, or SW_EPARSE when the
 * key has no NAME/VERSION/ part.
 */
int sw_model_key_parse(const char *prefix, const char *key, char *name, size_t name_len,
                       char *version, size_t version_len);

/* ---- Redis ------------------------------------------------------------------ */

/**
 * A store record as kept in Redis: the fields, `sealed` (the credentials'
 * envelope) and a MAC over them under `key`, bound to kind "store" and
 * s->name. *out is new (sw_free).
 */
int sw_store_record_to_json(const struct sw_seal_key *key, const struct sw_store_spec *s,
                            const char *sealed, char **out);

/**
 * Parses a store record kept under `name` and checks its MAC under `key`.
 * A record without a MAC is refused (SW_ECRYPTO, the message says how to
 * sign it) unless `was_unsigned` is not NULL, when it is read and
 * *was_unsigned set to 1. A MAC that does not verify (a field changed, the
 * record copied from another name, another key) is SW_ECRYPTO with a reason
 * naming the store. *sealed is the credentials' envelope, new (sw_free).
 */
int sw_store_record_from_json(const struct sw_seal_key *key, const char *name, const char *json,
                              size_t len, int *was_unsigned, struct sw_store_spec *out,
                              char **sealed, struct sw_error *err);

/** A rule record as kept: sw_rule_to_json plus a MAC (kind "rule", r->name). */
int sw_rule_record_to_json(const struct sw_seal_key *key, const struct sw_rule_spec *r, char **out);

/**
 * Parses a rule record kept under `name` and checks its MAC, as
 * sw_store_record_from_json; a record naming another rule is refused.
 */
int sw_rule_record_from_json(const struct sw_seal_key *key, const char *name, const char *json,
                             size_t len, int *was_unsigned, struct sw_rule_spec *out,
                             struct sw_error *err);

/** Saves a store with its credentials sealed under `key`, the record signed. */
int sw_store_save(redisContext *c, const struct sw_seal_key *key, const struct sw_store_spec *s,
                  const char *access_key, const char *secret_key, struct sw_error *err);

/**
 * Loads a store whose MAC verifies; *access_key and *secret_key are new
 * (wipe with sw_seal_wipe_free(p, strlen(p))). SW_ENOENT names the store;
 * SW_ECRYPTO says why the record is refused.
 */
int sw_store_load(redisContext *c, const struct sw_seal_key *key, const char *name,
                  struct sw_store_spec *out, char **access_key, char **secret_key,
                  struct sw_error *err);

/**
 * sw_store_load that also reads a record without a MAC when
 * `was_unsigned` is not NULL (for `spillctl replicate sign` only).
 */
int sw_store_read(redisContext *c, const struct sw_seal_key *key, const char *name,
                  int *was_unsigned, struct sw_store_spec *out, char **access_key,
                  char **secret_key, struct sw_error *err);

/** Removes a store. */
int sw_store_remove(redisContext *c, const char *name, struct sw_error *err);

/** Saves a rule signed under `key`; loads one whose MAC verifies; removes one. */
int sw_rule_save(redisContext *c, const struct sw_seal_key *key, const struct sw_rule_spec *r,
                 struct sw_error *err);
int sw_rule_load(redisContext *c, const struct sw_seal_key *key, const char *name,
                 struct sw_rule_spec *out, struct sw_error *err);
int sw_rule_remove(redisContext *c, const char *name, struct sw_error *err);

/** sw_rule_load that also reads a rule without a MAC, as sw_store_read. */
int sw_rule_read(redisContext *c, const struct sw_seal_key *key, const char *name,
                 int *was_unsigned, struct sw_rule_spec *out, struct sw_error *err);

/**
 * The names in a set ("sw:stores" or "sw:repl:rules"), sorted; *names is a
 * new array of new strings (free with sw_names_free).
 */
int sw_names_list(redisContext *c, const char *set, char ***names, size_t *n, struct sw_error *err);
void sw_names_free(char **names, size_t n);

/** A rule bound to live S3 clients. */
struct sw_rule_bound {
    struct sw_repl_rule rule;
    struct sw_rule_spec spec;
    struct sw_s3 *clients[SW_REPL_MAX_TARGETS + 1];
    size_t nclients;
};

/**
 * Loads the stores a rule names and makes S3 clients for them on `loop`
 * and `http` (borrowed). *out is new (sw_rule_bound_free).
 */
int sw_rule_bind(redisContext *c, const struct sw_seal_key *key, const struct sw_rule_spec *spec,
                 uv_loop_t *loop, struct sw_http *http, struct sw_rule_bound **out,
                 struct sw_error *err);
void sw_rule_bound_free(struct sw_rule_bound *b);

#endif
