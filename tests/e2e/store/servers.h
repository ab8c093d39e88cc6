/*
 * servers.h - private redis-server processes for the store's e2e tests
 * (a TLS-only data node and Sentinel, a lying Sentinel): a free port, a
 * start, and a stop that the teardown runs even when the test failed.
 */
#ifndef SW_TEST_E2E_STORE_SERVERS_H
#define SW_TEST_E2E_STORE_SERVERS_H

#include <sys/types.h>

/** A TCP port free on 127.0.0.1 now (fails the test when there is none). */
int sw_test_free_port(void);

/** Starts redis-server on `conf` (with --sentinel when sentinel); returns its pid. */
pid_t sw_test_start_server(const char *conf, int sentinel);

/**
 * SIGKILLs and reaps the n servers (0 entries skipped, entries zeroed) and
 * removes `dir` (a mkdtemp directory, emptied to "") when it is set.
 * Returns 0, or -1 when the directory could not be removed.
 */
int sw_test_stop_servers(pid_t *pids, size_t n, char *dir);

#endif
