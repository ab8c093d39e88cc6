/*
 * Tests for common/thread.c: a job runs on a thread of its own, so it makes
 * progress while every thread of libuv's pool is taken by work waiting for
 * it (the rule-run deadlock), and its end is reported once, on the loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/thread.h"

#define POOL 4 /* libuv's default pool size: the test does not change it */

struct gate {
    uv_mutex_t mu;
    uv_cond_t cv;
    int open;
};

static struct gate g;
static uv_thread_t loop_thread;
static int pool_done, job_done, job_status;
static uv_thread_t job_thread;

/* Pool work that waits until the job opens the gate. */
static void pool_wait(uv_work_t *w)
{
    (void)w;
    uv_mutex_lock(&g.mu);
    while (!g.open)
        uv_cond_wait(&g.cv, &g.mu);
    uv_mutex_unlock(&g.mu);
}

static void pool_after(uv_work_t *w, int status)
{
    (void)w;
    assert_int_equal(status, 0);
    pool_done++;
}

static void job_work(struct sw_thread_job *j)
{
    job_thread = uv_thread_self();
    *(int *)j->data = 42;
    uv_mutex_lock(&g.mu);
    g.open = 1;
    uv_cond_broadcast(&g.cv);
    uv_mutex_unlock(&g.mu);
}

static void job_end(struct sw_thread_job *j, int status)
{
    uv_thread_t self = uv_thread_self();
    assert_true(uv_thread_equal(&self, &loop_thread));
    assert_int_equal(*(int *)j->data, 42);
    job_status = status;
    job_done++;
}

static void test_job_runs_while_the_pool_is_full(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_mutex_init(&g.mu);
    uv_cond_init(&g.cv);
    g.open = 0;
    loop_thread = uv_thread_self();
    /* Every pool thread waits for the job; more work queued behind them. */
    uv_work_t w[POOL + 2];
    for (int i = 0; i < POOL + 2; i++)
        assert_int_equal(uv_queue_work(&loop, &w[i], pool_wait, pool_after), 0);
    int value = 0;
    struct sw_thread_job job = {.data = &value};
    assert_int_equal(sw_thread_job_start(&loop, &job, job_work, job_end), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(job_done, 1);
    assert_int_equal(job_status, 0);
    assert_int_equal(pool_done, POOL + 2);
    assert_int_equal(value, 42);
    assert_false(uv_thread_equal(&job_thread, &loop_thread));
    assert_int_equal(uv_loop_close(&loop), 0);
    uv_cond_destroy(&g.cv);
    uv_mutex_destroy(&g.mu);
}

static void count_work(struct sw_thread_job *j)
{
    __atomic_add_fetch((int *)j->data, 1, __ATOMIC_SEQ_CST);
}

static int ends;
static void count_end(struct sw_thread_job *j, int status)
{
    (void)j;
    assert_int_equal(status, 0);
    ends++;
}

static void test_many_jobs_each_end_once(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    int runs = 0;
    struct sw_thread_job jobs[16];
    for (int i = 0; i < 16; i++) {
        jobs[i] = (struct sw_thread_job){.data = &runs};
        assert_int_equal(sw_thread_job_start(&loop, &jobs[i], count_work, count_end), 0);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(runs, 16);
    assert_int_equal(ends, 16);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_runs_while_the_pool_is_full),
        cmocka_unit_test(test_many_jobs_each_end_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
