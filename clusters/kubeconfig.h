/*
 * kubeconfig.h - reading a kubeconfig the way kubectl does.
 *
 * Parsing is pure: it takes the file's bytes and its path, picks a context
 * (the one asked for, else current-context), and returns everything needed
 * to talk to that context's cluster as one struct sw_kube_target. Relative
 * file paths are resolved against the kubeconfig's own folder, as kubectl
 * does; reading those files is a separate step (sw_kube_target_load_files)
 * so the parser can be fuzzed from a buffer.
 *
 * Supported: clusters (server, certificate-authority[-data],
 * insecure-skip-tls-verify, tls-server-name, proxy-url), users
 * (client-certificate[-data], client-key[-data], token, tokenFile,
 * username/password, exec plugins of client.authentication.k8s.io/v1 and
 * v1beta1), contexts (cluster, user, namespace). auth-provider (removed
 * from kubectl) is refused with a message pointing to exec.
 *
 * Every error names the file, the context when one is involved, and the
 * field, e.g.
 *   kubeconfig "a/cfg": context "prod": user "admin": field "exec.interactiveMode": ...
 */
#ifndef SW_CLUSTERS_KUBECONFIG_H
#define SW_CLUSTERS_KUBECONFIG_H

#include <stddef.h>

#include "common/error.h"

/** The largest kubeconfig spillway reads. */
#define SW_KUBECONFIG_MAX ((size_t)4 << 20)

enum sw_kube_interactive {
    SW_KUBE_INTERACTIVE_NEVER = 0,
    SW_KUBE_INTERACTIVE_IF_AVAILABLE,
    SW_KUBE_INTERACTIVE_ALWAYS,
};

/** An exec credential plugin (users[].user.exec). All strings owned. */
struct sw_kube_exec {
    char *api_version; /* client.authentication.k8s.io/v1 or /v1beta1 */
    char *command;     /* absolute when it contained a '/' in the file */
    char **args;       /* nargs entries */
    size_t nargs;
    char **env_names; /* nenv entries each */
    char **env_values;
    size_t nenv;
    enum sw_kube_interactive interactive;
    int provide_cluster_info;
    char *install_hint; /* or NULL */
};

/**
 * One context, resolved. Strings and data are owned by the struct (free
 * with sw_kube_target_free); absent fields are NULL / 0. Data fields hold
 * the decoded PEM bytes, NUL-terminated.
 */
struct sw_kube_target {
    char *source;  /* the kubeconfig's path as given, for messages */
    char *context; /* context name */
    char *cluster; /* cluster name */
    char *user;    /* user name */
    char *namespace;
    /* cluster */
    char *server;
    char *ca_file;
    unsigned char *ca_data;
    size_t ca_len;
    int insecure;
    char *tls_server_name;
    char *proxy_url;
    /* user */
    char *client_cert_file;
    unsigned char *client_cert_data;
    size_t client_cert_len;
    char *client_key_file;
    unsigned char *client_key_data;
    size_t client_key_len;
    char *token;
    char *token_file;
    char *username;
    char *password;
    struct sw_kube_exec *exec;
};

/**
 * Parses `len` bytes of kubeconfig read from `path` (used for messages and
 * as the base of relative paths; may be relative itself) and resolves
 * `context`, or current-context when `context` is NULL. Returns 0 and *out
 * (owned by the caller), or SW_EPARSE / SW_ENOENT / SW_EINVAL /
 * SW_EUNSUPPORTED / SW_ETOOBIG / SW_ENOMEM with a message in err.
 */
int sw_kubeconfig_parse(const char *text, size_t len, const char *path, const char *context,
                        struct sw_kube_target **out, struct sw_error *err);

/**
 * Reads the file at `path` (at most SW_KUBECONFIG_MAX bytes) and parses it
 * as sw_kubeconfig_parse does, then loads the files it references
 * (sw_kube_target_load_files).
 */
int sw_kubeconfig_load(const char *path, const char *context, struct sw_kube_target **out,
                       struct sw_error *err);

/**
 * Reads certificate-authority, client-certificate, client-key and tokenFile
 * into the corresponding data fields where no inline data was given (inline
 * data wins, as in client-go). Errors name the file and the field.
 */
int sw_kube_target_load_files(struct sw_kube_target *t, struct sw_error *err);

/** Frees a target; NULL is fine. Secrets are wiped first. */
void sw_kube_target_free(struct sw_kube_target *t);

/**
 * Names the kind of authentication a target uses, for messages and
 * `cluster show`: "exec", "client-certificate", "token", "basic", or
 * "none". Never the credential itself.
 */
const char *sw_kube_target_auth_kind(const struct sw_kube_target *t);

/**
 * Reads a whole file into a new NUL-terminated buffer of at most `max`
 * bytes (owned by the caller; sw_free). `what` names the file's role in
 * errors ("client-certificate"), along with its path.
 */
int sw_read_file(const char *path, size_t max, const char *what, char **out, size_t *out_len,
                 struct sw_error *err);

#endif
