/*
 * End-to-end: the REST client's transport against the lab's API servers.
 *
 * - HTTP/2 is negotiated (ALPN) and sequential and concurrent requests to
 *   one cluster share one connection;
 * - tls-server-name: the serving certificate is checked against it while
 *   the client connects to the server's address; a wrong name, a CA that is
 *   not the cluster's, fail with a TLS error naming the cluster and server,
 *   at once (a certificate that does not verify is not retried);
 *   insecure-skip-tls-verify without a CA connects;
 * - proxy-url: requests go through an HTTP CONNECT proxy, asking it for the
 *   server's address (not the tls-server-name), even when NO_PROXY in the
 *   environment would exclude the server (kubectl ignores NO_PROXY for a
 *   kubeconfig's proxy-url).
 *
 * The proxy is a fixture written here (threads, blocking sockets): it
 * records each CONNECT target and tunnels bytes. The API servers are real.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab.h"

/* Every test uses one cluster whose API server other tests do not restart. */
#define CLUSTER  "cloud-ondemand"
#define TLS_NAME CLUSTER ".lab.spillway.test"

static char tmpdir[256];

/* ---- kubeconfig variants ------------------------------------------------ */

struct edit {
    const char *key;  /* a field, matched at the start of a line after indentation */
    const char *line; /* its replacement ("\n" separates added lines), or NULL to drop it */
};

/*
 * Copies the kubeconfig `src` to tmpdir/`name`, applying `edits` line by line
 * (replacement lines keep the original indentation). Returns the new path in
 * out. Fails the test when a key is not found.
 */
static void write_variant(const char *src, const char *name, const struct edit *edits, size_t n,
                          char *out, size_t outlen)
{
    FILE *in = fopen(src, "r");
    assert_non_null(in);
    snprintf(out, outlen, "%s/%s", tmpdir, name);
    FILE *o = fopen(out, "w");
    assert_non_null(o);
    int found[16] = {0};
    assert_true(n <= 16);
    char line[16384];
    while (fgets(line, sizeof(line), in) != NULL) {
        size_t ind = strspn(line, " -");
        const struct edit *hit = NULL;
        for (size_t i = 0; i < n; i++) {
            size_t kl = strlen(edits[i].key);
            if (strncmp(line + ind, edits[i].key, kl) == 0 && line[ind + kl] == ':') {
                hit = &edits[i];
                found[i] = 1;
            }
        }
        if (hit == NULL) {
            fputs(line, o);
            continue;
        }
        if (hit->line == NULL)
            continue;
        /* The indentation of a "- " list item continues with spaces. */
        const char *p = hit->line;
        int first = 1;
        while (*p != '\0') {
            size_t l = strcspn(p, "\n");
            if (first)
                fprintf(o, "%.*s%.*s\n", (int)ind, line, (int)l, p);
            else
                fprintf(o, "%*s%.*s\n", (int)ind, "", (int)l, p);
            first = 0;
            p += l;
            if (*p == '\n')
                p++;
        }
    }
    fclose(in);
    assert_int_equal(fclose(o), 0);
    for (size_t i = 0; i < n; i++)
        if (!found[i])
            fail_msg("%s has no field %s", src, edits[i].key);
}

static void lab_kubeconfig(const char *variant, char *out, size_t len)
{
    snprintf(out, len, "%s/%s%s.kubeconfig", lab_env("SW_LAB_KUBECONFIG_DIR"), CLUSTER, variant);
}

/* GET /version with a fresh client for the kubeconfig at `path`. */
static int get_version(const char *path, struct lab_wait *w, uint64_t *sent)
{
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *c = lab_client_path(&l, path, CLUSTER, 0, NULL);
    assert_non_null(c);
    memset(w, 0, sizeof(*w));
    struct sw_kube_req r = {.path = "/version"};
    assert_int_equal(sw_kube_send(c, &r, lab_on_result, w, NULL), 0);
    int rc = lab_wait(&l, w);
    if (rc == 0) {
        const cJSON *gv = cJSON_GetObjectItem(w->body, "gitVersion");
        assert_true(cJSON_IsString(gv));
        assert_string_equal(gv->valuestring, "v1.34.4");
    }
    cJSON_Delete(w->body);
    w->body = NULL;
    if (sent != NULL)
        *sent = sw_kube_client_sent(c);
    sw_kube_client_free(c);
    lab_close(&l);
    return rc;
}

/* ---- HTTP/2 and connection reuse ---------------------------------------- */

