/*
 * cluster.c - `spillctl cluster add|list|show|remove`.
 *
 * `add` validates before it stores anything: it connects with the
 * kubeconfig's credentials, reads the server version, and asks the API
 * server (SelfSubjectAccessReview) about every permission spillway needs,
 * naming each one that is missing. Only then is the record, with the
 * connection sealed, written to Redis. `list` and `show` probe each
 * cluster live (/readyz, nodes, pods) for health and free/total GPUs per
 * pool; `list` prints with -o table, wide, json or yaml. No credential is
 * ever printed. Redis and the sealing key come from the global options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusters/capacity.h"
#include "clusters/health.h"
#include "clusters/kubeconfig.h"
#include "clusters/nodepool.h"
#include "clusters/rbac.h"
#include "clusters/registry.h"
#include "clusters/rest.h"
#include "clusters/spec.h"
#include "common/alloc.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/cli/commands.h"
#include "controller/cli/output.h"
#include "controller/hub/jobrec.h"
#include "net/http.h"
#include "store/redis.h"
#include "store/seal.h"

struct args {
    const struct sw_cli_globals *g;
    const char *cmd;
    const char *name;
    const char *kubeconfig;
    const char *context;
    char redis[SW_CLI_REDIS_URL_MAX]; /* with its password: wiped by cmd_* */
    const char *spec_file;
    const char *role;
    const char *region;
    const char *local_queue;
    int replace;
    int dry_run;
    int no_probe;
    struct sw_cluster_spec flags_spec;
};

enum {
    OPT_KUBECONFIG = 'k',
    OPT_CONTEXT = 'c',
    OPT_ROLE = 'r',
    OPT_REGION = 'g',
    OPT_POOL = 'p',
    OPT_LOCAL_QUEUE = 'q',
    OPT_SPEC = 's',
    OPT_REPLACE = 'R',
    OPT_DRY_RUN = 'D',
    OPT_NO_PROBE = 'n',
    OPT_NAMESPACES = 'N'
};

/* Fills *a from the parsed command line; 0 or SW_EXIT_USAGE. */
static int from_args(const struct sw_cli_args *pa, struct args *a)
{
    struct sw_error err;
    for (size_t k = 0; k < pa->n; k++) {
        const char *v = pa->item[k].value;
        switch (pa->item[k].opt->key) {
        case OPT_KUBECONFIG:
            a->kubeconfig = v;
            break;
        case OPT_CONTEXT:
            a->context = v;
            break;
        case OPT_ROLE:
            a->role = v;
            break;
        case OPT_REGION:
            a->region = v;
            break;
        case OPT_LOCAL_QUEUE:
            if (sw_cluster_local_queue_check(v, "--local-queue", &err) != 0) {
                fprintf(stderr, "spillctl cluster %s: %s\n", a->cmd, err.msg);
                return SW_EXIT_USAGE;
            }
            a->local_queue = v;
            break;
        case OPT_POOL:
            if (sw_pool_flag_parse(v, &a->flags_spec, &err) != 0) {
                fprintf(stderr, "spillctl cluster %s: %s\n", a->cmd, err.msg);
                return SW_EXIT_USAGE;
            }
            break;
        case OPT_NAMESPACES:
            if (sw_cluster_namespaces_flag(&a->flags_spec, v, "--namespaces", &err) != 0) {
                fprintf(stderr, "spillctl cluster %s: %s\n", a->cmd, err.msg);
                return SW_EXIT_USAGE;
            }
            break;
        case OPT_SPEC:
            a->spec_file = v;
            break;
        case OPT_REPLACE:
            a->replace = 1;
            break;
        case OPT_DRY_RUN:
            a->dry_run = 1;
            break;
        case OPT_NO_PROBE:
            a->no_probe = 1;
            break;
        }
    }
    if (pa->npos > 0)
        a->name = pa->pos[0];
    return 0;
}

/* ---- helpers: one loop, blocking steps ---------------------------------- */

struct env {
    uv_loop_t loop;
    struct sw_http *http;
    struct sw_redis *redis;
};

static void env_close(struct env *e)
{
    if (e->redis)
        sw_redis_free(e->redis);
    if (e->http)
        sw_http_free(e->http);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    uv_loop_close(&e->loop);
}

static int env_open(struct env *e, const char *redis_url, const char *cmd)
{
    memset(e, 0, sizeof(*e));
    if (uv_loop_init(&e->loop) != 0 || sw_http_new(&e->loop, &e->http) != 0) {
        fprintf(stderr, "spillctl cluster %s: cannot start the event loop\n", cmd);
        return SW_EXIT_FAIL;
    }
    if (redis_url == NULL)
        return 0;
    /* Reached first as every other command reaches it, so that an
     * unreachable Redis is said in the same words (sw_redis_sync_connect's)
     * rather than by the reconnecting client's log. */
    struct sw_error err;
    redisContext *probe = NULL;
    if (sw_redis_sync_connect(redis_url, 5000, &probe, &err) == 0) {
        sw_redis_sync_free(probe);
        if (sw_redis_connect(&e->loop, redis_url, NULL, NULL, &e->redis, &err) == 0)
            return 0;
    }
    fprintf(stderr, "spillctl cluster %s: %s\n", cmd, err.msg);
    env_close(e); /* a caller closes nothing after a failure */
    return SW_EXIT_FAIL;
}

struct wait {
    int done;
    int rc;
    struct sw_error err;
    cJSON *body;
    long status;
};

static void on_kube(struct sw_kube_result *res, void *ctx)
{
    struct wait *w = ctx;
    w->done = 1;
    w->rc = res->rc;
    w->status = res->status;
    w->err = res->err;
    w->body = res->body;
    res->body = NULL;
}

/* Fills a->redis with the URL to connect to, password included. */
static int need_redis(struct args *a)
{
    struct sw_error err;
    if (sw_cli_redis_url(a->g, a->redis, sizeof(a->redis), &err) != 0) {
        fprintf(stderr, "spillctl cluster %s: %s\n", a->cmd, err.msg);
        return a->g->redis_url == NULL ? SW_EXIT_USAGE : SW_EXIT_FAIL;
    }
    return 0;
}

/* ---- add ---------------------------------------------------------------- */

/*
 * What spillway does on a member cluster: the permissions of
 * deploy/rbac/member-clusterrole.yaml, which names the code that uses each,
 * or, for a member registered with namespaces, of the narrow role's two
 * parts (deploy/rbac/narrow). The files are built into spillctl
 * (cmake/embed.cmake), so the roles a platform team applies and the lists
 * checked here are one.
 */
extern const char sw_member_role_yaml[];
extern const unsigned long sw_member_role_yaml_len;
extern const char sw_member_cluster_role_yaml[];
extern const unsigned long sw_member_cluster_role_yaml_len;
extern const char sw_member_namespace_role_yaml[];
extern const unsigned long sw_member_namespace_role_yaml_len;

struct ssar {
    int done;
    int allowed;
    int rc;
    char why[300];
};

static void on_ssar(struct sw_kube_result *res, void *ctx)
{
    struct ssar *s = ctx;
    s->done = 1;
    s->rc = res->rc;
    if (res->rc != 0) {
        snprintf(s->why, sizeof(s->why), "%.299s", res->err.msg);
        return;
    }
    bool allowed = false;
    sw_json_bool(res->body, "status.allowed", false, "SelfSubjectAccessReview", &allowed, NULL);
    s->allowed = allowed;
}

/* The reviews of the role `spec` calls for: the wide role in every
 * namespace, or the narrow role's cluster part cluster-wide and its
 * namespace part in each listed namespace. */
static int plan_reviews(const struct sw_cluster_spec *spec, const char *name,
                        struct sw_rbac_review **out, size_t *n)
{
    struct sw_rbac_perm *cl = NULL, *pn = NULL;
    size_t ncl = 0, npn = 0;
    struct sw_error err;
    int rc;
    if (spec->nnamespaces == 0)
        rc = sw_rbac_parse(sw_member_role_yaml, sw_member_role_yaml_len,
                           "deploy/rbac/member-clusterrole.yaml (built in)", &cl, &ncl, &err);
    else if ((rc = sw_rbac_parse(sw_member_cluster_role_yaml, sw_member_cluster_role_yaml_len,
                                 "deploy/rbac/narrow/member-cluster-clusterrole.yaml (built in)",
                                 &cl, &ncl, &err)) == 0)
        rc = sw_rbac_parse(sw_member_namespace_role_yaml, sw_member_namespace_role_yaml_len,
                           "deploy/rbac/narrow/member-namespace-clusterrole.yaml (built in)", &pn,
                           &npn, &err);
    if (rc != 0)
        fprintf(stderr, "spillctl cluster add %s: %s\n", name, err.msg);
    else if ((rc = sw_rbac_reviews(cl, ncl, pn, npn, spec->namespaces, spec->nnamespaces, out,
                                   n)) != 0)
        fprintf(stderr, "spillctl cluster add %s: cannot check permissions: %s\n", name,
                sw_strerror(rc));
    sw_free(cl);
    sw_free(pn);
    return rc;
}

