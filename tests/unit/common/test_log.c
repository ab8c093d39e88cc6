/* Tests for common/log.c: logfmt escaping of values and whole lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

/* Runs `emit` with the log going to a temporary file and returns the text
 * after the timestamp (checked for shape) in out. */
static void capture(void (*emit)(void), char *out, size_t outlen)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    sw_log_set_stream(f);
    emit();
    sw_log_set_stream(NULL);
    rewind(f);
    size_t n = fread(out, 1, outlen - 1, f);
    out[n] = '\0';
    fclose(f);
    /* ts=2026-11-21T10:00:00.123Z, logfmt's key first */
    assert_true(n > 28);
    assert_memory_equal(out, "ts=", 3);
    assert_int_equal(out[7], '-');
    assert_int_equal(out[13], 'T');
    assert_int_equal(out[22], '.');
    assert_int_equal(out[26], 'Z');
    assert_int_equal(out[27], ' ');
    memmove(out, out + 28, n - 28 + 1);
}

static void test_plain_values_unchanged(void **state)
{
    (void)state;
    assert_string_equal(sw_log_q("onprem"), "onprem");
    assert_string_equal(sw_log_q("a/b:c,d"), "a/b:c,d");
    assert_string_equal(sw_log_q("C:\\dir"), "C:\\dir"); /* a lone backslash needs no quotes */
    assert_string_equal(sw_log_q("gpu-\xc3\xa9t\xc3\xa9"), "gpu-\xc3\xa9t\xc3\xa9");
}

static void test_values_quoted_and_escaped(void **state)
{
    (void)state;
    assert_string_equal(sw_log_q(""), "\"\"");
    assert_string_equal(sw_log_q(NULL), "\"\"");
    assert_string_equal(sw_log_q("two words"), "\"two words\"");
    assert_string_equal(sw_log_q("k=v"), "\"k=v\"");
    assert_string_equal(sw_log_q("say \"hi\""), "\"say \\\"hi\\\"\"");
    assert_string_equal(sw_log_q("a\"b"), "\"a\\\"b\"");
    assert_string_equal(sw_log_q("C:\\my dir"), "\"C:\\\\my dir\"");
    assert_string_equal(sw_log_q("one\ntwo\r\tthree"), "\"one\\ntwo\\r\\tthree\"");
    assert_string_equal(sw_log_q("bell\x07"), "\"bell\\x07\"");
    assert_string_equal(sw_log_q("del\x7f"), "\"del\\x7f\"");
}

static void test_ring_holds_one_line(void **state)
{
    (void)state;
    const char *v[SW_LOG_Q_SLOTS];
    char in[SW_LOG_Q_SLOTS][16];
    for (int i = 0; i < SW_LOG_Q_SLOTS; i++) {
        snprintf(in[i], sizeof(in[i]), "v %d", i);
        v[i] = sw_log_q(in[i]);
    }
    for (int i = 0; i < SW_LOG_Q_SLOTS; i++) {
        char want[16];
        snprintf(want, sizeof(want), "\"v %d\"", i);
        assert_string_equal(v[i], want);
    }
}

static void test_escape_bounds(void **state)
{
    (void)state;
    char out[12];
    /* Unquoted, too long: cut with "...". */
    assert_int_equal(sw_log_escape("abcdefghijklmnop", out, sizeof(out)), 11);
    assert_string_equal(out, "abcdefgh...");
    /* Quoted, too long: the cut is inside the quotes. */
    assert_int_equal(sw_log_escape("a b c d e f g h", out, sizeof(out)), 11);
    assert_string_equal(out, "\"a b c ...\"");
    /* An escape is never split. */
    sw_log_escape("a b\"\"\"\"\"\"", out, sizeof(out));
    assert_string_equal(out, "\"a b\\\"...\"");
    /* Nor is a UTF-8 character (e-acute is 2 bytes). */
    sw_log_escape("a \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", out, sizeof(out));
    assert_string_equal(out, "\"a \xc3\xa9\xc3\xa9...\"");
    sw_log_escape("ab \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", out, sizeof(out));
    assert_string_equal(out, "\"ab \xc3\xa9...\"");
    sw_log_escape("abcdefg\xc3\xa9xyz", out, sizeof(out));
    assert_string_equal(out, "abcdefg...");
    /* Exactly fitting is not cut. */
    assert_int_equal(sw_log_escape("a b c d e", out, sizeof(out)), 11);
    assert_string_equal(out, "\"a b c d e\"");
    /* A long value through sw_log_q ends in "..." and fits its slot. */
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    big[5] = ' ';
    const char *q = sw_log_q(big);
    assert_int_equal(strlen(q), SW_LOG_Q_MAX - 1);
    assert_string_equal(q + SW_LOG_Q_MAX - 5, "...\"");
}

