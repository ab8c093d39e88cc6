/* Tests for common/dns1123.c: Kubernetes names as the API server checks
 * them (apimachinery's IsDNS1123Subdomain and IsDNS1123Label). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/dns1123.h"

static void test_subdomain(void **state)
{
    (void)state;
    const char *good[] = {"a", "0", "a-b", "a.b", "a--b.c-d.e", "registry.example.com", "1.2.3"};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
        if (!sw_dns1123_subdomain(good[i]))
            fail_msg("\"%s\" refused", good[i]);
    const char *badv[] = {"",  "-a",  "a-",  ".a",  "a.", "a..b", "a.-b", "a-.b",
                          "A", "a_b", "a b", "a/b", "..", ".",    "é"};
    for (size_t i = 0; i < sizeof(badv) / sizeof(*badv); i++)
        if (sw_dns1123_subdomain(badv[i]))
            fail_msg("\"%s\" accepted", badv[i]);
    assert_false(sw_dns1123_subdomain(NULL));
    /* 253 in all, labels longer than 63 allowed inside a subdomain. */
    char s[300];
    memset(s, 'a', 253);
    s[253] = '\0';
    assert_true(sw_dns1123_subdomain(s));
    s[253] = 'a';
    s[254] = '\0';
    assert_false(sw_dns1123_subdomain(s));
}

static void test_label(void **state)
{
    (void)state;
    assert_true(sw_dns1123_label("team-a"));
    assert_true(sw_dns1123_label("0"));
    assert_false(sw_dns1123_label("a.b"));
    assert_false(sw_dns1123_label("-a"));
    assert_false(sw_dns1123_label("a-"));
    assert_false(sw_dns1123_label(""));
    assert_false(sw_dns1123_label(NULL));
    char s[70];
    memset(s, 'a', 63);
    s[63] = '\0';
    assert_true(sw_dns1123_label(s));
    s[63] = 'a';
    s[64] = '\0';
    assert_false(sw_dns1123_label(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subdomain),
        cmocka_unit_test(test_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
