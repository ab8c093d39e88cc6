/*
 * Tests for common/failpoint.c (built only with SW_FAILPOINTS): a crash
 * point kills the process with SIGKILL the Nth time it is reached and no
 * other point does; a hold point runs its continuation MS later from the
 * loop with a copy of its argument, and an unarmed or malformed one runs it
 * at once. The crashes run in a forked child.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/failpoint.h"

/* Runs `body` in a child armed with SPILLWAY_CRASH_AT=`at`; returns the
 * child's wait status and the bytes it wrote to `out` (one a point passed). */
static int in_child(const char *at, void (*body)(int fd), char *out, size_t len)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        setenv("SPILLWAY_CRASH_AT", at, 1);
        unsetenv("SPILLWAY_TEST_HOLD");
        sw__failpoint_init();
        body(p[1]);
        _exit(0);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(p[0], out + n, len - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(p[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* Passes after-decide five times and after-data five times, writing a
 * byte after each pass of after-data. */
static void five_each(int fd)
{
    for (int i = 0; i < 5; i++)
        SW_FAILPOINT_CRASH(SW_FP_AFTER_DECIDE);
    for (int i = 0; i < 5; i++) {
        SW_FAILPOINT_CRASH(SW_FP_AFTER_DATA);
        if (write(fd, "x", 1) != 1)
            _exit(3);
    }
}

static void test_crash_at_the_nth_pass(void **state)
{
    (void)state;
    char out[16];
    int st = in_child("after-data:3", five_each, out, sizeof(out));
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    assert_string_equal(out, "xx"); /* passed twice, killed at the third */

    st = in_child("after-data", five_each, out, sizeof(out));
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    assert_string_equal(out, ""); /* killed at the first */
}

static void test_crash_nowhere_else(void **state)
{
    (void)state;
    char out[16];
    /* Another point, an unknown one, a name's prefix, a bad count. */
    static const char *const unarmed[] = {"after-finish", "no-such-point", "after-dat",
                                          "after-data:0", "after-data:x",  ""};
    for (size_t i = 0; i < sizeof(unarmed) / sizeof(unarmed[0]); i++) {
        int st = in_child(unarmed[i], five_each, out, sizeof(out));
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_string_equal(out, "xxxxx");
    }
}

struct arg {
    int value;
    char word[8];
};

static int calls;
static struct arg seen;
static const struct arg *seen_at;

static void cont(void *a)
{
    calls++;
    seen = *(const struct arg *)a;
    seen_at = a;
}

static void test_hold(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    setenv("SPILLWAY_TEST_HOLD", "hold-take:60", 1);
    unsetenv("SPILLWAY_CRASH_AT");
    sw__failpoint_init();

    /* Armed: not run now; run 60 ms later with the argument as it was. */
    struct arg a = {.value = 7, .word = "take"};
    calls = 0;
    uv_update_time(&loop);
    uint64_t t0 = uv_now(&loop); /* the loop's milliseconds, as its timers count */
    SW_FAILPOINT_HOLD(&loop, SW_FP_HOLD_TAKE, "onprem/ns/job", cont, &a);
    assert_int_equal(calls, 0);
    a.value = 8;
    strcpy(a.word, "later");
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(calls, 1);
    assert_true(uv_now(&loop) - t0 >= 60);
    assert_int_equal(seen.value, 7);
    assert_string_equal(seen.word, "take");
    assert_ptr_not_equal(seen_at, &a);

    /* Another point: run at once, with the caller's own argument. */
    calls = 0;
    SW_FAILPOINT_HOLD(&loop, SW_FP_HOLD_RELEASE, "onprem/ns/job", cont, &a);
    assert_int_equal(calls, 1);
    assert_ptr_equal(seen_at, &a);

    /* A hold without its milliseconds arms nothing. */
    setenv("SPILLWAY_TEST_HOLD", "hold-take", 1);
    sw__failpoint_init();
    calls = 0;
    SW_FAILPOINT_HOLD(&loop, SW_FP_HOLD_TAKE, "onprem/ns/job", cont, &a);
    assert_int_equal(calls, 1);
    assert_ptr_equal(seen_at, &a);

    unsetenv("SPILLWAY_TEST_HOLD");
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_at_the_nth_pass),
        cmocka_unit_test(test_crash_nowhere_else),
        cmocka_unit_test(test_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
