/*
 * thread.c - a blocking job on a thread of its own (thread.h): the thread
 * runs the work and wakes the loop through a uv_async; the loop joins the
 * thread once the async handle is closed, then reports the end.
 */
#include "common/thread.h"

#include "common/error.h"

static void on_closed(uv_handle_t *h)
{
    struct sw_thread_job *job = h->data;
    if (job->started)
        uv_thread_join(&job->thread);
    job->done(job, job->started ? 0 : SW_EIO);
}

static void on_async(uv_async_t *a)
{
    uv_close((uv_handle_t *)a, on_closed);
}

static void thread_main(void *arg)
{
    struct sw_thread_job *job = arg;
    job->work(job);
    uv_async_send(&job->async);
}

int sw_thread_job_start(uv_loop_t *loop, struct sw_thread_job *job, sw_thread_work_cb work,
                        sw_thread_done_cb done)
{
    job->loop = loop;
    job->work = work;
    job->done = done;
    job->started = 0;
    if (uv_async_init(loop, &job->async, on_async) != 0)
        return SW_EIO;
    job->async.data = job;
    if (uv_thread_create(&job->thread, thread_main, job) != 0) {
        /* No thread: the end (SW_EIO) is reported once the handle closes. */
        uv_close((uv_handle_t *)&job->async, on_closed);
        return 0;
    }
    job->started = 1;
    return 0;
}