/* Asks about every permission at once; returns the number missing, or -1. */
static int check_permissions(struct env *e, struct sw_kube_client *c, const char *name,
                             const struct sw_cluster_spec *spec)
{
    struct sw_rbac_review *rv = NULL;
    size_t nrv = 0;
    if (plan_reviews(spec, name, &rv, &nrv) != 0)
        return -1;
    struct ssar *res = sw_calloc(nrv, sizeof(*res));
    if (res == NULL) {
        sw_free(rv);
        return -1;
    }
    size_t sent = 0;
    for (; sent < nrv; sent++) {
        char body[640];
        if (sw_rbac_review_body(&rv[sent], body, sizeof(body)) != 0)
            break;
        struct sw_kube_req r = {.method = "POST",
                                .path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                .body = body,
                                .body_len = strlen(body)};
        if (sw_kube_send(c, &r, on_ssar, &res[sent], NULL) != 0)
            break;
    }
    /* Every request sent is awaited: each holds a pointer into res. */
    for (size_t i = 0; i < sent; i++)
        sw_kube_run_until(&e->loop, &res[i].done);
    int missing = sent < nrv ? -1 : 0;
    if (missing < 0)
        fprintf(stderr, "spillctl cluster add %s: cannot check permissions: out of memory\n", name);
    for (size_t i = 0; missing >= 0 && i < nrv; i++) {
        if (res[i].rc != 0) {
            fprintf(stderr, "spillctl cluster add %s: cannot check permissions: %s\n", name,
                    res[i].why);
            missing = -1;
            break;
        }
        if (!res[i].allowed) {
            if (missing++ == 0)
                fprintf(stderr,
                        "spillctl cluster add %s: the kubeconfig's credentials lack "
                        "permissions spillway needs:\n",
                        name);
            char what[300];
            sw_rbac_review_str(&rv[i], what, sizeof(what));
            fprintf(stderr, "  - %s\n", what);
        }
    }
    if (missing > 0)
        fprintf(stderr, "Grant them (%s) and run add again. Nothing was stored.\n",
                spec->nnamespaces == 0
                    ? "deploy/rbac/member-clusterrole.yaml"
                    : "deploy/rbac/narrow: spillway-member-cluster bound cluster-wide, "
                      "spillway-member-namespace bound in each namespace listed");
    sw_free(res);
    sw_free(rv);
    return missing;
}

struct put_wait {
    int done;
    int rc;
    struct sw_error err;
};

static void on_put(int rc, const struct sw_error *err, void *ctx)
{
    struct put_wait *w = ctx;
    w->done = 1;
    w->rc = rc;
    if (err)
        w->err = *err;
}

static int load_spec(struct args *a, struct sw_cluster_spec *spec)
{
    struct sw_error err;
    memset(spec, 0, sizeof(*spec));
    if (a->spec_file != NULL) {
        char *text;
        size_t len;
        if (sw_read_file(a->spec_file, 1 << 20, "cluster spec", &text, &len, &err) != 0 ||
            (sw_cluster_spec_parse(text, len, a->spec_file, spec, &err) != 0 &&
             (sw_free(text), 1))) {
            fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, err.msg);
            return SW_EXIT_USAGE; /* as a bad flag: the spec file holds flags */
        }
        sw_free(text);
    }
    if (a->role != NULL && sw_cluster_role_parse(a->role, &spec->role) != 0) {
        fprintf(stderr, "spillctl cluster add %s: --role: expected onprem or cloud, got \"%s\"\n",
                a->name, a->role);
        return SW_EXIT_USAGE;
    }
    if (a->region != NULL)
        snprintf(spec->region, sizeof(spec->region), "%s", a->region);
    if (a->local_queue != NULL)
        snprintf(spec->local_queue, sizeof(spec->local_queue), "%s", a->local_queue);
    if (a->flags_spec.nnamespaces > 0) { /* --namespaces replaces the file's list */
        memcpy(spec->namespaces, a->flags_spec.namespaces, sizeof(spec->namespaces));
        spec->nnamespaces = a->flags_spec.nnamespaces;
    }
    for (size_t i = 0; i < a->flags_spec.npools; i++) {
        if (spec->npools >= SW_MAX_POOLS) {
            fprintf(stderr, "spillctl cluster add %s: at most %d pools\n", a->name, SW_MAX_POOLS);
            return SW_EXIT_USAGE;
        }
        spec->pools[spec->npools++] = a->flags_spec.pools[i];
    }
    /* The validator names what it read: the spec file, else the command
     * itself (its flags), so that the prefix is not said twice. */
    char what[600];
    if (a->spec_file != NULL)
        snprintf(what, sizeof(what), "spillctl cluster add %s: cluster spec \"%s\"", a->name,
                 a->spec_file);
    else
        snprintf(what, sizeof(what), "spillctl cluster add %s", a->name);
    if (sw_cluster_spec_validate(spec, what, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    return 0;
}

/* Whether the credentials may list Karpenter's NodePools (one review). */
static bool may_list_nodepools(struct env *e, struct sw_kube_client *c)
{
    static const char body[] =
        "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","
        "\"spec\":{\"resourceAttributes\":{\"group\":\"karpenter.sh\",\"resource\":"
        "\"nodepools\",\"verb\":\"list\"}}}";
    struct ssar res = {0};
    struct sw_kube_req r = {.method = "POST",
                            .path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                            .body = body,
                            .body_len = sizeof(body) - 1};
    if (sw_kube_send(c, &r, on_ssar, &res, NULL) != 0)
        return false;
    sw_kube_run_until(&e->loop, &res.done);
    return res.rc == 0 && res.allowed;
}

/*
 * The pools' NodePools: each bound one must exist and have a GPU limit
 * (and serve the pool's capacity type); a cloud pool bound to none is bound
 * to the one NodePool that serves its capacity type and GPU product, when
 * exactly one does. Listing the NodePools (and a NodeClaim) also shows the
 * credentials may list what the hub watches. Returns 0, or prints why not.
 */
static int check_nodepools(struct env *e, struct sw_kube_client *c, const char *name,
                           struct sw_cluster_spec *spec)
{
    bool bound = false;
    for (size_t i = 0; i < spec->npools; i++)
        bound = bound || spec->pools[i].nodepool[0];
    if (spec->role != SW_ROLE_CLOUD)
        return 0;
    /* Discovery only with leave to list them: a refused request is one a
     * least-privilege audit would count against spillway. */
    if (!bound && !may_list_nodepools(e, c))
        return 0;
    struct wait w = {0}, wc = {0};
    struct sw_kube_list_opts lo = {0};
    if (sw_kube_list(c, SW_KIND_NODEPOOL, NULL, &lo, on_kube, &w) != 0)
        return -1;
    sw_kube_run_until(&e->loop, &w.done);
    if (w.rc != 0) {
        cJSON_Delete(w.body);
        if (!bound)
            return 0; /* no Karpenter there, and none asked for */
        fprintf(stderr,
                "spillctl cluster add %s: cannot list Karpenter's NodePools (karpenter.sh/v1 "
                "nodepools): %s\n",
                name, w.err.msg);
        return -1;
    }
    lo.limit = 1;
    if (bound && sw_kube_list(c, SW_KIND_NODECLAIM, NULL, &lo, on_kube, &wc) == 0) {
        sw_kube_run_until(&e->loop, &wc.done);
        cJSON_Delete(wc.body);
        if (wc.rc != 0) {
            fprintf(stderr,
                    "spillctl cluster add %s: cannot list Karpenter's NodeClaims (karpenter.sh/v1 "
                    "nodeclaims), which the hub watches: %s\n",
                    name, wc.err.msg);
            cJSON_Delete(w.body);
            return -1;
        }
    }
    const cJSON *items = sw_json_child(w.body, "items"), *it;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < spec->npools; i++) {
        struct sw_pool_spec *ps = &spec->pools[i];
        struct sw_nodepool_facts f, found = {0};
        struct sw_error err;
        int serving = 0;
        bool have = false;
        cJSON_ArrayForEach(it, items)
        {
            if (sw_nodepool_facts_from_json(it, &f, &err) != 0)
                continue;
            if (ps->nodepool[0] && strcmp(f.name, ps->nodepool) == 0) {
                found = f;
                have = true;
            }
            if (!ps->nodepool[0] && sw_nodepool_serves(&f, ps->capacity_type, ps->gpu_product) &&
                serving++ == 0)
                found = f;
        }
        if (!ps->nodepool[0]) {
            if (serving == 1 && found.gpu_limit >= 0 && strcmp(ps->capacity_type, "owned") != 0) {
                snprintf(ps->nodepool, sizeof(ps->nodepool), "%.*s", (int)sizeof(ps->nodepool) - 1,
                         found.name);
                printf("pool %s: bound to NodePool %s (it alone serves %s %s; nodepool=NAME "
                       "chooses)\n",
                       ps->name, ps->nodepool, ps->capacity_type, ps->gpu_product);
            }
            continue;
        }
        if (!have) {
            fprintf(stderr,
                    "spillctl cluster add %s: pool \"%s\": NodePool \"%s\" does not exist in "
                    "the cluster (kubectl get nodepools lists them)\n",
                    name, ps->name, ps->nodepool);
            rc = -1;
        } else if (found.gpu_limit < 0) {
            fprintf(stderr,
                    "spillctl cluster add %s: pool \"%s\": NodePool \"%s\" has no GPU limit; "
                    "set spec.limits.nvidia.com/gpu, the pool's ceiling\n",
                    name, ps->name, ps->nodepool);
            rc = -1;
        } else if (found.capacity_type != NULL &&
                   strcmp(found.capacity_type, ps->capacity_type) != 0) {
            fprintf(stderr,
                    "spillctl cluster add %s: pool \"%s\": NodePool \"%s\" provisions %s "
                    "capacity, not %s\n",
                    name, ps->name, ps->nodepool, found.capacity_type, ps->capacity_type);
            rc = -1;
        }
    }
    cJSON_Delete(w.body);
    return rc;
}

