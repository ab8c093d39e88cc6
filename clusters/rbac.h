/*
 * rbac.h - the permissions a ClusterRole grants, read from its YAML.
 *
 * spillway's member role (deploy/rbac/member-clusterrole.yaml) is the one
 * list of what the hub does on a member cluster: `spillctl cluster add`
 * asks the API server about each permission this parser reads from it (the
 * file is built into spillctl), and the least-privilege test compares it
 * with what the hub was seen doing. Pure: text in, permissions out.
 */
#ifndef SW_CLUSTERS_RBAC_H
#define SW_CLUSTERS_RBAC_H

#include <stddef.h>

#include "common/error.h"

/** One RBAC permission: group ("" for core), resource, subresource, verb. */
struct sw_rbac_perm {
    char group[64];
    char resource[64];
    char subresource[64];
    char verb[32];
};

/** The most permissions sw_rbac_parse returns. */
#define SW_RBAC_MAX_PERMS 256

/**
 * Parses a ClusterRole or Role (one YAML document, kind ClusterRole or
 * Role) and expands its rules into one permission per (apiGroup,
 * resource[/subresource], verb), in the order of the file, without
 * duplicates. Wildcards ("*"), resourceNames and nonResourceURLs are
 * refused: a role spillway checks must name what it grants. Returns 0 and
 * *out (a new array of *n, freed with sw_free), or SW_EPARSE / SW_EINVAL /
 * SW_ETOOBIG / SW_ENOMEM with a message naming `what`, the rule and field.
 */
int sw_rbac_parse(const char *text, size_t len, const char *what, struct sw_rbac_perm **out,
                  size_t *n, struct sw_error *err);

/** One question for the API server: may the credentials do `perm` in
 * namespace `ns` ("": in every namespace, or a cluster-scoped resource)? */
struct sw_rbac_review {
    struct sw_rbac_perm perm;
    char ns[64];
};

/**
 * The reviews `spillctl cluster add` asks: each of `cluster` (n_cluster
 * permissions) in every namespace, then each of `per_ns` in each of the
 * `n_ns` namespaces `nss` (the narrow member role; none for the wide one).
 * Returns 0 and *out (freed with sw_free, *n of them) or SW_ENOMEM /
 * SW_EINVAL (a namespace name too long).
 */
int sw_rbac_reviews(const struct sw_rbac_perm *cluster, size_t n_cluster,
                    const struct sw_rbac_perm *per_ns, size_t n_per_ns, const char (*nss)[64],
                    size_t n_ns, struct sw_rbac_review **out, size_t *n);

/** A SelfSubjectAccessReview asking `r`, as JSON, into buf; 0 or SW_ETOOBIG. */
int sw_rbac_review_body(const struct sw_rbac_review *r, char *buf, size_t len);

/** "create jobs.batch in namespace a" / "list nodes (in all namespaces)". */
void sw_rbac_review_str(const struct sw_rbac_review *r, char *buf, size_t len);

#endif
