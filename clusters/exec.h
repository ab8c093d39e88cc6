/*
 * exec.h - running kubeconfig exec credential plugins.
 *
 * A plugin (aws eks get-token, gke-gcloud-auth-plugin, kubelogin, ...) is
 * started with the kubeconfig's command, args and env, plus
 * KUBERNETES_EXEC_INFO describing the request (never interactive: the hub
 * has no terminal, so stdin is /dev/null). Of the hub's own environment it
 * gets PATH and HOME only: the rest holds the hub's secrets. It prints an ExecCredential
 * whose status carries a token or a client certificate and key, and
 * optionally an expirationTimestamp until which the credential is cached.
 *
 * Plugins run as child processes watched from the libuv loop; their output
 * is capped and they are killed after a timeout.
 */
#ifndef SW_CLUSTERS_EXEC_H
#define SW_CLUSTERS_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clusters/kubeconfig.h"
#include "common/error.h"

/** The most a plugin may print on stdout. */
#define SW_EXEC_MAX_OUTPUT ((size_t)1 << 20)
/** How long a plugin may run. */
#define SW_EXEC_TIMEOUT_MS 60000

/** A credential from a plugin. Owned strings; free with sw_exec_cred_clear. */
struct sw_exec_cred {
    char *token;
    unsigned char *cert; /* PEM, NUL-terminated */
    size_t cert_len;
    unsigned char *key; /* PEM, NUL-terminated */
    size_t key_len;
    int64_t expiry_ms; /* Unix ms; 0 when the credential does not expire */
};

/** Wipes and frees the credential's fields. */
void sw_exec_cred_clear(struct sw_exec_cred *c);

/**
 * Parses a plugin's stdout (pure). `api_version` is the one the kubeconfig
 * asked for: the ExecCredential must carry the same. Errors name `what`
 * (e.g. "kubeconfig \"f\": user \"u\": exec plugin \"aws\"") and the field,
 * never the credential.
 */
int sw_exec_cred_parse(const char *out, size_t len, const char *api_version, const char *what,
                       struct sw_exec_cred *cred, struct sw_error *err);

/**
 * Parses an RFC 3339 time ("2026-01-02T15:04:05Z", fractions, offsets) to
 * Unix ms, accepting nothing Go's time.Parse(time.RFC3339, ...) refuses:
 * out-of-range months, days (leap years included), hours, minutes, seconds
 * (no leap second 60) and offsets are SW_EPARSE. On failure *ms is left
 * alone and, when `why` is not NULL, *why points to a static reason such as
 * "day out of range".
 */
int sw_parse_rfc3339(const char *s, int64_t *ms, const char **why);

/**
 * Called once when a plugin run ends. On success (rc == 0) `cred` holds the
 * credential, which the callback may move out of (it is cleared after).
 */
typedef void (*sw_exec_done_cb)(int rc, struct sw_exec_cred *cred, const struct sw_error *err,
                                void *ctx);

/**
 * Runs the plugin of `t` (borrowed until the callback) on `loop`. `what`
 * names it in errors. Returns 0 when started; the callback then always runs
 * from the loop.
 */
int sw_exec_run(uv_loop_t *loop, const struct sw_kube_target *t, sw_exec_done_cb cb, void *ctx,
                struct sw_error *err);

/** Runs the plugin to completion on a private loop (for the CLI and tests). */
int sw_exec_run_sync(const struct sw_kube_target *t, struct sw_exec_cred *cred,
                     struct sw_error *err);

#endif
