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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/** At most this many files in a $KUBECONFIG list. */
#define SW_KUBECONFIG_FILES_MAX 16

/**
 * Loads the context `context` (NULL: the current-context) from `list`,
 * files separated by ':' as in $KUBECONFIG, merged as kubectl merges them:
 * empty entries and files that do not exist are skipped; the first file
 * that sets current-context sets it; the context, its cluster and its user
 * are each taken from the first file that has one of that name, its
 * relative paths resolved against that file's folder. One file is read as
 * sw_kubeconfig_load reads it. Errors name the file, or the whole list
 * for what no file has. t->source is the file holding the context.
 */
int sw_kubeconfig_load_list(const char *list, const char *context, struct sw_kube_target **out,
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

/* ---- in-cluster configuration -------------------------------------------- */

/** Where a pod finds its ServiceAccount's token, CA bundle and namespace. */
#define SW_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/**
 * The environment variable that, when set and not empty, replaces
 * SW_SERVICEACCOUNT_DIR (for tests, and for a token mounted elsewhere).
 */
#define SW_SERVICEACCOUNT_DIR_ENV "SPILLWAY_SERVICEACCOUNT_DIR"

/**
 * Builds the target a pod uses to reach its own cluster, as client-go's
 * InClusterConfig does, from values given (pure: reads no file and no
 * environment): server "https://HOST:PORT" (an IPv6 HOST in brackets),
 * certificate-authority DIR/ca.crt, tokenFile DIR/token (read, and read
 * again as it rotates, by the REST client: clusters/rest.h), namespace the
 * trimmed `ns_text` (the namespace file's content; NULL or empty: none).
 * `host` and `port` are KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
 * Context, cluster and user are "in-cluster". Returns 0 and *out (owned by
 * the caller), SW_EINVAL naming the variable that is empty or malformed, or
 * SW_ENOMEM.
 */
int sw_kube_incluster_target(const char *host, const char *port, const char *dir,
                             const char *ns_text, struct sw_kube_target **out,
                             struct sw_error *err);

/**
 * The ServiceAccount folder this process uses: $SPILLWAY_SERVICEACCOUNT_DIR
 * when set and not empty, else SW_SERVICEACCOUNT_DIR. Borrowed string.
 */
const char *sw_kube_serviceaccount_dir(void);

/**
 * Whether this process runs in a cluster: KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT are set and not empty and the ServiceAccount
 * folder holds a token file.
 */
bool sw_kube_incluster_available(void);

/**
 * Loads the in-cluster target from the environment and the ServiceAccount
 * folder: the namespace file (optional) and the CA bundle are read; the
 * token is not (token stays NULL, tokenFile names it) so that whoever uses
 * the target reads the current token, never a copy that expires. SW_ENOENT
 * naming what is missing when not in a cluster; errors of the files name
 * them.
 */
int sw_kube_incluster_load(struct sw_kube_target **out, struct sw_error *err);

/* ---- tokenFile rotation ------------------------------------------------- */

/**
 * How often a tokenFile is read again even when it looks unchanged (as
 * client-go's cached file token source). A projected ServiceAccount token is
 * replaced by the kubelet well before it expires (at 80% of its life).
 */
#define SW_TOKEN_FILE_MAX_AGE_MS 60000

/** What identifies one version of a file: modification time, inode, size. */
struct sw_file_stamp {
    int64_t mtime_ns;
    uint64_t dev;
    uint64_t ino;
    int64_t size;
};

/**
 * Stats `path` (following symbolic links: the kubelet swaps a projected
 * volume's "..data" link). 0 and *out, SW_ENOENT or SW_EIO.
 */
int sw_file_stamp_get(const char *path, struct sw_file_stamp *out);

/**
 * Whether a token read at `read_ms` (monotonic; negative: never read),
 * when the file's stamp was `read_stamp`, must be read again at `now_ms`,
 * the file's stamp now being `now_stamp` (NULL: the file cannot be stat'ed
 * now; then only age counts). True when never read, when the stamp changed,
 * or when SW_TOKEN_FILE_MAX_AGE_MS have passed.
 */
bool sw_token_file_due(const struct sw_file_stamp *read_stamp, int64_t read_ms,
                       const struct sw_file_stamp *now_stamp, int64_t now_ms);

/**
 * Reads a whole file into a new NUL-terminated buffer of at most `max`
 * bytes (owned by the caller; sw_free). `what` names the file's role in
 * errors ("client-certificate"), along with its path.
 */
int sw_read_file(const char *path, size_t max, const char *what, char **out, size_t *out_len,
                 struct sw_error *err);

#endif
