/*
 * thread.h - one blocking job on a thread of its own, its end reported on
 * the loop.
 *
 * libuv's worker pool is shared and small (4 threads by default): it runs
 * file and DNS requests and every uv_queue_work, among them the SHA-256
 * jobs of the copies (replication/copy.c). A job queued there that waits
 * for other pool work, as a replication rule's run waits for its copies'
 * hashes, stops the pool once there are as many such jobs as threads. A
 * job that blocks for long or waits for pool work runs here instead: a
 * thread of its own, started for it and joined when it ends, so it never
 * takes a pool thread. The caller bounds how many run at once.
 */
#ifndef SW_COMMON_THREAD_H
#define SW_COMMON_THREAD_H

#include <uv.h>

struct sw_thread_job;

/** The blocking part, on the job's own thread: it must not touch the loop. */
typedef void (*sw_thread_work_cb)(struct sw_thread_job *job);
/**
 * The end, on the loop, after the thread was joined: status 0, or SW_EIO
 * when no thread could be started (the work did not run). The job's memory
 * is the caller's again (it may free it here).
 */
typedef void (*sw_thread_done_cb)(struct sw_thread_job *job, int status);

/** A job; embed it in the caller's own struct. Fields other than data are private. */
struct sw_thread_job {
    void *data; /* the caller's */
    uv_loop_t *loop;
    uv_async_t async;
    uv_thread_t thread;
    sw_thread_work_cb work;
    sw_thread_done_cb done;
    int started;
};

/**
 * Runs `work` on a new thread, then `done` on `loop` (borrowed). `job` is
 * borrowed until `done` runs. Returns 0 (done runs exactly once, later, on
 * the loop) or SW_EIO when the loop cannot be woken (done never runs).
 */
int sw_thread_job_start(uv_loop_t *loop, struct sw_thread_job *job, sw_thread_work_cb work,
                        sw_thread_done_cb done);

#endif
