/*
 * tenancy.h - what an origin namespace may do through a burst: the one
 * authority every step of the hub asks (docs/security.md).
 *
 * The platform declares it in the hub's configuration (`tenancy.grants`,
 * docs/hub.md), never the Job's author. A grant names one origin cluster and
 * namespace and gives it:
 *
 *   teams                the teams its Jobs may be charged to; the first is
 *                        the default (none given: the namespace's name)
 *   priorities           the spillway.io/priority values its Jobs may ask
 *                        (none given: best-effort, development, training)
 *   read                 object-store prefixes its inputs may name
 *   write                object-store prefixes its outputs may name
 *   useExistingNamespace mirrors may go into a namespace of the same name
 *                        in a member that spillway did not create for it
 *
 * A namespace no grant names bursts without data, as its namespace's own
 * team, at best-effort, development or training, and only into target
 * namespaces spillway created for it. Pure: no I/O, no clock.
 */
#ifndef SW_CONTROLLER_HUB_TENANCY_H
#define SW_CONTROLLER_HUB_TENANCY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "controller/hub/annotations.h"

#define SW_GRANT_MAX_TEAMS    8
#define SW_GRANT_MAX_PREFIXES 16
/** The most grants a config holds. */
#define SW_TENANCY_MAX_GRANTS 1024

/** The priorities a namespace without a grant (or a grant naming none) may ask. */
#define SW_GRANT_DEFAULT_PRIOS                                                                     \
    ((1u << SW_PRIO_BEST_EFFORT) | (1u << SW_PRIO_DEVELOPMENT) | (1u << SW_PRIO_TRAINING))

/** One grant: what one origin namespace may do. */
struct sw_grant {
    char cluster[64]; /* the origin cluster, as registered */
    char ns[64];      /* the origin namespace */
    char teams[SW_GRANT_MAX_TEAMS][64];
    size_t nteams;      /* 0: the namespace's name */
    unsigned prio_mask; /* 1 << enum sw_priority_class; 0: SW_GRANT_DEFAULT_PRIOS */
    /* Prefixes: a bucket and a prefix that is "" (the whole bucket) or
     * ends in '/'. */
    struct sw_s3_uri read[SW_GRANT_MAX_PREFIXES];
    size_t nread;
    struct sw_s3_uri write[SW_GRANT_MAX_PREFIXES];
    size_t nwrite;
    bool existing_ns; /* useExistingNamespace */
};

/** Every grant of a config (heap; sw_tenancy_free). */
struct sw_tenancy {
    struct sw_grant *grants;
    size_t n;
};

void sw_tenancy_free(struct sw_tenancy *t);

/** The grant of `cluster`/`ns`, or NULL (the defaults apply). `t` may be NULL. */
const struct sw_grant *sw_tenancy_find(const struct sw_tenancy *t, const char *cluster,
                                       const char *ns);

/**
 * Parses an object-store prefix of a grant ("s3://bucket/" or
 * "s3://bucket/some/prefix/") into *out. A prefix must be the whole bucket
 * or end in '/', and hold no "." or ".." segment and no "//". Returns 0 or
 * SW_EINVAL with the reason in *why (static text).
 */
int sw_grant_prefix_parse(const char *s, struct sw_s3_uri *out, const char **why);

/**
 * Whether `u` (a Job's input or output) lies within one of `n` granted
 * prefixes: same bucket, and its prefix starts with the granted one. A
 * prefix of the Job's with a "." or ".." segment or "//" is never within.
 */
bool sw_grant_covers(const struct sw_s3_uri *granted, size_t n, const struct sw_s3_uri *u);

/**
 * Applies what `cluster`/`ns` may do to a Job's parsed annotations `spec`
 * (in place): the team is the grant's (the annotation may name another of
 * the grant's teams, else it is refused), the priority one the grant
 * allows (an annotation asking another is refused; without one the Job
 * gets training, or the grant's highest allowed below it when training is
 * not allowed), every input within `read` and the outputs within `write`.
 * Returns 0, or SW_EFORBIDDEN with a message naming the annotation, the
 * value and what the namespace may use. The message reads the same
 * whether a refused prefix exists or not: nothing is looked up.
 */
int sw_tenancy_apply(const struct sw_tenancy *t, const char *cluster, const char *ns,
                     struct sw_burst_spec *spec, struct sw_error *err);

/**
 * Whether mirrors of `cluster`/`ns` may go into a namespace of that name
 * in a member that spillway did not create for that origin (its grant's
 * useExistingNamespace).
 */
bool sw_tenancy_existing_ns(const struct sw_tenancy *t, const char *cluster, const char *ns);

#endif