static void emit_exec_error(void)
{
    /* The message clusters/exec.c builds when a plugin fails: it quotes the
     * kubeconfig, the user and the command, and ends with the plugin's own
     * stderr line, itself with quotes. */
    const char *msg = "kubeconfig \"lab/cloud-spot-exec.kubeconfig\": user \"spot\": exec plugin "
                      "\"aws\": exited with status 255: error: \"token expired\"";
    SW_LOG(SW_LOG_ERROR, "exec credential failed", "cluster=%s error=%s", sw_log_q("cloud-spot"),
           sw_log_q(msg));
}

static void test_exec_error_line(void **state)
{
    (void)state;
    char line[1024];
    sw_log_set_level(SW_LOG_INFO);
    capture(emit_exec_error, line, sizeof(line));
    assert_string_equal(line,
                        "level=error msg=\"exec credential failed\" cluster=cloud-spot "
                        "error=\"kubeconfig \\\"lab/cloud-spot-exec.kubeconfig\\\": user "
                        "\\\"spot\\\": exec plugin \\\"aws\\\": exited with status 255: error: "
                        "\\\"token expired\\\"\"\n");
}

static void emit_odd_msg_and_raw_newline(void)
{
    SW_LOG(SW_LOG_WARN, "said \"no\"\nthen left", "path=%s raw=%s", sw_log_q("/var/lib/a b"),
           "x\ny");
    SW_LOG(SW_LOG_INFO, "listed", "informer=%s objects=%d", sw_log_q("pods onprem"), 3);
    SW_LOG(SW_LOG_INFO, "no fields", "%s", "");
}

static void test_msg_escaped_and_fields_kept_on_one_line(void **state)
{
    (void)state;
    char out[1024];
    sw_log_set_level(SW_LOG_INFO);
    capture(emit_odd_msg_and_raw_newline, out, sizeof(out));
    /* Compare line by line, past each later line's timestamp. */
    char *l2 = strchr(out, '\n');
    assert_non_null(l2);
    *l2++ = '\0';
    assert_string_equal(
        out, "level=warn msg=\"said \\\"no\\\"\\nthen left\" path=\"/var/lib/a b\" raw=x\\ny");
    char *l3 = strchr(l2, '\n');
    assert_non_null(l3);
    *l3++ = '\0';
    assert_string_equal(l2 + 28, "level=info msg=\"listed\" informer=\"pods onprem\" objects=3");
    assert_string_equal(l3 + 28, "level=info msg=\"no fields\" \n");
}

static int evaluated;

static const char *count(void)
{
    evaluated++;
    return "x";
}

static void emit_below_threshold(void)
{
    SW_LOG(SW_LOG_DEBUG, "hidden", "v=%s", count());
    SW_LOG(SW_LOG_WARN, "shown", "v=%s", count());
}

static void test_threshold_skips_arguments(void **state)
{
    (void)state;
    char out[256];
    evaluated = 0;
    sw_log_set_level(SW_LOG_INFO);
    capture(emit_below_threshold, out, sizeof(out));
    assert_int_equal(evaluated, 1);
    assert_string_equal(out, "level=warn msg=\"shown\" v=x\n");
    assert_int_equal(sw_log_level_parse("WARN"), SW_LOG_WARN);
    assert_int_equal(sw_log_level_parse("verbose"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_values_unchanged),
        cmocka_unit_test(test_values_quoted_and_escaped),
        cmocka_unit_test(test_ring_holds_one_line),
        cmocka_unit_test(test_escape_bounds),
        cmocka_unit_test(test_exec_error_line),
        cmocka_unit_test(test_msg_escaped_and_fields_kept_on_one_line),
        cmocka_unit_test(test_threshold_skips_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