static int cmd_add(struct args *a)
{
    if (a->name == NULL || !sw_name_valid(a->name)) {
        fprintf(stderr,
                "spillctl cluster add: expected a cluster NAME of 1-63 lowercase "
                "letters, digits and '-'%s%s%s\n",
                a->name ? ", got \"" : "", a->name ? a->name : "", a->name ? "\"" : "");
        return SW_EXIT_USAGE;
    }
    /* As kubectl: --kubeconfig FILE, else $KUBECONFIG (files separated by
     * ':', merged), else the pod's own cluster when in one. */
    const char *env_list = getenv("KUBECONFIG");
    const char *kubeconfigs = a->kubeconfig != NULL
                                  ? a->kubeconfig
                                  : (env_list != NULL && env_list[0] != '\0' ? env_list : NULL);
    if (kubeconfigs == NULL && !sw_kube_incluster_available() && !a->dry_run) {
        fprintf(stderr,
                "spillctl cluster add %s: --kubeconfig FILE (or KUBECONFIG) is required outside "
                "a cluster (in-cluster configuration needs KUBERNETES_SERVICE_HOST, "
                "KUBERNETES_SERVICE_PORT and a token in \"%s\")\n",
                a->name, sw_kube_serviceaccount_dir());
        return SW_EXIT_USAGE;
    }
    if (kubeconfigs == NULL && a->context != NULL) {
        fprintf(stderr,
                "spillctl cluster add %s: --context needs a kubeconfig (--kubeconfig FILE or "
                "KUBECONFIG); the in-cluster configuration has no contexts\n",
                a->name);
        return SW_EXIT_USAGE;
    }
    if (a->dry_run) {
        /* The spec file, the flags and the kubeconfig: no cluster, Redis
         * or key. */
        struct sw_cluster_spec spec;
        int rc = load_spec(a, &spec);
        if (rc != 0)
            return rc;
        struct sw_kube_target *t = NULL;
        struct sw_error err;
        if (kubeconfigs != NULL &&
            (a->kubeconfig != NULL
                 ? sw_kubeconfig_load(a->kubeconfig, a->context, &t, &err)
                 : sw_kubeconfig_load_list(kubeconfigs, a->context, &t, &err)) != 0) {
            fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, err.msg);
            return SW_EXIT_USAGE;
        }
        printf("cluster %s: role %s, region %s, %zu pool%s%s%s; nothing contacted or stored "
               "(--dry-run)\n",
               a->name, sw_cluster_role_name(spec.role), spec.region, spec.npools,
               spec.npools == 1 ? "" : "s", spec.local_queue[0] ? ", LocalQueue " : "",
               spec.local_queue);
        if (t != NULL)
            printf("kubeconfig \"%s\": context %s, server %s\n", t->source, t->context, t->server);
        else if (sw_kube_incluster_available())
            printf("in-cluster configuration: the cluster this pod runs in\n");
        else
            printf("no kubeconfig: add needs --kubeconfig FILE or KUBECONFIG outside a pod\n");
        sw_kube_target_free(t);
        return SW_EXIT_OK;
    }
    int rc = need_redis(a);
    if (rc != 0)
        return rc;
    struct sw_cluster_record rec = {0};
    snprintf(rec.name, sizeof(rec.name), "%s", a->name);
    if ((rc = load_spec(a, &rec.spec)) != 0)
        return rc;
    struct sw_error err;
    struct sw_seal_key *key = NULL;
    if (sw_cli_secret_key(a->g, &key, &err) != 0) {
        fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, err.msg);
        return SW_EXIT_FAIL;
    }
    struct sw_kube_target *t = NULL;
    /* In a pod without --kubeconfig: the pod's own cluster. Its target
     * names the token file and holds no token, so what is sealed is the
     * file's path: the hub reads the token its own pod has, as it rotates. */
    if ((a->kubeconfig != NULL ? sw_kubeconfig_load(a->kubeconfig, a->context, &t, &err)
         : kubeconfigs != NULL ? sw_kubeconfig_load_list(kubeconfigs, a->context, &t, &err)
                               : sw_kube_incluster_load(&t, &err)) != 0) {
        fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, err.msg);
        sw_seal_key_free(key);
        /* A kubeconfig that cannot be read or does not parse: bad usage. */
        return kubeconfigs != NULL ? SW_EXIT_USAGE : SW_EXIT_FAIL;
    }
    snprintf(rec.server, sizeof(rec.server), "%s", t->server);
    snprintf(rec.context, sizeof(rec.context), "%s", t->context);
    snprintf(rec.auth_kind, sizeof(rec.auth_kind), "%s", sw_kube_target_auth_kind(t));

    struct env e;
    if (env_open(&e, a->redis, a->cmd) != 0) {
        sw_kube_target_free(t);
        sw_seal_key_free(key);
        return SW_EXIT_FAIL;
    }
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = a->name;
    o.max_retries = 2;
    struct sw_kube_client *c = NULL;
    int exit_code = SW_EXIT_FAIL;
    if (sw_kube_client_new(&e.loop, e.http, t, &o, &c, &err) != 0) {
        fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, err.msg);
        goto out;
    }
    /* 1. Connect and read the version. */
    struct wait w = {0};
    struct sw_kube_req vr = {.method = "GET", .path = "/version"};
    if (sw_kube_send(c, &vr, on_kube, &w, NULL) != 0)
        goto out;
    sw_kube_run_until(&e.loop, &w.done);
    if (w.rc != 0) {
        fprintf(stderr, "spillctl cluster add %s: cannot reach the API server at %s: %s\n", a->name,
                rec.server, w.err.msg);
        goto out;
    }
    const char *ver = "unknown";
    sw_json_string(w.body, "gitVersion", false, "version", &ver, NULL);
    snprintf(rec.server_version, sizeof(rec.server_version), "%s", ver);
    cJSON_Delete(w.body);
    /* 2. Permissions. */
    int missing = check_permissions(&e, c, a->name, &rec.spec);
    if (missing != 0)
        goto out;
    /* 2b. The NodePools the pools' capacity comes from. */
    if (check_nodepools(&e, c, a->name, &rec.spec) != 0)
        goto out;
    /* 3. Seal and store. */
    rec.created_ms = (int64_t)time(NULL) * 1000;
    if (sw_cluster_record_seal(&rec, sw_kube_client_target(c), key, &err) != 0) {
        fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, err.msg);
        goto out;
    }
    struct put_wait pw = {0};
    if ((rc = sw_registry_put(e.redis, &rec, a->replace, on_put, &pw)) != 0) {
        fprintf(stderr, "spillctl cluster add %s: redis: %s\n", a->name, sw_strerror(rc));
        goto out;
    }
    sw_kube_run_until(&e.loop, &pw.done);
    if (pw.rc != 0) {
        fprintf(stderr, "spillctl cluster add %s: %s\n", a->name, pw.err.msg);
        goto out;
    }
    printf("cluster %s added: %s (Kubernetes %s), auth %s, role %s, region %s, %zu pool%s; "
           "credentials sealed with key %08x\n",
           rec.name, rec.server, rec.server_version, rec.auth_kind,
           sw_cluster_role_name(rec.spec.role), rec.spec.region, rec.spec.npools,
           rec.spec.npools == 1 ? "" : "s", (unsigned)sw_seal_key_id(key));
    exit_code = SW_EXIT_OK;
