/*
 * registry.h - the member cluster registry in Redis.
 *
 * Each cluster is one JSON record under "spillway:cluster:NAME", its name in
 * the set "spillway:clusters". The record holds what people may read (role,
 * region, pools, server, auth kind, server version) in clear, and the
 * connection (server, CA, client certificate and key, token, password, exec
 * plugin) sealed with AES-256-GCM (store/seal.h) under the context
 * "spillway/cluster/NAME/connection", so a record copied to another name
 * does not open. Credentials are never printed or logged.
 *
 * The Redis calls are asynchronous on the loop (store/redis.h).
 */
#ifndef SW_CLUSTERS_REGISTRY_H
#define SW_CLUSTERS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "clusters/kubeconfig.h"
#include "clusters/spec.h"
#include "common/error.h"
#include "store/redis.h"
#include "store/seal.h"

#define SW_REGISTRY_PREFIX "spillway:cluster:"
#define SW_REGISTRY_SET    "spillway:clusters"

struct sw_cluster_record {
    char name[SW_CLUSTER_NAME_MAX];
    struct sw_cluster_spec spec;
    char server[512];
    char context[256];
    char auth_kind[32];
    char server_version[64];
    int64_t created_ms;
    char *sealed; /* owned envelope of the connection */
};

/** Frees the record's owned fields. */
void sw_cluster_record_clear(struct sw_cluster_record *rec);

/**
 * Serialises a target's connection (secrets included) to JSON. The caller
 * owns *out and must wipe it (sw_seal_wipe_free(*out, strlen(*out))).
 */
int sw_target_to_json(const struct sw_kube_target *t, char **out);

/** The reverse of sw_target_to_json; errors name `what` and the field. */
int sw_target_from_json(const char *text, size_t len, const char *what, struct sw_kube_target **out,
                        struct sw_error *err);

/** Seals `t`'s connection into rec->sealed. */
int sw_cluster_record_seal(struct sw_cluster_record *rec, const struct sw_kube_target *t,
                           const struct sw_seal_key *key, struct sw_error *err);

/** Opens rec->sealed into a new target (owned by the caller). */
int sw_cluster_record_open(const struct sw_cluster_record *rec, const struct sw_seal_key *key,
                           struct sw_kube_target **out, struct sw_error *err);

/** The record as JSON (new string, caller frees with sw_free). */
int sw_cluster_record_to_json(const struct sw_cluster_record *rec, char **out);

/** Parses a record; errors name `what` and the field. */
int sw_cluster_record_from_json(const char *text, size_t len, const char *what,
                                struct sw_cluster_record *rec, struct sw_error *err);

/* ---- Redis, async ------------------------------------------------------- */

typedef void (*sw_registry_cb)(int rc, const struct sw_error *err, void *ctx);
/** `rec` is owned by the callee during the call; move out what you keep. */
typedef void (*sw_registry_get_cb)(int rc, struct sw_cluster_record *rec,
                                   const struct sw_error *err, void *ctx);
/** `recs` (n of them) are freed after the call. */
typedef void (*sw_registry_list_cb)(int rc, struct sw_cluster_record *recs, size_t n,
                                    const struct sw_error *err, void *ctx);

/**
 * Stores a record. Without `replace`, SW_EEXIST when the name is taken.
 */
int sw_registry_put(struct sw_redis *r, const struct sw_cluster_record *rec, int replace,
                    sw_registry_cb cb, void *ctx);

/** Reads one record; SW_ENOENT when there is none. */
int sw_registry_get(struct sw_redis *r, const char *name, sw_registry_get_cb cb, void *ctx);

/** Reads every record, sorted by name. */
int sw_registry_list(struct sw_redis *r, sw_registry_list_cb cb, void *ctx);

/** Removes a record; SW_ENOENT when there is none. */
int sw_registry_remove(struct sw_redis *r, const char *name, sw_registry_cb cb, void *ctx);

#endif