static void check_h2_and_reuse(const char *variant)
{
    char path[1024];
    lab_kubeconfig(variant, path, sizeof(path));
    struct lab l;
    lab_open(&l);
    struct sw_kube_client *c = lab_client_path(&l, path, CLUSTER, 0, NULL);
    assert_non_null(c);
    const int n = 10;
    long connects = 0;
    for (int i = 0; i < n; i++) {
        struct lab_wait w = {0};
        struct sw_kube_req r = {.path = "/version"};
        assert_int_equal(sw_kube_send(c, &r, lab_on_result, &w, NULL), 0);
        if (lab_wait(&l, &w) != 0)
            fail_msg("%s%s: request %d: %s", CLUSTER, variant, i, w.msg);
        cJSON_Delete(w.body);
        assert_int_equal(w.http_version, CURL_HTTP_VERSION_2_0);
        /* The first request opens the connection; none after it does. */
        assert_int_equal(w.new_connects, i == 0 ? 1 : 0);
        connects += w.new_connects;
    }
    /* Concurrent requests are multiplexed as streams on that connection. */
    struct lab_wait ws[8];
    memset(ws, 0, sizeof(ws));
    for (int i = 0; i < 8; i++) {
        struct sw_kube_req r = {.path = i % 2 ? "/version" : "/api/v1/nodes?limit=1"};
        assert_int_equal(sw_kube_send(c, &r, lab_on_result, &ws[i], NULL), 0);
    }
    for (int i = 0; i < 8; i++) {
        if (lab_wait(&l, &ws[i]) != 0)
            fail_msg("%s%s: concurrent request %d: %s", CLUSTER, variant, i, ws[i].msg);
        cJSON_Delete(ws[i].body);
        assert_int_equal(ws[i].http_version, CURL_HTTP_VERSION_2_0);
        connects += ws[i].new_connects;
    }
    assert_int_equal(connects, 1);
    printf("  %s%s: HTTP/2, %d requests (8 concurrent) on %ld connection\n", CLUSTER, variant,
           n + 8, connects);
    sw_kube_client_free(c);
    lab_close(&l);
}

static void test_http2_and_reuse(void **state)
{
    (void)state;
    check_h2_and_reuse("-cert");  /* server URL verified as is */
    check_h2_and_reuse("-token"); /* through tls-server-name (CURLOPT_CONNECT_TO) */
}

/* ---- TLS verification ---------------------------------------------------- */

static void test_tls_server_name(void **state)
{
    (void)state;
    char src[1024], path[1024];
    struct lab_wait w;
    uint64_t sent;
    lab_kubeconfig("-token", src, sizeof(src));

    /* As the lab wrote it: the name is in the certificate, the URL is an IP. */
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(src, NULL, &t, &err), 0);
    assert_string_equal(t->tls_server_name, TLS_NAME);
    assert_false(t->insecure);
    assert_non_null(t->ca_data);
    char server[256];
    snprintf(server, sizeof(server), "%s", t->server);
    sw_kube_target_free(t);
    if (get_version(src, &w, NULL) != 0)
        fail_msg("%s", w.msg);

    /* A name the certificate does not carry. */
    const struct edit wrong_name[] = {
        {"tls-server-name", "tls-server-name: wrong.lab.spillway.test"}};
    write_variant(src, "wrong-name.kubeconfig", wrong_name, 1, path, sizeof(path));
    assert_int_equal(get_version(path, &w, &sent), SW_ETLS);
    assert_int_equal(w.status, 0);
    printf("  wrong tls-server-name: %s\n", w.msg);
    assert_non_null(strstr(w.msg, "cluster " CLUSTER ": GET /version"));
    assert_non_null(strstr(w.msg, server));
    assert_non_null(strstr(w.msg, "wrong.lab.spillway.test"));
    /* Not retried: a certificate that does not verify will not on a retry. */
    assert_int_equal(sent, 1);

    /* The right name but a CA that is not the cluster's (onprem's CA). */
    char other_ca[1100], line[1200];
    snprintf(other_ca, sizeof(other_ca), "%s/onprem-ca.crt", lab_env("SW_LAB_KUBECONFIG_DIR"));
    snprintf(line, sizeof(line), "certificate-authority: %s", other_ca);
    const struct edit wrong_ca[] = {{"certificate-authority-data", line}};
    write_variant(src, "wrong-ca.kubeconfig", wrong_ca, 1, path, sizeof(path));
    assert_int_equal(get_version(path, &w, &sent), SW_ETLS);
    printf("  CA of another cluster: %s\n", w.msg);
    assert_non_null(strstr(w.msg, "cluster " CLUSTER ": GET /version"));
    assert_non_null(strstr(w.msg, server));
    assert_non_null(strstr(w.msg, "certificate"));
    assert_int_equal(sent, 1);

    /* No CA and no name, verification off: connects to the bare IP. */
    const struct edit insecure[] = {
        {"certificate-authority-data", "insecure-skip-tls-verify: true"},
        {"tls-server-name", NULL},
    };
    write_variant(src, "insecure.kubeconfig", insecure, 2, path, sizeof(path));
    assert_int_equal(sw_kubeconfig_load(path, NULL, &t, &err), 0);
    assert_true(t->insecure);
    assert_null(t->ca_data);
    assert_null(t->tls_server_name);
    sw_kube_target_free(t);
    if (get_version(path, &w, NULL) != 0)
        fail_msg("insecure-skip-tls-verify: %s", w.msg);
}

