/*
 * redis_tls.h - TLS for the Redis clients (rediss://), as a relay in the
 * process.
 *
 * Debian 12's hiredis (0.14) has no TLS and cannot take custom I/O
 * functions, and Debian ships no other Redis client library. So hiredis
 * keeps speaking plain RESP, to a unix socket in a private directory
 * (mode 0700, so only this user can connect), and a thread of the relay
 * carries the bytes over a TLS connection (OpenSSL) to the server. The
 * TCP connect, the handshake and the checks of the server's certificate
 * (chain to the CA file, host name or IP address) are done before the
 * socket is handed to hiredis, so a failure is reported with its reason,
 * and a server that fails them never sees a byte of the caller's (no
 * password is sent to it).
 */
#ifndef SW_STORE_REDIS_TLS_H
#define SW_STORE_REDIS_TLS_H

#include <stddef.h>

#include "common/error.h"

/** Where the relay's trust comes from; every string is borrowed. */
struct sw_redis_tls_opts {
    const char *ca_file;   /* PEM CAs to verify the server; NULL: the system's */
    const char *cert_file; /* PEM client certificate (chain), or NULL */
    const char *key_file;  /* its PEM private key; given with cert_file */
};

/**
 * Connects to host:port over TCP, runs the TLS handshake (TLS 1.2 or
 * later, SNI with a host name) and verifies the server's certificate
 * against o->ca_file and `host` (a name, or an IP address checked against
 * the certificate's IP addresses), each step within `timeout_ms`. On
 * success starts the relay's thread, writes into `path` (pathlen bytes)
 * the unix socket to connect to, and returns 0. The socket accepts one
 * connection within `timeout_ms`, then is removed; the thread ends when
 * either side closes, or when the process exits: exit() waits for the
 * relays' threads (up to 2 s) before OpenSSL's own cleanup.
 *
 * Errors name host:port and the reason: SW_ENET (cannot connect),
 * SW_ETIMEDOUT, SW_ETLS (the handshake failed: not a TLS server, say, or
 * the certificate was not accepted, and why), SW_EIO (a CA, certificate
 * or key file cannot be read; the message names the file), SW_ENOMEM.
 * Blocking: for threads other than the loop's.
 */
int sw_redis_tls_open(const char *host, int port, const struct sw_redis_tls_opts *o,
                      long timeout_ms, char *path, size_t pathlen, struct sw_error *err);

/*
 * 1 when the other end of the connected unix socket fd is this process
 * (SO_PEERCRED): the relay serves only its own process, and the client
 * sends its password only to its own relay, so that a process of another
 * user that swapped the socket in a directory it may rename (a shared,
 * non-sticky temporary directory) gets neither. 0 otherwise.
 */
int sw_redis_tls_peer_is_us(int fd);

#endif
