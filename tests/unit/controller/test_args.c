/* Tests for controller/cli/args.c: the one option parser of spillctl (both
 * value forms, misplaced and misspelt options, durations, positional
 * counts) and controller/cli/jsonpath.c, -o jsonpath's template subset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cli/args.h"
#include "controller/cli/jsonpath.h"
#include "controller/cli/output.h"

enum { K_CONC = 1, K_WATCH, K_ONCE, K_NS, K_ROLE };

static const struct sw_cli_opt run_opts[] = {
    {"concurrency", 0, SW_CLI_VALUE, K_CONC, "N"},
    {"watch", 0, SW_CLI_DURATION, K_WATCH, "DURATION"},
    {"once", 0, SW_CLI_FLAG, K_ONCE, NULL},
    {"namespace", 'n', SW_CLI_VALUE, K_NS, "NS"},
};
static const struct sw_cli_opt add_opts[] = {
    {"role", 0, SW_CLI_VALUE, K_ROLE, "ROLE"},
};
static const struct sw_cli_spec specs[] = {
    {.path = "replicate run", .opts = run_opts, .nopts = 4, .min_pos = 1, .max_pos = 1},
    {.path = "cluster add", .opts = add_opts, .nopts = 1, .min_pos = 1, .max_pos = 1},
};
static const struct sw_cli_spec *const all[] = {&specs[0], &specs[1]};

/* Parses the words of `line` (at most 16) with specs[which]. */
static int parse(int which, const char *line, struct sw_cli_args *a, struct sw_error *err)
{
    static char buf[512];
    static char *argv[17];
    snprintf(buf, sizeof(buf), "%s", line);
    int argc = 0;
    for (char *t = strtok(buf, " "); t != NULL && argc < 16; t = strtok(NULL, " "))
        argv[argc++] = t;
    sw_error_clear(err);
    return sw_cli_args_parse(&specs[which], all, 2, argc, argv, a, err);
}

static void test_both_value_forms(void **state)
{
    (void)state;
    struct sw_cli_args a;
    struct sw_error err;
    assert_int_equal(parse(0, "r1 --concurrency 8 --watch=10m -n research --once", &a, &err), 0);
    assert_string_equal(sw_cli_arg(&a, K_CONC), "8");
    assert_true(sw_cli_arg_seconds(&a, K_WATCH, 0) == 600);
    assert_string_equal(sw_cli_arg(&a, K_NS), "research");
    assert_string_equal(sw_cli_arg(&a, K_ONCE), "");
    assert_int_equal(a.npos, 1);
    assert_string_equal(a.pos[0], "r1");
    assert_int_equal(parse(0, "--concurrency=9 -nprod r1", &a, &err), 0);
    assert_string_equal(sw_cli_arg(&a, K_CONC), "9");
    assert_string_equal(sw_cli_arg(&a, K_NS), "prod");
    /* The last one wins; an absent option is NULL. */
    assert_int_equal(parse(0, "r1 --concurrency 1 --concurrency 2", &a, &err), 0);
    assert_string_equal(sw_cli_arg(&a, K_CONC), "2");
    assert_null(sw_cli_arg(&a, K_WATCH));
    /* After "--" everything is an argument. */
    assert_int_equal(parse(0, "-- --once", &a, &err), 0);
    assert_string_equal(a.pos[0], "--once");
    assert_null(sw_cli_arg(&a, K_ONCE));
}

static void test_unknown_misplaced_and_help(void **state)
{
    (void)state;
    struct sw_cli_args a;
    struct sw_error err;
    assert_int_equal(parse(0, "r1 --concurency 8", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "unknown option --concurency; did you mean --concurrency?"));
    assert_int_equal(parse(0, "r1 --role onprem", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "--role is not an option of this command; it belongs to "
                                    "\"spillctl cluster add\""));
    assert_int_equal(parse(0, "r1 --zzzzzzzz", &a, &err), SW_EINVAL);
    assert_null(strstr(err.msg, "did you mean"));
    assert_int_equal(parse(0, "r1 -x", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "unknown option -x"));
    assert_int_equal(parse(0, "r1 --once=yes", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "--once takes no value"));
    assert_int_equal(parse(0, "r1 --concurrency", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "--concurrency: expected N after it"));
    assert_int_equal(parse(0, "r1 --concurrency=", &a, &err), SW_EINVAL);
    /* Help wins over everything else on the line. */
    assert_int_equal(parse(0, "--bogus --help", &a, &err), 0);
    assert_true(a.help);
    assert_int_equal(parse(1, "-h", &a, &err), 0);
    assert_true(a.help);
}

static void test_positional_counts(void **state)
{
    (void)state;
    struct sw_cli_args a;
    struct sw_error err;
    assert_int_equal(parse(0, "--once", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "expected 1 argument, got 0"));
    assert_int_equal(parse(0, "a b", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "unexpected argument \"b\""));
}