out:
    sw_kube_client_free(c);
    env_close(&e);
    sw_cluster_record_clear(&rec);
    sw_seal_key_free(key);
    return exit_code;
}

/* ---- list / show -------------------------------------------------------- */

struct probe {
    struct sw_cluster_record rec;
    struct sw_kube_client *c;
    const char *problem; /* why it was not probed */
    char problem_buf[SW_ERROR_MSG_MAX];
    struct wait ready, nodes, pods;
    struct sw_health health;
    struct sw_gpu_capacity cap;
    int have_cap;
    /* Pools bound to a NodePool (by index in rec.spec): figures, or why none. */
    struct wait nodepools, nodeclaims;
    struct sw_nodepool_capacity np[SW_MAX_POOLS];
    char np_problem[SW_MAX_POOLS][200];
    /* the leading hub's view (spillway:hub:members), when a hub runs */
    char hub_state[24]; /* "" none, Ready, Degraded, Unreachable, lost, fenced */
    int64_t hub_since_ms;
};

/*
 * Fills each probe's hub view from the health key the leading hub writes:
 * "lost" or "fenced" when it is, else the hub's probe state, with the time
 * it changed. No key (no hub running) leaves them empty.
 */
static void hub_views(const char *url, struct probe *probes, size_t n)
{
    redisContext *c = NULL;
    redisReply *rep = NULL;
    struct sw_error err;
    if (sw_redis_sync_connect(url, 3000, &c, &err) != 0)
        return;
    if (sw_redis_sync_command(c, &rep, &err, "GET %s", SW_KEY_HEALTH) == 0 &&
        rep->type == REDIS_REPLY_STRING) {
        cJSON *top = cJSON_Parse(rep->str);
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(top, "members"))
        {
            const char *name = sw_json_str(m, "name");
            for (size_t i = 0; name && i < n; i++) {
                struct probe *p = &probes[i];
                if (strcmp(p->rec.name, name) != 0)
                    continue;
                const cJSON *lost = cJSON_GetObjectItemCaseSensitive(m, "lost");
                const cJSON *fenced = cJSON_GetObjectItemCaseSensitive(m, "fenced");
                const char *health = sw_json_str(m, "health");
                double since = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(m, "sinceMs"));
                if (cJSON_IsTrue(fenced)) {
                    snprintf(p->hub_state, sizeof(p->hub_state), "fenced");
                } else if (cJSON_IsTrue(lost)) {
                    snprintf(p->hub_state, sizeof(p->hub_state), "lost");
                    since =
                        cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(m, "lostSinceMs"));
                } else {
                    snprintf(p->hub_state, sizeof(p->hub_state), "%s", health ? health : "Unknown");
                }
                p->hub_since_ms = since > 0 ? (int64_t)since : 0;
            }
        }
        cJSON_Delete(top);
    }
    if (rep)
        freeReplyObject(rep);
    redisFree(c);
}

/* "lost 42s", "Ready 3h2m": the hub's view for the table. */
static void hub_view_text(const struct probe *p, char *out, size_t len)
{
    if (p->hub_state[0] == '\0') {
        snprintf(out, len, "-");
        return;
    }
    int64_t s = p->hub_since_ms ? ((int64_t)time(NULL) * 1000 - p->hub_since_ms) / 1000 : -1;
    if (s < 0)
        snprintf(out, len, "%s", p->hub_state);
    else if (s < 120)
        snprintf(out, len, "%s %llds", p->hub_state, (long long)s);
    else if (s < 7200)
        snprintf(out, len, "%s %lldm", p->hub_state, (long long)(s / 60));
    else
        snprintf(out, len, "%s %lldh%lldm", p->hub_state, (long long)(s / 3600),
                 (long long)(s / 60 % 60));
}

static void on_ready(struct sw_kube_result *res, void *ctx)
{
    struct wait *w = ctx;
    w->done = 1;
    w->rc = res->rc;
    w->status = res->status;
    w->err = res->err;
    /* Keep the failing checks of a non-200 /readyz as the reason. */
    if (res->status != 0 && res->status != 200 && res->raw != NULL)
        snprintf(w->err.msg, sizeof(w->err.msg), "%.*s",
                 (int)(res->raw_len > 200 ? 200 : res->raw_len), res->raw);
}

static void start_probe(struct env *e, struct probe *p, const struct sw_seal_key *key)
{
    struct sw_error err;
    struct sw_kube_target *t = NULL;
    if (key == NULL) {
        p->problem = "no secret key to open the credentials";
        return;
    }
    if (sw_cluster_record_open(&p->rec, key, &t, &err) != 0) {
        snprintf(p->problem_buf, sizeof(p->problem_buf), "%s", err.msg);
        p->problem = p->problem_buf;
        return;
    }
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = p->rec.name;
    o.max_retries = 1;
    o.timeout_ms = 10000;
    if (sw_kube_client_new(&e->loop, e->http, t, &o, &p->c, &err) != 0) {
        snprintf(p->problem_buf, sizeof(p->problem_buf), "%s", err.msg);
        p->problem = p->problem_buf;
        return;
    }
    struct sw_kube_req r = {
        .method = "GET", .path = "/readyz?verbose", .raw = 1, .no_retry = 1, .timeout_ms = 5000};
    sw_kube_send(p->c, &r, on_ready, &p->ready, NULL);
    struct sw_kube_list_opts lo = {0};
    sw_kube_list(p->c, SW_KIND_NODE, NULL, &lo, on_kube, &p->nodes);
    lo.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
    sw_kube_list(p->c, SW_KIND_POD, NULL, &lo, on_kube, &p->pods);
    bool bound = false;
    for (size_t i = 0; i < p->rec.spec.npools; i++)
        bound = bound || p->rec.spec.pools[i].nodepool[0];
    lo.field_selector = NULL;
    p->nodepools.done = p->nodeclaims.done = 1;
    if (bound) {
        p->nodepools.done = p->nodeclaims.done = 0;
        sw_kube_list(p->c, SW_KIND_NODEPOOL, NULL, &lo, on_kube, &p->nodepools);
        sw_kube_list(p->c, SW_KIND_NODECLAIM, NULL, &lo, on_kube, &p->nodeclaims);
    }
}

/* The figures of each pool bound to a NodePool, from the lists. */
static void nodepool_figures(struct probe *p, const struct sw_node_facts *nf, size_t nn,
                             const struct sw_pod_facts *pf, size_t np)
{
    const cJSON *claims = sw_json_child(p->nodeclaims.body, "items"), *it;
    size_t nc = (size_t)cJSON_GetArraySize(claims), in = 0;
    struct sw_nodeclaim_facts *cf = sw_calloc(nc + 1, sizeof(*cf));
    struct sw_error err;
    cJSON_ArrayForEach(it, claims) if (cf && sw_nodeclaim_facts_from_json(it, &cf[in], &err) == 0)
        in++;
    for (size_t i = 0; i < p->rec.spec.npools; i++) {
        const struct sw_pool_spec *ps = &p->rec.spec.pools[i];
        char *why = p->np_problem[i];
        if (!ps->nodepool[0])
            continue;
        if (p->nodepools.rc != 0 || p->nodeclaims.rc != 0 || cf == NULL) {
            snprintf(why, sizeof(p->np_problem[i]), "cannot list NodePools and NodeClaims: %.150s",
                     p->nodepools.rc ? p->nodepools.err.msg : p->nodeclaims.err.msg);
            continue;
        }
        snprintf(why, sizeof(p->np_problem[i]), "NodePool %s does not exist", ps->nodepool);
        cJSON_ArrayForEach(it, sw_json_child(p->nodepools.body, "items"))
        {
            struct sw_nodepool_facts f;
            if (sw_nodepool_facts_from_json(it, &f, &err) != 0 || strcmp(f.name, ps->nodepool))
                continue;
            if (f.gpu_limit < 0) {
                snprintf(why, sizeof(p->np_problem[i]), "NodePool %s has no GPU limit",
                         ps->nodepool);
                break;
            }
            why[0] = '\0';
            sw_nodepool_capacity(&f, cf, in, nf, nn, pf, np, &p->np[i]);
        }
    }
    sw_free(cf);
}

