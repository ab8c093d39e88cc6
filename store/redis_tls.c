/*
 * redis_tls.c - the TLS relay under hiredis (see redis_tls.h for why).
 *
 * One relay per connection: the caller's thread connects and verifies the
 * server, then a detached thread accepts hiredis on a private unix socket
 * and copies bytes both ways until either side closes. The TLS socket is
 * non-blocking, so that records the server sends without application data
 * (TLS 1.3 session tickets) never leave the thread blocked in SSL_read
 * while hiredis waits to send.
 */
#include "store/redis_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"

/*
 * The relays' threads are detached and end on their own time, freeing
 * their SSL objects; one may still be doing so when the process exits,
 * while OpenSSL's atexit cleanup frees the library's global state under
 * it (a double free in glibc's malloc, seen once in `spillctl cluster
 * remove` over rediss://). So an exit waits for them: a handler
 * registered after OpenSSL's own (so run before it) wakes every relay by
 * the stop pipe and waits, a bounded time, until none runs; each frees its
 * thread's OpenSSL state itself (OPENSSL_thread_stop) before it counts as
 * done, rather than leaving it to a thread key destructor that would race
 * OPENSSL_cleanup.
 */
#define RELAYS_EXIT_WAIT_MS 2000
static pthread_mutex_t relays_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t relays_cv = PTHREAD_COND_INITIALIZER;
static int relays_live;
static int relays_stop[2] = {-1, -1}; /* written to at exit; relays poll its read end */
static pthread_once_t relays_once = PTHREAD_ONCE_INIT;

static pid_t relays_pid; /* a child forked without exec leaves the parent's relays alone */

static void relays_wait_all(void)
{
    if (getpid() != relays_pid)
        return;
    if (relays_stop[1] >= 0) {
        char c = 0;
        ssize_t w = write(relays_stop[1], &c, 1);
        (void)w;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RELAYS_EXIT_WAIT_MS / 1000;
    pthread_mutex_lock(&relays_mu);
    while (relays_live > 0)
        if (pthread_cond_timedwait(&relays_cv, &relays_mu, &until) != 0)
            break;
    pthread_mutex_unlock(&relays_mu);
}

static void relays_init(void)
{
    /* OpenSSL registers its cleanup here (if no call did before): ours,
     * registered after, runs before it. */
    OPENSSL_init_ssl(0, NULL);
    relays_pid = getpid();
    if (pipe2(relays_stop, O_CLOEXEC | O_NONBLOCK) != 0)
        relays_stop[0] = relays_stop[1] = -1;
    atexit(relays_wait_all);
}

struct relay {
    SSL_CTX *ctx;
    SSL *ssl;
    int tcp;    /* to the server, non-blocking */
    int listen; /* the private socket, until hiredis connects */
    long accept_ms;
    char dir[96];
    char path[128];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on fd until `deadline` (ms); 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* The first OpenSSL error on this thread's queue, as text (or `dflt`). */
static const char *ssl_reason(char *buf, size_t len, const char *dflt)
{
    unsigned long e = ERR_get_error();
    if (e == 0) {
        snprintf(buf, len, "%s", dflt);
        return buf;
    }
    const char *r = ERR_reason_error_string(e);
    if (r != NULL)
        snprintf(buf, len, "%s", r);
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static void relay_free(struct relay *r)
{
    if (r->ssl != NULL)
        SSL_free(r->ssl);
    if (r->ctx != NULL)
        SSL_CTX_free(r->ctx);
    if (r->tcp >= 0)
        close(r->tcp);
    if (r->listen >= 0)
        close(r->listen);
    if (r->path[0] != '\0')
        unlink(r->path);
    if (r->dir[0] != '\0')
        rmdir(r->dir);
    sw_free(r);
}

/* A non-blocking TCP connection to host:port within the deadline. */
static int tcp_connect(const char *host, int port, int64_t deadline, const char *hp, int *out,
                       struct sw_error *err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    int g = getaddrinfo(host, ps, &hints, &res);
    if (g != 0)
        return sw_error_set(err, SW_ENET, "rediss %s: cannot resolve the host: %s", hp,
                            gai_strerror(g));
    int rc = SW_ENET, last = ECONNREFUSED;
    for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
        int fd =
            socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            last = errno;
            close(fd);
            continue;
        }
        int w = wait_fd(fd, POLLOUT, deadline);
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            *out = fd;
            freeaddrinfo(res);
            return 0;
        }
        close(fd);
        if (w == 0) {
            rc = SW_ETIMEDOUT;
            break;
        }
        last = soerr ? soerr : errno;
    }
    freeaddrinfo(res);
    if (rc == SW_ETIMEDOUT)
        return sw_error_set(err, rc, "rediss %s: timed out connecting", hp);
    return sw_error_set(err, rc, "rediss %s: cannot connect: %s", hp, strerror(last));
}

