/* Tests for common/prom.c: label values escaped for the Prometheus text
 * format, and cut only between whole escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/prom.h"

static void test_escapes(void **state)
{
    (void)state;
    char out[SW_PROM_LABEL_MAX];
    assert_string_equal(sw_prom_label("team-a", out, sizeof(out)), "team-a");
    assert_string_equal(sw_prom_label("", out, sizeof(out)), "");
    assert_string_equal(sw_prom_label(NULL, out, sizeof(out)), "");
    assert_string_equal(sw_prom_label("a\\b", out, sizeof(out)), "a\\\\b");
    assert_string_equal(sw_prom_label("say \"hi\"", out, sizeof(out)), "say \\\"hi\\\"");
    assert_string_equal(sw_prom_label("two\nlines", out, sizeof(out)), "two\\nlines");
    /* Other bytes (tabs, UTF-8) are kept as they are, as the format allows. */
    assert_string_equal(sw_prom_label("t\tü", out, sizeof(out)), "t\tü");
}

/* A team name written to forge a second series stays inside its value:
 * every quote in the result is escaped. */
static void test_forged_series(void **state)
{
    (void)state;
    char out[SW_PROM_LABEL_MAX];
    const char *team = "x\",cluster=\"evil\"} 1e9\nspillway_cloud_spend_dollars_total{team=\"y";
    sw_prom_label(team, out, sizeof(out));
    assert_null(strchr(out, '\n'));
    for (const char *p = out; (p = strchr(p, '"')) != NULL; p++)
        assert_int_equal(p[-1], '\\');
    assert_string_equal(out, "x\\\",cluster=\\\"evil\\\"} 1e9\\nspillway_cloud_spend_dollars_"
                             "total{team=\\\"y");
}

/* The longest value every struct holds (63 bytes) fits, escaped whole; a
 * value cut short never ends in a lone backslash. */
static void test_bounds(void **state)
{
    (void)state;
    char v[64], out[SW_PROM_LABEL_MAX];
    memset(v, '"', 63);
    v[63] = '\0';
    assert_int_equal(strlen(sw_prom_label(v, out, sizeof(out))), 126);
    char small[6];
    assert_string_equal(sw_prom_label("ab\"cd", small, sizeof(small)), "ab\\\"c");
    assert_string_equal(sw_prom_label("abc\"d", small, sizeof(small)), "abc\\\"");
    assert_string_equal(sw_prom_label("abcd\"e", small, sizeof(small)), "abcd");
    assert_string_equal(sw_prom_label("abcd\\", small, sizeof(small)), "abcd");
    char one[1];
    assert_string_equal(sw_prom_label("x", one, sizeof(one)), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_forged_series),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
