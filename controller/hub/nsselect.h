/*
 * nsselect.h - the hub's namespaceSelector: a Kubernetes label selector
 * over the labels of a member's namespaces, parsed once from the hub's
 * config and matched against what the member's API server answers. Pure:
 * no hub, no I/O.
 *
 * A hub with a selector serves only the origin Jobs in namespaces whose
 * labels match it (docs/hub.md, "Serving some namespaces"); several hubs,
 * each with its own Redis database and selector, can so share one fleet.
 *
 * The syntax is kubectl's (`kubectl get ns -l SELECTOR`): terms separated
 * by commas, all of which must hold:
 *   key=value, key==value   the label is there with that value
 *   key!=value              the label is absent or has another value
 *   key in (v1,v2)          the label is there with one of the values
 *   key notin (v1,v2)       the label is absent or has none of them
 *   key                     the label is there
 *   !key                    the label is absent
 * Keys are label keys ([prefix/]name: a DNS subdomain of at most 253
 * characters, a name of at most 63 of [A-Za-z0-9-_.] beginning and ending
 * with a letter or digit); values are label values (at most 63 such
 * characters, or empty). The empty selector matches every namespace.
 */
#ifndef SW_CONTROLLER_HUB_NSSELECT_H
#define SW_CONTROLLER_HUB_NSSELECT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/error.h"

/** At most this many terms in a selector, and values in a set. */
#define SW_NSSEL_MAX_TERMS  16
#define SW_NSSEL_MAX_VALUES 16
/** The longest selector text, in bytes (the terminating NUL not counted). */
#define SW_NSSEL_TEXT_MAX 511

enum sw_nssel_op {
    SW_NSSEL_EQ,     /* key=value, key==value */
    SW_NSSEL_NE,     /* key!=value */
    SW_NSSEL_IN,     /* key in (...) */
    SW_NSSEL_NOTIN,  /* key notin (...) */
    SW_NSSEL_EXISTS, /* key */
    SW_NSSEL_ABSENT, /* !key */
};

struct sw_nssel_term {
    enum sw_nssel_op op;
    char key[254 + 64];
    size_t nvalues; /* 1 for EQ and NE, 1.. for IN and NOTIN, 0 otherwise */
    char values[SW_NSSEL_MAX_VALUES][64];
};

/** A parsed selector; nterms 0 matches every namespace. */
struct sw_nssel {
    char text[SW_NSSEL_TEXT_MAX + 1]; /* as given, for logs and messages */
    size_t nterms;
    struct sw_nssel_term terms[SW_NSSEL_MAX_TERMS];
};

/**
 * Parses `text` (borrowed) into *out. "" (or only blanks) is the empty
 * selector. Errors are SW_EINVAL with a message naming the term and what
 * was expected, e.g. `term 2 ("team in cv"): expected "(" after "in"`;
 * the caller names the file and field.
 */
int sw_nssel_parse(const char *text, struct sw_nssel *out, struct sw_error *err);

/**
 * Whether a namespace with `labels` (its metadata.labels: a JSON object of
 * strings, or NULL for none; borrowed) matches `s`. An answer the selector
 * cannot judge safely matches nothing: `labels` not an object, or a label
 * a term names that is not a string or is given twice.
 */
bool sw_nssel_match(const struct sw_nssel *s, const cJSON *labels);

/** What an API answer to GET namespace says of serving it (sw_nssel_answer). */
enum sw_nssel_verdict {
    SW_NSSEL_SERVED,     /* that namespace, its labels match */
    SW_NSSEL_NOT_SERVED, /* its labels do not match, another object, 404 or 403 */
    SW_NSSEL_NO_ANSWER,  /* no answer (a timeout, a 5xx, ...): the last verdict stands */
};

/**
 * The verdict of one answer to GET namespace `ns` (nsscope.c): `rc` the
 * request's result (0 for a 2xx), `status` the HTTP status (0 when none
 * came), `body` the answer (borrowed; may be NULL). *why (static text) says
 * which rule decided.
 */
enum sw_nssel_verdict sw_nssel_answer(const struct sw_nssel *s, const char *ns, int rc, int status,
                                      const cJSON *body, const char **why);

#endif