static int load_trust(SSL_CTX *ctx, const struct sw_redis_tls_opts *o, const char *hp,
                      struct sw_error *err)
{
    char why[160];
    if (o != NULL && o->ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1)
            return sw_error_set(err, SW_EIO, "rediss %s: cannot read tls_ca_file %s: %s", hp,
                                o->ca_file, ssl_reason(why, sizeof(why), "no certificate in it"));
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return sw_error_set(err, SW_EIO, "rediss %s: cannot load the system's CAs: %s", hp,
                            ssl_reason(why, sizeof(why), "unknown"));
    }
    if (o != NULL && o->cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1)
            return sw_error_set(err, SW_EIO, "rediss %s: cannot read tls_cert_file %s: %s", hp,
                                o->cert_file, ssl_reason(why, sizeof(why), "unknown"));
        if (o->key_file == NULL ||
            SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1)
            return sw_error_set(err, SW_EIO, "rediss %s: cannot read tls_key_file %s: %s", hp,
                                o->key_file ? o->key_file : "(none)",
                                ssl_reason(why, sizeof(why), "not given"));
        if (SSL_CTX_check_private_key(ctx) != 1)
            return sw_error_set(err, SW_EIO,
                                "rediss %s: tls_key_file %s is not the key of tls_cert_file %s", hp,
                                o->key_file, o->cert_file);
    }
    return 0;
}

/* The handshake, with the checks of the server's certificate. */
static int handshake(struct relay *r, const char *host, int64_t deadline, const char *hp,
                     struct sw_error *err)
{
    char why[160];
    r->ssl = SSL_new(r->ctx);
    if (r->ssl == NULL || SSL_set_fd(r->ssl, r->tcp) != 1)
        return sw_error_set(err, SW_ENOMEM, "rediss %s: out of memory", hp);
    X509_VERIFY_PARAM *vp = SSL_get0_param(r->ssl);
    unsigned char ip[16];
    int is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (is_ip) {
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1)
            return sw_error_set(err, SW_EINVAL, "rediss %s: bad IP address", hp);
    } else {
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (X509_VERIFY_PARAM_set1_host(vp, host, 0) != 1 ||
            SSL_set_tlsext_host_name(r->ssl, host) != 1)
            return sw_error_set(err, SW_EINVAL, "rediss %s: the host name is not usable for TLS",
                                hp);
    }
    SSL_set_verify(r->ssl, SSL_VERIFY_PEER, NULL);
    for (;;) {
        ERR_clear_error();
        int n = SSL_connect(r->ssl);
        if (n == 1)
            return 0;
        int e = SSL_get_error(r->ssl, n);
        int w = e == SSL_ERROR_WANT_READ    ? wait_fd(r->tcp, POLLIN, deadline)
                : e == SSL_ERROR_WANT_WRITE ? wait_fd(r->tcp, POLLOUT, deadline)
                                            : -2;
        if (w == 1)
            continue;
        if (w == 0)
            return sw_error_set(err, SW_ETIMEDOUT,
                                "rediss %s: no TLS handshake answer in time (is it a TLS port? "
                                "rediss:// refuses a plain-text server)",
                                hp);
        long v = SSL_get_verify_result(r->ssl);
        if (v != X509_V_OK)
            return sw_error_set(err, SW_ETLS,
                                "rediss %s: the server's certificate was not accepted: %s", hp,
                                X509_verify_cert_error_string(v));
        return sw_error_set(err, SW_ETLS,
                            "rediss %s: TLS handshake failed: %s (is it a TLS port? rediss:// "
                            "refuses a plain-text server)",
                            hp,
                            ssl_reason(why, sizeof(why),
                                       e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN
                                           ? "the server closed the connection"
                                           : "unknown"));
    }
}

