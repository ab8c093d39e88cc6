/*
 * lab.h - helpers for the clusters/ end-to-end tests: the lab's kubeconfigs,
 * a loop with an HTTP engine, and blocking waits.
 */
#ifndef SW_TESTS_E2E_CLUSTERS_LAB_H
#define SW_TESTS_E2E_CLUSTERS_LAB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/kubeconfig.h"
#include "clusters/rest.h"
#include "net/http.h"

struct lab {
    uv_loop_t loop;
    struct sw_http *http;
};

static inline const char *lab_env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "%s is not set: run eval \"$(tests/testbed/testbed env)\"\n", name);
        exit(1);
    }
    return v;
}

static inline void lab_open(struct lab *l)
{
    if (uv_loop_init(&l->loop) != 0 || sw_http_new(&l->loop, &l->http) != 0) {
        fprintf(stderr, "cannot create the loop\n");
        exit(1);
    }
}

static inline void lab_close(struct lab *l)
{
    sw_http_free(l->http);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    uv_loop_close(&l->loop);
}

/* A client named `name` for the kubeconfig at `path`; NULL with the error
 * in err (when not NULL) or printed. */
static inline struct sw_kube_client *
lab_client_path(struct lab *l, const char *path, const char *name, double qps, struct sw_error *err)
{
    struct sw_kube_target *t = NULL;
    struct sw_error e;
    if (err == NULL)
        err = &e;
    if (sw_kubeconfig_load(path, NULL, &t, err) != 0) {
        if (err == &e)
            fprintf(stderr, "%s\n", err->msg);
        return NULL;
    }
    struct sw_kube_opts o;
    sw_kube_opts_default(&o);
    o.name = name;
    if (qps != 0)
        o.qps = qps;
    o.burst = qps > 0 ? (int)qps * 2 : o.burst;
    struct sw_kube_client *c = NULL;
    if (sw_kube_client_new(&l->loop, l->http, t, &o, &c, err) != 0) {
        if (err == &e)
            fprintf(stderr, "%s\n", err->msg);
        return NULL;
    }
    return c;
}

/* A client for CLUSTER with kubeconfig variant VARIANT ("", "-cert", ...). */
static inline struct sw_kube_client *lab_client(struct lab *l, const char *cluster,
                                                const char *variant, double qps)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s%s.kubeconfig", lab_env("SW_LAB_KUBECONFIG_DIR"), cluster,
             variant);
    return lab_client_path(l, path, cluster, qps, NULL);
}

struct lab_wait {
    int done;
    int rc;
    long status;
    char msg[SW_ERROR_MSG_MAX];
    cJSON *body;
    long http_version; /* CURL_HTTP_VERSION_* of the response */
    long new_connects; /* connections the request opened */
};

static inline void lab_on_result(struct sw_kube_result *res, void *ctx)
{
    struct lab_wait *w = ctx;
    w->done = 1;
    w->rc = res->rc;
    w->status = res->status;
    snprintf(w->msg, sizeof(w->msg), "%s", res->err.msg);
    w->body = res->body;
    w->http_version = res->http_version;
    w->new_connects = res->new_connects;
    res->body = NULL;
}

/* Runs the loop until w is done; returns w->rc. */
static inline int lab_wait(struct lab *l, struct lab_wait *w)
{
    sw_kube_run_until(&l->loop, &w->done);
    return w->rc;
}

static inline void lab__timer_done(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

/* Runs the loop for about `ms` milliseconds. */
static inline void lab_run_for(struct lab *l, uint64_t ms)
{
    uv_timer_t t;
    int done = 0;
    uv_timer_init(&l->loop, &t);
    t.data = &done;
    uv_timer_start(&t, lab__timer_done, ms, 0);
    sw_kube_run_until(&l->loop, &done);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&l->loop, UV_RUN_NOWAIT);
}

/* Runs the loop until *flag is set or `ms` pass; returns *flag. */
static inline int lab_run_until(struct lab *l, const int *flag, uint64_t ms)
{
    for (uint64_t waited = 0; !*flag && waited < ms; waited += 50)
        lab_run_for(l, 50);
    return *flag;
}

#endif
