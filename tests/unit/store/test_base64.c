/* Tests for store/base64.c: RFC 4648 vectors and strict rejection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "store/base64.h"

static void test_rfc4648_vectors(void **state)
{
    (void)state;
    static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char out[16];
        sw_base64_encode(plain[i], strlen(plain[i]), out);
        assert_string_equal(out, enc[i]);
        assert_int_equal(strlen(out), sw_base64_encoded_len(strlen(plain[i])));
        unsigned char *dec = NULL;
        size_t n = 0;
        assert_int_equal(sw_base64_decode(enc[i], strlen(enc[i]), &dec, &n), 0);
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(dec, plain[i], n);
        sw_free(dec);
    }
}

static void test_whitespace_and_unpadded(void **state)
{
    (void)state;
    unsigned char *dec = NULL;
    size_t n = 0;
    assert_int_equal(sw_base64_decode("Zm9v\nYmE\r\n", 10, &dec, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(dec, "fooba", 5);
    sw_free(dec);
}

static void test_rejects_garbage(void **state)
{
    (void)state;
    unsigned char *dec = NULL;
    size_t n = 0;
    static const char *bad[] = {"Zm9v!", "Z", "Zg=a", "Zg===", "Zh==", "Zm9=v"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sw_base64_decode(bad[i], strlen(bad[i]), &dec, &n), SW_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_whitespace_and_unpadded),
        cmocka_unit_test(test_rejects_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