/* Writes all of buf to the TLS side, waiting as it asks; 0 or -1. */
static int ssl_write_all(struct relay *r, const char *buf, int n)
{
    while (n > 0) {
        int k = SSL_write(r->ssl, buf, n);
        if (k > 0) {
            buf += k;
            n -= k;
            continue;
        }
        int e = SSL_get_error(r->ssl, k);
        struct pollfd p = {r->tcp, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, 0};
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return -1;
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

/* Writes all of buf to the local side (blocking: hiredis reads on its own time). */
static int local_write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        buf += k;
        n -= (size_t)k;
    }
    return 0;
}

static void pump(struct relay *r, int local)
{
    char buf[16384];
    for (;;) {
        struct pollfd p[3] = {{local, POLLIN, 0}, {r->tcp, POLLIN, 0}, {relays_stop[0], POLLIN, 0}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (p[2].revents)
            return; /* the process is exiting */
        if (p[1].revents) {
            /* Read every record there is; a record without application
             * data (a session ticket) ends with WANT_READ like an empty one. */
            for (;;) {
                int k = SSL_read(r->ssl, buf, sizeof(buf));
                if (k > 0) {
                    if (local_write_all(local, buf, (size_t)k) != 0)
                        return;
                    continue;
                }
                int e = SSL_get_error(r->ssl, k);
                if (e == SSL_ERROR_WANT_READ)
                    break;
                if (e == SSL_ERROR_WANT_WRITE) {
                    struct pollfd q = {r->tcp, POLLOUT, 0};
                    poll(&q, 1, -1);
                    continue;
                }
                return; /* closed, or an error: hiredis sees the socket close */
            }
        }
        if (p[0].revents) {
            ssize_t k = recv(local, buf, sizeof(buf), 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                SSL_shutdown(r->ssl);
                return;
            }
            if (ssl_write_all(r, buf, (int)k) != 0)
                return;
        }
    }
}

int sw_redis_tls_peer_is_us(int fd)
{
    struct ucred uc = {0};
    socklen_t len = sizeof(uc);
    return fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0 &&
           len == sizeof(uc) && uc.pid == getpid();
}

static void *relay_main(void *arg)
{
    struct relay *r = arg;
    int local = -1;
    /* OpenSSL writes with write(2): a server gone would raise SIGPIPE and
     * kill a process that does not ignore it. Blocked here, the write
     * fails with EPIPE instead, and the relay ends. */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    struct pollfd a[2] = {{r->listen, POLLIN, 0}, {relays_stop[0], POLLIN, 0}};
    int64_t deadline = now_ms() + r->accept_ms;
    for (;;) {
        int64_t left = deadline - now_ms();
        int n = left > 0 ? poll(a, 2, (int)left) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0 && a[0].revents && !a[1].revents)
            local = accept4(r->listen, NULL, NULL, SOCK_CLOEXEC);
        break;
    }
    if (local >= 0 && !sw_redis_tls_peer_is_us(local)) {
        close(local); /* another process: it gets nothing, and the relay ends */
        local = -1;
    }
    /* One connection only: nobody else gets in, and nothing is left on disk. */
    close(r->listen);
    r->listen = -1;
    unlink(r->path);
    r->path[0] = '\0';
    rmdir(r->dir);
    r->dir[0] = '\0';
    if (local >= 0) {
        pump(r, local);
        close(local);
    }
    relay_free(r);
    /* The thread's own OpenSSL state, freed now rather than by a thread
     * key destructor after the count below says this relay is done. */
    OPENSSL_thread_stop();
    pthread_mutex_lock(&relays_mu);
    if (--relays_live == 0)
        pthread_cond_broadcast(&relays_cv);
    pthread_mutex_unlock(&relays_mu);
    return NULL;
}