/* ---- CONNECT proxy fixture ---------------------------------------------- */

#define PROXY_MAX_CONNS 32

struct proxy {
    int lfd;
    int port;
    pthread_t acceptor;
    pthread_t tunnels[PROXY_MAX_CONNS];
    int ntunnels;
    pthread_mutex_t mu;
    int connects;      /* CONNECT requests seen */
    char target[256];  /* the last CONNECT target, "host:port" */
    int other;         /* requests that were not CONNECT */
    volatile int stop; /* set by the test; threads poll it */
};

struct tunnel_arg {
    struct proxy *p;
    int fd;
};

static int connect_to(const char *hostport)
{
    char host[256];
    snprintf(host, sizeof(host), "%s", hostport);
    char *colon = strrchr(host, ':');
    if (colon == NULL)
        return -1;
    *colon = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static void write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, buf, n);
        if (k <= 0)
            return;
        buf += k;
        n -= (size_t)k;
    }
}

static void *tunnel(void *arg_)
{
    struct tunnel_arg *arg = arg_;
    struct proxy *p = arg->p;
    int cfd = arg->fd, sfd = -1;
    free(arg);
    /* Read the request head. */
    char head[8192];
    size_t len = 0;
    while (len < sizeof(head) - 1) {
        ssize_t k = read(cfd, head + len, sizeof(head) - 1 - len);
        if (k <= 0)
            goto out;
        len += (size_t)k;
        head[len] = '\0';
        if (strstr(head, "\r\n\r\n") != NULL)
            break;
    }
    char method[16], target[256];
    if (sscanf(head, "%15s %255s", method, target) != 2 || strcmp(method, "CONNECT") != 0) {
        pthread_mutex_lock(&p->mu);
        p->other++;
        pthread_mutex_unlock(&p->mu);
        const char *no = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n";
        write_all(cfd, no, strlen(no));
        goto out;
    }
    pthread_mutex_lock(&p->mu);
    p->connects++;
    snprintf(p->target, sizeof(p->target), "%s", target);
    pthread_mutex_unlock(&p->mu);
    sfd = connect_to(target);
    if (sfd < 0) {
        const char *bad = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n";
        write_all(cfd, bad, strlen(bad));
        goto out;
    }
    const char *ok = "HTTP/1.1 200 Connection established\r\n\r\n";
    write_all(cfd, ok, strlen(ok));
    /* Bytes a client sent after the head (none for curl) go on first. */
    char *rest = strstr(head, "\r\n\r\n") + 4;
    write_all(sfd, rest, len - (size_t)(rest - head));
    struct pollfd fds[2] = {{.fd = cfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    char buf[16384];
    while (!p->stop) {
        int r = poll(fds, 2, 200);
        if (r < 0 && errno != EINTR)
            break;
        int done = 0;
        for (int i = 0; i < 2 && r > 0; i++) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
                continue;
            ssize_t k = read(fds[i].fd, buf, sizeof(buf));
            if (k <= 0) {
                done = 1;
                break;
            }
            write_all(fds[1 - i].fd, buf, (size_t)k);
        }
        if (done)
            break;
    }
out:
    if (sfd >= 0)
        close(sfd);
    close(cfd);
    return NULL;
}

static void *acceptor(void *arg)
{
    struct proxy *p = arg;
    while (!p->stop) {
        struct pollfd pf = {.fd = p->lfd, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        int fd = accept(p->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        struct tunnel_arg *a = malloc(sizeof(*a));
        a->p = p;
        a->fd = fd;
        pthread_mutex_lock(&p->mu);
        if (p->ntunnels == PROXY_MAX_CONNS ||
            pthread_create(&p->tunnels[p->ntunnels], NULL, tunnel, a) != 0) {
            close(fd);
            free(a);
        } else {
            p->ntunnels++;
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static void proxy_start(struct proxy *p)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(p->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(p->lfd, 16), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &al), 0);
    p->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&p->acceptor, NULL, acceptor, p), 0);
}

static void proxy_stop(struct proxy *p)
{
    p->stop = 1;
    pthread_join(p->acceptor, NULL);
    for (int i = 0; i < p->ntunnels; i++)
        pthread_join(p->tunnels[i], NULL);
    close(p->lfd);
    pthread_mutex_destroy(&p->mu);
}

static void check_through_proxy(struct proxy *p, const char *variant, const char *server_addr)
{
    char src[1024], path[1024], server[300], line[600];
    lab_kubeconfig(variant, src, sizeof(src));
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(src, NULL, &t, &err), 0);
    snprintf(server, sizeof(server), "%s", t->server);
    sw_kube_target_free(t);
    snprintf(line, sizeof(line), "server: %s\nproxy-url: http://127.0.0.1:%d", server, p->port);
    /* The copy lives elsewhere, so the files the lab's names relative to
     * its folder are named by absolute paths. */
    const char *dir = lab_env("SW_LAB_KUBECONFIG_DIR");
    char ca[1200], crt[1200], key[1200];
    snprintf(ca, sizeof(ca), "certificate-authority: %s/%s-ca.crt", dir, CLUSTER);
    snprintf(crt, sizeof(crt), "client-certificate: %s/%s-admin.crt", dir, CLUSTER);
    snprintf(key, sizeof(key), "client-key: %s/%s-admin.key", dir, CLUSTER);
    const struct edit e[] = {
        {"server", line},
        {"certificate-authority", ca},
        {"client-certificate", crt},
        {"client-key", key},
    };
    int cert = strcmp(variant, "-cert") == 0;
    char name[64];
    snprintf(name, sizeof(name), "proxy%s.kubeconfig", variant);
    write_variant(src, name, e, cert ? 4 : 1, path, sizeof(path));

    pthread_mutex_lock(&p->mu);
    int before = p->connects;
    p->target[0] = '\0';
    pthread_mutex_unlock(&p->mu);
    struct lab_wait w;
    if (get_version(path, &w, NULL) != 0)
        fail_msg("%s%s through the proxy: %s", CLUSTER, variant, w.msg);
    pthread_mutex_lock(&p->mu);
    int seen = p->connects - before;
    char target[256];
    snprintf(target, sizeof(target), "%s", p->target);
    pthread_mutex_unlock(&p->mu);
    printf("  %s%s through the proxy: %d CONNECT %s, %s\n", CLUSTER, variant, seen, target,
           w.http_version == CURL_HTTP_VERSION_2_0 ? "HTTP/2" : "not HTTP/2");
    assert_int_equal(seen, 1);
    /* The proxy is asked for the server's address, never for the TLS name. */
    assert_string_equal(target, server_addr);
    assert_int_equal(w.http_version, CURL_HTTP_VERSION_2_0);
}

static void test_proxy_url(void **state)
{
    (void)state;
    struct proxy p;
    proxy_start(&p);
    /* The address the lab's server URL names, "127.0.0.13:6443". */
    char src[1024], addr[256];
    lab_kubeconfig("-cert", src, sizeof(src));
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    assert_int_equal(sw_kubeconfig_load(src, NULL, &t, &err), 0);
    assert_non_null(strstr(t->server, "https://"));
    snprintf(addr, sizeof(addr), "%s", t->server + strlen("https://"));
    sw_kube_target_free(t);

    /* A hub whose environment excludes the servers from proxying: the
     * kubeconfig's proxy-url still applies, as in client-go. */
    setenv("NO_PROXY", "*", 1);
    setenv("no_proxy", "*", 1);
    check_through_proxy(&p, "-cert", addr);
    check_through_proxy(&p, "-token", addr); /* tls-server-name through the tunnel */
    unsetenv("NO_PROXY");
    unsetenv("no_proxy");
    check_through_proxy(&p, "-cert", addr);
    assert_int_equal(p.other, 0);
    proxy_stop(&p);
}

/* ---- setup --------------------------------------------------------------- */

static int make_tmpdir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/sw-e2e-transport-XXXXXX",
             base != NULL && base[0] != '\0' ? base : "/tmp");
    return mkdtemp(tmpdir) != NULL ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    static const char *files[] = {
        "wrong-name.kubeconfig", "wrong-ca.kubeconfig",    "insecure.kubeconfig",
        "proxy-cert.kubeconfig", "proxy-token.kubeconfig",
    };
    char p[512];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", tmpdir, files[i]);
        unlink(p);
    }
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http2_and_reuse),
        cmocka_unit_test(test_tls_server_name),
        cmocka_unit_test(test_proxy_url),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