static void finish_probe(struct env *e, struct probe *p)
{
    if (p->c == NULL)
        return;
    sw_kube_run_until(&e->loop, &p->ready.done);
    sw_kube_run_until(&e->loop, &p->nodes.done);
    sw_kube_run_until(&e->loop, &p->pods.done);
    sw_kube_run_until(&e->loop, &p->nodepools.done);
    sw_kube_run_until(&e->loop, &p->nodeclaims.done);
    struct sw_health_policy pol;
    sw_health_policy_default(&pol);
    pol.failure_threshold = 1; /* one look: no answer means unreachable */
    int transport = p->ready.status == 0 ? (p->ready.rc ? p->ready.rc : SW_ENET) : 0;
    sw_health_observe(&p->health, &pol, (int64_t)time(NULL) * 1000, transport, p->ready.status, 0,
                      p->ready.err.msg);
    if (p->nodes.rc == 0 && p->pods.rc == 0) {
        const cJSON *nitems = cJSON_GetObjectItemCaseSensitive(p->nodes.body, "items");
        const cJSON *pitems = cJSON_GetObjectItemCaseSensitive(p->pods.body, "items");
        size_t nn = (size_t)cJSON_GetArraySize(nitems), np = (size_t)cJSON_GetArraySize(pitems);
        struct sw_node_facts *nf = sw_calloc(nn + 1, sizeof(*nf));
        struct sw_pod_facts *pf = sw_calloc(np + 1, sizeof(*pf));
        size_t in = 0, ip = 0;
        const cJSON *it;
        struct sw_error err;
        cJSON_ArrayForEach(it, nitems) if (nf && sw_node_facts_from_json(it, &nf[in], &err) == 0)
            in++;
        cJSON_ArrayForEach(it, pitems) if (pf && sw_pod_facts_from_json(it, &pf[ip], &err) == 0)
            ip++;
        if (nf && pf && sw_capacity_compute(nf, in, pf, ip, &p->cap) == 0)
            p->have_cap = 1;
        if (nf && pf)
            nodepool_figures(p, nf, in, pf, ip);
        sw_free(nf);
        sw_free(pf);
    }
    cJSON_Delete(p->nodes.body);
    cJSON_Delete(p->pods.body);
    cJSON_Delete(p->nodepools.body);
    cJSON_Delete(p->nodeclaims.body);
    p->nodes.body = p->pods.body = p->nodepools.body = p->nodeclaims.body = NULL;
    sw_kube_client_free(p->c);
    p->c = NULL;
}

/* The registry pool a discovered pool belongs to, or NULL. */
static const struct sw_pool_spec *match_pool(const struct sw_cluster_spec *s,
                                             const struct sw_gpu_pool *p)
{
    for (size_t i = 0; i < s->npools; i++) {
        const struct sw_pool_spec *ps = &s->pools[i];
        char mem[32];
        snprintf(mem, sizeof(mem), "%lld", (long long)ps->gpu_memory_mib);
        if (strcmp(ps->capacity_type, p->capacity_type) == 0 &&
            strcmp(ps->gpu_product, p->gpu_product) == 0 &&
            (ps->gpu_memory_mib == 0 || strcmp(mem, p->gpu_memory) == 0) &&
            (ps->zone[0] == '\0' || strcmp(ps->zone, p->zone) == 0))
            return ps;
    }
    return NULL;
}

/* ---- list output -------------------------------------------------------- */

static const struct sw_cli_column list_columns[] = {
    {"NAME", "name", 0},
    {"ROLE", "role", 0},
    {"REGION", "region", 0},
    {"HEALTH", "health", 0},
    {"HUB", "hubView", 0},
    {"POOL", "pool", 0},
    {"FREE/TOTAL", "freeTotal", 0},
    {"PENDING", "pending", 0},
    {"NODES", "nodes", 0},
    {"CEILING", "ceiling", 0},
    {"ROOM", "room", 0},
    {"SERVER", "server", 1},
    {"KUBERNETES", "kubernetes", 1},
    {"AUTH", "auth", 1},
    {"REASON", "reason", 0},
};

static void iso_time(int64_t ms, char *out, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    out[0] = '\0';
    if (gmtime_r(&secs, &tm))
        strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Why a cluster has no capacity figures, or "" when it has them. */
static const char *probe_reason(const struct probe *p)
{
    if (p->problem != NULL)
        return p->problem;
    if (p->health.state != SW_HEALTH_READY && p->health.state != SW_HEALTH_UNKNOWN)
        return p->health.reason;
    if (p->have_cap && p->cap.npools == 0)
        return "no GPU nodes";
    return "";
}

/* What a pool's nodes advertise of shared and partitioned GPUs
 * (clusters/capacity.h): time-slicing ("timeSlicing": replicas per GPU and
 * the pool in thousandths of a GPU, or null) and MIG slices per profile. */
static void add_sharing(cJSON *po, const struct sw_gpu_pool *pool)
{
    if (pool->time_sliced) {
        cJSON *ts = cJSON_AddObjectToObject(po, "timeSlicing");
        cJSON_AddNumberToObject(ts, "replicas", (double)pool->replicas);
        cJSON_AddNumberToObject(ts, "milliFree", (double)pool->milli_free);
        cJSON_AddNumberToObject(ts, "milliTotal", (double)pool->milli_total);
    } else {
        cJSON_AddNullToObject(po, "timeSlicing");
    }
    cJSON *mig = cJSON_AddArrayToObject(po, "mig");
    for (size_t k = 0; mig && k < pool->nmig; k++) {
        cJSON *mo = cJSON_CreateObject();
        cJSON_AddItemToArray(mig, mo);
        cJSON_AddStringToObject(mo, "profile", pool->mig[k].profile);
        cJSON_AddNumberToObject(mo, "perGpu", pool->mig[k].per_gpu);
        cJSON_AddNumberToObject(mo, "free", (double)pool->mig[k].free);
        cJSON_AddNumberToObject(mo, "total", (double)pool->mig[k].total);
    }
}

/* One cluster as a -o json/yaml item; NULL when out of memory. */
static cJSON *probe_item(const struct probe *p, int probed)
{
    const struct sw_cluster_record *r = &p->rec;
    char when[64];
    iso_time(r->created_ms, when, sizeof(when));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "role", sw_cluster_role_name(r->spec.role));
    cJSON_AddStringToObject(o, "region", r->spec.region);
    if (r->spec.local_queue[0] != '\0')
        cJSON_AddStringToObject(o, "localQueue", r->spec.local_queue);
    if (r->spec.nnamespaces > 0) {
        cJSON *nss = cJSON_AddArrayToObject(o, "namespaces");
        for (size_t i = 0; nss != NULL && i < r->spec.nnamespaces; i++)
            cJSON_AddItemToArray(nss, cJSON_CreateString(r->spec.namespaces[i]));
    }
    cJSON_AddStringToObject(o, "server", r->server);
    cJSON_AddStringToObject(o, "kubernetes", r->server_version);
    cJSON_AddStringToObject(o, "auth", r->auth_kind);
    cJSON_AddStringToObject(o, "registered", when);
    if (!probed || p->problem != NULL)
        cJSON_AddNullToObject(o, "health");
    else
        cJSON_AddStringToObject(o, "health", sw_health_state_name(p->health.state));
    cJSON_AddStringToObject(o, "reason", probed ? probe_reason(p) : "not probed");
    char view[64];
    hub_view_text(p, view, sizeof(view));
    cJSON_AddStringToObject(o, "hubView", view);
    if (p->hub_state[0]) {
        cJSON *hv = cJSON_AddObjectToObject(o, "hub");
        cJSON_AddStringToObject(hv, "state", p->hub_state);
        char since[64];
        iso_time(p->hub_since_ms, since, sizeof(since));
        cJSON_AddStringToObject(hv, "since", since);
    } else {
        cJSON_AddNullToObject(o, "hub");
    }
    /* The pools as registered, then as found live (when probed). */
    cJSON *specs = cJSON_AddArrayToObject(o, "poolSpecs");
    for (size_t i = 0; specs && i < r->spec.npools; i++) {
        const struct sw_pool_spec *ps = &r->spec.pools[i];
        cJSON *so = cJSON_CreateObject();
        cJSON_AddItemToArray(specs, so);
        cJSON_AddStringToObject(so, "name", ps->name);
        cJSON_AddStringToObject(so, "capacityType", ps->capacity_type);
        cJSON_AddStringToObject(so, "gpuProduct", ps->gpu_product);
        cJSON_AddNumberToObject(so, "gpuMemoryMiB", (double)ps->gpu_memory_mib);
        if (ps->zone[0] != '\0')
            cJSON_AddStringToObject(so, "zone", ps->zone);
        else
            cJSON_AddNullToObject(so, "zone");
        cJSON_AddNumberToObject(so, "pricePerGpuHour", ps->price_per_gpu_hour);
        cJSON_AddNumberToObject(so, "maxGpus", (double)ps->max_gpus);
        if (!ps->nodepool[0]) {
            cJSON_AddNullToObject(so, "nodePool");
            continue;
        }
        cJSON_AddStringToObject(so, "nodePool", ps->nodepool);
        /* Its figures when probed (nodepool.h), or why there are none. */
        if (!probed || p->problem != NULL || !p->have_cap)
            continue;
        cJSON *ns = cJSON_AddObjectToObject(so, "nodePoolStatus");
        if (p->np_problem[i][0]) {
            cJSON_AddStringToObject(ns, "problem", p->np_problem[i]);
            continue;
        }
        const struct sw_nodepool_capacity *c = &p->np[i];
        cJSON_AddNumberToObject(ns, "ceiling", (double)c->limit);
        cJSON_AddNumberToObject(ns, "provisioned", (double)c->provisioned);
        cJSON_AddNumberToObject(ns, "launching", (double)c->launching);
        cJSON_AddNumberToObject(ns, "waiting", (double)c->waiting);
        cJSON_AddNumberToObject(ns, "room", (double)c->room);
        cJSON_AddNumberToObject(ns, "nodes", c->nodes);
        cJSON_AddNumberToObject(ns, "idle", (double)c->idle);
        cJSON_AddNumberToObject(ns, "free", (double)c->free);
    }
    cJSON *pools = cJSON_AddArrayToObject(o, "pools");
    for (size_t i = 0; p->have_cap && pools && i < p->cap.npools; i++) {
        const struct sw_gpu_pool *pool = &p->cap.pools[i];
        const struct sw_pool_spec *ps = match_pool(&r->spec, pool);
        cJSON *po = cJSON_CreateObject();
        cJSON_AddItemToArray(pools, po);
        if (ps != NULL)
            cJSON_AddStringToObject(po, "name", ps->name);
        else
            cJSON_AddNullToObject(po, "name");
        cJSON_AddStringToObject(po, "key", pool->key);
        cJSON_AddNumberToObject(po, "free", (double)pool->free);
        cJSON_AddNumberToObject(po, "total", (double)pool->total);
        cJSON_AddNumberToObject(po, "pending", (double)pool->pending);
        cJSON_AddNumberToObject(po, "nodes", pool->nodes);
        cJSON_AddNumberToObject(po, "nodesExcluded", pool->nodes_excluded);
        /* Fixed nodes: the ceiling is what they hold, no room to add. */
        cJSON_AddNumberToObject(po, "ceiling", (double)pool->total);
        cJSON_AddNumberToObject(po, "room", 0);
        add_sharing(po, pool);
    }
    /* A pool bound to a NodePool is a row of its own: it may have no node. */
    for (size_t i = 0; p->have_cap && pools && i < r->spec.npools; i++) {
        const struct sw_pool_spec *ps = &r->spec.pools[i];
        if (!ps->nodepool[0] || p->np_problem[i][0])
            continue;
        const struct sw_nodepool_capacity *c = &p->np[i];
        cJSON *po = cJSON_CreateObject();
        cJSON_AddItemToArray(pools, po);
        char key[SW_CLUSTER_NAME_MAX + 16];
        snprintf(key, sizeof(key), "nodepool/%s", ps->nodepool);
        cJSON_AddStringToObject(po, "name", ps->name);
        cJSON_AddStringToObject(po, "key", key);
        cJSON_AddNumberToObject(po, "free", (double)c->free);
        cJSON_AddNumberToObject(po, "total", (double)c->limit);
        cJSON_AddNumberToObject(po, "pending", (double)c->pending);
        cJSON_AddNumberToObject(po, "nodes", c->nodes);
        cJSON_AddNumberToObject(po, "nodesExcluded", 0);
        cJSON_AddNumberToObject(po, "ceiling", (double)c->limit);
        cJSON_AddNumberToObject(po, "room", (double)c->room);
    }
    return o;
}