/* The private directory and socket the relay listens on. */
static int listen_private(struct relay *r, const char *hp, struct sw_error *err)
{
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(r->dir, sizeof(r->dir), "%s/spillway-rediss-XXXXXX", tmp);
    if (mkdtemp(r->dir) == NULL) { /* mode 0700 */
        int e = errno;
        r->dir[0] = '\0';
        return sw_error_set(err, SW_EIO, "rediss %s: cannot make a private directory in %s: %s", hp,
                            tmp, strerror(e));
    }
    snprintf(r->path, sizeof(r->path), "%s/s", r->dir);
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    if (strlen(r->path) >= sizeof(sa.sun_path))
        return sw_error_set(err, SW_ETOOBIG, "rediss %s: the socket path %s is too long", hp,
                            r->path);
    memcpy(sa.sun_path, r->path, strlen(r->path) + 1);
    r->listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (r->listen < 0 || bind(r->listen, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(r->listen, 1) != 0) {
        int e = errno;
        return sw_error_set(err, SW_EIO, "rediss %s: cannot listen on %s: %s", hp, r->path,
                            strerror(e));
    }
    return 0;
}

int sw_redis_tls_open(const char *host, int port, const struct sw_redis_tls_opts *o,
                      long timeout_ms, char *path, size_t pathlen, struct sw_error *err)
{
    char hp[300];
    snprintf(hp, sizeof(hp), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    struct relay *r = sw_calloc(1, sizeof(*r));
    if (r == NULL)
        return sw_error_set(err, SW_ENOMEM, "rediss %s: out of memory", hp);
    r->tcp = -1;
    r->listen = -1;
    /* hiredis connects from the loop once it gets round to it. */
    r->accept_ms = timeout_ms < 10000 ? 10000 : timeout_ms;
    int64_t deadline = now_ms() + timeout_ms;
    pthread_once(&relays_once, relays_init);
    ERR_clear_error();
    int rc = 0;
    r->ctx = SSL_CTX_new(TLS_client_method());
    if (r->ctx == NULL) {
        rc = sw_error_set(err, SW_ENOMEM, "rediss %s: out of memory", hp);
        goto fail;
    }
    SSL_CTX_set_min_proto_version(r->ctx, TLS1_2_VERSION);
    /* SIGPIPE from the handshake's writes, as in relay_main, but only for
     * this call: a pending one is taken before the caller's mask is back. */
    sigset_t pipe, old;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    if ((rc = load_trust(r->ctx, o, hp, err)) == 0 &&
        (rc = tcp_connect(host, port, deadline, hp, &r->tcp, err)) == 0)
        rc = handshake(r, host, deadline, hp, err);
    sigset_t pending;
    struct timespec zero = {0, 0};
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(&old, SIGPIPE))
        sigtimedwait(&pipe, NULL, &zero);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0 || (rc = listen_private(r, hp, err)) != 0)
        goto fail;
    if (strlen(r->path) >= pathlen) {
        rc = sw_error_set(err, SW_ETOOBIG, "rediss %s: the socket path is too long", hp);
        goto fail;
    }
    snprintf(path, pathlen, "%s", r->path);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&relays_mu);
    relays_live++;
    pthread_mutex_unlock(&relays_mu);
    int pe = pthread_create(&t, &attr, relay_main, r);
    pthread_attr_destroy(&attr);
    if (pe != 0) {
        pthread_mutex_lock(&relays_mu);
        relays_live--;
        pthread_mutex_unlock(&relays_mu);
        rc = sw_error_set(err, SW_ENOMEM, "rediss %s: cannot start the relay thread: %s", hp,
                          strerror(pe));
        goto fail;
    }
    return 0;
fail:
    ERR_clear_error();
    relay_free(r);
    return rc;
}