static void test_durations(void **state)
{
    (void)state;
    double s;
    assert_int_equal(sw_cli_duration_parse("10m", &s), 0);
    assert_true(s == 600);
    assert_int_equal(sw_cli_duration_parse("1h30m", &s), 0);
    assert_true(s == 5400);
    assert_int_equal(sw_cli_duration_parse("90s", &s), 0);
    assert_true(s == 90);
    assert_int_equal(sw_cli_duration_parse("500ms", &s), 0);
    assert_true(s == 0.5);
    assert_int_equal(sw_cli_duration_parse("600", &s), 0);
    assert_true(s == 600);
    assert_int_equal(sw_cli_duration_parse("10x", &s), SW_EINVAL);
    assert_int_equal(sw_cli_duration_parse("-5s", &s), SW_EINVAL);
    assert_int_equal(sw_cli_duration_parse("", &s), SW_EINVAL);
    assert_int_equal(sw_cli_duration_parse("m", &s), SW_EINVAL);
    /* Zero is refused in both forms, as the annotations refuse it. */
    assert_int_equal(sw_cli_duration_parse("0", &s), SW_EINVAL);
    assert_int_equal(sw_cli_duration_parse("000", &s), SW_EINVAL);
    assert_int_equal(sw_cli_duration_parse("0s", &s), SW_EINVAL);
    struct sw_cli_args a;
    struct sw_error err;
    assert_int_equal(parse(0, "r1 --watch 10x", &a, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "--watch: expected a duration such as 90s, 10m or 1h30m"));
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(sw_cli_edit_distance("concurency", "concurrency"), 1);
    assert_int_equal(sw_cli_edit_distance("", "abc"), 3);
    assert_int_equal(sw_cli_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(sw_cli_edit_distance("same", "same"), 0);
}

/* Evaluates `tmpl` against `json` into a string (free it); *rc gets the result. */
static char *jp(const char *tmpl, const char *json, int *rc, struct sw_error *err)
{
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    sw_error_clear(err);
    *rc = sw_cli_jsonpath_print(f, tmpl, doc, err);
    fclose(f);
    cJSON_Delete(doc);
    return buf;
}

static void test_jsonpath(void **state)
{
    (void)state;
    const char *doc = "{\"items\":[{\"name\":\"a\",\"n\":1,\"m\":{\"x-y\":true}},"
                      "{\"name\":\"b\",\"n\":2.5,\"m\":{\"x-y\":false}}]}";
    struct {
        const char *tmpl, *want;
    } ok[] = {
        {"{.items[*].name}", "a b"},
        {"{.items[1].n}", "2.5"},
        {"{.items[0].m}", "{\"x-y\":true}"},
        {"{.items[0].m['x-y']}", "true"},
        {"{range .items[*]}{.name}={.n}{\"\\n\"}{end}", "a=1\nb=2.5\n"},
        {"{range .items}[{@.name}]{end}", "[a][b]"},
        {"names: {$.items[*].name}", "names: a b"},
        {"{.missing.key}", ""},
        {"{.items[7].name}", ""},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int rc;
        struct sw_error err;
        char *got = jp(ok[i].tmpl, doc, &rc, &err);
        if (rc != 0)
            fail_msg("%s: %s", ok[i].tmpl, err.msg);
        assert_string_equal(got, ok[i].want);
        free(got);
    }
    struct {
        const char *tmpl, *msg;
    } bad[] = {
        {"{.items[?(@.n>1)].name}", "filters"},
        {"{..name}", "recursive descent"},
        {"{.items[0:1]}", "slices"},
        {"{.items[0,1]}", "unions"},
        {"{.items[-1]}", "no negative indexes"},
        {"{range .items[*]}{.name}", "{range} without {end}"},
        {"{end}", "{end} without {range}"},
        {"{.name", "'{' without '}'"},
        {"{}", "empty expression"},
        {"{name}", "expected a path"},
        {"", "expected a template"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sw_error err;
        sw_error_clear(&err);
        assert_int_equal(sw_cli_jsonpath_check(bad[i].tmpl, &err), SW_EINVAL);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("%s: got \"%s\", expected it to say \"%s\"", bad[i].tmpl, err.msg, bad[i].msg);
    }
}

static void test_output_name_and_jsonpath(void **state)
{
    (void)state;
    static const struct sw_cli_column cols[] = {{"NAME", "name", 0}, {"N", "n", 0}};
    cJSON *items = cJSON_Parse("[{\"name\":\"a\",\"n\":1},{\"name\":\"b\",\"n\":2}]");
    enum sw_cli_format f;
    const char *tmpl;
    struct sw_error err;
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    assert_int_equal(sw_cli_format_parse2("name", &f, &tmpl, &err), 0);
    assert_int_equal(sw_cli_print(o, f, items, NULL, cols, 2), 0);
    assert_int_equal(sw_cli_format_parse2("jsonpath={.items[*].n}", &f, &tmpl, &err), 0);
    assert_int_equal(f, SW_CLI_JSONPATH);
    assert_string_equal(tmpl, "{.items[*].n}");
    sw_cli_print_options(0, tmpl);
    assert_int_equal(sw_cli_print(o, f, items, NULL, cols, 2), 0);
    fputc('|', o);
    sw_cli_print_options(1, NULL);
    assert_int_equal(sw_cli_print(o, SW_CLI_TABLE, items, NULL, cols, 2), 0);
    sw_cli_print_options(0, NULL);
    fclose(o);
    assert_string_equal(buf, "a\nb\n1 2|a   1\nb   2\n");
    free(buf);
    cJSON_Delete(items);
    assert_int_equal(sw_cli_format_parse2("jsonpath={..x}", &f, &tmpl, &err), SW_EINVAL);
    assert_int_equal(sw_cli_format_parse2("jsonpath", &f, &tmpl, &err), SW_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_value_forms),
        cmocka_unit_test(test_unknown_misplaced_and_help),
        cmocka_unit_test(test_positional_counts),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_edit_distance),
        cmocka_unit_test(test_jsonpath),
        cmocka_unit_test(test_output_name_and_jsonpath),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