/* The table's rows for one cluster item: one per pool, or one saying why
 * there are none. */
static void add_rows(cJSON *rows, const cJSON *item)
{
    static const char *const copied[] = {"name",   "role",       "region", "health", "hubView",
                                         "server", "kubernetes", "auth",   "reason"};
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(item, "pools");
    int n = cJSON_GetArraySize(pools);
    for (int i = 0; i < (n > 0 ? n : 1); i++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddItemToArray(rows, row);
        for (size_t k = 0; k < sizeof(copied) / sizeof(copied[0]); k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, copied[k]);
            cJSON_AddItemToObject(
                row, copied[k], cJSON_IsNull(v) ? cJSON_CreateString("-") : cJSON_Duplicate(v, 1));
        }
        if (n == 0) {
            cJSON_AddStringToObject(row, "pool", "-");
            cJSON_AddStringToObject(row, "freeTotal", "-");
            cJSON_AddStringToObject(row, "pending", "-");
            cJSON_AddStringToObject(row, "nodes", "-");
            cJSON_AddStringToObject(row, "ceiling", "-");
            cJSON_AddStringToObject(row, "room", "-");
            continue;
        }
        const cJSON *po = cJSON_GetArrayItem(pools, i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(po, "name");
        const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(po, "key"));
        char label[300], ft[64];
        snprintf(label, sizeof(label), "%s%s%s", cJSON_IsString(name) ? name->valuestring : "",
                 cJSON_IsString(name) ? "=" : "", key ? key : "");
        snprintf(ft, sizeof(ft), "%.0f/%.0f",
                 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(po, "free")),
                 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(po, "total")));
        cJSON_AddStringToObject(row, "pool", label);
        cJSON_AddStringToObject(row, "freeTotal", ft);
        static const char *const figures[] = {"pending", "nodes", "ceiling", "room"};
        for (size_t k = 0; k < sizeof(figures) / sizeof(figures[0]); k++)
            cJSON_AddItemToObject(
                row, figures[k],
                cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(po, figures[k]), 1));
    }
}

static int print_list(const struct args *a, const struct probe *probes, size_t n)
{
    cJSON *items = cJSON_CreateArray(), *rows = cJSON_CreateArray();
    int rc = items && rows ? 0 : SW_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        cJSON *item = probe_item(&probes[i], !a->no_probe);
        if (item == NULL) {
            rc = SW_ENOMEM;
            break;
        }
        cJSON_AddItemToArray(items, item);
        add_rows(rows, item);
    }
    if (rc == 0)
        rc = sw_cli_print(stdout, a->g->output, items, rows, list_columns,
                          sizeof(list_columns) / sizeof(list_columns[0]));
    cJSON_Delete(items);
    cJSON_Delete(rows);
    if (rc != 0)
        fprintf(stderr, "spillctl cluster list: cannot print the list: %s\n", sw_strerror(rc));
    return rc == 0 ? SW_EXIT_OK : SW_EXIT_FAIL;
}

struct list_wait {
    int done;
    int rc;
    struct sw_error err;
    struct probe *probes;
    size_t n;
};

static void on_list(int rc, struct sw_cluster_record *recs, size_t n, const struct sw_error *err,
                    void *ctx)
{
    struct list_wait *w = ctx;
    w->done = 1;
    w->rc = rc;
    if (rc != 0) {
        w->err = *err;
        return;
    }
    w->probes = sw_calloc(n + 1, sizeof(*w->probes));
    if (w->probes == NULL) {
        w->rc = SW_ENOMEM;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        w->probes[i].rec = recs[i];
        recs[i].sealed = NULL; /* moved */
    }
    w->n = n;
}

static void on_get_one(int rc, struct sw_cluster_record *rec, const struct sw_error *err, void *ctx)
{
    struct list_wait *w = ctx;
    w->done = 1;
    w->rc = rc;
    if (rc != 0) {
        w->err = *err;
        return;
    }
    w->probes = sw_calloc(1, sizeof(*w->probes));
    if (w->probes == NULL) {
        w->rc = SW_ENOMEM;
        return;
    }
    w->probes[0].rec = *rec;
    rec->sealed = NULL;
    w->n = 1;
}

