/* Tests for clusters/ratelimit.c: token bucket timing, backoff and retry rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clusters/ratelimit.h"
#include "common/error.h"

static void test_bucket(void **state)
{
    (void)state;
    struct sw_ratelimit rl;
    sw_ratelimit_init(&rl, 10.0, 3, 1000);
    /* The burst goes out at once. */
    assert_int_equal(sw_ratelimit_reserve(&rl, 1000), 0);
    assert_int_equal(sw_ratelimit_reserve(&rl, 1000), 0);
    assert_int_equal(sw_ratelimit_reserve(&rl, 1000), 0);
    /* Then one every 100 ms, reservations queueing behind each other. */
    assert_int_equal(sw_ratelimit_reserve(&rl, 1000), 100);
    assert_int_equal(sw_ratelimit_reserve(&rl, 1000), 200);
    assert_int_equal(sw_ratelimit_reserve(&rl, 1150), 150);
    /* After a long pause the bucket is full again, never fuller. */
    assert_int_equal(sw_ratelimit_reserve(&rl, 100000), 0);
    assert_int_equal(sw_ratelimit_reserve(&rl, 100000), 0);
    assert_int_equal(sw_ratelimit_reserve(&rl, 100000), 0);
    assert_int_equal(sw_ratelimit_reserve(&rl, 100000), 100);
    /* Unlimited. */
    sw_ratelimit_init(&rl, 0, 1, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(sw_ratelimit_reserve(&rl, 0), 0);
}

static void test_tokens(void **state)
{
    (void)state;
    struct sw_ratelimit rl;
    sw_ratelimit_init(&rl, 50.0, 100, 0);
    assert_true(sw_ratelimit_tokens(&rl, 0) == 100.0);
    for (int i = 0; i < 120; i++)
        sw_ratelimit_reserve(&rl, 0);
    /* 20 reserved ahead; looking does not take one. */
    assert_true(sw_ratelimit_tokens(&rl, 0) == -20.0);
    assert_true(sw_ratelimit_tokens(&rl, 0) == -20.0);
    /* 50 a second accrue: half the burst again after 1.4 s, full after 2.4 s, never more. */
    assert_true(sw_ratelimit_tokens(&rl, 1400) == 50.0);
    assert_true(sw_ratelimit_tokens(&rl, 2400) == 100.0);
    assert_true(sw_ratelimit_tokens(&rl, 60000) == 100.0);
    sw_ratelimit_init(&rl, 0, 7, 0);
    sw_ratelimit_reserve(&rl, 0);
    assert_true(sw_ratelimit_tokens(&rl, 0) == 7.0);
}

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(sw_backoff_ms(0, 200, 10000, -1, 0.999999), 199);
    assert_int_equal(sw_backoff_ms(0, 200, 10000, -1, 0.0), 100);
    assert_int_equal(sw_backoff_ms(3, 200, 10000, -1, 0.0), 800);
    assert_int_equal(sw_backoff_ms(10, 200, 10000, -1, 0.0), 5000);
    assert_int_equal(sw_backoff_ms(60, 200, 10000, -1, 0.0), 5000); /* no overflow */
    /* Retry-After wins, capped. */
    assert_int_equal(sw_backoff_ms(0, 200, 10000, 3, 0.5), 3000);
    assert_int_equal(sw_backoff_ms(0, 200, 10000, 0, 0.5), 0);
    assert_int_equal(sw_backoff_ms(0, 200, 10000, 3600, 0.5), SW_REST_MAX_RETRY_AFTER_MS);
}

static void test_should_retry(void **state)
{
    (void)state;
    assert_true(sw_should_retry("POST", 0, 429));
    assert_true(sw_should_retry("PATCH", 0, 503));
    assert_true(sw_should_retry("GET", 0, 500));
    assert_false(sw_should_retry("GET", 0, 501));
    assert_false(sw_should_retry("GET", 0, 404));
    assert_false(sw_should_retry("POST", 0, 409));
    assert_true(sw_should_retry("GET", SW_ENET, 0));
    assert_false(sw_should_retry("POST", SW_ENET, 0));
    assert_false(sw_should_retry("GET", SW_ETOOBIG, 200));
    assert_true(sw_should_retry("GET", SW_ETIMEDOUT, 0));
    /* TLS failures (certificate verification, handshake) are not retried. */
    assert_false(sw_should_retry("GET", SW_ETLS, 0));
    assert_false(sw_should_retry(NULL, SW_ETLS, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_should_retry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
