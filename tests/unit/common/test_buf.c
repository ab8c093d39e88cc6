/* Tests for common/buf.c: growth, the hard cap, and allocation failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/error.h"

static void test_add_grows_and_terminates(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(sw_buf_addf(&b, "%03d,", i % 1000), 0);
    assert_int_equal(b.len, 4000);
    assert_int_equal(b.data[b.len], '\0');
    assert_memory_equal(b.data, "000,001,", 8);
    size_t len;
    char *d = sw_buf_take(&b, &len);
    assert_int_equal(len, 4000);
    assert_null(b.data);
    sw_free(d);
}

static void test_hard_cap_refuses_without_harm(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 10);
    assert_int_equal(sw_buf_adds(&b, "0123456789"), 0);
    assert_int_equal(sw_buf_adds(&b, "x"), SW_ETOOBIG);
    /* The content is unchanged by the refused append. */
    assert_int_equal(b.len, 10);
    assert_string_equal(b.data, "0123456789");
    assert_int_equal(sw_buf_addf(&b, "%d", 7), SW_ETOOBIG);
    sw_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    sw_buf_free(&b);
}

static void test_allocation_failure_is_reported(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1000);
    sw_alloc_fail_at(1);
    assert_int_equal(sw_buf_adds(&b, "hello"), SW_ENOMEM);
    assert_true(sw_alloc_injected());
    sw_alloc_reset();
    assert_int_equal(b.len, 0);
    assert_int_equal(sw_buf_adds(&b, "hello"), 0);
    assert_string_equal(b.data, "hello");
    sw_buf_free(&b);
}

/* A buffer that holds a secret leaves nothing of it behind when reset
 * (the memory it keeps is zero where the secret was), and grows and frees
 * as any other. */
static void test_wipe(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    sw_buf_set_wipe(&b);
    assert_int_equal(sw_buf_adds(&b, "c2VjcmV0"), 0);
    for (int i = 0; i < 200; i++)
        assert_int_equal(sw_buf_adds(&b, "password"), 0);
    assert_int_equal(b.len, 8 + 200 * 8);
    assert_memory_equal(b.data, "c2VjcmV0password", 16);
    char *kept = b.data;
    size_t n = b.len;
    sw_buf_reset(&b);
    assert_ptr_equal(b.data, kept);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(kept[i], 0);
    sw_buf_free(&b);
    char *s = sw_strdup("token");
    sw_wipe(s, 3);
    assert_memory_equal(s, "\0\0\0en", 5);
    sw_free_wiped(s);
    sw_free_wiped(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_grows_and_terminates),
        cmocka_unit_test(test_hard_cap_refuses_without_harm),
        cmocka_unit_test(test_allocation_failure_is_reported),
        cmocka_unit_test(test_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