static void show_one(const struct probe *p, const struct sw_seal_key *key)
{
    const struct sw_cluster_record *r = &p->rec;
    char when[64];
    iso_time(r->created_ms, when, sizeof(when));
    printf("Name:            %s\n", r->name);
    printf("Role:            %s\n", sw_cluster_role_name(r->spec.role));
    printf("Region:          %s\n", r->spec.region);
    if (r->spec.local_queue[0] != '\0')
        printf("LocalQueue:      %s (mirrors sent here enter it)\n", r->spec.local_queue);
    if (r->spec.nnamespaces > 0) {
        char nss[SW_MAX_BURST_NAMESPACES * 66];
        sw_cluster_namespaces_str(&r->spec, nss, sizeof(nss));
        printf("Namespaces:      %s (the narrow member role: spillway acts only there)\n", nss);
    }
    printf("Server:          %s\n", r->server);
    printf("Context:         %s\n", r->context);
    printf("Kubernetes:      %s\n", r->server_version);
    printf("Authentication:  %s (sealed; key %s)\n", r->auth_kind, key ? "available" : "not given");
    printf("Registered:      %s\n", when);
    if (p->problem != NULL)
        printf("Health:          not probed: %s\n", p->problem);
    else if (p->c == NULL && p->health.state != SW_HEALTH_UNKNOWN)
        printf("Health:          %s (%s)\n", sw_health_state_name(p->health.state),
               p->health.reason);
    char view[64];
    hub_view_text(p, view, sizeof(view));
    printf("Hub's view:      %s\n", p->hub_state[0] ? view : "no hub has written one");
    printf("Pools:\n");
    for (size_t i = 0; i < r->spec.npools; i++) {
        const struct sw_pool_spec *ps = &r->spec.pools[i];
        printf("  %-16s %-9s %s %lld MiB%s%s  $%.4f/GPU-h%s", ps->name, ps->capacity_type,
               ps->gpu_product, (long long)ps->gpu_memory_mib, ps->zone[0] ? " zone " : "",
               ps->zone, ps->price_per_gpu_hour, ps->max_gpus ? "  max " : "");
        if (ps->max_gpus)
            printf("%lld", (long long)ps->max_gpus);
        if (ps->nodepool[0])
            printf("  nodepool %s", ps->nodepool);
        printf("\n");
    }
    for (size_t i = 0; p->have_cap && i < r->spec.npools; i++) {
        const struct sw_pool_spec *ps = &r->spec.pools[i];
        const struct sw_nodepool_capacity *c = &p->np[i];
        if (!ps->nodepool[0])
            continue;
        if (p->np_problem[i][0]) {
            printf("NodePool %s (pool %s): %s\n", ps->nodepool, ps->name, p->np_problem[i]);
            continue;
        }
        printf("NodePool %s (pool %s): ceiling %lld, provisioned %lld (%lld launching), "
               "waiting %lld, room %lld; nodes %d, idle %lld; free %lld\n",
               ps->nodepool, ps->name, (long long)c->limit, (long long)c->provisioned,
               (long long)c->launching, (long long)c->waiting, (long long)c->room, c->nodes,
               (long long)c->idle, (long long)c->free);
    }
    if (p->have_cap) {
        printf("Capacity (live):\n");
        for (size_t i = 0; i < p->cap.npools; i++) {
            const struct sw_gpu_pool *pool = &p->cap.pools[i];
            printf("  %-60s free %lld/%lld  nodes %d (+%d excluded)  pending %lld\n", pool->key,
                   (long long)pool->free, (long long)pool->total, pool->nodes, pool->nodes_excluded,
                   (long long)pool->pending);
            if (pool->time_sliced)
                printf("    time-slicing: %lld replicas per GPU, %.3f of %.3f GPUs free\n",
                       (long long)pool->replicas, (double)pool->milli_free / 1000.0,
                       (double)pool->milli_total / 1000.0);
            for (size_t k = 0; k < pool->nmig; k++)
                printf("    MIG %s: free %lld/%lld slices (%d per GPU)\n", pool->mig[k].profile,
                       (long long)pool->mig[k].free, (long long)pool->mig[k].total,
                       pool->mig[k].per_gpu);
        }
    }
}

static int cmd_list_show(struct args *a, int show)
{
    int rc = need_redis(a);
    if (rc != 0)
        return rc;
    if (show && (a->name == NULL || !sw_name_valid(a->name))) {
        fprintf(stderr, "spillctl cluster show: expected a cluster NAME\n");
        return SW_EXIT_USAGE;
    }
    struct sw_seal_key *key = NULL;
    struct sw_error err;
    /* Probing opens each member's credentials, so it needs the sealing
     * key; without one given, list what Redis holds (as --no-probe) and
     * say so, as the other read-only commands need no key. A key given
     * that cannot be read is still an error. */
    if (!a->no_probe && sw_cli_secret_key(a->g, &key, &err) != 0) {
        if (err.code != SW_ENOENT || a->g->secret_key_file != NULL) {
            fprintf(stderr, "spillctl cluster %s: %s (or use --no-probe)\n", a->cmd, err.msg);
            return SW_EXIT_FAIL;
        }
        fprintf(stderr,
                "spillctl cluster %s: not probing the clusters: no secret key (give "
                "--secret-key-file FILE to probe them; --no-probe says this is meant)\n",
                a->cmd);
        a->no_probe = 1;
    }
    struct env e;
    if (env_open(&e, a->redis, a->cmd) != 0) {
        sw_seal_key_free(key);
        return SW_EXIT_FAIL;
    }
    struct list_wait w = {0};
    rc = show ? sw_registry_get(e.redis, a->name, on_get_one, &w)
              : sw_registry_list(e.redis, on_list, &w);
    if (rc == 0)
        sw_kube_run_until(&e.loop, &w.done);
    else
        sw_error_set(&w.err, rc, "redis: %s", sw_strerror(rc));
    int exit_code = SW_EXIT_OK;
    if (rc != 0 || w.rc != 0) {
        fprintf(stderr, "spillctl cluster %s: %s\n", a->cmd, w.err.msg);
        exit_code = SW_EXIT_FAIL;
        goto out;
    }
    if (!a->no_probe)
        for (size_t i = 0; i < w.n; i++)
            start_probe(&e, &w.probes[i], key);
    for (size_t i = 0; i < w.n; i++)
        finish_probe(&e, &w.probes[i]);
    hub_views(a->redis, w.probes, w.n);
    if (show && (a->g->output == SW_CLI_JSON || a->g->output == SW_CLI_YAML)) {
        /* One object, the same as the item list -o json prints for it. */
        cJSON *item = probe_item(&w.probes[0], !a->no_probe);
        if (item == NULL) {
            fprintf(stderr, "spillctl cluster show: out of memory\n");
            exit_code = SW_EXIT_FAIL;
        } else if (a->g->output == SW_CLI_JSON) {
            sw_cli_write_json(stdout, item, 0);
            fputc('\n', stdout);
        } else {
            sw_cli_write_yaml(stdout, item);
        }
        cJSON_Delete(item);
    } else if (show) {
        show_one(&w.probes[0], key);
    } else if (w.n == 0 && (a->g->output == SW_CLI_TABLE || a->g->output == SW_CLI_WIDE)) {
        printf("No clusters registered. Add one with: spillctl cluster add NAME --kubeconfig "
               "FILE --role onprem|cloud --region R\n");
    } else {
        exit_code = print_list(a, w.probes, w.n);
    }
out:
    for (size_t i = 0; i < w.n; i++) {
        sw_cluster_record_clear(&w.probes[i].rec);
        if (w.probes[i].have_cap)
            sw_capacity_free(&w.probes[i].cap);
    }
    sw_free(w.probes);
    env_close(&e);
    sw_seal_key_free(key);
    return exit_code;
}

/* ---- remove ------------------------------------------------------------- */

static int cmd_remove(struct args *a)
{
    int rc = need_redis(a);
    if (rc != 0)
        return rc;
    if (a->name == NULL || !sw_name_valid(a->name)) {
        fprintf(stderr, "spillctl cluster remove: expected a cluster NAME\n");
        return SW_EXIT_USAGE;
    }
    struct env e;
    if (env_open(&e, a->redis, a->cmd) != 0)
        return SW_EXIT_FAIL;
    struct put_wait w = {0};
    rc = sw_registry_remove(e.redis, a->name, on_put, &w);
    if (rc == 0)
        sw_kube_run_until(&e.loop, &w.done);
    int exit_code = SW_EXIT_OK;
    if (rc != 0 || w.rc != 0) {
        fprintf(stderr, "spillctl cluster remove: %s\n", rc ? sw_strerror(rc) : w.err.msg);
        exit_code = SW_EXIT_FAIL;
    } else {
        printf("cluster %s removed\n", a->name);
    }
    env_close(&e);
    return exit_code;
}

