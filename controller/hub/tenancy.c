/*
 * tenancy.c - what an origin namespace may do through a burst (tenancy.h).
 */
#include "controller/hub/tenancy.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

void sw_tenancy_free(struct sw_tenancy *t)
{
    if (t == NULL)
        return;
    sw_free(t->grants);
    t->grants = NULL;
    t->n = 0;
}

const struct sw_grant *sw_tenancy_find(const struct sw_tenancy *t, const char *cluster,
                                       const char *ns)
{
    for (size_t i = 0; t != NULL && cluster != NULL && ns != NULL && i < t->n; i++)
        if (strcmp(t->grants[i].cluster, cluster) == 0 && strcmp(t->grants[i].ns, ns) == 0)
            return &t->grants[i];
    return NULL;
}

/* Whether `p` holds a "." or ".." segment or an empty one ("//"): a key
 * that some stores (a file system behind S3) would resolve elsewhere. */
static bool odd_segments(const char *p)
{
    const char *s = p;
    while (*s != '\0') {
        size_t n = strcspn(s, "/");
        bool last = s[n] == '\0';
        if ((n == 0 && !last) || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return true;
        if (last)
            break;
        s += n + 1;
    }
    return false;
}

int sw_grant_prefix_parse(const char *s, struct sw_s3_uri *out, const char **why)
{
    const char *w = NULL;
    if (sw_s3_uri_parse(s, out, &w) != 0) {
        if (why)
            *why = w;
        return SW_EINVAL;
    }
    size_t pl = strlen(out->prefix);
    if (pl > 0 && out->prefix[pl - 1] != '/')
        w = "expected the whole bucket (s3://BUCKET/) or a prefix ending in '/'";
    else if (odd_segments(out->prefix))
        w = "expected no \".\" or \"..\" segment and no \"//\" in the prefix";
    if (w != NULL) {
        memset(out, 0, sizeof(*out));
        if (why)
            *why = w;
        return SW_EINVAL;
    }
    return 0;
}

bool sw_grant_covers(const struct sw_s3_uri *granted, size_t n, const struct sw_s3_uri *u)
{
    if (odd_segments(u->prefix))
        return false;
    for (size_t i = 0; i < n; i++) {
        size_t gl = strlen(granted[i].prefix);
        if (strcmp(granted[i].bucket, u->bucket) == 0 &&
            strncmp(granted[i].prefix, u->prefix, gl) == 0)
            return true;
    }
    return false;
}

/* "s3://a/x/, s3://b/" or "none" into buf. */
static void list_prefixes(const struct sw_s3_uri *p, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    if (n == 0) {
        snprintf(buf, len, "none");
        return;
    }
    for (size_t i = 0; i < n && used + 1 < len; i++) {
        int k = snprintf(buf + used, len - used, "%ss3://%s/%s", i ? ", " : "", p[i].bucket,
                         p[i].prefix);
        if (k < 0 || (size_t)k >= len - used) {
            buf[len - 1] = '\0';
            return;
        }
        used += (size_t)k;
    }
}

static void list_prios(unsigned mask, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int p = SW_PRIO_BEST_EFFORT; p <= SW_PRIO_PRODUCTION; p++) {
        if (!(mask & (1u << p)))
            continue;
        int k = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                         sw_priority_name((enum sw_priority_class)p));
        if (k < 0 || (size_t)k >= len - used)
            return;
        used += (size_t)k;
    }
}

int sw_tenancy_apply(const struct sw_tenancy *t, const char *cluster, const char *ns,
                     struct sw_burst_spec *spec, struct sw_error *err)
{
    const struct sw_grant *g = sw_tenancy_find(t, cluster, ns);
    char who[160];
    snprintf(who, sizeof(who), "namespace %s of cluster %s", ns, cluster);
    const char *granted = g ? "is granted" : "has no grant (tenancy.grants) and so may use";

    /* The team: the grant's, the namespace's own without one. */
    const char *def_team = g && g->nteams > 0 ? g->teams[0] : ns;
    if (spec->team[0] != '\0') {
        bool ok = g && g->nteams > 0 ? false : strcmp(spec->team, ns) == 0;
        for (size_t i = 0; g && i < g->nteams && !ok; i++)
            ok = strcmp(g->teams[i], spec->team) == 0;
        if (!ok) {
            char teams[SW_GRANT_MAX_TEAMS * 66] = "";
            size_t used = 0;
            for (size_t i = 0; g && i < g->nteams; i++)
                used += (size_t)snprintf(teams + used, sizeof(teams) - used, "%s%s", i ? ", " : "",
                                         g->teams[i]);
            return sw_error_set(err, SW_EFORBIDDEN,
                                "annotation \"" SW_ANN_TEAM "\": value \"%s\": %s %s team %s",
                                spec->team, who, granted, g && g->nteams > 0 ? teams : ns);
        }
    } else {
        snprintf(spec->team, sizeof(spec->team), "%s", def_team);
    }

    /* The priority. */
    unsigned mask = g && g->prio_mask ? g->prio_mask : SW_GRANT_DEFAULT_PRIOS;
    if (!(mask & (1u << spec->prio))) {
        char prios[96];
        list_prios(mask, prios, sizeof(prios));
        if (spec->prio_set)
            return sw_error_set(err, SW_EFORBIDDEN,
                                "annotation \"" SW_ANN_PRIORITY
                                "\": value \"%s\": %s %s the priorities %s",
                                sw_priority_name(spec->prio), who, granted, prios);
        /* No annotation: training is not allowed; the highest allowed below
         * it, else the lowest above. */
        int p = (int)spec->prio;
        while (p >= SW_PRIO_BEST_EFFORT && !(mask & (1u << p)))
            p--;
        if (p < SW_PRIO_BEST_EFFORT)
            for (p = (int)spec->prio; p <= SW_PRIO_PRODUCTION && !(mask & (1u << p)); p++)
                ;
        spec->prio = (enum sw_priority_class)p;
    }

    /* The data: every prefix within what the namespace may read or write,
     * decided before anything is listed. */
    static const struct sw_s3_uri none[1];
    const struct sw_s3_uri *rd = g ? g->read : none;
    size_t nrd = g ? g->nread : 0;
    for (int i = 0; i < spec->n_inputs; i++) {
        if (sw_grant_covers(rd, nrd, &spec->inputs[i]))
            continue;
        char list[400];
        list_prefixes(rd, nrd, list, sizeof(list));
        return sw_error_set(err, SW_EFORBIDDEN,
                            "annotation \"" SW_ANN_INPUTS "\": input %d \"s3://%s/%.200s\": %s %s "
                            "reading %s",
                            i + 1, spec->inputs[i].bucket, spec->inputs[i].prefix, who, granted,
                            list);
    }
    if (spec->has_outputs) {
        const struct sw_s3_uri *wr = g ? g->write : none;
        size_t nwr = g ? g->nwrite : 0;
        if (!sw_grant_covers(wr, nwr, &spec->outputs)) {
            char list[400];
            list_prefixes(wr, nwr, list, sizeof(list));
            return sw_error_set(err, SW_EFORBIDDEN,
                                "annotation \"" SW_ANN_OUTPUTS "\": \"s3://%s/%.200s\": %s %s "
                                "writing %s",
                                spec->outputs.bucket, spec->outputs.prefix, who, granted, list);
        }
    }
    return 0;
}

bool sw_tenancy_existing_ns(const struct sw_tenancy *t, const char *cluster, const char *ns)
{
    const struct sw_grant *g = sw_tenancy_find(t, cluster, ns);
    return g != NULL && g->existing_ns;
}
