/* Tests for controller/cli/output.c: tables, wide columns, JSON and YAML,
 * compared with the exact text expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cli/output.h"

/* Prints with sw_cli_print into a string (free it). */
static char *print(enum sw_cli_format fmt, const char *items_json, const char *rows_json,
                   const struct sw_cli_column *cols, size_t ncols, int *rc)
{
    cJSON *items = cJSON_Parse(items_json);
    cJSON *rows = rows_json ? cJSON_Parse(rows_json) : NULL;
    assert_non_null(items);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    *rc = sw_cli_print(f, fmt, items, rows, cols, ncols);
    fclose(f);
    cJSON_Delete(items);
    cJSON_Delete(rows);
    return buf;
}

static char *yaml_of(const char *json)
{
    cJSON *v = cJSON_Parse(json);
    assert_non_null(v);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sw_cli_write_yaml(f, v);
    fclose(f);
    cJSON_Delete(v);
    return buf;
}

static const struct sw_cli_column cols[] = {
    {"name", "name", 0},     {"Role", "role", 0},   {"gpus", "capacity.free", 0},
    {"server", "server", 1}, {"pools", "pools", 1},
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static const char *items_json =
    "[{\"name\":\"onprem\",\"role\":\"onprem\",\"capacity\":{\"free\":12},"
    "\"server\":\"https://10.0.0.1:6443\",\"pools\":[\"a100\",\"h100\"]},"
    "{\"name\":\"cloud-spot-east\",\"role\":\"cloud\",\"capacity\":{\"free\":0.5},"
    "\"server\":null,\"pools\":[]},"
    "{\"name\":\"r\\u00e9gion\",\"role\":\"two\\nlines\"}]";

static void test_table_aligned(void **state)
{
    (void)state;
    int rc;
    char *s = print(SW_CLI_TABLE, items_json, NULL, cols, NCOLS, &rc);
    assert_int_equal(rc, 0);
    /* The width of "r\u00e9gion" is 6 characters, not 7 bytes; control
     * characters become spaces; missing cells are <none>; the last column
     * carries no trailing blanks. */
    assert_string_equal(s, "NAME              ROLE        GPUS\n"
                           "onprem            onprem      12\n"
                           "cloud-spot-east   cloud       0.5\n"
                           "r\xc3\xa9gion            two lines   <none>\n");
    free(s);
}

static void test_wide_adds_columns(void **state)
{
    (void)state;
    int rc;
    char *s = print(SW_CLI_WIDE, items_json, NULL, cols, NCOLS, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(
        s, "NAME              ROLE        GPUS     SERVER                  POOLS\n"
           "onprem            onprem      12       https://10.0.0.1:6443   a100,h100\n"
           "cloud-spot-east   cloud       0.5      <none>\n"
           "r\xc3\xa9gion            two lines   <none>   <none>                  <none>\n");
    free(s);
}

static void test_table_rows_and_empty(void **state)
{
    (void)state;
    int rc;
    /* Rows flatten items for the table only. */
    char *s =
        print(SW_CLI_TABLE, "[{\"name\":\"x\",\"pools\":[1,2]}]",
              "[{\"name\":\"x\",\"role\":\"p1\"},{\"name\":\"x\",\"role\":\"p2\"}]", cols, 2, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "NAME   ROLE\n"
                           "x      p1\n"
                           "x      p2\n");
    free(s);
    s = print(SW_CLI_TABLE, "[]", NULL, cols, NCOLS, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "NAME   ROLE   GPUS\n");
    free(s);
    s = print(SW_CLI_TABLE, "{}", NULL, cols, NCOLS, &rc);
    assert_int_equal(rc, SW_EINVAL);
    free(s);
}

static void test_json(void **state)
{
    (void)state;
    int rc;
    char *s = print(SW_CLI_JSON,
                    "[{\"name\":\"a \\\"b\\\"\\\\\\n\\u0001\",\"n\":3,\"f\":0.1,\"big\":1e300,"
                    "\"neg\":-2,\"ok\":true,\"no\":null,\"e\":{},\"l\":[],"
                    "\"pools\":[{\"k\":\"v\"},[1]]}]",
                    "[{\"name\":\"flattened\"}]", cols, NCOLS, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "{\n"
                           "  \"items\": [\n"
                           "    {\n"
                           "      \"name\": \"a \\\"b\\\"\\\\\\n\\u0001\",\n"
                           "      \"n\": 3,\n"
                           "      \"f\": 0.1,\n"
                           "      \"big\": 1e+300,\n"
                           "      \"neg\": -2,\n"
                           "      \"ok\": true,\n"
                           "      \"no\": null,\n"
                           "      \"e\": {},\n"
                           "      \"l\": [],\n"
                           "      \"pools\": [\n"
                           "        {\n"
                           "          \"k\": \"v\"\n"
                           "        },\n"
                           "        [\n"
                           "          1\n"
                           "        ]\n"
                           "      ]\n"
                           "    }\n"
                           "  ]\n"
                           "}\n");
    /* It reads back. */
    cJSON *back = cJSON_Parse(s);
    assert_non_null(back);
    cJSON_Delete(back);
    free(s);
    s = print(SW_CLI_JSON, "[]", NULL, cols, NCOLS, &rc);
    assert_string_equal(s, "{\n  \"items\": []\n}\n");
    free(s);
}

static void test_yaml_structure(void **state)
{
    (void)state;
    int rc;
    char *s =
        print(SW_CLI_YAML,
              "[{\"name\":\"onprem\",\"gpus\":8,\"ok\":false,\"none\":null,"
              "\"pools\":[{\"name\":\"a100\",\"free\":2.5},{\"name\":\"h100\",\"zones\":"
              "[\"a\",\"b\"]}],\"labels\":{\"team\":\"ml\",\"empty\":{}},\"nested\":[[1,2],[]]"
              "},{\"name\":\"cloud\"}]",
              NULL, cols, NCOLS, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "items:\n"
                           "- name: onprem\n"
                           "  gpus: 8\n"
                           "  ok: false\n"
                           "  none: null\n"
                           "  pools:\n"
                           "  - name: a100\n"
                           "    free: 2.5\n"
                           "  - name: h100\n"
                           "    zones:\n"
                           "    - a\n"
                           "    - b\n"
                           "  labels:\n"
                           "    team: ml\n"
                           "    empty: {}\n"
                           "  nested:\n"
                           "  - - 1\n"
                           "    - 2\n"
                           "  - []\n"
                           "- name: cloud\n");
    free(s);
    s = print(SW_CLI_YAML, "[]", NULL, cols, NCOLS, &rc);
    assert_string_equal(s, "items: []\n");
    free(s);
}

static void test_yaml_quoting(void **state)
{
    (void)state;
    /* Each of these would read back as something else if written plain. */
    static const struct {
        const char *json, *yaml;
    } cases[] = {
        {"\"\"", "\"\"\n"},
        {"\"true\"", "\"true\"\n"},
        {"\"No\"", "\"No\"\n"},
        {"\"off\"", "\"off\"\n"},
        {"\"y\"", "\"y\"\n"},
        {"\"null\"", "\"null\"\n"},
        {"\"~\"", "\"~\"\n"},
        {"\"123\"", "\"123\"\n"},
        {"\"0x1F\"", "\"0x1F\"\n"},
        {"\"1e3\"", "\"1e3\"\n"},
        {"\"-5\"", "\"-5\"\n"},
        {"\"+5\"", "\"+5\"\n"},
        {"\".inf\"", "\".inf\"\n"},
        {"\"2026-11-21T10:00:00Z\"", "\"2026-11-21T10:00:00Z\"\n"},
        {"\"a: b\"", "\"a: b\"\n"},
        {"\"key:\"", "\"key:\"\n"},
        {"\"x #y\"", "\"x #y\"\n"},
        {"\"- item\"", "\"- item\"\n"},
        {"\"[1]\"", "\"[1]\"\n"},
        {"\"{a}\"", "\"{a}\"\n"},
        {"\"*ref\"", "\"*ref\"\n"},
        {"\"&anchor\"", "\"&anchor\"\n"},
        {"\"!tag\"", "\"!tag\"\n"},
        {"\"|\"", "\"|\"\n"},
        {"\">x\"", "\">x\"\n"},
        {"\"'q'\"", "\"'q'\"\n"},
        {"\"%x\"", "\"%x\"\n"},
        {"\"@x\"", "\"@x\"\n"},
        {"\"`x\"", "\"`x\"\n"},
        {"\"? x\"", "\"? x\"\n"},
        {"\", x\"", "\", x\"\n"},
        {"\"#c\"", "\"#c\"\n"},
        {"\" lead\"", "\" lead\"\n"},
        {"\"trail \"", "\"trail \"\n"},
        {"\"say \\\"hi\\\"\\\\\"", "say \"hi\"\\\n"}, /* plain: quotes inside are fine */
        {"\"\\\"hi\\\"\"", "\"\\\"hi\\\"\"\n"},
        {"\"two\\nlines\\ttab\\r\\u0001\"", "\"two\\nlines\\ttab\\r\\x01\"\n"},
        /* Plain is kept where it is safe. */
        {"\"onprem\"", "onprem\n"},
        {"\"a:b\"", "a:b\n"},
        {"\"x#y\"", "x#y\n"},
        {"\"v1.28.3\"", "v1.28.3\n"},
        {"\"r\\u00e9gion east\"", "r\xc3\xa9gion east\n"},
        {"\"https://h:6443/x\"", "https://h:6443/x\n"},
        {"\"nvidia.com/gpu\"", "nvidia.com/gpu\n"},
        {"\"yesterday\"", "yesterday\n"},
        /* Other scalars. */
        {"42", "42\n"},
        {"-0.25", "-0.25\n"},
        {"true", "true\n"},
        {"null", "null\n"},
        {"{}", "{}\n"},
        {"[]", "[]\n"},
        /* Keys are quoted by the same rules. */
        {"{\"on\":1,\"a b\":2,\"k: v\":3,\"\":4}", "\"on\": 1\na b: 2\n\"k: v\": 3\n\"\": 4\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *s = yaml_of(cases[i].json);
        if (strcmp(s, cases[i].yaml) != 0)
            fail_msg("YAML of %s: got [%s], expected [%s]", cases[i].json, s, cases[i].yaml);
        free(s);
    }
}

static void test_numbers_shortest_exact(void **state)
{
    (void)state;
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(0.1 + 0.2));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(1.0 / 3.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(-0.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(9007199254740993.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(-INFINITY));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sw_cli_write_json(f, a, 0);
    fputc('\n', f);
    sw_cli_write_yaml(f, a);
    fclose(f);
    assert_string_equal(buf, "[\n"
                             "  0.30000000000000004,\n"
                             "  0.3333333333333333,\n"
                             "  0,\n"
                             "  9007199254740992,\n"
                             "  null,\n"
                             "  null\n"
                             "]\n"
                             "- 0.30000000000000004\n"
                             "- 0.3333333333333333\n"
                             "- 0\n"
                             "- 9007199254740992\n"
                             "- .nan\n"
                             "- -.inf\n");
    free(buf);
    cJSON_Delete(a);
}

static void test_format_parse(void **state)
{
    (void)state;
    enum sw_cli_format f = SW_CLI_TABLE;
    struct sw_error err;
    assert_int_equal(sw_cli_format_parse("yaml", &f, &err), 0);
    assert_int_equal(f, SW_CLI_YAML);
    assert_int_equal(sw_cli_format_parse("wide", &f, &err), 0);
    assert_int_equal(f, SW_CLI_WIDE);
    assert_int_equal(sw_cli_format_parse("JSON", &f, &err), SW_EINVAL);
    assert_string_equal(err.msg, "-o/--output: expected table, wide, json, yaml, csv, name or "
                                 "jsonpath=TEMPLATE, got \"JSON\"");
    assert_string_equal(sw_cli_format_name(SW_CLI_JSON), "json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_aligned),          cmocka_unit_test(test_wide_adds_columns),
        cmocka_unit_test(test_table_rows_and_empty),   cmocka_unit_test(test_json),
        cmocka_unit_test(test_yaml_structure),         cmocka_unit_test(test_yaml_quoting),
        cmocka_unit_test(test_numbers_shortest_exact), cmocka_unit_test(test_format_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