/* Runs `cluster CMD` with the parsed arguments. */
static int run(const struct sw_cli_globals *g, const struct sw_cli_args *pa, const char *cmd)
{
    sw_json_init_hooks();
    struct args a = {0};
    a.g = g;
    a.cmd = cmd;
    int rc = from_args(pa, &a);
    if (rc != 0)
        return rc;
    char what[64];
    snprintf(what, sizeof(what), "spillctl cluster %s", a.cmd);
    struct sw_error err;
    int takes_o =
        strcmp(a.cmd, "list") == 0 || (strcmp(a.cmd, "show") == 0 && g->output != SW_CLI_WIDE);
    if (!takes_o && sw_cli_no_output_format(g, what, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    if (strcmp(a.cmd, "add") == 0)
        rc = cmd_add(&a);
    else if (strcmp(a.cmd, "list") == 0)
        rc = cmd_list_show(&a, 0);
    else if (strcmp(a.cmd, "show") == 0)
        rc = cmd_list_show(&a, 1);
    else
        rc = cmd_remove(&a);
    /* The URL may hold the Redis password. */
    memset(a.redis, 0, sizeof(a.redis));
    return rc;
}

static int run_add(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "add");
}

static int run_list(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "list");
}

static int run_show(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "show");
}

static int run_remove(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    return run(g, a, "remove");
}

static const struct sw_cli_opt add_opts[] = {
    {"kubeconfig", 0, SW_CLI_VALUE, OPT_KUBECONFIG, "FILE"},
    {"context", 0, SW_CLI_VALUE, OPT_CONTEXT, "NAME"},
    {"role", 0, SW_CLI_VALUE, OPT_ROLE, "ROLE"},
    {"region", 0, SW_CLI_VALUE, OPT_REGION, "REGION"},
    {"pool", 0, SW_CLI_VALUE, OPT_POOL, "SPEC"},
    {"local-queue", 0, SW_CLI_VALUE, OPT_LOCAL_QUEUE, "NAME"},
    {"namespaces", 0, SW_CLI_VALUE, OPT_NAMESPACES, "LIST"},
    {"spec", 0, SW_CLI_VALUE, OPT_SPEC, "FILE"},
    {"replace", 0, SW_CLI_FLAG, OPT_REPLACE, NULL},
    {"dry-run", 0, SW_CLI_FLAG, OPT_DRY_RUN, NULL},
};

static const struct sw_cli_opt probe_opts[] = {
    {"no-probe", 0, SW_CLI_FLAG, OPT_NO_PROBE, NULL},
};

const struct sw_cli_spec sw_cli_cluster_specs[] = {
    {.path = "cluster add",
     .summary = "check access to a cluster and register it",
     .help = "Usage: spillctl cluster add NAME [--kubeconfig FILE] [--context NAME]\n"
             "                            --role onprem|cloud --region R\n"
             "                            [--pool SPEC]... [--local-queue NAME] [--spec FILE]\n"
             "                            [--namespaces LIST] [--replace] [--dry-run]\n"
             "\n"
             "Checks access before it stores anything: connects with the kubeconfig's\n"
             "credentials, reads the server version, and asks the API server about every\n"
             "permission spillway needs, naming each one that is missing (verb, resource\n"
             "and namespace). Only then is the record, with the connection sealed, written\n"
             "to Redis.\n"
             "\n"
             "Options:\n"
             "  --kubeconfig FILE  the kubeconfig to reach the cluster; without it, $KUBECONFIG\n"
             "                     (files separated by ':', merged as kubectl merges them);\n"
             "                     without either, in a pod, the cluster the pod runs in\n"
             "                     (in-cluster configuration:\n"
             "                     KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount's token\n"
             "                     and CA in " SW_SERVICEACCOUNT_DIR ",\n"
             "                     or $" SW_SERVICEACCOUNT_DIR_ENV "); the token file's path\n"
             "                     is registered, not the token, and read by the hub\n"
             "  --context NAME     the kubeconfig's context (default: its current-context,\n"
             "                     the first one set in $KUBECONFIG's files)\n"
             "  --role ROLE        onprem (owned capacity) or cloud\n"
             "  --region REGION    the cluster's region, e.g. us-east-1\n"
             "  --pool SPEC        a GPU pool, repeatable: name=N,capacity=owned|on-demand|spot,\n"
             "                     product=P,memory=MiB[,zone=Z][,price=USD/GPU-h][,max=GPUs]\n"
             "                     [,nodepool=NP]: spot or on-demand capacity from Karpenter\n"
             "                     NodePool NP (it must exist and have a GPU limit; a cloud\n"
             "                     pool is bound to the one NodePool serving it when unnamed)\n"
             "  --local-queue NAME the Kueue LocalQueue mirrors sent to this cluster enter\n"
             "                     (in their namespace; it must exist there: docs/kueue.md);\n"
             "                     without it, a Kueue Job's mirror enters the LocalQueue of\n"
             "                     its origin's queue's name when the cluster has one; the\n"
             "                     cluster's ClusterQueues' headroom bounds its pools\n"
             "  --namespaces LIST  the narrow member role (deploy/rbac/narrow): spillway\n"
             "                     may act only in these namespaces here; checks the role's\n"
             "                     cluster part cluster-wide and its namespace part in each;\n"
             "                     the hub bursts only these namespaces' Jobs into this\n"
             "                     cluster, into namespaces that exist (it creates none), and\n"
             "                     refuses others' with the reason. Without it: the wide\n"
             "                     role (deploy/rbac/member-clusterrole.yaml), all namespaces\n"
             "  --spec FILE        role, region and pools from a cluster spec file\n"
             "                     (YAML, see docs/clusters.md); flags override it\n"
             "  --replace          overwrite an existing record of the same name\n"
             "  --dry-run          check NAME, the spec file, the flags and the kubeconfig,\n"
             "                     print the result (the context and server chosen) and\n"
             "                     stop: no cluster, Redis or key is needed or touched\n"
             "\n"
             "Redis (--redis) and the key sealing credentials (--secret-key-file) are\n"
             "global options.\n",
     .examples =
         "  spillctl cluster add onprem --kubeconfig onprem.kubeconfig --role onprem \\\n"
         "      --region us-east-1 --pool name=a100,capacity=owned,product=A100,memory=81920\n"
         "  spillctl cluster add aws-east --kubeconfig aws.kubeconfig --spec aws-east.yaml\n"
         "  spillctl cluster add aws-east --spec aws-east.yaml --dry-run\n",
     .opts = add_opts,
     .nopts = sizeof(add_opts) / sizeof(add_opts[0]),
     .min_pos = 1,
     .max_pos = 1,
     .run = run_add},
    {.path = "cluster list",
     .formats = SW_CLI_FMT_LIST,
     .summary =
         "registered clusters with health, free/total GPUs, nodes, ceiling and room per pool",
     .help = "Usage: spillctl cluster list [--no-probe] [-o table|wide|json|yaml|name]\n"
             "\n"
             "Every registered cluster, probed live (/readyz, nodes, pods) for health and\n"
             "free/total GPUs per pool. No credential is ever printed. Probing opens the\n"
             "clusters' credentials with the sealing key (--secret-key-file); without a\n"
             "key, the clusters are listed as Redis holds them, as --no-probe does, and\n"
             "a line on stderr says they were not probed.\n"
             "\n"
             "Options:\n"
             "  --no-probe         do not contact the clusters (no key needed)\n",
     .examples = "  spillctl cluster list\n"
                 "  spillctl cluster list -o wide --no-probe\n",
     .opts = probe_opts,
     .nopts = 1,
     .run = run_list},
    {.path = "cluster show",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "one cluster in detail",
     .help = "Usage: spillctl cluster show NAME [--no-probe] [-o json|yaml]\n"
             "\n"
             "One cluster in detail; with -o json or yaml, the same object as one item of\n"
             "cluster list. Without a sealing key, not probed (as --no-probe), said on\n"
             "stderr.\n"
             "\n"
             "Options:\n"
             "  --no-probe         do not contact the cluster\n",
     .examples = "  spillctl cluster show onprem\n"
                 "  spillctl cluster show onprem -o yaml\n",
     .opts = probe_opts,
     .nopts = 1,
     .min_pos = 1,
     .max_pos = 1,
     .run = run_show},
    {.path = "cluster remove",
     .summary = "unregister a cluster (its Jobs are not touched)",
     .help = "Usage: spillctl cluster remove NAME\n"
             "\n"
             "Removes the cluster's record from Redis. Its Jobs are not touched.\n",
     .examples = "  spillctl cluster remove aws-east\n",
     .min_pos = 1,
     .max_pos = 1,
     .run = run_remove},
};
const size_t sw_cli_cluster_nspecs = sizeof(sw_cli_cluster_specs) / sizeof(sw_cli_cluster_specs[0]);
