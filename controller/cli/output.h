/*
 * output.h - one printer for every listing command of spillctl: -o table,
 * wide, json or yaml.
 *
 * A command builds its result as a cJSON array of objects, one per item,
 * and describes its table once as columns {header, json_key, wide_only}.
 * The printer does the rest, so that every command's -o json has the same
 * shape ({"items": [...]}) and every table the same look (kubectl's:
 * upper-case headers, columns three spaces apart, no trailing blanks).
 */
#ifndef SW_CONTROLLER_CLI_OUTPUT_H
#define SW_CONTROLLER_CLI_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/error.h"

/** The -o formats. */
enum sw_cli_format {
    SW_CLI_TABLE = 0,
    SW_CLI_WIDE,
    SW_CLI_JSON,
    SW_CLI_YAML,
    SW_CLI_CSV,
    SW_CLI_NAME,
    SW_CLI_JSONPATH
};

/**
 * Parses "table", "wide", "json", "yaml", "csv", "name" or
 * "jsonpath=TEMPLATE" (the template checked, controller/cli/jsonpath.h)
 * into *out; *tmpl (may be NULL) gets the template, borrowed from s, or
 * NULL. Returns 0, or SW_EINVAL with a message naming the value and the
 * accepted ones.
 */
int sw_cli_format_parse2(const char *s, enum sw_cli_format *out, const char **tmpl,
                         struct sw_error *err);

/** sw_cli_format_parse2 without the template. */
int sw_cli_format_parse(const char *s, enum sw_cli_format *out, struct sw_error *err);

/**
 * Sets, for the whole process, what sw_cli_print does beyond the format:
 * `no_headers` leaves out the table's header line (table, wide, csv);
 * `jsonpath` (borrowed; must outlive the printing) is -o jsonpath's
 * template. spillctl sets them once from its global options.
 */
void sw_cli_print_options(int no_headers, const char *jsonpath);

/** The name of a format ("table", ...); never NULL. */
const char *sw_cli_format_name(enum sw_cli_format f);

/** One column of a table. The strings are borrowed (usually literals). */
struct sw_cli_column {
    const char *header;   /* printed in upper case */
    const char *json_key; /* dotted path into a row object: "name", "capacity.free" */
    int wide_only;        /* shown by -o wide only */
};

/**
 * Prints `items` (borrowed; a cJSON array of objects) to `out` (borrowed)
 * in `fmt`:
 *  - table: one row per element of `rows`, or of `items` when rows is NULL,
 *    with the columns that are not wide_only; a cell is the value at the
 *    column's json_key: a string as it is (control characters as spaces),
 *    a number in its shortest exact form, true/false, an array's elements
 *    joined with ",", an object as compact JSON, missing or null as
 *    "<none>". Columns are as wide as their widest cell (in characters),
 *    three spaces apart; the last is not padded. No rows: the header only.
 *  - wide: as table, with the wide_only columns too.
 *  - json: {"items": [...]} indented by two spaces, keys in the order the
 *    objects hold them (build rows in a fixed order and the output is
 *    stable), ending with a newline.
 *  - yaml: the same document as YAML ("items:" then one "- " per item),
 *    strings quoted whenever a YAML reader could take them for anything
 *    but that string (see sw_cli_write_yaml).
 *  - csv: the table's rows with every column, wide ones included, under a
 *    header of the columns' keys, fields quoted as RFC 4180 says.
 *  - name: the first column's cell of each row, one per line.
 *  - jsonpath: the template (sw_cli_print_options) evaluated against the
 *    json document.
 * The headers of table, wide and csv are left out with no_headers.
 * `rows` lets a table show a flattened view (say one row per pool) while
 * json and yaml keep the nested items. Returns 0, SW_EINVAL if items is not
 * an array, SW_ENOMEM, or SW_EIO when writing failed.
 */
int sw_cli_print(FILE *out, enum sw_cli_format fmt, const cJSON *items, const cJSON *rows,
                 const struct sw_cli_column *cols, size_t ncols);

/**
 * Writes `v` (borrowed) as JSON indented by two spaces, starting at
 * indentation `indent` (continuation lines are indented by it), without a
 * final newline. Numbers are written in their shortest form that reads back
 * exactly; NaN and infinities, which JSON lacks, as null.
 */
void sw_cli_write_json(FILE *out, const cJSON *v, int indent);

/**
 * Writes `v` (borrowed) as a block-style YAML document (no "---"), ending
 * with a newline. A scalar at the top is written on one line. Strings
 * (values and keys) are written plain unless a reader could take them for
 * something else, in which case they are double-quoted with \", \\, \n, \t,
 * \r and \xHH escapes: the empty string; null, ~, true, false, yes, no,
 * on, off, y and n in any case; anything starting with a digit, '+', '.'
 * (numbers, .inf, timestamps), an indicator character
 * (- ? : , [ ] { } # & * ! | > ' " % @ `) or a blank; anything
 * holding ": ", " #", a control character, or ending with ':' or a blank.
 */
void sw_cli_write_yaml(FILE *out, const cJSON *v);

#endif
