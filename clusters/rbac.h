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

#endif
